/*
 * The brush kernels: a droplet's or particle's load laid down through the
 * brush (er_brush_apply), a step's erosion through it (er_brush_erode,
 * with its paths for the control maps and the wear layer and the radius-3
 * brush as one AVX-512 vector a row) and the choice of the AVX-512 builds.
 * The brush's inline parts, used in the step, are in droplet_impl.h
 * (er_brush_clean, er_brush_erode_hot, er_deposit_bilinear).
 */
#include <stdlib.h>

#include "droplet_impl.h"
#include "../parallel.h"

#ifdef ER_DROPLET_AVX512
#include <immintrin.h>
#endif

/* Element-wise loops the compiler may vectorise at -O2: each element's
 * result is one IEEE product and difference either way, so vector and
 * scalar code give the same bits (no reduction is ever reordered). */
#ifdef _OPENMP
#define ER_SIMD ER_PRAGMA(omp simd)
#else
#define ER_SIMD
#endif

/* The widest brush: radius 64 (droplet.radius in the key table, core/keys.c). */
#define ER_BRUSH_SIDE_MAX (2 * 64 - 1)

/* The brush clipped to the map at centre (cx, cy): the window [x0, x1] x
 * [y0, y1] and the sum of the weights of its cells that are not walls,
 * row by row (the order both brush users and the shaders sum in). */
static float clipped_weight(const er_dctx *c, const float *bw, int cx, int cy, int *x0,
                            int *x1, int *y0, int *y1)
{
    const int r1 = c->radius - 1, side = c->brush_side;
    const size_t w = (size_t)c->width;
    *x0 = cx - r1 < 0 ? 0 : cx - r1;
    *x1 = cx + r1 >= c->width ? c->width - 1 : cx + r1;
    *y0 = cy - r1 < 0 ? 0 : cy - r1;
    *y1 = cy + r1 >= c->height ? c->height - 1 : cy + r1;
    float sum = 0;
    for (int y = *y0; y <= *y1; y++)
        for (int x = *x0; x <= *x1; x++)
            if (!c->wall || !c->wall[(size_t)y * w + (size_t)x])
                sum += bw[(y - cy + r1) * side + (x - cx + r1)];
    return sum;
}

/* The clean-window brush deposit with a mask map: each tap's share times
 * its mask value; returns what was laid down. */
static float brush_apply_masked(const er_dctx *c, size_t o, float amount, float *restrict dep)
{
    const int side = c->brush_side;
    const size_t w = (size_t)c->width;
    const float *restrict bw = c->brush_w;
    float *restrict row = c->height_m + o;
    const float *restrict m = c->ctl_mask + o;
    float laid = 0;
    for (int j = 0; j < side; j++, row += w, m += w, bw += side)
        for (int i = 0; i < side; i++) {
            float d = amount * bw[i] * m[i];
            row[i] -= d;
            if (dep)
                dep[o + (size_t)j * w + (size_t)i] -= d;
            laid -= d;
        }
    return laid;
}

/* Adds `-amount` [m] (amount <= 0: a droplet's or particle's load where it
 * ends) through the brush centred on node (cx, cy), each tap its weight's
 * share (times its mask value), and to the deposit layer.  Taps off the map
 * or on walls are left out and the others' weights renormalised (slow
 * path).  Erosion goes through er_brush_erode, which bounds every tap. */
float er_brush_apply(const er_dctx *c, int cx, int cy, float amount)
{
    const int side = c->brush_side, r1 = c->radius - 1;
    const size_t w = (size_t)c->width;
    const float *restrict bw = c->brush_w;
    const float *restrict m = c->ctl_mask;
    float *restrict h = c->height_m;
    float *restrict dep = amount < 0 ? c->deposit : NULL;

    if (c->sink)
        return er_snap_deposit(c, cx, cy, amount);
    if (er_brush_clean(c, cx, cy)) {
        size_t o = (size_t)(cy - r1) * w + (size_t)(cx - r1);
        if (m)
            return brush_apply_masked(c, o, amount, dep);
        float *restrict row = h + o;
        for (int j = 0; j < side; j++, row += w, bw += side)
            ER_SIMD
            for (int i = 0; i < side; i++)
                row[i] -= amount * bw[i];
        if (dep) {
            bw = c->brush_w;
            row = dep + o;
            for (int j = 0; j < side; j++, row += w, bw += side)
                ER_SIMD
                for (int i = 0; i < side; i++)
                    row[i] -= amount * bw[i];
        }
        return -amount;
    }
    int x0, x1, y0, y1;
    float sum = clipped_weight(c, bw, cx, cy, &x0, &x1, &y0, &y1);
    /* sum >= the centre's weight > 0: the centre is a corner of a valid
     * bilinear cell. */
    float k = amount / sum, laid = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            size_t i = (size_t)y * w + (size_t)x;
            if (!c->wall || !c->wall[i]) {
                float d = k * bw[(y - cy + r1) * side + (x - cx + r1)];
                if (m)
                    d *= m[i];
                h[i] -= d;
                if (dep)
                    dep[i] -= d;
                laid -= d;
            }
        }
    return m ? laid : -amount;
}

