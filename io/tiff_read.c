/*
 * GeoTIFF reader: one band of any integer (8/16/32-bit) or floating-point
 * (32/64-bit) TIFF that libtiff can decode, converted to float, with the
 * georeferencing tags kept byte for byte and the nodata cells marked.
 *
 * Strips and tiles are decoded whole (TIFFReadEncodedStrip/Tile) into one
 * reusable buffer and converted block by block; libtiff swaps byte order
 * and undoes predictors itself.  Everything large is checked against
 * er_read_opts.max_bytes before it is allocated.
 *
 * The common case of a large map -- little-endian float32 tiles or strips
 * with DEFLATE, ZSTD or no compression, as erode and GDAL write them -- is
 * decoded on all threads instead: the raw blocks are read in order
 * (TIFFReadRawTile/Strip) a batch at a time, then decompressed,
 * unpredicted and converted in parallel (io/tiff_codec.c), each block
 * into its own cells.
 */
#include "tiff_common.h"
#include "tiff_codec.h"

#include "../core/parallel.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum sample_type { ST_U8, ST_I8, ST_U16, ST_I16, ST_U32, ST_I32, ST_F32, ST_F64 } sample_type;

/* Everything the block converter needs; one per call. */
typedef struct reader {
    const char *path;
    er_tiff_io io;
    TIFF *tif;
    uint32_t width, height;
    sample_type type;
    size_t sample_bytes;  /* bytes of one sample */
    size_t pixel_stride;  /* bytes from one pixel's sample to the next one's */
    size_t band_offset;   /* bytes from a pixel's start to the chosen sample */
    uint16_t plane;       /* strip/tile plane of the band (separate planes) */
    int has_nodata;       /* a GDAL_NODATA value is declared */
    double nodata_cmp;    /* the declared value as the file's type holds it */
    int nodata_is_nan;
    int nodata_in_range;  /* the file's type can hold the value at all */
    float *data;
    uint8_t *mask;        /* allocated at the first nodata cell */
    const er_io_progress *pg; /* may be NULL */
} reader;

static er_status fail_read(reader *r, er_error *err, er_status st, const char *what)
{
    return er_fail(err, st, "cannot read '%s': %s", r->path, what);
}

/* "6.0 GiB", "512.0 MiB", "100 bytes". */
static void format_bytes(char *buf, size_t n, double bytes)
{
    if (bytes >= 1073741824.0)
        snprintf(buf, n, "%.1f GiB", bytes / 1073741824.0);
    else if (bytes >= 1048576.0)
        snprintf(buf, n, "%.1f MiB", bytes / 1048576.0);
    else
        snprintf(buf, n, "%.0f bytes", bytes);
}

/* Maps SAMPLEFORMAT + BITSPERSAMPLE to a type erode converts exactly or by
 * rounding to nearest (32-bit integers above 2^24, float64).  Others --
 * 1/2/4/12/24-bit, 64-bit integers, float16, complex -- are refused. */
static int classify(uint16_t format, uint16_t bits, sample_type *t, char *name, size_t n)
{
    const char *kind = "uint";
    switch (format) {
    case SAMPLEFORMAT_UINT:
    case SAMPLEFORMAT_VOID: /* "untyped": GDAL reads it as unsigned too */
        kind = "uint";
        if (bits == 8)
            return *t = ST_U8, 1;
        if (bits == 16)
            return *t = ST_U16, 1;
        if (bits == 32)
            return *t = ST_U32, 1;
        break;
    case SAMPLEFORMAT_INT:
        kind = "int";
        if (bits == 8)
            return *t = ST_I8, 1;
        if (bits == 16)
            return *t = ST_I16, 1;
        if (bits == 32)
            return *t = ST_I32, 1;
        break;
    case SAMPLEFORMAT_IEEEFP:
        kind = "float";
        if (bits == 32)
            return *t = ST_F32, 1;
        if (bits == 64)
            return *t = ST_F64, 1;
        break;
    case SAMPLEFORMAT_COMPLEXINT:
        kind = "complex int";
        break;
    case SAMPLEFORMAT_COMPLEXIEEEFP:
        kind = "complex float";
        break;
    default:
        snprintf(name, n, "with sample format %u", (unsigned)format);
        return 0;
    }
    snprintf(name, n, "%s%u", kind, (unsigned)bits);
    return 0;
}

/* The declared nodata value as the file's own type stores it: a float32
 * file with "-3.4028234663852886e+38" has -FLT_MAX in its cells, and an
 * int16 file cannot hold 1e6 so no cell matches it. */
