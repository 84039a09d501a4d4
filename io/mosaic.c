#include "mosaic.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text.h"

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

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The list's text and its non-blank lines, trimmed, in ts->paths. */
static er_status read_list(const char *list, er_tile_set *ts, er_error *err)
{
    int from_stdin = strcmp(list, "-") == 0;
    FILE *f = from_stdin ? stdin : fopen(list, "r");
    if (!f)
        return er_fail(err, ER_EIO, "cannot read '%s': %s", list, strerror(errno));
    int over = 0;
    ts->list_buf = er_read_all_max(f, ER_TILE_LIST_MAX_BYTES, NULL, &over);
    int failed = ferror(f);
    if (!from_stdin)
        fclose(f);
    if (over)
        return er_fail(err, ER_EINVAL, "'%s': more than %u MiB of names", list,
                       ER_TILE_LIST_MAX_BYTES >> 20);
    if (!ts->list_buf || failed)
        return er_fail(err, ER_EIO, "cannot read '%s'", list);
    size_t lines = 1;
    for (const char *p = ts->list_buf; *p; p++)
        lines += *p == '\n';
    ts->paths = calloc(lines, sizeof *ts->paths);
    if (!ts->paths)
        return er_fail(err, ER_ENOMEM, "out of memory");
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
    if (ts->n == 0)
        return er_fail(err, ER_EINVAL, "'%s' lists no tiles", list);
    return ER_OK;
}

/* Tile i's header against the first tile's (`first`, i > 0): an
 * unrotated grid, the same CRS, a file name of its own. */
static er_status check_tile(const er_tile_set *ts, int i, const er_image *img,
                            const er_image *first, er_error *err)
{
    if (!geom_of(img, &ts->geom[i]))
        return er_fail(err, ER_EINVAL, "'%s': a tile needs georeferencing with an unrotated grid",
                       ts->paths[i]);
    if (i > 0 && !same_crs(&first->georef, &img->georef))
        return er_fail(err, ER_EINVAL, "'%s' has another CRS than '%s'", ts->paths[i],
                       ts->paths[0]);
    for (int j = 0; j < i; j++)
        if (strcmp(base_name(ts->paths[i]), base_name(ts->paths[j])) == 0)
            return er_fail(err, ER_EINVAL, "'%s' and '%s' have the same file name",
                           ts->paths[j], ts->paths[i]);
    return ER_OK;
}

/* Records tile i's file; refuses it when it is the file of an earlier
 * entry under another spelling (a link): its outputs would be named
 * twice. */
static er_status check_identity(er_tile_set *ts, int i, er_error *err)
{
    struct stat st;
    if (stat(ts->paths[i], &st) != 0)
        return er_fail(err, ER_EIO, "cannot read '%s': %s", ts->paths[i], strerror(errno));
    ts->id[i].dev = (unsigned long long)st.st_dev;
    ts->id[i].ino = (unsigned long long)st.st_ino;
    for (int j = 0; j < i; j++)
        if (ts->id[j].dev == ts->id[i].dev && ts->id[j].ino == ts->id[i].ino)
            return er_fail(err, ER_EINVAL, "'%s' and '%s' are the same file", ts->paths[j],
                           ts->paths[i]);
    return ER_OK;
}

static er_status read_headers(er_tile_set *ts, er_error *err)
{
    er_image first;
    er_status st = ER_OK;
    memset(&first, 0, sizeof first);
    for (int i = 0; i < ts->n && st == ER_OK; i++) {
        er_image img;
        if ((st = er_tiff_read_info(ts->paths[i], NULL, &img, err)) != ER_OK)
            break;
        st = check_identity(ts, i, err);
        if (st == ER_OK)
            st = check_tile(ts, i, &img, &first, err);
        if (i == 0)
            first = img;
        else
            er_image_free(&img);
    }
    er_image_free(&first);
    return st;
}

