// Shared by the Mei shaders (core/mei/shaders/mei_*.comp): the buffers,
// the coefficients and the cell helpers.  Every arithmetic expression that
// feeds the state is `precise` (SPIR-V NoContraction), so that no a * b + c
// is fused into an FMA: the CPU path is compiled with -ffp-contract=off and
// the two agree operation for operation.  Expressions keep the CPU's order
// and parentheses (core/mei/pipe.c, erosion.c, transport.c), and max(a, 0) is
// written as the CPU's select (a > 0 ? a : 0, NaN -> 0), not GLSL max().
// What Vulkan does not round correctly is kept out (erode-models(7) "VULKAN BACKEND",
// exactness rules): every float division is er_div, the square root is
// er_sqrt (through float64), no transcendental function and no integer-to-float
// conversion; denormals are kept by the ER_DENORM_PRESERVE build below.
#extension GL_ARB_gpu_shader_int64 : require

// Built twice (each mei_*.comp has the Makefile's marker line "erode:
// also-denorm-preserve"): with ER_DENORM_PRESERVE the shader declares the
// DenormPreserve execution mode for float32 (SPV_KHR_float_controls,
// capability DenormPreserve = 4464, mode 4459), so a GPU that would flush
// denormals to zero keeps them, as the CPU does; core/mei/vulkan.c takes
// that build where the device offers shaderDenormPreserveFloat32
// (er_vk_mei_exactness).
#ifdef ER_DENORM_PRESERVE
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 32);
#endif

// er_mei_coef of core/mei/mei_internal.h plus what the shaders need; std430
// lays the scalars out as the C struct core/mei/vulkan.c fills (mei_coef_gpu).
struct Coef {
    double lx_slack, ly_slack; // [m] lX, lY times the CFL check's rounding slack
    float dt, rain, cx, cy, hlx, hly, inv2lx, inv2ly, invlx, invly, kc, inv_cd, cd_off,
          ks_dt, kd_dt, emax, min_tilt2, keep, dry, th_k, talus_x, talus_y, dt_lx, dt_ly;
    int w, h, open, has_wall, semi_lagrangian;
    int wx0, wy0, world_w, world_h; // where the map lies in the world (er_window)
    int open_mask; // bit e set: edge e (L, R, T, B) is open (er_mei_coef open_edge)
    int ctl;        // CTL_* bits: the control maps given (core/controls.h)
    float map_rain; // [m] the rain mei_maps adds times the rain map (rain is 0 then)
    int layers;     // LAYER_* bits: the accumulators kept (er_layers flow, wear)
    int pad_layers;
};

bool open_edge(Coef k, int e) { return ((k.open_mask >> e) & 1) != 0; }

// One row's budget terms of the last sub-step and its checks over the run
// (core/mei/vulkan.c mei_rowstat); rows[h] holds the run's budget totals, the rows'
// terms added in row order after every sub-step (mei_total), as
// core/mei/mei.c finish_substep adds them.
struct RowStat {
    double eroded, deposited, left_sed, left_water;
    uint fail_step;  // step + 1 of the first failure, 0 = none
    uint fail_kind;  // 1 non-finite state, 2 non-finite velocity, 3 |u| CFL, 4 |v| CFL
    uint fail_bits;  // the velocity's float bits (kinds 3, 4)
    uint pad;
};

layout(std430, set = 0, binding = 0) readonly buffer CoefBuf { Coef coef[2]; };
layout(std430, set = 0, binding = 1) readonly buffer B0 { float b0[]; };  // initial terrain
layout(std430, set = 0, binding = 2) buffer Z { float z[]; };             // terrain change
layout(std430, set = 0, binding = 3) buffer Z2 { float z2[]; };           // z after erosion
// water depth; coherent only where invocations of one workgroup exchange it
// (mei_drops), so that elsewhere caches stay usable
#ifdef MEI_D_COHERENT
layout(std430, set = 0, binding = 4) coherent buffer D { float d[]; };
#else
layout(std430, set = 0, binding = 4) buffer D { float d[]; };
#endif
layout(std430, set = 0, binding = 5) buffer S { float s[]; };             // suspended sediment
layout(std430, set = 0, binding = 6) buffer S1 { float s1[]; };           // s after erosion
layout(std430, set = 0, binding = 7) buffer QL { float qL[]; };           // outflow fluxes
layout(std430, set = 0, binding = 8) buffer QR { float qR[]; };
layout(std430, set = 0, binding = 9) buffer QT { float qT[]; };
layout(std430, set = 0, binding = 10) buffer QB { float qB[]; };
layout(std430, set = 0, binding = 11) buffer WQ { float wq[]; };          // donor weight dt / d1
layout(std430, set = 0, binding = 12) buffer U { float u[]; };            // velocity
layout(std430, set = 0, binding = 13) buffer V { float v[]; };
layout(std430, set = 0, binding = 14) buffer ER { float er[]; };          // eroded this sub-step
layout(std430, set = 0, binding = 15) buffer DE { float de[]; };          // deposited this sub-step
layout(std430, set = 0, binding = 16) readonly buffer Wall { uint wall[]; }; // bytes, 1 = nodata
layout(std430, set = 0, binding = 17) buffer Rows { RowStat rows[]; }; // h + 1
layout(std430, set = 0, binding = 18) readonly buffer Src { uint src[]; }; // see core/mei/vulkan.c

// The control maps (core/controls.h), each on the map's grid when its
// CTL_* bit is set in Coef.ctl, else one unread word: hardness, rain, mask,
// and the sources raster as the depth (float)(q dt) it adds per sub-step.
#define CTL_HARD 1
#define CTL_RAIN 2
#define CTL_MASK 4
#define CTL_SRC 8
layout(std430, set = 0, binding = 20) readonly buffer Hard { float hard[]; };
layout(std430, set = 0, binding = 21) readonly buffer RainMap { float rain_map[]; };
layout(std430, set = 0, binding = 22) readonly buffer Mask { float mask[]; };
layout(std430, set = 0, binding = 23) readonly buffer QDt { float q_dt[]; };

