/*
 * The stream-power model (core/stream_power/): the analytic steady-state
 * river profile, a closed depression that fills and spills, the implicit
 * solver against a small-step explicit one, the material budget with
 * deposition, control maps, thread-count identity, resume, refusals and
 * the powers it computes itself.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/backend.h"
#include "../../core/model.h"
#include "../../core/models.h"
#include "../../core/plan.h"
#include "../../core/stream_power/sp_internal.h"
#include "../../core/stream_power/state.h"
#include "sp_map.h"
#include "../../io/checkpoint.h"
#include "test_util.h"

/* The up-close keys all on (loop index 1 of budget_closes,
 * threads_identical and resume_identical): routing
 * off the grid, open edges, the channel-head area, a channel width,
 * nonlinear creep with its relaxation, the lithology field and
 * drained basins (breached each step and after the last). */
static void up_close(er_params *p)
{
    p->stream_power.routing = ER_SP_ROUTE_RANDOM;
    p->stream_power.base_level = ER_SP_LEVEL_FOLLOW;
    p->stream_power.channel_head = 200.0;
    p->stream_power.channel_width = 5.0;
    p->stream_power.sc = 0.8;
    p->stream_power.lithology = 0.6;
    p->stream_power.lithology_scale = 200.0;
    p->stream_power.depressions = ER_SP_DEPR_DRAIN;
}

/* ------------------------------------------------------------------ */

/* A river profile under uniform uplift reaches the steady state of the
 * stream-power law, S = (U / K)^(1/n) A^(-m/n) (Whipple and Tucker 1999),
 * to 1 %: a strip of cells one row wide drains west to base level, so
 * cell x has A = (W - x) cells.  The implicit solver's fixed point is
 * that slope exactly; 30 steps of 1 Myr take any start to it.
 * Loop: (m, n) = (0.5, 1), (0.4, 1), (0.5, 2), (0.45, 1.5). */
static const double profile_mn[4][2] = {{0.5, 1.0}, {0.4, 1.0}, {0.5, 2.0}, {0.45, 1.5}};

START_TEST(steady_profile)
{
    const int w = 100;
    const double dx = 50.0, u = 1e-3, k = 2e-5;
    const double m_exp = profile_mn[_i][0], n_exp = profile_mn[_i][1];
    map m = profile_strip(w, dx);
    er_params p = profile_params(u, k, m_exp, n_exp);
    map_run_ok(&m, &p);
    ck_assert_float_eq(m.z[0], m.z0[0]);
    double worst = 0.0;
    for (int x = 1; x < w; x++) {
        double s = ((double)m.z[x] - (double)m.z[x - 1]) / dx;
        double a = (double)(w - x) * dx * dx;
        double want = pow(u / k, 1.0 / n_exp) * pow(a, -m_exp / n_exp);
        worst = fmax(worst, fabs(s / want - 1.0));
        /* the flow layer is the drainage area in m^2 */
        ck_assert_double_eq_tol(m.flow[x], a, a * 1e-6);
    }
    ck_assert_msg(worst < 0.01, "(m, n) = (%g, %g): slope off by %.3g %%", m_exp, n_exp,
                  worst * 100);
    map_free(&m);
}
END_TEST

/* The heights a priority flood would fill z to (base level: cells on an
 * open edge of the map), by relaxation: the lowest level from which water
 * on each cell can reach base level. */
static void flood_levels(const float *z, int w, int h, double *lev)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            lev[y * w + x] = (x == 0 || y == 0 || x == w - 1 || y == h - 1) ? z[y * w + x]
                                                                             : INFINITY;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int y = 1; y < h - 1; y++)
            for (int x = 1; x < w - 1; x++) {
                double lo = INFINITY;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++)
                        if (dx || dy)
                            lo = fmin(lo, lev[(y + dy) * w + x + dx]);
                double v = fmax((double)z[y * w + x], lo);
                if (v < lev[y * w + x]) {
                    lev[y * w + x] = v;
                    changed = 1;
                }
            }
    }
}

/* A closed depression fills and spills: a bowl 40 m deep below a
 * mountainside, with deposition (G = 1) and no uplift, fills with what
 * the rivers bring down until no cell lies below its spill point, and
 * sediment then leaves the map past it. */
