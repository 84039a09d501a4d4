/*
 * The stream-power model's land up close (issue 37): nonlinear creep's
 * steady hillslope against its closed form, the critical-slope
 * relaxation, open ("follow") edges, routing off the grid, the lithology
 * field, the channel-head area, the channel width, the fans of filled
 * basins and breached basins; each also at several thread counts
 * and resumed in check_stream_power.c (its up-close variants).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/stream_power/sp_internal.h"
#include "sp_map.h"
#include "test_util.h"

/* The flux through the face east of cell i of a strip whose free cells
 * are 1 .. w - 2, both ends base level, under uplift u: all that rises
 * between the divide (the strip's middle) and the face, per metre of
 * width. */
static double strip_flux(int w, int i, double u, double dx)
{
    return u * dx * (double)(i - (w / 2 - 1));
}

/* A hillslope under uplift reaches the steady state of nonlinear creep
 * (Roering et al. 1999, eq. 6): the flux q = K_d S / (1 - (S / S_c)^2)
 * carries what rises upslope, q = U x, so
 *     (q / S_c^2) S^2 + K_d S - q = 0,
 * each face's slope the positive root, to 1e-4 (the heights are float32
 * on output), and the strip symmetric about its divide.  Linear creep
 * would give S = q / K_d, 1.0 at the foot: the test tells them apart. */
START_TEST(creep_steady_slope)
{
    const int w = 42;
    const double dx = 1.0, u = 5e-4, kd = 0.01, sc = 1.2;
    map m = map_new(w, 1, dx);
    map_keep(&m);
    er_params p = sp_params();
    p.stream_power.steps = 2000;
    p.stream_power.dt = 1e4;
    p.stream_power.uplift = u;
    p.stream_power.k = 0.0;
    p.stream_power.kd = kd;
    p.stream_power.sc = sc;
    p.stream_power.boundary = ER_SP_EDGES_WEST_EAST;
    map_run_ok(&m, &p);
    double worst = 0.0, foot = 0.0;
    for (int i = w / 2; i < w - 2; i++) {
        const double q = strip_flux(w, i, u, dx), a = q / (sc * sc);
        const double want = (-kd + sqrt(kd * kd + 4.0 * a * q)) / (2.0 * a);
        const double s = ((double)m.z[i] - (double)m.z[i + 1]) / dx;
        worst = fmax(worst, fabs(s / want - 1.0));
        foot = s;
        ck_assert_double_eq_tol(m.z[i], m.z[w - 1 - i], 1e-5 * m.z[i]);
    }
    ck_assert_msg(worst < 1e-4, "slope off the closed form by %.3g", worst);
    ck_assert_double_lt(foot, 0.8); /* linear creep: 1.0 */
    map_free(&m);
}
END_TEST

/* A spike 200 m above a flat, no creep, S_c 0.5: the relaxation moves it
 * into a cone no pair of which is steeper than S_c (to 1 %), keeps every
 * cubic metre (no material reaches the far edges), and keeps the
 * square's symmetries to rounding. */
