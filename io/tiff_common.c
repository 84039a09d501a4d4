#include "tiff_common.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Variable-length arrays take a uint32_t count (TIFF_VARIABLE2), so even a
 * long list of tie points fits; ASCII tags are NUL-terminated strings.
 * TIFFFieldInfo wants a non-const name, hence the arrays. */
static char name_pixel_scale[] = "ModelPixelScaleTag";
static char name_tiepoint[] = "ModelTiepointTag";
static char name_transformation[] = "ModelTransformationTag";
static char name_geokeys[] = "GeoKeyDirectoryTag";
static char name_geodoubles[] = "GeoDoubleParamsTag";
static char name_geoascii[] = "GeoASCIIParamsTag";
static char name_gdal_metadata[] = "GDALMetadata";
static char name_gdal_nodata[] = "GDALNoDataValue";

static const TIFFFieldInfo geo_fields[] = {
    {ER_TAG_PIXEL_SCALE, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, name_pixel_scale},
    {ER_TAG_TIEPOINT, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, name_tiepoint},
    {ER_TAG_TRANSFORMATION, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, name_transformation},
    {ER_TAG_GEOKEYS, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_SHORT, FIELD_CUSTOM, 1, 1, name_geokeys},
    {ER_TAG_GEODOUBLES, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_DOUBLE, FIELD_CUSTOM, 1, 1, name_geodoubles},
    {ER_TAG_GEOASCII, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, name_geoascii},
    {ER_TAG_GDAL_METADATA, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, name_gdal_metadata},
    {ER_TAG_GDAL_NODATA, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0, name_gdal_nodata},
};

/* Written once under pthread_once, read-only afterwards. */
static TIFFExtendProc previous_extender;
static pthread_once_t register_once = PTHREAD_ONCE_INIT;

static void geo_extender(TIFF *tif)
{
    TIFFMergeFieldInfo(tif, geo_fields, (uint32_t)(sizeof geo_fields / sizeof geo_fields[0]));
    if (previous_extender)
        previous_extender(tif);
}

static void install_extender(void)
{
    previous_extender = TIFFSetTagExtender(geo_extender);
}

void er_tiff_register_tags(void)
{
    pthread_once(&register_once, install_extender);
}

/* libtiff's messages are sentences, some led by the file name ("f.tif:
 * Can not read TIFF directory count"), some with a clause naming scanline
 * or row 4294967295 (its "whole block" marker); ours are lowercase single
 * lines without a final full stop, the name given once by the caller. */
static void tidy_message(char *s, const char *name)
{
    size_t n;
    if (name && (n = strlen(name)) > 0 && strncmp(s, name, n) == 0 && s[n] == ':' && s[n + 1] == ' ')
        memmove(s, s + n + 2, strlen(s + n + 2) + 1);
    char *marker = strstr(s, "4294967295");
    if (marker) {
        char *at = NULL, *semi = strchr(marker, ';');
        for (char *p = s; (p = strstr(p, " at ")) && p < marker; p++)
            at = p;
        if (at && semi)
            memmove(at, semi, strlen(semi) + 1);
    }
    for (char *p = s; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    n = strlen(s);
    while (n > 0 && (s[n - 1] == '.' || s[n - 1] == ' '))
        s[--n] = '\0';
    /* "Not enough data" -> "not enough data", but keep "LZWDecode". */
    if (isupper((unsigned char)s[0]) && !isupper((unsigned char)s[1]))
        s[0] = (char)tolower((unsigned char)s[0]);
}

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    er_tiff_io *io = user;
    (void)tif;
    (void)module;
    if (io && io->msg[0] == '\0') {
        vsnprintf(io->msg, sizeof io->msg, fmt, ap);
        tidy_message(io->msg, io->name);
    }
    return 1; /* handled: libtiff's global handler (stderr) is not called */
}

/* Warnings (unknown tags, odd but readable layouts) are not errors and
 * erode prints nothing it cannot act on, so they are dropped -- except
 * libtiff's "...; tag ignored" for one of the georeferencing tags (a count
 * or type it cannot use, or data beyond the end of a truncated file): an
 * output written without them would silently lose its place on Earth, so
 * the reader turns that into an error. */
