/*
 * GeoTIFF reader and writer.  Fixtures are written at run time with libtiff
 * itself into a scratch directory, one per layout the reader must handle;
 * the real DEMs (er_test_shared_dem) are checked against their known facts
 * and, where gdalinfo is installed, the written files against GDAL.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <dirent.h>
#include <tiffio.h>
#include <unistd.h>

#include "../../core/bits.h"
#include "../../core/parallel.h"
#include "../../core/rng.h"
#include "../../io/image.h"
#include "../../io/tiff_common.h"
#include "test_util.h"

static char dir[PATH_MAX];

static void setup(void)
{
    er_test_mkdtemp(dir, sizeof dir);
    er_tiff_register_tags();
    TIFFSetWarningHandler(NULL); /* the fixture writer's own, e.g. on legacy Deflate */
}

static void teardown(void)
{
    er_test_rmdir(dir);
}

static const char *in_dir(char *buf, size_t n, const char *name)
{
    int r = snprintf(buf, n, "%s/%s", dir, name);
    ck_assert(r > 0 && (size_t)r < n);
    return buf;
}

/* ---- fixtures ---------------------------------------------------------- */

typedef struct fixture {
    uint32_t width, height;
    uint16_t spp, bits, format, planar;
    uint32_t tile_w, tile_h;   /* 0 = stripped */
    uint32_t rps;              /* rows per strip when stripped */
    uint16_t compression, predictor;
    const char *mode;          /* TIFFOpen mode: byte order, BigTIFF */
    const char *nodata;        /* GDAL_NODATA or NULL */
    int georef;                /* write the sample georeferencing */
    int ifd_first;             /* directory before the data (as GDAL writes) */
    const uint8_t *written;    /* tiles/strips to write (NULL = all) */
} fixture;

typedef double (*value_fn)(const fixture *f, uint32_t x, uint32_t y, unsigned s);

/* Values covering each type's extremes and ordinary values in between. */
static double pattern_value(const fixture *f, uint32_t x, uint32_t y, unsigned s)
{
    uint64_t i = ((uint64_t)y * f->width + x) * f->spp + s;
    unsigned k = (unsigned)(i % 7);
    int is_signed = f->format == SAMPLEFORMAT_INT;
    if (f->format == SAMPLEFORMAT_IEEEFP && f->bits == 32) {
        static const double v[7] = {FLT_MAX, -FLT_MAX, FLT_MIN, 1.401298464324817e-45, -0.0, 0.0, 0.0};
        return k < 5 ? v[k] : (double)(float)((double)i * 0.37 - 100.0);
    }
    if (f->format == SAMPLEFORMAT_IEEEFP) {
        static const double v[7] = {1e30, -1e30, 0.1, 1.0 / 3.0, -123456.789, FLT_MAX, 0.0};
        return k < 6 ? v[k] : (double)i * 1.1 - 50.0;
    }
    if (f->bits > 32)
        return (double)k;
    double lo = is_signed ? -ldexp(1.0, f->bits - 1) : 0.0;
    double hi = is_signed ? ldexp(1.0, f->bits - 1) - 1.0 : ldexp(1.0, f->bits) - 1.0;
    if (k == 0)
        return lo;
    if (k == 1)
        return hi;
    return lo + (double)((i * 2654435761u + s) % (uint64_t)(hi - lo + 1.0));
}

/* Stores v in the fixture's sample type; types the reader refuses (float16,
 * complex) stay zero. */
static void store(unsigned char *p, const fixture *f, double v)
{
    if (f->format == SAMPLEFORMAT_IEEEFP) {
        if (f->bits == 32) {
            float x = (float)v;
            memcpy(p, &x, 4);
        } else if (f->bits == 64) {
            memcpy(p, &v, 8);
        }
        return;
    }
    if (f->format != SAMPLEFORMAT_INT && f->format != SAMPLEFORMAT_UINT && f->format != SAMPLEFORMAT_VOID)
        return;
    if (f->format == SAMPLEFORMAT_INT) {
        int64_t x = (int64_t)v;
        if (f->bits == 8) { int8_t t = (int8_t)x; memcpy(p, &t, 1); }
        else if (f->bits == 16) { int16_t t = (int16_t)x; memcpy(p, &t, 2); }
        else if (f->bits == 32) { int32_t t = (int32_t)x; memcpy(p, &t, 4); }
        else { memcpy(p, &x, 8); }
        return;
    }
    uint64_t x = (uint64_t)v;
    if (f->bits == 8) { uint8_t t = (uint8_t)x; memcpy(p, &t, 1); }
    else if (f->bits == 16) { uint16_t t = (uint16_t)x; memcpy(p, &t, 2); }
    else if (f->bits == 32) { uint32_t t = (uint32_t)x; memcpy(p, &t, 4); }
    else { memcpy(p, &x, 8); }
}

static double sample_scale[3] = {30.0, 30.0, 0.0};
static double sample_tiepoint[6] = {0, 0, 0, 500000.0, 4100000.0, 0};
static uint16_t sample_geokeys[] = {1, 1, 0, 4, 1024, 0, 1, 1, 1025, 0, 1, 1, 1026, 34737, 12, 0,
                                          3072, 0, 1, 32633};
static double sample_geodoubles[2] = {6378137.0, 298.257223563};
static char sample_geoascii[] = "WGS 84 / UTM zone 33N|";
static char sample_metadata[] = "<GDALMetadata>\n  <Item name=\"X\">1</Item>\n</GDALMetadata>\n";

static void set_fixture_tags(TIFF *tif, const fixture *f)
{
    ck_assert(TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, f->width));
    ck_assert(TIFFSetField(tif, TIFFTAG_IMAGELENGTH, f->height));
    ck_assert(TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, f->spp));
    ck_assert(TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, f->bits));
    ck_assert(TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, f->format));
    ck_assert(TIFFSetField(tif, TIFFTAG_PLANARCONFIG, f->planar ? f->planar : PLANARCONFIG_CONTIG));
    ck_assert(TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK));
    ck_assert(TIFFSetField(tif, TIFFTAG_COMPRESSION, f->compression ? f->compression : COMPRESSION_NONE));
    if (f->predictor)
        ck_assert(TIFFSetField(tif, TIFFTAG_PREDICTOR, f->predictor));
    if (f->tile_w) {
        ck_assert(TIFFSetField(tif, TIFFTAG_TILEWIDTH, f->tile_w));
        ck_assert(TIFFSetField(tif, TIFFTAG_TILELENGTH, f->tile_h));
    } else {
        ck_assert(TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, f->rps ? f->rps : f->height));
    }
    if (f->nodata)
        ck_assert(TIFFSetField(tif, ER_TAG_GDAL_NODATA, f->nodata));
    if (f->georef) {
        ck_assert(TIFFSetField(tif, ER_TAG_PIXEL_SCALE, (uint32_t)3, sample_scale));
        ck_assert(TIFFSetField(tif, ER_TAG_TIEPOINT, (uint32_t)6, sample_tiepoint));
        ck_assert(TIFFSetField(tif, ER_TAG_GEOKEYS,
                               (uint32_t)(sizeof sample_geokeys / sizeof sample_geokeys[0]), sample_geokeys));
        ck_assert(TIFFSetField(tif, ER_TAG_GEODOUBLES, (uint32_t)2, sample_geodoubles));
        ck_assert(TIFFSetField(tif, ER_TAG_GEOASCII, sample_geoascii));
        ck_assert(TIFFSetField(tif, ER_TAG_GDAL_METADATA, sample_metadata));
    }
}

static void write_fixture(const char *path, const fixture *f, value_fn value);

/* libtiff 4.5.0 on a little-endian host byte-swaps big-endian samples
 * *before* the floating-point predictor, so its big-endian predictor-3
 * files decode (by TIFF TN3, and by libtiff and GDAL) to swapped garbage.
 * TN3's byte planes are the same in either byte order, so a correct
 * big-endian file carries the very compressed blocks of the little-endian
 * one: write that, then copy its raw blocks under a big-endian header. */
static void write_big_endian_fp_predictor(const char *path, const fixture *f, value_fn value)
{
    char le_path[PATH_MAX + 8];
    fixture le = *f;
    le.mode = strchr(f->mode, '8') ? "w8l" : "wl";
    snprintf(le_path, sizeof le_path, "%s.le", path);
    write_fixture(le_path, &le, value);
    TIFF *src = TIFFOpen(le_path, "r"), *dst = TIFFOpen(path, f->mode);
    ck_assert(src && dst);
    set_fixture_tags(dst, f);
    ck_assert(TIFFWriteCheck(dst, f->tile_w != 0, "fixture"));
    uint32_t n = f->tile_w ? TIFFNumberOfTiles(src) : TIFFNumberOfStrips(src);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t size = TIFFGetStrileByteCount(src, i);
        if (size == 0)
            continue;
        unsigned char *buf = malloc((size_t)size);
        ck_assert_ptr_nonnull(buf);
        tmsize_t got = f->tile_w ? TIFFReadRawTile(src, i, buf, (tmsize_t)size)
                                 : TIFFReadRawStrip(src, i, buf, (tmsize_t)size);
        ck_assert_int_eq(got, (tmsize_t)size);
        tmsize_t put = f->tile_w ? TIFFWriteRawTile(dst, i, buf, got) : TIFFWriteRawStrip(dst, i, buf, got);
        ck_assert_int_eq(put, got);
        free(buf);
    }
    TIFFClose(src);
    TIFFClose(dst);
    unlink(le_path);
}

/* Writes the fixture with libtiff.  Sub-byte samples are written as zero
 * bytes (enough for the reader to refuse them). */
