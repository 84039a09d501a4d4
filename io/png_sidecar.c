/*
 * The sidecars that georeference a PNG heightmap the way GDAL does it for
 * PNG, which has no place for georeferencing of its own:
 *
 *   "<name>.png.aux.xml"  GDAL's PAM file: the CRS as an EPSG code, the
 *                         geotransform, AREA_OR_POINT, and for band 1 its
 *                         description and the scale and offset that turn
 *                         the 16-bit samples into heights (erode's mapping,
 *                         io/png_common.h); and, in the metadata domain
 *                         ER_PNG_DOMAIN, the input's GeoTIFF tags verbatim,
 *                         so erode reads back exactly what it was given
 *   "<name>.pgw"          an ESRI world file (GDAL, QGIS, ArcGIS)
 *
 * The PAM file is written beside every PNG, georeferenced or not, so that
 * GDAL and QGIS read heights, not 16-bit codes; the world file only beside
 * a placed one.  GDAL takes the geotransform from the PAM file first (its
 * GDAL_GEOREF_SOURCES default for PNG), the world file when there is
 * none.  The PNG's nodata is its alpha channel, which GDAL reads as the
 * band's mask; the PAM file declares no nodata value, since GDAL would
 * then mask by value instead, and every 16-bit code may be a valid height.
 */
#include "atomic.h"
#include "image.h"
#include "png_common.h"
#include "xml.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int er_png_sidecar_paths(const char *png, char *aux, size_t aux_n, char *world, size_t world_n)
{
    const char *slash = strrchr(png, '/');
    const char *base = slash ? slash + 1 : png;
    const char *dot = strrchr(base, '.');
    size_t keep = dot && dot != base ? (size_t)(dot - png) : strlen(png);
    int a = snprintf(aux, aux_n, "%s" ER_PNG_AUX_SUFFIX, png);
    int w = snprintf(world, world_n, "%.*s." ER_PNG_WORLD_EXT, (int)keep, png);
    return a > 0 && (size_t)a < aux_n && w > 0 && (size_t)w < world_n;
}

/* Georeferencing worth sidecars: something that places the raster or
 * names its CRS (GDAL_NODATA or GDAL_METADATA alone do neither). */
static int georeferenced(const er_georef *g)
{
    return g && (g->pixel_scale || g->tiepoints || g->transformation || g->geokeys);
}

/* ---- writing ---- */

static int put_doubles(FILE *f, const char *key, const double *v, size_t n)
{
    if (!v || n == 0)
        return 1;
    int ok = fprintf(f, "    <MDI key=\"%s\">", key) > 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = fprintf(f, i ? " %.17g" : "%.17g", v[i]) > 0;
    return ok && fputs("</MDI>\n", f) >= 0;
}

static int put_string(FILE *f, const char *key, const char *s)
{
    if (!s)
        return 1;
    return fprintf(f, "    <MDI key=\"%s\">", key) > 0 && er_xml_put_text(f, s) && fputs("</MDI>\n", f) >= 0;
}

/* The input's GeoTIFF tags as they are: doubles with %.17g (exact through
 * strtod), GeoKeys as numbers, strings escaped.  None without
 * georeferencing: the PAM file then holds the band's scale and offset
 * only, and a later read takes nothing from it but them. */
static int put_domain(FILE *f, const er_layer_out *l)
{
    const er_georef *g = l->georef;
    if (!georeferenced(g))
        return 1;
    int ok = fprintf(f, "  <Metadata domain=\"%s\">\n    <MDI key=\"RASTER_SIZE\">%d %d</MDI>\n", ER_PNG_DOMAIN,
                     l->width, l->height) > 0
          && put_doubles(f, "MODEL_PIXEL_SCALE", g->pixel_scale, g->n_pixel_scale)
          && put_doubles(f, "MODEL_TIEPOINT", g->tiepoints, g->n_tiepoints)
          && put_doubles(f, "MODEL_TRANSFORMATION", g->transformation, g->n_transformation);
    if (ok && g->geokeys && g->n_geokeys) {
        ok = fputs("    <MDI key=\"GEO_KEY_DIRECTORY\">", f) >= 0;
        for (size_t i = 0; ok && i < g->n_geokeys; i++)
            ok = fprintf(f, i ? " %u" : "%u", (unsigned)g->geokeys[i]) > 0;
        ok = ok && fputs("</MDI>\n", f) >= 0;
    }
    return ok && put_doubles(f, "GEO_DOUBLE_PARAMS", g->geodoubles, g->n_geodoubles)
        && put_string(f, "GEO_ASCII_PARAMS", g->geoascii) && put_string(f, "GDAL_NODATA", g->gdal_nodata)
        && put_string(f, "GDAL_METADATA", g->gdal_metadata) && fputs("  </Metadata>\n", f) >= 0;
}

