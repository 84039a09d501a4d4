/*
 * RAW writer (io/raw_write.c): r16 and r32 bytes as Unity, Unreal and
 * Terrain3D read them (little-endian, no header, either row order), and
 * the JSON sidecar a reader needs to get the heights back, read the way
 * the sidecar says.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>

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

static const char *in_dir(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    uint8_t *b = malloc(*n + 1);
    ck_assert_uint_eq(fread(b, 1, *n, f), *n);
    b[*n] = 0;
    fclose(f);
    return b;
}

static cJSON *sidecar(const char *raw)
{
    char p[1300];
    size_t n;
    snprintf(p, sizeof p, "%s.json", raw);
    uint8_t *t = slurp(p, &n);
    cJSON *j = cJSON_Parse((const char *)t);
    ck_assert_msg(j != NULL, "sidecar is not JSON: %s", t);
    free(t);
    return j;
}

static double num(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    ck_assert_msg(cJSON_IsNumber(v), "sidecar lacks number '%s'", key);
    return v->valuedouble;
}

static const char *str(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    ck_assert_msg(cJSON_IsString(v), "sidecar lacks string '%s'", key);
    return v->valuestring;
}

static int flag(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    ck_assert_msg(cJSON_IsBool(v), "sidecar lacks boolean '%s'", key);
    return cJSON_IsTrue(v);
}

/* A 31 x 17 ramp with a peak, negative heights and two nodata cells. */
enum { W = 31, H = 17 };
static float values[W * H];
static uint8_t nodata[W * H];
static const char *const prov = "{\"erode\":\"test\",\"recipe\":{\"seed\":7}}";

static er_layer_out layer(void)
{
    for (int i = 0; i < W * H; i++) {
        values[i] = -12.5f + 0.731f * (float)(i % W) + 3.3f * (float)(i / W) + (float)sin(i) * 0.01f;
        nodata[i] = i == 40 || i == 300;
    }
    values[77] = 1234.5f;
    return (er_layer_out){W, H, values, nodata, -9999.0, NULL, prov};
}

static void check_common(const cJSON *j, const char *format)
{
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "format")->valuestring, format);
    ck_assert_int_eq((int)num(j, "width"), W);
    ck_assert_int_eq((int)num(j, "height"), H);
    ck_assert_int_eq((int)num(j, "nodata_cells"), 2);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "byte_order")->valuestring, "little-endian");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "provenance");
    cJSON *want = cJSON_Parse(prov);
    ck_assert(cJSON_Compare(p, want, 1));
    cJSON_Delete(want);
}

START_TEST(r32_exact)
{
    char p[1200];
    er_layer_out l = layer();
    er_error err = {0};
    ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "a.r32"), &l, 32, ER_ROWS_TOP_DOWN, &err), ER_OK);
    size_t n;
    uint8_t *b = slurp(p, &n);
    ck_assert_uint_eq(n, (size_t)W * H * 4);
    for (int i = 0; i < W * H; i++) {
        uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
                     (uint32_t)b[4 * i + 3] << 24;
        const float f = er_bits_float(u);
        if (nodata[i])
            ck_assert(isnan(f));
        else
            ck_assert_msg(memcmp(&f, &values[i], 4) == 0, "cell %d: %.9g != %.9g", i, f, values[i]);
    }
    free(b);
    cJSON *j = sidecar(p);
    check_common(j, "r32");
    ck_assert_str_eq(str(j, "type"), "float32");
    ck_assert_str_eq(str(j, "nodata"), "NaN");
    ck_assert_str_eq(str(j, "rows"), "top row first");
    ck_assert_float_eq(num(j, "max"), 1234.5);
    cJSON_Delete(j);
}
END_TEST

/* Reads an r16 back as its sidecar says (rows, nodata, decode) and checks
 * it against the layer: every valid cell a code from 1 that decodes
 * within half a step, every nodata cell (masked or not finite) code 0,
 * nodata_cells their number.  Returns the number of valid cells. */
