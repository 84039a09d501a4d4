/*
 * The Vulkan backend (core/backend.h): device listing, opening, refusals,
 * the pipeline cache, the Mei model against the CPU path, and the two
 * models with a Vulkan path, Mei and droplets, on maps of a few cells
 * (check_vulkan_droplet.c has the droplets on real maps).  Every
 * test skips, saying why, when the binary was built without Vulkan or no
 * Vulkan device exists (CI installs lavapipe, Mesa's CPU device, so they
 * run there).  Set ERODE_VK_VALIDATION=1 to run them under the Khronos
 * validation layer; each test then asserts that the layer reported
 * nothing.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/backend.h"
#include "../../core/model.h"
#include "../../core/mei/state.h"
#include "../../core/mei/vulkan.h"
#include "../../core/rng.h"
#include "../../io/image.h"
#include "test_util.h"

#ifdef ER_HAVE_VULKAN
#include "../../core/vulkan/vk.h"
#endif

static int validation_wanted(void)
{
    const char *v = getenv("ERODE_VK_VALIDATION");
    return v && *v && strcmp(v, "0") != 0;
}

/* Opens device 0, or returns NULL after recording why the test skips. */
static er_vk_ctx *open_or_null(const char **why)
{
    er_vk_options o = {0, validation_wanted()};
    er_vk_ctx *vk = NULL;
    er_error err = {{0}};
    int n = 0;
    *why = NULL;
    if (!er_vk_built()) {
        *why = "built without Vulkan (make VULKAN=0, or no libvulkan-dev/glslangValidator)";
        return NULL;
    }
    if (er_vk_list_devices(NULL, 0, &n, &err) != ER_OK || n == 0) {
        *why = "no Vulkan device (install mesa-vulkan-drivers for lavapipe)";
        return NULL;
    }
    er_status st = er_vk_open(&o, &vk, &err);
    ck_assert_msg(st == ER_OK, "er_vk_open: %s", err.msg);
    return vk;
}

/* Closes vk after asserting that the validation layer said nothing. */
static void close_checked(er_vk_ctx *vk)
{
    char first[ER_ERROR_MAX];
    uint64_t n = er_vk_messages(vk, first, sizeof first);
    er_vk_close(vk);
    ck_assert_msg(n == 0, "%llu validation messages, the first: %s", (unsigned long long)n, first);
}

START_TEST(test_not_built_says_so)
{
    er_error err = {{0}};
    er_vk_ctx *vk = (er_vk_ctx *)&err; /* must be reset to NULL on failure */
    int n = -1;
    if (er_vk_built())
        return;
    ck_assert_int_eq(er_vk_list_devices(NULL, 0, &n, &err), ER_EUNSUPPORTED);
    ck_assert_int_eq(n, 0);
    ck_assert_str_eq(err.msg, ER_VK_NOT_BUILT);
    er_vk_options o = {0, 0};
    ck_assert_int_eq(er_vk_open(&o, &vk, &err), ER_EUNSUPPORTED);
    ck_assert_ptr_null(vk);
}
END_TEST

START_TEST(test_list_and_open)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    er_vk_device_info dev[8];
    er_error err = {{0}};
    int n = 0;
    ck_assert_int_eq(er_vk_list_devices(dev, 8, &n, &err), ER_OK);
    ck_assert_int_ge(n, 1);
    const er_vk_device_info *d = er_vk_info(vk);
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(d->name, dev[0].name);
    ck_assert_int_eq(d->index, 0);
    ck_assert(d->has_compute);
    /* Vulkan guarantees at least 2^27 bytes of storage buffer range */
    ck_assert_uint_ge(d->max_storage_buffer_range, (uint64_t)1 << 27);
    ck_assert_uint_gt(d->device_local_bytes, 0);
    close_checked(vk);
}
END_TEST

START_TEST(test_bad_device_index)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    close_checked(vk);
    er_vk_options o = {99, 0};
    er_error err = {{0}};
    ck_assert_int_eq(er_vk_open(&o, &vk, &err), ER_EINVAL);
    ck_assert_ptr_null(vk);
    ck_assert_msg(strstr(err.msg, "no device 99"), "%s", err.msg);
}
END_TEST


/* The premise of er_div (core/mei/shaders/mei_common.glsl), mirrored in
 * C on the CPU: the float64 quotient of two floats rounded to float32 is
 * the correctly rounded float32 quotient, for random bit patterns (every
 * finite float, denormals included, so quotients that overflow, underflow
 * to denormals or zero, and everything between) and for quotients at
 * denormal ties (3 * 2^-149 / 2: round half to even).  The reciprocal
 * a * (1 / b), a shortcut GLSL allows, must miss on the same pairs: the
 * comparison can tell. */
static float finite_float(uint64_t bits)
{
    uint32_t u = (uint32_t)bits;
    float f;
    if ((u & 0x7f800000u) == 0x7f800000u)
        u &= 0xbfffffffu; /* inf/NaN exponent -> a finite one */
    memcpy(&f, &u, sizeof f);
    return f;
}

START_TEST(test_div_premise)
{
    /* Counted, then asserted once: a Check assertion per pair costs a
     * write to the test runner's pipe. */
    const uint64_t n = 1u << 22;
    uint64_t recip_misses = 0, denormal = 0, bad = 0;
    float bad_a = 0.0f, bad_b = 0.0f;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = er_rng_u64(14, 1, i);
        float a = finite_float(r), b = finite_float(r >> 32);
        if (i % 4 == 1)
            b = ldexpf(1.0f + (float)(r >> 41) * 0x1p-23f, (int)(r % 16)); /* small exponents */
        if (b == 0.0f)
            continue;
        float q = a / b, dq = (float)((double)a / (double)b);
        if (memcmp(&q, &dq, sizeof q) != 0 && bad++ == 0) {
            bad_a = a;
            bad_b = b;
        }
        recip_misses += a * (1.0f / b) != q;
        denormal += q != 0.0f && fabsf(q) < FLT_MIN;
    }
    ck_assert_msg(bad == 0, "%llu quotients differ from the float64 one rounded, the first "
                  "%a / %a", (unsigned long long)bad, (double)bad_a, (double)bad_b);
    for (int k = 1; k < 64; k += 2) { /* exact ties between denormals */
        float a = (float)k * 0x1p-149f * 3.0f, b = 2.0f;
        float q = a / b, dq = (float)((double)a / (double)b);
        ck_assert_msg(q == dq, "tie %d: %a vs %a", k, (double)q, (double)dq);
    }
    fprintf(stderr, "division premise: %llu pairs, %llu denormal quotients, the reciprocal "
            "missed %llu\n", (unsigned long long)n, (unsigned long long)denormal,
            (unsigned long long)recip_misses);
    ck_assert_uint_gt(denormal, 1000);
    ck_assert_uint_gt(recip_misses, 1000);
}
END_TEST

/*
 * Vulkan against the CPU path (erode-models(7), "Mei exactness").
 * The shaders do the CPU's operations in the CPU's order with no FMA
 * contraction, correctly rounded square roots (er_sqrt) and
 * divisions (er_div), so the outputs are the CPU's bytes wherever float32
 * denormals survive: where the device's class (er_vk_mei_exactness) is
 * exact, every layer is compared with memcmp.  Elsewhere height and water
 * must still be exact and sediment within ER_VK_MEI_FLUSH_SEDIMENT (the
 * spread an H100 that flushed denormals showed).
 */
/* Budget totals are per-row sums in another (fixed) order: rounding only. */
#define TOL_BUDGET_REL 1e-9
/* [m] A run "eroded" when some cell moved by more than this: far beyond
 * any rounding, and reached by every case below that must erode. */
#define ERODED_MIN 0.2

#define N 256

typedef struct mei_case {
    er_params p;
    er_terrain t;
    float *b, *water, *sed;
    float *flow, *wear; /* allocated by case_copy when keep is set, else NULL */
    int keep;
    uint8_t *wall;
    er_budget bud;
} mei_case;

static void case_free(mei_case *c)
{
    free(c->b);
    free(c->water);
    free(c->sed);
    free(c->flow);
    free(c->wear);
    free(c->wall);
}

/* A copy of the map (heights, walls) ready for one run. */
static void case_copy(mei_case *dst, const mei_case *src)
{
    size_t n = (size_t)src->t.width * (size_t)src->t.height;
    *dst = *src;
    dst->b = malloc(n * sizeof(float));
    dst->water = calloc(n, sizeof(float));
    dst->sed = calloc(n, sizeof(float));
    dst->wall = NULL;
    dst->flow = src->keep ? calloc(n, sizeof(float)) : NULL;
    dst->wear = src->keep ? calloc(n, sizeof(float)) : NULL;
    ck_assert(dst->b && dst->water && dst->sed && (!src->keep || (dst->flow && dst->wear)));
    memcpy(dst->b, src->b, n * sizeof(float));
    if (src->wall) {
        dst->wall = malloc(n);
        ck_assert_ptr_nonnull(dst->wall);
        memcpy(dst->wall, src->wall, n);
    }
    dst->t.elevation = dst->b;
    dst->t.wall = dst->wall;
}

/* A 256^2 crop of the Puget Sound DEM (tests/data, 16-bit PNG, 0..1 mapped
 * to 0..1000 m, 10 m cells), default recipe, 300 steps. */
static int dem_case(mei_case *c)
{
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    er_read_opts ro = {0};
    memset(c, 0, sizeof *c);
    memset(&img, 0, sizeof img);
    if (er_image_read(er_test_path(path, sizeof path, "tests/data/puget_sound_1k_u16.png"), &ro,
                      &img, &err) != ER_OK)
        return 0;
    ck_assert_int_ge(img.width, 300 + N);
    ck_assert_int_ge(img.height, 300 + N);
    c->b = malloc((size_t)N * N * sizeof(float));
    ck_assert_ptr_nonnull(c->b);
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++)
            c->b[(size_t)y * N + x] = img.data[(size_t)(y + 300) * (size_t)img.width + (size_t)(x + 300)] * 1000.0f;
    er_image_free(&img);
    c->t = (er_terrain){N, N, c->b, NULL, 10.0, 10.0, NULL};
    er_params_default(&c->p);
    c->p.mei.steps = 300;
    return 1;
}

