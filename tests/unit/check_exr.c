/*
 * OpenEXR writer (io/exr_write.c).  Files are read back with OpenEXRCore's
 * decoder into the file's own pixel type, and half is widened by this
 * file's own decoder (not Imath's), so the writer's conversion is checked
 * by an independent one.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <openexr.h>
#include <stdint.h>
#include <strings.h>
#include <zlib.h>

#include "../../core/bits.h"
#include "../../io/image.h"
#include "test_util.h"

static char dir[1024];

static void setup(void)
{
    er_test_mkdtemp(dir, sizeof dir);
}

static void teardown(void)
{
    er_test_rmdir(dir);
}

static int dir_entries(const char *d)
{
    DIR *dp = opendir(d);
    ck_assert_ptr_nonnull(dp);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(dp);
    return n;
}

/* IEEE 754 binary16 to float, by the definition. */
static float half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float s = (h & 0x8000) ? -1.0f : 1.0f;
    if (e == 31)
        return m ? NAN : s * INFINITY;
    if (e == 0)
        return s * ldexpf((float)m, -24);
    return s * ldexpf((float)(m + 1024), e - 25);
}

/* What a reader finds in one of erode's EXR files. */
typedef struct exr_back {
    int width, height;
    int is_half;
    float *v;      /* width * height values, widened from half when is_half */
    uint16_t *bits; /* the half bit patterns as stored (is_half only) */
    char *prov;    /* the "erode" attribute, NULL when absent */
    int chunks, raw_chunks; /* blocks, and those stored uncompressed */
    exr_compression_t compression; /* the header's codec */
} exr_back;

static void read_chunks(exr_context_t c, exr_back *b)
{
    int lines;
    size_t bpe = b->is_half ? 2 : 4, n = (size_t)b->width * (size_t)b->height;
    uint8_t *raw = malloc(n * bpe);
    ck_assert_ptr_nonnull(raw);
    ck_assert_int_eq(exr_get_scanlines_per_chunk(c, 0, &lines), EXR_ERR_SUCCESS);
    exr_decode_pipeline_t dec = {0};
    for (int y = 0; y < b->height; y += lines) {
        exr_chunk_info_t ci;
        ck_assert_int_eq(exr_read_scanline_chunk_info(c, 0, y, &ci), EXR_ERR_SUCCESS);
        ck_assert_uint_le(ci.packed_size, ci.unpacked_size);
        b->chunks++;
        b->raw_chunks += ci.packed_size == ci.unpacked_size;
        ck_assert_int_eq(y ? exr_decoding_update(c, 0, &ci, &dec) : exr_decoding_initialize(c, 0, &ci, &dec),
                         EXR_ERR_SUCCESS);
        dec.channels[0].decode_to_ptr = raw + (size_t)y * (size_t)b->width * bpe;
        dec.channels[0].user_pixel_stride = (int32_t)bpe;
        dec.channels[0].user_line_stride = (int32_t)((size_t)b->width * bpe);
        dec.channels[0].user_bytes_per_element = (int16_t)bpe;
        dec.channels[0].user_data_type = b->is_half ? EXR_PIXEL_HALF : EXR_PIXEL_FLOAT;
        if (y == 0)
            ck_assert_int_eq(exr_decoding_choose_default_routines(c, 0, &dec), EXR_ERR_SUCCESS);
        ck_assert_int_eq(exr_decoding_run(c, 0, &dec), EXR_ERR_SUCCESS);
    }
    exr_decoding_destroy(c, &dec);
    b->v = malloc(n * sizeof *b->v);
    b->bits = b->is_half ? malloc(n * sizeof *b->bits) : NULL;
    ck_assert_ptr_nonnull(b->v);
    for (size_t i = 0; i < n; i++) {
        if (b->is_half) {
            uint16_t h;
            memcpy(&h, raw + 2 * i, 2);
            b->bits[i] = h;
            b->v[i] = half_value(h);
        } else {
            memcpy(&b->v[i], raw + 4 * i, 4);
        }
    }
    free(raw);
}

