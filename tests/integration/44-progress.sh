#!/bin/sh
# Progress while reading and writing: with --progress, stderr
# shows the reading phase, the model's bar and one writing phase per layer,
# in that order, each ending at 100 % and never going back; stdout stays
# clean (nothing, or only the --json lines); -q prints nothing at all.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
S=whitebox_dem_f32_utm18n
P=$DATA/puget_sound_1k_u16.png

# The labels of the bars drawn, in order, one per phase ("reading",
# "model", "writing height", ...), from a captured stderr; fails the case
# when a phase's percentages go back or do not end at 100.
phases() {
    tr '\r' '\n' < "$1" | sed -n 's/^.\[Kerode: [^ :]*\(: \([a-z ]*[a-z]\)\)\{0,1\} \[[#.]*\] *\([0-9]*\)% .*/\2|\3/p' \
        | awk -F'|' '{ l = $1 == "" ? "model" : $1
                       if (l != last) { if (last != "" && pct != 100) print "BAD " last " ended at " pct; print l; last = l; pct = -1 }
                       if ($2 + 0 < pct) print "BAD " l " went back to " $2; pct = $2 + 0 }
                     END { if (pct != 100) print "BAD " last " ended at " pct }'
}

t_case "--progress: reading, the model, then each layer written, in order, on stderr only"
mkdir -p "$T/a"
t_exit 0 "$ERODE" --progress -s mei.steps=50 --co BLOCKSIZE=16 -o "$T/a" "$W"
[ -s "$T/stdout" ] && t_fail "stdout not empty: $(head -c 200 "$T/stdout")"
got=$(phases "$T/stderr" | tr '\n' ',')
[ "$got" = "reading,model,writing height,writing sediment,writing water," ] || t_fail "phases: $got"
t_ok

t_case "--progress --json: stdout holds only the JSON line; PNG read and written"
mkdir -p "$T/b"
t_exit 0 "$ERODE" --progress --json -s mei.steps=2 -f png --layers water,height -o "$T/b" "$P"
[ "$(wc -l < "$T/stdout")" -eq 1 ] && $PY -c 'import json,sys; json.loads(sys.stdin.read())' < "$T/stdout" \
    || t_fail "stdout is not one JSON line: $(head -c 200 "$T/stdout")"
got=$(phases "$T/stderr" | tr '\n' ',')
[ "$got" = "reading,model,writing height,writing water," ] || t_fail "phases: $got"
t_ok

t_case "--progress with --tile-set: one reading bar over the tile and its neighbours"
if have gdal_translate; then
    "$SRCDIR/scripts/cut-tiles" "$W" 2 "$T/tiles" > "$T/tiles.list"
    mkdir -p "$T/ts"
    t_exit 0 "$ERODE" --progress --tile-set "$T/tiles.list" --halo 16 -s mei.steps=2 \
        --layers height -o "$T/ts" "$(head -n 1 "$T/tiles.list")"
    got=$(phases "$T/stderr" | tr '\n' ',')
    [ "$got" = "reading,model,writing height," ] || t_fail "phases: $got"
    t_ok
else
    t_skip "gdal_translate not installed"
fi

t_case "-q: no progress, nothing on stderr or stdout"
mkdir -p "$T/c"
t_exit 0 "$ERODE" -q -s mei.steps=5 -o "$T/c" "$W"
[ -s "$T/stderr" ] && t_fail "stderr: $(head -c 200 "$T/stderr")"
[ -s "$T/stdout" ] && t_fail "stdout: $(head -c 200 "$T/stdout")"
t_ok

t_case "no terminal and no --progress: no progress drawn"
mkdir -p "$T/d"
t_exit 0 "$ERODE" -s mei.steps=5 -o "$T/d" "$W"
grep -q 'reading\|writing' "$T/stderr" && t_fail "progress drawn: $(head -c 200 "$T/stderr")"
t_ok
