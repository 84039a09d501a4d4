#!/bin/sh
# erode stitch's guarantees on a small 3x3 tile set: the write-target check
# before anything is written (the tiles, the list, the halo outputs, a
# directory at a stitched name, by name and by file identity), every
# check that can fail made before the first tile is written, the layers of
# one tile replacing the previous stitched set together or not at all,
# SIGINT/SIGTERM at a layer or tile boundary, and tiles named after their
# entry in the tile set however the command line spells them.
. "$(dirname "$0")/lib.sh"

if ! have gdal_translate || ! $PY -c 'from osgeo import gdal' 2> /dev/null; then
    t_case "erode stitch"; t_skip "needs gdal-bin and python3-gdal (scripts/deps --test)"; exit 0
fi

# 96x96 cells of the Puget Sound DEM in 3x3 tiles of 32: r0_c0 and r2_c2
# are far enough apart that neither's halo output reaches the other.
dem=$T/dem.tif
gdal_translate -q -ot Float32 -scale 0 10000 0 1000 -srcwin 256 256 96 96 -a_srs EPSG:32610 \
    -a_ullr 500000 5400000 515360 5384640 "$DATA/puget_sound_1k_u16.png" "$dem"
"$SRCDIR/scripts/cut-tiles" "$dem" 3 "$T/tiles" > "$T/tiles.list"
A=$T/tiles/dem_r0_c0.tif B=$T/tiles/dem_r1_c1.tif Z=$T/tiles/dem_r2_c2.tif
LAYERS="height sediment water"

