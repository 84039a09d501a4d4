/*
 * Control rasters (core/controls.h, erode(1) CONTROL MAPS): reads each
 * raster the recipe names, checks that it lies on the input's grid, cuts
 * the input's window out of it (a tile with its halo too: the tile's
 * georeferencing places it) and hands the maps to the run through
 * er_terrain.controls.  Everything here happens before any output is
 * opened, so a refused raster leaves nothing behind (exit 2, one line
 * naming the raster).
 */
#include "controls.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight.h"

/* Relative tolerance on the cell size and rotation, and the largest
 * fraction of a cell the two origins may differ from a whole number of
 * cells by (rounding of the georeferencing's decimal text). */
#define SAME_SCALE 1e-9
#define WHOLE_CELL 1e-6

static int near(double a, double b, double scale)
{
    return fabs(a - b) <= SAME_SCALE * scale;
}

/* Where the input's top-left cell lies in the raster's grid, when both
 * are georeferenced: 1 and (*ox, *oy), or 0 with why[n] filled. */
static int grid_offset(const double in[6], const double rs[6], long *ox, long *oy, char *why,
                       size_t n)
{
    double scale = fabs(rs[1]) + fabs(rs[2]) + fabs(rs[4]) + fabs(rs[5]);
    if (!near(in[1], rs[1], scale) || !near(in[2], rs[2], scale) || !near(in[4], rs[4], scale) ||
        !near(in[5], rs[5], scale)) {
        snprintf(why, n, "another grid (cell size %g x %g, the input's %g x %g, or another "
                 "rotation)", rs[1], rs[5], in[1], in[5]);
        return 0;
    }
    double det = rs[1] * rs[5] - rs[2] * rs[4];
    double dx = in[0] - rs[0], dy = in[3] - rs[3];
    double c = (dx * rs[5] - dy * rs[2]) / det, r = (rs[1] * dy - rs[4] * dx) / det;
    if (!(fabs(c - nearbyint(c)) <= WHOLE_CELL && fabs(r - nearbyint(r)) <= WHOLE_CELL)) {
        snprintf(why, n, "another grid (the input's corner lies at column %.3g, row %.3g of "
                 "it, not on a cell corner)", c + 0.0, r + 0.0);
        return 0;
    }
    *ox = (long)nearbyint(c);
    *oy = (long)nearbyint(r);
    return 1;
}

/* A raster in another coordinate reference system lies on another grid,
 * whatever its numbers say: it would be cut at the wrong place. */
static er_status other_crs(const er_georef *in, const er_georef *rs, er_error *e)
{
    char a[32], b[32];
    if (er_georef_epsg(in, a, sizeof a) && er_georef_epsg(rs, b, sizeof b))
        return er_fail(e, ER_EINVAL, "another coordinate reference system (%s, the input's %s); "
                       "reproject it first, e.g. gdalwarp -t_srs %s", b, a, a);
    return er_fail(e, ER_EINVAL, "another coordinate reference system than the input's; "
                   "reproject it first (gdalwarp)");
}

/* The input's window in raster rs: *ox, *oy, or ER_EINVAL naming the
 * mismatch (the caller adds the raster's name). */
static er_status place(const er_job *j, const er_image *rs, long *ox, long *oy, er_error *e)
{
    double a[6], b[6];
    char why[200];
    int w = j->img.width, h = j->img.height;
    if (er_georef_affine(&j->img.georef, a) && er_georef_affine(&rs->georef, b)) {
        if (er_georef_same_crs(&j->img.georef, &rs->georef) == 0)
            return other_crs(&j->img.georef, &rs->georef, e);
        if (!grid_offset(a, b, ox, oy, why, sizeof why))
            return er_fail(e, ER_EINVAL, "%s", why);
        if (*ox < 0 || *oy < 0 || *ox + w > rs->width || *oy + h > rs->height)
            return er_fail(e, ER_EINVAL, "does not cover the input (the input is its cells "
                           "%ld..%ld x %ld..%ld of %dx%d)", *ox, *ox + w - 1, *oy, *oy + h - 1,
                           rs->width, rs->height);
        return ER_OK;
    }
    if (rs->width != w || rs->height != h)
        return er_fail(e, ER_EINVAL, "another size (%dx%d, the input is %dx%d; without "
                       "georeferencing on both it must be the same)", rs->width, rs->height,
                       w, h);
    *ox = *oy = 0;
    return ER_OK;
}

/* Reads one raster and cuts the input's window: nodata becomes NaN,
 * which the plan's check (er_controls_check) refuses on terrain cells. */