START_TEST(depression_fills)
{
    const int w = 40, h = 40;
    map m = map_new(w, h, 100.0);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double r = hypot(x - 14.0, y - 20.0);
            double bowl = r < 8.0 ? -60.0 * (1.0 - r / 8.0) : 0.0;
            m.z[y * w + x] = (float)(20.0 + 2.0 * x + bowl + 0.01 * ((x * 7 + y * 13) % 11));
        }
    map_keep(&m);
    double *lev = malloc(cells(&m) * sizeof *lev);
    ck_assert_ptr_nonnull(lev);
    flood_levels(m.z0, w, h, lev);
    double deep = 0.0;
    for (size_t i = 0; i < cells(&m); i++)
        deep = fmax(deep, lev[i] - m.z0[i]);
    ck_assert_double_gt(deep, 30.0);
    er_params p = sp_fill_params(200, 1000.0);
    map_run_ok(&m, &p);
    flood_levels(m.z, w, h, lev);
    for (size_t i = 0; i < cells(&m); i++)
        ck_assert_msg(lev[i] - m.z[i] <= 1e-3, "cell (%zu, %zu) lies %g m below its spill point",
                      i % w, i / w, lev[i] - m.z[i]);
    /* the lake's cells were raised; what it could not hold left the map */
    ck_assert_double_gt(m.sed[20 * w + 14], 30.0);
    ck_assert_double_gt(m.b.left_map, 0.0);
    ck_assert_double_lt(m.b.rel_error, 1e-9);
    free(lev);
    map_free(&m);
}
END_TEST

/* The explicit upwind scheme dz/dt = -K A^m (z_x - z_{x-1}) / dx with a
 * step far below its stability limit, on a strip draining west. */
static void explicit_reference(double *z, int w, double dx, double k, double m, double t, int n)
{
    const double dt = t / n;
    double *s = malloc((size_t)w * sizeof *s), *c = malloc((size_t)w * sizeof *c);
    ck_assert(s && c);
    for (int x = 1; x < w; x++)
        c[x] = k * pow((double)(w - x) * dx * dx, m) / dx;
    for (int it = 0; it < n; it++) {
        for (int x = 1; x < w; x++)
            s[x] = fmax(0.0, z[x] - z[x - 1]) * c[x];
        for (int x = 1; x < w; x++)
            z[x] -= dt * s[x];
    }
    free(s);
    free(c);
}

/* n = 1: the implicit solver against the explicit scheme with a step 250
 * times smaller.  Both are first order in dt; the implicit run's
 * difference from the reference shrinks in proportion to its step
 * (halving dt halves it, within 15 %), and at 400 steps (Courant number
 * K A^m dt / dx at most 0.08) it is below 1 % of the depth eroded. */
START_TEST(implicit_matches_explicit)
{
    const int w = 60;
    const double dx = 100.0, k = 2e-5, m_exp = 0.5, total = 2e5;
    double ref[60], diff[2] = {0, 0}, eroded = 0.0;
    for (int x = 0; x < w; x++)
        ref[x] = 100.0 + 2.0 * x + 10.0 * sin(x * 0.2);
    ref[0] = 0.0;
    map m = map_new(w, 1, dx);
    for (int x = 0; x < w; x++)
        m.z[x] = (float)ref[x];
    map_keep(&m);
    explicit_reference(ref, w, dx, k, m_exp, total, 100000);
    er_params p = sp_params();
    p.stream_power.uplift = 0.0;
    p.stream_power.k = k;
    p.stream_power.m = m_exp;
    p.stream_power.kd = 0.0;
    p.stream_power.boundary = ER_SP_EDGES_WEST;
    for (int r = 0; r < 2; r++) {
        p.stream_power.steps = r == 0 ? 200 : 400;
        p.stream_power.dt = total / (double)p.stream_power.steps;
        map_run_ok(&m, &p);
        for (int x = 1; x < w; x++) {
            diff[r] = fmax(diff[r], fabs((double)m.z[x] - ref[x]));
            if (r == 0)
                eroded = fmax(eroded, (double)m.z0[x] - ref[x]);
        }
    }
    ck_assert_double_gt(eroded, 20.0);
    ck_assert_msg(diff[1] < 0.01 * eroded, "implicit off by %g m of %g m", diff[1], eroded);
    ck_assert_msg(diff[1] > 0.425 * diff[0] && diff[1] < 0.575 * diff[0],
                  "halving dt took the difference from %g to %g m", diff[0], diff[1]);
    map_free(&m);
}
END_TEST

