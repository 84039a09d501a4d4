/*
 * Lague/Beyer droplets on the Vulkan backend (core/vulkan/vk_droplet.c):
 * one invocation per block of one colour of one batch (DESIGN.md §5), each
 * running its block's droplets one after another in index order.  Blocks of
 * one colour are a whole block apart and a droplet never gets farther than
 * T/2 from its start, so invocations share no cell: no atomics, no float
 * races, and a run gives the same bits every time on one device.
 *
 * The step is core/droplet/droplet.c's er_lague_step operation for operation
 * (seeds/README.md; brush on the nearest node, speed from energy, what a
 * droplet carries is dropped where it ends; the erosion rule of issue #12:
 * no brush tap below the height the droplet moves to, and the droplet
 * carries what the taps gave up, summed in brush_erode's order).  Every
 * float that feeds the
 * state is `precise` so the driver neither contracts a*b+c into an FMA nor
 * reorders; results still differ from the CPU's in the last bits where the
 * device's sqrt and division round differently, so agreement with the CPU
 * path is statistical (tests/unit/check_vulkan_droplet.c).
 *
 * Start positions are drawn on the host with core/rng.c and uploaded
 * bucketed by block, so the shader needs no 64-bit integers.
 *
 * Resumable passes: lavapipe (Mesa's CPU driver) ends every loop of an
 * invocation once the invocation has run 65535 loop iterations in all, so
 * one invocation cannot run a whole block there.  A block's state (next
 * droplet, the droplet in flight, the sums) lives in a buffer; a dispatch
 * runs at most pc.steps_per_pass droplet steps per block, and the host
 * dispatches each colour as many times as its busiest block needs.  Lavapipe
 * also counts one iteration for every loop an invocation passes without
 * running it (it executes masked-off branches), so the step applies the
 * brush from one place, after the step (brush_pending): a step then costs
 * at most 1 + 4 + 2 side^2 iterations (the pass loop, the brush's four
 * loops, two of them over at most side^2 taps).  A step is never split, so the
 * result does not depend on where passes end.
 */
#version 450

/* One invocation per workgroup: lavapipe runs a workgroup's
 * invocations in SIMD lanes whose loop counts add up (see above), and a
 * colour has only tens to thousands of blocks, so GPUs gain little from
 * more. */
layout(local_size_x = 1) in;

/* [m] terrain, updated in place */
layout(std430, binding = 0) buffer Height { float h[]; };
/* [water] flow layer: water of every droplet step added at its cell */
layout(std430, binding = 1) buffer Flow { float flow[]; };
/* [m] material deposited per cell */
layout(std430, binding = 2) buffer Deposit { float dep[]; };
/* one byte per cell, four to a word: bit 0 wall, bit 1 clean (the brush
 * window around the node is in the map and wall-free) */
layout(std430, binding = 3) readonly buffer Mask { uint mask[]; };
/* (2r-1)^2 brush weights, 0 outside the disc, sum 1 */
layout(std430, binding = 4) readonly buffer Brush { float bw[]; };

/* A droplet's start: base node and position relative to it, and its
 * water (initial_water times the rain map, er_lague_begin). */
struct Start {
    int bx, by;
    float lx, ly, water;
};
layout(std430, binding = 5) readonly buffer Starts { Start st[]; };

/* One block's work: droplets st[first .. first + count), sums into acc[slot]. */
struct Job {
    uint first, count, slot, pad;
};
layout(std430, binding = 6) readonly buffer Jobs { Job job[]; };

/* A block's state between passes: its sums (Kahan-compensated floats, value
 * = s - c, added by the host in block order), the next droplet and the one
 * in flight.  Zeroed by the host before the batch. */
struct Block {
    float eroded, eroded_c, deposited, deposited_c;
    float left_map, left_map_c, water_left, water_left_c;
    uint steps_lo, steps_hi, next, live;
    int bx, by, it, pad;
    float lx, ly, lx0, ly0;
    float dx, dy, speed, water;
    float sed, pad1, pad2, pad3;
};
layout(std430, binding = 7) buffer Blocks { Block blocks[]; };
/* Control maps (core/controls.h), read when their flag is set: the share
 * of an erosion each cell gives, (1 - hardness) * mask, the CPU's array
 * (er_dctx.ctl_erode), and the mask, the share of a deposit it takes. */
