/*
 * Walking the blocks of the stack in parallel (sp_internal.h
 * er_sp_walk_down, er_sp_walk_up), with no barrier between the levels.
 *
 * The blocks form a tree: a closed basin's block drains through its first
 * cell into its parent basin's block (route.c carve), or into a block of
 * level 0 (base-level roots, pits left as sinks) for the basins one pass
 * from base level.  Walking down (the incision: a cell needs its
 * receiver's new height), a block may start once the block it drains into
 * is done; walking up (the drainage area, the sediment: a cell needs all
 * its donors), once every block draining into it is done and their totals
 * have been added to the cells they drain into.
 * Each walk keeps a queue of the blocks ready to run: a block goes in
 * when what it depends on is done (down: the block it drains into; up:
 * the blocks draining into it; the blocks one pass from base level, down,
 * once every level-0 block is done, and the level-0 blocks, up, once every
 * closed basin is), and the threads take the blocks in the order they
 * went in.  No thread waits on a given block while others are ready
 * (the head of a queue by levels would make it wait on its parent or its
 * children); one waits only while nothing is ready.  Against a level at
 * a time (a barrier per level, over a hundred levels on noise) no thread
 * waits for a whole level either.
 * Determinism: each block runs on one thread in its own order, reading
 * only finished cells; walking up, a block's children's totals are added
 * by that block's thread, children in block order before its own pass,
 * and the basins one pass from base level add theirs in block order on
 * one thread once every closed basin is done: each cell's additions come
 * in the order a level at a time gave them, whatever thread did what.
 */
#include <sched.h>
#include <string.h>

#include "../parallel.h"
#include "sp_internal.h"

/* Puts entry r (a closed basin's block, or a run of level-0 blocks) at
 * the tail of the queue. */
static void push(er_sp_sim *s, int64_t *tail, int32_t r)
{
    const int64_t k = __atomic_fetch_add(tail, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&s->walk_q[k], r, __ATOMIC_RELEASE);
}

/* The entry at the head of the queue, once one is there; -1 when all
 * `total` entries have been taken.  Spins a little, then yields the core:
 * on a machine with more threads than cores the thread that will put the
 * block in may need it. */
static int64_t pop(er_sp_sim *s, int64_t *head, int64_t total)
{
    const int64_t k = __atomic_fetch_add(head, 1, __ATOMIC_RELAXED);
    if (k >= total)
        return -1;
    int32_t r;
    for (int i = 0; (r = __atomic_load_n(&s->walk_q[k], __ATOMIC_ACQUIRE)) == -1; i++)
        if (i >= 256)
            sched_yield();
    return r;
}

/* Level-0 blocks (mostly a base-level cell or a few) go through the queue
 * this many at a time: one claim for many blocks of no work. */
#define WALK_BASE_RUN 64

/* The level-0 blocks' runs, as the queue holds them (closed basins' blocks
 * are r >= 0; -1 is an empty slot). */
static inline int32_t base_run(int64_t c) { return (int32_t)(-2 - c); }

/* fn on the level-0 blocks of run c (a queue entry v < -1: c = -2 - v). */
static void run_base(er_sp_sim *s, int32_t v, int64_t n0, er_sp_block_fn fn, void *ctx)
{
    const int64_t l0 = (int64_t)(-2 - v) * WALK_BASE_RUN;
    const int64_t l1 = l0 + WALK_BASE_RUN < n0 ? l0 + WALK_BASE_RUN : n0;
    for (int64_t l = l0; l < l1; l++)
        fn(s, s->sched[l], ctx);
}

/* The closed basin whose block r is, 0 for a block of level 0 (a
 * base-level root's, or a pit's left as a sink). */
static inline int32_t closed_basin(const er_sp_sim *s, int64_t r)
{
    const int32_t b = s->basin[s->stack[s->root_at[r]]];
    return b > 0 && s->basins[b].parent >= 0 ? b : 0;
}