static void write_fixture(const char *path, const fixture *f, value_fn value)
{
    if (f->predictor == PREDICTOR_FLOATINGPOINT && f->mode && strchr(f->mode, 'b')) {
        write_big_endian_fp_predictor(path, f, value);
        return;
    }
    TIFF *tif = TIFFOpen(path, f->mode ? f->mode : "w");
    ck_assert_ptr_nonnull(tif);
    set_fixture_tags(tif, f);
    if (f->written) /* sets up the block tables so unwritten ones read as sparse */
        ck_assert(TIFFWriteCheck(tif, f->tile_w != 0, "fixture"));
    if (f->ifd_first) {
        ck_assert(TIFFDeferStrileArrayWriting(tif));
        ck_assert(TIFFWriteCheck(tif, f->tile_w != 0, "fixture"));
        ck_assert(TIFFWriteDirectory(tif));
        ck_assert(TIFFSetDirectory(tif, 0));
    }

    int separate = f->planar == PLANARCONFIG_SEPARATE;
    unsigned planes = separate ? f->spp : 1, per_pixel = separate ? 1 : f->spp;
    size_t sample_bits = f->bits;
    uint32_t bw = f->tile_w ? f->tile_w : f->width;
    uint32_t bh = f->tile_w ? f->tile_h : (f->rps ? f->rps : f->height);
    size_t row_bytes = (bw * per_pixel * sample_bits + 7) / 8;
    unsigned char *buf = calloc(row_bytes * bh, 1);
    ck_assert_ptr_nonnull(buf);
    for (unsigned plane = 0; plane < planes; plane++) {
        for (uint32_t y0 = 0; y0 < f->height; y0 += bh) {
            for (uint32_t x0 = 0; x0 < f->width; x0 += bw) {
                uint32_t index = f->tile_w ? TIFFComputeTile(tif, x0, y0, 0, (uint16_t)plane)
                                           : TIFFComputeStrip(tif, y0, (uint16_t)plane);
                if (f->written && !f->written[index])
                    continue;
                uint32_t rows = f->tile_w ? bh : (f->height - y0 < bh ? f->height - y0 : bh);
                memset(buf, 0, row_bytes * bh);
                for (uint32_t y = 0; y < rows && y0 + y < f->height; y++)
                    for (uint32_t x = 0; x < bw && x0 + x < f->width; x++)
                        for (unsigned s = 0; s < per_pixel; s++) {
                            unsigned sample = separate ? plane : s;
                            double v = value(f, x0 + x, y0 + y, sample);
                            if (sample_bits >= 8)
                                store(buf + y * row_bytes + (x * per_pixel + s) * (sample_bits / 8), f, v);
                        }
                tmsize_t size = (tmsize_t)(row_bytes * rows);
                tmsize_t n = f->tile_w ? TIFFWriteEncodedTile(tif, index, buf, size)
                                       : TIFFWriteEncodedStrip(tif, index, buf, size);
                ck_assert_int_eq(n, size);
            }
        }
    }
    free(buf);
    if (f->ifd_first)
        ck_assert(TIFFForceStrileArrayWriting(tif));
    TIFFClose(tif);
}

static size_t file_size(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (size_t)st.st_size;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    *n = file_size(path);
    unsigned char *b = malloc(*n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, *n, fp), *n);
    fclose(fp);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(b, 1, n, fp), n);
    ck_assert_int_eq(fclose(fp), 0);
}

static int same_float(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* ---- reader: every layout -------------------------------------------- */

typedef struct layout_case {
    const char *name;
    fixture f;
    int band;
} layout_case;

#define LE "wl"
#define BE "wb"
static const layout_case layouts[] = {
    {"u8 strips none LE", {67, 45, 1, 8, SAMPLEFORMAT_UINT, 0, 0, 0, 8, COMPRESSION_NONE, 0, LE, 0, 0, 0, 0}, 0},
    {"i8 tiles lzw BE", {67, 45, 1, 8, SAMPLEFORMAT_INT, 0, 16, 16, 0, COMPRESSION_LZW, 0, BE, 0, 0, 0, 0}, 0},
    {"u16 strips deflate pred2 BE",
     {67, 45, 1, 16, SAMPLEFORMAT_UINT, 0, 0, 0, 7, COMPRESSION_ADOBE_DEFLATE, 2, BE, 0, 0, 0, 0}, 0},
    {"i16 tiles packbits LE", {67, 45, 1, 16, SAMPLEFORMAT_INT, 0, 32, 16, 0, COMPRESSION_PACKBITS, 0, LE, 0, 0, 0, 0},
     0},
    {"u32 strips lzw pred2 LE", {67, 45, 1, 32, SAMPLEFORMAT_UINT, 0, 0, 0, 10, COMPRESSION_LZW, 2, LE, 0, 0, 0, 0},
     0},
    {"i32 tiles deflate pred2 BE",
     {67, 45, 1, 32, SAMPLEFORMAT_INT, 0, 16, 32, 0, COMPRESSION_ADOBE_DEFLATE, 2, BE, 0, 0, 0, 0}, 0},
    {"f32 strips deflate pred3 LE",
     {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 0, 0, 16, COMPRESSION_ADOBE_DEFLATE, 3, LE, 0, 0, 0, 0}, 0},
    {"f32 tiles lzw pred3 BE", {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 16, 16, 0, COMPRESSION_LZW, 3, BE, 0, 0, 0, 0},
     0},
    {"f64 strips none BE", {67, 45, 1, 64, SAMPLEFORMAT_IEEEFP, 0, 0, 0, 5, COMPRESSION_NONE, 0, BE, 0, 0, 0, 0}, 0},
    {"f64 tiles deflate pred3 LE",
     {67, 45, 1, 64, SAMPLEFORMAT_IEEEFP, 0, 32, 32, 0, COMPRESSION_ADOBE_DEFLATE, 3, LE, 0, 0, 0, 0}, 0},
    {"u16 tiles zstd pred2", {67, 45, 1, 16, SAMPLEFORMAT_UINT, 0, 16, 16, 0, COMPRESSION_ZSTD, 2, LE, 0, 0, 0, 0}, 0},
    {"f32 strips lzma pred3", {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 0, 0, 9, COMPRESSION_LZMA, 3, BE, 0, 0, 0, 0},
     0},
    {"i16 bigtiff tiles deflate BE",
     {67, 45, 1, 16, SAMPLEFORMAT_INT, 0, 16, 16, 0, COMPRESSION_ADOBE_DEFLATE, 0, "w8b", 0, 0, 0, 0}, 0},
    {"f32 bigtiff strips none LE",
     {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 0, 0, 45, COMPRESSION_NONE, 0, "w8l", 0, 0, 0, 0}, 0},
    {"u8 separate planes band 2 tiles",
     {67, 45, 2, 8, SAMPLEFORMAT_UINT, PLANARCONFIG_SEPARATE, 16, 16, 0, COMPRESSION_LZW, 0, LE, 0, 0, 0, 0}, 2},
    {"i16 contig band 3 of 3 strips lzw pred2",
     {67, 45, 3, 16, SAMPLEFORMAT_INT, PLANARCONFIG_CONTIG, 0, 0, 4, COMPRESSION_LZW, 2, BE, 0, 0, 0, 0}, 3},
    {"f32 separate band 1 of 3 strips deflate pred3",
     {67, 45, 3, 32, SAMPLEFORMAT_IEEEFP, PLANARCONFIG_SEPARATE, 0, 0, 8, COMPRESSION_ADOBE_DEFLATE, 3, LE, 0, 0, 0,
      0},
     1},
    {"f64 contig band 2 of 2 tiles none",
     {67, 45, 2, 64, SAMPLEFORMAT_IEEEFP, PLANARCONFIG_CONTIG, 16, 16, 0, COMPRESSION_NONE, 0, BE, 0, 0, 0, 0}, 2},
    {"u16 one row per strip", {67, 45, 1, 16, SAMPLEFORMAT_UINT, 0, 0, 0, 1, COMPRESSION_NONE, 0, LE, 0, 0, 0, 0}, 0},
    {"i32 one big strip (chopped)",
     {300, 200, 1, 32, SAMPLEFORMAT_INT, 0, 0, 0, 0, COMPRESSION_NONE, 0, LE, 0, 0, 0, 0}, 0},
    {"void u8 strips", {67, 45, 1, 8, SAMPLEFORMAT_VOID, 0, 0, 0, 8, COMPRESSION_NONE, 0, LE, 0, 0, 0, 0}, 0},
    {"u16 old-style deflate", {67, 45, 1, 16, SAMPLEFORMAT_UINT, 0, 0, 0, 8, COMPRESSION_DEFLATE, 0, LE, 0, 0, 0, 0},
     0},
    {"f32 directory first, tiles deflate",
     {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 16, 16, 0, COMPRESSION_ADOBE_DEFLATE, 3, LE, 0, 0, 1, 0}, 0},
    {"u8 1x1", {1, 1, 1, 8, SAMPLEFORMAT_UINT, 0, 0, 0, 1, COMPRESSION_NONE, 0, LE, 0, 0, 0, 0}, 0},
    /* libtiff-encoded float32 tiles that the reader decodes in parallel */
    {"f32 tiles deflate pred2 LE (parallel)",
     {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 16, 32, 0, COMPRESSION_ADOBE_DEFLATE, 2, LE, 0, 0, 0, 0}, 0},
    {"f32 tiles zstd pred3 LE (parallel)",
     {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 32, 16, 0, COMPRESSION_ZSTD, 3, LE, 0, 0, 0, 0}, 0},
    {"f32 tiles zstd LE (parallel)", {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 16, 16, 0, COMPRESSION_ZSTD, 0, LE, 0, 0, 0, 0},
     0},
    {"f32 tiles none LE (parallel)", {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 16, 16, 0, COMPRESSION_NONE, 0, LE, 0, 0, 0, 0},
     0},
    {"f32 strips zstd pred2 LE (parallel)",
     {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 0, 0, 7, COMPRESSION_ZSTD, 2, LE, 0, 0, 0, 0}, 0},
    {"f32 one-row strips deflate LE (parallel)",
     {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 0, 0, 1, COMPRESSION_ADOBE_DEFLATE, 0, LE, 0, 0, 0, 0}, 0},
    {"f32 tiles old-style deflate pred3 LE (parallel)",
     {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 16, 16, 0, COMPRESSION_DEFLATE, 3, LE, 0, 0, 0, 0}, 0},
};
#define N_LAYOUTS ((int)(sizeof layouts / sizeof layouts[0]))

/* Every cell reads back as the C conversion of the stored value to float
 * (exact for 8/16-bit integers and float32; 32-bit integers beyond 2^24
 * and float64 round to nearest), no cell is nodata, the size is right. */
START_TEST(reads_every_layout)
{
    const layout_case *c = &layouts[_i];
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    er_read_opts opts = {.band = c->band};
    ER_SKIP_IF(!TIFFIsCODECConfigured(c->f.compression), "codec not built into libtiff");
    in_dir(path, sizeof path, "layout.tif");
    write_fixture(path, &c->f, pattern_value);
    er_status st = er_tiff_read(path, &opts, &img, &err);
    ck_assert_msg(st == ER_OK, "%s: %s", c->name, err.msg);
    ck_assert_int_eq(img.width, (int)c->f.width);
    ck_assert_int_eq(img.height, (int)c->f.height);
    ck_assert_int_eq(img.format, ER_FORMAT_TIFF);
    ck_assert_ptr_null(img.nodata);
    ck_assert_int_eq(img.has_nodata_value, 0);
    unsigned sample = c->band > 0 ? (unsigned)c->band - 1 : 0;
    for (uint32_t y = 0; y < c->f.height; y++)
        for (uint32_t x = 0; x < c->f.width; x++) {
            float want = (float)pattern_value(&c->f, x, y, sample);
            float got = img.data[(size_t)y * c->f.width + x];
            ck_assert_msg(same_float(got, want), "%s: (%u,%u) got %.9g want %.9g", c->name, x, y, (double)got,
                          (double)want);
        }
    er_image_free(&img);
}
END_TEST

static double one_value(const fixture *f, uint32_t x, uint32_t y, unsigned s)
{
    (void)y;
    (void)s;
    static const double u32[] = {4294967295.0, 16777217.0, 0.0};
    static const double i32[] = {-2147483648.0, 2147483647.0, -16777217.0};
    static const double u16[] = {65535.0, 0.0, 1.0};
    static const double i16[] = {-32768.0, 32767.0, -1.0};
    static const double f64[] = {0.1, -3.4028235e+38, 1e-50};
    const double *t = f->bits == 32 ? (f->format == SAMPLEFORMAT_INT ? i32 : u32)
                    : f->bits == 16 ? (f->format == SAMPLEFORMAT_INT ? i16 : u16)
                                    : f64;
    return t[x % 3];
}

/* The documented conversions, spelled out. */
START_TEST(extreme_values_convert_as_documented)
{
    static const struct {
        uint16_t bits, format;
        float want[3];
    } cases[] = {
        {32, SAMPLEFORMAT_UINT, {4294967296.0f, 16777216.0f, 0.0f}},   /* nearest float; ties to even */
        {32, SAMPLEFORMAT_INT, {-2147483648.0f, 2147483648.0f, -16777216.0f}},
        {16, SAMPLEFORMAT_UINT, {65535.0f, 0.0f, 1.0f}},
        {16, SAMPLEFORMAT_INT, {-32768.0f, 32767.0f, -1.0f}},
        {64, SAMPLEFORMAT_IEEEFP, {0.1f, -FLT_MAX, 0.0f}},               /* less than half an ulp beyond -FLT_MAX */
    };
    char path[PATH_MAX];
    in_dir(path, sizeof path, "extremes.tif");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fixture f = {3, 1, 1, cases[k].bits, cases[k].format, 0, 0, 0, 1, 0, 0, "w", 0, 0, 0, 0};
        er_image img;
        er_error err = {{0}};
        write_fixture(path, &f, one_value);
        ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
        for (int x = 0; x < 3; x++)
            ck_assert_msg(same_float(img.data[x], cases[k].want[x]), "case %zu cell %d: %.9g", k, x,
                          (double)img.data[x]);
        ck_assert_ptr_null(img.nodata);
        er_image_free(&img);
    }
}
END_TEST

