/*
 * One SPH sub-step (Kristof et al. 2009): the neighbour grid, the fluid and
 * boundary forces of sections 3.1-3.2, the sediment exchange of section 4 and
 * the leapfrog move.  Determinism (erode-models(7) SPH, "Order of the sums"):
 * particles are sorted into grid columns by a stable counting sort; each
 * fluid pair is computed once, by its lower index, for both particles, in
 * rows of columns taken in two phases (each_row), and each boundary pair by
 * its particle, the quads adding its records in particle order (add_quads):
 * every sum runs in an order fixed by the particles, the same for any thread
 * count.  Both sides of a pair's exchange use the one number computed, so
 * what one side loses the other gains, per pair.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../parallel.h"
#include "sph_internal.h"

#define PI 3.14159265358979323846
/* the pair loops take their pair function as a pointer: inlined, the call
 * and the pointer go */
#define HOT_INLINE static inline __attribute__((always_inline))

/* The per-particle lists are rows of ER_SPH_NB entries (ER_SPH_NBB,
 * nbq), a few cache lines used of each, 256 bytes or more apart: the
 * hardware prefetcher does not follow such rows across pages, and without
 * help the passes stall on each row's first load (perf: a quarter of the
 * force loop's samples on the load of its first neighbour).  So a pass over
 * particle i asks for the row of particle i + AHEAD, within the lists
 * (a prefetch changes no value). */
#define AHEAD 4
#define PREFETCH_ROW(s, a, i, stride, rw)                                                        \
    do {                                                                                       \
        if ((i) + AHEAD < (s)->n)                                                              \
            __builtin_prefetch(&(a)[((i) + AHEAD) * (stride)], rw);                              \
    } while (0)

/* Mueller et al. 2003's poly6 kernel (their eq. 20) with support hk, of
 * r^2: the paper's density kernel (section 3.1, "kernels suggested by
 * Mueller et al."). */
double er_sph_w(const er_sph_sim *s, double r2)
{
    double h2 = s->hk * s->hk, d = h2 - r2;
    return r2 < h2 ? 315.0 / (64.0 * PI * h2 * h2 * h2 * h2 * s->hk) * d * d * d : 0.0;
}

void er_sph_kernel_constants(er_sph_sim *s)
{
    double h2 = s->hk * s->hk, h3 = h2 * s->hk;
    s->kw = 315.0 / (64.0 * PI * h2 * h2 * h2 * h2 * s->hk);
    s->kdw = 45.0 / (PI * h3 * h3);
    double hp = 0.5 * s->hk;
    s->ksp = 1.0 / (PI * hp * hp * hp * hp);
}

/* dW/dr of Mueller et al.'s spiky kernel (their eq. 21), the pressure
 * kernel: its gradient does not vanish at r -> 0, so close particles
 * still repel. */
double er_sph_dw(const er_sph_sim *s, double r)
{
    double h3 = s->hk * s->hk * s->hk, d = s->hk - r;
    return r < s->hk ? -45.0 / (PI * h3 * h3) * d * d : 0.0;
}

/* The Laplacian of Mueller et al.'s viscosity kernel (their eq. 22). */
double er_sph_lapv(const er_sph_sim *s, double r)
{
    double h3 = s->hk * s->hk * s->hk;
    return r < s->hk ? 45.0 / (PI * h3 * h3) * (s->hk - r) : 0.0;
}

/* |dW/dr| of Monaghan's cubic spline with support 2h' = hk. */
double er_sph_spline_f(const er_sph_sim *s, double r)
{
    double hp = 0.5 * s->hk, q = r / hp, sig = s->ksp;
    if (q < 1.0)
        return sig * (3.0 * q - 2.25 * q * q);
    if (q < 2.0)
        return sig * 0.75 * (2.0 - q) * (2.0 - q);
    return 0.0;
}

/* fmin(fmax(v, 0), hi) without the libm calls (NaN gives 0 as there):
 * the surface is asked for twice a particle a sub-step. */
static inline double clamp_to(double v, double hi)
{
    return v > 0.0 ? (v < hi ? v : hi) : 0.0;
}

/* er_sph_surface at (xq, yq) in vertex indices, its gradient per index. */
static inline double surface_q(const er_sph_sim *s, double xq, double yq, double *gx,
                               double *gy)
{
    double xc = clamp_to(xq, (double)(s->w - 1)), yc = clamp_to(yq, (double)(s->h - 1));
    int i = s->w > 1 ? (int)floor(xc) : 0, j = s->h > 1 ? (int)floor(yc) : 0;
    i = i > s->w - 2 && s->w > 1 ? s->w - 2 : i;
    j = j > s->h - 2 && s->h > 1 ? s->h - 2 : j;
    int i1 = s->w > 1 ? i + 1 : i, j1 = s->h > 1 ? j + 1 : j;
    double u = xc - i, v = yc - j;
    const double *z = s->zb;
    double a = z[er_sph_vi(s, i, j)], b = z[er_sph_vi(s, i1, j)];
    double c = z[er_sph_vi(s, i, j1)], d = z[er_sph_vi(s, i1, j1)];
    if (gx)
        *gx = (1 - v) * (b - a) + v * (d - c);
    if (gy)
        *gy = (1 - u) * (c - a) + u * (d - b);
    return (1 - v) * ((1 - u) * a + u * b) + v * ((1 - u) * c + u * d);
}

double er_sph_surface(const er_sph_sim *s, double x, double y, double *gx, double *gy)
{
    double z = surface_q(s, x * s->ixstep, y * s->iystep, gx, gy);
    if (gx)
        *gx *= s->ixstep;
    if (gy)
        *gy *= s->iystep;
    return z;
}

/* The boundary particle (a, b) of quad (qx, qy), on the bilinear surface. */
static void bpos(const er_sph_sim *s, int qx, int qy, int a, int b, double *r)
{
    r[0] = (qx + s->boffx[a]) * s->xstep;
    r[1] = (qy + s->boffy[b]) * s->ystep;
    r[2] = s->bz[(er_sph_qi(s, qx, qy) * (size_t)s->ky + (size_t)b) * (size_t)s->kx + (size_t)a];
}

void er_sph_boundary_heights(er_sph_sim *s, int qx0, int qy0, int qx1, int qy1)
{
    s->ctop_dirty = 1;
    for (int qy = qy0; qy <= qy1; qy++)
        for (int qx = qx0; qx <= qx1; qx++) {
            double *bz = &s->bz[er_sph_qi(s, qx, qy) * (size_t)s->kx * (size_t)s->ky];
            double *r = &s->bzr[2 * er_sph_qi(s, qx, qy)];
            for (int b = 0; b < s->ky; b++)
                for (int a = 0; a < s->kx; a++)
                    bz[b * s->kx + a] =
                        surface_q(s, qx + s->boffx[a], qy + s->boffy[b], NULL, NULL);
            r[0] = r[1] = bz[0];
            for (int l = 1; l < s->kx * s->ky; l++) {
                r[0] = bz[l] < r[0] ? bz[l] : r[0];
                r[1] = bz[l] > r[1] ? bz[l] : r[1];
            }
        }
}

/* Hindered settling f(C) = 1 - (C / Cmax)^5 (eq. 17, Richardson-Zaki with
 * e = 5, inside the paper's 4 < e < 5.5 and free of pow()). */
static double hindered(const er_sph_sim *s, double c)
{
    double q = c / s->cmax;
    return q >= 1.0 ? 0.0 : 1.0 - q * q * q * q * q;
}

