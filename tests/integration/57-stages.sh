#!/bin/sh
# Staged recipes (erode-recipe(5) STAGES): Mei then droplets in one run
# equals the two runs chained through files with Mei's suspended sediment
# added to its heights; the stages' budgets add up to the run's; a run
# killed in stage 2 and resumed gives the straight run's bytes; -j1 and
# -j2 agree; stage errors are exit 2 before any work, one line naming the
# stage; progress names each stage; --backend vulkan and --tile-set take
# the stages they can run and refuse the rest with one line.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
stem=whitebox_dem_f32_utm18n
cat > "$T/two.json" << 'EOF'
{ "comment": "Mei rain, then droplets",
  "seed": 3,
  "stages": [
    { "model": "mei", "mei": { "steps": 20 } },
    { "model": "droplet", "droplet": { "count": 20000, "batch_size": 500 } } ] }
EOF

t_case "Mei then droplets: the two runs chained through files, height + sediment between them"
mkdir -p "$T/st" "$T/c1" "$T/c2"
t_exit 0 "$ERODE" -q --json -r "$T/two.json" -o "$T/st" "$W"
cp "$T/stdout" "$T/st.json"
t_exit 0 "$ERODE" -q -s seed=3 -s mei.steps=20 -o "$T/c1" "$W"
$PY - "$T/c1/$stem" "$T/c1/mid.tif" << 'PYEOF' || t_fail "cannot add height and sediment"
import sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
h = gdal.Open(sys.argv[1] + ".height.tif")
s = gdal.Open(sys.argv[1] + ".sediment.tif").ReadAsArray().astype(np.float32)
b = h.ReadAsArray().astype(np.float32)
out = gdal.GetDriverByName("GTiff").CreateCopy(sys.argv[2], h)
# float32 b + s where s is not 0, as the settling adds it
out.GetRasterBand(1).WriteArray(np.where(s != 0, b + s, b).astype(np.float32))
out = None
PYEOF
t_exit 0 "$ERODE" -q -s seed=3 -s model=droplet -s droplet.count=20000 -s droplet.batch_size=500 \
    -o "$T/c2" "$T/c1/mid.tif"
$PY - "$T/st/$stem" "$T/c2/mid" << 'PYEOF' || t_fail "the staged run differs from the chain"
import sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
for layer in ("height", "sediment", "water"):
    a = gdal.Open(sys.argv[1] + "." + layer + ".tif").ReadAsArray()
    b = gdal.Open(sys.argv[2] + "." + layer + ".tif").ReadAsArray()
    if not np.array_equal(a.view(np.uint32), b.view(np.uint32)):
        print(layer, "differs, max", float(np.abs(a - b).max()))
        sys.exit(1)
PYEOF
t_ok

t_case "--json: a stages array, each stage's budget, adding up to the run's"
$PY - "$T/st.json" << 'PYEOF' || t_fail "$(head -c 400 "$T/st.json")"
import json, sys
o = json.load(open(sys.argv[1]))
st, b = o["stages"], o["budget"]
assert o["model"] == ["mei", "droplet"] and o["backend"] == "cpu", (o["model"], o["backend"])
assert [s["model"] for s in st] == ["mei", "droplet"]
for s in st:
    assert {"model", "eroded", "deposited", "changed_cells"} <= set(s), s
    assert s["eroded"] > 0 and s["changed_cells"] > 0, s
# a sum of two products by the cell area against the product of the sum:
# a few roundings of doubles
close = lambda x, y: abs(x - y) <= 1e-12 * max(abs(x), abs(y), 1)
for k in ("eroded", "deposited"):
    assert close(sum(s[k] for s in st), b[k]), k
for k in ("left_map", "water_added", "water_left"):
    assert close(sum(s["budget"][k] for s in st), b[k]), k
assert st[0]["settled"] > 0 and st[0]["settled"] <= st[0]["deposited"]
assert st[1]["settled"] == 0 and close(st[0]["water_dropped"], b["water_dropped"])
assert b["material_before"] == st[0]["budget"]["material_before"]
assert b["material_after"] == st[1]["budget"]["material_after"]
assert b["relative_error"] < 1e-6, b
PYEOF
t_ok

