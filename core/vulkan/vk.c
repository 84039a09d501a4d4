/*
 * The Vulkan context: instance (with the Khronos validation layer and a
 * counting debug messenger when asked), device list, one compute queue,
 * buffers, pipelines from embedded SPIR-V, command recording and
 * submission.  See vk.h for how a model uses these.
 */
/* dl_iterate_phdr and RTLD_NOLOAD/RTLD_NODELETE are GNU extensions. */
#define _GNU_SOURCE 1
#include "vk.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

int er_vk_built(void)
{
    return 1;
}

const char *er_vk_type_name(er_vk_device_type t)
{
    switch (t) {
    case ER_VK_TYPE_INTEGRATED: return "integrated";
    case ER_VK_TYPE_DISCRETE: return "discrete";
    case ER_VK_TYPE_VIRTUAL: return "virtual";
    case ER_VK_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

void er_vk_set_buffer_cap(er_vk_ctx *vk, uint64_t bytes)
{
    vk->buffer_cap = bytes;
}

/* The debug messenger: counts warnings and errors, keeps the first text.
 * The count is the context's (no static state). */
static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *d,
                                                 void *user)
{
    (void)type;
    er_vk_ctx *vk = user;
    if (!(sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                 VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)))
        return VK_FALSE;
    if (vk->n_messages++ == 0 && d && d->pMessage)
        snprintf(vk->first_message, sizeof vk->first_message, "%s", d->pMessage);
    return VK_FALSE;
}

static int layer_present(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0)
        return 0;
    VkLayerProperties *p = calloc(n, sizeof *p);
    int found = 0;
    if (p && vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            found |= strcmp(p[i].layerName, name) == 0;
    free(p);
    return found;
}

enum { PIN_MAX = 512 };
typedef struct pin_list {
    const char *name[PIN_MAX];
    int n;
} pin_list;

static int collect_library(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    pin_list *l = arg;
    if (info->dlpi_name && info->dlpi_name[0] == '/' && l->n < PIN_MAX)
        l->name[l->n++] = info->dlpi_name;
    return 0;
}

/* Keeps every library mapped now (the loader, the driver and its LLVM) for
 * the life of the process.  The loader unloads a driver with its last
 * instance, orphaning what the driver's globals held (Mesa 22.3.6-1+deb12u2's
 * lavapipe: 128 bytes), which LeakSanitizer then reports from "<unknown
 * module>", a frame no suppression can name.  Pinned, that block stays
 * reachable, and a real driver leak is attributed to the driver's library,
 * where tests/lsan.supp suppresses it while erode's own leaks are still
 * reported.  It also spares a process that opens several instances (the
 * unit tests) loading the driver again each time. */
static void pin_driver_libraries(void)
{
    pin_list l = {.n = 0};
    dl_iterate_phdr(collect_library, &l); /* dlopen outside its lock */
    for (int i = 0; i < l.n; i++) {
        /* NOLOAD: only what is mapped already; NODELETE: never unmapped
         * from now on, whoever calls dlclose.  The handle is kept. */
        void *h = dlopen(l.name[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        (void)h;
    }
}

/* An instance for Vulkan 1.1; with vk != NULL and vk->validation, the
 * validation layer and the counting messenger. */
static er_status make_instance(er_vk_ctx *vk, int validation, VkInstance *out, er_error *err)
{
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "erode",
        .applicationVersion = 1,
        .pEngineName = "erode",
        .apiVersion = VK_API_VERSION_1_1,
    };
    const char *layers[] = { VALIDATION_LAYER };
    const char *exts[] = { VK_EXT_DEBUG_UTILS_EXTENSION_NAME };
    VkDebugUtilsMessengerCreateInfoEXT dbg = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message,
        .pUserData = vk,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    if (validation) {
        if (!layer_present(VALIDATION_LAYER))
            return er_fail(err, ER_EUNSUPPORTED, "vulkan: validation requested but "
                           VALIDATION_LAYER " is not installed (vulkan-validationlayers)");
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = layers;
        ci.enabledExtensionCount = 1;
        ci.ppEnabledExtensionNames = exts;
        ci.pNext = &dbg; /* also catches messages from vkCreate/DestroyInstance */
    }
    VkResult r = vkCreateInstance(&ci, NULL, out);
    if (r == VK_SUCCESS)
        pin_driver_libraries();
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED)
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: no Vulkan driver found (%s)",
                       er_vk_result_name(r));
    if (r != VK_SUCCESS)
        return er_vk_fail(NULL, r, "cannot create an instance", err);
    return ER_OK;
}

