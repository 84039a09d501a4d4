/*
 * Tile sets (erode(1) TILE SETS): the mosaic a list of georeferenced tiles
 * forms, read from the tiles' headers, and the window of one tile extended
 * by its halo, read from its neighbours.  The geometry itself is
 * core/tiles.c; this file reads.
 */
#ifndef ER_MOSAIC_H
#define ER_MOSAIC_H

#include "../core/tiles.h"
#include "image.h"

/* A file's identity, so any spelling of its path finds it. */
typedef struct er_tile_id {
    unsigned long long dev, ino;
} er_tile_id;

typedef struct er_tile_set {
    int n;
    char **paths;             /* n paths as listed (owned) */
    er_tile_id *id;           /* n files' device and inode when the list was read (owned) */
    char *list_buf;           /* the list's text (owned) */
    er_tile_place *place;     /* n places in world cells */
    er_tile_geom *geom;       /* n geometries from the georeferencing */
    int world_w, world_h;     /* [cells] the mosaic */
} er_tile_set;

/* The most text a tile list may hold: an endless stream is refused. */
#define ER_TILE_LIST_MAX_BYTES (64u << 20)

/* Reads the list (a file, or "-" for standard input; one path a line,
 * blank lines ignored, at most ER_TILE_LIST_MAX_BYTES), the header and georeferencing of every tile, and
 * lays them out (er_mosaic_layout).  Refuses in one line a tile that is
 * not a GeoTIFF with an affine, unrotated georeferencing, a CRS other than
 * the first tile's, another cell size, a misaligned or overlapping tile,
 * two entries that are one file (a link), two tiles of the same file name.  ER_ENOMEM ("out of memory") or another
 * status with err naming the list or the tile; the caller frees *ts with
 * er_tile_set_free either way. */
er_status er_tile_set_read(const char *list, er_tile_set *ts, er_error *err);
void er_tile_set_free(er_tile_set *ts);

/* Index of the tile that is the file `path` (same device and inode as
 * when the list was read, so any spelling of the path works), or -1.
 * One stat() whatever the number of tiles. */
int er_tile_set_find(const er_tile_set *ts, const char *path);

/* Reads tile k extended by `halo` cells from its neighbours into *img
 * (values in file units, georeferenced for the window; cells no tile
 * covers are nodata) and fills *win, reporting progress through pg (may
 * be NULL) over all the files it reads.  On failure *img is empty and err
 * holds one line. */
er_status er_tile_window_read(const er_tile_set *ts, int k, int halo, const er_read_opts *ro,
                              const er_io_progress *pg, er_image *img, er_window *win,
                              er_error *err);

/* Where a raster (a halo output) lies in the set's world, from its
 * georeferencing on the first tile's grid: 1 and *win filled, or 0 when it
 * has another cell size, is off the grid or leaves the world. */
int er_tile_set_locate(const er_tile_set *ts, const er_image *img, er_window *win);

#endif
