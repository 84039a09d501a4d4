#!/bin/sh
# Runs every tests/integration/*.sh and prints "N passed, N failed, N skipped".
# Scripts run $ER_JOBS at a time (default 3: the suite's budget is 7 minutes
# on two cores, most scripts keep one core busy at most, and many wait on
# a signal, a lock or a sleep part of their time: on a 2-core machine,
# beside the unit tests, two at a time used 1.68 cores on average, three
# left no core idle (vmstat) until the last half minute); each prints its
# output when it ends, whole.  Each case a script runs appends one
# "pass|fail|skip ..." line to its own results file (a case that never ends
# is recorded as failed by lib.sh).  A script that exits non-zero without
# having recorded a failure of its own is counted as one more failure: it
# crashed between cases.
here=$(cd "$(dirname "$0")" && pwd)
: "${ER_RESULTS:=/tmp/erode-integration-results}"
: "${ER_JOBS:=3}"
export SRCDIR="${SRCDIR:-$(cd "$here/../.." && pwd)}"
dir=$ER_RESULTS.scripts
rm -rf "$dir" "$ER_RESULTS.lines" "$ER_RESULTS.skips"
mkdir -p "$dir" || exit 1
# the slow scripts first (tests/integration/slow), then the rest by name
{
    grep -v '^#' "$here/slow" | while read -r s; do [ -f "$here/$s" ] && echo "$here/$s"; done
    ls "$here"/[0-9]*.sh
} | awk '!seen[$0]++' | xargs -P "$ER_JOBS" -n 1 sh "$here/run-one.sh" "$dir"
cat "$dir"/*.lines > "$ER_RESULTS.lines" 2> /dev/null
crashed=$(cat "$dir"/*.crashed 2> /dev/null | wc -l)
p=$(grep -c '^pass' "$ER_RESULTS.lines")
f=$(grep -c '^fail' "$ER_RESULTS.lines")
grep '^skip' "$ER_RESULTS.lines" | sed 's/^skip //' > "$ER_RESULTS.skips"
s=$(wc -l < "$ER_RESULTS.skips")
f=$((f + crashed))
echo "$p $f" > "$ER_RESULTS"
echo "integration: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
