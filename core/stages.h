/*
 * Staged recipes (erode-recipe(5) STAGES): several models
 * run one after another on one terrain in memory.  This is the one place
 * that says what a stage is:
 *   - in a recipe (er_stages): a whole er_params, the recipe's top level
 *     (seed, terrain, control rasters) unless the stage sets its own seed
 *     or rasters, its model, and that model's section;
 *   - in a run (er_staged_plan): that recipe's plan, made on the run's
 *     input before any work (every stage's errors come first, exit 2) and
 *     made again on the terrain the stage starts from when it starts (its
 *     "relief" and sums are those of that terrain, as a run of its model
 *     on the previous stage's output would measure them), its control
 *     maps, and its backend (er_stage_backend);
 *   - between stages (er_stages_run): nothing leaves memory.  Height is
 *     the last stage's; flow and wear add up over the stages (flow over
 *     the consecutive stages of one kind, metres of water or drainage
 *     area: ER_MODEL_FLOW_AREA); water and sediment are the last stage's;
 *     at the end of a stage with a suspended load (ER_MODEL_SUSPENDED_LOAD:
 *     Mei) that another follows, the load settles where it is (counted in
 *     that stage's deposited, er_stage_report.settled) and the water is
 *     dropped (er_stage_report.water_dropped; evaporated, for the budget).
 * A recipe without "stages" is one model, run exactly as before: the
 * stage code hands it to its backend untouched.
 *
 * No JSON here (io/recipe.c reads and writes recipes into these structs)
 * and no model's name: the registry (core/models.h) gives them.
 */
#ifndef ER_STAGES_H
#define ER_STAGES_H

#include "error.h"
#include "params.h"
#include "plan.h"

/* The most stages a recipe may hold. */
#define ER_MAX_STAGES 8

/* A recipe: one model (n = 0, all in `top`), or n stages. */
typedef struct er_stages {
    er_params top;   /* the top level: seed, terrain, control rasters; without stages
                      * also the model and every section */
    int n;           /* stages, 1 to ER_MAX_STAGES; 0: a recipe without "stages" */
    /* Each stage's recipe: top with the stage's own keys over it (its
     * model, seed, rasters, its model's section; the other sections keep
     * their defaults).  Its terrain is always top's. */
    er_params stage[ER_MAX_STAGES];
} er_stages;

/* The models a recipe runs: n, or 1 for a recipe without stages. */
static inline int er_stages_count(const er_stages *r)
{
    return r->n > 0 ? r->n : 1;
}

/* The recipe of run k (0 <= k < er_stages_count(r)): stage k, or top. */
static inline const er_params *er_stages_at(const er_stages *r, int k)
{
    return r->n > 0 ? &r->stage[k] : &r->top;
}

static inline er_params *er_stages_at_mut(er_stages *r, int k)
{
    return r->n > 0 ? &r->stage[k] : &r->top;
}

/* *r = the recipe p without stages. */
void er_stages_single(er_stages *r, const er_params *p);

/* Whether a stage of model m may hold the section of model `section`:
 * only its own (river sources are a top-level key, which a stage may set). */
int er_stage_holds_section(er_model_kind m, er_model_kind section);

/*
 * Makes err, an error about stage k of recipe r, name the stage (the
 * "stages[1]" of erode-recipe(5): stages count from 0 in keys and
 * messages): a message that starts with a recipe key, "mei.dt: what",
 * becomes "stages[1].mei.dt: what", any other "stages[1]: what", and a
 * hint "-s mei.dt=0.01" in it "-s stages.1.mei.dt=0.01".  Leaves the
 * message of a recipe without stages alone.
 */
void er_stages_name_error(const er_stages *r, int k, er_error *err);

/*
 * The checks of each stage's recipe alone, before any map is read (each
 * model's er_model_ops.check; `tiled`: the run is a tile set's).  ER_OK,
 * or the first failure with the stage named (er_stages_name_error).
 */
er_status er_stages_check(const er_stages *r, int tiled, er_error *err);

/* [m] A stage changed a cell when its height moved by at least this
 * (er_stage_report.changed_cells). */
#define ER_STAGE_CHANGED 0.01

/* The plan of a run: one er_plan a stage. */
typedef struct er_staged_plan {
    int n;                 /* models run, >= 1 */
    int staged;            /* 1: a recipe with "stages"; 0: its one model, run as before */
    er_window win;         /* the window (a tile set's), valid when windowed */
    int windowed;
    /* Each stage's recipe as the caller resolved it (Mei sources in
     * pixels): a later stage is planned again from it when it starts. */
    er_params p[ER_MAX_STAGES];
    /* Each stage planned on the run's input: the checks before any work,
     * and its boundaries (which depend on the map's size and walls, not
     * its heights, so the plan made again finds the same). */
    er_plan plan[ER_MAX_STAGES];
    const er_controls *controls[ER_MAX_STAGES]; /* each stage's maps (the caller's); NULL = none */
    int64_t offset[ER_MAX_STAGES]; /* boundaries of the stages before it */
    int64_t boundaries;            /* of the whole run */
} er_staged_plan;

