/*
 * The "snapshot" droplet schedule (droplet.schedule, issue #14): every
 * droplet of a batch reads the terrain as it was at the batch start and
 * adds each change it makes into per-cell signed 64-bit fixed-point
 * accumulators; a resolve pass applies them.  Integer addition is
 * associative and commutative, so the sums, and the terrain after the
 * resolve, do not depend on the order the droplets ran in: the same bits
 * for any thread count.  The per-droplet float arithmetic is the blocks
 * schedule's (core/droplet/droplet.c), on the snapshot.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "droplet_impl.h"
#include "../parallel.h"

/* Fraction bits below the largest input height: the fixed-point unit is
 * 2^(e - ER_SNAP_FRAC) m, 2^e > max(|lo|, |hi|, hi - lo) >= 2^(e-1), so
 * 2^-12 of the float spacing of the heights at the top (2^(e - 24)), or
 * 2^-13 where the relief exceeds the largest |height| (at most twice it): a
 * tap's change that float storage keeps (at least half a spacing) is
 * never rounded away (test snapshot_unit_keeps_ulp), and the rounding to
 * nearest of many taps' changes cancels rather than adding up.  Overflow:
 * a sum holds up to 2^62 units, 2^(62 - 36) = 2^26 times 2^e; every term is
 * >= 0 and one droplet's change at one cell is at most its load, which
 * stays within a few reliefs, so a cell would need the loads of millions
 * of droplets of one batch to wrap; the resolve refuses a sum that wrapped
 * negative. */
#define ER_SNAP_FRAC 36

/* Water: 2^40 times the largest start water per cell per batch, a unit of
 * 2^-22 of it; water below that (a droplet evaporated to 2^-22 of its start)
 * is not counted in the flow layer. */
#define ER_SNAP_WATER_HEADROOM 40

/* The exponent e with 2^(e-1) <= v < 2^e (frexp), 0 for v <= 0. */
static int exponent_of(double v)
{
    int e = 0;
    if (v > 0)
        frexp(v, &e);
    return e;
}

int er_snap_height_shift(double lo, double hi)
{
    double m = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    if (hi - lo > m)
        m = hi - lo;
    return ER_SNAP_FRAC - exponent_of(m > 0 ? m : 1.0);
}

int er_snap_water_shift(double water_max)
{
    return 62 - ER_SNAP_WATER_HEADROOM - exponent_of(water_max > 0 ? water_max : 1.0);
}

/* v >= 0 [m or water] in units of 1/scale, rounded to nearest (ties to
 * even: GLSL roundEven), so the rounding errors of many taps cancel
 * instead of adding up as a truncation's would: the float product by a
 * power of two is exact, rintf (the default rounding mode) rounds it, and
 * the cap below 2^62 keeps the conversion defined whatever v is. */
static inline int64_t to_fixed(float v, float scale)
{
    float u = rintf(v * scale);
    return (int64_t)(u < 0x1p62f ? u : 0x1p62f);
}

static inline void add_fixed(int64_t *a, float v, float scale)
{
    int64_t q = to_fixed(v, scale);
    if (q)
        __atomic_fetch_add(a, q, __ATOMIC_RELAXED);
}

int32_t er_snap_ordered(float f)
{
    int32_t b;
    memcpy(&b, &f, sizeof b);
    return b >= 0 ? b : b ^ INT32_MAX;
}

float er_snap_from_ordered(int32_t o)
{
    int32_t b = o >= 0 ? o : o ^ INT32_MAX;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Keeps in *a the lowest stop of the droplets that eroded the cell. */
static inline void min_stop(int32_t *a, float stop)
{
    int32_t v = er_snap_ordered(stop), cur = __atomic_load_n(a, __ATOMIC_RELAXED);
    while (v < cur && !__atomic_compare_exchange_n(a, &cur, v, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED))
        ;
}

/* The brush window around (cx, cy) clipped to the map, and the factor a
 * tap's weight is multiplied by: the amount itself on a clean window (the
 * weights sum to 1 there), else amount over the in-map, off-wall weight
 * (the blocks schedule's two paths, in the same float operations). */
static float brush_window(const er_dctx *c, int cx, int cy, float amount, int *x0, int *x1,
                          int *y0, int *y1)
{
    const int r1 = c->radius - 1, side = c->brush_side, a = c->clean_a;
    const size_t w = (size_t)c->width;
    *x0 = cx - r1 < 0 ? 0 : cx - r1;
    *x1 = cx + r1 >= c->width ? c->width - 1 : cx + r1;
    *y0 = cy - r1 < 0 ? 0 : cy - r1;
    *y1 = cy + r1 >= c->height ? c->height - 1 : cy + r1;
    int clean = cx >= a && cx < c->width - a && cy >= a && cy < c->height - a &&
                (!c->clean || c->clean[(size_t)cy * w + (size_t)cx]);
    if (clean)
        return amount;
    float sum = 0;
    for (int y = *y0; y <= *y1; y++)
        for (int x = *x0; x <= *x1; x++)
            if (!c->wall || !c->wall[(size_t)y * w + (size_t)x])
                sum += c->brush_w[(y - cy + r1) * side + (x - cx + r1)];
    return amount / sum;
}

float er_snap_erode(const er_dctx *c, int cx, int cy, float amount, float stop)
{
    const er_dsink *k = c->sink;
    const int side = c->brush_side, r1 = c->radius - 1;
    const size_t w = (size_t)c->width;
    int x0, x1, y0, y1;
    float f = brush_window(c, cx, cy, amount, &x0, &x1, &y0, &y1), taken = 0;
    /* Column by column, each top to bottom: brush_erode's order. */
    for (int x = x0; x <= x1; x++) {
        float cs = 0;
        for (int y = y0; y <= y1; y++) {
            size_t i = (size_t)y * w + (size_t)x;
            if (c->wall && c->wall[i])
                continue;
            float d = f * c->brush_w[(y - cy + r1) * side + (x - cx + r1)];
            if (c->ctl_erode)
                d *= c->ctl_erode[i];
            float o = c->height_m[i], v = er_maxf(o - d, er_minf(o, stop));
            cs += o - v;
            if (o - v > 0) {
                add_fixed(k->ero + i, o - v, k->h_scale);
                min_stop(k->stop + i, stop);
            }
        }
        taken += cs;
    }
    return taken;
}

float er_snap_deposit(const er_dctx *c, int cx, int cy, float amount)
{
    const er_dsink *k = c->sink;
    const int side = c->brush_side, r1 = c->radius - 1;
    const size_t w = (size_t)c->width;
    int x0, x1, y0, y1;
    float f = brush_window(c, cx, cy, amount, &x0, &x1, &y0, &y1), laid = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            size_t i = (size_t)y * w + (size_t)x;
            if (c->wall && c->wall[i])
                continue;
            float d = f * c->brush_w[(y - cy + r1) * side + (x - cx + r1)];
            if (c->ctl_mask)
                d *= c->ctl_mask[i];
            add_fixed(k->dep + i, -d, k->h_scale);
            laid -= d;
        }
    return c->ctl_mask ? laid : -amount;
}

