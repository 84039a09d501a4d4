/*
 * Mei et al. (2007) eqs. 10-12 (erosion and deposition, §3.3) and an
 * optional thermal weathering term, both applied to the terrain of one row
 * from the old terrain (Jacobi style).
 *
 * Units.  The paper prints eqs. 11-12 without dt; here Ks and Kd are rates
 * per second, so one step dissolves min(1, Ks dt) of the capacity deficit
 * and deposits min(1, Kd dt) of the excess.  A step never dissolves more
 * than the deficit nor deposits more than is suspended.
 *
 * Capacity.  C (eq. 10) is a height of material [m].  As printed,
 * C = Kc [s] sin(alpha) |v| [m/s].  The pipe model has no friction, so
 * on a slope the flow speeds up until eq. 4 limits it: the cell then
 * drains fully every step and |v| = lX / dt, a number of the scheme and
 * not of the terrain, so C (and erosion per second) grows as 1 / dt.
 * What the scheme does fix is the discharge: |v| dbar is, by eqs. 8-9,
 * the volume crossing the cell per second and per metre of width, set by
 * the rain upstream (mass balance), whatever dt.  With capacity_depth
 * = D > 0 the capacity is therefore C = Kc sin(alpha) |v| dbar / D: water
 * D deep carries what eq. 10 gives at its speed, shallower water less,
 * deeper water more (a stream-power law, q S; no cap, since any cap on
 * the depth factor brings |v| = lX / dt back in deep channels).  With
 * D = 0 eq. 10 is used as printed and its results depend on dt.
 *
 * Holes.  One step removes at most max_erosion_depth from a cell and never
 * takes it below its lowest terrain neighbour, so erosion cannot dig a pit
 * in one step (pits only form where deposition raises the surroundings);
 * such a pit has no fall (see fall()), so it deposits and fills rather
 * than deepening.  Water and sediment never go negative.
 *
 * Exact exchange.  The terrain is kept as its change z since the start
 * (b = b0 + z).  The change is applied to z first, and the amount that z
 * actually lost or gained (z - z_new, exact by Sterbenz's lemma) is what
 * enters or leaves the suspended sediment, so b + s is conserved to the
 * precision of z and s, not of b.
 */
#include "mei_internal.h"

#include <math.h>

/* Thermal weathering for the pair (cell, neighbour): what the cell gains
 * from a neighbour higher by more than `talus`, minus what it gives to one
 * lower by more.  dn = b_neighbour - b_cell; the neighbour computes -dn
 * and so exactly the opposite amount. */
static inline float talus_gain(float dn, float talus)
{
    return er_max0(dn - talus) - er_max0(-dn - talus);
}

/* talus_gain with the control maps: what slumps in from the neighbour
 * times f_in = w_n m_c, what slumps out times f_out = w_c m_n, where
 * w = (1 - hardness) mask (core/controls.h: slumping out of a cell times
 * 1 - h, every slumping in or out times m).  The neighbour evaluates the
 * same products with the roles swapped, so the pair still exchanges
 * exactly opposite amounts; with f_in = f_out = 1 it is talus_gain. */
static inline float talus_pair(float dn, float talus, float f_in, float f_out)
{
    return er_max0(dn - talus) * f_in - er_max0(-dn - talus) * f_out;
}

/* The terrain's fall from a cell along one axis, towards its lower
 * neighbour a or b (0 in a pit).  The slope of eq. 10 is built from these
 * rather than from central differences, which ignore the cell's own
 * height: with them a cell eroded below both neighbours would still see
 * the slope of the channel, keep its capacity and deepen into a closed
 * pit (step-pool beds).  With the fall a pit has sin(alpha) = min_tilt,
 * so it deposits and fills. */
static inline float fall(float bc, float a, float b)
{
    return er_max0(er_maxf(bc - a, bc - b));
}

/* Eqs. 10-12 for one cell: zc the terrain change so far, (gx, gy) the
 * terrain gradient, dm the mean water depth of the step (eq. 9), lim the deepest this step may
 * erode, thermal the weathering gain, ks and kd the cell's fractions
 * dissolved and deposited (k->ks_dt, k->kd_dt scaled by its control maps).
 * Written with selects only, so that the span loops vectorise. */
static inline void erode_cell(const er_mei_coef *k, float zc, float gx, float gy, float u,
                              float v, float dm, float s, float lim, float thermal, float ks,
                              float kd, float *znew, float *s1, float *er, float *de)
{
    /* eq. 10: sin(alpha) = sqrt(t2 / (1 + t2)) for t2 = |grad b|^2, and
     * max(sin(alpha), min_tilt) |v| = sqrt(max(t2 / (1 + t2), min_tilt^2) |v|^2):
     * one square root instead of two */
    float t2 = gx * gx + gy * gy;
    float sin2 = er_maxf(t2 / (1.0f + t2), k->min_tilt2);
    float depth = dm * k->inv_cd + k->cd_off; /* |v| dm / D, or |v| */
    float cap = k->kc * er_sqrt(sin2 * (u * u + v * v)) * depth;
    float e = er_minf(er_minf(ks * (cap - s), k->emax), lim);
    float ze = zc - e;                     /* eq. 11a */
    float ea = zc - ze;
    float zd = zc + kd * (s - cap);        /* eq. 12a */
    float da = zd - zc;
    int erode = cap > s;
    float s_e = s + ea, s_d = er_max0(s - da); /* eqs. 11b, 12b */
    *er = erode ? ea : 0.0f;
    *de = erode ? 0.0f : da;
    *s1 = erode ? s_e : s_d;
    *znew = (erode ? ze : zd) + thermal;
}

