/*
 * The run plan (core/plan.h).  What is common to the models lives here
 * (the window, the cell size, one scan of the terrain, the control maps'
 * no-op cases); each model's own planning is its ops' plan (core/models.h),
 * beside the code that uses it.
 */
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "keys.h"
#include "models.h"
#include "tiles.h"

void er_terrain_measure(const er_terrain *t, er_terrain_stats *m)
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    double s = 0, a = 0;
    float lo = INFINITY, hi = -INFINITY;
    int64_t valid = 0;
    m->bad = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (t->wall && t->wall[i])
            continue;
        float z = t->elevation[i];
        if (!isfinite(z)) {
            if (m->bad == SIZE_MAX)
                m->bad = i;
            continue;
        }
        s += (double)z;
        a += fabs((double)z);
        lo = fminf(lo, z);
        hi = fmaxf(hi, z);
        valid++;
    }
    m->sum = s;
    m->abs_sum = a;
    m->lo = lo;
    m->hi = hi;
    m->valid = valid;
}

int er_any_valid(const er_terrain *t, const float *m, float none, int (*pred)(float))
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    if (!m)
        return pred(none);
    for (size_t i = 0; i < n; i++)
        if (!(t->wall && t->wall[i]) && pred(m[i]))
            return 1;
    return 0;
}


static int below_one(float v) { return v < 1.0f; }

/* A valid cell where (1 - hardness) * mask > 0: one a model may lower. */
static int any_erodible(const er_terrain *t)
{
    const er_controls *c = t->controls;
    const size_t n = (size_t)t->width * (size_t)t->height;
    for (size_t i = 0; i < n; i++)
        if (!(t->wall && t->wall[i]) && (!c->hardness || c->hardness[i] < 1.0f) &&
            (!c->mask || c->mask[i] > 0.0f))
            return 1;
    return 0;
}

/*
 * A run that will change nothing, though the recipe asks for work (steps,
 * droplets): the plan says why in plan->warning, for the caller to show
 * (the run itself is valid, exit 0).  Here what holds for every model: a
 * map of nodata only, no valid cell that may be lowered (hardness 1 or
 * mask 0 everywhere: nothing erodes, so nothing is deposited either); then
 * the model's own note_no_op (no water, no droplet starts, ...).
 */
static void note_no_op(er_plan *plan, const er_terrain *t)
{
    const er_controls *c = t->controls;
    if (plan->warning[0])
        return;
    if (plan->valid == 0) { /* said even when no work was asked: droplets count 0 here */
        snprintf(plan->warning, sizeof plan->warning, "no valid cell (every cell is nodata): "
                 "the run changes nothing");
        return;
    }
    if (plan->boundaries == 0)
        return;
    if (c && (c->hardness || c->mask) && !any_erodible(t)) {
        const int hard = c->hardness && !er_any_valid(t, c->hardness, 1.0f, below_one);
        const int masked = c->mask && !er_any_valid(t, c->mask, 0.0f, er_is_positive);
        snprintf(plan->warning, sizeof plan->warning, "%s: no valid cell can be lowered "
                 "(%s): nothing erodes or deposits, the terrain stays as it is",
                 hard ? "hardness" : masked ? "mask" : "hardness and mask",
                 hard ? "hardness 1 everywhere" : masked ? "mask 0 everywhere"
                                                         : "(1 - hardness) * mask is 0 everywhere");
        return;
    }
    const er_model_ops *m = er_model(plan->p.model);
    if (m->note_no_op)
        m->note_no_op(plan, t);
}

/* The names of the models with flag, "a, b", written to buf. */
static const char *models_with(unsigned flag, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < ER_MODEL_KINDS; k++) {
        const er_model_ops *m = er_model((er_model_kind)k);
        if (!(m->flags & flag))
            continue;
        int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", m->name);
        if (w < 0 || (size_t)w >= n - used)
            break;
        used += (size_t)w;
    }
    return buf;
}

/* Each side of the cells within terrain.cell_size's range (the key
 * table's, whatever gave the size: the georeferencing or the key): a cell
 * of 1e300 m, or of 1e-300 m, turns every area and volume into infinity
 * or zero at the first step, after the outputs were opened. */
