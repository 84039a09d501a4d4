/*
 * The mass-transfer particle of T. Power 2025, Creating realistic terrain by
 * modelling the physics of hydraulic erosion, and N. McDonald 2020, Simple
 * particle-based hydraulic erosion, on the Vulkan backend
 * (core/droplet/vulkan.c): core/droplet/particle.c's er_particle_run step for
 * step, with the schedule of droplet_lague.comp (one invocation per block of
 * one colour, the block's particles in index order, resumable passes of at
 * most pc.steps_per_pass steps for lavapipe's loop budget; a step costs at
 * most 11 loop iterations, 2 side^2 + 4 more where the particle stops).
 *
 * The erosion rule as on the CPU (particle.c): a step never takes its cell
 * below the cell the particle moves to, and the load changes by exactly
 * what the cell gave up or received.
 *
 * One difference from the CPU: the particle's position is kept as a float
 * offset from its start cell instead of a double in map coordinates (no
 * float64 needed; the offset stays within max_distance + 1 cells, where a
 * float resolves 1e-5 cells), so agreement with the CPU is statistical.
 */
#version 450

/* One invocation per workgroup, as droplet_lague.comp. */
layout(local_size_x = 1) in;

layout(std430, binding = 0) buffer Height { float h[]; };
layout(std430, binding = 1) buffer Flow { float flow[]; };
layout(std430, binding = 2) buffer Deposit { float dep[]; };
/* bit 0 wall, bit 1 clean (the 3x3 window is in the map and wall-free) */
layout(std430, binding = 3) readonly buffer Mask { uint mask[]; };
/* (2r-1)^2 brush weights, 0 outside the disc, sum 1: where a particle
 * that stops lays its load down */
layout(std430, binding = 4) readonly buffer Brush { float bw[]; };

/* A particle's start: its cell and the position within it. */
struct Start {
    int sx, sy;
    float lx, ly, vol; /* vol: the rain map's multiplier, the initial volume */
};
layout(std430, binding = 5) readonly buffer Starts { Start st[]; };

struct Job {
    uint first, count, slot, pad;
};
layout(std430, binding = 6) readonly buffer Jobs { Job job[]; };

/* A block's state between passes; the first twelve words as in
 * droplet_lague.comp (the host reads the sums from them). */
struct Block {
    float eroded, eroded_c, deposited, deposited_c;
    float left_map, left_map_c, water_left, water_left_c;
    uint steps_lo, steps_hi, next, live;
    int sx, sy, ix, iy;
    float lx, ly, vx, vy;
    float vol, sed, pad0, pad1;
    int n, pad2, pad3, pad4;
};
layout(std430, binding = 7) buffer Blocks { Block blocks[]; };
/* Control maps, as droplet_lague.comp: (1 - hardness) * mask and mask. */
layout(std430, binding = 8) readonly buffer ErodeK { float ek[]; };
layout(std430, binding = 9) readonly buffer DepMask { float dm[]; };
/* [m] wear layer: what each step's erosion took from its cell, added */
layout(std430, binding = 10) buffer Wear { float wear[]; };

layout(push_constant) uniform Params {
    int width, height, max_distance, max_steps;
    float dt, inv_density, friction_keep, rate;
    float evap_keep, min_volume, vscale, area_k;
    int radius;
    float pad2, pad3, pad4;
    uint flags;  /* 1 flow wanted, 2 deposit wanted, 4 walls present, 8 ek, 16 dm, 32 wear */
    uint job0;
    uint njobs;
    uint steps_per_pass;
} pc;

const uint F_FLOW = 1u, F_DEP = 2u, F_WALL = 4u, F_ERODE = 8u, F_DMASK = 16u, F_WEAR = 32u;

float s_er, c_er, s_dep, c_dep, s_left, c_left, s_wl, c_wl;
uint steps_lo, steps_hi;
int p_sx, p_sy, p_ix, p_iy, p_n;
float p_lx, p_ly, p_vx, p_vy, p_vol, p_sed;

void kahan(inout float s, inout float c, float x)
{
    precise float y = x - c;
    precise float t = s + y;
    precise float d = (t - s) - y;
    c = d;
    s = t;
}

uint cell_mask(uint i)
{
    return (mask[i >> 2] >> ((i & 3u) * 8u)) & 0xffu;
}

bool is_wall(uint i)
{
    return (pc.flags & F_WALL) != 0u && (cell_mask(i) & 1u) != 0u;
}

float maxf(float a, float b) { return a > b ? a : b; }
float minf(float a, float b) { return a < b ? a : b; }

/* Power 2025's weighted facets (core/droplet/particle.c). */
float facet_card(float d)
{
    precise float r = 0.15 * d / sqrt(1.0 + d * d);
    return r;
}

float facet_diag(float d)
{
    precise float r = 0.05 * d / sqrt(1.0 + 0.5 * d * d);
    return r;
}

