/*
 * The Mei, Decaudin & Hu (2007) grid model: run loop, parallel schedule,
 * stability checks and budget.  The physics lives in pipe.c (eqs. 1-9,
 * 15), erosion.c (eqs. 10-12, thermal) and transport.c (eqs. 13-14); the
 * schedule is described in mei_internal.h.
 *
 * Order within a step follows the paper's summary (§3): water increment,
 * flow, erosion-deposition, transport, evaporation; thermal weathering (if
 * on) is added to the terrain change of the erosion step, computed from
 * the same old terrain.
 *
 * Stability (§3.2.2).  Two conditions are checked:
 *
 * 1. The paper's CFL condition dt |u| <= lX, dt |v| <= lY on the velocity
 *    of eqs. 8-9, from the fastest flow of each (sub-)step (the per-row
 *    maxima the water kernel computes anyway).  With the scaling of eq. 4
 *    it holds by construction: a cell's outflow per step is at most its
 *    water d1, so the volume crossing it in x is at most
 *    (in_x + out_x) <= 2 dbar lX lY and dt |u| <= lX up to rounding.  So
 *    it cannot detect a too-long step (an unstable lake sloshes with every
 *    cell draining fully each step, |u| ~ lX / dt, within the bound); a
 *    violation means a broken state and is always ER_ENUMERIC.
 * 2. The explicit pipe update (eq. 2) itself, the condition that does
 *    fail for a too-long step.  A pipe of cross-section A makes water
 *    behave as a layer A / l deep.  Each face has two pipes (the cell's
 *    and its neighbour's), and while both carry water (opposite flows, as
 *    in a sloshing lake) the net flux across the face gains 2 g A / l per
 *    metre of head, not g A / l: gravity waves run at
 *    c = sqrt(2 g pipe_area (lX + lY)) across a cell of mean size
 *    sqrt(lX lY), and the update is stable for dt * c <= sqrt(lX lY)
 *    (the checkerboard mode of the 5-point stencil; in the coefficients,
 *    2 dt (cx + cy) <= 1).  Measured on a 32 x 32 bowl lake with 1 m cells
 *    run without sub-steps: stable at 0.69 of the one-pipe bound
 *    sqrt(lX lY / (g A (lX + lY))), sloshing (surface range 1.3 m for
 *    0.16 m) at 0.72, and 1/sqrt(2) = 0.707 lies between.  Under
 *    ER_CFL_SUBSTEP each step is split into n = ceil(dt * c / sqrt(lX lY))
 *    equal sub-steps (a function of the recipe and the cell size alone,
 *    so deterministic); under ER_CFL_ERROR, or when n > max_substeps, the
 *    plan is refused.  Every run checks the sub-step it runs again
 *    (er_mei_check_coef), so a plan that skipped the split fails instead
 *    of sloshing.
 *
 * Never NaN.  Each sub-step's new rows are checked (finiteness, CFL) from
 * the per-row results the kernels produce anyway.  The state is updated in
 * place, so a failing step cannot be undone: what is handed back then is
 * that state with any non-finite value replaced by 0 (for the terrain:
 * the input height), and the run returns ER_ENUMERIC.  When the failing
 * sub-step was the first of a sweep of two (mei_internal.h), that state
 * is one sub-step further on.
 */
#include "mei_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../mem.h"
#include "../parallel.h"
#include "../tiles.h"

size_t er_mei_bytes_per_cell(const er_params *p)
{
    (void)p;
    /* terrain change z and four fluxes; depth d and sediment s are the
     * caller's water and sediment layers (er_layers), or its own of the
     * same size when the caller keeps none, which a caller counts as its
     * layers; the boundary snapshot, the per-row and the per-thread
     * scratch come on top, a few rows each (O(width * threads + height)) */
    return 5 * sizeof(float);
}

static float *row_of(float *base, int y, int w)
{
    return base + (size_t)y * (size_t)w;
}

/* One level of the pipeline of mei_internal.h: one (sub-)step over the
 * rows a chunk keeps.  Scratch rows of a level: 0-15 ghost fluxes (4
 * ghost rows x 4 pipes), then rolling rows (slot y & 3): 16-19 donor
 * weights, 20-23 s1, 24-27 u, 28-31 v, 34-37 terrain b, 38-41 water
 * surface h, 42-45 eroded, 46-49 deposited; 32 ghost d, 33 ghost z, 50
 * the mean depth from W to E of one row. */
enum { SCR_WQ = 16, SCR_S1 = 20, SCR_U = 24, SCR_V = 28, SCR_GD = 32, SCR_GZ = 33,
       SCR_B = 34, SCR_H = 38, SCR_ER = 42, SCR_DE = 46, SCR_DM = 50 };

typedef struct chunk_ctx {
    const er_mei_sim *sim;
    const er_mei_coef *k;
    int y0, y1;          /* the chunk: its rows of the shared state, updated in place */
    int g0, g1;          /* rows kept, [g0, g1) around [y0, y1): those beyond the chunk
                          * (the first sub-step of a pair) live in halo */
    float *scr;          /* this level's ER_MEI_LEVEL_ROWS scratch rows */
    float *halo;         /* ER_SNAP_LAYERS x 2 x ER_MEI_DEPTH rows, or NULL */
    er_mei_rowacc *acc;  /* the sub-step's per-row results (h entries) */
    const struct chunk_ctx *prev; /* the level whose kept rows hold this level's old
                                   * state; NULL: the shared state and the snapshot */
} chunk_ctx;

static float *scr_row(const chunk_ctx *c, int i)
{
    return c->scr + (size_t)i * (size_t)c->sim->scr_stride;
}

static int own(const chunk_ctx *c, int y)
{
    return y >= c->y0 && y < c->y1;
}

static int kept(const chunk_ctx *c, int y)
{
    return y >= c->g0 && y < c->g1;
}