static void nodata_setup(reader *r, double nd)
{
    r->has_nodata = 1;
    r->nodata_is_nan = isnan(nd);
    r->nodata_in_range = 1;
    r->nodata_cmp = nd;
    if (r->type == ST_F32) {
        if (isfinite(nd) && fabs(nd) > FLT_MAX) {
            /* Values rounding to +-FLT_MAX are still representable. */
            if (fabs(nd) >= 0x1.ffffffp127)
                r->nodata_in_range = 0;
            else
                r->nodata_cmp = nd > 0 ? FLT_MAX : -FLT_MAX;
        } else if (!isnan(nd)) {
            r->nodata_cmp = (double)(float)nd;
        }
    } else if (r->type != ST_F64) {
        r->nodata_in_range = !r->nodata_is_nan && isfinite(nd);
    }
}

/* float64 -> float32 without the undefined behaviour of converting a value
 * outside float's range: those become +-inf, as IEEE rounding gives. */
static float to_float(double v)
{
    if (fabs(v) >= 0x1.ffffffp127)
        return v > 0 ? INFINITY : -INFINITY;
    return (float)v;
}

static int mark_nodata(reader *r, size_t i)
{
    if (!r->mask) {
        r->mask = calloc((size_t)r->width * r->height, 1);
        if (!r->mask)
            return 0;
    }
    r->mask[i] = 1;
    return 1;
}

/* One sample -> float, and nodata if it equals the declared value or is
 * not finite after conversion (NaN or Inf cells in a float file, or a
 * float64 beyond float32's range: they would poison the simulation). */
#define CONVERT_BLOCK(T)                                                                       \
    for (uint32_t y = 0; y < ny; y++) {                                                        \
        const unsigned char *p = src + (size_t)y * src_row + r->band_offset;                   \
        size_t base = (size_t)(y0 + y) * r->width + x0;                                        \
        for (uint32_t x = 0; x < nx; x++, p += r->pixel_stride) {                              \
            T s;                                                                               \
            memcpy(&s, p, sizeof s);                                                           \
            double v = (double)s;                                                              \
            float f = to_float(v);                                                             \
            r->data[base + x] = f;                                                             \
            int nd = !isfinite(f);                                                             \
            if (r->has_nodata && r->nodata_in_range)                                           \
                nd |= r->nodata_is_nan ? v != v : v == r->nodata_cmp;                          \
            if (nd && !mark_nodata(r, base + x))                                               \
                return 0;                                                                      \
        }                                                                                      \
    }

/* Converts an nx x ny block whose first sample row starts at src and whose
 * rows are src_row bytes apart into the image at (x0, y0).  Returns 0 when
 * the mask cannot be allocated. */
static int convert_block(reader *r, const unsigned char *src, size_t src_row, uint32_t x0, uint32_t y0,
                         uint32_t nx, uint32_t ny)
{
    switch (r->type) {
    case ST_U8: CONVERT_BLOCK(uint8_t) break;
    case ST_I8: CONVERT_BLOCK(int8_t) break;
    case ST_U16: CONVERT_BLOCK(uint16_t) break;
    case ST_I16: CONVERT_BLOCK(int16_t) break;
    case ST_U32: CONVERT_BLOCK(uint32_t) break;
    case ST_I32: CONVERT_BLOCK(int32_t) break;
    case ST_F32: CONVERT_BLOCK(float) break;
    case ST_F64: CONVERT_BLOCK(double) break;
    }
    return 1;
}

/* A block a GDAL "sparse" file never wrote (offset and byte count 0) reads
 * as the nodata value, or 0 without one, as GDAL reads it. */
static int fill_sparse(reader *r, uint32_t x0, uint32_t y0, uint32_t nx, uint32_t ny)
{
    int nd = r->has_nodata && r->nodata_in_range;
    float v = nd ? to_float(r->nodata_cmp) : 0.0f;
    if (nd && r->nodata_is_nan)
        v = NAN;
    for (uint32_t y = 0; y < ny; y++) {
        size_t base = (size_t)(y0 + y) * r->width + x0;
        for (uint32_t x = 0; x < nx; x++) {
            r->data[base + x] = v;
            if ((nd || !isfinite(v)) && !mark_nodata(r, base + x))
                return 0;
        }
    }
    return 1;
}

static int is_sparse(reader *r, uint32_t strile)
{
    int e1 = 0, e2 = 0;
    uint64_t off = TIFFGetStrileOffsetWithErr(r->tif, strile, &e1);
    uint64_t cnt = TIFFGetStrileByteCountWithErr(r->tif, strile, &e2);
    return !e1 && !e2 && off == 0 && cnt == 0;
}

static er_status block_error(reader *r, er_error *err, const char *kind, uint32_t index)
{
    char what[ER_ERROR_MAX];
    snprintf(what, sizeof what, "%s %" PRIu32 ": %s", kind, index, er_tiff_reason(&r->io, "cannot decode"));
    return fail_read(r, err, r->io.io_errno ? ER_EIO : ER_EFORMAT, what);
}

