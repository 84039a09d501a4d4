/*
 * Tile sets (erode(1) TILE SETS) on the command line: --tile-set loads the
 * mosaic (io/mosaic.h reads it), and `erode stitch` cross-fades the
 * overlapping halo outputs back into seamless tiles (the blending is
 * core/stitch.c; this file reads the outputs and writes the tiles).
 */
#ifndef ER_CLI_TILES_H
#define ER_CLI_TILES_H

#include "../io/mosaic.h"
#include "options.h"

/* --tile-set: er_tile_set_read, its error printed in one line.  Returns 0
 * or exit status 2; the caller frees *ts with er_tile_set_free. */
int er_tile_set_load(const char *list, er_tile_set *ts);

/* One tile `erode stitch` writes: its index in the tile set and the layers
 * (er_layer_bit mask) it stitches. */
typedef struct er_stitch_tile {
    int k;
    unsigned layers;
} er_stitch_tile;

/* `erode stitch`: for each tile (s->inputs, found by file identity and
 * named after their entry in the set, or every tile of the set when none
 * are given) and each layer in s->layers (without --layers: each layer
 * the tile's run wrote), cross-fades the halo outputs
 * DIR/<stem>.<layer>.halo.tif of the tile and its neighbours
 * (er_stitch_weight) into DIR/<stem>.<layer>.tif at the tile's own extent
 * and georeferencing.  Before any tile is written: the write-target check
 * (er_targets_check_stitch) and every halo output's header (the tile's own
 * and its neighbours' exist, all lie on the set's grid, all that are
 * blended share one recipe); a failure is exit status 2, nothing written.
 * Then tile by tile, each tile's layers one output set (io/atomic.h) that
 * replaces the previous stitched layers together or not at all; a tile
 * that fails (a halo output unreadable or changed meanwhile: 2; a write:
 * 1) keeps its previous set and the next tile goes on; SIGINT/SIGTERM
 * (er_stop_signal) stop at the next layer or tile, 128 + the signal.
 * Returns the worst exit status, each failure printed in one line. */
int er_stitch_all(const er_settings *s, const er_tile_set *ts);

#endif
