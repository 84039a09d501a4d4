#version 450
// Mei et al. (2007) eq. 13, conservative donor-cell transport (core/
// transport.c transport_generic), then drying (settle).  Reads s1, q, wq of
// the neighbourhood and z2, d of the cell; writes z, d, s, de of the cell.
#extension GL_GOOGLE_include_directive : require
#include "mei_common.glsl"
layout(local_size_x = MEI_GROUP, local_size_y = 1) in;

void main()
{
    const Coef k = coef[pc.variant];
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    if (x >= uint(k.w) || y >= uint(k.h))
        return;
    uint w = uint(k.w), h = uint(k.h);
    uint i = y * w + x;
    if (k.has_wall != 0 && is_wall(i)) {
        s[i] = 0.0;
        z[i] = z2[i];
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
    // settle: below the dry threshold the water is gone, its sediment settles
    float zz = z2[i], dd = d[i];
    float m = dd < k.dry ? 1.0 : 0.0;
    precise float zn = zz + m * sn;
    precise float da = zn - zz;
    precise float s2 = max0(sn - da);
    precise float d2 = dd * (1.0 - m);
    precise float dep = de[i] + da;
    de[i] = dep;
    z[i] = zn;
    s[i] = s2;
    d[i] = d2;
}