layout(std430, binding = 8) readonly buffer ErodeK { float ek[]; };
layout(std430, binding = 9) readonly buffer DepMask { float dm[]; };
/* [m] wear layer: what each tap gave up to an erosion, added */
layout(std430, binding = 10) buffer Wear { float wear[]; };

layout(push_constant) uniform Params {
    int width, height, lifetime, radius;
    float inertia, grad_k, cap_k, min_cap;
    float min_slope, erode_speed, deposit_speed, keep_water;
    float gravity, init_water, init_speed, area_k;
    uint flags;  /* 1 flow wanted, 2 deposit wanted, 4 walls present, 8 ek, 16 dm, 32 wear */
    uint job0;   /* this dispatch's jobs: job[job0 .. job0 + njobs) */
    uint njobs;
    uint steps_per_pass;
} pc;

const uint F_FLOW = 1u, F_DEP = 2u, F_WALL = 4u, F_ERODE = 8u, F_DMASK = 16u, F_WEAR = 32u;
const float DIR_TINY = 1e-30;

/* The brush a step applies when it is over: erosion (amount > 0, no tap
 * below brush_stop), or the sediment of a droplet that ended (amount < 0)
 * (one call site, see above). */
bool brush_pending;
int brush_x, brush_y;
float brush_amount, brush_stop;

/* The block's state while the invocation runs (Block above). */
float s_er, c_er, s_dep, c_dep, s_left, c_left, s_wl, c_wl;
uint steps_lo, steps_hi;
int d_bx, d_by, d_it;
float d_lx, d_ly, d_lx0, d_ly0, d_dx, d_dy, d_speed, d_water, d_sed;

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

/* er_maxf / er_minf: no NaN here, and the same choice on ties as the CPU. */
float maxf(float a, float b) { return a > b ? a : b; }
float minf(float a, float b) { return a < b ? a : b; }

bool brush_clean(int cx, int cy)
{
    int a = pc.radius - 1;
    if (cx < a || cx >= pc.width - a || cy < a || cy >= pc.height - a)
        return false;
    return (pc.flags & F_WALL) == 0u ||
           (cell_mask(uint(cy) * uint(pc.width) + uint(cx)) & 2u) != 0u;
}

/* A tap's share d of a brush at cell i times the cell's control value:
 * (1 - hardness) * mask for an erosion, mask for a deposit (one product
 * after the share, as core/droplet/droplet.c). */
float ctl_share(float d, uint i, bool erode)
{
    precise float r = d;
    if (erode && (pc.flags & F_ERODE) != 0u)
        r = d * ek[i];
    else if (!erode && (pc.flags & F_DMASK) != 0u)
        r = d * dm[i];
    return r;
}

/* Removes `amount` [m] through the brush centred on node (cx, cy); a
 * negative amount deposits and also goes to the deposit layer.  Taps off
 * the map or on walls are left out and the others renormalised; each tap's
 * share is scaled by its control value (ctl_share).  An
 * erosion (amount > 0) takes no tap below `stop` (tap_erode) and returns
 * what the taps gave up, summed column by column, each column top to
 * bottom, then the columns left to right: core/droplet/droplet.c's brush_erode,
 * bit for bit; a deposit returns what it laid down (er_brush_apply). */