/* Adds -amount (amount < 0) through the brush centred on cell (cx, cy), as
 * core/droplet/brush.c's er_brush_apply: the whole disc where its window
 * is clean, else renormalised over the taps on the map and off walls.
 * Each loop runs over a window flattened into one index (lavapipe's loop
 * budget, droplet_lague.comp). */
float brush_deposit(int cx, int cy, float amount)
{
    const int side = 2 * pc.radius - 1, r1 = pc.radius - 1;
    const uint w = uint(pc.width);
    const bool todep = (pc.flags & F_DEP) != 0u;
    const int a = max(r1, 1);
    bool clean = cx >= a && cx < pc.width - a && cy >= a && cy < pc.height - a &&
                 ((pc.flags & F_WALL) == 0u || (cell_mask(uint(cy) * w + uint(cx)) & 2u) != 0u);
    int x0 = max(cx - r1, 0), x1 = min(cx + r1, pc.width - 1);
    int y0 = max(cy - r1, 0), y1 = min(cy + r1, pc.height - 1);
    const int nx = x1 - x0 + 1, n = nx * (y1 - y0 + 1);
    precise float sum = 0.0;
    if (!clean)
        for (int t = 0; t < n; t++) {
            int y = y0 + t / nx, x = x0 + t % nx;
            if (!is_wall(uint(y) * w + uint(x)))
                sum += bw[(y - cy + r1) * side + (x - cx + r1)];
        }
    precise float kk = clean ? amount : amount / sum;
    precise float laid = 0.0;
    const bool masked = (pc.flags & F_DMASK) != 0u;
    for (int t = 0; t < n; t++) {
        int y = y0 + t / nx, x = x0 + t % nx;
        uint i = uint(y) * w + uint(x);
        if (clean || !is_wall(i)) {
            precise float d = kk * bw[(y - cy + r1) * side + (x - cx + r1)];
            if (masked)
                d = d * dm[i];
            precise float v = h[i] - d;
            h[i] = v;
            laid -= d;
            if (todep) {
                precise float e = dep[i] - d;
                dep[i] = e;
            }
        }
    }
    return masked ? laid : -amount;
}

/* The particle ends: what it carries is laid down through the brush
 * around its cell (onto one cell it would leave a single-cell mound). */
void mt_end()
{
    if (p_sed > 0.0) {
        float laid = brush_deposit(p_ix, p_iy, -p_sed);
        /* What the mask kept leaves the terrain (er_end_load). */
        kahan(s_dep, c_dep, laid);
        if (laid < p_sed) {
            precise float rest = p_sed - laid;
            kahan(s_left, c_left, rest);
        }
        p_sed = 0.0;
    }
}

/* One particle step (the body of er_particle_run's loop); true when the
 * particle ended. */
