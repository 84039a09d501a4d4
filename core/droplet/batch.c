/*
 * Droplet starts and batches: where droplet `id` starts (a pure function
 * of (seed, id)), and a batch's starts bucketed by scheduling block, laid
 * on the world so that a window sees the world's batches.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "droplet_impl.h"
#include "../parallel.h"
#include "../rng.h"

int er_droplet_start(const er_dctx *c, uint64_t seed, int64_t id, double *px, double *py)
{
    const size_t w = (size_t)c->width;
    int lague = c->variant == ER_DROPLET_LAGUE;
    double sx = lague ? c->world_w - 1 : c->world_w, sy = lague ? c->world_h - 1 : c->world_h;
    double lim_x = lague ? c->width - 1 : c->width, lim_y = lague ? c->height - 1 : c->height;
    if (sx <= 0 || sy <= 0 || lim_x <= 0 || lim_y <= 0)
        return 0;
    uint64_t r = er_rng_u64(seed, ER_STREAM_DROPLET_START, (uint64_t)id);
    for (int k = 0; k < ER_START_TRIES; k++) {
        double x = (double)(r >> 32) * (1.0 / 4294967296.0) * sx - c->wx0;
        double y = (double)(r & UINT64_C(0xffffffff)) * (1.0 / 4294967296.0) * sy - c->wy0;
        if (!(x >= 0 && x < lim_x && y >= 0 && y < lim_y))
            return 0;
        size_t i = (size_t)(int)y * w + (size_t)(int)x;
        if (!c->wall || (lague ? !(c->wall[i] | c->wall[i + 1] | c->wall[i + w] | c->wall[i + w + 1])
                               : !c->wall[i])) {
            *px = x;
            *py = y;
            /* Rain 0: the droplet does not start, after the same draws. */
            return !c->ctl_rain || c->ctl_rain[i] > 0;
        }
        r = er_rng_u64(r, ER_STREAM_DROPLET_START, (uint64_t)id);
    }
    return 0;
}

int64_t er_droplet_max_blocks(const er_dctx *c, int size)
{
    return er_blocking_is_single(c->world_w, c->world_h, size)
               ? 1
               : er_blocking_max_blocks(c->world_w, c->world_h, size);
}

er_status er_droplet_batch_new(er_droplet_batch *bt, const er_dctx *c, int size, int64_t batch,
                               er_error *err)
{
    memset(bt, 0, sizeof *bt);
    int64_t mb = er_droplet_max_blocks(c, size);
    if (mb > INT_MAX / 2 || batch > INT_MAX / 2)
        return er_fail(err, ER_ENOMEM, "droplet: too many blocks or droplets per batch");
    size_t nb = (size_t)(batch > 0 ? batch : 1), mt = (size_t)mb;
    bt->max_blocks = (int)mb;
    bt->sx = malloc(nb * sizeof *bt->sx);
    bt->sy = malloc(nb * sizeof *bt->sy);
    bt->ok = malloc(nb * sizeof *bt->ok);
    bt->block_of = malloc(nb * sizeof *bt->block_of);
    bt->order = malloc(nb * sizeof *bt->order);
    bt->start = malloc((mt + 1) * sizeof *bt->start);
    bt->colour_blocks = malloc(mt * sizeof *bt->colour_blocks);
    if (!bt->sx || !bt->sy || !bt->ok || !bt->block_of || !bt->order || !bt->start ||
        !bt->colour_blocks) {
        er_droplet_batch_free(bt);
        return er_fail(err, ER_ENOMEM, "droplet: out of memory for a batch of %zu droplets", nb);
    }
    return ER_OK;
}

void er_droplet_batch_free(er_droplet_batch *bt)
{
    free(bt->sx);
    free(bt->sy);
    free(bt->ok);
    free(bt->block_of);
    free(bt->order);
    free(bt->start);
    free(bt->colour_blocks);
    memset(bt, 0, sizeof *bt);
}

void er_droplet_batch_draw(const er_dctx *c, uint64_t seed, int size, int64_t b, int64_t lo,
                           int n, er_droplet_batch *bt)
{
    /* The grid lies on the world, so a window sees the world's blocks,
     * colours and order. */
    er_blocking_init(&bt->bl, c->world_w, c->world_h, size, seed, (uint64_t)b);
    bt->n = n;
    ER_OMP_FOR()
    for (int i = 0; i < n; i++) {
        bt->ok[i] = er_droplet_start(c, seed, lo + i, &bt->sx[i], &bt->sy[i]);
        /* A droplet with no valid start runs nowhere; any block will do. */
        bt->block_of[i] = bt->ok[i] ? er_blocking_block(&bt->bl, (int)bt->sx[i] + c->wx0,
                                                        (int)bt->sy[i] + c->wy0)
                                    : 0;
    }
    er_blocking_bucket(&bt->bl, n, bt->block_of, bt->start, bt->order, bt->colour_blocks,
                       bt->colour_start);
}

double er_droplet_batch_water(const er_dctx *c, const er_droplet_batch *bt)
{
    double w = 0;
    if (!c->ctl_rain)
        return w;
    for (int i = 0; i < bt->n; i++)
        if (bt->ok[i])
            w += (double)er_start_water(c, bt->sx[i], bt->sy[i]);
    return w;
}


er_status er_droplet_sched_new(er_droplet_sched *w, const er_dctx *c, int size, int64_t batch,
                               size_t sums, size_t trail_cells, er_error *err)
{
    er_status st = er_droplet_batch_new(&w->bt, c, size, batch, err);
    if (st)
        return st;
    w->acc = malloc(sums * sizeof *w->acc);
    w->trails = malloc(trail_cells * sizeof *w->trails);
    if (!w->acc || !w->trails)
        return er_fail(err, ER_ENOMEM, "droplet: out of memory for a batch of %lld droplets",
                       (long long)batch);
    return ER_OK;
}

void er_droplet_sched_free(er_droplet_sched *w)
{
    er_droplet_batch_free(&w->bt);
    er_snap_free(&w->k);
    free(w->acc);
    free(w->trails);
    memset(w, 0, sizeof *w);
}
