/*
 * What a run does between its steps: progress, frames and checkpoints.
 * Internal to cli/.
 */
#ifndef ER_CLI_HOOKS_H
#define ER_CLI_HOOKS_H

#include "../core/stages.h"
#include "job.h"

er_status er_job_prepare_checkpoint(er_job *j, const er_stages *recipe);

/* With --frames: the last frame's name fits its directory (checked once
 * the plan knows how many boundaries the run has, before any work). */
er_status er_job_check_frames(er_job *j);

/* Fills the progress control and the run hooks, and returns the hooks the
 * run uses (NULL: a plain run). */
const er_run_hooks *er_job_callbacks(er_job *j, er_run_ctl *ctl, er_run_hooks *hooks);

#endif
