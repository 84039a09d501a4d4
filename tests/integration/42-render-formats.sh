#!/bin/sh
# Render-pipeline outputs: -f exr (float32 and PIXEL_TYPE=HALF), -f r16 and
# -f r32 with their JSON sidecar.  Each is read back by a reader that is not
# erode's (OpenImageIO's tools for EXR, every block of every layer; numpy
# and the sidecar's own description for RAW) and compared with the GeoTIFF
# the same recipe writes; the sidecar's engine hints; the combinations
# erode refuses.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
S=whitebox_dem_f32_utm18n
L=height,sediment,erosion
ALL=height,sediment,water,erosion,deposit,flow,wear
LUX=$DEM/luxembourg_elev_int16_wgs84.tif

# Heights and layers as GeoTIFF: what every other format must hold.
# tif/N/: all seven layers after N Mei steps (these gave layers whose ZIP
# blocks OpenEXR 3.1 stored broken: sediment and wear after one step,
# water and flow after six, flow rows 128..143 after 50 as reported).
mkdir -p "$T/tif"
"$ERODE" -q -s mei.steps=4 --layers $L -o "$T/tif" "$W" || t_fail "the GeoTIFF run failed"
for n in 1 6 50; do
    mkdir -p "$T/tif/$n"
    "$ERODE" -q -s mei.steps=$n --layers $ALL -o "$T/tif/$n" "$W" || t_fail "the $n-step GeoTIFF run failed"
done

have_numpy() { $PY -c 'import numpy; from osgeo import gdal' 2> /dev/null; }

# compare KIND OUT TIF [KIND OUT TIF ...]: each OUT read back and compared
# with the GeoTIFF TIF of the same recipe.  KIND exr: OUT is the float TIFF
# oiiotool wrote from a float EXR (every cell bit for bit); half: from a
# half EXR (numpy's float16 rounding of the GeoTIFF's value, bit for bit,
# within the documented bound); r16 or r32: OUT is the RAW file, read as
# its sidecar describes it.  Nodata cells: NaN, or code 0 for r16.  Prints
# one line per OUT: what is wrong, or the number of cells of each value
# class it checked; exits 1 when anything is wrong.
compare() {
    $PY - "$@" <<'EOF'
import json, sys
import numpy as np
from osgeo import gdal

def same_bits(a, b):
    return a.view(np.uint32) == b.view(np.uint32)

def check(kind, out, tif):
    ds = gdal.Open(tif)  # kept: a band outlives no dataset
    band = ds.GetRasterBand(1)
    want = band.ReadAsArray().astype(np.float32)
    nd = band.GetNoDataValue()
    valid = ~np.isnan(want) if nd is None else (want != np.float32(nd)) & ~np.isnan(want)
    if kind in ("exr", "half"):
        got = gdal.Open(out).ReadAsArray().astype(np.float32)
        if got.shape != want.shape:
            return "shape %s, want %s" % (got.shape, want.shape)
        if not np.isnan(got[~valid]).all():
            return "%d nodata cells are not NaN" % (~np.isnan(got[~valid])).sum()
        exp = want if kind == "exr" else want.astype(np.float16).astype(np.float32)
        bad = valid & ~same_bits(got, exp)
        if bad.any():
            rows = np.argwhere(bad)[:, 0]
            r, c = np.argwhere(bad)[0]
            return "%d cells differ (rows %d..%d), first (%d, %d): %r, want %r" % (
                bad.sum(), rows.min(), rows.max(), c, r, got[r, c], exp[r, c])
        if kind == "exr":
            return "exact %d nodata %d" % (valid.sum(), (~valid).sum())
        # round to nearest even: 2^-11 of the value for normal halves,
        # 2^-25 below 2^-14 (subnormal), signed zero at 2^-25 and under
        v, g = want[valid].astype(np.float64), got[valid].astype(np.float64)
        bound = np.maximum(np.abs(v) * 2.0 ** -11, 2.0 ** -25)
        if not (np.abs(g - v) <= bound).all():
            return "beyond the documented bound: %d cells" % (np.abs(g - v) > bound).sum()
        tiny = np.abs(v) <= 2.0 ** -25
        if not ((g[tiny] == 0) & (np.signbit(g[tiny]) == np.signbit(v[tiny]))).all():
            return "a value of magnitude 2^-25 or less is not a signed zero"
        a = np.abs(v)
        return "normal %d subnormal %d zeroed %d" % ((a >= 2.0 ** -14).sum(),
               ((a > 2.0 ** -25) & (a < 2.0 ** -14)).sum(), (tiny & (v != 0)).sum())
    side = json.load(open(out + ".json"))
    if (side["width"], side["height"]) != (want.shape[1], want.shape[0]):
        return "sidecar size %sx%s" % (side["width"], side["height"])
    raw = np.fromfile(out, "<u2" if kind == "r16" else "<f4")
    if raw.size != want.size:
        return "%d values, %d cells" % (raw.size, want.size)
    raw = raw.reshape(want.shape)
    if side["rows"] == "bottom row first":
        raw = raw[::-1]
    elif side["rows"] != "top row first":
        return "rows: %r" % side["rows"]
    if side["nodata_cells"] != (~valid).sum():
        return "nodata_cells %d, the GeoTIFF has %d" % (side["nodata_cells"], (~valid).sum())
    if kind == "r32":
        if side["nodata"] != "NaN" or not np.isnan(raw[~valid]).all():
            return "nodata cells are not NaN"
        if not same_bits(raw[valid], want[valid]).all():
            return "valid cells differ"
        return "exact %d nodata %d" % (valid.sum(), (~valid).sum())
    if side["nodata"] != 0 or type(side["nodata"]) is not int:
        return "nodata: %r, want the integer 0" % side["nodata"]
    if (raw[~valid] != 0).any():
        return "%d nodata cells are not code 0" % (raw[~valid] != 0).sum()
    if (raw[valid] == 0).any():
        return "%d valid cells are code 0 (nodata)" % (raw[valid] == 0).sum()
    lo, hi, scale = side["min"], side["max"], side["scale"]
    # %.9g gives each float32 end back exactly
    if valid.any() and (np.float32(lo) != want[valid].min() or np.float32(hi) != want[valid].max()):
        return "min/max %r %r, want %r %r" % (lo, hi, want[valid].min(), want[valid].max())
    if scale != (hi - lo) / 65534:
        return "scale %r, want (max - min) / 65534" % scale
    got = lo + (raw[valid].astype(np.float64) - 1) * scale
    d = np.abs(got - want[valid].astype(np.float64))
    tol = scale / 2 + 4 * np.finfo(np.float64).eps * max(abs(lo), abs(hi))
    if valid.any() and not d.max() <= tol:
        return "largest difference %g > half a step %g" % (d.max(), scale / 2)
    return "valid %d nodata %d codes %d..%d" % (valid.sum(), (~valid).sum(),
           raw[valid].min() if valid.any() else 0, raw[valid].max() if valid.any() else 0)

failed = 0
args = sys.argv[1:]
for i in range(0, len(args), 3):
    kind, out, tif = args[i:i + 3]
    msg = check(kind, out, tif)
    ok = msg.split()[0] in ("exact", "normal", "valid")
    failed += not ok
    print("%s %s: %s" % ("ok" if ok else "FAIL", out, msg))
sys.exit(1 if failed else 0)
EOF
}

