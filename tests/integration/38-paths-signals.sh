#!/bin/sh
# Paths and signals: output names follow the input's content, not its
# extension; every list, frame and cache name is checked before work;
# signals that end a run in any phase leave no temporary and say so in the
# exit status; standard output that cannot be written is an error line.
# Signals land at an exact system call through strace's fault injection
# (no sleeps: the same moment in every run), skipped without strace.
. "$(dirname "$0")/lib.sh"
S=$DATA/olinda_dem_f32_utm25s.tif
RUN="-q -s mei.steps=2"
L="height sediment water"

# Fails the case when DIR holds any temporary or backup of io/atomic.h.
no_temporaries() {
    left=$(ls -A "$1" | grep -E '\.(tmp|old)-' || true)
    [ -z "$left" ] || t_fail "temporaries left in $1: $left"
}

# strace with a signal injected at the Nth call of a system call set:
# inject SYSCALLS SIGNAL N erode-args...
# (LeakSanitizer cannot run under ptrace: a sanitizer build checks no
# leaks here, the other scripts do.)
inject() {
    calls=$1 sig=$2 nth=$3; shift 3
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        strace -f -qq -o /dev/null -e trace="$calls" -e inject="$calls:signal=$sig:when=$nth" "$@"
}
can_inject() { have strace && strace -f -qq -o /dev/null true 2> /dev/null; }

t_case "an input whose extension lies (a.png holding a TIFF) is named by its content: a later input of that name is not replaced"
mkdir -p "$T/lie"
cp "$S" "$T/lie/a.png"; cp "$S" "$T/lie/a.height.tif"; cp "$S" "$T/lie/keep.tif"
t_exit 2 "$ERODE" $RUN -o "$T/lie" "$T/lie/a.png" "$T/lie/a.height.tif"
t_one_error_line "the height layer '$T/lie/a.height.tif' would replace the input"
cmp -s "$T/lie/a.height.tif" "$T/lie/keep.tif" || t_fail "the later input was replaced"
rm "$T/lie/a.height.tif"
t_exit 0 "$ERODE" $RUN --json -o "$T/lie" "$T/lie/a.png"
for l in $L; do
    [ -f "$T/lie/a.$l.tif" ] || t_fail "no a.$l.tif"
    jq -e --arg l "$l" --arg p "$T/lie/a.$l.tif" '.outputs[$l] == $p' "$T/stdout" > /dev/null ||
        t_fail "--json names another $l path: $(jq -c .outputs "$T/stdout")"
done
ls "$T/lie" | grep -q '\.png$' | grep -v '^a\.png$' && t_fail "a PNG output was written"
t_ok

t_case "--inputs-from twice reads both lists; standard input only once; an endless stream (inputs, tiles) is refused"
mkdir -p "$T/lists/out"
cp "$S" "$T/lists/one.tif"; cp "$S" "$T/lists/two.tif"
echo "$T/lists/one.tif" > "$T/lists/a.txt"; echo "$T/lists/two.tif" > "$T/lists/b.txt"
t_exit 0 "$ERODE" $RUN --json --inputs-from "$T/lists/a.txt" --inputs-from "$T/lists/b.txt" -o "$T/lists/out"
[ "$(jq -r .input "$T/stdout" | tr '\n' ' ')" = "$T/lists/one.tif $T/lists/two.tif " ] ||
    t_fail "inputs run: $(jq -r .input "$T/stdout" | tr '\n' ' ')"
t_exit 2 "$ERODE" $RUN --inputs-from - --inputs-from - -o "$T/lists/out" < /dev/null
t_one_error_line "standard input can be read only once"
yes "$T/lists/one.tif" | "$ERODE" $RUN --inputs-from - -o "$T/lists/out" > "$T/stdout" 2> "$T/stderr"
[ $? -eq 2 ] || t_fail "an endless list was not refused with exit 2"
t_one_error_line "more than 64 MiB of names; split the list"
yes "$T/lists/one.tif" | "$ERODE" $RUN --tile-set - --halo 2 -o "$T/lists/out" "$T/lists/one.tif" > "$T/stdout" 2> "$T/stderr"
[ $? -eq 2 ] || t_fail "an endless tile list was not refused with exit 2"
t_one_error_line "more than 64 MiB of names"
yes a | head -n 1000001 > "$T/lists/many.txt"
t_exit 2 "$ERODE" $RUN --inputs-from "$T/lists/many.txt" -o "$T/lists/out"
t_one_error_line "more than 1000000 inputs in one run"
t_ok

