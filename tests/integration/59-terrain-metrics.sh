#!/bin/sh
# scripts/terrain-metrics on maps whose measures are known: a steep plane
# (every steep cell a facet, checker 0, slope atan|grad|), a gentle plane
# (all flat), a checkerboard (checker 2), a plane with a raised rim (every
# edge cell a wall), a straight valley (its channel cells straight up to the
# last 10 above the outlet); a DEM in degrees (EPSG:4326, centred on 45 N)
# measures like the same heights in metres; --compare of a map and its exact
# 2x area average: no difference, correlation 1, and a constant offset's
# differences to the digit.
. "$(dirname "$0")/lib.sh"
TM=$SRCDIR/scripts/terrain-metrics

if ! $PY -c 'import osgeo.gdal, numpy' 2> /dev/null; then
    t_case "terrain-metrics"; t_skip "python3-gdal or numpy missing"
    exit 0
fi

# The maps: float64 GeoTIFFs, 10 m cells unless said otherwise.
$PY - "$T" << 'EOF'
import math, sys
import numpy as np
from osgeo import gdal, osr
gdal.UseExceptions()
t = sys.argv[1]
def write(name, z, gt=(0.0, 10.0, 0.0, 0.0, 0.0, -10.0), epsg=32633):
    ds = gdal.GetDriverByName("GTiff").Create(t + "/" + name, z.shape[1], z.shape[0], 1, gdal.GDT_Float64)
    ds.SetGeoTransform(gt)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    ds.SetProjection(srs.ExportToWkt())
    ds.GetRasterBand(1).WriteArray(z)
r, c = np.indices((64, 64)).astype(np.float64)
write("plane.tif", 1000 + 3 * c + 2 * r)           # G = hypot(0.3, 0.2)
write("gentle.tif", 0.05 * c + 0.02 * r)           # G < 0.006
write("checker.tif", 100 + 5 * (-1) ** (r + c))
rim = r + c
rim[0, :] += 50; rim[-1, :] += 50; rim[:, 0] += 50; rim[:, -1] += 50
write("rim.tif", rim)
# a V valley down the middle column, falling south: the floor drains south
# to the last row, every other cell sideways towards the floor
write("valley.tif", 2 * abs(c - 32) + 0.1 * (63 - r))
# a smooth surface with relief in both directions, in degrees and in metres
y, x = np.indices((96, 96)).astype(np.float64)
z = 300 + 40 * np.sin(x / 9.0) * np.cos(y / 13.0) + 0.5 * x + 0.3 * y
deg, lat = 1e-4, 45.0
write("geo.tif", z, (10.0, deg, 0.0, lat + 48 * deg, 0.0, -deg), 4326)
# WGS 84: the radii of curvature at 45 N
a, f = 6378137.0, 1 / 298.257223563
e2 = f * (2 - f)
s2 = 1 - e2 * math.sin(math.radians(lat)) ** 2
dx = math.radians(deg) * a / math.sqrt(s2) * math.cos(math.radians(lat))
dy = math.radians(deg) * a * (1 - e2) / s2 ** 1.5
write("geo-m.tif", z, (500000.0, dx, 0.0, 5000000.0, 0.0, -dy))
open(t + "/geo-dxdy", "w").write("%.9f %.9f\n" % (dx, dy))
# a rough map and its 2x area average (20 m cells), and the average + 10 m
g = np.random.default_rng(1)
fine = np.cumsum(np.cumsum(g.normal(size=(128, 128)), 0), 1)
fine -= fine.min()
coarse = fine.reshape(64, 2, 64, 2).mean(axis=(1, 3))
write("fine.tif", fine)
write("coarse.tif", coarse, (0.0, 20.0, 0.0, 0.0, 0.0, -20.0))
write("coarse10.tif", coarse + 10, (0.0, 20.0, 0.0, 0.0, 0.0, -20.0))
write("third.tif", coarse[:42, :42], (0.0, 15.0, 0.0, 0.0, 0.0, -15.0))
EOF

# expect JSON CHECK...: each CHECK is KEY=VALUE[:TOL] (|got - VALUE| <= TOL,
# default 1e-9; VALUE null: the key is null) or KEY<VALUE or KEY>VALUE.
expect() {
    $PY - "$@" > "$T/why" 2>&1 << 'EOF' || t_fail "$(cat "$T/why")"
import json, re, sys
m = json.loads(open(sys.argv[1]).readline())
why = []
for chk in sys.argv[2:]:
    k, op, v = re.match(r"(\w+)([=<>])(.*)", chk).groups()
    got = m.get(k, "missing")
    if v == "null":
        ok = got is None
    elif not isinstance(got, (int, float)):
        ok = False
    elif op == "=":
        v, _, tol = v.partition(":")
        ok = abs(got - float(v)) <= float(tol or 1e-9)
    else:
        ok = got < float(v) if op == "<" else got > float(v)
    if not ok:
        why.append("%s: got %s" % (chk, got))
print("; ".join(why))
sys.exit(1 if why else 0)
EOF
}
metrics() { $PY "$TM" --json "$@" > "$T/m.json" 2> "$T/stderr" || t_fail "terrain-metrics $*: $(cat "$T/stderr")"; }

