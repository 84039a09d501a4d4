/*
 * The Mei et al. (2007) grid model on Vulkan: the same physics as the CPU
 * path (core/mei/mei.c, pipe.c, erosion.c, transport.c), one compute dispatch
 * per pass, the whole state resident in device memory for the run.
 *
 * A (sub-)step is six dispatches with a barrier between each, every pass
 * reading what the one before wrote (Jacobi style, as DESIGN.md §5 asks):
 *
 *   sources       eq. 1    river sources added to d (once per sub-step)
 *   flux          eqs. 2-5 q from old z, d of the neighbourhood (own q in place)
 *   water_erode   eqs. 6-12, 15: d, u, v; z2 and s1 from the old z
 *   transport     eq. 13 (or eq. 14, semi-Lagrangian) and drying: s, and z from z2
 *   reduce        per row, 64 interleaved partial budget sums and maxima
 *   rows          per row: the partial sums added in order, the checks of
 *                 core/mei/mei.c finish_substep
 *
 * plus `drops` (eq. 1, random raindrops, counter-based RNG) once a step.
 * Where the CPU updates rows in place behind a snapshot, the device keeps
 * z and z2 apart, so no pass reads a value another invocation of the same
 * pass writes.  Coefficients come from er_mei_make_coef and the sub-step
 * count from the run plan (core/plan.h), so both paths compute with the same
 * float constants.
 *
 * Steps are recorded in batches (about 2^24 cell-updates each) into one
 * command buffer; after each batch the host waits on a fence, reads back
 * the small per-row status buffer (h * 48 bytes: budget sums and the first
 * failure seen), reports progress and stops on a failure.  The state
 * itself is read back once, at the end.
 *
 * Agreement with the CPU: every shader expression keeps the CPU's order of
 * operations and is `precise` (no FMA contraction); the square root is the
 * CPU's er_sqrt (+ - * only).  What can still differ is division (Vulkan
 * allows 2.5 ulp for a / b; lavapipe divides exactly) and denormals
 * (devices may flush them).  Budget sums are per row in column order,
 * rows added on the host top to bottom: deterministic, but not the CPU's
 * order, so they agree to rounding.  README "Vulkan backend" gives the
 * measured differences and the tolerances the tests use.
 */
#include "vk.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mei/mei_internal.h"
#include "../rng.h"

#include "mei_drops.spv.h"
#include "mei_flux.spv.h"
#include "mei_reduce.spv.h"
#include "mei_rows.spv.h"
#include "mei_sources.spv.h"
#include "mei_transport.spv.h"
#include "mei_water_erode.spv.h"

/* Buffer bindings, as mei_common.glsl declares them. */
enum {
    B_COEF, B_B0, B_Z, B_Z2, B_D, B_S, B_S1, B_QL, B_QR, B_QT, B_QB, B_WQ, B_U, B_V, B_ER,
    B_DE, B_WALL, B_ROWS, B_SRC, B_PART, N_BUF
};

/* Cells of a row one workgroup of the per-cell passes covers (MEI_GROUP in
 * mei_common.glsl): wide groups, because lavapipe pays per workgroup. */
#define MEI_GROUP 256

enum { P_DROPS, P_SOURCES, P_FLUX, P_WATER, P_TRANSPORT, P_REDUCE, P_ROWS, N_PIPE };

/* Interleaved partial sums per row (MEI_LANES in mei_common.glsl). */
#define MEI_LANES 64

