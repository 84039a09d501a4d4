#!/bin/sh
# Write targets (erode(1) FILES): every path a run creates,
# renames or removes is checked before any work against every input and
# against the others, by name and by file identity; output sets are
# replaced whole (rollback, a lock per directory); signals are honoured
# while writing; names reach the terminal escaped; standard output errors
# are errors.
. "$(dirname "$0")/lib.sh"
S=$DATA/olinda_dem_f32_utm25s.tif
RUN="-q -s mei.steps=2"
mkdir -p "$T/in" "$T/out"
cp "$S" "$T/in/a.tif"
cp "$S" "$T/in/b.tif"
A=$T/in/a.tif

# Fails the case unless the input is unchanged and out/ holds nothing.
untouched() {
    cmp -s "$S" "$A" || t_fail "the input was changed"
    cmp -s "$S" "$T/in/b.tif" || t_fail "the other input was changed"
    t_empty_dir "$T/out"
}

t_case "--preview or --checkpoint naming an input: exit 2, nothing written"
t_exit 2 "$ERODE" $RUN --preview "$A" -o "$T/out" "$A"
t_one_error_line "would replace the input"
t_exit 2 "$ERODE" $RUN --checkpoint "$T/in/b.tif" -o "$T/out" "$A" "$T/in/b.tif"
t_exit 2 "$ERODE" $RUN --checkpoint "$T/in/{stem}.tif" -o "$T/out" "$A" "$T/in/b.tif"
t_one_error_line "would replace the input"
untouched
t_ok

t_case "an output named like a file the run reads (control raster, recipe, input list): exit 2, the file kept"
mkdir -p "$T/r"
cp "$A" "$T/r/a.tif"
# the names are refused before any raster is read, so any bytes will do
cp "$A" "$T/r/a.height.tif"
cp "$A" "$T/r/mask.orig"
t_exit 2 "$ERODE" $RUN -s mask="$T/r/a.height.tif" -o "$T/r" "$T/r/a.tif"
t_one_error_line "would replace the mask raster"
cmp -s "$T/r/a.height.tif" "$T/r/mask.orig" || t_fail "the mask raster was changed"
printf '{"erode_recipe": 1, "mei": {"steps": 2}}\n' > "$T/r/a.water.tif"
t_exit 2 "$ERODE" -q -r "$T/r/a.water.tif" -o "$T/r" "$T/r/a.tif"
t_one_error_line "would replace the recipe"
grep -q erode_recipe "$T/r/a.water.tif" || t_fail "the recipe was changed"
printf '%s\n' "$T/r/a.tif" > "$T/r/a.sediment.tif"
t_exit 2 "$ERODE" $RUN --inputs-from "$T/r/a.sediment.tif" -o "$T/r"
t_one_error_line "would replace the --inputs-from list"
grep -q a.tif "$T/r/a.sediment.tif" || t_fail "the input list was changed"
untouched
t_ok

t_case "the same file under another name (symlink, ./, hard link) is still the input"
ln -s "$A" "$T/in/link.png"
t_exit 2 "$ERODE" $RUN --preview "$T/in/link.png" -o "$T/out" "$A"
t_exit 2 "$ERODE" $RUN --preview "$T/in/../in/./a.tif" -o "$T/out" "$A"
ln "$A" "$T/in/hard.png" 2>/dev/null && t_exit 2 "$ERODE" $RUN --preview "$T/in/hard.png" -o "$T/out" "$A"
rm -f "$T/in/link.png" "$T/in/hard.png"
untouched
t_ok

t_case "--checkpoint over an existing file that is no checkpoint is refused"
echo "my notes" > "$T/notes.txt"
t_exit 2 "$ERODE" $RUN --checkpoint "$T/notes.txt" -o "$T/out" "$A"
t_one_error_line "not an erode checkpoint"
[ "$(cat "$T/notes.txt")" = "my notes" ] || t_fail "the file was changed"
untouched
t_ok

t_case "--preview or --checkpoint naming one of the run's own layers"
t_exit 2 "$ERODE" $RUN --preview "$T/out/a.height.tif" -o "$T/out" "$A"
t_one_error_line "is also the height layer"
t_exit 2 "$ERODE" $RUN --checkpoint "$T/out/a.water.tif" -o "$T/out" "$A"
t_one_error_line "is also the water layer"
untouched
t_ok

