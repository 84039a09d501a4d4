/*
 * PNG reader and writer (io/png_read.c, io/png_write.c).  Fixtures are made
 * at run time with libpng directly (write_fixture) in a scratch directory,
 * so each test states the raw samples it expects to read back.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "../../io/atomic.h"
#include "../../io/image.h"
#include "../../io/png_common.h"
#include "test_util.h"

static char dir[1024];

static void setup(void)
{
    er_test_mkdtemp(dir, sizeof dir);
}

static void teardown(void)
{
    chmod(dir, 0700);
    er_test_rmdir(dir);
}

static const char *in_dir(char *buf, size_t n, const char *name)
{
    int k = snprintf(buf, n, "%s/%s", dir, name);
    ck_assert(k > 0 && (size_t)k < n);
    return buf;
}

static void assert_empty_image(const er_image *img)
{
    ck_assert_ptr_null(img->data);
    ck_assert_ptr_null(img->nodata);
    ck_assert_int_eq(img->width, 0);
    ck_assert_int_eq(img->height, 0);
}

/* Number of entries in d other than . and .. (temporaries included). */
static int dir_entries(const char *d)
{
    DIR *dp = opendir(d);
    ck_assert_ptr_nonnull(dp);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(dp);
    return n;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void spill(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static long find_bytes(const unsigned char *hay, size_t n, const void *needle, size_t m)
{
    for (size_t i = 0; m <= n && i + m <= n; i++)
        if (memcmp(hay + i, needle, m) == 0)
            return (long)i;
    return -1;
}

/* A deterministic pseudo-random 32-bit number per index (fixture data). */
static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* ---- fixtures written with libpng directly ---- */

/* How write_fixture stores the mapping text: an iTXt, a tEXt, a zTXt or a
 * compressed iTXt. */
enum { TEXT_ITXT, TEXT_TEXT, TEXT_ZTXT, TEXT_ITXT_Z, TEXT_KINDS };

typedef struct fixture {
    int width, height;
    int color_type, bit_depth, interlace;
    const uint16_t *samples; /* width * height * channels, row-major */
    const char *mapping;     /* text of an erode:height-mapping iTXt, or NULL */
    int trns_grey;           /* >= 0: this grey sample is transparent (tRNS) */
    int mapping_kind;        /* the mapping's chunk: TEXT_ITXT (0), TEXT_TEXT, ... */
    int mapping_after;       /* 1: after the image data (IDAT), 2: before and after */
    int comments;            /* tEXt "Comment" chunks written before the mapping */
} fixture;


static int channels_of(int color_type)
{
    switch (color_type) {
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
    default: return 1;
    }
}

static void write_fixture(const char *path, const fixture *fx)
{
    int ch = channels_of(fx->color_type);
    size_t rowbytes = ((size_t)fx->width * (size_t)ch * (size_t)fx->bit_depth + 7) / 8;
    unsigned char *rows = calloc(rowbytes * (size_t)fx->height, 1);
    png_bytep *ptrs = malloc(sizeof *ptrs * (size_t)fx->height);
    ck_assert(rows && ptrs);
    for (int y = 0; y < fx->height; y++) {
        unsigned char *r = rows + (size_t)y * rowbytes;
        ptrs[y] = r;
        for (int k = 0; k < fx->width * ch; k++) {
            unsigned v = fx->samples[(size_t)y * (size_t)fx->width * (size_t)ch + (size_t)k];
            if (fx->bit_depth == 16) {
                r[2 * k] = (unsigned char)(v >> 8);
                r[2 * k + 1] = (unsigned char)v;
            } else if (fx->bit_depth == 8) {
                r[k] = (unsigned char)v;
            } else { /* packed, first pixel in the high bits */
                int per = 8 / fx->bit_depth, shift = 8 - fx->bit_depth * (k % per + 1);
                r[k / per] |= (unsigned char)(v << shift);
            }
        }
    }
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    ck_assert(png && info);
    if (setjmp(png_jmpbuf(png)))
        ck_abort_msg("libpng failed writing fixture %s", path);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)fx->width, (png_uint_32)fx->height, fx->bit_depth, fx->color_type,
                 fx->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (fx->color_type == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[256];
        for (int i = 0; i < 256; i++)
            pal[i].red = pal[i].green = pal[i].blue = (png_byte)i;
        png_set_PLTE(png, info, pal, 1 << fx->bit_depth);
    }
    if (fx->trns_grey >= 0) {
        png_color_16 t;
        memset(&t, 0, sizeof t);
        t.gray = (png_uint_16)fx->trns_grey;
        png_set_tRNS(png, info, NULL, 0, &t);
    }
    char ckey[] = "Comment", ctxt[] = "filler";
    for (int k = 0; k < fx->comments; k++) {
        png_text text;
        memset(&text, 0, sizeof text);
        text.compression = PNG_TEXT_COMPRESSION_NONE;
        text.key = ckey;
        text.text = ctxt;
        text.text_length = strlen(ctxt);
        png_set_text(png, info, &text, 1);
    }
    char key[] = ER_PNG_KEY_MAPPING, *mtext = NULL;
    png_text text;
    memset(&text, 0, sizeof text);
    if (fx->mapping) {
        static const int compression[TEXT_KINDS] = {PNG_ITXT_COMPRESSION_NONE, PNG_TEXT_COMPRESSION_NONE,
                                                    PNG_TEXT_COMPRESSION_zTXt, PNG_ITXT_COMPRESSION_zTXt};
        text.compression = compression[fx->mapping_kind];
        text.key = key;
        text.text = mtext = strdup(fx->mapping);
        ck_assert_ptr_nonnull(mtext);
        if (fx->mapping_kind == TEXT_ITXT || fx->mapping_kind == TEXT_ITXT_Z)
            text.itxt_length = strlen(fx->mapping);
        else
            text.text_length = strlen(fx->mapping);
        if (fx->mapping_after != 1)
            png_set_text(png, info, &text, 1);
    }
    /* png_write_info writes the chunks set so far, png_write_end those set
     * on the end info after the pixels (libpng manual, "Writing the image
     * data" and "Finishing a sequential write"). */
    png_infop end = png_create_info_struct(png);
    ck_assert_ptr_nonnull(end);
    png_write_info(png, info);
    png_write_image(png, ptrs);
    if (fx->mapping && fx->mapping_after)
        png_set_text(png, end, &text, 1);
    png_write_end(png, end);
    png_destroy_info_struct(png, &end);
    png_destroy_write_struct(&png, &info);
    free(mtext);
    ck_assert_int_eq(fclose(f), 0);
    free(ptrs);
    free(rows);
}

static void read_ok(const char *path, const er_read_opts *opts, er_image *img)
{
    er_error err = {""};
    er_status st = er_png_read(path, opts, img, &err);
    ck_assert_msg(st == ER_OK, "er_png_read(%s): %s", path, err.msg);
    ck_assert_int_eq(img->format, ER_FORMAT_PNG);
}

/* ---- reading ---- */

START_TEST(read_grey8_exact)
{
    enum { W = 256, H = 2 };
    static uint16_t s[W * H];
    for (int x = 0; x < W; x++) {
        s[x] = (uint16_t)x;
        s[W + x] = (uint16_t)(255 - x);
    }
    char p[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY, 8, 0, s, NULL, -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "g8.png"), &fx);
    er_image img;
    read_ok(p, NULL, &img);
    ck_assert_int_eq(img.width, W);
    ck_assert_int_eq(img.height, H);
    ck_assert_ptr_null(img.nodata);
    ck_assert_int_eq(img.png_alpha, 0);
    ck_assert_int_eq(img.has_nodata_value, 0);
    for (int i = 0; i < W * H; i++)
        ck_assert_float_eq(img.data[i], (float)(s[i] / 255.0));
    ck_assert_float_eq(img.data[0], 0.0f);
    ck_assert_float_eq(img.data[255], 1.0f);
    ck_assert_float_eq(img.data[W], 1.0f);
    er_image_free(&img);
}
END_TEST

START_TEST(read_grey16_exact)
{
    enum { W = 7, H = 3 };
    static const uint16_t fixed[] = {0, 1, 2, 32767, 32768, 65534, 65535};
    uint16_t s[W * H];
    for (int i = 0; i < W * H; i++)
        s[i] = i < W ? fixed[i] : (uint16_t)hash32((uint32_t)i);
    char p[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY, 16, 0, s, NULL, -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "g16.png"), &fx);
    er_image img;
    er_read_opts o = {.band = 1};
    read_ok(p, &o, &img);
    ck_assert_int_eq(img.width, W);
    ck_assert_int_eq(img.height, H);
    ck_assert_ptr_null(img.nodata);
    for (int i = 0; i < W * H; i++)
        ck_assert_float_eq(img.data[i], (float)(s[i] / 65535.0));
    ck_assert_float_eq(img.data[0], 0.0f);
    ck_assert_float_eq(img.data[4], (float)(32768.0 / 65535.0));
    ck_assert_float_eq(img.data[6], 1.0f);
    er_image_free(&img);
}
END_TEST

/* Grey + alpha at 8 (_i = 0) and 16 bits (_i = 1): alpha 0 is nodata, any
 * other alpha (even 1) is a valid cell; grey values decode as usual. */
