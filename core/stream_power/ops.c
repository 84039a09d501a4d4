/*
 * The stream-power model's ops (core/models.h): the check of a state to
 * resume from, why a run would change nothing, and its row of the
 * registry.
 */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "../models.h"
#include "sp_internal.h"

/* The heights a stream-power run leaves (sp.c): base-level cells are
 * held; incision sets a cell between its receiver (or its lake's level)
 * and itself, sediment fills lakes no higher than their spill and a
 * cell by what comes from upstream, and implicit diffusion keeps each
 * row and column within its neighbours (an M-matrix): no free cell goes
 * below the lowest it starts from, in exact arithmetic, and the double
 * sums round that by a few ulps a step.  Material comes in by uplift, at
 * most uplift dt times ER_CTL_UPLIFT_MAX (with an uplift map) a step on
 * each cell, and by diffusion from held base level into the cells below
 * it, which it raises no higher than base level: at most the relief on
 * each cell. */
static void height_bound(const er_plan *plan, const er_controls *c, er_height_range *r)
{
    const er_stream_power_params *p = &plan->p.stream_power;
    const double steps = (double)p->steps, cells = (double)plan->valid;
    const double up = p->uplift * p->dt * steps * (c && c->uplift ? ER_CTL_UPLIFT_MAX : 1.0);
    const double below = er_height_slack(r, 8.0 * (steps + 1.0), DBL_EPSILON);
    er_height_bound_moved(plan, r, below, cells * (up + (r->hi - r->lo)));
}

/* The values it reads on valid cells: heights (the model section) within
 * height_bound, the deposits and wear it keeps >= 0 (each only adds what
 * a step deposits or removes), the material uplifted a finite volume >= 0. */
static er_status check_values(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              const double *const at[ER_SP_PARTS], const er_layers *keep,
                              er_error *err)
{
    er_height_range h = er_plan_heights(plan);
    height_bound(plan, t->controls, &h);
    er_state_values v = {"height", NULL, at[ER_SP_PART_Z], NULL, 1.0, h.lo, h.hi};
    er_status st = er_state_check_values(t, &v, err);
    const int need[2] = {keep && keep->sediment, keep && keep->wear};
    const int idx[2] = {ER_STATE_SP_SEDIMENT, ER_STATE_SP_WEAR};
    static const char *const name[2] = {"sediment", "wear"};
    for (int k = 0; k < 2 && !st; k++) {
        if (!need[k])
            continue;
        v = (er_state_values){name[k], r->array[idx[k]], NULL, NULL, 1.0, 0.0, HUGE_VAL};
        st = er_state_check_values(t, &v, err);
    }
    return st ? st : er_state_check_list(at[ER_SP_PART_UPLIFTED], 1, 0.0, HUGE_VAL,
                                         "uplifted material", err);
}

/* A state of this run at a step boundary: its heights (the model
 * section), the deposits and wear the caller keeps, and their values. */
static er_status check_resume(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              const er_layers *keep, er_error *err)
{
    er_status st = er_state_check_fit(plan, r, r->boundary, plan->p.stream_power.steps, err);
    if (st)
        return st;
    const size_t n = (size_t)plan->width * (size_t)plan->height, len[ER_SP_PARTS] = {n, 1};
    const double *at[ER_SP_PARTS];
    if (!r->extra || r->extra->count[0] != n || r->extra->count[1] != 0 ||
        er_extra_split(r->extra, len, ER_SP_PARTS, at) || r->n_arrays != ER_STATE_SP_ARRAYS)
        return er_fail(err, ER_EINVAL, "the state's heights do not fit a %dx%d stream_power run",
                       plan->width, plan->height);
    const int need[2] = {keep && keep->sediment, keep && keep->wear};
    const int idx[2] = {ER_STATE_SP_SEDIMENT, ER_STATE_SP_WEAR};
    static const char *const name[2] = {"sediment", "wear"};
    for (int k = 0; k < 2; k++)
        if (need[k] && !r->array[idx[k]])
            return er_fail(err, ER_EINVAL, "the state has no %s layer (its run did not keep "
                           "it): resume without it, or start again", name[k]);
    return check_values(plan, t, r, at, keep, err);
}

static void note_no_op(er_plan *plan, const er_terrain *t)
{
    const er_stream_power_params *p = &plan->p.stream_power;
    (void)t;
    if (!(p->uplift > 0.0) && !(p->k > 0.0) && !(p->kd > 0.0))
        snprintf(plan->warning, sizeof plan->warning, "stream_power: uplift, k and kd are 0: "
                 "the run changes nothing");
}

/* A stage report of format 5 kept the material uplifted in its value 15. */
static void old_terms(const er_params *p, er_budget *b, const double old[ER_OLD_TERMS])
{
    (void)p;
    *er_budget_term(b, ER_SP_UPLIFTED) = old[1];
}

const er_model_ops er_model_stream_power = {
    .name = "stream_power",
    .keys = er_stream_power_keys,
    .params_off = offsetof(er_params, stream_power),
    .unit = "step",
    .units = "steps",
    .work_key = "steps",
    .substep_key = "substeps",
    .old_terms = old_terms,
    .flags = ER_MODEL_STANDING_WATER | ER_MODEL_FLOW_AREA | ER_MODEL_UPLIFT,
    /* The run balances its double heights exactly but for the sums'
     * rounding (1e-9 of the material moved, measured); rounding each final
     * height to a float then misses by at most 2^-24 of its |height|,
     * which the scale of er_budget_rel_error holds, so a correct run stays
     * at or under 1 (0.1 measured where the run moves far less than the
     * heights' rounding) and a run past it lost or made material. */
    .budget_tol = 1.0,
    .plan = er_sp_plan,
    .note_no_op = note_no_op,
    .steps = &er_sp_steps,
    .cpu_caps = ER_CAP_HOOKS,
    .bytes_per_cell = er_sp_bytes_per_cell,
    .check_resume = check_resume,
    .height_bound = height_bound,
    .state_layers = er_state_layers_copy,
};
