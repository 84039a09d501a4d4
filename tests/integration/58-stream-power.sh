#!/bin/sh
# The stream-power model from the command line: configs/stream-power.json
# turns fBm maps (the 512^2 middles of 1024^2 maps scripts/make-terrain
# makes here, two seeds) into terrain by the metrics
# of scripts/terrain-metrics: closed pits drained,
# a slope-area concavity of real river profiles, a smoother surface than
# the noise; the drainage area agrees with a second computation
# (drainage_oracle.py); the --json budget closes with the uplift counted;
# -j1, -j2, -j3 and -j8 give the same bytes; runs killed with SIGKILL and resumed give the
# bytes of an uninterrupted one; the flow layer is the drainage area in
# m^2 whatever the vertical scale; an uplift raster scales the uplift and
# other models refuse it; tile sets and the Vulkan backend are refused with
# one line.
. "$(dirname "$0")/lib.sh"
R=$SRCDIR/configs/stream-power.json
stem=fbm

if ! { have gdalinfo && $PY -c 'import osgeo.gdal, numpy' 2> /dev/null; }; then
    t_case "stream_power"; t_skip "gdalinfo or python3-gdal missing"
    exit 0
fi
fbm_middle "$T/$stem.tif" 256 1 && fbm_middle "$T/fbm2.tif" 256 2 || {
    t_case "stream_power"; t_fail "the fBm maps (scripts/make-terrain, gdal_translate)"; exit 1; }
W=$T/$stem.tif

# The terrain goals of a 1024^2 map (issue 37), checked on the 256^2
# middles of two (a whole 256^2 map of the noise spans 0..1000 m over 2.56
# km, four times as steep): closed pits <= 0.05 % of the valid cells,
# concavity theta in [0.3, 0.7] with r^2 >= 0.8 (the slope-area fit of a
# small map: 0.86 and 0.81 here, 0.87-0.90 at 1024^2); and up close
# (scripts/terrain-metrics' definitions): planar facets <= 1 %, straight
# channel runs <= 3 %, flat cells <= 1 %, an edge rim (wall) <= 5 %,
# checker <= 0.6, mean slope <= 40 degrees.  Measured: pits 0, theta 0.59
# and 0.67, facet 0.09 % and 0.10 %, straight 2.4 % and 2.0 %, flat 0.03
# and 0.02 %, wall 0, checker 0.27 and 0.25, slope 25 and 27; depressions
# "breach" instead of "drain" leaves pits, lithology_scale 20 (the rock in
# coarser patches) draws straight runs of 3.1 and 3.2 %.  The rock makes
# the slopes rough cell by cell, as real ones are, and steeper than the
# input's, so the mean |Laplacian| is not bounded by the input's (2.3 and
# 2.5 m against 2.4 and 2.1); per unit of slope, |Laplacian| / (tan(slope)
# dx), it is 0.55 against the input's 0.59 on the 1024^2 map of seed 1.
for m in "$stem" fbm2; do
    t_case "configs/stream-power.json on the 256^2 middle of fBm map $m: exit 0, budget closed, terrain metrics of a landscape up close"
    mkdir -p "$T/out-$m"
    t_exit 0 "$ERODE" -q --json -r "$R" --layers height,water,flow -o "$T/out-$m" "$T/$m.tif"
    jq -e '.status == "ok" and .model == ["stream_power"] and .steps == 250
           and .budget.uplifted > 0 and .budget.eroded > 0 and .budget.deposited > 0
           and (.budget.relative_error | fabs) < 1e-6
           and ((.budget.material_before + .budget.uplifted - .budget.left_map - .budget.material_after)
                | fabs) < 1e-6 * .budget.material_before' "$T/stdout" > /dev/null ||
        t_fail "json: $(jq -c .budget "$T/stdout")"
    $PY "$SRCDIR/scripts/terrain-metrics" --json "$T/$m.tif" "$T/out-$m/$m.height.tif" > "$T/metrics" ||
        t_fail "terrain-metrics failed"
    $PY - "$T/metrics" "$T/why" << 'EOF' || t_fail "$(cat "$T/why")"
import json, sys
inp, out = (json.loads(l) for l in open(sys.argv[1]))
why = []
if not out["pits"] <= 0.0005:
    why.append("pits %.4f %% > 0.05 %%" % (100 * out["pits"]))
if out["theta"] is None or not 0.3 <= out["theta"] <= 0.7 or not out["r2"] >= 0.8:
    why.append("theta %s (r2 %s)" % (out["theta"], out["r2"]))