# exr_equal DIR TIFDIR LAYERS: each layer's EXR (float, one channel) read
# whole by OpenImageIO, so every block is decoded, and compared bit for
# bit with the GeoTIFF.
exr_equal() {
    files="" reads="" pairs=""
    for l in $(echo "$3" | tr , ' '); do
        files="$files $1/$S.$l.exr"
        reads="$reads $1/$S.$l.exr -o $1/$l.read.tif"
        pairs="$pairs exr $1/$l.read.tif $2/$S.$l.tif"
    done
    # shellcheck disable=SC2086
    iinfo $files > "$T/info" 2>&1 || t_fail "iinfo cannot read them: $(head -3 "$T/info")"
    [ "$(grep -c '1 channel, float openexr' "$T/info")" -eq "$(echo "$3" | tr , '\n' | wc -l)" ] ||
        t_fail "not all one float channel: $(cat "$T/info")"
    # shellcheck disable=SC2086
    oiiotool -d float $reads > "$T/why" 2>&1 || t_fail "oiiotool cannot read them: $(head -3 "$T/why")"
    # shellcheck disable=SC2086
    compare $pairs > "$T/why" 2>&1 || t_fail "$(grep -v '^ok' "$T/why")"
}

t_case "-f exr: every block of every layer equal to the GeoTIFF, bit for bit (read by OpenImageIO)"
mkdir -p "$T/exr"
t_exit 0 "$ERODE" -q -s mei.steps=4 --layers $L -f exr -o "$T/exr" "$W"
[ "$(ls "$T/exr" | tr '\n' ' ')" = "$S.erosion.exr $S.height.exr $S.sediment.exr " ] || t_fail "wrote: $(ls "$T/exr")"
for n in 1 6 50; do
    mkdir -p "$T/exr/$n"
    t_exit 0 "$ERODE" -q -s mei.steps=$n --layers $ALL -f exr -o "$T/exr/$n" "$W"
