/*
 * core/backend.h for a build without Vulkan (make VULKAN=0, or no loader or
 * glslangValidator found): every entry point says so.
 */
#include "../backend.h"

int er_vk_built(void)
{
    return 0;
}

const char *er_vk_type_name(er_vk_device_type t)
{
    (void)t;
    return "other";
}

er_vk_exactness er_vk_mei_exactness(const er_vk_device_info *d)
{
    (void)d;
    return ER_VK_DENORMS_MAY_FLUSH;
}

const char *er_vk_exactness_text(er_vk_exactness e)
{
    (void)e;
    return ER_VK_NOT_BUILT;
}

er_status er_vk_list_devices(er_vk_device_info *out, int max, int *count, er_error *err)
{
    (void)out;
    (void)max;
    if (count)
        *count = 0;
    return er_fail(err, ER_EUNSUPPORTED, ER_VK_NOT_BUILT);
}

er_status er_vk_open(const er_vk_options *o, er_vk_ctx **out, er_error *err)
{
    (void)o;
    if (out)
        *out = NULL;
    return er_fail(err, ER_EUNSUPPORTED, ER_VK_NOT_BUILT);
}

er_status er_vk_open_cached(const er_vk_options *o, const void *cache, size_t size,
                            er_vk_ctx **out, er_error *err)
{
    (void)cache;
    (void)size;
    return er_vk_open(o, out, err);
}

void er_vk_close(er_vk_ctx *vk)
{
    (void)vk;
}

void er_vk_set_band_bytes(er_vk_ctx *vk, uint64_t bytes)
{
    (void)vk;
    (void)bytes;
}

int er_vk_cache_warm(const er_vk_ctx *vk)
{
    (void)vk;
    return 0;
}

er_status er_vk_cache_save(er_vk_ctx *vk, void **data, size_t *size, er_error *err)
{
    (void)vk;
    (void)err;
    *data = NULL;
    *size = 0;
    return ER_OK;
}

const er_vk_device_info *er_vk_info(const er_vk_ctx *vk)
{
    (void)vk;
    return NULL;
}

uint64_t er_vk_messages(const er_vk_ctx *vk, char *first, size_t n)
{
    (void)vk;
    if (first && n)
        first[0] = '\0';
    return 0;
}

er_status er_vk_mei_run(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                        const er_run_opts *o, er_error *err)
{
    (void)vk, (void)plan, (void)t, (void)o;
    return er_fail(err, ER_EUNSUPPORTED, ER_VK_NOT_BUILT);
}

er_status er_vk_droplet_run(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                            const er_run_opts *o, er_error *err)
{
    (void)vk, (void)plan, (void)t, (void)o;
    return er_fail(err, ER_EUNSUPPORTED, ER_VK_NOT_BUILT);
}

er_status er_vk_mei_check(er_vk_ctx *vk, const er_plan *plan, const er_terrain *t,
                          er_error *err)
{
    (void)vk, (void)plan, (void)t;
    return er_fail(err, ER_EUNSUPPORTED, ER_VK_NOT_BUILT);
}

er_status er_vk_droplet_check(er_vk_ctx *vk, const er_plan *plan, const er_terrain *t,
                              er_error *err)
{
    (void)vk, (void)plan, (void)t;
    return er_fail(err, ER_EUNSUPPORTED, ER_VK_NOT_BUILT);
}
