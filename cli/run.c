#include "run.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../core/backend.h"
#include "../core/model.h"
#include "../core/plan.h"
#include "../core/preview.h"
#include "../io/atomic.h"
#include "../io/checkpoint.h"
#include "../io/image.h"
#include "../io/recipe.h"
#include "msg.h"
#include "paths.h"
#include "provenance.h"
#include "targets.h"
#include "tiles.h"

volatile sig_atomic_t er_stop_signal = 0;

enum { EXIT_RUN_FAILED = 1, EXIT_USAGE = 2 };

/* Exit status for a failure, by where it happened (DESIGN.md §1): before
 * the simulation everything is an input or usage error (2); once started,
 * a failure is a run failure (1). */
static int exit_for(er_status st, int started)
{
    if (st == ER_ECANCELED)
        return 128 + (er_stop_signal ? (int)er_stop_signal : SIGINT);
    if (!started)
        return EXIT_USAGE;
    return EXIT_RUN_FAILED;
}

/* Creates and removes a file in `dir`: access() says yes to root even on a
 * read-only filesystem, and a farm must learn this now, not at the end. */
static int probe_dir(const char *dir, const char *what)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        er_msg_error("%s: %s: %s", dir, what, strerror(errno));
        return EXIT_USAGE;
    }
    if (!S_ISDIR(st.st_mode)) {
        er_msg_error("%s: %s: not a directory", dir, what);
        return EXIT_USAGE;
    }
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s/.erode-probe-XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0) {
        er_msg_error("%s: %s: %s", dir, what, strerror(errno));
        return EXIT_USAGE;
    }
    close(fd);
    unlink(probe);
    return 0;
}

/* Probes the directory a file pattern's files go to. */
static int probe_parent(const char *pattern, const char *what)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", pattern);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    return probe_dir(slash ? (dir[0] ? dir : "/") : ".", what);
}

/* Checks of a --tile-set run that need no pixels: every input is one of
 * the set's tiles, outputs are GeoTIFF. */
static int preflight_tiles(const er_settings *s)
{
    if (s->format == ER_OUT_PNG) {
        er_msg_error("--format png: tile sets are written as GeoTIFF (they need georeferencing)");
        return EXIT_USAGE;
    }
    if (s->stitch)
        return 0;
    for (int i = 0; i < s->n_inputs; i++)
        if (er_tile_set_find(s->tiles, s->inputs[i]) < 0) {
            er_msg_error("%s: not a tile of the --tile-set", s->inputs[i]);
            return EXIT_USAGE;
        }
    return 0;
}

int er_run_preflight(const er_settings *s)
{
    int rc = probe_dir(s->output_dir, "output directory");
    if (rc)
        return rc;
    if (s->tiles && (rc = preflight_tiles(s)) != 0)
        return rc;
    if (s->stitch)
        return 0;
    if (s->preview && (rc = probe_parent(s->preview, "--preview directory")) != 0)
        return rc;
    if (s->checkpoint && (rc = probe_parent(s->checkpoint, "--checkpoint directory")) != 0)
        return rc;
    if (s->frames && (rc = probe_dir(s->frames, "--frames directory")) != 0)
        return rc;
    /* No output may replace an input or another output (targets.c). */
    return er_targets_check(s, s->tiles);
}

static size_t machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return SIZE_MAX;
    return (size_t)pages * (size_t)page;
}

static double gib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

/* Everything one input's run owns. */
typedef struct job {
    const er_settings *s;
    const char *input;
    er_params params;          /* the recipe with map coordinates resolved */
    er_image img;
    er_window window;          /* --tile-set: where img lies in the mosaic */
    int windowed;              /* 1: a tile with its halo (window valid) */
    er_terrain terrain;
    er_plan plan;              /* the run, checked before any work */
    const er_backend *be;      /* where it runs: er_backend_cpu or er_backend_vulkan */
    void *be_ctx;              /* the backend's context (the er_vk_ctx), NULL for the CPU */
    float *initial;            /* working heights before the run (erosion/deposit layers) */
    float *water, *sediment;
    er_budget budget;
    er_progress progress;
    char outputs[ER_LAYER_COUNT][PATH_MAX];
    unsigned written;          /* layers committed */
    char preview[PATH_MAX];    /* written preview, "" if none */
    double seconds;
    er_error err;
    /* checkpoints and frames */
    er_checkpoint_id ck_id;    /* what a checkpoint of this run must match */
    char ck_path[PATH_MAX];    /* --checkpoint for this input, "" if none */
    er_checkpoint resumed;     /* the --resume state, if any */
    int64_t first_boundary;    /* where this process started (0, or the resumed one) */
    int64_t frames;            /* frames written */
    int64_t saved_at;          /* boundary of the last checkpoint saved; -1 none */
    er_status hook_status;     /* a checkpoint or frame that could not be written */
    er_error hook_err;
} job;

