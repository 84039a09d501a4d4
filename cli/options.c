#include "options.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/models.h"
#include "../io/text.h"
#include "er_commit.h"
#include "msg.h"

enum {
    OPT_BACKEND = 1000, OPT_JSON, OPT_PRINT_RECIPE, OPT_PROGRESS, OPT_LAYERS,
    OPT_BAND, OPT_MAX_MEMORY, OPT_PREVIEW, OPT_PREVIEW_PAIR, OPT_INPUTS_FROM,
    OPT_CHECKPOINT, OPT_CHECKPOINT_EVERY, OPT_RESUME, OPT_FRAMES, OPT_FRAME_EVERY,
    OPT_TILE_SET, OPT_HALO, OPT_DEVICE, OPT_LIST_DEVICES, OPT_CO, OPT_PRECISION, OPT_PLAN
};

/* The one option table (curl's aliases[]): parsing and --help both read it. */
static const struct er_option {
    const char *name;
    int has_arg;
    int val;
    const char *arg;
    const char *help;
} options[] = {
    {"recipe", required_argument, 'r', "FILE", "JSON recipe (default: the built-in default recipe)"},
    {"set", required_argument, 's', "KEY=VALUE", "override one recipe value, e.g. -s mei.steps=500 (repeatable)"},
    {"inputs-from", required_argument, OPT_INPUTS_FROM, "FILE", "read more input paths from FILE, one a line or NUL-separated as find -print0 writes (- = standard input)"},
    {"output-dir", required_argument, 'o', "DIR", "where outputs go (default: .)"},
    {"format", required_argument, 'f', "tif|png|exr|r16|r32", "output format (default: the input's); exr: OpenEXR; r16, r32: RAW for game engines, with a .json sidecar"},
    {"co", required_argument, OPT_CO, "KEY=VALUE", "creation option (repeatable): COMPRESS=DEFLATE|ZSTD|LZW|NONE, LEVEL=N, PREDICTOR=1|2|3, BLOCKSIZE=N, COG=YES|NO for GeoTIFF; COMPRESS=ZIP|NONE|RLE|ZIPS|PIZ|PXR24 (lossless; PXR24 only with HALF), PIXEL_TYPE=FLOAT|HALF for -f exr; ROW_ORDER=TOP_DOWN|BOTTOM_UP for -f r16 and r32; NODATA_FILL=VALUE for -f exr, r16 and r32 (nodata cells hold VALUE)"},
    {"precision", required_argument, OPT_PRECISION, "[LAYER=]STEP", "round a GeoTIFF layer to STEP (file units, error <= STEP/2) before compression; no LAYER: sediment and water (repeatable)"},
    {"layers", required_argument, OPT_LAYERS, "LIST", "comma list of height,sediment,water,erosion,deposit,flow,wear (default: height,sediment,water)"},
    {"threads", required_argument, 'j', "N", "worker threads (default: all cores)"},
    {"backend", required_argument, OPT_BACKEND, "cpu|vulkan|auto", "compute path (default: cpu; auto: a Vulkan GPU if there is one, else cpu)"},
    {"device", required_argument, OPT_DEVICE, "N", "Vulkan device to use, from --list-devices (default: 0)"},
    {"list-devices", no_argument, OPT_LIST_DEVICES, NULL, "list the Vulkan devices and exit"},
    {"band", required_argument, OPT_BAND, "N", "band of a multi-band GeoTIFF to read (default: the file must have one)"},
    {"max-memory", required_argument, OPT_MAX_MEMORY, "SIZE", "refuse inputs needing more memory, e.g. 8G, 512M (default: the machine's memory)"},
    {"preview", required_argument, OPT_PREVIEW, "FILE.png", "also draw a shaded-relief picture of the result ({stem} = the input's stem)"},
    {"preview-pair", no_argument, OPT_PREVIEW_PAIR, NULL, "the preview shows before and after side by side"},
    {"checkpoint", required_argument, OPT_CHECKPOINT, "FILE", "save the run state to FILE when stopped by SIGINT/SIGTERM ({stem} = the input's stem); removed after success"},
    {"checkpoint-every", required_argument, OPT_CHECKPOINT_EVERY, "N", "also save it every N steps (droplets: batches; default: 0, only when stopped and at the end)"},
    {"resume", required_argument, OPT_RESUME, "FILE", "continue the run saved in FILE (same recipe and input); outputs as if never stopped"},
    {"frames", required_argument, OPT_FRAMES, "DIR", "write time-lapse preview frames DIR/<stem>.frame-NNNNNN.png"},
    {"frame-every", required_argument, OPT_FRAME_EVERY, "N", "one frame every N steps (droplets: batches; default: 10), plus the start and the end"},
    {"tile-set", required_argument, OPT_TILE_SET, "LIST", "the inputs are tiles of the mosaic LIST lists (file or -, one a line); see erode stitch"},
    {"halo", required_argument, OPT_HALO, "N", "with --tile-set: run each tile with N cells read from its neighbours"},
    {"json", no_argument, OPT_JSON, NULL, "one JSON summary line per input on stdout"},
    {"plan", no_argument, OPT_PLAN, NULL, "check everything and print what the run would do (stages, steps, memory, outputs, time) without doing it; writes nothing"},
    {"dry-run", no_argument, OPT_PLAN, NULL, "the same as --plan"},
    {"print-recipe", no_argument, OPT_PRINT_RECIPE, NULL, "print the effective recipe (defaults filled in) and exit"},
    {"quiet", no_argument, 'q', NULL, "no progress output"},
    {"progress", optional_argument, OPT_PROGRESS, "auto|bar|lines|json|none", "progress on stderr, also off a terminal (default: auto, a bar on a terminal, else lines)"},
    {"help", no_argument, 'h', NULL, "print this help and exit"},
    {"version", no_argument, 'V', NULL, "print the version, the commit and the build's features and exit"},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

static const char *const layer_names[ER_LAYER_COUNT] = {"height", "sediment", "water", "erosion", "deposit",
                                                              "flow", "wear"};

const char *er_layer_name(unsigned bit)
{
    for (int i = 0; i < ER_LAYER_COUNT; i++)
        if (bit == 1u << i)
            return layer_names[i];
    return "?";
}

/* --help is read on an 80- to 100-column terminal: no line is wider. */
#define HELP_WIDTH 100

/* What erode stitch uses (--help says so; bash completion offers only
 * these after `erode stitch`).  It accepts the others and ignores them,
 * so that one option list serves a tile's run and its stitch
 * (scripts/erode-tiles.sbatch). */
static const int stitch_opts[] = {OPT_TILE_SET, 'o', 'f', OPT_CO, OPT_PRECISION, OPT_LAYERS,
                                  OPT_INPUTS_FROM, OPT_JSON, OPT_PRINT_RECIPE, 'q',
                                  OPT_PROGRESS, 'h', 'V'};

/* The exit statuses (erode(1) EXIT STATUS; tests/lint.sh compares the
 * two lists). */
static const char *const exit_statuses =
    "Exit status: 0 success, 1 a run failed, 2 usage, recipe or input error (before any work, "
    "nothing written), 129, 130, 141, 143 interrupted by SIGHUP, SIGINT, SIGPIPE, SIGTERM.";

/* Prints `lead` then the words of `text`, wrapped at HELP_WIDTH columns,
 * each further line indented by `indent` spaces. */
static void wrap(FILE *out, const char *lead, int indent, const char *text)
{
    size_t col = strlen(lead);
    int fresh = col == 0; /* nothing on this line yet */
    fputs(lead, out);
    for (const char *p = text + strspn(text, " "); *p; p += strspn(p, " ")) {
        size_t n = strcspn(p, " ");
        if (!fresh && col + 1 + n > HELP_WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            col = (size_t)indent;
            fresh = 1;
        }
        fprintf(out, "%s%.*s", fresh ? "" : " ", (int)n, p);
        col += n + !fresh;
        fresh = 0;
        p += n;
    }
    fputc('\n', out);
}

/* "-o, --output-dir DIR" or "    --json": an option as --help shows it. */
static void option_left(char *buf, size_t n, const struct er_option *o, int with_arg)
{
    int used = o->val < 256 ? snprintf(buf, n, "-%c, --%s", o->val, o->name)
                            : snprintf(buf, n, "    --%s", o->name);
    if (with_arg && o->arg && used >= 0 && (size_t)used < n)
        snprintf(buf + used, n - (size_t)used,
                 o->has_arg == optional_argument ? "[=%s]" : " %s", o->arg);
}

/* "-o, --co, ...": the options erode stitch uses, short names first. */
static void stitch_list(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < sizeof stitch_opts / sizeof stitch_opts[0]; k++)
        for (size_t i = 0; i < N_OPTIONS; i++) {
            if (options[i].val != stitch_opts[k])
                continue;
            int w = options[i].val < 256
                        ? snprintf(buf + used, n - used, "%s-%c", used ? ", " : "", options[i].val)
                        : snprintf(buf + used, n - used, "%s--%s", used ? ", " : "", options[i].name);
            if (w > 0 && (size_t)w < n - used)
                used += (size_t)w;
        }
}

