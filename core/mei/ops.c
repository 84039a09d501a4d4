/*
 * The Mei model's ops (core/models.h): what its run states hold, the
 * check of a state to resume from, why a run would change nothing, and
 * its row of the registry.
 */
#include <float.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>

#include "../models.h"
#include "../parallel.h"
#include "mei_internal.h"
#include "vulkan.h"

static void state_layers(const er_run_state *state, const float *input, const uint8_t *wall,
                         float *height, float *water, float *sediment)
{
    const int w = state->width, h = state->height;
    const float *z = state->array[ER_STATE_MEI_Z];
    const float *d = state->array[ER_STATE_MEI_D];
    const float *s = state->array[ER_STATE_MEI_S];
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        size_t i0 = (size_t)y * (size_t)w, i1 = i0 + (size_t)w;
        for (size_t i = i0; i < i1; i++) {
            /* the same sum as the model's copy-out: b0 + z, b0 kept on
             * walls and where z is 0 (so -0 stays -0) */
            if (height) {
                float zz = wall && wall[i] ? 0.0f : er_mei_finite_or_0(z[i]);
                height[i] = zz != 0.0f ? input[i] + zz : input[i];
            }
            if (water)
                water[i] = er_mei_finite_or_0(d[i]);
            if (sediment)
                sediment[i] = er_mei_finite_or_0(s[i]);
        }
    }
}

/* The heights a Mei run leaves (erosion.c "Holes"): dissolution never
 * takes a cell below its lowest terrain neighbour and thermal slumping
 * moves at most ER_MEI_THERMAL_MAX of a pair's excess with four
 * neighbours at once (half a cell's excess at most), so no cell goes
 * below the lowest it starts from; rain and sources bring water, not
 * material, and b + s is conserved (s >= 0), so the terrain's sum does
 * not grow.  The floor holds in float arithmetic to one rounding of the
 * heights a sub-step. */
static void height_bound(const er_plan *plan, const er_controls *c, er_height_range *r)
{
    (void)c;
    const double subs = (double)plan->p.mei.steps * (double)plan->own.mei.substeps;
    er_height_bound_moved(plan, r, er_height_slack(r, subs + 1.0, FLT_EPSILON), 0.0);
}

/* Whether array i of a state is one a run keeping k's layers needs. */
static int array_needed(int i, const er_layers *k)
{
    return i < ER_STATE_MEI_FLOW || (i == ER_STATE_MEI_FLOW && k && k->flow) ||
           (i == ER_STATE_MEI_WEAR && k && k->wear);
}

/* Its arrays, the layers it keeps among them. */
static er_status check_arrays(const er_plan *plan, const er_run_state *r, const er_layers *keep,
                              er_error *err)
{
    if (r->extra)
        return er_fail(err, ER_EINVAL, "the state carries a model section a mei run has none of");
    if (r->n_arrays != ER_STATE_MEI_ARRAYS && r->n_arrays != ER_STATE_MEI_OLD)
        return er_fail(err, ER_EINVAL, "the state has %d arrays, a mei run %d", r->n_arrays,
                       ER_STATE_MEI_ARRAYS);
    for (int i = 0; i < ER_STATE_MEI_ARRAYS; i++) {
        if (!array_needed(i, keep) || (i < r->n_arrays && r->array[i]))
            continue;
        if (i >= ER_STATE_MEI_FLOW)
            return er_fail(err, ER_EINVAL, "the state has no %s layer (its run did not keep "
                           "it): resume without it, or start again",
                           i == ER_STATE_MEI_FLOW ? "flow" : "wear");
        return er_fail(err, ER_EINVAL, "the state lacks a layer the run keeps (array %d)", i);
    }
    /* The arrays hold model values on every cell (0 on walls), and a value
     * that is not finite is never one a run leaves: refused here, not
     * found steps later. */
    for (int i = 0; i < r->n_arrays; i++) {
        int64_t j = r->array[i] && array_needed(i, keep)
                        ? er_first_nonfinite(r->array[i], (int64_t)plan->width * plan->height)
                        : -1;
        if (j >= 0)
            return er_fail(err, ER_EINVAL, "the state's array %d is not finite at cell (%lld, "
                           "%lld)", i, (long long)(j % plan->width), (long long)(j / plan->width));
    }
    return ER_OK;
}

/* Its values on valid cells: the heights b0 + z within height_bound;
 * depth, suspended sediment, the four outflows and the flow and wear
 * accumulators >= 0 (none of them ever goes negative: erosion.c, pipe.c). */
static er_status check_values(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              er_error *err)
{
    er_height_range h = er_plan_heights(plan);
    height_bound(plan, t->controls, &h);
    er_state_values v = {"height", r->array[ER_STATE_MEI_Z], NULL, t->elevation, 1.0, h.lo,
                         h.hi};
    er_status st = er_state_check_values(t, &v, err);
    static const char *const what[ER_STATE_MEI_ARRAYS] = {
        "", "water depth", "suspended sediment", "outflow", "outflow", "outflow", "outflow",
        "flow", "wear"};
    for (int i = 1; !st && i < r->n_arrays; i++) {
        if (!r->array[i])
            continue;
        v = (er_state_values){what[i], r->array[i], NULL, NULL, 1.0, 0.0, HUGE_VAL};
        st = er_state_check_values(t, &v, err);
    }
    return st;
}

static er_status check_resume(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              const er_layers *keep, er_error *err)
{
    er_status st = er_state_check_fit(plan, r, r->boundary, plan->p.mei.steps, err);
    if (!st)
        st = check_arrays(plan, r, keep, err);
    return st ? st : check_values(plan, t, r, err);
}

/* Water: rain (rain_rate or drops, times the rain map) or a source. */
static int has_water(const er_plan *plan, const er_terrain *t)
{
    const er_mei_params *m = &plan->p.mei;
    const er_controls *c = t->controls;
    int water = (m->rain_rate > 0 || m->drops_per_step > 0) &&
                er_any_valid(t, c ? c->rain : NULL, 1.0f, er_is_positive);
    for (int i = 0; i < plan->p.river.n; i++)
        water |= plan->p.river.src[i].rate > 0;
    return water || (c && c->source && er_any_valid(t, c->source, 0.0f, er_is_positive));
}

static void note_no_op(er_plan *plan, const er_terrain *t)
{
    if (!has_water(plan, t) && !(plan->p.mei.thermal_rate > 0))
        snprintf(plan->warning, sizeof plan->warning, "mei: no water falls or flows in (rain, "
                 "drops and sources are 0) and mei.thermal_rate is 0: the run changes nothing");
}

const er_model_ops er_model_mei = {
    .name = "mei",
    .keys = er_mei_keys,
    .params_off = offsetof(er_params, mei),
    .unit = "step",
    .units = "steps",
    .work_key = "steps",
    .substep_key = "substeps",
    .flags = ER_MODEL_STANDING_WATER | ER_MODEL_SUSPENDED_LOAD | ER_MODEL_RIVER_SOURCES,
    .plan = er_mei_plan,
    .note_no_op = note_no_op,
    .steps = &er_mei_steps,
    .cpu_caps = ER_CAP_WINDOW | ER_CAP_HOOKS,
    .bytes_per_cell = er_mei_bytes_per_cell,
    .check_resume = check_resume,
    .height_bound = height_bound,
    .state_layers = state_layers,
    ER_VK_OPS(.vk_check = er_vk_mei_check, .vk_steps = &er_mei_vk_steps,
              .vk_describe = er_vk_mei_describe, .vk_caps = ER_CAP_WINDOW | ER_CAP_HOOKS)
};
