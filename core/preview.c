/*
 * Shaded-relief previews (see preview.h).
 *
 * Every output pixel is computed on its own from the input arrays (its k x k
 * block of cells, each with its 3x3 neighbourhood), so rows can be drawn by
 * any thread in any order and the bytes never change.  The scales are the
 * only whole-map quantities: minima, maxima and integer histogram counts,
 * all independent of the order in which cells are visited.
 */
#include "preview.h"

#include "bits.h"
#include "parallel.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Light from the north-west, 45 degrees above the horizon, as a unit vector
 * towards the light in (x east, y south = down the rows, z up): horizontal
 * part cos 45 * (-1, -1) / sqrt 2 = (-1/2, -1/2), vertical sin 45 =
 * sqrt(1/2).  Its x and y components are equal, so a map mirrored about the
 * NW-SE diagonal (transposed) renders as the transposed picture. */
#define LIGHT_XY (-0.5)
#define LIGHT_Z 0.70710678118654752440

/* Auto exaggeration: stretch heights until relief / extent is at least
 * AUTO_RELIEF_RATIO, never more than AUTO_MAX.  Chosen by eye on the test
 * DEMs: Vermont's Green Mountains (1 km over 21 km, 90 m cells) read better
 * at 2x than at true scale; a 1025^2 map of 0..1 "heights" on 1 m cells
 * gets about 150x. */
#define AUTO_RELIEF_RATIO 0.10
#define AUTO_MAX 1000.0

/* Hillshade: a flat cell keeps the tint (factor 1 = n.L / LIGHT_Z); full
 * shadow keeps SHADE_AMBIENT of it; slopes facing the light brighten
 * towards white by at most SHADE_HIGHLIGHT. */
#define SHADE_AMBIENT 0.38
#define SHADE_HIGHLIGHT 0.45

/* Histogram of positive float bit patterns: IEEE 754 binary32 patterns of
 * positive numbers sort like the numbers, so bits >> 17 (8 exponent bits, 6
 * mantissa bits) is a monotone bin index with bins 2^-6 = 1.6 % wide. */
#define HIST_SHIFT 17
#define HIST_BINS (1 << (31 - HIST_SHIFT))

enum { L_WATER, L_SEDIMENT, L_DEPOSIT, L_EROSION, L_COUNT };

/* Overlay colours (linear 0..1 RGB) and the opacity of a full amount.  The
 * water blue has B = 1 so water always raises the blue channel. */
static const double overlay_rgb[L_COUNT][3] = {
    {0.10, 0.38, 1.00}, /* water: blue */
    {0.20, 0.95, 0.15}, /* suspended sediment: green */
    {0.92, 0.12, 0.08}, /* deposits: red */
    {0.55, 0.25, 0.02}, /* erosion: dark orange */
};
static const double overlay_alpha[L_COUNT] = {0.80, 0.75, 0.80, 0.65};

/* Drawing order, bottom to top: deposits lie on the ground, erosion is a
 * property of the ground, water covers both and carries the suspended
 * sediment. */
static const int overlay_order[L_COUNT] = {L_DEPOSIT, L_EROSION, L_WATER, L_SEDIMENT};

/* Hypsometric tint: t in [0, 1] over the height range, linear between
 * stops; low green, through olive and brown, to grey and white. */
#define N_STOPS 6
static const double tint_stop[N_STOPS][4] = {
    {0.00, 0.34, 0.52, 0.30},
    {0.20, 0.55, 0.64, 0.38},
    {0.42, 0.74, 0.70, 0.48},
    {0.62, 0.66, 0.55, 0.42},
    {0.82, 0.66, 0.63, 0.60},
    {1.00, 0.97, 0.97, 0.97},
};

er_preview_style er_preview_style_default(void)
{
    er_preview_style s;
    memset(&s, 0, sizeof s);
    s.exaggeration = 0.0;
    s.max_side = ER_PREVIEW_MAX_SIDE_DEFAULT;
    s.gap = 8;
    s.show_erosion = 0;
    s.wall_rgb[0] = s.wall_rgb[1] = s.wall_rgb[2] = 48;
    s.gap_rgb[0] = s.gap_rgb[1] = s.gap_rgb[2] = 255;
    return s;
}