/* One brush tap of an erosion: the tap at height `o` gives up its share
 * `d` >= 0, but is never taken below `stop`, and a tap already at or below
 * `stop` is left alone (max(o - d, min(o, stop)): only min, max and one
 * rounded difference, so the result is >= min(o, stop) exactly, whatever
 * the rounding).  Returns the new height. */
static inline float tap_erode(float o, float d, float stop)
{
    return er_maxf(o - d, er_minf(o, stop));
}

/* er_brush_erode's clean window (top-left cell top) without maps; side is
 * the brush side, a constant where the caller can make it one. */
ER_HOT_INLINE float brush_erode_clean(const er_dctx *c, size_t top, float amount, float stop,
                                    const int side)
{
    const size_t w = (size_t)c->width;
    const float *restrict bw = c->brush_w;
    float *restrict row = c->height_m + top;
    float col[ER_BRUSH_SIDE_MAX], taken = 0;
    for (int i = 0; i < side; i++)
        col[i] = 0;
    for (int j = 0; j < side; j++, row += w, bw += side)
        ER_SIMD
        for (int i = 0; i < side; i++) {
            float o = row[i], v = tap_erode(o, amount * bw[i], stop);
            row[i] = v;
            col[i] += o - v;
        }
    for (int i = 0; i < side; i++)
        taken += col[i];
    return taken;
}

/* er_brush_erode's clean window (top-left cell o) with hardness or mask:
 * each tap's share times its (1 - hardness) * mask, summed in the same
 * order.  A path of its own so that runs without maps keep the loop above. */
static float brush_erode_ctl(const er_dctx *c, size_t o, float amount, float stop)
{
    const int side = c->brush_side;
    const size_t w = (size_t)c->width;
    const float *restrict bw = c->brush_w;
    const float *restrict ek = c->ctl_erode + o;
    float *restrict row = c->height_m + o;
    float col[ER_BRUSH_SIDE_MAX], taken = 0;
    for (int i = 0; i < side; i++)
        col[i] = 0;
    for (int j = 0; j < side; j++, row += w, ek += w, bw += side)
        ER_SIMD
        for (int i = 0; i < side; i++) {
            float h0 = row[i], v = tap_erode(h0, amount * bw[i] * ek[i], stop);
            row[i] = v;
            col[i] += h0 - v;
        }
    for (int i = 0; i < side; i++)
        taken += col[i];
    return taken;
}

/* er_brush_erode's clean window with the wear layer kept: the same taps
 * (with or without the control maps' factor) in the same order, each tap's
 * loss also added to the wear layer.  Apart, so that runs without wear keep
 * the loops above. */
static float brush_erode_wear(const er_dctx *c, size_t o, float amount, float stop)
{
    const int side = c->brush_side;
    const size_t w = (size_t)c->width;
    const float *bw = c->brush_w;
    const float *ek = c->ctl_erode ? c->ctl_erode + o : NULL;
    float *row = c->height_m + o, *wr = c->wear + o;
    float col[ER_BRUSH_SIDE_MAX], taken = 0;
    for (int i = 0; i < side; i++)
        col[i] = 0;
    for (int j = 0; j < side; j++, row += w, wr += w, bw += side) {
        for (int i = 0; i < side; i++) {
            float d = ek ? amount * bw[i] * ek[i] : amount * bw[i];
            float h0 = row[i], v = tap_erode(h0, d, stop);
            row[i] = v;
            col[i] += h0 - v;
            wr[i] += h0 - v;
        }
        if (ek)
            ek += w;
    }
    for (int i = 0; i < side; i++)
        taken += col[i];
    return taken;
}

/* The radius-3 brush as one AVX-512VL vector a row, 5 lanes under a mask:
 * no cell outside the 5x5 window is read or written (neighbouring blocks'
 * cells may belong to other threads).  The same operations as
 * brush_erode_clean tap by tap (amount * bw[i], tap_erode as max(o - d,
 * min(o, stop)) with vmaxps/vminps, which return their first operand
 * exactly when er_maxf/er_minf do) and the same sums in the same order
 * (each column from 0 down the rows, then taken from 0 over the columns
 * left to right), so the same bits.  GCC's vectoriser makes a 4-wide vector
 * and a scalar tap of each row even in an AVX-512 clone. */
