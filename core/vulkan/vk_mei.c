/*
 * The Mei et al. (2007) grid model on Vulkan: the same physics as the CPU
 * path (core/mei/mei.c, pipe.c, erosion.c, transport.c), one compute dispatch
 * per pass, the whole state resident in device memory for the run.
 *
 * A (sub-)step is up to seven dispatches with a barrier between each, every
 * pass reading what the one before wrote (Jacobi style, as DESIGN.md §5 asks):
 *
 *   sources       eq. 1    river sources added to d (once per sub-step)
 *   maps          eq. 1    the sources raster, then the rain times the rain
 *                          map (only with either map: core/controls.h)
 *   flux          eqs. 2-5 q from old z, d of the neighbourhood (own q in place)
 *   water_erode   eqs. 6-12, 15: d, u, v; z2 and s1 from the old z
 *   transport     eq. 13 (or eq. 14, semi-Lagrangian) and drying: s, and z from z2
 *   reduce        per row, 64 interleaved partial budget sums and maxima
 *   rows          per row: the partial sums added in order, the checks of
 *                 core/mei/mei.c finish_substep
 *
 * plus `drops` (eq. 1, random raindrops, counter-based RNG) once a step,
 * and `total` after `rows`: the rows' budget terms added in row order to
 * the run's totals, which stay on the device (so a resumed run carries
 * them on exactly as an uninterrupted one).
 * Where the CPU updates rows in place behind a snapshot, the device keeps
 * z and z2 apart, so no pass reads a value another invocation of the same
 * pass writes.  Coefficients come from er_mei_make_coef and the sub-step
 * count from the run plan (core/plan.h), so both paths compute with the same
 * float constants.
 *
 * Steps are recorded in batches into one command buffer, one submission
 * each: the first of about 2^24 cell-updates, then as many steps as take
 * SUBMIT_TARGET_S of GPU time at the last batch's measured rate (so a fast
 * GPU runs hundreds of small steps per submission, not one); after each
 * the host waits on a fence, reads back the small per-row status buffer
 * (h * 48 bytes: budget sums and the first failure seen), reports progress
 * and stops on a failure.  The checks stay on the device meanwhile: each
 * row keeps its first failing step, mei_total.comp the run's, and a gate
 * (conditional rendering) skips every step after it, so the run ends in
 * the state after its failing step (as with one step per submission) and
 * the host takes back what it counted for the skipped ones.  A device
 * without conditional rendering keeps batches of the first size.  The state
 * itself is read back at the end, and at the boundaries the run hooks
 * want (er_hooks_want: a frame, a checkpoint, a stop), where a batch ends;
 * a resumed run uploads its state.  Everything the host computes besides
 * (the water added, the sources' cells, the budget totals, the boundary
 * views, the copy-out) is core/mei/'s, on a host er_mei_sim that holds
 * the read-back state; windows (tile sets) draw raindrops over the world
 * and open the window's inner edges as the CPU does (er_mei_make_coef).
 *
 * The control maps (core/controls.h) are buffers of their own, one unread
 * word for a map not given, whose neutral value the shaders put in its
 * place (a product with 1: the bits of a run without maps); the sources
 * raster goes up as its depth per sub-step, rounded on the host as
 * core/mei/pipe.c er_mei_add_maps rounds it.
 *
 * Agreement with the CPU: every shader expression keeps the CPU's order of
 * operations and is `precise` (no FMA contraction); the square root is the
 * correctly rounded one on both (through float64 on the device).  What can still differ is division (Vulkan
 * allows 2.5 ulp for a / b; lavapipe divides exactly) and denormals
 * (devices may flush them).  Budget sums are per row in 64 interleaved
 * lanes, the rows then added top to bottom after every sub-step as the CPU
 * adds its rows: deterministic, but each row's sum is not formed in the
 * CPU's order, so they agree to rounding (and a checkpoint goes on only on
 * the backend that wrote it).  README "Vulkan backend" gives the
 * measured differences and the tolerances the tests use.
 */
#include "vk.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../mei/mei_internal.h"
#include "../rng.h"

#include "mei_drops.spv.h"
#include "mei_drops_dp.spv.h"
#include "mei_flux.spv.h"
#include "mei_flux_dp.spv.h"
#include "mei_maps.spv.h"
#include "mei_maps_dp.spv.h"
#include "mei_reduce.spv.h"
#include "mei_reduce_dp.spv.h"
#include "mei_rows.spv.h"
#include "mei_rows_dp.spv.h"
#include "mei_sources.spv.h"
#include "mei_sources_dp.spv.h"
#include "mei_total.spv.h"
#include "mei_total_dp.spv.h"
#include "mei_transport.spv.h"
#include "mei_transport_dp.spv.h"
#include "mei_water_erode.spv.h"
#include "mei_water_erode_dp.spv.h"

/* Buffer bindings, as mei_common.glsl declares them. */
enum {
    B_COEF, B_B0, B_Z, B_Z2, B_D, B_S, B_S1, B_QL, B_QR, B_QT, B_QB, B_WQ, B_U, B_V, B_ER,
    B_DE, B_WALL, B_ROWS, B_SRC, B_PART, B_HARD, B_RAIN, B_MASK, B_QDT, B_FLOW, B_WEAR, N_BUF
};

/* Coef.ctl bits (CTL_* in mei_common.glsl): the control maps given. */
enum { CTL_HARD = 1, CTL_RAIN = 2, CTL_MASK = 4, CTL_SRC = 8 };
/* Coef.layers bits (LAYER_* in mei_common.glsl): the accumulators kept. */
enum { LAYER_FLOW = 1, LAYER_WEAR = 2 };

/* Cells of a row one workgroup of the per-cell passes covers (MEI_GROUP in
 * mei_common.glsl): wide groups, because lavapipe pays per workgroup. */
#define MEI_GROUP 256

enum {
    P_DROPS, P_SOURCES, P_MAPS, P_FLUX, P_WATER, P_TRANSPORT, P_REDUCE, P_ROWS, P_TOTAL, N_PIPE
};

/* Interleaved partial sums per row (MEI_LANES in mei_common.glsl). */
#define MEI_LANES 64