/* A synthetic 256^2 map: a tilted bowl with a ridge and random bumps, a
 * block of nodata walls, two overlapping river sources, raindrops, thermal
 * weathering, open edges; 300 steps with sub-steps (dt above the pipe
 * bound at 1 m cells). */
static void synthetic_sized(mei_case *c, int side)
{
    size_t n = (size_t)side * (size_t)side;
    memset(c, 0, sizeof *c);
    c->b = malloc(n * sizeof(float));
    c->wall = calloc(n, 1);
    ck_assert(c->b && c->wall);
    const double f = side / 256.0;
    for (int y = 0; y < side; y++)
        for (int x = 0; x < side; x++) {
            double dx = x - 128.0 * f, dy = y - 100.0 * f;
            double bump = er_rng_unit(7, 99, (uint64_t)(y * side + x));
            double ridge = x > 150 * f && x < 160 * f ? 3.0 : 0.0;
            size_t i = (size_t)y * (size_t)side + (size_t)x;
            c->b[i] = (float)(0.002 * (dx * dx + dy * dy) + 0.05 * y + ridge + 0.2 * bump);
            if (x >= 60 * f && x < 80 * f && y >= 150 * f && y < 190 * f)
                c->wall[i] = 1;
        }
    c->t = (er_terrain){side, side, c->b, c->wall, 1.0, 1.0, NULL};
    er_params_default(&c->p);
    er_mei_params *m = &c->p.mei;
    c->p.seed = 42;
    m->steps = 300;
    m->dt = 0.5; /* sqrt(2 g * 2) * 0.5 = 3.1 > 1: four sub-steps */
    m->drops_per_step = 4;
    m->drop_radius = 2.5;
    m->drop_amount = 0.01;
    m->rain_steps = 150;
    m->thermal_rate = 0.5;
    m->talus_slope = 0.5;
    m->boundary = ER_BOUNDARY_OPEN;
    c->p.river.n = 2;
    c->p.river.src[0] = (er_source){.x = 40.0, .y = 30.0, .coords = 0, .radius = 4.0, .rate = 0.01};
    c->p.river.src[1] = (er_source){.x = 43.0 * f, .y = 32.5 * f, .coords = 0, .radius = 3.0, .rate = 0.02};
    c->p.river.src[0].x *= f;
    c->p.river.src[0].y *= f;
}

static void synthetic_case(mei_case *c)
{
    synthetic_sized(c, N);
}

static er_status run_cpu(mei_case *c)
{
    er_layers l = {c->water, c->sed, c->flow, c->wear};
    er_error err = {{0}};
    er_status st = er_run_cpu(&c->p, &c->t, NULL, &(er_run_opts){&l, NULL, NULL, &c->bud}, &err);
    ck_assert_msg(st == ER_OK, "cpu: %s", err.msg);
    return st;
}

static er_status run_vk(er_vk_ctx *vk, mei_case *c, er_error *err)
{
    er_layers l = {c->water, c->sed, c->flow, c->wear};
    return er_run_vk(vk, &c->p, &c->t, &(er_run_opts){&l, NULL, NULL, &c->bud}, err);
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m))
            m = d; /* NaN makes it NaN, which fails every <= */
    }
    return m;
}

/* Whether Mei on vk must give the CPU's bytes (erode-models(7), "Denormals"). */
static int mei_exact(const er_vk_ctx *vk)
{
#ifdef ER_HAVE_VULKAN
    return er_vk_mei_exactness(er_vk_info(vk)) != ER_VK_DENORMS_MAY_FLUSH;
#else
    (void)vk; /* no device opens: never asked */
    return 1;
#endif
}

/* The layers of a and b agree: bit for bit when exact; else height and
 * water bit for bit, sediment within ER_VK_MEI_FLUSH_SEDIMENT. */
static void assert_same_layers(const mei_case *a, const mei_case *b, int exact, const char *what)
{
    size_t n = (size_t)a->t.width * (size_t)a->t.height;
    ck_assert_msg(memcmp(a->b, b->b, n * sizeof(float)) == 0, "%s: height differs by %g m", what,
                  max_diff(a->b, b->b, n));
    ck_assert_msg(memcmp(a->water, b->water, n * sizeof(float)) == 0, "%s: water differs by %g m",
                  what, max_diff(a->water, b->water, n));
    ck_assert_msg(exact ? memcmp(a->sed, b->sed, n * sizeof(float)) == 0
                        : max_diff(a->sed, b->sed, n) <= ER_VK_MEI_FLUSH_SEDIMENT,
                  "%s: sediment differs by %g m", what, max_diff(a->sed, b->sed, n));
    /* flow sums the fluxes of the exact heights and water; wear the
     * dissolution, which may take a flushed denormal: at most that spread
     * a step (not yet measured on a GPU that flushes) */
    if (a->flow && b->flow)
        ck_assert_msg(memcmp(a->flow, b->flow, n * sizeof(float)) == 0, "%s: flow differs by %g m",
                      what, max_diff(a->flow, b->flow, n));
    if (a->wear && b->wear)
        ck_assert_msg(exact ? memcmp(a->wear, b->wear, n * sizeof(float)) == 0
                            : max_diff(a->wear, b->wear, n) <=
                                  ER_VK_MEI_FLUSH_SEDIMENT * (double)a->p.mei.steps,
                      "%s: wear differs by %g m", what, max_diff(a->wear, b->wear, n));
}

/* One budget total: equal when exact, else to rounding.  The device sums a
 * row in 64 interleaved partial sums, the CPU in 8, orders that round alike
 * in every case here once the layers are the CPU's bytes; and being a
 * fixed order, what lavapipe gives any exact device gives. */
static void assert_budget_term(double a, double b, int exact, const char *what)
{
    double den = fabs(a) > 1.0 ? fabs(a) : 1.0;
    ck_assert_msg(exact ? a == b : fabs(a - b) / den <= TOL_BUDGET_REL,
                  "budget %s: cpu %.17g vulkan %.17g", what, a, b);
}

/* A conservative Mei run's budget closes: to 1.4e-8 of the material moved
 * on the CPU (check_mei.c), the heights rounded to floats on the way. */
static void assert_closes(const er_budget *b)
{
    ck_assert_msg(b->rel_error < 1e-6, "budget off by %.3g of the material moved", b->rel_error);
}

/* The budgets of a CPU and a Vulkan run: the host's water exact, the
 * device's row sums as assert_budget_term says. */
static void assert_budgets(const er_budget *a, const er_budget *b, int exact)
{
    ck_assert_int_eq(a->work_done, b->work_done);
    ck_assert_int_eq(a->substeps, b->substeps);
    ck_assert_msg(a->water_added == b->water_added, "water_added %.17g vs %.17g",
                  a->water_added, b->water_added);
    ck_assert(a->material_before == b->material_before);
    assert_budget_term(a->material_after, b->material_after, exact, "material_after");
    assert_budget_term(a->eroded, b->eroded, exact, "eroded");
    assert_budget_term(a->deposited, b->deposited, exact, "deposited");
    assert_budget_term(a->left_map, b->left_map, exact, "left_map");
    assert_budget_term(a->water_left, b->water_left, exact, "water_left");
    ck_assert_msg(!exact || a->rel_error == b->rel_error, "rel_error %.17g vs %.17g",
                  a->rel_error, b->rel_error);
}

/* Runs the case on both paths on vk and compares per layer; with
 * must_erode, also that the run moved material far beyond the tolerance. */
static void compare_on(er_vk_ctx *vk, const mei_case *base, const char *name, int must_erode)
{
    mei_case cpu, gpu;
    er_error err = {{0}};
    size_t n = (size_t)base->t.width * (size_t)base->t.height;
    case_copy(&cpu, base);
    case_copy(&gpu, base);
    run_cpu(&cpu);
    er_status st = run_vk(vk, &gpu, &err);
    ck_assert_msg(st == ER_OK, "vulkan: %s", err.msg);
    double dh = max_diff(cpu.b, gpu.b, n), dw = max_diff(cpu.water, gpu.water, n);
    double ds = max_diff(cpu.sed, gpu.sed, n);
    fprintf(stderr, "vulkan %s: max |cpu - vulkan|: height %.3g m, water %.3g m, sediment %.3g m "
            "(eroded %.3g m, %lld sub-steps; budget eroded %+.3g deposited %+.3g)\n", name, dh,
            dw, ds, gpu.bud.eroded, (long long)gpu.bud.substeps, gpu.bud.eroded - cpu.bud.eroded,
            gpu.bud.deposited - cpu.bud.deposited);
    assert_same_layers(&cpu, &gpu, mei_exact(vk), name);
    /* the run did something far beyond rounding: erosion happened */
    ck_assert_msg(!must_erode || max_diff(base->b, gpu.b, n) > ERODED_MIN, "%s: nothing eroded",
                  name);
    ck_assert_msg(!must_erode || max_diff(base->b, cpu.b, n) > ERODED_MIN, "%s: nothing eroded",
                  name);
    for (size_t i = 0; base->wall && i < n; i++)
        if (base->wall[i])
            ck_assert(gpu.b[i] == base->b[i] && gpu.water[i] == 0.0f && gpu.sed[i] == 0.0f);
    assert_budgets(&cpu.bud, &gpu.bud, mei_exact(vk));
    if (base->p.mei.advection == ER_ADVECT_CONSERVATIVE)
        assert_closes(&gpu.bud);
    else /* eq. 14 is not conservative: the budget says by how much, alike */
        assert_budget_term(cpu.bud.rel_error, gpu.bud.rel_error, 0, "rel_error");
    case_free(&cpu);
    case_free(&gpu);
}

/* compare_on device 0, opened for this case. */
static void compare_paths(const mei_case *base, const char *name)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    compare_on(vk, base, name, 1);
    close_checked(vk);
}

START_TEST(test_mei_dem_matches_cpu)
{
    mei_case c;
    ER_SKIP_IF(!dem_case(&c), "cannot read tests/data/puget_sound_1k_u16.png");
    compare_paths(&c, "dem 256^2");
    case_free(&c);
}
END_TEST

