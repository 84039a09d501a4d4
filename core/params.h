/*
 * The validated recipe as plain structs (DESIGN.md §2).  No JSON here:
 * io/recipe.c fills these from a recipe file and `-s` overrides and writes
 * them back out for --print-recipe.  The key table of core/keys.c holds
 * every key's range and default; er_params_default() and er_params_check()
 * read them from there.
 *
 * Units follow DESIGN.md §3: the Mei model is dimensioned (metres, seconds),
 * the droplet model works in cell steps and height units.
 */
#ifndef ER_PARAMS_H
#define ER_PARAMS_H

#include <stdint.h>

#include "error.h"

#define ER_RECIPE_VERSION 1
#define ER_MAX_SOURCES 64

typedef enum er_model_kind { ER_MODEL_MEI = 0, ER_MODEL_DROPLET = 1, ER_MODEL_SPH = 2 } er_model_kind;
enum { ER_MODEL_KINDS = 3 }; /* the number of models (tables indexed by er_model_kind) */

typedef enum er_boundary { ER_BOUNDARY_CLOSED = 0, ER_BOUNDARY_OPEN = 1 } er_boundary;

typedef enum er_advection {
    ER_ADVECT_CONSERVATIVE = 0,    /* mass-conserving upwind transport (default) */
    ER_ADVECT_SEMI_LAGRANGIAN = 1  /* Mei eq. 14 as published */
} er_advection;

typedef enum er_cfl_policy {
    ER_CFL_SUBSTEP = 0, /* split a step into sub-steps when the CFL bound needs it */
    ER_CFL_ERROR = 1    /* stop with ER_ENUMERIC instead */
} er_cfl_policy;

typedef enum er_droplet_variant {
    ER_DROPLET_LAGUE = 0,        /* Lague/Beyer droplets, one cell a step */
    ER_DROPLET_MASS_TRANSFER = 1 /* Newtonian particle of seeds 001/002 */
} er_droplet_variant;

/* How a batch's droplets share the terrain (core/droplet/snapshot.c). */
typedef enum er_droplet_schedule {
    ER_DROPLET_BLOCKS = 0,  /* 4-colour blocks, each block's droplets in order */
    ER_DROPLET_SNAPSHOT = 1 /* every droplet reads the batch start; fixed-point sums */
} er_droplet_schedule;

typedef struct er_terrain_params {
    double vertical_scale;  /* working height [m] = value * scale + offset */
    double vertical_offset; /* [m] */
    double cell_size;       /* [m]; used only without georeferencing */
    int cell_size_set;      /* 0: recipe says null (use georef, else 1 m) */
} er_terrain_params;

/* A river source: water added at a fixed place each step (Mei eq. 1).
 * Pixel coordinates address cell centres: cell (column i, row j) is at
 * (i, j), so a map coordinate X converts as (X - X_origin) / pixel_size - 0.5.
 * er_mei_run takes pixel coordinates only (map_coords == 0, else
 * ER_EINVAL): the CLI converts map coordinates before the run. */
typedef struct er_source {
    double x, y;      /* centre: pixels (column, row) or map units, see map_coords */
    int map_coords;   /* 0: x, y are pixel coordinates; 1: georeferenced map coords */
    double radius;    /* [cells] water falls on cells within this distance */
    double rate;      /* [m/s] water depth added per second on each covered cell */
} er_source;

