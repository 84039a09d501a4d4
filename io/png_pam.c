/*
 * GDAL's own georeferencing of a PNG, for a PNG that erode did not write:
 * the PAM file's <GeoTransform>, <SRS> and band 1's <Scale>, <Offset> and
 * <NoDataValue>, and a world file (".pgw", ".pngw" or ".wld", GDAL's PNG
 * driver's order).  The placement and the CRS become the GeoTIFF tags the
 * rest of erode reads (io/geotags.c) and GeoTIFF outputs carry:
 *
 *   geotransform without rotation  ModelPixelScale + one ModelTiepoint
 *   rotated or sheared             ModelTransformation
 *   SRS (GDAL writes WKT1; WKT2)   GTModelType, the CRS's EPSG code from
 *                                  its AUTHORITY/ID, its unit: EPSG's
 *                                  metre or degree, else user-defined
 *                                  with its size from the WKT's UNIT
 *   no SRS, or one not understood  a user-defined linear unit of unknown
 *                                  size: a world file's numbers may be
 *                                  metres, feet or degrees, so the cell
 *                                  size is refused (erode(1)) rather than
 *                                  guessed
 *
 * Not a WKT parser: it reads the outermost node's keyword and its direct
 * children (and an AXIS's unit in WKT2), which is where GDAL puts them.
 */
#include "geokeys.h"
#include "image.h"
#include "png_common.h"
#include "xml.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Larger sidecars are refused rather than read: erode's are a few KiB. */
#define ER_PNG_AUX_MAX ((size_t)64 << 20)

er_status er_png_sidecar_slurp(const char *png, const char *path, char **text, er_error *err)
{
    *text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return ER_OK;
        return er_fail(err, ER_EIO, "cannot read '%s': its sidecar '%s': %s", png, path, strerror(errno));
    }
    struct stat sb;
    er_status st = ER_OK;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))
        st = er_fail(err, ER_EFORMAT, "cannot read '%s': its sidecar '%s' is not a regular file", png, path);
    else if ((unsigned long long)sb.st_size > ER_PNG_AUX_MAX)
        st = er_fail(err, ER_EFORMAT, "cannot read '%s': its sidecar '%s' is over %zu MiB", png, path,
                     ER_PNG_AUX_MAX >> 20);
    else if (!(*text = malloc((size_t)sb.st_size + 1)))
        st = er_fail(err, ER_ENOMEM, "cannot read '%s': out of memory", png);
    else if (fread(*text, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size)
        st = er_fail(err, ER_EIO, "cannot read '%s': its sidecar '%s': %s", png, path,
                     ferror(f) ? strerror(errno) : "truncated");
    else
        (*text)[sb.st_size] = '\0';
    fclose(f);
    if (st) {
        free(*text);
        *text = NULL;
    }
    return st;
}

#define PI 3.14159265358979323846

