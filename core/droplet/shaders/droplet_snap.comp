/*
 * The snapshot droplet schedule on the Vulkan backend (droplet.schedule
 * "snapshot", core/droplet/snapshot.c, core/droplet/vulkan.c): one
 * invocation per droplet of a batch.  Every droplet reads the heights of
 * the batch start (Snap) and adds each change it makes into per-cell
 * signed 64-bit fixed-point sums with atomic adds; droplet_resolve.comp
 * applies them.  Integer addition is associative, so the sums do not
 * depend on the order the invocations run in: the same bits on every run,
 * and the CPU's where the device's float arithmetic is the CPU's
 * (lavapipe).  The step is droplet_lague.comp's (er_lague_step), with its
 * writes turned into sums as core/droplet/snapshot.c turns the CPU's.
 *
 * Two passes per batch (snapshot.c's comment argues them): with F_COUNT
 * every droplet runs with no load and only counts, per cell, the taps
 * that could take from it (Count) and their lowest stop (StopMin), its
 * state in the second half of Blocks (from pc.state0), and, carrying the
 * most load the main pass's can be, the taps that may lay a deposit on
 * each cell (DCount); then the main pass runs the droplets again and each
 * tap takes at most its share, room / count, and lays at most its share of
 * the room up to the cell's ceiling, room up / dcount.
 *
 * Resumable passes as in droplet_lague.comp: a droplet's state lives in a
 * buffer between dispatches, each dispatch runs at most pc.steps_per_pass
 * steps of it; the host sizes that for lavapipe's loop budget, which the
 * 64 lanes of a workgroup share.
 */
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
#extension GL_GOOGLE_include_directive : require

/* 64 droplets a workgroup: thousands of workgroups a dispatch. */
layout(local_size_x = 64) in;

/* [m] terrain at the batch start */
layout(std430, binding = 0) readonly buffer Snap { float h[]; };
/* fixed-point sums (units 1/pc.h_scale m, 1/pc.w_scale water): water of
 * every droplet step at its cell, deposits, erosion */
layout(std430, binding = 1) buffer FlowAcc { int64_t flow[]; };
layout(std430, binding = 2) buffer DepAcc { int64_t dep[]; };
layout(std430, binding = 6) buffer EroAcc { int64_t ero[]; };

/* the lowest stop of the taps counted at each cell, as an ordered int
 * (er_snap_ordered); 0x7fffffff = none */
layout(std430, binding = 10) buffer StopMin { int stopmin[]; };
/* the taps of the batch that may take from each cell (the count pass) */
layout(std430, binding = 11) buffer Count { int count[]; };
/* the taps of the batch that may lay a deposit (the count pass): the ends'
 * brush taps per cell, then the steps per quad (by its top-left node),
 * snapshot.c's er_dsink.dcount */
layout(std430, binding = 12) buffer DCount { int dcount[]; };

layout(push_constant) uniform Params {
    int width, height, lifetime, radius;
    float inertia, grad_k, cap_k, min_cap;
    float min_slope, erode_speed, deposit_speed, keep_water;
    float gravity, init_water, init_speed, area_k;
    uint flags;  /* 1 flow wanted, 2 deposit wanted, 4 walls present, 8 ek, 16 dm, 32 wear */
    uint job0;   /* this dispatch's droplets: job0 .. job0 + njobs - 1 of the batch */
    uint njobs;
    uint steps_per_pass;
    float h_scale, w_scale;  /* 2^er_snap_height_shift, 2^er_snap_water_shift */
    uint state0;             /* first droplet state of this pass in Blocks */
} pc;

#include "droplet_common.glsl"

/* the count pass (flags) */
const uint F_COUNT = 64u;

/* v >= 0 in units of 1/scale, rounded to nearest even and capped below
 * 2^62 (snapshot.c's to_fixed: the product by a power of two is exact). */
int64_t to_fixed(float v, float scale)
{
    precise float u = roundEven(v * scale);
    return int64_t(u < 4611686018427387904.0 ? u : 4611686018427387904.0);
}