typedef struct er_mei_params {
    int64_t steps;          /* number of time steps, >= 0 */
    double dt;              /* [s] time step */
    double gravity;         /* [m/s^2] g in eq. 2 */
    double pipe_area;       /* A in eq. 2 as a multiple of the cell area: A = pipe_area * lX * lY */
    double rain_rate;       /* [m/s] uniform rain r_t in eq. 1 */
    int64_t rain_steps;     /* rain only during the first N steps; 0 = every step */
    int64_t drops_per_step; /* random raindrops per step */
    double drop_radius;     /* [cells] radius of one raindrop */
    double drop_amount;     /* [m] water depth one raindrop adds on the cells it covers */
    int n_sources;
    er_source sources[ER_MAX_SOURCES];
    er_boundary boundary;
    double kc;              /* sediment capacity constant Kc (eq. 10) [s] */
    double ks;              /* dissolving constant Ks (eq. 11) [1/s]: a rate, a step dissolves
                             * min(1, ks * dt) of the capacity deficit (the paper prints no dt) */
    double kd;              /* deposition constant Kd (eq. 12) [1/s]: a step deposits
                             * min(1, kd * dt) of the excess */
    double ke;              /* evaporation constant Ke (eq. 15) [1/s] */
    double min_tilt;        /* lower bound on sin(alpha) in eq. 10 */
    double max_erosion_depth; /* [m] most terrain one step may remove from a cell */
    er_advection advection;
    double thermal_rate;    /* thermal weathering rate [1/s]; 0 = off */
    double talus_slope;     /* talus: largest stable height difference per metre */
    er_cfl_policy cfl;
    int64_t max_substeps;   /* cap on sub-steps per step under ER_CFL_SUBSTEP */
    double reference_cell_size; /* [m] the keys that count cells (drop_radius, sources'
                                 * radius, thermal_rate per cell area) hold at this cell
                                 * size and are converted to the map's; 0 = off */
    double capacity_depth;  /* [m] reference depth D: the capacity is C * dbar / D
                             * = Kc sin(alpha) q / D with q = |v| dbar the discharge
                             * per width (converges in dt); 0 = eq. 10 as printed */
} er_mei_params;

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
    /* mass-transfer particles (seeds 001/002) */
    double mt_dt;
    double mt_density;
    double mt_friction;
    double mt_deposition_rate;
    double mt_evaporation_rate;
    double mt_min_volume;
    int64_t mt_max_distance; /* [cells] farthest a particle may get from its start */
} er_droplet_params;

/* SPH water over the heightfield (Kristof et al. 2009, core/sph/).  The
 * model runs in a frame scaled by the cell size L and the time
 * T = sqrt(L / g) (Froude scaling): keys marked "model units" are in that
 * frame, see core/sph/sph.c.  River sources are mei.sources. */
typedef struct er_sph_params {
    int64_t steps;          /* number of time steps, >= 0 */
    double dt;              /* [s] time step (sub-stepped by the CFL and viscous limits) */
    double gravity;         /* [m/s^2] g; sets the time unit T = sqrt(L / g) */
    double spacing;         /* [cells] particle spacing; h = 2 * spacing */
    double fill_level;      /* [m] initial water up to this height; see fill_level_set */
    int fill_level_set;     /* 0: recipe says null (no initial water) */
    double sound_speed;     /* [model units, sqrt(g L)] c0 of the equation of state */
    double viscosity;       /* [model units, sqrt(g L^3)] kinematic viscosity nu */
    double friction;        /* boundary friction mu of eq. 8 [model units] */
    double erosion_rate;    /* K_eps of eq. 10 [model units] */
    double critical_shear;  /* tau_c of eq. 10 [model units] */
    double settling_speed;  /* [m/s] unhindered settling speed, eq. 17 without f(C) */
    double c_max;           /* largest solid volume fraction C of a particle */
    int64_t max_particles;  /* particles at most (sources stop adding beyond it) */
    int64_t max_substeps;   /* cap on sub-steps per step */
    er_boundary boundary;   /* map edges: open (water leaves) or closed */
} er_sph_params;

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
} er_control_paths;

typedef struct er_params {
    int recipe_version;     /* always ER_RECIPE_VERSION once validated */
    er_model_kind model;
    uint64_t seed;
    er_control_paths maps;  /* control rasters; "" = none */
    er_terrain_params terrain;
    er_mei_params mei;
    er_droplet_params droplet;
    er_sph_params sph;
} er_params;

/*
 * Converts droplet parameters that hold at a reference cell size into those
 * that give the same landscape at a cell size r times it (r = cell /
 * reference; issue #18): the same droplets per km^2 (per_cell * r^2), the
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
