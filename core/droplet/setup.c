/*
 * A droplet run's set-up from its plan (the kernels' constants in metres,
 * the brush, the clean mask, the control maps), the run state view at a
 * batch boundary, resume, the end of a run with its budget, and the run
 * guard.  Shared by every compute path (core/droplet/vulkan.c too).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "droplet_impl.h"

/* The clean mask: 1 where the (2a+1)^2 window around a cell lies in the map
 * and holds no wall.  A row pass then a column pass of running wall counts;
 * `run` has room for width ints. */
static void build_clean(const er_terrain *t, int a, uint8_t *clean, int *run)
{
    const int W = t->width, H = t->height;
    const size_t w = (size_t)W;
    /* Rows: clean[x] = no wall in [x - a, x + a] of this row, all in the map. */
    for (int y = 0; y < H; y++) {
        const uint8_t *wr = t->wall + (size_t)y * w;
        uint8_t *cr = clean + (size_t)y * w;
        int cnt = 0;
        for (int x = 0; x < W && x < a; x++)
            cnt += wr[x];
        for (int x = 0; x < W; x++) {
            if (x + a < W)
                cnt += wr[x + a];
            if (x - a - 1 >= 0)
                cnt -= wr[x - a - 1];
            cr[x] = (uint8_t)(cnt == 0 && x - a >= 0 && x + a < W);
        }
    }
    /* Columns: a cell is clean when the row results of rows y-a..y+a are
     * all 1.  Bit 0 keeps the row result (still needed by the window's
     * trailing edge), bit 1 receives the answer. */
    for (int x = 0; x < W; x++)
        run[x] = 0;
    for (int y = 0; y < H + a; y++) {
        /* run[x] counts row results of 0 among rows y-2a..y. */
        for (int x = 0; x < W; x++) {
            if (y < H)
                run[x] += !(clean[(size_t)y * w + (size_t)x] & 1);
            if (y - 2 * a - 1 >= 0)
                run[x] -= !(clean[(size_t)(y - 2 * a - 1) * w + (size_t)x] & 1);
        }
        int yc = y - a;
        if (yc < 0)
            continue;
        int rows_in = yc - a >= 0 && yc + a < H;
        for (int x = 0; x < W; x++) {
            uint8_t *q = clean + (size_t)yc * w + (size_t)x;
            *q = (uint8_t)(*q | ((rows_in && run[x] == 0) << 1));
        }
    }
    size_t n = w * (size_t)H;
    for (size_t i = 0; i < n; i++)
        clean[i] = (uint8_t)(clean[i] >> 1);
}

/* Brush weights 1 - dist/r for taps with dist < r, normalised to sum 1
 * (Lague), on a (2r-1)^2 square with zeros outside the disc so the
 * interior path runs over whole rows with no per-tap branch.  sqrt only
 * here, once per run. */
static float *make_brush(int r)
{
    int side = 2 * r - 1;
    float *bw = malloc((size_t)side * (size_t)side * sizeof *bw);
    if (!bw)
        return NULL;
    double sum = 0;
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++) {
            double dx = i - (r - 1), dy = j - (r - 1), dist = sqrt(dx * dx + dy * dy);
            sum += dist < r ? 1.0 - dist / r : 0.0;
        }
    for (int j = 0; j < side; j++)
        for (int i = 0; i < side; i++) {
            double dx = i - (r - 1), dy = j - (r - 1), dist = sqrt(dx * dx + dy * dy);
            bw[j * side + i] = (float)(dist < r ? (1.0 - dist / r) / sum : 0.0);
        }
    return bw;
}

/* Steps until a particle's volume falls below min_volume by evaporation
 * alone from the start volume v0, counted with the same float products the
 * kernel forms (no log), plus one; ER_MT_MAX_STEPS when that never
 * happens.  Rounding is monotonic, so a particle starting with less than
 * v0 ends no later. */
