/*
 * Droplet erosion on the Vulkan backend: the block-coloured batches of
 * DESIGN.md §5 (core/droplet/blocks.c) with one shader invocation per block
 * (shaders/droplet_lague.comp).
 *
 * The host does what is cheap and must match the CPU path exactly: the
 * recipe checks, the height unit and constants (er_droplet_prepare), the
 * start of every droplet from the counter RNG (er_droplet_start,
 * er_lague_begin), the grid offset of every batch and the bucketing of its
 * droplets by block (er_blocking_init, er_blocking_bucket), and the budget.  It
 * uploads starts and per-block jobs for a chunk of batches at a time; the
 * terrain, flow and deposit layers stay on the device for the whole run and
 * are read back once at the end (also after a cancel; after any other
 * failure the terrain is left as it was).  Per batch the four colours run
 * one after another, barriers between them; within one colour one
 * invocation runs one block's droplets in index order, so no two
 * invocations touch a common cell and the result is the same on every run
 * on one device.  On CPU devices a colour takes several dispatches
 * ("passes", see droplet_lague.comp); a pass ends between two droplet
 * steps, so the split changes nothing.
 *
 * Per-block sums (eroded, deposited, left the map) come back per chunk and
 * are added in double in (batch, block) order, like the CPU's.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../droplet/droplet_impl.h"
#include "../droplet/blocks.h"
#include "droplet_lague.spv.h"
#include "droplet_mt.spv.h"
#include "vk.h"
#include "vk_droplet.h"

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
    float gravity, init_water, init_speed, pad;
    uint32_t flags, job0, njobs, steps_per_pass;
} vkd_push;

/* droplet_mt.comp's push constants: the same size and the same last four
 * words as vkd_push. */
typedef struct vkd_push_mt {
    int32_t width, height, max_distance, max_steps;
    float dt, inv_density, friction_keep, rate;
    float evap_keep, min_volume, vscale, pad0;
    float pad1, pad2, pad3, pad4;
    uint32_t flags, job0, njobs, steps_per_pass;
} vkd_push_mt;

_Static_assert(sizeof(vkd_push_mt) == sizeof(vkd_push), "push constant blocks differ");

enum { F_FLOW = 1, F_DEP = 2, F_WALL = 4 };

enum { B_HEIGHT, B_FLOW, B_DEP, B_MASK, B_BRUSH, B_START, B_JOB, B_BLOCK, B_COUNT };

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
} chunk;

/* Host buffers for drawing one batch's starts and bucketing them. */
typedef struct batch_scratch {
    double *sx, *sy;
    int *ok, *block_of, *order, *start, *colour_blocks;
} batch_scratch;

static void scratch_free(batch_scratch *s)
{
    free(s->sx);
    free(s->sy);
    free(s->ok);
    free(s->block_of);
    free(s->order);
    free(s->start);
    free(s->colour_blocks);
}

/* Draws the starts of droplets lo .. lo+n-1 (batch b), buckets them by block
 * and appends their start records and per-block jobs to the chunk buffers
 * (at *nstart and *njob; acc slots from slot0). */
