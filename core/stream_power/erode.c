/*
 * Fluvial incision and deposition of one step (sp_internal.h
 * er_sp_incise), on the routing of er_sp_route.
 *
 * The stream-power law dh/dt = -K A^m S^n (Howard 1994), implicit in time
 * along the stack (Braun and Willett 2013, eq. 8 and its Newton form):
 * going down the stack, a cell's receiver r already holds its new height,
 * so with S = (h_i' - h_r') / L the new height solves
 *     delta + F delta^n = h_i - h_r',   delta = h_i' - h_r' >= 0,
 *     F = K dt A^m / L^n,
 * directly for n = 1 (delta = (h_i - h_r') / (1 + F)) and by Newton's
 * method, kept inside [0, h_i - h_r'], for n != 1 (the left side grows
 * with delta, so the root is unique).  Any dt is stable: a cell never
 * drops below its receiver.  K = K_f (1 - hardness) mask (1 + L xi), the
 * last factor the rock's (lithology.c).  With a channel-head threshold
 * a_c (stream_power.channel_head) F is multiplied by 1 - a_c / a where
 * the specific drainage area a = A / b (b the width the water crosses, a
 * cell's) exceeds a_c, and is 0 below: the hillslopes above the channel
 * heads do not incise and creep instead (diffuse.c), and the incision
 * grows from nothing at a channel head to K A^m S^n downstream.  Not a
 * threshold on A: on a hillslope, where the water runs in parallel
 * strips, a D8 cell's A is a strip one cell wide, L b from the divide, so
 * an A_c in m^2 puts the channel heads L = A_c / b from the divides, four
 * times as far on 5 m cells as on 20 m ones; a = L there, the same at any
 * cell size.  Without it every cell, even one draining only itself, is a
 * river, and a hillslope's steady gradient grows as dx^(-2m/n) when the
 * cells shrink (Montgomery and Dietrich 1988 place channel heads where
 * the area per unit contour width passes a threshold that falls with the
 * slope; one threshold is the simplest form).  With a channel width
 * (stream_power.channel_width) F is multiplied by min(1, w / b), w = w_1
 * (A / 1 km^2)^b_w the river's width by downstream hydraulic geometry
 * (Leopold and Maddock 1953): the law is the lowering of the river's bed,
 * and a cell wider than the river lowers at its share (the volume a river
 * removes per metre of its length then does not grow with the cell).  A lake cell
 * (below its basin's level, route.c) is under water and does not incise;
 * a cell draining into a lake incises towards the lake's surface.
 *
 * Deposition with G > 0 (Yuan, Braun, Guerit, Rouby and Cordonnier 2019,
 * eq. 5: dh/dt = U - K A^m S^n + (G / A) Q_s, Q_s the sediment flux).
 * The sediment is routed up the stack afterwards, in the same step: a
 * land cell i receives the flux of its donors plus what it eroded, Q, and
 * keeps
 *     d = G r mask Q / (1 + G r mask),   r = a / A_i,
 * so that d = G r mask (Q - d): the deposition rate G Q_s / A with the
 * flux Q_s = Q - d that leaves the cell (at steady state, the flux of all
 * the uplift upstream, U A, so K A^m S^n = (1 + G) U as in the paper's
 * steady state).  d < Q for any G and dt: never more than arrives.  A
 * lake traps all it receives: each closed basin's lake fills, lowest
 * cells first, to the level that holds the sediment (each cell by its
 * mask), and what its lake cannot hold passes on over the pass.  With
 * G = 0 (detachment-limited) nothing is deposited and everything eroded
 * leaves the map at base level.
 * Sums run along the stack within a block and are added in block order
 * (er_sp_incise): the same for any thread count.
 */
#include <math.h>
#include <stdlib.h>

#include "../parallel.h"
#include "sp_internal.h"


double er_sp_width_share(const er_sp_sim *s, double cells)
{
    if (!(s->width_w1 > 0.0))
        return 1.0;
    const double w = s->width_w1 * er_sp_pow(cells * s->area * 1e-6, s->width_b);
    return w < s->dx ? w / s->dx : 1.0;
}

/* A^m for cell i times the share of the cell its channel covers: a^m
 * acc^m, acc^m from the table for whole counts. */
static inline double area_m(const er_sp_sim *s, int32_t i, double m)
{
    const double c = s->acc[i];
    if (s->pow_tab && c < (double)ER_SP_POW_TABLE)
        return s->pow_a * s->pow_tab[(int32_t)c];
    return s->pow_a * er_sp_pow(c, m) * er_sp_width_share(s, c);
}

/* The root delta in [0, d] of delta + f delta^n = d (d > 0, f > 0). */
static double newton(double d, double f, double n)
{
    double lo = 0.0, hi = d;
    /* the solution of the linearised law at the start: close for n ~ 1 */
    double x = n > 1.0 ? d : d / (1.0 + f * er_sp_pow(d, n - 1.0));
    for (int it = 0; it < 100; it++) {
        const double xn = er_sp_pow(x, n);
        const double g = x + f * xn - d;
        if (g > 0.0)
            hi = x;
        else if (g < 0.0)
            lo = x;
        else
            return x;
        const double dg = 1.0 + f * n * (x > 0.0 ? xn / x : 0.0);
        double nx = x - g / dg;
        if (!(nx > lo && nx < hi))
            nx = 0.5 * (lo + hi);
        if (fabs(nx - x) <= 1e-14 * d)
            return nx;
        x = nx;
    }
    return x;
}

