/* The map in the run's units (erode-recipe(5) "Units"): cell size, map
 * coordinates of sources, working heights and the layers the run keeps. */
#include "terrain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mem.h"
#include "../core/parallel.h"

/* Cell size (erode(1) DESCRIPTION): the georeferencing's, else
 * terrain.cell_size, else 1 m.  A georeferenced input keeps its own cell
 * size whatever the recipe says (one recipe serves PNG and GeoTIFF tiles
 * alike), and a differing terrain.cell_size is named in a warning, never
 * applied silently.  Georeferencing that places the raster but gives no
 * usable cell size (an unknown unit, a zero pixel size, a pole) is refused
 * unless terrain.cell_size is given: guessing 1 m would scale every
 * dimensioned rate silently. */
er_status er_job_resolve_cell_size(er_job *j)
{
    const er_terrain_params *tp = &j->rc.top.terrain;
    double dx = 1.0, dy = 1.0;
    const char *why = NULL;
    int geo = er_georef_cell_size_why(&j->img.georef, j->img.width, j->img.height, &dx, &dy, &why);
    if (geo < 0 && !tp->cell_size_set)
        return er_fail(&j->err, ER_EINVAL, "%s: georeferencing gives no usable cell size: %s "
                       "(set terrain.cell_size to run it anyway)", j->input, why);
    if (geo <= 0 && tp->cell_size_set)
        dx = dy = tp->cell_size;
    if (geo > 0 && tp->cell_size_set && (dx != tp->cell_size || dy != tp->cell_size))
        er_msg_error("%s: warning: terrain.cell_size (%g m) ignored: the input's georeferencing "
                     "gives %g x %g m cells", j->input, tp->cell_size, dx, dy);
    j->terrain.cell_x = dx;
    j->terrain.cell_y = dy;
    return ER_OK;
}

/* The river sources of stage k given in map coordinates, in pixels. */
static er_status resolve_sources(er_job *j, er_source_list *l, int k)
{
    char stage[32] = "";
    if (j->rc.n > 0)
        snprintf(stage, sizeof stage, "stages[%d].", k);
    for (int i = 0; i < l->n; i++) {
        er_source *src = &l->src[i];
        if (src->at != ER_AT_XY || src->coords != ER_COORDS_MAP)
            continue;
        double px, py;
        if (!er_georef_map_to_pixel(&j->img.georef, src->x, src->y, &px, &py))
            return er_fail(&j->err, ER_EINVAL, "%s: %s%s[%d]: map coordinates need a "
                           "georeferenced input", j->input, stage, er_sources_key(l), i);
        /* map_to_pixel puts the top-left cell's centre at (0.5, 0.5); core
         * counts sources from cell centres, (0, 0), and a tile's run from
         * the mosaic's top-left cell. */
        src->x = px - 0.5 + (j->windowed ? j->window.x0 : 0);
        src->y = py - 0.5 + (j->windowed ? j->window.y0 : 0);
        src->coords = ER_COORDS_PIXEL;
    }
    return ER_OK;
}

er_status er_job_resolve_sources(er_job *j)
{
    for (int k = 0; k < er_stages_count(&j->rc); k++) {
        er_status st = resolve_sources(j, &er_stages_at_mut(&j->rc, k)->river, k);
        if (st)
            return st;
    }
    return ER_OK;
}

/* Working heights (erode-recipe(5) "Units"): value * vertical_scale +
 * vertical_offset, in double, rounded once to float.  Nodata cells become
 * walls. */
static float working_height(const er_job *j, size_t i)
{
    double sc = j->rc.top.terrain.vertical_scale, off = j->rc.top.terrain.vertical_offset;
    return j->img.nodata && j->img.nodata[i] ? 0.0f : (float)((double)j->img.data[i] * sc + off);
}

/* out[i] = the working height of cell i, on all threads (one writer per
 * cell: the same values for any thread count). */
void er_job_working_heights(const er_job *j, float *out)
{
    const long n = (long)j->img.width * (long)j->img.height;
    ER_OMP_FOR()
    for (long i = 0; i < n; i++)
        out[i] = working_height(j, (size_t)i);
}

/* The heights before the run are a pure function of the image, so a plain
 * run never keeps them (4 bytes a cell off the peak and a copy of the map
 * fewer): the outputs compute them bit for bit where they need
 * them.  Only checkpoints (their input hash), the run hooks and
 * the preview ask for this copy. */
er_status er_job_restore_initial(er_job *j)
{
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    if (j->initial)
        return ER_OK;
    if (!(j->initial = er_alloc_large(n, sizeof(float))))
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    er_job_working_heights(j, j->initial);
    return ER_OK;
}

/* The first cell whose working height is not finite, as an error. */
static er_status not_finite(er_job *j)
{
    size_t i = 0, w = (size_t)j->img.width;
    while (isfinite(j->terrain.elevation[i]))
        i++;
    return er_fail(&j->err, ER_EINVAL, "%s: the height at (%zu, %zu) is %g, not a finite "
                   "number of metres (declare it nodata, or check terrain.vertical_scale "
                   "and vertical_offset)", j->input, i % w, i / w, (double)j->img.data[i]);
}

static int all_finite(const float *v, size_t n)
{
    int bad = 0;
    ER_OMP_FOR(reduction(| : bad))
    for (long i = 0; i < (long)n; i++)
        bad |= !isfinite(v[i]);
    return !bad;
}

er_status er_job_prepare_terrain(er_job *j)
{
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    j->terrain.width = j->img.width;
    j->terrain.height = j->img.height;
    j->terrain.wall = j->img.nodata;
    /* filled whole here, on all threads: that is its first touch */
    if (!(j->terrain.elevation = er_alloc_large(n, sizeof(float))))
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    er_job_working_heights(j, j->terrain.elevation);
    if (!all_finite(j->terrain.elevation, n))
        return not_finite(j);
    /* the checkpoint's input hash and the run hooks read the copy */
    er_status st = ER_OK;
    if (j->s->checkpoint || j->s->resume || j->s->frames)
        st = er_job_restore_initial(j);
    if (st != ER_OK)
        return st;
    unsigned want = j->s->layers;
    /* The picture shows both; a checkpoint holds both, so that a run
     * resumed with other --layers has them. */
    if (j->s->preview || j->s->frames || j->s->checkpoint || j->s->resume)
        want |= ER_LAYER_WATER | ER_LAYER_SEDIMENT;
    if (want & ER_LAYER_WATER)
        j->water = er_calloc_large(n, sizeof(float));
    if (want & ER_LAYER_SEDIMENT)
        j->sediment = er_calloc_large(n, sizeof(float));
    if (want & ER_LAYER_FLOW)
        j->flow = er_calloc_large(n, sizeof(float));
    if (want & ER_LAYER_WEAR)
        j->wear = er_calloc_large(n, sizeof(float));
    if (((want & ER_LAYER_WATER) && !j->water) || ((want & ER_LAYER_SEDIMENT) && !j->sediment) ||
        ((want & ER_LAYER_FLOW) && !j->flow) || ((want & ER_LAYER_WEAR) && !j->wear))
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    return ER_OK;
}
