#!/bin/sh
# Control maps (erode(1) CONTROL MAPS): every mismatched or bad
# raster is refused in one line naming it, before anything is written; a
# raster on the same grid but larger is cut to the input; a mask of 0 keeps
# its cells; a raster cut from a larger georeferenced one lines up with each
# tile of a tile set; a recipe file's relative path is the recipe's.
. "$(dirname "$0")/lib.sh"

if ! $PY -c 'from osgeo import gdal; import numpy' 2> /dev/null; then
    t_case "control maps"; t_skip "needs python3-gdal and numpy (scripts/deps --test)"; exit 0
fi

D=$DATA/olinda_dem_f32_utm25s.tif
MEI="-s mei.steps=60"

# Rasters on (and off) the DEM's grid: mask 0 on the left half, 1 elsewhere.
$PY - "$D" "$T" << 'EOF'
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1]); out = sys.argv[2]
w, h = src.RasterXSize, src.RasterYSize
gt = src.GetGeoTransform()
def mk(name, a, g=gt, nodata=None):
    d = gdal.GetDriverByName('GTiff').Create(out + '/' + name, a.shape[1], a.shape[0], 1,
                                             gdal.GDT_Float32)
    d.SetGeoTransform(g); d.SetProjection(src.GetProjection())
    if nodata is not None: d.GetRasterBand(1).SetNoDataValue(nodata)
    d.GetRasterBand(1).WriteArray(a); d = None
m = np.ones((h, w), np.float32); m[:, :w // 2] = 0
mk('mask.tif', m)
big = np.ones((h + 10, w + 10), np.float32); big[5:5 + h, 5:5 + w] = m
mk('big.tif', big, (gt[0] - 5 * gt[1], gt[1], 0, gt[3] - 5 * gt[5], 0, gt[5]))
mk('half-cell.tif', m, (gt[0] + 0.5 * gt[1], gt[1], 0, gt[3], 0, gt[5]))
mk('other-cell.tif', m, (gt[0], 2 * gt[1], 0, gt[3], 0, gt[5]))
mk('short.tif', m[:-3, :])
mk('shifted.tif', m, (gt[0] + 2 * gt[1], gt[1], 0, gt[3], 0, gt[5]))
mk('range.tif', m * 1.5)
n = m.copy(); n[7, 80] = -9999; mk('nodata.tif', n, nodata=-9999)
# PNG masks: control values are the samples, never rescaled (0/1 is a
# mask as it is, 0/255 a picture out of range); no georeferencing, so
# the same size as the input
def png(name, a, bits):
    mem = gdal.GetDriverByName('MEM').Create('', w, h, 1, gdal.GDT_Byte)
    mem.GetRasterBand(1).WriteArray(a.astype(np.uint8))
    opts = ['NBITS=%d' % bits] if bits < 8 else []
    gdal.GetDriverByName('PNG').CreateCopy(out + '/' + name, mem, options=opts); mem = None
png('mask01.png', m, 8); png('mask01-1bit.png', m, 1); png('mask255.png', m * 255, 8)
# the mask's grid, in another CRS (geographic WGS 84 instead of UTM 25S)
d = gdal.GetDriverByName('GTiff').Create(out + '/other-crs.tif', w, h, 1, gdal.GDT_Float32)
d.SetGeoTransform(gt); d.SetProjection('EPSG:4326'); d.GetRasterBand(1).WriteArray(m); d = None
rs = np.random.RandomState(17)
mk('hard.tif', rs.uniform(0, 1, (h, w)).astype(np.float32))
mk('rain.tif', rs.uniform(0, 2, (h, w)).astype(np.float32))
q = np.zeros((h, w), np.float32); q[40:50, 60:70] = 0.002; mk('src.tif', q)
d = gdal.GetDriverByName('GTiff').Create(out + '/plain.tif', w + 1, h, 1, gdal.GDT_Float32)
d.GetRasterBand(1).WriteArray(np.ones((h, w + 1), np.float32)); d = None
EOF

refused() { # NAME KEY FILE PATTERN
    t_case "refused: $1"
    rm -rf "$T/out"; mkdir -p "$T/out"
    t_exit 2 "$ERODE" $MEI -s "$2=$3" -o "$T/out" "$D"
    t_one_error_line "$4"
    grep -q -- "$2 '$3'" "$T/stderr" || t_fail "the line does not name $2 '$3': $(cat "$T/stderr")"
    t_empty_dir "$T/out"
    t_ok
}
refused "another size, no georeferencing" hardness "$T/plain.tif" "another size (112x111, the input is 111x111"
refused "a short raster" mask "$T/short.tif" "does not cover the input"
refused "an origin off by whole cells, not covering" mask "$T/shifted.tif" "does not cover the input"
refused "an origin off by half a cell" rain "$T/half-cell.tif" "another grid"
refused "another cell size" mask "$T/other-cell.tif" "another grid (cell size"
refused "a value out of range" mask "$T/range.tif" "1.5 at column 55, row 0 is outside \[0, 1\]"
refused "nodata on terrain" sources "$T/nodata.tif" "no value (nodata) at column 80, row 7 where the input has terrain"
refused "a missing file" mask "$T/none.tif" "cannot read"
refused "another CRS on the same numbers" mask "$T/other-crs.tif" "another coordinate reference system than the input's"
refused "an 8-bit PNG mask of 0 and 255 (never rescaled)" mask "$T/mask255.png" "255 at column 55, row 0 is outside \[0, 1\]; an 8-bit picture?"

t_case "a mask keeps its cells; a larger raster on the grid gives the same run"
rm -rf "$T/a" "$T/b"; mkdir -p "$T/a" "$T/b"
t_exit 0 "$ERODE" -q $MEI -s mask="$T/mask.tif" --layers height -o "$T/a" "$D"
t_exit 0 "$ERODE" -q $MEI -s mask="$T/big.tif" --layers height -o "$T/b" "$D"
$PY - "$D" "$T/a/olinda_dem_f32_utm25s.height.tif" "$T/b/olinda_dem_f32_utm25s.height.tif" << 'EOF' || t_fail "$(cat "$T/py")"
import sys
import numpy as np
from osgeo import gdal
d, a, b = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:4])
w = d.shape[1] // 2
assert np.array_equal(a, b), "the larger raster's run differs"
assert np.array_equal(a[:, :w], d[:, :w]), "a masked cell changed"
assert (a[:, w:] != d[:, w:]).sum() > 100, "the unmasked half did not change"
EOF
t_ok

