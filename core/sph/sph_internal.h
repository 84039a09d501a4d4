/*
 * SPH erosion (Kristof, Benes, Krivanek and Stava 2009, Hydraulic erosion
 * using smoothed particle hydrodynamics): the simulation state shared by
 * core/sph/.  Everything here is in model units: lengths in L (the shorter
 * side of a cell in metres; columns lie xstep and rows ystep apart, both 1
 * on square cells), times in T = sqrt(L / g), so g = 1 and the rest
 * density rho0 = 1 (core/sph/sph.c).  Positions are in L; a vertex or quad
 * index along a row is the position over xstep, down the rows over ystep.
 */
#ifndef ER_SPH_INTERNAL_H
#define ER_SPH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../drive.h"
#include "../plan.h"
#include "state.h"

#define ER_SPH_NBB 32 /* boundary particles listed per particle */
#define ER_SPH_NB 64 /* neighbour list entries per particle (~16 later ones in water at rest) */
#define ER_SPH_NS 32 /* settling pair records per particle (bench: at most 28, most 0-10) */
#define ER_SPH_MARGIN 0.15 /* Verlet list margin, a fraction of hk (step.c) */
/* The weakly compressible water (sph.c check_sound_speed): the plan needs
 * sph.sound_speed^2 >= g H / ER_SPH_COMPRESSION for the water's largest
 * drop H, and a run fails when a particle's speed passes ER_SPH_MACH
 * sound speeds (its compression brought to rest, M^2 / 2, twice that). */
#define ER_SPH_COMPRESSION 0.01
/* sph.sound_speed's default, and the least a null one becomes: the drops
 * of up to 4 cells it serves are the common case */
#define ER_SPH_SOUND_SPEED 20.0
#define ER_SPH_MACH 0.2
/* sph.spacing's default, and the finest an "auto" one becomes (a lake that
 * fits at it runs as with the number); the coarsest any spacing may be,
 * "auto" too (sph.c auto_spacing) */
#define ER_SPH_SPACING 0.5
#define ER_SPH_SPACING_MAX 4.0

typedef struct er_sph_particle {
    double x, y, z;    /* [cells] x along a row, y down the rows, z up */
    double vx, vy, vz; /* [cells / T] */
    double c;          /* solid volume fraction C carried (paper section 4) */
} er_sph_particle;

/* What the fluid pair pass reads of a particle, in one record (a pair
 * touches two records, not ten arrays), and what it sums for it. */
typedef struct er_sph_pk {
    double x, y, z, vx, vy, vz, c; /* as er_sph_particle */
    double pq, irho, hf;           /* p / rho^2, 1 / rho, f(C) of eq. 17 */
} er_sph_pk;

/* A sorted particle's position where the density pass sees it and its
 * density sum there, in one record: a listed pair reads one cache line,
 * not four arrays. */
typedef struct er_sph_xr {
    double x, y, z; /* [cells] */
    double rho;     /* the density (step.c density_of), the pair sums' d^3 before it */
} er_sph_xr;

typedef struct er_sph_acc {
    double f[3]; /* fluid force */
    double give; /* C it settles onto its neighbours */
} er_sph_acc;

/* What the move found in a run of rows (step.c move_rows). */
typedef struct er_sph_moved {
    double moved;   /* [cells^2] the largest squared distance from a list's build */
    double vmax;    /* [cells / T] the largest speed */
    int stale;      /* a Verlet list overflowed */
    int left;       /* a particle left through an open edge */
    int bad;        /* a particle not finite */
} er_sph_moved;

/* A row of neighbour grid columns and its particle count (step.c row_order). */
typedef struct er_sph_row {
    int64_t w;
    int cy;
} er_sph_row;

