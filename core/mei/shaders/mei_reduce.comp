#version 450
// erode: also-denorm-preserve
// After a sub-step, per row: the budget terms (terrain eroded and deposited,
// sediment and water through open edges) and the maxima and finiteness
// checks of core/mei/mei.c finish_substep, in MEI_LANES interleaved partial
// sums: lane j of row y's workgroup takes cells j, j + MEI_LANES, ... in
// order, so neighbouring lanes read neighbouring cells, and no barrier or
// atomic is needed; mei_rows adds the lanes in order.  A fixed order: the
// same bits every run.
#extension GL_GOOGLE_include_directive : require
#include "mei_common.glsl"
layout(local_size_x = MEI_LANES, local_size_y = 1) in;

void main()
{
    if (step_gated())
        return;
    const Coef k = coef[pc.variant];
    uint j = gl_LocalInvocationID.x, y = map_row(gl_WorkGroupID.y);
    uint by = band_row(gl_WorkGroupID.y);
    uint w = uint(k.w), h = uint(k.h);
    double se = 0.0, sd = 0.0, ls = 0.0, lw = 0.0;
    uint um = 0u, vm = 0u, bad = 0u;
    for (uint x = j; x < w; x += MEI_LANES) {
        uint i = by * w + x;
        se += double(er[i]);
        sd += double(de[i]);
        um = max(um, floatBitsToUint(u[i]) & 0x7fffffffu);
        vm = max(vm, floatBitsToUint(v[i]) & 0x7fffffffu);
        bad |= nonfinite(z[i]) | nonfinite(d[i]) | nonfinite(s[i]);
    }
    // what cells on the map edge sent through it (open edges), cell by cell
    // in column order, directions L, R, T, B (lane 0 does the row's edge cells),
    // under either scheme (core/mei/transport.c count_left)
    if (k.open != 0 && j == 0u) {
        bool full = y == 0u || y + 1u == h;
        for (uint x = 0u; x < w; x = (full || x + 1u == w) ? x + 1u : w - 1u) {
            uint i = by * w + x;
            if (k.has_wall != 0 && is_wall(i))
                continue;
            bool edge[4] = bool[4](x == 0u, x + 1u == w, y == 0u, y + 1u == h);
            float q[4] = float[4](qL[i], qR[i], qT[i], qB[i]);
            for (int e = 0; e < 4; e++)
                if (edge[e] && open_edge(k, e)) {
                    precise float o = s1[i] * (q[e] * wq[i]);
                    ls += double(o);
                    lw += double(q[e]) * double(k.dt);
                }
        }
    }
    uint p = y * MEI_LANES + j;
    part[p].eroded = se;
    part[p].deposited = sd;
    part[p].left_sed = ls;
    part[p].left_water = lw;
    part[p].umax = um;
    part[p].vmax = vm;
    part[p].bad = bad >> 31;
}
