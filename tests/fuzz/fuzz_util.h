/*
 * Helpers shared by the libFuzzer targets (tests/fuzz/fuzz_*.c): the input
 * bytes as a file the path-based readers can open, a scratch directory for
 * round trips, and the checks every error must pass.  A failed check calls
 * abort(), which libFuzzer reports as a crash and saves the input.
 */
#ifndef ER_FUZZ_UTIL_H
#define ER_FUZZ_UTIL_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../core/error.h"

/* Largest float copy of an image the readers may allocate: big enough for
 * every seed, small enough that a header claiming a huge map is refused
 * quickly instead of slowing every execution down. */
#define ER_FUZZ_MAX_BYTES ((size_t)16 << 20)

#define ER_FUZZ_CHECK(cond, ...)                                               \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__,      \
                    __LINE__, #cond);                                          \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Little-endian integers of the formats the targets repair. */
static inline uint32_t er_fuzz_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t er_fuzz_u64(const uint8_t *p)
{
    return (uint64_t)er_fuzz_u32(p) | (uint64_t)er_fuzz_u32(p + 4) << 32;
}

static inline void er_fuzz_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A copy of the input to repair (the caller frees). */
static inline uint8_t *er_fuzz_copy(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size);
    ER_FUZZ_CHECK(copy != NULL, "out of memory");
    return memcpy(copy, data, size);
}

/* The input as a file: an anonymous memory file reached through
 * /proc/self/fd, rewritten for every input (no disk, no leftovers); a
 * temporary file where memfd_create is missing.  Returns its path. */
static inline const char *er_fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("erode-fuzz", MFD_CLOEXEC);
        if (fd >= 0) {
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        } else {
            snprintf(path, sizeof path, "/tmp/erode-fuzz-%ld-XXXXXX", (long)getpid());
            fd = mkstemp(path);
            ER_FUZZ_CHECK(fd >= 0, "cannot create a temporary file");
            unlink(path); /* reached through /proc/self/fd from now on */
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        }
    }
    ER_FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate");
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
        ER_FUZZ_CHECK(n > 0, "pwrite");
        done += (size_t)n;
    }
    return path;
}

static char er_fuzz_dir_path[PATH_MAX];

static inline void er_fuzz_dir_remove(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", er_fuzz_dir_path);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", er_fuzz_dir_path);
}

/* A scratch directory for written files, on tmpfs when there is one (the
 * writers fsync), removed at exit. */
static inline const char *er_fuzz_dir(void)
{
    if (!er_fuzz_dir_path[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(er_fuzz_dir_path, sizeof er_fuzz_dir_path, "%s/erode-fuzz-XXXXXX", base);
        ER_FUZZ_CHECK(mkdtemp(er_fuzz_dir_path) != NULL, "mkdtemp in %s", base);
        atexit(er_fuzz_dir_remove);
    }
    return er_fuzz_dir_path;
}

/* A failure's message: one non-empty line of printable text, not ending in
 * a full stop, starting with `prefix` (CONTRIBUTING.md "Style", erode(1)
 * EXIT STATUS). */
static inline void er_fuzz_check_error(er_status st, const er_error *err, const char *prefix)
{
    ER_FUZZ_CHECK(st > ER_OK && st <= ER_ECANCELED, "status %d", (int)st);
    size_t n = strnlen(err->msg, sizeof err->msg);
    ER_FUZZ_CHECK(n > 0 && n < sizeof err->msg, "empty or unterminated message");
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)err->msg[i];
        ER_FUZZ_CHECK(ch >= 0x20 && ch != 0x7f, "control byte 0x%02x at %zu in '%s'", ch, i, err->msg);
    }
    ER_FUZZ_CHECK(err->msg[n - 1] != '.' && err->msg[n - 1] != ' ', "message ends in '%c': '%s'",
                  err->msg[n - 1], err->msg);
    ER_FUZZ_CHECK(strncmp(err->msg, prefix, strlen(prefix)) == 0, "message '%s' does not start with '%s'",
                  err->msg, prefix);
}

#endif
