#!/bin/sh
# Droplets with --backend vulkan beyond plain runs: a tile set
# (windows) gives the CPU path's seam figures (its bytes where the device
# rounds as the CPU does: lavapipe), runs killed with SIGKILL and resumed
# from their checkpoints give the bytes of an uninterrupted Vulkan run,
# and --frames writes the frames of the CPU path with unchanged outputs.
# Skips without a Vulkan build or device (lavapipe counts as one).
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
stem=whitebox_dem_f32_utm18n
# The runs killed and resumed: 2 droplets a cell in batches of 10,000, 9
# batches with a checkpoint every 2 (5 a cell, 23 batches, took 2x the
# CPU; the kills land between checkpoints alike).
DROP="-r $SRCDIR/configs/droplet.json -s droplet.per_cell=2 -s droplet.batch_size=10000"

if ! "$ERODE" --list-devices > "$T/devices" 2> "$T/stderr"; then
    t_case "vulkan droplet hooks"
    t_skip "no Vulkan device: $(head -c 200 "$T/stderr")"
    exit 0
fi
# A CPU device (lavapipe) rounds sqrt and division as the CPU: Lague's
# droplets then give the CPU's bytes (tests/unit/check_vulkan_droplet.c).
cpu_device=0
head -n 1 "$T/devices" | grep -q '(cpu,' && cpu_device=1

# --- frames --------------------------------------------------------------
t_case "vulkan: --frames writes the start, every 2nd batch and the end; outputs unchanged"
d=$T/frames
mkdir -p "$d/plain" "$d/framed" "$d/f" "$d/cpu" "$d/fc"
args="-r $SRCDIR/configs/droplet.json -s droplet.count=25000 -s droplet.batch_size=5000"
# shellcheck disable=SC2086
t_exit 0 "$ERODE" -q $args --backend vulkan -o "$d/plain" "$W"
# shellcheck disable=SC2086
t_exit 0 "$ERODE" -q $args --backend vulkan --json --frames "$d/f" --frame-every 2 -o "$d/framed" "$W"
[ "$(jq .frames "$T/stdout")" = 4 ] || t_fail "--json says $(jq .frames "$T/stdout") frames, not 4"
want=$(for i in 0 1 2 3; do printf '%s.frame-%06d.png\n' $stem $i; done)
[ "$(ls "$d/f")" = "$want" ] || t_fail "frames: got [$(ls "$d/f" | tr '\n' ' ')]"
for l in height sediment water; do
    cmp -s "$d/plain/$stem.$l.tif" "$d/framed/$stem.$l.tif" || t_fail "$l differs with --frames"