typedef struct er_sph_sim {
    int w, h;
    const uint8_t *wall;   /* 1 = nodata vertex; NULL = none */
    double L, T;           /* [m], [s] the model's length and time units */
    double xstep, ystep;   /* [L] a cell's sides: columns xstep apart, rows ystep apart */
    double ixstep, iystep; /* their inverses: a position times them is a vertex index */
    double area, iarea;    /* [L^2] a cell's area xstep ystep, and 1 / it */
    double xmax, ymax;     /* [L] the last column's and row's position */
    double s, hk;          /* [cells] particle spacing and kernel support h = 2s */
    double vol;            /* [cells^3] particle volume s^3 */
    double mass;           /* particle mass: the lattice density at spacing s is rho0 = 1 */
    double mass_b;         /* boundary particle mass (core/sph/sph.c boundary_mass) */
    double c0, nu, mu_b;   /* sound speed, viscosity, boundary friction */
    double kw, kdw;        /* poly6 and spiky/viscosity kernel coefficients */
    double ksp;            /* the cubic spline's 1 / (pi h'^4), h' = hk / 2 */
    double kfp, kfv, ksv;  /* m kdw, nu m kdw, vol vs0 dt ksp: the fluid pair terms' factors */
    double ihp;            /* 1 / h' */
    double ke, tauc;       /* eq. 10 */
    double vs0, cmax;      /* eq. 17: settling speed, largest C */
    double ks, kd;         /* eq. 6 penalty stiffness and damping */
    double dt;             /* [T] sub-step */
    int kx, ky;            /* boundary particles along a quad's sides (xstep / kx ~ s) */
    double boffx[16], boffy[16]; /* [quads] (a + 0.5) / k, their offsets in a quad (k <= 15) */
    int open;              /* map edges open */
    double *zb;            /* [cells] working heights, w * h vertices */
    double *dz;            /* [cells] change since the start */
    double *dep;           /* [cells] deposited height, summed over events */
    float *flow, *wear;    /* [m] er_layers' flow and wear, accumulated in place
                            * (state arrays ER_STATE_SPH_FLOW, _WEAR); NULL = not kept */
    double *qd;            /* [cells^3] volume change of each quad this step */
    int64_t quads_pending; /* > 0: the last sub-step's quad records, of its this many
                            * particles, are not in qd yet (er_sph_quads_flush) */
    double *bz;            /* [cells] boundary particle heights, k*k per quad */
    double *bzr;           /* [cells] lowest and highest of them, 2 per quad */
    uint8_t *qok;          /* quad (w-1)*(h-1): 1 = all four vertices valid */
    /* Control maps (core/controls.h) per quad, the smallest of its four
     * corners: erosion times (1 - hardness) * mask, deposition times mask;
     * NULL = no map (1).  A hard or masked vertex thus keeps every quad
     * around it from lowering (or changing) it. */
    double *qero, *qdep;
    double *srccum;        /* [m/s] w*h+1 running sums of the source map, row-major; NULL = none */
    er_sph_particle *p, *tmp;
    int64_t n, cap;
    double *pr, *ax, *ay, *az;
    double *pq, *irho;     /* p / rho^2 and 1 / rho of each particle */
    double *rem;           /* C each particle gives away this sub-step (settling, deposition) */
    double *hf;            /* f(C) of eq. 17 of each particle this sub-step */
    double *gsc, *tsc;     /* the scales of what it gives and erodes (step.c give_scale,
                            * take_scale), set once its rem and ero are summed */
    double *ero;           /* [cells^3] erosion each particle takes this sub-step */
    double *cnew;
    er_sph_pk *pk;         /* each particle's record for the pair passes */
    er_sph_acc *acc;       /* and its sums there (step.c each_row) */
    double *got;           /* C each particle takes from its fluid neighbours this sub-step */
    double hg;             /* [cells] hk + the Verlet margin: the grid's side, so that a
                            * list's pairs lie in adjacent columns */
    int gw, gh;            /* columns of the neighbour grid, side hg */
    er_sph_moved *mv;      /* gh / 2 + 1: the move's findings, a run of rows each */
    er_sph_row *rord;      /* 2 (gh / 2 + 2): each_row's order of the even rows, then of
                            * the odd ones and -1 (step.c row_order) */
    int64_t *start;        /* gw*gh + 1 offsets into p, sorted by column then index */
    double *ctop;          /* [cells] per column, two: the highest boundary particle its
                            * particles' quad search can reach, and the highest
                            * vertex their surface can (step.c column_tops) */
    int ctop_dirty;        /* 1: bz changed since ctop was set */
    int64_t *key;          /* each particle's column (gw*gh: gone), set by er_sph_sort */
    int keys_fresh;        /* 1: move set every key since, so er_sph_sort need not */
    er_sph_xr *xr;         /* each sorted particle's position and density: the
                            * candidate loops read 32 contiguous bytes a particle,
                            * not the 56-byte records */
    /* Neighbour lists, built by the density pass and read by the force and
     * exchange passes of the same sub-step: up to ER_SPH_NB indices per
     * particle (those after it within hk, in index order); nbn[i] < 0
     * when particle i had more (those passes then walk its columns). */
    int32_t *nb, *nbn;
    /* Verlet lists (step.c density_build_of): the particles after each
     * within hk + ER_SPH_MARGIN at the last sort, in index order, up to
     * ER_SPH_NB - 1 (vln[i] < 0: more), and the positions then (ox..oz).
     * They stand while no particle has moved half the margin since, none
     * left and none overflowed (lists_ok); er_sph_sort clears lists_ok, so
     * each step starts from a sort and fresh lists. */
    int32_t *vl, *vln;
    double *ox, *oy, *oz;
    int lists_ok;
    /* The fluid pairs i < j between which C settles this sub-step (either
     * way: the higher gives), kept by i's force pass for the take pass:
     * up to ns_keep - 1 a particle, svn[i] of them (-1: more, recomputed),
     * svj the j, sv the C, rows ER_SPH_NS apart.  ns_keep is ER_SPH_NS;
     * tests lower it so that the recompute path runs. */
    int32_t *svj, *svn;
    int32_t ns_keep;
    double *sv;
    int64_t nb_cap;        /* particles the lists have room for */
    /* What each particle exchanged with each boundary quad this sub-step,
     * summed by the particle's force pass and added to qd in particle
     * order afterwards: up to nbq quads a particle (all its boundary
     * quads can hold), bqn[i] of them used, bq their indices, bqv two per
     * quad: the C settled onto it (eq. 20) and the volume eroded (eq. 10),
     * before the particle's give and take scales. */
    int nbq;
    int32_t *bq, *bqn;
    double *bqv;
    /* The boundary particles within hk of each particle, found by the
     * density pass for the force pass: up to ER_SPH_NBB, bhn[i] of them
     * (-1: more, the force pass walks the quads), each its quad and its
     * place there packed in one number (step.c BH_PACK). */
    int64_t *bh;
    int32_t *bhn;
    double *pending;       /* [cells^3] source volume not yet emitted, per source, the
                            * source map's last (ER_MAX_SOURCES + 1 slots) */
} er_sph_sim;