float brush_apply(int cx, int cy, float amount, float stop)
{
    const int side = 2 * pc.radius - 1, r1 = pc.radius - 1;
    const uint w = uint(pc.width);
    const bool erode = amount > 0.0;
    const bool todep = amount < 0.0 && (pc.flags & F_DEP) != 0u;
    precise float taken = 0.0, cs = 0.0, laid = 0.0;

    /* Loops run over all taps of a window flattened into one index, so a
     * loop costs n + 1 iterations of lavapipe's budget (see above); the
     * height loops go column by column (t = column * rows + row) for the
     * erosion's sum. */
    if (brush_clean(cx, cy)) {
        uint o = uint(cy - r1) * w + uint(cx - r1);
        const int n = side * side;
        for (int t = 0; t < n; t++) {
            int i = t / side, j = t - i * side;
            uint k = o + uint(j) * w + uint(i);
            float hk = h[k];
            precise float d = ctl_share(amount * bw[j * side + i], k, erode);
            precise float v = hk - d;
            laid -= d;
            if (erode) {
                v = maxf(v, minf(hk, stop));
                precise float g = hk - v;
                cs += g;
                if ((pc.flags & F_WEAR) != 0u) {
                    precise float e = wear[k] + g;
                    wear[k] = e;
                }
                if (j == side - 1) {
                    taken += cs;
                    cs = 0.0;
                }
            }
            h[k] = v;
        }
        if (todep)
            for (int t = 0; t < n; t++) {
                int j = t / side, i = t - j * side;
                uint k = o + uint(j) * w + uint(i);
                precise float v = dep[k] - ctl_share(amount * bw[t], k, false);
                dep[k] = v;
            }
        return erode ? taken : laid;
    }
    int x0 = max(cx - r1, 0), x1 = min(cx + r1, pc.width - 1);
    int y0 = max(cy - r1, 0), y1 = min(cy + r1, pc.height - 1);
    const int nx = x1 - x0 + 1, ny = y1 - y0 + 1, n = nx * ny;
    precise float sum = 0.0;
    for (int t = 0; t < n; t++) {
        int y = y0 + t / nx, x = x0 + t % nx;
        if (!is_wall(uint(y) * w + uint(x)))
            sum += bw[(y - cy + r1) * side + (x - cx + r1)];
    }
    precise float kk = amount / sum;
    for (int t = 0; t < n; t++) {
        int x = x0 + t / ny, y = y0 + t % ny;
        uint i = uint(y) * w + uint(x);
        if (!is_wall(i)) {
            precise float d = ctl_share(kk * bw[(y - cy + r1) * side + (x - cx + r1)], i, erode);
            float hi = h[i];
            precise float v = hi - d;
            laid -= d;
            if (erode) {
                v = maxf(v, minf(hi, stop));
                precise float g = hi - v;
                cs += g;
                if ((pc.flags & F_WEAR) != 0u) {
                    precise float e = wear[i] + g;
                    wear[i] = e;
                }
            }
            h[i] = v;
            if (todep) {
                precise float e = dep[i] - d;
                dep[i] = e;
            }
        }
        if (erode && y == y1) {
            taken += cs;
            cs = 0.0;
        }
    }
    return erode ? taken : laid;
}

/* Bilinear deposit onto the four nodes around floor node i00, each share
 * times the node's mask; returns what was laid down (core/droplet/droplet.c). */
float deposit_bilinear(uint i00, float fx, float fy, float amount)
{
    const uint w = uint(pc.width);
    precise float a00 = amount * (1.0 - fx) * (1.0 - fy);
    precise float a10 = amount * fx * (1.0 - fy);
    precise float a01 = amount * (1.0 - fx) * fy;
    precise float a11 = amount * fx * fy;
    precise float laid = amount;
    if ((pc.flags & F_DMASK) != 0u) {
        a00 = a00 * dm[i00];
        a10 = a10 * dm[i00 + 1u];
        a01 = a01 * dm[i00 + w];
        a11 = a11 * dm[i00 + w + 1u];
        laid = minf(a00 + a10 + a01 + a11, amount);
    }
    precise float v;
    v = h[i00] + a00; h[i00] = v;
    v = h[i00 + 1u] + a10; h[i00 + 1u] = v;
    v = h[i00 + w] + a01; h[i00 + w] = v;
    v = h[i00 + w + 1u] + a11; h[i00 + w + 1u] = v;
    if ((pc.flags & F_DEP) != 0u) {
        v = dep[i00] + a00; dep[i00] = v;
        v = dep[i00 + 1u] + a10; dep[i00 + 1u] = v;
        v = dep[i00 + w] + a01; dep[i00 + w] = v;
        v = dep[i00 + w + 1u] + a11; dep[i00 + w + 1u] = v;
    }
    return laid;
}

