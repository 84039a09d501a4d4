#!/bin/sh
# Runs libFuzzer targets built by `make fuzz` (the Makefile calls this):
#   FUZZ_BUILD=build-fuzz sh tests/fuzz/run.sh SECONDS TARGET...
# For each target: the hostile-input corpus once (tests/data/bad/: *.tif,
# *.png or *.json, crashes found by fuzzing included; for checkpoint and
# resume, whose files have no place there, their own seeds), then SECONDS of
# fuzzing from the seed corpus (tests/fuzz/corpus/<target>/) with the
# target's dictionary.  A single allocation over 512 MiB counts as a
# crash: the readers' own limit is 16 MiB (fuzz_util.h).  New inputs go to
# $FUZZ_BUILD/corpus-<target>/ (kept between runs, never committed),
# crashes to $FUZZ_BUILD/crash-<target>-*, the full log to
# $FUZZ_BUILD/fuzz-<target>.log.  Exits 1 if any target crashed, leaked,
# hung (over 20 s on one input) or ran out of memory.  SECONDS = 0 runs
# tests/data/bad only.
set -u
[ $# -ge 2 ] || { echo "usage: run.sh SECONDS TARGET..." >&2; exit 2; }
secs=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${FUZZ_BUILD:-build-fuzz}
status=0

for t in "$@"; do
    bin=$build/fuzz_$t
    log=$build/fuzz-$t.log
    [ -x "$bin" ] || { echo "fuzz: $bin not built"; status=1; continue; }
    where="tests/data/bad" seeds=""
    case $t in
    tiff) bad="$src/tests/data/bad/*.tif"; maxlen=16384 ;;
    png) bad="$src/tests/data/bad/*.png"; maxlen=16384 ;;
    recipe) bad="$src/tests/data/bad/*.json"; maxlen=8192 ;;
    # no hostile corpus in tests/data/bad: its seeds, regressions included;
    # fuzzed from resume's too (format 6, every model's sections and a
    # stage section, up to 9 KiB)
    checkpoint) bad="$here/corpus/checkpoint/*"; where="corpus/checkpoint"; maxlen=16384
        seeds="$here/corpus/resume" ;;
    # real checkpoints of every model and a staged run (12 x 10 cells; an
    # SPH one's particles make it the longest)
    resume) bad="$here/corpus/resume/*"; where="corpus/resume"; maxlen=65536 ;;
    *) bad=""; maxlen=4096 ;;
    esac
    # shellcheck disable=SC2086
    files=$(ls $bad 2>/dev/null)
    n=$(echo "$files" | grep -c .)
    # shellcheck disable=SC2086
    if [ "$n" -gt 0 ] && ! "$bin" -malloc_limit_mb=512 $files > "$log" 2>&1; then
        echo "fuzz: $t: an input of $where crashed:"; tail -n 40 "$log"
        status=1; continue
    fi
    echo "fuzz: $t: $n inputs of $where ok"
    [ "$secs" -gt 0 ] || continue
    mkdir -p "$build/corpus-$t"
    dict=""
    [ -f "$here/$t.dict" ] && dict="-dict=$here/$t.dict"
    # shellcheck disable=SC2086
    "$bin" -max_total_time="$secs" -print_final_stats=1 -timeout=20 -malloc_limit_mb=512 -max_len=$maxlen $dict \
        -artifact_prefix="$build/crash-$t-" "$build/corpus-$t" "$here/corpus/$t" $seeds > "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    if [ $rc -ne 0 ]; then
        echo "fuzz: $t: FAILED after ${execs:-?} executions (exit $rc), log in $log:"
        grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz check failed|artifact_prefix|Test unit written)' "$log" | head -n 10
        status=1
    else
        echo "fuzz: $t: ${execs:-?} executions in ${secs} s, ${cov:-cov: ?}, no crash"
    fi
done
exit $status
