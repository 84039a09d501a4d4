/*
 * The mass-transfer particle of T. Power 2025, Creating realistic terrain
 * by modelling the physics of hydraulic erosion, and N. McDonald 2020,
 * Simple particle-based hydraulic erosion: a Newtonian droplet accelerated
 * by the surface normal, exchanging sediment with the cell under it at a
 * rate proportional to the distance from an equilibrium concentration.
 *
 * Changes from the seeds, each for a stated reason:
 * - the particle carries sediment as a mass S (height of material on one
 *   cell), not a concentration, so evaporation leaves the sediment in the
 *   particle instead of destroying it (mass is conserved; the transfer
 *   dS = dt kd V (c_eq - S / V) is the seeds' equation in S);
 * - a step never takes its cell below the cell the particle moves to (the
 *   erosion rule of Lague's droplets, droplet_impl.h), and the particle
 *   carries what the cell gave up, h - h', not the transfer asked for (an
 *   exact difference, so load = material removed); nor does a step deposit
 *   more than the particle carries.  So no pit is dug below the
 *   particle's path, the terrain never goes below the input's lowest
 *   height, and no negative load arises;
 * - the particle stops when its cell is farther than max_distance from its
 *   start cell (the reach the block size is made for, blocks.h), on a
 *   wall, or after mt_max_steps steps, or when its volume falls below
 *   min_volume, and lays what it carries down through the brush of
 *   droplet.radius around the cell where it stops (onto one cell it makes
 *   single-cell mounds); only a particle leaving the map takes its
 *   sediment with it.
 */
#include <math.h>
#include <stdlib.h>

#include "droplet_impl.h"

/* One facet of the weighted normal: a neighbour `d` (height-scaled drop
 * from the centre, positive when the neighbour is lower) at horizontal
 * distance 1 (cardinal) contributes weight 0.15 times the horizontal part
 * of its facet normal, d / sqrt(1 + d^2) along the neighbour's direction;
 * a diagonal one at distance sqrt(2) contributes 0.10 times
 * (d / sqrt 2) / sqrt(1 + d^2 / 2) along the unit diagonal, which is
 * 0.05 d / sqrt(1 + d^2 / 2) per axis (Power 2025, compute_surface_normal). */
static inline float facet_card(float d)
{
    return 0.15f * d / sqrtf(1.0f + d * d);
}

static inline float facet_diag(float d)
{
    return 0.05f * d / sqrtf(1.0f + 0.5f * d * d);
}

/* The weighted 8-facet normal's horizontal part (n_x, n_z) at cell (x, y)
 * from the nine heights around it (row-major, centre at [4]). */
static inline void normal_xz(const float n9[9], float s, float *nx, float *nz)
{
    float h0 = n9[4];
    float cw = facet_card(s * (h0 - n9[3])), ce = facet_card(s * (h0 - n9[5]));
    float cn = facet_card(s * (h0 - n9[1])), cs = facet_card(s * (h0 - n9[7]));
    float dnw = facet_diag(s * (h0 - n9[0])), dne = facet_diag(s * (h0 - n9[2]));
    float dsw = facet_diag(s * (h0 - n9[6])), dse = facet_diag(s * (h0 - n9[8]));
    *nx = (ce - cw) + (dne + dse - dnw - dsw);
    *nz = (cs - cn) + (dsw + dse - dnw - dne);
}

/* The 3x3 heights around (x, y); a neighbour off the map or on a wall
 * takes the centre's height, so it exerts no force. */
static inline void gather9(const er_dctx *c, int x, int y, float n9[9])
{
    const size_t w = (size_t)c->width;
    const float *h = c->height_m;
    size_t i = (size_t)y * w + (size_t)x;
    int fast = x >= 1 && x < c->width - 1 && y >= 1 && y < c->height - 1 &&
               (c->clean == NULL || c->clean[i]);
    if (fast) {
        const float *r = h + i - w - 1;
        n9[0] = r[0], n9[1] = r[1], n9[2] = r[2];
        r += w;
        n9[3] = r[0], n9[4] = r[1], n9[5] = r[2];
        r += w;
        n9[6] = r[0], n9[7] = r[1], n9[8] = r[2];
        return;
    }
    float h0 = h[i];
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            int xx = x + dx, yy = y + dy;
            float v = h0;
            if (xx >= 0 && xx < c->width && yy >= 0 && yy < c->height) {
                size_t j = (size_t)yy * w + (size_t)xx;
                if (!c->wall || !c->wall[j])
                    v = h[j];
            }
            n9[(dy + 1) * 3 + dx + 1] = v;
        }
}

