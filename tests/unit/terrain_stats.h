/*
 * Landscape statistics for the resolution tests: what must
 * agree between a DEM and its 2x finer resampling, each in metres or per
 * km² so that two cell sizes compare directly.  Header-only (static
 * inline) so the unit-test rule (tests/unit/check_*.c) needs no new object.
 *
 * - Hypsometric curve: the heights at fixed area quantiles.
 * - Drainage density: the length of flow paths (pits filled) whose
 *   contributing area exceeds a threshold, per map area (km per km²).
 * - Eroded and deposited volume per km² of map.
 * Cells under `wall` (may be NULL) count nowhere.
 */
#ifndef ER_LANDSCAPE_STATS_H
#define ER_LANDSCAPE_STATS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Area quantiles of the hypsometric curve: 5, 15, ..., 95 %. */
#define ER_TS_NQ 10

typedef struct er_landscape_stats {
    double height_q[ER_TS_NQ]; /* [m] height exceeded by 95, 85, ..., 5 % of the area */
    double drainage_density;   /* [km / km²] channels over the threshold area */
    double eroded_per_km2;     /* [m³ / km²] sum of lowering times cell area, per map area */
    double deposited_per_km2;  /* [m³ / km²] the same for raising */
} er_landscape_stats;

static inline int er_ts_cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static inline int er_ts_valid(const uint8_t *wall, size_t i)
{
    return !wall || !wall[i];
}

/* Heights at the ER_TS_NQ area quantiles (nearest rank); 0 on malloc failure. */
static inline int er_ts_hypsometry(const float *z, const uint8_t *wall, size_t n, double *q)
{
    float *s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (er_ts_valid(wall, i))
            s[m++] = z[i];
    qsort(s, m, sizeof *s, er_ts_cmp_float);
    for (int k = 0; k < ER_TS_NQ; k++)
        q[k] = m ? s[(size_t)((0.05 + 0.1 * k) * (double)(m - 1) + 0.5)] : 0.0;
    free(s);
    return 1;
}

/* A binary min-heap of cells by (height, insertion number): the order is
 * total, so the flood below is the same on every machine. */
typedef struct er_ts_heap {
    double *z;
    uint64_t *seq;
    uint32_t *cell;
    size_t n;
} er_ts_heap;

static inline int er_ts_less(const er_ts_heap *q, size_t a, size_t b)
{
    return q->z[a] < q->z[b] || (q->z[a] == q->z[b] && q->seq[a] < q->seq[b]);
}

static inline void er_ts_swap(er_ts_heap *q, size_t a, size_t b)
{
    double z = q->z[a];
    uint64_t s = q->seq[a];
    uint32_t c = q->cell[a];
    q->z[a] = q->z[b], q->seq[a] = q->seq[b], q->cell[a] = q->cell[b];
    q->z[b] = z, q->seq[b] = s, q->cell[b] = c;
}

static inline void er_ts_push(er_ts_heap *q, double z, uint64_t seq, uint32_t cell)
{
    size_t i = q->n++;
    q->z[i] = z, q->seq[i] = seq, q->cell[i] = cell;
    while (i && er_ts_less(q, i, (i - 1) / 2)) {
        er_ts_swap(q, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static inline uint32_t er_ts_pop(er_ts_heap *q, double *z)
{
    uint32_t c = q->cell[0];
    *z = q->z[0];
    er_ts_swap(q, 0, --q->n);
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && er_ts_less(q, l, m))
            m = l;
        if (r < q->n && er_ts_less(q, r, m))
            m = r;
        if (m == i)
            break;
        er_ts_swap(q, i, m);
        i = m;
    }
    return c;
}

/* Drainage density [km / km²] with pits filled: a priority flood from the
 * map's edge (lowest spill first, Barnes et al. 2014) gives each cell the
 * neighbour (of 8) that flooded it as its receiver, so every cell drains
 * to the edge, through a pit by its spill point, as water does.  Flow
 * accumulates against the flood order; the step lengths of the cells
 * draining more than thr_km2 add up per valid map area.  Pits, flats and
 * D8's dead ends would otherwise cut channels at a number that depends on
 * the cell size.  -1 on malloc failure. */
static inline double er_ts_drainage_density(const float *z, const uint8_t *wall, int w, int h,
                                            double cell, double thr_km2)
{
    static const int dx[8] = {1, -1, 0, 0, 1, 1, -1, -1}, dy[8] = {0, 0, 1, -1, 1, -1, 1, -1};
    const size_t n = (size_t)w * (size_t)h;
    er_ts_heap q = {malloc(n * sizeof(double)), malloc(n * sizeof(uint64_t)),
                    malloc(n * sizeof(uint32_t)), 0};
    uint32_t *order = malloc(n * sizeof *order), *to = malloc(n * sizeof *to);
    double *acc = malloc(n * sizeof *acc), *len = malloc(n * sizeof *len);
    uint8_t *seen = calloc(n, 1);
    double dens = -1.0;
    if (!q.z || !q.seq || !q.cell || !order || !to || !acc || !len || !seen)
        goto done;
    const double a = cell * cell * 1e-6; /* km² */
    uint64_t seq = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int x = (int)(i % (size_t)w), y = (int)(i / (size_t)w);
        acc[i] = a;
        len[i] = 0.0; /* an edge cell drains off the map */
        seen[i] = !er_ts_valid(wall, i);
        if (!seen[i] && (x == 0 || y == 0 || x == w - 1 || y == h - 1)) {
            seen[i] = 1;
            er_ts_push(&q, z[i], seq++, (uint32_t)i);
        }
    }
    while (q.n) {
        double zc;
        uint32_t c = er_ts_pop(&q, &zc);
        order[m++] = c;
        int x = (int)(c % (uint32_t)w), y = (int)(c / (uint32_t)w);
        for (int k = 0; k < 8; k++) {
            int nx = x + dx[k], ny = y + dy[k];
            if (nx < 0 || ny < 0 || nx >= w || ny >= h)
                continue;
            size_t j = (size_t)ny * (size_t)w + (size_t)nx;
            if (seen[j])
                continue;
            seen[j] = 1;
            to[j] = c;
            len[j] = k < 4 ? cell : cell * sqrt(2.0);
            er_ts_push(&q, fmax(zc, (double)z[j]), seq++, (uint32_t)j);
        }
    }
    double length = 0.0; /* km */
    for (size_t k = m; k-- > 0;) {
        uint32_t i = order[k];
        if (len[i] > 0.0)
            acc[to[i]] += acc[i];
        if (acc[i] > thr_km2)
            length += len[i] * 1e-3;
    }
    dens = m ? length / ((double)m * a) : 0.0;
done:
    free(q.z);
    free(q.seq);
    free(q.cell);
    free(order);
    free(to);
    free(acc);
    free(len);
    free(seen);
    return dens;
}

