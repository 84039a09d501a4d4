/*
 * Routing the water of one step (sp_internal.h er_sp_route).
 *
 * 1. Receivers: each free cell sends its water to the neighbour of the
 *    steepest descent (D8: slope = drop / distance, over the 8
 *    neighbours that are not nodata; a tie goes to the first in
 *    row-major order).  Base-level cells and nodata send none.  A free
 *    cell with no lower neighbour is a pit.
 * 2. Basins: the cells whose paths end in one pit; basin 0 holds every
 *    cell whose path ends at base level.
 * 3. Depressions (Cordonnier, Bovy and Braun 2019, "A versatile, linear
 *    complexity algorithm for flow routing in topographies with
 *    depressions"): the basins form a graph whose edges are the passes
 *    between neighbouring cells of two basins, weighted by the pass height
 *    max(z_a, z_b); its minimum spanning tree (Kruskal's algorithm) rooted
 *    at basin 0 gives each closed basin the pass its water spills over,
 *    and the highest pass on the tree path to the root is the level of its
 *    lake (what a priority-flood fill would give).  The path from the
 *    pass cell x down to the pit is reversed and x sends its water across
 *    the pass ("carving"), so every cell drains to base level and the
 *    stream-power law cuts the sill down.
 * 4. The stack: base-level cells first, then breadth first up the
 *    receiver tree, so that every receiver comes before its donors; and
 *    the drainage area, summed down the reversed stack.
 * Every step is sequential or writes each cell from one thread, and the
 * passes are sorted by (height, cells), a total order: the routing is the
 * same for any thread count.  Cost O(n) plus O(e log e) for the e passes
 * between closed basins (few once the first steps have drained the
 * noise's pits; every cell of a flat is its own basin, though).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../parallel.h"
#include "sp_internal.h"

/* Grows *p (elements of `size` bytes, *cap of them) to hold `need`. */
static er_status grow(void **p, int64_t *cap, int64_t need, size_t size, er_error *err)
{
    if (need <= *cap)
        return ER_OK;
    int64_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * size);
    if (!q)
        return er_fail(err, ER_ENOMEM, "stream_power: out of memory for %lld routing records",
                       (long long)c);
    *p = q;
    *cap = c;
    return ER_OK;
}

/* The D8 receivers of every free cell (one writer per cell). */
static void receivers(er_sp_sim *s)
{
    const int w = s->w, h = s->h;
    const double inv[3] = {1.0 / s->dx, 1.0 / s->dy, 1.0 / s->dd};
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            const int64_t i = (int64_t)y * w + x;
            int32_t r = (int32_t)i;
            if (s->kind[i] == ER_SP_FREE) {
                const double zi = s->z[i];
                double best = 0.0;
                for (int ny = y - 1; ny <= y + 1; ny++) {
                    if (ny < 0 || ny >= h)
                        continue;
                    for (int nx = x - 1; nx <= x + 1; nx++) {
                        if (nx < 0 || nx >= w || (nx == x && ny == y))
                            continue;
                        const int64_t j = (int64_t)ny * w + nx;
                        if (s->kind[j] == ER_SP_WALL)
                            continue;
                        const double sl = (zi - s->z[j]) * inv[ny == y ? 0 : nx == x ? 1 : 2];
                        if (sl > best) {
                            best = sl;
                            r = (int32_t)j;
                        }
                    }
                }
            }
            s->rcv[i] = r;
        }
    }
}

/* Donor lists from the receivers, each in cell order, and the stack:
 * the roots (valid cells that are their own receiver) in cell order,
 * then breadth first through the donors.  With `label`, also the basins:
 * 0 for a base-level root's cells, 1, 2, ... for each pit in cell order. */
static void stack_of(er_sp_sim *s, int label)
{
    const int64_t n = s->n;
    int32_t *off = s->doff, *don = s->don, *st = s->stack;
    memset(off, 0, (size_t)(n + 1) * sizeof *off);
    for (int64_t i = 0; i < n; i++)
        if (s->rcv[i] != i)
            off[s->rcv[i] + 1]++;
    for (int64_t i = 0; i < n; i++)
        off[i + 1] += off[i];
    for (int64_t i = 0; i < n; i++) {
        int32_t r = s->rcv[i];
        if (r != i)
            don[off[r]++] = (int32_t)i;
    }
    for (int64_t i = n; i > 0; i--) /* back to the start of each list */
        off[i] = off[i - 1];
    off[0] = 0;
    int64_t top = 0;
    if (label)
        s->nbasins = 1;
    for (int64_t i = 0; i < n; i++) {
        if (s->kind[i] == ER_SP_WALL || s->rcv[i] != i)
            continue;
        st[top++] = (int32_t)i;
        if (label) {
            if (s->kind[i] == ER_SP_BASE) {
                s->basin[i] = 0;
            } else {
                s->basin[i] = (int32_t)s->nbasins;
                s->basins[s->nbasins].pit = (int32_t)i;
                s->nbasins++;
            }
        }
    }
    for (int64_t k = 0; k < top; k++) {
        const int32_t c = st[k];
        for (int32_t j = off[c]; j < off[c + 1]; j++) {
            st[top++] = don[j];
            if (label)
                s->basin[don[j]] = s->basin[c];
        }
    }
    s->nstack = top;
}