/* ---- reader: refusals ------------------------------------------------- */

START_TEST(multiband_needs_a_band)
{
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    fixture f = {20, 10, 3, 16, SAMPLEFORMAT_INT, PLANARCONFIG_CONTIG, 0, 0, 10, 0, 0, "w", 0, 0, 0, 0};
    in_dir(path, sizeof path, "rgb.tif");
    write_fixture(path, &f, pattern_value);

    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.msg, "3 bands"));
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    ck_assert_ptr_null(img.data);

    er_read_opts four = {.band = 4}, minus = {.band = -1}, two = {.band = 2};
    ck_assert_int_eq(er_tiff_read(path, &four, &img, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "band 4"));
    ck_assert_int_eq(er_tiff_read(path, &minus, &img, &err), ER_EINVAL);
    ck_assert_int_eq(er_tiff_read(path, &two, &img, &err), ER_OK);
    ck_assert(same_float(img.data[5], (float)pattern_value(&f, 5, 0, 1)));
    er_image_free(&img);
}
END_TEST

static const struct {
    uint16_t bits, format;
    const char *name;
} unsupported[] = {
    {1, SAMPLEFORMAT_UINT, "uint1"},           {4, SAMPLEFORMAT_UINT, "uint4"},
    {64, SAMPLEFORMAT_INT, "int64"},           {64, SAMPLEFORMAT_UINT, "uint64"},
    {16, SAMPLEFORMAT_IEEEFP, "float16"},      {32, SAMPLEFORMAT_COMPLEXINT, "complex int32"},
    {64, SAMPLEFORMAT_COMPLEXIEEEFP, "complex float64"},
};

START_TEST(unsupported_sample_types_refused)
{
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    fixture f = {16, 4, 1, unsupported[_i].bits, unsupported[_i].format, 0, 0, 0, 4, 0, 0, "w", 0, 0, 0, 0};
    in_dir(path, sizeof path, "odd.tif");
    write_fixture(path, &f, pattern_value);
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_EUNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "unsupported sample type") && strstr(err.msg, unsupported[_i].name), "%s",
                  err.msg);
    ck_assert_ptr_null(img.data);
}
END_TEST

static void assert_clean_failure(er_status st, const er_image *img, const er_error *err, const char *path)
{
    char prefix[PATH_MAX + 32];
    snprintf(prefix, sizeof prefix, "cannot read '%s': ", path);
    ck_assert_int_ne(st, ER_OK);
    ck_assert_ptr_null(img->data);
    ck_assert_ptr_null(img->nodata);
    ck_assert_ptr_null(img->georef.geokeys);
    ck_assert_msg(strncmp(err->msg, prefix, strlen(prefix)) == 0 && strlen(err->msg) > strlen(prefix), "%s",
                  err->msg);
    ck_assert_ptr_null(strchr(err->msg, '\n'));
}

/* Cut a file at many lengths: every cut is a clean error (run under ASan by
 * make SANITIZE=1).  One fixture has its directory at the end (libtiff's
 * habit), one at the start so the cuts land in the compressed data. */
START_TEST(truncated_files_fail_cleanly)
{
    char src[PATH_MAX], cut[PATH_MAX];
    fixture f = {67, 45, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 16, 16, 0, COMPRESSION_LZW, 3, "w", "-9999", 1, _i, 0};
    in_dir(src, sizeof src, "whole.tif");
    in_dir(cut, sizeof cut, "cut.tif");
    write_fixture(src, &f, pattern_value);
    size_t n;
    int damaged_tags = 0;
    unsigned char *b = slurp(src, &n);
    for (size_t len = 0; len < n; len += len < 64 ? 1 : n / 40) {
        er_image img;
        er_error err = {{0}};
        spit(cut, b, len);
        er_status st = er_tiff_read(cut, NULL, &img, &err);
        ck_assert_msg(st != ER_OK, "cut at %zu of %zu bytes read fine", len, n);
        assert_clean_failure(st, &img, &err, cut);
        ck_assert_int_ne(st, ER_EUNSUPPORTED);
        damaged_tags += strstr(err.msg, "damaged georeferencing") != NULL;
    }
    /* with the directory at the end, some cuts leave the image readable but
     * lose the tag data after it: refused, not read without georeferencing */
    if (!f.ifd_first)
        ck_assert_int_gt(damaged_tags, 0);
    free(b);
}
END_TEST

/* Flipped bytes anywhere: either a clean error or an image, never a crash
 * or a leak (ASan). */
START_TEST(corrupt_bytes_never_crash)
{
    char src[PATH_MAX], bad[PATH_MAX];
    fixture f = {40, 30, 1, 16, SAMPLEFORMAT_INT, 0, 16, 16, 0, COMPRESSION_ADOBE_DEFLATE, 2, "w", "0", 1, 1, 0};
    in_dir(src, sizeof src, "good.tif");
    in_dir(bad, sizeof bad, "bad.tif");
    write_fixture(src, &f, pattern_value);
    size_t n;
    unsigned char *b = slurp(src, &n);
    int failures = 0;
    for (size_t off = 0; off < n; off += 1 + n / 97) {
        er_image img;
        er_error err = {{0}};
        b[off] ^= 0xA5;
        spit(bad, b, n);
        b[off] ^= 0xA5;
        er_status st = er_tiff_read(bad, NULL, &img, &err);
        if (st != ER_OK) {
            assert_clean_failure(st, &img, &err, bad);
            failures++;
        }
        er_image_free(&img);
    }
    ck_assert_int_gt(failures, 0); /* the header and directory bytes must be noticed */
    free(b);
}
END_TEST

START_TEST(not_a_tiff)
{
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    in_dir(path, sizeof path, "text.tif");
    spit(path, (const unsigned char *)"hello, world\n", 13);
    er_status st = er_tiff_read(path, NULL, &img, &err);
    assert_clean_failure(st, &img, &err, path);
    ck_assert_int_eq(st, ER_EFORMAT);

    spit(path, (const unsigned char *)"", 0);
    st = er_tiff_read(path, NULL, &img, &err);
    assert_clean_failure(st, &img, &err, path);

    in_dir(path, sizeof path, "missing.tif");
    st = er_tiff_read(path, NULL, &img, &err);
    assert_clean_failure(st, &img, &err, path);
    ck_assert_int_eq(st, ER_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, strerror(ENOENT)));

    /* TIFF magic, garbage after it: through er_image_read's dispatch too */
    in_dir(path, sizeof path, "magic.tif");
    spit(path, (const unsigned char *)"II*\0\xff\xff\xff\x7f garbage", 17);
    st = er_image_read(path, NULL, &img, &err);
    assert_clean_failure(st, &img, &err, path);
}
END_TEST

/* A header claiming 100000x100000 with nothing behind it (sparse, as GDAL
 * writes never-touched blocks): refused by the size check alone, fast, and
 * the message says how much it needed. */
START_TEST(over_max_bytes_refused_before_allocating)
{
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    uint8_t none[1] = {0};
    fixture f = {100000, 100000, 1, 16, SAMPLEFORMAT_INT, 0, 0, 0, 100000, COMPRESSION_ADOBE_DEFLATE, 0, "w",
                 NULL, 0, 0, none};
    in_dir(path, sizeof path, "huge.tif");
    write_fixture(path, &f, pattern_value);
    ck_assert_uint_lt(file_size(path), 4096);
    er_read_opts opts = {.max_bytes = (size_t)1 << 30};
    er_status st = er_tiff_read(path, &opts, &img, &err);
    ck_assert_int_eq(st, ER_ENOMEM);
    ck_assert_msg(strstr(err.msg, "100000x100000") && strstr(err.msg, "37.3 GiB") && strstr(err.msg, "1.0 GiB"),
                  "%s", err.msg);
    ck_assert_ptr_null(img.data);

    /* a float64 map whose float copy fits but whose single 7.6 MiB strip
     * does not */
    fixture g = {1000, 1000, 1, 64, SAMPLEFORMAT_IEEEFP, 0, 0, 0, 1000, COMPRESSION_ADOBE_DEFLATE, 0, "w",
                 NULL, 0, 0, none};
    write_fixture(path, &g, pattern_value);
    opts.max_bytes = 5000000;
    st = er_tiff_read(path, &opts, &img, &err);
    ck_assert_msg(st == ER_ENOMEM, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "strip needs 7.6 MiB"), "%s", err.msg);
    ck_assert_ptr_null(img.data);
}
END_TEST

