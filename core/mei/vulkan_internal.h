/*
 * What core/mei/vulkan.c (the run: recording, submissions, the host's
 * accounts) and core/mei/vulkan_setup.c (the device checks, the row bands,
 * buffers, pipelines, uploads and read-backs) share: the layouts the Mei
 * shaders declare (core/mei/shaders/mei_common.glsl) and a run's device
 * state.  Private to those two files.
 */
#ifndef ER_MEI_VULKAN_INTERNAL_H
#define ER_MEI_VULKAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../bits.h"
#include "../vulkan/vk.h"
#include "host.h"
#include "vulkan.h"

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
    er_vk_pipeline pipe[N_PIPE];
} mei_gpu;

/* The sources' cells, each with its sources' depths per sub-step. */
typedef struct src_entry {
    uint32_t cell, seq;
    float amount;
} src_entry;

/* The covered cells of the sources, collected by er_source_cells. */
typedef struct src_list {
    src_entry *e;
    size_t n, cap;
    float amount; /* of the source being walked */
    int failed;   /* out of memory */
} src_list;

/* The cells core/mei/pipe.c er_mei_add_sources covers (world pixels
 * shifted into the window), each with its sources' depths per sub-step,
 * sorted by cell and then in recipe order, into *l (the caller frees l->e). */
er_status er_mei_vk_sources(const er_mei_sim *sim, const er_source_list *sl, double dt,
                            src_list *l, er_error *err);

/* The shaders' coefficients (Coef) from the host's. */
void er_mei_vk_fill_coef(const er_mei_coef *k, const er_mei_sim *sim, mei_coef_gpu *g);

/* Cuts the map into bands, creates every buffer and pipeline on g->vk and
 * uploads the inputs (coef: dry, raining; src: er_mei_vk_sources').  Free
 * with er_mei_vk_free, also after a failure. */
er_status er_mei_vk_setup(mei_gpu *g, const er_terrain *t, const er_layers *keep,
                          const mei_coef_gpu coef[2], const src_list *src, er_error *err);
void er_mei_vk_free(mei_gpu *g);

/* Uploads the control maps given into every band; the sources raster as
 * the depth (float)(q dt) it adds per sub-step of dt seconds. */
er_status er_mei_vk_upload_maps(mei_gpu *g, const er_terrain *t, double dt, er_error *err);

/* Uploads bytes of data into buffer b through the staging buffer, the rest
 * of b zeroed (b: one that passes through it, staged[] of vulkan_setup.c). */
er_status er_mei_vk_upload(mei_gpu *g, er_vk_buffer *b, const void *data, size_t bytes,
                           er_error *err);

/* Uploads the rows band k holds of the map-sized array data (cb bytes a
 * cell, w cells a row) into its buffer b. */
er_status er_mei_vk_upload_rows(mei_gpu *g, int k, int b, const void *data, size_t cb, int w,
                                er_error *err);

/* Reads the rows band k owns of its buffer b into the map-sized array out. */
er_status er_mei_vk_download_rows(mei_gpu *g, int k, int b, float *out, int w, er_error *err);

#endif
