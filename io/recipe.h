/*
 * Recipes: JSON (cJSON) to er_params and back, validated strictly
 * (erode-recipe(5)).  Every error names the JSON path ("mei.dt") and, for an
 * unknown key, suggests the nearest known one.
 */
#ifndef ER_RECIPE_H
#define ER_RECIPE_H

#include <stddef.h>

#include "../core/error.h"
#include "../core/params.h"
#include "../core/stages.h"

/*
 * Parses recipe text (`text` of `len` bytes; `where` names it in errors,
 * e.g. the file name) over the defaults, then applies `n_overrides`
 * strings of the form "KEY=VALUE" (KEY a dotted path; VALUE JSON, or a
 * bare string), each with the same validation.  text may be NULL for the
 * built-in default.  On error err->msg is "<where>: <path>: <what>" (or
 * "-s KEY: <what>").
 *
 * A recipe with "stages" (core/stages.h): the top level first, then the
 * -s keys of the top level, then each stage over the top level, then the
 * -s keys of the stages ("stages.N.KEY" or "stages[N].KEY"), so a stage's
 * own key wins over the top level's whatever its source.  A key of one
 * model (model, a section) beside "stages" is an error naming it; a
 * stage's errors name it ("stages[1].mei.dt").  -s stages=[...] sets the
 * whole list.
 */
er_status er_recipe_parse_stages(const char *text, size_t len, const char *where,
                                 const char *const *overrides, int n_overrides, er_stages *out,
                                 er_error *err);

/* Reads and parses a recipe file (path NULL = built-in default). */
er_status er_recipe_load_stages(const char *path, const char *const *overrides, int n_overrides,
                                er_stages *out, er_error *err);

/* The same for a recipe of one model: a staged one is an error. */
er_status er_recipe_parse(const char *text, size_t len, const char *where,
                          const char *const *overrides, int n_overrides,
                          er_params *out, er_error *err);
er_status er_recipe_load(const char *path, const char *const *overrides, int n_overrides,
                         er_params *out, er_error *err);

/* The effective recipe as pretty JSON with every key but the control
 * rasters not given, numbers printed so they read back bit for bit.
 * Parsing it gives *p again.  The caller frees the string with free();
 * NULL when out of memory.  A checkpoint's recipe hash is taken of this
 * text: keeping its form keeps that hash, so a checkpoint written before
 * --print-recipe showed the null rasters still resumes. */
char *er_recipe_to_json(const er_params *p);

/* The same with the control rasters not given as null: every key there is
 * (--print-recipe, which shell completion reads). */
char *er_recipe_to_json_all(const er_params *p);

/* The same on one line, for provenance metadata. */
char *er_recipe_to_json_compact(const er_params *p);

/* The three for a recipe that may have stages: without them the same
 * text as above; with them the top level's seed, rasters and terrain,
 * then "stages", each stage with its model, the seed and rasters where
 * they differ from the top level's, and the sections it holds (its
 * model's), so that parsing the text gives the same er_stages. */
char *er_recipe_stages_to_json(const er_stages *r);
char *er_recipe_stages_to_json_all(const er_stages *r);
char *er_recipe_stages_to_json_compact(const er_stages *r);

#endif
