/*
 * The Mei model's recipe section as a struct (core/params.h includes it:
 * er_params.mei).  Its keys are in core/mei/keys.c.
 */
#ifndef ER_MEI_PARAMS_H
#define ER_MEI_PARAMS_H

#include <stdint.h>

/* er_boundary comes from core/params.h, which includes this. */

typedef enum er_advection {
    ER_ADVECT_CONSERVATIVE = 0,    /* mass-conserving upwind transport (default) */
    ER_ADVECT_SEMI_LAGRANGIAN = 1  /* Mei eq. 14 as published */
} er_advection;

typedef enum er_cfl_policy {
    ER_CFL_SUBSTEP = 0, /* split a step into sub-steps when the CFL bound needs it */
    ER_CFL_ERROR = 1    /* stop with ER_ENUMERIC instead */
} er_cfl_policy;

typedef struct er_mei_params {
    int64_t steps;          /* number of time steps, >= 0 */
    double dt;              /* [s] time step */
    double gravity;         /* [m/s^2] g in eq. 2 */
    double pipe_area;       /* A in eq. 2 as a multiple of the cell area: A = pipe_area * lX * lY */
    double rain_rate;       /* [m/s] uniform rain r_t in eq. 1 */
    int64_t rain_steps;     /* rain only during the first N steps; 0 = every step */
    int64_t drops_per_step; /* random raindrops per step */
    double drop_radius;     /* [cells] radius of one raindrop */
    double drop_amount;     /* [m] water depth one raindrop adds on the cells it covers */
    er_boundary boundary;
    double kc;              /* sediment capacity constant Kc (eq. 10) [s] */
    double ks;              /* dissolving constant Ks (eq. 11) [1/s]: a rate, a step dissolves
                             * min(1, ks * dt) of the capacity deficit (the paper prints no dt) */
    double kd;              /* deposition constant Kd (eq. 12) [1/s]: a step deposits
                             * min(1, kd * dt) of the excess */
    double ke;              /* evaporation constant Ke (eq. 15) [1/s] */
    double min_tilt;        /* lower bound on sin(alpha) in eq. 10 */
    double max_erosion_depth; /* [m] most terrain one step may remove from a cell */
    er_advection advection;
    double thermal_rate;    /* thermal weathering rate [1/s]; 0 = off */
    double talus_slope;     /* talus: largest stable height difference per metre */
    er_cfl_policy cfl;
    int64_t max_substeps;   /* cap on sub-steps per step under ER_CFL_SUBSTEP */
    double reference_cell_size; /* [m] the keys that count cells (drop_radius, sources'
                                 * radius, thermal_rate per cell area) hold at this cell
                                 * size and are converted to the map's; 0 = off */
    double capacity_depth;  /* [m] reference depth D: the capacity is C * dbar / D
                             * = Kc sin(alpha) q / D with q = |v| dbar the discharge
                             * per width (converges in dt); 0 = eq. 10 as printed */
} er_mei_params;

/* What the plan derives from the section on a map (er_plan.own.mei). */
typedef struct er_mei_derived {
    int64_t substeps;       /* per step: stability condition 2 of core/mei/mei.c */
    double dt_sub;          /* [s] mei.dt / substeps */
} er_mei_derived;

#endif