t_case "a PNG mask of 0 and 1 (8-bit and 1-bit) is the same mask as the float TIFF's"
for f in mask01.png mask01-1bit.png; do
    rm -rf "$T/p"; mkdir -p "$T/p"
    t_exit 0 "$ERODE" -q $MEI -s mask="$T/$f" --layers height -o "$T/p" "$D"
    $PY -c "
import sys, numpy as np
from osgeo import gdal
a, p = (gdal.Open(f).ReadAsArray() for f in sys.argv[1:3])
assert np.array_equal(a, p)" "$T/a/olinda_dem_f32_utm25s.height.tif" "$T/p/olinda_dem_f32_utm25s.height.tif" ||
        t_fail "$f: the run differs from the TIFF mask's"
done
t_ok

t_case "a recipe's relative path is taken from the recipe's directory"
mkdir -p "$T/r/maps"; cp "$T/mask.tif" "$T/r/maps/m.tif"
printf '{"erode_recipe": 1, "mask": "maps/m.tif", "mei": {"steps": 60}}\n' > "$T/r/recipe.json"
rm -rf "$T/c"; mkdir -p "$T/c"
cd "$T" && t_exit 0 "$ERODE" -q -r r/recipe.json --layers height -o "$T/c" "$D"
cd "$SRCDIR" || exit 1
$PY -c "
import sys, numpy as np
from osgeo import gdal
a, c = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:3])
assert np.array_equal(a, c)" "$T/a/olinda_dem_f32_utm25s.height.tif" "$T/c/olinda_dem_f32_utm25s.height.tif" ||
    t_fail "the recipe's mask run differs from the -s one"
t_ok