static size_t check_r16(const char *path, const er_layer_out *l)
{
    size_t n, w = (size_t)l->width, h = (size_t)l->height;
    uint8_t *b = slurp(path, &n);
    ck_assert_uint_eq(n, w * h * 2);
    cJSON *j = sidecar(path);
    ck_assert_str_eq(str(j, "type"), "uint16");
    const cJSON *nd = cJSON_GetObjectItemCaseSensitive(j, "nodata");
    ck_assert_msg(cJSON_IsNumber(nd) && nd->valuedouble == 0, "nodata is not the number 0");
    ck_assert_ptr_nonnull(strstr(str(j, "decode"), "min + (code - 1) * scale"));
    int bottom_up = strcmp(str(j, "rows"), "bottom row first") == 0;
    ck_assert(bottom_up || strcmp(str(j, "rows"), "top row first") == 0);
    double lo = num(j, "min"), hi = num(j, "max"), scale = num(j, "scale");
    ck_assert_double_eq(scale, hi > lo ? (hi - lo) / 65534 : 0.0);
    size_t valid = 0, nodata_cells = 0;
    for (size_t r = 0; r < h; r++)
        for (size_t x = 0; x < w; x++) {
            size_t i = (bottom_up ? h - 1 - r : r) * w + x, k = 2 * (r * w + x);
            unsigned code = b[k] | (unsigned)b[k + 1] << 8;
            if ((l->nodata && l->nodata[i]) || !isfinite(l->data[i])) {
                ck_assert_msg(code == 0, "nodata cell %zu: code %u", i, code);
                nodata_cells++;
                continue;
            }
            ck_assert_msg(code != 0, "valid cell %zu (%.9g) written as nodata", i, l->data[i]);
            double back = lo + (code - 1.0) * scale;
            ck_assert_msg(fabs(back - l->data[i]) <= scale / 2 + 1e-12 * fmax(fabs(lo), fabs(hi)),
                          "cell %zu: %.9g reads %.9g (code %u, step %g)", i, l->data[i], back, code, scale);
            valid++;
        }
    ck_assert_uint_eq((size_t)num(j, "nodata_cells"), nodata_cells);
    free(b);
    cJSON_Delete(j);
    return valid;
}

/* height = min + (code - 1) * scale within half a step, the range's ends
 * codes 1 and 65535, nodata code 0 and no valid cell 0. */
START_TEST(r16_within_half_a_step)
{
    char p[1200];
    er_layer_out l = layer();
    er_error err = {0};
    ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "a.r16"), &l, 16, ER_ROWS_TOP_DOWN, &err), ER_OK);
    cJSON *j = sidecar(p);
    check_common(j, "r16");
    ck_assert_float_eq(num(j, "min"), values[0]);
    ck_assert_float_eq(num(j, "max"), 1234.5);
    cJSON_Delete(j);
    ck_assert_uint_eq(check_r16(p, &l), W * H - 2);
    size_t n;
    uint8_t *b = slurp(p, &n);
    ck_assert_uint_eq(b[0] | b[1] << 8, 1);           /* the minimum */
    ck_assert_uint_eq(b[154] | b[155] << 8, 65535);   /* cell 77, the maximum */
    ck_assert_uint_eq(b[80] | b[81] << 8, 0);         /* cell 40, nodata */
    free(b);
}
END_TEST

/* A flat layer has no range: every valid code 1, scale 0, so every cell
 * decodes to min exactly; nodata stays 0. */
START_TEST(r16_flat)
{
    static const float flat[6] = {5, 5, 5, 5, 5, 5};
    static const uint8_t nd[6] = {0, 0, 0, 0, 1, 0};
    char p[1200];
    er_layer_out l = {3, 2, flat, nd, 0, NULL, NULL};
    er_error err = {0};
    ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "f.r16"), &l, 16, ER_ROWS_TOP_DOWN, &err), ER_OK);
    size_t n;
    uint8_t *b = slurp(p, &n);
    for (size_t i = 0; i < 6; i++)
        ck_assert_uint_eq(b[2 * i] | b[2 * i + 1] << 8, nd[i] ? 0 : 1);
    free(b);
    cJSON *j = sidecar(p);
    ck_assert_float_eq(num(j, "min"), 5.0);
    ck_assert_float_eq(num(j, "max"), 5.0);
    ck_assert_float_eq(num(j, "scale"), 0.0);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "provenance")));
    cJSON_Delete(j);
    ck_assert_uint_eq(check_r16(p, &l), 5);
}
END_TEST