// The flow and wear accumulators (core/mei/mei.c er_mei_accumulate_row),
// each on the map's grid when its LAYER_* bit is set in Coef.layers, else
// one unread word.
#define LAYER_FLOW 1
#define LAYER_WEAR 2
layout(std430, set = 0, binding = 24) buffer Flow { float flow[]; };
layout(std430, set = 0, binding = 25) buffer Wear { float wear[]; };

// The neutral value stands in for a map not given (mask 1, hardness 0),
// as core/mei/mei_internal.h er_ctl_at: a product with 1 changes no bit,
// so a run without maps keeps its results.
float mask_at(Coef k, uint i) { return (k.ctl & CTL_MASK) != 0 ? mask[i] : 1.0; }
float hard_at(Coef k, uint i) { return (k.ctl & CTL_HARD) != 0 ? hard[i] : 0.0; }

// (1 - h) m: the share of the rates that lower the bed at cell i.
float soft_at(Coef k, uint i)
{
    precise float w = (1.0 - hard_at(k, i)) * mask_at(k, i);
    return w;
}

// One lane's share of a row (core/mei/vulkan.c mei_part): lane j of mei_reduce sums
// the row's cells j, j + 64, j + 128, ... in that order.
struct Part {
    double eroded, deposited, left_sed, left_water;
    uint umax, vmax, bad, pad;
};
layout(std430, set = 0, binding = 19) buffer Parts { Part part[]; }; // h rows x MEI_LANES
#define MEI_LANES 64

// Cells of a row one workgroup of the per-cell passes covers (MEI_GROUP).
#define MEI_GROUP 256

layout(push_constant) uniform Push {
    uint step_lo, step_hi; // the step number
    uint variant;          // coef[variant]: 1 while it rains, else 0
    uint n;                // items of a 1D pass (rows, source cells)
    uint seed_lo, seed_hi; // recipe seed (raindrops)
    uint count_lo, count_hi; // raindrops per step
    float amount;          // [m] raindrop depth
    int fr;                // floor(drop radius)
    uint r2_lo, r2_hi;     // floor(drop radius^2)
    // The band this dispatch works on (core/mei/vulkan.c, erode-models(7) "VULKAN BACKEND",
    // large maps): its buffers hold the map's rows [band_y0, band_y0 +
    // band_rows), and the dispatch's row 0 is the buffers' row row0.  Cell
    // (x, y) of the map is at (y - band_y0) * w + x in them; the boundary
    // tests use the map's y.  One band of all rows: 0, 0, h.
    int band_y0;
    uint row0, band_rows, pad_band;
} pc;

// The step gate: true in every pass of a step after the run's first failing
// step (rows[h].fail_step, step + 1, which mei_total keeps), so that a run
// failing inside a submission of many steps ends in the state after its
// failing step, as with one step a submission, on every device
// (core/mei/vulkan.c).  Each pass of a later step returns at once.  The
// word is uniform over a dispatch: only mei_total writes it, after all its
// invocations have read it.
bool step_gated()
{
    uint f = rows[uint(coef[0].h)].fail_step;
    return f != 0u && pc.step_lo >= f;
}

// The map row of dispatch row gy, and its row in the band's buffers.
uint map_row(uint gy) { return gy + pc.row0 + uint(pc.band_y0); }
uint band_row(uint gy) { return gy + pc.row0; }

const float ER_MEI_FILM = 1e-9;

bool is_wall(uint i)
{
    return ((wall[i >> 2] >> ((i & 3u) * 8u)) & 0xffu) != 0u;
}

float max0(float a) { return a > 0.0 ? a : 0.0; }
float minf(float a, float b) { return a < b ? a : b; }
float maxf(float a, float b) { return a > b ? a : b; }

// er_sqrt of core/mei/mei_internal.h: the correctly rounded float32 square
// root, as the CPU's sqrtss gives it.  The double root rounded to float32
// is it: for a float x and a float32 rounding boundary m (25 bits), x - m^2
// is 0 or at least about 2^-49 x, so sqrt(x) lies 0 or at least about
// 2^-50 (relative) from m, and a double root a few ulps off (2^-53 each)
// still rounds to the right side (Figueroa 1995: innocuous for p >= 2q + 2).
float er_sqrt(float x)
{
    precise double r = sqrt(double(x));
    return float(r);
}

// a / b correctly rounded to float32, as the CPU's IEEE division gives it.
// GLSL lets a float division be off by 2.5 ulp, and real GPUs use that
// (an H100's division changes three tests' results).  Both operands are
// exact in double; the double quotient rounded to float32 is the directly
// rounded quotient because rounding first to p = 53 bits and then to
// q = 24 is innocuous for division when p >= 2q + 2 = 50 (Figueroa, "When
// is double rounding innocuous?", 1995).  It even survives a double
// division a few ulps off, but at exact ties: a quotient of two floats
// that is neither a float nor a tie lies at least about 2^-49 (relative)
// from every float32 rounding boundary.  This assumes IEEE float64
// division and conversion (the Vulkan spec promises less; an H100 gives
// it); Mei needs shaderFloat64 anyway (the budget sums).
float er_div(float a, float b)
{
    precise double q = double(a) / double(b);
    return float(q);
}

// Bit 31 set when f is not finite (transport.c nonfinite()).
uint nonfinite(float f)
{
    return (floatBitsToUint(f) & 0x7f800000u) + 0x00800000u;
}
