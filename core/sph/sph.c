/*
 * SPH erosion (Kristof, Benes, Krivanek and Stava 2009, Hydraulic erosion
 * using smoothed particle hydrodynamics, Eurographics): weakly
 * compressible SPH water over the heightfield, coupled to it through
 * boundary particles; the run plan, the set-up, sources and outputs.  The
 * sub-step is core/sph/step.c, the terrain update core/sph/terrain.c.
 *
 * Scale.  The paper's scene is metres across with millimetre grains; a DEM
 * cell is 10-100 m.  The model therefore runs in a frame scaled by the
 * cell size L and the Froude time T = sqrt(L / g): lengths in cells,
 * velocities in sqrt(g L), so g = 1 and rho0 = 1 whatever the DEM.  A
 * flow of the same shape on a 1 m or a 90 m grid has the same numbers,
 * and eq. 10's shear stress tau = sqrt(|v| / l) and its constants K_eps
 * and tau_c are dimensionless in that frame: the paper's tau_c = 3 would
 * need |v| / l = 9 / T, which DEM-scale flow never reaches, hence the
 * default tau_c = 0.5.  Heights, water and the budget are converted back to
 * metres (times L) at the end; sph.dt and sph.settling_speed are metres
 * and seconds, converted with T and sqrt(g L).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rng.h"
#include "sph_internal.h"

/* Sub-step bounds: acoustic CFL 0.4 h / c0, viscous 0.125 h^2 / nu
 * (Monaghan 1992; DualSPHysics DtVariable), penalty spring 0.4 / sqrt(ks). */
static double dt_limit(const er_sph_params *m, double hk)
{
    double ks = m->sound_speed * m->sound_speed / hk;
    double dt = fmin(0.4 * hk / m->sound_speed, 0.4 / sqrt(ks));
    if (m->viscosity > 0.0)
        dt = fmin(dt, 0.125 * hk * hk / m->viscosity);
    return dt;
}

/* The map as core/sources.h sees it (SPH runs on the whole world). */
static er_source_grid source_grid(const er_terrain *t)
{
    return (er_source_grid){t->width, t->height, 0, 0, t->width, t->height, t->wall, NULL};
}

typedef struct ground_acc {
    const float *z;
    double top;
} ground_acc;

static void ground_cell(void *user, size_t i)
{
    ground_acc *a = user;
    a->top = fmax(a->top, (double)a->z[i]);
}

/* The highest ground [m] of the valid cells source src pours on, -inf
 * when none. */
static double source_ground(const er_terrain *t, const er_source *src)
{
    const er_source_grid g = source_grid(t);
    ground_acc a = {t->elevation, -INFINITY};
    er_source_cells(&g, src, ground_cell, &a);
    return a.top;
}

void er_sph_axes(double cx, double cy, double *L, double *ax, double *ay)
{
    if (fabs(cx - cy) <= 1e-6 * cx) {
        *L = cx;
        *ax = *ay = 1.0;
        return;
    }
    *L = cx < cy ? cx : cy;
    *ax = cx / *L;
    *ay = cy / *L;
}

/* The model's length unit [m] on t's cells (er_sph_axes). */
static double unit_of(const er_terrain *t)
{
    double L, ax, ay;
    er_sph_axes(t->cell_x, t->cell_y, &L, &ax, &ay);
    return L;
}

/* The highest a particle starts [m]: the fill level, and a source's
 * ground plus the three spacings above it a source particle starts at
 * most (emit); -inf when no water comes in. */
static double water_top(const er_plan *plan, const er_terrain *t)
{
    const er_sph_params *m = &plan->p.sph;
    const double lift = 3.0 * m->spacing * unit_of(t);
    double top = m->fill_level_set ? m->fill_level : -INFINITY;
    const er_source_list *l = &plan->p.river;
    for (int i = 0; i < l->n; i++)
        if (l->src[i].rate > 0.0)
            top = fmax(top, source_ground(t, &l->src[i]) + lift);
    const float *map = t->controls ? t->controls->source : NULL;
    for (size_t i = 0; map && i < (size_t)t->width * (size_t)t->height; i++)
        if (map[i] > 0.0f && !(t->wall && t->wall[i]))
            top = fmax(top, (double)t->elevation[i] + lift);
    return top;
}

/*
 * The weakly compressible condition.  The equation of state p = c0^2
 * (rho - 1) lets water under pressure p compress by p / c0^2: a column of
 * depth H at rest by g H / c0^2 at its foot, and water brought to rest
 * from speed v by v^2 / (2 c0^2) (Bernoulli), which for the fastest it
 * can flow, falling freely from the highest point it starts at to the
 * lowest cell of the map, v = sqrt(2 g H), is g H / c0^2 again.  The
 * method assumes a compression of about 1 % (Monaghan 1994; DualSPHysics
 * sets c0 = 10 sqrt(g H) from the water's height, the rule here):
 * sound_speed >= 10 sqrt(g H), or 10 sqrt(H) in the model's units, where
 * H runs from the fill level or a source's highest particle to the lowest
 * cell.  The flow then stays below Mach sqrt(2) / 10 by energy (friction
 * and viscosity only take it; pressure hands a front a little more: a
 * spring 1113 m above the lowest cell of whitebox, c0 = 50, made 5.17
 * sqrt(g L) of the bound's 4.97).  A particle past Mach ER_SPH_MACH (twice
 * the compression the rule allows) fails the run (core/sph/step.c
 * account): never a result of water compressed past what the method
 * assumes.  A null sound_speed becomes the least the rule allows (rounded
 * up to a tenth), at least ER_SPH_SOUND_SPEED, so one recipe serves any
 * DEM's relief at the fewest sub-steps it can.
 */
static er_status check_sound_speed(er_plan *plan, const er_terrain *t, er_error *err)
{
    er_sph_params *m = &plan->p.sph;
    double drop = water_top(plan, t) - (double)plan->lo;
    const double L = unit_of(t);
    double need = drop > 0.0 ? sqrt(drop / L / ER_SPH_COMPRESSION) : 0.0;
    if (!m->sound_speed_set) { /* null: the least allowed, a tenth up */
        double c = ceil(need * 10.0) / 10.0;
        m->sound_speed = fmax(ER_SPH_SOUND_SPEED, c < need ? c + 0.1 : c);
        m->sound_speed_set = 1;
    }
    if (!(drop > 0.0) || m->sound_speed >= need)
        return ER_OK;
    return er_fail(err, ER_EINVAL, "sph.sound_speed: %g is below %g = 10 sqrt(g H) for the "
                   "H = %.6g m from the water's highest start to the lowest cell (%g m cells): "
                   "the water would compress more than 1 %%", m->sound_speed,
                   ceil(need * 10.0) / 10.0, drop, L);
}

/* The fill against sph.max_particles, and sph.spacing "auto" (below,
 * beside the fill). */
static er_status check_particles(er_plan *plan, const er_terrain *t, er_error *err);
static er_status auto_spacing(er_plan *plan, const er_terrain *t, er_error *err);

static int by_height(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* sph.fill_quantile as the fill level [m]: the q quantile of the valid
 * cells' heights, linear between the sorted heights (position q (n - 1),
 * as numpy.quantile); a map of nodata only keeps no level. */
