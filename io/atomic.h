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
} er_atomic;

/* Creates the temporary for `final_path` (mode 0644 less umask). */
er_status er_atomic_open(er_atomic *a, const char *final_path, er_error *err);

/* fsyncs and closes the descriptor if still open, renames the temporary onto
 * the final name and frees *a.  The caller must not have closed a->fd unless
 * it set a->fd = -1 after flushing it itself. */
er_status er_atomic_commit(er_atomic *a, er_error *err);

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
 * er_atomic_set_abort() removes the held temporaries.  At most 64 files a
 * set; not thread-safe (the CLI writes from one thread).
 */
void er_atomic_set_begin(void);
er_status er_atomic_set_commit(er_error *err);
void er_atomic_set_abort(void);

/* Unlinks every temporary still open; only async-signal-safe calls. */
void er_atomic_cleanup_signal_safe(void);

#endif
