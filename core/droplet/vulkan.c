/*
 * Droplet erosion on the Vulkan backend: the block-coloured batches of
 * core/droplet/blocks.c with one shader invocation per block
 * (shaders/droplet_lague.comp).
 *
 * The host does what is cheap and must match the CPU path exactly, with
 * the CPU path's own code (core/droplet/droplet_impl.h): the set-up from
 * the plan (er_droplet_prepare), each batch's blocks, droplet starts and
 * bucketing, laid on the world in a window (er_droplet_batch_draw), the
 * boundary states, resume (er_droplet_begin, er_droplet_state) and the
 * budget and run guard (er_droplet_end).  It uploads starts and per-block
 * jobs for a chunk of batches at a time; the terrain, flow and deposit
 * layers stay on the device and are read back at the end (also after a
 * cancel; after any other failure the terrain is left as it was) and at
 * the boundaries the run hooks want (er_hooks_want), where a chunk ends.
 * Per batch the four colours run one after another, barriers between
 * them; within one colour one invocation runs one block's droplets in
 * index order, so no two invocations touch a common cell and the result
 * is the same on every run on one device, however the batches are cut
 * into chunks (a resumed run's chunks start at its boundary).  On CPU
 * devices a colour takes several dispatches ("passes", see
 * droplet_lague.comp); a pass ends between two droplet steps, so the
 * split changes nothing.
 *
 * Per-block sums (eroded, deposited, left the map) come back per chunk and
 * are added in double in (batch, block) order, like the CPU's.
 *
 * droplet.schedule "snapshot" runs instead one invocation per droplet and
 * a resolve pass per batch (run_snap_device, below; core/droplet/
 * snapshot.c is its CPU counterpart).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../vulkan/vk.h"
#include "blocks.h"
#include "host.h"
#include "vulkan.h"

#include "droplet_lague.spv.h"
#include "droplet_mt.spv.h"
#include "droplet_resolve.spv.h"
#include "droplet_snap.spv.h"

/* Loop iterations one invocation may run per pass on CPU devices (lavapipe
 * stops every loop of an invocation after 65535, see droplet_lague.comp). */
#define CPU_LOOP_BUDGET 60000

/* Workgroups per dispatch: the least maxComputeWorkGroupCount[0] allows. */
#define MAX_GROUPS 65535u

/* A chunk of batches goes to the device in one submission: enough batches
 * that the submit and wait cost nothing next to the work, at most about
 * this many droplets, so that a cancel (SIGINT) is seen within a fraction
 * of a second on a GPU and no submission runs into a display watchdog.  On
 * CPU devices, where a batch takes seconds, one batch per submission. */
#define CHUNK_DROPLETS (1 << 18)

/* Layouts shared with droplet_lague.comp (std430). */
typedef struct vkd_start {
    int32_t bx, by;
    float lx, ly;
    float water;              /* Lague: start water; particle: start volume (rain map) */
} vkd_start;

typedef struct vkd_job {
    uint32_t first, count, slot, pad;
} vkd_job;

typedef struct vkd_block {
    float eroded, eroded_c, deposited, deposited_c;
    float left_map, left_map_c, water_left, water_left_c;
    uint32_t steps_lo, steps_hi, next, live;
    int32_t bx, by, it, pad;
    float lx, ly, lx0, ly0;
    float dx, dy, speed, water;
    float sed, pad1, pad2, pad3;
} vkd_block;

typedef struct vkd_push {
    int32_t width, height, lifetime, radius;
    float inertia, grad_k, cap_k, min_cap;
    float min_slope, erode_speed, deposit_speed, keep_water;
    float gravity, init_water, init_speed, area_k;
    uint32_t flags, job0, njobs, steps_per_pass;
} vkd_push;

/* droplet_mt.comp's push constants: the same size and the same last four
 * words as vkd_push. */
typedef struct vkd_push_mt {
    int32_t width, height, max_distance, max_steps;
    float dt, inv_density, friction_keep, rate;
    float evap_keep, min_volume, vscale, area_k;
    int32_t radius;
    float pad2, pad3, pad4;
    uint32_t flags, job0, njobs, steps_per_pass;
} vkd_push_mt;

_Static_assert(sizeof(vkd_push_mt) == sizeof(vkd_push), "push constant blocks differ");

enum { F_FLOW = 1, F_DEP = 2, F_WALL = 4, F_ERODE = 8, F_DMASK = 16, F_WEAR = 32 };

/* B_ERODE and B_DMASK: the control maps' per-cell erosion and deposit
 * shares (er_dctx.ctl_erode, ctl_mask), one word when absent. */
enum { B_HEIGHT, B_FLOW, B_DEP, B_MASK, B_BRUSH, B_START, B_JOB, B_BLOCK, B_ERODE, B_DMASK,
       B_WEAR, B_COUNT };

/* Sizes of one run's buffers, worked out before anything is created. */
typedef struct vkd_plan {
    int64_t size;             /* [cells] block side */
    int64_t batch;            /* droplets per batch */
    int64_t max_blocks;       /* blocks per batch at most */
    uint32_t chunk_batches;   /* batches per submission */
    size_t mask_words;        /* 32-bit words of the packed mask (1 without walls) */
    VkDeviceSize sizes[B_COUNT + 1]; /* bytes of each buffer, then the staging buffer */
} vkd_plan;

/* Everything one run owns on the device. */
typedef struct vkd_run {
    er_vk_ctx *vk;
    er_vk_buffer b[B_COUNT];
    er_vk_buffer staging;     /* host-visible, for uploads and the read-back */
    er_vk_pipeline pl;
} vkd_run;

static void run_free(vkd_run *R)
{
    if (!R->vk)
        return;
    er_vk_pipeline_free(R->vk, &R->pl);
    for (int i = 0; i < B_COUNT; i++)
        er_vk_buffer_free(R->vk, &R->b[i]);
    er_vk_buffer_free(R->vk, &R->staging);
}

/* Device writes visible to the host after the fence (per-block sums, the
 * read-back). */
