/*
 * OpenEXR writer (-f exr): one single-channel scanline image per layer,
 * written through OpenEXR's own C library (OpenEXRCore), the reference
 * implementation every renderer and DCC tool reads.
 *
 * The bytes go through a custom write function into the io/atomic.h
 * temporary, so the file joins the run's output set like the GeoTIFFs.
 * ZIP compression by default (16 lines a chunk, lossless, read
 * everywhere), or another lossless codec of --co COMPRESS, on one thread:
 * the library writes no time stamp, so the same layer gives the same
 * bytes on every run.  A chunk that compression does not shrink is stored
 * raw (see compress_or_store_raw).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openexr.h>
/* Imath's C half conversion (round to nearest even, as OpenEXR's own
 * writers do); its header is not clean under -Wconversion. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#include <half.h>
#pragma GCC diagnostic pop

#include "atomic.h"
#include "image.h"

/* The largest finite half (2^15 * (2 - 2^-10)). */
#define HALF_MAX_VALUE 65504.0f

/* What the write callback needs, and the library's last complaint. */
typedef struct exr_sink {
    int fd;
    int errnum;          /* errno of a failed pwrite, 0 = none */
    char why[160];       /* the library's message, "" = none */
} exr_sink;

static void on_error(exr_const_context_t ctxt, exr_result_t code, const char *msg)
{
    void *user = NULL;
    if (exr_get_user_data(ctxt, &user) == EXR_ERR_SUCCESS && user) {
        exr_sink *s = user;
        snprintf(s->why, sizeof s->why, "%s", msg ? msg : exr_get_error_code_as_string(code));
    }
}