t_case "a plane: facet 1, checker 0, flat 0, slope atan(hypot(0.3, 0.2)), no wall; a gentle one all flat"
metrics "$T/plane.tif"
expect "$T/m.json" facet=1 checker=0 flat=0 wall=0 slope=19.827028653 pits=0
metrics "$T/gentle.tif"
expect "$T/m.json" flat=1 facet=null checker=0:1e-12
t_ok

t_case "a checkerboard: checker 2; its central differences 0, so all flat, no steep cell for facet"
metrics "$T/checker.tif"
expect "$T/m.json" checker=2 flat=1 slope=0 facet=null
t_ok

t_case "a raised rim: wall 1"
metrics "$T/rim.tif"
expect "$T/m.json" wall=1
t_ok

t_case "a straight valley: the floor's channel cells (rows 1-63) straight but the last 10 above the outlet"
metrics "$T/valley.tif"
expect "$T/m.json" straight=0.841269841:1e-6
t_ok

t_case "a DEM in degrees at 45 N measures as the same heights with its cells in metres"
metrics "$T/geo.tif"
mv "$T/m.json" "$T/geo.json"
metrics "$T/geo-m.tif"
$PY - "$T/geo.json" "$T/m.json" "$T/geo-dxdy" > "$T/why" 2>&1 << 'EOF' || t_fail "$(cat "$T/why")"
import json, sys
g, m = (json.loads(open(p).readline()) for p in sys.argv[1:3])
dx, dy = map(float, open(sys.argv[3]).read().split())
why = []
# the spherical approximations, 111320 cos(lat) and 110574 m a degree, to 0.6 %
if not (abs(dx / (1e-4 * 111320 * 0.7071067812) - 1) < 0.006 and abs(dy / (1e-4 * 110574) - 1) < 0.006):
    why.append("the test's own cell size %g x %g m is off" % (dx, dy))
for k in ("slope", "flat", "facet", "straight", "theta", "drainage_density", "wall", "checker", "pits"):
    a, b = g[k], m[k]
    if (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-6 * max(abs(b), 1e-12)):
        why.append("%s %s in degrees, %s in metres" % (k, a, b))
if not 1 < m["slope"] < 45:
    why.append("slope %s" % m["slope"])
print("; ".join(why))
sys.exit(1 if why else 0)
EOF
t_ok

t_case "every key in the key=value line as in --json"
$PY "$TM" "$T/plane.tif" > "$T/line" || t_fail "terrain-metrics failed"
for k in input width height valid pits bins theta r2 drainage_density hypsometric_integral roughness \
    facet flat slope straight wall checker; do
    grep -q " $k=\|^$k=" "$T/line" || t_fail "no $k= in: $(cat "$T/line")"
done
t_ok

t_case "--compare a map and its exact 2x area average: no difference, correlation 1"
metrics --compare "$T/fine.tif" "$T/coarse.tif"
expect "$T/m.json" factor=2 cells=4096 mean_height_diff=0:1e-12 hypsometric_diff=0:1e-12 \
    correlation=1:1e-12 rms_over_relief=0:1e-12
t_ok

t_case "--compare with a 10 m offset: the mean and RMS differences of 10 m, the relief of --relief-of"
$PY - "$T/coarse.tif" > "$T/stat" << 'EOF'
import sys
from osgeo import gdal
z = gdal.Open(sys.argv[1]).ReadAsArray()
print("%.12g %.12g" % (z.mean(), z.max() - z.min()))
EOF
read -r mean relief < "$T/stat"
metrics --compare "$T/fine.tif" "$T/coarse10.tif"
expect "$T/m.json" "mean_height_diff=$(echo "$mean" | awk '{ printf "%.12g", -10 / ($1 + 10) }')" \
    hypsometric_diff=0:1e-12 correlation=1:1e-12 "relief=$relief" \
    "rms_over_relief=$(echo "$relief" | awk '{ printf "%.12g", 10 / $1 }')"
metrics --compare "$T/fine.tif" "$T/coarse10.tif" --relief-of "$T/fine.tif"
$PY -c 'import json, sys; m = json.loads(open(sys.argv[1]).read()); sys.exit(0 if m["relief_of"].endswith("fine.tif") and m["relief"] > 0 else 1)' \
    "$T/m.json" || t_fail "--relief-of: $(cat "$T/m.json")"
t_ok

t_case "--compare of maps 1.5x apart: exit 1, one line naming the factor"
t_exit 1 "$PY" "$TM" --compare "$T/fine.tif" "$T/third.tif"
t_one_error_line "^terrain-metrics: .*fine.tif is 1.5 times finer than .*third.tif, not an integer factor$"
t_ok
