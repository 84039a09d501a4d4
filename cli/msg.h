/*
 * Everything erode prints: the one-line errors (git's message rules:
 * "erode: <where>: <what>", lowercase, no full stop), progress on a TTY,
 * and the --json summary lines.
 */
#ifndef ER_MSG_H
#define ER_MSG_H

#include <stdio.h>

/* Prints "erode: <message>" and a newline on stderr, the message's control
 * characters escaped (er_msg_escape): always exactly one line. */
void er_msg_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Flushes standard output after `what` ("the help", "the recipe", ...)
 * was printed to it: 0, or 1 after one error line saying why it could not
 * be written (a full disk, a closed pipe): never a silent failure. */
int er_msg_stdout_done(const char *what);

/* Writes `text` to f with control bytes escaped as \n, \t, \r, \xNN and
 * backslashes doubled. */
void er_msg_escape(FILE *f, const char *text);

/* Progress state for one input; drawn on stderr at most ~5 times a second. */
typedef struct er_progress {
    int enabled;
    const char *label;      /* the input's file name */
    double started;         /* monotonic seconds */
    double last_drawn;
    int drawn;              /* something is on the line; erase before errors */
} er_progress;

double er_msg_now(void);
void er_progress_begin(er_progress *p, int enabled, const char *label);
void er_progress_update(er_progress *p, double fraction);
void er_progress_end(er_progress *p);

#endif
