/*
 * The test-only diffusion model (tests/models/diffusion/): a fifth model
 * that is its directory and one line of a model list, run through the
 * plan, the backend and the run driver like the shipped four: its
 * analytic solution, its material balance, mirror symmetry, the same
 * bytes for any thread count, and a run stopped at a boundary and resumed
 * there giving the straight run's bytes.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/models.h"
#include "test_util.h"

#define W 64
#define H 6
#define PI 3.14159265358979323846

/* The recipe: diffusion over `steps` steps of 1 s, D = kd m^2/s. */
static er_params recipe(int64_t steps, double kd)
{
    er_params p;
    er_params_default(&p);
    p.model = ER_MODEL_DIFFUSION;
    p.diffusion.steps = steps;
    p.diffusion.dt = 1.0;
    p.diffusion.kd = kd;
    return p;
}

/* z = a cos(pi (x + 1/2) / W): the slowest mode of the discrete
 * Laplacian with no flux across the edges, constant along y. */
static void cosine(float *z, double a)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            z[y * W + x] = (float)(a * cos(PI * (x + 0.5) / W));
}

static er_status run(const er_params *p, float *z, const er_run_hooks *hk, er_budget *b,
                     er_error *err)
{
    er_terrain t = {W, H, z, NULL, 1.0, 1.0, NULL};
    er_run_opts o = {NULL, NULL, hk, b};
    return er_run_cpu(p, &t, NULL, &o, err);
}

/* Each sub-step multiplies that mode by 1 - 4 r sin^2(pi / 2W), r = D
 * dt_sub / dx^2 (the explicit scheme's eigenvalue), which tends to the
 * continuous decay exp(-D (pi / W)^2 t) as dt_sub -> 0. */
START_TEST(analytic_decay)
{
    float z[W * H];
    cosine(z, 10.0);
    er_params p = recipe(200, 0.4);
    er_plan plan;
    er_error err = {{0}};
    er_terrain t = {W, H, z, NULL, 1.0, 1.0, NULL};
    ck_assert_int_eq(er_plan_make(&p, &t, NULL, &plan, &err), ER_OK);
    ck_assert_int_eq(plan.own.diffusion.substeps, 2); /* 2 D dt (1 + 1) = 1.6 */
    er_budget b;
    ck_assert_msg(run(&p, z, NULL, &b, &err) == ER_OK, "%s", err.msg);
    const double r = 0.4 * plan.own.diffusion.dt_sub, s = sin(PI / (2.0 * W));
    const double discrete = pow(1.0 - 4.0 * r * s * s, 400.0);
    const double continuous = exp(-0.4 * (PI / W) * (PI / W) * 200.0);
    double worst = 0.0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const double want = 10.0 * discrete * cos(PI * (x + 0.5) / W);
            worst = fmax(worst, fabs(z[y * W + x] - want));
        }
    /* Each sub-step rounds every height to float, by at most half an ulp
     * of 10 m, and the scheme (a convex combination of neighbours for
     * r <= 1/4) never enlarges an error: 400 sub-steps stay within 400
     * half-ulps. */
    const double bound = 400 * 0.5 * (double)(nextafterf(10.0f, 20.0f) - 10.0f);
    ck_assert_msg(worst <= bound, "off the discrete solution by %g m (bound %g)", worst, bound);
    ck_assert_msg(fabs(discrete - continuous) < 1e-3 * continuous, "discrete %g continuous %g",
                  discrete, continuous);
    ck_assert_msg(fabs(b.material_after - b.material_before) <= 1e-3,
                  "material %.9g -> %.9g", b.material_before, b.material_after);
    ck_assert(b.eroded > 0 && fabs(b.eroded - b.deposited) < 1e-3 * b.eroded);
    ck_assert_int_eq(b.work_done, 200);
    ck_assert_int_eq(b.substeps, 400);
}
END_TEST

