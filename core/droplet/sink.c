/*
 * The "snapshot" droplet schedule (droplet.schedule): every droplet of a
 * batch reads the terrain as it was at the batch start and adds each
 * change it makes into per-cell signed 64-bit fixed-point accumulators; a
 * resolve pass applies them.  Integer addition is
 * associative and commutative, so the sums, and the terrain after the
 * resolve, do not depend on the order the droplets ran in: the same bits
 * for any thread count.  The per-droplet float arithmetic is the blocks
 * schedule's (lague.c, brush.c), on the snapshot.  This file is the
 * sink: the fixed-point sums, the shares and the resolve; a batch
 * (er_droplet_snap_batch) is snapshot.c's.
 *
 * Shares.  All droplets of a batch read one height per cell, so together
 * they could take a cell below every one's stop.
 * In Lague's step the path, speed, water, the height drop dh and the stop
 * depend only on the heights read, never on the load; the load only
 * decides how much a step takes, and a step takes nothing where dh >= 0
 * or where its load exceeds the capacity.  So a first pass runs every
 * droplet asking at each step for what it would with no load (the largest
 * amount any step could ask for, as (cap - sed) <= cap) and counts, per
 * cell, the taps that could take from it, with the lowest stop of those
 * taps as the cell's floor (integer adds and an integer min: any order, so
 * deterministic).  The main pass then reads the same heights, so its taps
 * that take are among those counted, and each takes at most room / count
 * (er_snap_room: the cell's height above the floor, in fixed point,
 * truncated).  The sum of the
 * takes never exceeds the room: no clamp, nothing withheld, no cell below
 * its floor (a stop: a mean of nodes of the batch start, so never below
 * the input's lowest), and the droplet carries what the cell gives up to
 * the rounding of one tap to the unit.  The cost: each droplet's path is
 * traced twice.
 *
 * Deposits need the same bound from above.  Every droplet that ends in a
 * pit lays its whole load there, every droplet that climbs out of one
 * fills it to the height it climbs to, and each reads the pit as it was
 * at the batch start: run one after another, the first ones would fill the
 * pit and the next would run over it, but here nothing tells them the pit
 * is full, so the loads of all the batch's droplets add up into a tower.
 * A hollow filled by deposits rises at most to its rim, so a cell's
 * deposits may raise it at most to its ceiling, the highest batch-start
 * height of its 3 x 3 neighbourhood (er_snap_ceiling): a batch can fill a
 * hollow level with its highest neighbour but never builds a cell above
 * every neighbour it had (a cell of a flat takes nothing until a
 * neighbour rises), and the terrain never rises above the input's highest
 * cell.  Whether a step deposits depends on the load: the count pass
 * carries the most the main pass's load can be (every tap's take
 * unshared, nothing laid: er_lague_count) and counts the four bilinear
 * nodes of every step where that load could deposit and the brush taps of
 * every end where it is not 0 (dcount: a step's four nodes counted once,
 * at its quad); in the main pass each tap lays at most room up / its
 * count.  What the shares withhold stays
 * with the droplet, which carries it on, lays it where there is room, or
 * takes it off the map; withheld where the droplet ends, it leaves the
 * terrain with the droplet and is counted with what left the map, as a
 * mask map's (er_end_load): the budget closes.
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

/* The scales are floats (the shader's push constants too): 2^126 is the
 * largest power of two they hold, so a shift stops there.  Only heights
 * below 2^-91 m (4e-28) or start water below 2^-105 reach it; their unit
 * is then coarser than 2^-12 of their float spacing but no coarser than
 * the spacing itself down to 2^-102 m, and the sums hold more headroom,
 * not less. */
#define ER_SNAP_SHIFT_MAX 126

static int shift_at_most(int shift)
{
    return shift < ER_SNAP_SHIFT_MAX ? shift : ER_SNAP_SHIFT_MAX;
}

int er_snap_height_shift(double lo, double hi)
{
    double m = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    if (hi - lo > m)
        m = hi - lo;
    return shift_at_most(ER_SNAP_FRAC - exponent_of(m > 0 ? m : 1.0));
}