done
if ! have oiiotool || ! have_numpy; then
    t_skip "needs oiiotool (openimageio-tools) and numpy with GDAL's Python"
else
    exr_equal "$T/exr" "$T/tif" $L
    for n in 1 6 50; do
        exr_equal "$T/exr/$n" "$T/tif/$n" $ALL
    done
    t_ok
fi

t_case "-f exr: provenance (version and recipe) in the 'erode' string attribute"
if ! have iinfo; then
    t_skip "needs iinfo (openimageio-tools)"
else
    iinfo -v "$T/exr/$S.height.exr" | grep -q 'erode: "{\\"erode\\":\\"[0-9.]*\\",.*\\"steps\\":4' \
        || t_fail "$(iinfo -v "$T/exr/$S.height.exr" | grep erode: | head -c 300)"
    t_ok
fi

t_case "-f exr --co PIXEL_TYPE=HALF: every layer is the float value rounded to the nearest half (subnormals included)"
mkdir -p "$T/half"
t_exit 0 "$ERODE" -q -s mei.steps=6 --layers $ALL -f exr --co PIXEL_TYPE=HALF -o "$T/half" "$W"
if ! have oiiotool || ! have_numpy; then
    t_skip "needs oiiotool (openimageio-tools) and numpy with GDAL's Python"
else
    reads="" pairs=""
    for l in $(echo $ALL | tr , ' '); do
        reads="$reads $T/half/$S.$l.exr -o $T/half/$l.tif"
        pairs="$pairs half $T/half/$l.tif $T/tif/6/$S.$l.tif"
    done
    [ "$(iinfo "$T"/half/*.exr | grep -c 'half openexr')" -eq 7 ] || t_fail "not all half: $(iinfo "$T"/half/*.exr)"
    # shellcheck disable=SC2086
    oiiotool -d float $reads || t_fail "oiiotool cannot read them"
    # shellcheck disable=SC2086
    compare $pairs > "$T/why" 2>&1 || t_fail "$(grep -v '^ok' "$T/why")"
    classes=$(grep "/sediment.tif:" "$T/why")
    # the sediment layer reaches half's subnormal range and below it
    echo "$classes" | grep -Eq 'subnormal [1-9][0-9]* zeroed [1-9]' || t_fail "sediment: no subnormal or zeroed value to check: $classes"
    t_ok
fi

t_case "-f exr --co PIXEL_TYPE=HALF beyond +-65504: refused, nothing written"
mkdir -p "$T/big" "$T/bigout"
if ! have gdal_translate; then
    t_skip "needs gdal_translate"
else
    gdal_translate -q -ot Float32 -scale 0 2000 0 200000 "$W" "$T/big/big.tif"
    t_exit 1 "$ERODE" -q -s mei.steps=1 --layers sediment,height -f exr --co PIXEL_TYPE=HALF -o "$T/bigout" "$T/big/big.tif"
    t_one_error_line "beyond half's range"
    t_empty_dir "$T/bigout"
    t_ok
fi

t_case "-f r16 and -f r32: RAW with a sidecar, r32 exact, r16 within half a step, codes 1..65535"
mkdir -p "$T/raw"
t_exit 0 "$ERODE" -q -s mei.steps=4 --layers $L -f r16 -o "$T/raw" "$W"
t_exit 0 "$ERODE" -q -s mei.steps=4 --layers $L -f r32 --json -o "$T/raw" "$W"
[ "$(jq -r .outputs.height_sidecar "$T/stdout")" = "$T/raw/$S.height.r32.json" ] ||
    t_fail "--json does not list the height layer's sidecar: $(jq -c .outputs "$T/stdout")"
for l in height sediment erosion; do
    for k in r16 r32; do
        [ -f "$T/raw/$S.$l.$k" ] && [ -f "$T/raw/$S.$l.$k.json" ] || t_fail "missing $S.$l.$k or its sidecar"
    done
    jq -e '.provenance.recipe.mei.steps == 4' "$T/raw/$S.$l.r16.json" > /dev/null || t_fail "no recipe in the $l sidecar"
done
if ! have_numpy; then
    t_skip "needs numpy with GDAL's Python"
