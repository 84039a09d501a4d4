/*
 * GeoTIFF writer: one float32 band, tiled, compressed as the creation
 * options say (io/image.h er_tiff_create; defaults in tiff_create.c), the
 * input's georeferencing tags copied unchanged, written through
 * io/atomic.h so no partial file ever carries the final name.
 *
 * Layout choices:
 * - Tiles are BLOCKSIZE (256) square.  A map narrower or shorter than that
 *   gets a tile side of its own size rounded up to a multiple of 16 (TIFF
 *   requires multiples of 16), so a small map is one tile with little
 *   padding.  Edge tiles are padded by repeating the last column and row:
 *   padding is never read, and repeated values predict to zero and cost
 *   nothing.
 * - DEFLATE, ZSTD and NONE tiles are predicted and compressed on all
 *   threads (io/tiff_codec.c) in batches of whole tiles and handed to
 *   libtiff in tile order with TIFFWriteRawTile: every tile's bytes depend
 *   on its cells and the options only, so the file is the same for any
 *   thread count.  LZW keeps libtiff's own (single-threaded) encoder.
 * - COG=YES writes GDAL's Cloud Optimized GeoTIFF layout: GDAL's
 *   structural metadata after the header, the full resolution IFD, then
 *   one IFD per overview (each half the size of the one before, averaged,
 *   down to one tile), then the tile arrays (TIFFDeferStrileArrayWriting),
 *   then the tiles, smallest overview first and full resolution last, each
 *   between its size and a repeat of its last 4 bytes, so a reader fetches
 *   the header and any zoom level with a few ranged requests.
 * - Classic TIFF unless the uncompressed tiles (and overviews) plus a
 *   margin reach 4 GiB, then BigTIFF (offsets beyond 4 GiB need it; the
 *   codecs never expand data by more than a fraction of a per cent).
 * - Little-endian always, and no DateTime or Software tag, so the same
 *   layer written twice gives the same bytes on any machine with the same
 *   codec libraries.
 */
#include "tiff_common.h"

#include "atomic.h"
#include "tiff_codec.h"

#include "../core/parallel.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Compressed tiles held at once: bounds the memory of a batch whatever
 * the map size. */
#define BATCH_BYTES ((size_t)64 << 20)

static uint32_t tile_side(uint32_t n, int block)
{
    uint32_t side = (n + 15u) / 16u * 16u;
    return side < (uint32_t)block ? side : (uint32_t)block;
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

/* The GDAL_NODATA string to write for nodata value nd, or NULL for none:
 * the input's own string when it still names nd, else a fresh one. */
static const char *nodata_tag(const er_layer_out *layer, double nd, size_t cells, char *buf, size_t n)
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
        if (end != declared && same_value(v, nd))
            return declared;
    }
    format_nodata(buf, n, nd);
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

/* One resolution level: the layer itself, or an overview this file owns. */
typedef struct level {
    uint32_t w, h;
    const float *data;
    const uint8_t *nodata;   /* NULL = no nodata cells */
    float *own;              /* overviews: data and nodata allocated here */
    uint8_t *own_nodata;
} level;

/* Everything one file's tiles need; read-only inside parallel regions. */
typedef struct writer {
    TIFF *tif;
    er_tiff_io *io;
    int leaders;             /* COG: each raw tile between its size and a
                              * repeat of its last 4 bytes (GDAL's
                              * BLOCK_LEADER/BLOCK_TRAILER) */
    const er_tiff_create *co;
    uint32_t tw, th;
    float ndv;               /* nodata cells hold this */
    double quantum;          /* rounding step; 0 = exact */
    int predictor;           /* as written: 1 for NONE */
    int raw;                 /* encoded here and written with TIFFWriteRawTile */
} writer;

/* The rounding step for a stated precision p: the largest power of two
 * not above p, so that k * q is exact in float32 for |k| < 2^24 and its
 * low mantissa bits are zeros, which is what makes the noise compress.
 * |rounded - v| <= q / 2 <= p / 2; values so large that float32's spacing
 * is already >= q are multiples of q and stay unchanged. */
static double quantum_of(double p)
{
    if (!(p > 0) || !isfinite(p))
        return 0;
    int e;
    double m = frexp(p, &e);
    return m == 0.5 ? p : ldexp(1.0, e - 1);
}

