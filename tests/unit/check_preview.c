/*
 * Shaded-relief previews (core/preview.c) and the RGB PNG writer
 * (er_png_write_rgb in io/png_write.c).  Maps are built here from closed
 * forms, so each test states the property it expects: a flat map is one
 * colour, slopes facing the light are brighter, the picture of a map
 * mirrored about the light's diagonal is the mirrored picture, overlays only
 * touch their cells, and the bytes never depend on the thread count.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../../core/preview.h"
#include "../../io/image.h"
#include "test_util.h"

/* A map and its layers, owned by the test. */
typedef struct map {
    er_preview_in in;
    float *h, *water;
    uint8_t *wall;
} map;

static map map_new(int w, int h, double cell)
{
    map m;
    memset(&m, 0, sizeof m);
    m.h = calloc((size_t)w * (size_t)h, sizeof *m.h);
    ck_assert_ptr_nonnull(m.h);
    m.in.width = w;
    m.in.height = h;
    m.in.elevation = m.h;
    m.in.cell_x = m.in.cell_y = cell;
    return m;
}

static void map_free(map *m)
{
    free(m->h);
    free(m->water);
    free(m->wall);
}

static uint8_t *render(const er_preview_in *in, int *w, int *h)
{
    er_error err;
    ck_assert_int_eq(er_preview_size(in, 0, w, h, &err), ER_OK);
    uint8_t *rgb = malloc((size_t)*w * (size_t)*h * 3);
    ck_assert_ptr_nonnull(rgb);
    er_status st = er_preview_render(in, rgb, &err);
    ck_assert_msg(st == ER_OK, "render: %s", err.msg);
    return rgb;
}

static uint8_t *render_scaled(const er_preview_in *in, const er_preview_scale *sc)
{
    er_error err;
    int w, h;
    ck_assert_int_eq(er_preview_size(in, 0, &w, &h, &err), ER_OK);
    uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
    ck_assert_ptr_nonnull(rgb);
    er_status st = er_preview_render_scaled(in, sc, rgb, &err);
    ck_assert_msg(st == ER_OK, "render: %s", err.msg);
    return rgb;
}

static const uint8_t *px(const uint8_t *rgb, int w, int x, int y)
{
    return rgb + ((size_t)y * (size_t)w + (size_t)x) * 3;
}

static int sum3(const uint8_t *p)
{
    return p[0] + p[1] + p[2];
}

/* A flat map has no slope anywhere, edges included: one colour. */
START_TEST(flat_is_uniform)
{
    map m = map_new(33, 21, 30.0);
    for (size_t i = 0; i < 33 * 21; i++)
        m.h[i] = 250.0f;
    int w, h;
    uint8_t *rgb = render(&m.in, &w, &h);
    ck_assert_int_eq(w, 33);
    ck_assert_int_eq(h, 21);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            ck_assert_mem_eq(px(rgb, w, x, y), rgb, 3);
    free(rgb);
    map_free(&m);
}
END_TEST

/* Planes with one tint (a collapsed height range) so only the shading
 * differs: rising to the south-east faces the north-west light and is
 * brighter than flat ground, which is brighter than the plane rising to the
 * north-west; likewise rising to the east faces the light's west part. */
START_TEST(slope_facing_light_is_brighter)
{
    enum { N = 16 };
    const double slope[4][2] = {{1, 1}, {-1, -1}, {1, 0}, {-1, 0}}; /* dz/dx, dz/dy per cell [m] */
    uint8_t *pic[4];
    er_preview_scale sc;
    memset(&sc, 0, sizeof sc);
    sc.exaggeration = 1.0;
    for (int k = 0; k < 4; k++) {
        map m = map_new(N, N, 2.0);
        for (int y = 0; y < N; y++)
            for (int x = 0; x < N; x++)
                m.h[y * N + x] = (float)(slope[k][0] * x + slope[k][1] * y);
        pic[k] = render_scaled(&m.in, &sc);
        map_free(&m);
    }
    map f = map_new(N, N, 2.0);
    uint8_t *flat = render_scaled(&f.in, &sc);
    map_free(&f);
    for (int y = 1; y < N - 1; y++) {
        for (int x = 1; x < N - 1; x++) {
            for (int c = 0; c < 3; c++) {
                ck_assert_int_gt(px(pic[0], N, x, y)[c], px(flat, N, x, y)[c]);
                ck_assert_int_lt(px(pic[1], N, x, y)[c], px(flat, N, x, y)[c]);
                ck_assert_int_gt(px(pic[2], N, x, y)[c], px(pic[3], N, x, y)[c]);
            }
        }
    }
    for (int k = 0; k < 4; k++)
        free(pic[k]);
    free(flat);
}
END_TEST

