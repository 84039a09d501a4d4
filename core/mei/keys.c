/*
 * The Mei model's recipe section: its keys' places in er_mei_params, types,
 * ranges and defaults (core/keys.h; the registry, core/models.h, puts them
 * under the model's name in the key table).
 *
 * The defaults are not the paper's literal constants, which taken in
 * SI units wreck a real DEM; they follow from scale arguments instead
 * (core/mei/mei.c, core/mei/erosion.c):
 *
 * - On any slope the frictionless pipe flow soon moves all of a cell's
 *   water each step (eq. 4 limits it), so |v| ~ lX / dt and the
 *   capacity of eq. 10 is C ~ (kc / dt) * (height drop to the next
 *   cell).  A step then erodes ks * kc of that drop: the same share
 *   of the local relief on a 1 m PNG cell as on a 90 m UTM cell, for
 *   relief of 1 m or 1000 m.  ks * kc = 0.002 per step over 4000 steps
 *   cuts gullies a good fraction of the local relief deep.
 * - capacity_depth: eq. 10 as printed lets a film of rain carry as
 *   much as a river, which lowers whole slopes evenly and cuts no
 *   gullies.  Scaling C by min(1, d / 1 cm) makes runoff that gathers
 *   from a few hundred cells (rain of 2e-5 m a step) carry the full
 *   capacity and sheet flow little, so channels incise.
 * - rain 1 mm/s for 4000 steps of 0.02 s is 8 cm of water: it wets
 *   every slope (erosion needs water, not much of it) and fills pits,
 *   but does not drown a map whose whole relief is 1 m (a PNG read as
 *   0..1).  ke = 0.1/s keeps standing water to about rain/ke = 1 cm
 *   on flats; open edges let rivers leave a DEM tile instead of
 *   pooling against its border (closed edges make every valley that
 *   leaves the tile a lake).
 * - dt = 0.02 s is far inside the pipe model's own stability limit
 *   dt <= sqrt(lX lY / (g pipe_area (lX + lY))), 0.23 s for 1 m cells
 *   (90 m cells: 2.1 s), so no default run needs sub-steps.
 * - kd = 0.1/s settles excess sediment within a few hundred steps, in
 *   the basins where the flow slows down.  min_tilt 0.01 (a 1 % slope)
 *   keeps some capacity on flats without eroding them like slopes.
 * - max_erosion_depth 1 m never binds at these rates (a step removes
 *   at most ks dt C, centimetres on the steepest 90 m DEM); it and the
 *   lowest-neighbour limit stop runaway digging with bolder recipes.
 * On real 1025^2 DEMs this gives incised gullies on the
 * slopes and flattened, filled valley floors, no NaN, in well under a
 * minute each (4000 steps of a 1025^2 map on two cores).
 */
#include <stddef.h>

#include "../keys.h"
#include "../models.h"

#define ER_KEY_BASE er_mei_params

static const char *const advection_names[] = {"conservative", "semi-lagrangian", NULL};
static const char *const cfl_names[] = {"substep", "error", NULL};
static const char *const river_sources_name[] = {"river_sources", NULL};

/* Enums are written through an int: check they are int-sized. */
_Static_assert(sizeof(er_advection) == sizeof(int), "enum size");
_Static_assert(sizeof(er_cfl_policy) == sizeof(int), "enum size");

static const er_key keys[] = {
    ER_INT("steps", steps, 0, 0, 1e9, 4000),
    ER_NUM("dt", dt, ER_KEY_MIN_OPEN, 0, 10, 0.02),
    ER_NUM("gravity", gravity, ER_KEY_MIN_OPEN, 0, 100, 9.81),
    ER_NUM("pipe_area", pipe_area, ER_KEY_MIN_OPEN, 0, 100, 1.0),
    ER_NUM("rain_rate", rain_rate, 0, 0, 1, 0.001),
    ER_INT("rain_steps", rain_steps, 0, 0, 1e9, 0),
    ER_INT("drops_per_step", drops_per_step, 0, 0, 1e9, 0),
    ER_NUM("drop_radius", drop_radius, ER_KEY_MIN_OPEN, 0, 1000, 2.0),
    ER_NUM("drop_amount", drop_amount, 0, 0, 100, 0.001),
    /* the old spelling of river_sources (core/sources.h), read into it */
    {"sources", ER_KEY_SOURCES, ER_KEY_OLD_NAME, 0, 0, 0, ER_MAX_SOURCES, 0, river_sources_name},
    ER_ENUM("boundary", boundary, er_boundary_names, ER_BOUNDARY_OPEN),
    ER_NUM("kc", kc, 0, 0, 1000, 0.1),
    ER_NUM("ks", ks, 0, 0, 1000, 0.02),
    ER_NUM("kd", kd, 0, 0, 1000, 0.1),
    ER_NUM("ke", ke, 0, 0, 1000, 0.1),
    ER_NUM("min_tilt", min_tilt, 0, 0, 1, 0.01),
    ER_NUM("max_erosion_depth", max_erosion_depth, ER_KEY_MIN_OPEN, 0, 1000, 1.0),
    ER_NUM("capacity_depth", capacity_depth, 0, 0, 1000, 0.01),
    ER_ENUM("advection", advection, advection_names, ER_ADVECT_CONSERVATIVE),
    ER_NUM("thermal_rate", thermal_rate, 0, 0, 1000, 0.0),
    ER_NUM("talus_slope", talus_slope, 0, 0, 100, 0.7),
    ER_ENUM("cfl", cfl, cfl_names, ER_CFL_SUBSTEP),
    ER_INT("max_substeps", max_substeps, 0, 1, 1e6, 64),
    /* 0: the recipe's cells are the map's, so a recipe that does not set the
     * key gets its keys as written on any map */
    ER_NUM("reference_cell_size", reference_cell_size, 0, 0, 1e6, 0.0),
};

const er_key *er_mei_keys(size_t *n)
{
    *n = sizeof keys / sizeof keys[0];
    return keys;
}
