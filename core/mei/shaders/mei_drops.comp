#version 450
// erode: also-denorm-preserve
// Mei et al. (2007) eq. 1, random raindrops (core/mei/pipe.c er_mei_add_drops):
// drop j of step t lands on the cell drawn from er_rng_u64(seed,
// ER_STREAM_RAINDROP, t * count + j) (core/rng.c, reproduced here in 64-bit
// integers), and adds `amount` to the terrain cells of the disc of radius
// rad around it; the cell is drawn over the world (er_window), as on the
// CPU.  One workgroup handles the drops in order, its threads
// sharing the cells of one disc, with a barrier between drops, so
// overlapping drops add up in the CPU's order.
#extension GL_GOOGLE_include_directive : require
#define MEI_D_COHERENT
#include "mei_common.glsl"
layout(local_size_x = 64, local_size_y = 1) in;

uint64_t mix64(uint64_t zz)
{
    zz = (zz ^ (zz >> 30)) * 0xbf58476d1ce4e5b9UL;
    zz = (zz ^ (zz >> 27)) * 0x94d049bb133111ebUL;
    return zz ^ (zz >> 31);
}

uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t index)
{
    const uint64_t golden = 0x9e3779b97f4a7c15UL;
    uint64_t kk = mix64(seed + golden);
    kk = mix64(kk ^ (stream * golden + 0x632be59bd9b4e019UL));
    return mix64(kk ^ (index + golden));
}

void main()
{
    if (step_gated())
        return;
    const Coef k = coef[pc.variant];
    uint64_t seed = packUint2x32(uvec2(pc.seed_lo, pc.seed_hi));
    uint64_t count = packUint2x32(uvec2(pc.count_lo, pc.count_hi));
    uint64_t step = packUint2x32(uvec2(pc.step_lo, pc.step_hi));
    int64_t r2 = int64_t(packUint2x32(uvec2(pc.r2_lo, pc.r2_hi)));
    int w = k.w, h = k.h;
    for (uint64_t j = 0UL; j < count; j++) {
        uint64_t r = rng_u64(seed, 3UL, step * count + j); // ER_STREAM_RAINDROP
        // drawn over the world, clipped to the window (a drop beside it adds nothing)
        int cx = int(((r & 0xffffffffUL) * uint64_t(k.world_w)) >> 32) - k.wx0;
        int cy = int(((r >> 32) * uint64_t(k.world_h)) >> 32) - k.wy0;
        int x0 = max(cx - pc.fr, 0), x1 = min(cx + pc.fr, w - 1);
        // and to the band's rows
        int y0 = max(cy - pc.fr, max(pc.band_y0, 0));
        int y1 = min(cy + pc.fr, min(pc.band_y0 + int(pc.band_rows), h) - 1);
        int bw = x1 - x0 + 1, cells = x1 < x0 || y1 < y0 ? 0 : bw * (y1 - y0 + 1);
        for (int c = int(gl_LocalInvocationID.x); c < cells; c += 64) {
            int x = x0 + c % bw, y = y0 + c / bw;
            int64_t dx = int64_t(x - cx), dy = int64_t(y - cy);
            uint i = uint(y - pc.band_y0) * uint(w) + uint(x);
            if (dx * dx + dy * dy > r2 || (k.has_wall != 0 && is_wall(i)))
                continue;
            // times the rain map (pipe.c add_rain_cell); 1 without one
            float r = (k.ctl & CTL_RAIN) != 0 ? rain_map[i] : 1.0;
            precise float v = pc.amount * r;
            precise float dd = d[i] + v;
            d[i] = dd;
        }
        memoryBarrierBuffer();
        barrier();
    }
}
