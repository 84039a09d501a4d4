/*
 * The droplet model's internal header: the context its kernels share, and
 * what its files share, declarations and the hot inline helpers.  Private
 * to core/droplet (the unit tests and bench_droplet include it too; the
 * Vulkan backend includes host.h only).  Which file holds what:
 *   droplet.c   the model's entry points: the plan and its checks
 *               (er_droplet_plan, er_droplet_check, er_droplet_bytes_per_cell)
 *               and its CPU run's steps through the run driver (core/drive.h:
 *               er_droplet_steps, er_droplet_run_serial)
 *   setup.c     a run's set-up from its plan (er_droplet_prepare), the state
 *               view, resume, the end of a run and the run guard
 *   batch.c     droplet starts and batches (er_droplet_start, er_droplet_batch_*)
 *   lague.c     the Lague/Beyer droplet (er_lague_*); its step's phases are
 *               inline below, for er_lague_step and the lanes alike
 *   brush.c     the brush kernels: deposit, erosion, the AVX-512 brush
 *   lanes.c     the blocks schedule: colours, blocks, droplets in lanes
 *   sink.c      the snapshot schedule's sums, shares and resolve
 *   snapshot.c  the snapshot schedule's batch
 *   particle.c  the mass-transfer particle
 *   blocks.c    the scheduling blocks and their colours (blocks.h)
 *
 * Units: the kernels work on the terrain in metres, in place.  The height
 * unit U, droplet.height_unit (heights divided by U, so that Lague's
 * constants behave on any DEM as in his demo) is folded into the few
 * constants that are not linear in height (er_dctx below): a formula
 * evaluated on h / U and multiplied by U again is the same formula on h with
 * those constants.
 */
#ifndef ER_DROPLET_IMPL_H
#define ER_DROPLET_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "../drive.h"
#include "../model.h"
#include "../plan.h"
#include "blocks.h"
#include "host.h"

/* The mass-transfer normal (T. Power 2025, Creating realistic terrain by
 * modelling the physics of hydraulic erosion) measures slopes as height
 * differences per cell; heights in height units are multiplied by this
 * vertical scale first (Power's height_scale, for which he gives no value).
 * With the default "relief" unit a map's relief then spans 64 cell widths,
 * about what McDonald's demo terrain (N. McDonald 2020, Simple
 * particle-based hydraulic erosion: heights 0..1 on 256^2) has; with
 * heights in relief units alone a particle on a 1024^2 DEM sees slopes of a
 * few thousandths and hardly moves.  A constant, not a recipe value, so
 * tiles of one map agree. */
#define ER_MT_HEIGHT_SCALE 64.0

/* Backstop on mass-transfer steps when evaporation alone does not end a
 * particle (evaporation_rate == 0). */
#define ER_MT_MAX_STEPS 100000

/* Start-position retries on walls before a droplet is given up. */
#define ER_START_TRIES 32

/* Directions shorter than this (squared) count as zero: the droplet stops,
 * as Lague's does on a flat spot, instead of dividing by a denormal. */
#define ER_DIR_TINY 1e-30f

/* Inlined where GCC's size heuristics would not: the hot step's phases
 * (so that the lanes' chains sit side by side in one body) and the brush
 * with its side a constant.  Inlining changes no value. */
#define ER_HOT_INLINE static inline __attribute__((always_inline))

/* A hint to fetch the cache line at p for writing: changes no value, only
 * when a later load or store finds it (GCC and Clang builtin). */
#define ER_PREFETCH_W(p) __builtin_prefetch((p), 1, 3)

/* The AVX-512 builds of the radius-3 brush (brush.c) and of the lanes'
 * step loop (lanes.c), chosen at set-up where the CPU has AVX-512F and VL
 * (er_droplet_avx512); -DER_NO_CLONES leaves only the portable build. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(ER_NO_CLONES)
#define ER_DROPLET_AVX512 1
#endif

/* min and max without libm's NaN handling (a call each under
 * -fno-fast-math); arguments here are never NaN. */
static inline float er_minf(float a, float b) { return a < b ? a : b; }
static inline float er_maxf(float a, float b) { return a > b ? a : b; }

/* ---------------------------------------------------------------------
 * droplet.c: the sequential reference
 * --------------------------------------------------------------------- */

/*
 * The sequential reference: the CPU run's droplets, run one after another
 * in index order on the calling thread (what the CPU run does on a world
 * smaller than two blocks), whatever the plan's schedule.  The contract of
 * the CPU run otherwise; for tests and benchmarks.
 */
