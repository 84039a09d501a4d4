#!/bin/sh
# Faults once a run has started: a file size limit (ulimit -f,
# EFBIG), a full filesystem (a small tmpfs, ENOSPC), and an unreadable input
# among several.  What must hold: exit status 1 for a write failure (2 for
# an input error, the worst one with several inputs), one clear error line
# naming the file, no file under any final name for the failed input, no
# temporary left, and every other input's outputs complete and identical to
# a run of that input alone.
. "$(dirname "$0")/lib.sh"
S=$DATA/olinda_dem_f32_utm25s.tif        # 111x111: layers of 26-44 KB as GeoTIFF
B=$DATA/whitebox_dem_f32_utm18n.tif      # 237x188: layers of 127-158 KB as GeoTIFF
SS=olinda_dem_f32_utm25s
BS=whitebox_dem_f32_utm18n
RUN="-q -s mei.steps=5"

# Runs erode with a file size limit of $1 KiB (ulimit -f counts 512-byte
# blocks in a POSIX shell).
limited() {
    kib=$1; shift
    sh -c 'ulimit -f "$1" || exit 99; shift; exec "$@"' limit "$((kib * 2))" "$ERODE" "$@"
}
# Fails the case when $1 holds an erode temporary or a preflight probe.
no_temporaries() {
    left=$(ls -A "$1" | grep -E '\.tmp-|erode-probe' || true)
    [ -z "$left" ] || t_fail "temporaries left in $1: $left"
}
# Fails the case unless directory $1 holds, for stem $2 and extension $3,
# the three default layers byte-identical to those in directory $4.
same_outputs() {
    for l in height sediment water; do
        if [ ! -f "$1/$2.$l.$3" ]; then
            t_fail "missing $1/$2.$l.$3"
        elif ! cmp -s "$1/$2.$l.$3" "$4/$2.$l.$3"; then
            t_fail "$2.$l.$3 differs from a run of that input alone"
        fi
    done
}
no_outputs() {
    left=$(ls -A "$1" | grep -F "$2." || true)
    [ -z "$left" ] || t_fail "outputs of the failed input left in $1: $left"
}

# References: each input alone, no limit.
mkdir -p "$T/ref" "$T/refpng"
"$ERODE" $RUN -o "$T/ref" "$S" "$B" && "$ERODE" $RUN -f png -o "$T/refpng" "$S" "$B" \
    && "$ERODE" $RUN -f png --preview "$T/ref/{stem}.preview.png" -o "$T/ref" "$S" > /dev/null \
    || { t_case "reference runs"; t_fail "erode failed without a limit"; t_ok; exit 1; }

# The limits below come from the reference files' sizes, so a change in
# compression moves them along: bytes of one file, the largest and smallest
# of a set, and a limit in KiB half-way between two sizes.
size() { wc -c < "$1" | tr -d ' '; }
largest() { for f; do size "$f"; done | sort -n | tail -n 1; }
smallest() { for f; do size "$f"; done | sort -n | head -n 1; }
kib_between() {
    [ $(($2 - $1)) -ge 2048 ] || { t_fail "sizes $1 and $2 too close for a limit between them"; echo 0; return; }
    echo $((($1 + $2) / 2048))
}

t_case "file size limit: exit 1, one line naming the file, nothing left (no SIGXFSZ death)"
mkdir -p "$T/a"
# Between the small map's largest layer and the larger map's smallest.
L=$(kib_between "$(largest "$T/ref/$SS".*.tif)" "$(smallest "$T/ref/$BS".*.tif)")
t_exit 1 limited "$L" $RUN -o "$T/a" "$B"
t_one_error_line "^erode: cannot write '$T/a/$BS.height.tif': file too large"
t_empty_dir "$T/a"
t_ok

t_case "a rerun that fails at its second layer leaves the previous run's set untouched"
# The layers of one input replace their final names together, after all are
# written: the height layer of a failed rerun with another recipe must not
# sit beside the old sediment and water layers.
rm -rf "$T/o"; mkdir -p "$T/o"; cp "$T/ref/$BS".*.tif "$T/o/"
t_exit 1 limited "$(kib_between "$(size "$T/ref/$BS.height.tif")" "$(size "$T/ref/$BS.sediment.tif")")" \
    -q -s mei.steps=7 -o "$T/o" "$B"
