/*
 * Lague/Beyer droplets on the Vulkan backend (core/droplet/vulkan.c):
 * one invocation per block of one colour of one batch (blocks.h), each
 * running its block's droplets one after another in index order.  Blocks of
 * one colour are a whole block apart and a droplet never gets farther than
 * T/2 from its start, so invocations share no cell: no atomics, no float
 * races, and a run gives the same bits every time on one device.
 *
 * The step is core/droplet/lague.c's er_lague_step operation for operation
 * (S. Lague's Hydraulic-Erosion, after H. T. Beyer 2015, Implementation of a
 * method for hydraulic erosion, with its known defects fixed: brush on the
 * nearest node, speed from energy, what a droplet carries is dropped where it
 * ends; the erosion rule of core/droplet/droplet_impl.h: no brush tap below
 * the height the droplet moves to, and the droplet carries what the taps gave
 * up, summed in er_brush_erode's order).  Every float that feeds the state is
 * `precise` so the driver neither contracts a*b+c into an FMA nor reorders;
 * results still differ from the CPU's in the last bits where the device's
 * sqrt and division round differently, so agreement with the CPU path is
 * statistical (tests/unit/check_vulkan_droplet.c).
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
#extension GL_GOOGLE_include_directive : require

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
/* (bindings 3, 4, 5, 7, 8 and 9, and the step itself: droplet_common.glsl) */

/* One block's work: droplets st[first .. first + count), sums into acc[slot]. */
struct Job {
    uint first, count, slot, pad;
};
layout(std430, binding = 6) readonly buffer Jobs { Job job[]; };

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

#include "droplet_common.glsl"

/* Removes `amount` [m] through the brush centred on node (cx, cy); a
 * negative amount deposits and also goes to the deposit layer.  Taps off
 * the map or on walls are left out and the others renormalised; each tap's
 * share is scaled by its control value (ctl_share).  An
 * erosion (amount > 0) takes no tap below `stop` (tap_erode) and returns
 * what the taps gave up, summed column by column, each column top to
 * bottom, then the columns left to right: core/droplet/brush.c's er_brush_erode,
 * bit for bit; a deposit returns what it laid down as er_brush_apply
 * does (the load itself without a mask map). */
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
        return erode ? taken : (pc.flags & F_DMASK) != 0u ? laid : -amount;
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
    return erode ? taken : (pc.flags & F_DMASK) != 0u ? laid : -amount;
}

/* Bilinear deposit onto the four nodes around floor node i00, each share
 * times the node's mask; returns what was laid down (er_deposit_bilinear). */
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

void add_flow(uint c, float water)
{
    precise float v = flow[c] + water;
    flow[c] = v;
}

/* The blocks schedule has no count pass. */
bool count_pass()
{
    return false;
}

void count_deposit4(uint i00)
{
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
    load_state(T);
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
        if (step_once())
            live = false;
    }

    store_state(T);
    T.next = next;
    T.live = live ? 1u : 0u;
    blocks[jb.slot] = T;
}
