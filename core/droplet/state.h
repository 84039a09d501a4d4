/*
 * The arrays of a droplet run state (er_run_state.array, core/model.h),
 * for the CPU and Vulkan paths and the tests.
 */
#ifndef ER_DROPLET_STATE_H
#define ER_DROPLET_STATE_H

/* The working heights (modified in place), the flow (water) and deposit
 * (sediment) layers and the wear layer; the layers are NULL when not
 * kept.  A 3-array state (an older checkpoint's) lacks the wear. */
enum { ER_STATE_DROP_HEIGHT = 0, ER_STATE_DROP_FLOW, ER_STATE_DROP_DEPOSIT,
       ER_STATE_DROP_WEAR };
#define ER_STATE_DROP_ARRAYS 4
#define ER_STATE_DROP_OLD 3

#endif