/* The layout; its errors name tiles by their place in the list, so name
 * the files. */
static er_status lay_out(er_tile_set *ts, er_error *err)
{
    er_error e = {{0}};
    er_status st = er_mosaic_layout(ts->geom, ts->n, ts->place, &ts->world_w, &ts->world_h, &e);
    if (st == ER_OK)
        return ER_OK;
    long a = 0, b = 0;
    if (sscanf(e.msg, "tiles %ld and %ld overlap", &a, &b) == 2 && a >= 1 && a <= ts->n &&
        b >= 1 && b <= ts->n)
        return er_fail(err, st, "'%s' and '%s' overlap", ts->paths[a - 1], ts->paths[b - 1]);
    char *num = strstr(e.msg, "tile ");
    a = num ? strtol(num + 5, NULL, 10) : 0;
    if (a >= 1 && a <= ts->n)
        return er_fail(err, st, "'%s': %s", ts->paths[a - 1], e.msg);
    return er_fail(err, st, "%s", e.msg);
}

er_status er_tile_set_read(const char *list, er_tile_set *ts, er_error *err)
{
    memset(ts, 0, sizeof *ts);
    er_status st = read_list(list, ts, err);
    if (st)
        return st;
    ts->place = calloc((size_t)ts->n, sizeof *ts->place);
    ts->geom = calloc((size_t)ts->n, sizeof *ts->geom);
    ts->id = calloc((size_t)ts->n, sizeof *ts->id);
    if (!ts->place || !ts->geom || !ts->id)
        return er_fail(err, ER_ENOMEM, "out of memory");
    if ((st = read_headers(ts, err)) != ER_OK)
        return st;
    return lay_out(ts, err);
}

void er_tile_set_free(er_tile_set *ts)
{
    if (!ts)
        return;
    free(ts->paths);
    free(ts->list_buf);
    free(ts->place);
    free(ts->geom);
    free(ts->id);
    memset(ts, 0, sizeof *ts);
}

int er_tile_set_find(const er_tile_set *ts, const char *path)
{
    struct stat a;
    if (stat(path, &a) != 0)
        return -1;
    for (int i = 0; i < ts->n; i++)
        if (ts->id[i].dev == (unsigned long long)a.st_dev &&
            ts->id[i].ino == (unsigned long long)a.st_ino)
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

/* One file's share of a window read's progress: file `done` of `total`. */
typedef struct file_share {
    const er_io_progress *outer;
    int done, total;
} file_share;

static void file_share_report(void *user, double fraction)
{
    const file_share *fs = user;
    er_io_progress_report(fs->outer, fs->done + fraction, fs->total);
}

/* The files a window read opens: the tile and each neighbour its halo reaches. */
static int window_files(const er_tile_set *ts, int k, int halo)
{
    int n = 1;
    for (int j = 0; j < ts->n; j++)
        n += j != k && er_mosaic_touch(&ts->place[k], &ts->place[j], halo);
    return n;
}

er_status er_tile_window_read(const er_tile_set *ts, int k, int halo, const er_read_opts *ro,
                              const er_io_progress *pg, er_image *img, er_window *win,
                              er_error *err)
{
    int w, h;
    er_image tile;
    file_share fs = {pg, 0, window_files(ts, k, halo)};
    er_io_progress sub = {file_share_report, &fs};
    memset(img, 0, sizeof *img);
    er_mosaic_window(&ts->place[k], halo, ts->world_w, ts->world_h, win, &w, &h);
    er_status st = er_image_read_progress(ts->paths[k], ro, &sub, &tile, err);
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
        fs.done++;
        if ((st = er_image_read_progress(ts->paths[j], ro, &sub, &nb, err)) != ER_OK)
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

/* Where a halo output lies in the world: its window, found from its
 * georeferencing on tile 1's grid. */
int er_tile_set_locate(const er_tile_set *ts, const er_image *img, er_window *win)
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
