/*
 * The stream-power model (core/stream_power/): the simulation state its
 * files share.  sp.c runs it (plan, steps, budget, run states), route.c
 * routes the water (receivers, depressions, stack, drainage area),
 * erode.c solves the stream-power law and deposition, diffuse.c the
 * hillslope diffusion, num.c the powers.
 */
#ifndef ER_SP_INTERNAL_H
#define ER_SP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../drive.h"
#include "../plan.h"
#include "state.h"

/* What a cell is to the model (er_sp_sim.kind). */
enum {
    ER_SP_FREE = 0, /* a valid cell the model changes */
    ER_SP_BASE = 1, /* base level: a valid cell held fixed, where rivers leave */
    ER_SP_WALL = 2  /* nodata: never read, never changed */
};

/* Neighbour k of a cell (D8, row-major: k = 0..7 for (dx, dy) = (-1, -1),
 * (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)); the
 * opposite direction of k is 7 - k.  ER_SP_NONE: no receiver. */
extern const int er_sp_dx[8], er_sp_dy[8];
#define ER_SP_NONE 8

/* Columns the diffusion's column pass solves together (diffuse.c), so
 * that each row's part of a block is a cache line or two, not a line a
 * cell. */
#define ER_SP_BLOCK 16

/* Maps of fewer cells run the traversal, the carving, the lakes' lists
 * and the walks over the blocks (route.c, walk.c) on one thread: starting
 * the threads costs more than such a map's work (a step of a 60-cell map
 * is microseconds), and the bytes are the same either way. */
#define ER_SP_PAR_CELLS 2048

/* Counts below this have their power A^m from a table (er_sp_sim.pow_tab). */
#define ER_SP_POW_TABLE 65536

/* An edge between two cells of different basins (route.c): its pass
 * height max(z_a, z_b), the lower of the two, and its cells, a < b. */
/* The name of its budget term (core/model.h er_budget.term): the
 * material uplifted into the map [m * cells]. */
#define ER_SP_UPLIFTED "uplifted"

typedef struct er_sp_edge {
    double w, lo;
    int32_t a, b;
} er_sp_edge;

/* A closed basin (route.c): every cell whose steepest-descent path ends in
 * its pit.  Basin 0 is the set of all cells draining to base level. */
typedef struct er_sp_basin {
    int32_t pit;     /* its lowest cell, where the steepest-descent paths end */
    int32_t parent;  /* the basin it spills into (the minimum spanning tree's parent) */
    int32_t x, y;    /* the pass: cell x in this basin, cell y beside it in the parent */
    double level;    /* [m] the water level of its lake: the lowest height at which
                      * water from its pit reaches base level */
    int64_t s0, ns;  /* its block of the stack (route.c forest) */
    int32_t depth;   /* passes between it and base level: its level (route.c schedule) */
    int32_t block;   /* its block of the stack (route.c forest) */
    int32_t lake0, nlake; /* its lake cells in er_sp_sim.lakes, lowest first */
    double pool;     /* [m * cells] sediment that reached its lake this step (erode.c) */
} er_sp_basin;

/* A lake cell and its height, for sorting a lake's cells lowest first. */
typedef struct er_sp_lake {
    double z;
    int32_t i;
} er_sp_lake;

