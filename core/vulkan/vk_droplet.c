/*
 * Droplet erosion on Vulkan.  Not written yet: the check refuses the run
 * up front (exit 2), so `--backend vulkan` with the droplet model fails
 * before any work and `--backend auto` can fall back to the CPU.
 */
#include "vk.h"

er_status er_vk_droplet_check(er_vk_ctx *vk, const er_params *p, const er_terrain *t,
                              er_error *err)
{
    (void)vk, (void)p, (void)t;
    return er_fail(err, ER_EUNSUPPORTED, "droplet model on vulkan: not built yet");
}

er_status er_vk_droplet_run(er_vk_ctx *vk, const er_params *p, er_terrain *t,
                            er_layers *layers, const er_run_ctl *ctl, er_budget *budget,
                            er_error *err)
{
    (void)vk, (void)p, (void)t, (void)layers, (void)ctl, (void)budget;
    return er_fail(err, ER_EINVAL, "droplet model on vulkan: not built yet");
}