static void job_free(job *j)
{
    er_checkpoint_free(&j->resumed);
    er_image_free(&j->img);
    free(j->terrain.elevation);
    free(j->initial);
    free(j->water);
    free(j->sediment);
}

static int progress_cb(void *user, double fraction)
{
    job *j = user;
    er_progress_update(&j->progress, fraction);
    /* With --checkpoint the boundary callback stops the run, after saving
     * the state of the boundary it stops at. */
    return er_stop_signal != 0 && !j->ck_path[0];
}

/* Cell size (DESIGN.md §3): an explicit terrain.cell_size wins, then the
 * georeferencing, then 1 m.  Georeferencing that places the raster but
 * gives no usable cell size (an unknown unit, a zero pixel size, a pole)
 * is refused: guessing 1 m would scale every dimensioned rate silently. */
static er_status resolve_cell_size(job *j)
{
    const er_terrain_params *tp = &j->params.terrain;
    double dx = 1.0, dy = 1.0;
    const char *why = NULL;
    if (tp->cell_size_set)
        dx = dy = tp->cell_size;
    else if (er_georef_cell_size_why(&j->img.georef, j->img.width, j->img.height, &dx, &dy, &why) < 0)
        return er_fail(&j->err, ER_EINVAL, "%s: georeferencing gives no usable cell size: %s "
                       "(set terrain.cell_size to run it anyway)", j->input, why);
    j->terrain.cell_x = dx;
    j->terrain.cell_y = dy;
    return ER_OK;
}

static er_status resolve_sources(job *j)
{
    er_mei_params *m = &j->params.mei;
    for (int i = 0; i < m->n_sources; i++) {
        er_source *src = &m->sources[i];
        if (!src->map_coords)
            continue;
        double px, py;
        if (!er_georef_map_to_pixel(&j->img.georef, src->x, src->y, &px, &py))
            return er_fail(&j->err, ER_EINVAL, "%s: mei.sources[%d]: map coordinates need a georeferenced input",
                           j->input, i);
        /* map_to_pixel puts the top-left cell's centre at (0.5, 0.5); core
         * counts sources from cell centres, (0, 0), and a tile's run from
         * the mosaic's top-left cell. */
        src->x = px - 0.5 + (j->windowed ? j->window.x0 : 0);
        src->y = py - 0.5 + (j->windowed ? j->window.y0 : 0);
        src->map_coords = 0;
    }
    return ER_OK;
}

static size_t model_bytes_per_cell(const er_params *p)
{
    return p->model == ER_MODEL_MEI ? er_mei_bytes_per_cell(p) : er_droplet_bytes_per_cell(p);
}

/* Refuses, before allocating, a map whose run will not fit in the limit:
 * the image, working heights, initial copy, two layers, the model's own. */
static er_status check_memory(job *j, size_t limit)
{
    size_t cells = (size_t)j->img.width * (size_t)j->img.height, per_cell, need;
    per_cell = 4 * sizeof(float) + 2 + model_bytes_per_cell(&j->params);
    if (!er_mul_size(cells, per_cell, &need) || need > limit)
        return er_fail(&j->err, ER_ENOMEM, "%s: a %dx%d run needs %.1f GiB, more than --max-memory (%.1f GiB)",
                       j->input, j->img.width, j->img.height, gib(cells) * (double)per_cell, gib(limit));
    return ER_OK;
}

/* Working heights (DESIGN.md §3): value * vertical_scale + vertical_offset,
 * in double, rounded once to float.  Nodata cells become walls. */
