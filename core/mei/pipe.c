/*
 * Mei, Decaudin and Hu 2007, Fast hydraulic erosion simulation and
 * visualization on GPU, eqs. 1-9 and 15: water increment, virtual-pipe
 * flux, water depth, velocity and evaporation (§3.1-3.2, §3.5).
 *
 * Fluxes are stored per cell area, q = f / (lX lY) in m/s, so that eq. 7
 * reads d2 = d1 + dt (q_in - q_out) and the K of eq. 4 is d1 / (dt sum q).
 *
 * Every expression that a mirror image of the map would evaluate with
 * left and right (or top and bottom) swapped is written so that the swap
 * gives the same bits: sums as (L + R) + (T + B), differences as
 * (a + b) - (c + d).  A mirror-symmetric terrain then stays symmetric
 * exactly, which the unit tests check.
 */
#include "mei_internal.h"

#include <math.h>

#include "../parallel.h"
#include "../rng.h"

/* Eqs. 2-5 for one cell: new outflow fluxes from the old ones and the
 * water-surface differences dh (eq. 3) towards the neighbours that can
 * take water (ok[i]); the result never drains more than the cell holds.
 * Also the donor weight dt / d1 the transport step uses for the fraction
 * of the cell's water (and so of its sediment) that each pipe carries. */
static inline void flux_cell(const er_mei_coef *k, float d1, const float qo[4],
                             const float dh[4], const int ok[4], float q[4], float *wq)
{
    const float c[4] = { k->cx, k->cx, k->cy, k->cy };
    for (int i = 0; i < 4; i++)
        q[i] = ok[i] ? er_max0(qo[i] + c[i] * dh[i]) : 0.0f;
    float out = ((q[ER_L] + q[ER_R]) + (q[ER_T] + q[ER_B])) * k->dt;
    if (out > d1) {
        float kk = d1 / out; /* eq. 4 */
        for (int i = 0; i < 4; i++)
            q[i] *= kk;      /* eq. 5 */
    }
    *wq = d1 > 0.0f ? k->dt / d1 : 0.0f;
}

/* Terrain b = b0 + z and water surface h = b + (d + rain) of row y, the
 * heights every neighbour of the row reads (eqs. 1, 3), computed once.
 * Walls get values too; no kernel reads them. */
void er_mei_surface_row(const er_mei_sim *sim, const er_mei_coef *k, int y, const float *zr,
                        const float *dr, float *b, float *h)
{
    const size_t off = (size_t)y * (size_t)sim->w;
    const float *restrict g = sim->b0 + off;
    const float *restrict z = zr, *restrict d = dr;
    float *restrict bo = b, *restrict ho = h;
    const float rain = k->rain;
    for (int i = 0; i < sim->w; i++) {
        float bb = g[i] + z[i];
        bo[i] = bb;
        ho[i] = bb + (d[i] + rain);
    }
}

/* Head towards the virtual cell beyond an open edge in direction i: it
 * holds no water, and its bed continues the terrain's fall from the
 * opposite neighbour (linear extrapolation, b_out = 2 b - b_opp) where
 * the terrain falls towards the edge, else lies level with the cell (a
 * rise is not continued: that would dam an open edge).  So an edge cell
 * drains like the interior cells upstream of it; with a level virtual
 * bed alone the head is only the depth, and at 90 m cells an edge pipe
 * gains g A dt^2 / lX of it per step (water backs up along the edge). */
static float edge_head(const er_mei_sim *sim, const er_mei_rows *r, int x, int i, float hc)
{
    const int ny[4] = { 1, 1, 0, 2 };
    const int nx[4] = { x - 1, x + 1, x, x };
    const float bc = r->b[1][x];
    int j = ny[i ^ 1], c = nx[i ^ 1];
    float rise = 0.0f;
    if (r->b[j] && c >= 0 && c < sim->w && !(r->wall[j] && r->wall[j][c]))
        rise = er_max0(r->b[j][c] - bc);
    return (hc - bc) + rise;
}

