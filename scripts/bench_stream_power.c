/*
 * Stream-power benchmark: ms per step of the model at several map sizes on
 * an fBm map (value noise, 8 octaves, 10 m cells, 0..1000 m, as
 * scripts/make-terrain makes it; or a raw float32 map of its
 * .f32 output with --dem), with the parameters of the fastscapelib
 * harness (dt 1000 yr, U 1e-3 m/yr, K 1e-4, m 0.4, n 1, K_d 0.01 m^2/yr,
 * G 0), and beside it, in the same run, a baseline: the textbook loop
 * (D8 receivers, cells sorted by height for the order, drainage area,
 * explicit stream power and explicit diffusion, no depression handling).
 * One line per size, machine-readable:
 *   bench=stream_power size=1024 threads=2 steps=20 ms_per_step=...
 *   run_ms_per_step=... uplift=..% route=..% incise=..% diffuse=..%
 *   ns_per_cell=... ns_per_cell_vs_first=... baseline_ms_per_step=...
 *   speedup_vs_baseline=...
 * ms_per_step: the phases timed one by one, each step; run_ms_per_step:
 * (t(steps) - t(0)) / steps of whole runs (er_run_cpu).
 * ns_per_cell_vs_first: the time per cell against the first
 * (smallest) size, which O(n) phases keep near 1.
 * Usage: bench_stream_power [--steps N] [--threads T] [--dem FILE.f32 N] [size...]
 * (default sizes 512 1024 2048, 20 steps, all threads).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/parallel.h"
#include "../core/plan.h"
#include "../core/stream_power/sp_internal.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* fBm of bilinear value noise (smoothstep), as make_terrain.py: octaves of
 * 4, 8, ... lattice cells over the map, gain 0.5; 0..1000 m. */
static float *fbm(int n, uint64_t seed)
{
    double *h = calloc((size_t)n * n, sizeof *h);
    float *z = malloc((size_t)n * n * sizeof *z);
    if (!h || !z)
        return NULL;
    double amp = 1.0;
    for (int cells = 4; cells <= n && cells <= 512; cells *= 2, amp *= 0.5) {
        const int m = cells + 2;
        double *lat = malloc((size_t)m * m * sizeof *lat);
        if (!lat)
            return NULL;
        for (int k = 0; k < m * m; k++)
            lat[k] = (double)(splitmix(&seed) >> 11) * 0x1p-53;
        for (int y = 0; y < n; y++) {
            double ty = (y + 0.5) * cells / n;
            int iy = (int)ty;
            double fy = ty - iy;
            fy = fy * fy * (3 - 2 * fy);
            for (int x = 0; x < n; x++) {
                double tx = (x + 0.5) * cells / n;
                int ix = (int)tx;
                double fx = tx - ix;
                fx = fx * fx * (3 - 2 * fx);
                const double *r0 = lat + (size_t)iy * m, *r1 = r0 + m;
                h[(size_t)y * n + x] += amp * ((r0[ix] * (1 - fx) + r0[ix + 1] * fx) * (1 - fy) +
                                               (r1[ix] * (1 - fx) + r1[ix + 1] * fx) * fy);
            }
        }
        free(lat);
    }
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        lo = fmin(lo, h[i]);
        hi = fmax(hi, h[i]);
    }
    for (size_t i = 0; i < (size_t)n * n; i++)
        z[i] = (float)((h[i] - lo) / (hi - lo) * 1000.0);
    free(h);
    return z;
}

static float *read_f32(const char *path, int n)
{
    FILE *f = fopen(path, "rb");
    float *z = malloc((size_t)n * n * sizeof *z);
    if (!f || !z || fread(z, sizeof *z, (size_t)n * n, f) != (size_t)n * n) {
        fprintf(stderr, "bench_stream_power: cannot read %d x %d floats from %s\n", n, n, path);
        exit(1);
    }
    fclose(f);
    return z;
}

static er_params params(int steps)
{
    er_params p;
    er_params_default(&p);
    p.model = ER_MODEL_STREAM_POWER;
    p.stream_power.steps = steps;
    p.stream_power.dt = 1000.0;
    p.stream_power.uplift = 1e-3;
    p.stream_power.k = 1e-4;
    p.stream_power.m = 0.4;
    p.stream_power.n = 1.0;
    p.stream_power.kd = 0.01;
    p.stream_power.g = 0.0;
    return p;
}


