#!/bin/sh
# Render outputs for engines and compositors: EXR creation options do what
# they say (--co COMPRESS writes that codec, read back bit for bit by
# OpenImageIO; GeoTIFF's and the lossy codecs refused, naming EXR's),
# --co NODATA_FILL in EXR and RAW, and the RAW sidecar's metres and
# Unity/Unreal verdicts with the one warning line for a size neither takes.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
S=whitebox_dem_f32_utm18n
ALL=height,sediment,water,erosion,deposit,flow,wear

have_numpy() { $PY -c 'import numpy; from osgeo import gdal' 2> /dev/null; }

# same FILL A B [A B ...]: each raster A (read by GDAL) holds B's float32
# bits in every valid cell; B's nodata cells are NaN in A (FILL "nan") or
# FILL.  Prints the cells checked; exits 1 naming what differs.
same() {
    $PY - "$@" <<'EOF'
import sys
import numpy as np
from osgeo import gdal
fill, args, failed = sys.argv[1], sys.argv[2:], 0
for a_path, b_path in zip(args[0::2], args[1::2]):
    a = gdal.Open(a_path).ReadAsArray().astype(np.float32)
    b_ds = gdal.Open(b_path)
    band = b_ds.GetRasterBand(1)
    b = band.ReadAsArray().astype(np.float32)
    nd = band.GetNoDataValue()
    valid = ~np.isnan(b) if nd is None else (b != np.float32(nd)) & ~np.isnan(b)
    hole = a[~valid]
    differ = valid & (a.view(np.uint32) != b.view(np.uint32))
    if differ.any():
        why = "%d valid cells differ" % differ.sum()
    elif not (np.isnan(hole) if fill == "nan" else hole == np.float32(fill)).all():
        why = "nodata cells are not %s" % fill
    else:
        print("%s: valid %d nodata %d" % (a_path, valid.sum(), (~valid).sum()))
        continue
    print("%s: %s" % (a_path, why))
    failed = 1
sys.exit(failed)
EOF
}

# side FILE JQ-EXPR: the sidecar FILE.json satisfies the jq expression.
side() { jq -e "$2" "$1.json" > /dev/null || t_fail "$(basename "$1").json: not $2: $(jq -c 'del(.provenance)' "$1.json")"; }

mkdir -p "$T/tif"
"$ERODE" -q -s mei.steps=6 --layers $ALL -o "$T/tif" "$W" || t_fail "the GeoTIFF run failed"

t_case "-f exr --co COMPRESS=NONE|RLE|ZIPS|ZIP|PIZ: the file says so, every layer bit for bit (OpenImageIO)"
if ! have oiiotool || ! have_numpy; then
    t_skip "needs oiiotool (openimageio-tools) and numpy with GDAL's Python"
else
    for c in NONE RLE ZIPS ZIP PIZ; do
        mkdir -p "$T/$c"
        # the codec before -f: it is read in EXR's table whatever the order
        t_exit 0 "$ERODE" -q -s mei.steps=6 --layers $ALL --co compress=$c -f exr -o "$T/$c" "$W"
        lc=$(echo $c | tr 'A-Z' 'a-z')
        [ "$(iinfo -v "$T/$c"/*.exr | grep -c "compression: \"$lc\"")" -eq 7 ] ||
            t_fail "$c: $(iinfo -v "$T/$c"/*.exr | grep compression | sort | uniq -c)"
        reads="" pairs=""
        for l in $(echo $ALL | tr , ' '); do
            reads="$reads $T/$c/$S.$l.exr -o $T/$c/$l.tif"
            pairs="$pairs $T/$c/$l.tif $T/tif/$S.$l.tif"
        done
        # shellcheck disable=SC2086
        oiiotool -d float $reads || t_fail "$c: oiiotool cannot read them"
        # shellcheck disable=SC2086
        same nan $pairs > "$T/why" 2>&1 || t_fail "$c: $(grep -v ': valid' "$T/why")"
    done
    t_ok
fi