typedef struct er_sp_sim {
    int w, h;
    int64_t n;             /* w * h */
    double dx, dy;         /* [m] cell size along a row, between rows */
    double dd;             /* [m] the diagonal, sqrt(dx^2 + dy^2) */
    double area;           /* [m^2] one cell, dx dy */
    double *z;             /* [m] working heights, n (walls hold 0, never read) */
    uint8_t *kind;         /* ER_SP_FREE, _BASE, _WALL per cell */
    int walls;             /* 1: some cell is nodata */
    /* Control maps (core/controls.h) as the model uses them, NULL = none:
     * ks = (1 - hardness) * mask scales K_f and the diffusion between two
     * cells (the smaller of theirs), mask scales uplift and deposition, the
     * uplift map the uplift, rain the water each cell adds downstream. */
    float *ks;
    const float *mask, *rain, *uplift;
    /* Routing off the grid (route.c): the draws' seed, the spread of
     * "random". */
    er_sp_routing routing;
    uint64_t seed;
    double spread;
    int64_t off[8];        /* index offset of neighbour k: dy w + dx */
    /* Routing (route.c), recomputed every step from z. */
    uint8_t *rdir;         /* direction of each cell's receiver, ER_SP_NONE for none
                            * (base level, walls, a pit the routing left alone) */
    uint8_t *dmask;        /* bit k: neighbour k sends its water here */
    int32_t *stack;        /* the valid cells in blocks, one a root of the receivers
                            * before the depressions are resolved (a base-level cell
                            * or a pit) and its upstream cells, every receiver before
                            * its donors; a resolved pit's block drains through its
                            * first cell into another block (route.c) */
    int64_t nstack;
    int64_t *root_at;      /* where each block starts, nroots + 1 */
    int64_t *chunk_at;     /* the traversal's chunks of roots (route.c forest): 2 per
                            * chunk, chunks_cap pairs */
    int64_t nroots, roots_cap, chunks_cap;
    int32_t *sched;        /* the blocks by level (route.c schedule), rsum_cap */
    int64_t *lvl_at;       /* where each level starts in sched, nlevels + 1 */
    int32_t nlevels;
    /* The walks over the blocks (walk.c), rsum_cap each: the queue of
     * blocks ready to run, and per block the blocks draining into it not
     * yet done; used with __atomic builtins. */
    int32_t *walk_q;
    int32_t *walk_pending;
    double *rsum;          /* 3 sums per block (erode.c), rsum_cap blocks */
    int64_t rsum_cap;
    int32_t *bcells;       /* scratch of n cells (route.c carve) */
    int32_t *basin;        /* each cell's basin (0: drains to base level) */
    uint8_t *lake;         /* 1: below its basin's lake level */
    double *acc;           /* [cells] drainage area (rain-weighted with a rain map);
                            * in m^2 times `area` */
    /* Per basin (grown between phases as the basins need, never shrunk):
     * basins_cap of each. */
    int64_t nbasins, basins_cap;
    er_sp_basin *basins;   /* [0] the base level */
    int32_t *uf;           /* union-find over basins (Kruskal) */
    int32_t *order;        /* basins in breadth-first order from the base level */
    int32_t *tree_off;     /* basins + 1 offsets into tree */
    int32_t *tree;         /* the spanning tree's half-edges by basin: the other basin */
    int32_t *tree_edge;    /* and the pass it goes through, in edges */
    int64_t *row_at;       /* where each row's passes start in edges, h + 1 */
    int32_t *child_at;     /* basins + 1 offsets into child */
    int32_t *child;        /* each closed basin's children (the basins spilling into it)
                            * in basin order (route.c schedule) */
    er_sp_edge *edges;     /* candidate passes of this step */
    er_sp_edge *edges_tmp; /* the radix sort's other buffer */
    int64_t *radix;        /* the radix sort's digit counts: 256 a thread */
    int64_t nedges, edges_cap;
    int sorted;            /* 1 once a sort copied passes into edges_tmp (route.c) */
    er_sp_lake *lakes;     /* lake cells grouped by basin, each group lowest first */
    int64_t nlakes, lakes_cap;
    /* Erosion (erode.c). */
    double *q;             /* [m * cells] sediment leaving each cell this step; diffuse.c's
                            * copy of the heights before it; route.c's staging area
                            * (2 n int32) while it builds the stack */
    double pow_a;          /* [m^(2m)] cell area^m */
    double *pow_tab;       /* count^m (times the width's share, below) for counts below
                            * ER_SP_POW_TABLE (no rain map) */
    double width_w1;       /* [m] a channel's width at 1 km^2 (stream_power.channel_width,
                            * 0: a cell) */
    double width_b;        /* its exponent in A (stream_power.width_exponent) */
    /* Diffusion scratch (diffuse.c): dscr_per_thread doubles a thread
     * (two lines, or two column blocks of h * ER_SP_BLOCK);
     * sums: per-row and per-column sums, 3 h + w. */
    double *dscr;
    size_t dscr_per_thread;
    int threads;           /* threads at set-up: the per-thread arrays' count */
    double *sums;
    /* Accumulated layers (the caller's buffers, NULL = not kept). */
    float *wear, *dep;
} er_sp_sim;

/* What one step changed, in metres * cells, summed in a fixed order. */
typedef struct er_sp_tally {
    double uplifted, eroded, deposited, left;
} er_sp_tally;

/* sp.c: the simulation of a run of plan on t, its heights those of t,
 * the layers' sediment and wear zeroed and kept in ly's buffers (NULL:
 * none); its destructor (accepts a zeroed or half-made sim).  The run is
 * er_sp_steps through the run driver; the benchmark drives the phases
 * itself. */
er_status er_sp_init(er_sp_sim *s, const er_plan *plan, const er_terrain *t,
                     const er_layers *ly, er_error *err);
void er_sp_free(er_sp_sim *s);

/* sp.c: uplift U dt mask uplift-map on every free cell; returns the material added
 * [m * cells], summed row by row in order. */
double er_sp_uplift(er_sp_sim *s, const er_stream_power_params *p);