/* Diffusion at the largest accepted K_d dt / dx^2 (K_d 1e6 m^2/yr, dt 1e9
 * yr on 30 m cells: theta 1.1e12) with base level on every edge and no
 * uplift: what leaves at base level is what the lines lost, so the budget
 * closes to the final heights' float rounding.  Counted as theta (h -
 * h_base) a face, the flux's rounding would grow with theta: 3.8e-6 of
 * the Vermont DEM's volume, 1.6e-6 of the material moved, here. */
START_TEST(budget_closes_at_large_theta)
{
    map m = map_new(64, 48, 30.0);
    noise(&m, 5, 800.0);
    er_params p = sp_params();
    p.stream_power.steps = 6;
    p.stream_power.kd = 1e6;
    p.stream_power.dt = 1e9;
    p.stream_power.uplift = 0.0;
    map_run_ok(&m, &p);
    const er_budget *b = &m.b;
    ck_assert_double_gt(b->eroded, 0.1 * b->material_before);
    ck_assert_msg(b->rel_error < 1e-9, "relative error %g", b->rel_error);
    /* the float heights, within the input's 0..800 m: 2^-24 of each at most */
    ck_assert_double_eq_tol(b->material_before - b->left_map, b->material_after,
                            0x1p-24 * 800.0 * (double)cells(&m));
    map_free(&m);
}
END_TEST

/* The budget with deposition, diffusion and control maps: material
 * before plus uplift equals material after plus what left at base level
 * (to rounding, 1e-9 of the total), eroded - deposited = left, and the
 * wear and sediment layers sum to the eroded and deposited volumes. */
START_TEST(budget_closes)
{
    /* loop 1: the up-close keys, whose relaxation and open edges move
     * material too */
    map m = map_new(64, 48, 30.0);
    noise(&m, 3, 800.0);
    float *hard = malloc(cells(&m) * sizeof *hard), *mask = malloc(cells(&m) * sizeof *mask);
    ck_assert(hard && mask);
    for (size_t i = 0; i < cells(&m); i++) {
        hard[i] = (float)((i % 7) * 0.1);
        mask[i] = i % 13 == 0 ? 0.0f : 1.0f;
    }
    m.ctl.hardness = hard;
    m.ctl.mask = mask;
    m.t.controls = &m.ctl;
    er_params p = sp_params();
    p.stream_power.steps = 40;
    p.stream_power.g = 1.5;
    p.stream_power.kd = 0.5;
    if (_i)
        up_close(&p);
    map_run_ok(&m, &p);
    const er_budget *b = &m.b;
    ck_assert_double_gt(er_budget_term_value(b, "uplifted"), 0.0);
    ck_assert_double_gt(b->deposited, 0.01 * b->eroded);
    ck_assert_msg(b->rel_error < 1e-9, "relative error %g", b->rel_error);
    ck_assert_double_eq_tol(b->eroded - b->deposited, b->left_map, 1e-9 * b->eroded);
    ck_assert_double_eq_tol(b->material_before + er_budget_term_value(b, "uplifted") - b->left_map, b->material_after,
                            1e-9 * b->material_before);
    double wear = 0.0, sed = 0.0;
    for (size_t i = 0; i < cells(&m); i++) {
        wear += m.wear[i];
        sed += m.sed[i];
        if (mask[i] == 0.0f) /* mask 0: the cell is exactly as it was */
            ck_assert_float_eq(m.z[i], m.z0[i]);
    }
    ck_assert_double_eq_tol(wear, b->eroded, 1e-5 * b->eroded);
    ck_assert_double_eq_tol(sed, b->deposited, 1e-5 * b->deposited);
    map_free(&m);
}
END_TEST

/* Nothing asked, nothing changed: steps 0 gives the input's heights bit
 * for bit, and its flow layer is the drainage area of the input, every
 * cell draining to base level (the areas of the base-level cells add up
 * to the map's); nodata cells keep their value and the valid cells beside
 * them are base level; a map of nodata only runs and changes nothing. */
