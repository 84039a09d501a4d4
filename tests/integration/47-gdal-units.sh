#!/bin/sh
# GDAL's conventions for what a file's values mean, with GDAL as the
# oracle: a GeoTIFF band's scale and offset applied on read and not left
# on the outputs; GDAL's PNG sidecars (.aux.xml, world files) read; an
# .aux.xml beside every PNG erode writes, giving GDAL its heights.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
O="$PY $SRCDIR/tests/integration/gdal_oracle.py"
RUN="-q -s mei.steps=20 --layers height,water,sediment"

if ! have gdal_translate || ! $PY -c 'from osgeo import gdal; import numpy' 2> /dev/null; then
    t_case "GDAL units"; t_skip "no GDAL (gdal-bin, python3-gdal at $PY)"; exit 0
fi

t_case "an Int16 DEM with GDAL scale 0.1 and offset 100 gives the outputs of the same DEM as float metres, byte for byte, with no scale left"
mkdir -p "$T/i16" "$T/f32" "$T/oi" "$T/of"
# decimetres above 100 m, nodata -32768 on a corner
gdal_translate -q -ot Int16 -scale 0 2000 0 20000 -a_scale 0.1 -a_offset 100 -a_nodata -32768 "$W" "$T/raw.tif"
$PY - "$T/raw.tif" "$T/i16/dem.tif" "$T/f32/dem.tif" << 'PYEOF' || t_fail "cannot make the two DEMs"
import sys
from osgeo import gdal
import numpy as np
gdal.UseExceptions()
src = gdal.Open(sys.argv[1])
a = src.GetRasterBand(1).ReadAsArray()
a[:8, :8] = -32768
ds = gdal.GetDriverByName("GTiff").CreateCopy(sys.argv[2], src)
ds.GetRasterBand(1).WriteArray(a)
ds = None
# the metres GDAL gives: raw * scale + offset in double, rounded to float
m = (a.astype(np.float64) * 0.1 + 100.0).astype(np.float32)
m[a == -32768] = -32768
ds = gdal.GetDriverByName("GTiff").Create(sys.argv[3], src.RasterXSize, src.RasterYSize, 1, gdal.GDT_Float32)
ds.SetGeoTransform(src.GetGeoTransform())
ds.SetProjection(src.GetProjection())
b = ds.GetRasterBand(1)
b.WriteArray(m)
b.SetNoDataValue(-32768)
b.SetDescription(src.GetRasterBand(1).GetDescription())
ds = None
PYEOF
gdalinfo "$T/i16/dem.tif" | grep -q 'Offset: 100, *Scale:0.1' || t_fail "the input has no scale: $(gdalinfo "$T/i16/dem.tif" | grep -i scale)"
(cd "$T/i16" && "$ERODE" $RUN -o "$T/oi" dem.tif) || t_fail "the Int16 run failed"
(cd "$T/f32" && "$ERODE" $RUN -o "$T/of" dem.tif) || t_fail "the float run failed"
for l in height water sediment; do
    cmp -s "$T/oi/dem.$l.tif" "$T/of/dem.$l.tif" || t_fail "$l differs from the float metres' run"
    ! gdalinfo "$T/oi/dem.$l.tif" | grep -q 'Offset:\|Scale:' || t_fail "$l keeps a scale: $(gdalinfo "$T/oi/dem.$l.tif" | grep 'Scale:')"
done
# what GDAL reads, unscaled, is what erode starts from: untouched cells
# (a run of no steps) equal gdal_translate -unscale's floats
mkdir -p "$T/o0"
(cd "$T/i16" && "$ERODE" -q -s mei.steps=0 --layers height -o "$T/o0" dem.tif) || t_fail "the run of 0 steps failed"
gdal_translate -q -unscale -ot Float32 "$T/i16/dem.tif" "$T/unscaled.tif"
$O same-values "$T/unscaled.tif" "$T/o0/dem.height.tif" > "$T/why" || t_fail "$(cat "$T/why")"
t_ok