t_case "-f exr --co PIXEL_TYPE=HALF --co COMPRESS=PXR24: PXR24 on halves, each the float value's half"
mkdir -p "$T/pxr"
t_exit 0 "$ERODE" -q -s mei.steps=6 --layers height,sediment -f exr --co PIXEL_TYPE=HALF --co COMPRESS=PXR24 -o "$T/pxr" "$W"
if ! have oiiotool || ! have_numpy; then
    t_skip "needs oiiotool (openimageio-tools) and numpy with GDAL's Python"
else
    [ "$(iinfo -v "$T/pxr"/*.exr | grep -c 'compression: "pxr24"')" -eq 2 ] || t_fail "not PXR24"
    for l in height sediment; do
        oiiotool -d float "$T/pxr/$S.$l.exr" -o "$T/pxr/$l.tif" || t_fail "oiiotool cannot read $l"
        $PY - "$T/pxr/$l.tif" "$T/tif/$S.$l.tif" <<'EOF' || t_fail "$l: not the halves of the float values"
import sys
import numpy as np
from osgeo import gdal
a = gdal.Open(sys.argv[1]).ReadAsArray().astype(np.float32)
b = gdal.Open(sys.argv[2]).ReadAsArray().astype(np.float32)
sys.exit(0 if (a.view(np.uint32) == b.astype(np.float16).astype(np.float32).view(np.uint32)).all() else 1)
EOF
    done
    t_ok
fi

t_case "codecs that are not EXR's or not lossless: exit 2, one line naming EXR's codecs, nothing written"
while IFS="|" read -r arg expect; do
    rm -rf "$T/bad"; mkdir -p "$T/bad"
    # shellcheck disable=SC2086
    t_exit 2 "$ERODE" -q $arg -o "$T/bad" "$W"
    t_one_error_line "$expect"
    t_empty_dir "$T/bad"
done <<LIST
-f exr --co COMPRESS=NONEX|'COMPRESS=NONEX': not an EXR codec: expected COMPRESS=ZIP, NONE, RLE, ZIPS, PIZ
-f exr --co COMPRESS=LZW|'COMPRESS=LZW': not an EXR codec: expected COMPRESS=ZIP, NONE, RLE, ZIPS, PIZ
-f exr --co COMPRESS=ZSTD|'COMPRESS=ZSTD': not an EXR codec
-f exr --co COMPRESS=DEFLATE|'COMPRESS=DEFLATE': not an EXR codec
-f exr --co COMPRESS=DWAA|'COMPRESS=DWAA': B44 and DWA are lossy
-f exr --co COMPRESS=B44 --co PIXEL_TYPE=HALF|'COMPRESS=B44': B44 and DWA are lossy
-f exr --co COMPRESS=PXR24|'COMPRESS=PXR24': PXR24 rounds float32 to 24 bits
-f r16 --co COMPRESS=ZIP|'COMPRESS=ZIP': RAW files are not compressed
--co COMPRESS=PIZ|'COMPRESS=PIZ': expected COMPRESS=DEFLATE, ZSTD, LZW or NONE
-f exr --co NODATA_FILL=nan|'NODATA_FILL=nan': expected NODATA_FILL=a finite number
-f exr --co NODATA_FILL=1e39|'NODATA_FILL=1e39': expected NODATA_FILL=a finite number
--co NODATA_FILL=0|--co NODATA_FILL: needs -f exr, r16 or r32
-f exr --co PIXEL_TYPE=HALF --co NODATA_FILL=70000|--co NODATA_FILL: 70000 is beyond half's range
LIST
t_ok

# An input with nodata: the whitebox DEM with a 20 x 10 hole declared
# nodata (GDAL writes it, so nothing of erode's reader is assumed).
mkdir -p "$T/nd" "$T/ndtif"
have_numpy && $PY - "$W" "$T/nd/hole.tif" <<'EOF'
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1])
a = src.ReadAsArray().astype(np.float32)
a[50:60, 100:120] = -32768
d = gdal.GetDriverByName("GTiff").CreateCopy(sys.argv[2], src)
d.GetRasterBand(1).WriteArray(a)
d.GetRasterBand(1).SetNoDataValue(-32768)
d = None
EOF

