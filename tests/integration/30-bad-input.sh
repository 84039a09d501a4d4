#!/bin/sh
# Bad inputs: each gets one "erode: where: what" line, exit 2,
# and leaves nothing in the output directory.
. "$(dirname "$0")/lib.sh"
W=$DATA/whitebox_dem_f32_utm18n.tif
mkdir -p "$T/in" "$T/out"

bad_case() { # name, expected pattern, file
    t_case "$1"
    rm -rf "$T/out"; mkdir -p "$T/out"
    t_exit 2 "$ERODE" -q -o "$T/out" "$3"
    t_one_error_line "$2"
    t_empty_dir "$T/out"
    t_ok
}

printf 'hello, not an image\n' > "$T/in/text.tif"
bad_case "not an image" "text.tif" "$T/in/text.tif"

: > "$T/in/empty.tif"
bad_case "empty file" "empty.tif" "$T/in/empty.tif"

head -c 20000 "$W" > "$T/in/truncated.tif"
bad_case "truncated GeoTIFF" "truncated.tif" "$T/in/truncated.tif"

head -c 5000 "$DATA/puget_sound_1k_u16.png" > "$T/in/truncated.png"
bad_case "truncated PNG" "truncated.png" "$T/in/truncated.png"

bad_case "missing file" "nonexistent.tif" "$T/in/nonexistent.tif"

if have gdal_translate; then
    gdal_translate -q -ot CInt16 "$W" "$T/in/complex.tif"
    bad_case "complex samples" "complex.tif" "$T/in/complex.tif"
    gdal_translate -q -b 1 -b 1 -b 1 "$W" "$T/in/three.tif"
    bad_case "three bands without --band" "three.tif" "$T/in/three.tif"
    t_case "three bands with --band 2"
    t_exit 0 "$ERODE" -q --band 2 -s mei.steps=0 -o "$T/out" "$T/in/three.tif"
    t_ok
    # Georeferencing that places the raster but gives no usable cell size:
    # a geographic raster next to the pole used to run with
    # 1 m cells.  Refused with the reason; terrain.cell_size overrides it.
    gdal_translate -q -a_srs EPSG:4326 -a_ullr -10 90 10 89.9 "$W" "$T/in/pole.tif"
    t_case "a geographic raster at the pole is refused with the reason"
    rm -rf "$T/out"; mkdir -p "$T/out"
    t_exit 2 "$ERODE" -q -s mei.steps=0 -o "$T/out" "$T/in/pole.tif"
    t_one_error_line "pole.tif: georeferencing gives no usable cell size: .*pole"
    t_empty_dir "$T/out"
    t_exit 0 "$ERODE" -q -s mei.steps=0 -s terrain.cell_size=30 -o "$T/out" "$T/in/pole.tif"
    t_ok
else
    t_case "complex samples"; t_skip "gdal_translate not installed"
fi

if have gdal_create; then
    # A sparse 60000x60000 float file: tiny on disk, 13 GiB as floats.
    gdal_create -q -of GTiff -outsize 60000 60000 -ot Float32 -co TILED=YES -co SPARSE_OK=TRUE "$T/in/huge.tif"
    t_case "more pixels than --max-memory"
    rm -rf "$T/out"; mkdir -p "$T/out"
    t_exit 2 "$ERODE" -q --max-memory 1G -o "$T/out" "$T/in/huge.tif"
    t_one_error_line "huge.tif"
    grep -q -i "memory" "$T/stderr" || t_fail "the error does not mention --max-memory"
    t_empty_dir "$T/out"
    t_ok
fi

# The tile-size bound involves three keys, so the recipe parser cannot check
# it alone; it is still a recipe error, refused before any work.
t_case "droplet.tile_size below its safe bound"
rm -rf "$T/out"; mkdir -p "$T/out"
t_exit 2 "$ERODE" -q -s 'model="droplet"' -s droplet.tile_size=10 -o "$T/out" "$W"
t_one_error_line "droplet.tile_size: 10 is below the safe bound"
t_empty_dir "$T/out"
t_ok

t_case "missing output directory"
t_exit 2 "$ERODE" -q -o "$T/nowhere" "$W"
t_one_error_line "nowhere"
[ -e "$T/nowhere" ] && t_fail "created the directory"
t_ok

t_case "unwritable output directory"
mkdir -p "$T/ro"; chmod 555 "$T/ro"
dir=$T/ro
[ "$(id -u)" -eq 0 ] && dir=/proc/self   # root writes anywhere but here
t_exit 2 "$ERODE" -q -o "$dir" "$W"
t_one_error_line "output directory"
[ -z "$(ls -A "$T/ro")" ] || t_fail "files in the read-only directory"
t_ok

t_case "several inputs: the bad one fails, the good one is written, worst exit"
rm -rf "$T/out"; mkdir -p "$T/out"
t_exit 2 "$ERODE" -q -s mei.steps=0 -o "$T/out" "$T/in/text.tif" "$W"
t_one_error_line "text.tif"
[ -f "$T/out/whitebox_dem_f32_utm18n.height.tif" ] || t_fail "good input not processed"
ls -A "$T/out" | grep -q '^text' && t_fail "output for the bad input"
t_ok

t_case "an output never replaces its input"
cp "$W" "$T/in/x.height.tif"
t_exit 2 "$ERODE" -q -s mei.steps=0 -o "$T/in" "$T/in/x.height.tif" "$T/in/x.tif"
t_ok

t_case "no temporary files are left anywhere"
ls -A "$T/out" "$T/in" | grep -q 'tmp-' && t_fail "temporary files left: $(ls -A "$T/out" "$T/in" | grep tmp-)"
t_ok