/* The index of vertex (x, y), of quad (qx, qy), and the vertex count. */
static inline size_t er_sph_vi(const er_sph_sim *s, int x, int y)
{
    return (size_t)y * (size_t)s->w + (size_t)x;
}

static inline size_t er_sph_qi(const er_sph_sim *s, int qx, int qy)
{
    return (size_t)qy * (size_t)(s->w - 1) + (size_t)qx;
}

static inline size_t er_sph_nv(const er_sph_sim *s)
{
    return (size_t)s->w * (size_t)s->h;
}

/* The model's length unit L [m] and a cell's sides in it for cells of
 * cx x cy metres: L the shorter side, *ax = cx / L and *ay = cy / L (one
 * of them 1).  Cells within 1e-6 of square are square: ax = ay = 1 and
 * L = cx, so every product and quotient by them is exact. */
void er_sph_axes(double cx, double cy, double *L, double *ax, double *ay);

/* Kernels, support hk (Mueller et al. 2003, the paper's section 3.1):
 * poly6 W (of r^2) for the density, the spiky kernel's dW/dr for the
 * pressure, the viscosity kernel's Laplacian for viscosity and boundary
 * friction (eq. 8); and |dW/dr| of the cubic spline as F of eq. 16, the
 * kernel the paper names there. */
