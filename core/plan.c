/*
 * The run plan and the CPU backend (core/plan.h).  What is common to the
 * models lives here (the window, the cell size, one scan of the terrain);
 * each model's own planning is er_mei_plan (core/mei/mei.c) and
 * er_droplet_plan (core/droplet/droplet.c), beside the code that uses it.
 */
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* Whether map m (NULL: none) holds a value v on a valid cell with
 * pred(v); a missing map counts as the value `none`. */
static int any_valid(const er_terrain *t, const float *m, float none, int (*pred)(float))
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    if (!m)
        return pred(none);
    for (size_t i = 0; i < n; i++)
        if (!(t->wall && t->wall[i]) && pred(m[i]))
            return 1;
    return 0;
}

static int positive(float v) { return v > 0.0f; }
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

/* Mei's water: rain (rain_rate or drops, times the rain map) or a source. */
static int mei_has_water(const er_plan *plan, const er_terrain *t)
{
    const er_mei_params *m = &plan->p.mei;
    const er_controls *c = t->controls;
    int water = (m->rain_rate > 0 || m->drops_per_step > 0) &&
                any_valid(t, c ? c->rain : NULL, 1.0f, positive);
    for (int i = 0; i < m->n_sources; i++)
        water |= m->sources[i].rate > 0;
    return water || (c && c->source && any_valid(t, c->source, 0.0f, positive));
}

/*
 * A run that will change nothing, though the recipe asks for work (steps,
 * droplets): the plan says why in plan->warning, for the caller to show
 * (the run itself is valid, exit 0).  Models note their own (SPH: no
 * particle); here a map of nodata only, and what the control maps and
 * Mei's water settle: no valid cell may be lowered (hardness 1 or mask 0 everywhere: nothing erodes,
 * so nothing is deposited either), no droplet starts (rain 0 everywhere),
 * Mei with no water and no weathering.
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
        const int hard = c->hardness && !any_valid(t, c->hardness, 1.0f, below_one);
        const int masked = c->mask && !any_valid(t, c->mask, 0.0f, positive);
        snprintf(plan->warning, sizeof plan->warning, "%s: no valid cell can be lowered "
                 "(%s): nothing erodes or deposits, the terrain stays as it is",
                 hard ? "hardness" : masked ? "mask" : "hardness and mask",
                 hard ? "hardness 1 everywhere" : masked ? "mask 0 everywhere"
                                                         : "(1 - hardness) * mask is 0 everywhere");
        return;
    }
    if (plan->p.model == ER_MODEL_DROPLET && c && c->rain && !any_valid(t, c->rain, 0.0f, positive))
        snprintf(plan->warning, sizeof plan->warning, "rain: 0 on every valid cell: no droplet "
                 "starts and the run changes nothing");
    else if (plan->p.model == ER_MODEL_MEI && !mei_has_water(plan, t) &&
             !(plan->p.mei.thermal_rate > 0))
        snprintf(plan->warning, sizeof plan->warning, "mei: no water falls or flows in (rain, "
                 "drops and sources are 0) and mei.thermal_rate is 0: the run changes nothing");
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
    if (!(isfinite(t->cell_x) && t->cell_x > 0.0 && isfinite(t->cell_y) && t->cell_y > 0.0))
        return er_fail(err, ER_EINVAL, "terrain: cell size %g x %g m is not positive",
                       t->cell_x, t->cell_y);
    if ((st = er_window_resolve(win, t->width, t->height, &plan->win, err)))
        return st;
    plan->windowed = win != NULL;
    plan->width = t->width;
    plan->height = t->height;
    plan->cell_x = t->cell_x;
    plan->cell_y = t->cell_y;
    plan->area_k = 1.0;
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
    switch (p->model) {
    case ER_MODEL_MEI: st = er_mei_plan(plan, t, err); break;
    case ER_MODEL_DROPLET: st = er_droplet_plan(plan, t, err); break;
    case ER_MODEL_SPH: st = er_sph_plan(plan, t, err); break;
    default: return er_fail(err, ER_EINVAL, "model: unknown model %d", (int)p->model);
    }
    if (st == ER_OK)
        note_no_op(plan, t);
    return st;
}

/* The first of n values that is not finite (or below lo), or -1. */
static int64_t first_bad(const double *v, int64_t n, double lo)
{
    for (int64_t i = 0; i < n; i++)
        if (!(isfinite(v[i]) && v[i] >= lo))
            return i;
    return -1;
}

static int64_t first_bad_float(const float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return i;
    return -1;
}

