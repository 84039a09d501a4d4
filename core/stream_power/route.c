/*
 * Routing the water of one step (sp_internal.h er_sp_route).
 *
 * 1. Receivers: each free cell sends its water to the neighbour of the
 *    steepest descent (D8: slope = drop / distance, over the 8
 *    neighbours that are not nodata; a tie goes to the first in
 *    row-major order; with stream_power.routing "rho8" or "random" the
 *    distances are drawn per cell, below).  Base-level cells and nodata
 *    send none.  A free cell with no lower neighbour is a pit.  Each cell
 *    also knows which neighbours send it their water (a bit each).
 * 2. Closed basins: the cells whose paths end in one pit (breadth first
 *    up from it); every other cell drains to base level (basin 0).
 * 3. Depressions (Cordonnier, Bovy and Braun 2019, "A versatile, linear
 *    complexity algorithm for flow routing in topographies with
 *    depressions"): the basins form a graph whose edges are the passes
 *    between neighbouring cells of two basins, weighted by the pass height
 *    max(z_a, z_b) (of equal ones the pass whose lower cell is lowest: the
 *    water goes over the sill towards the lowest cell beyond it); its
 *    minimum spanning tree (Kruskal's algorithm) rooted
 *    at basin 0 gives each closed basin the pass its water spills over,
 *    and the highest pass on the tree path to the root is the level of its
 *    lake (what a priority-flood fill would give).  The path from the
 *    pass cell x down to the pit is reversed and x sends its water across
 *    the pass ("carving"), so every cell drains to base level and the
 *    stream-power law cuts the sill down.
 * 4. The stack: each base-level cell in cell order, followed by the cells
 *    that drain to it, breadth first up the receivers, so that every
 *    receiver comes before its donors; and the drainage area, summed down
 *    the reversed stack.
 * Every step runs on all threads but Kruskal's union-find and the
 * per-basin bookkeeping (O(basins)); each writes each cell from one
 * thread, the stack's blocks hold the cells in the order of the
 * sequential traversal whichever thread wrote them, and the passes are
 * found in a fixed order and sorted stably: the routing is the same for
 * any thread count.  Cost O(n): the passes out of closed basins
 * are radix-sorted (many on the first steps over noise, few once its pits
 * have drained; every cell of a flat is its own basin, though).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../parallel.h"
#include "../rng.h"
#include "sp_internal.h"

const int er_sp_dx[8] = {-1, 0, 1, -1, 1, -1, 0, 1};
const int er_sp_dy[8] = {-1, -1, -1, 0, 0, 1, 1, 1};

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

/* Whether neighbour k of cell (x, y) lies on the w x h map. */
static inline int on_map(int x, int y, int k, int w, int h)
{
    const int nx = x + er_sp_dx[k], ny = y + er_sp_dy[k];
    return nx >= 0 && nx < w && ny >= 0 && ny < h;
}

/* The direction of each free cell's steepest descent (one writer per
 * cell); the pits of each row in rows[y] and its roots (pits and
 * base-level cells) in rows[h + y].  Cells away from the map's edge and
 * from nodata (all of them on most maps) take the branch-free path. */