/* Nothing but nodata: every code 0, all cells counted. */
START_TEST(r16_all_nodata)
{
    static const float v[4] = {1, NAN, 3, 4};
    static const uint8_t nd[4] = {1, 0, 1, 1};
    char p[1200];
    er_layer_out l = {2, 2, v, nd, 0, NULL, NULL};
    er_error err = {0};
    ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "n.r16"), &l, 16, ER_ROWS_TOP_DOWN, &err), ER_OK);
    ck_assert_uint_eq(check_r16(p, &l), 0);
}
END_TEST

START_TEST(r16_code_ends)
{
    ck_assert_uint_eq(er_raw_r16_code(-3.0f, -3.0, 9.0), 1);
    ck_assert_uint_eq(er_raw_r16_code(9.0f, -3.0, 9.0), 65535);
    ck_assert_uint_eq(er_raw_r16_code(3.0f, -3.0, 9.0), 32768); /* 1 + 32767 */
    ck_assert_uint_eq(er_raw_r16_code(0.5f, 0.0, 65534.0), 1); /* half a step: ties to even */
    ck_assert_uint_eq(er_raw_r16_code(1.5f, 0.0, 65534.0), 3);
    ck_assert_uint_eq(er_raw_r16_code(65533.5f, 0.0, 65534.0), 65535);
    ck_assert_uint_eq(er_raw_r16_code(100.0f, -3.0, 9.0), 65535);
    ck_assert_uint_eq(er_raw_r16_code(-100.0f, -3.0, 9.0), 1);
    ck_assert_uint_eq(er_raw_r16_code(5.0f, 5.0, 5.0), 1);
    ck_assert_uint_eq(er_raw_r16_code(NAN, -3.0, 9.0), 0);
    ck_assert_uint_eq(er_raw_r16_code(INFINITY, -3.0, 9.0), 0);
}
END_TEST

/* The DEMs with nodata and without: the Luxembourg one (int16, sea and
 * border nodata; in the shared data) and the bundled Vermont one, their
 * heights written as r16 in both row orders and read back as the sidecar
 * says. */
static const char *const dems[] = {"luxembourg_elev_int16_wgs84.tif", "whitebox_dem_f32_utm18n.tif"};

START_TEST(r16_dems)
{
    char src[1200], p[1200];
    const char *path = _i == 0 ? er_test_shared_dem(src, sizeof src, dems[_i])
                               : er_test_path(src, sizeof src, "tests/data/whitebox_dem_f32_utm18n.tif");
    ER_SKIP_IF(!path, "the shared DEM luxembourg_elev_int16_wgs84.tif is not there");
    er_image img = {0};
    er_error err = {0};
    ck_assert_int_eq(er_image_read(path, NULL, &img, &err), ER_OK);
    er_layer_out l = {img.width, img.height, img.data, img.nodata, 0, NULL, NULL};
    size_t n_nodata = 0;
    for (size_t i = 0; img.nodata && i < (size_t)img.width * (size_t)img.height; i++)
        n_nodata += img.nodata[i];
    ck_assert_msg(_i == 1 || n_nodata > 0, "%s has no nodata cell: the case proves nothing", dems[_i]);
    for (int rows = 0; rows < 2; rows++) {
        ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, rows ? "d-up.r16" : "d.r16"), &l, 16, (er_row_order)rows,
                                      &err), ER_OK);
        ck_assert_uint_eq(check_r16(p, &l), (size_t)img.width * (size_t)img.height - n_nodata);
    }
    er_image_free(&img);
}
END_TEST

/* ROW_ORDER=BOTTOM_UP is TOP_DOWN's file with its rows reversed, for r16
 * and r32, and the sidecar says which. */