/* The general case: any cell, with map edges and walls. */
static void flux_generic(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                         int x, float *const qio[4], float *wq)
{
    const int w = sim->w;
    if (r->wall[1] && r->wall[1][x]) {
        for (int i = 0; i < 4; i++)
            qio[i][x] = 0.0f;
        wq[x] = 0.0f;
        return;
    }
    float d1 = r->d[x] + k->rain; /* eq. 1 (uniform part) */
    float hc = r->h[1][x];
    float qo[4] = { qio[0][x], qio[1][x], qio[2][x], qio[3][x] };
    float dh[4] = { 0, 0, 0, 0 };
    int ok[4] = { 0, 0, 0, 0 };
    /* neighbour (row index into the views, column) per direction */
    const int ny[4] = { 1, 1, 0, 2 };
    const int nx[4] = { x - 1, x + 1, x, x };
    for (int i = 0; i < 4; i++) {
        int j = ny[i], c = nx[i];
        if (r->h[j] && c >= 0 && c < w) {
            if (r->wall[j] && r->wall[j][c])
                continue;
            ok[i] = 1;
            dh[i] = hc - r->h[j][c]; /* eq. 3 */
        } else if (k->open_edge[i]) {
            ok[i] = 1;
            dh[i] = edge_head(sim, r, x, i, hc);
        }
    }
    float q[4];
    flux_cell(k, d1, qo, dh, ok, q, &wq[x]);
    for (int i = 0; i < 4; i++)
        qio[i][x] = q[i];
}

/* flux_cell for a run of cells [x0, x1) of an interior row whose four
 * neighbours are all terrain, as one vectorisable loop (the restrict
 * parameters tell the compiler that the rows do not overlap).  hu, hc, hd
 * are the water surfaces of the rows above, at and below; the q rows hold
 * the old fluxes and receive the new (each cell reads and writes its own). */
static ER_NOINLINE ER_CLONES void flux_span(const er_mei_coef *k, int x0, int x1,
                                            const float *restrict hu, const float *restrict hc,
                                            const float *restrict hd, const float *restrict dc,
                                            float *restrict qL, float *restrict qR,
                                            float *restrict qT, float *restrict qB,
                                            float *restrict ww)
{
    const float rain = k->rain, cx = k->cx, cy = k->cy, dt = k->dt;
    for (int i = x0; i < x1; i++) {
        float d1 = dc[i] + rain;
        float h0 = hc[i];
        float fl = er_max0(qL[i] + cx * (h0 - hc[i - 1]));
        float fr = er_max0(qR[i] + cx * (h0 - hc[i + 1]));
        float ft = er_max0(qT[i] + cy * (h0 - hu[i]));
        float fb = er_max0(qB[i] + cy * (h0 - hd[i]));
        float out = ((fl + fr) + (ft + fb)) * dt;
        /* eq. 4 without a branch (d1 / d1 is exactly 1): one select at a
         * time, no nested ?:, so that the loop vectorises */
        float den = out > d1 ? out : d1;
        den = den > 0.0f ? den : 1.0f;
        float kk = d1 / den;
        qL[i] = fl * kk;
        qR[i] = fr * kk;
        qT[i] = ft * kk;
        qB[i] = fb * kk;
        float wv = dt / (d1 > 0.0f ? d1 : 1.0f);
        ww[i] = d1 > 0.0f ? wv : 0.0f;
    }
}

void er_mei_flux_row(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                     float *const q[4], float *wq)
{
    const int w = sim->w;
    const int interior = r->h[0] && r->h[2];
    int x = 0;
    while (x < w) {
        int end;
        if (!interior || !er_mei_run_from(sim, r, x, &end)) {
            flux_generic(sim, k, r, x, q, wq);
            x++;
            continue;
        }
        /* Fast path: all four neighbours are terrain cells. */
        flux_span(k, x, end, r->h[0], r->h[1], r->h[2], r->d, q[ER_L], q[ER_R], q[ER_T],
                  q[ER_B], wq);
        x = end;
    }
}

/* Eqs. 6-9 and 15 for one cell: in[i] is the flux arriving from the
 * neighbour in direction i (0 where there is none), q the cell's own new
 * outflow.  Writes the depth after evaporation and the velocity. */
static inline void water_cell(const er_mei_coef *k, float d1, const float in[4],
                              const float q[4], float *dnew, float *u, float *v, float *dm)
{
    float qin = (in[ER_L] + in[ER_R]) + (in[ER_T] + in[ER_B]);
    float qout = (q[ER_L] + q[ER_R]) + (q[ER_T] + q[ER_B]);
    float d2 = er_max0(d1 + k->dt * (qin - qout)); /* eqs. 6-7 */
    float dbar = 0.5f * (d1 + d2);
    float uu = 0.0f, vv = 0.0f;
    if (dbar > ER_MEI_FILM) {
        /* eqs. 8-9: u = dWX / (lY dbar) with dWX = lX lY (...) / 2 */
        uu = k->hlx * ((in[ER_L] + q[ER_R]) - (q[ER_L] + in[ER_R])) / dbar;
        vv = k->hly * ((in[ER_T] + q[ER_B]) - (q[ER_T] + in[ER_B])) / dbar;
    }
    *dnew = d2 * k->keep; /* eq. 15 */
    *u = uu;
    *v = vv;
    *dm = dbar;
}