START_TEST(critical_slope_relaxes)
{
    const int w = 31;
    const double dx = 10.0, sc = 0.5;
    map m = map_new(w, w, dx);
    m.z[15 * w + 15] = 200.0f;
    map_keep(&m);
    er_params p = sp_params();
    p.stream_power.steps = 300;
    p.stream_power.uplift = 0.0;
    p.stream_power.k = 0.0;
    p.stream_power.kd = 0.0;
    p.stream_power.sc = sc;
    map_run_ok(&m, &p);
    double sum = 0.0, worst = 0.0;
    for (int y = 0; y < w; y++)
        for (int x = 0; x < w; x++) {
            const double z = m.z[y * w + x];
            sum += z;
            ck_assert_double_eq_tol(z, m.z[x * w + y], 1e-4);
            ck_assert_double_eq_tol(z, m.z[y * w + (w - 1 - x)], 1e-4);
            for (int k = 0; k < 8; k++) {
                const int nx = x + er_sp_dx[k], ny = y + er_sp_dy[k];
                if (nx < 0 || ny < 0 || nx >= w || ny >= w)
                    continue;
                const double l = er_sp_dx[k] && er_sp_dy[k] ? dx * sqrt(2.0) : dx;
                worst = fmax(worst, fabs(z - m.z[ny * w + nx]) / l);
            }
        }
    ck_assert_msg(worst < sc * 1.01, "steepest pair %.4g, S_c %g", worst, sc);
    ck_assert_double_lt(m.z[15 * w + 15], 100.0);
    ck_assert_double_eq_tol(sum, 200.0, 1e-3);
    ck_assert_double_lt(fabs(m.b.left_map), 1e-9);
    /* the after-sum is of float32 heights: 2^-24 of the cone's ~16 m on
     * each of its ~100 cells, against ~400 m * cells moved */
    ck_assert_msg(m.b.rel_error < 1e-7, "relative error %g", m.b.rel_error);
    map_free(&m);
}
END_TEST

/* The cell across the edge from edge cell (x, y), inwards. */
static size_t inward(const map *m, int x, int y)
{
    const int ix = x == 0 ? 1 : x == m->w - 1 ? m->w - 2 : x;
    const int iy = y == 0 ? 1 : y == m->h - 1 ? m->h - 2 : y;
    return (size_t)iy * m->w + ix;
}

/* Counts the edge cells higher than their inward neighbour; fails on an
 * edge cell raised above the input. */
static int edge_cells_above(const map *m)
{
    int above = 0;
    for (int y = 0; y < m->h; y++)
        for (int x = 0; x < m->w; x++) {
            if (x && y && x < m->w - 1 && y < m->h - 1)
                continue;
            const size_t i = (size_t)y * m->w + x;
            ck_assert_float_le(m->z[i], m->z0[i]);
            above += m->z[i] > m->z[inward(m, x, y)];
        }
    return above;
}

/* base_level "follow": no edge cell ends above its inward neighbour (held
 * at the input's heights, dozens do on the same map), none is raised, and
 * what the edges lost closes the budget as material that left the map. */
START_TEST(follow_edges_open)
{
    map m = map_new(48, 40, 25.0);
    noise(&m, 5, 600.0);
    er_params p = sp_params();
    p.stream_power.steps = 30;
    p.stream_power.g = 1.0;
    p.stream_power.kd = 0.1;
    map_run_ok(&m, &p);
    const int held = edge_cells_above(&m);
    ck_assert_int_gt(held, 20);
    p.stream_power.base_level = ER_SP_LEVEL_FOLLOW;
    map_run_ok(&m, &p);
    ck_assert_int_eq(edge_cells_above(&m), 0);
    const er_budget *b = &m.b;
    ck_assert_msg(b->rel_error < 1e-9, "relative error %g", b->rel_error);
    ck_assert_double_eq_tol(b->material_before + er_budget_term_value(b, "uplifted") - b->left_map,
                            b->material_after, 1e-9 * b->material_before);
    map_free(&m);
}
END_TEST

/* The drainage areas [cells] of a ramp falling west, 64 x 32 cells,
 * routed by `routing` (spread a); the west column is base level. */
static void ramp_flow(er_sp_routing routing, double a, float *flow)
{
    map m = map_new(64, 32, 10.0);
    for (int y = 0; y < m.h; y++)
        for (int x = 0; x < m.w; x++)
            m.z[y * m.w + x] = (float)(2.0 * x);
    map_keep(&m);
    er_params p = sp_params();
    p.stream_power.steps = 0;
    p.stream_power.routing = routing;
    p.stream_power.routing_spread = a;
    p.stream_power.boundary = ER_SP_EDGES_WEST;
    map_run_ok(&m, &p);
    for (size_t i = 0; i < cells(&m); i++)
        flow[i] = m.flow[i] / 100.0f;
    map_free(&m);
}