/* ---- reader: nodata --------------------------------------------------- */

static double nodata_pattern(const fixture *f, uint32_t x, uint32_t y, unsigned s)
{
    (void)s;
    int hit = (x * 7 + y * 3) % 5 == 0;
    if (f->format == SAMPLEFORMAT_IEEEFP) {
        if (!f->nodata)
            return hit ? (x % 2 ? NAN : -INFINITY) : x - 0.5 * y;
        return hit ? strtod(f->nodata, NULL) : x - 0.5 * y;
    }
    return hit ? strtod(f->nodata, NULL) : (double)(x + y);
}

static int nodata_hit(uint32_t x, uint32_t y)
{
    return (x * 7 + y * 3) % 5 == 0;
}

static const struct {
    uint16_t bits, format;
    const char *nodata;
} nodata_cases[] = {
    {16, SAMPLEFORMAT_INT, "-32768"},
    {16, SAMPLEFORMAT_UINT, " 65535 "},
    {32, SAMPLEFORMAT_IEEEFP, "nan"},
    {32, SAMPLEFORMAT_IEEEFP, "-3.4028234663852886e+38"},
    {32, SAMPLEFORMAT_IEEEFP, "-9999"},
    {64, SAMPLEFORMAT_IEEEFP, "-1e300"}, /* beyond float: its cells become -inf, still nodata */
    {32, SAMPLEFORMAT_IEEEFP, NULL},     /* no tag: NaN and Inf cells are nodata */
};

