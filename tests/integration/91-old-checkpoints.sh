#!/bin/sh
# Checkpoints written by an earlier erode (tests/data/checkpoints: format
# 5, each model and a staged run, stopped part-way by SIGTERM; make.sh
# there wrote them; and format 6 in 6/, a droplet stage's too) still
# resume, at another thread count, to the bytes of an uninterrupted run of
# this erode, --json budget included: the checks of a resumed state
# (issue 38) refuse none of them.
. "$(dirname "$0")/lib.sh"
D=$SRCDIR/tests/data/checkpoints
C=$SRCDIR/configs
resume_all() { # DIR FORMAT
    while IFS='|' read -r name args; do
        case $name in '#'* | '') continue ;; esac
        args=$(printf '%s' "$args" | sed "s|\$C|$C|g")
        t_case "$name: a format-$2 checkpoint resumes (-j1) to the uninterrupted run's bytes (-j2)"
        name=$name-$2
        mkdir -p "$T/$name/ref" "$T/$name/res"
        # shellcheck disable=SC2086
        t_exit 0 "$ERODE" -q $args -j 2 --json -o "$T/$name/ref" "$D/in.tif"
        jq -c 'del(.seconds, .timing, .outputs, .resumed_at)' "$T/stdout" > "$T/$name/ref.json"
        cp "$1/${name%-*}.ckpt" "$T/$name/c.ckpt"
        # shellcheck disable=SC2086
        t_exit 0 "$ERODE" -q $args -j 1 --json --resume "$T/$name/c.ckpt" -o "$T/$name/res" "$D/in.tif"
        jq -c 'del(.seconds, .timing, .outputs, .resumed_at)' "$T/stdout" > "$T/$name/res.json"
        n=0
        for f in "$T/$name/ref"/*; do
            n=$((n + 1))
            cmp -s "$f" "$T/$name/res/${f##*/}" || t_fail "${f##*/} differs from the uninterrupted run's"
        done
        [ "$n" -ge 3 ] || t_fail "only $n outputs"
        cmp -s "$T/$name/ref.json" "$T/$name/res.json" ||
            t_fail "--json differs: $(diff "$T/$name/ref.json" "$T/$name/res.json" | head -c 400)"
        t_ok
    done < "$1/manifest"
}
resume_all "$D" 5
resume_all "$D/6" 6
