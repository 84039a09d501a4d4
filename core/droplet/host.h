/*
 * What another compute path of the droplet model shares with the CPU run
 * (the Vulkan backend, core/droplet/vulkan.c): the run's context and
 * set-up, its state and budget, the batches and their starts, the
 * snapshot schedule's fixed-point scales and resolve, and a Lague droplet's
 * start.  The kernels themselves are in droplet_impl.h, which includes
 * this.
 */
#ifndef ER_DROPLET_HOST_H
#define ER_DROPLET_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "../model.h"
#include "../plan.h"
#include "blocks.h"
#include "state.h"

/* The snapshot schedule's per-cell sums (sink.c): while a snapshot
 * batch runs, er_dctx.height_m points at snap and every change goes into
 * these with atomic adds.  Fixed point: a sum of S units is S / h_scale
 * [m] (S / w_scale water for flow). */
typedef struct er_dsink {
    size_t cells;
    float *snap;              /* [m] heights at the batch start */
    int64_t *ero;             /* erosion taken per cell (>= 0) */
    int64_t *dep;             /* deposits per cell (>= 0) */
    int64_t *flow;            /* water per cell; NULL = not wanted */
    int32_t *stop;            /* floor: lowest stop of the taps counted at the cell, as
                                 er_snap_ordered; INT32_MAX = none */
    int32_t *count;           /* taps of the batch that may take from the cell */
    int32_t *dcount;          /* 2 * cells: the ends' brush taps that may lay on each cell,
                                 then the steps that may deposit on each quad's four nodes
                                 (by its top-left node) */
    float *ceil;              /* [m] each cell's ceiling (er_snap_ceiling), set by
                                 er_snap_begin */
    int counting;             /* 1: the count pass (writes only count, stop and dcount) */
    int width, height;        /* [cells] the map (the deposit ceiling's neighbourhood) */
    const uint8_t *wall;      /* the map's walls; NULL = none */
    float h_scale, w_scale;   /* 2^er_snap_height_shift, 2^er_snap_water_shift */
} er_dsink;

/* Everything a kernel needs; read-only while droplets run. */
typedef struct er_dctx {
    int width, height;
    int wx0, wy0;             /* [cells] the map's top-left cell in the world (er_window) */
    int world_w, world_h;     /* [cells] the world; the map itself without a window */
    float *height_m;          /* [m] terrain, updated in place */
    const uint8_t *wall;      /* 1 = wall; NULL = none */
    const uint8_t *clean;     /* 1 = the (2a+1)^2 window around the cell is in the
                                 map and wall-free; NULL when there are no walls */
    int clean_a;              /* a above [cells] */
    float *flow;              /* [water] per cell; NULL = not wanted */
    float *deposit;           /* [m] deposited per cell; NULL = not wanted */
    float *wear;              /* [m] eroded per cell, before deposits (er_layers.wear);
                               * NULL = not wanted */
    er_droplet_variant variant;
    int64_t reach;            /* [cells] farthest a droplet gets from its start, per axis */

    /* Lague/Beyer, constants already in metres (U folded in) */
    int lifetime;
    int radius;
    float inertia;
    float grad_k;             /* (1 - inertia) / U: gradient [m/cell] -> [U/cell] */
    float cap_k;              /* capacity factor Kcap */
    float min_cap;            /* [m] min_capacity * U */
    float min_slope;          /* [m] min_slope * U; 0 = Lague's capacity form */
    float erode_speed, deposit_speed;
    float keep_water;         /* 1 - evaporate_speed, clamped to [0, 1] */
    float gravity;            /* [1/m] gravity / U: v^2 - dh * gravity */
    float init_water, init_speed;
    float area_k;             /* plan->own.droplet.area_k: a step's height on one cell as a volume
                                 over the reference cell (er_droplet_at_cell_size) */
    int brush_side;           /* 2 * radius - 1 */
    int avx512;               /* 1: er_droplet_avx512 at set-up: the lanes run the
                                 AVX-512 build of the step (lanes.c run_lanes_avx512) */
    int brush5_simd;          /* 1: avx512, and the clean radius-3 brush without wear or
                                 maps runs as one masked vector a row (er_brush5_avx512);
                                 the same values either way */
    const float *brush_w;     /* brush_side^2 weights (0 outside the disc), sum 1;
                                 both variants (a particle's load where it stops) */

    /* mass transfer (Power 2025; McDonald 2020) */
    float mt_dt, mt_inv_density, mt_friction_keep, mt_rate, mt_evap_keep, mt_min_volume;
    float mt_vscale;          /* [1/m] ER_MT_HEIGHT_SCALE / U */
    int64_t mt_max_steps;
    int mt_max_distance;

    /* Control maps (core/controls.h) on the map's grid; NULL = not given,
     * and then the kernels take paths without them, so a run without maps
     * pays nothing for them. */
    const float *ctl_rain;    /* start water (particles: volume) multiplier */
    const float *ctl_erode;   /* (1 - hardness) * mask: the share of an erosion a cell
                                 gives; NULL when neither map is given */
    const float *ctl_mask;    /* mask: the share of a deposit a cell takes */

    const er_dsink *sink;     /* the snapshot schedule's sums; NULL = write in place */
} er_dctx;