static void prepare_batch(const er_droplet_setup *s, uint64_t seed, int size, int64_t b,
                          int64_t lo, int n, batch_scratch *bs, vkd_start *starts,
                          uint32_t *nstart, vkd_job *jobs, uint32_t *njob, uint32_t slot0,
                          int job0[4], int count[4], int most[4], int *nblocks)
{
    const er_dctx *c = &s->ctx;
    er_blocking tl;
    er_blocking_init(&tl, c->width, c->height, size, seed, (uint64_t)b);
    for (int i = 0; i < n; i++) {
        bs->ok[i] = er_droplet_start(c, seed, lo + i, &bs->sx[i], &bs->sy[i]);
        bs->block_of[i] = bs->ok[i] ? er_blocking_block(&tl, (int)bs->sx[i], (int)bs->sy[i]) : 0;
    }
    int colour_start[5];
    er_blocking_bucket(&tl, n, bs->block_of, bs->start, bs->order, bs->colour_blocks, colour_start);
    *nblocks = er_blocking_count(&tl);
    for (int col = 0; col < 4; col++) {
        job0[col] = (int)*njob;
        most[col] = 0;
        for (int k = colour_start[col]; k < colour_start[col + 1]; k++) {
            int block = bs->colour_blocks[k];
            uint32_t first = *nstart;
            for (int j = bs->start[block]; j < bs->start[block + 1]; j++) {
                int i = bs->order[j];
                if (!bs->ok[i])
                    continue;
                if (c->variant == ER_DROPLET_LAGUE) {
                    er_lague_state st;
                    er_lague_begin(c, &st, bs->sx[i], bs->sy[i], NULL);
                    starts[*nstart] = (vkd_start){st.bx, st.by, st.lx, st.ly};
                } else {
                    /* The particle's cell and its offset in the cell. */
                    int cx = (int)bs->sx[i], cy = (int)bs->sy[i];
                    starts[*nstart] = (vkd_start){cx, cy, (float)(bs->sx[i] - cx),
                                                  (float)(bs->sy[i] - cy)};
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

/* Runs every batch: chunks of batches prepared on the host, run on the
 * device, their per-block sums added in order. */
static er_status run_batches(vkd_run *R, const er_params *p, const er_droplet_setup *s,
                             int size, int64_t batch, int64_t max_blocks, uint32_t chunk_batches,
                             const vkd_push *base, uint64_t calls_per_droplet,
                             const er_run_ctl *ctl, er_dacc *sum, er_error *err)
{
    batch_scratch bs;
    memset(&bs, 0, sizeof bs);
    size_t nb = (size_t)batch, mt = (size_t)max_blocks;
    bs.sx = malloc(nb * sizeof *bs.sx);
    bs.sy = malloc(nb * sizeof *bs.sy);
    bs.ok = malloc(nb * sizeof *bs.ok);
    bs.block_of = malloc(nb * sizeof *bs.block_of);
    bs.order = malloc(nb * sizeof *bs.order);
    bs.start = malloc((mt + 1) * sizeof *bs.start);
    bs.colour_blocks = malloc(mt * sizeof *bs.colour_blocks);
    chunk *ch = malloc(sizeof *ch);
    er_status st = ER_OK;
    if (!bs.sx || !bs.sy || !bs.ok || !bs.block_of || !bs.order || !bs.start ||
        !bs.colour_blocks || !ch) {
        st = er_fail(err, ER_ENOMEM, "droplet: out of memory for a batch of %zu droplets", nb);
        goto done;
    }

    vkd_start *starts = R->b[B_START].map;
    vkd_job *jobs = R->b[B_JOB].map;
    vkd_block *accs = R->b[B_BLOCK].map;
    er_vk_ctx *vk = R->vk;
    int64_t b = 0;
    for (int64_t lo = 0; lo < s->count;) {
        uint32_t nstart = 0, njob = 0;
        ch->nbatch = 0;
        while (lo < s->count && (uint32_t)ch->nbatch < chunk_batches) {
            int n = (int)(s->count - lo > batch ? batch : s->count - lo);
            int k = ch->nbatch;
            prepare_batch(s, p->seed, size, b, lo, n, &bs, starts, &nstart, jobs, &njob,
                          (uint32_t)((size_t)k * mt), ch->job0[k], ch->njob[k], ch->most[k],
                          &ch->nblocks[k]);
            lo += n;
            b++;
            ch->nbatch++;
        }
        memset(accs, 0, (size_t)ch->nbatch * mt * sizeof *accs);

        st = er_vk_cmd_begin(vk, err);
        if (st)
            goto done;
        /* Uploads and fills of earlier submissions before the first dispatch. */
        er_vk_cmd_barrier(vk);
        for (int k = 0; k < ch->nbatch; k++)
            for (int col = 0; col < 4; col++) {
                if (ch->njob[k][col] == 0)
                    continue;
                /* Enough passes for the busiest block: each droplet takes at
                 * most calls_per_droplet calls of the step. */
                uint64_t calls = (uint64_t)ch->most[k][col] * calls_per_droplet;
                uint64_t passes = (calls + base->steps_per_pass - 1) / base->steps_per_pass;
                for (uint64_t q = 0; q < passes; q++)
                    for (uint32_t j0 = 0; j0 < (uint32_t)ch->njob[k][col]; j0 += MAX_GROUPS) {
                        vkd_push pc = *base;
                        uint32_t left = (uint32_t)ch->njob[k][col] - j0;
                        pc.job0 = (uint32_t)ch->job0[k][col] + j0;
                        pc.njobs = left < MAX_GROUPS ? left : MAX_GROUPS;
                        er_vk_cmd_dispatch(vk, &R->pl, 0, &pc, pc.njobs, 1);
                        /* The next pass or colour reads what this one wrote. */
                        er_vk_cmd_barrier(vk);
                    }
            }
        /* The per-block sums are read on the host after the fence. */
        host_barrier(vk);
        st = er_vk_cmd_submit(vk, err);
        if (st)
            goto done;
        for (int k = 0; k < ch->nbatch; k++)
            for (int t = 0; t < ch->nblocks[k]; t++)
                acc_add_block(sum, &accs[(size_t)k * mt + (size_t)t]);
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

/* Sizes of one run's buffers, worked out before anything is created. */
typedef struct vkd_plan {
    int64_t size;             /* [cells] block side */
    int64_t batch;            /* droplets per batch */
    int64_t max_blocks;       /* blocks per batch at most */
    uint32_t chunk_batches;   /* batches per submission */
    size_t mask_words;        /* 32-bit words of the packed mask (1 without walls) */
    VkDeviceSize sizes[B_COUNT + 1]; /* bytes of each buffer, then the staging buffer */
} vkd_plan;

/* Plans the run set up in *s and checks it fits the device's limits. */
static er_status plan_run(er_vk_ctx *vk, const er_droplet_setup *s, int64_t size, int64_t batch,
                          vkd_plan *pl, er_error *err)
{
    const er_dctx *c = &s->ctx;
    size_t cells = s->cells, bytes = cells * sizeof(float);
    memset(pl, 0, sizeof *pl);
    pl->size = size;
    pl->max_blocks = er_blocking_is_single(c->width, c->height, (int)size)
                        ? 1
                         : er_blocking_max_blocks(c->width, c->height, (int)size);
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
    /* Staging carries the layers, the mask and the brush: the largest
     * (the brush on maps of fewer than side^2 cells, issue #12). */
    pl->sizes[B_COUNT] = bytes;
    for (int i = B_MASK; i <= B_BRUSH; i++)
        if (pl->sizes[i] > pl->sizes[B_COUNT])
            pl->sizes[B_COUNT] = pl->sizes[i];
    char what[64];
    snprintf(what, sizeof what, "a %dx%d map", c->width, c->height);
    return er_vk_check_sizes(vk, pl->sizes, B_COUNT + 1, what, err);
}

er_status er_vk_droplet_check(er_vk_ctx *vk, const er_plan *plan, const er_terrain *t,
                              er_error *err)
{
    er_terrain tt = *t;
    er_droplet_setup s;
    vkd_plan pl;
    er_status st = er_droplet_prepare(plan, &tt, NULL, &s, err);
    if (!st && s.count > 0)
        st = plan_run(vk, &s, plan->block_side, plan->batch, &pl, err);
    er_droplet_setup_free(&s);
    return st;
}

er_status er_vk_droplet_run_passes(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                                   const er_run_opts *o, uint32_t steps_per_pass, er_error *err)
{
    static const er_run_opts none;
    const er_params *p = &plan->p;
    er_droplet_setup s;
    const er_run_ctl *ctl;
    er_budget *budget;
    vkd_run R;
    memset(&R, 0, sizeof R);
    uint32_t *mask = NULL;
    er_dacc sum = {0};
    vkd_plan pl;

    if (!o)
        o = &none;
    ctl = o->ctl;
    budget = o->budget;
    er_status st = er_droplet_prepare(plan, t, o->layers, &s, err);
    if (st)
        goto fail;
    if (s.count == 0)
        goto finish;
    st = plan_run(vk, &s, plan->block_side, plan->batch, &pl, err);
    if (st)
        goto fail;
    const er_dctx *c = &s.ctx;
    size_t cells = s.cells, bytes = cells * sizeof(float);
    size_t side = (size_t)c->brush_side, mask_words = pl.mask_words;
    int walls = c->wall != NULL;

    /* Lavapipe's loop budget: steps per pass on CPU devices, each step
     * costing at most 2 side^2 + 5 loop iterations (droplet_lague.comp) or
     * 11 (droplet_mt.comp); a few more for margin. */
    int lague = c->variant == ER_DROPLET_LAGUE;
    if (steps_per_pass == 0) {
        steps_per_pass = UINT32_MAX;
        if (vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
            int64_t cost = lague ? 2 * (int64_t)side * (int64_t)side + 8 : 16;
            steps_per_pass = (uint32_t)(CPU_LOOP_BUDGET / cost > 1 ? CPU_LOOP_BUDGET / cost : 1);
        }
    }
    if (walls) {
        mask = pack_mask(c, cells, &mask_words);
        if (!mask) {
            st = er_fail(err, ER_ENOMEM, "droplet: out of memory for the wall mask");
            goto fail;
        }
    }
    static const char *const names[B_COUNT] = {"height", "flow", "deposit", "wall mask",
                                               "brush", "droplet starts", "block jobs",
                                               "block states"};
    R.vk = vk;
    for (int i = 0; i < B_COUNT; i++) {
        st = er_vk_buffer_new(vk, pl.sizes[i], i >= B_START ? ER_VK_HOST : ER_VK_DEVICE, &R.b[i],
                              names[i], err);
        if (st)
            goto fail;
    }
    st = er_vk_buffer_new(vk, pl.sizes[B_COUNT], ER_VK_HOST, &R.staging, "staging", err);
    if (!st)
        st = lague ? er_vk_pipeline_new(vk, er_spv_droplet_lague, sizeof er_spv_droplet_lague,
                                        B_COUNT, sizeof(vkd_push), 1, &R.pl, err)
                   : er_vk_pipeline_new(vk, er_spv_droplet_mt, sizeof er_spv_droplet_mt, B_COUNT,
                                        sizeof(vkd_push), 1, &R.pl, err);
    if (st)
        goto fail;
    const er_vk_buffer *bufs[B_COUNT];
    for (int i = 0; i < B_COUNT; i++)
        bufs[i] = &R.b[i];
    er_vk_pipeline_bind(vk, &R.pl, 0, bufs);

    st = transfer(&R, &R.b[B_HEIGHT], t->elevation, bytes, 1, err);
    if (!st && lague)
        st = transfer(&R, &R.b[B_BRUSH], (void *)(uintptr_t)c->brush_w,
                      side * side * sizeof(float), 1, err);
    if (!st && walls)
        st = transfer(&R, &R.b[B_MASK], mask, mask_words * 4, 1, err);
    if (!st)
        st = er_vk_cmd_begin(vk, err);
    if (st)
        goto fail;
    er_vk_cmd_fill(vk, &R.b[B_FLOW], 0);
    er_vk_cmd_fill(vk, &R.b[B_DEP], 0);
    st = er_vk_cmd_submit(vk, err);
    if (st)
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
    uint64_t calls = (uint64_t)c->lifetime + 1;
    if (!lague) {
        vkd_push_mt mt = {
            .width = c->width,
            .height = c->height,
            .max_distance = c->mt_max_distance,
            .max_steps = (int32_t)c->mt_max_steps,
            .dt = c->mt_dt,
            .inv_density = c->mt_inv_density,
            .friction_keep = c->mt_friction_keep,
            .rate = c->mt_rate,
            .evap_keep = c->mt_evap_keep,
            .min_volume = c->mt_min_volume,
            .vscale = c->mt_vscale,
            .flags = base.flags,
            .steps_per_pass = steps_per_pass,
        };
        memcpy(&base, &mt, sizeof base);
        calls = (uint64_t)c->mt_max_steps + 1;
    }
    /* On failure the device's copy is not read back: the terrain is left
     * as it was. */
    er_status run_st = run_batches(&R, p, &s, (int)plan->block_side, pl.batch, pl.max_blocks,
                                   pl.chunk_batches, &base, calls, ctl, &sum, err);
    if (run_st && run_st != ER_ECANCELED) {
        st = run_st;
        goto fail;
    }
    /* Read back the state after the last finished chunk (also when
     * cancelled: the terrain then holds that batch boundary's state). */
    st = transfer(&R, &R.b[B_HEIGHT], t->elevation, bytes, 0, err);
    if (!st && c->flow)
        st = transfer(&R, &R.b[B_FLOW], c->flow, bytes, 0, err);
    if (!st && c->deposit)
        st = transfer(&R, &R.b[B_DEP], c->deposit, bytes, 0, err);
    if (st)
        goto fail;
    st = run_st;
    if (st == ER_ECANCELED)
        er_fail(err, st, "droplet: interrupted");
finish:
    {
        /* The same guard as the CPU path (core/droplet/droplet.c): no height below
         * the input's minimum, nothing non-finite, the budget balanced. */
        er_budget b;
        er_droplet_finish(p, &s, t, &sum, &b);
        if (st == ER_OK)
            st = er_droplet_guard(&s, t, &b, err);
        if (budget)
            *budget = b;
    }
fail:
    run_free(&R);
    free(mask);
    er_droplet_setup_free(&s);
    return st;
}

er_status er_vk_droplet_run(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                            const er_run_opts *o, er_error *err)
{
    return er_vk_droplet_run_passes(vk, plan, t, o, 0, err);
}
