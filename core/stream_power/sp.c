/*
 * The stream-power model: a landscape over geologic time from uplift
 * against fluvial incision, with deposition and hillslope diffusion,
 *     dh/dt = U - K A^m S^n + (G / A) Q_s + K_d lap(h)
 * (Braun and Willett 2013; Yuan et al. 2019, eq. 5).  Each step of dt
 * years, in this order:
 *   1. uplift: U dt mask on every free cell (base level is fixed);
 *   2. routing (route.c): steepest descent, depressions resolved through
 *      their lowest passes so every cell drains to base level, the stack
 *      and the drainage area A;
 *   3. the stream-power law, implicit along the stack, and deposition
 *      with G > 0, lakes filled (erode.c);
 *   4. implicit hillslope diffusion (diffuse.c);
 *   5. with stream_power.depressions "breach", every closed basin's outlet
 *      cut down to its pit (breach.c), then with base_level "follow" the
 *      edges lowered to the land behind them.
 * With "drain" the basins are cut right after the routing instead (2-3),
 * so no lake stands through a step's incision, and once more after the
 * last step on a routing of the final heights: each step's incision,
 * deposition and creep leave shallow hollows along the rivers, which the
 * next step cuts, so only the last step's would stay in the output.
 * Heights are doubles while the run goes on (float32 on output).  Nodata
 * cells are outlets: never changed, and every valid cell beside one is base
 * level, as are the cells of the edges stream_power.boundary names (a DEM's
 * coast or survey edge is where its rivers leave).
 * Layers: flow is the drainage area [m^2] and water the depth of the lakes
 * [m] of the routing of the final heights; sediment the height deposited
 * and wear the height removed (rivers and hillslopes), summed over the run.
 * The budget: uplift is material added (the budget term "uplifted",
 * ER_SP_UPLIFTED), left_map what crossed into base level; before +
 * uplifted = after + left_map.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mem.h"
#include "../parallel.h"
#include "sp_internal.h"

/* Each key in its range, uplift x dt x steps can still come to hundreds
 * of kilometres (1 m/yr for 1e9 years), which no landscape reaches (the
 * highest mountains stand under 9 km): a slip of a unit or an exponent.
 * Beyond this many metres the run goes on, and its plan says so in one
 * line (erode(1) EXIT STATUS 0). */
#define ER_SP_UPLIFT_WARN_M 10000.0

static void note_uplift(er_plan *plan)
{
    const er_stream_power_params *p = &plan->p.stream_power;
    const double total = p->uplift * p->dt * (double)p->steps;
    if (total > ER_SP_UPLIFT_WARN_M && !plan->warning[0])
        snprintf(plan->warning, sizeof plan->warning, "stream_power: uplift %g m/yr over %lld "
                 "steps of %g yr raises the land %.3g km, more than the %g km a landscape can "
                 "hold: check uplift, dt and steps", p->uplift, (long long)p->steps, p->dt,
                 total / 1000.0, ER_SP_UPLIFT_WARN_M / 1000.0);
}

/*
 * The routing's records of the first step, measured by routing t's
 * heights once: a closed basin costs ~100 bytes and each of its passes 48,
 * so a flat map (every cell a basin with four passes) needs five times
 * what an fBm map of its size does, and no bound per cell fits both.  The
 * first step holds the most: its depressions drain afterwards (on fBm,
 * flat, DEM and 16-bit maps the basins and passes only fall from step to
 * step; tests/integration/34-plan-memory.sh).  Passes of equal heights (a
 * flat's) need no sort, whose buffer then stays untouched; only deposition
 * and diffusion, which change heights beside the rivers, make a flat's
 * later passes differ (a flat without them never sorted in 100 steps),
 * unless the basins are breached (stream_power.depressions): then the
 * routing of a later step finds only the pits a step's creep or uplift
 * made since, a few per thousand cells on noise, and a flat's later steps
 * never sort (tests/integration/34-plan-memory.sh: badlands.json on a
 * flat, peak 82 MiB against a plan of 116 MiB that counted the sort).
 * Its arrays are the run's own and freed before the run allocates them
 * again.
 */
/* 1 when a later step may sort passes the first step did not. */
static int later_sorts(const er_stream_power_params *p)
{
    return (p->g > 0.0 || p->kd > 0.0) && p->depressions == ER_SP_DEPR_LAKES;
}