static const float *layer_of(const er_preview_in *in, int l)
{
    switch (l) {
    case L_WATER: return in->water;
    case L_SEDIMENT: return in->sediment;
    case L_DEPOSIT: return in->deposit;
    default: return in->erosion;
    }
}

static er_status check_in(const er_preview_in *in, const er_preview_style *st, er_error *err)
{
    if (!in || in->width <= 0 || in->height <= 0 || !in->elevation)
        return er_fail(err, ER_EINVAL, "preview: empty map");
    if (!(in->cell_x > 0 && in->cell_y > 0 && isfinite(in->cell_x) && isfinite(in->cell_y)))
        return er_fail(err, ER_EINVAL, "preview: cell size must be positive");
    if (!(st->exaggeration >= 0 && isfinite(st->exaggeration)))
        return er_fail(err, ER_EINVAL, "preview: exaggeration must be 0 (auto) or positive");
    if (st->max_side < 0 || st->gap < 0)
        return er_fail(err, ER_EINVAL, "preview: max_side and gap must not be negative");
    return ER_OK;
}

/* Box-filter factor: the smallest k with ceil(side / k) <= max_side. */
static int shrink_factor(int w, int h, int max_side)
{
    int side = w > h ? w : h;
    if (max_side <= 0 || side <= max_side)
        return 1;
    return (side - 1) / max_side + 1;
}

er_status er_preview_size(const er_preview_in *in, int pair, int *out_w, int *out_h, er_error *err)
{
    er_preview_style def = er_preview_style_default();
    const er_preview_style *st = in && in->style ? in->style : &def;
    er_status s = check_in(in, st, err);
    if (s)
        return s;
    int k = shrink_factor(in->width, in->height, st->max_side);
    int w = (in->width - 1) / k + 1, h = (in->height - 1) / k + 1;
    if (pair) {
        if (w > (INT_MAX - st->gap) / 2)
            return er_fail(err, ER_EINVAL, "preview: picture too wide");
        w = 2 * w + st->gap;
    }
    size_t bytes;
    if (!er_mul_size((size_t)w, (size_t)h, &bytes) || !er_mul_size(bytes, 3, &bytes))
        return er_fail(err, ER_EINVAL, "preview: picture too large");
    *out_w = w;
    *out_h = h;
    return ER_OK;
}

/* ---- scales ------------------------------------------------------------ */

static int is_wall(const er_preview_in *in, size_t i)
{
    return (in->wall && in->wall[i]) || !isfinite(in->elevation[i]);
}

/* Per-thread partial results, allocated before the parallel region and
 * combined serially: mins and maxes are order-free, counts are integers. */
typedef struct part {
    double lo, hi;       /* height range seen */
    int any;             /* a valid cell was seen */
    float vmax;          /* largest positive layer value seen */
    uint64_t *hist;      /* HIST_BINS counts */
} part;

/* Height range of the valid cells of `in`, merged into parts[thread] (at
 * most nt threads: parts has nt entries). */
static void scan_heights(const er_preview_in *in, part *parts, int nt)
{
    int h = in->height;
    (void)nt;
    ER_OMP_PARALLEL(num_threads(nt))
    {
        part *p = &parts[er_thread_id()];
        ER_OMP_FOR_INNER()
        for (int y = 0; y < h; y++) {
            size_t row = (size_t)y * (size_t)in->width;
            for (size_t x = 0; x < (size_t)in->width; x++) {
                if (is_wall(in, row + x))
                    continue;
                double v = in->elevation[row + x];
                if (!p->any || v < p->lo)
                    p->lo = v;
                if (!p->any || v > p->hi)
                    p->hi = v;
                p->any = 1;
            }
        }
    }
}