/* 1 when device pd offers the device extension `name`. */
static int has_extension(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0)
        return 0;
    VkExtensionProperties *e = calloc(n, sizeof *e);
    int found = 0;
    if (e && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            found |= strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

static void describe(VkPhysicalDevice pd, int index, er_vk_device_info *info)
{
    /* float controls: an extension to our Vulkan 1.1 instance (core in 1.2),
     * so its properties may be asked only where it is offered */
    VkPhysicalDeviceFloatControlsPropertiesKHR fc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES_KHR,
    };
    int float_controls = has_extension(pd, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
        .pNext = float_controls ? &fc : NULL,
    };
    VkPhysicalDeviceProperties2 p2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &m3,
    };
    VkPhysicalDeviceMemoryProperties mem;
    VkPhysicalDeviceFeatures feat;
    memset(info, 0, sizeof *info);
    vkGetPhysicalDeviceProperties2(pd, &p2);
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    vkGetPhysicalDeviceFeatures(pd, &feat);
    info->index = index;
    snprintf(info->name, sizeof info->name, "%s", p2.properties.deviceName);
    info->driver_version = p2.properties.driverVersion;
    switch (p2.properties.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: info->type = ER_VK_TYPE_INTEGRATED; break;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: info->type = ER_VK_TYPE_DISCRETE; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info->type = ER_VK_TYPE_VIRTUAL; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info->type = ER_VK_TYPE_CPU; break;
    default: info->type = ER_VK_TYPE_OTHER; break;
    }
    info->api_version = p2.properties.apiVersion;
    for (uint32_t i = 0; i < mem.memoryHeapCount; i++)
        if ((mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            mem.memoryHeaps[i].size > info->device_local_bytes)
            info->device_local_bytes = mem.memoryHeaps[i].size;
    info->max_storage_buffer_range = p2.properties.limits.maxStorageBufferRange;
    info->max_allocation = m3.maxMemoryAllocationSize;
    info->has_int64 = feat.shaderInt64 == VK_TRUE;
    info->has_float64 = feat.shaderFloat64 == VK_TRUE;
    if (has_extension(pd, VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderAtomicInt64FeaturesKHR ai = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES_KHR,
        };
        VkPhysicalDeviceFeatures2 f2 = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &ai,
        };
        vkGetPhysicalDeviceFeatures2(pd, &f2);
        info->has_atomic_int64 = ai.shaderBufferInt64Atomics == VK_TRUE;
    }
    /* where the widths must share one denormal mode (INDEPENDENCE_NONE),
     * a float32-only declaration is not allowed: no preserve build there */
    info->denorm_preserve = float_controls && fc.shaderDenormPreserveFloat32 == VK_TRUE &&
                            fc.denormBehaviorIndependence !=
                                VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE_KHR;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties *q = calloc(nq ? nq : 1, sizeof *q);
    if (q) {
        vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q);
        for (uint32_t i = 0; i < nq; i++)
            info->has_compute |= (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
    }
    free(q);
}

/* The physical devices of an instance; the caller frees *list. */
static er_status physical_devices(VkInstance inst, VkPhysicalDevice **list, uint32_t *n,
                                  er_error *err)
{
    *list = NULL;
    *n = 0;
    VkResult r = vkEnumeratePhysicalDevices(inst, n, NULL);
    if (r != VK_SUCCESS)
        return er_vk_fail(NULL, r, "cannot list devices", err);
    if (*n == 0)
        return ER_OK;
    *list = calloc(*n, sizeof **list);
    if (!*list)
        return er_fail(err, ER_ENOMEM, "vulkan: out of memory");
    r = vkEnumeratePhysicalDevices(inst, n, *list);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        free(*list);
        *list = NULL;
        return er_vk_fail(NULL, r, "cannot list devices", err);
    }
    return ER_OK;
}