for key, most in (("facet", 0.01), ("straight", 0.03), ("flat", 0.01), ("wall", 0.05),
                  ("checker", 0.6), ("slope", 40.0)):
    if out[key] is None or not out[key] <= most:
        why.append("%s %s > %g" % (key, out[key], most))
if not inp["pits"] > 0.005 or not inp["theta"] < 0.3:
    why.append("the input is no noise: pits %.4f, theta %s" % (inp["pits"], inp["theta"]))
open(sys.argv[2], "w").write("; ".join(why))
sys.exit(1 if why else 0)
EOF
    t_ok
done

t_case "stream_power: the drainage area against an independent computation (a priority flood's passes) on the fBm map and the Vermont DEM, every cell outside the lakes"
for f in "$W" "$SRCDIR/tests/data/whitebox_dem_f32_utm18n.tif"; do
    b=$(basename "$f" .tif)
    mkdir -p "$T/oracle"
    t_exit 0 "$ERODE" -q -s model=stream_power -s stream_power.steps=0 --layers flow,water -o "$T/oracle" "$f"
    $PY "$SRCDIR/tests/integration/drainage_oracle.py" "$f" "$T/oracle/$b.flow.tif" "$T/oracle/$b.water.tif" \
        > "$T/why" 2>&1 || t_fail "$b: $(tail -n 1 "$T/why")"
done
t_ok

# The time step, on both 256^2 middles and the recipe's 250,000 years:
# halving dt (500 steps of 500 years) changes the eroded volume by at
# most 2 %.
t_case "stream_power convergence: halving dt changes the eroded volume <= 2 %"
eroded() { # MAP [KEY=VALUE...]: the run's eroded volume, m^3
    f=$1; shift
    mkdir -p "$T/conv"
    set -- $(for kv in "$@"; do printf -- '-s %s ' "$kv"; done)
    "$ERODE" -q --json -r "$R" "$@" --layers height -o "$T/conv" "$f" | jq -e .budget.eroded ||
        echo "no-budget"
}
for m in "$stem" fbm2; do
    a=$(eroded "$T/$m.tif")
    b=$(eroded "$T/$m.tif" stream_power.steps=500 stream_power.dt=500)
    $PY -c 'import sys; a, b = map(float, sys.argv[1:])
print("dt: %+.2f %%" % (100 * (b / a - 1)))
sys.exit(0 if abs(b / a - 1) <= 0.02 else 1)' "$a" "$b" > "$T/why" 2>&1 || t_fail "$m: $(cat "$T/why")"
done
t_ok

# The resolution, on one terrain: a 512^2 fBm map given 5 m cells (2.56
# km), area-averaged to 10 m (256^2) and 20 m (128^2), configs/from-noise.json
# and configs/stream-power.json run on each and compared on the 20 m grid
# (scripts/terrain-metrics --compare).  Their stream-power settings give
# channels a width (stream_power.channel_width = 5 m at 1 km^2, w ~
# A^0.5: a cell lowers at w / dx of its bed's rate), so a hillslope cell's
# incision does not grow as the cells shrink.  Measured, from-noise.json:
# 5 m against 20 m: mean height 4.9 %, HI 0.011, correlation 0.986, RMS
# 3.5 % of the relief; 10 m: 2.0 %, 0.006, 0.990, 2.6 %; stream-power.json:
# 4.5 %, 0.010, 0.995, 2.7 %; 1.5 %, 0.001, 0.994, 2.0 %.  The bounds fail
# without the width: the presets as they were before (every channel a
# cell wide) gave 81 %, 0.15, 0.60, 20 %, and 38 %, 0.097, 0.83, 10 %;
# these settings with channel_width 0 give mean heights 71 % and 63 %
# apart.  Asserted: the issue's goals (5 %, 0.03, 0.95, 5 %).
t_case "configs/from-noise.json and stream-power.json at 5, 10 and 20 m cells: one landscape (mean height, HI, correlation, RMS)"
$PY "$SRCDIR/scripts/make-terrain" "$T/res" 512 31 > /dev/null
gdal_translate -q -a_ullr 0 2560 2560 0 "$T/res.tif" "$T/res5.tif"
gdal_translate -q -r average -outsize 256 256 "$T/res5.tif" "$T/res10.tif"
gdal_translate -q -r average -outsize 128 128 "$T/res5.tif" "$T/res20.tif"
for r in from-noise stream-power; do
    mkdir -p "$T/res-$r"
    for c in 5 10 20; do
        "$ERODE" -q -r "$SRCDIR/configs/$r.json" --layers height -o "$T/res-$r" "$T/res$c.tif" ||
            t_fail "$r at $c m failed"
    done
    for c in 5 10; do
        $PY "$SRCDIR/scripts/terrain-metrics" --json --compare "$T/res-$r/res$c.height.tif" \
            "$T/res-$r/res20.height.tif" --relief-of "$T/res20.tif" > "$T/cmp-$r-$c" || t_fail "compare failed"
    done
