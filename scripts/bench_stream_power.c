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
 *   speedup_vs_baseline=... uplift_ms=... receivers_ms=...
 *   depressions_ms=... accumulate_ms=... incise_ms=... diffuse_ms=...
 * ms_per_step: the phases timed one by one, each step (route: receivers,
 * depressions and accumulate, sp_internal.h er_sp_route); the *_ms: each
 * phase's ms a step; run_ms_per_step: (t(steps) - t(0)) / steps of whole
 * runs (er_run_cpu).  ns_per_cell_vs_first: the time per cell against the
 * first (smallest) size, which O(n) phases keep near 1.
 * With --scaling T, instead: at each size two runs of the phases side by
 * side, one on 1 thread and one on T, their steps interleaved (step k of
 * one, then of the other, the order swapped every step, so that both see
 * the same load), and a line a phase and one for the whole step:
 *   bench=stream_power-scaling size=1024 steps=20 threads=2 phase=route
 *   ms_1=... ms_2=... speedup=... speedup_lo=... speedup_hi=... cores=...
 *   load=... cpu_per_wall_1=... cpu_per_wall_2=... same_bytes=yes
 * ms_1, ms_T (ms_2 for T = 2): mean ms a step on 1 and T threads; speedup: the median over
 * the steps of each step's ms on 1 thread / ms on T threads, speedup_lo
 * and _hi its quartiles (the noise); cores: the online CPUs; load: the
 * 1-minute load average before the size; same_bytes: the heights of
 * both runs after the last step compared byte for byte.
 * Then, per size, two lines for the block walks (walk.c: the drainage
 * area, the incision, the sediment) played on ideal threads, T and 8,
 * each block taking its cells in time units:
 *   bench=stream_power-walks size=1024 steps=20 workers=2
 *   down_speedup=... up_speedup=...
 * the cells of every step over the sum of the steps' makespans: what the
 * walks' dependencies between blocks allow on idle cores (the other phases
 * run rows or blocks of columns, as many as the map has).
 * Usage: bench_stream_power [--steps N] [--threads T] [--scaling T]
 * [--dem FILE.f32 N] [size...] (default sizes 512 1024 2048, 20 steps,
 * all threads).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/parallel.h"
#include "../core/plan.h"
#include "../core/stream_power/sp_internal.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

/* The phases of the stream-power step (sp.c step) in their order. */
enum { PH_UPLIFT, PH_RECEIVERS, PH_DEPRESSIONS, PH_ACCUMULATE, PH_INCISE, PH_DIFFUSE, PH_N };
static const char *const ph_name[PH_N] = {"uplift", "receivers", "depressions", "accumulate",
                                          "incise", "diffuse"};

/* One step of s, each phase's seconds added to sec[]. */
static void step_phases(er_sp_sim *s, const er_stream_power_params *p, double *sec)
{
    er_sp_tally tal = {0, 0, 0, 0};
    er_error err;
    double t[PH_N + 1];
    t[0] = now();
    er_sp_uplift(s, p);
    t[1] = now();
    er_status st = er_sp_route_receivers(s, &err);
    t[2] = now();
    if (!st)
        st = er_sp_route_depressions(s, 0, &err);
    t[3] = now();
    if (st) {
        fprintf(stderr, "bench_stream_power: %s\n", err.msg);
        exit(1);
    }
    er_sp_accumulate(s);
    t[4] = now();
    er_sp_incise(s, p, &tal);
    t[5] = now();
    er_sp_diffuse(s, p, &tal);
    t[6] = now();
    for (int k = 0; k < PH_N; k++)
        sec[k] += t[k + 1] - t[k];
}

static void set_threads(int t)
{
#ifdef _OPENMP
    omp_set_num_threads(t);
#else
    (void)t;
#endif
}

static int cmp_double(const void *pa, const void *pb)
{
    const double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The quartile q (0.25, 0.5, 0.75) of v[0..n), sorted in place. */
static double quartile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    const double at = q * (n - 1);
    const int k = (int)at;
    return k + 1 < n ? v[k] + (at - k) * (v[k + 1] - v[k]) : v[k];
}

/* The block walks of s's routing (walk.c) played on `workers` ideal
 * threads that each run a block in as many time units as it has cells,
 * the blocks taken from the ready queue as walk.c takes them (the
 * level-0 blocks one at a time, where walk.c takes runs of them): the
 * makespan (up: the walk up, else down).  Its ratio to the cells is the
 * walks' speedup on that many idle cores, whatever the load now. */
