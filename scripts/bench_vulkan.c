/*
 * Speed of the Mei model on the Vulkan backend against the CPU path in
 * the same run (these machines are noisy).  One machine-readable line per
 * map size:
 *
 *   bench=mei_vulkan size=1024 device="..." maps=0 steps=... vk_ms_per_step=...
 *       cpu_ms_per_step=... cpu_threads=... speedup=...
 *   bench=mei_vulkan size=8192 device="..." status=refused reason="..."
 *
 * ms per step is (time of a run of S steps - time of a run of 0 steps) / S
 * for both paths, so set-up, upload and the final read-back are left out
 * alike.  speedup = cpu_ms_per_step / vk_ms_per_step.  The recipe is the
 * default one on a rough 30 m landscape.  Without Vulkan or a device it
 * prints one line with status=unavailable.
 *
 * --maps runs every run with all four control maps (core/controls.h:
 * random hardness, rain and mask, a sources raster on one cell in 64), to
 * measure their cost against a run without.
 *
 * Usage: bench_vulkan [--quick] [--maps] [--device N]
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
    *c = (er_controls){ m, m + cells, m + 2 * cells, m + 3 * cells };
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

int main(int argc, char **argv)
{
    int quick = 0, maps = 0, device = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--maps") == 0)
            maps = 1;
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            device = atoi(argv[++i]);
    }
    er_vk_options o = { device, 0 };
    er_vk_ctx *vk = NULL;
    er_error err = { { 0 } };
    if (er_vk_open(&o, &vk, &err) != ER_OK) {
        printf("bench=mei_vulkan status=unavailable reason=\"%s\"\n", err.msg);
        return 0;
    }
    const char *dev = er_vk_info(vk)->name;
    const int sizes[3] = { 1024, 4096, 8192 };
    for (int i = 0; i < 3; i++) {
        int n = sizes[i];
        int steps = n == 1024 ? (quick ? 10 : 40) : (quick ? 2 : 5);
        er_params p;
        er_params_default(&p);
        er_terrain probe = { n, n, NULL, NULL, 30.0, 30.0, NULL };
        if (er_vk_mei_check(vk, &(er_plan){.p = p}, &probe, &err) != ER_OK) {
            printf("bench=mei_vulkan size=%d device=\"%s\" status=refused reason=\"%s\"\n", n,
                   dev, err.msg);
            fflush(stdout);
            continue;
        }
        float *z = malloc((size_t)n * (size_t)n * sizeof(float));
        if (!z) {
            printf("bench=mei_vulkan size=%d status=refused reason=\"host out of memory\"\n", n);
            continue;
        }
        make_terrain(z, n);
        er_controls cm, *c = NULL;
        float *mp = maps ? make_maps(n, &cm) : NULL;
        if (mp)
            c = &cm;
        er_status st;
        double v0 = run(vk, z, n, 0, c, &err, &st);
        double v1 = st == ER_OK ? run(vk, z, n, steps, c, &err, &st) : 0.0;
        if (st != ER_OK) {
            printf("bench=mei_vulkan size=%d device=\"%s\" status=failed reason=\"%s\"\n", n,
                   dev, err.msg);
            free(z);
            free(mp);
            continue;
        }
        double c0 = run(NULL, z, n, 0, c, &err, &st);
        double c1 = run(NULL, z, n, steps, c, &err, &st);
        double vk_ms = 1e3 * (v1 - v0) / steps, cpu_ms = 1e3 * (c1 - c0) / steps;
        int threads = 1;
#ifdef _OPENMP
        threads = omp_get_max_threads();
#endif
        printf("bench=mei_vulkan size=%d device=\"%s\" maps=%d steps=%d vk_ms_per_step=%.3f "
               "cpu_ms_per_step=%.3f cpu_threads=%d speedup=%.3f\n",
               n, dev, c != NULL, steps, vk_ms, cpu_ms, threads,
               vk_ms > 0 ? cpu_ms / vk_ms : 0.0);
        fflush(stdout);
        free(z);
        free(mp);
    }
    er_vk_close(vk);
    return 0;
}
