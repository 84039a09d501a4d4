/*
 * The recipe key table (keys.h): every key's place, type, range and
 * default in one row, so a key added to er_params needs one new row here
 * and its entry in man/erode-recipe.5 (the lint compares the two).
 */
#include "keys.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

static const char *const model_names[] = {"mei", "droplet", "sph", NULL};
static const char *const boundary_names[] = {"closed", "open", NULL};
static const char *const advection_names[] = {"conservative", "semi-lagrangian", NULL};
static const char *const cfl_names[] = {"substep", "error", NULL};
static const char *const variant_names[] = {"lague", "mass-transfer", NULL};
static const char *const coords_names[] = {"pixel", "map", NULL};
static const char *const schedule_names[] = {"blocks", "snapshot", NULL};

/* Enums are written through an int: check they are int-sized. */
_Static_assert(sizeof(er_model_kind) == sizeof(int), "enum size");
_Static_assert(sizeof(er_boundary) == sizeof(int), "enum size");
_Static_assert(sizeof(er_advection) == sizeof(int), "enum size");
_Static_assert(sizeof(er_cfl_policy) == sizeof(int), "enum size");
_Static_assert(sizeof(er_droplet_variant) == sizeof(int), "enum size");
_Static_assert(sizeof(er_droplet_schedule) == sizeof(int), "enum size");

#define P(f) offsetof(er_params, f)
#define OBJ(path) {path, ER_KEY_OBJECT, 0, 0, 0, 0, 0, 0, NULL}
#define NUM(path, f, fl, lo, hi, def) {path, ER_KEY_NUM, fl, P(f), 0, lo, hi, def, NULL}
#define INT(path, f, fl, lo, hi, def) {path, ER_KEY_INT, fl, P(f), 0, lo, hi, def, NULL}
#define ENUM(path, f, names, def) {path, ER_KEY_ENUM, 0, P(f), 0, 0, 0, def, names}

/* 2^53 - 1: the largest seed every JSON reader holds exactly; 2^53 + 1
 * would read as 2^53 and pass silently. */
#define SEED_MAX 9007199254740991.0

/*
 * Every key, in the order --print-recipe writes them (a parent object
 * before its keys).  Ranges: positive where the physics divides by the
 * value or needs it to move anything, [0, 1] for fractions, and an upper
 * bound everywhere that stops a typo (an extra three zeros) from starting a
 * run that can only produce garbage or never end.  man/erode-recipe.5
 * states each range and default; the lint (tests/lint.sh) checks the two
 * agree.
 *
 * The Mei defaults are not the paper's literal constants, which taken in
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
 * On the DEMs of shared/data/dem this gives incised gullies on the
 * slopes and flattened, filled valley floors, no NaN, in well under a
 * minute each (4000 steps of a 1025^2 map on two cores).
 *
 * Droplets: Lague's constants (seeds/README.md); the density is ours.
 * Lague's demo ran about one droplet per cell (50,000-70,000 on 255^2) on
 * smooth noise; on real DEMs, whose valleys are already cut, that planes
 * the relief into flat valley floors, while 0.3 a cell carves gullies into
 * the slopes and keeps the ridges (checked by eye on the DEMs of
 * tests/data and shared/data/dem).  The mass-transfer particle's defaults
 * are McDonald's (seed 002).
 */