er_status er_droplet_run_serial(const er_plan *plan, er_terrain *t, const er_run_opts *o,
                                er_error *err);


/* Batch b's first droplet *lo and its number of droplets (batch b holds
 * droplets b * batch .. whatever the schedule; the last may be short). */
static inline int er_droplet_batch_at(const er_plan *plan, int64_t b, int64_t *lo)
{
    const int64_t batch = plan->own.droplet.batch, count = plan->own.droplet.droplets;
    *lo = b * batch;
    return (int)(count - *lo > batch ? batch : count - *lo);
}

/* The scratch of a CPU run's schedule, set up once before its first batch
 * (er_droplet_blocked_new, er_droplet_snap_sched_new), so that a batch
 * allocates nothing; er_droplet_sched_free (batch.c) frees it, a zeroed
 * one too. */
typedef struct er_droplet_sched {
    er_droplet_batch bt;      /* the batch's starts, bucketed by block */
    er_dacc *acc;             /* sums per block (blocks) or per droplet (snapshot) */
    size_t *trails;           /* trail scratch per thread (and lane) */
    er_dsink k;               /* snapshot: the batch's sums and counts */
    er_dctx sc;               /* snapshot: the context reading k's snapshot */
} er_droplet_sched;

/* Sets up the batch scratch of w for batches of up to `batch` droplets
 * with block side `size`, `sums` accumulators and `trail_cells` trail
 * cells.  ER_OK or ER_ENOMEM. */
er_status er_droplet_sched_new(er_droplet_sched *w, const er_dctx *c, int size, int64_t batch,
                               size_t sums, size_t trail_cells, er_error *err);
void er_droplet_sched_free(er_droplet_sched *w);

/* ---------------------------------------------------------------------
 * sink.c: the snapshot schedule's writers
 * --------------------------------------------------------------------- */

/* The kernels' writers under a sink (c->sink != NULL), each the blocks
 * schedule's float arithmetic with its writes turned into sums:
 * er_brush_erode, er_brush_apply, er_deposit_bilinear (a: the four nodes'
 * amounts, mask applied; laid: what the blocks schedule would lay) and the
 * flow trail.  Each deposit tap lays at most its share of the cell's room
 * up (er_snap_room_up); the deposit writers return what was laid, less
 * what the shares withheld (which the droplet keeps).  In the count pass
 * (sink->counting) nothing is written: er_snap_erode counts the taps that
 * could take and returns what they would give unshared, er_snap_deposit
 * counts the brush taps that could lay, er_snap_count4 the four nodes of
 * a step that could deposit. */
float er_snap_erode(const er_dctx *c, int cx, int cy, float amount, float stop);
float er_snap_deposit(const er_dctx *c, int cx, int cy, float amount);
float er_snap_deposit4(const er_dctx *c, size_t i00, const float a[4], float laid);
void er_snap_count4(const er_dctx *c, size_t i00);
void er_snap_flow(const er_dctx *c, const size_t *trail, int n, float water);

/* Sets up w for the snapshot schedule (its batch's starts, sums and
 * counts, per-droplet sums and per-thread trails) for batches of `batch`
 * droplets at most.  ER_OK or ER_ENOMEM; free w with er_droplet_sched_free,
 * also after a failure. */
er_status er_droplet_snap_sched_new(er_droplet_sched *w, const er_plan *plan,
                                    const er_droplet_setup *s, int64_t batch, er_error *err);

/* Runs batch b of s's droplets (the plan's batch numbering) by the
 * snapshot schedule, adding to *sum.  ER_OK or ER_ENUMERIC (a sum wrapped:
 * a defect). */
er_status er_droplet_snap_batch(er_droplet_sched *w, const er_plan *plan,
                                const er_droplet_setup *s, int64_t b, er_dacc *sum,
                                er_error *err);

/* ---------------------------------------------------------------------
 * lanes.c: the blocks schedule
 * --------------------------------------------------------------------- */

/* Sets up w for the blocks schedule with blocks of side `size` (its
 * batch's starts, per-block sums, per-thread lane trails) for batches of
 * `batch` droplets at most.  ER_OK or ER_ENOMEM; free w with
 * er_droplet_sched_free, also after a failure. */
er_status er_droplet_blocked_new(er_droplet_sched *w, const er_droplet_setup *s, int size,
                                 int64_t batch, er_error *err);

/* Runs batch b of s's droplets (the plan's batch numbering) by the blocks
 * schedule with blocks of side `size`, adding to *sum. */
