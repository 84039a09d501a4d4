#!/bin/sh
# Documentation checks: mandoc -Tlint clean man pages.
erode=${1:-./erode}
status=0
for m in man/*.[15]; do
    [ -f "$m" ] || continue
    out=$(mandoc -Tlint -W warning "$m" 2>&1) || { echo "lint: $m"; echo "$out"; status=1; }
done
exit $status
