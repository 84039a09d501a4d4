/*
 * PNG heightmaps out: 16-bit greyscale, grey + alpha when the layer has
 * nodata cells.  Also 8-bit RGB pictures (er_png_write_rgb: previews), which
 * share everything below but the sample encoding and the mapping chunk.  The valid cells' range [min, max] is spread over 0..65535
 * and recorded in an iTXt chunk (io/png_common.h), so reading the file back
 * gives every valid cell within half a quantisation step of what was
 * written:
 *
 *     raw  = round((v - min) / (max - min) * 65535)            (writer)
 *     v'   = (float)(min + raw / 65535 * (max - min))           (reader)
 *     |v' - v| <= (max - min) / 131070 + ulp(v') / 2 + O(2^-52 |min|+|max|)
 *
 * the last terms being the final rounding to float and the double
 * arithmetic.  A constant layer (max == min) writes raw 0 everywhere and
 * reads back exactly.
 *
 * Byte-identical output for identical input: no tIME chunk, nothing taken
 * from the clock or the environment, fixed zlib level and filter choice.
 *
 * The file is written through io/atomic.h: a temporary in the target
 * directory, flushed, fsynced and renamed into place; any failure (libpng's
 * included, which longjmps back into write_body()) removes the temporary.
 */
#include "atomic.h"
#include "image.h"
#include "png_common.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* zlib level 6: zlib's own default, a good size/speed balance for 16-bit
 * terrain (level 9 is several times slower for a few per cent). */
#define ER_PNG_ZLEVEL 6

typedef struct write_ctx write_ctx;

struct write_ctx {
    const char *path;
    int width, height;
    int bit_depth, color_type;
    const er_layer_out *layer;   /* heightmap: NULL for an RGB picture */
    const uint8_t *rgb;          /* RGB picture: width * height * 3 bytes */
    const char *provenance;      /* may be NULL */
    /* Row y, encoded as libpng wants it. */
    const unsigned char *(*row_at)(write_ctx *c, int y);
    FILE *f;
    png_structp png;
    png_infop info;
    er_status st;         /* status of a libpng or write error; ER_OK until one */
    char why[256];        /* its reason */
    unsigned char *row;   /* one encoded row */
    char *key_map, *txt_map, *key_prov, *txt_prov; /* owned copies for png_text */
    double min, max;      /* range of the valid cells */
    const er_io_progress *pg; /* may be NULL */
};