/* ---- WKT ---- */

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* The length of the keyword at p (letters, digits, '_'). */
static size_t keyword_len(const char *p)
{
    size_t n = 0;
    while ((p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9')
           || p[n] == '_')
        n++;
    return n;
}

static int is_keyword(const char *p, size_t n, const char *name)
{
    return n == strlen(name) && strncmp(p, name, n) == 0;
}

/* The closing quote of the string opened at p ("" inside one is a
 * quote); NULL when it never closes. */
static const char *string_end(const char *p)
{
    for (p++; *p; p++) {
        if (*p == '"' && p[1] == '"')
            p++;
        else if (*p == '"')
            return p;
    }
    return NULL;
}

/* The bracket that closes the one at open ('[' or '('), strings skipped;
 * NULL when it never closes. */
static const char *close_of(const char *open)
{
    int depth = 0;
    for (const char *p = open; p && *p; p++) {
        if (*p == '"')
            p = string_end(p);
        else if (*p == '[' || *p == '(')
            depth++;
        else if ((*p == ']' || *p == ')') && --depth == 0)
            return p;
        if (!p)
            return NULL;
    }
    return NULL;
}

/* Past the argument at p (a node, a string or a bare token) and the comma
 * after it: the next argument, or NULL after the last one (or on damage). */
static const char *next_arg(const char *p)
{
    p = skip_space(p);
    size_t n = keyword_len(p);
    const char *q = skip_space(p + n);
    const char *last = n && (*q == '[' || *q == '(') ? close_of(q) : *p == '"' ? string_end(p) : p - 1;
    if (!last)
        return NULL;
    p = last + 1; /* past the node or string, or at a bare token */
    p = skip_space(p + strcspn(p, ",])"));
    return *p == ',' ? p + 1 : NULL;
}

static const char *open_of(const char *node)
{
    const char *q = skip_space(node + keyword_len(node));
    return *q == '[' || *q == '(' ? q : NULL;
}

/* The first direct child of the node whose bracket is at open named one
 * of names (NULL-terminated): its keyword; NULL when none. */
static const char *child(const char *open, const char *const *names)
{
    for (const char *p = open + 1; p; p = next_arg(p)) {
        p = skip_space(p);
        size_t n = keyword_len(p);
        for (int k = 0; n && names[k] && open_of(p); k++)
            if (is_keyword(p, n, names[k]))
                return p;
    }
    return NULL;
}

/* The number that is argument `arg` (0-based) of the node at node, quoted
 * or not: AUTHORITY["EPSG","32618"], ID["EPSG",32618], UNIT["metre",1]. */
static int node_number(const char *node, int arg, double *v)
{
    const char *p = open_of(node);
    if (!p)
        return 0;
    p++;
    for (int k = 0; k < arg && p; k++)
        p = next_arg(p);
    if (!p)
        return 0;
    p = skip_space(p);
    p += *p == '"';
    char *e;
    *v = strtod(p, &e);
    return e != p && isfinite(*v);
}

static const char *const crs_names[] = {"PROJCS", "PROJCRS", "PROJECTEDCRS", "GEOGCS", "GEOGCRS",
                                        "GEOGRAPHICCRS", "GEODCRS", "GEODETICCRS", NULL};

/* What erode takes from a CRS's WKT. */
typedef struct crs_facts {
    int projected;    /* 1 projected, 0 geographic */
    unsigned code;    /* EPSG code, 0 when none */
    double unit;      /* metres (projected) or radians (geographic) per unit; 0 unknown */
    unsigned unit_code; /* the unit's EPSG code, 0 when none */
} crs_facts;

/* An EPSG code in GeoKey range (1024..32766) from an AUTHORITY or ID node. */
static unsigned epsg_of(const char *id)
{
    double code = 0;
    return id && node_number(id, 1, &code) && code >= 1024 && code < USER_DEFINED && code == floor(code)
         ? (unsigned)code : 0;
}

static int wkt_facts(const char *wkt, crs_facts *f)
{
    static const char *const compound[] = {"COMPD_CS", "COMPOUNDCRS", NULL};
    static const char *const ids[] = {"AUTHORITY", "ID", NULL};
    static const char *const units[] = {"UNIT", "LENGTHUNIT", "ANGLEUNIT", NULL};
    static const char *const axis[] = {"AXIS", NULL};
    const char *node = skip_space(wkt);
    size_t n = keyword_len(node);
    for (int k = 0; compound[k]; k++)
        if (is_keyword(node, n, compound[k]) && open_of(node))
            node = child(open_of(node), crs_names), n = node ? keyword_len(node) : 0;
    int known = 0;
    for (int k = 0; node && crs_names[k]; k++)
        known |= is_keyword(node, n, crs_names[k]);
    const char *open = known ? open_of(node) : NULL;
    if (!open)
        return 0;
    f->projected = node[0] == 'P';
    const char *unit = child(open, units);
    f->code = epsg_of(child(open, ids));
    if (!unit) {
        const char *a = child(open, axis);
        unit = a && open_of(a) ? child(open_of(a), units) : NULL;
    }
    if (!unit || !node_number(unit, 1, &f->unit) || !(f->unit > 0))
        f->unit = 0;
    f->unit_code = unit && f->unit > 0 ? epsg_of(child(open_of(unit), ids)) : 0;
    return 1;
}

/* ---- GeoTIFF tags ---- */


/* GeoKeys for the facts (f NULL: not known): the GeoKey directory, keys
 * in ascending order as GeoTIFF asks, and its one double. */
static int put_keys(er_georef *g, const crs_facts *f)
{
    uint16_t k[4 + 4 * 5];
    size_t n = 0;
    double size = 0;
    int proj = !f || f->projected;
    /* the unit's EPSG code when it has one (io/geotags.c knows the exact
     * factors of the common ones: 1200/3937 m for the US survey foot, not
     * the WKT's 15 digits), its size beside it for those it does not */
    unsigned ucode = f && f->unit_code ? f->unit_code
                   : f && f->projected && f->unit == 1.0 ? EPSG_METRE
                   : f && !f->projected && fabs(f->unit - PI / 180) <= 1e-12 ? EPSG_DEGREE : USER_DEFINED;
    int sized = f && f->unit > 0 && ucode != EPSG_METRE && ucode != EPSG_DEGREE;
#define KEY(id, tag, count, v) (k[4 + 4 * n] = (id), k[5 + 4 * n] = (tag), k[6 + 4 * n] = (count), \
                                k[7 + 4 * n] = (uint16_t)(v), n++)
    KEY(KEY_MODEL_TYPE, 0, 1, proj ? MODEL_PROJECTED : MODEL_GEOGRAPHIC);
    KEY(KEY_RASTER_TYPE, 0, 1, RASTER_PIXEL_IS_AREA); /* a geotransform's origin is a cell's corner */
    if (!proj) {
        KEY(KEY_GEOGRAPHIC_TYPE, 0, 1, f->code ? f->code : USER_DEFINED);
        KEY(KEY_ANGULAR_UNITS, 0, 1, ucode);
        if (sized)
            KEY(KEY_ANGULAR_UNIT_SIZE, TAG_GEODOUBLES, 1, 0), size = f->unit;
    } else {
        if (f)
            KEY(KEY_PROJECTED_TYPE, 0, 1, f->code ? f->code : USER_DEFINED);
        KEY(KEY_LINEAR_UNITS, 0, 1, ucode);
        if (sized)
            KEY(KEY_LINEAR_UNIT_SIZE, TAG_GEODOUBLES, 1, 0), size = f->unit;
    }
#undef KEY
    k[0] = 1, k[1] = 1, k[2] = 0, k[3] = (uint16_t)n;
    g->n_geokeys = 4 + 4 * n;
    if (!(g->geokeys = malloc(g->n_geokeys * sizeof *g->geokeys)))
        return 0;
    memcpy(g->geokeys, k, g->n_geokeys * sizeof *k);
    if (size > 0) {
        if (!(g->geodoubles = malloc(sizeof *g->geodoubles)))
            return 0;
        g->geodoubles[0] = size;
        g->n_geodoubles = 1;
    }
    return 1;
}

