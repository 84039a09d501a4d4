/*
 * Control maps: per-cell rasters a user paints to say where rock is hard,
 * where it rains and where erosion may act.  cli/ reads them (io/),
 * checks that they lie on the input's grid and cuts the input's window
 * out of them; core/ receives plain float arrays on the map's grid
 * (er_terrain.controls) and every model on every backend honours them.
 *
 * One place for each fact: the ranges below are the only ones; the plan
 * (er_plan_make) refuses a value outside them, or a non-finite value on a
 * valid cell, as an input error naming the raster (exit 2).
 *
 * What each map does to each model (erode(1) "CONTROL MAPS", erode-recipe(5)):
 *   hardness h in [0, 1]: every rate that lowers the bed at the cell is
 *     multiplied by (1 - h): Mei dissolving (Ks) and thermal slumping out of
 *     the cell, droplet/particle erosion taken from the cell, SPH erosion.
 *     h = 1: the bed is never lowered; deposits may still raise it.
 *   rain r in [0, ER_CTL_RAIN_MAX]: a multiplier.  Mei: the rain (uniform
 *     rain and raindrops) falling on the cell times r.  Droplets and
 *     particles: a droplet whose start lies in the cell carries r times the
 *     recipe's initial water (particles: initial volume); r = 0: it does not
 *     start (counted as run, changing nothing), so the schedule, the random
 *     streams and the tile-colour guarantee are those of the run without it.
 *     SPH: r times the initial rain of particles on the cell.
 *   mask m in [0, 1]: every rate that changes the terrain at the cell
 *     (erosion, deposition, slumping in and out) times m, so m = 0 keeps the
 *     cell exactly as it was and the material budget stays exact: what is
 *     not deposited stays carried, what is not eroded stays in the bed.
 *   source q in [0, ER_CTL_SOURCE_MAX] m/s: water depth added per second on
 *     the cell, as river_sources' "rate" (Mei, and SPH's sources), beside the
 *     recipe's list (the two add).
 *   uplift u in [0, ER_CTL_UPLIFT_MAX]: a multiplier of the uplift rate at
 *     the cell, for the models with uplift (ER_MODEL_UPLIFT, core/models.h:
 *     stream power); the plan refuses it for the others.
 * A cell that is a wall (nodata in the input) may hold anything, nodata
 * included; it is never read.
 */
#ifndef ER_CONTROLS_H
#define ER_CONTROLS_H

#include <stdint.h>

#include "error.h"

#define ER_CTL_RAIN_MAX 100.0
#define ER_CTL_SOURCE_MAX 100.0 /* [m/s] the same bound as river_sources[].rate */
#define ER_CTL_UPLIFT_MAX 100.0

/* The control maps of a run, each width * height floats on the map's grid
 * (a window's cells, not the world's), row-major; NULL = not given (the
 * neutral value: hardness 0, rain 1, mask 1, source 0, uplift 1). */
typedef struct er_controls {
    const float *hardness;
    const float *rain;
    const float *mask;
    const float *source;
    const float *uplift;
} er_controls;

/* Whether any map is given. */
static inline int er_controls_any(const er_controls *c)
{
    return c && (c->hardness || c->rain || c->mask || c->source || c->uplift);
}

/* Checks every map of c on the valid (non-wall) cells of a width x height
 * map whose top-left cell is (x0, y0) in the input (the window's offset;
 * the message names input cells): ER_EINVAL naming the map and the first
 * value outside its range or without a value (not finite).  c may be NULL. */
er_status er_controls_check(const er_controls *c, int width, int height, const uint8_t *wall,
                            int x0, int y0, er_error *err);

#endif
