/*
 * Private to the Mei et al. (2007) grid model: the simulation state shared
 * by core/mei/mei.c (run loop, schedule, stability), core/mei/pipe.c (eqs. 1-9),
 * core/mei/erosion.c (eqs. 10-12, thermal weathering), core/mei/transport.c
 * (eqs. 13-14) and core/mei/budget.c, and by the unit tests: the row
 * kernels and their pipeline over the state of core/mei/host.h, which is
 * all the Vulkan backend includes.
 *
 * One step is a pure function of the previous state (Jacobi style),
 * computed by independent chunks of rows.  A chunk runs four row kernels
 * as a pipeline, each row's inputs still in cache:
 *
 *   A  flux         (eqs. 2-5)      row y     needs old state, rows y-1..y+1
 *   W  water        (eqs. 6-9, 15)  row y-1   needs A of rows y-2..y
 *   E  erosion      (eqs. 10-12)    row y-1   needs W of row y-1, old b
 *   T  transport    (eqs. 13-14)    row y-2   needs A, E of rows y-3..y-1
 *
 * A chunk recomputes the two rows of A and the row of W+E it needs beyond
 * each of its ends into private scratch (ghost rows) instead of waiting for
 * the neighbouring chunk, so chunks never read each other's results: one
 * parallel loop (one barrier) per step, any chunk size and any thread count
 * give the same bits.
 *
 * The state is kept once and updated in place (7 floats a cell, and each
 * cache line is read and written once a step, with no read-for-ownership
 * of a second buffer).  Within a chunk the pipeline reads every old value
 * of a row before it replaces it; what a chunk needs of its neighbours'
 * rows (3 rows beyond each end) it reads from a snapshot of the rows
 * beside each chunk boundary, taken before the step.
 *
 * Temporal blocking: when nothing comes between two sub-steps (no
 * raindrops, sources or control-map water, no boundary the hooks want),
 * one sweep runs both, the second pipeline 3 rows behind the first (see
 * run_pair in mei.c).  The first then also computes the 3 rows beyond
 * each end of its chunk, from a 6-row snapshot, into a private halo: all
 * that the second reads of the neighbours.  Each row of the state is
 * streamed once for two sub-steps, with the same arithmetic on the same
 * values, and each sub-step's per-row results are kept apart (acc, acc2)
 * and reduced in row order, as for a single sub-step.
 */
#ifndef ER_MEI_INTERNAL_H
#define ER_MEI_INTERNAL_H

#include "../bits.h"
#include "../drive.h"
#include "host.h"

/* The row kernels are written as branch-free selects so that GCC can
 * vectorise them, which it does only when it may evaluate both sides of a
 * select: -fno-trapping-math allows that and changes no value (it only
 * gives up floating-point exception flags); the dynamic cost model
 * vectorises loops of unknown length at -O2.  The vector code gives the
 * same bits as the scalar code: + - * / are correctly rounded in both, and
 * there is no contraction (-ffp-contract=off still holds) and no
 * reassociation. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "vect-cost-model=dynamic")
#endif

/* [m] Water shallower than this after evaporation counts as dry: the cell's
 * depth is set to 0 and its suspended sediment settles onto the terrain
 * (eq. 15 alone only tends to 0, and sediment must not stay suspended in
 * no water).  A micrometre is far below any rain increment that moves
 * material and far above float rounding of depths.  With Ke = 0 nothing
 * evaporates and nothing dries. */
#define ER_MEI_DRY 1e-6f

/* [m] Below this mean depth (eq. 9) the velocity is 0: a film thinner than
 * a nanometre carries no momentum, and it avoids 0/0 in a dry cell. */
#define ER_MEI_FILM 1e-9f

/* Largest fraction of a pair's excess height that thermal weathering moves
 * in one step: with four neighbours exchanging at once, 1/8 cannot
 * overshoot the talus angle (a cell gives at most half its excess). */
#define ER_MEI_THERMAL_MAX 0.125f

/* Rows of the previous state that one sub-step of a row reads on either
 * side (A reads y +- 1 of it, W the fluxes of A of y +- 1, T the s1 of
 * W + E of y +- 1). */
