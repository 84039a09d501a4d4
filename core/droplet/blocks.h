/*
 * Block colouring for droplet batches (erode-models(7) "Schedule").
 * Private to core/.
 *
 * A batch's map is cut into square blocks of side T whose grid is shifted by
 * an offset drawn from (seed, batch).  Blocks get one of four colours from the
 * parity of their column and row; the colours run one after another and the
 * blocks of one colour run in parallel.  Two blocks of one colour are at least
 * one whole block apart, so when every droplet stays within T/2 cells of its
 * start (the plan's reach), no two of them touch the same cell and the result
 * equals the sequential order (colour, block, droplet index) for any number
 * of threads.
 */
#ifndef ER_BLOCKS_H
#define ER_BLOCKS_H

#include <stdint.h>

typedef struct er_blocking {
    int width, height;   /* [cells] the map */
    int size;            /* [cells] block side T */
    int shift_x;         /* grid offset in [0, T): block column = (x + shift_x) / T */
    int shift_y;         /* the same for rows */
    int nx, ny;          /* block columns and rows covering the map */
} er_blocking;

/* The smallest safe block side for droplets that never get more than `reach`
 * cells (per axis) from their start: 2 * reach. */
int64_t er_block_safe_size(int64_t reach);

/* The most blocks er_blocking_init can produce for this map and block side. */
int64_t er_blocking_max_blocks(int width, int height, int size);

/* Whether a map this size runs as one block (smaller than two blocks both
 * ways): then the batch order is the plain droplet index order. */
int er_blocking_is_single(int width, int height, int size);

/* Lays out batch `batch`'s blocks: the grid offset is er_rng_u64(seed,
 * ER_STREAM_BLOCK_OFFSET, batch), its high half for x and low half for y.
 * A single-block map gets one block and no offset. */
void er_blocking_init(er_blocking *tl, int width, int height, int size, uint64_t seed,
                    uint64_t batch);

static inline int er_blocking_count(const er_blocking *tl) { return tl->nx * tl->ny; }

/* The block holding cell (x, y), 0 <= x < width, 0 <= y < height. */
static inline int er_blocking_block(const er_blocking *tl, int x, int y)
{
    return ((y + tl->shift_y) / tl->size) * tl->nx + (x + tl->shift_x) / tl->size;
}

/* Colour 0..3 of a block: column parity + 2 * row parity. */
static inline int er_blocking_colour(const er_blocking *tl, int block)
{
    return (block % tl->nx & 1) | ((block / tl->nx & 1) << 1);
}

/*
 * Stable counting sort of n items by block: on return order[start[k] ..
 * start[k+1]) lists, in increasing item index, the items whose block_of is k.
 * start has er_blocking_count + 1 entries.  Then colour_blocks[colour_start[c]
 * .. colour_start[c+1]) lists, in increasing block id, the non-empty blocks of
 * colour c (colour_blocks has room for er_blocking_count entries, colour_start
 * for 5).  Serial; O(n + blocks).
 */
void er_blocking_bucket(const er_blocking *tl, int n, const int *block_of, int *start, int *order,
                      int *colour_blocks, int colour_start[5]);

#endif
