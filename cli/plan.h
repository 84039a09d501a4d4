/*
 * --plan (--dry-run): what a checked run would do, without doing it.
 * Internal to cli/.
 */
#ifndef ER_CLI_PLAN_H
#define ER_CLI_PLAN_H

#include "job.h"

/* Prints the plan of job j, made and checked by run.c's prepare(): per
 * stage its model, steps, sub-steps and time estimate, the memory
 * --max-memory compares, the files the run would write; as text on
 * stdout, or with --json as one JSON object a line.  Returns 0, or
 * EXIT_RUN_FAILED when stdout cannot take it. */
int er_job_plan_report(const er_job *j);

#endif