static er_status fill_from_quantile(er_plan *plan, const er_terrain *t, er_error *err)
{
    er_sph_params *m = &plan->p.sph;
    if (!m->fill_quantile_set)
        return ER_OK;
    const size_t nv = (size_t)t->width * (size_t)t->height;
    float *z = malloc((nv > 0 ? nv : 1) * sizeof *z);
    if (!z)
        return er_fail(err, ER_ENOMEM, "sph.fill_quantile: out of memory for the heights");
    size_t n = 0;
    for (size_t i = 0; i < nv; i++)
        if (!(t->wall && t->wall[i]))
            z[n++] = t->elevation[i];
    if (n > 0) {
        qsort(z, n, sizeof *z, by_height);
        double pos = m->fill_quantile * (double)(n - 1), lo = floor(pos);
        size_t k = (size_t)lo;
        m->fill_level = k + 1 < n ? (double)z[k] + (pos - lo) * ((double)z[k + 1] - (double)z[k])
                                  : (double)z[k];
        m->fill_level_set = 1;
    }
    free(z);
    return ER_OK;
}

/* "sph.fill_level: 330 m" or "sph.fill_quantile: 0.4 (330 m)": the key
 * that set the fill, for messages. */
static const char *fill_key(const er_sph_params *m, char *buf, size_t n)
{
    if (m->fill_quantile_set)
        snprintf(buf, n, "sph.fill_quantile: %g (%g m)", m->fill_quantile, m->fill_level);
    else
        snprintf(buf, n, "sph.fill_level: %g m", m->fill_level);
    return buf;
}

static void planned_particles(er_plan *plan, const er_terrain *t);

er_status er_sph_plan(er_plan *plan, const er_terrain *t, er_error *err)
{
    const er_sph_params *m = &plan->p.sph;
    if (plan->windowed)
        return er_fail(err, ER_EINVAL, "sph: tile sets (windows) are not supported: particles "
                       "cross tile edges");
    if (t->width < 2 || t->height < 2)
        return er_fail(err, ER_EINVAL, "sph: the map must be at least 2x2 cells");
    er_source_grid g = source_grid(t);
    g.elevation = t->elevation;
    er_status st = er_sources_plan(&plan->p.river, &g, plan->warning, sizeof plan->warning, err);
    if (!st)
        st = fill_from_quantile(plan, t, err);
    if (!st)
        st = auto_spacing(plan, t, err);
    if (!st)
        st = check_sound_speed(plan, t, err);
    if (!st)
        st = check_particles(plan, t, err);
    if (st)
        return st;
    double T = sqrt(unit_of(t) / m->gravity);
    double need = ceil(m->dt / T / dt_limit(m, 2.0 * m->spacing));
    if (need > (double)m->max_substeps)
        return er_fail(err, ER_ENUMERIC, "sph.max_substeps: sph.dt = %g s needs %.0f sub-steps "
                       "(cfl and viscous limits), more than %lld", m->dt, need,
                       (long long)m->max_substeps);
    plan->own.sph.substeps = need < 1.0 ? 1 : (int64_t)need;
    plan->substeps = plan->own.sph.substeps;
    plan->own.sph.dt_sub = m->dt / (double)plan->own.sph.substeps;
    plan->boundaries = m->steps;
    planned_particles(plan, t);
    return ER_OK;
}

/* Boundary particles per quad along an axis of `step` cells (of the unit
 * length L) at this spacing: set_constants' kx and ky. */
static int boundary_per_side(double step, double spacing)
{
    return (int)fmin(fmax(1.0, floor(step / spacing + 0.5)), 15.0);
}

size_t er_sph_bytes_per_cell(const er_params *p)
{
    /* zb, dz, dep, qd, qok, the particle grid's offsets and column tops
     * (2 int64 a cell: its cells are at least a cell wide), the boundary
     * particles' heights, k*k a quad, and their range (square cells;
     * planned_particles adds what others need), with hardness or mask the
     * per-quad factors, with a source map its running sums (controls()) */
    const er_control_paths *m = &p->maps;
    /* "auto" (0) before the plan: the finest it may choose, the most
     * boundary particles a quad */
    const double spacing = p->sph.spacing > 0.0 ? p->sph.spacing : ER_SPH_SPACING;
    const size_t k = (size_t)boundary_per_side(1.0, spacing);
    return 4 * sizeof(double) + 1 + 2 * sizeof(int64_t) + (k * k + 2) * sizeof(double) +
           (m->hardness[0] || m->mask[0] ? 2 * sizeof(double) : 0) +
           (m->sources[0] ? sizeof(double) : 0);
}

/* sim_alloc's per-particle double arrays. */
#define PARTICLE_DOUBLES 16

/* Boundary quads a particle's records hold (set_constants' nbq). */
static int quads_per_particle(double spacing)
{
    int per = (int)floor(2.0 * (2.0 * spacing) + 1.0) + 1;
    return per * per;
}

/* What n particles cost: sim_alloc's arrays (the particles twice, 16
 * doubles, the key, the position record), allocated for max_particles
 * but resident only where particles are, and the neighbour, settling and
 * quad records lists_fit grows to lists of them. */
static size_t particle_bytes(const er_params *p, size_t n, size_t lists)
{
    /* "auto" (0) before the map is planned: the coarsest it can become */
    const double spacing = p->sph.spacing > 0.0 ? p->sph.spacing : ER_SPH_SPACING_MAX;
    const size_t nbq = (size_t)quads_per_particle(spacing);
    const size_t alloc = 2 * sizeof(er_sph_particle) + PARTICLE_DOUBLES * sizeof(double) +
                         sizeof(int64_t) + sizeof(er_sph_xr);
    const size_t list = ER_SPH_NB * sizeof(int32_t) * 2 + 2 * sizeof(int32_t) /* nb, vl */ +
                        nbq * (sizeof(int32_t) + 2 * sizeof(double)) + sizeof(int32_t) +
                        ER_SPH_NS * (sizeof(double) + sizeof(int32_t)) + sizeof(int32_t) +
                        ER_SPH_NBB * sizeof(int64_t) + sizeof(int32_t) + sizeof(er_sph_pk) +
                        sizeof(er_sph_acc);
    size_t a, b;
    if (!er_mul_size(n > 0 ? n : 1, alloc, &a) || !er_mul_size(lists > 0 ? lists : 1, list, &b) ||
        a > SIZE_MAX - b)
        return SIZE_MAX;
    return a + b;
}

size_t er_sph_bytes_fixed(const er_params *p, char *what, size_t n_what)
{
    snprintf(what, n_what, "%lld particles", (long long)p->sph.max_particles);
    const size_t n = (size_t)p->sph.max_particles;
    return particle_bytes(p, n, n);
}

static double source_particles(const er_plan *plan, const er_terrain *t);

/* The most particles the run holds, with the memory they need, into
 * plan->bytes_map: the fill's and what the sources add over the steps,
 * at most max_particles (open edges let some out: a bound).  The arrays
 * for max_particles are resident only where particles are, the lists
 * (lists_fit: half as many again) only as far as they are filled. */
