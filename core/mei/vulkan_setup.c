/*
 * What a Mei run on Vulkan (core/mei/vulkan.c) sets up before its steps:
 * the device checks (er_vk_mei_check) and exactness class, the row bands
 * (vulkan_internal.h), the source list, every buffer and pipeline, and
 * the uploads and read-backs through the staging buffer.
 */
#include "vulkan_internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sources.h"

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

void er_mei_vk_free(mei_gpu *g)
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
 * the cap er_vk_set_buffer_cap set, where smaller. */
static VkDeviceSize band_limit(const er_vk_ctx *vk, int forced)
{
    VkDeviceSize l = vk->info.max_storage_buffer_range;
    if (vk->info.max_allocation && vk->info.max_allocation < l)
        l = vk->info.max_allocation;
    if (forced && vk->buffer_cap && vk->buffer_cap < l)
        l = vk->buffer_cap;
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

#define STR_(x) #x
#define STR(x) STR_(x)

er_vk_exactness er_vk_mei_exactness(const er_vk_device_info *d)
{
    if (d->denorm_preserve)
        return ER_VK_EXACT_DECLARED;
    /* Mesa's lavapipe offers no denormal control but keeps them: on the
     * cases where an H100, which flushes them, differs from the CPU it
     * gives the CPU's bytes, and check_vulkan.c compares them byte for
     * byte */
    if (d->type == ER_VK_TYPE_CPU && strstr(d->name, "llvmpipe"))
        return ER_VK_EXACT_MEASURED;
    return ER_VK_DENORMS_MAY_FLUSH;
}

/* What class e means, for --list-devices; a static string. */
static const char *exactness_text(er_vk_exactness e)
{
    switch (e) {
    case ER_VK_EXACT_DECLARED:
        return "denormals preserved, bit-identical to the CPU";
    case ER_VK_EXACT_MEASURED:
        return "denormals kept (lavapipe, as our tests measure), bit-identical to the CPU";
    default:
        return "denormals may flush, height and water exact, sediment within "
               STR(ER_VK_MEI_FLUSH_SEDIMENT) " m of the CPU";
    }
}

void er_vk_mei_describe(const er_vk_device_info *d, char *buf, size_t n)
{
    snprintf(buf, n, "Mei: %s", d->has_float64 && d->has_int64
                                    ? exactness_text(er_vk_mei_exactness(d))
                                    : "cannot run (needs shaderFloat64 and shaderInt64)");
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

static int by_cell(const void *a, const void *b)
{
    const src_entry *x = a, *y = b;
    if (x->cell != y->cell)
        return x->cell < y->cell ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

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
        wd[2 * (size_t)nu + 1 + i] = er_float_bits(e[i].amount);
    }
    wd[2 * (size_t)nu] = (uint32_t)ne;
    *nwords = nw;
    *ncells = nu;
    return wd;
}

/* The cells core/mei/pipe.c er_mei_add_sources covers (world pixels
 * shifted into the window), each with its sources' depths per sub-step,
 * sorted by cell and then in recipe order, into *l (the caller frees l->e). */
er_status er_mei_vk_sources(const er_mei_sim *sim, const er_source_list *sl, double dt,
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

void er_mei_vk_fill_coef(const er_mei_coef *k, const er_mei_sim *sim, mei_coef_gpu *g)
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
er_status er_mei_vk_upload(mei_gpu *g, er_vk_buffer *b, const void *data, size_t bytes,
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
er_status er_mei_vk_upload_rows(mei_gpu *g, int k, int b, const void *data, size_t cb, int w,
                             er_error *err)
{
    const mei_band *bd = &g->band[k];
    const size_t row = (size_t)w * cb;
    return er_mei_vk_upload(g, &g->band[k].buf[b], (const unsigned char *)data + (size_t)bd->a * row,
                  (size_t)(bd->b - bd->a) * row, err);
}

/* Reads the rows band k owns of its buffer b into the map-sized array out. */
er_status er_mei_vk_download_rows(mei_gpu *g, int k, int b, float *out, int w, er_error *err)
{
    const mei_band *bd = &g->band[k];
    const size_t row = (size_t)w * sizeof(float);
    return download_at(g, &bd->buf[b], (size_t)(bd->y0 - bd->a) * row,
                       (unsigned char *)out + (size_t)bd->y0 * row,
                       (size_t)(bd->y1 - bd->y0) * row, err);
}

/* Creates the buffers of every band (src_words: each band's source list),
 * and the staging buffers. */
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
    free(size);
    return st;
}

/* The pipelines, created once, with one descriptor set a band. */
static er_status gpu_pipelines(mei_gpu *g, er_error *err)
{
    const int dp = er_vk_mei_exactness(er_vk_info(g->vk)) == ER_VK_EXACT_DECLARED;
    const double t0 = er_vk_now();
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
    g->vk->stats.pipeline_s = er_vk_now() - t0;
    return st;
}

/* Band k's inputs: the terrain's rows, their walls, the band's sources. */
static er_status upload_band(mei_gpu *g, const er_terrain *t, int k, const uint32_t *src,
                             size_t src_words, er_error *err)
{
    er_status st = er_mei_vk_upload_rows(g, k, B_B0, t->elevation, sizeof(float), t->width, err);
    if (!st && t->wall)
        st = er_mei_vk_upload_rows(g, k, B_WALL, t->wall, 1, t->width, err);
    if (!st && src_words)
        st = er_mei_vk_upload(g, &g->band[k].buf[B_SRC], src, src_words * sizeof(uint32_t), err);
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
er_status er_mei_vk_setup(mei_gpu *g, const er_terrain *t, const er_layers *keep,
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
        st = er_mei_vk_upload(g, &g->band[0].buf[B_COEF], coef, 2 * sizeof(mei_coef_gpu), err);
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
er_status er_mei_vk_upload_maps(mei_gpu *g, const er_terrain *t, double dt, er_error *err)
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    er_status st = ER_OK;
    for (int b = B_HARD; b < B_QDT; b++)
        for (int k = 0; k < g->nband && !st && ctl_map(t->controls, b); k++)
            st = er_mei_vk_upload_rows(g, k, b, ctl_map(t->controls, b), sizeof(float), t->width, err);
    const float *q = ctl_map(t->controls, B_QDT);
    if (st || !q)
        return st;
    float *qdt = malloc(n * sizeof *qdt);
    if (!qdt)
        return er_fail(err, ER_ENOMEM, "mei: out of memory for the sources map");
    for (size_t i = 0; i < n; i++)
        qdt[i] = (float)((double)q[i] * dt);
    for (int k = 0; k < g->nband && !st; k++)
        st = er_mei_vk_upload_rows(g, k, B_QDT, qdt, sizeof(float), t->width, err);
    free(qdt);
    return st;
}
