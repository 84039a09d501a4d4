#!/bin/sh
# The Vulkan backend from the command line: --list-devices, --device,
# --backend vulkan|auto, and the errors when there is no Vulkan.  Cases
# that need a device skip when there is none (CI installs lavapipe).
. "$(dirname "$0")/lib.sh"

dem=$DATA/olinda_dem_f32_utm25s.tif
built=1
"$ERODE" --list-devices > "$T/devices" 2> "$T/list.err"; list_rc=$?
grep -q "built without Vulkan" "$T/list.err" && built=0
has_dev=0
[ "$list_rc" -eq 0 ] && [ -s "$T/devices" ] && has_dev=1
nodev="no Vulkan device"
[ "$built" -eq 0 ] && nodev="built without Vulkan"

t_case "list-devices: one line per device, or one clear error line"
if [ "$has_dev" -eq 1 ]; then
    grep -Eq '^0: .+ \((cpu|discrete|integrated|virtual|other), Vulkan [0-9]+\.[0-9]+, [0-9]+ MiB device memory, maxStorageBufferRange [0-9]+ MiB' "$T/devices" ||
        t_fail "unexpected device line: $(head -n 1 "$T/devices")"
else
    [ "$list_rc" -eq 2 ] || t_fail "--list-devices without a device exited $list_rc, expected 2"
    [ "$(wc -l < "$T/list.err")" -eq 1 ] || t_fail "expected one error line: $(cat "$T/list.err")"
fi
t_ok

t_case "--backend vulkan without Vulkan: exit 2, one line, no outputs"
if [ "$has_dev" -eq 1 ]; then
    t_skip "this binary has a Vulkan device"
else
    mkdir -p "$T/none"
    t_exit 2 "$ERODE" --backend vulkan -o "$T/none" "$dem"
    if [ "$built" -eq 0 ]; then t_one_error_line "built without Vulkan"; else t_one_error_line "vulkan"; fi
    t_empty_dir "$T/none"
    t_ok
fi

t_case "--backend auto without a usable GPU runs on the CPU"
mkdir -p "$T/auto"
t_exit 0 "$ERODE" --backend auto -q --json -s mei.steps=2 -o "$T/auto" "$dem"
[ "$(jq -r .status "$T/stdout")" = ok ] || t_fail "auto run failed: $(cat "$T/stdout")"
if ! grep -q '(cpu,' "$T/devices" 2>/dev/null && [ "$has_dev" -eq 1 ]; then :; else
    [ "$(jq -r .backend "$T/stdout")" = cpu ] || t_fail "auto chose $(jq -r .backend "$T/stdout") with only a CPU device"
fi
t_ok

t_case "--device 99: exit 2, one line naming the device"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
else
    mkdir -p "$T/d99"
    t_exit 2 "$ERODE" --backend vulkan --device 99 -o "$T/d99" "$dem"
    t_one_error_line "no device 99"
    t_empty_dir "$T/d99"
    t_ok
fi

O=$PY' '$SRCDIR/tests/integration/gdal_oracle.py
W=$DATA/whitebox_dem_f32_utm18n.tif
b=whitebox_dem_f32_utm18n

t_case "--backend vulkan: GDAL reads the outputs, same georeferencing, values as the cpu path"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
else
    mkdir -p "$T/vk" "$T/cpu"
    t_exit 0 "$ERODE" -q --json --backend vulkan -s mei.steps=200 -o "$T/vk" "$W"
    [ "$(jq -r .backend "$T/stdout")" = vulkan ] || t_fail "json backend: $(jq -r .backend "$T/stdout")"
    t_exit 0 "$ERODE" -q -s mei.steps=200 -o "$T/cpu" "$W"
    # loose enough for any device (erode-models(7) "VULKAN BACKEND" gives the
    # exactness classes): height 2e-3 m, water 1e-3 m, sediment 2e-2 m
    for l in height:2e-3 water:1e-3 sediment:2e-2; do
        f=$T/vk/$b.${l%%:*}.tif
        $O same-georef "$W" "$f" > "$T/why" || t_fail "${l%%:*}: $(cat "$T/why")"
        $O same-values "$T/cpu/$b.${l%%:*}.tif" "$f" "${l#*:}" > "$T/why" || t_fail "${l%%:*}: $(cat "$T/why")"
    done
    t_ok
fi

