#!/bin/sh
# Runs every tests/integration/*.sh and prints "N passed, N failed, N skipped".
# Each case a script runs appends one "pass|fail|skip ..." line to
# $ER_RESULTS.lines (a case that never ends is recorded as failed by
# lib.sh).  A script that exits non-zero without having recorded a failure
# of its own is counted as one more failure: it crashed between cases.
here=$(cd "$(dirname "$0")" && pwd)
: "${ER_RESULTS:=/tmp/erode-integration-results}"
export ER_RESULTS SRCDIR="${SRCDIR:-$(cd "$here/../.." && pwd)}"
rm -f "$ER_RESULTS.lines" "$ER_RESULTS.skips"
: > "$ER_RESULTS.lines"
crashed=0
for t in "$here"/[0-9]*.sh; do
    [ -f "$t" ] || continue
    echo "integration: $(basename "$t")"
    t0=$(date +%s)
    before=$(wc -l < "$ER_RESULTS.lines")
    sh "$t"; rc=$?
    # only the lines this script appended
    own_fails=$(tail -n +"$((before + 1))" "$ER_RESULTS.lines" | grep -c '^fail')
    if [ "$rc" -ne 0 ] && [ "$own_fails" -eq 0 ]; then
        echo "  FAIL $(basename "$t") exited $rc without a failed case"
        crashed=$((crashed + 1))
    fi
    # the seconds each script took, to keep `make check` within its budget
    echo "integration: $(basename "$t") took $(($(date +%s) - t0)) s"
done
p=$(grep -c '^pass' "$ER_RESULTS.lines")
f=$(grep -c '^fail' "$ER_RESULTS.lines")
grep '^skip' "$ER_RESULTS.lines" | sed 's/^skip //' > "$ER_RESULTS.skips"
s=$(wc -l < "$ER_RESULTS.skips")
f=$((f + crashed))
echo "$p $f" > "$ER_RESULTS"
echo "integration: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