START_TEST(test_mei_synthetic_matches_cpu)
{
    mei_case c;
    synthetic_case(&c);
    /* 200 steps, the rain stopping at 100: any rounding the device does
     * otherwise shows in the first steps and grows (28 s on lavapipe at
     * 300 steps, a tenth of the unit suite) */
    c.p.mei.steps = 200;
    c.p.mei.rain_steps = 100;
    compare_paths(&c, "synthetic 256^2 (walls, sources, drops, open, thermal, sub-steps)");
    case_free(&c);
}
END_TEST

/* Two Vulkan runs: byte-identical layers and budget. */
START_TEST(test_mei_repeatable)
{
    const char *why;
    er_test_parallel_lavapipe();
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base, a, b;
    er_error err = {{0}};
    synthetic_case(&base);
    base.p.mei.steps = 40; /* 160 sub-steps on parallel lavapipe's threads */
    size_t n = (size_t)N * N;
    case_copy(&a, &base);
    case_copy(&b, &base);
    ck_assert_msg(run_vk(vk, &a, &err) == ER_OK, "%s", err.msg);
    ck_assert_msg(run_vk(vk, &b, &err) == ER_OK, "%s", err.msg);
    ck_assert(memcmp(a.b, b.b, n * sizeof(float)) == 0);
    ck_assert(memcmp(a.water, b.water, n * sizeof(float)) == 0);
    ck_assert(memcmp(a.sed, b.sed, n * sizeof(float)) == 0);
    ck_assert(memcmp(&a.bud, &b.bud, sizeof a.bud) == 0);
    ck_assert(memcmp(a.b, base.b, n * sizeof(float)) != 0);
    case_free(&a);
    case_free(&b);
    case_free(&base);
    close_checked(vk);
}
END_TEST

/* A map whose layer exceeds one storage buffer passes the check (it runs
 * in bands) when its buffers fit the device's memory; one beyond that
 * memory is refused before any allocation, with the limit named.  Sizes
 * only (NULL heights: no walls, no flow or wear, 60 bytes a cell and the
 * halo rows); on lavapipe a 5793^2 layer exceeds its 128 MiB buffers and
 * 6000^2 maps exceed its 2 GiB. */
START_TEST(test_mei_large_map_banded_or_refused)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    const er_vk_device_info *d = er_vk_info(vk);
    const double over = ceil(sqrt((double)d->max_storage_buffer_range / 4.0)) + 1.0;
    const double heap = ceil(sqrt((double)d->device_local_bytes / 60.0)) + 1.0;
    ER_SKIP_IF(heap > 32768.0, "the device's memory holds more cells than the shaders address");
    er_params p;
    er_params_default(&p);
    er_plan plan = {.p = p}; /* the recipe part is all it reads */
    er_error err = {{0}};
    int w = (int)over;
    er_terrain t = {w, w, NULL, NULL, 1.0, 1.0, NULL};
    if (over * over * 62.0 < (double)d->device_local_bytes)
        ck_assert_msg(er_backend_vulkan.check(vk, &plan, &t, &err) == ER_OK, "%dx%d: %s", w, w, err.msg);
    t.width = t.height = (int)heap;
    ck_assert_int_eq(er_backend_vulkan.check(vk, &plan, &t, &err), ER_ENOMEM);
    ck_assert_msg(strstr(err.msg, "device memory") && strstr(err.msg, "--backend cpu"),
                  "%s", err.msg);
    /* a forced band size cuts a map that fits one buffer into bands alike */
    er_terrain small = {1024, 1024, NULL, NULL, 1.0, 1.0, NULL};
    er_vk_set_buffer_cap(vk, 1);
    ck_assert_msg(er_backend_vulkan.check(vk, &plan, &small, &err) == ER_OK, "%s", err.msg);
    er_vk_set_buffer_cap(vk, 0);
    close_checked(vk);
}
END_TEST

/* The paper's semi-Lagrangian transport (eq. 14) as well. */
START_TEST(test_mei_semi_lagrangian_matches_cpu)
{
    mei_case c;
    synthetic_case(&c);
    c.p.mei.advection = ER_ADVECT_SEMI_LAGRANGIAN;
    c.p.mei.steps = 150;
    compare_paths(&c, "synthetic 256^2, semi-Lagrangian");
    case_free(&c);
}
END_TEST

/* A numerical failure is reported as the CPU reports it: the same status
 * and message (here the pipe bound under cfl = error). */
START_TEST(test_mei_cfl_error_same_message)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base, a, b;
    er_error ea = {{0}}, eb = {{0}};
    synthetic_case(&base);
    base.p.mei.cfl = ER_CFL_ERROR;
    case_copy(&a, &base);
    case_copy(&b, &base);
    er_layers la = {a.water, a.sed, NULL, NULL};
    ck_assert_int_eq(er_run_cpu(&a.p, &a.t, NULL, &(er_run_opts){&la, NULL, NULL, &a.bud}, &ea), ER_ENUMERIC);
    ck_assert_int_eq(run_vk(vk, &b, &eb), ER_ENUMERIC);
    ck_assert_str_eq(ea.msg, eb.msg);
    case_free(&a);
    case_free(&b);
    case_free(&base);
    close_checked(vk);
}
END_TEST

static int cancel_at_half(void *user, double f)
{
    int *calls = user;
    (*calls)++;
    return f >= 0.5;
}

/* Progress is reported between batches and a non-zero return cancels. */
START_TEST(test_mei_progress_cancel)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base, a;
    er_error err = {{0}};
    int calls = 0;
    synthetic_sized(&base, 64);
    base.p.mei.steps = 1000; /* a first batch of 256 steps at 64^2, then ~75 ms each */
    case_copy(&a, &base);
    er_layers l = {a.water, a.sed, NULL, NULL};
    er_run_ctl ctl = {cancel_at_half, &calls};
    ck_assert_int_eq(er_run_vk(vk, &a.p, &a.t, &(er_run_opts){&l, &ctl, NULL, &a.bud}, &err), ER_ECANCELED);
    ck_assert_msg(strncmp(err.msg, "mei: cancelled at step ", 23) == 0, "%s", err.msg);
    ck_assert_int_ge(calls, 2);
    ck_assert_int_lt(a.bud.work_done, 1000);
    ck_assert_int_gt(a.bud.work_done, 0);
    case_free(&a);
    case_free(&base);
    close_checked(vk);
}
END_TEST


/* Runs c on backend be (ctx) at window win (NULL: none) with hooks hk. */
static er_status run_on(const er_backend *be, void *ctx, mei_case *c, const er_window *win,
                        const er_run_hooks *hk, er_error *err)
{
    er_plan plan;
    er_layers l = {c->water, c->sed, c->flow, c->wear};
    er_status st = er_plan_make(&c->p, &c->t, win, &plan, err);
    if (!st)
        st = be->check(ctx, &plan, &c->t, err);
    return st ? st : be->run(ctx, &plan, &c->t, &(er_run_opts){&l, NULL, hk, &c->bud}, err);
}

/* The window [x0, x0 + w) x [y0, y0 + h) of a world case: its heights and
 * walls, the world's recipe (sources stay in world pixels). */
static void window_case(mei_case *c, const mei_case *world, int x0, int y0, int w, int h)
{
    size_t n = (size_t)w * (size_t)h;
    memset(c, 0, sizeof *c);
    c->p = world->p;
    c->b = malloc(n * sizeof(float));
    c->water = calloc(n, sizeof(float));
    c->sed = calloc(n, sizeof(float));
    c->wall = malloc(n);
    ck_assert(c->b && c->water && c->sed && c->wall);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)(y + y0) * (size_t)world->t.width + (size_t)(x + x0);
            c->b[(size_t)y * (size_t)w + (size_t)x] = world->b[i];
            c->wall[(size_t)y * (size_t)w + (size_t)x] = world->wall[i];
        }
    c->t = (er_terrain){w, h, c->b, c->wall, world->t.cell_x, world->t.cell_y, NULL};
}

/* Windows of a 96^2 world (raindrops, sources, walls, sub-steps): one
 * holding both sources and the wall block, one beside them (its sources
 * add nothing there), one on the world's right edge.  The closed world
 * edges stay closed; the inner ones are open. */
static const int windows[][4] = { {4, 4, 60, 70}, {40, 20, 40, 50}, {50, 30, 46, 40} };

START_TEST(test_mei_window_matches_cpu)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case world, cpu, gpu;
    er_error err = {{0}};
    synthetic_sized(&world, 96);
    world.p.mei.steps = 60;
    world.p.mei.boundary = ER_BOUNDARY_CLOSED;
    const int *wd = windows[_i];
    er_window win = {wd[0], wd[1], 96, 96};
    window_case(&cpu, &world, wd[0], wd[1], wd[2], wd[3]);
    window_case(&gpu, &world, wd[0], wd[1], wd[2], wd[3]);
    er_status st = run_on(&er_backend_cpu, NULL, &cpu, &win, NULL, &err);
    ck_assert_msg(st == ER_OK, "cpu: %s", err.msg);
    st = run_on(&er_backend_vulkan, vk, &gpu, &win, NULL, &err);
    ck_assert_msg(st == ER_OK, "vulkan: %s", err.msg);
    assert_same_layers(&cpu, &gpu, mei_exact(vk), "window");
    ck_assert_msg(cpu.bud.water_added == gpu.bud.water_added, "water_added %.17g vs %.17g",
                  cpu.bud.water_added, gpu.bud.water_added);
    ck_assert(cpu.bud.water_added > 0.0);
    assert_budgets(&cpu.bud, &gpu.bud, mei_exact(vk));
    /* the window's inner edges are open: water left through them */
    ck_assert(gpu.bud.water_left > 0.0);
    case_free(&cpu);
    case_free(&gpu);
    case_free(&world);
    close_checked(vk);
}
END_TEST

/* Boundary states a hooked run hands over: a copy of each (arrays and
 * counters), up to MAX_KEPT. */
