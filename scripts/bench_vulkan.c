/*
 * Speed of the Mei model on the Vulkan backend against the CPU path in
 * the same run (these machines are noisy).  One machine-readable line per
 * map size:
 *
 *   bench=mei_vulkan size=1024 device="..." maps=0 steps=2,12
 *       vk_ms_per_step=... vk_from=difference|direct kernel_ms_per_step=...|n/a
 *       submit_ms_per_step=... cpu_ms_per_step=... cpu_from=... cpu_threads=...
 *       speedup=... submissions=... steps_per_submission=... max_steps_per_submission=...
 *       bands=... open_s=... pipelines_s=... upload_s=... readback_s=... run_s=...
 *       inv_flux=... (one inv_NAME per kernel)
 *   bench=mei_vulkan size=8192 device="..." status=refused reason="..."
 *   bench=vulkan_fixed size=4096 cold_pipelines_s=... cold_cache_used=0 cold_s=...
 *       warm_pipelines_s=... warm_cache_used=1 warm_s=... zero_step_pipelines_s=...
 *       zero_step_cache_used=1 zero_step_s=... zero_step_open_s=... zero_step_upload_s=...
 *       zero_step_readback_s=... cache_bytes=...
 *
 * Each path runs N1 and N2 steps (steps=N1,N2) and a figure per step is
 * (time of N2 steps - time of N1 steps) / (N2 - N1), by the wall clock of
 * the whole run (set-up, upload, read-back included alike), when that
 * difference is positive and at least a quarter of the N2 run
 * (from=difference); otherwise the fixed cost's noise would swamp it, and
 * the line gives the direct figure instead (from=direct: Vulkan, the wall
 * time of the N2 run's step submissions over N2; CPU, the N2 run over N2).
 * kernel_ms_per_step is from GPU timestamps at the start and end of every
 * submission's command buffer (n/a where the queue has none: never a
 * guess); submit_ms_per_step the wall time of those submissions, waits
 * included.  open_s is the instance and device, pipelines_s the buffers and
 * pipelines, upload_s the inputs' upload, readback_s the final read-back,
 * run_s the N2 run, all by the wall clock.  inv_NAME is one dispatch's
 * invocations (workgroups x local size), for the kernels the run uses.  speedup = cpu / vk ms per step.
 * The recipe is the default one on a rough 30 m landscape.  Without Vulkan
 * or a device it prints one line with status=unavailable.
 *
 * The vulkan_fixed line is the fixed cost at 4096^2 (1024^2
 * with --quick), each figure from er_vk_open to er_vk_close: a 1-step Mei
 * run with an empty pipeline cache (cold: its kernels compiled, as they
 * are at their first dispatch), the same with the cache the cold run
 * saved (warm), then a 0-step run (zero_step: nothing compiled), with
 * XDG_CACHE_HOME pointed at an empty temporary directory so that a
 * driver's own disk cache there (Mesa's) starts cold too.  PREFIX_s is the
 * wall time of open, run and close; no file is read or written, and
 * XDG_CACHE_HOME is restored afterwards.
 *
 * --maps runs every run with all four control maps (core/controls.h:
 * random hardness, rain and mask, a sources raster on one cell in 64), to
 * measure their cost against a run without.  --steps N1,N2 sets the step
 * counts for every size (default: by the device, see steps_for).
 *
 * bands is the row bands the Mei state was cut into (1: one buffer a
 * layer); ERODE_VK_BAND_BYTES caps the layer buffers as for erode, to
 * measure the banded path on any device.
 *
 * Usage: bench_vulkan [--quick] [--maps] [--device N] [--steps N1,N2]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../core/backend.h"
#include "../core/model.h"
#include "../core/rng.h"
#ifdef ER_HAVE_VULKAN
/* the run's counters (er_vk_stats): a benchmark may look inside */
#include "../core/vulkan/vk.h"
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Smooth random relief, 0..400 m: three octaves of bilinear lattices. */
static void make_terrain(float *z, int n)
{
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            double h = 0.0, amp = 200.0;
            int cell = n / 4;
            for (int o = 0; o < 3 && cell >= 2; o++, amp *= 0.5, cell /= 4) {
                int gx = x / cell, gy = y / cell;
                double fx = (double)(x % cell) / cell, fy = (double)(y % cell) / cell;
                uint64_t s = 100 + (uint64_t)o, r0 = (uint64_t)gy * 100003u, r1 = r0 + 100003u;
                double v00 = er_rng_unit(7, s, r0 + (uint64_t)gx);
                double v10 = er_rng_unit(7, s, r0 + (uint64_t)gx + 1);
                double v01 = er_rng_unit(7, s, r1 + (uint64_t)gx);
                double v11 = er_rng_unit(7, s, r1 + (uint64_t)gx + 1);
                h += amp * ((v00 * (1 - fx) + v10 * fx) * (1 - fy) + (v01 * (1 - fx) + v11 * fx) * fy);
            }
            z[(size_t)y * (size_t)n + (size_t)x] = (float)h;
        }
}

