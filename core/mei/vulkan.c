/*
 * The Mei et al. (2007) grid model on Vulkan: the same physics as the CPU
 * path (core/mei/mei.c, pipe.c, erosion.c, transport.c), one compute dispatch
 * per pass, the whole state resident in device memory for the run.
 *
 * A (sub-)step is up to seven dispatches with a barrier between each, every
 * pass reading what the one before wrote (Jacobi style, so the result does
 * not depend on the schedule):
 *
 *   sources       eq. 1    river sources added to d (once per sub-step)
 *   maps          eq. 1    the sources raster, then the rain times the rain
 *                          map (only with either map: core/controls.h)
 *   flux          eqs. 2-5 q from old z, d of the neighbourhood (own q in place)
 *   water_erode   eqs. 6-12, 15: d, u, v; z2 and s1 from the old z
 *   transport     eq. 13 (or eq. 14, semi-Lagrangian) and drying: s, and z from z2
 *   reduce        per row, 64 interleaved partial budget sums and maxima
 *   rows          per row: the partial sums added in order, the checks of
 *                 core/mei/mei.c finish_substep
 *
 * plus `drops` (eq. 1, random raindrops, counter-based RNG) once a step,
 * and `total` after `rows`: the rows' budget terms added in row order to
 * the run's totals, which stay on the device (so a resumed run carries
 * them on exactly as an uninterrupted one).
 * Where the CPU updates rows in place behind a snapshot, the device keeps
 * z and z2 apart, so no pass reads a value another invocation of the same
 * pass writes.  Coefficients come from er_mei_make_coef and the sub-step
 * count from the run plan (core/plan.h), so both paths compute with the same
 * float constants.
 *
 * Steps are recorded in batches into one command buffer, one submission
 * each: the first of about 2^24 cell-updates, then as many steps as take
 * SUBMIT_TARGET_S of GPU time at the last batch's measured rate (so a fast
 * GPU runs hundreds of small steps per submission, not one); after each
 * the host waits on a fence, reads back the small per-row status buffer
 * (h * 48 bytes: budget sums and the first failure seen) and stops on a
 * failure.  The run driver (core/drive.h) runs the batches: it reports
 * progress, cancels, and ends a batch early at a boundary the run hooks
 * want (a frame, a checkpoint, a stop).  The checks stay on the device meanwhile: each
 * row keeps its first failing step, mei_total.comp the run's, and every
 * pass of a later step returns at once on reading it (the gate,
 * mei_common.glsl step_gated), so the run ends in the state after its
 * failing step (as with one step per submission) and the host takes back
 * what it counted for the skipped ones.  (Not conditional rendering: an
 * NVIDIA H200, driver 580, ran passes of later steps under a predicate
 * that should have skipped them; a word the shaders read holds on every
 * device.)  The state
 * itself is read back at the end and at the boundaries the hooks take;
 * a resumed run uploads its state.  Everything the host computes besides
 * (the water added, the sources' cells, the budget totals, the boundary
 * views, the copy-out) is core/mei/'s, on a host er_mei_sim that holds
 * the read-back state; windows (tile sets) draw raindrops over the world
 * and open the window's inner edges as the CPU does (er_mei_make_coef).
 *
 * A map whose layer exceeds one storage buffer (or the cap
 * er_vk_set_buffer_cap sets) runs in row bands with halo rows, with the
 * bits of one band (mei_band, vulkan_internal.h).
 *
 * This file records and submits the steps; vulkan_setup.c checks the
 * device, cuts the bands and makes the buffers and pipelines.
 *
 * The control maps (core/controls.h) are buffers of their own, one unread
 * word for a map not given, whose neutral value the shaders put in its
 * place (a product with 1: the bits of a run without maps); the sources
 * raster goes up as its depth per sub-step, rounded on the host as
 * core/mei/pipe.c er_mei_add_maps rounds it.
 *
 * Agreement with the CPU: every shader expression keeps the CPU's order of
 * operations and is `precise` (no FMA contraction); the square root is the
 * correctly rounded one on both (through float64 on the device).  What can still differ is division (Vulkan
 * allows 2.5 ulp for a / b; lavapipe divides exactly) and denormals
 * (devices may flush them).  Budget sums are per row in 64 interleaved
 * lanes, the rows then added top to bottom after every sub-step as the CPU
 * adds its rows: deterministic, but each row's sum is not formed in the
 * CPU's order, so they agree to rounding (and a checkpoint goes on only on
 * the backend that wrote it).  erode-models(7) "VULKAN BACKEND" gives the
 * measured differences and the tolerances the tests use.
 */
