/*
 * The compute backends besides the CPU path of core/model.h (CONTRIBUTING.md
 * "The plan and the backends").
 *
 * The CPU path (er_backend_cpu, core/plan.h: each model's run of its
 * er_model_ops, core/models.h) is the default and the reference.  The
 * Vulkan backend runs the models that have a Vulkan path (their ops'
 * vk_check and vk_steps, in the model's directory) with the same contract,
 * plus a context, declared here, that owns the Vulkan instance and
 * device; cli/ chooses which one runs.  This layer knows no model.  A
 * build without Vulkan links core/vulkan/none.c, whose functions all fail
 * with ER_EUNSUPPORTED and the message ER_VK_NOT_BUILT, and has no model
 * with a Vulkan path, so callers need no #ifdef.
 *
 * Like the rest of core/ the backend prints nothing: device lists and
 * validation-layer messages are handed back in structs.
 */
#ifndef ER_BACKEND_H
#define ER_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "plan.h"

#define ER_VK_NOT_BUILT "this erode was built without Vulkan"

/* Physical device types, as VkPhysicalDeviceType numbers them. */
typedef enum er_vk_device_type {
    ER_VK_TYPE_OTHER = 0,
    ER_VK_TYPE_INTEGRATED = 1,
    ER_VK_TYPE_DISCRETE = 2,
    ER_VK_TYPE_VIRTUAL = 3,
    ER_VK_TYPE_CPU = 4
} er_vk_device_type;

/* One Vulkan device as --list-devices shows it. */
typedef struct er_vk_device_info {
    int index;                     /* what --device N selects */
    char name[256];                /* VkPhysicalDeviceProperties.deviceName */
    er_vk_device_type type;
    uint32_t api_version;          /* VK_MAKE_API_VERSION packing */
    uint64_t device_local_bytes;   /* size of the largest DEVICE_LOCAL heap */
    uint64_t max_storage_buffer_range; /* largest storage buffer a shader can bind */
    uint64_t max_allocation;       /* maxMemoryAllocationSize (Vulkan 1.1) */
    int has_compute;               /* a queue family with VK_QUEUE_COMPUTE_BIT */
    int has_int64;                 /* shaderInt64 (e.g. 64-bit RNG counters) */
    int has_float64;               /* shaderFloat64 (e.g. budget sums) */
    uint32_t driver_version;       /* VkPhysicalDeviceProperties.driverVersion (vendor's packing):
                                    * a checkpoint records it with the name */
    int has_atomic_int64;          /* shaderBufferInt64Atomics (VK_KHR_shader_atomic_int64):
                                    * order-independent fixed-point sums */
    int denorm_preserve;           /* shaderDenormPreserveFloat32 (VK_KHR_shader_float_controls),
                                    * settable for float32 alone: the shaders built a second
                                    * time with DenormPreserve declared can run */
} er_vk_device_info;

/* How to open the backend. */
typedef struct er_vk_options {
    int device;     /* index into er_vk_list_devices' list */
    int validation; /* 1: enable VK_LAYER_KHRONOS_validation and count its messages */
} er_vk_options;

/* The open backend: instance, device, queue, command pool.  Opaque here;
 * core/vulkan/vk.h defines it for the backend's own files. */
typedef struct er_vk_ctx er_vk_ctx;

/* A short name for a device type ("discrete", "cpu", ...). */
const char *er_vk_type_name(er_vk_device_type t);

/* 1 when this binary was built with the Vulkan backend, else 0. */
int er_vk_built(void);

/*
 * Lists the Vulkan devices: fills up to `max` entries of `out` (may be NULL
 * when max is 0) and stores the number of devices in *count.  No device at
 * all is ER_OK with *count = 0.  Fails with ER_EUNSUPPORTED when built
 * without Vulkan or when there is no Vulkan loader/driver (the message says
 * which).  Thread-safe.
 */
er_status er_vk_list_devices(er_vk_device_info *out, int max, int *count, er_error *err);

/*
 * Opens device o->device with one compute queue.  On success *out is a new
 * context the caller closes with er_vk_close.  ER_EINVAL when the index is
 * out of range ("vulkan: no device N (M found)"), ER_EUNSUPPORTED when
 * there is no Vulkan device or it lacks a compute queue, ER_ENOMEM/ER_EIO
 * when Vulkan fails.  A context is used by one thread at a time.
 */
er_status er_vk_open(const er_vk_options *o, er_vk_ctx **out, er_error *err);

/* er_vk_open with a pipeline cache: size bytes at cache as
 * er_vk_cache_save handed them out earlier (NULL, 0: none), read during
 * the call only.  Bytes from another device or driver, damaged or cut
 * short are ignored (a cold cache), never an error. */
er_status er_vk_open_cached(const er_vk_options *o, const void *cache, size_t size,
                            er_vk_ctx **out, er_error *err);

/* Releases a context (NULL is fine).  Waits for the device to be idle. */
void er_vk_close(er_vk_ctx *vk);

/*
 * Caps the bytes of one layer buffer of a model's Vulkan path at `bytes`
 * (0: the device's limits only), so that any device runs the path a map
 * larger than one storage buffer takes (erode-models(7) "VULKAN BACKEND",
 * large maps; the CLI reads ERODE_VK_BAND_BYTES).  A model raises a cap
 * below the least it can split a layer into.  Applies to the runs after
 * it on vk.
 */
void er_vk_set_buffer_cap(er_vk_ctx *vk, uint64_t bytes);

/* The first 8 bytes of every pipeline cache er_vk_cache_save hands out:
 * lets a caller tell its own cache file (damaged or not) from another. */
#define ER_VK_CACHE_MAGIC "ERVKPC\0\1"

/* 1 when er_vk_open_cached accepted its cache (a warm one), else 0. */
int er_vk_cache_warm(const er_vk_ctx *vk);

/*
 * The pipeline cache to keep for the next er_vk_open_cached: *data (malloc'd, the
 * caller frees) and *size, or NULL and 0 when nothing changed since it was
 * loaded (no pipeline created, or all of them found in the cache).  The
 * bytes carry the device's vendor, device, driver version and cache UUID
 * and a checksum.  Call it after the runs, before er_vk_close.  Failures
 * (ER_ENOMEM, ER_EIO) only mean nothing is saved.
 */
er_status er_vk_cache_save(er_vk_ctx *vk, void **data, size_t *size, er_error *err);

/* The opened device's description; valid until er_vk_close. */
const er_vk_device_info *er_vk_info(const er_vk_ctx *vk);

/*
 * Validation-layer messages (warnings and errors) seen since er_vk_open
 * with o->validation = 1; 0 without validation.  When `first` is not NULL
 * the first message's text is copied into it (at most n bytes, NUL-
 * terminated; "" when there was none).
 */
uint64_t er_vk_messages(const er_vk_ctx *vk, char *first, size_t n);

/* The Vulkan backend as an er_backend (core/plan.h): ctx is the
 * er_vk_ctx.  Capabilities: each model's vk_caps (core/models.h), none
 * for a model without a Vulkan path; check and run refuse such a model.
 * Built without Vulkan, check and run fail with ER_VK_NOT_BUILT. */
extern const er_backend er_backend_vulkan;

/* er_plan_make and er_backend_vulkan's check and run in one call (no
 * window), for tests and benchmarks. */
er_status er_run_vk(er_vk_ctx *vk, const er_params *p, er_terrain *t, const er_run_opts *o,
                    er_error *err);

#endif