t_case "--help, --version, --print-recipe to a full disk: exit 1 and one line saying so"
if [ -w /dev/full ]; then
    for a in --help --version --print-recipe; do
        "$ERODE" $a > /dev/full 2> "$T/stderr"; rc=$?
        [ $rc -eq 1 ] || t_fail "$a > /dev/full exited $rc"
        t_one_error_line "cannot write .* to standard output: no space left on device"
    done
    t_ok
else
    t_skip "no /dev/full"
fi

t_case "--frames: two inputs of one stem, or a frame name too long, refused before work"
mkdir -p "$T/fr/in" "$T/fr/out" "$T/fr/frames"
cp "$S" "$T/fr/in/dem.tif"; cp "$S" "$T/fr/in/dem.png"
t_exit 2 "$ERODE" $RUN --frames "$T/fr/frames" -o "$T/fr/out" "$T/fr/in/dem.tif" "$T/fr/in/dem.png"
t_one_error_line "frames 'dem.frame-\*.png' would replace those of another input of the same stem"
# a 226-character stem: the 6-digit frames' names and their temporaries fit
# (255), frame 1000000's (7 digits) does not
long=$(printf 'x%.0s' $(seq 1 226))
cp "$S" "$T/fr/in/$long.tif"
# (the timeout only stops a run that was not refused: it cannot pass a test)
t_exit 2 timeout 60 "$ERODE" -q -s mei.steps=1000000 --frame-every 1 --frames "$T/fr/frames" -o "$T/fr/out" "$T/fr/in/$long.tif"
t_one_error_line "the name of frame 1000000 (244 characters) is too long for its directory (at most 243"
t_empty_dir "$T/fr/out"
t_empty_dir "$T/fr/frames"
t_ok

t_case "{stem} in a --preview directory names each input's own directory"
mkdir -p "$T/pv/pv-a" "$T/pv/out"; cp "$S" "$T/pv/a.tif"; cp "$S" "$T/pv/b.tif"
t_exit 0 "$ERODE" $RUN --preview "$T/pv/pv-{stem}/p.png" -o "$T/pv/out" "$T/pv/a.tif"
[ -s "$T/pv/pv-a/p.png" ] || t_fail "no preview in pv-a"
t_exit 2 "$ERODE" $RUN --preview "$T/pv/pv-{stem}/p.png" -o "$T/pv/out" "$T/pv/b.tif"
t_one_error_line "pv-b: --preview directory"
t_ok

t_case "the Vulkan pipeline cache named like an output: exit 2 before work"
mkdir -p "$T/vk"; cp "$S" "$T/vk/a.tif"
ERODE_VK_PIPELINE_CACHE=$T/vk/a.height.tif "$ERODE" $RUN --backend vulkan -o "$T/vk" "$T/vk/a.tif" \
    > "$T/stdout" 2> "$T/stderr"; rc=$?
if grep -q "built without Vulkan\|no Vulkan" "$T/stderr"; then
    t_skip "no Vulkan backend in this build"
else
    [ $rc -eq 2 ] || t_fail "exited $rc"
    t_one_error_line "the Vulkan pipeline cache '$T/vk/a.height.tif' is also the height layer"
    [ "$(ls -A "$T/vk")" = "a.tif" ] || t_fail "files written: $(ls -A "$T/vk")"
    t_ok
fi

t_case "terrain.cell_size on a georeferenced input: its own cell size kept, a warning names the key"
mkdir -p "$T/cs/a" "$T/cs/b"
t_exit 0 "$ERODE" $RUN --json -o "$T/cs/a" "$S"
t_exit 0 "$ERODE" $RUN --json -s terrain.cell_size=30 -o "$T/cs/b" "$S"
t_one_error_line "warning: terrain.cell_size (30 m) ignored: the input's georeferencing gives 89.99"
jq -e '.cell_x > 89 and .cell_x < 91' "$T/stdout" > /dev/null || t_fail "cell size: $(jq .cell_x "$T/stdout")"
$PY -c "
import sys, numpy as np
from osgeo import gdal
a, b = (gdal.Open(f).ReadAsArray() for f in sys.argv[1:3])
assert np.array_equal(a, b)" "$T/cs/a/olinda_dem_f32_utm25s.height.tif" "$T/cs/b/olinda_dem_f32_utm25s.height.tif" ||
    t_fail "the key changed the run"
