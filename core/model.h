/*
 * The entry points every compute path implements for both models, and the
 * types they share.  core/ computes on these structs only: it opens no file,
 * prints nothing and never sets the thread count (cli/ does, with -j).
 */
#ifndef ER_MODEL_H
#define ER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "params.h"

/* The map a model works on.  Row-major, width * height cells, no padding. */
typedef struct er_terrain {
    int width, height;
    float *elevation;     /* [m] working terrain height; updated in place */
    const uint8_t *wall;  /* 1 = nodata cell (a wall), 0 = terrain; NULL = none */
    double cell_x;        /* [m] distance between cell centres along a row (lX) */
    double cell_y;        /* [m] distance between rows (lY) */
} er_terrain;

/* Output layers besides the height (DESIGN.md §4), each width * height
 * floats supplied by the caller, in the same height unit as er_terrain.
 * Any pointer may be NULL when the layer is not wanted. */
typedef struct er_layers {
    float *water;     /* Mei: depth d at the end; droplets: total water that passed */
    float *sediment;  /* Mei: suspended s at the end; droplets: material deposited */
} er_layers;

/* The material budget of one run.  Volumes are sums of heights over cells,
 * in metres * cells: multiply by cell_x * cell_y for cubic metres.  Sums are
 * formed in a fixed order, so they are identical for any thread count. */
typedef struct er_budget {
    double material_before; /* terrain (+ suspended sediment for Mei) at start */
    double material_after;  /* the same at the end */
    double left_map;        /* material that left through open edges / off the map */
    double eroded;          /* terrain removed, summed over all events */
    double deposited;       /* terrain added, summed over all events */
    double water_added;     /* Mei: rain + sources; droplets: initial water */
    double water_left;      /* Mei: water that left through open edges */
    double rel_error;       /* |before - after - left_map| / max(|before|, tiny) */
    int64_t work_done;      /* Mei: time steps run (sub-steps counted once); droplets: droplets run */
    int64_t substeps;       /* Mei: total sub-steps; droplets: total droplet steps */
} er_budget;

/* Called on the calling thread between steps (Mei) or batches (droplets)
 * with the fraction done in [0, 1]; a non-zero return cancels the run,
 * which then returns ER_ECANCELED and leaves the terrain in its state at
 * that step boundary. */
typedef int (*er_progress_fn)(void *user, double fraction);

/* Where a map sits in a larger world, e.g. one tile of a mosaic extended
 * by its halo (DESIGN.md §3, README "Tile sets"): the map's top-left cell
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

/*
 * Runs the Mei et al. (2007) grid model for p->mei.steps steps.
 * t->elevation is updated in place; layers receive water and suspended sediment.
 * Returns ER_OK, ER_ENOMEM, ER_ENUMERIC (CFL violated under ER_CFL_ERROR, or
 * a non-finite value) or ER_ECANCELED.  Thread-safe for distinct terrains.
 */
er_status er_mei_run(const er_params *p, er_terrain *t, er_layers *layers,
                     const er_run_ctl *ctl, er_budget *budget, er_error *err);

/* Bytes of working memory er_mei_run allocates per cell (beyond the caller's
 * terrain and layers), so the caller can refuse a map that will not fit. */
size_t er_mei_bytes_per_cell(const er_params *p);

/*
 * er_mei_run on a window of a larger world (win may be NULL: the map is the
 * world).  Raindrops are drawn over the world and sources are in world
 * pixel coordinates (a source outside the window adds nothing there); the
 * window's inner edges are open.  ER_EINVAL when the map does not fit in
 * the world.  Thread-safe for distinct terrains.
 */
er_status er_mei_run_window(const er_params *p, er_terrain *t, const er_window *win,
                            er_layers *layers, const er_run_ctl *ctl, er_budget *budget,
                            er_error *err);

/*
 * Runs droplet erosion (Lague/Beyer or the mass-transfer particle) with the
 * tile-coloured batch schedule of DESIGN.md §5.  Same contract as
 * er_mei_run; ER_EINVAL when droplet.tile_size is below the safe bound.
 */
er_status er_droplet_run(const er_params *p, er_terrain *t, er_layers *layers,
                         const er_run_ctl *ctl, er_budget *budget, er_error *err);

size_t er_droplet_bytes_per_cell(const er_params *p);

/*
 * er_droplet_run on a window of a larger world (win may be NULL: the map
 * is the world).  Droplet ids, start positions, batches and tile grids are
 * those of the whole world; the run keeps the droplets that start inside
 * the window.  A per-cell count counts every world cell (nodata included,
 * which the window cannot see) and droplet.height_unit must be a number
 * ("relief" is a property of one map): ER_EINVAL otherwise, and when the
 * map does not fit in the world.  Thread-safe for distinct terrains.
 */
er_status er_droplet_run_window(const er_params *p, er_terrain *t, const er_window *win,
                                er_layers *layers, const er_run_ctl *ctl, er_budget *budget,
                                er_error *err);

#endif