/* Settling of C from a donor (C = cd) onto an acceptor up below it at
 * distance r (0 < r < hk) (eq. 16), only downwards (vs points down):
 * facc = f(C_a) for a particle acceptor, for a boundary particle 1 (eq.
 * 20) times its quad's mask factor (quad_factor). */
static double settle_r(const er_sph_sim *s, double cd, double facc, double up, double r)
{
    if (cd == 0.0 || facc == 0.0 || up <= 0.0)
        return 0.0;
    return s->vol * cd * facc * s->vs0 * (up / r) * er_sph_spline_f(s, r) * s->dt;
}

/* Erosion of a boundary particle at distance l (0 < l < hk, l2 = l^2)
 * by fluid particle pi (eqs. 9-10) as a volume [cells^3], times kq, its
 * quad's control factor (quad_factor): theta = |v| / l, tau = K theta^n
 * with K = 1 and n = 0.5 (a square root), eps = K_eps (tau - tau_c), over
 * area s^2. */
static double erode_pair(const er_sph_sim *s, const er_sph_particle *pi, double l2, double l,
                         double kq)
{
    if (kq == 0.0 || s->ke == 0.0)
        return 0.0;
    /* tau <= tau_c, i.e. |v|^2 <= tau_c^4 l^2, before any square root:
     * most pairs stop here */
    double v2 = pi->vx * pi->vx + pi->vy * pi->vy + pi->vz * pi->vz, t2 = s->tauc * s->tauc;
    if (v2 <= t2 * t2 * l2)
        return 0.0;
    double tau = sqrt(sqrt(v2) / l);
    return tau > s->tauc ? kq * (s->ke * (tau - s->tauc) * s->s * s->s * s->dt) : 0.0;
}

/* A quad's control factor (core/controls.h) from f (per quad; NULL:
 * no maps, 1).  Both sides of a pair's exchange read the same one. */
static double quad_factor(const er_sph_sim *s, const double *f, int qx, int qy)
{
    return f ? f[(size_t)qy * (size_t)(s->w - 1) + (size_t)qx] : 1.0;
}

int er_sph_col(const er_sph_sim *s, double v, int n)
{
    int c = (int)floor(v / s->hg);
    return c < 0 ? 0 : c >= n ? n - 1 : c;
}

static void set_keys(er_sph_sim *s)
{
    ER_OMP_FOR()
    for (int64_t i = 0; i < s->n; i++)
        if (s->key[i] != (int64_t)s->gw * s->gh)
            s->key[i] = (int64_t)er_sph_col(s, s->p[i].y, s->gh) * s->gw + er_sph_col(s, s->p[i].x, s->gw);
}

/* Insertion sort of particles a..b-1 by height, stable: the order of the
 * last sub-step is nearly sorted already, so this is about one pass. */
static void sort_heights(er_sph_sim *s, int64_t a, int64_t b)
{
    for (int64_t i = a + 1; i < b; i++) {
        if (s->p[i - 1].z <= s->p[i].z)
            continue;
        er_sph_particle p = s->p[i];
        int64_t j = i;
        for (; j > a && s->p[j - 1].z > p.z; j--)
            s->p[j] = s->p[j - 1];
        s->p[j] = p;
    }
}

/* The order in which each_row hands out the rows of a phase: the most
 * particles first (ties by row), so that the last rows taken are short
 * and a thread waits less at the phase's end.  Which thread runs a row
 * changes no value: the rows of a phase touch disjoint particles. */
static int by_weight(const void *a, const void *b)
{
    const er_sph_row *x = a, *y = b;
    return x->w != y->w ? (x->w < y->w) - (x->w > y->w) : (x->cy > y->cy) - (x->cy < y->cy);
}

static void row_order(er_sph_sim *s)
{
    for (int ph = 0; ph < 2; ph++) {
        er_sph_row *o = &s->rord[ph * (s->gh / 2 + 2)];
        int m = 0;
        for (int cy = ph ? -1 : 0; cy < s->gh; cy += 2, m++) {
            int c = cy < 0 ? 0 : cy;
            o[m] = (er_sph_row){s->start[(int64_t)(c + 1) * s->gw] - s->start[(int64_t)c * s->gw], cy};
        }
        qsort(o, (size_t)m, sizeof *o, by_weight);
    }
}

/* i's own density term (d = h2 - 0), set after a sort and, on listed
 * sub-steps, by the density pass's pre. */
static void density_start(er_sph_sim *s, int64_t i)
{
    const double h2 = s->hk * s->hk;
    s->xr[i].rho = h2 * h2 * h2;
}

/* Stable counting sort into grid columns; particles marked gone (key
 * gw*gh) go last and are dropped.  Then each column is sorted by height,
 * so a neighbour query reads, in each of the 3x3 columns around it, the
 * contiguous run within hk in z instead of the whole water column.  Both
 * sorts are fixed functions of the particles: the same order for any
 * thread count. */
void er_sph_sort(er_sph_sim *s)
{
    if (!s->keys_fresh)
        set_keys(s);
    s->keys_fresh = 0;
    const int64_t nc = (int64_t)s->gw * s->gh;
    memset(s->start, 0, (size_t)(nc + 2) * sizeof *s->start);
    for (int64_t i = 0; i < s->n; i++)
        s->start[s->key[i] + 1]++;
    for (int64_t c = 0; c <= nc; c++)
        s->start[c + 1] += s->start[c];
    for (int64_t i = 0; i < s->n; i++)
        s->tmp[s->start[s->key[i]]++] = s->p[i];
    for (int64_t c = nc; c > 0; c--)
        s->start[c] = s->start[c - 1];
    s->start[0] = 0;
    er_sph_particle *t = s->p;
    s->p = s->tmp;
    s->tmp = t;
    s->n = s->start[nc];
    ER_OMP_FOR()
    for (int64_t c = 0; c < nc; c++) {
        sort_heights(s, s->start[c], s->start[c + 1]);
        /* the keys were the old order's: each now its column, as move
         * keeps them, for the passes' column look-ups */
        for (int64_t i = s->start[c]; i < s->start[c + 1]; i++) {
            s->xr[i].x = s->p[i].x;
            s->xr[i].y = s->p[i].y;
            s->xr[i].z = s->p[i].z;
            s->ox[i] = s->p[i].x; /* where the Verlet lists are built */
            s->oy[i] = s->p[i].y;
            s->oz[i] = s->p[i].z;
            s->key[i] = c;
            density_start(s, i); /* for the pair pass */
        }
    }
    s->lists_ok = 0;
    row_order(s);
}

/* The particles near those of one column, walked in height order: in
 * each of the 3x3 columns around it the run [lo, hi) of heights within hg
 * of the current particle's only moves up, so the whole column costs one
 * pass over its neighbours' particles, not a search per particle. */
typedef struct nb_cursor {
    int64_t lo[9], hi[9], end[9];
    int n;
} nb_cursor;

static void cursor_init(const er_sph_sim *s, int64_t c, nb_cursor *cur)
{
    int cx = (int)(c % s->gw), cy = (int)(c / s->gw);
    cur->n = 0;
    /* the columns that can hold a neighbour after (above in index) the
     * column's particles: the column itself, the next, the row below */
    for (int v = cy; v <= cy + 1; v++)
        for (int u = v == cy ? cx : cx - 1; u <= cx + 1; u++) {
            if (u < 0 || v < 0 || u >= s->gw || v >= s->gh)
                continue;
            int64_t d = (int64_t)v * s->gw + u;
            if (s->start[d] == s->start[d + 1])
                continue;
            cur->lo[cur->n] = cur->hi[cur->n] = s->start[d];
            cur->end[cur->n++] = s->start[d + 1];
        }
}

