/* What a run writes: its layers in the input's height units, the
 * --preview picture and the pictures of --frames. */
#include "outputs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/mem.h"
#include "../core/parallel.h"
#include "../core/preview.h"
#include "msg.h"
#include "paths.h"
#include "provenance.h"
#include "progress.h"
#include "signals.h"
#include "terrain.h"

/* The flags (core/models.h) of the model whose layers the outputs hold:
 * the last stage's (flow, water and sediment are its own; a stage of
 * the other flow kind starts the flow again). */
static unsigned last_flags(const er_job *j)
{
    return er_model(er_stages_at(&j->rc, er_stages_count(&j->rc) - 1)->model)->flags;
}

/* Whether the flow layer is an area, written as it is. */
static int flow_area(const er_job *j)
{
    return (last_flags(j) & ER_MODEL_FLOW_AREA) != 0;
}

/* The value written for one cell of one layer, back in the input's height
 * units: heights invert the vertical mapping, the other layers (thicknesses)
 * only divide by the scale.  b0: the cell's height before the run. */
static float layer_value(const er_job *j, unsigned layer, size_t i, float b0f)
{
    double sc = j->rc.top.terrain.vertical_scale, off = j->rc.top.terrain.vertical_offset;
    if (j->img.nodata && j->img.nodata[i])
        return j->img.data[i];
    double b = j->terrain.elevation[i], b0 = b0f;
    switch (layer) {
    case ER_LAYER_HEIGHT:
        if (b == b0)
            return j->img.data[i]; /* untouched cells keep their exact input value */
        return (float)((b - off) / sc);
    case ER_LAYER_SEDIMENT: return (float)(j->sediment[i] / sc);
    case ER_LAYER_WATER: return (float)(j->water[i] / sc);
    case ER_LAYER_EROSION: return (float)(b0 > b ? (b0 - b) / sc : 0.0);
    case ER_LAYER_DEPOSIT: return (float)(b > b0 ? (b - b0) / sc : 0.0);
    case ER_LAYER_FLOW: return flow_area(j) ? j->flow[i] : (float)(j->flow[i] / sc);
    case ER_LAYER_WEAR: return (float)(j->wear[i] / sc);
    default: return 0.0f;
    }
}

/* The buffer a layer of thicknesses is written from as it is: with a
 * vertical scale of 1 and no nodata cells layer_value would copy it bit
 * for bit (x / 1.0 is x), so the copy is skipped.  NULL otherwise. */
static const float *as_is(const er_job *j, unsigned layer)
{
    if (layer == ER_LAYER_FLOW && flow_area(j) && !j->img.nodata)
        return j->flow;
    if (j->rc.top.terrain.vertical_scale != 1.0 || j->img.nodata)
        return NULL;
    switch (layer) {
    case ER_LAYER_SEDIMENT: return j->sediment;
    case ER_LAYER_WATER: return j->water;
    case ER_LAYER_FLOW: return j->flow;
    case ER_LAYER_WEAR: return j->wear;
    default: return NULL;
    }
}

/* One writer per cell and nothing summed: the same values for any thread
 * count, and a 16384^2 layer is filled on all cores instead of one.  The
 * heights before the run, when not kept, are first computed into buf,
 * each cell then read before it is overwritten. */
static void fill_layer(const er_job *j, unsigned layer, float *buf, size_t n)
{
    const float *b0 = j->initial;
    if (!b0 && (layer & (ER_LAYER_HEIGHT | ER_LAYER_EROSION | ER_LAYER_DEPOSIT))) {
        er_job_working_heights(j, buf);
        b0 = buf;
    }
    ER_OMP_FOR()
    for (long i = 0; i < (long)n; i++)
        buf[i] = layer_value(j, layer, (size_t)i, b0 ? b0[i] : 0.0f);
}

/* A RAW layer's options: the row order and fill asked for, and the cell
 * size and vertical mapping that turn its values into metres for the
 * sidecar (layer_value's inverse: heights value * scale + offset,
 * thicknesses value * scale; a flow area is no length). */
