/*
 * The raster types every reader and writer shares (image.h): freeing and
 * copying an image's georeferencing, and a nodata value's text.  Apart
 * from image.c, which picks a reader, so that the readers need not call
 * the file that calls them.
 */
#include "image.h"

#include <stdlib.h>
#include <string.h>

void er_georef_free(er_georef *g)
{
    if (!g)
        return;
    free(g->pixel_scale);
    free(g->tiepoints);
    free(g->transformation);
    free(g->geokeys);
    free(g->geodoubles);
    free(g->geoascii);
    free(g->gdal_nodata);
    free(g->gdal_metadata);
    memset(g, 0, sizeof *g);
}

void er_image_free(er_image *img)
{
    if (!img)
        return;
    free(img->data);
    free(img->nodata);
    er_georef_free(&img->georef);
    free(img->description);
    memset(img, 0, sizeof *img);
}

static int dup_array(void **dst, const void *src, size_t n, size_t elem)
{
    *dst = NULL;
    if (!src || n == 0)
        return 1;
    *dst = malloc(n * elem);
    if (!*dst)
        return 0;
    memcpy(*dst, src, n * elem);
    return 1;
}

static int dup_string(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return !src || *dst;
}

er_status er_georef_copy(er_georef *dst, const er_georef *src, er_error *err)
{
    memset(dst, 0, sizeof *dst);
    dst->n_pixel_scale = src->n_pixel_scale;
    dst->n_tiepoints = src->n_tiepoints;
    dst->n_transformation = src->n_transformation;
    dst->n_geokeys = src->n_geokeys;
    dst->n_geodoubles = src->n_geodoubles;
    int ok = dup_array((void **)&dst->pixel_scale, src->pixel_scale, src->n_pixel_scale, sizeof(double))
          && dup_array((void **)&dst->tiepoints, src->tiepoints, src->n_tiepoints, sizeof(double))
          && dup_array((void **)&dst->transformation, src->transformation, src->n_transformation, sizeof(double))
          && dup_array((void **)&dst->geokeys, src->geokeys, src->n_geokeys, sizeof(uint16_t))
          && dup_array((void **)&dst->geodoubles, src->geodoubles, src->n_geodoubles, sizeof(double))
          && dup_string(&dst->geoascii, src->geoascii)
          && dup_string(&dst->gdal_nodata, src->gdal_nodata)
          && dup_string(&dst->gdal_metadata, src->gdal_metadata);
    if (!ok) {
        er_georef_free(dst);
        return er_fail(err, ER_ENOMEM, "out of memory");
    }
    return ER_OK;
}

/* GDAL writes the value with %.18g or as "nan"/"inf"; strtod reads both. */
int er_nodata_parse(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    if (end == s)
        return 0;
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    return *end == '\0';
}