static float *layer_of(const er_mei_sim *sim, int l)
{
    if (l >= ER_SNAP_Q)
        return sim->q[l - ER_SNAP_Q];
    return l == ER_SNAP_Z ? sim->z : l == ER_SNAP_D ? sim->d : sim->s;
}

/* Row y of the snapshot of the boundary at row y0 (y0 - ER_SNAP_ROWS / 2
 * <= y < y0 + ER_SNAP_ROWS / 2). */
static float *snap_row(const er_mei_sim *sim, int y0, int layer, int y)
{
    size_t bi = (size_t)(y0 / sim->chunk_rows - 1);
    size_t r = (size_t)(y - (y0 - ER_SNAP_ROWS / 2));
    return sim->snap + ((bi * ER_SNAP_LAYERS + (size_t)layer) * ER_SNAP_ROWS + r) * (size_t)sim->w;
}

/* Copies the state of the `depth` rows on either side of every chunk
 * boundary into the snapshot, before the chunks start to update their
 * rows in place.  With many threads the chunks are small and this is most
 * of the state (a 1024^2 map in 64 chunks: 21 MB of the 28 MB), which one
 * thread alone would copy in about the time of the sweep: from 1 MiB on, all
 * threads copy (below, waking them, tens of microseconds with passive
 * waiting, costs about what it saves). */
static void take_snapshot(const er_mei_sim *sim, int depth)
{
    const size_t bytes = (size_t)sim->w * sizeof(float);
    const int units = (sim->nchunks - 1) * ER_SNAP_LAYERS;
    const int parallel = (size_t)units * 2 * (size_t)depth * bytes >= ((size_t)1 << 20);
    (void)parallel; /* unused without OpenMP */
    ER_OMP_FOR(if(parallel))
    for (int u = 0; u < units; u++) {
        int y0 = (u / ER_SNAP_LAYERS + 1) * sim->chunk_rows, l = u % ER_SNAP_LAYERS;
        for (int y = y0 - depth; y < y0 + depth; y++)
            if (y >= 0 && y < sim->h)
                memcpy(snap_row(sim, y0, l, y), row_of(layer_of(sim, l), y, sim->w), bytes);
    }
}

/* The row of a layer where level c keeps row y (kept(c, y)). */
static float *kept_row(const chunk_ctx *c, int layer, int y)
{
    const er_mei_sim *sim = c->sim;
    if (own(c, y))
        return row_of(layer_of(sim, layer), y, sim->w);
    int slot = y < c->y0 ? y - (c->y0 - ER_MEI_DEPTH) : ER_MEI_DEPTH + (y - c->y1);
    return c->halo + ((size_t)layer * 2 * ER_MEI_DEPTH + (size_t)slot) * (size_t)sim->scr_stride;
}

/* Old state of row y of a layer: where the level keeps it (not yet
 * updated when this is asked), else the previous level's result or the
 * snapshot. */
static const float *old_row(const chunk_ctx *c, int layer, int y)
{
    if (kept(c, y))
        return kept_row(c, layer, y);
    if (c->prev)
        return kept_row(c->prev, layer, y);
    return snap_row(c->sim, y < c->y0 ? c->y0 : c->y1, layer, y);
}

/* New flux row y, pipe i: where the level keeps the row, a ghost row
 * otherwise; NULL outside the map. */
static float *qnew(const chunk_ctx *c, int y, int i)
{
    const er_mei_sim *sim = c->sim;
    if (y < 0 || y >= sim->h)
        return NULL;
    if (kept(c, y))
        return kept_row(c, ER_SNAP_Q + i, y);
    int g = y < c->g0 ? y - (c->g0 - 2) : 2 + (y - c->g1);
    return scr_row(c, 4 * g + i);
}

static float *rolling(const chunk_ctx *c, int base, int y)
{
    if (y < 0 || y >= c->sim->h)
        return NULL;
    return scr_row(c, base + (y & 3));
}

/* Views of everything around row y (NULL outside the map). */
static void rows_at(const chunk_ctx *c, int y, er_mei_rows *r)
{
    const er_mei_sim *sim = c->sim;
    const int w = sim->w, h = sim->h;
    memset(r, 0, sizeof *r);
    r->y = y;
    int has_wall = 0;
    for (int j = 0; j < 3; j++) {
        int yy = y - 1 + j;
        if (yy < 0 || yy >= h)
            continue;
        r->b[j] = rolling(c, SCR_B, yy);
        r->h[j] = rolling(c, SCR_H, yy);
        for (int i = 0; i < 4; i++)
            r->q[j][i] = qnew(c, yy, i);
        r->wq[j] = rolling(c, SCR_WQ, yy);
        r->s1[j] = rolling(c, SCR_S1, yy);
        if (sim->wall && sim->row_wall[yy])
            has_wall = 1;
    }
    if (has_wall)
        for (int j = 0; j < 3; j++) {
            int yy = y - 1 + j;
            if (yy >= 0 && yy < h)
                r->wall[j] = sim->wall + (size_t)yy * (size_t)w;
        }
    if (sim->neutral)
        for (int j = 0; j < 3; j++) {
            int yy = y - 1 + j;
            size_t off = (size_t)yy * (size_t)w;
            if (yy < 0 || yy >= h)
                continue;
            r->hard[j] = sim->ctl->hardness ? sim->ctl->hardness + off : sim->neutral;
            r->mask[j] = sim->ctl->mask ? sim->ctl->mask + off : sim->neutral + w;
        }
    r->d = old_row(c, ER_SNAP_D, y);
    r->s = old_row(c, ER_SNAP_S, y);
}

static void surface(const chunk_ctx *c, int y)
{
    if (y >= 0 && y < c->sim->h)
        er_mei_surface_row(c->sim, c->k, y, old_row(c, ER_SNAP_Z, y), old_row(c, ER_SNAP_D, y),
                           rolling(c, SCR_B, y), rolling(c, SCR_H, y));
}

