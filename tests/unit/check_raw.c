/*
 * RAW writer (io/raw_write.c): r16 and r32 bytes as Unity and Unreal read
 * them (little-endian, top row first, no header) and the JSON sidecar a
 * reader needs to get the heights back.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>

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
    ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "a.r32"), &l, 32, &err), ER_OK);
    size_t n;
    uint8_t *b = slurp(p, &n);
    ck_assert_uint_eq(n, (size_t)W * H * 4);
    for (int i = 0; i < W * H; i++) {
        uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
                     (uint32_t)b[4 * i + 3] << 24;
        float f;
        memcpy(&f, &u, 4);
        if (nodata[i])
            ck_assert(isnan(f));
        else
            ck_assert_msg(memcmp(&f, &values[i], 4) == 0, "cell %d: %.9g != %.9g", i, f, values[i]);
    }
    free(b);
    cJSON *j = sidecar(p);
    check_common(j, "r32");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "type")->valuestring, "float32");
    ck_assert_float_eq(num(j, "max"), 1234.5);
    cJSON_Delete(j);
}
END_TEST

/* height = min + code * scale within one 16-bit step of the input, the
 * range's ends exact codes 0 and 65535, nodata code 0. */
START_TEST(r16_within_a_step)
{
    char p[1200];
    er_layer_out l = layer();
    er_error err = {0};
    ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "a.r16"), &l, 16, &err), ER_OK);
    size_t n;
    uint8_t *b = slurp(p, &n);
    ck_assert_uint_eq(n, (size_t)W * H * 2);
    cJSON *j = sidecar(p);
    check_common(j, "r16");
    double lo = num(j, "min"), hi = num(j, "max"), scale = num(j, "scale");
    ck_assert_float_eq(lo, values[0]);
    ck_assert_float_eq(hi, 1234.5);
    ck_assert_double_eq_tol(scale, (hi - lo) / 65535.0, 1e-12 * hi);
    int seen_top = 0, seen_bottom = 0;
    for (int i = 0; i < W * H; i++) {
        unsigned code = b[2 * i] | (unsigned)b[2 * i + 1] << 8;
        if (nodata[i]) {
            ck_assert_uint_eq(code, 0);
            continue;
        }
        seen_top |= code == 65535;
        seen_bottom |= code == 0;
        ck_assert_msg(fabs(lo + code * scale - values[i]) <= scale, "cell %d: code %u", i, code);
    }
    ck_assert(seen_top && seen_bottom);
    free(b);
    cJSON_Delete(j);
}
END_TEST

/* A flat layer has no range: every code 0, scale 0, min = max. */
START_TEST(r16_flat)
{
    static const float flat[6] = {5, 5, 5, 5, 5, 5};
    char p[1200];
    er_layer_out l = {3, 2, flat, NULL, 0, NULL, NULL};
    er_error err = {0};
    ck_assert_int_eq(er_raw_write(in_dir(p, sizeof p, "f.r16"), &l, 16, &err), ER_OK);
    size_t n;
    uint8_t *b = slurp(p, &n);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(b[i], 0);
    free(b);
    cJSON *j = sidecar(p);
    ck_assert_float_eq(num(j, "min"), 5.0);
    ck_assert_float_eq(num(j, "max"), 5.0);
    ck_assert_float_eq(num(j, "scale"), 0.0);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "provenance")));
    cJSON_Delete(j);
}
END_TEST

START_TEST(r16_code_ends)
{
    ck_assert_uint_eq(er_raw_r16_code(-3.0f, -3.0, 9.0), 0);
    ck_assert_uint_eq(er_raw_r16_code(9.0f, -3.0, 9.0), 65535);
    ck_assert_uint_eq(er_raw_r16_code(3.0f, -3.0, 9.0), 32768); /* 32767.5 rounds to even */
    ck_assert_uint_eq(er_raw_r16_code(100.0f, -3.0, 9.0), 65535);
    ck_assert_uint_eq(er_raw_r16_code(NAN, -3.0, 9.0), 0);
}
END_TEST

START_TEST(missing_dir_writes_nothing)
{
    char p[1200];
    er_layer_out l = layer();
    er_error err = {0};
    ck_assert_int_ne(er_raw_write(in_dir(p, sizeof p, "no/such.r16"), &l, 16, &err), ER_OK);
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
    tcase_add_test(t, r16_within_a_step);
    tcase_add_test(t, r16_flat);
    tcase_add_test(t, r16_code_ends);
    tcase_add_test(t, missing_dir_writes_nothing);
    suite_add_tcase(s, t);
    return s;
}
