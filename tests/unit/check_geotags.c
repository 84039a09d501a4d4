/*
 * Cell size and map-to-pixel from GeoTIFF tags: synthetic georeferencing
 * for each rule, then the real DEMs against what gdalinfo reports and an
 * independent (spherical) estimate.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../io/image.h"
#include "test_util.h"

/* Builds a georef from stack arrays (not owned: never er_georef_free'd). */
typedef struct geo {
    er_georef g;
    double scale[3], tie[6], m[16], dbl[2];
    uint16_t keys[4 + 4 * 4];
} geo;

static void add_key(geo *x, uint16_t id, uint16_t value)
{
    uint16_t n = x->keys[3];
    uint16_t *e = x->keys + 4 + 4 * n;
    e[0] = id;
    e[1] = 0;
    e[2] = 1;
    e[3] = value;
    x->keys[3] = (uint16_t)(n + 1);
    x->g.geokeys = x->keys;
    x->g.n_geokeys = 4 + 4 * (size_t)(n + 1);
}

/* A GeoKey whose value is a double in GeoDoubleParams. */
static void add_double_key(geo *x, uint16_t id, double value)
{
    size_t k = x->g.n_geodoubles;
    add_key(x, id, (uint16_t)k);
    uint16_t *e = x->keys + 4 + 4 * (x->keys[3] - 1);
    e[1] = 34736;
    x->dbl[k] = value;
    x->g.geodoubles = x->dbl;
    x->g.n_geodoubles = k + 1;
}

static void with_scale(geo *x, double sx, double sy, double x0, double y0)
{
    memset(x, 0, sizeof *x);
    x->keys[0] = 1;
    x->keys[1] = 1;
    x->scale[0] = sx;
    x->scale[1] = sy;
    x->tie[3] = x0;
    x->tie[4] = y0;
    x->g.pixel_scale = x->scale;
    x->g.n_pixel_scale = 3;
    x->g.tiepoints = x->tie;
    x->g.n_tiepoints = 6;
}

static void with_matrix(geo *x, double a, double b, double c, double d, double e, double f)
{
    memset(x, 0, sizeof *x);
    x->keys[0] = 1;
    x->keys[1] = 1;
    /* X = a*i + b*j + c, Y = d*i + e*j + f (row-major 4x4) */
    x->m[0] = a;
    x->m[1] = b;
    x->m[3] = c;
    x->m[4] = d;
    x->m[5] = e;
    x->m[7] = f;
    x->m[10] = 1;
    x->m[15] = 1;
    x->g.transformation = x->m;
    x->g.n_transformation = 16;
}

static int is_micrometre(double v)
{
    double u = v * 1e6;
    return fabs(u - round(u)) < 1e-3;
}

START_TEST(projected_scale_as_is)
{
    geo x;
    double dx = 0, dy = 0;
    with_scale(&x, 89.994067349451157, 30.5, 288776.25, 9120760.75);
    add_key(&x, 1024, 1);
    ck_assert(er_georef_cell_size(&x.g, 111, 111, &dx, &dy));
    ck_assert(dx == 89.994067349451157 && dy == 30.5);

    /* no GeoKeys at all: a pixel scale in (presumably) metres still counts */
    x.g.geokeys = NULL;
    x.g.n_geokeys = 0;
    ck_assert(er_georef_cell_size(&x.g, 10, 10, &dx, &dy));
    ck_assert(dx == 89.994067349451157);
}
END_TEST

START_TEST(projected_units_converted_to_metres)
{
    geo x;
    double dx = 0, dy = 0;
    with_scale(&x, 10, 20, 0, 0);
    add_key(&x, 1024, 1);
    add_key(&x, 3076, 9002); /* international foot */
    ck_assert(er_georef_cell_size(&x.g, 10, 10, &dx, &dy));
    ck_assert_double_eq_tol(dx, 3.048, 1e-12);
    ck_assert_double_eq_tol(dy, 6.096, 1e-12);
    x.keys[4 + 4 + 3] = 9003; /* US survey foot: 1200/3937 m */
    ck_assert(er_georef_cell_size(&x.g, 10, 10, &dx, &dy));
    ck_assert_double_eq_tol(dx, 12000.0 / 3937.0, 1e-12);
    x.keys[4 + 4 + 3] = 9999; /* unknown unit: no cell size rather than a wrong one */
    ck_assert(!er_georef_cell_size(&x.g, 10, 10, &dx, &dy));
}
END_TEST

/* A rotated transformation: the cell size is the length of each column
 * vector (3-4-5 triangles). */