static double walk_makespan(const er_sp_sim *s, int workers, int up)
{
    const int64_t nsched = s->lvl_at[s->nlevels], n0 = s->lvl_at[1];
    const int64_t n1 = s->nlevels > 1 ? s->lvl_at[2] : n0;
    int32_t *q = malloc((size_t)(nsched + 1) * sizeof *q), *left = calloc((size_t)s->nroots + 1, sizeof *left);
    double *end = malloc((size_t)workers * sizeof *end);
    int64_t *run = malloc((size_t)workers * sizeof *run);
    if (!q || !left || !end || !run)
        exit(1);
    int64_t head = 0, tail = 0, base_left = n0, closed_left = nsched - n0;
#define CLOSED(r) (s->basin[s->stack[s->root_at[r]]] > 0 && \
                   s->basins[s->basin[s->stack[s->root_at[r]]]].parent >= 0 ? \
                   s->basin[s->stack[s->root_at[r]]] : 0)
    if (!up) {
        for (int64_t l = 0; l < (n0 ? n0 : n1); l++)
            q[tail++] = s->sched[l];
    } else {
        for (int64_t l = n0; l < nsched; l++) {
            const int64_t r = s->sched[l];
            const int32_t b = CLOSED(r);
            left[r] = s->child_at[b + 1] - s->child_at[b];
            if (!left[r])
                q[tail++] = (int32_t)r;
        }
        if (!closed_left)
            for (int64_t l = 0; l < n0; l++)
                q[tail++] = s->sched[l];
    }
    for (int w = 0; w < workers; w++)
        run[w] = -1;
    double now = 0.0;
    for (;;) {
        for (int w = 0; w < workers && head < tail; w++)
            if (run[w] < 0) {
                run[w] = q[head++];
                end[w] = now + (double)(s->root_at[run[w] + 1] - s->root_at[run[w]]);
            }
        int first = -1;
        for (int w = 0; w < workers; w++)
            if (run[w] >= 0 && (first < 0 || end[w] < end[first]))
                first = w;
        if (first < 0)
            break;
        now = end[first];
        const int64_t r = run[first];
        run[first] = -1;
        const int32_t b = CLOSED(r);
        if (!up) {
            if (!b) {
                if (--base_left == 0)
                    for (int64_t l = n0; l < n1; l++)
                        q[tail++] = s->sched[l];
            } else {
                for (int32_t c = s->child_at[b]; c < s->child_at[b + 1]; c++)
                    q[tail++] = s->basins[s->child[c]].block;
            }
        } else if (b) {
            const int32_t u = s->basins[b].parent;
            if (u > 0 && --left[s->basins[u].block] == 0)
                q[tail++] = s->basins[u].block;
            if (--closed_left == 0)
                for (int64_t l = 0; l < n0; l++)
                    q[tail++] = s->sched[l];
        }
    }
#undef CLOSED
    free(q);
    free(left);
    free(end);
    free(run);
    return now;
}

