#!/bin/sh
# Zero steps (Mei) and zero droplets are the identity on every real DEM:
# heights equal in float32 and georeferencing identical, as GDAL sees it.
. "$(dirname "$0")/lib.sh"
O=$PY' '$SRCDIR/tests/integration/gdal_oracle.py

for f in whitebox_dem_f32_utm18n.tif olinda_dem_f32_utm25s.tif pysheds_dem_int16_wgs84.tif \
         luxembourg_elev_int16_wgs84.tif puget_sound_1k_u16.png; do
    src=$DATA/$f
    [ -f "$src" ] || src=$DEM/$f
    stem=${f%.*}
    for model in mei droplet; do
        t_case "identity $model $f"
        if [ ! -f "$src" ]; then t_skip "$f not bundled (GPL) and $DEM absent"; continue; fi
        mkdir -p "$T/$model"
        if [ $model = mei ]; then set -- -s mei.steps=0; else set -- -s model=droplet -s droplet.count=0; fi
        t_exit 0 "$ERODE" -q "$@" -o "$T/$model" "$src"
        case $f in
        *.png)
            # As GeoTIFF the heights are exactly raw/65535 (the PNG's 0..1
            # mapping); a PNG output reads back within one 16-bit step of
            # the layer's range: (43798 - 0) / 65535 / 65535 / 2 = 5.1e-6.
            t_exit 0 "$ERODE" -q "$@" -f tif -o "$T/$model" "$src"
            $O same-values "$src" "$T/$model/$stem.height.tif" 0 1.5259021896696422e-05 > "$T/why" \
                || t_fail "as tif: $(cat "$T/why")"
            mkdir -p "$T/$model/back"
            t_exit 0 "$ERODE" -q "$@" -f tif -o "$T/$model/back" "$T/$model/$stem.height.png"
            $O same-values "$T/$model/$stem.height.tif" "$T/$model/back/$stem.height.tif" 5.2e-6 > "$T/why" \
                || t_fail "png round trip: $(cat "$T/why")" ;;
        *)
            out=$T/$model/$stem.height.tif
            $O same-values "$src" "$out" 0 > "$T/why" || t_fail "$(cat "$T/why")"
            $O same-georef "$src" "$out" > "$T/why" || t_fail "$(cat "$T/why")"
            # gdalinfo's own view of the georeferencing, field by field
            # (one gdalinfo a file, each field read from what it printed).
            [ -s "$T/$stem.info" ] || gdalinfo -json "$src" > "$T/$stem.info"
            gdalinfo -json "$out" > "$T/out.info"
            for k in .geoTransform .coordinateSystem.wkt '.bands[0].noDataValue' .size; do
                a=$(jq -c "$k" "$T/$stem.info"); b=$(jq -c "$k" "$T/out.info")
                [ "$a" = "$b" ] || t_fail "gdalinfo $k: $a vs $b"
            done ;;
        esac
        t_ok
    done
done
