/*
 * The droplet model's ops (core/models.h): the check of a state to resume
 * from, why a run would change nothing, and its row of the registry.
 */
#include <stddef.h>
#include <stdio.h>

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

/* The arrays hold the input's nodata on walls: er_droplet_restore checks
 * their values with the walls at hand. */
static er_status check_resume(const er_plan *plan, const er_run_state *r, const er_layers *keep,
                              er_error *err)
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
    return ER_OK;
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
    .state_layers = er_state_layers_copy,
    ER_VK_OPS(.vk_check = er_vk_droplet_check, .vk_steps = &er_droplet_vk_steps,
              .vk_caps = ER_CAP_WINDOW | ER_CAP_HOOKS)
};
