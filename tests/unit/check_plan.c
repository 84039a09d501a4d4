/*
 * The run plan (core/plan.h): the checks it makes before any work, the
 * figures it fixes for a run, and the resume states it accepts.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/backend.h"
#include "../../core/model.h"
#include "../../core/plan.h"
#include "../../core/mei/state.h"
#include "../../core/droplet/state.h"

#include "test_util.h"

#define W 40
#define H 30

static float heights[W * H];

static er_terrain hill(void)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            heights[y * W + x] = (float)(50.0 - 0.01 * ((x - 20) * (x - 20) + (y - 15) * (y - 15)));
    er_terrain t = {W, H, heights, NULL, 10.0, 10.0, NULL};
    return t;
}

static er_params mei_recipe(void)
{
    er_params p;
    er_params_default(&p);
    p.model = ER_MODEL_MEI;
    p.mei.steps = 6;
    return p;
}

/* Loop test i: Mei (0) or droplets (1), 2 droplets a cell in batches of 300. */
static er_params loop_recipe(int i)
{
    er_params p = mei_recipe();
    p.model = i == 0 ? ER_MODEL_MEI : ER_MODEL_DROPLET;
    p.droplet.per_cell = 2.0;
    p.droplet.batch_size = 300;
    return p;
}

/* A source is checked against the world: off a window but on the world is
 * another tile's business, off the world is an error on every tile. */
START_TEST(test_sources_against_the_world)
{
    er_terrain t = hill();
    er_params p = mei_recipe();
    er_plan plan;
    er_error err = {{0}};
    p.river.n = 1;
    p.river.src[0] = (er_source){.x = 100, .y = 10, .radius = 2, .rate = 0.01};
    er_window win = {0, 0, 200, 30};
    ck_assert_int_eq(er_plan_make(&p, &t, &win, &plan, &err), ER_OK);
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "river_sources[0]") && strstr(err.msg, "outside the 40x30 map"),
                  "%s", err.msg);
    p.river.src[0].x = 260;
    ck_assert_int_eq(er_plan_make(&p, &t, &win, &plan, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "outside the 200x30 map"), "%s", err.msg);
}
END_TEST

/* river_sources for a model that has none: a valid plan that warns,
 * naming the model and those that use them; Mei's plan has no warning. */
START_TEST(test_sources_ignored_warn)
{
    er_terrain t = hill();
    er_params p = mei_recipe();
    er_plan plan;
    er_error err = {{0}};
    p.river.n = 1;
    p.river.src[0] = (er_source){.x = 10, .y = 10, .radius = 2, .rate = 0.01};
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_OK);
    ck_assert_str_eq(plan.warning, "");
    p.model = ER_MODEL_DROPLET;
    p.droplet.per_cell = 2.0;
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_OK);
    ck_assert_str_eq(plan.warning, "river_sources: the droplet model has no river sources: "
                                   "the list is ignored (mei, sph use them)");
    p.river.n = 0;
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_OK);
    ck_assert_str_eq(plan.warning, "");
}
END_TEST

START_TEST(test_cross_key_rules)
{
    er_terrain t = hill();
    er_params p = mei_recipe();
    er_plan plan;
    er_error err = {{0}};
    p.mei.ke = 60;
    p.mei.dt = 0.02;
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_EINVAL);
    ck_assert_msg(strncmp(err.msg, "mei.ke:", 7) == 0, "%s", err.msg);
    p = mei_recipe();
    heights[3] = NAN;
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "non-finite height at cell (3, 0)"), "%s", err.msg);
    t = hill();
    p.model = ER_MODEL_DROPLET;
    p.droplet.height_unit = 0; /* "relief" */
    er_window win = {0, 0, W, H};
    ck_assert_int_eq(er_plan_make(&p, &t, &win, &plan, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "droplet.height_unit"), "%s", err.msg);
}
END_TEST

/* The figures the plan fixes are the run's: the sub-steps, the droplets
 * and the boundaries the hooks see. */
static int64_t calls, last_boundary, last_boundaries;

static int count_boundary(void *user, const er_run_state *s)
{
    (void)user;
    calls++;
    last_boundary = s->boundary;
    last_boundaries = s->boundaries;
    return 0;
}

/* Boundaries 0, 3, 6, ... and the last. */
static int every_third(void *user, int64_t boundary, int64_t boundaries)
{
    (void)user;
    return boundary % 3 == 0 || boundary == boundaries;
}