START_TEST(zero_steps_and_walls)
{
    map m = map_new(50, 40, 10.0);
    noise(&m, 5, 300.0);
    m.wall = calloc(cells(&m), 1);
    ck_assert_ptr_nonnull(m.wall);
    for (int y = 10; y < 20; y++)
        for (int x = 20; x < 30; x++) {
            m.wall[y * 50 + x] = 1;
            m.z[y * 50 + x] = m.z0[y * 50 + x] = -9999.0f;
        }
    m.t.wall = m.wall;
    er_params p = sp_params();
    p.stream_power.steps = 0;
    map_run_ok(&m, &p);
    ck_assert_int_eq(memcmp(m.z, m.z0, cells(&m) * sizeof(float)), 0);
    double out = 0.0;
    int valid = 0;
    for (int y = 0; y < 40; y++)
        for (int x = 0; x < 50; x++) {
            int i = y * 50 + x;
            if (m.wall[i])
                continue;
            valid++;
            int base = x == 0 || y == 0 || x == 49 || y == 39;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++)
                    if (x + dx >= 0 && x + dx < 50 && y + dy >= 0 && y + dy < 40 &&
                        m.wall[(y + dy) * 50 + x + dx])
                        base = 1;
            if (base)
                out += m.flow[i];
        }
    ck_assert_double_eq_tol(out, valid * 100.0, 1e-6 * valid * 100.0);
    p.stream_power.steps = 20;
    map_run_ok(&m, &p);
    for (int y = 9; y < 21; y++)
        for (int x = 19; x < 31; x++)
            ck_assert_float_eq(m.z[y * 50 + x], m.z0[y * 50 + x]);
    /* nodata everywhere: nothing to route, nothing changes */
    memset(m.wall, 1, cells(&m));
    map_run_ok(&m, &p);
    ck_assert_int_eq(memcmp(m.z, m.z0, cells(&m) * sizeof(float)), 0);
    map_free(&m);
}
END_TEST

/* The uplift control map multiplies the uplift: with nothing else acting
 * (k = kd = 0) a cell of map value u rises by u U dt a step, base level
 * not at all, and the budget's added material is their sum; another model
 * refuses the map (it has no uplift to scale). */
START_TEST(uplift_map)
{
    map m = map_new(20, 10, 10.0);
    noise(&m, 9, 100.0);
    float *up = malloc(cells(&m) * sizeof *up);
    ck_assert_ptr_nonnull(up);
    for (size_t i = 0; i < cells(&m); i++)
        up[i] = (float)((i % 20) * 0.25);
    m.ctl.uplift = up;
    m.t.controls = &m.ctl;
    er_params p = sp_params();
    p.stream_power.steps = 4;
    p.stream_power.dt = 500.0;
    p.stream_power.uplift = 2e-3;
    p.stream_power.k = 0.0;
    p.stream_power.kd = 0.0;
    map_run_ok(&m, &p);
    double added = 0.0;
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 20; x++) {
            const size_t i = (size_t)y * 20 + (size_t)x;
            const int base = x == 0 || y == 0 || x == 19 || y == 9;
            const double want = base ? 0.0 : 4 * 500.0 * 2e-3 * up[i];
            added += want;
            ck_assert_double_eq_tol((double)m.z[i] - (double)m.z0[i], want, 1e-4);
        }
    ck_assert_double_eq_tol(er_budget_term_value(&m.b, "uplifted"), added, 1e-9 * added);
    er_params q;
    er_params_default(&q);
    er_plan plan;
    er_error e;
    ck_assert_int_eq(er_plan_make(&q, &m.t, NULL, &plan, &e), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "uplift: the mei model has no uplift"));
    /* a checkpoint's input hash holds the map (a resume with another is
     * refused), and a run without it keeps the hash it had before the map
     * existed (the four other maps folded as they were) */
    const uint64_t h = 12345, four[5] = {1, 2, 3, 4, 0}, five[5] = {1, 2, 3, 4, 5};
    const uint64_t other[5] = {1, 2, 3, 4, 6}, none[5] = {0, 0, 0, 0, 0};
    ck_assert_uint_eq(er_checkpoint_fold_maps(h, none), h);
    ck_assert_uint_ne(er_checkpoint_fold_maps(h, five), er_checkpoint_fold_maps(h, four));
    ck_assert_uint_ne(er_checkpoint_fold_maps(h, five), er_checkpoint_fold_maps(h, other));
    uint8_t b[32];
    for (int k = 0; k < 32; k++)
        b[k] = (uint8_t)(four[k / 8] >> (8 * (k % 8)));
    ck_assert_uint_eq(er_checkpoint_fold_maps(h, four), er_fnv1a64(h, b, sizeof b));
    map_free(&m);
}
END_TEST

