#!/bin/sh
# Tile sets for real: a georeferenced DEM cut into 4 and 16 tiles, eroded
# through scripts/erode-tiles (GNU parallel) and stitched; the stitched
# tiles keep their georeferencing, cover the map, and meet with a seam far
# smaller than naive tile-by-tile erosion (scripts/seam-figures).  Also:
# a halo that covers the whole world gives the whole-map result exactly,
# and mismatched tile sets are refused in one line.
. "$(dirname "$0")/lib.sh"
SEAM="$PY $SRCDIR/scripts/seam-figures"
CUT=$SRCDIR/scripts/cut-tiles
TILES=$SRCDIR/scripts/erode-tiles

if ! have gdal_translate || ! $PY -c 'from osgeo import gdal; import numpy' 2> /dev/null; then
    t_case "tile sets"; t_skip "needs gdal-bin and python3-gdal (scripts/deps --test)"; exit 0
fi
if ! have parallel; then
    t_case "tile sets"; t_skip "needs GNU parallel (scripts/deps --test)"; exit 0
fi

# The map: the Puget Sound DEM of tests/data (0.1 m a unit, 160 m cells),
# its central 512^2 cells as a UTM 10N GeoTIFF in metres.
dem=$T/puget.tif
gdal_translate -q -ot Float32 -scale 0 10000 0 1000 -srcwin 256 256 512 512 -a_srs EPSG:32610 \
    -a_ullr 500000 5400000 581920 5318080 "$DATA/puget_sound_1k_u16.png" "$dem"

# Shortened recipes (the suite must stay quick, ASan too).  Halos: the
# droplet reach (lifetime 30 + radius 3) for droplets; 32 cells for Mei.
MEI="-s mei.steps=200"
DROP="-s model=droplet -s droplet.height_unit=2000 -s droplet.per_cell=0.1"

"$ERODE" -q $MEI --layers height -o "$T" "$dem" && mv "$T/puget.height.tif" "$T/whole-mei.tif"
"$ERODE" -q $DROP --layers height -o "$T" "$dem" && mv "$T/puget.height.tif" "$T/whole-droplet.tif"

# Georeferencing of an output tile equals its input tile's (GDAL reads both).
same_georef() {
    $PY - "$1" "$2" << 'EOF'
import sys
from osgeo import gdal
a, b = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
ok = (a.RasterXSize, a.RasterYSize) == (b.RasterXSize, b.RasterYSize)
ok = ok and all(abs(x - y) < 1e-6 for x, y in zip(a.GetGeoTransform(), b.GetGeoTransform()))
ok = ok and a.GetSpatialRef().IsSame(b.GetSpatialRef())
sys.exit(0 if ok else 1)
EOF
}

field() { jq -r ".$2" "$1"; }