/* The baseline step: D8 receivers, the cells sorted by height (highest
 * first) as the order, drainage area, explicit stream power, explicit
 * diffusion; the edges fixed.  Not conservative, not stable beyond the
 * CFL limit: only its cost counts. */
typedef struct base {
    int n;
    double *z, *a, *zn;
    int32_t *rcv, *ord;
    double *dist;
} base;

static const double *sort_z;
static int cmp_desc_global(const void *pa, const void *pb)
{
    double x = sort_z[*(const int32_t *)pa], y = sort_z[*(const int32_t *)pb];
    return x > y ? -1 : x < y;
}

static void base_step(base *b, const er_stream_power_params *p, double cell)
{
    const int n = b->n;
    const size_t nn = (size_t)n * n;
    for (int y = 1; y < n - 1; y++)
        for (int x = 1; x < n - 1; x++) {
            size_t i = (size_t)y * n + x;
            b->z[i] += p->uplift * p->dt;
        }
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            size_t i = (size_t)y * n + x;
            int32_t r = (int32_t)i;
            double best = 0.0, d = 0.0;
            if (x > 0 && y > 0 && x < n - 1 && y < n - 1)
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        size_t j = i + (size_t)((ptrdiff_t)dy * n + dx);
                        double l = (dx && dy) ? cell * sqrt(2.0) : cell;
                        double s = (b->z[i] - b->z[j]) / l;
                        if (s > best) {
                            best = s;
                            r = (int32_t)j;
                            d = l;
                        }
                    }
            b->rcv[i] = r;
            b->dist[i] = d;
            b->ord[i] = (int32_t)i;
            b->a[i] = cell * cell;
        }
    sort_z = b->z;
    qsort(b->ord, nn, sizeof *b->ord, cmp_desc_global);
    for (size_t k = 0; k < nn; k++) {
        int32_t i = b->ord[k];
        if (b->rcv[i] != i)
            b->a[b->rcv[i]] += b->a[i];
    }
    for (size_t k = nn; k-- > 0;) {
        int32_t i = b->ord[k], r = b->rcv[i];
        if (r != i)
            b->z[i] -= p->dt * p->k * pow(b->a[i], p->m) * (b->z[i] - b->z[r]) / b->dist[i];
    }
    const double th = p->kd * p->dt / (cell * cell);
    memcpy(b->zn, b->z, nn * sizeof *b->zn);
    for (int y = 1; y < n - 1; y++)
        for (int x = 1; x < n - 1; x++) {
            size_t i = (size_t)y * n + x;
            b->zn[i] = b->z[i] + th * (b->z[i - 1] + b->z[i + 1] + b->z[i - n] + b->z[i + n] -
                                       4 * b->z[i]);
        }
    double *t = b->z;
    b->z = b->zn;
    b->zn = t;
}

static double baseline_ms(const float *z0, int n, int steps)
{
    const size_t nn = (size_t)n * n;
    base b = {n, malloc(nn * 8), malloc(nn * 8), malloc(nn * 8), malloc(nn * 4), malloc(nn * 4),
              malloc(nn * 8)};
    if (!b.z || !b.a || !b.zn || !b.rcv || !b.ord || !b.dist)
        return -1;
    for (size_t i = 0; i < nn; i++)
        b.z[i] = z0[i];
    er_params p = params(steps);
    double t0 = now();
    for (int s = 0; s < steps; s++)
        base_step(&b, &p.stream_power, 10.0);
    double ms = (now() - t0) * 1000.0 / steps;
    free(b.z);
    free(b.a);
    free(b.zn);
    free(b.rcv);
    free(b.ord);
    free(b.dist);
    return ms;
}

/* Whole runs of `steps` steps on a copy of z0: seconds. */
static double run_seconds(const float *z0, int n, int steps)
{
    const size_t nn = (size_t)n * n;
    float *z = malloc(nn * sizeof *z);
    if (!z)
        return -1;
    memcpy(z, z0, nn * sizeof *z);
    er_terrain t = {n, n, z, NULL, 10.0, 10.0, NULL};
    er_params p = params(steps);
    er_budget bud;
    er_error err;
    double t0 = now();
    er_status st = er_run_cpu(&p, &t, NULL, &(er_run_opts){NULL, NULL, NULL, &bud}, &err);
    double sec = now() - t0;
    free(z);
    if (st) {
        fprintf(stderr, "bench_stream_power: %s\n", err.msg);
        exit(1);
    }
    return sec;
}