# pam_heights PNG TIF TOL: GDAL's reading of PNG (samples * its .aux.xml's
# scale + offset, on its geotransform) equals TIF within TOL.
pam_heights() {
    $PY - "$1" "$2" "$3" << 'PYEOF'
import sys
from osgeo import gdal
import numpy as np
gdal.UseExceptions()
p, t = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
b = p.GetRasterBand(1)
if b.GetScale() is None or b.GetOffset() is None:
    sys.exit("no scale or offset on " + sys.argv[1])
got = b.ReadAsArray().astype(np.float64) * b.GetScale() + b.GetOffset()
want = t.GetRasterBand(1).ReadAsArray().astype(np.float64)
err = np.abs(got - want).max()
if err > float(sys.argv[3]):
    sys.exit("GDAL's heights of %s differ by %g, more than %s" % (sys.argv[1], err, sys.argv[3]))
if p.GetGeoTransform() != t.GetGeoTransform():
    sys.exit("geotransform %s, not %s" % (p.GetGeoTransform(), t.GetGeoTransform()))
PYEOF
}

t_case "a PNG GDAL georeferenced and scaled (.aux.xml SRS, GeoTransform, Scale, Offset) runs as GDAL reads it"
mkdir -p "$T/g/o" "$T/g/ref"
gdal_translate -q -ot UInt16 -of PNG -a_nodata none -scale 200 1300 0 11000 -a_scale 0.1 -a_offset 200 "$W" "$T/g/dem.png" 2> /dev/null
grep -q '<SRS' "$T/g/dem.png.aux.xml" && grep -q '<Scale>' "$T/g/dem.png.aux.xml" || t_fail "GDAL wrote no SRS or scale"
gdal_translate -q -unscale -ot Float32 "$T/g/dem.png" "$T/g/ref/dem.tif"
t_exit 0 "$ERODE" $RUN -f tif -o "$T/g/o" "$T/g/dem.png"
t_exit 0 "$ERODE" $RUN -o "$T/g/ref" "$T/g/ref/dem.tif"
for l in height water sediment; do
    $O same-values "$T/g/o/dem.$l.tif" "$T/g/ref/dem.$l.tif" > "$T/why" || t_fail "$l: $(cat "$T/why")"
    $O same-georef "$T/g/o/dem.$l.tif" "$T/g/ref/dem.$l.tif" > "$T/why" || t_fail "$l: $(cat "$T/why")"
done
t_ok

t_case "a world file places the PNG, the .aux.xml's SRS gives its unit; a world file alone is refused (exit 2, one line) unless terrain.cell_size is set"
mkdir -p "$T/wf/o" "$T/wf/o2"
gdal_translate -q -ot UInt16 -of PNG -co WORLDFILE=YES -a_nodata none -scale 200 1300 0 11000 -a_scale 0.1 -a_offset 200 \
    "$W" "$T/wf/dem.png" 2> /dev/null
[ -f "$T/wf/dem.wld" ] && ! grep -q GeoTransform "$T/wf/dem.png.aux.xml" || t_fail "GDAL wrote no world file"
t_exit 0 "$ERODE" $RUN -f tif -o "$T/wf/o" "$T/wf/dem.png"
$O same-values "$T/wf/o/dem.height.tif" "$T/g/ref/dem.height.tif" > "$T/why" || t_fail "$(cat "$T/why")"
$O same-georef "$T/wf/o/dem.height.tif" "$T/g/ref/dem.height.tif" > "$T/why" || t_fail "$(cat "$T/why")"
grep -v '<SRS' "$T/wf/dem.png.aux.xml" > "$T/wf/aux" && mv "$T/wf/aux" "$T/wf/dem.png.aux.xml"
t_exit 2 "$ERODE" $RUN -f tif -o "$T/wf/o2" "$T/wf/dem.png"
t_one_error_line "^erode: $T/wf/dem.png: georeferencing gives no usable cell size: no CRS, so no linear unit: a world file or geotransform alone does not say whether it counts metres, feet or degrees (set terrain.cell_size to run it anyway)$"
t_empty_dir "$T/wf/o2"
t_exit 0 "$ERODE" $RUN -s terrain.cell_size=90 -f tif -o "$T/wf/o2" "$T/wf/dem.png"
$O same-values "$T/wf/o2/dem.height.tif" "$T/g/ref/dem.height.tif" > "$T/why" || t_fail "$(cat "$T/why")"
t_ok