/* The four control maps of --maps, n * n floats each (the caller frees
 * map[0]); NULL when out of memory. */
static float *make_maps(int n, er_controls *c)
{
    size_t cells = (size_t)n * (size_t)n;
    float *m = malloc(4 * cells * sizeof(float));
    if (!m)
        return NULL;
    for (size_t i = 0; i < cells; i++) {
        m[i] = (float)er_rng_unit(9, 1, i);                        /* hardness */
        m[cells + i] = (float)(2.0 * er_rng_unit(9, 2, i));        /* rain */
        m[2 * cells + i] = (float)(0.5 + 0.5 * er_rng_unit(9, 3, i)); /* mask */
        m[3 * cells + i] = i % 64 == 0 ? 1e-4f : 0.0f;             /* sources [m/s] */
    }
    *c = (er_controls){ m, m + cells, m + 2 * cells, m + 3 * cells, NULL };
    return m;
}

/* Seconds for one run of `steps` steps on a copy of z; vk NULL = CPU;
 * c the control maps (NULL: none). */
static double run(er_vk_ctx *vk, const float *z, int n, int steps, const er_controls *c,
                  er_error *err, er_status *st)
{
    size_t cells = (size_t)n * (size_t)n;
    float *b = malloc(cells * sizeof(float));
    if (!b) {
        *st = er_fail(err, ER_ENOMEM, "out of memory");
        return 0.0;
    }
    memcpy(b, z, cells * sizeof(float));
    er_params p;
    er_params_default(&p);
    p.mei.steps = steps;
    er_terrain t = { n, n, b, NULL, 30.0, 30.0, c };
    er_budget bud;
    double t0 = now();
    *st = vk ? er_run_vk(vk, &p, &t, &(er_run_opts){NULL, NULL, NULL, &bud}, err)
             : er_run_cpu(&p, &t, NULL, &(er_run_opts){NULL, NULL, NULL, &bud}, err);
    double sec = now() - t0;
    free(b);
    return sec;
}

/* Step counts N1 < N2: enough on a GPU that N2 - N1 steps outweigh the
 * noise of a second of set-up; few on a CPU device (lavapipe: ~0.1 s a
 * 1024^2 step). */
static void steps_for(const er_vk_ctx *vk, int n, int quick, int s[2])
{
    int cpu_dev = er_vk_info(vk)->type == ER_VK_TYPE_CPU;
    int i = n <= 1024 ? 0 : n <= 4096 ? 1 : 2;
    static const int gpu[3][2] = { { 10, 1010 }, { 10, 410 }, { 5, 45 } };
    static const int lvp[3][2] = { { 2, 12 }, { 1, 3 }, { 1, 2 } };
    s[0] = cpu_dev ? lvp[i][0] : gpu[i][0];
    s[1] = cpu_dev ? lvp[i][1] : gpu[i][1];
    if (quick)
        s[1] = s[0] + (s[1] - s[0]) / 4 + 1;
}

/* ms per step from runs of s[0] and s[1] steps taking t[0], t[1] s:
 * the difference when positive and a quarter of t[1] or more, else
 * `direct` (*from says which). */
static double per_step(const int s[2], const double t[2], double direct, const char **from)
{
    double d = t[1] - t[0];
    if (d > 0.0 && d >= 0.25 * t[1]) {
        *from = "difference";
        return 1e3 * d / (s[1] - s[0]);
    }
    *from = "direct";
    return direct;
}

