/*
 * River sources (core/sources.h): the cells a source covers, fractions of
 * the map, the peaks rule against a brute-force search, and the checks
 * against the map; and that Mei and SPH plans place them alike.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/plan.h"
#include "../../core/rng.h"
#include "../../core/sources.h"

#include "test_util.h"

/* A list of one source at (x, y) in `coords`. */
static er_source_list one_at(double x, double y, er_source_coords coords)
{
    er_source_list l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.src[0] = (er_source){.x = x, .y = y, .coords = coords, .radius = 1, .rate = 0.01,
                           .count = 1, .spacing = 10};
    return l;
}

static er_source peaks_rule(int64_t count, double spacing)
{
    return (er_source){.radius = 1, .rate = 0.01, .at = ER_AT_PEAKS, .count = count,
                       .spacing = spacing};
}

/* The disc: centres within the radius; the nearest cell when the radius
 * reaches no centre; clipped to the map; walls left out. */
START_TEST(disc_cells)
{
    uint8_t wall[100] = {0};
    er_source_grid g = {10, 10, 0, 0, 10, 10, wall, NULL};
    ck_assert_int_eq(er_disc_cells(&g, 5, 5, 1, NULL, NULL), 5);
    ck_assert_int_eq(er_disc_cells(&g, 5, 5, 1.5, NULL, NULL), 9);
    ck_assert_int_eq(er_disc_cells(&g, 5.3, 5.4, 0.2, NULL, NULL), 1); /* the nearest */
    ck_assert_int_eq(er_disc_cells(&g, 0, 0, 1, NULL, NULL), 3);       /* clipped */
    ck_assert_int_eq(er_disc_cells(&g, -3, 5, 1, NULL, NULL), 0);      /* off the map */
    wall[5 * 10 + 5] = 1;
    ck_assert_int_eq(er_disc_cells(&g, 5, 5, 1, NULL, NULL), 4);
    /* a window: a source in world pixels */
    er_source_grid win = {10, 10, 20, 30, 100, 100, NULL, NULL};
    er_source s = {.x = 25, .y = 35, .radius = 1, .rate = 1};
    ck_assert_int_eq(er_source_cells(&win, &s, NULL, NULL), 5);
}
END_TEST

/* Fractions of the world: 0 and 1 its edges, half a cell beyond the outer
 * centres; refused outside [0, 1]. */