static void usage(FILE *out)
{
    char list[512], line[sizeof list + 64];
    fprintf(out, "usage: erode [options] INPUT...\n"
                 "       erode [options] --tile-set LIST --halo N TILE...\n"
                 "       erode stitch --tile-set LIST [-o DIR] [--layers LIST] [TILE...]\n"
                 "Applies hydraulic erosion to GeoTIFF or PNG heightmaps.\n\n");
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char left[64];
        option_left(left, sizeof left, &options[i], 1);
        snprintf(line, sizeof line, "  %-33s", left);
        wrap(out, line, 36, options[i].help);
    }
    fprintf(out, "\nModels (the recipe's \"model\", erode-models(7)):");
    for (int m = 0; m < ER_MODEL_KINDS; m++)
        fprintf(out, "%s %s", m ? "," : "", er_model_name((er_model_kind)m));
    fputc('\n', out);
    stitch_list(list, sizeof list);
    snprintf(line, sizeof line, "Stitch options: %s (erode stitch ignores the others).", list);
    wrap(out, "", 8, line);
    wrap(out, "", 0, "Outputs are DIR/<stem>.<layer>.<ext>, <stem> the input's name less its "
                     "extension and a final .height; with --tile-set DIR/<stem>.<layer>.halo.tif "
                     "(<stem> of the tile's entry in LIST), which erode stitch cross-fades into "
                     "DIR/<stem>.<layer>.tif, each tile's layers replacing the previous ones "
                     "together. erode creates no directory: DIR must exist.");
    wrap(out, "", 0, exit_statuses);
    fputs("See erode(1), erode-recipe(5) and erode-models(7).\n", out);
}