START_TEST(nodata_mask_marks_exactly_the_nodata_cells)
{
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    fixture f = {31, 17, 1, nodata_cases[_i].bits, nodata_cases[_i].format, 0, 16, 16, 0, COMPRESSION_LZW, 0,
                 "w", nodata_cases[_i].nodata, 0, 0, 0};
    in_dir(path, sizeof path, "nodata.tif");
    write_fixture(path, &f, nodata_pattern);
    ck_assert_msg(er_tiff_read(path, NULL, &img, &err) == ER_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(img.nodata);
    ck_assert_int_eq(img.has_nodata_value, f.nodata != NULL);
    if (f.nodata) {
        double want = strtod(f.nodata, NULL);
        ck_assert(isnan(want) ? isnan(img.nodata_value) : img.nodata_value == want);
        ck_assert_str_eq(img.georef.gdal_nodata, f.nodata); /* byte for byte, spaces included */
    } else {
        ck_assert(isnan(img.nodata_value));
        ck_assert_ptr_null(img.georef.gdal_nodata);
    }
    for (uint32_t y = 0; y < f.height; y++)
        for (uint32_t x = 0; x < f.width; x++) {
            size_t i = (size_t)y * f.width + x;
            ck_assert_msg(img.nodata[i] == nodata_hit(x, y), "(%u,%u)", x, y);
            if (!nodata_hit(x, y))
                ck_assert(same_float(img.data[i], (float)nodata_pattern(&f, x, y, 0)));
            else if (!f.nodata) /* data kept as is */
                ck_assert(x % 2 ? isnan(img.data[i]) : img.data[i] == -INFINITY);
        }
    er_image_free(&img);
}
END_TEST

START_TEST(nodata_declared_but_unused_gives_no_mask)
{
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    fixture f = {20, 20, 1, 16, SAMPLEFORMAT_INT, 0, 0, 0, 5, 0, 0, "w", "-32768", 0, 0, 0};
    in_dir(path, sizeof path, "unused.tif");
    write_fixture(path, &f, one_value); /* -32768 in every third cell of row 0 ... */
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    ck_assert_ptr_nonnull(img.nodata);
    er_image_free(&img);

    f.nodata = "12345"; /* ... but no cell holds 12345 */
    write_fixture(path, &f, one_value);
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    ck_assert_ptr_null(img.nodata);
    ck_assert_int_eq(img.has_nodata_value, 1);
    ck_assert(img.nodata_value == 12345.0);
    er_image_free(&img);

    f.nodata = "12345 m"; /* not a number: refused, not read as 0 */
    write_fixture(path, &f, one_value);
    er_status st = er_tiff_read(path, NULL, &img, &err);
    assert_clean_failure(st, &img, &err, path);
    ck_assert_ptr_nonnull(strstr(err.msg, "GDAL_NODATA"));
}
END_TEST

/* Blocks never written (offset and byte count 0) read as nodata. */
START_TEST(sparse_blocks_read_as_nodata)
{
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    static const uint8_t written[6] = {1, 0, 1, 0, 1, 1};
    fixture f = {40, 30, 1, 16, SAMPLEFORMAT_INT, 0, 16, 16, 0, COMPRESSION_ADOBE_DEFLATE, 0, "w", "-9999", 0, 0,
                 written};
    in_dir(path, sizeof path, "sparse.tif");
    write_fixture(path, &f, pattern_value);
    ck_assert_msg(er_tiff_read(path, NULL, &img, &err) == ER_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(img.nodata);
    for (uint32_t y = 0; y < 30; y++)
        for (uint32_t x = 0; x < 40; x++) {
            size_t i = (size_t)y * 40 + x;
            int tile = (int)(y / 16 * 3 + x / 16);
            if (written[tile]) {
                ck_assert(same_float(img.data[i], (float)pattern_value(&f, x, y, 0)));
            } else {
                ck_assert_int_eq(img.nodata[i], 1);
                ck_assert(img.data[i] == -9999.0f);
            }
        }
    er_image_free(&img);
}
END_TEST

START_TEST(georef_tags_read_byte_for_byte)
{
    char path[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    fixture f = {20, 10, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 16, 16, 0, COMPRESSION_LZW, 3, "wb", "-9999", 1, 0, 0};
    in_dir(path, sizeof path, "geo.tif");
    write_fixture(path, &f, pattern_value);
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    const er_georef *g = &img.georef;
    ck_assert_uint_eq(g->n_pixel_scale, 3);
    ck_assert_int_eq(memcmp(g->pixel_scale, sample_scale, sizeof sample_scale), 0);
    ck_assert_uint_eq(g->n_tiepoints, 6);
    ck_assert_int_eq(memcmp(g->tiepoints, sample_tiepoint, sizeof sample_tiepoint), 0);
    ck_assert_ptr_null(g->transformation);
    ck_assert_uint_eq(g->n_geokeys, sizeof sample_geokeys / sizeof sample_geokeys[0]);
    ck_assert_int_eq(memcmp(g->geokeys, sample_geokeys, sizeof sample_geokeys), 0);
    ck_assert_uint_eq(g->n_geodoubles, 2);
    ck_assert_int_eq(memcmp(g->geodoubles, sample_geodoubles, sizeof sample_geodoubles), 0);
    ck_assert_str_eq(g->geoascii, sample_geoascii);
    ck_assert_str_eq(g->gdal_metadata, sample_metadata);
    ck_assert_str_eq(g->gdal_nodata, "-9999");
    double dx, dy;
    ck_assert(er_georef_cell_size(g, img.width, img.height, &dx, &dy));
    ck_assert(dx == 30.0 && dy == 30.0);
    er_image_free(&img);
}
END_TEST

static void print_handler(const char *module, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", module ? module : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

/* libtiff's warnings (an unknown tag) and errors (a damaged file) reach the
 * per-call error, never its process-wide handlers (stderr by default). */
START_TEST(libtiff_prints_nothing)
{
    char path[PATH_MAX], log[PATH_MAX];
    static char name[] = "TestPrivateTag";
    static const TIFFFieldInfo extra = {65000, 1, 1, TIFF_LONG, FIELD_CUSTOM, 1, 0, name};
    fixture f = {20, 10, 1, 16, SAMPLEFORMAT_UINT, 0, 0, 0, 10, COMPRESSION_LZW, 0, "w", NULL, 1, 0, 0};
    in_dir(path, sizeof path, "warn.tif");
    in_dir(log, sizeof log, "stderr.txt");
    TIFF *tif = TIFFOpen(path, "w");
    ck_assert_ptr_nonnull(tif);
    set_fixture_tags(tif, &f);
    ck_assert_int_eq(TIFFMergeFieldInfo(tif, &extra, 1), 0); /* this handle only */
    ck_assert(TIFFSetField(tif, 65000, (uint32_t)7));
    uint16_t row[20] = {0};
    for (uint32_t y = 0; y < 10; y++)
        ck_assert_int_eq(TIFFWriteScanline(tif, row, y, 0), 1);
    TIFFClose(tif);

    TIFFSetWarningHandler(print_handler);
    TIFFSetErrorHandler(print_handler);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    er_image img;
    er_error err = {{0}};
    er_status ok = er_tiff_read(path, NULL, &img, &err);
    er_image_free(&img);
    size_t n;
    unsigned char *b = slurp(path, &n);
    spit(path, b, n / 2);
    free(b);
    er_status bad = er_tiff_read(path, NULL, &img, &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    ck_assert_int_eq(ok, ER_OK);
    ck_assert_int_ne(bad, ER_OK);
    ck_assert_uint_eq(file_size(log), 0);
}
END_TEST

typedef struct reader_job {
    const char *path;
    er_status st;
    er_image img;
} reader_job;

static void *read_job(void *arg)
{
    reader_job *j = arg;
    er_error err;
    j->st = er_tiff_read(j->path, NULL, &j->img, &err);
    return NULL;
}

/* Four threads reading at once (the first use registers the tags) all get
 * the same image. */
START_TEST(concurrent_reads_agree)
{
    char path[PATH_MAX];
    fixture f = {200, 150, 1, 32, SAMPLEFORMAT_IEEEFP, 0, 32, 32, 0, COMPRESSION_ADOBE_DEFLATE, 3, "w", "-9999", 1,
                 0, 0};
    in_dir(path, sizeof path, "shared.tif");
    write_fixture(path, &f, nodata_pattern);
    reader_job jobs[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        jobs[k].path = path;
        ck_assert_int_eq(pthread_create(&th[k], NULL, read_job, &jobs[k]), 0);
    }
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(pthread_join(th[k], NULL), 0);
    for (int k = 0; k < 4; k++) {
        ck_assert_int_eq(jobs[k].st, ER_OK);
        ck_assert_int_eq(memcmp(jobs[k].img.data, jobs[0].img.data, 200 * 150 * sizeof(float)), 0);
        ck_assert_int_eq(memcmp(jobs[k].img.nodata, jobs[0].img.nodata, 200 * 150), 0);
        ck_assert_str_eq(jobs[k].img.georef.gdal_metadata, sample_metadata);
    }
    for (int k = 0; k < 4; k++)
        er_image_free(&jobs[k].img);
}
END_TEST

/* ---- writer ----------------------------------------------------------- */

/* A layer of arbitrary float bit patterns (denormals, -0, huge values,
 * but no NaN, which would be nodata on reading) with every 11th cell
 * marked nodata. */
static float *random_layer(int w, int h, uint8_t **mask, uint64_t seed)
{
    size_t n = (size_t)w * h;
    float *d = malloc(n * sizeof *d);
    *mask = calloc(n, 1);
    ck_assert(d && *mask);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)er_rng_u64(seed, 1, i);
        if ((bits & 0x7f800000u) == 0x7f800000u)
            bits &= ~0x00800000u; /* no NaN/Inf */
        if (i % 3 == 0)         /* DEM-like smooth values too */
            bits = 0;
        float v = er_bits_float(bits);
        d[i] = i % 3 == 0 ? (float)(i % (size_t)w) * 0.25f + 100.0f : v;
        (*mask)[i] = i % 11 == 5;
    }
    return d;
}

static void assert_georef_equal(const er_georef *a, const er_georef *b)
{
#define SAME_ARRAY(f, nf)                                                                                    \
    ck_assert_uint_eq(a->nf, b->nf);                                                                         \
    if (a->nf)                                                                                               \
        ck_assert_int_eq(memcmp(a->f, b->f, a->nf * sizeof a->f[0]), 0);
    SAME_ARRAY(pixel_scale, n_pixel_scale)
    SAME_ARRAY(tiepoints, n_tiepoints)
    SAME_ARRAY(transformation, n_transformation)
    SAME_ARRAY(geokeys, n_geokeys)
    SAME_ARRAY(geodoubles, n_geodoubles)
#undef SAME_ARRAY
#define SAME_STRING(f)                                                                                       \
    ck_assert_int_eq(a->f == NULL, b->f == NULL);                                                            \
    if (a->f)                                                                                                \
        ck_assert_str_eq(a->f, b->f);
    SAME_STRING(geoascii)
    SAME_STRING(gdal_nodata)
    SAME_STRING(gdal_metadata)
#undef SAME_STRING
}

static char nodata_9999[] = "-9999";

static void sample_georef(er_georef *g)
{
    memset(g, 0, sizeof *g);
    g->pixel_scale = sample_scale;
    g->n_pixel_scale = 3;
    g->tiepoints = sample_tiepoint;
    g->n_tiepoints = 6;
    g->geokeys = sample_geokeys;
    g->n_geokeys = sizeof sample_geokeys / sizeof sample_geokeys[0];
    g->geodoubles = sample_geodoubles;
    g->n_geodoubles = 2;
    g->geoascii = sample_geoascii;
    g->gdal_metadata = sample_metadata;
    g->gdal_nodata = nodata_9999;
}

static const int sizes[][2] = {{1, 1}, {17, 300}, {300, 17}, {513, 257}, {256, 256}};

START_TEST(write_round_trip_bit_exact)
{
    char path[PATH_MAX];
    int w = sizes[_i][0], h = sizes[_i][1];
    uint8_t *mask;
    float *d = random_layer(w, h, &mask, (uint64_t)_i + 1);
    er_georef g;
    sample_georef(&g);
    er_layer_out layer = {w, h, d, mask, -9999.0, &g, "erode test provenance\n{\"seed\": 1}"};
    er_error err = {{0}};
    in_dir(path, sizeof path, "out.tif");
    ck_assert_msg(er_tiff_write(path, &layer, &err) == ER_OK, "%s", err.msg);

    er_image img;
    ck_assert_msg(er_tiff_read(path, NULL, &img, &err) == ER_OK, "%s", err.msg);
    ck_assert_int_eq(img.width, w);
    ck_assert_int_eq(img.height, h);
    ck_assert_int_eq(img.has_nodata_value, 1);
    ck_assert(img.nodata_value == -9999.0);
    size_t marked = 0;
    for (size_t i = 0; i < (size_t)w * h; i++) {
        if (mask[i]) {
            ck_assert_ptr_nonnull(img.nodata);
            ck_assert(img.nodata[i] && img.data[i] == -9999.0f);
            marked++;
        } else {
            ck_assert_msg(same_float(img.data[i], d[i]), "cell %zu", i);
            ck_assert(!img.nodata || !img.nodata[i] || d[i] == -9999.0f);
        }
    }
    ck_assert_uint_eq(marked, ((size_t)w * h + 5) / 11);
    assert_georef_equal(&img.georef, &g);
    er_image_free(&img);

    /* the file's own structure: float32, tiled, DEFLATE + predictor 3 */
    TIFF *tif = TIFFOpen(path, "r");
    uint16_t bits = 0, format = 0, comp = 0, pred = 0;
    uint32_t tw = 0, th = 0;
    const char *desc = NULL, *junk = NULL;
    ck_assert_ptr_nonnull(tif);
    TIFFGetField(tif, TIFFTAG_BITSPERSAMPLE, &bits);
    TIFFGetField(tif, TIFFTAG_SAMPLEFORMAT, &format);
    TIFFGetField(tif, TIFFTAG_COMPRESSION, &comp);
    TIFFGetField(tif, TIFFTAG_PREDICTOR, &pred);
    ck_assert(TIFFIsTiled(tif));
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    ck_assert(bits == 32 && format == SAMPLEFORMAT_IEEEFP);
    ck_assert(comp == COMPRESSION_ADOBE_DEFLATE && pred == PREDICTOR_FLOATINGPOINT);
    ck_assert(tw % 16 == 0 && th % 16 == 0 && tw <= 256 && th <= 256);
    ck_assert(tw == 256 || (int)tw >= w);
    ck_assert(th == 256 || (int)th >= h);
    ck_assert(TIFFGetField(tif, TIFFTAG_IMAGEDESCRIPTION, &desc));
    ck_assert_str_eq(desc, layer.provenance);
    ck_assert(!TIFFGetField(tif, TIFFTAG_DATETIME, &junk));
    ck_assert(!TIFFGetField(tif, TIFFTAG_SOFTWARE, &junk));
    ck_assert(!TIFFIsBigTIFF(tif));
    TIFFClose(tif);
    free(d);
    free(mask);
}
END_TEST

START_TEST(two_writes_are_byte_identical)
{
    char a[PATH_MAX], b[PATH_MAX];
    uint8_t *mask;
    float *d = random_layer(300, 200, &mask, 9);
    er_georef g;
    sample_georef(&g);
    er_layer_out layer = {300, 200, d, mask, -9999.0, &g, "provenance"};
    er_error err = {{0}};
    in_dir(a, sizeof a, "a.tif");
    in_dir(b, sizeof b, "b.tif");
    ck_assert_int_eq(er_tiff_write(a, &layer, &err), ER_OK);
    ck_assert_int_eq(er_tiff_write(b, &layer, &err), ER_OK);
    size_t na, nb;
    unsigned char *ba = slurp(a, &na), *bb = slurp(b, &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert_int_eq(memcmp(ba, bb, na), 0);
    ck_assert(ba[0] == 'I' && ba[1] == 'I' && ba[2] == 42);
    /* and a second write over an existing file replaces it */
    d[7] += 1.0f;
    ck_assert_int_eq(er_tiff_write(a, &layer, &err), ER_OK);
    free(ba);
    ba = slurp(a, &na);
    ck_assert(na != nb || memcmp(ba, bb, na) != 0);
    free(ba);
    free(bb);
    free(d);
    free(mask);
}
END_TEST

/* GDAL_NODATA: kept as written when it still names the value, rewritten
 * when the caller's value differs, added for nodata cells without one. */
START_TEST(writer_nodata_tag)
{
    char path[PATH_MAX];
    float d[4] = {1, 2, 3, 4};
    uint8_t mask[4] = {0, 1, 0, 0}, clear[4] = {0};
    er_georef g;
    memset(&g, 0, sizeof g);
    static char declared[] = "-32768.0";
    g.gdal_nodata = declared;
    er_layer_out layer = {2, 2, d, clear, -32768.0, &g, NULL};
    er_error err = {{0}};
    er_image img;
    in_dir(path, sizeof path, "nd.tif");

    ck_assert_int_eq(er_tiff_write(path, &layer, &err), ER_OK);
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    ck_assert_str_eq(img.georef.gdal_nodata, "-32768.0");
    ck_assert_ptr_null(img.nodata);
    er_image_free(&img);

    layer.nodata_value = NAN;
    layer.nodata = mask;
    ck_assert_int_eq(er_tiff_write(path, &layer, &err), ER_OK);
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    ck_assert_str_eq(img.georef.gdal_nodata, "nan");
    ck_assert(img.nodata && img.nodata[1] && isnan(img.data[1]) && !img.nodata[0]);
    er_image_free(&img);

    layer.georef = NULL;
    layer.nodata_value = 0.1;
    ck_assert_int_eq(er_tiff_write(path, &layer, &err), ER_OK);
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    ck_assert_str_eq(img.georef.gdal_nodata, "0.1");
    ck_assert(img.nodata && img.nodata[1] && img.data[1] == 0.1f);
    ck_assert_ptr_null(img.georef.geokeys);
    er_image_free(&img);

    layer.nodata = NULL;
    ck_assert_int_eq(er_tiff_write(path, &layer, &err), ER_OK);
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    ck_assert_ptr_null(img.georef.gdal_nodata);
    ck_assert_int_eq(img.has_nodata_value, 0);
    er_image_free(&img);
}
END_TEST

/* The nodata value is never one a valid cell holds, as written: a dry
 * cell's 0 of water under an input nodata value of 0, a cell GDAL reads
 * as the value (within its ARE_REAL_EQUAL margin), a value --precision
 * rounds onto it, or a COG overview's average that lands on it.  Then the
 * file declares NaN and its mask is still exactly layer->nodata; when no
 * valid cell clashes the value stays. */
START_TEST(writer_nodata_never_a_valid_value)
{
    enum { W = 40, H = 40 };
    static const struct {
        double nodata;     /* the caller's value */
        float valid;       /* put in valid cell 5 */
        double precision;  /* --precision */
        int cog;
        const char *tag;   /* GDAL_NODATA written */
    } cases[] = {
        {0.0, 0.0f, 0, 0, "nan"},
        {0.0, 0.25f, 0, 0, "0"},
        {-32768.0, -32768.0f, 0, 0, "nan"},
        {-32768.0, -32767.996f, 0, 0, "nan"},       /* one float step off: GDAL masks it */
        {-32768.0, -32767.0f, 0, 0, "-32768"},
        {0.0, 0.001f, 0.01, 0, "nan"},              /* rounded to 0 */
        {0.0, 0.001f, 0, 0, "0"},
        {5.0, 0, 0, 1, "nan"},                      /* an overview cell averages 4 and 6 */
    };
    int k = _i;
    float d[W * H];
    uint8_t mask[W * H];
    for (int i = 0; i < W * H; i++) {
        d[i] = 100.0f + (float)(i % 7);
        mask[i] = (uint8_t)(i % 11 == 3);
    }
    d[5] = cases[k].valid;
    if (cases[k].cog) {
        for (int i = 0; i < W * H; i++)
            d[i] = (i / W + i % W) % 2 ? 4.0f : 6.0f;
    }
    er_layer_out layer = {W, H, d, mask, cases[k].nodata, NULL, NULL};
    er_tiff_create co = er_tiff_create_defaults();
    co.precision = cases[k].precision;
    co.cog = cases[k].cog;
    co.blocksize = 16;
    char path[PATH_MAX];
    er_error err = {{0}};
    er_image img;
    in_dir(path, sizeof path, "ndv.tif");
    ck_assert_int_eq(er_tiff_write_co(path, &layer, &co, &err), ER_OK);
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    ck_assert_str_eq(img.georef.gdal_nodata, cases[k].tag);
    ck_assert_ptr_nonnull(img.nodata);
    for (int i = 0; i < W * H; i++)
        ck_assert_msg(img.nodata[i] == mask[i], "case %d cell %d: mask %d, want %d", k, i, img.nodata[i], mask[i]);
    er_image_free(&img);
}
END_TEST

START_TEST(writer_bigtiff)
{
    char path[PATH_MAX];
    uint8_t *mask;
    float *d = random_layer(70, 40, &mask, 3);
    er_georef g;
    sample_georef(&g);
    er_layer_out layer = {70, 40, d, mask, -9999.0, &g, NULL};
    er_tiff_write_opts opts = {1, er_tiff_create_defaults()};
    er_error err = {{0}};
    er_image img;
    in_dir(path, sizeof path, "big.tif");
    ck_assert_int_eq(er_tiff_write_ex(path, &layer, &opts, &err), ER_OK);
    size_t n;
    unsigned char *b = slurp(path, &n);
    ck_assert(b[0] == 'I' && b[1] == 'I' && b[2] == 43 && b[3] == 0);
    free(b);
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    for (size_t i = 0; i < 70 * 40; i++)
        ck_assert(mask[i] ? img.data[i] == -9999.0f : same_float(img.data[i], d[i]));
    assert_georef_equal(&img.georef, &g);
    er_image_free(&img);
    free(d);
    free(mask);
}
END_TEST

static int dir_entries(const char *path)
{
    DIR *dp = opendir(path);
    int n = 0;
    struct dirent *e;
    ck_assert_ptr_nonnull(dp);
    while ((e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(dp);
    return n;
}

START_TEST(write_failure_leaves_nothing)
{
    char path[PATH_MAX];
    float d[4] = {0};
    er_layer_out layer = {2, 2, d, NULL, 0, NULL, NULL};
    er_error err = {{0}};
    in_dir(path, sizeof path, "no/such/dir/out.tif");
    ck_assert_int_eq(er_tiff_write(path, &layer, &err), ER_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot create"));
    ck_assert_ptr_nonnull(strstr(err.msg, strerror(ENOENT)));
    ck_assert_int_eq(dir_entries(dir), 0);

    er_layer_out empty = {0, 2, d, NULL, 0, NULL, NULL};
    in_dir(path, sizeof path, "empty.tif");
    ck_assert_int_eq(er_tiff_write(path, &empty, &err), ER_EINVAL);
    ck_assert_int_eq(dir_entries(dir), 0);
}
END_TEST

/* In the child of er_test_in_child: writing a 2x2 layer to arg (a path in
 * a directory the child may not write to) fails with ER_EIO, says
 * "permission denied" and names the file. */
static int write_refused(void *arg)
{
    const char *path = arg;
    float d[4] = {0};
    er_layer_out layer = {2, 2, d, NULL, 0, NULL, NULL};
    er_error err = {{0}};
    if (er_tiff_write(path, &layer, &err) != ER_EIO)
        return 1;
    if (!strstr(err.msg, "permission denied") || !strstr(err.msg, path))
        return 2;
    return 0;
}

/* A directory without write permission.  Root ignores permissions, so the
 * write runs in a child that drops to an unprivileged user. */
START_TEST(write_into_read_only_dir)
{
    char sub[PATH_MAX], path[PATH_MAX];
    in_dir(sub, sizeof sub, "ro");
    ck_assert_int_eq(mkdir(sub, 0555), 0);
    ck_assert_int_eq(chmod(sub, 0555), 0);
    ck_assert_int_eq(chmod(dir, 0755), 0); /* the child must reach sub */
    in_dir(path, sizeof path, "ro/out.tif");
    int rc = er_test_in_child(write_refused, path, 1, 0);
    chmod(sub, 0755);
    chmod(dir, 0700);
    ER_SKIP_IF(rc == ER_TEST_NO_USER, "cannot drop root privileges to test permissions");
    ck_assert_msg(rc == 0, "child check %d failed", rc);
    ck_assert_int_eq(dir_entries(sub), 0);
}
END_TEST

/* In the child, under a 16 KiB file size limit: a ~240 kB layer that does
 * not compress fails with ER_EIO and a message naming the file and the
 * limit. */
static int write_over_limit(void *arg)
{
    const char *path = arg;
    uint8_t *mask;
    float *d = random_layer(300, 300, &mask, 5);
    er_layer_out layer = {300, 300, d, NULL, 0, NULL, NULL};
    er_error err = {{0}};
    if (er_tiff_write(path, &layer, &err) != ER_EIO)
        return 1;
    if (!strstr(err.msg, "file too large") || !strstr(err.msg, "cannot write") || !strstr(err.msg, path))
        return 2;
    free(d);
    free(mask);
    return 0;
}

/* A full disk, simulated by RLIMIT_FSIZE in a child (SIGXFSZ ignored, so
 * write() fails with EFBIG): ER_EIO naming the reason, and neither the
 * file nor its temporary is left. */
START_TEST(disk_full_is_eio_and_leaves_nothing)
{
    char path[PATH_MAX];
    in_dir(path, sizeof path, "full.tif");
    int rc = er_test_in_child(write_over_limit, path, 0, 16384);
    ck_assert_msg(rc == 0, "child check %d failed", rc);
    ck_assert_int_eq(dir_entries(dir), 0);
}
END_TEST

/* ---- real DEMs (er_test_shared_dem) ------------------------------------- */

typedef struct dem_fact {
    const char *name;
    int bundled;          /* in tests/data (MIT/Apache), else shared only (GPL) */
    int width, height;
    double min, max, mean, tol; /* of valid cells; tol = half the last digit given */
    size_t nodata_cells;
    int declared;
} dem_fact;

static const dem_fact dems[] = {
    {"whitebox_dem_f32_utm18n.tif", 1, 237, 188, 212.230, 1232.878, 529.375, 0.0005, 0, 1},
    {"olinda_dem_f32_utm25s.tif", 1, 111, 111, -1, 88, 21.665, 0.0005, 0, 0},
    {"pysheds_dem_int16_wgs84.tif", 0, 367, 359, 147, 298, 206.92, 0.005, 0, 1},
    {"luxembourg_elev_int16_wgs84.tif", 0, 95, 90, 141, 547, 348.337, 0.0005, 3942, 1},
};

static const char *dem_path(char *buf, size_t n, const dem_fact *d)
{
    if (d->bundled) {
        char rel[256];
        snprintf(rel, sizeof rel, "tests/data/%.200s", d->name);
        return er_test_path(buf, n, rel);
    }
    return er_test_shared_dem(buf, n, d->name);
}

static void check_facts(const er_image *img, const dem_fact *d)
{
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    size_t valid = 0, nd = 0;
    ck_assert_int_eq(img->width, d->width);
    ck_assert_int_eq(img->height, d->height);
    for (size_t i = 0; i < (size_t)d->width * d->height; i++) {
        if (img->nodata && img->nodata[i]) {
            nd++;
            continue;
        }
        double v = img->data[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
        valid++;
    }
    ck_assert_uint_eq(nd, d->nodata_cells);
    ck_assert_int_eq(img->nodata != NULL, d->nodata_cells > 0);
    ck_assert_int_eq(img->has_nodata_value, d->declared);
    ck_assert_msg(fabs(lo - d->min) <= d->tol && fabs(hi - d->max) <= d->tol, "%s: min %.6f max %.6f", d->name,
                  lo, hi);
    ck_assert_msg(fabs(sum / (double)valid - d->mean) <= d->tol, "%s: mean %.6f", d->name, sum / (double)valid);
}

START_TEST(real_dems_match_sources)
{
    const dem_fact *d = &dems[_i];
    char path[PATH_MAX], out[PATH_MAX];
    er_image img, back;
    er_error err = {{0}};
    ER_SKIP_IF(!dem_path(path, sizeof path, d), "DEM not present (shared/data/dem absent)");
    ck_assert_msg(er_tiff_read(path, NULL, &img, &err) == ER_OK, "%s", err.msg);
    check_facts(&img, d);
    ck_assert_ptr_nonnull(img.georef.geokeys);
    if (d->declared)
        ck_assert(img.nodata_value == -32768.0);

    /* written back and read again: the same cells, tags and facts */
    er_layer_out layer = {img.width, img.height, img.data, img.nodata, img.nodata_value, &img.georef, "test"};
    in_dir(out, sizeof out, "dem.tif");
    ck_assert_msg(er_tiff_write(out, &layer, &err) == ER_OK, "%s", err.msg);
    ck_assert_msg(er_tiff_read(out, NULL, &back, &err) == ER_OK, "%s", err.msg);
    check_facts(&back, d);
    for (size_t i = 0; i < (size_t)img.width * img.height; i++)
        ck_assert(same_float(back.data[i], img.data[i]));
    assert_georef_equal(&back.georef, &img.georef);
    er_image_free(&back);
    er_image_free(&img);
}
END_TEST

/* gdalinfo -json of a file, parsed; NULL when gdalinfo fails.  PAM is off
 * so no .aux.xml lands beside the input. */
static cJSON *gdalinfo(const char *path)
{
    char cmd[2 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "GDAL_PAM_ENABLED=NO gdalinfo -json -mm -checksum '%s' 2>/dev/null", path);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 4096)
            buf = realloc(buf, cap *= 2);
        ck_assert_ptr_nonnull(buf);
    }
    buf[len] = '\0';
    int rc = pclose(p);
    cJSON *j = rc == 0 ? cJSON_Parse(buf) : NULL;
    free(buf);
    return j;
}

static double band_number(const cJSON *info, const char *key, int *present)
{
    const cJSON *band = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(info, "bands"), 0);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(band, key);
    *present = cJSON_IsNumber(v) || cJSON_IsString(v);
    return cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsString(v) ? strtod(v->valuestring, NULL) : NAN;
}

/* GDAL as the oracle: the output of a DEM round trip has the input's
 * geotransform, CRS WKT, nodata value, min/max and checksum, and is Float32. */
START_TEST(gdal_agrees_on_round_trip)
{
    const dem_fact *d = &dems[_i];
    char path[PATH_MAX], out[PATH_MAX];
    er_image img;
    er_error err = {{0}};
    ER_SKIP_IF(system("gdalinfo --version >/dev/null 2>&1") != 0, "gdalinfo not installed");
    ER_SKIP_IF(!dem_path(path, sizeof path, d), "DEM not present (shared/data/dem absent)");
    ck_assert_int_eq(er_tiff_read(path, NULL, &img, &err), ER_OK);
    er_layer_out layer = {img.width, img.height, img.data, img.nodata, img.nodata_value, &img.georef, "test"};
    in_dir(out, sizeof out, "gdal.tif");
    ck_assert_int_eq(er_tiff_write(out, &layer, &err), ER_OK);
    er_image_free(&img);

    cJSON *a = gdalinfo(path), *b = gdalinfo(out);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    const cJSON *ga = cJSON_GetObjectItemCaseSensitive(a, "geoTransform");
    const cJSON *gb = cJSON_GetObjectItemCaseSensitive(b, "geoTransform");
    ck_assert_int_eq(cJSON_GetArraySize(ga), 6);
    ck_assert_int_eq(cJSON_GetArraySize(gb), 6);
    for (int k = 0; k < 6; k++)
        ck_assert(cJSON_GetArrayItem(ga, k)->valuedouble == cJSON_GetArrayItem(gb, k)->valuedouble);
    const cJSON *wa = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "coordinateSystem"), "wkt");
    const cJSON *wb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(b, "coordinateSystem"), "wkt");
    ck_assert(cJSON_IsString(wa) && cJSON_IsString(wb) && strlen(wa->valuestring) > 100);
    ck_assert_str_eq(wa->valuestring, wb->valuestring);
    int pa, pb;
    double na = band_number(a, "noDataValue", &pa), nb = band_number(b, "noDataValue", &pb);
    ck_assert_int_eq(pa, d->declared);
    ck_assert_int_eq(pb, d->declared);
    ck_assert(!pa || na == nb);
    ck_assert(band_number(a, "computedMin", &pa) == band_number(b, "computedMin", &pb));
    ck_assert(band_number(a, "computedMax", &pa) == band_number(b, "computedMax", &pb));
    ck_assert(band_number(a, "checksum", &pa) == band_number(b, "checksum", &pb));
    const cJSON *band = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(b, "bands"), 0);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(band, "type")->valuestring, "Float32");
    cJSON_Delete(a);
    cJSON_Delete(b);
}
END_TEST