static void planned_particles(er_plan *plan, const er_terrain *t)
{
    const er_sph_params *m = &plan->p.sph;
    double most = (double)plan->own.sph.particles + source_particles(plan, t) * (double)m->steps;
    if (!(most < (double)m->max_particles))
        most = (double)m->max_particles;
    const size_t n = (size_t)ceil(most);
    double L, xs, ys;
    er_sph_axes(plan->cell_x, plan->cell_y, &L, &xs, &ys);
    const int k = boundary_per_side(1.0, m->spacing);
    const int more = boundary_per_side(xs, m->spacing) * boundary_per_side(ys, m->spacing) - k * k;
    const size_t quads = (size_t)(t->width - 1) * (size_t)(t->height - 1);
    const size_t b = particle_bytes(&plan->p, n, n);
    const size_t bz = (size_t)(more > 0 ? more : 0) * quads * sizeof(double);
    plan->bytes_map = b > SIZE_MAX - bz ? SIZE_MAX : b + bz;
}

static void sim_free(er_sph_sim *s)
{
    void *b[] = {s->bz,  s->bzr,  s->zb,   s->dz,    s->dep,    s->qd,   s->qok,  s->p,
                 s->tmp, s->xr,  s->pr,   s->pq,    s->irho,   s->ax,   s->ay,   s->az,
                 s->rem, s->hf,   s->ero,  s->cnew,  s->start,  s->key,
                 s->pending, s->qero, s->qdep, s->srccum, s->nb, s->nbn, s->gsc, s->tsc, s->bq, s->bqn, s->bqv, s->pk, s->acc, s->got, s->sv, s->svj, s->svn, s->bh, s->bhn,
                 s->ctop, s->mv, s->rord, s->vl, s->vln, s->ox, s->oy, s->oz};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        free(b[i]);
}

/* The mass that gives a particle on the lattice of spacing s the density
 * rho0 = 1, so water at rest starts at rest. */
static double lattice_mass(const er_sph_sim *s)
{
    double sum = 0;
    for (int c = -2; c <= 2; c++)
        for (int b = -2; b <= 2; b++)
            for (int a = -2; a <= 2; a++)
                sum += er_sph_w(s, (a * a + b * b + c * c) * s->s * s->s);
    return 1.0 / sum;
}

/* The mass of a boundary particle: a fluid particle on the lattice one
 * spacing above flat ground then has the density rho0 = 1, the boundary
 * layer standing in for the missing fluid (Akinci et al. 2012 compute a
 * volume per boundary particle; on a regular sampling one number does). */
static double boundary_mass(const er_sph_sim *s)
{
    double fluid = 0, ground = 0, dx = s->xstep / s->kx, dy = s->ystep / s->ky;
    for (int c = 0; c <= 2; c++)
        for (int b = -2; b <= 2; b++)
            for (int a = -2; a <= 2; a++)
                fluid += s->mass * er_sph_w(s, (a * a + b * b + c * c) * s->s * s->s);
    int mx = (int)ceil(s->hk / dx) + 1, my = (int)ceil(s->hk / dy) + 1;
    for (int b = -my; b <= my; b++)
        for (int a = -mx; a <= mx; a++) {
            double x = (a + 0.5) * dx, y = (b + 0.5) * dy;
            ground += er_sph_w(s, x * x + y * y + s->s * s->s);
        }
    return ground > 0.0 && fluid < 1.0 ? (1.0 - fluid) / ground : 0.0;
}

static void set_constants(er_sph_sim *s, const er_plan *plan)
{
    const er_sph_params *m = &plan->p.sph;
    er_sph_axes(plan->cell_x, plan->cell_y, &s->L, &s->xstep, &s->ystep);
    s->ixstep = 1.0 / s->xstep;
    s->iystep = 1.0 / s->ystep;
    s->area = s->xstep * s->ystep;
    s->iarea = 1.0 / s->area;
    s->xmax = (s->w - 1) * s->xstep;
    s->ymax = (s->h - 1) * s->ystep;
    s->T = sqrt(s->L / m->gravity);
    s->s = m->spacing;
    s->hk = 2.0 * m->spacing;
    er_sph_kernel_constants(s);
    s->vol = s->s * s->s * s->s;
    s->c0 = m->sound_speed;
    s->nu = m->viscosity;
    s->mu_b = m->friction;
    s->ke = m->erosion_rate;
    s->tauc = m->critical_shear;
    s->vs0 = m->settling_speed / sqrt(m->gravity * s->L);
    s->cmax = m->c_max;
    s->ks = s->c0 * s->c0 / s->hk;
    s->kd = sqrt(s->ks);
    s->dt = plan->own.sph.dt_sub / s->T;
    /* boundary particles about a spacing apart along each side, at most
     * 15 (they are packed in 4 bits, step.c BH_PACK) */
    s->kx = boundary_per_side(s->xstep, s->s);
    s->ky = boundary_per_side(s->ystep, s->s);
    for (int a = 0; a < s->kx; a++)
        s->boffx[a] = (a + 0.5) / s->kx;
    for (int b = 0; b < s->ky; b++)
        s->boffy[b] = (b + 0.5) / s->ky;
    s->open = m->boundary == ER_BOUNDARY_OPEN;
    /* a particle's boundary quads along one axis lie in an interval of
     * 2 hk / a + boff[k-1] - boff[0] + a rounding margin < 2 hk + 1 quads
     * (a >= 1) */
    s->nbq = quads_per_particle(m->spacing);
    s->ns_keep = ER_SPH_NS;
    s->mass = lattice_mass(s);
    s->mass_b = boundary_mass(s);
    s->hg = s->hk * (1.0 + ER_SPH_MARGIN);
    s->gw = (int)floor(s->xmax / s->hg) + 1;
    s->gh = (int)floor(s->ymax / s->hg) + 1;
}

