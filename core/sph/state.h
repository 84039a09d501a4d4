/*
 * The state of an SPH run (er_run_state, core/model.h), for the model and
 * the tests.
 */
#ifndef ER_SPH_STATE_H
#define ER_SPH_STATE_H

/* Arrays: the height, water and sediment layers as the run would write
 * them at that boundary (for frames), then the wear and flow accumulators
 * (what the run writes; NULL when not kept), so a resume is bit-exact.
 * What it resumes from besides them is its model section
 * (er_run_state.extra): count[0] particles and count[1] source slots, and
 * the doubles of the particles (ER_SPH_PARTICLE_DOUBLES each: x, y, z
 * [cells], vx, vy, vz [cells/T], C), the working heights, the change
 * since the start and the deposits (width * height each, [cells]), and
 * the source volume not yet emitted per slot [cells^3], in this order. */
enum { ER_STATE_SPH_WEAR = 3, ER_STATE_SPH_FLOW = 4 };
#define ER_STATE_SPH_ARRAYS 5
#define ER_SPH_PARTICLE_DOUBLES 7
enum { ER_SPH_PART_PARTICLES = 0, ER_SPH_PART_ZB, ER_SPH_PART_DZ, ER_SPH_PART_DEP,
       ER_SPH_PART_PENDING, ER_SPH_PARTS };

#endif
