/*
 * Droplet erosion on the Vulkan backend: the tile-coloured batches of
 * DESIGN.md §5 (core/schedule.c) with one shader invocation per tile
 * (shaders/droplet_lague.comp).
 *
 * The host does what is cheap and must match the CPU path exactly: the
 * recipe checks, the height unit and constants (er_droplet_prepare), the
 * start of every droplet from the counter RNG (er_droplet_start,
 * er_lague_begin), the grid offset of every batch and the bucketing of its
 * droplets by tile (er_tiling_init, er_tiling_bucket), and the budget.  It
 * uploads starts and per-tile jobs for a chunk of batches at a time; the
 * terrain, flow and deposit layers stay on the device for the whole run and
 * are read back once at the end.  Per batch the four colours are four
 * dispatches separated by barriers; within one colour one invocation runs
 * one tile's droplets in index order, so no two invocations touch a common
 * cell and the result is the same on every run on one device.
 *
 * Per-tile sums (eroded, deposited, left the map) come back per chunk and
 * are added in double in (batch, tile) order, like the CPU's.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../droplet_impl.h"
#include "../schedule.h"
#include "vk_droplet.h"

/* Invocations per workgroup on GPUs (droplet_lague.comp's local_size_x is
 * a specialization constant); CPU devices get 1. */
#define WG_GPU 32

/* Loop iterations one invocation may run per pass on CPU devices (lavapipe
 * stops every loop of an invocation after 65535, see droplet_lague.comp). */
#define CPU_LOOP_BUDGET 60000

/* Workgroups per dispatch: the least maxComputeWorkGroupCount[0] allows. */
#define MAX_GROUPS 65535

/* A chunk of batches goes to the device in one submission: enough batches
 * that the submit and wait cost nothing next to the work, at most about
 * this many droplets (start records are 16 bytes each). */
#define CHUNK_DROPLETS (1 << 20)

/* Layouts shared with droplet_lague.comp (std430). */
typedef struct vkd_start {
    int32_t bx, by;
    float lx, ly;
} vkd_start;

typedef struct vkd_job {
    uint32_t first, count, slot, pad;
} vkd_job;

typedef struct vkd_tile {
    float eroded, eroded_c, deposited, deposited_c;
    float left_map, left_map_c, water_left, water_left_c;
    uint32_t steps_lo, steps_hi, next, live;
    int32_t bx, by, it, pad;
    float lx, ly, lx0, ly0;
    float dx, dy, speed, water;
    float sed, pad1, pad2, pad3;
} vkd_tile;

typedef struct vkd_push {
    int32_t width, height, lifetime, radius;
    float inertia, grad_k, cap_k, min_cap;
    float min_slope, erode_speed, deposit_speed, keep_water;
    float gravity, init_water, init_speed, pad;
    uint32_t flags, job0, njobs, steps_per_pass;
} vkd_push;

enum { F_FLOW = 1, F_DEP = 2, F_WALL = 4 };

enum { B_HEIGHT, B_FLOW, B_DEP, B_MASK, B_BRUSH, B_START, B_JOB, B_TILE, B_COUNT };

typedef struct vkd_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    void *map;                /* host pointer when host-visible and mapped */
} vkd_buf;

/* Everything one run owns on the device. */
typedef struct vkd_run {
    const er_vk_device *d;
    vkd_buf b[B_COUNT];
    vkd_buf staging;          /* host-visible, for uploads and the read-back */
    VkShaderModule shader;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipe;
    VkDescriptorPool pool;
    VkDescriptorSet set;
    VkCommandPool cmdpool;
    VkCommandBuffer cmd;
    VkFence fence;
} vkd_run;

static er_status vk_fail(er_error *err, VkResult r, const char *what)
{
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
        return er_fail(err, ER_ENOMEM, "vulkan: %s: out of %s memory", what,
                       r == VK_ERROR_OUT_OF_HOST_MEMORY ? "host" : "device");
    return er_fail(err, ER_EIO, "vulkan: %s failed (VkResult %d)", what, (int)r);
}

