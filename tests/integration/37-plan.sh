#!/bin/sh
# The run plan: every cross-key recipe error and every misfit
# between the recipe, the input and a --resume state is found before any
# work, on every backend: exit 2, one line "erode: INPUT: RECIPE: KEY: what",
# nothing written (no layer, no checkpoint, no frame).
. "$(dirname "$0")/lib.sh"

W=$DATA/whitebox_dem_f32_utm18n.tif
stem=whitebox_dem_f32_utm18n
backends=cpu
if "$ERODE" --list-devices > /dev/null 2>&1; then
    backends="cpu vulkan"
else
    t_case "plan errors on --backend vulkan"; t_skip "no Vulkan device (CI installs lavapipe)"
fi

# name | expected text | recipe options
cases='ke * dt above 1|recipe: mei.ke: ke \* dt = 2|-s mei.ke=100 -s mei.dt=0.02
a river source off the map|recipe: mei.sources\[0\]: (5000, 5000) radius 3 lies outside|-s mei.sources=[{"x":5000,"y":5000,"radius":3,"rate":0.01}]
a second source off the map|recipe: mei.sources\[1\]:|-s mei.sources=[{"x":5,"y":5,"rate":0.01},{"x":-40,"y":5,"rate":0.01}]
a river source off the map, its new name|recipe: river_sources\[0\]: (-9, 5) radius 2 lies outside the 237x188 map|-s river_sources=[{"x":-9,"y":5,"radius":2,"rate":0.01}]
a fraction outside [0, 1]|recipe: river_sources\[1\]: (0.5, 1.5) is not a fraction of the map|-s river_sources=[{"at":"peaks","rate":0.01},{"x":0.5,"y":1.5,"coords":"fraction","rate":0.01}]
an unstable time step under cfl "error"|recipe: mei.dt: .*stable for dt <=|-s mei.cfl="error" -s mei.dt=10
more sub-steps than max_substeps|recipe: mei.max_substeps: .*needs [0-9]* sub-steps|-s mei.dt=10 -s mei.max_substeps=2
droplets per cell past the limit of droplet.count under a tiny reference cell|recipe: droplet.reference_cell_size: 0.001 m on 90 m cells makes 2.43e+09 droplets a cell, .* more than 1e12|-s model=droplet -s droplet.reference_cell_size=0.001
a reference cell whose ratio to the cells converts to no finite key|recipe: droplet.reference_cell_size: 1e-310 m against 90 m cells|-s model=droplet -s droplet.reference_cell_size=1e-310'

for be in $backends; do
    printf '%s\n' "$cases" | while IFS='|' read -r c_name c_want c_opts; do
        t_case "$be: $c_name: exit 2 before any work, nothing written"
        d=$T/$be-out
        rm -rf "$d" "$T/ck"; mkdir -p "$d" "$T/ck"
        # shellcheck disable=SC2086
        t_exit 2 "$ERODE" -q --backend "$be" -s mei.steps=3 $c_opts --checkpoint "$T/ck/c.ckpt" \
            --preview "$d/p.png" -o "$d" "$W"
        t_one_error_line "^erode: .*$stem.tif: $c_want"
        t_empty_dir "$d"
        t_empty_dir "$T/ck"
        t_ok
    done
done

t_case "river_sources and mei.sources both given: exit 2, one line naming both, nothing written"
printf '{"river_sources": [{"at": "peaks", "rate": 0.01}], "mei": {"sources": [{"x": 3, "y": 4, "rate": 0.01}]}}\n' > "$T/both.json"
mkdir -p "$T/both"
t_exit 2 "$ERODE" -q -r "$T/both.json" -o "$T/both" "$W"
t_one_error_line "^erode: $T/both.json: river_sources: given twice, as river_sources and as mei.sources (its old spelling): keep one$"
t_empty_dir "$T/both"
t_ok

t_case "peaks the map cannot hold: exit 0, the outputs, one warning line naming the entry"
mkdir -p "$T/fewer"
t_exit 0 "$ERODE" -q -s mei.steps=2 -s 'river_sources=[{"at":"peaks","count":40,"spacing":50,"rate":0.01}]' \
    --layers height -o "$T/fewer" "$W"
t_one_error_line "^erode: .*$stem.tif: warning: river_sources\[0\]: found [1-9] of the 40 peaks asked for (cells at least 50 cells apart and from the map's edges and nodata)$"
[ -f "$T/fewer/$stem.height.tif" ] || t_fail "no height output"
t_ok

