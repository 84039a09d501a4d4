/*
 * The diffusion model's parts, shared by its files (tests/models/diffusion/).
 */
#ifndef ER_DIFFUSION_H
#define ER_DIFFUSION_H

#include "../../../core/models.h"

/* Its state (er_run_state): one array, the heights; no model section. */
enum { ER_STATE_DIFF_HEIGHT = 0, ER_STATE_DIFF_ARRAYS };

er_status er_diffusion_plan(er_plan *plan, const er_terrain *t, er_error *err);
extern const er_model_steps er_diffusion_steps;

#endif
