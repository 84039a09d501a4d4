#include "tiles.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/stitch.h"
#include "../io/atomic.h"
#include "msg.h"
#include "paths.h"
#include "provenance.h"
#include "signals.h"
#include "targets.h"

int er_tile_set_load(const char *list, er_tile_set *ts)
{
    er_error err = {{0}};
    er_status st = er_tile_set_read(list, ts, &err);
    if (st == ER_OK)
        return 0;
    if (st == ER_ENOMEM)
        er_msg_error("%s", err.msg);
    else
        er_msg_error("--tile-set: %s", err.msg);
    return 2;
}

/* ---------------------------------------------------------------------
 * erode stitch: select the tiles, check everything that can be checked
 * before a pixel is read (write targets, which halo outputs exist, their
 * grid and recipe), then stitch tile by tile, each tile's layers one
 * output set (io/atomic.h) that replaces the previous stitched set whole.
 * --------------------------------------------------------------------- */

/* What every halo output one `erode stitch` blends must share: the recipe
 * (model included) its run used.  Blending tiles of different recipes
 * would give seams no halo can hide, silently. */
typedef struct stitch_ref {
    char *recipe;          /* compact recipe of the first halo output checked */
    char first[PATH_MAX];  /* that output */
} stitch_ref;

/* What tile sel[i] reads: for each layer, the halo outputs (tile-set
 * indices, in the set's order, so the sums are formed in one fixed order)
 * that reach into it, as found before any tile was written. */
typedef struct tile_sources {
    int *from[ER_LAYER_COUNT];
    int n_from[ER_LAYER_COUNT];
} tile_sources;

typedef struct stitch_run {
    const er_settings *s;
    const er_tile_set *ts;
    er_stitch_tile *sel;   /* the n tiles to stitch and their layers */
    tile_sources *src;     /* n: what each reads */
    int n;
    stitch_ref ref;
} stitch_run;

/* 0 when the halo output at `path` (provenance `description`) was made
 * with the reference recipe (the first one seen sets it); else prints why
 * and returns 2. */
static int same_recipe(stitch_ref *ref, const char *path, const char *description)
{
    char *recipe = er_provenance_recipe(description);
    if (!recipe) {
        er_msg_error("stitch: '%s' carries no erode recipe (not an output of erode --tile-set)",
                     path);
        return 2;
    }
    if (!ref->recipe) {
        ref->recipe = recipe;
        snprintf(ref->first, sizeof ref->first, "%s", path);
        return 0;
    }
    int same = strcmp(recipe, ref->recipe) == 0;
    free(recipe);
    if (same)
        return 0;
    er_msg_error("stitch: '%s' was made with another recipe than '%s'; stitch the outputs of "
                 "one recipe at a time", path, ref->first);
    return 2;
}

static void halo_path(char *buf, const stitch_run *r, int j, unsigned b)
{
    er_path_stitched(buf, PATH_MAX, r->s->output_dir, r->ts->paths[j], er_layer_name(1u << b),
                     ".halo");
}

/* Whether a halo output at window `win` (w x h cells) covers a cell of
 * the tile at p. */
static int reaches(const er_window *win, int w, int h, const er_tile_place *p)
{
    return win->x0 < p->col + p->width && p->col < win->x0 + w && win->y0 < p->row + p->height &&
           p->row < win->y0 + h;
}

/* Without --layers: every layer the tile's run wrote (its halo outputs
 * exist), 0 after printing why when there is none. */
static unsigned halo_layers(const stitch_run *r, int k)
{
    char path[PATH_MAX];
    unsigned want = 0;
    for (unsigned b = 0; b < ER_LAYER_COUNT; b++) {
        struct stat st;
        halo_path(path, r, k, b);
        if (stat(path, &st) == 0)
            want |= 1u << b;
    }
    if (!want) {
        er_path_stitched(path, PATH_MAX, r->s->output_dir, r->ts->paths[k], "*", ".halo");
        er_msg_error("stitch: %s: no halo outputs '%s'", r->ts->paths[k], path);
    }
    return want;
}

/* The tiles to stitch (the command line's, each found by file identity and
 * named after its entry in the set, or every tile) and their layers.
 * Returns an exit status, message printed. */