/* Where the blocks (tiles or strips) of the band lie. */
typedef struct blocks {
    uint32_t bw, bh;          /* tile size, or width x rows per strip */
    uint32_t across;          /* blocks in a row of the image */
    int tiled;
} blocks;

static er_status read_parallel(reader *r, er_compress c, int predictor, const blocks *g, er_error *err);
static int parallel_codec(reader *r, er_compress *c, int *predictor, tmsize_t block_bytes);

static er_status read_strips(reader *r, unsigned char *buf, tmsize_t bufsize, er_error *err)
{
    uint32_t rps = 0;
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_ROWSPERSTRIP, &rps);
    if (rps == 0 || rps > r->height)
        rps = r->height;
    uint64_t row_bytes = TIFFScanlineSize64(r->tif);
    if (row_bytes == 0 || row_bytes < (uint64_t)(r->width - 1) * r->pixel_stride + r->band_offset + r->sample_bytes)
        return fail_read(r, err, ER_EFORMAT, "inconsistent strip layout");
    er_compress codec;
    int predictor;
    if (row_bytes == (uint64_t)r->width * 4 && row_bytes * rps == (uint64_t)bufsize
        && parallel_codec(r, &codec, &predictor, bufsize)) {
        blocks g = {r->width, rps, 1, 0};
        return read_parallel(r, codec, predictor, &g, err);
    }
    uint32_t nstrips = TIFFNumberOfStrips(r->tif);
    for (uint32_t y0 = 0; y0 < r->height; y0 += rps) {
        uint32_t ny = r->height - y0 < rps ? r->height - y0 : rps;
        uint32_t strip = TIFFComputeStrip(r->tif, y0, r->plane);
        if (strip >= nstrips)
            return fail_read(r, err, ER_EFORMAT, "missing strips");
        if (is_sparse(r, strip)) {
            if (!fill_sparse(r, 0, y0, r->width, ny))
                return fail_read(r, err, ER_ENOMEM, "out of memory");
            continue;
        }
        tmsize_t got = TIFFReadEncodedStrip(r->tif, strip, buf, bufsize);
        if (got < 0 || (uint64_t)got < row_bytes * ny)
            return block_error(r, err, "strip", strip);
        if (!convert_block(r, buf, (size_t)row_bytes, 0, y0, r->width, ny))
            return fail_read(r, err, ER_ENOMEM, "out of memory");
        er_io_progress_report(r->pg, y0 + ny, r->height);
    }
    return ER_OK;
}


static er_status read_tiles(reader *r, unsigned char *buf, tmsize_t bufsize, er_error *err)
{
    uint32_t tw = 0, th = 0;
    er_compress codec;
    int predictor;
    if (!TIFFGetField(r->tif, TIFFTAG_TILEWIDTH, &tw) || !TIFFGetField(r->tif, TIFFTAG_TILELENGTH, &th) ||
        tw == 0 || th == 0)
        return fail_read(r, err, ER_EFORMAT, "invalid tile size");
    if ((uint64_t)tw * th * 4 == (uint64_t)bufsize && parallel_codec(r, &codec, &predictor, bufsize)) {
        blocks g = {tw, th, (r->width + tw - 1) / tw, 1};
        return read_parallel(r, codec, predictor, &g, err);
    }
    uint64_t row_bytes = TIFFTileRowSize64(r->tif);
    if (row_bytes == 0 || row_bytes < (uint64_t)(tw - 1) * r->pixel_stride + r->band_offset + r->sample_bytes)
        return fail_read(r, err, ER_EFORMAT, "inconsistent tile layout");
    uint32_t ntiles = TIFFNumberOfTiles(r->tif);
    for (uint32_t y0 = 0; y0 < r->height; y0 += th) {
        uint32_t ny = r->height - y0 < th ? r->height - y0 : th;
        for (uint32_t x0 = 0; x0 < r->width; x0 += tw) {
            uint32_t nx = r->width - x0 < tw ? r->width - x0 : tw;
            uint32_t tile = TIFFComputeTile(r->tif, x0, y0, 0, r->plane);
            if (tile >= ntiles)
                return fail_read(r, err, ER_EFORMAT, "missing tiles");
            if (is_sparse(r, tile)) {
                if (!fill_sparse(r, x0, y0, nx, ny))
                    return fail_read(r, err, ER_ENOMEM, "out of memory");
                continue;
            }
            tmsize_t got = TIFFReadEncodedTile(r->tif, tile, buf, bufsize);
            if (got < 0 || (uint64_t)got < row_bytes * ny)
                return block_error(r, err, "tile", tile);
            if (!convert_block(r, buf, (size_t)row_bytes, x0, y0, nx, ny))
                return fail_read(r, err, ER_ENOMEM, "out of memory");
        }
        er_io_progress_report(r->pg, y0 + ny, r->height);
    }
    return ER_OK;
}