void er_droplet_blocked_batch(er_droplet_sched *w, const er_plan *plan,
                              const er_droplet_setup *s, int size, int64_t b, er_dacc *sum);

/* ---------------------------------------------------------------------
 * brush.c: the brush kernels
 * --------------------------------------------------------------------- */

/* 0: runs set up from now on take the portable build of the step even on
 * a CPU with AVX-512 (1, the default: the AVX-512 build where the CPU has
 * it).  The two give the same bytes; tests compare them on one machine.
 * Not thread-safe: call between runs. */
void er_droplet_allow_avx512(int on);

/* 1 when a run set up now takes the AVX-512 builds: they are allowed
 * (er_droplet_allow_avx512), built (ER_DROPLET_AVX512) and the CPU has
 * AVX-512F and VL (__builtin_cpu_supports). */
int er_droplet_avx512(void);

/* Lays `-amount` [m] (amount <= 0) down through the brush centred on cell
 * (cx, cy) (on the map, not a wall), renormalised over the taps on the map
 * and off walls, each tap's share times its mask value, and adds it to the
 * deposit layer: where a droplet or a particle that stops leaves its load.
 * Returns what it laid down: exactly -amount without a mask map. */
float er_brush_apply(const er_dctx *c, int cx, int cy, float amount);

/* A droplet's or particle's load `sed` at its end, of which `laid` went
 * down through the brush (er_brush_apply): the rest, only under a mask
 * map, leaves the terrain with the droplet, counted with what left the map
 * so that before - after - left_map stays exact. */
static inline void er_end_load(float sed, float laid, double *deposited, double *left_map)
{
    *deposited += (double)laid;
    if (laid < sed)
        *left_map += (double)sed - (double)laid;
}

/* Erodes up to `amount` [m] through the brush centred on node (cx, cy),
 * no tap below `stop` [m]; returns what the taps gave up, which the
 * droplet carries (brush.c says how).  The path for every brush, map and
 * layer; er_brush_erode_hot picks the AVX-512 brush where it applies. */
float er_brush_erode(const er_dctx *c, int cx, int cy, float amount, float stop);

#ifdef ER_DROPLET_AVX512
/* er_brush_erode on the clean radius-3 window whose top-left cell is
 * `row` (w the map's width, bw the 5x5 weights), one AVX-512VL vector a
 * row: the same bits (brush.c).  Only where the CPU has AVX-512F and VL. */
__attribute__((target("avx512f,avx512vl"), noinline)) float
er_brush5_avx512(float *restrict row, size_t w, const float *restrict bw, float amount,
                 float stop);
#endif

/* Interior test for the brush: the centre node and every tap within
 * clean_a of it lie in the map and off walls. */
static inline int er_brush_clean(const er_dctx *c, int cx, int cy)
{
    int a = c->clean_a;
    if (cx < a || cx >= c->width - a || cy < a || cy >= c->height - a)
        return 0;
    return c->clean == NULL || c->clean[(size_t)cy * (size_t)c->width + (size_t)cx];
}

/* er_brush_erode with the test for er_brush5_avx512 where the step can
 * inline it: the call into er_brush_erode costs more than the brush's
 * vector rows. */
ER_HOT_INLINE float er_brush_erode_hot(const er_dctx *c, int cx, int cy, float amount, float stop)
{
#ifdef ER_DROPLET_AVX512
    if (c->brush5_simd && !c->sink && er_brush_clean(c, cx, cy)) {
        const size_t w = (size_t)c->width;
        return er_brush5_avx512(c->height_m + (size_t)(cy - 2) * w + (size_t)(cx - 2), w,
                                c->brush_w, amount, stop);
    }
#endif
    return er_brush_erode(c, cx, cy, amount, stop);
}

/* Bilinear deposit of `amount` [m] onto the four nodes around a position
 * whose floor node is i00 and offsets fx, fy (all four are valid), each
 * node's share times its mask value; returns what was laid down (amount
 * without a mask map; never more than amount). */