START_TEST(bottom_up_is_rows_reversed)
{
    int bits = _i ? 32 : 16;
    char a[1200], b[1200];
    er_layer_out l = layer();
    er_error err = {0};
    ck_assert_int_eq(er_raw_write(in_dir(a, sizeof a, "td.raw"), &l, bits, ER_ROWS_TOP_DOWN, &err), ER_OK);
    ck_assert_int_eq(er_raw_write(in_dir(b, sizeof b, "bu.raw"), &l, bits, ER_ROWS_BOTTOM_UP, &err), ER_OK);
    size_t na, nb, row = (size_t)W * (size_t)bits / 8;
    uint8_t *ta = slurp(a, &na), *tb = slurp(b, &nb);
    ck_assert_uint_eq(na, nb);
    for (size_t r = 0; r < H; r++)
        ck_assert_msg(memcmp(ta + r * row, tb + (H - 1 - r) * row, row) == 0, "row %zu", r);
    ck_assert(memcmp(ta, tb, na) != 0);
    free(ta);
    free(tb);
    cJSON *ja = sidecar(a), *jb = sidecar(b);
    ck_assert_str_eq(str(ja, "rows"), "top row first");
    ck_assert_str_eq(str(jb, "rows"), "bottom row first");
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    if (bits == 16)
        check_r16(b, &l);
}
END_TEST

/* The engine hints are true: Unity's Import Raw is offered for square
 * 2^n+1 maps of 33 to 4097 cells in 16 bits only, with Flip Vertically
 * set when the file is top row first (Unity reads the first row as the
 * south edge) and the terrain height and y that give the heights back;
 * otherwise the sidecar says why and names the nearest size. */
START_TEST(engine_hints)
{
    enum { S = 33 };
    static float sq[S * S];
    for (int i = 0; i < S * S; i++)
        sq[i] = 10.0f + (float)(i % 7) * 0.5f;
    er_layer_out square = {S, S, sq, NULL, 0, NULL, NULL}, odd = layer();
    er_error err = {0};
    char p[1200];
    for (int rows = 0; rows < 2; rows++) {
        ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "sq.r16"), &square, 16, (er_row_order)rows, &err), ER_OK);
        cJSON *j = sidecar(p);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "unity");
        ck_assert(flag(u, "importable"));
        ck_assert_int_eq((int)num(u, "depth"), 16);
        ck_assert_str_eq(str(u, "byte_order"), "Windows");
        ck_assert_int_eq((int)num(u, "resolution"), S);
        ck_assert_int_eq(flag(u, "flip_vertically"), rows == 0);
        double lo = num(j, "min"), scale = num(j, "scale");
        /* Unity: y + code / 65536 * height; the codes' own decoding */
        for (unsigned code = 1; code <= 65535; code += 4681)
            ck_assert_double_eq_tol(num(u, "terrain_y") + code / 65536.0 * num(u, "terrain_height"),
                                    lo + (code - 1) * scale, 1e-6);
        const cJSON *ue = cJSON_GetObjectItemCaseSensitive(j, "unreal");
        for (unsigned code = 1; code <= 65535; code += 4681)
            ck_assert_double_eq_tol((num(ue, "z_location_cm") + (code - 32768.0) * num(ue, "z_scale") / 128) / 100,
                                    lo + (code - 1) * scale, 1e-6);
        const cJSON *t3 = cJSON_GetObjectItemCaseSensitive(j, "terrain3d");
        const cJSON *range = cJSON_GetObjectItemCaseSensitive(t3, "r16_height_range");
        double r0 = cJSON_GetArrayItem(range, 0)->valuedouble, r1 = cJSON_GetArrayItem(range, 1)->valuedouble;
        for (unsigned code = 1; code <= 65535; code += 4681)
            ck_assert_double_eq_tol(r0 + code / 65535.0 * (r1 - r0), lo + (code - 1) * scale, 1e-6);
        cJSON_Delete(j);
    }
    /* 31 x 17: not square; the nearest size to its larger side is 33 */
    ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "odd.r16"), &odd, 16, ER_ROWS_TOP_DOWN, &err), ER_OK);
    cJSON *j = sidecar(p);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "unity");
    ck_assert(!flag(u, "importable"));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(u, "depth"));
    ck_assert_ptr_nonnull(strstr(str(u, "why"), "31 x 17"));
    ck_assert_int_eq((int)num(u, "nearest_resolution"), 33);
    ck_assert_ptr_nonnull(strstr(str(u, "resample"), "gdalwarp -ts 33 33"));
    cJSON_Delete(j);
    /* float32: neither Unity nor Unreal imports it */
    ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "sq.r32"), &square, 32, ER_ROWS_TOP_DOWN, &err), ER_OK);
    j = sidecar(p);
    ck_assert(!flag(cJSON_GetObjectItemCaseSensitive(j, "unity"), "importable"));
    ck_assert(!flag(cJSON_GetObjectItemCaseSensitive(j, "unreal"), "importable"));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "unity"), "depth"));
    cJSON_Delete(j);
}
END_TEST