static int64_t particle_max_steps(float keep, float min_volume, float v0)
{
    if (!(keep < 1.0f))
        return ER_MT_MAX_STEPS;
    float v = v0;
    int64_t n = 0;
    while (v >= min_volume && n < ER_MT_MAX_STEPS) {
        v *= keep;
        n++;
    }
    return n + 1 < ER_MT_MAX_STEPS ? n + 1 : ER_MT_MAX_STEPS;
}

/* The largest rain multiplier on a valid cell, 1 without a rain map: the
 * particle with the largest start volume bounds the steps of all. */
static float rain_max(const er_terrain *t, const float *rain)
{
    float m = 1.0f;
    if (!rain)
        return m;
    m = 0.0f;
    for (size_t i = 0, n = (size_t)t->width * (size_t)t->height; i < n; i++)
        if ((!t->wall || !t->wall[i]) && rain[i] > m)
            m = rain[i];
    return m;
}

/* Points the context at the terrain's control maps; hardness and mask
 * fold into one erosion factor per cell, (1 - h) * m, computed once here
 * for every compute path (the Vulkan shaders read the same array).
 * Non-zero when out of memory. */
static int set_controls(const er_terrain *t, er_droplet_setup *s)
{
    const er_controls *k = t->controls;
    er_dctx *c = &s->ctx;
    if (!k)
        return 0;
    c->ctl_rain = k->rain;
    c->ctl_mask = k->mask;
    if (!k->hardness && !k->mask)
        return 0;
    s->erode_k = malloc(s->cells * sizeof *s->erode_k);
    if (!s->erode_k)
        return 1;
    for (size_t i = 0; i < s->cells; i++) {
        /* Walls may hold anything, NaN included, and are never read. */
        int valid = !t->wall || !t->wall[i];
        float h = k->hardness && valid ? k->hardness[i] : 0.0f;
        float m = k->mask && valid ? k->mask[i] : 1.0f;
        s->erode_k[i] = (1.0f - h) * m;
    }
    c->ctl_erode = s->erode_k;
    return 0;
}

/* Frees what run_setup allocated into s. */
static void setup_arrays_free(er_droplet_setup *s)
{
    free(s->trail);
    free(s->brush);
    free(s->clean);
    free(s->erode_k);
}

