#version 450
// erode: also-denorm-preserve
// Per row, after a sub-step: adds the row's Parts (from mei_reduce, in
// column order) into the row's budget terms of the sub-step, and the checks of
// core/mei/mei.c finish_substep: non-finite state, non-finite velocity, CFL.
// pc.n is the number of parts per row.
#extension GL_GOOGLE_include_directive : require
#include "mei_common.glsl"
layout(local_size_x = 64, local_size_y = 1) in;

void main()
{
    if (step_gated())
        return;
    const Coef k = coef[pc.variant];
    uint y = gl_GlobalInvocationID.x;
    if (y >= uint(k.h))
        return;
    double se = 0.0, sd = 0.0, ls = 0.0, lw = 0.0;
    uint um = 0u, vm = 0u, bad = 0u;
    for (uint g = 0u; g < pc.n; g++) {
        uint p = y * pc.n + g;
        se += part[p].eroded;
        sd += part[p].deposited;
        ls += part[p].left_sed;
        lw += part[p].left_water;
        um = max(um, part[p].umax);
        vm = max(vm, part[p].vmax);
        bad |= part[p].bad;
    }
    rows[y].eroded = se;
    rows[y].deposited = sd;
    rows[y].left_sed = ls;
    rows[y].left_water = lw;
    if (rows[y].fail_step != 0u)
        return;
    float fu = uintBitsToFloat(um), fv = uintBitsToFloat(vm);
    uint kind = 0u, bits = 0u;
    if (bad != 0u)
        kind = 1u;
    else if (isnan(fu) || isinf(fu) || isnan(fv) || isinf(fv))
        kind = 2u;
    else if (double(k.dt) * double(fu) > k.lx_slack) {
        kind = 3u;
        bits = um;
    } else if (double(k.dt) * double(fv) > k.ly_slack) {
        kind = 4u;
        bits = vm;
    }
    if (kind != 0u) {
        rows[y].fail_step = pc.step_lo + 1u;
        rows[y].fail_kind = kind;
        rows[y].fail_bits = bits;
    }
}