/* Coef of mei_common.glsl (std430: the doubles first, then 4-byte scalars). */
typedef struct mei_coef_gpu {
    double lx_slack, ly_slack;
    float dt, rain, cx, cy, hlx, hly, inv2lx, inv2ly, invlx, invly, kc, inv_cd, cd_off,
        ks_dt, kd_dt, emax, min_tilt2, keep, dry, th_k, talus_x, talus_y, dt_lx, dt_ly;
    int32_t w, h, open, has_wall, semi_lagrangian, wx0, wy0, world_w, world_h, open_mask;
    int32_t ctl;    /* CTL_* */
    float map_rain; /* [m] the rain mei_maps adds times the rain map (rain is 0 then) */
    int32_t layers; /* LAYER_* */
    int32_t pad_layers;
} mei_coef_gpu;

/* RowStat of mei_common.glsl. */
typedef struct mei_rowstat {
    double eroded, deposited, left_sed, left_water;
    uint32_t fail_step; /* step + 1 of the first failure, 0 = none */
    uint32_t fail_kind, fail_bits, pad;
} mei_rowstat;

/* Push of mei_common.glsl. */
typedef struct mei_push {
    uint32_t step_lo, step_hi, variant, n, seed_lo, seed_hi, count_lo, count_hi;
    float amount;
    int32_t fr;
    uint32_t r2_lo, r2_hi;
} mei_push;

/* Part of mei_common.glsl: one workgroup's share of a row. */
typedef struct mei_part {
    double eroded, deposited, left_sed, left_water;
    uint32_t umax, vmax, bad, pad;
} mei_part;

_Static_assert(sizeof(mei_part) == 48, "Part layout");
_Static_assert(sizeof(mei_coef_gpu) == 168, "Coef layout");
_Static_assert(sizeof(mei_rowstat) == 48, "RowStat layout");
_Static_assert(sizeof(mei_push) == 48, "Push layout");

/* Cell-updates of the first recorded batch (and of every batch on a device
 * without the gate): large enough that submission costs nothing, small
 * enough that progress and cancelling stay responsive. */
#define BATCH_CELLS ((uint64_t)1 << 24)
#define FIRST_BATCH_STEPS 256
/* Sub-steps one command buffer holds at most (about 40 commands each),
 * which bounds its memory where steps are very short (small maps). */
#define MAX_BATCH_SUBSTEPS 4096

/* Seconds of GPU work a submission aims at once the time per step is
 * known (next_batch): the fence wait and the status read (~0.1 ms) then
 * cost nothing beside it, and progress and cancelling stay within a tenth
 * of a second.  An H100 does a 1024^2 step in well under a millisecond. */
#define SUBMIT_TARGET_S 0.075

typedef struct mei_gpu {
    er_vk_ctx *vk;
    er_vk_buffer buf[N_BUF];
    er_vk_buffer staging;   /* host-visible, for uploads and the final read-back */
    er_vk_buffer rows_host; /* host-visible copy of B_ROWS after each batch */
    er_vk_buffer gate;      /* the run's first failing step, copied before each step
                             * (conditional rendering); unused without it */
    er_vk_pipeline pipe[N_PIPE];
} mei_gpu;

/* Each shader as built: [0] plain, [1] with DenormPreserve declared, for
 * devices that offer it (er_vk_mei_exactness; mei_common.glsl). */
#define SHADER(name) { { er_spv_##name, er_spv_##name##_dp }, \
                       { sizeof er_spv_##name, sizeof er_spv_##name##_dp } }
static const struct {
    const uint32_t *spv[2];
    size_t bytes[2];
} shaders[N_PIPE] = {
    [P_DROPS] = SHADER(mei_drops),
    [P_SOURCES] = SHADER(mei_sources),
    [P_MAPS] = SHADER(mei_maps),
    [P_FLUX] = SHADER(mei_flux),
    [P_WATER] = SHADER(mei_water_erode),
    [P_TRANSPORT] = SHADER(mei_transport),
    [P_REDUCE] = SHADER(mei_reduce),
    [P_ROWS] = SHADER(mei_rows),
    [P_TOTAL] = SHADER(mei_total),
};

static const char *const buf_names[N_BUF] = {
    "coefficient", "initial terrain", "terrain change", "terrain change (new)", "water",
    "sediment", "sediment (eroded)", "left flux", "right flux", "top flux", "bottom flux",
    "donor weight", "velocity u", "velocity v", "eroded", "deposited", "nodata",
    "row status", "source", "row part", "hardness map", "rain map", "mask map",
    "sources map", "flow", "wear",
};

static void gpu_free(mei_gpu *g)
{
    for (int i = 0; i < N_PIPE; i++)
        er_vk_pipeline_free(g->vk, &g->pipe[i]);
    for (int i = 0; i < N_BUF; i++)
        er_vk_buffer_free(g->vk, &g->buf[i]);
    er_vk_buffer_free(g->vk, &g->staging);
    er_vk_buffer_free(g->vk, &g->rows_host);
    er_vk_buffer_free(g->vk, &g->gate);
}

/* Bytes of the wall buffer: one byte a cell, rounded up to whole words. */
static VkDeviceSize wall_bytes(size_t n)
{
    return (VkDeviceSize)((n + 3) / 4 * 4);
}

/* size[] of buffer_sizes: the device buffers (B_*), then the host-visible
 * staging buffer and the host copy of the row status. */
enum { S_STAGING = N_BUF, S_ROWS_HOST, N_SIZES };

/* The state arrays of er_run_state (ER_STATE_MEI_*), in its order. */
static const int state_buf[ER_STATE_ARRAYS] = { B_Z, B_D, B_S, B_QL, B_QR, B_QT, B_QB,
                                                 B_FLOW, B_WEAR };

/* The buffers that pass through the staging buffer: the uploads of
 * gpu_setup and of a resumed state, and the state read-backs. */
static const int staged[] = { B_COEF, B_B0, B_WALL, B_SRC, B_ROWS, B_Z, B_D, B_S,
                              B_QL, B_QR, B_QT, B_QB, B_HARD, B_RAIN, B_MASK, B_QDT,
                              B_FLOW, B_WEAR };

/* The control map of buffer B_HARD .. B_QDT (er_controls), NULL when not given. */
static const float *ctl_map(const er_controls *c, int b)
{
    if (!c)
        return NULL;
    return b == B_HARD ? c->hardness : b == B_RAIN ? c->rain : b == B_MASK ? c->mask
                                                                             : c->source;
}

/*
 * Bytes of every buffer of a run on map t with a source list of src_words
 * words (0: none), one formula for er_vk_mei_check and gpu_setup.  The
 * staging buffer is as large as the largest buffer that passes through it,
 * not as a layer: below 68 cells the coefficients (2 x 136 bytes) are the
 * largest, and overlapping sources can make the source list longer than a
 * layer (issue #12: a 4x4 map wrote 272 bytes into a 64-byte staging
 * buffer), as can the row status of a narrow map.
 */
static void buffer_sizes(const er_terrain *t, size_t src_words, const er_layers *keep,
                         VkDeviceSize size[N_SIZES])
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    for (int i = 0; i < N_BUF; i++)
        size[i] = (VkDeviceSize)n * sizeof(float);
    size[B_COEF] = 2 * sizeof(mei_coef_gpu);
    size[B_WALL] = wall_bytes(n);
    size[B_ROWS] = ((VkDeviceSize)t->height + 1) * sizeof(mei_rowstat);
    size[B_SRC] = src_words ? (VkDeviceSize)src_words * sizeof(uint32_t) : 4;
    size[B_PART] = (VkDeviceSize)t->height * MEI_LANES * sizeof(mei_part);
    for (int b = B_HARD; b <= B_QDT; b++) /* one unread word for a map not given */
        if (!ctl_map(t->controls, b))
            size[b] = 4;
    if (!keep || !keep->flow) /* one unread word for an accumulator not kept */
        size[B_FLOW] = 4;
    if (!keep || !keep->wear)
        size[B_WEAR] = 4;
    size[S_STAGING] = 0;
    for (size_t i = 0; i < sizeof staged / sizeof staged[0]; i++)
        if (size[staged[i]] > size[S_STAGING])
            size[S_STAGING] = size[staged[i]];
    size[S_ROWS_HOST] = size[B_ROWS];
}