static er_status routing_bytes(er_plan *plan, const er_terrain *t, er_error *err)
{
    er_sp_sim s;
    er_status st = er_sp_init(&s, plan, t, NULL, err);
    if (st == ER_OK)
        st = er_sp_route(&s, plan->p.stream_power.g > 0.0, err);
    if (st == ER_OK)
        plan->bytes_map = er_sp_route_bytes(&s, later_sorts(&plan->p.stream_power));
    er_sp_free(&s);
    return st;
}

er_status er_sp_plan(er_plan *plan, const er_terrain *t, er_error *err)
{
    if (plan->windowed)
        return er_fail(err, ER_EINVAL, "stream_power: tile sets (windows) are not supported: "
                       "rivers and their drainage areas cross tile edges");
    if ((int64_t)t->width * t->height > INT32_MAX)
        return er_fail(err, ER_EINVAL, "stream_power: the map has %lld cells, more than the "
                       "2^31 - 1 the model indexes", (long long)t->width * t->height);
    plan->boundaries = plan->p.stream_power.steps;
    note_uplift(plan);
    return routing_bytes(plan, t, err);
}

/* z, acc (doubles), stack, bcells, basin (int32), kind, rdir, dmask and
 * lake (bytes); q (double), which only deposition and diffusion touch
 * (resident only then); with a hardness or mask map ks (float).  The
 * routing's records (basins, passes, lakes) depend on the map's shape,
 * not its size: the plan measures them (routing_bytes). */
size_t er_sp_bytes_per_cell(const er_params *p)
{
    const er_control_paths *m = &p->maps;
    const int q = p->stream_power.g > 0.0 || p->stream_power.kd > 0.0 || p->stream_power.sc > 0.0;
    const int ks = m->hardness[0] || m->mask[0] || p->stream_power.lithology > 0.0;
    return (2 + (size_t)q) * sizeof(double) + 3 * sizeof(int32_t) + 4 +
           (ks ? sizeof(float) : 0);
}

void er_sp_free(er_sp_sim *s)
{
    void *b[] = {s->z, s->kind, s->ks, s->rdir, s->dmask, s->stack, s->bcells, s->basin,
                 s->lake, s->acc, s->basins, s->edges, s->edges_tmp, s->uf, s->tree, s->tree_off,
                 s->tree_edge, s->order, s->lakes, s->radix, s->root_at, s->chunk_at, s->rsum, s->sched, s->lvl_at, s->row_at, s->walk_q, s->walk_pending, s->child_at, s->child, s->q, s->pow_tab, s->dscr, s->sums};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        free(b[i]);
    memset(s, 0, sizeof *s);
}

/* Which cells are fixed: the edges p names, and every valid cell with a
 * nodata neighbour. */
static void cell_kinds(er_sp_sim *s, const er_terrain *t, er_sp_edges edges)
{
    const int w = s->w, h = s->h;
    const int west = edges == ER_SP_EDGES_ALL || edges == ER_SP_EDGES_WEST ||
                     edges == ER_SP_EDGES_WEST_EAST;
    const int east = edges == ER_SP_EDGES_ALL || edges == ER_SP_EDGES_EAST ||
                     edges == ER_SP_EDGES_WEST_EAST;
    const int north = edges == ER_SP_EDGES_ALL || edges == ER_SP_EDGES_NORTH ||
                      edges == ER_SP_EDGES_NORTH_SOUTH;
    const int south = edges == ER_SP_EDGES_ALL || edges == ER_SP_EDGES_SOUTH ||
                      edges == ER_SP_EDGES_NORTH_SOUTH;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int64_t i = (int64_t)y * w + x;
            uint8_t k = ER_SP_FREE;
            if (t->wall && t->wall[i]) {
                k = ER_SP_WALL;
            } else if ((west && x == 0) || (east && x == w - 1) || (north && y == 0) ||
                       (south && y == h - 1)) {
                k = ER_SP_BASE;
            } else if (t->wall) {
                for (int ny = y - 1; ny <= y + 1; ny++)
                    for (int nx = x - 1; nx <= x + 1; nx++)
                        if (nx >= 0 && ny >= 0 && nx < w && ny < h &&
                            t->wall[(int64_t)ny * w + nx])
                            k = ER_SP_BASE;
            }
            s->kind[i] = k;
        }
}