/* Routing off the grid, on a ramp whose gradient is a grid direction:
 * D8 sends every cell west (cell x drains the w - x cells east of it);
 * rho8 too (a diagonal's drawn distance is never shorter than a side);
 * "random" with spread 0 is D8 to the byte; with 0.4 channels wander: a
 * quarter or more of the cells' areas differ from D8's, while the base
 * level still receives the whole map. */
START_TEST(routing_off_grid)
{
    const int w = 64, h = 32;
    const size_t n = (size_t)w * h;
    float *d8 = malloc(n * sizeof *d8), *r = malloc(n * sizeof *r);
    ck_assert(d8 && r);
    ramp_flow(ER_SP_ROUTE_D8, 0.0, d8);
    for (int y = 0; y < h; y++)
        for (int x = 1; x < w; x++)
            ck_assert_float_eq(d8[y * w + x], (float)(w - x));
    ramp_flow(ER_SP_ROUTE_RHO8, 0.0, r);
    ck_assert_int_eq(memcmp(d8, r, n * sizeof *r), 0);
    ramp_flow(ER_SP_ROUTE_RANDOM, 0.0, r);
    ck_assert_int_eq(memcmp(d8, r, n * sizeof *r), 0);
    ramp_flow(ER_SP_ROUTE_RANDOM, 0.4, r);
    size_t differ = 0;
    double base = 0.0;
    for (size_t i = 0; i < n; i++) {
        differ += r[i] != d8[i];
        if (i % (size_t)w == 0)
            base += r[i];
    }
    ck_assert_msg(differ > n / 4, "%zu of %zu cells drain as by D8", n - differ, n);
    ck_assert_double_eq_tol(base, (double)n, 1e-3);
    free(d8);
    free(r);
}
END_TEST

/* The multiplier 1 + L xi of a w x w map of cell dx, seed 9. */
static float *rock(int w, double dx, double l, int threads)
{
    er_sp_sim s;
    memset(&s, 0, sizeof s);
    s.w = s.h = w;
    s.n = (int64_t)w * w;
    s.dx = s.dy = dx;
    s.seed = 9;
    er_stream_power_params p = sp_params().stream_power;
    p.lithology = l;
    p.lithology_scale = 400.0;
    float *f = malloc((size_t)s.n * sizeof *f);
    ck_assert_ptr_nonnull(f);
    for (int64_t i = 0; i < s.n; i++)
        f[i] = 1.0f;
    er_test_set_threads(threads);
    er_sp_lithology(&s, &p, f);
    er_test_set_threads(2);
    return f;
}

/* The lithology field: within [1 - L, 1 + L], mean near 1 and spread
 * wide; the same bytes on 1 and 3 threads; a function of the place in
 * metres: the field of 10 m cells follows the 2 x 2 means of that of
 * 5 m cells over the same ground (the coarser grid lacks only the finest
 * octave). */
START_TEST(lithology_field)
{
    const double l = 0.8;
    float *a = rock(128, 5.0, l, 1), *b = rock(128, 5.0, l, 3), *c = rock(64, 10.0, l, 2);
    ck_assert_int_eq(memcmp(a, b, 128 * 128 * sizeof *a), 0);
    double sum = 0.0, sq = 0.0;
    for (int i = 0; i < 128 * 128; i++) {
        ck_assert(a[i] >= 1.0f - (float)l && a[i] <= 1.0f + (float)l);
        sum += a[i];
        sq += (a[i] - 1.0) * (a[i] - 1.0);
    }
    const double mean = sum / (128 * 128), sd = sqrt(sq / (128 * 128));
    ck_assert_double_lt(fabs(mean - 1.0), 0.15 * l);
    ck_assert_double_gt(sd, 0.1 * l);
    double sf = 0, sc = 0, sff = 0, scc = 0, sfc = 0;
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++) {
            const float *f = a + (size_t)(2 * y) * 128 + 2 * x;
            const double fm = (f[0] + f[1] + f[128] + f[129]) / 4.0, cv = c[y * 64 + x];
            sf += fm;
            sc += cv;
            sff += fm * fm;
            scc += cv * cv;
            sfc += fm * cv;
        }
    const double k = 64.0 * 64.0, cov = sfc / k - sf / k * sc / k;
    const double corr = cov / sqrt((sff / k - sf * sf / k / k) * (scc / k - sc * sc / k / k));
    ck_assert_msg(corr > 0.8, "correlation %.3f", corr);
    free(a);
    free(b);
    free(c);
}
END_TEST