/* --scaling: the phases on 1 thread and on `threads`, interleaved. */
static void scaling(const float *z0, int n, int steps, int threads)
{
    er_params p = params(steps);
    er_sp_sim s[2];
    float *z[2];
    er_plan plan[2];
    double load = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1)
            load = -1.0;
        fclose(f);
    }
    for (int k = 0; k < 2; k++) {
        er_error err;
        z[k] = malloc((size_t)n * n * sizeof *z[k]);
        if (!z[k])
            exit(1);
        memcpy(z[k], z0, (size_t)n * n * sizeof *z[k]);
        er_terrain t = {n, n, z[k], NULL, 10.0, 10.0, NULL};
        set_threads(k ? threads : 1);
        if (er_plan_make(&p, &t, NULL, &plan[k], &err) ||
            er_sp_init(&s[k], &plan[k], &t, NULL, &err)) {
            fprintf(stderr, "bench_stream_power: %s\n", err.msg);
            exit(1);
        }
    }
    /* per step and phase (the last: the whole step), each run's seconds */
    double *sec = calloc((size_t)steps * (PH_N + 1) * 2, sizeof *sec);
    double *ratio = malloc((size_t)steps * sizeof *ratio);
    if (!sec || !ratio)
        exit(1);
    double cpu[2] = {0, 0}, cells = 0.0, span[2][2] = {{0, 0}, {0, 0}};
    const int sim_workers[2] = {threads, 8};
    for (int k = 0; k < steps; k++) {
        for (int o = 0; o < 2; o++) {
            const int run = (k + o) % 2; /* 1 thread first on even steps */
            double *at = sec + ((size_t)k * 2 + (size_t)run) * (PH_N + 1);
            set_threads(run ? threads : 1);
            const double c0 = cpu_now();
            step_phases(&s[run], &p.stream_power, at);
            cpu[run] += cpu_now() - c0;
            for (int ph = 0; ph < PH_N; ph++)
                at[PH_N] += at[ph];
        }
        /* this step's walks on ideal threads (s[1] routed like s[0]) */
        cells += (double)s[1].nstack;
        for (int w = 0; w < 2; w++)
            for (int up = 0; up < 2; up++)
                span[w][up] += walk_makespan(&s[1], sim_workers[w], up);
    }
    const int same = memcmp(s[0].z, s[1].z, (size_t)s[0].n * sizeof *s[0].z) == 0;
    double wall[2] = {0, 0};
    for (int k = 0; k < steps; k++)
        for (int run = 0; run < 2; run++)
            wall[run] += sec[((size_t)k * 2 + (size_t)run) * (PH_N + 1) + PH_N];
    /* the phases, route (receivers to accumulate) and the whole step */
    for (int ph = 0; ph <= PH_N + 1; ph++) {
        double m[2] = {0, 0};
        for (int k = 0; k < steps; k++) {
            double v[2];
            for (int run = 0; run < 2; run++) {
                const double *at = sec + ((size_t)k * 2 + (size_t)run) * (PH_N + 1);
                v[run] = ph < PH_N ? at[ph] : ph == PH_N ? at[PH_RECEIVERS] +
                         at[PH_DEPRESSIONS] + at[PH_ACCUMULATE] : at[PH_N];
                m[run] += v[run];
            }
            ratio[k] = v[1] > 0.0 ? v[0] / v[1] : 1.0;
        }
        const double lo = quartile(ratio, steps, 0.25), md = quartile(ratio, steps, 0.5),
                     hi = quartile(ratio, steps, 0.75);
        printf("bench=stream_power-scaling size=%d steps=%d threads=%d phase=%s ms_1=%.2f "
               "ms_%d=%.2f speedup=%.2f speedup_lo=%.2f speedup_hi=%.2f cores=%ld load=%.2f "
               "cpu_per_wall_1=%.2f cpu_per_wall_%d=%.2f same_bytes=%s\n", n, steps, threads,
               ph < PH_N ? ph_name[ph] : ph == PH_N ? "route" : "step",
               m[0] * 1000.0 / steps, threads, m[1] * 1000.0 / steps, md, lo, hi,
               sysconf(_SC_NPROCESSORS_ONLN), load, cpu[0] / wall[0], threads, cpu[1] / wall[1],
               same ? "yes" : "no");
    }
    for (int w = 0; w < 2; w++)
        printf("bench=stream_power-walks size=%d steps=%d workers=%d down_speedup=%.2f "
               "up_speedup=%.2f\n", n, steps, sim_workers[w], cells / span[w][0],
               cells / span[w][1]);
    fflush(stdout);
    free(sec);
    free(ratio);
    for (int k = 0; k < 2; k++) {
        er_sp_free(&s[k]);
        free(z[k]);
    }
}

int main(int argc, char **argv)
{
    int steps = 20, nsizes = 0, sizes[16], threads = 0, dem_n = 0, scale = 0;
    const char *dem = NULL;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--steps") == 0 && k + 1 < argc)
            steps = atoi(argv[++k]);
        else if (strcmp(argv[k], "--threads") == 0 && k + 1 < argc)
            threads = atoi(argv[++k]);
        else if (strcmp(argv[k], "--scaling") == 0 && k + 1 < argc)
            scale = atoi(argv[++k]);
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
    if (threads > 0)
        set_threads(threads);
    if (steps < 1) {
        fprintf(stderr, "bench_stream_power: --steps must be at least 1\n");
        return 2;
    }
    double first = 0.0;
    for (int si = 0; si < nsizes; si++) {
        const int n = sizes[si];
        float *z0 = dem ? read_f32(dem, n) : fbm(n, 1);
        if (!z0)
            return 1;
        if (scale > 0) {
            scaling(z0, n, steps, scale);
            free(z0);
            continue;
        }
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
        double ph[PH_N] = {0};
        for (int k = 0; k < steps; k++)
            step_phases(&s, &p.stream_power, ph);
        er_sp_free(&s);
        free(z);
        double total = 0.0;
        for (int k = 0; k < PH_N; k++)
            total += ph[k];
        const double route = ph[PH_RECEIVERS] + ph[PH_DEPRESSIONS] + ph[PH_ACCUMULATE];
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
               "ns_per_cell_vs_first=%.2f baseline_ms_per_step=%.1f speedup_vs_baseline=%.2f",
               n, er_thread_count(), steps, ms, run_ms, 100 * ph[PH_UPLIFT] / total,
               100 * route / total, 100 * ph[PH_INCISE] / total, 100 * ph[PH_DIFFUSE] / total,
               ns_cell, ns_cell / first, base_ms, base_ms / ms);
        for (int k = 0; k < PH_N; k++)
            printf(" %s_ms=%.2f", ph_name[k], ph[k] * 1000.0 / steps);
        printf("\n");
        fflush(stdout);
        free(z0);
    }
    return 0;
}
