/*
 * River sources (core/sources.h): the cells a source covers, the rules
 * that place sources on a map (fractions of the world, peaks) and the
 * checks against the map, for every model that takes sources.
 */
#include "sources.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

_Static_assert(sizeof(er_source) == 5 * sizeof(double) + sizeof(int64_t) + 2 * sizeof(int),
               "er_source has no padding");

const char *er_sources_key(const er_source_list *l)
{
    size_t n;
    const er_key *tab = er_keys_params(&n);
    const unsigned want = l->old_key ? ER_KEY_OLD_NAME : 0;
    for (size_t i = 0; i < n; i++)
        if (tab[i].type == ER_KEY_SOURCES && (tab[i].flags & ER_KEY_OLD_NAME) == want)
            return tab[i].path;
    return "river_sources";
}

int er_disc_box(const er_source_grid *g, double cx, double cy, double rad, int box[4],
                int *single)
{
    if (!(rad >= 0.0))
        rad = 0.0;
    double lo_x = ceil(cx - rad), hi_x = floor(cx + rad);
    double lo_y = ceil(cy - rad), hi_y = floor(cy + rad);
    *single = lo_x > hi_x || lo_y > hi_y;
    if (*single) { /* no centre inside: nearest cell */
        lo_x = hi_x = floor(cx + 0.5);
        lo_y = hi_y = floor(cy + 0.5);
    }
    if (hi_x < 0 || hi_y < 0 || lo_x > g->width - 1 || lo_y > g->height - 1)
        return 0;
    box[0] = lo_x < 0 ? 0 : (int)lo_x;
    box[1] = hi_x > g->width - 1 ? g->width - 1 : (int)hi_x;
    box[2] = lo_y < 0 ? 0 : (int)lo_y;
    box[3] = hi_y > g->height - 1 ? g->height - 1 : (int)hi_y;
    return 1;
}

static int in_disc(double cx, double cy, double rad, int x, int y, int single)
{
    if (single)
        return 1;
    double dx = x - cx, dy = y - cy;
    return dx * dx + dy * dy <= rad * rad;
}

int64_t er_disc_cells(const er_source_grid *g, double cx, double cy, double rad,
                      er_cell_fn visit, void *user)
{
    int box[4], single;
    if (!er_disc_box(g, cx, cy, rad, box, &single))
        return 0;
    int64_t n = 0;
    for (int y = box[2]; y <= box[3]; y++)
        for (int x = box[0]; x <= box[1]; x++) {
            size_t i = (size_t)y * (size_t)g->width + (size_t)x;
            if ((g->wall && g->wall[i]) || !in_disc(cx, cy, rad, x, y, single))
                continue;
            if (visit)
                visit(user, i);
            n++;
        }
    return n;
}

int64_t er_source_cells(const er_source_grid *g, const er_source *src, er_cell_fn visit,
                        void *user)
{
    return er_disc_cells(g, src->x - g->x0, src->y - g->y0, src->radius, visit, user);
}

/* ------------------------------------------------------------------ */
/* Peaks                                                                */

/* floor(a / b) for b > 0 (C's division truncates towards zero). */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return q * b > a ? q - 1 : q;
}

/*
 * Which cells lie at least D from every wall, D = spacing: the squared
 * Euclidean distance transform of Meijster, Roerdink and Hesselink (2000),
 * in integers, so the same on every machine.  g holds, per cell, the
 * vertical distance to the nearest wall of its column, capped at
 * cap = ceil(D) (a cap >= D changes no comparison with D^2: a term it
 * shortens was >= D^2 and stays so); then each row's lower envelope of
 * parabolas gives the squared distance, and g's row is overwritten with
 * 1 (far enough) or 0.  s, t, out: width entries each.
 */
static void far_from_walls(const er_source_grid *g, double spacing, uint16_t *d, int64_t *s,
                           int64_t *t, uint8_t *out)
{
    const int w = g->width, h = g->height;
    const int64_t cap = (int64_t)ceil(spacing);
    for (int x = 0; x < w; x++) {
        int64_t run = cap;
        for (int y = 0; y < h; y++) {
            size_t i = (size_t)y * (size_t)w + (size_t)x;
            run = g->wall && g->wall[i] ? 0 : (run + 1 < cap ? run + 1 : cap);
            d[i] = (uint16_t)run;
        }
        for (int y = h - 2; y >= 0; y--) {
            size_t i = (size_t)y * (size_t)w + (size_t)x;
            if ((int64_t)d[i + (size_t)w] + 1 < (int64_t)d[i])
                d[i] = (uint16_t)(d[i + (size_t)w] + 1);
        }
    }
    const double d2 = spacing * spacing;
    for (int y = 0; y < h; y++) {
        uint16_t *row = d + (size_t)y * (size_t)w;
#define F(x, i) (((int64_t)(x) - (i)) * ((int64_t)(x) - (i)) + (int64_t)row[i] * row[i])
        int64_t q = 0;
        s[0] = t[0] = 0;
        for (int64_t u = 1; u < w; u++) {
            while (q >= 0 && F(t[q], s[q]) > F(t[q], u))
                q--;
            if (q < 0) {
                q = 0;
                s[0] = u;
                continue;
            }
            int64_t a = s[q];
            int64_t sep = 1 + floor_div(u * u - a * a + (int64_t)row[u] * row[u] -
                                            (int64_t)row[a] * row[a], 2 * (u - a));
            if (sep < w) {
                q++;
                s[q] = u;
                t[q] = sep;
            }
        }
        for (int64_t u = w - 1; u >= 0; u--) {
            out[u] = (double)F(u, s[q]) >= d2;
            if (u == t[q])
                q--;
        }
#undef F
        for (int x = 0; x < w; x++)
            row[x] = out[x];
    }
}

