#!/bin/sh
# The decoded values of every model's outputs on the bundled DEMs equal the
# checksums kept in tests/data/value-checksums.txt (so work on speed or
# structure changes no value; SPH runs the recipes pinned under
# tests/data/fixture/), for -j1 and -j2 and with DEFLATE and ZSTD tiles, so
# neither the thread count nor the encoding reaches a value.  Refresh:
# CONTRIBUTING.md "Tests".
. "$(dirname "$0")/lib.sh"
VC="$PY $SRCDIR/scripts/value-checksums --erode $ERODE"

if ! $PY -c 'from osgeo import gdal; import numpy' 2> /dev/null; then
    t_case "value checksums"; t_skip "no GDAL Python (python3-gdal) at $PY"; exit 0
fi

t_case "values equal the fixture at -j1 with DEFLATE (the default encoding)"
$VC --extra=-j1 > "$T/out" 2>&1 || t_fail "$(tail -n 5 "$T/out")"
t_ok

t_case "values equal the fixture at -j2 with ZSTD level 3 and 128-cell tiles"
$VC --extra="-j2 --co COMPRESS=ZSTD --co LEVEL=3 --co BLOCKSIZE=128" > "$T/out" 2>&1 || t_fail "$(tail -n 5 "$T/out")"
t_ok

t_case "a value that differs fails the check and names the run"
grep -m 1 ' height whitebox_dem_f32_utm18n.tif -r configs/droplet.json' "$SRCDIR/tests/data/value-checksums.txt" \
    | sed 's/^[0-9a-f]*/0000000000000000000000000000000000000000000000000000000000000000/' > "$T/wrong.txt"
[ -s "$T/wrong.txt" ] || t_fail "the fixture lacks the droplet.json run on whitebox"
$VC --fixture "$T/wrong.txt" > "$T/out" 2>&1 && t_fail "a wrong checksum passed"
grep -q 'whitebox_dem_f32_utm18n.tif height (-r configs/droplet.json' "$T/out" || t_fail "no line names the run: $(cat "$T/out")"
t_ok
