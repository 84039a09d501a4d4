/*
 * The SPH model's check of a state to resume from (its ops' check_resume).
 */
#include <math.h>

#include "../models.h"
#include "sph_internal.h"

/* Array k of r when it has one, else NULL. */
static const float *k_array(const er_run_state *r, int k)
{
    return k < r->n_arrays ? r->array[k] : NULL;
}

/* [m] The most ground a run of this plan can take away, and so the most
 * it can lay down again (particles start clean, from the fill and the
 * sources alike): each sub-step a particle erodes only up to C = c_max
 * (step.c take_scale), a volume (c_max - C) s^3 at most, and a quad's
 * volume change spreads over its vertices as heights summing to it over
 * the quad's area (terrain.c). */
static double ground_moved(const er_plan *plan)
{
    const er_sph_params *m = &plan->p.sph;
    double L, ax, ay;
    er_sph_axes(plan->cell_x, plan->cell_y, &L, &ax, &ay);
    const double subs = (double)m->steps * (double)plan->own.sph.substeps;
    return subs * (double)m->max_particles * m->c_max * m->spacing * m->spacing * m->spacing /
           (ax * ay) * L;
}

/* The heights an SPH run leaves: each vertex lowered by at most what the
 * run erodes and raised by at most what it deposits, both at most
 * ground_moved; the particles carry what they take (C >= 0), so the
 * terrain's sum does not grow. */
void er_sph_height_bound(const er_plan *plan, const er_controls *c, er_height_range *r)
{
    (void)c;
    const double e = ground_moved(plan);
    const double hi = r->hi + e;
    er_height_bound_moved(plan, r, e, 0.0);
    r->hi = hi < r->hi ? hi : r->hi;
}

/* The particles where the run can have left them: on the map (a position
 * is a column and a quad index) with finite speeds and a load in
 * [0, c_max]: erosion fills a particle only up to c_max (take_scale),
 * settling gives one nothing once it is there (hindered f(c_max) = 0), and
 * what settling adds on the way is a share of the gap left, the time step
 * keeping it far below 1.  Speeds are not bounded here: a particle faster
 * than the sound speed allows fails the run at its first sub-step. */
static er_status check_particles(const er_plan *plan, const er_sph_section *q, er_error *err)
{
    double L, ax, ay; /* positions are in L, columns ax and rows ay apart */
    er_sph_axes(plan->cell_x, plan->cell_y, &L, &ax, &ay);
    const double xmax = (plan->width - 1) * ax, ymax = (plan->height - 1) * ay;
    const double cmax = plan->p.sph.c_max;
    for (int64_t i = 0; i < q->n; i++) {
        const er_sph_particle *p = &q->particles[i];
        const double v[ER_SPH_PARTICLE_DOUBLES] = {p->x, p->y, p->z, p->vx, p->vy, p->vz, p->c};
        int bad = !(v[0] >= 0.0 && v[0] <= xmax && v[1] >= 0.0 && v[1] <= ymax);
        for (int k = 2; k < ER_SPH_PARTICLE_DOUBLES; k++)
            bad |= !isfinite(v[k]);
        if (bad || !(v[6] >= 0.0 && v[6] <= cmax))
            return er_fail(err, ER_EINVAL, "the state's particle %lld (at %g, %g, %g, speed %g, "
                           "%g, %g, load %g) is not one the run can hold: off the %dx%d map, "
                           "not finite or a load outside [0, sph.c_max = %g]", (long long)i,
                           v[0], v[1], v[2], v[3], v[4], v[5], v[6], plan->width, plan->height,
                           cmax);
    }
    return ER_OK;
}

/* Every value of a state the model reads (a checkpoint is a file: it may
 * say anything its checksums allow) on valid vertices: the working
 * heights within er_sph_height_bound of t's; the change since the start,
 * the deposits and the wear within what the run can move (ground_moved;
 * deposits and wear >= 0); the flow >= 0; the source volumes pending
 * finite and >= 0. */
static er_status check_values(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              const er_sph_section *q, er_error *err)
{
    double L, ax, ay;
    er_sph_axes(plan->cell_x, plan->cell_y, &L, &ax, &ay);
    const double e = ground_moved(plan);
    er_height_range h = er_plan_heights(plan);
    er_sph_height_bound(plan, t->controls, &h);
    const er_state_values v[] = {
        {"working height", NULL, q->zb, NULL, L, h.lo, h.hi},
        {"height change", NULL, q->dz, NULL, L, -e, e},
        {"deposit", NULL, q->dep, NULL, L, 0.0, e},
        {"wear", k_array(r, ER_STATE_SPH_WEAR), NULL, NULL, 1.0, 0.0, e},
        {"flow", k_array(r, ER_STATE_SPH_FLOW), NULL, NULL, 1.0, 0.0, HUGE_VAL}};
    er_status st = check_particles(plan, q, err);
    for (size_t k = 0; !st && k < sizeof v / sizeof v[0]; k++)
        if (v[k].f || v[k].d)
            st = er_state_check_values(t, &v[k], err);
    return st ? st : er_state_check_list(q->pending, q->n_pending, 0.0, HUGE_VAL,
                                         "pending source volume", err);
}

er_status er_sph_check_resume(const er_plan *plan, const er_terrain *t, const er_run_state *r,
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
    return check_values(plan, t, r, &q, err);
}
