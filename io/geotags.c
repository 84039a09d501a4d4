/*
 * What erode needs from the GeoTIFF tags it otherwise passes through
 * untouched: the cell size in metres and the pixel of a map coordinate.
 *
 * Raster to model space (GeoTIFF 1.1, §2.6 and Annex B) comes either from
 * ModelPixelScale + the first ModelTiepoint, or from ModelTransformation:
 *   X = m0 + m1*i + m2*j,   Y = m3 + m4*i + m5*j
 * where (i, j) is the raster point: a pixel's top-left corner with
 * PixelIsArea, its centre with PixelIsPoint (GTRasterTypeGeoKey 1025).
 */
#include "image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MODEL_TYPE 1024          /* GTModelTypeGeoKey */
#define KEY_RASTER_TYPE 1025         /* GTRasterTypeGeoKey */
#define KEY_ANGULAR_UNITS 2054       /* GeogAngularUnitsGeoKey */
#define KEY_ANGULAR_UNIT_SIZE 2055   /* GeogAngularUnitSizeGeoKey [radians] */
#define KEY_LINEAR_UNITS 3076        /* ProjLinearUnitsGeoKey */
#define KEY_LINEAR_UNIT_SIZE 3077    /* ProjLinearUnitSizeGeoKey [metres] */
#define MODEL_GEOGRAPHIC 2
#define RASTER_PIXEL_IS_POINT 2
#define USER_DEFINED 32767
#define TAG_GEODOUBLES 34736

#define PI 3.14159265358979323846

/* WGS 84 (EPSG:7030): semi-major axis [m] and inverse flattening. */
#define WGS84_A 6378137.0
#define WGS84_INV_F 298.257223563

/* Finds a GeoKey: the directory is a header of 4 shorts (version,
 * revision, minor revision, key count) then 4 shorts per key (id, tag
 * holding the value or 0 for "in this entry", count, value or index).
 * Returns a pointer to the key's entry, or NULL. */
static const uint16_t *find_key(const er_georef *g, uint16_t id)
{
    if (!g->geokeys || g->n_geokeys < 4)
        return NULL;
    size_t n = g->geokeys[3];
    if (n > (g->n_geokeys - 4) / 4)
        n = (g->n_geokeys - 4) / 4;
    for (size_t k = 0; k < n; k++) {
        const uint16_t *e = g->geokeys + 4 + 4 * k;
        if (e[0] == id)
            return e;
    }
    return NULL;
}

static int key_short(const er_georef *g, uint16_t id, unsigned *v)
{
    const uint16_t *e = find_key(g, id);
    if (!e || e[1] != 0)
        return 0;
    *v = e[3];
    return 1;
}

static int key_double(const er_georef *g, uint16_t id, double *v)
{
    const uint16_t *e = find_key(g, id);
    if (!e || e[1] != TAG_GEODOUBLES || e[2] < 1 || !g->geodoubles || e[3] >= g->n_geodoubles)
        return 0;
    *v = g->geodoubles[e[3]];
    return 1;
}

/* Raster -> model affine map; 0 without one.  Only the first tie point is
 * used with a pixel scale; tie points alone (ground control points) give
 * no affine map. */
static int raster_to_model(const er_georef *g, double m[6])
{
    if (g->pixel_scale && g->n_pixel_scale >= 2 && g->tiepoints && g->n_tiepoints >= 6) {
        const double *s = g->pixel_scale, *t = g->tiepoints;
        if (!(isfinite(s[0]) && isfinite(s[1]) && s[0] != 0 && s[1] != 0))
            return 0;
        /* (t0, t1) raster maps to (t3, t4) model; model Y grows upwards. */
        m[0] = t[3] - t[0] * s[0];
        m[1] = s[0];
        m[2] = 0;
        m[3] = t[4] + t[1] * s[1];
        m[4] = 0;
        m[5] = -s[1];
    } else if (g->transformation && g->n_transformation >= 16) {
        const double *t = g->transformation; /* 4x4, row-major */
        m[0] = t[3];
        m[1] = t[0];
        m[2] = t[1];
        m[3] = t[7];
        m[4] = t[4];
        m[5] = t[5];
    } else {
        return 0;
    }
    for (int k = 0; k < 6; k++)
        if (!isfinite(m[k]))
            return 0;
    return 1;
}