t_case "provenance: every stage in the outputs' recipe, which reads back as the run's"
d=$(gdalinfo -json "$T/st/$stem.height.tif" | jq -r '.metadata[""].TIFFTAG_IMAGEDESCRIPTION // empty')
echo "$d" | jq -e '[.recipe.stages[].model] == ["mei", "droplet"] and .recipe.stages[0].mei.steps == 20
    and .recipe.stages[1].droplet.count == 20000 and (.recipe | has("model") | not)' > /dev/null ||
    t_fail "provenance: $d"
echo "$d" | jq '.recipe' > "$T/prov.json"
"$ERODE" --print-recipe -r "$T/prov.json" > "$T/prov.printed" && "$ERODE" --print-recipe -r "$T/two.json" |
    cmp -s - "$T/prov.printed" || t_fail "the recorded recipe is not the run's"
t_ok

t_case "-j1 and -j2: the same bytes"
mkdir -p "$T/j1" "$T/j2"
t_exit 0 "$ERODE" -q -j1 -r "$T/two.json" -o "$T/j1" "$W"
t_exit 0 "$ERODE" -q -j2 -r "$T/two.json" -o "$T/j2" "$W"
for l in height sediment water; do
    cmp -s "$T/j1/$stem.$l.tif" "$T/j2/$stem.$l.tif" || t_fail "$l differs"
    cmp -s "$T/j1/$stem.$l.tif" "$T/st/$stem.$l.tif" || t_fail "$l differs from the first run"
done
t_ok

# Killed (SIGKILL) once the frame of boundary 30 exists (stage 2: Mei's 20
# steps are boundaries 0-20, the droplets' 40 batches 20-60), resumed from
# its checkpoint (saved every boundary) on the other thread count: the
# straight run's bytes and budget.  A run that got past stage 2 before the
# kill proves nothing: again, up to three times.
t_case "killed in stage 2, resumed: the straight run's bytes"
tries=0 inside=0
while [ $tries -lt 3 ] && [ $inside -eq 0 ]; do
    tries=$((tries + 1))
    d=$T/kill$tries
    mkdir -p "$d/out" "$d/fr"
    "$ERODE" -q -j2 -r "$T/two.json" --checkpoint "$d/c.ckpt" --checkpoint-every 1 \
        --frames "$d/fr" --frame-every 1 -o "$d/out" "$W" 2> "$d/err" &
    pid=$!
    n=0
    while [ ! -e "$d/fr/$stem.frame-000030.png" ] && [ $n -lt 2000 ] && kill -0 $pid 2> /dev/null; do
        sleep 0.01
        n=$((n + 1))
    done
    kill -KILL $pid 2> /dev/null
    wait $pid 2> /dev/null
    [ -f "$d/c.ckpt" ] || continue
    t_exit 0 "$ERODE" -q -j1 --json -r "$T/two.json" --checkpoint "$d/c.ckpt" --resume "$d/c.ckpt" \
        -o "$d/out" "$W"
    at=$(jq -r '.resumed_at' "$T/stdout")
    [ "$at" -gt 20 ] && [ "$at" -lt 60 ] && inside=1
    for l in height sediment water; do
        cmp -s "$T/st/$stem.$l.tif" "$d/out/$stem.$l.tif" || t_fail "$l differs (resumed at $at)"
    done
    jq -c '[.budget, (.stages | map(del(.seconds)))]' "$T/stdout" > "$d/resumed"
    jq -c '[.budget, (.stages | map(del(.seconds)))]' "$T/st.json" > "$d/straight"
    cmp -s "$d/resumed" "$d/straight" || t_fail "the budget differs (resumed at $at)"
done
[ $inside -eq 1 ] || t_fail "no kill landed in stage 2 in $tries tries: the test proves nothing"
t_ok