START_TEST(transformation_column_lengths)
{
    geo x;
    double dx = 0, dy = 0, px, py;
    with_matrix(&x, 30, -40, 1000, 40, 30, 5000);
    ck_assert(er_georef_cell_size(&x.g, 10, 10, &dx, &dy));
    ck_assert_double_eq_tol(dx, 50, 1e-12);
    ck_assert_double_eq_tol(dy, 50, 1e-12);
    ck_assert(!er_georef_map_to_pixel(&x.g, 1000, 5000, &px, &py)); /* rotated */

    with_matrix(&x, 25, 0, 1000, 0, -25, 5000);
    ck_assert(er_georef_cell_size(&x.g, 10, 10, &dx, &dy));
    ck_assert(dx == 25 && dy == 25);
    ck_assert(er_georef_map_to_pixel(&x.g, 1000 + 2.5 * 25, 5000 - 4 * 25, &px, &py));
    ck_assert_double_eq_tol(px, 2.5, 1e-12);
    ck_assert_double_eq_tol(py, 4, 1e-12);
}
END_TEST

/* A sheared transformation has parallelogram cells of area |det| < x * y:
 * no cell size rather than the column lengths, which would overstate
 * every area; a rotation is still a cell size (the test above). */
START_TEST(transformation_sheared_refused)
{
    geo x;
    double dx = 0, dy = 0;
    const char *why = NULL;
    with_matrix(&x, 30, 10, 1000, 0, -30, 5000);
    ck_assert_int_eq(er_georef_cell_size_why(&x.g, 10, 10, &dx, &dy, &why), -1);
    ck_assert_ptr_nonnull(strstr(why, "sheared"));
    ck_assert(dx == 0 && dy == 0);
    /* a rotation of 30 degrees written with 9 digits is no shear */
    with_matrix(&x, 25.980762114, 15, 1000, 15, -25.980762114, 5000);
    ck_assert_int_eq(er_georef_cell_size_why(&x.g, 10, 10, &dx, &dy, &why), 1);
}
END_TEST

START_TEST(no_georeferencing)
{
    er_georef g;
    geo x;
    double dx = -1, dy = -1, px, py;
    memset(&g, 0, sizeof g);
    ck_assert(!er_georef_cell_size(&g, 10, 10, &dx, &dy));
    ck_assert(!er_georef_cell_size(NULL, 10, 10, &dx, &dy));
    ck_assert(!er_georef_map_to_pixel(&g, 0, 0, &px, &py));
    ck_assert(dx == -1 && dy == -1);

    /* tie points alone are ground control points, not an affine map */
    with_scale(&x, 1, 1, 0, 0);
    x.g.pixel_scale = NULL;
    x.g.n_pixel_scale = 0;
    ck_assert(!er_georef_cell_size(&x.g, 10, 10, &dx, &dy));
    ck_assert(!er_georef_map_to_pixel(&x.g, 0, 0, &px, &py));

    /* a zero scale is not usable */
    with_scale(&x, 0, 1, 0, 0);
    ck_assert(!er_georef_cell_size(&x.g, 10, 10, &dx, &dy));
}
END_TEST

/* Lengths of a degree on WGS 84 by the classic cosine series (as in the
 * NGA tables; within 0.04 m of the closed form), an independent check of
 * the closed-form radii of curvature in io/geotags.c.  The rasters are
 * 2 x 2 one-degree cells centred on the latitude. */
static double series_lat(double phi)
{
    return 111132.954 - 559.822 * cos(2 * phi) + 1.175 * cos(4 * phi);
}

static double series_lon(double phi)
{
    return 111412.84 * cos(phi) - 93.5 * cos(3 * phi) + 0.118 * cos(5 * phi);
}

START_TEST(geographic_degree_lengths)
{
    static const double lats[] = {0, 45, -45, 60, 89};
    for (size_t k = 0; k < sizeof lats / sizeof lats[0]; k++) {
        geo x;
        double dx, dy, phi = lats[k] * 3.14159265358979323846 / 180;
        with_scale(&x, 1, 1, 10, lats[k] + 1);
        add_key(&x, 1024, 2);
        add_key(&x, 2054, 9102);
        ck_assert(er_georef_cell_size(&x.g, 2, 2, &dx, &dy));
        ck_assert_msg(fabs(dx - series_lon(phi)) < 0.05 && fabs(dy - series_lat(phi)) < 0.05, "lat %g: %.6f %.6f",
                      lats[k], dx, dy);
        ck_assert(is_micrometre(dx) && is_micrometre(dy));

        /* the same in arc-seconds: 3600 units per degree */
        with_scale(&x, 3600, 3600, 36000, (lats[k] + 1) * 3600);
        add_key(&x, 1024, 2);
        add_key(&x, 2054, 9104);
        double ax, ay;
        ck_assert(er_georef_cell_size(&x.g, 2, 2, &ax, &ay));
        ck_assert_double_eq_tol(ax, dx, 1e-6);
        ck_assert_double_eq_tol(ay, dy, 1e-6);
    }
}
END_TEST

START_TEST(geographic_off_the_globe_refused)
{
    geo x;
    double dx, dy;
    with_scale(&x, 1, 1, 0, 120); /* centre latitude 119 */
    add_key(&x, 1024, 2);
    ck_assert(!er_georef_cell_size(&x.g, 2, 2, &dx, &dy));
}
END_TEST

/* ---- er_georef_cell_size_why: none (0), usable (1), unusable (-1) ---- */