START_TEST(test_plan_is_the_run)
{
    er_terrain t = hill();
    er_params p = loop_recipe(_i);
    er_plan plan;
    er_error err = {{0}};
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_OK);
    if (p.model == ER_MODEL_DROPLET) {
        ck_assert_int_eq(plan.own.droplet.droplets, 2 * W * H);
        ck_assert_int_eq(plan.boundaries, (2 * W * H + 299) / 300);
        ck_assert(plan.own.droplet.height_unit > 0);
    } else {
        ck_assert_int_eq(plan.boundaries, p.mei.steps);
        ck_assert_int_ge(plan.own.mei.substeps, 1);
    }
    er_budget b;
    er_run_hooks hk = {count_boundary, NULL, NULL, NULL};
    er_run_opts o = {NULL, NULL, &hk, &b};
    calls = 0;
    ck_assert_int_eq(er_backend_cpu.run(NULL, &plan, &t, &o, &err), ER_OK);
    ck_assert_int_eq(calls, plan.boundaries + 1);
    /* Only the boundaries the caller wants are handed over, the end state
     * among them. */
    er_terrain t2 = hill();
    hk.wants = every_third;
    calls = 0;
    ck_assert_int_eq(er_backend_cpu.run(NULL, &plan, &t2, &o, &err), ER_OK);
    ck_assert_int_eq(calls, plan.boundaries / 3 + 1 + (plan.boundaries % 3 != 0));
    ck_assert_int_eq(last_boundary, plan.boundaries);
    ck_assert_int_eq(last_boundary, plan.boundaries);
    ck_assert_int_eq(last_boundaries, plan.boundaries);
    if (p.model == ER_MODEL_MEI)
        ck_assert_int_eq(b.substeps, plan.own.mei.substeps * p.mei.steps);
    else
        ck_assert_int_eq(b.work_done, plan.own.droplet.droplets);
}
END_TEST

/* A state taken at a boundary of the same run fits; one whose counters,
 * size, model or arrays were changed does not. */
static er_run_state kept;
static float kept_arrays[ER_STATE_ARRAYS][W * H];

static int keep_third(void *user, const er_run_state *s)
{
    (void)user;
    if (s->boundary != 3)
        return 0;
    kept = *s;
    for (int i = 0; i < s->n_arrays; i++)
        if (s->array[i]) {
            memcpy(kept_arrays[i], s->array[i], sizeof kept_arrays[i]);
            kept.array[i] = kept_arrays[i];
        }
    return 0;
}

START_TEST(test_resume_fits)
{
    er_terrain t = hill();
    er_params p = loop_recipe(_i);
    er_plan plan;
    er_error err = {{0}};
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_OK);
    float water[W * H], sed[W * H];
    er_layers l = {water, sed, NULL, NULL};
    er_run_hooks hk = {keep_third, NULL, NULL, NULL};
    er_run_opts o = {&l, NULL, &hk, NULL};
    ck_assert_int_eq(er_backend_cpu.run(NULL, &plan, &t, &o, &err), ER_OK);
    t = hill(); /* the input again: a resume starts from it */
    const er_layers both = {water, sed, NULL, NULL}, deposit_only = {water, NULL, NULL, NULL};
    ck_assert_int_eq(er_plan_check_resume(&plan, &t, &kept, &both, &err), ER_OK);
    er_run_state r = kept;
    r.done += 1;
    ck_assert_int_eq(er_plan_check_resume(&plan, &t, &r, &both, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "does not fit"), "%s", err.msg);
    r = kept;
    r.boundaries += 1;
    ck_assert_int_eq(er_plan_check_resume(&plan, &t, &r, &both, &err), ER_EINVAL);
    r = kept;
    r.width = W - 1;
    ck_assert_int_eq(er_plan_check_resume(&plan, &t, &r, &both, &err), ER_EINVAL);
    r = kept;
    r.model = p.model == ER_MODEL_MEI ? ER_MODEL_DROPLET : ER_MODEL_MEI;
    ck_assert_int_eq(er_plan_check_resume(&plan, &t, &r, &both, &err), ER_EINVAL);
    r = kept;
    r.array[p.model == ER_MODEL_MEI ? ER_STATE_MEI_Q + 3 : ER_STATE_DROP_DEPOSIT] = NULL;
    ck_assert_int_eq(er_plan_check_resume(&plan, &t, &r, &both, &err), ER_EINVAL);
    if (p.model == ER_MODEL_DROPLET) /* a layer the run does not keep may be absent */
        ck_assert_int_eq(er_plan_check_resume(&plan, &t, &r, &deposit_only, &err), ER_OK);
    if (p.model == ER_MODEL_MEI) {
        /* the run kept no flow: a run that asks for it is refused, by name;
         * a state of the older 7-array layout fits a run without flow/wear */
        const er_layers flow = {NULL, NULL, water, NULL};
        ck_assert_int_eq(er_plan_check_resume(&plan, &t, &kept, &flow, &err), ER_EINVAL);
        ck_assert_msg(strstr(err.msg, "no flow layer"), "%s", err.msg);
        r = kept;
        r.n_arrays = ER_STATE_MEI_OLD;
        ck_assert_int_eq(er_plan_check_resume(&plan, &t, &r, &both, &err), ER_OK);
        ck_assert_int_eq(er_plan_check_resume(&plan, &t, &r, &flow, &err), ER_EINVAL);
    }
}
END_TEST