t_case "river_sources for a model without them (droplet, stream_power, a stage of one): exit 0, one warning line, the run's bytes unchanged"
for m in droplet stream_power; do
    mkdir -p "$T/rs-$m/with" "$T/rs-$m/without"
    # raw float32 layers: a GeoTIFF's provenance names the recipe
    set -- -q -s model=$m -s droplet.count=2000 -s stream_power.steps=3 -f r32 --layers height,water,sediment
    t_exit 0 "$ERODE" "$@" -o "$T/rs-$m/without" "$W"
    t_exit 0 "$ERODE" "$@" -s 'river_sources=[{"x":5,"y":5,"rate":0.01}]' -o "$T/rs-$m/with" "$W"
    # the map's size suits no game engine: RAW outputs say so on a line of their own
    sed -i '/suits neither Unity nor Unreal/d' "$T/stderr"
    t_one_error_line "^erode: .*$stem.tif: warning: river_sources: the $m model has no river sources: the list is ignored (mei, sph use them)$"
    for l in height water sediment; do
        cmp -s "$T/rs-$m/with/$stem.$l.r32" "$T/rs-$m/without/$stem.$l.r32" || t_fail "$m: $l differs"
    done
done
printf '{"river_sources": [{"at": "peaks", "rate": 0.01}], "stages": [{"model": "stream_power", "stream_power": {"steps": 2}}, {"model": "mei", "mei": {"steps": 2}}]}\n' > "$T/rs-stages.json"
mkdir -p "$T/rs-stages"
t_exit 0 "$ERODE" -q -r "$T/rs-stages.json" --layers height -o "$T/rs-stages" "$W"
t_one_error_line "^erode: .*$stem.tif: warning: stages\[0\]: river_sources: the stream_power model has no river sources: the list is ignored (mei, sph use them)$"
t_ok

t_case "peaks in a tile set: exit 2, one line, nothing written"
if ! have gdal_translate; then
    t_skip "needs gdal-bin"
else
    d=$T/peaktiles
    mkdir -p "$d/out"
    gdal_translate -q -srcwin 0 0 120 188 "$W" "$d/a.tif"
    gdal_translate -q -srcwin 120 0 117 188 "$W" "$d/b.tif"
    printf '%s\n%s\n' "$d/a.tif" "$d/b.tif" > "$d/list"
    t_exit 2 "$ERODE" -q -s mei.steps=2 -s 'river_sources=[{"at":"peaks","rate":0.01}]' \
        --tile-set "$d/list" --halo 8 -o "$d/out" "$d/a.tif"
    t_one_error_line "^erode: .*a.tif: recipe: river_sources\[0\]: \"at\": \"peaks\" needs the whole map, and a tile of a tile set sees only its own"
    t_empty_dir "$d/out"
    t_ok
fi

t_case "a recipe file's name is the error's second part"
printf '{"mei": {"ke": 100, "dt": 0.02}}\n' > "$T/hot.json"
t_exit 2 "$ERODE" -q -r "$T/hot.json" -o "$T" "$W"
t_one_error_line "$stem.tif: $T/hot.json: mei.ke:"
t_ok

# A checkpoint whose checksums pass but whose counters do not fit the run
# (crafted: `done` changed and the header checksum recomputed) used to be
# found after the run started (exit 1).
t_case "a crafted checkpoint that does not fit the run: exit 2 before any work"
if ! have flock; then
    t_skip "flock(1) (util-linux) not installed"
else
    d=$T/craft
    mkdir -p "$d/out" "$d/ck"
    # The end-state checkpoint of a run stopped while its outputs wait for
    # the output directory's lock (as in 90-checkpoint.sh).
    # the subshell becomes the sleep holding the lock, so killing it frees the lock
    # and leaves no sleep behind (flock(1) would leave its child running)
    (exec 9> "$d/out/.erode.lock" && flock 9 && exec sleep 600) & holder=$!
    "$ERODE" -q -s mei.steps=20 --checkpoint "$d/ck/c.ckpt" -o "$d/out" "$W" 2> "$T/stderr" & writer=$!
    i=0
    while [ $i -lt 600 ] && [ "$(ls -A "$d/out" | grep -c '\.tmp-')" -lt 3 ]; do sleep 0.1; i=$((i + 1)); done
    kill -TERM $writer; wait $writer; rc=$?
    kill $holder 2> /dev/null; wait $holder 2> /dev/null
    rm -f "$d/out/.erode.lock"
    [ "$rc" -eq 143 ] || t_fail "the checkpointing run exited $rc: $(cat "$T/stderr")"
    $PY - "$d/ck/c.ckpt" << 'EOF' || t_fail "cannot craft the checkpoint"
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
done = struct.unpack_from('<q', b, 80)[0]
struct.pack_into('<q', b, 80, done - 7)      # done no longer equals the boundary
h = 0xcbf29ce484222325
for x in b[:232]:                            # the header checksum (formats 3, 4)
    h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