static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    er_tiff_io *io = user;
    char text[ER_ERROR_MAX], quoted[64];
    (void)tif;
    (void)module;
    if (!io || io->tag_msg[0])
        return 1;
    vsnprintf(text, sizeof text, fmt, ap);
    if (!strstr(text, "ignored"))
        return 1;
    for (size_t k = 0; k < sizeof geo_fields / sizeof geo_fields[0]; k++) {
        snprintf(quoted, sizeof quoted, "\"%s\"", geo_fields[k].field_name);
        if (strstr(text, quoted)) {
            snprintf(io->tag_msg, sizeof io->tag_msg, "%s", text);
            tidy_message(io->tag_msg, io->name);
            break;
        }
    }
    return 1;
}

static tmsize_t proc_read(thandle_t h, void *buf, tmsize_t size)
{
    er_tiff_io *io = (er_tiff_io *)h;
    char *p = buf;
    tmsize_t done = 0;
    while (done < size) {
        ssize_t n = read(io->fd, p + done, (size_t)(size - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            if (!io->io_errno)
                io->io_errno = errno;
            return done > 0 ? done : -1;
        }
        if (n == 0)
            break;
        done += n;
    }
    return done;
}

/* After the first failed write every later one fails at once: libtiff then
 * stops early and the first errno (ENOSPC, EFBIG, EIO) is the one reported. */
static tmsize_t proc_write(thandle_t h, void *buf, tmsize_t size)
{
    er_tiff_io *io = (er_tiff_io *)h;
    const char *p = buf;
    tmsize_t done = 0;
    if (io->io_errno)
        return -1;
    while (done < size) {
        ssize_t n = write(io->fd, p + done, (size_t)(size - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            io->io_errno = n < 0 ? errno : EIO;
            return -1;
        }
        done += n;
    }
    return done;
}

static toff_t proc_seek(thandle_t h, toff_t off, int whence)
{
    er_tiff_io *io = (er_tiff_io *)h;
    if (off > (toff_t)INT64_MAX) {
        if (!io->io_errno)
            io->io_errno = EOVERFLOW;
        return (toff_t)-1;
    }
    off_t r = lseek(io->fd, (off_t)off, whence);
    if (r < 0) {
        if (!io->io_errno)
            io->io_errno = errno;
        return (toff_t)-1;
    }
    return (toff_t)r;
}

/* The descriptor belongs to the caller (er_atomic for writes). */
static int proc_close(thandle_t h)
{
    (void)h;
    return 0;
}

static toff_t proc_size(thandle_t h)
{
    er_tiff_io *io = (er_tiff_io *)h;
    struct stat st;
    if (fstat(io->fd, &st) != 0)
        return 0;
    return (toff_t)st.st_size;
}

static int proc_map(thandle_t h, void **base, toff_t *size)
{
    (void)h;
    (void)base;
    (void)size;
    return 0; /* no memory mapping: a file truncated under us must not SIGBUS */
}

static void proc_unmap(thandle_t h, void *base, toff_t size)
{
    (void)h;
    (void)base;
    (void)size;
}

TIFF *er_tiff_open_fd(er_tiff_io *io, int fd, const char *name, const char *mode, size_t max_alloc)
{
    io->fd = fd;
    io->name = name;
    io->io_errno = 0;
    io->msg[0] = '\0';
    io->tag_msg[0] = '\0';
    er_tiff_register_tags();
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    if (!o) {
        snprintf(io->msg, sizeof io->msg, "out of memory");
        return NULL;
    }
    TIFFOpenOptionsSetErrorHandlerExtR(o, on_error, io);
    TIFFOpenOptionsSetWarningHandlerExtR(o, on_warning, io);
    if (max_alloc > 0)
        TIFFOpenOptionsSetMaxSingleMemAlloc(o, max_alloc > (size_t)INT64_MAX ? INT64_MAX : (tmsize_t)max_alloc);
    TIFF *tif = TIFFClientOpenExt(name, mode, (thandle_t)io, proc_read, proc_write, proc_seek, proc_close,
                                  proc_size, proc_map, proc_unmap, o);
    TIFFOpenOptionsFree(o);
    return tif;
}

int er_tiff_append(er_tiff_io *io, const void *buf, size_t n)
{
    if (io->io_errno)
        return 0;
    if (lseek(io->fd, 0, SEEK_END) < 0) {
        io->io_errno = errno;
        return 0;
    }
    return proc_write((thandle_t)io, (void *)(uintptr_t)buf, (tmsize_t)n) == (tmsize_t)n;
}

const char *er_tiff_reason(const er_tiff_io *io, const char *fallback)
{
    if (io->io_errno)
        return strerror(io->io_errno);
    if (io->msg[0])
        return io->msg;
    return fallback;
}
