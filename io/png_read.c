/*
 * PNG heightmaps in: greyscale (1, 2, 4, 8 or 16 bits), optionally with an
 * alpha channel or a tRNS grey value, whose transparent cells (alpha 0) are
 * nodata.  Colour and palette images are refused: a heightmap has one
 * channel, and guessing which channel (or what mix) holds the height would
 * silently produce wrong terrain.
 *
 * libpng reports errors through a callback that must not return; it longjmps
 * back into read_body() (libvips vipspng.c).  Everything that must survive
 * the longjmp lives in a read_ctx owned by the caller of read_body(), never
 * in read_body()'s own locals, so nothing is clobbered.
 */
#include "image.h"
#include "png_common.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct read_ctx {
    const char *path;
    FILE *f;
    png_structp png;
    png_infop info;
    er_status st;       /* status of a libpng error; ER_OK until one happens */
    char why[256];      /* reason of that error, for the message */
    float *lut;         /* raw sample -> value, 2^bit_depth entries */
    unsigned char *raw; /* decoded rows: one row, or all of them when interlaced */
    float *data;        /* the image being built (moved into er_image on success) */
    uint8_t *mask;      /* nodata mask being built (NULL without alpha) */
    size_t nodata_cells;
    int width, height, alpha;
    /* Where on_read is in the chunk stream (see track_chunks). */
    uint64_t file_size;   /* bytes in the file; UINT64_MAX when unknown */
    uint64_t pos;         /* bytes passed to libpng so far, signature included */
    uint64_t chunk_left;  /* data + CRC bytes of the current chunk still to come */
    unsigned char head[8];
    unsigned head_got;    /* bytes of the next chunk header seen so far */
    /* erode's mapping chunks as they pass (see note_keyword): libpng drops
     * a text chunk it cannot read (a damaged zlib stream, text inflating
     * past ER_PNG_CHUNK_MAX, a full chunk cache) with only a warning. */
    int key_match;        /* keyword bytes of the current text chunk that
                           * matched ER_PNG_KEY_MAPPING; -1 no match */
    uint64_t data_left;   /* data bytes of the current chunk still to come */
    int in_mapping;       /* the current chunk is a mapping chunk */
    int mappings_seen;    /* mapping chunks passed to libpng */
    int cached_chunks;    /* chunks passed that count against libpng's
                           * chunk cache: text (any keyword) and sPLT */
    int late_mapping;     /* a mapping chunk came past ER_PNG_TEXT_CHUNKS_MAX */
    char mapping_why[160]; /* libpng's warning about one of them */
    const er_io_progress *pg; /* may be NULL */
    /* What the samples mean, known once the file is read to its end. */
    int mapped;           /* erode's mapping chunk: min, max */
    double min, max;
    int depth;            /* decoded bits a sample (8 or 16) */
    double sample_max;    /* the file's largest sample, 2^bit_depth - 1 */
} read_ctx;

/* libpng's messages start with a capital ("Not enough image data") unless
 * they start with a chunk name ("IDAT: CRC error"); ours are lowercase. */
static void set_reason(read_ctx *c, const char *prefix, const char *msg)
{
    int n = snprintf(c->why, sizeof c->why, "%s%s", prefix, msg);
    size_t at = strlen(prefix);
    if (n > 0 && (size_t)n > at + 1 && c->why[at] >= 'A' && c->why[at] <= 'Z'
        && c->why[at + 1] >= 'a' && c->why[at + 1] <= 'z')
        c->why[at] = (char)(c->why[at] - 'A' + 'a');
}

static void on_error(png_structp png, png_const_charp msg)
{
    read_ctx *c = png_get_error_ptr(png);
    if (c->st == ER_OK) {
        if (strstr(msg, "ut of memory") || strstr(msg, "ut of Memory")) {
            c->st = ER_ENOMEM;
            set_reason(c, "", "out of memory");
        } else {
            c->st = ER_EFORMAT;
            set_reason(c, "damaged PNG: ", msg);
        }
    }
    png_longjmp(png, 1);
}