static er_raw_create raw_options(const er_job *j, unsigned layer, int bits)
{
    const er_terrain_params *tp = &j->rc.top.terrain;
    er_raw_create co = {bits, j->s->raw_bottom_up ? ER_ROWS_BOTTOM_UP : ER_ROWS_TOP_DOWN, j->s->nodata_fill,
                        j->terrain.cell_x, j->terrain.cell_y, !(layer == ER_LAYER_FLOW && flow_area(j)),
                        tp->vertical_scale, layer == ER_LAYER_HEIGHT ? tp->vertical_offset : 0.0};
    return co;
}

/* Layer bit index b to j->outputs[b] in the format of extension `ext`. */
static er_status write_layer(er_job *j, unsigned b, const char *ext, const er_layer_out *out)
{
    const char *path = j->outputs[b];
    er_tiff_create co = j->s->co;
    er_io_progress pg = {er_job_io_progress, j};
    co.precision = j->s->precision[b];
    if (strcmp(ext, "png") == 0)
        return er_png_write_progress(path, out, &pg, &j->err);
    if (strcmp(ext, "exr") == 0) {
        er_exr_create exr = {j->s->exr_half, j->s->exr_compress, j->s->nodata_fill};
        return er_exr_write_co(path, out, &exr, &j->err);
    }
    if (strcmp(ext, "r16") == 0 || strcmp(ext, "r32") == 0) {
        er_raw_create raw = raw_options(j, 1u << b, strcmp(ext, "r16") == 0 ? 16 : 32);
        return er_raw_write_co(path, out, &raw, &j->err);
    }
    return er_tiff_write_progress(path, out, &co, &pg, &j->err);
}

/* One line when a RAW output's size suits neither Unity nor Unreal (the
 * sidecar says it for each engine too), naming the sizes they take. */
static void warn_engine_size(const er_job *j, const char *ext)
{
    int w = j->img.width, h = j->img.height, unity, uw, uh;
    if ((strcmp(ext, "r16") != 0 && strcmp(ext, "r32") != 0) || er_raw_engines_fit(w, h))
        return;
    er_raw_engines_nearest(w, h, &unity, &uw, &uh);
    er_msg_error("%s: warning: a %d x %d heightmap suits neither Unity nor Unreal; the nearest sizes "
                 "they take are %d x %d (Unity) and %d x %d (Unreal): crop or resample the input",
                 j->input, w, h, unity, unity, uw, uh);
}

er_status er_job_write_layers(er_job *j)
{
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    const char *ext = er_path_ext(j->s, j->img.format);
    er_status st = ER_OK;
    float *buf = er_alloc_large(n, sizeof(float)); /* filled whole by fill_layer */
    char *prov = er_provenance_run(j->name, &j->rc);
    if (!buf || !prov) {
        free(buf);
        free(prov);
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    }
    warn_engine_size(j, ext);
    for (unsigned b = 0; b < ER_LAYER_COUNT && st == ER_OK; b++) {
        unsigned layer = 1u << b;
        if (!(j->s->layers & layer))
            continue;
        if (er_stop_signal) {
            st = er_fail(&j->err, ER_ECANCELED, "%s: interrupted", j->input);
            break;
        }
        char what[32];
        snprintf(what, sizeof what, "writing %s", er_layer_name(layer));
        er_job_phase(j, what);
        const float *data = as_is(j, layer);
        if (!data) {
            fill_layer(j, layer, buf, n);
            data = buf;
        }
        er_path_output(j->outputs[b], PATH_MAX, j->s, j->name, er_layer_name(layer), ext);
        /* The input's georeferencing with the layer's own description;
         * the input's nodata value where it declared one (the writer
         * takes NaN where a valid cell of this layer holds it). */
        er_georef g = j->img.georef;
        char *md;
        if (!er_path_layer_metadata(g.gdal_metadata, layer, &md)) {
            st = er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
            break;
        }
        if (md)
            g.gdal_metadata = md;
        er_layer_out out = {j->img.width, j->img.height, data, j->img.nodata,
                            j->img.has_nodata_value ? j->img.nodata_value : NAN, &g, prov};
        st = write_layer(j, b, ext, &out);
        free(md);
        er_progress_end(&j->progress);
        if (st == ER_OK)
            j->written |= layer;
    }
    free(buf);
    free(prov);
    return st;
}