static void cursor_advance(const er_sph_sim *s, nb_cursor *cur, double z)
{
    for (int k = 0; k < cur->n; k++) {
        int64_t lo = cur->lo[k], hi = cur->hi[k];
        while (lo < cur->end[k] && s->xr[lo].z < z - s->hg)
            lo++;
        if (hi < lo)
            hi = lo;
        while (hi < cur->end[k] && s->xr[hi].z < z + s->hg)
            hi++;
        cur->lo[k] = lo;
        cur->hi[k] = hi;
    }
}

/* Calls body(s, i, cur) for every particle i of column c in order, cur
 * its neighbours after it.  With lists set the bodies read the neighbour
 * lists and need the cursor only for a particle whose list overflowed:
 * it is advanced then, from where it was (its bounds only move up, so the
 * same ranges result). */
typedef void (*body_fn)(er_sph_sim *s, int64_t i, const nb_cursor *cur);

static void column(er_sph_sim *s, int64_t c, int lists, body_fn body)
{
    if (s->start[c] == s->start[c + 1])
        return;
    nb_cursor cur;
    cursor_init(s, c, &cur);
    for (int64_t i = s->start[c]; i < s->start[c + 1]; i++) {
        if (!lists || s->nbn[i] < 0)
            cursor_advance(s, &cur, s->p[i].z);
        body(s, i, &cur);
    }
}

/* The worksharing inside each_row's parallel region (ER_OMP_FOR* are
 * whole parallel loops): nothing without OpenMP, as those. */
#ifdef _OPENMP
#define SINGLE_NOWAIT ER_PRAGMA(omp single nowait)
#define FOR_DYNAMIC_INNER ER_PRAGMA(omp for schedule(dynamic, 1))
#else
#define SINGLE_NOWAIT
#define FOR_DYNAMIC_INNER
#endif

/* Calls column() for every column, a row of columns at a time, one thread
 * a row, even rows and then odd ones (each phase's heaviest first,
 * row_order): a body may then also write the
 * particles after i (those within hg, its Verlet list's, lie in its row
 * of columns or the next, the rows of the last sort), and each particle
 * gets its terms in a fixed order for any thread count: its own row's in
 * index order, the row above's before or after them by the rows' parity.
 * So each pair's terms are computed once, by its lower index, for both
 * particles, without atomics.  pre (or NULL)
 * is called for each particle before its row's and the row above's
 * bodies: by the even row for itself and the odd row after it (the rows
 * its bodies read and write), so a per-particle loop needs no pass and
 * barrier of its own.  post (or NULL) is called once for every row after
 * the last body that writes its particles: by each odd row, after its
 * bodies, for itself and the even row after it (an even row's particles
 * are written by its own bodies and the odd row's before it), and for
 * row 0 by a task of its own (cy = -1) in the odd rows' phase; so the
 * particles of rows it is given are no longer read or written by the
 * bodies still running.  Its last argument numbers its call, 0 ..
 * gh / 2. */
typedef void (*each_fn)(er_sph_sim *s, int64_t i);
typedef void (*rows_fn)(er_sph_sim *s, int64_t a, int64_t b, int slot);

static void each_row_phase(er_sph_sim *s, int ph, int lists, body_fn body, each_fn pre,
                           rows_fn post)
{
    const er_sph_row *ord = &s->rord[ph * (s->gh / 2 + 2)];
    const int nt = ph ? (s->gh + 2) / 2 : (s->gh + 1) / 2;
    FOR_DYNAMIC_INNER
    for (int k = 0; k < nt; k++) {
        int cy = ord[k].cy;
        if (cy < 0 && !post)
            continue;
        int64_t rows = cy + 2 <= s->gh ? 2 : 1;
        if (pre && ph == 0)
            for (int64_t i = s->start[(int64_t)cy * s->gw];
                 i < s->start[(int64_t)(cy + rows) * s->gw]; i++)
                pre(s, i);
        for (int cx = 0; cx < s->gw && cy >= 0; cx++)
            column(s, (int64_t)cy * s->gw + cx, lists, body);
        if (post && ph == 1)
            post(s, s->start[(int64_t)(cy > 0 ? cy : 0) * s->gw],
                 s->start[(int64_t)(cy + 2 < s->gh ? cy + 2 : s->gh) * s->gw], (cy + 1) / 2);
    }
}

static void add_quads(er_sph_sim *s, int64_t n);

/* Both phases run in one parallel region; when the last sub-step's quad
 * records wait (quads_pending), one thread adds them (add_quads, serial
 * in particle order) while the others start on the rows: the passes
 * before the next take pass neither read nor write them, so the serial
 * loop costs one thread a while, not the sub-step. */
static void each_row(er_sph_sim *s, int lists, body_fn body, each_fn pre, rows_fn post)
{
    const int64_t quads = s->quads_pending;
    s->quads_pending = 0;
    ER_OMP_PARALLEL()
    {
        SINGLE_NOWAIT
        {
            if (quads)
                add_quads(s, quads);
        }
        for (int ph = 0; ph < 2; ph++)
            each_row_phase(s, ph, lists, body, pre, post);
    }
}

