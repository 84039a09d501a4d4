/*
 * libFuzzer target: the GeoTIFF reader on arbitrary bytes.
 *
 * Every input must give either a clean error (one line, the file named, the
 * image left empty) or an image that keeps the reader's promises: positive
 * size, every non-finite cell marked nodata, a mask only when some cell is
 * nodata.  A small image read successfully is also written back with
 * er_tiff_write and read again: the same size, the same nodata cells, the
 * same values bit for bit and the same georeferencing tags.
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

/* Round trips only for small images: the writer fsyncs and compresses. */
#define ROUNDTRIP_MAX_CELLS 4096

static void check_image(const er_image *img)
{
    ER_FUZZ_CHECK(img->width > 0 && img->height > 0, "size %dx%d", img->width, img->height);
    ER_FUZZ_CHECK(img->data != NULL, "no data");
    ER_FUZZ_CHECK(img->format == ER_FORMAT_TIFF, "format %d", (int)img->format);
    ER_FUZZ_CHECK(img->has_nodata_value || isnan(img->nodata_value), "nodata value without a declaration");
    size_t n = (size_t)img->width * (size_t)img->height, marked = 0;
    for (size_t i = 0; i < n; i++) {
        int nd = img->nodata && img->nodata[i];
        ER_FUZZ_CHECK(!img->nodata || img->nodata[i] <= 1, "mask value %u", img->nodata[i]);
        ER_FUZZ_CHECK(isfinite(img->data[i]) || nd, "cell %zu is %g but not nodata", i, (double)img->data[i]);
        marked += (size_t)nd;
    }
    ER_FUZZ_CHECK(!img->nodata || marked > 0, "a nodata mask with no nodata cell");
}

static void check_empty(const er_image *img)
{
    ER_FUZZ_CHECK(img->width == 0 && img->height == 0 && !img->data && !img->nodata && !img->georef.pixel_scale
                      && !img->georef.geokeys && !img->georef.gdal_metadata && !img->georef.gdal_nodata,
                  "failed read left data in the image");
}

static int same_doubles(const double *a, size_t na, const double *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

static int same_string(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Written as float32 and read back: what must survive (tiff_write.c). */
static void roundtrip(const er_image *img)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/rt.tif", er_fuzz_dir());
    er_layer_out out = {img->width, img->height, img->data, img->nodata, img->nodata_value, &img->georef, "fuzz"};
    er_error err = {{0}};
    er_status st = er_tiff_write(path, &out, &err);
    if (st != ER_OK) {
        /* A tag libtiff cannot write back (an odd count) may be refused,
         * cleanly; nothing may be left behind. */
        er_fuzz_check_error(st, &err, "cannot write '");
        ER_FUZZ_CHECK(access(path, F_OK) != 0, "failed write left %s", path);
        return;
    }
    er_image back;
    er_read_opts opts = {.max_bytes = ER_FUZZ_MAX_BYTES};
    st = er_tiff_read(path, &opts, &back, &err);
    ER_FUZZ_CHECK(st == ER_OK, "cannot read back what was written: %s", err.msg);
    check_image(&back);
    ER_FUZZ_CHECK(back.width == img->width && back.height == img->height, "size changed");
    size_t n = (size_t)img->width * (size_t)img->height;
    double nv = img->nodata_value;
    float ndv = isnan(nv) ? NAN : fabs(nv) >= 0x1.ffffffp127 ? (nv > 0 ? INFINITY : -INFINITY) : (float)nv;
    for (size_t i = 0; i < n; i++) {
        int nd0 = img->nodata && img->nodata[i], nd1 = back.nodata && back.nodata[i];
        if (nd0) {
            ER_FUZZ_CHECK(nd1, "nodata cell %zu became valid", i);
            continue;
        }
        ER_FUZZ_CHECK(memcmp(&img->data[i], &back.data[i], sizeof(float)) == 0, "cell %zu: %.9g became %.9g", i,
                      (double)img->data[i], (double)back.data[i]);
        /* float32 cannot tell a valid cell from the nodata value once both
         * round to the same float (an int32 or float64 input); only then
         * may a valid cell read back as nodata. */
        ER_FUZZ_CHECK(!nd1 || img->data[i] == ndv, "valid cell %zu (%.9g) became nodata", i, (double)img->data[i]);
    }
    const er_georef *a = &img->georef, *b = &back.georef;
    ER_FUZZ_CHECK(same_doubles(a->pixel_scale, a->n_pixel_scale, b->pixel_scale, b->n_pixel_scale)
                      && same_doubles(a->tiepoints, a->n_tiepoints, b->tiepoints, b->n_tiepoints)
                      && same_doubles(a->transformation, a->n_transformation, b->transformation,
                                      b->n_transformation)
                      && same_doubles(a->geodoubles, a->n_geodoubles, b->geodoubles, b->n_geodoubles),
                  "a double georeferencing tag changed");
    ER_FUZZ_CHECK(a->n_geokeys == b->n_geokeys
                      && (a->n_geokeys == 0 || memcmp(a->geokeys, b->geokeys, a->n_geokeys * 2) == 0),
                  "GeoKeyDirectory changed");
    ER_FUZZ_CHECK(same_string(a->geoascii, b->geoascii), "GeoAsciiParams changed");
    ER_FUZZ_CHECK(same_string(a->gdal_metadata, b->gdal_metadata), "GDAL_METADATA changed");
    ER_FUZZ_CHECK(!img->has_nodata_value || back.has_nodata_value, "GDAL_NODATA lost");
    er_image_free(&back);
    ER_FUZZ_CHECK(unlink(path) == 0, "unlink");
}

static er_status read_band(const char *path, int band, er_image *img, er_error *err)
{
    er_read_opts opts = {.band = band, .max_bytes = ER_FUZZ_MAX_BYTES};
    er_status st = er_tiff_read(path, &opts, img, err);
    if (st != ER_OK) {
        char prefix[PATH_MAX + 16];
        snprintf(prefix, sizeof prefix, "cannot read '%s': ", path);
        er_fuzz_check_error(st, err, prefix);
        check_empty(img);
    } else {
        check_image(img);
    }
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = er_fuzz_file(data, size);
    er_image img;
    er_error err = {{0}};
    er_status st = read_band(path, 0, &img, &err);
    if (st == ER_OK && (size_t)img.width * (size_t)img.height <= ROUNDTRIP_MAX_CELLS)
        roundtrip(&img);
    er_image_free(&img);
    /* A multi-band file: the bands through --band too. */
    if (st == ER_EUNSUPPORTED && strstr(err.msg, "--band")) {
        for (int band = 1; band <= 3; band++) {
            if (read_band(path, band, &img, &err) == ER_OK
                && (size_t)img.width * (size_t)img.height <= ROUNDTRIP_MAX_CELLS)
                roundtrip(&img);
            er_image_free(&img);
        }
    }
    return 0;
}
