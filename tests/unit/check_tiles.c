/*
 * Tile sets: windowed runs (core/model.h er_window), mosaic geometry and
 * stitch weights (core/tiles.h).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/model.h"
#include "../../core/plan.h"
#include "../../core/params.h"
#include "../../core/stitch.h"
#include "../../core/tiles.h"
#include "test_util.h"

/* A world of two bowls, left centred at (28, 32) and right at (100, 32),
 * with a band of nodata cells (walls) [60, 68) between them, wider than a
 * brush: nothing that happens on one side can reach the other.  Windows
 * are [0, LW) and [RX, WW), each holding the whole band, so a droplet
 * drawn onto the band draws again in the window as in the world. */
#define WW 128
#define WH 64
#define LW 69
#define RX 59
static int is_wall(int x) { return x >= 60 && x < 68; }

static float bowls(int x, int y)
{
    double cx = x < 64 ? 28 : 100, dx = x - cx, dy = y - 32;
    return is_wall(x) ? 0.0f : (float)(0.02 * (dx * dx + dy * dy));
}

static float *world_terrain(void)
{
    float *z = malloc(WW * WH * sizeof *z);
    ck_assert_ptr_nonnull(z);
    for (int y = 0; y < WH; y++)
        for (int x = 0; x < WW; x++)
            z[y * WW + x] = bowls(x, y);
    return z;
}

/* The columns [x0, x0 + w) of the world, copied out, and their walls. */
static float *crop(const float *z, int x0, int w)
{
    float *c = malloc((size_t)w * WH * sizeof *c);
    ck_assert_ptr_nonnull(c);
    for (int y = 0; y < WH; y++)
        memcpy(c + y * w, z + y * WW + x0, (size_t)w * sizeof *c);
    return c;
}

static uint8_t *walls(int x0, int w)
{
    uint8_t *m = malloc((size_t)w * WH);
    ck_assert_ptr_nonnull(m);
    for (int y = 0; y < WH; y++)
        for (int x = 0; x < w; x++)
            m[y * w + x] = (uint8_t)is_wall(x0 + x);
    return m;
}

static void droplet_params(er_params *p, int lifetime, int radius)
{
    er_params_default(p);
    p->model = ER_MODEL_DROPLET;
    p->seed = 7;
    p->droplet.count = 4000;
    p->droplet.height_unit = 10.0;
    p->droplet.lifetime = lifetime;
    p->droplet.radius = radius;
}

/* The left window of the bowl world, run alone, equals the whole world's
 * run there bit for bit: same droplets, same batches and tile order, and
 * nothing crosses the window's inner edge.  Looped over a lifetime that
 * makes the world one schedule tile (sequential) and one that makes it
 * several (the tile-coloured schedule, its grid on the world). */