/* The light's x and y components are equal, so a map symmetric about the
 * NW-SE diagonal (h(x, y) = h(y, x)) renders as a picture with the same
 * symmetry, exactly; and its north-west flank, lit, is brighter than its
 * south-east flank. */
START_TEST(transpose_symmetry)
{
    enum { N = 41 };
    map m = map_new(N, N, 10.0);
    m.water = calloc(N * N, sizeof *m.water);
    ck_assert_ptr_nonnull(m.water);
    m.in.water = m.water;
    const double c = 20.0;
    for (int y = 0; y < N; y++) {
        for (int x = 0; x < N; x++) {
            double dx = x - c, dy = y - c;
            /* a round hill plus a saddle along the diagonals */
            double h = 300.0 / (1.0 + (dx * dx + dy * dy) / 60.0) + 0.08 * dx * dy;
            m.h[y * N + x] = (float)h;
            if (h < 40.0)
                m.water[y * N + x] = (float)(40.0 - h) * 0.01f;
        }
    }
    int w, h;
    uint8_t *rgb = render(&m.in, &w, &h);
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++)
            ck_assert_msg(memcmp(px(rgb, w, x, y), px(rgb, w, y, x), 3) == 0, "(%d,%d) differs from (%d,%d)", x,
                          y, y, x);
    ck_assert_int_gt(sum3(px(rgb, w, 15, 15)), sum3(px(rgb, w, 25, 25)) + 30);
    free(rgb);
    map_free(&m);
}
END_TEST

/* Water raises the blue channel of every wet cell and changes nothing
 * else; zero, negative and non-finite depths draw nothing. */
START_TEST(water_is_blue)
{
    enum { W = 30, H = 20 };
    map m = map_new(W, H, 25.0);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            m.h[y * W + x] = (float)(100.0 + 3.0 * x + 0.5 * (y % 5) * (x % 3));
    int w, h;
    uint8_t *dry = render(&m.in, &w, &h);
    m.water = calloc(W * H, sizeof *m.water);
    ck_assert_ptr_nonnull(m.water);
    for (int y = 2; y < 12; y++)
        for (int x = 5; x < 20; x++)
            m.water[y * W + x] = (float)(0.2 + 0.05 * (x - 5));
    m.water[0] = -1.0f;
    m.water[1] = NAN;
    m.water[2] = INFINITY;
    m.in.water = m.water;
    uint8_t *wet = render(&m.in, &w, &h);
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            const uint8_t *d = px(dry, w, x, y), *q = px(wet, w, x, y);
            if (m.water[y * W + x] > 0 && isfinite(m.water[y * W + x])) {
                ck_assert_int_lt(d[2], 255);
                ck_assert_int_gt(q[2], d[2]);
                ck_assert_int_gt(2 * q[2] - q[0] - q[1], 2 * d[2] - d[0] - d[1]);
            } else {
                ck_assert_msg(memcmp(d, q, 3) == 0, "dry cell (%d,%d) changed", x, y);
            }
        }
    }
    free(dry);
    free(wet);
    map_free(&m);
}
END_TEST

/* Walls and non-finite heights get the wall colour, unshaded; their height
 * values never reach the other cells (range, slopes). */
START_TEST(walls_get_wall_colour)
{
    enum { W = 24, H = 18 };
    er_preview_style st = er_preview_style_default();
    st.wall_rgb[0] = 10;
    st.wall_rgb[1] = 20;
    st.wall_rgb[2] = 200;
    map m = map_new(W, H, 5.0);
    m.in.style = &st;
    m.wall = calloc(W * H, 1);
    ck_assert_ptr_nonnull(m.wall);
    m.in.wall = m.wall;
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            m.h[y * W + x] = (float)(50.0 + 2.0 * x - 1.0 * y);
            m.wall[y * W + x] = (uint8_t)((x - 12) * (x - 12) + (y - 9) * (y - 9) < 16 || x == 0);
        }
    }
    m.h[5] = NAN; /* (5, 0): not flagged, still drawn as a wall */
    for (size_t i = 0; i < W * H; i++)
        if (m.wall[i])
            m.h[i] = -32768.0f;
    int w, h;
    uint8_t *a = render(&m.in, &w, &h);
    for (size_t i = 0; i < W * H; i++)
        if (m.wall[i])
            m.h[i] = 1e6f;
    uint8_t *b = render(&m.in, &w, &h);
    ck_assert_mem_eq(a, b, (size_t)w * h * 3);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            if (m.wall[y * W + x] || (x == 5 && y == 0))
                ck_assert_mem_eq(px(a, w, x, y), st.wall_rgb, 3);
            else
                ck_assert_msg(memcmp(px(a, w, x, y), st.wall_rgb, 3) != 0, "(%d,%d)", x, y);
    free(a);
    free(b);
    map_free(&m);
}
END_TEST