/* ---- creation options ---------------------------------------------- */

static const er_compress compressors[] = {ER_COMPRESS_DEFLATE, ER_COMPRESS_ZSTD, ER_COMPRESS_LZW, ER_COMPRESS_NONE};
static const uint16_t tiff_codes[] = {COMPRESSION_ADOBE_DEFLATE, COMPRESSION_ZSTD, COMPRESSION_LZW, COMPRESSION_NONE};

/* Every compressor x predictor x layout reads back bit for bit, with the
 * tags it claims: the hand-made predictors and raw tiles decode through
 * libtiff's own codecs exactly as libtiff's encoders would. */
START_TEST(every_creation_option_round_trips)
{
    char path[PATH_MAX];
    int c = _i % 4, predictor = _i / 4 % 3 + 1, cog = _i / 12;
    uint8_t *mask;
    float *d = random_layer(213, 150, &mask, (uint64_t)_i + 20);
    er_georef g;
    sample_georef(&g);
    er_layer_out layer = {213, 150, d, mask, -9999.0, &g, "provenance"};
    er_tiff_create co = er_tiff_create_defaults();
    co.compress = compressors[c];
    co.predictor = predictor;
    co.blocksize = 64;
    co.cog = cog;
    er_error err = {{0}};
    in_dir(path, sizeof path, "co.tif");
    ck_assert_msg(er_tiff_write_co(path, &layer, &co, &err) == ER_OK, "%s", err.msg);
    er_image img;
    ck_assert_msg(er_tiff_read(path, NULL, &img, &err) == ER_OK, "%s", err.msg);
    for (size_t i = 0; i < 213 * 150; i++)
        ck_assert_msg(mask[i] ? img.data[i] == -9999.0f : same_float(img.data[i], d[i]), "cell %zu", i);
    assert_georef_equal(&img.georef, &g);
    er_image_free(&img);

    TIFF *tif = TIFFOpen(path, "r");
    uint16_t comp = 0, pred = 1;
    uint32_t tw = 0;
    ck_assert_ptr_nonnull(tif);
    TIFFGetField(tif, TIFFTAG_COMPRESSION, &comp);
    TIFFGetField(tif, TIFFTAG_PREDICTOR, &pred);
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    ck_assert_uint_eq(comp, tiff_codes[c]);
    ck_assert_uint_eq(pred, compressors[c] == ER_COMPRESS_NONE ? 1 : predictor);
    ck_assert_uint_eq(tw, 64);
    /* 213x150 in 64-cell tiles: overviews 107x75, 54x38 (one tile) */
    ck_assert_int_eq(TIFFNumberOfDirectories(tif), cog ? 3 : 1);
    TIFFClose(tif);
    free(d);
    free(mask);
}
END_TEST

