/*
 * The model registry: every model is its directory under core/ and one
 * line of the model list (core/models.def), from which its kind, its
 * er_params member and its row in the registry's table are made.  The
 * CLI, the recipe reader, the run plan, the backends and the checkpoint
 * code ask this table; none of them names a model.
 *
 * What a new model provides (CONTRIBUTING.md "Adding a model"):
 *   - core/<name>/: its er_model_ops er_model_<name> (the functions and
 *     facts below), its recipe section as key rows er_<name>_keys
 *     (core/keys.h) and its params struct er_<name>_params (params.h);
 *   - its line in core/models.def;
 *   - what its layers hold (flags), for the outputs and staged recipes;
 *   - its keys in man/erode-recipe.5, a config under configs/, tests, and
 *     a Vulkan path if it has one: core/<name>/vulkan*.c over the device
 *     layer core/vulkan/vk.h, its GLSL in core/<name>/shaders/ (the
 *     Makefile finds both), its ops' vk_* members given through ER_VK_OPS.
 */
#ifndef ER_MODELS_H
#define ER_MODELS_H

#include <stddef.h>

#include "drive.h"
#include "keys.h"
#include "plan.h"

typedef struct er_vk_ctx er_vk_ctx;
typedef struct er_vk_device_info er_vk_device_info;

/* What a model's output layers hold, for the preview (cli/outputs.c) and
 * for staged runs (core/stages.h). */
enum {
    /* water is standing water at the end (Mei; stream power: its lakes):
     * the preview draws it, and Mei's suspended load; without it water
     * and sediment are totals over the run (droplets, SPH) and the
     * preview draws deposits and erosion instead */
    ER_MODEL_STANDING_WATER = 1u,
    /* flow is an area [m^2] (stream power's drainage area), not a
     * thickness: written as it is, not divided by the vertical scale; in
     * stages the flow of consecutive stages of one kind adds up, and a
     * stage of the other kind starts it again */
    ER_MODEL_FLOW_AREA = 2u,
    /* uplift raises the terrain: a height change is no deposit, and the
     * preview tints neither it nor the sediment layer (deposits already
     * in the heights, on nearly every cell), only the water */
    ER_MODEL_UPLIFT = 4u,
    /* sediment is a load suspended in the water at the end (Mei): in
     * stages, at the end of such a stage that another follows, the load
     * settles where it is and the water is dropped */
    ER_MODEL_SUSPENDED_LOAD = 8u,
    /* it releases water at river_sources (core/sources.h); for a model
     * without it the list is ignored and the plan says so in a warning */
    ER_MODEL_RIVER_SOURCES = 16u,
    /* a model of the tests alone (tests/models/, built into the test build
     * only): the checks of the documentation leave it out */
    ER_MODEL_TEST_ONLY = 32u
};

/* The values a stage report of a checkpoint of format 5 kept for the
 * models' own budget terms (er_model_ops.old_terms). */
#define ER_OLD_TERMS 2

typedef struct er_model_ops {
    const char *name;        /* the recipe's "model" value and its key section */
    const char *unit;        /* what a boundary counts: "step" or "batch" */
    const char *units;       /* its plural, for messages */
    const char *work_key;    /* --json name of er_budget.work_done ("steps", "droplets") */
    const char *substep_key; /* --json name of er_budget.substeps */
    unsigned flags;          /* ER_MODEL_* */
    /* The most er_budget.rel_error a completed run may report: past it the
     * run fails (er_budget_check, ER_ENUMERIC) on every backend.  0: the
     * model documents no bound, or checks its own (droplets: their run
     * guard). */
    double budget_tol;
    /* Its recipe section (core/keys.h): rows whose paths are relative to
     * the section ("steps") and offsets relative to its params struct,
     * which lies at params_off in er_params; the key table puts them
     * under the name. */
    const er_key *(*keys)(size_t *n);
    size_t params_off;
    /* Checks of the recipe alone, before any map is read (cross-key
     * rules; `tiled`: the run is a tile set's, which knows no single
     * map).  NULL: none beyond the key table's ranges. */
    er_status (*check)(const er_params *p, int tiled, er_error *err);
    /* Its part of er_plan_make: the keys' rules on this map and what
     * follows from them (plan->boundaries, its own plan fields). */
    er_status (*plan)(er_plan *plan, const er_terrain *t, er_error *err);
    /* Why a valid plan will change nothing, into plan->warning (left
     * empty otherwise), after the checks common to every model.  NULL:
     * nothing of its own. */
    void (*note_no_op)(er_plan *plan, const er_terrain *t);
    /* The CPU run, its steps through the run driver (core/drive.h), which
     * keeps the contract of core/model.h. */
    const er_model_steps *steps;
    unsigned cpu_caps;       /* ER_CAP_* the CPU run supports */
    /* Bytes it allocates per cell, and whatever the map's size (NULL: 0;
     * `what` receives what they hold, e.g. "200000 particles"). */
    size_t (*bytes_per_cell)(const er_params *p);
    size_t (*bytes_fixed)(const er_params *p, char *what, size_t n);
    /* Whether state r can continue a run of this plan on terrain t, the
     * heights the run starts from (er_plan_check_resume): its fit and
     * every value, as strictly as an input (height_bound, layers >= 0). */
    er_status (*check_resume)(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              const er_layers *keep, er_error *err);
    /* Widens r, what is known of the heights a run of this plan (with
     * control maps c, NULL = none) starts from, to what is known of the
     * heights it may leave on valid cells at any boundary: the model's
     * physics, stated where it is defined.  NULL: nothing is known (an
     * unbounded range). */
    void (*height_bound)(const er_plan *plan, const er_controls *c, er_height_range *r);
    /* er_run_state_layers for its states (core/model.h). */
    void (*state_layers)(const er_run_state *s, const float *input, const uint8_t *wall,
                         float *height, float *water, float *sediment);
    /* Its budget terms (er_budget.term) of a stage report that a
     * checkpoint of format 5 kept in fixed places (core/stages.c), set
     * into b for recipe p as its runs set them.  NULL: it had none. */
    void (*old_terms)(const er_params *p, er_budget *b, const double old[ER_OLD_TERMS]);

    /* The Vulkan path (core/<name>/vulkan*.c): NULL when it has none or
     * the build has no Vulkan (ER_VK_OPS).  vk_check: whether the device
     * can run this plan on this map, before any work (allocates nothing);
     * vk_steps: the run's steps, which the run driver (core/drive.h)
     * runs with the device as their backend, as it runs the CPU's. */
    er_status (*vk_check)(er_vk_ctx *vk, const er_plan *plan, const er_terrain *t, er_error *err);
    const er_model_steps *vk_steps;
    /* What --list-devices says of the path on device d, one phrase into
     * buf (n bytes, NUL-terminated), e.g. "Mei: denormals preserved,
     * bit-identical to the CPU".  NULL: nothing. */
    void (*vk_describe)(const er_vk_device_info *d, char *buf, size_t n);
    unsigned vk_caps;        /* ER_CAP_* the Vulkan run supports */
} er_model_ops;

