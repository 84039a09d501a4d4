/*
 * The Vulkan backend's device layer, shared by the models' Vulkan paths
 * (core/<model>/vulkan*.c) and core/vulkan/vk.c (the context).  It knows
 * no model.  Only those files (and the unit tests and benchmarks) include
 * this one; the rest of the program sees core/backend.h only.
 *
 * How a model uses it (core/mei/vulkan.c is the worked example):
 *
 *   1. Buffers: er_vk_buffer_new(vk, bytes, ER_VK_DEVICE, &b, "what", err)
 *      for state that stays on the device, ER_VK_HOST for a staging buffer
 *      the host maps (b.map); er_vk_check_sizes() first, to refuse a map
 *      that will not fit with a clear message before anything is created.
 *   2. Shaders: GLSL in core/<model>/shaders/NAME.comp (NAME starting
 *      with the model's name: the arrays share one namespace) is compiled
 *      at build time to build/core/<model>/shaders/NAME.spv.h, defining
 *      `const uint32_t er_spv_NAME[]`; #include "NAME.spv.h" in exactly one
 *      .c file.  A .comp with the line `// erode: also-denorm-preserve` is
 *      built a second time with ER_DENORM_PRESERVE defined, as
 *      er_spv_NAME_dp in NAME_dp.spv.h, for devices that offer
 *      shaderDenormPreserveFloat32.  Every storage buffer is
 *      `layout(std430, set = 0, binding = i) buffer ...`, bindings 0..n-1
 *      in order, plus at most one push-constant block.
 *   3. Pipelines: er_vk_pipeline_new(vk, er_spv_NAME, sizeof er_spv_NAME,
 *      n_buffers, push_bytes, n_sets, &pl, err); then for each descriptor
 *      set er_vk_pipeline_bind(vk, &pl, set, buffers) (sets let one
 *      pipeline run on swapped double buffers without re-binding).
 *   4. Work: er_vk_cmd_begin(vk, err) starts the context's command buffer;
 *      record er_vk_cmd_dispatch / er_vk_cmd_barrier / er_vk_cmd_copy /
 *      er_vk_cmd_fill; er_vk_cmd_submit(vk, err) ends, submits and waits on
 *      a fence.  One command buffer per context, re-recorded each batch.
 *   5. Errors: every helper returns er_status and fills err with
 *      "vulkan: <what>: <VkResult name>"; VK_ERROR_DEVICE_LOST comes back
 *      as ER_EIO with vk->device_lost set, out-of-memory as ER_ENOMEM.
 *      The model adds the step ("vulkan: device lost at step 123").
 *
 * Determinism: shaders must not use float atomics or any reduction whose
 * order depends on scheduling; sum per row in a fixed order instead.
 */
#ifndef ER_VK_H
#define ER_VK_H

#include <stddef.h>
#include <stdint.h>

#include <vulkan/vulkan.h>

#include "../backend.h"

/* Threads per workgroup along x for 1D/2D dispatches (a multiple of every
 * vendor's SIMD width; lavapipe runs 8 lanes per thread). */
#define ER_VK_GROUP 64

/* What the last model run on a context spent, for scripts/bench vulkan
 * (wall-clock seconds, except gpu_s). */
#define ER_VK_KERNELS 16
typedef struct er_vk_stats {
    double pipeline_s;   /* buffers and pipelines created */
    double upload_s;     /* the inputs (and a resumed state) uploaded */
    double readback_s;   /* the final state read back */
    double steps_s;      /* the submissions of steps, waits included */
    double gpu_s;        /* their command buffers by GPU timestamps */
    int gpu_timed;       /* gpu_s holds; 0: no timestamps on this queue */
    int64_t submissions, steps, max_steps; /* max_steps: of one submission */
    int bands;           /* row bands of the model's state (1: unbanded) */
    int n_kernels;
    struct {
        const char *name;
        uint64_t invocations; /* workgroups x local size of one dispatch */
    } kernel[ER_VK_KERNELS];
} er_vk_stats;