/* Calls both entry points and checks they agree: the old one gives 1 and
 * the same sizes exactly when the new one does, 0 otherwise; why is NULL
 * unless the result is -1, and dx/dy are untouched unless it is 1. */
static int cell_size(const er_georef *g, int w, int h, double *dx, double *dy, const char **why)
{
    double ox = -7, oy = -7, nx = -7, ny = -7;
    *why = "unset";
    int r = er_georef_cell_size_why(g, w, h, &nx, &ny, why);
    int old = er_georef_cell_size(g, w, h, &ox, &oy);
    ck_assert(r == 1 || r == 0 || r == -1);
    ck_assert_int_eq(old, r == 1);
    if (r == 1) {
        ck_assert(ox == nx && oy == ny);
        ck_assert_ptr_null(*why);
        *dx = nx;
        *dy = ny;
    } else {
        ck_assert(nx == -7 && ny == -7 && ox == -7 && oy == -7);
        if (r == 0)
            ck_assert_ptr_null(*why);
        else
            ck_assert_msg(*why && **why && !strchr(*why, '\n'), "r = -1 without a reason");
    }
    return r;
}

/* Nothing that places the raster in model space: no georeferencing, the
 * caller's terrain.cell_size (or 1 m) applies. */
START_TEST(why_no_georeferencing)
{
    er_georef g;
    geo x;
    double dx, dy;
    const char *why;
    memset(&g, 0, sizeof g);
    ck_assert_int_eq(cell_size(NULL, 10, 10, &dx, &dy, &why), 0);
    ck_assert_int_eq(cell_size(&g, 10, 10, &dx, &dy, &why), 0);
    /* GeoKeys (a CRS) and GDAL tags alone give no cell size either */
    with_scale(&x, 1, 1, 0, 0);
    x.g.pixel_scale = NULL;
    x.g.n_pixel_scale = 0;
    x.g.tiepoints = NULL;
    x.g.n_tiepoints = 0;
    add_key(&x, 1024, 1);
    add_key(&x, 3076, 9001);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), 0);
    /* why may be NULL */
    ck_assert_int_eq(er_georef_cell_size_why(&g, 10, 10, &dx, &dy, NULL), 0);
}
END_TEST

static const struct {
    uint16_t code;
    double metres;
} known_units[] = {
    {9001, 1.0}, {9002, 0.3048}, {9003, 1200.0 / 3937.0}, {9036, 1000.0}, {9030, 1852.0},
    {9093, 1609.344}, {9096, 0.9144}, {9005, 0.3047972654}, {9070, 0.30480083333333335}, {1025, 0.001},
};

/* Linear units with an EPSG factor convert (metre, foot, US survey foot,
 * and the rest of EPSG's non-deprecated length units). */
START_TEST(why_known_linear_units)
{
    geo x;
    double dx, dy;
    const char *why;
    with_scale(&x, 10, 20, 0, 0);
    add_key(&x, 1024, 1);
    add_key(&x, 3076, known_units[_i].code);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), 1);
    ck_assert_msg(dx == 10 * known_units[_i].metres && dy == 20 * known_units[_i].metres, "unit %u: %.17g %.17g",
                  known_units[_i].code, dx, dy);
}
END_TEST

/* A unit erode does not know is not metres: the cell size would be wrong
 * by the unit's factor.  Unusable, with a reason. */
START_TEST(why_unknown_units)
{
    geo x;
    double dx, dy;
    const char *why;
    with_scale(&x, 10, 20, 0, 0);
    add_key(&x, 1024, 1);
    add_key(&x, 3076, 9999);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    ck_assert_msg(strstr(why, "linear unit") != NULL, "%s", why);
    /* EPSG rates and deprecated bin widths are not lengths erode converts */
    x.keys[4 + 4 + 3] = 1042; /* metres per year */
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    x.keys[4 + 4 + 3] = 9204; /* bin width 330 US survey feet (deprecated) */
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);

    /* user-defined: ProjLinearUnitSizeGeoKey [m], which must be there and
     * positive */
    with_scale(&x, 10, 20, 0, 0);
    add_key(&x, 1024, 1);
    add_key(&x, 3076, 32767);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    ck_assert_msg(strstr(why, "linear unit") != NULL, "%s", why);
    add_double_key(&x, 3077, 0.5);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), 1);
    ck_assert(dx == 5 && dy == 10);
    x.dbl[0] = 0;
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    x.dbl[0] = NAN;
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);

    /* geographic: an unknown angular unit, and a sexagesimal one (a
     * notation, not a scale: 10.3030 means 10 deg 30' 30") */
    static const uint16_t angular[] = {9999, 9110, 9107};
    for (size_t k = 0; k < sizeof angular / sizeof angular[0]; k++) {
        with_scale(&x, 1, 1, 10, 46);
        add_key(&x, 1024, 2);
        add_key(&x, 2054, angular[k]);
        ck_assert_int_eq(cell_size(&x.g, 2, 2, &dx, &dy, &why), -1);
        ck_assert_msg(strstr(why, "angular unit") != NULL, "%s", why);
    }
    /* known angular units: degree as EPSG 9122, arc-seconds, grads */
    static const struct {
        uint16_t code;
        double per_degree;
    } known[] = {{9122, 1}, {9104, 3600}, {9105, 10.0 / 9.0}};
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        double rx, ry;
        with_scale(&x, 1, 1, 10, 46);
        add_key(&x, 1024, 2);
        ck_assert_int_eq(cell_size(&x.g, 2, 2, &rx, &ry, &why), 1);
        with_scale(&x, known[k].per_degree, known[k].per_degree, 10 * known[k].per_degree, 46 * known[k].per_degree);
        add_key(&x, 1024, 2);
        add_key(&x, 2054, known[k].code);
        ck_assert_int_eq(cell_size(&x.g, 2, 2, &dx, &dy, &why), 1);
        ck_assert_double_eq_tol(dx, rx, 1e-6);
        ck_assert_double_eq_tol(dy, ry, 1e-6);
    }
}
END_TEST

