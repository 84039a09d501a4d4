/*
 * The state of a stream-power run (er_run_state, core/model.h), for the
 * model and the tests.
 */
#ifndef ER_STREAM_POWER_STATE_H
#define ER_STREAM_POWER_STATE_H

/* Arrays: the height, water and sediment layers as the run would write
 * them at that boundary (for frames: heights, lake depths, deposits so
 * far), then the wear accumulator (NULL when not kept); sediment is NULL
 * too when the run keeps no sediment layer.  What a run resumes from
 * besides the deposits and wear is its model section
 * (er_run_state.extra): count[0] = width * height, count[1] = 0, and the
 * doubles of the working heights [m] (count[0] of them, walls included)
 * followed by the material uplifted so far [m * cells] (one). */
enum { ER_STATE_SP_HEIGHT = 0, ER_STATE_SP_WATER, ER_STATE_SP_SEDIMENT, ER_STATE_SP_WEAR };
#define ER_STATE_SP_ARRAYS 4
enum { ER_SP_PART_Z = 0, ER_SP_PART_UPLIFTED, ER_SP_PARTS };

#endif