/* Zeroes the layers and fills the context from the plan. */
static er_status run_setup(const er_plan *plan, er_terrain *t, er_layers *layers,
                           er_droplet_setup *s, er_error *err)
{
    const er_droplet_params *d = &plan->p.droplet;
    const er_window wn = plan->win;
    memset(s, 0, sizeof *s);
    s->cells = (size_t)t->width * (size_t)t->height;
    s->before = plan->sum;
    s->scale = plan->abs_sum;
    s->lo = plan->lo;
    s->count = plan->own.droplet.droplets;
    s->per_cell = plan->own.droplet.per_cell;
    const double unit = plan->own.droplet.height_unit;

    if (layers && layers->water)
        memset(layers->water, 0, s->cells * sizeof(float));
    if (layers && layers->sediment)
        memset(layers->sediment, 0, s->cells * sizeof(float));
    if (layers && layers->wear)
        memset(layers->wear, 0, s->cells * sizeof(float));
    /* flow is the water layer: accumulated once, in water when the run
     * keeps both (copied to flow at the end, er_droplet_end) */
    float *water = layers ? (layers->water ? layers->water : layers->flow) : NULL;
    if (water)
        memset(water, 0, s->cells * sizeof(float));
    s->flow_copy = layers && layers->water && layers->flow ? layers->flow : NULL;

    er_dctx *c = &s->ctx;
    if (set_controls(t, s))
        return er_fail(err, ER_ENOMEM, "droplet: out of memory for the control maps");
    c->width = t->width;
    c->height = t->height;
    c->wx0 = wn.x0;
    c->wy0 = wn.y0;
    c->world_w = wn.world_width;
    c->world_h = wn.world_height;
    c->height_m = t->elevation;
    c->wall = t->wall;
    c->flow = water;
    c->deposit = layers ? layers->sediment : NULL;
    c->wear = layers ? layers->wear : NULL;
    c->variant = d->variant;
    c->reach = plan->own.droplet.reach;
    c->area_k = (float)plan->own.droplet.area_k;

    if (d->variant == ER_DROPLET_LAGUE) {
        c->lifetime = (int)d->lifetime;
        c->inertia = (float)d->inertia;
        c->grad_k = (float)((1.0 - d->inertia) / unit);
        c->cap_k = (float)d->capacity;
        c->min_cap = (float)(d->min_capacity * unit);
        c->min_slope = (float)(d->min_slope * unit);
        c->erode_speed = (float)d->erode_speed;
        c->deposit_speed = (float)d->deposit_speed;
        c->keep_water = (float)(d->evaporate_speed < 1 ? 1.0 - d->evaporate_speed : 0.0);
        c->gravity = (float)(d->gravity / unit);
        c->init_water = (float)d->initial_water;
        c->init_speed = (float)d->initial_speed;
        s->trail = malloc((size_t)c->lifetime * sizeof *s->trail);
        if (!s->trail)
            return er_fail(err, ER_ENOMEM, "droplet: out of memory");
    } else {
        double dt = d->mt_dt;
        c->mt_dt = (float)dt;
        c->mt_inv_density = (float)(1.0 / d->mt_density);
        c->mt_friction_keep = (float)(dt * d->mt_friction < 1 ? 1.0 - dt * d->mt_friction : 0.0);
        c->mt_rate = (float)(dt * d->mt_deposition_rate);
        c->mt_evap_keep =
            (float)(dt * d->mt_evaporation_rate < 1 ? 1.0 - dt * d->mt_evaporation_rate : 0.0);
        c->mt_min_volume = (float)d->mt_min_volume;
        c->mt_vscale = (float)(ER_MT_HEIGHT_SCALE * sqrt(plan->own.droplet.area_k) / unit);
        c->mt_max_distance = (int)d->mt_max_distance;
        c->mt_max_steps = particle_max_steps(c->mt_evap_keep, c->mt_min_volume,
                                             rain_max(t, c->ctl_rain));
    }
    /* Both variants lay a load down through the brush; the particle's 3x3
     * stencil needs a clean window of at least 1. */
    c->radius = (int)d->radius;
    c->brush_side = 2 * c->radius - 1;
    c->clean_a = c->radius - 1;
    if (d->variant != ER_DROPLET_LAGUE && c->clean_a < 1)
        c->clean_a = 1;
    s->brush = make_brush(c->radius);
    if (!s->brush)
        return er_fail(err, ER_ENOMEM, "droplet: out of memory for the brush");
    c->brush_w = s->brush;
#ifdef ER_DROPLET_AVX512
    c->avx512 = er_droplet_avx512();
    c->brush5_simd = c->avx512 && c->brush_side == 5 && !c->wear && !c->ctl_erode;
#endif

    if (t->wall) {
        int *run = malloc((size_t)t->width * sizeof *run);
        s->clean = malloc(s->cells);
        if (!run || !s->clean) {
            free(run);
            return er_fail(err, ER_ENOMEM, "droplet: out of memory for the wall mask");
        }
        build_clean(t, c->clean_a, s->clean, run);
        free(run);
        c->clean = s->clean;
    }
    return ER_OK;
}

/* The budget term "withheld" (core/model.h), which the snapshot schedule
 * reports: erosion the depth bound's clamp kept on the terrain though the
 * droplets carried it (always 0 since its shares need no clamp). */
#define WITHHELD "withheld"

void er_droplet_put_withheld(const er_params *p, er_budget *b, double withheld)
{
    if (p->droplet.schedule == ER_DROPLET_SNAPSHOT)
        *er_budget_term(b, WITHHELD) = withheld;
}

static void fill_budget(const er_params *p, const er_droplet_setup *s, const er_terrain *t,
                        const er_dacc *sum, er_budget *budget)
{
    if (!budget)
        return;
    er_terrain_stats m;
    er_terrain_measure(t, &m);
    const double after = m.sum;
    memset(budget, 0, sizeof *budget);
    budget->material_before = s->before;
    budget->material_after = after;
    budget->left_map = sum->left_map;
    budget->eroded = sum->eroded;
    budget->deposited = sum->deposited;
    budget->water_left = sum->water_left;
    budget->substeps = sum->steps;
    er_droplet_put_withheld(p, budget, sum->withheld);
    budget->rel_error = er_budget_rel_error(budget, s->scale);
}

