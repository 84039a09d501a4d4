#!/bin/sh
# What GDAL and erode read back from each layer: a PNG's georeferencing
# (its .aux.xml and world file), every layer's nodata mask (exactly the
# input's nodata cells, in GeoTIFF and PNG alike) and its band description.
. "$(dirname "$0")/lib.sh"
L="$PY $SRCDIR/tests/integration/layer_oracle.py"
W=$DATA/whitebox_dem_f32_utm18n.tif
S=$DATA/olinda_dem_f32_utm25s.tif
P=$DATA/puget_sound_1k_u16.png
LUX=$DEM/luxembourg_elev_int16_wgs84.tif
LAYERS=height,sediment,water,erosion,deposit
RUN="-q -s mei.steps=5 --layers $LAYERS"

if ! $PY -c 'from osgeo import gdal; import numpy' 2> /dev/null; then
    t_case "PNG georeferencing, nodata and descriptions"; t_skip "no GDAL Python (python3-gdal) at $PY"; exit 0
fi

stem() { basename "$1" | sed 's/\.[^.]*$//'; }

# run_both DIR INPUT: the same run as GeoTIFF into DIR/tif and as PNG into
# DIR/png, --json lines in DIR/tif.json and DIR/png.json.
run_both() {
    mkdir -p "$1/tif" "$1/png"
    t_exit 0 "$ERODE" $RUN --json -f tif -o "$1/tif" "$2"
    cp "$T/stdout" "$1/tif.json"
    t_exit 0 "$ERODE" $RUN --json -f png -o "$1/png" "$2"
    cp "$T/stdout" "$1/png.json"
}

# png_georef DIR INPUT crs|nocrs: GDAL reads every PNG layer of run_both
# with the input's georeferencing, metres through scale/offset and the
# GeoTIFF's mask; the world file alone places it too.
png_georef() {
    s=$(stem "$2") pairs=""
    for l in $(echo $LAYERS | tr , ' '); do
        for f in "$1/png/$s.$l.png.aux.xml" "$1/png/$s.$l.pgw"; do
            [ -f "$f" ] || t_fail "missing $f"
        done
        pairs="$pairs $1/png/$s.$l.png $1/tif/$s.$l.tif"
    done
    $L png-georef "$2" "$3" $pairs > "$T/why" || t_fail "$(cat "$T/why")"
}

t_case "PNG layers of an EPSG-coded GeoTIFF: GDAL reads its CRS, geotransform, metres and mask"
run_both "$T/w" "$W"
png_georef "$T/w" "$W" crs
t_ok

t_case "PNG layers of a geographic DEM with nodata: the same, alpha as the mask"
if [ -f "$LUX" ]; then
    run_both "$T/lux" "$LUX"
    png_georef "$T/lux" "$LUX" crs
    t_ok
else
    t_skip "no $LUX"
fi

t_case "PNG layers of a user-defined CRS (no EPSG code): GDAL gets the geotransform and no CRS"
run_both "$T/s" "$S"
png_georef "$T/s" "$S" nocrs
t_ok

# second_pass DIR INPUT: erode on its own PNG height layer gets the cell
# size of the original and writes a GeoTIFF with its tags byte for byte.
second_pass() {
    s=$(stem "$2")
    mkdir -p "$1/back"
    t_exit 0 "$ERODE" -q --json -s mei.steps=0 -f tif -o "$1/back" "$1/png/$s.height.png"
    a=$(jq -c '[.cell_x, .cell_y]' "$1/tif.json") b=$(jq -c '[.cell_x, .cell_y]' "$T/stdout")
    [ "$a" = "$b" ] || t_fail "cell size $b from the PNG, $a from the GeoTIFF"
    $L same-tags "$1/tif/$s.height.tif" "$1/back/$s.height.tif" > "$T/why" || t_fail "$(cat "$T/why")"
}

t_case "erode on its own PNG output: the input's cell size and georeferencing, tag for tag"
second_pass "$T/w" "$W"
second_pass "$T/s" "$S"
[ -f "$LUX" ] && second_pass "$T/lux" "$LUX"
t_ok

t_case "after GDAL rewrote the .aux.xml (statistics), erode still reads the tags exactly"
mkdir -p "$T/rw/back"
s=$(stem "$W")
cp "$T/w/png/$s.height.png" "$T/w/png/$s.height.png.aux.xml" "$T/rw/"
$PY -c 'import sys; from osgeo import gdal; d = gdal.Open(sys.argv[1]); d.GetRasterBand(1).ComputeStatistics(False)' \
    "$T/rw/$s.height.png"
