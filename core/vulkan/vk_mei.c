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
 * A map whose layer exceeds one storage buffer (or the cap
 * er_vk_set_band_bytes sets) runs in row bands with halo rows, with the
 * bits of one band (mei_band below).
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
 * the backend that wrote it).  erode-models(7) "VULKAN BACKEND" gives the
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

#include "../mei/host.h"
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
    int32_t band_y0;    /* the band's first row of the map (mei_band a) */
    uint32_t row0;      /* the dispatch's first row in the band's buffers */
    uint32_t band_rows; /* rows the band's buffers hold */
    uint32_t pad_band;
} mei_push;

/* Part of mei_common.glsl: one workgroup's share of a row. */
typedef struct mei_part {
    double eroded, deposited, left_sed, left_water;
    uint32_t umax, vmax, bad, pad;
} mei_part;

_Static_assert(sizeof(mei_part) == 48, "Part layout");
_Static_assert(sizeof(mei_coef_gpu) == 168, "Coef layout");
_Static_assert(sizeof(mei_rowstat) == 48, "RowStat layout");
_Static_assert(sizeof(mei_push) == 64, "Push layout");

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

/*
 * Bands (erode-models(7) "VULKAN BACKEND", large maps).  A map whose layer does not
 * fit one buffer (band_limit) is cut into bands of whole rows, each with
 * its own buffers holding its rows and HALO rows of each neighbour.  Every
 * pass runs per band over the rows whose stencil lies in the band's
 * buffers (pass_rows: a pass that reads a row away loses a row at each
 * inner band edge, and flux, water_erode and transport each read a row
 * away, so after transport the band's own rows are right when HALO >= 3);
 * then the halo rows of the carried state (exchanged[]) are copied from
 * the bands that own them, once per sub-step.  The halo rows' passes
 * compute the bits the owner computes (the same operations on the same
 * inputs), the per-row reductions read only owned rows into one row
 * status for the map, and rows and total run once over it: so a banded
 * run gives the bits of an unbanded one.  One band of all rows is the
 * unbanded run (no halo, no copies).
 *
 * Halo copies rather than binding the neighbours' buffers: a shader
 * binding three bands would need 3 x 23 storage buffers per stage (more
 * than many devices allow) and a branch per neighbour read; the copies
 * move 2 x 3 rows of 7 layers per band and sub-step, beside the ~60
 * bytes a cell of every sub-step's passes.
 */
#define HALO 3

typedef struct mei_band {
    int a, b;                /* rows of the map its buffers hold: [a, b) */
    int y0, y1;              /* rows it owns: [y0, y1) */
    uint32_t nsrc;           /* source cells in [a, b) */
    er_vk_buffer buf[N_BUF]; /* shared[] ones only in band 0 */
} mei_band;