/* The distance [m] from cell i to cell j. */
static double dist(const er_sp_sim *s, int32_t i, int32_t j)
{
    const double ddx = (double)(i % s->w - j % s->w) * s->dx;
    const double ddy = (double)(i / s->w - j / s->w) * s->dy;
    return sqrt(ddx * ddx + ddy * ddy);
}

static int fan_cmp(const void *pa, const void *pb)
{
    const er_sp_lake *a = pa, *b = pb;
    if (a->z != b->z)
        return a->z < b->z ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/*
 * stream_power.fan_slope > 0: lake b's sediment laid as a fan rising from
 * its outlet, z_f + slope * d (d a cell's distance to the pass), z_f at
 * most the lake's level (a full fan passes through the spill point, its
 * far cells above the old lake's surface), so that a filled basin drains
 * to its outlet over a gentle floor rather than standing as a dead-flat
 * plain.  A fan over heights z is a level fill over z' = z - slope * d:
 * the lake's list (route.c lakes(), read only here, once a step) takes z'
 * and is sorted by it, then filled lowest first as fill_lake does.  Adds
 * what it put to *dep; returns what does not fit.
 */
static double fill_fan(er_sp_sim *s, er_sp_basin *b, double v, double slope, double *dep)
{
    er_sp_lake *l = s->lakes + b->lake0;
    const int32_t k_n = b->nlake;
    for (int32_t k = 0; k < k_n; k++)
        l[k].z = s->z[l[k].i] - slope * dist(s, l[k].i, b->x);
    qsort(l, (size_t)k_n, sizeof *l, fan_cmp);
    double vol = 0.0, wsum = 0.0, zf = b->level;
    for (int32_t k = 0; k < k_n; k++) {
        wsum += s->mask ? (double)s->mask[l[k].i] : 1.0;
        const double top = k + 1 < k_n && l[k + 1].z < b->level ? l[k + 1].z : b->level;
        const double more = wsum * (top - l[k].z);
        if (wsum > 0.0 && vol + more >= v) {
            zf = l[k].z + (v - vol) / wsum;
            break;
        }
        vol += more;
        if (top >= b->level)
            break;
    }
    double put = 0.0;
    for (int32_t k = 0; k < k_n && l[k].z < zf; k++) {
        const int32_t i = l[k].i;
        const double d = (s->mask ? (double)s->mask[i] : 1.0) * (zf - l[k].z);
        s->z[i] += d;
        put += d;
        if (s->dep)
            s->dep[i] += (float)d;
    }
    *dep += put;
    return v - put;
}

/* Fills lake b with v [m * cells] of sediment, lowest cells first, up to
 * its level; adds what it put to *dep and returns what does not fit.  The
 * heights it reaches are those where sum mask (z_f - z) = v. */
static double fill_lake(er_sp_sim *s, er_sp_basin *b, double v, double slope, double *dep)
{
    if (!(v > 0.0) || b->nlake == 0)
        return v;
    if (slope > 0.0)
        return fill_fan(s, b, v, slope, dep);
    const er_sp_lake *l = s->lakes + b->lake0;
    const int32_t k_n = b->nlake;
    double vol = 0.0, wsum = 0.0, zf = b->level;
    for (int32_t k = 0; k < k_n; k++) {
        wsum += s->mask ? (double)s->mask[l[k].i] : 1.0;
        const double top = k + 1 < k_n ? l[k + 1].z : b->level;
        const double more = wsum * (top - l[k].z);
        if (wsum > 0.0 && vol + more >= v) {
            zf = l[k].z + (v - vol) / wsum;
            break;
        }
        vol += more;
    }
    double put = 0.0;
    for (int32_t k = 0; k < k_n && l[k].z < zf; k++) {
        const int32_t i = l[k].i;
        const double mk = s->mask ? (double)s->mask[i] : 1.0;
        const double d = mk * (zf - l[k].z);
        s->z[i] += d;
        put += d;
        if (s->dep)
            s->dep[i] += (float)d;
    }
    *dep += put;
    return v - put;
}

/* Routes the sediment up block r of the stack: what each cell eroded (in
 * q) plus its donors' outflow; lakes trap, land cells keep their share.
 * Adds to *dep what it deposits and to *left what reaches base level;
 * returns what leaves the block's first cell for another block. */
static double deposit_block(er_sp_sim *s, int64_t r, double g, double fan, double *dep,
                            double *left)
{
    for (int64_t k = s->root_at[r + 1] - 1; k >= s->root_at[r]; k--) {
        const int32_t i = s->stack[k], rc = er_sp_rcv(s, i);
        double out = s->q[i];
        if (s->kind[i] == ER_SP_BASE) {
            *left += out;
            continue;
        }
        er_sp_basin *b = &s->basins[s->basin[i]];
        if (s->lake[i]) {
            b->pool += out;
            out = 0.0;
        }
        if (s->basin[i] > 0 && i == b->x && b->parent >= 0) {
            out += fill_lake(s, b, b->pool, fan, dep);
            b->pool = 0.0;
        }
        if (!s->lake[i] && out > 0.0) {
            const double mk = s->mask ? (double)s->mask[i] : 1.0;
            const double gr = s->acc[i] > 0.0 ? g * mk / s->acc[i] : g * mk;
            const double d = rc == i ? out : gr * out / (1.0 + gr);
            s->z[i] += d;
            *dep += d;
            if (s->dep)
                s->dep[i] += (float)d;
            out -= d;
        }
        if (k == s->root_at[r])
            return rc != i ? out : 0.0;
        s->q[rc] += out;
    }
    return 0.0;
}

/* The stream-power law down block r; returns what it eroded. */
static double incise_block(er_sp_sim *s, int64_t r, const er_stream_power_params *p,
                           const double *ln, int dep)
{
    const double n = p->n, kdt = p->k * p->dt;
    const int linear = n == 1.0;
    double eroded = 0.0;
    for (int64_t k = s->root_at[r]; k < s->root_at[r + 1]; k++) {
        const int32_t i = s->stack[k], rc = er_sp_rcv(s, i);
        if (s->kind[i] != ER_SP_FREE || s->lake[i] || rc == i)
            continue;
        const double zr = s->lake[rc] ? s->basins[s->basin[rc]].level : s->z[rc];
        const double d = s->z[i] - zr;
        const double kk = kdt * (s->ks ? (double)s->ks[i] : 1.0);
        if (!(d > 0.0) || !(kk > 0.0) || !(s->acc[i] > 0.0))
            continue;
        double f = kk * area_m(s, i, p->m) / ln[s->rdir[i]];
        if (p->channel_head > 0.0) {
            /* the specific drainage area A / b, b the flow's width, a cell */
            const double a = s->acc[i] * s->area / s->dx;
            f *= a > p->channel_head ? 1.0 - p->channel_head / a : 0.0;
        }
        const double delta = linear ? d / (1.0 + f) : newton(d, f, n);
        const double z0 = s->z[i];
        s->z[i] = zr + delta;
        const double e = z0 - s->z[i]; /* the change as stored: the budget is exact */
        eroded += e;
        if (dep)
            s->q[i] = e;
        if (s->wear)
            s->wear[i] += (float)e;
    }
    return eroded;
}

/* What the walks over the blocks (walk.c) need. */
typedef struct incise_ctx {
    const er_stream_power_params *p;
    const double *ln;
    int dep;
} incise_ctx;

static void incise_fn(er_sp_sim *s, int64_t r, void *ctx)
{
    const incise_ctx *c = ctx;
    s->rsum[3 * r] = incise_block(s, r, c->p, c->ln, c->dep);
}

static void deposit_fn(er_sp_sim *s, int64_t r, void *ctx)
{
    const incise_ctx *c = ctx;
    double *sum = s->rsum + 3 * r;
    sum[1] = sum[2] = 0.0;
    sum[0] = deposit_block(s, r, c->p->g, c->p->fan_slope, &sum[1], &sum[2]);
}

/* What leaves block r (a closed basin's) added to the cell it drains into. */
static void deposit_link(er_sp_sim *s, int64_t r, void *ctx)
{
    (void)ctx;
    const int32_t c = s->stack[s->root_at[r]], rc = er_sp_rcv(s, c);
    if (rc != c)
        s->q[rc] += s->rsum[3 * r];
}

void er_sp_incise(er_sp_sim *s, const er_stream_power_params *p, er_sp_tally *t)
{
    const int linear = p->n == 1.0, dep = p->g > 0.0;
    /* the distance to the receiver in direction k, to the power n */
    double ln[8];
    for (int k = 0; k < 8; k++) {
        const double l = er_sp_step(s, k);
        ln[k] = linear ? l : er_sp_pow(l, p->n);
    }
    const double *sum = s->rsum;
    incise_ctx c = {p, ln, dep};
    if (dep) {
        ER_OMP_FOR()
        for (int64_t i = 0; i < s->n; i++)
            s->q[i] = 0.0;
        for (int64_t b = 0; b < s->nbasins; b++)
            s->basins[b].pool = 0.0;
    }
    /* Each block is solved by one thread (walk.c), its sums kept apart and
     * added in block order afterwards, the same for any thread count.
     * Down the blocks for the incision, which needs the receivers' new
     * heights; up them for the sediment, which needs the donors' outflow. */
    er_sp_walk_down(s, incise_fn, &c);
    double eroded = 0.0;
    for (int64_t r = 0; r < s->nroots; r++)
        eroded += sum[3 * r];
    t->eroded += eroded;
    if (!dep) {
        t->left += eroded;
        return;
    }
    er_sp_walk_up(s, deposit_fn, deposit_link, &c);
    for (int64_t r = 0; r < s->nroots; r++) {
        t->deposited += sum[3 * r + 1];
        t->left += sum[3 * r + 2];
    }
}
