/*
 * Staged recipes and runs (stages.h).
 */
#include "stages.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "models.h"
#include "parallel.h"

void er_stages_single(er_stages *r, const er_params *p)
{
    memset(r, 0, sizeof *r);
    r->top = *p;
}

int er_stage_holds_section(er_model_kind m, er_model_kind section)
{
    return m == section;
}

/* Whether text starts with a model's section and a dot ("droplet."). */
static int starts_with_section(const char *text)
{
    for (int m = 0; m < ER_MODEL_KINDS; m++) {
        const char *name = er_model_name((er_model_kind)m);
        size_t len = strlen(name);
        if (strncmp(text, name, len) == 0 && text[len] == '.')
            return 1;
    }
    return 0;
}

void er_stages_name_error(const er_stages *r, int k, er_error *err)
{
    char msg[ER_ERROR_MAX];
    size_t used = 0;
    if (!err || r->n == 0)
        return;
    /* a model's hint "-s droplet.height_unit=1000" becomes the stage's,
     * "-s stages.1.droplet.height_unit=1000" */
    for (const char *c = err->msg; *c && used + 1 < sizeof msg;) {
        if (strncmp(c, "-s ", 3) == 0 && starts_with_section(c + 3)) {
            int w = snprintf(msg + used, sizeof msg - used, "-s stages.%d.", k);
            if (w < 0 || (size_t)w >= sizeof msg - used)
                break;
            used += (size_t)w;
            c += 3;
            continue;
        }
        msg[used++] = *c++;
    }
    msg[used] = '\0';
    er_fail(err, ER_EINVAL, er_error_names_key(msg) ? "stages[%d].%s" : "stages[%d]: %s", k, msg);
}

er_status er_stages_check(const er_stages *r, int tiled, er_error *err)
{
    for (int k = 0; k < er_stages_count(r); k++) {
        const er_params *p = er_stages_at(r, k);
        const er_model_ops *m = er_model(p->model);
        er_status st = m && m->check ? m->check(p, tiled, err) : ER_OK;
        if (st) {
            er_stages_name_error(r, k, err);
            return st;
        }
    }
    return ER_OK;
}

/* ------------------------------------------------------------------ */
/* Plans                                                                */

er_status er_stages_plan(const er_stages *r, const er_terrain *t,
                         const er_controls *const *controls, const er_window *win,
                         er_staged_plan *out, er_error *err)
{
    memset(out, 0, sizeof *out);
    out->n = er_stages_count(r);
    out->staged = r->n > 0;
    out->windowed = win != NULL;
    if (win)
        out->win = *win;
    for (int k = 0; k < out->n; k++) {
        er_terrain tk = *t;
        tk.controls = controls ? controls[k] : NULL;
        out->p[k] = *er_stages_at(r, k);
        out->controls[k] = tk.controls;
        er_status st = er_plan_make(&out->p[k], &tk, win, &out->plan[k], err);
        if (st) {
            er_stages_name_error(r, k, err);
            return st;
        }
        out->offset[k] = out->boundaries;
        out->boundaries += out->plan[k].boundaries;
    }
    return ER_OK;
}

int64_t er_stages_boundary(const er_staged_plan *sp, const er_run_state *s)
{
    const er_run_stage *g = s->stage;
    return g && g->index >= 0 && g->index < sp->n ? sp->offset[g->index] + s->boundary
                                                  : s->boundary;
}

size_t er_stages_bytes_per_cell(const er_stages *r, int flow, int wear, int no_layers)
{
    size_t most = 0;
    for (int k = 0; k < er_stages_count(r); k++) {
        size_t b = er_plan_bytes_per_cell(er_stages_at(r, k));
        most = b > most ? b : most;
    }
    if (r->n == 0)
        return most;
    /* the heights a stage started from, the sums over the stages, the
     * layers a stage writes when the caller keeps none */
    return most + sizeof(float) * (1 + (size_t)!!flow + (size_t)!!wear + (no_layers ? 2u : 0u));
}