#ifdef ER_HAVE_VULKAN
/* The Vulkan half of a line: the counters of the last (N2) run. */
static void print_vk_stats(const er_vk_ctx *vk, int steps)
{
    const er_vk_stats *v = &vk->stats;
    if (v->gpu_timed)
        printf(" kernel_ms_per_step=%.4f", 1e3 * v->gpu_s / steps);
    else
        printf(" kernel_ms_per_step=n/a");
    printf(" submit_ms_per_step=%.4f submissions=%lld steps_per_submission=%.1f "
           "max_steps_per_submission=%lld bands=%d pipelines_s=%.3f upload_s=%.3f "
           "readback_s=%.3f",
           1e3 * v->steps_s / steps, (long long)v->submissions,
           v->submissions ? (double)v->steps / (double)v->submissions : 0.0,
           (long long)v->max_steps, v->bands, v->pipeline_s, v->upload_s, v->readback_s);
    for (int k = 0; k < v->n_kernels; k++)
        if (v->kernel[k].invocations) /* 0: not dispatched in this run */
            printf(" inv_%s=%llu", v->kernel[k].name, (unsigned long long)v->kernel[k].invocations);
}
#else
static void print_vk_stats(const er_vk_ctx *vk, int steps)
{
    (void)vk;
    (void)steps;
}
#endif

/* The direct Vulkan figure: the N2 run's submissions over its steps. */
static double vk_direct_ms(const er_vk_ctx *vk, int steps, double run_s)
{
#ifdef ER_HAVE_VULKAN
    (void)run_s;
    return 1e3 * vk->stats.steps_s / steps;
#else
    (void)vk;
    return 1e3 * run_s / steps;
#endif
}

/* One map size: both paths, one line. */
static void bench_size(er_vk_ctx *vk, const char *dev, int n, int quick, int maps,
                       const int *steps_set, double open_s)
{
    er_error err = { { 0 } };
    er_params p;
    er_params_default(&p);
    er_terrain probe = { n, n, NULL, NULL, 30.0, 30.0, NULL };
    if (er_backend_vulkan.check(vk, &(er_plan){.p = p}, &probe, &err) != ER_OK) {
        printf("bench=mei_vulkan size=%d device=\"%s\" status=refused reason=\"%s\"\n", n, dev,
               err.msg);
        return;
    }
    int s[2];
    steps_for(vk, n, quick, s);
    if (steps_set)
        memcpy(s, steps_set, sizeof s);
    float *z = malloc((size_t)n * (size_t)n * sizeof(float));
    if (!z) {
        printf("bench=mei_vulkan size=%d status=refused reason=\"host out of memory\"\n", n);
        return;
    }
    make_terrain(z, n);
    er_controls cm, *c = NULL;
    float *mp = maps ? make_maps(n, &cm) : NULL;
    if (mp)
        c = &cm;
    er_status st = ER_OK;
    double v[2] = { 0, 0 }, cp[2] = { 0, 0 };
    for (int i = 0; i < 2 && !st; i++)
        v[i] = run(vk, z, n, s[i], c, &err, &st);
    double vk_direct = st ? 0.0 : vk_direct_ms(vk, s[1], v[1]);
    if (st) {
        printf("bench=mei_vulkan size=%d device=\"%s\" status=failed reason=\"%s\"\n", n, dev,
               err.msg);
    } else {
        const char *vfrom, *cfrom;
        double vk_ms = per_step(s, v, vk_direct, &vfrom);
        printf("bench=mei_vulkan size=%d device=\"%s\" maps=%d steps=%d,%d vk_ms_per_step=%.4f "
               "vk_from=%s run_s=%.3f open_s=%.3f", n, dev, c != NULL, s[0], s[1], vk_ms, vfrom,
               v[1], open_s);
        print_vk_stats(vk, s[1]);
        for (int i = 0; i < 2 && !st; i++)
            cp[i] = run(NULL, z, n, s[i], c, &err, &st);
        double cpu_ms = per_step(s, cp, 1e3 * cp[1] / s[1], &cfrom);
        int threads = 1;
#ifdef _OPENMP
        threads = omp_get_max_threads();
#endif
        printf(" cpu_ms_per_step=%.4f cpu_from=%s cpu_threads=%d speedup=%.3f\n", cpu_ms, cfrom,
               threads, vk_ms > 0 ? cpu_ms / vk_ms : 0.0);
    }
    fflush(stdout);
    free(z);
    free(mp);
}

#ifdef ER_HAVE_VULKAN
/* One open-run-close of a `steps`-step run at n^2 with the cache bytes
 * *cache (replaced by what the run saved); prints PREFIX_*_s figures, all
 * of them when `all`, else the pipelines' and the whole wall time. */