static int select_tiles(stitch_run *r)
{
    const er_settings *s = r->s;
    const er_tile_set *ts = r->ts;
    int n = s->n_inputs > 0 ? s->n_inputs : ts->n;
    char *seen = calloc((size_t)ts->n, 1);
    r->sel = calloc((size_t)n, sizeof *r->sel);
    r->src = calloc((size_t)n, sizeof *r->src);
    if (!seen || !r->sel || !r->src) {
        free(seen);
        er_msg_error("out of memory");
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        int k = s->n_inputs > 0 ? er_tile_set_find(ts, s->inputs[i]) : i;
        if (k < 0) {
            er_msg_error("%s: not a tile of the --tile-set", s->inputs[i]);
            rc = 2;
        } else if (seen[k]) {
            er_msg_error("stitch: %s: given twice", ts->paths[k]);
            rc = 2;
        } else {
            seen[k] = 1;
            r->sel[r->n].k = k;
            r->sel[r->n].layers = s->layers_given ? s->layers : halo_layers(r, k);
            rc = r->sel[r->n].layers ? 0 : 2;
            r->n++;
        }
    }
    free(seen);
    return rc;
}

/* Adds halo output j to the sources of every tile it reaches (layer b),
 * checking its recipe when it reaches any.  Returns an exit status. */
static int plan_output(stitch_run *r, int j, unsigned b, const er_window *win, int w, int h,
                       const char *path, const char *description)
{
    int checked = 0;
    for (int i = 0; i < r->n; i++) {
        tile_sources *t = &r->src[i];
        if (!(r->sel[i].layers & (1u << b)) || !reaches(win, w, h, &r->ts->place[r->sel[i].k]))
            continue;
        if (!checked++ && same_recipe(&r->ref, path, description) != 0)
            return 2;
        int *more = realloc(t->from[b], (size_t)(t->n_from[b] + 1) * sizeof *more);
        if (!more) {
            er_msg_error("out of memory");
            return 1;
        }
        t->from[b] = more;
        t->from[b][t->n_from[b]++] = j;
    }
    return 0;
}

/* Halo output j of layer b, when it exists: its header read, its place on
 * the set's grid and its recipe checked.  *exists says whether it does.
 * Returns an exit status. */
static int plan_halo(stitch_run *r, int j, unsigned b, char *exists)
{
    char path[PATH_MAX];
    struct stat st;
    er_image img;
    er_window win;
    er_error err = {{0}};
    halo_path(path, r, j, b);
    *exists = stat(path, &st) == 0;
    if (!*exists)
        return 0;
    if (er_tiff_read_info(path, NULL, &img, &err) != ER_OK) {
        er_msg_error("stitch: %s", err.msg);
        return 2;
    }
    int rc = 0;
    if (!er_tile_set_locate(r->ts, &img, &win)) {
        er_msg_error("stitch: '%s' does not lie on the tile set's grid", path);
        rc = 2;
    } else {
        rc = plan_output(r, j, b, &win, img.width, img.height, path, img.description);
    }
    er_image_free(&img);
    return rc;
}

/* Each tile's own and its neighbours' halo outputs must exist (farther
 * tiles' are used when present: a halo wider than a tile). */
static int check_neighbours(const stitch_run *r, unsigned b, const char *exists)
{
    char path[PATH_MAX];
    for (int i = 0; i < r->n; i++) {
        const er_stitch_tile *t = &r->sel[i];
        if (!(t->layers & (1u << b)))
            continue;
        for (int j = 0; j < r->ts->n; j++) {
            if (exists[j] ||
                (j != t->k && !er_mosaic_touch(&r->ts->place[t->k], &r->ts->place[j], 1)))
                continue;
            halo_path(path, r, j, b);
            if (j == t->k)
                er_msg_error("stitch: %s: no halo output '%s'", r->ts->paths[t->k], path);
            else
                er_msg_error("stitch: %s: its neighbour's halo output '%s' does not exist",
                             r->ts->paths[t->k], path);
            return 2;
        }
    }
    return 0;
}

/* Every check that needs no pixels, for every tile, before the first is
 * written: which halo outputs exist, their grid, their recipe.  Returns an
 * exit status. */
static int plan_sources(stitch_run *r)
{
    unsigned all = 0;
    char *exists = malloc((size_t)r->ts->n);
    if (!exists) {
        er_msg_error("out of memory");
        return 1;
    }
    for (int i = 0; i < r->n; i++)
        all |= r->sel[i].layers;
    int rc = 0;
    for (unsigned b = 0; b < ER_LAYER_COUNT && rc == 0; b++) {
        if (!(all & (1u << b)))
            continue;
        for (int j = 0; j < r->ts->n && rc == 0; j++)
            rc = plan_halo(r, j, b, &exists[j]);
        if (rc == 0)
            rc = check_neighbours(r, b, exists);
    }
    free(exists);
    return rc;
}

/* Adds halo output j (layer b) to tile k's sums, its path kept in from[]
 * for the provenance.  It was checked before any tile was written; what
 * differs now was changed meanwhile.  Returns an exit status, message
 * printed: 2 for an output that cannot be read (an input of the tile). */
