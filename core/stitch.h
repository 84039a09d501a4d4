/*
 * Stitching (erode(1) "TILE SETS"): the cross-fade of the overlapping halo
 * outputs that cover one tile into that tile's values.  Each output
 * contributes er_stitch_weight (core/tiles.h) times its value; the result
 * is the weighted mean, so where two outputs overlap across a border the
 * value fades linearly from one to the other.  Pure computation on arrays
 * in memory: cli/ reads the outputs and writes the tile.
 */
#ifndef ER_STITCH_H
#define ER_STITCH_H

#include <stdint.h>

#include "error.h"
#include "tiles.h"

/* The sums for one tile, in double so that the order of the outputs is the
 * only thing that decides the rounding (the caller adds them in one fixed
 * order). */
typedef struct er_stitch {
    er_tile_place tile;     /* the tile's place in the world [cells] */
    double *sum;            /* tile.width * tile.height: sum of weight * value */
    double *wsum;           /* the same: sum of weights */
    uint8_t *nodata;        /* 1: nodata in the result (the tile's own output had
                               nodata there, or no output reached the cell) */
} er_stitch;

/* Allocates empty sums for the tile at `tile`.  ER_ENOMEM (one line in
 * err) when out of memory; free with er_stitch_free either way. */
er_status er_stitch_init(er_stitch *s, const er_tile_place *tile, er_error *err);

/* Frees the sums; accepts a zeroed or freed struct. */
void er_stitch_free(er_stitch *s);

/*
 * Adds one halo output: `data` (width x height, row-major) covering the
 * world window `win`, with its nodata mask (NULL: none).  Cells of the
 * output outside the tile are ignored; its nodata cells add nothing, and
 * when `own` (the tile's own output) they stay nodata in the result.
 * Not thread-safe on the same s.
 */
void er_stitch_add(er_stitch *s, const er_window *win, int width, int height, const float *data,
                   const uint8_t *nodata, int own);

/*
 * Writes the weighted means into res (tile.width * tile.height values) and
 * marks in s->nodata the cells with nodata or with no weight, whose value
 * is `nodata_value`.  Returns 1 when any cell is nodata, else 0.
 */
int er_stitch_finish(er_stitch *s, double nodata_value, float *res);

#endif