else
    pairs=""
    for l in height sediment erosion; do
        pairs="$pairs r32 $T/raw/$S.$l.r32 $T/tif/$S.$l.tif r16 $T/raw/$S.$l.r16 $T/tif/$S.$l.tif"
    done
    # shellcheck disable=SC2086
    compare $pairs > "$T/why" 2>&1 || t_fail "$(grep -v '^ok' "$T/why")"
    t_ok
fi

t_case "-f r16 on a DEM with nodata: every valid cell a code from 1, every nodata cell code 0"
if [ ! -f "$LUX" ]; then
    t_skip "needs $LUX (the shared DEMs)"
elif ! have_numpy; then
    t_skip "needs numpy with GDAL's Python"
else
    mkdir -p "$T/lux" "$T/luxtif"
    t_exit 0 "$ERODE" -q -s mei.steps=4 --layers $L -f r16 -o "$T/lux" "$LUX"
    t_exit 0 "$ERODE" -q -s mei.steps=4 --layers $L -f r32 -o "$T/lux" "$LUX"
    t_exit 0 "$ERODE" -q -s mei.steps=4 --layers $L -o "$T/luxtif" "$LUX"
    lx=luxembourg_elev_int16_wgs84
    pairs=""
    for l in height sediment erosion; do
        pairs="$pairs r16 $T/lux/$lx.$l.r16 $T/luxtif/$lx.$l.tif r32 $T/lux/$lx.$l.r32 $T/luxtif/$lx.$l.tif"
    done
    # shellcheck disable=SC2086
    compare $pairs > "$T/why" 2>&1 || t_fail "$(grep -v '^ok' "$T/why")"
    [ "$(grep -Ec '^ok .*: valid [1-9][0-9]* nodata [1-9]' "$T/why")" -eq 3 ] ||
        t_fail "no nodata cell checked: $(cat "$T/why")"
    t_ok
fi

# side FILE JQ-EXPR: the sidecar FILE.json satisfies the jq expression.
side() { jq -e "$2" "$1.json" > /dev/null || t_fail "$(basename "$1").json: not $2: $(jq -c 'del(.provenance)' "$1.json")"; }

t_case "RAW sidecar: Unity's Import Raw offered only for square 2^n+1 maps in 16 bits, flip stated"
mkdir -p "$T/u"
if ! have gdal_translate; then
    t_skip "needs gdal_translate"
else
    gdal_translate -q -srcwin 40 30 65 65 "$W" "$T/u/sq.tif"
    t_exit 0 "$ERODE" -q -s mei.steps=2 --layers height -f r16 -o "$T/u" "$T/u/sq.tif"
    t_exit 0 "$ERODE" -q -s mei.steps=2 --layers height -f r32 -o "$T/u" "$T/u/sq.tif"
    t_exit 0 "$ERODE" -q -s mei.steps=2 --layers height -f r16 -o "$T/u" "$W"
    # a square 65 x 65 map: importable, with the numbers of the dialog
    side "$T/u/sq.height.r16" '.unity.importable == true and .unity.depth == 16 and .unity.byte_order == "Windows"
        and .unity.resolution == 65 and .unity.flip_vertically == true and .rows == "top row first"'
    # Unity maps code c to c / 65536 of the terrain height above its y
    side "$T/u/sq.height.r16" '(.unity.terrain_height - 65536 * .scale | fabs) <= 1e-8 * .unity.terrain_height
        and (.unity.terrain_y - (.min - .scale) | fabs) <= 1e-8 * (.min | fabs)'
    # Unreal: code 32768 at the landscape's z, 1/128 of Z scale (cm) a code
    side "$T/u/sq.height.r16" '(.unreal.z_scale - 12800 * .scale | fabs) <= 1e-8 * .unreal.z_scale
        and (.unreal.z_location_cm - 100 * (.min + 32767 * .scale) | fabs) <= 1e-8 * (.unreal.z_location_cm | fabs)'
    # written bottom row first, Unity imports it as it is
    mkdir -p "$T/u/bu"
    t_exit 0 "$ERODE" -q -s mei.steps=2 --layers height -f r16 --co ROW_ORDER=BOTTOM_UP -o "$T/u/bu" "$T/u/sq.tif"
    side "$T/u/bu/sq.height.r16" '.unity.importable == true and .unity.flip_vertically == false and .rows == "bottom row first"'
    # 237 x 188: not importable, the nearest size and how to resample named
    side "$T/u/$S.height.r16" '.unity.importable == false and (.unity | has("depth") | not)
        and .unity.nearest_resolution == 257 and (.unity.resample | test("gdalwarp -ts 257 257"))
        and (.unity.why | test("237 x 188"))'
    # float32: neither engine imports it
    side "$T/u/sq.height.r32" '.unity.importable == false and (.unity | has("depth") | not)
        and .unreal.importable == false and (.unity.why | test("16-bit"))'
    t_ok