/* The droplet ends on the map: its sediment is spread by the brush around
 * the node nearest its last valid position. */
void lague_end()
{
    if (d_sed > 0.0) {
        int kx = int(d_lx), ky = int(d_ly);
        brush_pending = true;
        brush_x = d_bx + kx + (d_lx - float(kx) >= 0.5 ? 1 : 0);
        brush_y = d_by + ky + (d_ly - float(ky) >= 0.5 ? 1 : 0);
        brush_amount = -d_sed;
        d_sed = 0.0;
    }
}

/* A load at a droplet's end of which `laid` went down (the rest, only
 * under a mask map, leaves the terrain, counted with left_map as
 * er_end_load does). */
void end_load(float load, float laid)
{
    if ((pc.flags & F_DMASK) == 0u)
        laid = load;
    kahan(s_dep, c_dep, laid);
    if (laid < load) {
        precise float rest = load - laid;
        kahan(s_left, c_left, rest);
    }
}

void lague_begin(Start s)
{
    d_bx = s.bx;
    d_by = s.by;
    d_lx = d_lx0 = s.lx;
    d_ly = d_ly0 = s.ly;
    d_dx = d_dy = 0.0;
    d_speed = pc.init_speed;
    d_water = s.water;
    d_sed = 0.0;
    d_it = 0;
}