/* Step y of a level's pipeline (y from g0 - 2 to g1 + 1, after
 * level_begin): A on row y, W + E on row y - 1, T on row y - 2.  Kept
 * rows are updated in place: a row's old values are read (by the row
 * itself and by the rows after it, which run later) before they are
 * replaced, and rows beyond are read from the snapshot or the previous
 * level, so the order of the chunks and the threads that run them do not
 * matter. */
static void level_row(const chunk_ctx *c, int y)
{
    const er_mei_sim *sim = c->sim;
    const int h = sim->h, w = sim->w;
    const size_t bytes = (size_t)w * sizeof(float);
    er_mei_rows r;
    er_mei_rowacc ghost_acc;
    surface(c, y + 1);
    if (y >= 0 && y < h) { /* A: eqs. 2-5 */
        float *q[4];
        rows_at(c, y, &r);
        for (int i = 0; i < 4; i++) {
            q[i] = qnew(c, y, i);
            if (!kept(c, y))
                memcpy(q[i], old_row(c, ER_SNAP_Q + i, y), bytes);
        }
        er_mei_flux_row(sim, c->k, &r, q, rolling(c, SCR_WQ, y));
    }
    int ye = y - 1;
    if (ye >= c->g0 - 1 && ye <= c->g1 && ye >= 0 && ye < h) { /* W + E */
        int mine = kept(c, ye);
        float *d = mine ? kept_row(c, ER_SNAP_D, ye) : scr_row(c, SCR_GD);
        float *z = mine ? kept_row(c, ER_SNAP_Z, ye) : scr_row(c, SCR_GZ);
        if (!mine) {
            memcpy(d, old_row(c, ER_SNAP_D, ye), bytes);
            memcpy(z, old_row(c, ER_SNAP_Z, ye), bytes);
        }
        float *u = rolling(c, SCR_U, ye), *v = rolling(c, SCR_V, ye);
        er_mei_rowacc *acc = own(c, ye) ? &c->acc[ye] : &ghost_acc;
        rows_at(c, ye, &r);
        float *dm = scr_row(c, SCR_DM);
        er_mei_water_row(sim, c->k, &r, d, u, v, dm, acc);
        er_mei_erode_row(sim, c->k, &r, u, v, dm, z, rolling(c, SCR_S1, ye),
                         rolling(c, SCR_ER, ye), rolling(c, SCR_DE, ye));
    }
    int yt = y - 2;
    if (kept(c, yt)) { /* T: eqs. 13-14, drying */
        rows_at(c, yt, &r);
        er_mei_transport_row(sim, c->k, &r, rolling(c, SCR_U, yt), rolling(c, SCR_V, yt),
                             kept_row(c, ER_SNAP_Z, yt), kept_row(c, ER_SNAP_D, yt),
                             kept_row(c, ER_SNAP_S, yt), rolling(c, SCR_ER, yt),
                             rolling(c, SCR_DE, yt), own(c, yt) ? &c->acc[yt] : &ghost_acc);
        /* once per sub-step and owned row: the halo rows of a paired
         * sweep are another chunk's, which adds them itself */
        if (own(c, yt) && (sim->flow || sim->wear)) {
            const float *q[4];
            for (int i = 0; i < 4; i++)
                q[i] = qnew(c, yt, i);
            er_mei_accumulate_row(sim, c->k, yt, q, rolling(c, SCR_ER, yt));
        }
    }
}

/* The surfaces of the two rows above the first A of a level. */
static void level_begin(const chunk_ctx *c)
{
    surface(c, c->g0 - 3);
    surface(c, c->g0 - 2);
}

static void run_level(const chunk_ctx *c)
{
    level_begin(c);
    for (int y = c->g0 - 2; y < c->g1 + 2; y++)
        level_row(c, y);
}

/* Two sub-steps in one pass over the chunk (temporal blocking): level a
 * computes the first sub-step over the chunk and ER_MEI_DEPTH rows beyond
 * each end (kept in a's halo, started from the snapshot), which is all
 * that the second, level b, reads of its neighbours; b follows a at
 * ER_MEI_LAG rows.  So each row of the state is read and written once for
 * two sub-steps, and the chunks still read nothing of each other's
 * results.  The lag: b's step j reads a's final z, d of row j + 1 (a's T
 * of row j + 1 runs in a's step j + 3) and replaces the flux of row j,
 * which a's T of row j + 1 reads (also in a's step j + 3). */
static void run_pair(const chunk_ctx *a, const chunk_ctx *b)
{
    const er_mei_sim *sim = a->sim;
    const size_t bytes = (size_t)sim->w * sizeof(float);
    for (int l = 0; l < ER_SNAP_LAYERS; l++)
        for (int y = a->g0; y < a->g1; y++)
            if (!own(a, y))
                memcpy(kept_row(a, l, y), snap_row(sim, y < a->y0 ? a->y0 : a->y1, l, y), bytes);
    level_begin(a);
    for (int i = a->g0 - 2; i - ER_MEI_LAG < b->g1 + 2; i++) {
        if (i < a->g1 + 2)
            level_row(a, i);
        int j = i - ER_MEI_LAG;
        if (j == b->g0 - 2)
            level_begin(b);
        if (j >= b->g0 - 2)
            level_row(b, j);
    }
}

/* One (sub-)step over the whole map with coefficients k, or two (k, then
 * k2; the results of the second in sim->acc2) when k2 is not NULL:
 * chunks in parallel, any order. */