int er_snap_water_shift(double water_max)
{
    return shift_at_most(62 - ER_SNAP_WATER_HEADROOM - exponent_of(water_max > 0 ? water_max : 1.0));
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

/* Keeps in *a the lowest stop of the taps counted at the cell. */
static inline void min_stop(int32_t *a, float stop)
{
    int32_t v = er_snap_ordered(stop), cur = __atomic_load_n(a, __ATOMIC_RELAXED);
    while (v < cur && !__atomic_compare_exchange_n(a, &cur, v, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED))
        ;
}

/* (top - bottom) * scale truncated, capped below 2^62; top >= bottom. */
static int64_t room_between(float bottom, float top, float scale)
{
    double span = ((double)top - (double)bottom) * (double)scale;
    return (int64_t)(span < 0x1p62 ? span : 0x1p62);
}

int64_t er_snap_room(float snap, int32_t stop, float scale)
{
    return room_between(er_minf(snap, er_snap_from_ordered(stop)), snap, scale);
}

/* The 3 x 3 neighbourhood row by row, the max in that order (the shader's). */
float er_snap_ceiling(const er_dsink *k, size_t i)
{
    const size_t w = (size_t)k->width;
    const int x = (int)(i % w), y = (int)(i / w);
    float top = k->snap[i];
    for (int v = y - 1; v <= y + 1; v++)
        for (int u = x - 1; u <= x + 1; u++) {
            if (u < 0 || v < 0 || u >= k->width || v >= k->height)
                continue;
            size_t j = (size_t)v * w + (size_t)u;
            if (!k->wall || !k->wall[j])
                top = er_maxf(top, k->snap[j]);
        }
    return top;
}

int64_t er_snap_room_up(const er_dsink *k, size_t i, float scale)
{
    return room_between(k->snap[i], k->ceil[i], scale);
}

/* The taps that may lay on cell i: its end-brush taps, and the steps of
 * the four quads it is a corner of (a step's four nodes counted once, at
 * its quad: one atomic add a step, not four). */
static inline int64_t deposit_taps(const er_dsink *k, size_t i)
{
    const size_t w = (size_t)k->width;
    const int32_t *q = k->dcount + k->cells;
    const int x = (int)(i % w), y = (int)(i / w);
    int64_t n = (int64_t)k->dcount[i] + q[i];
    if (x > 0)
        n += q[i - 1];
    if (y > 0)
        n += q[i - w] + (x > 0 ? q[i - w - 1] : 0);
    return n;
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

/* What a tap that would give g > 0 [m] gives: its count pass's share at
 * most (the file's comment), added to the erosion sum.  The float the
 * droplet carries is g, or the share as a float where that binds. */
static inline float tap_take(const er_dsink *k, size_t i, float o, float g)
{
    int64_t q = to_fixed(g, k->h_scale), n = k->count[i];
    int64_t share = n > 0 ? er_snap_room(o, k->stop[i], k->h_scale) / n : 0;
    if (q > share) {
        q = share;
        g = (float)((double)q / (double)k->h_scale);
    }
    if (q)
        __atomic_fetch_add(k->ero + i, q, __ATOMIC_RELAXED);
    return g;
}

float er_snap_erode(const er_dctx *c, int cx, int cy, float amount, float stop)
{
    const er_dsink *k = c->sink;
    const int side = c->brush_side, r1 = c->radius - 1;
    const size_t w = (size_t)c->width;
    int x0, x1, y0, y1;
    float f = brush_window(c, cx, cy, amount, &x0, &x1, &y0, &y1), taken = 0;
    /* Column by column, each top to bottom: er_brush_erode's order. */
    for (int x = x0; x <= x1; x++) {
        float cs = 0;
        for (int y = y0; y <= y1; y++) {
            size_t i = (size_t)y * w + (size_t)x;
            if (c->wall && c->wall[i])
                continue;
            float d = f * c->brush_w[(y - cy + r1) * side + (x - cx + r1)];
            if (c->ctl_erode)
                d *= c->ctl_erode[i];
            float o = c->height_m[i], g = o - er_maxf(o - d, er_minf(o, stop));
            if (!(g > 0))
                continue;
            if (k->counting) {
                __atomic_fetch_add(k->count + i, 1, __ATOMIC_RELAXED);
                min_stop(k->stop + i, stop);
                cs += g;
                continue;
            }
            cs += tap_take(k, i, o, g);
        }
        taken += cs;
    }
    return taken;
}

/* What a deposit tap that would lay a [m] at cell i lays: at most its
 * count pass's share of the cell's room up (the file's comment), added to
 * the deposit sum.  Returns what the share withheld (a - laid as a float,
 * >= 0; 0 where the share does not bind). */
static inline float tap_lay(const er_dsink *k, size_t i, float a)
{
    int64_t q = to_fixed(a, k->h_scale);
    if (q <= 0)
        return 0;
    /* q <= room / n without the division where q is far below the room
     * (n < 2^31: then q * n < room) */
    int64_t room = er_snap_room_up(k, i, k->h_scale), n = deposit_taps(k, i);
    int64_t share = q <= room >> 31 ? q : n > 0 ? room / n : 0;
    float kept = 0;
    if (q > share) {
        q = share;
        kept = a - (float)((double)q / (double)k->h_scale);
    }
    if (q)
        __atomic_fetch_add(k->dep + i, q, __ATOMIC_RELAXED);
    return kept;
}

/* What a deposit writer returns: what the blocks schedule would lay, less
 * what the shares withheld (never below 0 through rounding). */
static inline float laid_less(float laid, float kept)
{
    return kept > 0 ? er_maxf(laid - kept, 0.0f) : laid;
}

float er_snap_deposit(const er_dctx *c, int cx, int cy, float amount)
{
    const er_dsink *k = c->sink;
    const int side = c->brush_side, r1 = c->radius - 1;
    const size_t w = (size_t)c->width;
    int x0, x1, y0, y1;
    float f = brush_window(c, cx, cy, amount, &x0, &x1, &y0, &y1), laid = 0, kept = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            size_t i = (size_t)y * w + (size_t)x;
            if (c->wall && c->wall[i])
                continue;
            float bw = c->brush_w[(y - cy + r1) * side + (x - cx + r1)];
            if (k->counting) {
                if (bw > 0)
                    __atomic_fetch_add(k->dcount + i, 1, __ATOMIC_RELAXED);
                continue;
            }
            float d = f * bw;
            if (c->ctl_mask)
                d *= c->ctl_mask[i];
            kept += tap_lay(k, i, -d);
            laid -= d;
        }
    return laid_less(c->ctl_mask ? laid : -amount, kept);
}

float er_snap_deposit4(const er_dctx *c, size_t i00, const float a[4], float laid)
{
    const size_t w = (size_t)c->width, at[4] = {i00, i00 + 1, i00 + w, i00 + w + 1};
    float kept = 0;
    if (c->sink->counting)
        return laid;
    for (int j = 0; j < 4; j++)
        kept += tap_lay(c->sink, at[j], a[j]);
    return laid_less(laid, kept);
}

void er_snap_count4(const er_dctx *c, size_t i00)
{
    if (c->sink->counting)
        __atomic_fetch_add(c->sink->dcount + c->sink->cells + i00, 1, __ATOMIC_RELAXED);
}

void er_snap_flow(const er_dctx *c, const size_t *trail, int n, float water)
{
    if (c->sink->counting)
        return;
    for (int j = 0; j < n; j++) {
        add_fixed(c->sink->flow + trail[j], water, c->sink->w_scale);
        water *= c->keep_water;
    }
}

er_status er_snap_new(er_dsink *k, const er_dctx *c, int want_flow, er_error *err)
{
    const size_t cells = (size_t)c->width * (size_t)c->height;
    memset(k, 0, sizeof *k);
    k->cells = cells;
    k->width = c->width;
    k->height = c->height;
    k->wall = c->wall;
    k->dcount = malloc(2 * cells * sizeof *k->dcount);
    k->ceil = malloc(cells * sizeof *k->ceil);
    k->snap = malloc(cells * sizeof *k->snap);
    k->ero = malloc(cells * sizeof *k->ero);
    k->dep = malloc(cells * sizeof *k->dep);
    k->stop = malloc(cells * sizeof *k->stop);
    k->count = calloc(cells, sizeof *k->count);
    k->flow = want_flow ? malloc(cells * sizeof *k->flow) : NULL;
    if (!k->snap || !k->ero || !k->dep || !k->stop || !k->count || !k->dcount || !k->ceil ||
        (want_flow && !k->flow)) {
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
    free(k->count);
    free(k->dcount);
    free(k->ceil);
    free(k->flow);
    memset(k, 0, sizeof *k);
}

void er_snap_begin(er_dsink *k, const float *height)
{
    memcpy(k->snap, height, k->cells * sizeof *k->snap);
    memset(k->ero, 0, k->cells * sizeof *k->ero);
    memset(k->dep, 0, k->cells * sizeof *k->dep);
    memset(k->count, 0, k->cells * sizeof *k->count);
    memset(k->dcount, 0, 2 * k->cells * sizeof *k->dcount);
    if (k->flow)
        memset(k->flow, 0, k->cells * sizeof *k->flow);
    const ptrdiff_t n = (ptrdiff_t)k->cells;
    ER_OMP_FOR()
    for (ptrdiff_t i = 0; i < n; i++) {
        k->stop[i] = INT32_MAX;
        k->ceil[i] = er_snap_ceiling(k, (size_t)i);
    }
}

size_t er_snap_bytes_per_cell(void)
{
    const er_dsink *k = NULL;
    return sizeof *k->snap + sizeof *k->ero + sizeof *k->dep + sizeof *k->flow +
           sizeof *k->stop + sizeof *k->count + 2 * sizeof *k->dcount + sizeof *k->ceil;
}

/*
 * The depth bound under many droplets: each droplet's taps
 * stop at its own `stop`, and the shares (above) keep the batch's taps at
 * a cell within its room above the lowest stop counted there, itself >=
 * the lowest height of the batch start; the deposit shares keep its
 * deposits within its room up to its ceiling.  So neither sum exceeds its
 * room and both are applied whole; a sum beyond its room, or one that
 * wrapped negative, is a defect, reported as -1.
 */
int er_snap_resolve(const er_dsink *k, float *height, float *deposit, float *wear, float *flow)
{
    const double hu = 1.0 / (double)k->h_scale, wu = 1.0 / (double)k->w_scale;
    const ptrdiff_t n = (ptrdiff_t)k->cells;
    int64_t bad = 0;
    ER_OMP_FOR(reduction(+ : bad))
    for (ptrdiff_t i = 0; i < n; i++) {
        int64_t e = k->ero[i], d = k->dep[i];
        if (k->flow && flow && k->flow[i])
            flow[i] += (float)((double)k->flow[i] * wu);
        if (e == 0 && d == 0)
            continue;
        float h0 = k->snap[i], bound = e > 0 ? er_minf(h0, er_snap_from_ordered(k->stop[i])) : h0;
        float top = d > 0 ? k->ceil[i] : h0;
        bad += e < 0 || d < 0 || (e > 0 && e > er_snap_room(h0, k->stop[i], k->h_scale)) ||
               (d > 0 && d > room_between(h0, top, k->h_scale));
        /* e and d within their rooms: the max and min only guard the floor
         * and the ceiling against the rounding of the double spans. */
        float h = (float)((double)h0 - (double)e * hu + (double)d * hu);
        height[i] = er_minf(er_maxf(h, bound), top);
        if (wear && e)
            wear[i] += (float)((double)e * hu);
        if (deposit && d)
            deposit[i] += (float)((double)d * hu);
    }
    return bad ? -1 : 0;
}
