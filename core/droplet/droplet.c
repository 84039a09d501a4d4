/*
 * The droplet model's entry points (core/model.h, core/plan.h): its part
 * of the plan (er_droplet_plan: the keys at the map's cell size, the block
 * side, the droplet count, the height unit, the batch) and its checks,
 * and the CPU run's steps for the run driver (core/drive.h): a run set
 * up once (setup.c) whose boundaries are its batches, each run by the
 * plan's schedule: the blocks schedule (lanes.c), the snapshot schedule
 * (snapshot.c) or, on a world smaller than two blocks, the droplets in
 * index order.
 */
#include <math.h>

#include "droplet_impl.h"

/* Automatic batches hold this many droplets per block of the unshifted grid
 * (57,600 at 1024^2): enough that the four colour barriers of a batch cost
 * nothing even when another process takes a core for a time slice, few
 * enough that a default run still draws a dozen or more grid offsets.  The
 * order effects at block borders are invisible even with one batch (one
 * fixed grid; test no_block_pattern). */
#define BATCH_PER_BLOCK 256
#define BATCH_MIN 4096

/* A length of n reference cells in cells of r times the size: at least 1,
 * at most 2^62 (beyond every key's range, which the caller checks, and
 * within int64_t whatever r is). */
static int64_t cells_at(int64_t n, double r)
{
    double v = floor((double)n / r + 0.5);
    return v < 1 ? 1 : v < 0x1p62 ? (int64_t)v : INT64_C(1) << 62;
}

/* A per-step fraction x over a step r times as long. */
static double rate_at(double x, double r)
{
    return x >= 1 ? 1 : 1 - pow(1 - x, r);
}

void er_droplet_at_cell_size(er_droplet_params *d, double r, double *area_k)
{
    d->per_cell *= r * r;
    d->radius = cells_at(d->radius, r);
    d->lifetime = cells_at(d->lifetime, r);
    d->mt_max_distance = cells_at(d->mt_max_distance, r);
    d->capacity /= r * r * r;
    d->min_capacity /= r * r;
    d->erode_speed = rate_at(d->erode_speed, r);
    d->deposit_speed = rate_at(d->deposit_speed, r);
    d->evaporate_speed = rate_at(d->evaporate_speed, r);
    d->inertia = pow(d->inertia, r);
    d->mt_dt *= r;
    d->mt_density *= r;
    *area_k = 1 / (r * r);
}

/* How far (per axis, in cells) any cell a droplet reads or writes can be
 * from its start: Lague moves one cell a step for `lifetime` steps, the
 * brush reaches radius - 1 around the nearest node (+0.5) and a bilinear
 * read one node further; the particle reads a 3x3 stencil around cells at
 * most max_distance from its start cell and lays its load down through the
 * brush (radius - 1 around its last cell).  The +2 is that of the block
 * bound T >= 2 (reach + radius + 2), a cell of margin included (blocks.h). */
static int64_t droplet_reach(const er_droplet_params *d)
{
    if (d->variant == ER_DROPLET_MASS_TRANSFER)
        return d->mt_max_distance + 2 + 1 + (d->radius > 1 ? d->radius - 1 : 0);
    return d->lifetime + d->radius + 2;
}

/* The block side to use, or ER_EINVAL for one below the safe bound. */
static er_status block_side(const er_droplet_params *d, int64_t *out, er_error *err)
{
    int64_t safe = er_block_safe_size(droplet_reach(d));
    if (d->tile_size == 0) {
        *out = safe;
        return ER_OK;
    }
    if (d->tile_size < safe) {
        if (d->variant == ER_DROPLET_MASS_TRANSFER)
            return er_fail(err, ER_EINVAL,
                           "droplet.tile_size: %lld is below the safe bound %lld for "
                           "mass_transfer.max_distance %lld and radius %lld",
                           (long long)d->tile_size, (long long)safe,
                           (long long)d->mt_max_distance, (long long)d->radius);
        return er_fail(err, ER_EINVAL,
                       "droplet.tile_size: %lld is below the safe bound %lld for lifetime "
                       "%lld and radius %lld",
                       (long long)d->tile_size, (long long)safe, (long long)d->lifetime,
                       (long long)d->radius);
    }
    *out = d->tile_size;
    return ER_OK;
}