static void water_generic(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                          int x, float *d, float *u, float *v, float *dm)
{
    const int w = sim->w;
    if (r->wall[1] && r->wall[1][x]) {
        d[x] = 0.0f;
        u[x] = v[x] = dm[x] = 0.0f;
        return;
    }
    float d1 = d[x] + k->rain;
    float q[4], in[4];
    for (int i = 0; i < 4; i++)
        q[i] = r->q[1][i][x];
    /* A wall's outflow is 0, so only the map edge needs a test. */
    in[ER_L] = x > 0 ? r->q[1][ER_R][x - 1] : 0.0f;
    in[ER_R] = x < w - 1 ? r->q[1][ER_L][x + 1] : 0.0f;
    in[ER_T] = r->q[0][0] ? r->q[0][ER_B][x] : 0.0f;
    in[ER_B] = r->q[2][0] ? r->q[2][ER_T][x] : 0.0f;
    water_cell(k, d1, in, q, &d[x], &u[x], &v[x], &dm[x]);
}

/* water_cell for a run of cells [x0, x1) of an interior row; dc holds the
 * old depths and receives the new, qa is the downward flux of the row
 * above, qb the upward flux of the row below.
 */
static ER_NOINLINE ER_CLONES void water_span(const er_mei_coef *k, int x0, int x1,
                                             float *restrict dc,
                                             const float *restrict qL, const float *restrict qR,
                                             const float *restrict qT, const float *restrict qB,
                                             const float *restrict qa, const float *restrict qb,
                                             float *restrict uo, float *restrict vo,
                                             float *restrict dmo)
{
    const float rain = k->rain, dt = k->dt, hlx = k->hlx, hly = k->hly, keep = k->keep;
    for (int i = x0; i < x1; i++) {
        float d1 = dc[i] + rain;
        float inL = qR[i - 1], inR = qL[i + 1], inT = qa[i], inB = qb[i];
        float qin = (inL + inR) + (inT + inB);
        float qout = (qL[i] + qR[i]) + (qT[i] + qB[i]);
        float d2 = er_max0(d1 + dt * (qin - qout));
        float dbar = 0.5f * (d1 + d2);
        float den = dbar > ER_MEI_FILM ? dbar : 1.0f;
        float uw = hlx * ((inL + qR[i]) - (qL[i] + inR)) / den;
        float vw = hly * ((inT + qB[i]) - (qT[i] + inB)) / den;
        float uu = dbar > ER_MEI_FILM ? uw : 0.0f;
        float vv = dbar > ER_MEI_FILM ? vw : 0.0f;
        uo[i] = uu;
        vo[i] = vv;
        dmo[i] = dbar;
        dc[i] = d2 * keep;
    }
}

/* Largest |a| over n values as float bits (a separate loop: GCC does not
 * vectorise this reduction inside water_span). */
static ER_NOINLINE ER_CLONES uint32_t absmax_bits(const float *restrict a, int n, uint32_t m)
{
    for (int i = 0; i < n; i++) {
        uint32_t b = er_float_bits(a[i]) & 0x7fffffffu;
        m = b > m ? b : m;
    }
    return m;
}

void er_mei_water_row(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                      float *d, float *u, float *v, float *dm, er_mei_rowacc *acc)
{
    const int w = sim->w;
    const int interior = r->q[0][0] && r->q[2][0];
    /* Row maxima of |u| and |v| as float bits: for non-negative floats the
     * integer order is the float order and NaN sorts above infinity, so
     * one integer max both finds the fastest flow for the CFL check and
     * catches a non-finite velocity. */
    int x = 0;
    while (x < w) {
        int end;
        if (!interior || !er_mei_run_from(sim, r, x, &end)) {
            water_generic(sim, k, r, x, d, u, v, dm);
            x++;
            continue;
        }
        water_span(k, x, end, d, r->q[1][ER_L], r->q[1][ER_R], r->q[1][ER_T],
                   r->q[1][ER_B], r->q[0][ER_B], r->q[2][ER_T], u, v, dm);
        x = end;
    }
    acc->umax = absmax_bits(u, w, 0);
    acc->vmax = absmax_bits(v, w, 0);
}