/* The placement of geotransform gt (GDAL's: x = gt0 + col gt1 + row gt2,
 * y = gt3 + col gt4 + row gt5 at cell corners). */
static int put_placement(er_georef *g, const double gt[6])
{
    if (gt[2] == 0 && gt[4] == 0 && gt[1] > 0 && gt[5] < 0) {
        g->pixel_scale = malloc(3 * sizeof(double));
        g->tiepoints = malloc(6 * sizeof(double));
        if (!g->pixel_scale || !g->tiepoints)
            return 0;
        const double s[3] = {gt[1], -gt[5], 0}, t[6] = {0, 0, 0, gt[0], gt[3], 0};
        memcpy(g->pixel_scale, s, sizeof s);
        memcpy(g->tiepoints, t, sizeof t);
        g->n_pixel_scale = 3;
        g->n_tiepoints = 6;
        return 1;
    }
    const double m[16] = {gt[1], gt[2], 0, gt[0], gt[4], gt[5], 0, gt[3], 0, 0, 0, 0, 0, 0, 0, 1};
    if (!(g->transformation = malloc(sizeof m)))
        return 0;
    memcpy(g->transformation, m, sizeof m);
    g->n_transformation = 16;
    return 1;
}

/* ---- the PAM file and the world file ---- */

/* Six numbers separated by commas or white space, all finite. */
static int six_numbers(const char *s, const char *sep, double v[6])
{
    for (int k = 0; k < 6; k++) {
        char *e;
        s += strspn(s, sep);
        v[k] = strtod(s, &e);
        if (e == s || !isfinite(v[k]))
            return 0;
        s = e;
    }
    return *(s + strspn(s, sep)) == '\0';
}

/* The text of the first element `name` in [s, ...), decoded; NULL when
 * none (*bad = 0) or malformed (*bad = 1). */
static char *element_text(const char *s, const char *name, int *bad)
{
    const char *body, *end;
    *bad = 0;
    if (!er_xml_element(s, name, &body, &end))
        return NULL;
    char *t = er_xml_text(body, (size_t)(end - body));
    *bad = t == NULL;
    return t;
}