done
cmp -s "$d/f/$stem.frame-000000.png" "$d/f/$stem.frame-000003.png" && t_fail "the first and last frames are the same picture"
if [ $cpu_device = 1 ]; then
    # shellcheck disable=SC2086
    t_exit 0 "$ERODE" -q $args --frames "$d/fc" --frame-every 2 -o "$d/cpu" "$W"
    for f in "$d/fc"/*.png; do
        cmp -s "$f" "$d/f/$(basename "$f")" || t_fail "$(basename "$f") differs from the cpu path's"
    done
fi
t_ok

# --- SIGKILL and --resume -----------------------------------------------

t_case "vulkan: reference run"
mkdir -p "$T/ref"
t0=$(now_ms)
# shellcheck disable=SC2086
t_exit 0 "$ERODE" -q $DROP --backend vulkan --json -o "$T/ref" "$W"
dur=$(($(now_ms) - t0))
cp "$T/stdout" "$T/ref.json"
t_ok

t_case "vulkan: killed (SIGKILL) at random moments and resumed: outputs byte-identical"
killed_resumed k 2 "$DROP --backend vulkan"
for l in height sediment water; do
    cmp -s "$T/ref/$stem.$l.tif" "$T/k/out/$stem.$l.tif" ||
        t_fail "$l differs from the uninterrupted run (after $kills kills)"
done
echo "       ($kills kills)"
t_ok

t_case "vulkan: SIGTERM saves a checkpoint; --resume finishes with the same bytes"
d=$T/term
mkdir -p "$d/out" "$d/ck"
# shellcheck disable=SC2086
"$ERODE" -q $DROP --backend vulkan --checkpoint "$d/ck/$stem.ckpt" -o "$d/out" "$W" 2> "$d/stderr" &
pid=$!
sleep "$(awk -v d="$dur" 'BEGIN { printf "%.3f", d / 2000 }')"
kill -TERM $pid 2> /dev/null
wait $pid; rc=$?
if [ $rc -eq 143 ]; then
    [ -f "$d/ck/$stem.ckpt" ] || t_fail "SIGTERM left no checkpoint"
    # shellcheck disable=SC2086
    t_exit 0 "$ERODE" -q $DROP --backend vulkan --checkpoint "$d/ck/$stem.ckpt" \
        --resume "$d/ck/$stem.ckpt" -o "$d/out" "$W"
fi
[ $rc -eq 143 ] || [ $rc -eq 0 ] || t_fail "the run exited $rc: $(head -c 300 "$d/stderr")"
for l in height sediment water; do
    cmp -s "$T/ref/$stem.$l.tif" "$d/out/$stem.$l.tif" || t_fail "$l differs from the uninterrupted run"
done
t_ok

# --- tile sets -----------------------------------------------------------
if ! have gdal_translate || ! $PY -c 'from osgeo import gdal; import numpy' 2> /dev/null || ! have parallel; then
    t_case "vulkan tile sets"; t_skip "needs gdal-bin, python3-gdal and GNU parallel (scripts/deps --test)"; exit 0
fi
SEAM="$PY $SRCDIR/scripts/seam-figures"
dem=$T/puget.tif
# The central 256^2 cells of the Puget Sound DEM, as in 95-tiles.sh.
gdal_translate -q -ot Float32 -scale 0 10000 0 1000 -srcwin 384 384 256 256 -a_srs EPSG:32610 \
    -a_ullr 520480 5379520 561440 5338560 "$DATA/puget_sound_1k_u16.png" "$dem"
TDROP="-s model=droplet -s droplet.height_unit=2000 -s droplet.per_cell=0.2"
"$SRCDIR/scripts/cut-tiles" "$dem" 2 "$T/tiles" > "$T/tiles.list"
field() { jq -r ".$2" "$1"; }
# The CLI's preflight refused every --tile-set on Vulkan before the
# backends said what they run (ER_CAP_WINDOW); where it still does, the
# droplet backend's windows are tested in tests/unit only.
mkdir -p "$T/probe"
# shellcheck disable=SC2086
if ! "$ERODE" -q --tile-set "$T/tiles.list" --halo 40 --layers height $TDROP -s droplet.count=0 \
    --backend vulkan -o "$T/probe" "$(head -n 1 "$T/tiles.list")" 2> "$T/probe.err" &&
    grep -q -- '--tile-set: runs on the cpu backend only' "$T/probe.err"; then
    t_case "vulkan tile sets"; t_skip "the CLI refuses --tile-set with --backend vulkan (cli/preflight.c preflight_tiles)"; exit 0
fi
for b in cpu vulkan; do
    t_case "droplet tile set on $b: erode-tiles + stitch"
    mkdir -p "$T/whole-$b" "$T/ts-$b"
    # shellcheck disable=SC2086
    t_exit 0 "$ERODE" -q $TDROP --backend $b --layers height -o "$T/whole-$b" "$dem"
    # shellcheck disable=SC2086
    t_exit 0 "$SRCDIR/scripts/erode-tiles" --erode "$ERODE" -j 2 --threads 1 --halo 40 --layers height \
        -o "$T/ts-$b" "$T/tiles.list" -- $TDROP --backend $b
    $SEAM "$T/whole-$b/puget.height.tif" "$T/ts-$b"/*.height.tif > "$T/seam-$b.json" ||
        t_fail "seam-figures refused the stitched tiles"
    t_ok
done

t_case "droplet tile set: vulkan's seam figures are the cpu path's"
s=$(field "$T/seam-vulkan.json" seam) i=$(field "$T/seam-vulkan.json" interior)
sc=$(field "$T/seam-cpu.json" seam) ic=$(field "$T/seam-cpu.json" interior)
echo "    vulkan: seam $s m (interior $i m); cpu: seam $sc m (interior $ic m)"
if [ $cpu_device = 1 ]; then
    # the same bytes, whole map and every stitched tile
    cmp -s "$T/whole-cpu/puget.height.tif" "$T/whole-vulkan/puget.height.tif" ||
        t_fail "the whole map differs from the cpu path's"
    for f in "$T/ts-cpu"/*.height.tif; do
        cmp -s "$f" "$T/ts-vulkan/$(basename "$f")" || t_fail "$(basename "$f") differs from the cpu path's"
    done
else
    # A droplet result is one realisation among many (chaotic paths): the
    # run-to-run spread is that between two seeds on the cpu path; each of
    # vulkan's figures must lie within the two cpu seeds' figures widened
    # by their difference, and its seam must not stand out from its
    # interior (as 95-tiles.sh asks of the cpu path).
    mkdir -p "$T/whole-seed2" "$T/ts-seed2"
    # shellcheck disable=SC2086
    "$ERODE" -q $TDROP -s seed=2 --layers height -o "$T/whole-seed2" "$dem" || t_fail "seed 2: whole map failed"
    # shellcheck disable=SC2086
    "$SRCDIR/scripts/erode-tiles" --erode "$ERODE" -j 2 --threads 1 --halo 40 --layers height \
        -o "$T/ts-seed2" "$T/tiles.list" -- $TDROP -s seed=2 || t_fail "seed 2: tile set failed"
    $SEAM "$T/whole-seed2/puget.height.tif" "$T/ts-seed2"/*.height.tif > "$T/seam-seed2.json" ||
        t_fail "seam-figures refused the seed 2 tiles"
    s2=$(field "$T/seam-seed2.json" seam) i2=$(field "$T/seam-seed2.json" interior)
    echo "    cpu, seed 2: seam $s2 m (interior $i2 m)"
    within() { awk -v x="$1" -v a="$2" -v b="$3" 'BEGIN { d = a > b ? a - b : b - a; lo = (a < b ? a : b) - d; hi = (a > b ? a : b) + d; exit !(x >= lo && x <= hi) }'; }
    within "$s" "$sc" "$s2" || t_fail "seam $s m outside the cpu seeds' spread ($sc, $s2 m)"
    within "$i" "$ic" "$i2" || t_fail "interior $i m outside the cpu seeds' spread ($ic, $i2 m)"
    awk -v s="$s" -v i="$i" 'BEGIN { exit !(s <= 1.25 * i) }' || t_fail "seam $s m stands out from the interior $i m"
fi
t_ok
