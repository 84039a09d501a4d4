/*
 * Linear hillslope diffusion, dz/dt = D (d2z/dx2 + d2z/dy2) (Culling 1960;
 * the hillslope term of every landscape-evolution model), explicit in
 * time: a step is `substeps` sub-steps of dt / substeps, few enough that
 * D dt_sub (1/dx^2 + 1/dy^2) <= 1/2, the scheme's stability bound.  No
 * flux crosses the map's edges or a nodata cell (a wall counts as a
 * neighbour of the cell's own height), so material is conserved.  A test
 * model: what it proves is that a model is its directory and one line of
 * a model list, and that the run driver, checkpoints and frames serve it
 * as they serve the others.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../../core/parallel.h"
#include "diffusion.h"

er_status er_diffusion_plan(er_plan *plan, const er_terrain *t, er_error *err)
{
    const er_diffusion_params *p = &plan->p.diffusion;
    const double need = 2.0 * p->kd * p->dt *
                        (1.0 / (t->cell_x * t->cell_x) + 1.0 / (t->cell_y * t->cell_y));
    if (!(need < 1e6))
        return er_fail(err, ER_EINVAL, "diffusion.dt: %g s needs more than 1e6 sub-steps",
                       p->dt);
    plan->own.diffusion.substeps = need > 1.0 ? (int64_t)ceil(need) : 1;
    plan->own.diffusion.dt_sub = p->dt / (double)plan->own.diffusion.substeps;
    plan->boundaries = p->steps;
    return ER_OK;
}

typedef struct diff_run {
    const er_plan *plan;
    er_terrain *t;
    er_layers *layers;
    float *z, *zn;  /* the heights and the next sub-step's [m] */
    float *wear;    /* [m] the height removed so far, or NULL */
    double *rows;   /* [m * cells] each row's removed and added heights */
} diff_run;

/* The height of cell i's neighbour j: a wall passes no flux, so it counts
 * as i's own height. */
static double neighbour(const diff_run *r, size_t i, size_t j)
{
    const uint8_t *w = r->t->wall;
    return w && w[j] ? r->z[i] : r->z[j];
}

/* One sub-step into zn; the row sums of what it removes and adds. */
static void substep(diff_run *r, double *rows)
{
    const int w = r->t->width, h = r->t->height;
    const double dt = r->plan->own.diffusion.dt_sub, kd = r->plan->p.diffusion.kd;
    const double rx = kd * dt / (r->t->cell_x * r->t->cell_x);
    const double ry = kd * dt / (r->t->cell_y * r->t->cell_y);
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        double lost = 0.0, got = 0.0;
        for (int x = 0; x < w; x++) {
            const size_t i = (size_t)y * (size_t)w + (size_t)x;
            if (r->t->wall && r->t->wall[i]) {
                r->zn[i] = r->z[i];
                continue;
            }
            const double z = r->z[i];
            const double l = neighbour(r, i, x > 0 ? i - 1 : i);
            const double e = neighbour(r, i, x + 1 < w ? i + 1 : i);
            const double u = neighbour(r, i, y > 0 ? i - (size_t)w : i);
            const double d = neighbour(r, i, y + 1 < h ? i + (size_t)w : i);
            const float next = (float)(z + rx * (l + e - 2.0 * z) + ry * (u + d - 2.0 * z));
            const double dz = (double)next - z;
            if (dz < 0.0) {
                lost -= dz;
                if (r->wear)
                    r->wear[i] -= (float)dz;
            } else {
                got += dz;
            }
            r->zn[i] = next;
        }
        rows[2 * y] = lost;
        rows[2 * y + 1] = got;
    }
}

