#!/bin/sh
# The hostile-input corpus through the CLI: every line of
# tests/data/bad/MANIFEST.  A refused file or recipe: the exact exit status,
# exactly one stderr line "erode: ..." holding the listed text, nothing
# left in the output directory.  A valid but odd map (1x1, 2x2, 7x3,
# all-nodata, NaN and infinite cells): exit 0, nothing on stderr (an
# all-nodata map: exactly one warning line holding the listed text), the three
# layers and nothing else, each read by GDAL with the input's size,
# georeferencing and nodata cells; with zero steps the heights equal the
# input's, and a short Mei run and a short droplet run keep every nodata
# cell nodata.  tests/unit/check_corpus.c checks the same lines below the
# CLI.
. "$(dirname "$0")/lib.sh"
BAD=$DATA/bad
TAB=$(printf '\t')
gdal_ok=1
{ have gdalinfo && $PY -c 'import osgeo.gdal, numpy' 2> /dev/null; } || gdal_ok=0

# exactly one line, "erode: " first, holding $1 as fixed text
one_line_with() {
    n=$(wc -l < "$T/stderr")
    [ "$n" -eq 1 ] || t_fail "expected one error line, got $n: $(head -c 300 "$T/stderr")"
    grep -q '^erode: ' "$T/stderr" || t_fail "error line does not start with 'erode: ': $(cat "$T/stderr")"
    grep -q -F -- "$1" "$T/stderr" || t_fail "error line '$(cat "$T/stderr")' lacks '$1'"
}

# GDAL's view of a successful run's outputs (one interpreter per run, the
# heavy part of this script): argv = mode, input, output layers.  Every
# layer has the input's size, geotransform and CRS, and nodata (GDAL_NODATA,
# or a PNG's alpha band) in exactly the input's nodata cells, finite values
# elsewhere; mode "same" (zero steps, GeoTIFF): heights equal the input's.
cat > "$T/gdal_check.py" <<'PYEOF'
import sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()

def load(path):
    ds = gdal.Open(path)
    b = ds.GetRasterBand(1)
    a = b.ReadAsArray().astype(np.float64)
    if ds.RasterCount == 2:                      # grey + alpha PNG
        valid = ds.GetRasterBand(2).ReadAsArray() > 0
    else:
        nd = b.GetNoDataValue()
        valid = np.isfinite(a) if nd is None else ~np.isnan(a) if np.isnan(nd) else a != nd
        valid &= np.isfinite(a)                  # erode reads NaN and Inf cells as nodata
    return ds, a, valid

mode, src = sys.argv[1], sys.argv[2]
ds0, a0, v0 = load(src)
for out in sys.argv[3:]:
    ds, a, v = load(out)
    name = out.rsplit("/", 1)[-1]
    if (ds.RasterXSize, ds.RasterYSize) != (ds0.RasterXSize, ds0.RasterYSize):
        sys.exit("%s: size %dx%d" % (name, ds.RasterXSize, ds.RasterYSize))
    if ds.GetGeoTransform(can_return_null=True) != ds0.GetGeoTransform(can_return_null=True):
        sys.exit("%s: geotransform differs" % name)
    if ds.GetProjection() != ds0.GetProjection():
        sys.exit("%s: CRS differs" % name)
    if not np.array_equal(v, v0):
        sys.exit("%s: nodata cells differ (%d vs %d valid)" % (name, v.sum(), v0.sum()))
    if not np.isfinite(a[v]).all():
        sys.exit("%s: non-finite valid cells" % name)
    if mode == "same" and ".height." in name and not src.endswith(".png") \
            and not np.array_equal(a[v], a0[v0].astype(np.float32).astype(np.float64)):
        sys.exit("%s: heights differ from the input's" % name)
PYEOF

# The outputs of a successful run on $1 in $T/out: the three layers (a
# PNG's with their .aux.xml) and nothing else, checked by gdal_check.py in
# mode $2.
check_outputs() {
    src=$1; base=$(basename "$1"); stem=${base%.*}; ext=${base##*.}
    set -- "$2" "$src" "$T/out/$stem.height.$ext" "$T/out/$stem.sediment.$ext" "$T/out/$stem.water.$ext"
    got=$(ls -A "$T/out" | sort | tr '\n' ' ')
    aux=; [ "$ext" = png ] && aux=.aux.xml
    want=$(printf '%s\n' "$3" "$4" "$5" "$3$aux" "$4$aux" "$5$aux" | sed 's|.*/||' | sort -u | tr '\n' ' ')
    [ "$got" = "$want" ] || { t_fail "outputs: $got"; return; }
    [ "$gdal_ok" -eq 1 ] || return 0
    $PY "$T/gdal_check.py" "$@" > "$T/why" 2>&1 || t_fail "$(tail -n 1 "$T/why")"
}

# A successful run: nothing on stderr when the manifest says "-", else
# exactly one line "erode: FILE: warning: ..." holding $1.
quiet_or_warns() {
    if [ "$1" = - ]; then
        [ -s "$T/stderr" ] && t_fail "$2stderr: $(head -c 300 "$T/stderr")"
        return 0
    fi
    one_line_with "$1"
    grep -q -F ': warning: ' "$T/stderr" || t_fail "$2not a warning line: $(cat "$T/stderr")"
}

[ -f "$BAD/MANIFEST" ] || { t_case "corpus manifest"; t_fail "$BAD/MANIFEST missing"; exit 1; }
grep -v '^#' "$BAD/MANIFEST" | grep -v '^$' > "$T/manifest"
while IFS=$TAB read -r file code msg kind opts; do
    t_case "$kind $file${opts:+ $opts}: exit $code"
    rm -rf "$T/out"; mkdir -p "$T/out"
    if [ "$kind" = recipe ]; then
        t_exit "$code" "$ERODE" -q -r "$BAD/$file" -o "$T/out" "$BAD/ok-2x2.tif" < /dev/null
    else
        # shellcheck disable=SC2086
        t_exit "$code" "$ERODE" -q -s mei.steps=0 $opts -o "$T/out" "$BAD/$file" < /dev/null
    fi
    if [ "$code" -ne 0 ]; then
        one_line_with "$msg"
        t_empty_dir "$T/out"
        t_ok
        continue
    fi
    quiet_or_warns "$msg" ""
    if [ "$kind" = recipe ]; then t_ok; continue; fi
    check_outputs "$BAD/$file" same
    # The models on the odd map: a few Mei steps, a few droplets.
    for run in "-s mei.steps=2" "-s model=droplet -s droplet.count=10"; do
        rm -rf "$T/out"; mkdir -p "$T/out"
        # shellcheck disable=SC2086
        t_exit 0 "$ERODE" -q $run $opts -o "$T/out" "$BAD/$file" < /dev/null
        quiet_or_warns "$msg" "$run: "
        check_outputs "$BAD/$file" nodata
    done
    t_ok
done < "$T/manifest"

t_case "every file in tests/data/bad has a manifest line"
for f in "$BAD"/*; do
    b=$(basename "$f")
    case $b in MANIFEST | generate.py) continue ;; esac
    cut -f1 "$T/manifest" | grep -q -x -F -- "$b" || t_fail "$b not in MANIFEST"
done
t_ok

[ "$gdal_ok" -eq 1 ] || { t_case "GDAL checks of the odd maps"; t_skip "gdalinfo or python3-gdal missing"; }
