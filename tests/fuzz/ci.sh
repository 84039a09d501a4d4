#!/bin/sh
# A short fuzz run for CI (.ci/run): each libFuzzer target ~30 s on its seed
# corpus, after the files of tests/data/bad; exits non-zero on a crash.  Skips,
# exiting 0, when clang with libFuzzer is not installed.
#   sh tests/fuzz/ci.sh            (FUZZ_SECONDS=N to change the time)
cd "$(dirname "$0")/../.." || exit 1
cc=${FUZZ_CC:-clang}
secs=${FUZZ_SECONDS:-30}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/erode-fuzz-probe-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\n%s\n' \
    'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
    > "$tmp/probe.c"
if ! command -v "$cc" > /dev/null 2>&1 \
    || ! "$cc" -fsanitize=fuzzer,address,undefined -o "$tmp/probe" "$tmp/probe.c" > /dev/null 2>&1; then
    echo "fuzz: skipped: $cc with libFuzzer is not installed (scripts/deps --test installs clang)"
    exit 0
fi
# WERROR=0: a clang-only warning in new code must not fail this step;
# crashes, leaks, hangs and failed property checks do.
make --no-print-directory fuzz FUZZ_CC="$cc" FUZZ_SECONDS="$secs" WERROR=0
