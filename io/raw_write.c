/*
 * Headerless RAW heightmaps for game engines (-f r16, -f r32) and the JSON
 * sidecar that says what the bytes mean.
 *
 * r16 is what Unity's "Import Raw" and Unreal's landscape import read:
 * width * height little-endian uint16, row-major, top row first, no header.
 * The layer's range [min, max] of valid cells maps onto 0..65535 (Unity
 * scales 0..65535 to the terrain height; Unreal to 512 m times Z scale/100),
 * so the sidecar must carry min and max for the heights to come back.
 * r32 is float32 little-endian in the same order.
 *
 * RAW holds no metadata, so the provenance and the size go into
 * "<file>.json".  Both files are written through io/atomic.h and so join
 * the caller's output set: they replace their names together or not at all.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"
#include "image.h"

/* The range of valid cells; min = max = 0 when there is none. */
static void value_range(const er_layer_out *l, double *lo, double *hi, size_t *n_nodata)
{
    size_t n = (size_t)l->width * (size_t)l->height, bad = 0;
    double mn = INFINITY, mx = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if ((l->nodata && l->nodata[i]) || !isfinite(l->data[i])) {
            bad++;
            continue;
        }
        mn = fmin(mn, l->data[i]);
        mx = fmax(mx, l->data[i]);
    }
    *lo = bad == n ? 0.0 : mn;
    *hi = bad == n ? 0.0 : mx;
    *n_nodata = bad;
}

uint16_t er_raw_r16_code(float v, double lo, double hi)
{
    if (!(hi > lo) || !isfinite(v))
        return 0;
    double q = nearbyint(((double)v - lo) / (hi - lo) * 65535.0);
    return (uint16_t)(q < 0 ? 0 : q > 65535 ? 65535 : q);
}

/* The file's bytes: little-endian whatever the host's order.  r16 writes
 * nodata as 0, r32 as NaN.  The caller frees. */
static uint8_t *encode(const er_layer_out *l, int bits, double lo, double hi)
{
    size_t n = (size_t)l->width * (size_t)l->height, w = (size_t)bits / 8;
    uint8_t *b = malloc(n * w);
    for (size_t i = 0; b && i < n; i++) {
        int bad = l->nodata && l->nodata[i];
        uint32_t u;
        if (bits == 16) {
            u = bad ? 0 : er_raw_r16_code(l->data[i], lo, hi);
        } else {
            float f = bad ? NAN : l->data[i];
            memcpy(&u, &f, 4);
        }
        for (size_t k = 0; k < w; k++)
            b[i * w + k] = (uint8_t)(u >> (8 * k));
    }
    return b;
}

#define SIDECAR_FORMAT \
        "{\"format\":\"%s\",\"width\":%d,\"height\":%d,\"byte_order\":\"little-endian\"," \
        "\"rows\":\"top row first\",\"type\":\"%s\",\"min\":%.9g,\"max\":%.9g,\"scale\":%.17g," \
        "\"nodata\":%s,\"nodata_cells\":%zu," \
        "\"unity\":{\"depth\":%d,\"byte_order\":\"Windows\",\"resolution\":[%d,%d],\"terrain_height\":%.9g}," \
        "\"unreal_z_scale\":%.9g,\"provenance\":%s}\n"

/* The sidecar: what a reader needs to turn the bytes back into heights
 * (height = min + code * scale for r16), the numbers Unity's and Unreal's
 * import dialogs ask for, and the provenance. */
static char *sidecar_text(const er_layer_out *l, int bits, double lo, double hi, size_t n_nodata)
{
    double scale = bits == 16 ? (hi > lo ? (hi - lo) / 65535.0 : 0.0) : 1.0;
    char *s = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&s, &len);
    if (!m)
        return NULL;
    int ok = fprintf(m, SIDECAR_FORMAT, bits == 16 ? "r16" : "r32", l->width, l->height,
                     bits == 16 ? "uint16" : "float32", lo, hi, scale, bits == 16 ? "0" : "\"NaN\"",
                     n_nodata, bits, l->width, l->height, hi - lo, (hi - lo) * 100.0 / 512.0,
                     l->provenance ? l->provenance : "null") > 0;
    if (fclose(m) != 0 || !ok) {
        free(s);
        return NULL;
    }
    return s;
}

/* One file of the set through io/atomic.h. */
static er_status write_bytes(const char *path, const void *buf, size_t n, er_error *err)
{
    er_atomic a;
    er_status st = er_atomic_open(&a, path, err);
    if (st)
        return st;
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(a.fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            er_atomic_abort(&a);
            return er_fail(err, ER_EIO, "cannot write '%s': %s", path, er_atomic_reason(e));
        }
        p += k;
        n -= (size_t)k;
    }
    return er_atomic_commit(&a, err);
}

er_status er_raw_write(const char *path, const er_layer_out *layer, int bits, er_error *err)
{
    double lo, hi;
    size_t n_nodata, n = (size_t)layer->width * (size_t)layer->height;
    char side[4096];
    if (snprintf(side, sizeof side, "%s.json", path) >= (int)sizeof side)
        return er_fail(err, ER_EINVAL, "cannot write '%s.json': name too long", path);
    value_range(layer, &lo, &hi, &n_nodata);
    uint8_t *bytes = encode(layer, bits, lo, hi);
    char *text = bytes ? sidecar_text(layer, bits, lo, hi, n_nodata) : NULL;
    er_status st = text ? write_bytes(path, bytes, n * (size_t)(bits / 8), err)
                        : er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
    if (st == ER_OK)
        st = write_bytes(side, text, strlen(text), err);
    free(bytes);
    free(text);
    return st;
}
