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

#endif
