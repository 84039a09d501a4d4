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

/* The engines' heightmap sides, the one table of them.  Unity:
 * TerrainData.heightmapResolution clamps to 2^n + 1 from 33 to 4097, a
 * square.  Unreal: the Landscape Technical Guide's recommended sizes,
 * whole components (quads a component, 2x2 sections of 63 or 127 quads)
 * of at most 32 x 32, plus the shared edge vertex; sides with the same
 * component size pair into a rectangle. */
static const struct engine_side {
    int side;
    unsigned engines;       /* ER_ENGINE_* */
    int unreal_quads;       /* quads a component side; 0 = not Unreal's */
} engine_sides[] = {
    {33, ER_ENGINE_UNITY, 0},     {65, ER_ENGINE_UNITY, 0},      {127, ER_ENGINE_UNREAL, 126},
    {129, ER_ENGINE_UNITY, 0},    {253, ER_ENGINE_UNREAL, 126},  {257, ER_ENGINE_UNITY, 0},
    {505, ER_ENGINE_UNREAL, 126}, {513, ER_ENGINE_UNITY, 0},     {1009, ER_ENGINE_UNREAL, 126},
    {1025, ER_ENGINE_UNITY, 0},   {2017, ER_ENGINE_UNREAL, 126}, {2049, ER_ENGINE_UNITY, 0},
    {4033, ER_ENGINE_UNREAL, 126}, {4097, ER_ENGINE_UNITY, 0},   {8129, ER_ENGINE_UNREAL, 254},
};
#define N_ENGINE_SIDES (sizeof engine_sides / sizeof engine_sides[0])

/* The table's row for side n that `engine` takes, or NULL. */
static const struct engine_side *side_of(int n, unsigned engine)
{
    for (size_t i = 0; i < N_ENGINE_SIDES; i++)
        if (engine_sides[i].side == n && (engine_sides[i].engines & engine))
            return &engine_sides[i];
    return NULL;
}

/* The side `engine` takes nearest to n cells (ties up). */
static int nearest_side(int n, unsigned engine)
{
    int best = 0;
    for (size_t i = 0; i < N_ENGINE_SIDES; i++)
        if ((engine_sides[i].engines & engine) && (!best || abs(engine_sides[i].side - n) <= abs(best - n)))
            best = engine_sides[i].side;
    return best;
}

unsigned er_raw_engines_fit(int width, int height)
{
    unsigned fit = 0;
    if (width == height && side_of(width, ER_ENGINE_UNITY))
        fit |= ER_ENGINE_UNITY;
    const struct engine_side *a = side_of(width, ER_ENGINE_UNREAL), *b = side_of(height, ER_ENGINE_UNREAL);
    if (a && b && a->unreal_quads == b->unreal_quads)
        fit |= ER_ENGINE_UNREAL;
    return fit;
}

void er_raw_engines_nearest(int width, int height, int *unity, int *unreal_w, int *unreal_h)
{
    int big = width > height ? width : height;
    *unity = nearest_side(big, ER_ENGINE_UNITY);
    *unreal_w = nearest_side(width, ER_ENGINE_UNREAL);
    *unreal_h = nearest_side(height, ER_ENGINE_UNREAL);
    if (!(er_raw_engines_fit(*unreal_w, *unreal_h) & ER_ENGINE_UNREAL))
        *unreal_w = *unreal_h = nearest_side(big, ER_ENGINE_UNREAL); /* only 8129 pairs with none */
}

/* A cell the file stores as nodata: masked, or not a number a height can
 * be (so min and max are finite). */
static int is_nodata(const er_layer_out *l, size_t i)
{
    return (l->nodata && l->nodata[i]) || !isfinite(l->data[i]);
}

/* The value cell i is written with: 0 for a nodata cell left as nodata,
 * else 1 and *v (the fill in a nodata cell). */
static int cell(const er_layer_out *l, const er_nodata_fill *fill, size_t i, float *v)
{
    if (!is_nodata(l, i)) {
        *v = l->data[i];
        return 1;
    }
    *v = fill->value;
    return fill->on;
}

/* The range of the cells written as values; min = max = 0 when there is
 * none.  *n_nodata: the layer's nodata cells, filled or not. */
static void value_range(const er_layer_out *l, const er_nodata_fill *fill, double *lo, double *hi,
                        size_t *n_nodata)
{
    size_t n = (size_t)l->width * (size_t)l->height, bad = 0, none = 0;
    double mn = INFINITY, mx = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        float v;
        bad += (size_t)is_nodata(l, i);
        if (!cell(l, fill, i, &v)) {
            none++;
            continue;
        }
        mn = fmin(mn, v);
        mx = fmax(mx, v);
    }
    if (none == n)
        mn = mx = 0.0;
    *lo = mn;
    *hi = mx;
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
static uint8_t *encode(const er_layer_out *l, const er_nodata_fill *fill, int bits, er_row_order rows, double lo,
                       double hi)
{
    size_t w = (size_t)l->width, h = (size_t)l->height, bpe = (size_t)bits / 8;
    uint8_t *b = malloc(w * h * bpe);
    for (size_t r = 0; b && r < h; r++) {
        size_t src = (rows == ER_ROWS_BOTTOM_UP ? h - 1 - r : r) * w;
        for (size_t x = 0; x < w; x++) {
            float v;
            int valid = cell(l, fill, src + x, &v);
            uint32_t u = bits == 16 ? (valid ? er_raw_r16_code(v, lo, hi) : 0u) : er_float_bits(valid ? v : NAN);
            for (size_t k = 0; k < bpe; k++)
                b[(r * w + x) * bpe + k] = (uint8_t)(u >> (8 * k));
        }
    }
    return b;
}