/* Warnings (an odd sRGB profile, a damaged unknown chunk) do not change the
 * heights; a library must not print them.  One about erode's mapping chunk
 * (libpng is dropping it) is kept for the error find_mapping reports. */
static void on_warning(png_structp png, png_const_charp msg)
{
    read_ctx *c = png_get_error_ptr(png);
    if (c->in_mapping && !c->mapping_why[0])
        snprintf(c->mapping_why, sizeof c->mapping_why, "%s", msg);
}

static int is_text_chunk(const unsigned char *type)
{
    return memcmp(type, "tEXt", 4) == 0 || memcmp(type, "zTXt", 4) == 0 || memcmp(type, "iTXt", 4) == 0;
}

/* Matches the first data bytes of a text chunk, its keyword and the NUL
 * that ends it, against ER_PNG_KEY_MAPPING. */
static void note_keyword(read_ctx *c, const unsigned char *p, size_t n)
{
    static const char key[] = ER_PNG_KEY_MAPPING;
    for (size_t i = 0; i < n && c->key_match >= 0; i++) {
        if (p[i] != (unsigned char)key[c->key_match]) {
            c->key_match = -1;
        } else if (++c->key_match == (int)sizeof key) {
            c->key_match = -1;
            c->in_mapping = 1;
            c->mappings_seen++;
            c->late_mapping |= c->cached_chunks > ER_PNG_TEXT_CHUNKS_MAX;
        }
    }
}

/* Follows the chunk stream as it passes to libpng, noting erode's mapping
 * chunks, and returns 0 when a chunk header claims more bytes than the
 * rest of the file holds.  libpng allocates a text chunk's whole claimed
 * length before reading it, and png_set_chunk_malloc_max does not bound
 * that in libpng 1.6.39: without this check a 200-byte file claiming a
 * 2 GiB tEXt chunk costs a 2 GiB allocation (found by
 * tests/fuzz/fuzz_png.c). */
static int track_chunks(read_ctx *c, const unsigned char *p, size_t n)
{
    while (n > 0) {
        if (c->chunk_left > 0) {
            size_t k = c->chunk_left < n ? (size_t)c->chunk_left : n;
            size_t d = c->data_left < k ? (size_t)c->data_left : k;
            note_keyword(c, p, d);
            c->data_left -= d;
            c->chunk_left -= k;
            c->pos += k;
            p += k;
            n -= k;
            continue;
        }
        c->head[c->head_got++] = *p++;
        c->pos++;
        n--;
        if (c->head_got == 8) {
            c->head_got = 0;
            uint64_t len = (uint64_t)c->head[0] << 24 | (uint64_t)c->head[1] << 16 | (uint64_t)c->head[2] << 8
                         | c->head[3];
            c->chunk_left = len + 4;
            c->data_left = len;
            c->in_mapping = 0;
            c->key_match = is_text_chunk(c->head + 4) ? 0 : -1;
            c->cached_chunks += c->key_match == 0 || memcmp(c->head + 4, "sPLT", 4) == 0;
            if (c->file_size != UINT64_MAX && c->chunk_left > c->file_size - c->pos)
                return 0;
        }
    }
    return 1;
}

/* Our own read function, so a short read says "truncated file" and a read
 * error says what the system said, instead of libpng's "Read Error". */
static void on_read(png_structp png, png_bytep buf, size_t n)
{
    read_ctx *c = png_get_io_ptr(png);
    if (fread(buf, 1, n, c->f) == n) {
        if (track_chunks(c, buf, n))
            return;
        c->st = ER_EFORMAT;
        set_reason(c, "", "truncated file");
        png_error(png, c->why);
    }
    if (ferror(c->f)) {
        c->st = ER_EIO;
        set_reason(c, "", strerror(errno));
    } else {
        c->st = ER_EFORMAT;
        set_reason(c, "", "truncated file");
    }
    png_error(png, c->why);
}

/* Parses "min=<double> max=<double>" (the C locale's number syntax: erode
 * never calls setlocale).  Returns 1 on success. */
