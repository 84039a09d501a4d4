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