done
$PY - "$T" "$T/why" << 'EOF' || t_fail "$(cat "$T/why")"
import json, sys
t = sys.argv[1]
why = []
for r in ("from-noise", "stream-power"):
    for c in (5, 10):
        m = json.load(open("%s/cmp-%s-%d" % (t, r, c)))
        got = {k: round(m[k], 4) for k in ("mean_height_diff", "hypsometric_diff", "correlation",
                                           "rms_over_relief")}
        if not (abs(m["mean_height_diff"]) <= 0.05 and abs(m["hypsometric_diff"]) <= 0.03
                and m["correlation"] >= 0.95 and m["rms_over_relief"] <= 0.05):
            why.append("%s, %d m: %s" % (r, c, got))
open(sys.argv[2], "w").write("; ".join(why))
sys.exit(1 if why else 0)
EOF
t_ok

# --max-memory's figure (--plan prints it) against the peak resident size
# of the whole run on a 512^2 fBm map of a third seed (the first steps hold
# the most closed basins): never below it.  Measured: 23.9 of 28.1 MiB.
# 34-plan-memory.sh checks flat maps and the other models.
t_case "stream_power: the --max-memory figure covers the peak resident size"
if ldd "$ERODE" 2> /dev/null | grep -q libasan; then
    t_skip "a sanitizer build's resident size (shadow memory, quarantine) says nothing of the plain build's"
elif [ -x /usr/bin/time ]; then
    $PY "$SRCDIR/scripts/make-terrain" "$T/fbm3" 512 3 > /dev/null
    mkdir -p "$T/mem"
    need=$("$ERODE" -q --plan --json -r "$R" -s stream_power.steps=5 -o "$T/mem" "$T/fbm3.tif" | jq .memory_bytes)
    /usr/bin/time -f %M -o "$T/rss" "$ERODE" -q -r "$R" -s stream_power.steps=5 -o "$T/mem" "$T/fbm3.tif" ||
        t_fail "the run failed"
    used=$(($(cat "$T/rss") * 1024))
    [ "$used" -le "$need" ] || t_fail "used $used bytes, planned $need"
    t_ok
else
    t_skip "no /usr/bin/time"
fi

# A 64x64 crop and 30 steps for the cases below.
gdal_translate -q -srcwin 40 70 64 64 "$W" "$T/crop.tif"
W=$T/crop.tif
stem=crop
L=height,water,sediment,flow,wear

t_case "stream_power -j1, -j2, -j3, -j8: every layer and the budget byte-identical"
for j in 1 2 3 8; do
    mkdir -p "$T/j$j"
    t_exit 0 "$ERODE" -q --json -r "$R" -s stream_power.steps=30 -j $j --layers $L -o "$T/j$j" "$W"
    jq -c .budget "$T/stdout" > "$T/j$j/budget"
done
for l in height water sediment flow wear; do
    for j in 2 3 8; do
        cmp -s "$T/j1/$stem.$l.tif" "$T/j$j/$stem.$l.tif" || t_fail "$l differs between -j1 and -j$j"
    done
done
for j in 2 3 8; do
    cmp -s "$T/j1/budget" "$T/j$j/budget" || t_fail "the budget differs between -j1 and -j$j"
done
t_ok

t_case "stream_power: the flow layer is the drainage area in m^2, all of it reaching base level, at any vertical scale"
mkdir -p "$T/s1" "$T/s2"
t_exit 0 "$ERODE" -q -r "$R" -s stream_power.steps=0 --layers flow -o "$T/s1" "$W"
t_exit 0 "$ERODE" -q -r "$R" -s stream_power.steps=0 -s terrain.vertical_scale=3 --layers flow -o "$T/s2" "$W"
$PY - "$T/s1/$stem.flow.tif" "$T/s2/$stem.flow.tif" "$T/why" << 'EOF' || t_fail "$(cat "$T/why")"
import sys
import numpy as np
from osgeo import gdal
a, b = (gdal.Open(p).ReadAsArray().astype(np.float64) for p in sys.argv[1:3])
edge = np.concatenate([a[0, :], a[-1, :], a[1:-1, 0], a[1:-1, -1]])
why = []
if not (a == b).all():
    why.append("the flow layer changes with terrain.vertical_scale")
