/*
 * The types every model and every compute path share: the terrain, the
 * layers, the budget, run states and hooks.  core/ computes on these structs only: it opens no file,
 * prints nothing and never sets the thread count (cli/ does, with -j).
 */
#ifndef ER_MODEL_H
#define ER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "controls.h"
#include "error.h"
#include "params.h"

/* The map a model works on.  Row-major, width * height cells, no padding. */
typedef struct er_terrain {
    int width, height;
    float *elevation;     /* [m] working terrain height; updated in place */
    const uint8_t *wall;  /* 1 = nodata cell (a wall), 0 = terrain; NULL = none */
    double cell_x;        /* [m] distance between cell centres along a row (lX) */
    double cell_y;        /* [m] distance between rows (lY) */
    const er_controls *controls; /* painted control maps (core/controls.h); NULL = none */
} er_terrain;

/* Output layers besides the height (erode(1) FILES), each width * height
 * floats supplied by the caller, in the same height unit as er_terrain.
 * Any pointer may be NULL when the layer is not wanted; a model keeps no
 * flow or wear accumulator for a NULL one (they cost nothing unasked).
 * flow and wear are accumulated in the caller's buffers while the run
 * goes on (their contents on entry do not matter). */
typedef struct er_layers {
    float *water;     /* Mei: depth d at the end; droplets: total water that
                       * passed; SPH: depth at the end (each particle's volume
                       * on its nearest cell) */
    float *sediment;  /* Mei: suspended s at the end; droplets, SPH: material
                       * deposited */
    float *flow;      /* [m] Mei: water that left each cell over the run, sum over
                       * sub-steps of dt (fL + fR + fT + fB) / (lX lY); droplets:
                       * the water layer (the same accumulator); SPH: each
                       * sub-step's particle volume times the distance it
                       * moved, on its nearest cell */
    float *wear;      /* [m] terrain removed at each cell over the run, before any
                       * deposit: Mei the dissolution of eq. 11 (thermal slumping
                       * moves material and is not counted); droplets the erosion
                       * brush's share; SPH each lowering of the vertex by the
                       * terrain update; sum(wear) = er_budget.eroded */
} er_layers;

/* The most terms of the models' own in one budget (er_budget.term). */
#define ER_BUDGET_TERMS 4
/* [bytes] The longest name of such a term, its NUL included. */
#define ER_TERM_NAME 16

/* A term of a model's own in the material budget: material that entered
 * the balance outside the common terms (uplift raising the map, erosion
 * that a bound kept on the terrain though it was carried away), in the
 * budget's unit.  Its name is its --json key; the model that sets it
 * names it (core/<model>/). */
typedef struct er_budget_entry {
    char name[ER_TERM_NAME]; /* "" = a free slot */
    double value;
} er_budget_entry;

/* The material budget of one run.  Volumes are sums of heights over cells,
 * in metres * cells: multiply by cell_x * cell_y for cubic metres.  Sums are
 * formed in a fixed order, so they are identical for any thread count. */
typedef struct er_budget {
    double material_before; /* terrain (+ sediment the water carries: Mei, SPH)
                             * at start */
    double material_after;  /* the same at the end */
    double left_map;        /* net material that left through open edges / off the map
                             * (stream power: negative where a held base level feeds
                             * the map by diffusion) */
    double eroded;          /* terrain removed, summed over all events */
    double deposited;       /* terrain added, summed over all events */
    double water_added;     /* Mei: rain + sources; droplets: initial water;
                             * SPH: the initial fill + sources */
    double water_left;      /* Mei, SPH: water that left through open edges;
                             * droplets: the water of droplets that left the map */
    double rel_error;       /* the miss over the material moved (er_budget_rel_error) */
    int64_t work_done;      /* Mei, SPH: time steps run (sub-steps counted once);
                             * droplets: droplets run */
    int64_t substeps;       /* Mei, SPH: total sub-steps; droplets: total droplet
                             * steps */
    er_budget_entry term[ER_BUDGET_TERMS]; /* the models' own terms, in the order they
                                           * were first set; a model sets those it
                                           * reports for its recipe, and only those */
} er_budget;

/* The value of b's term `name`, a new term of value 0 when b has none
 * yet; NULL when every slot is taken (more terms than ER_BUDGET_TERMS: a
 * model's programming error). */
double *er_budget_term(er_budget *b, const char *name);

/* The value of b's term `name`; 0 when it has none. */
double er_budget_term_value(const er_budget *b, const char *name);

/* Whether b has a term `name`. */
int er_budget_has_term(const er_budget *b, const char *name);

/* The sum of b's terms. */
double er_budget_terms_sum(const er_budget *b);

/* Adds each term of `from` to the term of its name in `to` (a staged
 * run's stages, one after the other). */
void er_budget_add_terms(er_budget *to, const er_budget *from);

