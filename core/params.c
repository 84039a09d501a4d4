#include "params.h"

#include <string.h>

/* The Mei defaults are not the paper's literal constants: see the comment
 * below and er_mei_params in params.h for why each is what it is.  Droplet
 * defaults are Lague's (seeds/README.md) and, for the
 * mass-transfer variant, McDonald's (seed 002). */
void er_params_default(er_params *p)
{
    memset(p, 0, sizeof *p);
    p->recipe_version = ER_RECIPE_VERSION;
    p->model = ER_MODEL_MEI;
    p->seed = 1;

    p->terrain.vertical_scale = 1.0;
    p->terrain.vertical_offset = 0.0;
    p->terrain.cell_size = 1.0;
    p->terrain.cell_size_set = 0;

    /* Mei defaults.  The paper's constants taken literally in SI units
     * wreck a real DEM, so these follow from scale arguments instead
     * (core/mei.c, core/erosion.c):
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
     * On the DEMs of shared/data/dem this gives incised gullies on the
     * slopes and flattened, filled valley floors, no NaN, in well under a
     * minute each (4000 steps of a 1025^2 map on two cores). */
    er_mei_params *m = &p->mei;
    m->steps = 4000;
    m->dt = 0.02;
    m->gravity = 9.81;
    m->pipe_area = 1.0;
    m->rain_rate = 0.001;
    m->rain_steps = 0;
    m->drops_per_step = 0;
    m->drop_radius = 2.0;
    m->drop_amount = 0.001;
    m->n_sources = 0;
    m->boundary = ER_BOUNDARY_OPEN;
    m->kc = 0.1;
    m->ks = 0.02;
    m->kd = 0.1;
    m->ke = 0.1;
    m->min_tilt = 0.01;
    m->max_erosion_depth = 1.0;
    m->advection = ER_ADVECT_CONSERVATIVE;
    m->thermal_rate = 0.0;
    m->talus_slope = 0.7;
    m->cfl = ER_CFL_SUBSTEP;
    m->max_substeps = 64;
    m->capacity_depth = 0.01;

    /* Droplets: Lague's constants; the density is ours.  Lague's demo ran
     * about one droplet per cell (50,000-70,000 on 255^2) on smooth noise;
     * on real DEMs, whose valleys are already cut, that planes the relief
     * into flat valley floors, while 0.3 a cell carves gullies into the
     * slopes and keeps the ridges (checked by eye on the DEMs of
     * tests/data and shared/data/dem). */
    er_droplet_params *d = &p->droplet;
    d->count = -1;
    d->per_cell = 0.3;
    d->variant = ER_DROPLET_LAGUE;
    d->height_unit = 0.0;
    d->tile_size = 0;
    d->batch_size = 0;
    d->radius = 3;
    d->inertia = 0.05;
    d->capacity = 4.0;
    d->min_capacity = 0.01;
    d->min_slope = 0.0;
    d->erode_speed = 0.3;
    d->deposit_speed = 0.3;
    d->evaporate_speed = 0.01;
    d->gravity = 4.0;
    d->lifetime = 30;
    d->initial_water = 1.0;
    d->initial_speed = 1.0;
    d->mt_dt = 1.2;
    d->mt_density = 1.0;
    d->mt_friction = 0.05;
    d->mt_deposition_rate = 0.1;
    d->mt_evaporation_rate = 0.001;
    d->mt_min_volume = 0.01;
    d->mt_max_distance = 64;
}