#define MAX_KEPT 16
typedef struct kept_states {
    int n, calls;
    er_run_state st[MAX_KEPT];
    float *buf[MAX_KEPT];
    int64_t keep_at; /* keep only this boundary; -1 all */
} kept_states;

static int keep_state(void *user, const er_run_state *v)
{
    kept_states *k = user;
    size_t n = (size_t)v->width * (size_t)v->height;
    k->calls++;
    if ((k->keep_at >= 0 && v->boundary != k->keep_at) || k->n == MAX_KEPT)
        return 0;
    float *b = malloc(ER_STATE_ARRAYS * n * sizeof(float));
    ck_assert_ptr_nonnull(b);
    k->st[k->n] = *v;
    for (int i = 0; i < ER_STATE_ARRAYS; i++) {
        if (i >= ER_STATE_MEI_FLOW && !v->array[i]) /* not kept */
            continue;
        ck_assert_ptr_nonnull(v->array[i]);
        memcpy(b + (size_t)i * n, v->array[i], n * sizeof(float));
        k->st[k->n].array[i] = b + (size_t)i * n;
    }
    k->buf[k->n++] = b;
    return 0;
}

static void kept_free(kept_states *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->buf[i]);
}

/* Boundaries 0, 5, 10, ... and the last (core/model.h er_wants_fn). */
static int every_fifth(void *user, int64_t boundary, int64_t boundaries)
{
    (void)user;
    return boundary % 5 == 0 || boundary == boundaries;
}

/* A run with hooks on Vulkan hands over the boundaries `wants` asks for,
 * no others, with the CPU's states (bit for bit on lavapipe) and
 * counters; and hooks do not change its output. */
START_TEST(test_mei_hooks_match_cpu)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base, cpu, gpu, plain;
    er_error err = {{0}};
    synthetic_sized(&base, 64);
    base.p.mei.steps = 23;
    base.keep = 1; /* flow and wear too: states and layers the CPU's bits */
    case_copy(&cpu, &base);
    case_copy(&gpu, &base);
    case_copy(&plain, &base);
    kept_states kc = {.keep_at = -1}, kg = {.keep_at = -1};
    er_run_hooks hc = {keep_state, &kc, NULL, every_fifth}, hg = {keep_state, &kg, NULL, every_fifth};
    ck_assert_int_eq(run_on(&er_backend_cpu, NULL, &cpu, NULL, &hc, &err), ER_OK);
    er_status st = run_on(&er_backend_vulkan, vk, &gpu, NULL, &hg, &err);
    ck_assert_msg(st == ER_OK, "vulkan: %s", err.msg);
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &plain, NULL, NULL, &err), ER_OK);
    ck_assert_int_eq(kg.calls, 6); /* 0, 5, 10, 15, 20, 23 */
    ck_assert_int_eq(kc.calls, kg.calls);
    const int exact = mei_exact(vk);
    const size_t n = 64 * 64;
    for (int i = 0; i < kg.n; i++) {
        const er_run_state *a = &kc.st[i], *b = &kg.st[i];
        ck_assert_int_eq(a->boundary, b->boundary);
        ck_assert_int_eq(b->boundary, i < 5 ? 5 * i : 23);
        ck_assert_int_eq(a->boundaries, b->boundaries);
        ck_assert_int_eq(a->done, b->done);
        ck_assert_int_eq(b->n_arrays, ER_STATE_ARRAYS);
        ck_assert_int_eq(a->budget.work_done, b->budget.work_done);
        ck_assert_int_eq(a->budget.substeps, b->budget.substeps);
        ck_assert(a->budget.water_added == b->budget.water_added);
        ck_assert(a->budget.material_before == b->budget.material_before);
        assert_budget_term(a->budget.eroded, b->budget.eroded, exact, "state eroded");
        for (int j = 0; j < ER_STATE_ARRAYS; j++)
            ck_assert_msg(exact ? memcmp(a->array[j], b->array[j], n * sizeof(float)) == 0
                                : max_diff(a->array[j], b->array[j], n) <= ER_VK_MEI_FLUSH_SEDIMENT,
                          "boundary %lld array %d differs", (long long)b->boundary, j);
    }
    ck_assert(kg.st[kg.n - 1].budget.eroded == gpu.bud.eroded);
    assert_same_layers(&cpu, &gpu, exact, "hooks vs cpu");
    assert_same_layers(&plain, &gpu, 1, "hooks vs plain vulkan");
    float top_flow = 0.0f, top_wear = 0.0f; /* the flow and wear compared are not all 0 */
    for (size_t i = 0; i < n; i++) {
        top_flow = fmaxf(top_flow, gpu.flow[i]);
        top_wear = fmaxf(top_wear, gpu.wear[i]);
    }
    ck_assert(top_flow > 0.0f && top_wear > 0.0f);
    ck_assert(memcmp(&plain.bud, &gpu.bud, sizeof plain.bud) == 0);
    kept_free(&kc);
    kept_free(&kg);
    case_free(&cpu);
    case_free(&gpu);
    case_free(&plain);
    case_free(&base);
    close_checked(vk);
}
END_TEST

/* A Vulkan run resumed from a mid-run Vulkan state gives the straight
 * run's bits, budget included; a state that does not fit the plan is
 * refused. */
/* A run stopped at one boundary and resumed from the state kept there,
 * beside the straight run (resume_begin runs it): flow and wear are
 * carried through the state. */
typedef struct resume_run {
    mei_case base, straight, first, resumed;
    kept_states k;
    er_run_hooks keep, resume;
} resume_run;

static void resume_begin(er_vk_ctx *vk, resume_run *x, int64_t steps, int64_t keep_at)
{
    er_error err = {{0}};
    synthetic_sized(&x->base, 64);
    x->base.p.mei.steps = steps;
    x->base.keep = 1;
    case_copy(&x->straight, &x->base);
    case_copy(&x->first, &x->base);
    case_copy(&x->resumed, &x->base);
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &x->straight, NULL, NULL, &err), ER_OK);
    x->k = (kept_states){.keep_at = keep_at};
    x->keep = (er_run_hooks){keep_state, &x->k, NULL, NULL};
    x->resume = (er_run_hooks){NULL, NULL, &x->k.st[0], NULL};
}

/* Resumes from the kept state: the straight run's bits and budget. */
static void resume_check(er_vk_ctx *vk, resume_run *x)
{
    er_error err = {{0}};
    er_status st = run_on(&er_backend_vulkan, vk, &x->resumed, NULL, &x->resume, &err);
    ck_assert_msg(st == ER_OK, "resume: %s", err.msg);
    assert_same_layers(&x->straight, &x->resumed, 1, "resumed");
    ck_assert_msg(memcmp(&x->straight.bud, &x->resumed.bud, sizeof x->straight.bud) == 0,
                  "budget: eroded %.17g vs %.17g", x->straight.bud.eroded, x->resumed.bud.eroded);
}

static void resume_end(resume_run *x)
{
    kept_free(&x->k);
    case_free(&x->straight);
    case_free(&x->first);
    case_free(&x->resumed);
    case_free(&x->base);
}

START_TEST(test_mei_resume_matches_straight)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    resume_run x;
    er_error err = {{0}};
    resume_begin(vk, &x, 40, 17);
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &x.first, NULL, &x.keep, &err), ER_OK);
    ck_assert_int_eq(x.k.calls, 41);
    ck_assert_int_eq(x.k.n, 1);
    ck_assert_int_eq(x.k.st[0].boundary, 17);
    resume_check(vk, &x);
    /* the resumed state must fit: another step count does not */
    mei_case other;
    case_copy(&other, &x.base);
    other.p.mei.steps = 39;
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &other, NULL, &x.resume, &err), ER_EINVAL);
    case_free(&other);
    resume_end(&x);
    close_checked(vk);
}
END_TEST

/* The tests of the submission scheme read the context's counters. */
#ifdef ER_HAVE_VULKAN
/* Every boundary, and one submission per step (core/mei/vulkan.c
 * ends a submission at each boundary the hooks want). */
static int every_boundary(void *user, const er_run_state *v)
{
    (void)v;
    (*(int *)user)++;
    return 0;
}

/* A 64^2 slope fed by a source at its left; the cells (X, 32), (X + 1, 32)
 * carry mask 0 (their sediment stays suspended while they are dry).  A
 * state of that run after 5 steps, with both cells' sediment set to
 * 0.9 FLT_MAX, fails when the water reaches them (their sediment meets and
 * overflows): at a step well inside a submission of many. */
#define FAIL_X 40
#define FAIL_AT 5

typedef struct fail_case {
    mei_case c;
    float *mask;
    er_controls ctl;
    kept_states k;
    er_run_hooks resume;
} fail_case;

static void fail_case_make(er_vk_ctx *vk, fail_case *f)
{
    const int side = 64;
    const size_t n = (size_t)side * side, cx = (size_t)32 * side + FAIL_X;
    er_error err = {{0}};
    memset(f, 0, sizeof *f);
    f->c.b = malloc(n * sizeof(float));
    f->c.water = calloc(n, sizeof(float));
    f->c.sed = calloc(n, sizeof(float));
    f->mask = malloc(n * sizeof(float));
    ck_assert(f->c.b && f->c.water && f->c.sed && f->mask);
    for (size_t i = 0; i < n; i++) {
        f->c.b[i] = (float)(0.2 * (side - (int)(i % (size_t)side)));
        f->mask[i] = i == cx || i == cx + 1 ? 0.0f : 1.0f;
    }
    f->ctl = (er_controls){NULL, NULL, f->mask, NULL, NULL};
    f->c.t = (er_terrain){side, side, f->c.b, NULL, 1.0, 1.0, &f->ctl};
    er_params_default(&f->c.p);
    f->c.p.mei.steps = 400;
    f->c.p.mei.dt = 0.05;
    f->c.p.mei.rain_rate = 0.0;
    f->c.p.river.n = 1;
    f->c.p.river.src[0] = (er_source){.x = 8.0, .y = 32.0, .coords = 0, .radius = 3.0, .rate = 1.0};
    mei_case first;
    case_copy(&first, &f->c);
    f->k.keep_at = FAIL_AT;
    er_run_hooks h = {keep_state, &f->k, NULL, NULL};
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &first, NULL, &h, &err), ER_OK);
    case_free(&first);
    ck_assert_int_eq(f->k.n, 1);
    float *s = f->k.buf[0] + (size_t)ER_STATE_MEI_S * n; /* keep_state's copy */
    s[cx] = s[cx + 1] = 0.9f * FLT_MAX;
    f->resume = (er_run_hooks){NULL, NULL, &f->k.st[0], NULL};
}

