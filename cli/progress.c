#include "progress.h"

#include <stdio.h>
#include <unistd.h>

#include "paths.h"

static int show_progress(const er_job *j)
{
    return j->s->progress < 0 ? isatty(STDERR_FILENO) : j->s->progress;
}

void er_job_bar_begin(er_job *j, const char *label)
{
    er_progress_begin(&j->progress, show_progress(j), label);
}

void er_job_phase(er_job *j, const char *what)
{
    snprintf(j->phase, sizeof j->phase, "%s: %s", er_path_base(j->input), what);
    er_job_bar_begin(j, j->phase);
    er_progress_update(&j->progress, 0.0);
}

/* Called by io/ on this thread between its parallel regions, so the bar is
 * drawn by one thread only; er_progress_update throttles it. */
void er_job_io_progress(void *user, double fraction)
{
    er_job *j = user;
    er_progress_update(&j->progress, fraction);
}
