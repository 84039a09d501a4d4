#!/bin/sh
# One integration script for run.sh: run-one.sh RESULTS-DIR SCRIPT.  Its
# results go to RESULTS-DIR/NAME.lines, its output to RESULTS-DIR/NAME.log,
# printed whole when it ends (under a lock, so scripts running side by side
# do not interleave); a crash between cases leaves RESULTS-DIR/NAME.crashed.
dir=$1 t=$2
name=$(basename "$t" .sh)
t0=$(date +%s)
: > "$dir/$name.lines"
ER_RESULTS=$dir/$name sh "$t" > "$dir/$name.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && ! grep -q '^fail' "$dir/$name.lines"; then
    echo "  FAIL $name.sh exited $rc without a failed case" >> "$dir/$name.log"
    echo "$name" > "$dir/$name.crashed"
fi
# the seconds each script took, to keep `make check` within its budget,
# and the CPU seconds it and its children used (the figure to cut: beside
# other scripts a script's wall time grows with their load)
times > "$dir/$name.times" # (in this shell: a pipe's subshell has no children)
cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] } printf "%.0f", n }' "$dir/$name.times")
echo "integration: $name.sh took $(($(date +%s) - t0)) s, CPU $cpu s" >> "$dir/$name.log"
flock "$dir/.print" sh -c 'echo "integration: $1.sh"; cat "$2"' sh "$name" "$dir/$name.log"
exit 0
