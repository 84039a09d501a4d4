/*
 * Control maps (core/controls.h) on the Mei model: the plan's range
 * check, hardness 1 never lowers the bed, mask 0 keeps it bit for bit
 * with the budget exact, a rain map of 0 keeps the rain off, a sources
 * raster equals the mei.sources disc it paints, and neutral maps change no
 * bit (the general row path equals the vectorised one).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/model.h"
#include "../../core/plan.h"
#include "../../core/rng.h"
#include "test_util.h"

enum { W = 48, H = 40 };
#define N ((size_t)W * (size_t)H)

typedef struct run {
    float z[N], z0[N], water[N], sed[N], flow[N], wear[N];
    er_budget b;
} run;

/* Smooth random hills (two octaves of bilinear lattice noise) plus a tilt
 * along x, so water runs and erodes within a few hundred steps. */
static void hills(float *z)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double v = 100.0 + 3.0 * x, a = 80.0;
            for (int o = 0, cell = 16; o < 2; o++, cell /= 2, a *= 0.5) {
                int gx = x / cell, gy = y / cell;
                double fx = (double)(x % cell) / cell, fy = (double)(y % cell) / cell;
                uint64_t s = 70 + (uint64_t)o, k0 = (uint64_t)gy * 100u + (uint64_t)gx;
                double v00 = er_rng_unit(9, s, k0), v10 = er_rng_unit(9, s, k0 + 1);
                double v01 = er_rng_unit(9, s, k0 + 100), v11 = er_rng_unit(9, s, k0 + 101);
                v += a * ((v00 * (1 - fx) + v10 * fx) * (1 - fy) +
                          (v01 * (1 - fx) + v11 * fx) * fy);
            }
            z[(size_t)y * W + (size_t)x] = (float)v;
        }
}

/* Rain (stopping after 200 steps, so that cells dry up), raindrops, a
 * river source, fast dissolving, evaporation, thermal slumping, closed
 * edges. */
static void busy(er_params *p)
{
    er_params_default(p);
    p->mei.steps = 300;
    p->mei.dt = 0.05;
    p->mei.boundary = ER_BOUNDARY_CLOSED;
    p->mei.rain_rate = 0.002;
    p->mei.rain_steps = 200;
    p->mei.ks = 0.5;
    p->mei.ke = 2.0;
    p->mei.drops_per_step = 2;
    p->mei.drop_radius = 2.5;
    p->mei.drop_amount = 0.003;
    p->mei.thermal_rate = 1.0;
    p->mei.talus_slope = 0.3;
    p->river.n = 1;
    p->river.src[0] = (er_source){.x = 30.0, .y = 20.0, .coords = 0, .radius = 2.0, .rate = 0.05};
}

static er_status go(const er_params *p, const er_controls *c, run *r, er_error *e)
{
    memcpy(r->z0, r->z, sizeof r->z);
    er_terrain t = { W, H, r->z, NULL, 10.0, 10.0, c };
    er_layers l = { r->water, r->sed, r->flow, r->wear };
    e->msg[0] = '\0';
    return er_run_cpu(p, &t, NULL, &(er_run_opts){ &l, NULL, NULL, &r->b }, e);
}

static run *run_new(void)
{
    run *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    hills(r->z);
    return r;
}

static float *map_of(float v)
{
    float *m = malloc(N * sizeof(float));
    ck_assert_ptr_nonnull(m);
    for (size_t i = 0; i < N; i++)
        m[i] = v;
    return m;
}

static int same(const run *a, const run *b)
{
    return memcmp(a->z, b->z, sizeof a->z) == 0 &&
           memcmp(a->water, b->water, sizeof a->water) == 0 &&
           memcmp(a->sed, b->sed, sizeof a->sed) == 0 &&
           memcmp(a->flow, b->flow, sizeof a->flow) == 0 &&
           memcmp(a->wear, b->wear, sizeof a->wear) == 0;
}