static void erode_generic(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                          int x, const float *u, const float *v, const float *dm,
                          float *z, float *s1, float *er, float *de)
{
    const int w = sim->w;
    er[x] = de[x] = 0.0f;
    if (r->wall[1] && r->wall[1][x]) {
        z[x] = 0.0f;
        s1[x] = 0.0f;
        return;
    }
    const int ny[4] = { 1, 1, 0, 2 };
    const int nx[4] = { x - 1, x + 1, x, x };
    float bn[4] = { 0, 0, 0, 0 };
    int ok[4];
    for (int i = 0; i < 4; i++) {
        int j = ny[i], c = nx[i];
        ok[i] = r->b[j] && c >= 0 && c < w && !(r->wall[j] && r->wall[j][c]);
        if (ok[i])
            bn[i] = r->b[j][c];
    }
    float bc = r->b[1][x];
    /* the fall per axis (see fall()); beside an edge or a wall the one
     * neighbour's difference either way (the terrain continues) */
    float fl[2];
    for (int p = 0; p < 2; p++) {
        int a = 2 * p, c = 2 * p + 1;
        fl[p] = ok[a] && ok[c] ? fall(bc, bn[a], bn[c])
              : ok[a]          ? er_maxf(bc - bn[a], bn[a] - bc)
              : ok[c]          ? er_maxf(bc - bn[c], bn[c] - bc) : 0.0f;
    }
    float gx = fl[0] * k->invlx, gy = fl[1] * k->invly;
    /* lowest neighbour: (L, R) then (T, B), the same order as the fast path */
    float lo[2];
    int any[2];
    for (int p = 0; p < 2; p++) {
        int a = 2 * p, c = 2 * p + 1;
        any[p] = ok[a] || ok[c];
        lo[p] = ok[a] && ok[c] ? er_minf(bn[a], bn[c]) : ok[a] ? bn[a] : bn[c];
    }
    float lim = 0.0f;
    if (any[0] || any[1]) {
        float m = any[0] && any[1] ? er_minf(lo[0], lo[1]) : any[0] ? lo[0] : lo[1];
        lim = er_max0(bc - m);
    }
    /* control maps (neutral without them: soft 1, mask 1, which changes no bit) */
    const float mc = er_ctl_at(r->mask, 1, x, 1.0f);
    const float wc = (1.0f - er_ctl_at(r->hard, 1, x, 0.0f)) * mc;
    float th = 0.0f;
    if (k->th_k > 0.0f) {
        float g[4] = { 0, 0, 0, 0 };
        const float tal[4] = { k->talus_x, k->talus_x, k->talus_y, k->talus_y };
        for (int i = 0; i < 4; i++)
            if (ok[i]) {
                float mn = er_ctl_at(r->mask, ny[i], nx[i], 1.0f);
                float wn = (1.0f - er_ctl_at(r->hard, ny[i], nx[i], 0.0f)) * mn;
                g[i] = talus_pair(bn[i] - bc, tal[i], wn * mc, wc * mn);
            }
        th = k->th_k * ((g[ER_L] + g[ER_R]) + (g[ER_T] + g[ER_B]));
    }
    erode_cell(k, z[x], gx, gy, u[x], v[x], dm[x], r->s[x], lim, th, k->ks_dt * wc,
               k->kd_dt * mc, &z[x], &s1[x], &er[x], &de[x]);
}

/* erode_cell for a run of cells [x0, x1) of an interior row whose four
 * neighbours are all terrain (central differences, no tests); bu, bc, bd
 * are the terrain rows above, at and below; zc holds the row's change so
 * far and receives the new one. */
