/*
 * GeoTIFF writer: one float32 band, tiled, DEFLATE with the floating-point
 * predictor (DESIGN.md §6), the input's georeferencing tags copied
 * unchanged, written through io/atomic.h so no partial file ever carries
 * the final name.
 *
 * Layout choices:
 * - Tiles are 256x256.  A map narrower or shorter than 256 gets a tile
 *   side of its own size rounded up to a multiple of 16 (TIFF requires
 *   multiples of 16), so a small map is one tile with little padding.
 *   Edge tiles are padded by repeating the last column and row: padding
 *   is never read, and repeated values predict to zero and cost nothing.
 * - DEFLATE level 6, zlib's default: within a few per cent of level 9 on
 *   DEM data at about a third of the time.
 * - Classic TIFF unless the uncompressed tiles plus a margin reach 4 GiB,
 *   then BigTIFF (offsets beyond 4 GiB need it; DEFLATE never expands data
 *   by more than a fraction of a per cent).
 * - Little-endian always, and no DateTime or Software tag, so the same
 *   layer written twice gives the same bytes on any machine with the same
 *   zlib.
 */
#include "tiff_common.h"

#include "atomic.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILE_SIDE 256u
#define DEFLATE_LEVEL 6

static uint32_t tile_side(int n)
{
    uint32_t side = ((uint32_t)n + 15u) / 16u * 16u;
    return side < TILE_SIDE ? side : TILE_SIDE;
}

/* As float32 cells store it: out-of-range values become +-inf. */
static float nodata_as_float(double v)
{
    if (isnan(v))
        return NAN;
    if (fabs(v) >= 0x1.ffffffp127)
        return v > 0 ? INFINITY : -INFINITY;
    return (float)v;
}

/* Shortest "%.Ng" that reads back as the same double; NaN as GDAL writes
 * it. */