START_TEST(read_grey_alpha_mask)
{
    int depth = _i ? 16 : 8;
    unsigned full = _i ? 65535u : 255u;
    enum { W = 5, H = 4 };
    uint16_t s[W * H * 2];
    uint8_t want[W * H];
    for (int i = 0; i < W * H; i++) {
        s[2 * i] = (uint16_t)((unsigned)(i * 37) % (full + 1));
        s[2 * i + 1] = (uint16_t)(i % 3 == 1 ? 1 : full);
        want[i] = 0;
    }
    s[2 * 0 + 1] = 0;
    s[2 * 13 + 1] = 0;
    s[2 * 19 + 1] = 0;
    want[0] = want[13] = want[19] = 1;
    char p[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY_ALPHA, depth, 0, s, NULL, -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "ga.png"), &fx);
    er_image img;
    read_ok(p, NULL, &img);
    ck_assert_int_eq(img.png_alpha, 1);
    ck_assert_ptr_nonnull(img.nodata);
    for (int i = 0; i < W * H; i++) {
        ck_assert_uint_eq(img.nodata[i], want[i]);
        ck_assert_float_eq(img.data[i], (float)(s[2 * i] / (double)full));
    }
    er_image_free(&img);

    /* The same with no alpha 0 anywhere: alpha noted, no mask. */
    s[0 + 1] = s[2 * 13 + 1] = s[2 * 19 + 1] = (uint16_t)full;
    write_fixture(p, &fx);
    read_ok(p, NULL, &img);
    ck_assert_int_eq(img.png_alpha, 1);
    ck_assert_ptr_null(img.nodata);
    er_image_free(&img);
}
END_TEST

/* 1, 2 and 4-bit grey scale by the original maximum 2^d - 1. */
START_TEST(read_low_bit_depths)
{
    static const int depths[] = {1, 2, 4};
    int d = depths[_i], top = (1 << d) - 1;
    enum { W = 19, H = 3 }; /* rows end mid-byte */
    uint16_t s[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            s[y * W + x] = (uint16_t)((x + 3 * y) % (top + 1));
    char p[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY, d, 0, s, NULL, -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "low.png"), &fx);
    er_image img;
    read_ok(p, NULL, &img);
    ck_assert_int_eq(img.width, W);
    ck_assert_int_eq(img.height, H);
    for (int i = 0; i < W * H; i++)
        ck_assert_float_eq(img.data[i], (float)(s[i] / (double)top));
    ck_assert_ptr_null(img.nodata);
    er_image_free(&img);

    /* A tRNS grey value marks nodata at low depths too. */
    fx.trns_grey = top;
    write_fixture(p, &fx);
    read_ok(p, NULL, &img);
    ck_assert_int_eq(img.png_alpha, 1);
    ck_assert_ptr_nonnull(img.nodata);
    for (int i = 0; i < W * H; i++) {
        ck_assert_uint_eq(img.nodata[i], s[i] == top);
        ck_assert_float_eq(img.data[i], (float)(s[i] / (double)top));
    }
    er_image_free(&img);
}
END_TEST

START_TEST(read_trns_16)
{
    enum { W = 9, H = 4 };
    uint16_t s[W * H];
    for (int i = 0; i < W * H; i++)
        s[i] = (uint16_t)(i % 4 == 0 ? 0 : 1000 * i);
    char p[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY, 16, 0, s, NULL, 0, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "trns.png"), &fx);
    er_image img;
    read_ok(p, NULL, &img);
    ck_assert_ptr_nonnull(img.nodata);
    for (int i = 0; i < W * H; i++) {
        ck_assert_uint_eq(img.nodata[i], i % 4 == 0);
        ck_assert_float_eq(img.data[i], (float)(s[i] / 65535.0));
    }
    er_image_free(&img);
}
END_TEST

/* Adam7 interlacing reads the same values as the plain layout. */
START_TEST(read_interlaced)
{
    enum { W = 33, H = 17 };
    uint16_t s[W * H * 2];
    for (int i = 0; i < W * H; i++) {
        s[2 * i] = (uint16_t)hash32((uint32_t)i + 99);
        s[2 * i + 1] = i % 11 == 0 ? 0 : 65535;
    }
    char p1[PATH_MAX], p2[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY_ALPHA, 16, 0, s, NULL, -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p1, sizeof p1, "plain.png"), &fx);
    fx.interlace = 1;
    write_fixture(in_dir(p2, sizeof p2, "adam7.png"), &fx);
    er_image a, b;
    read_ok(p1, NULL, &a);
    read_ok(p2, NULL, &b);
    ck_assert_int_eq(memcmp(a.data, b.data, sizeof(float) * W * H), 0);
    ck_assert_int_eq(memcmp(a.nodata, b.nodata, W * H), 0);
    for (int i = 0; i < W * H; i++) {
        ck_assert_float_eq(b.data[i], (float)(s[2 * i] / 65535.0));
        ck_assert_uint_eq(b.nodata[i], i % 11 == 0);
    }
    er_image_free(&a);
    er_image_free(&b);
}
END_TEST

/* Colour images (RGB, RGBA, palette, 16-bit RGB) are refused with a reason. */
START_TEST(read_colour_rejected)
{
    static const int types[][2] = {{PNG_COLOR_TYPE_RGB, 8},
                                   {PNG_COLOR_TYPE_RGB_ALPHA, 8},
                                   {PNG_COLOR_TYPE_PALETTE, 8},
                                   {PNG_COLOR_TYPE_RGB, 16}};
    enum { W = 4, H = 3 };
    uint16_t s[W * H * 4];
    for (int i = 0; i < W * H * 4; i++)
        s[i] = (uint16_t)(i % 200);
    char p[PATH_MAX];
    fixture fx = {W, H, types[_i][0], types[_i][1], 0, s, NULL, -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "colour.png"), &fx);
    er_image img;
    er_error err = {""};
    ck_assert_int_eq(er_png_read(p, NULL, &img, &err), ER_EUNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "colour PNG not supported, need greyscale") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, p) != NULL, "%s", err.msg);
    assert_empty_image(&img);
}
END_TEST

/* A noisy 16-bit image (incompressible, so its IDAT is long). */
static size_t noisy_fixture(const char *path, int w, int h, const char *mapping)
{
    uint16_t *s = malloc(sizeof *s * (size_t)w * (size_t)h);
    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < w * h; i++)
        s[i] = (uint16_t)hash32((uint32_t)i);
    fixture fx = {w, h, PNG_COLOR_TYPE_GRAY, 16, 0, s, mapping, -1, TEXT_ITXT, 0, 0};
    write_fixture(path, &fx);
    free(s);
    size_t len;
    free(slurp(path, &len));
    return len;
}

static void expect_format_error(const char *path, const char *why)
{
    er_image img;
    er_error err = {""};
    er_status st = er_png_read(path, NULL, &img, &err);
    ck_assert_msg(st == ER_EFORMAT, "%s: status %d (%s)", why, (int)st, err.msg);
    ck_assert_msg(strncmp(err.msg, "cannot read '", 13) == 0 && strstr(err.msg, path), "%s: %s", why, err.msg);
    ck_assert_msg(strchr(err.msg, '\n') == NULL, "%s: %s", why, err.msg);
    assert_empty_image(&img);
}

/* Cut anywhere (inside the signature, the header, the pixels, before or
 * inside IEND), the file is refused cleanly. */
START_TEST(read_truncated)
{
    char p[PATH_MAX], q[PATH_MAX];
    in_dir(p, sizeof p, "whole.png");
    in_dir(q, sizeof q, "cut.png");
    noisy_fixture(p, 64, 64, NULL);
    size_t len;
    unsigned char *buf = slurp(p, &len);
    size_t cuts[] = {5, 8, 20, 33 + 4, len / 2, len - 12, len - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        spill(q, buf, cuts[k]);
        char why[64];
        snprintf(why, sizeof why, "cut at %zu of %zu", cuts[k], len);
        expect_format_error(q, why);
    }
    spill(q, buf, len / 2);
    er_image img;
    er_error err = {""};
    er_png_read(q, NULL, &img, &err);
    ck_assert_msg(strstr(err.msg, "truncated file") != NULL, "%s", err.msg);
    free(buf);
}
END_TEST

/* One flipped bit in the pixels, the header, or erode's (ancillary) mapping
 * chunk: a CRC mismatch is an error, never silently different heights. */
START_TEST(read_bad_crc)
{
    char p[PATH_MAX], q[PATH_MAX];
    in_dir(p, sizeof p, "whole.png");
    in_dir(q, sizeof q, "bad.png");
    noisy_fixture(p, 64, 64, "min=-5 max=5");
    size_t len;
    unsigned char *buf = slurp(p, &len);
    long idat = find_bytes(buf, len, "IDAT", 4), itxt = find_bytes(buf, len, "iTXt", 4);
    ck_assert(idat > 0 && itxt > 0);
    long at[] = {idat + 4 + 1000, 16 /* IHDR width */, itxt + 4 + 2 /* keyword */,
                 itxt + 4 + (long)strlen(ER_PNG_KEY_MAPPING) + 8 /* text */};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        buf[at[k]] ^= 0x10;
        spill(q, buf, len);
        buf[at[k]] ^= 0x10;
        char why[64];
        snprintf(why, sizeof why, "bit flipped at %ld", at[k]);
        expect_format_error(q, why);
    }
    er_image img;
    er_error err = {""};
    spill(q, buf, len); /* restored: reads */
    read_ok(q, NULL, &img);
    er_image_free(&img);
    buf[idat + 4 + 1000] ^= 0x10;
    spill(q, buf, len);
    er_png_read(q, NULL, &img, &err);
    ck_assert_msg(strstr(err.msg, "damaged PNG: IDAT: CRC error") != NULL, "%s", err.msg);
    free(buf);
}
END_TEST

START_TEST(read_not_png)
{
    char p[PATH_MAX];
    spill(in_dir(p, sizeof p, "text.png"), "hello, world\n", 13);
    expect_format_error(p, "text");
    er_image img;
    er_error err = {""};
    er_png_read(p, NULL, &img, &err);
    ck_assert_msg(strstr(err.msg, "not a PNG file") != NULL, "%s", err.msg);
    spill(p, "", 0);
    expect_format_error(p, "empty");
    spill(p, "II*\0\10\0\0\0\0\0\0\0", 12);
    expect_format_error(p, "tiff");
    ck_assert_int_eq(er_png_read(in_dir(p, sizeof p, "missing.png"), NULL, &img, &err), ER_EIO);
    ck_assert_msg(strstr(err.msg, "missing.png") && strstr(err.msg, strerror(ENOENT)), "%s", err.msg);
    assert_empty_image(&img);
}
END_TEST

