/*
 * Disk benchmark: the three default layers (height, sediment, water) of a
 * 1-step Mei run on a synthetic n^2 terrain (default 4096^2, where the
 * sediment and water float noise is most of the bytes) written
 * as float32 GeoTIFFs
 *   - by libtiff's own encoder on one thread, DEFLATE level 6 with the
 *     floating-point predictor, 256-cell tiles: erode's writer before the
 *     parallel codecs, the baseline measured in the same run;
 *   - by er_tiff_write_co with the defaults (DEFLATE level 1) on 1 and on
 *     all threads, and with other creation options on all threads (ZSTD,
 *     --precision 1e-4 on sediment and water, COG=YES).
 * One line per case, machine-readable:
 *   bench=io mode=deflate6 size=4096 threads=2 seconds=... mbytes=...
 *   cells_per_s=... speedup_vs_libtiff=... size_vs_libtiff=...
 * seconds is the best of `repeats` writes of all three layers (these
 * machines are noisy); mbytes the three files' total size.  Then reading
 * the three default files back: libtiff's TIFFReadEncodedTile on one
 * thread (the baseline) against er_tiff_read (tiles decoded on all
 * threads):
 *   bench=io mode=read-libtiff|read size=4096 threads=... seconds=...
 *   speedup_vs_libtiff=...
 * Usage: bench_io [size [repeats [dir]]] (dir: where the files go,
 * default $TMPDIR or /tmp; removed at the end).
 *        bench_io --dem size path: only writes the synthetic terrain as a
 *        float32 GeoTIFF (default creation options, no georeferencing), the
 *        input of `scripts/bench e2e`.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <tiffio.h>
#include <unistd.h>

#include "../core/model.h"
#include "../core/parallel.h"
#include "../core/plan.h"
#include "../core/rng.h"
#include "../io/image.h"

static const char *const names[3] = {"height", "sediment", "water"};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Smooth random relief, 0..400 m over 30 m cells (as bench_mei). */
static void make_terrain(float *z, int n)
{
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            double h = 0.0, amp = 200.0;
            int cell = n / 4;
            for (int o = 0; o < 3 && cell >= 2; o++, amp *= 0.5, cell /= 4) {
                int gx = x / cell, gy = y / cell;
                double fx = (double)(x % cell) / cell, fy = (double)(y % cell) / cell;
                uint64_t k = (uint64_t)gy * 100003u + (uint64_t)gx;
                double v00 = er_rng_unit(7, 100 + (uint64_t)o, k), v10 = er_rng_unit(7, 100 + (uint64_t)o, k + 1);
                double v01 = er_rng_unit(7, 100 + (uint64_t)o, k + 100003u);
                double v11 = er_rng_unit(7, 100 + (uint64_t)o, k + 100004u);
                h += amp * ((v00 * (1 - fx) + v10 * fx) * (1 - fy) + (v01 * (1 - fx) + v11 * fx) * fy);
            }
            z[(size_t)y * (size_t)n + (size_t)x] = (float)h;
        }
}

static int all_threads;

static void set_threads(int one)
{
#ifdef _OPENMP
    omp_set_num_threads(one ? 1 : all_threads);
#else
    (void)one;
#endif
}

static size_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* The old writer's core: libtiff encodes and compresses every tile on
 * the calling thread (with zlib). */
static int write_libtiff(const char *path, const float *data, int n)
{
    TIFF *tif = TIFFOpen(path, "wl");
    float *tile = malloc(256 * 256 * sizeof(float));
    int ok = tif && tile && TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, n) && TIFFSetField(tif, TIFFTAG_IMAGELENGTH, n)
          && TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 32) && TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1)
          && TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP)
          && TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK)
          && TIFFSetField(tif, TIFFTAG_TILEWIDTH, 256) && TIFFSetField(tif, TIFFTAG_TILELENGTH, 256)
          && TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE)
          && TIFFSetField(tif, TIFFTAG_PREDICTOR, PREDICTOR_FLOATINGPOINT) && TIFFSetField(tif, TIFFTAG_ZIPQUALITY, 6);
    for (int y0 = 0; ok && y0 < n; y0 += 256)
        for (int x0 = 0; ok && x0 < n; x0 += 256) {
            for (int y = 0; y < 256; y++)
                for (int x = 0; x < 256; x++) {
                    int sy = y0 + y < n ? y0 + y : n - 1, sx = x0 + x < n ? x0 + x : n - 1;
                    tile[y * 256 + x] = data[(size_t)sy * (size_t)n + (size_t)sx];
                }
            ok = TIFFWriteEncodedTile(tif, TIFFComputeTile(tif, (uint32_t)x0, (uint32_t)y0, 0, 0), tile,
                                      256 * 256 * sizeof(float)) > 0;
        }
    ok = ok && TIFFWriteDirectory(tif);
    if (tif)
        TIFFClose(tif);
    free(tile);
    /* er_tiff_write syncs before its rename: so does the baseline. */
    int fd = open(path, O_RDONLY);
    ok = ok && fd >= 0 && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