static void receivers(er_sp_sim *s, double *rows)
{
    const int w = s->w, h = s->h, rho8 = s->routing == ER_SP_ROUTE_RHO8;
    const double inv0[8] = {1.0 / s->dd, 1.0 / s->dy, 1.0 / s->dd, 1.0 / s->dx,
                            1.0 / s->dx, 1.0 / s->dd, 1.0 / s->dy, 1.0 / s->dd};
    /* Routing off the grid: draws fixed per cell for the run (a property
     * of the place, like its rock), so that a channel keeps the bends its
     * cells' draws give it; redrawn each step they average out and the
     * channels cut along the mean gradient again.  rho8 (Fairfield and
     * Leymarie 1991): the diagonal distance d_diag (2 - rho) / sqrt 2, rho
     * uniform in [0, 1).  random: each of the 8 slopes times 1 + a u_k, u_k
     * uniform in [-1, 1] from the 8 bytes of one draw, a the spread; rho8
     * still prefers the 4 cardinal directions on a ramp between two of
     * them and leaves runs of one. */
    const double diag = s->dd / sqrt(2.0), spread = s->spread;
    const int draw = s->routing != ER_SP_ROUTE_D8;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        int64_t pits = 0, base = 0;
        const int inner = y > 0 && y < h - 1;
        double inv[8];
        memcpy(inv, inv0, sizeof inv);
        for (int x = 0; x < w; x++) {
            const int64_t i = (int64_t)y * w + x;
            uint8_t r = ER_SP_NONE;
            if (s->kind[i] == ER_SP_FREE) {
                const double zi = s->z[i];
                double best = 0.0;
                if (draw) {
                    uint64_t u = er_rng_u64(s->seed, ER_STREAM_SP_ROUTING, (uint64_t)i);
                    if (rho8) {
                        const double rho = (double)(u >> 11) * 0x1.0p-53;
                        inv[0] = inv[2] = inv[5] = inv[7] = 1.0 / (diag * (2.0 - rho));
                    } else {
                        for (int k = 0; k < 8; k++, u >>= 8)
                            inv[k] = inv0[k] * (1.0 + spread * ((double)(u & 255) / 127.5 - 1.0));
                    }
                }
                if (inner && x > 0 && x < w - 1 && !s->walls) {
                    for (int k = 0; k < 8; k++) {
                        const double sl = (zi - s->z[i + s->off[k]]) * inv[k];
                        const int better = sl > best;
                        best = better ? sl : best;
                        r = better ? (uint8_t)k : r;
                    }
                } else {
                    for (int k = 0; k < 8; k++) {
                        if (!on_map(x, y, k, w, h))
                            continue;
                        const int64_t j = i + s->off[k];
                        const double sl = (zi - s->z[j]) * inv[k];
                        if (sl > best && s->kind[j] != ER_SP_WALL) {
                            best = sl;
                            r = (uint8_t)k;
                        }
                    }
                }
                pits += r == ER_SP_NONE;
            }
            base += s->kind[i] == ER_SP_BASE;
            s->rdir[i] = r;
            s->lake[i] = 0; /* carve's marks until lakes() */
        }
        rows[y] = (double)pits;
        rows[h + y] = (double)(pits + base);
    }
}

/* Which neighbours send each cell their water: bit k for neighbour k
 * (neighbour k sends here when its direction is the opposite, 7 - k). */
static void donors(er_sp_sim *s)
{
    const int w = s->w, h = s->h;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        const int inner = y > 0 && y < h - 1;
        for (int x = 0; x < w; x++) {
            const int64_t i = (int64_t)y * w + x;
            unsigned m = 0;
            if (inner && x > 0 && x < w - 1) {
                for (int k = 0; k < 8; k++)
                    m |= (unsigned)(s->rdir[i + s->off[k]] == 7 - k) << k;
            } else {
                for (int k = 0; k < 8; k++)
                    if (on_map(x, y, k, w, h))
                        m |= (unsigned)(s->rdir[i + s->off[k]] == 7 - k) << k;
            }
            s->dmask[i] = (uint8_t)(s->kind[i] == ER_SP_WALL ? 0u : m);
        }
    }
}

/* Appends to out[*top] the cells upstream of the cells out[from..*top),
 * breadth first through the donor bits, and sets their basin to b.
 * Returns 0, the cells beyond out[end] unwritten, when they would not fit
 * before out[end]. */
static int upstream(er_sp_sim *s, int32_t *out, int64_t from, int64_t *top, int64_t end,
                    int32_t b)
{
    int64_t t = *top;
    for (int64_t k = from; k < t; k++) {
        const int32_t c = out[k];
        unsigned m = s->dmask[c];
        if (t + 8 > end && t + __builtin_popcount(m) > end)
            return 0;
        while (m) {
            const int d = __builtin_ctz(m);
            m &= m - 1;
            const int32_t j = (int32_t)(c + s->off[d]);
            out[t++] = j;
            s->basin[j] = b;
        }
    }
    *top = t;
    return 1;
}

/* Roots of the traversal a chunk of work (forest): enough chunks for the
 * threads to balance blocks of very different sizes, few enough to add
 * up in no time. */
#define ER_SP_CHUNK 32

/* The blocks of roots [r0, r1) (r1 - r0 <= ER_SP_CHUNK; root_at[r]
 * holding each root's cell) written one after the other from out[at],
 * before out[end]: root_at[r] becomes where its block starts, counted
 * from out[at]; each basin's size.  Returns the cells written, or -1 (the
 * root_at[r] as they were) when they would not fit. */
static int64_t chunk_blocks(er_sp_sim *s, int64_t r0, int64_t r1, int32_t *out, int64_t at,
                            int64_t end)
{
    int64_t top = at, start[ER_SP_CHUNK];
    for (int64_t r = r0; r < r1; r++) {
        const int32_t i = (int32_t)s->root_at[r], b = s->basin[i];
        const int64_t from = top;
        if (top >= end)
            return -1;
        start[r - r0] = from - at;
        out[top++] = i;
        if (!upstream(s, out, from, &top, end, b))
            return -1;
        if (b)
            s->basins[b].ns = top - from;
    }
    for (int64_t r = r0; r < r1; r++)
        s->root_at[r] = start[r - r0];
    return top - at;
}