int main(int argc, char **argv)
{
    int steps = 20, nsizes = 0, sizes[16], threads = 0, dem_n = 0;
    const char *dem = NULL;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--steps") == 0 && k + 1 < argc)
            steps = atoi(argv[++k]);
        else if (strcmp(argv[k], "--threads") == 0 && k + 1 < argc)
            threads = atoi(argv[++k]);
        else if (strcmp(argv[k], "--dem") == 0 && k + 2 < argc) {
            dem = argv[++k];
            dem_n = atoi(argv[++k]);
        } else if (nsizes < 16)
            sizes[nsizes++] = atoi(argv[k]);
    }
    if (dem) {
        nsizes = 1;
        sizes[0] = dem_n;
    } else if (nsizes == 0) {
        sizes[0] = 512;
        sizes[1] = 1024;
        sizes[2] = 2048;
        nsizes = 3;
    }
#ifdef _OPENMP
    if (threads > 0)
        omp_set_num_threads(threads);
#endif
    double first = 0.0;
    for (int si = 0; si < nsizes; si++) {
        const int n = sizes[si];
        float *z0 = dem ? read_f32(dem, n) : fbm(n, 1);
        if (!z0)
            return 1;
        /* the phases one by one */
        float *z = malloc((size_t)n * n * sizeof *z);
        memcpy(z, z0, (size_t)n * n * sizeof *z);
        er_terrain t = {n, n, z, NULL, 10.0, 10.0, NULL};
        er_params p = params(steps);
        er_plan plan;
        er_error err;
        er_sp_sim s;
        if (er_plan_make(&p, &t, NULL, &plan, &err) || er_sp_init(&s, &plan, &t, NULL, &err)) {
            fprintf(stderr, "bench_stream_power: %s\n", err.msg);
            return 1;
        }
        double ph[4] = {0, 0, 0, 0};
        for (int k = 0; k < steps; k++) {
            er_sp_tally tal = {0, 0, 0, 0};
            double t0 = now();
            er_sp_uplift(&s, &p.stream_power);
            double t1 = now();
            if (er_sp_route(&s, 0, &err)) {
                fprintf(stderr, "bench_stream_power: %s\n", err.msg);
                return 1;
            }
            double t2 = now();
            er_sp_incise(&s, &p.stream_power, &tal);
            double t3 = now();
            er_sp_diffuse(&s, &p.stream_power, &tal);
            double t4 = now();
            ph[0] += t1 - t0;
            ph[1] += t2 - t1;
            ph[2] += t3 - t2;
            ph[3] += t4 - t3;
        }
        er_sp_free(&s);
        free(z);
        const double total = ph[0] + ph[1] + ph[2] + ph[3];
        const double ms = total * 1000.0 / steps;
        /* whole runs: t(steps) - t(0) */
        const double r0 = run_seconds(z0, n, 0), r1 = run_seconds(z0, n, steps);
        const double run_ms = (r1 - r0) * 1000.0 / steps;
        const double ns_cell = ms * 1e6 / ((double)n * n);
        if (si == 0)
            first = ns_cell;
        const double base_ms = baseline_ms(z0, n, steps < 5 ? steps : 5);
        printf("bench=stream_power size=%d threads=%d steps=%d ms_per_step=%.1f run_ms_per_step=%.1f "
               "uplift=%.1f%% route=%.1f%% incise=%.1f%% diffuse=%.1f%% ns_per_cell=%.1f "
               "ns_per_cell_vs_first=%.2f baseline_ms_per_step=%.1f speedup_vs_baseline=%.2f\n",
               n, er_thread_count(), steps, ms, run_ms, 100 * ph[0] / total, 100 * ph[1] / total,
               100 * ph[2] / total, 100 * ph[3] / total, ns_cell, ns_cell / first, base_ms,
               base_ms / ms);
        fflush(stdout);
        free(z0);
    }
    return 0;
}
