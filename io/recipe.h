/*
 * Recipes: JSON (cJSON) to er_params and back, validated strictly
 * (DESIGN.md §2).  Every error names the JSON path ("mei.dt") and, for an
 * unknown key, suggests the nearest known one.
 */
#ifndef ER_RECIPE_H
#define ER_RECIPE_H

#include <stddef.h>

#include "../core/error.h"
#include "../core/params.h"

/* Parses recipe text (`text` of `len` bytes; `where` names it in errors, e.g.
 * the file name) over the defaults, then applies `n_overrides` strings of the
 * form "KEY=VALUE" (KEY a dotted path; VALUE JSON, or a bare string), each
 * with the same validation.  text may be NULL for the built-in default.
 * On error err->msg is "<where>: <path>: <what>" (or "-s KEY: <what>"). */
er_status er_recipe_parse(const char *text, size_t len, const char *where,
                          const char *const *overrides, int n_overrides,
                          er_params *out, er_error *err);

/* Reads and parses a recipe file (path NULL = built-in default). */
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

#endif