/* The stack before the depressions are resolved: each root (a base-level
 * cell or a pit) in cell order, then its upstream cells breadth first, a
 * block each (root_at); the basins: 0 for a base-level root's block, 1,
 * 2, ... for each pit's.  rows: receivers()'s counts per row.
 * The roots are listed row by row in parallel (each row's first root and
 * basin from the counts); then chunks of ER_SP_CHUNK roots are traversed
 * by whichever thread is free, each thread writing its chunks one after
 * the other into its own part of a staging area (q, free until the
 * incision: 2 n int32 slots), and the chunks are copied into the stack
 * in chunk order.  A chunk that does not fit in its thread's part (blocks
 * of more than 2 n / threads cells) is traversed afterwards, in chunk
 * order, straight into the stack, as every chunk is on one thread.  Each
 * block holds the cells of the sequential traversal in its order,
 * whichever thread wrote it. */
static er_status forest(er_sp_sim *s, double *rows, er_error *err)
{
    const int w = s->w, h = s->h;
    int64_t nr = 0, nb = 1;
    for (int y = 0; y < h; y++) {
        const int64_t roots = (int64_t)rows[h + y], pits = (int64_t)rows[y];
        rows[h + y] = (double)nr; /* the row's first root and basin */
        rows[y] = (double)nb;
        nr += roots;
        nb += pits;
    }
    const int64_t nchunks = (nr + ER_SP_CHUNK - 1) / ER_SP_CHUNK;
    if (grow((void **)&s->root_at, &s->roots_cap, nr + 1, sizeof *s->root_at, err) ||
        grow((void **)&s->chunk_at, &s->chunks_cap, nchunks + 1, 2 * sizeof *s->chunk_at, err))
        return ER_ENOMEM;
    if (nr > s->rsum_cap) {
        void *q = realloc(s->rsum, (size_t)nr * 3 * sizeof *s->rsum), *q2 = NULL, *q3 = NULL,
             *q4 = NULL;
        if (q)
            s->rsum = q;
        if (q && (q2 = realloc(s->sched, (size_t)nr * sizeof *s->sched)))
            s->sched = q2;
        if (q2 && (q3 = realloc(s->walk_q, (size_t)nr * sizeof *s->walk_q)))
            s->walk_q = q3;
        if (q3 && (q4 = realloc(s->walk_pending, (size_t)nr * sizeof *s->walk_pending)))
            s->walk_pending = q4;
        if (!q || !q2 || !q3 || !q4)
            return er_fail(err, ER_ENOMEM, "stream_power: out of memory for %lld outlets",
                           (long long)nr);
        s->rsum_cap = nr;
    }
    s->nbasins = nb;
    s->nroots = nr;
    const int par = s->n >= ER_SP_PAR_CELLS;
    ER_OMP_FOR(if (par))
    for (int y = 0; y < h; y++) {
        int64_t r = (int64_t)rows[h + y];
        int32_t b = (int32_t)rows[y];
        for (int64_t i = (int64_t)y * w; i < (int64_t)(y + 1) * w; i++) {
            if (s->kind[i] == ER_SP_WALL || s->rdir[i] != ER_SP_NONE)
                continue;
            s->root_at[r++] = i;
            if (s->kind[i] == ER_SP_FREE) {
                s->basins[b].pit = (int32_t)i;
                s->basin[i] = b++;
            } else {
                s->basin[i] = 0;
            }
        }
    }
    /* chunk_at[2 c]: where chunk c lies in the staging area (-1: in the
     * stack already), [2 c + 1] its length, then where it goes */
    int64_t *ch = s->chunk_at;
    int32_t *stage = (int32_t *)(void *)s->q;
    const int threads = s->threads;
    const int64_t part = 2 * s->n / threads;
    for (int64_t c = 0; c < nchunks; c++)
        ch[2 * c + 1] = -1;
    if (threads > 1 && par) {
        ER_OMP_PARALLEL()
        {
            const int t = er_thread_id();
            const int64_t at0 = t < threads ? t * part : 0, end = t < threads ? at0 + part : 0;
            int64_t at = at0;
            ER_OMP_FOR_INNER_DYNAMIC()
            for (int64_t c = 0; c < nchunks; c++) {
                const int64_t r0 = c * ER_SP_CHUNK;
                const int64_t len = at < end ? chunk_blocks(s, r0, r0 + ER_SP_CHUNK < nr ?
                                                            r0 + ER_SP_CHUNK : nr, stage, at, end)
                                             : -1;
                if (len >= 0) {
                    ch[2 * c] = at;
                    ch[2 * c + 1] = len;
                    at += len;
                }
            }
        }
    }
    int64_t top = 0;
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t r0 = c * ER_SP_CHUNK, r1 = r0 + ER_SP_CHUNK < nr ? r0 + ER_SP_CHUNK : nr;
        if (ch[2 * c + 1] < 0) {
            ch[2 * c] = -1;
            ch[2 * c + 1] = chunk_blocks(s, r0, r1, s->stack, top, s->n);
        }
        const int64_t len = ch[2 * c + 1];
        ch[2 * c + 1] = top;
        top += len;
    }
    ch[2 * nchunks + 1] = top;
    s->root_at[nr] = top;
    s->nstack = top;
    ER_OMP_FOR_DYNAMIC(if (par))
    for (int64_t c = 0; c < nchunks; c++) {
        const int64_t r0 = c * ER_SP_CHUNK, r1 = r0 + ER_SP_CHUNK < nr ? r0 + ER_SP_CHUNK : nr;
        const int64_t to = ch[2 * c + 1];
        if (ch[2 * c] >= 0)
            memcpy(s->stack + to, stage + ch[2 * c], (size_t)(ch[2 * c + 3] - to) * sizeof *stage);
        for (int64_t r = r0; r < r1; r++) {
            s->root_at[r] += to;
            const int32_t b = s->basin[s->stack[s->root_at[r]]];
            if (b) {
                s->basins[b].s0 = s->root_at[r];
                s->basins[b].block = (int32_t)r;
            }
        }
    }
    return ER_OK;
}