static int add_output(stitch_run *r, int k, int j, unsigned b, er_stitch *acc, char **from,
                      int *n_from)
{
    char path[PATH_MAX];
    er_image img;
    er_window win;
    er_error err = {{0}};
    halo_path(path, r, j, b);
    if (er_tiff_read(path, NULL, &img, &err) != ER_OK) {
        er_msg_error("stitch: %s: %s", r->ts->paths[k], err.msg);
        return 2;
    }
    int rc = 0;
    if (!er_tile_set_locate(r->ts, &img, &win) ||
        !reaches(&win, img.width, img.height, &r->ts->place[k])) {
        er_msg_error("stitch: %s: '%s' changed while erode stitch ran", r->ts->paths[k], path);
        rc = 2;
    } else if ((rc = same_recipe(&r->ref, path, img.description)) == 0) {
        if ((from[*n_from] = strdup(path)) != NULL) {
            (*n_from)++;
            er_stitch_add(acc, &win, img.width, img.height, img.data, img.nodata, j == k);
        } else {
            er_msg_error("%s: out of memory", r->ts->paths[k]);
            rc = 1;
        }
    }
    er_image_free(&img);
    return rc;
}

/* Stitches layer b of tile sel[i] into its temporary (held by the output
 * set): `tile` is the tile's header (georeferencing, nodata).  Returns an
 * exit status, message printed. */
static int stitch_layer(stitch_run *r, int i, unsigned b, const er_image *tile, char *out)
{
    const er_settings *s = r->s;
    const tile_sources *t = &r->src[i];
    const int k = r->sel[i].k;
    const er_tile_place *p = &r->ts->place[k];
    const char *name = r->ts->paths[k];
    size_t n = (size_t)p->width * (size_t)p->height;
    er_stitch acc;
    float *res = malloc(n * sizeof *res);
    char **from = calloc((size_t)t->n_from[b] + 1, sizeof *from), *prov = NULL, *nan_tag = NULL;
    char *md = NULL;
    er_error err = {{0}};
    er_tiff_create co = s->co; /* the stitched tile is written as the run's outputs */
    int rc = 1, n_from = 0;
    co.precision = s->precision[b];
    if (er_stitch_init(&acc, p, &err) != ER_OK || !res || !from) {
        er_msg_error("%s: out of memory", name);
        goto done;
    }
    for (int f = 0; f < t->n_from[b]; f++)
        if ((rc = add_output(r, k, t->from[b][f], b, &acc, from, &n_from)) != 0)
            goto done;
    rc = 1;
    double ndv = tile->has_nodata_value ? tile->nodata_value : NAN;
    int any_nodata = er_stitch_finish(&acc, ndv, res);
    prov = er_provenance_stitch(name, r->ref.recipe, (const char *const *)from, n_from);
    er_path_stitched(out, PATH_MAX, s->output_dir, name, er_layer_name(1u << b), "");
    /* A layer with nodata cells declares it, even when the tile has none;
     * the tile's header serves every layer, so the tag goes on a copy. */
    er_georef geo = tile->georef;
    if (any_nodata && !geo.gdal_nodata)
        geo.gdal_nodata = nan_tag = strdup("nan");
    if (!prov || (any_nodata && !geo.gdal_nodata)) {
        er_msg_error("%s: out of memory", name);
        goto done;
    }
    /* The layer's own band description, as a run's outputs have it. */
    if (!er_path_layer_metadata(geo.gdal_metadata, 1u << b, &md)) {
        er_msg_error("%s: out of memory", name);
        goto done;
    }
    if (md)
        geo.gdal_metadata = md;
    er_layer_out lo = {p->width, p->height, res, any_nodata ? acc.nodata : NULL, ndv, &geo, prov};
    if (er_tiff_write_co(out, &lo, &co, &err) != ER_OK) {
        er_msg_error("stitch: %s: %s", name, err.msg);
        goto done;
    }
    rc = 0;
done:
    free(md);
    er_stitch_free(&acc);
    free(res);
    free(prov);
    free(nan_tag);
    for (int f = 0; from && f < n_from; f++)
        free(from[f]);
    free(from);
    return rc;
}