t_case "--backend vulkan: two runs give byte-identical files"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
else
    mkdir -p "$T/vk2"
    t_exit 0 "$ERODE" -q --backend vulkan -s mei.steps=200 -o "$T/vk2" "$W"
    for l in height sediment water; do
        cmp -s "$T/vk/$b.$l.tif" "$T/vk2/$b.$l.tif" || t_fail "$l differs between runs"
    done
    t_ok
fi

t_case "ERODE_VK_VALIDATION=1: a run with sources and raindrops, no validation message"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
elif [ ! -f /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json ] &&
     ! ls /usr/share/vulkan/explicit_layer.d/ 2>/dev/null | grep -qi validation; then
    t_skip "VK_LAYER_KHRONOS_validation not installed"
else
    mkdir -p "$T/val"
    export ERODE_VK_VALIDATION=1
    t_exit 0 "$ERODE" -q --backend vulkan -s mei.steps=5 -s mei.drops_per_step=3 \
        -s 'mei.sources=[{"x":50,"y":60,"radius":3,"rate":0.01}]' -o "$T/val" "$W"
    unset ERODE_VK_VALIDATION
    [ -s "$T/stderr" ] && t_fail "stderr: $(head -c 300 "$T/stderr")"
    t_ok
fi

t_case "a map beyond the device's memory: refused up front, exit 2, nothing written"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
elif ! grep -q "^0: .*2048 MiB device memory, maxStorageBufferRange 128 MiB" "$T/devices"; then
    t_skip "device 0 is not lavapipe's 2 GiB and 128 MiB (the 5800^2 case is sized for it)"
else
    # 5800^2 float32 = 128.3 MiB > 128 MiB: Mei cuts it into bands, but its
    # 69 bytes a cell (accumulators counted) exceed the 2 GiB heap; a flat
    # sparse GeoTIFF, cheap to make
    mkdir -p "$T/big"
    $PY -c "
from osgeo import gdal
ds = gdal.GetDriverByName('GTiff').Create('$T/big.tif', 5800, 5800, 1, gdal.GDT_Float32, ['SPARSE_OK=YES', 'TILED=YES'])
ds = None" || t_fail "cannot make the big map"
    t_exit 2 "$ERODE" -q --backend vulkan -s mei.steps=1 -o "$T/big" "$T/big.tif"
    t_one_error_line "device memory"
    t_empty_dir "$T/big"
    t_ok
fi

t_case "ERODE_VK_BAND_BYTES: Mei in bands writes the files of --backend cpu; a bad value is exit 2"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
else
    # 40 rows of 237 floats: 6 bands of 31 or 32 rows (and 3 halo rows a side)
    mkdir -p "$T/band" "$T/bandcpu" "$T/bandbad"
    set -- -q -s mei.steps=20 -s mei.drops_per_step=3 \
        -s 'mei.sources=[{"x":50,"y":60,"radius":3,"rate":0.01}]'
    export ERODE_VK_BAND_BYTES=37920
    t_exit 0 "$ERODE" --backend vulkan "$@" -o "$T/band" "$W"
    unset ERODE_VK_BAND_BYTES
    t_exit 0 "$ERODE" --backend cpu "$@" -o "$T/bandcpu" "$W"
    for l in height water sediment; do
        cmp -s "$T/band/$b.$l.tif" "$T/bandcpu/$b.$l.tif" || t_fail "$l differs from --backend cpu"
    done
    export ERODE_VK_BAND_BYTES=12k
    t_exit 2 "$ERODE" --backend vulkan "$@" -o "$T/bandbad" "$W"
    unset ERODE_VK_BAND_BYTES
    t_one_error_line "ERODE_VK_BAND_BYTES"
    t_empty_dir "$T/bandbad"
    t_ok
fi

t_case "droplets on --backend vulkan: refused up front with one line, or run"
mkdir -p "$T/drop"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
else
    "$ERODE" -q --backend vulkan -s model=droplet -s droplet.count=1000 -o "$T/drop" "$W" > "$T/stdout" 2> "$T/stderr"; rc=$?
    if [ "$rc" -eq 2 ]; then t_one_error_line "vulkan"; t_empty_dir "$T/drop"
    elif [ "$rc" -ne 0 ]; then t_fail "exit $rc: $(head -c 300 "$T/stderr")"; fi
    t_ok
fi

