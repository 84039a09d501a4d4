/*
 * An input's progress bar on standard error (cli/msg.h draws it): its
 * reading and writing phases, and the io/ progress callback that moves it.
 * Internal to cli/.
 */
#ifndef ER_CLI_PROGRESS_H
#define ER_CLI_PROGRESS_H

#include "job.h"

/* Starts j's bar under label (shown when --progress or a terminal asks
 * for it); er_progress_end ends it. */
void er_job_bar_begin(er_job *j, const char *label);

/* A reading or writing phase's bar, "<input>: <what>" (ended by
 * er_progress_end). */
void er_job_phase(er_job *j, const char *what);

/* The io/ progress callback that moves the bar (user: the er_job). */
void er_job_io_progress(void *user, double fraction);

#endif