/* The PAM file's text; NULL when out of memory.  The caller frees. */
static char *aux_text(const er_layer_out *l, double min, double max)
{
    const er_georef *g = l->georef;
    char *s = NULL, srs[64];
    size_t len = 0;
    double m[6];
    FILE *f = open_memstream(&s, &len);
    if (!f)
        return NULL;
    int ok = fputs("<PAMDataset>\n", f) >= 0;
    if (ok && er_georef_epsg(g, srs, sizeof srs))
        ok = fprintf(f, "  <SRS>%s</SRS>\n", srs) > 0;
    if (ok && er_georef_affine(g, m))
        ok = fprintf(f, "  <GeoTransform>%.17g, %.17g, %.17g, %.17g, %.17g, %.17g</GeoTransform>\n"
                        "  <Metadata>\n    <MDI key=\"AREA_OR_POINT\">%s</MDI>\n  </Metadata>\n",
                     m[0], m[1], m[2], m[3], m[4], m[5], er_georef_pixel_is_point(g) ? "Point" : "Area") > 0;
    ok = ok && put_domain(f, l) && fputs("  <PAMRasterBand band=\"1\">\n", f) >= 0;
    char *desc = g ? er_gdal_metadata_description(g->gdal_metadata) : NULL;
    if (ok && desc)
        ok = fputs("    <Description>", f) >= 0 && er_xml_put_text(f, desc) && fputs("</Description>\n", f) >= 0;
    free(desc);
    /* GDAL reads raw * Scale + Offset: erode's min + raw / 65535 * (max - min). */
    ok = ok && fprintf(f, "    <Offset>%.17g</Offset>\n    <Scale>%.17g</Scale>\n  </PAMRasterBand>\n</PAMDataset>\n",
                       min, (max - min) / 65535.0) > 0;
    if (fclose(f) != 0 || !ok) {
        free(s);
        return NULL;
    }
    return s;
}

/* The world file: x size, the two rotation terms, y size, then the centre
 * of the top-left cell (not its corner, as GDAL's geotransform has it). */
static int world_text(const double m[6], char *buf, size_t n)
{
    int k = snprintf(buf, n, "%.17g\n%.17g\n%.17g\n%.17g\n%.17g\n%.17g\n", m[1], m[4], m[2], m[5],
                     m[0] + 0.5 * m[1] + 0.5 * m[2], m[3] + 0.5 * m[4] + 0.5 * m[5]);
    return k > 0 && (size_t)k < n;
}

er_status er_png_sidecars_write(const char *png, const er_layer_out *layer, double min, double max, er_error *err)
{
    char aux[4096], world[4096], wtext[256];
    double m[6];
    if (!er_png_sidecar_paths(png, aux, sizeof aux, world, sizeof world))
        return er_fail(err, ER_EINVAL, "cannot write '%s': name too long for its sidecars", png);
    char *text = aux_text(layer, min, max);
    if (!text)
        return er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", aux);
    er_status st = er_atomic_write_file(aux, text, strlen(text), err);
    free(text);
    if (st)
        return st;
    /* No placement: a world file an earlier run left would lie. */
    if (!er_georef_affine(layer->georef, m) || !world_text(m, wtext, sizeof wtext))
        return er_atomic_remove(world, err);
    return er_atomic_write_file(world, wtext, strlen(wtext), err);
}

/* ---- reading ---- */

/* Numbers separated by white space: all of s, at least one. */
static int parse_doubles(const char *s, double **v, size_t *n)
{
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r';
    *v = malloc(cap * sizeof **v);
    *n = 0;
    if (!*v)
        return 0;
    for (const char *p = s;;) {
        char *end;
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
            p++;
        if (!*p)
            break;
        double x = strtod(p, &end);
        if (end == p || *n == cap || (*end && *end != ' ' && *end != '\n' && *end != '\t' && *end != '\r'))
            return 0;
        (*v)[(*n)++] = x;
        p = end;
    }
    return *n > 0;
}

static int parse_shorts(const char *s, uint16_t **v, size_t *n)
{
    double *d;
    size_t k;
    *v = NULL;
    if (!parse_doubles(s, &d, &k)) {
        free(d);
        return 0;
    }
    *v = malloc(k * sizeof **v);
    int ok = *v != NULL;
    for (size_t i = 0; ok && i < k; i++) {
        ok = d[i] >= 0 && d[i] <= 65535 && d[i] == (double)(uint16_t)d[i];
        if (ok)
            (*v)[i] = (uint16_t)d[i];
    }
    free(d);
    *n = k;
    return ok;
}

/* One MDI of the domain into img; 0 when its value cannot be read, with
 * *what saying why when it is more than a bad value. */