/* Each map's range, nodata on a terrain cell, and the message naming the
 * map and the input's cell (a window's offset added); walls are not read. */
START_TEST(range_refused)
{
    er_params p;
    busy(&p);
    float z[N];
    hills(z);
    float *m = map_of(0.5f);
    uint8_t wall[N] = { 0 };
    er_controls c = { 0 };
    er_terrain t = { W, H, z, wall, 10.0, 10.0, &c };
    er_plan plan;
    er_error e;
    const size_t bad = 7 * W + 3;
    struct { float v; int which; const char *msg; } cases[] = {
        { 1.5f, 0, "hardness: 1.5 at column 3, row 7 is outside [0, 1]" },
        { -0.25f, 1, "rain: -0.25 at column 3, row 7 is outside [0, 100]" },
        { NAN, 2, "mask: no value (nodata) at column 3, row 7 where the input has terrain" },
        { 101.0f, 3, "sources: 101 at column 3, row 7 is outside [0, 100]" },
        { INFINITY, 2, "mask: inf at column 3, row 7 is outside [0, 1]" },
        { 200.0f, 4, "uplift: 200 at column 3, row 7 is outside [0, 100]" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        c = (er_controls){ 0 };
        const float **slot[5] = { &c.hardness, &c.rain, &c.mask, &c.source, &c.uplift };
        *slot[cases[k].which] = m;
        m[bad] = cases[k].v;
        er_params q = p; /* the uplift map needs a model with uplift */
        if (cases[k].which == 4)
            q.model = ER_MODEL_STREAM_POWER;
        ck_assert_int_eq(er_plan_make(&q, &t, NULL, &plan, &e), ER_EINVAL);
        ck_assert_str_eq(e.msg, cases[k].msg);
        wall[bad] = 1; /* a wall may hold anything */
        ck_assert_int_eq(er_plan_make(&q, &t, NULL, &plan, &e), ER_OK);
        wall[bad] = 0;
        m[bad] = 0.5f;
    }
    /* a window: the message names the input's cell */
    c = (er_controls){ .hardness = m };
    m[bad] = 2.0f;
    er_window win = { 10, 20, 200, 100 };
    ck_assert_int_eq(er_plan_make(&p, &t, &win, &plan, &e), ER_EINVAL);
    ck_assert_str_eq(e.msg, "hardness: 2 at column 13, row 27 is outside [0, 1]");
    free(m);
}
END_TEST

/* Neutral maps (hardness 0, rain 1, mask 1, sources 0) give the bits of
 * the run without maps: the general row path the maps take computes what
 * the vectorised spans do, and the rain folded into the depth before the
 * sweep is the same sum. */
START_TEST(neutral_maps_identical)
{
    er_params p;
    busy(&p);
    run *a = run_new(), *b = run_new();
    float *zero = map_of(0.0f), *one = map_of(1.0f);
    er_controls c = { zero, one, one, zero, NULL };
    er_error e;
    ck_assert_int_eq(go(&p, NULL, a, &e), ER_OK);
    ck_assert_int_eq(go(&p, &c, b, &e), ER_OK);
    ck_assert(memcmp(a->z, a->z0, sizeof a->z) != 0);
    ck_assert(same(a, b));
    ck_assert_double_eq(a->b.eroded, b->b.eroded);
    ck_assert_double_eq(a->b.deposited, b->b.deposited);
    free(a);
    free(b);
    free(zero);
    free(one);
}
END_TEST

/* Hardness 1 on the upper (right) half: no cell there ends lower than it
 * started (deposits and slumping in may raise it), while the soft half is
 * eroded and lowered in places. */
START_TEST(hardness_one_never_lowered)
{
    er_params p;
    busy(&p);
    run *r = run_new();
    float *h = map_of(0.0f);
    for (size_t i = 0; i < N; i++)
        h[i] = i % W >= W / 2 ? 1.0f : 0.0f;
    er_controls c = { .hardness = h };
    er_error e;
    ck_assert_int_eq(go(&p, &c, r, &e), ER_OK);
    int lowered = 0;
    for (size_t i = 0; i < N; i++) {
        if (i % W >= W / 2) {
            ck_assert_float_ge(r->z[i], r->z0[i]);
            ck_assert_float_eq(r->wear[i], 0.0f); /* nothing dissolved there */
        } else {
            lowered += r->z[i] < r->z0[i];
        }
    }
    ck_assert_int_gt(lowered, 10);
    ck_assert_double_gt(r->b.eroded, 0.0);
    free(r);
    free(h);
}
END_TEST

/* Mask 0 on a block of the low half, where water pools and dries: its cells keep their heights bit
 * for bit while water and sediment pass, and the budget stays exact
 * (closed edges: what the terrain lost is suspended, to the rounding of
 * the sums, as material_conserved_closed in check_mei.c allows). */
START_TEST(mask_zero_unchanged)
{
    er_params p;
    busy(&p);
    run *r = run_new();
    float *m = map_of(1.0f);
    for (int y = 4; y < 36; y++)
        for (int x = 2; x < 24; x++)
            m[(size_t)y * W + (size_t)x] = 0.0f;
    er_controls c = { .mask = m };
    er_error e;
    er_status st = go(&p, &c, r, &e);
    ck_assert_msg(st == ER_OK, "%s", e.msg);
    int changed = 0, wet = 0, dry_sed = 0;
    for (size_t i = 0; i < N; i++) {
        if (m[i] == 0.0f) {
            ck_assert(memcmp(&r->z[i], &r->z0[i], sizeof(float)) == 0);
            ck_assert_float_eq(r->wear[i], 0.0f);
            wet += r->water[i] > 0.0f;
            dry_sed += r->water[i] == 0.0f && r->sed[i] > 0.0f;
        } else {
            changed += r->z[i] != r->z0[i];
        }
    }
    ck_assert_int_gt(changed, 100);
    ck_assert_int_gt(wet, 0);
    ck_assert_int_gt(dry_sed, 0); /* settling there was held back */
    ck_assert_double_le(r->b.rel_error, 1e-6);
    ck_assert_double_eq(r->b.left_map, 0.0);
    free(r);
    free(m);
}
END_TEST

/* A rain map of 0 on the left half (no raindrops, no source): water moves
 * at most one cell per sub-step, so after n sub-steps the columns farther
 * than n from the wet half hold no water and keep their heights; the wet
 * half got rain, and without the map the left half gets it too. */
START_TEST(rain_zero_half_dry)
{
    er_params p;
    busy(&p);
    p.mei.drops_per_step = 0;
    p.river.n = 0;
    p.mei.steps = 12;
    p.mei.thermal_rate = 0.0;
    float *rain = map_of(1.0f);
    for (size_t i = 0; i < N; i++)
        rain[i] = i % W < W / 2 ? 0.0f : 1.0f;
    er_controls c = { .rain = rain };
    run *r = run_new(), *plain = run_new();
    er_error e;
    ck_assert_int_eq(go(&p, &c, r, &e), ER_OK);
    ck_assert_int_eq(go(&p, NULL, plain, &e), ER_OK);
    er_plan plan;
    er_terrain t = { W, H, r->z0, NULL, 10.0, 10.0, &c };
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &e), ER_OK);
    const int margin = (int)(p.mei.steps * plan.own.mei.substeps) + 1;
    ck_assert_int_lt(margin, W / 2 - 4);
    size_t draining = 0, plain_draining = 0;
    for (size_t i = 0; i < N; i++) {
        int x = (int)(i % W);
        if (x < W / 2 - margin) {
            ck_assert_float_eq(r->water[i], 0.0f);
            ck_assert_float_eq(r->flow[i], 0.0f); /* no water ever left it */
            ck_assert(memcmp(&r->z[i], &r->z0[i], sizeof(float)) == 0);
            ck_assert_float_gt(plain->water[i], 0.0f);
            plain_draining += plain->flow[i] > 0.0f;
        } else if (x >= W / 2) {
            ck_assert(r->water[i] > 0.0f || r->sed[i] > 0.0f || r->z[i] != r->z0[i]);
            draining += r->flow[i] > 0.0f; /* pits keep their rain */
        }
    }
    ck_assert_uint_gt(draining, N / 2 * 3 / 4);
    ck_assert_uint_gt(plain_draining, 0); /* without the map the dry side drains */
    free(r);
    free(plain);
    free(rain);
}
END_TEST

