#!/bin/sh
# Mei and droplets on the real DEMs: byte-identical for -j1/-j3 (-j2: 25-value-checksums.sh), finite
# everywhere, material budget closes, signals leave nothing behind.
. "$(dirname "$0")/lib.sh"
O=$PY' '$SRCDIR/tests/integration/gdal_oracle.py
W=$DATA/whitebox_dem_f32_utm18n.tif

dems=""
for f in whitebox_dem_f32_utm18n.tif olinda_dem_f32_utm25s.tif puget_sound_1k_u16.png; do dems="$dems $DATA/$f"; done
for f in pysheds_dem_int16_wgs84.tif luxembourg_elev_int16_wgs84.tif; do
    if [ -f "$DEM/$f" ]; then dems="$dems $DEM/$f"; else t_case "real DEM $f"; t_skip "GPL DEM not bundled and $DEM absent"; fi
done

for variant in "mei" "droplet" "droplet-mt"; do
    case $variant in
        mei) args="-r $SRCDIR/configs/default.json" ;;
        droplet) args="-r $SRCDIR/configs/droplet.json" ;;
        droplet-mt) args="-r $SRCDIR/configs/droplet-mass-transfer.json" ;;
    esac
    for dem in $dems; do
        name=$(basename "$dem"); stem=${name%.*}; ext=${name##*.}
        # The 1025^2 map runs a shortened recipe three times: the full ones
        # run in the unit tests and the quick start; here what counts is
        # -j identity and finiteness, and the suite must stay quick (ASan too).
        short=""
        # (mass-transfer particles run hundreds of steps each: fewer of them)
        case $variant/$name in
            droplet-mt/puget*) short="-s droplet.per_cell=0.01" ;;
            */puget*) short="-s mei.steps=200 -s droplet.per_cell=0.03" ;;
        esac
        # -j2 against -j1 is 25-value-checksums.sh's (every bundled DEM
        # and recipe); -j3 gives uneven chunks on any machine
        t_case "$variant on $name: -j1, -j3 byte-identical, finite"
        for j in 1 3; do
            mkdir -p "$T/$variant-$j"
            # shellcheck disable=SC2086
            t_exit 0 "$ERODE" -q $args $short -j $j --json --layers height,sediment,water -o "$T/$variant-$j" "$dem"
            [ $j -eq 1 ] && cp "$T/stdout" "$T/$variant-$stem.json"
        done
        for l in height sediment water; do
            cmp -s "$T/$variant-1/$stem.$l.$ext" "$T/$variant-3/$stem.$l.$ext" || t_fail "$l: -j1 and -j3 differ"
        done
        $O stats "$T/$variant-1/$stem".height.$ext "$T/$variant-1/$stem".sediment.$ext \
            "$T/$variant-1/$stem".water.$ext > "$T/stats" || t_fail "GDAL could not read the outputs"
        [ "$(cut -d' ' -f5 "$T/stats")" = "$(printf '1\n1\n1')" ] || t_fail "non-finite values: $(cat "$T/stats")"
        # the height changed somewhere (the default recipes do erode)
        $O same-values "$dem" "$T/$variant-1/$stem.height.$ext" 0 > /dev/null && t_fail "nothing eroded"
        jq -e '.budget.relative_error < 1e-3' "$T/$variant-$stem.json" > /dev/null \
            || t_fail "material budget does not close: $(jq -c .budget "$T/$variant-$stem.json")"
        t_ok
    done
done

t_case "SIGTERM mid-run: exit 143, no output and no temporary left"
mkdir -p "$T/sig"
"$ERODE" -q -s mei.steps=1000000 -o "$T/sig" "$W" 2> "$T/stderr" &
pid=$!
sleep 1
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] || t_fail "exit $rc, expected 143"
[ -z "$(ls -A "$T/sig")" ] || t_fail "left: $(ls -A "$T/sig")"
t_ok

t_case "SIGINT mid-run: exit 130"
"$ERODE" -q -s mei.steps=1000000 -o "$T/sig" "$W" 2> "$T/stderr" &
pid=$!
sleep 1
kill -INT $pid
wait $pid; rc=$?
[ $rc -eq 130 ] || t_fail "exit $rc, expected 130"
[ -z "$(ls -A "$T/sig")" ] || t_fail "left: $(ls -A "$T/sig")"
t_ok

t_case "different seeds give different droplet results"
mkdir -p "$T/s1" "$T/s2"
t_exit 0 "$ERODE" -q -r "$SRCDIR/configs/droplet.json" -s seed=1 -o "$T/s1" "$W"
t_exit 0 "$ERODE" -q -r "$SRCDIR/configs/droplet.json" -s seed=2 -o "$T/s2" "$W"
cmp -s "$T/s1/whitebox_dem_f32_utm18n.height.tif" "$T/s2/whitebox_dem_f32_utm18n.height.tif" && t_fail "same output"
t_ok
