/*
 * An input's progress on standard error (cli/msg.h draws it): its reading
 * and writing phases, its model phase or each stage's, and the io/
 * progress callback that moves it.  The mode (a bar, lines, JSON lines or
 * none) follows --progress, the terminal and TERM (erode(1)).  Internal to
 * cli/.
 */
#ifndef ER_CLI_PROGRESS_H
#define ER_CLI_PROGRESS_H

#include "job.h"

/* A reading or writing phase, "<input>: <what>" (ended by
 * er_progress_end). */
void er_job_phase(er_job *j, const char *what);

/* The model phase: stage k (from 0) of a staged run of n stages, or with
 * n = 0 the one model of a plain run (k = 0); ended by er_progress_end. */
void er_job_model_phase(er_job *j, int k, int n);

/* The io/ progress callback that moves the bar (user: the er_job). */
void er_job_io_progress(void *user, double fraction);

#endif