t_case "every PNG layer has an .aux.xml: gdalinfo shows its scale, offset and geotransform; GDAL's heights are erode's within half a 16-bit step"
mkdir -p "$T/pw/png" "$T/pw/tif" "$T/pw/bare"
t_exit 0 "$ERODE" $RUN -f png -o "$T/pw/png" "$W"
t_exit 0 "$ERODE" $RUN -f tif -o "$T/pw/tif" "$W"
s=whitebox_dem_f32_utm18n
for l in height water sediment; do
    gdalinfo "$T/pw/png/$s.$l.png" > "$T/info"
    grep -q 'Offset: .*Scale:' "$T/info" && grep -q '^Origin = ' "$T/info" && grep -q '^Pixel Size = (90' "$T/info" \
        || t_fail "$l: gdalinfo shows no scale or geotransform"
    # half a step of the layer's range, (max - min) / 131070, plus float rounding
    tol=$($O stats "$T/pw/tif/$s.$l.tif" | awk '{ d = $2 - $1; print d / 131070 + 1e-6 * ($2 > -$1 ? $2 : -$1) + 1e-12 }')
    pam_heights "$T/pw/png/$s.$l.png" "$T/pw/tif/$s.$l.tif" "$tol" > "$T/why" 2>&1 || t_fail "$l: $(cat "$T/why")"
done
# an input without georeferencing: the .aux.xml still gives GDAL the heights
$PY -c "
from osgeo import gdal
import sys
gdal.UseExceptions()
s = gdal.Open(sys.argv[1])
d = gdal.GetDriverByName('GTiff').Create(sys.argv[2], s.RasterXSize, s.RasterYSize, 1, gdal.GDT_Float32)
d.GetRasterBand(1).WriteArray(s.GetRasterBand(1).ReadAsArray())
d = None
" "$W" "$T/pw/bare.tif" || t_fail "cannot make the bare TIFF"
t_exit 0 "$ERODE" $RUN --layers height -f png -o "$T/pw/bare" "$T/pw/bare.tif"
t_exit 0 "$ERODE" $RUN --layers height -f tif -o "$T/pw/bare" "$T/pw/bare.tif"
[ -f "$T/pw/bare/bare.height.png.aux.xml" ] && [ ! -f "$T/pw/bare/bare.height.pgw" ] || t_fail "sidecars: $(ls "$T/pw/bare")"
tol=$($O stats "$T/pw/bare/bare.height.tif" | awk '{ print ($2 - $1) / 131070 + 1e-6 * $2 }')
$PY - "$T/pw/bare/bare.height.png" "$T/pw/bare/bare.height.tif" "$tol" > "$T/why" 2>&1 << 'PYEOF' || t_fail "bare: $(cat "$T/why")"
import sys
from osgeo import gdal
import numpy as np
gdal.UseExceptions()
p, t = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
b = p.GetRasterBand(1)
got = b.ReadAsArray().astype(np.float64) * b.GetScale() + b.GetOffset()
want = t.GetRasterBand(1).ReadAsArray().astype(np.float64)
if np.abs(got - want).max() > float(sys.argv[3]):
    sys.exit("differ by %g" % np.abs(got - want).max())
PYEOF
t_ok

t_case "an input's world file is never a write target: exit 2, one line, nothing written"
mkdir -p "$T/wt/out"
cp "$W" "$T/wt/a.tif"
# a PNG named a.height.pg has GDAL's world file a.height.pgw: the name of a.tif's height layer's world file
cp "$T/wf/dem.png" "$T/wt/out/a.height.pg"
printf '30\n0\n0\n-30\n0\n0\n' > "$T/wt/out/a.height.pgw"
t_exit 2 "$ERODE" $RUN -s terrain.cell_size=30 -f png -o "$T/wt/out" "$T/wt/a.tif" "$T/wt/out/a.height.pg"
t_one_error_line "would replace the input's world file '$T/wt/out/a.height.pgw'"
[ "$(ls "$T/wt/out" | wc -l)" -eq 2 ] || t_fail "wrote $(ls "$T/wt/out")"
t_ok