er_status er_vk_list_devices(er_vk_device_info *out, int max, int *count, er_error *err)
{
    VkInstance inst;
    VkPhysicalDevice *pd;
    uint32_t n;
    *count = 0;
    er_status st = make_instance(NULL, 0, &inst, err);
    if (st)
        return st;
    if ((st = physical_devices(inst, &pd, &n, err)) == ER_OK) {
        for (uint32_t i = 0; i < n && (int)i < max; i++)
            describe(pd[i], (int)i, &out[i]);
        *count = (int)n;
    }
    free(pd);
    vkDestroyInstance(inst, NULL);
    return st;
}

/* The timestamp pair of er_vk_cmd_timestamp, where the queue family has
 * timestamps (timestampValidBits > 0) and the period is known. */
static er_status make_timestamps(er_vk_ctx *vk, er_error *err)
{
    if (vk->ts_bits == 0 || !(vk->props.limits.timestampPeriod > 0.0f))
        return ER_OK;
    VkQueryPoolCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 2,
    };
    VkResult r = vkCreateQueryPool(vk->dev, &qi, NULL, &vk->ts_pool);
    return r == VK_SUCCESS ? ER_OK : er_vk_fail(vk, r, "cannot create a timestamp pool", err);
}

er_status er_vk_open(const er_vk_options *o, er_vk_ctx **out, er_error *err)
{
    return er_vk_open_cached(o, NULL, 0, out, err);
}