#include "vulkan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cell-updates of the first recorded batch: large enough that submission
 * costs nothing, small enough that progress and cancelling stay
 * responsive. */
#define BATCH_CELLS ((uint64_t)1 << 24)
/* The same on CPU devices (lavapipe), which update some 2^22 cells a
 * second on two cores: a batch of about a quarter of a second, so that a
 * cancel or a signal's checkpoint waits no longer than that. */
#define CPU_BATCH_CELLS ((uint64_t)1 << 20)
#define FIRST_BATCH_STEPS 256
/* Sub-steps one command buffer holds at most (about 40 commands each),
 * which bounds its memory where steps are very short (small maps). */
#define MAX_BATCH_SUBSTEPS 4096

/* Seconds of GPU work a submission aims at once the time per step is
 * known (next_batch): the fence wait and the status read (~0.1 ms) then
 * cost nothing beside it, and progress and cancelling stay within a tenth
 * of a second.  An H100 does a 1024^2 step in well under a millisecond. */
#define SUBMIT_TARGET_S 0.075

/* The state a sub-step carries to the next and reads a row away: the
 * layers whose halo rows are exchanged. */
static const int exchanged[] = { B_Z, B_D, B_S, B_QL, B_QR, B_QT, B_QB };

/* The state arrays of er_run_state (ER_STATE_MEI_*), in its order. */
static const int state_buf[ER_STATE_ARRAYS] = { B_Z, B_D, B_S, B_QL, B_QR, B_QT, B_QB,
                                                 B_FLOW, B_WEAR };

/* The first failure any row recorded (the earliest step, then the lowest
 * row), as core/mei/mei.c words it; ER_OK when none.  The row kinds are
 * ER_MEI_FAIL_*. */
static er_status row_failure(const mei_rowstat *rs, const er_mei_sim *sim,
                             const er_mei_coef *k, er_error *err)
{
    int best = -1;
    for (int y = 0; y < sim->h; y++)
        if (rs[y].fail_step && (best < 0 || rs[y].fail_step < rs[best].fail_step))
            best = y;
    if (best < 0)
        return ER_OK;
    const mei_rowstat *r = &rs[best];
    return er_mei_fail(sim, k, (int)r->fail_kind, (int64_t)r->fail_step - 1, best,
                       er_bits_float(r->fail_bits), err);
}

/* Adds " at step N" to a Vulkan failure during the run; device lost
 * reads "vulkan: device lost at step N". */
