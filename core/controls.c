/*
 * The range check of the control maps (core/controls.h).  A wall cell is
 * never read by a model, so it may hold anything; every other cell must
 * hold a finite value in the map's range, else the run is an input error
 * naming the first bad cell in row order.
 */
#include "controls.h"

#include <math.h>
#include <stddef.h>

typedef struct ctl_map {
    const char *name;
    const float *v;
    double hi;
} ctl_map;

static er_status check_map(const ctl_map *m, int width, int height, const uint8_t *wall,
                           int x0, int y0, er_error *err)
{
    const size_t n = (size_t)width * (size_t)height;
    for (size_t i = 0; i < n; i++) {
        if (wall && wall[i])
            continue;
        float v = m->v[i];
        long long col = (long long)(i % (size_t)width) + x0;
        long long row = (long long)(i / (size_t)width) + y0;
        if (isnan(v))
            return er_fail(err, ER_EINVAL, "%s: no value (nodata) at column %lld, row %lld "
                           "where the input has terrain", m->name, col, row);
        if (!(v >= 0.0f && (double)v <= m->hi))
            return er_fail(err, ER_EINVAL, "%s: %g at column %lld, row %lld is outside [0, %g]",
                           m->name, (double)v, col, row, m->hi);
    }
    return ER_OK;
}

er_status er_controls_check(const er_controls *c, int width, int height, const uint8_t *wall,
                            int x0, int y0, er_error *err)
{
    if (!er_controls_any(c))
        return ER_OK;
    const ctl_map maps[5] = { { "hardness", c->hardness, 1.0 },
                              { "rain", c->rain, ER_CTL_RAIN_MAX },
                              { "mask", c->mask, 1.0 },
                              { "sources", c->source, ER_CTL_SOURCE_MAX },
                              { "uplift", c->uplift, ER_CTL_UPLIFT_MAX } };
    for (int i = 0; i < 5; i++) {
        er_status st;
        if (maps[i].v && (st = check_map(&maps[i], width, height, wall, x0, y0, err)))
            return st;
    }
    return ER_OK;
}