static void format_nodata(char *buf, size_t n, double v)
{
    if (isnan(v)) {
        snprintf(buf, n, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, n, v > 0 ? "inf" : "-inf");
        return;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, n, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static int same_value(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* The GDAL_NODATA string to write, or NULL for none: the input's own string
 * when it still names the value the cells hold, else a fresh one. */
static const char *nodata_tag(const er_layer_out *layer, size_t cells, char *buf, size_t n)
{
    const char *declared = layer->georef ? layer->georef->gdal_nodata : NULL;
    int any = 0;
    if (layer->nodata)
        for (size_t i = 0; i < cells && !any; i++)
            any = layer->nodata[i] != 0;
    if (!any && !declared)
        return NULL;
    if (declared) {
        char *end;
        double v = strtod(declared, &end);
        if (end != declared && same_value(v, layer->nodata_value))
            return declared;
    }
    format_nodata(buf, n, layer->nodata_value);
    return buf;
}

static int set_doubles(TIFF *tif, uint32_t tag, const double *v, size_t n)
{
    return !v || n == 0 || n > UINT32_MAX || TIFFSetField(tif, tag, (uint32_t)n, v);
}

static int set_georef(TIFF *tif, const er_georef *g)
{
    if (!g)
        return 1;
    return set_doubles(tif, ER_TAG_PIXEL_SCALE, g->pixel_scale, g->n_pixel_scale)
        && set_doubles(tif, ER_TAG_TIEPOINT, g->tiepoints, g->n_tiepoints)
        && set_doubles(tif, ER_TAG_TRANSFORMATION, g->transformation, g->n_transformation)
        && (!g->geokeys || g->n_geokeys == 0 || g->n_geokeys > UINT32_MAX
            || TIFFSetField(tif, ER_TAG_GEOKEYS, (uint32_t)g->n_geokeys, g->geokeys))
        && set_doubles(tif, ER_TAG_GEODOUBLES, g->geodoubles, g->n_geodoubles)
        && (!g->geoascii || TIFFSetField(tif, ER_TAG_GEOASCII, g->geoascii))
        && (!g->gdal_metadata || TIFFSetField(tif, ER_TAG_GDAL_METADATA, g->gdal_metadata));
}

/* Copies one tile out of the layer, nodata cells replaced by the nodata
 * value, the part beyond the map filled by repeating the edge. */
static void fill_tile(float *tile, uint32_t tw, uint32_t th, const er_layer_out *layer, uint32_t x0, uint32_t y0,
                      float ndv)
{
    uint32_t w = (uint32_t)layer->width, h = (uint32_t)layer->height;
    for (uint32_t ty = 0; ty < th; ty++) {
        uint32_t y = y0 + ty < h ? y0 + ty : h - 1;
        const float *src = layer->data + (size_t)y * w;
        const uint8_t *nd = layer->nodata ? layer->nodata + (size_t)y * w : NULL;
        float *dst = tile + (size_t)ty * tw;
        for (uint32_t tx = 0; tx < tw; tx++) {
            uint32_t x = x0 + tx < w ? x0 + tx : w - 1;
            dst[tx] = nd && nd[x] ? ndv : src[x];
        }
    }
}

/* er_tiff_write with the BigTIFF switch and DEFLATE level exposed (for
 * tests; io/tiff_common.h). */
er_status er_tiff_write_ex(const char *path, const er_layer_out *layer, const er_tiff_write_opts *opts,
                           er_error *err)
{
    er_atomic a;
    er_tiff_io io;
    TIFF *tif = NULL;
    float *tile = NULL;
    er_status st;
    char ndbuf[64];

    if (!layer || !layer->data || layer->width <= 0 || layer->height <= 0)
        return er_fail(err, ER_EINVAL, "cannot write '%s': empty layer", path);
    uint32_t w = (uint32_t)layer->width, h = (uint32_t)layer->height;
    uint32_t tw = tile_side(layer->width), th = tile_side(layer->height);
    size_t cells = (size_t)w * h;
    const char *ndtag = nodata_tag(layer, cells, ndbuf, sizeof ndbuf);
    float ndv = nodata_as_float(layer->nodata_value);

    /* Uncompressed size of all tiles, padding included, plus 1/64 and 1 MiB
     * for DEFLATE's worst case, the tile tables and the tags. */
    double tiles_x = ceil((double)w / tw), tiles_y = ceil((double)h / th);
    double estimate = tiles_x * tiles_y * tw * th * 4.0;
    estimate += estimate / 64.0 + 1048576.0;
    int big = opts->force_bigtiff || estimate >= 4294967296.0;

    if ((st = er_atomic_open(&a, path, err)) != ER_OK)
        return st;
    tif = er_tiff_open_fd(&io, a.fd, path, big ? "w8l" : "wl", 0);
    if (!tif)
        goto fail;

    int ok = TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, w) && TIFFSetField(tif, TIFFTAG_IMAGELENGTH, h)
          && TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 32) && TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1)
          && TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP)
          && TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK)
          && TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG)
          && TIFFSetField(tif, TIFFTAG_TILEWIDTH, tw) && TIFFSetField(tif, TIFFTAG_TILELENGTH, th)
          && TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE)
          && TIFFSetField(tif, TIFFTAG_PREDICTOR, PREDICTOR_FLOATINGPOINT)
          && TIFFSetField(tif, TIFFTAG_ZIPQUALITY, opts->deflate_level)
          && (!layer->provenance || TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, layer->provenance))
          && set_georef(tif, layer->georef) && (!ndtag || TIFFSetField(tif, ER_TAG_GDAL_NODATA, ndtag));
    if (!ok)
        goto fail;

    tile = malloc((size_t)tw * th * sizeof(float));
    if (!tile) {
        st = er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
        goto cleanup;
    }
    for (uint32_t y0 = 0; y0 < h; y0 += th) {
        for (uint32_t x0 = 0; x0 < w; x0 += tw) {
            fill_tile(tile, tw, th, layer, x0, y0, ndv);
            uint32_t index = TIFFComputeTile(tif, x0, y0, 0, 0);
            if (TIFFWriteEncodedTile(tif, index, tile, (tmsize_t)((size_t)tw * th * sizeof(float))) < 0)
                goto fail;
        }
    }
    if (!TIFFWriteDirectory(tif) || io.io_errno)
        goto fail;
    TIFFClose(tif);
    tif = NULL;
    free(tile);
    tile = NULL;
    if (io.io_errno || io.msg[0])
        goto fail;
    return er_atomic_commit(&a, err);

fail:
    st = er_fail(err, ER_EIO, "cannot write '%s': %s", path,
                 io.io_errno ? er_atomic_reason(io.io_errno) : er_tiff_reason(&io, "libtiff failed"));
cleanup:
    free(tile);
    if (tif)
        TIFFClose(tif);
    er_atomic_abort(&a);
    return st;
}

/* Writes layer as a float32 GeoTIFF at path (see the top of this file for
 * the layout).  layer->georef's tags are written unchanged except
 * GDAL_NODATA, which is written when the layer has nodata cells or the
 * georef declares one: the georef's own string when it parses to
 * layer->nodata_value (NaN matching NaN), else that value formatted
 * ("nan", or the shortest %.15g-%.17g that reads back exactly).  Cells
 * where layer->nodata[i] is set hold (float)layer->nodata_value.
 * layer->provenance, when not NULL, becomes the ImageDescription.
 *
 * Returns ER_OK once the file is complete under its final name, or
 * ER_EINVAL (empty layer), ER_ENOMEM, ER_EIO (cannot create, write --
 * ENOSPC, EFBIG -- fsync or rename; the reason is in err) with no file and
 * no temporary left.  Thread-safe for distinct paths. */
er_status er_tiff_write(const char *path, const er_layer_out *layer, er_error *err)
{
    const er_tiff_write_opts opts = {0, DEFLATE_LEVEL};
    return er_tiff_write_ex(path, layer, &opts, err);
}
