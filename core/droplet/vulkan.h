/*
 * The Vulkan droplet model's test hook.  Private to core/vulkan/ and the
 * unit tests; the program calls er_vk_droplet_run (core/backend.h).
 */
#ifndef ER_VK_DROPLET_H
#define ER_VK_DROPLET_H

#include <stdint.h>

#include "../backend.h"

/*
 * er_vk_droplet_run with a chosen number of droplet steps per block and
 * dispatch (0 = automatic: unlimited on GPUs, lavapipe's loop budget on
 * CPU devices) and of batches per submission (0 = automatic: one on CPU
 * devices, up to 64 on GPUs; at most 64), so that lavapipe tests the
 * chunks a GPU runs.  The result does not depend on either; the tests
 * check that.
 */
er_status er_vk_droplet_run_passes(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                                   const er_run_opts *o, uint32_t steps_per_pass,
                                   uint32_t chunk_batches, er_error *err);

/* What the last snapshot-schedule run (droplet.schedule "snapshot") of
 * this process dispatched: droplet dispatches, and the invocations with
 * work (droplets) of its largest one; for tests and the benchmark.  Not
 * thread-safe: one run at a time. */
typedef struct er_vk_snap_stats {
    uint64_t dispatches;
    uint64_t max_invocations;
    uint64_t batch;           /* droplets in the run's batches */
} er_vk_snap_stats;
void er_vk_droplet_snap_stats(er_vk_snap_stats *out);

#endif