# The Vulkan backend honours every map with the CPU's arithmetic: on
# lavapipe the files are the CPU's bytes (check_vulkan.c has the cases).
t_case "Vulkan: --backend vulkan with all four maps writes the CPU's bytes"
if "$ERODE" --list-devices > /dev/null 2>&1; then
    ALL="-s hardness=$T/hard.tif -s rain=$T/rain.tif -s mask=$T/mask.tif -s sources=$T/src.tif"
    ALL="$ALL -s mei.drops_per_step=3 -s mei.thermal_rate=0.5"
    rm -rf "$T/vk" "$T/cpu"; mkdir -p "$T/vk" "$T/cpu"
    t_exit 0 "$ERODE" -q $MEI $ALL --backend vulkan --json -o "$T/vk" "$D"
    jq -e '.backend == "vulkan"' "$T/stdout" > /dev/null || t_fail "not run on Vulkan: $(cat "$T/stdout")"
    t_exit 0 "$ERODE" -q $MEI $ALL --backend cpu -o "$T/cpu" "$D"
    for l in height water sediment; do
        cmp -s "$T/vk/olinda_dem_f32_utm25s.$l.tif" "$T/cpu/olinda_dem_f32_utm25s.$l.tif" ||
            t_fail "$l differs from the CPU's"
    done
    cmp -s "$T/cpu/olinda_dem_f32_utm25s.height.tif" "$T/a/olinda_dem_f32_utm25s.height.tif" &&
        t_fail "the maps changed nothing against the mask alone"
    t_ok
else
    t_skip "no Vulkan device"
fi

# A checkpoint records the rasters by their values: a stopped run goes on
# with the same mask, not with another raster at the same path or none.
t_case "--resume with other control rasters, or none, is refused"
mkdir -p "$T/ck" "$T/ckout"; cp "$T/mask.tif" "$T/ck/m.tif"
"$ERODE" -q -j 1 -s mei.steps=400000 -s mask="$T/ck/m.tif" --checkpoint "$T/ck/c.ckpt" \
    -o "$T/ckout" "$D" 2> /dev/null & pid=$!
i=0; while [ ! -s "$T/ck/c.ckpt" ] && [ $i -lt 20 ]; do sleep 0.5; kill -TERM $pid 2> /dev/null; i=$((i + 1)); done
wait $pid
if [ -s "$T/ck/c.ckpt" ]; then
    cp "$T/half-cell.tif" "$T/ck/m.tif" && $PY -c "
import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], 1); d.SetGeoTransform(gdal.Open(sys.argv[2]).GetGeoTransform()); d = None" "$T/ck/m.tif" "$T/mask.tif"
    $PY -c "
import sys; from osgeo import gdal
d = gdal.Open(sys.argv[1], 1); b = d.GetRasterBand(1); a = b.ReadAsArray(); a[0, 0] = 0.5; b.WriteArray(a); d = None" "$T/ck/m.tif"
    t_exit 2 "$ERODE" -q -j 1 -s mei.steps=400000 -s mask="$T/ck/m.tif" --resume "$T/ck/c.ckpt" -o "$T/ckout" "$D"
    t_one_error_line "checkpoint from another input"
    t_exit 2 "$ERODE" -q -j 1 -s mei.steps=400000 --resume "$T/ck/c.ckpt" -o "$T/ckout" "$D"
    t_one_error_line "checkpoint from another recipe"
    t_empty_dir "$T/ckout"
    t_ok
else
    t_fail "no checkpoint was written"
fi

# Tiles: a 512^2 DEM cut into 2 x 2 tiles run with halos of 32 cells, and
# a mask of the whole map that is 0 on a diagonal band crossing all four
# tiles.  Each tile cuts its window (tile + halo) out of the one raster, so
# the band's cells keep their heights in the stitched map (the cross-fade
# of equal values), the cells beside it change, and the stitched map meets
# the whole run with the same mask as tile sets do without maps.
tiles=1
if ! have gdal_translate || ! have parallel; then
    t_case "tile sets with a mask"; t_skip "needs gdal-bin and GNU parallel (scripts/deps --test)"; tiles=0
fi
if [ $tiles = 1 ]; then
dem=$T/puget.tif
gdal_translate -q -ot Float32 -scale 0 10000 0 1000 -srcwin 256 256 512 512 -a_srs EPSG:32610 \
    -a_ullr 500000 5400000 581920 5318080 "$DATA/puget_sound_1k_u16.png" "$dem"