/* A plan made for one map is not run on another. */
START_TEST(test_plan_map_must_match)
{
    er_terrain t = hill();
    er_params p = mei_recipe();
    er_plan plan;
    er_error err = {{0}};
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_OK);
    t.width = W - 1;
    ck_assert_int_eq(er_backend_cpu.run(NULL, &plan, &t, NULL, &err), ER_EINVAL);
}
/* droplet.reference_cell_size multiplies per_cell by r^2 (r = cell /
 * reference): the droplets per_cell r^2 cells must stay a count the run
 * can hold, droplet.count's 1e12, and every converted key finite, or the
 * plan refuses it naming the key (before, 1e-3 m under 10 m cells made
 * 8.4e11 a cell: a count past INT64_MAX, converted with undefined
 * behaviour).  The hill's 1200 cells of 10 m with a reference of 1 mm
 * (r = 1e4): per_cell 8.3 makes 9.96e11 droplets and passes, 8.4 makes
 * 1.008e12 and is refused; a reference of 1e-310 m (r past 1e102, r^3
 * infinite) and one that makes the brush radius 1e12 cells are refused;
 * in a window of a 1e6 x 1e6 world per_cell 1 makes 1e12 and passes,
 * 1.01 is refused naming droplet.per_cell. */
START_TEST(test_droplet_count_bounded)
{
    er_terrain t = hill();
    er_params p = mei_recipe();
    p.model = ER_MODEL_DROPLET;
    er_plan plan;
    er_error err = {{0}};
    p.droplet.reference_cell_size = 1e-3;
    p.droplet.per_cell = 8.3;
    ck_assert_msg(er_plan_make(&p, &t, NULL, &plan, &err) == ER_OK, "%s", err.msg);
    ck_assert(plan.own.droplet.droplets > 990000000000 && plan.own.droplet.droplets <= 1000000000000);
    const double refs[] = {1e-3, 1e-310, 1e6};
    const double cell[] = {10.0, 10.0, 1e-6}; /* 1e-6: the least cell size */
    for (int k = 0; k < 3; k++) {
        p.droplet.per_cell = 8.4;
        p.droplet.reference_cell_size = refs[k];
        t.cell_x = t.cell_y = cell[k];
        err.msg[0] = '\0';
        ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_EINVAL);
        ck_assert_msg(strncmp(err.msg, "droplet.reference_cell_size: ", 29) == 0, "%s", err.msg);
    }
    t = hill();
    p.droplet.reference_cell_size = 0;
    p.droplet.height_unit = 1.0;
    er_window win = {0, 0, 1000000, 1000000};
    p.droplet.per_cell = 1.0;
    ck_assert_msg(er_plan_make(&p, &t, &win, &plan, &err) == ER_OK, "%s", err.msg);
    ck_assert(plan.own.droplet.droplets == 1000000000000);
    p.droplet.per_cell = 1.01;
    ck_assert_int_eq(er_plan_make(&p, &t, &win, &plan, &err), ER_EINVAL);
    ck_assert_msg(strncmp(err.msg, "droplet.per_cell: ", 18) == 0, "%s", err.msg);
}
END_TEST
/* The snapshot schedule's per-cell tap counts are 32-bit (the CPU's and
 * the shader's): a batch whose counts could pass INT32_MAX, batch *
 * (lifetime + 1), is refused naming droplet.batch_size (at the edge:
 * INT32_MAX / 31 passes with the default lifetime 30, one more does not;
 * lifetime 1e5 allows 21,474); the blocks schedule counts nothing and
 * takes any batch. */