static er_status run_init(void *run, void *backend, const er_plan *plan, er_terrain *t,
                          const er_run_opts *o, er_budget *bud, er_error *err)
{
    (void)backend; /* the CPU */
    diff_run *r = run;
    const size_t n = (size_t)t->width * (size_t)t->height;
    r->plan = plan;
    r->t = t;
    r->layers = o->layers;
    r->wear = o->layers ? o->layers->wear : NULL;
    if (!(r->z = malloc(n * sizeof *r->z)) || !(r->zn = malloc(n * sizeof *r->zn)) ||
        !(r->rows = malloc(2 * (size_t)t->height * sizeof *r->rows)))
        return er_fail(err, ER_ENOMEM, "diffusion: out of memory for a %dx%d map", t->width,
                       t->height);
    memcpy(r->z, t->elevation, n * sizeof *r->z);
    if (r->wear)
        memset(r->wear, 0, n * sizeof *r->wear);
    bud->material_before = plan->sum;
    return ER_OK;
}

static er_status run_load(void *run, const er_run_state *rs, er_budget *bud, er_error *err)
{
    diff_run *r = run;
    const er_layers keep = {NULL, NULL, NULL, r->wear};
    er_status st = er_plan_check_resume(r->plan, r->t, rs, &keep, err);
    if (st)
        return st;
    const size_t n = (size_t)r->t->width * (size_t)r->t->height;
    memcpy(r->z, rs->array[ER_STATE_DIFF_HEIGHT], n * sizeof *r->z);
    if (r->wear)
        memcpy(r->wear, rs->array[3], n * sizeof *r->wear);
    *bud = rs->budget;
    return ER_OK;
}

static er_status run_advance(void *run, int64_t b, er_drive *d, er_budget *bud, int64_t *to,
                             er_error *err)
{
    diff_run *r = run;
    const int h = r->t->height;
    double *rows = r->rows;
    (void)d;
    (void)err;
    for (int64_t k = 0; k < r->plan->own.diffusion.substeps; k++) {
        substep(r, rows);
        for (int y = 0; y < h; y++) {
            bud->eroded += rows[2 * y];
            bud->deposited += rows[2 * y + 1];
        }
        float *swap = r->z;
        r->z = r->zn;
        r->zn = swap;
        bud->substeps++;
    }
    bud->work_done++;
    *to = b + 1;
    return ER_OK;
}

static er_status run_view(void *run, int64_t b, const er_budget *bud, er_run_state *v,
                          er_error *err)
{
    diff_run *r = run;
    (void)err;
    memset(v, 0, sizeof *v);
    v->model = r->plan->p.model;
    v->width = r->t->width;
    v->height = r->t->height;
    v->boundary = v->done = b;
    v->boundaries = v->total = r->plan->boundaries;
    v->budget = *bud;
    v->n_arrays = 4;
    v->array[ER_STATE_DIFF_HEIGHT] = r->z;
    v->array[3] = r->wear;
    return ER_OK;
}

static er_status run_finish(void *run, er_status st, int started, er_budget *bud, er_error *err)
{
    diff_run *r = run;
    (void)err;
    if (!started)
        return st;
    const size_t n = (size_t)r->t->width * (size_t)r->t->height;
    memcpy(r->t->elevation, r->z, n * sizeof *r->z);
    er_layers *ly = r->layers;
    for (int k = 0; ly && k < 3; k++) {
        float *zero = k == 0 ? ly->water : k == 1 ? ly->sediment : ly->flow;
        if (zero)
            memset(zero, 0, n * sizeof *zero);
    }
    er_terrain_stats m;
    er_terrain_measure(r->t, &m);
    bud->material_after = m.sum;
    bud->rel_error = er_budget_rel_error(bud, m.abs_sum);
    return st;
}

static void run_release(void *run)
{
    diff_run *r = run;
    free(r->z);
    free(r->zn);
    free(r->rows);
}

const er_model_steps er_diffusion_steps = {
    .size = sizeof(diff_run),
    .init = run_init,
    .load = run_load,
    .advance = run_advance,
    .view = run_view,
    .finish = run_finish,
    .release = run_release,
};