bool count_pass()
{
    return (pc.flags & F_COUNT) != 0u;
}

void count_deposit4(uint i00)
{
    atomicAdd(dcount[uint(pc.width) * uint(pc.height) + i00], 1);
}

/* snapshot.c's deposit_taps: cell i's end-brush taps and the steps of the
 * four quads it is a corner of. */
int64_t deposit_taps(uint i)
{
    const uint w = uint(pc.width), q = w * uint(pc.height) + i;
    const int x = int(i % w), y = int(i / w);
    int64_t n = int64_t(dcount[i]) + int64_t(dcount[q]);
    if (x > 0)
        n += int64_t(dcount[q - 1u]);
    if (y > 0)
        n += int64_t(dcount[q - w]) + (x > 0 ? int64_t(dcount[q - w - 1u]) : 0l);
    return n;
}

/* snapshot.c's er_snap_ordered */
int ordered(float f)
{
    int b = floatBitsToInt(f);
    return b >= 0 ? b : b ^ 0x7fffffff;
}

/* er_snap_from_ordered */
float from_ordered(int o)
{
    return intBitsToFloat(o >= 0 ? o : o ^ 0x7fffffff);
}

/* snapshot.c's room_between */
int64_t room_between(float bottom, float top)
{
    precise double span = (double(top) - double(bottom)) * double(pc.h_scale);
    return int64_t(span < 4611686018427387904.0lf ? span : 4611686018427387904.0lf);
}

/* snapshot.c's er_snap_room */
int64_t room(float snap, int stop)
{
    return room_between(minf(snap, from_ordered(stop)), snap);
}

/* snapshot.c's er_snap_ceiling: the highest batch-start height of the
 * cell's 3 x 3 neighbourhood in the map and off walls, row by row. */
float ceiling(uint i)
{
    const uint w = uint(pc.width);
    const int x = int(i % w), y = int(i / w);
    float top = h[i];
    for (int v = y - 1; v <= y + 1; v++)
        for (int u = x - 1; u <= x + 1; u++) {
            if (u < 0 || v < 0 || u >= pc.width || v >= pc.height)
                continue;
            uint j = uint(v) * w + uint(u);
            if (!is_wall(j))
                top = maxf(top, h[j]);
        }
    return top;
}

/* snapshot.c's tap_lay: a deposit tap that would lay a lays at most its
 * share of the cell's room up; returns what the share withheld. */
float tap_lay(uint i, float a)
{
    int64_t q = to_fixed(a, pc.h_scale);
    if (q <= 0l)
        return 0.0;
    int64_t room = room_between(h[i], ceiling(i)), n = deposit_taps(i);
    int64_t share = q <= (room >> 31) ? q : n > 0l ? room / n : 0l;
    precise float kept = 0.0;
    if (q > share) {
        q = share;
        kept = a - float(double(q) * (1.0lf / double(pc.h_scale)));
    }
    if (q != 0l)
        atomicAdd(dep[i], q);
    return kept;
}

/* snapshot.c's laid_less */
float laid_less(float laid, float kept)
{
    precise float r = laid - kept;
    return kept > 0.0 ? maxf(r, 0.0) : laid;
}

/* snapshot.c's tap_take: a tap that would give g > 0 gives at most its
 * share of the cell's room; returns what the droplet carries. */
float tap_take(uint i, float o, float g)
{
    int64_t q = to_fixed(g, pc.h_scale);
    int n = count[i];
    int64_t share = n > 0 ? room(o, stopmin[i]) / int64_t(n) : 0l;
    if (q > share) {
        q = share;
        g = float(double(q) * (1.0lf / double(pc.h_scale)));
    }
    if (q != 0l)
        atomicAdd(ero[i], q);
    return g;
}

