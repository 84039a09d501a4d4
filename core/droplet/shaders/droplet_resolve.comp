/*
 * The snapshot droplet schedule's resolve (core/droplet/snapshot.c's
 * er_snap_resolve, operation for operation): one invocation per cell
 * applies the batch's fixed-point sums to the heights and layers.  The
 * shares keep each cell's erosion within its room above the lowest stop
 * counted there (snapshot.c's depth bound) and its deposits within its room
 * up to its ceiling, so a sum beyond its room, like one that wrapped, is a
 * defect, counted in Totals.  The
 * conversions are IEEE: int64 to double and double to float correctly
 * rounded, double to int64 truncated, as the C casts.
 */
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require

layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer Height { float height[]; };
layout(std430, binding = 1) buffer Flow { float flow[]; };
layout(std430, binding = 2) buffer Deposit { float deposit[]; };
layout(std430, binding = 3) buffer Wear { float wear[]; };
layout(std430, binding = 4) readonly buffer Snap { float snap[]; };
layout(std430, binding = 5) readonly buffer FlowAcc { int64_t flow_acc[]; };
layout(std430, binding = 6) readonly buffer DepAcc { int64_t dep_acc[]; };
layout(std430, binding = 7) readonly buffer EroAcc { int64_t ero_acc[]; };
layout(std430, binding = 8) readonly buffer StopMin { int stopmin[]; };
/* [0] cells whose sums wrapped or exceed the room (a defect) */
layout(std430, binding = 9) buffer Totals { int64_t totals[]; };
/* droplet_common.glsl's wall mask: bit 0 of each cell's byte */
layout(std430, binding = 10) readonly buffer Mask { uint mask[]; };

layout(push_constant) uniform Params {
    uint cells;
    uint flags;  /* 1 flow, 2 deposit, 4 walls present, 32 wear: the layers kept */
    float h_scale, w_scale;
    int width, height;
} pc;

const uint F_FLOW = 1u, F_DEP = 2u, F_WALL = 4u, F_WEAR = 32u;

float minf(float a, float b) { return a < b ? a : b; }
float maxf(float a, float b) { return a > b ? a : b; }

bool is_wall(uint i)
{
    return (pc.flags & F_WALL) != 0u && ((mask[i >> 2] >> ((i & 3u) * 8u)) & 1u) != 0u;
}

/* droplet_snap.comp's ceiling (snapshot.c's er_snap_ceiling) */
float ceiling(uint i)
{
    const uint w = uint(pc.width);
    const int x = int(i % w), y = int(i / w);
    float top = snap[i];
    for (int v = y - 1; v <= y + 1; v++)
        for (int u = x - 1; u <= x + 1; u++) {
            if (u < 0 || v < 0 || u >= pc.width || v >= pc.height)
                continue;
            uint j = uint(v) * w + uint(u);
            if (!is_wall(j))
                top = maxf(top, snap[j]);
        }
    return top;
}

/* er_snap_from_ordered */
float from_ordered(int o)
{
    return intBitsToFloat(o >= 0 ? o : o ^ 0x7fffffff);
}

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.cells)
        return;
    const double hu = 1.0lf / double(pc.h_scale), wu = 1.0lf / double(pc.w_scale);
    int64_t e = ero_acc[i], d = dep_acc[i];
    if ((pc.flags & F_FLOW) != 0u && flow_acc[i] != 0l) {
        precise double fw = double(flow_acc[i]) * wu;
        precise float v = flow[i] + float(fw);
        flow[i] = v;
    }
    if (e == 0l && d == 0l)
        return;
    float h0 = snap[i], bound = h0, top = h0;
    int64_t room = 0l, room_up = 0l;
    if (e > 0l) {
        bound = minf(h0, from_ordered(stopmin[i]));
        precise double span = (double(h0) - double(bound)) * double(pc.h_scale);
        room = int64_t(span < 4611686018427387904.0lf ? span : 4611686018427387904.0lf);
    }
    if (d > 0l) {
        top = ceiling(i);
        precise double span = (double(top) - double(h0)) * double(pc.h_scale);
        room_up = int64_t(span < 4611686018427387904.0lf ? span : 4611686018427387904.0lf);
    }
    if (e < 0l || d < 0l || e > room || d > room_up)
        atomicAdd(totals[0], 1l);
    precise double hd = double(h0) - double(e) * hu + double(d) * hu;
    height[i] = minf(maxf(float(hd), bound), top);
    if ((pc.flags & F_WEAR) != 0u && e != 0l) {
        precise float v = wear[i] + float(double(e) * hu);
        wear[i] = v;
    }
    if ((pc.flags & F_DEP) != 0u && d != 0l) {
        precise float v = deposit[i] + float(double(d) * hu);
        deposit[i] = v;
    }
}