static int find_memory(const er_vk_device *d, uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < d->mem.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (d->mem.memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    return -1;
}

/* A storage buffer of `size` bytes; host-visible (and mapped) when `host`,
 * else device-local where the device has such memory. */
static er_status buf_new(const er_vk_device *d, vkd_buf *b, VkDeviceSize size, int host,
                         er_error *err)
{
    memset(b, 0, sizeof *b);
    b->size = size;
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(d->device, &bi, NULL, &b->buf);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "creating a buffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->device, b->buf, &req);
    int type = host ? find_memory(d, req.memoryTypeBits,
                                  VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
                    : find_memory(d, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type < 0 && !host)
        type = find_memory(d, req.memoryTypeBits, 0);
    if (type < 0)
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: no suitable memory type for a buffer");
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    r = vkAllocateMemory(d->device, &ai, NULL, &b->mem);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "allocating buffer memory");
    r = vkBindBufferMemory(d->device, b->buf, b->mem, 0);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "binding buffer memory");
    if (host) {
        r = vkMapMemory(d->device, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map);
        if (r != VK_SUCCESS)
            return vk_fail(err, r, "mapping buffer memory");
    }
    return ER_OK;
}

static void buf_free(const er_vk_device *d, vkd_buf *b)
{
    if (b->map)
        vkUnmapMemory(d->device, b->mem);
    if (b->buf)
        vkDestroyBuffer(d->device, b->buf, NULL);
    if (b->mem)
        vkFreeMemory(d->device, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

static void run_free(vkd_run *R)
{
    const er_vk_device *d = R->d;
    if (!d)
        return;
    if (d->device)
        vkDeviceWaitIdle(d->device);
    if (R->fence)
        vkDestroyFence(d->device, R->fence, NULL);
    if (R->cmdpool)
        vkDestroyCommandPool(d->device, R->cmdpool, NULL);
    if (R->pool)
        vkDestroyDescriptorPool(d->device, R->pool, NULL);
    if (R->pipe)
        vkDestroyPipeline(d->device, R->pipe, NULL);
    if (R->layout)
        vkDestroyPipelineLayout(d->device, R->layout, NULL);
    if (R->dsl)
        vkDestroyDescriptorSetLayout(d->device, R->dsl, NULL);
    if (R->shader)
        vkDestroyShaderModule(d->device, R->shader, NULL);
    for (int i = 0; i < B_COUNT; i++)
        buf_free(d, &R->b[i]);
    buf_free(d, &R->staging);
    memset(R, 0, sizeof *R);
}

/* Pipeline, descriptor set over the eight buffers, command buffer, fence. */
static er_status run_pipeline(vkd_run *R, uint32_t wg, er_error *err)
{
    const er_vk_device *d = R->d;
    VkShaderModuleCreateInfo si = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = er_vk_spv_droplet_lague_size,
        .pCode = er_vk_spv_droplet_lague,
    };
    VkResult r = vkCreateShaderModule(d->device, &si, NULL, &R->shader);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "creating the droplet shader");

    VkDescriptorSetLayoutBinding bind[B_COUNT];
    for (uint32_t i = 0; i < B_COUNT; i++)
        bind[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo dli = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = B_COUNT,
        .pBindings = bind,
    };
    r = vkCreateDescriptorSetLayout(d->device, &dli, NULL, &R->dsl);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "creating a descriptor set layout");
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(vkd_push)};
    VkPipelineLayoutCreateInfo pli = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &R->dsl,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &pcr,
    };
    r = vkCreatePipelineLayout(d->device, &pli, NULL, &R->layout);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "creating a pipeline layout");
    VkSpecializationMapEntry me = {0, 0, sizeof wg};
    VkSpecializationInfo spec = {1, &me, sizeof wg, &wg};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = R->shader,
                  .pName = "main",
                  .pSpecializationInfo = &spec},
        .layout = R->layout,
    };
    r = vkCreateComputePipelines(d->device, VK_NULL_HANDLE, 1, &ci, NULL, &R->pipe);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "creating the droplet pipeline");

    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, B_COUNT};
    VkDescriptorPoolCreateInfo dpi = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = 1,
        .poolSizeCount = 1,
        .pPoolSizes = &ps,
    };
    r = vkCreateDescriptorPool(d->device, &dpi, NULL, &R->pool);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "creating a descriptor pool");
    VkDescriptorSetAllocateInfo dai = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = R->pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &R->dsl,
    };
    r = vkAllocateDescriptorSets(d->device, &dai, &R->set);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "allocating a descriptor set");
    VkDescriptorBufferInfo dbi[B_COUNT];
    VkWriteDescriptorSet wr[B_COUNT];
    for (uint32_t i = 0; i < B_COUNT; i++) {
        dbi[i] = (VkDescriptorBufferInfo){R->b[i].buf, 0, VK_WHOLE_SIZE};
        wr[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = R->set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &dbi[i],
        };
    }
    vkUpdateDescriptorSets(d->device, B_COUNT, wr, 0, NULL);

    VkCommandPoolCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = d->queue_family,
    };
    r = vkCreateCommandPool(d->device, &cpi, NULL, &R->cmdpool);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "creating a command pool");
    VkCommandBufferAllocateInfo cai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = R->cmdpool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    r = vkAllocateCommandBuffers(d->device, &cai, &R->cmd);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "allocating a command buffer");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = vkCreateFence(d->device, &fi, NULL, &R->fence);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "creating a fence");
    return ER_OK;
}