/* Histogram of the positive finite values of layer `a` on the valid cells
 * of `in`, merged into parts[thread]. */
static void scan_layer(const er_preview_in *in, const float *a, part *parts, int nt)
{
    int h = in->height;
    (void)nt;
    ER_OMP_PARALLEL(num_threads(nt))
    {
        part *p = &parts[er_thread_id()];
        ER_OMP_FOR_INNER()
        for (int y = 0; y < h; y++) {
            size_t row = (size_t)y * (size_t)in->width;
            for (size_t x = 0; x < (size_t)in->width; x++) {
                float v = a[row + x];
                if (!(v > 0) || !isfinite(v) || is_wall(in, row + x))
                    continue;
                p->hist[er_float_bits(v) >> HIST_SHIFT]++;
                if (v > p->vmax)
                    p->vmax = v;
            }
        }
    }
}

/* The 99th percentile from the merged histogram: the upper edge of the bin
 * holding the ceil(0.99 n)-th smallest value, at most the largest value. */
static double percentile99(const uint64_t *hist, float vmax)
{
    uint64_t n = 0;
    for (int b = 0; b < HIST_BINS; b++)
        n += hist[b];
    if (n == 0)
        return 0.0;
    uint64_t rank = n - n / 100, seen = 0; /* ceil(0.99 n) */
    int b = 0;
    for (; b < HIST_BINS - 1; b++) {
        seen += hist[b];
        if (seen >= rank)
            break;
    }
    float edge = er_bits_float((uint32_t)(b + 1) << HIST_SHIFT);
    /* The top bins' edges are infinity or NaN patterns: vmax wins. */
    return isfinite(edge) && edge < vmax ? (double)edge : (double)vmax;
}

er_status er_preview_scale_compute(const er_preview_in *const *in, int n, er_preview_scale *scale, er_error *err)
{
    if (n < 1 || !in)
        return er_fail(err, ER_EINVAL, "preview: no map");
    er_preview_style def = er_preview_style_default();
    const er_preview_style *st = in[0] && in[0]->style ? in[0]->style : &def;
    for (int m = 0; m < n; m++) {
        er_status s = check_in(in[m], st, err);
        if (s)
            return s;
        if (in[m]->width != in[0]->width || in[m]->height != in[0]->height)
            return er_fail(err, ER_EINVAL, "preview: maps differ in size (%dx%d and %dx%d)", in[0]->width,
                           in[0]->height, in[m]->width, in[m]->height);
    }
    int nt = er_thread_count();
    if (nt < 1)
        nt = 1;
    part *parts = calloc((size_t)nt, sizeof *parts);
    uint64_t *hist = calloc((size_t)nt * HIST_BINS, sizeof *hist);
    if (!parts || !hist) {
        free(parts);
        free(hist);
        return er_fail(err, ER_ENOMEM, "preview: out of memory");
    }
    for (int t = 0; t < nt; t++)
        parts[t].hist = hist + (size_t)t * HIST_BINS;

    memset(scale, 0, sizeof *scale);
    for (int m = 0; m < n; m++)
        scan_heights(in[m], parts, nt);
    int any = 0;
    double lo = 0, hi = 0;
    for (int t = 0; t < nt; t++) {
        if (!parts[t].any)
            continue;
        if (!any || parts[t].lo < lo)
            lo = parts[t].lo;
        if (!any || parts[t].hi > hi)
            hi = parts[t].hi;
        any = 1;
    }
    /* + 0.0 turns a -0 minimum into +0: which zero a min returns depends
     * on the visiting order. */
    scale->height_min = lo + 0.0;
    scale->height_max = hi + 0.0;

    if (st->exaggeration > 0) {
        scale->exaggeration = st->exaggeration;
    } else {
        double relief = hi - lo;
        double ex = (double)in[0]->width * in[0]->cell_x, ey = (double)in[0]->height * in[0]->cell_y;
        double extent = ex > ey ? ex : ey;
        double z = 1.0;
        if (relief > 0 && AUTO_RELIEF_RATIO * extent > relief)
            z = AUTO_RELIEF_RATIO * extent / relief;
        scale->exaggeration = z < AUTO_MAX ? z : AUTO_MAX;
    }

    double *out[L_COUNT] = {&scale->water_max, &scale->sediment_max, &scale->deposit_max, &scale->erosion_max};
    for (int l = 0; l < L_COUNT; l++) {
        if (l == L_EROSION && !st->show_erosion)
            continue;
        int present = 0;
        for (int m = 0; m < n; m++) {
            const float *a = layer_of(in[m], l);
            if (!a)
                continue;
            if (!present) {
                memset(hist, 0, (size_t)nt * HIST_BINS * sizeof *hist);
                for (int t = 0; t < nt; t++)
                    parts[t].vmax = 0;
            }
            present = 1;
            scan_layer(in[m], a, parts, nt);
        }
        if (!present)
            continue;
        float vmax = 0;
        for (int t = 1; t < nt; t++)
            for (int b = 0; b < HIST_BINS; b++)
                hist[b] += parts[t].hist[b];
        for (int t = 0; t < nt; t++)
            if (parts[t].vmax > vmax)
                vmax = parts[t].vmax;
        *out[l] = percentile99(hist, vmax);
    }
    free(parts);
    free(hist);
    return ER_OK;
}