static void sweep(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_coef *k2)
{
    const int nchunks = sim->nchunks;
    /* A map of a few thousand cells is done in tens of microseconds: there
     * waking a second thread costs more than it saves. */
    const int parallel = (size_t)sim->w * (size_t)sim->h >= 4096;
    (void)parallel; /* unused without OpenMP */
    take_snapshot(sim, k2 ? 2 * ER_MEI_DEPTH : ER_MEI_DEPTH);
    ER_OMP_FOR_DYNAMIC(if(parallel))
    for (int ci = 0; ci < nchunks; ci++) {
        float *scr = er_mei_thread_scratch(sim, er_thread_id());
        const size_t level = (size_t)ER_MEI_LEVEL_ROWS * (size_t)sim->scr_stride;
        chunk_ctx a = { sim, k, ci * sim->chunk_rows, 0, 0, 0, scr, NULL, sim->acc, NULL };
        a.y1 = a.y0 + sim->chunk_rows < sim->h ? a.y0 + sim->chunk_rows : sim->h;
        a.g0 = a.y0;
        a.g1 = a.y1;
        if (!k2) {
            run_level(&a);
            continue;
        }
        chunk_ctx b = a;
        b.k = k2;
        b.scr = scr + level;
        b.acc = sim->acc2;
        b.prev = &a;
        a.halo = scr + 2 * level;
        a.g0 = a.y0 - ER_MEI_DEPTH > 0 ? a.y0 - ER_MEI_DEPTH : 0;
        a.g1 = a.y1 + ER_MEI_DEPTH < sim->h ? a.y1 + ER_MEI_DEPTH : sim->h;
        run_pair(&a, &b);
    }
}

void er_mei_make_coef(const er_mei_sim *sim, const er_mei_params *m, double dt, int raining,
                      er_mei_coef *k)
{
    const double lx = sim->lx, ly = sim->ly;
    memset(k, 0, sizeof *k);
    k->dt = (float)dt;
    k->rain = raining ? (float)(m->rain_rate * dt) : 0.0f;
    /* eq. 2 divided by the cell area: dt A g / (l lX lY) = dt pipe_area g / l */
    k->cx = (float)(dt * m->pipe_area * m->gravity / lx);
    k->cy = (float)(dt * m->pipe_area * m->gravity / ly);
    k->hlx = (float)(0.5 * lx);
    k->hly = (float)(0.5 * ly);
    k->inv2lx = (float)(0.5 / lx);
    k->inv2ly = (float)(0.5 / ly);
    k->invlx = (float)(1.0 / lx);
    k->invly = (float)(1.0 / ly);
    k->kc = (float)m->kc;
    k->inv_cd = m->capacity_depth > 0.0 ? (float)(1.0 / m->capacity_depth) : 0.0f;
    k->cd_off = m->capacity_depth > 0.0 ? 0.0f : 1.0f;
    k->ks_dt = (float)fmin(1.0, m->ks * dt);
    k->kd_dt = (float)fmin(1.0, m->kd * dt);
    k->emax = (float)m->max_erosion_depth;
    k->min_tilt2 = (float)(m->min_tilt * m->min_tilt);
    k->keep = (float)(1.0 - m->ke * dt);
    /* without evaporation nothing dries up (and no water is lost) */
    k->dry = m->ke > 0.0 ? ER_MEI_DRY : 0.0f;
    k->th_k = (float)fmin((double)ER_MEI_THERMAL_MAX, m->thermal_rate * dt);
    k->talus_x = (float)(m->talus_slope * lx);
    k->talus_y = (float)(m->talus_slope * ly);
    k->dt_lx = (float)(dt / lx);
    k->dt_ly = (float)(dt / ly);
    k->open = 0;
    for (int i = 0; i < 4; i++) {
        /* ER_L..ER_B and ER_EDGE_LEFT..BOTTOM share their order. */
        k->open_edge[i] = m->boundary == ER_BOUNDARY_OPEN || sim->inner[i];
        k->open |= k->open_edge[i];
    }
    k->semi_lagrangian = m->advection == ER_ADVECT_SEMI_LAGRANGIAN;
}

/* The rules between Mei's keys (each key's own range is the key table's,
 * checked by er_params_check before this). */
static er_status check_params(const er_mei_params *m, er_error *err)
{
    if (m->ke * m->dt > 1.0)
        return er_fail(err, ER_EINVAL, "mei.ke: ke * dt = %g evaporates more than the water "
                       "(must be <= 1)", m->ke * m->dt);
    return ER_OK;
}

/* mei.reference_cell_size: the keys that count cells, held at
 * cells of the reference size, converted to this map's (r reference cells
 * per map cell along an axis).  Radii in cells times r keep the metres, so
 * a raindrop or source wets the same area and, at the same rate per m²,
 * adds the same volume.  Thermal weathering moves thermal_rate of a pair's
 * excess height a second, a diffusion of thermal_rate l² m²/s: times r².
 * Everything else is already in metres and seconds, or per map. */
static void at_map_cells(er_plan *plan)
{
    er_mei_params *m = &plan->p.mei;
    const double ref = m->reference_cell_size, cell = sqrt(plan->cell_x * plan->cell_y);
    if (!(ref > 0) || cell == ref) /* at the reference itself: the keys as written */
        return;
    const double r = ref / cell;
    m->drop_radius *= r;
    for (int i = 0; i < plan->p.river.n; i++)
        plan->p.river.src[i].radius *= r;
    m->thermal_rate *= r * r;
}

er_status er_mei_plan(er_plan *plan, const er_terrain *t, er_error *err)
{
    const er_mei_params *m = &plan->p.mei;
    er_status st = check_params(m, err);
    if (st)
        return st;
    at_map_cells(plan);
    /* The sources placed and checked against the map, its walls and the
     * world around it. */
    const er_source_grid g = {t->width, t->height, plan->win.x0, plan->win.y0,
                              plan->win.world_width, plan->win.world_height, t->wall,
                              t->elevation};
    if ((st = er_sources_plan(&plan->p.river, &g, plan->warning, sizeof plan->warning, err)))
        return st;
    plan->own.mei.substeps = 1;
    if (m->steps > 0 && (st = er_mei_plan_substeps(m, t->cell_x, t->cell_y, &plan->own.mei.substeps, err)))
        return st;
    plan->own.mei.dt_sub = m->dt / (double)plan->own.mei.substeps;
    plan->substeps = plan->own.mei.substeps;
    plan->boundaries = m->steps;
    return ER_OK;
}