static int fixed_once(int device, int n, int steps, const float *z, const char *prefix, int all,
                      void **cache, size_t *cache_size)
{
    er_vk_options o = { device, 0 };
    er_vk_ctx *vk = NULL;
    er_error err = { { 0 } };
    er_status st;
    double t0 = now();
    if (er_vk_open_cached(&o, *cache, *cache_size, &vk, &err) != ER_OK)
        return 0;
    double open_s = now() - t0;
    int warm = er_vk_cache_warm(vk);
    run(vk, z, n, steps, NULL, &err, &st);
    void *saved = NULL;
    size_t saved_size = 0;
    if (!st && er_vk_cache_save(vk, &saved, &saved_size, &err) == ER_OK && saved) {
        free(*cache);
        *cache = saved;
        *cache_size = saved_size;
    }
    er_vk_stats v = vk->stats;
    er_vk_close(vk);
    if (st)
        return 0;
    printf(" %s_pipelines_s=%.3f %s_cache_used=%d %s_s=%.3f", prefix, v.pipeline_s, prefix, warm,
           prefix, now() - t0);
    if (all)
        printf(" %s_open_s=%.3f %s_upload_s=%.3f %s_readback_s=%.3f", prefix, open_s, prefix,
               v.upload_s, prefix, v.readback_s);
    return 1;
}

/* The vulkan_fixed line: one step cold, one step warm, 0 steps warm. */
static void bench_fixed(int device, int n)
{
    char dir[] = "/tmp/bench-vk-cache-XXXXXX";
    float *z = malloc((size_t)n * (size_t)n * sizeof(float));
    void *cache = NULL;
    size_t cache_size = 0;
    if (!z || !mkdtemp(dir)) {
        free(z);
        return;
    }
    const char *xdg = getenv("XDG_CACHE_HOME");
    char *old = xdg ? strdup(xdg) : NULL;
    setenv("XDG_CACHE_HOME", dir, 1);
    make_terrain(z, n);
    printf("bench=vulkan_fixed size=%d", n);
    if (fixed_once(device, n, 1, z, "cold", 0, &cache, &cache_size) &&
        fixed_once(device, n, 1, z, "warm", 0, &cache, &cache_size))
        fixed_once(device, n, 0, z, "zero_step", 1, &cache, &cache_size);
    printf(" cache_bytes=%zu\n", cache_size);
    fflush(stdout);
    if (old)
        setenv("XDG_CACHE_HOME", old, 1);
    else
        unsetenv("XDG_CACHE_HOME");
    free(old);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_vulkan: could not remove %s\n", dir);
    free(cache);
    free(z);
}
#else
static void bench_fixed(int device, int n)
{
    (void)device;
    (void)n;
}
#endif

int main(int argc, char **argv)
{
    int quick = 0, maps = 0, device = 0, steps[2], *steps_set = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--maps") == 0)
            maps = 1;
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            device = atoi(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc &&
                 sscanf(argv[++i], "%d,%d", &steps[0], &steps[1]) == 2 && steps[0] >= 0 &&
                 steps[1] > steps[0])
            steps_set = steps;
    }
    er_vk_options o = { device, 0 };
    er_vk_ctx *vk = NULL;
    er_error err = { { 0 } };
    double t0 = now();
    if (er_vk_open(&o, &vk, &err) != ER_OK) {
        printf("bench=mei_vulkan status=unavailable reason=\"%s\"\n", err.msg);
        return 0;
    }
    er_vk_close(vk);
    bench_fixed(device, quick ? 1024 : 4096);
    t0 = now();
    if (er_vk_open(&o, &vk, &err) != ER_OK) {
        printf("bench=mei_vulkan status=unavailable reason=\"%s\"\n", err.msg);
        return 0;
    }
    double open_s = now() - t0;
    /* as erode reads it: the banded path's cost on any device */
    const char *band = getenv("ERODE_VK_BAND_BYTES");
    if (band)
        er_vk_set_buffer_cap(vk, strtoull(band, NULL, 10));
    const char *dev = er_vk_info(vk)->name;
    const int sizes[3] = { 1024, 4096, 8192 };
    for (int i = 0; i < 3; i++)
        bench_size(vk, dev, sizes[i], quick, maps, steps_set, open_s);
    er_vk_close(vk);
    return 0;
}