struct.pack_into('<Q', b, 232, h)
open(p, 'wb').write(b)
EOF
    t_exit 2 "$ERODE" -q -s mei.steps=20 --resume "$d/ck/c.ckpt" -o "$d/out" "$W"
    t_one_error_line "$stem.tif: --resume: the state (step 20 of 20, 13 of 20 steps) does not fit"
    t_empty_dir "$d/out"
    t_ok
fi

t_case "--tile-set: the halo window's memory is checked before any tile is read"
if ! have gdal_translate; then
    t_skip "needs gdal-bin"
else
    # Tile a (20 x 20 cells of whitebox) and its neighbour b (217 x 20):
    # with --halo 30, a's window is 50 x 20 cells, whose run needs 7.5 MiB
    # (the process itself, erode(1) --max-memory), more than --max-memory 10K, while b's own float copy (17,360 bytes)
    # would be refused by its reader: the window's check must come first
    # (its size follows from the tile set), before any pixel is read.
    d=$T/halo
    mkdir -p "$d/out"
    gdal_translate -q -srcwin 0 0 20 20 "$W" "$d/a.tif"
    gdal_translate -q -srcwin 20 0 217 20 "$W" "$d/b.tif"
    printf '%s\n%s\n' "$d/a.tif" "$d/b.tif" > "$d/list"
    t_exit 2 "$ERODE" -q --tile-set "$d/list" --halo 30 --max-memory 10K -o "$d/out" "$d/a.tif"
    t_one_error_line "^erode: .*a.tif: a 50x20 run needs 7.5 MiB, more than --max-memory (10.0 KiB)$"
    t_empty_dir "$d/out"
    t_ok
fi

# Runs that change nothing though the recipe asks for work: exit 0, the
# outputs written, and one warning line saying why.
if ! $PY -c 'from osgeo import gdal; import numpy' 2> /dev/null; then
    t_case "runs that change nothing"; t_skip "needs python3-gdal and numpy"
else
    D=$DATA/olinda_dem_f32_utm25s.tif
    d=$T/noop
    mkdir -p "$d"
    $PY - "$D" "$d" << 'PYEOF'
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1])
for name, v in (('zeros.tif', 0.0), ('ones.tif', 1.0), ('one-cell.tif', 0.0)):
    a = np.full((src.RasterYSize, src.RasterXSize), v, np.float32)
    if name == 'one-cell.tif':
        a[55, 55] = 1.0
    o = gdal.GetDriverByName('GTiff').Create(sys.argv[2] + '/' + name, src.RasterXSize,
                                             src.RasterYSize, 1, gdal.GDT_Float32)
    o.SetGeoTransform(src.GetGeoTransform()); o.SetProjection(src.GetProjection())
    o.GetRasterBand(1).WriteArray(a)
    o = None
PYEOF
    # name | expected warning | options
    noops="mei, mask 0|mask: no valid cell can be lowered (mask 0 everywhere): nothing erodes or deposits|-s mei.steps=5 -s mask=$d/zeros.tif
droplets, mask 0|mask: no valid cell can be lowered (mask 0 everywhere)|-s model=droplet -s mask=$d/zeros.tif
droplets, hardness 1|hardness: no valid cell can be lowered (hardness 1 everywhere)|-s model=droplet -s hardness=$d/ones.tif
droplets, rain 0|rain: 0 on every valid cell: no droplet starts and the run changes nothing|-s model=droplet -s rain=$d/zeros.tif
mei without water or weathering|mei: no water falls or flows in (rain, drops and sources are 0) and mei.thermal_rate is 0|-s mei.steps=5 -s mei.rain_rate=0"
    stem_o=olinda_dem_f32_utm25s
    printf '%s\n' "$noops" | while IFS='|' read -r n_name n_want n_opts; do
        t_case "$n_name changes nothing: exit 0, the outputs, one warning line"
        rm -rf "$d/out"; mkdir -p "$d/out"
        # shellcheck disable=SC2086
        t_exit 0 "$ERODE" -q $n_opts --layers height -o "$d/out" "$D"
        t_one_error_line "^erode: .*$stem_o.tif: warning: $n_want"
        [ -f "$d/out/$stem_o.height.tif" ] || t_fail "no height output"
        t_ok
    done
    t_case "a map of nodata only changes nothing: exit 0, one warning line (every model)"
    $PY -c "