void er_snap_deposit4(const er_dctx *c, size_t i00, const float a[4])
{
    const size_t w = (size_t)c->width, at[4] = {i00, i00 + 1, i00 + w, i00 + w + 1};
    for (int j = 0; j < 4; j++)
        add_fixed(c->sink->dep + at[j], a[j], c->sink->h_scale);
}

void er_snap_flow(const er_dctx *c, const size_t *trail, int n, float water)
{
    for (int j = 0; j < n; j++) {
        add_fixed(c->sink->flow + trail[j], water, c->sink->w_scale);
        water *= c->keep_water;
    }
}

er_status er_snap_new(er_dsink *k, size_t cells, int want_flow, er_error *err)
{
    memset(k, 0, sizeof *k);
    k->cells = cells;
    k->snap = malloc(cells * sizeof *k->snap);
    k->ero = malloc(cells * sizeof *k->ero);
    k->dep = malloc(cells * sizeof *k->dep);
    k->stop = malloc(cells * sizeof *k->stop);
    k->flow = want_flow ? malloc(cells * sizeof *k->flow) : NULL;
    if (!k->snap || !k->ero || !k->dep || !k->stop || (want_flow && !k->flow)) {
        er_snap_free(k);
        return er_fail(err, ER_ENOMEM, "droplet: out of memory for the snapshot schedule");
    }
    return ER_OK;
}

void er_snap_free(er_dsink *k)
{
    free(k->snap);
    free(k->ero);
    free(k->dep);
    free(k->stop);
    free(k->flow);
    memset(k, 0, sizeof *k);
}

void er_snap_begin(er_dsink *k, const float *height)
{
    memcpy(k->snap, height, k->cells * sizeof *k->snap);
    memset(k->ero, 0, k->cells * sizeof *k->ero);
    memset(k->dep, 0, k->cells * sizeof *k->dep);
    if (k->flow)
        memset(k->flow, 0, k->cells * sizeof *k->flow);
    for (size_t i = 0; i < k->cells; i++)
        k->stop[i] = INT32_MAX;
}

/*
 * The depth bound under many droplets (issue #12): each droplet's taps
 * stop at its own `stop`, but the droplets of a batch all read the same
 * snapshot height, so together they may take a cell below every one of
 * them.  The applied erosion is clamped to snap - (the lowest stop of the
 * droplets that took from the cell), itself >= the lowest height of the
 * batch start, so the terrain never goes below the input's lowest.  The
 * droplets carried the whole demand, so what the clamp withholds was laid
 * down or carried off by them without leaving the cell: it is counted in
 * the budget as `withheld` (before - after - left_map + withheld = 0).
 * Returns the withheld material in units of the height scale, or -1 when
 * a sum wrapped (overflow; never with the headroom above).
 */
int64_t er_snap_resolve(const er_dsink *k, float *height, float *deposit, float *wear,
                        float *flow)
{
    const double hu = 1.0 / (double)k->h_scale, wu = 1.0 / (double)k->w_scale;
    const ptrdiff_t n = (ptrdiff_t)k->cells;
    int64_t withheld = 0, bad = 0;
    ER_OMP_FOR(reduction(+ : withheld, bad))
    for (ptrdiff_t i = 0; i < n; i++) {
        int64_t e = k->ero[i], d = k->dep[i];
        if (k->flow && flow && k->flow[i])
            flow[i] += (float)((double)k->flow[i] * wu);
        if (e == 0 && d == 0)
            continue;
        bad += e < 0 || d < 0;
        float h0 = k->snap[i], bound = h0;
        if (e > 0) {
            bound = er_minf(h0, er_snap_from_ordered(k->stop[i]));
            /* capped as to_fixed, so the conversion is defined for any span */
            double span = ((double)h0 - (double)bound) * (double)k->h_scale;
            int64_t room = (int64_t)(span < 0x1p62 ? span : 0x1p62);
            if (e > room) {
                withheld += e - room;
                e = room;
            }
        }
        float h = (float)((double)h0 - (double)e * hu + (double)d * hu);
        height[i] = er_maxf(h, bound);
        if (wear && e)
            wear[i] += (float)((double)e * hu);
        if (deposit && d)
            deposit[i] += (float)((double)d * hu);
    }
    return bad ? -1 : withheld;
}