/* A sources raster holding the rate on exactly the cells a mei.sources
 * disc covers (centres within the radius) gives the run with the list,
 * bit for bit: the same (float)(rate dt) on the same cells, after the
 * list's own sources in the same sub-step.  The rate is a float (0.0625)
 * so that the raster holds the list's value exactly. */
START_TEST(source_raster_equals_list)
{
    er_params p;
    busy(&p);
    p.mei.drops_per_step = 0;
    const er_source s = {.x = 14.0, .y = 25.0, .coords = 0, .radius = 3.0, .rate = 0.0625};
    p.river.n = 2;
    p.river.src[1] = s;
    run *a = run_new(), *b = run_new();
    er_error e;
    ck_assert_int_eq(go(&p, NULL, a, &e), ER_OK);
    float *q = map_of(0.0f);
    int covered = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double dx = x - s.x, dy = y - s.y;
            if (dx * dx + dy * dy <= s.radius * s.radius) {
                q[(size_t)y * W + (size_t)x] = (float)s.rate;
                covered++;
            }
        }
    ck_assert_int_eq(covered, 29);
    er_controls c = { .source = q };
    p.river.n = 1;
    ck_assert_int_eq(go(&p, &c, b, &e), ER_OK);
    ck_assert(same(a, b));
    ck_assert_double_eq_tol(a->b.water_added, b->b.water_added, 1e-12 * a->b.water_added);
    free(a);
    free(b);
    free(q);
}
END_TEST

