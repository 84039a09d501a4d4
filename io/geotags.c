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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geokeys.h"
#include "xml.h"

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

/* EPSG's length units that are not deprecated and have a conversion
 * factor [m per unit] (PROJ's proj.db, table unit_of_measure, EPSG dataset
 * 10.x), rates such as "metres per year" left out. */
static const struct {
    uint16_t code;
    double metres;
} linear_units[] = {
    {1025, 0.001},               /* millimetre */
    {1033, 0.01},                /* centimetre */
    {9001, 1.0},                 /* metre */
    {9002, 0.3048},              /* foot */
    {9003, 1200.0 / 3937.0},     /* US survey foot */
    {9005, 0.3047972654},        /* Clarke's foot */
    {9014, 1.8288},              /* fathom */
    {9030, 1852.0},              /* nautical mile */
    {9031, 1.0000135965},        /* German legal metre */
    {9033, 20.11684023368047},   /* US survey chain */
    {9034, 0.2011684023368047},  /* US survey link */
    {9035, 1609.3472186944375},  /* US survey mile */
    {9036, 1000.0},              /* kilometre */
    {9037, 0.9143917962},        /* Clarke's yard */
    {9038, 20.1166195164},       /* Clarke's chain */
    {9039, 0.201166195164},      /* Clarke's link */
    {9040, 0.9143984146160287},  /* British yard (Sears 1922) */
    {9041, 0.3047994715386762},  /* British foot (Sears 1922) */
    {9042, 20.116765121552632},  /* British chain (Sears 1922) */
    {9043, 0.2011676512155263},  /* British link (Sears 1922) */
    {9050, 0.9143992},           /* British yard (Benoit 1895 A) */
    {9051, 0.3047997333333333},  /* British foot (Benoit 1895 A) */
    {9052, 20.1167824},          /* British chain (Benoit 1895 A) */
    {9053, 0.201167824},         /* British link (Benoit 1895 A) */
    {9060, 0.9143992042898124},  /* British yard (Benoit 1895 B) */
    {9061, 0.30479973476327077}, /* British foot (Benoit 1895 B) */
    {9062, 20.116782494375872},  /* British chain (Benoit 1895 B) */
    {9063, 0.2011678249437587},  /* British link (Benoit 1895 B) */
    {9070, 0.30480083333333335}, /* British foot (1865) */
    {9080, 0.30479951024814694}, /* Indian foot */
    {9081, 0.30479841},          /* Indian foot (1937) */
    {9082, 0.3047996},           /* Indian foot (1962) */
    {9083, 0.3047995},           /* Indian foot (1975) */
    {9084, 0.9143985307444408},  /* Indian yard */
    {9085, 0.91439523},          /* Indian yard (1937) */
    {9086, 0.9143988},           /* Indian yard (1962) */
    {9087, 0.9143985},           /* Indian yard (1975) */
    {9093, 1609.344},            /* statute mile */
    {9094, 0.3047997101815088},  /* Gold Coast foot */
    {9095, 0.3048007491},        /* British foot (1936) */
    {9096, 0.9144},              /* yard */
    {9097, 20.1168},             /* chain */
    {9098, 0.201168},            /* link */
    {9099, 0.914398},            /* British yard (Sears 1922 truncated) */
    {9300, 0.30479933333333337}, /* British foot (Sears 1922 truncated) */
    {9301, 20.116756},           /* British chain (Sears 1922 truncated) */
    {9302, 0.20116756},          /* British link (Sears 1922 truncated) */
};

/* Metres per CRS unit of a projected (or unknown) model; 0 when unknown. */
static double linear_unit(const er_georef *g)
{
    unsigned code;
    double size;
    if (!key_short(g, KEY_LINEAR_UNITS, &code))
        return 1.0; /* no unit key: GeoTIFF's default is the CRS's, nearly always metres */
    if (code == USER_DEFINED)
        return key_double(g, KEY_LINEAR_UNIT_SIZE, &size) && isfinite(size) && size > 0 ? size : 0.0;
    for (size_t i = 0; i < sizeof linear_units / sizeof linear_units[0]; i++)
        if (linear_units[i].code == code)
            return linear_units[i].metres;
    /* a code not in the table with its size beside it (io/png_pam.c
     * writes both from a WKT's UNIT) */
    return key_double(g, KEY_LINEAR_UNIT_SIZE, &size) && isfinite(size) && size > 0 ? size : 0.0;
}