# halo DIR STEPS [TILE...]: the halo outputs of the tiles (default: all)
# with a Mei run of STEPS steps.
halo() {
    h_dir=$1 h_steps=$2; shift 2
    mkdir -p "$h_dir"
    [ $# -gt 0 ] || set -- $(cat "$T/tiles.list")
    for h_t in "$@"; do
        "$ERODE" -q --tile-set "$T/tiles.list" --halo 8 -s mei.steps="$h_steps" -o "$h_dir" "$h_t" ||
            t_fail "the halo run of $h_t failed"
    done
}
# stitched DIR: the stitched tiles in DIR, one a line (halo outputs left out).
stitched() { ls "$1" | grep -v '\.halo\.tif$' | grep '\.tif$' || true; }
# no_temporaries DIR
no_temporaries() {
    left=$(ls -A "$1" | grep -E '\.(tmp|old)-|\.erode\.lock' || true)
    [ -z "$left" ] || t_fail "left in $1: $left"
}
# same_files A B STEM: the stitched layers of STEM in A and B are byte-identical.
same_files() {
    for l in $LAYERS; do
        cmp -s "$1/$3.$l.tif" "$2/$3.$l.tif" || t_fail "$3.$l.tif is not the previous stitched one"
    done
}

# Reference outputs: every halo output of 3 and of 4 steps, each stitched.
halo "$T/h3" 3
halo "$T/h4" 4
"$ERODE" stitch -q --tile-set "$T/tiles.list" -o "$T/h3" || t_fail "stitch of h3 failed"
"$ERODE" stitch -q --tile-set "$T/tiles.list" -o "$T/h4" || t_fail "stitch of h4 failed"
# fresh DIR: DIR with the 3-step halo outputs and nothing else.
fresh() { rm -rf "$1"; mkdir -p "$1"; cp "$T/h3"/*.halo.tif "$1/"; }

# --- the write-target check --------------------------------------------

t_case "a stitched tile that would replace the --tile-set list: exit 2, one line, nothing written"
fresh "$T/o"
cp "$T/tiles.list" "$T/o/dem_r0_c0.height.tif"
t_exit 2 "$ERODE" stitch --tile-set "$T/o/dem_r0_c0.height.tif" -o "$T/o"
t_one_error_line "the --tile-set list"
cmp -s "$T/tiles.list" "$T/o/dem_r0_c0.height.tif" || t_fail "the list was replaced"
[ "$(stitched "$T/o")" = dem_r0_c0.height.tif ] || t_fail "stitched tiles written: $(stitched "$T/o")"
t_ok

t_case "a stitched tile that would replace another tile of the mosaic: exit 2, one line, nothing written"
# The tiles' own directory as -o, and a tile named like a stitched output.
rm -rf "$T/m"; mkdir -p "$T/m"
cp "$A" "$T/m/a.tif"; cp "$T/tiles/dem_r0_c1.tif" "$T/m/a.water.tif"
printf '%s\n%s\n' "$T/m/a.tif" "$T/m/a.water.tif" > "$T/m.list"
for t in a a.water; do
    "$ERODE" -q --tile-set "$T/m.list" --halo 8 -s mei.steps=3 -o "$T/m" "$T/m/$t.tif" || t_fail "halo run of $t"
done
cp "$T/m/a.water.tif" "$T/m-tile.tif"
t_exit 2 "$ERODE" stitch --tile-set "$T/m.list" -o "$T/m" "$T/m/a.tif"
t_one_error_line "would replace the tile '$T/m/a.water.tif'"
cmp -s "$T/m/a.water.tif" "$T/m-tile.tif" || t_fail "the tile was replaced"
[ -f "$T/m/a.height.tif" ] && t_fail "a.height.tif was written"
no_temporaries "$T/m"
t_ok

t_case "a stitched name that is a tile by file identity (symbolic link): exit 2, nothing written"
fresh "$T/o"
ln -s "$Z" "$T/o/dem_r0_c0.sediment.tif"
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles.list" -o "$T/o" "$A"
t_one_error_line "the tile '$Z'"
[ -L "$T/o/dem_r0_c0.sediment.tif" ] || t_fail "the link was replaced"
[ "$(stitched "$T/o")" = dem_r0_c0.sediment.tif ] || t_fail "stitched tiles written: $(stitched "$T/o")"
t_ok

t_case "a stitched name that is a halo output by file identity (hard link): exit 2, nothing written"
fresh "$T/o"
ln "$T/o/dem_r1_c1.water.halo.tif" "$T/o/dem_r0_c0.water.tif"
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles.list" -o "$T/o" "$A"
t_one_error_line "the halo output"
[ "$(stitched "$T/o")" = dem_r0_c0.water.tif ] || t_fail "stitched tiles written: $(stitched "$T/o")"
t_ok

t_case "a directory at a stitched name is refused before the first layer is written"
fresh "$T/o"
mkdir "$T/o/dem_r0_c0.water.tif"
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles.list" -o "$T/o" "$A"
t_one_error_line "dem_r0_c0.water.tif' exists and is a directory"
[ "$(stitched "$T/o")" = dem_r0_c0.water.tif ] || t_fail "stitched tiles written: $(stitched "$T/o")"
t_ok

# --- checks that can fail, before any tile is written ------------------

t_case "halo outputs of another recipe in a later tile: exit 2 before any tile is written"
fresh "$T/o"
cp "$T/h4/dem_r2_c2".*.halo.tif "$T/o/"
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles.list" -o "$T/o"
t_one_error_line "another recipe"
[ -z "$(stitched "$T/o")" ] || t_fail "stitched tiles written: $(stitched "$T/o")"
t_ok

t_case "a later tile without halo outputs: exit 2 before any tile is written"
fresh "$T/o"
rm "$T/o/dem_r2_c2".*.halo.tif
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles.list" -o "$T/o"
t_one_error_line "dem_r2_c2"
[ -z "$(stitched "$T/o")" ] || t_fail "stitched tiles written: $(stitched "$T/o")"
t_ok

t_case "--layers asking for a layer a neighbour's run did not write: exit 2, nothing written"
fresh "$T/o"
rm "$T/o/dem_r1_c1.water.halo.tif"
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles.list" --layers height,water -o "$T/o" "$A"
t_one_error_line "dem_r1_c1.water.halo.tif"
[ -z "$(stitched "$T/o")" ] || t_fail "stitched tiles written: $(stitched "$T/o")"
t_ok

t_case "a halo output off the tile set's grid: exit 2 before any tile is written"
fresh "$T/o"
gdal_translate -q -a_ullr 500001 5400000 515361 5384640 "$T/h3/dem_r2_c2.height.halo.tif" \
    "$T/o/dem_r2_c2.height.halo.tif"
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles.list" -o "$T/o"
t_one_error_line "grid"
[ -z "$(stitched "$T/o")" ] || t_fail "stitched tiles written: $(stitched "$T/o")"
t_ok

# --- one tile's layers replace the previous set together ---------------

# corrupt FILE: makes the first block's compressed stream undecodable (an
# invalid zlib header), the header left readable.
corrupt() {
    $PY - "$1" << 'EOF'
import sys
from osgeo import gdal
ds = gdal.Open(sys.argv[1])
off = int(ds.GetRasterBand(1).GetMetadataItem('BLOCK_OFFSET_0_0', 'TIFF'))
ds = None
with open(sys.argv[1], 'r+b') as f:
    f.seek(off)
    f.write(b'\xff\xff\xff\xff')
EOF
}

t_case "an undecodable halo output part-way: the previous stitched set stays whole"
# The previous set is the 3-step one; the 4-step halo outputs replace the
# halo outputs, and the tile's sediment halo output (read after its height
# layer was made) is undecodable.
rm -rf "$T/o"; mkdir -p "$T/o"
cp "$T/h4"/*.halo.tif "$T/o/"
for l in $LAYERS; do cp "$T/h3/dem_r0_c0.$l.tif" "$T/o/"; done
corrupt "$T/o/dem_r0_c0.sediment.halo.tif"
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles.list" -o "$T/o" "$A"
t_one_error_line "dem_r0_c0.sediment.halo.tif"
same_files "$T/h3" "$T/o" dem_r0_c0
no_temporaries "$T/o"
t_ok

t_case "a tile that fails leaves the tiles before it stitched and its own previous set whole"
rm -rf "$T/o"; mkdir -p "$T/o"
cp "$T/h4"/*.halo.tif "$T/o/"
for l in $LAYERS; do cp "$T/h3/dem_r0_c0.$l.tif" "$T/h3/dem_r2_c2.$l.tif" "$T/o/"; done
corrupt "$T/o/dem_r2_c2.water.halo.tif"
t_exit 2 "$ERODE" stitch --tile-set "$T/tiles.list" -o "$T/o" "$A" "$Z"
t_one_error_line "dem_r2_c2.water.halo.tif"
same_files "$T/h4" "$T/o" dem_r0_c0
same_files "$T/h3" "$T/o" dem_r2_c2
no_temporaries "$T/o"
t_ok

# --- signals ------------------------------------------------------------

# locked_stitch: starts stitching A then Z into $T/o (previous set the
# 3-step one, halo outputs the 4-step ones) while another process ($holder)
# holds the output lock, and returns once A's three layers are written and
# wait for their renames ($pid: the stitch).
locked_stitch() {
    rm -rf "$T/o"; mkdir -p "$T/o"
    cp "$T/h4"/*.halo.tif "$T/o/"
    for l in $LAYERS; do cp "$T/h3/dem_r0_c0.$l.tif" "$T/h3/dem_r2_c2.$l.tif" "$T/o/"; done
    # The lock's holder is the sleep itself, so killing it frees the lock.
    sh -c 'exec 9> "$1" && flock 9 && exec sleep 60' sh "$T/o/.erode.lock" &
    holder=$!
    i=0
    while flock -n "$T/o/.erode.lock" true && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    "$ERODE" stitch -q --tile-set "$T/tiles.list" -o "$T/o" "$A" "$Z" > "$T/stdout" 2> "$T/stderr" &
    pid=$!
    i=0
    while [ "$(ls -A "$T/o" | grep -c '^\.dem_r0_c0\..*\.tif\.tmp-')" -lt 3 ] && [ $i -lt 600 ] &&
        kill -0 $pid 2> /dev/null; do
        sleep 0.1; i=$((i + 1))
    done
    kill -0 $pid 2> /dev/null || t_fail "the stitch did not wait for the lock: $(cat "$T/stderr")"
}
# release: ends the lock's holder.
release() { kill $holder 2> /dev/null; wait $holder 2> /dev/null; }

# signal_while_locked SIG STATUS: SIG to a locked_stitch: A and Z keep
# their previous sets.
signal_while_locked() {
    locked_stitch
    kill -"$1" $pid 2> /dev/null
    wait $pid; rc=$?
    release
    [ "$rc" -eq "$2" ] || t_fail "exit $rc, expected $2: $(cat "$T/stderr")"
    t_one_error_line "dem_r0_c0.tif.*interrupted"
    same_files "$T/h3" "$T/o" dem_r0_c0
    same_files "$T/h3" "$T/o" dem_r2_c2
    rm -f "$T/o/.erode.lock"
    no_temporaries "$T/o"
}
if have flock; then
    t_case "a halo output deleted after the checks: that tile fails, its previous set whole"
    locked_stitch
    rm "$T/o/dem_r2_c2.height.halo.tif"
    release
    wait $pid; rc=$?
    [ "$rc" -eq 2 ] || t_fail "exit $rc, expected 2: $(cat "$T/stderr")"
    t_one_error_line "cannot read '$T/o/dem_r2_c2.height.halo.tif'"
    same_files "$T/h4" "$T/o" dem_r0_c0
    same_files "$T/h3" "$T/o" dem_r2_c2
    no_temporaries "$T/o"
    t_ok

    t_case "SIGINT while a tile's layers wait to be renamed: exit 130, one line, previous sets whole"
    signal_while_locked INT 130
    t_ok
    t_case "SIGTERM while a tile's layers wait to be renamed: exit 143, one line, previous sets whole"
    signal_while_locked TERM 143
    t_ok
else
    t_case "stitch and signals"; t_skip "flock(1) (util-linux) not installed"
fi

# --- names: a tile is named after its entry in the tile set --------------

t_case "a tile run through a symbolic link: halo outputs under the entry's name, then stitched"
fresh "$T/o"
rm "$T/o/dem_r0_c0".*.halo.tif
ln -s "$A" "$T/link.tif"
t_exit 0 "$ERODE" -q --tile-set "$T/tiles.list" --halo 8 -s mei.steps=3 -o "$T/o" "$T/link.tif"
for l in $LAYERS; do
    cmp -s "$T/o/dem_r0_c0.$l.halo.tif" "$T/h3/dem_r0_c0.$l.halo.tif" || t_fail "no dem_r0_c0.$l.halo.tif as the entry's run"
done
ls "$T/o" | grep -q '^link\.' && t_fail "outputs under the link's name: $(ls "$T/o" | grep '^link\.')"
t_exit 0 "$ERODE" stitch -q --tile-set "$T/tiles.list" -o "$T/o" "$A"
same_files "$T/h3" "$T/o" dem_r0_c0
t_ok

t_case "a tile run through a hard link of another name: outputs under the entry's name"
fresh "$T/o"
rm "$T/o/dem_r1_c1".*.halo.tif
ln "$B" "$T/hard.tif"
t_exit 0 "$ERODE" -q --tile-set "$T/tiles.list" --halo 8 -s mei.steps=3 -o "$T/o" "$T/hard.tif"
for l in $LAYERS; do
    cmp -s "$T/o/dem_r1_c1.$l.halo.tif" "$T/h3/dem_r1_c1.$l.halo.tif" || t_fail "no dem_r1_c1.$l.halo.tif"
done
ls "$T/o" | grep -q '^hard\.' && t_fail "outputs under the link's name"
t_ok

t_case "erode stitch naming a tile through a symbolic link writes the entry's stitched tile"
fresh "$T/o"
t_exit 0 "$ERODE" stitch -q --tile-set "$T/tiles.list" -o "$T/o" "$T/link.tif"
[ "$(stitched "$T/o" | tr '\n' ' ')" = "dem_r0_c0.height.tif dem_r0_c0.sediment.tif dem_r0_c0.water.tif " ] ||
    t_fail "stitched: $(stitched "$T/o")"
same_files "$T/h3" "$T/o" dem_r0_c0
t_ok

t_case "a halo output that would replace a tile of the set not on the command line: exit 2"
rm -rf "$T/n"; mkdir -p "$T/n"
cp "$A" "$T/n/a.tif"; cp "$T/tiles/dem_r0_c1.tif" "$T/n/a.height.halo.tif"
printf '%s\n%s\n' "$T/n/a.tif" "$T/n/a.height.halo.tif" > "$T/n.list"
cp "$T/n/a.height.halo.tif" "$T/n-tile.tif"
t_exit 2 "$ERODE" -q --tile-set "$T/n.list" --halo 8 -s mei.steps=3 -o "$T/n" "$T/n/a.tif"
t_one_error_line "would replace the tile '$T/n/a.height.halo.tif'"
cmp -s "$T/n/a.height.halo.tif" "$T/n-tile.tif" || t_fail "the tile was replaced"
t_ok

t_case "two entries of the tile set that are one file are refused, naming both"
printf '%s\n%s\n' "$A" "$T/link.tif" > "$T/same.list"
mkdir -p "$T/e"
t_exit 2 "$ERODE" stitch --tile-set "$T/same.list" -o "$T/e"
t_one_error_line "link.tif"
grep -q "dem_r0_c0.tif" "$T/stderr" || t_fail "the first entry is not named: $(cat "$T/stderr")"
t_empty_dir "$T/e"
t_ok

t_case "two overlapping tiles are refused, naming both"
cp "$A" "$T/copy.tif"
printf '%s\n%s\n' "$A" "$T/copy.tif" > "$T/over.list"
t_exit 2 "$ERODE" stitch --tile-set "$T/over.list" -o "$T/e"
t_one_error_line "'$A' and '$T/copy.tif' overlap"
t_empty_dir "$T/e"
t_ok