static float round_to(float v, double q)
{
    if (q == 0 || !isfinite(v))
        return v;
    return (float)(q * nearbyint((double)v / q));
}

/* Copies one tile out of a level, nodata cells replaced by the nodata
 * value, the part beyond the map filled by repeating the edge, values
 * rounded to the quantum. */
static void fill_tile(float *tile, const writer *wr, const level *lv, uint32_t x0, uint32_t y0)
{
    uint32_t tw = wr->tw, th = wr->th;
    for (uint32_t ty = 0; ty < th; ty++) {
        uint32_t y = y0 + ty < lv->h ? y0 + ty : lv->h - 1;
        const float *src = lv->data + (size_t)y * lv->w;
        const uint8_t *nd = lv->nodata ? lv->nodata + (size_t)y * lv->w : NULL;
        float *dst = tile + (size_t)ty * tw;
        for (uint32_t tx = 0; tx < tw; tx++) {
            uint32_t x = x0 + tx < lv->w ? x0 + tx : lv->w - 1;
            dst[tx] = nd && nd[x] ? wr->ndv : round_to(src[x], wr->quantum);
        }
    }
}

/* One overview cell: the mean of the up to 2x2 cells of the level above
 * that are not nodata (GDAL's AVERAGE resampling), summed in double in a
 * fixed order; nodata when all are. */
static void average_cell(const level *up, level *down, uint32_t x, uint32_t y)
{
    double sum = 0;
    int n = 0;
    for (uint32_t dy = 0; dy < 2; dy++)
        for (uint32_t dx = 0; dx < 2; dx++) {
            uint32_t ux = 2 * x + dx, uy = 2 * y + dy;
            size_t i = (size_t)uy * up->w + ux;
            if (ux >= up->w || uy >= up->h || (up->nodata && up->nodata[i]))
                continue;
            sum += up->data[i];
            n++;
        }
    size_t o = (size_t)y * down->w + x;
    down->own[o] = n ? (float)(sum / n) : 0.0f;
    if (down->own_nodata)
        down->own_nodata[o] = n == 0;
}

static int make_overview(const level *up, level *down)
{
    memset(down, 0, sizeof *down);
    down->w = (up->w + 1) / 2;
    down->h = (up->h + 1) / 2;
    size_t cells = (size_t)down->w * down->h;
    down->own = malloc(cells * sizeof(float));
    down->own_nodata = up->nodata ? malloc(cells) : NULL;
    down->data = down->own;
    down->nodata = down->own_nodata;
    if (!down->own || (up->nodata && !down->own_nodata))
        return 0;
    long rows = (long)down->h;
    ER_OMP_FOR()
    for (long y = 0; y < rows; y++)
        for (uint32_t x = 0; x < down->w; x++)
            average_cell(up, down, x, (uint32_t)y);
    return 1;
}

static void free_levels(level *lv, int n)
{
    for (int i = 0; i < n; i++) {
        free(lv[i].own);
        free(lv[i].own_nodata);
    }
}

/* The levels to write: the layer, then (COG) overviews halving down to one
 * tile, as GDAL's COG driver stops.  Returns the count, 0 when out of
 * memory. */
static int make_levels(level *lv, int max, const er_layer_out *layer, const writer *wr)
{
    lv[0] = (level){(uint32_t)layer->width, (uint32_t)layer->height, layer->data, layer->nodata, NULL, NULL};
    int n = 1;
    while (wr->co->cog && n < max && (lv[n - 1].w > wr->tw || lv[n - 1].h > wr->th)) {
        if (!make_overview(&lv[n - 1], &lv[n])) {
            free_levels(lv, n + 1);
            return 0;
        }
        n++;
    }
    return n;
}

static uint16_t tiff_compression(er_compress c)
{
    switch (c) {
    case ER_COMPRESS_DEFLATE: return COMPRESSION_ADOBE_DEFLATE;
    case ER_COMPRESS_ZSTD: return COMPRESSION_ZSTD;
    case ER_COMPRESS_LZW: return COMPRESSION_LZW;
    default: return COMPRESSION_NONE;
    }
}

/* The tags of one IFD: overviews carry only what GDAL's COG driver gives
 * them (no georeferencing: readers take it from the first IFD). */