#define ER_MEI_DEPTH 3
/* Rows by which the second sub-step of a pair follows the first (see
 * run_pair in mei.c). */
#define ER_MEI_LAG 3

/* The snapshot holds, for each boundary between two chunks at row y0, the
 * 7 state layers (z, d, s, four fluxes) of rows y0-6 .. y0+5 (y0-3 ..
 * y0+2 for a sweep of one sub-step): what either chunk reads of the
 * other's rows, as it was before the sweep. */
enum { ER_SNAP_Z = 0, ER_SNAP_D = 1, ER_SNAP_S = 2, ER_SNAP_Q = 3, ER_SNAP_LAYERS = 7,
       ER_SNAP_ROWS = 4 * ER_MEI_DEPTH };

/* Scratch rows per thread: two levels of the pipeline (see mei.c for
 * their use) and the first level's halo of kept rows (7 layers, depth
 * rows on either side). */
#define ER_MEI_LEVEL_ROWS 51
#define ER_MEI_SCRATCH_ROWS (2 * ER_MEI_LEVEL_ROWS + ER_SNAP_LAYERS * 2 * ER_MEI_DEPTH)

/* [floats] Layer l of the state starts l * ER_MEI_SKEW floats into its
 * allocation, and each scratch row one cache line after a whole number of
 * lines past the previous one.  The span loops stream 9 to 16 rows at the
 * same column; with the layers aligned alike (2 MiB, er_calloc_large) and
 * rows of 1024 or 4096 floats, all of them fell on one set of the 8-way
 * L1 cache and evicted each other (and stalled loads on 4 KiB aliasing
 * with the stores).  Only addresses change, no value. */
#define ER_MEI_SKEW 144

/* Thread tid's scratch rows. */
static inline float *er_mei_thread_scratch(const er_mei_sim *sim, int tid)
{
    return sim->scratch + (size_t)tid * ER_MEI_SCRATCH_ROWS * (size_t)sim->scr_stride;
}

/* Views of the rows around y that one kernel call reads and writes.  A row
 * outside the map is NULL. */
typedef struct er_mei_rows {
    int y;
    const float *b[3];             /* old terrain b = b0 + z, rows y-1, y, y+1 */
    const float *h[3];             /* old water surface b + d1 (eqs. 1, 3), rows y-1..y+1 */
    const float *d, *s;            /* old depth and sediment of row y */
    const float *q[3][4];          /* new flux of rows y-1, y, y+1 */
    const float *wq[3];            /* donor weights dt / d1 of rows y-1..y+1 */
    const float *s1[3];            /* sediment after erosion, rows y-1..y+1 */
    const uint8_t *wall[3];        /* NULL when the map has no walls */
    /* hardness and mask rows y-1..y+1: both NULL without either map, else
     * both set (sim->neutral's rows standing in for the one not given) */
    const float *hard[3];
    const float *mask[3];
} er_mei_rows;

/* mei.c */
/* Adds row y's share of one sub-step to the flow and wear accumulators:
 * flow += dt (qL + qR + qT + qB) from the row's new fluxes q (the four
 * pipes' rows), wear += er.  Called once per sub-step for each row, by the
 * chunk that owns it. */
void er_mei_accumulate_row(const er_mei_sim *sim, const er_mei_coef *k, int y,
                           const float *const q[4], const float *er);
/* pipe.c */
/* b = b0 + z and h = b + d + rain of row y from its old z and d rows. */
void er_mei_surface_row(const er_mei_sim *sim, const er_mei_coef *k, int y, const float *z,
                        const float *d, float *b, float *h);
/* Eqs. 2-5 for row y: q holds the row's old fluxes and receives the new
 * ones; wq receives the donor weights dt / d1. */
void er_mei_flux_row(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                     float *const q[4], float *wq);
/* Eqs. 6-9, 15 for row y: d holds the row's old depth and receives the new
 * one; u, v receive the velocity, dm the mean depth of eq. 9 (so |v| dm is
 * the discharge per unit width). */
