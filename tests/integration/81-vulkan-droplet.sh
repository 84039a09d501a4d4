#!/bin/sh
# Droplet erosion with --backend vulkan against the CPU path (GDAL reads
# both): volumes within 2 %, flow correlated, same georeferencing and
# nodata, repeated runs byte-identical, no validation-layer message, and the
# mass-transfer variant's volumes within 2 % (its long paths part, so its
# layers are compared in the unit tests against the spread between seeds).
# Skips without a Vulkan build or device (lavapipe counts as one).
. "$(dirname "$0")/lib.sh"
O=$PY' '$SRCDIR/tests/integration/gdal_oracle.py
R=$SRCDIR/configs/droplet.json

if ! "$ERODE" --list-devices > "$T/devices" 2> "$T/stderr"; then
    t_case "vulkan droplet"
    t_skip "no Vulkan device: $(head -c 200 "$T/stderr")"
    exit 0
fi

# Prints "eroded_ratio deposited_ratio flow_corr height_change_corr" of
# run B against run A, over the valid cells of input IN.
compare() {
    $PY - "$1" "$2" "$3" "$4" << 'PYEOF'
import json, sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
inp, a, b, stem = sys.argv[1:5]
def arr(p):
    ds = gdal.Open(p)  # kept alive while its band is read
    return ds.GetRasterBand(1).ReadAsArray().astype(np.float64)
h0 = arr(inp)
ds0 = gdal.Open(inp)
nd = ds0.GetRasterBand(1).GetNoDataValue()
valid = np.isfinite(h0) if nd is None else h0 != nd
ja, jb = (json.load(open(f"{d}/run.json")) for d in (a, b))
ea, eb = ja["budget"]["eroded"], jb["budget"]["eroded"]
da, db = ja["budget"]["deposited"], jb["budget"]["deposited"]
fa, fb = arr(f"{a}/{stem}.water.tif")[valid], arr(f"{b}/{stem}.water.tif")[valid]
ha, hb = arr(f"{a}/{stem}.height.tif")[valid] - h0[valid], arr(f"{b}/{stem}.height.tif")[valid] - h0[valid]
print(eb / ea, db / da, np.corrcoef(fa, fb)[0, 1], np.corrcoef(ha, hb)[0, 1])
PYEOF
}

for name in whitebox_dem_f32_utm18n olinda_dem_f32_utm25s; do
    dem=$DATA/$name.tif
    t_case "$name: vulkan within 2 % of cpu, flow correlated, same georeferencing"
    for b in cpu vulkan; do
        mkdir -p "$T/$name-$b"
        t_exit 0 "$ERODE" -q -r "$R" --backend $b --json --layers height,sediment,water -o "$T/$name-$b" "$dem"
        cp "$T/stdout" "$T/$name-$b/run.json"
    done
    jq -e '.backend == "vulkan"' "$T/$name-vulkan/run.json" > /dev/null || t_fail "json does not say backend vulkan"
    set -- $(compare "$dem" "$T/$name-cpu" "$T/$name-vulkan" "$name")
    echo "    eroded ratio $1, deposited ratio $2, flow corr $3, height change corr $4"
    awk -v e="$1" -v d="$2" -v f="$3" 'BEGIN { exit !(e > 0.98 && e < 1.02 && d > 0.98 && d < 1.02 && f > 0.95) }' \
        || t_fail "eroded ratio $1, deposited ratio $2, flow correlation $3"
    for l in height sediment water; do
        $O same-georef "$dem" "$T/$name-vulkan/$name.$l.tif" > "$T/why" || t_fail "$l: $(cat "$T/why")"
    done
    # walls: nodata cells in the same places (values compared loosely)
    $O same-values "$dem" "$T/$name-vulkan/$name.height.tif" 1e9 > "$T/why" || t_fail "nodata: $(cat "$T/why")"
    jq -e '.budget as $b | (($b.eroded - $b.deposited - $b.left_map) | fabs) <= 1e-5 * $b.eroded' "$T/$name-vulkan/run.json" > /dev/null \
        || t_fail "eroded != deposited + left_map: $(jq -c .budget "$T/$name-vulkan/run.json")"
    jq -e '.budget.relative_error < 1e-5' "$T/$name-vulkan/run.json" > /dev/null \
        || t_fail "material budget: $(jq -c .budget "$T/$name-vulkan/run.json")"
    t_ok
done