/* Loops over the particles j > i of cursor cur, in index order. */
#define FOR_UPPER(cur, i, j)                                                                    \
    for (int k_ = 0; k_ < (cur)->n; k_++)                                                       \
        for (int64_t j = (cur)->lo[k_] > (i) ? (cur)->lo[k_] : (i) + 1, e_##j = (cur)->hi[k_]; \
             j < e_##j; j++)

/* Calls pair(s, i, j, l, r2) for particle i's neighbours j > i within hk,
 * r2 their squared distance, in index order: from its list (l the entry,
 * after i's own), or, when it overflowed, from its cursor (l = -1). */
typedef void (*pair_fn)(er_sph_sim *s, int64_t i, int64_t j, int64_t l, double r2);

HOT_INLINE void upper_pairs(er_sph_sim *s, int64_t i, const nb_cursor *cur, pair_fn pair)
{
    const double xi = s->pk[i].x, yi = s->pk[i].y, zi = s->pk[i].z;
    if (s->nbn[i] >= 0) {
        const int32_t *nb = &s->nb[i * ER_SPH_NB];
        for (int32_t l = 0; l < s->nbn[i]; l++) {
            int64_t j = nb[l];
            double dx = xi - s->pk[j].x, dy = yi - s->pk[j].y, dz = zi - s->pk[j].z;
            pair(s, i, j, i * ER_SPH_NB + l, dx * dx + dy * dy + dz * dz);
        }
        return;
    }
    FOR_UPPER(cur, i, j) {
        double dx = xi - s->xr[j].x, dy = yi - s->xr[j].y, dz = zi - s->xr[j].z;
        double r2 = dx * dx + dy * dy + dz * dz;
        if (s->hk * s->hk - r2 > 0.0)
            pair(s, i, j, -1, r2);
    }
}

/* Whether the box around quad (qx, qy)'s boundary particles comes within
 * hk of (x, y, z).  Each component of the box distance is one particle's
 * (or 0) and rounding is monotone, so no particle within hk is skipped:
 * the loops see the same pairs, with fewer misses. */
static inline double box_gap(double lo, double hi, double p)
{
    double u = lo - p, v = p - hi, d = u > v ? u : v; /* max(lo - p, p - hi, 0) */
    return d > 0.0 ? d : 0.0;
}

static inline int quad_near(const er_sph_sim *s, int qx, int qy, double x, double y, double z)
{
    const double *r = &s->bzr[2 * er_sph_qi(s, qx, qy)];
    double dx = box_gap((qx + s->boffx[0]) * s->xstep, (qx + s->boffx[s->kx - 1]) * s->xstep, x);
    double dy = box_gap((qy + s->boffy[0]) * s->ystep, (qy + s->boffy[s->ky - 1]) * s->ystep, y);
    double dz = box_gap(r[0], r[1], z);
    return dx * dx + dy * dy + dz * dz < s->hk * s->hk;
}

/* The range of quads whose boundary particles (offsets boff[0] ..
 * boff[k-1] in the quad, at (q + boff) a) lie within hk of coordinate v
 * along one axis (0: along a row, 1: down the rows), clamped to 0..n:
 * about 2 quads, not 3.  The margin covers rounding; the box test
 * (quad_near) decides. */
#define QUAD_MARGIN 1e-6

static int quad_lo(const er_sph_sim *s, double v, int axis)
{
    const double ia = axis ? s->iystep : s->ixstep;
    const double last = axis ? s->boffy[s->ky - 1] : s->boffx[s->kx - 1];
    double q = floor((v - s->hk) * ia - last - QUAD_MARGIN) + 1.0;
    return q < 0.0 ? 0 : (int)q;
}

static int quad_hi(const er_sph_sim *s, double v, int n, int axis)
{
    const double ia = axis ? s->iystep : s->ixstep, first = axis ? s->boffy[0] : s->boffx[0];
    double q = floor((v + s->hk) * ia - first + QUAD_MARGIN);
    return q > (double)n ? n : (int)q;
}

/* Loops over the quads (qx_, qy_) whose boundary particles may lie
 * within hk of (x, y, z), and over those particles rb, quad by quad. */
#define FOR_BOUNDARY_QUADS(s, x, y, z)                                                         \
    for (int qy_ = quad_lo(s, y, 1), qy1_ = quad_hi(s, y, (s)->h - 2, 1); qy_ <= qy1_; qy_++)    \
        for (int qx_ = quad_lo(s, x, 0), qx1_ = quad_hi(s, x, (s)->w - 2, 0); qx_ <= qx1_; qx_++)\
            if ((s)->qok[(size_t)qy_ * (size_t)((s)->w - 1) + (size_t)qx_] &&                  \
                quad_near(s, qx_, qy_, x, y, z))

#define FOR_BOUNDARY(s, x, y, z, rb)                                                           \
    FOR_BOUNDARY_QUADS(s, x, y, z)                                                             \
                for (int b_ = 0; b_ < (s)->ky; b_++)                                            \
                    for (int a_ = 0; a_ < (s)->kx; a_++)                                        \
                        if (bpos(s, qx_, qy_, a_, b_, rb), 1)

/* For each column, the highest boundary particle of the quads that
 * FOR_BOUNDARY_QUADS visits from any point of it (-inf: none), so that
 * density_of skips the quad search of a particle hk or more above it:
 * each quad's box test would fail (its z gap alone is hk or more, and
 * rounding is monotone), so the same boundary particles are found; and
 * the highest vertex of the quads er_sph_surface reads from any point of
 * it, so that penalty and move skip the surface of a particle well above
 * it (surface_clear).  The column's x range is widened by a hundredth of
 * hg against the rounding of er_sph_col's division. */
static double vertex_top(const er_sph_sim *s, int cx, int cy)
{
    double x0 = cx > 0 ? floor((cx - 0.01) * s->hg * s->ixstep) : 0.0;
    double x1 = floor((cx + 1.01) * s->hg * s->ixstep) + 1.0;
    double y0 = cy > 0 ? floor((cy - 0.01) * s->hg * s->iystep) : 0.0;
    double y1 = floor((cy + 1.01) * s->hg * s->iystep) + 1.0;
    int i0 = x0 > 0.0 ? (int)x0 : 0, j0 = y0 > 0.0 ? (int)y0 : 0;
    int i1 = cx < s->gw - 1 && x1 < s->w - 1 ? (int)x1 : s->w - 1;
    int j1 = cy < s->gh - 1 && y1 < s->h - 1 ? (int)y1 : s->h - 1;
    double top = -HUGE_VAL;
    for (int j = j0; j <= j1; j++)
        for (int i = i0; i <= i1; i++)
            top = s->zb[er_sph_vi(s, i, j)] > top ? s->zb[er_sph_vi(s, i, j)] : top;
    return top;
}

static void column_tops(er_sph_sim *s)
{
    ER_OMP_FOR()
    for (int64_t c = 0; c < (int64_t)s->gw * s->gh; c++) {
        int cx = (int)(c % s->gw), cy = (int)(c / s->gw);
        int qx0 = cx > 0 ? quad_lo(s, (cx - 0.01) * s->hg, 0) : 0;
        int qy0 = cy > 0 ? quad_lo(s, (cy - 0.01) * s->hg, 1) : 0;
        int qx1 = cx < s->gw - 1 ? quad_hi(s, (cx + 1.01) * s->hg, s->w - 2, 0) : s->w - 2;
        int qy1 = cy < s->gh - 1 ? quad_hi(s, (cy + 1.01) * s->hg, s->h - 2, 1) : s->h - 2;
        double top = -HUGE_VAL;
        for (int qy = qy0; qy <= qy1; qy++)
            for (int qx = qx0; qx <= qx1; qx++) {
                size_t q = er_sph_qi(s, qx, qy);
                if (s->qok[q] && s->bzr[2 * q + 1] > top)
                    top = s->bzr[2 * q + 1];
            }
        s->ctop[2 * c] = top;
        s->ctop[2 * c + 1] = vertex_top(s, cx, cy);
    }
    s->ctop_dirty = 0;
}

/* Whether z lies more than dz above every vertex column c's surface can
 * read: the bilinear surface there is a convex combination of them, so
 * at most their highest plus a few ulps, far below the 1e-6 cells
 * spared. */
static inline int surface_clear(const er_sph_sim *s, int64_t c, double z, double dz)
{
    return z - dz >= s->ctop[2 * c + 1] + 1e-6;
}

static double dist2(const er_sph_particle *a, const double *r)
{
    double dx = a->x - r[0], dy = a->y - r[1], dz = a->z - r[2];
    return dx * dx + dy * dy + dz * dz;
}

/* The fluid part of the density, pair by pair for i < j (each_row): rho
 * sums the kernels' d^3 (poly6 without its constant), which er_sph_sort
 * starts at i's own term; the hits are i's neighbours after it in index
 * order.  density_from_list sums them over i's Verlet list, without a
 * branch, and lists them on the way; this walk sums over the candidates
 * for a particle whose Verlet list overflowed.  Both add the same d^3 in
 * the same order. */
static void density_pairs_walk(er_sph_sim *s, int64_t i, const nb_cursor *cur)
{
    const double h2 = s->hk * s->hk, px = s->xr[i].x, py = s->xr[i].y, pz = s->xr[i].z;
    double sum = s->xr[i].rho;
    FOR_UPPER(cur, i, j) {
        double dx = px - s->xr[j].x, dy = py - s->xr[j].y, dz = pz - s->xr[j].z;
        double d = h2 - (dx * dx + dy * dy + dz * dz);
        if (d > 0.0) {
            double w = d * d * d;
            sum += w;
            s->xr[j].rho += w;
        }
    }
    s->xr[i].rho = sum;
}

/* i's list from its Verlet list, the hits within hk in index order, and
 * its sums, in one pass without a branch: a miss adds d^3 times 0, +-0,
 * which changes no sum (each holds a positive own term). */
static void density_from_list(er_sph_sim *s, int64_t i)
{
    const double h2 = s->hk * s->hk, px = s->xr[i].x, py = s->xr[i].y, pz = s->xr[i].z;
    const int32_t *vl = &s->vl[i * ER_SPH_NB];
    int32_t *nb = &s->nb[i * ER_SPH_NB];
    PREFETCH_ROW(s, s->vl, i, ER_SPH_NB, 0);
    PREFETCH_ROW(s, s->vl + 16, i, ER_SPH_NB, 0); /* a second line: about 20 entries */
    PREFETCH_ROW(s, s->nb, i, ER_SPH_NB, 1);
    int32_t cnt = 0;
    double sum = s->xr[i].rho;
    for (int32_t l = 0; l < s->vln[i]; l++) {
        int64_t j = vl[l];
        double dx = px - s->xr[j].x, dy = py - s->xr[j].y, dz = pz - s->xr[j].z;
        double d = h2 - (dx * dx + dy * dy + dz * dz), hit = (double)(d > 0.0);
        double w = d * d * d * hit;
        nb[cnt] = (int32_t)j;
        cnt += d > 0.0;
        sum += w;
        s->xr[j].rho += w;
    }
    s->nbn[i] = cnt;
    s->xr[i].rho = sum;
}

/* After a sort: i's Verlet list from its cursor, the candidates within
 * hk + the margin (stored without a branch), then its sums from it.  An
 * overflowing list (vln < 0) is walked instead, and keeps the lists from
 * standing past this sub-step (move). */
static void density_build_of(er_sph_sim *s, int64_t i, const nb_cursor *cur)
{
    const double h2 = s->hg * s->hg; /* hg: hk + the margin */
    const double px = s->xr[i].x, py = s->xr[i].y, pz = s->xr[i].z;
    int32_t *vl = &s->vl[i * ER_SPH_NB];
    int64_t cnt = 0;
    PREFETCH_ROW(s, s->vl, i, ER_SPH_NB, 1);
    FOR_UPPER(cur, i, j) {
        double dx = px - s->xr[j].x, dy = py - s->xr[j].y, dz = pz - s->xr[j].z;
        vl[cnt < ER_SPH_NB - 1 ? cnt : ER_SPH_NB - 1] = (int32_t)j;
        cnt += h2 - (dx * dx + dy * dy + dz * dz) > 0.0;
    }
    if (cnt > ER_SPH_NB - 1) {
        s->vln[i] = s->nbn[i] = -1;
        density_pairs_walk(s, i, cur);
        return;
    }
    s->vln[i] = (int32_t)cnt;
    density_from_list(s, i);
}

/* The sub-steps between sorts: the Verlet lists still hold every pair
 * within hk (move). */
static void density_listed_of(er_sph_sim *s, int64_t i, const nb_cursor *cur)
{
    (void)cur;
    density_from_list(s, i);
}

/* A boundary particle (a, b) of quad (qx, qy) as kept in bh: k <= 10, so
 * a and b take 4 bits each; unpacked with shifts, not divisions. */
#define BH_PACK(qx, qy, a, b) (((int64_t)(qy) << 32) | ((int64_t)(qx) << 8) | ((b) << 4) | (a))

/* Density with the boundary particles counted as fluid of volume m / rho0
 * (Akinci 2012); the equation of state clamps rho at rho0 so the free
 * surface does not pull (SPlisHSPlasH TimeStepWCSPH).  Clears the sums of
 * the force and take passes. */
static void density_of(er_sph_sim *s, int64_t i)
{
    const er_sph_particle *pi = &s->p[i];
    const double h2 = s->hk * s->hk;
    double rho = s->mass * s->kw * s->xr[i].rho, rb[3];
    int64_t *bh = &s->bh[i * ER_SPH_NBB];
    int32_t nh = 0;
    PREFETCH_ROW(s, s->bh, i, ER_SPH_NBB, 1);
    PREFETCH_ROW(s, s->bh + 8, i, ER_SPH_NBB, 1);
    if (!(pi->z - s->hk >= s->ctop[2 * s->key[i]])) /* most particles: above the reach of the ground */
    FOR_BOUNDARY(s, pi->x, pi->y, pi->z, rb) {
        double d = h2 - dist2(pi, rb);
        if (d > 0.0) {
            rho += s->mass_b * (s->kw * d * d * d);
            if (nh < ER_SPH_NBB)
                bh[nh] = BH_PACK(qx_, qy_, a_, b_);
            nh++;
        }
    }
    s->bhn[i] = nh <= ER_SPH_NBB ? nh : -1;
    s->xr[i].rho = rho;
    s->pr[i] = s->c0 * s->c0 * (rho > 1.0 ? rho - 1.0 : 0.0);
    s->pq[i] = s->pr[i] / (rho * rho);
    s->irho[i] = 1.0 / rho;
    s->hf[i] = hindered(s, pi->c);
    s->pk[i] = (er_sph_pk){s->xr[i].x, s->xr[i].y, s->xr[i].z, pi->vx, pi->vy, pi->vz, pi->c,
                           s->pq[i], s->irho[i], s->hf[i]};
    s->acc[i] = (er_sph_acc){{0.0, 0.0, 0.0}, 0.0}; /* each_row's sums */
    s->got[i] = 0.0;
    s->svn[i] = 0;
}

/* The terms of fluid pair i < j at squared distance r2 > 0, into t: the
 * force on i (force_pair) and the C the higher settles onto the lower
 * (eq. 16, hindered by f(C) of the lower), as settle_r computes it but
 * without its branches (which way C falls, and whether either carries
 * any, is a coin toss a pair; 0 where settle_r gives 0: C = 0 below). */
HOT_INLINE void pair_terms_r(const er_sph_sim *s, const er_sph_pk *pi, const er_sph_pk *pj,
                             double r, double ir, double *t)
{
    double dx = pi->x - pj->x, dy = pi->y - pj->y, dz = pi->z - pj->z;
    double d = s->hk - r;
    /* spiky dW/dr = -kdw d^2, viscosity Laplacian kdw d (Mueller 2003);
     * the constant factors folded once (sph.c), one division a pair */
    double fp = s->kfp * (pi->pq + pj->pq) * (d * d * ir);
    double fv = s->kfv * d * (pi->irho * pj->irho);
    t[0] = fp * dx + fv * (pj->vx - pi->vx);
    t[1] = fp * dy + fv * (pj->vy - pi->vy);
    t[2] = fp * dz + fv * (pj->vz - pi->vz);
    /* selections as products with 1 and 0, exact for finite numbers: a
     * compiler may turn ?: into a branch, mispredicted half the time */
    double m = (double)(dz > 0.0), n = 1.0 - m;
    double cd = pi->c * m + pj->c * n, fa = pj->hf * m + pi->hf * n, up = dz * (m - n);
    double q = r * s->ihp, sa = 3.0 * q - 2.25 * q * q, sb = 0.75 * (2.0 - q) * (2.0 - q);
    double k = (double)(q < 1.0);
    t[3] = s->ksv * (cd * fa) * (up * ir) * (sa * k + sb * (1.0 - k));
}

HOT_INLINE void pair_terms(const er_sph_sim *s, const er_sph_pk *pi, const er_sph_pk *pj,
                           double r2, double *t)
{
    double r = sqrt(r2);
    pair_terms_r(s, pi, pj, r, 1.0 / r, t);
}

/* Pressure and viscosity between fluid particles i < j with Mueller et
 * al.'s spiky and viscosity kernels, added to i and taken from j (ax..az
 * hold the fluid force until forces_of), and what the higher settles
 * onto the lower added to its give (kept in sv for take_pair).  The
 * pressure takes Monaghan's (1992) symmetric form m (p_i / rho_i^2 +
 * p_j / rho_j^2), not Mueller's (p_i + p_j) / 2 rho_j: the latter is not
 * the gradient of an energy and heats still water (in the bowl of
 * check_sph its kinetic energy grows ten-fold in 6 s), the former lets it
 * settle; the viscosity's m nu lap W (v_j - v_i) / (rho_i rho_j) is
 * symmetric too, so i and j get opposite forces. */
HOT_INLINE void force_pair(er_sph_sim *s, int64_t i, int64_t j, int64_t l, double r2)
{
    (void)l;
    if (r2 == 0.0)
        return;
    const er_sph_pk *pi = &s->pk[i], *pj = &s->pk[j];
    double t[4];
    pair_terms(s, pi, pj, r2, t);
    er_sph_acc *ai = &s->acc[i], *aj = &s->acc[j];
    for (int c = 0; c < 3; c++) {
        ai->f[c] += t[c];
        aj->f[c] -= t[c];
    }
    if (t[3] == 0.0)
        return;
    (pi->z - pj->z > 0.0 ? ai : aj)->give += t[3];
    int32_t k = s->svn[i];
    if (k >= 0 && k < s->ns_keep) {
        s->sv[i * ER_SPH_NS + k] = t[3];
        s->svj[i * ER_SPH_NS + k] = (int32_t)j;
    }
    s->svn[i] = k >= 0 && k < s->ns_keep ? k + 1 : -1;
}

/* What the lower of i < j takes of the v the higher gave (eq. 16),
 * scaled as the giver's loss is (give_scale): got and give match pair by
 * pair. */
static void take(er_sph_sim *s, int64_t i, int64_t j, double v)
{
    if (s->xr[i].z > s->xr[j].z)
        s->got[j] += s->gsc[i] * v;
    else
        s->got[i] += s->gsc[j] * v;
}

/* take() for a pair the force pass could not keep: v computed again, the
 * same function of the same numbers. */
HOT_INLINE void take_pair(er_sph_sim *s, int64_t i, int64_t j, int64_t l, double r2)
{
    (void)l;
    const er_sph_pk *pi = &s->pk[i], *pj = &s->pk[j];
    double t[4] = {0, 0, 0, 0};
    if (r2 != 0.0)
        pair_terms(s, pi, pj, r2, t);
    if (t[3] != 0.0)
        take(s, i, j, t[3]);
}

/* force_pair over i's list, the common case, with i's sums and settling
 * records held in locals (force_pair's stores to j could be i's, as far
 * as the compiler knows): the same sums in the same order. */
static void force_pairs_of(er_sph_sim *s, int64_t i, const nb_cursor *cur)
{
    if (s->nbn[i] < 0) {
        upper_pairs(s, i, cur, force_pair);
        return;
    }
    PREFETCH_ROW(s, s->nb, i, ER_SPH_NB, 0);
    PREFETCH_ROW(s, s->sv, i, ER_SPH_NS, 1);
    PREFETCH_ROW(s, s->svj, i, ER_SPH_NS, 1);
    const er_sph_pk *pi = &s->pk[i];
    const int32_t *nb = &s->nb[i * ER_SPH_NB];
    double f0 = s->acc[i].f[0], f1 = s->acc[i].f[1], f2 = s->acc[i].f[2], give = s->acc[i].give;
    int32_t ns = 0, n = s->nbn[i];
    const int32_t keep = s->ns_keep;
    /* r and 1 / r of every pair first, in a loop of their own: the square
     * roots and divisions of different pairs then overlap, where in the
     * pair loop each waited for its pair's loads */
    double rr[ER_SPH_NB], ri[ER_SPH_NB];
    for (int32_t l = 0; l < n; l++) {
        const er_sph_pk *pj = &s->pk[nb[l]];
        double dx = pi->x - pj->x, dy = pi->y - pj->y, dz = pi->z - pj->z;
        rr[l] = dx * dx + dy * dy + dz * dz;
    }
    for (int32_t l = 0; l < n; l++) {
        rr[l] = sqrt(rr[l]);
        ri[l] = 1.0 / rr[l];
    }
    for (int32_t l = 0; l < n; l++) {
        const er_sph_pk *pj = &s->pk[nb[l]];
        double dz = pi->z - pj->z, t[4];
        if (rr[l] == 0.0)
            continue;
        pair_terms_r(s, pi, pj, rr[l], ri[l], t);
        er_sph_acc *aj = &s->acc[nb[l]];
        f0 += t[0];
        f1 += t[1];
        f2 += t[2];
        aj->f[0] -= t[0];
        aj->f[1] -= t[1];
        aj->f[2] -= t[2];
        /* to the lower one, without a branch: t[3] times 1 or 0, and
         * adding +0 changes no sum */
        double m = (double)(dz > 0.0);
        give += t[3] * m;
        aj->give += t[3] * (1.0 - m);
        /* the last slot takes the zeros and what does not fit: up to
         * keep - 1 kept, more recomputed (take_pairs_of) */
        int32_t at = ns < keep - 1 ? ns : keep - 1;
        s->sv[i * ER_SPH_NS + at] = t[3];
        s->svj[i * ER_SPH_NS + at] = nb[l];
        ns += t[3] != 0.0;
    }
    s->acc[i] = (er_sph_acc){{f0, f1, f2}, give};
    s->svn[i] = ns < keep ? ns : -1;
}

static void take_pairs_of(er_sph_sim *s, int64_t i, const nb_cursor *cur)
{
    if (s->svn[i] < 0) {
        upper_pairs(s, i, cur, take_pair);
        return;
    }
    PREFETCH_ROW(s, s->sv, i, ER_SPH_NS, 0);
    PREFETCH_ROW(s, s->svj, i, ER_SPH_NS, 0);
    for (int32_t k = 0; k < s->svn[i]; k++)
        take(s, i, s->svj[i * ER_SPH_NS + k], s->sv[i * ER_SPH_NS + k]);
}

/* The pair terms of particle i and boundary particle rb of a quad with
 * control factors ke, kd: the force into a, the friction into *fr, and
 * the C settled and the volume eroded into v[0], v[1]. */
static void boundary_pair(const er_sph_sim *s, int64_t i, const double *rb, double ke,
                          double kd, double *a, double *fr, double *v)
{
    const er_sph_particle *pi = &s->p[i];
    double dx = pi->x - rb[0], dy = pi->y - rb[1], dz = pi->z - rb[2];
    double r2 = dx * dx + dy * dy + dz * dz;
    if (!(r2 < s->hk * s->hk) || r2 == 0.0)
        return;
    double r = sqrt(r2), d = s->hk - r;
    /* spiky dW/dr = -kdw d^2, viscosity Laplacian kdw d */
    double fp = s->mass_b * s->pq[i] * s->kdw * d * d / r;
    a[0] += fp * dx;
    a[1] += fp * dy;
    a[2] += fp * dz;
    *fr += s->mu_b * s->s * s->s * (s->kdw * d);
    v[1] += erode_pair(s, pi, r2, r, ke);
    if (pi->c > 0.0)
        v[0] += settle_r(s, pi->c, kd, dz, r);
}

/* The running sums of boundary_force: friction, quad records, totals. */
typedef struct bsum {
    double fr, ero, dep;
    int32_t nq;
} bsum;

/* Keeps quad q's terms v in particle i's records, when not zero. */
static void quad_record(er_sph_sim *s, int64_t i, size_t q, const double *v, bsum *b)
{
    if (v[0] == 0.0 && v[1] == 0.0)
        return;
    assert(b->nq < s->nbq);
    b->dep += v[0];
    b->ero += v[1];
    s->bq[i * s->nbq + b->nq] = (int32_t)q;
    s->bqv[(i * s->nbq + b->nq) * 2] = v[0];
    s->bqv[(i * s->nbq + b->nq) * 2 + 1] = v[1];
    b->nq++;
}

/* boundary_force over the boundary particles the density pass found
 * within hk (bh), quad by quad in its order: the same pairs in the same
 * order as the walk over the quads, without the misses. */
static void listed_boundary(er_sph_sim *s, int64_t i, double *a, bsum *b)
{
    const int64_t *bh = &s->bh[i * ER_SPH_NBB];
    double v[2] = {0, 0}, rb[3], ke = 1.0, kd = 1.0;
    int64_t cq = -1;
    size_t qi = 0;
    for (int32_t h = 0; h < s->bhn[i]; h++) {
        int qx = (int)((bh[h] >> 8) & 0xffffff), qy = (int)(bh[h] >> 32);
        if (bh[h] >> 8 != cq) {
            if (cq >= 0)
                quad_record(s, i, qi, v, b);
            cq = bh[h] >> 8;
            qi = er_sph_qi(s, qx, qy);
            ke = quad_factor(s, s->qero, qx, qy);
            kd = quad_factor(s, s->qdep, qx, qy);
            v[0] = v[1] = 0.0;
        }
        bpos(s, qx, qy, (int)(bh[h] & 15), (int)((bh[h] >> 4) & 15), rb);
        boundary_pair(s, i, rb, ke, kd, a, &b->fr, v);
    }
    if (cq >= 0)
        quad_record(s, i, qi, v, b);
}

/* Boundary forces: pressure mirrored on the boundary particles, the
 * no-slip friction of eqs. 7-8, and what particle i erodes and settles
 * onto each boundary quad this sub-step: kept in its quad records (bq,
 * bqv) for add_quads, so each pair's exchange is computed once, by the
 * particle, for both sides. */
static void boundary_force(er_sph_sim *s, int64_t i, double *a)
{
    const er_sph_particle *pi = &s->p[i];
    bsum b = {0, 0, 0, 0};
    if (s->bhn[i] >= 0)
        listed_boundary(s, i, a, &b);
    else
        FOR_BOUNDARY_QUADS(s, pi->x, pi->y, pi->z) {
            double v[2] = {0, 0}, rb[3];
            const double ke = quad_factor(s, s->qero, qx_, qy_), kd = quad_factor(s, s->qdep, qx_, qy_);
            for (int bb = 0; bb < s->ky; bb++)
                for (int c = 0; c < s->kx; c++) {
                    bpos(s, qx_, qy_, c, bb, rb);
                    boundary_pair(s, i, rb, ke, kd, a, &b.fr, v);
                }
            quad_record(s, i, er_sph_qi(s, qx_, qy_), v, &b);
        }
    s->bqn[i] = b.nq;
    /* friction at most stops the particle within a sub-step */
    double fr = b.fr < 1.0 / s->dt ? b.fr : 1.0 / s->dt; /* fmin, no libm call */
    a[0] -= fr * pi->vx;
    a[1] -= fr * pi->vy;
    a[2] -= fr * pi->vz;
    s->ero[i] = b.ero;
    s->rem[i] = b.dep;
}

/* Eq. 6: penalty force below half a spacing above the terrain. */
static void penalty(const er_sph_sim *s, int64_t i, double *a)
{
    const er_sph_particle *pi = &s->p[i];
    if (surface_clear(s, s->key[i], pi->z, 0.5 * s->s))
        return;
    double gx, gy, zs = er_sph_surface(s, pi->x, pi->y, &gx, &gy);
    double d = zs + 0.5 * s->s - pi->z;
    if (d <= 0.0)
        return;
    double nl = sqrt(gx * gx + gy * gy + 1.0), n[3] = {-gx / nl, -gy / nl, 1.0 / nl};
    double vn = pi->vx * n[0] + pi->vy * n[1] + pi->vz * n[2];
    double f = s->ks * d - s->kd * vn;
    for (int c = 0; c < 3; c++)
        a[c] += f * n[c];
}

/* What donor i gives, scaled so that it gives at most the C it has (the
 * paper's second step of section 4.2). */
static double give_scale(const er_sph_sim *s, int64_t i)
{
    return s->rem[i] > s->p[i].c ? s->p[i].c / s->rem[i] : 1.0;
}

/* What particle i may erode: up to C = Cmax. */
static double take_scale(const er_sph_sim *s, int64_t i)
{
    double room = fmax(s->cmax - s->p[i].c, 0.0) * s->vol;
    return s->ero[i] > room ? room / s->ero[i] : 1.0;
}

/* Particle i's acceleration: gravity, the boundary, the fluid (summed by
 * force_pair), the penalty; and its give and take scales. */
static void forces_of(er_sph_sim *s, int64_t i)
{
    {
        double a[3] = {0, 0, -1.0}; /* g = 1 in model units */
        PREFETCH_ROW(s, s->bh, i, ER_SPH_NBB, 0);
        PREFETCH_ROW(s, s->bh + 8, i, ER_SPH_NBB, 0); /* up to 16 of them */
        PREFETCH_ROW(s, s->bq, i, s->nbq, 1);
        PREFETCH_ROW(s, s->bqv, i, 2 * s->nbq, 1);
        boundary_force(s, i, a);
        for (int c = 0; c < 3; c++)
            a[c] += s->acc[i].f[c];
        penalty(s, i, a);
        s->rem[i] += s->acc[i].give;
        s->gsc[i] = give_scale(s, i);
        s->tsc[i] = take_scale(s, i);
        s->ax[i] = a[0];
        s->ay[i] = a[1];
        s->az[i] = a[2];
    }
}

static void exchange_of(er_sph_sim *s, int64_t i)
{
    const er_sph_particle *pi = &s->p[i];
    double c = pi->c - s->gsc[i] * s->rem[i] + s->got[i] + s->tsc[i] * s->ero[i] / s->vol;
    s->cnew[i] = fmax(c, 0.0);
}

/* Eqs. 10 and 20 per quad: deposits minus erosion [cells^3], from the
 * particles' quad records in particle order (serial: a fixed order for
 * any thread count; a few records a particle near the ground, none above
 * it), each record scaled as the particle's own change is (give_scale,
 * take_scale), so what the quads gain the particles lose. */
void er_sph_quads_flush(er_sph_sim *s)
{
    if (s->quads_pending)
        add_quads(s, s->quads_pending);
    s->quads_pending = 0;
}

static void add_quads(er_sph_sim *s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const int32_t *bq = &s->bq[i * s->nbq];
        const double *bv = &s->bqv[i * s->nbq * 2];
        for (int32_t l = 0; l < s->bqn[i]; l++)
            s->qd[bq[l]] += s->gsc[i] * bv[2 * l] * s->vol - s->tsc[i] * bv[2 * l + 1];
    }
}

