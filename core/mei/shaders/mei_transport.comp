#version 450
// erode: also-denorm-preserve
// Mei et al. (2007) eq. 13, conservative donor-cell transport
// (core/mei/transport.c transport_generic), or eq. 14 as published
// (semi-Lagrangian), then drying (settle).  Reads s1, q, wq of the
// neighbourhood and z2, d of the cell; writes z, d, s, de of the cell,
// and adds to its flow and wear when the run keeps them.
#extension GL_GOOGLE_include_directive : require
#include "mei_common.glsl"
layout(local_size_x = MEI_GROUP, local_size_y = 1) in;

// Drying (transport.c settle): below the dry threshold the water is gone and
// the sediment it held settles onto the terrain, times the mask (the rest
// stays suspended).
void settle(uint i, Coef k, float sn)
{
    float zz = z2[i], dd = d[i];
    float m = dd < k.dry ? 1.0 : 0.0;
    precise float mm = m * mask_at(k, i);
    precise float zn = zz + mm * sn;
    precise float da = zn - zz;
    precise float s2 = max0(sn - da);
    precise float d2 = dd * (1.0 - m);
    precise float dep = de[i] + da;
    de[i] = dep;
    z[i] = zn;
    s[i] = s2;
    d[i] = d2;
}

// s1 at (xs, row ys) for eq. 14, or the cell's own value off the map or on
// a wall (transport.c sl_sample).
float sl_sample(Coef k, uint i, int xs, int ys, uint w, uint h)
{
    if (ys < 0 || ys >= int(h) || xs < 0 || xs >= int(w))
        return s1[i];
    uint j = uint(ys - pc.band_y0) * w + uint(xs);
    if (k.has_wall != 0 && is_wall(j))
        return s1[i];
    return s1[j];
}

// Eq. 14, s(x) = s1(x - u dt, y - v dt), bilinear, departure point at most
// one cell away (transport.c semi_lagrangian_cell).
float semi_lagrangian(Coef k, uint x, uint y, uint i, uint w, uint h)
{
    precise float ax = minf(maxf(u[i] * k.dt_lx, -1.0), 1.0);
    precise float ay = minf(maxf(v[i] * k.dt_ly, -1.0), 1.0);
    int xi = int(x), yi = int(y);
    int xs = ax > 0.0 ? xi - 1 : xi + 1;
    int ys = ay > 0.0 ? yi - 1 : yi + 1;
    float fx = abs(ax), fy = abs(ay);
    precise float r0 = (1.0 - fx) * sl_sample(k, i, xi, yi, w, h) + fx * sl_sample(k, i, xs, yi, w, h);
    precise float r1 = (1.0 - fx) * sl_sample(k, i, xi, ys, w, h) + fx * sl_sample(k, i, xs, ys, w, h);
    precise float r = (1.0 - fy) * r0 + fy * r1;
    return max0(r);
}

// The run's flow and wear (core/mei/mei.c er_mei_accumulate_row): the
// water this sub-step's fluxes take out of the cell, the terrain eq. 11
// dissolved; walls keep their 0.
void accumulate(Coef k, uint i)
{
    if ((k.layers & LAYER_FLOW) != 0) {
        precise float f = flow[i] + k.dt * ((qL[i] + qR[i]) + (qT[i] + qB[i]));
        flow[i] = f;
    }
    if ((k.layers & LAYER_WEAR) != 0) {
        precise float e = wear[i] + er[i];
        wear[i] = e;
    }
}

void main()
{
    if (step_gated())
        return;
    const Coef k = coef[pc.variant];
    uint x = gl_GlobalInvocationID.x, y = map_row(gl_GlobalInvocationID.y);
    if (x >= uint(k.w) || y >= uint(k.h))
        return;
    uint w = uint(k.w), h = uint(k.h);
    uint i = band_row(gl_GlobalInvocationID.y) * w + x;
    if (k.has_wall != 0 && is_wall(i)) {
        s[i] = 0.0;
        z[i] = z2[i];
        return;
    }
    accumulate(k, i);
    if (k.semi_lagrangian != 0) {
        settle(i, k, semi_lagrangian(k, x, y, i, w, h));
        return;
    }
    float sc = s1[i], wc = wq[i];
    precise float oL = sc * (qL[i] * wc), oR = sc * (qR[i] * wc);
    precise float oT = sc * (qT[i] * wc), oB = sc * (qB[i] * wc);
    precise float iL = 0.0, iR = 0.0, iT = 0.0, iB = 0.0;
    if (x > 0u)
        iL = s1[i - 1u] * (qR[i - 1u] * wq[i - 1u]);
    if (x + 1u < w)
        iR = s1[i + 1u] * (qL[i + 1u] * wq[i + 1u]);
    if (y > 0u)
        iT = s1[i - w] * (qB[i - w] * wq[i - w]);
    if (y + 1u < h)
        iB = s1[i + w] * (qT[i + w] * wq[i + w]);
    precise float sn = max0((sc - ((oL + oR) + (oT + oB))) + ((iL + iR) + (iT + iB)));
    settle(i, k, sn);
}
