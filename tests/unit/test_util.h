/*
 * Helpers shared by the unit tests: scratch directories, where the source
 * tree and the shared DEMs are, and skips that say why.
 */
#ifndef ER_TEST_UTIL_H
#define ER_TEST_UTIL_H

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Fills buf with the path of a DEM in ../shared/data/dem (or $ER_SHARED_DEM);
 * returns NULL when the file is not there. */
static inline const char *er_test_shared_dem(char *buf, size_t n, const char *name)
{
    const char *d = getenv("ER_SHARED_DEM");
    if (d && *d)
        snprintf(buf, n, "%s/%s", d, name);
    else
        snprintf(buf, n, "%s/../shared/data/dem/%s", er_test_srcdir(), name);
    return access(buf, R_OK) == 0 ? buf : NULL;
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