er_status er_sp_init(er_sp_sim *s, const er_plan *plan, const er_terrain *t,
                     const er_layers *ly, er_error *err)
{
    const er_stream_power_params *p = &plan->p.stream_power;
    const er_controls *c = t->controls;
    memset(s, 0, sizeof *s);
    s->w = t->width;
    s->h = t->height;
    s->n = (int64_t)s->w * s->h;
    s->dx = t->cell_x;
    s->dy = t->cell_y;
    s->dd = sqrt(s->dx * s->dx + s->dy * s->dy);
    s->area = s->dx * s->dy;
    s->threads = er_thread_count();
    const size_t n = (size_t)s->n, lines = (size_t)(s->w > s->h ? s->w : s->h);
    const size_t block = (size_t)s->h * ER_SP_BLOCK;
    s->dscr_per_thread = 2 * (lines > block ? lines : block);
    s->z = er_alloc_large(n, sizeof *s->z);
    s->acc = er_alloc_large(n, sizeof *s->acc);
    s->q = er_alloc_large(n, sizeof *s->q);
    s->rdir = er_alloc_large(n, 1);
    s->dmask = er_alloc_large(n, 1);
    s->stack = er_alloc_large(n, sizeof *s->stack);
    s->bcells = er_alloc_large(n, sizeof *s->bcells);
    s->basin = er_calloc_large(n, sizeof *s->basin);
    s->kind = er_alloc_large(n, 1);
    s->lake = er_calloc_large(n, 1);
    s->dscr = malloc((size_t)s->threads * s->dscr_per_thread * sizeof *s->dscr);
    s->sums = malloc((3 * (size_t)s->h + (size_t)s->w) * sizeof *s->sums);
    s->row_at = malloc(((size_t)s->h + 1) * sizeof *s->row_at);
    s->radix = malloc((size_t)s->threads * 256 * sizeof *s->radix);
    int ok = s->z && s->acc && s->q && s->rdir && s->dmask && s->stack && s->bcells &&
             s->basin && s->kind && s->lake && s->dscr && s->sums && s->row_at && s->radix;
    for (int k = 0; k < 8; k++)
        s->off[k] = (int64_t)er_sp_dy[k] * s->w + er_sp_dx[k];
    s->seed = plan->p.seed;
    s->routing = p->routing;
    s->spread = p->routing_spread;
    if (ok && ((c && (c->hardness || c->mask)) || p->lithology > 0.0)) {
        if ((s->ks = er_alloc_large(n, sizeof *s->ks)) != NULL) {
            const float *hard = c ? c->hardness : NULL, *mask = c ? c->mask : NULL;
            ER_OMP_FOR()
            for (int64_t i = 0; i < s->n; i++)
                s->ks[i] = (hard ? 1.0f - hard[i] : 1.0f) * (mask ? mask[i] : 1.0f);
            if (p->lithology > 0.0)
                er_sp_lithology(s, p, s->ks);
        }
        ok = s->ks != NULL;
    }
    const size_t tab = n + 1 < ER_SP_POW_TABLE ? n + 1 : ER_SP_POW_TABLE;
    if (ok && !(c && c->rain) && (s->pow_tab = malloc(tab * sizeof *s->pow_tab)) == NULL)
        ok = 0;
    if (!ok)
        return er_fail(err, ER_ENOMEM, "stream_power: out of memory for a %dx%d map", s->w, s->h);
    s->mask = c ? c->mask : NULL;
    s->rain = c ? c->rain : NULL;
    s->uplift = c ? c->uplift : NULL;
    s->pow_a = er_sp_pow(s->area, p->m);
    s->width_w1 = p->channel_width;
    s->width_b = p->width_exponent;
    if (s->pow_tab) {
        ER_OMP_FOR()
        for (size_t k = 0; k < tab; k++)
            s->pow_tab[k] = er_sp_pow((double)k, p->m) * er_sp_width_share(s, (double)k);
    }
    cell_kinds(s, t, p->boundary);
    for (int64_t i = 0; t->wall && i < s->n && !s->walls; i++)
        s->walls = t->wall[i] != 0;
    ER_OMP_FOR()
    for (int64_t i = 0; i < s->n; i++)
        s->z[i] = s->kind[i] == ER_SP_WALL ? 0.0 : (double)t->elevation[i];
    s->wear = ly ? ly->wear : NULL;
    s->dep = ly ? ly->sediment : NULL;
    if (s->wear)
        memset(s->wear, 0, n * sizeof *s->wear);
    if (s->dep)
        memset(s->dep, 0, n * sizeof *s->dep);
    return ER_OK;
}

