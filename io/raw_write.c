/*
 * Headerless RAW heightmaps for game engines (-f r16, -f r32) and the JSON
 * sidecar that says what the bytes mean.
 *
 * r16 is what Unity's "Import Raw", Unreal's landscape import and Godot's
 * Terrain3D read: width * height little-endian uint16, row-major, no
 * header.  Valid cells take codes 1..65535, the layer's range [min, max]
 * of valid cells mapped onto them; code 0 is nodata and nothing else, so
 * a reader that masks code 0 drops no terrain, and an engine that does
 * not mask shows nodata below the lowest terrain rather than as spikes.
 * r32 is float32 little-endian in the same order, NaN for nodata.
 *
 * Rows go top row first unless the caller asks for bottom row first:
 * Unity's Import Raw reads the first row as the terrain's south edge.
 *
 * RAW holds no metadata, so the decoding, the provenance and the numbers
 * each engine's import dialog asks for go into "<file>.json".  Both files
 * are written through io/atomic.h and so join the caller's output set:
 * they replace their names together or not at all.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bits.h"
#include "atomic.h"
#include "image.h"

/* Codes of valid cells: 1..65535, 65534 steps. */
#define R16_STEPS 65534.0

/* Unity's heightmap resolutions: square, 2^n + 1 from 33 to 4097 cells
 * (TerrainData.heightmapResolution clamps to these). */
#define UNITY_MIN_RES 33
#define UNITY_MAX_RES 4097

/* A cell the file stores as nodata: masked, or not a number a height can
 * be (so min and max are finite). */
static int is_nodata(const er_layer_out *l, size_t i)
{
    return (l->nodata && l->nodata[i]) || !isfinite(l->data[i]);
}