static int in_wall(const er_sph_sim *s, double x, double y)
{
    if (!s->wall)
        return 0;
    int i = (int)floor(x * s->ixstep), j = (int)floor(y * s->iystep);
    for (int b = 0; b <= 1; b++)
        for (int a = 0; a <= 1; a++) {
            int u = i + a < 0 ? 0 : i + a >= s->w ? s->w - 1 : i + a;
            int v = j + b < 0 ? 0 : j + b >= s->h ? s->h - 1 : j + b;
            if (s->wall[er_sph_vi(s, u, v)])
                return 1;
        }
    return 0;
}

/* Keeps particle p inside a closed edge: 1 when it left an open one. */
static int edges(const er_sph_sim *s, er_sph_particle *p)
{
    double hi[2] = {s->xmax, s->ymax};
    double *x[2] = {&p->x, &p->y}, *v[2] = {&p->vx, &p->vy};
    for (int c = 0; c < 2; c++) {
        if (*x[c] >= 0.0 && *x[c] <= hi[c])
            continue;
        if (s->open)
            return 1;
        *x[c] = fmin(fmax(*x[c], 0.0), hi[c]);
        *v[c] = 0.0;
    }
    return 0;
}

/* The new C (exchange_of), leapfrog kick and drift, then walls, edges
 * and the terrain surface, of particles a..b-1 (each_row's post, after
 * their take pass); what account and the lists need of them into slot
 * (max and | of the slots are exact in any order). */