/* An unsigned key that orders as the double does (no NaN here). */
static inline uint64_t order_key(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u >> 63 ? ~u : u | UINT64_C(0x8000000000000000);
}

/* The byte of pass e's key that LSD pass `pass` sorts by: the lower
 * height's 8 bytes first, then the pass height's. */
static inline unsigned key_byte(const er_sp_edge *e, int pass)
{
    return (unsigned)(order_key(pass >= 8 ? e->w : e->lo) >> ((pass % 8) * 8)) & 0xffu;
}

/* Sorts a[0, n) by key_byte, passes 0..15 (the lower height's bytes
 * first, then the pass height's), stably, with b[0, n) as the other
 * buffer and c[256] for the counts: LSD radix sort a byte at a time,
 * skipping the bytes every key shares; the result in a.  Returns 1 when
 * it used b. */
static int radix_run(er_sp_edge *a, er_sp_edge *b, int64_t n, int64_t *c)
{
    er_sp_edge *const a0 = a;
    int scattered = 0;
    for (int pass = 0; pass < 16; pass++) {
        memset(c, 0, 256 * sizeof *c);
        for (int64_t k = 0; k < n; k++)
            c[key_byte(&a[k], pass)]++;
        if (c[key_byte(&a[0], pass)] == n)
            continue;
        int64_t at = 0;
        for (int d = 0; d < 256; d++) {
            const int64_t m = c[d];
            c[d] = at;
            at += m;
        }
        for (int64_t k = 0; k < n; k++)
            b[c[key_byte(&a[k], pass)]++] = a[k];
        er_sp_edge *t = a;
        a = b;
        b = t;
        scattered = 1;
    }
    if (a != a0)
        memcpy(a0, a, (size_t)n * sizeof *a);
    return scattered;
}

/* 1 when pass e sorts before pass f: by pass height, then lower height,
 * as the radix sort's keys order them. */
static inline int pass_before(const er_sp_edge *e, const er_sp_edge *f)
{
    const uint64_t ew = order_key(e->w), fw = order_key(f->w);
    return ew < fw || (ew == fw && order_key(e->lo) < order_key(f->lo));
}

/* Merges the sorted runs x[0, nx) and y[0, ny) into out, stably (a pass
 * of x before an equal one of y). */
static void merge_runs(const er_sp_edge *x, int64_t nx, const er_sp_edge *y, int64_t ny,
                       er_sp_edge *out)
{
    int64_t i = 0, j = 0, k = 0;
    while (i < nx && j < ny)
        out[k++] = pass_before(&y[j], &x[i]) ? y[j++] : x[i++];
    memcpy(out + k, x + i, (size_t)(nx - i) * sizeof *out);
    memcpy(out + k + nx - i, y + j, (size_t)(ny - j) * sizeof *out);
}

/* Sorts the passes by height, then by the lower of their two cells (a
 * lake spills over its lowest pass, towards the lowest cell beyond it),
 * stably (passes equal in both keep the order they were found in, itself
 * fixed).  O(e).  The passes cut into `parts` runs in order, one a
 * thread, each radix-sorted alone (radix_run), then merged two by two
 * (merge_runs), neighbouring runs, the earlier one first on ties: a
 * stable sort has one result, so the order is the same for any number
 * of parts.  One parallel region a round, not two a byte as a radix
 * pass over all the passes on every thread would take. */
