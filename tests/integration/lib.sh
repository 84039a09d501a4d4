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
# A script that sets its own EXIT trap calls t_exit_trap in it.
t_exit_trap() { _unfinished; rm -rf "$T"; }
trap t_exit_trap EXIT
# the Vulkan pipeline cache (and any other per-user cache) stays in $T
export XDG_CACHE_HOME="$T/.cache"
_case=""
_case_failed=0

_record() { printf '%s %s: %s\n' "$1" "$(basename "$0" .sh)" "$2" >> "${ER_RESULTS:-/dev/null}.lines"; }

# A case that ends neither in t_ok, t_fail nor t_skip (the script went on to
# the next case or exited in the middle of it) is a failure, not a silence.
_unfinished() {
    [ -n "$_case" ] && [ "$_case_failed" -eq 0 ] &&
        { _record fail "$_case: never reached t_ok, t_fail or t_skip"; echo "  FAIL $_case: unfinished"; }
    _case=""
}
t_case() { _unfinished; _case=$1; _case_failed=0; }
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
# fbm_middle OUT N SEED: the N x N middle of the 1024^2 fBm map of SEED
# (scripts/make-terrain, 10 m cells, 0..1000 m: the noise the presets are
# made for; made once a script, under $T) written to OUT.  A whole N x N
# map of the noise spans the same 1000 m over a smaller square, so it is
# steeper than any user's 1024^2 one.
fbm_middle() {
    [ -s "$T/fbm1024s$3.tif" ] ||
        $PY "$SRCDIR/scripts/make-terrain" "$T/fbm1024s$3" 1024 "$3" > /dev/null || return 1
    _fbm_at=$(((1024 - $2) / 2))
    gdal_translate -q -srcwin $_fbm_at $_fbm_at "$2" "$2" "$T/fbm1024s$3.tif" "$1"
}
# Debian's GDAL Python lives beside the system python, not a pyenv one.
# $PY ARGS does what /usr/bin/python3 ARGS does (status, stdout, stderr,
# stdin, environment, working directory), but in a fork of one interpreter
# that has imported GDAL and numpy (pyserve.py): a start costs about 0.4 s
# of CPU, and the suite made hundreds of them.  The server starts at the
# first $PY of the script's own shell; a $PY in a subshell before that, or
# without a server, starts python3 itself.  Output comes when the run ends.
PY=py
_py_dir=
py() {
    read -r _py_pid _py_rest < /proc/self/stat
    [ -n "$_py_dir" ] || [ "$_py_pid" != $$ ] || _py_start
    [ -n "$_py_dir" ] || { /usr/bin/python3 "$@"; return; }
    _py_rc=
    {
        flock 9
        printf '%s\0' "$@" > "$_py_dir/argv"
        printf '%s' "$PWD" > "$_py_dir/cwd"
        env -0 > "$_py_dir/env"
        if (echo "$_py_pid" >&7) 2> /dev/null && read -r _py_rc _py_how <&8; then
            cat "$_py_dir/out"
            [ "$_py_how" = merged ] || cat "$_py_dir/err" >&2
        fi
    } 9> "$_py_dir/lock" 6<&0 # the child's stdin: fd 0 is fd 8 while read waits
    [ -n "$_py_rc" ] || { /usr/bin/python3 "$@"; return; } # the server is gone
    return "$_py_rc"
}
# The server reads requests on fd 7 and answers on fd 8 (FIFOs in $T/.py);
# it is no job of this shell (a bare `wait` would wait for it) and leaves
# when this shell does.
_py_start() {
    [ -x /usr/bin/python3 ] && mkdir "$T/.py" && mkfifo "$T/.py/q" "$T/.py/a" || return 0
    (/usr/bin/python3 "$SRCDIR/tests/integration/pyserve.py" "$T/.py" $$ \
        < "$T/.py/q" > "$T/.py/a" 2> "$T/.py/log" &)
    exec 7> "$T/.py/q" 8< "$T/.py/a"
    _py_dir=$T/.py
}

# --- kill and resume (90-checkpoint, 82/83-vulkan-*-hooks) -----------------
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# A random delay in seconds for kill number $1: between 0.25 and 0.85 of
# the reference run's time ($dur ms, so the kills land mid-run on a fast
# build and under ASan alike), growing with every kill so each run gets
# further.
rand_sleep() {
    r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
    awk -v n="$1" -v r="$r" -v d="$dur" 'BEGIN { printf "%.3f", d / 1000 * (0.25 + (r % 600) / 1000 + 0.1 * n) }'
}

# killed_run NAME EVERY ARGS: runs erode ARGS (options, word-split) on $W
# into $T/NAME/out with --checkpoint-every EVERY, killed with SIGKILL after
# rand_sleep and resumed from the checkpoint ($T/NAME/ck/$stem.ckpt) until
# it exits 0, alternating -j 1 and 2; its last stdout in $T/NAME/stdout.
# Sets kills.
killed_run() {
    dir=$T/$1 every=$2 args=$3
    rm -rf "$dir"; mkdir -p "$dir/out" "$dir/ck"
    ck=$dir/ck/$stem.ckpt
    kills=0 n=0 rc=1
    while [ $n -lt 40 ]; do
        res=""
        [ -f "$ck" ] && res="--resume $ck"
        # shellcheck disable=SC2086
        "$ERODE" -q $args -j $((n % 2 + 1)) --checkpoint "$ck" --checkpoint-every "$every" $res \
            -o "$dir/out" "$W" > "$dir/stdout" 2> "$dir/stderr" &
        pid=$!
        sleep "$(rand_sleep $n)"
        kill -KILL $pid 2> /dev/null
        wait $pid 2> /dev/null; rc=$?
        n=$((n + 1))
        [ $rc -eq 0 ] && break
        [ $rc -eq 137 ] || { t_fail "run $n exited $rc: $(head -c 300 "$dir/stderr")"; return; }
        kills=$((kills + 1))
    done
    [ $rc -eq 0 ] || t_fail "no run finished in $n tries"
    [ -f "$ck" ] && t_fail "the checkpoint is still there after success"
}

# killed_resumed NAME EVERY ARGS: killed_run until it was killed at least
# once (halving $dur after a try without a kill, four tries at most).
killed_resumed() {
    tries=0
    while :; do
        killed_run "$1" "$2" "$3"
        tries=$((tries + 1))
        [ "$kills" -ge 1 ] || [ $tries -ge 4 ] && break
        dur=$((dur / 2))
    done
    [ "$kills" -ge 1 ] || t_fail "the run was never killed: the test proves nothing"
}