static er_status cmd_begin(vkd_run *R, er_error *err)
{
    VkResult r = vkResetCommandBuffer(R->cmd, 0);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "resetting a command buffer");
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    r = vkBeginCommandBuffer(R->cmd, &bi);
    return r == VK_SUCCESS ? ER_OK : vk_fail(err, r, "recording commands");
}

/* Ends, submits and waits for the command buffer. */
static er_status cmd_submit_wait(vkd_run *R, er_error *err)
{
    const er_vk_device *d = R->d;
    VkResult r = vkEndCommandBuffer(R->cmd);
    if (r != VK_SUCCESS)
        return vk_fail(err, r, "recording commands");
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &R->cmd,
    };
    r = vkResetFences(d->device, 1, &R->fence);
    if (r == VK_SUCCESS)
        r = vkQueueSubmit(d->queue, 1, &si, R->fence);
    if (r == VK_SUCCESS)
        r = vkWaitForFences(d->device, 1, &R->fence, VK_TRUE, UINT64_MAX);
    return r == VK_SUCCESS ? ER_OK : vk_fail(err, r, "running the droplet shader");
}

/* A global memory dependency: writes of `sa` in stages `ss` made visible
 * to accesses `da` in stages `ds` (earlier submissions included). */
static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags ss, VkAccessFlags sa,
                    VkPipelineStageFlags ds, VkAccessFlags da)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = sa,
        .dstAccessMask = da,
    };
    vkCmdPipelineBarrier(cmd, ss, ds, 0, 1, &mb, 0, NULL, 0, NULL);
}

#define ST_COMPUTE VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
#define ST_TRANSFER VK_PIPELINE_STAGE_TRANSFER_BIT
#define ST_HOST VK_PIPELINE_STAGE_HOST_BIT
#define AC_SHADER (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT)

/* Copies `bytes` between host memory and device buffer `b` through the
 * staging buffer (which holds at least one layer): up when `up`. */
static er_status transfer(vkd_run *R, vkd_buf *b, void *host, size_t bytes, int up,
                          er_error *err)
{
    er_status st = cmd_begin(R, err);
    if (st)
        return st;
    VkBufferCopy cp = {0, 0, bytes};
    if (up) {
        memcpy(R->staging.map, host, bytes);
        vkCmdCopyBuffer(R->cmd, R->staging.buf, b->buf, 1, &cp);
    } else {
        barrier(R->cmd, ST_COMPUTE, VK_ACCESS_SHADER_WRITE_BIT, ST_TRANSFER,
                VK_ACCESS_TRANSFER_READ_BIT);
        vkCmdCopyBuffer(R->cmd, b->buf, R->staging.buf, 1, &cp);
        barrier(R->cmd, ST_TRANSFER, VK_ACCESS_TRANSFER_WRITE_BIT, ST_HOST,
                VK_ACCESS_HOST_READ_BIT);
    }
    st = cmd_submit_wait(R, err);
    if (!st && !up)
        memcpy(host, R->staging.map, bytes);
    return st;
}

static er_status fill_zero(vkd_run *R, vkd_buf *b, er_error *err)
{
    er_status st = cmd_begin(R, err);
    if (st)
        return st;
    vkCmdFillBuffer(R->cmd, b->buf, 0, VK_WHOLE_SIZE, 0);
    return cmd_submit_wait(R, err);
}