static const er_key keys[] = {
    {"erode_recipe", ER_KEY_VERSION, 0, P(recipe_version), 0, 0, 0, ER_RECIPE_VERSION, NULL},
    {"comment", ER_KEY_COMMENT, 0, 0, 0, 0, 0, 0, NULL},
    ENUM("model", model, model_names, ER_MODEL_MEI),
    {"seed", ER_KEY_U64, 0, P(seed), 0, 0, SEED_MAX, 1, NULL},
    /* control rasters (core/controls.h), null: none */
    {"hardness", ER_KEY_PATH, ER_KEY_NULL | ER_KEY_DEF_NULL, P(maps.hardness), 0, 0, 0, 0, NULL},
    {"rain", ER_KEY_PATH, ER_KEY_NULL | ER_KEY_DEF_NULL, P(maps.rain), 0, 0, 0, 0, NULL},
    {"mask", ER_KEY_PATH, ER_KEY_NULL | ER_KEY_DEF_NULL, P(maps.mask), 0, 0, 0, 0, NULL},
    {"sources", ER_KEY_PATH, ER_KEY_NULL | ER_KEY_DEF_NULL, P(maps.sources), 0, 0, 0, 0, NULL},

    OBJ("terrain"),
    /* >= 1e-6: every layer is written divided by the scale, and a smaller one
     * can turn a finite water depth into an infinite float (issue #12). */
    NUM("terrain.vertical_scale", terrain.vertical_scale, 0, 1e-6, 1e6, 1.0),
    NUM("terrain.vertical_offset", terrain.vertical_offset, 0, -1e7, 1e7, 0.0),
    /* null (the default): the input's georeferencing, else 1 m */
    {"terrain.cell_size", ER_KEY_NUM, ER_KEY_NULL | ER_KEY_DEF_NULL | ER_KEY_MIN_OPEN,
     P(terrain.cell_size), P(terrain.cell_size_set), 0, 1e6, 1.0, NULL},

    OBJ("mei"),
    INT("mei.steps", mei.steps, 0, 0, 1e9, 4000),
    NUM("mei.dt", mei.dt, ER_KEY_MIN_OPEN, 0, 10, 0.02),
    NUM("mei.gravity", mei.gravity, ER_KEY_MIN_OPEN, 0, 100, 9.81),
    NUM("mei.pipe_area", mei.pipe_area, ER_KEY_MIN_OPEN, 0, 100, 1.0),
    NUM("mei.rain_rate", mei.rain_rate, 0, 0, 1, 0.001),
    INT("mei.rain_steps", mei.rain_steps, 0, 0, 1e9, 0),
    INT("mei.drops_per_step", mei.drops_per_step, 0, 0, 1e9, 0),
    NUM("mei.drop_radius", mei.drop_radius, ER_KEY_MIN_OPEN, 0, 1000, 2.0),
    NUM("mei.drop_amount", mei.drop_amount, 0, 0, 100, 0.001),
    {"mei.sources", ER_KEY_SOURCES, 0, P(mei.sources), P(mei.n_sources), 0, ER_MAX_SOURCES, 0,
     NULL},
    ENUM("mei.boundary", mei.boundary, boundary_names, ER_BOUNDARY_OPEN),
    NUM("mei.kc", mei.kc, 0, 0, 1000, 0.1),
    NUM("mei.ks", mei.ks, 0, 0, 1000, 0.02),
    NUM("mei.kd", mei.kd, 0, 0, 1000, 0.1),
    NUM("mei.ke", mei.ke, 0, 0, 1000, 0.1),
    NUM("mei.min_tilt", mei.min_tilt, 0, 0, 1, 0.01),
    NUM("mei.max_erosion_depth", mei.max_erosion_depth, ER_KEY_MIN_OPEN, 0, 1000, 1.0),
    NUM("mei.capacity_depth", mei.capacity_depth, 0, 0, 1000, 0.01),
    ENUM("mei.advection", mei.advection, advection_names, ER_ADVECT_CONSERVATIVE),
    NUM("mei.thermal_rate", mei.thermal_rate, 0, 0, 1000, 0.0),
    NUM("mei.talus_slope", mei.talus_slope, 0, 0, 100, 0.7),
    ENUM("mei.cfl", mei.cfl, cfl_names, ER_CFL_SUBSTEP),
    INT("mei.max_substeps", mei.max_substeps, 0, 1, 1e6, 64),
    /* 0: the recipe's cells are the map's (every recipe's old result) */
    NUM("mei.reference_cell_size", mei.reference_cell_size, 0, 0, 1e6, 0.0),

    OBJ("droplet"),
    INT("droplet.count", droplet.count, ER_KEY_NULL | ER_KEY_DEF_NULL, 0, 1e12, 0),
    NUM("droplet.per_cell", droplet.per_cell, 0, 0, 1e4, 0.3),
    ENUM("droplet.variant", droplet.variant, variant_names, ER_DROPLET_LAGUE),
    /* 0 = "relief" (the default): the input's highest minus lowest height */
    NUM("droplet.height_unit", droplet.height_unit, ER_KEY_RELIEF | ER_KEY_MIN_OPEN, 0, 1e7, 0.0),
    /* 0: the droplet keys hold at the map's own cells, as before the key
     * existed (issue #18), so every recipe keeps its result. */
    NUM("droplet.reference_cell_size", droplet.reference_cell_size, 0, 0, 1e6, 0.0),
    /* The side of the batch schedule's scheduling blocks (core/droplet/blocks.c),
     * not of a tile set's tiles: the key keeps its name for recipes. */
    INT("droplet.tile_size", droplet.tile_size, 0, 0, 1e6, 0),
    /* A batch holds 28 bytes a droplet at once (start, block, order): 1e8
     * is 2.8 GB (core/droplet/batch.c refuses more than INT_MAX / 2). */
    INT("droplet.batch_size", droplet.batch_size, 0, 0, 1e8, 0),
    ENUM("droplet.schedule", droplet.schedule, schedule_names, ER_DROPLET_BLOCKS),
    INT("droplet.radius", droplet.radius, 0, 1, 64, 3),
    /* 1 would keep the first direction for ever, whatever the slope */
    NUM("droplet.inertia", droplet.inertia, ER_KEY_MAX_OPEN, 0, 1, 0.05),
    NUM("droplet.capacity", droplet.capacity, 0, 0, 1000, 4.0),
    NUM("droplet.min_capacity", droplet.min_capacity, 0, 0, 1000, 0.01),
    NUM("droplet.min_slope", droplet.min_slope, 0, 0, 1000, 0.0),
    NUM("droplet.erode_speed", droplet.erode_speed, 0, 0, 1, 0.3),
    NUM("droplet.deposit_speed", droplet.deposit_speed, 0, 0, 1, 0.3),
    NUM("droplet.evaporate_speed", droplet.evaporate_speed, 0, 0, 1, 0.01),
    NUM("droplet.gravity", droplet.gravity, 0, 0, 1000, 4.0),
    INT("droplet.lifetime", droplet.lifetime, 0, 1, 1e5, 30),
    NUM("droplet.initial_water", droplet.initial_water, ER_KEY_MIN_OPEN, 0, 1000, 1.0),
    NUM("droplet.initial_speed", droplet.initial_speed, 0, 0, 1000, 1.0),

    OBJ("droplet.mass_transfer"),
    NUM("droplet.mass_transfer.dt", droplet.mt_dt, ER_KEY_MIN_OPEN, 0, 100, 1.2),
    NUM("droplet.mass_transfer.density", droplet.mt_density, ER_KEY_MIN_OPEN, 0, 1e6, 1.0),
    NUM("droplet.mass_transfer.friction", droplet.mt_friction, 0, 0, 100, 0.05),
    NUM("droplet.mass_transfer.deposition_rate", droplet.mt_deposition_rate, 0, 0, 100, 0.1),
    NUM("droplet.mass_transfer.evaporation_rate", droplet.mt_evaporation_rate, 0, 0, 100, 0.001),
    /* A particle starts with volume 1 (seed 002) and stops once its volume
     * is below min_volume (core/droplet/particle.c): above 1 no particle takes a
     * step, at 1 each takes one step and stops as soon as it evaporates. */
    NUM("droplet.mass_transfer.min_volume", droplet.mt_min_volume,
        ER_KEY_MIN_OPEN | ER_KEY_MAX_OPEN, 0, 1, 0.01),
    /* 512, not 64 (issue #18): a particle lives about 3,800 steps
     * (evaporation to min_volume) and travels hundreds of cells; at 64
     * the cap ended 73 % of them on the 1025^2 Puget Sound DEM (0.05 a
     * cell), at 512 19 %, the rest leaving the map (45 %) or evaporating
     * (36 %).  The price: blocks of 2 (512 + 3 + radius - 1) cells, so
     * maps under about 2,070 cells a side run as one block (one thread). */
    INT("droplet.mass_transfer.max_distance", droplet.mt_max_distance, 0, 1, 1e5, 512),

    /* SPH (core/sph/sph.c explains the model units and the defaults). */
    OBJ("sph"),
    INT("sph.steps", sph.steps, 0, 0, 1e9, 200),
    NUM("sph.dt", sph.dt, ER_KEY_MIN_OPEN, 0, 1000, 1.0),
    NUM("sph.gravity", sph.gravity, ER_KEY_MIN_OPEN, 0, 100, 9.81),
    NUM("sph.spacing", sph.spacing, 0, 0.1, 4, 0.5),
    {"sph.fill_level", ER_KEY_NUM, ER_KEY_NULL | ER_KEY_DEF_NULL, P(sph.fill_level),
     P(sph.fill_level_set), -1e7, 1e7, 0.0, NULL},
    NUM("sph.sound_speed", sph.sound_speed, ER_KEY_MIN_OPEN, 0, 1000, 20.0),
    NUM("sph.viscosity", sph.viscosity, 0, 0, 10, 0.1),
    NUM("sph.friction", sph.friction, 0, 0, 10, 0.05),
    NUM("sph.erosion_rate", sph.erosion_rate, 0, 0, 100, 0.002),
    NUM("sph.critical_shear", sph.critical_shear, 0, 0, 1000, 0.5),
    NUM("sph.settling_speed", sph.settling_speed, 0, 0, 100, 1.0),
    NUM("sph.c_max", sph.c_max, ER_KEY_MIN_OPEN, 0, 1, 0.3),
    INT("sph.max_particles", sph.max_particles, 0, 0, 1e8, 200000),
    INT("sph.max_substeps", sph.max_substeps, 0, 1, 1e6, 1000),
    ENUM("sph.boundary", sph.boundary, boundary_names, ER_BOUNDARY_OPEN),
};