/* The same bits for any thread count: heights, layers and budget, with
 * deposition, diffusion and a rain map, on 1, 2, 3 and 8 threads. */
START_TEST(threads_identical)
{
    map m[4];
    const int threads[4] = {1, 2, 3, 8};
    er_params p = sp_params();
    p.stream_power.steps = 25;
    p.stream_power.g = 1.0;
    p.stream_power.kd = 0.2;
    if (_i)
        up_close(&p);
    for (int k = 0; k < 4; k++) {
        m[k] = map_new(70, 55, 20.0);
        noise(&m[k], 11, 500.0);
        float *rain = malloc(cells(&m[k]) * sizeof *rain);
        ck_assert_ptr_nonnull(rain);
        for (size_t i = 0; i < cells(&m[k]); i++)
            rain[i] = (float)(0.5 + (i % 5) * 0.25);
        m[k].ctl.rain = rain;
        m[k].t.controls = &m[k].ctl;
        er_test_set_threads(threads[k]);
        map_run_ok(&m[k], &p);
    }
    er_test_set_threads(2);
    const size_t bytes = cells(&m[0]) * sizeof(float);
    for (int k = 1; k < 4; k++) {
        ck_assert_int_eq(memcmp(m[0].z, m[k].z, bytes), 0);
        ck_assert_int_eq(memcmp(m[0].water, m[k].water, bytes), 0);
        ck_assert_int_eq(memcmp(m[0].sed, m[k].sed, bytes), 0);
        ck_assert_int_eq(memcmp(m[0].flow, m[k].flow, bytes), 0);
        ck_assert_int_eq(memcmp(m[0].wear, m[k].wear, bytes), 0);
        ck_assert_int_eq(memcmp(&m[0].b, &m[k].b, sizeof m[0].b), 0);
    }
    ck_assert_double_gt(m[0].b.deposited, 0.0);
    for (int k = 0; k < 4; k++)
        map_free(&m[k]);
}
END_TEST

/* The passes sorted in runs, one a thread, and merged (route.c
 * sort_passes): on white noise in whole metres (ties in both keys
 * everywhere) with enough passes for 2 to 6 runs, the passes come out
 * ordered by pass height then lower height, ties in the order found, and
 * the receivers, basins, lake levels and drainage area are the same bits
 * on 1, 2, 3, 5 and 8 threads. */
START_TEST(passes_sorted_in_runs)
{
    enum { W = 330, H = 310, T = 5 };
    const int threads[T] = {1, 2, 3, 5, 8};
    const int saved = er_test_threads();
    float *z = malloc((size_t)W * H * sizeof *z);
    ck_assert_ptr_nonnull(z);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            z[(size_t)y * W + x] = (float)floor(40.0 * lattice((uint32_t)x, (uint32_t)y, 3));
    er_terrain t = {W, H, z, NULL, 10.0, 10.0, NULL};
    er_params p = sp_params();
    er_sp_sim s[T];
    for (int k = 0; k < T; k++) {
        er_plan plan;
        er_error e = {{0}};
        er_test_set_threads(threads[k]);
        ck_assert_msg(er_plan_make(&p, &t, NULL, &plan, &e) == ER_OK &&
                      er_sp_init(&s[k], &plan, &t, NULL, &e) == ER_OK &&
                      er_sp_route(&s[k], 1, &e) == ER_OK, "%s", e.msg);
    }
    er_test_set_threads(saved);
    /* enough passes that 8 threads cut them into 6 runs, 2 into 2 */
    ck_assert_int_ge(s[0].nedges, 6 * 16384);
    for (int64_t k = 1; k < s[0].nedges; k++) {
        const er_sp_edge *a = &s[0].edges[k - 1], *b = &s[0].edges[k];
        ck_assert(a->w < b->w || (a->w == b->w && a->lo <= b->lo));
        if (a->w == b->w && a->lo == b->lo) /* found in row-major order of their first cell */
            ck_assert(a->a < b->a || (a->a == b->a && a->b < b->b));
    }
    const size_t n = (size_t)W * H;
    for (int k = 1; k < T; k++) {
        ck_assert_int_eq(s[k].nedges, s[0].nedges);
        ck_assert_int_eq(memcmp(s[k].edges, s[0].edges, (size_t)s[0].nedges * sizeof *s[0].edges), 0);
        ck_assert_int_eq(s[k].nbasins, s[0].nbasins);
        ck_assert_int_eq(memcmp(s[k].rdir, s[0].rdir, n), 0);
        ck_assert_int_eq(memcmp(s[k].basin, s[0].basin, n * sizeof *s[0].basin), 0);
        ck_assert_int_eq(memcmp(s[k].acc, s[0].acc, n * sizeof *s[0].acc), 0);
        for (int64_t b = 1; b < s[0].nbasins; b++) {
            ck_assert_int_eq(s[k].basins[b].parent, s[0].basins[b].parent);
            ck_assert(s[k].basins[b].level == s[0].basins[b].level);
        }
    }
    for (int k = 0; k < T; k++)
        er_sp_free(&s[k]);
    free(z);
}
END_TEST