static int set_tags(const writer *wr, const level *lv, int overview, const er_layer_out *layer, const char *ndtag)
{
    TIFF *tif = wr->tif;
    return (!overview || TIFFSetField(tif, TIFFTAG_SUBFILETYPE, FILETYPE_REDUCEDIMAGE))
        && TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, lv->w) && TIFFSetField(tif, TIFFTAG_IMAGELENGTH, lv->h)
        && TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 32) && TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1)
        && TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP)
        && TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK)
        && TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG)
        && TIFFSetField(tif, TIFFTAG_TILEWIDTH, wr->tw) && TIFFSetField(tif, TIFFTAG_TILELENGTH, wr->th)
        && TIFFSetField(tif, TIFFTAG_COMPRESSION, tiff_compression(wr->co->compress))
        && (wr->predictor == 1 || TIFFSetField(tif, TIFFTAG_PREDICTOR, wr->predictor))
        && (overview || !layer->provenance || TIFFSetField(tif, TIFFTAG_IMAGEDESCRIPTION, layer->provenance))
        && (overview || set_georef(tif, layer->georef)) && (!ndtag || TIFFSetField(tif, ER_TAG_GDAL_NODATA, ndtag));
}

/* Whether GDAL's nodata mask takes the float32 cell v for the nodata
 * value nd: ARE_REAL_EQUAL of GDAL's gcore/gdal_priv.h (equal, or within
 * 2 * FLT_EPSILON * |v + nd|), with twice its margin. */
static int reads_as_nodata(float v, float nd)
{
    return v == nd || fabsf(v - nd) < FLT_EPSILON * fabsf(v + nd) * 4.0f;
}

/* The nodata value the file declares: the layer's, unless a valid cell
 * of some level, as written (rounded to the quantum), would read as it,
 * such as a dry cell's 0 of water under an input nodata value of 0; then
 * NaN, which no finite cell holds.  Rows in parallel, flags combined by
 * |: the same answer for any thread count. */
static double layer_nodata(const er_layer_out *layer, const level *lv, int nlev, const writer *wr)
{
    float nd = nodata_as_float(layer->nodata_value);
    if (isnan(nd))
        return layer->nodata_value;
    int clash = 0;
    for (int l = 0; l < nlev && !clash; l++) {
        const level *v = &lv[l];
        long rows = (long)v->h;
        ER_OMP_FOR(reduction(| : clash))
        for (long y = 0; y < rows; y++) {
            const float *d = v->data + (size_t)y * v->w;
            const uint8_t *m = v->nodata ? v->nodata + (size_t)y * v->w : NULL;
            for (uint32_t x = 0; x < v->w; x++)
                clash |= !(m && m[x]) && reads_as_nodata(round_to(d[x], wr->quantum), nd);
        }
    }
    return clash ? NAN : layer->nodata_value;
}

/* Per-thread scratch for encoding, allocated before the parallel region. */
typedef struct scratch {
    float *tile;
    uint8_t *bytes;
    er_codec *codec;
} scratch;

typedef struct batch {
    int threads;
    scratch *s;
    size_t tiles;            /* tiles a batch holds */
    size_t cap;              /* bytes reserved for each encoded tile */
    uint8_t *out;            /* tiles * cap */
    size_t *size;            /* encoded size of each; 0 = failed */
    const er_io_progress *pg; /* may be NULL */
    uint32_t done, total;    /* tiles handed to libtiff / of all levels */
} batch;

static void batch_free(batch *b)
{
    for (int t = 0; b->s && t < b->threads; t++) {
        free(b->s[t].tile);
        free(b->s[t].bytes);
        er_codec_free(b->s[t].codec);
    }
    free(b->s);
    free(b->out);
    free(b->size);
}

