#include "atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
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
    a->live_fd = -1;
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
    a->live_fd = open(a->tmp_path, O_RDONLY | O_CLOEXEC);
    if (a->live_fd >= 0)
        flock(a->live_fd, LOCK_EX | LOCK_NB);
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
    if (a->live_fd >= 0)
        close(a->live_fd);
    a->live_fd = -1;
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
        a->live_fd = -1;
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

er_status er_atomic_write_file(const char *path, const void *buf, size_t n, er_error *err)
{
    er_atomic a;
    er_status st = er_atomic_open(&a, path, err);
    if (st)
        return st;
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(a.fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            er_atomic_abort(&a);
            return er_fail(err, ER_EIO, "cannot write '%s': %s", path, er_atomic_reason(e));
        }
        p += k;
        n -= (size_t)k;
    }
    return er_atomic_commit(&a, err);
}

er_status er_atomic_remove(const char *final_path, er_error *err)
{
    if (!set.active) {
        if (unlink(final_path) == 0 || errno == ENOENT)
            return ER_OK;
        return er_fail(err, ER_EIO, "cannot remove '%s': %s", final_path, er_atomic_reason(errno));
    }
    if (set.n == ER_ATOMIC_SLOTS)
        return er_fail(err, ER_EIO, "cannot remove '%s': too many files in one set", final_path);
    /* A member without a temporary: replace_all removes its final name. */
    er_atomic *a = &set.held[set.n];
    a->fd = -1;
    a->slot = -1;
    a->live_fd = -1;
    a->tmp_path = NULL;
    a->final_path = strdup(final_path);
    if (!a->final_path)
        return er_fail(err, ER_ENOMEM, "'%s': out of memory", final_path);
    set.n++;
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

/* ---------------------------------------------------------------------
 * Committing a set: lock, back up, replace, roll back on failure.
 * --------------------------------------------------------------------- */

/* The directory part of a path ("." when there is none). */
static void dir_part(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Takes the lock of each directory the set writes to, in sorted order so
 * two runs never wait on each other crosswise.  Fills fds (one per
 * distinct directory, -1 after the last). */
static char lock_path[ER_ATOMIC_SLOTS][ER_ATOMIC_PATH + 16];

static er_status lock_dirs(int *fds, er_atomic_wait_fn wait, void *user, er_error *err)
{
    static char dirs[ER_ATOMIC_SLOTS][ER_ATOMIC_PATH];
    const char *sorted[ER_ATOMIC_SLOTS];
    int nd = 0;
    for (int i = 0; i < set.n; i++) {
        char d[ER_ATOMIC_PATH];
        dir_part(set.held[i].final_path, d, sizeof d);
        int seen = 0;
        for (int k = 0; k < nd && !seen; k++)
            seen = strcmp(sorted[k], d) == 0;
        if (!seen) {
            memcpy(dirs[nd], d, sizeof d);
            sorted[nd] = dirs[nd];
            nd++;
        }
    }
    qsort(sorted, (size_t)nd, sizeof *sorted, cmp_str);
    for (int k = 0; k <= nd; k++)
        fds[k] = -1;
    mode_t mask = umask(0);
    umask(mask);
    for (int k = 0; k < nd; k++) {
        char path[ER_ATOMIC_PATH + 16];
        snprintf(path, sizeof path, "%s/" ER_ATOMIC_LOCK_NAME, sorted[k]);
        for (int first = 1;;) {
            fds[k] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666 & ~mask);
            if (fds[k] < 0)
                return er_fail(err, ER_EIO, "cannot create '%s': %s", path,
                               er_atomic_reason(errno));
            if (flock(fds[k], LOCK_EX | (first ? LOCK_NB : 0)) != 0) {
                int e = errno;
                close(fds[k]);
                fds[k] = -1;
                if (e != EWOULDBLOCK && e != EINTR)
                    return er_fail(err, ER_EIO, "cannot lock '%s': %s", path, er_atomic_reason(e));
                if (wait && wait(user, sorted[k], first))
                    return er_fail(err, ER_ECANCELED, "interrupted while waiting for '%s'", path);
                first = 0;
                continue;
            }
            /* The holder before us removes the name when done: ours must
             * still be the file under it. */
            struct stat held, now;
            if (fstat(fds[k], &held) == 0 && stat(path, &now) == 0 && held.st_dev == now.st_dev &&
                held.st_ino == now.st_ino)
                break;
            close(fds[k]);
            fds[k] = -1;
        }
        memcpy(lock_path[k], path, strlen(path) + 1);
    }
    return ER_OK;
}

/* Removes each lock's name while still holding it, then releases it. */
static void unlock_dirs(const int *fds)
{
    for (int k = 0; fds[k] >= 0; k++) {
        unlink(lock_path[k]);
        close(fds[k]);
    }
}

/* A hard link to the file now at `final` under ".<name>.old-XXXXXX", so
 * it can be put back if a later rename of the set fails.  NULL when there
 * is no file, or the filesystem has no hard links (then it cannot be put
 * back: *lost is set). */
static char *backup_of(const char *final, int *lost)
{
    struct stat st;
    *lost = 0;
    if (lstat(final, &st) != 0)
        return NULL;
    char *b = temp_template(final);
    if (!b)
        return NULL;
    memcpy(strstr(b, ".tmp-XXXXXX"), ".old-", 5);
    for (int tries = 0; tries < 16; tries++) {
        int fd = mkstemp(b);
        if (fd < 0)
            break;
        close(fd);
        unlink(b);
        if (link(final, b) == 0) {
            slot_take(b); /* a signal handler removes it too */
            return b;
        }
        if (errno != EEXIST)
            break;
        memcpy(b + strlen(b) - 6, "XXXXXX", 6);
    }
    free(b);
    *lost = 1;
    return NULL;
}

static void drop_backup(char *b)
{
    if (!b)
        return;
    for (int i = 0; i < ER_ATOMIC_SLOTS; i++)
        if (cleanup_used[i] && strcmp(cleanup_path[i], b) == 0)
            cleanup_used[i] = 0;
    free(b);
}

/* Renames the held temporaries onto their final names (and removes the
 * names of members without one, er_atomic_remove); when one fails, puts
 * every earlier final name back as it was (the previous file from its
 * backup link, or no file) and removes the temporaries. */
static er_status replace_all(er_error *err)
{
    char *backup[ER_ATOMIC_SLOTS] = {0};
    int lost[ER_ATOMIC_SLOTS] = {0}, existed[ER_ATOMIC_SLOTS] = {0};
    er_status st = ER_OK;
    int done = 0;
    for (int i = 0; i < set.n; i++) {
        struct stat sb;
        existed[i] = lstat(set.held[i].final_path, &sb) == 0;
        if (existed[i] && S_ISDIR(sb.st_mode)) {
            st = er_fail(err, ER_EIO, "cannot write '%s': is a directory", set.held[i].final_path);
            break;
        }
        backup[i] = backup_of(set.held[i].final_path, &lost[i]);
    }
    for (; st == ER_OK && done < set.n; done++) {
        const er_atomic *a = &set.held[done];
        if (!a->tmp_path) {
            if (unlink(a->final_path) != 0 && errno != ENOENT)
                st = er_fail(err, ER_EIO, "cannot remove '%s': %s", a->final_path, er_atomic_reason(errno));
        } else if (rename(a->tmp_path, a->final_path) != 0) {
            st = er_fail(err, ER_EIO, "cannot write '%s': %s", a->final_path, er_atomic_reason(errno));
        }
    }
    if (st != ER_OK && done > 0)
        done--; /* the failed one was not renamed */
    for (int i = 0; i < set.n; i++) {
        er_atomic *a = &set.held[i];
        if (st != ER_OK && i < done) {
            if (backup[i])
                rename(backup[i], a->final_path);
            else if (!existed[i])
                unlink(a->final_path);
            /* else: no hard links here; the new file stays (better than none) */
        } else if (st != ER_OK && a->tmp_path) {
            unlink(a->tmp_path);
        }
        if (backup[i] && (st == ER_OK || i >= done))
            unlink(backup[i]);
        drop_backup(backup[i]);
        atomic_free(a);
    }
    return st;
}

er_status er_atomic_set_commit(er_atomic_wait_fn wait, void *user, er_error *err)
{
    int fds[ER_ATOMIC_SLOTS + 1];
    er_status st = lock_dirs(fds, wait, user, err);
    if (st == ER_OK) {
        /* No signal between the renames: the set is replaced whole or not
         * at all; a signal that came meanwhile is handled after. */
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGHUP);
        sigprocmask(SIG_BLOCK, &block, &old);
        st = replace_all(err);
        sigprocmask(SIG_SETMASK, &old, NULL);
    } else {
        er_atomic_set_abort();
    }
    unlock_dirs(fds);
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

/* A minute: far longer than any commit (the .old- backups live for the
 * renames of one set, milliseconds) or than the moment between mkstemp
 * and the liveness lock of a temporary. */
#define ER_STALE_SECONDS 60

int er_atomic_remove_stale(const char *dir, const char *name)
{
    size_t len = strlen(name);
    if (name[0] != '.' || len < 13)
        return 0;
    const char *tag = name + len - 11;
    int tmp = strncmp(tag, ".tmp-", 5) == 0, old = strncmp(tag, ".old-", 5) == 0;
    if (!tmp && !old)
        return 0;
    char path[ER_ATOMIC_PATH];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return 0;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        time(NULL) - st.st_mtime < ER_STALE_SECONDS)
        return 0;
    int stale = old;
    if (tmp) {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            return 0;
        stale = flock(fd, LOCK_EX | LOCK_NB) == 0; /* no live writer holds it */
        if (stale)
            stale = unlink(path) == 0;
        close(fd);
        return stale;
    }
    return unlink(path) == 0;
}
