/*
 * Tile-set geometry (erode(1) "TILE SETS"): windows of a world, the mosaic a
 * set of georeferenced tiles forms, and the cross-fade weights that stitch
 * overlapping halo outputs.  Pure functions on plain numbers: no I/O (cli/
 * reads the tiles' georeferencing and hands the numbers over).
 */
#ifndef ER_TILES_H
#define ER_TILES_H

#include "error.h"
#include "model.h"

/* Resolves a window for a width x height map: win == NULL gives the map as
 * the world.  ER_EINVAL (one line in err) when the map does not fit inside
 * the world or a size is not positive.  Thread-safe. */
er_status er_window_resolve(const er_window *win, int width, int height, er_window *out,
                            er_error *err);

/* Whether the map's left/right/top/bottom edge lies inside the world (a
 * halo edge) rather than on the world's own edge; out[ER_EDGE_*]. */
enum { ER_EDGE_LEFT = 0, ER_EDGE_RIGHT = 1, ER_EDGE_TOP = 2, ER_EDGE_BOTTOM = 3 };
void er_window_inner_edges(const er_window *w, int width, int height, int out[4]);

/* One tile's geometry from its georeferencing: the model coordinates of
 * its top-left corner, the size of a cell in model units (step_y is
 * negative for north-up rasters) and its size in cells. */
typedef struct er_tile_geom {
    double origin_x, origin_y;
    double step_x, step_y;
    int width, height;
} er_tile_geom;

/* A tile's place in the mosaic: its top-left cell in world cells. */
typedef struct er_tile_place {
    int col, row;
    int width, height;
} er_tile_place;

/*
 * Lays n tiles out as one mosaic: the world is the union of their extents
 * on the grid of the first tile.  Every tile must have the first tile's
 * cell size (to 1e-9 of a cell) and sit on its grid (corner offsets whole
 * cells to 1e-6 of a cell), and no two tiles may overlap; else ER_EINVAL
 * naming the tile (index into geom) in one line.  Cells of the world that
 * no tile covers are gaps (nodata).  place receives n entries; *world_w,
 * *world_h the world's size.  Thread-safe.
 */
er_status er_mosaic_layout(const er_tile_geom *geom, int n, er_tile_place *place, int *world_w,
                           int *world_h, er_error *err);

/* The window of tile `place` extended by `halo` cells each way, clipped to
 * the world. */
void er_mosaic_window(const er_tile_place *place, int halo, int world_w, int world_h,
                      er_window *win, int *width, int *height);

/* Whether two places' rectangles, each extended by `halo`, overlap. */
int er_mosaic_touch(const er_tile_place *a, const er_tile_place *b, int halo);

/*
 * Cross-fade weight of world cell (x, y) in a halo output covering the
 * window win (width x height cells): its distance, in cells from the cell
 * centre, to the nearest edge of the window that lies inside the world
 * (world edges do not count), so it falls linearly to 0 towards each halo
 * edge; 0 outside the window; 1e30 for a window with no inner edge.  Two
 * windows overlapping by 2N cells across a border get weights summing to
 * 2N there, so the normalised weights w_a / (w_a + w_b) cross-fade
 * linearly from one to the other.  Thread-safe.
 */
double er_stitch_weight(const er_window *win, int width, int height, int x, int y);

#endif
