/*
 * The droplet model's recipe section: its keys' places in er_droplet_params, types,
 * ranges and defaults (core/keys.h; the registry, core/models.h, puts them
 * under the model's name in the key table).
 *
 * Lague's constants (S. Lague's Hydraulic-Erosion project, after H. T.
 * Beyer 2015); the density is ours.  Lague's demo ran about one droplet
 * per cell (50,000-70,000 on 255^2) on smooth noise; on real DEMs, whose
 * valleys are already cut, that planes the relief into flat valley floors,
 * while 0.3 a cell carves gullies into the slopes and keeps the ridges
 * (checked by eye on the DEMs of tests/data and other real DEMs).  The
 * mass-transfer particle's defaults are McDonald's (N. McDonald 2020,
 * Simple particle-based hydraulic erosion).
 */
#include <stddef.h>

#include "../keys.h"
#include "../models.h"

#define ER_KEY_BASE er_droplet_params

static const char *const variant_names[] = {"lague", "mass-transfer", NULL};
static const char *const schedule_names[] = {"blocks", "snapshot", NULL};

/* Enums are written through an int: check they are int-sized. */
_Static_assert(sizeof(er_droplet_variant) == sizeof(int), "enum size");
_Static_assert(sizeof(er_droplet_schedule) == sizeof(int), "enum size");

static const er_key keys[] = {
    ER_INT("count", count, ER_KEY_NULL | ER_KEY_DEF_NULL, 0, 1e12, 0),
    ER_NUM("per_cell", per_cell, 0, 0, 1e4, 0.3),
    ER_ENUM("variant", variant, variant_names, ER_DROPLET_LAGUE),
    /* 0 = "relief" (the default): the input's highest minus lowest height */
    ER_NUM("height_unit", height_unit, ER_KEY_RELIEF | ER_KEY_MIN_OPEN, 0, 1e7, 0.0),
    /* 0: the droplet keys hold at the map's own cells, so a recipe that
     * does not set the key gets its keys as written on any map. */
    ER_NUM("reference_cell_size", reference_cell_size, 0, 0, 1e6, 0.0),
    /* The side of the batch schedule's scheduling blocks (core/droplet/blocks.c),
     * not of a tile set's tiles: the key keeps its name for recipes. */
    ER_INT("tile_size", tile_size, 0, 0, 1e6, 0),
    /* A batch holds 28 bytes a droplet at once (start, block, order): 1e8
     * is 2.8 GB (core/droplet/batch.c refuses more than INT_MAX / 2). */
    ER_INT("batch_size", batch_size, 0, 0, 1e8, 0),
    ER_ENUM("schedule", schedule, schedule_names, ER_DROPLET_BLOCKS),
    ER_INT("radius", radius, 0, 1, 64, 3),
    /* 1 would keep the first direction for ever, whatever the slope */
    ER_NUM("inertia", inertia, ER_KEY_MAX_OPEN, 0, 1, 0.05),
    ER_NUM("capacity", capacity, 0, 0, 1000, 4.0),
    ER_NUM("min_capacity", min_capacity, 0, 0, 1000, 0.01),
    ER_NUM("min_slope", min_slope, 0, 0, 1000, 0.0),
    ER_NUM("erode_speed", erode_speed, 0, 0, 1, 0.3),
    ER_NUM("deposit_speed", deposit_speed, 0, 0, 1, 0.3),
    ER_NUM("evaporate_speed", evaporate_speed, 0, 0, 1, 0.01),
    ER_NUM("gravity", gravity, 0, 0, 1000, 4.0),
    ER_INT("lifetime", lifetime, 0, 1, 1e5, 30),
    ER_NUM("initial_water", initial_water, ER_KEY_MIN_OPEN, 0, 1000, 1.0),
    ER_NUM("initial_speed", initial_speed, 0, 0, 1000, 1.0),

    ER_OBJ("mass_transfer"),
    ER_NUM("mass_transfer.dt", mt_dt, ER_KEY_MIN_OPEN, 0, 100, 1.2),
    ER_NUM("mass_transfer.density", mt_density, ER_KEY_MIN_OPEN, 0, 1e6, 1.0),
    ER_NUM("mass_transfer.friction", mt_friction, 0, 0, 100, 0.05),
    ER_NUM("mass_transfer.deposition_rate", mt_deposition_rate, 0, 0, 100, 0.1),
    ER_NUM("mass_transfer.evaporation_rate", mt_evaporation_rate, 0, 0, 100, 0.001),
    /* A particle starts with volume 1 (McDonald 2020) and stops once its volume
     * is below min_volume (core/droplet/particle.c): above 1 no particle takes a
     * step, at 1 each takes one step and stops as soon as it evaporates. */
    ER_NUM("mass_transfer.min_volume", mt_min_volume,
        ER_KEY_MIN_OPEN | ER_KEY_MAX_OPEN, 0, 1, 0.01),
    /* 512: a particle lives about 3,800 steps (evaporation to min_volume)
     * and travels hundreds of cells.  On the 1025^2 Puget Sound DEM (0.05
     * a cell) a cap of 512 ends 19 % of them, the rest leaving the map
     * (45 %) or evaporating (36 %); a cap of 64 would end 73 %.  The
     * price: blocks of 2 (512 + 3 + radius - 1) cells, so maps under
     * about 2,070 cells a side run as one block (one thread). */
    ER_INT("mass_transfer.max_distance", mt_max_distance, 0, 1, 1e5, 512),
};

const er_key *er_droplet_keys(size_t *n)
{
    *n = sizeof keys / sizeof keys[0];
    return keys;
}