static int take_item(er_image *img, const char *key, size_t klen, char *val, char *what, size_t what_n)
{
    er_georef *g = &img->georef;
#define KEY_IS(name) (klen == sizeof name - 1 && memcmp(key, name, klen) == 0)
    if (KEY_IS("RASTER_SIZE")) {
        int w, h, used = 0;
        if (sscanf(val, "%d %d%n", &w, &h, &used) != 2 || val[used] != '\0')
            return 0;
        if (w != img->width || h != img->height)
            snprintf(what, what_n, "is for a %dx%d raster, the PNG is %dx%d", w, h, img->width, img->height);
        return !what[0];
    }
    if (KEY_IS("MODEL_PIXEL_SCALE"))
        return !g->pixel_scale && parse_doubles(val, &g->pixel_scale, &g->n_pixel_scale);
    if (KEY_IS("MODEL_TIEPOINT"))
        return !g->tiepoints && parse_doubles(val, &g->tiepoints, &g->n_tiepoints);
    if (KEY_IS("MODEL_TRANSFORMATION"))
        return !g->transformation && parse_doubles(val, &g->transformation, &g->n_transformation);
    if (KEY_IS("GEO_KEY_DIRECTORY"))
        return !g->geokeys && parse_shorts(val, &g->geokeys, &g->n_geokeys);
    if (KEY_IS("GEO_DOUBLE_PARAMS"))
        return !g->geodoubles && parse_doubles(val, &g->geodoubles, &g->n_geodoubles);
    char **str = KEY_IS("GEO_ASCII_PARAMS") ? &g->geoascii
               : KEY_IS("GDAL_NODATA") ? &g->gdal_nodata
               : KEY_IS("GDAL_METADATA") ? &g->gdal_metadata : NULL;
#undef KEY_IS
    if (!str)
        return 1; /* a key a later erode may add */
    if (*str || !(*str = strdup(val)))
        return 0;
    return str != &g->gdal_nodata || er_nodata_parse(val, &img->nodata_value);
}

/* Reads the ER_PNG_DOMAIN metadata of the PAM text into img; *found says
 * whether there was one.  Returns 0 with *what saying what is wrong with
 * it ("has a bad ... MODEL_TIEPOINT"). */
static int read_domain(const char *text, er_image *img, int *found, char *what, size_t what_n)
{
    const char *body, *end, *md = text;
    *found = 0;
    while ((md = er_xml_element(md, "Metadata", &body, &end)) != NULL) {
        if (er_xml_attr_is(md, "domain", ER_PNG_DOMAIN))
            break;
        md = end;
    }
    if (!md)
        return 1;
    *found = 1;
    int sized = 0;
    char *scope = strndup(body, (size_t)(end - body));
    if (!scope) {
        snprintf(what, what_n, "out of memory");
        return 0;
    }
    const char *p = scope, *vb, *ve;
    while ((p = er_xml_element(p, "MDI", &vb, &ve)) != NULL) {
        size_t klen;
        const char *key = er_xml_attr(p, "key", &klen);
        char *val = er_xml_text(vb, (size_t)(ve - vb));
        what[0] = '\0';
        int ok = key && val && take_item(img, key, klen, val, what, what_n);
        sized |= key && klen == 11 && memcmp(key, "RASTER_SIZE", 11) == 0;
        free(val);
        if (!ok) {
            if (!what[0])
                snprintf(what, what_n, "has a bad %s %.*s", ER_PNG_DOMAIN, key ? (int)(klen < 64 ? klen : 64) : 3,
                         key ? key : "MDI");
            free(scope);
            return 0;
        }
        p = ve;
    }
    free(scope);
    if (!sized)
        snprintf(what, what_n, "has no %s RASTER_SIZE", ER_PNG_DOMAIN);
    return sized;
}

er_status er_png_sidecars_read(const char *png, er_image *img, er_png_pam *pam, er_error *err)
{
    char aux[4096], world[4096], what[160];
    char *text;
    memset(pam, 0, sizeof *pam);
    pam->scale = 1.0;
    if (!er_png_sidecar_paths(png, aux, sizeof aux, world, sizeof world))
        return ER_OK; /* no sidecar can have such a name */
    er_status st = er_png_sidecar_slurp(png, aux, &text, err);
    if (st)
        return st;
    int found = 0;
    if (text && !read_domain(text, img, &found, what, sizeof what)) {
        st = er_fail(err, ER_EFORMAT, "cannot read '%s': its sidecar '%s' %s", png, aux, what);
    } else {
        if (found && img->georef.gdal_nodata)
            img->has_nodata_value = 1;
        st = er_png_pam_read(png, aux, text, found, img, pam, err);
    }
    if (st) {
        er_georef_free(&img->georef);
        img->has_nodata_value = 0;
        img->nodata_value = NAN;
    }
    free(text);
    return st;
}