/* The cell across the edge from edge cell (x, y), inwards. */
static int64_t inward(const er_sp_sim *s, int x, int y)
{
    const int ix = x == 0 ? 1 : x == s->w - 1 ? s->w - 2 : x;
    const int iy = y == 0 ? 1 : y == s->h - 1 ? s->h - 2 : y;
    return (int64_t)iy * s->w + ix;
}

/* Edge cell (x, y) lowered to its inward neighbour, when that is lower
 * and valid (by the mask's share of the difference); returns the height
 * it lost. */
static double follow_cell(er_sp_sim *s, int x, int y)
{
    const int64_t i = (int64_t)y * s->w + x, j = inward(s, x, y);
    if (s->kind[i] != ER_SP_BASE || s->kind[j] == ER_SP_WALL || !(s->z[j] < s->z[i]))
        return 0.0;
    const double d = (s->z[i] - s->z[j]) * (s->mask ? (double)s->mask[i] : 1.0);
    s->z[i] -= d;
    if (s->wear)
        s->wear[i] += (float)d;
    return d;
}

/*
 * stream_power.base_level "follow": each base-level cell of the map's
 * edges lowered, after each step, to the height of its inward neighbour
 * where that is lower (an open edge: a ridge or peak of the input on the
 * edge wears down with the land behind it, while the edge cells below
 * their neighbours stay the base level that rivers leave by).  Held at
 * their input heights, such cells stand as a rim of untouched input round
 * a map whose inside has worn down; set to one low level, every edge cell
 * becomes an outlet and a comb of parallel gullies cuts in from all sides.
 * Rows 0 and h - 1 first, then the columns' other cells, each cell from
 * the heights of the step (its inward neighbour is never an edge cell on
 * a map of at least 3 x 3).  Returns the material taken off [m * cells],
 * which leaves the map at base level.
 */
static double follow_edges(er_sp_sim *s)
{
    const int w = s->w, h = s->h;
    double lost = 0.0;
    if (w < 3 || h < 3)
        return 0.0;
    for (int x = 0; x < w; x++)
        lost += follow_cell(s, x, 0) + follow_cell(s, x, h - 1);
    for (int y = 1; y < h - 1; y++)
        lost += follow_cell(s, 0, y) + follow_cell(s, w - 1, y);
    return lost;
}

double er_sp_uplift(er_sp_sim *s, const er_stream_power_params *p)
{
    const int w = s->w, h = s->h;
    const double u = p->uplift * p->dt;
    double *rows = s->sums, sum = 0.0;
    if (!(u > 0.0))
        return 0.0;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        double r = 0.0;
        for (int64_t i = (int64_t)y * w; i < (int64_t)(y + 1) * w; i++) {
            if (s->kind[i] != ER_SP_FREE)
                continue;
            double du = s->mask ? u * (double)s->mask[i] : u;
            if (s->uplift)
                du *= (double)s->uplift[i];
            s->z[i] += du;
            r += du;
        }
        rows[y] = r;
    }
    for (int y = 0; y < h; y++)
        sum += rows[y];
    return sum;
}

/* Material cut by a breach: eroded, and gone at base level. */
static void count_cut(er_sp_tally *t, double d)
{
    t->eroded += d;
    t->left += d;
}

/* stream_power.depressions "drain" after the last step: the final
 * heights routed once more and their basins cut, so that the output
 * keeps none of the hollows the last step's incision, deposition and
 * creep left. */
static er_status drain_last(er_sp_sim *s, const er_stream_power_params *p, er_sp_tally *t,
                            er_error *err)
{
    er_status st = er_sp_route_receivers(s, err);
    if (!st)
        st = er_sp_route_depressions(s, 0, err);
    if (!st)
        count_cut(t, er_sp_breach(s, p->breach_grade, p->base_level == ER_SP_LEVEL_FOLLOW));
    return st;
}

