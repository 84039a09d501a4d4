# Sourced by tests/integration/*.sh.  Each script runs several named cases:
#   t_case "name"; ...checks...; t_ok        (or t_fail "why", t_skip "why")
# and the runner adds up the lines each script appends to $ER_RESULTS.lines.
# $ERODE is the binary under test; $SRCDIR the source tree; $DEM the shared
# DEM folder (may be absent); $T a scratch directory removed at exit.

set -u
: "${ERODE:?ERODE must name the erode binary}"
SRCDIR=${SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DEM=${ER_SHARED_DEM:-$SRCDIR/../shared/data/dem}
DATA=$SRCDIR/tests/data
T=$(mktemp -d "${TMPDIR:-/tmp}/erode-it-XXXXXX")
trap 'rm -rf "$T"' EXIT
_case=""
_case_failed=0

_record() { printf '%s %s: %s\n' "$1" "$(basename "$0" .sh)" "$2" >> "${ER_RESULTS:-/dev/null}.lines"; }

t_case() { _case=$1; _case_failed=0; }
t_ok() { [ "$_case_failed" -eq 0 ] && { _record pass "$_case"; echo "  ok   $_case"; }; _case=""; }
t_fail() {
    [ "$_case_failed" -eq 0 ] && { _record fail "$_case"; echo "  FAIL $_case: $*"; }
    _case_failed=1
}
t_skip() { _record skip "$_case: $*"; echo "  skip $_case: $*"; _case=""; }

# Fails the case unless the command exits with the given status.
t_exit() {
    want=$1; shift
    "$@" > "$T/stdout" 2> "$T/stderr"; got=$?
    [ "$got" -eq "$want" ] || t_fail "'$*' exited $got, expected $want: $(head -c 300 "$T/stderr")"
}
# The captured stderr has exactly one line, matching the given pattern.
t_one_error_line() {
    n=$(wc -l < "$T/stderr")
    [ "$n" -eq 1 ] || t_fail "expected one error line, got $n: $(head -c 300 "$T/stderr")"
    grep -q -- "$1" "$T/stderr" || t_fail "error line '$(cat "$T/stderr")' lacks '$1'"
}
# Fails when a directory holds any file (optionally: other than those listed).
t_empty_dir() {
    left=$(ls -A "$1")
    [ -z "$left" ] || t_fail "files left in $1: $left"
}
have() { command -v "$1" > /dev/null 2>&1; }
# Debian's GDAL Python lives beside the system python, not a pyenv one.
PY=/usr/bin/python3
