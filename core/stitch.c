#include "stitch.h"

#include <stdlib.h>
#include <string.h>

er_status er_stitch_init(er_stitch *s, const er_tile_place *tile, er_error *err)
{
    size_t n = (size_t)tile->width * (size_t)tile->height;
    memset(s, 0, sizeof *s);
    s->tile = *tile;
    s->sum = calloc(n, sizeof *s->sum);
    s->wsum = calloc(n, sizeof *s->wsum);
    s->nodata = calloc(n, 1);
    if (!s->sum || !s->wsum || !s->nodata)
        return er_fail(err, ER_ENOMEM, "out of memory");
    return ER_OK;
}

void er_stitch_free(er_stitch *s)
{
    if (!s)
        return;
    free(s->sum);
    free(s->wsum);
    free(s->nodata);
    memset(s, 0, sizeof *s);
}

void er_stitch_add(er_stitch *s, const er_window *win, int width, int height, const float *data,
                   const uint8_t *nodata, int own)
{
    const er_tile_place *p = &s->tile;
    for (int y = 0; y < p->height; y++) {
        int wy = p->row + y, ly = wy - win->y0;
        if (ly < 0 || ly >= height)
            continue;
        for (int x = 0; x < p->width; x++) {
            int wx = p->col + x, lx = wx - win->x0;
            if (lx < 0 || lx >= width)
                continue;
            size_t si = (size_t)ly * (size_t)width + (size_t)lx;
            size_t di = (size_t)y * (size_t)p->width + (size_t)x;
            if (nodata && nodata[si]) {
                if (own)
                    s->nodata[di] = 1;
                continue;
            }
            double wt = er_stitch_weight(win, width, height, wx, wy);
            s->sum[di] += wt * (double)data[si];
            s->wsum[di] += wt;
        }
    }
}

int er_stitch_finish(er_stitch *s, double nodata_value, float *res)
{
    size_t n = (size_t)s->tile.width * (size_t)s->tile.height;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (s->nodata[i] || !(s->wsum[i] > 0)) {
            s->nodata[i] = 1;
            any = 1;
            res[i] = (float)nodata_value;
        } else {
            res[i] = (float)(s->sum[i] / s->wsum[i]);
        }
    }
    return any;
}