double er_sph_w(const er_sph_sim *s, double r2);
double er_sph_dw(const er_sph_sim *s, double r);
double er_sph_lapv(const er_sph_sim *s, double r);
double er_sph_spline_f(const er_sph_sim *s, double r);
/* Sets s->kw, s->kdw and s->ksp from s->hk. */
void er_sph_kernel_constants(er_sph_sim *s);

/* Places the boundary particles of quads (qx0..qx1, qy0..qy1) on the
 * terrain (again, where it changed). */
void er_sph_boundary_heights(er_sph_sim *s, int qx0, int qy0, int qx1, int qy1);

/* Bilinear terrain height [L] at (x, y) [L] and its gradient (per L). */
double er_sph_surface(const er_sph_sim *s, double x, double y, double *gx, double *gy);

/* Set-up (allocation, the initial water, the first sort), one step
 * (sources, sub-steps, terrain update) and the destructor (accepts a
 * zeroed sim) of a run of plan on t; the run is er_sph_steps, the unit
 * tests drive these to look at the particles. */
er_status er_sph_init(er_sph_sim *s, const er_plan *plan, const er_terrain *t, er_budget *bud,
                      er_error *err);
er_status er_sph_step(er_sph_sim *s, const er_plan *plan, int64_t step, er_budget *bud,
                      er_error *err);
void er_sph_free(er_sph_sim *s);

/* Sorts the particles into the neighbour grid's columns (a stable counting
 * sort), each column by height (a stable insertion sort), and drops those
 * marked gone; er_sph_col is the column of coordinate v of n columns. */
void er_sph_sort(er_sph_sim *s);
int er_sph_col(const er_sph_sim *s, double v, int n);

/* One sub-step (core/sph/step.c): sort, density, forces, sediment, move.
 * Adds water and sediment leaving open edges to bud (metres * cells).  Its
 * quads' changes reach qd in the next sub-step or er_sph_quads_flush. */
er_status er_sph_substep(er_sph_sim *s, int64_t step, er_budget *bud, er_error *err);

/* Adds the last sub-step's quad records to qd, if not yet done (the next
 * sub-step does it beside its first pass). */
void er_sph_quads_flush(er_sph_sim *s);

/* Applies the quads' volume changes to the vertices with slippage (paper
 * section 4.6) and clears them; adds to bud's eroded and deposited. */
void er_sph_terrain_update(er_sph_sim *s, er_budget *bud);

/* The model's entry points (its er_model_ops, core/sph/resume.c). */
er_status er_sph_plan(er_plan *plan, const er_terrain *t, er_error *err);
extern const er_model_steps er_sph_steps;
size_t er_sph_bytes_per_cell(const er_params *p);
size_t er_sph_bytes_fixed(const er_params *p, char *what, size_t n);

/* A state's model section (state.h) as the model reads it. */
typedef struct er_sph_section {
    int64_t n;                   /* particles */
    const er_sph_particle *particles;
    const double *zb, *dz, *dep; /* width * height each [cells] */
    int n_pending;               /* source slots */
    const double *pending;       /* [cells^3] per slot */
} er_sph_section;

/* Fills *q from r->extra: 0, or -1 when r has no section or its lengths
 * do not fit its counts and r's map. */
int er_sph_section_of(const er_run_state *r, er_sph_section *q);

/* The ops' check_resume (core/models.h): a state of this run at a step
 * boundary, with its particles and every value it holds (resume.c). */
er_status er_sph_check_resume(const er_plan *plan, const er_terrain *t, const er_run_state *r,
                              const er_layers *keep, er_error *err);
/* The ops' height_bound (core/models.h). */
void er_sph_height_bound(const er_plan *plan, const er_controls *c, er_height_range *r);

#endif