/* Erodes up to `amount` (> 0) through the brush centred on node (cx, cy),
 * no tap below `stop`, or deposits -amount (amount < 0): snapshot.c's
 * er_snap_erode and er_snap_deposit, the same products and the same sum
 * orders (the erosion's column by column, a deposit's laid row by row).
 * Returns what the taps gave, or what was laid down. */
float brush_apply(int cx, int cy, float amount, float stop)
{
    const int side = 2 * pc.radius - 1, r1 = pc.radius - 1;
    const uint w = uint(pc.width);
    const bool erode = amount > 0.0;
    precise float taken = 0.0, cs = 0.0, laid = 0.0, f = amount;
    int x0 = max(cx - r1, 0), x1 = min(cx + r1, pc.width - 1);
    int y0 = max(cy - r1, 0), y1 = min(cy + r1, pc.height - 1);
    const int nx = x1 - x0 + 1, ny = y1 - y0 + 1, n = nx * ny;
    if (!brush_clean(cx, cy)) {
        precise float sum = 0.0;
        for (int t = 0; t < n; t++) {
            int y = y0 + t / nx, x = x0 + t % nx;
            if (!is_wall(uint(y) * w + uint(x)))
                sum += bw[(y - cy + r1) * side + (x - cx + r1)];
        }
        f = amount / sum;
    }
    if (erode) {
        int so = ordered(stop);
        for (int t = 0; t < n; t++) {
            int x = x0 + t / ny, y = y0 + t % ny;
            uint i = uint(y) * w + uint(x);
            if (!is_wall(i)) {
                precise float d = ctl_share(f * bw[(y - cy + r1) * side + (x - cx + r1)], i, true);
                float o = h[i];
                precise float v = maxf(o - d, minf(o, stop));
                precise float g = o - v;
                if (g > 0.0 && (pc.flags & F_COUNT) != 0u) {
                    atomicAdd(count[i], 1);
                    atomicMin(stopmin[i], so);
                } else if (g > 0.0) {
                    g = tap_take(i, o, g);
                }
                cs += g;
            }
            if (y == y1) {
                taken += cs;
                cs = 0.0;
            }
        }
        return taken;
    }
    precise float kept = 0.0;
    for (int t = 0; t < n; t++) {
        int y = y0 + t / nx, x = x0 + t % nx;
        uint i = uint(y) * w + uint(x);
        if (!is_wall(i)) {
            float wt = bw[(y - cy + r1) * side + (x - cx + r1)];
            if ((pc.flags & F_COUNT) != 0u) {
                if (wt > 0.0)
                    atomicAdd(dcount[i], 1);
                continue;
            }
            precise float d = ctl_share(f * wt, i, false);
            kept += tap_lay(i, -d);
            laid -= d;
        }
    }
    return laid_less((pc.flags & F_DMASK) != 0u ? laid : -amount, kept);
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
    if ((pc.flags & F_COUNT) != 0u)
        return laid;
    precise float kept = tap_lay(i00, a00);
    kept += tap_lay(i00 + 1u, a10);
    kept += tap_lay(i00 + w, a01);
    kept += tap_lay(i00 + w + 1u, a11);
    return laid_less(laid, kept);
}

void add_flow(uint c, float water)
{
    if ((pc.flags & F_COUNT) != 0u)
        return;
    int64_t q = to_fixed(water, pc.w_scale);
    if (q != 0l)
        atomicAdd(flow[c], q);
}

void main()
{
    uint g = gl_GlobalInvocationID.x;
    if (g >= pc.njobs)
        return;
    uint id = pc.job0 + g;
    Block T = blocks[pc.state0 + id];
    if (T.next != 0u && T.live == 0u)
        return;
    load_state(T);
    bool live = T.live != 0u;
    if (T.next == 0u) {
        lague_begin(st[id]);
        live = true;
    }
    for (uint n = 0u; n < pc.steps_per_pass && live; n++)
        if (step_once())
            live = false;
    store_state(T);
    T.next = 1u;
    T.live = live ? 1u : 0u;
    blocks[pc.state0 + id] = T;
}