/*
 * The relative error of b's material balance (erode(1) --json):
 *     |material_before + sum(term) - material_after - left_map|
 *   / (eroded + deposited + sum(|term|) + 2^-24 abs_sum),
 * the miss over the material the run moved plus what rounding every
 * height to a 32-bit float may move (2^-24 is float's unit roundoff), so
 * a map around sea level, whose signed sum is near 0, is measured as any
 * other.  abs_sum [m * cells]: the sum of |height| over the run's input
 * (er_plan.abs_sum).  0 when that scale is 0 (nothing moved on a map of
 * zero heights) and the balance closes, 1 when it does not.
 */
double er_budget_rel_error(const er_budget *b, double abs_sum);

/* ER_ENUMERIC, naming the model, when a run's b misses model m's budget
 * tolerance (er_model_ops.budget_tol; 0: the model keeps none); else
 * ER_OK. */
struct er_model_ops;
er_status er_budget_check(const struct er_model_ops *m, const er_budget *b, er_error *err);

/* Called on the calling thread between boundaries (steps, batches)
 * with the fraction done in [0, 1]; a non-zero return cancels the run,
 * which then returns ER_ECANCELED and leaves the terrain in its state at
 * that step boundary. */
typedef int (*er_progress_fn)(void *user, double fraction);

/* The most float arrays a run state holds (er_run_state.array), width *
 * height floats each; what each means is the model's (core/<model>/). */
#define ER_STATE_ARRAYS 9

/* The most pieces of a state's model section (er_run_extra). */
#define ER_EXTRA_PARTS 8

/*
 * A model's own section of a run state, beside its float arrays: doubles
 * a run continues from bit for bit (SPH: its particles and grids), and two
 * counts it reads them by.  The doubles are the concatenation of the
 * parts, in order; a checkpoint read back holds them as one part.  The
 * model checks the lengths (er_extra_split): the checkpoint code only
 * carries them.
 */
typedef struct er_run_extra {
    uint64_t count[2];
    int n_parts;
    const double *part[ER_EXTRA_PARTS];
    size_t len[ER_EXTRA_PARTS];   /* doubles in each part */
} er_run_extra;

/* Splits the doubles of x into k consecutive pieces of len[i] doubles
 * each, out[i] pointing at each; every piece must lie in one part (true
 * of a section read back, one part, and of one the model made itself).
 * Returns 0, or -1 when the lengths do not add up to x's or a piece
 * spans two parts. */
int er_extra_split(const er_run_extra *x, const size_t *len, int k, const double **out);

/* The most float arrays of a staged run's own section (er_run_stage). */
#define ER_STAGE_ARRAYS 3

/*
 * Where a state of a staged run (core/stages.h) lies: which stage, and
 * what the stages before it leave that the state of the stage's model
 * does not hold.  Its arrays (width * height floats each, NULL = none):
 * [0] the heights the stage started from (NULL in stage 0: the run's
 * input), [1] the flow and [2] the wear of the stages before it, as far
 * as they add up (core/stages.c).  values: each earlier stage's report,
 * packed by core/stages.c.  The checkpoint code carries all of it without
 * knowing what it means.
 */
typedef struct er_run_stage {
    int index, count;         /* this stage, from 0, and the run's stages */
    int64_t offset;           /* boundaries of the stages before it */
    int64_t boundaries;       /* boundaries of the whole run */
    int n_arrays;             /* ER_STAGE_ARRAYS */
    const float *array[ER_STAGE_ARRAYS];
    size_t n_values;
    const double *values;
} er_run_stage;

/*
 * The complete state of a run at a boundary (a step, a batch of droplets):
 * with the recipe and the run's input terrain it is everything the model
 * needs to go on from there and produce the same bits as an uninterrupted
 * run.  The random numbers are counter-based (core/rng.h), keyed by step,
 * droplet and batch, so the boundary index is their position.
 *
 * A view handed to er_boundary_fn points into the model's own memory: it
 * is valid only during the call and must not be written.  A state passed
 * as er_run_hooks.resume is only read.
 */
typedef struct er_run_state {
    er_model_kind model;
    int width, height;
    int64_t boundary;      /* boundaries passed (the model's unit: steps, batches) */
    int64_t boundaries;    /* boundaries in the whole run (the last = the end) */
    int64_t done;          /* work done (steps; droplets for the droplet model) */
    int64_t total;         /* work of the whole run, in the same unit */
    er_budget budget;      /* accumulators so far: eroded, deposited, left_map,
                            * water_added, water_left, work_done, substeps, the
                            * models' terms;
                            * material_before as the run computed it;
                            * material_after and rel_error are 0 */
    int n_arrays;          /* the model's (core/<model>/state.h) */
    const float *array[ER_STATE_ARRAYS]; /* NULL = not kept (a layer not asked for) */
    const er_run_extra *extra; /* the model's own section; NULL = none */
    const er_run_stage *stage; /* a staged run's position; NULL = a run of one model
                                * (models leave it NULL: the stage code sets it) */
    double legacy_slot;    /* a checkpoint of format 3 to 5: the budget value of a
                            * model's own its header kept in a fixed place (io/
                            * checkpoint.h), which that model reads back; 0 else */
} er_run_state;

/* Called on the calling thread at every boundary: once at the start (the
 * input state, or the resumed one), then after every step or batch, the
 * last call being the end state.  No model work runs during
 * the call.  A non-zero return cancels the run (ER_ECANCELED, the terrain
 * and layers left as at that boundary). */