t_case "an output named like a later input (through another extension)"
mkdir -p "$T/x"
cp "$S" "$T/x/c.height.tif"
"$ERODE" -q -s mei.steps=0 -f png -o "$T/x" "$T/x/c.height.tif" 2>/dev/null
mv "$T/x/c.height.png" "$T/x/c.png"
rm -f "$T/x"/c.sediment.png "$T/x"/c.water.png
cp "$T/x/c.height.tif" "$T/x/keep.tif"
t_exit 2 "$ERODE" $RUN -f tif -o "$T/x" "$T/x/c.png" "$T/x/c.height.tif"
t_one_error_line "would replace the input"
cmp -s "$T/x/c.height.tif" "$T/x/keep.tif" || t_fail "the later input was overwritten"
t_ok

# A RAW layer writes "<file>.json" beside it: that name is checked too.
t_case "a RAW layer's sidecar named like another input"
mkdir -p "$T/r"
cp "$S" "$T/r/d.tif"
cp "$S" "$T/r/d.height.r16.json"
t_exit 2 "$ERODE" $RUN -f r16 -o "$T/r" "$T/r/d.tif" "$T/r/d.height.r16.json"
t_one_error_line "sidecar .* would replace the input"
cmp -s "$S" "$T/r/d.height.r16.json" || t_fail "the input named like a sidecar was overwritten"
[ ! -e "$T/r/d.height.r16" ] || t_fail "a layer was written"
t_ok

t_case "--frames whose frame names are another input's"
mkdir -p "$T/f"
cp "$S" "$T/f/a.frame-000001.png"
t_exit 2 "$ERODE" $RUN --frames "$T/f" -o "$T/out" "$A" "$T/f/a.frame-000001.png"
t_one_error_line "frames"
cmp -s "$S" "$T/f/a.frame-000001.png" || t_fail "the input was changed"
untouched
t_ok

t_case "existing directories, devices and FIFOs under an output name are refused before work"
mkdir "$T/out/a.sediment.tif"
t_exit 2 "$ERODE" $RUN -o "$T/out" "$A"
t_one_error_line "is a directory"
rmdir "$T/out/a.sediment.tif"
t_exit 2 "$ERODE" $RUN --preview /dev/null -o "$T/out" "$A"
t_one_error_line "not a regular file"
[ -c /dev/null ] || t_fail "/dev/null is no longer a device"
untouched
t_ok

