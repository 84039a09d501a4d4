/*
 * The Mei grid model as its host-side drivers see it: the state of a run
 * (er_mei_sim), the coefficients of a sub-step, and the set-up, water,
 * check, resume and copy-out functions of core/mei/.  The CPU model
 * (core/mei/mei_internal.h, which adds the row kernels and their
 * pipeline) and the Vulkan backend (core/mei/vulkan.c, which keeps the
 * state on the device and uses a host er_mei_sim for the budget, the
 * sources, the boundary views and the copy-out) both include it; no other
 * model does.
 */
#ifndef ER_MEI_HOST_H
#define ER_MEI_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "../model.h"
#include "../plan.h"
#include "state.h"

/* Directions of the four virtual pipes (Mei fig. 3): L = column x-1,
 * R = x+1, T = row y-1 (towards the top of the image), B = row y+1. */
enum { ER_L = 0, ER_R = 1, ER_T = 2, ER_B = 3 };

/* Coefficients of one (sub-)step, precomputed in float so that every row
 * kernel uses identical values. */
typedef struct er_mei_coef {
    float dt;        /* [s] length of this (sub-)step */
    float rain;      /* [m] uniform rain added to every terrain cell (eq. 1) */
    float cx, cy;    /* [1/s] flux gain per metre of head, L/R and T/B pipes:
                      * dt * A * g / (l * lX * lY) with A = pipe_area * lX * lY */
    float hlx, hly;  /* [m] lX / 2, lY / 2 (eqs. 8-9) */
    float inv2lx, inv2ly, invlx, invly; /* [1/m] for the terrain gradient */
    float kc;        /* [s] sediment capacity constant (eq. 10) */
    float inv_cd;    /* [1/m] 1 / capacity_depth, or 0 */
    float cd_off;    /* 0, or 1 when there is no depth factor (dbar inv_cd + off) */
    float ks_dt;     /* min(1, Ks * dt): fraction of the capacity deficit dissolved (eq. 11) */
    float kd_dt;     /* min(1, Kd * dt): fraction of the excess deposited (eq. 12) */
    float emax;      /* [m] most terrain one step removes from a cell */
    float min_tilt2; /* square of the lower bound on sin(alpha) (eq. 10) */
    float keep;      /* 1 - Ke * dt (eq. 15) */
    float dry;       /* [m] ER_MEI_DRY, or 0 without evaporation */
    float th_k;      /* thermal: fraction of a pair's excess moved, 0 = off */
    float talus_x, talus_y; /* [m] stable height difference between L/R and T/B neighbours */
    float dt_lx, dt_ly;     /* [s/m] dt / lX, dt / lY (semi-Lagrangian backtrace) */
    int open;        /* 1: some map edge is open (water and sediment leave) */
    int open_edge[4];/* per edge (ER_L, ER_R, ER_T, ER_B): the recipe's boundary on the
                      * world's edges, always open on a window's inner (halo) edges */
    int semi_lagrangian;
} er_mei_coef;

/* What one row contributes to the step's budget and checks; written only
 * by the chunk that owns the row, summed serially in row order. */
typedef struct er_mei_rowacc {
    double eroded;      /* [m] terrain dissolved (eq. 11) */
    double deposited;   /* [m] terrain added (eq. 12 and drying) */
    double left_sed;    /* [m] sediment that left through open edges */
    double left_water;  /* [m] water that left through open edges */
    uint32_t umax;      /* bits of max |u| [m/s] (ordered like the floats; NaN is largest) */
    uint32_t vmax;      /* bits of max |v| */
    uint32_t bad;       /* non-zero: a new b, d or s of the row is not finite */
    uint32_t umax_x, vmax_x; /* where umax / vmax were seen (first column) */
} er_mei_rowacc;

/* The simulation: the state layers (one copy each, updated in place),
 * the boundary snapshot, per-row accumulators and per-thread scratch, all
 * allocated once per run (er_mei_sim_alloc). */
typedef struct er_mei_sim {
    int w, h;
    int wx0, wy0;          /* [cells] the map's top-left cell in the world (er_window) */
    int world_w, world_h;  /* [cells] the world; the map itself without a window */
    int inner[4];          /* per edge (ER_L, ER_R, ER_T, ER_B): 1 = a halo edge inside the world */
    double lx, ly;         /* [m] cell size */
    const uint8_t *wall;   /* 1 = nodata (a wall); NULL = none */
    const er_controls *ctl;  /* the control maps on the map's grid; NULL = none given */
    const uint8_t *row_wall; /* per row: 1 if the row holds a wall; NULL = none */
    uint8_t *row_wall_buf; /* the same, owned */
    float *neutral;        /* with a hardness or mask map: a row of 0 (hardness) and a
                            * row of 1 (mask) standing in for the map not given */
    const float *b0;       /* [m] initial terrain height (the caller's, read-only) */
    float *z;              /* [m] terrain change since the start: b = b0 + z.  Kept
                            * apart so that changes far below one float step of b
                            * (6e-5 m at 600 m) still add up */
    float *d;              /* [m] water depth */
    float *s;              /* [m] suspended sediment, as a height of material */
    float *q[4];           /* [m/s] outflow flux per cell area, f / (lX lY) (eqs. 2-5) */
    float *flow;           /* [m] water that left each cell so far (er_layers.flow, the
                            * caller's buffer); NULL = not kept */
    float *wear;           /* [m] terrain dissolved at each cell so far (eq. 11,
                            * er_layers.wear); NULL = not kept */
    float *snap;           /* old state of the rows beside each chunk boundary */
    er_mei_rowacc *acc;    /* h entries */
    er_mei_rowacc *acc2;   /* h entries: the second sub-step of a sweep of two */
    float *state_mem[7];   /* the allocations behind z, d, s, q (see ER_MEI_SKEW) */
    float *scratch;        /* nthreads * ER_MEI_SCRATCH_ROWS rows of scr_stride floats */
    int scr_stride;        /* [floats] from one scratch row to the next (see ER_MEI_SKEW) */
    int nthreads;
    int chunk_rows;        /* rows per chunk of the parallel loop */
    int nchunks;
} er_mei_sim;

