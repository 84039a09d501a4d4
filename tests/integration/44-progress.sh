#!/bin/sh
# Progress while reading and writing: with --progress=bar, stderr
# shows the reading phase, the model's bar and one writing phase per layer,
# in that order, each ending at 100 % and never going back; stdout stays
# clean (nothing, or only the --json lines); -q prints nothing at all.
# Off a terminal, or on one with TERM=dumb, --progress prints plain lines
# (a farm's job log): no escape or carriage-return byte, at most one every
# 5 s besides each phase's first and 100 % lines; --progress=json the same
# as JSON objects.
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

t_case "--progress=bar: reading, the model, then each layer written, in order, on stderr only"
mkdir -p "$T/a"
t_exit 0 "$ERODE" --progress=bar -s mei.steps=50 --co BLOCKSIZE=16 -o "$T/a" "$W"
[ -s "$T/stdout" ] && t_fail "stdout not empty: $(head -c 200 "$T/stdout")"
got=$(phases "$T/stderr" | tr '\n' ',')
[ "$got" = "reading,model,writing height,writing sediment,writing water," ] || t_fail "phases: $got"
t_ok

t_case "--progress=bar --json: stdout holds only the JSON line; PNG read and written"
mkdir -p "$T/b"
t_exit 0 "$ERODE" --progress=bar --json -s mei.steps=2 -f png --layers water,height -o "$T/b" "$P"
[ "$(wc -l < "$T/stdout")" -eq 1 ] && $PY -c 'import json,sys; json.loads(sys.stdin.read())' < "$T/stdout" \
    || t_fail "stdout is not one JSON line: $(head -c 200 "$T/stdout")"
got=$(phases "$T/stderr" | tr '\n' ',')
[ "$got" = "reading,model,writing height,writing water," ] || t_fail "phases: $got"
t_ok

t_case "--progress=bar with --tile-set: one reading bar over the tile and its neighbours"
if have gdal_translate; then
    "$SRCDIR/scripts/cut-tiles" "$W" 2 "$T/tiles" > "$T/tiles.list"
    mkdir -p "$T/ts"
    t_exit 0 "$ERODE" --progress=bar --tile-set "$T/tiles.list" --halo 16 -s mei.steps=2 \
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

# Fails the case when the captured stderr holds a carriage return or an
# escape byte, or does not end in a newline.
plain_lines() {
    [ "$(tr -d -c '\r\033' < "$1" | wc -c)" -eq 0 ] || t_fail "a CR or ESC byte in: $(head -c 200 "$1" | od -c | head -n 3)"
    [ -z "$(tail -c 1 "$1")" ] || t_fail "the last line has no newline"
}
LINE='^erode: [^ ]*: \(reading\|writing [a-z]*\|[a-z_]*\|stage [0-9]/[0-9] [a-z_]*\): [0-9]\{1,3\}% elapsed [0-9]*:[0-5][0-9] eta \(--:--\|[0-9]*:[0-5][0-9]\)$'

t_case "--progress to a file: a staged run's lines, each phase from 0 % to 100 %, no CR or ESC"
mkdir -p "$T/e"
t_exit 0 "$ERODE" --progress -r "$SRCDIR/configs/rolling-hills.json" -s 'stages[0].stream_power.steps=20' \
    -s 'stages[1].mei.steps=20' --layers height -o "$T/e" "$W"
plain_lines "$T/stderr"
bad=$(grep -v -- "$LINE" "$T/stderr" | head -n 3)
[ -z "$bad" ] || t_fail "not a progress line: $bad"
got=$(sed -n 's/^erode: [^ ]*: \(.*\): \([0-9]*\)% .*/\1 \2/p' "$T/stderr" | tr '\n' ',')
want="reading 0,reading 100,stage 1/2 stream_power 0,stage 1/2 stream_power 100,stage 2/2 mei 0,stage 2/2 mei 100,writing height 0,writing height 100,"
[ "$got" = "$want" ] || t_fail "lines: $got"
t_ok

