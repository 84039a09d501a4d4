#version 450
// Per row, after a sub-step: the budget (terrain eroded and deposited,
// sediment and water through open edges) added to the row's running sums,
// in column order (fixed, so the same for every run), and the checks of
// core/mei.c finish_substep: non-finite state, non-finite velocity, CFL.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64, local_size_y = 1) in;
#include "mei_common.glsl"

void main()
{
    const Coef k = coef[pc.variant];
    uint y = gl_GlobalInvocationID.x;
    if (y >= uint(k.h))
        return;
    uint w = uint(k.w), h = uint(k.h);
    double se = 0.0, sd = 0.0, ls = 0.0, lw = 0.0;
    uint um = 0u, vm = 0u, bad = 0u;
    for (uint x = 0u; x < w; x++) {
        uint i = y * w + x;
        se += double(er[i]);
        sd += double(de[i]);
        um = max(um, floatBitsToUint(u[i]) & 0x7fffffffu);
        vm = max(vm, floatBitsToUint(v[i]) & 0x7fffffffu);
        bad |= nonfinite(z[i]) | nonfinite(d[i]) | nonfinite(s[i]);
        if (k.open != 0 && !(k.has_wall != 0 && is_wall(i))) {
            bool edge[4] = bool[4](x == 0u, x + 1u == w, y == 0u, y + 1u == h);
            float q[4] = float[4](qL[i], qR[i], qT[i], qB[i]);
            for (int j = 0; j < 4; j++)
                if (edge[j]) {
                    precise float o = s1[i] * (q[j] * wq[i]);
                    ls += double(o);
                    lw += double(q[j]) * double(k.dt);
                }
        }
    }
    rows[y].eroded += se;
    rows[y].deposited += sd;
    rows[y].left_sed += ls;
    rows[y].left_water += lw;
    if (rows[y].fail_step >= 0)
        return;
    float fu = uintBitsToFloat(um), fv = uintBitsToFloat(vm);
    uint kind = 0u, bits = 0u;
    if ((bad >> 31) != 0u)
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
        rows[y].fail_step = int(pc.step_lo);
        rows[y].fail_kind = kind;
        rows[y].fail_bits = bits;
    }
}