$PY - "$dem" "$T/band.tif" << 'EOF'
import sys
import numpy as np
from osgeo import gdal
src = gdal.Open(sys.argv[1]); w, h = src.RasterXSize, src.RasterYSize
y, x = np.mgrid[0:h, 0:w]
m = np.where(abs(x - y) < 40, 0.0, 1.0).astype(np.float32)
d = gdal.GetDriverByName('GTiff').Create(sys.argv[2], w, h, 1, gdal.GDT_Float32)
d.SetGeoTransform(src.GetGeoTransform()); d.SetProjection(src.GetProjection())
d.GetRasterBand(1).WriteArray(m); d = None
EOF
t_case "a mask cut for each tile of a tile set lines up with it"
"$SRCDIR/scripts/cut-tiles" "$dem" 2 "$T/tiles" > "$T/tiles.list"
mkdir -p "$T/whole" "$T/tout"
t_exit 0 "$ERODE" -q -s mei.steps=200 -s mask="$T/band.tif" --layers height -o "$T/whole" "$dem"
t_exit 0 "$SRCDIR/scripts/erode-tiles" --erode "$ERODE" -j 2 --threads 1 --halo 32 --layers height \
    -o "$T/tout" "$T/tiles.list" -- -s mei.steps=200 -s mask="$T/band.tif"