static exr_back read_exr(const char *path)
{
    exr_back b = {0};
    exr_context_t c = NULL;
    exr_context_initializer_t init = EXR_DEFAULT_CONTEXT_INITIALIZER;
    ck_assert_int_eq(exr_start_read(&c, path, &init), EXR_ERR_SUCCESS);
    exr_attr_box2i_t dw;
    ck_assert_int_eq(exr_get_data_window(c, 0, &dw), EXR_ERR_SUCCESS);
    b.width = dw.max.x - dw.min.x + 1;
    b.height = dw.max.y - dw.min.y + 1;
    const exr_attr_chlist_t *ch;
    ck_assert_int_eq(exr_get_channels(c, 0, &ch), EXR_ERR_SUCCESS);
    ck_assert_int_eq(ch->num_channels, 1);
    ck_assert_str_eq(ch->entries[0].name.str, "Y");
    b.is_half = ch->entries[0].pixel_type == EXR_PIXEL_HALF;
    ck_assert_int_eq(exr_get_compression(c, 0, &b.compression), EXR_ERR_SUCCESS);
    int32_t len;
    const char *s;
    if (exr_attr_get_string(c, 0, "erode", &len, &s) == EXR_ERR_SUCCESS) {
        b.prov = malloc((size_t)len + 1);
        ck_assert_ptr_nonnull(b.prov);
        memcpy(b.prov, s, (size_t)len);
        b.prov[len] = '\0';
    }
    read_chunks(c, &b);
    exr_finish(&c);
    return b;
}

static void back_free(exr_back *b)
{
    free(b->v);
    free(b->bits);
    free(b->prov);
}

/* A counter-based generator (splitmix64's finaliser) for test layers. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* A float with random bits and any exponent but all ones: finite, from
 * subnormals and -0 to +-3.4e38, as incompressible as floats get. */
static float random_finite(uint64_t key)
{
    uint32_t u = (uint32_t)mix(key);
    if (((u >> 23) & 0xff) == 0xff)
        u ^= 1u << 30;
    return er_bits_float(u);
}

/* A 37 x 23 layer (neither side a multiple of the 16-line chunk) of
 * values across many binades, a few nodata cells. */
enum { W = 37, H = 23 };
static float values[W * H];
static uint8_t nodata[W * H];

static er_layer_out layer(float scale)
{
    for (int i = 0; i < W * H; i++) {
        values[i] = scale * (float)sin(i * 0.37) * powf(2.0f, (float)(i % 29 - 14));
        nodata[i] = i % 97 == 5;
    }
    return (er_layer_out){W, H, values, nodata, -9999.0, NULL, "{\"erode\":\"test\",\"recipe\":{}}"};
}

static const char *in_dir(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}

START_TEST(float32_exact)
{
    char p[1200];
    er_layer_out l = layer(1000.0f);
    er_error err = {0};
    ck_assert_int_eq(er_exr_write(in_dir(p, sizeof p, "a.exr"), &l, 0, &err), ER_OK);
    exr_back b = read_exr(p);
    ck_assert_int_eq(b.width, W);
    ck_assert_int_eq(b.height, H);
    ck_assert_int_eq(b.is_half, 0);
    for (int i = 0; i < W * H; i++) {
        if (nodata[i])
            ck_assert_msg(isnan(b.v[i]), "cell %d: nodata read as %g", i, b.v[i]);
        else
            ck_assert_msg(memcmp(&b.v[i], &values[i], 4) == 0, "cell %d: %.9g != %.9g", i, b.v[i], values[i]);
    }
    ck_assert_str_eq(b.prov, l.provenance);
    back_free(&b);
}
END_TEST