size_t er_stages_bytes_fixed(const er_stages *r, char *what, size_t n)
{
    size_t most = 0;
    char one[128];
    if (n > 0)
        what[0] = '\0';
    for (int k = 0; k < er_stages_count(r); k++) {
        size_t b = er_plan_bytes_fixed(er_stages_at(r, k), one, sizeof one);
        if (b > most) {
            most = b;
            if (n > 0)
                snprintf(what, n, "%s", one);
        }
    }
    return most;
}

/* ------------------------------------------------------------------ */
/* What the stages before a state's leave (er_run_stage.values)        */

/* Doubles a stage's report takes in er_run_stage.values: 14 numbers,
 * then each budget term's name, a character a value (0 after its end),
 * and its value. */
#define REPORT_COMMON 14
#define TERM_VALUES (ER_TERM_NAME + 1)
#define REPORT_VALUES (REPORT_COMMON + ER_BUDGET_TERMS * TERM_VALUES)
/* The report of checkpoints of format 5, whose values 11 and 15 were
 * terms of a model's own (its ops' old_terms read them). */
#define OLD_REPORT_VALUES 16

static void pack_report(const er_stage_report *r, double *v)
{
    const er_budget *b = &r->budget;
    const double x[REPORT_COMMON] = {
        (double)r->model, b->material_before, b->material_after, b->left_map, b->eroded,
        b->deposited, b->water_added, b->water_left, b->rel_error, (double)b->work_done,
        (double)b->substeps, (double)r->changed_cells, r->settled, r->water_dropped};
    memcpy(v, x, sizeof x);
    for (int i = 0; i < ER_BUDGET_TERMS; i++) {
        double *t = v + REPORT_COMMON + i * TERM_VALUES;
        for (int c = 0; c < ER_TERM_NAME; c++)
            t[c] = (double)(unsigned char)b->term[i].name[c];
        t[ER_TERM_NAME] = b->term[i].value;
    }
}

/* Whether v holds a count: finite, >= 0, an integer a double holds exactly. */
static int is_count(double v)
{
    return isfinite(v) && v >= 0 && v == floor(v) && v <= 9e15;
}

/* The common numbers of a report, in the order of `at` (its places in v:
 * model, material before and after, left_map, eroded, deposited, water
 * added and left, rel_error, work done, substeps, changed cells, settled,
 * water dropped); -1 when they are none a run writes (not finite, a
 * negative amount or count, a count that is no integer; the material and
 * left_map, the net flux over the edges, may be negative). */
static int unpack_common(const double *v, const int *at, er_stage_report *r)
{
    for (int i = 0; i < REPORT_COMMON; i++)
        if (!isfinite(v[at[i]]) || (i > 3 && v[at[i]] < 0))
            return -1;
    if (!is_count(v[at[0]]) || !is_count(v[at[9]]) || !is_count(v[at[10]]) ||
        !is_count(v[at[11]]))
        return -1;
    memset(r, 0, sizeof *r);
    r->model = (er_model_kind)(int)v[at[0]];
    er_budget *b = &r->budget;
    b->material_before = v[at[1]];
    b->material_after = v[at[2]];
    b->left_map = v[at[3]];
    b->eroded = v[at[4]];
    b->deposited = v[at[5]];
    b->water_added = v[at[6]];
    b->water_left = v[at[7]];
    b->rel_error = v[at[8]];
    b->work_done = (int64_t)v[at[9]];
    b->substeps = (int64_t)v[at[10]];
    r->changed_cells = (int64_t)v[at[11]];
    r->settled = v[at[12]];
    r->water_dropped = v[at[13]];
    r->ran = 1;
    return 0;
}

/* Unpacks term i of a report into b; -1 when it is none a run writes (a
 * name of other than printable characters, or unterminated). */