$PY - "$dem" "$T/band.tif" "$T/whole/puget.height.tif" "$T"/tout/*.height.tif << 'EOF' > "$T/py" 2>&1 || t_fail "$(cat "$T/py")"
import sys
import numpy as np
from osgeo import gdal
def read(p):
    d = gdal.Open(p); g = d.GetGeoTransform()
    return d.ReadAsArray().astype(np.float64), g
dem, g0 = read(sys.argv[1]); band = gdal.Open(sys.argv[2]).ReadAsArray(); whole, _ = read(sys.argv[3])
st = np.full(dem.shape, np.nan)
for p in sys.argv[4:]:
    a, g = read(p)
    c, r = round((g[0] - g0[0]) / g0[1]), round((g[3] - g0[3]) / g0[5])
    st[r:r + a.shape[0], c:c + a.shape[1]] = a
assert not np.isnan(st).any(), "the tiles do not cover the map"
held = band == 0
# the cross-fade of equal heights: within a float step of the DEM's heights
tol = 1e-4 * max(1.0, np.abs(dem).max())
assert np.abs(st[held] - dem[held]).max() <= tol, "a masked cell changed in the tiles"
near = (~held) & (np.abs(np.subtract.outer(np.arange(512), np.arange(512))) < 44)
assert (st[near] != dem[near]).sum() > 100, "the cells beside the band did not change"
# as tile sets without maps: the stitched map is close to the whole run
diff = np.abs(st - whole); relief = dem.max() - dem.min()
assert diff.max() <= 1e-3 * relief, "tiles differ from the whole run by %g m" % diff.max()
print("max |tiles - whole| %.4g m of a %.4g m relief" % (diff.max(), relief))
EOF
sed 's/^/    /' "$T/py"
t_ok
fi

# The droplet models and SPH through the CLI.  Maps on
# the Olinda grid: hardness graded 0 .. 1 with a hard disc, rain 0 .. 3
# with a dry strip; on the whitebox grid: hardness 1 on rows 60 .. 89.
W=$DATA/whitebox_dem_f32_utm18n.tif
$PY - "$D" "$W" "$T" << 'EOF'
import sys
import numpy as np
from osgeo import gdal
def mk(src, name, a):
    s = gdal.Open(src)
    d = gdal.GetDriverByName('GTiff').Create(sys.argv[3] + '/' + name, a.shape[1], a.shape[0], 1,
                                             gdal.GDT_Float32)
    d.SetGeoTransform(s.GetGeoTransform()); d.SetProjection(s.GetProjection())
    d.GetRasterBand(1).WriteArray(a.astype(np.float32)); d = None
s = gdal.Open(sys.argv[1]); w, h = s.RasterXSize, s.RasterYSize
y, x = np.mgrid[0:h, 0:w]
mk(sys.argv[1], 'hard.tif', np.where((x - 70) ** 2 + (y - 60) ** 2 < 300, 1.0, (x % 5) / 4.0))
mk(sys.argv[1], 'rain.tif', np.where(y < 20, 0.0, ((x * 7 + y * 3) % 7) / 2.0))
s = gdal.Open(sys.argv[2]); w, h = s.RasterXSize, s.RasterYSize
hb = np.zeros((h, w)); hb[60:90, :] = 1
mk(sys.argv[2], 'wb-hard.tif', hb)
EOF
DROP="-s model=droplet -s droplet.per_cell=0.5"

# --max-memory counts the maps: each given map is 4 bytes a cell held for
# the run, and droplets derive a 4-byte factor a cell from hardness or
# mask.  Olinda's 111^2 cells, besides the process's 7.5 MiB: 31 bytes a
# cell without maps (7.9 MiB, under 8100K), 43 with a hardness and a mask
# map (8.0 MiB, over).
t_case "--max-memory counts the control maps"
rm -rf "$T/mem"; mkdir -p "$T/mem"
t_exit 0 "$ERODE" -q $DROP --max-memory 8100K --layers height -o "$T/mem" "$D"
rm -rf "$T/mem"; mkdir -p "$T/mem"
t_exit 2 "$ERODE" $DROP -s hardness="$T/hard.tif" -s mask="$T/mask.tif" --max-memory 8100K -o "$T/mem" "$D"
t_one_error_line "more than --max-memory"
t_empty_dir "$T/mem"
t_exit 0 "$ERODE" -q $DROP -s hardness="$T/hard.tif" -s mask="$T/mask.tif" --max-memory 8300K --layers height -o "$T/mem" "$D"
# SPH on whitebox's 237 x 188 cells, besides the process's 7.5 MiB: 127
# bytes a cell and 1,884 a particle of sph.max_particles (1,884,000 for
# 1000): 14.7 MiB, under 15400K; 16 more a cell with a hardness map (its
# per-quad factors): 15.5 MiB, over
rm -rf "$T/mem"; mkdir -p "$T/mem"
t_exit 0 "$ERODE" -q -r "$DATA/fixture/sph-springs.json" -s sph.steps=1 -s sph.max_particles=1000 --max-memory 15400K --layers height -o "$T/mem" "$W"
rm -rf "$T/mem"; mkdir -p "$T/mem"
t_exit 2 "$ERODE" -r "$DATA/fixture/sph-springs.json" -s sph.steps=1 -s sph.max_particles=1000 -s hardness="$T/wb-hard.tif" --max-memory 15400K -o "$T/mem" "$W"
t_one_error_line "more than --max-memory"
t_empty_dir "$T/mem"
t_ok

# Droplets honour a mask through the CLI: mask.tif's left half (0) keeps
# the input's bytes, the right half changes, for both variants.
for v in lague mass-transfer; do
    t_case "droplets ($v): a mask of 0 keeps the input's bytes"
    rm -rf "$T/dm"; mkdir -p "$T/dm"
    t_exit 0 "$ERODE" -q $DROP -s droplet.variant=$v -s mask="$T/mask.tif" --layers height -o "$T/dm" "$D"
    $PY - "$D" "$T/dm/olinda_dem_f32_utm25s.height.tif" << 'EOF' > "$T/py" 2>&1 || t_fail "$(cat "$T/py")"
import sys
import numpy as np
from osgeo import gdal
d, a = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:3])
w = d.shape[1] // 2
assert a.dtype == d.dtype == np.float32
assert a[:, :w].tobytes() == d[:, :w].tobytes(), "a masked cell changed"
assert (a[:, w:] != d[:, w:]).sum() > 100, "the unmasked half did not change"
EOF
    t_ok
done

# Lague droplets on the Vulkan backend with every map give the CPU's
# values, where the device rounds as the CPU (lavapipe); the budget's
# water (the started droplets', rain map included) is the CPU's bits.
t_case "droplets with control maps: --backend vulkan gives the cpu's values (lavapipe)"
if ! "$ERODE" --list-devices > "$T/devices" 2> /dev/null; then
    t_skip "no Vulkan device"
elif ! grep -q '^0: llvmpipe' "$T/devices"; then
    t_skip "device 0 is not lavapipe: agreement is within tolerance only (check_vulkan_droplet)"
else
    MAPS="-s hardness=$T/hard.tif -s rain=$T/rain.tif -s mask=$T/mask.tif"
    for b in cpu vulkan; do
        rm -rf "$T/dv-$b"; mkdir -p "$T/dv-$b"
        t_exit 0 "$ERODE" -q -r "$SRCDIR/configs/droplet.json" $MAPS --backend $b --json \
            --layers height,sediment,water -o "$T/dv-$b" "$D"
        cp "$T/stdout" "$T/dv-$b.json"
    done
    jq -e '.backend == "vulkan"' "$T/dv-vulkan.json" > /dev/null || t_fail "not run on vulkan"
    jq -e -n --slurpfile a "$T/dv-cpu.json" --slurpfile b "$T/dv-vulkan.json" \
        '$a[0].budget.water_added == $b[0].budget.water_added' > /dev/null ||
        t_fail "water_added differs: $(jq .budget.water_added "$T/dv-cpu.json" "$T/dv-vulkan.json" | tr '\n' ' ')"
    for l in height sediment water; do
        $PY -c "
import sys
from osgeo import gdal
a, b = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:3])
assert a.tobytes() == b.tobytes()" "$T/dv-cpu/olinda_dem_f32_utm25s.$l.tif" "$T/dv-vulkan/olinda_dem_f32_utm25s.$l.tif" ||
            t_fail "$l differs from the cpu's"
    done
    t_ok
fi

# SPH with hardness 1 on rows 60 .. 89 of the whitebox DEM (the first
# spring of tests/data/fixture/sph-springs.json pours at row 73, and lowers cells there
# without the map): never lowered there, while the water from the other
# spring erodes elsewhere.
t_case "sph: hardness 1 is never lowered"
rm -rf "$T/sh" "$T/sh0"; mkdir -p "$T/sh" "$T/sh0"
t_exit 0 "$ERODE" -q -r "$DATA/fixture/sph-springs.json" -s sph.steps=20 -s hardness="$T/wb-hard.tif" \
    --layers height -o "$T/sh" "$W"
t_exit 0 "$ERODE" -q -r "$DATA/fixture/sph-springs.json" -s sph.steps=20 --layers height -o "$T/sh0" "$W"
$PY - "$W" "$T/sh/whitebox_dem_f32_utm18n.height.tif" "$T/sh0/whitebox_dem_f32_utm18n.height.tif" << 'EOF' > "$T/py" 2>&1 || t_fail "$(cat "$T/py")"
import sys
import numpy as np
from osgeo import gdal
d, a, a0 = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:4])
hard = np.zeros(d.shape, bool); hard[60:90, :] = True
assert (a0[hard] < d[hard]).sum() > 20, "the rows are not lowered without the map"
assert (a[hard] >= d[hard]).all(), "%d hard cells lowered" % (a[hard] < d[hard]).sum()
assert (a[~hard] < d[~hard]).sum() > 20, "nothing eroded outside the hard rows"
EOF
t_ok

# A tile set run with a droplet recipe (configs/tile-set.json: a fixed
# height unit) and band.tif's mask cut per tile: it runs, the band's cells
# keep the DEM's heights in the tiles (the cross-fade of equal values),
# and cells beside it change.
t_case "a tile set with a droplet recipe and a mask cut per tile"
if [ $tiles = 0 ]; then
    t_skip "needs gdal-bin and GNU parallel (scripts/deps --test)"
else
rm -rf "$T/dt"; mkdir -p "$T/dt"
t_exit 0 "$SRCDIR/scripts/erode-tiles" --erode "$ERODE" -j 2 --threads 1 --halo 32 --layers height \
    -o "$T/dt" "$T/tiles.list" -- -r "$SRCDIR/configs/tile-set.json" -s mask="$T/band.tif"
$PY - "$dem" "$T/band.tif" "$T"/dt/*.height.tif << 'EOF' > "$T/py" 2>&1 || t_fail "$(cat "$T/py")"
import sys
import numpy as np
from osgeo import gdal
def read(p):
    d = gdal.Open(p); g = d.GetGeoTransform()
    return d.ReadAsArray().astype(np.float64), g
dem, g0 = read(sys.argv[1]); band = gdal.Open(sys.argv[2]).ReadAsArray()
st = np.full(dem.shape, np.nan)
assert len(sys.argv[3:]) == 4, "%d tiles written" % len(sys.argv[3:])
for p in sys.argv[3:]:
    a, g = read(p)
    c, r = round((g[0] - g0[0]) / g0[1]), round((g[3] - g0[3]) / g0[5])
    st[r:r + a.shape[0], c:c + a.shape[1]] = a
assert not np.isnan(st).any(), "the tiles do not cover the map"
held = band == 0
tol = 1e-4 * max(1.0, np.abs(dem).max())
assert np.abs(st[held] - dem[held]).max() <= tol, "a masked cell changed in the tiles"
assert (st[~held] != dem[~held]).sum() > 1000, "the unmasked cells did not change"
EOF
t_ok
fi

# 8- and 16-bit masks are refused, never scaled (erode(1) CONTROL MAPS):
# the line says how to scale them; a byte mask of 0 and 1 is taken as it
# is, and the scaled picture gives the float mask's run.
t_case "an 8-bit or 16-bit mask is refused with how to scale it; a 0/1 byte mask runs"
$PY - "$D" "$T" << 'EOF'
import sys
import numpy as np
from osgeo import gdal
s = gdal.Open(sys.argv[1]); w, h = s.RasterXSize, s.RasterYSize
for name, dt, v in (('m8.tif', gdal.GDT_Byte, 255), ('m16.tif', gdal.GDT_UInt16, 65535),
                    ('m01.tif', gdal.GDT_Byte, 1)):
    d = gdal.GetDriverByName('GTiff').Create(sys.argv[2] + '/' + name, w, h, 1, dt)
    d.SetGeoTransform(s.GetGeoTransform()); d.SetProjection(s.GetProjection())
    a = np.zeros((h, w), np.uint16); a[:, w // 2:] = v
    d.GetRasterBand(1).WriteArray(a); d = None
EOF
# Whether DIR's heights are those of the float mask's run (the files differ
# in the recipe they record).
same_heights() {
    $PY -c "
import sys
from osgeo import gdal
a, b = (gdal.Open(p).ReadAsArray() for p in sys.argv[1:3])
assert a.tobytes() == b.tobytes()" "$1/olinda_dem_f32_utm25s.height.tif" "$T/a/olinda_dem_f32_utm25s.height.tif"
}
for b in 8:255 16:65535; do
    rm -rf "$T/m8"; mkdir -p "$T/m8"
    t_exit 2 "$ERODE" $MEI -s mask="$T/m${b%%:*}.tif" -o "$T/m8" "$D"
    t_one_error_line "mask '$T/m${b%%:*}.tif': ${b#*:} at column 55, row 0 is outside \[0, 1\]; a.* ${b%%:*}-bit picture? scale it to 0..1 first, e.g. gdal_translate -ot Float32 -scale 0 ${b#*:} 0 1 in.tif out.tif"
    t_empty_dir "$T/m8"
done
# a fractional value out of range gets no such hint
rm -rf "$T/m8"; mkdir -p "$T/m8"
t_exit 2 "$ERODE" $MEI -s mask="$T/range.tif" -o "$T/m8" "$D"
! grep -q "gdal_translate" "$T/stderr" || t_fail "a fractional value got the 8-bit hint: $(cat "$T/stderr")"
t_exit 0 "$ERODE" -q $MEI -s mask="$T/m01.tif" --layers height -o "$T/m8" "$D"
same_heights "$T/m8" || t_fail "the 0/1 byte mask's run differs from the float mask's"
if have gdal_translate; then
    gdal_translate -q -ot Float32 -scale 0 255 0 1 "$T/m8.tif" "$T/m8-scaled.tif"
    rm -rf "$T/m8"; mkdir -p "$T/m8"
    t_exit 0 "$ERODE" -q $MEI -s mask="$T/m8-scaled.tif" --layers height -o "$T/m8" "$D"
    same_heights "$T/m8" || t_fail "the scaled 8-bit mask's run differs from the float mask's"
fi
t_ok