/* mei.c */
/* Sub-steps per step the pipe update needs (stability condition 2 of
 * mei.c); ER_ENUMERIC under ER_CFL_ERROR or beyond max_substeps. */
er_status er_mei_plan_substeps(const er_mei_params *m, double lx, double ly, int64_t *n,
                               er_error *err);
/* ER_ENUMERIC when a (sub-)step with coefficients k breaks stability
 * condition 2 of mei.c (the plan's sub-steps prevent it). */
er_status er_mei_check_coef(const er_mei_coef *k, er_error *err);
/* The coefficients of a (sub-)step of length dt; uses sim->lx, sim->ly and
 * sim->inner only. */
void er_mei_make_coef(const er_mei_sim *sim, const er_mei_params *m, double dt, int raining,
                      er_mei_coef *k);
/* Allocates the simulation of map t at win (NULL: the map is the world),
 * the state zeroed; free with er_mei_sim_free (also after a failure). */
er_status er_mei_sim_alloc(er_mei_sim *sim, const er_terrain *t, const er_window *win,
                           er_error *err);
/* er_mei_sim_alloc, the suspended sediment kept in `sediment` and the
 * water depth in `water` (NULL: its own), each a map's worth of floats
 * that the sim zeroes and copy-out leaves as the sediment and water
 * layers; sim does not free them. */
er_status er_mei_sim_alloc_in(er_mei_sim *sim, const er_terrain *t, const er_window *win,
                              float *water, float *sediment, er_error *err);
void er_mei_sim_free(er_mei_sim *sim);
/* Points sim's flow and wear accumulators at the layers' buffers (NULL:
 * none) and zeroes them. */
void er_mei_keep_layers(er_mei_sim *sim, const er_layers *layers);
/* The run state at the boundary after `step` steps (core/model.h): a view
 * of sim's arrays and of bud. */
void er_mei_state_view(const er_mei_sim *sim, const er_mei_params *m, int64_t step,
                       const er_budget *bud, er_run_state *v);
/* Replaces sim's fresh state by the resumed r (checked against the plan
 * and t, the run's terrain: er_plan_check_resume) and bud's accumulators by r's, keeping bud->material_before; *step0
 * receives the step to go on from.  The accumulators carry on from their
 * saved values, so the sums are formed as in an uninterrupted run. */
er_status er_mei_restore(er_mei_sim *sim, const er_plan *plan, const er_terrain *t,
                         const er_run_state *r, er_budget *bud, int64_t *step0, er_error *err);
/* The end of a run (also a failed or cancelled one): material_after and
 * rel_error of bud (base: the input terrain's total; abs_sum: its sum of
 * |height|, er_budget_rel_error), and sim's state written to t and layers
 * as the outputs (b0 + z, non-finite values 0). */
void er_mei_finish(const er_mei_sim *sim, er_terrain *t, er_layers *layers, double base,
                   double abs_sum, er_budget *bud);
/* The checks of a sub-step that can fail (condition 1 of mei.c). */
enum { ER_MEI_FAIL_STATE = 1, ER_MEI_FAIL_VELOCITY, ER_MEI_FAIL_CFL_U, ER_MEI_FAIL_CFL_V };
/* The CFL check's allowance for rounding (condition 1 holds by construction). */
#define ER_MEI_CFL_SLACK (1.0 + 1e-3)
/* ER_ENUMERIC with the line of failure `kind` at `step` in `row` (vel: the
 * velocity of a CFL failure [m/s]). */
er_status er_mei_fail(const er_mei_sim *sim, const er_mei_coef *k, int kind, int64_t step,
                      int row, float vel, er_error *err);

/* The map as core/sources.h sees it: the discs of raindrops and river
 * sources, in the window's cells. */
static inline er_source_grid er_mei_grid(const er_mei_sim *sim)
{
    return (er_source_grid){sim->w, sim->h, sim->wx0, sim->wy0, sim->world_w, sim->world_h,
                            sim->wall, NULL};
}
/* Eq. 1: the raindrops of `step` (drawn over the world) and the river
 * sources of one sub-step of length dt (in world pixels), added to the
 * depths d, or only counted when d is NULL (the device adds them); *added
 * grows by the water added, in the same order either way.  er_mei_add_drops
 * returns 0 when the recipe has no raindrops. */
int er_mei_drops_on(const er_mei_params *m);
int er_mei_add_drops(const er_mei_sim *sim, float *d, const er_mei_params *m, uint64_t seed,
                     int64_t step, double *added);
void er_mei_add_sources(const er_mei_sim *sim, float *d, const er_source_list *l, double dt,
                        double *added);
/* The control maps' water of one sub-step of length dt: the sources
 * raster (q dt per cell) and, when rain > 0 and there is a rain map, the
 * rain (rain r per cell, which the sweep then leaves out: k->rain = 0),
 * added to d on the terrain cells in that order; *added grows by it
 * (rows summed serially; d NULL: only counted).  Uses acc[].eroded (free between sweeps). */
void er_mei_add_maps(const er_mei_sim *sim, float *d, float rain, double dt, double *added);

/* budget.c */
double er_mei_total(const er_mei_sim *sim, const float *a);
int64_t er_mei_terrain_cells(const er_mei_sim *sim);

#endif
