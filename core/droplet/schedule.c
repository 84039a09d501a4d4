#include "schedule.h"

#include "../rng.h"

int64_t er_tile_safe_size(int64_t reach)
{
    return 2 * reach;
}

int64_t er_tiling_max_tiles(int width, int height, int size)
{
    /* A shifted grid covers a side of n cells with at most n / T + 2 tiles. */
    return ((int64_t)width / size + 2) * ((int64_t)height / size + 2);
}

int er_tiling_is_single(int width, int height, int size)
{
    return (int64_t)width < 2 * (int64_t)size && (int64_t)height < 2 * (int64_t)size;
}

void er_tiling_init(er_tiling *tl, int width, int height, int size, uint64_t seed,
                    uint64_t batch)
{
    tl->width = width;
    tl->height = height;
    if (er_tiling_is_single(width, height, size)) {
        /* One tile as large as the map: the tile id is then 0 for every cell. */
        tl->size = width > height ? width : height;
        tl->shift_x = tl->shift_y = 0;
        tl->nx = tl->ny = 1;
        return;
    }
    uint64_t r = er_rng_u64(seed, ER_STREAM_TILE_OFFSET, batch);
    tl->size = size;
    tl->shift_x = (int)(((r >> 32) * (uint64_t)size) >> 32);
    tl->shift_y = (int)(((r & UINT64_C(0xffffffff)) * (uint64_t)size) >> 32);
    tl->nx = (width - 1 + tl->shift_x) / size + 1;
    tl->ny = (height - 1 + tl->shift_y) / size + 1;
}

void er_tiling_bucket(const er_tiling *tl, int n, const int *tile_of, int *start, int *order,
                      int *colour_tiles, int colour_start[5])
{
    int nt = er_tiling_count(tl);
    for (int k = 0; k <= nt; k++)
        start[k] = 0;
    for (int i = 0; i < n; i++)
        start[tile_of[i] + 1]++;
    for (int k = 0; k < nt; k++)
        start[k + 1] += start[k];
    /* Placing items in increasing index keeps each tile's list in index
     * order; the running cursor is start[k] itself, restored below. */
    for (int i = 0; i < n; i++)
        order[start[tile_of[i]]++] = i;
    for (int k = nt; k > 0; k--)
        start[k] = start[k - 1];
    start[0] = 0;

    int m = 0;
    for (int c = 0; c < 4; c++) {
        colour_start[c] = m;
        for (int k = 0; k < nt; k++)
            if (er_tiling_colour(tl, k) == c && start[k + 1] > start[k])
                colour_tiles[m++] = k;
    }
    colour_start[4] = m;
}
