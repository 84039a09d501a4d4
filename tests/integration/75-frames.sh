#!/bin/sh
# Time-lapse frames: --frames DIR --frame-every N writes
# DIR/<stem>.frame-NNNNNN.png for the start, every N steps (Mei) or batches
# (droplets) and the end; the PNGs read back with GDAL; the outputs are
# byte-identical with and without frames.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
stem=whitebox_dem_f32_utm18n

frame_names() { # count
    i=0
    while [ $i -lt "$1" ]; do printf '%s.frame-%06d.png\n' $stem $i; i=$((i + 1)); done
}

check_frames() { # dir, expected count
    got=$(ls "$1")
    want=$(frame_names "$2")
    [ "$got" = "$want" ] || t_fail "frames: got [$(echo $got)], expected [$(echo $want)]"
}

for c in "mei 100 30 5" "mei 90 30 4" "droplet 4 2 3" "droplet 5 2 4"; do
    set -- $c
    model=$1 n=$2 every=$3 count=$4
    case $model in
        mei) args="-s mei.steps=$n" unit=steps ;;
        # 5000 droplets a batch, so n batches
        droplet) args="-r $SRCDIR/configs/droplet.json -s droplet.count=$((n * 5000)) -s droplet.batch_size=5000" unit=batches ;;
    esac
    d=$T/$model-$n
    mkdir -p "$d/plain" "$d/framed" "$d/frames"
    t_case "$model, $n $unit, --frame-every $every: $count frames, outputs unchanged"
    # shellcheck disable=SC2086
    t_exit 0 "$ERODE" -q $args -o "$d/plain" "$W"
    # shellcheck disable=SC2086
    t_exit 0 "$ERODE" -q $args -j 1 --json --frames "$d/frames" --frame-every $every -o "$d/framed" "$W"
    [ "$(jq .frames "$T/stdout")" = "$count" ] || t_fail "--json says $(jq .frames "$T/stdout") frames"
    check_frames "$d/frames" "$count"
    for l in height sediment water; do
        cmp -s "$d/plain/$stem.$l.tif" "$d/framed/$stem.$l.tif" || t_fail "$l differs with --frames"
    done
    last=$(printf '%s/%s.frame-%06d.png' "$d/frames" $stem $((count - 1)))
    cmp -s "$d/frames/$stem.frame-000000.png" "$last" && t_fail "the first and last frames are the same picture"
    if have gdalinfo; then
        for f in "$d/frames"/*.png; do
            info=$(gdalinfo "$f" 2> /dev/null) || { t_fail "gdalinfo cannot read $(basename "$f")"; continue; }
            echo "$info" | grep -q "Size is 237, 188" || t_fail "$(basename "$f"): not 237x188"
            [ "$(echo "$info" | grep -c '^Band ')" -eq 3 ] || t_fail "$(basename "$f"): not 3 bands"
        done
    fi
    t_ok
done

t_case "the final frame is the --preview picture of the outputs"
d=$T/pv
mkdir -p "$d/out" "$d/frames"
t_exit 0 "$ERODE" -q -s mei.steps=40 --frames "$d/frames" --frame-every 100 --preview "$d/pv.png" -o "$d/out" "$W"
check_frames "$d/frames" 2
cmp -s "$d/pv.png" "$d/frames/$stem.frame-000001.png" || t_fail "final frame and preview differ"
t_ok

t_case "--frames directory missing: exit 2, one line, nothing written"
mkdir -p "$T/none-out"
t_exit 2 "$ERODE" -q --frames "$T/no/such" -o "$T/none-out" "$W"
t_one_error_line "frames directory"
t_empty_dir "$T/none-out"
t_exit 2 "$ERODE" -q --frames "$T/none-out" --frame-every 0 -o "$T/none-out" "$W"
t_one_error_line "frame-every"
t_ok