grep -q STATISTICS_MEAN "$T/rw/$s.height.png.aux.xml" || t_fail "GDAL did not rewrite the .aux.xml"
t_exit 0 "$ERODE" -q -s mei.steps=0 -f tif -o "$T/rw/back" "$T/rw/$s.height.png"
$L same-tags "$T/w/tif/$s.height.tif" "$T/rw/back/$s.height.tif" > "$T/why" || t_fail "$(cat "$T/why")"
t_ok

t_case "a compound CRS (horizontal and vertical EPSG codes) reaches GDAL whole"
mkdir -p "$T/cc"
gdal_translate -q -srcwin 0 0 40 30 -a_srs EPSG:26918+5703 "$W" "$T/cc/cc.tif"
run_both "$T/cc" "$T/cc/cc.tif"
png_georef "$T/cc" "$T/cc/cc.tif" crs
t_ok

t_case "a PNG without georeferencing writes its .aux.xml (the height mapping) and no world file"
mkdir -p "$T/p"
t_exit 0 "$ERODE" $RUN -o "$T/p" "$P"
[ "$(ls "$T/p" | grep -v '\.png$' | grep -vc '\.png\.aux\.xml$')" -eq 0 ] || t_fail "wrote $(ls "$T/p")"
[ "$(ls "$T/p" | grep -c '\.png\.aux\.xml$')" -eq "$(ls "$T/p" | grep -c '\.png$')" ] || t_fail "not one .aux.xml a PNG: $(ls "$T/p")"
! grep -q 'GeoTransform\|<SRS' "$T"/p/*.aux.xml || t_fail "an .aux.xml places the raster"
t_ok

t_case "a world file an earlier run left is removed with the new set"
mkdir -p "$T/st"
cp "$W" "$T/st/x.tif"
cp "$P" "$T/st/x.png"
t_exit 0 "$ERODE" $RUN -f png -o "$T/st" "$T/st/x.tif"
[ -f "$T/st/x.height.png.aux.xml" ] && [ -f "$T/st/x.height.pgw" ] || t_fail "no sidecars: $(ls "$T/st")"
t_exit 0 "$ERODE" $RUN -o "$T/st" "$T/st/x.png"
left=$(ls "$T/st" | grep -v '\.png$' | grep -v '\.png\.aux\.xml$' | grep -v '^x\.tif$')
[ -z "$left" ] || t_fail "left: $left"
t_ok

t_case "a sidecar's name is a write target: an input there is exit 2, nothing written"
mkdir -p "$T/tg/out"
cp "$W" "$T/tg/a.tif"
cp "$W" "$T/tg/out/a.water.png.aux.xml"
cp "$W" "$T/tg/out/a.sediment.pgw"
for side in a.water.png.aux.xml a.sediment.pgw; do
    t_exit 2 "$ERODE" $RUN -f png -o "$T/tg/out" "$T/tg/a.tif" "$T/tg/out/$side"
    t_one_error_line "would replace the input '$T/tg/out/$side'"
    cmp -s "$W" "$T/tg/out/$side" || t_fail "$side was changed"
done
[ "$(ls "$T/tg/out" | wc -l)" -eq 2 ] || t_fail "wrote $(ls "$T/tg/out")"
t_ok

# every_layer DIR STEM EXT: the layers of one run.
every_layer() {
    for l in $(echo $LAYERS | tr , ' '); do printf '%s ' "$1/$2.$l.$3"; done
}

t_case "Luxembourg: every layer masks exactly the input's nodata cells, directly and through PNG"
if [ -f "$LUX" ]; then
    s=$(stem "$LUX")
    $L same-mask "$LUX" $(every_layer "$T/lux/tif" "$s" tif) $(every_layer "$T/lux/png" "$s" png) > "$T/why" \
        || t_fail "$(cat "$T/why")"
    mkdir -p "$T/lux2/tif" "$T/lux2/png"
    t_exit 0 "$ERODE" $RUN -f tif -o "$T/lux2/tif" "$T/lux/png/$s.height.png"
    t_exit 0 "$ERODE" $RUN -f png -o "$T/lux2/png" "$T/lux/png/$s.height.png"
    $L same-mask "$LUX" $(every_layer "$T/lux2/tif" "$s" tif) $(every_layer "$T/lux2/png" "$s" png) \
        > "$T/why" || t_fail "$(cat "$T/why")"
    t_ok
else
    t_skip "no $LUX"
fi

t_case "nodata value 0 and valid cells of 0: every layer masks exactly the input's nodata cells"
mkdir -p "$T/z"
$PY - "$T/z" << 'EOF' || t_fail "cannot make the fixtures"
import sys
import numpy as np
from osgeo import gdal, osr
d = sys.argv[1]
h, w = 30, 40
y, x = np.mgrid[0:h, 0:w]
z = (5 + 0.4 * x + 0.3 * y + 2 * np.sin(x / 3.0)).round().astype(np.int16)
nodata = ((x < 4) & (y < 5)) | ((x + 2 * y) % 23 == 0)
srs = osr.SpatialReference()
srs.ImportFromEPSG(32618)
t = gdal.GetDriverByName("GTiff").Create(d + "/zero.tif", w, h, 1, gdal.GDT_Int16)
t.SetGeoTransform((500000, 30, 0, 4500000, 0, -30))
t.SetProjection(srs.ExportToWkt())
t.GetRasterBand(1).SetNoDataValue(0)
t.GetRasterBand(1).WriteArray(np.where(nodata, 0, z).astype(np.int16))
t = None
# A PNG whose sea (grey 0) is valid and whose alpha-0 cells are nodata.
m = gdal.GetDriverByName("MEM").Create("", w, h, 2, gdal.GDT_UInt16)
m.GetRasterBand(1).WriteArray(np.where(x > 25, 0, z * 1000).astype(np.uint16))
m.GetRasterBand(2).SetColorInterpretation(gdal.GCI_AlphaBand)
m.GetRasterBand(2).WriteArray(np.where(nodata, 0, 65535).astype(np.uint16))
gdal.GetDriverByName("PNG").CreateCopy(d + "/sea.png", m)
EOF
rm -f "$T/z/sea.png.aux.xml"
for in in zero.tif sea.png; do
    s=${in%.*}
    mkdir -p "$T/z/$s"
    t_exit 0 "$ERODE" $RUN -s mei.rain_rate=0.01 -f tif -o "$T/z/$s" "$T/z/$in"
    t_exit 0 "$ERODE" $RUN -s mei.rain_rate=0.01 -f png -o "$T/z/$s" "$T/z/$in"
    $L same-mask "$T/z/$in" $(every_layer "$T/z/$s" "$s" tif) $(every_layer "$T/z/$s" "$s" png) > "$T/why" \
        || t_fail "$in: $(cat "$T/why")"
done
t_ok

t_case "a PNG without alpha: no nodata on any layer"
mkdir -p "$T/na"
t_exit 0 "$ERODE" $RUN -f tif -o "$T/na" "$P"
$L no-nodata $(every_layer "$T/na" "$(stem "$P")" tif) > "$T/why" || t_fail "$(cat "$T/why")"
t_ok

t_case "band descriptions say what each layer is; height keeps the input's own"
s=$(stem "$W") want=""
for l in $(echo $LAYERS | tr , ' '); do
    d=$l
    [ "$l" = height ] && d=DEM
    want="$want $T/w/tif/$s.$l.tif=$d $T/w/png/$s.$l.png=$d"
done
s=$(stem "$S")
for l in $(echo $LAYERS | tr , ' '); do
    want="$want $T/s/tif/$s.$l.tif=$l"
done
$L description $want > "$T/why" || t_fail "$(cat "$T/why")"
t_ok

t_case "erode stitch: the stitched layers say what they are too"
mkdir -p "$T/ti/out"
"$SRCDIR/scripts/cut-tiles" "$W" 2 "$T/ti" > "$T/ti/list" || t_fail "cut-tiles failed"
while read -r tile; do
    t_exit 0 "$ERODE" -q -s mei.steps=3 --tile-set "$T/ti/list" --halo 8 --layers height,water -o "$T/ti/out" -- "$tile"
done < "$T/ti/list"
first=$(head -n 1 "$T/ti/list")
t_exit 0 "$ERODE" stitch -q --tile-set "$T/ti/list" --layers height,water -o "$T/ti/out" -- "$first"
s=$(stem "$first")
$L description "$T/ti/out/$s.height.tif=DEM" "$T/ti/out/$s.water.tif=water" > "$T/why" || t_fail "$(cat "$T/why")"
t_ok