/* All four maps: 1, 2 and 3 threads give the same bytes. */
START_TEST(maps_threads_identical)
{
    er_params p;
    busy(&p);
    float *h = map_of(0.0f), *rn = map_of(1.0f), *m = map_of(1.0f), *q = map_of(0.0f);
    for (size_t i = 0; i < N; i++) {
        h[i] = (float)(i % 7) / 8.0f;
        rn[i] = (float)(i % 5) / 2.0f;
        m[i] = (float)(i % 3) / 2.0f;
        q[i] = i % 97 == 0 ? 0.01f : 0.0f;
    }
    er_controls c = { h, rn, m, q, NULL };
    int saved = er_test_threads();
    run *ref = run_new(), *r = run_new();
    er_error e;
    er_test_set_threads(1);
    ck_assert_int_eq(go(&p, &c, ref, &e), ER_OK);
    for (int n = 2; n <= 3; n++) {
        hills(r->z);
        er_test_set_threads(n);
        ck_assert_int_eq(go(&p, &c, r, &e), ER_OK);
        ck_assert(same(ref, r));
    }
    er_test_set_threads(saved);
    free(ref);
    free(r);
    free(h);
    free(rn);
    free(m);
    free(q);
}
END_TEST

Suite *controls_suite(void);
Suite *controls_suite(void)
{
    Suite *s = suite_create("controls");
    TCase *tc = tcase_create("mei");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, range_refused);
    tcase_add_test(tc, neutral_maps_identical);
    tcase_add_test(tc, hardness_one_never_lowered);
    tcase_add_test(tc, mask_zero_unchanged);
    tcase_add_test(tc, rain_zero_half_dry);
    tcase_add_test(tc, source_raster_equals_list);
    tcase_add_test(tc, maps_threads_identical);
    suite_add_tcase(s, tc);
    return s;
}
