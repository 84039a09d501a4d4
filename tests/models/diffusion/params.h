/*
 * Linear hillslope diffusion, a model for the tests alone: the proof that
 * a model is its directory and one line of a model list.  Its recipe
 * section (er_params.diffusion) and what the plan derives from it.
 */
#ifndef ER_DIFFUSION_PARAMS_H
#define ER_DIFFUSION_PARAMS_H

#include <stdint.h>

typedef struct er_diffusion_params {
    int64_t steps;   /* time steps, >= 0 */
    double dt;       /* [s] time step */
    double kd;       /* [m^2/s] diffusivity D of dz/dt = D (d2z/dx2 + d2z/dy2) */
} er_diffusion_params;

/* What the plan derives (er_plan.own.diffusion). */
typedef struct er_diffusion_derived {
    int64_t substeps;  /* per step: the explicit scheme's stability bound */
    double dt_sub;     /* [s] dt / substeps */
} er_diffusion_derived;

#endif
