#!/bin/sh
# A checkpoint is user input (issue 38): format-6 checkpoints of every
# model and of staged runs (tests/data/checkpoints/6) with one value set to
# one no run leaves and their checksums made right again (ckpt_patch.py):
# heights of 1e300, the heights a stage started from at 1e30, SPH deposits
# of 1e300 and a particle load above sph.c_max, a droplet stage's heights
# out of their bound, a negative Mei water depth.  Each --resume is refused
# before any work: exit 2, one line naming the value, no output written.
. "$(dirname "$0")/lib.sh"
D=$SRCDIR/tests/data/checkpoints
C=$SRCDIR/configs
PATCH="$PY $SRCDIR/tests/integration/ckpt_patch.py"
# SPH's model section ends with the deposits (64 x 64) and the 65 source
# slots pending (core/sph/state.h): deposit j is double -(65 + 4096) + j
DEP=$((-(65 + 4096)))

# refused NAME WHERE INDEX VALUE PATTERN: checkpoint NAME of 6/ patched at
# WHERE[INDEX] = VALUE and resumed with its manifest's options
refused() {
    args=$(sed -n "s/^$1|//p" "$D/6/manifest" | sed "s|\$C|$C|g")
    t_case "$1: $2[$3] = $4 refused before any work"
    dir=$T/$1-$2-$3
    mkdir -p "$dir/out"
    cp "$D/6/$1.ckpt" "$dir/c.ckpt"
    $PATCH "$dir/c.ckpt" "$2" "$3" "$4" || t_fail "cannot patch $1.ckpt"
    # shellcheck disable=SC2086
    t_exit 2 "$ERODE" -q $args -j 2 --resume "$dir/c.ckpt" -o "$dir/out" "$D/in.tif"
    grep -v ': warning: ' "$T/stderr" > "$dir/err"
    mv "$dir/err" "$T/stderr"
    t_one_error_line "--resume: the state's $5"
    t_empty_dir "$dir/out"
    t_ok
}

refused stream_power model 100 1e300 "height 1e+300 at cell (36, 1)"
refused staged model 100 1e300 "height 1e+300 at cell (36, 1)"
refused staged_late stage-array:0 100 1e30 "height its stage started from 1e+30 at cell (36, 1)"
refused staged_late array:0 100 1e30 "height 1e+30 at cell (36, 1)"
refused staged_droplet array:0 100 1e30 "height 1e+30 at cell (36, 1)"
refused staged_droplet array:0 100 -1e30 "height -1e+30 at cell (36, 1)"
refused droplet array:0 100 1e30 "height 1e+30 at cell (36, 1)"
refused sph model $((DEP + 2000)) 1e300 "deposit .* at cell (16, 31)"
refused sph model 6 0.9 "particle 0 .* load outside \[0, sph.c_max = 0.3\]"
refused mei array:1 100 -1 "water depth -1 at cell (36, 1)"
refused mei array:0 100 1e30 "height 1e+30 at cell (36, 1)"