/* Every value of an SPH state the model reads (a checkpoint is a file: it
 * may say anything its checksums allow): the particles where the run can
 * have left them, on the map (a position is a column and a quad index)
 * with finite speeds and a volume fraction in [0, 1]; the heights, the
 * change, the deposits and the layers it keeps finite; the source volumes
 * pending finite and >= 0.  Speeds are not bounded here: a particle faster
 * than the sound speed allows fails the run at its first sub-step. */
static er_status check_sph_values(const er_plan *plan, const er_run_state *r, er_error *err)
{
    const er_run_sph *q = r->sph;
    const double xmax = plan->width - 1, ymax = plan->height - 1;
    for (int64_t i = 0; i < q->n; i++) {
        const double *v = q->particles + i * ER_SPH_PARTICLE_DOUBLES;
        int bad = !(v[0] >= 0.0 && v[0] <= xmax && v[1] >= 0.0 && v[1] <= ymax);
        for (int k = 2; k < ER_SPH_PARTICLE_DOUBLES; k++)
            bad |= !isfinite(v[k]);
        if (bad || !(v[6] >= 0.0 && v[6] <= 1.0))
            return er_fail(err, ER_EINVAL, "the state's particle %lld (at %g, %g, %g, speed %g, "
                           "%g, %g, load %g) is not one the run can hold: off the %dx%d map, "
                           "not finite or a load outside [0, 1]", (long long)i, v[0], v[1],
                           v[2], v[3], v[4], v[5], v[6], plan->width, plan->height);
    }
    const int64_t nv = (int64_t)plan->width * plan->height;
    const double *grid[3] = {q->zb, q->dz, q->dep};
    static const char *const grid_name[3] = {"working heights", "height changes", "deposits"};
    for (int k = 0; k < 3; k++) {
        int64_t i = first_bad(grid[k], nv, -INFINITY);
        if (i >= 0)
            return er_fail(err, ER_EINVAL, "the state's %s are not finite at cell (%lld, %lld)",
                           grid_name[k], (long long)(i % plan->width),
                           (long long)(i / plan->width));
    }
    int64_t i = first_bad(q->pending, q->n_pending, 0.0);
    if (i >= 0)
        return er_fail(err, ER_EINVAL, "the state's pending source volume %lld (%g) is not a "
                       "finite volume >= 0", (long long)i, q->pending[i]);
    for (int k = ER_STATE_SPH_WEAR; k <= ER_STATE_SPH_FLOW; k++) {
        int64_t j = k < r->n_arrays && r->array[k] ? first_bad_float(r->array[k], nv) : -1;
        if (j >= 0)
            return er_fail(err, ER_EINVAL, "the state's %s layer is not finite at cell (%lld, "
                           "%lld)", k == ER_STATE_SPH_FLOW ? "flow" : "wear",
                           (long long)(j % plan->width), (long long)(j / plan->width));
    }
    return ER_OK;
}

/* An SPH state: a step boundary of this run with its particles. */
static er_status check_resume_sph(const er_plan *plan, const er_run_state *r,
                                  const er_layers *keep, er_error *err)
{
    const int kept[2] = {keep && keep->wear, keep && keep->flow};
    for (int k = 0; k < 2; k++) {
        int i = k ? ER_STATE_SPH_FLOW : ER_STATE_SPH_WEAR;
        if (kept[k] && (r->n_arrays <= i || !r->array[i]))
            return er_fail(err, ER_EINVAL, "the state has no %s layer (its run did not keep "
                           "it): resume without it, or start again", k ? "flow" : "wear");
    }
    if (r->model != ER_MODEL_SPH || !r->sph)
        return er_fail(err, ER_EINVAL, "the state is not from a sph run");
    if (r->width != plan->width || r->height != plan->height)
        return er_fail(err, ER_EINVAL, "the state is %dx%d, the map %dx%d", r->width,
                       r->height, plan->width, plan->height);
    if (r->boundaries != plan->boundaries || r->total != plan->p.sph.steps || r->boundary < 0 ||
        r->boundary > plan->boundaries || r->done != r->boundary)
        return er_fail(err, ER_EINVAL, "the state (step %lld of %lld) does not fit this run of "
                       "%lld steps", (long long)r->boundary, (long long)r->boundaries,
                       (long long)plan->boundaries);
    const er_run_sph *q = r->sph;
    if (q->n < 0 || q->n > plan->p.sph.max_particles || q->n_pending != ER_MAX_SOURCES + 1 ||
        (q->n > 0 && !q->particles) || !q->zb || !q->dz || !q->dep ||
        (q->n_pending > 0 && !q->pending))
        return er_fail(err, ER_EINVAL, "the state's particles (%lld) or source slots (%d) do "
                       "not fit this run", (long long)q->n, q->n_pending);
    return check_sph_values(plan, r, err);
}

