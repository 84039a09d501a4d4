/*
 * The Mei et al. (2007) grid model on Vulkan.
 */
#include "vk.h"

er_status er_vk_mei_check(er_vk_ctx *vk, const er_params *p, const er_terrain *t,
                          er_error *err)
{
    (void)vk, (void)p, (void)t;
    return er_fail(err, ER_EUNSUPPORTED, "mei model on vulkan: not built yet");
}

er_status er_vk_mei_run(er_vk_ctx *vk, const er_params *p, er_terrain *t, er_layers *layers,
                        const er_run_ctl *ctl, er_budget *budget, er_error *err)
{
    (void)vk, (void)p, (void)t, (void)layers, (void)ctl, (void)budget;
    return er_fail(err, ER_EINVAL, "mei model on vulkan: not built yet");
}
