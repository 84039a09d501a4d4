#!/bin/sh
# What erode writes: names, GeoTIFF structure, provenance, byte-identical
# reruns, PNG round trips, --layers, --format, --json.
. "$(dirname "$0")/lib.sh"
O=$PY' '$SRCDIR/tests/integration/gdal_oracle.py
W=$DATA/whitebox_dem_f32_utm18n.tif
P=$DATA/puget_sound_1k_u16.png

t_case "GeoTIFF outputs: float32, DEFLATE, floating-point predictor, tiled"
mkdir -p "$T/a"
t_exit 0 "$ERODE" -q -s mei.steps=3 -o "$T/a" "$W"
for l in height sediment water; do
    f=$T/a/whitebox_dem_f32_utm18n.$l.tif
    [ -f "$f" ] || { t_fail "missing $f"; continue; }
    set -- $($O info "$f")
    [ "$1 $2 $3" = "Float32 DEFLATE 3" ] || t_fail "$l: $*"
    [ "$4" -ne 237 ] || t_fail "$l: stripped, not tiled (block $4x$5)"
    $O same-georef "$W" "$f" > "$T/why" || t_fail "$l: $(cat "$T/why")"
done
t_ok

t_case "provenance: version and full recipe in the metadata"
d=$(gdalinfo -json "$T/a/whitebox_dem_f32_utm18n.height.tif" | jq -r '.metadata[""].TIFFTAG_IMAGEDESCRIPTION // empty')
echo "$d" | jq -e '.erode and .recipe.mei.steps == 3' > /dev/null || t_fail "no provenance: $d"
t_ok

t_case "the recipe in an output reproduces it bit for bit"
echo "$d" | jq '.recipe' > "$T/from-output.json"
mkdir -p "$T/b"
t_exit 0 "$ERODE" -q -r "$T/from-output.json" -o "$T/b" "$W"
for l in height sediment water; do
    cmp -s "$T/a/whitebox_dem_f32_utm18n.$l.tif" "$T/b/whitebox_dem_f32_utm18n.$l.tif" || t_fail "$l differs"
done
t_ok

t_case "two runs are byte-identical (no timestamps)"
mkdir -p "$T/c"
t_exit 0 "$ERODE" -q -s mei.steps=3 -o "$T/c" "$W"
cmp -s "$T/a/whitebox_dem_f32_utm18n.height.tif" "$T/c/whitebox_dem_f32_utm18n.height.tif" || t_fail "rerun differs"
t_ok

t_case "--layers writes exactly the layers asked for"
mkdir -p "$T/d"
t_exit 0 "$ERODE" -q -s mei.steps=2 --layers height,erosion,deposit -o "$T/d" "$W"
[ "$(ls "$T/d" | sort | tr '\n' ' ')" = "whitebox_dem_f32_utm18n.deposit.tif whitebox_dem_f32_utm18n.erosion.tif whitebox_dem_f32_utm18n.height.tif " ] \
    || t_fail "wrote: $(ls "$T/d")"
t_ok

t_case "--layers flow,wear: GDAL reads them on the input's grid; wear >= erosion >= 0, flow >= 0, both used"
mkdir -p "$T/fw"
t_exit 0 "$ERODE" -q --json -s mei.steps=40 --layers height,erosion,flow,wear -o "$T/fw" "$W"
jq -e '.outputs.flow and .outputs.wear' "$T/stdout" > /dev/null || t_fail "outputs: $(cat "$T/stdout")"
for l in flow wear; do
    $O same-georef "$W" "$T/fw/whitebox_dem_f32_utm18n.$l.tif" > "$T/why" || t_fail "$l: $(cat "$T/why")"
done
$PY - "$T/fw/whitebox_dem_f32_utm18n" > "$T/why" << 'EOF' || t_fail "$(cat "$T/why")"
import sys
from osgeo import gdal
import numpy as np
s = sys.argv[1]
ds = {l: gdal.Open(s + "." + l + ".tif") for l in ("flow", "wear", "erosion")}  # kept open
a = {l: d.GetRasterBand(1).ReadAsArray().astype(np.float64) for l, d in ds.items()}
ok = np.isfinite(a["flow"])
for l in ("flow", "wear"):
    if not (a[l][ok] >= 0).all() or not a[l][ok].max() > 0:
        print(l, "range", a[l][ok].min(), a[l][ok].max()); sys.exit(1)
# wear counts every dissolution, erosion only the net lowering (rounding: 1e-4 m)
if not (a["erosion"][ok] <= a["wear"][ok] + 1e-4).all():
    print("erosion above wear by", (a["erosion"] - a["wear"])[ok].max()); sys.exit(1)
EOF
t_exit 0 "$ERODE" -q -s mei.steps=40 --layers flow,wear -f r32 -o "$T/fw" "$W"
for l in flow wear; do
    [ "$(wc -c < "$T/fw/whitebox_dem_f32_utm18n.$l.r32")" -eq $((237 * 188 * 4)) ] || t_fail "$l.r32 size"
done
t_ok

t_case "PNG in, PNG out: heights within one 16-bit step, re-read as erode wrote them"
mkdir -p "$T/e" "$T/e2"
t_exit 0 "$ERODE" -q -s mei.steps=0 -o "$T/e" "$P"
t_exit 0 "$ERODE" -q -s mei.steps=0 -o "$T/e2" "$T/e/puget_sound_1k_u16.height.png"
t_exit 0 "$ERODE" -q -s mei.steps=0 -f tif -o "$T/e2" "$T/e/puget_sound_1k_u16.height.png"
t_exit 0 "$ERODE" -q -s mei.steps=0 -f tif -o "$T/e" "$P"
# the .tif from the original PNG holds raw/65535; from erode's PNG within a step
$O same-values "$T/e/puget_sound_1k_u16.height.tif" "$T/e2/puget_sound_1k_u16.height.tif" 1e-5 > "$T/why" \
    || t_fail "$(cat "$T/why")"
t_ok

t_case "--format png from a GeoTIFF"
mkdir -p "$T/f"
t_exit 0 "$ERODE" -q -s mei.steps=0 -f png -o "$T/f" "$W"
[ "$(gdalinfo -json "$T/f/whitebox_dem_f32_utm18n.height.png" | jq -r '.bands[0].type')" = UInt16 ] || t_fail "not UInt16"
t_ok

t_case "--json: one parseable line per input with the pinned fields"
mkdir -p "$T/g"
t_exit 0 "$ERODE" -q --json -s mei.steps=2 -o "$T/g" "$W" "$DATA/olinda_dem_f32_utm25s.tif"
[ "$(wc -l < "$T/stdout")" -eq 2 ] || t_fail "expected 2 lines: $(cat "$T/stdout")"
jq -e -s 'all(.[]; .input and .status == "ok" and .outputs.height and .model == ["mei"]
          and (.seconds | type) == "number" and (.budget.material_before | type) == "number")' "$T/stdout" > /dev/null \
    || t_fail "fields missing: $(head -c 400 "$T/stdout")"
t_ok

t_case "--json reports a failed input with its exit status"
printf 'junk' > "$T/junk.tif"
t_exit 2 "$ERODE" -q --json -o "$T/g" "$T/junk.tif"
jq -e '.status == "error" and .exit == 2 and (.error | length > 0)' "$T/stdout" > /dev/null || t_fail "$(cat "$T/stdout")"
t_ok