t_case "--co NODATA_FILL=-5: EXR (float and half) and r32 nodata cells hold -5, the others their values"
if ! have oiiotool || ! have_numpy; then
    t_skip "needs oiiotool (openimageio-tools) and numpy with GDAL's Python"
else
    t_exit 0 "$ERODE" -q -s mei.steps=4 --layers height,sediment -o "$T/ndtif" "$T/nd/hole.tif"
    for f in exr r32; do
        mkdir -p "$T/nd/$f" "$T/nd/$f-nan"
        t_exit 0 "$ERODE" -q -s mei.steps=4 --layers height,sediment -f $f --co NODATA_FILL=-5 -o "$T/nd/$f" "$T/nd/hole.tif"
        t_exit 0 "$ERODE" -q -s mei.steps=4 --layers height,sediment -f $f -o "$T/nd/$f-nan" "$T/nd/hole.tif"
    done
    mkdir -p "$T/nd/half"
    t_exit 0 "$ERODE" -q -s mei.steps=4 --layers height -f exr --co PIXEL_TYPE=HALF --co NODATA_FILL=-5 -o "$T/nd/half" "$T/nd/hole.tif"
    for l in height sediment; do
        oiiotool -d float "$T/nd/exr/hole.$l.exr" -o "$T/nd/exr/$l.tif" || t_fail "oiiotool cannot read $l"
        same -5 "$T/nd/exr/$l.tif" "$T/ndtif/hole.$l.tif" > "$T/why" 2>&1 || t_fail "exr $l: $(cat "$T/why")"
        grep -q "nodata 200" "$T/why" || t_fail "exr $l: not the 200 nodata cells: $(cat "$T/why")"
        oiiotool -d float "$T/nd/exr-nan/hole.$l.exr" -o "$T/nd/exr-nan/$l.tif"
        same nan "$T/nd/exr-nan/$l.tif" "$T/ndtif/hole.$l.tif" > "$T/why" 2>&1 || t_fail "exr without fill $l: $(cat "$T/why")"
        # r32 read as the sidecar describes it
        side "$T/nd/r32/hole.$l.r32" '.nodata_fill == -5 and .filled_cells == 200 and .nodata_cells == 0'
        side "$T/nd/r32-nan/hole.$l.r32" '(has("nodata_fill") | not) and .nodata_cells == 200'
        $PY - "$T/nd/r32/hole.$l.r32" "$T/ndtif/hole.$l.tif" <<'EOF' > "$T/why" 2>&1 || t_fail "r32 $l: $(cat "$T/why")"
import sys
import numpy as np
from osgeo import gdal
b = gdal.Open(sys.argv[2]).ReadAsArray().astype(np.float32)
a = np.fromfile(sys.argv[1], "<f4").reshape(b.shape)
hole = b == np.float32(-32768)
sys.exit(0 if (a[hole] == -5).all() and (a[~hole].view(np.uint32) == b[~hole].view(np.uint32)).all() else 1)
EOF
    done
    oiiotool -d float "$T/nd/half/hole.height.exr" -o "$T/nd/half/h.tif"
    $PY - "$T/nd/half/h.tif" <<'EOF' || t_fail "half: the hole does not read -5"
import sys
import numpy as np
from osgeo import gdal
a = gdal.Open(sys.argv[1]).ReadAsArray()
sys.exit(0 if (a[50:60, 100:120] == -5).all() and not np.isnan(a).any() else 1)
EOF
    t_ok
fi

t_case "-f r16 --co NODATA_FILL=0: no code 0 left, the hole decodes to 0 m, the range spans it"
if ! have_numpy; then
    t_skip "needs numpy with GDAL's Python"
else
    mkdir -p "$T/nd/r16"
    t_exit 0 "$ERODE" -q -s mei.steps=4 --layers height -f r16 --co NODATA_FILL=0 -o "$T/nd/r16" "$T/nd/hole.tif"
    f=$T/nd/r16/hole.height.r16
    side "$f" '.min == 0 and .filled_cells == 200 and .nodata_cells == 0 and .height_range_m[0] == 0'
    $PY - "$f" <<'EOF' || t_fail "r16: codes"
