#include "tiles.h"

#include <math.h>
#include <stdlib.h>

er_status er_window_resolve(const er_window *win, int width, int height, er_window *out,
                            er_error *err)
{
    if (width < 1 || height < 1)
        return er_fail(err, ER_EINVAL, "window: empty map");
    if (!win) {
        out->x0 = out->y0 = 0;
        out->world_width = width;
        out->world_height = height;
        return ER_OK;
    }
    if (win->x0 < 0 || win->y0 < 0 || win->world_width < 1 || win->world_height < 1 ||
        (int64_t)win->x0 + width > win->world_width ||
        (int64_t)win->y0 + height > win->world_height)
        return er_fail(err, ER_EINVAL,
                       "window: a %dx%d map at (%d, %d) does not fit in a %dx%d world", width,
                       height, win->x0, win->y0, win->world_width, win->world_height);
    *out = *win;
    return ER_OK;
}

void er_window_inner_edges(const er_window *w, int width, int height, int out[4])
{
    out[ER_EDGE_LEFT] = w->x0 > 0;
    out[ER_EDGE_RIGHT] = w->x0 + width < w->world_width;
    out[ER_EDGE_TOP] = w->y0 > 0;
    out[ER_EDGE_BOTTOM] = w->y0 + height < w->world_height;
}

/* n as a whole number when it is one to within tol, else 0 and *ok = 0. */
static long long whole(double n, double tol, int *ok)
{
    double r = floor(n + 0.5);
    if (!(fabs(n - r) <= tol) || fabs(r) > 1e15) {
        *ok = 0;
        return 0;
    }
    return (long long)r;
}

er_status er_mosaic_layout(const er_tile_geom *geom, int n, er_tile_place *place, int *world_w,
                           int *world_h, er_error *err)
{
    if (n < 1)
        return er_fail(err, ER_EINVAL, "no tiles");
    const er_tile_geom *g0 = &geom[0];
    if (!(g0->step_x != 0 && g0->step_y != 0 && isfinite(g0->step_x) && isfinite(g0->step_y)))
        return er_fail(err, ER_EINVAL, "tile 1 has no usable cell size");
    long long *c = malloc((size_t)n * 2 * sizeof *c);
    if (!c)
        return er_fail(err, ER_ENOMEM, "out of memory");
    long long cmin = 0, rmin = 0, cmax = 0, rmax = 0;
    er_status st = ER_OK;
    for (int i = 0; i < n; i++) {
        const er_tile_geom *g = &geom[i];
        if (g->width < 1 || g->height < 1) {
            st = er_fail(err, ER_EINVAL, "tile %d is empty", i + 1);
            goto done;
        }
        if (!(fabs(g->step_x - g0->step_x) <= 1e-9 * fabs(g0->step_x)) ||
            !(fabs(g->step_y - g0->step_y) <= 1e-9 * fabs(g0->step_y))) {
            st = er_fail(err, ER_EINVAL,
                         "tile %d has cells of %g x %g, tile 1 of %g x %g", i + 1,
                         g->step_x, fabs(g->step_y), g0->step_x, fabs(g0->step_y));
            goto done;
        }
        int ok = 1;
        long long col = whole((g->origin_x - g0->origin_x) / g0->step_x, 1e-6, &ok);
        long long row = whole((g->origin_y - g0->origin_y) / g0->step_y, 1e-6, &ok);
        if (!ok) {
            st = er_fail(err, ER_EINVAL,
                         "tile %d is not aligned with tile 1 (its corner is not a "
                         "whole number of cells away)", i + 1);
            goto done;
        }
        c[2 * i] = col;
        c[2 * i + 1] = row;
        if (i == 0 || col < cmin)
            cmin = col;
        if (i == 0 || row < rmin)
            rmin = row;
        if (i == 0 || col + g->width > cmax)
            cmax = col + g->width;
        if (i == 0 || row + g->height > rmax)
            rmax = row + g->height;
    }
    if (cmax - cmin > 1000000000LL || rmax - rmin > 1000000000LL) {
        st = er_fail(err, ER_EINVAL, "the mosaic is too large");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        place[i].col = (int)(c[2 * i] - cmin);
        place[i].row = (int)(c[2 * i + 1] - rmin);
        place[i].width = geom[i].width;
        place[i].height = geom[i].height;
    }
    /* Pairwise overlap test: tile sets are tens to thousands of tiles. */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (er_mosaic_touch(&place[i], &place[j], 0)) {
                st = er_fail(err, ER_EINVAL, "tiles %d and %d overlap", j + 1, i + 1);
                goto done;
            }
    *world_w = (int)(cmax - cmin);
    *world_h = (int)(rmax - rmin);
done:
    free(c);
    return st;
}

void er_mosaic_window(const er_tile_place *place, int halo, int world_w, int world_h,
                      er_window *win, int *width, int *height)
{
    int x0 = place->col - halo < 0 ? 0 : place->col - halo;
    int y0 = place->row - halo < 0 ? 0 : place->row - halo;
    int x1 = place->col + place->width + halo, y1 = place->row + place->height + halo;
    if (x1 > world_w)
        x1 = world_w;
    if (y1 > world_h)
        y1 = world_h;
    win->x0 = x0;
    win->y0 = y0;
    win->world_width = world_w;
    win->world_height = world_h;
    *width = x1 - x0;
    *height = y1 - y0;
}

int er_mosaic_touch(const er_tile_place *a, const er_tile_place *b, int halo)
{
    long long ax0 = (long long)a->col - halo, ax1 = (long long)a->col + a->width + halo;
    long long ay0 = (long long)a->row - halo, ay1 = (long long)a->row + a->height + halo;
    long long bx0 = (long long)b->col - halo, bx1 = (long long)b->col + b->width + halo;
    long long by0 = (long long)b->row - halo, by1 = (long long)b->row + b->height + halo;
    return ax0 < bx1 && bx0 < ax1 && ay0 < by1 && by0 < ay1;
}

double er_stitch_weight(const er_window *win, int width, int height, int x, int y)
{
    int lx = x - win->x0, ly = y - win->y0;
    if (lx < 0 || ly < 0 || lx >= width || ly >= height)
        return 0.0;
    int inner[4];
    er_window_inner_edges(win, width, height, inner);
    double d[4] = { lx + 0.5, width - lx - 0.5, ly + 0.5, height - ly - 0.5 };
    double w = 1e30;
    for (int i = 0; i < 4; i++)
        if (inner[i] && d[i] < w)
            w = d[i];
    return w;
}
