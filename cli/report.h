/*
 * What a run reports: its one error line and the --json summary.
 * Internal to cli/.
 */
#ifndef ER_CLI_REPORT_H
#define ER_CLI_REPORT_H

#include "job.h"

/* Returns the exit status, EXIT_RUN_FAILED when the --json line could
 * not be written. */
int er_job_report(er_job *j, er_status st, int status);

#endif