ER_HOT_INLINE float er_deposit_bilinear(const er_dctx *c, size_t i00, float fx, float fy,
                                        float amount)
{
    size_t w = (size_t)c->width;
    float *h = c->height_m;
    float a00 = amount * (1 - fx) * (1 - fy), a10 = amount * fx * (1 - fy);
    float a01 = amount * (1 - fx) * fy, a11 = amount * fx * fy;
    float laid = amount;
    if (c->ctl_mask) {
        const float *m = c->ctl_mask;
        a00 *= m[i00];
        a10 *= m[i00 + 1];
        a01 *= m[i00 + w];
        a11 *= m[i00 + w + 1];
        laid = er_minf(a00 + a10 + a01 + a11, amount);
    }
    if (c->sink)
        return er_snap_deposit4(c, i00, (const float[4]){a00, a10, a01, a11}, laid);
    h[i00] += a00;
    h[i00 + 1] += a10;
    h[i00 + w] += a01;
    h[i00 + w + 1] += a11;
    if (c->deposit) {
        float *d = c->deposit;
        d[i00] += a00;
        d[i00 + 1] += a10;
        d[i00 + w] += a01;
        d[i00 + w + 1] += a11;
    }
    return laid;
}

/* ---------------------------------------------------------------------
 * particle.c: the mass-transfer particle
 * --------------------------------------------------------------------- */

/* Runs one mass-transfer particle from (x, y) (cell coordinates, its cell
 * valid) and adds its effects to *acc. */
void er_particle_run(const er_dctx *c, double x, double y, er_dacc *acc);

/* ---------------------------------------------------------------------
 * lague.c: the Lague/Beyer droplet
 * --------------------------------------------------------------------- */

/* Runs one step of the droplet and adds its effects to *acc; returns 1 when
 * the droplet has ended (what it carried dropped, or counted in
 * acc->left_map), 0 otherwise.  Droplets that touch no common cell may be
 * stepped in any interleaving with the same results. */
int er_lague_step(const er_dctx *c, er_lague_state *s, er_dacc *acc);

/* Runs one Lague/Beyer droplet from (x, y) (node coordinates, the four
 * nodes around it valid) and adds its effects to *acc; trail as for
 * er_lague_begin. */
static inline void er_lague_droplet(const er_dctx *c, double x, double y, size_t *trail,
                                    er_dacc *acc)
{
    er_lague_state s;
    er_lague_begin(c, &s, x, y, trail);
    while (!er_lague_step(c, &s, acc))
        ;
}

/* A step's look ahead (er_lague_look_pos, _dir and _move): where the
 * droplet goes and what it found there, read from the terrain before the
 * step writes anything. */
typedef struct er_lague_look {
    size_t i00, j00;          /* floor nodes of the old and the new position */
    int cx, cy;               /* node nearest the old position: the brush centre */
    float fx, fy;             /* old position's offsets from i00 */
    float dx, dy, nlx, nly;   /* the new direction and position */
    float dh, cap;            /* [m] height change, capacity */
    float stop;               /* [m] the lowest a tap may be eroded to */
    float h4[4];              /* [m] the old position's four nodes (er_lague_look_pos) */
    float hold;               /* [m] height at the old position (er_lague_look_dir) */
} er_lague_look;

/* Adds the droplet's water to the flow layer at every cell it stepped on,
 * at its end (lague.c says why then). */
void er_lague_flush_flow(const er_dctx *c, const er_lague_state *s);

/* Ends a droplet on the map: what it carries laid down through the brush
 * around the node nearest its last valid position, and its flow. */
void er_lague_end(const er_dctx *c, er_lague_state *s, er_dacc *acc);

/* A step of the snapshot schedule's count pass (lague.c): counts the taps
 * the main pass may take from or lay on; returns the load carried on. */
float er_lague_count(const er_dctx *c, float sed, const er_lague_look *k);

/*
 * One droplet step, exactly as S. Lague's Hydraulic-Erosion project takes
 * it (after H. T. Beyer 2015, Implementation of a method for hydraulic
 * erosion), with the defects its users reported removed: the brush is
 * centred on the node nearest the droplet (not its floor node), the speed
 * follows energy, sqrt(max(0, v^2 - dh g)), and a droplet that ends on the
 * map drops what it carries.
 *
 * The erosion rule.  Lague's step bounds its erosion by the
 * height drop, min((C - s) erodeSpeed, -dh), but spreads it over the brush
 * around the old position, whose taps lie at any height: a tap at the
 * bottom of a pit, or downhill of the new position, loses its share all
 * the same.  Pits then deepen with every droplet that passes; deeper pits
 * mean steeper drops into them, the speed from energy (v^2 - dh g) grows
 * with the drops, and the capacity with the speed (C = -dh v w Kcap), so
 * density feeds the digging, hundreds of metres below the lowest input
 * cell at a few droplets a cell.  So each tap gives up at most what lies
 * above the height the droplet moves to, hnew (never below the lowest of
 * the four nodes around it either, which hnew is but for rounding), and a
 * tap already below it gives nothing; the droplet carries what the taps
 * gave (er_brush_erode), so eroded = carried = deposited + left the map
 * still holds.  No node ever goes below the lowest node of the map as it
 * was before the step (erosion stops at a bilinear mean of nodes, deposits
 * only add), so the terrain never goes below the input's lowest height,
 * exactly, at any density; the run guard (er_droplet_guard) relies on it.
 *
 * A step runs as the look then er_lague_apply (er_lague_step).  The look,
 * in three parts (er_lague_look_pos: the position and its four nodes'
 * loads; er_lague_look_dir: the height, the gradient and the new
 * direction; er_lague_look_move: the move, the height there and the
 * capacity), writes the terrain only when the droplet ends.  Each part
 * returns 1 when the droplet has ended (its end written), 0 with its part
 * of *k filled.  It touches only cells of its droplet's block, so the
 * lanes' parts and applies may run in any interleaving (lanes.c). */
