#!/bin/sh
# The Mei model on --backend vulkan with tile sets, checkpoints and frames:
# a tile set gives the CPU's bytes; a --checkpoint run killed
# with SIGKILL and resumed gives the bytes of an uninterrupted Vulkan run;
# --frames works and leaves the outputs unchanged; a checkpoint of the
# other backend is refused (one line, exit 2, nothing written).  The
# byte-for-byte comparisons with the CPU hold on lavapipe (Mesa's CPU
# device, which CI installs); another device skips them.  Every case skips
# without a Vulkan device.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
stem=whitebox_dem_f32_utm18n
VK="--backend vulkan"

"$ERODE" --list-devices > "$T/devices" 2> /dev/null
if [ ! -s "$T/devices" ]; then
    t_case "mei on vulkan with tile sets, checkpoints and frames"; t_skip "no Vulkan device"; exit 0
fi
exact=0
grep -q '^0: .*Mei: .*bit-identical to the CPU' "$T/devices" && exact=1

# same_files DIR_A DIR_B: the same file names with the same bytes.
same_files() {
    [ "$(ls "$1")" = "$(ls "$2")" ] || { t_fail "files differ: [$(ls "$1" | tr '\n' ' ')] vs [$(ls "$2" | tr '\n' ' ')]"; return; }
    for f in "$1"/*; do
        cmp -s "$f" "$2/$(basename "$f")" || t_fail "$(basename "$f") differs"
    done
}

t_case "a mei tile set on vulkan: the same bytes as on the cpu"
if [ "$exact" -eq 0 ]; then
    t_skip "device 0 is not exact for Mei (--list-devices): agreement is within tolerance only"
elif ! have gdal_translate; then
    t_skip "needs gdal-bin (scripts/deps --test)"
else
    dem=$T/puget.tif
    gdal_translate -q -ot Float32 -scale 0 10000 0 1000 -srcwin 256 256 128 128 -a_srs EPSG:32610 \
        -a_ullr 500000 5400000 520480 5379520 "$DATA/puget_sound_1k_u16.png" "$dem"
    "$SRCDIR/scripts/cut-tiles" "$dem" 2 "$T/tiles" > "$T/tiles.list"
    mkdir -p "$T/tile-cpu" "$T/tile-vk"
    set -- -q --tile-set "$T/tiles.list" --halo 8 -s mei.steps=40 -s mei.drops_per_step=4 \
        -s mei.rain_rate=0.01
    while read -r t; do
        t_exit 0 "$ERODE" "$@" --backend cpu -o "$T/tile-cpu" "$t"
        t_exit 0 "$ERODE" "$@" $VK -o "$T/tile-vk" "$t"
    done < "$T/tiles.list"
    [ "$(ls "$T/tile-vk" | wc -l)" -ge 12 ] || t_fail "expected 3 layers of 4 tiles: $(ls "$T/tile-vk")"
    same_files "$T/tile-cpu" "$T/tile-vk"
    t_ok
fi

MEI="-s mei.steps=600 -s mei.drops_per_step=2"
mkdir -p "$T/ref"
t0=$(now_ms)
t_exit 0 "$ERODE" -q $VK $MEI --json -o "$T/ref" "$W"
dur=$(($(now_ms) - t0))
cp "$T/stdout" "$T/ref.json"

t_case "vulkan: killed (SIGKILL) and resumed from --checkpoint: the uninterrupted run's bytes and budget"
d=$T/killed
killed_resumed killed 50 "$VK $MEI --json"
same_files "$T/ref" "$d/out"
a=$(jq -c .budget "$T/ref.json"); b=$(jq -c .budget "$d/stdout")
[ "$a" = "$b" ] || t_fail "budget differs: $a vs $b"
echo "       ($kills kills)"
t_ok

t_case "vulkan: --frames writes the start, every 25 steps and the end; outputs unchanged"
mkdir -p "$T/fr/plain" "$T/fr/framed" "$T/fr/frames" "$T/fr/cpu-frames" "$T/fr/cpu"
t_exit 0 "$ERODE" -q $VK -s mei.steps=60 -o "$T/fr/plain" "$W"
t_exit 0 "$ERODE" -q $VK -s mei.steps=60 --json --frames "$T/fr/frames" --frame-every 25 -o "$T/fr/framed" "$W"
[ "$(jq .frames "$T/stdout")" = 4 ] || t_fail "--json says $(jq .frames "$T/stdout") frames, expected 4"
[ "$(jq -r .backend "$T/stdout")" = vulkan ] || t_fail "ran on $(jq -r .backend "$T/stdout")"
[ "$(ls "$T/fr/frames" | wc -l)" -eq 4 ] || t_fail "frames: $(ls "$T/fr/frames")"
same_files "$T/fr/plain" "$T/fr/framed"
if [ "$exact" -eq 1 ]; then # an exact device (--list-devices): the frames are the CPU's
    t_exit 0 "$ERODE" -q -s mei.steps=60 --frames "$T/fr/cpu-frames" --frame-every 25 -o "$T/fr/cpu" "$W"
    same_files "$T/fr/cpu-frames" "$T/fr/frames"
fi
t_ok

# A checkpoint saved by SIGTERM on backend $1, to $2: the signal once the
# run has saved its first step (a slow start, a sanitizer build on a
# loaded machine, must not meet the signal before the input is started).
term_checkpoint() {
    mkdir -p "$(dirname "$2")" "$T/term-out"
    rm -f "$2"
    "$ERODE" -q --backend "$1" -s mei.steps=100000 --checkpoint "$2" --checkpoint-every 1 \
        -o "$T/term-out" "$W" 2> "$T/term.err" &
    pid=$! i=0
    while [ ! -f "$2" ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i + 1)); done
    kill -TERM $pid
    wait $pid; rc=$?
    [ $rc -eq 143 ] && [ -f "$2" ] || t_fail "no checkpoint from $1 (exit $rc): $(cat "$T/term.err")"
}

for pair in "cpu vulkan" "vulkan cpu"; do
    set -- $pair
    t_case "a checkpoint of a $1 run is refused by --backend $2: one line, exit 2, nothing written"
    term_checkpoint "$1" "$T/ck-$1/$stem.ckpt"
    mkdir -p "$T/refused-$2"
    t_exit 2 "$ERODE" -q --backend "$2" -s mei.steps=100000 --resume "$T/ck-$1/$stem.ckpt" \
        -o "$T/refused-$2" "$W"
    t_one_error_line "checkpoint of a run on $1"
    t_empty_dir "$T/refused-$2"
    t_ok
done