static void fail_case_free(fail_case *f)
{
    kept_free(&f->k);
    case_free(&f->c);
    free(f->mask);
}

/* Cells whose floats differ between two layers. */
static size_t cells_differing(const float *a, const float *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return d;
}

/* What a failing run left, on many steps a submission and on one, each
 * against the CPU's (printed: a device that differs shows where). */
static void fail_report(const mei_case *cpu, const mei_case *many, const mei_case *one,
                        const er_vk_stats *ms, int64_t failed)
{
    size_t n = (size_t)cpu->t.width * (size_t)cpu->t.height;
    const struct {
        const char *name;
        const float *c, *m, *o;
    } l[] = {{"height", cpu->b, many->b, one->b},
             {"water", cpu->water, many->water, one->water},
             {"sediment", cpu->sed, many->sed, one->sed}};
    fprintf(stderr, "vulkan fail mid-submission: failed at step %lld, %lld steps in %lld "
            "submissions (at most %lld)\n", (long long)failed, (long long)ms->steps,
            (long long)ms->submissions, (long long)ms->max_steps);
    for (int k = 0; k < 3; k++)
        fprintf(stderr, "    %s: many vs cpu %zu cells (max %g), one vs cpu %zu (max %g), "
                "many vs one %zu\n", l[k].name, cells_differing(l[k].m, l[k].c, n),
                max_diff(l[k].m, l[k].c, n), cells_differing(l[k].o, l[k].c, n),
                max_diff(l[k].o, l[k].c, n), cells_differing(l[k].m, l[k].o, n));
}

/* A run whose submission holds many steps and fails at one in the middle
 * stops as a run of one step per submission does (as every run at 4096^2
 * and above did before): the same status and message (the CPU's), the
 * state after the failing step bit for bit, the same budget; the device
 * skipped the steps after the failing one (the gate, mei_common.glsl
 * step_gated; under conditional rendering, the gate before it, an NVIDIA
 * H200 ran passes of later steps and ended 580 cells from the CPU's). */
START_TEST(test_mei_fail_mid_submission)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    fail_case f;
    mei_case cpu, many, one;
    er_error ec = {{0}}, em = {{0}}, eo = {{0}};
    fail_case_make(vk, &f);
    case_copy(&cpu, &f.c);
    case_copy(&many, &f.c);
    case_copy(&one, &f.c);
    ck_assert_int_eq(run_on(&er_backend_cpu, NULL, &cpu, NULL, &f.resume, &ec), ER_ENUMERIC);
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &many, NULL, &f.resume, &em), ER_ENUMERIC);
    const er_vk_stats many_stats = vk->stats;
    int calls = 0;
    er_run_hooks each = {every_boundary, &calls, &f.k.st[0], NULL};
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &one, NULL, &each, &eo), ER_ENUMERIC);
    ck_assert_str_eq(ec.msg, em.msg);
    ck_assert_str_eq(em.msg, eo.msg);
    /* the failing step, and the steps the host counts: up to it */
    const int64_t failed = many.bud.work_done - 1;
    ck_assert_int_gt(failed, FAIL_AT + 2);
    ck_assert_int_eq(cpu.bud.work_done, failed);
    ck_assert_int_eq(vk->stats.max_steps, 1);
    ck_assert_int_eq(calls, failed - FAIL_AT + 1);
    ck_assert_int_gt(many_stats.steps, failed - FAIL_AT + 1);
    fail_report(&cpu, &many, &one, &many_stats, failed);
    assert_same_layers(&many, &one, 1, "many steps vs one step per submission");
    ck_assert_msg(memcmp(&many.bud, &one.bud, sizeof many.bud) == 0,
                  "budget: eroded %.17g vs %.17g, water added %.17g vs %.17g",
                  many.bud.eroded, one.bud.eroded, many.bud.water_added, one.bud.water_added);
    case_free(&cpu);
    case_free(&many);
    case_free(&one);
    fail_case_free(&f);
    close_checked(vk);
}
END_TEST

/* The same failure in 10 bands of 6 or 7 rows (the failing cells on row
 * 32, a band's first): the unbanded run's message, state after the
 * failing step and budget. */
START_TEST(test_mei_banded_fail_mid_submission)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    fail_case f;
    mei_case plain, banded;
    er_error ep = {{0}}, eb = {{0}};
    fail_case_make(vk, &f);
    case_copy(&plain, &f.c);
    case_copy(&banded, &f.c);
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &plain, NULL, &f.resume, &ep), ER_ENUMERIC);
    er_vk_set_buffer_cap(vk, 13 * 64 * sizeof(float));
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &banded, NULL, &f.resume, &eb), ER_ENUMERIC);
    ck_assert_int_eq(vk->stats.bands, 10);
    er_vk_set_buffer_cap(vk, 0);
    ck_assert_str_eq(ep.msg, eb.msg);
    assert_same_layers(&plain, &banded, 1, "banded failure");
    ck_assert(memcmp(&plain.bud, &banded.bud, sizeof plain.bud) == 0);
    case_free(&plain);
    case_free(&banded);
    fail_case_free(&f);
    close_checked(vk);
}
END_TEST

static int every_97th(void *user, int64_t boundary, int64_t boundaries)
{
    (void)user;
    return boundary % 97 == 0 || boundary == boundaries;
}

typedef struct seen_boundaries {
    int n;
    int64_t at[32];
} seen_boundaries;

static int note_boundary(void *user, const er_run_state *v)
{
    seen_boundaries *s = user;
    if (s->n < 32)
        s->at[s->n] = v->boundary;
    s->n++;
    return 0;
}

/* Submissions sized by the measured time per step still end at every
 * boundary the hooks want, and at no other: the hooks see exactly those,
 * and the output is that of a run without hooks, bit for bit. */
START_TEST(test_mei_long_run_sees_every_boundary)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base, hooked, plain;
    er_error err = {{0}};
    /* plain: a first submission of 256 steps, then one sized by its time;
     * hooked: submissions ending at every 97th step */
    const int steps = 600;
    synthetic_sized(&base, 32);
    base.p.mei.steps = steps;
    case_copy(&hooked, &base);
    case_copy(&plain, &base);
    seen_boundaries seen = {0};
    er_run_hooks h = {note_boundary, &seen, NULL, every_97th};
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &hooked, NULL, &h, &err), ER_OK);
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &plain, NULL, NULL, &err), ER_OK);
    ck_assert_int_eq(seen.n, steps / 97 + 2); /* 0, 97, ..., 582, 600 */
    for (int i = 0; i < seen.n; i++)
        ck_assert_int_eq(seen.at[i], i == seen.n - 1 ? steps : 97 * i);
    ck_assert_int_gt(vk->stats.max_steps, 1);
    ck_assert_int_eq(vk->stats.steps, steps);
    assert_same_layers(&plain, &hooked, 1, "hooks vs plain");
    ck_assert(memcmp(&plain.bud, &hooked.bud, sizeof plain.bud) == 0);
    case_free(&hooked);
    case_free(&plain);
    case_free(&base);
    close_checked(vk);
}
END_TEST
#endif

/*
 * Control maps (core/controls.h) on Vulkan: the CPU's bits on lavapipe.
 * The maps of a world of side x side cells: hardness (random, a block of
 * 1), rain (0 on the left half, 1.5..2 on the right), mask (0.4..1, a band
 * of 0) and a sources raster (a disc of 0.05 m/s); on walls they hold NaN,
 * which a run must never read (core/controls.h).
 */
enum { M_HARD = 1, M_RAIN = 2, M_MASK = 4, M_SRC = 8, M_ALL = 15 };

typedef struct ctl_maps {
    float *map[4]; /* hardness, rain, mask, source */
    er_controls c;
} ctl_maps;

static float map_value(int m, int x, int y, int side)
{
    double u = er_rng_unit(11, (uint64_t)m, (uint64_t)y * (uint64_t)side + (uint64_t)x);
    double f = side / 96.0, dx = x - 70 * f, dy = y - 60 * f;
    switch (m) {
    case 0:
        return x >= 20 * f && x < 40 * f && y >= 20 * f && y < 40 * f ? 1.0f : (float)(0.8 * u);
    case 1: return x < side / 2 ? 0.0f : (float)(1.5 + 0.5 * u);
    case 2: return y >= 50 * f && y < 58 * f ? 0.0f : (float)(0.4 + 0.6 * u);
    default: return dx * dx + dy * dy <= 16.0 * f * f ? 0.05f : 0.0f;
    }
}

/* The maps `which` (M_*) for the window [x0, x0 + w) x [y0, y0 + h) of
 * the world c (its walls decide where NaN goes); c->t.controls points at them. */
static void maps_for(ctl_maps *k, mei_case *c, unsigned which, int x0, int y0, int side)
{
    const int w = c->t.width, h = c->t.height;
    memset(k, 0, sizeof *k);
    for (int m = 0; m < 4; m++) {
        if (!(which & (1u << m)))
            continue;
        k->map[m] = malloc((size_t)w * (size_t)h * sizeof(float));
        ck_assert_ptr_nonnull(k->map[m]);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                size_t i = (size_t)y * (size_t)w + (size_t)x;
                k->map[m][i] = c->wall && c->wall[i] ? NAN : map_value(m, x + x0, y + y0, side);
            }
    }
    k->c = (er_controls){ k->map[0], k->map[1], k->map[2], k->map[3], NULL };
    c->t.controls = &k->c;
}

static void maps_free(ctl_maps *k)
{
    for (int m = 0; m < 4; m++)
        free(k->map[m]);
}