/* The snapshot schedule's automatic batch: one droplet per SNAP_CELLS
 * cells of the world, at least SNAP_MIN (not BATCH_MIN: on a small map
 * 4096 droplets would be a third of a droplet a cell reading one stale
 * snapshot, which erodes several times what the blocks schedule does).  A
 * droplet of the default recipe touches about 400 cells (30 steps, a
 * 13-tap brush), so each cell is read stale by about 400 / 64 = 6 droplets
 * of its batch, close to the blocks schedule's behaviour; and 4096^2 gets
 * 262,144 droplets a dispatch, the hundreds of thousands a large GPU needs
 * in flight. */
#define SNAP_CELLS 64
#define SNAP_MIN 64

static int64_t auto_batch(const er_droplet_params *d, int width, int height, int64_t size)
{
    if (d->batch_size > 0)
        return d->batch_size;
    if (d->schedule == ER_DROPLET_SNAPSHOT) {
        int64_t b = (int64_t)width * height / SNAP_CELLS;
        return b < SNAP_MIN ? SNAP_MIN : b;
    }
    int64_t blocks = ((width + size - 1) / size) * ((height + size - 1) / size);
    int64_t b = blocks * BATCH_PER_BLOCK;
    return b < BATCH_MIN ? BATCH_MIN : b;
}

/* droplet.reference_cell_size: the keys converted to this map's cells
 * (er_droplet_at_cell_size); ER_EINVAL when a length no longer fits its
 * key's range. */
static er_status at_map_cells(er_plan *plan, er_error *err)
{
    er_droplet_params *d = &plan->p.droplet;
    const double ref = d->reference_cell_size;
    /* Square cells in practice; the mean side for others. */
    const double cell = sqrt(plan->cell_x * plan->cell_y);
    plan->own.droplet.area_k = 1.0;
    /* At the reference itself the keys hold as written: 1 - (1 - x) is
     * not always x in floating point. */
    if (!(ref > 0) || cell == ref)
        return ER_OK;
    /* capacity is divided by r^3, per_cell multiplied by r^2: both must
     * stay finite numbers (per_cell's count is bounded in er_droplet_plan) */
    const double r = cell / ref;
    if (!isfinite(r * r * r) || !(r * r * r > 0))
        return er_fail(err, ER_EINVAL, "droplet.reference_cell_size: %g m against %g m "
                       "cells: the keys converted by their ratio would not be finite", ref, cell);
    er_droplet_at_cell_size(d, r, &plan->own.droplet.area_k);
    if (d->radius > 64 || d->lifetime > 100000 || d->mt_max_distance > 100000)
        return er_fail(err, ER_EINVAL,
                       "droplet.reference_cell_size: %g m makes radius %lld, lifetime %lld and "
                       "max_distance %lld cells of %g m; the limits are 64, 1e5 and 1e5",
                       ref, (long long)d->radius, (long long)d->lifetime,
                       (long long)d->mt_max_distance, cell);
    return ER_OK;
}

/* The snapshot schedule counts, per cell and batch, the taps that may take
 * from it and those that may lay on it in 32-bit integers (sink.c, and
 * the shader's buffers): a droplet's step touches a cell at most once with
 * its brush and once among its four nodes, its end once more, so a cell's
 * counts stay below batch * (lifetime + 1).  A batch_size past that is
 * refused (a count that wrapped would make a share 0, or one larger than
 * the room); the automatic size, one droplet per 64 cells, is held under
 * it on maps that large. */
