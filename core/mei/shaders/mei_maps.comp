#version 450
// erode: also-denorm-preserve
// The control maps' water of one sub-step (core/mei/pipe.c er_mei_add_maps),
// after the recipe's sources and before the flux: the sources raster's depth
// (float)(q dt), then the rain times the rain map (coef.rain is 0 then), each
// added to d of a terrain cell in the CPU's order.
#extension GL_GOOGLE_include_directive : require
#include "mei_common.glsl"
layout(local_size_x = MEI_GROUP, local_size_y = 1) in;

void main()
{
    if (step_gated())
        return;
    const Coef k = coef[pc.variant];
    uint x = gl_GlobalInvocationID.x, y = map_row(gl_GlobalInvocationID.y);
    if (x >= uint(k.w) || y >= uint(k.h))
        return;
    uint i = band_row(gl_GlobalInvocationID.y) * uint(k.w) + x;
    if (k.has_wall != 0 && is_wall(i))
        return;
    precise float dd = d[i];
    if ((k.ctl & CTL_SRC) != 0)
        dd = dd + q_dt[i];
    if ((k.ctl & CTL_RAIN) != 0 && k.map_rain > 0.0) {
        precise float v = k.map_rain * rain_map[i];
        dd = dd + v;
    }
    d[i] = dd;
}