/* CRC-32 of the PNG spec, to hand-build chunks. */
static uint32_t crc32_png(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* A header claiming 30000 x 30000 cells (3.6 GB as floats) and an IDAT
 * holding no pixels: refused by max_bytes as out of memory.  Had the reader
 * allocated and started decoding first it would have failed on the missing
 * pixel data instead (ER_EFORMAT), so the status shows the check came
 * first. */
START_TEST(read_oversize_header)
{
    static const unsigned char empty_zlib[8] = {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01};
    unsigned char f[8 + 25 + 20 + 12] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char *ihdr = f + 8;
    put32(ihdr, 13);
    memcpy(ihdr + 4, "IHDR", 4);
    put32(ihdr + 8, 30000);
    put32(ihdr + 12, 30000);
    ihdr[16] = 16; /* depth */
    ihdr[17] = 0;  /* grey */
    put32(ihdr + 21, crc32_png(ihdr + 4, 17));
    unsigned char *idat = ihdr + 25;
    put32(idat, sizeof empty_zlib);
    memcpy(idat + 4, "IDAT", 4);
    memcpy(idat + 8, empty_zlib, sizeof empty_zlib);
    put32(idat + 16, crc32_png(idat + 4, 4 + sizeof empty_zlib));
    unsigned char *iend = idat + 20;
    put32(iend, 0);
    memcpy(iend + 4, "IEND", 4);
    put32(iend + 8, crc32_png(iend + 4, 4));
    char p[PATH_MAX];
    spill(in_dir(p, sizeof p, "huge.png"), f, sizeof f);
    er_read_opts o = {.max_bytes = (size_t)100 << 20};
    er_image img;
    er_error err = {""};
    ck_assert_int_eq(er_png_read(p, &o, &img, &err), ER_ENOMEM);
    ck_assert_msg(strstr(err.msg, "30000x30000") && strstr(err.msg, "limit"), "%s", err.msg);
    assert_empty_image(&img);
    /* The same header over a 3x2 image: no pixel data is damage. */
    put32(ihdr + 8, 3);
    put32(ihdr + 12, 2);
    put32(ihdr + 21, crc32_png(ihdr + 4, 17));
    spill(p, f, sizeof f);
    expect_format_error(p, "header only");
}
END_TEST

/* max_bytes is inclusive: exactly width * height * 4 bytes is allowed. */
START_TEST(read_max_bytes_boundary)
{
    enum { W = 10, H = 10 };
    uint16_t s[W * H] = {0};
    char p[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY, 8, 0, s, NULL, -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "small.png"), &fx);
    er_read_opts o = {.max_bytes = W * H * sizeof(float)};
    er_image img;
    er_error err = {""};
    read_ok(p, &o, &img);
    er_image_free(&img);
    o.max_bytes--;
    ck_assert_int_eq(er_png_read(p, &o, &img, &err), ER_ENOMEM);
    assert_empty_image(&img);
}
END_TEST

START_TEST(read_band)
{
    uint16_t s[4] = {1, 2, 3, 4};
    char p[PATH_MAX];
    fixture fx = {2, 2, PNG_COLOR_TYPE_GRAY, 8, 0, s, NULL, -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "b.png"), &fx);
    er_image img;
    er_error err = {""};
    er_read_opts o = {.band = 2};
    ck_assert_int_eq(er_png_read(p, &o, &img, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "band 2") && strstr(err.msg, "one band"), "%s", err.msg);
    assert_empty_image(&img);
    o.band = -1;
    ck_assert_int_eq(er_png_read(p, &o, &img, &err), ER_EINVAL);
    o.band = 1;
    read_ok(p, &o, &img);
    er_image_free(&img);
}
END_TEST

/* erode's mapping chunk: value = min + raw / rawmax * (max - min), in
 * double, rounded to float; a malformed one is damage. */
START_TEST(read_mapping)
{
    enum { W = 6, H = 1 };
    uint16_t s[W] = {0, 1, 12345, 32768, 65534, 65535};
    char p[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY, 16, 0, s, "min=-10.25 max=30", -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "map.png"), &fx);
    er_image img;
    read_ok(p, NULL, &img);
    for (int i = 0; i < W; i++)
        ck_assert_float_eq(img.data[i], (float)(-10.25 + s[i] / 65535.0 * 40.25));
    ck_assert_float_eq(img.data[0], -10.25f);
    ck_assert_float_eq(img.data[5], 30.0f);
    er_image_free(&img);

    uint16_t s8[W] = {0, 1, 17, 128, 254, 255};
    fixture f8 = {W, H, PNG_COLOR_TYPE_GRAY, 8, 0, s8, "min=100 max=200", -1, TEXT_ITXT, 0, 0};
    write_fixture(p, &f8);
    read_ok(p, NULL, &img);
    for (int i = 0; i < W; i++)
        ck_assert_float_eq(img.data[i], (float)(100 + s8[i] / 255.0 * 100));
    er_image_free(&img);

    static const char *bad[] = {"min=1 max=0", "min=nan max=1", "min=0 max=inf", "min=1",
                                "max=1 min=0", "min=0 max=1 ", "min=0 max=1e39", "", "min= max=1"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        fx.mapping = bad[k];
        write_fixture(p, &fx);
        expect_format_error(p, bad[k]);
    }
}
END_TEST

/* The mapping chunk may follow the image data (the PNG format
 * allows text chunks after IDAT), and may be tEXt, zTXt or a compressed
 * iTXt: it is read all the same, for plain and Adam7 images (_i: kind, then
 * interlace).  Heights that silently read as 0..1 instead would be wrong
 * by the whole range. */
START_TEST(read_mapping_after_idat)
{
    enum { W = 6, H = 3 };
    uint16_t s[W * H];
    for (int i = 0; i < W * H; i++)
        s[i] = i < 2 ? (uint16_t)(i ? 65535 : 0) : (uint16_t)hash32((uint32_t)i);
    char p[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY, 16, _i / TEXT_KINDS, s, "min=-10.25 max=30", -1, _i % TEXT_KINDS, 1, 0};
    write_fixture(in_dir(p, sizeof p, "after.png"), &fx);
    size_t len;
    unsigned char *buf = slurp(p, &len);
    static const char *const types[TEXT_KINDS] = {"iTXt", "tEXt", "zTXt", "iTXt"};
    long at = find_bytes(buf, len, types[_i % TEXT_KINDS], 4), idat = find_bytes(buf, len, "IDAT", 4);
    ck_assert_msg(at > idat && idat > 0, "the fixture's mapping is not after IDAT");
    free(buf);
    er_image img;
    for (int pass = 0; pass < 2; pass++) {
        read_ok(p, NULL, &img);
        for (int i = 0; i < W * H; i++)
            ck_assert_float_eq(img.data[i], (float)(-10.25 + s[i] / 65535.0 * 40.25));
        ck_assert_float_eq(img.data[0], -10.25f);
        ck_assert_float_eq(img.data[1], 30.0f);
        er_image_free(&img);
        /* the same chunk before IDAT reads the same */
        fx.mapping_after = 0;
        write_fixture(p, &fx);
    }
}
END_TEST

/* One mapping before IDAT and another after it: which one holds? Neither;
 * the file is refused like any repeated mapping. */
START_TEST(read_mapping_before_and_after)
{
    uint16_t s[4] = {0, 100, 200, 65535};
    char p[PATH_MAX];
    fixture fx = {2, 2, PNG_COLOR_TYPE_GRAY, 16, 0, s, "min=0 max=100", -1, TEXT_ITXT, 2, 0};
    write_fixture(in_dir(p, sizeof p, "twice.png"), &fx);
    expect_format_error(p, "mapping before and after IDAT");
    er_image img;
    er_error err = {""};
    er_png_read(p, NULL, &img, &err);
    ck_assert_msg(strstr(err.msg, ER_PNG_KEY_MAPPING) != NULL, "%s", err.msg);
}
END_TEST

/* Rewrites the CRC of the chunk whose data starts at data (length n). */
static void fix_crc(unsigned char *data, size_t n)
{
    put32(data + n, crc32_png(data - 4, n + 4));
}

/* Finds erode's mapping chunk of the given type; returns the offset of its
 * data and sets *n to its length. */
static long mapping_chunk(const unsigned char *buf, size_t len, const char *type, size_t *n)
{
    char needle[64];
    snprintf(needle, sizeof needle, "%s%s", type, ER_PNG_KEY_MAPPING);
    long at = find_bytes(buf, len, needle, strlen(needle));
    ck_assert_msg(at >= 4, "no %s chunk", needle);
    *n = (size_t)buf[at - 4] << 24 | (size_t)buf[at - 3] << 16 | (size_t)buf[at - 2] << 8 | buf[at - 1];
    return at + 4;
}

static void expect_mapping_refused(const char *path, const char *why)
{
    expect_format_error(path, why);
    er_image img;
    er_error err = {""};
    er_png_read(path, NULL, &img, &err);
    ck_assert_msg(strstr(err.msg, ER_PNG_KEY_MAPPING) != NULL, "%s: %s", why, err.msg);
}

/* A compressed mapping (zTXt or compressed iTXt, before or after IDAT)
 * whose zlib stream is damaged but whose CRC is right: libpng drops such a
 * chunk with a warning, so without a check the heights read as 0..1.  It
 * must be refused.  _i: bit 0 iTXt, bit 1 after IDAT, bit 2 damage the
 * zlib trailer (Adler-32) rather than its header. */