ER_HOT_INLINE int er_lague_look_pos(const er_dctx *c, er_lague_state *s, er_dacc *acc,
                                    er_lague_look *k)
{
    const size_t w = (size_t)c->width;
    const float *restrict h = c->height_m;
    const float lx = s->lx, ly = s->ly;

    if (s->it >= c->lifetime) {
        er_lague_end(c, s, acc);
        return 1;
    }
    int kx = (int)lx, ky = (int)ly;
    int ix = s->bx + kx, iy = s->by + ky;
    float fx = lx - (float)kx, fy = ly - (float)ky;
    size_t i00 = (size_t)iy * w + (size_t)ix;
    int cx = ix + (fx >= 0.5f), cy = iy + (fy >= 0.5f);
    s->trail[s->it++] = (size_t)cy * w + (size_t)cx;
    /* er_lague_flush_flow adds to this cell at the droplet's end. */
    if (c->flow)
        ER_PREFETCH_W(c->flow + (size_t)cy * w + (size_t)cx);
    acc->steps++;
    k->i00 = i00;
    k->cx = cx;
    k->cy = cy;
    k->fx = fx;
    k->fy = fy;
    k->h4[0] = h[i00];
    k->h4[1] = h[i00 + 1];
    k->h4[2] = h[i00 + w];
    k->h4[3] = h[i00 + w + 1];
    return 0;
}

/* The look's second part: the height and gradient from the loaded nodes,
 * and the new direction. */
ER_HOT_INLINE int er_lague_look_dir(const er_dctx *c, er_lague_state *s, er_dacc *acc,
                                    er_lague_look *k)
{
    const float fx = k->fx, fy = k->fy;
    float dx = s->dx, dy = s->dy;
    /* Bilinear height and gradient at the position. */
    float h00 = k->h4[0], h10 = k->h4[1], h01 = k->h4[2], h11 = k->h4[3];
    float gx = (h10 - h00) * (1 - fy) + (h11 - h01) * fy;
    float gy = (h01 - h00) * (1 - fx) + (h11 - h10) * fx;
    float hold = (h00 * (1 - fx) + h10 * fx) * (1 - fy) + (h01 * (1 - fx) + h11 * fx) * fy;

    /* Inertia: the new direction leans on the old one. */
    dx = dx * c->inertia - gx * c->grad_k;
    dy = dy * c->inertia - gy * c->grad_k;
    float len2 = dx * dx + dy * dy;
    if (!(len2 > ER_DIR_TINY)) {
        er_lague_end(c, s, acc);
        return 1;
    }
    float inv = 1.0f / sqrtf(len2);
    dx *= inv;
    dy *= inv;
    k->dx = dx;
    k->dy = dy;
    k->hold = hold;
    return 0;
}