/* Sub-steps the pipe update needs (condition 2 above). */
er_status er_mei_plan_substeps(const er_mei_params *m, double lx, double ly, int64_t *n,
                               er_error *err)
{
    double c = sqrt(2.0 * m->gravity * m->pipe_area * (lx + ly));
    double l = sqrt(lx * ly);
    double ratio = m->dt * c / l;
    double need = ceil(ratio);
    if (need < 1.0)
        need = 1.0;
    if (need == 1.0) {
        *n = 1;
        return ER_OK;
    }
    double dt_max = l / c;
    if (m->cfl == ER_CFL_ERROR)
        return er_fail(err, ER_ENUMERIC,
                       "mei.dt: %g s is unstable (cfl violated at step 0): pipe wave speed "
                       "sqrt(2 * g * pipe_area * (lX + lY)) = %.4g m/s, dt * c = %.4g m > "
                       "sqrt(lX * lY) = %.4g m; stable for dt <= %.4g s, or set mei.cfl to "
                       "\"substep\"", m->dt, c, m->dt * c, l, dt_max);
    if (need > (double)m->max_substeps)
        return er_fail(err, ER_ENUMERIC,
                       "mei.max_substeps: mei.dt = %g s needs %.0f sub-steps, more than %lld "
                       "(cfl: pipe wave speed sqrt(2 * g * pipe_area * (lX + lY)) = %.4g m/s, "
                       "dt * c = %.4g m > sqrt(lX * lY) = %.4g m; stable for dt <= %.4g s)",
                       m->dt, need, (long long)m->max_substeps, c, m->dt * c, l, dt_max);
    *n = (int64_t)need;
    return ER_OK;
}

/* Condition 2 above on the coefficients a (sub-)step runs with:
 * 2 dt (cx + cy) = dt^2 2 g A (lX + lY) / (lX lY) <= 1, up to the float
 * rounding of the coefficients. */
er_status er_mei_check_coef(const er_mei_coef *k, er_error *err)
{
    double gain = 2.0 * (double)k->dt * ((double)k->cx + (double)k->cy);
    if (gain > 1.0 + 1e-5)
        return er_fail(err, ER_ENUMERIC, "cfl violated: a sub-step of %g s is unstable "
                       "(2 dt (cx + cy) = %.4g > 1); the plan must split the step",
                       (double)k->dt, gain);
    return ER_OK;
}

er_status er_mei_fail(const er_mei_sim *sim, const er_mei_coef *k, int kind, int64_t step,
                      int row, float vel, er_error *err)
{
    long long t = (long long)step;
    double c = (double)k->dt * (double)vel;
    switch (kind) {
    case ER_MEI_FAIL_STATE:
        return er_fail(err, ER_ENUMERIC, "non-finite value at step %lld in row %d", t, row);
    case ER_MEI_FAIL_VELOCITY:
        return er_fail(err, ER_ENUMERIC, "non-finite velocity at step %lld in row %d", t, row);
    case ER_MEI_FAIL_CFL_U:
        return er_fail(err, ER_ENUMERIC, "cfl violated at step %lld: |u| = %.4g m/s in row %d, "
                       "dt * |u| = %.4g m > lX = %.4g m", t, (double)vel, row, c, sim->lx);
    default:
        return er_fail(err, ER_ENUMERIC, "cfl violated at step %lld: |v| = %.4g m/s in row %d, "
                       "dt * |v| = %.4g m > lY = %.4g m", t, (double)vel, row, c, sim->ly);
    }
}

/* Serial reduction of the rows of one sub-step: budget and checks. */
static er_status finish_substep(const er_mei_sim *sim, const er_mei_rowacc *acc,
                                const er_mei_coef *k, int64_t step, er_budget *bud,
                                er_error *err)
{
    uint32_t um = 0, vm = 0;
    int uy = 0, vy = 0;
    for (int y = 0; y < sim->h; y++) {
        const er_mei_rowacc *a = &acc[y];
        if (a->bad)
            return er_mei_fail(sim, k, ER_MEI_FAIL_STATE, step, y, 0.0f, err);
        if (a->umax > um) {
            um = a->umax;
            uy = y;
        }
        if (a->vmax > vm) {
            vm = a->vmax;
            vy = y;
        }
    }
    float fu = er_bits_float(um), fv = er_bits_float(vm);
    if (!isfinite(fu) || !isfinite(fv))
        return er_mei_fail(sim, k, ER_MEI_FAIL_VELOCITY, step, isfinite(fu) ? vy : uy, 0.0f, err);
    /* condition 1: bound by construction, so only rounding is allowed */
    if ((double)k->dt * (double)fu > sim->lx * ER_MEI_CFL_SLACK)
        return er_mei_fail(sim, k, ER_MEI_FAIL_CFL_U, step, uy, fu, err);
    if ((double)k->dt * (double)fv > sim->ly * ER_MEI_CFL_SLACK)
        return er_mei_fail(sim, k, ER_MEI_FAIL_CFL_V, step, vy, fv, err);
    for (int y = 0; y < sim->h; y++) {
        const er_mei_rowacc *a = &acc[y];
        bud->eroded += a->eroded;
        bud->deposited += a->deposited;
        bud->left_map += a->left_sed;
        bud->water_left += a->left_water;
    }
    return ER_OK;
}

/* Writes the current state to the caller: b = b0 + z in place (walls keep
 * their value, so do cells that did not change: b + 0 would turn -0 into
 * +0), water and sediment layers (0 on walls). */