/* Unity's sizes: square 2^n+1 from 33 to 4097, and nothing else; the
 * nearest size to the larger side otherwise, within 33..4097. */
START_TEST(unity_sizes)
{
    static const struct { int w, h, ok, nearest; } c[] = {
        {33, 33, 1, 33}, {257, 257, 1, 257}, {17, 17, 0, 33}, {256, 256, 0, 257}, {237, 188, 0, 257},
        {188, 237, 0, 257}, {100, 100, 0, 129}, {96, 96, 0, 65}, {97, 97, 0, 129}, {1, 1, 0, 33},
        {4097, 1, 0, 4097}, {9000, 2, 0, 4097}, {33, 32, 0, 33}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        float *big = calloc((size_t)c[k].w * (size_t)c[k].h, sizeof *big);
        ck_assert_ptr_nonnull(big);
        er_layer_out l = {c[k].w, c[k].h, big, NULL, 0, NULL, NULL};
        er_error err = {0};
        char p[1200];
        ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "s.r16"), &l, 16, ER_ROWS_TOP_DOWN, &err), ER_OK);
        cJSON *j = sidecar(p);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "unity");
        ck_assert_msg(flag(u, "importable") == c[k].ok, "%d x %d", c[k].w, c[k].h);
        ck_assert_int_eq((int)num(u, c[k].ok ? "resolution" : "nearest_resolution"), c[k].nearest);
        cJSON_Delete(j);
        free(big);
    }
}
END_TEST

/* The engines' sizes (one table): Unity square 2^n+1, Unreal's
 * recommended sides paired when they share a component size; neither
 * takes 1024^2 or 237 x 188, and the nearest sizes each takes. */
START_TEST(engine_sizes)
{
    static const struct { int w, h; unsigned fit; int unity, uw, uh; } c[] = {
        {1024, 1024, 0, 1025, 1009, 1009},
        {237, 188, 0, 257, 253, 127},
        {1025, 1025, ER_ENGINE_UNITY, 1025, 1009, 1009},
        {1009, 1009, ER_ENGINE_UNREAL, 1025, 1009, 1009},
        {2017, 1009, ER_ENGINE_UNREAL, 2049, 2017, 1009},
        {127, 4033, ER_ENGINE_UNREAL, 4097, 127, 4033},
        {8129, 8129, ER_ENGINE_UNREAL, 4097, 8129, 8129},
        {8129, 4033, 0, 4097, 8129, 8129},
        {505, 505, ER_ENGINE_UNREAL, 513, 505, 505},
        {513, 505, 0, 513, 505, 505},
        {33, 33, ER_ENGINE_UNITY, 33, 127, 127},
        {4097, 4097, ER_ENGINE_UNITY, 4097, 4033, 4033},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        int unity, uw, uh;
        ck_assert_msg(er_raw_engines_fit(c[k].w, c[k].h) == c[k].fit, "%d x %d", c[k].w, c[k].h);
        er_raw_engines_nearest(c[k].w, c[k].h, &unity, &uw, &uh);
        ck_assert_msg(unity == c[k].unity && uw == c[k].uw && uh == c[k].uh, "%d x %d: %d, %d x %d", c[k].w,
                      c[k].h, unity, uw, uh);
    }
}
END_TEST