/* The highest cell of row y still marked in d (ties: the first), or -1. */
static int row_best(const er_source_grid *g, const uint16_t *d, int y)
{
    const size_t r = (size_t)y * (size_t)g->width;
    int best = -1;
    for (int x = 0; x < g->width; x++)
        if (d[r + (size_t)x] && (best < 0 || g->elevation[r + (size_t)x] > g->elevation[r + (size_t)best]))
            best = x;
    return best;
}

/* Unmarks the cells closer than D to (px, py), and that cell itself, and
 * finds the best of each row it touched again. */
static void suppress(const er_source_grid *g, uint16_t *d, int *best, int px, int py, double D)
{
    const int r = (int)ceil(D);
    const int y0 = py - r > 0 ? py - r : 0, y1 = py + r < g->height - 1 ? py + r : g->height - 1;
    const int x0 = px - r > 0 ? px - r : 0, x1 = px + r < g->width - 1 ? px + r : g->width - 1;
    for (int y = y0; y <= y1; y++) {
        for (int x = x0; x <= x1; x++) {
            double dx = x - px, dy = y - py;
            if (dx * dx + dy * dy < D * D || (x == px && y == py))
                d[(size_t)y * (size_t)g->width + (size_t)x] = 0;
        }
        best[y] = row_best(g, d, y);
    }
}

/*
 * The `count` highest valid cells of g at least D = spacing apart, each at
 * least D from the map's edges (D <= column <= width - 1 - D, the same for
 * rows) and from every nodata cell (the distance between cell centres),
 * taken greedily from the highest down, ties by cell index: the first
 * peak is the highest eligible cell, each next the highest of those at
 * least D from every peak taken.  Their columns and rows into px, py;
 * *found receives how many there are.  ER_ENOMEM when its scratch (2 bytes
 * a cell) cannot be had.
 */
static er_status find_peaks(const er_source_grid *g, const er_source *rule, int *px, int *py,
                            int64_t *found)
{
    const int w = g->width, h = g->height;
    const double D = rule->spacing;
    uint16_t *d = malloc((size_t)w * (size_t)h * sizeof *d);
    int64_t *s = malloc((size_t)w * sizeof *s), *t = malloc((size_t)w * sizeof *t);
    uint8_t *out = malloc((size_t)w);
    int *best = malloc((size_t)h * sizeof *best);
    er_status st = ER_OK;
    if (!d || !s || !t || !out || !best) {
        st = ER_ENOMEM;
        goto done;
    }
    far_from_walls(g, D, d, s, t, out);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * (size_t)w + (size_t)x;
            if ((g->wall && g->wall[i]) || x < D || x > w - 1 - D || y < D || y > h - 1 - D)
                d[i] = 0;
        }
    for (int y = 0; y < h; y++)
        best[y] = row_best(g, d, y);
    int64_t k = 0;
    while (k < rule->count) {
        int by = -1; /* ties: the lower row, whose cell index is lower */
        for (int y = 0; y < h; y++)
            if (best[y] >= 0 &&
                (by < 0 || g->elevation[(size_t)y * (size_t)w + (size_t)best[y]] >
                               g->elevation[(size_t)by * (size_t)w + (size_t)best[by]]))
                by = y;
        if (by < 0)
            break;
        px[k] = best[by];
        py[k] = by;
        suppress(g, d, best, px[k], by, D);
        k++;
    }
    *found = k;
done:
    free(d);
    free(s);
    free(t);
    free(out);
    free(best);
    return st;
}

/* ------------------------------------------------------------------ */
/* Checks                                                               */

/* Source i of the list (resolved: world pixels) against the map: finite,
 * on the world, and on a map that is the world covering a valid cell. */