t_case "a FIFO input or control raster is refused in one line, not read (no hang)"
mkfifo "$T/in/p.tif"
t_exit 2 timeout 20 "$ERODE" $RUN -o "$T/out" "$T/in/p.tif"
t_one_error_line "not a regular file (a pipe)"
t_exit 2 timeout 20 "$ERODE" $RUN -s mask="$T/in/p.tif" -o "$T/out" "$A"
t_one_error_line "mask '$T/in/p.tif': not a regular file (a pipe)"
rm -f "$T/in/p.tif"
t_exit 0 "$ERODE" $RUN -o "$T/out" /dev/stdin < "$A"
[ -f "$T/out/stdin.height.tif" ] || t_fail "/dev/stdin redirected from a file was not read"
rm -f "$T/out"/*
t_ok

t_case "empty path options are refused"
for o in --checkpoint --preview --frames --resume -o; do
    t_exit 2 "$ERODE" $RUN "$o" '' "$A"
    t_one_error_line "empty"
done
untouched
t_ok

t_case "a name too long for its temporary is refused before work"
long=$(printf '%0240d' 0 | tr 0 s)
cp "$S" "$T/in/$long.tif"
t_exit 2 "$ERODE" $RUN -o "$T/out" "$T/in/$long.tif"
t_one_error_line "file name too long"
rm -f "$T/in/$long.tif"
untouched
t_ok

t_case "--inputs-from with NUL-separated names (find -print0)"
cp "$S" "$T/in/b c.tif"
printf '%s\0%s\0' "$A" "$T/in/b c.tif" > "$T/list0"
t_exit 0 "$ERODE" $RUN -o "$T/out" --inputs-from "$T/list0"
[ -f "$T/out/a.height.tif" ] && [ -f "$T/out/b c.height.tif" ] || t_fail "not every input was run: $(ls "$T/out")"
rm -f "$T/in/b c.tif" "$T/out"/*
t_ok

t_case "control characters in names are escaped: still one error line"
nl='
'
t_exit 2 "$ERODE" $RUN -o "$T/out" "$T/in/no${nl}such$(printf '\033')[31m.tif"
t_one_error_line 'no\\nsuch\\x1b\[31m.tif'
t_ok

t_case "standard output closed or full with --json"
t_exit 2 sh -c "exec \"\$0\" $RUN --json -o '$T/out' '$A' >&-" "$ERODE"
t_one_error_line "standard output is closed"
t_empty_dir "$T/out"
t_exit 1 sh -c "exec \"\$0\" $RUN --json -o '$T/out' '$A' > /dev/full" "$ERODE"
t_one_error_line "cannot write the --json line"
rm -f "$T/out"/*
t_ok

t_case "2,000 inputs: a clash at the end is found before any work"
mkdir -p "$T/many"
# (one Python for the 2,000 links: a process each cost 8 s of CPU)
$PY -c 'import os, sys
for i in range(2000): os.symlink(sys.argv[1], "%s/t%d.tif" % (sys.argv[2], i))' "$S" "$T/many"
ln -s "$S" "$T/many/t0.height.tif"
t_exit 2 "$ERODE" $RUN -o "$T/many" "$T"/many/t*.tif
t_one_error_line "would replace the input"
[ -z "$(ls "$T/many" | grep -v '^t[0-9]*\(\.height\)\?\.tif$')" ] || t_fail "something was written"
rm -rf "$T/many"
t_ok

# A previous output set to keep: a/b layers of a 2-step run.
"$ERODE" $RUN -o "$T/out" "$A"
mkdir -p "$T/prev"
cp "$T/out"/a.* "$T/prev/"
same_as_prev() {
    for l in height sediment water; do
        cmp -s "$T/out/a.$l.tif" "$T/prev/a.$l.tif" || t_fail "a.$l.tif is not the previous run's"
    done
    left=$(ls -A "$T/out" | grep -E '\.(tmp|old)-' || true)
    [ -z "$left" ] || t_fail "temporaries left: $left"
}

t_case "leftovers of a killed run are removed (saying so); young or held ones are not"
touch -d '2 minutes ago' "$T/out/.a.height.tif.tmp-AbC123" "$T/out/.a.water.tif.old-XyZ789"
touch "$T/out/.a.sediment.tif.tmp-Young1"
touch -d '2 minutes ago' "$T/out/.a.sediment.tif.tmp-Held12" "$T/out/.unrelated.tif.tmp-Other1"
if have flock; then flock "$T/out/.a.sediment.tif.tmp-Held12" sleep 5 & held=$!; sleep 0.5; fi
t_exit 0 "$ERODE" $RUN -o "$T/out" "$A"
grep -q "warning: removed .*\.a\.height\.tif\.tmp-AbC123.*interrupted" "$T/stderr" || t_fail "no warning: $(cat "$T/stderr")"
[ -f "$T/out/.a.height.tif.tmp-AbC123" ] && t_fail "a stale temporary was kept"
[ -f "$T/out/.a.water.tif.old-XyZ789" ] && t_fail "a stale backup was kept"
[ -f "$T/out/.a.sediment.tif.tmp-Young1" ] || t_fail "a young temporary (maybe another run's) was removed"
[ -f "$T/out/.unrelated.tif.tmp-Other1" ] || t_fail "a temporary of no target was removed"
if have flock; then
    [ -f "$T/out/.a.sediment.tif.tmp-Held12" ] || t_fail "a temporary a live process holds was removed"
    kill $held 2>/dev/null; wait $held 2>/dev/null
fi
rm -f "$T/out"/.a.* "$T/out/.unrelated.tif.tmp-Other1"
cp "$T/prev"/a.* "$T/out/"
t_ok

if have flock; then
    t_case "a second writer of one output set waits for the lock"
    flock "$T/out/.erode.lock" sleep 3 &
    holder=$!
    sleep 0.5
    "$ERODE" -q -s mei.steps=3 -o "$T/out" "$A" &
    writer=$!
    sleep 1.5
    for l in height sediment water; do # nothing replaced while the lock is held
        cmp -s "$T/out/a.$l.tif" "$T/prev/a.$l.tif" || t_fail "a.$l.tif replaced while locked"
    done
    wait $writer || t_fail "the waiting writer failed"
    wait $holder
    cmp -s "$T/out/a.height.tif" "$T/prev/a.height.tif" && t_fail "the writer did not write after the lock was released"
    [ -e "$T/out/.erode.lock" ] && t_fail "the lock file was left behind"
    cp "$T/prev"/a.* "$T/out/"
    t_ok

    t_case "SIGINT while the outputs are being put in place: exit 130, previous set intact"
    flock "$T/out/.erode.lock" sleep 4 &
    holder=$!
    sleep 0.5
    "$ERODE" -q -s mei.steps=3 -o "$T/out" "$A" 2> "$T/sigerr" &
    writer=$!
    sleep 2
    kill -INT $writer
    wait $writer; rc=$?
    [ "$rc" -eq 130 ] || t_fail "exit $rc, expected 130: $(cat "$T/sigerr")"
    kill $holder 2>/dev/null; wait $holder 2>/dev/null
    same_as_prev
    t_ok

    t_case "concurrent writers of one set leave one run's set, never a mix (10 rounds)"
    mkdir -p "$T/r3" "$T/r4"
    "$ERODE" -q -s mei.steps=3 -o "$T/r3" "$A"
    "$ERODE" -q -s mei.steps=4 -o "$T/r4" "$A"
    r=0
    while [ $r -lt 10 ]; do
        "$ERODE" -q -s mei.steps=3 -o "$T/out" "$A" & p1=$!
        "$ERODE" -q -s mei.steps=4 -o "$T/out" "$A" & p2=$!
        wait $p1; wait $p2
        if cmp -s "$T/out/a.height.tif" "$T/r3/a.height.tif"; then ref=r3; else ref=r4; fi
        for l in height sediment water; do
            cmp -s "$T/out/a.$l.tif" "$T/$ref/a.$l.tif" || t_fail "round $r: a.$l.tif is not from the same run as a.height.tif"
        done
        r=$((r + 1))
    done
    cp "$T/prev"/a.* "$T/out/"
    t_ok
else
    t_case "output lock"; t_skip "flock(1) (util-linux) not installed"
fi

t_case "a rename that fails part way puts the previous set back"
if [ "$(id -u)" -ne 0 ] || ! have setpriv; then
    t_skip "needs root and setpriv to make a rename fail (another user's file in a sticky directory)"
else
    # A sticky, world-writable directory; the height and water layers belong
    # to the unprivileged user, the sediment layer to root: renaming onto
    # it fails (EPERM) after the height layer was replaced.
    chmod 755 "$T"
    mkdir -p "$T/sticky"
    chmod 1777 "$T/sticky"
    cp "$T/prev"/a.* "$T/sticky/"
    chown 65534:65534 "$T/sticky/a.height.tif" "$T/sticky/a.water.tif"
    chmod 644 "$T/sticky"/a.*
    mkdir -p "$T/src"; cp "$A" "$T/src/a.tif"; chmod 755 "$T/src"; chmod 644 "$T/src/a.tif"
    t_exit 1 setpriv --reuid=65534 --regid=65534 --clear-groups "$ERODE" -q -s mei.steps=3 -o "$T/sticky" "$T/src/a.tif"
    t_one_error_line "cannot write '$T/sticky/a.sediment.tif'"
    for l in height sediment water; do
        cmp -s "$T/sticky/a.$l.tif" "$T/prev/a.$l.tif" || t_fail "a.$l.tif is not the previous run's"
    done
    left=$(ls -A "$T/sticky" | grep -E '\.(tmp|old)-' || true)
    [ -z "$left" ] || t_fail "temporaries left: $left"
    t_ok
fi