/* The version, the commit it was built from (the Makefile's `git
 * describe`, "unknown" outside git) and what this build can do. */
static void version(FILE *out)
{
#ifdef _OPENMP
    const char *openmp = "+openmp";
#else
    const char *openmp = "-openmp";
#endif
#ifdef ER_HAVE_VULKAN
    const char *vulkan = "+vulkan";
#else
    const char *vulkan = "-vulkan";
#endif
    fprintf(out, "erode %s\ncommit: %s\nfeatures: %s %s +geotiff +png +exr +raw\n", ERODE_VERSION,
            ERODE_COMMIT, openmp, vulkan);
}

static int parse_layers(const char *list, unsigned *mask)
{
    char buf[256];
    *mask = 0;
    if (strlen(list) >= sizeof buf)
        return 0;
    strcpy(buf, list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < ER_LAYER_COUNT; i++)
            if (strcmp(tok, layer_names[i]) == 0) {
                *mask |= 1u << i;
                found = 1;
            }
        if (!found)
            return 0;
    }
    return *mask != 0;
}

/* --progress[=MODE]; no MODE: auto. */
static int parse_progress(const char *arg, int *mode)
{
    static const char *const name[] = {[ER_PROGRESS_NONE] = "none", [ER_PROGRESS_BAR] = "bar",
                                       [ER_PROGRESS_LINES] = "lines", [ER_PROGRESS_JSON] = "json",
                                       [ER_PROGRESS_AUTO] = "auto"};
    for (int m = ER_PROGRESS_NONE; m <= ER_PROGRESS_AUTO; m++)
        if (strcmp(arg ? arg : "auto", name[m]) == 0) {
            *mode = m;
            return 1;
        }
    return 0;
}