static er_status check_source(const er_source_grid *g, const er_source *src, int windowed,
                              const char *key, int i, er_error *err)
{
    if (!isfinite(src->x) || !isfinite(src->y) || !(src->radius >= 0.0) ||
        !isfinite(src->radius) || !(src->rate >= 0.0) || !isfinite(src->rate))
        return er_fail(err, ER_EINVAL, "%s[%d]: position, radius and rate must be finite, "
                       "radius and rate >= 0", key, i);
    double sx = src->x - g->x0, sy = src->y - g->y0;
    int box[4], single;
    if (!er_disc_box(g, sx, sy, src->radius, box, &single)) {
        /* Off this window is no error when it is on the world (the
         * mosaic): another tile's run sees it. */
        er_source_grid world = *g;
        world.width = g->world_width;
        world.height = g->world_height;
        if (windowed && er_disc_box(&world, src->x, src->y, src->radius, box, &single))
            return ER_OK;
        return er_fail(err, ER_EINVAL, "%s[%d]: (%g, %g) radius %g lies outside the %dx%d map",
                       key, i, src->x, src->y, src->radius, world.width, world.height);
    }
    if (!windowed && er_disc_cells(g, sx, sy, src->radius, NULL, NULL) == 0)
        return er_fail(err, ER_EINVAL, "%s[%d]: (%g, %g) radius %g covers only nodata cells",
                       key, i, src->x, src->y, src->radius);
    return ER_OK;
}

/* Entry i at (x, y) to world pixels, checked: *src is the entry. */
static er_status resolve_xy(const er_source_grid *g, er_source *src, int windowed,
                            const char *key, int i, er_error *err)
{
    switch (src->coords) {
    case ER_COORDS_PIXEL:
        break;
    case ER_COORDS_MAP:
        return er_fail(err, ER_EINVAL, "%s[%d]: map coordinates must be converted to pixels "
                       "before the plan", key, i);
    case ER_COORDS_FRACTION:
        if (!(src->x >= 0.0 && src->x <= 1.0 && src->y >= 0.0 && src->y <= 1.0))
            return er_fail(err, ER_EINVAL, "%s[%d]: (%g, %g) is not a fraction of the map: "
                           "with \"coords\": \"fraction\" x and y lie in [0, 1]", key, i,
                           src->x, src->y);
        /* 0 and 1 are the world's edges, half a cell beyond the outer
         * cells' centres */
        src->x = src->x * g->world_width - 0.5;
        src->y = src->y * g->world_height - 0.5;
        src->coords = ER_COORDS_PIXEL;
        break;
    default:
        return er_fail(err, ER_EINVAL, "%s[%d]: unknown coordinates %d", key, i, (int)src->coords);
    }
    return check_source(g, src, windowed, key, i, err);
}

er_status er_sources_plan(er_source_list *l, const er_source_grid *g, char *warning, size_t n,
                          er_error *err)
{
    const char *key = er_sources_key(l);
    const int windowed = g->width != g->world_width || g->height != g->world_height;
    if (l->n < 0 || l->n > ER_MAX_SOURCES)
        return er_fail(err, ER_EINVAL, "%s: %d sources (at most %d)", key, l->n, ER_MAX_SOURCES);
    int64_t total = 0;
    for (int i = 0; i < l->n; i++)
        total += l->src[i].at == ER_AT_PEAKS ? l->src[i].count : 1;
    if (total > ER_MAX_SOURCES)
        return er_fail(err, ER_EINVAL, "%s: %lld sources with the peaks counted, at most %d",
                       key, (long long)total, ER_MAX_SOURCES);
    er_source out[ER_MAX_SOURCES];
    int m = 0, px[ER_MAX_SOURCES], py[ER_MAX_SOURCES];
    for (int i = 0; i < l->n; i++) {
        er_source e = l->src[i];
        er_status st;
        if (e.at != ER_AT_PEAKS) {
            if ((st = resolve_xy(g, &e, windowed, key, i, err)))
                return st;
            out[m++] = e;
            continue;
        }
        if (windowed)
            return er_fail(err, ER_EINVAL, "%s[%d]: \"at\": \"peaks\" needs the whole map, and a "
                           "tile of a tile set sees only its own: give the sources in pixel, "
                           "map or fraction coordinates", key, i);
        if (!g->elevation)
            return er_fail(err, ER_EINVAL, "%s[%d]: peaks need the map's heights", key, i);
        int64_t found = 0;
        if ((st = find_peaks(g, &e, px, py, &found)))
            return er_fail(err, st, "%s[%d]: out of memory looking for peaks", key, i);
        for (int64_t k = 0; k < found; k++) {
            out[m] = e;
            out[m].at = ER_AT_XY;
            out[m].coords = ER_COORDS_PIXEL;
            out[m].x = px[k] + g->x0;
            out[m].y = py[k] + g->y0;
            m++;
        }
        if (found < e.count && warning && n && !warning[0])
            snprintf(warning, n, "%s[%d]: found %lld of the %lld peaks asked for (cells at least "
                     "%g cells apart and from the map's edges and nodata)", key, i,
                     (long long)found, (long long)e.count, e.spacing);
    }
    memset(l->src, 0, sizeof l->src);
    memcpy(l->src, out, (size_t)m * sizeof *out);
    l->n = m;
    return ER_OK;
}
