/*
 * The run plan: everything a run needs that follows from the recipe, the
 * map and the window, computed once and checked before any work.  Both
 * backends run from the same plan, so they cannot disagree on what is
 * valid, and the CLI builds it before it opens any output: a plan error
 * is a recipe or input error (exit 2, nothing written).
 *
 * The backend interface: a backend is a small table (check, run,
 * capabilities) taking a plan, the terrain and one options struct.  The CPU
 * path is er_backend_cpu; the Vulkan one is er_backend_vulkan
 * (core/backend.h), a build without Vulkan links one that refuses.
 */
#ifndef ER_PLAN_H
#define ER_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

typedef struct er_plan {
    er_params p;            /* the recipe; river sources resolved (world pixels) */
    int width, height;      /* [cells] the map */
    er_window win;          /* where the map lies; the map itself without a window */
    int windowed;           /* 1: a window of a larger world (a tile with its halo) */
    double cell_x, cell_y;  /* [m] */
    int64_t boundaries;     /* the model's boundaries: steps, or batches (core/model.h er_run_state) */
    int64_t substeps;       /* sub-steps a step takes (stability), set by models that take
                             * them; 0 for the others */
    /* The terrain's valid (non-wall) cells, measured once. */
    int64_t valid;          /* their number */
    double sum, abs_sum;    /* [m * cells] sums of height and |height|, row-major order */
    float lo, hi;           /* [m] their range (lo > hi when there is none) */
    /* The model's own part, made by its plan op: er_<name>_derived of its
     * core/<name>/params.h, the member of its name (zeros before). */
    union {
#define ER_MODEL(id, name) er_##name##_derived name;
#include "models.def"
#undef ER_MODEL
    } own;
    /* [bytes] working memory the run needs on this map beyond
     * er_plan_bytes_per_cell: er_plan_bytes_fixed (the bound before any
     * map is read), or what the model's plan op measured or bounded on
     * this map instead (the particles its fill and sources come to, the
     * closed basins and passes of its routing). */
    size_t bytes_map;
    /* Why the run will change nothing, or less than the recipe asks: one
     * line (no key or input prefix) for the caller to show as a warning;
     * empty when there is none.  core/ prints nothing. */
    char warning[ER_ERROR_MAX];
} er_plan;

/* What is known of the heights of a map's valid cells at a boundary of a
 * run: none lies below lo or above hi, and their sum is at most sum. */
typedef struct er_height_range {
    double lo, hi; /* [m] */
    double sum;    /* [m * cells] */
} er_height_range;

/*
 * Makes the plan of a run of recipe p on terrain t (heights in metres,
 * walls, cell size), which lies at `win` in a larger world (NULL: the map
 * is the world).  Every check that needs no model work is made here:
 * each key's range, the cross-key rules (mei.ke * mei.dt <= 1, the
 * sub-steps the stability condition needs, sources on the map and not all
 * nodata, the droplet tile-size bound, "relief" in a window), the window
 * and non-finite heights.  Returns ER_OK, or ER_EINVAL (a recipe or input
 * error; the message names the key), or ER_ENUMERIC (the time step is
 * unstable under mei.cfl = "error" or needs more than mei.max_substeps);
 * the CLI treats all as exit 2.  Reads t; allocates nothing but what a
 * model's plan op needs to measure bytes_map (and frees it).
 */
er_status er_plan_make(const er_params *p, const er_terrain *t, const er_window *win,
                       er_plan *plan, er_error *err);

/*
 * Whether run state r (a checkpoint's) can continue a run of this plan
 * on terrain t (the heights the run starts from, and its walls): its
 * model, size, counters and arrays, the layers the caller keeps (the
 * non-NULL members of keep; NULL: none), and every value it holds, as
 * strictly as an input: finite, heights within the model's bound of t's
 * range (er_model_ops.height_bound), depths and layers >= 0.  A state
 * without the flow and wear arrays (an older checkpoint) fits a run that
 * keeps neither.
 * ER_OK or ER_EINVAL saying what does not fit.
 */
er_status er_plan_check_resume(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                               const er_layers *keep, er_error *err);

/* Bytes of working memory a run of recipe p allocates per cell beyond the
 * caller's terrain, layers and control maps (the model's own, with what
 * it derives from the maps p->maps names), so the caller can refuse a map
 * that will not fit before it allocates anything. */
size_t er_plan_bytes_per_cell(const er_params *p);

/* Bytes of working memory a run of recipe p allocates whatever the map's
 * size (particles, say), for the same check; saturates at SIZE_MAX.
 * what[n] receives what they hold ("200000 particles"; "" for none). */
size_t er_plan_bytes_fixed(const er_params *p, char *what, size_t n);

/* A scan of the terrain's valid (non-wall) cells in row-major order. */
typedef struct er_terrain_stats {
    double sum, abs_sum;  /* [m * cells] sums of height and |height| */
    float lo, hi;         /* [m] range; lo > hi when no cell is valid */
    int64_t valid;        /* valid cells with a finite height */
    size_t bad;           /* the first valid cell that is not finite, or SIZE_MAX */
} er_terrain_stats;

/* Measures t (the plan does it once; the droplet budget again after the
 * run).  Serial, so the sums are the same for any thread count. */
void er_terrain_measure(const er_terrain *t, er_terrain_stats *m);

/* What one run is given besides the plan and the terrain; every member
 * may be NULL. */
typedef struct er_run_opts {
    er_layers *layers;         /* water and sediment wanted */
    const er_run_ctl *ctl;     /* progress and cancellation */
    const er_run_hooks *hooks; /* boundaries (checkpoints, frames) and resume */
    er_budget *budget;         /* receives the material budget */
} er_run_opts;

/* What a backend can do besides plain runs. */
enum {
    ER_CAP_WINDOW = 1u, /* plans of windows (tile sets) */
    ER_CAP_HOOKS = 2u   /* run hooks: boundary states and resume */
};

typedef struct er_backend {
    const char *name;  /* "cpu", "vulkan" */
    /* ER_CAP_* it supports for model m (core/models.h); 0 for a model it
     * cannot run at all */
    unsigned (*caps)(er_model_kind m);
    /* What this backend cannot run of the plan on terrain t (device
     * features and limits): ER_EUNSUPPORTED or ER_ENOMEM naming the
     * reason, before any work.  ctx: the backend's context (NULL for the
     * CPU). */
    er_status (*check)(void *ctx, const er_plan *plan, const er_terrain *t, er_error *err);
    /* Runs the plan on t (t->elevation updated in place): the contract of
     * core/model.h, same outputs on every backend within the tolerance
     * erode-models(7) states ("VULKAN BACKEND"). */
    er_status (*run)(void *ctx, const er_plan *plan, er_terrain *t, const er_run_opts *o,
                     er_error *err);
} er_backend;

/* The CPU path (OpenMP), the reference; its capabilities are each model's
 * cpu_caps (core/models.h). */
extern const er_backend er_backend_cpu;

/* er_plan_make and er_backend_cpu.run in one call, for tests and
 * benchmarks. */
er_status er_run_cpu(const er_params *p, er_terrain *t, const er_window *win,
                     const er_run_opts *o, er_error *err);

#endif
