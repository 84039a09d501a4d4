/*
 * The stream-power model's ops (core/models.h): the check of a state to
 * resume from, why a run would change nothing, and its row of the
 * registry.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "../models.h"
#include "sp_internal.h"

/* A state of this run at a step boundary: its heights (the model
 * section), the deposits and wear the caller keeps, every value finite. */
static er_status check_resume(const er_plan *plan, const er_run_state *r, const er_layers *keep,
                              er_error *err)
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
    for (int k = 0; k < 2; k++) {
        if (need[k] && !r->array[idx[k]])
            return er_fail(err, ER_EINVAL, "the state has no %s layer (its run did not keep "
                           "it): resume without it, or start again", name[k]);
        int64_t j = need[k] ? er_first_nonfinite(r->array[idx[k]], (int64_t)n) : -1;
        if (j >= 0)
            return er_fail(err, ER_EINVAL, "the state's %s layer is not finite at cell (%lld, "
                           "%lld)", name[k], (long long)(j % plan->width),
                           (long long)(j / plan->width));
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(at[ER_SP_PART_Z][i]))
            return er_fail(err, ER_EINVAL, "the state's heights are not finite at cell (%zu, %zu)",
                           i % (size_t)plan->width, i / (size_t)plan->width);
    const double up = at[ER_SP_PART_UPLIFTED][0];
    if (!(isfinite(up) && up >= 0.0))
        return er_fail(err, ER_EINVAL, "the state's uplifted material (%g) is not a finite "
                       "volume >= 0", up);
    return ER_OK;
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
    .state_layers = er_state_layers_copy,
};