/* "8G", "512M", "64k", plain bytes; binary multiples. */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return 0;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v == 0 || v > (SIZE_MAX >> shift))
        return 0;
    *out = (size_t)(v << shift);
    return 1;
}

static int parse_count(const char *s, long long lo, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo)
        return 0;
    *out = v;
    return 1;
}

static int bad(const char *opt, const char *arg, const char *what)
{
    er_msg_error("%s: '%s': %s", opt, arg, what);
    return 2;
}

/* "1e-4" for sediment and water, or "height=0.01": a layer is rounded only
 * when asked, and the height only by name. */
static int parse_precision(er_settings *s, const char *arg)
{
    const char *eq = strchr(arg, '=');
    const char *num = eq ? eq + 1 : arg;
    unsigned mask = ER_LAYER_SEDIMENT | ER_LAYER_WATER;
    if (eq) {
        char name[32];
        size_t n = (size_t)(eq - arg);
        if (n >= sizeof name)
            return 0;
        memcpy(name, arg, n);
        name[n] = '\0';
        if (!parse_layers(name, &mask) || strchr(name, ','))
            return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(num, &end);
    if (errno || end == num || *end || !(v > 0) || v > 1e30)
        return 0;
    for (int i = 0; i < ER_LAYER_COUNT; i++)
        if (mask & 1u << i)
            s->precision[i] = v;
    return 1;
}

/* The options whose value names a file or directory: an empty name would
 * mean the current directory or nothing at all, never what was meant. */
static const char *path_option(int c)
{
    switch (c) {
    case 'r': return "--recipe";
    case 'o': return "--output-dir";
    case OPT_INPUTS_FROM: return "--inputs-from";
    case OPT_TILE_SET: return "--tile-set";
    case OPT_PREVIEW: return "--preview";
    case OPT_CHECKPOINT: return "--checkpoint";
    case OPT_RESUME: return "--resume";
    case OPT_FRAMES: return "--frames";
    default: return NULL;
    }
}

/* --co PIXEL_TYPE=FLOAT|HALF: the EXR pixel type, GDAL's EXR driver's
 * creation option, so one --co spelling serves GeoTIFF and EXR. */
static int parse_exr_type(er_settings *s, const char *v)
{
    if (strcasecmp(v, "FLOAT") != 0 && strcasecmp(v, "HALF") != 0)
        return 0;
    s->exr_half = strcasecmp(v, "HALF") == 0;
    s->exr_type_given = 1;
    return 1;
}

/* --co ROW_ORDER=TOP_DOWN|BOTTOM_UP: the RAW row order (Unity's Import
 * Raw reads the first row as the south edge). */
static int parse_row_order(er_settings *s, const char *v)
{
    if (strcasecmp(v, "TOP_DOWN") != 0 && strcasecmp(v, "BOTTOM_UP") != 0)
        return 0;
    s->raw_bottom_up = strcasecmp(v, "BOTTOM_UP") == 0;
    s->raw_order_given = 1;
    return 1;
}

/* --co NODATA_FILL=VALUE: a finite number that a float32 holds. */
static int parse_nodata_fill(er_settings *s, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(fabs(x) <= FLT_MAX))
        return 0;
    s->nodata_fill.on = 1;
    s->nodata_fill.value = (float)x;
    return 1;
}

/* The last --co COMPRESS, in the codec table of the output format (GDAL's
 * EXR driver also calls it COMPRESS): OpenEXR's lossless codecs for -f
 * exr, none for RAW, libtiff's otherwise. */
