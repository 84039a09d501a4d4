/*
 * Mei et al. (2007) eqs. 13-14: the suspended sediment moves with the
 * water (§3.4), then cells that evaporated dry drop what they carry.
 *
 * Conservative scheme (the default): donor-cell upwind transport driven by
 * the pipe fluxes.  Through pipe i a cell sends the fraction q_i dt / d1
 * of its water (eqs. 5-7), and with it the same fraction of its sediment
 * s1.  The receiver evaluates the very same product from the donor's
 * values, so what leaves one cell enters its neighbour bit for bit, or
 * leaves the map through an open edge (counted).  The fractions of one
 * cell add up to at most 1 (eq. 4), so s stays non-negative.
 *
 * Semi-Lagrangian scheme (the paper's eq. 14): s(x) = s1(x - u dt, y - v dt),
 * bilinear from the 2x2 cells around the departure point, which the CFL
 * bound dt |u| <= lX keeps within the 3x3 neighbourhood; off the map or on
 * a wall the cell's own value is used.  It is not conservative (the budget
 * shows by how much); what leaves through open edges is counted as for
 * the conservative scheme (count_left).
 */
#include "mei_internal.h"

#include <math.h>

/* Bit 31 is set exactly when f is not finite (exponent all ones): a form
 * that an OR over a whole row can vectorise. */
static inline uint32_t nonfinite(float f)
{
    return (er_float_bits(f) & 0x7f800000u) + 0x00800000u;
}

static float sl_sample(const er_mei_sim *sim, const er_mei_rows *r, int x, int row, int xs)
{
    const float *s = r->s1[row];
    if (!s || xs < 0 || xs >= sim->w || (r->wall[row] && r->wall[row][xs]))
        return r->s1[1][x];
    return s[xs];
}

/* Eq. 14 with the departure point at most one cell away. */
static float semi_lagrangian_cell(const er_mei_sim *sim, const er_mei_coef *k,
                                  const er_mei_rows *r, int x, float u, float v)
{
    float ax = er_minf(er_maxf(u * k->dt_lx, -1.0f), 1.0f);
    float ay = er_minf(er_maxf(v * k->dt_ly, -1.0f), 1.0f);
    int xs = ax > 0.0f ? x - 1 : x + 1;
    int ys = ay > 0.0f ? 0 : 2; /* row above or below in r->s1 */
    float fx = fabsf(ax), fy = fabsf(ay);
    float r0 = (1.0f - fx) * sl_sample(sim, r, x, 1, x) + fx * sl_sample(sim, r, x, 1, xs);
    float r1 = (1.0f - fx) * sl_sample(sim, r, x, ys, x) + fx * sl_sample(sim, r, x, ys, xs);
    return er_max0((1.0f - fy) * r0 + fy * r1);
}

/* What a cell beside an open edge sends through it is gone: the water of
 * its edge pipes (eqs. 5-7) and, with it, the same fraction of its
 * sediment (the donor product, also under eq. 14, whose departure points
 * lie inside the map: the sediment an outward flow carries past the edge
 * leaves uncounted otherwise). */
static void count_left(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                       int x, er_mei_rowacc *acc)
{
    const int edge[4] = { x == 0, x == sim->w - 1, !r->s1[0], !r->s1[2] };
    const float sc = r->s1[1][x], wc = r->wq[1][x];
    for (int i = 0; i < 4; i++)
        if (edge[i] && k->open_edge[i]) {
            acc->left_sed += sc * (r->q[1][i][x] * wc);
            acc->left_water += (double)r->q[1][i][x] * (double)k->dt;
        }
}

static void transport_generic(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                              int x, const float *u, const float *v, float *snew,
                              er_mei_rowacc *acc)
{
    const int w = sim->w;
    if (r->wall[1] && r->wall[1][x]) {
        snew[x] = 0.0f;
        return;
    }
    if (k->open)
        count_left(sim, k, r, x, acc);
    if (k->semi_lagrangian) {
        snew[x] = semi_lagrangian_cell(sim, k, r, x, u[x], v[x]);
        return;
    }
    const float sc = r->s1[1][x], wc = r->wq[1][x];
    float out[4], in[4] = { 0, 0, 0, 0 };
    for (int i = 0; i < 4; i++)
        out[i] = sc * (r->q[1][i][x] * wc);
    /* walls hold s1 = q = weight = 0, so only the map edge needs a test */
    if (x > 0)
        in[ER_L] = r->s1[1][x - 1] * (r->q[1][ER_R][x - 1] * r->wq[1][x - 1]);
    if (x < w - 1)
        in[ER_R] = r->s1[1][x + 1] * (r->q[1][ER_L][x + 1] * r->wq[1][x + 1]);
    if (r->s1[0])
        in[ER_T] = r->s1[0][x] * (r->q[0][ER_B][x] * r->wq[0][x]);
    if (r->s1[2])
        in[ER_B] = r->s1[2][x] * (r->q[2][ER_T][x] * r->wq[2][x]);
    snew[x] = er_max0((sc - ((out[ER_L] + out[ER_R]) + (out[ER_T] + out[ER_B]))) +
                      ((in[ER_L] + in[ER_R]) + (in[ER_T] + in[ER_B])));
}

/* Drying (see ER_MEI_DRY; `dry` is the threshold) of one terrain cell, and
 * its finiteness check (bit 31 of the result); what settles is added to
 * *dep, the cell's deposit of this step.  Below the threshold the water is gone and the
 * sediment it held settles; the amount the terrain change z actually
 * gained leaves the suspension.  Written as arithmetic on m = 1 (dry) or
 * 0 (wet), exact either way (x + 0 * y = x for finite values), so that
 * the loops that use it vectorise.  mask: the cell's mask map value (1
 * without one): only that part settles, the rest stays suspended in the dry
 * cell (core/controls.h), so mask 0 keeps the bed and the budget exact;
 * the water dries all the same. */