/* The same file for 1, 2, 3 and 8 threads (memcmp), in both parallel
 * codecs and both layouts. */
START_TEST(creation_output_same_for_any_thread_count)
{
    static const int threads[] = {1, 2, 3, 8};
    char path[PATH_MAX];
    uint8_t *mask;
    float *d = random_layer(530, 300, &mask, 77);
    er_layer_out layer = {530, 300, d, mask, -9999.0, NULL, NULL};
    er_tiff_create co = er_tiff_create_defaults();
    co.compress = _i % 2 ? ER_COMPRESS_ZSTD : ER_COMPRESS_DEFLATE;
    co.cog = _i / 2;
    co.blocksize = 32;
    co.precision = _i == 3 ? 1e-3 : 0;
    er_error err = {{0}};
    unsigned char *ref = NULL;
    size_t nref = 0;
    in_dir(path, sizeof path, "j.tif");
    for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        er_test_set_threads(threads[k]);
        ck_assert_msg(er_tiff_write_co(path, &layer, &co, &err) == ER_OK, "%s", err.msg);
        size_t n;
        unsigned char *b = slurp(path, &n);
        if (!ref) {
            ref = b;
            nref = n;
            continue;
        }
        ck_assert_msg(n == nref && memcmp(b, ref, n) == 0, "%d threads differ from 1", threads[k]);
        free(b);
    }
    er_test_set_threads(2);
    free(ref);
    free(d);
    free(mask);
}
END_TEST

/* The parallel tile reader gives the same image for any thread count, and
 * a corrupt tile is an error naming it, whichever thread decoded it. */
START_TEST(parallel_read_same_for_any_thread_count)
{
    static const int threads[] = {1, 2, 3, 8};
    char path[PATH_MAX];
    uint8_t *mask;
    float *d = random_layer(530, 300, &mask, 78);
    er_layer_out layer = {530, 300, d, mask, -9999.0, NULL, NULL};
    er_tiff_create co = er_tiff_create_defaults();
    co.compress = _i ? ER_COMPRESS_ZSTD : ER_COMPRESS_DEFLATE;
    co.blocksize = 32;
    er_error err = {{0}};
    in_dir(path, sizeof path, "r.tif");
    ck_assert_int_eq(er_tiff_write_co(path, &layer, &co, &err), ER_OK);
    for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        er_image img;
        er_test_set_threads(threads[k]);
        ck_assert_msg(er_tiff_read(path, NULL, &img, &err) == ER_OK, "%s", err.msg);
        for (size_t i = 0; i < 530 * 300; i++)
            ck_assert(mask[i] ? img.nodata[i] && img.data[i] == -9999.0f : same_float(img.data[i], d[i]) && !img.nodata[i]);
        er_image_free(&img);
    }
    er_test_set_threads(2);
    /* corrupt the middle of the file: some tile's data, not the header
     * (DEFLATE only: its Adler-32 catches any change, a ZSTD frame as TIFF
     * stores it has no checksum) */
    if (_i) {
        free(d);
        free(mask);
        return;
    }
    size_t n;
    unsigned char *b = slurp(path, &n);
    for (size_t i = n / 2; i < n / 2 + 64; i++)
        b[i] ^= 0x5a;
    spit(path, b, n);
    free(b);
    er_image img;
    er_status st = er_tiff_read(path, NULL, &img, &err);
    ck_assert_msg(st == ER_EFORMAT && strstr(err.msg, "tile "), "%d %s", st, err.msg);
    ck_assert_ptr_null(img.data);
    free(d);
    free(mask);
}
END_TEST

/* PRECISION p rounds to multiples of q, the largest power of two <= p:
 * every value moves by at most q/2 <= p/2, lands on a multiple of q, and
 * nodata cells, infinities and the unrounded default stay exact. */
START_TEST(precision_rounding_bound)
{
    static const double steps[] = {1e-4, 0.25, 3.0};
    char path[PATH_MAX];
    int w = 300, h = 100;
    size_t n = (size_t)w * h;
    float *d = malloc(n * sizeof *d);
    uint8_t *mask = calloc(n, 1);
    ck_assert(d && mask);
    for (size_t i = 0; i < n; i++) {
        double u = (double)(er_rng_u64(5, 2, i) >> 11) / 9007199254740992.0;
        d[i] = (float)((u - 0.5) * 2000.0 * (i % 7 == 0 ? 1e-6 : 1.0));
        mask[i] = i % 13 == 3;
    }
    d[10] = INFINITY;
    er_layer_out layer = {w, h, d, mask, -9999.0, NULL, NULL};
    er_tiff_create co = er_tiff_create_defaults();
    co.precision = steps[_i];
    double q = steps[_i] == 1e-4 ? ldexp(1, -14) : steps[_i] == 0.25 ? 0.25 : 2.0;
    er_error err = {{0}};
    er_image img;
    in_dir(path, sizeof path, "p.tif");
    ck_assert_msg(er_tiff_write_co(path, &layer, &co, &err) == ER_OK, "%s", err.msg);
    size_t rounded_size = file_size(path);
    ck_assert_msg(er_tiff_read(path, NULL, &img, &err) == ER_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        if (mask[i]) {
            ck_assert(img.data[i] == -9999.0f);
            continue;
        }
        if (!isfinite(d[i])) {
            ck_assert(img.data[i] == d[i]);
            continue;
        }
        ck_assert_msg(fabs((double)img.data[i] - d[i]) <= q / 2, "cell %zu: %.9g -> %.9g", i, d[i], img.data[i]);
        ck_assert_msg(fmod((double)img.data[i], q) == 0, "cell %zu: %.9g not a multiple of %g", i, img.data[i], q);
    }
    er_image_free(&img);
    co.precision = 0;
    ck_assert_int_eq(er_tiff_write_co(path, &layer, &co, &err), ER_OK);
    ck_assert_msg(rounded_size < file_size(path), "rounded %zu, exact %zu", rounded_size, file_size(path));
    free(d);
    free(mask);
}
END_TEST