# Maps smaller than the Mei coefficients (272 bytes, below 68
# cells) or the droplet brush ((2r - 1)^2 floats) overflowed the staging
# buffer: heap corruption, exit 134.  Single rows and columns, and the
# sizes around the thresholds, cut from a real DEM with its georeferencing.
tiny="1x1 2x2 1x7 7x1 3x3 4x4 7x7 8x8 9x9"
t_case "--backend vulkan on tiny maps ($tiny): exit 0, the same files as --backend cpu"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
elif ! $PY -c 'from osgeo import gdal' 2> /dev/null; then
    t_skip "no GDAL Python to cut the tiny maps"
else
    mkdir -p "$T/tiny"
    $PY -c "
from osgeo import gdal
src = gdal.Open('$W')
for s in '$tiny'.split():
    w, h = (int(v) for v in s.split('x'))
    gdal.Translate('$T/tiny/t%s.tif' % s, src, srcWin=[100, 100, w, h])" ||
        t_fail "cannot cut the tiny maps"
    for s in $tiny; do
        mkdir -p "$T/tiny/vk$s" "$T/tiny/cpu$s"
        t_exit 0 "$ERODE" -q --backend vulkan -s mei.steps=5 -o "$T/tiny/vk$s" "$T/tiny/t$s.tif"
        t_exit 0 "$ERODE" -q --backend cpu -s mei.steps=5 -o "$T/tiny/cpu$s" "$T/tiny/t$s.tif"
        # Mei on lavapipe is bit-identical to the cpu path (check_vulkan.c)
        for l in height water sediment; do
            cmp -s "$T/tiny/vk$s/t$s.$l.tif" "$T/tiny/cpu$s/t$s.$l.tif" ||
                t_fail "$s: $l differs from --backend cpu"
        done
    done
    t_ok
fi

t_case "droplets on --backend vulkan on tiny maps: exit 0, three layers, a repeat byte-identical"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
elif [ ! -f "$T/tiny/t1x1.tif" ]; then
    t_skip "no tiny maps (see the case above)"
else
    # configs/droplet.json (brush radius 3: 25 floats) and radius 6 (121
    # floats, more than every map here); droplets match the cpu path only
    # statistically, which a few cells cannot show (check_vulkan_droplet.c)
    for s in $tiny; do
        for r in 3 6; do
            d=$T/tiny/drop$s-$r
            mkdir -p "$d" "$d.again"
            t_exit 0 "$ERODE" -q --backend vulkan -r "$SRCDIR/configs/droplet.json" \
                -s droplet.count=200 -s droplet.radius=$r -o "$d" "$T/tiny/t$s.tif"
            t_exit 0 "$ERODE" -q --backend vulkan -r "$SRCDIR/configs/droplet.json" \
                -s droplet.count=200 -s droplet.radius=$r -o "$d.again" "$T/tiny/t$s.tif"
            for l in height water sediment; do
                [ -s "$d/t$s.$l.tif" ] || { t_fail "$s radius $r: no $l layer"; continue; }
                cmp -s "$d/t$s.$l.tif" "$d.again/t$s.$l.tif" ||
                    t_fail "$s radius $r: $l differs between two runs"
            done
        done
    done
    t_ok
fi

# The pipeline cache file: where it lands, that a warm cache
# changes no byte, and that a bad cache or directory never fails a run.
pc=$T/pc
# (Mesa's own shader cache, also under XDG_CACHE_HOME, is kept out of it:
# in $T/.cache/mesa, one for all these runs, so that only the first
# compiles the shaders; off, each of the 13 runs compiled them, 0.7 s of
# CPU a run)
export MESA_SHADER_CACHE_DIR="$T/.cache/mesa"
pc_run() { # pc_run NAME [VAR=VALUE...]: a 5-step Mei run into $pc/NAME, HOME unused
    name=$1; shift
    mkdir -p "$pc/$name"
    t_exit 0 env HOME="$pc/home" XDG_CACHE_HOME="$pc/xdg" "$@" \
        "$ERODE" -q --backend vulkan \
        -s mei.steps=5 -o "$pc/$name" "$dem"
    [ -s "$T/stderr" ] && t_fail "$name: said $(head -c 200 "$T/stderr")"
}
pc_same() { # the layers of run $1 equal those of run cold
    for l in height water sediment; do
        cmp -s "$pc/cold/olinda_dem_f32_utm25s.$l.tif" "$pc/$1/olinda_dem_f32_utm25s.$l.tif" ||
            t_fail "$1: $l differs from the cold-cache run"
    done
}
cache=$pc/xdg/erode/vulkan-pipelines.bin
magic() { [ "$(head -c 6 "$1" 2>/dev/null)" = ERVKPC ]; }