t_one_error_line "cannot write '$T/o/$BS.sediment.tif': file too large"
same_outputs "$T/o" "$BS" tif "$T/ref"
no_temporaries "$T/o"
t_ok

t_case "file size limit after the first layer: the written layer never appears"
# The height layer (written first) fits, the sediment layer does not.
mkdir -p "$T/b"
t_exit 1 limited "$(kib_between "$(size "$T/ref/$BS.height.tif")" "$(size "$T/ref/$BS.sediment.tif")")" \
    $RUN -o "$T/b" "$B"
t_one_error_line "cannot write '$T/b/$BS.sediment.tif': file too large"
t_empty_dir "$T/b"
t_ok

t_case "two inputs, the second over the limit: the first's outputs intact, exit 1"
mkdir -p "$T/c"
t_exit 1 limited "$L" $RUN --json -o "$T/c" "$S" "$B"
t_one_error_line "$BS.height.tif': file too large"
same_outputs "$T/c" "$SS" tif "$T/ref"
no_outputs "$T/c" "$BS"
no_temporaries "$T/c"
[ "$(jq -r '[.input, .status, .exit, (.outputs | length)] | join(" ")' "$T/stdout" | tr '\n' ';')" \
    = "$S ok 0 3;$B error 1 0;" ] || t_fail "--json lines: $(cat "$T/stdout")"
t_ok

t_case "file size limit with -f png: the same guarantees"
mkdir -p "$T/d"
t_exit 1 limited "$(kib_between "$(largest "$T/refpng/$SS".*.png)" "$(smallest "$T/refpng/$BS".*.png)")" $RUN -f png -o "$T/d" "$S" "$B"
t_one_error_line "^erode: cannot write '$T/d/$BS.height.png': file too large"
same_outputs "$T/d" "$SS" png "$T/refpng"
no_outputs "$T/d" "$BS"
no_temporaries "$T/d"
t_ok

t_case "file size limit hit by --preview: exit 1, the input's layers removed, --json says so"
mkdir -p "$T/e"
# The PNG layers fit, the preview (written last) does not.
t_exit 1 limited "$(kib_between "$(largest "$T/refpng/$SS".*.png)" "$(size "$T/ref/$SS.preview.png")")" $RUN -f png --json --preview "$T/e/{stem}.preview.png" -o "$T/e" "$S"
t_one_error_line "cannot write '$T/e/$SS.preview.png': file too large"
t_empty_dir "$T/e"
jq -e '.status == "error" and .exit == 1 and (.outputs | length) == 0 and (.error | test("file too large"))' \
    "$T/stdout" > /dev/null || t_fail "--json: $(cat "$T/stdout")"
t_ok

t_case "full filesystem (tmpfs, ENOSPC): exit 1, the first input intact, nothing else left"
mnt=$T/full
mkdir -p "$mnt"
# Pages (tmpfs counts 4 KiB pages) for all of the small map's layers and
# the larger map's height layer, plus half its sediment layer: its
# height layer is committed, its sediment layer runs out of space.
pages() { n=0; for f; do n=$((n + ($(size "$f") + 4095) / 4096)); done; echo $n; }
fs=$(($(pages "$T/ref/$SS".*.tif "$T/ref/$BS.height.tif") * 4 + $(size "$T/ref/$BS.sediment.tif") / 2048))
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=${fs}k,mode=0755 erode-test "$mnt" 2> /dev/null; then
    t_skip "cannot mount a small tmpfs here (needs root and mount permission)"
else
    trap 'umount "$mnt" 2> /dev/null; t_exit_trap' EXIT
    t_exit 1 "$ERODE" $RUN --json -o "$mnt" "$S" "$B"
    t_one_error_line "^erode: cannot write '$mnt/$BS.sediment.tif': no space left on device"
    same_outputs "$mnt" "$SS" tif "$T/ref"
    no_outputs "$mnt" "$BS"
    no_temporaries "$mnt"
    [ "$(jq -r .status "$T/stdout" | tr '\n' ' ')" = "ok error " ] || t_fail "--json: $(cat "$T/stdout")"
    umount "$mnt" || t_fail "cannot unmount $mnt"
    t_ok
fi