static void copy_out(const er_mei_sim *sim, er_terrain *t, er_layers *layers)
{
    const float *z = sim->z;
    float *b = t->elevation;
    float *wat = layers ? layers->water : NULL, *sed = layers ? layers->sediment : NULL;
    ER_OMP_FOR()
    for (int y = 0; y < sim->h; y++) {
        size_t i0 = (size_t)y * (size_t)sim->w, i1 = i0 + (size_t)sim->w;
        for (size_t i = i0; i < i1; i++) {
            if (sim->wall && sim->wall[i])
                continue;
            float zz = er_mei_finite_or_0(z[i]);
            b[i] = zz != 0.0f ? b[i] + zz : b[i];
        }
        for (size_t i = i0; i < i1; i++) {
            if (wat)
                wat[i] = er_mei_finite_or_0(sim->d[i]);
            if (sed)
                sed[i] = er_mei_finite_or_0(sim->s[i]);
            /* flow and wear are the layers' own buffers */
            if (sim->flow)
                sim->flow[i] = er_mei_finite_or_0(sim->flow[i]);
            if (sim->wear)
                sim->wear[i] = er_mei_finite_or_0(sim->wear[i]);
        }
    }
}

void er_mei_keep_layers(er_mei_sim *sim, const er_layers *layers)
{
    const size_t n = (size_t)sim->w * (size_t)sim->h;
    sim->flow = layers ? layers->flow : NULL;
    sim->wear = layers ? layers->wear : NULL;
    if (sim->flow)
        memset(sim->flow, 0, n * sizeof(float));
    if (sim->wear)
        memset(sim->wear, 0, n * sizeof(float));
}

/* One writer per cell and the sub-steps in order: the same float sums for
 * any thread count.  The fluxes are those eqs. 2-5 leave for the sub-step
 * (eq. 4 scaled, so dt times their sum never exceeds the water d1 the cell
 * held): the depth of water that left the cell, in metres.  Walls have no
 * flux and no erosion and stay 0. */
void er_mei_accumulate_row(const er_mei_sim *sim, const er_mei_coef *k, int y,
                           const float *const q[4], const float *er)
{
    const size_t i0 = (size_t)y * (size_t)sim->w;
    const float dt = k->dt;
    if (sim->flow) {
        float *restrict f = sim->flow + i0;
        const float *restrict ql = q[ER_L], *restrict qr = q[ER_R];
        const float *restrict qt = q[ER_T], *restrict qb = q[ER_B];
        for (int x = 0; x < sim->w; x++)
            f[x] = f[x] + dt * ((ql[x] + qr[x]) + (qt[x] + qb[x]));
    }
    if (sim->wear) {
        float *restrict wr = sim->wear + i0;
        for (int x = 0; x < sim->w; x++)
            wr[x] = wr[x] + er[x];
    }
}

void er_mei_sim_free(er_mei_sim *sim)
{
    for (int l = 0; l < ER_SNAP_LAYERS; l++)
        free(sim->state_mem[l]);
    free(sim->snap);
    free(sim->acc);
    free(sim->acc2);
    free(sim->scratch);
    free(sim->row_wall_buf);
    free(sim->neutral);
}

/* The seven state layers.  Each starts at its own offset in the L1 cache's
 * sets (ER_MEI_SKEW); borrowed water and sediment layers start at the
 * caller's (huge-page) alignment, offset 0, so the layers of the sim's own
 * then skip offset 0 (on one thread at 1024^2 two layers on one offset cost
 * nothing beyond the noise, all seven on one 60 %).  Using the
 * caller's buffers keeps two whole layers (8 bytes a cell) off the peak:
 * every page a run touches first costs the most on shared virtual
 * machines, whose free memory goes back to the host. */
static int alloc_state(er_mei_sim *sim, size_t n, float *water, float *sediment)
{
    float **layer[ER_SNAP_LAYERS] = { &sim->z, &sim->d, &sim->s, &sim->q[0], &sim->q[1],
                                      &sim->q[2], &sim->q[3] };
    float *lent[ER_SNAP_LAYERS] = { NULL, water, sediment, NULL, NULL, NULL, NULL };
    const size_t shift = water || sediment;
    for (int l = 0; l < ER_SNAP_LAYERS; l++) {
        if (lent[l]) {
            float *a = lent[l];
            const long cells = (long)n;
            ER_OMP_FOR()
            for (long i = 0; i < cells; i++)
                a[i] = 0.0f;
            *layer[l] = a;
            continue;
        }
        size_t skew = ((size_t)l + shift) * ER_MEI_SKEW;
        if (!(sim->state_mem[l] = er_calloc_large(n + skew, sizeof(float))))
            return 0;
        *layer[l] = sim->state_mem[l] + skew;
    }
    return 1;
}

/* Rows a chunk: about four chunks per thread, so that a thread slowed
 * down by another process hands work to the others, but no fewer than
 * ER_MEI_CHUNK_MIN rows unless that would leave a thread without a chunk.
 * Each chunk recomputes ER_MEI_DEPTH rows on either side for the paired
 * sub-steps and has its boundary rows copied to the snapshot: on one
 * thread at 1024^2 (2 cores, load under 1) 16-row chunks take 7.9-8.1 ms
 * of CPU a step, 32 rows 6.4-8.0, 48 rows 5.7-5.8, 64 rows 5.6-5.7.  So a
 * small map on many threads (1024^2 on 16: 16 rows under the rule of four
 * alone, which scales badly) gets one chunk of 64 rows per thread rather
 * than four of 16. */
#define ER_MEI_CHUNK_MIN 64
static int chunk_rows(int h, int threads)
{
    int four = (h + 4 * threads - 1) / (4 * threads), one = (h + threads - 1) / threads;
    int floor_rows = one < ER_MEI_CHUNK_MIN ? one : ER_MEI_CHUNK_MIN;
    int rows = four > floor_rows ? four : floor_rows;
    return rows < 16 ? 16 : rows;
}

er_status er_mei_sim_alloc(er_mei_sim *sim, const er_terrain *t, const er_window *win,
                           er_error *err)
{
    return er_mei_sim_alloc_in(sim, t, win, NULL, NULL, err);
}