static int unpack_term(const double *t, er_budget *b, int i)
{
    int end = 0;
    for (int c = 0; c < ER_TERM_NAME; c++) {
        const double ch = t[c];
        if (ch != floor(ch) || ch < 0 || ch > 126 || (ch > 0 && ch < 32) || (end && ch != 0))
            return -1;
        end |= ch == 0;
        b->term[i].name[c] = (char)ch;
    }
    if (!end || !isfinite(t[ER_TERM_NAME]) || (!b->term[i].name[0] && t[ER_TERM_NAME] != 0))
        return -1;
    b->term[i].value = t[ER_TERM_NAME];
    return 0;
}

/* Unpacks the report of v (REPORT_VALUES of them, or OLD_REPORT_VALUES
 * when `old`, of a stage of recipe p); -1 when its values are none a run
 * writes. */
static int unpack_report(const double *v, int old, const er_params *p, er_stage_report *r)
{
    static const int at[REPORT_COMMON] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    static const int old_at[REPORT_COMMON] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14};
    if (unpack_common(v, old ? old_at : at, r) || r->model != p->model)
        return -1;
    if (old) {
        const er_model_ops *m = er_model(p->model);
        const double terms[ER_OLD_TERMS] = {v[11], v[15]};
        if (!isfinite(v[11]) || !isfinite(v[15]) || v[11] < 0 || v[15] < 0)
            return -1;
        if (m->old_terms)
            m->old_terms(p, &r->budget, terms);
        return 0;
    }
    for (int i = 0; i < ER_BUDGET_TERMS; i++)
        if (unpack_term(v + REPORT_COMMON + i * TERM_VALUES, &r->budget, i))
            return -1;
    return 0;
}

/* The doubles each report of a state's stage section takes: REPORT_VALUES,
 * or OLD_REPORT_VALUES in a checkpoint of format 5; 0 when its n_values
 * is neither for k reports. */
static size_t report_values(const er_run_stage *g, int k)
{
    if (k == 0 || g->n_values == (size_t)k * REPORT_VALUES)
        return REPORT_VALUES;
    return g->n_values == (size_t)k * OLD_REPORT_VALUES ? OLD_REPORT_VALUES : 0;
}

/* Whether stage k's flow adds to that of stage k - 1 (both metres of
 * water, or both drainage areas: ER_MODEL_FLOW_AREA). */
static int flow_adds(const er_staged_plan *sp, int k)
{
    if (k == 0)
        return 0;
    const unsigned a = er_model(sp->p[k - 1].model)->flags & ER_MODEL_FLOW_AREA;
    const unsigned b = er_model(sp->p[k].model)->flags & ER_MODEL_FLOW_AREA;
    return a == b;
}

/* The layers stage k of a staged run writes: water and sediment into the
 * run's, flow and wear into the caller's. */
static er_layers stage_layers(float *water, float *sediment, const er_layers *keep)
{
    er_layers l = {water, sediment, keep ? keep->flow : NULL, keep ? keep->wear : NULL};
    return l;
}

/* A pointer to floats read only, as the plan's terrain takes them. */
static float *read_only(const float *v)
{
    float *p;
    memcpy(&p, &v, sizeof p); /* er_plan_make reads the terrain, never writes it */
    return p;
}

/* Stage k's plan made again on terrain t, whose heights are those the
 * stage starts from; errors name the stage. */
static er_status replan(const er_staged_plan *sp, int k, const er_terrain *t, er_plan *plan,
                        er_error *err)
{
    er_terrain tk = *t;
    tk.controls = sp->controls[k];
    er_status st = er_plan_make(&sp->p[k], &tk, sp->windowed ? &sp->win : NULL, plan, err);
    if (!st && plan->boundaries != sp->plan[k].boundaries)
        st = er_fail(err, ER_EINVAL, "planned again on the terrain it starts from, it has %lld "
                     "boundaries, not %lld", (long long)plan->boundaries,
                     (long long)sp->plan[k].boundaries);
    return st;
}

