#!/bin/sh
# --json against its schema, man/erode-json.schema.json (checked by
# json_schema.py, and by python3-jsonschema too where installed): the
# lines of every model, of a staged run with each stage's seconds, of a
# failed input, of a tile set's halo run and of erode stitch all
# validate, and a line with a key the schema does not define fails.
# "model" is an array whatever the number of models.  relative_error is
# measured against the material moved: every model reports under 1e-8 on
# a map of zeros and on the bundled DEM moved down to straddle sea level.  The stream-power budget closes at an extreme but
# accepted kd dt / dx^2.
. "$(dirname "$0")/lib.sh"

SCHEMA=$SRCDIR/man/erode-json.schema.json
W=$DATA/whitebox_dem_f32_utm18n.tif
mkdir -p "$T/out"
: > "$T/lines"

# valid FILE: every line of FILE validates against the schema.
valid() {
    $PY "$SRCDIR/tests/integration/json_schema.py" "$SCHEMA" "$1" > "$T/why" ||
        t_fail "$(head -c 600 "$T/why")"
}
# run WANT ARGS...: erode -q --json ARGS, exit WANT, its line kept in lines.
run() {
    want=$1; shift
    t_exit "$want" "$ERODE" -q --json -o "$T/out" "$@"
    cat "$T/stdout" >> "$T/lines"
    valid "$T/stdout"
}

t_case "one line of each model validates; model is a one-name array"
run 0 -s mei.steps=5 "$W"
jq -e '.model == ["mei"] and .steps == 5' "$T/stdout" > /dev/null || t_fail "mei: $(cat "$T/stdout")"
run 0 -r "$SRCDIR/configs/droplet.json" -s droplet.per_cell=0.05 "$W"
jq -e '.model == ["droplet"] and .droplets > 0' \
    "$T/stdout" > /dev/null || t_fail "droplet: $(cat "$T/stdout")"
run 0 -r "$SRCDIR/configs/sph.json" -s sph.steps=2 "$W"
jq -e '.model == ["sph"] and .budget.water_added > 0' "$T/stdout" > /dev/null ||
    t_fail "sph: $(cat "$T/stdout")"
run 0 -r "$SRCDIR/configs/stream-power.json" -s stream_power.steps=3 --layers height,flow "$W"
jq -e '.model == ["stream_power"] and .budget.uplifted > 0 and .outputs.flow' "$T/stdout" \
    > /dev/null || t_fail "stream_power: $(cat "$T/stdout")"
t_ok

t_case "a staged run validates: model the stages' array, each stage with its seconds"
run 0 -s 'stages=[{"model":"mei","mei":{"steps":5}},{"model":"droplet","droplet":{"per_cell":0.05}}]' "$W"
jq -e '.model == ["mei", "droplet"] and (.stages | length) == 2
       and ([.stages[].model] == .model)
       and all(.stages[]; .seconds >= 0)
       and ([.stages[].seconds] | add) <= .timing.model + 1e-3
       and (has("steps") | not)' "$T/stdout" > /dev/null ||
    t_fail "$(cat "$T/stdout")"
t_ok

t_case "a failed input's line validates: status error, its exit and error"
run 2 -s mei.steps=1 "$T/absent.tif"
jq -e '.status == "error" and .exit == 2 and (.error | length) > 0 and .outputs == {}' \
    "$T/stdout" > /dev/null || t_fail "$(cat "$T/stdout")"
t_ok

t_case "a key the schema does not define fails validation, and a string model"
sed -n 1p "$T/lines" | jq -c '.budget.water_lost = 0' > "$T/extra"
sed -n 1p "$T/lines" | jq -c '.model = "mei"' >> "$T/extra"
$PY "$SRCDIR/tests/integration/json_schema.py" "$SCHEMA" "$T/extra" > "$T/why" &&
    t_fail "validated: $(cat "$T/extra")"
[ "$(wc -l < "$T/why")" -eq 2 ] || t_fail "expected two failing lines: $(cat "$T/why")"
t_ok

