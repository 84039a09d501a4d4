/* The diffusion model's ops (core/models.h): its row of the registry. */
#include <stddef.h>

#include "diffusion.h"

/* No height_bound: a model of the tests, its heights only finite. */
static er_status check_resume(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              const er_layers *keep, er_error *err)
{
    (void)t;
    er_status st = er_state_check_fit(plan, r, r->boundary, plan->p.diffusion.steps, err);
    if (st)
        return st;
    const int64_t n = (int64_t)plan->width * plan->height;
    if (r->n_arrays != 4 || r->extra || !r->array[ER_STATE_DIFF_HEIGHT])
        return er_fail(err, ER_EINVAL, "the state does not fit a diffusion run");
    if (keep && keep->wear && !r->array[3])
        return er_fail(err, ER_EINVAL, "the state has no wear layer (its run did not keep "
                       "it): resume without it, or start again");
    int64_t j = er_first_nonfinite(r->array[ER_STATE_DIFF_HEIGHT], n);
    if (j >= 0)
        return er_fail(err, ER_EINVAL, "the state's heights are not finite at cell (%lld, %lld)",
                       (long long)(j % plan->width), (long long)(j / plan->width));
    return ER_OK;
}

/* The heights and the next sub-step's, and the wear it keeps. */
static size_t bytes_per_cell(const er_params *p)
{
    (void)p;
    return 2 * sizeof(float);
}

const er_model_ops er_model_diffusion = {
    .name = "diffusion",
    .keys = er_diffusion_keys,
    .params_off = offsetof(er_params, diffusion),
    .unit = "step",
    .units = "steps",
    .work_key = "steps",
    .substep_key = "substeps",
    .flags = ER_MODEL_TEST_ONLY,
    .plan = er_diffusion_plan,
    .steps = &er_diffusion_steps,
    .cpu_caps = ER_CAP_HOOKS,
    .bytes_per_cell = bytes_per_cell,
    .check_resume = check_resume,
    .state_layers = er_state_layers_copy,
};