/* Metres per CRS unit of a projected (or unknown) model; 0 when unknown. */
static double linear_unit(const er_georef *g)
{
    unsigned code;
    double size;
    if (!key_short(g, KEY_LINEAR_UNITS, &code))
        return 1.0; /* no unit key: GeoTIFF's default is the CRS's, nearly always metres */
    switch (code) {
    case 9001: return 1.0;                /* metre */
    case 9002: return 0.3048;             /* international foot */
    case 9003: return 1200.0 / 3937.0;    /* US survey foot */
    case 9036: return 1000.0;             /* kilometre */
    case USER_DEFINED:
        return key_double(g, KEY_LINEAR_UNIT_SIZE, &size) && size > 0 ? size : 0.0;
    default: return 0.0;
    }
}

/* Degrees per CRS unit of a geographic model; 0 when unknown. */
static double angular_unit(const er_georef *g)
{
    unsigned code;
    double size;
    if (!key_short(g, KEY_ANGULAR_UNITS, &code))
        return 1.0;
    switch (code) {
    case 9101: return 180.0 / PI;         /* radian */
    case 9102: return 1.0;                /* degree */
    case 9103: return 1.0 / 60.0;         /* arc-minute */
    case 9104: return 1.0 / 3600.0;       /* arc-second */
    case 9105:                            /* grad */
    case 9106: return 0.9;                /* gon */
    case USER_DEFINED:
        return key_double(g, KEY_ANGULAR_UNIT_SIZE, &size) && size > 0 ? size * 180.0 / PI : 0.0;
    default: return 0.0;
    }
}

static double round_micrometre(double x)
{
    return round(x * 1e6) / 1e6;
}

/* Cell size [m].  A geographic CRS is converted with the WGS 84 ellipsoid's
 * meridian (M) and prime-vertical (N) radii of curvature at the raster's
 * centre latitude phi, e2 = f(2 - f):
 *   M = a(1 - e2) / (1 - e2 sin^2 phi)^(3/2)    metres per radian of latitude
 *   N cos phi = a cos phi / sqrt(1 - e2 sin^2 phi)    per radian of longitude
 * sin/cos may differ in the last bit between libm builds, so the result is
 * rounded to a micrometre (DESIGN.md §3).  Thread-safe, pure. */
int er_georef_cell_size(const er_georef *g, int width, int height, double *dx, double *dy)
{
    double m[6];
    unsigned model = 0;
    if (!g)
        return 0;
    key_short(g, KEY_MODEL_TYPE, &model);

    if (model != MODEL_GEOGRAPHIC) {
        double unit = linear_unit(g), x, y;
        if (unit <= 0)
            return 0;
        if (g->pixel_scale && g->n_pixel_scale >= 2) {
            x = fabs(g->pixel_scale[0]);
            y = fabs(g->pixel_scale[1]);
        } else if (raster_to_model(g, m)) {
            x = sqrt(m[1] * m[1] + m[4] * m[4]);
            y = sqrt(m[2] * m[2] + m[5] * m[5]);
        } else {
            return 0;
        }
        x *= unit;
        y *= unit;
        if (!(isfinite(x) && isfinite(y) && x > 0 && y > 0))
            return 0;
        *dx = x;
        *dy = y;
        return 1;
    }

    double deg = angular_unit(g);
    if (deg <= 0 || !raster_to_model(g, m))
        return 0;
    double ci = width / 2.0, cj = height / 2.0;
    double lat = (m[3] + m[4] * ci + m[5] * cj) * deg;
    if (!(lat >= -90.0 && lat <= 90.0))
        return 0;
    const double f = 1.0 / WGS84_INV_F, e2 = f * (2.0 - f);
    double phi = lat * (PI / 180.0), s = sin(phi);
    double w = 1.0 - e2 * s * s;
    double per_deg_lat = WGS84_A * (1.0 - e2) / (w * sqrt(w)) * (PI / 180.0);
    double per_deg_lon = WGS84_A * cos(phi) / sqrt(w) * (PI / 180.0);
    /* Column vectors of the affine map, in metres east and north. */
    double ex = m[1] * deg * per_deg_lon, ny = m[4] * deg * per_deg_lat;
    double ey = m[2] * deg * per_deg_lon, nj = m[5] * deg * per_deg_lat;
    double x = round_micrometre(sqrt(ex * ex + ny * ny));
    double y = round_micrometre(sqrt(ey * ey + nj * nj));
    if (!(isfinite(x) && isfinite(y) && x > 0 && y > 0))
        return 0;
    *dx = x;
    *dy = y;
    return 1;
}

