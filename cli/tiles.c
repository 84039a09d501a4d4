#include "tiles.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/stitch.h"
#include "msg.h"
#include "paths.h"
#include "provenance.h"

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
 * erode stitch
 * --------------------------------------------------------------------- */

/* What every halo output one `erode stitch` blends must share: the recipe
 * (model included) its run used.  Blending tiles of different recipes
 * would give seams no halo can hide, silently. */
typedef struct stitch_ref {
    char *recipe;          /* compact recipe of the first halo output read */
    char first[PATH_MAX];  /* that output */
} stitch_ref;

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

/* Adds halo output j's `layer` to tile k's sums when it reaches into the
 * tile, its path kept in from[] for the provenance.  Neighbours' outputs
 * must exist; farther tiles' are read when present (a halo wider than a
 * tile).  Returns an exit status, message printed. */
static int add_output(const er_settings *s, const er_tile_set *ts, int k, int j,
                      const char *layer, stitch_ref *ref, er_stitch *acc, char **from,
                      int *n_from)
{
    const er_tile_place *p = &ts->place[k];
    char path[PATH_MAX];
    er_image img;
    er_window win;
    er_error err = {{0}};
    int near = j == k || er_mosaic_touch(p, &ts->place[j], 1);
    struct stat stt;
    er_path_stitched(path, sizeof path, s->output_dir, ts->paths[j], layer, ".halo");
    if (!near && stat(path, &stt) != 0)
        return 0;
    if (er_tiff_read_info(path, NULL, &img, &err) != ER_OK) {
        er_msg_error("stitch: %s", err.msg);
        return 2;
    }
    int ok = er_tile_set_locate(ts, &img, &win);
    int reaches = ok && win.x0 < p->col + p->width && p->col < win.x0 + img.width &&
                  win.y0 < p->row + p->height && p->row < win.y0 + img.height;
    int iw = img.width, ih = img.height;
    int other = ok && reaches ? same_recipe(ref, path, img.description) : 0;
    er_image_free(&img);
    if (!ok) {
        er_msg_error("stitch: '%s' does not lie on the tile set's grid", path);
        return 2;
    }
    if (other || !reaches)
        return other;
    if (er_tiff_read(path, NULL, &img, &err) != ER_OK) {
        er_msg_error("stitch: %s", err.msg);
        return 2;
    }
    if (!(from[(*n_from)++] = strdup(path))) {
        er_image_free(&img);
        er_msg_error("%s: out of memory", ts->paths[k]);
        return 1;
    }
    er_stitch_add(acc, &win, iw, ih, img.data, img.nodata, j == k);
    er_image_free(&img);
    return 0;
}

/* Stitches one layer of tile k: returns an exit status, message printed. */
static int stitch_layer(const er_settings *s, const er_tile_set *ts, int k, int b,
                        stitch_ref *ref, char *out, size_t out_n)
{
    const er_tile_place *p = &ts->place[k];
    size_t n = (size_t)p->width * (size_t)p->height;
    er_stitch acc;
    float *res = malloc(n * sizeof *res);
    char **from = calloc((size_t)ts->n, sizeof *from), *prov = NULL, *md = NULL;
    er_image tile;
    er_error err = {{0}};
    const char *layer = er_layer_name(1u << b);
    er_tiff_create co = s->co; /* the stitched tile is written as the run's outputs */
    int rc = 1, n_from = 0;
    co.precision = s->precision[b];
    memset(&tile, 0, sizeof tile);
    if (er_stitch_init(&acc, p, &err) != ER_OK || !res || !from) {
        er_msg_error("%s: out of memory", ts->paths[k]);
        goto done;
    }
    if (er_tiff_read_info(ts->paths[k], NULL, &tile, &err) != ER_OK) {
        er_msg_error("%s", err.msg);
        rc = 2;
        goto done;
    }
    /* Every halo output that reaches into the tile, in the set's order, so
     * the sums are formed in one fixed order. */
    for (int j = 0; j < ts->n; j++)
        if ((rc = add_output(s, ts, k, j, layer, ref, &acc, from, &n_from)) != 0)
            goto done;
    rc = 1;
    double ndv = tile.has_nodata_value ? tile.nodata_value : NAN;
    int any_nodata = er_stitch_finish(&acc, ndv, res);
    prov = er_provenance_stitch(ts->paths[k], ref->recipe, (const char *const *)from, n_from);
    er_path_stitched(out, out_n, s->output_dir, ts->paths[k], layer, "");
    if (!prov || (any_nodata && !tile.georef.gdal_nodata &&
                  !(tile.georef.gdal_nodata = strdup("nan")))) {
        er_msg_error("%s: out of memory", ts->paths[k]);
        goto done;
    }
    /* The layer's own band description, as a run's outputs have it. */
    er_georef g = tile.georef;
    if (!er_path_layer_metadata(g.gdal_metadata, 1u << b, &md)) {
        er_msg_error("%s: out of memory", ts->paths[k]);
        goto done;
    }
    if (md)
        g.gdal_metadata = md;
    er_layer_out lo = {p->width, p->height, res, any_nodata ? acc.nodata : NULL, ndv, &g, prov};
    if (er_tiff_write_co(out, &lo, &co, &err) != ER_OK) {
        er_msg_error("%s", err.msg);
        goto done;
    }
    rc = 0;
done:
    free(md);
    er_stitch_free(&acc);
    free(res);
    free(prov);
    for (int i = 0; from && i < n_from; i++)
        free(from[i]);
    free(from);
    er_image_free(&tile);
    return rc;
}