/* Degrees per CRS unit of a geographic model; 0 when unknown, and for the
 * sexagesimal notations (EPSG 9107, 9108, 9110, 9111, 9115-9121), where
 * 10.3030 means 10 deg 30' 30": not a scale. */
static double angular_unit(const er_georef *g)
{
    unsigned code;
    double size;
    if (!key_short(g, KEY_ANGULAR_UNITS, &code))
        return 1.0;
    switch (code) {
    case 9101: return 180.0 / PI;         /* radian */
    case 9102:                            /* degree */
    case 9122: return 1.0;                /* degree (supplier to define representation) */
    case 9103: return 1.0 / 60.0;         /* arc-minute */
    case 9104: return 1.0 / 3600.0;       /* arc-second */
    case 1031: return 1.0 / 3600000.0;    /* milliarc-second */
    case 9105:                            /* grad */
    case 9106: return 0.9;                /* gon */
    case 9109: return 1e-6 * 180.0 / PI;  /* microradian */
    case 9112: return 0.009;              /* centesimal minute: 1/100 grad */
    case 9113: return 0.00009;            /* centesimal second: 1/10000 grad */
    case 9114: return 360.0 / 6400.0;     /* mil_6400 */
    default:
        /* user-defined, or a code not above with its size beside it
         * (io/png_pam.c writes both from a WKT's UNIT) */
        return key_double(g, KEY_ANGULAR_UNIT_SIZE, &size) && isfinite(size) && size > 0 ? size * 180.0 / PI : 0.0;
    }
}

static double round_micrometre(double x)
{
    return round(x * 1e6) / 1e6;
}

/* A cell side [m] erode can use: finite and at least a micrometre (what
 * geographic sizes are rounded to). */
static int usable_side(double x)
{
    return isfinite(x) && x >= 1e-6;
}

/* Centre latitudes closer than this to a pole [degrees] give no usable
 * cell width: a degree of longitude is 111 km * cos(lat), 970 m at 89.5
 * degrees, 19 m at 89.99 and nothing at the pole, where the width of the
 * centre cell says nothing about the rest of the raster. */
#define POLE_MARGIN 0.5

/* Whether the column vectors (ax, ay) and (bx, by) of the affine map, a
 * cell's two sides, are not at right angles: a rotated grid keeps square
 * corners and its cells the area x * y, a sheared one has parallelogram
 * cells, which no model's rectangular stencil describes.  The tolerance,
 * a sine of 1e-6, changes the area by under 1e-12: well inside float,
 * and wide enough for a rotation written with a few digits. */
#define SHEARED "sheared geotransform: its cells are parallelograms, not rectangles"
static int sheared(double ax, double ay, double bx, double by)
{
    return fabs(ax * bx + ay * by) > 1e-6 * sqrt(ax * ax + ay * ay) * sqrt(bx * bx + by * by);
}

static int unusable(const char **why, const char *reason)
{
    if (why)
        *why = reason;
    return -1;
}

/* Cell size [m].  A geographic CRS is converted with the WGS 84 ellipsoid's
 * meridian (M) and prime-vertical (N) radii of curvature at the raster's
 * centre latitude phi, e2 = f(2 - f):
 *   M = a(1 - e2) / (1 - e2 sin^2 phi)^(3/2)    metres per radian of latitude
 *   N cos phi = a cos phi / sqrt(1 - e2 sin^2 phi)    per radian of longitude
 * sin/cos may differ in the last bit between libm builds, so the result is
 * rounded to a micrometre, the same on every machine.  Thread-safe, pure. */