# Unreadable input among several: good, damaged, good.
mkdir -p "$T/in"
cp "$S" "$T/in/good.tif"
cp "$B" "$T/in/good2.tif"
head -c 20000 "$S" > "$T/in/cut.tif"
mkdir -p "$T/refin"
"$ERODE" $RUN -o "$T/refin" "$T/in/good.tif" && "$ERODE" $RUN -o "$T/refin" "$T/in/good2.tif" \
    || t_fail "reference runs failed"

t_case "a damaged input among three: it fails alone, the others are written, exit 2"
mkdir -p "$T/f"
t_exit 2 "$ERODE" $RUN --json -o "$T/f" "$T/in/good.tif" "$T/in/cut.tif" "$T/in/good2.tif"
t_one_error_line "^erode: cannot read '$T/in/cut.tif'"
same_outputs "$T/f" good tif "$T/refin"
same_outputs "$T/f" good2 tif "$T/refin"
no_outputs "$T/f" cut
[ "$(jq -r '[.status, .exit] | join(" ")' "$T/stdout" | tr '\n' ';')" = "ok 0;error 2;ok 0;" ] \
    || t_fail "--json lines: $(cat "$T/stdout")"
[ "$(jq -r .input "$T/stdout" | sed -n 2p)" = "$T/in/cut.tif" ] || t_fail "--json names: $(cat "$T/stdout")"
t_ok

t_case "the same through --inputs-from"
mkdir -p "$T/g"
printf '%s\n' "$T/in/good.tif" "$T/in/cut.tif" "$T/in/good2.tif" > "$T/list"
t_exit 2 "$ERODE" $RUN --json --inputs-from "$T/list" -o "$T/g"
t_one_error_line "^erode: cannot read '$T/in/cut.tif'"
same_outputs "$T/g" good tif "$T/refin"
same_outputs "$T/g" good2 tif "$T/refin"
no_outputs "$T/g" cut
[ "$(jq -r .status "$T/stdout" | tr '\n' ' ')" = "ok error ok " ] || t_fail "--json: $(cat "$T/stdout")"
t_ok

t_case "worst status wins: an input error (2) and a write failure (1) give 2"
mkdir -p "$T/h"
t_exit 2 limited "$L" $RUN -o "$T/h" "$T/in/good.tif" "$T/in/cut.tif" "$T/in/good2.tif"
[ "$(wc -l < "$T/stderr")" -eq 2 ] || t_fail "expected two error lines: $(cat "$T/stderr")"
grep -q "cut.tif" "$T/stderr" && grep -q "good2.height.tif': file too large" "$T/stderr" \
    || t_fail "stderr: $(cat "$T/stderr")"
same_outputs "$T/h" good tif "$T/refin"
no_outputs "$T/h" good2
t_ok

t_case "a permission-denied input among three (run as an unprivileged user)"
if [ "$(id -u)" -ne 0 ]; then
    # Not root: our own file with mode 000 is unreadable to us.
    as_user() { "$@"; }
elif have setpriv && setpriv --reuid=65534 --regid=65534 --clear-groups true 2> /dev/null; then
    as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
fi
if ! command -v as_user > /dev/null 2>&1; then
    t_skip "running as root without setpriv: chmod 000 does not deny root"
else
    P=$T/perm
    mkdir -p "$P/out"
    cp "$T/in/good.tif" "$T/in/good2.tif" "$P/"
    cp "$T/in/good.tif" "$P/secret.tif"
    chmod 000 "$P/secret.tif"
    chmod 755 "$T" "$P"
    chmod 777 "$P/out"
    if as_user test -r "$P/secret.tif" || ! as_user test -x "$ERODE"; then
        t_skip "the unprivileged user can read the locked file, or not erode itself"
    else
        t_exit 2 as_user "$ERODE" $RUN --json -o "$P/out" "$P/good.tif" "$P/secret.tif" "$P/good2.tif"
        t_one_error_line "^erode: cannot read '$P/secret.tif': [Pp]ermission denied"
        same_outputs "$P/out" good tif "$T/refin"
        same_outputs "$P/out" good2 tif "$T/refin"
        no_outputs "$P/out" secret
        [ "$(jq -r .status "$T/stdout" | tr '\n' ' ')" = "ok error ok " ] || t_fail "--json: $(cat "$T/stdout")"
        t_ok
    fi
fi
