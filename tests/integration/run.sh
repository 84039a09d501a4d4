#!/bin/sh
# Runs every tests/integration/*.sh and prints "N passed, N failed, N skipped".
# Each case a script runs appends one "pass|fail|skip ..." line to
# $ER_RESULTS.lines; a script that dies without recording is a failure.
here=$(cd "$(dirname "$0")" && pwd)
: "${ER_RESULTS:=/tmp/erode-integration-results}"
export ER_RESULTS SRCDIR="${SRCDIR:-$(cd "$here/../.." && pwd)}"
rm -f "$ER_RESULTS.lines" "$ER_RESULTS.skips"
crashed=0
for t in "$here"/[0-9]*.sh; do
    [ -f "$t" ] || continue
    echo "integration: $(basename "$t")"
    t0=$(date +%s)
    before=$(cat "$ER_RESULTS.lines" 2>/dev/null | wc -l)
    if ! sh "$t"; then
        after=$(cat "$ER_RESULTS.lines" 2>/dev/null | wc -l)
        if ! grep -q '^fail' "$ER_RESULTS.lines" 2>/dev/null || [ "$after" -eq "$before" ]; then
            echo "  FAIL $(basename "$t") exited non-zero"
            crashed=$((crashed + 1))
        fi
    fi
    # the seconds each script took, to keep `make check` within its budget
    echo "integration: $(basename "$t") took $(($(date +%s) - t0)) s"
done
p=$(grep -c '^pass' "$ER_RESULTS.lines" 2>/dev/null); p=${p:-0}
f=$(grep -c '^fail' "$ER_RESULTS.lines" 2>/dev/null); f=${f:-0}
grep '^skip' "$ER_RESULTS.lines" 2>/dev/null | sed 's/^skip //' > "$ER_RESULTS.skips"
s=$(wc -l < "$ER_RESULTS.skips")
f=$((f + crashed))
echo "$p $f" > "$ER_RESULTS"
echo "integration: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