/* Round to nearest gives an error of at most half a unit in the last
 * place: 2^-11 relative for normal halves (11-bit significand), 2^-25
 * absolute below 2^-14 where halves are subnormal. */
START_TEST(half_within_rounding)
{
    char p[1200];
    er_layer_out l = layer(1.0f);
    er_error err = {0};
    ck_assert_int_eq(er_exr_write(in_dir(p, sizeof p, "h.exr"), &l, 1, &err), ER_OK);
    exr_back b = read_exr(p);
    ck_assert_int_eq(b.is_half, 1);
    for (int i = 0; i < W * H; i++) {
        if (nodata[i]) {
            ck_assert(isnan(b.v[i]));
            continue;
        }
        double tol = fmax(fabs((double)values[i]) * ldexp(1, -11), ldexp(1, -25));
        ck_assert_msg(fabs((double)b.v[i] - values[i]) <= tol, "cell %d: %.9g vs %.9g", i, b.v[i], values[i]);
    }
    back_free(&b);
}
END_TEST

/* The half nearest to v by the definition, ties to the even pattern:
 * positive finite halves 0x0000..0x7bff grow with their bit pattern, so
 * the two around |v| are found by bisection. */
static uint16_t nearest_half(float v)
{
    double a = fabs((double)v);
    uint16_t lo = 0, hi = 0x7bff;
    while (hi - lo > 1) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if ((double)half_value(mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dl = a - (double)half_value(lo), dh = (double)half_value(hi) - a;
    uint16_t h = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
    if (a >= (double)half_value(0x7bff))
        h = 0x7bff;
    return (uint16_t)(h | (signbit(v) ? 0x8000 : 0));
}

/* Every value class half writes: signed zeros, float subnormals, values
 * below, at and just above 2^-25 (the last that rounds to zero), half's
 * subnormals and its ties, the normal range binade by binade with ties,
 * up to +-65504.  Each stored pattern must be the nearest half (ties to
 * even), within the bound erode(1) states: 2^-11 of the value for normal
 * halves, 2^-25 below 2^-14, and a signed zero at 2^-25 and under. */
START_TEST(half_every_value_class)
{
    enum { N = 64 * 48 };
    static float v[N];
    static const float fixed[] = {
        0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, 0x1p-26f, 0x1p-25f, -0x1p-25f, 0x1.000002p-25f,
        0x1.8p-25f, 0x1p-24f, 0x1.8p-24f, 0x1.4p-23f, 0x1.ff8p-15f, 0x1.ffcp-15f, 0x1p-14f, -0x1p-14f,
        0x1.002p-14f, 0x1.001p-14f, 1.0f, 0x1.002p0f, 0x1.006p0f, 0x1.001p0f, 0x1.003p0f, 2048.0f, 2049.0f,
        2051.0f, 65504.0f, -65504.0f, 65503.0f, 32768.5f, 65487.0f, 3.0e-8f, -3.0e-8f};
    int n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        v[n++] = fixed[i];
    /* random significands in every binade from 2^-30 to 2^15, both signs */
    while (n < N) {
        uint64_t r = mix((uint64_t)n * 31 + 5);
        int e = (int)(r % 46) - 30;
        float m = 1.0f + (float)((r >> 8) & 0xffffff) / 16777216.0f;
        float x = ldexpf(m, e);
        v[n++] = (r >> 40) & 1 ? -fminf(x, 65504.0f) : fminf(x, 65504.0f);
    }
    er_layer_out l = {64, N / 64, v, NULL, 0, NULL, NULL};
    er_error err = {0};
    char p[1200];
    ck_assert_int_eq(er_exr_write(in_dir(p, sizeof p, "classes.exr"), &l, 1, &err), ER_OK);
    exr_back b = read_exr(p);
    for (int i = 0; i < N; i++) {
        double x = (double)v[i], got = (double)b.v[i];
        ck_assert_msg(b.bits[i] == nearest_half(v[i]), "%a: stored 0x%04x, nearest 0x%04x", x, b.bits[i],
                      nearest_half(v[i]));
        ck_assert_msg(fabs(got - x) <= fmax(fabs(x) * 0x1p-11, 0x1p-25), "%a: %a beyond the bound", x, got);
        if (fabs(x) <= 0x1p-25)
            ck_assert_msg(got == 0 && signbit(got) == signbit(x), "%a: %a is not a signed zero", x, got);
    }
    back_free(&b);
}
END_TEST

/* The rule: |v| <= 65504 (the largest half) is written, anything beyond
 * is refused and nothing is left behind. */
START_TEST(half_range_rule)
{
    static const float edge[] = {65504.0f, -65504.0f, 65504.0f, 1.0f};
    static const float beyond[] = {65504.0f, 65504.01f, 1.0f, 1.0f};
    static const float inf[] = {0.0f, 0.0f, INFINITY, 0.0f};
    char p[1200];
    er_error err = {0};
    er_layer_out l = {2, 2, edge, NULL, 0, NULL, NULL};
    ck_assert_int_eq(er_exr_write(in_dir(p, sizeof p, "edge.exr"), &l, 1, &err), ER_OK);
    exr_back b = read_exr(p);
    ck_assert(b.v[0] == 65504.0f && b.v[1] == -65504.0f);
    ck_assert_ptr_null(b.prov);
    back_free(&b);
    unlink(p);
    l.data = beyond;
    ck_assert_int_eq(er_exr_write(in_dir(p, sizeof p, "beyond.exr"), &l, 1, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "cell (1, 0)"));
    ck_assert_ptr_nonnull(strstr(err.msg, "65504"));
    l.data = inf;
    ck_assert_int_eq(er_exr_write(p, &l, 1, &err), ER_EINVAL);
    ck_assert_int_eq(dir_entries(dir), 0);
    /* float32 holds them */
    ck_assert_int_eq(er_exr_write(p, &l, 0, &err), ER_OK);
}
END_TEST

/* Every cell of b equal to want bit for bit, nodata cells NaN. */
static void assert_bits(const exr_back *b, const float *want, const uint8_t *nd, int n)
{
    for (int i = 0; i < n; i++) {
        if (nd && nd[i])
            ck_assert_msg(isnan(b->v[i]), "cell %d (row %d): nodata read as %g", i, i / b->width, b->v[i]);
        else
            ck_assert_msg(memcmp(&b->v[i], &want[i], 4) == 0, "cell %d (row %d): %.9g != %.9g", i,
                          i / b->width, b->v[i], want[i]);
    }
}

/* 53 x 87: five 16-row blocks and a 7-row one; the even blocks and the
 * last are random bits (no compression shrinks them: stored raw), the odd
 * ones smooth (compressed).  Every block read back by OpenEXRCore's
 * decoder, every bit compared. */
START_TEST(incompressible_blocks_exact)
{
    enum { RW = 53, RH = 87 };
    static float v[RW * RH];
    static uint8_t nd[RW * RH];
    for (int i = 0; i < RW * RH; i++) {
        int block = i / RW / 16;
        v[i] = block % 2 == 0 || block == RH / 16 ? random_finite((uint64_t)i) : 100.0f + 0.25f * (float)(i % RW);
        nd[i] = i % 211 == 17;
    }
    er_layer_out l = {RW, RH, v, nd, 0, NULL, NULL};
    er_error err = {0};
    char p[1200];
    ck_assert_int_eq(er_exr_write(in_dir(p, sizeof p, "rand.exr"), &l, 0, &err), ER_OK);
    exr_back b = read_exr(p);
    ck_assert_int_eq(b.chunks, 6);
    ck_assert_int_eq(b.raw_chunks, 4);
    assert_bits(&b, v, nd, RW * RH);
    back_free(&b);
}
END_TEST

/* Random 16-bit patterns keyed by key (any exponent but all ones), rows
 * 16..31 all `flat`, widened to float: a w x h layer that half holds
 * exactly, the patterns in want. */
static void random_halves(float *v, uint16_t *want, int w, int h, uint64_t key, uint16_t flat)
{
    for (int i = 0; i < w * h; i++) {
        uint16_t x = (uint16_t)mix((uint64_t)i + key);
        if ((x & 0x7c00) == 0x7c00)
            x ^= 0x4000;
        want[i] = i / w / 16 == 1 ? flat : x;
        v[i] = half_value(want[i]);
    }
}

/* The same with half: every stored pattern must be the one drawn, with
 * ZIP (_i 0) and with PXR24 (_i 1), which rounds float32 only and so is
 * taken for halves alone. */
START_TEST(incompressible_half_exact)
{
    enum { RW = 41, RH = 50 };
    static float v[RW * RH];
    static uint16_t want[RW * RH];
    random_halves(v, want, RW, RH, _i ? 901 : 77, _i ? 0x4200 : 0x3c00);
    er_layer_out l = {RW, RH, v, NULL, 0, NULL, NULL};
    er_exr_create co = {1, _i ? ER_EXR_PXR24 : ER_EXR_ZIP, {0, 0.0f}};
    er_error err = {0};
    char p[1200];
    ck_assert_int_eq(er_exr_write_co(in_dir(p, sizeof p, "rand-h.exr"), &l, &co, &err), ER_OK);
    exr_back b = read_exr(p);
    ck_assert_int_eq(b.compression, _i ? EXR_COMPRESSION_PXR24 : EXR_COMPRESSION_ZIP);
    ck_assert_int_eq(b.chunks, 4);
    if (!_i)
        ck_assert_int_eq(b.raw_chunks, 3);
    for (int i = 0; i < RW * RH; i++)
        ck_assert_msg(b.bits[i] == want[i], "cell %d: 0x%04x != 0x%04x", i, b.bits[i], want[i]);
    back_free(&b);
    if (_i) {
        co.half = 0;
        ck_assert_int_eq(er_exr_write_co(p, &l, &co, &err), ER_EINVAL);
    }
}
END_TEST

/* The size of the zlib stream of OpenEXR's ZIP block (the format's
 * definition: the even bytes then the odd ones, each replaced by its
 * difference from the one before plus 128, then zlib at the library's
 * default level, with the zlib OpenEXRCore 3.1 links). */
static size_t zip_stream_size(const void *block, size_t n, int level)
{
    const uint8_t *raw = block;
    uint8_t *t = malloc(n);
    uLongf zn = compressBound((uLong)n);
    Bytef *z = malloc(zn);
    ck_assert(t && z);
    size_t half = (n + 1) / 2;
    for (size_t i = 0; i < n; i++)
        t[i % 2 ? half + i / 2 : i / 2] = raw[i];
    for (size_t i = n - 1; i > 0; i--)
        t[i] = (uint8_t)(t[i] - t[i - 1] + 128);
    ck_assert_int_eq(compress2(z, &zn, t, (uLong)n, level), Z_OK);
    free(t);
    free(z);
    return zn;
}

/* Fills blk (n floats) with k random cells then a constant, for the first
 * (seed, k) whose ZIP stream is exactly n * 4 bytes: the stream shrinks
 * as k falls and crosses the block's length near k = n, so each seed
 * scans down to the crossing.  Returns 0 when no seed gives one. */
static int block_as_long_as_its_stream(float *blk, int n, int level)
{
    for (uint64_t seed = 1; seed <= 2000; seed++) {
        for (int k = n; k > 0; k--) {
            for (int i = 0; i < n; i++)
                blk[i] = i < k ? random_finite(seed << 32 | (uint64_t)i) : 1.0f;
            size_t z = zip_stream_size(blk, (size_t)n * 4, level);
            if (z == (size_t)n * 4)
                return 1;
            if (z < (size_t)n * 4)
                break;
        }
    }
    return 0;
}

/* The case that broke files: a block whose zlib stream is exactly as long
 * as the block.  OpenEXR stored the stream, and every reader, seeing
 * packed size = unpacked size, decoded the stream's bytes as pixels (+-3e38
 * and NaNs in 16 rows).  The block, the second of three after a
 * compressed one, must be stored raw and read back bit for bit. */
START_TEST(zip_stream_as_long_as_block)
{
    enum { RW = 64, RH = 40 };
    static float v[RW * RH];
    int level;
    exr_get_default_zip_compression_level(&level);
    ck_assert_msg(block_as_long_as_its_stream(v + RW * 16, RW * 16, level), "no block found");
    for (int i = 0; i < RW * RH; i++) {
        if (i < RW * 16)
            v[i] = 7.0f + 0.5f * (float)(i % RW);
        else if (i >= RW * 32)
            v[i] = random_finite((uint64_t)i);
    }
    er_layer_out l = {RW, RH, v, NULL, 0, NULL, NULL};
    er_error err = {0};
    char p[1200];
    ck_assert_int_eq(er_exr_write(in_dir(p, sizeof p, "edge.exr"), &l, 0, &err), ER_OK);
    exr_back b = read_exr(p);
    ck_assert_int_eq(b.chunks, 3);
    ck_assert_int_eq(b.raw_chunks, 2);
    assert_bits(&b, v, NULL, RW * RH);
    back_free(&b);
}
END_TEST

static void *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    void *b = malloc(*n);
    ck_assert_uint_eq(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

START_TEST(deterministic_bytes)
{
    char p[1200], q[1200];
    er_layer_out l = layer(3.0f);
    er_error err = {0};
    ck_assert_int_eq(er_exr_write(in_dir(p, sizeof p, "1.exr"), &l, _i, &err), ER_OK);
    ck_assert_int_eq(er_exr_write(in_dir(q, sizeof q, "2.exr"), &l, _i, &err), ER_OK);
    size_t na, nb;
    void *a = slurp(p, &na), *b = slurp(q, &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert(memcmp(a, b, na) == 0);
    free(a);
    free(b);
}
END_TEST

START_TEST(missing_dir)
{
    char p[1200];
    er_layer_out l = layer(1.0f);
    er_error err = {0};
    ck_assert_int_ne(er_exr_write(in_dir(p, sizeof p, "no/such.exr"), &l, 0, &err), ER_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "no/such.exr"));
}
END_TEST

/* --co COMPRESS: each lossless codec is the header's, and every bit of a
 * layer of random blocks (stored raw) and smooth ones (compressed) reads
 * back through OpenEXRCore's decoder.  _i: the er_exr_compress. */
START_TEST(codecs_exact)
{
    static const exr_compression_t want[] = {EXR_COMPRESSION_ZIP, EXR_COMPRESSION_NONE, EXR_COMPRESSION_RLE,
                                             EXR_COMPRESSION_ZIPS, EXR_COMPRESSION_PIZ};
    enum { RW = 61, RH = 83 };
    static float v[RW * RH];
    static uint8_t nd[RW * RH];
    for (int i = 0; i < RW * RH; i++) {
        int block = i / RW / 16;
        v[i] = block % 2 == 0 ? random_finite((uint64_t)i + 5) : 300.0f - 0.125f * (float)(i % RW);
        nd[i] = i % 173 == 11;
    }
    er_layer_out l = {RW, RH, v, nd, 0, NULL, NULL};
    er_exr_create co = {0, (er_exr_compress)_i, {0, 0.0f}};
    er_error err = {0};
    char p[1200];
    ck_assert_int_eq(er_exr_write_co(in_dir(p, sizeof p, "c.exr"), &l, &co, &err), ER_OK);
    exr_back b = read_exr(p);
    ck_assert_int_eq(b.compression, want[_i]);
    assert_bits(&b, v, nd, RW * RH);
    back_free(&b);
}
END_TEST

/* The codec names: OpenEXR's lossless ones in any case; GeoTIFF's, the
 * lossy ones and PXR24 on float32 refused with a reason naming the EXR
 * codecs. */
START_TEST(codec_names)
{
    static const struct { const char *name; int half, ok; er_exr_compress c; } k[] = {
        {"zip", 0, 1, ER_EXR_ZIP}, {"NONE", 0, 1, ER_EXR_NONE}, {"Rle", 0, 1, ER_EXR_RLE},
        {"ZIPS", 1, 1, ER_EXR_ZIPS}, {"PIZ", 0, 1, ER_EXR_PIZ}, {"PXR24", 1, 1, ER_EXR_PXR24},
        {"PXR24", 0, 0, 0}, {"LZW", 0, 0, 0}, {"ZSTD", 0, 0, 0}, {"DEFLATE", 1, 0, 0}, {"B44", 1, 0, 0},
        {"B44A", 0, 0, 0}, {"DWAA", 1, 0, 0}, {"DWAB", 0, 0, 0}, {"", 0, 0, 0}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        er_exr_compress c = ER_EXR_ZIP;
        const char *why = NULL;
        ck_assert_int_eq(er_exr_compress_parse(k[i].name, k[i].half, &c, &why), k[i].ok);
        if (k[i].ok) {
            ck_assert_int_eq(c, k[i].c);
            ck_assert_int_eq(strcasecmp(er_exr_compress_name(c), k[i].name), 0);
        } else {
            ck_assert_msg(why && strstr(why, "ZIP, NONE, RLE, ZIPS"), "%s: %s", k[i].name, why ? why : "no reason");
        }
    }
}
END_TEST

/* --co NODATA_FILL: nodata cells (masked, or NaN) hold the fill, the
 * others their exact values; in half the fill's half. */
START_TEST(nodata_fill)
{
    char p[1200];
    er_layer_out l = layer(_i ? 1.0f : 10.0f); /* within half's range */
    values[3] = NAN;
    er_error err = {0};
    er_exr_create co = {_i, ER_EXR_ZIP, {1, -7.25f}};
    ck_assert_int_eq(er_exr_write_co(in_dir(p, sizeof p, "f.exr"), &l, &co, &err), ER_OK);
    exr_back b = read_exr(p);
    int filled = 0;
    for (int i = 0; i < W * H; i++) {
        if (nodata[i] || i == 3) {
            ck_assert_msg(b.v[i] == -7.25f, "cell %d: %g, want the fill", i, b.v[i]);
            filled++;
        } else if (!_i) {
            ck_assert_msg(memcmp(&b.v[i], &values[i], 4) == 0, "cell %d: %.9g != %.9g", i, b.v[i], values[i]);
        }
    }
    ck_assert_int_gt(filled, 2);
    back_free(&b);
}
END_TEST

Suite *exr_suite(void);
Suite *exr_suite(void)
{
    Suite *s = suite_create("exr");
    TCase *t = tcase_create("write");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, float32_exact);
    tcase_add_test(t, half_within_rounding);
    tcase_add_test(t, half_every_value_class);
    tcase_add_test(t, half_range_rule);
    tcase_add_loop_test(t, deterministic_bytes, 0, 2);
    tcase_add_test(t, missing_dir);
    tcase_add_test(t, incompressible_blocks_exact);
    tcase_add_loop_test(t, incompressible_half_exact, 0, 2);
    tcase_add_test(t, zip_stream_as_long_as_block);
    tcase_add_loop_test(t, codecs_exact, ER_EXR_ZIP, ER_EXR_PIZ + 1);
    tcase_add_test(t, codec_names);
    tcase_add_loop_test(t, nodata_fill, 0, 2);
    suite_add_tcase(s, t);
    return s;
}