/* The sidecar's verdicts follow the table: a 127^2 r16 is Unreal's and
 * not Unity's, with the scales in metres; 129^2 the other way round. */
START_TEST(engine_verdicts)
{
    static float v[129 * 129];
    for (int i = 0; i < 129 * 129; i++)
        v[i] = 50.0f + (float)(i % 13);
    er_error err = {0};
    char p[1200];
    for (int n = 127; n <= 129; n += 2) {
        er_layer_out l = {n, n, v, NULL, 0, NULL, NULL};
        er_raw_create co = {16, ER_ROWS_TOP_DOWN, {0, 0.0f}, 2.0, 3.0, 1, 1.0, 0.0};
        ck_assert_int_eq(er_raw_write_co(in_dir(p, sizeof p, "v.r16"), &l, &co, &err), ER_OK);
        cJSON *j = sidecar(p);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "unity"), *ue = cJSON_GetObjectItemCaseSensitive(j, "unreal");
        ck_assert_int_eq(flag(u, "importable"), n == 129);
        ck_assert_int_eq(flag(ue, "importable"), n == 127);
        ck_assert_double_eq(num(ue, "x_scale"), 200.0);
        ck_assert_double_eq(num(ue, "y_scale"), 300.0);
        if (n == 127) {
            ck_assert_ptr_nonnull(strstr(str(u, "why"), "33, 65, 129, 257, 513, 1025, 2049, 4097"));
        } else {
            ck_assert_ptr_nonnull(strstr(str(ue, "why"), "127, 253, 505, 1009, 2017, 4033, 8129"));
            ck_assert_int_eq((int)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ue, "nearest_size"), 0)->valuedouble, 127);
            ck_assert_double_eq(num(u, "terrain_width"), 128 * 2.0);
            ck_assert_double_eq(num(u, "terrain_length"), 128 * 3.0);
        }
        cJSON_Delete(j);
    }
}
END_TEST

/* Metres: cell size and extent as given, heights through the vertical
 * mapping (a thickness without the offset; a flow area none), and every
 * engine number in those metres: Unity's code / 65536 * height + y and
 * Unreal's z + (code - 32768) * Z scale / 128 cm give the metres of
 * min + (code - 1) * scale. */
START_TEST(sidecar_metres)
{
    er_layer_out l = layer();
    er_error err = {0};
    char p[1200];
    er_raw_create co = {16, ER_ROWS_TOP_DOWN, {0, 0.0f}, 30.0, 25.0, 1, 0.3048, 100.0};
    ck_assert_int_eq(er_raw_write_co(in_dir(p, sizeof p, "m.r16"), &l, &co, &err), ER_OK);
    cJSON *j = sidecar(p);
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(j, "cell_size_m"), *ex = cJSON_GetObjectItemCaseSensitive(j, "extent_m"),
                *hr = cJSON_GetObjectItemCaseSensitive(j, "height_range_m");
    ck_assert_double_eq(cJSON_GetArrayItem(cs, 0)->valuedouble, 30.0);
    ck_assert_double_eq(cJSON_GetArrayItem(cs, 1)->valuedouble, 25.0);
    ck_assert_double_eq(cJSON_GetArrayItem(ex, 0)->valuedouble, W * 30.0);
    ck_assert_double_eq(cJSON_GetArrayItem(ex, 1)->valuedouble, H * 25.0);
    double lo = num(j, "min"), hi = num(j, "max"), scale = num(j, "scale");
    ck_assert_double_eq_tol(cJSON_GetArrayItem(hr, 0)->valuedouble, lo * 0.3048 + 100.0, 1e-9);
    ck_assert_double_eq_tol(cJSON_GetArrayItem(hr, 1)->valuedouble, hi * 0.3048 + 100.0, 1e-9);
    const cJSON *ue = cJSON_GetObjectItemCaseSensitive(j, "unreal");
    for (unsigned code = 1; code <= 65535; code += 4681)
        ck_assert_double_eq_tol((num(ue, "z_location_cm") + (code - 32768.0) * num(ue, "z_scale") / 128) / 100,
                                (lo + (code - 1) * scale) * 0.3048 + 100.0, 1e-5);
    cJSON_Delete(j);
    /* no cell size, a flow area: null, never a made-up metre */
    er_raw_create area = {32, ER_ROWS_TOP_DOWN, {0, 0.0f}, 0.0, 0.0, 0, 1.0, 0.0};
    ck_assert_int_eq(er_raw_write_co(p, &l, &area, &err), ER_OK);
    j = sidecar(p);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "cell_size_m")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "extent_m")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "height_range_m")));
    cJSON_Delete(j);
}
END_TEST