static int parse_mapping(const char *s, double *min, double *max)
{
    char *end;
    if (strncmp(s, "min=", 4) != 0)
        return 0;
    *min = strtod(s + 4, &end);
    if (end == s + 4 || strncmp(end, " max=", 5) != 0)
        return 0;
    s = end + 5;
    *max = strtod(s, &end);
    if (end == s || *end != '\0')
        return 0;
    /* The heights were floats: a mapping outside float range is damage. */
    return isfinite(*min) && isfinite(*max) && *min <= *max && fabs(*min) <= FLT_MAX
        && fabs(*max) <= FLT_MAX;
}

/* Finds erode's height mapping among the text chunks read so far: before
 * IDAT, where erode's writer puts it, and, once png_read_end has run, after
 * it (the format allows both).  Returns 1 and fills min/max when there is
 * one, 0 when there is none, -1 with c->why and *st set when it is
 * damaged, repeated, or was in the file but libpng could not read it
 * (ER_EUNSUPPORTED when it only came too late, past ER_PNG_TEXT_CHUNKS_MAX
 * other text chunks): then the heights cannot be known, and reading them
 * as 0..1 would be silently wrong by the whole range. */
static int find_mapping(read_ctx *c, double *min, double *max, er_status *st)
{
    png_textp text = NULL;
    int n = png_get_text(c->png, c->info, &text, NULL), found = 0;
    const char *bad = NULL;
    for (int i = 0; i < n && !bad; i++) {
        if (strcmp(text[i].key, ER_PNG_KEY_MAPPING) != 0)
            continue;
        if (found++)
            bad = " (repeated)";
        else if (!text[i].text || !parse_mapping(text[i].text, min, max))
            bad = "";
    }
    if (!bad && found == c->mappings_seen)
        return found;
    *st = ER_EFORMAT;
    if (bad) {
        snprintf(c->why, sizeof c->why, "damaged PNG: bad %s chunk%s", ER_PNG_KEY_MAPPING, bad);
    } else if (c->late_mapping) {
        *st = ER_EUNSUPPORTED;
        snprintf(c->why, sizeof c->why, "too many text chunks (the %s chunk follows the first %d)",
                 ER_PNG_KEY_MAPPING, ER_PNG_TEXT_CHUNKS_MAX);
    } else {
        /* zlib's reasons ("zTXt: incorrect header check"); "truncated" is
         * also what libpng says of text inflating past its limit. */
        const char *why = c->mapping_why[0] ? c->mapping_why : "unreadable";
        if (strstr(why, "truncated"))
            snprintf(c->why, sizeof c->why, "damaged PNG: bad %s chunk (%s, or over %u bytes inflated)",
                     ER_PNG_KEY_MAPPING, why, ER_PNG_CHUNK_MAX);
        else
            snprintf(c->why, sizeof c->why, "damaged PNG: bad %s chunk (%s)", ER_PNG_KEY_MAPPING, why);
    }
    return -1;
}

/* Converts one decoded row (big-endian samples, 1 or 2 channels) to raw
 * sample values and the nodata mask.  The samples stay raw, as floats
 * (exact: at most 65535 < 2^24), until the image has been read to its end:
 * only then is it known whether a mapping chunk follows the pixels. */
static void convert_row(read_ctx *c, const unsigned char *row, int y, int depth, int channels)
{
    size_t w = (size_t)c->width, base = (size_t)y * w;
    size_t step = (size_t)channels * (depth == 16 ? 2u : 1u);
    for (size_t x = 0; x < w; x++) {
        const unsigned char *p = row + x * step;
        unsigned v = depth == 16 ? ((unsigned)p[0] << 8 | p[1]) : p[0];
        c->data[base + x] = (float)v;
        if (channels == 2) {
            unsigned a = depth == 16 ? ((unsigned)p[2] << 8 | p[3]) : p[1];
            if (a == 0) {
                c->mask[base + x] = 1;
                c->nodata_cells++;
            }
        }
    }
}

/* Every libpng call happens here, under one setjmp.  Returns the status and
 * fills err on failure; c keeps the buffers for the caller to free. */
