/*
 * What the stream-power suites share (check_stream_power.c,
 * check_sp_land.c): a map with its layers and controls, a run of it, and
 * value noise to run on.
 */
#ifndef ER_SP_MAP_H
#define ER_SP_MAP_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/backend.h"
#include "../../core/model.h"
#include "../../core/models.h"
#include "../../core/plan.h"

static inline er_params sp_params(void)
{
    er_params p;
    er_params_default(&p);
    p.model = ER_MODEL_STREAM_POWER;
    return p;
}

/* Rivers that deposit (G = 1, K 1e-3) without uplift or creep: the
 * recipe of the tests that fill closed basins. */
static inline er_params sp_fill_params(int steps, double dt)
{
    er_params p = sp_params();
    p.stream_power.steps = steps;
    p.stream_power.dt = dt;
    p.stream_power.uplift = 0.0;
    p.stream_power.k = 1e-3;
    p.stream_power.kd = 0.0;
    p.stream_power.g = 1.0;
    return p;
}

/* A map, its layers and what a run reports. */
typedef struct map {
    int w, h;
    float *z, *z0, *water, *sed, *flow, *wear;
    uint8_t *wall;
    er_controls ctl;
    er_terrain t;
    er_budget b;
} map;

static inline map map_new(int w, int h, double cell)
{
    map m;
    memset(&m, 0, sizeof m);
    m.w = w;
    m.h = h;
    size_t n = (size_t)w * (size_t)h;
    m.z = calloc(n, sizeof(float));
    m.z0 = calloc(n, sizeof(float));
    m.water = calloc(n, sizeof(float));
    m.sed = calloc(n, sizeof(float));
    m.flow = calloc(n, sizeof(float));
    m.wear = calloc(n, sizeof(float));
    ck_assert(m.z && m.z0 && m.water && m.sed && m.flow && m.wear);
    m.t = (er_terrain){w, h, m.z, NULL, cell, cell, NULL};
    return m;
}

static inline void map_free(map *m)
{
    free(m->z);
    free(m->z0);
    free(m->water);
    free(m->sed);
    free(m->flow);
    free(m->wear);
    free(m->wall);
    free((void *)(uintptr_t)m->ctl.hardness);
    free((void *)(uintptr_t)m->ctl.mask);
    free((void *)(uintptr_t)m->ctl.rain);
    free((void *)(uintptr_t)m->ctl.uplift);
}

static inline size_t cells(const map *m) { return (size_t)m->w * (size_t)m->h; }

/* Keeps the heights as they are now as the input. */
static inline void map_keep(map *m) { memcpy(m->z0, m->z, cells(m) * sizeof(float)); }

static inline er_status map_run(map *m, const er_params *p, const er_run_hooks *hk, er_error *e)
{
    memcpy(m->z, m->z0, cells(m) * sizeof(float));
    er_layers l = {m->water, m->sed, m->flow, m->wear};
    return er_run_cpu(p, &m->t, NULL, &(er_run_opts){&l, NULL, hk, &m->b}, e);
}

static inline void map_run_ok(map *m, const er_params *p)
{
    er_error e = {{0}};
    er_status st = map_run(m, p, NULL, &e);
    ck_assert_msg(st == ER_OK, "run failed: %s", e.msg);
}

/* Value noise, 6 octaves, from an integer hash: heights 0..relief. */
static inline double lattice(uint32_t x, uint32_t y, uint32_t seed)
{
    uint32_t h = x * 0x9E3779B1u ^ (y + 0x7F4A7C15u) * 0x85EBCA77u ^ seed * 0xC2B2AE3Du;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    return (double)(h & 0xFFFFFF) / (double)0xFFFFFF;
}

static inline void noise(map *m, uint32_t seed, double relief)
{
    double lo = INFINITY, hi = -INFINITY;
    double *v = calloc(cells(m), sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (int y = 0; y < m->h; y++)
        for (int x = 0; x < m->w; x++) {
            double s = 0.0, amp = 1.0;
            for (int o = 0, c = 4; o < 6; o++, c *= 2, amp *= 0.5) {
                double fx = (x + 0.5) * c / m->w, fy = (y + 0.5) * c / m->h;
                uint32_t ix = (uint32_t)fx, iy = (uint32_t)fy;
                double tx = fx - ix, ty = fy - iy;
                tx = tx * tx * (3 - 2 * tx);
                ty = ty * ty * (3 - 2 * ty);
                uint32_t sd = seed * 8u + (uint32_t)o;
                double a = lattice(ix, iy, sd), b = lattice(ix + 1, iy, sd);
                double c0 = lattice(ix, iy + 1, sd), d = lattice(ix + 1, iy + 1, sd);
                s += amp * ((a * (1 - tx) + b * tx) * (1 - ty) + (c0 * (1 - tx) + d * tx) * ty);
            }
            v[(size_t)y * m->w + x] = s;
            lo = fmin(lo, s);
            hi = fmax(hi, s);
        }
    for (size_t i = 0; i < cells(m); i++)
        m->z[i] = (float)((v[i] - lo) / (hi - lo) * relief);
    free(v);
    map_keep(m);
}

/* A river profile's set-up: a strip of w cells of dx m, one row, a ramp
 * rising east at 1 %, draining west to base level (cell x drains the
 * w - x cells east of it); 30 steps of 1 Myr under uplift u with K k and
 * exponents m and n, no creep. */
static inline map profile_strip(int w, double dx)
{
    map m = map_new(w, 1, dx);
    for (int x = 0; x < w; x++)
        m.z[x] = (float)(0.01 * x);
    map_keep(&m);
    return m;
}

static inline er_params profile_params(double u, double k, double m, double n)
{
    er_params p = sp_params();
    p.stream_power.steps = 30;
    p.stream_power.dt = 1e6;
    p.stream_power.uplift = u;
    p.stream_power.k = k;
    p.stream_power.m = m;
    p.stream_power.n = n;
    p.stream_power.kd = 0.0;
    p.stream_power.boundary = ER_SP_EDGES_WEST;
    return p;
}

#endif
