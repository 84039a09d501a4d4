#version 450
// erode: also-denorm-preserve
// Mei et al. (2007) eq. 1, river sources: adds each source's depth to the
// cells it covers, the sources of one cell in recipe order (as core/mei/pipe.c
// er_mei_add_sources adds them one source after another).  src holds, for
// pc.n cells: src[0 .. n) the cell indices, src[n .. 2n+1) the start of
// each cell's amounts in src[2n+1 ..) (float bits).
#extension GL_GOOGLE_include_directive : require
#include "mei_common.glsl"
layout(local_size_x = 64, local_size_y = 1) in;

void main()
{
    if (step_gated())
        return;
    uint t = gl_GlobalInvocationID.x;
    uint n = pc.n;
    if (t >= n)
        return;
    uint cell = src[t];
    uint a0 = src[n + t], a1 = src[n + t + 1u];
    precise float dd = d[cell];
    for (uint a = a0; a < a1; a++)
        dd = dd + uintBitsToFloat(src[2u * n + 1u + a]);
    d[cell] = dd;
}