/*
 * Plans recipe r on terrain t (t->controls is ignored: stage k runs with
 * controls[k], which may be NULL, and must stay valid while the plan is
 * used) in window win (NULL: none): er_plan_make for each stage, errors
 * naming the stage (er_stages_name_error).  The warnings of each stage's
 * plan are in out->plan[k].warning.  Reads t, allocates nothing.
 */
er_status er_stages_plan(const er_stages *r, const er_terrain *t,
                         const er_controls *const *controls, const er_window *win,
                         er_staged_plan *out, er_error *err);

/* The boundary of the whole run that state s (of a run of plan sp) is at:
 * its own, plus the boundaries of the stages before its stage. */
int64_t er_stages_boundary(const er_staged_plan *sp, const er_run_state *s);

/*
 * Whether run state r (a checkpoint's) can continue a run of plan sp on
 * terrain t (the run's input heights and walls) keeping the layers
 * `keep` (NULL: none), before any work: for a recipe without stages
 * er_plan_check_resume; with stages, r's stage, what the stages before it
 * left (their reports; the flow and wear kept, >= 0) then the stage's own
 * plan made on the heights it started from, those heights within the
 * bounds of the stages before it run from t's (each model's
 * height_bound), and er_plan_check_resume of that plan on them.  ER_OK or
 * ER_EINVAL saying what does not fit.
 */
er_status er_stages_check_resume(const er_staged_plan *sp, const er_terrain *t,
                                 const er_run_state *r, const er_layers *keep, er_error *err);

/* Bytes of working memory a run of recipe r allocates per cell (the
 * largest model's, er_plan_bytes_per_cell, and with stages the heights a
 * stage starts from, the flow and wear kept over the stages when `flow`,
 * `wear` are asked, water and sediment the stages need when the caller
 * keeps none: `no_layers`), and whatever the map's size (the largest). */
size_t er_stages_bytes_per_cell(const er_stages *r, int flow, int wear, int no_layers);
size_t er_stages_bytes_fixed(const er_stages *r, char *what, size_t n);

/* Where a stage runs: a backend (core/plan.h) and its context. */
typedef struct er_stage_backend {
    const er_backend *be;
    void *ctx;
} er_stage_backend;

/* What one stage did. */
typedef struct er_stage_report {
    er_model_kind model;
    er_budget budget;       /* the stage's own (its model's); deposited includes settled */
    int64_t changed_cells;  /* valid cells whose height moved by >= ER_STAGE_CHANGED in it */
    double settled;         /* [m * cells] suspended load settled at its end */
    double water_dropped;   /* [m * cells] standing water dropped at its end */
    int ran;                /* 1: it ran to its end; 0: not, or not to the end */
} er_stage_report;

/* What er_stages_run is given besides the plan and the terrain; every
 * member may be NULL. */
typedef struct er_stages_opts {
    er_layers *layers;          /* as er_run_opts: the whole run's layers */
    const er_run_ctl *ctl;      /* progress: the fraction of the stage running */
    /* Called on the calling thread before stage k of n starts (from the
     * resumed one), with ctl->user (NULL ctl: NULL). */
    void (*stage_begins)(void *user, int k, int n);
    /* Boundaries and resume as er_run_opts.  The states carry their stage
     * (er_run_state.stage); `wants` is asked in the whole run's boundaries
     * (offset + own, of er_run_stage.boundaries).  A stage's first
     * boundary is the end of the stage before it, handed once: as that
     * stage's end. */
    const er_run_hooks *hooks;
    er_budget *budget;          /* the whole run's (the stages' sums; material before
                                 * the first, after the last) */
    er_stage_report *reports;   /* ER_MAX_STAGES entries: each stage's */
} er_stages_opts;

/*
 * Runs the stages of sp in order on t (t->elevation updated in place;
 * t->controls is not read: stage k runs with sp->controls[k]), each on
 * where[k]:
 * the contract of core/model.h, with the layers of the whole run as this
 * header's top says.  A recipe without stages is where[0]'s run of its
 * one plan, untouched.  Failures as the backends' (the message naming
 * the stage, "stages[1]: ..."), ER_ENOMEM for the stages' own buffers,
 * ER_EINVAL when a stage's plan made again fails or a resume state does
 * not fit.  The budget and the reports are filled also after a failure.
 */
er_status er_stages_run(const er_staged_plan *sp, const er_stage_backend *where, er_terrain *t,
                        const er_stages_opts *o, er_error *err);

#endif