/* Before | gap | after: size 2w + gap; the halves are the single renders
 * with the shared scales, and the shared height range makes "after" look
 * different from its own single render when its range is smaller. */
START_TEST(pair_shares_scale)
{
    enum { W = 20, H = 15 };
    er_preview_style st = er_preview_style_default();
    st.gap = 5;
    map b = map_new(W, H, 10.0), a = map_new(W, H, 10.0);
    b.in.style = a.in.style = &st;
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            b.h[y * W + x] = (float)(10.0 * x + 3.0 * y);
            a.h[y * W + x] = (float)(5.0 * x + 3.0 * y); /* eroded: half the relief along x */
        }
    }
    er_error err;
    int pw, ph;
    ck_assert_int_eq(er_preview_size(&a.in, 1, &pw, &ph, &err), ER_OK);
    ck_assert_int_eq(pw, 2 * W + 5);
    ck_assert_int_eq(ph, H);
    uint8_t *pair = malloc((size_t)pw * ph * 3);
    ck_assert_ptr_nonnull(pair);
    ck_assert_int_eq(er_preview_render_pair(&b.in, &a.in, pair, &err), ER_OK);

    const er_preview_in *both[2] = {&b.in, &a.in};
    er_preview_scale sc;
    ck_assert_int_eq(er_preview_scale_compute(both, 2, &sc, &err), ER_OK);
    ck_assert(sc.height_min == 0.0 && sc.height_max == 10.0 * (W - 1) + 3.0 * (H - 1));
    uint8_t *left = render_scaled(&b.in, &sc), *right = render_scaled(&a.in, &sc);
    int w, h;
    uint8_t *own = render(&a.in, &w, &h);
    int own_differs = 0;
    for (int y = 0; y < H; y++) {
        ck_assert_mem_eq(px(pair, pw, 0, y), px(left, W, 0, y), W * 3);
        for (int x = 0; x < 5; x++)
            ck_assert_mem_eq(px(pair, pw, W + x, y), st.gap_rgb, 3);
        ck_assert_mem_eq(px(pair, pw, W + 5, y), px(right, W, 0, y), W * 3);
        own_differs |= memcmp(px(pair, pw, W + 5, y), px(own, W, 0, y), W * 3) != 0;
    }
    ck_assert(own_differs);

    map c = map_new(W + 1, H, 10.0);
    ck_assert_int_eq(er_preview_render_pair(&b.in, &c.in, pair, &err), ER_EINVAL);
    free(pair);
    free(left);
    free(right);
    free(own);
    map_free(&a);
    map_free(&b);
    map_free(&c);
}
END_TEST

/* Same input, same bytes: twice, and for 1, 2 and 3 threads (the scales
 * come from per-thread histograms). */
START_TEST(deterministic)
{
    enum { W = 97, H = 61 };
    map m = map_new(W, H, 30.0);
    m.water = calloc(W * H, sizeof *m.water);
    ck_assert_ptr_nonnull(m.water);
    m.in.water = m.water;
    m.in.sediment = m.water;
    uint64_t s = 12345;
    for (size_t i = 0; i < W * H; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        m.h[i] = (float)((s >> 40) % 1000) * 0.25f;
        m.water[i] = (s >> 20) % 7 == 0 ? (float)((s >> 8) % 100) * 0.01f : 0.0f;
    }
    int w, h;
    uint8_t *ref = render(&m.in, &w, &h);
    uint8_t *again = render(&m.in, &w, &h);
    ck_assert_mem_eq(ref, again, (size_t)w * h * 3);
    free(again);
    int saved = er_test_threads();
    for (int t = 1; t <= 3; t++) {
        er_test_set_threads(t);
        uint8_t *p = render(&m.in, &w, &h);
        ck_assert_mem_eq(ref, p, (size_t)w * h * 3);
        free(p);
    }
    er_test_set_threads(saved);
    free(ref);
    map_free(&m);
}
END_TEST