static er_status sim_alloc(er_sph_sim *s, const er_terrain *t, int64_t cap, er_error *err)
{
    size_t nv = er_sph_nv(s), nq = (size_t)(s->w - 1) * (size_t)(s->h - 1);
    size_t np = (size_t)(cap > 0 ? cap : 1), ng = (size_t)s->gw * (size_t)s->gh + 2;
    s->zb = calloc(nv, sizeof *s->zb);
    s->dz = calloc(nv, sizeof *s->dz);
    s->dep = calloc(nv, sizeof *s->dep);
    s->qd = calloc(nq, sizeof *s->qd);
    s->qok = calloc(nq, 1);
    s->bz = calloc(nq * (size_t)s->kx * (size_t)s->ky, sizeof *s->bz);
    s->bzr = calloc(2 * nq, sizeof *s->bzr);
    s->p = calloc(np, sizeof *s->p);
    s->tmp = calloc(np, sizeof *s->tmp);
    double **d[] = {&s->pr, &s->pq,  &s->irho, &s->ax, &s->ay,
                    &s->az,  &s->rem, &s->hf, &s->ero,  &s->cnew, &s->gsc, &s->tsc,
                    &s->got, &s->ox, &s->oy, &s->oz};
    _Static_assert(sizeof d / sizeof d[0] == PARTICLE_DOUBLES, "er_sph_bytes_fixed counts them");
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        *d[i] = calloc(np, sizeof(double));
    s->start = calloc(ng, sizeof *s->start);
    s->ctop = calloc(2 * ng, sizeof *s->ctop);
    s->mv = calloc((size_t)s->gh / 2 + 1, sizeof *s->mv);
    s->rord = calloc(2 * ((size_t)s->gh / 2 + 2), sizeof *s->rord);
    s->key = calloc(np, sizeof *s->key);
    s->xr = calloc(np, sizeof *s->xr);
    s->pending = calloc(ER_MAX_SOURCES + 1, sizeof *s->pending);
    if (!s->bz || !s->bzr || !s->zb || !s->dz || !s->dep || !s->qd || !s->qok || !s->p ||
        !s->tmp || !s->xr || !s->pr || !s->pq || !s->irho || !s->ax || !s->ay || !s->az ||
        !s->rem || !s->hf || !s->ero || !s->cnew || !s->start || !s->key ||
        !s->gsc || !s->tsc || !s->got || !s->pending || !s->ctop || !s->mv || !s->rord ||
        !s->ox || !s->oy || !s->oz)
        return er_fail(err, ER_ENOMEM, "sph: out of memory for %lld particles", (long long)cap);
    for (size_t i = 0; i < nv; i++)
        s->zb[i] = t->wall && t->wall[i] ? 0.0 : (double)t->elevation[i] / s->L;
    for (int qy = 0; qy < s->h - 1; qy++)
        for (int qx = 0; qx < s->w - 1; qx++) {
            size_t v = er_sph_vi(s, qx, qy), r = (size_t)s->w;
            s->qok[er_sph_qi(s, qx, qy)] =
                !t->wall || !(t->wall[v] | t->wall[v + 1] | t->wall[v + r] | t->wall[v + r + 1]);
        }
    er_sph_boundary_heights(s, 0, 0, s->w - 2, s->h - 2);
    return ER_OK;
}

/* The smallest of f over quad (qx, qy)'s corners. */
static double corner_min(const er_sph_sim *s, const float *a, const float *b, int qx, int qy)
{
    size_t v = er_sph_vi(s, qx, qy);
    double m = 1.0;
    for (int k = 0; k < 4; k++) {
        size_t i = v + (size_t)(k & 1) + (size_t)(k >> 1) * (size_t)s->w;
        double f = (a ? 1.0 - (double)a[i] : 1.0) * (b ? (double)b[i] : 1.0);
        m = f < m ? f : m;
    }
    return m;
}

/* The control maps as SPH reads them (sph_internal.h): per-quad factors
 * and the source map's running sums. */
static er_status controls(er_sph_sim *s, const er_controls *c, er_error *err)
{
    if (!c)
        return ER_OK;
    const size_t nq = (size_t)(s->w - 1) * (size_t)(s->h - 1), nv = er_sph_nv(s);
    if ((c->hardness || c->mask) && (!(s->qero = malloc(nq * sizeof *s->qero)) ||
                                     !(s->qdep = malloc(nq * sizeof *s->qdep))))
        return er_fail(err, ER_ENOMEM, "sph: out of memory for the control maps");
    if (c->source && !(s->srccum = malloc((nv + 1) * sizeof *s->srccum)))
        return er_fail(err, ER_ENOMEM, "sph: out of memory for the control maps");
    for (int qy = 0; s->qero && qy < s->h - 1; qy++)
        for (int qx = 0; qx < s->w - 1; qx++) {
            s->qero[er_sph_qi(s, qx, qy)] = corner_min(s, c->hardness, c->mask, qx, qy);
            s->qdep[er_sph_qi(s, qx, qy)] = corner_min(s, NULL, c->mask, qx, qy);
        }
    if (!s->srccum)
        return ER_OK;
    s->srccum[0] = 0.0;
    for (size_t i = 0; i < nv; i++)
        s->srccum[i + 1] = s->srccum[i] + (s->wall && s->wall[i] ? 0.0 : (double)c->source[i]);
    return ER_OK;
}

/* The height [cells] of vertex i as a run starts (sim_alloc's zb). */
static double start_z(const er_terrain *t, double L, size_t i)
{
    return t->wall && t->wall[i] ? 0.0 : (double)t->elevation[i] / L;
}

/* er_sph_surface (core/sph/step.c) on the heights a run starts from, read
 * from the terrain: the same operations on the same values, so the plan
 * counts the particles fill places without a simulation. */
static double start_surface(const er_terrain *t, double L, double x, double y)
{
    const int w = t->width, h = t->height;
    double xc = x > 0.0 ? (x < w - 1 ? x : w - 1) : 0.0, yc = y > 0.0 ? (y < h - 1 ? y : h - 1) : 0.0;
    int i = w > 1 ? (int)floor(xc) : 0, j = h > 1 ? (int)floor(yc) : 0;
    i = i > w - 2 && w > 1 ? w - 2 : i;
    j = j > h - 2 && h > 1 ? h - 2 : j;
    int i1 = w > 1 ? i + 1 : i, j1 = h > 1 ? j + 1 : j;
    double u = xc - i, v = yc - j;
    double a = start_z(t, L, (size_t)j * (size_t)w + (size_t)i);
    double b = start_z(t, L, (size_t)j * (size_t)w + (size_t)i1);
    double c = start_z(t, L, (size_t)j1 * (size_t)w + (size_t)i);
    double d = start_z(t, L, (size_t)j1 * (size_t)w + (size_t)i1);
    return (1 - v) * ((1 - u) * a + u * b) + v * ((1 - u) * c + u * d);
}

/* Whether the quad holding (x, y) has a nodata corner (sim_alloc's qok). */
static int quad_wall(const er_terrain *t, double x, double y)
{
    if (!t->wall)
        return 0;
    size_t qx = (size_t)fmin(floor(x), t->width - 2), qy = (size_t)fmin(floor(y), t->height - 2);
    size_t v = qy * (size_t)t->width + qx, r = (size_t)t->width;
    return t->wall[v] | t->wall[v + 1] | t->wall[v + r] | t->wall[v + r + 1];
}

/* The initial body of water (sph.fill_level): a lattice of spacing s (in
 * the model's units, over columns ax and rows ay apart) from one spacing
 * above the terrain up to the fill level on every column off the nodata
 * quads; with a rain map (core/controls.h) each column holds r times its
 * particles (rounded), r of its nearest cell.  Returns how many particles
 * it is; places them in sim (and their water in bud) when sim is not NULL
 * and they fit, else places none.  The plan counts (sim NULL) what the
 * run's set-up places. */
