/*
 * The SPH model's recipe section: its keys' places in er_sph_params, types,
 * ranges and defaults (core/keys.h; the registry, core/models.h, puts them
 * under the model's name in the key table).
 *
 * core/sph/sph.c explains the model units and the defaults.
 */
#include <stddef.h>

#include "../keys.h"
#include "../models.h"
#include "sph_internal.h"

#define ER_KEY_BASE er_sph_params

static const er_key keys[] = {
    ER_INT("steps", steps, 0, 0, 1e9, 200),
    ER_NUM("dt", dt, ER_KEY_MIN_OPEN, 0, 1000, 1.0),
    ER_NUM("gravity", gravity, ER_KEY_MIN_OPEN, 0, 100, 9.81),
    /* "auto" (0): the finest that fits the fill in max_particles (sph.c auto_spacing) */
    ER_NUM("spacing", spacing, ER_KEY_AUTO, 0.1, ER_SPH_SPACING_MAX, ER_SPH_SPACING),
    {"fill_level", ER_KEY_NUM, ER_KEY_NULL | ER_KEY_DEF_NULL, ER_KEY_AT(fill_level),
     ER_KEY_AT(fill_level_set), -1e7, 1e7, 0.0, NULL},
    /* the fill level relative to the map: fill_level on any DEM */
    {"fill_quantile", ER_KEY_NUM, ER_KEY_NULL | ER_KEY_DEF_NULL, ER_KEY_AT(fill_quantile),
     ER_KEY_AT(fill_quantile_set), 0, 1, 0.0, NULL},
    /* null: the least the water's drop allows (sph.c check_sound_speed) */
    {"sound_speed", ER_KEY_NUM, ER_KEY_MIN_OPEN | ER_KEY_NULL, ER_KEY_AT(sound_speed),
     ER_KEY_AT(sound_speed_set), 0, 1000, ER_SPH_SOUND_SPEED, NULL},
    ER_NUM("viscosity", viscosity, 0, 0, 10, 0.1),
    ER_NUM("friction", friction, 0, 0, 10, 0.05),
    ER_NUM("erosion_rate", erosion_rate, 0, 0, 100, 0.002),
    ER_NUM("critical_shear", critical_shear, 0, 0, 1000, 0.5),
    ER_NUM("settling_speed", settling_speed, 0, 0, 100, 1.0),
    ER_NUM("c_max", c_max, ER_KEY_MIN_OPEN, 0, 1, 0.3),
    ER_INT("max_particles", max_particles, 0, 0, 1e8, 200000),
    ER_INT("max_substeps", max_substeps, 0, 1, 1e6, 1000),
    ER_ENUM("boundary", boundary, er_boundary_names, ER_BOUNDARY_OPEN),
};

const er_key *er_sph_keys(size_t *n)
{
    *n = sizeof keys / sizeof keys[0];
    return keys;
}