typedef struct add_ctx {
    float *d;
    float amount;
    const float *rain; /* the rain map: the drop times r on each cell; NULL = none */
    double added;      /* [m] the water added (with a rain map) */
} add_ctx;

static void add_cell(void *user, size_t i)
{
    add_ctx *a = user;
    a->d[i] += a->amount;
}

static void add_rain_cell(void *user, size_t i)
{
    add_ctx *a = user;
    float v = a->amount * a->rain[i];
    if (a->d)
        a->d[i] += v;
    a->added += (double)v;
}

/* Adds `amount` metres of water to the terrain cells of a disc (serially,
 * in row order), or only counts them when d is NULL; returns the water
 * added [m] (times the rain map on each cell when rain is not NULL). */
static double add_disc(const er_mei_sim *sim, float *d, double cx, double cy, double rad,
                       float amount, const float *rain)
{
    add_ctx a = { d, amount, rain, 0.0 };
    const er_source_grid g = er_mei_grid(sim);
    if (rain) {
        er_disc_cells(&g, cx, cy, rad, add_rain_cell, &a);
        return a.added;
    }
    int64_t n = er_disc_cells(&g, cx, cy, rad, d ? add_cell : NULL, &a);
    return (double)n * (double)amount;
}

/* Eq. 1, random raindrops: drop j of step t lands on the cell drawn from
 * (seed, ER_STREAM_RAINDROP, t * count + j): the low 32 bits pick the
 * column, the high 32 bits the row (Lemire's multiply-shift each).
 * mei_drops.comp draws the same cells on the device. */
int er_mei_drops_on(const er_mei_params *m)
{
    return m->drops_per_step > 0 && m->drop_amount > 0.0;
}

int er_mei_add_drops(const er_mei_sim *sim, float *d, const er_mei_params *m, uint64_t seed,
                     int64_t step, double *added)
{
    if (!er_mei_drops_on(m))
        return 0;
    float amount = (float)m->drop_amount;
    for (int64_t j = 0; j < m->drops_per_step; j++) {
        uint64_t idx = (uint64_t)step * (uint64_t)m->drops_per_step + (uint64_t)j;
        uint64_t r = er_rng_u64(seed, ER_STREAM_RAINDROP, idx);
        /* Drawn over the world; a window keeps the part of the drop that
         * falls inside it (add_disc clips), with the same cells covered. */
        int x = (int)(((r & 0xffffffffu) * (uint64_t)sim->world_w) >> 32);
        int y = (int)(((r >> 32) * (uint64_t)sim->world_h) >> 32);
        const float *rain = sim->ctl ? sim->ctl->rain : NULL;
        *added += add_disc(sim, d, x - sim->wx0, y - sim->wy0, m->drop_radius, amount, rain);
    }
    return 1;
}

/* Eq. 1, river sources: rate * dt metres on every covered terrain cell. */
void er_mei_add_sources(const er_mei_sim *sim, float *d, const er_source_list *l, double dt,
                        double *added)
{
    for (int i = 0; i < l->n; i++) {
        const er_source *src = &l->src[i];
        float amount = er_source_depth(src, dt);
        if (!(amount > 0.0f))
            continue;
        *added += add_disc(sim, d, src->x - sim->wx0, src->y - sim->wy0, src->radius, amount,
                           NULL);
    }
}

/* Row y's part of er_mei_add_maps; returns the water it added [m]. */
static double add_maps_row(const er_mei_sim *sim, float *d, float rain, double dt, int y)
{
    const size_t i0 = (size_t)y * (size_t)sim->w;
    const float *q = sim->ctl->source, *r = rain > 0.0f ? sim->ctl->rain : NULL;
    double added = 0.0;
    for (size_t i = i0; i < i0 + (size_t)sim->w; i++) {
        if (sim->wall && sim->wall[i])
            continue;
        if (q) { /* as river_sources: rate * dt (er_source_depth) */
            float v = (float)((double)q[i] * dt);
            if (d)
                d[i] += v;
            added += (double)v;
        }
        if (r) { /* eq. 1, the uniform rain times the map */
            float v = rain * r[i];
            if (d)
                d[i] += v;
            added += (double)v;
        }
    }
    return added;
}

void er_mei_add_maps(const er_mei_sim *sim, float *d, float rain, double dt, double *added)
{
    er_mei_rowacc *acc = sim->acc;
    ER_OMP_FOR()
    for (int y = 0; y < sim->h; y++)
        acc[y].eroded = add_maps_row(sim, d, rain, dt, y);
    for (int y = 0; y < sim->h; y++)
        *added += acc[y].eroded;
}