er_status er_vk_open_cached(const er_vk_options *o, const void *cache, size_t size,
                            er_vk_ctx **out, er_error *err)
{
    VkPhysicalDevice *pd = NULL;
    uint32_t n = 0;
    VkResult r;
    er_status st;
    *out = NULL;
    er_vk_ctx *vk = calloc(1, sizeof *vk);
    if (!vk)
        return er_fail(err, ER_ENOMEM, "vulkan: out of memory");
    vk->validation = o->validation;
    if ((st = make_instance(vk, o->validation, &vk->instance, err)))
        goto fail;
    if (o->validation) {
        PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(vk->instance, "vkCreateDebugUtilsMessengerEXT");
        VkDebugUtilsMessengerCreateInfoEXT dbg = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
            .pfnUserCallback = on_message,
            .pUserData = vk,
        };
        if (!create) {
            st = er_fail(err, ER_EUNSUPPORTED, "vulkan: " VK_EXT_DEBUG_UTILS_EXTENSION_NAME
                         " is not available");
            goto fail;
        }
        if ((r = create(vk->instance, &dbg, NULL, &vk->messenger)) != VK_SUCCESS) {
            st = er_vk_fail(vk, r, "cannot create the debug messenger", err);
            goto fail;
        }
    }
    if ((st = physical_devices(vk->instance, &pd, &n, err)))
        goto fail;
    if (n == 0) {
        st = er_fail(err, ER_EUNSUPPORTED, "vulkan: no Vulkan device found");
        goto fail;
    }
    if (o->device < 0 || (uint32_t)o->device >= n) {
        st = er_fail(err, ER_EINVAL, "vulkan: no device %d (%u found, see --list-devices)",
                     o->device, n);
        goto fail;
    }
    vk->phys = pd[o->device];
    describe(vk->phys, o->device, &vk->info);
    vkGetPhysicalDeviceProperties(vk->phys, &vk->props);
    vkGetPhysicalDeviceMemoryProperties(vk->phys, &vk->mem);

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, NULL);
    VkQueueFamilyProperties *qf = calloc(nq ? nq : 1, sizeof *qf);
    if (!qf) {
        st = er_fail(err, ER_ENOMEM, "vulkan: out of memory");
        goto fail;
    }
    vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, qf);
    /* a compute-only family if there is one (often the async compute
     * engine), else any family with compute */
    uint32_t fam = UINT32_MAX;
    for (uint32_t i = 0; i < nq && fam == UINT32_MAX; i++)
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
            fam = i;
    for (uint32_t i = 0; i < nq && fam == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            fam = i;
    vk->ts_bits = fam != UINT32_MAX ? qf[fam].timestampValidBits : 0;
    free(qf);
    if (fam == UINT32_MAX) {
        st = er_fail(err, ER_EUNSUPPORTED, "vulkan: device %d (%s) has no compute queue",
                     o->device, vk->info.name);
        goto fail;
    }
    vk->queue_family = fam;

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = fam,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    VkPhysicalDeviceFeatures feat;
    memset(&feat, 0, sizeof feat);
    feat.shaderInt64 = vk->info.has_int64 ? VK_TRUE : VK_FALSE;
    feat.shaderFloat64 = vk->info.has_float64 ? VK_TRUE : VK_FALSE;
    /* 64-bit buffer atomics: order-independent fixed-point sums */
    VkPhysicalDeviceShaderAtomicInt64FeaturesKHR ai64 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES_KHR,
        .shaderBufferInt64Atomics = VK_TRUE,
    };
    /* the extensions: those atomics, and the float controls the shaders'
     * DenormPreserve builds need */
    const char *ext[2];
    uint32_t n_ext = 0;
    if (vk->info.has_atomic_int64)
        ext[n_ext++] = VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME;
    if (vk->info.denorm_preserve)
        ext[n_ext++] = VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME;
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = vk->info.has_atomic_int64 ? (void *)&ai64 : NULL,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .enabledExtensionCount = n_ext,
        .ppEnabledExtensionNames = n_ext ? ext : NULL,
        .pEnabledFeatures = &feat,
    };
    if ((r = vkCreateDevice(vk->phys, &dci, NULL, &vk->dev)) != VK_SUCCESS) {
        st = er_vk_fail(vk, r, "cannot open the device", err);
        goto fail;
    }
    if ((st = make_timestamps(vk, err)) ||
        (st = er_vk_cache_open(vk, cache, size, err)))
        goto fail;
    vkGetDeviceQueue(vk->dev, fam, 0, &vk->queue);
    VkCommandPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = fam,
    };
    if ((r = vkCreateCommandPool(vk->dev, &pci, NULL, &vk->pool)) != VK_SUCCESS) {
        st = er_vk_fail(vk, r, "cannot create a command pool", err);
        goto fail;
    }
    VkCommandBufferAllocateInfo cai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = vk->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    if ((r = vkAllocateCommandBuffers(vk->dev, &cai, &vk->cmd)) != VK_SUCCESS) {
        st = er_vk_fail(vk, r, "cannot allocate a command buffer", err);
        goto fail;
    }
    VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    if ((r = vkCreateFence(vk->dev, &fci, NULL, &vk->fence)) != VK_SUCCESS) {
        st = er_vk_fail(vk, r, "cannot create a fence", err);
        goto fail;
    }
    free(pd);
    *out = vk;
    return ER_OK;
fail:
    free(pd);
    er_vk_close(vk);
    return st;
}

void er_vk_close(er_vk_ctx *vk)
{
    if (!vk)
        return;
    if (vk->dev) {
        vkDeviceWaitIdle(vk->dev);
        if (vk->fence)
            vkDestroyFence(vk->dev, vk->fence, NULL);
        if (vk->ts_pool)
            vkDestroyQueryPool(vk->dev, vk->ts_pool, NULL);
        if (vk->pcache)
            vkDestroyPipelineCache(vk->dev, vk->pcache, NULL);
        if (vk->pool)
            vkDestroyCommandPool(vk->dev, vk->pool, NULL);
        vkDestroyDevice(vk->dev, NULL);
    }
    if (vk->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
            vkGetInstanceProcAddr(vk->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy)
            destroy(vk->instance, vk->messenger, NULL);
    }
    if (vk->instance)
        vkDestroyInstance(vk->instance, NULL);
    free(vk);
}

const er_vk_device_info *er_vk_info(const er_vk_ctx *vk)
{
    return vk ? &vk->info : NULL;
}

uint64_t er_vk_messages(const er_vk_ctx *vk, char *first, size_t n)
{
    if (first && n)
        snprintf(first, n, "%s", vk ? vk->first_message : "");
    return vk ? vk->n_messages : 0;
}