static er_status read_body(read_ctx *c, const er_read_opts *opts, er_error *err)
{
    if (setjmp(png_jmpbuf(c->png))) {
        er_status st = c->st != ER_OK ? c->st : ER_EFORMAT;
        return er_fail(err, st, "cannot read '%s': %s", c->path, c->why[0] ? c->why : "damaged PNG");
    }
    png_set_read_fn(c->png, c, on_read);
    png_set_sig_bytes(c->png, 8);
    png_set_user_limits(c->png, ER_PNG_SIDE_MAX, ER_PNG_SIDE_MAX);
    png_set_chunk_malloc_max(c->png, ER_PNG_CHUNK_MAX);
    /* libpng's count stops at 1 and includes the chunk that reaches it:
     * a cache of n keeps n - 2 chunks. */
    png_set_chunk_cache_max(c->png, ER_PNG_TEXT_CHUNKS_MAX + 2);
    /* A bad CRC is an error in any chunk: a damaged height-mapping chunk
     * must not be dropped silently (the heights would read as 0..1). */
    png_set_crc_action(c->png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
    png_read_info(c->png, c->info);

    png_uint_32 w, h;
    int depth, ctype, interlace;
    png_get_IHDR(c->png, c->info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    if (ctype & PNG_COLOR_MASK_COLOR)
        return er_fail(err, ER_EUNSUPPORTED, "cannot read '%s': colour PNG not supported, need greyscale",
                       c->path);
    size_t cells, bytes;
    if (!er_mul_size(w, h, &cells) || !er_mul_size(cells, sizeof(float), &bytes))
        return er_fail(err, ER_ENOMEM, "cannot read '%s': %lux%lu cells are too many", c->path,
                       (unsigned long)w, (unsigned long)h);
    size_t max_bytes = opts ? opts->max_bytes : 0;
    if (max_bytes && bytes > max_bytes)
        return er_fail(err, ER_ENOMEM, "cannot read '%s': %lux%lu cells need %zu bytes, more than the limit of %zu",
                       c->path, (unsigned long)w, (unsigned long)h, bytes, max_bytes);
    c->width = (int)w;
    c->height = (int)h;

    /* A bad mapping before the pixels is refused before decoding them. */
    double min = 0, max = 1;
    er_status st;
    if (find_mapping(c, &min, &max, &st) < 0)
        return er_fail(err, st, "cannot read '%s': %s", c->path, c->why);

    /* 1/2/4-bit grey expands to 8 bits by bit replication (v * 255 / (2^d -
     * 1) exactly), so v8 / 255 == v / (2^d - 1): the original scale. */
    const double sample_max = (double)((1u << depth) - 1);
    if (depth < 8)
        png_set_expand_gray_1_2_4_to_8(c->png);
    if (png_get_valid(c->png, c->info, PNG_INFO_tRNS))
        png_set_tRNS_to_alpha(c->png);
    int passes = png_set_interlace_handling(c->png);
    png_read_update_info(c->png, c->info);
    depth = png_get_bit_depth(c->png, c->info);
    int channels = png_get_channels(c->png, c->info);
    size_t rowbytes = png_get_rowbytes(c->png, c->info);
    if ((depth != 8 && depth != 16) || (channels != 1 && channels != 2)
        || rowbytes != (size_t)w * (size_t)channels * (size_t)(depth / 8))
        return er_fail(err, ER_EFORMAT, "cannot read '%s': unexpected PNG layout", c->path);
    c->alpha = channels == 2;

    c->data = malloc(bytes);
    c->mask = c->alpha ? calloc(cells, 1) : NULL;
    size_t rawsize = rowbytes;
    if (passes > 1 && !er_mul_size(rowbytes, h, &rawsize))
        return er_fail(err, ER_ENOMEM, "cannot read '%s': out of memory", c->path);
    c->raw = malloc(rawsize);
    if (!c->data || (c->alpha && !c->mask) || !c->raw)
        return er_fail(err, ER_ENOMEM, "cannot read '%s': out of memory", c->path);

    if (passes == 1) {
        for (png_uint_32 y = 0; y < h; y++) {
            png_read_row(c->png, c->raw, NULL);
            convert_row(c, c->raw, (int)y, depth, channels);
            er_io_progress_report(c->pg, y + 1, h);
        }
    } else {
        /* Adam7: each pass fills in more pixels of every row, so all rows
         * stay in memory until the last pass. */
        for (int p = 0; p < passes; p++) {
            for (png_uint_32 y = 0; y < h; y++)
                png_read_row(c->png, c->raw + (size_t)y * rowbytes, NULL);
            er_io_progress_report(c->pg, p + 1, passes);
        }
        for (png_uint_32 y = 0; y < h; y++)
            convert_row(c, c->raw + (size_t)y * rowbytes, (int)y, depth, channels);
    }
    /* Reads up to IEND so a file cut short after the pixels, or a damaged
     * trailing chunk, is reported too, and the text chunks after the pixels
     * join those before them in c->info. */
    png_read_end(c->png, c->info);
    int mapped = find_mapping(c, &min, &max, &st);
    if (mapped < 0)
        return er_fail(err, st, "cannot read '%s': %s", c->path, c->why);
    c->mapped = mapped;
    c->min = min;
    c->max = max;
    c->depth = depth;
    c->sample_max = sample_max;
    return ER_OK;
}

/* Marks the cells whose sample equals the PAM file's nodata value, as
 * GDAL masks them.  Returns 0 when out of memory. */
static int mask_nodata(read_ctx *c, const er_png_pam *pam)
{
    size_t cells = (size_t)c->width * (size_t)c->height;
    double rawmax = (double)((1u << c->depth) - 1);
    for (size_t i = 0; i < cells; i++) {
        if ((double)c->data[i] * c->sample_max / rawmax != pam->nodata || (c->mask && c->mask[i]))
            continue;
        if (!c->mask && !(c->mask = calloc(cells, 1)))
            return 0;
        c->mask[i] = 1;
        c->nodata_cells++;
    }
    return 1;
}

/* The samples (raw, as floats) turned into values, in this order of
 * precedence: erode's mapping chunk; the PAM file's scale and offset
 * (sample * scale + offset, as GDAL reads it); the samples themselves
 * for opts->png_codes; else sample / (2^depth - 1).  A table makes every
 * cell with the same sample bit-identical and costs at most 256 KiB;
 * nodata cells keep the sample value, the PAM's nodata value. */
static er_status map_values(read_ctx *c, const er_read_opts *opts, const er_png_pam *pam, er_error *err)
{
    size_t levels = (size_t)1 << c->depth, cells = (size_t)c->width * (size_t)c->height;
    double rawmax = (double)(levels - 1);
    if (pam->has_nodata && !mask_nodata(c, pam))
        return er_fail(err, ER_ENOMEM, "cannot read '%s': out of memory", c->path);
    if (!(c->lut = malloc(levels * sizeof *c->lut)))
        return er_fail(err, ER_ENOMEM, "cannot read '%s': out of memory", c->path);
    int codes = opts && opts->png_codes;
    for (size_t v = 0; v < levels; v++) {
        /* the sample as the file holds it: v * sample_max / rawmax is a
         * whole number (bit replication), exact in double */
        double sample = (double)v * c->sample_max / rawmax;
        c->lut[v] = c->mapped ? (float)(c->min + (double)v / rawmax * (c->max - c->min))
                  : pam->has_scale ? (float)(sample * pam->scale + pam->offset)
                  : codes ? (float)sample
                          : (float)((double)v / rawmax);
    }
    for (size_t i = 0; i < cells; i++)
        c->data[i] = c->mask && c->mask[i] && pam->has_nodata ? (float)((double)c->data[i] * c->sample_max / rawmax)
                                                               : c->lut[(size_t)c->data[i]];
    return ER_OK;
}

/*
 * Reads a greyscale PNG (see io/image.h).  Values: erode's mapping when
 * the file has one (io/png_common.h), else sample * scale + offset when
 * its "<path>.aux.xml" gives band 1 a GDAL Scale or Offset, else raw /
 * (2^depth - 1).  Cells with alpha 0 (an alpha channel or a tRNS grey
 * value), and those whose sample is the .aux.xml's NoDataValue, are
 * nodata; their values are the decoded grey samples (the sample itself
 * for the NoDataValue's).  img->nodata is NULL when no cell is nodata;
 * img->png_alpha says whether the file had alpha.  Georeferencing, first
 * found: the .aux.xml's ER_PNG_DOMAIN when erode wrote it
 * (io/png_sidecar.c), the GeoTIFF tags of the raster it was made from
 * and with them that raster's declared nodata value (has_nodata_value,
 * nodata_value; otherwise the NoDataValue, or 0 and NaN); GDAL's
 * GeoTransform and SRS in the .aux.xml; a world file (io/png_pam.c),
 * whose unit only the .aux.xml's SRS gives.
 *
 * opts (may be NULL): band must be 0 or 1; max_bytes bounds the float copy
 * and is checked on the header before anything large is allocated.
 * Returns ER_OK, or ER_EIO (open/read), ER_EFORMAT (not a PNG, damaged or
 * truncated, a damaged sidecar or world file, or one for another raster
 * size),
 * ER_EUNSUPPORTED (colour), ER_EINVAL (band), ER_ENOMEM (limit or
 * allocation); on failure *img is empty.  The caller frees *img with
 * er_image_free.  Thread-safe (no shared state).
 */
er_status er_png_read(const char *path, const er_read_opts *opts, er_image *img, er_error *err)
{
    return er_png_read_progress(path, opts, NULL, img, err);
}

/* er_png_read, reporting progress per row (per pass when interlaced). */
er_status er_png_read_progress(const char *path, const er_read_opts *opts, const er_io_progress *pg,
                               er_image *img, er_error *err)
{
    memset(img, 0, sizeof *img);
    int band = opts ? opts->band : 0;
    if (band < 0 || band > 1)
        return er_fail(err, ER_EINVAL, "cannot read '%s': band %d requested, a PNG has one band", path, band);

    read_ctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.pg = pg;
    c.f = fopen(path, "rb");
    if (!c.f)
        return er_fail(err, ER_EIO, "cannot read '%s': %s", path, strerror(errno));
    unsigned char sig[8];
    size_t got = fread(sig, 1, sizeof sig, c.f);
    er_status st = ER_OK;
    if (got < sizeof sig && ferror(c.f))
        st = er_fail(err, ER_EIO, "cannot read '%s': %s", path, strerror(errno));
    else if (got < sizeof sig || png_sig_cmp(sig, 0, sizeof sig) != 0)
        st = er_fail(err, ER_EFORMAT, "cannot read '%s': not a PNG file", path);
    if (st) {
        fclose(c.f);
        return st;
    }
    struct stat sb;
    c.file_size = fstat(fileno(c.f), &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : UINT64_MAX;
    c.pos = sizeof sig;

    c.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &c, on_error, on_warning);
    c.info = c.png ? png_create_info_struct(c.png) : NULL;
    if (!c.info)
        st = er_fail(err, ER_ENOMEM, "cannot read '%s': out of memory", path);
    else
        st = read_body(&c, opts, err);
    png_destroy_read_struct(c.png ? &c.png : NULL, c.info ? &c.info : NULL, NULL);
    fclose(c.f);
    free(c.raw);
    er_png_pam pam;
    img->width = c.width;
    img->height = c.height;
    img->nodata_value = NAN;
    if (st == ER_OK)
        st = er_png_sidecars_read(path, img, &pam, err);
    if (st == ER_OK)
        st = map_values(&c, opts, &pam, err);
    free(c.lut);
    if (st) {
        free(c.data);
        free(c.mask);
        er_image_free(img);
        return st;
    }
    if (c.nodata_cells == 0) {
        free(c.mask);
        c.mask = NULL;
    }
    /* GDAL's nodata value of the samples, unless erode's own sidecar named
     * the value its source raster declared */
    if (pam.has_nodata && !img->has_nodata_value) {
        img->has_nodata_value = 1;
        img->nodata_value = pam.nodata;
    }
    img->data = c.data;
    img->nodata = c.mask;
    img->format = ER_FORMAT_PNG;
    img->png_alpha = c.alpha;
    return ER_OK;
}
