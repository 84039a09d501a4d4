#!/bin/sh
# --preview and --preview-pair: an RGB PNG GDAL reads, the right size, one
# per input with {stem}, and the usage errors before any work.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
L=$DATA/olinda_dem_f32_utm25s.tif

t_case "--preview writes an RGB picture the size of the map"
t_exit 0 "$ERODE" -q -s mei.steps=5 --preview "$T/p.png" -o "$T" "$W"
[ "$(gdalinfo -json "$T/p.png" | jq -c '[.size, [.bands[].type], [.bands[].colorInterpretation]]')" = \
  '[[237,188],["Byte","Byte","Byte"],["Red","Green","Blue"]]' ] || t_fail "$(gdalinfo -json "$T/p.png" | jq -c .size)"
t_ok

t_case "--preview-pair: before | gap | after"
t_exit 0 "$ERODE" -q -r "$SRCDIR/configs/droplet.json" -s droplet.count=5000 --preview "$T/pair.png" --preview-pair -o "$T" "$W"
[ "$(gdalinfo -json "$T/pair.png" | jq -c .size)" = '[482,188]' ] || t_fail "size $(gdalinfo -json "$T/pair.png" | jq -c .size)"
t_ok

t_case "previews are byte-identical across runs and thread counts"
t_exit 0 "$ERODE" -q -j 1 -r "$SRCDIR/configs/droplet.json" -s droplet.count=5000 --preview "$T/pair1.png" --preview-pair -o "$T" "$W"
cmp -s "$T/pair.png" "$T/pair1.png" || t_fail "preview differs"
t_ok

t_case "several inputs with {stem}: one preview each, named in --json"
mkdir -p "$T/m"
t_exit 0 "$ERODE" -q --json -s mei.steps=2 --preview "$T/m/{stem}.jpg.png" -o "$T/m" "$W" "$L"
[ -f "$T/m/whitebox_dem_f32_utm18n.jpg.png" ] && [ -f "$T/m/olinda_dem_f32_utm25s.jpg.png" ] || t_fail "$(ls "$T/m")"
jq -e -s 'all(.[]; .outputs.preview | endswith(".jpg.png"))' "$T/stdout" > /dev/null || t_fail "no preview in --json"
t_ok

t_case "preview usage errors: exit 2, one line, nothing written"
mkdir -p "$T/u"
t_exit 2 "$ERODE" -q --preview "$T/u/x.png" -o "$T/u" "$W" "$L"
t_one_error_line "{stem}"
t_exit 2 "$ERODE" -q --preview-pair -o "$T/u" "$W"
t_one_error_line "preview"
t_exit 2 "$ERODE" -q --preview "$T/nodir/x.png" -o "$T/u" "$W"
t_one_error_line "nodir"
t_empty_dir "$T/u"
t_ok