/* The water of the first `done` droplets: without a rain map every
 * droplet's, one product, with one the started droplets' sum. */
static double water_added(const er_droplet_params *d, const er_droplet_setup *s, int64_t done,
                          const er_dacc *sum)
{
    if (s->ctx.ctl_rain)
        return sum->water;
    return (double)done * (d->variant == ER_DROPLET_LAGUE ? d->initial_water : 1.0);
}

/* Batches of a run of s->count droplets. */
static int64_t batch_count(const er_droplet_setup *s, int64_t batch)
{
    return s->count > 0 ? (s->count + batch - 1) / batch : 0;
}

/* Droplets done after b batches. */
static int64_t droplets_done(const er_droplet_setup *s, int64_t batch, int64_t b)
{
    return b >= batch_count(s, batch) ? s->count : b * batch;
}

/* The run state after b batches (see core/model.h).  Batch b always holds
 * droplets b * batch .. and uses the grid offsets of key b, whatever the
 * thread count, so the batch index is the whole position. */
void er_droplet_state(const er_params *p, const er_droplet_setup *s, int64_t batch, int64_t b,
                      const er_dacc *sum, er_run_state *v)
{
    memset(v, 0, sizeof *v);
    v->model = ER_MODEL_DROPLET;
    v->width = s->ctx.width;
    v->height = s->ctx.height;
    v->boundary = b;
    v->boundaries = batch_count(s, batch);
    v->done = droplets_done(s, batch, b);
    v->total = s->count;
    v->budget.material_before = s->before;
    v->budget.eroded = sum->eroded;
    v->budget.deposited = sum->deposited;
    v->budget.left_map = sum->left_map;
    v->budget.water_left = sum->water_left;
    v->budget.substeps = sum->steps;
    er_droplet_put_withheld(p, &v->budget, sum->withheld);
    v->budget.work_done = v->done;
    v->budget.water_added = water_added(&p->droplet, s, v->done, sum);
    v->n_arrays = ER_STATE_DROP_ARRAYS;
    v->array[ER_STATE_DROP_HEIGHT] = s->ctx.height_m;
    v->array[ER_STATE_DROP_FLOW] = s->ctx.flow;
    v->array[ER_STATE_DROP_DEPOSIT] = s->ctx.deposit;
    v->array[ER_STATE_DROP_WEAR] = s->ctx.wear;
}

er_status er_droplet_restore(const er_plan *plan, const er_terrain *t,
                             const er_droplet_setup *s, const er_run_state *r, er_dacc *sum,
                             er_error *err)
{
    const er_dctx *c = &s->ctx;
    const er_layers keep = { c->flow, c->deposit, NULL, c->wear };
    er_status st = er_plan_check_resume(plan, t, r, &keep, err);
    if (st)
        return st;
    const size_t bytes = s->cells * sizeof(float);
    if (c->wear)
        memcpy(c->wear, r->array[ER_STATE_DROP_WEAR], bytes);
    memcpy(c->height_m, r->array[ER_STATE_DROP_HEIGHT], bytes);
    if (c->flow)
        memcpy(c->flow, r->array[ER_STATE_DROP_FLOW], bytes);
    if (c->deposit)
        memcpy(c->deposit, r->array[ER_STATE_DROP_DEPOSIT], bytes);
    sum->eroded = r->budget.eroded;
    sum->deposited = r->budget.deposited;
    sum->left_map = r->budget.left_map;
    sum->water_left = r->budget.water_left;
    sum->water = r->budget.water_added;
    sum->steps = r->budget.substeps;
    /* a checkpoint of format 5 or before kept it in its header */
    sum->withheld = er_budget_has_term(&r->budget, WITHHELD) ? er_budget_term_value(&r->budget, WITHHELD)
                                                             : r->legacy_slot;
    return ER_OK;
}