static int batch_init(batch *b, const writer *wr, int level_value)
{
    size_t tile_bytes = (size_t)wr->tw * wr->th * sizeof(float);
    memset(b, 0, sizeof *b);
    b->threads = er_thread_count();
    b->s = calloc((size_t)b->threads, sizeof *b->s);
    if (!b->s)
        return 0;
    for (int t = 0; t < b->threads; t++) {
        scratch *s = &b->s[t];
        s->tile = malloc(tile_bytes);
        s->bytes = wr->raw ? malloc(tile_bytes) : NULL;
        s->codec = wr->raw ? er_codec_new(wr->co->compress, level_value) : NULL;
        if (!s->tile || (wr->raw && (!s->bytes || !s->codec)))
            return 0;
    }
    b->cap = wr->raw ? er_codec_bound(b->s[0].codec, tile_bytes) : tile_bytes;
    b->tiles = BATCH_BYTES / b->cap;
    size_t min_tiles = 2 * (size_t)b->threads;
    if (b->tiles < min_tiles)
        b->tiles = min_tiles;
    b->out = malloc(b->tiles * b->cap);
    b->size = malloc(b->tiles * sizeof *b->size);
    return b->out && b->size;
}

/* Tile `index` of a level, encoded into dst: the filled float tile for
 * libtiff's encoders, else predicted and compressed here. */
static size_t encode_tile(const writer *wr, const level *lv, scratch *s, uint32_t index, uint8_t *dst, size_t cap)
{
    uint32_t across = (lv->w + wr->tw - 1) / wr->tw;
    uint32_t x0 = index % across * wr->tw, y0 = index / across * wr->th;
    size_t n = (size_t)wr->tw * wr->th * sizeof(float);
    if (!wr->raw) {
        fill_tile((float *)(void *)dst, wr, lv, x0, y0);
        return n;
    }
    /* A tile inside the map with nothing to replace or round is predicted
     * straight from the layer, saving a copy of every cell. */
    if (!lv->nodata && wr->quantum == 0 && x0 + wr->tw <= lv->w && y0 + wr->th <= lv->h) {
        er_predict_tile(lv->data + (size_t)y0 * lv->w + x0, lv->w, wr->tw, wr->th, wr->predictor, s->bytes);
    } else {
        fill_tile(s->tile, wr, lv, x0, y0);
        er_predict_tile(s->tile, wr->tw, wr->tw, wr->th, wr->predictor, s->bytes);
    }
    return er_codec_compress(s->codec, s->bytes, n, dst, cap);
}