er_status er_mei_sim_alloc_in(er_mei_sim *sim, const er_terrain *t, const er_window *win,
                              float *water, float *sediment, er_error *err)
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    size_t state, sbytes, snap;
    er_window wn;
    memset(sim, 0, sizeof *sim);
    er_status st = er_window_resolve(win, t->width, t->height, &wn, err);
    if (st)
        return st;
    sim->w = t->width;
    sim->h = t->height;
    sim->wx0 = wn.x0;
    sim->wy0 = wn.y0;
    sim->world_w = wn.world_width;
    sim->world_h = wn.world_height;
    er_window_inner_edges(&wn, t->width, t->height, sim->inner);
    sim->lx = t->cell_x;
    sim->ly = t->cell_y;
    sim->wall = t->wall;
    sim->ctl = er_controls_any(t->controls) ? t->controls : NULL;
    sim->b0 = t->elevation;
    sim->nthreads = er_thread_count();
    sim->chunk_rows = chunk_rows(sim->h, sim->nthreads);
    sim->nchunks = (sim->h + sim->chunk_rows - 1) / sim->chunk_rows;
    sim->scr_stride = ((sim->w + 15) & ~15) + 16; /* see ER_MEI_SKEW */
    if (!er_mul_size(n + (ER_SNAP_LAYERS + 1) * ER_MEI_SKEW, 7 * sizeof(float), &state) ||
        !er_mul_size((size_t)sim->scr_stride * ER_MEI_SCRATCH_ROWS * sizeof(float),
                     (size_t)sim->nthreads, &sbytes) ||
        !er_mul_size((size_t)sim->w * ER_SNAP_LAYERS * ER_SNAP_ROWS * sizeof(float),
                     (size_t)sim->nchunks, &snap))
        return er_fail(err, ER_ENOMEM, "mei: a %dx%d map is too large", t->width, t->height);
    int ok = alloc_state(sim, n, water, sediment);
    ok = ok && (sim->snap = malloc(snap));
    ok = ok && (sim->acc = calloc((size_t)sim->h, sizeof *sim->acc));
    ok = ok && (sim->acc2 = calloc((size_t)sim->h, sizeof *sim->acc2));
    ok = ok && posix_memalign((void **)&sim->scratch, 64, sbytes) == 0;
    if (ok)
        memset(sim->scratch, 0, sbytes);
    if (ok && t->wall) {
        uint8_t *rw = calloc((size_t)sim->h, 1);
        ok = rw != NULL;
        if (rw)
            for (size_t i = 0; i < n; i++)
                rw[i / (size_t)sim->w] |= t->wall[i] != 0;
        sim->row_wall = sim->row_wall_buf = rw;
    }
    if (ok && sim->ctl && (sim->ctl->hardness || sim->ctl->mask)) {
        ok = (sim->neutral = calloc(2 * (size_t)sim->w, sizeof(float))) != NULL;
        for (int x = 0; ok && x < sim->w; x++)
            sim->neutral[sim->w + x] = 1.0f;
    }
    if (!ok) {
        er_mei_sim_free(sim);
        return er_fail(err, ER_ENOMEM, "mei: out of memory for a %dx%d map", t->width,
                       t->height);
    }
    return ER_OK;
}

void er_mei_state_view(const er_mei_sim *sim, const er_mei_params *m, int64_t step,
                       const er_budget *bud, er_run_state *v)
{
    memset(v, 0, sizeof *v);
    v->model = ER_MODEL_MEI;
    v->width = sim->w;
    v->height = sim->h;
    v->boundary = v->done = step;
    v->boundaries = v->total = m->steps;
    v->budget = *bud;
    v->n_arrays = ER_STATE_ARRAYS;
    v->array[ER_STATE_MEI_Z] = sim->z;
    v->array[ER_STATE_MEI_D] = sim->d;
    v->array[ER_STATE_MEI_S] = sim->s;
    for (int i = 0; i < 4; i++)
        v->array[ER_STATE_MEI_Q + i] = sim->q[i];
    v->array[ER_STATE_MEI_FLOW] = sim->flow;
    v->array[ER_STATE_MEI_WEAR] = sim->wear;
}

er_status er_mei_restore(er_mei_sim *sim, const er_plan *plan, const er_terrain *t,
                         const er_run_state *r, er_budget *bud, int64_t *step0, er_error *err)
{
    const er_layers keep = { NULL, NULL, sim->flow, sim->wear };
    er_status st = er_plan_check_resume(plan, t, r, &keep, err);
    if (st)
        return st;
    float *dst[ER_STATE_ARRAYS] = { sim->z, sim->d, sim->s, sim->q[0], sim->q[1], sim->q[2],
                                    sim->q[3], sim->flow, sim->wear };
    const size_t bytes = (size_t)sim->w * (size_t)sim->h * sizeof(float);
    for (int i = 0; i < ER_STATE_ARRAYS; i++)
        if (dst[i])
            memcpy(dst[i], r->array[i], bytes);
    double before = bud->material_before;
    *bud = r->budget;
    bud->material_before = before;
    bud->material_after = bud->rel_error = 0.0;
    *step0 = r->done;
    return ER_OK;
}

void er_mei_finish(const er_mei_sim *sim, er_terrain *t, er_layers *layers, double base,
                   double abs_sum, er_budget *bud)
{
    bud->material_after = base + er_mei_material(sim, sim->z, sim->s);
    copy_out(sim, t, layers);
    bud->rel_error = er_budget_rel_error(bud, abs_sum);
}

/* Whether sub-step g and the next (of gend in the run, nsub a step) can
 * run as one sweep of two: only when nothing comes between them that the
 * sweep cannot see (water added by raindrops, sources or maps, a step end
 * the driver must stop at: er_drive_may_pass asks its progress early, so
 * that a cancel still stops the run there). */