static int apply_compress(er_settings *s)
{
    const char *arg = s->compress_co, *why;
    if (!arg)
        return 0;
    if (s->format == ER_OUT_EXR)
        return er_exr_compress_parse(strchr(arg, '=') + 1, s->exr_half, &s->exr_compress, &why)
                   ? 0 : bad("--co", arg, why);
    if (s->format == ER_OUT_R16 || s->format == ER_OUT_R32)
        return bad("--co", arg, "RAW files are not compressed");
    return er_tiff_create_set(&s->co, arg, &why) ? 0 : bad("--co", arg, why);
}

static int apply(er_settings *s, int c, const char *arg)
{
    const char *path_opt = path_option(c);
    if (path_opt && !*arg)
        return bad(path_opt, arg, "expected a file name, got an empty one");
    switch (c) {
    case 'r':
        if (s->recipe_path) /* the first would be dropped without a word */
            return bad("--recipe", arg, "a second recipe: give one, and -s for the changes");
        s->recipe_path = arg;
        return 0;
    case 's':
        if (!strchr(arg, '='))
            return bad("-s", arg, "expected KEY=VALUE");
        s->overrides[s->n_overrides++] = arg;
        return 0;
    case 'o': s->output_dir = arg; return 0;
    case 'f':
        if (strcmp(arg, "tif") == 0 || strcmp(arg, "tiff") == 0)
            s->format = ER_OUT_TIFF;
        else if (strcmp(arg, "png") == 0)
            s->format = ER_OUT_PNG;
        else if (strcmp(arg, "exr") == 0)
            s->format = ER_OUT_EXR;
        else if (strcmp(arg, "r16") == 0)
            s->format = ER_OUT_R16;
        else if (strcmp(arg, "r32") == 0)
            s->format = ER_OUT_R32;
        else
            return bad("--format", arg, "expected tif, png, exr, r16 or r32");
        return 0;
    case OPT_LAYERS:
        if (!parse_layers(arg, &s->layers))
            return bad("--layers", arg, "expected a comma list of height, sediment, water, erosion, deposit, flow, wear");
        s->layers_given = 1;
        return 0;
    case 'j':
        if (!er_parse_int(arg, 1, 4096, &s->threads))
            return bad("--threads", arg, "expected a whole number from 1 to 4096");
        return 0;
    case OPT_BACKEND:
        if (strcmp(arg, "cpu") == 0)
            s->backend = ER_BACKEND_CPU;
        else if (strcmp(arg, "vulkan") == 0)
            s->backend = ER_BACKEND_VULKAN;
        else if (strcmp(arg, "auto") == 0)
            s->backend = ER_BACKEND_AUTO;
        else
            return bad("--backend", arg, "expected cpu, vulkan or auto");
        return 0;
    case OPT_BAND:
        if (!er_parse_int(arg, 1, 65535, &s->band))
            return bad("--band", arg, "expected a band number from 1");
        return 0;
    case OPT_MAX_MEMORY:
        if (!parse_size(arg, &s->max_memory))
            return bad("--max-memory", arg, "expected a size such as 8G or 512M");
        return 0;
    case OPT_DEVICE:
        if (!er_parse_int(arg, 0, 255, &s->device))
            return bad("--device", arg, "expected a device number from 0 (see --list-devices)");
        s->device_set = 1;
        return 0;
    case OPT_LIST_DEVICES: s->list_devices = 1; return 0;
    case OPT_INPUTS_FROM:
        for (int k = 0; k < s->n_inputs_from; k++)
            if (strcmp(arg, "-") == 0 && strcmp(s->inputs_from[k], "-") == 0)
                return bad("--inputs-from", arg, "standard input can be read only once");
        s->inputs_from[s->n_inputs_from++] = arg;
        return 0;
    case OPT_TILE_SET: s->tile_set = arg; return 0;
    case OPT_HALO:
        if (!er_parse_int(arg, 0, 1000000, &s->halo))
            return bad("--halo", arg, "expected a whole number of cells from 0");
        return 0;
    case OPT_CO: {
        const char *why;
        if (strncasecmp(arg, "PIXEL_TYPE=", 11) == 0)
            return parse_exr_type(s, arg + 11) ? 0 : bad("--co", arg, "expected PIXEL_TYPE=FLOAT or HALF");
        if (strncasecmp(arg, "ROW_ORDER=", 10) == 0)
            return parse_row_order(s, arg + 10) ? 0 : bad("--co", arg, "expected ROW_ORDER=TOP_DOWN or BOTTOM_UP");
        if (strncasecmp(arg, "NODATA_FILL=", 12) == 0)
            return parse_nodata_fill(s, arg + 12) ? 0 : bad("--co", arg, "expected NODATA_FILL=a finite number");
        if (strncasecmp(arg, "COMPRESS=", 9) == 0) {
            s->compress_co = arg;
            return 0;
        }
        return er_tiff_create_set(&s->co, arg, &why) ? 0 : bad("--co", arg, why);
    }
    case OPT_PRECISION:
        if (!parse_precision(s, arg))
            return bad("--precision", arg, "expected [LAYER=]STEP with a step > 0, e.g. 1e-4 or height=0.01");
        return 0;
    case OPT_PREVIEW: s->preview = arg; return 0;
    case OPT_CHECKPOINT: s->checkpoint = arg; return 0;
    case OPT_CHECKPOINT_EVERY:
        if (!parse_count(arg, 0, &s->checkpoint_every))
            return bad("--checkpoint-every", arg, "expected a whole number >= 0");
        return 0;
    case OPT_RESUME: s->resume = arg; return 0;
    case OPT_FRAMES: s->frames = arg; return 0;
    case OPT_FRAME_EVERY:
        if (!parse_count(arg, 1, &s->frame_every))
            return bad("--frame-every", arg, "expected a whole number >= 1");
        s->frame_every_given = 1;
        return 0;
    case OPT_PREVIEW_PAIR: s->preview_pair = 1; return 0;
    case OPT_JSON: s->json = 1; return 0;
    case OPT_PRINT_RECIPE: s->print_recipe = 1; return 0;
    case OPT_PLAN: s->plan = 1; return 0;
    case 'q': s->progress = ER_PROGRESS_NONE; return 0;
    case OPT_PROGRESS:
        if (!parse_progress(arg, &s->progress))
            return bad("--progress", arg, "expected auto, bar, lines, json or none");
        return 0;
    default: return 2;
    }
}