t_case "stage errors: exit 2 before any work, one line naming the stage or the key"
mkdir -p "$T/bad"
t_exit 2 "$ERODE" -q -r "$T/two.json" -s stages.0.mei.ke=60 -s stages.0.mei.dt=0.02 -o "$T/bad" "$W"
t_one_error_line "$stem.tif: .*two.json: stages\[0\]\.mei\.ke: "
t_exit 2 "$ERODE" -q -r "$T/two.json" -s stages.1.droplet.radis=2 -o "$T/bad" "$W"
t_one_error_line "^erode: -s stages.1.droplet.radis: unknown key, did you mean 'stages.1.droplet.radius'?$"
t_exit 2 "$ERODE" -q -r "$T/two.json" -s mei.steps=5 -o "$T/bad" "$W"
t_one_error_line "^erode: -s mei.steps: a model's section beside \"stages\""
printf '{"model": "mei", "stages": [{"model": "mei"}]}' > "$T/beside.json"
t_exit 2 "$ERODE" -q -r "$T/beside.json" -o "$T/bad" "$W"
t_one_error_line "beside.json: model: beside \"stages\": each stage names its own model$"
t_empty_dir "$T/bad"
t_ok

t_case "--progress=bar: one bar a stage, \"stage 1/2 mei\" then \"stage 2/2 droplet\""
mkdir -p "$T/pg"
t_exit 0 "$ERODE" --progress=bar -r "$T/two.json" --layers height -o "$T/pg" "$W"
got=$(tr '\r' '\n' < "$T/stderr" | sed -n 's/.*: \(stage [0-9]*\/[0-9]* [a-z]*\) \[.*/\1/p' | uniq | tr '\n' ',')
[ "$got" = "stage 1/2 mei,stage 2/2 droplet," ] || t_fail "bars: $got"
t_ok

t_case "--tile-set: stages that run in tiles run, an SPH or stream-power stage is refused with one line"
if have gdal_translate; then
    "$SRCDIR/scripts/cut-tiles" "$W" 2 "$T/tiles" > "$T/tiles.list"
    mkdir -p "$T/ts"
    t_exit 0 "$ERODE" -q --tile-set "$T/tiles.list" --halo 8 -r "$T/two.json" \
        -s stages.1.droplet.height_unit=1000 -o "$T/ts" "$(head -n 1 "$T/tiles.list")"
    t_exit 2 "$ERODE" -q --tile-set "$T/tiles.list" --halo 8 \
        -s 'stages=[{"model": "mei"}, {"model": "sph"}]' -o "$T/ts" "$(sed -n 2p "$T/tiles.list")"
    t_one_error_line "stages\[1\]: sph: tile sets"
    t_exit 2 "$ERODE" -q --tile-set "$T/tiles.list" --halo 8 \
        -s 'stages=[{"model": "stream_power"}, {"model": "mei"}]' -o "$T/ts" "$(sed -n 2p "$T/tiles.list")"
    t_one_error_line "stages\[0\]: stream_power: tile sets"
    t_ok
else
    t_skip "gdal_translate not installed"
fi

t_case "--backend vulkan: the stages with a Vulkan path on the device, SPH on the CPU; none: exit 2"
if "$ERODE" --list-devices > /dev/null 2>&1; then
    mkdir -p "$T/vk"
    t_exit 0 "$ERODE" -q --json --backend vulkan -r "$T/two.json" -s 'stages=[{"model": "sph",
        "sph": {"steps": 2}}, {"model": "droplet", "droplet": {"count": 20000, "batch_size": 500}}]' \
        -o "$T/vk" "$W"
    [ "$(jq -r '.backend' "$T/stdout")" = "cpu,vulkan" ] || t_fail "backends: $(jq -c '[.backend, [.stages[].backend]]' "$T/stdout")"
    # (the SPH stage without water says so in a warning line first)
    t_exit 2 "$ERODE" -q --backend vulkan -s 'stages=[{"model": "sph"}]' -o "$T/vk" "$W"
    tail -n 1 "$T/stderr" | grep -q "no stage of the recipe has a Vulkan path" ||
        t_fail "$(cat "$T/stderr")"
    [ "$(grep -vc warning "$T/stderr")" -eq 1 ] || t_fail "$(cat "$T/stderr")"
    t_ok
else
    t_skip "no Vulkan device"
fi
