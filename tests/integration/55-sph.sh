#!/bin/sh
# The SPH model from the command line: springs on a real DEM
# (tests/data/fixture/sph-springs.json, placed for the Vermont DEM; the
# shipped configs, made for any map, are 15-configs.sh's and
# 56-any-map.sh's) exit 0, GDAL reads every layer with the input's
# georeferencing, the --json budget closes and something eroded; --frames draws frames
# without changing the outputs; runs killed with SIGKILL and resumed from
# their checkpoints give the bytes of an uninterrupted run; the Vulkan
# backend and tile sets refuse it with one line (exit 2) and write nothing;
# configs/sph-lake.json, its spacing "auto", runs a lake on a steep 30 m
# DEM whose lake needs more particles at the default spacing than it allows.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
stem=whitebox_dem_f32_utm18n
R=$DATA/fixture/sph-springs.json
O=$PY' '$SRCDIR/tests/integration/gdal_oracle.py

t_case "sph on a DEM: exit 0, layers GDAL reads, budget closed, erosion"
mkdir -p "$T/out"
t_exit 0 "$ERODE" -q --json -r "$R" -s sph.steps=20 -o "$T/out" "$W"
jq -e '.status == "ok" and .model == ["sph"] and .steps == 20 and .budget.eroded > 0
       and .budget.water_added > 0 and .budget.relative_error < 1e-9' "$T/stdout" > /dev/null ||
    t_fail "json: $(head -c 400 "$T/stdout")"
if have gdalinfo && $PY -c 'import osgeo.gdal' 2> /dev/null; then
    for l in height sediment water; do
        # shellcheck disable=SC2086
        $O same-georef "$W" "$T/out/$stem.$l.tif" > "$T/why" || t_fail "$l: $(cat "$T/why")"
    done
else
    t_fail "python3-gdal missing"
fi
t_ok

t_case "sph --backend vulkan: exit 2, one line, nothing written"
if "$ERODE" --list-devices > /dev/null 2>&1; then
    mkdir -p "$T/vk"
    t_exit 2 "$ERODE" -q -r "$R" -s sph.steps=2 --backend vulkan -o "$T/vk" "$W"
    t_one_error_line "^erode: .*$stem.tif: vulkan: the sph model runs on the cpu backend only$"
    t_empty_dir "$T/vk"
    t_ok
else
    t_skip "no Vulkan device (CI installs lavapipe)"
fi

t_case "sph --frames: the start, every 2nd step and the end; outputs unchanged"
d=$T/frames
mkdir -p "$d/plain" "$d/framed" "$d/f"
t_exit 0 "$ERODE" -q -r "$R" -s sph.steps=5 -o "$d/plain" "$W"
t_exit 0 "$ERODE" -q -r "$R" -s sph.steps=5 --json --frames "$d/f" --frame-every 2 -o "$d/framed" "$W"
[ "$(jq .frames "$T/stdout")" = 4 ] || t_fail "--json says $(jq .frames "$T/stdout") frames, not 4"
want=$(for i in 0 1 2 3; do printf '%s.frame-%06d.png\n' $stem $i; done)
[ "$(ls "$d/f")" = "$want" ] || t_fail "frames: got [$(ls "$d/f" | tr '\n' ' ')]"
for l in height sediment water; do
    cmp -s "$d/plain/$stem.$l.tif" "$d/framed/$stem.$l.tif" || t_fail "$l differs with --frames"
done
cmp -s "$d/f/$stem.frame-000000.png" "$d/f/$stem.frame-000003.png" && t_fail "the first and last frames are the same picture"
t_ok

t_case "sph: reference run"
mkdir -p "$T/ref"
t0=$(now_ms)
t_exit 0 "$ERODE" -q -r "$R" -s sph.steps=20 --json -o "$T/ref" "$W"
dur=$(($(now_ms) - t0))
t_ok

t_case "sph: killed (SIGKILL) at random moments and resumed: outputs byte-identical"
killed_resumed k 2 "-r $R -s sph.steps=20"
for l in height sediment water; do
    cmp -s "$T/ref/$stem.$l.tif" "$T/k/out/$stem.$l.tif" ||
        t_fail "$l differs from the uninterrupted run (after $kills kills)"
done
echo "       ($kills kills)"
t_ok