static er_status prepare_terrain(job *j)
{
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    double sc = j->params.terrain.vertical_scale, off = j->params.terrain.vertical_offset;
    j->terrain.width = j->img.width;
    j->terrain.height = j->img.height;
    j->terrain.wall = j->img.nodata;
    j->terrain.elevation = malloc(n * sizeof(float));
    j->initial = malloc(n * sizeof(float));
    if (!j->terrain.elevation || !j->initial)
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    for (size_t i = 0; i < n; i++) {
        float v = j->img.data[i];
        j->terrain.elevation[i] = j->img.nodata && j->img.nodata[i] ? 0.0f : (float)((double)v * sc + off);
        if (!isfinite(j->terrain.elevation[i]))
            return er_fail(&j->err, ER_EINVAL, "%s: the height at (%zu, %zu) is %g, not a finite "
                           "number of metres (declare it nodata, or check terrain.vertical_scale "
                           "and vertical_offset)", j->input, i % (size_t)j->img.width,
                           i / (size_t)j->img.width, (double)v);
    }
    memcpy(j->initial, j->terrain.elevation, n * sizeof(float));
    unsigned want = j->s->layers;
    /* The picture shows both; a checkpoint holds both, so that a run
     * resumed with other --layers has them. */
    if (j->s->preview || j->s->frames || j->s->checkpoint || j->s->resume)
        want |= ER_LAYER_WATER | ER_LAYER_SEDIMENT;
    if (want & ER_LAYER_WATER)
        j->water = calloc(n, sizeof(float));
    if (want & ER_LAYER_SEDIMENT)
        j->sediment = calloc(n, sizeof(float));
    if (((want & ER_LAYER_WATER) && !j->water) || ((want & ER_LAYER_SEDIMENT) && !j->sediment))
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    return ER_OK;
}

static er_status draw_picture(job *j, const float *elev, const float *water, const float *sed,
                              int pair, const char *path);

/* "DIR/<stem>.frame-NNNNNN.png": frame k shows boundary k * N, the last
 * one the end state. */
static er_status write_frame(job *j, const er_run_state *state)
{
    const int64_t every = j->s->frame_every;
    const int64_t k = (state->boundary + every - 1) / every;
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    float *elev = malloc(n * sizeof(float)), *water = malloc(n * sizeof(float));
    float *sed = malloc(n * sizeof(float));
    er_status st = ER_ENOMEM;
    if (elev && water && sed) {
        char path[PATH_MAX];
        er_path_frame(path, sizeof path, j->s->frames, j->input, (long long)k);
        er_run_state_layers(state, j->initial, j->img.nodata, elev, water, sed);
        st = draw_picture(j, elev, water, sed, 0, path);
        if (st == ER_OK)
            j->frames++;
    }
    free(elev);
    free(water);
    free(sed);
    if (st == ER_ENOMEM && !j->hook_err.msg[0])
        er_fail(&j->hook_err, ER_ENOMEM, "%s: out of memory drawing a frame", j->input);
    return st;
}

/* At every step or batch boundary: frames, periodic checkpoints, and on
 * SIGINT/SIGTERM with --checkpoint the checkpoint of the boundary the run
 * stops at. */
static int boundary_cb(void *user, const er_run_state *state)
{
    job *j = user;
    const er_settings *s = j->s;
    er_status st = ER_OK;
    int stop = er_stop_signal != 0;
    if (s->frames && !stop &&
        (state->boundary % s->frame_every == 0 || state->boundary == state->boundaries))
        st = write_frame(j, state);
    if (st == ER_OK && j->ck_path[0]) {
        /* Periodic ones, and the end state, so that a stop or a kill while
         * the outputs are written (seconds on a large map) loses no work:
         * the resumed run only writes them. */
        int fresh = state->boundary > j->first_boundary;
        int due = fresh && ((s->checkpoint_every > 0 && state->boundary % s->checkpoint_every == 0) ||
                            state->boundary == state->boundaries);
        if (stop || due)
            st = er_checkpoint_write(j->ck_path, state, &j->ck_id, &j->hook_err);
        if (st == ER_OK && (stop || due))
            j->saved_at = state->boundary;
    }
    if (st != ER_OK) {
        j->hook_status = st;
        return 1;
    }
    return stop && j->ck_path[0];
}

/* The boundaries boundary_cb acts on: a frame or a checkpoint due, or a
 * stop asked (backends that keep their state on a device read it back
 * only for these). */