static double mib(VkDeviceSize b)
{
    return (double)b / (1024.0 * 1024.0);
}

er_status er_vk_check_sizes(const er_vk_ctx *vk, const VkDeviceSize *sizes, size_t n,
                            const char *what, er_error *err)
{
    const er_vk_device_info *d = &vk->info;
    VkDeviceSize total = 0, largest = 0;
    for (size_t i = 0; i < n; i++) {
        largest = sizes[i] > largest ? sizes[i] : largest;
        total += sizes[i];
    }
    if (largest > d->max_storage_buffer_range)
        return er_fail(err, ER_ENOMEM, "vulkan: %s needs a %.1f MiB buffer, more than the "
                       "device's maxStorageBufferRange (%.1f MiB on %s); use --backend cpu",
                       what, mib(largest), mib(d->max_storage_buffer_range), d->name);
    if (d->max_allocation && largest > d->max_allocation)
        return er_fail(err, ER_ENOMEM, "vulkan: %s needs a %.1f MiB buffer, more than the "
                       "device's largest allocation (%.1f MiB on %s); use --backend cpu",
                       what, mib(largest), mib(d->max_allocation), d->name);
    if (d->device_local_bytes && total > d->device_local_bytes)
        return er_fail(err, ER_ENOMEM, "vulkan: %s needs %.0f MiB of device memory, the "
                       "device has %.0f MiB (%s); use --backend cpu", what, mib(total),
                       mib(d->device_local_bytes), d->name);
    return ER_OK;
}

