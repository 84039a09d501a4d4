/*
 * libFuzzer target: the PNG reader on arbitrary bytes.
 *
 * Every input must give either a clean error (one line, the file named, the
 * image left empty) or an image that keeps the reader's promises: positive
 * size, finite values, a mask only when some cell is nodata.  A small image
 * read successfully is written back with er_png_write and read again: the
 * same size and nodata cells, every value within the writer's documented
 * bound (half a 16-bit step of the range plus float rounding).
 */
#define _GNU_SOURCE /* memfd_create in fuzz_util.h */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/image.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ROUNDTRIP_MAX_CELLS 4096

static void check_image(const er_image *img)
{
    ER_FUZZ_CHECK(img->width > 0 && img->height > 0, "size %dx%d", img->width, img->height);
    ER_FUZZ_CHECK(img->data != NULL, "no data");
    ER_FUZZ_CHECK(img->format == ER_FORMAT_PNG, "format %d", (int)img->format);
    ER_FUZZ_CHECK(!img->has_nodata_value, "a PNG declares no nodata value");
    ER_FUZZ_CHECK(!img->nodata || img->png_alpha, "nodata cells without alpha");
    size_t n = (size_t)img->width * (size_t)img->height, marked = 0;
    for (size_t i = 0; i < n; i++) {
        ER_FUZZ_CHECK(isfinite(img->data[i]), "cell %zu is %g", i, (double)img->data[i]);
        ER_FUZZ_CHECK(!img->nodata || img->nodata[i] <= 1, "mask value %u", img->nodata[i]);
        marked += img->nodata && img->nodata[i];
    }
    ER_FUZZ_CHECK(!img->nodata || marked > 0, "a nodata mask with no nodata cell");
}

static void check_empty(const er_image *img)
{
    ER_FUZZ_CHECK(img->width == 0 && img->height == 0 && !img->data && !img->nodata,
                  "failed read left data in the image");
}

static float ulpf(float x)
{
    x = fabsf(x);
    return nextafterf(x, INFINITY) - x;
}

static void roundtrip(const er_image *img)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/rt.png", er_fuzz_dir());
    er_layer_out out = {img->width, img->height, img->data, img->nodata, 0.0, NULL, "fuzz"};
    er_error err = {{0}};
    er_status st = er_png_write(path, &out, &err);
    ER_FUZZ_CHECK(st == ER_OK, "cannot write what was read: %s", err.msg);
    er_image back;
    er_read_opts opts = {.max_bytes = ER_FUZZ_MAX_BYTES};
    st = er_png_read(path, &opts, &back, &err);
    ER_FUZZ_CHECK(st == ER_OK, "cannot read back what was written: %s", err.msg);
    check_image(&back);
    ER_FUZZ_CHECK(back.width == img->width && back.height == img->height, "size changed");
    size_t n = (size_t)img->width * (size_t)img->height;
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (img->nodata && img->nodata[i])
            continue;
        lo = fminf(lo, img->data[i]);
        hi = fmaxf(hi, img->data[i]);
    }
    for (size_t i = 0; i < n; i++) {
        int nd0 = img->nodata && img->nodata[i], nd1 = back.nodata && back.nodata[i];
        ER_FUZZ_CHECK(nd0 == nd1, "cell %zu: nodata %d became %d", i, nd0, nd1);
        if (nd0)
            continue;
        /* io/png_write.c: half a step, half an ulp, the double arithmetic. */
        double bound = ((double)hi - lo) / 131070.0 * (1 + 0x1p-40) + 0.5 * ulpf(back.data[i])
                     + 0x1p-48 * (fabs((double)lo) + fabs((double)hi));
        double e = fabs((double)back.data[i] - (double)img->data[i]);
        ER_FUZZ_CHECK(e <= bound, "cell %zu: wrote %.9g read %.9g (error %.3g > %.3g)", i, (double)img->data[i],
                      (double)back.data[i], e, bound);
    }
    er_image_free(&back);
    ER_FUZZ_CHECK(unlink(path) == 0, "unlink");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = er_fuzz_file(data, size);
    er_image img;
    er_error err = {{0}};
    er_read_opts opts = {.max_bytes = ER_FUZZ_MAX_BYTES};
    er_status st = er_png_read(path, &opts, &img, &err);
    if (st != ER_OK) {
        char prefix[PATH_MAX + 16];
        snprintf(prefix, sizeof prefix, "cannot read '%s': ", path);
        er_fuzz_check_error(st, &err, prefix);
        check_empty(&img);
        return 0;
    }
    check_image(&img);
    if ((size_t)img.width * (size_t)img.height <= ROUNDTRIP_MAX_CELLS)
        roundtrip(&img);
    er_image_free(&img);
    return 0;
}
