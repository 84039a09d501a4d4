/*
 * Speed of the Mei model (er_run_cpu) against the machine's memory
 * bandwidth.  Prints one machine-readable line per case:
 *
 *   bench=copy bytes=... gb_per_s=...
 *   bench=mei size=1024 threads=2 steps=... ns_per_cell_step=... ms_per_step=...
 *       floor_ms=... ratio_to_floor=... cpu_ms_per_step=... [contended=1 VAR=value]
 *
 * The floor is the least a step must move: 7 floats read and 7 written per
 * cell (b, d, s and the four fluxes) at the measured copy bandwidth (a
 * memcpy of a buffer much larger than the last-level cache, best of
 * several; memcpy reads and writes each byte once, like a step).
 *
 * A step's time is the median over the windows of two steps of one run,
 * timed between steps from the progress callback (two steps that run as
 * one sweep report their ends together).  cpu_ms_per_step is the
 * process's CPU time per step (all threads, spin-waiting included): on a
 * busy machine it shows the work apart from the waiting.
 *
 * "Contended" runs two threads while a child process spins on one core,
 * the situation where spinning OpenMP threads collapse; the parent re-runs
 * itself with OMP_WAIT_POLICY=active and =passive and with a short
 * GOMP_SPINCOUNT (libgomp reads them once, at start-up) to compare.
 *
 * Usage: bench_mei [--quick]        all cases (about 1-2 minutes)
 *        bench_mei --one SIZE THREADS STEPS [contended]   one case
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../core/model.h"
#include "../core/plan.h"
#include "../core/rng.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the whole process (all threads, spinning included). */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double g_cpu; /* CPU seconds per step (median) of the last time_run */

/* Copy bandwidth in bytes/s: memcpy of 2 x 512 MiB, best of 5 (counting
 * the bytes read plus the bytes written). */
static double copy_bandwidth(size_t bytes)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    if (!a || !b) {
        free(a);
        free(b);
        return 0.0;
    }
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        memcpy(b, a, bytes);
        double t = now() - t0;
        if (t < best)
            best = t;
        a[r] = b[bytes - 1 - (size_t)r]; /* keep the copies observable */
    }
    volatile char sink = a[0];
    (void)sink;
    free(a);
    free(b);
    return 2.0 * (double)bytes / best;
}

/* A rough landscape: sum of random cosine-free ridges (smooth noise by
 * bilinear interpolation of random lattices, three octaves), 0..400 m over
 * 30 m cells. */
static void make_terrain(float *z, int n)
{
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            double h = 0.0, amp = 200.0;
            int cell = n / 4;
            for (int o = 0; o < 3 && cell >= 2; o++, amp *= 0.5, cell /= 4) {
                int gx = x / cell, gy = y / cell;
                double fx = (double)(x % cell) / cell, fy = (double)(y % cell) / cell;
                double v00 = er_rng_unit(7, 100 + (uint64_t)o, (uint64_t)gy * 100003u + (uint64_t)gx);
                double v10 = er_rng_unit(7, 100 + (uint64_t)o, (uint64_t)gy * 100003u + (uint64_t)gx + 1);
                double v01 = er_rng_unit(7, 100 + (uint64_t)o, (uint64_t)(gy + 1) * 100003u + (uint64_t)gx);
                double v11 = er_rng_unit(7, 100 + (uint64_t)o, (uint64_t)(gy + 1) * 100003u + (uint64_t)gx + 1);
                double v = (v00 * (1 - fx) + v10 * fx) * (1 - fy) + (v01 * (1 - fx) + v11 * fx) * fy;
                h += amp * v;
            }
            z[(size_t)y * (size_t)n + (size_t)x] = (float)h;
        }
}

/* Step times, taken by the progress callback (called between steps). */
typedef struct clock_log {
    double *wall, *cpu;
    int n, cap;
} clock_log;