/* The render formats hold no georeferencing, which a tile set needs to
 * place and stitch its tiles. */
static int check_render_format(const er_settings *s)
{
    static const char *const name[] = {"exr", "r16", "r32"};
    int render = s->format >= ER_OUT_EXR;
    if (s->exr_type_given && s->format != ER_OUT_EXR) {
        er_msg_error("--co PIXEL_TYPE: needs -f exr");
        return 2;
    }
    if (s->raw_order_given && s->format != ER_OUT_R16 && s->format != ER_OUT_R32) {
        er_msg_error("--co ROW_ORDER: needs -f r16 or -f r32");
        return 2;
    }
    /* GeoTIFF and PNG keep nodata as nodata (GDAL_NODATA, alpha). */
    if (s->nodata_fill.on && !render) {
        er_msg_error("--co NODATA_FILL: needs -f exr, r16 or r32");
        return 2;
    }
    if (s->nodata_fill.on && s->format == ER_OUT_EXR && s->exr_half && fabsf(s->nodata_fill.value) > 65504.0f) {
        er_msg_error("--co NODATA_FILL: %g is beyond half's range (+-65504)", (double)s->nodata_fill.value);
        return 2;
    }
    if (render && (s->tile_set || s->stitch)) {
        er_msg_error("--format %s: tile sets are written as GeoTIFF (they need georeferencing)",
                     name[s->format - ER_OUT_EXR]);
        return 2;
    }
    return 0;
}

/* Appends the paths of list `list` (a file, or "-" for standard input).
 * Names separated by NUL bytes (`find -print0`, `xargs -0`'s convention)
 * when the text holds one, taken exactly as they are; otherwise one a
 * line, blank lines and surrounding whitespace ignored, so `find | erode
 * --inputs-from -` works.  At most ER_INPUTS_FROM_MAX_BYTES of text and
 * ER_MAX_INPUTS inputs in all. */
