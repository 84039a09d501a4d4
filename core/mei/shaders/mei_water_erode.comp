#version 450
// erode: also-denorm-preserve
// Mei et al. (2007) eqs. 6-9 and 15 (water depth, velocity, evaporation;
// core/mei/pipe.c water_cell) and eqs. 10-12 with thermal weathering (core/mei/
// erosion.c erode_generic + erode_cell) for one cell.  Reads the new fluxes
// of the cell and its neighbours, the old terrain of the neighbourhood;
// writes d (own cell), z2, s1, u, v, er, de.
#extension GL_GOOGLE_include_directive : require
#include "mei_common.glsl"
layout(local_size_x = MEI_GROUP, local_size_y = 1) in;

// core/mei/erosion.c talus_pair: slumping in times f_in, out times f_out
// (the control maps' shares; 1 and 1 without maps, its talus_gain).
float talus_pair(float dn, float talus, float f_in, float f_out)
{
    precise float a = dn - talus;
    precise float b = -dn - talus;
    precise float g = max0(a) * f_in - max0(b) * f_out;
    return g;
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
    er[i] = 0.0;
    de[i] = 0.0;
    if (k.has_wall != 0 && is_wall(i)) {
        d[i] = 0.0;
        u[i] = 0.0;
        v[i] = 0.0;
        z2[i] = 0.0;
        s1[i] = 0.0;
        return;
    }
    // water (eqs. 6-9, 15); a wall's outflow is 0
    precise float d1 = d[i] + k.rain;
    float inL = x > 0u ? qR[i - 1u] : 0.0;
    float inR = x + 1u < w ? qL[i + 1u] : 0.0;
    float inT = y > 0u ? qB[i - w] : 0.0;
    float inB = y + 1u < h ? qT[i + w] : 0.0;
    float oL = qL[i], oR = qR[i], oT = qT[i], oB = qB[i];
    precise float qin = (inL + inR) + (inT + inB);
    precise float qout = (oL + oR) + (oT + oB);
    precise float d2 = max0(d1 + k.dt * (qin - qout));
    precise float dbar = 0.5 * (d1 + d2);
    precise float uu = 0.0, vv = 0.0;
    if (dbar > ER_MEI_FILM) {
        precise float fu = k.hlx * ((inL + oR) - (oL + inR));
        precise float fv = k.hly * ((inT + oB) - (oT + inB));
        uu = er_div(fu, dbar);
        vv = er_div(fv, dbar);
    }
    precise float dn = d2 * k.keep;
    d[i] = dn;
    u[i] = uu;
    v[i] = vv;

    // erosion (eqs. 10-12) from the old terrain b = b0 + z
    bool inside[4] = bool[4](x > 0u, x + 1u < w, y > 0u, y + 1u < h);
    uint nb[4] = uint[4](i - 1u, i + 1u, i - w, i + w);
    bool ok[4];
    precise float bn[4];
    for (int j = 0; j < 4; j++) {
        ok[j] = inside[j] && !(k.has_wall != 0 && is_wall(nb[j]));
        bn[j] = 0.0;
        if (ok[j])
            bn[j] = b0[nb[j]] + z[nb[j]];
    }
    precise float bc = b0[i] + z[i];
    // the fall per axis (core/mei/erosion.c fall, erode_generic)
    precise float fl[2];
    for (int p = 0; p < 2; p++) {
        int a = 2 * p, c = 2 * p + 1;
        precise float da = bc - bn[a], dc = bc - bn[c];
        precise float ua = bn[a] - bc, uc = bn[c] - bc;
        fl[p] = ok[a] && ok[c] ? max0(maxf(da, dc))
              : ok[a]          ? maxf(da, ua)
              : ok[c]          ? maxf(dc, uc) : 0.0;
    }
    precise float gx = fl[0] * k.invlx, gy = fl[1] * k.invly;
    float lo[2];
    bool any_[2];
    for (int p = 0; p < 2; p++) {
        int a = 2 * p, c = 2 * p + 1;
        any_[p] = ok[a] || ok[c];
        lo[p] = ok[a] && ok[c] ? minf(bn[a], bn[c]) : ok[a] ? bn[a] : bn[c];
    }
    precise float lim = 0.0;
    if (any_[0] || any_[1]) {
        float m = any_[0] && any_[1] ? minf(lo[0], lo[1]) : any_[0] ? lo[0] : lo[1];
        lim = max0(bc - m);
    }
    // control maps (erode_generic): mask mc, bed-lowering share wc
    const float mc = mask_at(k, i), wc = soft_at(k, i);
    precise float th = 0.0;
    if (k.th_k > 0.0) {
        precise float g[4];
        float tal[4] = float[4](k.talus_x, k.talus_x, k.talus_y, k.talus_y);
        for (int j = 0; j < 4; j++) {
            g[j] = 0.0;
            if (ok[j]) {
                float mn = mask_at(k, nb[j]), wn = soft_at(k, nb[j]);
                precise float f_in = wn * mc, f_out = wc * mn;
                g[j] = talus_pair(bn[j] - bc, tal[j], f_in, f_out);
            }
        }
        th = k.th_k * ((g[0] + g[1]) + (g[2] + g[3]));
    }
    // erode_cell
    float zc = z[i], sc = s[i];
    precise float t2 = gx * gx + gy * gy;
    precise float t1 = 1.0 + t2;
    precise float sin2 = maxf(er_div(t2, t1), k.min_tilt2);
    precise float depth = dbar * k.inv_cd + k.cd_off; // |v| dbar / D, or |v|
    precise float cap = k.kc * er_sqrt(sin2 * (uu * uu + vv * vv)) * depth;
    precise float ks = k.ks_dt * wc, kd = k.kd_dt * mc;
    precise float e = minf(minf(ks * (cap - sc), k.emax), lim);
    precise float ze = zc - e;                    // eq. 11a
    precise float ea = zc - ze;
    precise float zd = zc + kd * (sc - cap);      // eq. 12a
    precise float da = zd - zc;
    bool erode = cap > sc;
    precise float s_e = sc + ea;                  // eq. 11b
    precise float s_d = max0(sc - da);            // eq. 12b
    er[i] = erode ? ea : 0.0;
    de[i] = erode ? 0.0 : da;
    s1[i] = erode ? s_e : s_d;
    precise float zn = (erode ? ze : zd) + th;
    z2[i] = zn;
}