/* ---- drawing ----------------------------------------------------------- */

typedef struct render_ctx {
    const er_preview_in *in;
    const er_preview_style *st;
    const er_preview_scale *sc;
    double kx, ky;             /* exaggeration / (8 cell): Horn's sums to slopes */
    double range;              /* height_max - height_min [m] */
    const float *layer[L_COUNT];
    double vmax[L_COUNT];      /* full-opacity amount; 0 = layer not drawn */
} render_ctx;

/* Height of the neighbour (x, y), clamped into the map; a wall or a
 * non-finite neighbour reads as the centre cell, so walls cast no slope. */
static double neighbour(const er_preview_in *in, int x, int y, double centre)
{
    x = x < 0 ? 0 : x >= in->width ? in->width - 1 : x;
    y = y < 0 ? 0 : y >= in->height ? in->height - 1 : y;
    size_t i = (size_t)y * (size_t)in->width + (size_t)x;
    return is_wall(in, i) ? centre : (double)in->elevation[i];
}

static void tint(double t, double rgb[3])
{
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    int s = 1;
    while (s < N_STOPS - 1 && t > tint_stop[s][0])
        s++;
    const double *a = tint_stop[s - 1], *b = tint_stop[s];
    double f = (t - a[0]) / (b[0] - a[0]);
    for (int c = 0; c < 3; c++)
        rgb[c] = a[c + 1] + (b[c + 1] - a[c + 1]) * f;
}