import sys, numpy as np
from osgeo import gdal
o = gdal.GetDriverByName('GTiff').Create(sys.argv[1], 9, 7, 1, gdal.GDT_Float32)
o.SetGeoTransform((0, 30, 0, 0, 0, -30)); b = o.GetRasterBand(1); b.SetNoDataValue(-9999)
b.WriteArray(np.full((7, 9), -9999, np.float32)); o = None" "$d/void.tif"
    for m in mei droplet sph stream_power; do
        rm -rf "$d/out"; mkdir -p "$d/out"
        t_exit 0 "$ERODE" -q -s model=$m -s mei.steps=5 -s sph.steps=2 -s stream_power.steps=2 --layers height -o "$d/out" "$d/void.tif"
        t_one_error_line "^erode: .*void.tif: warning: .*no valid cell (every cell is nodata)\|warning: sph: the map starts dry"
        [ -f "$d/out/void.height.tif" ] || t_fail "$m: no height output"
    done
    t_ok
    t_case "a mask with one cell of 1: no warning"
    rm -rf "$d/out"; mkdir -p "$d/out"
    t_exit 0 "$ERODE" -q -s model=droplet -s mask="$d/one-cell.tif" --layers height -o "$d/out" "$D"
    [ -s "$T/stderr" ] && t_fail "a mask with a cell of 1: $(cat "$T/stderr")"
    t_ok
fi

t_case "--max-memory counts the snapshot schedule's sums and counts"
# Olinda's 111^2 cells: 7.5 MiB for the process and 31 bytes a cell for
# droplets (7.9 MiB, under 8M); the snapshot schedule adds 48 (its heights,
# three 64-bit sums, the lowest stops, the tap counts and ceilings):
# 8.4 MiB, over.
O=$DATA/olinda_dem_f32_utm25s.tif
d=$T/snapmem
mkdir -p "$d"
t_exit 0 "$ERODE" -q -s model=droplet --max-memory 8M --layers height -o "$d" "$O"
rm -rf "$d"; mkdir -p "$d"
t_exit 2 "$ERODE" -q -s model=droplet -s droplet.schedule='"snapshot"' --max-memory 8M -o "$d" "$O"
t_one_error_line "^erode: .*olinda_dem_f32_utm25s.tif: a 111x111 run needs 8.4 MiB, more than --max-memory (8.0 MiB)$"
t_empty_dir "$d"
t_ok

# Georeferencing whose cells no model can run on: refused before any work
# with exit 2 and one line, on every model (a 1e300 m cell once passed the
# plan and failed at step 0 with exit 1).
t_case "absurd cell sizes and a sheared geotransform: exit 2, one line, nothing written"
if ! have gdal_translate; then
    t_skip "gdal_translate not installed"
else
    gdal_translate -q -of VRT -outsize 32 32 "$W" "$T/g.vrt"
    for gt in "0, 1e300, 0, 1e302, 0, -1e300|cell size 1e+300 x 1e+300 m: 1e+300 is out of range, must be >= 1e-06 and <= 1000000 (terrain.cell_size's range)" \
              "0, 1e-300, 0, 1, 0, -1e-300|georeferencing gives no usable cell size: pixel size zero" \
              "0, 30, 10, 5000, 0, -30|georeferencing gives no usable cell size: sheared geotransform: its cells are parallelograms, not rectangles"; do
        sed "s|<GeoTransform>.*</GeoTransform>|<GeoTransform>${gt%%|*}</GeoTransform>|" "$T/g.vrt" > "$T/h.vrt"
        gdal_translate -q "$T/h.vrt" "$T/cells.tif"
        for m in mei droplet sph stream_power; do
            rm -rf "$T/cells"; mkdir -p "$T/cells"
            t_exit 2 "$ERODE" -q -s model=$m -o "$T/cells" "$T/cells.tif"
            t_one_error_line "^erode: $T/cells.tif: .*${gt#*|}"
            t_empty_dir "$T/cells"
        done
    done
    # a rotation keeps square cells: it runs, on 50 m cells
    sed "s|<GeoTransform>.*</GeoTransform>|<GeoTransform>0, 30, -40, 5000, 40, 30</GeoTransform>|" "$T/g.vrt" > "$T/h.vrt"
    gdal_translate -q "$T/h.vrt" "$T/rot.tif"
    rm -rf "$T/cells"; mkdir -p "$T/cells"
    t_exit 0 "$ERODE" -q -s mei.steps=2 --json --layers height -o "$T/cells" "$T/rot.tif"
    [ "$(jq -r .cell_x "$T/stdout" 2>/dev/null)" = 50 ] || t_fail "rotated cell size: $(head -c 300 "$T/stdout")"
    t_ok
fi
