/*
 * Tile predictors and compressors for the parallel GeoTIFF writer.
 *
 * libdeflate (DEFLATE) and libzstd (ZSTD) compress a whole buffer in one
 * call with no internal threads or shared state, so one compressor per
 * thread encodes any tile the same way: the output bytes depend on the
 * tile and the level only, never on which thread ran it.
 */
#include "tiff_codec.h"

/* GCC vectorises the predictor's loops of unknown length at -O2 only with
 * the dynamic cost model (integer code: no value can change). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif
/* and for AVX2 where the CPU has it (byte narrowing in 32-byte vectors):
 * the predictor at 7.5 GB/s on one core instead of 2.5 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(ER_NO_CLONES)
#define CODEC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CODEC_CLONES
#endif

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "../core/bits.h"

struct er_codec {
    er_compress compress;
    int level;
    struct libdeflate_compressor *deflate;
    ZSTD_CCtx *zstd;
    struct libdeflate_decompressor *inflate; /* made at the first decode */
    ZSTD_DCtx *unzstd;
};

er_codec *er_codec_new(er_compress compress, int level)
{
    er_codec *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->compress = compress;
    c->level = level;
    if (level > 0 && compress == ER_COMPRESS_DEFLATE && !(c->deflate = libdeflate_alloc_compressor(level)))
        goto fail;
    if (level > 0 && compress == ER_COMPRESS_ZSTD && !(c->zstd = ZSTD_createCCtx()))
        goto fail;
    return c;
fail:
    er_codec_free(c);
    return NULL;
}

void er_codec_free(er_codec *c)
{
    if (!c)
        return;
    if (c->deflate)
        libdeflate_free_compressor(c->deflate);
    if (c->inflate)
        libdeflate_free_decompressor(c->inflate);
    ZSTD_freeCCtx(c->zstd);
    ZSTD_freeDCtx(c->unzstd);
    free(c);
}

size_t er_codec_bound(const er_codec *c, size_t n)
{
    switch (c->compress) {
    case ER_COMPRESS_DEFLATE: return libdeflate_zlib_compress_bound(c->deflate, n);
    case ER_COMPRESS_ZSTD: return ZSTD_compressBound(n);
    default: return n;
    }
}

size_t er_codec_compress(er_codec *c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap)
{
    switch (c->compress) {
    case ER_COMPRESS_DEFLATE:
        /* TIFF's Adobe DEFLATE (code 8) is a zlib stream, not raw DEFLATE. */
        return libdeflate_zlib_compress(c->deflate, src, n, dst, cap);
    case ER_COMPRESS_ZSTD: {
        size_t got = ZSTD_compressCCtx(c->zstd, dst, cap, src, n, c->level);
        return ZSTD_isError(got) ? 0 : got;
    }
    default:
        if (n > cap)
            return 0;
        memcpy(dst, src, n);
        return n;
    }
}

int er_codec_decompress(er_codec *c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap, size_t want)
{
    size_t got = 0;
    switch (c->compress) {
    case ER_COMPRESS_DEFLATE:
        if (!c->inflate && !(c->inflate = libdeflate_alloc_decompressor()))
            return 0;
        return libdeflate_zlib_decompress(c->inflate, src, n, dst, cap, &got) == LIBDEFLATE_SUCCESS && got >= want;
    case ER_COMPRESS_ZSTD:
        if (!c->unzstd && !(c->unzstd = ZSTD_createDCtx()))
            return 0;
        got = ZSTD_decompressDCtx(c->unzstd, dst, cap, src, n);
        return !ZSTD_isError(got) && got >= want;
    default:
        if (n < want || want > cap)
            return 0;
        memcpy(dst, src, want);
        return 1;
    }
}


/* Little-endian whatever the host: the writer opens files "wl". */
static void put_le32(uint8_t *p, uint32_t u)
{
    p[0] = (uint8_t)u;
    p[1] = (uint8_t)(u >> 8);
    p[2] = (uint8_t)(u >> 16);
    p[3] = (uint8_t)(u >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Floating-point predictor (Adobe Photoshop TIFF Technical Note 3, as
 * libtiff's fpDiff): byte plane p holds bits 31-8p..24-8p of every cell of
 * the row, then each byte minus the one before it over the whole row.  The
 * planes are most significant first in either byte order.  Each difference
 * is taken from the cells themselves (the byte before the first of plane p
 * is the last of plane p - 1), so that the loops have no carried
 * dependency and vectorise: a third of the writer's time went here. */
static CODEC_CLONES void fp_diff_row(const float *row, uint32_t w, uint8_t *out)
{
    for (uint32_t p = 0; p < 4; p++) {
        const uint32_t shift = 24 - 8 * p;
        uint8_t *o = out + (size_t)p * w;
        uint8_t before = (uint8_t)(p ? er_float_bits(row[w - 1]) >> (shift + 8) : 0u);
        o[0] = (uint8_t)((uint8_t)(er_float_bits(row[0]) >> shift) - before);
        for (uint32_t x = 1; x < w; x++)
            o[x] = (uint8_t)((er_float_bits(row[x]) >> shift) - (er_float_bits(row[x - 1]) >> shift));
    }
}

static void fp_undiff_row(const uint8_t *in, uint32_t w, float *row, uint8_t *scratch)
{
    scratch[0] = in[0];
    for (size_t i = 1; i < (size_t)w * 4; i++)
        scratch[i] = (uint8_t)(scratch[i - 1] + in[i]);
    for (uint32_t x = 0; x < w; x++) {
        uint32_t u = 0;
        for (uint32_t p = 0; p < 4; p++)
            u |= (uint32_t)scratch[p * w + x] << (24 - 8 * p);
        row[x] = er_bits_float(u);
    }
}

void er_predict_tile(const float *tile, size_t stride, uint32_t tw, uint32_t th, int predictor, uint8_t *out)
{
    for (uint32_t y = 0; y < th; y++) {
        const float *row = tile + (size_t)y * stride;
        uint8_t *o = out + (size_t)y * tw * 4;
        if (predictor == 3) {
            fp_diff_row(row, tw, o);
            continue;
        }
        uint32_t prev = 0;
        for (uint32_t x = 0; x < tw; x++) {
            uint32_t u = er_float_bits(row[x]);
            /* Predictor 2 on 32-bit samples: the word minus the one to its
             * left, modulo 2^32 (libtiff's horDiff32). */
            put_le32(o + 4 * (size_t)x, predictor == 2 ? u - prev : u);
            prev = u;
        }
    }
}

void er_unpredict_tile(const uint8_t *in, uint32_t tw, uint32_t th, int predictor, float *tile, uint8_t *scratch)
{
    for (uint32_t y = 0; y < th; y++) {
        const uint8_t *r = in + (size_t)y * tw * 4;
        float *row = tile + (size_t)y * tw;
        if (predictor == 3) {
            fp_undiff_row(r, tw, row, scratch);
            continue;
        }
        uint32_t prev = 0;
        for (uint32_t x = 0; x < tw; x++) {
            uint32_t u = get_le32(r + 4 * (size_t)x);
            if (predictor == 2)
                u += prev;
            row[x] = er_bits_float(u);
            prev = u;
        }
    }
}