/* Continuous pixel coordinates of a map point in erode's (and GDAL's)
 * convention: cell (c, r) covers [c, c+1) x [r, r+1), so floor() gives the
 * cell and its centre is at (c + 0.5, r + 0.5).  PixelIsPoint raster
 * coordinates name cell centres, hence the half-cell shift.  Returns 0
 * without an affine map or when it is rotated or sheared.  Thread-safe. */
int er_georef_map_to_pixel(const er_georef *g, double mx, double my, double *px, double *py)
{
    double m[6];
    unsigned raster_type = 0;
    if (!g || !raster_to_model(g, m))
        return 0;
    if (m[2] != 0 || m[4] != 0 || m[1] == 0 || m[5] == 0)
        return 0;
    double i = (mx - m[0]) / m[1], j = (my - m[3]) / m[5];
    if (key_short(g, KEY_RASTER_TYPE, &raster_type) && raster_type == RASTER_PIXEL_IS_POINT) {
        i += 0.5;
        j += 0.5;
    }
    *px = i;
    *py = j;
    return 1;
}

/* Removes "<Item name=\"STATISTICS_...\" ...>...</Item>" entries (and the
 * indentation and newline around each) from the GDAL_METADATA XML; drops the
 * tag when nothing but the empty <GDALMetadata> element is left.  The input's
 * statistics describe the input: kept, GDAL would report them for an eroded
 * height or a water layer. */
void er_georef_drop_statistics(er_georef *g)
{
    static const char item[] = "<Item name=\"STATISTICS_";
    static const char close_tag[] = "</Item>";
    char *md = g->gdal_metadata, *p;
    if (!md)
        return;
    while ((p = strstr(md, item)) != NULL) {
        char *end = strstr(p, close_tag);
        if (!end)
            break;
        end += sizeof close_tag - 1;
        while (p > md && (p[-1] == ' ' || p[-1] == '\t'))
            p--;
        if (*end == '\n')
            end++;
        memmove(p, end, strlen(end) + 1);
    }
    char *open = strstr(md, "<GDALMetadata>");
    char *close = strstr(md, "</GDALMetadata>");
    if (open && close) {
        const char *q = open + strlen("<GDALMetadata>");
        while (q < close && (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t'))
            q++;
        if (q == close) {
            free(g->gdal_metadata);
            g->gdal_metadata = NULL;
        }
    }
}

int er_georef_affine(const er_georef *g, double m[6])
{
    unsigned raster_type = 0;
    if (!g || !raster_to_model(g, m))
        return 0;
    if (key_short(g, KEY_RASTER_TYPE, &raster_type) && raster_type == RASTER_PIXEL_IS_POINT) {
        /* raster point (0, 0) is the first cell's centre: the corner is half a cell back */
        m[0] -= 0.5 * m[1] + 0.5 * m[2];
        m[3] -= 0.5 * m[4] + 0.5 * m[5];
    }
    return 1;
}

er_status er_georef_shifted(er_georef *dst, const er_georef *src, int dx, int dy, er_error *err)
{
    double m[6];
    if (!raster_to_model(src, m)) {
        memset(dst, 0, sizeof *dst);
        return er_fail(err, ER_EINVAL, "no affine georeferencing to shift");
    }
    er_status st = er_georef_copy(dst, src, err);
    if (st)
        return st;
    if (dst->pixel_scale && dst->n_pixel_scale >= 2 && dst->tiepoints && dst->n_tiepoints >= 6) {
        /* Moving the tie points' raster coordinates keeps their model
         * coordinates bit for bit: no rounding can creep in. */
        for (size_t i = 0; i + 6 <= dst->n_tiepoints; i += 6) {
            dst->tiepoints[i] -= dx;
            dst->tiepoints[i + 1] -= dy;
        }
    } else {
        double *t = dst->transformation;
        t[3] += t[0] * dx + t[1] * dy;
        t[7] += t[4] * dx + t[5] * dy;
    }
    return ER_OK;
}