er_status er_vk_mei_check(er_vk_ctx *vk, const er_plan *plan, const er_terrain *t,
                          er_error *err)
{
    const er_mei_params *m = &plan->p.mei;
    const er_vk_device_info *d = &vk->info;
    if (!d->has_float64)
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: %s lacks shaderFloat64, which the "
                       "budget sums need; use --backend cpu", d->name);
    if (m->drops_per_step > 0 && m->drop_amount > 0.0 && !d->has_int64)
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: %s lacks shaderInt64, which the "
                       "raindrop generator (mei.drops_per_step) needs; use --backend cpu",
                       d->name);
    if (vk->props.limits.maxPerStageDescriptorStorageBuffers < N_BUF)
        return er_fail(err, ER_EUNSUPPORTED, "vulkan: %s binds at most %u storage buffers "
                       "per shader, the mei model needs %d; use --backend cpu", d->name,
                       vk->props.limits.maxPerStageDescriptorStorageBuffers, N_BUF);
    const uint32_t *cnt = vk->props.limits.maxComputeWorkGroupCount;
    if ((uint32_t)t->height > cnt[1] || er_vk_groups((uint32_t)t->width, ER_VK_GROUP) > cnt[0])
        return er_fail(err, ER_ENOMEM, "vulkan: a %dx%d map exceeds the device's dispatch "
                       "size (%u x %u workgroups); use --backend cpu", t->width, t->height,
                       cnt[0] * ER_VK_GROUP, cnt[1]);
    const size_t n = (size_t)t->width * (size_t)t->height;
    char what[64];
    snprintf(what, sizeof what, "a %dx%d map", t->width, t->height);
    if (n > UINT32_MAX / 4)
        return er_fail(err, ER_ENOMEM, "vulkan: %s has more cells than the shaders address "
                       "(2^30); use --backend cpu", what);
    VkDeviceSize size[N_SIZES];
    const er_layers all = { NULL, NULL, t->elevation, t->elevation };
    buffer_sizes(t, 0, &all, size); /* as if both accumulators were kept */
    return er_vk_check_sizes(vk, size, N_SIZES, what, err);
}

typedef struct src_entry {
    uint32_t cell, seq;
    float amount;
} src_entry;

static int by_cell(const void *a, const void *b)
{
    const src_entry *x = a, *y = b;
    if (x->cell != y->cell)
        return x->cell < y->cell ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The covered cells of the sources, collected by er_mei_disc_cells. */
typedef struct src_list {
    src_entry *e;
    size_t n, cap;
    float amount; /* of the source being walked */
    int failed;   /* out of memory */
} src_list;

static void collect(void *user, size_t cell)
{
    src_list *l = user;
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 256;
        src_entry *more = l->failed ? NULL : realloc(l->e, nc * sizeof *more);
        if (!more) {
            l->failed = 1;
            return;
        }
        l->e = more;
        l->cap = nc;
    }
    l->e[l->n] = (src_entry){ (uint32_t)cell, (uint32_t)l->n, l->amount };
    l->n++;
}

/* The packed list of mei_sources.comp from the sorted entries: the cells,
 * the start of each cell's amounts, then the amounts in recipe order. */
static uint32_t *pack_sources(const src_entry *e, size_t ne, size_t *nwords, uint32_t *ncells)
{
    uint32_t nu = 0;
    for (size_t i = 0; i < ne; i++)
        nu += i == 0 || e[i].cell != e[i - 1].cell;
    size_t nw = 2 * (size_t)nu + 1 + ne;
    uint32_t *wd = malloc(nw * sizeof *wd);
    if (!wd)
        return NULL;
    uint32_t u = 0;
    for (size_t i = 0; i < ne; i++) {
        if (i == 0 || e[i].cell != e[i - 1].cell) {
            wd[u] = e[i].cell;
            wd[nu + u] = (uint32_t)i;
            u++;
        }
        memcpy(&wd[2 * (size_t)nu + 1 + i], &e[i].amount, sizeof(float));
    }
    wd[2 * (size_t)nu] = (uint32_t)ne;
    *nwords = nw;
    *ncells = nu;
    return wd;
}

/* The source list of mei_sources.comp: the cells core/mei/pipe.c
 * er_mei_add_sources covers (world pixels shifted into the window), each
 * with its sources' depths per sub-step in recipe order.  *words receives
 * the buffer (the caller frees; NULL when no cell is covered). */