static int read_inputs_from(er_settings *s, const char *list)
{
    int from_stdin = strcmp(list, "-") == 0;
    FILE *f = from_stdin ? stdin : fopen(list, "r");
    if (!f) {
        er_msg_error("--inputs-from: cannot read '%s': %s", list, strerror(errno));
        return 2;
    }
    size_t len = 0;
    int over = 0;
    char *buf = er_read_all_max(f, ER_INPUTS_FROM_MAX_BYTES, &len, &over);
    int failed = ferror(f);
    if (!from_stdin)
        fclose(f);
    if (!buf || failed || over) {
        free(buf);
        if (over)
            er_msg_error("--inputs-from: '%s': more than %u MiB of names; split the list",
                         list, ER_INPUTS_FROM_MAX_BYTES >> 20);
        else if (!buf)
            er_msg_error("out of memory");
        else
            er_msg_error("--inputs-from: cannot read '%s'", list);
        return buf || over ? 2 : 1;
    }
    s->inputs_bufs[s->n_inputs_from_read++] = buf;
    int nul_separated = memchr(buf, '\0', len) != NULL;
    char sep = nul_separated ? '\0' : '\n';
    size_t names = 1;
    for (size_t i = 0; i < len; i++)
        names += buf[i] == sep;
    if (names > (size_t)ER_MAX_INPUTS - (size_t)s->n_inputs + 1) {
        er_msg_error("--inputs-from: '%s': more than %d inputs in one run; split the list", list,
                     ER_MAX_INPUTS);
        return 2;
    }
    const char **more = realloc(s->inputs, ((size_t)s->n_inputs + names + 1) * sizeof *more);
    if (!more) {
        er_msg_error("out of memory");
        return 1;
    }
    s->inputs = more;
    for (size_t at = 0; at < len;) {
        char *name = buf + at;
        char *end = memchr(name, sep, len - at);
        if (!end)
            end = buf + len;
        *end = '\0';
        at = (size_t)(end - buf) + 1;
        if (!nul_separated) {
            while (*name == ' ' || *name == '\t')
                name++;
            while (end > name && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
                *--end = '\0';
        }
        if (*name)
            s->inputs[s->n_inputs++] = name;
    }
    return 0;
}

int er_options_parse(int argc, char **argv, er_settings *s)
{
    struct option longopts[N_OPTIONS + 1];
    char shortopts[2 * N_OPTIONS + 2];
    size_t k = 0;

    memset(s, 0, sizeof *s);
    /* `erode stitch ...`: the subcommand, then the usual options. */
    if (argc > 1 && strcmp(argv[1], "stitch") == 0) {
        s->stitch = 1;
        argv++;
        argc--;
    }
    s->halo = -1;
    s->output_dir = ".";
    s->format = ER_OUT_AS_INPUT;
    s->layers = ER_LAYER_HEIGHT | ER_LAYER_SEDIMENT | ER_LAYER_WATER;
    s->backend = ER_BACKEND_CPU;
    s->progress = ER_PROGRESS_UNSET;
    s->frame_every = 10;
    s->co = er_tiff_create_defaults();
    s->overrides = calloc((size_t)argc + 1, sizeof *s->overrides);
    s->inputs = calloc((size_t)argc + 1, sizeof *s->inputs);
    s->inputs_from = calloc((size_t)argc + 1, sizeof *s->inputs_from);
    s->inputs_bufs = calloc((size_t)argc + 1, sizeof *s->inputs_bufs);
    if (!s->overrides || !s->inputs || !s->inputs_from || !s->inputs_bufs) {
        er_msg_error("out of memory");
        return 1;
    }
    shortopts[k++] = ':';
    for (size_t i = 0; i < N_OPTIONS; i++) {
        longopts[i] = (struct option){options[i].name, options[i].has_arg, NULL, options[i].val};
        if (options[i].val < 256) {
            shortopts[k++] = (char)options[i].val;
            if (options[i].has_arg)
                shortopts[k++] = ':';
        }
    }
    longopts[N_OPTIONS] = (struct option){NULL, 0, NULL, 0};
    shortopts[k] = '\0';

    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (c == 'h' || c == 'V') {
            if (c == 'h')
                usage(stdout);
            else
                version(stdout);
            return er_msg_stdout_done(c == 'h' ? "the help" : "the version") ? 1 : -1;
        }
        if (c == '?' || c == ':') {
            const char *what = c == '?' ? "unknown option" : "option needs a value";
            if (optopt && optopt < 256)
                er_msg_error("-%c: %s (see erode --help)", optopt, what);
            else
                er_msg_error("%s: %s (see erode --help)", argv[optind - 1], what);
            return 2;
        }
        int rc = apply(s, c, optarg);
        if (rc)
            return rc;
    }
    const char *why;
    if (apply_compress(s))
        return 2;
    if (!er_tiff_create_check(&s->co, &why)) {
        er_msg_error("--co: %s", why);
        return 2;
    }
    for (int i = optind; i < argc; i++)
        s->inputs[s->n_inputs++] = argv[i];
    if (s->n_inputs > ER_MAX_INPUTS) {
        er_msg_error("more than %d inputs in one run; split them", ER_MAX_INPUTS);
        return 2;
    }
    for (int l = 0; l < s->n_inputs_from; l++) {
        int rc = read_inputs_from(s, s->inputs_from[l]);
        if (rc)
            return rc;
    }
    if (check_render_format(s))
        return 2;
    if (s->plan && s->stitch) { /* stitch ignores what it does not use; this it must not */
        er_msg_error("--plan: erode stitch runs no model and has no plan");
        return 2;
    }
    if (s->stitch) {
        if (!s->tile_set) {
            er_msg_error("stitch: needs --tile-set LIST (see erode --help)");
            return 2;
        }
        return 0;
    }
    if (s->tile_set && s->halo < 0) {
        er_msg_error("--tile-set: needs --halo N (cells read from the neighbours)");
        return 2;
    }
    if (!s->tile_set && s->halo >= 0) {
        er_msg_error("--halo: needs --tile-set LIST");
        return 2;
    }
    for (int l = 0; l < s->n_inputs_from && s->tile_set; l++)
        if (strcmp(s->tile_set, "-") == 0 && strcmp(s->inputs_from[l], "-") == 0) {
            er_msg_error("--tile-set: only one of --tile-set and --inputs-from can read standard input");
            return 2;
        }
    if (s->n_inputs == 0 && !s->print_recipe && !s->list_devices) {
        er_msg_error("no input file given (see erode --help)");
        return 2;
    }
    if (s->preview_pair && !s->preview) {
        er_msg_error("--preview-pair: needs --preview FILE.png");
        return 2;
    }
    if (s->preview && s->n_inputs > 1 && !strstr(s->preview, "{stem}")) {
        er_msg_error("--preview: '%s': with several inputs the name needs {stem}", s->preview);
        return 2;
    }
    if (s->frame_every_given && !s->frames) {
        er_msg_error("--frame-every: needs --frames DIR");
        return 2;
    }
    if (s->device_set && s->backend == ER_BACKEND_CPU) {
        er_msg_error("--device: needs --backend vulkan or auto (the cpu backend has no devices)");
        return 2;
    }
    if (s->checkpoint_every > 0 && !s->checkpoint) {
        er_msg_error("--checkpoint-every: needs --checkpoint FILE");
        return 2;
    }
    if (s->checkpoint && s->n_inputs > 1 && !strstr(s->checkpoint, "{stem}")) {
        er_msg_error("--checkpoint: '%s': with several inputs the name needs {stem}", s->checkpoint);
        return 2;
    }
    if (s->resume && s->n_inputs > 1 && !strstr(s->resume, "{stem}")) {
        er_msg_error("--resume: '%s': with several inputs the name needs {stem}", s->resume);
        return 2;
    }
    return 0;
}

void er_settings_free(er_settings *s)
{
    free(s->overrides);
    free(s->inputs);
    for (int k = 0; s->inputs_bufs && k < s->n_inputs_from_read; k++)
        free(s->inputs_bufs[k]);
    free(s->inputs_bufs);
    free(s->inputs_from);
    s->overrides = s->inputs = s->inputs_from = NULL;
    s->inputs_bufs = NULL;
}
