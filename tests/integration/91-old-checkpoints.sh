#!/bin/sh
# Checkpoints written by an earlier erode (tests/data/checkpoints: format
# 5, each model and a staged run, stopped part-way by SIGTERM; make.sh
# there wrote them; and format 6 in 6/, a droplet stage's too) still
# resume, at another thread count, to the bytes of an uninterrupted run of
# this erode, --json budget included, its line valid against
# man/erode-json.schema.json: the checks of a resumed state refuse none
# of them.
. "$(dirname "$0")/lib.sh"
D=$SRCDIR/tests/data/checkpoints
C=$SRCDIR/configs
# The lines compared without what differs between runs, and the budget's
# left_map and relative_error apart: an older stream-power checkpoint
# holds the left_map its erode summed face by face, which differs from this
# erode's count (core/stream_power/diffuse.c) in its last digits.
same='del(.seconds, .timing, .outputs, .resumed_at, .stages[]?.seconds)
      | walk(if type == "object" then del(.left_map, .relative_error) else . end)'
left='def left: [.budget.left_map, .stages[]?.budget.left_map];
      ($a[0] | left) as $x | ($b[0] | left) as $y
      | all(range($x | length); (($x[.] - $y[.]) | fabs) <= 1e-12 * ($x[.] | fabs))'
resume_all() { # DIR FORMAT
    while IFS='|' read -r name args; do
        case $name in '#'* | '') continue ;; esac
        args=$(printf '%s' "$args" | sed "s|\$C|$C|g")
        t_case "$name: a format-$2 checkpoint resumes (-j1) to the uninterrupted run's bytes (-j2)"
        name=$name-$2
        mkdir -p "$T/$name/res"
        # the uninterrupted run, once for the runs both formats list alike
        ref=$T/ref-$(printf '%s' "$args" | cksum | tr ' ' -)
        if [ ! -s "$ref.line" ]; then
            mkdir -p "$ref"
            # shellcheck disable=SC2086
            t_exit 0 "$ERODE" -q $args -j 2 --json -o "$ref" "$D/in.tif"
            cp "$T/stdout" "$ref.line"
        fi
        cp -R "$ref" "$T/$name/ref"
        cp "$ref.line" "$T/$name/ref.line"
        jq -c "$same" "$T/$name/ref.line" > "$T/$name/ref.json"
        cp "$1/${name%-*}.ckpt" "$T/$name/c.ckpt"
        # shellcheck disable=SC2086
        t_exit 0 "$ERODE" -q $args -j 1 --json --resume "$T/$name/c.ckpt" -o "$T/$name/res" "$D/in.tif"
        $PY "$SRCDIR/tests/integration/json_schema.py" "$SRCDIR/man/erode-json.schema.json" \
            "$T/stdout" > "$T/why" || t_fail "the resumed --json line: $(head -c 400 "$T/why")"
        jq -c "$same" "$T/stdout" > "$T/$name/res.json"
        n=0
        for f in "$T/$name/ref"/*; do
            n=$((n + 1))
            cmp -s "$f" "$T/$name/res/${f##*/}" || t_fail "${f##*/} differs from the uninterrupted run's"
        done
        [ "$n" -ge 3 ] || t_fail "only $n outputs"
        cmp -s "$T/$name/ref.json" "$T/$name/res.json" ||
            t_fail "--json differs: $(diff "$T/$name/ref.json" "$T/$name/res.json" | head -c 400)"
        jq -e -n --slurpfile a "$T/$name/ref.line" --slurpfile b "$T/stdout" "$left" > /dev/null ||
            t_fail "left_map differs past the rounding of its count: $(jq -c "[.budget.left_map]" \
                "$T/$name/ref.line" "$T/stdout" | tr '\n' ' ')"
        t_ok
    done < "$1/manifest"
}
resume_all "$D" 5
resume_all "$D/6" 6