int er_georef_cell_size_why(const er_georef *g, int width, int height, double *dx, double *dy, const char **why)
{
    double m[6];
    unsigned model = 0;
    if (why)
        *why = NULL;
    if (!g || (!g->pixel_scale && !g->tiepoints && !g->transformation))
        return 0;
    if (g->pixel_scale && g->n_pixel_scale < 2)
        return unusable(why, "ModelPixelScale has fewer than 2 values");
    if (!g->pixel_scale && g->transformation && g->n_transformation < 16)
        return unusable(why, "ModelTransformation has fewer than 16 values");
    if (!g->pixel_scale && !g->transformation)
        return unusable(why, "tie points without a pixel scale (ground control points) give no cell size");
    key_short(g, KEY_MODEL_TYPE, &model);
    if (model == MODEL_GEOCENTRIC)
        return unusable(why, "geocentric model (GTModelTypeGeoKey 3) has no map plane");

    if (model != MODEL_GEOGRAPHIC) {
        double unit = linear_unit(g), x, y;
        unsigned code = 0;
        if (unit <= 0 && key_short(g, KEY_LINEAR_UNITS, &code) && code == USER_DEFINED)
            /* what io/png_pam.c gives a PNG placed without a CRS */
            return unusable(why, "no CRS, so no linear unit: a world file or geotransform alone does not "
                                 "say whether it counts metres, feet or degrees");
        if (unit <= 0)
            return unusable(why, "unknown linear unit (ProjLinearUnitsGeoKey)");
        if (g->pixel_scale) {
            x = fabs(g->pixel_scale[0]);
            y = fabs(g->pixel_scale[1]);
        } else {
            const double *t = g->transformation; /* 4x4, row-major: column vectors (t0, t4), (t1, t5) */
            x = sqrt(t[0] * t[0] + t[4] * t[4]);
            y = sqrt(t[1] * t[1] + t[5] * t[5]);
        }
        x *= unit;
        y *= unit;
        if (!usable_side(x) || !usable_side(y))
            return unusable(why, "pixel size zero, not finite or under a micrometre");
        if (!g->pixel_scale && sheared(g->transformation[0], g->transformation[4], g->transformation[1],
                                       g->transformation[5]))
            return unusable(why, SHEARED);
        *dx = x;
        *dy = y;
        return 1;
    }

    double deg = angular_unit(g);
    if (deg <= 0)
        return unusable(why, "unknown or sexagesimal angular unit (GeogAngularUnitsGeoKey)");
    if (!raster_to_model(g, m)) {
        const double *sc = g->pixel_scale;
        if (sc && !(isfinite(sc[0]) && isfinite(sc[1]) && sc[0] != 0 && sc[1] != 0))
            return unusable(why, "pixel size zero, not finite or under a micrometre");
        if (sc && !(g->tiepoints && g->n_tiepoints >= 6) && !g->transformation)
            return unusable(why, "geographic pixel scale without a tie point: the latitude is unknown");
        return unusable(why, "tie point or transformation not finite");
    }
    double ci = width / 2.0, cj = height / 2.0;
    double lat = (m[3] + m[4] * ci + m[5] * cj) * deg;
    if (!(lat >= -90.0 && lat <= 90.0))
        return unusable(why, "centre latitude outside -90..90 degrees");
    if (fabs(lat) > 90.0 - POLE_MARGIN)
        return unusable(why, "centre latitude within 0.5 degree of a pole");
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
    if (!usable_side(x) || !usable_side(y))
        return unusable(why, "pixel size zero, not finite or under a micrometre");
    if (sheared(ex, ny, ey, nj))
        return unusable(why, SHEARED);
    *dx = x;
    *dy = y;
    return 1;
}

int er_georef_cell_size(const er_georef *g, int width, int height, double *dx, double *dy)
{
    return er_georef_cell_size_why(g, width, height, dx, dy, NULL) == 1;
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

/* Cuts md's item [p, end) out with the indentation before it and the
 * newline after it. */
static void cut_item(char *md, char *p, char *end)
{
    while (p > md && (p[-1] == ' ' || p[-1] == '\t'))
        p--;
    if (*end == '\n')
        end++;
    memmove(p, end, strlen(end) + 1);
}

/* Drops the GDAL_METADATA tag when nothing but the empty <GDALMetadata>
 * element is left of it. */
static void drop_if_empty(er_georef *g)
{
    char *open = strstr(g->gdal_metadata, "<GDALMetadata>");
    char *close = strstr(g->gdal_metadata, "</GDALMetadata>");
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
        cut_item(md, p, end + sizeof close_tag - 1);
    }
    drop_if_empty(g);
}

