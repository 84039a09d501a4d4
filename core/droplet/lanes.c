/*
 * The blocks schedule (blocks.h) on the CPU: per batch, the four
 * colours in turn, each colour's blocks in parallel (blocks.h), and on
 * each thread several Lague droplets in flight at once, one a lane, their
 * steps interleaved phase by phase.
 */
#include <stdlib.h>
#include <string.h>

#include "droplet_impl.h"
#include "../parallel.h"

/* One batch, bucketed by block (see er_blocking_bucket). */
typedef struct batch_view {
    const double *sx, *sy;    /* [cells] start positions by batch index */
    const int *ok;            /* 1 = the droplet found a valid start */
    const int *order, *start; /* droplets of block k: order[start[k] .. start[k+1]) */
    const int *colour_blocks; /* non-empty blocks by colour */
    er_dacc *bacc;            /* per-block sums, written by the block's runner */
} batch_view;

/* Droplets in flight per thread.  A droplet step is one long chain of
 * dependent operations (read heights, turn, move, read, erode, and the
 * next step reads what this one wrote), so one droplet leaves most of a
 * core idle; stepping droplets of LANES different blocks in turn lets the
 * core overlap their chains.  Blocks of one colour share no cell, so the
 * interleaving changes no result.  The step runs in phases, each for
 * every lane before the next (run_lanes): a whole step of each lane in
 * turn puts the others' chains beyond the reach of the core's
 * out-of-order window.  Of two to eight lanes, four ran the most droplets
 * a CPU second (three about as many). */
#define LANES 4

typedef struct lane {
    size_t *trail;            /* this lane's trail scratch */
    int block;                /* -1 = idle */
    int j;                    /* position in the block's droplet list */
    er_lague_state st;
    er_dacc acc;
} lane;

/* The next unclaimed block of the colour, by index into colour_blocks. */
static int grab_block(int *next)
{
    int k;
#ifdef _OPENMP
    ER_PRAGMA(omp atomic capture)
#endif
    k = (*next)++;
    return k;
}

/* Fetches the start of the lane's next droplet while this one flies: the
 * batch arrays are indexed by droplet, which the block order visits at
 * random, so each start would be a cache miss.  Always inlined: GCC deems
 * a function of prefetches alone const and drops its calls. */
ER_HOT_INLINE void lane_prefetch(const batch_view *bv, const lane *ln)
{
    if (ln->j < bv->start[ln->block + 1]) {
        int i = bv->order[ln->j];
        __builtin_prefetch(bv->ok + i);
        __builtin_prefetch(bv->sx + i);
        __builtin_prefetch(bv->sy + i);
    }
}

/* Starts the lane's next droplet: the next one with a valid start in its
 * block, else the first of the next unclaimed block of this colour (storing
 * the finished block's sums).  Returns 0 when no block is left. */
static int lane_next(const er_dctx *c, const batch_view *bv, lane *ln, int *next, int k1)
{
    for (;;) {
        if (ln->block >= 0) {
            for (; ln->j < bv->start[ln->block + 1]; ln->j++) {
                int i = bv->order[ln->j];
                if (bv->ok[i]) {
                    er_lague_begin(c, &ln->st, bv->sx[i], bv->sy[i], ln->trail);
                    ln->j++;
                    lane_prefetch(bv, ln);
                    return 1;
                }
            }
            bv->bacc[ln->block] = ln->acc;
        }
        int k = grab_block(next);
        if (k >= k1) {
            ln->block = -1;
            return 0;
        }
        ln->block = bv->colour_blocks[k];
        ln->j = bv->start[ln->block];
        memset(&ln->acc, 0, sizeof ln->acc);
    }
}

