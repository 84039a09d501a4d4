/*
 * Helpers shared by the unit tests: scratch directories, where the source
 * tree and the shared DEMs are, thread counts, and skips that say why.
 */
#ifndef ER_TEST_UTIL_H
#define ER_TEST_UTIL_H

#include <check.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Every passing assertion of Check 0.15 records its place (_mark_point):
 * in fork mode one write(2) to the parent's pipe, and the tests that
 * assert cell by cell made 6 million of them, about 40 s of CPU of
 * `make check`.  Here a passing assertion costs its comparison only, and a
 * failing one reports as before; what is lost is the "last place passed"
 * of a test that crashes or times out, which then names the test's first
 * line (ASan and gdb give the place).  Every ck_assert_* of check.h
 * expands to ck_assert_msg where it is used, so all of them change. */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                               \
    ((expr) ? (void)0                                                          \
            : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", __VA_ARGS__))

/* The source tree (make sets ER_SRCDIR), else the current directory. */
static inline const char *er_test_srcdir(void)
{
    const char *d = getenv("ER_SRCDIR");
    return d && *d ? d : ".";
}

/* Fills buf with "<srcdir>/<rel>". */
static inline const char *er_test_path(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", er_test_srcdir(), rel);
    return buf;
}

/* Fills buf with the path of a DEM of the optional real-DEM collection: the
 * directory $ER_SHARED_DEM, else the default below, outside this
 * repository.  Returns NULL when the file is not there (the test skips). */
static inline const char *er_test_shared_dem(char *buf, size_t n, const char *name)
{
    const char *d = getenv("ER_SHARED_DEM");
    if (d && *d)
        snprintf(buf, n, "%s/%s", d, name);
    else
        snprintf(buf, n, "%s/../shared/data/dem/%s", er_test_srcdir(), name);
    return access(buf, R_OK) == 0 ? buf : NULL;
}

/* Runs the OpenMP regions that follow on n threads (nothing without
 * OpenMP). */
static inline void er_test_set_threads(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/* The thread count the OpenMP regions that follow run on (1 without
 * OpenMP), to restore it after er_test_set_threads. */
static inline int er_test_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Creates a fresh scratch directory; the caller removes it with
 * er_test_rmdir. */
static inline const char *er_test_mkdtemp(char *buf, size_t n)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, n, "%s/erode-unit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(buf));
    return buf;
}

static inline void er_test_rmdir(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* er_test_in_child's result when it was asked to drop root privileges and
 * could not (the caller skips: root ignores permissions). */
#define ER_TEST_NO_USER 77
/* The unprivileged user and group a child drops to (nobody/nogroup). */
#define ER_TEST_NOBODY 65534

/* Runs fn(arg) in a forked child and returns fn's result (0..76 expected;
 * a test function returns 0 for success and a distinct small number for
 * each check that failed, since ck_assert cannot report from a grandchild).
 *
 * fsize_limit > 0: the child first sets RLIMIT_FSIZE to that many bytes
 * and ignores SIGXFSZ, so a write beyond it fails with EFBIG (a full disk
 * without a full disk).  unprivileged: when running as root, the child
 * drops to uid/gid 65534 so file permissions apply (returns
 * ER_TEST_NO_USER when it cannot; its supplementary groups stay, so a
 * directory meant to refuse it must deny group write too, as 0555 does).
 * Fails the test when the child dies of a signal or cannot set the limit. */
static inline int er_test_in_child(int (*fn)(void *), void *arg, int unprivileged, long fsize_limit)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (fsize_limit > 0) {
            struct rlimit rl = {(rlim_t)fsize_limit, (rlim_t)fsize_limit};
            signal(SIGXFSZ, SIG_IGN);
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(126);
        }
        if (unprivileged && geteuid() == 0
            && (setgid(ER_TEST_NOBODY) != 0 || setuid(ER_TEST_NOBODY) != 0 || geteuid() == 0))
            _exit(ER_TEST_NO_USER);
        _exit(fn(arg));
    }
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert_msg(WIFEXITED(ws), "child died of signal %d", WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    ck_assert_msg(WEXITSTATUS(ws) != 126, "child could not set RLIMIT_FSIZE");
    return WEXITSTATUS(ws);
}

/* For a test that asserts a Vulkan run repeats bit for bit: lavapipe
 * runs its workgroups on four worker threads, so that a missing barrier
 * or a race between workgroups changes the result, whatever the suite's
 * LP_NUM_THREADS (the Makefile runs the unit tests with 0, every dispatch
 * in the calling thread).  Before the device is opened; the test runs
 * in a process of its own (Check's fork mode; with CK_FORK=no the tests
 * after it keep the workers), and lavapipe reads the variable when it
 * enumerates its device. */
static inline void er_test_parallel_lavapipe(void)
{
    setenv("LP_NUM_THREADS", "4", 1);
}

/* Records a skip (printed, and counted by tests/summary.sh) and leaves the
 * test when `cond` holds. */
#define ER_SKIP_IF(cond, why)                                                  \
    do {                                                                       \
        if (cond) {                                                            \
            const char *er_r_ = getenv("ER_RESULTS");                          \
            fprintf(stderr, "skip: %s: %s\n", __func__, (why));                \
            if (er_r_) {                                                       \
                char er_p_[PATH_MAX];                                          \
                snprintf(er_p_, sizeof er_p_, "%s.skips", er_r_);              \
                FILE *er_f_ = fopen(er_p_, "a");                               \
                if (er_f_) {                                                   \
                    fprintf(er_f_, "%s: %s\n", __func__, (why));               \
                    fclose(er_f_);                                             \
                }                                                              \
            }                                                                  \
            return;                                                            \
        }                                                                      \
    } while (0)

#endif