START_TEST(test_snapshot_batch_counts_fit)
{
    er_terrain t = hill();
    er_params p = mei_recipe();
    p.model = ER_MODEL_DROPLET;
    p.droplet.schedule = ER_DROPLET_SNAPSHOT;
    er_plan plan;
    er_error err = {{0}};
    const struct {
        int64_t lifetime, batch;
        er_status want;
    } cases[] = {{30, INT32_MAX / 31, ER_OK}, {30, INT32_MAX / 31 + 1, ER_EINVAL},
                 {100000, 21474, ER_OK}, {100000, 21475, ER_EINVAL}, {30, 100000000, ER_EINVAL}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        p.droplet.lifetime = cases[k].lifetime;
        p.droplet.batch_size = cases[k].batch;
        err.msg[0] = '\0';
        ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), cases[k].want);
        if (cases[k].want)
            ck_assert_msg(strncmp(err.msg, "droplet.batch_size: ", 20) == 0, "%s", err.msg);
    }
    p.droplet.schedule = ER_DROPLET_BLOCKS;
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_OK);
}
END_TEST

/* A run that will change nothing though it asks for work is valid (the
 * plan succeeds) and says why in plan.warning: a mask of 0 or hardness 1
 * on every valid cell (Mei, droplets, SPH), a rain map of 0 (droplets), Mei
 * with no water and no weathering, SPH with no particle; none with one
 * cell that may change, with a wall holding the only 1, or when the
 * recipe asks for no work (0 steps). */
START_TEST(test_no_op_warned)
{
    er_terrain t = hill();
    static float zero[W * H], one[W * H], cell[W * H];
    static uint8_t wall[W * H];
    for (int i = 0; i < W * H; i++) {
        zero[i] = 0.0f;
        one[i] = 1.0f;
        cell[i] = i == 77 ? 1.0f : 0.0f;
    }
    er_controls mask0 = {NULL, NULL, zero, NULL, NULL}, hard1 = {one, NULL, NULL, NULL, NULL};
    er_controls rain0 = {NULL, zero, NULL, NULL, NULL}, mask1 = {NULL, NULL, cell, NULL, NULL};
    const struct {
        er_model_kind model;
        const er_controls *c;
        int walled;
        const char *want; /* NULL: no warning */
    } cases[] = {{ER_MODEL_MEI, &mask0, 0, "mask: no valid cell can be lowered (mask 0 everywhere)"},
                 {ER_MODEL_DROPLET, &mask0, 0, "mask: no valid cell"},
                 {ER_MODEL_SPH, &mask0, 0, "sph: the map starts dry"},
                 {ER_MODEL_DROPLET, &hard1, 0, "hardness: no valid cell can be lowered (hardness 1"},
                 {ER_MODEL_DROPLET, &rain0, 0, "rain: 0 on every valid cell: no droplet starts"},
                 {ER_MODEL_MEI, &rain0, 0, "mei: no water falls"},
                 {ER_MODEL_DROPLET, &mask1, 0, NULL},
                 {ER_MODEL_DROPLET, &mask1, 1, "mask: no valid cell"},
                 {ER_MODEL_MEI, NULL, 0, NULL}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        er_params p = mei_recipe();
        p.model = cases[k].model;
        t.controls = cases[k].c;
        memset(wall, 0, sizeof wall);
        wall[77] = (uint8_t)cases[k].walled;
        t.wall = cases[k].walled ? wall : NULL;
        er_plan plan;
        er_error err = {{0}};
        for (int steps = 1; steps >= 0; steps--) {
            p.mei.steps = p.sph.steps = steps;
            p.droplet.count = steps ? -1 : 0;
            ck_assert_msg(er_plan_make(&p, &t, NULL, &plan, &err) == ER_OK, "%zu: %s", k, err.msg);
            if (!steps || !cases[k].want)
                ck_assert_msg(plan.warning[0] == '\0', "%zu: '%s'", k, plan.warning);
            else
                ck_assert_msg(strncmp(plan.warning, cases[k].want, strlen(cases[k].want)) == 0,
                              "%zu: '%s' is not '%s'", k, plan.warning, cases[k].want);
        }
    }
}
END_TEST
END_TEST

Suite *plan_suite(void);
Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, test_sources_against_the_world);
    tcase_add_test(tc, test_sources_ignored_warn);
    tcase_add_test(tc, test_cross_key_rules);
    tcase_add_loop_test(tc, test_plan_is_the_run, 0, 2);
    tcase_add_loop_test(tc, test_resume_fits, 0, 2);
    tcase_add_test(tc, test_plan_map_must_match);
    tcase_add_test(tc, test_droplet_count_bounded);
    tcase_add_test(tc, test_no_op_warned);
    tcase_add_test(tc, test_snapshot_batch_counts_fit);
    suite_add_tcase(s, tc);
    return s;
}