/* A river profile with a channel head: a strip draining west, cell x
 * draining A = (w - x) cells, so a = A / dx = (w - x) dx.  Below the
 * channel-head threshold a_c nothing incises (no wear: the cells only
 * rise); above it the steady state of K (1 - a_c / a) A^m S = U,
 *     S = U / (K A^m (1 - a_c / a)),
 * to 1 % (the same 30 steps of 1 Myr as steady_profile). */
START_TEST(channel_head_profile)
{
    const int w = 100;
    const double dx = 50.0, u = 1e-3, k = 2e-5, mm = 0.4, ac = 1500.0;
    map m = profile_strip(w, dx);
    er_params p = profile_params(u, k, mm, 1.0);
    p.stream_power.channel_head = ac;
    map_run_ok(&m, &p);
    double worst = 0.0;
    int heads = 0, rivers = 0;
    for (int x = 1; x < w; x++) {
        const double a_m2 = (double)(w - x) * dx * dx, a = a_m2 / dx;
        if (a <= ac) {
            ck_assert_float_eq(m.wear[x], 0.0f);
            heads++;
            continue;
        }
        if (a < 2.0 * ac)
            continue;
        const double s = ((double)m.z[x] - (double)m.z[x - 1]) / dx;
        const double want = u / (k * pow(a_m2, mm) * (1.0 - ac / a));
        worst = fmax(worst, fabs(s / want - 1.0));
        rivers++;
    }
    ck_assert_int_eq(heads, 30);
    ck_assert_int_gt(rivers, 30);
    ck_assert_msg(worst < 0.01, "slope off by %.3g %%", worst * 100);
    map_free(&m);
}
END_TEST

/* A river profile with a channel width: the same strip, cell x draining
 * A = (w - x) dx^2; a channel w_1 (A / 1 km^2)^b wide lowers its cell's
 * mean height at min(1, w / dx) of the bed's rate, so the steady state of
 * K A^m S min(1, w / dx) = U is
 *     S = U / (K A^m min(1, w / dx)),
 * to 1 %, on cells both narrower and wider than the channel (w_1 = 150 m,
 * b = 0.5: w passes dx = 50 m at A = 0.11 km^2, 44 cells). */
START_TEST(channel_width_profile)
{
    const int w = 100;
    const double dx = 50.0, u = 1e-3, k = 2e-5, mm = 0.4, w1 = 150.0, b = 0.5;
    map m = profile_strip(w, dx);
    er_params p = profile_params(u, k, mm, 1.0);
    p.stream_power.channel_width = w1;
    p.stream_power.width_exponent = b;
    map_run_ok(&m, &p);
    double worst = 0.0;
    int narrow = 0, wide = 0;
    for (int x = 1; x < w; x++) {
        const double a_m2 = (double)(w - x) * dx * dx;
        const double share = fmin(1.0, w1 * pow(a_m2 * 1e-6, b) / dx);
        const double s = ((double)m.z[x] - (double)m.z[x - 1]) / dx;
        const double want = u / (k * pow(a_m2, mm) * share);
        worst = fmax(worst, fabs(s / want - 1.0));
        if (share < 1.0)
            narrow++;
        else
            wide++;
    }
    ck_assert_int_eq(narrow, 44);
    ck_assert_int_eq(wide, 55);
    ck_assert_msg(worst < 0.01, "slope off by %.3g %%", worst * 100);
    map_free(&m);
}
END_TEST