/* The wall and clean masks packed one byte a cell (bit 0 wall, bit 1 clean),
 * four cells to a 32-bit word; NULL when the map has no walls. */
static uint32_t *pack_mask(const er_dctx *c, size_t cells, size_t *words)
{
    *words = (cells + 3) / 4;
    uint32_t *m = calloc(*words, sizeof *m);
    if (!m)
        return NULL;
    for (size_t i = 0; i < cells; i++) {
        uint32_t v = (uint32_t)(c->wall[i] != 0) | (uint32_t)(c->clean[i] != 0) << 1;
        m[i / 4] |= v << (8 * (i % 4));
    }
    return m;
}

/* Most batches in one submission (small batches on small maps). */
#define CHUNK_BATCHES 64

/* Host-side bookkeeping for one chunk of batches. */
typedef struct chunk {
    int64_t lo;               /* first droplet id of the chunk */
    int nbatch;               /* batches in it */
    int64_t first_batch;
    int njob[CHUNK_BATCHES][4]; /* jobs per (batch, colour) dispatch */
    int job0[CHUNK_BATCHES][4]; /* their first job */
    int most[CHUNK_BATCHES][4]; /* droplets of the busiest tile of each */
    int ntiles[CHUNK_BATCHES];  /* tiles of each batch (acc slots used) */
} chunk;

/* Host buffers for drawing one batch's starts and bucketing them. */
typedef struct batch_scratch {
    double *sx, *sy;
    int *ok, *tile_of, *order, *start, *colour_tiles;
} batch_scratch;

static void scratch_free(batch_scratch *s)
{
    free(s->sx);
    free(s->sy);
    free(s->ok);
    free(s->tile_of);
    free(s->order);
    free(s->start);
    free(s->colour_tiles);
}

/* Draws the starts of droplets lo .. lo+n-1 (batch b), buckets them by tile
 * and appends their start records and per-tile jobs to the chunk buffers
 * (at *nstart and *njob; acc slots from slot0). */
static void prepare_batch(const er_droplet_setup *s, uint64_t seed, int size, int64_t b,
                          int64_t lo, int n, batch_scratch *bs, vkd_start *starts,
                          uint32_t *nstart, vkd_job *jobs, uint32_t *njob, uint32_t slot0,
                          int job0[4], int count[4], int most[4], int *ntiles)
{
    const er_dctx *c = &s->ctx;
    er_tiling tl;
    er_tiling_init(&tl, c->width, c->height, size, seed, (uint64_t)b);
    for (int i = 0; i < n; i++) {
        bs->ok[i] = er_droplet_start(c, seed, lo + i, &bs->sx[i], &bs->sy[i]);
        bs->tile_of[i] = bs->ok[i] ? er_tiling_tile(&tl, (int)bs->sx[i], (int)bs->sy[i]) : 0;
    }
    int colour_start[5];
    er_tiling_bucket(&tl, n, bs->tile_of, bs->start, bs->order, bs->colour_tiles, colour_start);
    *ntiles = er_tiling_count(&tl);
    for (int col = 0; col < 4; col++) {
        job0[col] = (int)*njob;
        most[col] = 0;
        for (int k = colour_start[col]; k < colour_start[col + 1]; k++) {
            int tile = bs->colour_tiles[k];
            uint32_t first = *nstart;
            for (int j = bs->start[tile]; j < bs->start[tile + 1]; j++) {
                int i = bs->order[j];
                if (!bs->ok[i])
                    continue;
                er_lague_state st;
                er_lague_begin(c, &st, bs->sx[i], bs->sy[i], NULL);
                starts[*nstart] = (vkd_start){st.bx, st.by, st.lx, st.ly};
                (*nstart)++;
            }
            if (*nstart > first) {
                uint32_t m = *nstart - first;
                jobs[(*njob)++] = (vkd_job){first, m, slot0 + (uint32_t)tile, 0};
                most[col] = (int)m > most[col] ? (int)m : most[col];
            }
        }
        count[col] = (int)*njob - job0[col];
    }
}

