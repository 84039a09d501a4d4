/*
 * Tile codecs for the GeoTIFF writer's parallel path (io/tiff_write.c):
 * the TIFF predictors done by hand and DEFLATE (libdeflate) or ZSTD
 * (libzstd) compression of one whole tile, so that tiles are encoded on all
 * threads and handed to libtiff already compressed (TIFFWriteRawTile).
 * The bytes equal what libtiff's own codecs would store for the same
 * settings, up to the compressor's choices: readers decode them alike.
 */
#ifndef ER_TIFF_CODEC_H
#define ER_TIFF_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* One thread's compressor; not shareable between threads. */
typedef struct er_codec er_codec;

/* A compressor for `compress` (ER_COMPRESS_DEFLATE, _ZSTD or _NONE) at
 * `level` (already checked; 0: a decoder only).  NULL when out of memory.  The caller frees
 * it with er_codec_free (which accepts NULL). */
er_codec *er_codec_new(er_compress compress, int level);
void er_codec_free(er_codec *c);

/* Largest compressed size of n input bytes. */
size_t er_codec_bound(const er_codec *c, size_t n);

/* Compresses n bytes of src into dst (cap bytes, at least
 * er_codec_bound).  Returns the compressed size, 0 on failure. */
size_t er_codec_compress(er_codec *c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap);

/* Decompresses n bytes of src into dst (cap bytes).  Returns 1 when that
 * gave at least `want` bytes (a strip may carry padding rows), or 0 when
 * the data is corrupt, too short or too long, or memory ran out. */
int er_codec_decompress(er_codec *c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap, size_t want);

/* Turns a tile of tw x th float32 cells, rows `stride` cells apart, into
 * the bytes a little-endian TIFF stores before compression under
 * `predictor` (1 none, 2 horizontal differencing of the 32-bit words, 3
 * floating point: per row the bytes split into four planes, most
 * significant first, then differenced), TIFF 6.0 section 14 and Adobe's
 * Technical Note 3.  out holds tw*th*4 bytes.  Pure and thread-safe. */
void er_predict_tile(const float *tile, size_t stride, uint32_t tw, uint32_t th, int predictor, uint8_t *out);

/* The inverse of er_predict_tile, for a little-endian file; scratch holds
 * tw*4 bytes (predictor 3 only; may be NULL otherwise). */
void er_unpredict_tile(const uint8_t *in, uint32_t tw, uint32_t th, int predictor, float *tile, uint8_t *scratch);

#endif