static er_status check_cell_size(const er_terrain *t, er_error *err)
{
    size_t n;
    const er_key *tab = er_keys_params(&n), *k = NULL;
    for (size_t i = 0; i < n && !k; i++)
        k = strcmp(tab[i].path, "terrain.cell_size") == 0 ? &tab[i] : NULL;
    char what[160];
    double side[2] = {t->cell_x, t->cell_y};
    for (int i = 0; i < 2 && k; i++)
        if (!er_key_check_number(k, side[i], 0, what, sizeof what))
            return er_fail(err, ER_EINVAL, "terrain: cell size %g x %g m: %s (terrain.cell_size's range)",
                           t->cell_x, t->cell_y, what);
    return ER_OK;
}

er_status er_plan_make(const er_params *p, const er_terrain *t, const er_window *win,
                       er_plan *plan, er_error *err)
{
    er_status st;
    memset(plan, 0, sizeof *plan);
    plan->p = *p;
    /* Every key's own range, from the key table (core/keys.c). */
    if ((st = er_params_check(p, err)))
        return st;
    if (!t || !t->elevation || t->width < 1 || t->height < 1)
        return er_fail(err, ER_EINVAL, "terrain: empty map");
    if ((st = check_cell_size(t, err)))
        return st;
    if ((st = er_window_resolve(win, t->width, t->height, &plan->win, err)))
        return st;
    plan->windowed = win != NULL;
    plan->width = t->width;
    plan->height = t->height;
    plan->cell_x = t->cell_x;
    plan->cell_y = t->cell_y;
    er_terrain_stats m;
    er_terrain_measure(t, &m);
    if (m.bad != SIZE_MAX)
        return er_fail(err, ER_EINVAL, "terrain: non-finite height at cell (%zu, %zu)",
                       m.bad % (size_t)t->width, m.bad / (size_t)t->width);
    if ((st = er_controls_check(t->controls, t->width, t->height, t->wall, plan->win.x0,
                                plan->win.y0, err)))
        return st;
    plan->valid = m.valid;
    plan->sum = m.sum;
    plan->abs_sum = m.abs_sum;
    plan->lo = m.lo;
    plan->hi = m.hi;
    const er_model_ops *model = er_model(p->model);
    if (!model)
        return er_fail(err, ER_EINVAL, "model: unknown model %d", (int)p->model);
    if (t->controls && t->controls->uplift && !(model->flags & ER_MODEL_UPLIFT))
        return er_fail(err, ER_EINVAL, "uplift: the %s model has no uplift for the map to "
                       "scale (%s uses one)", model->name,
                       models_with(ER_MODEL_UPLIFT, plan->warning, sizeof plan->warning));
    char what[128];
    plan->bytes_map = er_plan_bytes_fixed(p, what, sizeof what);
    if ((st = model->plan(plan, t, err)))
        return st;
    note_no_op(plan, t);
    if (!plan->warning[0] && p->river.n > 0 && !(model->flags & ER_MODEL_RIVER_SOURCES)) {
        char with[64];
        snprintf(plan->warning, sizeof plan->warning, "river_sources: the %s model has no river "
                 "sources: the list is ignored (%s use them)", model->name,
                 models_with(ER_MODEL_RIVER_SOURCES, with, sizeof with));
    }
    return ER_OK;
}

er_status er_plan_check_resume(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                               const er_layers *keep, er_error *err)
{
    return er_model(plan->p.model)->check_resume(plan, t, r, keep, err);
}

size_t er_plan_bytes_fixed(const er_params *p, char *what, size_t n)
{
    const er_model_ops *m = er_model(p->model);
    if (n > 0)
        what[0] = '\0';
    return m && m->bytes_fixed ? m->bytes_fixed(p, what, n) : 0;
}

size_t er_plan_bytes_per_cell(const er_params *p)
{
    const er_model_ops *m = er_model(p->model);
    return m && m->bytes_per_cell ? m->bytes_per_cell(p) : 0;
}
