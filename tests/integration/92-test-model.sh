#!/bin/sh
# The test build's erode ($ERODE_TEST_MODELS: build/test-models/erode, the
# Makefile's test build with tests/models/models.def) runs the test-only
# diffusion model from the command line like a shipped one, with no line
# of cli/ or io/ written for it: --json and its budget, a stop by SIGTERM
# and --resume to the straight run's bytes, frames, a stage of a staged
# recipe.  The shipped erode knows nothing of it.
. "$(dirname "$0")/lib.sh"
IN=$SRCDIR/tests/data/checkpoints/in.tif
DIFF="-s model=diffusion -s diffusion.steps=400 -s diffusion.kd=200"

t_case "the shipped erode knows no test model"
t_exit 2 "$ERODE" -q -s model=diffusion -o "$T" "$IN"
t_one_error_line "'diffusion' is not one of"
"$ERODE" --print-recipe | grep -q diffusion && t_fail "--print-recipe names it"
"$ERODE" --help | grep '^Models' | grep -q diffusion && t_fail "--help names it"
t_ok

if [ -z "${ERODE_TEST_MODELS:-}" ] || [ ! -x "$ERODE_TEST_MODELS" ]; then
    t_case "the test build's erode"; t_skip "ERODE_TEST_MODELS not set (make check sets it)"
    exit 0
fi
E=$ERODE_TEST_MODELS

t_case "diffusion: --json, its budget closes, GDAL reads the heights"
mkdir -p "$T/ref"
# shellcheck disable=SC2086
t_exit 0 "$E" -q $DIFF -j 2 --json -o "$T/ref" "$IN"
jq -e '.model == ["diffusion"] and .steps == 400 and .substeps >= 400 and
       .budget.relative_error < 1e-6 and .budget.eroded > 0' "$T/stdout" > /dev/null ||
    t_fail "--json: $(cat "$T/stdout")"
jq -c 'del(.seconds, .timing, .outputs)' "$T/stdout" > "$T/ref.json"
if have gdalinfo; then
    gdalinfo -stats "$T/ref/in.height.tif" > /dev/null 2>&1 || t_fail "GDAL cannot read the heights"
fi
t_ok

t_case "diffusion: SIGTERM saves a checkpoint, --resume (-j1) gives the straight run's bytes"
mkdir -p "$T/stop/out" "$T/stop/ck"
# shellcheck disable=SC2086
"$E" -q $DIFF -j 2 --checkpoint "$T/stop/ck/c.ckpt" --checkpoint-every 5 -o "$T/stop/out" "$IN" \
    2> "$T/stop/stderr" &
pid=$!
while [ ! -s "$T/stop/ck/c.ckpt" ] && kill -0 $pid 2> /dev/null; do sleep 0.02; done
kill -TERM $pid
rc=0; wait $pid || rc=$?
[ "$rc" -eq 143 ] || t_fail "exited $rc, expected 143: $(cat "$T/stop/stderr")"
# shellcheck disable=SC2086
t_exit 0 "$E" -q $DIFF -j 1 --json --resume "$T/stop/ck/c.ckpt" -o "$T/stop/out" "$IN"
jq -e '.resumed_at > 0' "$T/stdout" > /dev/null || t_fail "not resumed part-way: $(cat "$T/stdout")"
jq -c 'del(.seconds, .timing, .outputs, .resumed_at)' "$T/stdout" > "$T/stop.json"
cmp -s "$T/ref.json" "$T/stop.json" || t_fail "--json differs: $(diff "$T/ref.json" "$T/stop.json")"
for l in height sediment water; do
    cmp -s "$T/ref/in.$l.tif" "$T/stop/out/in.$l.tif" || t_fail "$l differs"
done
t_ok

t_case "diffusion: --frames draws the start, every 100th step and the end"
mkdir -p "$T/frames" "$T/fo"
# shellcheck disable=SC2086
t_exit 0 "$E" -q $DIFF --frames "$T/frames" --frame-every 100 -o "$T/fo" "$IN"
n=$(find "$T/frames" -name 'in.frame-*.png' | wc -l)
[ "$n" -eq 5 ] || t_fail "$n frames, expected 5 (steps 0, 100, 200, 300, 400)"
t_ok

t_case "diffusion: a stage of a staged recipe, then Mei"
cat > "$T/staged.json" << 'JSON'
{"erode_recipe": 1, "stages": [
  {"model": "diffusion", "diffusion": {"steps": 50, "kd": 100}},
  {"model": "mei", "mei": {"steps": 20}}]}
JSON
mkdir -p "$T/st"
t_exit 0 "$E" -q -r "$T/staged.json" --json -o "$T/st" "$IN"
jq -e '.model == ["diffusion", "mei"] and (.stages | length) == 2 and .stages[0].steps == 50' \
    "$T/stdout" > /dev/null || t_fail "--json: $(cat "$T/stdout")"
t_ok