void er_sp_walk_down(er_sp_sim *s, er_sp_block_fn fn, void *ctx)
{
    const int64_t nsched = s->lvl_at[s->nlevels], n0 = s->lvl_at[1];
    const int64_t n1 = s->nlevels > 1 ? s->lvl_at[2] : n0; /* level 1: sched[n0, n1) */
    const int64_t runs = (n0 + WALK_BASE_RUN - 1) / WALK_BASE_RUN;
    const int64_t total = runs + nsched - n0;
    int64_t head = 0, tail = 0, runs_left = runs;
    if (total > 0) /* none on a map of nodata: walk_q may be NULL */
        memset(s->walk_q, 0xff, (size_t)total * sizeof *s->walk_q);
    for (int64_t c = 0; c < runs; c++)
        push(s, &tail, base_run(c));
    if (!runs)
        for (int64_t l = n0; l < n1; l++)
            push(s, &tail, s->sched[l]);
    ER_OMP_PARALLEL(if (s->n >= ER_SP_PAR_CELLS))
    {
        int64_t v;
        while ((v = pop(s, &head, total)) != -1) {
            if (v < -1) {
                run_base(s, (int32_t)v, n0, fn, ctx);
                if (__atomic_fetch_sub(&runs_left, 1, __ATOMIC_ACQ_REL) == 1)
                    for (int64_t l = n0; l < n1; l++)
                        push(s, &tail, s->sched[l]);
                continue;
            }
            fn(s, v, ctx);
            const int32_t b = closed_basin(s, v);
            for (int32_t c = s->child_at[b]; c < s->child_at[b + 1]; c++)
                push(s, &tail, s->basins[s->child[c]].block);
        }
    }
}

void er_sp_walk_up(er_sp_sim *s, er_sp_block_fn fn, er_sp_block_fn link, void *ctx)
{
    const int64_t nsched = s->lvl_at[s->nlevels], n0 = s->lvl_at[1];
    const int64_t n1 = s->nlevels > 1 ? s->lvl_at[2] : n0; /* level 1: sched[n0, n1) */
    const int64_t runs = (n0 + WALK_BASE_RUN - 1) / WALK_BASE_RUN;
    const int64_t total = runs + nsched - n0;
    int64_t head = 0, tail = 0, closed_left = nsched - n0;
    int32_t *left = s->walk_pending; /* per block: its children not yet done */
    if (total > 0) /* none on a map of nodata: walk_q may be NULL */
        memset(s->walk_q, 0xff, (size_t)total * sizeof *s->walk_q);
    for (int64_t l = n0; l < nsched; l++) {
        const int64_t r = s->sched[l];
        const int32_t b = closed_basin(s, r);
        left[r] = s->child_at[b + 1] - s->child_at[b];
        if (!left[r])
            push(s, &tail, (int32_t)r);
    }
    if (!closed_left)
        for (int64_t c = 0; c < runs; c++)
            push(s, &tail, base_run(c));
    ER_OMP_PARALLEL(if (s->n >= ER_SP_PAR_CELLS))
    {
        int64_t v;
        while ((v = pop(s, &head, total)) != -1) {
            if (v < -1) {
                run_base(s, (int32_t)v, n0, fn, ctx);
                continue;
            }
            const int32_t b = closed_basin(s, v);
            for (int32_t c = s->child_at[b]; c < s->child_at[b + 1]; c++)
                link(s, s->basins[s->child[c]].block, ctx);
            fn(s, v, ctx);
            const int32_t u = s->basins[b].parent;
            if (u > 0 && __atomic_fetch_sub(&left[s->basins[u].block], 1, __ATOMIC_ACQ_REL) == 1)
                push(s, &tail, s->basins[u].block);
            if (__atomic_fetch_sub(&closed_left, 1, __ATOMIC_ACQ_REL) == 1) {
                /* the last closed basin done: the level-1 blocks' totals,
                 * in block order, then the level-0 blocks */
                for (int64_t l = n0; l < n1; l++)
                    link(s, s->sched[l], ctx);
                for (int64_t c = 0; c < runs; c++)
                    push(s, &tail, base_run(c));
            }
        }
    }
}