static er_status read_map(er_job *j, const char *path, size_t limit, float **out, er_error *e)
{
    er_image rs = { 0 };
    er_read_opts ro = { .max_bytes = limit, .png_codes = 1 };
    long ox = 0, oy = 0;
    const char *what = er_not_regular(path);
    if (what)
        return er_fail(e, ER_EINVAL, "not a regular file (%s); copy it to a file first", what);
    er_status st = er_image_read(path, &ro, &rs, e);
    if (st == ER_OK)
        st = place(j, &rs, &ox, &oy, e);
    const size_t w = (size_t)j->img.width, n = w * (size_t)j->img.height;
    if (st == ER_OK && !(*out = malloc(n * sizeof(float))))
        st = er_fail(e, ER_ENOMEM, "out of memory");
    for (size_t i = 0; st == ER_OK && i < n; i++) {
        size_t k = ((size_t)oy + i / w) * (size_t)rs.width + (size_t)ox + i % w;
        (*out)[i] = rs.nodata && rs.nodata[k] ? NAN : rs.data[k];
    }
    er_image_free(&rs);
    return st;
}

/* A hardness or mask map out of range and painted in whole numbers up to
 * 65535 is an 8- or 16-bit picture: the line says how to scale it to
 * 0..1.  erode never scales a map itself (erode(1) CONTROL MAPS): a 0/1
 * byte mask is common and already right, and 255 may mean 1 or 100 %
 * of something else; the file's sample type does not tell.  Fills buf
 * with the hint, or "". */
static void scale_hint(const er_job *j, const float *a, char *buf, size_t n)
{
    const er_terrain *t = &j->terrain;
    float most = 0;
    buf[0] = '\0';
    for (size_t i = 0, c = (size_t)t->width * (size_t)t->height; i < c; i++) {
        if (t->wall && t->wall[i])
            continue;
        if (!(a[i] >= 0 && a[i] <= 65535 && a[i] == floorf(a[i])))
            return;
        most = a[i] > most ? a[i] : most;
    }
    if (most > 1)
        snprintf(buf, n, "; %s picture? scale it to 0..1 first, e.g. gdal_translate -ot "
                 "Float32 -scale 0 %d 0 1 in.tif out.tif", most <= 255 ? "an 8-bit" : "a 16-bit",
                 most <= 255 ? 255 : 65535);
}

/* The raster at `path`, read once for all the stages that name it. */
static er_status raster_at(er_job *j, const char *path, size_t limit, const char *name,
                           const char *stage, const float **out)
{
    for (int r = 0; r < j->n_rasters; r++)
        if (strcmp(j->raster_path[r], path) == 0) {
            *out = j->raster[r];
            return ER_OK;
        }
    er_error e = { { 0 } };
    float **slot = &j->raster[j->n_rasters];
    er_status st = read_map(j, path, limit, slot, &e);
    if (st)
        return er_fail(&j->err, st, "%s: %s%s '%s': %s", j->input, stage, name, path, e.msg);
    j->raster_path[j->n_rasters++] = path;
    *out = *slot;
    return ER_OK;
}

/* Stage k's maps (`stage`: "stages[k]." for a staged recipe, else ""). */
static er_status stage_controls(er_job *j, int k, size_t limit, const char *stage)
{
    const er_control_paths *p = &er_stages_at(&j->rc, k)->maps;
    const char *path[ER_JOB_MAPS] = { p->hardness, p->rain, p->mask, p->sources, p->uplift };
    const char *name[ER_JOB_MAPS] = { "hardness", "rain", "mask", "sources", "uplift" };
    er_controls *c = &j->controls[k];
    const float **slot[ER_JOB_MAPS] = { &c->hardness, &c->rain, &c->mask, &c->source,
                                        &c->uplift };
    for (int m = 0; m < ER_JOB_MAPS; m++) {
        if (!path[m][0])
            continue;
        er_status st = raster_at(j, path[m], limit, name[m], stage, slot[m]);
        if (st)
            return st;
        j->stage_controls[k] = c;
    }
    if (!j->stage_controls[k])
        return ER_OK;
    /* the ranges here, where the raster can be named (the plan checks again) */
    er_error e = { { 0 } };
    for (int m = 0; m < ER_JOB_MAPS; m++) {
        er_controls one = { 0 };
        const float **mine[ER_JOB_MAPS] = { &one.hardness, &one.rain, &one.mask, &one.source,
                                            &one.uplift };
        *mine[m] = *slot[m];
        er_status st = er_controls_check(&one, j->terrain.width, j->terrain.height,
                                         j->terrain.wall, 0, 0, &e);
        /* the message starts with the map's name, which the line has already */
        size_t skip = strlen(name[m]) + 2;
        char hint[120] = "";
        if (st && (slot[m] == &c->hardness || slot[m] == &c->mask))
            scale_hint(j, *slot[m], hint, sizeof hint);
        if (st)
            return er_fail(&j->err, st, "%s: %s%s '%s': %s%s", j->input, stage, name[m], path[m],
                           strlen(e.msg) > skip ? e.msg + skip : e.msg, hint);
    }
    return ER_OK;
}

er_status er_job_read_controls(er_job *j, size_t limit)
{
    for (int k = 0; k < er_stages_count(&j->rc); k++) {
        char stage[32] = "";
        if (j->rc.n > 0)
            snprintf(stage, sizeof stage, "stages[%d].", k);
        er_status st = stage_controls(j, k, limit, stage);
        if (st)
            return st;
    }
    /* a recipe without stages: its terrain holds the maps, as it always did */
    j->terrain.controls = j->stage_controls[0];
    return ER_OK;
}
