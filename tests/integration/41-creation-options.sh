#!/bin/sh
# GeoTIFF creation options (--co), --precision and the COG layout: GDAL
# reads every variant with the same values and georeferencing, bad values
# are one error line with exit 2 and no file, COG=YES validates.
. "$(dirname "$0")/lib.sh"
O=$PY' '$SRCDIR/tests/integration/gdal_oracle.py
W=$DATA/whitebox_dem_f32_utm18n.tif
S=whitebox_dem_f32_utm18n

mkdir -p "$T/ref"
"$ERODE" -q -s mei.steps=20 -o "$T/ref" "$W" 2> "$T/stderr" || { echo "reference run failed: $(cat "$T/stderr")"; exit 1; }

t_case "every COMPRESS x PREDICTOR: GDAL reads the same values and georeferencing"
: > "$T/copies"
for c in DEFLATE ZSTD LZW NONE; do
    for p in 1 2 3; do
        d=$T/$c-$p
        mkdir -p "$d"
        t_exit 0 "$ERODE" -q -s mei.steps=20 --co COMPRESS=$c --co PREDICTOR=$p --co BLOCKSIZE=64 -o "$d" "$W"
        want_p=$p; [ $c = NONE ] && want_p=1
        for l in height sediment water; do
            printf '%s\t%s\t%s\t%s\n' "$d/$S.$l.tif" "$T/ref/$S.$l.tif" "$W" "Float32 $c $want_p 64" \
                >> "$T/copies"
        done
    done
done
# one oracle start for the 36 files: type, codec, predictor, block; values; georeferencing
[ "$(wc -l < "$T/copies")" -eq 36 ] || t_fail "$(wc -l < "$T/copies") files listed, not 36"
$O copies "$T/copies" > "$T/why" || t_fail "$(cat "$T/why")"
t_ok

t_case "LEVEL changes the bytes, never the values"
mkdir -p "$T/z1" "$T/z19"
t_exit 0 "$ERODE" -q -s mei.steps=20 --co compress=zstd --co level=1 --layers water -o "$T/z1" "$W"
t_exit 0 "$ERODE" -q -s mei.steps=20 --co compress=zstd --co level=19 --layers water -o "$T/z19" "$W"
cmp -s "$T/z1/$S.water.tif" "$T/z19/$S.water.tif" && t_fail "levels 1 and 19 wrote the same bytes"
$O same-values "$T/z1/$S.water.tif" "$T/z19/$S.water.tif" > "$T/why" || t_fail "$(cat "$T/why")"
t_ok

t_case "the same bytes for -j1 and -j2 with every parallel codec"
for c in DEFLATE ZSTD NONE; do
    mkdir -p "$T/j1-$c" "$T/j2-$c"
    t_exit 0 "$ERODE" -q -j1 -s mei.steps=5 --co COMPRESS=$c --co BLOCKSIZE=32 --co COG=YES -o "$T/j1-$c" "$W"
    t_exit 0 "$ERODE" -q -j2 -s mei.steps=5 --co COMPRESS=$c --co BLOCKSIZE=32 --co COG=YES -o "$T/j2-$c" "$W"
    for l in height sediment water; do
        cmp -s "$T/j1-$c/$S.$l.tif" "$T/j2-$c/$S.$l.tif" || t_fail "$c $l differs between -j1 and -j2"
    done
done
t_ok

t_case "COG=YES: GDAL's validator accepts it (tile leaders and trailers too), LAYOUT=COG, overviews inside, same values"
mkdir -p "$T/cog"
t_exit 0 "$ERODE" -q -s mei.steps=20 --co COG=YES --co BLOCKSIZE=64 -o "$T/cog" "$W"
for l in height sediment water; do
    f=$T/cog/$S.$l.tif
    (cd "$T" && $PY -m osgeo_utils.samples.validate_cloud_optimized_geotiff -q --full-check=yes "$f") > "$T/why" 2>&1 \
        || t_fail "$l: $(head -c 300 "$T/why")"
    [ "$(gdalinfo -json "$f" | jq -r '.metadata.IMAGE_STRUCTURE.LAYOUT // empty')" = COG ] || t_fail "$l: GDAL does not see LAYOUT=COG"
    n=$($PY -c 'import sys; from osgeo import gdal; ds = gdal.Open(sys.argv[1]); print(ds.GetRasterBand(1).GetOverviewCount())' "$f")
    [ "$n" = 2 ] || t_fail "$l: $n overviews, expected 2 (237x188 in 64-cell tiles: 119x94, 60x47)"
    $O same-values "$T/ref/$S.$l.tif" "$f" > "$T/why" || t_fail "$l: $(cat "$T/why")"
    $O same-georef "$W" "$f" > "$T/why" || t_fail "$l: $(cat "$T/why")"
done
t_ok

t_case "--precision rounds sediment and water within STEP/2, never the height"
mkdir -p "$T/p"
t_exit 0 "$ERODE" -q -s mei.steps=20 --precision 1e-4 -o "$T/p" "$W"
cmp -s "$T/ref/$S.height.tif" "$T/p/$S.height.tif" || t_fail "height changed"
for l in sediment water; do
    $O same-values "$T/ref/$S.$l.tif" "$T/p/$S.$l.tif" 5e-5 > "$T/why" || t_fail "$l: $(cat "$T/why")"
    $O same-values "$T/ref/$S.$l.tif" "$T/p/$S.$l.tif" > /dev/null && t_fail "$l: not rounded at all"
    [ "$(wc -c < "$T/p/$S.$l.tif")" -lt "$(wc -c < "$T/ref/$S.$l.tif")" ] || t_fail "$l: not smaller"
done
mkdir -p "$T/ph"
t_exit 0 "$ERODE" -q -s mei.steps=20 --precision height=0.5 -o "$T/ph" "$W"
$O same-values "$T/ref/$S.height.tif" "$T/ph/$S.height.tif" 0.25 > "$T/why" || t_fail "height: $(cat "$T/why")"
cmp -s "$T/ref/$S.water.tif" "$T/ph/$S.water.tif" || t_fail "height=... rounded the water too"
t_ok

t_case "bad --co and --precision values: exit 2, one line naming it, nothing written"
while IFS="|" read -r arg expect; do
    mkdir -p "$T/bad"
    # shellcheck disable=SC2086
    t_exit 2 "$ERODE" -q $arg -o "$T/bad" "$W" < /dev/null
    t_one_error_line "$expect"
    t_empty_dir "$T/bad"
done <<'LIST'
--co COMPRESS=JPEG|--co: 'COMPRESS=JPEG'
--co LEVEL=0|--co: 'LEVEL=0'
--co PREDICTOR=7|--co: 'PREDICTOR=7'
--co BLOCKSIZE=100|--co: 'BLOCKSIZE=100'
--co TILED=YES|--co: 'TILED=YES': unknown creation option
--co COG=maybe|--co: 'COG=maybe'
--co COMPRESS|--co: 'COMPRESS': expected KEY=VALUE
--co COMPRESS=LZW --co LEVEL=3|--co: LEVEL needs COMPRESS=DEFLATE or ZSTD
--co LEVEL=13|--co: LEVEL is 1..12 for DEFLATE
--precision 0|--precision: '0'
--precision -1|--precision: '-1'
--precision rock=1|--precision: 'rock=1'
--precision water=x|--precision: 'water=x'
LIST
t_ok