/* Whether array i of a Mei or droplet state is one the run needs. */
static int array_needed(int mei, int i, const er_layers *k)
{
    if (mei)
        return i < ER_STATE_MEI_FLOW || (i == ER_STATE_MEI_FLOW && k && k->flow) ||
               (i == ER_STATE_MEI_WEAR && k && k->wear);
    return i == ER_STATE_DROP_HEIGHT || (i == ER_STATE_DROP_FLOW && k && k->water) ||
           (i == ER_STATE_DROP_DEPOSIT && k && k->sediment) ||
           (i == ER_STATE_DROP_WEAR && k && k->wear);
}

er_status er_plan_check_resume(const er_plan *plan, const er_run_state *r,
                               const er_layers *keep, er_error *err)
{
    const int mei = plan->p.model == ER_MODEL_MEI;
    if (plan->p.model == ER_MODEL_SPH)
        return check_resume_sph(plan, r, keep, err);
    const char *name = mei ? "mei" : "droplet";
    if (r->model != plan->p.model)
        return er_fail(err, ER_EINVAL, "the state is not from a %s run", name);
    if (r->width != plan->width || r->height != plan->height)
        return er_fail(err, ER_EINVAL, "the state is %dx%d, the map %dx%d", r->width,
                       r->height, plan->width, plan->height);
    const int64_t total = mei ? plan->p.mei.steps : plan->droplets;
    int64_t done = r->boundary;
    if (!mei)
        done = r->boundary >= plan->boundaries ? plan->droplets : r->boundary * plan->batch;
    if (r->boundaries != plan->boundaries || r->total != total || r->boundary < 0 ||
        r->boundary > plan->boundaries || r->done != done)
        return er_fail(err, ER_EINVAL, "the state (%s %lld of %lld, %lld of %lld %s) does not "
                       "fit this run of %lld %s", mei ? "step" : "batch",
                       (long long)r->boundary, (long long)r->boundaries, (long long)r->done,
                       (long long)r->total, mei ? "steps" : "droplets",
                       (long long)plan->boundaries, mei ? "steps" : "batches");
    const int arrays = mei ? ER_STATE_ARRAYS : ER_STATE_DROP_ARRAYS;
    if (r->n_arrays != arrays && r->n_arrays != (mei ? ER_STATE_MEI_OLD : ER_STATE_DROP_OLD))
        return er_fail(err, ER_EINVAL, "the state has %d arrays, a %s run %d", r->n_arrays,
                       name, arrays);
    for (int i = 0; i < arrays; i++) {
        if (!array_needed(mei, i, keep) || (i < r->n_arrays && r->array[i]))
            continue;
        if ((mei && i >= ER_STATE_MEI_FLOW) || (!mei && i == ER_STATE_DROP_WEAR))
            return er_fail(err, ER_EINVAL, "the state has no %s layer (its run did not keep "
                           "it): resume without it, or start again",
                           mei && i == ER_STATE_MEI_FLOW ? "flow" : "wear");
        return er_fail(err, ER_EINVAL, "the state lacks a layer the run keeps (array %d)", i);
    }
    /* Mei's arrays hold model values on every cell (0 on walls), and a
     * value that is not finite is never one a run leaves: refused here,
     * not found steps later.  The droplets' hold the input's nodata on
     * walls; er_droplet_begin checks them with the walls at hand. */
    for (int i = 0; mei && i < r->n_arrays; i++) {
        int64_t j = r->array[i] && array_needed(mei, i, keep)
                        ? first_bad_float(r->array[i], (int64_t)plan->width * plan->height)
                        : -1;
        if (j >= 0)
            return er_fail(err, ER_EINVAL, "the state's array %d is not finite at cell (%lld, "
                           "%lld)", i, (long long)(j % plan->width), (long long)(j / plan->width));
    }
    return ER_OK;
}

size_t er_plan_bytes_fixed(const er_params *p)
{
    return p->model == ER_MODEL_SPH ? er_sph_bytes_fixed(p) : 0;
}

size_t er_plan_bytes_per_cell(const er_params *p)
{
    switch (p->model) {
    case ER_MODEL_MEI: return er_mei_bytes_per_cell(p);
    case ER_MODEL_DROPLET: return er_droplet_bytes_per_cell(p);
    case ER_MODEL_SPH: return er_sph_bytes_per_cell(p);
    }
    return 0;
}
