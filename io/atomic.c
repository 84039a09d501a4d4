#include "atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporaries a signal handler must remove.  Fixed size and written
 * with sig_atomic_t flags so the handler reads only complete entries. */
#define ER_ATOMIC_SLOTS 64
#define ER_ATOMIC_PATH 4096
static char cleanup_path[ER_ATOMIC_SLOTS][ER_ATOMIC_PATH];
static volatile sig_atomic_t cleanup_used[ER_ATOMIC_SLOTS];

static int slot_take(const char *path)
{
    if (strlen(path) >= ER_ATOMIC_PATH)
        return -1;
    for (int i = 0; i < ER_ATOMIC_SLOTS; i++) {
        if (!cleanup_used[i]) {
            memcpy(cleanup_path[i], path, strlen(path) + 1);
            cleanup_used[i] = 1;
            return i;
        }
    }
    return -1;
}

static void slot_release(int slot)
{
    if (slot >= 0)
        cleanup_used[slot] = 0;
}

/* "<dir>/.<base>.tmp-XXXXXX": hidden, in the same directory so rename() is
 * atomic (same filesystem). */
static char *temp_template(const char *final_path)
{
    const char *slash = strrchr(final_path, '/');
    size_t dirlen = slash ? (size_t)(slash - final_path) + 1 : 0;
    const char *base = final_path + dirlen;
    size_t n = strlen(final_path) + 16;
    char *t = malloc(n);
    if (t)
        snprintf(t, n, "%.*s.%s.tmp-XXXXXX", (int)dirlen, final_path, base);
    return t;
}

const char *er_atomic_reason(int errnum)
{
    switch (errnum) {
    case ENOSPC: return "no space left on device";
    case EFBIG: return "file too large (the file size limit was reached)";
#ifdef EDQUOT
    case EDQUOT: return "disk quota exceeded";
#endif
    case EROFS: return "read-only file system";
    case EACCES: return "permission denied";
    case EIO: return "input/output error";
    default: return strerror(errnum);
    }
}

er_status er_atomic_open(er_atomic *a, const char *final_path, er_error *err)
{
    a->fd = -1;
    a->slot = -1;
    a->final_path = strdup(final_path);
    a->tmp_path = temp_template(final_path);
    if (!a->final_path || !a->tmp_path) {
        er_atomic_abort(a);
        return er_fail(err, ER_ENOMEM, "'%s': out of memory", final_path);
    }
    a->fd = mkstemp(a->tmp_path);
    if (a->fd < 0) {
        int e = errno;
        free(a->tmp_path);
        a->tmp_path = NULL;
        er_atomic_abort(a);
        return er_fail(err, ER_EIO, "cannot create '%s': %s", final_path, er_atomic_reason(e));
    }
    a->slot = slot_take(a->tmp_path);
    /* mkstemp makes the file 0600; outputs are ordinary files. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(a->fd, 0666 & ~mask) != 0) {
        int e = errno;
        er_atomic_abort(a);
        return er_fail(err, ER_EIO, "cannot create '%s': %s", final_path, er_atomic_reason(e));
    }
    return ER_OK;
}

/* The output set being written (er_atomic_set_begin): commits that wait for
 * er_atomic_set_commit.  The CLI is single-threaded when it writes. */
static struct {
    int active, n;
    er_atomic held[ER_ATOMIC_SLOTS];
} set;

void er_atomic_set_begin(void)
{
    set.active = 1;
    set.n = 0;
}

static void atomic_free(er_atomic *a)
{
    slot_release(a->slot);
    a->slot = -1;
    free(a->final_path);
    free(a->tmp_path);
    a->final_path = a->tmp_path = NULL;
}

er_status er_atomic_commit(er_atomic *a, er_error *err)
{
    if (a->fd >= 0) {
        int rc = fsync(a->fd);
        int e = errno;
        if (close(a->fd) != 0 && rc == 0) {
            rc = -1;
            e = errno;
        }
        a->fd = -1;
        if (rc != 0) {
            er_status st = er_fail(err, ER_EIO, "cannot write '%s': %s", a->final_path, er_atomic_reason(e));
            er_atomic_abort(a);
            return st;
        }
    }
    if (set.active) {
        if (set.n == ER_ATOMIC_SLOTS) {
            er_atomic_abort(a);
            return er_fail(err, ER_EIO, "cannot write '%s': too many files in one set", a->final_path);
        }
        set.held[set.n++] = *a; /* the temporary stays in the cleanup table */
        a->final_path = a->tmp_path = NULL;
        a->slot = -1;
        return ER_OK;
    }
    if (rename(a->tmp_path, a->final_path) != 0) {
        er_status st = er_fail(err, ER_EIO, "cannot write '%s': %s", a->final_path, er_atomic_reason(errno));
        er_atomic_abort(a);
        return st;
    }
    atomic_free(a);
    return ER_OK;
}

void er_atomic_abort(er_atomic *a)
{
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
    if (a->tmp_path)
        unlink(a->tmp_path);
    atomic_free(a);
}

void er_atomic_cleanup_signal_safe(void)
{
    for (int i = 0; i < ER_ATOMIC_SLOTS; i++)
        if (cleanup_used[i])
            unlink(cleanup_path[i]);
}

er_status er_atomic_set_commit(er_error *err)
{
    er_status st = ER_OK;
    for (int i = 0; i < set.n; i++) {
        er_atomic *a = &set.held[i];
        if (st == ER_OK && rename(a->tmp_path, a->final_path) != 0)
            st = er_fail(err, ER_EIO, "cannot write '%s': %s", a->final_path, er_atomic_reason(errno));
        else if (st != ER_OK)
            unlink(a->tmp_path);
        atomic_free(a);
    }
    set.active = 0;
    set.n = 0;
    return st;
}

void er_atomic_set_abort(void)
{
    for (int i = 0; i < set.n; i++)
        er_atomic_abort(&set.held[i]);
    set.active = 0;
    set.n = 0;
}