/* The vk_* members of a model's er_model_ops initializer, written last:
 * ER_VK_OPS(.vk_check = ..., .vk_steps = ..., .vk_caps = ...).  A build
 * without Vulkan drops them, so that no model names a Vulkan path it
 * does not link. */
#ifdef ER_HAVE_VULKAN
#define ER_VK_OPS(...) __VA_ARGS__
#else
#define ER_VK_OPS(...)
#endif

/* The model of kind k, or NULL for a value that names none (a damaged
 * checkpoint's). */
const er_model_ops *er_model(er_model_kind k);

/* Its name, or "unknown". */
const char *er_model_name(er_model_kind k);

/* Each model's ops and key rows (its keys.c), defined in its directory,
 * for each line of the model list. */
#define ER_MODEL(id, name)                      \
    extern const er_model_ops er_model_##name; \
    const er_key *er_##name##_keys(size_t *n);
#include "models.def"
#undef ER_MODEL

/* Helpers the models share for their ops. */

/* er_run_state_layers of a state whose arrays 0, 1 and 2 are the
 * height, water and sediment layers as written (zeros for a NULL one). */
void er_state_layers_copy(const er_run_state *s, const float *input, const uint8_t *wall,
                          float *height, float *water, float *sediment);

/* The index of the first of n floats that is not finite, or -1. */
int64_t er_first_nonfinite(const float *v, int64_t n);

/* The checks every resume makes: r is a state of this model, of this
 * map, at a boundary of this run, with `done` of `total` work done
 * (the model's own count at that boundary).  ER_OK or ER_EINVAL saying
 * what does not fit. */
er_status er_state_check_fit(const er_plan *plan, const er_run_state *r, int64_t done,
                             int64_t total, er_error *err);

/* The range of the heights a run of this plan starts from: the plan's
 * own (plan->lo, hi, sum). */
er_height_range er_plan_heights(const er_plan *plan);

/* r widened by the height_bound of plan's model (unbounded without one). */
void er_height_bound(const er_plan *plan, const er_controls *c, er_height_range *r);

/* The height_bound of a model that only moves material on the map, lets
 * none come in but `added` [m * cells] (uplift, a feed) and takes no valid
 * cell lower than `below` [m] under r->lo: lo falls by `below`, the sum
 * grows by `added`, and as every cell stays above the new lo, one cell's
 * excess over it is at most the whole map's, so
 * hi <= sum - (valid - 1) lo. */
void er_height_bound_moved(const er_plan *plan, er_height_range *r, double below, double added);

/* Rounding room of a bound: `ops` roundings of relative size eps on the
 * largest magnitude of r (a floor that holds in exact arithmetic holds to
 * this in the model's). */
double er_height_slack(const er_height_range *r, double ops, double eps);

/* Values of a state to check on the valid cells of a map: f[i] or d[i]
 * (one of them is given) times scale, plus base[i] when base is given,
 * finite and within [lo, hi]. */
typedef struct er_state_values {
    const char *what;   /* the message's name: "height", "water depth" */
    const float *f;
    const double *d;
    const float *base;  /* NULL: none */
    double scale;       /* 0: 1 */
    double lo, hi;
} er_state_values;

/* ER_OK when every valid cell of t (walls skipped) holds a value v
 * allows, else ER_EINVAL: "the state's <what> <value> at cell (x, y) is
 * not a finite value in [lo, hi]". */
er_status er_state_check_values(const er_terrain *t, const er_state_values *v, er_error *err);

/* The same for n values with no map (particles, slots): index i instead
 * of a cell. */
er_status er_state_check_list(const double *v, int64_t n, double lo, double hi,
                              const char *what, er_error *err);

/* Whether map m (NULL: none, counted as the value `none`) holds a value
 * v on a valid cell of t with pred(v). */
int er_any_valid(const er_terrain *t, const float *m, float none, int (*pred)(float));

static inline int er_is_positive(float v) { return v > 0.0f; }

#endif