static int64_t on_write(exr_const_context_t ctxt, void *user, const void *buf, uint64_t sz,
                        uint64_t offset, exr_stream_error_func_ptr_t error_cb)
{
    exr_sink *s = user;
    const char *p = buf;
    uint64_t done = 0;
    (void)ctxt;
    (void)error_cb;
    while (done < sz) {
        ssize_t n = pwrite(s->fd, p + done, (size_t)(sz - done), (off_t)(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            s->errnum = n < 0 ? errno : EIO;
            return -1;
        }
        done += (uint64_t)n;
    }
    return (int64_t)done;
}

/* OpenEXR's codecs, each with what it does to exact values: the one
 * table behind --co COMPRESS, its refusals and erode(1)'s list.  B44 and
 * DWA quantise half and float channels named Y; PXR24 rounds float32 to a
 * 24-bit float and keeps half as it is. */
static const struct exr_codec_row {
    const char *name;
    exr_compression_t code;
    int lossless_float, lossless_half;
} exr_codecs[] = {
    [ER_EXR_ZIP] = {"ZIP", EXR_COMPRESSION_ZIP, 1, 1},
    [ER_EXR_NONE] = {"NONE", EXR_COMPRESSION_NONE, 1, 1},
    [ER_EXR_RLE] = {"RLE", EXR_COMPRESSION_RLE, 1, 1},
    [ER_EXR_ZIPS] = {"ZIPS", EXR_COMPRESSION_ZIPS, 1, 1},
    [ER_EXR_PIZ] = {"PIZ", EXR_COMPRESSION_PIZ, 1, 1},
    [ER_EXR_PXR24] = {"PXR24", EXR_COMPRESSION_PXR24, 0, 1},
    {"B44", EXR_COMPRESSION_B44, 0, 0},
    {"B44A", EXR_COMPRESSION_B44A, 0, 0},
    {"DWAA", EXR_COMPRESSION_DWAA, 0, 0},
    {"DWAB", EXR_COMPRESSION_DWAB, 0, 0},
};
#define N_EXR_CODECS (sizeof exr_codecs / sizeof exr_codecs[0])

int er_exr_compress_parse(const char *name, int use_half, er_exr_compress *out, const char **why)
{
    for (size_t i = 0; i < N_EXR_CODECS; i++) {
        if (strcasecmp(name, exr_codecs[i].name) != 0)
            continue;
        if (use_half ? exr_codecs[i].lossless_half : exr_codecs[i].lossless_float) {
            *out = (er_exr_compress)i;
            return 1;
        }
        *why = i == ER_EXR_PXR24 ? "PXR24 rounds float32 to 24 bits: use it with PIXEL_TYPE=HALF, or a "
                                   "lossless EXR codec: ZIP, NONE, RLE, ZIPS or PIZ"
                                 : "B44 and DWA are lossy: erode writes EXR with a lossless codec: "
                                   "ZIP, NONE, RLE, ZIPS, PIZ (PXR24 with PIXEL_TYPE=HALF)";
        return 0;
    }
    *why = "not an EXR codec: expected COMPRESS=ZIP, NONE, RLE, ZIPS, PIZ (PXR24 with PIXEL_TYPE=HALF)";
    return 0;
}

const char *er_exr_compress_name(er_exr_compress c)
{
    return (size_t)c <= ER_EXR_PXR24 ? exr_codecs[c].name : "?";
}

/* The value a cell is written with: nodata cells (masked, or NaN, which
 * every reader takes for nodata) hold NaN or the fill. */
static float cell_value(const er_layer_out *l, const er_nodata_fill *fill, size_t i)
{
    int nodata = (l->nodata && l->nodata[i]) || isnan(l->data[i]);
    if (!nodata)
        return l->data[i];
    return fill->on ? fill->value : NAN;
}

/* The pixels as the file stores them: float32 with NaN (or the fill) in
 * nodata cells, or half.  Half refuses, rather than clamps, a value beyond
 * +-65504: a clamped height is a wrong height nobody sees.  The caller
 * frees. */
static er_status pixels(const char *path, const er_layer_out *l, const er_exr_create *co, void **out,
                        er_error *err)
{
    int use_half = co->half;
    size_t n = (size_t)l->width * (size_t)l->height;
    float *f = use_half ? NULL : malloc(n * sizeof *f);
    uint16_t *h = use_half ? malloc(n * sizeof *h) : NULL;
    if (!f && !h)
        return er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
    for (size_t i = 0; i < n; i++) {
        float v = cell_value(l, &co->fill, i);
        if (!use_half) {
            f[i] = v;
            continue;
        }
        if (fabsf(v) > HALF_MAX_VALUE) {
            free(h);
            return er_fail(err, ER_EINVAL,
                           "cannot write '%s': value %g at cell (%zu, %zu) is beyond half's range "
                           "(+-65504); write float (PIXEL_TYPE=FLOAT)",
                           path, (double)v, i % (size_t)l->width, i / (size_t)l->width);
        }
        h[i] = imath_float_to_half(v);
    }
    *out = use_half ? (void *)h : (void *)f;
    return ER_OK;
}

/* Header: one "Y" channel, the provenance as the string attribute
 * "erode" (OpenEXR keeps unknown attributes; readers list them). */
static exr_result_t write_header(exr_context_t c, const er_layer_out *l, const er_exr_create *co)
{
    int part, use_half = co->half;
    exr_result_t r = exr_add_part(c, "erode", EXR_STORAGE_SCANLINE, &part);
    if (!r)
        r = exr_initialize_required_attr_simple(c, part, l->width, l->height, exr_codecs[co->compress].code);
    if (!r)
        r = exr_add_channel(c, part, "Y", use_half ? EXR_PIXEL_HALF : EXR_PIXEL_FLOAT, EXR_PERCEPTUALLY_LINEAR, 1, 1);
    if (!r && l->provenance)
        r = exr_attr_set_string(c, part, "erode", l->provenance);
    if (!r)
        r = exr_write_header(c);
    return r;
}

/* The library's own compressor for the part, called by the wrapper below. */
typedef struct exr_codec {
    exr_result_t (*compress)(exr_encode_pipeline_t *enc);
} exr_codec;

/* The EXR format stores a chunk raw when compression does not make it
 * smaller, and a reader tells raw from compressed only by the chunk's size:
 * packed size == unpacked size means raw.  OpenEXRCore's ZIP encoder
 * before 3.4.8 (3.1.5 in Debian 12) stores a zlib stream of exactly the
 * raw size as it is, so every reader decodes the stream's bytes as pixels
 * (+-3e38 and NaNs over the chunk's 16 rows).  So: run the library's
 * compressor, and whenever its result is not smaller than the raw chunk,
 * store the raw bytes instead (a no-op with a fixed library). */
static exr_result_t compress_or_store_raw(exr_encode_pipeline_t *enc)
{
    const exr_codec *codec = enc->encoding_user_data;
    exr_result_t r = codec->compress(enc);
    if (r != EXR_ERR_SUCCESS || enc->compressed_bytes < enc->packed_bytes)
        return r;
    /* The library sizes the buffer for zlib's worst case, above the raw size. */
    if (enc->compressed_alloc_size < enc->packed_bytes)
        return EXR_ERR_OUT_OF_MEMORY;
    memcpy(enc->compressed_buffer, enc->packed_buffer, enc->packed_bytes);
    enc->compressed_bytes = enc->packed_bytes;
    return EXR_ERR_SUCCESS;
}

/* Encodes the pixels chunk by chunk, top row first. */
static exr_result_t write_chunks(exr_context_t c, const er_layer_out *l, int use_half, const void *px)
{
    int lines;
    size_t bpe = use_half ? 2 : 4;
    exr_encode_pipeline_t enc = {0};
    exr_codec codec = {NULL};
    int started = 0;
    exr_result_t r = exr_get_scanlines_per_chunk(c, 0, &lines);
    for (int y = 0; !r && y < l->height; y += lines) {
        exr_chunk_info_t ci;
        r = exr_write_scanline_chunk_info(c, 0, y, &ci);
        if (r)
            break;
        r = y ? exr_encoding_update(c, 0, &ci, &enc) : exr_encoding_initialize(c, 0, &ci, &enc);
        if (r)
            break;
        started = 1;
        enc.channels[0].encode_from_ptr = (const uint8_t *)px + (size_t)y * (size_t)l->width * bpe;
        enc.channels[0].user_pixel_stride = (int32_t)bpe;
        enc.channels[0].user_line_stride = (int32_t)((size_t)l->width * bpe);
        enc.channels[0].user_bytes_per_element = (int16_t)bpe;
        enc.channels[0].user_data_type = (uint16_t)(use_half ? EXR_PIXEL_HALF : EXR_PIXEL_FLOAT);
        if (y == 0 && (r = exr_encoding_choose_default_routines(c, 0, &enc)) == EXR_ERR_SUCCESS &&
            enc.compress_fn) {
            codec.compress = enc.compress_fn;
            enc.encoding_user_data = &codec;
            enc.compress_fn = compress_or_store_raw;
        }
        if (!r)
            r = exr_encoding_run(c, 0, &enc);
    }
    if (started) {
        exr_result_t r2 = exr_encoding_destroy(c, &enc);
        if (!r)
            r = r2;
    }
    return r;
}

er_status er_exr_write(const char *path, const er_layer_out *layer, int use_half, er_error *err)
{
    er_exr_create co = {use_half, ER_EXR_ZIP, {0, 0.0f}};
    return er_exr_write_co(path, layer, &co, err);
}

er_status er_exr_write_co(const char *path, const er_layer_out *layer, const er_exr_create *co, er_error *err)
{
    void *px = NULL;
    int use_half = co->half;
    if ((size_t)co->compress > ER_EXR_PXR24 || (co->compress == ER_EXR_PXR24 && !use_half))
        return er_fail(err, ER_EINVAL, "cannot write '%s': invalid EXR creation options", path);
    er_status st = pixels(path, layer, co, &px, err);
    if (st)
        return st;
    er_atomic a;
    if ((st = er_atomic_open(&a, path, err)) != ER_OK) {
        free(px);
        return st;
    }
    exr_sink sink = {a.fd, 0, ""};
    exr_context_initializer_t init = EXR_DEFAULT_CONTEXT_INITIALIZER;
    init.user_data = &sink;
    init.write_fn = on_write;
    init.error_handler_fn = on_error;
    exr_context_t c = NULL;
    exr_result_t r = exr_start_write(&c, path, EXR_WRITE_FILE_DIRECTLY, &init);
    if (!r)
        r = write_header(c, layer, co);
    if (!r)
        r = write_chunks(c, layer, use_half, px);
    /* exr_finish writes the chunk offset table: its failure is a failed write. */
    exr_result_t rf = c ? exr_finish(&c) : EXR_ERR_SUCCESS;
    if (!r)
        r = rf;
    free(px);
    if (r) {
        er_atomic_abort(&a);
        return er_fail(err, ER_EIO, "cannot write '%s': %s", path,
                       sink.errnum ? er_atomic_reason(sink.errnum)
                       : sink.why[0] ? sink.why : exr_get_error_code_as_string(r));
    }
    return er_atomic_commit(&a, err);
}
