/*
 * Which backend runs an input: the Vulkan one opened once for all inputs
 * and closed after them, the CPU path for what it cannot run (--backend
 * auto), and --list-devices.  Exit statuses are 0, or 2 with one error
 * line printed.  Internal to cli/.
 */
#ifndef ER_CLI_BACKENDS_H
#define ER_CLI_BACKENDS_H

#include <stddef.h>
#include "../core/backend.h"
#include "job.h"
#include "options.h"

/* --list-devices: prints one line per Vulkan device to stdout; returns
 * the exit status (2, with one error line, when there is none or the
 * binary was built without Vulkan). */
int er_backend_list_devices(void);

int er_backend_open(const er_settings *s, er_vk_ctx **vk);
int er_backend_close(er_vk_ctx *vk, int status);

/* The Vulkan pipeline cache file a run with these settings may write
 * (--backend vulkan|auto, ERODE_VK_PIPELINE_CACHE, XDG_CACHE_HOME): 1 and
 * path, or 0 when it writes none.  A write target like any output. */
int er_backend_cache_path(const er_settings *s, char *path, size_t n);

er_status er_job_choose_backend(er_job *j, er_vk_ctx *vk);

/* Records the chosen backend in the checkpoint identity and refuses a
 * --resume state written by another backend, device or driver. */
er_status er_job_check_resume_backend(er_job *j);

#endif
