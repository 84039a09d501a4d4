#!/bin/sh
# Adds up the unit and integration results of one `make check` and prints the
# closing line "check: N passed, N failed, N skipped"; exits 1 on any failure.
build=${1:-build}
passed=0 failed=0 skipped=0
for f in "$build"/results.unit "$build"/results.integration; do
    [ -f "$f" ] || { echo "summary: $f missing (that stage did not finish)"; failed=$((failed + 1)); continue; }
    read -r p fl < "$f"
    passed=$((passed + p)); failed=$((failed + fl))
done
for f in "$build"/results.unit.skips "$build"/results.integration.skips; do
    [ -f "$f" ] && skipped=$((skipped + $(wc -l < "$f")))
done
if [ "$skipped" -gt 0 ]; then
    echo "skipped tests:"; cat "$build"/results.*.skips 2>/dev/null | sed 's/^/  /'
fi
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