/* --co NODATA_FILL: nodata cells hold the fill as a valid value (r32
 * exactly; r16 a code within half a step, the fill joining the range), no
 * nodata left, and the sidecar counts the filled cells. */
START_TEST(nodata_fill)
{
    er_layer_out l = layer();
    values[5] = INFINITY; /* not finite: nodata in RAW, filled too */
    er_error err = {0};
    char p[1200];
    int bits = _i ? 32 : 16;
    er_raw_create co = {bits, ER_ROWS_TOP_DOWN, {1, -40.5f}, 1.0, 1.0, 1, 1.0, 0.0};
    ck_assert_int_eq(er_raw_write_co(in_dir(p, sizeof p, "f.raw"), &l, &co, &err), ER_OK);
    cJSON *j = sidecar(p);
    ck_assert_int_eq((int)num(j, "nodata_cells"), 0);
    ck_assert_int_eq((int)num(j, "filled_cells"), 3);
    ck_assert_double_eq(num(j, "nodata_fill"), -40.5);
    ck_assert_double_eq(num(j, "min"), -40.5);
    size_t n;
    uint8_t *b = slurp(p, &n);
    ck_assert_uint_eq(n, (size_t)(W * H * bits / 8));
    for (int i = 0; i < W * H; i++) {
        int fill = nodata[i] || i == 5;
        double got;
        if (bits == 32) {
            uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
                         (uint32_t)b[4 * i + 3] << 24;
            got = er_bits_float(u);
        } else {
            unsigned code = (unsigned)b[2 * i] | (unsigned)b[2 * i + 1] << 8;
            ck_assert_uint_ne(code, 0);
            got = num(j, "min") + (code - 1) * num(j, "scale");
        }
        double want = fill ? -40.5 : values[i];
        ck_assert_msg(fabs(got - want) <= (bits == 32 ? 0.0 : num(j, "scale") / 2 + 1e-9), "cell %d: %g, want %g", i,
                      got, want);
    }
    free(b);
    cJSON_Delete(j);
}
END_TEST

START_TEST(missing_dir_writes_nothing)
{
    char p[1200];
    er_layer_out l = layer();
    er_error err = {0};
    ck_assert_int_ne(er_raw_write(in_dir(p, sizeof p, "no/such.r16"), &l, 16, ER_ROWS_TOP_DOWN, &err), ER_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "no/such.r16"));
}
END_TEST

Suite *raw_suite(void);
Suite *raw_suite(void)
{
    Suite *s = suite_create("raw");
    TCase *t = tcase_create("write");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, r32_exact);
    tcase_add_test(t, r16_within_half_a_step);
    tcase_add_test(t, r16_flat);
    tcase_add_test(t, r16_all_nodata);
    tcase_add_test(t, r16_code_ends);
    tcase_add_loop_test(t, r16_dems, 0, 2);
    tcase_add_loop_test(t, bottom_up_is_rows_reversed, 0, 2);
    tcase_add_test(t, engine_hints);
    tcase_add_test(t, unity_sizes);
    tcase_add_test(t, missing_dir_writes_nothing);
    tcase_add_test(t, engine_sizes);
    tcase_add_test(t, engine_verdicts);
    tcase_add_test(t, sidecar_metres);
    tcase_add_loop_test(t, nodata_fill, 0, 2);
    suite_add_tcase(s, t);
    return s;
}