START_TEST(fractions)
{
    er_source_grid g = {40, 30, 0, 0, 40, 30, NULL, NULL};
    er_error err;
    char warn[ER_ERROR_MAX] = "";
    er_source_list l = one_at(0.5, 0.5, ER_COORDS_FRACTION);
    ck_assert_int_eq(er_sources_plan(&l, &g, warn, sizeof warn, &err), ER_OK);
    ck_assert_double_eq(l.src[0].x, 19.5);
    ck_assert_double_eq(l.src[0].y, 14.5);
    ck_assert_int_eq(l.src[0].coords, ER_COORDS_PIXEL);
    l = one_at(0, 1, ER_COORDS_FRACTION);
    ck_assert_int_eq(er_sources_plan(&l, &g, warn, sizeof warn, &err), ER_OK);
    ck_assert_double_eq(l.src[0].x, -0.5);
    ck_assert_double_eq(l.src[0].y, 29.5);
    l = one_at(1.25, 0.5, ER_COORDS_FRACTION);
    ck_assert_int_eq(er_sources_plan(&l, &g, warn, sizeof warn, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "river_sources[0]: (1.25, 0.5) is not a fraction of the map: "
                              "with \"coords\": \"fraction\" x and y lie in [0, 1]");
    /* a tile: fractions of the world, which the tile may not see */
    er_source_grid tile = {40, 30, 40, 0, 80, 30, NULL, NULL};
    l = one_at(0.75, 0.5, ER_COORDS_FRACTION);
    ck_assert_int_eq(er_sources_plan(&l, &tile, warn, sizeof warn, &err), ER_OK);
    ck_assert_double_eq(l.src[0].x, 59.5);
    l = one_at(0.1, 0.5, ER_COORDS_FRACTION); /* on the world, off this tile */
    ck_assert_int_eq(er_sources_plan(&l, &tile, warn, sizeof warn, &err), ER_OK);
    ck_assert_str_eq(warn, "");
    /* map coordinates are the CLI's to convert */
    l = one_at(3, 4, ER_COORDS_MAP);
    ck_assert_int_eq(er_sources_plan(&l, &g, warn, sizeof warn, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "map coordinates must be converted"));
}
END_TEST

/* The rule as written, without a distance transform: eligible cells,
 * then greedily the highest (ties by index) not within D of one taken. */
static int brute_peaks(const er_source_grid *g, int64_t count, double D, int *px, int *py)
{
    const int w = g->width, h = g->height;
    int k = 0;
    while (k < count) {
        long best = -1;
        for (long i = 0; i < (long)w * h; i++) {
            int x = (int)(i % w), y = (int)(i / w);
            if ((g->wall && g->wall[i]) || x < D || x > w - 1 - D || y < D || y > h - 1 - D)
                continue;
            int ok = 1;
            for (long j = 0; ok && g->wall && j < (long)w * h; j++) {
                double dx = (double)(j % w) - x, dy = (double)(j / w) - y;
                ok = !g->wall[j] || dx * dx + dy * dy >= D * D;
            }
            for (int q = 0; ok && q < k; q++) {
                double dx = px[q] - x, dy = py[q] - y;
                ok = dx * dx + dy * dy >= D * D && (dx != 0 || dy != 0);
            }
            if (ok && (best < 0 || g->elevation[i] > g->elevation[best]))
                best = i;
        }
        if (best < 0)
            break;
        px[k] = (int)(best % w);
        py[k] = (int)(best / w);
        k++;
    }
    return k;
}

/* Loop index: a seed.  Random heights (some equal), random walls, and a
 * spacing with a fraction: the same peaks as the brute force. */
START_TEST(peaks_as_brute_force)
{
    const int w = 37 + _i, h = 29 + 2 * _i;
    float *z = malloc((size_t)w * h * sizeof *z);
    uint8_t *wall = calloc((size_t)w * h, 1);
    for (int i = 0; i < w * h; i++) {
        uint64_t r = er_rng_u64((uint64_t)_i, 0, (uint64_t)i);
        z[i] = (float)(r % 50);
        wall[i] = (r >> 32) % 97 == 0;
    }
    const double spacings[] = {0, 1, 2.5, 4, 7.25};
    for (size_t s = 0; s < sizeof spacings / sizeof spacings[0]; s++) {
        er_source_grid g = {w, h, 0, 0, w, h, _i % 2 ? wall : NULL, z};
        er_source_list l;
        memset(&l, 0, sizeof l);
        l.n = 1;
        l.src[0] = peaks_rule(12, spacings[s]);
        int px[64], py[64];
        int want = brute_peaks(&g, 12, spacings[s], px, py);
        char warn[ER_ERROR_MAX] = "";
        er_error err;
        ck_assert_int_eq(er_sources_plan(&l, &g, warn, sizeof warn, &err), ER_OK);
        ck_assert_int_eq(l.n, want);
        for (int k = 0; k < want; k++) {
            ck_assert_msg(l.src[k].x == px[k] && l.src[k].y == py[k],
                          "spacing %g, peak %d: (%g, %g), brute force (%d, %d)", spacings[s], k,
                          l.src[k].x, l.src[k].y, px[k], py[k]);
            ck_assert_int_eq(l.src[k].at, ER_AT_XY);
            ck_assert_double_eq(l.src[k].rate, 0.01);
        }
        ck_assert_int_eq(warn[0] != '\0', want < 12);
    }
    free(z);
    free(wall);
}
END_TEST

/* Three hills of 9, 8 and 7 m: peaks at their tops, highest first; a
 * nodata cell near the highest rules it out; too few is a warning. */
START_TEST(peaks_on_hills)
{
    enum { W = 60, H = 40 };
    static float z[W * H];
    static uint8_t wall[W * H];
    const int hx[3] = {15, 45, 30}, hy[3] = {10, 30, 25};
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double top = 0;
            for (int k = 0; k < 3; k++) {
                double d2 = (x - hx[k]) * (x - hx[k]) + (y - hy[k]) * (y - hy[k]);
                top = fmax(top, (9 - k) - 0.1 * d2);
            }
            z[y * W + x] = (float)top;
        }
    er_source_grid g = {W, H, 0, 0, W, H, NULL, z};
    er_source_list l;
    memset(&l, 0, sizeof l);
    l.n = 2;
    l.src[0] = (er_source){.x = 2, .y = 3, .radius = 2, .rate = 0.5, .count = 1, .spacing = 10};
    l.src[1] = peaks_rule(3, 8);
    char warn[ER_ERROR_MAX] = "";
    er_error err;
    ck_assert_int_eq(er_sources_plan(&l, &g, warn, sizeof warn, &err), ER_OK);
    ck_assert_int_eq(l.n, 4);
    ck_assert_double_eq(l.src[0].x, 2); /* the list's order */
    for (int k = 0; k < 3; k++) {
        ck_assert_double_eq(l.src[1 + k].x, hx[k]);
        ck_assert_double_eq(l.src[1 + k].y, hy[k]);
    }
    ck_assert_str_eq(warn, "");

    /* nodata 5 cells from the highest top, spacing 8: that hill's top and
     * its flanks within 8 of the wall are out */
    wall[10 * W + 20] = 1;
    g.wall = wall;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.src[0] = peaks_rule(1, 8);
    ck_assert_int_eq(er_sources_plan(&l, &g, warn, sizeof warn, &err), ER_OK);
    ck_assert_int_eq(l.n, 1);
    double dx = l.src[0].x - 20, dy = l.src[0].y - 10;
    ck_assert(dx * dx + dy * dy >= 64);
    ck_assert(l.src[0].x == 12 || l.src[0].x == hx[1]); /* the hill's far flank or the next top */

    /* a spacing the map cannot hold: fewer, and one warning line */
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.src[0] = peaks_rule(5, 15);
    ck_assert_int_eq(er_sources_plan(&l, &g, warn, sizeof warn, &err), ER_OK);
    ck_assert_int_lt(l.n, 5);
    ck_assert_msg(strstr(warn, "river_sources[0]: found ") &&
                      strstr(warn, " of the 5 peaks asked for"), "%s", warn);
    ck_assert_ptr_null(strchr(warn, '\n'));

    /* too many once counted; a tile refuses peaks */
    memset(&l, 0, sizeof l);
    l.n = 2;
    l.src[0] = peaks_rule(64, 1);
    l.src[1] = peaks_rule(1, 1);
    ck_assert_int_eq(er_sources_plan(&l, &g, warn, sizeof warn, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "river_sources: 65 sources with the peaks counted, at most 64");
    er_source_grid tile = {W, H, 0, 0, 2 * W, H, NULL, z};
    l.n = 1;
    ck_assert_int_eq(er_sources_plan(&l, &tile, warn, sizeof warn, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "river_sources[0]: \"at\": \"peaks\" needs the whole map"));
}
END_TEST

/* The plans of Mei and SPH hold the same resolved sources, and a run
 * with the rule equals one with the sources it found written out. */
START_TEST(models_resolve_alike)
{
    enum { W = 48, H = 40 };
    static float z[W * H], z2[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            z[y * W + x] = (float)(20.0 - 0.02 * ((x - 30) * (x - 30) + (y - 12) * (y - 12)) +
                                   0.5 * sin(0.7 * x) * cos(0.5 * y));
    er_terrain t = {W, H, z, NULL, 10.0, 10.0, NULL};
    er_params p;
    er_params_default(&p);
    p.river.n = 2;
    p.river.src[0] = peaks_rule(2, 6);
    p.river.src[0].radius = 1.5;
    p.river.src[1] = (er_source){.x = 0.25, .y = 0.75, .coords = ER_COORDS_FRACTION,
                                 .radius = 2, .rate = 0.02, .count = 1, .spacing = 10};
    er_plan a, b;
    er_error err;
    p.model = ER_MODEL_MEI;
    p.mei.steps = 20;
    ck_assert_msg(er_plan_make(&p, &t, NULL, &a, &err) == ER_OK, "%s", err.msg);
    p.model = ER_MODEL_SPH;
    p.sph.sound_speed = 40;
    ck_assert_msg(er_plan_make(&p, &t, NULL, &b, &err) == ER_OK, "%s", err.msg);
    ck_assert_int_eq(a.p.river.n, 3);
    ck_assert(memcmp(&a.p.river, &b.p.river, sizeof a.p.river) == 0);
    ck_assert_double_eq(a.p.river.src[2].x, 11.5);
    ck_assert_double_eq(a.p.river.src[2].y, 29.5);

    er_params q = p;
    q.model = ER_MODEL_MEI;
    q.river = a.p.river;
    p.model = ER_MODEL_MEI;
    memcpy(z2, z, sizeof z);
    er_terrain t2 = {W, H, z2, NULL, 10.0, 10.0, NULL};
    ck_assert_int_eq(er_run_cpu(&p, &t, NULL, &(er_run_opts){0}, &err), ER_OK);
    ck_assert_int_eq(er_run_cpu(&q, &t2, NULL, &(er_run_opts){0}, &err), ER_OK);
    ck_assert(memcmp(z, z2, sizeof z) == 0);
}
END_TEST

Suite *sources_suite(void);
Suite *sources_suite(void)
{
    Suite *s = suite_create("sources");
    TCase *tc = tcase_create("sources");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, disc_cells);
    tcase_add_test(tc, fractions);
    tcase_add_loop_test(tc, peaks_as_brute_force, 0, 6);
    tcase_add_test(tc, peaks_on_hills);
    tcase_add_test(tc, models_resolve_alike);
    suite_add_tcase(s, tc);
    return s;
}