static er_status build_sources(const er_mei_sim *sim, const er_mei_params *m, double dt,
                               uint32_t **words, size_t *nwords, uint32_t *ncells,
                               er_error *err)
{
    src_list l = { 0 };
    *words = NULL;
    *nwords = 0;
    *ncells = 0;
    for (int i = 0; i < m->n_sources && !l.failed; i++) {
        const er_source *src = &m->sources[i];
        l.amount = er_mei_source_depth(src, dt);
        if (l.amount > 0.0f)
            er_mei_disc_cells(sim, src->x - sim->wx0, src->y - sim->wy0, src->radius, collect,
                              &l);
    }
    if (!l.failed && l.n) {
        qsort(l.e, l.n, sizeof *l.e, by_cell);
        *words = pack_sources(l.e, l.n, nwords, ncells);
        l.failed = !*words;
    }
    free(l.e);
    return l.failed ? er_fail(err, ER_ENOMEM, "mei: out of memory for the sources") : ER_OK;
}

static void fill_coef(const er_mei_coef *k, const er_mei_sim *sim, mei_coef_gpu *g)
{
    memset(g, 0, sizeof *g);
    g->lx_slack = sim->lx * ER_MEI_CFL_SLACK;
    g->ly_slack = sim->ly * ER_MEI_CFL_SLACK;
    g->dt = k->dt;
    g->rain = k->rain;
    g->cx = k->cx;
    g->cy = k->cy;
    g->hlx = k->hlx;
    g->hly = k->hly;
    g->inv2lx = k->inv2lx;
    g->inv2ly = k->inv2ly;
    g->invlx = k->invlx;
    g->invly = k->invly;
    g->kc = k->kc;
    g->inv_cd = k->inv_cd;
    g->cd_off = k->cd_off;
    g->ks_dt = k->ks_dt;
    g->kd_dt = k->kd_dt;
    g->emax = k->emax;
    g->min_tilt2 = k->min_tilt2;
    g->keep = k->keep;
    g->dry = k->dry;
    g->th_k = k->th_k;
    g->talus_x = k->talus_x;
    g->talus_y = k->talus_y;
    g->dt_lx = k->dt_lx;
    g->dt_ly = k->dt_ly;
    g->semi_lagrangian = k->semi_lagrangian;
    g->w = sim->w;
    g->h = sim->h;
    g->open = k->open;
    g->has_wall = sim->wall != NULL;
    g->wx0 = sim->wx0;
    g->wy0 = sim->wy0;
    g->world_w = sim->world_w;
    g->world_h = sim->world_h;
    for (int e = 0; e < 4; e++)
        g->open_mask |= k->open_edge[e] ? 1 << e : 0;
    g->layers = (sim->flow ? LAYER_FLOW : 0) | (sim->wear ? LAYER_WEAR : 0);
    const er_controls *c = sim->ctl;
    if (!c)
        return;
    g->ctl = (c->hardness ? CTL_HARD : 0) | (c->rain ? CTL_RAIN : 0) |
             (c->mask ? CTL_MASK : 0) | (c->source ? CTL_SRC : 0);
    /* with a rain map mei_maps adds the rain (core/mei/mei.c: k.rain = 0) */
    if (c->rain) {
        g->map_rain = k->rain;
        g->rain = 0.0f;
    }
}

/* Uploads bytes of data into buffer b through the staging buffer, the
 * rest of b (the wall buffer's last word) zeroed.  b must be one of
 * staged[]. */
static er_status upload(mei_gpu *g, er_vk_buffer *b, const void *data, size_t bytes,
                        er_error *err)
{
    er_status st;
    assert(bytes <= b->size && b->size <= g->staging.size);
    memcpy(g->staging.map, data, bytes);
    memset((unsigned char *)g->staging.map + bytes, 0, (size_t)b->size - bytes);
    if ((st = er_vk_buffer_flush(g->vk, &g->staging, err)) ||
        (st = er_vk_cmd_begin(g->vk, err)))
        return st;
    er_vk_cmd_copy(g->vk, &g->staging, b, b->size);
    return er_vk_cmd_submit(g->vk, err);
}

/* Reads buffer b back into out (bytes).  b must be one of staged[]. */
static er_status download(mei_gpu *g, const er_vk_buffer *b, void *out, size_t bytes,
                          er_error *err)
{
    er_status st;
    assert(bytes <= b->size && bytes <= g->staging.size);
    if ((st = er_vk_cmd_begin(g->vk, err)))
        return st;
    er_vk_cmd_copy(g->vk, b, &g->staging, bytes);
    if ((st = er_vk_cmd_submit(g->vk, err)) ||
        (st = er_vk_buffer_invalidate(g->vk, &g->staging, err)))
        return st;
    memcpy(out, g->staging.map, bytes);
    return ER_OK;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static er_status gpu_setup(mei_gpu *g, const er_terrain *t, const er_layers *keep,
                           const mei_coef_gpu coef[2], const uint32_t *src, size_t src_words,
                           er_error *err)
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    VkDeviceSize size[N_SIZES];
    er_status st;
    buffer_sizes(t, src_words, keep, size);
    for (int i = 0; i < N_BUF; i++)
        if ((st = er_vk_buffer_new(g->vk, size[i], ER_VK_DEVICE, &g->buf[i], buf_names[i], err)))
            return st;
    if ((st = er_vk_buffer_new(g->vk, size[S_STAGING], ER_VK_STAGING, &g->staging, "staging",
                               err)) ||
        (st = er_vk_buffer_new(g->vk, size[S_ROWS_HOST], ER_VK_STAGING, &g->rows_host,
                               "row status", err)))
        return st;
    if (g->vk->gate_begin &&
        (st = er_vk_buffer_new(g->vk, 4, ER_VK_DEVICE, &g->gate, "step gate", err)))
        return st;
    const er_vk_buffer *bind[N_BUF];
    const double t0 = wall_now();
    for (int i = 0; i < N_BUF; i++)
        bind[i] = &g->buf[i];
    const int dp = er_vk_mei_exactness(er_vk_info(g->vk)) == ER_VK_EXACT_DECLARED;
    for (int p = 0; p < N_PIPE; p++) {
        if ((st = er_vk_pipeline_new(g->vk, shaders[p].spv[dp], shaders[p].bytes[dp], N_BUF,
                                     sizeof(mei_push), 1, &g->pipe[p], err)))
            return st;
        er_vk_pipeline_bind(g->vk, &g->pipe[p], 0, bind);
    }
    g->vk->stats.pipeline_s = wall_now() - t0;
    /* uploads, then every state buffer cleared (the CPU's calloc) */
    if ((st = upload(g, &g->buf[B_COEF], coef, 2 * sizeof(mei_coef_gpu), err)) ||
        (st = upload(g, &g->buf[B_B0], t->elevation, n * sizeof(float), err)))
        return st;
    if (t->wall && (st = upload(g, &g->buf[B_WALL], t->wall, n, err)))
        return st;
    if (src_words && (st = upload(g, &g->buf[B_SRC], src, src_words * sizeof(uint32_t), err)))
        return st;
    if ((st = er_vk_cmd_begin(g->vk, err)))
        return st;
    for (int i = B_Z; i < N_BUF; i++)
        if (i != B_WALL && i != B_SRC)
            er_vk_cmd_fill(g->vk, &g->buf[i], 0);
    if (!t->wall)
        er_vk_cmd_fill(g->vk, &g->buf[B_WALL], 0);
    return er_vk_cmd_submit(g->vk, err);
}

