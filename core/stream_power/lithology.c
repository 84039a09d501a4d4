/*
 * The rock's erodibility varying in space (stream_power.lithology): real
 * hillslopes and channel beds cut through beds and joints of unequal
 * strength, which is what roughens a real DEM at the scale of its cells;
 * a uniform K_f and K_d let the hillslopes converge to smooth planes.
 *
 * At the centre (x, y) of each cell, in metres from the map's corner,
 *     xi = (1 / N) sum_k v_k(x / lambda_k, y / lambda_k),
 *     lambda_k = lithology_scale / 2^k   for every k with lambda_k >= the cell size,
 * v_k value noise: uniform values in [-1, 1] on the integer lattice, drawn
 * from (seed, ER_STREAM_SP_LITHOLOGY, octave and lattice point), blended
 * by the smoothstep of the cell's place between its four lattice points.
 * xi lies in [-1, 1]; K_f and K_d at the cell are multiplied by 1 + L xi
 * (L = lithology <= 0.9).  The field is a function of the position in
 * metres and the seed only: the same rock at every thread count, and, on
 * one terrain given at two cell sizes, the same rock at every scale the
 * coarser grid resolves (the finer grid adds its own finest octave).
 */
#include <math.h>

#include "../parallel.h"
#include "../rng.h"
#include "sp_internal.h"

/* The most octaves: lithology_scale / 2^31 is below any cell size the
 * plan accepts relative to a scale of at most 1e7 m. */
#define ER_SP_OCTAVES 32

static double lattice(uint64_t seed, int k, int64_t ix, int64_t iy)
{
    /* ix, iy < 2^28: a map of at most 2^31 cells with lambda_k >= a cell */
    const uint64_t idx = ((uint64_t)k << 58) | ((uint64_t)ix << 29) | (uint64_t)iy;
    return 2.0 * er_rng_unit(seed, ER_STREAM_SP_LITHOLOGY, idx) - 1.0;
}

static inline double smooth(double f)
{
    return f * f * (3.0 - 2.0 * f);
}

static double value_noise(uint64_t seed, int k, double gx, double gy)
{
    const double fx0 = floor(gx), fy0 = floor(gy);
    const int64_t ix = (int64_t)fx0, iy = (int64_t)fy0;
    const double fx = smooth(gx - fx0), fy = smooth(gy - fy0);
    const double a = lattice(seed, k, ix, iy), b = lattice(seed, k, ix + 1, iy);
    const double c = lattice(seed, k, ix, iy + 1), d = lattice(seed, k, ix + 1, iy + 1);
    return (a + (b - a) * fx) * (1.0 - fy) + (c + (d - c) * fx) * fy;
}

void er_sp_lithology(const er_sp_sim *s, const er_stream_power_params *p, float *out)
{
    const double cell = s->dx < s->dy ? s->dx : s->dy, amp = p->lithology;
    double inv[ER_SP_OCTAVES];
    int nk = 0;
    for (double lam = p->lithology_scale; nk < ER_SP_OCTAVES && (lam >= cell || nk == 0);
         lam *= 0.5)
        inv[nk++] = 1.0 / lam;
    const int w = s->w, h = s->h;
    const uint64_t seed = s->seed;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const double px = (x + 0.5) * s->dx, py = (y + 0.5) * s->dy;
            double xi = 0.0;
            for (int k = 0; k < nk; k++)
                xi += value_noise(seed, k, px * inv[k], py * inv[k]);
            out[(int64_t)y * w + x] *= (float)(1.0 + amp * xi / nk);
        }
}
