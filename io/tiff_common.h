/*
 * Private glue shared by the GeoTIFF reader and writer (io/tiff_read.c,
 * io/tiff_write.c) and their unit tests; not part of io/image.h.
 *
 * libtiff 4.5 knows the GeoTIFF and GDAL tag numbers only as #defines in
 * tiff.h: its field table (tif_dirinfo.c) has no entries for them, so a file
 * read without help gets them as anonymous fields, typed as found, and a
 * writer cannot set them at all.  er_tiff_register_tags() installs a tag
 * extender (chained to any earlier one) that merges their definitions into
 * every TIFF handle opened afterwards in this process.
 */
#ifndef ER_TIFF_COMMON_H
#define ER_TIFF_COMMON_H

#include <stddef.h>
#include <tiffio.h>

#include "image.h"

#define ER_TAG_PIXEL_SCALE 33550u    /* ModelPixelScaleTag, DOUBLE[3] */
#define ER_TAG_TIEPOINT 33922u       /* ModelTiepointTag, DOUBLE[6n] */
#define ER_TAG_TRANSFORMATION 34264u /* ModelTransformationTag, DOUBLE[16] */
#define ER_TAG_GEOKEYS 34735u        /* GeoKeyDirectoryTag, SHORT[4+4k] */
#define ER_TAG_GEODOUBLES 34736u     /* GeoDoubleParamsTag, DOUBLE[n] */
#define ER_TAG_GEOASCII 34737u       /* GeoAsciiParamsTag, ASCII */
#define ER_TAG_GDAL_METADATA 42112u  /* GDAL_METADATA, ASCII (XML) */
#define ER_TAG_GDAL_NODATA 42113u    /* GDAL_NODATA, ASCII */

/* Registers the eight tags above for every TIFF opened from now on.  The
 * double and short arrays take a uint32_t count and a pointer in
 * TIFFGetField/TIFFSetField (TIFF_VARIABLE2); the ASCII ones a char *.
 * Idempotent and thread-safe (pthread_once); call before TIFFOpen. */
void er_tiff_register_tags(void);

/* One open TIFF on a file descriptor this module does not own: libtiff's
 * reads, writes and seeks go through plain POSIX calls on `fd`, its close
 * does nothing (the caller closes or commits the fd), and its errors and
 * warnings land here instead of on stderr. */
typedef struct er_tiff_io {
    int fd;
    const char *name;        /* the path, stripped from libtiff's messages */
    int io_errno;            /* first errno of a failed read/write/seek, 0 = none */
    char msg[ER_ERROR_MAX];  /* first libtiff error, cleaned up; "" = none */
    char tag_msg[ER_ERROR_MAX]; /* first warning that one of the eight tags
                                   above was dropped as unreadable; "" = none */
} er_tiff_io;

/* Opens `fd` with libtiff in `mode` ("rm", "wl", "w8l", ...); `name` is the
 * path used in libtiff's messages.  max_alloc > 0 caps each allocation
 * libtiff makes for this handle.  Returns NULL on failure with io->msg set
 * (or empty when libtiff said nothing).  Thread-safe: all state is in *io. */
TIFF *er_tiff_open_fd(er_tiff_io *io, int fd, const char *name, const char *mode, size_t max_alloc);

/* Appends n bytes at the end of io's file, beside libtiff (which seeks to
 * the end before each new block): the COG writer's block leaders and
 * trailers and its GDAL structural metadata.  1, or 0 with io_errno set. */
int er_tiff_append(er_tiff_io *io, const void *buf, size_t n);

/* The best reason for a failure: strerror(io_errno) when the OS refused a
 * read or write, else libtiff's first error, else `fallback`. */
const char *er_tiff_reason(const er_tiff_io *io, const char *fallback);

/* LEVEL=0 means these (io/tiff_create.c says why). */
#define ER_DEFLATE_LEVEL_DEFAULT 1
#define ER_ZSTD_LEVEL_DEFAULT 1

/* Writer settings the public er_tiff_write_co fixes; tests vary them. */
typedef struct er_tiff_write_opts {
    int force_bigtiff;       /* 1 = BigTIFF even when the file is small */
    er_tiff_create co;       /* creation options */
} er_tiff_write_opts;

er_status er_tiff_write_ex(const char *path, const er_layer_out *layer, const er_tiff_write_opts *opts,
                           er_error *err);

#endif