START_TEST(creation_options_parse)
{
    static const char *const good[] = {"COMPRESS=ZSTD", "compress=lzw", "LEVEL=1", "LEVEL=22", "PREDICTOR=2",
                                       "BLOCKSIZE=512", "BLOCKSIZE=16", "COG=YES", "cog=no"};
    static const char *const bad[] = {"COMPRESS=JPEG", "LEVEL=0", "LEVEL=23", "LEVEL=x", "PREDICTOR=4",
                                      "BLOCKSIZE=100", "BLOCKSIZE=8192", "COG=maybe", "TILED=YES", "COMPRESS",
                                      "=1", "LEVEL=1x"};
    const char *why;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        er_tiff_create co = er_tiff_create_defaults();
        ck_assert_msg(er_tiff_create_set(&co, good[i], &why), "%s", good[i]);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        er_tiff_create co = er_tiff_create_defaults();
        why = NULL;
        ck_assert_msg(!er_tiff_create_set(&co, bad[i], &why), "%s", bad[i]);
        ck_assert(why && *why && !strchr(why, '\n'));
    }
    er_tiff_create co = er_tiff_create_defaults();
    ck_assert(er_tiff_create_check(&co, &why));
    co.level = 13;
    ck_assert(!er_tiff_create_check(&co, &why)); /* DEFLATE stops at 12 */
    co.compress = ER_COMPRESS_ZSTD;
    ck_assert(er_tiff_create_check(&co, &why));
    co.compress = ER_COMPRESS_LZW;
    ck_assert(!er_tiff_create_check(&co, &why)); /* LZW has no level */
}
END_TEST

/* GDAL's COG layout: GDAL's structural metadata after the header, then
 * the first IFD, one IFD per overview, each
 * half the size (rounded up) down to one tile, every IFD before the first
 * tile, the smallest overview's tiles first and the full resolution's
 * last; an overview cell is the mean of its 2x2 non-nodata parents. */
START_TEST(cog_layout)
{
    char path[PATH_MAX];
    uint8_t *mask;
    int w = 300, h = 130;
    float *d = random_layer(w, h, &mask, 8);
    for (size_t i = 0; i < (size_t)w * h; i++)
        d[i] = (float)(i % 1000) * 0.5f; /* finite means */
    er_layer_out layer = {w, h, d, mask, -9999.0, NULL, NULL};
    er_tiff_create co = er_tiff_create_defaults();
    co.cog = 1;
    co.blocksize = 64;
    er_error err = {{0}};
    in_dir(path, sizeof path, "cog.tif");
    ck_assert_msg(er_tiff_write_co(path, &layer, &co, &err) == ER_OK, "%s", err.msg);
    size_t n;
    unsigned char *b = slurp(path, &n);
    /* GDAL's ghost metadata right after the header, the IFD right after
     * it (on an even offset) */
    static const char key[] = "GDAL_STRUCTURAL_METADATA_SIZE=";
    ck_assert_int_eq(memcmp(b + 8, key, sizeof key - 1), 0);
    long ghost = strtol((const char *)b + 8 + sizeof key - 1, NULL, 10);
    char text[512] = "";
    ck_assert(ghost > 0 && ghost + 43 < (long)sizeof text);
    memcpy(text, b + 8, (size_t)ghost + 43);
    ck_assert_ptr_nonnull(strstr(text, "\nLAYOUT=IFDS_BEFORE_DATA\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nBLOCK_LEADER=SIZE_AS_UINT4\n"));
    uint32_t first_ifd = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
    ck_assert_uint_eq(first_ifd, (uint32_t)(8 + 43 + ghost + 1) & ~1u);
    TIFF *tif = TIFFOpen(path, "r");
    ck_assert_ptr_nonnull(tif);
    static const uint32_t ws[] = {300, 150, 75, 38}, hs[] = {130, 65, 33, 17};
    ck_assert_int_eq(TIFFNumberOfDirectories(tif), 4);
    uint64_t last_ifd = 0, prev_first_tile = UINT64_MAX;
    float *up = NULL;
    for (int l = 0; l < 4; l++) {
        ck_assert(TIFFSetDirectory(tif, (tdir_t)l));
        uint32_t lw = 0, lh = 0, sub = 0;
        TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &lw);
        TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &lh);
        TIFFGetFieldDefaulted(tif, TIFFTAG_SUBFILETYPE, &sub);
        ck_assert(lw == ws[l] && lh == hs[l]);
        ck_assert_uint_eq(sub, l ? FILETYPE_REDUCEDIMAGE : 0);
        uint64_t ifd = TIFFCurrentDirOffset(tif), first_tile = TIFFGetStrileOffset(tif, 0);
        ck_assert(ifd > last_ifd);
        last_ifd = ifd;
        /* tiles of this level precede those of the bigger level above */
        if (l > 0)
            ck_assert(first_tile < prev_first_tile);
        prev_first_tile = first_tile;
        ck_assert(first_tile > ifd);
        /* every tile between its size and a repeat of its last 4 bytes */
        for (uint32_t t = 0; t < TIFFNumberOfTiles(tif); t++) {
            uint64_t off = TIFFGetStrileOffset(tif, t), cnt = TIFFGetStrileByteCount(tif, t);
            ck_assert(off >= 4 && off + cnt + 4 <= n);
            uint32_t lead = (uint32_t)b[off - 4] | (uint32_t)b[off - 3] << 8 | (uint32_t)b[off - 2] << 16
                          | (uint32_t)b[off - 1] << 24;
            ck_assert_uint_eq(lead, cnt);
            ck_assert_int_eq(memcmp(b + off + cnt - 4, b + off + cnt, 4), 0);
        }
        /* the overview's values: means of the level above */
        float *cur = malloc((size_t)lw * lh * sizeof *cur);
        float *tile = malloc(TIFFTileSize(tif));
        ck_assert(cur && tile);
        for (uint32_t y0 = 0; y0 < lh; y0 += 64)
            for (uint32_t x0 = 0; x0 < lw; x0 += 64) {
                ck_assert(TIFFReadTile(tif, tile, x0, y0, 0, 0) > 0);
                for (uint32_t y = y0; y < lh && y < y0 + 64; y++)
                    for (uint32_t x = x0; x < lw && x < x0 + 64; x++)
                        cur[(size_t)y * lw + x] = tile[(y - y0) * 64 + (x - x0)];
            }
        if (l == 1)
            for (uint32_t y = 0; y < lh; y++)
                for (uint32_t x = 0; x < lw; x++) {
                    double sum = 0;
                    int k = 0;
                    for (uint32_t dy = 0; dy < 2; dy++)
                        for (uint32_t dx = 0; dx < 2; dx++) {
                            size_t i = (size_t)(2 * y + dy) * ws[0] + 2 * x + dx;
                            if (!mask[i]) {
                                sum += up[i];
                                k++;
                            }
                        }
                    ck_assert(cur[(size_t)y * lw + x] == (k ? (float)(sum / k) : -9999.0f));
                }
        free(tile);
        free(up);
        up = cur;
    }
    free(up);
    free(b);
    TIFFClose(tif);
    free(d);
    free(mask);
}
END_TEST

Suite *tiff_suite(void);
Suite *tiff_suite(void)
{
    Suite *s = suite_create("tiff");
    TCase *r = tcase_create("read");
    tcase_add_checked_fixture(r, setup, teardown);
    tcase_set_timeout(r, 60);
    tcase_add_loop_test(r, reads_every_layout, 0, N_LAYOUTS);
    tcase_add_test(r, extreme_values_convert_as_documented);
    tcase_add_test(r, multiband_needs_a_band);
    tcase_add_loop_test(r, unsupported_sample_types_refused, 0,
                        (int)(sizeof unsupported / sizeof unsupported[0]));
    tcase_add_loop_test(r, truncated_files_fail_cleanly, 0, 2);
    tcase_add_test(r, corrupt_bytes_never_crash);
    tcase_add_test(r, not_a_tiff);
    tcase_add_test(r, over_max_bytes_refused_before_allocating);
    tcase_add_loop_test(r, nodata_mask_marks_exactly_the_nodata_cells, 0,
                        (int)(sizeof nodata_cases / sizeof nodata_cases[0]));
    tcase_add_test(r, nodata_declared_but_unused_gives_no_mask);
    tcase_add_test(r, sparse_blocks_read_as_nodata);
    tcase_add_test(r, georef_tags_read_byte_for_byte);
    tcase_add_test(r, libtiff_prints_nothing);
    tcase_add_test(r, concurrent_reads_agree);
    suite_add_tcase(s, r);

    TCase *w = tcase_create("write");
    tcase_add_checked_fixture(w, setup, teardown);
    tcase_set_timeout(w, 60);
    tcase_add_loop_test(w, write_round_trip_bit_exact, 0, (int)(sizeof sizes / sizeof sizes[0]));
    tcase_add_test(w, two_writes_are_byte_identical);
    tcase_add_test(w, writer_nodata_tag);
    tcase_add_loop_test(w, writer_nodata_never_a_valid_value, 0, 8);
    tcase_add_test(w, writer_bigtiff);
    tcase_add_test(w, write_failure_leaves_nothing);
    tcase_add_test(w, write_into_read_only_dir);
    tcase_add_test(w, disk_full_is_eio_and_leaves_nothing);
    tcase_add_loop_test(w, every_creation_option_round_trips, 0, 24);
    tcase_add_loop_test(w, creation_output_same_for_any_thread_count, 0, 4);
    tcase_add_loop_test(w, precision_rounding_bound, 0, 3);
    tcase_add_loop_test(w, parallel_read_same_for_any_thread_count, 0, 2);
    tcase_add_test(w, creation_options_parse);
    tcase_add_test(w, cog_layout);
    suite_add_tcase(s, w);

    TCase *d = tcase_create("dem");
    tcase_add_checked_fixture(d, setup, teardown);
    tcase_set_timeout(d, 120);
    tcase_add_loop_test(d, real_dems_match_sources, 0, (int)(sizeof dems / sizeof dems[0]));
    tcase_add_loop_test(d, gdal_agrees_on_round_trip, 0, (int)(sizeof dems / sizeof dems[0]));
    suite_add_tcase(s, d);
    return s;
}