/* The codec and predictor when the band's blocks can be decoded in
 * parallel here; 0 leaves them to libtiff.  Blocks over 16 MiB (a whole
 * image in one strip) stay with libtiff too: each thread would hold two
 * copies of one. */
static int parallel_codec(reader *r, er_compress *c, int *predictor, tmsize_t block_bytes)
{
    uint16_t comp = COMPRESSION_NONE, pred = PREDICTOR_NONE;
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_COMPRESSION, &comp);
    if (r->type != ST_F32 || r->pixel_stride != 4 || r->band_offset != 0 || TIFFIsBigEndian(r->tif)
        || block_bytes > ((tmsize_t)16 << 20))
        return 0;
    switch (comp) {
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE: *c = ER_COMPRESS_DEFLATE; break;
    case COMPRESSION_ZSTD: *c = ER_COMPRESS_ZSTD; break;
    case COMPRESSION_NONE: *c = ER_COMPRESS_NONE; *predictor = 1; return 1;
    default: return 0;
    }
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_PREDICTOR, &pred);
    *predictor = pred;
    return pred >= 1 && pred <= 3;
}


/* Per-thread decoders and per-slot raw blocks, allocated before the
 * parallel regions. */
typedef struct block_batch {
    int threads;
    size_t slots, block_bytes;
    er_codec **codec;
    uint8_t **bytes, **scratch;
    float **tile;
    uint8_t **raw;
    size_t *raw_cap, *raw_len;
    uint32_t *index;          /* the slot's block in the image, row-major */
    int *state;               /* 0 empty (sparse), 1 to decode, 2 failed */
} block_batch;

static void block_batch_free(block_batch *b)
{
    for (int t = 0; t < b->threads; t++) {
        er_codec_free(b->codec ? b->codec[t] : NULL);
        free(b->bytes ? b->bytes[t] : NULL);
        free(b->scratch ? b->scratch[t] : NULL);
        free(b->tile ? b->tile[t] : NULL);
    }
    for (size_t i = 0; b->raw && i < b->slots; i++)
        free(b->raw[i]);
    free(b->codec);
    free(b->bytes);
    free(b->scratch);
    free(b->tile);
    free(b->raw);
    free(b->raw_cap);
    free(b->raw_len);
    free(b->index);
    free(b->state);
}

/* Slots: a few per thread, and enough for about 4 MiB of blocks so that
 * one-row strips do not cost a parallel region each. */
static int block_batch_init(block_batch *b, er_compress c, const blocks *g)
{
    memset(b, 0, sizeof *b);
    b->threads = er_thread_count();
    b->block_bytes = (size_t)g->bw * g->bh * 4;
    b->slots = 4 * (size_t)b->threads;
    if (b->slots < ((size_t)4 << 20) / b->block_bytes)
        b->slots = ((size_t)4 << 20) / b->block_bytes;
    size_t nt = (size_t)b->threads;
    b->codec = calloc(nt, sizeof *b->codec);
    b->bytes = calloc(nt, sizeof *b->bytes);
    b->scratch = calloc(nt, sizeof *b->scratch);
    b->tile = calloc(nt, sizeof *b->tile);
    b->raw = calloc(b->slots, sizeof *b->raw);
    b->raw_cap = calloc(b->slots, sizeof *b->raw_cap);
    b->raw_len = calloc(b->slots, sizeof *b->raw_len);
    b->index = calloc(b->slots, sizeof *b->index);
    b->state = calloc(b->slots, sizeof *b->state);
    if (!b->codec || !b->bytes || !b->scratch || !b->tile || !b->raw || !b->raw_cap || !b->raw_len || !b->index
        || !b->state)
        return 0;
    for (int t = 0; t < b->threads; t++)
        if (!(b->codec[t] = er_codec_new(c, 0)) || !(b->bytes[t] = malloc(b->block_bytes))
            || !(b->scratch[t] = malloc((size_t)g->bw * 4)) || !(b->tile[t] = malloc(b->block_bytes)))
            return 0;
    return 1;
}

/* The cells block `index` covers. */
static void block_rect(const reader *r, const blocks *g, uint32_t index, uint32_t *x0, uint32_t *y0, uint32_t *nx,
                       uint32_t *ny)
{
    *x0 = index % g->across * g->bw;
    *y0 = index / g->across * g->bh;
    *nx = r->width - *x0 < g->bw ? r->width - *x0 : g->bw;
    *ny = r->height - *y0 < g->bh ? r->height - *y0 : g->bh;
}