static void acc_add_tile(er_dacc *sum, const vkd_tile *a)
{
    sum->eroded += (double)a->eroded - (double)a->eroded_c;
    sum->deposited += (double)a->deposited - (double)a->deposited_c;
    sum->left_map += (double)a->left_map - (double)a->left_map_c;
    sum->water_left += (double)a->water_left - (double)a->water_left_c;
    sum->steps += (int64_t)((uint64_t)a->steps_hi << 32 | a->steps_lo);
}

/* Runs every batch: chunks of batches prepared on the host, run on the
 * device, their per-tile sums added in order. */
static er_status run_batches(vkd_run *R, const er_params *p, const er_droplet_setup *s,
                             int size, int64_t batch, int64_t max_tiles, uint32_t chunk_batches,
                             uint32_t wg,
                             const vkd_push *base, const er_run_ctl *ctl, er_dacc *sum,
                             er_error *err)
{
    batch_scratch bs;
    memset(&bs, 0, sizeof bs);
    size_t nb = (size_t)batch, mt = (size_t)max_tiles;
    bs.sx = malloc(nb * sizeof *bs.sx);
    bs.sy = malloc(nb * sizeof *bs.sy);
    bs.ok = malloc(nb * sizeof *bs.ok);
    bs.tile_of = malloc(nb * sizeof *bs.tile_of);
    bs.order = malloc(nb * sizeof *bs.order);
    bs.start = malloc((mt + 1) * sizeof *bs.start);
    bs.colour_tiles = malloc(mt * sizeof *bs.colour_tiles);
    chunk *ch = malloc(sizeof *ch);
    er_status st = ER_OK;
    if (!bs.sx || !bs.sy || !bs.ok || !bs.tile_of || !bs.order || !bs.start ||
        !bs.colour_tiles || !ch) {
        st = er_fail(err, ER_ENOMEM, "droplet: out of memory for a batch of %zu droplets", nb);
        goto done;
    }

    vkd_start *starts = R->b[B_START].map;
    vkd_job *jobs = R->b[B_JOB].map;
    vkd_tile *accs = R->b[B_TILE].map;
    int64_t b = 0;
    for (int64_t lo = 0; lo < s->count;) {
        uint32_t nstart = 0, njob = 0;
        ch->lo = lo;
        ch->first_batch = b;
        ch->nbatch = 0;
        while (lo < s->count && (uint32_t)ch->nbatch < chunk_batches) {
            int n = (int)(s->count - lo > batch ? batch : s->count - lo);
            int k = ch->nbatch;
            prepare_batch(s, p->seed, size, b, lo, n, &bs, starts, &nstart, jobs, &njob,
                          (uint32_t)((size_t)k * mt), ch->job0[k], ch->njob[k], ch->most[k],
                          &ch->ntiles[k]);
            lo += n;
            b++;
            ch->nbatch++;
        }
        memset(accs, 0, (size_t)ch->nbatch * mt * sizeof *accs);

        st = cmd_begin(R, err);
        if (st)
            goto done;
        /* Uploads and fills of earlier submissions before the first dispatch. */
        barrier(R->cmd, ST_TRANSFER, VK_ACCESS_TRANSFER_WRITE_BIT, ST_COMPUTE, AC_SHADER);
        vkCmdBindPipeline(R->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, R->pipe);
        vkCmdBindDescriptorSets(R->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, R->layout, 0, 1, &R->set,
                                0, NULL);
        for (int k = 0; k < ch->nbatch; k++)
            for (int col = 0; col < 4; col++) {
                if (ch->njob[k][col] == 0)
                    continue;
                /* Enough passes for the busiest tile: each droplet takes at
                 * most lifetime + 1 calls of the step. */
                uint64_t calls = (uint64_t)ch->most[k][col] * (uint64_t)(base->lifetime + 1);
                uint64_t passes = (calls + base->steps_per_pass - 1) / base->steps_per_pass;
                for (uint64_t q = 0; q < passes; q++)
                    for (uint32_t j0 = 0; j0 < (uint32_t)ch->njob[k][col];
                         j0 += MAX_GROUPS * wg) {
                        vkd_push pc = *base;
                        uint32_t left = (uint32_t)ch->njob[k][col] - j0;
                        pc.job0 = (uint32_t)ch->job0[k][col] + j0;
                        pc.njobs = left < MAX_GROUPS * wg ? left : MAX_GROUPS * wg;
                        vkCmdPushConstants(R->cmd, R->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                           sizeof pc, &pc);
                        vkCmdDispatch(R->cmd, (pc.njobs + wg - 1) / wg, 1, 1);
                        /* The next pass or colour reads what this one wrote. */
                        barrier(R->cmd, ST_COMPUTE, VK_ACCESS_SHADER_WRITE_BIT, ST_COMPUTE,
                                AC_SHADER);
                    }
            }
        /* The per-tile sums are read on the host after the fence. */
        barrier(R->cmd, ST_COMPUTE, VK_ACCESS_SHADER_WRITE_BIT, ST_HOST, VK_ACCESS_HOST_READ_BIT);
        st = cmd_submit_wait(R, err);
        if (st)
            goto done;
        for (int k = 0; k < ch->nbatch; k++)
            for (int t = 0; t < ch->ntiles[k]; t++)
                acc_add_tile(sum, &accs[(size_t)k * mt + (size_t)t]);
        if (ctl && ctl->progress && ctl->progress(ctl->user, (double)lo / (double)s->count)) {
            st = er_fail(err, ER_ECANCELED, "droplet: interrupted");
            goto done;
        }
    }
done:
    scratch_free(&bs);
    free(ch);
    return st;
}