/* A closed basin filled with sediment (stream_power.fan_slope): a pit
 * about 60 m deep in a mountainside, its floor a shallow bowl, its one
 * outlet a notch in the downhill rim, fed by the rivers of the slope
 * above it (G = 1) for one step, whose sediment covers two thirds of the
 * floor.  Every cell that received sediment stands at z_f + s d (d its
 * distance to the basin's cell at the pass, s the fan's slope) for one
 * z_f below the lake's level, to the float32 of the heights (measured:
 * 4e-6 m; a level fill would be off by metres at s = 0.05), and every
 * pit cell left bare lies at or above that surface: the filled floor
 * rises from the outlet at s, a level plain at s = 0. */
START_TEST(fan_slopes_from_outlet)
{
    const int w = 40, h = 30, x0 = 10, x1 = 24, y0 = 8, y1 = 22, py = 15;
    const double dx = 10.0, floor_z = 40.0, notch = 105.0;
    const double slope = _i ? 0.05 : 0.0;
    const int pit_cells = (x1 - x0 + 1) * (y1 - y0 + 1);
    map m = map_new(w, h, dx);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int pit = x >= x0 && x <= x1 && y >= y0 && y <= y1;
            m.z[y * w + x] = (float)(pit ? floor_z + hypot(x - (x0 + x1) / 2.0, y - py)
                                         : 20.0 + 10.0 * x + 0.01 * ((x * 7 + y * 13) % 11));
        }
    m.z[py * w + x0 - 1] = (float)notch; /* the outlet: 5 m below the rim beside it, 5 m
                                            above the slope below it */
    map_keep(&m);
    er_params p = sp_fill_params(1, 50.0);
    p.stream_power.fan_slope = slope;
    map_run_ok(&m, &p);
    /* d from the basin's cell at the pass: the notch, which drains into
     * the pit (steeper than down the slope west of it) and spills west */
    double zf_lo = INFINITY, zf_hi = -INFINITY, bare = INFINITY;
    int filled = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            const int i = y * w + x;
            const double zd = m.z[i] - slope * hypot(x - (x0 - 1), y - py) * dx;
            if (m.sed[i] > 0.0f) {
                filled++;
                zf_lo = fmin(zf_lo, zd);
                zf_hi = fmax(zf_hi, zd);
            } else {
                bare = fmin(bare, zd);
            }
        }
    fprintf(stderr, "fan slope %.2f: %d of %d pit cells filled, z_f %.6f .. %.6f, bare from %.4f\n",
            slope, filled, pit_cells, zf_lo, zf_hi, bare);
    ck_assert_int_ge(filled, 20);
    ck_assert_int_lt(filled, pit_cells);
    ck_assert_msg(zf_hi - zf_lo < 1e-3, "filled cells off one fan surface by %g m", zf_hi - zf_lo);
    ck_assert_double_gt(zf_lo, floor_z);
    ck_assert_double_lt(zf_hi, notch);
    ck_assert_double_ge(bare, zf_lo - 1e-3);
    ck_assert_double_lt(m.b.rel_error, 1e-6);
    map_free(&m);
}
END_TEST

