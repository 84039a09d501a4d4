#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"

/* The mode the options ask for, on this standard error: a bar needs a
 * terminal that moves the cursor (TERM set, not "dumb"); a log file, a
 * pipe or a dumb terminal gets lines.  Without --progress nothing is shown
 * off a terminal: a script's stderr holds only its errors. */
static er_progress_mode progress_mode(const er_job *j)
{
    const int tty = isatty(STDERR_FILENO);
    const char *term = getenv("TERM");
    const int smart = tty && term && *term && strcmp(term, "dumb") != 0;
    switch ((er_progress_mode)j->s->progress) {
    case ER_PROGRESS_UNSET: return !tty ? ER_PROGRESS_NONE : smart ? ER_PROGRESS_BAR : ER_PROGRESS_LINES;
    case ER_PROGRESS_AUTO: return smart ? ER_PROGRESS_BAR : ER_PROGRESS_LINES;
    default: return (er_progress_mode)j->s->progress;
    }
}

/* Starts a phase labelled j->phase, "<input>: <what>" (what: after the
 * prefix, JSON's "phase"; NULL: the model phase, labelled as given). */
static void begin(er_job *j, const char *what, const char *model, int k, int n)
{
    er_progress_what w = {j->phase, j->input, what ? what : "model", model, n ? k + 1 : 0, n};
    er_progress_begin(&j->progress, progress_mode(j), &w);
}

void er_job_phase(er_job *j, const char *what)
{
    const size_t at = strlen(er_path_base(j->input)) + 2;
    snprintf(j->phase, sizeof j->phase, "%s: %s", er_path_base(j->input), what);
    begin(j, at < strlen(j->phase) ? j->phase + at : "", NULL, 0, 0);
    er_progress_update(&j->progress, 0.0);
}

/* A staged run's "<input>: stage 2/3 mei", saying where the stage runs
 * when that is not the CPU; a plain run's bar shows the input alone, its
 * lines the model too. */
void er_job_model_phase(er_job *j, int k, int n)
{
    const er_backend *be = j->where[k].be;
    const int other = be && be != &er_backend_cpu;
    const char *model = er_model_name(j->plan.p[k].model);
    const char *base = er_path_base(j->input);
    if (n)
        snprintf(j->phase, sizeof j->phase, "%s: stage %d/%d %s%s%s", base, k + 1, n, model,
                 other ? " on " : "", other ? be->name : "");
    else if (progress_mode(j) == ER_PROGRESS_BAR)
        snprintf(j->phase, sizeof j->phase, "%s", base);
    else
        snprintf(j->phase, sizeof j->phase, "%s: %s", base, model);
    begin(j, NULL, model, k, n);
}

/* Called by io/ on this thread between its parallel regions, so the bar is
 * drawn by one thread only; er_progress_update throttles it. */
void er_job_io_progress(void *user, double fraction)
{
    er_job *j = user;
    er_progress_update(&j->progress, fraction);
}