static int memory_type(const er_vk_ctx *vk, uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < vk->mem.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (vk->mem.memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    return -1;
}

/* A host-visible type: coherent and cached first, then (staging only)
 * cached without coherence, then coherent; the host's reads of uncached
 * memory (write-combined on discrete GPUs) are many times slower. */
static int host_type(const er_vk_ctx *vk, uint32_t bits, int staging)
{
    const VkMemoryPropertyFlags vis = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                coh = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    int type = memory_type(vk, bits, vis | coh | cached);
    if (type < 0 && staging)
        type = memory_type(vk, bits, vis | cached);
    return type < 0 ? memory_type(vk, bits, vis | coh) : type;
}

er_status er_vk_buffer_new(er_vk_ctx *vk, VkDeviceSize bytes, er_vk_mem kind,
                           er_vk_buffer *b, const char *what, er_error *err)
{
    char ctx[160];
    VkResult r;
    memset(b, 0, sizeof *b);
    b->size = bytes;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = bytes,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    snprintf(ctx, sizeof ctx, "cannot create the %s buffer (%.1f MiB)", what, mib(bytes));
    if ((r = vkCreateBuffer(vk->dev, &bci, NULL, &b->buf)) != VK_SUCCESS)
        return er_vk_fail(vk, r, ctx, err);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->dev, b->buf, &req);
    int type;
    if (kind != ER_VK_DEVICE)
        type = host_type(vk, req.memoryTypeBits, kind == ER_VK_STAGING);
    else {
        type = memory_type(vk, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        if (type < 0)
            type = memory_type(vk, req.memoryTypeBits, 0);
    }
    if (type < 0) {
        er_vk_buffer_free(vk, b);
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: no memory type for the %s buffer", what);
    }
    VkMemoryAllocateInfo mai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    snprintf(ctx, sizeof ctx, "cannot allocate the %s buffer (%.1f MiB)", what, mib(bytes));
    if ((r = vkAllocateMemory(vk->dev, &mai, NULL, &b->mem)) != VK_SUCCESS) {
        er_vk_buffer_free(vk, b);
        return er_vk_fail(vk, r, ctx, err);
    }
    if ((r = vkBindBufferMemory(vk->dev, b->buf, b->mem, 0)) != VK_SUCCESS) {
        er_vk_buffer_free(vk, b);
        return er_vk_fail(vk, r, ctx, err);
    }
    b->coherent = (vk->mem.memoryTypes[type].propertyFlags &
                   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
    if (kind != ER_VK_DEVICE &&
        (r = vkMapMemory(vk->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map))) {
        er_vk_buffer_free(vk, b);
        return er_vk_fail(vk, r, ctx, err);
    }
    return ER_OK;
}

void er_vk_buffer_free(er_vk_ctx *vk, er_vk_buffer *b)
{
    if (!vk || !vk->dev || !b)
        return;
    if (b->map)
        vkUnmapMemory(vk->dev, b->mem);
    if (b->buf)
        vkDestroyBuffer(vk->dev, b->buf, NULL);
    if (b->mem)
        vkFreeMemory(vk->dev, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

er_status er_vk_pipeline_new(er_vk_ctx *vk, const uint32_t *spv, size_t spv_bytes,
                             uint32_t n_buffers, uint32_t push_bytes, uint32_t n_sets,
                             er_vk_pipeline *pl, er_error *err)
{
    VkResult r;
    er_status st = ER_OK;
    memset(pl, 0, sizeof *pl);
    pl->n_sets = n_sets;
    pl->n_buffers = n_buffers;
    pl->push_bytes = push_bytes;
    VkDescriptorSetLayoutBinding *bind = calloc(n_buffers ? n_buffers : 1, sizeof *bind);
    pl->sets = calloc(n_sets ? n_sets : 1, sizeof *pl->sets);
    VkDescriptorSetLayout *layouts = calloc(n_sets ? n_sets : 1, sizeof *layouts);
    if (!bind || !pl->sets || !layouts) {
        st = er_fail(err, ER_ENOMEM, "vulkan: out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n_buffers; i++) {
        bind[i].binding = i;
        bind[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        bind[i].descriptorCount = 1;
        bind[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = n_buffers,
        .pBindings = bind,
    };
    if ((r = vkCreateDescriptorSetLayout(vk->dev, &dl, NULL, &pl->dsl)) != VK_SUCCESS) {
        st = er_vk_fail(vk, r, "cannot create a descriptor set layout", err);
        goto done;
    }
    VkPushConstantRange pc = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = push_bytes,
    };
    VkPipelineLayoutCreateInfo lci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &pl->dsl,
        .pushConstantRangeCount = push_bytes ? 1 : 0,
        .pPushConstantRanges = push_bytes ? &pc : NULL,
    };
    if ((r = vkCreatePipelineLayout(vk->dev, &lci, NULL, &pl->layout)) != VK_SUCCESS) {
        st = er_vk_fail(vk, r, "cannot create a pipeline layout", err);
        goto done;
    }
    pl->compiled = calloc(1, sizeof *pl->compiled);
    if (!pl->compiled) {
        st = er_fail(err, ER_ENOMEM, "vulkan: out of memory");
        goto done;
    }
    pl->compiled->spv = spv;
    pl->compiled->spv_bytes = spv_bytes;
    if (n_sets > 0 && n_buffers > 0) {
        VkDescriptorPoolSize ps = {
            .type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = n_buffers * n_sets,
        };
        VkDescriptorPoolCreateInfo dpi = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
            .maxSets = n_sets,
            .poolSizeCount = 1,
            .pPoolSizes = &ps,
        };
        if ((r = vkCreateDescriptorPool(vk->dev, &dpi, NULL, &pl->pool)) != VK_SUCCESS) {
            st = er_vk_fail(vk, r, "cannot create a descriptor pool", err);
            goto done;
        }
        for (uint32_t i = 0; i < n_sets; i++)
            layouts[i] = pl->dsl;
        VkDescriptorSetAllocateInfo dai = {
            .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
            .descriptorPool = pl->pool,
            .descriptorSetCount = n_sets,
            .pSetLayouts = layouts,
        };
        if ((r = vkAllocateDescriptorSets(vk->dev, &dai, pl->sets)) != VK_SUCCESS) {
            st = er_vk_fail(vk, r, "cannot allocate descriptor sets", err);
            goto done;
        }
    }
done:
    free(bind);
    free(layouts);
    if (st)
        er_vk_pipeline_free(vk, pl);
    return st;
}

void er_vk_pipeline_free(er_vk_ctx *vk, er_vk_pipeline *pl)
{
    if (!vk || !vk->dev || !pl)
        return;
    if (pl->compiled && pl->compiled->pipe)
        vkDestroyPipeline(vk->dev, pl->compiled->pipe, NULL);
    free(pl->compiled);
    if (pl->pool)
        vkDestroyDescriptorPool(vk->dev, pl->pool, NULL);
    if (pl->layout)
        vkDestroyPipelineLayout(vk->dev, pl->layout, NULL);
    if (pl->dsl)
        vkDestroyDescriptorSetLayout(vk->dev, pl->dsl, NULL);
    free(pl->sets);
    memset(pl, 0, sizeof *pl);
}

void er_vk_pipeline_bind(er_vk_ctx *vk, er_vk_pipeline *pl, uint32_t set,
                         const er_vk_buffer *const *bufs)
{
    VkDescriptorBufferInfo info[32];
    VkWriteDescriptorSet wr[32];
    uint32_t n = pl->n_buffers < 32 ? pl->n_buffers : 32;
    for (uint32_t i = 0; i < n; i++) {
        info[i] = (VkDescriptorBufferInfo){ bufs[i]->buf, 0, VK_WHOLE_SIZE };
        wr[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = pl->sets[set],
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &info[i],
        };
    }
    vkUpdateDescriptorSets(vk->dev, n, wr, 0, NULL);
}

er_status er_vk_cmd_begin(er_vk_ctx *vk, er_error *err)
{
    VkResult r = vkResetCommandBuffer(vk->cmd, 0);
    if (r != VK_SUCCESS)
        return er_vk_fail(vk, r, "cannot reset the command buffer", err);
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    if ((r = vkBeginCommandBuffer(vk->cmd, &bi)) != VK_SUCCESS)
        return er_vk_fail(vk, r, "cannot begin the command buffer", err);
    return ER_OK;
}

double er_vk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Compiles pl at its first dispatch (creating a pipeline while a command
 * buffer records is allowed); the time counts as the run's pipeline_s. */
static VkResult compile(er_vk_ctx *vk, const er_vk_pipeline *pl)
{
    er_vk_compiled *c = pl->compiled;
    VkShaderModule mod = VK_NULL_HANDLE;
    const double t0 = er_vk_now();
    VkShaderModuleCreateInfo sci = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = c->spv_bytes,
        .pCode = c->spv,
    };
    VkResult r = vkCreateShaderModule(vk->dev, &sci, NULL, &mod);
    if (r != VK_SUCCESS)
        return r;
    VkComputePipelineCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = mod,
            .pName = "main",
        },
        .layout = pl->layout,
    };
    r = vkCreateComputePipelines(vk->dev, vk->pcache, 1, &pci, NULL, &c->pipe);
    vkDestroyShaderModule(vk->dev, mod, NULL);
    if (r == VK_SUCCESS)
        vk->pipelines_made++;
    else
        c->pipe = VK_NULL_HANDLE;
    vk->stats.pipeline_s += er_vk_now() - t0;
    return r;
}

void er_vk_cmd_dispatch(er_vk_ctx *vk, const er_vk_pipeline *pl, uint32_t set,
                        const void *push, uint32_t groups_x, uint32_t groups_y)
{
    VkResult r;
    if (!pl->compiled->pipe && (r = compile(vk, pl)) != VK_SUCCESS) {
        if (vk->compile_failed == VK_SUCCESS)
            vk->compile_failed = r;
        return;
    }
    vkCmdBindPipeline(vk->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->compiled->pipe);
    if (pl->n_buffers)
        vkCmdBindDescriptorSets(vk->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->layout, 0, 1,
                                &pl->sets[set], 0, NULL);
    if (pl->push_bytes && push)
        vkCmdPushConstants(vk->cmd, pl->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           pl->push_bytes, push);
    vkCmdDispatch(vk->cmd, groups_x, groups_y, 1);
}

void er_vk_cmd_barrier(er_vk_ctx *vk)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                                  VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(vk->cmd, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

void er_vk_cmd_copy(er_vk_ctx *vk, const er_vk_buffer *src, const er_vk_buffer *dst,
                    VkDeviceSize bytes)
{
    VkBufferCopy c = { 0, 0, bytes };
    vkCmdCopyBuffer(vk->cmd, src->buf, dst->buf, 1, &c);
}

void er_vk_cmd_fill(er_vk_ctx *vk, const er_vk_buffer *b, uint32_t value)
{
    vkCmdFillBuffer(vk->cmd, b->buf, 0, VK_WHOLE_SIZE, value);
}

void er_vk_cmd_copy_at(er_vk_ctx *vk, const er_vk_buffer *src, VkDeviceSize soff,
                       const er_vk_buffer *dst, VkDeviceSize doff, VkDeviceSize bytes)
{
    VkBufferCopy c = { soff, doff, bytes };
    vkCmdCopyBuffer(vk->cmd, src->buf, dst->buf, 1, &c);
}

static er_status mapped_range(er_vk_ctx *vk, const er_vk_buffer *b, int flush, er_error *err)
{
    if (b->coherent || !b->map)
        return ER_OK;
    VkMappedMemoryRange mr = {
        .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
        .memory = b->mem,
        .size = VK_WHOLE_SIZE,
    };
    VkResult r = flush ? vkFlushMappedMemoryRanges(vk->dev, 1, &mr)
                       : vkInvalidateMappedMemoryRanges(vk->dev, 1, &mr);
    return r == VK_SUCCESS ? ER_OK
                           : er_vk_fail(vk, r, flush ? "cannot flush a staging buffer"
                                                     : "cannot invalidate a staging buffer", err);
}

er_status er_vk_buffer_flush(er_vk_ctx *vk, const er_vk_buffer *b, er_error *err)
{
    return mapped_range(vk, b, 1, err);
}

er_status er_vk_buffer_invalidate(er_vk_ctx *vk, const er_vk_buffer *b, er_error *err)
{
    return mapped_range(vk, b, 0, err);
}

void er_vk_cmd_timestamp(er_vk_ctx *vk, uint32_t which)
{
    if (!vk->ts_pool)
        return;
    if (which == 0)
        vkCmdResetQueryPool(vk->cmd, vk->ts_pool, 0, 2);
    vkCmdWriteTimestamp(vk->cmd, which ? VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT
                                       : VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                        vk->ts_pool, which);
}

double er_vk_timestamp_seconds(er_vk_ctx *vk)
{
    uint64_t t[2];
    if (!vk->ts_pool ||
        vkGetQueryPoolResults(vk->dev, vk->ts_pool, 0, 2, sizeof t, t, sizeof t[0],
                              VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
        return -1.0;
    uint64_t mask = vk->ts_bits >= 64 ? UINT64_MAX : ((uint64_t)1 << vk->ts_bits) - 1;
    uint64_t d = ((t[1] & mask) - (t[0] & mask)) & mask; /* wraps at ts_bits */
    return (double)d * (double)vk->props.limits.timestampPeriod * 1e-9;
}

er_status er_vk_cmd_submit(er_vk_ctx *vk, er_error *err)
{
    VkResult r = vk->compile_failed;
    if (r != VK_SUCCESS) { /* the buffer is reset by the next er_vk_cmd_begin */
        vk->compile_failed = VK_SUCCESS;
        return er_vk_fail(vk, r, "cannot create a compute pipeline", err);
    }
    r = vkEndCommandBuffer(vk->cmd);
    if (r != VK_SUCCESS)
        return er_vk_fail(vk, r, "cannot end the command buffer", err);
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &vk->cmd,
    };
    if ((r = vkResetFences(vk->dev, 1, &vk->fence)) != VK_SUCCESS)
        return er_vk_fail(vk, r, "cannot reset a fence", err);
    if ((r = vkQueueSubmit(vk->queue, 1, &si, vk->fence)) != VK_SUCCESS)
        return er_vk_fail(vk, r, "submit failed", err);
    if ((r = vkWaitForFences(vk->dev, 1, &vk->fence, VK_TRUE, UINT64_MAX)) != VK_SUCCESS)
        return er_vk_fail(vk, r, "waiting for the device failed", err);
    return ER_OK;
}
