/*
 * Status codes and the one-line error context shared by core/, io/ and cli/.
 *
 * A fallible function returns an er_status and, when it fails and `err` is
 * not NULL, writes one line of context into err->msg (no trailing newline,
 * lowercase, no final full stop).  The layer that knows the facts adds them:
 * io/ names the file and the library's reason, io/recipe.c the JSON path.
 */
#ifndef ER_ERROR_H
#define ER_ERROR_H

#include <stddef.h>

typedef enum er_status {
    ER_OK = 0,
    ER_ENOMEM,       /* an allocation failed or would exceed the memory limit */
    ER_EINVAL,       /* bad argument or recipe value (a usage error) */
    ER_EFORMAT,      /* input file is not what it claims, or is damaged */
    ER_EUNSUPPORTED, /* valid input of a kind erode does not handle */
    ER_EIO,          /* the operating system refused a read or write */
    ER_ENUMERIC,     /* the simulation became unstable or non-finite */
    ER_ECANCELED     /* the progress callback asked to stop */
} er_status;

#define ER_ERROR_MAX 512

typedef struct er_error {
    char msg[ER_ERROR_MAX]; /* one line, NUL-terminated */
} er_error;

/* Formats a message into err (if not NULL) and returns `st` unchanged, so a
 * caller can write `return er_fail(err, ER_EINVAL, "...", ...);`. */
er_status er_fail(er_error *err, er_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prefixes err->msg with "<prefix>: " (used to add a file name). */
void er_error_prefix(er_error *err, const char *prefix);

/* Whether a message starts with a recipe key's dotted path and ": "
 * ("mei.dt: ...", "river_sources[2]: ...", "stages[1].mei.dt: ..."): an
 * error of the recipe. */
int er_error_names_key(const char *msg);

/* A short name for a status ("out of memory", "i/o error", ...). */
const char *er_status_str(er_status st);

/* Stores a*b in *out; returns 0 (and leaves *out alone) on overflow. */
int er_mul_size(size_t a, size_t b, size_t *out);

#endif