/* The reports of the stages before state g's, each one that fits. */
static er_status check_reports(const er_staged_plan *sp, const er_run_stage *g, er_error *err)
{
    const int k = g->index;
    const size_t nv = report_values(g, k);
    if (!nv || (k > 0 && !g->values))
        return er_fail(err, ER_EINVAL, "the state's reports of the stages before it do not fit");
    for (int j = 0; j < k; j++) {
        er_stage_report rep;
        if (unpack_report(g->values + (size_t)j * nv, nv == OLD_REPORT_VALUES, &sp->p[j], &rep))
            return er_fail(err, ER_EINVAL, "the state's report of stage %d does not fit", j);
    }
    if (g->n_arrays != ER_STAGE_ARRAYS || (k > 0 && !g->array[0]))
        return er_fail(err, ER_EINVAL, "the state lacks the heights its stage started from");
    return ER_OK;
}

/* The heights state g's stage started from, on t's valid cells: within
 * the bounds of the stages before it run one after the other from t's
 * heights (each model's height_bound). */
static er_status check_start(const er_staged_plan *sp, const er_terrain *t,
                             const er_run_stage *g, er_error *err)
{
    er_height_range h = er_plan_heights(&sp->plan[0]);
    for (int j = 0; j < g->index; j++)
        er_height_bound(&sp->plan[j], sp->controls[j], &h);
    const er_state_values v = {"height its stage started from", g->array[0], NULL, NULL, 1.0,
                               h.lo, h.hi};
    return g->index > 0 ? er_state_check_values(t, &v, err) : ER_OK;
}

/* The flow and wear of the stages before state g's that the caller
 * keeps, sums of layers >= 0, on t's valid cells. */
static er_status check_layers_before(const er_terrain *t, const er_run_stage *g,
                                     const er_layers *keep, er_error *err)
{
    const char *name[] = {"flow of the stages before it", "wear of the stages before it"};
    float *want[] = {keep ? keep->flow : NULL, keep ? keep->wear : NULL};
    er_status st = ER_OK;
    for (int i = 0; i < 2 && !st; i++) {
        if (!want[i] || g->index == 0)
            continue;
        if (!g->array[1 + i])
            return er_fail(err, ER_EINVAL, "the state has no %s layer (its run did not keep "
                           "it): resume without it, or start again", i ? "wear" : "flow");
        const er_state_values v = {name[i], g->array[1 + i], NULL, NULL, 1.0, 0.0, HUGE_VAL};
        st = er_state_check_values(t, &v, err);
    }
    return st;
}

er_status er_stages_check_resume(const er_staged_plan *sp, const er_terrain *t,
                                 const er_run_state *r, const er_layers *keep, er_error *err)
{
    const er_run_stage *g = r->stage;
    if (!sp->staged) {
        if (g)
            return er_fail(err, ER_EINVAL, "the state is a staged run's, the recipe has no "
                           "stages");
        return er_plan_check_resume(&sp->plan[0], t, r, keep, err);
    }
    if (!g)
        return er_fail(err, ER_EINVAL, "the state is a run of one model's, the recipe has "
                       "stages");
    if (g->count != sp->n || g->index < 0 || g->index >= sp->n)
        return er_fail(err, ER_EINVAL, "the state is of stage %d of %d, the recipe has %d "
                       "stages", g->index, g->count, sp->n);
    const int k = g->index;
    er_status st = check_reports(sp, g, err);
    if (!st)
        st = check_layers_before(t, g, keep, err);
    if (st)
        return st;
    er_plan plan;
    er_terrain tk = *t;
    tk.controls = sp->controls[k];
    if (k > 0)
        tk.elevation = read_only(g->array[0]);
    st = k > 0 ? replan(sp, k, &tk, &plan, err) : ER_OK;
    if (st) { /* the plan's line after this prefix (never err->msg as an argument of the
               * er_fail that writes it: the formatter would read what it overwrites) */
        char prefix[64];
        snprintf(prefix, sizeof prefix, "stage %d: the heights it started from", k);
        er_error_prefix(err, prefix);
        return st;
    }
    if ((st = check_start(sp, t, g, err)))
        return st;
    float dummy = 0;
    er_layers lk = stage_layers(&dummy, &dummy, keep);
    return er_plan_check_resume(k > 0 ? &plan : &sp->plan[0], &tk, r, &lk, err);
}