typedef int (*er_boundary_fn)(void *user, const er_run_state *state);

/* Whether the caller needs boundary `boundary` (of `boundaries`) handed to
 * its er_boundary_fn.  Asked on the calling thread before each boundary
 * call; a backend whose state lives elsewhere (a GPU) reads the state back
 * only where the answer is non-zero and skips the call otherwise, so it
 * must answer yes wherever the boundary function would save, draw or stop
 * (a pending signal included).  NULL: every boundary. */
typedef int (*er_wants_fn)(void *user, int64_t boundary, int64_t boundaries);

/* Where a map sits in a larger world, e.g. one tile of a mosaic extended
 * by its halo (erode(1) "TILE SETS"): the map's top-left cell
 * is world cell (x0, y0) of a world_width x world_height grid, and the map
 * lies inside it.  Random starts (droplets, raindrops), the droplet batch
 * sizes and tile grids are drawn over the world, so a windowed run is the
 * whole-world run restricted to the map: it keeps the droplets and
 * raindrops that fall inside, in the same order.  The map's edges that lie
 * inside the world (halo edges) are open: what crosses them leaves, as it
 * would leave the window in the whole run; the world's own edges follow the
 * recipe.  Passing NULL where a window is taken means the map is the world,
 * with results identical to the run without a window. */
typedef struct er_window {
    int x0, y0;                    /* [cells] the map's top-left cell in the world */
    int world_width, world_height; /* [cells] the world */
} er_window;

typedef struct er_run_ctl {
    er_progress_fn progress; /* may be NULL */
    void *user;
} er_run_ctl;

/* Checkpoint and frame hooks of a run, beside er_run_ctl (a struct of their
 * own, so that two-field er_run_ctl initialisers stay complete). */
typedef struct er_run_hooks {
    er_boundary_fn boundary; /* may be NULL */
    void *user;              /* passed to boundary */
    /* State to continue from (a boundary of an earlier run of the same
     * recipe on the same input), or NULL.  The terrain passed with it must
     * hold the run's input heights, as for a fresh run; the model replaces
     * its state by this one and goes on from that boundary.  ER_EINVAL when
     * it does not fit (model, size, counters, a layer the caller asks for
     * that the state lacks). */
    const er_run_state *resume;
    er_wants_fn wants;       /* may be NULL: every boundary is wanted */
} er_run_hooks;

/* Whether a run calls hk's boundary function at `boundary`: it has one and
 * wants that boundary. */
static inline int er_hooks_want(const er_run_hooks *hk, int64_t boundary, int64_t boundaries)
{
    return hk && hk->boundary && (!hk->wants || hk->wants(hk->user, boundary, boundaries));
}

/*
 * Height, water and sediment of a state view, as the run would hand them
 * back if it ended there (the model's state_layers, core/models.h): Mei
 * b0 + z (b0 = `input`, the run's input heights; walls and unchanged cells
 * keep b0), its depth and suspended sediment; droplets and SPH the first
 * three arrays of their states, the heights and layers as the run writes
 * them (zeros for a layer not kept).  Mei's non-finite values become 0,
 * as copy-out writes them.  A state of a later stage of a staged run
 * counts from the heights its stage started from (state->stage), not
 * from `input`.  Any output pointer may be NULL; each holds
 * width * height floats.  Thread-safe; parallel inside (OpenMP).
 */
void er_run_state_layers(const er_run_state *state, const float *input, const uint8_t *wall,
                         float *height, float *water, float *sediment);

/*
 * The models run through a plan and a backend (core/plan.h): er_plan_make
 * checks a recipe against a map, er_backend_cpu.run (or another backend's)
 * runs it through the model's ops (core/models.h).  The contract of every
 * run:
 *   - t->elevation is updated in place; the layers receive water and
 *     sediment (see er_layers);
 *   - the budget, when asked, is filled also after a failure;
 *   - ER_OK, ER_ENOMEM, ER_ENUMERIC (a non-finite value, the droplet run
 *     guard, an SPH particle past its speed bound), ER_ECANCELED
 *     (progress or a boundary callback asked), or ER_EINVAL (a resume
 *     state that does not fit);
 *   - with hooks, the output, budget included, is bit-identical whether a
 *     run goes straight through or is resumed from any boundary, for any
 *     thread count;
 *   - in a window (er_window; models with ER_CAP_WINDOW), the run is the
 *     whole-world run restricted to the map: Mei raindrops are drawn over
 *     the world and sources are in world pixel coordinates (a source
 *     outside the window adds nothing there; one outside the world is
 *     refused), the window's inner edges are open; droplet ids, starts,
 *     batches and tile grids are the whole world's, a per-cell count
 *     counts every world cell and droplet.height_unit must be a number;
 *   - droplets run by droplet.schedule: the block-coloured batches of
 *     core/droplet/blocks.h (the default) or the snapshot schedule
 *     (core/droplet/snapshot.c).
 * Thread-safe for distinct terrains.
 */

#endif