# A stage of ~8 s (stream power, ~3 ms a step on two cores): the lines of
# a phase at least ER_PROGRESS_LINE_SECONDS (5 s) apart but for its 100 %
# line, none more than 10 s apart (by their printed whole seconds: 11),
# and past 6 s at least one line between its start and its end.
t_case "--progress to a file: ETA lines at most one every 5 s and at least one every 10 s"
mkdir -p "$T/f"
t_exit 0 "$ERODE" --progress -r "$SRCDIR/configs/rolling-hills.json" -s 'stages[0].stream_power.steps=2500' \
    -s 'stages[1].mei.steps=20' --layers height -o "$T/f" "$W"
plain_lines "$T/stderr"
bad=$(sed -n 's/^erode: [^ ]*: \(.*\): \([0-9]*\)% elapsed \([0-9]*\):\([0-9]*\) eta \(.*\)/\1|\2|\3|\4|\5/p' "$T/stderr" |
    awk -F'|' '{ t = $3 * 60 + $4
                 if ($1 != phase) { phase = $1; last = t; mid = 0; next }
                 if ($2 < 100 && t - last < 5) print phase ": lines " t - last " s apart"
                 if (t - last > 11) print phase ": no line for " t - last " s"
                 if ($2 < 100) { mid = 1; if ($5 !~ /^[0-9]+:[0-9][0-9]$/) print phase ": no ETA: " $5 }
                 if ($2 == 100 && t >= 6 && !mid) print phase ": no line between its start and end"
                 last = t }')
if [ -n "$bad" ]; then
    t_fail "$bad"
elif ! grep -q 'stage 1/2 stream_power: [1-9][0-9]\{0,1\}% ' "$T/stderr"; then
    t_skip "the stream power stage took under 5 s here: no line between its start and end to time"
else
    t_ok
fi

t_case "--progress=json: one JSON object a line with every key, fractions of a phase never going back"
mkdir -p "$T/g"
t_exit 0 "$ERODE" --progress=json -r "$SRCDIR/configs/rolling-hills.json" -s 'stages[0].stream_power.steps=20' \
    -s 'stages[1].mei.steps=20' --layers height -o "$T/g" "$W"
plain_lines "$T/stderr"
out=$($PY - "$T/stderr" << 'EOF'
import json, sys
keys = {"input", "phase", "stage", "stages", "model", "fraction", "elapsed_s", "eta_s"}
seen, last = [], {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    if set(o) != keys:
        print("keys", sorted(o))
    k = (o["phase"], o["stage"], o["stages"], o["model"])
    if o["fraction"] < last.get(k, 0) or not o["input"].endswith("whitebox_dem_f32_utm18n.tif"):
        print("bad", line)
    last[k] = o["fraction"]
    if not seen or seen[-1] != k:
        seen.append(k)
print(seen)
print([k for k, v in last.items() if v != 1])
EOF
) || t_fail "not JSON: $out"
want="[('reading', None, None, None), ('model', 1, 2, 'stream_power'), ('model', 2, 2, 'mei'), ('writing height', None, None, None)]
[]"
[ "$out" = "$want" ] || t_fail "$out"
t_ok

t_case "a terminal with TERM=dumb gets lines without ESC; another terminal the bar"
if have script; then
    mkdir -p "$T/h"
    run="'$ERODE' -s mei.steps=20 --layers height -o '$T/h' '$W'"
    TERM=dumb script -qc "$run" /dev/null > "$T/tty" 2>&1 < /dev/null
    grep -q "$(printf '\033')" "$T/tty" && t_fail "an ESC byte with TERM=dumb: $(head -c 200 "$T/tty" | od -c | head -n 3)"
    grep -q 'mei: 100% elapsed' "$T/tty" || t_fail "no lines: $(head -c 200 "$T/tty")"
    TERM=xterm script -qc "$run" /dev/null > "$T/tty" 2>&1 < /dev/null
    grep -q "$(printf '\033')\[Kerode: [^ ]* \[#*\] 100% eta" "$T/tty" || t_fail "no bar on a terminal: $(head -c 200 "$T/tty")"
    t_ok
else
    t_skip "no script (util-linux)"
fi

t_case "--progress=bogus: a usage error naming the modes"
t_exit 2 "$ERODE" --progress=bogus "$W"
t_one_error_line "--progress: 'bogus': expected auto, bar, lines, json or none"
t_ok