static er_status snap_batch_fits(const er_droplet_params *d, int64_t *batch, er_error *err)
{
    const int64_t most = INT32_MAX / (d->lifetime + 1);
    if (*batch <= most)
        return ER_OK;
    if (d->batch_size == 0) {
        *batch = most;
        return ER_OK;
    }
    return er_fail(err, ER_EINVAL, "droplet.batch_size: %lld droplets a batch under the snapshot "
                   "schedule with lifetime %lld may count more taps at a cell than 32 bits hold; "
                   "at most %lld", (long long)*batch, (long long)d->lifetime, (long long)most);
}

/* droplet.count's limit: the most droplets a run may have, however they
 * are asked for (a count, or per_cell times the cells, times r^2 under
 * droplet.reference_cell_size). */
#define DROPLETS_MAX 1e12

/* per_cell (as converted) times `cells` as a count within DROPLETS_MAX,
 * else ER_EINVAL naming the key that made it larger. */
static er_status droplets_fit(const er_plan *plan, double cells, er_error *err)
{
    const er_droplet_params *d = &plan->p.droplet;
    const double want = d->per_cell * cells;
    if (d->count >= 0 || want <= DROPLETS_MAX)
        return ER_OK;
    const double ref = d->reference_cell_size, cell = sqrt(plan->cell_x * plan->cell_y);
    if (ref > 0 && cell != ref)
        return er_fail(err, ER_EINVAL, "droplet.reference_cell_size: %g m on %g m cells makes "
                       "%.4g droplets a cell, %.4g on the %.0f cells, more than 1e12 (the "
                       "limit of droplet.count)", ref, cell, d->per_cell, want, cells);
    return er_fail(err, ER_EINVAL, "droplet.per_cell: %g droplets a cell on %.0f cells make "
                   "%.4g, more than 1e12 (the limit of droplet.count)", d->per_cell, cells, want);
}

er_status er_droplet_plan(er_plan *plan, const er_terrain *t, er_error *err)
{
    const er_droplet_params *d = &plan->p.droplet;
    er_status st = at_map_cells(plan, err);
    if (!st)
        st = block_side(d, &plan->own.droplet.block_side, err);
    if (st)
        return st;
    (void)t;
    if (d->schedule == ER_DROPLET_SNAPSHOT && d->variant != ER_DROPLET_LAGUE)
        return er_fail(err, ER_EINVAL, "droplet.schedule: \"snapshot\" runs the lague variant "
                       "only; mass-transfer needs \"blocks\"");
    if (plan->windowed && d->height_unit == 0)
        return er_fail(err, ER_EINVAL, "droplet.height_unit: \"relief\" is a property of one "
                       "map; a tile set needs a number of metres");
    /* In a window the count is the world's, from all its cells: the
     * window cannot count the valid cells of the other tiles. */
    const er_window *w = &plan->win;
    double cells = plan->windowed ? (double)w->world_width * (double)w->world_height
                                  : (double)plan->valid;
    if ((st = droplets_fit(plan, cells, err)))
        return st;
    plan->own.droplet.droplets = d->count >= 0 ? d->count : (int64_t)(d->per_cell * cells + 0.5);
    plan->own.droplet.per_cell = cells > 0 ? (double)plan->own.droplet.droplets / cells : 0.0;
    /* The height unit: "relief" is the valid cells' max - min; a flat map
     * (relief 0) moves no droplet whatever the unit, so 1 m stands in. */
    double unit = d->height_unit;
    if (unit == 0)
        unit = plan->valid > 0 && plan->hi > plan->lo ? (double)plan->hi - (double)plan->lo : 1.0;
    plan->own.droplet.height_unit = unit;
    plan->own.droplet.reach = droplet_reach(d);
    plan->own.droplet.batch = auto_batch(d, w->world_width, w->world_height, plan->own.droplet.block_side);
    if (d->schedule == ER_DROPLET_SNAPSHOT && (st = snap_batch_fits(d, &plan->own.droplet.batch, err)))
        return st;
    plan->boundaries = plan->own.droplet.droplets > 0 ? (plan->own.droplet.droplets + plan->own.droplet.batch - 1) / plan->own.droplet.batch : 0;
    return ER_OK;
}

