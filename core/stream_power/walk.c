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
 * The threads take the blocks in level order (route.c schedule) from a
 * shared counter, down or up, and wait, if they must, for the one block
 * (down) or the blocks (up) they depend on; those were taken before by a
 * thread that does not wait on a later one, so the walk always finishes.
 * Against a level at a time (a barrier per level, over a hundred levels
 * on noise) no thread waits for a whole level, only for what it reads.
 * Determinism: each block runs on one thread in its own order, reading
 * only finished cells; walking up, a block's children's totals are added
 * by that block's thread, children in block order before its own pass,
 * and the basins one pass from base level add theirs in block order on
 * one thread once every closed basin is done: each cell's additions come
 * in the order a level at a time gave them, whatever thread did what.
 */
#include <sched.h>

#include "../parallel.h"
#include "sp_internal.h"

/* Waits until *flag holds the walk's mark.  Spins a little, then yields
 * the core: on a machine with more threads than cores the thread waited
 * for may need it. */
static void wait_mark(const uint32_t *flag, uint32_t mark)
{
    for (int k = 0; __atomic_load_n(flag, __ATOMIC_ACQUIRE) != mark; k++)
        if (k >= 256)
            sched_yield();
}

/* The block of closed basin b. */
static inline int64_t block_of(const er_sp_sim *s, int32_t b)
{
    return s->basins[b].block;
}

/* A new mark for a walk: the flags of every block hold older ones. */
static uint32_t next_mark(er_sp_sim *s)
{
    if (++s->walk_mark == 0) { /* wrapped: clear the flags of 2^32 walks ago */
        for (int64_t r = 0; r < s->rsum_cap; r++)
            s->walk_done[r] = 0;
        s->walk_base = 0;
        s->walk_mark = 1;
    }
    return s->walk_mark;
}

void er_sp_walk_down(er_sp_sim *s, er_sp_block_fn fn, void *ctx)
{
    const int64_t nsched = s->lvl_at[s->nlevels], n0 = s->lvl_at[1];
    const uint32_t mark = next_mark(s);
    int64_t next = 0, base_done = 0;
    ER_OMP_PARALLEL(if (s->n >= ER_SP_PAR_CELLS))
    {
        for (;;) {
            const int64_t l = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
            if (l >= nsched)
                break;
            const int64_t r = s->sched[l];
            if (l >= n0) {
                const int32_t u = s->basins[s->basin[s->stack[s->root_at[r]]]].parent;
                if (u > 0) {
                    wait_mark(&s->walk_done[block_of(s, u)], mark);
                } else {
                    for (int k = 0; __atomic_load_n(&base_done, __ATOMIC_ACQUIRE) < n0;
                         k++)
                        if (k >= 256)
                            sched_yield();
                }
            }
            fn(s, r, ctx);
            if (l < n0)
                __atomic_fetch_add(&base_done, 1, __ATOMIC_RELEASE);
            else
                __atomic_store_n(&s->walk_done[r], mark, __ATOMIC_RELEASE);
        }
    }
}

void er_sp_walk_up(er_sp_sim *s, er_sp_block_fn fn, er_sp_block_fn link, void *ctx)
{
    const int64_t nsched = s->lvl_at[s->nlevels], n0 = s->lvl_at[1];
    const int64_t n1 = s->nlevels > 1 ? s->lvl_at[2] : n0; /* the level-1 blocks: [n0, n1) */
    const uint32_t mark = next_mark(s);
    int64_t next = 0, closed_left = nsched - n0;
    if (nsched == n0)
        s->walk_base = mark;
    ER_OMP_PARALLEL(if (s->n >= ER_SP_PAR_CELLS))
    {
        for (;;) {
            const int64_t k = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
            if (k >= nsched)
                break;
            const int64_t l = nsched - 1 - k, r = s->sched[l];
            if (l < n0) {
                wait_mark(&s->walk_base, mark);
                fn(s, r, ctx);
                continue;
            }
            const int32_t b = s->basin[s->stack[s->root_at[r]]];
            const int32_t c0 = s->child_at[b], c1 = s->child_at[b + 1];
            for (int32_t c = c0; c < c1; c++)
                wait_mark(&s->walk_done[block_of(s, s->child[c])], mark);
            for (int32_t c = c0; c < c1; c++)
                link(s, block_of(s, s->child[c]), ctx);
            fn(s, r, ctx);
            __atomic_store_n(&s->walk_done[r], mark, __ATOMIC_RELEASE);
            if (__atomic_fetch_sub(&closed_left, 1, __ATOMIC_ACQ_REL) == 1) {
                /* the last closed basin done: the level-1 blocks' totals,
                 * in block order */
                for (int64_t m = n0; m < n1; m++)
                    link(s, s->sched[m], ctx);
                __atomic_store_n(&s->walk_base, mark, __ATOMIC_RELEASE);
            }
        }
    }
}