static int wants_cb(void *user, int64_t boundary, int64_t boundaries)
{
    const job *j = user;
    const er_settings *s = j->s;
    if (er_stop_signal)
        return 1;
    if (s->frames && (boundary % s->frame_every == 0 || boundary == boundaries))
        return 1;
    return j->ck_path[0] && boundary > j->first_boundary &&
           ((s->checkpoint_every > 0 && boundary % s->checkpoint_every == 0) ||
            boundary == boundaries);
}

static er_status simulate(job *j)
{
    er_layers layers = {j->water, j->sediment};
    er_run_ctl ctl = {progress_cb, j};
    er_run_hooks hooks = {boundary_cb, j, j->resumed.buf ? &j->resumed.state : NULL, wants_cb};
    const int hooked = j->s->checkpoint || j->s->frames || j->s->resume;
    er_run_opts o = {&layers, &ctl, hooked ? &hooks : NULL, &j->budget};
    memset(&j->budget, 0, sizeof j->budget);
    er_status st = j->be->run(j->be_ctx, &j->plan, &j->terrain, &o, &j->err);
    if (st == ER_ECANCELED && j->hook_status != ER_OK) {
        st = j->hook_status;
        j->err = j->hook_err;
    }
    return st;
}

/* A plan error whose message starts with a recipe key ("mei.ke: ...") is
 * the recipe's: DESIGN.md §1 wants "INPUT: RECIPE: KEY: what". */
static int names_key(const char *msg)
{
    size_t n = strcspn(msg, ": ");
    size_t dot = strcspn(msg, ".");
    return msg[n] == ':' && dot < n && strspn(msg, "abcdefghijklmnopqrstuvwxyz_.[]0123456789") >= n;
}

/* The run plan (core/plan.h): every recipe and input check that needs no
 * work, before any output is opened; a failure is exit 2. */
static er_status plan_run(job *j)
{
    er_error e = {{0}};
    er_status st = er_plan_make(&j->params, &j->terrain, j->windowed ? &j->window : NULL,
                                &j->plan, &e);
    if (st == ER_OK)
        return ER_OK;
    if (names_key(e.msg))
        return er_fail(&j->err, st, "%s: %s: %s", j->input,
                       j->s->recipe_path ? j->s->recipe_path : "recipe", e.msg);
    return er_fail(&j->err, st, "%s: %s", j->input, e.msg);
}

/* The checkpoint identity of this run, and the --resume state if asked. */
static er_status prepare_checkpoint(job *j, const er_params *recipe)
{
    const er_settings *s = j->s;
    if (!s->checkpoint && !s->resume)
        return ER_OK;
    char *text = er_recipe_to_json(recipe);
    if (!text)
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    j->ck_id.model = j->params.model;
    j->ck_id.width = j->img.width;
    j->ck_id.height = j->img.height;
    j->ck_id.recipe_hash = er_fnv1a64(ER_FNV1A64_INIT, text, strlen(text));
    free(text);
    j->ck_id.input_hash = er_checkpoint_input_hash(j->img.width, j->img.height, j->terrain.cell_x,
                                                   j->terrain.cell_y, j->initial, j->img.nodata);
    if (s->checkpoint)
        er_path_pattern(j->ck_path, sizeof j->ck_path, s->checkpoint, j->input);
    if (s->resume) {
        char path[PATH_MAX];
        er_path_pattern(path, sizeof path, s->resume, j->input);
        er_error e = {{0}};
        er_status st = er_checkpoint_read(path, &j->ck_id, &j->resumed, &e);
        if (!st)
            st = er_plan_check_resume(&j->plan, &j->resumed.state, j->water != NULL,
                                      j->sediment != NULL, &e);
        if (st)
            return er_fail(&j->err, st, "%s: --resume: %s", j->input, e.msg);
        j->first_boundary = j->resumed.state.boundary;
    }
    return ER_OK;
}

/* The value written for one cell of one layer, back in the input's height
 * units: heights invert the vertical mapping, the other layers (thicknesses)
 * only divide by the scale. */
