/*
 * Droplet benchmark: the default droplet recipe (Lague variant) on a
 * synthetic 1024^2 fBm terrain scaled to 0..1, one million droplets, run
 *   - as a plain sequential loop over the droplets in index order (no
 *     blocking: er_droplet_run_serial), the baseline;
 *   - with the block-coloured schedule on 1 and on 2 threads (er_run_cpu).
 * One line per run, machine-readable:
 *   bench=droplet size=1024 threads=2 droplets=1000000 seconds=...
 *   droplets_per_s=... steps_per_s=... speedup_vs_sequential=... identical=yes
 *   cpu_s=... droplets_per_cpu_s=...
 * (cpu_s: the process's CPU time over the run, all threads; on a shared
 * machine droplets_per_cpu_s of a 1-thread run moves less with the load
 * than the wall-clock figures),
 * identical= compares heights, flow and deposit with the 1-thread run
 * (memcmp).  Then, in a build with Vulkan and a device, the same droplets
 * on Vulkan device 0 (er_vk_droplet_run):
 *   bench=droplet mode=vulkan device="..." ... ratio_vs_cpu_1thread=...
 *   identical_to_cpu=yes|no
 * (CPU and device agree statistically; identical_to_cpu says whether this
 * device happened to round every step as the CPU does).
 * Both droplet schedules (droplet.schedule): mode=blocked is "blocks",
 * mode=snapshot the snapshot schedule on 1 .. max_threads
 * threads; the Vulkan lines carry schedule=blocks|snapshot and
 * invocations_per_dispatch (snapshot: the droplets of its largest
 * dispatch, er_vk_droplet_snap_stats; blocks: at most a colour's blocks,
 * a quarter of a batch's, rounded up) and identical_to_cpu against the
 * same schedule's 1-thread CPU run.
 * Usage: bench_droplet [size [droplets [max_threads [maps [vulkan [snapshot]]]]]];
 * vulkan = 0 skips the Vulkan column (on lavapipe it takes a minute);
 * snapshot = 0 skips the snapshot schedule's runs (ten times the blocked
 * runs' time on the CPU), for A/B turns of the blocked path; maps = 1 runs
 * every run with all three droplet control maps (core/controls.h: graded
 * hardness, a mask 0 .. 1 and rain 0 .. 2, value noise like the terrain),
 * the cost of the per-tap shares against a run without (maps=0).
 * Peers for scale (one thread, 1024^2): Lague's CPU code 0.12M droplets/s,
 * the fastest C peer 0.36M droplets/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/backend.h"
#include "../core/droplet/droplet_impl.h"
#include "../core/parallel.h"
#include "../core/rng.h"
#ifdef ER_HAVE_VULKAN
#include "../core/droplet/vulkan.h"
#endif

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }

/* Value noise: random lattice values, smoothstep-blended, 8 octaves, each
 * half the size and amplitude of the one before, scaled to 0..1. */
static void fbm(float *h, int n, uint64_t seed)
{
    for (int i = 0; i < n * n; i++)
        h[i] = 0;
    double amp = 1.0;
    int cell = n / 4;
    for (int oct = 0; oct < 8 && cell >= 1; oct++, amp *= 0.5, cell /= 2) {
        int m = n / cell + 2;
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++) {
                int gx = x / cell, gy = y / cell;
                double fx = (double)(x % cell) / cell, fy = (double)(y % cell) / cell;
                fx = fx * fx * (3 - 2 * fx);
                fy = fy * fy * (3 - 2 * fy);
                uint64_t base = (uint64_t)oct * (uint64_t)m * (uint64_t)m;
                double v00 = er_rng_unit(seed, 99, base + (uint64_t)(gy * m + gx));
                double v10 = er_rng_unit(seed, 99, base + (uint64_t)(gy * m + gx + 1));
                double v01 = er_rng_unit(seed, 99, base + (uint64_t)((gy + 1) * m + gx));
                double v11 = er_rng_unit(seed, 99, base + (uint64_t)((gy + 1) * m + gx + 1));
                double v = (v00 * (1 - fx) + v10 * fx) * (1 - fy) + (v01 * (1 - fx) + v11 * fx) * fy;
                h[y * n + x] += (float)(amp * v);
            }
    }
    float lo = h[0], hi = h[0];
    for (int i = 0; i < n * n; i++) {
        lo = h[i] < lo ? h[i] : lo;
        hi = h[i] > hi ? h[i] : hi;
    }
    for (int i = 0; i < n * n; i++)
        h[i] = (h[i] - lo) / (hi - lo);
}