t_case "pipeline cache: made under XDG_CACHE_HOME only; a warm run gives the same bytes"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
else
    mkdir -p "$pc/home"
    pc_run cold
    magic "$cache" || t_fail "no cache at $cache"
    cp "$cache" "$pc/good.bin" 2>/dev/null
    pc_run warm
    pc_same warm
    cmp -s "$cache" "$pc/good.bin" || t_fail "a warm run rewrote the cache"
    [ "$(find "$pc/xdg" -type f | wc -l)" -eq 1 ] || t_fail "more than the cache: $(find "$pc/xdg" -type f)"
    [ -z "$(ls -A "$pc/home")" ] || t_fail "something landed in HOME: $(ls -A "$pc/home")"
    t_ok
fi

t_case "pipeline cache: ~/.cache/erode without XDG_CACHE_HOME, a path, or off"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
else
    mkdir -p "$pc/h2" "$pc/h3"
    t_exit 0 env -u XDG_CACHE_HOME HOME="$pc/h2" "$ERODE" -q --backend vulkan -s mei.steps=1 -o "$pc/h2" "$dem"
    magic "$pc/h2/.cache/erode/vulkan-pipelines.bin" || t_fail "no cache under HOME/.cache/erode"
    pc_run path ERODE_VK_PIPELINE_CACHE="$pc/h3/mine.bin"
    magic "$pc/h3/mine.bin" || t_fail "ERODE_VK_PIPELINE_CACHE=path: no cache there"
    rm -rf "$pc/xdg"
    pc_run off ERODE_VK_PIPELINE_CACHE=off
    [ ! -e "$pc/xdg" ] || t_fail "ERODE_VK_PIPELINE_CACHE=off wrote $(find "$pc/xdg")"
    pc_same path
    pc_same off
    t_ok
fi

t_case "pipeline cache: a damaged, cut or foreign cache is ignored and replaced"
if [ "$has_dev" -eq 0 ] || [ ! -s "$pc/good.bin" ]; then
    t_skip "$nodev, or no cache from the first case"
else
    # byte 13 is in the vendor ID of our header (another device's cache)
    for bad in flip cut empty foreign; do
        mkdir -p "$pc/xdg/erode"
        case $bad in
        flip) { head -c 60 "$pc/good.bin"; printf 'XXXX'; tail -c +65 "$pc/good.bin"; } > "$cache" ;;
        cut) head -c 30 "$pc/good.bin" > "$cache" ;;
        empty) : > "$cache" ;;
        foreign) { head -c 12 "$pc/good.bin"; printf '\377'; tail -c +14 "$pc/good.bin"; } > "$cache" ;;
        esac
        pc_run "$bad"
        pc_same "$bad"
        cmp -s "$cache" "$pc/good.bin" || t_fail "$bad: the cache was not replaced"
    done
    t_ok
fi

t_case "pipeline cache: an unwritable place or someone else's file never fails the run"
if [ "$has_dev" -eq 0 ]; then
    t_skip "$nodev"
else
    printf 'not a cache\n' > "$pc/precious"
    pc_run other ERODE_VK_PIPELINE_CACHE="$pc/precious"
    [ "$(cat "$pc/precious")" = "not a cache" ] || t_fail "someone else's file was replaced"
    pc_run nodir ERODE_VK_PIPELINE_CACHE="$pc/missing/dir/c.bin"
    [ ! -e "$pc/missing" ] || t_fail "made directories for an ERODE_VK_PIPELINE_CACHE path"
    pc_run notdir XDG_CACHE_HOME="$pc/precious/sub"
    mkdir -p "$pc/ro/erode"
    chmod 555 "$pc/ro/erode"
    pc_run readonly XDG_CACHE_HOME="$pc/ro"
    chmod 755 "$pc/ro/erode"
    for r in other nodir notdir readonly; do pc_same "$r"; done
    [ -z "$(find "$pc" -name '.*tmp-*')" ] || t_fail "temporaries left: $(find "$pc" -name '.*tmp-*')"
    t_ok
fi
