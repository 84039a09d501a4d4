/*
 * The droplet model's ops (core/models.h): the check of a state to resume
 * from, why a run would change nothing, and its row of the registry.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../models.h"
#include "droplet_impl.h"
#include "vulkan.h"

/* Whether array i of a state is one a run keeping k's layers needs. */
static int array_needed(int i, const er_layers *k)
{
    return i == ER_STATE_DROP_HEIGHT || (i == ER_STATE_DROP_FLOW && k && k->water) ||
           (i == ER_STATE_DROP_DEPOSIT && k && k->sediment) ||
           (i == ER_STATE_DROP_WEAR && k && k->wear);
}

/* The heights a droplet run leaves (er_droplet_guard, setup.c): every
 * tap stops at a mean of nodes the map holds and deposits only add, so no
 * valid cell goes below the lowest it starts from, in float arithmetic as
 * in exact; droplets carry material from cell to cell or off the map and
 * bring none (nothing is withheld), so the sum does not grow. */
static void height_bound(const er_plan *plan, const er_controls *c, er_height_range *r)
{
    (void)c;
    er_height_bound_moved(plan, r, 0.0, 0.0);
}

/* The values of the arrays the run reads (a checkpoint is a file: it may
 * hold anything its checksums allow): on valid cells heights within
 * height_bound and the layers it keeps finite and >= 0; on walls the
 * heights t holds, bit for bit (no run changes a wall). */
static er_status check_values(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              const er_layers *keep, er_error *err)
{
    const float *z = r->array[ER_STATE_DROP_HEIGHT];
    const size_t n = (size_t)t->width * (size_t)t->height;
    for (size_t i = 0; t->wall && i < n; i++)
        if (t->wall[i] && memcmp(&z[i], &t->elevation[i], sizeof z[i]) != 0)
            return er_fail(err, ER_EINVAL, "the state changes the nodata cell (%zu, %zu)",
                           i % (size_t)t->width, i / (size_t)t->width);
    er_height_range h = er_plan_heights(plan);
    height_bound(plan, t->controls, &h);
    er_state_values v = {"height", z, NULL, NULL, 1.0, h.lo, h.hi};
    er_status st = er_state_check_values(t, &v, err);
    static const char *const name[3] = {"flow", "deposit", "wear"};
    const int idx[3] = {ER_STATE_DROP_FLOW, ER_STATE_DROP_DEPOSIT, ER_STATE_DROP_WEAR};
    for (int k = 0; k < 3 && !st; k++) {
        if (!array_needed(idx[k], keep))
            continue;
        v = (er_state_values){name[k], r->array[idx[k]], NULL, NULL, 1.0, 0.0, HUGE_VAL};
        st = er_state_check_values(t, &v, err);
    }
    return st;
}

static er_status check_resume(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              const er_layers *keep, er_error *err)
{
    er_status st = er_state_check_fit(plan, r, er_droplet_done_at(plan, r->boundary),
                                      plan->own.droplet.droplets, err);
    if (st)
        return st;
    if (r->extra)
        return er_fail(err, ER_EINVAL, "the state carries a model section a droplet run has "
                       "none of");
    if (r->n_arrays != ER_STATE_DROP_ARRAYS && r->n_arrays != ER_STATE_DROP_OLD)
        return er_fail(err, ER_EINVAL, "the state has %d arrays, a droplet run %d", r->n_arrays,
                       ER_STATE_DROP_ARRAYS);
    for (int i = 0; i < ER_STATE_DROP_ARRAYS; i++) {
        if (!array_needed(i, keep) || (i < r->n_arrays && r->array[i]))
            continue;
        if (i == ER_STATE_DROP_WEAR)
            return er_fail(err, ER_EINVAL, "the state has no wear layer (its run did not keep "
                           "it): resume without it, or start again");
        return er_fail(err, ER_EINVAL, "the state lacks a layer the run keeps (array %d)", i);
    }
    return check_values(plan, t, r, keep, err);
}

static void note_no_op(er_plan *plan, const er_terrain *t)
{
    const er_controls *c = t->controls;
    if (c && c->rain && !er_any_valid(t, c->rain, 0.0f, er_is_positive))
        snprintf(plan->warning, sizeof plan->warning, "rain: 0 on every valid cell: no droplet "
                 "starts and the run changes nothing");
}

/* A stage report of format 5 kept the withheld erosion in its value 11. */
static void old_terms(const er_params *p, er_budget *b, const double old[ER_OLD_TERMS])
{
    er_droplet_put_withheld(p, b, old[0]);
}

const er_model_ops er_model_droplet = {
    .old_terms = old_terms,
    .name = "droplet",
    .keys = er_droplet_keys,
    .params_off = offsetof(er_params, droplet),
    .unit = "batch",
    .units = "batches",
    .work_key = "droplets",
    .substep_key = "droplet_steps",
    .check = er_droplet_check,
    .plan = er_droplet_plan,
    .note_no_op = note_no_op,
    .steps = &er_droplet_steps,
    .cpu_caps = ER_CAP_WINDOW | ER_CAP_HOOKS,
    .bytes_per_cell = er_droplet_bytes_per_cell,
    .check_resume = check_resume,
    .height_bound = height_bound,
    .state_layers = er_state_layers_copy,
    ER_VK_OPS(.vk_check = er_vk_droplet_check, .vk_steps = &er_droplet_vk_steps,
              .vk_caps = ER_CAP_WINDOW | ER_CAP_HOOKS)
};