static int64_t fill_lattice(const er_terrain *t, const er_sph_params *m, er_sph_sim *sim,
                            er_budget *bud)
{
    if (!m->fill_level_set)
        return 0;
    double L, ax, ay;
    er_sph_axes(t->cell_x, t->cell_y, &L, &ax, &ay);
    const double sp = m->spacing, top = m->fill_level / L, iax = 1.0 / ax, iay = 1.0 / ay;
    const double xmax = (t->width - 1) * ax, ymax = (t->height - 1) * ay;
    const float *rain = t->controls ? t->controls->rain : NULL;
    int64_t n = 0;
    for (double y = 0.0; y <= ymax; y += sp)
        for (double x = 0.0; x <= xmax; x += sp) {
            const double xq = x * iax, yq = y * iay; /* in vertex indices */
            if (quad_wall(t, xq, yq))
                continue;
            double z0 = start_surface(t, L, xq, yq) + sp;
            int64_t count = z0 <= top ? (int64_t)floor((top - z0) / sp) + 1 : 0;
            if (rain) { /* the rain map times the column's particles */
                size_t c = (size_t)floor(yq + 0.5) * (size_t)t->width + (size_t)floor(xq + 0.5);
                count = (int64_t)floor(rain[c] * (double)count + 0.5);
            }
            for (int64_t k = 0; sim && k < count && sim->n < sim->cap; k++) {
                sim->p[sim->n++] = (er_sph_particle){x, y, z0 + (double)k * sp, 0, 0, 0, 0};
                bud->water_added += sim->vol * sim->L * sim->iarea;
            }
            n += count;
        }
    return n;
}

/*
 * sph.spacing "auto" (stored as 0): the finest spacing at which the fill
 * fits in sph.max_particles, so that one lake recipe runs on any DEM at a
 * cost max_particles bounds (particles times sub-steps: the sub-step grows
 * with h = 2 spacing, so a coarser lattice also takes fewer).  A lattice of
 * spacing s holds about V / s^3 particles for a fill of V cells^3 (the
 * fill level minus the ground, where positive, over every valid cell,
 * times the cell's area and the rain map's factor), so
 *
 *   s = max(ER_SPH_SPACING, cbrt(V / max_particles)),
 *
 * rounded up to a hundredth of a cell, then raised by hundredths until
 * fill_lattice's count fits (it starts one spacing above the ground, so it
 * mostly holds fewer than V / s^3 and fits at once).  Never finer than
 * ER_SPH_SPACING, the default: a lake that fits at it runs exactly as with
 * that number, and a small lake does not spend the budget on a finer
 * lattice.  Never coarser than ER_SPH_SPACING_MAX, the key's range: a fill
 * that needs more is a recipe error, as for a number.  No fill, or
 * max_particles 0 (check_particles says why): ER_SPH_SPACING.  The
 * smoothing length, the kernels, the masses, the boundary particles and
 * the sub-step all follow from the chosen number as from a given one
 * (set_constants, dt_limit).
 */
static er_status auto_spacing(er_plan *plan, const er_terrain *t, er_error *err)
{
    er_sph_params *m = &plan->p.sph;
    if (m->spacing > 0.0)
        return ER_OK;
    m->spacing = ER_SPH_SPACING;
    if (!m->fill_level_set || m->max_particles <= 0)
        return ER_OK;
    double L, ax, ay;
    er_sph_axes(t->cell_x, t->cell_y, &L, &ax, &ay);
    const float *rain = t->controls ? t->controls->rain : NULL;
    const double top = m->fill_level / L;
    double vol = 0.0; /* [cells^3] row-major, one order */
    for (size_t i = 0; i < (size_t)t->width * (size_t)t->height; i++) {
        double d = top - start_z(t, L, i);
        if (!(t->wall && t->wall[i]) && d > 0.0)
            vol += d * ax * ay * (rain ? (double)rain[i] : 1.0);
    }
    const double lo = 100.0 * ER_SPH_SPACING, hi = 100.0 * ER_SPH_SPACING_MAX;
    double k = fmax(lo, ceil(100.0 * cbrt(vol / (double)m->max_particles)));
    er_sph_params q = *m;
    for (k = fmin(k, hi);; k++) {
        q.spacing = k / 100.0;
        int64_t n = fill_lattice(t, &q, NULL, NULL);
        if (n <= m->max_particles)
            break;
        if (k >= hi) {
            char key[96];
            return er_fail(err, ER_EINVAL, "%s needs %lld particles at the coarsest "
                           "sph.spacing \"auto\" may choose (%g cells), more than "
                           "sph.max_particles = %lld", fill_key(m, key, sizeof key),
                           (long long)n, ER_SPH_SPACING_MAX, (long long)m->max_particles);
        }
    }
    m->spacing = q.spacing;
    return ER_OK;
}

/* The particles the sources add a step: rate * dt metres on each covered
 * cell (add_sources), in particles of spacing^3 L^3. */
static double source_particles(const er_plan *plan, const er_terrain *t)
{
    const er_sph_params *m = &plan->p.sph;
    double L, ax, ay;
    er_sph_axes(t->cell_x, t->cell_y, &L, &ax, &ay);
    const double area = ax * ay, vol = m->spacing * m->spacing * m->spacing;
    const er_source_grid g = source_grid(t);
    double per_step = 0.0; /* [cells^3] */
    for (int i = 0; i < plan->p.river.n; i++) {
        const er_source *src = &plan->p.river.src[i];
        int64_t cells = er_source_cells(&g, src, NULL, NULL);
        per_step += src->rate * m->dt * (double)(cells > 0 ? cells : 1) * area / L;
    }
    const float *map = t->controls ? t->controls->source : NULL;
    for (size_t i = 0; map && i < (size_t)t->width * (size_t)t->height; i++)
        if (!(t->wall && t->wall[i]))
            per_step += (double)map[i] * m->dt * area / L;
    return per_step / vol;
}

/* The particles of the run: the fill must fit in sph.max_particles
 * (refused before any work, not found by the set-up).  With closed edges
 * no particle leaves, so sources that bring the count to max_particles
 * before the last step certainly stop adding water there (as the key
 * says): a warning the plan carries, with the step (open edges let water
 * out at a rate no plan knows). */
static er_status check_particles(er_plan *plan, const er_terrain *t, er_error *err)
{
    const er_sph_params *m = &plan->p.sph;
    char key[96];
    plan->own.sph.particles = fill_lattice(t, m, NULL, NULL);
    if (plan->own.sph.particles > m->max_particles)
        return er_fail(err, ER_EINVAL, "%s needs %lld particles, more than sph.max_particles = "
                       "%lld", fill_key(m, key, sizeof key), (long long)plan->own.sph.particles,
                       (long long)m->max_particles);
    double per_step = source_particles(plan, t);
    if (m->steps > 0 && (m->max_particles == 0 || (plan->own.sph.particles == 0 && !(per_step > 0.0)))) {
        if (plan->warning[0]) /* a warning of the sources' says why first */
            return ER_OK;
        if (m->max_particles == 0)
            snprintf(plan->warning, sizeof plan->warning, "sph.max_particles: 0 particles: "
                     "there is no water and the run changes nothing");
        else if (m->fill_level_set)
            snprintf(plan->warning, sizeof plan->warning, "%s: below the particle lattice "
                     "(one spacing above the ground) on every cell, and no source adds water: "
                     "there is no water and the run changes nothing",
                     m->fill_quantile_set ? fill_key(m, key, sizeof key) : "sph.fill_level");
        else
            snprintf(plan->warning, sizeof plan->warning, "sph: the map starts dry "
                     "(sph.fill_level null) and no source adds water: the run changes nothing");
        return ER_OK;
    }
    double room = (double)(m->max_particles - plan->own.sph.particles);
    if (m->boundary != ER_BOUNDARY_CLOSED || !(per_step > 0.0) ||
        per_step * (double)m->steps < room || plan->warning[0])
        return ER_OK;
    snprintf(plan->warning, sizeof plan->warning,
             "sph.max_particles: the fill's %lld particles and the sources' %.4g a step reach %lld "
             "at step %.0f of %lld (the edges are closed): the sources add no water after it",
             (long long)plan->own.sph.particles, per_step, (long long)m->max_particles,
             ceil(room / per_step), (long long)m->steps);
    return ER_OK;
}