/* A closed basin breached (stream_power.depressions "breach"): a bowl
 * in a mountainside rising east, its one outlet a notch in the west rim,
 * one step of rivers without deposition.  Loop: 0, the bowl's floor 40 m
 * above the foot of the slope (20 m, the west edge, base level): the
 * path from the pit through the notch and down the slope stands on the
 * line z_pit - g d (g = 1e-4, stream_power.breach_grade's default, d the
 * distance from the pit) until the slope is lower, to the float32 of the
 * heights, and no lake is left (3: the same with g = 3e-3);
 * 1, the floor at 5 m, below the edge, held (base_level "input"): the
 * path stands on the floor rising from the edge cell, 20 m + g (d_edge
 * - d), and the pit's cells below it stay a lake; 2, the same floor with
 * open edges (base_level "follow"): the edge is cut too, on the line
 * from the pit, and no lake is left.  Each: the material cut is eroded
 * and left at base level (the budget closes to the float32 heights'
 * rounding), on the wear layer. */
START_TEST(breach_drains_basin)
{
    const int w = 40, h = 30, x0 = 10, x1 = 24, y0 = 8, y1 = 22, px = 17, py = 15;
    const double dx = 10.0, g = _i == 3 ? 3e-3 : 1e-4, notch = 105.0;
    const double floor_z = _i == 1 || _i == 2 ? 5.0 : 40.0;
    map m = map_new(w, h, dx);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int pit = x >= x0 && x <= x1 && y >= y0 && y <= y1;
            m.z[y * w + x] = (float)(pit ? floor_z + hypot(x - px, y - py)
                                         : 20.0 + 10.0 * x + 0.01 * ((x * 7 + y * 13) % 11));
        }
    m.z[py * w + x0 - 1] = (float)notch;
    m.z[py * w + x0 - 2] = 99.0f; /* the lowest cell beside the notch: the pass's far side */
    map_keep(&m);
    er_params p = sp_fill_params(1, 50.0);
    p.stream_power.g = 0.0;
    p.stream_power.depressions = ER_SP_DEPR_BREACH;
    if (_i == 3)
        p.stream_power.breach_grade = g;
    p.stream_power.base_level = _i == 2 ? ER_SP_LEVEL_FOLLOW : ER_SP_LEVEL_INPUT;
    map_run_ok(&m, &p);
    /* row py from the pit west: the line, or the floor from the edge */
    const double edge = m.z0[py * w];
    int lake = 0, on_path = 0;
    for (size_t i = 0; i < cells(&m); i++)
        lake += m.water[i] > 0.0f;
    for (int x = px - 1; x >= 0; x--) {
        const double d = (px - x) * dx, line = floor_z - g * d;
        const double want = _i == 1 ? edge + g * (px * dx - d) : line;
        const float z0 = m.z0[py * w + x], z = m.z[py * w + x];
        if (_i == 1 && x == 0)
            break; /* the held edge */
        if (z0 <= want) { /* below the floor: left as it was */
            ck_assert_float_eq(z, z0);
            continue;
        }
        if (z < want - 1e-4)
            break; /* the slope below the line (cut by the rivers) */
        ck_assert_msg(fabs(z - want) < 1e-4, "x %d: %.6f, want %.6f", x, z, want);
        ck_assert_float_eq_tol(m.wear[py * w + x], z0 - z, 1e-3);
        on_path++;
    }
    fprintf(stderr, "breach %d: %d path cells on the line, %d lake cells\n", _i, on_path, lake);
    ck_assert_int_ge(on_path, _i == 1 ? x0 - 2 : px - x0 + 1); /* the notch and beyond */
    if (_i == 1) {
        ck_assert_int_eq(lake, (x1 - x0 + 1) * (y1 - y0 + 1)); /* the bowl, all below 15 m */
        ck_assert_float_eq(m.z[py * w], m.z0[py * w]);
    } else {
        ck_assert_int_eq(lake, 0);
    }
    ck_assert_double_gt(m.b.eroded, 0.0);
    ck_assert_double_lt(m.b.rel_error, 1e-6); /* the float32 heights' rounding */
    map_free(&m);
}
END_TEST

/* The closed pits of m's heights: interior cells whose 8 neighbours all
 * stand higher, as scripts/terrain-metrics counts them. */