typedef struct saver {
    const char *path;
    int64_t at, seen;
    er_checkpoint_id id;
} saver;

static int save_and_stop(void *user, const er_run_state *st)
{
    saver *v = user;
    v->seen++;
    ck_assert_int_eq(st->model, ER_MODEL_STREAM_POWER);
    ck_assert_ptr_nonnull(st->extra);
    if (st->boundary != v->at)
        return 0;
    er_error e;
    ck_assert_msg(er_checkpoint_write(v->path, st, &v->id, &e) == ER_OK, "%s", e.msg);
    return 1;
}

/* A run stopped at step 7 of 15, its state written to a checkpoint and
 * read back, resumed on the input: the straight run's heights, layers and
 * budget byte for byte (stopped on 1 thread, resumed on 2).  A state
 * whose heights are not finite is refused. */
START_TEST(resume_identical)
{
    map a = map_new(48, 40, 25.0), c = map_new(48, 40, 25.0);
    noise(&a, 7, 600.0);
    noise(&c, 7, 600.0);
    er_params p = sp_params();
    p.stream_power.steps = 15;
    p.stream_power.g = 0.8;
    p.stream_power.kd = 0.1;
    if (_i)
        up_close(&p);
    er_test_set_threads(2);
    map_run_ok(&a, &p);
    char dir[PATH_MAX], path[PATH_MAX + 16];
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck", dir);
    saver v = {path, 7, 0, {ER_MODEL_STREAM_POWER, 48, 40, 1, 2, "cpu", 0}};
    er_run_hooks hk = {save_and_stop, &v, NULL, NULL};
    er_error e;
    er_test_set_threads(1);
    ck_assert_int_eq(map_run(&c, &p, &hk, &e), ER_ECANCELED);
    ck_assert_str_eq(e.msg, "stream_power: cancelled at step 7");
    ck_assert_int_eq(v.seen, 8);
    er_checkpoint ck;
    ck_assert_msg(er_checkpoint_read(path, &v.id, &ck, &e) == ER_OK, "%s", e.msg);
    ck_assert_int_eq(ck.state.boundary, 7);
    hk = (er_run_hooks){NULL, NULL, &ck.state, NULL};
    er_test_set_threads(2);
    ck_assert_msg(map_run(&c, &p, &hk, &e) == ER_OK, "%s", e.msg);
    const size_t bytes = cells(&a) * sizeof(float);
    ck_assert_int_eq(memcmp(a.z, c.z, bytes), 0);
    ck_assert_int_eq(memcmp(a.water, c.water, bytes), 0);
    ck_assert_int_eq(memcmp(a.sed, c.sed, bytes), 0);
    ck_assert_int_eq(memcmp(a.flow, c.flow, bytes), 0);
    ck_assert_int_eq(memcmp(a.wear, c.wear, bytes), 0);
    ck_assert_int_eq(memcmp(&a.b, &c.b, sizeof a.b), 0);
    ck_assert_double_gt(er_budget_term_value(&a.b, "uplifted"), 0.0);
    /* a height that is not finite */
    double *zs = (double *)(uintptr_t)ck.state.extra->part[0];
    zs[100] = NAN;
    er_plan plan;
    ck_assert_int_eq(er_plan_make(&p, &c.t, NULL, &plan, &e), ER_OK);
    er_layers keep = {NULL, c.sed, NULL, c.wear};
    ck_assert_int_eq(er_plan_check_resume(&plan, &c.t, &ck.state, &keep, &e), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "height nan"));
    /* finite, but beyond what the map's material and uplift allow (a
     * crafted checkpoint's 1e300 was run into infinities, exit 0) */
    zs[100] = 1e300;
    ck_assert_int_eq(er_plan_check_resume(&plan, &c.t, &ck.state, &keep, &e), ER_EINVAL);
    ck_assert_msg(strstr(e.msg, "the state's height 1e+300 at cell (4, 2)"), "%s", e.msg);
    er_checkpoint_free(&ck);
    er_test_rmdir(dir);
    map_free(&a);
    map_free(&c);
}
END_TEST