er_status er_droplet_end(const er_params *p, const er_droplet_setup *s, const er_terrain *t,
                         const er_dacc *sum, er_status st, er_budget *budget, er_error *err)
{
    er_budget b;
    if (s->flow_copy && s->ctx.flow)
        memcpy(s->flow_copy, s->ctx.flow, s->cells * sizeof(float));
    fill_budget(p, s, t, sum, &b);
    b.work_done = s->count;
    b.water_added = water_added(&p->droplet, s, s->count, sum);
    if (st == ER_OK)
        st = er_droplet_guard(s, t, &b, err);
    if (budget)
        *budget = b;
    return st;
}

/*
 * The run guard: a droplet run that completed is checked before its
 * outputs are trusted.  Three conditions, each with its reason:
 *
 * - every valid height finite: a droplet step only adds, subtracts,
 *   multiplies and takes min/max of finite values, so a NaN or an infinity
 *   is a defect, never a property of the terrain;
 * - no valid height below the input's lowest, with no margin: the erosion
 *   rule (er_lague_step, er_particle_run) stops every tap at the height
 *   the droplet moves to, a mean of nodes the map holds, with min and max
 *   only, and deposits only add, so the lowest height never decreases, in
 *   float arithmetic as in exact (a step that dug pits under it would
 *   show here);
 * - the material budget, |before - after - left_map + withheld|, within
 *   ER_DROPLET_BUDGET_TOL times the droplets per cell (at least 1) of the
 *   input's sum of |height| (the volume of material, robust for DEMs that
 *   straddle sea level, where the signed sum can be near 0); why that
 *   tolerance: droplet_impl.h.
 *
 * Walls (nodata) are not terrain and are left out.  The first failing cell
 * in row-major order is named.
 */
er_status er_droplet_guard(const er_droplet_setup *s, const er_terrain *t, const er_budget *b,
                           er_error *err)
{
    const size_t n = (size_t)t->width * (size_t)t->height, w = (size_t)t->width;
    size_t bad = SIZE_MAX, low = SIZE_MAX;
    for (size_t i = 0; i < n && bad == SIZE_MAX; i++) {
        if (t->wall && t->wall[i])
            continue;
        float z = t->elevation[i];
        if (!isfinite(z))
            bad = i;
        else if (z < s->lo && low == SIZE_MAX)
            low = i;
    }
    if (bad != SIZE_MAX)
        return er_fail(err, ER_ENUMERIC,
                       "droplet: non-finite height at cell (%zu, %zu) after the run", bad % w,
                       bad / w);
    if (low != SIZE_MAX)
        return er_fail(err, ER_ENUMERIC,
                       "droplet: height %.9g m at cell (%zu, %zu) is below the input's lowest "
                       "%.9g m",
                       (double)t->elevation[low], low % w, low / w, (double)s->lo);
    double miss = fabs(b->material_before - b->material_after - b->left_map +
                       er_budget_terms_sum(b));
    double scale = s->scale > DBL_MIN ? s->scale : DBL_MIN;
    double tol = ER_DROPLET_BUDGET_TOL * (s->per_cell > 1 ? s->per_cell : 1.0);
    if (!(miss <= tol * scale))
        return er_fail(err, ER_ENUMERIC,
                       "droplet: material budget misses by %.3g of the terrain's volume "
                       "(tolerance %.3g)",
                       miss / scale, tol);
    return ER_OK;
}

er_status er_droplet_prepare(const er_plan *plan, er_terrain *t, er_layers *layers,
                             er_droplet_setup *s, er_error *err)
{
    er_status st = run_setup(plan, t, layers, s, err);
    if (st) {
        setup_arrays_free(s);
        memset(s, 0, sizeof *s);
    }
    return st;
}

void er_droplet_setup_free(er_droplet_setup *s)
{
    if (!s)
        return;
    setup_arrays_free(s);
    memset(s, 0, sizeof *s);
}

