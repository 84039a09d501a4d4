/*
 * Atomic file creation (git's lockfile.h, zstd's fileio.c): a writer opens a
 * temporary file next to its final name, writes, then commits (fsync +
 * rename) or aborts (unlink).  A crash, a kill or a full disk never leaves a
 * truncated file under a final name.
 *
 * Every open temporary is also listed in a fixed process-wide table so a
 * signal handler can remove them with er_atomic_cleanup_signal_safe().
 */
#ifndef ER_ATOMIC_H
#define ER_ATOMIC_H

#include "../core/error.h"

typedef struct er_atomic {
    int fd;              /* open descriptor of the temporary, -1 when closed */
    char *final_path;    /* owned */
    char *tmp_path;      /* owned: "<dir>/.<name>.tmp-XXXXXX" */
    int slot;            /* index in the cleanup table, -1 if none */
    int live_fd;         /* a second descriptor of the temporary holding an
                            exclusive flock() while it exists: tells a live
                            temporary from one a killed run left */
} er_atomic;

/* What a temporary's file name adds to its final name's: "." in front,
 * ".tmp-XXXXXX" (or the backup's ".old-XXXXXX") behind.  A final name
 * must leave this much room below the directory's name limit. */
#define ER_ATOMIC_TEMP_EXTRA 12

/* Creates the temporary for `final_path` (mode 0644 less umask). */
er_status er_atomic_open(er_atomic *a, const char *final_path, er_error *err);

/* fsyncs and closes the descriptor if still open, renames the temporary onto
 * the final name and frees *a.  The caller must not have closed a->fd unless
 * it set a->fd = -1 after flushing it itself. */
er_status er_atomic_commit(er_atomic *a, er_error *err);

/* Writes n bytes of buf as the file `path` (open, write, commit): one
 * member of the current output set, if any. */
er_status er_atomic_write_file(const char *path, const void *buf, size_t n, er_error *err);

/* Removes `final_path` with the output set: when the set commits, with
 * its guarantees (a failed commit puts the file back from its backup);
 * at once outside a set.  A name with no file is no error.  For a file an
 * output makes stale, e.g. a sidecar the new output does not have. */
er_status er_atomic_remove(const char *final_path, er_error *err);

/* Closes and removes the temporary; accepts an already finished *a. */
void er_atomic_abort(er_atomic *a);

/* The reason for a failed write, create, fsync or rename as one lowercase
 * phrase: the usual results of a full disk or a file size limit in plain
 * words ("no space left on device", "file too large (the file size limit
 * was reached)"), strerror() for the rest.  Returns a static string;
 * thread-safe. */
const char *er_atomic_reason(int errnum);

/*
 * Output sets: between er_atomic_set_begin() and er_atomic_set_commit(),
 * er_atomic_commit() flushes the temporary but holds its rename back, so
 * the files of one set replace their final names together at the end, after
 * every write has succeeded.  A disk that fills at the third file then
 * leaves the previous run's files (if any) untouched instead of a mix.
 *
 * er_atomic_set_commit() first takes an exclusive flock() on
 * ER_ATOMIC_LOCK_NAME in each directory the set writes to (created, and
 * removed again when done: a waiter that finds the name gone or holding
 * another file opens it anew), so two processes replacing one set take turns
 * and the result is one run's set, never a mix.  When a lock is busy it
 * calls wait(user, dir, 1) once, then waits; an interrupted wait calls
 * wait(user, dir, 0): a non-zero return gives up (ER_ECANCELED, the set
 * is removed).  Holding the locks and with SIGINT, SIGTERM and SIGHUP
 * blocked, it hard-links each existing final name to
 * ".<name>.old-XXXXXX", renames the temporaries into place and, if one
 * rename fails, renames the backups back (names that had no file lose the
 * new one), so the previous set survives whole.  On a filesystem without
 * hard links a file replaced before the failure cannot be put back; it
 * keeps the new file.  The backups are removed at the end.
 * er_atomic_set_abort() removes the held temporaries.  At most 64 files a
 * set; not thread-safe (the CLI writes from one thread).
 */
#define ER_ATOMIC_LOCK_NAME ".erode.lock"
typedef int (*er_atomic_wait_fn)(void *user, const char *dir, int first);
void er_atomic_set_begin(void);
er_status er_atomic_set_commit(er_atomic_wait_fn wait, void *user, er_error *err);
void er_atomic_set_abort(void);

/* What a killed run may leave beside `final_path`'s directory:
 * ".<name>.tmp-XXXXXX" no process holds (see live_fd) and
 * ".<name>.old-XXXXXX" backups, both older than a minute.  Returns 1 and
 * removes the file when `dir`/`name` is such a leftover, else 0. */
int er_atomic_remove_stale(const char *dir, const char *name);

/* Unlinks every temporary still open; only async-signal-safe calls. */
void er_atomic_cleanup_signal_safe(void);

#endif