/* The number of pits (free cells that are their own receiver). */
static int64_t count_pits(const er_sp_sim *s)
{
    int64_t p = 0;
    for (int64_t i = 0; i < s->n; i++)
        p += s->kind[i] == ER_SP_FREE && s->rcv[i] == i;
    return p;
}

static int edge_cmp(const void *pa, const void *pb)
{
    const er_sp_edge *a = pa, *b = pb;
    if (a->w != b->w)
        return a->w < b->w ? -1 : 1;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* Every pair of neighbouring valid cells in two different basins, as a
 * candidate pass (each pair once: the cell before the other in row-major
 * order names it). */
static er_status passes(er_sp_sim *s, er_error *err)
{
    const int w = s->w, h = s->h;
    static const int off[4][2] = {{1, 0}, {-1, 1}, {0, 1}, {1, 1}};
    s->nedges = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int64_t i = (int64_t)y * w + x;
            if (s->kind[i] == ER_SP_WALL)
                continue;
            for (int k = 0; k < 4; k++) {
                const int nx = x + off[k][0], ny = y + off[k][1];
                if (nx < 0 || nx >= w || ny >= h)
                    continue;
                const int64_t j = (int64_t)ny * w + nx;
                if (s->kind[j] == ER_SP_WALL || s->basin[i] == s->basin[j])
                    continue;
                if (s->nedges == s->edges_cap &&
                    grow((void **)&s->edges, &s->edges_cap, s->nedges + 1, sizeof *s->edges, err))
                    return ER_ENOMEM;
                er_sp_edge *e = &s->edges[s->nedges++];
                e->w = fmax(s->z[i], s->z[j]);
                e->a = (int32_t)i;
                e->b = (int32_t)j;
            }
        }
    return ER_OK;
}

static int32_t find(int32_t *uf, int32_t b)
{
    while (uf[b] != b) {
        uf[b] = uf[uf[b]];
        b = uf[b];
    }
    return b;
}

/* Kruskal's minimum spanning tree over the basins (passes sorted by
 * height, then cells: a total order), oriented from basin 0 breadth
 * first; each closed basin's parent, pass and lake level.  A basin the
 * tree does not reach (none, while every group of valid cells holds a
 * base-level cell) keeps its pit as a sink: parent -1. */
static void spanning_tree(er_sp_sim *s)
{
    const int64_t nb = s->nbasins;
    qsort(s->edges, (size_t)s->nedges, sizeof *s->edges, edge_cmp);
    for (int64_t b = 0; b < nb; b++)
        s->uf[b] = (int32_t)b;
    int64_t joined = 0, nt = 0;
    int32_t *te = s->order; /* the tree's edges, for the moment */
    for (int64_t k = 0; k < s->nedges && joined < nb - 1; k++) {
        int32_t ra = find(s->uf, s->basin[s->edges[k].a]);
        int32_t rb = find(s->uf, s->basin[s->edges[k].b]);
        if (ra == rb)
            continue;
        if (ra < rb)
            s->uf[rb] = ra;
        else
            s->uf[ra] = rb;
        joined++;
        te[nt++] = (int32_t)k;
    }
    /* half-edges by basin */
    memset(s->tree_off, 0, (size_t)(nb + 1) * sizeof *s->tree_off);
    for (int64_t k = 0; k < nt; k++) {
        const er_sp_edge *e = &s->edges[te[k]];
        s->tree_off[s->basin[e->a] + 1]++;
        s->tree_off[s->basin[e->b] + 1]++;
    }
    for (int64_t b = 0; b < nb; b++)
        s->tree_off[b + 1] += s->tree_off[b];
    for (int64_t k = 0; k < nt; k++) {
        const er_sp_edge *e = &s->edges[te[k]];
        int32_t ba = s->basin[e->a], bb = s->basin[e->b];
        s->tree[s->tree_off[ba]] = bb;
        s->tree_edge[s->tree_off[ba]++] = te[k];
        s->tree[s->tree_off[bb]] = ba;
        s->tree_edge[s->tree_off[bb]++] = te[k];
    }
    for (int64_t b = nb; b > 0; b--)
        s->tree_off[b] = s->tree_off[b - 1];
    s->tree_off[0] = 0;
    /* breadth first from the base level */
    for (int64_t b = 0; b < nb; b++) {
        s->basins[b].parent = -1;
        s->basins[b].level = -INFINITY;
    }
    s->basins[0].parent = 0;
    int32_t *ord = s->order;
    int64_t top = 1;
    ord[0] = 0;
    for (int64_t k = 0; k < top; k++) {
        const int32_t u = ord[k];
        for (int32_t j = s->tree_off[u]; j < s->tree_off[u + 1]; j++) {
            const int32_t v = s->tree[j];
            er_sp_basin *bv = &s->basins[v];
            if (bv->parent >= 0)
                continue;
            const er_sp_edge *e = &s->edges[s->tree_edge[j]];
            const int a_in_v = s->basin[e->a] == v;
            bv->parent = u;
            bv->x = a_in_v ? e->a : e->b;
            bv->y = a_in_v ? e->b : e->a;
            bv->level = u == 0 ? e->w : fmax(e->w, s->basins[u].level);
            ord[top++] = v;
        }
    }
}

