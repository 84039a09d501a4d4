/*
 * The Lague/Beyer droplet (S. Lague's Hydraulic-Erosion project, after H.
 * T. Beyer 2015, Implementation of a method for hydraulic erosion): its
 * start, its end, the flow it leaves, one step (er_lague_step) and the
 * snapshot schedule's count pass of a step.  The step's phases are inline
 * in droplet_impl.h, where the lanes (lanes.c) interleave them too; the
 * erosion rule is described there.
 */
#include <math.h>

#include "droplet_impl.h"

/* Adds the droplet's water to the flow layer at every cell it stepped on.
 * Deferred to the droplet's end, with the water of each step recomputed by
 * the same products as in flight (so the sums are the same bits): a store
 * to the flow layer in every step stalls the height loads after it when
 * the two arrays share page offsets (4K aliasing), which caller-allocated
 * layers of one size usually do. */
void er_lague_flush_flow(const er_dctx *c, const er_lague_state *s)
{
    if (!c->flow)
        return;
    if (c->sink) {
        er_snap_flow(c, s->trail, s->it, s->water0);
        return;
    }
    float water = s->water0;
    for (int k = 0; k < s->it; k++) {
        c->flow[s->trail[k]] += water;
        water *= c->keep_water;
    }
}

/* Ends a droplet on the map: the sediment stays, spread by the brush
 * around the node nearest its last valid position (a bilinear drop there
 * would leave a spike at every droplet's end). */
void er_lague_end(const er_dctx *c, er_lague_state *s, er_dacc *acc)
{
    if (s->sed > 0) {
        int kx = (int)s->lx, ky = (int)s->ly;
        float laid = er_brush_apply(c, s->bx + kx + (s->lx - (float)kx >= 0.5f),
                                    s->by + ky + (s->ly - (float)ky >= 0.5f), -s->sed);
        er_end_load(s->sed, laid, &acc->deposited, &acc->left_map);
        s->sed = 0;
    }
    er_lague_flush_flow(c, s);
}

/* v in [bias, bias + 1) as a float with the same floor: rounding to float
 * may carry a fraction just below 1 up to bias + 1, which would move the
 * droplet onto the next node (possibly off the map). */
static float local_start(double v, int bias)
{
    float f = (float)v;
    return f < (float)(bias + 1) ? f : nextafterf((float)(bias + 1), 0.0f);
}

void er_lague_begin(const er_dctx *c, er_lague_state *s, double x, double y, size_t *trail)
{
    /* Positions are kept as floats relative to a base node lifetime + 2
     * cells below and left of the start: small values (full float
     * precision on any map size) that stay positive for the whole flight
     * (the reach check of er_lague_look_move), so (int) is floor. */
    int bias = c->lifetime + 2;
    s->bx = (int)x - bias;
    s->by = (int)y - bias;
    s->lx = s->lx0 = local_start(x - s->bx, bias);
    s->ly = s->ly0 = local_start(y - s->by, bias);
    s->dx = s->dy = 0;
    s->speed = c->init_speed;
    s->water = s->water0 = er_start_water(c, x, y);
    s->sed = 0;
    s->it = 0;
    s->trail = trail;
}

/* The look's three parts in turn; 1 when the droplet has ended. */
ER_HOT_INLINE int lague_look(const er_dctx *c, er_lague_state *s, er_dacc *acc, er_lague_look *k)
{
    return er_lague_look_pos(c, s, acc, k) || er_lague_look_dir(c, s, acc, k) ||
           er_lague_look_move(c, s, acc, k);
}

/* The snapshot schedule's count pass (sink.c) for one
 * step: counts the taps the main pass may take from or lay on, and
 * returns the load carried on, the most the main pass's can be.  The main
 * pass erodes only where dh <= 0, each tap giving at most what it gives
 * for the amount with no load (the largest); so with every such step's
 * takes added and nothing laid, this load bounds the main pass's
 * (rounding is monotone and the sums run in the same order), and where it
 * is at most cap, or 0 on an uphill step, the main pass cannot deposit. */
float er_lague_count(const er_dctx *c, float sed, const er_lague_look *k)
{
    if ((k->dh > 0 && sed > 0) || sed > k->cap)
        er_snap_count4(c, k->i00);
    if (!(k->dh > 0)) {
        float amount = er_minf(k->cap * c->erode_speed, -k->dh * c->area_k);
        if (amount > 0)
            sed += er_brush_erode_hot(c, k->cx, k->cy, amount, k->stop);
    }
    return sed;
}

int er_lague_step(const er_dctx *c, er_lague_state *s, er_dacc *acc)
{
    er_lague_look k;
    if (lague_look(c, s, acc, &k))
        return 1;
    er_lague_apply(c, s, acc, &k);
    return 0;
}

