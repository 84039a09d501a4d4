/*
 * The arrays of a Mei run state (er_run_state.array, core/model.h), for
 * the CPU and Vulkan paths and the tests.
 */
#ifndef ER_MEI_STATE_H
#define ER_MEI_STATE_H

/* Terrain change z = b - b0, water d, suspended sediment s, the four
 * outflow fluxes fL, fR, fT, fB (mei_internal.h), then the flow and wear
 * accumulators (NULL when the run keeps none).  A state of 7 arrays
 * (written before flow and wear existed) lacks the last two. */
enum { ER_STATE_MEI_Z = 0, ER_STATE_MEI_D, ER_STATE_MEI_S, ER_STATE_MEI_Q,
       ER_STATE_MEI_FLOW = 7, ER_STATE_MEI_WEAR = 8 };
#define ER_STATE_MEI_ARRAYS 9
#define ER_STATE_MEI_OLD 7

#endif