/* A pixel size of zero, NaN or infinity, from the scale or the matrix,
 * or one that is not a length at all (below a micrometre once in
 * metres). */
START_TEST(why_unusable_pixel_size)
{
    static const double bad[] = {0, NAN, INFINITY, -INFINITY, 1e-12};
    geo x;
    double dx, dy;
    const char *why;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        with_scale(&x, 30, bad[k], 1000, 2000);
        ck_assert_msg(cell_size(&x.g, 10, 10, &dx, &dy, &why) == -1, "scale %g", bad[k]);
        ck_assert_msg(strstr(why, "pixel size") != NULL, "%s", why);
        with_scale(&x, bad[k], 30, 1000, 2000);
        add_key(&x, 1024, 1);
        ck_assert_msg(cell_size(&x.g, 10, 10, &dx, &dy, &why) == -1, "scale %g", bad[k]);
        with_matrix(&x, 25, 0, 1000, 0, bad[k], 5000);
        ck_assert_msg(cell_size(&x.g, 10, 10, &dx, &dy, &why) == -1, "matrix %g", bad[k]);
        /* geographic too */
        with_scale(&x, 0.001, bad[k], 10, 46);
        add_key(&x, 1024, 2);
        ck_assert_msg(cell_size(&x.g, 10, 10, &dx, &dy, &why) == -1, "degrees %g", bad[k]);
    }
    /* a negative scale is a flipped axis: its size still counts */
    with_scale(&x, -30, 30, 1000, 2000);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), 1);
    ck_assert(dx == 30 && dy == 30);
    /* a micrometre in feet is not a micrometre */
    with_scale(&x, 2e-6, 2e-6, 0, 0);
    add_key(&x, 3076, 9002);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
}
END_TEST

/* Centre latitudes near a pole: a degree of longitude shrinks to nothing
 * there (cos 89.9 deg = 0.0017), so the cell width in metres degenerates.
 * Refused within half a degree of a pole, and off the globe; 89.4 deg is
 * still usable. */
START_TEST(why_geographic_near_pole)
{
    static const struct {
        double lat;
        int ok;
    } cases[] = {{89.4, 1}, {-89.4, 1}, {89.6, -1}, {-89.6, -1}, {89.99, -1}, {90, -1}, {-90, -1}, {95, -1},
                 {-119, -1}};
    geo x;
    double dx, dy;
    const char *why;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        /* 2 x 2 cells of 0.1 deg centred on the latitude */
        with_scale(&x, 0.1, 0.1, 10, cases[k].lat + 0.1);
        add_key(&x, 1024, 2);
        int r = cell_size(&x.g, 2, 2, &dx, &dy, &why);
        ck_assert_msg(r == cases[k].ok, "lat %g: %d", cases[k].lat, r);
        if (r < 0)
            ck_assert_msg(strstr(why, "pole") || strstr(why, "latitude"), "%s", why);
    }
    /* the same with a transformation matrix, centre 89.75 deg */
    with_matrix(&x, 0.1, 0, 10, 0, -0.1, 90);
    add_key(&x, 1024, 2);
    ck_assert_int_eq(cell_size(&x.g, 4, 5, &dx, &dy, &why), -1);
    ck_assert_msg(strstr(why, "pole") != NULL, "%s", why);
}
END_TEST

