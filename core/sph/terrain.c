/*
 * The terrain update of Kristof et al. 2009, section 4.6, on the quads of
 * the heightfield: a quad's volume change is laid on its four vertices
 * with slippage, deposits into the lowest vertices first until they are
 * level and then evenly, erosion from the highest first.  A vertex is
 * shared by four quads, so the quads run serially in row-major order: the
 * result is fixed, and it is O(cells) per step against the particle work.
 */
#include <math.h>

#include "sph_internal.h"

/* Raises (v > 0) or lowers the four heights z[] by a total of v, level by
 * level from the lowest (highest) up (down). */
static void slip(double *const z[4], double v)
{
    double sign = v >= 0.0 ? 1.0 : -1.0, left = fabs(v);
    int ord[4] = {0, 1, 2, 3};
    /* sort so that sign * z is ascending (insertion sort, ties by index) */
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && sign * *z[ord[j]] < sign * *z[ord[j - 1]]; j--) {
            int t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    int m = 1;
    double lvl = sign * *z[ord[0]];
    while (left > 0.0) {
        double next = m < 4 ? sign * *z[ord[m]] : INFINITY;
        double need = (next - lvl) * m;
        if (need >= left) {
            lvl += left / m;
            left = 0.0;
        } else {
            left -= need;
            lvl = next;
            m++;
        }
    }
    for (int i = 0; i < m; i++)
        *z[ord[i]] = sign * lvl;
}

void er_sph_terrain_update(er_sph_sim *s, er_budget *bud)
{
    const int qw = s->w - 1, qh = s->h - 1;
    for (int qy = 0; qy < qh; qy++)
        for (int qx = 0; qx < qw; qx++) {
            double v = s->qd[er_sph_qi(s, qx, qy)];
            s->qd[er_sph_qi(s, qx, qy)] = 0.0;
            if (v == 0.0)
                continue;
            size_t id[4] = {er_sph_vi(s, qx, qy), er_sph_vi(s, qx + 1, qy), er_sph_vi(s, qx, qy + 1),
                            er_sph_vi(s, qx + 1, qy + 1)};
            double old[4], *z[4];
            for (int i = 0; i < 4; i++) {
                old[i] = s->zb[id[i]];
                z[i] = &s->zb[id[i]];
            }
            slip(z, v * s->iarea); /* a volume over the quad's area: heights */
            er_sph_boundary_heights(s, qx > 0 ? qx - 1 : 0, qy > 0 ? qy - 1 : 0,
                                    qx + 1 < qw ? qx + 1 : qx, qy + 1 < qh ? qy + 1 : qy);
            for (int i = 0; i < 4; i++) {
                double d = s->zb[id[i]] - old[i];
                s->dz[id[i]] += d;
                if (d > 0.0) {
                    s->dep[id[i]] += d;
                    bud->deposited += d * s->L;
                } else {
                    bud->eroded -= d * s->L;
                    if (s->wear) /* before any deposit: each lowering counted */
                        s->wear[id[i]] += (float)(-d * s->L);
                }
            }
        }
}