START_TEST(droplet_window_is_whole_restricted)
{
    static const int life[2] = {30, 8};
    er_params p;
    droplet_params(&p, life[_i], 2);
    float *z = world_terrain();
    uint8_t *wall = walls(0, WW);
    er_terrain whole = {WW, WH, z, wall, 1.0, 1.0, NULL};
    er_error err = {{0}};
    ck_assert_int_eq(er_run_cpu(&p, &whole, NULL, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_OK);

    float *zw = world_terrain();
    float *c = crop(zw, 0, LW);
    uint8_t *cw = walls(0, LW);
    er_terrain part = {LW, WH, c, cw, 1.0, 1.0, NULL};
    er_window win = {0, 0, WW, WH};
    er_budget b;
    ck_assert_int_eq(er_run_cpu(&p, &part, &win, &(er_run_opts){NULL, NULL, NULL, &b}, &err), ER_OK);
    int changed = 0;
    for (int y = 0; y < WH; y++)
        for (int x = 0; x < 60; x++) {
            ck_assert_msg(memcmp(&c[y * LW + x], &z[y * WW + x], sizeof(float)) == 0,
                          "cell (%d, %d): window %.9g, whole %.9g", x, y, c[y * LW + x],
                          z[y * WW + x]);
            changed += c[y * LW + x] != bowls(x, y);
        }
    ck_assert_int_gt(changed, 100); /* the droplets did erode the left bowl */
    ck_assert_int_eq(b.work_done, 4000); /* the world's droplets, counted once */

    /* The right window, at x0 = RX, likewise. */
    float *r = crop(zw, RX, WW - RX);
    uint8_t *rw = walls(RX, WW - RX);
    er_terrain right = {WW - RX, WH, r, rw, 1.0, 1.0, NULL};
    er_window wr = {RX, 0, WW, WH};
    ck_assert_int_eq(er_run_cpu(&p, &right, &wr, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_OK);
    for (int y = 0; y < WH; y++)
        ck_assert(memcmp(r + y * (WW - RX) + 68 - RX, z + y * WW + 68, 60 * sizeof *r) == 0);
    free(z);
    free(wall);
    free(zw);
    free(c);
    free(cw);
    free(r);
    free(rw);
}
END_TEST

/* A windowed droplet run on the tile-coloured schedule (a world of many
 * schedule tiles) is byte-identical for 1, 2 and 3 threads. */
START_TEST(window_run_thread_identity)
{
    er_params p;
    droplet_params(&p, 8, 2);
    float *ref = NULL;
    int before = er_test_threads();
    for (int n = 1; n <= 3; n++) {
        er_test_set_threads(n);
        float *zw = world_terrain(), *c = crop(zw, RX, WW - RX);
        uint8_t *cw = walls(RX, WW - RX);
        er_terrain t = {WW - RX, WH, c, cw, 1.0, 1.0, NULL};
        er_window win = {RX, 0, WW, WH};
        er_error err = {{0}};
        ck_assert_int_eq(er_run_cpu(&p, &t, &win, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_OK);
        if (!ref)
            ref = c;
        else {
            ck_assert(memcmp(ref, c, (size_t)(WW - RX) * WH * sizeof *c) == 0);
            free(c);
        }
        free(zw);
        free(cw);
    }
    er_test_set_threads(before);
    free(ref);
}
END_TEST

/* A window that is the whole map gives what the run without one gives. */
START_TEST(default_window_is_old_behaviour)
{
    er_params p;
    droplet_params(&p, 30, 3);
    float *a = world_terrain(), *b = world_terrain();
    er_terrain ta = {WW, WH, a, NULL, 1.0, 1.0, NULL}, tb = {WW, WH, b, NULL, 1.0, 1.0, NULL};
    er_window win = {0, 0, WW, WH};
    er_error err = {{0}};
    ck_assert_int_eq(er_run_cpu(&p, &ta, NULL, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_OK);
    ck_assert_int_eq(er_run_cpu(&p, &tb, &win, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_OK);
    ck_assert(memcmp(a, b, WW * WH * sizeof *a) == 0);

    er_params_default(&p);
    p.mei.steps = 30;
    p.mei.rain_rate = 1e-3;
    p.mei.drops_per_step = 3;
    p.mei.drop_amount = 0.05;
    memcpy(a, b, WW * WH * sizeof *a);
    er_terrain ma = {WW, WH, a, NULL, 10.0, 10.0, NULL}, mb = {WW, WH, b, NULL, 10.0, 10.0, NULL};
    ck_assert_int_eq(er_run_cpu(&p, &ma, NULL, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_OK);
    ck_assert_int_eq(er_run_cpu(&p, &mb, &win, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_OK);
    ck_assert(memcmp(a, b, WW * WH * sizeof *a) == 0);
    free(a);
    free(b);
}
END_TEST

/* Mei with river sources in world pixels: a source in each bowl.  The
 * left window sees its own source and skips the other one; the wall band
 * keeps the sides apart, so the window equals the whole world there. */
START_TEST(mei_window_is_whole_restricted)
{
    er_params p;
    er_params_default(&p);
    p.mei.steps = 60;
    p.mei.rain_rate = 0;
    p.river.n = 2;
    p.river.src[0] = (er_source){.x = 28, .y = 32, .coords = 0, .radius = 2.0, .rate = 1e-3};
    p.river.src[1] = (er_source){.x = 100, .y = 32, .coords = 0, .radius = 2.0, .rate = 1e-3};
    float *z = world_terrain();
    float *water = calloc(WW * WH, sizeof *water);
    uint8_t *wall = walls(0, WW);
    er_terrain whole = {WW, WH, z, wall, 10.0, 10.0, NULL};
    er_layers lw = {water, NULL, NULL, NULL};
    er_error err = {{0}};
    ck_assert_int_eq(er_run_cpu(&p, &whole, NULL, &(er_run_opts){&lw, NULL, NULL, NULL}, &err), ER_OK);

    float *zw = world_terrain(), *c = crop(zw, 0, LW), *wc = calloc(LW * WH, sizeof *wc);
    uint8_t *cw = walls(0, LW);
    er_terrain part = {LW, WH, c, cw, 10.0, 10.0, NULL};
    er_layers lp = {wc, NULL, NULL, NULL};
    er_window win = {0, 0, WW, WH};
    ck_assert_int_eq(er_run_cpu(&p, &part, &win, &(er_run_opts){&lp, NULL, NULL, NULL}, &err), ER_OK);
    for (int y = 0; y < WH; y++) {
        ck_assert(memcmp(c + y * LW, z + y * WW, 60 * sizeof *c) == 0);
        ck_assert(memcmp(wc + y * LW, water + y * WW, 60 * sizeof *c) == 0);
    }
    ck_assert_float_gt(wc[32 * LW + 28], 0.0f);
    ck_assert_float_gt(c[32 * LW + 28] - bowls(28, 32), -1.0f); /* ran, finite */
    free(wall);
    free(cw);
    free(z);
    free(water);
    free(zw);
    free(c);
    free(wc);
}
END_TEST

START_TEST(window_refusals)
{
    er_params p;
    droplet_params(&p, 30, 3);
    float *z = world_terrain();
    er_terrain t = {64, WH, z, NULL, 1.0, 1.0, NULL};
    er_error err = {{0}};
    er_window out = {70, 0, WW, WH}; /* 70 + 64 > 128 */
    ck_assert_int_eq(er_run_cpu(&p, &t, &out, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "does not fit"));
    ck_assert_int_eq(er_run_cpu(&p, &t, &out, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_EINVAL);
    er_window ok = {0, 0, WW, WH};
    p.droplet.height_unit = 0; /* "relief" */
    ck_assert_int_eq(er_run_cpu(&p, &t, &ok, &(er_run_opts){NULL, NULL, NULL, NULL}, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "height_unit"));
    free(z);
}
END_TEST

static er_tile_geom geom(double ox, double oy, double step, int w, int h)
{
    return (er_tile_geom){ox, oy, step, -step, w, h};
}

/* A 2 x 2 mosaic listed out of order: places from the georeferencing,
 * the world is their union, and each tile touches the other three. */
START_TEST(mosaic_layout_and_neighbours)
{
    er_tile_geom g[4] = {geom(1000 + 30 * 100, 5000, 30, 50, 40),   /* top right */
                         geom(1000, 5000 - 30 * 40, 30, 100, 60),   /* bottom left */
                         geom(1000, 5000, 30, 100, 40),             /* top left */
                         geom(1000 + 30 * 100, 5000 - 30 * 40, 30, 50, 60)};
    er_tile_place pl[4];
    int ww, wh;
    er_error err = {{0}};
    ck_assert_int_eq(er_mosaic_layout(g, 4, pl, &ww, &wh, &err), ER_OK);
    ck_assert_int_eq(ww, 150);
    ck_assert_int_eq(wh, 100);
    ck_assert_int_eq(pl[0].col, 100);
    ck_assert_int_eq(pl[0].row, 0);
    ck_assert_int_eq(pl[1].col, 0);
    ck_assert_int_eq(pl[1].row, 40);
    ck_assert_int_eq(pl[3].col, 100);
    ck_assert_int_eq(pl[3].row, 40);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            ck_assert_int_eq(er_mosaic_touch(&pl[i], &pl[j], 0), i == j);
            ck_assert_int_eq(er_mosaic_touch(&pl[i], &pl[j], 1), 1);
        }
    /* The window of the top-left tile with a halo of 8: clipped at the
     * world's edges, extended into the neighbours. */
    er_window w;
    int width, height;
    er_mosaic_window(&pl[2], 8, ww, wh, &w, &width, &height);
    ck_assert_int_eq(w.x0, 0);
    ck_assert_int_eq(w.y0, 0);
    ck_assert_int_eq(width, 108);
    ck_assert_int_eq(height, 48);
    int inner[4];
    er_window_inner_edges(&w, width, height, inner);
    ck_assert(!inner[ER_EDGE_LEFT] && inner[ER_EDGE_RIGHT] && !inner[ER_EDGE_TOP] &&
              inner[ER_EDGE_BOTTOM]);
}
END_TEST

START_TEST(mosaic_refusals)
{
    er_tile_place pl[2];
    int ww, wh;
    er_error err = {{0}};
    er_tile_geom cell[2] = {geom(0, 0, 30, 10, 10), geom(300, 0, 15, 20, 20)};
    ck_assert_int_eq(er_mosaic_layout(cell, 2, pl, &ww, &wh, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "tile 2 has cells of 15"));
    er_tile_geom shift[2] = {geom(0, 0, 30, 10, 10), geom(315, 0, 30, 10, 10)};
    ck_assert_int_eq(er_mosaic_layout(shift, 2, pl, &ww, &wh, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "tile 2 is not aligned"));
    er_tile_geom over[2] = {geom(0, 0, 30, 10, 10), geom(270, -30, 30, 10, 10)};
    ck_assert_int_eq(er_mosaic_layout(over, 2, pl, &ww, &wh, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "tiles 1 and 2 overlap"));
    /* A gap is no error: the world is the bounding box. */
    er_tile_geom gap[2] = {geom(0, 0, 30, 10, 10), geom(600, 0, 30, 10, 10)};
    ck_assert_int_eq(er_mosaic_layout(gap, 2, pl, &ww, &wh, &err), ER_OK);
    ck_assert_int_eq(ww, 30);
}
END_TEST

/* Stitch weights on a 3 x 3 mosaic of 20^2 tiles with a halo of 5: every
 * cell of the world has a positive total; across a border the two
 * windows' weights add up to the overlap (2 * halo) and are equal on the
 * border itself; they fall linearly to 0 towards each halo edge and do
 * not fall towards the world's own edges. */
START_TEST(stitch_weights)
{
    enum { N = 3, S = 20, H = 5 };
    er_tile_place pl[N * N];
    er_window win[N * N];
    int wd[N * N], ht[N * N];
    for (int r = 0; r < N; r++)
        for (int c = 0; c < N; c++) {
            int k = r * N + c;
            pl[k] = (er_tile_place){c * S, r * S, S, S};
            er_mosaic_window(&pl[k], H, N * S, N * S, &win[k], &wd[k], &ht[k]);
        }
    for (int y = 0; y < N * S; y++)
        for (int x = 0; x < N * S; x++) {
            double sum = 0;
            for (int k = 0; k < N * N; k++) {
                double w = er_stitch_weight(&win[k], wd[k], ht[k], x, y);
                ck_assert(w >= 0);
                sum += w;
            }
            ck_assert_msg(sum > 0, "cell (%d, %d) has no weight", x, y);
        }
    /* Row 30 (the middle of the centre tile row), across the border at
     * x = 20 between tiles 3 and 4: the overlap is [15, 25). */
    for (int x = 15; x < 25; x++) {
        double a = er_stitch_weight(&win[3], wd[3], ht[3], x, 30);
        double b = er_stitch_weight(&win[4], wd[4], ht[4], x, 30);
        ck_assert_double_eq_tol(a + b, 2 * H, 1e-12);
        if (x > 15)
            ck_assert_double_eq_tol(a - er_stitch_weight(&win[3], wd[3], ht[3], x - 1, 30), -1.0,
                                    1e-12);
    }
    ck_assert_double_eq(er_stitch_weight(&win[4], wd[4], ht[4], 15, 30), 0.5);
    ck_assert_double_eq(er_stitch_weight(&win[4], wd[4], ht[4], 14, 30), 0.0);
    ck_assert_double_eq(er_stitch_weight(&win[3], wd[3], ht[3], 19, 30),
                        er_stitch_weight(&win[4], wd[4], ht[4], 20, 30));
    /* Tile 0 at the world's corner: no fall-off towards x = 0 or y = 0. */
    ck_assert_double_eq(er_stitch_weight(&win[0], wd[0], ht[0], 0, 0), 24.5);
    /* A window that is the whole world has no inner edge. */
    er_window all = {0, 0, 60, 60};
    ck_assert_double_ge(er_stitch_weight(&all, 60, 60, 0, 0), 1e29);
}
END_TEST

/* The 3 x 3 mosaic of stitch_weights: each tile's place and its window
 * with the halo. */
enum { SN = 3, SS = 20, SH = 5 };
typedef struct mosaic3 {
    er_tile_place pl[SN * SN];
    er_window win[SN * SN];
    int wd[SN * SN], ht[SN * SN];
} mosaic3;

static void stitch_mosaic(mosaic3 *m)
{
    for (int k = 0; k < SN * SN; k++) {
        m->pl[k] = (er_tile_place){(k % SN) * SS, (k / SN) * SS, SS, SS};
        er_mosaic_window(&m->pl[k], SH, SN * SS, SN * SS, &m->win[k], &m->wd[k], &m->ht[k]);
    }
}

/* A world field with no symmetry, so a cell read from the wrong place shows. */
static float field(int x, int y) { return (float)(100.0 + 0.37 * x - 1.3 * y + 0.01 * x * y); }

/* Tile k's halo output: `value` everywhere, or the field when !constant
 * (what every tile's run would write if it agreed with its neighbours). */
static float *halo_output(const mosaic3 *m, int k, float value, int constant)
{
    const er_window *w = &m->win[k];
    float *o = malloc((size_t)m->wd[k] * (size_t)m->ht[k] * sizeof *o);
    ck_assert_ptr_nonnull(o);
    for (int y = 0; y < m->ht[k]; y++)
        for (int x = 0; x < m->wd[k]; x++)
            o[(size_t)y * (size_t)m->wd[k] + (size_t)x] =
                constant ? value : field(w->x0 + x, w->y0 + y);
    return o;
}

/* Adds tile k's output (mask: its nodata, or NULL) to the sums of `tile`. */
static void add(er_stitch *acc, const mosaic3 *m, int k, const float *out, const uint8_t *mask,
                int tile)
{
    er_stitch_add(acc, &m->win[k], m->wd[k], m->ht[k], out, mask, k == tile);
}

/* Outputs that agree where they overlap stitch back to exactly that field,
 * on every tile (the weights are half-integers here, so the weighted mean
 * of equal values is exact); a constant stays that constant. */
START_TEST(stitch_identical_outputs_exact)
{
    mosaic3 m;
    float *out[SN * SN], res[SS * SS];
    int constant = _i;
    stitch_mosaic(&m);
    for (int k = 0; k < SN * SN; k++)
        out[k] = halo_output(&m, k, 7.25f, constant);
    for (int k = 0; k < SN * SN; k++) {
        er_stitch acc;
        er_error err = {{0}};
        ck_assert_int_eq(er_stitch_init(&acc, &m.pl[k], &err), ER_OK);
        for (int j = 0; j < SN * SN; j++)
            add(&acc, &m, j, out[j], NULL, k);
        ck_assert_int_eq(er_stitch_finish(&acc, NAN, res), 0);
        for (int y = 0; y < SS; y++)
            for (int x = 0; x < SS; x++) {
                float want = constant ? 7.25f : field(m.pl[k].col + x, m.pl[k].row + y);
                ck_assert_msg(res[y * SS + x] == want, "tile %d (%d, %d): %.9g, not %.9g", k, x,
                              y, (double)res[y * SS + x], (double)want);
            }
        er_stitch_free(&acc);
        er_stitch_free(&acc); /* a freed struct may be freed again */
    }
    for (int k = 0; k < SN * SN; k++)
        free(out[k]);
}
END_TEST

/* Two tiles' outputs that disagree (0 on tile 3, 1 on tile 4): across
 * their border the stitched value is tile 4's normalised weight, rising by
 * 1 / (2 * halo) a cell from 0.05 to 0.95, so the two weights sum to 1;
 * outside the overlap each tile keeps its own value. */
START_TEST(stitch_cross_fade)
{
    mosaic3 m;
    stitch_mosaic(&m);
    float *a = halo_output(&m, 3, 0.0f, 1), *b = halo_output(&m, 4, 1.0f, 1);
    float res[2][SS * SS];
    for (int k = 3; k <= 4; k++) {
        er_stitch acc;
        er_error err = {{0}};
        ck_assert_int_eq(er_stitch_init(&acc, &m.pl[k], &err), ER_OK);
        add(&acc, &m, 3, a, NULL, k);
        add(&acc, &m, 4, b, NULL, k);
        er_stitch_finish(&acc, NAN, res[k - 3]);
        er_stitch_free(&acc);
    }
    /* Row 10 of both tiles is world row 30; the overlap is x in [15, 25). */
    for (int x = 15; x < 25; x++) {
        float v = x < 20 ? res[0][10 * SS + x] : res[1][10 * SS + x - 20];
        ck_assert_float_eq_tol(v, (x - 15 + 0.5) / (2.0 * SH), 1e-6);
    }
    ck_assert_float_eq(res[0][10 * SS + 14], 0.0f);
    ck_assert_float_eq(res[1][10 * SS + 5], 1.0f);
    free(a);
    free(b);
}
END_TEST

/* Nodata: the tile's own nodata cells stay nodata even where a neighbour
 * has a value; a neighbour's nodata adds nothing (the cell keeps the
 * tile's value exactly); a cell no output reaches is nodata too. */
START_TEST(stitch_nodata)
{
    mosaic3 m;
    stitch_mosaic(&m);
    float *a = halo_output(&m, 3, 2.0f, 1), *b = halo_output(&m, 4, 4.0f, 1), res[SS * SS];
    uint8_t *ma = calloc((size_t)m.wd[3] * (size_t)m.ht[3], 1);
    uint8_t *mb = calloc((size_t)m.wd[4] * (size_t)m.ht[4], 1);
    ck_assert(ma && mb);
    /* World cell (18, 30): nodata in tile 3's output; (19, 31): nodata in
     * tile 4's.  Both lie in tile 3 (at (18, 10) and (19, 11)), in the
     * overlap. */
    ma[(size_t)(30 - m.win[3].y0) * (size_t)m.wd[3] + (size_t)(18 - m.win[3].x0)] = 1;
    mb[(size_t)(31 - m.win[4].y0) * (size_t)m.wd[4] + (size_t)(19 - m.win[4].x0)] = 1;
    er_stitch acc;
    er_error err = {{0}};
    ck_assert_int_eq(er_stitch_init(&acc, &m.pl[3], &err), ER_OK);
    add(&acc, &m, 3, a, ma, 3);
    add(&acc, &m, 4, b, mb, 3);
    ck_assert_int_eq(er_stitch_finish(&acc, -9999.0, res), 1);
    ck_assert_int_eq(acc.nodata[10 * SS + 18], 1);
    ck_assert_float_eq(res[10 * SS + 18], -9999.0f);
    ck_assert_int_eq(acc.nodata[11 * SS + 19], 0);
    ck_assert_float_eq(res[11 * SS + 19], 2.0f);
    ck_assert_int_eq(acc.nodata[10 * SS + 19], 0);
    ck_assert(res[10 * SS + 19] > 2.0f && res[10 * SS + 19] < 4.0f);
    er_stitch_free(&acc);
    /* Only tile 4's output for tile 3: its west part is out of reach. */
    ck_assert_int_eq(er_stitch_init(&acc, &m.pl[3], &err), ER_OK);
    add(&acc, &m, 4, b, NULL, 3);
    ck_assert_int_eq(er_stitch_finish(&acc, -9999.0, res), 1);
    ck_assert_int_eq(acc.nodata[10 * SS + 14], 1);
    ck_assert_float_eq(res[10 * SS + 14], -9999.0f);
    ck_assert_float_eq(res[10 * SS + 19], 4.0f);
    er_stitch_free(&acc);
    free(a);
    free(b);
    free(ma);
    free(mb);
}
END_TEST

Suite *tiles_suite(void);
Suite *tiles_suite(void)
{
    Suite *s = suite_create("tiles");
    TCase *tc = tcase_create("tiles");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, droplet_window_is_whole_restricted, 0, 2);
    tcase_add_test(tc, window_run_thread_identity);
    tcase_add_test(tc, default_window_is_old_behaviour);
    tcase_add_test(tc, mei_window_is_whole_restricted);
    tcase_add_test(tc, window_refusals);
    tcase_add_test(tc, mosaic_layout_and_neighbours);
    tcase_add_test(tc, mosaic_refusals);
    tcase_add_test(tc, stitch_weights);
    tcase_add_loop_test(tc, stitch_identical_outputs_exact, 0, 2);
    tcase_add_test(tc, stitch_cross_fade);
    tcase_add_test(tc, stitch_nodata);
    suite_add_tcase(s, tc);
    return s;
}