/* What the model does not run: a window (tile sets) is a plan error; the
 * Vulkan backend has no path for it. */
START_TEST(refusals)
{
    map m = map_new(8, 8, 1.0);
    er_params p = sp_params();
    er_plan plan;
    er_error e;
    er_window win = {0, 0, 16, 16};
    ck_assert_int_eq(er_plan_make(&p, &m.t, &win, &plan, &e), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "tile sets"));
    ck_assert_uint_eq(er_backend_vulkan.caps(ER_MODEL_STREAM_POWER), 0);
    ck_assert_uint_eq(er_backend_cpu.caps(ER_MODEL_STREAM_POWER), ER_CAP_HOOKS);
    map_free(&m);
}
END_TEST

/* The model's own powers (num.c) against libm's, 1e-14 relative, over the
 * areas (1 to 1e12 cells) and exponents it meets. */
START_TEST(powers)
{
    const double ys[] = {0.0, 0.3, 0.4, 0.5, 1.0, 1.5, 2.0, 4.0, -0.5};
    for (size_t k = 0; k < sizeof ys / sizeof ys[0]; k++)
        for (double x = 1e-3; x < 1e12; x *= 1.37) {
            double want = pow(x, ys[k]), got = er_sp_pow(x, ys[k]);
            ck_assert_msg(fabs(got - want) <= 1e-14 * want, "%.17g^%g: %.17g, libm %.17g", x,
                          ys[k], got, want);
        }
    ck_assert_double_eq(er_sp_pow(0.0, 0.4), 0.0);
}
END_TEST

/* Keys each in range whose uplift adds up to more than 10 km (U dt
 * steps) get a warning in the plan; the defaults (250 m) and exactly
 * 10 km do not. */
START_TEST(absurd_uplift_warned)
{
    map m = map_new(8, 6, 10.0);
    er_params p;
    er_params_default(&p);
    p.model = ER_MODEL_STREAM_POWER;
    er_plan plan;
    er_error e;
    ck_assert_int_eq(er_plan_make(&p, &m.t, NULL, &plan, &e), ER_OK);
    ck_assert_str_eq(plan.warning, "");
    p.stream_power.steps = 10000; /* 1 mm/yr x 1000 yr x 10000 = 10 km */
    ck_assert_int_eq(er_plan_make(&p, &m.t, NULL, &plan, &e), ER_OK);
    ck_assert_str_eq(plan.warning, "");
    p.stream_power.steps = 200000;
    ck_assert_int_eq(er_plan_make(&p, &m.t, NULL, &plan, &e), ER_OK);
    ck_assert_str_eq(plan.warning, "stream_power: uplift 0.001 m/yr over 200000 steps of 1000 yr "
                                   "raises the land 200 km, more than the 10 km a landscape can "
                                   "hold: check uplift, dt and steps");
    map_free(&m);
}
END_TEST

Suite *stream_power_suite(void);
Suite *stream_power_suite(void)
{
    Suite *s = suite_create("stream_power");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, steady_profile, 0, 4);
    tcase_add_test(tc, depression_fills);
    tcase_add_test(tc, implicit_matches_explicit);
    tcase_add_loop_test(tc, budget_closes, 0, 2);
    tcase_add_test(tc, budget_closes_at_large_theta);
    tcase_add_test(tc, zero_steps_and_walls);
    tcase_add_test(tc, uplift_map);
    tcase_add_test(tc, absurd_uplift_warned);
    tcase_add_loop_test(tc, threads_identical, 0, 2);
    tcase_add_test(tc, passes_sorted_in_runs);
    tcase_add_loop_test(tc, resume_identical, 0, 2);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, powers);
    suite_add_tcase(s, tc);
    return s;
}