void er_particle_run(const er_dctx *c, double x, double y, er_dacc *acc)
{
    const int W = c->width, H = c->height, D = c->mt_max_distance;
    const size_t w = (size_t)W;
    float *restrict h = c->height_m;
    const int sx = (int)x, sy = (int)y;
    int ix = sx, iy = sy;
    float vx = 0, vy = 0, vol = er_start_rain(c, x, y), sed = 0;
    double eroded = 0, deposited = 0;
    int64_t steps = 0;

    for (int64_t n = 0; n < c->mt_max_steps && vol >= c->mt_min_volume; n++) {
        size_t ci = (size_t)iy * w + (size_t)ix;
        steps++;
        if (c->flow)
            c->flow[ci] += vol;

        /* a = n_xz / (V rho); v += a dt; p += v dt; v *= 1 - mu dt
         * (Power 2025 eqs. 1-3, in McDonald 2020's order). */
        float n9[9], nx, nz;
        gather9(c, ix, iy, n9);
        normal_xz(n9, c->mt_vscale, &nx, &nz);
        float k = c->mt_dt * c->mt_inv_density / vol;
        vx += nx * k;
        vy += nz * k;
        x += (double)(c->mt_dt * vx);
        y += (double)(c->mt_dt * vy);
        vx *= c->mt_friction_keep;
        vy *= c->mt_friction_keep;
        if (!(x >= 0 && x < W && y >= 0 && y < H)) {
            acc->left_map += (double)sed;
            acc->water_left += (double)vol;
            sed = 0;
            break;
        }
        int jx = (int)x, jy = (int)y;
        if (abs(jx - sx) > D || abs(jy - sy) > D)
            break;
        size_t cj = (size_t)jy * w + (size_t)jx;
        if (c->wall && c->wall[cj])
            break;

        /* Equilibrium load V |v| dh, clamped at 0 (McDonald 2020), as a volume
         * over the reference cell (area_k, er_droplet_at_cell_size), and
         * the mass transfer toward it (Power 2025 eq. 5), as a mass. */
        float dh = h[ci] - h[cj];
        float speed = sqrtf(vx * vx + vy * vy);
        float ceq = er_maxf(0.0f, vol * speed * dh) * c->area_k;
        float ds = c->mt_rate * (vol * ceq - sed);
        ds = er_maxf(ds, -sed);
        /* Power 2025 eq. 5's height update, h -= dt Kd V (c_eq - s), with
         * the erosion rule: not below the next cell (a cell already there
         * gives nothing).  Either way the load changes by what the cell
         * actually gave up or received, o - v, an exact difference
         * (Sterbenz), not by the transfer asked: o - ds rounds away a
         * transfer smaller than half a unit in the last place of the
         * height, which a load changed by the asked ds would still count
         * (on a 1020 m DEM at 100 particles a cell the budget then misses
         * by 1.5e-5 of the terrain's volume, by 1e-11 with o - v).  A
         * deposit that rounding would make larger than asked does not
         * happen, so the load never goes negative. */
        float o = h[ci], v;
        if (ds > 0) {
            if (c->ctl_erode) /* (1 - hardness) * mask, core/controls.h */
                ds *= c->ctl_erode[ci];
            v = er_maxf(o - ds, er_minf(o, h[cj]));
        } else {
            if (c->ctl_mask)
                ds *= c->ctl_mask[ci];
            v = o - ds;
            if (o - v < ds)
                v = o;
        }
        ds = o - v;
        h[ci] = v;
        if (ds > 0) {
            eroded += (double)ds;
            if (c->wear)
                c->wear[ci] += ds;
        } else {
            deposited -= (double)ds;
            if (c->deposit)
                c->deposit[ci] -= ds;
        }
        sed += ds;
        vol *= c->mt_evap_keep; /* Power 2025 eq. 6 */
        ix = jx;
        iy = jy;
    }

    /* Through the brush, not onto one cell: a particle stopped by
     * max_distance or a wall with its load on one cell would leave a
     * single-cell mound. */
    if (sed > 0)
        er_end_load(sed, er_brush_apply(c, ix, iy, -sed), &deposited, &acc->left_map);
    acc->eroded += eroded;
    acc->deposited += deposited;
    acc->steps += steps;
}