typedef struct pick_acc {
    int64_t n, pick; /* cells seen; the one wanted (-1: none) */
    size_t cell;     /* that one */
} pick_acc;

static void pick_cell(void *user, size_t i)
{
    pick_acc *a = user;
    if (a->n++ == a->pick)
        a->cell = i;
}

/* The cells a source covers (core/sources.h, at least one once planned):
 * their number; the pick-th (row order) into (cx, cy). */
static int64_t source_cells(const er_sph_sim *s, const er_source *src, int64_t pick, int *cx,
                            int *cy)
{
    const er_source_grid g = {s->w, s->h, 0, 0, s->w, s->h, s->wall, NULL};
    pick_acc a = {0, pick, 0};
    er_source_cells(&g, src, pick_cell, &a);
    if (pick >= 0 && pick < a.n) {
        *cx = (int)(a.cell % (size_t)s->w);
        *cy = (int)(a.cell / (size_t)s->w);
    }
    return a.n;
}

static int near(const er_sph_particle *p, double x, double y, double z, double r2)
{
    double dx = p->x - x, dy = p->y - y, dz = p->z - z;
    return dx * dx + dy * dy + dz * dz < r2;
}

/* Whether a particle lies closer than 0.9 s to (x, y, z): the sorted ones
 * of the last sub-step (which moved less than h / 2 since) and those added
 * since, from n0 on.  Overlapping particles would push each other apart at
 * speeds no time step holds. */
static int crowded(const er_sph_sim *s, double x, double y, double z, int64_t n0)
{
    const double r2 = 0.81 * s->s * s->s;
    int cx = er_sph_col(s, x, s->gw), cy = er_sph_col(s, y, s->gh);
    for (int v = cy - 1; v <= cy + 1; v++)
        for (int u = cx - 1; u <= cx + 1; u++) {
            if (u < 0 || v < 0 || u >= s->gw || v >= s->gh)
                continue;
            for (int64_t j = s->start[(int64_t)v * s->gw + u]; j < s->start[(int64_t)v * s->gw + u + 1]; j++)
                if (near(&s->p[j], x, y, z, r2))
                    return 1;
        }
    for (int64_t j = n0; j < s->n; j++)
        if (near(&s->p[j], x, y, z, r2))
            return 1;
    return 0;
}

/* Emits the particles of source slot i while its pending volume holds
 * one: pick(s, src, u, &cx, &cy) names the cell for a random u in
 * [0, 1), the particle lands at a random place on it, a spacing or two
 * above the ground; a crowded place is tried again, up to 8 times. */
typedef void (*pick_fn)(const er_sph_sim *s, const er_source *src, double u, int *cx, int *cy);

static void emit(er_sph_sim *s, const er_plan *plan, int64_t step, int i, const er_source *src,
                 pick_fn pick, int64_t n0, er_budget *bud)
{
    const uint64_t seed = plan->p.seed;
    int tries = 0;
    for (uint64_t k = 0; s->pending[i] >= s->vol && s->n < s->cap; k++) {
        uint64_t id = ((uint64_t)step << 32) ^ ((uint64_t)i << 25) ^ (k * 4);
        int cx = 0, cy = 0;
        pick(s, src, er_rng_unit(seed, ER_STREAM_SPH_SOURCE, id), &cx, &cy);
        double x = fmin(fmax((cx + er_rng_unit(seed, ER_STREAM_SPH_SOURCE, id + 1) - 0.5) * s->xstep,
                             0), s->xmax);
        double y = fmin(fmax((cy + er_rng_unit(seed, ER_STREAM_SPH_SOURCE, id + 2) - 0.5) * s->ystep,
                             0), s->ymax);
        double z = er_sph_surface(s, x, y, NULL, NULL) +
                   s->s * (1.0 + 2.0 * er_rng_unit(seed, ER_STREAM_SPH_SOURCE, id + 3));
        if (crowded(s, x, y, z, n0)) {
            if (++tries > 8)
                break;
            continue;
        }
        s->key[s->n] = 0;
        s->keys_fresh = 0; /* er_sph_sort sets its key */
        s->p[s->n++] = (er_sph_particle){x, y, z, 0, 0, 0, 0};
        s->pending[i] -= s->vol;
        bud->water_added += s->vol * s->L * s->iarea;
    }
}

/* A recipe source's cell: one of those it covers, uniformly. */
static void pick_recipe(const er_sph_sim *s, const er_source *src, double u, int *cx, int *cy)
{
    int64_t cells = source_cells(s, src, -1, cx, cy);
    source_cells(s, src, (int64_t)fmin(floor(u * (double)cells), (double)(cells - 1)), cx, cy);
}

/* The source map's cell: one with probability rate / total (a search in
 * the running sums). */
static void pick_map(const er_sph_sim *s, const er_source *src, double u, int *cx, int *cy)
{
    (void)src;
    const size_t nv = er_sph_nv(s);
    double want = u * s->srccum[nv];
    size_t lo = 0, hi = nv - 1;
    while (lo < hi) { /* the first cell whose running sum passes want */
        size_t m = lo + (hi - lo) / 2;
        if (s->srccum[m + 1] > want)
            hi = m;
        else
            lo = m + 1;
    }
    *cx = (int)(lo % (size_t)s->w);
    *cy = (int)(lo / (size_t)s->w);
}

/* The river sources (core/sources.h) as particles:
 * rate * dt metres on each covered cell; then the source map's
 * (core/controls.h), its rate per cell, in the last slot. */
static void add_sources(er_sph_sim *s, const er_plan *plan, int64_t step, er_budget *bud)
{
    const er_source_list *l = &plan->p.river;
    const int64_t n0 = s->n;
    for (int i = 0; i < l->n; i++) {
        const er_source *src = &l->src[i];
        int cx = 0, cy = 0;
        int64_t cells = source_cells(s, src, -1, &cx, &cy);
        s->pending[i] += src->rate * plan->p.sph.dt * (double)cells * s->area / s->L;
        emit(s, plan, step, i, src, pick_recipe, n0, bud);
    }
    if (s->srccum && s->srccum[er_sph_nv(s)] > 0.0) {
        s->pending[ER_MAX_SOURCES] += s->srccum[er_sph_nv(s)] * plan->p.sph.dt * s->area / s->L;
        emit(s, plan, step, ER_MAX_SOURCES, NULL, pick_map, n0, bud);
    }
}