/* Reads slot i's raw block (serially: libtiff's handle is not shared). */
static er_status fetch_block(reader *r, block_batch *b, const blocks *g, size_t i, er_error *err)
{
    const char *kind = g->tiled ? "tile" : "strip";
    uint32_t x0, y0, nx, ny;
    block_rect(r, g, b->index[i], &x0, &y0, &nx, &ny);
    uint32_t id = g->tiled ? TIFFComputeTile(r->tif, x0, y0, 0, r->plane) : TIFFComputeStrip(r->tif, y0, r->plane);
    b->state[i] = 0;
    if (id >= (g->tiled ? TIFFNumberOfTiles(r->tif) : TIFFNumberOfStrips(r->tif)))
        return fail_read(r, err, ER_EFORMAT, g->tiled ? "missing tiles" : "missing strips");
    if (is_sparse(r, id))
        return fill_sparse(r, x0, y0, nx, ny) ? ER_OK : fail_read(r, err, ER_ENOMEM, "out of memory");
    int e = 0;
    uint64_t n = TIFFGetStrileByteCountWithErr(r->tif, id, &e);
    /* No codec expands a block by half: a larger count is a corrupt file,
     * refused before allocating for it. */
    if (e || n == 0 || n > b->block_bytes + b->block_bytes / 2 + 65536)
        return block_error(r, err, kind, id);
    if (b->raw_cap[i] < n) {
        uint8_t *bigger = realloc(b->raw[i], (size_t)n);
        if (!bigger)
            return fail_read(r, err, ER_ENOMEM, "out of memory");
        b->raw[i] = bigger;
        b->raw_cap[i] = (size_t)n;
    }
    tmsize_t got = g->tiled ? TIFFReadRawTile(r->tif, id, b->raw[i], (tmsize_t)n)
                            : TIFFReadRawStrip(r->tif, id, b->raw[i], (tmsize_t)n);
    if (got != (tmsize_t)n)
        return block_error(r, err, kind, id);
    b->raw_len[i] = (size_t)n;
    b->state[i] = 1;
    return ER_OK;
}

/* Decodes slot i on the calling thread into its cells; the mask is
 * allocated already, so convert_block cannot fail.  A tile holds all its
 * rows, the last strip at least the image's. */
static void decode_block(reader *r, block_batch *b, const blocks *g, size_t i, int predictor)
{
    int t = er_thread_id();
    uint32_t x0, y0, nx, ny;
    block_rect(r, g, b->index[i], &x0, &y0, &nx, &ny);
    uint32_t rows = g->tiled ? g->bh : ny;
    size_t want = (size_t)g->bw * rows * 4;
    if (!er_codec_decompress(b->codec[t], b->raw[i], b->raw_len[i], b->bytes[t], b->block_bytes, want)) {
        b->state[i] = 2;
        return;
    }
    er_unpredict_tile(b->bytes[t], g->bw, rows, predictor, b->tile[t], b->scratch[t]);
    convert_block(r, (const unsigned char *)b->tile[t], (size_t)g->bw * 4, x0, y0, nx, ny);
}

static er_status fail_read_block(reader *r, er_error *err, const blocks *g, uint32_t index)
{
    uint32_t x0, y0, nx, ny;
    block_rect(r, g, index, &x0, &y0, &nx, &ny);
    char what[ER_ERROR_MAX];
    snprintf(what, sizeof what, "%s %" PRIu32 ": corrupt compressed data", g->tiled ? "tile" : "strip",
             g->tiled ? TIFFComputeTile(r->tif, x0, y0, 0, r->plane) : TIFFComputeStrip(r->tif, y0, r->plane));
    return fail_read(r, err, ER_EFORMAT, what);
}

static er_status read_parallel(reader *r, er_compress c, int predictor, const blocks *g, er_error *err)
{
    block_batch b;
    er_status st = ER_OK;
    size_t cells = (size_t)r->width * r->height;
    uint32_t nblocks = g->across * ((r->height + g->bh - 1) / g->bh);
    if (!block_batch_init(&b, c, g) || (!r->mask && !(r->mask = calloc(cells, 1)))) {
        block_batch_free(&b);
        return fail_read(r, err, ER_ENOMEM, "out of memory");
    }
    for (uint32_t first = 0; first < nblocks && st == ER_OK; first += (uint32_t)b.slots) {
        long count = (long)(nblocks - first < b.slots ? nblocks - first : b.slots);
        for (long i = 0; i < count && st == ER_OK; i++) {
            b.index[i] = first + (uint32_t)i;
            st = fetch_block(r, &b, g, (size_t)i, err);
        }
        if (st != ER_OK)
            break;
        ER_OMP_FOR_DYNAMIC()
        for (long i = 0; i < count; i++)
            if (b.state[i] == 1)
                decode_block(r, &b, g, (size_t)i, predictor);
        for (long i = 0; i < count && st == ER_OK; i++)
            if (b.state[i] == 2)
                st = fail_read_block(r, err, g, b.index[i]);
        if (st == ER_OK)
            er_io_progress_report(r->pg, first + (uint32_t)count, nblocks);
    }
    block_batch_free(&b);
    /* The mask stays NULL when no cell is nodata (io/image.h). */
    if (st == ER_OK && !memchr(r->mask, 1, cells)) {
        free(r->mask);
        r->mask = NULL;
    }
    return st;
}

