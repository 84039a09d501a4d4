/*
 * Tile sets (README "Tile sets") on the command line: --tile-set loads the
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

/* `erode stitch`: for each tile (s->inputs, or every tile of the set when
 * none are given) and each layer in s->layers (without --layers: each
 * layer the tile's run wrote), cross-fades the halo
 * outputs DIR/<stem>.<layer>.halo.tif of the tile and its neighbours
 * (er_stitch_weight) into DIR/<stem>.<layer>.tif at the tile's own extent
 * and georeferencing, written atomically.  Returns the worst exit status. */
int er_stitch_all(const er_settings *s, const er_tile_set *ts);

#endif