import json, sys
import numpy as np
s = json.load(open(sys.argv[1] + ".json"))
a = np.fromfile(sys.argv[1], "<u2").reshape(s["height"], s["width"])
sys.exit(0 if (a != 0).all() and (a[50:60, 100:120] == 1).all() else 1)
EOF
    t_ok
fi

t_case "RAW sidecar: cell size, extent and heights in metres; Unity's and Unreal's sizes in metres"
mkdir -p "$T/m" "$T/m/ft"
t_exit 0 "$ERODE" -q -s mei.steps=2 --layers height,sediment,flow -f r16 -o "$T/m" "$W"
f=$T/m/$S.height.r16
side "$f" '.cell_size_m == [90, 90] and .extent_m == [21330, 16920]
    and (.height_range_m[0] - .min | fabs) < 1e-9 and (.height_range_m[1] - .max | fabs) < 1e-9'
side "$f" '(.unreal.x_scale == 9000) and (.unreal.y_scale == 9000)
    and (.unreal.z_scale - 12800 * .scale | fabs) <= 1e-8 * .unreal.z_scale'
# Unreal's Z scale 100 spans 512 m over the 65536 codes: 65536 scale m here
side "$f" '((.unreal.z_scale / 100 * 512) - 65536 * .scale | fabs) <= 1e-6 * .unreal.z_scale'
# stream power's flow layer is an area: no metres for it
t_exit 0 "$ERODE" -q -s model=stream_power -s stream_power.steps=2 --layers flow -f r32 -o "$T/m" "$W"
side "$T/m/$S.flow.r32" '.height_range_m == null and .cell_size_m == [90, 90]'
# heights in feet (vertical_scale 0.3048): the sidecar's metres
t_exit 0 "$ERODE" -q -s mei.steps=2 -s terrain.vertical_scale=0.3048 --layers height -f r16 -o "$T/m/ft" "$W"
side "$T/m/ft/$S.height.r16" '(.height_range_m[0] - .min * 0.3048 | fabs) < 1e-6
    and (.unreal.z_scale - 12800 * .scale * 0.3048 | fabs) <= 1e-8 * .unreal.z_scale'
t_ok

t_case "RAW verdicts: 65^2 Unity's, 127^2 Unreal's, 237 x 188 neither, with one warning line naming 257^2 and 253 x 127"
if ! have gdal_translate; then
    t_skip "needs gdal_translate"
else
    mkdir -p "$T/v"
    gdal_translate -q -srcwin 0 0 65 65 "$W" "$T/v/u65.tif"
    gdal_translate -q -srcwin 0 0 127 127 "$W" "$T/v/e127.tif"
    for s in u65 e127; do
        t_exit 0 "$ERODE" -q -s mei.steps=1 --layers height -f r16 -o "$T/v" "$T/v/$s.tif"
        [ -s "$T/stderr" ] && t_fail "$s: a warning for a size an engine takes: $(cat "$T/stderr")"
    done
    side "$T/v/u65.height.r16" '.unity.importable and (.unreal.importable | not) and .unreal.nearest_size == [127, 127]
        and .unity.terrain_width == 5760 and .unity.terrain_length == 5760'
    side "$T/v/e127.height.r16" '(.unity.importable | not) and .unreal.importable and .unreal.x_scale == 9000'
    t_exit 0 "$ERODE" -q -s mei.steps=1 --layers height,sediment -f r16 -o "$T/v" "$W"
    t_one_error_line "warning: a 237 x 188 heightmap suits neither Unity nor Unreal; the nearest sizes they take are 257 x 257 (Unity) and 253 x 127 (Unreal)"
    side "$T/v/$S.height.r16" '(.unity.importable | not) and (.unreal.importable | not)
        and .unreal.nearest_size == [253, 127] and (.unreal.why | test("237 x 188"))'
    t_ok
fi