for n in 2 4; do
    tiles=$((n * n))
    "$CUT" "$dem" $n "$T/tiles$n" > "$T/tiles$n.list"
    for model in mei droplet; do
        if [ $model = mei ]; then recipe=$MEI halo=32; else recipe=$DROP halo=40; fi
        out=$T/out-$model-$n naive=$T/naive-$model-$n
        mkdir -p "$out" "$naive"
        t_case "$model, $tiles tiles: erode-tiles (GNU parallel -j 2) + stitch, georeferenced, covering the map"
        # shellcheck disable=SC2086
        t_exit 0 "$TILES" --erode "$ERODE" -j 2 --threads 1 --halo $halo --layers height -o "$out" \
            "$T/tiles$n.list" -- $recipe
        while read -r t; do
            b=$(basename "$t" .tif)
            [ -f "$out/$b.height.tif" ] || t_fail "no $b.height.tif"
            [ -f "$out/$b.height.halo.tif" ] && t_fail "halo output $b.height.halo.tif left behind"
            same_georef "$t" "$out/$b.height.tif" || t_fail "$b.height.tif: georeferencing differs from $t"
        done < "$T/tiles$n.list"
        $SEAM "$T/whole-$model.tif" "$out"/*.height.tif > "$T/seam.json" || t_fail "seam-figures refused the stitched tiles"
        t_ok

        t_case "$model, $tiles tiles: seam far below naive tile-by-tile erosion"
        while read -r t; do
            # shellcheck disable=SC2086
            "$ERODE" -q $recipe --layers height -o "$naive" "$t" || t_fail "naive run of $t failed"
        done < "$T/tiles$n.list"
        $SEAM "$T/whole-$model.tif" "$naive"/*.height.tif > "$T/naive.json" || t_fail "seam-figures refused the naive tiles"
        s=$(field "$T/seam.json" seam) i=$(field "$T/seam.json" interior) v=$(field "$T/naive.json" seam)
        echo "    $model $tiles tiles: seam $s m (interior $i m), naive $v m"
        # Mei is deterministic and smooth: what differs comes only from the
        # halo edges, and the cross-fade leaves next to no step.  Droplets
        # are chaotic (a path follows every small height difference), so a
        # tiled droplet result is another realisation in its detail (the
        # interior figure shows how much); there the seam must be no larger
        # than that and well below the naive one.
        if [ $model = mei ]; then
            awk -v s="$s" -v v="$v" 'BEGIN { exit !(v >= 5 * s) }' ||
                t_fail "seam $s m is not 5x below naive $v m"
        else
            awk -v s="$s" -v v="$v" 'BEGIN { exit !(v >= 2 * s) }' ||
                t_fail "seam $s m is not 2x below naive $v m"
            awk -v s="$s" -v i="$i" 'BEGIN { exit !(s <= 1.25 * i) }' ||
                t_fail "seam $s m stands out from the interior $i m"
        fi
        t_ok
    done
done

t_case "a halo as large as the world gives the whole-map result exactly"
mkdir -p "$T/big"
# shellcheck disable=SC2086
t_exit 0 "$TILES" --erode "$ERODE" -j 2 --threads 1 --halo 600 --layers height -o "$T/big" "$T/tiles2.list" -- $DROP
$SEAM "$T/whole-droplet.tif" "$T/big"/*.height.tif > "$T/big.json" || t_fail "seam-figures refused the tiles"
[ "$(field "$T/big.json" max_diff)" = 0 ] || t_fail "differs from the whole map: $(cat "$T/big.json")"
t_ok

t_case "a tile list from a pipe; erode stitch of one tile"
mkdir -p "$T/pipe"
# shellcheck disable=SC2086
t_exit 0 sh -c "cat '$T/tiles2.list' | '$TILES' --erode '$ERODE' --keep-halo --halo 8 --layers height -o '$T/pipe' - -- $MEI -s mei.steps=5"
ls "$T/pipe"/*.height.halo.tif > /dev/null 2>&1 || t_fail "--keep-halo removed the halo outputs"
first=$(head -n 1 "$T/tiles2.list")
rm -f "$T/pipe"/*.height.tif
t_exit 0 "$ERODE" stitch --tile-set "$T/tiles2.list" --layers height -o "$T/pipe" "$first"
[ "$(ls "$T/pipe"/*.height.tif | grep -vc halo)" = 1 ] || t_fail "stitch of one tile wrote other tiles"
t_ok

# Halo outputs of two recipes must not be blended: the second
# tile's halo output is remade with one more step.
t_case "stitch refuses halo outputs of different recipes, naming both"
second=$(sed -n 2p "$T/tiles2.list")
rm -f "$T/pipe"/*.height.tif
# shellcheck disable=SC2086
t_exit 0 "$ERODE" -q --tile-set "$T/tiles2.list" --halo 8 --layers height $MEI -s mei.steps=6 \
    -o "$T/pipe" "$second"
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles2.list" --layers height -o "$T/pipe" "$first"
t_one_error_line "another recipe"
grep -q "$(basename "$first" .tif).height.halo.tif" "$T/stderr" || t_fail "the first recipe's output is not named"
[ -z "$(ls "$T/pipe"/*.height.tif 2> /dev/null | grep -v halo)" ] || t_fail "a stitched tile was written"
# The provenance of a stitched tile names the recipe it was made with.
# shellcheck disable=SC2086
"$ERODE" -q --tile-set "$T/tiles2.list" --halo 8 --layers height $MEI -s mei.steps=5 -o "$T/pipe" "$second"
t_exit 0 "$ERODE" stitch --tile-set "$T/tiles2.list" --layers height -o "$T/pipe" "$first"
gdalinfo "$T/pipe/$(basename "$first" .tif).height.tif" | grep -q '"recipe":{.*"steps":5' ||
    t_fail "the stitched tile's provenance lacks its recipe"
t_ok

# The stitched tile is written with the creation options it is given, as
# the run's own outputs are (same values whatever the codec).
t_case "erode stitch --co COMPRESS=ZSTD: a ZSTD tile with the same values"
st=$T/pipe/$(basename "$first" .tif).height.tif
cp "$st" "$T/stitched-deflate.tif"
rm -f "$st"
t_exit 0 "$ERODE" stitch --co COMPRESS=ZSTD --tile-set "$T/tiles2.list" --layers height -o "$T/pipe" "$first"
gdalinfo "$st" | grep -q 'COMPRESSION=ZSTD' || t_fail "the stitched tile is not ZSTD"
gdalinfo "$T/stitched-deflate.tif" | grep -q 'COMPRESSION=DEFLATE' || t_fail "the default is not DEFLATE"
$PY - "$st" "$T/stitched-deflate.tif" <<'PY' || t_fail "the values differ between codecs"
import sys
from osgeo import gdal
a, b = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:3])
sys.exit(0 if (a.tobytes() == b.tobytes()) else 1)
PY
t_ok

# Refusals: one line, exit status 2, nothing written.
refuse() { # name, expected text, list file, extra erode args...
    r_name=$1 r_want=$2 r_list=$3; shift 3
    t_case "refused: $r_name"
    mkdir -p "$T/refuse" && rm -f "$T/refuse"/*
    # shellcheck disable=SC2086
    t_exit 2 "$ERODE" -q --tile-set "$r_list" --halo 8 $MEI -o "$T/refuse" "$@"
    t_one_error_line "$r_want"
    t_empty_dir "$T/refuse"
    t_ok
}
t1=$(sed -n 1p "$T/tiles2.list") t2=$(sed -n 2p "$T/tiles2.list")
gdal_translate -q -tr 80 80 "$t2" "$T/fine.tif"
printf '%s\n%s\n' "$t1" "$T/fine.tif" > "$T/fine.list"
refuse "another cell size" "has cells of 80" "$T/fine.list" "$t1"
gdal_translate -q -a_ullr 541000 5400000 581960 5359040 "$t2" "$T/shifted.tif"
printf '%s\n%s\n' "$t1" "$T/shifted.tif" > "$T/shifted.list"
refuse "misaligned tiles" "not aligned" "$T/shifted.list" "$t1"
gdal_translate -q -a_srs EPSG:32611 "$t2" "$T/crs.tif"
printf '%s\n%s\n' "$t1" "$T/crs.tif" > "$T/crs.list"
refuse "another CRS" "another CRS" "$T/crs.list" "$t1"
printf '%s\n%s\n' "$t1" "$t1" > "$T/twice.list"
refuse "a tile listed twice" "are the same file" "$T/twice.list" "$t1"
refuse "an input outside the set" "not a tile of the --tile-set" "$T/tiles2.list" "$dem"
refuse "droplet height unit \"relief\"" "height_unit" "$T/tiles2.list" -s model=droplet "$t1"
t_case "refused: erode-tiles without a tile list"
t_exit 2 "$TILES" --erode "$ERODE" -o "$T"
t_one_error_line "no tile list"
t_ok