/* Copies a double/short array tag; 1 when absent or copied, 0 when out of
 * memory. */
static int get_array(TIFF *tif, uint32_t tag, size_t elem, void **dst, size_t *n)
{
    uint32_t count = 0;
    void *src = NULL;
    *dst = NULL;
    *n = 0;
    if (!TIFFGetField(tif, tag, &count, &src) || !src || count == 0)
        return 1;
    *dst = malloc((size_t)count * elem);
    if (!*dst)
        return 0;
    memcpy(*dst, src, (size_t)count * elem);
    *n = count;
    return 1;
}

static int get_string(TIFF *tif, uint32_t tag, char **dst)
{
    const char *s = NULL;
    *dst = NULL;
    if (!TIFFGetField(tif, tag, &s) || !s)
        return 1;
    *dst = strdup(s);
    return *dst != NULL;
}

static int read_georef(TIFF *tif, er_georef *g)
{
    return get_array(tif, ER_TAG_PIXEL_SCALE, sizeof(double), (void **)&g->pixel_scale, &g->n_pixel_scale)
        && get_array(tif, ER_TAG_TIEPOINT, sizeof(double), (void **)&g->tiepoints, &g->n_tiepoints)
        && get_array(tif, ER_TAG_TRANSFORMATION, sizeof(double), (void **)&g->transformation,
                     &g->n_transformation)
        && get_array(tif, ER_TAG_GEOKEYS, sizeof(uint16_t), (void **)&g->geokeys, &g->n_geokeys)
        && get_array(tif, ER_TAG_GEODOUBLES, sizeof(double), (void **)&g->geodoubles, &g->n_geodoubles)
        && get_string(tif, ER_TAG_GEOASCII, &g->geoascii)
        && get_string(tif, ER_TAG_GDAL_NODATA, &g->gdal_nodata)
        && get_string(tif, ER_TAG_GDAL_METADATA, &g->gdal_metadata);
}

/* At most n - 4 bytes of s for a one-line message: control bytes become
 * '?', a longer text ends in "...". */
static const char *printable(char *buf, size_t n, const char *s)
{
    size_t i = 0;
    for (; s[i] && i < n - 4; i++)
        buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    if (s[i]) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}


static er_status check_layout(reader *r, const er_read_opts *opts, er_error *err)
{
    TIFF *tif = r->tif;
    uint16_t spp = 1, bits = 1, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
    uint16_t photometric = PHOTOMETRIC_MINISBLACK, compression = COMPRESSION_NONE;
    char what[ER_ERROR_MAX], name[64];

    if (!TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &r->width) || !TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &r->height))
        return fail_read(r, err, ER_EFORMAT, "no image size");
    if (r->width == 0 || r->height == 0) {
        snprintf(what, sizeof what, "image is empty (%" PRIu32 "x%" PRIu32 ")", r->width, r->height);
        return fail_read(r, err, ER_EFORMAT, what);
    }
    /* er_image holds int sizes. */
    if (r->width > INT_MAX || r->height > INT_MAX) {
        snprintf(what, sizeof what, "image size %" PRIu32 "x%" PRIu32 " is too large", r->width, r->height);
        return fail_read(r, err, ER_EUNSUPPORTED, what);
    }
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
    TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);

    if (spp == 0)
        return fail_read(r, err, ER_EFORMAT, "no samples per pixel");
    if (!classify(format, bits, &r->type, name, sizeof name)) {
        snprintf(what, sizeof what,
                 "unsupported sample type %s (erode reads 8-, 16- and 32-bit integers and 32- and 64-bit floats)",
                 name);
        return fail_read(r, err, ER_EUNSUPPORTED, what);
    }
    /* YCbCr is subsampled and LogL/LogLuv are encoded luminance: neither
     * holds heights sample by sample. */
    if (photometric == PHOTOMETRIC_YCBCR || photometric == PHOTOMETRIC_LOGL || photometric == PHOTOMETRIC_LOGLUV) {
        snprintf(what, sizeof what, "unsupported photometric interpretation %u", (unsigned)photometric);
        return fail_read(r, err, ER_EUNSUPPORTED, what);
    }
    if (!TIFFIsCODECConfigured(compression)) {
        snprintf(what, sizeof what, "unsupported compression %u (not built into libtiff)", (unsigned)compression);
        return fail_read(r, err, ER_EUNSUPPORTED, what);
    }
    if (opts && opts->band < 0) {
        snprintf(what, sizeof what, "invalid band %d", opts->band);
        return fail_read(r, err, ER_EINVAL, what);
    }
    int band = opts ? opts->band : 0;
    if (band == 0 && spp > 1) {
        snprintf(what, sizeof what, "file has %u bands; choose one with --band", (unsigned)spp);
        return fail_read(r, err, ER_EUNSUPPORTED, what);
    }
    if (band > spp) {
        snprintf(what, sizeof what, "band %d requested but the file has %u", band, (unsigned)spp);
        return fail_read(r, err, ER_EINVAL, what);
    }
    unsigned sample = band > 0 ? (unsigned)band - 1 : 0;
    r->sample_bytes = bits / 8u;
    if (planar == PLANARCONFIG_SEPARATE) {
        r->pixel_stride = r->sample_bytes;
        r->band_offset = 0;
        r->plane = (uint16_t)sample;
    } else {
        r->pixel_stride = r->sample_bytes * spp;
        r->band_offset = r->sample_bytes * sample;
        r->plane = 0;
    }
    return ER_OK;
}