#define S(f) offsetof(er_source, f)
/* The keys of one element of mei.sources, relative to it. */
static const er_key source_keys[] = {
    {"x", ER_KEY_NUM, ER_KEY_REQUIRED, S(x), 0, -1e12, 1e12, 0, NULL},
    {"y", ER_KEY_NUM, ER_KEY_REQUIRED, S(y), 0, -1e12, 1e12, 0, NULL},
    {"coords", ER_KEY_ENUM, 0, S(map_coords), 0, 0, 0, 0, coords_names},
    {"radius", ER_KEY_NUM, ER_KEY_MIN_OPEN, S(radius), 0, 0, 1e4, 1.0, NULL},
    {"rate", ER_KEY_NUM, ER_KEY_REQUIRED | ER_KEY_MIN_OPEN, S(rate), 0, 0, 100, 0, NULL},
};

const er_key *er_keys_params(size_t *n)
{
    *n = sizeof keys / sizeof keys[0];
    return keys;
}

const er_key *er_keys_source(size_t *n)
{
    *n = sizeof source_keys / sizeof source_keys[0];
    return source_keys;
}

/* Writes through a char pointer at a table offset (off and off2 are
 * offsetof() values of fields of these types). */
#define AT(type, base, off) ((type *)(void *)((char *)(base) + (off)))