static int pits(const map *m)
{
    int n = 0;
    for (int y = 1; y < m->h - 1; y++)
        for (int x = 1; x < m->w - 1; x++) {
            const float z = m->z[y * m->w + x];
            int pit = 1;
            for (int k = 0; k < 9; k++)
                if (k != 4 && !(m->z[(y + k / 3 - 1) * m->w + x + k % 3 - 1] > z))
                    pit = 0;
            n += pit;
        }
    return n;
}

/* A run of from-noise-like stream power (channel width, deposition
 * G = 0.4, creep, open edges) on value noise, STEPS steps of DT years,
 * with the depressions given. */
static map drain_run(er_sp_depressions dep, int steps, double dt)
{
    map m = map_new(96, 96, 10.0);
    noise(&m, 5, 300.0);
    er_params p = sp_params();
    er_stream_power_params *sp = &p.stream_power;
    sp->steps = steps;
    sp->dt = dt;
    sp->uplift = 1e-4;
    sp->k = 4e-3;
    sp->m = 0.2;
    sp->kd = 0.014;
    sp->g = 0.4;
    sp->channel_width = 5.0;
    sp->base_level = ER_SP_LEVEL_FOLLOW;
    sp->depressions = dep;
    sp->breach_grade = 3e-3;
    map_run_ok(&m, &p);
    return m;
}

/* stream_power.depressions "drain": each step's basins cut right after
 * the routing, so that no lake stands through the incision, and once
 * more after the last step.  With "breach" (cut at the step's end) the
 * last step's incision, deposition and creep leave pits along the rivers
 * and a basin found by a step's routing stays a lake, uncut by the
 * rivers, for that step, so the eroded volume moves with dt; with "drain"
 * no pit is left, the budget closes and halving dt moves the eroded
 * volume by at most 2 % (the dt goal of 58-stream-power.sh). */
START_TEST(drain_leaves_no_pit)
{
    map br = drain_run(ER_SP_DEPR_BREACH, 100, 1000.0), br2 = drain_run(ER_SP_DEPR_BREACH, 200, 500.0);
    map dr = drain_run(ER_SP_DEPR_DRAIN, 100, 1000.0), dr2 = drain_run(ER_SP_DEPR_DRAIN, 200, 500.0);
    const double dt_br = br2.b.eroded / br.b.eroded - 1.0, dt_dr = dr2.b.eroded / dr.b.eroded - 1.0;
    fprintf(stderr, "drain: pits %d with breach, %d with drain; half dt: eroded %+.2f %% and %+.2f %%\n",
            pits(&br), pits(&dr), 100.0 * dt_br, 100.0 * dt_dr);
    ck_assert_int_gt(pits(&br), 0);
    ck_assert_int_eq(pits(&dr), 0);
    ck_assert_int_eq(pits(&dr2), 0);
    ck_assert_double_le(fabs(dt_dr), 0.02);
    ck_assert_double_gt(fabs(dt_br), 0.02);
    ck_assert_double_lt(dr.b.rel_error, 1e-6);
    ck_assert_double_lt(dr2.b.rel_error, 1e-6);
    map_free(&br);
    map_free(&br2);
    map_free(&dr);
    map_free(&dr2);
}
END_TEST

Suite *sp_land_suite(void);
Suite *sp_land_suite(void)
{
    Suite *s = suite_create("sp_land");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, creep_steady_slope);
    tcase_add_test(tc, critical_slope_relaxes);
    tcase_add_test(tc, follow_edges_open);
    tcase_add_test(tc, routing_off_grid);
    tcase_add_test(tc, lithology_field);
    tcase_add_test(tc, channel_head_profile);
    tcase_add_test(tc, channel_width_profile);
    tcase_add_loop_test(tc, fan_slopes_from_outlet, 0, 2);
    tcase_add_loop_test(tc, breach_drains_basin, 0, 4);
    tcase_add_test(tc, drain_leaves_no_pit);
    suite_add_tcase(s, tc);
    return s;
}
