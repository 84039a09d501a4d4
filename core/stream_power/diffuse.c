/*
 * Hillslope diffusion dh/dt = K_d lap(h) over one step (sp_internal.h
 * er_sp_diffuse), implicit and split by direction (locally one-
 * dimensional backward Euler, Yanenko 1971):
 *     (1 - theta_x D_xx) h* = h,   (1 - theta_y D_yy) h' = h*,
 *     theta_x = K_d dt / dx^2,     theta_y = K_d dt / dy^2,
 * each a tridiagonal system per row, then per column, solved by the
 * Thomas algorithm.  Each factor damps every mode (its amplification is
 * 1 / (1 + 4 theta sin^2(k / 2)) <= 1), so any dt is stable and grid-scale
 * noise is smoothed, not left ringing as Peaceman-Rachford ADI leaves it
 * at large theta.  Cost O(n) a step.
 * The flux between two cells is scaled by the smaller of their
 * (1 - hardness) mask; base-level cells are held fixed (what crosses into
 * them leaves the map, counted as left at base level), nodata cells and
 * the edges that are not base level pass nothing.
 * Rows and column blocks are independent, each cell written by one thread,
 * and every sum is per row or column, added in order afterwards: the same
 * result for any thread count.
 */
#include <string.h>

#include "../parallel.h"
#include "sp_internal.h"

/* The factor of the flux between cells i and j. */
static inline double face(const er_sp_sim *s, int64_t i, int64_t j)
{
    if (!s->walls && !s->ks)
        return 1.0;
    if (s->kind[i] == ER_SP_WALL || s->kind[j] == ER_SP_WALL)
        return 0.0;
    if (!s->ks)
        return 1.0;
    return s->ks[i] < s->ks[j] ? (double)s->ks[i] : (double)s->ks[j];
}

/*
 * One line of cells (a row: stride 1, or a column: stride w) of len
 * cells from cell i0: solves (1 - theta D) h' = h in place.  A fixed cell
 * (base level, nodata) is the equation h' = h; a free cell's neighbour
 * beyond the line's ends is none.  cp, dp: scratch of len doubles.
 * Returns the flux into base-level cells [m * cells]: the material the
 * line's free cells lost, the only sink of the line (walls pass nothing).
 * Summed from the heights, not as theta (h' - h_base) per face: that
 * product multiplies the solve's rounding by theta, 1e-6 to 1e-3 of the
 * terrain's volume at the largest theta the keys accept.
 */
static double solve_line(er_sp_sim *s, int64_t i0, int64_t stride, int len, double theta,
                         double *cp, double *dp)
{
    double *z = s->z;
    double cprev = 0.0, dprev = 0.0, cl = 0.0, before = 0.0, after = 0.0;
    for (int k = 0; k < len; k++) {
        const int64_t i = i0 + (int64_t)k * stride;
        /* the face to the next cell; the one to the previous was cl */
        const double cr = k + 1 < len ? theta * face(s, i, i + stride) : 0.0;
        if (s->kind[i] != ER_SP_FREE) {
            cprev = 0.0;
            dprev = z[i];
        } else {
            const double inv = 1.0 / (1.0 + cl + cr + cl * cprev);
            cprev = -cr * inv;
            dprev = (z[i] + cl * dprev) * inv;
            before += z[i];
        }
        cp[k] = cprev;
        dp[k] = dprev;
        cl = cr;
    }
    double next = 0.0;
    for (int k = len - 1; k >= 0; k--) {
        const int64_t i = i0 + (int64_t)k * stride;
        next = dp[k] - cp[k] * next;
        if (s->kind[i] != ER_SP_FREE)
            continue;
        z[i] = next;
        after += next;
    }
    return before - after;
}

/*
 * Columns x0 .. x0 + nb - 1 (nb <= ER_SP_BLOCK): solve_line down each, the
 * columns side by side.  cp, dp: scratch of h * ER_SP_BLOCK doubles; flux[c]
 * receives column x0 + c's flux into base level, its free cells' loss as
 * in solve_line.
 */
