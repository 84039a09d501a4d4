#!/bin/sh
# valgrind memcheck on small cases of the whole program: every model, PNG,
# EXR and RAW out, ZSTD/COG GeoTIFF out and back in, control maps, the
# flow and wear layers, a bad input, a recipe error.  Any error or
# definite leak fails.
# Usage: tests/valgrind.sh [path/to/erode]
set -u
erode=${1:-./erode}
src=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind > /dev/null || { echo "valgrind: not installed, skipped"; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/erode-vg-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
vg="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite"
status=0 n=0
run() { # expected exit status, then erode's arguments (a subcommand first)
    want=$1; shift
    sub=
    [ "$1" = stitch ] && { sub=stitch; shift; }
    n=$((n + 1))
    # shellcheck disable=SC2086
    OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2 $vg "$erode" $sub -q "$@" > /dev/null 2> "$tmp/log"; got=$?
    if [ "$got" -ne "$want" ]; then
        echo "valgrind: erode $* exited $got (expected $want):"; sed 's/^/  /' "$tmp/log" | head -40
        status=1
    fi
}
O=$src/tests/data/olinda_dem_f32_utm25s.tif
run 0 -s mei.steps=20 -o "$tmp" "$O"
run 0 -r "$src/configs/droplet.json" -s droplet.count=2000 --layers height,water,sediment,erosion,deposit -o "$tmp" "$O"
run 0 -r "$src/configs/droplet-mass-transfer.json" -s droplet.count=500 -o "$tmp" "$O"
run 0 -s mei.steps=2 -f png -o "$tmp" "$O"
# an output eroded again (its stem loses .height): into another directory
mkdir -p "$tmp/again"
run 0 -s mei.steps=2 -o "$tmp/again" "$tmp/olinda_dem_f32_utm25s.height.png"
# the parallel codecs, COG and rounding, the render formats
run 0 -s mei.steps=2 --co COMPRESS=ZSTD --co COG=YES --co BLOCKSIZE=64 --precision 1e-3 -o "$tmp" "$O"
run 0 -s mei.steps=2 -o "$tmp/again/" "$tmp/olinda_dem_f32_utm25s.height.tif"
run 0 -s mei.steps=2 -f exr --co PIXEL_TYPE=HALF -o "$tmp" "$O"
run 0 -s mei.steps=2 -f r16 -o "$tmp" "$O"
# the SPH model, a few steps
run 0 -r "$src/configs/sph.json" -s sph.steps=3 -o "$tmp" "$O"
# stream power with every up-close key: drawn routing, rock field, open
# edges, fans, channel heads and width, nonlinear creep and its relaxation
run 0 -r "$src/configs/stream-power.json" -s stream_power.steps=10 -s stream_power.sc=0.8 \
    -s stream_power.channel_head=300 -s stream_power.channel_width=5 --layers height,water,sediment,flow,wear -o "$tmp" "$O"
# breached basins (G = 0)
run 0 -r "$src/configs/stream-power.json" -s stream_power.steps=3 -s stream_power.g=0 \
    -s stream_power.depressions=breach --layers height,water,wear -o "$tmp" "$O"
# control maps: a painted mask read, checked and used by Mei and droplets,
# a hardness map on SPH, and a checkpoint that records them
W=$src/tests/data/whitebox_dem_f32_utm18n.tif
run 0 -r "$src/configs/mei-masked.json" -s mei.steps=5 --checkpoint "$tmp/ck" -o "$tmp" "$W"
run 0 -r "$src/configs/droplet.json" -s mask="$src/configs/masks/vermont-protect.tif" \
    -s rain="$src/configs/masks/vermont-protect.tif" -s droplet.count=2000 -o "$tmp" "$W"
run 0 -r "$src/configs/sph.json" -s hardness="$src/configs/masks/vermont-protect.tif" -s sph.steps=2 -o "$tmp" "$W"
run 2 -s mask="$O" -s mei.steps=2 -o "$tmp" "$W"
# the flow and wear accumulators of every model, one kept in a checkpoint
run 0 -s mei.steps=5 --layers height,flow,wear --checkpoint "$tmp/ckfw" -o "$tmp" "$O"
run 0 -r "$src/configs/droplet.json" -s droplet.count=2000 --layers flow,wear -o "$tmp" "$O"
run 0 -r "$src/configs/sph.json" -s sph.steps=2 --layers height,flow,wear -o "$tmp" "$O"
# a plan error: refused after the input is read, before any work
run 2 -s mei.ke=100 -s mei.dt=0.02 -o "$tmp" "$O"
head -c 3000 "$O" > "$tmp/cut.tif"
run 2 -o "$tmp" "$tmp/cut.tif"
run 2 -s mei.stpes=2 -o "$tmp" "$O"
# a one-tile set: the halo run and erode stitch, then a stitch refused
# before work (its water layer would replace the list)
echo "$O" > "$tmp/tiles.list"
mkdir -p "$tmp/t"
run 0 --tile-set "$tmp/tiles.list" --halo 4 -s mei.steps=2 -o "$tmp/t" "$O"
run 0 stitch --tile-set "$tmp/tiles.list" -o "$tmp/t"
cp "$tmp/tiles.list" "$tmp/t/olinda_dem_f32_utm25s.water.tif"
run 2 stitch --tile-set "$tmp/t/olinda_dem_f32_utm25s.water.tif" -o "$tmp/t"
[ $status -eq 0 ] && echo "valgrind: $n runs clean"
exit $status