/* A thread's share of a colour's blocks, LANES droplets in flight. */
ER_HOT_INLINE void run_lanes(const er_dctx *c, const batch_view *bv, size_t *trails, int *next,
                             int k1)
{
    lane ln[LANES];
    int active = 0;
    for (int l = 0; l < LANES; l++) {
        ln[l].trail = trails + ((size_t)er_thread_id() * LANES + (size_t)l) * (size_t)c->lifetime;
        ln[l].block = -1;
        active += lane_next(c, bv, &ln[l], next, k1);
    }
    while (active > 0) {
        /* Each phase of the step for every lane before the next phase
         * (the look's three parts, then the apply): the lanes' long
         * dependent chains (loads, sqrt, divide, the move, the loads
         * there) are independent, and side by side the core overlaps
         * them. */
        er_lague_look k[LANES];
        int ended[LANES];
        for (int l = 0; l < LANES; l++)
            ended[l] = ln[l].block >= 0 && er_lague_look_pos(c, &ln[l].st, &ln[l].acc, &k[l]);
        for (int l = 0; l < LANES; l++)
            if (ln[l].block >= 0 && !ended[l])
                ended[l] = er_lague_look_dir(c, &ln[l].st, &ln[l].acc, &k[l]);
        for (int l = 0; l < LANES; l++)
            if (ln[l].block >= 0 && !ended[l])
                ended[l] = er_lague_look_move(c, &ln[l].st, &ln[l].acc, &k[l]);
        for (int l = 0; l < LANES; l++)
            if (ln[l].block >= 0 && !ended[l])
                er_lague_apply(c, &ln[l].st, &ln[l].acc, &k[l]);
        for (int l = 0; l < LANES; l++)
            if (ended[l] && !lane_next(c, bv, &ln[l], next, k1))
                active--;
    }
}

static void run_lanes_base(const er_dctx *c, const batch_view *bv, size_t *trails, int *next,
                           int k1)
{
    run_lanes(c, bv, trails, next, k1);
}

/* The same code compiled for AVX-512 (the same values: no FMA under
 * -ffp-contract=off, no reassociation): 32 vector registers keep more of
 * the lanes' state out of the stack. */
#ifdef ER_DROPLET_AVX512
__attribute__((target("avx512f,avx512vl"))) static void
run_lanes_avx512(const er_dctx *c, const batch_view *bv, size_t *trails, int *next, int k1)
{
    run_lanes(c, bv, trails, next, k1);
}
#endif

/* Runs the blocks colour_blocks[k0 .. k1) of one colour in parallel, each
 * block's droplets in index order. */
static void run_colour(const er_dctx *c, const batch_view *bv, size_t *trails, int k0, int k1)
{
    int next = k0;
    if (c->variant != ER_DROPLET_LAGUE) {
        ER_OMP_FOR_DYNAMIC()
        for (int k = k0; k < k1; k++) {
            int block = bv->colour_blocks[k];
            er_dacc acc = {0};
            for (int j = bv->start[block]; j < bv->start[block + 1]; j++) {
                int i = bv->order[j];
                if (bv->ok[i])
                    er_particle_run(c, bv->sx[i], bv->sy[i], &acc);
            }
            bv->bacc[block] = acc;
        }
        return;
    }
    ER_OMP_PARALLEL(shared(next))
    {
#ifdef ER_DROPLET_AVX512
        if (c->avx512)
            run_lanes_avx512(c, bv, trails, &next, k1);
        else
#endif
            run_lanes_base(c, bv, trails, &next, k1);
    }
}

er_status er_droplet_blocked_new(er_droplet_sched *w, const er_droplet_setup *s, int size,
                                 int64_t batch, er_error *err)
{
    const er_dctx *c = &s->ctx;
    /* Per-thread lane scratch, allocated before any parallel region. */
    const size_t trails = (size_t)er_thread_count() * LANES *
                          (size_t)(c->lifetime > 0 ? c->lifetime : 1);
    return er_droplet_sched_new(w, c, size, batch, (size_t)er_droplet_max_blocks(c, size),
                                trails, err);
}

/*
 * The blocks schedule.  Per batch: start positions and block ids (pure
 * functions of (seed, id)), a stable counting sort by block, then the four
 * colours in turn, each colour's blocks in parallel and each block's
 * droplets in index order.  Every block sums into its own
 * accumulator; the batch adds them up in block order, so the budget is the
 * same for any thread count too.
 */
void er_droplet_blocked_batch(er_droplet_sched *w, const er_plan *plan,
                              const er_droplet_setup *s, int size, int64_t b, er_dacc *sum)
{
    const er_dctx *c = &s->ctx;
    er_droplet_batch *bt = &w->bt;
    int64_t lo;
    int n = er_droplet_batch_at(plan, b, &lo);
    er_droplet_batch_draw(c, plan->p.seed, size, b, lo, n, bt);
    int nt = er_blocking_count(&bt->bl);
    memset(w->acc, 0, (size_t)nt * sizeof *w->acc);

    batch_view bv = {bt->sx, bt->sy, bt->ok, bt->order, bt->start, bt->colour_blocks, w->acc};
    for (int col = 0; col < 4; col++)
        run_colour(c, &bv, w->trails, bt->colour_start[col], bt->colour_start[col + 1]);
    for (int k = 0; k < nt; k++)
        er_dacc_add(sum, &w->acc[k]);
    sum->water += er_droplet_batch_water(c, bt);
}
