/*
 * The backends as er_backend tables (core/plan.h): the CPU path, and the
 * Vulkan one over core/backend.h (whose functions fail with
 * ER_VK_NOT_BUILT in a build without Vulkan, where no model has a Vulkan
 * path, so this file needs no #ifdef).  What each runs of a model is the
 * model's ops (core/models.h).
 */
#include "backend.h"
#include "models.h"
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
    const er_model_ops *m = er_model(plan->p.model);
    (void)ctx;
    if (!o)
        o = &none;
    if (!m)
        return er_fail(err, ER_EINVAL, "model: unknown model %d", (int)plan->p.model);
    if (plan->width != t->width || plan->height != t->height)
        return er_fail(err, ER_EINVAL, "the plan is for a %dx%d map, not %dx%d", plan->width,
                       plan->height, t->width, t->height);
    return er_drive_run(m->steps, plan, t, o, err);
}

static unsigned cpu_caps(er_model_kind k)
{
    const er_model_ops *m = er_model(k);
    return m ? m->cpu_caps : 0u;
}

const er_backend er_backend_cpu = {"cpu", cpu_caps, cpu_check, cpu_run};

er_status er_run_cpu(const er_params *p, er_terrain *t, const er_window *win,
                     const er_run_opts *o, er_error *err)
{
    er_plan plan;
    er_status st = er_plan_make(p, t, win, &plan, err);
    return st ? st : er_backend_cpu.run(NULL, &plan, t, o, err);
}

static unsigned vk_caps(er_model_kind k)
{
    const er_model_ops *m = er_model(k);
    return m && m->vk_run ? m->vk_caps : 0u;
}

/* What the Vulkan path of the plan's model does not run: the model
 * itself, a window or run hooks (ER_EUNSUPPORTED, saying which); in a
 * build without Vulkan, anything (ER_VK_NOT_BUILT).  o may be NULL. */
static er_status vk_refuse(const er_plan *plan, const er_run_opts *o, er_error *err)
{
    const er_model_ops *m = er_model(plan->p.model);
    if (!er_vk_built())
        return er_fail(err, ER_EUNSUPPORTED, ER_VK_NOT_BUILT);
    if (!m || !m->vk_run)
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: the %s model runs on the cpu backend "
                       "only", er_model_name(plan->p.model));
    if (plan->windowed && !(m->vk_caps & ER_CAP_WINDOW))
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: windows (--tile-set) of the %s model run "
                       "on the cpu backend only", m->name);
    if (o && o->hooks && (o->hooks->boundary || o->hooks->resume) && !(m->vk_caps & ER_CAP_HOOKS))
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: --checkpoint, --resume and --frames of "
                       "the %s model run on the cpu backend only", m->name);
    return ER_OK;
}

static er_status vk_check(void *ctx, const er_plan *plan, const er_terrain *t, er_error *err)
{
    er_status st = vk_refuse(plan, NULL, err);
    return st ? st : er_model(plan->p.model)->vk_check(ctx, plan, t, err);
}

static er_status vk_run(void *ctx, const er_plan *plan, er_terrain *t, const er_run_opts *o,
                        er_error *err)
{
    er_status st = vk_refuse(plan, o, err);
    if (!st)
        st = er_model(plan->p.model)->vk_run(ctx, plan, t, o, err);
    /* the CPU's run driver checks its own runs (core/drive.c) */
    if (st == ER_OK && o && o->budget)
        st = er_budget_check(er_model(plan->p.model), o->budget, err);
    return st;
}

const er_backend er_backend_vulkan = {"vulkan", vk_caps, vk_check, vk_run};

er_status er_run_vk(er_vk_ctx *vk, const er_params *p, er_terrain *t, const er_run_opts *o,
                    er_error *err)
{
    er_plan plan;
    er_status st = er_plan_make(p, t, NULL, &plan, err);
    if (!st)
        st = vk_check(vk, &plan, t, err);
    return st ? st : vk_run(vk, &plan, t, o, err);
}