typedef struct bench_case {
    const char *mode;
    er_compress compress;
    int level, cog;
    double precision;    /* sediment and water only */
    int libtiff;         /* the baseline */
    int one_thread;
} bench_case;

/* Writes the three layers `repeats` times; the best time, the bytes. */
static double time_case(const bench_case *c, float *const layers[3], int n, int repeats, const char *dir,
                        size_t *bytes)
{
    double best = INFINITY;
    char path[4096];
    set_threads(c->one_thread);
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        *bytes = 0;
        for (int l = 0; l < 3; l++) {
            snprintf(path, sizeof path, "%.2048s/%s.tif", dir, names[l]);
            er_layer_out out = {n, n, layers[l], NULL, 0.0, NULL, NULL};
            er_tiff_create co = er_tiff_create_defaults();
            co.compress = c->compress;
            co.level = c->level;
            co.cog = c->cog;
            co.precision = l > 0 ? c->precision : 0;
            er_error err = {""};
            if (c->libtiff ? !write_libtiff(path, layers[l], n) : er_tiff_write_co(path, &out, &co, &err) != ER_OK) {
                fprintf(stderr, "bench_io: %s: cannot write %s %s\n", c->mode, path, err.msg);
                exit(1);
            }
            *bytes += file_size(path);
        }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

/* The old reader's core: every tile decoded by libtiff on this thread. */
static int read_libtiff(const char *path, float *dst, int n)
{
    TIFF *tif = TIFFOpen(path, "r");
    float *tile = malloc(256 * 256 * sizeof(float));
    int ok = tif && tile;
    for (int y0 = 0; ok && y0 < n; y0 += 256)
        for (int x0 = 0; ok && x0 < n; x0 += 256) {
            ok = TIFFReadTile(tif, tile, (uint32_t)x0, (uint32_t)y0, 0, 0) > 0;
            for (int y = y0; ok && y < y0 + 256 && y < n; y++)
                memcpy(dst + (size_t)y * (size_t)n + (size_t)x0, tile + (y - y0) * 256,
                       (size_t)(n - x0 < 256 ? n - x0 : 256) * sizeof(float));
        }
    if (tif)
        TIFFClose(tif);
    free(tile);
    return ok;
}

/* Best of `repeats` reads of the three files in dir. */
static double time_read(int libtiff, float *scratch, int n, int repeats, const char *dir)
{
    double best = INFINITY;
    char path[4096];
    set_threads(libtiff);
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        for (int l = 0; l < 3; l++) {
            snprintf(path, sizeof path, "%.2048s/%s.tif", dir, names[l]);
            er_image img;
            er_error err = {""};
            if (libtiff ? !read_libtiff(path, scratch, n) : er_tiff_read(path, NULL, &img, &err) != ER_OK) {
                fprintf(stderr, "bench_io: cannot read %s %s\n", path, err.msg);
                exit(1);
            }
            if (!libtiff)
                er_image_free(&img);
        }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

/* The terrain alone, as erode's input for the end-to-end benchmark. */
static int write_dem(int n, const char *path)
{
    float *z = n >= 16 ? malloc((size_t)n * (size_t)n * sizeof(float)) : NULL;
    if (!z) {
        fprintf(stderr, "usage: bench_io --dem size >= 16 path\n");
        return 2;
    }
    make_terrain(z, n);
    er_layer_out out = {n, n, z, NULL, 0.0, NULL, NULL};
    er_error err = {""};
    er_status st = er_tiff_write(path, &out, &err);
    free(z);
    if (st != ER_OK)
        fprintf(stderr, "bench_io: %s\n", err.msg);
    return st == ER_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--dem") == 0)
        return write_dem(atoi(argv[2]), argv[3]);
    int n = argc > 1 ? atoi(argv[1]) : 4096, repeats = argc > 2 ? atoi(argv[2]) : 3;
    char dir[2048];
    snprintf(dir, sizeof dir, "%.2000s/bench-io-XXXXXX", argc > 3 ? argv[3] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (n < 16 || repeats < 1 || !mkdtemp(dir)) {
        fprintf(stderr, "usage: bench_io [size >= 16 [repeats [dir]]]\n");
        return 2;
    }
    all_threads = er_thread_count();
    size_t cells = (size_t)n * (size_t)n;
    float *layers[3] = {malloc(cells * sizeof(float)), calloc(cells, sizeof(float)), calloc(cells, sizeof(float))};
    if (!layers[0] || !layers[1] || !layers[2])
        return 1;
    make_terrain(layers[0], n);
    er_params p;
    er_params_default(&p);
    p.mei.steps = 1;
    er_terrain t = {n, n, layers[0], NULL, 30.0, 30.0, NULL};
    er_error err = {""};
    er_budget bud;
    if (er_run_cpu(&p, &t, NULL, &(er_run_opts){&(er_layers){layers[2], layers[1], NULL, NULL}, NULL, NULL, &bud}, &err) != ER_OK) {
        fprintf(stderr, "bench_io: %s\n", err.msg);
        return 1;
    }
    static const bench_case cases[] = {
        {"libtiff-deflate6", ER_COMPRESS_DEFLATE, 6, 0, 0, 1, 1},
        {"default-deflate1", ER_COMPRESS_DEFLATE, 0, 0, 0, 0, 1},
        {"default-deflate1", ER_COMPRESS_DEFLATE, 0, 0, 0, 0, 0},
        {"deflate6", ER_COMPRESS_DEFLATE, 6, 0, 0, 0, 0},
        {"zstd1", ER_COMPRESS_ZSTD, 1, 0, 0, 0, 0},
        {"zstd3", ER_COMPRESS_ZSTD, 3, 0, 0, 0, 0},
        {"deflate1-precision1e-4", ER_COMPRESS_DEFLATE, 0, 0, 1e-4, 0, 0},
        {"zstd1-precision1e-4", ER_COMPRESS_ZSTD, 1, 0, 1e-4, 0, 0},
        {"deflate1-cog", ER_COMPRESS_DEFLATE, 0, 1, 0, 0, 0},
    };
    double base = 0;
    size_t base_bytes = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t bytes;
        double s = time_case(&cases[i], layers, n, repeats, dir, &bytes);
        if (i == 0) {
            base = s;
            base_bytes = bytes;
        }
        printf("bench=io mode=%s size=%d threads=%d seconds=%.3f mbytes=%.1f cells_per_s=%.3g "
               "speedup_vs_libtiff=%.2f size_vs_libtiff=%.3f\n",
               cases[i].mode, n, cases[i].one_thread ? 1 : all_threads, s, (double)bytes / 1e6,
               3.0 * (double)cells / s, base / s, (double)bytes / (double)base_bytes);
        fflush(stdout);
    }
    size_t bytes;
    time_case(&cases[1], layers, n, 1, dir, &bytes);
    double read_base = time_read(1, layers[1], n, repeats, dir);
    for (int libtiff = 1; libtiff >= 0; libtiff--) {
        double s = libtiff ? read_base : time_read(0, layers[1], n, repeats, dir);
        printf("bench=io mode=%s size=%d threads=%d seconds=%.3f cells_per_s=%.3g speedup_vs_libtiff=%.2f\n",
               libtiff ? "read-libtiff" : "read", n, libtiff ? 1 : all_threads, s, 3.0 * (double)cells / s,
               read_base / s);
    }
    char path[4096];
    for (int l = 0; l < 3; l++) {
        snprintf(path, sizeof path, "%.2048s/%s.tif", dir, names[l]);
        unlink(path);
    }
    rmdir(dir);
    for (int l = 0; l < 3; l++)
        free(layers[l]);
    return 0;
}