bool mt_step()
{
    const int W = pc.width, H = pc.height;
    const uint w = uint(W);
    if (!(p_n < pc.max_steps && p_vol >= pc.min_volume)) {
        mt_end();
        return true;
    }
    p_n++;
    uint ci = uint(p_iy) * w + uint(p_ix);
    steps_lo++;
    if (steps_lo == 0u)
        steps_hi++;
    if ((pc.flags & F_FLOW) != 0u) {
        precise float f = flow[ci] + p_vol;
        flow[ci] = f;
    }

    /* The 3x3 heights; off-map or wall neighbours take the centre's. */
    float n9[9];
    float h0 = h[ci];
    bool fast = p_ix >= 1 && p_ix < W - 1 && p_iy >= 1 && p_iy < H - 1 &&
                ((pc.flags & F_WALL) == 0u || (cell_mask(ci) & 2u) != 0u);
    for (int t = 0; t < 9; t++) {
        int xx = p_ix + t % 3 - 1, yy = p_iy + t / 3 - 1;
        float v = h0;
        if (fast || (xx >= 0 && xx < W && yy >= 0 && yy < H &&
                     !is_wall(uint(yy) * w + uint(xx))))
            v = h[uint(yy) * w + uint(xx)];
        n9[t] = v;
    }
    const float s = pc.vscale;
    float cw = facet_card(s * (h0 - n9[3])), ce = facet_card(s * (h0 - n9[5]));
    float cn = facet_card(s * (h0 - n9[1])), cs = facet_card(s * (h0 - n9[7]));
    float dnw = facet_diag(s * (h0 - n9[0])), dne = facet_diag(s * (h0 - n9[2]));
    float dsw = facet_diag(s * (h0 - n9[6])), dse = facet_diag(s * (h0 - n9[8]));
    precise float nx = (ce - cw) + (dne + dse - dnw - dsw);
    precise float nz = (cs - cn) + (dsw + dse - dnw - dne);

    /* a = n / (V rho); v += a dt; p += v dt; v *= 1 - mu dt
     * (Power 2025 eqs. 1-3). */
    precise float k = pc.dt * pc.inv_density / p_vol;
    precise float vx = p_vx + nx * k, vy = p_vy + nz * k;
    precise float lx = p_lx + pc.dt * vx, ly = p_ly + pc.dt * vy;
    vx *= pc.friction_keep;
    vy *= pc.friction_keep;
    p_vx = vx;
    p_vy = vy;
    p_lx = lx;
    p_ly = ly;
    float fx = float(p_sx) + lx, fy = float(p_sy) + ly;
    if (!(fx >= 0.0 && fx < float(W) && fy >= 0.0 && fy < float(H))) {
        kahan(s_left, c_left, p_sed);
        kahan(s_wl, c_wl, p_vol);
        p_sed = 0.0;
        return true;
    }
    int jx = p_sx + int(floor(lx)), jy = p_sy + int(floor(ly));
    jx = clamp(jx, 0, W - 1);
    jy = clamp(jy, 0, H - 1);
    if (abs(jx - p_sx) > pc.max_distance || abs(jy - p_sy) > pc.max_distance) {
        mt_end();
        return true;
    }
    uint cj = uint(jy) * w + uint(jx);
    if (is_wall(cj)) {
        mt_end();
        return true;
    }

    /* Equilibrium load V |v| dh, clamped at 0, and the transfer toward it
     * (Power 2025 eq. 5), as a mass. */
    precise float dh = h[ci] - h[cj];
    precise float speed = sqrt(vx * vx + vy * vy);
    precise float ceq = maxf(0.0, p_vol * speed * dh) * pc.area_k;
    precise float ds = pc.rate * (p_vol * ceq - p_sed);
    ds = maxf(ds, -p_sed);
    /* Erosion not below the next cell; the load changes by what the cell
     * gave up or received, o - v, exact; a deposit rounding would make
     * larger than asked does not happen (core/droplet/particle.c). */
    float o = h[ci];
    precise float hv;
    if (ds > 0.0) {
        if ((pc.flags & F_ERODE) != 0u)
            ds = ds * ek[ci];
        hv = maxf(o - ds, minf(o, h[cj]));
    } else {
        if ((pc.flags & F_DMASK) != 0u)
            ds = ds * dm[ci];
        hv = o - ds;
        precise float got = o - hv;
        if (got < ds)
            hv = o;
    }
    ds = o - hv;
    h[ci] = hv;
    if (ds > 0.0) {
        kahan(s_er, c_er, ds);
        if ((pc.flags & F_WEAR) != 0u) {
            precise float e = wear[ci] + ds;
            wear[ci] = e;
        }
    } else {
        kahan(s_dep, c_dep, -ds);
        if ((pc.flags & F_DEP) != 0u) {
            precise float e = dep[ci] - ds;
            dep[ci] = e;
        }
    }
    precise float sd = p_sed + ds;
    p_sed = sd;
    precise float vv = p_vol * pc.evap_keep; /* Power 2025 eq. 6 */
    p_vol = vv;
    p_ix = jx;
    p_iy = jy;
    return false;
}

void main()
{
    uint g = gl_GlobalInvocationID.x;
    if (g >= pc.njobs)
        return;
    Job jb = job[pc.job0 + g];
    Block T = blocks[jb.slot];
    if (T.live == 0u && T.next >= jb.count)
        return;
    s_er = T.eroded;
    c_er = T.eroded_c;
    s_dep = T.deposited;
    c_dep = T.deposited_c;
    s_left = T.left_map;
    c_left = T.left_map_c;
    s_wl = T.water_left;
    c_wl = T.water_left_c;
    steps_lo = T.steps_lo;
    steps_hi = T.steps_hi;
    p_sx = T.sx;
    p_sy = T.sy;
    p_ix = T.ix;
    p_iy = T.iy;
    p_n = T.n;
    p_lx = T.lx;
    p_ly = T.ly;
    p_vx = T.vx;
    p_vy = T.vy;
    p_vol = T.vol;
    p_sed = T.sed;
    uint next = T.next;
    bool live = T.live != 0u;

    for (uint n = 0u; n < pc.steps_per_pass; n++) {
        if (!live) {
            if (next >= jb.count)
                break;
            Start s = st[jb.first + next];
            p_sx = p_ix = s.sx;
            p_sy = p_iy = s.sy;
            p_lx = s.lx;
            p_ly = s.ly;
            p_vx = p_vy = 0.0;
            p_vol = s.vol;
            p_sed = 0.0;
            p_n = 0;
            next++;
            live = true;
        }
        if (mt_step())
            live = false;
    }

    T.eroded = s_er;
    T.eroded_c = c_er;
    T.deposited = s_dep;
    T.deposited_c = c_dep;
    T.left_map = s_left;
    T.left_map_c = c_left;
    T.water_left = s_wl;
    T.water_left_c = c_wl;
    T.steps_lo = steps_lo;
    T.steps_hi = steps_hi;
    T.next = next;
    T.live = live ? 1u : 0u;
    T.sx = p_sx;
    T.sy = p_sy;
    T.ix = p_ix;
    T.iy = p_iy;
    T.n = p_n;
    T.lx = p_lx;
    T.ly = p_ly;
    T.vx = p_vx;
    T.vy = p_vy;
    T.vol = p_vol;
    T.sed = p_sed;
    blocks[jb.slot] = T;
}