er_status er_droplet_check(const er_params *p, int tiled, er_error *err)
{
    int64_t size = 0;
    er_status st = block_side(&p->droplet, &size, err);
    if (!st && tiled && p->droplet.height_unit == 0)
        st = er_fail(err, ER_EINVAL, "droplet.height_unit: \"relief\" is a property of one map; "
                     "a tile set needs a number of metres, e.g. -s droplet.height_unit=1000");
    return st;
}

size_t er_droplet_bytes_per_cell(const er_params *p)
{
    /* The clean mask, one byte a cell, on maps with walls, with a
     * hardness or mask map the erosion factor (setup.c), and under the
     * snapshot schedule its sums and counts.  Batches and blocks take
     * memory per droplet and per block, not per cell. */
    const er_control_paths *m = &p->maps;
    size_t snap = p->droplet.schedule == ER_DROPLET_SNAPSHOT ? er_snap_bytes_per_cell() : 0;
    return 1 + (m->hardness[0] || m->mask[0] ? sizeof(float) : 0) + snap;
}

/* Runs droplet `id` when it starts in the map, adding to *acc. */
static void run_one(const er_dctx *c, uint64_t seed, int64_t id, size_t *trail, er_dacc *acc)
{
    double x, y;
    if (!er_droplet_start(c, seed, id, &x, &y))
        return;
    if (c->ctl_rain)
        acc->water += (double)er_start_water(c, x, y);
    if (c->variant == ER_DROPLET_LAGUE)
        er_lague_droplet(c, x, y, trail, acc);
    else
        er_particle_run(c, x, y, acc);
}

int64_t er_droplet_done_at(const er_plan *plan, int64_t b)
{
    return b >= plan->boundaries ? plan->own.droplet.droplets : b * plan->own.droplet.batch;
}

/* The CPU run's schedules: one batch is one boundary of the driver. */
typedef enum { RUN_SEQUENTIAL, RUN_BLOCKED, RUN_SNAPSHOT } run_kind;

/* A CPU run through the driver (core/drive.h). */
typedef struct drop_run {
    er_droplet_setup s;
    er_droplet_sched w;      /* the schedule's scratch (none for RUN_SEQUENTIAL) */
    er_dacc sum;             /* the run's sums so far */
    const er_plan *plan;
    er_terrain *t;
    run_kind kind;
    int prepared;            /* s is set up: finish ends the run, whatever its status */
} drop_run;

/* Runs batch b's droplets in index order on the calling thread (the
 * single-block case, and the sequential reference), their sums added
 * into a batch sum first, then into the run's. */
static void sequential_batch(drop_run *r, int64_t b)
{
    const er_droplet_setup *s = &r->s;
    int64_t lo;
    const int n = er_droplet_batch_at(r->plan, b, &lo);
    er_dacc acc = {0};
    for (int64_t id = lo; id < lo + n; id++)
        run_one(&s->ctx, r->plan->p.seed, id, s->trail, &acc);
    er_dacc_add(&r->sum, &acc);
}

/* Which schedule runs the plan; serial: the sequential reference. */
static run_kind kind_of(const er_plan *plan, const er_droplet_setup *s, int serial)
{
    if (serial)
        return RUN_SEQUENTIAL;
    if (plan->p.droplet.schedule == ER_DROPLET_SNAPSHOT)
        return RUN_SNAPSHOT;
    if (er_blocking_is_single(s->ctx.world_w, s->ctx.world_h, (int)plan->own.droplet.block_side))
        return RUN_SEQUENTIAL;
    return RUN_BLOCKED;
}

/* The set-up and the schedule's scratch for batches of the plan's size
 * (at most the droplet count); none for a run of no droplets. */