/* The float copy must fit in opts->max_bytes, checked before allocating. */
static er_status check_memory(reader *r, const er_read_opts *opts, size_t *cells, er_error *err)
{
    char what[ER_ERROR_MAX], need_s[32], max_s[32];
    size_t bytes;
    if (!er_mul_size(r->width, r->height, cells) || !er_mul_size(*cells, sizeof(float), &bytes) ||
        bytes > (size_t)PTRDIFF_MAX) {
        snprintf(what, sizeof what, "%" PRIu32 "x%" PRIu32 " image is too large for this machine", r->width,
                 r->height);
        return fail_read(r, err, ER_ENOMEM, what);
    }
    if (opts && opts->max_bytes > 0 && bytes > opts->max_bytes) {
        format_bytes(need_s, sizeof need_s, (double)bytes);
        format_bytes(max_s, sizeof max_s, (double)opts->max_bytes);
        snprintf(what, sizeof what, "%" PRIu32 "x%" PRIu32 " image needs %s, more than the memory limit (%s)",
                 r->width, r->height, need_s, max_s);
        return fail_read(r, err, ER_ENOMEM, what);
    }
    return ER_OK;
}

/* GDAL's band scale and offset applied (value = raw * scale + offset, in
 * double, rounded once to float, as GDAL's unscaling reads it), so that
 * an Int16 DEM of decimetres is eroded in its true relief.  Nodata cells
 * keep the raw value the file's GDAL_NODATA names.  One writer per cell:
 * the same floats for any thread count. */
static void apply_scale(reader *r, size_t cells, double scale, double offset)
{
    if (scale == 1.0 && offset == 0.0)
        return;
    float *v = r->data;
    const uint8_t *mask = r->mask;
    ER_OMP_FOR()
    for (long i = 0; i < (long)cells; i++)
        if (!mask || !mask[i])
            v[i] = (float)((double)v[i] * scale + offset);
}

/* Reads band opts->band (1-based; 0 = the file must have one band) of the
 * first image in the TIFF at `path` into *img, values converted to float in
 * the file's units: its samples times GDAL's band scale plus its offset
 * (GDAL_METADATA's SCALE and OFFSET items, which are then dropped from
 * img->georef), as GDAL reads the band unscaled.  opts may be NULL (band 0, no memory limit).
 *
 * Nodata: with a GDAL_NODATA tag, has_nodata_value = 1 and nodata_value is
 * its value; without one, has_nodata_value = 0 and nodata_value = NaN.
 * img->nodata marks the cells equal to the declared value (compared in the
 * file's own sample type; NaN matches NaN) and every cell that is NaN or
 * infinite as a float (a float64 beyond float32's range included); it is
 * NULL when no cell is nodata.  img->data keeps those cells' values as is.
 * All eight georeferencing tags are copied into img->georef byte for byte.
 *
 * Returns ER_OK, or on failure leaves *img empty and names the file and
 * the reason in err: ER_EIO (open/read refused), ER_EFORMAT (not a TIFF,
 * truncated, corrupt, damaged georeferencing tag, bad GDAL_NODATA),
 * ER_EUNSUPPORTED (sample type, codec, several bands without a choice),
 * ER_EINVAL (no such band), ER_ENOMEM (over opts->max_bytes, checked before
 * allocating, or out of memory).  The caller frees *img with
 * er_image_free().  Thread-safe: every call has its own libtiff handle and
 * error sink; libtiff prints nothing. */
