#!/bin/sh
# Checkpoints and --resume: runs killed with SIGKILL at random moments and
# resumed from their last checkpoint until they finish give the outputs of
# an uninterrupted run, byte for byte (Mei and droplets, other -j);
# SIGTERM saves a checkpoint and leaves no temporary; checkpoints of
# another recipe, input or model, and damaged ones, are refused (exit 2).
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
stem=whitebox_dem_f32_utm18n
MEI="-s mei.steps=800"
DROP="-r $SRCDIR/configs/droplet.json -s droplet.per_cell=5 -s droplet.batch_size=10000"


SNAP="$DROP -s droplet.schedule=snapshot"

# snapshot: the droplets' snapshot schedule at 0.22 droplets a cell and
# batch (the first snapshot schedule's clamp withheld 30 % of that run's
# erosion and refused it; the shares need no clamp): its budget closes
# with withheld 0 and no cell ends below the input's lowest; SIGTERM and
# --resume only
for model in mei droplet snapshot; do
    case $model in mei) args=$MEI every=60 ;; droplet) args=$DROP every=2 ;; snapshot) args=$SNAP every=5 ;; esac
    mkdir -p "$T/ref-$model"
    t_case "$model: reference run"
    t0=$(now_ms)
    # shellcheck disable=SC2086
    t_exit 0 "$ERODE" -q $args -j 2 --json -o "$T/ref-$model" "$W"
    dur=$(($(now_ms) - t0))
    [ $model = mei ] && dur_mei=$dur
    cp "$T/stdout" "$T/ref-$model.json"
    if [ $model = snapshot ]; then
        jq -e '.budget as $b | $b.withheld == 0 and $b.eroded > 0 and
            ((($b.material_before - $b.material_after - $b.left_map) | fabs) <= 1e-6 * $b.material_before)' \
            "$T/stdout" > /dev/null || t_fail "budget: $(jq -c .budget "$T/stdout")"
        $PY - "$W" "$T/ref-$model/$stem.height.tif" << 'PYEOF' || t_fail "a cell below the input's lowest"
import sys
from osgeo import gdal
gdal.UseExceptions()
def low(p):
    ds = gdal.Open(p)
    b = ds.GetRasterBand(1)
    a, nd = b.ReadAsArray(), b.GetNoDataValue()
    return (a if nd is None else a[a != nd]).min()
sys.exit(0 if low(sys.argv[2]) >= low(sys.argv[1]) else 1)
PYEOF
    fi
    t_ok

    rounds="1 2"
    [ $model = snapshot ] && rounds=
    for round in $rounds; do
        t_case "$model: killed (SIGKILL) at random moments and resumed, round $round: outputs byte-identical"
        # a run that finished before its first kill proves nothing: again,
        # with shorter delays (the reference may have run on a busy machine)
        tries=0 d0=$dur
        while :; do
            killed_run "$model-k$round" $every "$args"
            tries=$((tries + 1))
            [ "$kills" -ge 1 ] || [ $tries -ge 4 ] && break
            dur=$((dur / 2))
        done
        dur=$d0
        [ "$kills" -ge 1 ] || t_fail "the run was never killed: the test proves nothing"
        for l in height sediment water; do
            cmp -s "$T/ref-$model/$stem.$l.tif" "$T/$model-k$round/out/$stem.$l.tif" ||
                t_fail "$l differs from the uninterrupted run (after $kills kills)"
        done
        echo "       ($kills kills)"
        t_ok
    done

    t_case "$model: SIGTERM with --checkpoint saves the state, exits 143, leaves no temporary"
    d=$T/$model-term
    mkdir -p "$d/out" "$d/ck"
    # the signal once a first checkpoint shows the run past its start (a
    # fixed delay landed at step 0 on a loaded machine)
    # shellcheck disable=SC2086
    "$ERODE" -q $args --checkpoint "$d/ck/c.ckpt" --checkpoint-every $every -o "$d/out" "$W" \
        2> "$d/stderr" &
    pid=$!
    while [ ! -s "$d/ck/c.ckpt" ] && kill -0 $pid 2> /dev/null; do sleep 0.02; done
    kill -TERM $pid
    wait $pid; rc=$?
    [ $rc -eq 143 ] || t_fail "exited $rc, expected 143: $(cat "$d/stderr")"
    grep -q "state saved in '$d/ck/c.ckpt'" "$d/stderr" || t_fail "stderr: $(cat "$d/stderr")"
    [ "$(ls -A "$d/ck")" = c.ckpt ] || t_fail "checkpoint directory holds: $(ls -A "$d/ck")"
    t_empty_dir "$d/out"
    # the --json line of the resumed run: the same budget as the reference
    # shellcheck disable=SC2086
    t_exit 0 "$ERODE" -q $args -j 1 --json --checkpoint "$d/ck/c.ckpt" --resume "$d/ck/c.ckpt" -o "$d/out" "$W"
    for l in height sediment water; do
        cmp -s "$T/ref-$model/$stem.$l.tif" "$d/out/$stem.$l.tif" || t_fail "$l differs after SIGTERM + --resume"
    done
    a=$(jq -c .budget "$T/ref-$model.json"); b=$(jq -c .budget "$T/stdout")
    [ "$a" = "$b" ] || t_fail "budget differs: $a vs $b"
    jq -e '.resumed_at > 0' "$T/stdout" > /dev/null || t_fail "no resumed_at in $(cat "$T/stdout")"
    t_empty_dir "$d/ck"
    t_ok