/* Colour of cell (x, y) in linear 0..1 RGB. */
static void cell_colour(const render_ctx *c, int x, int y, double rgb[3])
{
    const er_preview_in *in = c->in;
    size_t i = (size_t)y * (size_t)in->width + (size_t)x;
    if (is_wall(in, i)) {
        for (int k = 0; k < 3; k++)
            rgb[k] = c->st->wall_rgb[k] / 255.0;
        return;
    }
    double h = in->elevation[i];

    /* Horn (1981): 3x3 weighted differences.  gx along the row (east), gy
     * down the rows (south); the terms of gy are those of gx with x and y
     * swapped, in the same order, so the transpose symmetry is exact. */
    double nw = 0, n = 0, ne = 0, w = 0, e = 0, sw = 0, s = 0, se = 0;
    int direct = !in->wall && x > 0 && y > 0 && x < in->width - 1 && y < in->height - 1;
    if (direct) {
        /* Interior, no walls: read directly; a non-finite neighbour (rare:
         * walls are usually flagged) takes the careful path below, which
         * gives the same values whenever all nine are finite. */
        const float *r0 = in->elevation + i - (size_t)in->width, *r1 = in->elevation + i,
                    *r2 = in->elevation + i + (size_t)in->width;
        nw = r0[-1], n = r0[0], ne = r0[1];
        w = r1[-1], e = r1[1];
        sw = r2[-1], s = r2[0], se = r2[1];
        direct = isfinite(((nw + n) + (ne + w)) + ((e + sw) + (s + se)));
    }
    if (!direct) {
        nw = neighbour(in, x - 1, y - 1, h), n = neighbour(in, x, y - 1, h);
        ne = neighbour(in, x + 1, y - 1, h), w = neighbour(in, x - 1, y, h);
        e = neighbour(in, x + 1, y, h), sw = neighbour(in, x - 1, y + 1, h);
        s = neighbour(in, x, y + 1, h), se = neighbour(in, x + 1, y + 1, h);
    }
    double gx = ((ne + 2.0 * e) + se) - ((nw + 2.0 * w) + sw);
    double gy = ((sw + 2.0 * s) + se) - ((nw + 2.0 * n) + ne);
    double sx = gx * c->kx, sy = gy * c->ky;

    /* Lambert: n = (-sx, -sy, 1) / |.|, light L; shade = n.L / L_z, 1 on
     * flat ground. */
    double dot = (-sx * LIGHT_XY + -sy * LIGHT_XY) + LIGHT_Z;
    double shade = dot / sqrt((sx * sx + sy * sy) + 1.0) / LIGHT_Z;
    if (shade < 0)
        shade = 0;

    double t = c->range > 0 ? (h - c->sc->height_min) / c->range : 0.5;
    tint(t, rgb);
    if (shade <= 1.0) {
        double f = SHADE_AMBIENT + (1.0 - SHADE_AMBIENT) * shade;
        for (int k = 0; k < 3; k++)
            rgb[k] *= f;
    } else {
        /* shade <= 1 / LIGHT_Z = sqrt 2 */
        double f = (shade - 1.0) / (1.0 / LIGHT_Z - 1.0) * SHADE_HIGHLIGHT;
        for (int k = 0; k < 3; k++)
            rgb[k] += (1.0 - rgb[k]) * f;
    }

    for (int o = 0; o < L_COUNT; o++) {
        int l = overlay_order[o];
        if (!c->layer[l] || !(c->vmax[l] > 0))
            continue;
        float v = c->layer[l][i];
        if (!(v > 0) || !isfinite(v))
            continue;
        double amount = v / c->vmax[l];
        /* sqrt: thin films stay visible next to deep rivers */
        double a = overlay_alpha[l] * sqrt(amount < 1.0 ? amount : 1.0);
        for (int k = 0; k < 3; k++)
            rgb[k] = rgb[k] * (1.0 - a) + overlay_rgb[l][k] * a;
    }
}

static uint8_t to_byte(double v)
{
    double b = v * 255.0 + 0.5;
    return !(b > 0) ? 0 : b >= 255.0 ? 255 : (uint8_t)b; /* NaN: 0 */
}

/* Draws in (k x k box filter) into rgb at column offset x0 of a picture
 * `stride_px` pixels wide. */
static void draw(const render_ctx *c, int k, int ow, int oh, uint8_t *rgb, size_t stride_px, size_t x0)
{
    const er_preview_in *in = c->in;
    ER_OMP_FOR()
    for (int oy = 0; oy < oh; oy++) {
        int y1 = (oy + 1) * k < in->height ? (oy + 1) * k : in->height;
        uint8_t *p = rgb + ((size_t)oy * stride_px + x0) * 3;
        for (int ox = 0; ox < ow; ox++) {
            int x1 = (ox + 1) * k < in->width ? (ox + 1) * k : in->width;
            double sum[3] = {0, 0, 0}, px[3];
            int count = 0;
            for (int y = oy * k; y < y1; y++) {
                for (int x = ox * k; x < x1; x++) {
                    cell_colour(c, x, y, px);
                    sum[0] += px[0];
                    sum[1] += px[1];
                    sum[2] += px[2];
                    count++;
                }
            }
            for (int q = 0; q < 3; q++)
                *p++ = to_byte(count == 1 ? sum[q] : sum[q] / count);
        }
    }
}