static inline uint32_t settle(float sn, float dry, float mask, float *z, float *d, float *s,
                              float *dep)
{
    float zz = *z, dd = *d;
    float m = dd < dry ? 1.0f : 0.0f;
    float z2 = zz + (m * mask) * sn;
    float da = z2 - zz;
    float s2 = er_max0(sn - da);
    float d2 = dd * (1.0f - m);
    *dep += da;
    *z = z2;
    *s = s2;
    *d = d2;
    return nonfinite(z2) | nonfinite(d2) | nonfinite(s2);
}

/* Donor-cell transport and drying for a run of cells [x0, x1) of an
 * interior row: s0/s2, w0/w2 are the rows above and below, qa the
 * downward flux of the row above, qb the upward flux of the row below;
 * z, d are the row's new terrain change and depth (updated when the cell
 * dries); MASK the cell's mask value.  A macro, not an inline function:
 * GCC honours the restrict parameters that let the loop vectorise only in
 * the function that declares them. */
#define ER_DONOR_LOOP(MASK)                                                                \
    for (int i = x0; i < x1; i++) {                                                        \
        float sc = s1[i], wc = w1[i];                                                      \
        float oL = sc * (qL[i] * wc), oR = sc * (qR[i] * wc);                              \
        float oT = sc * (qT[i] * wc), oB = sc * (qB[i] * wc);                              \
        float iL = s1[i - 1] * (qR[i - 1] * w1[i - 1]);                                    \
        float iR = s1[i + 1] * (qL[i + 1] * w1[i + 1]);                                    \
        float iT = s0[i] * (qa[i] * w0[i]);                                                \
        float iB = s2[i] * (qb[i] * w2[i]);                                                \
        float sn = er_max0((sc - ((oL + oR) + (oT + oB))) + ((iL + iR) + (iT + iB)));      \
        bad |= settle(sn, dry, MASK, &z[i], &d[i], &so[i], &dep[i]);                       \
    }

/* Returns non-zero when a new value is not finite. */
static ER_NOINLINE ER_CLONES uint32_t donor_span(float dry, int x0, int x1,
                                                 const float *restrict s0,
                                                 const float *restrict s1,
                                                 const float *restrict s2,
                                                 const float *restrict w0,
                                                 const float *restrict w1,
                                                 const float *restrict w2,
                                                 const float *restrict qL,
                                                 const float *restrict qR,
                                                 const float *restrict qT,
                                                 const float *restrict qB,
                                                 const float *restrict qa,
                                                 const float *restrict qb, float *restrict z,
                                                 float *restrict d, float *restrict so,
                                                 float *restrict dep)
{
    uint32_t bad = 0;
    ER_DONOR_LOOP(1.0f)
    return bad >> 31;
}

/* donor_span with the row's mask mk (core/controls.h). */
static ER_NOINLINE ER_CLONES uint32_t donor_span_mask(float dry, int x0, int x1,
                                                      const float *restrict s0,
                                                      const float *restrict s1,
                                                      const float *restrict s2,
                                                      const float *restrict w0,
                                                      const float *restrict w1,
                                                      const float *restrict w2,
                                                      const float *restrict qL,
                                                      const float *restrict qR,
                                                      const float *restrict qT,
                                                      const float *restrict qB,
                                                      const float *restrict qa,
                                                      const float *restrict qb,
                                                      float *restrict z, float *restrict d,
                                                      float *restrict so, float *restrict dep,
                                                      const float *restrict mk)
{
    uint32_t bad = 0;
    ER_DONOR_LOOP(mk[i])
    return bad >> 31;
}
#undef ER_DONOR_LOOP

void er_mei_transport_row(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                          const float *u, const float *v, float *znew, float *dnew,
                          float *snew, const float *er, float *de, er_mei_rowacc *acc)
{
    const int w = sim->w;
    const int interior = r->s1[0] && r->s1[2];
    const uint8_t *wall = r->wall[1];
    float *dep = de;
    uint32_t bad = 0;
    int x = 0;
    acc->left_sed = acc->left_water = 0.0;
    while (x < w) {
        int end;
        if (!interior || k->semi_lagrangian || !er_mei_run_from(sim, r, x, &end)) {
            transport_generic(sim, k, r, x, u, v, snew, acc);
            if (!(wall && wall[x])) /* walls hold d = s = 0 and stay as they are */
                bad |= settle(snew[x], k->dry, er_ctl_at(r->mask, 1, x, 1.0f), &znew[x],
                              &dnew[x], &snew[x], &dep[x]) >> 31;
            x++;
            continue;
        }
        const float *qL = r->q[1][ER_L], *qR = r->q[1][ER_R], *qT = r->q[1][ER_T];
        const float *qB = r->q[1][ER_B], *qa = r->q[0][ER_B], *qb = r->q[2][ER_T];
        if (r->mask[1])
            bad |= donor_span_mask(k->dry, x, end, r->s1[0], r->s1[1], r->s1[2], r->wq[0],
                                   r->wq[1], r->wq[2], qL, qR, qT, qB, qa, qb, znew, dnew, snew,
                                   dep, r->mask[1]);
        else
            bad |= donor_span(k->dry, x, end, r->s1[0], r->s1[1], r->s1[2], r->wq[0], r->wq[1],
                              r->wq[2], qL, qR, qT, qB, qa, qb, znew, dnew, snew, dep);
        x = end;
    }
    acc->eroded = er_mei_row_sum(er, w);
    acc->deposited = er_mei_row_sum(de, w);
    acc->bad = bad;
}