/* The height [m] the run writes at vertex i: the input plus the change. */
static double height_at(const er_sph_sim *s, const er_terrain *t, size_t i)
{
    return t->wall && t->wall[i] ? (double)t->elevation[i]
                                 : (double)t->elevation[i] + s->dz[i] * s->L;
}

/* The cell nearest particle p. */
static size_t cell_of(const er_sph_sim *s, const er_sph_particle *p)
{
    return (size_t)floor(p->y * s->iystep + 0.5) * (size_t)s->w + (size_t)floor(p->x * s->ixstep + 0.5);
}

/* Water depth [m]: each particle's volume on its nearest cell. */
static void water_layer(const er_sph_sim *s, float *water)
{
    memset(water, 0, er_sph_nv(s) * sizeof *water);
    for (int64_t i = 0; i < s->n; i++)
        water[cell_of(s, &s->p[i])] += (float)(s->vol * s->L * s->iarea);
}

static void sediment_layer(const er_sph_sim *s, float *sed)
{
    for (size_t i = 0; i < er_sph_nv(s); i++)
        sed[i] = (float)(s->dep[i] * s->L);
}

/* Heights, water depth and deposits back in metres; the material
 * budget. */
static void finish(er_sph_sim *s, const er_plan *plan, er_terrain *t, er_layers *ly,
                   er_budget *bud)
{
    const size_t nv = er_sph_nv(s);
    double after = 0.0;
    er_sph_terrain_update(s, bud); /* a step that failed half-way */
    for (size_t i = 0; i < nv; i++) {
        if (t->wall && t->wall[i])
            continue;
        double z = height_at(s, t, i);
        after += z;
        t->elevation[i] = (float)z;
    }
    for (int64_t i = 0; i < s->n; i++)
        after += s->p[i].c * s->vol * s->L * s->iarea;
    if (ly && ly->sediment)
        sediment_layer(s, ly->sediment);
    if (ly && ly->water)
        water_layer(s, ly->water);
    bud->material_before = plan->sum;
    bud->material_after = after;
    bud->rel_error = er_budget_rel_error(bud, plan->abs_sum);
}

er_status er_sph_init(er_sph_sim *s, const er_plan *plan, const er_terrain *t, er_budget *bud,
                      er_error *err)
{
    memset(s, 0, sizeof *s);
    s->w = t->width;
    s->h = t->height;
    s->wall = t->wall;
    s->cap = plan->p.sph.max_particles;
    set_constants(s, plan);
    er_status st = sim_alloc(s, t, s->cap, err);
    if (!st)
        st = controls(s, t->controls, err);
    char key[96];
    if (!st && fill_lattice(t, &plan->p.sph, s, bud) > s->cap)
        st = er_fail(err, ER_EINVAL, "%s needs more than sph.max_particles = %lld particles",
                     fill_key(&plan->p.sph, key, sizeof key), (long long)s->cap);
    if (!st)
        er_sph_sort(s);
    return st;
}

void er_sph_free(er_sph_sim *s)
{
    sim_free(s);
    memset(s, 0, sizeof *s);
}

/* Replaces array p with one of n elements, uninitialised (nothing in
 * the lists outlives a step, so realloc's copy is not needed); 0 when
 * out of memory (p is NULL then, for the destructor). */
#define RENEW(p, n) (free(p), ((p) = malloc((n) * sizeof *(p))) != NULL)

/* Room in the neighbour lists (and the pair records and quad records
 * beside them) for the step's particles: they only leave during its
 * sub-steps, so the lists grow here, between steps, if at all; nothing in
 * them outlives a step (each starts from a sort and fresh lists). */
static er_status lists_fit(er_sph_sim *s, er_error *err)
{
    if (s->n <= s->nb_cap)
        return ER_OK;
    int64_t cap = s->n + s->n / 2 < s->cap ? s->n + s->n / 2 : s->cap;
    size_t c = (size_t)cap, nb = ER_SPH_NB, nq = (size_t)s->nbq;
    if (!RENEW(s->nb, c * nb) || !RENEW(s->nbn, c) || !RENEW(s->bq, c * nq) ||
        !RENEW(s->bqn, c) || !RENEW(s->bqv, c * nq * 2) || !RENEW(s->sv, c * ER_SPH_NS) ||
        !RENEW(s->svj, c * ER_SPH_NS) || !RENEW(s->svn, c) || !RENEW(s->bh, c * ER_SPH_NBB) ||
        !RENEW(s->bhn, c) || !RENEW(s->vl, c * nb) || !RENEW(s->vln, c) ||
        !RENEW(s->pk, c) || !RENEW(s->acc, c))
        return er_fail(err, ER_ENOMEM, "sph: out of memory for the neighbour lists of %lld "
                       "particles", (long long)cap);
    s->nb_cap = cap;
    return ER_OK;
}

/* The flow layer's share of one sub-step: each particle on the map adds
 * vol |v_horizontal| dt on its nearest cell, the water volume times the
 * distance it moved, over the cell's area (ax ay) and a side of 1: metres
 * of water passing the cell, the flow layer's unit (core/model.h).
 * Particles in their order (sorted): the same sums for any -j. */
static void flow_add(er_sph_sim *s)
{
    for (int64_t i = 0; i < s->n; i++) {
        const er_sph_particle *q = &s->p[i];
        double cx = floor(q->x * s->ixstep + 0.5), cy = floor(q->y * s->iystep + 0.5);
        if (!(cx >= 0 && cy >= 0 && cx < s->w && cy < s->h))
            continue; /* left the map this sub-step */
        double v = sqrt(q->vx * q->vx + q->vy * q->vy);
        s->flow[(size_t)cy * (size_t)s->w + (size_t)cx] +=
            (float)(s->vol * v * s->dt * s->L * s->iarea);
    }
}

/* Points the flow and wear accumulators at the layers' buffers, zeroed. */
static void keep_layers(er_sph_sim *s, const er_layers *ly)
{
    s->flow = ly ? ly->flow : NULL;
    s->wear = ly ? ly->wear : NULL;
    if (s->flow)
        memset(s->flow, 0, er_sph_nv(s) * sizeof *s->flow);
    if (s->wear)
        memset(s->wear, 0, er_sph_nv(s) * sizeof *s->wear);
}

er_status er_sph_step(er_sph_sim *s, const er_plan *plan, int64_t step, er_budget *bud,
                      er_error *err)
{
    add_sources(s, plan, step, bud);
    er_status st0 = lists_fit(s, err);
    if (st0)
        return st0;
    for (int64_t k = 0; k < plan->own.sph.substeps; k++) {
        er_status st = er_sph_substep(s, step, bud, err);
        if (st)
            return st;
        if (s->flow)
            flow_add(s);
        bud->substeps++;
    }
    er_sph_quads_flush(s);
    er_sph_terrain_update(s, bud);
    /* a canonical boundary: particles sorted and those gone dropped, so
     * that the state a checkpoint keeps is all the next step reads */
    er_sph_sort(s);
    bud->work_done++;
    return ER_OK;
}

/* The run's state after `step` steps (core/model.h, state.h), its layers
 * drawn into lay (3 * w * h floats), its section in *x. */