/* Uploads the control maps given; the sources raster as the depth
 * (float)(q dt) it adds per sub-step of dt seconds, as core/mei/pipe.c
 * er_mei_add_maps rounds it. */
static er_status upload_maps(mei_gpu *g, const er_terrain *t, double dt, er_error *err)
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    er_status st = ER_OK;
    for (int b = B_HARD; b < B_QDT && !st; b++)
        if (ctl_map(t->controls, b))
            st = upload(g, &g->buf[b], ctl_map(t->controls, b), n * sizeof(float), err);
    const float *q = ctl_map(t->controls, B_QDT);
    if (st || !q)
        return st;
    float *qdt = malloc(n * sizeof *qdt);
    if (!qdt)
        return er_fail(err, ER_ENOMEM, "mei: out of memory for the sources map");
    for (size_t i = 0; i < n; i++)
        qdt[i] = (float)((double)q[i] * dt);
    st = upload(g, &g->buf[B_QDT], qdt, n * sizeof(float), err);
    free(qdt);
    return st;
}

/* The first failure any row recorded (the earliest step, then the lowest
 * row), as core/mei/mei.c words it; ER_OK when none.  The row kinds are
 * ER_MEI_FAIL_*. */
static er_status row_failure(const mei_rowstat *rs, const er_mei_sim *sim,
                             const er_mei_coef *k, er_error *err)
{
    int best = -1;
    for (int y = 0; y < sim->h; y++)
        if (rs[y].fail_step && (best < 0 || rs[y].fail_step < rs[best].fail_step))
            best = y;
    if (best < 0)
        return ER_OK;
    const mei_rowstat *r = &rs[best];
    float f;
    memcpy(&f, &r->fail_bits, sizeof f);
    return er_mei_fail(sim, k, (int)r->fail_kind, (int64_t)r->fail_step - 1, best, f, err);
}

/* Adds " at step N" to a Vulkan failure during the run; device lost
 * reads "vulkan: device lost at step N". */