/* Which maps each loop iteration of test_mei_maps_match_cpu gives. */
static const unsigned map_sets[] = { M_ALL, M_HARD, M_RAIN, M_MASK, M_SRC };
#define N_MAP_SETS (int)(sizeof map_sets / sizeof map_sets[0])

/* A 96^2 map with walls, sources, raindrops, thermal weathering and
 * sub-steps, run with the maps of map_sets[_i]: Vulkan gives the CPU's
 * bits (lavapipe) and budget, and the maps did change the run. */
START_TEST(test_mei_maps_match_cpu)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base, plain, cpu, gpu;
    ctl_maps k;
    er_error err = {{0}};
    synthetic_sized(&base, 96);
    base.p.mei.steps = 40;
    case_copy(&plain, &base);
    ck_assert_int_eq(run_on(&er_backend_cpu, NULL, &plain, NULL, NULL, &err), ER_OK);
    maps_for(&k, &base, map_sets[_i], 0, 0, 96);
    case_copy(&cpu, &base);
    case_copy(&gpu, &base);
    er_status st = run_on(&er_backend_cpu, NULL, &cpu, NULL, NULL, &err);
    ck_assert_msg(st == ER_OK, "cpu: %s", err.msg);
    st = run_on(&er_backend_vulkan, vk, &gpu, NULL, NULL, &err);
    ck_assert_msg(st == ER_OK, "vulkan: %s", err.msg);
    assert_same_layers(&cpu, &gpu, mei_exact(vk), "maps");
    assert_budgets(&cpu.bud, &gpu.bud, mei_exact(vk));
    assert_closes(&gpu.bud);
    ck_assert_msg(memcmp(plain.b, gpu.b, 96 * 96 * sizeof(float)) != 0, "maps changed nothing");
    /* rain and sources maps add water the run without them does not */
    ck_assert((gpu.bud.water_added != plain.bud.water_added) == !!(map_sets[_i] & (M_RAIN | M_SRC)));
    maps_free(&k);
    case_free(&plain);
    case_free(&cpu);
    case_free(&gpu);
    case_free(&base);
    close_checked(vk);
}
END_TEST

/* A window of a 96^2 world with all four maps cut to it (as cli/ cuts
 * them): the window holding the sources, the wall block and the hard
 * block, and one on the world's right edge. */
START_TEST(test_mei_maps_window_matches_cpu)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case world, cpu, gpu;
    ctl_maps kc, kg;
    er_error err = {{0}};
    synthetic_sized(&world, 96);
    world.p.mei.steps = 40;
    world.p.mei.boundary = ER_BOUNDARY_CLOSED;
    const int *wd = windows[_i == 0 ? 0 : 2];
    er_window win = {wd[0], wd[1], 96, 96};
    window_case(&cpu, &world, wd[0], wd[1], wd[2], wd[3]);
    window_case(&gpu, &world, wd[0], wd[1], wd[2], wd[3]);
    maps_for(&kc, &cpu, M_ALL, wd[0], wd[1], 96);
    maps_for(&kg, &gpu, M_ALL, wd[0], wd[1], 96);
    er_status st = run_on(&er_backend_cpu, NULL, &cpu, &win, NULL, &err);
    ck_assert_msg(st == ER_OK, "cpu: %s", err.msg);
    st = run_on(&er_backend_vulkan, vk, &gpu, &win, NULL, &err);
    ck_assert_msg(st == ER_OK, "vulkan: %s", err.msg);
    assert_same_layers(&cpu, &gpu, mei_exact(vk), "maps window");
    assert_budgets(&cpu.bud, &gpu.bud, mei_exact(vk));
    assert_closes(&gpu.bud);
    ck_assert(gpu.bud.water_left > 0.0);
    maps_free(&kc);
    maps_free(&kg);
    case_free(&cpu);
    case_free(&gpu);
    case_free(&world);
    close_checked(vk);
}
END_TEST

/* With maps, a Vulkan run resumed from its state at step 17 gives the
 * straight run's bits and budget, and those are the CPU's. */
START_TEST(test_mei_maps_resume_matches_cpu)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base, cpu, straight, first, resumed;
    ctl_maps k;
    er_error err = {{0}};
    synthetic_sized(&base, 64);
    base.p.mei.steps = 30;
    base.keep = 1;
    maps_for(&k, &base, M_ALL, 0, 0, 64);
    case_copy(&cpu, &base);
    case_copy(&straight, &base);
    case_copy(&first, &base);
    case_copy(&resumed, &base);
    ck_assert_int_eq(run_on(&er_backend_cpu, NULL, &cpu, NULL, NULL, &err), ER_OK);
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &straight, NULL, NULL, &err), ER_OK);
    kept_states ks = {.keep_at = 17};
    er_run_hooks h = {keep_state, &ks, NULL, NULL};
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &first, NULL, &h, &err), ER_OK);
    ck_assert_int_eq(ks.n, 1);
    er_run_hooks r = {NULL, NULL, &ks.st[0], NULL};
    er_status st = run_on(&er_backend_vulkan, vk, &resumed, NULL, &r, &err);
    ck_assert_msg(st == ER_OK, "resume: %s", err.msg);
    assert_same_layers(&straight, &resumed, 1, "maps resumed");
    ck_assert(memcmp(&straight.bud, &resumed.bud, sizeof straight.bud) == 0);
    assert_same_layers(&cpu, &straight, mei_exact(vk), "maps vs cpu");
    assert_budgets(&cpu.bud, &straight.bud, mei_exact(vk));
    assert_closes(&straight.bud);
    kept_free(&ks);
    maps_free(&k);
    case_free(&cpu);
    case_free(&straight);
    case_free(&first);
    case_free(&resumed);
    case_free(&base);
    close_checked(vk);
}
END_TEST

#ifdef ER_HAVE_VULKAN
/*
 * Banded runs (core/mei/vulkan.c mei_band, erode-models(7),
 * "Mei submissions and bands"): the layer buffers capped at `fit` rows of the map
 * (er_vk_set_buffer_cap), so that lavapipe runs the path a map larger than
 * one storage buffer takes.  On a 96^2 map: 7 rows are the smallest band,
 * one row of its own and three of halo each side (96 bands); 26 rows cut
 * it into 5 bands of 19 or 20 rows; 60 into 2.
 */
static const int band_fit[] = { 7, 26, 60 };
#define N_BAND_FIT (int)(sizeof band_fit / sizeof band_fit[0])
#define BAND_SIDE 96

static void set_band_rows(er_vk_ctx *vk, int fit, int width)
{
    er_vk_set_buffer_cap(vk, (uint64_t)fit * (uint64_t)width * sizeof(float));
}

/* Runs base on the CPU, on vk unbanded and on vk in bands of `fit` rows:
 * the banded run gives the unbanded run's bits (layers, flow and wear,
 * budget) and those the CPU gives (lavapipe). */
static void compare_banded(er_vk_ctx *vk, const mei_case *base, int fit, const char *what)
{
    mei_case cpu, plain, banded;
    er_error err = {{0}};
    case_copy(&cpu, base);
    case_copy(&plain, base);
    case_copy(&banded, base);
    ck_assert_int_eq(run_on(&er_backend_cpu, NULL, &cpu, NULL, NULL, &err), ER_OK);
    er_vk_set_buffer_cap(vk, 0);
    er_status st = run_on(&er_backend_vulkan, vk, &plain, NULL, NULL, &err);
    ck_assert_msg(st == ER_OK, "vulkan: %s", err.msg);
    ck_assert_int_eq(vk->stats.bands, 1);
    set_band_rows(vk, fit, base->t.width);
    st = run_on(&er_backend_vulkan, vk, &banded, NULL, NULL, &err);
    ck_assert_msg(st == ER_OK, "vulkan banded: %s", err.msg);
    const int h = base->t.height, own = fit - 6;
    ck_assert_int_eq(vk->stats.bands, fit >= h ? 1 : (h + own - 1) / own);
    fprintf(stderr, "vulkan %s in %d bands of %d rows\n", what, vk->stats.bands, fit);
    assert_same_layers(&plain, &banded, 1, what);
    ck_assert(memcmp(&plain.bud, &banded.bud, sizeof plain.bud) == 0);
    assert_same_layers(&cpu, &banded, mei_exact(vk), what);
    assert_budgets(&cpu.bud, &banded.bud, mei_exact(vk));
    ck_assert_msg(max_diff(base->b, banded.b, (size_t)h * (size_t)base->t.width) > ERODED_MIN,
                  "%s: nothing eroded", what);
    er_vk_set_buffer_cap(vk, 0);
    case_free(&cpu);
    case_free(&plain);
    case_free(&banded);
}

/* Walls, sources, raindrops, open edges, thermal weathering, sub-steps,
 * all four control maps, flow and wear; conservative transport. */
START_TEST(test_mei_banded_matches_unbanded)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base;
    ctl_maps k;
    synthetic_sized(&base, BAND_SIDE);
    base.p.mei.steps = 20;
    base.keep = 1;
    maps_for(&k, &base, M_ALL, 0, 0, BAND_SIDE);
    compare_banded(vk, &base, band_fit[_i], "banded, maps, flow and wear");
    maps_free(&k);
    case_free(&base);
    close_checked(vk);
}
END_TEST

/* Semi-Lagrangian transport (eq. 14) reads a row away too. */
START_TEST(test_mei_banded_semi_lagrangian)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base;
    synthetic_sized(&base, BAND_SIDE);
    base.p.mei.steps = 20;
    base.p.mei.advection = ER_ADVECT_SEMI_LAGRANGIAN;
    compare_banded(vk, &base, band_fit[_i], "banded, semi-Lagrangian");
    case_free(&base);
    close_checked(vk);
}
END_TEST

/* A checkpoint taken in a banded run, resumed unbanded (and the other way
 * round): the straight unbanded run's bits and budget. */