/* Georeferencing that is there but places the raster in no usable way. */
START_TEST(why_unusable_layouts)
{
    geo x;
    double dx, dy;
    const char *why;
    /* tie points alone are ground control points: no affine map, no size */
    with_scale(&x, 1, 1, 0, 0);
    x.g.pixel_scale = NULL;
    x.g.n_pixel_scale = 0;
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    ck_assert_msg(strstr(why, "control points") != NULL, "%s", why);
    /* a geographic pixel scale with no tie point: no latitude */
    with_scale(&x, 0.01, 0.01, 0, 0);
    x.g.tiepoints = NULL;
    x.g.n_tiepoints = 0;
    add_key(&x, 1024, 2);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    ck_assert_msg(strstr(why, "latitude") != NULL, "%s", why);
    /* a geographic tie point that is not a number: no latitude either */
    with_scale(&x, 0.01, 0.01, 10, NAN);
    add_key(&x, 1024, 2);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    /* truncated tags */
    with_scale(&x, 10, 10, 0, 0);
    x.g.n_pixel_scale = 1;
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    with_matrix(&x, 25, 0, 1000, 0, -25, 5000);
    x.g.n_transformation = 12;
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    /* a geocentric model (GTModelTypeGeoKey 3) has no map plane */
    with_scale(&x, 10, 10, 0, 0);
    add_key(&x, 1024, 3);
    ck_assert_int_eq(cell_size(&x.g, 10, 10, &dx, &dy, &why), -1);
    ck_assert_msg(strstr(why, "geocentric") != NULL, "%s", why);
}
END_TEST

/* PixelIsArea: the tie point is the top-left corner of cell (0, 0), whose
 * centre is (0.5, 0.5).  PixelIsPoint: the tie point is that centre. */
START_TEST(map_to_pixel_area_and_point)
{
    geo x;
    double px, py;
    with_scale(&x, 10, 5, 1000, 2000);
    add_key(&x, 1025, 1);
    ck_assert(er_georef_map_to_pixel(&x.g, 1000, 2000, &px, &py));
    ck_assert(px == 0 && py == 0);
    ck_assert(er_georef_map_to_pixel(&x.g, 1005, 1997.5, &px, &py));
    ck_assert(px == 0.5 && py == 0.5);
    ck_assert(er_georef_map_to_pixel(&x.g, 1000 + 10 * 7.25, 2000 - 5 * 3, &px, &py));
    ck_assert_double_eq_tol(px, 7.25, 1e-12);
    ck_assert_double_eq_tol(py, 3, 1e-12);

    x.keys[4 + 3] = 2; /* PixelIsPoint */
    ck_assert(er_georef_map_to_pixel(&x.g, 1000, 2000, &px, &py));
    ck_assert(px == 0.5 && py == 0.5);

    /* a tie point at raster (2, 3) */
    with_scale(&x, 10, 5, 1000, 2000);
    x.tie[0] = 2;
    x.tie[1] = 3;
    ck_assert(er_georef_map_to_pixel(&x.g, 1000, 2000, &px, &py));
    ck_assert(px == 2 && py == 3);
}
END_TEST

/* ---- real DEMs --------------------------------------------------------- */

/* Metres per degree on a sphere of the mean Earth radius: within 0.5 % of
 * the ellipsoid everywhere (flattening is 0.34 %). */
static void spherical(double lat, double deg_x, double deg_y, double *dx, double *dy)
{
    const double r = 6371008.8, k = 3.14159265358979323846 / 180.0;
    *dx = deg_x * k * r * cos(lat * k);
    *dy = deg_y * k * r;
}

static int read_dem(const char *name, int bundled, er_image *img)
{
    char path[PATH_MAX], rel[256];
    er_error err = {{0}};
    if (bundled) {
        snprintf(rel, sizeof rel, "tests/data/%.200s", name);
        er_test_path(path, sizeof path, rel);
    } else if (!er_test_shared_dem(path, sizeof path, name)) {
        return 0;
    }
    ck_assert_msg(er_tiff_read(path, NULL, img, &err) == ER_OK, "%s", err.msg);
    return 1;
}

START_TEST(projected_dems)
{
    er_image img;
    double dx, dy, px, py;
    read_dem("whitebox_dem_f32_utm18n.tif", 1, &img);
    ck_assert(er_georef_cell_size(&img.georef, img.width, img.height, &dx, &dy));
    ck_assert(dx == 90.0 && dy == 90.0);
    /* gdalinfo: origin (664692, 4895824); the centre (675357, 4887364) */
    ck_assert(er_georef_map_to_pixel(&img.georef, 664692, 4895824, &px, &py));
    ck_assert(px == 0 && py == 0);
    ck_assert(er_georef_map_to_pixel(&img.georef, 675357, 4887364, &px, &py));
    ck_assert(px == 237 / 2.0 && py == 188 / 2.0);
    er_image_free(&img);

    read_dem("olinda_dem_f32_utm25s.tif", 1, &img);
    ck_assert(er_georef_cell_size(&img.georef, img.width, img.height, &dx, &dy));
    ck_assert_double_eq_tol(dx, 89.994067, 5e-7);
    ck_assert_double_eq_tol(dy, 89.994067, 5e-7);
    er_image_free(&img);
}
END_TEST

static const struct {
    const char *name;
    double lat0, deg, height;
} geo_dems[] = {
    {"pysheds_dem_int16_wgs84.tif", 32.821667, 0.000833333, 359},
    {"luxembourg_elev_int16_wgs84.tif", 50.191667, 0.00833333, 90},
};