START_TEST(read_mapping_compressed_damaged)
{
    int itxt = _i & 1, after = (_i >> 1) & 1, trailer = (_i >> 2) & 1;
    uint16_t s[4] = {0, 100, 200, 65535};
    char p[PATH_MAX], q[PATH_MAX];
    fixture fx = {2, 2, PNG_COLOR_TYPE_GRAY, 16, 0, s, "min=0 max=100", -1, itxt ? TEXT_ITXT_Z : TEXT_ZTXT, after, 0};
    write_fixture(in_dir(p, sizeof p, "z.png"), &fx);
    er_image img;
    read_ok(p, NULL, &img); /* undamaged: reads */
    ck_assert_float_eq(img.data[3], 100.0f);
    er_image_free(&img);

    size_t len, n;
    unsigned char *buf = slurp(p, &len);
    long data = mapping_chunk(buf, len, itxt ? "iTXt" : "zTXt", &n);
    /* zTXt: keyword, NUL, method; iTXt: keyword, NUL, flag, method, empty
     * language and translated keyword (two NULs); then the zlib stream. */
    size_t z = strlen(ER_PNG_KEY_MAPPING) + (itxt ? 5 : 2);
    ck_assert(z + 6 < n);
    buf[data + (long)(trailer ? n - 1 : z + 1)] ^= 0x01;
    fix_crc(buf + data, n);
    spill(in_dir(q, sizeof q, "z-bad.png"), buf, len);
    free(buf);
    char why[64];
    snprintf(why, sizeof why, "%s %s IDAT, %s damaged", itxt ? "iTXt" : "zTXt", after ? "after" : "before",
             trailer ? "Adler-32" : "zlib header");
    expect_mapping_refused(q, why);
}
END_TEST

/* A mapping text that inflates past ER_PNG_CHUNK_MAX (libpng's limit on
 * what one chunk may allocate) is dropped by libpng: refused, before or
 * after IDAT (_i), not read as 0..1. */
START_TEST(read_mapping_too_large)
{
    size_t big = ER_PNG_CHUNK_MAX + 1024;
    char *text = malloc(big + 1);
    ck_assert_ptr_nonnull(text);
    memset(text, ' ', big);
    memcpy(text, "min=0 max=100", 13);
    text[big] = '\0';
    uint16_t s[4] = {0, 100, 200, 65535};
    char p[PATH_MAX];
    fixture fx = {2, 2, PNG_COLOR_TYPE_GRAY, 16, 0, s, text, -1, TEXT_ZTXT, _i, 0};
    write_fixture(in_dir(p, sizeof p, "bomb.png"), &fx);
    free(text);
    size_t len;
    free(slurp(p, &len));
    ck_assert_uint_lt(len, 64 * 1024); /* compressed: a small file */
    expect_mapping_refused(p, _i ? "too large after IDAT" : "too large before IDAT");
}
END_TEST

/* libpng keeps the first ER_PNG_TEXT_CHUNKS_MAX text chunks (its chunk
 * cache) and drops later ones with at most a warning: a mapping after them
 * would be lost.  Refused (ER_EUNSUPPORTED: the file is valid, erode just
 * does not read that far), not read as 0..1; one chunk earlier it reads. */
START_TEST(read_mapping_past_chunk_cache)
{
    uint16_t s[4] = {0, 100, 200, 65535};
    char p[PATH_MAX];
    fixture fx = {2, 2, PNG_COLOR_TYPE_GRAY, 16, 0, s, "min=0 max=100", -1, TEXT_TEXT, 0, ER_PNG_TEXT_CHUNKS_MAX};
    write_fixture(in_dir(p, sizeof p, "many.png"), &fx);
    er_image img;
    er_error err = {""};
    ck_assert_int_eq(er_png_read(p, NULL, &img, &err), ER_EUNSUPPORTED);
    ck_assert_msg(strstr(err.msg, p) && strstr(err.msg, "too many text chunks") && strstr(err.msg, ER_PNG_KEY_MAPPING),
                  "%s", err.msg);
    assert_empty_image(&img);
    fx.comments = ER_PNG_TEXT_CHUNKS_MAX - 1;
    write_fixture(p, &fx);
    read_ok(p, NULL, &img);
    ck_assert_float_eq(img.data[3], 100.0f);
    er_image_free(&img);
    /* the comments alone are harmless: libpng drops those past its cache */
    fx.comments = 3 * ER_PNG_TEXT_CHUNKS_MAX;
    fx.mapping = NULL;
    write_fixture(p, &fx);
    read_ok(p, NULL, &img);
    ck_assert_float_eq(img.data[3], 1.0f);
    er_image_free(&img);
}
END_TEST

/* Returns a copy of the PNG buf with `copies` chunks of the given type
 * and data inserted before IEND (so after IDAT); *outlen its length. */
static unsigned char *insert_chunks(const unsigned char *buf, size_t len, const char *type, const unsigned char *data,
                                    size_t n, int copies, size_t *outlen)
{
    long iend = find_bytes(buf, len, "IEND", 4) - 4;
    ck_assert(iend > 0);
    *outlen = len + (size_t)copies * (12 + n);
    unsigned char *out = malloc(*outlen), *o = out + iend;
    ck_assert_ptr_nonnull(out);
    memcpy(out, buf, (size_t)iend);
    for (int k = 0; k < copies; k++, o += 12 + n) {
        put32(o, (uint32_t)n);
        memcpy(o + 4, type, 4);
        memcpy(o + 8, data, n);
        fix_crc(o + 8, n);
    }
    memcpy(o, buf + iend, len - (size_t)iend);
    return out;
}

/* Peak resident memory of this process [bytes]. */
static size_t peak_rss(void)
{
    struct rusage ru;
    ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
    return (size_t)ru.ru_maxrss * 1024;
}

/* A zTXt bomb: 400 "Comment" chunks of 1 KiB that each inflate to nearly
 * ER_PNG_CHUNK_MAX.  libpng keeps every text chunk until the read ends:
 * with its own limits (1000 chunks of 8 MiB) this 400 KiB file cost
 * 3 GiB, a 2 MB one 8 GiB.  Erode's keep it under ER_PNG_TEXT_CHUNKS_MAX *
 * ER_PNG_CHUNK_MAX (64 MiB); the heights read. */
START_TEST(read_text_bomb_bounded)
{
    enum { COPIES = 400 };
    size_t big = ER_PNG_CHUNK_MAX - 256;
    char *t = malloc(big + 1);
    ck_assert_ptr_nonnull(t);
    memset(t, 'x', big);
    t[big] = '\0';
    uint16_t s[4] = {0, 100, 200, 65535};
    char p[PATH_MAX];
    /* libpng compresses the text as the mapping's zTXt; its zlib stream is
     * reused under the keyword "Comment". */
    fixture fx = {2, 2, PNG_COLOR_TYPE_GRAY, 16, 0, s, t, -1, TEXT_ZTXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "bomb.png"), &fx);
    free(t);
    size_t len, n;
    unsigned char *buf = slurp(p, &len);
    long data = mapping_chunk(buf, len, "zTXt", &n);
    size_t skip = strlen(ER_PNG_KEY_MAPPING) + 2, zn = n - skip;
    unsigned char *comment = malloc(9 + zn);
    ck_assert_ptr_nonnull(comment);
    memcpy(comment, "Comment\0\0", 9);
    memcpy(comment + 9, buf + data + (long)skip, zn);
    /* the mapping itself becomes an unrelated "erode:height-mappinh" */
    buf[data + (long)skip - 3] ^= 0x06;
    fix_crc(buf + data, n);
    size_t outlen;
    unsigned char *out = insert_chunks(buf, len, "zTXt", comment, 9 + zn, COPIES, &outlen);
    ck_assert_uint_lt(outlen, 2u << 20);
    spill(p, out, outlen);
    free(out);
    free(comment);
    free(buf);
    size_t before = peak_rss();
    er_image img;
    read_ok(p, NULL, &img);
    ck_assert_float_eq(img.data[3], 1.0f);
    er_image_free(&img);
    size_t grew = peak_rss() - before;
    ck_assert_msg(grew < (size_t)3 * ER_PNG_TEXT_CHUNKS_MAX * ER_PNG_CHUNK_MAX, "peak memory grew by %zu MiB",
                  grew >> 20);
}
END_TEST



/* Another compressed text chunk that is damaged (someone's comment) says
 * nothing about the heights: libpng drops it and the image reads. */
START_TEST(read_other_text_damaged)
{
    uint16_t s[4] = {0, 100, 200, 65535};
    char p[PATH_MAX];
    fixture fx = {2, 2, PNG_COLOR_TYPE_GRAY, 16, 0, s, "min=0 max=100", -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "other.png"), &fx);
    size_t len, outlen;
    unsigned char *buf = slurp(p, &len);
    /* a zTXt "Comment" whose zlib header check fails */
    static const unsigned char ztxt[] = {'C', 'o', 'm', 'm', 'e', 'n', 't', 0, 0, 0x78, 0x9c ^ 1, 0x03, 0, 0, 0, 0, 1};
    unsigned char *out = insert_chunks(buf, len, "zTXt", ztxt, sizeof ztxt, 1, &outlen);
    spill(p, out, outlen);
    free(out);
    free(buf);
    er_image img;
    read_ok(p, NULL, &img);
    ck_assert_float_eq(img.data[3], 100.0f);
    er_image_free(&img);
}
END_TEST


/* The bundled real DEM (tests/data/ATTRIBUTION.md): 1025 x 1025, raw
 * samples 0..43798 with mean 5533.0 (gdalinfo -stats: 5532.99988). */
START_TEST(read_real_dem)
{
    char p[PATH_MAX];
    er_test_path(p, sizeof p, "tests/data/puget_sound_1k_u16.png");
    er_image img;
    read_ok(p, NULL, &img);
    ck_assert_int_eq(img.width, 1025);
    ck_assert_int_eq(img.height, 1025);
    ck_assert_ptr_null(img.nodata);
    ck_assert_int_eq(img.png_alpha, 0);
    long lo = 65536, hi = -1;
    double sum = 0;
    float vmax = -1;
    size_t n = (size_t)img.width * (size_t)img.height;
    for (size_t i = 0; i < n; i++) {
        double r = img.data[i] * 65535.0;
        long ri = lround(r);
        /* float keeps raw / 65535 to 2^-24 relative: raw within 0.004 */
        ck_assert_double_le(fabs(r - (double)ri), 65535.0 * 0x1p-24);
        lo = ri < lo ? ri : lo;
        hi = ri > hi ? ri : hi;
        vmax = img.data[i] > vmax ? img.data[i] : vmax;
        sum += (double)ri;
    }
    ck_assert_int_eq(lo, 0);
    ck_assert_int_eq(hi, 43798);
    ck_assert_float_eq(vmax, (float)(43798 / 65535.0));
    ck_assert_double_le(fabs(sum / (double)n - 5533.0), 0.05);
    er_image_free(&img);
}
END_TEST

