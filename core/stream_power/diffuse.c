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

/* Nonlinear creep's flux at the critical slope is infinite; the implicit
 * solve takes the factor 1 / (1 - (S / S_c)^2) up to this S^2 / S_c^2
 * (a diffusivity 25 times K_d), and the relaxation below takes the rest. */
#define ER_SP_CREEP_CAP 0.96

/* Sweeps of the relaxation a step, and the share of a pair's excess one
 * sweep moves: 1/16, so that a cell with all 8 neighbours too low gives
 * at most half its excess and no pair overshoots. */
#define ER_SP_RELAX_SWEEPS 8
#define ER_SP_RELAX_SHARE (1.0 / 16.0)

/* Roering et al. 1999, eq. 6: q = K_d S / (1 - (S / S_c)^2): the factor
 * on K_d for a drop dz over a face, isc = 1 / (L S_c) (0: linear). */
static inline double creep(double dz, double isc)
{
    double r = dz * isc;
    r *= r;
    return 1.0 / (1.0 - (r < ER_SP_CREEP_CAP ? r : ER_SP_CREEP_CAP));
}

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
                         double isc, double *cp, double *dp)
{
    double *z = s->z;
    double cprev = 0.0, dprev = 0.0, cl = 0.0, before = 0.0, after = 0.0;
    for (int k = 0; k < len; k++) {
        const int64_t i = i0 + (int64_t)k * stride;
        /* the face to the next cell; the one to the previous was cl */
        const double cr = k + 1 < len ? theta * face(s, i, i + stride) *
                                            (isc > 0.0 ? creep(z[i] - z[i + stride], isc) : 1.0)
                                      : 0.0;
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
static void solve_columns(er_sp_sim *s, int x0, int nb, double theta, double isc, double *cp,
                          double *dp, double *flux)
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
            const double cr = y + 1 < h ? theta * face(s, i, i + w) *
                                              (isc > 0.0 ? creep(z[i] - z[i + w], isc) : 1.0)
                                        : 0.0;
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

/* Cell i's change in one sweep of the relaxation: for each neighbour j
 * (not nodata) at distance L, the excess e = |z_i - z_j| - S_c L of the
 * steeper pair, times the pair's factor (the smaller (1 - hardness) mask
 * of the two, as creep's), of which the higher cell gives and the lower
 * takes the share ER_SP_RELAX_SHARE.  *steep: set when a pair is too
 * steep. */
static double relax_cell(const er_sp_sim *s, int x, int y, const double *lim, int *steep)
{
    const int64_t i = (int64_t)y * s->w + x;
    const double zi = s->z[i];
    const int inner = x > 0 && y > 0 && x < s->w - 1 && y < s->h - 1;
    double d = 0.0;
    for (int k = 0; k < 8; k++) {
        const int nx = x + er_sp_dx[k], ny = y + er_sp_dy[k];
        if (!inner && (nx < 0 || ny < 0 || nx >= s->w || ny >= s->h))
            continue;
        const int64_t j = i + s->off[k];
        if (s->kind[j] == ER_SP_WALL)
            continue;
        const double dz = zi - s->z[j];
        const double e = ((dz > 0.0 ? dz : -dz) - lim[k]) * face(s, i, j);
        if (e > 0.0) {
            d += dz > 0.0 ? -ER_SP_RELAX_SHARE * e : ER_SP_RELAX_SHARE * e;
            *steep = 1;
        }
    }
    return d;
}

/*
 * Cells steeper than S_c relaxed towards it (stream_power.sc): the
 * hillslopes of the input (noise has them) and of a step's incision, past
 * what creep's capped factor carries.  Jacobi sweeps: every cell's change
 * from the heights before the sweep (relax_cell), then all applied, so the
 * result is one for any thread count; mass moves between pairs, and what
 * reaches a base-level cell leaves the map (rows[y] += the row's loss).
 * At most ER_SP_RELAX_SWEEPS a step, the later ones only on rows beside a
 * row that had a steep pair; what remains relaxes in the next steps.
 * delta: n doubles of scratch; was, now: h bytes each.
 */
static void relax(er_sp_sim *s, double sc, double *delta, uint8_t *was, uint8_t *now,
                  double *rows)
{
    const int w = s->w, h = s->h;
    double lim[8];
    for (int k = 0; k < 8; k++)
        lim[k] = sc * er_sp_step(s, k);
    memset(was, 1, (size_t)h);
    for (int sweep = 0; sweep < ER_SP_RELAX_SWEEPS; sweep++) {
        int any = 0;
        ER_OMP_FOR(reduction(| : any))
        for (int y = 0; y < h; y++) {
            int steep = 0;
            const int near = was[y] || (y > 0 && was[y - 1]) || (y + 1 < h && was[y + 1]);
            for (int x = 0; x < w; x++) {
                const int64_t i = (int64_t)y * w + x;
                delta[i] = near && s->kind[i] == ER_SP_FREE ? relax_cell(s, x, y, lim, &steep)
                                                              : 0.0;
            }
            now[y] = (uint8_t)steep;
            any |= steep;
        }
        if (!any)
            return;
        ER_OMP_FOR()
        for (int y = 0; y < h; y++) {
            double lost = 0.0;
            for (int64_t i = (int64_t)y * w; now[y] && i < (int64_t)(y + 1) * w; i++) {
                s->z[i] += delta[i];
                lost -= delta[i];
            }
            rows[y] += lost;
        }
        uint8_t *tmp = was;
        was = now;
        now = tmp;
    }
}

void er_sp_diffuse(er_sp_sim *s, const er_stream_power_params *p, er_sp_tally *t)
{
    const int w = s->w, h = s->h;
    const double tx = p->kd * p->dt / (s->dx * s->dx), ty = p->kd * p->dt / (s->dy * s->dy);
    const double ix = p->sc > 0.0 ? 1.0 / (s->dx * p->sc) : 0.0;
    const double iy = p->sc > 0.0 ? 1.0 / (s->dy * p->sc) : 0.0;
    double *rows = s->sums, *cols = s->sums + h;
    double *er = s->sums + h + w, *de = er + h;
    memcpy(s->q, s->z, (size_t)s->n * sizeof *s->q);
    ER_OMP_FOR()
    for (int y = 0; y < h; y++) {
        double *cp = s->dscr + (size_t)er_thread_id() * s->dscr_per_thread;
        rows[y] = tx > 0.0 ? solve_line(s, (int64_t)y * w, 1, w, tx, ix, cp, cp + w) : 0.0;
    }
    const int blocks = (w + ER_SP_BLOCK - 1) / ER_SP_BLOCK;
    ER_OMP_FOR()
    for (int b = 0; b < blocks; b++) {
        double *cp = s->dscr + (size_t)er_thread_id() * s->dscr_per_thread;
        const int x0 = b * ER_SP_BLOCK, nb = w - x0 < ER_SP_BLOCK ? w - x0 : ER_SP_BLOCK;
        if (ty > 0.0)
            solve_columns(s, x0, nb, ty, iy, cp, cp + (size_t)h * ER_SP_BLOCK, cols + x0);
        else
            memset(cols + x0, 0, (size_t)nb * sizeof *cols);
    }
    /* the tally's rows are free until the tally: the relaxation's flags */
    if (p->sc > 0.0)
        relax(s, p->sc, s->acc, (uint8_t *)er, (uint8_t *)de, rows);
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