int er_png_world_path(const char *png, int k, char *buf, size_t n)
{
    const char *slash = strrchr(png, '/'), *base = slash ? slash + 1 : png;
    const char *dot = strrchr(base, '.');
    if (k < 0 || k > 2 || !dot || dot == base || !dot[1])
        return 0;
    int keep = (int)(dot - png), w;
    const char *ext = dot + 1;
    if (k == 0)
        w = snprintf(buf, n, "%.*s.%c%cw", keep, png, ext[0], ext[strlen(ext) - 1]);
    else if (k == 1)
        w = snprintf(buf, n, "%.*s.%sw", keep, png, ext);
    else
        w = snprintf(buf, n, "%.*s.wld", keep, png);
    return w > 0 && (size_t)w < n;
}

/* A world file's geotransform: its six lines are the cell's x size, the
 * two rotation terms, its y size, then the centre of the top-left cell.
 * 1 found, 0 none, -1 malformed (*which names it). */
static int world_geotransform(const char *png, double gt[6], char *which, size_t which_n, er_status *st,
                              er_error *err)
{
    char path[4096];
    for (int k = 0; k < 3; k++) {
        char *text;
        if (!er_png_world_path(png, k, path, sizeof path))
            continue;
        if ((*st = er_png_sidecar_slurp(png, path, &text, err)) != ER_OK)
            return -1;
        if (!text)
            continue;
        double w[6];
        int ok = six_numbers(text, " \t\r\n", w);
        free(text);
        snprintf(which, which_n, "%s", path);
        if (!ok)
            return -1;
        gt[1] = w[0], gt[4] = w[1], gt[2] = w[2], gt[5] = w[3];
        gt[0] = w[4] - 0.5 * w[0] - 0.5 * w[2];
        gt[3] = w[5] - 0.5 * w[1] - 0.5 * w[3];
        return 1;
    }
    return 0;
}

/* Band 1's scale, offset and nodata value from the PAM text. */
static int pam_band(const char *text, er_png_pam *pam)
{
    const char *body, *end, *p = text;
    while ((p = er_xml_element(p, "PAMRasterBand", &body, &end)) != NULL && !er_xml_attr_is(p, "band", "1"))
        p = end;
    if (!p)
        return 1;
    char *scope = strndup(body, (size_t)(end - body));
    if (!scope)
        return 0;
    static const char *const names[3] = {"Scale", "Offset", "NoDataValue"};
    double *out[3] = {&pam->scale, &pam->offset, &pam->nodata};
    int ok = 1;
    for (int k = 0; k < 3 && ok; k++) {
        int bad;
        char *t = element_text(scope, names[k], &bad);
        if (t) {
            char *e;
            *out[k] = strtod(t, &e);
            ok = e != t && *(e + strspn(e, " \t\r\n")) == '\0' && (k == 2 || isfinite(*out[k]));
            if (k < 2)
                pam->has_scale = 1;
            else
                pam->has_nodata = 1;
        }
        ok = ok && !bad;
        free(t);
    }
    free(scope);
    return ok;
}

er_status er_png_pam_read(const char *png, const char *aux, const char *text, int georef_taken, er_image *img,
                          er_png_pam *pam, er_error *err)
{
    double gt[6];
    char which[4096] = "";
    int bad = 0, has_gt = 0;
    er_status st = ER_OK;
    pam->scale = 1.0, pam->offset = 0.0;
    if (text && !pam_band(text, pam))
        return er_fail(err, ER_EFORMAT, "cannot read '%s': its sidecar '%s' has a bad band Scale, Offset or "
                       "NoDataValue", png, aux);
    if (georef_taken)
        return ER_OK;
    char *t = text ? element_text(text, "GeoTransform", &bad) : NULL;
    if (t)
        has_gt = six_numbers(t, ", \t\r\n", gt) ? 1 : -1;
    free(t);
    if (bad || has_gt < 0)
        return er_fail(err, ER_EFORMAT, "cannot read '%s': its sidecar '%s' has a bad GeoTransform", png, aux);
    if (!has_gt && (has_gt = world_geotransform(png, gt, which, sizeof which, &st, err)) < 0)
        return st ? st : er_fail(err, ER_EFORMAT, "cannot read '%s': its world file '%s' is not six numbers",
                                 png, which);
    char *srs = text ? element_text(text, "SRS", &bad) : NULL;
    crs_facts f = {1, 0, 0, 0};
    int known = srs && wkt_facts(srs, &f);
    free(srs);
    if (!has_gt && !known)
        return ER_OK;
    if ((has_gt && !put_placement(&img->georef, gt)) || !put_keys(&img->georef, known ? &f : NULL)) {
        er_georef_free(&img->georef);
        return er_fail(err, ER_ENOMEM, "cannot read '%s': out of memory", png);
    }
    return ER_OK;
}
