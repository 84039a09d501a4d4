/*
 * The SPH model's ops (core/models.h): the recipe's own rules and its row
 * of the registry.
 */
#include <stddef.h>

#include "../models.h"
#include "sph_internal.h"

/* The recipe's own rules (core/models.h): one lake level at most. */
static er_status check_recipe(const er_params *p, int tiled, er_error *err)
{
    (void)tiled;
    if (p->sph.fill_quantile_set && p->sph.fill_level_set)
        return er_fail(err, ER_EINVAL, "sph.fill_quantile: given with sph.fill_level (both set "
                       "the lake's level): null one of them");
    return ER_OK;
}

const er_model_ops er_model_sph = {
    .name = "sph",
    .flags = ER_MODEL_RIVER_SOURCES,
    .keys = er_sph_keys,
    .params_off = offsetof(er_params, sph),
    .unit = "step",
    .units = "steps",
    .work_key = "steps",
    .substep_key = "substeps",
    .check = check_recipe,
    .plan = er_sph_plan,
    .steps = &er_sph_steps,
    .cpu_caps = ER_CAP_HOOKS,
    .bytes_per_cell = er_sph_bytes_per_cell,
    .bytes_fixed = er_sph_bytes_fixed,
    .check_resume = er_sph_check_resume,
    .height_bound = er_sph_height_bound,
    .state_layers = er_state_layers_copy,
};