t_case "sph in a tile set: exit 2, the reason named"
printf '%s\n' "$W" > "$T/list"
mkdir -p "$T/ts"
t_exit 2 "$ERODE" -q -r "$R" -s sph.steps=2 --tile-set "$T/list" --halo 4 -o "$T/ts" "$W"
t_one_error_line "sph: tile sets (windows) are not supported"
t_empty_dir "$T/ts"
t_ok

t_case "sph.sound_speed below 10 sqrt(g H) for the springs' drop: exit 2, one line, nothing written"
mkdir -p "$T/slow"
t_exit 2 "$ERODE" -q -r "$R" -s sph.sound_speed=0.001 -o "$T/slow" "$W"
t_one_error_line "^erode: .*$stem.tif: .*sph-springs.json: sph.sound_speed: 0.001 is below 27.2 = 10 sqrt(g H)"
t_empty_dir "$T/slow"
t_ok

# A checkpoint of the springs recipe after a step or two, in $T/ck/$stem.ckpt:
# a run of many steps saving one every step, killed once the first is in
# place (it is renamed into place whole).
sph_checkpoint() {
    rm -rf "$T/ck" "$T/ck-out"; mkdir -p "$T/ck" "$T/ck-out"
    "$ERODE" -q -r "$R" -s sph.steps=100000 --checkpoint "$T/ck/$stem.ckpt" --checkpoint-every 1 \
        -o "$T/ck-out" "$W" > /dev/null 2>&1 &
    pid=$! i=0
    while [ ! -f "$T/ck/$stem.ckpt" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
    kill -KILL $pid 2> /dev/null
    wait $pid 2> /dev/null
    [ -f "$T/ck/$stem.ckpt" ] || t_fail "no checkpoint after 60 s"
}
# ck_edit FILE INDEX FIELD VALUE: sets field FIELD (x y z vx vy vz c, or n:
# the particle count) of particle INDEX in the model section of checkpoint
# FILE (io/checkpoint.h) and its checksum, as a crafted file would.
ck_edit() {
    $PY - "$@" << 'PYEOF'
import struct, sys
path, index, field, value = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
b = bytearray(open(path, 'rb').read())
def fnv(data, h=0xcbf29ce484222325):
    for c in data:
        h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
    return h
w, h = struct.unpack_from('<II', b, 32)
n_arrays, mask = struct.unpack_from('<II', b, 40)
sec = 240 + bin(mask & ((1 << n_arrays) - 1)).count('1') * w * h * 4 + 8
names = ['x', 'y', 'z', 'vx', 'vy', 'vz', 'c']
if field == 'n':
    struct.pack_into('<Q', b, sec, int(value))
else:
    struct.pack_into('<d', b, sec + 16 + 8 * (7 * index + names.index(field)), value)
struct.pack_into('<Q', b, len(b) - 8, fnv(b[sec:len(b) - 8]))
open(path, 'wb').write(b)
PYEOF
}

# sph_interrupt OUTDIR [erode options]: runs $R for 100000 steps with a
# checkpoint every step and --json, SIGTERM once $T/int/$stem.ckpt changes.
sph_interrupt() {
    out=$1; shift
    mkdir -p "$out"
    before=$(cksum "$T/int/$stem.ckpt" 2> /dev/null)
    "$ERODE" -q --json -r "$R" -s sph.steps=100000 --checkpoint "$T/int/$stem.ckpt" \
        --checkpoint-every 1 "$@" -o "$out" "$W" > "$T/int.json" 2> "$T/stderr" &
    pid=$! i=0
    while [ "$(cksum "$T/int/$stem.ckpt" 2> /dev/null)" = "$before" ] && [ $i -lt 1200 ]; do
        sleep 0.05; i=$((i + 1))
    done
    kill -TERM $pid 2> /dev/null
    wait $pid
}

t_case "sph interrupted, then resumed and interrupted again: each says the step it stopped at (steps, not batches), --json counts steps"
rm -rf "$T/int"; mkdir -p "$T/int"
sph_interrupt "$T/int-a"
[ $? -eq 143 ] || t_fail "the first run did not end by SIGTERM: $(cat "$T/stderr")"
t_one_error_line "^erode: .*$stem.tif: interrupted at step [0-9]*; state saved in '.*$stem.ckpt' (continue with --resume)$"
first=$(sed -n 's/.*interrupted at step \([0-9]*\);.*/\1/p' "$T/stderr")
grep -q '"model":\["sph"\]' "$T/int.json" && grep -q '"steps":' "$T/int.json" && ! grep -q '"droplets"' "$T/int.json" ||
    t_fail "--json of the interrupted run: $(cat "$T/int.json")"
sph_interrupt "$T/int-b" --resume "$T/int/$stem.ckpt"
t_one_error_line "^erode: .*$stem.tif: interrupted at step [0-9]*; state saved in"
second=$(sed -n 's/.*interrupted at step \([0-9]*\);.*/\1/p' "$T/stderr")
[ -n "$first" ] && [ -n "$second" ] && [ "$second" -gt "$first" ] ||
    t_fail "resumed at step $first, interrupted at step $second"
grep -q "\"resumed_at\":$first," "$T/int.json" || t_fail "--json of the resumed run: $(cat "$T/int.json")"
t_ok

t_case "sph resumed with a particle past the speed the sound speed allows: exit 1, one line naming the input"
sph_checkpoint
cp "$T/ck/$stem.ckpt" "$T/fast.ckpt"
ck_edit "$T/fast.ckpt" 0 vx 1000
mkdir -p "$T/fast"
t_exit 1 "$ERODE" -q -r "$R" -s sph.steps=100000 --resume "$T/fast.ckpt" -o "$T/fast" "$W"
t_one_error_line "^erode: .*$stem.tif: sph: a particle reached .* m/s at step [0-9]*, more than 0.2 times sph.sound_speed"
t_empty_dir "$T/fast"
t_ok

t_case "sph resumed from crafted checkpoints (a position not finite or off the map, a speed not finite, a load below 0, a count the file does not hold): exit 2, one line, nothing written"
for edit in "0 x nan" "3 y 1e9" "1 vz inf" "2 c -1" "0 n 1000000"; do
    cp "$T/ck/$stem.ckpt" "$T/bad.ckpt"
    # shellcheck disable=SC2086
    ck_edit "$T/bad.ckpt" $edit
    rm -rf "$T/bad"; mkdir -p "$T/bad"
    t_exit 2 "$ERODE" -q -r "$R" -s sph.steps=100000 --resume "$T/bad.ckpt" -o "$T/bad" "$W"
    case $edit in
    *" n "*) t_one_error_line "^erode: .*$stem.tif: --resume: the state's particles .1000000. or source slots .65. do not fit this run$" ;;
    *) t_one_error_line "^erode: .*$stem.tif: --resume: the state's particle [0-9]* (at .*) is not one the run can hold" ;;
    esac
    t_empty_dir "$T/bad"
