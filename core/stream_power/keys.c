/*
 * The stream-power model's recipe section: its keys' places in
 * er_stream_power_params, types, ranges and defaults (core/keys.h; the
 * registry, core/models.h, puts them under the model's name).
 *
 * The defaults are the parameters of fastscapelib's mountain example and
 * of the side-by-side harness (dt 1000 yr, U 1 mm/yr, K_f 1e-4, m 0.4,
 * n 1, K_d 0.01 m^2/yr): on a map of 10 m cells 0..1000 m high, 250 steps
 * (250,000 years) turn noise into a drainage network.  The ranges stop
 * typos: m and n span the published values (m/n about 0.3-0.7, n 0.5-4);
 * K_f up to 1 and K_d up to 1e6 m^2/yr are orders of magnitude above any
 * landscape's.
 */
#include <stddef.h>

#include "../keys.h"
#include "../models.h"

#define ER_KEY_BASE er_stream_power_params

static const char *const edge_names[] = {"all",   "west",      "east",        "north",
                                         "south", "west_east", "north_south", NULL};

static const char *const routing_names[] = {"d8", "rho8", "random", NULL};
static const char *const level_names[] = {"input", "follow", NULL};
static const char *const depression_names[] = {"lakes", "breach", "drain", NULL};

_Static_assert(sizeof(er_sp_edges) == sizeof(int), "enum size");
_Static_assert(sizeof(er_sp_routing) == sizeof(int), "enum size");
_Static_assert(sizeof(er_sp_base_level) == sizeof(int), "enum size");
_Static_assert(sizeof(er_sp_depressions) == sizeof(int), "enum size");

static const er_key keys[] = {
    ER_INT("steps", steps, 0, 0, 1e9, 250),
    ER_NUM("dt", dt, ER_KEY_MIN_OPEN, 0, 1e9, 1000.0),
    ER_NUM("uplift", uplift, 0, 0, 1, 0.001),
    ER_NUM("k", k, 0, 0, 1, 1e-4),
    ER_NUM("m", m, 0, 0, 2, 0.4),
    ER_NUM("n", n, 0, 0.5, 4, 1.0),
    ER_NUM("kd", kd, 0, 0, 1e6, 0.01),
    ER_NUM("g", g, 0, 0, 100, 0.0),
    ER_ENUM("boundary", boundary, edge_names, ER_SP_EDGES_ALL),
    ER_NUM("channel_head", channel_head, ER_KEY_LATER, 0, 1e6, 0.0),
    ER_NUM("sc", sc, ER_KEY_LATER, 0, 10, 0.0),
    ER_ENUM_LATER("routing", routing, routing_names, ER_SP_ROUTE_D8),
    ER_NUM("routing_spread", routing_spread, ER_KEY_LATER, 0, 0.9, 0.4),
    ER_ENUM_LATER("base_level", base_level, level_names, ER_SP_LEVEL_INPUT),
    ER_NUM("fan_slope", fan_slope, ER_KEY_LATER, 0, 1, 0.0),
    ER_NUM("lithology", lithology, ER_KEY_LATER, 0, 0.9, 0.0),
    ER_NUM("lithology_scale", lithology_scale, ER_KEY_MIN_OPEN | ER_KEY_LATER, 0, 1e7, 1000.0),
    ER_NUM("channel_width", channel_width, ER_KEY_LATER, 0, 1e4, 0.0),
    ER_NUM("width_exponent", width_exponent, ER_KEY_LATER, 0, 1, 0.5),
    ER_ENUM_LATER("depressions", depressions, depression_names, ER_SP_DEPR_LAKES),
    ER_NUM("breach_grade", breach_grade, ER_KEY_MIN_OPEN | ER_KEY_LATER, 0, 0.1, 1e-4),
};

const er_key *er_stream_power_keys(size_t *n)
{
    *n = sizeof keys / sizeof keys[0];
    return keys;
}