if have gdal_translate && $PY -c 'from osgeo import gdal' 2> /dev/null; then
    t_case "a tile set's halo run and erode stitch validate"
    "$SRCDIR/scripts/cut-tiles" "$W" 2 "$T/tiles" > "$T/tiles.list"
    mkdir -p "$T/ts"
    for tile in $(cat "$T/tiles.list"); do
        t_exit 0 "$ERODE" -q --json --tile-set "$T/tiles.list" --halo 4 -s mei.steps=2 -o "$T/ts" "$tile"
        valid "$T/stdout"
    done
    t_exit 0 "$ERODE" stitch -q --json --tile-set "$T/tiles.list" -o "$T/ts"
    valid "$T/stdout"
    jq -e -s 'length == 4 and all(.[]; .model == ["stitch"] and .status == "ok")' "$T/stdout" \
        > /dev/null || t_fail "$(cat "$T/stdout")"
    t_ok

    t_case "relative_error is relative to the material moved: a map of zeros, a map at sea level"
    $PY - "$W" "$T/zero.tif" "$T/sea.tif" << 'EOF'
import sys
from osgeo import gdal
src = gdal.Open(sys.argv[1])
z = src.GetRasterBand(1).ReadAsArray().astype("float32")
for path, v in ((sys.argv[2], z * 0), (sys.argv[3], z - z.mean())):
    d = gdal.GetDriverByName("GTiff").CreateCopy(path, src)
    d.GetRasterBand(1).WriteArray(v)
    d = None
EOF
    # Divided by the signed sum, a map of zeros reported 1.7e296 (stream
    # power) and 1.6e285 (SPH) and the map at sea level 4.5e-3 (droplets).
    # What is left is the float32 rounding of the final heights: 44,556
    # cells of 90 m at up to 300 m from sea level (half an ulp 1.5e-5 m)
    # sum to about 15 m^3 at random, 7e-8 of the 2.3e8 m^3 stream-power.json
    # moves in 5 steps here (measured 1.1e-8; the preset before moved 25
    # times as much, 1.2e-9), so the bound is 1e-7.
    for m in zero sea; do
        for r in default droplet sph stream-power; do
            t_exit 0 "$ERODE" -q --json -r "$SRCDIR/configs/$r.json" -s mei.steps=20 -s sph.steps=3 \
                -s stream_power.steps=5 -o "$T/out" "$T/$m.tif"
            valid "$T/stdout"
            jq -e '.budget.relative_error < 1e-7' "$T/stdout" > /dev/null ||
                t_fail "$r on $m: $(jq -c .budget "$T/stdout")"
        done
    done
    t_ok
else
    t_case "tile sets, stitch and sea-level maps"; t_skip "needs gdal-bin and python3-gdal"
fi

# Counted as theta (h - h_base) a face, the diffusion's flux into base
# level would round in proportion to theta: 3.8e-6 of the terrain's volume
# here, a relative_error of 1.6e-6; counted as what the lines lost, 1.3e-10
# and 3e-11 (the final heights' float rounding).
t_case "stream power at the largest kd dt / dx^2 (kd 1e6 m^2/yr, dt 1e9 yr, 90 m cells): exit 0, the budget closed"
run 0 -r "$SRCDIR/configs/stream-power.json" -s stream_power.steps=6 -s stream_power.kd=1e6 \
    -s stream_power.dt=1e9 -s stream_power.uplift=0 "$W"
jq -e '.status == "ok" and .budget.relative_error < 1e-9
       and ((.budget.material_before + .budget.uplifted - .budget.left_map - .budget.material_after)
            | fabs) < 1e-8 * .budget.material_before' "$T/stdout" > /dev/null ||
    t_fail "$(jq -c .budget "$T/stdout")"
t_ok

t_case "--plan --json lines validate: each model's work (droplets: the count, in boundaries batches), a staged run, the outputs it would write"
for r in droplet sph stream-power from-noise; do
    t_exit 0 "$ERODE" -q --plan --json -r "$SRCDIR/configs/$r.json" -f r16 \
        --preview "$T/out/{stem}.png" --checkpoint "$T/out/{stem}.ckpt" -o "$T/out" "$W"
    valid "$T/stdout"
    cat "$T/stdout" >> "$T/plans"
done
t_exit 0 "$ERODE" -q --plan --json -s mei.steps=7 -o "$T/out" "$W"
valid "$T/stdout"
jq -e '.plan and .stages[0].steps == 7 and .stages[0].boundaries == 7' "$T/stdout" > /dev/null ||
    t_fail "mei: $(cat "$T/stdout")"
jq -se '.[0].stages[0] | .droplets > .boundaries and .unit == "batch"' "$T/plans" > /dev/null ||
    t_fail "droplet: $(head -n 1 "$T/plans")"
jq -se '.[3].stages | length == 2' "$T/plans" > /dev/null || t_fail "from-noise: $(tail -n 1 "$T/plans")"
ls "$T/out" | grep -q 'ckpt\|png' && t_fail "--plan wrote $(ls "$T/out")"
t_ok
