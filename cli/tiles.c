#include "tiles.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "msg.h"
#include "paths.h"
#include "provenance.h"

static char *slurp(FILE *f)
{
    size_t cap = 1 << 12, len = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len < 2) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* The CRS is the GeoKey directory less its raster-type key, plus the
 * parameters the keys point into. */
static int same_crs(const er_georef *a, const er_georef *b)
{
    if (a->n_geokeys != b->n_geokeys || a->n_geodoubles != b->n_geodoubles)
        return 0;
    if (a->n_geokeys && memcmp(a->geokeys, b->geokeys, a->n_geokeys * sizeof *a->geokeys) != 0)
        return 0;
    if (a->n_geodoubles &&
        memcmp(a->geodoubles, b->geodoubles, a->n_geodoubles * sizeof *a->geodoubles) != 0)
        return 0;
    if (!a->geoascii != !b->geoascii || (a->geoascii && strcmp(a->geoascii, b->geoascii) != 0))
        return 0;
    return 1;
}

/* Corner, cell size and size of a raster from its georeferencing; 0
 * without an unrotated affine map. */
static int geom_of(const er_image *img, er_tile_geom *g)
{
    double m[6];
    if (!er_georef_affine(&img->georef, m) || m[2] != 0 || m[4] != 0 || m[1] == 0 || m[5] == 0)
        return 0;
    g->origin_x = m[0];
    g->origin_y = m[3];
    g->step_x = m[1];
    g->step_y = m[5];
    g->width = img->width;
    g->height = img->height;
    return 1;
}