/* The rain multiplier of the cell holding (x, y) (map coordinates of a
 * start), 1 without a rain map. */
static inline float er_start_rain(const er_dctx *c, double x, double y)
{
    return c->ctl_rain ? c->ctl_rain[(size_t)(int)y * (size_t)c->width + (size_t)(int)x] : 1.0f;
}

/* The water a droplet starting at (x, y) carries (Lague: the rain map
 * times initial_water, one float product; particles: the rain map times a
 * volume of 1): what the budget's water_added sums under a rain map. */
static inline float er_start_water(const er_dctx *c, double x, double y)
{
    if (c->variant != ER_DROPLET_LAGUE)
        return er_start_rain(c, x, y);
    return c->ctl_rain ? c->init_water * er_start_rain(c, x, y) : c->init_water;
}

/* Per-block (or per-run) sums; doubles added in a fixed order.  water:
 * the started droplets' water under a rain map (er_start_water), summed
 * per batch in droplet-index order (er_droplet_batch_water) and the
 * batches in order, on every path, so that it is the same for any thread
 * count and backend; 0 and unused without a rain map. */
typedef struct er_dacc {
    double eroded, deposited, left_map, water_left;
    double water;
    double withheld;          /* [m * cells] always 0: kept for checkpoint format 3 (the
                                 snapshot schedule's shares need no clamp) */
    int64_t steps;
} er_dacc;

/* *a += *b, member by member. */
static inline void er_dacc_add(er_dacc *a, const er_dacc *b)
{
    a->eroded += b->eroded;
    a->deposited += b->deposited;
    a->left_map += b->left_map;
    a->water_left += b->water_left;
    a->water += b->water;
    a->withheld += b->withheld;
    a->steps += b->steps;
}

/* ---------------------------------------------------------------------
 * setup.c: a run's set-up, state, resume, end and guard
 * --------------------------------------------------------------------- */

/* What the CPU run sets up before its first droplet; other compute
 * paths (core/droplet/vulkan.c) start from the same setup so that they
 * validate, draw starts and count the budget exactly as the CPU path. */
typedef struct er_droplet_setup {
    er_dctx ctx;              /* constants in metres; ctx.brush_w, ctx.clean below */
    size_t *trail;            /* the sequential runs' trail scratch */
    float *brush;             /* brush weights */
    uint8_t *clean;           /* clean mask (maps with walls), else NULL */
    float *erode_k;           /* ctx.ctl_erode's storage, else NULL */
    int64_t count;            /* droplets to run */
    double before;            /* [m * cells] terrain sum at the start */
    double scale;             /* [m * cells] sum of |height| at the start: the
                                 run guard's budget scale */
    float lo;                 /* [m] lowest valid input height: the guard's envelope */
    double per_cell;          /* droplets per valid cell (per world cell in a window) */
    size_t cells;
    float *flow_copy;         /* er_layers.flow when the run keeps water too: the
                                 water layer is copied there at the end */
} er_droplet_setup;

