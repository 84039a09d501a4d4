/*
 * Everything erode prints: the one-line errors (git's message rules:
 * "erode: <where>: <what>", lowercase, no full stop), progress (a bar or lines),
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

/* How progress is shown (erode(1) --progress).  er_progress takes the
 * first four; cli/progress.c resolves the last two, which only the
 * options hold, against standard error and TERM. */
typedef enum er_progress_mode {
    ER_PROGRESS_NONE,
    ER_PROGRESS_BAR,    /* one line redrawn in place with \r and ESC[K */
    ER_PROGRESS_LINES,  /* plain lines, for logs: no escape or \r byte */
    ER_PROGRESS_JSON,   /* one JSON object a line, as often as the lines */
    ER_PROGRESS_AUTO,   /* --progress: the bar on a terminal that can draw it, else lines */
    ER_PROGRESS_UNSET   /* no option: as AUTO on a terminal, else none */
} er_progress_mode;

/* The seconds between two lines of a phase (ER_PROGRESS_LINES and _JSON):
 * a farm's job log gets a dozen lines a minute, not one a step, and an
 * ETA at least every 10 s while boundaries come that often.  Each phase's
 * first line and its 100 % line come whatever the time. */
#define ER_PROGRESS_LINE_SECONDS 5.0

/* What a phase of an input's progress shows. */
typedef struct er_progress_what {
    const char *label;  /* the bar's and lines' text: "dem.tif: stage 2/3 mei" */
    const char *input;  /* JSON "input": the input's path as given */
    const char *phase;  /* JSON "phase": "reading", "model", "writing height" */
    const char *model;  /* JSON "model": the model running, NULL outside the model phase */
    int stage, stages;  /* JSON: stage (from 1) of stages; 0 and 0: not a staged run */
} er_progress_what;

/* Progress state for one input's phase, on stderr: a bar at most ~5 times
 * a second, or lines at most one every ER_PROGRESS_LINE_SECONDS.  The
 * strings of `what` must outlive the phase. */
typedef struct er_progress {
    er_progress_mode mode;  /* NONE, BAR, LINES or JSON */
    er_progress_what what;
    double started;         /* monotonic seconds */
    double last_drawn;
    double shown;           /* the fraction of the last line printed; -1: none yet */
    int drawn;              /* a bar is on the line; erase before errors */
} er_progress;

double er_msg_now(void);
/* Starts a phase; the line modes print its 0 % line at once. */
void er_progress_begin(er_progress *p, er_progress_mode mode, const er_progress_what *what);
/* fraction: of the phase, in [0, 1]; throttled as above. */
void er_progress_update(er_progress *p, double fraction);
/* Erases a drawn bar (before an error line or the next phase); lines
 * need no erasing. */
void er_progress_end(er_progress *p);

#endif
