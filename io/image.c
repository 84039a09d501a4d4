#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