/* The --json line of one stitched tile. */
static void print_json(const char *tile, int status, unsigned written,
                       char outs[ER_LAYER_COUNT][PATH_MAX], double seconds)
{
    cJSON *o = cJSON_CreateObject(), *jo = cJSON_AddObjectToObject(o, "outputs");
    cJSON_AddStringToObject(o, "input", tile);
    cJSON_AddStringToObject(o, "status", status == 0 ? "ok" : "error");
    cJSON_AddNumberToObject(o, "exit", status);
    for (unsigned b = 0; b < ER_LAYER_COUNT; b++)
        if (written & (1u << b))
            cJSON_AddStringToObject(jo, er_layer_name(1u << b), outs[b]);
    /* an array, as a run's line has (cli/report.c), holding "stitch" */
    cJSON *model = cJSON_AddArrayToObject(o, "model");
    if (model)
        cJSON_AddItemToArray(model, cJSON_CreateString("stitch"));
    cJSON_AddNumberToObject(o, "seconds", seconds);
    char *text = cJSON_PrintUnformatted(o);
    if (text)
        puts(text);
    fflush(stdout);
    free(text);
    cJSON_Delete(o);
}

/* Another erode is replacing files in `dir`: say so on a terminal (once),
 * and give up when a signal came. */
static int wait_for_lock(void *user, const char *dir, int first)
{
    const char *const *tile = user;
    if (first && isatty(STDERR_FILENO))
        er_msg_error("stitch: %s: waiting for another erode writing to '%s'", *tile, dir);
    return er_stop_signal != 0;
}

static int interrupted(const char *tile)
{
    er_msg_error("stitch: %s: interrupted; its previous stitched layers are unchanged", tile);
    return 128 + (int)er_stop_signal;
}

/* Stitches every layer of tile sel[i] into one output set, which replaces
 * the previous stitched set together or not at all; a signal stops it at
 * the next layer, leaving the previous set.  Returns an exit status. */
static int stitch_tile(stitch_run *r, int i)
{
    const er_stitch_tile *t = &r->sel[i];
    const char *name = r->ts->paths[t->k];
    double t0 = er_msg_now();
    char outs[ER_LAYER_COUNT][PATH_MAX];
    er_image tile;
    er_error err = {{0}};
    int status = 0;
    memset(&tile, 0, sizeof tile);
    if (er_tiff_read_info(name, NULL, &tile, &err) != ER_OK) {
        er_msg_error("stitch: %s", err.msg);
        status = 2;
    }
    er_atomic_set_begin();
    for (unsigned b = 0; b < ER_LAYER_COUNT && status == 0; b++) {
        if (!(t->layers & (1u << b)))
            continue;
        status = er_stop_signal ? interrupted(name) : stitch_layer(r, i, b, &tile, outs[b]);
    }
    if (status == 0 && er_stop_signal)
        status = interrupted(name);
    if (status == 0) {
        er_status st = er_atomic_set_commit(wait_for_lock, &name, &err);
        if (st == ER_ECANCELED)
            status = interrupted(name);
        else if (st != ER_OK) {
            er_msg_error("stitch: %s: %s", name, err.msg);
            status = 1;
        }
    } else {
        er_atomic_set_abort();
    }
    er_image_free(&tile);
    if (r->s->json)
        print_json(name, status, status == 0 ? t->layers : 0, outs, er_msg_now() - t0);
    return status;
}

static void run_free(stitch_run *r)
{
    for (int i = 0; r->src && i < r->n; i++)
        for (unsigned b = 0; b < ER_LAYER_COUNT; b++)
            free(r->src[i].from[b]);
    free(r->src);
    free(r->sel);
    free(r->ref.recipe);
}

int er_stitch_all(const er_settings *s, const er_tile_set *ts)
{
    stitch_run r;
    memset(&r, 0, sizeof r);
    r.s = s;
    r.ts = ts;
    int worst = select_tiles(&r);
    if (worst == 0 && er_targets_check_stitch(s, ts, r.sel, r.n) != 0)
        worst = 2;
    if (worst == 0)
        worst = plan_sources(&r);
    if (worst != 0) {
        run_free(&r);
        return worst;
    }
    /* Each tile on its own, as the inputs of a run: a tile that fails
     * keeps its previous set and the next one is stitched; a signal stops
     * at the next tile. */
    for (int i = 0; i < r.n && worst < 128; i++) {
        int status = er_stop_signal ? interrupted(ts->paths[r.sel[i].k]) : stitch_tile(&r, i);
        if (status > worst)
            worst = status;
    }
    /* A signal held back while the last tile's layers were renamed: the
     * work is whole, but the caller asked to stop and is told so. */
    if (worst < 128 && er_stop_signal) {
        er_msg_error("stitch: %s: interrupted after its stitched layers were in place",
                     ts->paths[r.sel[r.n - 1].k]);
        worst = 128 + (int)er_stop_signal;
    }
    run_free(&r);
    return worst;
}