/* The range of valid cells; min = max = 0 when there is none. */
static void value_range(const er_layer_out *l, double *lo, double *hi, size_t *n_nodata)
{
    size_t n = (size_t)l->width * (size_t)l->height, bad = 0;
    double mn = INFINITY, mx = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (is_nodata(l, i)) {
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
    if (!isfinite(v))
        return 0;
    if (!(hi > lo))
        return 1;
    double q = nearbyint(((double)v - lo) / (hi - lo) * R16_STEPS);
    return (uint16_t)(1.0 + (q < 0 ? 0 : q > R16_STEPS ? R16_STEPS : q));
}

/* The file's bytes: little-endian whatever the host's order, file row r
 * holding layer row r (top down) or height - 1 - r (bottom up).  The
 * caller frees. */
static uint8_t *encode(const er_layer_out *l, int bits, er_row_order rows, double lo, double hi)
{
    size_t w = (size_t)l->width, h = (size_t)l->height, bpe = (size_t)bits / 8;
    uint8_t *b = malloc(w * h * bpe);
    for (size_t r = 0; b && r < h; r++) {
        size_t src = (rows == ER_ROWS_BOTTOM_UP ? h - 1 - r : r) * w;
        for (size_t x = 0; x < w; x++) {
            size_t i = src + x;
            uint32_t u;
            if (bits == 16) {
                u = is_nodata(l, i) ? 0 : er_raw_r16_code(l->data[i], lo, hi);
            } else {
                u = er_float_bits(is_nodata(l, i) ? NAN : l->data[i]);
            }
            for (size_t k = 0; k < bpe; k++)
                b[(r * w + x) * bpe + k] = (uint8_t)(u >> (8 * k));
        }
    }
    return b;
}

/* The 2^n + 1 Unity size nearest to n cells (ties up), within Unity's
 * range. */
static int unity_nearest(int n)
{
    int best = UNITY_MIN_RES;
    for (int r = UNITY_MIN_RES; r <= UNITY_MAX_RES; r = 2 * r - 1)
        if (abs(r - n) <= abs(best - n))
            best = r;
    return best;
}

static int unity_importable(int w, int h)
{
    return w == h && w >= UNITY_MIN_RES && w <= UNITY_MAX_RES && ((w - 1) & (w - 2)) == 0;
}

/* Unity's Import Raw dialog: Depth 16, Byte Order Windows, Resolution,
 * Flip Vertically (Unity reads the first row as the south edge), and the
 * terrain's size Y and position Y for which Unity's height code / 65536 *
 * size + y is min + (code - 1) * scale. */
static void unity_hints(FILE *m, const er_layer_out *l, int bits, er_row_order rows, double lo, double scale)
{
    if (bits != 16) {
        fprintf(m, "{\"importable\":false,\"why\":\"Unity's Import Raw reads 8- and 16-bit RAW only: write -f r16\"}");
    } else if (!unity_importable(l->width, l->height)) {
        int r = unity_nearest(l->width > l->height ? l->width : l->height);
        fprintf(m,
                "{\"importable\":false,\"why\":\"Unity's Import Raw takes square maps of 2^n+1 cells a side, "
                "%d to %d; this one is %d x %d\",\"nearest_resolution\":%d,"
                "\"resample\":\"resample the input first, e.g. gdalwarp -ts %d %d -r bilinear in.tif out.tif\"}",
                UNITY_MIN_RES, UNITY_MAX_RES, l->width, l->height, r, r, r);
    } else {
        fprintf(m,
                "{\"importable\":true,\"depth\":16,\"byte_order\":\"Windows\",\"resolution\":%d,"
                "\"flip_vertically\":%s,\"terrain_height\":%.9g,\"terrain_y\":%.9g}",
                l->width, rows == ER_ROWS_TOP_DOWN ? "true" : "false", 65536.0 * scale, lo - scale);
    }
}

/* Unreal's landscape: height = location z + (code - 32768) * Z scale /
 * 128 [cm]; the Z scale and location z that give min + (code - 1) * scale
 * metres. */
static void unreal_hints(FILE *m, int bits, double lo, double scale)
{
    if (bits != 16)
        fprintf(m, "{\"importable\":false,\"why\":\"Unreal's landscape import reads 8- and 16-bit "
                   "heightmaps only: write -f r16\"}");
    else
        fprintf(m, "{\"importable\":true,\"z_scale\":%.9g,\"z_location_cm\":%.9g}", 12800.0 * scale,
                100.0 * (lo + 32767.0 * scale));
}

/* The sidecar: what a reader needs to turn the bytes back into heights,
 * the numbers Unity's, Unreal's and Terrain3D's importers ask for, and
 * the provenance.  One line of JSON; the caller frees. */
static char *sidecar_text(const er_layer_out *l, int bits, er_row_order rows, double lo, double hi,
                          size_t n_nodata)
{
    double scale = hi > lo ? (hi - lo) / R16_STEPS : 0.0;
    char *s = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&s, &len);
    if (!m)
        return NULL;
    fprintf(m, "{\"format\":\"r%d\",\"width\":%d,\"height\":%d,\"byte_order\":\"little-endian\",\"rows\":\"%s\",",
            bits, l->width, l->height, rows == ER_ROWS_TOP_DOWN ? "top row first" : "bottom row first");
    if (bits == 16)
        fprintf(m,
                "\"type\":\"uint16\",\"min\":%.17g,\"max\":%.17g,\"scale\":%.17g,\"nodata\":0,\"nodata_cells\":%zu,"
                "\"decode\":\"height = min + (code - 1) * scale; code 0 is nodata\",",
                lo, hi, scale, n_nodata);
    else
        fprintf(m,
                "\"type\":\"float32\",\"min\":%.17g,\"max\":%.17g,\"nodata\":\"NaN\",\"nodata_cells\":%zu,"
                "\"decode\":\"height = value; NaN is nodata\",",
                lo, hi, n_nodata);
    fputs("\"unity\":", m);
    unity_hints(m, l, bits, rows, lo, scale);
    fputs(",\"unreal\":", m);
    unreal_hints(m, bits, lo, scale);
    if (bits == 16)
        fprintf(m, ",\"terrain3d\":{\"r16_height_range\":[%.9g,%.9g],\"r16_size\":[%d,%d]}", lo - scale, hi,
                l->width, l->height);
    int ok = fprintf(m, ",\"provenance\":%s}\n", l->provenance ? l->provenance : "null") > 0;
    if (fclose(m) != 0 || !ok) {
        free(s);
        return NULL;
    }
    return s;
}

er_status er_raw_write(const char *path, const er_layer_out *layer, int bits, er_row_order rows, er_error *err)
{
    double lo, hi;
    size_t n_nodata, n = (size_t)layer->width * (size_t)layer->height;
    char side[4096];
    if (snprintf(side, sizeof side, "%s.json", path) >= (int)sizeof side)
        return er_fail(err, ER_EINVAL, "cannot write '%s.json': name too long", path);
    value_range(layer, &lo, &hi, &n_nodata);
    uint8_t *bytes = encode(layer, bits, rows, lo, hi);
    char *text = bytes ? sidecar_text(layer, bits, rows, lo, hi, n_nodata) : NULL;
    er_status st = text ? er_atomic_write_file(path, bytes, n * (size_t)(bits / 8), err)
                        : er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
    if (st == ER_OK)
        st = er_atomic_write_file(side, text, strlen(text), err);
    free(bytes);
    free(text);
    return st;
}
