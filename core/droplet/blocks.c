#include "blocks.h"

#include "../rng.h"

int64_t er_block_safe_size(int64_t reach)
{
    return 2 * reach;
}

int64_t er_blocking_max_blocks(int width, int height, int size)
{
    /* A shifted grid covers a side of n cells with at most n / T + 2 blocks. */
    return ((int64_t)width / size + 2) * ((int64_t)height / size + 2);
}

int er_blocking_is_single(int width, int height, int size)
{
    return (int64_t)width < 2 * (int64_t)size && (int64_t)height < 2 * (int64_t)size;
}

void er_blocking_init(er_blocking *tl, int width, int height, int size, uint64_t seed,
                    uint64_t batch)
{
    tl->width = width;
    tl->height = height;
    if (er_blocking_is_single(width, height, size)) {
        /* One block as large as the map: the block id is then 0 for every cell. */
        tl->size = width > height ? width : height;
        tl->shift_x = tl->shift_y = 0;
        tl->nx = tl->ny = 1;
        return;
    }
    uint64_t r = er_rng_u64(seed, ER_STREAM_BLOCK_OFFSET, batch);
    tl->size = size;
    tl->shift_x = (int)(((r >> 32) * (uint64_t)size) >> 32);
    tl->shift_y = (int)(((r & UINT64_C(0xffffffff)) * (uint64_t)size) >> 32);
    tl->nx = (width - 1 + tl->shift_x) / size + 1;
    tl->ny = (height - 1 + tl->shift_y) / size + 1;
}

void er_blocking_bucket(const er_blocking *tl, int n, const int *block_of, int *start, int *order,
                      int *colour_blocks, int colour_start[5])
{
    int nt = er_blocking_count(tl);
    for (int k = 0; k <= nt; k++)
        start[k] = 0;
    for (int i = 0; i < n; i++)
        start[block_of[i] + 1]++;
    for (int k = 0; k < nt; k++)
        start[k + 1] += start[k];
    /* Placing items in increasing index keeps each block's list in index
     * order; the running cursor is start[k] itself, restored below. */
    for (int i = 0; i < n; i++)
        order[start[block_of[i]]++] = i;
    for (int k = nt; k > 0; k--)
        start[k] = start[k - 1];
    start[0] = 0;

    int m = 0;
    for (int c = 0; c < 4; c++) {
        colour_start[c] = m;
        for (int k = 0; k < nt; k++)
            if (er_blocking_colour(tl, k) == c && start[k + 1] > start[k])
                colour_blocks[m++] = k;
    }
    colour_start[4] = m;
}