static void host_barrier(er_vk_ctx *vk)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vkCmdPipelineBarrier(vk->cmd,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Copies `bytes` between host memory and device buffer `b` through the
 * staging buffer (which holds at least one layer): up when `up`. */
static er_status transfer(vkd_run *R, er_vk_buffer *b, void *host, size_t bytes, int up,
                          er_error *err)
{
    er_status st = er_vk_cmd_begin(R->vk, err);
    if (st)
        return st;
    if (up) {
        memcpy(R->staging.map, host, bytes);
        er_vk_cmd_copy(R->vk, &R->staging, b, bytes);
    } else {
        er_vk_cmd_barrier(R->vk);
        er_vk_cmd_copy(R->vk, b, &R->staging, bytes);
        host_barrier(R->vk);
    }
    st = er_vk_cmd_submit(R->vk, err);
    if (!st && !up)
        memcpy(host, R->staging.map, bytes);
    return st;
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
    int nbatch;               /* batches in it */
    int njob[CHUNK_BATCHES][4]; /* jobs per (batch, colour) dispatch */
    int job0[CHUNK_BATCHES][4]; /* their first job */
    int most[CHUNK_BATCHES][4]; /* droplets of the busiest block of each */
    int nblocks[CHUNK_BATCHES]; /* blocks of each batch (acc slots used) */
    double water[CHUNK_BATCHES]; /* each batch's started water under a rain map,
                                    summed on the host as the CPU sums it */
} chunk;

/* What the batch loop reads: the run, its device plan and constants. */
typedef struct vkd_loop {
    const er_plan *plan;
    const er_droplet_setup *s;
    const vkd_plan *pl;
    const vkd_push *base;     /* push constants but the job range */
    uint64_t calls;           /* shader step calls a droplet takes at most */
} vkd_loop;

/* Draws batch b (droplets lo .. lo+n-1, er_droplet_batch_draw as the CPU
 * path) and appends its start records and per-block jobs to the chunk
 * buffers (at *nstart and *njob; acc slots from slot0), a colour's jobs
 * in block order. */
static void prepare_batch(const er_droplet_setup *s, uint64_t seed, int size, int64_t b,
                          int64_t lo, int n, er_droplet_batch *bt, vkd_start *starts,
                          uint32_t *nstart, vkd_job *jobs, uint32_t *njob, uint32_t slot0,
                          int job0[4], int count[4], int most[4], int *nblocks)
{
    const er_dctx *c = &s->ctx;
    er_droplet_batch_draw(c, seed, size, b, lo, n, bt);
    *nblocks = er_blocking_count(&bt->bl);
    for (int col = 0; col < 4; col++) {
        job0[col] = (int)*njob;
        most[col] = 0;
        for (int k = bt->colour_start[col]; k < bt->colour_start[col + 1]; k++) {
            int block = bt->colour_blocks[k];
            uint32_t first = *nstart;
            for (int j = bt->start[block]; j < bt->start[block + 1]; j++) {
                int i = bt->order[j];
                if (!bt->ok[i])
                    continue;
                if (c->variant == ER_DROPLET_LAGUE) {
                    er_lague_state st;
                    er_lague_begin(c, &st, bt->sx[i], bt->sy[i], NULL);
                    starts[*nstart] = (vkd_start){st.bx, st.by, st.lx, st.ly, st.water};
                } else {
                    /* The particle's cell and its offset in the cell. */
                    int cx = (int)bt->sx[i], cy = (int)bt->sy[i];
                    starts[*nstart] = (vkd_start){cx, cy, (float)(bt->sx[i] - cx),
                                                  (float)(bt->sy[i] - cy),
                                                  er_start_rain(c, bt->sx[i], bt->sy[i])};
                }
                (*nstart)++;
            }
            if (*nstart > first) {
                uint32_t m = *nstart - first;
                jobs[(*njob)++] = (vkd_job){first, m, slot0 + (uint32_t)block, 0};
                most[col] = (int)m > most[col] ? (int)m : most[col];
            }
        }
        count[col] = (int)*njob - job0[col];
    }
}

static void acc_add_block(er_dacc *sum, const vkd_block *a)
{
    sum->eroded += (double)a->eroded - (double)a->eroded_c;
    sum->deposited += (double)a->deposited - (double)a->deposited_c;
    sum->left_map += (double)a->left_map - (double)a->left_map_c;
    sum->water_left += (double)a->water_left - (double)a->water_left_c;
    sum->steps += (int64_t)((uint64_t)a->steps_hi << 32 | a->steps_lo);
}

/* Seconds of work a submission of a cut chunk aims at: a cancel or a
 * signal's checkpoint then waits about that long, and the fence waits
 * (some 0.1 ms each) cost nothing beside it. */
#define CUT_TARGET_S 0.2

/* A chunk cut into several submissions (CPU devices, where one batch
 * takes seconds): after a dispatch (not the last), once the dispatches
 * recorded since the last cut should take CUT_TARGET_S at the measured
 * time per dispatch, the recorded work is submitted and the driver asked
 * whether to stop (er_drive_poll).  A dispatch ends between two droplet
 * steps (the state lives in the buffers), so the cuts change nothing. */
typedef struct vkd_split {
    er_vk_ctx *vk;
    er_drive *d;
    int64_t b;                /* the boundary the advance began at */
    uint64_t done, total;     /* dispatches recorded, of the chunk */
    uint64_t pending;         /* recorded since the last cut */
    double *per_dispatch;     /* [s] measured (the run's) */
    int every;                /* cut after every dispatch (a test's knob) */
    int stopped;              /* the driver said to stop: back to b */
    er_status st;
    er_error *err;
} vkd_split;

/* After a dispatch: cuts there when due (sp non-NULL, not the last one);
 * 1 when the recording must end (stopped, or a failure in sp->st). */
static int cut(vkd_split *sp)
{
    if (!sp || ++sp->done >= sp->total)
        return 0;
    if ((double)++sp->pending * *sp->per_dispatch < CUT_TARGET_S && !sp->every)
        return 0;
    const double t0 = er_vk_now();
    if ((sp->st = er_vk_cmd_submit(sp->vk, sp->err)))
        return 1;
    *sp->per_dispatch = (er_vk_now() - t0) / (double)sp->pending;
    sp->pending = 0;
    if (er_drive_poll(sp->d, sp->b, (double)sp->done / (double)sp->total)) {
        sp->stopped = 1;
        return 1;
    }
    if ((sp->st = er_vk_cmd_begin(sp->vk, sp->err)))
        return 1;
    er_vk_cmd_barrier(sp->vk);
    return 0;
}

/* The passes colour col of batch k takes: each droplet takes at most
 * L->calls calls of the step, steps_per_pass of them a pass. */
static uint64_t colour_passes(const vkd_loop *L, const chunk *ch, int k, int col)
{
    uint64_t calls = (uint64_t)ch->most[k][col] * L->calls;
    return (calls + L->base->steps_per_pass - 1) / L->base->steps_per_pass;
}

/* The dispatches record_chunk records for ch. */
static uint64_t chunk_dispatches(const vkd_loop *L, const chunk *ch)
{
    uint64_t n = 0;
    for (int k = 0; k < ch->nbatch; k++)
        for (int col = 0; col < 4; col++)
            if (ch->njob[k][col] > 0)
                n += colour_passes(L, ch, k, col) *
                     (((uint64_t)ch->njob[k][col] + MAX_GROUPS - 1) / MAX_GROUPS);
    return n;
}

/* Records the chunk's dispatches: per batch the four colours in turn, each
 * in as many passes as its busiest block needs, barriers between them;
 * cut into submissions where sp says (NULL: one).  0, or 1 when a cut
 * ended it (sp->stopped or sp->st). */
static int record_chunk(vkd_run *R, const vkd_loop *L, const chunk *ch, vkd_split *sp)
{
    er_vk_ctx *vk = R->vk;
    const vkd_push *base = L->base;
    /* Uploads and fills of earlier submissions before the first dispatch. */
    er_vk_cmd_barrier(vk);
    for (int k = 0; k < ch->nbatch; k++)
        for (int col = 0; col < 4; col++) {
            if (ch->njob[k][col] == 0)
                continue;
            uint64_t passes = colour_passes(L, ch, k, col);
            for (uint64_t q = 0; q < passes; q++)
                for (uint32_t j0 = 0; j0 < (uint32_t)ch->njob[k][col]; j0 += MAX_GROUPS) {
                    vkd_push pc = *base;
                    uint32_t left = (uint32_t)ch->njob[k][col] - j0;
                    pc.job0 = (uint32_t)ch->job0[k][col] + j0;
                    pc.njobs = left < MAX_GROUPS ? left : MAX_GROUPS;
                    er_vk_cmd_dispatch(vk, &R->pl, 0, &pc, pc.njobs, 1);
                    /* The next pass or colour reads what this one wrote. */
                    er_vk_cmd_barrier(vk);
                    if (cut(sp))
                        return 1;
                }
        }
    /* The per-block sums are read on the host after the fence. */
    host_barrier(vk);
    return 0;
}

/* Reads the device's terrain and layers back into the host arrays s
 * points at (the caller's terrain and layers). */
static er_status read_back(vkd_run *R, const er_droplet_setup *s, er_error *err)
{
    const er_dctx *c = &s->ctx;
    size_t bytes = s->cells * sizeof(float);
    er_status st = transfer(R, &R->b[B_HEIGHT], c->height_m, bytes, 0, err);
    if (!st && c->flow)
        st = transfer(R, &R->b[B_FLOW], c->flow, bytes, 0, err);
    if (!st && c->deposit)
        st = transfer(R, &R->b[B_DEP], c->deposit, bytes, 0, err);
    if (!st && c->wear)
        st = transfer(R, &R->b[B_WEAR], c->wear, bytes, 0, err);
    return st;
}

/* Plans the run set up in *s and checks it fits the device's limits. */
static er_status plan_run(er_vk_ctx *vk, const er_droplet_setup *s, int64_t size, int64_t batch,
                          uint32_t chunk_asked, vkd_plan *pl, er_error *err)
{
    const er_dctx *c = &s->ctx;
    size_t cells = s->cells, bytes = cells * sizeof(float);
    memset(pl, 0, sizeof *pl);
    pl->size = size;
    /* The blocks lie on the world (a window sees the world's grid). */
    pl->max_blocks = er_droplet_max_blocks(c, (int)size);
    pl->batch = batch > s->count ? s->count : batch;
    if (pl->batch < 1)
        pl->batch = 1;
    if (pl->max_blocks > INT_MAX / 2 || pl->batch > INT_MAX / 2 || cells > UINT32_MAX)
        return er_fail(err, ER_ENOMEM, "droplet: too many blocks or droplets per batch");
    /* Batches per submission: CHUNK_DROPLETS droplets, at least one batch;
     * a single batch when that is what fits the device. */
    const VkDeviceSize range = vk->props.limits.maxStorageBufferRange;
    int64_t cb = CHUNK_DROPLETS / pl->batch;
    pl->chunk_batches = (uint32_t)(cb < 1 ? 1 : cb > CHUNK_BATCHES ? CHUNK_BATCHES : cb);
    if (vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
        pl->chunk_batches = 1;
    if (chunk_asked > 0)
        pl->chunk_batches = chunk_asked < CHUNK_BATCHES ? chunk_asked : CHUNK_BATCHES;
    if ((VkDeviceSize)pl->chunk_batches * (VkDeviceSize)pl->batch * sizeof(vkd_start) > range ||
        (VkDeviceSize)pl->chunk_batches * (VkDeviceSize)pl->max_blocks * sizeof(vkd_block) > range)
        pl->chunk_batches = 1;
    size_t n_start = (size_t)pl->chunk_batches * (size_t)pl->batch;
    size_t n_job = (size_t)pl->chunk_batches * (size_t)pl->max_blocks;
    size_t side = (size_t)c->brush_side;
    pl->mask_words = c->wall ? (cells + 3) / 4 : 1;
    /* Unwanted layers and an absent mask get a one-word buffer. */
    pl->sizes[B_HEIGHT] = bytes;
    pl->sizes[B_FLOW] = c->flow ? bytes : 4;
    pl->sizes[B_DEP] = c->deposit ? bytes : 4;
    pl->sizes[B_MASK] = pl->mask_words * 4;
    pl->sizes[B_BRUSH] = side > 0 ? side * side * sizeof(float) : 4;
    pl->sizes[B_START] = n_start * sizeof(vkd_start);
    pl->sizes[B_JOB] = n_job * sizeof(vkd_job);
    pl->sizes[B_BLOCK] = n_job * sizeof(vkd_block);
    pl->sizes[B_ERODE] = c->ctl_erode ? bytes : 4;
    pl->sizes[B_DMASK] = c->ctl_mask ? bytes : 4;
    pl->sizes[B_WEAR] = c->wear ? bytes : 4;
    /* Staging carries the layers, the mask and the brush: the largest
     * (the brush on maps of fewer than side^2 cells). */
    pl->sizes[B_COUNT] = bytes;
    for (int i = B_MASK; i <= B_BRUSH; i++)
        if (pl->sizes[i] > pl->sizes[B_COUNT])
            pl->sizes[B_COUNT] = pl->sizes[i];
    char what[64];
    snprintf(what, sizeof what, "a %dx%d map", c->width, c->height);
    return er_vk_check_sizes(vk, pl->sizes, B_COUNT + 1, what, err);
}

/* The snapshot schedule's checks (below). */
static er_status snap_features(const er_vk_ctx *vk, er_error *err);
static er_status snap_sizes(er_vk_ctx *vk, const er_droplet_setup *s, int64_t batch,
                            VkDeviceSize *sz, er_error *err);
#define SNAP_BUFFERS 18

er_status er_vk_droplet_check(er_vk_ctx *vk, const er_plan *plan, const er_terrain *t,
                              er_error *err)
{
    er_terrain tt = *t;
    er_droplet_setup s;
    vkd_plan pl;
    er_status st = er_droplet_prepare(plan, &tt, NULL, &s, err);
    if (!st && s.count > 0 && plan->p.droplet.schedule == ER_DROPLET_SNAPSHOT) {
        VkDeviceSize sz[SNAP_BUFFERS + 1];
        st = snap_features(vk, err);
        if (!st)
            st = snap_sizes(vk, &s, plan->own.droplet.batch > s.count ? s.count : plan->own.droplet.batch, sz, err);
    } else if (!st && s.count > 0)
        st = plan_run(vk, &s, plan->own.droplet.block_side, plan->own.droplet.batch, 0, &pl, err);
    er_droplet_setup_free(&s);
    return st;
}

/* Droplet steps per block and dispatch: `asked`, or with 0 unlimited on
 * GPUs and lavapipe's loop budget on CPU devices, each step costing at
 * most 2 side^2 + 5 loop iterations (droplet_lague.comp) or 2 side^2 + 11
 * (droplet_mt.comp: a step and the brush where the particle stops); a few
 * more for margin. */
static uint32_t steps_per_pass(const er_vk_ctx *vk, const er_dctx *c, uint32_t asked)
{
    if (asked || vk->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU)
        return asked ? asked : UINT32_MAX;
    int64_t side = c->brush_side;
    int64_t cost = 2 * side * side + (c->variant == ER_DROPLET_LAGUE ? 8 : 16);
    return (uint32_t)(CPU_LOOP_BUDGET / cost > 1 ? CPU_LOOP_BUDGET / cost : 1);
}

/* The push constants of every dispatch but the job range; *calls receives
 * the step calls a droplet takes at most. */
static vkd_push make_push(const er_dctx *c, uint32_t steps, uint64_t *calls)
{
    uint32_t flags = (c->flow ? F_FLOW : 0u) | (c->deposit ? F_DEP : 0u) | (c->wall ? F_WALL : 0u) |
                     (c->ctl_erode ? F_ERODE : 0u) | (c->ctl_mask ? F_DMASK : 0u) |
                     (c->wear ? F_WEAR : 0u);
    vkd_push base = {
        .width = c->width, .height = c->height, .lifetime = c->lifetime, .radius = c->radius,
        .inertia = c->inertia, .grad_k = c->grad_k, .cap_k = c->cap_k, .min_cap = c->min_cap,
        .min_slope = c->min_slope, .erode_speed = c->erode_speed,
        .deposit_speed = c->deposit_speed, .keep_water = c->keep_water, .gravity = c->gravity,
        .init_water = c->init_water, .init_speed = c->init_speed, .area_k = c->area_k,
        .flags = flags, .steps_per_pass = steps,
    };
    *calls = (uint64_t)c->lifetime + 1;
    if (c->variant != ER_DROPLET_LAGUE) {
        vkd_push_mt mt = {
            .width = c->width, .height = c->height, .max_distance = c->mt_max_distance,
            .max_steps = (int32_t)c->mt_max_steps, .dt = c->mt_dt,
            .inv_density = c->mt_inv_density, .friction_keep = c->mt_friction_keep,
            .rate = c->mt_rate, .evap_keep = c->mt_evap_keep, .min_volume = c->mt_min_volume,
            .vscale = c->mt_vscale, .area_k = c->area_k, .radius = c->radius, .flags = flags,
            .steps_per_pass = steps,
        };
        memcpy(&base, &mt, sizeof base);
        *calls = (uint64_t)c->mt_max_steps + 1;
    }
    return base;
}

/* Creates the run's buffers and pipeline and uploads the terrain, brush
 * and wall mask; the layers are uploaded when `layers_up` (a resumed
 * state), else zeroed. */
static er_status device_setup(vkd_run *R, er_vk_ctx *vk, const er_droplet_setup *s,
                              const vkd_plan *pl, int layers_up, er_error *err)
{
    static const char *const names[B_COUNT] = {"height", "flow", "deposit", "wall mask",
                                               "brush", "droplet starts", "block jobs",
                                               "block states", "erosion shares",
                                               "deposit mask", "wear"};
    const er_dctx *c = &s->ctx;
    const size_t bytes = s->cells * sizeof(float), side = (size_t)c->brush_side;
    const int lague = c->variant == ER_DROPLET_LAGUE;
    er_status st = ER_OK;
    R->vk = vk;
    for (int i = 0; i < B_COUNT && !st; i++)
        st = er_vk_buffer_new(vk, pl->sizes[i],
                              i >= B_START && i <= B_BLOCK ? ER_VK_HOST : ER_VK_DEVICE,
                              &R->b[i], names[i], err);
    if (!st)
        st = er_vk_buffer_new(vk, pl->sizes[B_COUNT], ER_VK_HOST, &R->staging, "staging", err);
    if (!st)
        st = lague ? er_vk_pipeline_new(vk, er_spv_droplet_lague, sizeof er_spv_droplet_lague,
                                        B_COUNT, sizeof(vkd_push), 1, &R->pl, err)
                   : er_vk_pipeline_new(vk, er_spv_droplet_mt, sizeof er_spv_droplet_mt, B_COUNT,
                                        sizeof(vkd_push), 1, &R->pl, err);
    if (st)
        return st;
    const er_vk_buffer *bufs[B_COUNT];
    for (int i = 0; i < B_COUNT; i++)
        bufs[i] = &R->b[i];
    er_vk_pipeline_bind(vk, &R->pl, 0, bufs);

    st = transfer(R, &R->b[B_HEIGHT], c->height_m, bytes, 1, err);
    if (!st)
        st = transfer(R, &R->b[B_BRUSH], (void *)(uintptr_t)c->brush_w,
                      side * side * sizeof(float), 1, err);
    if (!st && c->wall) {
        size_t words;
        uint32_t *mask = pack_mask(c, s->cells, &words);
        st = mask ? transfer(R, &R->b[B_MASK], mask, words * 4, 1, err)
                  : er_fail(err, ER_ENOMEM, "droplet: out of memory for the wall mask");
        free(mask);
    }
    if (!st && c->ctl_erode)
        st = transfer(R, &R->b[B_ERODE], (void *)(uintptr_t)c->ctl_erode, bytes, 1, err);
    if (!st && c->ctl_mask)
        st = transfer(R, &R->b[B_DMASK], (void *)(uintptr_t)c->ctl_mask, bytes, 1, err);
    if (!st && layers_up && c->flow)
        st = transfer(R, &R->b[B_FLOW], c->flow, bytes, 1, err);
    if (!st && layers_up && c->deposit)
        st = transfer(R, &R->b[B_DEP], c->deposit, bytes, 1, err);
    if (!st && layers_up && c->wear)
        st = transfer(R, &R->b[B_WEAR], c->wear, bytes, 1, err);
    if (st || layers_up)
        return st;
    if ((st = er_vk_cmd_begin(vk, err)))
        return st;
    er_vk_cmd_fill(vk, &R->b[B_FLOW], 0);
    er_vk_cmd_fill(vk, &R->b[B_DEP], 0);
    er_vk_cmd_fill(vk, &R->b[B_WEAR], 0);
    return er_vk_cmd_submit(vk, err);
}

/* The test hook's choices (vulkan.h); 0 = automatic. */
typedef struct vkd_knobs {
    uint32_t steps;           /* droplet steps per block and dispatch */
    uint32_t chunk;           /* batches per submission */
    int cut_all;              /* CPU devices: a cut after every dispatch */
} vkd_knobs;

/* ---------------------------------------------------------------------
 * The snapshot schedule (droplet.schedule "snapshot"): one invocation per
 * droplet of a batch (droplet_snap.comp) reading the batch start's heights
 * and adding its changes into int64 fixed-point sums, then one invocation
 * per cell applying them (droplet_resolve.comp); core/droplet/snapshot.c
 * is the CPU's, operation for operation.  Each batch runs its droplets
 * twice: a count pass (F_COUNT: the taps per cell, their lowest stop and
 * the taps that may lay a deposit, the droplet states in the second half
 * of the state buffer), then the main pass taking and laying shares.  One batch per submission: the starts and the
 * zeroed droplet states go up through host-visible buffers, the
 * per-droplet sums and the defect count come back the same way and are
 * added in droplet order.
 * --------------------------------------------------------------------- */

/* droplet_snap.comp's bindings 0..12, then the resolve's other buffers. */
enum { S_SNAP, S_FLOWACC, S_DEPACC, S_MASK, S_BRUSH, S_START, S_EROACC, S_STATE, S_ERODE,
       S_DMASK, S_STOP, S_TAPS, S_DTAPS, S_HEIGHT, S_FLOW, S_DEP, S_WEAR, S_TOTALS, S_COUNT };
_Static_assert((int)S_COUNT == SNAP_BUFFERS, "snapshot buffer count");

/* Invocations per workgroup of both shaders (local_size_x). */
#define SNAP_GROUP 64u
/* droplet_snap.comp's count pass */
#define F_COUNT 64u
#define SNAP_BINDINGS 13
/* droplet_resolve.comp's bindings */
#define RESOLVE_BINDINGS 11

static er_vk_snap_stats snap_stats;

void er_vk_droplet_snap_stats(er_vk_snap_stats *out)
{
    *out = snap_stats;
}

typedef struct vks_push {
    vkd_push base;
    float h_scale, w_scale;
    uint32_t state0;          /* first droplet state of the pass */
} vks_push;

typedef struct vks_push_resolve {
    uint32_t cells, flags;
    float h_scale, w_scale;
    int32_t width, height;
} vks_push_resolve;

typedef struct vks_run {
    er_vk_ctx *vk;
    er_vk_buffer b[S_COUNT];
    er_vk_buffer staging;
    er_vk_pipeline snap, resolve;
    er_dsink k;               /* the scales only (no host arrays) */
    int64_t batch;
} vks_run;

static void snap_free(vks_run *R)
{
    if (!R->vk)
        return;
    er_vk_pipeline_free(R->vk, &R->snap);
    er_vk_pipeline_free(R->vk, &R->resolve);
    for (int i = 0; i < S_COUNT; i++)
        er_vk_buffer_free(R->vk, &R->b[i]);
    er_vk_buffer_free(R->vk, &R->staging);
}

/* The features the two shaders need, or one line saying which is missing. */
static er_status snap_features(const er_vk_ctx *vk, er_error *err)
{
    const er_vk_device_info *d = &vk->info;
    if (d->has_int64 && d->has_float64 && d->has_atomic_int64)
        return ER_OK;
    return er_fail(err, ER_EUNSUPPORTED,
                   "vulkan: device %d (%s) lacks %s, which droplet.schedule \"snapshot\" needs",
                   d->index, d->name,
                   !d->has_atomic_int64 ? "shaderBufferInt64Atomics"
                   : !d->has_int64      ? "shaderInt64"
                                        : "shaderFloat64");
}

/* Buffer sizes of a snapshot run; checked against the device's limits. */
static er_status snap_sizes(er_vk_ctx *vk, const er_droplet_setup *s, int64_t batch,
                            VkDeviceSize *sz, er_error *err)
{
    const er_dctx *c = &s->ctx;
    const VkDeviceSize f4 = s->cells * sizeof(float), i8 = s->cells * sizeof(int64_t);
    const VkDeviceSize side = (VkDeviceSize)c->brush_side;
    sz[S_SNAP] = sz[S_HEIGHT] = f4;
    sz[S_FLOWACC] = sz[S_FLOW] = c->flow ? i8 : 8;
    sz[S_FLOW] = c->flow ? f4 : 4;
    sz[S_DEPACC] = sz[S_EROACC] = i8;
    sz[S_MASK] = c->wall ? (s->cells + 3) / 4 * 4 : 4;
    sz[S_BRUSH] = side * side * sizeof(float);
    sz[S_START] = (VkDeviceSize)batch * sizeof(vkd_start);
    sz[S_STATE] = 2 * (VkDeviceSize)batch * sizeof(vkd_block);
    sz[S_ERODE] = c->ctl_erode ? f4 : 4;
    sz[S_DMASK] = c->ctl_mask ? f4 : 4;
    sz[S_STOP] = sz[S_TAPS] = s->cells * sizeof(int32_t);
    sz[S_DTAPS] = 2 * s->cells * sizeof(int32_t);
    sz[S_DEP] = c->deposit ? f4 : 4;
    sz[S_WEAR] = c->wear ? f4 : 4;
    sz[S_TOTALS] = sizeof(int64_t);
    sz[S_COUNT] = f4 > sz[S_MASK] ? f4 : sz[S_MASK];
    if (sz[S_BRUSH] > sz[S_COUNT])
        sz[S_COUNT] = sz[S_BRUSH];
    char what[64];
    snprintf(what, sizeof what, "a %dx%d map", c->width, c->height);
    return er_vk_check_sizes(vk, sz, S_COUNT + 1, what, err);
}

/* Copies between a host array and device buffer b through staging. */
static er_status snap_transfer(vks_run *R, er_vk_buffer *b, void *host, size_t bytes, int up,
                               er_error *err)
{
    vkd_run T = {.vk = R->vk, .staging = R->staging};
    return transfer(&T, b, host, bytes, up, err);
}

/* Creates the buffers and pipelines, uploads the terrain, brush, masks
 * and (a resumed run's) layers, or zeroes the layers. */
static er_status snap_setup(vks_run *R, er_vk_ctx *vk, const er_droplet_setup *s,
                            const VkDeviceSize *sz, int layers_up, er_error *err)
{
    static const char *const names[S_COUNT] = {
        "snapshot", "flow sums", "deposit sums", "wall mask", "brush", "droplet starts",
        "erosion sums", "droplet states", "erosion shares", "deposit mask", "lowest stops",
        "tap counts", "deposit tap counts", "height", "flow", "deposit", "wear", "totals"};
    const er_dctx *c = &s->ctx;
    const size_t bytes = s->cells * sizeof(float);
    er_status st = ER_OK;
    R->vk = vk;
    for (int i = 0; i < S_COUNT && !st; i++) {
        int host = i == S_START || i == S_STATE || i == S_TOTALS;
        st = er_vk_buffer_new(vk, sz[i], host ? ER_VK_HOST : ER_VK_DEVICE, &R->b[i], names[i], err);
    }
    if (!st)
        st = er_vk_buffer_new(vk, sz[S_COUNT], ER_VK_HOST, &R->staging, "staging", err);
    if (!st)
        st = er_vk_pipeline_new(vk, er_spv_droplet_snap, sizeof er_spv_droplet_snap, SNAP_BINDINGS,
                                sizeof(vks_push), 1, &R->snap, err);
    if (!st)
        st = er_vk_pipeline_new(vk, er_spv_droplet_resolve, sizeof er_spv_droplet_resolve,
                                RESOLVE_BINDINGS, sizeof(vks_push_resolve), 1, &R->resolve, err);
    if (st)
        return st;
    const er_vk_buffer *sb[SNAP_BINDINGS], *rb[RESOLVE_BINDINGS];
    for (int i = 0; i < SNAP_BINDINGS; i++)
        sb[i] = &R->b[i];
    const int ri[RESOLVE_BINDINGS] = {S_HEIGHT, S_FLOW,   S_DEP,  S_WEAR,   S_SNAP, S_FLOWACC,
                                      S_DEPACC, S_EROACC, S_STOP, S_TOTALS, S_MASK};
    for (int i = 0; i < RESOLVE_BINDINGS; i++)
        rb[i] = &R->b[ri[i]];
    er_vk_pipeline_bind(vk, &R->snap, 0, sb);
    er_vk_pipeline_bind(vk, &R->resolve, 0, rb);

    st = snap_transfer(R, &R->b[S_HEIGHT], c->height_m, bytes, 1, err);
    if (!st)
        st = snap_transfer(R, &R->b[S_BRUSH], (void *)(uintptr_t)c->brush_w, sz[S_BRUSH], 1, err);
    if (!st && c->wall) {
        size_t words;
        uint32_t *mask = pack_mask(c, s->cells, &words);
        st = mask ? snap_transfer(R, &R->b[S_MASK], mask, words * 4, 1, err)
                  : er_fail(err, ER_ENOMEM, "droplet: out of memory for the wall mask");
        free(mask);
    }
    if (!st && c->ctl_erode)
        st = snap_transfer(R, &R->b[S_ERODE], (void *)(uintptr_t)c->ctl_erode, bytes, 1, err);
    if (!st && c->ctl_mask)
        st = snap_transfer(R, &R->b[S_DMASK], (void *)(uintptr_t)c->ctl_mask, bytes, 1, err);
    float *const layer[3] = {c->flow, c->deposit, c->wear};
    const int lb[3] = {S_FLOW, S_DEP, S_WEAR};
    for (int i = 0; i < 3 && !st; i++)
        if (layer[i])
            st = layers_up ? snap_transfer(R, &R->b[lb[i]], layer[i], bytes, 1, err) : ER_OK;
    if (st || layers_up)
        return st;
    if ((st = er_vk_cmd_begin(vk, err)))
        return st;
    for (int i = 0; i < 3; i++)
        er_vk_cmd_fill(vk, &R->b[lb[i]], 0);
    return er_vk_cmd_submit(vk, err);
}

/* Reads the heights and layers back into the host arrays. */
static er_status snap_read_back(vks_run *R, const er_droplet_setup *s, er_error *err)
{
    const er_dctx *c = &s->ctx;
    const size_t bytes = s->cells * sizeof(float);
    float *const host[4] = {c->height_m, c->flow, c->deposit, c->wear};
    const int bi[4] = {S_HEIGHT, S_FLOW, S_DEP, S_WEAR};
    er_status st = ER_OK;
    for (int i = 0; i < 4 && !st; i++)
        if (host[i])
            st = snap_transfer(R, &R->b[bi[i]], host[i], bytes, 0, err);
    return st;
}

/* The passes a snapshot droplet pass takes: calls (the most steps a
 * droplet takes) in passes of at most base->steps_per_pass steps. */
static uint64_t snap_passes(const vks_push *base, uint64_t calls)
{
    return (calls + base->base.steps_per_pass - 1) / base->base.steps_per_pass;
}

/* Records the n droplets of a batch in its passes, as the count pass or
 * the main one, cut where sp says (record_chunk); 1 when a cut ended it. */
static int snap_droplets(vks_run *R, const vks_push *base, uint64_t calls, uint32_t n,
                         int counting, vkd_split *sp)
{
    er_vk_ctx *vk = R->vk;
    uint64_t passes = snap_passes(base, calls);
    const uint32_t per = MAX_GROUPS * SNAP_GROUP;
    for (uint64_t q = 0; q < passes; q++) {
        for (uint32_t j0 = 0; j0 < n; j0 += per) {
            vks_push pc = *base;
            if (counting) {
                pc.base.flags |= F_COUNT;
                pc.state0 = (uint32_t)R->batch;
            }
            pc.base.job0 = j0;
            pc.base.njobs = n - j0 < per ? n - j0 : per;
            snap_stats.dispatches++;
            if (pc.base.njobs > snap_stats.max_invocations)
                snap_stats.max_invocations = pc.base.njobs;
            er_vk_cmd_dispatch(vk, &R->snap, 0, &pc, (pc.base.njobs + SNAP_GROUP - 1) / SNAP_GROUP, 1);
        }
        er_vk_cmd_barrier(vk);
        if (cut(sp))
            return 1;
    }
    return 0;
}

/* Records one batch of n droplets: the snapshot and zeroed sums, the
 * count pass, the main pass, the resolve; cut where sp says (NULL: one
 * submission).  A cut that stops comes before the resolve, the only pass
 * that writes the terrain and layers, so the state stays at the batch's
 * start.  1 when a cut ended it (sp->stopped or sp->st). */
static int snap_record(vks_run *R, const er_droplet_setup *s, const vks_push *base,
                       uint64_t calls, uint32_t n, vkd_split *sp)
{
    er_vk_ctx *vk = R->vk;
    er_vk_cmd_barrier(vk);
    er_vk_cmd_copy(vk, &R->b[S_HEIGHT], &R->b[S_SNAP], s->cells * sizeof(float));
    er_vk_cmd_fill(vk, &R->b[S_FLOWACC], 0);
    er_vk_cmd_fill(vk, &R->b[S_DEPACC], 0);
    er_vk_cmd_fill(vk, &R->b[S_EROACC], 0);
    er_vk_cmd_fill(vk, &R->b[S_STOP], 0x7fffffffu);
    er_vk_cmd_fill(vk, &R->b[S_TAPS], 0);
    er_vk_cmd_fill(vk, &R->b[S_DTAPS], 0);
    er_vk_cmd_fill(vk, &R->b[S_TOTALS], 0);
    er_vk_cmd_barrier(vk);
    if (sp)
        sp->total = 2 * snap_passes(base, calls) + 1;
    if (snap_droplets(R, base, calls, n, 1, sp) || snap_droplets(R, base, calls, n, 0, sp))
        return 1;
    vks_push_resolve rp = {(uint32_t)s->cells, base->base.flags, base->h_scale, base->w_scale,
                           s->ctx.width, s->ctx.height};
    er_vk_cmd_dispatch(vk, &R->resolve, 0, &rp,
                       (uint32_t)((s->cells + SNAP_GROUP - 1) / SNAP_GROUP), 1);
    host_barrier(vk);
    return 0;
}

/* Writes batch bt's starts and zeroed states (the main pass's and, from
 * R->batch, the count pass's) into the host-visible buffers. */
static void snap_starts(vks_run *R, const er_dctx *c, const er_droplet_batch *bt)
{
    vkd_start *starts = R->b[S_START].map;
    vkd_block *states = R->b[S_STATE].map, *counted = states + R->batch;
    memset(states, 0, (size_t)bt->n * sizeof *states);
    memset(counted, 0, (size_t)bt->n * sizeof *counted);
    for (int i = 0; i < bt->n; i++) {
        if (!bt->ok[i]) {
            states[i].next = counted[i].next = 1; /* no start: done before it begins */
            continue;
        }
        er_lague_state st;
        er_lague_begin(c, &st, bt->sx[i], bt->sy[i], NULL);
        starts[i] = (vkd_start){st.bx, st.by, st.lx, st.ly, st.water};
    }
}

/* Droplet steps per dispatch on CPU devices: lavapipe's loop budget shared
 * by a workgroup's lanes, each step at most 3 side^2 + 8 iterations (the
 * brush weight, erosion and deposit loops, all passed by every lane). */
static uint32_t snap_steps_per_pass(const er_vk_ctx *vk, const er_dctx *c, uint32_t asked)
{
    if (asked || vk->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU)
        return asked ? asked : UINT32_MAX;
    int64_t side = c->brush_side, cost = (3 * side * side + 8) * SNAP_GROUP;
    return (uint32_t)(CPU_LOOP_BUDGET / cost > 1 ? CPU_LOOP_BUDGET / cost : 1);
}


/* ---------------------------------------------------------------------
 * The run through the driver (core/drive.h): one chunk of batches (the
 * blocked schedule) or one batch (snapshot) an advance.  The device is
 * set up at the first advance, so that it receives the state the run
 * starts from (fresh, or restored on the host by load).
 * --------------------------------------------------------------------- */

/* The state buffers a chunk changes (the blocked schedule), in the order
 * of vk_drop_run.backup. */
static const int state_bufs[4] = {B_HEIGHT, B_FLOW, B_DEP, B_WEAR};

typedef struct vk_drop_run {
    er_vk_ctx *vk;
    vkd_knobs kn;
    const er_plan *plan;
    er_terrain *t;
    er_droplet_setup s;
    er_dacc sum;              /* the run's sums so far, added in batch order */
    int prepared;             /* s is set up: finish ends the run */
    int resumed;              /* load replaced the fresh state: the layers go up */
    int on_device;            /* the device's buffers are made and hold the state */
    int host_current;         /* the host arrays hold the device's state */
    int snapshot;             /* droplet.schedule "snapshot" */
    int split;                /* chunks cut into submissions (vkd_split) */
    double per_dispatch;      /* [s] a dispatch's time, measured at the cuts */
    er_vk_buffer backup[4];   /* blocked, split: the state at the chunk's start */
    /* the blocked schedule */
    vkd_run R;
    vkd_plan pl;
    vkd_push base;
    vkd_loop L;
    er_droplet_batch bt;
    chunk *ch;
    /* the snapshot schedule */
    vks_run S;
    vks_push sbase;
} vk_drop_run;

static er_status vk_init_with(vk_drop_run *r, er_vk_ctx *vk, vkd_knobs kn, const er_plan *plan,
                              er_terrain *t, const er_run_opts *o, er_error *err)
{
    r->vk = vk;
    r->kn = kn;
    r->plan = plan;
    r->t = t;
    r->snapshot = plan->p.droplet.schedule == ER_DROPLET_SNAPSHOT;
    r->host_current = 1;
    er_status st = er_droplet_prepare(plan, t, o->layers, &r->s, err);
    if (st)
        return st;
    r->prepared = 1;
    if (r->s.count == 0)
        return ER_OK;
    if (r->snapshot)
        return snap_features(vk, err);
    return plan_run(vk, &r->s, plan->own.droplet.block_side, plan->own.droplet.batch, kn.chunk,
                    &r->pl, err);
}

static er_status vk_init(void *run, void *backend, const er_plan *plan, er_terrain *t,
                         const er_run_opts *o, er_budget *bud, er_error *err)
{
    (void)bud; /* er_droplet_end fills the whole budget */
    return vk_init_with(run, backend, (vkd_knobs){0, 0, 0}, plan, t, o, err);
}

/* The test hook's backend: the device and its knobs. */
typedef struct vkd_with {
    er_vk_ctx *vk;
    vkd_knobs kn;
} vkd_with;

static er_status vk_init_knobs(void *run, void *backend, const er_plan *plan, er_terrain *t,
                               const er_run_opts *o, er_budget *bud, er_error *err)
{
    const vkd_with *w = backend;
    (void)bud;
    return vk_init_with(run, w->vk, w->kn, plan, t, o, err);
}

static er_status vk_load(void *run, const er_run_state *rs, er_budget *bud, er_error *err)
{
    vk_drop_run *r = run;
    (void)bud;
    r->resumed = 1;
    return er_droplet_restore(r->plan, r->t, &r->s, rs, &r->sum, err);
}

/* The blocked schedule's buffers, pipeline and host scratch, with the
 * host's state uploaded. */
static er_status blocked_setup(vk_drop_run *r, er_error *err)
{
    er_status st = device_setup(&r->R, r->vk, &r->s, &r->pl, r->resumed, err);
    for (int i = 0; i < 4 && !st && r->split; i++)
        st = er_vk_buffer_new(r->vk, r->pl.sizes[state_bufs[i]], ER_VK_DEVICE, &r->backup[i],
                              "state backup", err);
    if (!st)
        st = er_droplet_batch_new(&r->bt, &r->s.ctx, (int)r->plan->own.droplet.block_side,
                                  r->pl.batch, err);
    if (!st && !(r->ch = malloc(sizeof *r->ch)))
        st = er_fail(err, ER_ENOMEM, "droplet: out of memory");
    uint64_t calls;
    r->base = make_push(&r->s.ctx, steps_per_pass(r->vk, &r->s.ctx, r->kn.steps), &calls);
    r->L = (vkd_loop){r->plan, &r->s, &r->pl, &r->base, calls};
    return st;
}

static er_status snapshot_setup(vk_drop_run *r, er_error *err)
{
    const er_droplet_setup *s = &r->s;
    VkDeviceSize sz[S_COUNT + 1];
    r->S.batch = r->plan->own.droplet.batch > s->count ? s->count : r->plan->own.droplet.batch;
    snap_stats = (er_vk_snap_stats){0, 0, (uint64_t)r->S.batch};
    er_status st = snap_sizes(r->vk, s, r->S.batch, sz, err);
    if (!st)
        st = snap_setup(&r->S, r->vk, s, sz, r->resumed, err);
    if (!st)
        st = er_droplet_batch_new(&r->bt, &s->ctx, (int)r->plan->own.droplet.block_side,
                                  r->S.batch, err);
    uint64_t calls;
    er_snap_scales(r->plan, s, &r->S.k);
    r->sbase = (vks_push){make_push(&s->ctx, snap_steps_per_pass(r->vk, &s->ctx, r->kn.steps),
                                    &calls),
                          r->S.k.h_scale, r->S.k.w_scale, 0};
    r->L = (vkd_loop){r->plan, s, NULL, NULL, calls};
    return st;
}

/* Records copies between the state buffers and their backups: into the
 * backups (back = 0) or from them. */
static void backup_state(vk_drop_run *r, int back)
{
    er_vk_cmd_barrier(r->vk);
    for (int i = 0; i < 4; i++) {
        er_vk_buffer *state = &r->R.b[state_bufs[i]], *copy = &r->backup[i];
        er_vk_cmd_copy(r->vk, back ? copy : state, back ? state : copy, copy->size);
    }
    er_vk_cmd_barrier(r->vk);
}

/* After a cut that stopped: the state back to the chunk's start, boundary
 * b0, where the advance stays (er_drive_poll). */
static er_status rewind_chunk(vk_drop_run *r, int64_t b0, int64_t *to, er_error *err)
{
    er_status st = er_vk_cmd_begin(r->vk, err);
    if (st)
        return st;
    backup_state(r, 1);
    *to = b0;
    return er_vk_cmd_submit(r->vk, err);
}

/* One chunk from batch b: batches drawn on the host (er_droplet_batch_draw,
 * as the CPU path), up to pl.chunk_batches of them, fewer where the
 * driver stops it (a boundary the hooks want, a cancel), run in one
 * submission, their per-block sums added in order. */
static er_status blocked_chunk(vk_drop_run *r, int64_t b, er_drive *d, int64_t *to,
                               er_error *err)
{
    const int64_t b0 = b;
    const er_droplet_setup *s = &r->s;
    const int size = (int)r->plan->own.droplet.block_side;
    const int64_t batch = r->pl.batch;
    const size_t mt = (size_t)r->pl.max_blocks;
    chunk *ch = r->ch;
    vkd_start *starts = r->R.b[B_START].map;
    vkd_job *jobs = r->R.b[B_JOB].map;
    vkd_block *accs = r->R.b[B_BLOCK].map;
    uint32_t nstart = 0, njob = 0;
    int64_t lo = b * batch;
    ch->nbatch = 0;
    do {
        int n = (int)(s->count - lo > batch ? batch : s->count - lo);
        int k = ch->nbatch++;
        prepare_batch(s, r->plan->p.seed, size, b, lo, n, &r->bt, starts, &nstart, jobs, &njob,
                      (uint32_t)((size_t)k * mt), ch->job0[k], ch->njob[k], ch->most[k],
                      &ch->nblocks[k]);
        ch->water[k] = er_droplet_batch_water(&s->ctx, &r->bt);
        lo += n;
        b++;
    } while (lo < s->count && (uint32_t)ch->nbatch < r->pl.chunk_batches &&
             er_drive_may_pass(d, b));
    memset(accs, 0, (size_t)ch->nbatch * mt * sizeof *accs);
    er_status st = er_vk_cmd_begin(r->vk, err);
    if (st)
        return st;
    vkd_split sp = {r->vk, d, b0, 0, chunk_dispatches(&r->L, ch), 0, &r->per_dispatch,
                    r->kn.cut_all, 0, ER_OK, err};
    if (r->split)
        backup_state(r, 0);
    if (record_chunk(&r->R, &r->L, ch, r->split ? &sp : NULL))
        return sp.st ? sp.st : rewind_chunk(r, b0, to, err);
    if ((st = er_vk_cmd_submit(r->vk, err)))
        return st;
    *to = b;
    for (int k = 0; k < ch->nbatch; k++) {
        for (int t = 0; t < ch->nblocks[k]; t++)
            acc_add_block(&r->sum, &accs[(size_t)k * mt + (size_t)t]);
        r->sum.water += ch->water[k];
    }
    return ER_OK;
}

/* Batch b under the snapshot schedule, one submission, with the CPU
 * path's sums (er_droplet_snap_batch in core/droplet/snapshot.c). */
static er_status snapshot_batch(vk_drop_run *r, int64_t b, er_drive *d, int64_t *to,
                                er_error *err)
{
    const er_droplet_setup *s = &r->s;
    const int64_t lo = b * r->plan->own.droplet.batch;
    const int n = (int)(s->count - lo > r->S.batch ? r->S.batch : s->count - lo);
    const vkd_block *states = r->S.b[S_STATE].map;
    const int64_t *totals = r->S.b[S_TOTALS].map;
    er_droplet_batch_draw(&s->ctx, r->plan->p.seed, (int)r->plan->own.droplet.block_side, b, lo,
                          n, &r->bt);
    snap_starts(&r->S, &s->ctx, &r->bt);
    er_status st = er_vk_cmd_begin(r->vk, err);
    if (st)
        return st;
    vkd_split sp = {r->vk, d, b, 0, 0, 0, &r->per_dispatch, r->kn.cut_all, 0, ER_OK, err};
    if (snap_record(&r->S, s, &r->sbase, r->L.calls, (uint32_t)n, r->split ? &sp : NULL)) {
        *to = b; /* before the resolve: the state is the batch start's */
        return sp.st;
    }
    if ((st = er_vk_cmd_submit(r->vk, err)))
        return st;
    for (int i = 0; i < n; i++)
        acc_add_block(&r->sum, &states[i]);
    if (totals[0] != 0)
        return er_fail(err, ER_ENUMERIC, "droplet: a snapshot sum wrapped or exceeded its cell's room");
    r->sum.water += er_droplet_batch_water(&s->ctx, &r->bt);
    return ER_OK;
}

static er_status vk_advance(void *run, int64_t b, er_drive *d, er_budget *bud, int64_t *to,
                            er_error *err)
{
    vk_drop_run *r = run;
    (void)bud;
    er_status st = ER_OK;
    if (!r->on_device) {
        r->on_device = 1;
        r->split = r->vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
        r->per_dispatch = CUT_TARGET_S; /* the first dispatch is cut, and measured */
        st = r->snapshot ? snapshot_setup(r, err) : blocked_setup(r, err);
        if (st)
            return st;
    }
    r->host_current = 0;
    *to = b + 1;
    return r->snapshot ? snapshot_batch(r, b, d, to, err) : blocked_chunk(r, b, d, to, err);
}

/* The device's heights and layers into the host arrays, unless they hold
 * them already. */
static er_status read_host(vk_drop_run *r, er_error *err)
{
    if (r->host_current)
        return ER_OK;
    er_status st = r->snapshot ? snap_read_back(&r->S, &r->s, err) : read_back(&r->R, &r->s, err);
    r->host_current = st == ER_OK;
    return st;
}

static er_status vk_view(void *run, int64_t b, const er_budget *bud, er_run_state *v,
                         er_error *err)
{
    vk_drop_run *r = run;
    (void)bud;
    er_status st = read_host(r, err);
    if (!st)
        er_droplet_state(&r->plan->p, &r->s, r->plan->own.droplet.batch, b, &r->sum, v);
    return st;
}

/* The state read back (also after a cancel: the host then holds that
 * batch boundary's state); after any other failure the host arrays are
 * left as they were (the input, or the resumed state); then the budget
 * and run guard of the CPU path (er_droplet_end). */
static er_status vk_finish(void *run, er_status st, int started, er_budget *bud, er_error *err)
{
    vk_drop_run *r = run;
    (void)started;
    if (!r->prepared)
        return st;
    if (r->on_device && (st == ER_OK || st == ER_ECANCELED)) {
        er_status rb = read_host(r, err);
        st = rb ? rb : st;
    }
    return er_droplet_end(&r->plan->p, &r->s, r->t, &r->sum, st, bud, err);
}

static void vk_release(void *run)
{
    vk_drop_run *r = run;
    for (int i = 0; i < 4 && r->R.vk; i++)
        er_vk_buffer_free(r->vk, &r->backup[i]);
    run_free(&r->R);
    snap_free(&r->S);
    er_droplet_batch_free(&r->bt);
    free(r->ch);
    er_droplet_setup_free(&r->s);
}

const er_model_steps er_droplet_vk_steps = {
    .size = sizeof(vk_drop_run),
    .init = vk_init,
    .load = vk_load,
    .advance = vk_advance,
    .view = vk_view,
    .finish = vk_finish,
    .release = vk_release,
    .done_at = er_droplet_done_at,
};

/* The run with the test hooks' knobs (vulkan.h). */
static er_status run_knobbed(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                             const er_run_opts *o, vkd_knobs kn, er_error *err)
{
    static const er_run_opts none;
    er_model_steps knobbed = er_droplet_vk_steps;
    vkd_with w = {vk, kn};
    knobbed.init = vk_init_knobs;
    return er_drive_run_on(&knobbed, &w, plan, t, o ? o : &none, err);
}

er_status er_vk_droplet_run_passes(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                                   const er_run_opts *o, uint32_t steps, uint32_t batches,
                                   er_error *err)
{
    return run_knobbed(vk, plan, t, o, (vkd_knobs){steps, batches, 0}, err);
}

er_status er_vk_droplet_run(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                            const er_run_opts *o, er_error *err)
{
    return run_knobbed(vk, plan, t, o, (vkd_knobs){0, 0, 0}, err);
}

er_status er_vk_droplet_run_cut_all(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                                    const er_run_opts *o, uint32_t steps_per_pass,
                                    er_error *err)
{
    return run_knobbed(vk, plan, t, o, (vkd_knobs){steps_per_pass, 0, 1}, err);
}