static er_status at_step(er_vk_ctx *vk, er_status st, int64_t step, er_error *err)
{
    if (!err)
        return st;
    if (vk->device_lost)
        return er_fail(err, st, "vulkan: device lost at step %lld", (long long)step);
    char msg[ER_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return er_fail(err, st, "%.400s at step %lld", msg, (long long)step);
}

static void set_push_step(mei_push *pu, int64_t step)
{
    pu->step_lo = (uint32_t)((uint64_t)step & 0xffffffffu);
    pu->step_hi = (uint32_t)((uint64_t)step >> 32);
}

/* One run: the device, and the host simulation (core/mei/) that holds the
 * read-back state and computes what the host adds to the budget. */
typedef struct mei_run {
    er_vk_ctx *vk;
    const er_plan *plan;
    const er_run_hooks *hooks;
    er_layers *layers;   /* the run's layers (flow and wear accumulated on the device) */
    er_mei_sim sim;
    mei_gpu g;
    er_mei_coef k[2];    /* dry, raining */
    mei_coef_gpu kg[2];
    mei_push pu;
    mei_rowstat *rs;     /* h + 1: the row status read back after each batch */
    uint32_t nsrc;       /* cells the sources cover */
    int64_t cells;       /* terrain cells (uniform rain) */
    int64_t batch;       /* steps per batch */
    double *map_water[2]; /* per row, the rain and sources maps' water of a
                           * sub-step (dry, raining); NULL: neither map */
    er_budget bud;
} mei_run;

/* The maps' water per row and sub-step, as core/mei/mei.c counts it
 * (er_mei_add_maps, which leaves each row's sum in sim.acc[].eroded), so the
 * budget adds the same terms in the same order without a pass over the
 * cells each sub-step. */
static er_status map_water_rows(mei_run *r, er_error *err)
{
    const er_controls *c = r->sim.ctl;
    const int h = r->sim.h;
    if (!c || !(c->rain || c->source))
        return ER_OK;
    for (int v = 0; v < 2; v++) {
        double unused = 0.0;
        if (!(r->map_water[v] = malloc((size_t)h * sizeof(double))))
            return er_fail(err, ER_ENOMEM, "mei: out of memory for a %dx%d map", r->sim.w, h);
        er_mei_add_maps(&r->sim, NULL, r->k[v].rain, r->plan->dt_sub, &unused);
        for (int y = 0; y < h; y++)
            r->map_water[v][y] = r->sim.acc[y].eroded;
    }
    return ER_OK;
}

/* The push constants of the raindrop pass: the disc of radius rad around
 * an integer centre is centre +- floor(rad), and a cell is in when
 * dx^2 + dy^2 <= floor(rad^2) (core/mei/pipe.c er_mei_disc_cells). */
static void drop_push(const er_params *p, mei_push *pu)
{
    const er_mei_params *m = &p->mei;
    memset(pu, 0, sizeof *pu);
    pu->seed_lo = (uint32_t)(p->seed & 0xffffffffu);
    pu->seed_hi = (uint32_t)(p->seed >> 32);
    pu->count_lo = (uint32_t)((uint64_t)m->drops_per_step & 0xffffffffu);
    pu->count_hi = (uint32_t)((uint64_t)m->drops_per_step >> 32);
    pu->amount = (float)m->drop_amount;
    double rad = m->drop_radius > 0.0 ? m->drop_radius : 0.0;
    double fr = floor(rad), r2 = floor(rad * rad);
    uint64_t r2i = r2 > 4.0e18 ? (uint64_t)4e18 : (uint64_t)r2;
    pu->fr = fr > 1073741824.0 ? 1073741824 : (int32_t)fr;
    pu->r2_lo = (uint32_t)(r2i & 0xffffffffu);
    pu->r2_hi = (uint32_t)(r2i >> 32);
}

/* The invocations of one dispatch of each pass (workgroups x local size),
 * for scripts/bench vulkan; 0 for a pass this run never dispatches. */
static void note_kernels(mei_run *r)
{
    const uint64_t gx = er_vk_groups((uint32_t)r->sim.w, MEI_GROUP), gy = (uint64_t)r->sim.h;
    const uint64_t cells = gx * gy * MEI_GROUP;
    static const char *const names[N_PIPE] = { "drops", "sources", "maps", "flux",
                                               "water_erode", "transport", "reduce",
                                               "rows", "total" };
    const uint64_t inv[N_PIPE] = {
        [P_DROPS] = r->pu.count_lo || r->pu.count_hi ? ER_VK_GROUP : 0,
        [P_SOURCES] = er_vk_groups(r->nsrc, ER_VK_GROUP) * ER_VK_GROUP,
        [P_MAPS] = r->map_water[0] ? cells : 0, [P_FLUX] = cells, [P_WATER] = cells, [P_TRANSPORT] = cells,
        [P_REDUCE] = gy * MEI_LANES,
        [P_ROWS] = (uint64_t)er_vk_groups((uint32_t)r->sim.h, ER_VK_GROUP) * ER_VK_GROUP,
        [P_TOTAL] = 4,
    };
    er_vk_stats *st = &r->vk->stats;
    st->n_kernels = N_PIPE;
    for (int i = 0; i < N_PIPE; i++) {
        st->kernel[i].name = names[i];
        st->kernel[i].invocations = inv[i];
    }
}

static er_status run_setup(mei_run *r, er_terrain *t, er_error *err)
{
    const er_plan *plan = r->plan;
    uint32_t *src = NULL;
    size_t src_words = 0;
    er_status st = er_mei_sim_alloc(&r->sim, t, plan->windowed ? &plan->win : NULL, err);
    if (st)
        return st;
    er_mei_keep_layers(&r->sim, r->layers);
    for (int i = 0; i < 2; i++) {
        er_mei_make_coef(&r->sim, &plan->p.mei, plan->dt_sub, i, &r->k[i]);
        fill_coef(&r->k[i], &r->sim, &r->kg[i]);
    }
    /* the same stability check as the CPU (condition 2 of core/mei/mei.c) */
    if (plan->p.mei.steps > 0 && (st = er_mei_check_coef(&r->k[0], err)))
        return st;
    r->rs = calloc((size_t)t->height + 1, sizeof *r->rs);
    if (!r->rs)
        return er_fail(err, ER_ENOMEM, "mei: out of memory for a %dx%d map", t->width,
                       t->height);
    if ((st = build_sources(&r->sim, &plan->p.mei, plan->dt_sub, &src, &src_words, &r->nsrc,
                            err)))
        return st;
    r->cells = er_mei_terrain_cells(&r->sim);
    r->bud.material_before = er_mei_total(&r->sim, r->sim.b0);
    drop_push(&plan->p, &r->pu);
    uint64_t per_step = (uint64_t)t->width * (uint64_t)t->height * (uint64_t)plan->substeps;
    r->batch = (int64_t)(BATCH_CELLS / (per_step ? per_step : 1));
    r->batch = r->batch < 1 ? 1 : r->batch > FIRST_BATCH_STEPS ? FIRST_BATCH_STEPS : r->batch;
    const er_layers keep = { NULL, NULL, r->sim.flow, r->sim.wear };
    double t0 = wall_now();
    if ((st = gpu_setup(&r->g, t, &keep, r->kg, src, src_words, err)) ||
        (st = upload_maps(&r->g, t, plan->dt_sub, err)))
        st = at_step(r->vk, st, 0, err);
    r->vk->stats.upload_s += wall_now() - t0 - r->vk->stats.pipeline_s;
    if (!st)
        st = map_water_rows(r, err);
    note_kernels(r);
    free(src);
    return st;
}

/* State array i of the host simulation; NULL for an accumulator not kept. */
static float *state_array(er_mei_sim *sim, int i)
{
    return i == ER_STATE_MEI_Z ? sim->z : i == ER_STATE_MEI_D ? sim->d
         : i == ER_STATE_MEI_S ? sim->s : i == ER_STATE_MEI_FLOW ? sim->flow
         : i == ER_STATE_MEI_WEAR ? sim->wear : sim->q[i - ER_STATE_MEI_Q];
}

/* Reads the state arrays back into the host simulation: all of them, or
 * (all = 0) those the outputs need (z, d, s and the accumulators). */
static er_status read_state(mei_run *r, int all, er_error *err)
{
    const size_t bytes = (size_t)r->sim.w * (size_t)r->sim.h * sizeof(float);
    er_status st = ER_OK;
    for (int i = 0; i < ER_STATE_ARRAYS && !st; i++) {
        float *a = state_array(&r->sim, i);
        int output = i <= ER_STATE_MEI_S || i >= ER_STATE_MEI_FLOW;
        if (a && (all || output))
            st = download(&r->g, &r->g.buf[state_buf[i]], a, bytes, err);
    }
    return st;
}

/* A resumed run: its state and budget totals into the device; *step0
 * receives the step to go on from (0 without a resume state). */
static er_status run_resume(mei_run *r, int64_t *step0, er_error *err)
{
    const size_t bytes = (size_t)r->sim.w * (size_t)r->sim.h * sizeof(float);
    const int h = r->sim.h;
    *step0 = 0;
    if (!r->hooks || !r->hooks->resume)
        return ER_OK;
    er_status st = er_mei_restore(&r->sim, r->plan, r->hooks->resume, &r->bud, step0, err);
    for (int i = 0; i < ER_STATE_ARRAYS && !st; i++)
        if (state_array(&r->sim, i))
            st = upload(&r->g, &r->g.buf[state_buf[i]], state_array(&r->sim, i), bytes, err);
    memset(r->rs, 0, ((size_t)h + 1) * sizeof *r->rs);
    r->rs[h].eroded = r->bud.eroded;
    r->rs[h].deposited = r->bud.deposited;
    r->rs[h].left_sed = r->bud.left_map;
    r->rs[h].left_water = r->bud.water_left;
    if (!st)
        st = upload(&r->g, &r->g.buf[B_ROWS], r->rs, ((size_t)h + 1) * sizeof *r->rs, err);
    return st;
}

/* The boundary after `step` steps, handed to the hooks when they want it
 * (read back first when `read`); non-zero = cancel. */
static er_status at_boundary(mei_run *r, int64_t step, int read, er_error *err)
{
    const er_run_hooks *hk = r->hooks;
    const int64_t steps = r->plan->p.mei.steps;
    er_status st;
    if (!er_hooks_want(hk, step, steps))
        return ER_OK;
    if (read && (st = read_state(r, 1, err)))
        return at_step(r->vk, st, step, err);
    er_run_state v;
    er_mei_state_view(&r->sim, &r->plan->p.mei, step, &r->bud, &v);
    if (hk->boundary(hk->user, &v))
        return er_fail(err, ER_ECANCELED, "mei: cancelled at step %lld", (long long)step);
    return ER_OK;
}

/* The water the host adds to the budget for step `step`, in
 * core/mei/mei.c's order (raindrops, then per sub-step the sources and the
 * rain); returns whether raindrops fall (the drops pass runs). */
static int account_step(mei_run *r, int64_t step)
{
    const er_params *p = &r->plan->p;
    const er_mei_params *m = &p->mei;
    int raining = m->rain_rate > 0.0 && (m->rain_steps == 0 || step < m->rain_steps);
    int drops = er_mei_add_drops(&r->sim, NULL, m, p->seed, step, &r->bud.water_added);
    for (int64_t sub = 0; sub < r->plan->substeps; sub++) {
        er_mei_add_sources(&r->sim, NULL, m, r->plan->dt_sub, &r->bud.water_added);
        if (r->map_water[0])
            for (int y = 0; y < r->sim.h; y++)
                r->bud.water_added += r->map_water[raining][y];
        r->bud.water_added += (double)r->kg[raining].rain * (double)r->cells;
        r->bud.substeps++;
    }
    r->bud.work_done++;
    return drops;
}

/* Records the passes of step `step`.  With the gate, the step's dispatches
 * are skipped once a step before it failed (mei_total.comp keeps the first
 * failure in rows[h].fail_step), so the state a failing run ends with is
 * that after its failing step, whichever submission held it. */
static void record_step(mei_run *r, int64_t step, int drops)
{
    const er_mei_params *m = &r->plan->p.mei;
    er_vk_ctx *vk = r->vk;
    mei_gpu *g = &r->g;
    mei_push *pu = &r->pu;
    const uint32_t gx = er_vk_groups((uint32_t)r->sim.w, MEI_GROUP), gy = (uint32_t)r->sim.h;
    const uint32_t grows = er_vk_groups((uint32_t)r->sim.h, ER_VK_GROUP);
    set_push_step(pu, step);
    pu->variant = (uint32_t)(m->rain_rate > 0.0 && (m->rain_steps == 0 || step < m->rain_steps));
    if (vk->gate_begin) {
        er_vk_cmd_copy_at(vk, &g->buf[B_ROWS],
                          (VkDeviceSize)r->sim.h * sizeof(mei_rowstat) +
                              offsetof(mei_rowstat, fail_step),
                          &g->gate, 0, sizeof(uint32_t));
        er_vk_cmd_gate_begin(vk, &g->gate, 0);
    }
    if (drops) {
        er_vk_cmd_dispatch(vk, &g->pipe[P_DROPS], 0, pu, 1, 1);
        er_vk_cmd_barrier(vk);
    }
    for (int64_t sub = 0; sub < r->plan->substeps; sub++) {
        if (r->nsrc) {
            pu->n = r->nsrc;
            er_vk_cmd_dispatch(vk, &g->pipe[P_SOURCES], 0, pu, er_vk_groups(r->nsrc, ER_VK_GROUP),
                               1);
            er_vk_cmd_barrier(vk);
        }
        if (r->map_water[0]) {
            er_vk_cmd_dispatch(vk, &g->pipe[P_MAPS], 0, pu, gx, gy);
            er_vk_cmd_barrier(vk);
        }
        er_vk_cmd_dispatch(vk, &g->pipe[P_FLUX], 0, pu, gx, gy);
        er_vk_cmd_barrier(vk);
        er_vk_cmd_dispatch(vk, &g->pipe[P_WATER], 0, pu, gx, gy);
        er_vk_cmd_barrier(vk);
        er_vk_cmd_dispatch(vk, &g->pipe[P_TRANSPORT], 0, pu, gx, gy);
        er_vk_cmd_barrier(vk);
        er_vk_cmd_dispatch(vk, &g->pipe[P_REDUCE], 0, pu, 1, gy);
        er_vk_cmd_barrier(vk);
        pu->n = MEI_LANES;
        er_vk_cmd_dispatch(vk, &g->pipe[P_ROWS], 0, pu, grows, 1);
        er_vk_cmd_barrier(vk);
        er_vk_cmd_dispatch(vk, &g->pipe[P_TOTAL], 0, pu, 1, 1);
        er_vk_cmd_barrier(vk);
    }
    if (vk->gate_begin)
        er_vk_cmd_gate_end(vk);
}

/* Where the batch from `step` ends: after r->batch steps, the run's end,
 * or the first boundary the hooks want (*want = 1), whichever is first. */
static int64_t batch_end(const mei_run *r, int64_t step, int *want)
{
    const int64_t steps = r->plan->p.mei.steps;
    int64_t end = step + r->batch < steps ? step + r->batch : steps;
    *want = 0;
    for (int64_t b = step + 1; b <= end && r->hooks && r->hooks->boundary; b++)
        if (er_hooks_want(r->hooks, b, steps)) {
            *want = 1;
            return b;
        }
    return end;
}

/* The next submission's steps from the last one's: as many as fill
 * SUBMIT_TARGET_S at the measured time per step, at most four times as
 * many as the last (a first short step may be warm-up) and
 * MAX_BATCH_SUBSTEPS sub-steps, at least one.
 * Without the gate the size stays today's fixed one (BATCH_CELLS), since a
 * failing step's state would then depend on the submission's length. */
static void next_batch(mei_run *r, int64_t steps, double sec)
{
    if (!r->vk->gate_begin || steps <= 0)
        return;
    const int64_t sub = r->plan->substeps > 0 ? r->plan->substeps : 1;
    const double most = sub < MAX_BATCH_SUBSTEPS ? (double)(MAX_BATCH_SUBSTEPS / sub) : 1.0;
    double want = sec > 0.0 ? SUBMIT_TARGET_S * (double)steps / sec : 4.0 * (double)steps;
    double cap = 4.0 * (double)steps < most ? 4.0 * (double)steps : most;
    if (steps < r->batch) /* cut short by a boundary: no measure of a full one */
        cap = cap > (double)r->batch ? cap : (double)r->batch;
    r->batch = want < 1.0 ? 1 : want > cap ? (int64_t)cap : (int64_t)want;
}

/* The first failing step the rows recorded, -1 when none. */
static int64_t first_failure(const mei_rowstat *rs, int h)
{
    uint32_t f = 0;
    for (int y = 0; y < h; y++)
        if (rs[y].fail_step && (!f || rs[y].fail_step < f))
            f = rs[y].fail_step;
    return (int64_t)f - 1;
}

/* Submits the recorded batch of `n` steps, timed, and reads the row status
 * back into r->rs. */
static er_status submit_batch(mei_run *r, int64_t n, er_error *err)
{
    er_vk_stats *vs = &r->vk->stats;
    double t0 = wall_now();
    er_status st = er_vk_cmd_submit(r->vk, err);
    if (!st)
        st = er_vk_buffer_invalidate(r->vk, &r->g.rows_host, err);
    if (st)
        return st;
    double sec = wall_now() - t0, gpu = er_vk_timestamp_seconds(r->vk);
    vs->steps_s += sec;
    vs->gpu_timed = gpu >= 0.0;
    vs->gpu_s += gpu >= 0.0 ? gpu : 0.0;
    vs->submissions++;
    vs->steps += n;
    vs->max_steps = n > vs->max_steps ? n : vs->max_steps;
    next_batch(r, n, gpu > 0.0 ? gpu : sec);
    memcpy(r->rs, r->g.rows_host.map, ((size_t)r->sim.h + 1) * sizeof *r->rs);
    return ER_OK;
}

/* Runs the batch [*step, end): records, submits, takes the budget totals
 * and the checks; *step becomes end.  On a failure at step f inside it the
 * gate skipped the steps after f on the device, so the host's accounts go
 * back to f + 1 steps, as a submission that ended at f would leave them. */
static er_status run_batch(mei_run *r, int64_t *step, int64_t end, er_error *err)
{
    const int h = r->sim.h;
    const int64_t first = *step;
    const er_budget before = r->bud;
    er_status st = er_vk_cmd_begin(r->vk, err);
    if (st)
        return at_step(r->vk, st, first, err);
    er_vk_cmd_barrier(r->vk); /* after the last submission's writes */
    er_vk_cmd_timestamp(r->vk, 0);
    for (; *step < end; (*step)++)
        record_step(r, *step, account_step(r, *step));
    er_vk_cmd_copy(r->vk, &r->g.buf[B_ROWS], &r->g.rows_host, r->g.rows_host.size);
    er_vk_cmd_timestamp(r->vk, 1);
    if ((st = submit_batch(r, end - first, err)))
        return at_step(r->vk, st, first, err);
    int64_t failed = first_failure(r->rs, h);
    if (r->vk->gate_begin && failed >= first && failed + 1 < end) {
        r->bud = before;
        for (*step = first; *step <= failed; (*step)++)
            account_step(r, *step);
    }
    r->bud.eroded = r->rs[h].eroded;
    r->bud.deposited = r->rs[h].deposited;
    r->bud.left_map = r->rs[h].left_sed;
    r->bud.water_left = r->rs[h].left_water;
    return row_failure(r->rs, &r->sim, &r->k[0], err);
}

/* The steps from step0 on, batch by batch, with progress and boundaries. */
static er_status run_steps(mei_run *r, int64_t step0, const er_run_ctl *ctl, er_error *err)
{
    const int64_t steps = r->plan->p.mei.steps;
    er_status st = at_boundary(r, step0, 0, err);
    int64_t step = step0;
    while (!st && step < steps) {
        int want;
        int64_t end = batch_end(r, step, &want);
        if ((st = run_batch(r, &step, end, err)))
            break;
        if (ctl && ctl->progress && ctl->progress(ctl->user, (double)step / (double)steps))
            return er_fail(err, ER_ECANCELED, "mei: cancelled at step %lld", (long long)step);
        if (want)
            st = at_boundary(r, step, 1, err);
    }
    return st;
}

er_status er_vk_mei_run(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                        const er_run_opts *o, er_error *err)
{
    static const er_run_opts none;
    if (!o)
        o = &none;
    mei_run r;
    memset(&r, 0, sizeof r);
    r.vk = vk;
    r.plan = plan;
    r.hooks = o->hooks;
    r.layers = o->layers;
    r.g.vk = vk;
    memset(&vk->stats, 0, sizeof vk->stats);
    int64_t step0 = 0;
    er_status st = er_vk_mei_check(vk, plan, t, err);
    if (!st)
        st = run_setup(&r, t, err);
    double t0 = wall_now();
    if (!st)
        st = run_resume(&r, &step0, err);
    vk->stats.upload_s += wall_now() - t0;
    if (!st) {
        st = run_steps(&r, step0, o->ctl, err);
        /* the state as it stands, also after a failed or cancelled step */
        if (st == ER_OK || st == ER_ENUMERIC || st == ER_ECANCELED) {
            t0 = wall_now();
            er_status rst = read_state(&r, 0, err);
            vk->stats.readback_s = wall_now() - t0;
            if (rst)
                st = at_step(vk, rst, r.bud.work_done, err);
            else
                er_mei_finish(&r.sim, t, o->layers, r.bud.material_before, &r.bud);
        }
    }
    if (o->budget)
        *o->budget = r.bud;
    gpu_free(&r.g);
    er_mei_sim_free(&r.sim);
    free(r.rs);
    free(r.map_water[0]);
    free(r.map_water[1]);
    return st;
}
