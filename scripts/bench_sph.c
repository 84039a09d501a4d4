/*
 * SPH benchmark: a flood on a crop of the bundled whitebox DEM
 * (tests/data/whitebox_dem_f32_utm18n.tif, 90 m cells, nodata as walls)
 * at the middle rows of its west edge: the crop's lower half filled to
 * its median height plus one cell (sph.fill_level), closed
 * edges so the particle count stays fixed, erosion on at the shipped
 * recipe's rate, steps of sph.dt = 1 s.  Run on 1 thread (the baseline,
 * measured in the same run) and on 2 .. max_threads.  One line per run,
 * machine-readable:
 *   bench=sph size=64 threads=2 particles=... substeps=... seconds=...
 *   particle_steps_per_s=... speedup_vs_1thread=... identical=yes digest=...
 * A particle-step is one particle through one SPH time step (sub-step),
 * erosion and sediment exchange included; identical= compares the
 * particles, the terrain and the budget with the 1-thread run (memcmp).
 * Peer for scale: the paper, 130,000 particles at 1.38 s per step on a
 * 2008 quad-core, about 0.1 M particle-steps/s.
 * Usage: bench_sph [size [steps [max_threads]]]; run from the source tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/parallel.h"
#include "../core/plan.h"
#include "../core/sph/sph_internal.h"
#include "../io/image.h"

#define DEM "tests/data/whitebox_dem_f32_utm18n.tif"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

typedef struct result {
    double seconds, psteps;
    int64_t n, substeps;
    er_sph_particle *p;
    double *zb;
    er_budget bud;
} result;

static int run(const er_params *p, const er_terrain *t, int threads, result *r)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    er_plan plan;
    er_error err;
    er_sph_sim s;
    memset(r, 0, sizeof *r);
    if (er_plan_make(p, t, NULL, &plan, &err) || er_sph_init(&s, &plan, t, &r->bud, &err)) {
        fprintf(stderr, "bench_sph: %s\n", err.msg);
        return 1;
    }
    r->n = s.n;
    double t0 = now();
    for (int64_t k = 0; k < p->sph.steps; k++) {
        r->psteps += (double)s.n * (double)plan.own.sph.substeps;
        if (er_sph_step(&s, &plan, k, &r->bud, &err)) {
            fprintf(stderr, "bench_sph: %s\n", err.msg);
            er_sph_free(&s);
            return 1;
        }
    }
    r->seconds = now() - t0;
    r->substeps = plan.own.sph.substeps * p->sph.steps;
    size_t nv = (size_t)t->width * t->height;
    r->p = malloc((size_t)s.n * sizeof *r->p);
    r->zb = malloc(nv * sizeof *r->zb);
    if (r->p && r->zb) {
        memcpy(r->p, s.p, (size_t)s.n * sizeof *r->p);
        memcpy(r->zb, s.zb, nv * sizeof *r->zb);
    }
    r->n = s.n;
    er_sph_free(&s);
    return !r->p || !r->zb;
}

/* FNV-1a of the particles, the terrain and the budget: equal hashes across
 * builds say a speed change kept the values. */
static uint64_t digest(const result *r, size_t nv)
{
    uint64_t h = 1469598103934665603u;
    const unsigned char *parts[3] = {(const unsigned char *)r->p, (const unsigned char *)r->zb,
                                     (const unsigned char *)&r->bud};
    size_t len[3] = {(size_t)r->n * sizeof *r->p, nv * sizeof *r->zb, sizeof r->bud};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < len[k]; i++)
            h = (h ^ parts[k][i]) * 1099511628211u;
    return h;
}

static int same(const result *a, const result *b, size_t nv)
{
    return a->n == b->n && !memcmp(a->p, b->p, (size_t)a->n * sizeof *a->p) &&
           !memcmp(a->zb, b->zb, nv * sizeof *a->zb) && !memcmp(&a->bud, &b->bud, sizeof a->bud);
}

/* The crop of size^2 cells at rows y0.. of the DEM's west edge, where the
 * springs of tests/data/fixture/sph-springs.json lie, its nodata cells as walls, and the
 * valid heights (sorted) in *valid, their count the return value. */
static size_t crop(const er_image *img, int size, int y0, float *z, uint8_t *wall, float *valid)
{
    size_t nv = 0;
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            size_t i = (size_t)(y0 + y) * img->width + x, o = (size_t)y * size + x;
            z[o] = img->data[i];
            wall[o] = img->nodata ? img->nodata[i] : 0;
            if (!wall[o])
                valid[nv++] = z[o];
        }
    qsort(valid, nv, sizeof *valid, cmp_float);
    return nv;
}

int main(int argc, char **argv)
{
    int size = argc > 1 ? atoi(argv[1]) : 64;
    int steps = argc > 2 ? atoi(argv[2]) : 3;
    int max_threads = argc > 3 ? atoi(argv[3]) : 2;
    er_image img;
    er_read_opts ro = {0};
    er_error err;
    if (er_image_read(DEM, &ro, &img, &err)) {
        fprintf(stderr, "bench_sph: %s\n", err.msg);
        return 1;
    }
    if (size < 8 || size > img.width || size > img.height || steps < 1 || max_threads < 1) {
        fprintf(stderr, "usage: bench_sph [size (8..%d) [steps [max_threads]]]\n",
                img.width < img.height ? img.width : img.height);
        return 2;
    }
    const size_t nv = (size_t)size * size;
    float *z = malloc(nv * sizeof *z), *sorted = malloc(nv * sizeof *z);
    uint8_t *wall = malloc(nv);
    if (!z || !sorted || !wall)
        return 1;
    int y0 = (img.height - size) / 2;
    size_t nvalid = crop(&img, size, y0, z, wall, sorted);
    if (nvalid < 16) {
        fprintf(stderr, "bench_sph: the crop is nodata\n");
        return 1;
    }
    er_terrain t = {size, size, z, wall, 90.0, 90.0, NULL};
    er_params p;
    er_params_default(&p);
    p.model = ER_MODEL_SPH;
    p.sph.steps = steps;
    p.sph.fill_level = sorted[nvalid / 2] + 90.0;
    p.sph.fill_level_set = 1;
    p.sph.boundary = ER_BOUNDARY_CLOSED;
    p.sph.erosion_rate = 0.002;
    p.sph.max_particles = 4000000;
    result base, r;
    if (run(&p, &t, 1, &base))
        return 1;
    for (int th = 1; th <= max_threads; th++) {
        if (th > 1 && run(&p, &t, th, &r))
            return 1;
        const result *x = th > 1 ? &r : &base;
        printf("bench=sph size=%d threads=%d particles=%lld substeps=%lld seconds=%.3f "
               "particle_steps_per_s=%.4g speedup_vs_1thread=%.2f eroded_m3=%.4g identical=%s "
               "digest=%016llx\n",
               size, th, (long long)x->n, (long long)x->substeps, x->seconds,
               x->psteps / x->seconds, base.seconds / x->seconds, x->bud.eroded * 90.0 * 90.0,
               same(x, &base, nv) ? "yes" : "no", (unsigned long long)digest(x, nv));
        if (th > 1) {
            free(r.p);
            free(r.zb);
        }
    }
    free(base.p);
    free(base.zb);
    free(z);
    free(sorted);
    free(wall);
    er_image_free(&img);
    return 0;
}