typedef struct result {
    float *h, *flow, *dep;
    double seconds;
    double cpu;               /* [s] the process's CPU time over the run, all threads */
    er_budget budget;
} result;

/* The control maps of a maps=1 run; NULL = none. */
static const er_controls *bench_ctl;

/* The sequential baseline: p's plan for t, run by er_droplet_run_serial. */
static er_status run_serial(const er_params *p, er_terrain *t, er_layers *layers, er_budget *b,
                            er_error *err)
{
    er_plan plan;
    er_status st = er_plan_make(p, t, NULL, &plan, err);
    return st ? st : er_droplet_run_serial(&plan, t, &(er_run_opts){layers, NULL, NULL, b}, err);
}

static int run(const er_params *p, const float *h0, int n, int threads, int serial, er_vk_ctx *vk,
               result *r)
{
    size_t cells = (size_t)n * (size_t)n;
    r->h = malloc(cells * sizeof(float));
    r->flow = malloc(cells * sizeof(float));
    r->dep = malloc(cells * sizeof(float));
    if (!r->h || !r->flow || !r->dep)
        return -1;
    memcpy(r->h, h0, cells * sizeof(float));
    er_terrain t = {n, n, r->h, NULL, 1.0, 1.0, bench_ctl};
    er_layers layers = {r->flow, r->dep, NULL, NULL};
    er_error err = {""};
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    er_status st = vk       ? er_run_vk(vk, p, &t, &(er_run_opts){&layers, NULL, NULL, &r->budget}, &err)
                   : serial ? run_serial(p, &t, &layers, &r->budget, &err)
                            : er_run_cpu(p, &t, NULL, &(er_run_opts){&layers, NULL, NULL, &r->budget}, &err);
    r->seconds = now() - t0;
    r->cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (st) {
        fprintf(stderr, "bench_droplet: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void report(const char *mode, int n, int threads, const result *r, double base,
                   const result *ref)
{
    size_t bytes = (size_t)n * (size_t)n * sizeof(float);
    const char *same = "n/a";
    if (ref)
        same = memcmp(r->h, ref->h, bytes) == 0 && memcmp(r->flow, ref->flow, bytes) == 0 &&
                       memcmp(r->dep, ref->dep, bytes) == 0
                   ? "yes"
                   : "no";
    printf("bench=droplet mode=%s maps=%d size=%d threads=%d droplets=%lld seconds=%.3f "
           "droplets_per_s=%.0f steps_per_s=%.0f steps_per_droplet=%.1f "
           "speedup_vs_sequential=%.2f identical=%s rel_error=%.2e cpu_s=%.3f "
           "droplets_per_cpu_s=%.0f\n",
           mode, bench_ctl != NULL, n, threads, (long long)r->budget.work_done, r->seconds,
           (double)r->budget.work_done / r->seconds, (double)r->budget.substeps / r->seconds,
           (double)r->budget.substeps / (double)r->budget.work_done, base / r->seconds, same,
           r->budget.rel_error, r->cpu, (double)r->budget.work_done / r->cpu);
    fflush(stdout);
}

/* Invocations per droplet dispatch of the last Vulkan run of p on an n^2
 * map (see the header comment). */
static unsigned long long invocations(const er_params *p, int n)
{
#ifdef ER_HAVE_VULKAN
    if (p->droplet.schedule == ER_DROPLET_SNAPSHOT) {
        er_vk_snap_stats ss;
        er_vk_droplet_snap_stats(&ss);
        return ss.max_invocations;
    }
#endif
    /* The block side is the recipe's: any terrain will do for the plan. */
    float z = 0;
    er_terrain t = {1, 1, &z, NULL, 1.0, 1.0, NULL};
    er_plan plan;
    er_error err;
    if (er_plan_make(p, &t, NULL, &plan, &err))
        return 0;
    int64_t side = plan.own.droplet.block_side, per = (n + side - 1) / side;
    return (unsigned long long)((per * per + 3) / 4);
}

/* The Vulkan column: the same run on device 0, against the 1-thread CPU
 * run `one` of the same schedule (skipped with a line saying why when
 * there is no device). */
static void vulkan_column(const er_params *p, const float *h0, int n, const result *one)
{
    er_vk_options o = {0, 0};
    er_vk_ctx *vk = NULL;
    er_error err = {""};
    const char *sched = p->droplet.schedule == ER_DROPLET_SNAPSHOT ? "snapshot" : "blocks";
    if (er_vk_open(&o, &vk, &err) != ER_OK) {
        printf("bench=droplet mode=vulkan schedule=%s skipped=\"%s\"\n", sched, err.msg);
        return;
    }
    result r;
    if (run(p, h0, n, 1, 0, vk, &r) == 0) {
        size_t bytes = (size_t)n * (size_t)n * sizeof(float);
        int same = memcmp(r.h, one->h, bytes) == 0 && memcmp(r.flow, one->flow, bytes) == 0 &&
                   memcmp(r.dep, one->dep, bytes) == 0;
        printf("bench=droplet mode=vulkan schedule=%s device=\"%s\" size=%d droplets=%lld "
               "seconds=%.3f droplets_per_s=%.0f steps_per_s=%.0f invocations_per_dispatch=%llu "
               "ratio_vs_cpu_1thread=%.3f eroded_vs_cpu=%.6f identical_to_cpu=%s rel_error=%.2e\n",
               sched, er_vk_info(vk)->name, n, (long long)r.budget.work_done, r.seconds,
               (double)r.budget.work_done / r.seconds, (double)r.budget.substeps / r.seconds,
               invocations(p, n), one->seconds / r.seconds, r.budget.eroded / one->budget.eroded,
               same ? "yes" : "no", r.budget.rel_error);
    }
    free(r.h);
    free(r.flow);
    free(r.dep);
    er_vk_close(vk);
}

/* The CPU runs of one schedule on 1 .. max_threads threads (*one keeps the
 * 1-thread run), then its Vulkan column. */
static int schedule_runs(const char *mode, const er_params *p, const float *h0, int n,
                         int max_threads, double base, int vulkan, result *one)
{
    if (run(p, h0, n, 1, 0, NULL, one))
        return 1;
    report(mode, n, 1, one, base, NULL);
    for (int t = 2; t <= max_threads; t++) {
        result r;
        if (run(p, h0, n, t, 0, NULL, &r))
            return 1;
        report(mode, n, t, &r, base, one);
        free(r.h);
        free(r.flow);
        free(r.dep);
    }
    if (vulkan)
        vulkan_column(p, h0, n, one);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    long long count = argc > 2 ? atoll(argv[2]) : 1000000;
    int max_threads = argc > 3 ? atoi(argv[3]) : 2;
    int maps = argc > 4 ? atoi(argv[4]) : 0;
    int vulkan = argc > 5 ? atoi(argv[5]) : 1;
    int snapshot = argc > 6 ? atoi(argv[6]) : 1;
    if (n < 16 || count < 1 || max_threads < 1 || maps < 0 || maps > 1) {
        fprintf(stderr,
                "usage: bench_droplet [size [droplets [max_threads [maps [vulkan [snapshot]]]]]]\n");
        return 2;
    }
    size_t nc = (size_t)n * (size_t)n;
    float *h0 = malloc(nc * sizeof *h0), *ctl = maps ? malloc(3 * nc * sizeof *ctl) : NULL;
    if (!h0 || (maps && !ctl))
        return 1;
    fbm(h0, n, 7);
    er_controls k = {NULL, NULL, NULL, NULL, NULL};
    if (maps) {
        /* Noise fields of other seeds: hardness and mask 0 .. 1, rain 0 .. 2. */
        fbm(ctl, n, 8);
        fbm(ctl + nc, n, 9);
        fbm(ctl + 2 * nc, n, 10);
        for (size_t i = 0; i < nc; i++)
            ctl[2 * nc + i] *= 2.0f;
        k = (er_controls){ctl, ctl + 2 * nc, ctl + nc, NULL, NULL};
        bench_ctl = &k;
    }

    er_params p;
    er_params_default(&p);
    p.model = ER_MODEL_DROPLET;
    p.droplet.count = count;

    result seq, one;
    if (run(&p, h0, n, 1, 1, NULL, &seq))
        return 1;
    report("sequential", n, 1, &seq, seq.seconds, NULL);
    if (schedule_runs("blocked", &p, h0, n, max_threads, seq.seconds, vulkan, &one))
        return 1;
    if (snapshot) {
        result snap;
        p.droplet.schedule = ER_DROPLET_SNAPSHOT;
        if (schedule_runs("snapshot", &p, h0, n, max_threads, seq.seconds, vulkan, &snap))
            return 1;
        free(snap.h);
        free(snap.flow);
        free(snap.dep);
    }
    free(seq.h);
    free(seq.flow);
    free(seq.dep);
    free(one.h);
    free(one.flow);
    free(one.dep);
    free(h0);
    free(ctl);
    return 0;
}
