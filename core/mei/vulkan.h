/*
 * The Mei model's Vulkan path (core/mei/vulkan*.c, its shaders in
 * core/mei/shaders/), built only with Vulkan: the model's ops (ops.c)
 * name it through ER_VK_OPS (core/models.h), the unit tests call it
 * directly.
 */
#ifndef ER_MEI_VULKAN_H
#define ER_MEI_VULKAN_H

#include <stddef.h>

#include "../backend.h"
#include "../drive.h"

/* How closely a device's Mei run follows the CPU path (erode-models(7) "VULKAN
 * BACKEND", exactness rules).  Divisions are correctly rounded everywhere;
 * what remains is whether float32 denormals survive. */
typedef enum er_vk_exactness {
    ER_VK_EXACT_DECLARED = 0, /* DenormPreserve declared: the CPU's bytes */
    ER_VK_EXACT_MEASURED = 1, /* no denormal control, but known to keep them
                               * (lavapipe): the CPU's bytes, as the tests measure */
    ER_VK_DENORMS_MAY_FLUSH = 2 /* height and water exact, sediment within
                                 * ER_VK_MEI_FLUSH_SEDIMENT */
} er_vk_exactness;

/* [m] How far a Mei sediment cell may lie from the CPU's on a device whose
 * denormals may flush.  On an H100 (correctly rounded divisions, no
 * DenormPreserve) three 256^2 cases of 150-300 steps give height and water
 * bit for bit and sediment off by at most 1.88e-37 m (a flushed denormal);
 * the bound is about five times that. */
#define ER_VK_MEI_FLUSH_SEDIMENT 1e-36

/* The exactness class of device d: the one place that decides it, for the
 * Mei pipelines, --list-devices and the tests. */
er_vk_exactness er_vk_mei_exactness(const er_vk_device_info *d);

/* The model's vk_describe (core/models.h): "Mei: " and how closely it
 * follows the CPU on device d ("denormals preserved, bit-identical to the
 * CPU"), or that d cannot run it, into buf (n bytes, NUL-terminated). */
void er_vk_mei_describe(const er_vk_device_info *d, char *buf, size_t n);

/*
 * Checks, before any work, whether er_vk_mei_run can run this plan on
 * this map: device features (shaderFloat64 for the budget sums,
 * shaderInt64 for raindrops, the storage buffers a shader binds) and the
 * device's limits (ER_ENOMEM when the map exceeds the dispatch size or a
 * buffer exceeds maxStorageBufferRange or the largest allocation, or all
 * of them the device memory; the message names the limit).  A map whose
 * layer exceeds one buffer, or the cap er_vk_set_buffer_cap sets, runs in
 * row bands; a cap below 7 rows of the map is raised to 7 rows.  The CLI
 * treats a failure here as an input error (exit 2).  Allocates nothing.
 */
er_status er_vk_mei_check(er_vk_ctx *vk, const er_plan *plan, const er_terrain *t,
                          er_error *err);

/* The Vulkan run's steps for the run driver (core/drive.h; its backend:
 * the er_vk_ctx), which the model's ops name. */
extern const er_model_steps er_mei_vk_steps;

/*
 * The Mei model on the device (er_mei_vk_steps through the driver): the contract of core/model.h, same plan,
 * same outputs within the tolerance stated in erode-models(7) ("VULKAN BACKEND").
 * The state stays in device memory for the whole run; it is read back at
 * the end and at the boundaries o->hooks wants (er_hooks_want), and a
 * resume state is uploaded.  Windows run as on the CPU (raindrops over the
 * world, sources in world pixels, inner edges open).  o->ctl->progress is
 * called for every step, those inside a submission before it is made.
 * Additional failures: ER_ENOMEM when a buffer exceeds the device's
 * limits, ER_EIO "vulkan: device lost at step N".  On any failure but
 * ER_ENUMERIC/ER_ECANCELED the terrain is left as it was.
 */
er_status er_vk_mei_run(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                        const er_run_opts *o, er_error *err);

#endif