/* Output size: k = ceil(side / max_side), out = ceil(side / k). */
START_TEST(downscale_dimensions)
{
    const int cases[][5] = {
        /* width, height, max_side, out_w, out_h */
        {16384, 16384, 2048, 2048, 2048},
        {5000, 3000, 2048, 1667, 1000},
        {2048, 100, 2048, 2048, 100},
        {2049, 2049, 2048, 1025, 1025},
        {100, 5000, 2048, 34, 1667},
        {300, 200, 0, 300, 200},
    };
    static const float dummy = 0.0f; /* never read by er_preview_size */
    er_error err;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        er_preview_style st = er_preview_style_default();
        st.max_side = cases[i][2];
        er_preview_in in;
        memset(&in, 0, sizeof in);
        in.width = cases[i][0];
        in.height = cases[i][1];
        in.elevation = &dummy;
        in.cell_x = in.cell_y = 1.0;
        in.style = &st;
        int w, h;
        ck_assert_int_eq(er_preview_size(&in, 0, &w, &h, &err), ER_OK);
        ck_assert_int_eq(w, cases[i][3]);
        ck_assert_int_eq(h, cases[i][4]);
        ck_assert_int_eq(er_preview_size(&in, 1, &w, &h, &err), ER_OK);
        ck_assert_int_eq(w, 2 * cases[i][3] + st.gap);
    }
}
END_TEST

/* A box-filtered pixel is the mean of its block's full-size pixels, to
 * within the two byte roundings (each half a step). */
START_TEST(downscale_is_box_mean)
{
    enum { W = 40, H = 30, K = 3 };
    map m = map_new(W, H, 15.0);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            m.h[y * W + x] = (float)(20.0 * ((x * 7 + y * 3) % 11) + x * 2.0);
    er_preview_style st = er_preview_style_default();
    st.max_side = 0;
    m.in.style = &st;
    int fw, fh, w, h;
    uint8_t *full = render(&m.in, &fw, &fh);
    st.max_side = 14; /* 40 / 14 -> k = 3 */
    uint8_t *small = render(&m.in, &w, &h);
    ck_assert_int_eq(w, (W + K - 1) / K);
    ck_assert_int_eq(h, H / K);
    for (int oy = 0; oy < h; oy++) {
        for (int ox = 0; ox < w; ox++) {
            for (int c = 0; c < 3; c++) {
                int sum = 0, n = 0;
                for (int y = oy * K; y < (oy + 1) * K && y < H; y++)
                    for (int x = ox * K; x < (ox + 1) * K && x < W; x++, n++)
                        sum += px(full, fw, x, y)[c];
                double mean = (double)sum / n;
                ck_assert_msg(fabs(px(small, w, ox, oy)[c] - mean) <= 1.0, "(%d,%d) %d vs %g", ox, oy,
                              px(small, w, ox, oy)[c], mean);
            }
        }
    }
    free(full);
    free(small);
    map_free(&m);
}
END_TEST

/* The robust maximum is the 99th percentile (to one 1.6 % bin), not the
 * largest value: 1 % of outliers do not wash the layer out. */
START_TEST(percentile_scale)
{
    enum { W = 100, H = 100 };
    map m = map_new(W, H, 1.0);
    m.water = calloc(W * H, sizeof *m.water);
    ck_assert_ptr_nonnull(m.water);
    m.in.water = m.water;
    for (int i = 0; i < W * H; i++)
        m.water[i] = (float)(i + 1); /* 1 .. 10000 */
    const er_preview_in *one[1] = {&m.in};
    er_preview_scale sc;
    er_error err;
    ck_assert_int_eq(er_preview_scale_compute(one, 1, &sc, &err), ER_OK);
    ck_assert(sc.water_max >= 9900.0 && sc.water_max <= 9900.0 * (1.0 + 1.0 / 64));
    ck_assert(sc.sediment_max == 0.0 && sc.deposit_max == 0.0);
    for (int i = 0; i < W * H; i++)
        m.water[i] = i < 50 ? 1e6f : i < 100 ? 0.0f : 1.0f; /* 50 outliers in 9950 */
    ck_assert_int_eq(er_preview_scale_compute(one, 1, &sc, &err), ER_OK);
    ck_assert(sc.water_max >= 1.0 && sc.water_max <= 1.0 + 1.0 / 64);
    for (int i = 0; i < W * H; i++)
        m.water[i] = 0.25f;
    ck_assert_int_eq(er_preview_scale_compute(one, 1, &sc, &err), ER_OK);
    ck_assert(sc.water_max == 0.25);
    map_free(&m);
}
END_TEST