/* Without --layers: every layer the tile's run wrote (its halo outputs
 * exist), 0 after printing why when there is none. */
static unsigned halo_layers(const er_settings *s, const er_tile_set *ts, int k)
{
    char path[PATH_MAX];
    unsigned want = 0;
    for (unsigned b = 0; b < ER_LAYER_COUNT; b++) {
        struct stat st;
        er_path_stitched(path, PATH_MAX, s->output_dir, ts->paths[k], er_layer_name(1u << b),
                         ".halo");
        if (stat(path, &st) == 0)
            want |= 1u << b;
    }
    if (!want) {
        er_path_stitched(path, PATH_MAX, s->output_dir, ts->paths[k], "*", ".halo");
        er_msg_error("stitch: %s: no halo outputs '%s'", ts->paths[k], path);
    }
    return want;
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
    cJSON_AddStringToObject(o, "model", "stitch");
    cJSON_AddNumberToObject(o, "seconds", seconds);
    char *text = cJSON_PrintUnformatted(o);
    if (text)
        puts(text);
    fflush(stdout);
    free(text);
    cJSON_Delete(o);
}

/* Stitches every wanted layer of tile k: returns an exit status. */
static int stitch_tile(const er_settings *s, const er_tile_set *ts, int k, stitch_ref *ref)
{
    double t0 = er_msg_now();
    char outs[ER_LAYER_COUNT][PATH_MAX];
    unsigned written = 0, want = s->layers_given ? s->layers : halo_layers(s, ts, k);
    int status = want ? 0 : 2;
    for (unsigned b = 0; b < ER_LAYER_COUNT && status == 0; b++) {
        if (!(want & (1u << b)))
            continue;
        status = stitch_layer(s, ts, k, b, ref, outs[b], PATH_MAX);
        if (status == 0)
            written |= 1u << b;
    }
    if (s->json)
        print_json(ts->paths[k], status, written, outs, er_msg_now() - t0);
    return status;
}

int er_stitch_all(const er_settings *s, const er_tile_set *ts)
{
    int worst = 0;
    int *which = malloc((size_t)(s->n_inputs > 0 ? s->n_inputs : ts->n) * sizeof *which);
    int count = 0;
    stitch_ref ref = {NULL, ""};
    if (!which) {
        er_msg_error("out of memory");
        return 1;
    }
    if (s->n_inputs == 0)
        for (int k = 0; k < ts->n; k++)
            which[count++] = k;
    for (int i = 0; i < s->n_inputs; i++) {
        int k = er_tile_set_find(ts, s->inputs[i]);
        if (k < 0) {
            er_msg_error("%s: not a tile of the --tile-set", s->inputs[i]);
            free(which);
            return 2;
        }
        which[count++] = k;
    }
    for (int i = 0; i < count; i++) {
        int status = stitch_tile(s, ts, which[i], &ref);
        if (status > worst)
            worst = status;
    }
    free(which);
    free(ref.recipe);
    return worst;
}