/*
 * Zeroes the wanted layers and fills *s from the plan (the caller frees it
 * with er_droplet_setup_free, also after a failure), as
 * the CPU run sets up its run.  Returns ER_OK or ER_ENOMEM.
 * Thread-safe for distinct terrains.
 */
er_status er_droplet_prepare(const er_plan *plan, er_terrain *t, er_layers *layers,
                             er_droplet_setup *s, er_error *err);

/* Frees what er_droplet_prepare allocated; NULL or a zeroed setup is fine. */
void er_droplet_setup_free(er_droplet_setup *s);

/* The droplets done after b batches (er_run_state.done): the progress
 * fraction's numerator and a resume state's count. */
int64_t er_droplet_done_at(const er_plan *plan, int64_t b);

/* The run state view (core/model.h) after b batches of `batch` droplets
 * (the plan's batch), with the accumulators *sum, pointing at s's host
 * arrays: valid while they are, and only as current as they are. */
void er_droplet_state(const er_params *p, const er_droplet_setup *s, int64_t batch, int64_t b,
                      const er_dacc *sum, er_run_state *v);

/* Replaces the fresh state of s and *sum (set up from the run's input
 * terrain t, which fixes the droplet count, the height unit and
 * material_before) by r, once er_plan_check_resume accepts it.  ER_OK or
 * ER_EINVAL (a state that does not fit). */
er_status er_droplet_restore(const er_plan *plan, const er_terrain *t,
                             const er_droplet_setup *s, const er_run_state *r, er_dacc *sum,
                             er_error *err);

/* The end of a run that got as far as status st: fills *budget (may be
 * NULL) from the terrain t and *sum and, when the run completed (st ==
 * ER_OK), applies er_droplet_guard.  Returns the final status. */
er_status er_droplet_end(const er_params *p, const er_droplet_setup *s, const er_terrain *t,
                         const er_dacc *sum, er_status st, er_budget *budget, er_error *err);

/*
 * The run guard's budget tolerance, per droplet per valid cell (at least
 * one): a droplet run fails when |before - after - left_map| exceeds
 * ER_DROPLET_BUDGET_TOL * max(1, droplets per cell) of the input's sum of
 * |height| (er_droplet_guard).
 *
 * The Lague variant misses by float32 storage: a deposit share under half
 * a unit in the last place of its node's height is rounded away, which
 * happens more the flatter the terrain gets and the larger the heights are
 * beside the relief, and the count of such events grows with the droplets
 * per cell; so the tolerance grows with them.  On DEMs of 0.67 m to 1 km
 * relief, also raised by 8 km, at 0.1 to 1000 droplets a cell, the largest
 * miss stays 19x below the tolerance and most far below; mass-transfer
 * particles miss by 1e-10 at most.  A defect that loses or creates material in proportion to the
 * material moved is caught at any density: at 0.3 droplets a cell the
 * droplets move 3e-2 of a DEM's volume, 3e4 times the tolerance.
 */
#define ER_DROPLET_BUDGET_TOL 1e-6

/* Sets b's budget term "withheld" (core/model.h) to `withheld` when a run
 * of recipe p reports it (the snapshot schedule's). */
void er_droplet_put_withheld(const er_params *p, er_budget *b, double withheld);