static ER_NOINLINE ER_CLONES void erode_span(const er_mei_coef *k, int x0, int x1,
                                             const float *restrict bu,
                                             const float *restrict bc,
                                             const float *restrict bd,
                                             float *restrict zc,
                                             const float *restrict sc,
                                             const float *restrict uu,
                                             const float *restrict vv,
                                             const float *restrict dm,
                                             float *restrict so, float *restrict ero,
                                             float *restrict dep)
{
    const float invlx = k->invlx, invly = k->invly;
    const float th_k = k->th_k, tx = k->talus_x, ty = k->talus_y;
    if (th_k > 0.0f) {
        for (int i = x0; i < x1; i++) {
            float bl = bc[i - 1], br = bc[i + 1], bt = bu[i], bb = bd[i], b0 = bc[i];
            float gx = fall(b0, bl, br) * invlx, gy = fall(b0, bt, bb) * invly;
            float m = er_minf(er_minf(bl, br), er_minf(bt, bb));
            float th = th_k * ((talus_gain(bl - b0, tx) + talus_gain(br - b0, tx)) +
                               (talus_gain(bt - b0, ty) + talus_gain(bb - b0, ty)));
            erode_cell(k, zc[i], gx, gy, uu[i], vv[i], dm[i], sc[i], er_max0(b0 - m), th,
                       k->ks_dt, k->kd_dt, &zc[i], &so[i], &ero[i], &dep[i]);
        }
    } else {
        for (int i = x0; i < x1; i++) {
            float bl = bc[i - 1], br = bc[i + 1], bt = bu[i], bb = bd[i], b0 = bc[i];
            float gx = fall(b0, bl, br) * invlx, gy = fall(b0, bt, bb) * invly;
            float m = er_minf(er_minf(bl, br), er_minf(bt, bb));
            erode_cell(k, zc[i], gx, gy, uu[i], vv[i], dm[i], sc[i], er_max0(b0 - m), 0.0f,
                       k->ks_dt, k->kd_dt, &zc[i], &so[i], &ero[i], &dep[i]);
        }
    }
}

/* erode_span with the hardness (ha, hc, hb: rows above, at, below) and
 * mask (ma, mc, mb) rows: the expressions of erode_generic's control maps,
 * so the same bits, as a loop that vectorises. */
static ER_NOINLINE ER_CLONES void erode_span_ctl(const er_mei_coef *k, int x0, int x1,
                                                 const float *restrict bu,
                                                 const float *restrict bc,
                                                 const float *restrict bd,
                                                 float *restrict zc, const float *restrict sc,
                                                 const float *restrict uu,
                                                 const float *restrict vv,
                                                 const float *restrict dm,
                                                 float *restrict so, float *restrict ero,
                                                 float *restrict dep,
                                                 const float *restrict ha,
                                                 const float *restrict hc,
                                                 const float *restrict hb,
                                                 const float *restrict ma,
                                                 const float *restrict mc,
                                                 const float *restrict mb)
{
    const float invlx = k->invlx, invly = k->invly;
    const float th_k = k->th_k, tx = k->talus_x, ty = k->talus_y;
#define ER_CTL_CELL(thermal)                                                                \
    for (int i = x0; i < x1; i++) {                                                         \
        float bl = bc[i - 1], br = bc[i + 1], bt = bu[i], bb = bd[i], b0 = bc[i];           \
        float gx = fall(b0, bl, br) * invlx, gy = fall(b0, bt, bb) * invly;                 \
        float m = er_minf(er_minf(bl, br), er_minf(bt, bb));                                \
        float m0 = mc[i], w0 = (1.0f - hc[i]) * m0, th = 0.0f;                              \
        if (thermal) {                                                                      \
            float wl = (1.0f - hc[i - 1]) * mc[i - 1], wr = (1.0f - hc[i + 1]) * mc[i + 1]; \
            float wt = (1.0f - ha[i]) * ma[i], wb = (1.0f - hb[i]) * mb[i];                 \
            th = th_k * ((talus_pair(bl - b0, tx, wl * m0, w0 * mc[i - 1]) +                \
                          talus_pair(br - b0, tx, wr * m0, w0 * mc[i + 1])) +               \
                         (talus_pair(bt - b0, ty, wt * m0, w0 * ma[i]) +                    \
                          talus_pair(bb - b0, ty, wb * m0, w0 * mb[i])));                   \
        }                                                                                   \
        erode_cell(k, zc[i], gx, gy, uu[i], vv[i], dm[i], sc[i], er_max0(b0 - m), th,       \
                   k->ks_dt * w0, k->kd_dt * m0, &zc[i], &so[i], &ero[i], &dep[i]);         \
    }
    /* one loop with thermal weathering, one without, as in erode_span */
    if (th_k > 0.0f) {
        ER_CTL_CELL(1)
    } else {
        ER_CTL_CELL(0)
    }
#undef ER_CTL_CELL
}

void er_mei_erode_row(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                      const float *u, const float *v, const float *dm, float *z,
                      float *s1, float *er, float *de)
{
    const int w = sim->w;
    const int interior = r->b[0] && r->b[2];
    int x = 0;
    while (x < w) {
        int end;
        if (!interior || !er_mei_run_from(sim, r, x, &end)) {
            erode_generic(sim, k, r, x, u, v, dm, z, s1, er, de);
            x++;
            continue;
        }
        if (r->hard[1])
            erode_span_ctl(k, x, end, r->b[0], r->b[1], r->b[2], z, r->s, u, v, dm, s1, er, de,
                           r->hard[0], r->hard[1], r->hard[2], r->mask[0], r->mask[1],
                           r->mask[2]);
        else
            erode_span(k, x, end, r->b[0], r->b[1], r->b[2], z, r->s, u, v, dm, s1, er, de);
        x = end;
    }
}