/* route.c: routes the water over the heights z: steepest-descent
 * receivers, every closed basin joined to base level through its lowest
 * pass (Cordonnier et al. 2019) with the path to it reversed ("carved"),
 * the stack, the lake cells and levels, the drainage area.  Lake cell
 * lists only when `lists`.  The three phases one after the other:
 * er_sp_route_receivers (receivers, donors and the stack of the blocks),
 * er_sp_route_depressions (the passes, their spanning tree, carving, the
 * blocks' levels and the lakes), er_sp_accumulate (the drainage area);
 * the benchmark times them apart. */
er_status er_sp_route(er_sp_sim *s, int lists, er_error *err);
er_status er_sp_route_receivers(er_sp_sim *s, er_error *err);
er_status er_sp_route_depressions(er_sp_sim *s, int lists, er_error *err);
void er_sp_accumulate(er_sp_sim *s);

/* route.c: the bytes of the per-basin, per-block, pass and lake records
 * the last er_sp_route filled (what grows with the map's depressions),
 * the sort's second buffer counted when a sort used it or `sorts`. */
size_t er_sp_route_bytes(const er_sp_sim *s, int sorts);

/* The length [m] of a step to neighbour k: dx along a row, dy across,
 * dd diagonally. */
static inline double er_sp_step(const er_sp_sim *s, int k)
{
    return er_sp_dx[k] == 0 ? s->dy : er_sp_dy[k] == 0 ? s->dx : s->dd;
}

/* The receiver of cell i (i itself when it has none). */
static inline int32_t er_sp_rcv(const er_sp_sim *s, int32_t i)
{
    const uint8_t d = s->rdir[i];
    return d == ER_SP_NONE ? i : (int32_t)(i + s->off[d]);
}

/* walk.c: fn(s, r, ctx) on every block r of the stack (route.c), on all
 * threads, one thread a block.  Down: a block after the block it drains
 * into.  Up: a block after every block that drains into it, whose totals
 * link(s, c, ctx) has added to it (in block order, before fn on it; the
 * blocks of level 1 on one thread, in block order, once every closed
 * basin's block is done).  Each cell sees its additions in one fixed
 * order, whatever the thread count. */
typedef void (*er_sp_block_fn)(er_sp_sim *s, int64_t r, void *ctx);
void er_sp_walk_down(er_sp_sim *s, er_sp_block_fn fn, void *ctx);
void er_sp_walk_up(er_sp_sim *s, er_sp_block_fn fn, er_sp_block_fn link, void *ctx);

/* erode.c: the stream-power law along the stack (Braun and Willett 2013)
 * and, with G > 0, deposition (Yuan et al. 2019) and lakes filled; adds
 * to t.  One step of dt years. */
void er_sp_incise(er_sp_sim *s, const er_stream_power_params *p, er_sp_tally *t);

/* diffuse.c: implicit hillslope creep over dt years, linear or, with
 * S_c > 0, nonlinear, then cells steeper than S_c relaxed towards it. */
void er_sp_diffuse(er_sp_sim *s, const er_stream_power_params *p, er_sp_tally *t);

/* breach.c: every closed basin of the last routing (er_sp_route) cut
 * through its pass down to its pit's height less `grade` [m/m] a metre
 * along the path (stream_power.depressions "breach" and "drain",
 * breach_grade), through the map's edges too where follow (base_level
 * "follow"); returns the material cut [m * cells], which leaves the map.
 * Uses bcells. */
double er_sp_breach(er_sp_sim *s, double grade, int follow);

/* breach.c: er_sp_breach right after er_sp_route (stream_power.depressions
 * "drain"), its basins then drained: no cell stays under a lake for the
 * incision, whose receivers, carved through the cut paths, all lead down
 * (those below a floor stay put: their receivers stand higher). */
double er_sp_drain(er_sp_sim *s, double grade, int follow);

/* lithology.c: the rock's relative erodibility at each cell, 1 + L xi
 * with xi in [-1, 1] a sum of value-noise octaves in metres; multiplies
 * out[i]. */
void er_sp_lithology(const er_sp_sim *s, const er_stream_power_params *p, float *out);

/* erode.c: the share of a cell's width a channel of drainage area `cells`
 * (in cells) covers, min(1, w / b): 1 without a channel width. */
double er_sp_width_share(const er_sp_sim *s, double cells);

/* num.c: x^y for x > 0 from + - * / only (no libm transcendental in model
 * arithmetic: they may differ between CPUs), to about 1e-15 relative; 0
 * for x == 0. */
double er_sp_pow(double x, double y);

/* The model's entry points (its er_model_ops, core/stream_power/ops.c). */
er_status er_sp_plan(er_plan *plan, const er_terrain *t, er_error *err);
extern const er_model_steps er_sp_steps;
size_t er_sp_bytes_per_cell(const er_params *p);

#endif