static float layer_value(const job *j, unsigned layer, size_t i)
{
    double sc = j->params.terrain.vertical_scale, off = j->params.terrain.vertical_offset;
    if (j->img.nodata && j->img.nodata[i])
        return j->img.data[i];
    double b = j->terrain.elevation[i], b0 = j->initial[i];
    switch (layer) {
    case ER_LAYER_HEIGHT:
        if (b == b0)
            return j->img.data[i]; /* untouched cells keep their exact input value */
        return (float)((b - off) / sc);
    case ER_LAYER_SEDIMENT: return (float)(j->sediment[i] / sc);
    case ER_LAYER_WATER: return (float)(j->water[i] / sc);
    case ER_LAYER_EROSION: return (float)(b0 > b ? (b0 - b) / sc : 0.0);
    case ER_LAYER_DEPOSIT: return (float)(b > b0 ? (b - b0) / sc : 0.0);
    default: return 0.0f;
    }
}

static er_status write_layers(job *j)
{
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    const char *ext = er_path_ext(j->s, j->img.format);
    er_status st = ER_OK;
    float *buf = malloc(n * sizeof(float));
    char *prov = er_provenance_run(j->input, &j->params);
    if (!buf || !prov) {
        free(buf);
        free(prov);
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    }
    for (unsigned b = 0; b < ER_LAYER_COUNT && st == ER_OK; b++) {
        unsigned layer = 1u << b;
        if (!(j->s->layers & layer))
            continue;
        if (er_stop_signal) {
            st = er_fail(&j->err, ER_ECANCELED, "%s: interrupted", j->input);
            break;
        }
        for (size_t i = 0; i < n; i++)
            buf[i] = layer_value(j, layer, i);
        er_path_output(j->outputs[b], PATH_MAX, j->s, j->input, er_layer_name(layer), ext);
        er_layer_out out = {j->img.width, j->img.height, buf, j->img.nodata, j->img.nodata_value,
                            &j->img.georef, prov};
        st = strcmp(ext, "png") == 0 ? er_png_write(j->outputs[b], &out, &j->err)
                                     : er_tiff_write(j->outputs[b], &out, &j->err);
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
static er_status draw_picture(job *j, const float *elev, const float *water, const float *sed,
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
    /* Mei: water depth blue, suspended sediment green, deposits red.
     * Droplets: their water layer is accumulated flow, which covers every
     * slope, and their sediment is already in the deposits; so they show
     * deposits red and erosion orange instead. */
    int mei = j->params.model == ER_MODEL_MEI;
    er_preview_style style = er_preview_style_default();
    style.show_erosion = !mei;
    er_preview_in after = {j->img.width, j->img.height, elev, j->img.nodata,
                           j->terrain.cell_x, j->terrain.cell_y, mei ? water : NULL,
                           mei ? sed : NULL, deposit, erosion, &style};
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
static er_status write_preview(job *j)
{
    er_path_pattern(j->preview, sizeof j->preview, j->s->preview, j->input);
    er_status st = draw_picture(j, j->terrain.elevation, j->water, j->sediment, j->s->preview_pair,
                                j->preview);
    if (st != ER_OK)
        j->preview[0] = '\0';
    return st;
}

static const char *model_name(er_model_kind m) { return m == ER_MODEL_MEI ? "mei" : "droplet"; }

/* Returns 0, or 1 when standard output could not take the line (closed,
 * full, a broken pipe): a pipeline that lost its summary must know. */
static int print_json(const job *j, int status)
{
    cJSON *o = cJSON_CreateObject();
    double area = j->terrain.cell_x * j->terrain.cell_y;
    cJSON_AddStringToObject(o, "input", j->input);
    cJSON_AddStringToObject(o, "status", status == 0 ? "ok" : "error");
    cJSON_AddNumberToObject(o, "exit", status);
    if (status != 0)
        cJSON_AddStringToObject(o, "error", j->err.msg);
    cJSON *outs = cJSON_AddObjectToObject(o, "outputs");
    for (unsigned b = 0; b < ER_LAYER_COUNT; b++)
        if (j->written & (1u << b))
            cJSON_AddStringToObject(outs, er_layer_name(1u << b), j->outputs[b]);
    if (j->preview[0])
        cJSON_AddStringToObject(outs, "preview", j->preview);
    cJSON_AddStringToObject(o, "model", model_name(j->params.model));
    if (j->s->frames)
        cJSON_AddNumberToObject(o, "frames", (double)j->frames);
    if (j->resumed.buf)
        cJSON_AddNumberToObject(o, "resumed_at", (double)j->first_boundary);
    cJSON_AddStringToObject(o, "backend", j->be ? j->be->name : "cpu");
    cJSON_AddNumberToObject(o, "seconds", j->seconds);
    cJSON_AddNumberToObject(o, "width", j->img.width);
    cJSON_AddNumberToObject(o, "height", j->img.height);
    cJSON_AddNumberToObject(o, "cell_x", j->terrain.cell_x);
    cJSON_AddNumberToObject(o, "cell_y", j->terrain.cell_y);
    cJSON_AddNumberToObject(o, j->params.model == ER_MODEL_MEI ? "steps" : "droplets", (double)j->budget.work_done);
    cJSON_AddNumberToObject(o, j->params.model == ER_MODEL_MEI ? "substeps" : "droplet_steps", (double)j->budget.substeps);
    cJSON *bud = cJSON_AddObjectToObject(o, "budget");
    cJSON_AddStringToObject(bud, "unit", "m3");
    cJSON_AddNumberToObject(bud, "material_before", j->budget.material_before * area);
    cJSON_AddNumberToObject(bud, "material_after", j->budget.material_after * area);
    cJSON_AddNumberToObject(bud, "left_map", j->budget.left_map * area);
    cJSON_AddNumberToObject(bud, "eroded", j->budget.eroded * area);
    cJSON_AddNumberToObject(bud, "deposited", j->budget.deposited * area);
    cJSON_AddNumberToObject(bud, "water_added", j->budget.water_added * area);
    cJSON_AddNumberToObject(bud, "water_left", j->budget.water_left * area);
    cJSON_AddNumberToObject(bud, "relative_error", j->budget.rel_error);
    char *text = cJSON_PrintUnformatted(o);
    int failed = !text || puts(text) == EOF;
    failed |= fflush(stdout) != 0;
    if (failed)
        er_msg_error("%s: cannot write the --json line to standard output: %s", j->input,
                     text ? strerror(errno) : "out of memory");
    free(text);
    cJSON_Delete(o);
    return failed;
}

/* Another erode is replacing an output set in `dir`: say so on a terminal
 * (once), and give up when a signal came. */
static int wait_for_lock(void *user, const char *dir, int first)
{
    const job *j = user;
    if (first && isatty(STDERR_FILENO))
        er_msg_error("%s: waiting for another erode writing to '%s'", j->input, dir);
    return er_stop_signal != 0;
}

/* The backend for this input: Vulkan when it is open and can run the
 * plan; with --backend auto what it cannot run goes to the CPU path, with
 * --backend vulkan that is an input error (exit 2). */
static er_status choose_backend(job *j, er_vk_ctx *vk)
{
    const er_settings *s = j->s;
    unsigned need = (j->windowed ? ER_CAP_WINDOW : 0u) |
                    (s->checkpoint || s->resume || s->frames ? ER_CAP_HOOKS : 0u);
    er_error e = {{0}};
    er_status st;
    j->be = &er_backend_cpu;
    j->be_ctx = NULL;
    if (!vk)
        return ER_OK;
    if ((er_backend_vulkan.caps[j->plan.p.model] & need) != need)
        st = er_fail(&e, ER_EUNSUPPORTED, "--checkpoint, --resume, --frames and --tile-set run "
                     "on the cpu backend only for the %s model",
                     j->plan.p.model == ER_MODEL_MEI ? "mei" : "droplet");
    else
        st = er_backend_vulkan.check(vk, &j->plan, &j->terrain, &e);
    if (st == ER_OK) {
        j->be = &er_backend_vulkan;
        j->be_ctx = vk;
        return ER_OK;
    }
    if (s->backend == ER_BACKEND_AUTO)
        return ER_OK;
    return er_fail(&j->err, st, "%s: %s", j->input, e.msg);
}

/* The backend a checkpoint of this run records, and a --resume state
 * from another backend (or device, or driver) refused (io/checkpoint.h). */
static er_status check_resume_backend(job *j)
{
    const er_vk_device_info *d = j->be_ctx ? er_vk_info(j->be_ctx) : NULL;
    if (d)
        snprintf(j->ck_id.backend, sizeof j->ck_id.backend, "vulkan %.34s (driver %#x)",
                 d->name, d->driver_version);
    else
        snprintf(j->ck_id.backend, sizeof j->ck_id.backend, "cpu");
    er_error e = {{0}};
    char path[PATH_MAX];
    if (!j->resumed.buf)
        return ER_OK;
    er_path_pattern(path, sizeof path, j->s->resume, j->input);
    if (er_checkpoint_same_backend(&j->resumed, path, j->ck_id.backend, &e))
        return er_fail(&j->err, ER_EINVAL, "%s: --resume: %s", j->input, e.msg);
    return ER_OK;
}

/* Whether the error line already starts with the input's name. */
static int names_input(const job *j)
{
    size_t n = strlen(j->input);
    return strncmp(j->err.msg, j->input, n) == 0 && j->err.msg[n] == ':';
}

/* An input must be a regular file: the readers open it more than once
 * (the format is told from its first bytes, libtiff seeks), so a FIFO
 * would hang and a terminal would be read twice. */
static er_status check_input_kind(job *j)
{
    struct stat st;
    if (stat(j->input, &st) != 0 || S_ISREG(st.st_mode))
        return ER_OK; /* a missing file is reported by the reader */
    return er_fail(&j->err, ER_EINVAL, "%s: not a regular file (%s); copy it to a file first",
                   j->input, S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a pipe" : "a device");
}

static int run_one(const er_settings *s, const er_params *recipe, const char *input, size_t limit,
                   er_vk_ctx *vk)
{
    job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.input = input;
    j.params = *recipe;
    j.saved_at = -1;
    double t0 = er_msg_now();
    int started = 0;
    er_read_opts ro = {s->band, limit};
    er_status st = check_input_kind(&j);
    if (st == ER_OK && s->tiles) {
        j.windowed = 1;
        st = er_tile_window_read(s->tiles, er_tile_set_find(s->tiles, input), s->halo, &ro,
                                 &j.img, &j.window, &j.err);
    } else if (st == ER_OK) {
        st = er_image_read(input, &ro, &j.img, &j.err);
    }
    if (st == ER_OK) {
        er_georef_drop_statistics(&j.img.georef);
        st = resolve_sources(&j);
    }
    if (st == ER_OK) {
        st = resolve_cell_size(&j);
    }
    if (st == ER_OK) {
        st = check_memory(&j, limit);
    }
    if (st == ER_OK)
        st = prepare_terrain(&j);
    if (st == ER_OK)
        st = plan_run(&j);
    if (st == ER_OK)
        st = prepare_checkpoint(&j, recipe);
    if (st == ER_OK)
        st = choose_backend(&j, vk);
    if (st == ER_OK)
        st = check_resume_backend(&j);
    if (st == ER_OK) {
        started = 1;
        int show = s->progress < 0 ? isatty(STDERR_FILENO) : s->progress;
        er_progress_begin(&j.progress, show, er_path_base(input));
        st = simulate(&j);
        er_progress_end(&j.progress);
        if (st != ER_OK && st != ER_ECANCELED && !names_input(&j))
            er_error_prefix(&j.err, input);
    }
    /* The layers and the preview replace their final names together, once
     * all are written (io/atomic.h output sets). */
    er_atomic_set_begin();
    if (st == ER_OK)
        st = write_layers(&j);
    if (st == ER_OK && s->preview)
        st = write_preview(&j);
    /* A signal that came while the files were written: the previous
     * outputs stay as they were (exit 130/143). */
    if (st == ER_OK && er_stop_signal)
        st = er_fail(&j.err, ER_ECANCELED, "%s: interrupted before its outputs replaced the "
                     "previous ones", input);
    if (st == ER_OK)
        st = er_atomic_set_commit(wait_for_lock, &j, &j.err);
    else
        er_atomic_set_abort();
    /* Every output is in place: the checkpoint has served (a farm wants a
     * clean directory).  A --resume file of another name is the user's. */
    if (st == ER_OK && j.ck_path[0] && unlink(j.ck_path) != 0 && errno != ENOENT)
        er_msg_error("%s: warning: cannot remove '%s': %s", input, j.ck_path, strerror(errno));
    j.seconds = er_msg_now() - t0;
    int status = st == ER_OK ? 0 : exit_for(st, started);
    if (st == ER_ECANCELED && j.saved_at >= 0)
        er_fail(&j.err, st, "%s: interrupted at %s %lld; state saved in '%s' (continue with --resume)",
                input, j.params.model == ER_MODEL_MEI ? "step" : "batch", (long long)j.saved_at,
                j.ck_path);
    if (st != ER_OK) {
        j.written = 0; /* for --json: no output of this input exists */
        j.preview[0] = '\0';
        er_msg_error("%s", j.err.msg);
    }
    if (s->json && print_json(&j, status) && status == 0)
        status = EXIT_RUN_FAILED;
    job_free(&j);
    return status;
}

int er_run_list_devices(void)
{
    er_vk_device_info dev[16];
    er_error err = {{0}};
    int n = 0;
    if (er_vk_list_devices(dev, 16, &n, &err) != ER_OK) {
        er_msg_error("--list-devices: %s", err.msg);
        return EXIT_USAGE;
    }
    if (n == 0) {
        er_msg_error("--list-devices: vulkan: no Vulkan device found");
        return EXIT_USAGE;
    }
    for (int i = 0; i < n && i < 16; i++) {
        const er_vk_device_info *d = &dev[i];
        printf("%d: %s (%s, Vulkan %u.%u, %.0f MiB device memory, maxStorageBufferRange %.0f MiB%s)\n",
               d->index, d->name, er_vk_type_name(d->type), d->api_version >> 22,
               (d->api_version >> 12) & 0x3ffu, (double)d->device_local_bytes / 1048576.0,
               (double)d->max_storage_buffer_range / 1048576.0,
               d->has_compute ? "" : ", no compute queue");
    }
    return fflush(stdout) == 0 ? 0 : EXIT_RUN_FAILED;
}

/* Opens the Vulkan backend for --backend vulkan|auto.  auto takes the
 * device given by --device, else the first that is not a CPU
 * implementation (a software rasteriser such as lavapipe is slower than
 * the CPU path), and otherwise quietly runs on the CPU.  ERODE_VK_VALIDATION=1
 * turns on the Khronos validation layer. */
static int open_backend(const er_settings *s, er_vk_ctx **vk)
{
    er_error err = {{0}};
    const char *v = getenv("ERODE_VK_VALIDATION");
    er_vk_options o = {s->device, v && strcmp(v, "0") != 0 && *v};
    *vk = NULL;
    if (s->backend == ER_BACKEND_CPU)
        return 0;
    if (s->backend == ER_BACKEND_AUTO) {
        er_vk_device_info dev[16];
        int n = 0;
        if (!s->device_set) {
            o.device = -1;
            if (er_vk_list_devices(dev, 16, &n, &err) == ER_OK)
                for (int i = 0; i < n && i < 16 && o.device < 0; i++)
                    if (dev[i].type != ER_VK_TYPE_CPU && dev[i].has_compute)
                        o.device = i;
            if (o.device < 0)
                return 0;
        }
        if (er_vk_open(&o, vk, &err) != ER_OK)
            *vk = NULL;
        return 0;
    }
    if (er_vk_open(&o, vk, &err) != ER_OK) {
        er_msg_error("--backend vulkan: %s", err.msg);
        return EXIT_USAGE;
    }
    return 0;
}

/* With ERODE_VK_VALIDATION=1: any validation message fails the run. */
static int close_backend(er_vk_ctx *vk, int status)
{
    char first[ER_ERROR_MAX];
    uint64_t n = er_vk_messages(vk, first, sizeof first);
    er_vk_close(vk);
    if (n == 0)
        return status;
    er_msg_error("vulkan: %llu validation messages, the first: %s", (unsigned long long)n, first);
    return status ? status : EXIT_RUN_FAILED;
}

int er_run_all(const er_settings *s, const er_params *recipe)
{
    size_t limit = s->max_memory ? s->max_memory : machine_memory();
    int worst = 0;
    er_vk_ctx *vk = NULL;
#ifdef _OPENMP
    if (s->threads > 0)
        omp_set_num_threads(s->threads);
#endif
    if ((worst = open_backend(s, &vk)) != 0)
        return worst;
    for (int i = 0; i < s->n_inputs; i++) {
        if (er_stop_signal) {
            worst = 128 + (int)er_stop_signal;
            break;
        }
        int st = run_one(s, recipe, s->inputs[i], limit, vk);
        if (st > worst)
            worst = st;
        if (st >= 128)
            break;
    }
    return close_backend(vk, worst);
}
