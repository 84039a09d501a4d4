/*
 * The run driver (drive.h): the step loop, progress, cancelling, the
 * boundary hooks and restoring, once for every model.
 */
#include <stdlib.h>
#include <string.h>

#include "drive.h"
#include "models.h"

struct er_drive {
    const er_plan *plan;
    const er_model_ops *model;
    const er_model_steps *ms;
    const er_run_ctl *ctl;
    const er_run_hooks *hooks;
    void *run;
    int64_t total;  /* the work of the whole run, for the progress fraction */
    int64_t asked;  /* the boundary er_drive_may_pass was last asked about, or -1 */
    int passed;     /* its answer */
    int cancel;     /* the progress callback asked to cancel there */
    int wanted;     /* the hooks wanted the boundary the advance began at */
    int stop;       /* er_drive_poll said to stop at it */
};

static int64_t done_at(const er_drive *d, int64_t b)
{
    return d->ms->done_at ? d->ms->done_at(d->plan, b) : b;
}

/* The progress callback at `part` of the way from boundary b to b + 1;
 * non-zero: cancel. */
static int progress_at(const er_drive *d, int64_t b, double part)
{
    const er_run_ctl *c = d->ctl;
    if (!c || !c->progress)
        return 0;
    double done = (double)done_at(d, b);
    if (part > 0.0)
        done += part * (double)(done_at(d, b + 1) - done_at(d, b));
    return c->progress(c->user, d->total > 0 ? done / (double)d->total : 1.0);
}

static int progress(const er_drive *d, int64_t b)
{
    return progress_at(d, b, 0.0);
}

int er_drive_poll(er_drive *d, int64_t b, double part)
{
    d->cancel = progress_at(d, b, part);
    d->stop = d->cancel || (!d->wanted && er_hooks_want(d->hooks, b, d->plan->boundaries));
    return d->stop;
}

int er_drive_may_pass(er_drive *d, int64_t s)
{
    if (d->asked == s)
        return d->passed;
    d->asked = s;
    d->cancel = 0;
    d->passed = !er_hooks_want(d->hooks, s, d->plan->boundaries) &&
                !(d->cancel = progress(d, s));
    return d->passed;
}

static er_status cancelled(const er_drive *d, int64_t b, er_error *err)
{
    return er_fail(err, ER_ECANCELED, "%s: cancelled at %s %lld", d->model->name,
                   d->model->unit, (long long)b);
}

/* The hooks at boundary b, if they want it: ER_ECANCELED when they ask to
 * stop, a failure of the model's view, or ER_OK. */
static er_status hand_over(er_drive *d, int64_t b, const er_budget *bud, er_error *err)
{
    if (!er_hooks_want(d->hooks, b, d->plan->boundaries))
        return ER_OK;
    er_run_state v;
    er_status st = d->ms->view(d->run, b, bud, &v, err);
    if (st)
        return st;
    return d->hooks->boundary(d->hooks->user, &v) ? cancelled(d, b, err) : ER_OK;
}

/* What follows an advance that reached boundary b: its progress and its
 * hooks, unless the model was allowed past it (it asked, and is beyond). */
static er_status reached(er_drive *d, int64_t b, const er_budget *bud, er_error *err)
{
    const int asked = d->asked == b;
    if (asked && d->passed)
        return ER_OK;
    if (asked ? d->cancel : progress(d, b))
        return cancelled(d, b, err);
    return hand_over(d, b, bud, err);
}

/* After an advance that stayed at b (er_drive_poll said to stop): the
 * cancel, or the hooks' b (a checkpoint, then their stop). */
static er_status stayed(er_drive *d, int64_t b, const er_budget *bud, er_error *err)
{
    if (!d->stop)
        return er_fail(err, ER_EINVAL, "%s: a run made no progress at %s %lld", d->model->name,
                       d->model->unit, (long long)b);
    return d->cancel ? cancelled(d, b, err) : hand_over(d, b, bud, err);
}

static er_status loop(er_drive *d, int64_t b0, er_budget *bud, er_error *err)
{
    er_status st = hand_over(d, b0, bud, err);
    for (int64_t b = b0; !st && b < d->plan->boundaries;) {
        int64_t to = b + 1;
        d->asked = -1;
        d->stop = 0;
        d->wanted = er_hooks_want(d->hooks, b, d->plan->boundaries);
        st = d->ms->advance(d->run, b, d, bud, &to, err);
        if (!st)
            st = to == b ? stayed(d, b, bud, err) : reached(d, to, bud, err);
        b = to;
    }
    return st;
}

er_status er_drive_run(const er_model_steps *ms, const er_plan *plan, er_terrain *t,
                       const er_run_opts *o, er_error *err)
{
    return er_drive_run_on(ms, NULL, plan, t, o, err);
}

er_status er_drive_run_on(const er_model_steps *ms, void *backend, const er_plan *plan,
                          er_terrain *t, const er_run_opts *o, er_error *err)
{
    er_drive d = {plan, er_model(plan->p.model), ms, o->ctl, o->hooks, NULL, 0, -1, 0, 0, 0, 0};
    er_budget bud;
    memset(&bud, 0, sizeof bud);
    if (!(d.run = calloc(1, ms->size))) {
        if (o->budget)
            *o->budget = bud;
        return er_fail(err, ER_ENOMEM, "%s: out of memory", d.model->name);
    }
    d.total = done_at(&d, plan->boundaries);
    const er_run_state *resume = o->hooks ? o->hooks->resume : NULL;
    er_status st = ms->init(d.run, backend, plan, t, o, &bud, err);
    if (!st && resume)
        st = ms->load(d.run, resume, &bud, err);
    const int started = st == ER_OK;
    if (started)
        st = loop(&d, resume ? resume->boundary : 0, &bud, err);
    st = ms->finish(d.run, st, started, &bud, err);
    if (st == ER_OK)
        st = er_budget_check(d.model, &bud, err);
    if (o->budget)
        *o->budget = bud;
    ms->release(d.run);
    free(d.run);
    return st;
}