int er_tile_set_load(const char *list, er_tile_set *ts)
{
    memset(ts, 0, sizeof *ts);
    int from_stdin = strcmp(list, "-") == 0;
    FILE *f = from_stdin ? stdin : fopen(list, "r");
    if (!f) {
        er_msg_error("--tile-set: cannot read '%s': %s", list, strerror(errno));
        return 2;
    }
    ts->list_buf = slurp(f);
    int failed = ferror(f);
    if (!from_stdin)
        fclose(f);
    if (!ts->list_buf || failed) {
        er_msg_error("--tile-set: cannot read '%s'", list);
        return 2;
    }
    size_t lines = 1;
    for (const char *p = ts->list_buf; *p; p++)
        lines += *p == '\n';
    ts->paths = calloc(lines, sizeof *ts->paths);
    if (!ts->paths) {
        er_msg_error("out of memory");
        return 2;
    }
    for (char *save = NULL, *line = strtok_r(ts->list_buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ' || *line == '\t')
            line++;
        char *end = line + strlen(line);
        while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            *--end = '\0';
        if (*line)
            ts->paths[ts->n++] = line;
    }
    if (ts->n == 0) {
        er_msg_error("--tile-set: '%s' lists no tiles", list);
        return 2;
    }
    ts->place = calloc((size_t)ts->n, sizeof *ts->place);
    ts->geom = calloc((size_t)ts->n, sizeof *ts->geom);
    if (!ts->place || !ts->geom) {
        er_msg_error("out of memory");
        return 2;
    }
    er_image first;
    memset(&first, 0, sizeof first);
    int rc = 0;
    for (int i = 0; i < ts->n && rc == 0; i++) {
        er_image img;
        er_error err = {{0}};
        if (er_tiff_read_info(ts->paths[i], NULL, &img, &err) != ER_OK) {
            er_msg_error("--tile-set: %s", err.msg);
            rc = 2;
            break;
        }
        if (!geom_of(&img, &ts->geom[i])) {
            er_msg_error("--tile-set: '%s': a tile needs georeferencing with an unrotated grid",
                         ts->paths[i]);
            rc = 2;
        } else if (i > 0 && !same_crs(&first.georef, &img.georef)) {
            er_msg_error("--tile-set: '%s' has another CRS than '%s'", ts->paths[i],
                         ts->paths[0]);
            rc = 2;
        }
        for (int j = 0; j < i && rc == 0; j++)
            if (strcmp(er_path_base(ts->paths[i]), er_path_base(ts->paths[j])) == 0) {
                er_msg_error("--tile-set: '%s' and '%s' have the same file name",
                             ts->paths[j], ts->paths[i]);
                rc = 2;
            }
        if (i == 0)
            first = img;
        else
            er_image_free(&img);
    }
    if (rc == 0) {
        er_error err = {{0}};
        if (er_mosaic_layout(ts->geom, ts->n, ts->place, &ts->world_w, &ts->world_h, &err)) {
            /* err names tiles by their place in the list; name the files */
            char *num = strstr(err.msg, "tile ");
            long a = num ? strtol(num + 5, NULL, 10) : 0;
            if (a >= 1 && a <= ts->n)
                er_msg_error("--tile-set: '%s': %s", ts->paths[a - 1], err.msg);
            else
                er_msg_error("--tile-set: %s", err.msg);
            rc = 2;
        }
    }
    er_image_free(&first);
    return rc;
}

void er_tile_set_free(er_tile_set *ts)
{
    if (!ts)
        return;
    free(ts->paths);
    free(ts->list_buf);
    free(ts->place);
    free(ts->geom);
    memset(ts, 0, sizeof *ts);
}

int er_tile_set_find(const er_tile_set *ts, const char *path)
{
    struct stat a, b;
    if (stat(path, &a) != 0)
        return -1;
    for (int i = 0; i < ts->n; i++)
        if (stat(ts->paths[i], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return i;
    return -1;
}

/* Copies the part of `src` (a tile at place p) that lies in the window
 * (x0, y0, w, h) into dst and its nodata mask. */
static void paste(const er_image *src, const er_tile_place *p, int x0, int y0, int w, int h,
                  float *dst, uint8_t *mask)
{
    int ax = p->col > x0 ? p->col : x0, ay = p->row > y0 ? p->row : y0;
    int bx = p->col + p->width < x0 + w ? p->col + p->width : x0 + w;
    int by = p->row + p->height < y0 + h ? p->row + p->height : y0 + h;
    for (int y = ay; y < by; y++)
        for (int x = ax; x < bx; x++) {
            size_t si = (size_t)(y - p->row) * (size_t)src->width + (size_t)(x - p->col);
            size_t di = (size_t)(y - y0) * (size_t)w + (size_t)(x - x0);
            dst[di] = src->data[si];
            mask[di] = src->nodata ? src->nodata[si] : 0;
        }
}

er_status er_tile_window_read(const er_tile_set *ts, int k, int halo, const er_read_opts *ro,
                              er_image *img, er_window *win, er_error *err)
{
    int w, h;
    er_image tile;
    memset(img, 0, sizeof *img);
    er_mosaic_window(&ts->place[k], halo, ts->world_w, ts->world_h, win, &w, &h);
    er_status st = er_image_read(ts->paths[k], ro, &tile, err);
    if (st)
        return st;
    if (tile.format != ER_FORMAT_TIFF || tile.width != ts->place[k].width ||
        tile.height != ts->place[k].height) {
        er_image_free(&tile);
        return er_fail(err, ER_EINVAL, "%s: changed since the tile set was read", ts->paths[k]);
    }
    size_t n = (size_t)w * (size_t)h;
    img->width = w;
    img->height = h;
    img->format = ER_FORMAT_TIFF;
    img->data = malloc(n * sizeof *img->data);
    img->nodata = malloc(n);
    if (!img->data || !img->nodata) {
        st = er_fail(err, ER_ENOMEM, "%s: out of memory for the halo", ts->paths[k]);
        goto fail;
    }
    /* Cells no tile covers (gaps in the mosaic) are nodata. */
    memset(img->nodata, 1, n);
    img->has_nodata_value = tile.has_nodata_value;
    img->nodata_value = tile.has_nodata_value ? tile.nodata_value : NAN;
    for (size_t i = 0; i < n; i++)
        img->data[i] = (float)img->nodata_value;
    paste(&tile, &ts->place[k], win->x0, win->y0, w, h, img->data, img->nodata);
    for (int j = 0; j < ts->n; j++) {
        if (j == k || !er_mosaic_touch(&ts->place[k], &ts->place[j], halo))
            continue;
        er_image nb;
        if ((st = er_image_read(ts->paths[j], ro, &nb, err)) != ER_OK)
            goto fail;
        if (nb.width != ts->place[j].width || nb.height != ts->place[j].height) {
            er_image_free(&nb);
            st = er_fail(err, ER_EINVAL, "%s: changed since the tile set was read", ts->paths[j]);
            goto fail;
        }
        paste(&nb, &ts->place[j], win->x0, win->y0, w, h, img->data, img->nodata);
        er_image_free(&nb);
    }
    /* A halo output declares nodata when its window holds any. */
    int any = 0;
    for (size_t i = 0; i < n && !any; i++)
        any = img->nodata[i];
    if (!any) {
        free(img->nodata);
        img->nodata = NULL;
    }
    st = er_georef_shifted(&img->georef, &tile.georef, win->x0 - ts->place[k].col,
                           win->y0 - ts->place[k].row, err);
    if (st)
        goto fail;
    if (any && !img->georef.gdal_nodata) {
        img->georef.gdal_nodata = strdup("nan");
        img->has_nodata_value = 1;
        if (!img->georef.gdal_nodata) {
            st = er_fail(err, ER_ENOMEM, "out of memory");
            goto fail;
        }
    }
    er_image_free(&tile);
    return ER_OK;
fail:
    er_image_free(&tile);
    er_image_free(img);
    return st;
}

/* ---------------------------------------------------------------------
 * erode stitch
 * --------------------------------------------------------------------- */

/* Where a halo output lies in the world: its window, found from its
 * georeferencing on tile 1's grid. */
static int halo_window(const er_tile_set *ts, const er_image *img, er_window *win)
{
    er_tile_geom g;
    if (!geom_of(img, &g))
        return 0;
    const er_tile_geom *g0 = &ts->geom[0];
    if (!(fabs(g.step_x - g0->step_x) <= 1e-9 * fabs(g0->step_x)) ||
        !(fabs(g.step_y - g0->step_y) <= 1e-9 * fabs(g0->step_y)))
        return 0;
    double cx = (g.origin_x - g0->origin_x) / g0->step_x + ts->place[0].col;
    double cy = (g.origin_y - g0->origin_y) / g0->step_y + ts->place[0].row;
    double rx = floor(cx + 0.5), ry = floor(cy + 0.5);
    if (!(fabs(cx - rx) <= 1e-6 && fabs(cy - ry) <= 1e-6))
        return 0;
    if (rx < 0 || ry < 0 || rx + img->width > ts->world_w || ry + img->height > ts->world_h)
        return 0;
    win->x0 = (int)rx;
    win->y0 = (int)ry;
    win->world_width = ts->world_w;
    win->world_height = ts->world_h;
    return 1;
}

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

/* Stitches one layer of tile k: returns an exit status, message printed. */
static int stitch_layer(const er_settings *s, const er_tile_set *ts, int k, const char *layer,
                        stitch_ref *ref, char *out, size_t out_n)
{
    const er_tile_place *p = &ts->place[k];
    size_t n = (size_t)p->width * (size_t)p->height;
    double *sum = calloc(n, sizeof *sum), *wsum = calloc(n, sizeof *wsum);
    float *res = malloc(n * sizeof *res);
    uint8_t *nodata = calloc(n, 1);
    char **from = calloc((size_t)ts->n, sizeof *from);
    char path[PATH_MAX], *prov = NULL;
    er_image tile;
    er_error err = {{0}};
    int rc = 1, any_nodata = 0, n_from = 0;
    memset(&tile, 0, sizeof tile);
    if (!sum || !wsum || !res || !nodata || !from) {
        er_msg_error("%s: out of memory", ts->paths[k]);
        goto done;
    }
    if (er_tiff_read_info(ts->paths[k], NULL, &tile, &err) != ER_OK) {
        er_msg_error("%s", err.msg);
        rc = 2;
        goto done;
    }
    /* Every halo output that reaches into the tile, in the set's order, so
     * the sums are formed in one fixed order.  Neighbours' outputs must
     * exist; farther tiles' are read when present (a halo wider than a
     * tile). */
    for (int j = 0; j < ts->n; j++) {
        er_image img;
        er_window win;
        int near = j == k || er_mosaic_touch(p, &ts->place[j], 1);
        struct stat stt;
        er_path_stitched(path, sizeof path, s->output_dir, ts->paths[j], layer, ".halo");
        if (!near && stat(path, &stt) != 0)
            continue;
        if (er_tiff_read_info(path, NULL, &img, &err) != ER_OK) {
            er_msg_error("stitch: %s", err.msg);
            rc = 2;
            goto done;
        }
        int ok = halo_window(ts, &img, &win);
        int reaches = ok && win.x0 < p->col + p->width && p->col < win.x0 + img.width &&
                      win.y0 < p->row + p->height && p->row < win.y0 + img.height;
        int iw = img.width, ih = img.height;
        int other = ok && reaches ? same_recipe(ref, path, img.description) : 0;
        er_image_free(&img);
        if (!ok) {
            er_msg_error("stitch: '%s' does not lie on the tile set's grid", path);
            rc = 2;
            goto done;
        }
        if (other) {
            rc = other;
            goto done;
        }
        if (!reaches)
            continue;
        if (er_tiff_read(path, NULL, &img, &err) != ER_OK) {
            er_msg_error("stitch: %s", err.msg);
            rc = 2;
            goto done;
        }
        if (!(from[n_from++] = strdup(path))) {
            er_image_free(&img);
            er_msg_error("%s: out of memory", ts->paths[k]);
            goto done;
        }
        for (int y = 0; y < p->height; y++) {
            int wy = p->row + y, ly = wy - win.y0;
            if (ly < 0 || ly >= ih)
                continue;
            for (int x = 0; x < p->width; x++) {
                int wx = p->col + x, lx = wx - win.x0;
                if (lx < 0 || lx >= iw)
                    continue;
                size_t si = (size_t)ly * (size_t)iw + (size_t)lx;
                size_t di = (size_t)y * (size_t)p->width + (size_t)x;
                if (img.nodata && img.nodata[si]) {
                    if (j == k)
                        nodata[di] = 1;
                    continue;
                }
                double wt = er_stitch_weight(&win, iw, ih, wx, wy);
                sum[di] += wt * (double)img.data[si];
                wsum[di] += wt;
            }
        }
        er_image_free(&img);
    }
    for (size_t i = 0; i < n; i++) {
        if (nodata[i] || !(wsum[i] > 0)) {
            nodata[i] = 1;
            any_nodata = 1;
            res[i] = (float)(tile.has_nodata_value ? tile.nodata_value : NAN);
        } else {
            res[i] = (float)(sum[i] / wsum[i]);
        }
    }
    prov = er_provenance_stitch(ts->paths[k], ref->recipe, (const char *const *)from, n_from);
    er_path_stitched(out, out_n, s->output_dir, ts->paths[k], layer, "");
    if (!prov || (any_nodata && !tile.georef.gdal_nodata &&
                  !(tile.georef.gdal_nodata = strdup("nan")))) {
        er_msg_error("%s: out of memory", ts->paths[k]);
        goto done;
    }
    double ndv = tile.has_nodata_value ? tile.nodata_value : NAN;
    er_layer_out lo = {p->width, p->height, res, any_nodata ? nodata : NULL, ndv, &tile.georef,
                       prov};
    if (er_tiff_write(out, &lo, &err) != ER_OK) {
        er_msg_error("%s", err.msg);
        goto done;
    }
    rc = 0;
done:
    free(sum);
    free(wsum);
    free(res);
    free(nodata);
    free(prov);
    for (int i = 0; from && i < n_from; i++)
        free(from[i]);
    free(from);
    er_image_free(&tile);
    return rc;
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
        int k = which[i];
        double t0 = er_msg_now();
        int status = 0;
        char outs[ER_LAYER_COUNT][PATH_MAX];
        unsigned written = 0, want = s->layers;
        if (!s->layers_given) {
            /* Without --layers: every layer the tile's run wrote. */
            want = 0;
            for (unsigned b = 0; b < ER_LAYER_COUNT; b++) {
                struct stat st;
                er_path_stitched(outs[b], PATH_MAX, s->output_dir, ts->paths[k],
                           er_layer_name(1u << b), ".halo");
                if (stat(outs[b], &st) == 0)
                    want |= 1u << b;
            }
            if (!want) {
                er_path_stitched(outs[0], PATH_MAX, s->output_dir, ts->paths[k], "*", ".halo");
                er_msg_error("stitch: %s: no halo outputs '%s'", ts->paths[k], outs[0]);
                status = 2;
            }
        }
        for (unsigned b = 0; b < ER_LAYER_COUNT && status == 0; b++) {
            if (!(want & (1u << b)))
                continue;
            status = stitch_layer(s, ts, k, er_layer_name(1u << b), &ref, outs[b], PATH_MAX);
            if (status == 0)
                written |= 1u << b;
        }
        if (s->json) {
            cJSON *o = cJSON_CreateObject(), *jo = cJSON_AddObjectToObject(o, "outputs");
            cJSON_AddStringToObject(o, "input", ts->paths[k]);
            cJSON_AddStringToObject(o, "status", status == 0 ? "ok" : "error");
            cJSON_AddNumberToObject(o, "exit", status);
            for (unsigned b = 0; b < ER_LAYER_COUNT; b++)
                if (written & (1u << b))
                    cJSON_AddStringToObject(jo, er_layer_name(1u << b), outs[b]);
            cJSON_AddStringToObject(o, "model", "stitch");
            cJSON_AddNumberToObject(o, "seconds", er_msg_now() - t0);
            char *text = cJSON_PrintUnformatted(o);
            if (text)
                puts(text);
            fflush(stdout);
            free(text);
            cJSON_Delete(o);
        }
        if (status > worst)
            worst = status;
    }
    free(which);
    free(ref.recipe);
    return worst;
}