static er_status tiff_read(const char *path, const er_read_opts *opts, const er_io_progress *pg,
                           int header_only, er_image *img, er_error *err)
{
    reader r;
    unsigned char *buf = NULL;
    er_status st;
    size_t cells = 0;
    size_t max_bytes = opts ? opts->max_bytes : 0;
    double scale, offset;

    memset(img, 0, sizeof *img);
    memset(&r, 0, sizeof r);
    r.path = path;
    r.pg = pg;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return er_fail(err, ER_EIO, "cannot read '%s': %s", path, strerror(errno));

    r.tif = er_tiff_open_fd(&r.io, fd, path, "rmDO", max_bytes);
    if (!r.tif) {
        st = fail_read(&r, err, r.io.io_errno ? ER_EIO : ER_EFORMAT, er_tiff_reason(&r.io, "not a TIFF file"));
        close(fd);
        return st;
    }
    if (r.io.tag_msg[0]) {
        char what[ER_ERROR_MAX];
        snprintf(what, sizeof what, "damaged georeferencing: %.400s", r.io.tag_msg);
        st = fail_read(&r, err, ER_EFORMAT, what);
        goto fail;
    }
    if ((st = check_layout(&r, opts, err)) != ER_OK || (st = check_memory(&r, opts, &cells, err)) != ER_OK)
        goto fail;

    if (!read_georef(r.tif, &img->georef) ||
        !get_string(r.tif, TIFFTAG_IMAGEDESCRIPTION, &img->description)) {
        st = fail_read(&r, err, ER_ENOMEM, "out of memory");
        goto fail;
    }
    img->nodata_value = NAN;
    if (img->georef.gdal_nodata) {
        double nd;
        if (!er_nodata_parse(img->georef.gdal_nodata, &nd)) {
            char what[ER_ERROR_MAX], shown[68];
            snprintf(what, sizeof what, "invalid GDAL_NODATA value '%s'",
                     printable(shown, sizeof shown, img->georef.gdal_nodata));
            st = fail_read(&r, err, ER_EFORMAT, what);
            goto fail;
        }
        img->has_nodata_value = 1;
        img->nodata_value = nd;
        nodata_setup(&r, nd);
    }
    if (!er_georef_take_scale(&img->georef, opts ? opts->band : 0, &scale, &offset)) {
        st = fail_read(&r, err, ER_EFORMAT, "damaged GDAL_METADATA: a band SCALE or OFFSET that is no number");
        goto fail;
    }
    if (header_only) {
        TIFFClose(r.tif);
        close(fd);
        img->width = (int)r.width;
        img->height = (int)r.height;
        img->format = ER_FORMAT_TIFF;
        return ER_OK;
    }

    int tiled = TIFFIsTiled(r.tif);
    uint64_t bufsize = tiled ? TIFFTileSize64(r.tif) : TIFFStripSize64(r.tif);
    if (bufsize == 0 || bufsize > (uint64_t)INT64_MAX || bufsize > SIZE_MAX) {
        st = fail_read(&r, err, ER_EFORMAT, tiled ? "invalid tile size" : "invalid strip size");
        goto fail;
    }
    if (max_bytes > 0 && bufsize > max_bytes) {
        char what[ER_ERROR_MAX], need_s[32], max_s[32];
        format_bytes(need_s, sizeof need_s, (double)bufsize);
        format_bytes(max_s, sizeof max_s, (double)max_bytes);
        snprintf(what, sizeof what, "one %s needs %s, more than the memory limit (%s)", tiled ? "tile" : "strip",
                 need_s, max_s);
        st = fail_read(&r, err, ER_ENOMEM, what);
        goto fail;
    }
    buf = malloc((size_t)bufsize);
    r.data = malloc(cells * sizeof(float));
    if (!buf || !r.data) {
        st = fail_read(&r, err, ER_ENOMEM, "out of memory");
        goto fail;
    }
    st = tiled ? read_tiles(&r, buf, (tmsize_t)bufsize, err) : read_strips(&r, buf, (tmsize_t)bufsize, err);
    if (st != ER_OK)
        goto fail;

    free(buf);
    TIFFClose(r.tif);
    close(fd);
    apply_scale(&r, cells, scale, offset);
    img->width = (int)r.width;
    img->height = (int)r.height;
    img->data = r.data;
    img->nodata = r.mask;
    img->format = ER_FORMAT_TIFF;
    return ER_OK;

fail:
    free(buf);
    free(r.data);
    free(r.mask);
    TIFFClose(r.tif);
    close(fd);
    er_image_free(img);
    return st;
}

er_status er_tiff_read(const char *path, const er_read_opts *opts, er_image *img, er_error *err)
{
    return tiff_read(path, opts, NULL, 0, img, err);
}

er_status er_tiff_read_progress(const char *path, const er_read_opts *opts, const er_io_progress *pg,
                                er_image *img, er_error *err)
{
    return tiff_read(path, opts, pg, 0, img, err);
}

er_status er_tiff_read_info(const char *path, const er_read_opts *opts, er_image *img,
                            er_error *err)
{
    return tiff_read(path, opts, NULL, 1, img, err);
}