static int can_pair(const er_mei_sim *sim, const er_plan *plan, er_drive *d, int64_t g,
                    int64_t gend, int64_t nsub)
{
    if (g + 1 >= gend || plan->p.river.n > 0 ||
        (sim->ctl && (sim->ctl->rain || sim->ctl->source)))
        return 0;
    if ((g + 1) % nsub)
        return 1;
    return !er_mei_drops_on(&plan->p.mei) && er_drive_may_pass(d, (g + 1) / nsub);
}

/* What comes before the sweep of sub-steps g .. g + n - 1 (nsub a step;
 * n = 2 only when they pair): each one's raindrops (at a step's start)
 * and coefficients k[i], then the first one's sources and control maps. */
static void prepare(er_mei_sim *sim, const er_plan *plan, int64_t g, int n, er_budget *bud,
                    er_mei_coef k[2])
{
    const er_mei_params *m = &plan->p.mei;
    const int64_t nsub = plan->own.mei.substeps;
    for (int i = 0; i < n; i++) {
        const int64_t step = (g + i) / nsub;
        if ((g + i) % nsub == 0)
            er_mei_add_drops(sim, sim->d, m, plan->p.seed, step, &bud->water_added);
        int raining = m->rain_rate > 0.0 && (m->rain_steps == 0 || step < m->rain_steps);
        er_mei_make_coef(sim, m, plan->own.mei.dt_sub, raining, &k[i]);
    }
    const float rain = k[0].rain;
    const int maps = sim->ctl && (sim->ctl->rain || sim->ctl->source);
    if (maps && sim->ctl->rain)
        k[0].rain = 0.0f; /* er_mei_add_maps adds it */
    er_mei_add_sources(sim, sim->d, &plan->p.river, plan->own.mei.dt_sub, &bud->water_added);
    if (maps)
        er_mei_add_maps(sim, sim->d, rain, plan->own.mei.dt_sub, &bud->water_added);
}

/* A run through the driver (core/drive.h).  Sources are in pixel
 * coordinates (the CLI converts map coordinates before it plans). */
typedef struct mei_run {
    er_mei_sim sim;
    const er_plan *plan;
    er_terrain *t;
    er_layers *layers;
    int64_t cells;   /* the terrain's valid cells */
    double base;     /* [m * cells] the input's material */
    int64_t g;       /* the next sub-step: a sweep of two may end past a step end */
    int checked;     /* the coefficients checked (before the first step) */
    int made;        /* sim allocated */
} mei_run;

static er_status run_init(void *run, void *backend, const er_plan *plan, er_terrain *t,
                          const er_run_opts *o, er_budget *bud, er_error *err)
{
    (void)backend; /* the CPU */
    mei_run *r = run;
    er_layers *layers = o->layers;
    r->plan = plan;
    r->t = t;
    r->layers = layers;
    er_status st = er_mei_sim_alloc_in(&r->sim, t, plan->windowed ? &plan->win : NULL,
                                       layers ? layers->water : NULL,
                                       layers ? layers->sediment : NULL, err);
    if (st)
        return st;
    r->made = 1;
    er_mei_keep_layers(&r->sim, layers);
    r->cells = er_mei_terrain_cells(&r->sim);
    r->base = bud->material_before = er_mei_total(&r->sim, r->sim.b0);
    return ER_OK;
}

static er_status run_load(void *run, const er_run_state *rs, er_budget *bud, er_error *err)
{
    mei_run *r = run;
    int64_t step0 = 0;
    er_status st = er_mei_restore(&r->sim, r->plan, r->t, rs, bud, &step0, err);
    r->g = step0 * r->plan->own.mei.substeps;
    return st;
}

/* Step b: its sub-steps, two to a sweep where they pair (can_pair). */
static er_status run_advance(void *run, int64_t b, er_drive *d, er_budget *bud, int64_t *to,
                             er_error *err)
{
    mei_run *r = run;
    er_mei_sim *sim = &r->sim;
    const er_plan *plan = r->plan;
    const int64_t nsub = plan->own.mei.substeps, gend = plan->p.mei.steps * nsub;
    er_status st = ER_OK;
    if (!r->checked) {
        er_mei_coef k0;
        er_mei_make_coef(sim, &plan->p.mei, plan->own.mei.dt_sub, 0, &k0);
        if ((st = er_mei_check_coef(&k0, err)))
            return st;
        r->checked = 1;
    }
    for (int64_t g = r->g; g < (b + 1) * nsub; r->g = g) {
        const int n = can_pair(sim, plan, d, g, gend, nsub) ? 2 : 1;
        er_mei_coef k[2];
        prepare(sim, plan, g, n, bud, k);
        sweep(sim, &k[0], n == 2 ? &k[1] : NULL);
        for (int i = 0; i < n; i++, g++) {
            bud->water_added += (double)k[i].rain * (double)r->cells;
            bud->substeps++;
            if ((st = finish_substep(sim, i ? sim->acc2 : sim->acc, &k[i], g / nsub, bud, err)))
                return st;
            if ((g + 1) % nsub == 0)
                bud->work_done++;
        }
    }
    *to = r->g / nsub;
    return ER_OK;
}

static er_status run_view(void *run, int64_t b, const er_budget *bud, er_run_state *v,
                          er_error *err)
{
    mei_run *r = run;
    (void)err;
    er_mei_state_view(&r->sim, &r->plan->p.mei, b, bud, v);
    return ER_OK;
}

static er_status run_finish(void *run, er_status st, int started, er_budget *bud, er_error *err)
{
    mei_run *r = run;
    (void)err;
    if (started && (st == ER_OK || st == ER_ENUMERIC || st == ER_ECANCELED))
        er_mei_finish(&r->sim, r->t, r->layers, r->base, r->plan->abs_sum, bud);
    return st;
}

static void run_release(void *run)
{
    mei_run *r = run;
    if (r->made)
        er_mei_sim_free(&r->sim);
}

const er_model_steps er_mei_steps = {
    .size = sizeof(mei_run),
    .init = run_init,
    .load = run_load,
    .advance = run_advance,
    .view = run_view,
    .finish = run_finish,
    .release = run_release,
};