t_ok

if ! can_inject; then
    t_case "signals at exact moments"; t_skip "needs strace with fault injection (scripts/deps --test)"
    exit 0
fi

mkdir -p "$T/ref"; cp "$S" "$T/ref/a.tif"
"$ERODE" $RUN -o "$T/ref" "$T/ref/a.tif" || t_fail "reference run"

for sig in HUP PIPE TERM INT; do
    case $sig in HUP) code=129 ;; PIPE) code=141 ;; TERM) code=143 ;; INT) code=130 ;; esac
    t_case "SIG$sig while the first layer is written: exit $code, no output and no temporary left"
    rm -rf "$T/sig"; mkdir -p "$T/sig"; cp "$S" "$T/sig/a.tif"
    t_exit $code inject fsync $sig 1 "$ERODE" $RUN -o "$T/sig" "$T/sig/a.tif"
    t_one_error_line "a.tif: interrupted"
    [ "$(ls -A "$T/sig")" = "a.tif" ] || t_fail "left: $(ls -A "$T/sig" | tr '\n' ' ')"
    t_ok
done

t_case "SIGTERM while the outputs are renamed into place: the set whole, exit 143, the next input not started"
rm -rf "$T/ren"; mkdir -p "$T/ren"; cp "$S" "$T/ren/a.tif"; cp "$S" "$T/ren/b.tif"
t_exit 143 inject rename,renameat,renameat2 TERM 1 "$ERODE" $RUN -o "$T/ren" "$T/ren/a.tif" "$T/ren/b.tif"
t_one_error_line "interrupted (SIGTERM) after '$T/ren/a.tif' was written whole; the inputs after it were not started"
for l in $L; do
    cmp -s "$T/ren/a.$l.tif" "$T/ref/a.$l.tif" || t_fail "a.$l.tif is not the uninterrupted run's"
done
ls "$T/ren" | grep -qE '^b\.(height|sediment|water)\.tif$' && t_fail "b was run"
no_temporaries "$T/ren"
t_ok

t_case "SIGTERM inside the model names the input and the step"
rm -rf "$T/mid"; mkdir -p "$T/mid/frames"; cp "$S" "$T/mid/a.tif"
# the first frame's rename (boundary 0) raises it; the run stops at step 1
t_exit 143 inject rename,renameat,renameat2 TERM 1 "$ERODE" -q -s mei.steps=50 --frames "$T/mid/frames" -o "$T/mid" "$T/mid/a.tif"
t_one_error_line "^erode: $T/mid/a.tif: interrupted by SIGTERM (mei: cancelled at step [0-9]*); no output written"
[ "$(ls -A "$T/mid")" = "a.tif
frames" ] || t_fail "left: $(ls -A "$T/mid" | tr '\n' ' ')"
t_ok

t_case "--checkpoint F --resume F: a temporary of F a killed run left is removed"
rm -rf "$T/ck"; mkdir -p "$T/ck/out"; cp "$S" "$T/ck/a.tif"
# the first checkpoint's rename raises SIGTERM: the run saves the next
# boundary's checkpoint and stops
t_exit 143 inject rename,renameat,renameat2 TERM 1 "$ERODE" -q -s mei.steps=50 --checkpoint "$T/ck/F" \
    --checkpoint-every 1 -o "$T/ck/out" "$T/ck/a.tif"
[ -s "$T/ck/F" ] || t_fail "no checkpoint was saved"
touch -d '2 minutes ago' "$T/ck/.F.tmp-AbC123"
t_exit 0 "$ERODE" -q -s mei.steps=50 --checkpoint "$T/ck/F" --resume "$T/ck/F" -o "$T/ck/out" "$T/ck/a.tif"
grep -q "warning: removed '.*/\.F\.tmp-AbC123', left by an interrupted erode" "$T/stderr" ||
    t_fail "no warning: $(cat "$T/stderr")"
[ -e "$T/ck/.F.tmp-AbC123" ] && t_fail "the stale temporary is still there"
[ -e "$T/ck/F" ] && t_fail "the checkpoint is still there after success"
t_ok