/* The look's third part: the move, the height there and the capacity. */
ER_HOT_INLINE int er_lague_look_move(const er_dctx *c, er_lague_state *s, er_dacc *acc,
                                     er_lague_look *k)
{
    const int W = c->width, H = c->height;
    const size_t w = (size_t)W;
    const float *restrict h = c->height_m;
    const float lx = s->lx, ly = s->ly, lim = (float)c->lifetime + 0.5f;
    const float dx = k->dx, dy = k->dy, hold = k->hold;

    /* Move one cell; stop off the map, past the reach bound (never reached
     * in exact arithmetic: it guards the block argument against rounding) or
     * on a wall. */
    float nlx = lx + dx, nly = ly + dy;
    int kx2 = (int)nlx, ky2 = (int)nly;
    int jx = s->bx + kx2, jy = s->by + ky2;
    if (!(jx >= 0 && jx < W - 1 && jy >= 0 && jy < H - 1)) {
        acc->left_map += (double)s->sed;
        acc->water_left += (double)s->water;
        s->sed = 0;
        er_lague_flush_flow(c, s);
        return 1;
    }
    if (fabsf(nlx - s->lx0) > lim || fabsf(nly - s->ly0) > lim) {
        er_lague_end(c, s, acc);
        return 1;
    }
    size_t j00 = (size_t)jy * w + (size_t)jx;
    if (c->wall && (c->wall[j00] | c->wall[j00 + 1] | c->wall[j00 + w] | c->wall[j00 + w + 1])) {
        er_lague_end(c, s, acc);
        return 1;
    }
    float gx2 = nlx - (float)kx2, gy2 = nly - (float)ky2;
    float n00 = h[j00], n10 = h[j00 + 1], n01 = h[j00 + w], n11 = h[j00 + w + 1];
    float hnew = (n00 * (1 - gx2) + n10 * gx2) * (1 - gy2) + (n01 * (1 - gx2) + n11 * gx2) * gy2;
    float dh = hnew - hold, speed = s->speed, water = s->water;

    /* Capacity: Lague's max(-dh v w K, min) or Beyer's max(-dh, min_slope) v w K. */
    float cap = c->min_slope > 0 ? er_maxf(-dh, c->min_slope) * speed * water * c->cap_k
                                 : er_maxf(-dh * speed * water * c->cap_k, c->min_cap);
    /* No tap below the new position (the erosion rule above). */
    float stop = er_maxf(hnew, er_minf(er_minf(n00, n10), er_minf(n01, n11)));
    k->j00 = j00;
    k->nlx = nlx;
    k->nly = nly;
    k->dh = dh;
    k->cap = cap;
    k->stop = stop;
    return 0;
}

/* The second half of a step: the erosion or deposit the look decided, and
 * the new state. */
ER_HOT_INLINE void er_lague_apply(const er_dctx *c, er_lague_state *s, er_dacc *acc,
                                  const er_lague_look *k)
{
    const size_t w = (size_t)c->width;
    const float dh = k->dh, cap = k->cap, speed = s->speed, water = s->water;
    float sed = s->sed;
    if (c->sink && c->sink->counting) {
        sed = er_lague_count(c, sed, k);
    } else if (dh > 0 || sed > cap) {
        /* Uphill: fill the pit behind, at most dh; else drop a part of the
         * excess.  Onto the four nodes around the old position. */
        float amount = dh > 0 ? er_minf(dh * c->area_k, sed) : (sed - cap) * c->deposit_speed;
        amount = er_minf(amount, sed);
        amount = er_deposit_bilinear(c, k->i00, k->fx, k->fy, amount);
        sed -= amount;
        acc->deposited += (double)amount;
    } else {
        /* Never more than the height drop in all (as a volume over the
         * reference cell: area_k), and no tap below k->stop. */
        float amount = er_minf((cap - sed) * c->erode_speed, -dh * c->area_k);
        if (amount > 0) {
            float taken = er_brush_erode_hot(c, k->cx, k->cy, amount, k->stop);
            sed += taken;
            acc->eroded += (double)taken;
        }
    }
    /* The next step deposits (if it does) on the four nodes at j00: the
     * deposit layer is touched nowhere else in flight, so its lines are
     * cold, and the miss would stall the step. */
    if (c->deposit) {
        ER_PREFETCH_W(c->deposit + k->j00);
        ER_PREFETCH_W(c->deposit + k->j00 + w);
    }
    s->speed = sqrtf(er_maxf(0.0f, speed * speed - dh * c->gravity));
    s->water = water * c->keep_water;
    s->sed = sed;
    s->dx = k->dx;
    s->dy = k->dy;
    s->lx = k->nlx;
    s->ly = k->nly;
}

/* The model's entry points (its er_model_ops, core/droplet/ops.c). */
er_status er_droplet_plan(er_plan *plan, const er_terrain *t, er_error *err);
/* The CPU run's steps (core/drive.h), by the plan's schedule. */
extern const er_model_steps er_droplet_steps;
size_t er_droplet_bytes_per_cell(const er_params *p);
/* Checks p->droplet the way er_droplet_plan will, without a map: the
 * block-size bound of blocks.h, which depends on several keys at once,
 * and, for a tile set (`tiled`), a height unit in metres. */
er_status er_droplet_check(const er_params *p, int tiled, er_error *err);

#endif