done
t_ok

t_case "sph.fill_level needing more than sph.max_particles: exit 2 before any work, one line, nothing written"
L=$DATA/fixture/sph-lake.json
mkdir -p "$T/full"
t_exit 2 "$ERODE" -q -r "$L" -s sph.max_particles=1000 --checkpoint "$T/full/c.ckpt" -o "$T/full" "$W"
t_one_error_line "^erode: .*$stem.tif: .*sph-lake.json: sph.fill_level: 330 m needs [0-9]* particles, more than sph.max_particles = 1000$"
t_empty_dir "$T/full"
t_ok

t_case "--max-memory counts sph.max_particles: exit 2, one line, nothing written"
# The springs recipe on whitebox: 7.5 MiB for the process, 127 bytes a
# cell (with the boundary particles' heights) and 1,884 a particle, before
# the map is read: 200,000 particles need 376,800,000 bytes more
mkdir -p "$T/mem"
t_exit 2 "$ERODE" -q -r "$R" -s sph.steps=1 --max-memory 300M -o "$T/mem" "$W"
t_one_error_line "^erode: .*$stem.tif: a 237x188 run needs 372.2 MiB (359.3 MiB of it for 200000 particles), more than --max-memory (300.0 MiB)$"
t_empty_dir "$T/mem"
t_exit 0 "$ERODE" -q -r "$R" -s sph.steps=1 --max-memory 400M --layers height -o "$T/mem" "$W"
t_ok

t_case "sph.fill_level below the particle lattice and no source: exit 0, the outputs, one warning line"
mkdir -p "$T/dry"
t_exit 0 "$ERODE" -q -r "$L" -s sph.fill_level=100 -s sph.steps=2 -o "$T/dry" "$W"
t_one_error_line "^erode: .*$stem.tif: warning: sph.fill_level: below the particle lattice (one spacing above the ground) on every cell, and no source adds water: there is no water and the run changes nothing$"
[ -f "$T/dry/$stem.height.tif" ] || t_fail "no height output"
t_ok