static void sort_passes(er_sp_sim *s)
{
    er_sp_edge *a = s->edges, *b = s->edges_tmp;
    const int64_t n = s->nedges;
    /* a run of at least 16384 passes a thread: less costs more in the
     * threads' start than it saves */
    int64_t parts = n / 16384;
    parts = parts < 1 ? 1 : parts > s->threads ? s->threads : parts;
    if (parts > 64)
        parts = 64;
    int used[64]; /* 1: run p's sort used the other buffer */
    ER_OMP_FOR(if (parts > 1))
    for (int64_t p = 0; p < parts; p++) {
        const int64_t k0 = n * p / parts, k1 = n * (p + 1) / parts;
        used[p] = radix_run(a + k0, b + k0, k1 - k0, s->radix + 256 * p);
    }
    /* runs already in order (a flat's passes, all equal, need no sort
     * and leave the other buffer untouched: sp.c routing_bytes) */
    int64_t merge = 1;
    for (int64_t p = 1; p < parts; p++)
        if (pass_before(&a[n * p / parts], &a[n * p / parts - 1]))
            merge = parts;
    for (int64_t p = 0; p < parts; p++)
        s->sorted |= used[p];
    s->sorted |= merge > 1;
    er_sp_edge *src = a, *dst = b;
    for (int64_t width = 1; width < merge; width *= 2) {
        ER_OMP_FOR(if (parts > 2 * width))
        for (int64_t p = 0; p < parts; p += 2 * width) {
            const int64_t k0 = n * p / parts;
            const int64_t q = p + width < parts ? p + width : parts;
            const int64_t r = p + 2 * width < parts ? p + 2 * width : parts;
            const int64_t k1 = n * q / parts, k2 = n * r / parts;
            merge_runs(src + k0, k1 - k0, src + k1, k2 - k1, dst + k0);
        }
        er_sp_edge *t = src;
        src = dst;
        dst = t;
    }
    s->edges = src;
    s->edges_tmp = dst;
}

/* The passes found in row y: each pair of neighbouring valid cells in two
 * different basins (then one of them is closed), from the cell before the
 * other in row-major order, in that order, less those that cannot be the
 * lowest of their pair of basins: of passes found one after the other
 * between the same two basins only the first in the sort's order
 * (sort_passes) is kept, which leaves Kruskal's choices as they were.  Written to out
 * unless NULL; returns their number. */
static int64_t row_passes(const er_sp_sim *s, int y, er_sp_edge *out)
{
    const int w = s->w, h = s->h;
    static const int fwd[4] = {4, 5, 6, 7}; /* E, SW, S, SE */
    const int inner = y < h - 1 && !s->walls;
    int64_t n = 0;
    int32_t pa = -1, pb = -1; /* the basins of the last pass kept */
    double pw = 0.0, plo = 0.0; /* and its heights */
    for (int x = 0; x < w; x++) {
        const int64_t i = (int64_t)y * w + x;
        const int32_t bi = s->basin[i];
        if (inner && x > 0 && x < w - 1) {
            const int64_t below = i + w;
            if (s->basin[i + 1] == bi && s->basin[below - 1] == bi && s->basin[below] == bi &&
                s->basin[below + 1] == bi)
                continue;
        } else if (s->kind[i] == ER_SP_WALL) {
            continue;
        }
        for (int f = 0; f < 4; f++) {
            const int k = fwd[f];
            if (!on_map(x, y, k, w, h))
                continue;
            const int64_t j = i + s->off[k];
            const int32_t bj = s->basin[j];
            if (bj == bi || s->kind[j] == ER_SP_WALL)
                continue;
            const double pass = fmax(s->z[i], s->z[j]), low = fmin(s->z[i], s->z[j]);
            const int32_t lo = bi < bj ? bi : bj, hi = bi < bj ? bj : bi;
            if (n > 0 && lo == pa && hi == pb) {
                if (!(pass < pw || (pass == pw && low < plo)))
                    continue;
                n--; /* a lower pass between the same basins replaces the last */
            }
            if (out) {
                out[n].w = pass;
                out[n].lo = low;
                out[n].a = (int32_t)i;
                out[n].b = (int32_t)j;
            }
            pa = lo;
            pb = hi;
            pw = pass;
            plo = low;
            n++;
        }
    }
    return n;
}

/* Every candidate pass, row by row, in row order: each row's passes are
 * counted (in parallel), the counts summed in order into each row's
 * offset, and each row writes its passes there (in parallel again).  The
 * passes lie in row order for any thread count, and no thread keeps a
 * list of its own: on a flat map, where every cell is a basin and finds
 * four passes, the lists were a third copy of the largest records a step
 * makes (erode-models(7) "Memory"). */