name=whitebox_dem_f32_utm18n
t_case "vulkan: a second run is byte-identical, with the validation layer and no message"
mkdir -p "$T/again"
export ERODE_VK_VALIDATION=1
t_exit 0 "$ERODE" -q -r "$R" --backend vulkan --layers height,sediment,water -o "$T/again" "$DATA/$name.tif"
unset ERODE_VK_VALIDATION
[ -s "$T/stderr" ] && t_fail "stderr: $(head -c 300 "$T/stderr")"
for l in height sediment water; do
    cmp -s "$T/$name-vulkan/$name.$l.tif" "$T/again/$name.$l.tif" || t_fail "$l differs between two runs"
done
t_ok

t_case "vulkan: the mass-transfer variant within 2 % of cpu, walls kept, budget closed"
for b in cpu vulkan; do
    mkdir -p "$T/mt-$b"
    t_exit 0 "$ERODE" -q -r "$SRCDIR/configs/droplet-mass-transfer.json" --backend $b --json \
        --layers height,sediment,water -o "$T/mt-$b" "$DATA/$name.tif"
    cp "$T/stdout" "$T/mt-$b/run.json"
done
set -- $(compare "$DATA/$name.tif" "$T/mt-cpu" "$T/mt-vulkan" "$name")
echo "    eroded ratio $1, deposited ratio $2, flow corr $3, height change corr $4"
awk -v e="$1" -v d="$2" 'BEGIN { exit !(e > 0.98 && e < 1.02 && d > 0.98 && d < 1.02) }' \
    || t_fail "eroded ratio $1, deposited ratio $2"
$O same-values "$DATA/$name.tif" "$T/mt-vulkan/$name.height.tif" 1e9 > "$T/why" || t_fail "nodata: $(cat "$T/why")"
jq -e '.budget.relative_error < 1e-5' "$T/mt-vulkan/run.json" > /dev/null \
    || t_fail "material budget: $(jq -c .budget "$T/mt-vulkan/run.json")"
t_ok

t_case "snapshot schedule: -j1, -j2 and a second vulkan run (validation layer, no message) byte-identical, and the cpu's on a cpu device; budget closed with nothing withheld; mass-transfer refused"
for run in cpu-1 cpu-2 vulkan-1 vulkan-2; do
    mkdir -p "$T/snap-$run"
    [ "$run" = vulkan-2 ] && export ERODE_VK_VALIDATION=1
    t_exit 0 "$ERODE" -q -r "$R" -s droplet.schedule=snapshot --backend "${run%-*}" -j "${run#*-}" --json \
        --layers height,sediment,water -o "$T/snap-$run" "$DATA/$name.tif"
    unset ERODE_VK_VALIDATION
    [ -s "$T/stderr" ] && t_fail "$run stderr: $(head -c 300 "$T/stderr")"
    cp "$T/stdout" "$T/snap-$run/run.json"
done
pairs="cpu-1:cpu-2 vulkan-1:vulkan-2"
grep -q '(cpu,' "$T/devices" && pairs="$pairs cpu-1:vulkan-1"
for pair in $pairs; do
    for l in height sediment water; do
        cmp -s "$T/snap-${pair%:*}/$name.$l.tif" "$T/snap-${pair#*:}/$name.$l.tif" || t_fail "$l: ${pair%:*} and ${pair#*:} differ"
    done
done
jq -e '.budget as $b | ($b.withheld == 0) and ((($b.material_before - $b.material_after - $b.left_map) | fabs) <= 1e-6 * $b.material_before)' \
    "$T/snap-vulkan-1/run.json" > /dev/null || t_fail "budget: $(jq -c .budget "$T/snap-vulkan-1/run.json")"
t_exit 2 "$ERODE" -q -r "$SRCDIR/configs/droplet-mass-transfer.json" -s droplet.schedule=snapshot -o "$T" "$DATA/$name.tif"
grep -q 'droplet.schedule' "$T/stderr" || t_fail "no droplet.schedule in: $(cat "$T/stderr")"
t_ok

if grep -q '(cpu,' "$T/devices"; then
    t_case "snapshot schedule with hardness, mask and rain maps: lavapipe gives the cpu's bytes"
    M=$SRCDIR/configs/masks/vermont-protect.tif
    for b in cpu vulkan; do
        mkdir -p "$T/snapm-$b"
        t_exit 0 "$ERODE" -q -r "$R" -s droplet.schedule=snapshot -s hardness="$M" -s mask="$M" -s rain="$M" \
            --backend $b --layers height,sediment,water,wear -o "$T/snapm-$b" "$DATA/$name.tif"
    done
    for l in height sediment water wear; do
        cmp -s "$T/snapm-cpu/$name.$l.tif" "$T/snapm-vulkan/$name.$l.tif" || t_fail "$l differs"
    done
    t_ok
fi