t_case "configs/sph-lake.json (sph.spacing \"auto\") on a steep 256x256 crop of a 30 m DEM and on the Vermont DEM: exit 0, the spacing of erode-recipe(5)'s formula, its particles within sph.max_particles, the budget closed"
# The steep DEM: Mt Rainier's foothills from the Puget Sound PNG at 0.1 m a
# unit (130-1768 m) on 30 m cells instead of its 160 m
# (tests/data/ATTRIBUTION.md), 5.3 times as steep.  Its lake (the 40 % quantile, 581 m)
# needs 1.32 million particles at half a cell: refused at 0.5, it runs at
# 0.96 cells.  The Vermont lake fits at 0.5 (94,000 particles): auto is 0.5.
if have gdal_translate && $PY -c 'import osgeo.gdal, numpy' 2> /dev/null; then
    gdal_translate -q -srcwin 450 700 256 256 -ot Float32 -scale 0 65535 0 6553.5 \
        -a_srs EPSG:32610 -a_ullr 500000 5200000 507680 5192320 "$DATA/puget_sound_1k_u16.png" "$T/steep.tif"
    C=$SRCDIR/configs/sph-lake.json
    mkdir -p "$T/lake-ref"
    t_exit 2 "$ERODE" -q -r "$C" -s sph.spacing=0.5 -s sph.steps=1 -o "$T/lake-ref" "$T/steep.tif"
    t_one_error_line "^erode: .*steep.tif: .*sph-lake.json: sph.fill_quantile: 0.4 (580.6 m) needs [0-9]* particles, more than sph.max_particles = 200000$"
    # auto.py DEM JSON RECIPE: the spacing s of the formula (raised by
    # hundredths while the particles the budget's water_added makes at s,
    # water / (s L)^3, are not a whole number) and those particles
    cat > "$T/auto.py" << 'EOF'
import json, math, sys
import numpy as np
from osgeo import gdal
ds = gdal.Open(sys.argv[1]); z = ds.ReadAsArray().astype(np.float64)
L = abs(ds.GetGeoTransform()[1])
o = json.load(open(sys.argv[2])); sph = json.load(open(sys.argv[3]))["sph"]
nd = ds.GetRasterBand(1).GetNoDataValue()
z = z[z != nd] if nd is not None else z.ravel()
level = np.quantile(z, sph["fill_quantile"])
vol = np.maximum(level / L - z / L, 0).sum()
N = sph["max_particles"]
k = max(50, math.ceil(100 * (vol / N) ** (1 / 3)))
b = o["budget"]
# relative to the material moved (erode(1) JSON OUTPUT): 7.7e-9 measured on
# the steep crop, the rounding of its 4e10 m^3 of terrain
assert o["status"] == "ok" and b["water_added"] > 0 and b["relative_error"] < 1e-7, o
for k in range(k, min(k + 10, 400) + 1):
    n = b["water_added"] / (k / 100 * L) ** 3
    if abs(n - round(n)) < 1e-6 * n:
        break
else:
    sys.exit("water_added %.17g is no whole number of particles at %g cells or a little more" % (b["water_added"], k / 100))
assert round(n) <= N, "%d particles, more than %d" % (round(n), N)
print("%g %d" % (k / 100, round(n)))
EOF
    for m in steep vermont; do
        f=$T/steep.tif
        [ $m = vermont ] && f=$W
        mkdir -p "$T/lake-$m"
        t_exit 0 "$ERODE" -q --json -r "$C" -s sph.steps=1 -o "$T/lake-$m" "$f"
        [ -s "$T/stderr" ] && t_fail "$m: stderr: $(head -c 300 "$T/stderr")"
        got=$($PY "$T/auto.py" "$f" "$T/stdout" "$C" 2>&1) || { t_fail "$m: $got"; continue; }
        echo "       ($m: spacing $got particles)"
        case $m in
        steep) [ "${got% *}" = 0.96 ] || t_fail "steep: spacing ${got% *}, not 0.96" ;;
        vermont) [ "${got% *}" = 0.5 ] || t_fail "vermont: spacing ${got% *}, not 0.5" ;;
        esac
    done
    t_ok
else
    t_skip "gdal_translate or python3-gdal missing"
fi
