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
#include "../core/preview.h"
#include "../io/image.h"
#include "../io/recipe.h"
#include "msg.h"

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

/* The file name part of a path. */
static const char *file_base(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Length of a file name's stem: the name less its last extension. */
static int stem_len(const char *base)
{
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? (int)(dot - base) : (int)strlen(base);
}

/* "<dir>/<stem>.<layer>.<ext>". */
static void output_path(char *buf, size_t n, const char *dir, const char *input,
                        const char *layer, const char *ext)
{
    const char *base = file_base(input);
    snprintf(buf, n, "%s/%.*s.%s.%s", dir, stem_len(base), base, layer, ext);
}

static const char *ext_for(const er_settings *s, er_file_format in)
{
    er_out_format f = s->format == ER_OUT_AS_INPUT ? (in == ER_FORMAT_PNG ? ER_OUT_PNG : ER_OUT_TIFF) : s->format;
    return f == ER_OUT_PNG ? "png" : "tif";
}

/* The input's format as its name says, for naming outputs before reading. */
static er_file_format guess_format(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && strcasecmp(dot, ".png") == 0 ? ER_FORMAT_PNG : ER_FORMAT_TIFF;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
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

/* The preview's path for one input: "{stem}" replaced by the input's stem. */
static void preview_path(char *buf, size_t n, const char *pattern, const char *input)
{
    const char *base = file_base(input);
    int stem = stem_len(base);
    const char *tok = strstr(pattern, "{stem}");
    if (!tok)
        snprintf(buf, n, "%s", pattern);
    else
        snprintf(buf, n, "%.*s%.*s%s", (int)(tok - pattern), pattern, stem, base, tok + 6);
}

int er_run_preflight(const er_settings *s)
{
    int rc = probe_dir(s->output_dir, "output directory");
    if (rc)
        return rc;
    if (s->preview) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", s->preview);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        if ((rc = probe_dir(slash ? (dir[0] ? dir : "/") : ".", "--preview directory")) != 0)
            return rc;
    }
    /* No output may replace an input or another input's output. */
    for (int i = 0; i < s->n_inputs; i++) {
        char pi[PATH_MAX], pj[PATH_MAX];
        const char *ei = ext_for(s, guess_format(s->inputs[i]));
        output_path(pi, sizeof pi, s->output_dir, s->inputs[i], "height", ei);
        for (int j = 0; j < s->n_inputs; j++) {
            if (j < i) {
                output_path(pj, sizeof pj, s->output_dir, s->inputs[j], "height",
                            ext_for(s, guess_format(s->inputs[j])));
                if (strcmp(pi, pj) == 0) {
                    er_msg_error("%s: writes the same outputs as '%s' (same file name stem)",
                                 s->inputs[i], s->inputs[j]);
                    return EXIT_USAGE;
                }
            }
            for (unsigned b = 0; b < ER_LAYER_COUNT; b++) {
                output_path(pj, sizeof pj, s->output_dir, s->inputs[i], er_layer_name(1u << b), ei);
                if (same_file(pj, s->inputs[j])) {
                    er_msg_error("%s: output '%s' would replace an input", s->inputs[i], pj);
                    return EXIT_USAGE;
                }
            }
        }
    }
    return 0;
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
    er_terrain terrain;
    float *initial;            /* working heights before the run (erosion/deposit layers) */
    float *water, *sediment;
    er_budget budget;
    er_progress progress;
    char outputs[ER_LAYER_COUNT][PATH_MAX];
    unsigned written;          /* layers committed */
    char preview[PATH_MAX];    /* written preview, "" if none */
    double seconds;
    er_vk_ctx *vk;             /* the Vulkan backend's context; NULL = the CPU path */
    er_error err;
} job;

static void job_free(job *j)
{
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
    return er_stop_signal != 0;
}

/* Cell size (DESIGN.md §3): an explicit terrain.cell_size wins, then the
 * georeferencing, then 1 m. */
static void resolve_cell_size(job *j)
{
    const er_terrain_params *tp = &j->params.terrain;
    double dx = 1.0, dy = 1.0;
    if (tp->cell_size_set)
        dx = dy = tp->cell_size;
    else if (!er_georef_cell_size(&j->img.georef, j->img.width, j->img.height, &dx, &dy))
        dx = dy = 1.0;
    j->terrain.cell_x = dx;
    j->terrain.cell_y = dy;
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
         * counts sources from cell centres, (0, 0). */
        src->x = px - 0.5;
        src->y = py - 0.5;
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
    }
    memcpy(j->initial, j->terrain.elevation, n * sizeof(float));
    unsigned want = j->s->layers;
    if (j->s->preview)
        want |= ER_LAYER_WATER | ER_LAYER_SEDIMENT; /* the picture shows both */
    if (want & ER_LAYER_WATER)
        j->water = calloc(n, sizeof(float));
    if (want & ER_LAYER_SEDIMENT)
        j->sediment = calloc(n, sizeof(float));
    if (((want & ER_LAYER_WATER) && !j->water) || ((want & ER_LAYER_SEDIMENT) && !j->sediment))
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    return ER_OK;
}

