#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

er_status er_image_read(const char *path, const er_read_opts *opts, er_image *img, er_error *err)
{
    return er_image_read_progress(path, opts, NULL, img, err);
}

/* The format the file's first bytes say: 1 and *fmt, 0 when neither
 * signature is there (head: `got` bytes of the file's start). */
static int sniff_bytes(const unsigned char *head, size_t got, er_file_format *fmt)
{
    static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (got >= 8 && memcmp(head, png_magic, 8) == 0) {
        *fmt = ER_FORMAT_PNG;
        return 1;
    }
    if (got >= 4 && ((head[0] == 'I' && head[1] == 'I') || (head[0] == 'M' && head[1] == 'M'))) {
        *fmt = ER_FORMAT_TIFF;
        return 1;
    }
    return 0;
}

/* Up to 8 bytes of the file's start; -1 with errno when it cannot be
 * opened. */
static long read_head(const char *path, unsigned char head[8])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t got = fread(head, 1, 8, f);
    fclose(f);
    return (long)got;
}

int er_image_sniff(const char *path, er_file_format *fmt)
{
    unsigned char head[8] = {0};
    /* never blocks: a FIFO or a device is not opened for reading here */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return 0;
    ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, head, sizeof head) : -1;
    close(fd);
    return got > 0 && sniff_bytes(head, (size_t)got, fmt);
}

er_status er_image_read_progress(const char *path, const er_read_opts *opts, const er_io_progress *pg,
                                 er_image *img, er_error *err)
{
    unsigned char head[8] = {0};
    er_file_format fmt;
    memset(img, 0, sizeof *img);
    long got = read_head(path, head);
    if (got < 0)
        return er_fail(err, ER_EIO, "cannot read '%s': %s", path, strerror(errno));
    if (sniff_bytes(head, (size_t)got, &fmt))
        return fmt == ER_FORMAT_PNG ? er_png_read_progress(path, opts, pg, img, err)
                                    : er_tiff_read_progress(path, opts, pg, img, err);
    if (got == 0)
        return er_fail(err, ER_EFORMAT, "cannot read '%s': empty file", path);
    return er_fail(err, ER_EFORMAT, "cannot read '%s': not a TIFF or PNG file", path);
}
