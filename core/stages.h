/*
 * Staged recipes (erode-recipe(5) STAGES; DESIGN.md §7b): several models
 * run one after another on one terrain in memory.  This is the one place
 * that says what a stage is:
 *   - in a recipe (er_stages): a whole er_params, the recipe's top level
 *     (seed, terrain, control rasters) unless the stage sets its own seed
 *     or rasters, its model, and that model's section;
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
 * becomes "stages[1].mei.dt: what", any other "stages[1]: what".  Leaves
 * the message of a recipe without stages alone.
 */
void er_stages_name_error(const er_stages *r, int k, er_error *err);

/*
 * The checks of each stage's recipe alone, before any map is read (each
 * model's er_model_ops.check; `tiled`: the run is a tile set's).  ER_OK,
 * or the first failure with the stage named (er_stages_name_error).
 */
er_status er_stages_check(const er_stages *r, int tiled, er_error *err);

#endif
