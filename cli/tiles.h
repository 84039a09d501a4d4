/*
 * Tile sets (README "Tile sets"): the mosaic a list of georeferenced tiles
 * forms, the window of one tile extended by its halo read from its
 * neighbours, and `erode stitch`, which cross-fades the overlapping halo
 * outputs back into seamless tiles.  The geometry itself is core/tiles.c;
 * this file reads and writes.
 */
#ifndef ER_CLI_TILES_H
#define ER_CLI_TILES_H

#include "../core/tiles.h"
#include "../io/image.h"
#include "options.h"

typedef struct er_tile_set {
    int n;
    char **paths;             /* n paths as listed (owned) */
    char *list_buf;           /* the list's text (owned) */
    er_tile_place *place;     /* n places in world cells */
    er_tile_geom *geom;       /* n geometries from the georeferencing */
    int world_w, world_h;     /* [cells] the mosaic */
} er_tile_set;

/* Reads the list (a file, or "-" for standard input; one path a line,
 * blank lines ignored), the header and georeferencing of every tile, and
 * lays them out (er_mosaic_layout).  Refuses in one line a tile that is
 * not a GeoTIFF with an affine, unrotated georeferencing, a CRS other than
 * the first tile's, another cell size, a misaligned or overlapping tile.
 * Returns 0 or exit status 2 (message printed). */
int er_tile_set_load(const char *list, er_tile_set *ts);
void er_tile_set_free(er_tile_set *ts);

/* Index of the tile that is the file `path` (same device and inode, so
 * any spelling of the path works), or -1. */
int er_tile_set_find(const er_tile_set *ts, const char *path);

/* Reads tile k extended by `halo` cells from its neighbours into *img
 * (values in file units, georeferenced for the window; cells no tile
 * covers are nodata) and fills *win.  On failure *img is empty and err
 * holds one line. */
er_status er_tile_window_read(const er_tile_set *ts, int k, int halo, const er_read_opts *ro,
                              er_image *img, er_window *win, er_error *err);

/* `erode stitch`: for each tile (s->inputs, or every tile of the set when
 * none are given) and each layer in s->layers (without --layers: each
 * layer the tile's run wrote), cross-fades the halo
 * outputs DIR/<stem>.<layer>.halo.tif of the tile and its neighbours
 * (er_stitch_weight) into DIR/<stem>.<layer>.tif at the tile's own extent
 * and georeferencing, written atomically.  Returns the worst exit status. */
int er_stitch_all(const er_settings *s, const er_tile_set *ts);

#endif