/*
 * The run guard: checks the terrain t after a run set up as *s, and its
 * budget *b (material_before, material_after, left_map).  Returns ER_OK, or
 * ER_ENUMERIC with the first valid cell (row-major) that is not finite or
 * lies below s->lo (the input's lowest height; the erosion rule makes that
 * exact, so there is no margin), or when the budget misses by more than
 * ER_DROPLET_BUDGET_TOL * max(1, s->per_cell) of s->scale.
 * er_droplet_end applies it to every run that completes, on every backend;
 * the terrain and budget are handed back all the same.  Thread-safe; reads
 * only.
 */
er_status er_droplet_guard(const er_droplet_setup *s, const er_terrain *t, const er_budget *b,
                           er_error *err);

/* ---------------------------------------------------------------------
 * batch.c: starts and batches
 * --------------------------------------------------------------------- */

/* One batch's droplets, drawn and bucketed by scheduling block; host
 * scratch allocated once per run. */
typedef struct er_droplet_batch {
    er_blocking bl;           /* the batch's blocks, laid on the world */
    int n;                    /* droplets in the batch */
    int max_blocks;           /* room in start and colour_blocks */
    double *sx, *sy;          /* [cells] starts in map coordinates, by batch index */
    int *ok;                  /* 1 = the droplet starts in the map (else it runs nowhere) */
    int *block_of;            /* its block */
    int *order, *start;       /* droplets of block k: order[start[k] .. start[k+1]) */
    int *colour_blocks;       /* non-empty blocks of colour c: colour_blocks[colour_start[c] */
    int colour_start[5];      /* .. colour_start[c+1]), in block order */
} er_droplet_batch;

/* Start position of droplet `id`: one draw of (seed, ER_STREAM_DROPLET_START,
 * id), high half for x and low half for y, scaled to [0, W-1) x [0, H-1)
 * (Lague: node coordinates, the four nodes around it in the map) or
 * [0, W) x [0, H) (particle: cell coordinates), W x H the world (the map
 * itself without a window).  A start on a wall draws again from the
 * previous draw (a pure function of the same key), up to ER_START_TRIES
 * times; returns 0 when every try hit a wall, or when the start lies
 * outside the window (another tile's droplet) or in a cell where the rain
 * map is 0 (core/controls.h: counted as run, changing nothing).  Positions
 * are returned in map coordinates: world minus the window's corner, exact
 * in double (both are multiples of the world value's last place), so a
 * droplet's flight in a window is bit for bit its flight in the whole
 * world where the terrain agrees.  Thread-safe; reads only. */
int er_droplet_start(const er_dctx *c, uint64_t seed, int64_t id, double *px, double *py);

/* The most blocks a batch of the context's world has with block side
 * `size` (1 when the world runs as one block). */
int64_t er_droplet_max_blocks(const er_dctx *c, int size);

/* Allocates *bt for batches of up to `batch` droplets of context c with
 * block side `size`; free with er_droplet_batch_free (also after a
 * failure).  ER_OK or ER_ENOMEM. */
er_status er_droplet_batch_new(er_droplet_batch *bt, const er_dctx *c, int size, int64_t batch,
                               er_error *err);
void er_droplet_batch_free(er_droplet_batch *bt);

/* Draws batch b (droplets lo .. lo+n-1): the blocks of key (seed, b) on
 * the world, every droplet's start (a pure function of (seed, id); a
 * window keeps those that start in the map) and block, and the stable
 * bucketing by block (er_blocking_bucket).  Parallel inside (OpenMP). */
void er_droplet_batch_draw(const er_dctx *c, uint64_t seed, int size, int64_t b, int64_t lo,
                           int n, er_droplet_batch *bt);

/* The water of batch bt's started droplets (er_start_water), added in
 * droplet-index order from 0: the batch's share of er_dacc.water.  0
 * without a rain map.  Serial; reads only. */
double er_droplet_batch_water(const er_dctx *c, const er_droplet_batch *bt);

/* ---------------------------------------------------------------------
 * sink.c and snapshot.c: the schedule's fixed-point scales and sums
 * --------------------------------------------------------------------- */

