/*
 * The validated recipe as plain structs (erode-recipe(5)).  No JSON here:
 * io/recipe.c fills these from a recipe file and `-s` overrides and writes
 * them back out for --print-recipe.  The key table of core/keys.c holds
 * every key's range and default; er_params_default() and er_params_check()
 * read them from there.
 *
 * Units as in erode-recipe(5) "Units"; each model's section says its own.
 */
#ifndef ER_PARAMS_H
#define ER_PARAMS_H

#include <stdint.h>

#include "error.h"
#include "sources.h"

#define ER_RECIPE_VERSION 1

/* The models, numbered in the order of the model list (core/models.def). */
typedef enum er_model_kind {
#define ER_MODEL(id, name) ER_MODEL_##id,
#include "models.def"
#undef ER_MODEL
    ER_MODEL_KINDS /* the number of models (tables indexed by er_model_kind) */
} er_model_kind;

typedef enum er_boundary { ER_BOUNDARY_CLOSED = 0, ER_BOUNDARY_OPEN = 1 } er_boundary;

typedef struct er_terrain_params {
    double vertical_scale;  /* working height [m] = value * scale + offset */
    double vertical_offset; /* [m] */
    double cell_size;       /* [m]; used only without georeferencing */
    int cell_size_set;      /* 0: recipe says null (use georef, else 1 m) */
} er_terrain_params;

/* [bytes] Longest control raster path, its terminating NUL included. */
#define ER_CTL_PATH_MAX 1024

/* The control rasters a recipe names (core/controls.h; README "Control
 * maps"): paths as the CLI opens them (a recipe file's relative paths are
 * made relative to the working directory when it is read); "" = none. */
typedef struct er_control_paths {
    char hardness[ER_CTL_PATH_MAX];
    char rain[ER_CTL_PATH_MAX];
    char mask[ER_CTL_PATH_MAX];
    char sources[ER_CTL_PATH_MAX];
    char uplift[ER_CTL_PATH_MAX];
} er_control_paths;

/* Each model's recipe section, core/<name>/params.h for each line of
 * core/models.def (the Makefile writes the includes: the preprocessor
 * cannot). */
#include "er_model_params.h"

typedef struct er_params {
    int recipe_version;     /* always ER_RECIPE_VERSION once validated */
    er_model_kind model;
    uint64_t seed;
    er_control_paths maps;  /* control rasters; "" = none */
    er_source_list river;   /* river_sources (core/sources.h), for the models that take them */
    er_terrain_params terrain;
#define ER_MODEL(id, name) er_##name##_params name;
#include "models.def"
#undef ER_MODEL
} er_params;

/* Fills *p with the built-in default recipe (every byte: padding and unused
 * source slots are zero, so two default structs compare equal with memcmp).
 * Thread-safe. */
void er_params_default(er_params *p);

/* Checks every key of *p against the range or choices of the key table:
 * the checks the recipe reader makes on each value it reads, on a struct
 * filled by any means.  It accepts whatever er_params_default() and the
 * recipe reader produce; a NaN is out of range.  Cross-key conditions
 * (ke * dt <= 1, the droplet tile size) are the models' own checks.
 * ER_EINVAL with one line naming the key, e.g.
 * "droplet.mass_transfer.min_volume: 2 is out of range, must be > 0 and < 1".
 * Thread-safe. */
er_status er_params_check(const er_params *p, er_error *err);

#endif
