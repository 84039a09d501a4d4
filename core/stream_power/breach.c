/*
 * stream_power.depressions "breach" and "drain" (sp_internal.h
 * er_sp_breach, er_sp_drain): each closed basin's outlet cut down, at the
 * end of every step ("breach") or right after its routing and once more
 * after the last step ("drain", sp.c), so that its pit drains, instead of
 * the basin standing as a lake until its sill wears down or sediment
 * fills it.
 *
 * A lake that overflows cuts its outlet far faster than the land around
 * it changes.  With G = 0 nothing fills a closed basin of the input, and
 * under fast uplift on noise whole basins stay lakes, smooth and uncut,
 * for the whole run.  The rule is breaching (Lindsay 2016, "Efficient
 * hybrid breaching-filling sink removal methods for flow path enforcement
 * in digital elevation models"), taken along the path the routing already
 * resolved (route.c carve) rather than the least-cost one: from the pit
 * up its reversed path to the pass, across it, and down the receivers
 * beyond, each cell lowered to at most
 *     z_pit - g d,  g = stream_power.breach_grade,  d the path's length from the pit,
 * until a cell already that low.  Where the path meets a cell that cannot
 * go lower (base level, a pit left as a sink, a cell a mask holds) above
 * that line, the floor rises to it instead, z_end + g (d_end - d), and
 * what lies below it stays a (smaller) lake.  Basins go from base level
 * outwards (route.c's breadth-first order), so each path runs into
 * ground already breached; one thread, in that order, the same bytes for
 * any thread count.  The material cut leaves the map with the flood
 * (eroded and left at base level, on the wear layer).
 *
 * The grade: the default 1e-4 is enough that float32 heights of a 1 m
 * cell at 1000 m still fall along the floor and little enough to be flat
 * to any eye, and the rivers grade the floor in the next steps.  A floor
 * that stays (the last step's, with "drain") is better at a river's
 * gradient: a 0.5 m hollow in a river that falls 5e-4 is cut for
 * 0.5 / (5e-4 - g) metres, 1.25 km at 1e-4, and such near-level reaches
 * of the large rivers skew their slope-area profile.
 */
#include <math.h>
#include <string.h>

#include "sp_internal.h"

/* 1: cell i is on the map's edge. */
static int on_edge(const er_sp_sim *s, int32_t i)
{
    const int x = i % s->w, y = i / s->w;
    return x == 0 || y == 0 || x == s->w - 1 || y == s->h - 1;
}

/* Basin b's breach; returns the material cut [m * cells].  follow: the
 * edges follow the land behind them (base_level "follow"), so a path
 * reaching one cuts it too. */
static double breach_basin(er_sp_sim *s, const er_sp_basin *b, double grade, int follow)
{
    int32_t *path = s->bcells; /* free after route.c carve */
    const double z0 = s->z[b->pit];
    int64_t k = 0;
    double d = 0.0, end = -INFINITY, d_end = 0.0;
    for (int32_t c = b->pit;;) {
        const int32_t r = er_sp_rcv(s, c);
        if (r == c || k >= s->n)
            break; /* base level or a sink: stays as it is */
        d += er_sp_step(s, s->rdir[c]);
        if (s->z[r] <= z0 - grade * d)
            break; /* low enough: the ground beyond drains already */
        const int open = s->kind[r] == ER_SP_BASE && follow && on_edge(s, r);
        if ((s->kind[r] != ER_SP_FREE && !open) || (s->mask && !(s->mask[r] >= 1.0f))) {
            end = s->z[r]; /* a floor the path cannot cut below */
            d_end = d;
            break;
        }
        path[k++] = r;
        if (open)
            break; /* out of the map */
        c = r;
    }
    double cut = 0.0;
    d = 0.0;
    for (int64_t j = 0, c = b->pit; j < k; c = path[j++]) {
        const int32_t i = path[j];
        d += er_sp_step(s, s->rdir[c]); /* i is c's receiver */
        const double line = z0 - grade * d;
        const double floor = end + grade * (d_end - d);
        const double t = line > floor ? line : floor;
        if (s->z[i] > t) {
            const double dz = s->z[i] - t;
            s->z[i] = t;
            if (s->wear)
                s->wear[i] += (float)dz;
            cut += dz;
        }
    }
    return cut;
}

double er_sp_drain(er_sp_sim *s, double grade, int follow)
{
    const double cut = er_sp_breach(s, grade, follow);
    memset(s->lake, 0, (size_t)s->n * sizeof *s->lake);
    return cut;
}

double er_sp_breach(er_sp_sim *s, double grade, int follow)
{
    /* route.c's breadth-first order lists base level and the basins the
     * spanning tree reached, and nothing after them */
    int64_t reached = 1;
    for (int64_t b = 1; b < s->nbasins; b++)
        reached += s->basins[b].parent >= 0;
    double cut = 0.0;
    for (int64_t k = 1; k < reached; k++)
        cut += breach_basin(s, &s->basins[s->order[k]], grade, follow);
    return cut;
}