/* A shaded-relief picture of heights `elev` with layers `water` and `sed`
 * (and of the input beside it when `pair`), in metres so the hillshade uses
 * the real cell size, written to `path`.  Errors go to j->hook_err when
 * drawing a frame, else to j->err. */
er_status er_job_draw_picture(er_job *j, const float *elev, const float *water, const float *sed,
                              int pair, const char *path)
{
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    float *deposit = malloc(n * sizeof(float)), *erosion = malloc(n * sizeof(float));
    uint8_t *rgb = NULL;
    er_error *err = path == j->preview ? &j->err : &j->hook_err;
    er_status st = ER_ENOMEM;
    if (!deposit || !erosion)
        goto done;
    for (size_t i = 0; i < n; i++) {
        float d = elev[i] - j->initial[i];
        deposit[i] = d > 0 ? d : 0.0f;
        erosion[i] = d < 0 ? -d : 0.0f;
    }
    /* Standing water blue, suspended sediment green, deposits red.  A
     * model whose water layer is accumulated flow (it covers every slope)
     * and whose sediment is already in the deposits shows deposits red and
     * erosion orange instead.  With stages, the layers are the last
     * stage's. */
    const unsigned last = last_flags(j);
    int standing = (last & ER_MODEL_STANDING_WATER) != 0;
    er_preview_style style = er_preview_style_default();
    style.show_erosion = !standing;
    /* with uplift in any stage a height change is no deposit or erosion */
    int uplift = 0;
    for (int k = 0; k < er_stages_count(&j->rc); k++)
        uplift |= (er_model(er_stages_at(&j->rc, k)->model)->flags & ER_MODEL_UPLIFT) != 0;
    er_preview_in after = {j->img.width, j->img.height, elev, j->img.nodata,
                           j->terrain.cell_x, j->terrain.cell_y, standing ? water : NULL,
                           (last & ER_MODEL_SUSPENDED_LOAD) ? sed : NULL, uplift ? NULL : deposit,
                           uplift ? NULL : erosion, &style};
    er_preview_in before = {j->img.width, j->img.height, j->initial, j->img.nodata,
                            j->terrain.cell_x, j->terrain.cell_y, NULL, NULL, NULL, NULL, &style};
    int w, h;
    if ((st = er_preview_size(&after, pair, &w, &h, err)) != ER_OK)
        goto done;
    st = ER_ENOMEM;
    if (!(rgb = malloc((size_t)w * (size_t)h * 3)))
        goto done;
    st = pair ? er_preview_render_pair(&before, &after, rgb, err) : er_preview_render(&after, rgb, err);
    if (st == ER_OK)
        st = er_png_write_rgb(path, w, h, rgb, NULL, err);
done:
    if (st == ER_ENOMEM && !err->msg[0])
        er_fail(err, ER_ENOMEM, "%s: out of memory drawing the preview", j->input);
    free(deposit);
    free(erosion);
    free(rgb);
    return st;
}

/* The picture of the result (--preview). */
er_status er_job_write_preview(er_job *j)
{
    er_path_pattern(j->preview, sizeof j->preview, j->s->preview, j->name);
    er_status st = er_job_restore_initial(j);
    if (st == ER_OK)
        st = er_job_draw_picture(j, j->terrain.elevation, j->water, j->sediment, j->s->preview_pair,
                                j->preview);
    if (st != ER_OK)
        j->preview[0] = '\0';
    return st;
}
