#!/bin/sh
# Writes the checkpoints of tests/integration/91-old-checkpoints.sh with the
# erode given (ERODE=...), each a run stopped by SIGTERM part-way: the
# files erode wrote in checkpoint format 5 (erode 0.1.0 at commit a5e7885,
# here) and in format 6 (6/, which tests/integration/93-resumed-states.sh
# also patches), kept so that every later erode is tested on reading and
# resuming them.  DIR (default .) holds the manifest and receives the
# checkpoints.  Not run by the tests: run it again only to add a model or
# a format.
#   ERODE=/path/to/erode sh tests/data/checkpoints/make.sh [DIR]
set -eu
cd "$(dirname "$0")"
here=$(pwd)
C=$(cd ../../../configs && pwd)
# in.tif: cells 60..123 x 40..103 of ../whitebox_dem_f32_utm18n.tif
[ -f in.tif ] || gdal_translate -q -srcwin 60 40 64 64 -co COMPRESS=DEFLATE ../whitebox_dem_f32_utm18n.tif in.tif
cd "${1:-.}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
while IFS='|' read -r name args; do
    case $name in '#'* | '') continue ;; esac
    rm -f "$name.ckpt"
    args=$(printf '%s' "$args" | sed "s|\$C|$C|g")
    # shellcheck disable=SC2086
    (cd "$out" && exec "$ERODE" -q $args -j 2 --checkpoint "$OLDPWD/$name.ckpt" \
        --checkpoint-every 1 -o "$out" "$here/in.tif") &
    pid=$!
    while [ ! -s "$name.ckpt" ] && kill -0 $pid 2> /dev/null; do sleep 0.05; done
    sleep 0.1
    kill -TERM $pid 2> /dev/null || true
    rc=0; wait $pid || rc=$?
    [ "$rc" -eq 143 ] || { echo "make.sh: $name: exit $rc, not stopped part-way (143)" >&2; exit 1; }
    echo "$name: $(wc -c < "$name.ckpt") bytes"
done < manifest