struct er_vk_ctx {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger; /* VK_NULL_HANDLE without validation */
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t queue_family;
    VkCommandPool pool;
    VkCommandBuffer cmd;                /* the one command buffer (see step 4) */
    VkFence fence;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    er_vk_device_info info;
    VkQueryPool ts_pool;                /* 2 timestamps; VK_NULL_HANDLE: none */
    uint32_t ts_bits;                   /* timestampValidBits of the queue family */
    er_vk_stats stats;                  /* of the last model run */
    VkPipelineCache pcache;             /* every pipeline goes through it (vk_cache.c) */
    int cache_warm;                     /* pcache began with er_vk_open_cached's bytes */
    uint64_t cache_in_hash;             /* of the bytes loaded (0, 0: cold), so an */
    size_t cache_in_size;               /* unchanged cache is not written again */
    int64_t pipelines_made;             /* since er_vk_open */
    VkResult compile_failed;            /* a first dispatch's pipeline creation
                                         * failed: er_vk_cmd_submit reports it */
    int validation;
    uint64_t buffer_cap;                /* er_vk_set_buffer_cap (0: none) */
    int device_lost;                    /* set once VK_ERROR_DEVICE_LOST was seen */
    /* Validation messages, written by the messenger callback (which the
     * layer calls on the thread that made the offending call). */
    uint64_t n_messages;
    char first_message[ER_ERROR_MAX];
};

typedef enum er_vk_mem {
    ER_VK_DEVICE = 0, /* DEVICE_LOCAL, not mapped: state resident on the device */
    ER_VK_HOST = 1,   /* HOST_VISIBLE | HOST_COHERENT (HOST_CACHED too where a
                       * type has all three), mapped at b->map */
    ER_VK_STAGING = 2 /* HOST_VISIBLE, HOST_CACHED where the device offers it
                       * (coherent or not), mapped at b->map: the host reads it
                       * back, which uncached memory makes slow on a discrete
                       * GPU; use er_vk_buffer_flush / _invalidate around it */
} er_vk_mem;

/* A storage buffer with its own memory allocation. */
typedef struct er_vk_buffer {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size; /* bytes requested */
    void *map;         /* ER_VK_HOST, ER_VK_STAGING: mapped for the buffer's lifetime */
    int coherent;      /* mapped memory that needs no flush / invalidate */
} er_vk_buffer;

/* The compiled part of a pipeline, made at its first dispatch (a kernel a
 * run never dispatches is never compiled, which keeps a run's fixed cost
 * small); behind a pointer so that er_vk_cmd_dispatch's const pipeline can
 * fill it. */
typedef struct er_vk_compiled {
    VkPipeline pipe;         /* VK_NULL_HANDLE until the first dispatch */
    const uint32_t *spv;     /* the SPIR-V, static: kept by pointer */
    size_t spv_bytes;
} er_vk_compiled;

/* A compute pipeline whose storage buffers are bindings 0..n_buffers-1 of
 * set 0, with n_sets descriptor sets to choose from at dispatch time. */
typedef struct er_vk_pipeline {
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    er_vk_compiled *compiled;
    VkDescriptorPool pool;
    VkDescriptorSet *sets;
    uint32_t n_sets, n_buffers, push_bytes;
} er_vk_pipeline;

/* Fills err with "vulkan: <what>: <VkResult name>" and returns the status
 * that matches r (ER_ENOMEM, ER_EIO for device lost, ER_EIO otherwise);
 * marks vk->device_lost.  For use right after a failing Vulkan call. */
er_status er_vk_fail(er_vk_ctx *vk, VkResult r, const char *what, er_error *err);

/* Creates vk->pcache from size bytes of data (er_vk_open_cached) when
 * they were made for this device and driver and are intact, else empty;
 * sets vk->cache_warm.  Fails only when Vulkan cannot make an empty one. */
er_status er_vk_cache_open(er_vk_ctx *vk, const void *data, size_t size, er_error *err);

/* A VkResult's name ("VK_ERROR_DEVICE_LOST"). */
const char *er_vk_result_name(VkResult r);

/*
 * Refuses sizes the device cannot hold, before any allocation: each of the
 * n buffer sizes must be <= maxStorageBufferRange and <= the largest
 * allocation, their total <= the device-local heap.  `what` names the map
 * in the message, e.g. "a 8192x8192 map".  ER_ENOMEM with a message that
 * names the limit, else ER_OK.
 */
er_status er_vk_check_sizes(const er_vk_ctx *vk, const VkDeviceSize *sizes, size_t n,
                            const char *what, er_error *err);