/* ---- writing ---- */

static er_layer_out layer_of(int w, int h, const float *data, const uint8_t *nodata)
{
    er_layer_out l;
    memset(&l, 0, sizeof l);
    l.width = w;
    l.height = h;
    l.data = data;
    l.nodata = nodata;
    l.nodata_value = -9999;
    return l;
}

static void write_ok(const char *path, const er_layer_out *l)
{
    er_error err = {""};
    er_status st = er_png_write(path, l, &err);
    ck_assert_msg(st == ER_OK, "er_png_write(%s): %s", path, err.msg);
}

static float ulpf(float x)
{
    x = fabsf(x);
    return nextafterf(x, INFINITY) - x;
}

/* The documented bound (io/png_write.c): half a 16-bit step, plus half an
 * ulp of the float result, plus the double arithmetic's own rounding
 * (a few 2^-53 of the magnitudes involved; 2^-48 is generous). */
static double roundtrip_bound(double min, double max, float back)
{
    return (max - min) / 131070.0 * (1 + 0x1p-40) + 0.5 * ulpf(back) + 0x1p-48 * (fabs(min) + fabs(max));
}

/* Whether the double a - b of two floats is exact: their multiples of the
 * smaller one's ulp fit in 53 bits when the exponents differ by <= 28. */
static int sub_exact(float a, float b)
{
    int ea, eb;
    if (a == 0 || b == 0)
        return 1;
    frexpf(a, &ea);
    frexpf(b, &eb);
    return abs(ea - eb) <= 28;
}

/* Writes l, reads it back and checks every cell against the bound, the
 * nodata mask and the exactness of the range ends. */
static void check_roundtrip(const char *path, const er_layer_out *l)
{
    write_ok(path, l);
    er_image img;
    read_ok(path, NULL, &img);
    ck_assert_int_eq(img.width, l->width);
    ck_assert_int_eq(img.height, l->height);
    size_t n = (size_t)l->width * (size_t)l->height;
    float lo = INFINITY, hi = -INFINITY;
    size_t nodata_cells = 0;
    for (size_t i = 0; i < n; i++) {
        if (l->nodata && l->nodata[i]) {
            nodata_cells++;
            continue;
        }
        lo = fminf(lo, l->data[i]);
        hi = fmaxf(hi, l->data[i]);
    }
    ck_assert_int_eq(img.png_alpha, l->nodata != NULL);
    if (nodata_cells == 0)
        ck_assert_ptr_null(img.nodata);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (l->nodata && l->nodata[i]) {
            ck_assert_uint_eq(img.nodata[i], 1);
            continue;
        }
        if (img.nodata)
            ck_assert_uint_eq(img.nodata[i], 0);
        double e = fabs((double)img.data[i] - (double)l->data[i]);
        double b = roundtrip_bound(lo, hi, img.data[i]);
        ck_assert_msg(e <= b, "cell %zu: wrote %.9g read %.9g (error %.3g > bound %.3g)", i, (double)l->data[i],
                      (double)img.data[i], e, b);
        worst = e > worst ? e : worst;
        /* raw 0 reads min + 0 = min exactly; raw 65535 reads
         * min + (max - min) = max exactly when the subtraction is. */
        if (l->data[i] == lo || (l->data[i] == hi && sub_exact(hi, lo)))
            ck_assert_float_eq(img.data[i], l->data[i]);
    }
    /* Quantisation is really 16-bit: with many distinct values the worst
     * error reaches most of half a step (so the bound is not vacuous). */
    if (hi > lo && n - nodata_cells > 10000)
        ck_assert_double_ge(worst, 0.4 * ((double)hi - lo) / 131070.0);
    er_image_free(&img);
}

START_TEST(roundtrip_real_dem)
{
    char p[PATH_MAX], q[PATH_MAX];
    er_test_path(p, sizeof p, "tests/data/puget_sound_1k_u16.png");
    er_image img;
    read_ok(p, NULL, &img);
    /* In metres (0.1 m per unit), as a run would write it. */
    size_t n = (size_t)img.width * (size_t)img.height;
    float *m = malloc(n * sizeof *m);
    ck_assert_ptr_nonnull(m);
    for (size_t i = 0; i < n; i++)
        m[i] = img.data[i] * 6553.5f;
    er_layer_out l = layer_of(img.width, img.height, m, NULL);
    l.provenance = "{\"erode\":\"test\",\"recipe\":{\"model\":\"mei\"}}";
    check_roundtrip(in_dir(q, sizeof q, "puget.height.png"), &l);
    /* Values read in 0..1 written again as they are. */
    l.data = img.data;
    check_roundtrip(q, &l);
    ck_assert_int_eq(dir_entries(dir), 2); /* the PNG and its .aux.xml */
    free(m);
    er_image_free(&img);
}
END_TEST

/* A ramp through zero with negative values, noise and a nodata stripe
 * (holding NaN, which is allowed in nodata cells). */
static void ramp(float *v, uint8_t *nd, int w, int h)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int i = y * w + x;
            v[i] = -1234.5f + 3.25f * (float)x - 0.7f * (float)y + (float)(hash32((uint32_t)i) % 1000) * 1e-3f;
            if (nd) {
                nd[i] = (uint8_t)(x == 0 || y == h - 1 || (x + y) % 17 == 0);
                if (nd[i])
                    v[i] = NAN;
            }
        }
}

START_TEST(roundtrip_ramp_nodata)
{
    enum { W = 301, H = 203 };
    float *v = malloc(sizeof *v * W * H);
    uint8_t *nd = malloc(W * H);
    ck_assert(v && nd);
    ramp(v, nd, W, H);
    char p[PATH_MAX];
    er_layer_out l = layer_of(W, H, v, nd);
    check_roundtrip(in_dir(p, sizeof p, "ramp.png"), &l);
    ramp(v, NULL, W, H);
    l.nodata = NULL;
    check_roundtrip(p, &l);
    /* A mask with no cell set still writes alpha (and reads no mask). */
    memset(nd, 0, W * H);
    l.nodata = nd;
    check_roundtrip(p, &l);
    free(v);
    free(nd);
}
END_TEST

START_TEST(write_constant_layer)
{
    enum { W = 13, H = 11 };
    float v[W * H];
    uint8_t nd[W * H];
    for (int i = 0; i < W * H; i++) {
        v[i] = 42.125f;
        nd[i] = (uint8_t)(i % 5 == 0);
    }
    char p[PATH_MAX];
    er_layer_out l = layer_of(W, H, v, nd);
    write_ok(in_dir(p, sizeof p, "const.png"), &l);
    size_t len;
    unsigned char *buf = slurp(p, &len);
    ck_assert(find_bytes(buf, len, "min=42.125 max=42.125", 21) > 0);
    free(buf);
    er_image img;
    read_ok(p, NULL, &img);
    for (int i = 0; i < W * H; i++) {
        ck_assert_uint_eq(img.nodata[i], nd[i]);
        if (!nd[i])
            ck_assert_float_eq(img.data[i], 42.125f);
    }
    er_image_free(&img);

    /* Every cell nodata: still a valid file, all masked. */
    memset(nd, 1, sizeof nd);
    write_ok(p, &l);
    read_ok(p, NULL, &img);
    for (int i = 0; i < W * H; i++)
        ck_assert_uint_eq(img.nodata[i], 1);
    er_image_free(&img);
}
END_TEST

/* Same input, same bytes (no tIME, nothing from the clock); the chunks
 * hold the mapping and the provenance verbatim. */