/* ------------------------------------------------------------------ */
/* The run                                                              */

typedef struct runner {
    const er_staged_plan *sp;
    const er_stages_opts *o;
    er_terrain *t;
    size_t cells;
    float *start;               /* the heights the running stage started from */
    float *flow_sum, *wear_sum; /* the stages' before it (as far as they add up) */
    float *water, *sediment;    /* what the stages write: the caller's layers, or own */
    float *own[2];
    double *rows;               /* per-row sums (height rows) */
    er_run_stage pos;           /* handed with each state of the running stage */
    int skip_start;             /* its boundary 0 is the previous stage's end, handed */
    double values[ER_MAX_STAGES * REPORT_VALUES];
    er_stage_report *rep;       /* ER_MAX_STAGES */
} runner;

static int tramp_boundary(void *user, const er_run_state *s)
{
    runner *R = user;
    const er_run_hooks *h = R->o->hooks;
    if (R->skip_start && s->boundary == 0)
        return 0;
    er_run_state v = *s;
    v.stage = &R->pos;
    return h->boundary ? h->boundary(h->user, &v) : 0;
}

static int tramp_wants(void *user, int64_t boundary, int64_t boundaries)
{
    runner *R = user;
    const er_run_hooks *h = R->o->hooks;
    (void)boundaries;
    if (R->skip_start && boundary == 0)
        return 0;
    return !h->wants || h->wants(h->user, R->pos.offset + boundary, R->pos.boundaries);
}

/* Sums of the rows of a layer over the valid cells in fixed order: rows
 * in parallel, added serially (the same for any thread count). */
static double valid_sum(const runner *R, const float *v)
{
    const int w = R->t->width, h = R->t->height;
    const uint8_t *wall = R->t->wall;
    double s = 0;
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        double r = 0;
        for (size_t i = (size_t)y * (size_t)w, e = i + (size_t)w; i < e; i++)
            if (!(wall && wall[i]))
                r += (double)v[i];
        R->rows[y] = r;
    }
    for (int y = 0; y < h; y++)
        s += R->rows[y];
    return s;
}

/* The end of a standing-water stage that another follows: the suspended
 * load settles where it is (b + s, b kept where s is 0 so that -0 stays
 * -0, as Mei's own copy-out), the water is dropped. */
static void settle(runner *R, er_stage_report *rep)
{
    float *b = R->t->elevation;
    const uint8_t *wall = R->t->wall;
    rep->settled = valid_sum(R, R->sediment);
    rep->water_dropped = valid_sum(R, R->water);
    rep->budget.deposited += rep->settled;
    const long n = (long)R->cells;
    ER_OMP_FOR()
    for (long i = 0; i < n; i++) {
        if (!(wall && wall[i]) && R->sediment[i] != 0.0f)
            b[i] = b[i] + R->sediment[i];
        R->sediment[i] = 0.0f;
        R->water[i] = 0.0f;
    }
}

static int64_t changed_cells(const runner *R)
{
    const float *b = R->t->elevation, *s = R->start;
    const uint8_t *wall = R->t->wall;
    const long n = (long)R->cells;
    int64_t c = 0;
    ER_OMP_FOR(reduction(+ : c))
    for (long i = 0; i < n; i++)
        c += !(wall && wall[i]) && fabs((double)b[i] - (double)s[i]) >= ER_STAGE_CHANGED;
    return c;
}

