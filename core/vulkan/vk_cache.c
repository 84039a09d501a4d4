/*
 * The persistent pipeline cache, which spares a run compiling its
 * pipelines again (part of a run's fixed cost): bytes the caller read
 * from its cache file come in through er_vk_options, checked here before
 * Vulkan sees them, and the updated bytes go back out through
 * er_vk_cache_save; core/ never touches the file (cli/backends.c does).
 *
 * The bytes are our header, then what vkGetPipelineCacheData gave.  Our
 * header adds what Vulkan's own does not key on (the driver version: a
 * driver update may keep the UUID yet change the compiler) and a checksum,
 * because a driver is not required to survive damaged cache data
 * (Vulkan-Samples pipeline_cache; vkd3d-proton cache.c checks the vendor,
 * device and UUID first, as we do).  Anything odd is a cold cache.
 */
#include "vk.h"

#include <stdlib.h>
#include <string.h>

typedef struct cache_header {
    char magic[8];
    uint32_t header_bytes;
    uint32_t vendor_id, device_id, driver_version;
    uint8_t uuid[VK_UUID_SIZE];
    uint64_t payload_bytes;
    uint64_t payload_hash; /* FNV-1a 64 of the payload */
} cache_header;

/* FNV-1a 64: a checksum against damage, not an adversary. */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void header_for(const er_vk_ctx *vk, const void *payload, size_t n, cache_header *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, ER_VK_CACHE_MAGIC, sizeof h->magic);
    h->header_bytes = (uint32_t)sizeof *h;
    h->vendor_id = vk->props.vendorID;
    h->device_id = vk->props.deviceID;
    h->driver_version = vk->props.driverVersion;
    memcpy(h->uuid, vk->props.pipelineCacheUUID, VK_UUID_SIZE);
    h->payload_bytes = n;
    h->payload_hash = fnv1a(payload, n);
}

/* The Vulkan payload of data when it was made by this device and driver
 * and is intact, else NULL (a cold cache). */
static const unsigned char *valid_payload(const er_vk_ctx *vk, const unsigned char *data,
                                          size_t size, size_t *n)
{
    cache_header h, want;
    if (!data || size < sizeof h)
        return NULL;
    memcpy(&h, data, sizeof h);
    const unsigned char *p = data + sizeof h;
    *n = size - sizeof h;
    header_for(vk, p, *n, &want);
    if (memcmp(&h, &want, sizeof h) != 0)
        return NULL;
    /* VkPipelineCacheHeaderVersionOne: the driver's own key, checked
     * again in case the driver's header disagrees with its properties */
    uint32_t vh[4];
    if (*n < sizeof vh + VK_UUID_SIZE)
        return NULL;
    memcpy(vh, p, sizeof vh);
    if (vh[0] < sizeof vh + VK_UUID_SIZE || vh[0] > *n ||
        vh[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || vh[2] != vk->props.vendorID ||
        vh[3] != vk->props.deviceID ||
        memcmp(p + sizeof vh, vk->props.pipelineCacheUUID, VK_UUID_SIZE) != 0)
        return NULL;
    return p;
}

er_status er_vk_cache_open(er_vk_ctx *vk, const void *data, size_t size, er_error *err)
{
    size_t n = 0;
    const unsigned char *p = valid_payload(vk, data, size, &n);
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = p ? n : 0,
        .pInitialData = p,
    };
    VkResult r = vkCreatePipelineCache(vk->dev, &ci, NULL, &vk->pcache);
    if (r != VK_SUCCESS && p) { /* refused after all: start cold */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        p = NULL;
        r = vkCreatePipelineCache(vk->dev, &ci, NULL, &vk->pcache);
    }
    if (r != VK_SUCCESS)
        return er_vk_fail(vk, r, "cannot create a pipeline cache", err);
    vk->cache_warm = p != NULL;
    /* remembered only to tell whether there is anything new to save */
    vk->cache_in_hash = p ? fnv1a(data, size) : 0;
    vk->cache_in_size = p ? size : 0;
    return ER_OK;
}

int er_vk_cache_warm(const er_vk_ctx *vk)
{
    return vk && vk->cache_warm;
}

er_status er_vk_cache_save(er_vk_ctx *vk, void **data, size_t *size, er_error *err)
{
    size_t n = 0;
    *data = NULL;
    *size = 0;
    if (!vk || !vk->pcache || !vk->pipelines_made)
        return ER_OK;
    VkResult r = vkGetPipelineCacheData(vk->dev, vk->pcache, &n, NULL);
    if (r != VK_SUCCESS)
        return er_vk_fail(vk, r, "cannot read the pipeline cache", err);
    if (n == 0)
        return ER_OK;
    unsigned char *out = malloc(sizeof(cache_header) + n);
    if (!out)
        return er_fail(err, ER_ENOMEM, "vulkan: out of memory");
    /* VK_INCOMPLETE only if the cache grew in between: keep what fit */
    r = vkGetPipelineCacheData(vk->dev, vk->pcache, &n, out + sizeof(cache_header));
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        free(out);
        return er_vk_fail(vk, r, "cannot read the pipeline cache", err);
    }
    cache_header h;
    header_for(vk, out + sizeof h, n, &h);
    memcpy(out, &h, sizeof h);
    const size_t total = sizeof h + n;
    if (total == vk->cache_in_size && fnv1a(out, total) == vk->cache_in_hash) {
        free(out); /* what was loaded: nothing new */
        return ER_OK;
    }
    *data = out;
    *size = total;
    return ER_OK;
}