/* Reverses the path from each closed basin's pass cell x down to its pit
 * and sends x's water across the pass to y.  The paths lie in distinct
 * basins, so no cell is on two. */
static void carve(er_sp_sim *s)
{
    for (int64_t b = 1; b < s->nbasins; b++) {
        const er_sp_basin *bs = &s->basins[b];
        if (bs->parent < 0)
            continue;
        int32_t prev = bs->y, c = bs->x;
        for (;;) {
            const int32_t next = s->rcv[c];
            s->rcv[c] = prev;
            if (c == bs->pit)
                break;
            prev = c;
            c = next;
        }
    }
}

static int lake_cmp(const void *pa, const void *pb)
{
    const er_sp_lake *a = pa, *b = pb;
    if (a->z != b->z)
        return a->z < b->z ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Marks the cells below their basin's lake level; with `lists`, lists
 * them by basin, each basin's lowest first. */
static er_status lakes(er_sp_sim *s, int lists, er_error *err)
{
    const int64_t n = s->n, nb = s->nbasins;
    int64_t total = 0;
    for (int64_t b = 0; b < nb; b++)
        s->basins[b].nlake = 0;
    for (int64_t i = 0; i < n; i++) {
        const int32_t b = s->kind[i] == ER_SP_FREE ? s->basin[i] : 0;
        const int in = b > 0 && s->z[i] < s->basins[b].level;
        s->lake[i] = (uint8_t)in;
        if (in) {
            s->basins[b].nlake++;
            total++;
        }
    }
    if (!lists || total == 0)
        return ER_OK;
    if (grow((void **)&s->lakes, &s->lakes_cap, total, sizeof *s->lakes, err))
        return ER_ENOMEM;
    int32_t at = 0;
    for (int64_t b = 0; b < nb; b++) {
        s->basins[b].lake0 = at;
        at += s->basins[b].nlake;
        s->basins[b].nlake = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        if (!s->lake[i])
            continue;
        er_sp_basin *bs = &s->basins[s->basin[i]];
        er_sp_lake *l = &s->lakes[bs->lake0 + bs->nlake++];
        l->z = s->z[i];
        l->i = (int32_t)i;
    }
    for (int64_t b = 1; b < nb; b++)
        if (s->basins[b].nlake > 1)
            qsort(s->lakes + s->basins[b].lake0, (size_t)s->basins[b].nlake, sizeof *s->lakes,
                  lake_cmp);
    return ER_OK;
}

/* Drainage area in cells (rain-weighted with a rain map), summed down the
 * reversed stack: the same order, so the same sums, for any thread count. */
static void accumulate(er_sp_sim *s)
{
    const int64_t n = s->n;
    ER_OMP_FOR()
    for (int64_t i = 0; i < n; i++)
        s->acc[i] = s->kind[i] == ER_SP_WALL ? 0.0 : s->rain ? (double)s->rain[i] : 1.0;
    for (int64_t k = s->nstack - 1; k >= 0; k--) {
        const int32_t i = s->stack[k], r = s->rcv[i];
        if (r != i)
            s->acc[r] += s->acc[i];
    }
}

/* Room for nb basins in every per-basin array. */
static er_status basins_fit(er_sp_sim *s, int64_t nb, er_error *err)
{
    if (nb <= s->basins_cap)
        return ER_OK;
    int64_t c = s->basins_cap ? s->basins_cap : 1024;
    while (c < nb)
        c *= 2;
    const size_t k = (size_t)c;
    void *q;
#define RENEW(field, count)                                   \
    if (!(q = realloc(s->field, (count) * sizeof *s->field))) \
        goto oom;                                             \
    s->field = q;
    RENEW(basins, k)
    RENEW(uf, k)
    RENEW(order, k)
    RENEW(tree_off, k + 1)
    RENEW(tree, 2 * k)
    RENEW(tree_edge, 2 * k)
#undef RENEW
    s->basins_cap = c;
    return ER_OK;
oom:
    return er_fail(err, ER_ENOMEM, "stream_power: out of memory for %lld basins", (long long)c);
}

er_status er_sp_route(er_sp_sim *s, int lists, er_error *err)
{
    receivers(s);
    const int64_t pits = count_pits(s);
    er_status st = basins_fit(s, pits + 1, err);
    if (st)
        return st;
    stack_of(s, 1);
    s->basins[0].level = -INFINITY;
    s->basins[0].parent = 0;
    s->basins[0].nlake = 0;
    if (pits > 0) {
        if ((st = passes(s, err)))
            return st;
        spanning_tree(s);
        carve(s);
        stack_of(s, 0);
    }
    st = lakes(s, lists, err);
    if (st)
        return st;
    accumulate(s);
    return ER_OK;
}