/* Adds a stage's layer to the sum over the stages before it (restarting
 * the sum when it does not add up), or at the last stage the sum to the
 * layer, which the caller writes. */
static void add_up(float *sum, float *layer, size_t n, int adds, int last)
{
    const long cells = (long)n;
    if (!sum || !layer)
        return;
    ER_OMP_FOR()
    for (long i = 0; i < cells; i++) {
        float before = adds ? sum[i] : 0.0f;
        if (last)
            layer[i] = before + layer[i];
        else
            sum[i] = before + layer[i];
    }
}

/* What stage k leaves once its model has run: the settled load, its
 * report, its layers added up. */
static void end_stage(runner *R, int k)
{
    const er_staged_plan *sp = R->sp;
    er_stage_report *rep = &R->rep[k];
    const er_layers *keep = R->o->layers;
    const int last = k == sp->n - 1;
    if (!last && (er_model(sp->p[k].model)->flags & ER_MODEL_SUSPENDED_LOAD))
        settle(R, rep);
    rep->changed_cells = changed_cells(R);
    rep->ran = 1;
    pack_report(rep, R->values + (size_t)k * REPORT_VALUES);
    add_up(R->flow_sum, keep ? keep->flow : NULL, R->cells, flow_adds(sp, k), last);
    add_up(R->wear_sum, keep ? keep->wear : NULL, R->cells, k > 0, last);
}

/* The whole run's budget from the reports of stages 0 .. last; abs_sum:
 * the run input's sum of |height| (er_budget_rel_error). */
static void total_budget(const er_stage_report *rep, int last, double abs_sum, er_budget *b)
{
    memset(b, 0, sizeof *b);
    if (last < 0)
        return;
    b->material_before = rep[0].budget.material_before;
    b->material_after = rep[last].budget.material_after;
    for (int k = 0; k <= last; k++) {
        const er_budget *s = &rep[k].budget;
        b->left_map += s->left_map;
        b->eroded += s->eroded;
        b->deposited += s->deposited;
        b->water_added += s->water_added;
        b->water_left += s->water_left;
        er_budget_add_terms(b, s);
        b->work_done += s->work_done;
        b->substeps += s->substeps;
    }
    b->rel_error = er_budget_rel_error(b, abs_sum);
}

static void runner_free(runner *R)
{
    free(R->start);
    free(R->flow_sum);
    free(R->wear_sum);
    free(R->own[0]);
    free(R->own[1]);
    free(R->rows);
}

static er_status runner_alloc(runner *R, er_error *err)
{
    const er_layers *l = R->o->layers;
    int ok = (R->start = er_alloc_large(R->cells, sizeof(float))) != NULL &&
             (R->rows = malloc((size_t)R->t->height * sizeof(double))) != NULL;
    if (ok && l && l->flow)
        ok = (R->flow_sum = er_calloc_large(R->cells, sizeof(float))) != NULL;
    if (ok && l && l->wear)
        ok = (R->wear_sum = er_calloc_large(R->cells, sizeof(float))) != NULL;
    R->water = l && l->water ? l->water : (R->own[0] = er_calloc_large(R->cells, sizeof(float)));
    R->sediment = l && l->sediment ? l->sediment
                                   : (R->own[1] = er_calloc_large(R->cells, sizeof(float)));
    if (ok && R->water && R->sediment)
        return ER_OK;
    return er_fail(err, ER_ENOMEM, "stages: out of memory for a %dx%d map", R->t->width,
                   R->t->height);
}