/* All four statistics of z (after a run from z0) on square cells of
 * `cell` metres; channels drain more than thr_km2.  0 on malloc failure. */
static inline int er_landscape_of(const float *z, const float *z0, const uint8_t *wall, int w,
                                      int h, double cell, double thr_km2, er_landscape_stats *st)
{
    size_t n = (size_t)w * (size_t)h, m = 0;
    double er = 0.0, de = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!er_ts_valid(wall, i))
            continue;
        double d = (double)z[i] - (double)z0[i];
        er += d < 0 ? -d : 0.0;
        de += d > 0 ? d : 0.0;
        m++;
    }
    /* per cell in metres is per m² of map; 1e6 m² a km² */
    st->eroded_per_km2 = m ? er / (double)m * 1e6 : 0.0;
    st->deposited_per_km2 = m ? de / (double)m * 1e6 : 0.0;
    st->drainage_density = er_ts_drainage_density(z, wall, w, h, cell, thr_km2);
    return er_ts_hypsometry(z, wall, n, st->height_q) && st->drainage_density >= 0.0;
}

/* The largest difference of the hypsometric heights of a and b [m]. */
static inline double er_ts_hyps_diff(const er_landscape_stats *a, const er_landscape_stats *b)
{
    double worst = 0.0;
    for (int k = 0; k < ER_TS_NQ; k++)
        worst = fmax(worst, fabs(a->height_q[k] - b->height_q[k]));
    return worst;
}

/* Node-aligned 2x bilinear resampling of a w x h map into (2w-1) x (2h-1):
 * even nodes copy the input, odd ones average their two or four parents
 * (the same landscape sampled at half the cell size). */
static inline void er_ts_refine2(const float *c, int w, int h, float *f)
{
    const int fw = 2 * w - 1;
    for (int y = 0; y < 2 * h - 1; y++)
        for (int x = 0; x < fw; x++) {
            int x0 = x / 2, y0 = y / 2, x1 = x0 + (x & 1), y1 = y0 + (y & 1);
            f[(size_t)y * (size_t)fw + (size_t)x] =
                0.25f * (c[y0 * w + x0] + c[y0 * w + x1] + c[y1 * w + x0] + c[y1 * w + x1]);
        }
}

/* Full-weighting restriction of a (2w-1) x (2h-1) map back to w x h (the
 * 1-2-1 kernel in each axis, edges mirrored): refine2 then coarsen2 is
 * the input smoothed by resampling alone, at the input's cell size. */
static inline void er_ts_coarsen2(const float *f, int w, int h, float *c)
{
    const int fw = 2 * w - 1, fh = 2 * h - 1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double s = 0.0;
            for (int j = -1; j <= 1; j++)
                for (int i = -1; i <= 1; i++) {
                    int fx = 2 * x + i, fy = 2 * y + j;
                    fx = fx < 0 ? -fx : fx >= fw ? 2 * (fw - 1) - fx : fx;
                    fy = fy < 0 ? -fy : fy >= fh ? 2 * (fh - 1) - fy : fy;
                    s += (double)((2 - abs(i)) * (2 - abs(j))) * f[(size_t)fy * (size_t)fw + (size_t)fx];
                }
            c[(size_t)y * (size_t)w + (size_t)x] = (float)(s / 16.0);
        }
}

#endif