er_status er_vk_droplet_run(const er_vk_device *d, const er_params *p, er_terrain *t,
                            er_layers *layers, const er_run_ctl *ctl, er_budget *budget,
                            er_error *err)
{
    er_droplet_setup s;
    int64_t size = 0, batch = 0;
    vkd_run R;
    memset(&R, 0, sizeof R);
    uint32_t *mask = NULL;
    er_dacc sum = {0};

    if (p->droplet.variant != ER_DROPLET_LAGUE)
        return er_fail(err, ER_EUNSUPPORTED,
                       "droplet.variant: mass_transfer is not available on the vulkan "
                       "backend (use --backend cpu)");
    er_status st = er_droplet_prepare(p, t, layers, &s, &size, &batch, err);
    if (st)
        goto fail;
    if (s.count == 0)
        goto finish;

    const er_dctx *c = &s.ctx;
    size_t cells = s.cells, bytes = cells * sizeof(float);
    int64_t max_tiles = er_tiling_max_tiles(c->width, c->height, (int)size);
    if (er_tiling_is_single(c->width, c->height, (int)size))
        max_tiles = 1;
    if (batch > s.count)
        batch = s.count;
    if (max_tiles > INT_MAX / 2 || batch > INT_MAX / 2 || cells > UINT32_MAX ||
        bytes > d->max_storage_buffer_range) {
        st = er_fail(err, ER_EUNSUPPORTED,
                     "vulkan: a %dx%d map is too large for the device's storage buffers "
                     "(at most %llu bytes a layer)",
                     c->width, c->height, (unsigned long long)d->max_storage_buffer_range);
        goto fail;
    }
    /* Batches per submission: CHUNK_DROPLETS droplets, at least one batch. */
    int64_t cb = CHUNK_DROPLETS / batch;
    uint32_t chunk_batches = (uint32_t)(cb < 1 ? 1 : cb > CHUNK_BATCHES ? CHUNK_BATCHES : cb);
    size_t n_start = (size_t)chunk_batches * (size_t)batch;
    size_t n_job = (size_t)chunk_batches * (size_t)max_tiles;
    if ((uint64_t)n_start * sizeof(vkd_start) > d->max_storage_buffer_range)
        chunk_batches = 1, n_start = (size_t)batch, n_job = (size_t)max_tiles;
    if ((uint64_t)n_start * sizeof(vkd_start) > d->max_storage_buffer_range) {
        st = er_fail(err, ER_EUNSUPPORTED, "vulkan: droplet.batch_size %lld is too large for "
                     "the device's storage buffers", (long long)batch);
        goto fail;
    }

    R.d = d;
    /* Lavapipe's loop budget: steps per pass on CPU devices, each step
     * costing at most 2 side^2 + 3 loop iterations (droplet_lague.comp). */
    int cpu = d->device_type == VK_PHYSICAL_DEVICE_TYPE_CPU;
    uint32_t wg = cpu ? 1 : WG_GPU;
    uint32_t steps_per_pass = UINT32_MAX;
    if (cpu) {
        int64_t cost = 2 * (int64_t)c->brush_side * c->brush_side + 3;
        steps_per_pass = (uint32_t)(CPU_LOOP_BUDGET / cost > 1 ? CPU_LOOP_BUDGET / cost : 1);
    }
    if (d->steps_per_pass)
        steps_per_pass = d->steps_per_pass;
    int walls = c->wall != NULL;
    int side = c->brush_side;
    size_t mask_words = 1;
    if (walls) {
        mask = pack_mask(c, cells, &mask_words);
        if (!mask) {
            st = er_fail(err, ER_ENOMEM, "droplet: out of memory for the wall mask");
            goto fail;
        }
    }
    /* Unwanted layers and an absent mask get a one-word buffer. */
    if ((st = buf_new(d, &R.b[B_HEIGHT], bytes, 0, err)) ||
        (st = buf_new(d, &R.b[B_FLOW], c->flow ? bytes : 4, 0, err)) ||
        (st = buf_new(d, &R.b[B_DEP], c->deposit ? bytes : 4, 0, err)) ||
        (st = buf_new(d, &R.b[B_MASK], mask_words * 4, 0, err)) ||
        (st = buf_new(d, &R.b[B_BRUSH], (size_t)side * (size_t)side * sizeof(float), 0, err)) ||
        (st = buf_new(d, &R.b[B_START], n_start * sizeof(vkd_start), 1, err)) ||
        (st = buf_new(d, &R.b[B_JOB], n_job * sizeof(vkd_job), 1, err)) ||
        (st = buf_new(d, &R.b[B_TILE], n_job * sizeof(vkd_tile), 1, err)) ||
        (st = buf_new(d, &R.staging, bytes > mask_words * 4 ? bytes : mask_words * 4, 1, err)) ||
        (st = run_pipeline(&R, wg, err)))
        goto fail;

    if ((st = transfer(&R, &R.b[B_HEIGHT], t->elevation, bytes, 1, err)) ||
        (st = fill_zero(&R, &R.b[B_FLOW], err)) || (st = fill_zero(&R, &R.b[B_DEP], err)) ||
        (st = transfer(&R, &R.b[B_BRUSH], (void *)(uintptr_t)c->brush_w,
                       (size_t)side * (size_t)side * sizeof(float), 1, err)) ||
        (walls && (st = transfer(&R, &R.b[B_MASK], mask, mask_words * 4, 1, err))))
        goto fail;

    vkd_push base = {
        .width = c->width,
        .height = c->height,
        .lifetime = c->lifetime,
        .radius = c->radius,
        .inertia = c->inertia,
        .grad_k = c->grad_k,
        .cap_k = c->cap_k,
        .min_cap = c->min_cap,
        .min_slope = c->min_slope,
        .erode_speed = c->erode_speed,
        .deposit_speed = c->deposit_speed,
        .keep_water = c->keep_water,
        .gravity = c->gravity,
        .init_water = c->init_water,
        .init_speed = c->init_speed,
        .flags = (c->flow ? F_FLOW : 0u) | (c->deposit ? F_DEP : 0u) | (walls ? F_WALL : 0u),
        .steps_per_pass = steps_per_pass,
    };
    er_status run_st = run_batches(&R, p, &s, (int)size, batch, max_tiles, chunk_batches, wg, &base,
                                   ctl, &sum, err);
    if (run_st && run_st != ER_ECANCELED) {
        st = run_st;
        goto fail;
    }
    /* Read back the state after the last finished chunk (also when
     * cancelled: the terrain then holds that batch boundary's state). */
    if ((st = transfer(&R, &R.b[B_HEIGHT], t->elevation, bytes, 0, err)) ||
        (c->flow && (st = transfer(&R, &R.b[B_FLOW], c->flow, bytes, 0, err))) ||
        (c->deposit && (st = transfer(&R, &R.b[B_DEP], c->deposit, bytes, 0, err))))
        goto fail;
    st = run_st;
    if (st == ER_ECANCELED)
        er_fail(err, st, "droplet: interrupted");
finish:
    er_droplet_finish(p, &s, t, &sum, budget);
fail:
    run_free(&R);
    free(mask);
    er_droplet_setup_free(&s);
    return st;
}