done

t_case "mei --layers flow,wear: SIGTERM with --checkpoint, then --resume: the straight run's flow and wear"
d=$T/fw
mkdir -p "$d/ref" "$d/out" "$d/ck"
t0=$(now_ms)
# shellcheck disable=SC2086
t_exit 0 "$ERODE" -q $MEI --layers height,flow,wear -o "$d/ref" "$W"
fdur=$(($(now_ms) - t0))
# shellcheck disable=SC2086
"$ERODE" -q $MEI --layers height,flow,wear --checkpoint "$d/ck/c.ckpt" -o "$d/out" "$W" 2> "$d/stderr" &
pid=$!
sleep "$(awk -v d="$fdur" 'BEGIN { printf "%.3f", d / 3000 }')"
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] || t_fail "exited $rc, expected 143: $(cat "$d/stderr")"
# shellcheck disable=SC2086
t_exit 0 "$ERODE" -q $MEI --layers height,flow,wear -j 1 --json --resume "$d/ck/c.ckpt" -o "$d/out" "$W"
jq -e '.resumed_at > 0' "$T/stdout" > /dev/null || t_fail "no resumed_at in $(cat "$T/stdout")"
for l in height flow wear; do
    cmp -s "$d/ref/$stem.$l.tif" "$d/out/$stem.$l.tif" || t_fail "$l differs after SIGTERM + --resume"
done
t_ok

t_case "a run stopped while its outputs are put in place keeps the end-state checkpoint; --resume only writes them"
d=$T/end
mkdir -p "$d/out" "$d/ck"
if ! have flock; then
    t_skip "flock(1) (util-linux) not installed"