/* A map and its mirror image give mirror images, bit for bit, and the
 * same bytes on one thread and on several. */
START_TEST(mirror_and_threads)
{
    float a[W * H], m[W * H], c[W * H];
    for (int i = 0; i < W * H; i++)
        a[i] = (float)(50.0 + 20.0 * sin(0.37 * i) + 0.01 * i);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            m[y * W + x] = a[y * W + (W - 1 - x)];
    memcpy(c, a, sizeof a);
    er_params p = recipe(30, 0.2);
    er_error err = {{0}};
    er_budget b;
    const int threads = er_test_threads();
    er_test_set_threads(1);
    ck_assert_int_eq(run(&p, a, NULL, &b, &err), ER_OK);
    er_test_set_threads(3);
    ck_assert_int_eq(run(&p, c, NULL, &b, &err), ER_OK);
    ck_assert_int_eq(run(&p, m, NULL, &b, &err), ER_OK);
    er_test_set_threads(threads);
    ck_assert(memcmp(a, c, sizeof a) == 0);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            ck_assert(a[y * W + x] == m[y * W + (W - 1 - x)]);
}
END_TEST

/* The boundary hook's copy of the state at step `at`, then a stop. */
typedef struct keep {
    int64_t at;
    er_run_state st;
    float z[W * H];
    int calls;
} keep;

static int keep_and_stop(void *user, const er_run_state *s)
{
    keep *k = user;
    k->calls++;
    if (s->boundary != k->at)
        return 0;
    k->st = *s;
    memcpy(k->z, s->array[0], sizeof k->z);
    k->st.array[0] = k->z;
    return 1;
}

/* The driver hands every boundary to the hooks, stops where they ask
 * with the one cancel line, and a run resumed from that state ends on the
 * straight run's bytes and budget. */
START_TEST(stop_and_resume)
{
    float straight[W * H], stopped[W * H];
    cosine(straight, 5.0);
    memcpy(stopped, straight, sizeof straight);
    er_params p = recipe(40, 0.3);
    er_error err = {{0}};
    er_budget b0, b1;
    ck_assert_int_eq(run(&p, straight, NULL, &b0, &err), ER_OK);
    keep k = {.at = 17};
    er_run_hooks hk = {keep_and_stop, &k, NULL, NULL};
    ck_assert_int_eq(run(&p, stopped, &hk, &b1, &err), ER_ECANCELED);
    ck_assert_str_eq(err.msg, "diffusion: cancelled at step 17");
    ck_assert_int_eq(k.calls, 18); /* boundaries 0 .. 17 */
    float resumed[W * H];
    cosine(resumed, 5.0);
    er_run_hooks again = {NULL, NULL, &k.st, NULL};
    ck_assert_msg(run(&p, resumed, &again, &b1, &err) == ER_OK, "%s", err.msg);
    ck_assert(memcmp(resumed, straight, sizeof straight) == 0);
    ck_assert(memcmp(&b0, &b1, sizeof b0) == 0);
}
END_TEST

/* A test model is in the test build's registry, flagged so, and never
 * among the shipped models' names of the key table's documentation. */
START_TEST(registry_row)
{
    const er_model_ops *m = er_model(ER_MODEL_DIFFUSION);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->name, "diffusion");
    ck_assert(m->flags & ER_MODEL_TEST_ONLY);
    for (int k = 0; k < ER_MODEL_DIFFUSION; k++)
        ck_assert(!(er_model((er_model_kind)k)->flags & ER_MODEL_TEST_ONLY));
}
END_TEST

Suite *diffusion_suite(void);
Suite *diffusion_suite(void)
{
    Suite *s = suite_create("diffusion");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, analytic_decay);
    tcase_add_test(tc, mirror_and_threads);
    tcase_add_test(tc, stop_and_resume);
    tcase_add_test(tc, registry_row);
    suite_add_tcase(s, tc);
    return s;
}
