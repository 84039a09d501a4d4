/*
 * The SPH model's recipe section as a struct (core/params.h includes it:
 * er_params.sph).  Its keys are in core/sph/keys.c.
 */
#ifndef ER_SPH_PARAMS_H
#define ER_SPH_PARAMS_H

#include <stdint.h>

/* er_boundary comes from core/params.h, which includes this. */

/* SPH water over the heightfield (Kristof et al. 2009, core/sph/).  The
 * model runs in a frame scaled by the cell size L and the time
 * T = sqrt(L / g) (Froude scaling): keys marked "model units" are in that
 * frame, see core/sph/sph.c.  River sources are er_params.river. */
typedef struct er_sph_params {
    int64_t steps;          /* number of time steps, >= 0 */
    double dt;              /* [s] time step (sub-stepped by the CFL and viscous limits) */
    double gravity;         /* [m/s^2] g; sets the time unit T = sqrt(L / g) */
    double spacing;         /* [cells] particle spacing; h = 2 * spacing; 0 = "auto" until
                             * the plan chooses it from the fill (core/sph/sph.c) */
    double fill_level;      /* [m] initial water up to this height; see fill_level_set */
    int fill_level_set;     /* 0: recipe says null (no initial water) */
    double fill_quantile;   /* [0, 1] the fill level as that height quantile of the valid
                             * cells (the plan sets fill_level from it); see _set */
    int fill_quantile_set;  /* 0: recipe says null (fill_level, if any, as given) */
    double sound_speed;     /* [model units, sqrt(g L)] c0 of the equation of state */
    int sound_speed_set;    /* 0: recipe says null: the plan takes the least the water's
                             * drop allows, at least ER_SPH_SOUND_SPEED */
    double viscosity;       /* [model units, sqrt(g L^3)] kinematic viscosity nu */
    double friction;        /* boundary friction mu of eq. 8 [model units] */
    double erosion_rate;    /* K_eps of eq. 10 [model units] */
    double critical_shear;  /* tau_c of eq. 10 [model units] */
    double settling_speed;  /* [m/s] unhindered settling speed, eq. 17 without f(C) */
    double c_max;           /* largest solid volume fraction C of a particle */
    int64_t max_particles;  /* particles at most (sources stop adding beyond it) */
    int64_t max_substeps;   /* cap on sub-steps per step */
    er_boundary boundary;   /* map edges: open (water leaves) or closed */
} er_sph_params;

/* What the plan derives from the section on a map (er_plan.own.sph). */
typedef struct er_sph_derived {
    int64_t substeps;       /* per step: the CFL and viscous limits of core/sph/sph.c */
    double dt_sub;          /* [s] sph.dt / substeps */
    int64_t particles;      /* the initial fill's particles (sph.fill_level) */
} er_sph_derived;

#endif