/* What the sidecar says of one layer: its range and r16 step in file
 * units, and the metres they stand for. */
typedef struct raw_doc {
    const er_layer_out *l;
    const er_raw_create *co;
    double lo, hi, scale;     /* file units; scale: an r16 code step */
    double zs, zo;            /* metres = value * zs + zo (file units when
                               * the values are no lengths) */
    size_t n_nodata, n_filled;
} raw_doc;

/* Whether the sidecar knows the cell size. */
#define CELLS(d) ((d)->co->cell_x > 0 && (d)->co->cell_y > 0)

/* The sides `engine` takes, "127, 253, ..." from the table. */
static void sides_list(char *buf, size_t n, unsigned engine)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_ENGINE_SIDES && at < n; i++)
        if (engine_sides[i].engines & engine)
            at += (size_t)snprintf(buf + at, n - at, "%s%d", at ? ", " : "", engine_sides[i].side);
}

/* Unity's Import Raw dialog: Depth 16, Byte Order Windows, Resolution,
 * Flip Vertically (Unity reads the first row as the south edge), and the
 * terrain's size: width and length span the samples, (n - 1) cells, and
 * the height and position Y for which Unity's code / 65536 * height + y
 * is min + (code - 1) * scale, in metres. */
static void unity_hints(FILE *m, const raw_doc *d)
{
    const er_layer_out *l = d->l;
    char list[128];
    sides_list(list, sizeof list, ER_ENGINE_UNITY);
    if (d->co->bits != 16) {
        fprintf(m, "{\"importable\":false,\"why\":\"Unity's Import Raw reads 8- and 16-bit RAW only: write -f r16\"}");
    } else if (!(er_raw_engines_fit(l->width, l->height) & ER_ENGINE_UNITY)) {
        int r, uw, uh;
        er_raw_engines_nearest(l->width, l->height, &r, &uw, &uh);
        fprintf(m,
                "{\"importable\":false,\"why\":\"Unity's Import Raw takes square maps of 2^n+1 cells a side "
                "(%s); this one is %d x %d\",\"nearest_resolution\":%d,"
                "\"resample\":\"resample the input first, e.g. gdalwarp -ts %d %d -r bilinear in.tif out.tif\"}",
                list, l->width, l->height, r, r, r);
    } else {
        fprintf(m,
                "{\"importable\":true,\"depth\":16,\"byte_order\":\"Windows\",\"resolution\":%d,"
                "\"flip_vertically\":%s,",
                l->width, d->co->rows == ER_ROWS_TOP_DOWN ? "true" : "false");
        if (CELLS(d))
            fprintf(m, "\"terrain_width\":%.9g,\"terrain_length\":%.9g,", (l->width - 1) * d->co->cell_x,
                    (l->height - 1) * d->co->cell_y);
        else
            fputs("\"terrain_width\":null,\"terrain_length\":null,", m);
        fprintf(m, "\"terrain_height\":%.9g,\"terrain_y\":%.9g}", 65536.0 * d->scale * d->zs,
                (d->lo - d->scale) * d->zs + d->zo);
    }
}

/* Unreal's landscape: height = location z + (code - 32768) * Z scale /
 * 128 [cm] (Z scale 100 spans +-256 m), vertices X and Y scale cm apart;
 * the scales and location z that give min + (code - 1) * scale metres. */
static void unreal_hints(FILE *m, const raw_doc *d)
{
    const er_layer_out *l = d->l;
    if (d->co->bits != 16) {
        fprintf(m, "{\"importable\":false,\"why\":\"Unreal's landscape import reads 8- and 16-bit "
                   "heightmaps only: write -f r16\"}");
        return;
    }
    if (er_raw_engines_fit(l->width, l->height) & ER_ENGINE_UNREAL) {
        fputs("{\"importable\":true,", m);
    } else {
        char list[128];
        int r, uw, uh;
        sides_list(list, sizeof list, ER_ENGINE_UNREAL);
        er_raw_engines_nearest(l->width, l->height, &r, &uw, &uh);
        fprintf(m,
                "{\"importable\":false,\"why\":\"Unreal's recommended landscape sizes are %s cells a side; "
                "this one is %d x %d\",\"nearest_size\":[%d,%d],",
                list, l->width, l->height, uw, uh);
    }
    if (CELLS(d))
        fprintf(m, "\"x_scale\":%.9g,\"y_scale\":%.9g,", 100.0 * d->co->cell_x, 100.0 * d->co->cell_y);
    else
        fputs("\"x_scale\":null,\"y_scale\":null,", m);
    fprintf(m, "\"z_scale\":%.9g,\"z_location_cm\":%.9g}", 12800.0 * d->scale * d->zs,
            100.0 * ((d->lo + 32767.0 * d->scale) * d->zs + d->zo));
}