typedef struct mei_gpu {
    er_vk_ctx *vk;
    mei_band *band;
    int nband;
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

/* Buffers one for the whole map, in band 0: the coefficients, and the
 * per-row reductions, indexed by map row. */
static int shared_buf(int b)
{
    return b == B_COEF || b == B_ROWS || b == B_PART;
}

/* Buffer b as band k binds it. */
static er_vk_buffer *band_buf(mei_gpu *g, int k, int b)
{
    return &g->band[shared_buf(b) ? 0 : k].buf[b];
}

/* The state a sub-step carries to the next and reads a row away: the
 * layers whose halo rows are exchanged. */
static const int exchanged[] = { B_Z, B_D, B_S, B_QL, B_QR, B_QT, B_QB };

static void gpu_free(mei_gpu *g)
{
    for (int i = 0; i < N_PIPE; i++)
        er_vk_pipeline_free(g->vk, &g->pipe[i]);
    for (int k = 0; k < g->nband && g->band; k++)
        for (int i = 0; i < N_BUF; i++)
            er_vk_buffer_free(g->vk, &g->band[k].buf[i]);
    free(g->band);
    g->band = NULL;
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
 * Bytes of every buffer of band k (bd) of a run on map t with a source list
 * of src_words words in that band (0: none), one formula for
 * er_vk_mei_check and gpu_setup; 0 for a buffer band k does not have (the
 * shared ones beyond band 0).  The staging buffer is as large as the
 * largest buffer of the band that passes through it, not as a layer:
 * below 68 cells the coefficients (2 x 136 bytes) are the largest, and
 * overlapping sources can make the source list longer than a layer (on a
 * 4x4 map, 272 bytes of source list against a 64-byte layer), as can
 * the row status of a narrow map.
 */
static void buffer_sizes(const er_terrain *t, const mei_band *bd, int k, size_t src_words,
                         const er_layers *keep, VkDeviceSize size[N_SIZES])
{
    const size_t n = (size_t)t->width * (size_t)(bd->b - bd->a);
    for (int i = 0; i < N_BUF; i++)
        size[i] = (VkDeviceSize)n * sizeof(float);
    size[B_COEF] = 2 * sizeof(mei_coef_gpu);
    size[B_WALL] = t->wall ? wall_bytes(n) : 4; /* one unread word without walls */
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
    for (int i = 0; i < N_BUF; i++)
        if (k > 0 && shared_buf(i))
            size[i] = 0;
    size[S_STAGING] = 0;
    for (size_t i = 0; i < sizeof staged / sizeof staged[0]; i++)
        if (size[staged[i]] > size[S_STAGING])
            size[S_STAGING] = size[staged[i]];
    size[S_ROWS_HOST] = size[B_ROWS];
}

/* Bytes one layer buffer may hold: the device's limits, and with `forced`
 * the cap er_vk_set_band_bytes set, where smaller. */
static VkDeviceSize band_limit(const er_vk_ctx *vk, int forced)
{
    VkDeviceSize l = vk->info.max_storage_buffer_range;
    if (vk->info.max_allocation && vk->info.max_allocation < l)
        l = vk->info.max_allocation;
    if (forced && vk->band_bytes && vk->band_bytes < l)
        l = vk->band_bytes;
    return l;
}

/* The bands a w x h map is cut into: as few as keep every band's layer
 * within band_limit, the rows shared out evenly (so their counts differ by
 * at most one); 0 when not even a band of one row and its halo fits the
 * device's own limit.  A forced limit below that is raised to it. */
static int band_count(const er_vk_ctx *vk, int w, int h)
{
    const VkDeviceSize row = (VkDeviceSize)w * sizeof(float), least = 2 * HALO + 1;
    VkDeviceSize fit = band_limit(vk, 1) / row;
    if (fit >= (VkDeviceSize)h)
        return 1;
    if (band_limit(vk, 0) / row < least)
        return 0;
    fit = fit < least ? least : fit;
    const VkDeviceSize own = fit - 2 * HALO;
    return (int)(((VkDeviceSize)h + own - 1) / own);
}

/* Band k of n of a map of h rows. */
static void band_cut(int k, int n, int h, mei_band *bd)
{
    bd->y0 = (int)((int64_t)k * h / n);
    bd->y1 = (int)((int64_t)(k + 1) * h / n);
    bd->a = bd->y0 - HALO > 0 ? bd->y0 - HALO : 0;
    bd->b = bd->y1 + HALO < h ? bd->y1 + HALO : h;
}

/* The sizes of every band's buffers (nband x N_SIZES; src_words per band,
 * or NULL for none), the one staging buffer (the largest any band needs)
 * counted in band 0.  The caller frees. */
static VkDeviceSize *all_sizes(const er_terrain *t, const mei_band *bands, int nband,
                               const size_t *src_words, const er_layers *keep)
{
    VkDeviceSize *size = calloc((size_t)nband * N_SIZES, sizeof *size);
    for (int k = 0; size && k < nband; k++) {
        VkDeviceSize *sk = size + (size_t)k * N_SIZES;
        buffer_sizes(t, &bands[k], k, src_words ? src_words[k] : 0, keep, sk);
        if (sk[S_STAGING] > size[S_STAGING])
            size[S_STAGING] = sk[S_STAGING];
        if (k > 0)
            sk[S_STAGING] = 0;
    }
    return size;
}

/* Checks the limits of a map cut into nband bands: the allocations, and
 * every buffer against the device's (er_vk_check_sizes). */
static er_status check_bands(er_vk_ctx *vk, const er_terrain *t, int nband, const char *what,
                             er_error *err)
{
    const er_vk_device_info *d = &vk->info;
    const uint32_t most = vk->props.limits.maxMemoryAllocationCount;
    if (!nband)
        return er_fail(err, ER_ENOMEM, "vulkan: %s has rows too long for the device's "
                       "buffers (%d rows of %.1f MiB exceed %.1f MiB on %s); use --backend cpu",
                       what, 2 * HALO + 1, (double)t->width * 4.0 / 1048576.0,
                       (double)band_limit(vk, 0) / 1048576.0, d->name);
    if ((uint64_t)nband * N_BUF + 8 > most)
        return er_fail(err, ER_ENOMEM, "vulkan: %s in %d bands needs more buffers than the "
                       "device's %u allocations; raise the band size or use --backend cpu",
                       what, nband, most);
    mei_band *bands = calloc((size_t)nband, sizeof *bands);
    const er_layers all = { NULL, NULL, t->elevation, t->elevation };
    for (int k = 0; bands && k < nband; k++)
        band_cut(k, nband, t->height, &bands[k]);
    VkDeviceSize *size = bands ? all_sizes(t, bands, nband, NULL, &all) : NULL;
    er_status st = size ? er_vk_check_sizes(vk, size, (size_t)nband * N_SIZES, what, err)
                        : er_fail(err, ER_ENOMEM, "mei: out of memory for %s", what);
    free(size);
    free(bands);
    return st;
}

void er_vk_set_band_bytes(er_vk_ctx *vk, uint64_t bytes)
{
    vk->band_bytes = bytes;
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
    return check_bands(vk, t, band_count(vk, t->width, t->height), what, err);
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

/* The covered cells of the sources, collected by er_source_cells. */
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

/* The packed list of mei_sources.comp from the sorted entries: the cells
 * (less base, the band's first cell), the start of each cell's amounts,
 * then the amounts in recipe order. */
static uint32_t *pack_sources(const src_entry *e, size_t ne, size_t base, size_t *nwords,
                              uint32_t *ncells)
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
            wd[u] = (uint32_t)(e[i].cell - base);
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

/* The cells core/mei/pipe.c er_mei_add_sources covers (world pixels
 * shifted into the window), each with its sources' depths per sub-step,
 * sorted by cell and then in recipe order, into *l (the caller frees l->e). */
static er_status build_sources(const er_mei_sim *sim, const er_source_list *sl, double dt,
                               src_list *l, er_error *err)
{
    const er_source_grid g = er_mei_grid(sim);
    memset(l, 0, sizeof *l);
    for (int i = 0; i < sl->n && !l->failed; i++) {
        const er_source *src = &sl->src[i];
        l->amount = er_source_depth(src, dt);
        if (l->amount > 0.0f)
            er_source_cells(&g, src, collect, l);
    }
    if (!l->failed && l->n)
        qsort(l->e, l->n, sizeof *l->e, by_cell);
    return l->failed ? er_fail(err, ER_ENOMEM, "mei: out of memory for the sources") : ER_OK;
}

/* The source list of mei_sources.comp for the band's rows: *words
 * receives the buffer (the caller frees; NULL when no cell of the band is
 * covered). */
static er_status band_sources(const src_list *l, const mei_band *bd, int w, uint32_t **words,
                              size_t *nwords, uint32_t *ncells, er_error *err)
{
    const size_t lo = (size_t)bd->a * (size_t)w, hi = (size_t)bd->b * (size_t)w;
    size_t i0 = 0, i1;
    *words = NULL;
    *nwords = 0;
    *ncells = 0;
    while (i0 < l->n && l->e[i0].cell < lo)
        i0++;
    for (i1 = i0; i1 < l->n && l->e[i1].cell < hi; i1++)
        ;
    if (i1 == i0)
        return ER_OK;
    *words = pack_sources(l->e + i0, i1 - i0, lo, nwords, ncells);
    return *words ? ER_OK : er_fail(err, ER_ENOMEM, "mei: out of memory for the sources");
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

/* Reads `bytes` of buffer b from byte off back into out.  b must be one
 * of staged[]. */
static er_status download_at(mei_gpu *g, const er_vk_buffer *b, size_t off, void *out,
                             size_t bytes, er_error *err)
{
    er_status st;
    assert(off + bytes <= b->size && bytes <= g->staging.size);
    if ((st = er_vk_cmd_begin(g->vk, err)))
        return st;
    er_vk_cmd_copy_at(g->vk, b, off, &g->staging, 0, bytes);
    if ((st = er_vk_cmd_submit(g->vk, err)) ||
        (st = er_vk_buffer_invalidate(g->vk, &g->staging, err)))
        return st;
    memcpy(out, g->staging.map, bytes);
    return ER_OK;
}

/* Uploads the rows band k holds of the map-sized array data (cb bytes a
 * cell) into its buffer b. */
static er_status upload_rows(mei_gpu *g, int k, int b, const void *data, size_t cb, int w,
                             er_error *err)
{
    const mei_band *bd = &g->band[k];
    const size_t row = (size_t)w * cb;
    return upload(g, &g->band[k].buf[b], (const unsigned char *)data + (size_t)bd->a * row,
                  (size_t)(bd->b - bd->a) * row, err);
}

/* Reads the rows band k owns of its buffer b into the map-sized array out. */
static er_status download_rows(mei_gpu *g, int k, int b, float *out, int w, er_error *err)
{
    const mei_band *bd = &g->band[k];
    const size_t row = (size_t)w * sizeof(float);
    return download_at(g, &bd->buf[b], (size_t)(bd->y0 - bd->a) * row,
                       (unsigned char *)out + (size_t)bd->y0 * row,
                       (size_t)(bd->y1 - bd->y0) * row, err);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Creates the buffers of every band (src_words: each band's source list),
 * the staging buffers and the gate. */
static er_status gpu_buffers(mei_gpu *g, const er_terrain *t, const er_layers *keep,
                             const size_t *src_words, er_error *err)
{
    VkDeviceSize *size = all_sizes(t, g->band, g->nband, src_words, keep);
    er_status st = size ? ER_OK : er_fail(err, ER_ENOMEM, "mei: out of memory for the bands");
    for (int k = 0; k < g->nband && !st; k++)
        for (int i = 0; i < N_BUF && !st; i++)
            if (size[(size_t)k * N_SIZES + (size_t)i])
                st = er_vk_buffer_new(g->vk, size[(size_t)k * N_SIZES + (size_t)i], ER_VK_DEVICE,
                                      &g->band[k].buf[i], buf_names[i], err);
    if (!st)
        st = er_vk_buffer_new(g->vk, size[S_STAGING], ER_VK_STAGING, &g->staging, "staging", err);
    if (!st)
        st = er_vk_buffer_new(g->vk, size[S_ROWS_HOST], ER_VK_STAGING, &g->rows_host,
                              "row status", err);
    if (!st && g->vk->gate_begin)
        st = er_vk_buffer_new(g->vk, 4, ER_VK_DEVICE, &g->gate, "step gate", err);
    free(size);
    return st;
}

/* The pipelines, created once, with one descriptor set a band. */
static er_status gpu_pipelines(mei_gpu *g, er_error *err)
{
    const int dp = er_vk_mei_exactness(er_vk_info(g->vk)) == ER_VK_EXACT_DECLARED;
    const double t0 = wall_now();
    er_status st = ER_OK;
    for (int p = 0; p < N_PIPE && !st; p++) {
        st = er_vk_pipeline_new(g->vk, shaders[p].spv[dp], shaders[p].bytes[dp], N_BUF,
                                sizeof(mei_push), (uint32_t)g->nband, &g->pipe[p], err);
        for (int k = 0; k < g->nband && !st; k++) {
            const er_vk_buffer *bind[N_BUF];
            for (int i = 0; i < N_BUF; i++)
                bind[i] = band_buf(g, k, i);
            er_vk_pipeline_bind(g->vk, &g->pipe[p], (uint32_t)k, bind);
        }
    }
    g->vk->stats.pipeline_s = wall_now() - t0;
    return st;
}

/* Band k's inputs: the terrain's rows, their walls, the band's sources. */
static er_status upload_band(mei_gpu *g, const er_terrain *t, int k, const uint32_t *src,
                             size_t src_words, er_error *err)
{
    er_status st = upload_rows(g, k, B_B0, t->elevation, sizeof(float), t->width, err);
    if (!st && t->wall)
        st = upload_rows(g, k, B_WALL, t->wall, 1, t->width, err);
    if (!st && src_words)
        st = upload(g, &g->band[k].buf[B_SRC], src, src_words * sizeof(uint32_t), err);
    return st;
}

/* Clears what a run reads before writing it (the CPU's calloc): the
 * carried state, the accumulators, the row status.  The rest (z2, s1, wq,
 * u, v, er, de, the parts) each sub-step writes before a pass reads it, on
 * every row a pass reads, and the unread words are never read: clearing
 * them would take most of a large map's upload on lavapipe. */
static er_status clear_state(mei_gpu *g, er_error *err)
{
    static const int cleared[] = { B_Z, B_D, B_S, B_QL, B_QR, B_QT, B_QB, B_FLOW, B_WEAR,
                                   B_ROWS };
    er_status st = er_vk_cmd_begin(g->vk, err);
    if (st)
        return st;
    for (int k = 0; k < g->nband; k++)
        for (size_t i = 0; i < sizeof cleared / sizeof cleared[0]; i++)
            if (k == 0 || !shared_buf(cleared[i]))
                er_vk_cmd_fill(g->vk, &g->band[k].buf[cleared[i]], 0);
    return er_vk_cmd_submit(g->vk, err);
}

/* Cuts the map into bands, creates everything and uploads the inputs. */
static er_status gpu_setup(mei_gpu *g, const er_terrain *t, const er_layers *keep,
                           const mei_coef_gpu coef[2], const src_list *src, er_error *err)
{
    er_status st = ER_OK;
    const int n = band_count(g->vk, t->width, t->height);
    uint32_t **words = calloc((size_t)n, sizeof *words);
    size_t *nwords = calloc((size_t)n, sizeof *nwords);
    g->band = calloc((size_t)n, sizeof *g->band);
    if (!words || !nwords || !g->band)
        st = er_fail(err, ER_ENOMEM, "mei: out of memory for the bands");
    g->nband = g->band ? n : 0;
    for (int k = 0; k < g->nband && !st; k++) {
        band_cut(k, n, t->height, &g->band[k]);
        st = band_sources(src, &g->band[k], t->width, &words[k], &nwords[k], &g->band[k].nsrc,
                          err);
    }
    if (!st && !(st = gpu_buffers(g, t, keep, nwords, err)) && !(st = gpu_pipelines(g, err)))
        st = upload(g, &g->band[0].buf[B_COEF], coef, 2 * sizeof(mei_coef_gpu), err);
    for (int k = 0; k < g->nband && !st; k++)
        st = upload_band(g, t, k, words[k], nwords[k], err);
    if (!st)
        st = clear_state(g, err);
    for (int k = 0; words && k < n; k++)
        free(words[k]);
    free(words);
    free(nwords);
    g->vk->stats.bands = g->nband;
    return st;
}

/* Uploads the control maps given into every band; the sources raster as
 * the depth (float)(q dt) it adds per sub-step of dt seconds, as
 * core/mei/pipe.c er_mei_add_maps rounds it. */
static er_status upload_maps(mei_gpu *g, const er_terrain *t, double dt, er_error *err)
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    er_status st = ER_OK;
    for (int b = B_HARD; b < B_QDT; b++)
        for (int k = 0; k < g->nband && !st && ctl_map(t->controls, b); k++)
            st = upload_rows(g, k, b, ctl_map(t->controls, b), sizeof(float), t->width, err);
    const float *q = ctl_map(t->controls, B_QDT);
    if (st || !q)
        return st;
    float *qdt = malloc(n * sizeof *qdt);
    if (!qdt)
        return er_fail(err, ER_ENOMEM, "mei: out of memory for the sources map");
    for (size_t i = 0; i < n; i++)
        qdt[i] = (float)((double)q[i] * dt);
    for (int k = 0; k < g->nband && !st; k++)
        st = upload_rows(g, k, B_QDT, qdt, sizeof(float), t->width, err);
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
    uint32_t nsrc;       /* cells the sources cover in a band, at most */
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
        er_mei_add_maps(&r->sim, NULL, r->k[v].rain, r->plan->own.mei.dt_sub, &unused);
        for (int y = 0; y < h; y++)
            r->map_water[v][y] = r->sim.acc[y].eroded;
    }
    return ER_OK;
}

/* The push constants of the raindrop pass: the disc of radius rad around
 * an integer centre is centre +- floor(rad), and a cell is in when
 * dx^2 + dy^2 <= floor(rad^2) (core/sources.c er_disc_cells). */
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
    src_list src = { 0 };
    er_status st = er_mei_sim_alloc(&r->sim, t, plan->windowed ? &plan->win : NULL, err);
    if (st)
        return st;
    er_mei_keep_layers(&r->sim, r->layers);
    for (int i = 0; i < 2; i++) {
        er_mei_make_coef(&r->sim, &plan->p.mei, plan->own.mei.dt_sub, i, &r->k[i]);
        fill_coef(&r->k[i], &r->sim, &r->kg[i]);
    }
    /* the same stability check as the CPU (condition 2 of core/mei/mei.c) */
    if (plan->p.mei.steps > 0 && (st = er_mei_check_coef(&r->k[0], err)))
        return st;
    r->rs = calloc((size_t)t->height + 1, sizeof *r->rs);
    if (!r->rs)
        return er_fail(err, ER_ENOMEM, "mei: out of memory for a %dx%d map", t->width,
                       t->height);
    if ((st = build_sources(&r->sim, &plan->p.river, plan->own.mei.dt_sub, &src, err))) {
        free(src.e);
        return st;
    }
    r->cells = er_mei_terrain_cells(&r->sim);
    r->bud.material_before = er_mei_total(&r->sim, r->sim.b0);
    drop_push(&plan->p, &r->pu);
    uint64_t per_step = (uint64_t)t->width * (uint64_t)t->height * (uint64_t)plan->own.mei.substeps;
    r->batch = (int64_t)(BATCH_CELLS / (per_step ? per_step : 1));
    r->batch = r->batch < 1 ? 1 : r->batch > FIRST_BATCH_STEPS ? FIRST_BATCH_STEPS : r->batch;
    const er_layers keep = { NULL, NULL, r->sim.flow, r->sim.wear };
    double t0 = wall_now();
    if ((st = gpu_setup(&r->g, t, &keep, r->kg, &src, err)) ||
        (st = upload_maps(&r->g, t, plan->own.mei.dt_sub, err)))
        st = at_step(r->vk, st, 0, err);
    r->vk->stats.upload_s += wall_now() - t0 - r->vk->stats.pipeline_s;
    if (!st)
        st = map_water_rows(r, err);
    for (int k = 0; k < r->g.nband; k++)
        r->nsrc = r->g.band[k].nsrc > r->nsrc ? r->g.band[k].nsrc : r->nsrc;
    note_kernels(r);
    free(src.e);
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
    er_status st = ER_OK;
    for (int i = 0; i < ER_STATE_ARRAYS && !st; i++) {
        float *a = state_array(&r->sim, i);
        int output = i <= ER_STATE_MEI_S || i >= ER_STATE_MEI_FLOW;
        for (int k = 0; k < r->g.nband && !st && a && (all || output); k++)
            st = download_rows(&r->g, k, state_buf[i], a, r->sim.w, err);
    }
    return st;
}

/* A resumed run: its state and budget totals into the device; *step0
 * receives the step to go on from (0 without a resume state). */
static er_status run_resume(mei_run *r, int64_t *step0, er_error *err)
{
    const int h = r->sim.h;
    *step0 = 0;
    if (!r->hooks || !r->hooks->resume)
        return ER_OK;
    er_status st = er_mei_restore(&r->sim, r->plan, r->hooks->resume, &r->bud, step0, err);
    for (int i = 0; i < ER_STATE_ARRAYS && !st; i++)
        for (int k = 0; k < r->g.nband && !st && state_array(&r->sim, i); k++)
            st = upload_rows(&r->g, k, state_buf[i], state_array(&r->sim, i), sizeof(float),
                             r->sim.w, err);
    memset(r->rs, 0, ((size_t)h + 1) * sizeof *r->rs);
    r->rs[h].eroded = r->bud.eroded;
    r->rs[h].deposited = r->bud.deposited;
    r->rs[h].left_sed = r->bud.left_map;
    r->rs[h].left_water = r->bud.water_left;
    if (!st)
        st = upload(&r->g, &r->g.band[0].buf[B_ROWS], r->rs, ((size_t)h + 1) * sizeof *r->rs, err);
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
    for (int64_t sub = 0; sub < r->plan->own.mei.substeps; sub++) {
        er_mei_add_sources(&r->sim, NULL, &p->river, r->plan->own.mei.dt_sub, &r->bud.water_added);
        if (r->map_water[0])
            for (int y = 0; y < r->sim.h; y++)
                r->bud.water_added += r->map_water[raining][y];
        r->bud.water_added += (double)r->kg[raining].rain * (double)r->cells;
        r->bud.substeps++;
    }
    r->bud.work_done++;
    return drops;
}

/* The rows [*lo, *hi) of the map a pass covers in band bd: the rows its
 * buffers hold less `margin` at each edge inside the map (the rows whose
 * inputs a pass that reads rows up to `margin` away has), or with
 * margin < 0 the rows bd owns. */
static void pass_rows(const mei_band *bd, int h, int margin, int *lo, int *hi)
{
    *lo = margin < 0 ? bd->y0 : bd->a > 0 ? bd->a + margin : 0;
    *hi = margin < 0 ? bd->y1 : bd->b < h ? bd->b - margin : h;
}

static void band_push(mei_push *pu, const mei_band *bd, int lo)
{
    pu->band_y0 = bd->a;
    pu->row0 = (uint32_t)(lo - bd->a);
    pu->band_rows = (uint32_t)(bd->b - bd->a);
}

/* Records per-row pass p on every band: gx workgroups a row, one row of
 * workgroups per row pass_rows gives it. */
static void dispatch_rows(mei_run *r, int p, uint32_t gx, int margin)
{
    for (int k = 0; k < r->g.nband; k++) {
        const mei_band *bd = &r->g.band[k];
        int lo, hi;
        pass_rows(bd, r->sim.h, margin, &lo, &hi);
        band_push(&r->pu, bd, lo);
        if (hi > lo)
            er_vk_cmd_dispatch(r->vk, &r->g.pipe[p], (uint32_t)k, &r->pu, gx,
                               (uint32_t)(hi - lo));
    }
}

/* Records the raindrops (one workgroup) or the sources (a band's cells) on
 * every band, over all the rows its buffers hold. */
static void dispatch_cells(mei_run *r, int p)
{
    for (int k = 0; k < r->g.nband; k++) {
        const mei_band *bd = &r->g.band[k];
        band_push(&r->pu, bd, bd->a);
        r->pu.n = bd->nsrc;
        if (p == P_DROPS || bd->nsrc)
            er_vk_cmd_dispatch(r->vk, &r->g.pipe[p], (uint32_t)k, &r->pu,
                               p == P_DROPS ? 1 : er_vk_groups(bd->nsrc, ER_VK_GROUP), 1);
    }
}

/* Copies the halo rows of the exchanged layers from the bands that own
 * them (each band owns at least one row, so HALO bands either side hold
 * them all). */
static void exchange_halos(mei_run *r)
{
    const mei_gpu *g = &r->g;
    const VkDeviceSize row = (VkDeviceSize)r->sim.w * sizeof(float);
    for (int k = 0; k < g->nband; k++)
        for (int j = k - HALO; j <= k + HALO; j++) {
            if (j < 0 || j >= g->nband || j == k)
                continue;
            const mei_band *to = &g->band[k], *from = &g->band[j];
            int lo = to->a > from->y0 ? to->a : from->y0, hi = to->b < from->y1 ? to->b : from->y1;
            for (size_t i = 0; hi > lo && i < sizeof exchanged / sizeof exchanged[0]; i++)
                er_vk_cmd_copy_at(r->vk, &from->buf[exchanged[i]], (VkDeviceSize)(lo - from->a) * row,
                                  &to->buf[exchanged[i]], (VkDeviceSize)(lo - to->a) * row,
                                  (VkDeviceSize)(hi - lo) * row);
        }
}

/* Records one sub-step's passes on every band (the margins: how far
 * each pass reads, mei_band). */
static void record_substep(mei_run *r)
{
    er_vk_ctx *vk = r->vk;
    const uint32_t gx = er_vk_groups((uint32_t)r->sim.w, MEI_GROUP);
    if (r->nsrc) {
        dispatch_cells(r, P_SOURCES);
        er_vk_cmd_barrier(vk);
    }
    if (r->map_water[0]) {
        dispatch_rows(r, P_MAPS, gx, 0);
        er_vk_cmd_barrier(vk);
    }
    dispatch_rows(r, P_FLUX, gx, 1);
    er_vk_cmd_barrier(vk);
    dispatch_rows(r, P_WATER, gx, 2);
    er_vk_cmd_barrier(vk);
    dispatch_rows(r, P_TRANSPORT, gx, 3);
    er_vk_cmd_barrier(vk);
    /* the halo copies write no row reduce reads: no barrier between them */
    dispatch_rows(r, P_REDUCE, 1, -1);
    exchange_halos(r);
    er_vk_cmd_barrier(vk);
    r->pu.n = MEI_LANES;
    er_vk_cmd_dispatch(vk, &r->g.pipe[P_ROWS], 0, &r->pu,
                       er_vk_groups((uint32_t)r->sim.h, ER_VK_GROUP), 1);
    er_vk_cmd_barrier(vk);
    er_vk_cmd_dispatch(vk, &r->g.pipe[P_TOTAL], 0, &r->pu, 1, 1);
    er_vk_cmd_barrier(vk);
}

/* Records the passes of step `step`.  With the gate, the step's dispatches
 * are skipped once a step before it failed (mei_total.comp keeps the first
 * failure in rows[h].fail_step), so the state a failing run ends with is
 * that after its failing step, whichever submission held it.  The gate
 * does not skip the halo copies; they then copy rows no pass changes. */
static void record_step(mei_run *r, int64_t step, int drops)
{
    const er_mei_params *m = &r->plan->p.mei;
    er_vk_ctx *vk = r->vk;
    mei_gpu *g = &r->g;
    set_push_step(&r->pu, step);
    r->pu.variant = (uint32_t)(m->rain_rate > 0.0 && (m->rain_steps == 0 || step < m->rain_steps));
    if (vk->gate_begin) {
        er_vk_cmd_copy_at(vk, &g->band[0].buf[B_ROWS],
                          (VkDeviceSize)r->sim.h * sizeof(mei_rowstat) +
                              offsetof(mei_rowstat, fail_step),
                          &g->gate, 0, sizeof(uint32_t));
        er_vk_cmd_gate_begin(vk, &g->gate, 0);
    }
    if (drops) {
        dispatch_cells(r, P_DROPS);
        er_vk_cmd_barrier(vk);
    }
    for (int64_t sub = 0; sub < r->plan->own.mei.substeps; sub++)
        record_substep(r);
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
 * Without the gate the size stays the fixed BATCH_CELLS, since a
 * failing step's state would then depend on the submission's length. */
static void next_batch(mei_run *r, int64_t steps, double sec)
{
    if (!r->vk->gate_begin || steps <= 0)
        return;
    const int64_t sub = r->plan->own.mei.substeps > 0 ? r->plan->own.mei.substeps : 1;
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
    er_vk_cmd_copy(r->vk, &r->g.band[0].buf[B_ROWS], &r->g.rows_host, r->g.rows_host.size);
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