else
# Another writer holds the output directory's lock (io/atomic.h), so the run
# finishes, writes its temporaries and waits; SIGTERM then stops it there.
# the subshell becomes the sleep holding the lock: killing it frees the lock
(exec 9> "$d/out/.erode.lock" && flock 9 && exec sleep 600) & holder=$!
# shellcheck disable=SC2086
"$ERODE" -q $MEI --checkpoint "$d/ck/c.ckpt" -o "$d/out" "$W" 2> "$T/stderr" & writer=$!
i=0
while [ $i -lt 600 ] && [ "$(ls -A "$d/out" | grep -c '\.tmp-')" -lt 3 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM $writer; wait $writer; rc=$?
kill $holder 2>/dev/null; wait $holder 2>/dev/null
[ "$rc" -eq 143 ] || t_fail "exit $rc, expected 143: $(cat "$T/stderr")"
[ -f "$d/ck/c.ckpt" ] || t_fail "no checkpoint left"
[ -z "$(ls -A "$d/out" | grep -v '^\.erode\.lock$')" ] || t_fail "files left in out: $(ls -A "$d/out")"
rm -f "$d/out/.erode.lock"
# shellcheck disable=SC2086
t_exit 0 "$ERODE" -q $MEI --json --checkpoint "$d/ck/c.ckpt" --resume "$d/ck/c.ckpt" -o "$d/out" "$W"
[ "$(jq .resumed_at "$T/stdout")" = 800 ] || t_fail "resumed at $(jq .resumed_at "$T/stdout"), not at the end"
for l in height sediment water; do
    cmp -s "$T/ref-mei/$stem.$l.tif" "$d/out/$stem.$l.tif" || t_fail "$l differs"
done
t_empty_dir "$d/ck"
t_ok
fi

# A checkpoint to refuse things with: SIGTERM early in a Mei run.
mkdir -p "$T/rf/out" "$T/rf/ck"
CK=$T/rf/ck/c.ckpt
# shellcheck disable=SC2086
"$ERODE" -q $MEI --checkpoint "$CK" -o "$T/rf/out" "$W" 2> /dev/null &
# (a quarter of the Mei reference run's time: the last model's may be longer)
pid=$!; sleep "$(awk -v d="$dur_mei" 'BEGIN { printf "%.3f", d / 4000 }')"; kill -TERM $pid; wait $pid

refuse() { # name, pattern, erode options...
    t_case "$1"
    name=$1 pat=$2; shift 2
    rm -rf "$T/rf/out"; mkdir -p "$T/rf/out"
    t_exit 2 "$ERODE" -q "$@" -o "$T/rf/out" "$W"
    t_one_error_line "$pat"
    t_empty_dir "$T/rf/out"
    t_ok
}
if [ -f "$CK" ]; then
    # shellcheck disable=SC2086
    refuse "checkpoint of another recipe refused" "checkpoint from another recipe" $MEI -s mei.kc=0.5 --resume "$CK"
    # shellcheck disable=SC2086
    refuse "checkpoint of a run without flow refused for --layers flow" \
        "the state has no flow layer (its run did not keep it)" $MEI --layers height,flow --resume "$CK"
    # shellcheck disable=SC2086
    refuse "checkpoint of another model refused" "checkpoint of a mei run, the recipe runs droplet" $DROP --resume "$CK"
    # the same size, other heights: another input
    if have gdal_translate; then
        gdal_translate -q -scale 0 1000 0 1001 "$W" "$T/rf/other.tif"
        t_case "checkpoint of another input refused"
        # shellcheck disable=SC2086
        t_exit 2 "$ERODE" -q $MEI --resume "$CK" -o "$T/rf/out" "$T/rf/other.tif"
        t_one_error_line "checkpoint from another input"
        t_ok
    else
        t_case "checkpoint of another input refused"; t_skip "gdal_translate not installed"
    fi
    t_case "checkpoint of another map size refused"
    # shellcheck disable=SC2086
    t_exit 2 "$ERODE" -q $MEI --resume "$CK" -o "$T/rf/out" "$DATA/olinda_dem_f32_utm25s.tif"
    t_one_error_line "the input is 111x111"
    t_ok
    # damaged checkpoints (the bad-input corpus style: one line, exit 2, no output)
    head -c 100 "$CK" > "$T/rf/short-header.ckpt"
    head -c 50000 "$CK" > "$T/rf/short-data.ckpt"
    printf 'hello, not a checkpoint\n' > "$T/rf/text.ckpt"
    : > "$T/rf/empty.ckpt"
    cp "$CK" "$T/rf/flipped.ckpt"
    printf 'XYZW' | dd of="$T/rf/flipped.ckpt" bs=1 seek=40000 conv=notrunc 2> /dev/null
    cp "$CK" "$T/rf/header.ckpt"
    printf '\377' | dd of="$T/rf/header.ckpt" bs=1 seek=70 conv=notrunc 2> /dev/null
    for c in "short-header:truncated checkpoint" "short-data:truncated checkpoint" \
             "text:not an erode checkpoint" "empty:not an erode checkpoint" \
             "flipped:corrupt checkpoint (data checksum)" "header:corrupt checkpoint (header checksum)"; do
        f=${c%%:*} pat=${c#*:}
        # shellcheck disable=SC2086
        refuse "damaged checkpoint $f.ckpt refused" "$pat" $MEI --resume "$T/rf/$f.ckpt"
    done
    # shellcheck disable=SC2086
    refuse "missing checkpoint refused" "cannot read '$T/rf/none.ckpt'" $MEI --resume "$T/rf/none.ckpt"
else
    t_case "refusals"; t_fail "SIGTERM left no checkpoint to test with"
fi

t_case "usage: --checkpoint-every needs --checkpoint; several inputs need {stem}"
t_exit 2 "$ERODE" -q --checkpoint-every 5 -o "$T" "$W"
t_one_error_line "needs --checkpoint"
t_exit 2 "$ERODE" -q --checkpoint "$T/c.ckpt" -o "$T" "$W" "$DATA/olinda_dem_f32_utm25s.tif"
t_one_error_line "needs {stem}"
t_exit 2 "$ERODE" -q --resume "$T/c.ckpt" -o "$T" "$W" "$DATA/olinda_dem_f32_utm25s.tif"
t_one_error_line "needs {stem}"
t_exit 2 "$ERODE" -q --checkpoint "$T/no/such/dir/c.ckpt" -o "$T" "$W"
t_one_error_line "checkpoint directory"
t_ok