/* Cell size, extent and the valid cells' range in metres, or null where
 * they are not known (no cell size; a layer that holds no lengths). */
static void metres(FILE *m, const raw_doc *d)
{
    const er_layer_out *l = d->l;
    if (CELLS(d))
        fprintf(m, "\"cell_size_m\":[%.17g,%.17g],\"extent_m\":[%.17g,%.17g],", d->co->cell_x, d->co->cell_y,
                l->width * d->co->cell_x, l->height * d->co->cell_y);
    else
        fputs("\"cell_size_m\":null,\"extent_m\":null,", m);
    if (d->co->lengths)
        fprintf(m, "\"height_range_m\":[%.17g,%.17g],", d->lo * d->zs + d->zo, d->hi * d->zs + d->zo);
    else
        fputs("\"height_range_m\":null,", m);
}

/* The sidecar: what a reader needs to turn the bytes back into heights,
 * the layer in metres, the numbers Unity's, Unreal's and Terrain3D's
 * importers ask for, and the provenance.  One line of JSON; the caller
 * frees. */
static char *sidecar_text(const raw_doc *d)
{
    const er_layer_out *l = d->l;
    char *s = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&s, &len);
    if (!m)
        return NULL;
    fprintf(m, "{\"format\":\"r%d\",\"width\":%d,\"height\":%d,\"byte_order\":\"little-endian\",\"rows\":\"%s\",",
            d->co->bits, l->width, l->height, d->co->rows == ER_ROWS_TOP_DOWN ? "top row first" : "bottom row first");
    size_t stored = d->n_nodata - d->n_filled;
    if (d->co->bits == 16)
        fprintf(m,
                "\"type\":\"uint16\",\"min\":%.17g,\"max\":%.17g,\"scale\":%.17g,\"nodata\":0,\"nodata_cells\":%zu,"
                "\"decode\":\"height = min + (code - 1) * scale; code 0 is nodata\",",
                d->lo, d->hi, d->scale, stored);
    else
        fprintf(m,
                "\"type\":\"float32\",\"min\":%.17g,\"max\":%.17g,\"nodata\":\"NaN\",\"nodata_cells\":%zu,"
                "\"decode\":\"height = value; NaN is nodata\",",
                d->lo, d->hi, stored);
    if (d->co->fill.on)
        fprintf(m, "\"nodata_fill\":%.9g,\"filled_cells\":%zu,", (double)d->co->fill.value, d->n_filled);
    metres(m, d);
    fputs("\"unity\":", m);
    unity_hints(m, d);
    fputs(",\"unreal\":", m);
    unreal_hints(m, d);
    if (d->co->bits == 16)
        fprintf(m, ",\"terrain3d\":{\"r16_height_range\":[%.9g,%.9g],\"r16_size\":[%d,%d]}",
                (d->lo - d->scale) * d->zs + d->zo, d->hi * d->zs + d->zo, l->width, l->height);
    int ok = fprintf(m, ",\"provenance\":%s}\n", l->provenance ? l->provenance : "null") > 0;
    if (fclose(m) != 0 || !ok) {
        free(s);
        return NULL;
    }
    return s;
}

er_status er_raw_write(const char *path, const er_layer_out *layer, int bits, er_row_order rows, er_error *err)
{
    er_raw_create co = {bits, rows, {0, 0.0f}, 0.0, 0.0, 1, 1.0, 0.0};
    return er_raw_write_co(path, layer, &co, err);
}

er_status er_raw_write_co(const char *path, const er_layer_out *layer, const er_raw_create *co, er_error *err)
{
    size_t n = (size_t)layer->width * (size_t)layer->height;
    char side[4096];
    if (snprintf(side, sizeof side, "%s.json", path) >= (int)sizeof side)
        return er_fail(err, ER_EINVAL, "cannot write '%s.json': name too long", path);
    raw_doc d = {layer, co, 0, 0, 0, 1.0, 0.0, 0, 0};
    if (co->lengths) {
        d.zs = co->z_scale;
        d.zo = co->z_offset;
    }
    value_range(layer, &co->fill, &d.lo, &d.hi, &d.n_nodata);
    d.n_filled = co->fill.on ? d.n_nodata : 0;
    d.scale = d.hi > d.lo ? (d.hi - d.lo) / R16_STEPS : 0.0;
    uint8_t *bytes = encode(layer, &co->fill, co->bits, co->rows, d.lo, d.hi);
    char *text = bytes ? sidecar_text(&d) : NULL;
    er_status st = text ? er_atomic_write_file(path, bytes, n * (size_t)(co->bits / 8), err)
                        : er_fail(err, ER_ENOMEM, "cannot write '%s': out of memory", path);
    if (st == ER_OK)
        st = er_atomic_write_file(side, text, strlen(text), err);
    free(bytes);
    free(text);
    return st;
}