/* Creates a storage buffer of `bytes` (> 0) in the given memory and, for
 * ER_VK_HOST, maps it.  `what` names it in errors.  Free with
 * er_vk_buffer_free (a zeroed struct is safe to free). */
er_status er_vk_buffer_new(er_vk_ctx *vk, VkDeviceSize bytes, er_vk_mem kind,
                           er_vk_buffer *b, const char *what, er_error *err);
void er_vk_buffer_free(er_vk_ctx *vk, er_vk_buffer *b);

/* Builds a compute pipeline from SPIR-V (entry point "main"): layouts and
 * descriptor sets now, the compiled pipeline (through vk->pcache) at its
 * first er_vk_cmd_dispatch, whose failure er_vk_cmd_submit reports.
 * spv must stay valid (an er_spv_ array); spv_bytes is its sizeof.  Free
 * with er_vk_pipeline_free (a zeroed struct is safe to free). */
er_status er_vk_pipeline_new(er_vk_ctx *vk, const uint32_t *spv, size_t spv_bytes,
                             uint32_t n_buffers, uint32_t push_bytes, uint32_t n_sets,
                             er_vk_pipeline *pl, er_error *err);
void er_vk_pipeline_free(er_vk_ctx *vk, er_vk_pipeline *pl);

/* Points descriptor set `set` of pl at bufs[0..n_buffers-1] (whole buffers). */
void er_vk_pipeline_bind(er_vk_ctx *vk, er_vk_pipeline *pl, uint32_t set,
                         const er_vk_buffer *const *bufs);

/* Resets and begins vk->cmd for one submission. */
er_status er_vk_cmd_begin(er_vk_ctx *vk, er_error *err);

/* Records a dispatch of groups_x * groups_y workgroups with descriptor set
 * `set` and push constants `push` (pl->push_bytes bytes; NULL if none). */
void er_vk_cmd_dispatch(er_vk_ctx *vk, const er_vk_pipeline *pl, uint32_t set,
                        const void *push, uint32_t groups_x, uint32_t groups_y);

/* Every earlier shader or transfer write visible to every later shader or
 * transfer access: put one between dependent dispatches. */
void er_vk_cmd_barrier(er_vk_ctx *vk);

/* Copies bytes from src to dst (offsets 0). */
void er_vk_cmd_copy(er_vk_ctx *vk, const er_vk_buffer *src, const er_vk_buffer *dst,
                    VkDeviceSize bytes);

/* Fills a whole buffer with the 32-bit word `value` (0 clears floats). */
void er_vk_cmd_fill(er_vk_ctx *vk, const er_vk_buffer *b, uint32_t value);

/* Copies bytes from src at soff to dst at doff. */
void er_vk_cmd_copy_at(er_vk_ctx *vk, const er_vk_buffer *src, VkDeviceSize soff,
                       const er_vk_buffer *dst, VkDeviceSize doff, VkDeviceSize bytes);

/* Makes host writes to a staging buffer visible to the device (before a
 * submission that reads it) and device writes visible to the host (after
 * the fence); no-ops on coherent memory. */
er_status er_vk_buffer_flush(er_vk_ctx *vk, const er_vk_buffer *b, er_error *err);
er_status er_vk_buffer_invalidate(er_vk_ctx *vk, const er_vk_buffer *b, er_error *err);

/* Timestamp `which` (0 at the start, 1 at the end of a command buffer;
 * 0 also resets the pair); nothing where vk->ts_pool is VK_NULL_HANDLE. */
void er_vk_cmd_timestamp(er_vk_ctx *vk, uint32_t which);

/* Seconds between the two timestamps of the last submission, after its
 * fence; -1 where the queue has no timestamps (never a guess). */
double er_vk_timestamp_seconds(er_vk_ctx *vk);

/* Seconds on a monotonic clock, for the run's counters (er_vk_stats) and
 * the models' submission sizes. */
double er_vk_now(void);

/* Ends vk->cmd, submits it and waits for it (fence).  ER_EIO on device
 * lost ("vulkan: ...: VK_ERROR_DEVICE_LOST"), ER_ENOMEM on out of memory. */
er_status er_vk_cmd_submit(er_vk_ctx *vk, er_error *err);

/* Workgroups needed to cover n items with groups of `size`. */
static inline uint32_t er_vk_groups(uint32_t n, uint32_t size)
{
    return (n + size - 1) / size;
}

#endif