static int write_tile(const writer *wr, uint32_t index, uint8_t *data, tmsize_t n)
{
    uint8_t leader[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    if (!wr->raw)
        return TIFFWriteEncodedTile(wr->tif, index, data, n) == n;
    return (!wr->leaders || er_tiff_append(wr->io, leader, 4)) && TIFFWriteRawTile(wr->tif, index, data, n) == n
        && (!wr->leaders || er_tiff_append(wr->io, data + n - 4, 4));
}

static uint32_t level_tiles(const writer *wr, const level *lv)
{
    return ((lv->w + wr->tw - 1) / wr->tw) * ((lv->h + wr->th - 1) / wr->th);
}

/* Encodes the level's tiles a batch at a time on all threads, then hands
 * them to libtiff in tile order, reporting progress after each batch (on
 * this thread, outside the parallel region). */
static int write_level(const writer *wr, const level *lv, batch *b)
{
    uint32_t ntiles = level_tiles(wr, lv);
    for (uint32_t first = 0; first < ntiles; first += (uint32_t)b->tiles) {
        long count = (long)(ntiles - first < b->tiles ? ntiles - first : b->tiles);
        ER_OMP_FOR_DYNAMIC()
        for (long i = 0; i < count; i++)
            b->size[i] = encode_tile(wr, lv, &b->s[er_thread_id()], first + (uint32_t)i,
                                     b->out + (size_t)i * b->cap, b->cap);
        for (long i = 0; i < count; i++) {
            uint8_t *data = b->out + (size_t)i * b->cap;
            tmsize_t n = (tmsize_t)b->size[i];
            uint32_t index = first + (uint32_t)i;
            if (n == 0 || !write_tile(wr, index, data, n))
                return 0;
        }
        b->done += (uint32_t)count;
        er_io_progress_report(b->pg, b->done, b->total);
    }
    return 1;
}

/* GDAL's "ghost" structural metadata between the TIFF header and the
 * first IFD, as its COG driver writes it, so that GDAL reports
 * LAYOUT=COG and can fetch a tile and its size in one request.  The
 * leader and trailer promises hold only for the tiles written raw here;
 * libtiff's own LZW encoder writes plain tiles. */
static int write_ghost(const writer *wr)
{
    char body[256], head[64];
    int n = snprintf(body, sizeof body, "LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\n%s"
                     "KNOWN_INCOMPATIBLE_EDITION=NO\n ",
                     wr->leaders ? "BLOCK_LEADER=SIZE_AS_UINT4\nBLOCK_TRAILER=LAST_4_BYTES_REPEATED\n" : "");
    int h = snprintf(head, sizeof head, "GDAL_STRUCTURAL_METADATA_SIZE=%06d bytes\n", n);
    return er_tiff_append(wr->io, head, (size_t)h) && er_tiff_append(wr->io, body, (size_t)n);
}

/* Writes every level's IFD first with its tile arrays deferred, then the
 * arrays (as placeholders), then the tiles from the smallest level up,
 * each level's arrays rewritten in place once its tiles are in
 * (libtiff's sequence for cloud-optimized files,
 * TIFFDeferStrileArrayWriting(3tiff)). */
static int write_cog(const writer *wr, const level *lv, int nlev, batch *b, const er_layer_out *layer,
                     const char *ndtag)
{
    TIFF *tif = wr->tif;
    if (!write_ghost(wr))
        return 0;
    for (int l = 0; l < nlev; l++)
        if (!set_tags(wr, &lv[l], l > 0, layer, ndtag) || !TIFFDeferStrileArrayWriting(tif)
            || !TIFFWriteCheck(tif, 1, "er_tiff_write") || !TIFFWriteDirectory(tif))
            return 0;
    for (int l = 0; l < nlev; l++)
        if (!TIFFSetDirectory(tif, (tdir_t)l) || !TIFFForceStrileArrayWriting(tif))
            return 0;
    for (int l = nlev - 1; l >= 0; l--)
        if (!TIFFSetDirectory(tif, (tdir_t)l) || !write_level(wr, &lv[l], b) || !TIFFFlush(tif))
            return 0;
    return 1;
}

static int write_plain(const writer *wr, const level *lv, batch *b, const er_layer_out *layer, const char *ndtag)
{
    return set_tags(wr, lv, 0, layer, ndtag) && write_level(wr, lv, b) && TIFFWriteDirectory(wr->tif);
}

static int resolved_level(const er_tiff_create *co)
{
    if (co->level)
        return co->level;
    return co->compress == ER_COMPRESS_ZSTD ? ER_ZSTD_LEVEL_DEFAULT : ER_DEFLATE_LEVEL_DEFAULT;
}

/* Uncompressed size of all tiles of all levels, padding included, plus
 * 1/64 and 1 MiB for the codecs' worst case, the tile tables and the
 * tags: BigTIFF from 4 GiB. */
static int needs_bigtiff(const writer *wr, uint32_t w, uint32_t h)
{
    double estimate = 0;
    for (;;) {
        estimate += ceil((double)w / wr->tw) * ceil((double)h / wr->th) * wr->tw * wr->th * 4.0;
        if (!wr->co->cog || (w <= wr->tw && h <= wr->th))
            break;
        w = (w + 1) / 2;
        h = (h + 1) / 2;
    }
    estimate += estimate / 64.0 + 1048576.0;
    return estimate >= 4294967296.0;
}

static er_status tiff_write(const char *path, const er_layer_out *layer, const er_tiff_write_opts *opts,
                            const er_io_progress *pg, er_error *err)
{
    const er_tiff_create *co = &opts->co;
    const char *why;
    er_atomic a;
    er_tiff_io io;
    batch b = {0};
    level lv[32];
    int nlev = 0;
    er_status st;
    char ndbuf[64];
    const char *ndtag = NULL;

    if (!layer || !layer->data || layer->width <= 0 || layer->height <= 0)
        return er_fail(err, ER_EINVAL, "cannot write '%s': empty layer", path);
    if (!er_tiff_create_check(co, &why))
        return er_fail(err, ER_EINVAL, "cannot write '%s': %s", path, why);
    writer wr = {NULL, &io, co->cog && co->compress != ER_COMPRESS_LZW, co, tile_side((uint32_t)layer->width, co->blocksize),
                 tile_side((uint32_t)layer->height, co->blocksize), nodata_as_float(layer->nodata_value),
                 quantum_of(co->precision), co->compress == ER_COMPRESS_NONE ? 1 : co->predictor,
                 co->compress != ER_COMPRESS_LZW};
    int big = opts->force_bigtiff || needs_bigtiff(&wr, (uint32_t)layer->width, (uint32_t)layer->height);

    memset(&io, 0, sizeof io);
    if ((st = er_atomic_open(&a, path, err)) != ER_OK)
        return st;
    if (!(nlev = make_levels(lv, (int)(sizeof lv / sizeof lv[0]), layer, &wr)) || !batch_init(&b, &wr, resolved_level(co))) {
        st = er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
        goto cleanup;
    }
    double nd = layer_nodata(layer, lv, nlev, &wr);
    wr.ndv = nodata_as_float(nd);
    ndtag = nodata_tag(layer, nd, (size_t)layer->width * (size_t)layer->height, ndbuf, sizeof ndbuf);
    b.pg = pg;
    for (int l = 0; l < nlev; l++)
        b.total += level_tiles(&wr, &lv[l]);
    wr.tif = er_tiff_open_fd(&io, a.fd, path, big ? "w8l" : "wl", 0);
    if (!wr.tif)
        goto fail;
    if (!(co->cog ? write_cog(&wr, lv, nlev, &b, layer, ndtag) : write_plain(&wr, lv, &b, layer, ndtag)) || io.io_errno)
        goto fail;
    TIFFClose(wr.tif);
    wr.tif = NULL;
    if (io.io_errno || io.msg[0])
        goto fail;
    batch_free(&b);
    free_levels(lv, nlev);
    return er_atomic_commit(&a, err);

fail:
    st = er_fail(err, ER_EIO, "cannot write '%s': %s", path,
                 io.io_errno ? er_atomic_reason(io.io_errno) : er_tiff_reason(&io, "libtiff failed"));
cleanup:
    batch_free(&b);
    free_levels(lv, nlev);
    if (wr.tif)
        TIFFClose(wr.tif);
    er_atomic_abort(&a);
    return st;
}

/* er_tiff_write_co with the BigTIFF switch exposed (for tests;
 * io/tiff_common.h). */
er_status er_tiff_write_ex(const char *path, const er_layer_out *layer, const er_tiff_write_opts *opts,
                           er_error *err)
{
    return tiff_write(path, layer, opts, NULL, err);
}

/* Writes layer as a float32 GeoTIFF at path (see the top of this file for
 * the layout) with the creation options co.  layer->georef's tags are
 * written unchanged except GDAL_NODATA, which is written when the layer
 * has nodata cells or the georef declares one.  Its value nd is
 * layer->nodata_value unless a valid cell (of any level, as written)
 * would read as it in GDAL, then NaN; it is written as the georef's own
 * string when that parses to nd (NaN matching NaN), else formatted
 * ("nan", or the shortest %.15g-%.17g that reads back exactly).  Cells
 * where layer->nodata[i] is set hold (float)nd, so GDAL's mask is exactly
 * layer->nodata.  layer->provenance, when not NULL, becomes the
 * ImageDescription.
 *
 * Returns ER_OK once the file is complete under its final name, or
 * ER_EINVAL (empty layer, inconsistent options), ER_ENOMEM, ER_EIO (cannot
 * create, write -- ENOSPC, EFBIG -- fsync or rename; the reason is in err)
 * with no file and no temporary left.  Thread-safe for distinct paths; it
 * runs its own OpenMP parallel regions. */
er_status er_tiff_write_co(const char *path, const er_layer_out *layer, const er_tiff_create *co, er_error *err)
{
    return er_tiff_write_progress(path, layer, co, NULL, err);
}

/* er_tiff_write_co, reporting progress through pg (io/image.h). */
er_status er_tiff_write_progress(const char *path, const er_layer_out *layer, const er_tiff_create *co,
                                 const er_io_progress *pg, er_error *err)
{
    er_tiff_write_opts opts = {0, *co};
    return tiff_write(path, layer, &opts, pg, err);
}

/* er_tiff_write_co with the default creation options. */
er_status er_tiff_write(const char *path, const er_layer_out *layer, er_error *err)
{
    er_tiff_create co = er_tiff_create_defaults();
    return er_tiff_write_co(path, layer, &co, err);
}