void er_mei_water_row(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                      float *d, float *u, float *v, float *dm, er_mei_rowacc *acc);
/* erosion.c */
/* Eqs. 10-12 for row y: dm the mean depth of the step (eq. 9); z holds
 * the row's terrain change and receives the new one; s1 receives the sediment after erosion, er and de per cell the
 * terrain dissolved and deposited [m]. */
void er_mei_erode_row(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                      const float *u, const float *v, const float *dm, float *z,
                      float *s1, float *er, float *de);

/* transport.c */
/* Moves s1 into the new sediment of row y, dries cells (adding what
 * settles to de) and fills the row's budget from er and de. */
void er_mei_transport_row(const er_mei_sim *sim, const er_mei_coef *k, const er_mei_rows *r,
                          const float *u, const float *v, float *znew, float *dnew,
                          float *snew, const float *er, float *de, er_mei_rowacc *acc);

/* budget.c */
double er_mei_row_sum(const float *a, int n);
double er_mei_material(const er_mei_sim *sim, const float *z, const float *s);

/* True when cell (x, y) and its four neighbours are inside the map and
 * none is a wall: the row kernels' fast path.  Callers check the row. */
static inline int er_mei_plain(const er_mei_rows *r, int x)
{
    return !r->wall[1] ||
           (!r->wall[0][x] && !r->wall[2][x] && !r->wall[1][x - 1] &&
            !r->wall[1][x] && !r->wall[1][x + 1]);
}

/* Finds the run [x, *end) of cells from x on that take the fast path in an
 * interior row (0 < y < h-1); returns 0 when x itself does not. */
static inline int er_mei_run_from(const er_mei_sim *sim, const er_mei_rows *r, int x, int *end)
{
    if (x < 1 || x > sim->w - 2 || !er_mei_plain(r, x))
        return 0;
    int e = x + 1;
    if (!r->wall[1])
        e = sim->w - 1;
    else
        while (e < sim->w - 1 && er_mei_plain(r, e))
            e++;
    *end = e;
    return 1;
}

/* The vectorised span loops stay out of line: GCC honours their restrict
 * parameters only in a function of their own. */
#if defined(__GNUC__)
#define ER_NOINLINE __attribute__((noinline))
#else
#define ER_NOINLINE
#endif

/* Square root of x >= 0, the correctly rounded IEEE one (sqrtss / vsqrtps:
 * as deterministic as + - * /; mei_common.glsl gets the same bits through
 * float64).  A + - * Newton iteration would be within 2.4e-7 of sqrtf and
 * cost about a tenth of a step (erode-models(7), "Benchmarks").  GCC vectorises it
 * only under -fno-math-errno, which the Makefile gives core/mei/'s sources:
 * nothing reads errno, and x is never negative here. */
static inline float er_sqrt(float x)
{
    return __builtin_sqrtf(x);
}

/* The span loops are also compiled for AVX2 and AVX-512 and the widest
 * the CPU has is picked when the program starts (GCC function
 * multi-versioning).  Every version computes the same bits: the same
 * correctly rounded + - * /, no FMA (-ffp-contract=off), no reassociation. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(ER_NO_CLONES)
#define ER_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ER_CLONES
#endif

/* A control map's value at column x of row j of rows v (the neutral value
 * def when the map is not given). */
static inline float er_ctl_at(const float *const v[3], int j, int x, float def)
{
    return v[j] ? v[j][x] : def;
}

static inline float er_max0(float a) { return a > 0.0f ? a : 0.0f; }
static inline float er_minf(float a, float b) { return a < b ? a : b; }
static inline float er_maxf(float a, float b) { return a > b ? a : b; }

/* A layer value as the model writes it out (its copy-out, and the layers
 * of a state view for frames): finite, else 0. */
static inline float er_mei_finite_or_0(float v)
{
    return (er_float_bits(v) & 0x7f800000u) != 0x7f800000u ? v : 0.0f;
}

/* The model's entry points (its er_model_ops, core/mei/ops.c). */
er_status er_mei_plan(er_plan *plan, const er_terrain *t, er_error *err);
extern const er_model_steps er_mei_steps;
/* Bytes of working memory a run allocates per cell (beyond the caller's
 * terrain and layers), so the caller can refuse a map that will not fit. */
size_t er_mei_bytes_per_cell(const er_params *p);

#endif