static void on_error(png_structp png, png_const_charp msg)
{
    write_ctx *c = png_get_error_ptr(png);
    if (c->st == ER_OK) {
        c->st = strstr(msg, "ut of memory") || strstr(msg, "ut of Memory") ? ER_ENOMEM : ER_EIO;
        snprintf(c->why, sizeof c->why, "%s", c->st == ER_ENOMEM ? "out of memory" : msg);
    }
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* Our own write function keeps errno's reason (ENOSPC, EFBIG, EIO). */
static void on_write(png_structp png, png_bytep buf, size_t n)
{
    write_ctx *c = png_get_io_ptr(png);
    if (fwrite(buf, 1, n, c->f) == n)
        return;
    c->st = ER_EIO;
    snprintf(c->why, sizeof c->why, "%s", er_atomic_reason(errno));
    png_error(png, c->why);
}

static void on_flush(png_structp png)
{
    write_ctx *c = png_get_io_ptr(png);
    if (fflush(c->f) == 0)
        return;
    c->st = ER_EIO;
    snprintf(c->why, sizeof c->why, "%s", er_atomic_reason(errno));
    png_error(png, c->why);
}

/* Range of the valid cells; refuses a non-finite one (it has no 16-bit
 * sample, and a NaN would poison min/max).  No valid cell: [0, 0]. */
static er_status scan_range(write_ctx *c, er_error *err)
{
    const er_layer_out *l = c->layer;
    size_t w = (size_t)l->width, h = (size_t)l->height;
    int any = 0;
    float lo = 0, hi = 0;
    for (size_t y = 0; y < h; y++) {
        for (size_t x = 0; x < w; x++) {
            size_t i = y * w + x;
            if (l->nodata && l->nodata[i])
                continue;
            float v = l->data[i];
            if (!isfinite(v))
                return er_fail(err, ER_EINVAL, "cannot write '%s': non-finite value at (%zu,%zu)", c->path, x, y);
            if (!any || v < lo)
                lo = v;
            if (!any || v > hi)
                hi = v;
            any = 1;
        }
    }
    c->min = lo;
    c->max = hi;
    return ER_OK;
}

/* Encodes row y big-endian: grey, then alpha (0 nodata, 65535 valid) when
 * the layer has a nodata mask. */
static const unsigned char *encode_row(write_ctx *c, int y)
{
    const er_layer_out *l = c->layer;
    size_t w = (size_t)l->width, base = (size_t)y * w;
    double range = c->max - c->min;
    unsigned char *p = c->row;
    for (size_t x = 0; x < w; x++) {
        int valid = !(l->nodata && l->nodata[base + x]);
        unsigned raw = 0;
        if (valid && range > 0) {
            /* v - min <= max - min after rounding too (rounding is
             * monotonic), so t lies in [0, 65535]; +0.5 and truncation
             * round half up. */
            double t = ((double)l->data[base + x] - c->min) / range * 65535.0;
            raw = t >= 65535.0 ? 65535u : (unsigned)(t + 0.5);
        }
        *p++ = (unsigned char)(raw >> 8);
        *p++ = (unsigned char)(raw & 0xffu);
        if (l->nodata) {
            unsigned char a = valid ? 0xffu : 0u;
            *p++ = a;
            *p++ = a;
        }
    }
    return c->row;
}

/* RGB rows are already what libpng wants. */
static const unsigned char *rgb_row(write_ctx *c, int y)
{
    return c->rgb + (size_t)y * (size_t)c->width * 3;
}

/* Every libpng call happens here, under one setjmp; c owns what must be
 * freed.  Returns the status and fills err on failure. */
static er_status write_body(write_ctx *c, er_error *err)
{
    if (setjmp(png_jmpbuf(c->png))) {
        er_status st = c->st != ER_OK ? c->st : ER_EIO;
        return er_fail(err, st, "cannot write '%s': %s", c->path, c->why[0] ? c->why : "libpng error");
    }
    png_set_write_fn(c->png, c, on_write, on_flush);
    png_set_user_limits(c->png, ER_PNG_SIDE_MAX, ER_PNG_SIDE_MAX);
    png_set_IHDR(c->png, c->info, (png_uint_32)c->width, (png_uint_32)c->height, c->bit_depth, c->color_type,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(c->png, ER_PNG_ZLEVEL);
    png_set_filter(c->png, PNG_FILTER_TYPE_BASE, PNG_ALL_FILTERS);

    /* %.17g: the doubles (floats widened) round-trip exactly through text
     * (C locale number syntax: erode never calls setlocale). */
    if (c->layer) {
        char map[96];
        snprintf(map, sizeof map, "min=%.17g max=%.17g", c->min, c->max);
        c->key_map = strdup(ER_PNG_KEY_MAPPING);
        c->txt_map = strdup(map);
        if (!c->key_map || !c->txt_map)
            return er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", c->path);
    }
    if (c->provenance) {
        c->key_prov = strdup(ER_PNG_KEY_PROVENANCE);
        c->txt_prov = strdup(c->provenance);
        if (!c->key_prov || !c->txt_prov)
            return er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", c->path);
    }
    png_text text[2];
    int n_text = 0;
    memset(text, 0, sizeof text);
    if (c->key_map) {
        text[n_text].compression = PNG_ITXT_COMPRESSION_NONE;
        text[n_text].key = c->key_map;
        text[n_text].text = c->txt_map;
        text[n_text].itxt_length = strlen(c->txt_map);
        n_text++;
    }
    if (c->key_prov) {
        text[n_text].compression = PNG_ITXT_COMPRESSION_NONE;
        text[n_text].key = c->key_prov;
        text[n_text].text = c->txt_prov;
        text[n_text].itxt_length = strlen(c->txt_prov);
        n_text++;
    }
    if (n_text > 0)
        png_set_text(c->png, c->info, text, n_text);
    png_write_info(c->png, c->info);

    for (int y = 0; y < c->height; y++) {
        png_write_row(c->png, c->row_at(c, y));
        er_io_progress_report(c->pg, y + 1, c->height);
    }
    png_write_end(c->png, NULL);
    return ER_OK;
}

/* Writes the file described by c through io/atomic.h and frees what c
 * owns (c->row included). */
static er_status write_file(write_ctx *c, er_error *err)
{
    const char *path = c->path;
    er_atomic a;
    er_status st = er_atomic_open(&a, path, err);
    if (st) {
        free(c->row);
        return st;
    }
    /* From here the FILE owns a.fd: a.fd is set to -1 so that commit or
     * abort never closes it a second time. */
    c->f = fdopen(a.fd, "wb");
    if (!c->f) {
        st = er_fail(err, ER_EIO, "cannot write '%s': %s", path, er_atomic_reason(errno));
        goto fail;
    }
    a.fd = -1;
    c->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, c, on_error, on_warning);
    c->info = c->png ? png_create_info_struct(c->png) : NULL;
    if (!c->info)
        st = er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
    else
        st = write_body(c, err);
    png_destroy_write_struct(c->png ? &c->png : NULL, c->info ? &c->info : NULL);
    if (st)
        goto fail;

    /* Flush, fsync and close ourselves: a full disk may only show here. */
    int rc = fflush(c->f);
    if (rc == 0)
        rc = fsync(fileno(c->f));
    int e = errno;
    if (fclose(c->f) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    c->f = NULL;
    if (rc != 0) {
        st = er_fail(err, ER_EIO, "cannot write '%s': %s", path, er_atomic_reason(e));
        goto fail;
    }
    st = er_atomic_commit(&a, err);
    goto done;
fail:
    if (c->f)
        fclose(c->f);
    er_atomic_abort(&a);
done:
    free(c->row);
    free(c->key_map);
    free(c->txt_map);
    free(c->key_prov);
    free(c->txt_prov);
    return st;
}

/*
 * Writes layer as a 16-bit greyscale PNG at path (see the comment at the top
 * of this file for the value mapping and its precision).  Cells flagged in
 * layer->nodata get alpha 0 (and grey 0); nodata_value is not used.  PNG
 * has no place for georeferencing nor for the height mapping as GDAL reads
 * it: the sidecars of io/png_sidecar.c (GDAL's "<path>.aux.xml" always,
 * the world file when layer->georef places the raster) are written after
 * the PNG, as members of the same output set; a world file an earlier run
 * left under its name is removed with the set.  layer->provenance, when not NULL, is stored
 * verbatim in an iTXt chunk (it should be UTF-8 JSON).
 *
 * Returns ER_OK; ER_EINVAL for an empty layer or a non-finite value in a
 * valid cell (the message gives its zero-based column and row); ER_EIO when the file cannot be created or written (the reason
 * from the system, e.g. no space left); ER_ENOMEM.  On failure no file is
 * left at path or under a temporary name, and err says why.
 * Thread-safe for distinct paths.
 */
er_status er_png_write(const char *path, const er_layer_out *layer, er_error *err)
{
    return er_png_write_progress(path, layer, NULL, err);
}

/* er_png_write, reporting progress per row. */
er_status er_png_write_progress(const char *path, const er_layer_out *layer, const er_io_progress *pg,
                                er_error *err)
{
    if (layer->width <= 0 || layer->height <= 0 || !layer->data)
        return er_fail(err, ER_EINVAL, "cannot write '%s': empty layer", path);
    write_ctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.width = layer->width;
    c.height = layer->height;
    c.bit_depth = 16;
    c.color_type = layer->nodata ? PNG_COLOR_TYPE_GRAY_ALPHA : PNG_COLOR_TYPE_GRAY;
    c.layer = layer;
    c.provenance = layer->provenance;
    c.row_at = encode_row;
    c.pg = pg;
    er_status st = scan_range(&c, err);
    if (st)
        return st;
    size_t rowbytes;
    if (!er_mul_size((size_t)layer->width, layer->nodata ? 4u : 2u, &rowbytes))
        return er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
    c.row = malloc(rowbytes);
    if (!c.row)
        return er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
    st = write_file(&c, err);
    return st ? st : er_png_sidecars_write(path, layer, c.min, c.max, err);
}

/*
 * Writes an 8-bit RGB picture (a preview, core/preview.h) to path: width *
 * height pixels, rgb row-major, top row first, 3 bytes per pixel, no
 * padding.  provenance, when not NULL, is stored verbatim in an iTXt chunk
 * as for er_png_write; there is no height mapping chunk (er_png_read does
 * not take these files back as heightmaps).  Same input, same bytes (no
 * tIME, fixed zlib level and filters).
 *
 * Returns ER_OK; ER_EINVAL for an empty picture; ER_EIO when the file
 * cannot be created or written; ER_ENOMEM.  On failure no file is left at
 * path or under a temporary name, and err says why.  Thread-safe for
 * distinct paths.
 */
er_status er_png_write_rgb(const char *path, int width, int height, const uint8_t *rgb, const char *provenance,
                           er_error *err)
{
    if (width <= 0 || height <= 0 || !rgb)
        return er_fail(err, ER_EINVAL, "cannot write '%s': empty picture", path);
    write_ctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.width = width;
    c.height = height;
    c.bit_depth = 8;
    c.color_type = PNG_COLOR_TYPE_RGB;
    c.rgb = rgb;
    c.provenance = provenance;
    c.row_at = rgb_row;
    return write_file(&c, err);
}