/* Coef of mei_common.glsl (std430: the doubles first, then 4-byte scalars). */
typedef struct mei_coef_gpu {
    double lx_slack, ly_slack;
    float dt, rain, cx, cy, hlx, hly, inv2lx, inv2ly, invlx, invly, kc, inv_cd, cd_off,
        ks_dt, kd_dt, emax, min_tilt2, keep, dry, th_k, talus_x, talus_y, dt_lx, dt_ly;
    int32_t w, h, open, has_wall, semi_lagrangian, pad;
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
_Static_assert(sizeof(mei_coef_gpu) == 136, "Coef layout");
_Static_assert(sizeof(mei_rowstat) == 48, "RowStat layout");
_Static_assert(sizeof(mei_push) == 48, "Push layout");

/* The CFL check's allowance for rounding (core/mei/mei.c finish_substep). */
#define CFL_SLACK (1.0 + 1e-3)

/* Cell-updates per recorded batch: large enough that submission costs
 * nothing, small enough that progress and cancelling stay responsive. */
#define BATCH_CELLS ((uint64_t)1 << 24)
#define MAX_BATCH_STEPS 256

typedef struct mei_gpu {
    er_vk_ctx *vk;
    er_vk_buffer buf[N_BUF];
    er_vk_buffer staging;   /* host-visible, for uploads and the final read-back */
    er_vk_buffer rows_host; /* host-visible copy of B_ROWS after each batch */
    er_vk_pipeline pipe[N_PIPE];
} mei_gpu;

static const struct {
    const uint32_t *spv;
    size_t bytes;
} shaders[N_PIPE] = {
    [P_DROPS] = { er_spv_mei_drops, sizeof er_spv_mei_drops },
    [P_SOURCES] = { er_spv_mei_sources, sizeof er_spv_mei_sources },
    [P_FLUX] = { er_spv_mei_flux, sizeof er_spv_mei_flux },
    [P_WATER] = { er_spv_mei_water_erode, sizeof er_spv_mei_water_erode },
    [P_TRANSPORT] = { er_spv_mei_transport, sizeof er_spv_mei_transport },
    [P_REDUCE] = { er_spv_mei_reduce, sizeof er_spv_mei_reduce },
    [P_ROWS] = { er_spv_mei_rows, sizeof er_spv_mei_rows },
};

static const char *const buf_names[N_BUF] = {
    "coefficient", "initial terrain", "terrain change", "terrain change (new)", "water",
    "sediment", "sediment (eroded)", "left flux", "right flux", "top flux", "bottom flux",
    "donor weight", "velocity u", "velocity v", "eroded", "deposited", "nodata",
    "row status", "source", "row part",
};

static void gpu_free(mei_gpu *g)
{
    for (int i = 0; i < N_PIPE; i++)
        er_vk_pipeline_free(g->vk, &g->pipe[i]);
    for (int i = 0; i < N_BUF; i++)
        er_vk_buffer_free(g->vk, &g->buf[i]);
    er_vk_buffer_free(g->vk, &g->staging);
    er_vk_buffer_free(g->vk, &g->rows_host);
}

/* Bytes of the wall buffer: one byte a cell, rounded up to whole words. */
static VkDeviceSize wall_bytes(size_t n)
{
    return (VkDeviceSize)((n + 3) / 4 * 4);
}

/* size[] of buffer_sizes: the device buffers (B_*), then the host-visible
 * staging buffer and the host copy of the row status. */
enum { S_STAGING = N_BUF, S_ROWS_HOST, N_SIZES };

/* The buffers that pass through the staging buffer: the uploads of
 * gpu_setup and the read-backs at the end of er_vk_mei_run. */
static const int staged[] = { B_COEF, B_B0, B_WALL, B_SRC, B_Z, B_S, B_D };

/*
 * Bytes of every buffer of a run on map t with a source list of src_words
 * words (0: none), one formula for er_vk_mei_check and gpu_setup.  The
 * staging buffer is as large as the largest buffer that passes through it,
 * not as a layer: below 68 cells the coefficients (2 x 136 bytes) are the
 * largest, and overlapping sources can make the source list longer than a
 * layer (issue #12: a 4x4 map wrote 272 bytes into a 64-byte staging
 * buffer).
 */
static void buffer_sizes(const er_terrain *t, size_t src_words, VkDeviceSize size[N_SIZES])
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    for (int i = 0; i < N_BUF; i++)
        size[i] = (VkDeviceSize)n * sizeof(float);
    size[B_COEF] = 2 * sizeof(mei_coef_gpu);
    size[B_WALL] = wall_bytes(n);
    size[B_ROWS] = (VkDeviceSize)t->height * sizeof(mei_rowstat);
    size[B_SRC] = src_words ? (VkDeviceSize)src_words * sizeof(uint32_t) : 4;
    size[B_PART] = (VkDeviceSize)t->height * MEI_LANES * sizeof(mei_part);
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
    buffer_sizes(t, 0, size);
    return er_vk_check_sizes(vk, size, N_SIZES, what, err);
}

