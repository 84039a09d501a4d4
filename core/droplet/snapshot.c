/*
 * The "snapshot" droplet schedule (droplet.schedule): a batch's droplets
 * run on the terrain as it was at the batch start, in parallel, into the
 * fixed-point sums of sink.c (which says why the result does not depend
 * on their order), then resolved: a count pass, the main pass, the
 * resolve.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "droplet_impl.h"
#include "../parallel.h"

/* One pass over a snapshot batch: every droplet reads sc's snapshot and
 * writes into its sink (the counts in the count pass, the sums in the
 * main one), each with its own accumulator (acc[i]). */
static void snapshot_pass(const er_dctx *sc, const er_droplet_batch *bt, size_t *trails,
                          er_dacc *acc)
{
    ER_OMP_FOR()
    for (int i = 0; i < bt->n; i++) {
        memset(&acc[i], 0, sizeof acc[i]);
        if (bt->ok[i])
            er_lague_droplet(sc, bt->sx[i], bt->sy[i],
                             trails + (size_t)er_thread_id() * (size_t)sc->lifetime, &acc[i]);
    }
}

void er_snap_scales(const er_plan *plan, const er_droplet_setup *s, er_dsink *k)
{
    const er_dctx *c = &s->ctx;
    float rain = 1.0f;
    if (c->ctl_rain)
        for (size_t i = 0; i < s->cells; i++)
            if ((!c->wall || !c->wall[i]) && c->ctl_rain[i] > rain)
                rain = c->ctl_rain[i];
    k->h_scale = ldexpf(1.0f, er_snap_height_shift(plan->lo, plan->hi));
    k->w_scale = ldexpf(1.0f, er_snap_water_shift((double)c->init_water * rain));
}

er_status er_droplet_snap_sched_new(er_droplet_sched *w, const er_plan *plan,
                                    const er_droplet_setup *s, int64_t batch, er_error *err)
{
    const er_dctx *c = &s->ctx;
    const size_t trails = (size_t)er_thread_count() * (size_t)c->lifetime;
    er_status st = er_droplet_sched_new(w, c, (int)plan->own.droplet.block_side, batch,
                                        (size_t)batch, trails, err);
    if (!st)
        st = er_snap_new(&w->k, c, c->flow != NULL, err);
    if (st)
        return st;
    er_snap_scales(plan, s, &w->k);
    w->sc = *c;
    w->sc.height_m = w->k.snap;
    w->sc.sink = &w->k;
    return ER_OK;
}

/*
 * One batch of the snapshot schedule: the starts as in the blocks
 * schedule, the count pass and the main pass, every droplet in parallel
 * against the batch start's heights, then the resolve.
 */
er_status er_droplet_snap_batch(er_droplet_sched *w, const er_plan *plan,
                                const er_droplet_setup *s, int64_t b, er_dacc *sum,
                                er_error *err)
{
    const er_dctx *c = &s->ctx;
    int64_t lo;
    int n = er_droplet_batch_at(plan, b, &lo);
    er_droplet_batch_draw(c, plan->p.seed, (int)plan->own.droplet.block_side, b, lo, n, &w->bt);
    er_snap_begin(&w->k, c->height_m);
    w->k.counting = 1;
    snapshot_pass(&w->sc, &w->bt, w->trails, w->acc);
    w->k.counting = 0;
    snapshot_pass(&w->sc, &w->bt, w->trails, w->acc);
    for (int i = 0; i < n; i++)
        er_dacc_add(sum, &w->acc[i]);
    if (er_snap_resolve(&w->k, c->height_m, c->deposit, c->wear, c->flow))
        return er_fail(err, ER_ENUMERIC,
                       "droplet: a snapshot sum wrapped or exceeded its cell's room");
    sum->water += er_droplet_batch_water(c, &w->bt);
    return ER_OK;
}