START_TEST(write_deterministic)
{
    enum { W = 120, H = 90 };
    float *v = malloc(sizeof *v * W * H);
    uint8_t *nd = malloc(W * H);
    ck_assert(v && nd);
    ramp(v, nd, W, H);
    char p[PATH_MAX], q[PATH_MAX];
    er_layer_out l = layer_of(W, H, v, nd);
    const char *prov = "{\"erode\":\"0.1.0\",\"recipe\":{\"seed\":1,\"note\":\"h\\u00e9\"}}";
    l.provenance = prov;
    write_ok(in_dir(p, sizeof p, "a.png"), &l);
    sleep(1); /* a timestamp would now differ */
    write_ok(in_dir(q, sizeof q, "b.png"), &l);
    size_t na, nb;
    unsigned char *a = slurp(p, &na), *b = slurp(q, &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert_int_eq(memcmp(a, b, na), 0);
    ck_assert_int_eq(find_bytes(a, na, "tIME", 4), -1);
    ck_assert(find_bytes(a, na, ER_PNG_KEY_PROVENANCE, strlen(ER_PNG_KEY_PROVENANCE)) > 0);
    ck_assert(find_bytes(a, na, prov, strlen(prov)) > 0);
    ck_assert(find_bytes(a, na, ER_PNG_KEY_MAPPING, strlen(ER_PNG_KEY_MAPPING)) > 0);
    /* Overwriting an existing file gives the same bytes again. */
    write_ok(p, &l);
    free(a);
    a = slurp(p, &na);
    ck_assert_int_eq(memcmp(a, b, nb), 0);
    ck_assert_int_eq(dir_entries(dir), 4); /* two PNGs, each with its .aux.xml */
    free(a);
    free(b);
    free(v);
    free(nd);
}
END_TEST

START_TEST(write_non_finite)
{
    enum { W = 6, H = 4 };
    float v[W * H];
    uint8_t nd[W * H] = {0};
    for (int i = 0; i < W * H; i++)
        v[i] = (float)i;
    char p[PATH_MAX];
    in_dir(p, sizeof p, "nf.png");
    er_layer_out l = layer_of(W, H, v, NULL);
    er_error err = {""};
    v[2 * W + 3] = NAN;
    ck_assert_int_eq(er_png_write(p, &l, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "cannot write '") && strstr(err.msg, "non-finite value at (3,2)"), "%s", err.msg);
    v[2 * W + 3] = 1;
    v[0] = -INFINITY;
    ck_assert_int_eq(er_png_write(p, &l, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "non-finite value at (0,0)"), "%s", err.msg);
    ck_assert_int_eq(dir_entries(dir), 0);
    /* In a nodata cell it is fine. */
    nd[0] = 1;
    l.nodata = nd;
    write_ok(p, &l);
    /* An empty layer is refused. */
    l.width = 0;
    ck_assert_int_eq(er_png_write(p, &l, &err), ER_EINVAL);
    ck_assert_int_eq(dir_entries(dir), 2); /* the PNG and its .aux.xml */
}
END_TEST

START_TEST(write_missing_dir)
{
    float v[4] = {1, 2, 3, 4};
    char p[PATH_MAX];
    er_layer_out l = layer_of(2, 2, v, NULL);
    er_error err = {""};
    ck_assert_int_eq(er_png_write(in_dir(p, sizeof p, "nope/x.png"), &l, &err), ER_EIO);
    ck_assert_msg(strstr(err.msg, "nope/x.png") && strstr(err.msg, strerror(ENOENT)), "%s", err.msg);
    ck_assert_int_eq(dir_entries(dir), 0);
}
END_TEST

/* In the child of er_test_in_child: writing to arg (a path in a directory
 * the child may not write to) fails with ER_EIO and says why. */
static int write_refused(void *arg)
{
    const char *p = arg;
    float v[4] = {1, 2, 3, 4};
    er_layer_out l = layer_of(2, 2, v, NULL);
    er_error err = {""};
    if (er_png_write(p, &l, &err) != ER_EIO)
        return 1;
    if (!strstr(err.msg, "permission denied") || !strstr(err.msg, p))
        return 2;
    return 0;
}

/* A directory without write permission.  Root ignores permissions, so the
 * write runs in a child that drops to an unprivileged user. */
START_TEST(write_readonly_dir)
{
    char sub[1100], p[PATH_MAX];
    in_dir(sub, sizeof sub, "ro");
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    snprintf(p, sizeof p, "%s/x.png", sub);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    ck_assert_int_eq(chmod(sub, 0555), 0);
    int rc = er_test_in_child(write_refused, p, 1, 0);
    chmod(sub, 0755);
    ER_SKIP_IF(rc == ER_TEST_NO_USER, "cannot drop root privileges to test permissions");
    ck_assert_msg(rc == 0, "child check %d failed", rc);
    ck_assert_int_eq(dir_entries(sub), 0);
}
END_TEST

/* In the child, under an 8 KiB file size limit: a 256x256 layer of
 * scrambled samples (~128 kB) fails with ER_EIO naming file and reason. */
static int write_over_limit(void *arg)
{
    const char *p = arg;
    enum { W = 256, H = 256 };
    static float v[W * H];
    for (int i = 0; i < W * H; i++)
        v[i] = (float)(hash32((uint32_t)i) % 65536);
    er_layer_out l = layer_of(W, H, v, NULL);
    er_error err = {""};
    if (er_png_write(p, &l, &err) != ER_EIO)
        return 3;
    if (!strstr(err.msg, "full.png") || !strstr(err.msg, "file too large"))
        return 4;
    return 0;
}

/* A full disk, simulated with RLIMIT_FSIZE in a child (SIGXFSZ ignored, so
 * write() fails with EFBIG): ER_EIO naming the reason, nothing left. */
START_TEST(write_disk_full)
{
    char p[PATH_MAX];
    in_dir(p, sizeof p, "full.png");
    int rc = er_test_in_child(write_over_limit, p, 0, 8192);
    ck_assert_msg(rc == 0, "child check %d failed", rc);
    ck_assert_int_eq(dir_entries(dir), 0);
}
END_TEST

/* GDAL as an independent reader: our file is a 16-bit single-band PNG of
 * the right size whose samples span 0..65535 (min and max of the valid
 * cells map to the ends); with nodata, band 2 is alpha.  -stats, not -mm:
 * GDAL 3.6.2's -mm reports a UInt16 maximum of 57265 for the first of these
 * files, whose sample 65535 sits in the last column of row 0 (GDAL's own
 * ReadAsArray and -stats see it); PAM off so no .aux.xml is left behind. */
START_TEST(gdal_reads_written_png)
{
    ER_SKIP_IF(system("command -v gdalinfo >/dev/null 2>&1 && command -v jq >/dev/null 2>&1") != 0,
               "gdalinfo or jq not on PATH");
    enum { W = 37, H = 23 };
    float v[W * H];
    uint8_t nd[W * H];
    char p[PATH_MAX], cmd[2 * PATH_MAX], out[256] = "";
    er_layer_out l = layer_of(W, H, v, nd);
    static const char *want[] = {"[37,23,1,\"UInt16\",\"Gray\",0,65535]",
                                 "[37,23,2,\"UInt16\",\"Alpha\",0,65535]"};
    for (int k = 0; k < 2; k++) {
        ramp(v, k ? nd : NULL, W, H);
        l.nodata = k ? nd : NULL;
        write_ok(in_dir(p, sizeof p, "gdal.png"), &l);
        snprintf(cmd, sizeof cmd,
                 "gdalinfo --config GDAL_PAM_ENABLED NO -json -stats '%s' 2>/dev/null | jq -c '[.size[0], "
                 ".size[1], (.bands|length), .bands[0].type, .bands[-1].colorInterpretation, .bands[0].minimum, "
                 ".bands[0].maximum]'",
                 p);
        FILE *f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(out, sizeof out, f));
        pclose(f);
        out[strcspn(out, "\n")] = '\0';
        /* jq prints 0.0 as 0 and 65535.0 as 65535 */
        ck_assert_str_eq(out, want[k]);
    }
}
END_TEST

/* ---- sidecars (io/png_sidecar.c) ---- */

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Every kind of GeoTIFF tag, with XML's specials and control bytes in the
 * strings: the georef a second pass must get back byte for byte. */
static void full_georef(er_georef *g)
{
    static double scale[] = {30.0, 30.0, 0.0};
    static double tie[] = {0, 0, 0, 500000.125, 4500000.0625, 0};
    static uint16_t keys[] = {1, 1, 0, 4, 1024, 0, 1, 1, 1025, 0, 1, 1, 1026, 34737, 12, 0, 3072, 0, 1, 32618};
    static double doubles[] = {0.1, 1e300, -0.0};
    static char ascii[] = "UTM <18N> & \"x\"|\ttab\r\n|";
    static char nodata[] = "-9999";
    static char md[] = "<GDALMetadata>\n  <Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">"
                       "water &amp; more</Item>\n</GDALMetadata>\n";
    memset(g, 0, sizeof *g);
    g->pixel_scale = scale;
    g->n_pixel_scale = 3;
    g->tiepoints = tie;
    g->n_tiepoints = 6;
    g->geokeys = keys;
    g->n_geokeys = sizeof keys / sizeof keys[0];
    g->geodoubles = doubles;
    g->n_geodoubles = 3;
    g->geoascii = ascii;
    g->gdal_nodata = nodata;
    g->gdal_metadata = md;
}