/* One step; `last`: the run's last. */
static er_status step(er_sp_sim *s, const er_plan *plan, er_budget *bud, int last, er_error *err)
{
    const er_stream_power_params *p = &plan->p.stream_power;
    const int follow = p->base_level == ER_SP_LEVEL_FOLLOW;
    const int drain = p->depressions == ER_SP_DEPR_DRAIN;
    er_sp_tally t = {0, 0, 0, 0};
    t.uplifted = er_sp_uplift(s, p);
    if (p->k > 0.0) {
        er_status st = er_sp_route(s, p->g > 0.0 && !drain, err);
        if (st)
            return st;
        if (drain)
            count_cut(&t, er_sp_drain(s, p->breach_grade, follow));
        er_sp_incise(s, p, &t);
    }
    if (p->kd > 0.0 || p->sc > 0.0)
        er_sp_diffuse(s, p, &t);
    if (p->k > 0.0 && p->depressions == ER_SP_DEPR_BREACH)
        count_cut(&t, er_sp_breach(s, p->breach_grade, follow));
    if (p->k > 0.0 && drain && last) {
        er_status st = drain_last(s, p, &t, err);
        if (st)
            return st;
    }
    if (follow)
        count_cut(&t, follow_edges(s));
    *er_budget_term(bud, ER_SP_UPLIFTED) += t.uplifted;
    bud->eroded += t.eroded;
    bud->deposited += t.deposited;
    bud->left_map += t.left;
    bud->work_done++;
    bud->substeps++;
    return ER_OK;
}

/* The lake depths [m] and drainage areas [m^2] of the routing of the
 * current heights (either may be NULL). */
static er_status route_layers(er_sp_sim *s, float *water, float *flow, er_error *err)
{
    if (!water && !flow)
        return ER_OK;
    er_status st = er_sp_route(s, 0, err);
    if (st)
        return st;
    ER_OMP_FOR()
    for (int64_t i = 0; i < s->n; i++) {
        const int valid = s->kind[i] != ER_SP_WALL;
        if (water)
            water[i] = s->lake[i] ? (float)(s->basins[s->basin[i]].level - s->z[i]) : 0.0f;
        if (flow)
            flow[i] = valid ? (float)(s->area * s->acc[i]) : 0.0f;
    }
    return ER_OK;
}

/* Writes the heights back and completes the budget. */
static void finish(er_sp_sim *s, const er_plan *plan, er_terrain *t, er_budget *bud)
{
    const int w = s->w, h = s->h;
    double *rows = s->sums, after = 0.0;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        double r = 0.0;
        for (int64_t i = (int64_t)y * w; i < (int64_t)(y + 1) * w; i++) {
            if (s->kind[i] == ER_SP_WALL)
                continue;
            const float f = (float)s->z[i];
            t->elevation[i] = f;
            r += (double)f;
        }
        rows[y] = r;
    }
    for (int y = 0; y < h; y++)
        after += rows[y];
    bud->material_before = plan->sum;
    bud->material_after = after;
    bud->rel_error = er_budget_rel_error(bud, plan->abs_sum);
}

/* A run through the driver (core/drive.h). */
typedef struct sp_run {
    er_sp_sim s;
    const er_plan *plan;
    er_terrain *t;
    const er_layers *layers;
    float *lay;    /* the height and water layers of a view (2 w h floats) */
    double added;  /* the material uplifted, the view's model section */
    er_run_extra x;
} sp_run;

static er_status run_init(void *run, void *backend, const er_plan *plan, er_terrain *t,
                          const er_run_opts *o, er_budget *bud, er_error *err)
{
    (void)backend; /* the CPU */
    sp_run *r = run;
    r->plan = plan;
    r->t = t;
    r->layers = o->layers;
    *er_budget_term(bud, ER_SP_UPLIFTED) = 0.0; /* reported also when nothing ran */
    er_status st = er_sp_init(&r->s, plan, t, o->layers, err);
    if (!st && o->hooks && o->hooks->boundary &&
        !(r->lay = malloc(2 * (size_t)r->s.n * sizeof *r->lay)))
        st = er_fail(err, ER_ENOMEM, "stream_power: out of memory for the run state");
    return st;
}

/* The run's state after `step` steps (core/model.h, state.h): its height
 * and water layers drawn into r->lay. */