START_TEST(geographic_dems)
{
    er_image img;
    double dx, dy, sx, sy;
    ER_SKIP_IF(!read_dem(geo_dems[_i].name, 0, &img), "DEM not present (shared/data/dem absent)");
    ck_assert(er_georef_cell_size(&img.georef, img.width, img.height, &dx, &dy));
    double lat = geo_dems[_i].lat0 - geo_dems[_i].deg * geo_dems[_i].height / 2;
    spherical(lat, geo_dems[_i].deg, geo_dems[_i].deg, &sx, &sy);
    ck_assert_msg(fabs(dx / sx - 1) < 0.005 && fabs(dy / sy - 1) < 0.005, "%s: %.6f %.6f vs %.6f %.6f",
                  geo_dems[_i].name, dx, dy, sx, sy);
    ck_assert(dx < dy); /* away from the equator a degree east is shorter */
    ck_assert(is_micrometre(dx) && is_micrometre(dy));
    er_image_free(&img);
}
END_TEST

/* Statistics go, every other item stays, and an element left empty goes. */
START_TEST(statistics_dropped)
{
    er_georef g;
    memset(&g, 0, sizeof g);
    g.gdal_metadata = strdup("<GDALMetadata>\n"
                             "  <Item name=\"STATISTICS_MAXIMUM\" sample=\"0\">1232.8</Item>\n"
                             "  <Item name=\"OFFSET\" sample=\"0\" role=\"offset\">0</Item>\n"
                             "  <Item name=\"STATISTICS_MEAN\" sample=\"0\">-9999</Item>\n"
                             "</GDALMetadata>\n");
    er_georef_drop_statistics(&g);
    ck_assert_str_eq(g.gdal_metadata, "<GDALMetadata>\n"
                                      "  <Item name=\"OFFSET\" sample=\"0\" role=\"offset\">0</Item>\n"
                                      "</GDALMetadata>\n");
    free(g.gdal_metadata);
    g.gdal_metadata = strdup("<GDALMetadata>\n  <Item name=\"STATISTICS_MINIMUM\" sample=\"0\">1</Item>\n</GDALMetadata>\n");
    er_georef_drop_statistics(&g);
    ck_assert_ptr_null(g.gdal_metadata);
    er_georef_drop_statistics(&g);
    ck_assert_ptr_null(g.gdal_metadata);
}
END_TEST

/* GDAL's band scale and offset: taken out of GDAL_METADATA for the band
 * read (sample = band - 1), every other item kept byte for byte; absent
 * items are 1 and 0; a scale that is no finite number is refused. */
START_TEST(scale_offset_taken)
{
    er_georef g;
    double sc, off;
    memset(&g, 0, sizeof g);
    g.gdal_metadata = strdup("<GDALMetadata>\n"
                             "  <Item name=\"OFFSET\" sample=\"0\" role=\"offset\">100</Item>\n"
                             "  <Item name=\"SCALE\" sample=\"0\" role=\"scale\">0.100000000000000006</Item>\n"
                             "  <Item name=\"SCALE\" sample=\"1\" role=\"scale\">2</Item>\n"
                             "  <Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">DEM</Item>\n"
                             "</GDALMetadata>\n");
    ck_assert(er_georef_take_scale(&g, 1, &sc, &off));
    ck_assert(sc == 0.1 && off == 100);
    ck_assert_str_eq(g.gdal_metadata, "<GDALMetadata>\n"
                                      "  <Item name=\"SCALE\" sample=\"1\" role=\"scale\">2</Item>\n"
                                      "  <Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">DEM</Item>\n"
                                      "</GDALMetadata>\n");
    ck_assert(er_georef_take_scale(&g, 1, &sc, &off)); /* taken already: none left */
    ck_assert(sc == 1 && off == 0);
    ck_assert(er_georef_take_scale(&g, 2, &sc, &off));
    ck_assert(sc == 2 && off == 0);
    free(g.gdal_metadata);
    g.gdal_metadata = strdup("<GDALMetadata>\n  <Item name=\"SCALE\" sample=\"0\" role=\"scale\">0.5</Item>\n</GDALMetadata>\n");
    ck_assert(er_georef_take_scale(&g, 0, &sc, &off));
    ck_assert(sc == 0.5 && off == 0);
    ck_assert_ptr_null(g.gdal_metadata); /* nothing else was left */
    static const char *const bad[] = {"x", "nan", "1e999", "1 2", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char md[200];
        snprintf(md, sizeof md, "<GDALMetadata><Item name=\"SCALE\" sample=\"0\" role=\"scale\">%s</Item></GDALMetadata>",
                 bad[i]);
        g.gdal_metadata = strdup(md);
        ck_assert_msg(!er_georef_take_scale(&g, 1, &sc, &off), "scale '%s' taken", bad[i]);
        free(g.gdal_metadata);
    }
    g.gdal_metadata = NULL;
    ck_assert(er_georef_take_scale(&g, 1, &sc, &off));
    ck_assert(sc == 1 && off == 0);
}
END_TEST

