/*
 * core/backend.h for a build without Vulkan (make VULKAN=0, or no loader or
 * glslangValidator found): every entry point says so.  No model has a
 * Vulkan path in such a build (ER_VK_OPS, core/models.h).
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

void er_vk_set_buffer_cap(er_vk_ctx *vk, uint64_t bytes)
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
