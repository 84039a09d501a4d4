#!/bin/sh
# The shipped river and SPH recipes erode a DEM they were not written for:
# configs/sph.json (springs at the peaks, run for 20 steps),
# configs/sph-lake.json (a lake up to a height quantile, as shipped) and
# configs/mei-river.json (springs at the peaks, 400 of its 4000 steps) on
# 256x256 crops (gdal_translate -srcwin) of two DEMs of different cell size
# and relief:
#   - tests/data/puget_sound_1k_u16.png at its real scale
#     (tests/data/ATTRIBUTION.md: 0..65535 is 0..4400 m, 160 m cells):
#     160 m square cells, 780 m of relief in the crop;
#   - $DEM/pysheds_dem_int16_wgs84.tif (EPSG:4326: 78 x 92 m cells, not
#     square; 150 m of relief), or, when the shared DEMs are absent (said
#     in a skip line), the bundled Vermont DEM whole (237x188, 90 m cells,
#     1020 m of relief), whose lake (94,000 particles, 40 % of the map
#     under up to 240 m of water) runs 5 of its 20 steps to keep the script
#     short.
# Each run changes the height of at least 0.5 % of the valid cells (SPH)
# or 0.1 % (Mei) against the same recipe run for no steps (which gives the
# input's heights exactly), every value of every layer is finite, and
# -j1 and -j2 write the same bytes.
. "$(dirname "$0")/lib.sh"

if ! { have gdal_translate && $PY -c 'import osgeo.gdal, numpy' 2> /dev/null; }; then
    t_case "the shipped recipes on any DEM"; t_skip "gdal_translate or python3-gdal missing"
    exit 0
fi

CONF=$SRCDIR/configs
LAYERS=height,water,sediment
gdal_translate -q -srcwin 384 384 256 256 "$DATA/puget_sound_1k_u16.png" "$T/puget.png"
maps="puget"
puget_file=$T/puget.png
puget_opts="-s terrain.vertical_scale=4400 -s terrain.cell_size=160"
if [ -f "$DEM/pysheds_dem_int16_wgs84.tif" ]; then
    gdal_translate -q -srcwin 50 50 256 256 "$DEM/pysheds_dem_int16_wgs84.tif" "$T/pysheds.tif"
    maps="$maps pysheds"
else
    t_case "pysheds_dem_int16_wgs84.tif (non-square cells)"
    t_skip "$DEM/pysheds_dem_int16_wgs84.tif absent: the Vermont DEM is the second map"
    cp "$DATA/whitebox_dem_f32_utm18n.tif" "$T/vermont.tif"
    maps="$maps vermont"
fi
pysheds_file=$T/pysheds.tif pysheds_opts="" pysheds_lake=""
vermont_file=$T/vermont.tif vermont_opts="" vermont_lake="-s sph.steps=5"
puget_lake=""

# stat REF OUT: the share of valid cells (those not nodata in REF) whose
# height differs, in %; exits 1 when a layer holds a value that is not
# finite on a valid cell.
cat > "$T/stat.py" << 'EOF'
import sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
def read(p):
    ds = gdal.Open(p)
    b = ds.GetRasterBand(1)
    return b.ReadAsArray().astype(np.float64), b.GetNoDataValue()
ref, nd = read(sys.argv[1] + ".height.tif")
valid = np.ones(ref.shape, bool) if nd is None else ref != nd
for l in ("height", "water", "sediment"):
    a, _ = read(sys.argv[2] + "." + l + ".tif")
    if not np.isfinite(a[valid]).all():
        sys.exit("%s: %d values not finite" % (l, (~np.isfinite(a[valid])).sum()))
h, _ = read(sys.argv[2] + ".height.tif")
print("%.4f" % (100.0 * (h[valid] != ref[valid]).sum() / valid.sum()))
EOF

for m in $maps; do
    eval "f=\$${m}_file opts=\$${m}_opts lake=\$${m}_lake"
    mkdir -p "$T/$m-ref"
    # shellcheck disable=SC2086
    "$ERODE" -q -f tif $opts -s mei.steps=0 --layers height -o "$T/$m-ref" "$f" 2> "$T/ref.err" ||
        { t_case "$m: the reference run"; t_fail "$(head -c 300 "$T/ref.err")"; continue; }
    for c in "sph -s sph.steps=20|0.5" "sph-lake $lake|0.5" "mei-river -s mei.steps=400|0.1"; do
        run=${c%|*} least=${c#*|} name=${run%% *}
        extra=${run#"$name"}
        t_case "configs/$name.json on $m: >= $least % of the cells changed, finite, -j1 = -j2"
        for j in 1 2; do
            rm -rf "$T/$m-$name-$j"; mkdir -p "$T/$m-$name-$j"
            # shellcheck disable=SC2086
            t_exit 0 "$ERODE" -q -j $j -f tif -r "$CONF/$name.json" $opts $extra --layers $LAYERS \
                -o "$T/$m-$name-$j" "$f"
        done
        grep -v "warning: river_sources\[0\]: found" "$T/stderr" > "$T/other" && t_fail "stderr: $(head -c 300 "$T/other")"
        for l in height water sediment; do
            cmp -s "$T/$m-$name-1/$m.$l.tif" "$T/$m-$name-2/$m.$l.tif" || t_fail "$l: -j1 and -j2 differ"
        done
        share=$($PY "$T/stat.py" "$T/$m-ref/$m" "$T/$m-$name-2/$m" 2>&1) || { t_fail "$share"; t_ok; continue; }
        echo "       ($share % of the cells changed)"
        awk -v s="$share" -v l="$least" 'BEGIN { exit !(s >= l) }' || t_fail "only $share % of the cells changed, not $least %"
        t_ok
    done
done