static void move_rows(er_sph_sim *s, int64_t a, int64_t b, int slot)
{
    const int64_t gone = (int64_t)s->gw * s->gh;
    er_sph_moved m = {0.0, 0.0, 0, 0, 0};
    for (int64_t i = a; i < b; i++) {
        er_sph_particle *p = &s->p[i];
        double ox = p->x, oy = p->y;
        exchange_of(s, i);
        p->c = s->cnew[i];
        p->vx += s->dt * s->ax[i];
        p->vy += s->dt * s->ay[i];
        p->vz += s->dt * s->az[i];
        p->x += s->dt * p->vx;
        p->y += s->dt * p->vy;
        p->z += s->dt * p->vz;
        if (edges(s, p)) {
            s->key[i] = gone;
            m.left = 1;
            continue;
        }
        if (in_wall(s, p->x, p->y)) {
            p->x = ox;
            p->y = oy;
            p->vx = p->vy = 0.0;
        }
        int64_t col = (int64_t)er_sph_col(s, p->y, s->gh) * s->gw + er_sph_col(s, p->x, s->gw);
        double gx, gy, zs = surface_clear(s, col, p->z, -0.5 * s->s)
                                ? p->z : er_sph_surface(s, p->x, p->y, &gx, &gy);
        /* a last guard only: a particle pushed back up to the surface from
         * inside the penalty zone would carry the spring's energy with it */
        if (p->z < zs - 0.5 * s->s) {
            double nl = sqrt(gx * gx + gy * gy + 1.0), n[3] = {-gx / nl, -gy / nl, 1.0 / nl};
            double vn = p->vx * n[0] + p->vy * n[1] + p->vz * n[2];
            p->z = zs;
            if (vn < 0.0) {
                p->vx -= vn * n[0];
                p->vy -= vn * n[1];
                p->vz -= vn * n[2];
            }
        }
        s->key[i] = col;
        s->xr[i].x = p->x;
        s->xr[i].y = p->y;
        s->xr[i].z = p->z;
        double dx = p->x - s->ox[i], dy = p->y - s->oy[i], dz = p->z - s->oz[i];
        double d2 = dx * dx + dy * dy + dz * dz;
        m.moved = d2 > m.moved ? d2 : m.moved;
        m.stale |= s->vln[i] < 0;
        double v = sqrt(p->vx * p->vx + p->vy * p->vy + p->vz * p->vz);
        m.bad |= !isfinite(v) || !isfinite(p->z) || !isfinite(p->c);
        m.vmax = v > m.vmax ? v : m.vmax;
    }
    s->mv[slot] = m;
}