/* The cells of the disc of radius rad around (cx, cy): core/mei/pipe.c
 * disc_box and in_disc, on the host (sources and the raindrop count). */
static int disc_box(int w, int h, double cx, double cy, double rad, int box[4], int *single)
{
    if (!(rad >= 0.0))
        rad = 0.0;
    double lo_x = ceil(cx - rad), hi_x = floor(cx + rad);
    double lo_y = ceil(cy - rad), hi_y = floor(cy + rad);
    *single = 0;
    if (lo_x > hi_x || lo_y > hi_y) {
        lo_x = hi_x = floor(cx + 0.5);
        lo_y = hi_y = floor(cy + 0.5);
        *single = 1;
    }
    if (hi_x < 0 || hi_y < 0 || lo_x > w - 1 || lo_y > h - 1)
        return 0;
    box[0] = lo_x < 0 ? 0 : (int)lo_x;
    box[1] = hi_x > w - 1 ? w - 1 : (int)hi_x;
    box[2] = lo_y < 0 ? 0 : (int)lo_y;
    box[3] = hi_y > h - 1 ? h - 1 : (int)hi_y;
    return 1;
}

static int in_disc(double cx, double cy, double rad, int x, int y, int single)
{
    double dx = x - cx, dy = y - cy;
    return single || dx * dx + dy * dy <= rad * rad;
}