static void assert_doubles_same(const double *a, size_t na, const double *b, size_t nb)
{
    ck_assert_uint_eq(na, nb);
    ck_assert(na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

/* A georeferenced layer gets its PAM file and world file; reading the PNG
 * gives back every tag byte for byte and the declared nodata value; the
 * values are those of a PNG without sidecars. */
START_TEST(sidecars_round_trip)
{
    enum { W = 31, H = 17 };
    float v[W * H];
    uint8_t nd[W * H];
    ramp(v, nd, W, H);
    er_georef g;
    full_georef(&g);
    er_layer_out l = layer_of(W, H, v, nd);
    l.georef = &g;
    char p[PATH_MAX], aux[PATH_MAX], world[PATH_MAX];
    write_ok(in_dir(p, sizeof p, "geo.height.png"), &l);
    ck_assert(er_png_sidecar_paths(p, aux, sizeof aux, world, sizeof world));
    ck_assert_str_eq(strrchr(aux, '/'), "/geo.height.png.aux.xml");
    ck_assert_str_eq(strrchr(world, '/'), "/geo.height.pgw");
    ck_assert(exists(aux) && exists(world));
    ck_assert_int_eq(dir_entries(dir), 3);

    er_image img;
    read_ok(p, NULL, &img);
    assert_doubles_same(img.georef.pixel_scale, img.georef.n_pixel_scale, g.pixel_scale, g.n_pixel_scale);
    assert_doubles_same(img.georef.tiepoints, img.georef.n_tiepoints, g.tiepoints, g.n_tiepoints);
    assert_doubles_same(img.georef.geodoubles, img.georef.n_geodoubles, g.geodoubles, g.n_geodoubles);
    ck_assert_ptr_null(img.georef.transformation);
    ck_assert_uint_eq(img.georef.n_geokeys, g.n_geokeys);
    ck_assert(memcmp(img.georef.geokeys, g.geokeys, g.n_geokeys * sizeof *g.geokeys) == 0);
    ck_assert_str_eq(img.georef.geoascii, g.geoascii);
    ck_assert_str_eq(img.georef.gdal_nodata, g.gdal_nodata);
    ck_assert_str_eq(img.georef.gdal_metadata, g.gdal_metadata);
    ck_assert_int_eq(img.has_nodata_value, 1);
    ck_assert(img.nodata_value == -9999.0);
    double dx, dy;
    ck_assert(er_georef_cell_size(&img.georef, W, H, &dx, &dy) && dx == 30.0 && dy == 30.0);

    /* The same pixels without the sidecars: the same values and mask. */
    char q[PATH_MAX];
    l.georef = NULL;
    write_ok(in_dir(q, sizeof q, "plain.png"), &l);
    er_image plain;
    read_ok(q, NULL, &plain);
    ck_assert(memcmp(plain.data, img.data, sizeof v) == 0);
    ck_assert(memcmp(plain.nodata, img.nodata, sizeof nd) == 0);
    ck_assert_int_eq(plain.has_nodata_value, 0);
    ck_assert(isnan(plain.nodata_value));
    ck_assert_ptr_null(plain.georef.geokeys);
    er_image_free(&plain);
    er_image_free(&img);
}
END_TEST

/* What GDAL is told: the EPSG code, the geotransform, Area, band 1's
 * description, Offset = min and Scale = (max - min) / 65535 of the iTXt
 * mapping; no NoDataValue (alpha is the mask).  The world file holds the
 * centre of the top-left cell. */
START_TEST(sidecar_contents)
{
    float v[4] = {10.0f, 20.0f, 30.0f, 75.5f};
    er_georef g;
    full_georef(&g);
    er_layer_out l = layer_of(2, 2, v, NULL);
    l.georef = &g;
    char p[PATH_MAX], aux[PATH_MAX], world[PATH_MAX];
    write_ok(in_dir(p, sizeof p, "c.png"), &l);
    ck_assert(er_png_sidecar_paths(p, aux, sizeof aux, world, sizeof world));
    size_t n;
    char *x = (char *)slurp(aux, &n);
    x[n] = '\0';
    ck_assert_ptr_nonnull(strstr(x, "<SRS>EPSG:32618</SRS>"));
    ck_assert_ptr_nonnull(strstr(x, "<GeoTransform>500000.125, 30, 0, 4500000.0625, 0, -30</GeoTransform>"));
    ck_assert_ptr_nonnull(strstr(x, "<MDI key=\"AREA_OR_POINT\">Area</MDI>"));
    ck_assert_ptr_nonnull(strstr(x, "<Description>water &amp; more</Description>"));
    ck_assert_ptr_nonnull(strstr(x, "<Offset>10</Offset>"));
    char want[64];
    snprintf(want, sizeof want, "<Scale>%.17g</Scale>", 65.5 / 65535.0);
    ck_assert_ptr_nonnull(strstr(x, want));
    ck_assert_ptr_null(strstr(x, "NoDataValue"));
    free(x);
    x = (char *)slurp(world, &n);
    x[n] = '\0';
    ck_assert_str_eq(x, "30\n0\n0\n-30\n500015.125\n4499985.0625\n");
    free(x);
}
END_TEST

/* No georeferencing (none, or only GDAL_NODATA / GDAL_METADATA): the PAM
 * file all the same, with the band's scale and offset (GDAL reads heights,
 * not codes) and nothing that places the raster; no world file, and one an
 * earlier output left is removed with the output set: kept when the set is
 * abandoned, gone once it commits. */
START_TEST(sidecars_without_georef)
{
    float v[4] = {1, 2, 3, 4};
    er_georef g;
    memset(&g, 0, sizeof g);
    static char md[] = "<GDALMetadata>\n</GDALMetadata>\n";
    g.gdal_metadata = md;
    er_layer_out l = layer_of(2, 2, v, NULL);
    char p[PATH_MAX], aux[PATH_MAX], world[PATH_MAX];
    in_dir(p, sizeof p, "n.png");
    ck_assert(er_png_sidecar_paths(p, aux, sizeof aux, world, sizeof world));
    for (int k = 0; k < 2; k++) {
        l.georef = k ? &g : NULL;
        write_ok(p, &l);
        ck_assert_int_eq(dir_entries(dir), 2);
        size_t n;
        char *x = (char *)slurp(aux, &n);
        x[n] = '\0';
        ck_assert_ptr_nonnull(strstr(x, "<Offset>1</Offset>"));
        ck_assert_ptr_nonnull(strstr(x, "<Scale>4.5777065690089265e-05</Scale>")); /* 3 / 65535 */
        ck_assert_ptr_null(strstr(x, "GeoTransform"));
        ck_assert_ptr_null(strstr(x, ER_PNG_DOMAIN));
        free(x);
    }
    er_error err = {""};
    for (int commit = 0; commit < 2; commit++) {
        spill(world, "1\n0\n0\n-1\n0\n0\n", 14);
        er_atomic_set_begin();
        write_ok(p, &l);
        ck_assert(exists(aux) && exists(world));
        if (commit) {
            ck_assert_int_eq(er_atomic_set_commit(NULL, NULL, &err), ER_OK);
            ck_assert(exists(aux) && !exists(world));
        } else {
            er_atomic_set_abort();
            ck_assert(exists(aux) && exists(world));
        }
    }
    ck_assert_int_eq(dir_entries(dir), 2);
}
END_TEST

/* A PAM file without erode's domain (GDAL's statistics, a world file's
 * companion) changes nothing; a damaged domain, or one for a raster of
 * another size, is refused naming the sidecar. */
START_TEST(sidecar_read_errors)
{
    float v[6] = {1, 2, 3, 4, 5, 6};
    er_layer_out l = layer_of(3, 2, v, NULL);
    char p[PATH_MAX], aux[PATH_MAX], world[PATH_MAX];
    write_ok(in_dir(p, sizeof p, "e.png"), &l);
    ck_assert(er_png_sidecar_paths(p, aux, sizeof aux, world, sizeof world));
    static const char foreign[] = "<PAMDataset><PAMRasterBand band=\"1\"><Metadata><MDI key=\"STATISTICS_MINIMUM\">0"
                                  "</MDI></Metadata></PAMRasterBand></PAMDataset>\n";
    spill(aux, foreign, sizeof foreign - 1);
    er_image img;
    read_ok(p, NULL, &img);
    ck_assert_ptr_null(img.georef.pixel_scale);
    ck_assert_ptr_null(img.georef.geokeys);
    er_image_free(&img);

    static const struct {
        const char *items;
        const char *why;
    } bad[] = {
        {"<MDI key=\"RASTER_SIZE\">4 2</MDI>", "is for a 4x2 raster, the PNG is 3x2"},
        {"<MDI key=\"MODEL_PIXEL_SCALE\">1 1 0</MDI>", "has no " ER_PNG_DOMAIN " RASTER_SIZE"},
        {"<MDI key=\"RASTER_SIZE\">3 2</MDI><MDI key=\"MODEL_TIEPOINT\">0 0 x</MDI>",
         "has a bad " ER_PNG_DOMAIN " MODEL_TIEPOINT"},
        {"<MDI key=\"RASTER_SIZE\">3 2</MDI><MDI key=\"GEO_KEY_DIRECTORY\">1 1 0 70000</MDI>",
         "has a bad " ER_PNG_DOMAIN " GEO_KEY_DIRECTORY"},
        {"<MDI key=\"RASTER_SIZE\">3 2</MDI><MDI key=\"GEO_ASCII_PARAMS\">a &bogus; b</MDI>",
         "has a bad " ER_PNG_DOMAIN " GEO_ASCII_PARAMS"},
        {"<MDI key=\"RASTER_SIZE\">3 2</MDI><MDI key=\"GDAL_NODATA\">none</MDI>",
         "has a bad " ER_PNG_DOMAIN " GDAL_NODATA"},
        {"<MDI key=\"RASTER_SIZE\">3 2</MDI><MDI key=\"MODEL_TIEPOINT\">0 0 0 1 2 0</MDI>"
         "<MDI key=\"MODEL_TIEPOINT\">0 0 0 1 2 0</MDI>", "has a bad " ER_PNG_DOMAIN " MODEL_TIEPOINT"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char text[1024], want[3 * PATH_MAX];
        int n = snprintf(text, sizeof text, "<PAMDataset>\n  <Metadata domain=\"%s\">%s</Metadata>\n</PAMDataset>\n",
                         ER_PNG_DOMAIN, bad[k].items);
        spill(aux, text, (size_t)n);
        er_error err = {""};
        memset(&img, 0xa5, sizeof img);
        ck_assert_int_eq(er_png_read(p, NULL, &img, &err), ER_EFORMAT);
        assert_empty_image(&img);
        ck_assert_ptr_null(img.georef.pixel_scale);
        snprintf(want, sizeof want, "cannot read '%s': its sidecar '%s' %s", p, aux, bad[k].why);
        ck_assert_str_eq(err.msg, want);
    }
    /* Unknown keys of a later erode are ignored. */
    static const char later[] = "<PAMDataset><Metadata domain=\"" ER_PNG_DOMAIN "\"><MDI key=\"RASTER_SIZE\">3 2"
                                "</MDI><MDI key=\"SOMETHING_NEW\">?</MDI></Metadata></PAMDataset>";
    spill(aux, later, sizeof later - 1);
    read_ok(p, NULL, &img);
    er_image_free(&img);
}
END_TEST

/* A PNG that GDAL georeferenced, not erode: the PAM file's GeoTransform
 * and SRS (WKT1, as GDAL writes it, and WKT2), band 1's Scale, Offset and
 * NoDataValue, or a world file under any of GDAL's three names; erode's
 * own mapping chunk wins over the PAM's scale, its own domain over the
 * PAM's georeferencing. */
START_TEST(sidecar_gdal_pam)
{
    enum { W = 3, H = 2 };
    static const uint16_t smp[W * H] = {0, 10, 20, 30, 40, 50};
    char p[PATH_MAX], aux[PATH_MAX], world[PATH_MAX];
    fixture fx = {W, H, PNG_COLOR_TYPE_GRAY, 16, 0, smp, NULL, -1, TEXT_ITXT, 0, 0};
    write_fixture(in_dir(p, sizeof p, "g.png"), &fx);
    ck_assert(er_png_sidecar_paths(p, aux, sizeof aux, world, sizeof world));
    static const char wkt1[] =
        "<PAMDataset>\n  <SRS dataAxisToSRSAxisMapping=\"1,2\">PROJCS[&quot;NAD83 / New York Long Island (ftUS)&quot;,"
        "GEOGCS[&quot;NAD83&quot;,UNIT[&quot;degree&quot;,0.0174532925199433,AUTHORITY[&quot;EPSG&quot;,&quot;9122&quot;]],"
        "AUTHORITY[&quot;EPSG&quot;,&quot;4269&quot;]],PARAMETER[&quot;false_easting&quot;,984250],"
        "UNIT[&quot;US survey foot&quot;,0.304800609601219,AUTHORITY[&quot;EPSG&quot;,&quot;9003&quot;]],"
        "AXIS[&quot;Easting&quot;,EAST],AUTHORITY[&quot;EPSG&quot;,&quot;2263&quot;]]</SRS>\n"
        "  <GeoTransform>  1.0e+06,  1.0e+01,  0,  2.0e+05,  0, -1.0e+01</GeoTransform>\n"
        "  <PAMRasterBand band=\"1\">\n    <NoDataValue>50</NoDataValue>\n    <Offset>100</Offset>\n"
        "    <Scale>0.1</Scale>\n  </PAMRasterBand>\n</PAMDataset>\n";
    spill(aux, wkt1, sizeof wkt1 - 1);
    er_image img;
    double dx, dy, m[6];
    char crs[32];
    read_ok(p, NULL, &img);
    for (int i = 0; i < W * H - 1; i++)
        ck_assert_float_eq(img.data[i], (float)(smp[i] * 0.1 + 100));
    ck_assert_ptr_nonnull(img.nodata);
    ck_assert(img.nodata[W * H - 1] && !img.nodata[0]);
    ck_assert(img.has_nodata_value && img.nodata_value == 50 && img.data[W * H - 1] == 50);
    ck_assert(er_georef_cell_size(&img.georef, W, H, &dx, &dy));
    ck_assert(dx == 10 * 1200.0 / 3937.0 && dy == dx); /* EPSG 9003's exact factor */
    ck_assert(er_georef_epsg(&img.georef, crs, sizeof crs));
    ck_assert_str_eq(crs, "EPSG:2263");
    ck_assert(er_georef_affine(&img.georef, m) && m[0] == 1e6 && m[3] == 2e5 && m[1] == 10 && m[5] == -10);
    er_image_free(&img);

    /* WKT2 with the unit in its axes, a geographic CRS; a world file
     * (.wld) places it: corner = the top-left cell's centre - half a cell */
    static const char wkt2[] = "<PAMDataset><SRS>GEOGCRS[\"WGS 84\",DATUM[\"World Geodetic System 1984\"],"
                               "CS[ellipsoidal,2],AXIS[\"latitude\",north,ANGLEUNIT[\"degree\",0.0174532925199433]],"
                               "AXIS[\"longitude\",east,ANGLEUNIT[\"degree\",0.0174532925199433]],ID[\"EPSG\",4326]]"
                               "</SRS></PAMDataset>";
    spill(aux, wkt2, sizeof wkt2 - 1);
    char wld[PATH_MAX];
    ck_assert(er_png_world_path(p, 2, wld, sizeof wld));
    ck_assert_str_eq(strrchr(wld, '/'), "/g.wld");
    spill(wld, "0.001\n0\n0\n-0.001\n10.0005\n45.9995\n", 34);
    read_ok(p, NULL, &img);
    ck_assert_float_eq(img.data[1], (float)(10.0 / 65535.0)); /* no scale: 0..1 */
    ck_assert(er_georef_epsg(&img.georef, crs, sizeof crs));
    ck_assert_str_eq(crs, "EPSG:4326");
    ck_assert(er_georef_affine(&img.georef, m));
    ck_assert_double_eq_tol(m[0], 10.0, 1e-12);
    ck_assert_double_eq_tol(m[3], 46.0, 1e-12);
    ck_assert(er_georef_cell_size(&img.georef, W, H, &dx, &dy));
    ck_assert(dx > 77 && dx < 78 && dy > 111 && dy < 112);
    er_image_free(&img);

    /* an SRS erode cannot read (a local CRS, an empty or broken node)
     * gives the placement no unit */
    static const char *const odd[] = {"LOCAL_CS[\"x\",UNIT[\"metre\",1]]", "PROJCS[]", "PROJCS[\"a\",UNIT[",
                                      "PROJCS[\"a\"\"\",AXIS[\"E\",EAST],UNIT[\"m\",]]", "EPSG:32618"};
    for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
        char text[512];
        const char *why = NULL;
        int tn = snprintf(text, sizeof text, "<PAMDataset><SRS>%s</SRS><GeoTransform>0,1,0,0,0,-1</GeoTransform>"
                          "</PAMDataset>", odd[k]);
        spill(aux, text, (size_t)tn);
        read_ok(p, NULL, &img);
        ck_assert(er_georef_affine(&img.georef, m));
        ck_assert_int_eq(er_georef_cell_size_why(&img.georef, W, H, &dx, &dy, &why), -1);
        er_image_free(&img);
    }

    /* a world file without a CRS places the raster but gives no cell
     * size: its numbers may be degrees; .pgw comes before .wld */
    remove(aux);
    spill(world, "30\n0\n0\n-30\n1000.5\n2000.5\n", 26);
    read_ok(p, NULL, &img);
    ck_assert(er_georef_affine(&img.georef, m) && m[0] == 985.5 && m[3] == 2015.5);
    const char *why = NULL;
    ck_assert_int_eq(er_georef_cell_size_why(&img.georef, W, H, &dx, &dy, &why), -1);
    ck_assert_ptr_nonnull(strstr(why, "no CRS"));
    er_image_free(&img);
    spill(world, "30\n0\n0\n-30\n1000\n", 17);
    er_error err = {""};
    ck_assert_int_eq(er_png_read(p, NULL, &img, &err), ER_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err.msg, "is not six numbers"));
    remove(world);
    remove(wld);

    /* erode's own output: its mapping chunk and domain win over the PAM's
     * scale and geotransform */
    float v[6] = {1, 2, 3, 4, 5, 6};
    er_layer_out l = layer_of(W, H, v, NULL);
    write_ok(p, &l);
    size_t n;
    char *x = (char *)slurp(aux, &n);
    x[n] = '\0';
    ck_assert_ptr_nonnull(strstr(x, "<Scale>"));
    free(x);
    static const char edited[] = "<PAMDataset><GeoTransform>0, 5, 0, 0, 0, -5</GeoTransform><PAMRasterBand band=\"1\">"
                                 "<Offset>1000</Offset><Scale>7</Scale></PAMRasterBand></PAMDataset>";
    spill(aux, edited, sizeof edited - 1);
    read_ok(p, NULL, &img);
    for (int i = 0; i < W * H; i++)
        ck_assert_double_le(fabs(img.data[i] - v[i]), 5.0 / 131070 + 1e-6);
    er_image_free(&img);
    static const char bad[] = "<PAMDataset><PAMRasterBand band=\"1\"><Scale>x</Scale></PAMRasterBand></PAMDataset>";
    spill(aux, bad, sizeof bad - 1);
    ck_assert_int_eq(er_png_read(p, NULL, &img, &err), ER_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad band Scale"));
}
END_TEST

Suite *png_suite(void);
Suite *png_suite(void)
{
    Suite *s = suite_create("png");
    TCase *r = tcase_create("read");
    tcase_add_checked_fixture(r, setup, teardown);
    tcase_add_test(r, read_grey8_exact);
    tcase_add_test(r, read_grey16_exact);
    tcase_add_loop_test(r, read_grey_alpha_mask, 0, 2);
    tcase_add_loop_test(r, read_low_bit_depths, 0, 3);
    tcase_add_test(r, read_trns_16);
    tcase_add_test(r, read_interlaced);
    tcase_add_loop_test(r, read_colour_rejected, 0, 4);
    tcase_add_test(r, read_truncated);
    tcase_add_test(r, read_bad_crc);
    tcase_add_test(r, read_not_png);
    tcase_add_test(r, read_oversize_header);
    tcase_add_test(r, read_max_bytes_boundary);
    tcase_add_test(r, read_band);
    tcase_add_test(r, read_mapping);
    tcase_add_loop_test(r, read_mapping_after_idat, 0, 2 * TEXT_KINDS);
    tcase_add_test(r, read_mapping_before_and_after);
    tcase_add_loop_test(r, read_mapping_compressed_damaged, 0, 8);
    tcase_add_loop_test(r, read_mapping_too_large, 0, 2);
    tcase_add_test(r, read_mapping_past_chunk_cache);
    tcase_add_test(r, read_other_text_damaged);
    tcase_add_test(r, read_text_bomb_bounded);
    tcase_add_test(r, read_real_dem);
    suite_add_tcase(s, r);

    TCase *w = tcase_create("write");
    tcase_add_checked_fixture(w, setup, teardown);
    tcase_set_timeout(w, 60);
    tcase_add_test(w, roundtrip_real_dem);
    tcase_add_test(w, roundtrip_ramp_nodata);
    tcase_add_test(w, write_constant_layer);
    tcase_add_test(w, write_deterministic);
    tcase_add_test(w, write_non_finite);
    tcase_add_test(w, write_missing_dir);
    tcase_add_test(w, write_readonly_dir);
    tcase_add_test(w, write_disk_full);
    tcase_add_test(w, gdal_reads_written_png);
    tcase_add_test(w, sidecars_round_trip);
    tcase_add_test(w, sidecar_contents);
    tcase_add_test(w, sidecars_without_georef);
    tcase_add_test(w, sidecar_read_errors);
    tcase_add_test(w, sidecar_gdal_pam);
    suite_add_tcase(s, w);
    return s;
}