/* Takes up a resumed state's stage: its heights, sums and reports. */
static int resume_stage(runner *R, const er_run_state *r)
{
    const er_run_stage *g = r->stage;
    const size_t bytes = R->cells * sizeof(float);
    const int k = g->index;
    if (k > 0)
        memcpy(R->t->elevation, g->array[0], bytes);
    if (k > 0 && R->flow_sum)
        memcpy(R->flow_sum, g->array[1], bytes);
    if (k > 0 && R->wear_sum)
        memcpy(R->wear_sum, g->array[2], bytes);
    const size_t nv = report_values(g, k);
    for (int j = 0; j < k; j++) {
        unpack_report(g->values + (size_t)j * nv, nv == OLD_REPORT_VALUES, &R->sp->p[j], &R->rep[j]);
        pack_report(&R->rep[j], R->values + (size_t)j * REPORT_VALUES);
    }
    return k;
}

/* Runs stage k of the plan; `first`: the first this call runs (its
 * boundary 0 is handed, and a resume state goes to it). */
static er_status run_stage(runner *R, const er_stage_backend *where, int k, int first,
                           const er_run_state *resume, er_error *err)
{
    const er_staged_plan *sp = R->sp;
    const er_stages_opts *o = R->o;
    er_plan plan;
    er_status st = ER_OK;
    memcpy(R->start, R->t->elevation, R->cells * sizeof(float));
    if (k > 0 && (st = replan(sp, k, R->t, &plan, err)))
        return st;
    er_terrain tk = *R->t;
    tk.controls = sp->controls[k];
    const er_layers *keep = o->layers;
    R->pos = (er_run_stage){k, sp->n, sp->offset[k], sp->boundaries, ER_STAGE_ARRAYS,
                            {k > 0 ? R->start : NULL, k > 0 ? R->flow_sum : NULL,
                             k > 0 ? R->wear_sum : NULL},
                            (size_t)k * REPORT_VALUES, R->values};
    R->skip_start = !first;
    er_run_hooks hk = {tramp_boundary, R, first ? resume : NULL, tramp_wants};
    er_layers lk = stage_layers(R->water, R->sediment, keep);
    er_run_opts ro = {&lk, o->ctl, o->hooks ? &hk : NULL, &R->rep[k].budget};
    if (o->stage_begins)
        o->stage_begins(o->ctl ? o->ctl->user : NULL, k, sp->n);
    R->rep[k].model = sp->p[k].model;
    return where[k].be->run(where[k].ctx, k > 0 ? &plan : &sp->plan[0], &tk, &ro, err);
}

er_status er_stages_run(const er_staged_plan *sp, const er_stage_backend *where, er_terrain *t,
                        const er_stages_opts *o, er_error *err)
{
    static const er_stages_opts none = {0};
    er_stage_report reps[ER_MAX_STAGES];
    if (!o)
        o = &none;
    if (!sp->staged) {
        er_run_opts ro = {o->layers, o->ctl, o->hooks, o->budget};
        return where[0].be->run(where[0].ctx, &sp->plan[0], t, &ro, err);
    }
    runner R;
    memset(&R, 0, sizeof R);
    memset(reps, 0, sizeof reps);
    R.sp = sp;
    R.o = o;
    R.t = t;
    R.cells = (size_t)t->width * (size_t)t->height;
    R.rep = o->reports ? o->reports : reps;
    memset(R.rep, 0, ER_MAX_STAGES * sizeof *R.rep);
    const er_run_state *resume = o->hooks ? o->hooks->resume : NULL;
    er_status st = runner_alloc(&R, err);
    if (!st && resume)
        st = er_stages_check_resume(sp, t, resume, o->layers, err);
    int k = !st && resume ? resume_stage(&R, resume) : 0, first = k, last = k - 1;
    for (; !st && k < sp->n; k++) {
        st = run_stage(&R, where, k, k == first, resume, err);
        last = k;
        if (st) {
            char msg[ER_ERROR_MAX];
            snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
            er_fail(err, st, "stages[%d]: %s", k, msg);
        } else {
            end_stage(&R, k);
        }
    }
    if (o->budget)
        total_budget(R.rep, last, sp->plan[0].abs_sum, o->budget);
    runner_free(&R);
    return st;
}