/* Terrain cells a disc covers (what er_mei_add_drops counts). */
static int64_t disc_cells(const er_terrain *t, double cx, double cy, double rad)
{
    int box[4], single;
    int64_t n = 0;
    if (!disc_box(t->width, t->height, cx, cy, rad, box, &single))
        return 0;
    for (int y = box[2]; y <= box[3]; y++)
        for (int x = box[0]; x <= box[1]; x++) {
            size_t i = (size_t)y * (size_t)t->width + (size_t)x;
            n += (!t->wall || !t->wall[i]) && in_disc(cx, cy, rad, x, y, single);
        }
    return n;
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

/* The source list of mei_sources.comp: the covered cells, each with its
 * sources' depths per sub-step in recipe order.  *words receives the
 * buffer (the caller frees), *ncells the cells, *covered[i] the cells
 * source i covers (for water_added, 0 for a source that adds nothing). */
static er_status build_sources(const er_terrain *t, const er_mei_params *m, double dt,
                               uint32_t **words, size_t *nwords, uint32_t *ncells,
                               int64_t covered[ER_MAX_SOURCES], float amounts[ER_MAX_SOURCES],
                               er_error *err)
{
    size_t cap = 0, ne = 0;
    src_entry *e = NULL;
    *words = NULL;
    *nwords = 0;
    *ncells = 0;
    for (int s = 0; s < m->n_sources; s++) {
        const er_source *src = &m->sources[s];
        int box[4], single;
        amounts[s] = (float)(src->rate * dt);
        covered[s] = 0;
        if (!(amounts[s] > 0.0f) ||
            !disc_box(t->width, t->height, src->x, src->y, src->radius, box, &single))
            continue;
        for (int y = box[2]; y <= box[3]; y++)
            for (int x = box[0]; x <= box[1]; x++) {
                size_t i = (size_t)y * (size_t)t->width + (size_t)x;
                if ((t->wall && t->wall[i]) || !in_disc(src->x, src->y, src->radius, x, y, single))
                    continue;
                if (ne == cap) {
                    size_t nc = cap ? 2 * cap : 256;
                    src_entry *more = realloc(e, nc * sizeof *e);
                    if (!more) {
                        free(e);
                        return er_fail(err, ER_ENOMEM, "mei: out of memory for the sources");
                    }
                    e = more;
                    cap = nc;
                }
                e[ne] = (src_entry){ (uint32_t)i, (uint32_t)ne, amounts[s] };
                ne++;
                covered[s]++;
            }
    }
    if (ne == 0) {
        free(e);
        return ER_OK;
    }
    qsort(e, ne, sizeof *e, by_cell);
    uint32_t nu = 0;
    for (size_t i = 0; i < ne; i++)
        nu += i == 0 || e[i].cell != e[i - 1].cell;
    size_t nw = 2 * (size_t)nu + 1 + ne;
    uint32_t *wd = malloc(nw * sizeof *wd);
    if (!wd) {
        free(e);
        return er_fail(err, ER_ENOMEM, "mei: out of memory for the sources");
    }
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
    free(e);
    *words = wd;
    *nwords = nw;
    *ncells = nu;
    return ER_OK;
}

/* Sum of a layer over the terrain cells, in core/mei/budget.c's order (so the
 * material totals are those the CPU path would compute from the same
 * values).  tmp holds w floats. */
static double terrain_total(const er_terrain *t, const float *a, float *tmp)
{
    const size_t w = (size_t)t->width;
    double total = 0.0;
    for (int y = 0; y < t->height; y++) {
        const float *row = a + (size_t)y * w;
        const uint8_t *wall = t->wall ? t->wall + (size_t)y * w : NULL;
        int any = 0;
        for (size_t x = 0; wall && x < w; x++)
            any |= wall[x] != 0;
        if (any) {
            for (size_t x = 0; x < w; x++)
                tmp[x] = wall[x] ? 0.0f : row[x];
            row = tmp;
        }
        total += er_mei_row_sum(row, t->width);
    }
    return total;
}

static void fill_coef(const er_mei_coef *k, const er_terrain *t, mei_coef_gpu *g)
{
    memset(g, 0, sizeof *g);
    g->lx_slack = t->cell_x * CFL_SLACK;
    g->ly_slack = t->cell_y * CFL_SLACK;
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
    g->w = t->width;
    g->h = t->height;
    g->open = k->open;
    g->has_wall = t->wall != NULL;
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
    if ((st = er_vk_cmd_begin(g->vk, err)))
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
    if ((st = er_vk_cmd_submit(g->vk, err)))
        return st;
    memcpy(out, g->staging.map, bytes);
    return ER_OK;
}

static er_status gpu_setup(mei_gpu *g, const er_terrain *t, const mei_coef_gpu coef[2],
                           const uint32_t *src, size_t src_words, er_error *err)
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    VkDeviceSize size[N_SIZES];
    er_status st;
    buffer_sizes(t, src_words, size);
    for (int i = 0; i < N_BUF; i++)
        if ((st = er_vk_buffer_new(g->vk, size[i], ER_VK_DEVICE, &g->buf[i], buf_names[i], err)))
            return st;
    if ((st = er_vk_buffer_new(g->vk, size[S_STAGING], ER_VK_HOST, &g->staging, "staging",
                               err)) ||
        (st = er_vk_buffer_new(g->vk, size[S_ROWS_HOST], ER_VK_HOST, &g->rows_host,
                               "row status", err)))
        return st;
    const er_vk_buffer *bind[N_BUF];
    for (int i = 0; i < N_BUF; i++)
        bind[i] = &g->buf[i];
    for (int p = 0; p < N_PIPE; p++) {
        if ((st = er_vk_pipeline_new(g->vk, shaders[p].spv, shaders[p].bytes, N_BUF,
                                     sizeof(mei_push), 1, &g->pipe[p], err)))
            return st;
        er_vk_pipeline_bind(g->vk, &g->pipe[p], 0, bind);
    }
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

/* The first failure any row recorded (the earliest step, then the lowest
 * row), as core/mei/mei.c finish_substep words it; ER_OK when none. */
static er_status row_failure(const mei_rowstat *rs, const er_terrain *t, const mei_coef_gpu *k,
                             er_error *err)
{
    int best = -1;
    for (int y = 0; y < t->height; y++)
        if (rs[y].fail_step && (best < 0 || rs[y].fail_step < rs[best].fail_step))
            best = y;
    if (best < 0)
        return ER_OK;
    const mei_rowstat *r = &rs[best];
    long long step = (long long)r->fail_step - 1;
    float f;
    memcpy(&f, &r->fail_bits, sizeof f);
    switch (r->fail_kind) {
    case 1:
        return er_fail(err, ER_ENUMERIC, "non-finite value at step %lld in row %d", step, best);
    case 2:
        return er_fail(err, ER_ENUMERIC, "non-finite velocity at step %lld in row %d", step,
                       best);
    case 3:
        return er_fail(err, ER_ENUMERIC, "cfl violated at step %lld: |u| = %.4g m/s in row %d, "
                       "dt * |u| = %.4g m > lX = %.4g m", step, (double)f, best,
                       (double)k->dt * (double)f, t->cell_x);
    default:
        return er_fail(err, ER_ENUMERIC, "cfl violated at step %lld: |v| = %.4g m/s in row %d, "
                       "dt * |v| = %.4g m > lY = %.4g m", step, (double)f, best,
                       (double)k->dt * (double)f, t->cell_y);
    }
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

/* A layer value as written out: finite, else 0 (core/mei/mei.c finite_or_0). */
static float finite_or_0(float v)
{
    return isfinite(v) ? v : 0.0f;
}

er_status er_vk_mei_run(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                        const er_run_opts *o, er_error *err)
{
    static const er_run_opts none;
    const er_params *p = &plan->p;
    const er_mei_params *m = &p->mei;
    if (!o)
        o = &none;
    const er_run_ctl *ctl = o->ctl;
    er_layers *layers = o->layers;
    er_budget bud;
    mei_gpu g;
    er_mei_sim sim;
    er_status st;
    const int64_t nsub = plan->substeps;
    int64_t covered[ER_MAX_SOURCES];
    float amounts[ER_MAX_SOURCES];
    uint32_t *src = NULL, nsrc = 0;
    size_t src_words = 0;
    float *z = NULL, *s = NULL, *dw = NULL, *tmp = NULL;
    memset(&bud, 0, sizeof bud);
    memset(&g, 0, sizeof g);
    g.vk = vk;
    if ((st = er_vk_mei_check(vk, plan, t, err)))
        return st;
    /* the host's view of the map, for the shared coefficients */
    memset(&sim, 0, sizeof sim);
    sim.w = t->width;
    sim.h = t->height;
    sim.lx = t->cell_x;
    sim.ly = t->cell_y;
    sim.wall = t->wall;
    sim.b0 = t->elevation;
    const double dt_sub = plan->dt_sub;
    const size_t n = (size_t)t->width * (size_t)t->height;
    er_mei_coef k[2];
    mei_coef_gpu kg[2];
    for (int r = 0; r < 2; r++) {
        er_mei_make_coef(&sim, m, dt_sub, r, &k[r]);
        fill_coef(&k[r], t, &kg[r]);
    }
    if (m->steps > 0 && (st = er_mei_check_coef(&k[0], err)))
        return st;
    if ((st = build_sources(t, m, dt_sub, &src, &src_words, &nsrc, covered, amounts, err)))
        return st;
    z = malloc(n * sizeof(float));
    s = malloc(n * sizeof(float));
    dw = malloc(n * sizeof(float));
    tmp = malloc((size_t)t->width * sizeof(float));
    mei_rowstat *rs = calloc((size_t)t->height, sizeof *rs);
    if (!z || !s || !dw || !tmp || !rs) {
        st = er_fail(err, ER_ENOMEM, "mei: out of memory for a %dx%d map", t->width, t->height);
        goto fail;
    }
    int64_t cells = 0;
    for (size_t i = 0; i < n; i++)
        cells += !t->wall || !t->wall[i];
    const double base = terrain_total(t, t->elevation, tmp);
    bud.material_before = base;
    if ((st = gpu_setup(&g, t, kg, src, src_words, err))) {
        st = at_step(vk, st, 0, err);
        goto fail;
    }

    /* the raindrop disc: integer centre, so the box is centre +- floor(rad)
     * and a cell is in when dx^2 + dy^2 <= floor(rad^2) (core/mei/pipe.c in_disc) */
    const int drops = m->drops_per_step > 0 && m->drop_amount > 0.0;
    mei_push pu;
    memset(&pu, 0, sizeof pu);
    pu.seed_lo = (uint32_t)(p->seed & 0xffffffffu);
    pu.seed_hi = (uint32_t)(p->seed >> 32);
    pu.count_lo = (uint32_t)((uint64_t)m->drops_per_step & 0xffffffffu);
    pu.count_hi = (uint32_t)((uint64_t)m->drops_per_step >> 32);
    pu.amount = (float)m->drop_amount;
    {
        double rad = m->drop_radius > 0.0 ? m->drop_radius : 0.0;
        double fr = floor(rad), r2 = floor(rad * rad);
        uint64_t r2i = r2 > 4.0e18 ? (uint64_t)4e18 : (uint64_t)r2;
        pu.fr = fr > 1073741824.0 ? 1073741824 : (int32_t)fr;
        pu.r2_lo = (uint32_t)(r2i & 0xffffffffu);
        pu.r2_hi = (uint32_t)(r2i >> 32);
    }
    const uint32_t gx = er_vk_groups((uint32_t)t->width, MEI_GROUP), gy = (uint32_t)t->height;
    const uint32_t grows = er_vk_groups((uint32_t)t->height, ER_VK_GROUP);
    uint64_t per_step = (uint64_t)n * (uint64_t)nsub;
    int64_t batch = (int64_t)(BATCH_CELLS / (per_step ? per_step : 1));
    batch = batch < 1 ? 1 : batch > MAX_BATCH_STEPS ? MAX_BATCH_STEPS : batch;

    int64_t step = 0;
    while (step < m->steps) {
        int64_t end = step + batch < m->steps ? step + batch : m->steps;
        const int64_t first = step;
        if ((st = er_vk_cmd_begin(vk, err))) {
            st = at_step(vk, st, first, err);
            goto fail;
        }
        for (; step < end; step++) {
            int raining = m->rain_rate > 0.0 && (m->rain_steps == 0 || step < m->rain_steps);
            set_push_step(&pu, step);
            pu.variant = (uint32_t)raining;
            if (drops) {
                er_vk_cmd_dispatch(vk, &g.pipe[P_DROPS], 0, &pu, 1, 1);
                er_vk_cmd_barrier(vk);
                float amount = (float)m->drop_amount;
                for (int64_t j = 0; j < m->drops_per_step; j++) {
                    uint64_t idx = (uint64_t)step * (uint64_t)m->drops_per_step + (uint64_t)j;
                    uint64_t r = er_rng_u64(p->seed, ER_STREAM_RAINDROP, idx);
                    int x = (int)(((r & 0xffffffffu) * (uint64_t)t->width) >> 32);
                    int y = (int)(((r >> 32) * (uint64_t)t->height) >> 32);
                    bud.water_added += (double)disc_cells(t, x, y, m->drop_radius) * (double)amount;
                }
            }
            for (int64_t sub = 0; sub < nsub; sub++) {
                if (nsrc) {
                    pu.n = nsrc;
                    er_vk_cmd_dispatch(vk, &g.pipe[P_SOURCES], 0, &pu,
                                       er_vk_groups(nsrc, ER_VK_GROUP), 1);
                    er_vk_cmd_barrier(vk);
                }
                for (int i = 0; i < m->n_sources; i++)
                    bud.water_added += (double)covered[i] * (double)amounts[i];
                er_vk_cmd_dispatch(vk, &g.pipe[P_FLUX], 0, &pu, gx, gy);
                er_vk_cmd_barrier(vk);
                er_vk_cmd_dispatch(vk, &g.pipe[P_WATER], 0, &pu, gx, gy);
                er_vk_cmd_barrier(vk);
                er_vk_cmd_dispatch(vk, &g.pipe[P_TRANSPORT], 0, &pu, gx, gy);
                er_vk_cmd_barrier(vk);
                er_vk_cmd_dispatch(vk, &g.pipe[P_REDUCE], 0, &pu, 1, gy);
                er_vk_cmd_barrier(vk);
                pu.n = MEI_LANES;
                er_vk_cmd_dispatch(vk, &g.pipe[P_ROWS], 0, &pu, grows, 1);
                er_vk_cmd_barrier(vk);
                bud.water_added += (double)k[raining].rain * (double)cells;
                bud.substeps++;
            }
            bud.work_done++;
        }
        er_vk_cmd_copy(vk, &g.buf[B_ROWS], &g.rows_host, g.rows_host.size);
        if ((st = er_vk_cmd_submit(vk, err))) {
            st = at_step(vk, st, first, err);
            goto fail;
        }
        memcpy(rs, g.rows_host.map, (size_t)t->height * sizeof *rs);
        if ((st = row_failure(rs, t, &kg[0], err)))
            break;
        if (ctl && ctl->progress && ctl->progress(ctl->user, (double)step / (double)m->steps)) {
            st = er_fail(err, ER_ECANCELED, "mei: cancelled at step %lld", (long long)step);
            break;
        }
    }
    /* the one read-back of the state */
    {
        er_status rst;
        if ((rst = download(&g, &g.buf[B_Z], z, n * sizeof(float), err)) ||
            (rst = download(&g, &g.buf[B_S], s, n * sizeof(float), err)) ||
            (rst = download(&g, &g.buf[B_D], dw, n * sizeof(float), err))) {
            st = at_step(vk, rst, step, err);
            goto fail;
        }
    }
    for (int y = 0; y < t->height; y++) {
        bud.eroded += rs[y].eroded;
        bud.deposited += rs[y].deposited;
        bud.left_map += rs[y].left_sed;
        bud.water_left += rs[y].left_water;
    }
    bud.material_after = base + (terrain_total(t, z, tmp) + terrain_total(t, s, tmp));
    {
        double den = fabs(bud.material_before);
        bud.rel_error = fabs(bud.material_before - bud.material_after - bud.left_map) /
                        (den > DBL_MIN ? den : DBL_MIN);
    }
    /* core/mei/mei.c copy_out: walls and unchanged cells keep their value */
    for (size_t i = 0; i < n; i++) {
        if (!(t->wall && t->wall[i])) {
            float zz = finite_or_0(z[i]);
            t->elevation[i] = zz != 0.0f ? t->elevation[i] + zz : t->elevation[i];
        }
        if (layers && layers->water)
            layers->water[i] = finite_or_0(dw[i]);
        if (layers && layers->sediment)
            layers->sediment[i] = finite_or_0(s[i]);
    }
    if (o->budget)
        *o->budget = bud;
    goto done;
fail:
    if (o->budget)
        *o->budget = bud;
done:
    gpu_free(&g);
    free(src);
    free(z);
    free(s);
    free(dw);
    free(tmp);
    free(rs);
    return st;
}
