#version 450
// erode: also-denorm-preserve
// Mei et al. (2007) eqs. 1-5 for one cell: the new outflow fluxes (core/mei/pipe.c
// flux_generic + flux_cell) and the donor weight dt / d1.  Reads the old z, d
// of the cell and its neighbours; each cell updates only its own q.
#extension GL_GOOGLE_include_directive : require
#include "mei_common.glsl"
layout(local_size_x = MEI_GROUP, local_size_y = 1) in;

// Water surface b + (d + rain) (core/mei/pipe.c er_mei_surface_row).
float surface(uint i, float rain)
{
    precise float bb = b0[i] + z[i];
    precise float hh = bb + (d[i] + rain);
    return hh;
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
        qL[i] = 0.0; qR[i] = 0.0; qT[i] = 0.0; qB[i] = 0.0;
        wq[i] = 0.0;
        return;
    }
    precise float d1 = d[i] + k.rain;
    precise float hc = surface(i, k.rain);
    precise float bc = b0[i] + z[i];
    // neighbours L, R, T, B
    bool inside[4] = bool[4](x > 0u, x + 1u < w, y > 0u, y + 1u < h);
    uint nb[4] = uint[4](i - 1u, i + 1u, i - w, i + w);
    float qo[4] = float[4](qL[i], qR[i], qT[i], qB[i]);
    float c[4] = float[4](k.cx, k.cx, k.cy, k.cy);
    precise float q[4];
    for (int j = 0; j < 4; j++) {
        bool ok = false;
        precise float dh = 0.0;
        if (inside[j]) {
            if (!(k.has_wall != 0 && is_wall(nb[j]))) {
                ok = true;
                dh = hc - surface(nb[j], k.rain); // eq. 3
            }
        } else if (open_edge(k, j)) {
            // open edge: a dry virtual cell whose bed continues the fall
            // from the opposite neighbour, else level (pipe.c edge_head)
            uint o = nb[j ^ 1];
            precise float rise = 0.0;
            if (inside[j ^ 1] && !(k.has_wall != 0 && is_wall(o)))
                rise = max0((b0[o] + z[o]) - bc);
            ok = true;
            dh = (hc - bc) + rise;
        }
        precise float t = qo[j] + c[j] * dh; // eq. 2
        q[j] = ok ? max0(t) : 0.0;
    }
    precise float out_ = ((q[0] + q[1]) + (q[2] + q[3])) * k.dt;
    if (out_ > d1) {
        precise float kk = er_div(d1, out_); // eq. 4
        for (int j = 0; j < 4; j++)
            q[j] = q[j] * kk;         // eq. 5
    }
    qL[i] = q[0]; qR[i] = q[1]; qT[i] = q[2]; qB[i] = q[3];
    precise float wv = er_div(k.dt, d1);
    wq[i] = d1 > 0.0 ? wv : 0.0;
}