/* The slots of move_rows combined (max and |), the lists' fate, what
 * left through open edges (serial, in index order) and the checks. */
static er_status account(er_sph_sim *s, int64_t step, er_budget *bud, er_error *err)
{
    er_sph_moved m = {0.0, 0.0, 0, 0, 0};
    for (int k = 0; k <= s->gh / 2; k++) {
        const er_sph_moved *q = &s->mv[k];
        m.moved = q->moved > m.moved ? q->moved : m.moved;
        m.vmax = q->vmax > m.vmax ? q->vmax : m.vmax;
        m.stale |= q->stale;
        m.left |= q->left;
        m.bad |= q->bad;
    }
    s->keys_fresh = 1; /* the sort's set_keys, one parallel loop and barrier fewer */
    /* Two particles within hk now were within hk + 2 max|moved| at the
     * build: inside the margin while each moved less than half of it (a
     * hundredth spare against rounding). */
    double half = 0.49 * ER_SPH_MARGIN * s->hk;
    s->lists_ok = !m.stale && !m.left && m.moved < half * half;
    const int64_t gone = (int64_t)s->gw * s->gh;
    for (int64_t i = 0; i < s->n && m.left; i++)
        if (s->key[i] == gone) {
            bud->water_left += s->vol * s->L * s->iarea;
            bud->left_map += s->p[i].c * s->vol * s->L * s->iarea;
        }
    if (m.bad)
        return er_fail(err, ER_ENUMERIC, "sph: non-finite particle at step %lld",
                       (long long)step);
    /* The weakly compressible bound (sph.c check_sound_speed); under it a
     * particle moves at most 0.2 c0 dt <= 0.08 hk a sub-step, so the
     * acoustic CFL holds too. */
    if (m.vmax > ER_SPH_MACH * s->c0)
        return er_fail(err, ER_ENUMERIC, "sph: a particle reached %.4g m/s at step %lld, more "
                       "than %g times sph.sound_speed (%.4g m/s): the water compresses more "
                       "than the method allows; raise sph.sound_speed", m.vmax * s->L / s->T,
                       (long long)step, ER_SPH_MACH, s->c0 * s->L / s->T);
    return ER_OK;
}

/* The constant factors of the fluid pair terms (pair_terms). */
static void pair_constants(er_sph_sim *s)
{
    s->kfp = s->mass * s->kdw;
    s->kfv = s->nu * s->mass * s->kdw;
    s->ksv = s->vol * s->vs0 * s->dt * s->ksp;
    s->ihp = 2.0 / s->hk;
}

er_status er_sph_substep(er_sph_sim *s, int64_t step, er_budget *bud, er_error *err)
{
    pair_constants(s);
    if (s->ctop_dirty)
        column_tops(s);
    if (s->lists_ok) {
        each_row(s, 1, density_listed_of, density_start, NULL);
    } else {
        er_sph_sort(s);
        each_row(s, 0, density_build_of, NULL, NULL);
    }
    each_row(s, 1, force_pairs_of, density_of, NULL);
    each_row(s, 1, take_pairs_of, forces_of, move_rows);
    /* added by the next pass (each_row) or er_sph_quads_flush, for the
     * particles of this sub-step: a sort may drop some before */
    s->quads_pending = s->n;
    return account(s, step, bud, err);
}