static er_status run_view(void *run, int64_t step, const er_budget *bud, er_run_state *v,
                          er_error *err)
{
    sp_run *r = run;
    er_sp_sim *s = &r->s;
    const size_t n = (size_t)s->n;
    er_status st = route_layers(s, r->lay + n, NULL, err);
    if (st)
        return st;
    ER_OMP_FOR()
    for (int64_t i = 0; i < s->n; i++)
        r->lay[i] = (float)s->z[i];
    r->added = er_budget_term_value(bud, ER_SP_UPLIFTED);
    memset(&r->x, 0, sizeof r->x);
    r->x.count[0] = (uint64_t)n;
    r->x.n_parts = ER_SP_PARTS;
    r->x.part[ER_SP_PART_Z] = s->z;
    r->x.len[ER_SP_PART_Z] = n;
    r->x.part[ER_SP_PART_UPLIFTED] = &r->added;
    r->x.len[ER_SP_PART_UPLIFTED] = 1;
    memset(v, 0, sizeof *v);
    v->model = r->plan->p.model;
    v->width = s->w;
    v->height = s->h;
    v->boundary = v->done = step;
    v->boundaries = v->total = r->plan->boundaries;
    v->budget = *bud;
    v->budget.material_before = r->plan->sum;
    v->budget.material_after = v->budget.rel_error = 0.0;
    v->n_arrays = ER_STATE_SP_ARRAYS;
    v->array[ER_STATE_SP_HEIGHT] = r->lay;
    v->array[ER_STATE_SP_WATER] = r->lay + n;
    v->array[ER_STATE_SP_SEDIMENT] = s->dep;
    v->array[ER_STATE_SP_WEAR] = s->wear;
    v->extra = &r->x;
    return ER_OK;
}

/* Replaces the fresh state by the resumed one (checked here by
 * er_plan_check_resume). */
static er_status run_load(void *run, const er_run_state *rs, er_budget *bud, er_error *err)
{
    sp_run *r = run;
    er_sp_sim *s = &r->s;
    const er_layers keep = {NULL, s->dep, NULL, s->wear};
    er_status st = er_plan_check_resume(r->plan, r->t, rs, &keep, err);
    if (st)
        return st;
    const size_t n = (size_t)s->n, len[ER_SP_PARTS] = {n, 1};
    const double *at[ER_SP_PARTS];
    er_extra_split(rs->extra, len, ER_SP_PARTS, at); /* checked above */
    for (size_t i = 0; i < n; i++)
        if (s->kind[i] != ER_SP_WALL)
            s->z[i] = at[ER_SP_PART_Z][i];
    if (s->dep)
        memcpy(s->dep, rs->array[ER_STATE_SP_SEDIMENT], n * sizeof *s->dep);
    if (s->wear)
        memcpy(s->wear, rs->array[ER_STATE_SP_WEAR], n * sizeof *s->wear);
    *bud = rs->budget;
    *er_budget_term(bud, ER_SP_UPLIFTED) = at[ER_SP_PART_UPLIFTED][0];
    return ER_OK;
}

static er_status run_advance(void *run, int64_t b, er_drive *d, er_budget *bud, int64_t *to,
                             er_error *err)
{
    sp_run *r = run;
    (void)d;
    *to = b + 1;
    return step(&r->s, r->plan, bud, *to == r->plan->boundaries, err);
}

static er_status run_finish(void *run, er_status st, int started, er_budget *bud, er_error *err)
{
    sp_run *r = run;
    if (st == ER_ENOMEM || !started || !r->s.z)
        return st;
    const er_layers *ly = r->layers;
    er_error e2;
    if (route_layers(&r->s, ly ? ly->water : NULL, ly ? ly->flow : NULL, &e2) && !st)
        st = er_fail(err, ER_ENOMEM, "%s", e2.msg);
    finish(&r->s, r->plan, r->t, bud);
    return st;
}

static void run_release(void *run)
{
    sp_run *r = run;
    free(r->lay);
    er_sp_free(&r->s);
}

const er_model_steps er_sp_steps = {
    .size = sizeof(sp_run),
    .init = run_init,
    .load = run_load,
    .advance = run_advance,
    .view = run_view,
    .finish = run_finish,
    .release = run_release,
};