static er_status init_as(drop_run *r, const er_plan *plan, er_terrain *t, const er_run_opts *o,
                         int serial, er_error *err)
{
    r->plan = plan;
    r->t = t;
    er_status st = er_droplet_prepare(plan, t, o->layers, &r->s, err);
    if (st)
        return st;
    r->prepared = 1;
    r->kind = kind_of(plan, &r->s, serial);
    const int64_t batch = plan->own.droplet.batch < r->s.count ? plan->own.droplet.batch
                                                                : r->s.count;
    if (batch == 0 || r->kind == RUN_SEQUENTIAL)
        return ER_OK;
    if (r->kind == RUN_SNAPSHOT)
        return er_droplet_snap_sched_new(&r->w, plan, &r->s, batch, err);
    return er_droplet_blocked_new(&r->w, &r->s, (int)plan->own.droplet.block_side, batch, err);
}

static er_status run_init(void *run, void *backend, const er_plan *plan, er_terrain *t,
                          const er_run_opts *o, er_budget *bud, er_error *err)
{
    (void)backend; /* the CPU */
    (void)bud; /* er_droplet_end fills the whole budget */
    return init_as(run, plan, t, o, 0, err);
}

static er_status serial_init(void *run, void *backend, const er_plan *plan, er_terrain *t,
                             const er_run_opts *o, er_budget *bud, er_error *err)
{
    (void)backend; /* the CPU */
    (void)bud;
    return init_as(run, plan, t, o, 1, err);
}

static er_status run_load(void *run, const er_run_state *rs, er_budget *bud, er_error *err)
{
    drop_run *r = run;
    (void)bud;
    return er_droplet_restore(r->plan, r->t, &r->s, rs, &r->sum, err);
}

static er_status run_advance(void *run, int64_t b, er_drive *d, er_budget *bud, int64_t *to,
                             er_error *err)
{
    drop_run *r = run;
    (void)d;
    (void)bud;
    *to = b + 1;
    if (r->kind == RUN_SNAPSHOT)
        return er_droplet_snap_batch(&r->w, r->plan, &r->s, b, &r->sum, err);
    if (r->kind == RUN_BLOCKED)
        er_droplet_blocked_batch(&r->w, r->plan, &r->s, (int)r->plan->own.droplet.block_side, b,
                                 &r->sum);
    else
        sequential_batch(r, b);
    return ER_OK;
}

static er_status run_view(void *run, int64_t b, const er_budget *bud, er_run_state *v,
                          er_error *err)
{
    drop_run *r = run;
    (void)bud;
    (void)err;
    er_droplet_state(&r->plan->p, &r->s, r->plan->own.droplet.batch, b, &r->sum, v);
    return ER_OK;
}

/* The budget and the run guard (er_droplet_end) after every run that was
 * set up, a refused resume state included. */
static er_status run_finish(void *run, er_status st, int started, er_budget *bud, er_error *err)
{
    drop_run *r = run;
    (void)started;
    if (!r->prepared)
        return st;
    return er_droplet_end(&r->plan->p, &r->s, r->t, &r->sum, st, bud, err);
}

static void run_release(void *run)
{
    drop_run *r = run;
    er_droplet_sched_free(&r->w);
    er_droplet_setup_free(&r->s);
}

const er_model_steps er_droplet_steps = {
    .size = sizeof(drop_run),
    .init = run_init,
    .load = run_load,
    .advance = run_advance,
    .view = run_view,
    .finish = run_finish,
    .release = run_release,
    .done_at = er_droplet_done_at,
};

er_status er_droplet_run_serial(const er_plan *plan, er_terrain *t, const er_run_opts *o,
                                er_error *err)
{
    /* The same steps, set up with the droplets in index order. */
    er_model_steps serial = er_droplet_steps;
    serial.init = serial_init;
    return er_drive_run(&serial, plan, t, o, err);
}