static er_status passes(er_sp_sim *s, er_error *err)
{
    const int h = s->h;
    int64_t *at = s->row_at;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++)
        at[y + 1] = row_passes(s, y, NULL);
    at[0] = 0;
    for (int y = 0; y < h; y++)
        at[y + 1] += at[y];
    const int64_t total = at[h];
    int64_t cap = s->edges_cap;
    if (grow((void **)&s->edges, &s->edges_cap, total, sizeof *s->edges, err) ||
        grow((void **)&s->edges_tmp, &cap, total, sizeof *s->edges, err))
        return ER_ENOMEM;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++)
        row_passes(s, y, s->edges + at[y]);
    s->nedges = total;
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
 * height and lower cell, those equal in both in the order found), oriented from basin 0 breadth
 * first; each closed basin's parent, pass and lake level.  A basin the
 * tree does not reach (none, while every group of valid cells holds a
 * base-level cell) keeps its pit as a sink: parent -1. */
static void spanning_tree(er_sp_sim *s)
{
    const int64_t nb = s->nbasins;
    if (s->nedges > 0)
        sort_passes(s);
    for (int64_t b = 0; b < nb; b++)
        s->uf[b] = (int32_t)b;
    /* each pass's two basins, gathered on all threads into the sort's
     * spare buffer, so that the serial loop below reads them in order
     * (halves its time on 1024^2 noise); not where no sort has touched
     * that buffer (a flat's), whose pages the plan does not count
     * (sp.c routing_bytes) */
    const int64_t ne = s->nedges;
    int32_t *pb = s->sorted ? (int32_t *)s->edges_tmp : NULL;
    if (pb) {
        ER_OMP_FOR(if (ne >= ER_SP_PAR_CELLS))
        for (int64_t k = 0; k < ne; k++) {
            pb[2 * k] = s->basin[s->edges[k].a];
            pb[2 * k + 1] = s->basin[s->edges[k].b];
        }
    }
    int64_t joined = 0, nt = 0;
    int32_t *te = s->order; /* the tree's edges, for the moment */
    for (int64_t k = 0; k < ne && joined < nb - 1; k++) {
        int32_t ra = find(s->uf, pb ? pb[2 * k] : s->basin[s->edges[k].a]);
        int32_t rb = find(s->uf, pb ? pb[2 * k + 1] : s->basin[s->edges[k].b]);
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
    for (int64_t b = 1; b < nb; b++) {
        s->basins[b].parent = -1;
        s->basins[b].level = -INFINITY;
        s->basins[b].depth = 0;
    }
    int32_t *ord = s->order;
    int64_t top = 1;
    ord[0] = 0;
    for (int64_t k = 0; k < top; k++) {
        const int32_t u = ord[k];
        for (int32_t j = s->tree_off[u]; j < s->tree_off[u + 1]; j++) {
            const int32_t v = s->tree[j];
            er_sp_basin *bv = &s->basins[v];
            if (v == 0 || bv->parent >= 0)
                continue;
            const er_sp_edge *e = &s->edges[s->tree_edge[j]];
            const int a_in_v = s->basin[e->a] == v;
            bv->parent = u;
            bv->x = a_in_v ? e->a : e->b;
            bv->y = a_in_v ? e->b : e->a;
            bv->level = u == 0 ? e->w : fmax(e->w, s->basins[u].level);
            bv->depth = s->basins[u].depth + 1;
            ord[top++] = v;
        }
    }
}

/* The direction from cell i to its neighbour j. */
static uint8_t dir_to(const er_sp_sim *s, int32_t i, int32_t j)
{
    const int dx = j % s->w - i % s->w, dy = j / s->w - i / s->w;
    return (uint8_t)((dy + 1) * 3 + dx + 1 - (dy > 0 || (dy == 0 && dx > 0)));
}

/* Reverses the path from each closed basin's pass cell x down to its pit
 * and sends x's water across the pass to y.  The basin's block of the
 * stack becomes the path from x to the pit, then its other cells in their
 * order: every receiver still comes before its donors (a cell off the
 * path drains to the path or to a cell before it, as it did).  The paths
 * and blocks lie in distinct basins, so no cell is on two: the basins run
 * in parallel (runs of neighbouring basins a thread), each writing only
 * its own cells, its block and the same stretch of the scratch (bcells). */
static void carve(er_sp_sim *s)
{
    uint8_t *mark = s->lake; /* cleared by receivers(), free until lakes() */
    const int64_t nb = s->nbasins;
    ER_OMP_FOR_GUIDED(if (s->n >= ER_SP_PAR_CELLS))
    for (int64_t b = 1; b < nb; b++) {
        const er_sp_basin *bs = &s->basins[b];
        if (bs->parent < 0)
            continue;
        int32_t *tmp = s->bcells + bs->s0;
        int64_t m = 0;
        int32_t prev = bs->y, c = bs->x;
        for (;;) {
            const uint8_t old = s->rdir[c];
            s->rdir[c] = dir_to(s, c, prev);
            mark[c] = 1;
            tmp[m++] = c;
            if (old == ER_SP_NONE)
                break; /* the pit */
            prev = c;
            c = (int32_t)(c + s->off[old]);
        }
        int32_t *blk = s->stack + bs->s0;
        for (int64_t k = 0; k < bs->ns; k++)
            if (!mark[blk[k]])
                tmp[m++] = blk[k];
        for (int64_t k = 0; k < m; k++)
            mark[tmp[k]] = 0;
        memcpy(blk, tmp, (size_t)m * sizeof *blk);
    }
}

/* The order the blocks are solved in: level 0 the blocks of base-level
 * roots (and of pits left as sinks), level d the closed basins d passes
 * from base level, whose first cell drains into a block of level d - 1;
 * blocks of one level are independent of each other. */
static void schedule(er_sp_sim *s)
{
    int64_t *at = s->lvl_at;
    int32_t depth_max = 0;
    for (int64_t b = 1; b < s->nbasins; b++)
        if (s->basins[b].parent >= 0 && s->basins[b].depth > depth_max)
            depth_max = s->basins[b].depth;
    memset(at, 0, (size_t)(depth_max + 2) * sizeof *at);
    for (int64_t r = 0; r < s->nroots; r++) {
        const er_sp_basin *b = &s->basins[s->basin[s->stack[s->root_at[r]]]];
        at[(b->parent >= 0 ? b->depth : 0) + 1]++;
    }
    for (int32_t d = 0; d <= depth_max; d++)
        at[d + 1] += at[d];
    for (int64_t r = 0; r < s->nroots; r++) {
        const er_sp_basin *b = &s->basins[s->basin[s->stack[s->root_at[r]]]];
        s->sched[at[b->parent >= 0 ? b->depth : 0]++] = (int32_t)r;
    }
    for (int32_t d = depth_max + 1; d > 0; d--)
        at[d] = at[d - 1];
    at[0] = 0;
    s->nlevels = depth_max + 1;
    /* each closed basin's children in basin order (walk.c) */
    const int64_t nb = s->nbasins;
    memset(s->child_at, 0, (size_t)(nb + 1) * sizeof *s->child_at);
    for (int64_t b = 1; b < nb; b++)
        if (s->basins[b].parent > 0)
            s->child_at[s->basins[b].parent + 1]++;
    for (int64_t b = 0; b < nb; b++)
        s->child_at[b + 1] += s->child_at[b];
    for (int64_t b = 1; b < nb; b++) {
        const int32_t u = s->basins[b].parent;
        if (u > 0)
            s->child[s->child_at[u]++] = (int32_t)b;
    }
    for (int64_t b = nb; b > 0; b--)
        s->child_at[b] = s->child_at[b - 1];
    s->child_at[0] = 0;
}

static int lake_cmp(const void *pa, const void *pb)
{
    const er_sp_lake *a = pa, *b = pb;
    if (a->z != b->z)
        return a->z < b->z ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Marks the cells below their basin's lake level (only closed basins' cells
 * can be); with `lists`, lists them by basin, each basin's lowest first. */
static er_status lakes(er_sp_sim *s, int lists, er_error *err)
{
    const int64_t n = s->n;
    ER_OMP_FOR()
    for (int64_t i = 0; i < n; i++) {
        const int32_t b = s->kind[i] == ER_SP_FREE ? s->basin[i] : 0;
        s->lake[i] = (uint8_t)(b > 0 && s->z[i] < s->basins[b].level);
    }
    for (int64_t b = 0; b < s->nbasins; b++)
        s->basins[b].nlake = 0;
    s->nlakes = 0;
    if (!lists || s->nbasins == 1)
        return ER_OK;
    /* each basin's count, their places in basin order, then each basin's
     * list: one thread a basin, the same lists for any thread count */
    const int64_t nb = s->nbasins;
    ER_OMP_FOR_GUIDED(if (s->n >= ER_SP_PAR_CELLS))
    for (int64_t b = 1; b < nb; b++) {
        er_sp_basin *bs = &s->basins[b];
        int32_t c = 0;
        for (int64_t k = bs->s0; k < bs->s0 + bs->ns; k++)
            c += s->lake[s->stack[k]];
        bs->nlake = c;
    }
    int64_t total = 0;
    for (int64_t b = 1; b < nb; b++) {
        s->basins[b].lake0 = (int32_t)total;
        total += s->basins[b].nlake;
    }
    if (grow((void **)&s->lakes, &s->lakes_cap, total, sizeof *s->lakes, err))
        return ER_ENOMEM;
    s->nlakes = total;
    ER_OMP_FOR_GUIDED(if (s->n >= ER_SP_PAR_CELLS))
    for (int64_t b = 1; b < nb; b++) {
        er_sp_basin *bs = &s->basins[b];
        if (bs->nlake == 0)
            continue;
        int32_t at = bs->lake0;
        for (int64_t k = bs->s0; k < bs->s0 + bs->ns; k++) {
            const int32_t c = s->stack[k];
            if (s->lake[c]) {
                s->lakes[at].z = s->z[c];
                s->lakes[at++].i = c;
            }
        }
        if (bs->nlake > 1)
            qsort(s->lakes + bs->lake0, (size_t)bs->nlake, sizeof *s->lakes, lake_cmp);
    }
    return ER_OK;
}

/* Block r's pass up the stack: each cell's area added to its receiver's,
 * in reverse (walk.c: its donors' blocks are done and linked). */
static void acc_block(er_sp_sim *s, int64_t r, void *ctx)
{
    (void)ctx;
    for (int64_t k = s->root_at[r + 1] - 1; k > s->root_at[r]; k--) {
        const int32_t i = s->stack[k];
        s->acc[i + s->off[s->rdir[i]]] += s->acc[i];
    }
}

/* Block r's total (its first cell's area) added to the cell it drains
 * into (r is a closed basin's block). */
static void acc_link(er_sp_sim *s, int64_t r, void *ctx)
{
    (void)ctx;
    const int32_t c = s->stack[s->root_at[r]];
    s->acc[c + s->off[s->rdir[c]]] += s->acc[c];
}

/* Drainage area in cells (rain-weighted with a rain map), summed up each
 * block in reverse, a block's total added to the cell it drains into
 * (er_sp_walk_up): each cell's sum in one fixed order, whichever thread
 * takes the block. */
void er_sp_accumulate(er_sp_sim *s)
{
    const int64_t n = s->n;
    ER_OMP_FOR()
    for (int64_t i = 0; i < n; i++)
        s->acc[i] = s->kind[i] == ER_SP_WALL ? 0.0 : s->rain ? (double)s->rain[i] : 1.0;
    er_sp_walk_up(s, acc_block, acc_link, NULL);
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
    RENEW(child_at, k + 1)
    RENEW(child, k)
    RENEW(lvl_at, k + 2)
#undef RENEW
    s->basins_cap = c;
    return ER_OK;
oom:
    return er_fail(err, ER_ENOMEM, "stream_power: out of memory for %lld basins", (long long)c);
}

er_status er_sp_route_receivers(er_sp_sim *s, er_error *err)
{
    double *rows = s->sums;
    receivers(s, rows);
    int64_t pits = 0;
    for (int y = 0; y < s->h; y++)
        pits += (int64_t)rows[y];
    er_status st = basins_fit(s, pits + 1, err);
    if (st)
        return st;
    donors(s);
    s->basins[0] = (er_sp_basin){.level = -INFINITY};
    return forest(s, rows, err);
}

er_status er_sp_route_depressions(er_sp_sim *s, int lists, er_error *err)
{
    er_status st;
    if (s->nbasins > 1) {
        if ((st = passes(s, err)))
            return st;
        spanning_tree(s);
        carve(s);
    }
    schedule(s);
    return lakes(s, lists, err);
}

er_status er_sp_route(er_sp_sim *s, int lists, er_error *err)
{
    er_status st = er_sp_route_receivers(s, err);
    if (!st)
        st = er_sp_route_depressions(s, lists, err);
    if (!st)
        er_sp_accumulate(s);
    return st;
}

size_t er_sp_route_bytes(const er_sp_sim *s, int sorts)
{
    const size_t basin = sizeof *s->basins + sizeof *s->uf + sizeof *s->order +
                         sizeof *s->tree_off + 2 * sizeof *s->tree + 2 * sizeof *s->tree_edge +
                         sizeof *s->lvl_at + sizeof *s->child_at + sizeof *s->child;
    /* the roots' records, the block walks' queue and counts, the
     * traversal's chunks (2 int64 per ER_SP_CHUNK roots: at most 2 a root) */
    const size_t root = sizeof *s->root_at + 3 * sizeof *s->rsum + sizeof *s->sched +
                        sizeof *s->walk_q + sizeof *s->walk_pending + 2 * sizeof *s->chunk_at;
    const size_t copies = 1 + (size_t)(sorts || s->sorted);
    return (size_t)s->nbasins * basin + (size_t)s->nroots * root +
           (size_t)s->nedges * copies * sizeof *s->edges + (size_t)s->nlakes * sizeof *s->lakes;
}