void er_keys_default(const er_key *tab, size_t n, void *base)
{
    for (size_t i = 0; i < n; i++) {
        const er_key *k = &tab[i];
        switch (k->type) {
        case ER_KEY_OBJECT:
        case ER_KEY_COMMENT:
            break;
        case ER_KEY_VERSION:
        case ER_KEY_ENUM:
            *AT(int, base, k->off) = (int)k->def;
            break;
        case ER_KEY_U64:
            *AT(uint64_t, base, k->off) = (uint64_t)k->def;
            break;
        case ER_KEY_INT:
            *AT(int64_t, base, k->off) = k->flags & ER_KEY_DEF_NULL ? -1 : (int64_t)k->def;
            break;
        case ER_KEY_NUM:
            *AT(double, base, k->off) = k->def;
            if (k->flags & ER_KEY_NULL)
                *AT(int, base, k->off2) = !(k->flags & ER_KEY_DEF_NULL);
            break;
        case ER_KEY_PATH:
            *AT(char, base, k->off) = '\0';
            break;
        case ER_KEY_SOURCES:
            memset(AT(er_source, base, k->off), 0, ER_MAX_SOURCES * sizeof(er_source));
            *AT(int, base, k->off2) = 0;
            break;
        }
    }
}

void er_key_fmt_shortest(char *buf, size_t n, double d)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, d);
        if (strtod(buf, NULL) == d && signbit(strtod(buf, NULL)) == signbit(d))
            return;
    }
}

void er_key_fmt_number(char *buf, size_t n, double d)
{
    if (d == floor(d) && fabs(d) < 1e16)
        snprintf(buf, n, "%.0f", d);
    else
        er_key_fmt_shortest(buf, n, d);
}

int er_key_check_number(const er_key *k, double v, int integer, char *what, size_t n)
{
    char num[40], lo[40], hi[40];
    er_key_fmt_number(num, sizeof num, v);
    if (integer && v != floor(v) && isfinite(v)) {
        snprintf(what, n, "%s is not an integer", num);
        return 0;
    }
    /* written so that a NaN fails both */
    int low = k->flags & ER_KEY_MIN_OPEN ? !(v > k->min) : !(v >= k->min);
    int high = k->flags & ER_KEY_MAX_OPEN ? !(v < k->max) : !(v <= k->max);
    if (!low && !high)
        return 1;
    er_key_fmt_number(lo, sizeof lo, k->min);
    er_key_fmt_number(hi, sizeof hi, k->max);
    snprintf(what, n, "%s is out of range, must be %s %s and %s %s", num,
             k->flags & ER_KEY_MIN_OPEN ? ">" : ">=", lo, k->flags & ER_KEY_MAX_OPEN ? "<" : "<=",
             hi);
    return 0;
}

void er_key_choices_text(const er_key *k, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; k->names[i]; i++) {
        int w = snprintf(buf + used, n - used, "%s'%s'", i ? ", " : "", k->names[i]);
        if (w < 0 || (size_t)w >= n - used)
            return;
        used += (size_t)w;
    }
}