static er_status simulate(job *j)
{
    er_layers layers = {j->water, j->sediment};
    er_run_ctl ctl = {progress_cb, j};
    memset(&j->budget, 0, sizeof j->budget);
    if (j->vk && j->params.model == ER_MODEL_MEI)
        return er_vk_mei_run(j->vk, &j->params, &j->terrain, &layers, &ctl, &j->budget, &j->err);
    if (j->vk)
        return er_vk_droplet_run(j->vk, &j->params, &j->terrain, &layers, &ctl, &j->budget, &j->err);
    if (j->params.model == ER_MODEL_MEI)
        return er_mei_run(&j->params, &j->terrain, &layers, &ctl, &j->budget, &j->err);
    return er_droplet_run(&j->params, &j->terrain, &layers, &ctl, &j->budget, &j->err);
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

static char *provenance(const job *j)
{
    char *recipe = er_recipe_to_json_compact(&j->params);
    const char *base = file_base(j->input);
    cJSON *o = cJSON_CreateObject();
    cJSON *r = recipe ? cJSON_Parse(recipe) : NULL;
    free(recipe);
    if (!o || !r) {
        cJSON_Delete(o);
        cJSON_Delete(r);
        return NULL;
    }
    cJSON_AddStringToObject(o, "erode", ERODE_VERSION);
    cJSON_AddStringToObject(o, "input", base);
    cJSON_AddItemToObject(o, "recipe", r);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

static er_status write_layers(job *j)
{
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    const char *ext = ext_for(j->s, j->img.format);
    er_status st = ER_OK;
    float *buf = malloc(n * sizeof(float));
    char *prov = provenance(j);
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
        output_path(j->outputs[b], PATH_MAX, j->s->output_dir, j->input, er_layer_name(layer), ext);
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

/* The shaded-relief picture of the result (and of the input beside it with
 * --preview-pair), in metres so the hillshade uses the real cell size. */
static er_status write_preview(job *j)
{
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    float *deposit = malloc(n * sizeof(float)), *erosion = malloc(n * sizeof(float));
    uint8_t *rgb = NULL;
    er_status st = ER_ENOMEM;
    if (!deposit || !erosion)
        goto done;
    for (size_t i = 0; i < n; i++) {
        float d = j->terrain.elevation[i] - j->initial[i];
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
    er_preview_in after = {j->img.width, j->img.height, j->terrain.elevation, j->img.nodata,
                           j->terrain.cell_x, j->terrain.cell_y, mei ? j->water : NULL,
                           mei ? j->sediment : NULL, deposit, erosion, &style};
    er_preview_in before = {j->img.width, j->img.height, j->initial, j->img.nodata,
                            j->terrain.cell_x, j->terrain.cell_y, NULL, NULL, NULL, NULL, &style};
    int w, h;
    if ((st = er_preview_size(&after, j->s->preview_pair, &w, &h, &j->err)) != ER_OK)
        goto done;
    st = ER_ENOMEM;
    if (!(rgb = malloc((size_t)w * (size_t)h * 3)))
        goto done;
    st = j->s->preview_pair ? er_preview_render_pair(&before, &after, rgb, &j->err)
                            : er_preview_render(&after, rgb, &j->err);
    if (st == ER_OK) {
        preview_path(j->preview, sizeof j->preview, j->s->preview, j->input);
        st = er_png_write_rgb(j->preview, w, h, rgb, NULL, &j->err);
        if (st != ER_OK)
            j->preview[0] = '\0';
    }
done:
    if (st == ER_ENOMEM && !j->err.msg[0])
        er_fail(&j->err, ER_ENOMEM, "%s: out of memory drawing the preview", j->input);
    free(deposit);
    free(erosion);
    free(rgb);
    return st;
}

static const char *model_name(er_model_kind m) { return m == ER_MODEL_MEI ? "mei" : "droplet"; }

static void print_json(const job *j, int status)
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
    cJSON_AddStringToObject(o, "backend", j->vk ? "vulkan" : "cpu");
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
    if (text)
        puts(text);
    fflush(stdout);
    free(text);
    cJSON_Delete(o);
}

/* What the Vulkan backend can refuse before the run starts (device
 * limits, a recipe it does not handle): an input error, exit 2. */
static er_status vk_preflight(job *j)
{
    if (!j->vk)
        return ER_OK;
    er_status st = j->params.model == ER_MODEL_MEI
                       ? er_vk_mei_check(j->vk, &j->params, &j->terrain, &j->err)
                       : er_vk_droplet_check(j->vk, &j->params, &j->terrain, &j->err);
    if (st && j->s->backend == ER_BACKEND_AUTO) {
        /* auto: what the device cannot run goes to the CPU path */
        j->vk = NULL;
        j->err.msg[0] = '\0';
        return ER_OK;
    }
    if (st)
        er_error_prefix(&j->err, j->input);
    return st;
}

static int run_one(const er_settings *s, const er_params *recipe, const char *input, size_t limit,
                   er_vk_ctx *vk)
{
    job j;
    memset(&j, 0, sizeof j);
    j.vk = vk;
    j.s = s;
    j.input = input;
    j.params = *recipe;
    double t0 = er_msg_now();
    int started = 0;
    er_read_opts ro = {s->band, limit};
    er_status st = er_image_read(input, &ro, &j.img, &j.err);
    if (st == ER_OK) {
        er_georef_drop_statistics(&j.img.georef);
        st = resolve_sources(&j);
    }
    if (st == ER_OK) {
        resolve_cell_size(&j);
        st = check_memory(&j, limit);
    }
    if (st == ER_OK)
        st = prepare_terrain(&j);
    if (st == ER_OK)
        st = vk_preflight(&j);
    if (st == ER_OK) {
        started = 1;
        int show = s->progress < 0 ? isatty(STDERR_FILENO) : s->progress;
        er_progress_begin(&j.progress, show, file_base(input));
        st = simulate(&j);
        er_progress_end(&j.progress);
    }
    if (st == ER_OK)
        st = write_layers(&j);
    if (st == ER_OK && s->preview)
        st = write_preview(&j);
    j.seconds = er_msg_now() - t0;
    int status = st == ER_OK ? 0 : exit_for(st, started);
    if (st != ER_OK)
        er_msg_error("%s", j.err.msg);
    if (s->json)
        print_json(&j, status);
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