fi

t_case "--co ROW_ORDER=BOTTOM_UP: the row-reversed bytes, said so in the sidecar"
mkdir -p "$T/flip"
for k in r16 r32; do
    t_exit 0 "$ERODE" -q -s mei.steps=2 --layers height,sediment -f $k --co ROW_ORDER=BOTTOM_UP -o "$T/flip" "$W"
    t_exit 0 "$ERODE" -q -s mei.steps=2 --layers height,sediment -f $k --co row_order=top_down -o "$T/u" "$W"
    for l in height sediment; do
        f=$S.$l.$k
        side "$T/flip/$f" '.rows == "bottom row first"'
        side "$T/u/$f" '.rows == "top row first"'
        $PY -c 'import sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read(); n = int(sys.argv[3])
rows = [a[i:i + n] for i in range(0, len(a), n)]
sys.exit(0 if b"".join(reversed(rows)) == b and a != b else 1)' "$T/u/$f" "$T/flip/$f" $((237 * ${k#r} / 8)) ||
            t_fail "$f: BOTTOM_UP is not TOP_DOWN's rows reversed"
        cmp -s "$T/u/$f.json" "$T/flip/$f.json" && t_fail "$f: same sidecar for both row orders"
    done
done
if have_numpy; then
    compare r16 "$T/flip/$S.height.r16" "$T/tif/$S.height.tif" > /dev/null 2>&1 &&
        t_fail "the 2-step flipped file matches the 4-step GeoTIFF: compare proves nothing"
    mkdir -p "$T/tif2"
    "$ERODE" -q -s mei.steps=2 --layers height -o "$T/tif2" "$W"
    compare r16 "$T/flip/$S.height.r16" "$T/tif2/$S.height.tif" r32 "$T/flip/$S.height.r32" "$T/tif2/$S.height.tif" \
        > "$T/why" 2>&1 || t_fail "flipped: $(grep -v '^ok' "$T/why")"
fi
t_ok

t_case "render formats: the same bytes on every run, for any thread count"
mkdir -p "$T/j1" "$T/j2"
for f in exr r16; do
    t_exit 0 "$ERODE" -q -j1 -s mei.steps=4 --layers height -f $f -o "$T/j1" "$W"
    t_exit 0 "$ERODE" -q -j2 -s mei.steps=4 --layers height -f $f -o "$T/j2" "$W"
done
for f in $S.height.exr $S.height.r16 $S.height.r16.json; do
    cmp -s "$T/j1/$f" "$T/j2/$f" || t_fail "$f differs between -j1 and -j2"
done
t_ok

t_case "bad render-format combinations: exit 2, one line, nothing written"
printf '%s\n' "$W" > "$T/tiles.list"
while IFS="|" read -r arg expect; do
    rm -rf "$T/bad"; mkdir -p "$T/bad"
    # shellcheck disable=SC2086
    t_exit 2 "$ERODE" -q $arg -o "$T/bad" "$W" < /dev/null
    t_one_error_line "$expect"
    t_empty_dir "$T/bad"
done <<LIST
-f r16 --tile-set $T/tiles.list --halo 4|--format r16: tile sets are written as GeoTIFF
-f r32 --tile-set $T/tiles.list --halo 4|--format r32: tile sets are written as GeoTIFF
-f exr --tile-set $T/tiles.list --halo 4|--format exr: tile sets are written as GeoTIFF
--co PIXEL_TYPE=HALF|--co PIXEL_TYPE: needs -f exr
-f exr --co PIXEL_TYPE=DOUBLE|--co: 'PIXEL_TYPE=DOUBLE'
-f exr --co ROW_ORDER=BOTTOM_UP|--co ROW_ORDER: needs -f r16 or -f r32
--co ROW_ORDER=TOP_DOWN|--co ROW_ORDER: needs -f r16 or -f r32
-f r16 --co ROW_ORDER=UP|--co: 'ROW_ORDER=UP'
-f r8|--format: 'r8': expected tif, png, exr, r16 or r32
LIST
t_exit 2 "$ERODE" stitch -f r16 --tile-set "$T/tiles.list" -o "$T/bad"
t_one_error_line "tile sets are written as GeoTIFF"
t_empty_dir "$T/bad"
t_ok