static void solve_columns(er_sp_sim *s, int x0, int nb, double theta, double *cp, double *dp,
                          double *flux)
{
    const int w = s->w, h = s->h;
    double *z = s->z;
    double cl[ER_SP_BLOCK], cprev[ER_SP_BLOCK], dprev[ER_SP_BLOCK];
    for (int c = 0; c < nb; c++)
        cl[c] = cprev[c] = dprev[c] = flux[c] = 0.0;
    for (int y = 0; y < h; y++) {
        for (int c = 0; c < nb; c++) {
            const int64_t i = (int64_t)y * w + x0 + c;
            const size_t k = (size_t)y * ER_SP_BLOCK + (size_t)c;
            const double cr = y + 1 < h ? theta * face(s, i, i + w) : 0.0;
            if (s->kind[i] != ER_SP_FREE) {
                cprev[c] = 0.0;
                dprev[c] = z[i];
            } else {
                const double inv = 1.0 / (1.0 + cl[c] + cr + cl[c] * cprev[c]);
                cprev[c] = -cr * inv;
                dprev[c] = (z[i] + cl[c] * dprev[c]) * inv;
                flux[c] += z[i];
            }
            cp[k] = cprev[c];
            dp[k] = dprev[c];
            cl[c] = cr;
        }
    }
    double next[ER_SP_BLOCK];
    for (int c = 0; c < nb; c++)
        next[c] = 0.0;
    for (int y = h - 1; y >= 0; y--)
        for (int c = 0; c < nb; c++) {
            const int64_t i = (int64_t)y * w + x0 + c;
            const size_t k = (size_t)y * ER_SP_BLOCK + (size_t)c;
            next[c] = dp[k] - cp[k] * next[c];
            if (s->kind[i] != ER_SP_FREE)
                continue;
            z[i] = next[c];
            flux[c] -= next[c];
        }
}

void er_sp_diffuse(er_sp_sim *s, const er_stream_power_params *p, er_sp_tally *t)
{
    const int w = s->w, h = s->h;
    const double tx = p->kd * p->dt / (s->dx * s->dx), ty = p->kd * p->dt / (s->dy * s->dy);
    double *rows = s->sums, *cols = s->sums + h;
    double *er = s->sums + h + w, *de = er + h;
    memcpy(s->q, s->z, (size_t)s->n * sizeof *s->q);
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        double *cp = s->dscr + (size_t)er_thread_id() * s->dscr_per_thread;
        rows[y] = solve_line(s, (int64_t)y * w, 1, w, tx, cp, cp + w);
    }
    const int blocks = (w + ER_SP_BLOCK - 1) / ER_SP_BLOCK;
    ER_OMP_FOR()
    for (int b = 0; b < blocks; b++) {
        double *cp = s->dscr + (size_t)er_thread_id() * s->dscr_per_thread;
        const int x0 = b * ER_SP_BLOCK, nb = w - x0 < ER_SP_BLOCK ? w - x0 : ER_SP_BLOCK;
        solve_columns(s, x0, nb, ty, cp, cp + (size_t)h * ER_SP_BLOCK, cols + x0);
    }
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        double e = 0.0, d = 0.0;
        for (int64_t i = (int64_t)y * w; i < (int64_t)(y + 1) * w; i++) {
            if (s->kind[i] != ER_SP_FREE)
                continue;
            const double c = s->z[i] - s->q[i];
            if (c < 0.0) {
                e -= c;
                if (s->wear)
                    s->wear[i] += (float)-c;
            } else if (c > 0.0) {
                d += c;
                if (s->dep)
                    s->dep[i] += (float)c;
            }
        }
        er[y] = e;
        de[y] = d;
    }
    for (int y = 0; y < h; y++) {
        t->left += rows[y];
        t->eroded += er[y];
        t->deposited += de[y];
    }
    for (int x = 0; x < w; x++)
        t->left += cols[x];
}