/* The fixed-point shift k (unit 2^-k m) for a run whose input heights lie
 * in [lo, hi]: 36 bits below max(|lo|, |hi|, hi - lo) (sink.c). */
int er_snap_height_shift(double lo, double hi);
/* The shift for the flow layer's sums, from the largest start water. */
int er_snap_water_shift(double water_max);
/* A float as an int32 whose order is the floats' (for atomic min). */
int32_t er_snap_ordered(float f);
float er_snap_from_ordered(int32_t o);

/* A cell's room under the batch's taps, in units of 1/scale: snap - min(snap,
 * floor) for floor = er_snap_from_ordered(stop), truncated (so never more
 * than the float heights allow), capped below 2^62.  Each counted tap takes
 * at most room / count, so the taps of a batch never take more than it. */
int64_t er_snap_room(float snap, int32_t stop, float scale);

/* A cell's room above its batch-start height under the batch's deposits,
 * in units of 1/scale: its ceiling, the highest batch-start height of its
 * 3 x 3 neighbourhood (in the map, off walls; er_snap_ceiling, row by row:
 * the shaders' order, so even the sign of a zero agrees), minus its own,
 * truncated, capped below 2^62 (er_snap_room_up reads the ceiling
 * er_snap_begin stored).  Each counted deposit tap lays at most room /
 * its count, so the deposits of a batch never raise a cell above it. */
float er_snap_ceiling(const er_dsink *k, size_t i);
int64_t er_snap_room_up(const er_dsink *k, size_t i, float scale);

/* Sets k's h_scale and w_scale for the run s was set up for from plan:
 * the heights' from the input's range, the water's from the largest start
 * water (initial_water times the largest rain value). */
void er_snap_scales(const er_plan *plan, const er_droplet_setup *s, er_dsink *k);

/* Allocates the sums for the map of context c (its size and walls; the
 * sums hold no pointer into c's other arrays); free with er_snap_free
 * (also after a failure).  ER_OK or ER_ENOMEM. */
er_status er_snap_new(er_dsink *k, const er_dctx *c, int want_flow, er_error *err);
void er_snap_free(er_dsink *k);
/* The bytes a cell of the snapshot schedule's sums and counts take (the
 * flow sum included), for --max-memory (er_droplet_bytes_per_cell). */
size_t er_snap_bytes_per_cell(void);
/* Copies the heights into k->snap and clears the sums and counts: a
 * batch's start. */
void er_snap_begin(er_dsink *k, const float *height);
/* Applies the sums to height (and the layers, each may be NULL): heights
 * of cells nothing touched are left as they are.  Returns 0, or -1 when a
 * sum wrapped or a cell's erosion exceeds its room (a defect: the shares
 * make both impossible).  Parallel inside; the result is the same for any
 * thread count. */
int er_snap_resolve(const er_dsink *k, float *height, float *deposit, float *wear,
                    float *flow);

/* ---------------------------------------------------------------------
 * lague.c: a droplet's start (its steps are droplet_impl.h's)
 * --------------------------------------------------------------------- */

/* A Lague/Beyer droplet in flight. */
typedef struct er_lague_state {
    int bx, by;           /* base node: position = (bx + lx, by + ly) */
    float lx, ly;         /* [cells] position relative to the base node */
    float lx0, ly0;       /* [cells] start, relative to the base node */
    float dx, dy;         /* direction, unit length (0 at the start) */
    float speed, water;
    float water0;         /* water at the start (rain map times initial_water) */
    float sed;            /* [m] sediment carried */
    int it;               /* steps taken */
    size_t *trail;        /* cell of each step (lifetime entries), for the flow layer */
} er_lague_state;

/* Starts a droplet at (x, y) (node coordinates, the four nodes around it
 * valid); trail is scratch for c->lifetime cell indices, owned by the
 * caller and used until the droplet ends. */
void er_lague_begin(const er_dctx *c, er_lague_state *s, double x, double y, size_t *trail);

#endif
