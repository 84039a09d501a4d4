#version 450
// erode: also-denorm-preserve
// After mei_rows: adds the rows' budget terms of the sub-step to the run's
// totals in rows[h], row by row from the top, as core/mei/mei.c
// finish_substep adds them.  The totals live on the device, so they are the
// same whichever steps the host waits between (a boundary read-back, a
// resumed run that uploads them) and a checkpoint carries them on exactly.
// Invocation q sums term q (eroded, deposited, left sediment, left water).
// Invocation 0 also keeps in rows[h].fail_step the first failure any row has
// seen: the gate (mei_common.glsl step_gated) every pass of a later step
// reads, so a failing run stops at the failing step however many steps one
// submission holds.
#extension GL_GOOGLE_include_directive : require
#include "mei_common.glsl"
layout(local_size_x = 4, local_size_y = 1) in;

void main()
{
    bool gated = step_gated();
    barrier(); // every invocation has read the gate before invocation 0 writes it
    if (gated)
        return;
    uint q = gl_LocalInvocationID.x;
    uint h = uint(coef[0].h);
    double t = q == 0u ? rows[h].eroded : q == 1u ? rows[h].deposited
             : q == 2u ? rows[h].left_sed : rows[h].left_water;
    for (uint y = 0u; y < h; y++)
        t += q == 0u ? rows[y].eroded : q == 1u ? rows[y].deposited
           : q == 2u ? rows[y].left_sed : rows[y].left_water;
    if (q == 0u)
        for (uint y = 0u; y < h && rows[h].fail_step == 0u; y++)
            rows[h].fail_step = rows[y].fail_step;
    if (q == 0u)
        rows[h].eroded = t;
    else if (q == 1u)
        rows[h].deposited = t;
    else if (q == 2u)
        rows[h].left_sed = t;
    else
        rows[h].left_water = t;
}