/* The item of band `sample` (0-based) named `name` with role `role`, as
 * GDAL's GTiff driver writes a band's scale and offset; NULL if none.
 * *stop is set past its close tag. */
static char *band_item(char *md, const char *name, const char *role, int sample, const char **body,
                       const char **end, char **stop)
{
    char num[16];
    snprintf(num, sizeof num, "%d", sample);
    for (const char *p = md; (p = er_xml_element(p, "Item", body, end)) != NULL; p = *end) {
        if (!er_xml_attr_is(p, "name", name) || !er_xml_attr_is(p, "sample", num) || !er_xml_attr_is(p, "role", role))
            continue;
        const char *gt = *body == *end ? *end : strchr(*end, '>');
        *stop = md + (gt == *end ? gt - md : gt + 1 - md);
        return md + (p - md);
    }
    return NULL;
}

/* A number and nothing else but white space around it. */
static int whole_number(const char *s, double *v)
{
    char *end;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    *v = strtod(s, &end);
    if (end == s)
        return 0;
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    return *end == '\0' && isfinite(*v);
}

int er_georef_take_scale(er_georef *g, int band, double *scale, double *offset)
{
    static const char *const names[2] = {"SCALE", "OFFSET"}, *const roles[2] = {"scale", "offset"};
    double *out[2] = {scale, offset};
    *scale = 1.0;
    *offset = 0.0;
    for (int k = 0; k < 2 && g->gdal_metadata; k++) {
        const char *body, *end;
        char *stop, *item = band_item(g->gdal_metadata, names[k], roles[k], band > 0 ? band - 1 : 0, &body,
                                      &end, &stop);
        if (!item)
            continue;
        char *text = er_xml_text(body, (size_t)(end - body));
        int ok = text && whole_number(text, out[k]);
        free(text);
        if (!ok)
            return 0;
        cut_item(g->gdal_metadata, item, stop);
        drop_if_empty(g);
    }
    return 1;
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

/* Band 1's description item in GDAL_METADATA, as GDAL's GTiff driver
 * writes and reads it; NULL when there is none. */
static const char *description_item(const char *md, const char **body, const char **end)
{
    for (const char *p = md; (p = er_xml_element(p, "Item", body, end)) != NULL; p = *end)
        if (er_xml_attr_is(p, "name", "DESCRIPTION") && er_xml_attr_is(p, "sample", "0")
            && er_xml_attr_is(p, "role", "description"))
            return p;
    return NULL;
}

char *er_gdal_metadata_description(const char *md)
{
    const char *body, *end;
    if (!md || !description_item(md, &body, &end))
        return NULL;
    return er_xml_text(body, (size_t)(end - body));
}

char *er_gdal_metadata_with_description(const char *md, const char *desc)
{
    static const char root[] = "<GDALMetadata>", close_root[] = "</GDALMetadata>";
    const char *close = md ? strstr(md, close_root) : NULL, *body = NULL, *end = NULL;
    if (md && (!strstr(md, root) || !close))
        return strdup(md);
    /* [cut, resume) of md is replaced: by new text inside the item, or by
     * a whole new item (none yet, or an empty "<Item .../>"). */
    const char *item = md ? description_item(md, &body, &end) : NULL;
    const char *cut = body, *resume = end;
    int whole = !item || (body == end && body[-2] == '/');
    if (item && whole) {
        cut = item;
        while (cut > md && (cut[-1] == ' ' || cut[-1] == '\t'))
            cut--;
        resume = end;
        if (*resume == '\n')
            resume++;
    } else if (md && !item) {
        cut = close;
        while (cut > md && (cut[-1] == ' ' || cut[-1] == '\t'))
            cut--;
        resume = cut;
    }
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    int ok = md ? fwrite(md, 1, (size_t)(cut - md), f) == (size_t)(cut - md) : fprintf(f, "%s\n", root) > 0;
    if (ok && whole)
        ok = fputs("  <Item name=\"DESCRIPTION\" sample=\"0\" role=\"description\">", f) >= 0;
    ok = ok && er_xml_put_text(f, desc);
    if (ok && whole)
        ok = fputs("</Item>\n", f) >= 0;
    ok = ok && (md ? fputs(resume, f) >= 0 : fprintf(f, "%s\n", close_root) > 0);
    if (fclose(f) != 0 || !ok) {
        free(out);
        return NULL;
    }
    return out;
}

int er_georef_pixel_is_point(const er_georef *g)
{
    unsigned raster_type = 0;
    return g && key_short(g, KEY_RASTER_TYPE, &raster_type) && raster_type == RASTER_PIXEL_IS_POINT;
}

/* EPSG codes of coordinate reference systems lie in 1024..32766 (GeoTIFF
 * 1.1, 6.3.1: 32767 is user-defined, 32768 and above private). */
static int epsg_code(const er_georef *g, uint16_t key, unsigned *code)
{
    return key_short(g, key, code) && *code >= 1024 && *code < USER_DEFINED;
}

int er_georef_epsg(const er_georef *g, char *buf, size_t n)
{
    unsigned model = 0, h, v;
    if (!g || !key_short(g, KEY_MODEL_TYPE, &model))
        return 0;
    if (!(model == MODEL_PROJECTED ? epsg_code(g, KEY_PROJECTED_TYPE, &h)
                                   : model == MODEL_GEOGRAPHIC && epsg_code(g, KEY_GEOGRAPHIC_TYPE, &h)))
        return 0;
    int k = epsg_code(g, KEY_VERTICAL_TYPE, &v) ? snprintf(buf, n, "EPSG:%u+%u", h, v)
                                                 : snprintf(buf, n, "EPSG:%u", h);
    return k > 0 && (size_t)k < n;
}

/* Keys that name or place nothing: citations (free text that differs
 * between the tools that wrote the same CRS) and the raster type, which
 * er_georef_affine has already applied. */
static int crs_key(uint16_t id)
{
    return id != KEY_GT_CITATION && id != KEY_GEOG_CITATION && id != KEY_PCS_CITATION &&
           id != KEY_RASTER_TYPE;
}

/* 1 when key entry e of a has the same value in b. */
static int same_key(const er_georef *a, const uint16_t *e, const er_georef *b)
{
    const uint16_t *f = find_key(b, e[0]);
    if (!f || f[1] != e[1] || f[2] != e[2])
        return 0;
    if (e[1] == 0)
        return e[3] == f[3];
    if (e[1] == TAG_GEODOUBLES)
        return a->geodoubles && b->geodoubles && (size_t)e[3] + e[2] <= a->n_geodoubles &&
               (size_t)f[3] + f[2] <= b->n_geodoubles &&
               memcmp(a->geodoubles + e[3], b->geodoubles + f[3], e[2] * sizeof(double)) == 0;
    if (e[1] == TAG_GEOASCII)
        return a->geoascii && b->geoascii && (size_t)e[3] + e[2] <= strlen(a->geoascii) &&
               (size_t)f[3] + f[2] <= strlen(b->geoascii) &&
               memcmp(a->geoascii + e[3], b->geoascii + f[3], e[2]) == 0;
    return 0;
}

/* 1 when every CRS key of a has the same value in b. */
static int keys_within(const er_georef *a, const er_georef *b)
{
    size_t n = a->geokeys[3];
    if (n > (a->n_geokeys - 4) / 4)
        n = (a->n_geokeys - 4) / 4;
    for (size_t k = 0; k < n; k++) {
        const uint16_t *e = a->geokeys + 4 + 4 * k;
        if (crs_key(e[0]) && !same_key(a, e, b))
            return 0;
    }
    return 1;
}

int er_georef_same_crs(const er_georef *a, const er_georef *b)
{
    if (!a || !b || !a->geokeys || a->n_geokeys < 4 || !b->geokeys || b->n_geokeys < 4)
        return -1;
    unsigned ma, mb;
    if (key_short(a, KEY_MODEL_TYPE, &ma) && key_short(b, KEY_MODEL_TYPE, &mb) && ma != mb)
        return 0;
    /* the horizontal CRS places the grid: "EPSG:h" or "EPSG:h+v" */
    char ca[32], cb[32];
    if (er_georef_epsg(a, ca, sizeof ca) && er_georef_epsg(b, cb, sizeof cb))
        return strcspn(ca, "+") == strcspn(cb, "+") && strncmp(ca, cb, strcspn(ca, "+")) == 0;
    return keys_within(a, b) && keys_within(b, a);
}