static int on_step(void *user, double fraction)
{
    clock_log *l = user;
    (void)fraction;
    if (l->n < l->cap) {
        l->wall[l->n] = now();
        l->cpu[l->n] = cpu_now();
        l->n++;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of (t[i + 2] - t[i]) / 2 over t[0..n): the time of a step from
 * windows of two.  The model runs two steps in one sweep where it can
 * (core/mei/mei.c) and reports them together, so single differences
 * alternate between about 0 and two steps; every window of two spans one
 * sweep of two. */
static double median_step(const double *t, int n)
{
    if (n < 3)
        return n == 2 ? t[1] - t[0] : 0.0;
    double *d = malloc((size_t)(n - 2) * sizeof(double));
    for (int i = 0; i + 2 < n; i++)
        d[i] = 0.5 * (t[i + 2] - t[i]);
    qsort(d, (size_t)(n - 2), sizeof(double), cmp_double);
    double m = d[(n - 2) / 2];
    free(d);
    return m;
}

/* Seconds per step on an n x n map with the default recipe: the median
 * of the single steps of one run (timed between steps by the progress
 * callback, so the allocation, first touch and final copy are not in it,
 * and a step slowed down by another process does not skew it). */
static double time_run(int n, int steps)
{
    size_t cells = (size_t)n * (size_t)n;
    float *z = malloc(cells * sizeof(float));
    clock_log log = { malloc((size_t)(steps + 1) * sizeof(double)),
                      malloc((size_t)(steps + 1) * sizeof(double)), 0, steps + 1 };
    if (!z || !log.wall || !log.cpu) {
        fprintf(stderr, "bench_mei: out of memory for %d^2\n", n);
        exit(1);
    }
    make_terrain(z, n);
    er_params p;
    er_params_default(&p);
    p.mei.steps = steps;
    er_terrain t = { n, n, z, NULL, 30.0, 30.0, NULL };
    er_run_ctl ctl = { on_step, &log };
    er_budget bud;
    er_error err;
    if (er_run_cpu(&p, &t, NULL, &(er_run_opts){NULL, &ctl, NULL, &bud}, &err) != ER_OK) {
        fprintf(stderr, "bench_mei: %s\n", err.msg);
        exit(1);
    }
    double wall = median_step(log.wall, log.n);
    g_cpu = median_step(log.cpu, log.n);
    free(z);
    free(log.wall);
    free(log.cpu);
    return wall;
}

static void set_threads(int threads)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

static double g_bandwidth;

static void one_case(int n, int threads, int steps, int contended)
{
    pid_t hog = -1;
    set_threads(threads);
    if (contended) {
        hog = fork();
        if (hog == 0) {
            volatile unsigned long spin = 0;
            for (;;)
                spin++;
        }
    }
    double sec = time_run(n, steps);
    if (hog > 0) {
        kill(hog, SIGKILL);
        waitpid(hog, NULL, 0);
    }
    double cells = (double)n * (double)n;
    double floor_s = g_bandwidth > 0 ? cells * 14.0 * 4.0 / g_bandwidth : 0.0;
    const char *env = getenv("BENCH_MEI_ENV");
    const char *pol = getenv(env ? env : "OMP_WAIT_POLICY");
    printf("bench=mei size=%d threads=%d steps=%d ns_per_cell_step=%.3f ms_per_step=%.3f "
           "floor_ms=%.3f ratio_to_floor=%.2f cpu_ms_per_step=%.3f",
           n, threads, steps, 1e9 * sec / cells, 1e3 * sec, 1e3 * floor_s,
           floor_s > 0 ? sec / floor_s : 0.0, 1e3 * g_cpu);
    if (contended)
        printf(" contended=1 %s=%s", env ? env : "OMP_WAIT_POLICY", pol && *pol ? pol : "default");
    printf("\n");
    fflush(stdout);
}

/* Runs this program again with one environment variable set. */
static void rerun(const char *self, const char *env, const char *val, const char *size,
                  const char *steps)
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv(env, val, 1);
        setenv("BENCH_MEI_ENV", env, 1);
        char bw[64];
        snprintf(bw, sizeof bw, "%.0f", g_bandwidth);
        setenv("BENCH_MEI_BANDWIDTH", bw, 1);
        execl(self, self, "--one", size, "2", steps, "contended", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
    const char *bw = getenv("BENCH_MEI_BANDWIDTH");
    if (argc >= 5 && strcmp(argv[1], "--one") == 0) {
        g_bandwidth = bw ? atof(bw) : copy_bandwidth((size_t)512 << 20);
        one_case(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
                 argc > 5 && strcmp(argv[5], "contended") == 0);
        return 0;
    }
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    g_bandwidth = copy_bandwidth((size_t)512 << 20);
    printf("bench=copy bytes=%zu gb_per_s=%.2f\n", (size_t)512 << 20, g_bandwidth / 1e9);
    fflush(stdout);
    const int sizes[2] = { 1024, 4096 };
    const int steps[2] = { quick ? 20 : 100, quick ? 3 : 10 };
    for (int i = 0; i < 2; i++)
        for (int th = 1; th <= 2; th++)
            one_case(sizes[i], th, steps[i], 0);
    /* contended: default policy in this process, then both policies */
    one_case(512, 2, quick ? 20 : 100, 1);
    rerun(argv[0], "OMP_WAIT_POLICY", "active", "512", quick ? "20" : "100");
    rerun(argv[0], "OMP_WAIT_POLICY", "passive", "512", quick ? "20" : "100");
    rerun(argv[0], "GOMP_SPINCOUNT", "10000", "512", quick ? "20" : "100");
    rerun(argv[0], "OMP_WAIT_POLICY", "passive", "1024", quick ? "10" : "50");
    return 0;
}