/* One droplet step (er_lague_step); returns true when the droplet ended. */
bool lague_step()
{
    const int W = pc.width, H = pc.height;
    const uint w = uint(W);
    const float lx = d_lx, ly = d_ly;
    const precise float lim = float(pc.lifetime) + 0.5;
    precise float dx = d_dx, dy = d_dy;
    const float speed = d_speed, water = d_water;
    precise float sed = d_sed;

    if (d_it >= pc.lifetime) {
        lague_end();
        return true;
    }
    int kx = int(lx), ky = int(ly);
    int ix = d_bx + kx, iy = d_by + ky;
    precise float fx = lx - float(kx), fy = ly - float(ky);
    uint i00 = uint(iy) * w + uint(ix);
    int cx = ix + (fx >= 0.5 ? 1 : 0), cy = iy + (fy >= 0.5 ? 1 : 0);
    d_it++;
    if ((pc.flags & F_FLOW) != 0u) {
        uint c = uint(cy) * w + uint(cx);
        precise float v = flow[c] + water;
        flow[c] = v;
    }
    steps_lo++;
    if (steps_lo == 0u)
        steps_hi++;

    /* Bilinear height and gradient at the position. */
    float h00 = h[i00], h10 = h[i00 + 1u], h01 = h[i00 + w], h11 = h[i00 + w + 1u];
    precise float gx = (h10 - h00) * (1.0 - fy) + (h11 - h01) * fy;
    precise float gy = (h01 - h00) * (1.0 - fx) + (h11 - h10) * fx;
    precise float hold = (h00 * (1.0 - fx) + h10 * fx) * (1.0 - fy) +
                         (h01 * (1.0 - fx) + h11 * fx) * fy;

    /* Inertia: the new direction leans on the old one. */
    dx = dx * pc.inertia - gx * pc.grad_k;
    dy = dy * pc.inertia - gy * pc.grad_k;
    precise float len2 = dx * dx + dy * dy;
    if (!(len2 > DIR_TINY)) {
        lague_end();
        return true;
    }
    precise float inv = 1.0 / sqrt(len2);
    dx *= inv;
    dy *= inv;

    /* Move one cell; stop off the map, past the reach bound (a guard
     * against rounding) or on a wall. */
    precise float nlx = lx + dx, nly = ly + dy;
    int kx2 = int(nlx), ky2 = int(nly);
    int jx = d_bx + kx2, jy = d_by + ky2;
    if (!(jx >= 0 && jx < W - 1 && jy >= 0 && jy < H - 1)) {
        kahan(s_left, c_left, sed);
        kahan(s_wl, c_wl, water);
        d_sed = 0.0;
        return true;
    }
    if (abs(nlx - d_lx0) > lim || abs(nly - d_ly0) > lim) {
        lague_end();
        return true;
    }
    uint j00 = uint(jy) * w + uint(jx);
    if ((pc.flags & F_WALL) != 0u &&
        ((cell_mask(j00) | cell_mask(j00 + 1u) | cell_mask(j00 + w) | cell_mask(j00 + w + 1u)) &
         1u) != 0u) {
        lague_end();
        return true;
    }
    precise float gx2 = nlx - float(kx2), gy2 = nly - float(ky2);
    float n00 = h[j00], n10 = h[j00 + 1u], n01 = h[j00 + w], n11 = h[j00 + w + 1u];
    precise float hnew = (n00 * (1.0 - gx2) + n10 * gx2) * (1.0 - gy2) +
                         (n01 * (1.0 - gx2) + n11 * gx2) * gy2;
    precise float dh = hnew - hold;

    /* Capacity: Lague's max(-dh v w K, min) or Beyer's max(-dh, min_slope) v w K. */
    precise float cap = pc.min_slope > 0.0
                            ? maxf(-dh, pc.min_slope) * speed * water * pc.cap_k
                            : maxf(-dh * speed * water * pc.cap_k, pc.min_cap);
    if (dh > 0.0 || sed > cap) {
        /* Uphill: fill the pit behind, at most dh; else drop a part of the
         * excess, onto the four nodes around the old position. */
        precise float amount = dh > 0.0 ? minf(dh * pc.area_k, sed) : (sed - cap) * pc.deposit_speed;
        amount = minf(amount, sed);
        amount = deposit_bilinear(i00, fx, fy, amount);
        sed -= amount;
        kahan(s_dep, c_dep, amount);
    } else {
        /* Never more than the height drop in all (times area_k, as on the
         * CPU), and no tap below the new position.  Applied when the step is over (nothing below reads
         * heights); the droplet's load grows by what the taps gave then. */
        precise float amount = minf((cap - sed) * pc.erode_speed, -dh * pc.area_k);
        if (amount > 0.0) {
            brush_pending = true;
            brush_x = cx;
            brush_y = cy;
            brush_amount = amount;
            brush_stop = maxf(hnew, minf(minf(n00, n10), minf(n01, n11)));
        }
    }
    precise float v2 = speed * speed - dh * pc.gravity;
    d_speed = sqrt(maxf(0.0, v2));
    d_water = water * pc.keep_water;
    d_sed = sed;
    d_dx = dx;
    d_dy = dy;
    d_lx = nlx;
    d_ly = nly;
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
    d_bx = T.bx;
    d_by = T.by;
    d_it = T.it;
    d_lx = T.lx;
    d_ly = T.ly;
    d_lx0 = T.lx0;
    d_ly0 = T.ly0;
    d_dx = T.dx;
    d_dy = T.dy;
    d_speed = T.speed;
    d_water = T.water;
    d_sed = T.sed;
    uint next = T.next;
    bool live = T.live != 0u;

    /* The block's droplets in index order, at most steps_per_pass steps. */
    for (uint n = 0u; n < pc.steps_per_pass; n++) {
        if (!live) {
            if (next >= jb.count)
                break;
            lague_begin(st[jb.first + next]);
            next++;
            live = true;
        }
        brush_pending = false;
        if (lague_step())
            live = false;
        if (brush_pending) {
            precise float taken = brush_apply(brush_x, brush_y, brush_amount, brush_stop);
            if (brush_amount > 0.0) {
                precise float s2 = d_sed + taken;
                d_sed = s2;
                kahan(s_er, c_er, taken);
            } else {
                end_load(-brush_amount, taken);
            }
        }
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
    T.bx = d_bx;
    T.by = d_by;
    T.it = d_it;
    T.lx = d_lx;
    T.ly = d_ly;
    T.lx0 = d_lx0;
    T.ly0 = d_ly0;
    T.dx = d_dx;
    T.dy = d_dy;
    T.speed = d_speed;
    T.water = d_water;
    T.sed = d_sed;
    blocks[jb.slot] = T;
}