static er_status at_step(er_vk_ctx *vk, er_status st, int64_t step, er_error *err)
{
    if (!err)
        return st;
    if (vk->device_lost)
        return er_fail(err, st, "vulkan: device lost at step %lld", (long long)step);
    char msg[ER_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return er_fail(err, st, "%.400s at step %lld", msg, (long long)step);
}

static void set_push_step(mei_push *pu, int64_t step)
{
    pu->step_lo = (uint32_t)((uint64_t)step & 0xffffffffu);
    pu->step_hi = (uint32_t)((uint64_t)step >> 32);
}

/* One run: the device, and the host simulation (core/mei/) that holds the
 * read-back state and computes what the host adds to the budget. */
typedef struct mei_run {
    er_vk_ctx *vk;
    const er_plan *plan;
    er_terrain *t;
    er_layers *layers;   /* the run's layers (flow and wear accumulated on the device) */
    er_mei_sim sim;
    mei_gpu g;
    er_mei_coef k[2];    /* dry, raining */
    mei_coef_gpu kg[2];
    mei_push pu;
    mei_rowstat *rs;     /* h + 1: the row status read back after each batch */
    uint32_t nsrc;       /* cells the sources cover in a band, at most */
    int64_t cells;       /* terrain cells (uniform rain) */
    int64_t batch;       /* steps per batch */
    double *map_water[2]; /* per row, the rain and sources maps' water of a
                           * sub-step (dry, raining); NULL: neither map */
    er_budget bud;
    int host_current;    /* sim holds the device's state (no step since the last read) */
} mei_run;

/* The maps' water per row and sub-step, as core/mei/mei.c counts it
 * (er_mei_add_maps, which leaves each row's sum in sim.acc[].eroded), so the
 * budget adds the same terms in the same order without a pass over the
 * cells each sub-step. */
static er_status map_water_rows(mei_run *r, er_error *err)
{
    const er_controls *c = r->sim.ctl;
    const int h = r->sim.h;
    if (!c || !(c->rain || c->source))
        return ER_OK;
    for (int v = 0; v < 2; v++) {
        double unused = 0.0;
        if (!(r->map_water[v] = malloc((size_t)h * sizeof(double))))
            return er_fail(err, ER_ENOMEM, "mei: out of memory for a %dx%d map", r->sim.w, h);
        er_mei_add_maps(&r->sim, NULL, r->k[v].rain, r->plan->own.mei.dt_sub, &unused);
        for (int y = 0; y < h; y++)
            r->map_water[v][y] = r->sim.acc[y].eroded;
    }
    return ER_OK;
}

/* The push constants of the raindrop pass: the disc of radius rad around
 * an integer centre is centre +- floor(rad), and a cell is in when
 * dx^2 + dy^2 <= floor(rad^2) (core/sources.c er_disc_cells). */
static void drop_push(const er_params *p, mei_push *pu)
{
    const er_mei_params *m = &p->mei;
    memset(pu, 0, sizeof *pu);
    pu->seed_lo = (uint32_t)(p->seed & 0xffffffffu);
    pu->seed_hi = (uint32_t)(p->seed >> 32);
    pu->count_lo = (uint32_t)((uint64_t)m->drops_per_step & 0xffffffffu);
    pu->count_hi = (uint32_t)((uint64_t)m->drops_per_step >> 32);
    pu->amount = (float)m->drop_amount;
    double rad = m->drop_radius > 0.0 ? m->drop_radius : 0.0;
    double fr = floor(rad), r2 = floor(rad * rad);
    uint64_t r2i = r2 > 4.0e18 ? (uint64_t)4e18 : (uint64_t)r2;
    pu->fr = fr > 1073741824.0 ? 1073741824 : (int32_t)fr;
    pu->r2_lo = (uint32_t)(r2i & 0xffffffffu);
    pu->r2_hi = (uint32_t)(r2i >> 32);
}

/* The invocations of one dispatch of each pass (workgroups x local size),
 * for scripts/bench vulkan; 0 for a pass this run never dispatches. */
static void note_kernels(mei_run *r)
{
    const uint64_t gx = er_vk_groups((uint32_t)r->sim.w, MEI_GROUP), gy = (uint64_t)r->sim.h;
    const uint64_t cells = gx * gy * MEI_GROUP;
    static const char *const names[N_PIPE] = { "drops", "sources", "maps", "flux",
                                               "water_erode", "transport", "reduce",
                                               "rows", "total" };
    const uint64_t inv[N_PIPE] = {
        [P_DROPS] = r->pu.count_lo || r->pu.count_hi ? ER_VK_GROUP : 0,
        [P_SOURCES] = er_vk_groups(r->nsrc, ER_VK_GROUP) * ER_VK_GROUP,
        [P_MAPS] = r->map_water[0] ? cells : 0, [P_FLUX] = cells, [P_WATER] = cells, [P_TRANSPORT] = cells,
        [P_REDUCE] = gy * MEI_LANES,
        [P_ROWS] = (uint64_t)er_vk_groups((uint32_t)r->sim.h, ER_VK_GROUP) * ER_VK_GROUP,
        [P_TOTAL] = 4,
    };
    er_vk_stats *st = &r->vk->stats;
    st->n_kernels = N_PIPE;
    for (int i = 0; i < N_PIPE; i++) {
        st->kernel[i].name = names[i];
        st->kernel[i].invocations = inv[i];
    }
}

static er_status run_setup(mei_run *r, er_terrain *t, er_error *err)
{
    const er_plan *plan = r->plan;
    src_list src = { 0 };
    er_status st = er_mei_sim_alloc(&r->sim, t, plan->windowed ? &plan->win : NULL, err);
    if (st)
        return st;
    er_mei_keep_layers(&r->sim, r->layers);
    for (int i = 0; i < 2; i++) {
        er_mei_make_coef(&r->sim, &plan->p.mei, plan->own.mei.dt_sub, i, &r->k[i]);
        er_mei_vk_fill_coef(&r->k[i], &r->sim, &r->kg[i]);
    }
    /* the same stability check as the CPU (condition 2 of core/mei/mei.c) */
    if (plan->p.mei.steps > 0 && (st = er_mei_check_coef(&r->k[0], err)))
        return st;
    r->rs = calloc((size_t)t->height + 1, sizeof *r->rs);
    if (!r->rs)
        return er_fail(err, ER_ENOMEM, "mei: out of memory for a %dx%d map", t->width,
                       t->height);
    if ((st = er_mei_vk_sources(&r->sim, &plan->p.river, plan->own.mei.dt_sub, &src, err))) {
        free(src.e);
        return st;
    }
    r->cells = er_mei_terrain_cells(&r->sim);
    r->bud.material_before = er_mei_total(&r->sim, r->sim.b0);
    drop_push(&plan->p, &r->pu);
    uint64_t per_step = (uint64_t)t->width * (uint64_t)t->height * (uint64_t)plan->own.mei.substeps;
    const uint64_t cells = r->vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? CPU_BATCH_CELLS
                                                                                 : BATCH_CELLS;
    r->batch = (int64_t)(cells / (per_step ? per_step : 1));
    r->batch = r->batch < 1 ? 1 : r->batch > FIRST_BATCH_STEPS ? FIRST_BATCH_STEPS : r->batch;
    const er_layers keep = { NULL, NULL, r->sim.flow, r->sim.wear };
    double t0 = er_vk_now();
    if ((st = er_mei_vk_setup(&r->g, t, &keep, r->kg, &src, err)) ||
        (st = er_mei_vk_upload_maps(&r->g, t, plan->own.mei.dt_sub, err)))
        st = at_step(r->vk, st, 0, err);
    r->vk->stats.upload_s += er_vk_now() - t0 - r->vk->stats.pipeline_s;
    if (!st)
        st = map_water_rows(r, err);
    for (int k = 0; k < r->g.nband; k++)
        r->nsrc = r->g.band[k].nsrc > r->nsrc ? r->g.band[k].nsrc : r->nsrc;
    note_kernels(r);
    free(src.e);
    return st;
}

/* State array i of the host simulation; NULL for an accumulator not kept. */
static float *state_array(er_mei_sim *sim, int i)
{
    return i == ER_STATE_MEI_Z ? sim->z : i == ER_STATE_MEI_D ? sim->d
         : i == ER_STATE_MEI_S ? sim->s : i == ER_STATE_MEI_FLOW ? sim->flow
         : i == ER_STATE_MEI_WEAR ? sim->wear : sim->q[i - ER_STATE_MEI_Q];
}

/* Reads the state arrays back into the host simulation: all of them, or
 * (all = 0) those the outputs need (z, d, s and the accumulators). */
static er_status read_state(mei_run *r, int all, er_error *err)
{
    er_status st = ER_OK;
    for (int i = 0; i < ER_STATE_ARRAYS && !st; i++) {
        float *a = state_array(&r->sim, i);
        int output = i <= ER_STATE_MEI_S || i >= ER_STATE_MEI_FLOW;
        for (int k = 0; k < r->g.nband && !st && a && (all || output); k++)
            st = er_mei_vk_download_rows(&r->g, k, state_buf[i], a, r->sim.w, err);
    }
    return st;
}

/* The water the host adds to the budget for step `step`, in
 * core/mei/mei.c's order (raindrops, then per sub-step the sources and the
 * rain); returns whether raindrops fall (the drops pass runs). */
static int account_step(mei_run *r, int64_t step)
{
    const er_params *p = &r->plan->p;
    const er_mei_params *m = &p->mei;
    int raining = m->rain_rate > 0.0 && (m->rain_steps == 0 || step < m->rain_steps);
    int drops = er_mei_add_drops(&r->sim, NULL, m, p->seed, step, &r->bud.water_added);
    for (int64_t sub = 0; sub < r->plan->own.mei.substeps; sub++) {
        er_mei_add_sources(&r->sim, NULL, &p->river, r->plan->own.mei.dt_sub, &r->bud.water_added);
        if (r->map_water[0])
            for (int y = 0; y < r->sim.h; y++)
                r->bud.water_added += r->map_water[raining][y];
        r->bud.water_added += (double)r->kg[raining].rain * (double)r->cells;
        r->bud.substeps++;
    }
    r->bud.work_done++;
    return drops;
}

/* The rows [*lo, *hi) of the map a pass covers in band bd: the rows its
 * buffers hold less `margin` at each edge inside the map (the rows whose
 * inputs a pass that reads rows up to `margin` away has), or with
 * margin < 0 the rows bd owns. */
static void pass_rows(const mei_band *bd, int h, int margin, int *lo, int *hi)
{
    *lo = margin < 0 ? bd->y0 : bd->a > 0 ? bd->a + margin : 0;
    *hi = margin < 0 ? bd->y1 : bd->b < h ? bd->b - margin : h;
}

static void band_push(mei_push *pu, const mei_band *bd, int lo)
{
    pu->band_y0 = bd->a;
    pu->row0 = (uint32_t)(lo - bd->a);
    pu->band_rows = (uint32_t)(bd->b - bd->a);
}

/* Records per-row pass p on every band: gx workgroups a row, one row of
 * workgroups per row pass_rows gives it. */
static void dispatch_rows(mei_run *r, int p, uint32_t gx, int margin)
{
    for (int k = 0; k < r->g.nband; k++) {
        const mei_band *bd = &r->g.band[k];
        int lo, hi;
        pass_rows(bd, r->sim.h, margin, &lo, &hi);
        band_push(&r->pu, bd, lo);
        if (hi > lo)
            er_vk_cmd_dispatch(r->vk, &r->g.pipe[p], (uint32_t)k, &r->pu, gx,
                               (uint32_t)(hi - lo));
    }
}

/* Records the raindrops (one workgroup) or the sources (a band's cells) on
 * every band, over all the rows its buffers hold. */
static void dispatch_cells(mei_run *r, int p)
{
    for (int k = 0; k < r->g.nband; k++) {
        const mei_band *bd = &r->g.band[k];
        band_push(&r->pu, bd, bd->a);
        r->pu.n = bd->nsrc;
        if (p == P_DROPS || bd->nsrc)
            er_vk_cmd_dispatch(r->vk, &r->g.pipe[p], (uint32_t)k, &r->pu,
                               p == P_DROPS ? 1 : er_vk_groups(bd->nsrc, ER_VK_GROUP), 1);
    }
}

/* Copies the halo rows of the exchanged layers from the bands that own
 * them (each band owns at least one row, so HALO bands either side hold
 * them all). */
static void exchange_halos(mei_run *r)
{
    const mei_gpu *g = &r->g;
    const VkDeviceSize row = (VkDeviceSize)r->sim.w * sizeof(float);
    for (int k = 0; k < g->nband; k++)
        for (int j = k - HALO; j <= k + HALO; j++) {
            if (j < 0 || j >= g->nband || j == k)
                continue;
            const mei_band *to = &g->band[k], *from = &g->band[j];
            int lo = to->a > from->y0 ? to->a : from->y0, hi = to->b < from->y1 ? to->b : from->y1;
            for (size_t i = 0; hi > lo && i < sizeof exchanged / sizeof exchanged[0]; i++)
                er_vk_cmd_copy_at(r->vk, &from->buf[exchanged[i]], (VkDeviceSize)(lo - from->a) * row,
                                  &to->buf[exchanged[i]], (VkDeviceSize)(lo - to->a) * row,
                                  (VkDeviceSize)(hi - lo) * row);
        }
}

/* Records one sub-step's passes on every band (the margins: how far
 * each pass reads, mei_band). */
static void record_substep(mei_run *r)
{
    er_vk_ctx *vk = r->vk;
    const uint32_t gx = er_vk_groups((uint32_t)r->sim.w, MEI_GROUP);
    if (r->nsrc) {
        dispatch_cells(r, P_SOURCES);
        er_vk_cmd_barrier(vk);
    }
    if (r->map_water[0]) {
        dispatch_rows(r, P_MAPS, gx, 0);
        er_vk_cmd_barrier(vk);
    }
    dispatch_rows(r, P_FLUX, gx, 1);
    er_vk_cmd_barrier(vk);
    dispatch_rows(r, P_WATER, gx, 2);
    er_vk_cmd_barrier(vk);
    dispatch_rows(r, P_TRANSPORT, gx, 3);
    er_vk_cmd_barrier(vk);
    /* the halo copies write no row reduce reads: no barrier between them */
    dispatch_rows(r, P_REDUCE, 1, -1);
    exchange_halos(r);
    er_vk_cmd_barrier(vk);
    r->pu.n = MEI_LANES;
    er_vk_cmd_dispatch(vk, &r->g.pipe[P_ROWS], 0, &r->pu,
                       er_vk_groups((uint32_t)r->sim.h, ER_VK_GROUP), 1);
    er_vk_cmd_barrier(vk);
    er_vk_cmd_dispatch(vk, &r->g.pipe[P_TOTAL], 0, &r->pu, 1, 1);
    er_vk_cmd_barrier(vk);
}

/* Records the passes of step `step`.  Its passes return at once where a
 * step before it failed (the gate, mei_common.glsl step_gated), so the
 * state a failing run ends with is that after its failing step, whichever
 * submission held it.  The gate does not skip the halo copies; they then
 * copy rows no pass changes. */
static void record_step(mei_run *r, int64_t step, int drops)
{
    const er_mei_params *m = &r->plan->p.mei;
    er_vk_ctx *vk = r->vk;
    set_push_step(&r->pu, step);
    r->pu.variant = (uint32_t)(m->rain_rate > 0.0 && (m->rain_steps == 0 || step < m->rain_steps));
    if (drops) {
        dispatch_cells(r, P_DROPS);
        er_vk_cmd_barrier(vk);
    }
    for (int64_t sub = 0; sub < r->plan->own.mei.substeps; sub++)
        record_substep(r);
}

/* The next submission's steps from the last one's: as many as fill
 * SUBMIT_TARGET_S at the measured time per step, at most four times as
 * many as the last (a first short step may be warm-up) and
 * MAX_BATCH_SUBSTEPS sub-steps, at least one. */
static void next_batch(mei_run *r, int64_t steps, double sec)
{
    if (steps <= 0)
        return;
    const int64_t sub = r->plan->own.mei.substeps > 0 ? r->plan->own.mei.substeps : 1;
    const double most = sub < MAX_BATCH_SUBSTEPS ? (double)(MAX_BATCH_SUBSTEPS / sub) : 1.0;
    double want = sec > 0.0 ? SUBMIT_TARGET_S * (double)steps / sec : 4.0 * (double)steps;
    double cap = 4.0 * (double)steps < most ? 4.0 * (double)steps : most;
    if (steps < r->batch) /* cut short by a boundary: no measure of a full one */
        cap = cap > (double)r->batch ? cap : (double)r->batch;
    r->batch = want < 1.0 ? 1 : want > cap ? (int64_t)cap : (int64_t)want;
}

/* The first failing step the rows recorded, -1 when none. */
static int64_t first_failure(const mei_rowstat *rs, int h)
{
    uint32_t f = 0;
    for (int y = 0; y < h; y++)
        if (rs[y].fail_step && (!f || rs[y].fail_step < f))
            f = rs[y].fail_step;
    return (int64_t)f - 1;
}

/* Submits the recorded batch of `n` steps, timed, and reads the row status
 * back into r->rs. */
static er_status submit_batch(mei_run *r, int64_t n, er_error *err)
{
    er_vk_stats *vs = &r->vk->stats;
    double t0 = er_vk_now();
    er_status st = er_vk_cmd_submit(r->vk, err);
    if (!st)
        st = er_vk_buffer_invalidate(r->vk, &r->g.rows_host, err);
    if (st)
        return st;
    double sec = er_vk_now() - t0, gpu = er_vk_timestamp_seconds(r->vk);
    vs->steps_s += sec;
    vs->gpu_timed = gpu >= 0.0;
    vs->gpu_s += gpu >= 0.0 ? gpu : 0.0;
    vs->submissions++;
    vs->steps += n;
    vs->max_steps = n > vs->max_steps ? n : vs->max_steps;
    next_batch(r, n, gpu > 0.0 ? gpu : sec);
    memcpy(r->rs, r->g.rows_host.map, ((size_t)r->sim.h + 1) * sizeof *r->rs);
    return ER_OK;
}

/* Runs the batch [*step, end): records, submits, takes the budget totals
 * and the checks; *step becomes end.  On a failure at step f inside it the
 * gate skipped the steps after f on the device, so the host's accounts go
 * back to f + 1 steps, as a submission that ended at f would leave them. */
static er_status run_batch(mei_run *r, int64_t *step, int64_t end, er_error *err)
{
    const int h = r->sim.h;
    const int64_t first = *step;
    const er_budget before = r->bud;
    er_status st = er_vk_cmd_begin(r->vk, err);
    if (st)
        return at_step(r->vk, st, first, err);
    er_vk_cmd_barrier(r->vk); /* after the last submission's writes */
    er_vk_cmd_timestamp(r->vk, 0);
    for (; *step < end; (*step)++)
        record_step(r, *step, account_step(r, *step));
    er_vk_cmd_copy(r->vk, &r->g.band[0].buf[B_ROWS], &r->g.rows_host, r->g.rows_host.size);
    er_vk_cmd_timestamp(r->vk, 1);
    if ((st = submit_batch(r, end - first, err)))
        return at_step(r->vk, st, first, err);
    int64_t failed = first_failure(r->rs, h);
    if (failed >= first && failed + 1 < end) {
        r->bud = before;
        for (*step = first; *step <= failed; (*step)++)
            account_step(r, *step);
    }
    r->bud.eroded = r->rs[h].eroded;
    r->bud.deposited = r->rs[h].deposited;
    r->bud.left_map = r->rs[h].left_sed;
    r->bud.water_left = r->rs[h].left_water;
    return row_failure(r->rs, &r->sim, &r->k[0], err);
}

/* The run through the driver (core/drive.h): its steps. */

static er_status vk_init(void *run, void *backend, const er_plan *plan, er_terrain *t,
                         const er_run_opts *o, er_budget *bud, er_error *err)
{
    mei_run *r = run;
    (void)bud; /* r->bud, handed over by vk_finish */
    r->vk = r->g.vk = backend;
    r->plan = plan;
    r->t = t;
    r->layers = o->layers;
    memset(&r->vk->stats, 0, sizeof r->vk->stats);
    er_status st = er_vk_mei_check(r->vk, plan, t, err);
    if (!st)
        st = run_setup(r, t, err);
    r->host_current = 1;
    return st;
}

/* A resumed run: its state and budget totals into the device. */
static er_status vk_load(void *run, const er_run_state *rs, er_budget *bud, er_error *err)
{
    mei_run *r = run;
    const int h = r->sim.h;
    int64_t step0;
    (void)bud;
    double t0 = er_vk_now();
    er_status st = er_mei_restore(&r->sim, r->plan, r->t, rs, &r->bud, &step0, err);
    for (int i = 0; i < ER_STATE_ARRAYS && !st; i++)
        for (int k = 0; k < r->g.nband && !st && state_array(&r->sim, i); k++)
            st = er_mei_vk_upload_rows(&r->g, k, state_buf[i], state_array(&r->sim, i),
                                       sizeof(float), r->sim.w, err);
    memset(r->rs, 0, ((size_t)h + 1) * sizeof *r->rs);
    r->rs[h].eroded = r->bud.eroded;
    r->rs[h].deposited = r->bud.deposited;
    r->rs[h].left_sed = r->bud.left_map;
    r->rs[h].left_water = r->bud.water_left;
    if (!st)
        st = er_mei_vk_upload(&r->g, &r->g.band[0].buf[B_ROWS], r->rs,
                              ((size_t)h + 1) * sizeof *r->rs, err);
    r->vk->stats.upload_s += er_vk_now() - t0;
    return st;
}

/* One submission from step b: r->batch steps, fewer where the driver
 * stops it (a boundary the hooks want, a cancel: er_drive_may_pass, asked
 * before the batch is recorded) or the run ends. */
static er_status vk_advance(void *run, int64_t b, er_drive *d, er_budget *bud, int64_t *to,
                            er_error *err)
{
    mei_run *r = run;
    const int64_t steps = r->plan->p.mei.steps;
    int64_t end = b + r->batch < steps ? b + r->batch : steps;
    (void)bud;
    for (int64_t s = b + 1; s < end; s++)
        if (!er_drive_may_pass(d, s))
            end = s;
    r->host_current = 0;
    *to = b;
    return run_batch(r, to, end, err);
}

static er_status vk_view(void *run, int64_t b, const er_budget *bud, er_run_state *v,
                         er_error *err)
{
    mei_run *r = run;
    (void)bud;
    if (!r->host_current) {
        er_status st = read_state(r, 1, err);
        if (st)
            return at_step(r->vk, st, b, err);
        r->host_current = 1;
    }
    er_mei_state_view(&r->sim, &r->plan->p.mei, b, &r->bud, v);
    return ER_OK;
}

/* The state as it stands, also after a failed or cancelled step, read
 * back into the terrain and layers; on any other failure they are left
 * as they were. */
static er_status vk_finish(void *run, er_status st, int started, er_budget *bud, er_error *err)
{
    mei_run *r = run;
    if (started && (st == ER_OK || st == ER_ENUMERIC || st == ER_ECANCELED)) {
        double t0 = er_vk_now();
        er_status rst = read_state(r, 0, err);
        r->vk->stats.readback_s = er_vk_now() - t0;
        if (rst)
            st = at_step(r->vk, rst, r->bud.work_done, err);
        else
            er_mei_finish(&r->sim, r->t, r->layers, r->bud.material_before, r->plan->abs_sum,
                          &r->bud);
    }
    *bud = r->bud;
    return st;
}

static void vk_release(void *run)
{
    mei_run *r = run;
    if (r->g.vk)
        er_mei_vk_free(&r->g);
    er_mei_sim_free(&r->sim);
    free(r->rs);
    free(r->map_water[0]);
    free(r->map_water[1]);
}

const er_model_steps er_mei_vk_steps = {
    .size = sizeof(mei_run),
    .init = vk_init,
    .load = vk_load,
    .advance = vk_advance,
    .view = vk_view,
    .finish = vk_finish,
    .release = vk_release,
};

er_status er_vk_mei_run(er_vk_ctx *vk, const er_plan *plan, er_terrain *t,
                        const er_run_opts *o, er_error *err)
{
    static const er_run_opts none;
    return er_drive_run_on(&er_mei_vk_steps, vk, plan, t, o ? o : &none, err);
}