if not abs(edge.sum() - a.size * 100.0) <= 1e-6 * a.size * 100.0 or not a.min() >= 100.0:
    why.append("the edge cells' drainage areas add up to %g m^2, not the map's %g" % (edge.sum(), a.size * 100.0))
open(sys.argv[3], "w").write("; ".join(why))
sys.exit(1 if why else 0)
EOF
t_ok

t_case "stream_power: reference run"
mkdir -p "$T/ref"
t0=$(now_ms)
t_exit 0 "$ERODE" -q -r "$R" -s stream_power.steps=400 --layers $L -o "$T/ref" "$W"
dur=$(($(now_ms) - t0))
t_ok

t_case "stream_power: killed (SIGKILL) at random moments and resumed: outputs byte-identical"
killed_resumed k 3 "-r $R -s stream_power.steps=400 --layers $L"
for l in height water sediment flow wear; do
    cmp -s "$T/ref/$stem.$l.tif" "$T/k/out/$stem.$l.tif" ||
        t_fail "$l differs from the uninterrupted run (after $kills kills)"
done
echo "       ($kills kills)"
t_ok

t_case "an uplift raster: cells under 0 do not rise, the others by its value times the uplift; mei refuses it with one line"
$PY - "$W" "$T/up.tif" << 'EOF'
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1])
d = gdal.GetDriverByName('GTiff').CreateCopy(sys.argv[2], src)
a = np.zeros((src.RasterYSize, src.RasterXSize), np.float32)
a[:, src.RasterXSize // 2:] = 2.0
d.GetRasterBand(1).WriteArray(a); d = None
EOF
mkdir -p "$T/up"
t_exit 0 "$ERODE" -q --json -r "$R" -s stream_power.steps=5 -s stream_power.k=0 -s stream_power.kd=0 \
    -s stream_power.uplift=0.001 -s uplift="$T/up.tif" --layers height -o "$T/up" "$W"
$PY - "$W" "$T/up/$stem.height.tif" "$T/why" << 'EOF' || t_fail "$(cat "$T/why")"
import sys
import numpy as np
from osgeo import gdal
a, b = (gdal.Open(p).ReadAsArray().astype(np.float64) for p in sys.argv[1:3])
h, w = a.shape
d = b - a
inner = d[1:-1, 1:-1]
west, east = inner[:, :w // 2 - 1], inner[:, w // 2 - 1:]
why = []
if not (west == 0).all():
    why.append("cells under an uplift of 0 moved by up to %g m" % abs(west).max())
if not (abs(east - 5 * 1000 * 0.001 * 2) < 1e-3).all():
    why.append("cells under 2 rose by %g..%g m, not 10" % (east.min(), east.max()))
open(sys.argv[3], "w").write("; ".join(why))
sys.exit(1 if why else 0)
EOF
jq -e '.budget.uplifted > 0' "$T/stdout" > /dev/null || t_fail "no uplift in the budget"
mkdir -p "$T/up-mei"
t_exit 2 "$ERODE" -q -s uplift="$T/up.tif" -s mei.steps=2 -o "$T/up-mei" "$W"
t_one_error_line "^erode: .*$stem.tif: uplift: the mei model has no uplift for the map to scale (stream_power uses one)$"
t_empty_dir "$T/up-mei"
t_ok

t_case "stream_power in a tile set: exit 2, the reason named, nothing written"
printf '%s\n' "$W" > "$T/list"
mkdir -p "$T/ts"
t_exit 2 "$ERODE" -q -r "$R" --tile-set "$T/list" --halo 4 -o "$T/ts" "$W"
t_one_error_line "^erode: .*stream_power: tile sets (windows) are not supported"
t_empty_dir "$T/ts"
t_ok

t_case "stream_power --backend vulkan: exit 2, one line, nothing written"
if "$ERODE" --list-devices > /dev/null 2>&1; then
    mkdir -p "$T/vk"
    t_exit 2 "$ERODE" -q -r "$R" --backend vulkan -o "$T/vk" "$W"
    t_one_error_line "^erode: .*$stem.tif: vulkan: the stream_power model runs on the cpu backend only$"
    t_empty_dir "$T/vk"
    t_ok
else
    t_skip "no Vulkan device (CI installs lavapipe)"
fi
