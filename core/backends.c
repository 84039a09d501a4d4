/*
 * The backends as er_backend tables (core/plan.h): the CPU path, and the
 * Vulkan one over core/backend.h (whose functions fail with
 * ER_VK_NOT_BUILT in a build without Vulkan, so this file needs no #ifdef).
 */
#include "backend.h"
#include "plan.h"

static er_status cpu_check(void *ctx, const er_plan *plan, const er_terrain *t, er_error *err)
{
    (void)ctx;
    (void)plan;
    (void)t;
    (void)err;
    return ER_OK;
}

static er_status cpu_run(void *ctx, const er_plan *plan, er_terrain *t, const er_run_opts *o,
                         er_error *err)
{
    static const er_run_opts none;
    (void)ctx;
    if (!o)
        o = &none;
    if (plan->width != t->width || plan->height != t->height)
        return er_fail(err, ER_EINVAL, "the plan is for a %dx%d map, not %dx%d", plan->width,
                       plan->height, t->width, t->height);
    switch (plan->p.model) {
    case ER_MODEL_MEI: return er_mei_run_plan(plan, t, o, err);
    case ER_MODEL_DROPLET: return er_droplet_run_plan(plan, t, o, err);
    case ER_MODEL_SPH: return er_sph_run_plan(plan, t, o, err);
    }
    return er_fail(err, ER_EINVAL, "model: unknown model %d", (int)plan->p.model);
}

const er_backend er_backend_cpu = {
    "cpu",
    {[ER_MODEL_MEI] = ER_CAP_WINDOW | ER_CAP_HOOKS, [ER_MODEL_DROPLET] = ER_CAP_WINDOW | ER_CAP_HOOKS,
     [ER_MODEL_SPH] = ER_CAP_HOOKS},
    cpu_check, cpu_run};

er_status er_run_cpu(const er_params *p, er_terrain *t, const er_window *win,
                     const er_run_opts *o, er_error *err)
{
    er_plan plan;
    er_status st = er_plan_make(p, t, win, &plan, err);
    return st ? st : er_backend_cpu.run(NULL, &plan, t, o, err);
}

/* What the Vulkan backend runs of each model besides plain runs. */
#define VK_CAPS_MEI (ER_CAP_WINDOW | ER_CAP_HOOKS)
#define VK_CAPS_DROPLET (ER_CAP_WINDOW | ER_CAP_HOOKS)

/* What the Vulkan backend does not run yet: a plan of a window or run
 * hooks (ER_EUNSUPPORTED, saying which).  o may be NULL. */
static er_status vk_refuse(const er_plan *plan, const er_run_opts *o, er_error *err)
{
    if (plan->p.model == ER_MODEL_SPH)
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: the sph model runs on the cpu backend "
                       "only");
    unsigned caps = plan->p.model == ER_MODEL_MEI ? VK_CAPS_MEI : VK_CAPS_DROPLET;
    if (plan->windowed && !(caps & ER_CAP_WINDOW))
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: windows (--tile-set) run on the cpu "
                       "backend only");
    if (o && o->hooks && (o->hooks->boundary || o->hooks->resume) && !(caps & ER_CAP_HOOKS))
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: --checkpoint, --resume and --frames run "
                       "on the cpu backend only");
    return ER_OK;
}

static er_status vk_check(void *ctx, const er_plan *plan, const er_terrain *t, er_error *err)
{
    er_status st = vk_refuse(plan, NULL, err);
    if (st)
        return st;
    return plan->p.model == ER_MODEL_MEI ? er_vk_mei_check(ctx, plan, t, err)
                                         : er_vk_droplet_check(ctx, plan, t, err);
}

static er_status vk_run(void *ctx, const er_plan *plan, er_terrain *t, const er_run_opts *o,
                        er_error *err)
{
    er_status st = vk_refuse(plan, o, err);
    if (st)
        return st;
    return plan->p.model == ER_MODEL_MEI ? er_vk_mei_run(ctx, plan, t, o, err)
                                         : er_vk_droplet_run(ctx, plan, t, o, err);
}

const er_backend er_backend_vulkan = {
    "vulkan", {[ER_MODEL_MEI] = VK_CAPS_MEI, [ER_MODEL_DROPLET] = VK_CAPS_DROPLET, [ER_MODEL_SPH] = 0},
    vk_check,
    vk_run};

er_status er_run_vk(er_vk_ctx *vk, const er_params *p, er_terrain *t, const er_run_opts *o,
                    er_error *err)
{
    er_plan plan;
    er_status st = er_plan_make(p, t, NULL, &plan, err);
    if (!st)
        st = vk_check(vk, &plan, t, err);
    return st ? st : vk_run(vk, &plan, t, o, err);
}