static void state_view(const er_sph_sim *s, const er_plan *plan, const er_terrain *t,
                       const er_budget *bud, int64_t step, float *lay, er_run_extra *x,
                       er_run_state *v)
{
    const size_t nv = er_sph_nv(s);
    for (size_t i = 0; i < nv; i++)
        lay[i] = (float)height_at(s, t, i);
    water_layer(s, lay + nv);
    sediment_layer(s, lay + 2 * nv);
    memset(x, 0, sizeof *x);
    x->count[0] = (uint64_t)s->n;
    x->count[1] = ER_MAX_SOURCES + 1;
    x->n_parts = ER_SPH_PARTS;
    const double *part[ER_SPH_PARTS] = {(const double *)(const void *)s->p, s->zb, s->dz,
                                        s->dep, s->pending};
    const size_t len[ER_SPH_PARTS] = {(size_t)s->n * ER_SPH_PARTICLE_DOUBLES, nv, nv, nv,
                                      ER_MAX_SOURCES + 1};
    for (int k = 0; k < ER_SPH_PARTS; k++) {
        x->part[k] = part[k];
        x->len[k] = len[k];
    }
    memset(v, 0, sizeof *v);
    v->model = plan->p.model;
    v->width = s->w;
    v->height = s->h;
    v->boundary = v->done = step;
    v->boundaries = v->total = plan->boundaries;
    v->budget = *bud;
    v->budget.material_before = plan->sum;
    v->budget.material_after = v->budget.rel_error = 0.0;
    v->n_arrays = ER_STATE_SPH_ARRAYS;
    for (int k = 0; k < 3; k++)
        v->array[k] = lay + (size_t)k * nv;
    v->array[ER_STATE_SPH_WEAR] = s->wear;
    v->array[ER_STATE_SPH_FLOW] = s->flow;
    v->extra = x;
}

int er_sph_section_of(const er_run_state *r, er_sph_section *q)
{
    const er_run_extra *x = r->extra;
    memset(q, 0, sizeof *q);
    if (!x || x->count[0] > (uint64_t)INT64_MAX / ER_SPH_PARTICLE_DOUBLES ||
        x->count[1] > ER_MAX_SOURCES + 1)
        return -1;
    const size_t nv = (size_t)r->width * (size_t)r->height;
    const size_t len[ER_SPH_PARTS] = {(size_t)x->count[0] * ER_SPH_PARTICLE_DOUBLES, nv, nv, nv,
                                      (size_t)x->count[1]};
    const double *at[ER_SPH_PARTS];
    if (er_extra_split(x, len, ER_SPH_PARTS, at))
        return -1;
    q->n = (int64_t)x->count[0];
    q->particles = (const er_sph_particle *)(const void *)at[ER_SPH_PART_PARTICLES];
    q->zb = at[ER_SPH_PART_ZB];
    q->dz = at[ER_SPH_PART_DZ];
    q->dep = at[ER_SPH_PART_DEP];
    q->n_pending = (int)x->count[1];
    q->pending = at[ER_SPH_PART_PENDING];
    return 0;
}


/* Replaces the fresh state by the resumed one r (checked by
 * er_plan_check_resume on t, the run's terrain: its particles within
 * s->cap = sph.max_particles); the boundary particles follow from the
 * heights. */
static er_status restore(er_sph_sim *s, const er_plan *plan, const er_terrain *t,
                         const er_run_state *r, er_budget *bud, er_error *err)
{
    const er_layers keep = {NULL, NULL, s->flow, s->wear};
    er_status st = er_plan_check_resume(plan, t, r, &keep, err);
    if (st)
        return st;
    er_sph_section q;
    er_sph_section_of(r, &q); /* checked above */
    const size_t nv = er_sph_nv(s);
    s->n = q.n;
    memcpy(s->p, q.particles, (size_t)q.n * sizeof *s->p);
    memcpy(s->zb, q.zb, nv * sizeof *s->zb);
    memcpy(s->dz, q.dz, nv * sizeof *s->dz);
    memcpy(s->dep, q.dep, nv * sizeof *s->dep);
    memcpy(s->pending, q.pending, (size_t)q.n_pending * sizeof *s->pending);
    if (s->wear)
        memcpy(s->wear, r->array[ER_STATE_SPH_WEAR], nv * sizeof *s->wear);
    if (s->flow)
        memcpy(s->flow, r->array[ER_STATE_SPH_FLOW], nv * sizeof *s->flow);
    er_sph_boundary_heights(s, 0, 0, s->w - 2, s->h - 2);
    er_sph_sort(s);
    *bud = r->budget;
    return ER_OK;
}

/* A run through the driver (core/drive.h). */
typedef struct sph_run {
    er_sph_sim s;
    const er_plan *plan;
    er_terrain *t;
    er_layers *layers;
    float *lay;      /* a view's layers (3 * w * h floats) */
    er_run_extra x;  /* a view's model section */
} sph_run;

static er_status run_init(void *run, void *backend, const er_plan *plan, er_terrain *t,
                          const er_run_opts *o, er_budget *bud, er_error *err)
{
    (void)backend; /* the CPU */
    _Static_assert(sizeof(er_sph_particle) == ER_SPH_PARTICLE_DOUBLES * sizeof(double),
                   "the state's particles are the particle array");
    sph_run *r = run;
    r->plan = plan;
    r->t = t;
    r->layers = o->layers;
    er_status st = er_sph_init(&r->s, plan, t, bud, err);
    if (st)
        return st;
    keep_layers(&r->s, o->layers);
    if (o->hooks && o->hooks->boundary && !(r->lay = malloc(3 * er_sph_nv(&r->s) * sizeof *r->lay)))
        return er_fail(err, ER_ENOMEM, "sph: out of memory for the run state");
    return ER_OK;
}

static er_status run_load(void *run, const er_run_state *rs, er_budget *bud, er_error *err)
{
    sph_run *r = run;
    return restore(&r->s, r->plan, r->t, rs, bud, err);
}

static er_status run_advance(void *run, int64_t b, er_drive *d, er_budget *bud, int64_t *to,
                             er_error *err)
{
    sph_run *r = run;
    (void)d;
    *to = b + 1;
    return er_sph_step(&r->s, r->plan, b, bud, err);
}

static er_status run_view(void *run, int64_t b, const er_budget *bud, er_run_state *v,
                          er_error *err)
{
    sph_run *r = run;
    (void)err;
    state_view(&r->s, r->plan, r->t, bud, b, r->lay, &r->x, v);
    return ER_OK;
}

static er_status run_finish(void *run, er_status st, int started, er_budget *bud, er_error *err)
{
    sph_run *r = run;
    (void)err;
    if (st != ER_ENOMEM && started)
        finish(&r->s, r->plan, r->t, r->layers, bud);
    return st;
}

static void run_release(void *run)
{
    sph_run *r = run;
    free(r->lay);
    er_sph_free(&r->s);
}

const er_model_steps er_sph_steps = {
    .size = sizeof(sph_run),
    .init = run_init,
    .load = run_load,
    .advance = run_advance,
    .view = run_view,
    .finish = run_finish,
    .release = run_release,
};