START_TEST(bad_input)
{
    map m = map_new(4, 4, 1.0);
    uint8_t rgb[4 * 4 * 3];
    er_error err;
    m.in.cell_x = 0;
    ck_assert_int_eq(er_preview_render(&m.in, rgb, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "cell size"));
    m.in.cell_x = 1;
    m.in.width = 0;
    ck_assert_int_eq(er_preview_render(&m.in, rgb, &err), ER_EINVAL);
    m.in.width = 4;
    er_preview_scale sc;
    memset(&sc, 0, sizeof sc);
    ck_assert_int_eq(er_preview_render_scaled(&m.in, &sc, rgb, &err), ER_EINVAL); /* exaggeration 0 */
    map_free(&m);
}
END_TEST

/* er_png_write_rgb: libpng reads back 8-bit RGB with the same bytes; two
 * writes give the same file; the provenance is in it; a failed write leaves
 * nothing behind. */
START_TEST(png_rgb_round_trip)
{
    enum { W = 37, H = 23 };
    char dir[1024], path[1100], path2[1100];
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/p.png", dir);
    snprintf(path2, sizeof path2, "%s/q.png", dir);
    uint8_t rgb[W * H * 3];
    for (size_t i = 0; i < sizeof rgb; i++)
        rgb[i] = (uint8_t)(i * 37 + (i / 3) * 11);
    er_error err;
    const char *prov = "{\"erode\":\"test-provenance\"}";
    ck_assert_int_eq(er_png_write_rgb(path, W, H, rgb, prov, &err), ER_OK);
    ck_assert_int_eq(er_png_write_rgb(path2, W, H, rgb, prov, &err), ER_OK);

    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    ck_assert(png_image_begin_read_from_file(&img, path));
    ck_assert_uint_eq(img.width, W);
    ck_assert_uint_eq(img.height, H);
    ck_assert_uint_eq(img.format, PNG_FORMAT_RGB); /* 8-bit, no alpha, not linear */
    uint8_t back[W * H * 3];
    ck_assert(png_image_finish_read(&img, NULL, back, 0, NULL));
    ck_assert_mem_eq(back, rgb, sizeof rgb);

    FILE *f = fopen(path, "rb"), *g = fopen(path2, "rb");
    ck_assert(f && g);
    static char a[1 << 16], b[1 << 16];
    size_t na = fread(a, 1, sizeof a, f), nb = fread(b, 1, sizeof b, g);
    fclose(f);
    fclose(g);
    ck_assert_uint_eq(na, nb);
    ck_assert_mem_eq(a, b, na);
    int found = 0;
    for (size_t i = 0; i + strlen(prov) <= na; i++)
        found |= memcmp(a + i, prov, strlen(prov)) == 0;
    ck_assert(found);

    snprintf(path2, sizeof path2, "%s/missing/q.png", dir);
    ck_assert_int_ne(er_png_write_rgb(path2, W, H, rgb, NULL, &err), ER_OK);
    ck_assert_ptr_nonnull(strstr(err.msg, "missing/q.png"));
    ck_assert_int_eq(er_png_write_rgb(path, 0, H, rgb, NULL, &err), ER_EINVAL);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0); /* the earlier file is untouched */
    er_test_rmdir(dir);
}
END_TEST

Suite *preview_suite(void);
Suite *preview_suite(void)
{
    Suite *s = suite_create("preview");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, flat_is_uniform);
    tcase_add_test(tc, slope_facing_light_is_brighter);
    tcase_add_test(tc, transpose_symmetry);
    tcase_add_test(tc, water_is_blue);
    tcase_add_test(tc, walls_get_wall_colour);
    tcase_add_test(tc, pair_shares_scale);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, downscale_dimensions);
    tcase_add_test(tc, downscale_is_box_mean);
    tcase_add_test(tc, percentile_scale);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    TCase *io = tcase_create("png_rgb");
    tcase_add_test(io, png_rgb_round_trip);
    suite_add_tcase(s, io);
    return s;
}