/* Band 1's description in GDAL_METADATA: read with its references decoded,
 * replaced in place, added before the closing tag (or as a new element),
 * every other byte kept; XML specials and control bytes survive a round
 * trip. */
START_TEST(description_read_and_set)
{
    static const char with[] = "<GDALMetadata>\n"
                               "  <Item name=\"OFFSET\" sample=\"0\" role=\"offset\">0</Item>\n"
                               "  <Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">DEM &amp; more</Item>\n"
                               "</GDALMetadata>\n";
    static const char without[] = "<GDALMetadata>\n"
                                  "  <Item name=\"OFFSET\" sample=\"0\" role=\"offset\">0</Item>\n"
                                  "  <Item name=\"DESCRIPTION\" sample=\"1\" role=\"description\">band 2</Item>\n"
                                  "</GDALMetadata>\n";
    char *d = er_gdal_metadata_description(with);
    ck_assert_str_eq(d, "DEM & more");
    free(d);
    ck_assert_ptr_null(er_gdal_metadata_description(without));
    ck_assert_ptr_null(er_gdal_metadata_description(NULL));

    char *m = er_gdal_metadata_with_description(with, "water");
    ck_assert_str_eq(m, "<GDALMetadata>\n"
                        "  <Item name=\"OFFSET\" sample=\"0\" role=\"offset\">0</Item>\n"
                        "  <Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">water</Item>\n"
                        "</GDALMetadata>\n");
    free(m);
    m = er_gdal_metadata_with_description(without, "water");
    ck_assert_str_eq(m, "<GDALMetadata>\n"
                        "  <Item name=\"OFFSET\" sample=\"0\" role=\"offset\">0</Item>\n"
                        "  <Item name=\"DESCRIPTION\" sample=\"1\" role=\"description\">band 2</Item>\n"
                        "  <Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">water</Item>\n"
                        "</GDALMetadata>\n");
    free(m);
    m = er_gdal_metadata_with_description(NULL, "sediment");
    ck_assert_str_eq(m, "<GDALMetadata>\n"
                        "  <Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">sediment</Item>\n"
                        "</GDALMetadata>\n");
    free(m);
    m = er_gdal_metadata_with_description("<GDALMetadata>\n  <Item role=\"description\" name=\"DESCRIPTION\" "
                                          "sample=\"0\"/>\n  <Item name=\"X\">1</Item>\n</GDALMetadata>\n", "a");
    ck_assert_str_eq(m, "<GDALMetadata>\n"
                        "  <Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">a</Item>\n"
                        "  <Item name=\"X\">1</Item>\n"
                        "</GDALMetadata>\n");
    free(m);
    m = er_gdal_metadata_with_description("<GDALMetadata><Item name=\"DESCRIPTION\" sample=\"0\" "
                                          "role=\"description\"></Item></GDALMetadata>", "b");
    ck_assert_str_eq(m, "<GDALMetadata><Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">b</Item>"
                        "</GDALMetadata>");
    free(m);
    /* Not GDAL's element: kept as it is. */
    m = er_gdal_metadata_with_description("<Other/>", "x");
    ck_assert_str_eq(m, "<Other/>");
    free(m);
    /* Escaping round trip. */
    static const char odd[] = "a<b>&\"c'\td\ne\r\x01\x7f h\xc3\xa9";
    m = er_gdal_metadata_with_description(NULL, odd);
    d = er_gdal_metadata_description(m);
    ck_assert_str_eq(d, odd);
    ck_assert_ptr_null(strpbrk(m, "\t\r\x01\x7f")); /* written as references */
    ck_assert_ptr_nonnull(strstr(m, "e&#13;&#1;&#127; h\xc3\xa9"));
    free(d);
    free(m);
    /* A malformed reference is no description. */
    ck_assert_ptr_null(er_gdal_metadata_description("<GDALMetadata><Item name=\"DESCRIPTION\" sample=\"0\" "
                                                    "role=\"description\">a &bogus; b</Item></GDALMetadata>"));
}
END_TEST

/* The EPSG code GDAL is told in a PNG's .aux.xml: the projected or
 * geographic code the model type names, a coded vertical CRS as a
 * compound; nothing for a user-defined CRS (GDAL reads its parts, erode
 * cannot name them), a geocentric model, a private code, or no keys. */
