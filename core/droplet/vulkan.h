/*
 * The droplet model's Vulkan path (core/droplet/vulkan*.c, its shaders in
 * core/droplet/shaders/), built only with Vulkan: the model's ops (ops.c)
 * name it through ER_VK_OPS (core/models.h); the test hooks below are for
 * the unit tests and the benchmark.
 */
#ifndef ER_DROPLET_VULKAN_H
#define ER_DROPLET_VULKAN_H

#include <stdint.h>

#include "../backend.h"
#include "../drive.h"

/* Checks, before any work, whether er_vk_droplet_run can run this plan on
 * this map: the device's features and limits, the message naming what is
 * missing or too large.  Allocates nothing. */
er_status er_vk_droplet_check(er_vk_ctx *vk, const er_plan *plan, const er_terrain *t,
                              er_error *err);

/* The Vulkan run's steps for the run driver (core/drive.h; its backend:
 * the er_vk_ctx), which the model's ops name. */
extern const er_model_steps er_droplet_vk_steps;

/* Droplet erosion on the device (er_droplet_vk_steps through the driver):
 * the contract of core/model.h, windows
 * and run hooks included.  The state stays in device memory; it is read
 * back at the end and at the batch boundaries the hooks want
 * (er_hooks_want), and a resume state is uploaded.  Additional failures:
 * ER_ENOMEM when a buffer exceeds the device's limits, ER_EIO when the
 * device is lost. */
er_status er_vk_droplet_run(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                            const er_run_opts *o, er_error *err);

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

/*
 * er_vk_droplet_run_passes (chunks automatic) with a cut after every
 * dispatch on a CPU device, where batches are cut into submissions so that
 * a cancel or a signal's checkpoint is honoured within a fraction of a
 * second (the driver's er_drive_poll between them; a stop puts the state
 * back to the batch's start): the tests stop a run at every cut.
 */
er_status er_vk_droplet_run_cut_all(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                                    const er_run_opts *o, uint32_t steps_per_pass,
                                    er_error *err);

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
