#!/bin/sh
# Render-pipeline outputs: -f exr (float32 and PIXEL_TYPE=HALF), -f r16 and
# -f r32 with their JSON sidecar.  Each is read back by a reader that is not
# erode's (OpenImageIO's tools for EXR, numpy for RAW) and compared with the
# GeoTIFF the same recipe writes; the combinations erode refuses.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
S=whitebox_dem_f32_utm18n
L=height,sediment,erosion

# Heights and layers as GeoTIFF: what every other format must hold.
mkdir -p "$T/tif"
"$ERODE" -q -s mei.steps=4 --layers $L -o "$T/tif" "$W" || t_fail "the GeoTIFF run failed"

have_numpy() { $PY -c 'import numpy; from osgeo import gdal' 2> /dev/null; }

# compare KIND OUT TIF TOL: KIND exr-as-tif (a float TIFF oiiotool wrote
# from the EXR), r16 or r32; TOL the largest difference allowed, in file
# units, or "step" for r16 (one 16-bit step of the sidecar's range).
compare() {
    $PY - "$@" <<'EOF'
import json, sys
import numpy as np
from osgeo import gdal
kind, out, tif, tol = sys.argv[1:5]
ds = gdal.Open(tif)
band = ds.GetRasterBand(1)
want = band.ReadAsArray().astype(np.float64)
nd = band.GetNoDataValue()
valid = np.ones(want.shape, bool) if nd is None else want != nd
if kind == "exr-as-tif":
    got = gdal.Open(out).ReadAsArray().astype(np.float64)
else:
    side = json.load(open(out + ".json"))
    assert (side["width"], side["height"]) == (want.shape[1], want.shape[0]), side
    assert side["provenance"]["recipe"]["mei"]["steps"] == 4, "no recipe in the sidecar"
    raw = np.fromfile(out, "<u2" if kind == "r16" else "<f4")
    assert raw.size == want.size, "%d values, %d cells" % (raw.size, want.size)
    raw = raw.reshape(want.shape).astype(np.float64)
    got = side["min"] + raw * side["scale"] if kind == "r16" else raw
    if kind == "r16":
        tol = side["scale"]
        # %.9g in the sidecar gives each float32 end back exactly
        assert np.float32(side["min"]) == np.float32(want[valid].min()), side["min"]
        assert np.float32(side["max"]) == np.float32(want[valid].max()), side["max"]
if got.shape != want.shape:
    sys.exit("shape %s, want %s" % (got.shape, want.shape))
if not np.all(np.isnan(got[~valid]) | (kind == "r16")):
    sys.exit("nodata cells are not NaN")
d = np.abs(got[valid] - want[valid]).max() if valid.any() else 0.0
if not d <= float(tol):
    sys.exit("largest difference %g > %s" % (d, tol))
EOF
}

t_case "-f exr: one float32 EXR a layer, equal to the GeoTIFF (read by OpenImageIO)"
mkdir -p "$T/exr"
t_exit 0 "$ERODE" -q -s mei.steps=4 --layers $L -f exr -o "$T/exr" "$W"
[ "$(ls "$T/exr" | tr '\n' ' ')" = "$S.erosion.exr $S.height.exr $S.sediment.exr " ] || t_fail "wrote: $(ls "$T/exr")"
if ! have oiiotool || ! have_numpy; then
    t_skip "needs oiiotool (openimageio-tools) and numpy with GDAL's Python"
else
    for l in height sediment erosion; do
        iinfo -v "$T/exr/$S.$l.exr" > "$T/info" 2>&1 || t_fail "iinfo cannot read the $l EXR"
        grep -q '1 channel, float openexr' "$T/info" || t_fail "$l: $(head -1 "$T/info")"
        oiiotool "$T/exr/$S.$l.exr" -d float -o "$T/exr/$l.tif" || t_fail "oiiotool cannot read the $l EXR"
        compare exr-as-tif "$T/exr/$l.tif" "$T/tif/$S.$l.tif" 0 > "$T/why" 2>&1 || t_fail "$l: $(cat "$T/why")"
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

t_case "-f exr --co PIXEL_TYPE=HALF: half within its rounding (2^-11 relative)"
mkdir -p "$T/half"
t_exit 0 "$ERODE" -q -s mei.steps=4 --layers height -f exr --co PIXEL_TYPE=HALF -o "$T/half" "$W"
if ! have oiiotool || ! have_numpy; then
    t_skip "needs oiiotool (openimageio-tools) and numpy with GDAL's Python"
else
    iinfo "$T/half/$S.height.exr" | grep -q 'half openexr' || t_fail "not half: $(iinfo "$T/half/$S.height.exr")"
    oiiotool "$T/half/$S.height.exr" -d float -o "$T/half/h.tif" || t_fail "oiiotool cannot read it"
    # heights here are below 2048: half's step is at most 1, error at most 0.5
    compare exr-as-tif "$T/half/h.tif" "$T/tif/$S.height.tif" 0.5 > "$T/why" 2>&1 || t_fail "$(cat "$T/why")"
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

t_case "-f r16 and -f r32: RAW with a sidecar, r32 exact, r16 within one step"
mkdir -p "$T/raw"
t_exit 0 "$ERODE" -q -s mei.steps=4 --layers $L -f r16 -o "$T/raw" "$W"
t_exit 0 "$ERODE" -q -s mei.steps=4 --layers $L -f r32 --json -o "$T/raw" "$W"
[ "$(jq -r .outputs.height_sidecar "$T/stdout")" = "$T/raw/$S.height.r32.json" ] ||
    t_fail "--json does not list the height layer's sidecar: $(jq -c .outputs "$T/stdout")"
for l in height sediment erosion; do
    for k in r16 r32; do
        [ -f "$T/raw/$S.$l.$k" ] && [ -f "$T/raw/$S.$l.$k.json" ] || t_fail "missing $S.$l.$k or its sidecar"
    done
done
if ! have_numpy; then
    t_skip "needs numpy with GDAL's Python"
else
    for l in height sediment erosion; do
        compare r32 "$T/raw/$S.$l.r32" "$T/tif/$S.$l.tif" 0 > "$T/why" 2>&1 || t_fail "r32 $l: $(cat "$T/why")"
        compare r16 "$T/raw/$S.$l.r16" "$T/tif/$S.$l.tif" step > "$T/why" 2>&1 || t_fail "r16 $l: $(cat "$T/why")"
    done
    t_ok
fi

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
-f r8|--format: 'r8': expected tif, png, exr, r16 or r32
LIST
t_exit 2 "$ERODE" stitch -f r16 --tile-set "$T/tiles.list" -o "$T/bad"
t_one_error_line "tile sets are written as GeoTIFF"
t_empty_dir "$T/bad"
t_ok