START_TEST(epsg_code_of_the_keys)
{
    static struct {
        uint16_t keys[24];
        const char *want; /* NULL: none */
    } cases[] = {
        {{1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 26918}, "EPSG:26918"},
        {{1, 1, 0, 2, 1024, 0, 1, 2, 2048, 0, 1, 4326}, "EPSG:4326"},
        {{1, 1, 0, 3, 1024, 0, 1, 1, 3072, 0, 1, 26918, 4096, 0, 1, 5703}, "EPSG:26918+5703"},
        {{1, 1, 0, 3, 1024, 0, 1, 1, 3072, 0, 1, 26918, 4096, 0, 1, 32767}, "EPSG:26918"},
        {{1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 32767}, NULL},
        {{1, 1, 0, 2, 1024, 0, 1, 2, 3072, 0, 1, 26918}, NULL}, /* geographic model, projected key */
        {{1, 1, 0, 2, 1024, 0, 1, 3, 2048, 0, 1, 4326}, NULL},
        {{1, 1, 0, 1, 3072, 0, 1, 26918}, NULL},                 /* no model type */
        {{1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 40000}, NULL},
    };
    er_georef g;
    char buf[64];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memset(&g, 0, sizeof g);
        g.geokeys = cases[k].keys;
        g.n_geokeys = 4 + 4 * (size_t)cases[k].keys[3];
        int got = er_georef_epsg(&g, buf, sizeof buf);
        ck_assert_msg(got == (cases[k].want != NULL), "case %zu", k);
        if (got)
            ck_assert_str_eq(buf, cases[k].want);
    }
    ck_assert_int_eq(er_georef_epsg(NULL, buf, sizeof buf), 0);
    memset(&g, 0, sizeof g);
    g.geokeys = cases[2].keys;
    g.n_geokeys = 16;
    ck_assert_int_eq(er_georef_epsg(&g, buf, 10), 0); /* does not fit */
}
END_TEST

/* One CRS or two, as a control raster is checked against its input: EPSG
 * codes decide by their horizontal part; user-defined keys by every key
 * but the citations and the raster type; no keys on one side: unknown. */
START_TEST(same_crs_of_two_rasters)
{
    uint16_t utm[] = {1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 26918};
    uint16_t utm_v[] = {1, 1, 0, 3, 1024, 0, 1, 1, 3072, 0, 1, 26918, 4096, 0, 1, 5703};
    uint16_t other[] = {1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 32725};
    uint16_t wgs84[] = {1, 1, 0, 2, 1024, 0, 1, 2, 2048, 0, 1, 4326};
    /* user-defined: a false northing in GeoDoubleParams, a citation in
     * GeoAsciiParams that the second raster spells another way */
    uint16_t user[] = {1, 1, 0, 4, 1024, 0, 1, 1, 1026, 34737, 4, 0, 3072, 0, 1, 32767,
                       3082, 34736, 1, 0};
    double fn_a[] = {10000000.0}, fn_b[] = {0.0};
    char cite_a[] = "UTM|", cite_b[] = "utm|";
    er_georef a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
#define KEYS(g, k) ((g).geokeys = (k), (g).n_geokeys = sizeof(k) / sizeof(k)[0])
    KEYS(a, utm), KEYS(b, utm_v);
    ck_assert_int_eq(er_georef_same_crs(&a, &b), 1);
    KEYS(b, other);
    ck_assert_int_eq(er_georef_same_crs(&a, &b), 0);
    KEYS(b, wgs84);
    ck_assert_int_eq(er_georef_same_crs(&a, &b), 0);
    KEYS(a, user), KEYS(b, user);
    a.geodoubles = b.geodoubles = fn_a;
    a.n_geodoubles = b.n_geodoubles = 1;
    a.geoascii = cite_a;
    b.geoascii = cite_b;
    ck_assert_int_eq(er_georef_same_crs(&a, &b), 1);
    b.geodoubles = fn_b;
    ck_assert_int_eq(er_georef_same_crs(&a, &b), 0);
    KEYS(b, utm);
    ck_assert_int_eq(er_georef_same_crs(&a, &b), 0);
    b.geokeys = NULL;
    b.n_geokeys = 0;
    ck_assert_int_eq(er_georef_same_crs(&a, &b), -1);
#undef KEYS
}
END_TEST

Suite *geotags_suite(void);
Suite *geotags_suite(void)
{
    Suite *s = suite_create("geotags");
    TCase *t = tcase_create("cell_size");
    tcase_add_test(t, projected_scale_as_is);
    tcase_add_test(t, projected_units_converted_to_metres);
    tcase_add_test(t, transformation_column_lengths);
    tcase_add_test(t, transformation_sheared_refused);
    tcase_add_test(t, scale_offset_taken);
    tcase_add_test(t, no_georeferencing);
    tcase_add_test(t, geographic_degree_lengths);
    tcase_add_test(t, geographic_off_the_globe_refused);
    tcase_add_test(t, why_no_georeferencing);
    tcase_add_loop_test(t, why_known_linear_units, 0, (int)(sizeof known_units / sizeof known_units[0]));
    tcase_add_test(t, why_unknown_units);
    tcase_add_test(t, why_unusable_pixel_size);
    tcase_add_test(t, why_geographic_near_pole);
    tcase_add_test(t, why_unusable_layouts);
    tcase_add_test(t, map_to_pixel_area_and_point);
    tcase_add_test(t, projected_dems);
    tcase_add_test(t, statistics_dropped);
    tcase_add_test(t, description_read_and_set);
    tcase_add_test(t, epsg_code_of_the_keys);
    tcase_add_test(t, same_crs_of_two_rasters);
    tcase_add_loop_test(t, geographic_dems, 0, (int)(sizeof geo_dems / sizeof geo_dems[0]));
    suite_add_tcase(s, t);
    return s;
}
