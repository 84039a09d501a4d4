/*
 * The droplet model's recipe section as a struct (core/params.h includes
 * it: er_params.droplet).  Its keys are in core/droplet/keys.c.
 */
#ifndef ER_DROPLET_PARAMS_H
#define ER_DROPLET_PARAMS_H

#include <stdint.h>

typedef enum er_droplet_variant {
    ER_DROPLET_LAGUE = 0,        /* Lague/Beyer droplets, one cell a step */
    ER_DROPLET_MASS_TRANSFER = 1 /* Newtonian particle, Power 2025 */
} er_droplet_variant;

/* How a batch's droplets share the terrain (core/droplet/snapshot.c). */
typedef enum er_droplet_schedule {
    ER_DROPLET_BLOCKS = 0,  /* 4-colour blocks, each block's droplets in order */
    ER_DROPLET_SNAPSHOT = 1 /* every droplet reads the batch start; fixed-point sums */
} er_droplet_schedule;

typedef struct er_droplet_params {
    int64_t count;          /* number of droplets; -1 = use per_cell */
    double per_cell;        /* droplets per valid cell when count == -1 */
    er_droplet_variant variant;
    double height_unit;     /* [m] heights are divided by this; 0 = "relief" */
    double reference_cell_size; /* [m] the keys hold at this cell size and are converted
                                   to the map's (er_droplet_at_cell_size); 0 = the map's */
    int64_t tile_size;      /* [cells] tile side T; 0 = the smallest safe size */
    int64_t batch_size;     /* droplets per batch; 0 = automatic */
    er_droplet_schedule schedule;
    /* Lague/Beyer droplets */
    int64_t radius;         /* [cells] erosion brush radius */
    double inertia;
    double capacity;        /* sediment capacity factor */
    double min_capacity;    /* lower bound on capacity (Lague) */
    double min_slope;       /* Beyer's minimum slope; 0 = Lague's capacity form */
    double erode_speed;
    double deposit_speed;
    double evaporate_speed;
    double gravity;
    int64_t lifetime;       /* [steps] */
    double initial_water;
    double initial_speed;
    /* mass-transfer particles (Power 2025; McDonald 2020) */
    double mt_dt;
    double mt_density;
    double mt_friction;
    double mt_deposition_rate;
    double mt_evaporation_rate;
    double mt_min_volume;
    int64_t mt_max_distance; /* [cells] farthest a particle may get from its start */
} er_droplet_params;

/* What the plan derives from the section on a map (er_plan.own.droplet). */
typedef struct er_droplet_derived {
    int64_t droplets;       /* the run's droplets (the world's, in a window) */
    double per_cell;        /* droplets per valid cell (per world cell in a window) */
    double height_unit;     /* [m] droplet.height_unit, "relief" measured on this map */
    int64_t reach;          /* [cells] how far a droplet reaches from its start */
    int64_t block_side;     /* [cells] the batch schedule's block side */
    int64_t batch;          /* droplets per batch */
    double area_k;          /* [1] (reference cell / cell)^2 of er_droplet_at_cell_size;
                               1: the droplet keys hold at this map's cells */
} er_droplet_derived;

/*
 * Converts droplet parameters that hold at a reference cell size into those
 * that give the same landscape at a cell size r times it (r = cell /
 * reference): the same droplets per km^2 (per_cell * r^2), the
 * same brush radius and path length in metres (radius, lifetime and
 * mass_transfer.max_distance / r, rounded, at least 1), per-step rates
 * compounded over the 1/r steps a reference step becomes (1 - (1 - x)^r:
 * erode, deposit and evaporate speeds; inertia^r), and for particles the
 * same time (mass_transfer.dt * r, so a step still moves about one cell,
 * with density * r keeping the acceleration in m/s^2; the kernel measures
 * the particle's slopes per cell, which sqrt(area_k) = 1 / r restores).
 * What a step moves is a height on one cell, a volume over r^2 of the
 * reference cell's area: *area_k = 1 / r^2 scales the step's erosion bound
 * and deposit (Lague: the height drop; capacity / r^3 and min_capacity /
 * r^2 with it) and the particle's equilibrium load, so each carries the
 * same volume per metre of path.  Measured on the Vermont DEM (90 m) and
 * its 2x bilinear resampling: mean lowering 9.97 vs 9.99 m (Lague, 0.3 a
 * reference cell) and 2.20 vs 2.11 m (mass transfer, 0.1), where the keys
 * converted to cells alone gave 2.32 and 0.63 m.  Thread-safe.
 */
void er_droplet_at_cell_size(er_droplet_params *d, double r, double *area_k);

#endif
