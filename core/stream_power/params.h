/*
 * The stream-power model's recipe section as a struct (core/params.h
 * includes it: er_params.stream_power).  Its keys are in
 * core/stream_power/keys.c; the model is core/stream_power/sp.c.
 */
#ifndef ER_STREAM_POWER_PARAMS_H
#define ER_STREAM_POWER_PARAMS_H

#include <stdint.h>

/* Which map edges are base level (their cells held fixed, where rivers
 * leave); the valid cells beside nodata are base level whatever this says. */
typedef enum er_sp_edges {
    ER_SP_EDGES_ALL = 0,
    ER_SP_EDGES_WEST,
    ER_SP_EDGES_EAST,
    ER_SP_EDGES_NORTH,
    ER_SP_EDGES_SOUTH,
    ER_SP_EDGES_WEST_EAST,
    ER_SP_EDGES_NORTH_SOUTH
} er_sp_edges;

/* How a cell picks its receiver (core/stream_power/route.c). */
typedef enum er_sp_routing {
    ER_SP_ROUTE_D8 = 0, /* steepest descent over the 8 neighbours */
    ER_SP_ROUTE_RHO8,   /* Fairfield and Leymarie 1991: diagonal distances drawn per cell */
    ER_SP_ROUTE_RANDOM  /* the 8 slopes weighted by factors drawn per cell */
} er_sp_routing;

/* The heights of the base-level cells of the edges. */
typedef enum er_sp_base_level {
    ER_SP_LEVEL_INPUT = 0, /* held at their input heights */
    ER_SP_LEVEL_FOLLOW     /* lowered each step to their inward neighbour where it is lower */
} er_sp_base_level;

/* What becomes of a closed depression's pit (core/stream_power/breach.c). */
typedef enum er_sp_depressions {
    ER_SP_DEPR_LAKES = 0, /* a lake until its sill wears down or sediment fills it */
    ER_SP_DEPR_BREACH,    /* its outlet cut down each step so that the pit drains */
    ER_SP_DEPR_DRAIN      /* cut right after each step's routing, and after the last step */
} er_sp_depressions;

/* Uplift against fluvial incision and hillslope creep over geologic time:
 * dh/dt = U - K A^m S^n + (G / A) Q_s + K_d lap(h) (core/stream_power/sp.c). */
typedef struct er_stream_power_params {
    int64_t steps;      /* number of time steps, >= 0 */
    double dt;          /* [yr] time step */
    double uplift;      /* [m/yr] U, on every cell but base level */
    double k;           /* [m^(1-2m)/yr] erodibility K_f, with A in m^2 */
    double m;           /* drainage-area exponent */
    double n;           /* slope exponent */
    double kd;          /* [m^2/yr] hillslope diffusivity K_d */
    double g;           /* deposition coefficient G (Yuan et al. 2019); 0: detachment-limited */
    er_sp_edges boundary;
    double channel_head;   /* [m] a_c: no incision where the specific area A / b is below */
    double sc;             /* critical slope S_c of nonlinear creep; 0: linear creep */
    er_sp_routing routing;
    double routing_spread; /* "random": the weights' spread a, 1 +- a */
    er_sp_base_level base_level;
    double fan_slope;      /* slope of a filled lake's floor up from its outlet; 0: level */
    double lithology;      /* relative spread of the rock's erodibility, 0: uniform */
    double lithology_scale; /* [m] the largest wavelength of that spread */
    double channel_width;  /* [m] w_1: a channel's width at 1 km^2 drainage area; 0: a cell */
    double width_exponent; /* b in w = w_1 (A / 1 km^2)^b */
    er_sp_depressions depressions;
    double breach_grade;   /* [m/m] the fall of a breached path's floor from its pit */
} er_stream_power_params;

/* What the plan derives from the section on a map (er_plan.own): nothing
 * beyond the common plan; a member because C has no empty struct. */
typedef struct er_stream_power_derived {
    int unused;
} er_stream_power_derived;

#endif
