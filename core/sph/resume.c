/*
 * The SPH model's check of a state to resume from (its ops' check_resume).
 */
#include <math.h>

#include "../models.h"
#include "sph_internal.h"

/* The first of n values that is not finite (or below lo), or -1. */
static int64_t first_bad(const double *v, int64_t n, double lo)
{
    for (int64_t i = 0; i < n; i++)
        if (!(isfinite(v[i]) && v[i] >= lo))
            return i;
    return -1;
}

/* Every value of a state the model reads (a checkpoint is a file: it may
 * say anything its checksums allow): the particles where the run can have
 * left them, on the map (a position is a column and a quad index) with
 * finite speeds and a volume fraction in [0, 1]; the heights, the change,
 * the deposits and the layers it keeps finite; the source volumes pending
 * finite and >= 0.  Speeds are not bounded here: a particle faster than
 * the sound speed allows fails the run at its first sub-step. */
static er_status check_values(const er_plan *plan, const er_run_state *r,
                              const er_sph_section *q, er_error *err)
{
    double L, ax, ay; /* positions are in L, columns ax and rows ay apart */
    er_sph_axes(plan->cell_x, plan->cell_y, &L, &ax, &ay);
    const double xmax = (plan->width - 1) * ax, ymax = (plan->height - 1) * ay;
    for (int64_t i = 0; i < q->n; i++) {
        const er_sph_particle *p = &q->particles[i];
        const double v[ER_SPH_PARTICLE_DOUBLES] = {p->x, p->y, p->z, p->vx, p->vy, p->vz, p->c};
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
        int64_t j = k < r->n_arrays && r->array[k] ? er_first_nonfinite(r->array[k], nv) : -1;
        if (j >= 0)
            return er_fail(err, ER_EINVAL, "the state's %s layer is not finite at cell (%lld, "
                           "%lld)", k == ER_STATE_SPH_FLOW ? "flow" : "wear",
                           (long long)(j % plan->width), (long long)(j / plan->width));
    }
    return ER_OK;
}

er_status er_sph_check_resume(const er_plan *plan, const er_run_state *r,
                              const er_layers *keep, er_error *err)
{
    const int kept[2] = {keep && keep->wear, keep && keep->flow};
    for (int k = 0; k < 2; k++) {
        int i = k ? ER_STATE_SPH_FLOW : ER_STATE_SPH_WEAR;
        if (kept[k] && (r->n_arrays <= i || !r->array[i]))
            return er_fail(err, ER_EINVAL, "the state has no %s layer (its run did not keep "
                           "it): resume without it, or start again", k ? "flow" : "wear");
    }
    er_status st = er_state_check_fit(plan, r, r->boundary, plan->p.sph.steps, err);
    if (st)
        return st;
    er_sph_section q;
    if (er_sph_section_of(r, &q) || q.n > plan->p.sph.max_particles ||
        q.n_pending != ER_MAX_SOURCES + 1 || r->n_arrays < 3 ||
        r->n_arrays > ER_STATE_SPH_ARRAYS)
        return er_fail(err, ER_EINVAL, "the state's particles (%llu) or source slots (%llu) do "
                       "not fit this run", r->extra ? (unsigned long long)r->extra->count[0] : 0ull,
                       r->extra ? (unsigned long long)r->extra->count[1] : 0ull);
    return check_values(plan, r, &q, err);
}