static er_status check_scale(const er_preview_scale *sc, er_error *err)
{
    double v[6] = {sc->height_min, sc->height_max, sc->water_max, sc->sediment_max, sc->deposit_max,
                   sc->erosion_max};
    for (int i = 0; i < 6; i++)
        if (!isfinite(v[i]))
            return er_fail(err, ER_EINVAL, "preview: non-finite scale");
    if (sc->height_min > sc->height_max || !(sc->exaggeration > 0 && isfinite(sc->exaggeration)))
        return er_fail(err, ER_EINVAL, "preview: bad height range or exaggeration");
    return ER_OK;
}

static er_status render_at(const er_preview_in *in, const er_preview_style *st, const er_preview_scale *sc,
                           uint8_t *rgb, size_t stride_px, size_t x0, er_error *err)
{
    er_status s = check_in(in, st, err);
    if (!s)
        s = check_scale(sc, err);
    if (s)
        return s;
    render_ctx c;
    memset(&c, 0, sizeof c);
    c.in = in;
    c.st = st;
    c.sc = sc;
    c.kx = sc->exaggeration / (8.0 * in->cell_x);
    c.ky = sc->exaggeration / (8.0 * in->cell_y);
    c.range = sc->height_max - sc->height_min;
    double vmax[L_COUNT] = {sc->water_max, sc->sediment_max, sc->deposit_max, sc->erosion_max};
    for (int l = 0; l < L_COUNT; l++) {
        if (l == L_EROSION && !st->show_erosion)
            continue;
        c.layer[l] = layer_of(in, l);
        c.vmax[l] = vmax[l] > 0 ? vmax[l] : 0;
    }
    int k = shrink_factor(in->width, in->height, st->max_side);
    int ow = (in->width - 1) / k + 1, oh = (in->height - 1) / k + 1;
    draw(&c, k, ow, oh, rgb, stride_px ? stride_px : (size_t)ow, x0);
    return ER_OK;
}

er_status er_preview_render_scaled(const er_preview_in *in, const er_preview_scale *scale, uint8_t *rgb,
                                   er_error *err)
{
    er_preview_style def = er_preview_style_default();
    const er_preview_style *st = in && in->style ? in->style : &def;
    return render_at(in, st, scale, rgb, 0, 0, err);
}

er_status er_preview_render(const er_preview_in *in, uint8_t *rgb, er_error *err)
{
    er_preview_scale sc;
    er_status s = er_preview_scale_compute(&in, 1, &sc, err);
    if (s)
        return s;
    return er_preview_render_scaled(in, &sc, rgb, err);
}

er_status er_preview_render_pair(const er_preview_in *before, const er_preview_in *after, uint8_t *rgb,
                                 er_error *err)
{
    if (!before || !after)
        return er_fail(err, ER_EINVAL, "preview: no map");
    er_preview_style def = er_preview_style_default();
    const er_preview_style *st = after->style ? after->style : &def;
    er_preview_in b = *before;
    b.style = st;
    const er_preview_in *both[2] = {&b, after};
    er_preview_scale sc;
    er_status s = er_preview_scale_compute(both, 2, &sc, err);
    int w, h;
    if (!s)
        s = er_preview_size(after, 1, &w, &h, err);
    if (s)
        return s;
    int half = (w - st->gap) / 2;
    for (int y = 0; y < h; y++) {
        uint8_t *p = rgb + ((size_t)y * (size_t)w + (size_t)half) * 3;
        for (int x = 0; x < st->gap; x++, p += 3)
            memcpy(p, st->gap_rgb, 3);
    }
    s = render_at(&b, st, &sc, rgb, (size_t)w, 0, err);
    if (!s)
        s = render_at(after, st, &sc, rgb, (size_t)w, (size_t)(half + st->gap), err);
    return s;
}