START_TEST(test_mei_banded_checkpoint_resumes_unbanded)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    resume_run x;
    er_error err = {{0}};
    resume_begin(vk, &x, 30, 13);
    set_band_rows(vk, _i ? 64 : 17, 64);
    ck_assert_int_eq(run_on(&er_backend_vulkan, vk, &x.first, NULL, &x.keep, &err), ER_OK);
    ck_assert_int_eq(vk->stats.bands, _i ? 1 : 6);
    ck_assert_int_eq(x.k.n, 1);
    set_band_rows(vk, _i ? 13 : 64, 64);
    resume_check(vk, &x);
    ck_assert_int_eq(vk->stats.bands, _i ? 10 : 1);
    er_vk_set_buffer_cap(vk, 0);
    resume_end(&x);
    close_checked(vk);
}
END_TEST
#endif

/* The DenormPreserve build of the Mei shaders (mei_common.glsl
 * ER_DENORM_PRESERVE), which only devices offering
 * shaderDenormPreserveFloat32 run, loads and gives the CPU's bytes.  Forced
 * on lavapipe, which keeps denormals anyway but does not offer the
 * capability: so only without the validation layer, which would rightly
 * report it. */
START_TEST(test_mei_denorm_preserve_build)
{
#ifdef ER_HAVE_VULKAN
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    if (validation_wanted() || er_vk_mei_exactness(&vk->info) != ER_VK_EXACT_MEASURED) {
        er_vk_close(vk);
        ER_SKIP_IF(1, "the preserve build is forced on lavapipe only, without validation");
    }
    vk->info.denorm_preserve = 1;
    ck_assert_int_eq(er_vk_mei_exactness(&vk->info), ER_VK_EXACT_DECLARED);
    mei_case base;
    synthetic_sized(&base, 64);
    base.p.mei.steps = 60;
    compare_on(vk, &base, "synthetic 64^2, DenormPreserve build", 1);
    case_free(&base);
    close_checked(vk);
#endif
}
END_TEST

/* The Khronos validation layer, when installed, has nothing to say about
 * a run with every pass in use (walls, sources, drops, sub-steps), without
 * and with the control maps. */
START_TEST(test_validation_layer_silent)
{
    const char *why;
    er_vk_ctx *probe = open_or_null(&why);
    ER_SKIP_IF(!probe, why);
    er_vk_close(probe);
    er_vk_options o = {0, 1};
    er_vk_ctx *vk = NULL;
    er_error err = {{0}};
    er_status st = er_vk_open(&o, &vk, &err);
    ER_SKIP_IF(st == ER_EUNSUPPORTED && strstr(err.msg, "validation"),
               "VK_LAYER_KHRONOS_validation not installed (vulkan-validationlayers)");
    ck_assert_msg(st == ER_OK, "%s", err.msg);
    mei_case base, a, b;
    ctl_maps k;
    synthetic_sized(&base, 64);
    base.p.mei.steps = 3;
    case_copy(&a, &base);
    ck_assert_msg(run_vk(vk, &a, &err) == ER_OK, "%s", err.msg);
    maps_for(&k, &base, M_ALL, 0, 0, 64); /* and the maps' buffers and pass */
    case_copy(&b, &base);
    ck_assert_msg(run_vk(vk, &b, &err) == ER_OK, "%s", err.msg);
    maps_free(&k);
    case_free(&a);
    case_free(&b);
    case_free(&base);
    close_checked(vk);
}
END_TEST

/* The counter is real: an invalid call (a buffer of 0 bytes, VUID
 * VkBufferCreateInfo-size-00912) is counted and its text kept. */
START_TEST(test_validation_layer_counts)
{
#ifdef ER_HAVE_VULKAN
    const char *why;
    er_vk_ctx *probe = open_or_null(&why);
    ER_SKIP_IF(!probe, why);
    er_vk_close(probe);
    er_vk_options o = {0, 1};
    er_vk_ctx *vk = NULL;
    er_error err = {{0}};
    er_status st = er_vk_open(&o, &vk, &err);
    ER_SKIP_IF(st == ER_EUNSUPPORTED && strstr(err.msg, "validation"),
               "VK_LAYER_KHRONOS_validation not installed (vulkan-validationlayers)");
    ck_assert_msg(st == ER_OK, "%s", err.msg);
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = 0,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkBuffer b = VK_NULL_HANDLE;
    if (vkCreateBuffer(vk->dev, &bci, NULL, &b) == VK_SUCCESS && b)
        vkDestroyBuffer(vk->dev, b, NULL);
    char first[ER_ERROR_MAX];
    ck_assert_uint_ge(er_vk_messages(vk, first, sizeof first), 1);
    ck_assert_msg(strstr(first, "size"), "%s", first);
    er_vk_close(vk);
#endif
}
END_TEST

/*
 * Maps smaller than a workgroup, than the Mei coefficients or than a
 * droplet brush (below 68 cells the coefficients, 272 bytes,
 * and below (2r - 1)^2 cells the brush were copied into a staging buffer
 * sized for one layer, a heap overflow that ASan reports and glibc aborts
 * on).  Single rows and columns, and the sizes around the thresholds.
 */
static const int tiny[][2] = {
    {1, 1}, {2, 2}, {1, 7}, {7, 1}, {3, 3}, {4, 4}, {5, 5}, {7, 7}, {8, 8}, {9, 9}, {16, 1},
    {1, 16},
};
#define N_TINY ((int)(sizeof tiny / sizeof tiny[0]))

/* A w x h tilted plane with bumps, 1 m cells; from 3x3 on, one nodata cell
 * in the far corner. */
static void tiny_map(mei_case *c, int w, int h)
{
    size_t n = (size_t)w * (size_t)h;
    memset(c, 0, sizeof *c);
    c->b = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(c->b);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * (size_t)w + (size_t)x;
            c->b[i] = (float)(10.0 + 0.3 * x + 0.2 * y + 0.1 * er_rng_unit(3, 99, i));
        }
    if (w >= 3 && h >= 3) {
        c->wall = calloc(n, 1);
        ck_assert_ptr_nonnull(c->wall);
        c->wall[n - 1] = 1;
        c->b[n - 1] = -9999.0f;
    }
    c->t = (er_terrain){w, h, c->b, c->wall, 1.0, 1.0, NULL};
    er_params_default(&c->p);
}

/* Mei on each tiny map as on the CPU: the default recipe, then one with a
 * river source, raindrops and sub-steps (every upload in use). */
START_TEST(test_mei_tiny_maps_match_cpu)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    const int w = tiny[_i][0], h = tiny[_i][1];
    char name[96];
    mei_case c;
    tiny_map(&c, w, h);
    c.p.mei.steps = 5;
    snprintf(name, sizeof name, "%dx%d, default recipe", w, h);
    compare_on(vk, &c, name, 0);

    er_mei_params *m = &c.p.mei;
    c.p.seed = 9;
    m->steps = 40;
    m->dt = 0.5; /* four sub-steps at 1 m cells, as in synthetic_sized */
    m->drops_per_step = 2;
    m->drop_radius = 1.5;
    m->drop_amount = 0.01;
    m->thermal_rate = 0.5;
    m->talus_slope = 0.5;
    c.p.river.n = 1;
    c.p.river.src[0] = (er_source){.x = 0.0, .y = 0.0, .coords = 0, .radius = 1.5, .rate = 0.01};
    snprintf(name, sizeof name, "%dx%d, source, drops, sub-steps", w, h);
    compare_on(vk, &c, name, 0);
    case_free(&c);
    close_checked(vk);
}
END_TEST

/* Droplets on each tiny map, brush radius 3 (side 5, the default) and 6
 * (side 11, more than every tiny map): the same status as the CPU path and,
 * when it runs, the same number of droplets, every height finite, the
 * nodata cell untouched, the material balance closed and a repeat
 * byte-identical.  Droplets agree with the CPU only statistically
 * (check_vulkan_droplet.c), which a map of a few cells cannot show. */
START_TEST(test_droplet_tiny_maps_run)
{
    static const int radii[] = {3, 6};
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    const int w = tiny[_i][0], h = tiny[_i][1];
    const size_t n = (size_t)w * (size_t)h;
    mei_case base;
    tiny_map(&base, w, h);
    base.p.model = ER_MODEL_DROPLET;
    base.p.seed = 5;
    base.p.droplet.count = 300;
    for (int r = 0; r < 2; r++) {
        mei_case cpu, gpu, again;
        er_error ec = {{0}}, eg = {{0}};
        base.p.droplet.radius = radii[r];
        case_copy(&cpu, &base);
        case_copy(&gpu, &base);
        case_copy(&again, &base);
        er_layers lc = {cpu.water, cpu.sed, NULL, NULL}, lg = {gpu.water, gpu.sed, NULL, NULL};
        er_layers la = {again.water, again.sed, NULL, NULL};
        er_status sc = er_run_cpu(&cpu.p, &cpu.t, NULL, &(er_run_opts){&lc, NULL, NULL, &cpu.bud}, &ec);
        er_status sg = er_run_vk(vk, &gpu.p, &gpu.t, &(er_run_opts){&lg, NULL, NULL, &gpu.bud}, &eg);
        ck_assert_msg(sg == sc, "%dx%d radius %d: vulkan %d (%s), cpu %d (%s)", w, h, radii[r],
                      (int)sg, eg.msg, (int)sc, ec.msg);
        fprintf(stderr, "vulkan droplet %dx%d radius %d: status %d, eroded %.3g (cpu %.3g)\n", w,
                h, radii[r], (int)sg, gpu.bud.eroded, cpu.bud.eroded);
        if (sc == ER_OK) {
            ck_assert_msg(er_run_vk(vk, &again.p, &again.t, &(er_run_opts){&la, NULL, NULL, &again.bud}, &eg) ==
                              ER_OK, "%s", eg.msg);
            ck_assert_int_eq(gpu.bud.work_done, cpu.bud.work_done);
            for (size_t i = 0; i < n; i++) {
                ck_assert_msg(isfinite(gpu.b[i]), "%dx%d: height %zu not finite", w, h, i);
                if (base.wall && base.wall[i])
                    ck_assert(gpu.b[i] == base.b[i]);
            }
            ck_assert_msg(gpu.bud.rel_error < 1e-5, "%dx%d radius %d: balance off by %.3g", w,
                          h, radii[r], gpu.bud.rel_error);
            ck_assert(memcmp(gpu.b, again.b, n * sizeof(float)) == 0);
            ck_assert(memcmp(gpu.water, again.water, n * sizeof(float)) == 0);
            ck_assert(memcmp(gpu.sed, again.sed, n * sizeof(float)) == 0);
        } else {
            ck_assert_str_eq(eg.msg, ec.msg);
        }
        case_free(&cpu);
        case_free(&gpu);
        case_free(&again);
    }
    case_free(&base);
    close_checked(vk);
}
END_TEST

