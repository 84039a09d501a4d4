/*
 * River sources: places where water is added every step (Mei eq. 1; SPH's
 * springs), shared by the models that take them.  The recipe's list
 * (river_sources, or its old spelling in a model's section) holds sources at pixel,
 * map or fraction coordinates and rules ("at": "peaks"); a model's plan
 * turns it into plain sources at world pixels (er_sources_plan), and its
 * run asks which cells each one covers (er_source_cells).  The CLI converts
 * map coordinates before the plan (io/ knows the georeferencing); fractions
 * and peaks need only the map.  No I/O; every function is thread-safe.
 */
#ifndef ER_SOURCES_H
#define ER_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Entries of a recipe's list, and sources a plan holds once the rules are
 * resolved (an SPH state keeps a volume per source: core/model.h). */
#define ER_MAX_SOURCES 64

typedef enum er_source_coords {
    ER_COORDS_PIXEL = 0,   /* column, row of the world; cell centres at whole numbers */
    ER_COORDS_MAP = 1,     /* the georeferencing's map units (the CLI converts them) */
    ER_COORDS_FRACTION = 2 /* x, y in [0, 1] of the world's width and height */
} er_source_coords;

typedef enum er_source_at {
    ER_AT_XY = 0,   /* one source at (x, y) */
    ER_AT_PEAKS = 1 /* one source on each of the `count` highest cells `spacing` apart */
} er_source_at;

/* One entry of river_sources.  Pixel coordinates address cell centres:
 * cell (column i, row j) is at (i, j), so the map's left edge is x = -0.5
 * and a map coordinate X converts as (X - X_origin) / pixel_size - 0.5. */
typedef struct er_source {
    double x, y;             /* centre, in `coords` (ER_AT_XY) */
    double radius;           /* [cells] water falls on cells within this distance */
    double rate;             /* [m/s] water depth added per second on each covered cell */
    double spacing;          /* ER_AT_PEAKS: [cells] least distance between two peaks
                              * and from a peak to the map's edges and nodata */
    int64_t count;           /* ER_AT_PEAKS: the peaks wanted */
    er_source_coords coords;
    er_source_at at;         /* (no padding: lists compare with memcmp) */
} er_source;

typedef struct er_source_list {
    int n;                          /* entries used */
    int old_key;                    /* 1: the recipe used the key's old spelling */
    er_source src[ER_MAX_SOURCES];
} er_source_list;

/* The map sources lie on: a window of a larger world, or the world. */
typedef struct er_source_grid {
    int width, height;             /* [cells] the map */
    int x0, y0;                    /* [cells] its top-left cell in the world */
    int world_width, world_height; /* [cells] the world; the map itself without a window */
    const uint8_t *wall;           /* 1 = nodata; NULL = none */
    const float *elevation;        /* [m] heights (for peaks); NULL when not needed */
} er_source_grid;

/* The recipe key the list came from, for messages: "river_sources", or
 * its old spelling when the recipe used that. */
const char *er_sources_key(const er_source_list *l);

/*
 * A model plan's part for the sources: resolves the list in place (each
 * fraction to world pixels, each rule to the sources it finds, in list
 * order, every source pixel and ER_AT_XY afterwards) and checks every
 * source against the map: finite, on the world and, on a map that is the
 * world, covering at least one valid cell.  Peaks are refused on a map
 * that is a window of a larger world (a tile cannot see the world's).
 * A rule that finds fewer peaks than it asks for writes one line into
 * warning[n] (when that is still empty).  ER_EINVAL with one line naming
 * the entry ("river_sources[2]: ...").  Allocates only while it looks for
 * peaks (about 2 bytes a cell; ER_ENOMEM when that fails).
 */
er_status er_sources_plan(er_source_list *l, const er_source_grid *g, char *warning, size_t n,
                          er_error *err);

/*
 * Cells of the disc of radius rad [cells] around (cx, cy) [cells of g's
 * map]: those whose centre lies within rad, clipped to the map; the
 * nearest cell when the disc holds no centre along a row or a column
 * (*single = 1).  box receives x0, x1, y0, y1 (inclusive); returns 0 when
 * the disc misses the map.
 */
int er_disc_box(const er_source_grid *g, double cx, double cy, double rad, int box[4],
                int *single);

typedef void (*er_cell_fn)(void *user, size_t i);

/* The valid (non-wall) cells of that disc in row order: visit(user, i)
 * for each (i = row * width + column) when visit is not NULL; returns
 * their number. */
int64_t er_disc_cells(const er_source_grid *g, double cx, double cy, double rad,
                      er_cell_fn visit, void *user);

/* The cells source src (resolved: world pixels) covers on g's map, as
 * er_disc_cells; the same cells on every model and backend. */
int64_t er_source_cells(const er_source_grid *g, const er_source *src, er_cell_fn visit,
                        void *user);

/* [m] The depth src adds to each of its cells in a (sub-)step of dt [s],
 * rounded once to float as Mei adds it. */
static inline float er_source_depth(const er_source *src, double dt)
{
    return (float)(src->rate * dt);
}

#endif