#ifdef ER_DROPLET_AVX512
__attribute__((target("avx512f,avx512vl"), noinline)) float
er_brush5_avx512(float *restrict row, size_t w, const float *restrict bw, float amount, float stop)
{
    const __mmask8 m = 0x1f;
    const __m256 a = _mm256_set1_ps(amount), s = _mm256_set1_ps(stop);
    __m256 col = _mm256_setzero_ps();
#pragma GCC unroll 5
    for (int j = 0; j < 5; j++, row += w, bw += 5) {
        __m256 o = _mm256_maskz_loadu_ps(m, row);
        __m256 d = _mm256_mul_ps(a, _mm256_maskz_loadu_ps(m, bw));
        __m256 v = _mm256_max_ps(_mm256_sub_ps(o, d), _mm256_min_ps(o, s));
        _mm256_mask_storeu_ps(row, m, v);
        col = _mm256_add_ps(col, _mm256_sub_ps(o, v));
    }
    __m128 lo = _mm256_castps256_ps128(col);
    float taken = 0;
    taken += _mm_cvtss_f32(lo);
    taken += _mm_cvtss_f32(_mm_movehdup_ps(lo));
    taken += _mm_cvtss_f32(_mm_movehl_ps(lo, lo));
    taken += _mm_cvtss_f32(_mm_shuffle_ps(lo, lo, 3));
    taken += _mm_cvtss_f32(_mm256_extractf128_ps(col, 1));
    return taken;
}
#endif

/*
 * Erodes up to `amount` [m] through the brush centred on node (cx, cy),
 * each tap its weight's share (renormalised over the taps on the map and
 * off walls, as er_brush_apply), but no tap below `stop` [m]: the height
 * the droplet moves to (er_lague_step).  Returns what the taps gave up:
 * the droplet carries exactly that.  Each tap's o - new is a difference of
 * two floats at most a factor 2 apart in all but near-zero cases, so exact
 * (Sterbenz), and the load is the material removed up to the rounding of
 * the sum: a rounding of the small load, not of the heights.  The sum runs
 * column by column, each column top to bottom, then the columns left to
 * right: a fixed order (droplet_lague.comp sums in the same one), and the
 * columns' sums vectorise, where one running sum over all taps chains
 * side^2 dependent adds.
 */
float er_brush_erode(const er_dctx *c, int cx, int cy, float amount, float stop)
{
    const int side = c->brush_side, r1 = c->radius - 1;
    const size_t w = (size_t)c->width;
    const float *restrict bw = c->brush_w;
    const float *restrict ek = c->ctl_erode;
    float *restrict h = c->height_m;
    float taken = 0;

    if (c->sink)
        return er_snap_erode(c, cx, cy, amount, stop);
    if (er_brush_clean(c, cx, cy)) {
        size_t top = (size_t)(cy - r1) * w + (size_t)(cx - r1);
        if (c->wear)
            return brush_erode_wear(c, top, amount, stop);
        if (ek)
            return brush_erode_ctl(c, top, amount, stop);
        /* The default radius 3 with its side known: unrolled, the column
         * sums in registers. */
        return side == 5 ? brush_erode_clean(c, top, amount, stop, 5)
                         : brush_erode_clean(c, top, amount, stop, side);
    }
    int x0, x1, y0, y1;
    float sum = clipped_weight(c, bw, cx, cy, &x0, &x1, &y0, &y1);
    float k = amount / sum;
    for (int x = x0; x <= x1; x++) {
        float cs = 0;
        for (int y = y0; y <= y1; y++) {
            size_t i = (size_t)y * w + (size_t)x;
            if (!c->wall || !c->wall[i]) {
                float o = h[i], d = k * bw[(y - cy + r1) * side + (x - cx + r1)];
                if (ek)
                    d *= ek[i];
                float v = tap_erode(o, d, stop);
                h[i] = v;
                cs += o - v;
                if (c->wear)
                    c->wear[i] += o - v;
            }
        }
        taken += cs;
    }
    return taken;
}

/* er_droplet_allow_avx512's switch: read at set-up only. */
static int avx512_allowed = 1;

void er_droplet_allow_avx512(int on) { avx512_allowed = on; }

int er_droplet_avx512(void)
{
#ifdef ER_DROPLET_AVX512
    return avx512_allowed && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}
