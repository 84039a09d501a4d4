#include "params.h"

#include <string.h>

/* The Mei defaults are not the paper's literal constants: see
 * er_mei_params in params.h and man/erode-recipe.5 for why each is what
 * it is.  Droplet defaults are Lague's (seeds/README.md) and, for the
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

    er_mei_params *m = &p->mei;
    m->steps = 1000;
    m->dt = 0.02;
    m->gravity = 9.81;
    m->pipe_area = 1.0;
    m->rain_rate = 0.0;
    m->rain_steps = 0;
    m->drops_per_step = 0;
    m->drop_radius = 2.0;
    m->drop_amount = 0.01;
    m->n_sources = 0;
    m->boundary = ER_BOUNDARY_CLOSED;
    m->kc = 0.1;
    m->ks = 0.1;
    m->kd = 0.1;
    m->ke = 0.01;
    m->min_tilt = 0.05;
    m->max_erosion_depth = 0.1;
    m->advection = ER_ADVECT_CONSERVATIVE;
    m->thermal_rate = 0.0;
    m->talus_slope = 0.7;
    m->cfl = ER_CFL_SUBSTEP;
    m->max_substeps = 64;

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
