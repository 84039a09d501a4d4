/*
 * Tile colouring for droplet batches (DESIGN.md §5).  Private to core/.
 *
 * A batch's map is cut into square tiles of side T whose grid is shifted by
 * an offset drawn from (seed, batch).  Tiles get one of four colours from the
 * parity of their column and row; the colours run one after another and the
 * tiles of one colour run in parallel.  Two tiles of one colour are at least
 * one whole tile apart, so when every droplet stays within T/2 cells of its
 * start (er_tile_reach), no two of them touch the same cell and the result
 * equals the sequential order (colour, tile, droplet index) for any number
 * of threads.
 */
#ifndef ER_SCHEDULE_H
#define ER_SCHEDULE_H

#include <stdint.h>

typedef struct er_tiling {
    int width, height;   /* [cells] the map */
    int size;            /* [cells] tile side T */
    int shift_x;         /* grid offset in [0, T): tile column = (x + shift_x) / T */
    int shift_y;         /* the same for rows */
    int nx, ny;          /* tile columns and rows covering the map */
} er_tiling;

/* The smallest safe tile side for droplets that never get more than `reach`
 * cells (per axis) from their start: 2 * reach. */
int64_t er_tile_safe_size(int64_t reach);

/* The most tiles er_tiling_init can produce for this map and tile side. */
int64_t er_tiling_max_tiles(int width, int height, int size);

/* Whether a map this size runs as one tile (smaller than two tiles both
 * ways): then the batch order is the plain droplet index order. */
int er_tiling_is_single(int width, int height, int size);

/* Lays out batch `batch`'s tiles: the grid offset is er_rng(seed,
 * ER_STREAM_TILE_OFFSET, batch), its high half for x and low half for y.
 * A single-tile map gets one tile and no offset. */
void er_tiling_init(er_tiling *tl, int width, int height, int size, uint64_t seed,
                    uint64_t batch);

static inline int er_tiling_count(const er_tiling *tl) { return tl->nx * tl->ny; }

/* The tile holding cell (x, y), 0 <= x < width, 0 <= y < height. */
static inline int er_tiling_tile(const er_tiling *tl, int x, int y)
{
    return ((y + tl->shift_y) / tl->size) * tl->nx + (x + tl->shift_x) / tl->size;
}

/* Colour 0..3 of a tile: column parity + 2 * row parity. */
static inline int er_tiling_colour(const er_tiling *tl, int tile)
{
    return (tile % tl->nx & 1) | ((tile / tl->nx & 1) << 1);
}

/*
 * Stable counting sort of n items by tile: on return order[start[k] ..
 * start[k+1]) lists, in increasing item index, the items whose tile_of is k.
 * start has er_tiling_count + 1 entries.  Then colour_tiles[colour_start[c]
 * .. colour_start[c+1]) lists, in increasing tile id, the non-empty tiles of
 * colour c (colour_tiles has room for er_tiling_count entries, colour_start
 * for 5).  Serial; O(n + tiles).
 */
void er_tiling_bucket(const er_tiling *tl, int n, const int *tile_of, int *start, int *order,
                      int *colour_tiles, int colour_start[5]);

#endif