/* The pipeline cache (core/vulkan/vk_cache.c): what er_vk_cache_save
 * hands out a later er_vk_open_cached accepts, and the runs with a cold
 * and a warm cache give the same bytes. */
static er_vk_ctx *open_cache(const void *data, size_t size)
{
    er_vk_options o = {0, validation_wanted()};
    er_vk_ctx *vk = NULL;
    er_error err = {{0}};
    ck_assert_msg(er_vk_open_cached(&o, data, size, &vk, &err) == ER_OK, "%s", err.msg);
    return vk;
}

/* One short Mei run of the synthetic case into c (the caller frees). */
static void cache_run(er_vk_ctx *vk, mei_case *c, int side)
{
    mei_case base;
    er_error err = {{0}};
    synthetic_sized(&base, side);
    base.p.mei.steps = 20;
    case_copy(c, &base);
    case_free(&base);
    ck_assert_msg(run_vk(vk, c, &err) == ER_OK, "%s", err.msg);
}

/* A saved cache: the bytes of a cold device's run on a side^2 map. */
static unsigned char *saved_cache(int side, size_t *size)
{
    void *data = NULL;
    mei_case c;
    er_error err = {{0}};
    er_vk_ctx *vk = open_cache(NULL, 0);
    ck_assert(!er_vk_cache_warm(vk));
    cache_run(vk, &c, side);
    case_free(&c);
    ck_assert_msg(er_vk_cache_save(vk, &data, size, &err) == ER_OK, "%s", err.msg);
    ck_assert_msg(data && *size > 8, "a cold run's cache must be saved");
    ck_assert(memcmp(data, ER_VK_CACHE_MAGIC, 8) == 0);
    close_checked(vk);
    return data;
}

START_TEST(test_pipeline_cache_warm_same_bytes)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    close_checked(vk);
    size_t size = 0, n = (size_t)64 * 64;
    unsigned char *data = saved_cache(64, &size);
    mei_case cold, warm;
    vk = open_cache(NULL, 0);
    cache_run(vk, &cold, 64);
    close_checked(vk);
    vk = open_cache(data, size);
    ck_assert_msg(er_vk_cache_warm(vk), "the device refused its own cache");
    cache_run(vk, &warm, 64);
    close_checked(vk);
    ck_assert(memcmp(cold.b, warm.b, n * sizeof(float)) == 0);
    ck_assert(memcmp(cold.water, warm.water, n * sizeof(float)) == 0);
    ck_assert(memcmp(cold.sed, warm.sed, n * sizeof(float)) == 0);
    ck_assert(memcmp(&cold.bud, &warm.bud, sizeof cold.bud) == 0);
    case_free(&cold);
    case_free(&warm);
    free(data);
}
END_TEST

/* FNV-1a 64, as vk_cache.c checks its payload: to forge a cache whose
 * checksum holds but whose Vulkan header names another device. */
static uint64_t fnv1a_64(const unsigned char *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Damaged, cut short or foreign bytes: a cold cache, the run unharmed.
 * Our header is 56 bytes (magic, size, vendor, device, driver, UUID,
 * payload size, checksum); Vulkan's follows (its vendor ID at +8). */
#define CACHE_HEADER 56
START_TEST(test_pipeline_cache_damage_is_cold)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    close_checked(vk);
    size_t size = 0;
    unsigned char *good = saved_cache(16, &size);
    ck_assert_uint_ge(size, CACHE_HEADER + 32);
    const size_t cut[] = { 0, 7, 8, CACHE_HEADER - 1, CACHE_HEADER, CACHE_HEADER + 31, size - 1 };
    const size_t flip[] = { 0, 8, 12, 16, 20, 24, 40, 48, CACHE_HEADER, size - 1 };
    const size_t n_cut = sizeof cut / sizeof cut[0], n_flip = sizeof flip / sizeof flip[0];
    unsigned char *bad = malloc(size);
    ck_assert_ptr_nonnull(bad);
    for (size_t k = 0; k < n_cut + n_flip + 1; k++) {
        size_t len = k < n_cut ? cut[k] : size;
        memcpy(bad, good, size);
        if (k >= n_cut && k < n_cut + n_flip)
            bad[flip[k - n_cut]] ^= 0x5a;
        if (k == n_cut + n_flip) { /* checksum right, another vendor inside */
            uint64_t h;
            bad[CACHE_HEADER + 8] ^= 0x01;
            h = fnv1a_64(bad + CACHE_HEADER, size - CACHE_HEADER);
            memcpy(bad + 48, &h, sizeof h);
        }
        vk = open_cache(bad, len);
        ck_assert_msg(!er_vk_cache_warm(vk), "case %zu: damaged cache accepted", k);
        if (k == 0 || k == n_cut + n_flip) {
            mei_case c;
            cache_run(vk, &c, 16);
            case_free(&c);
        }
        close_checked(vk);
    }
    free(bad);
    free(good);
}
END_TEST

#ifdef ER_HAVE_VULKAN
/* Lazy pipelines: a kernel is compiled at its first dispatch, so a 0-step
 * run compiles nothing (and has no cache to save), and a run compiles
 * exactly the kernels it dispatched: without rain maps, sources or
 * raindrops fewer than all of them. */
START_TEST(test_pipelines_only_those_dispatched)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    mei_case base, c;
    er_error err = {{0}};
    void *data = NULL;
    size_t size = 0;
    synthetic_sized(&base, 32);
    base.p.mei.steps = 0;
    case_copy(&c, &base);
    ck_assert_msg(run_vk(vk, &c, &err) == ER_OK, "%s", err.msg);
    case_free(&c);
    ck_assert_int_eq(vk->pipelines_made, 0);
    ck_assert_msg(er_vk_cache_save(vk, &data, &size, &err) == ER_OK && !data && size == 0,
                  "a run that compiled nothing saved a cache");
    base.p.mei.steps = 3;
    base.p.river.n = 0;
    base.p.mei.drops_per_step = 0;
    case_copy(&c, &base);
    ck_assert_msg(run_vk(vk, &c, &err) == ER_OK, "%s", err.msg);
    case_free(&c);
    case_free(&base);
    int dispatched = 0;
    for (int k = 0; k < vk->stats.n_kernels; k++)
        dispatched += vk->stats.kernel[k].invocations != 0;
    ck_assert_int_eq(vk->pipelines_made, dispatched);
    ck_assert_int_lt(dispatched, vk->stats.n_kernels);
    close_checked(vk);
}
END_TEST
#endif

Suite *vulkan_suite(void);
Suite *vulkan_suite(void)
{
    Suite *s = suite_create("vulkan");
    TCase *tc = tcase_create("device");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_not_built_says_so);
    tcase_add_test(tc, test_list_and_open);
    tcase_add_test(tc, test_bad_device_index);
    tcase_add_test(tc, test_div_premise);
    tcase_add_test(tc, test_pipeline_cache_warm_same_bytes);
    tcase_add_test(tc, test_pipeline_cache_damage_is_cold);
#ifdef ER_HAVE_VULKAN
    tcase_add_test(tc, test_pipelines_only_those_dispatched);
#endif
    suite_add_tcase(s, tc);
    TCase *mei = tcase_create("mei");
    tcase_set_timeout(mei, 300);
    tcase_add_test(mei, test_mei_dem_matches_cpu);
    tcase_add_test(mei, test_mei_synthetic_matches_cpu);
    tcase_add_test(mei, test_mei_repeatable);
    tcase_add_test(mei, test_mei_large_map_banded_or_refused);
    tcase_add_test(mei, test_mei_semi_lagrangian_matches_cpu);
    tcase_add_test(mei, test_mei_cfl_error_same_message);
    tcase_add_test(mei, test_mei_progress_cancel);
    tcase_add_loop_test(mei, test_mei_window_matches_cpu, 0, 3);
    tcase_add_test(mei, test_mei_hooks_match_cpu);
    tcase_add_test(mei, test_mei_resume_matches_straight);
#ifdef ER_HAVE_VULKAN
    tcase_add_test(mei, test_mei_fail_mid_submission);
    tcase_add_test(mei, test_mei_long_run_sees_every_boundary);
#endif
    tcase_add_loop_test(mei, test_mei_maps_match_cpu, 0, N_MAP_SETS);
    tcase_add_loop_test(mei, test_mei_maps_window_matches_cpu, 0, 2);
    tcase_add_test(mei, test_mei_maps_resume_matches_cpu);
#ifdef ER_HAVE_VULKAN
#endif
    tcase_add_test(mei, test_mei_denorm_preserve_build);
    tcase_add_test(mei, test_validation_layer_silent);
    tcase_add_test(mei, test_validation_layer_counts);
    tcase_add_loop_test(mei, test_mei_tiny_maps_match_cpu, 0, N_TINY);
    tcase_add_loop_test(mei, test_droplet_tiny_maps_run, 0, N_TINY);
    suite_add_tcase(s, mei);
#ifdef ER_HAVE_VULKAN
    /* CK_RUN_CASE=band: Mei in row bands (ERODE_VK_BAND_BYTES's path) */
    TCase *band = tcase_create("band");
    tcase_set_timeout(band, 300);
    tcase_add_loop_test(band, test_mei_banded_matches_unbanded, 0, N_BAND_FIT);
    tcase_add_loop_test(band, test_mei_banded_semi_lagrangian, 0, N_BAND_FIT);
    tcase_add_loop_test(band, test_mei_banded_checkpoint_resumes_unbanded, 0, 2);
    tcase_add_test(band, test_mei_banded_fail_mid_submission);
    suite_add_tcase(s, band);
#endif
    return s;
}
