/*
 * What droplet_lague.comp (blocks) and droplet_snap.comp (snapshot) share:
 * the Lague step (core/droplet/lague.c's er_lague_step, see
 * droplet_lague.comp), the droplet state and its buffers.  The including
 * shader declares first the heights h[] (binding 0), the push constants
 * pc (the fields of droplet_lague.comp's Params first) and, after this
 * file, brush_apply, deposit_bilinear and add_flow: where the step's
 * writes go.
 */
/* one byte per cell, four to a word: bit 0 wall, bit 1 clean (the brush
 * window around the node is in the map and wall-free) */
layout(std430, binding = 3) readonly buffer Mask { uint mask[]; };
/* (2r-1)^2 brush weights, 0 outside the disc, sum 1 */
layout(std430, binding = 4) readonly buffer Brush { float bw[]; };

/* A droplet's start: base node and position relative to it, and its
 * water (initial_water times the rain map, er_lague_begin). */
struct Start {
    int bx, by;
    float lx, ly, water;
};
layout(std430, binding = 5) readonly buffer Starts { Start st[]; };

/* A droplet's (blocks: a block's) state between passes: its sums
 * (Kahan-compensated floats, value = s - c, added by the host in order),
 * progress (blocks: the next droplet; snapshot: 1 once started), the
 * droplet in flight.  Zeroed by the host before the batch. */
struct Block {
    float eroded, eroded_c, deposited, deposited_c;
    float left_map, left_map_c, water_left, water_left_c;
    uint steps_lo, steps_hi, next, live;
    int bx, by, it, pad;
    float lx, ly, lx0, ly0;
    float dx, dy, speed, water;
    float sed, pad1, pad2, pad3;
};
layout(std430, binding = 7) buffer Blocks { Block blocks[]; };
/* Control maps (core/controls.h), read when their flag is set: the share
 * of an erosion each cell gives, (1 - hardness) * mask, the CPU's array
 * (er_dctx.ctl_erode), and the mask, the share of a deposit it takes. */
layout(std430, binding = 8) readonly buffer ErodeK { float ek[]; };
layout(std430, binding = 9) readonly buffer DepMask { float dm[]; };
const uint F_FLOW = 1u, F_DEP = 2u, F_WALL = 4u, F_ERODE = 8u, F_DMASK = 16u, F_WEAR = 32u;
const float DIR_TINY = 1e-30;

/* The brush a step applies when it is over: erosion (amount > 0, no tap
 * below brush_stop), or the sediment of a droplet that ended (amount < 0)
 * (one call site, see above). */
bool brush_pending;
int brush_x, brush_y;
float brush_amount, brush_stop;

/* The block's state while the invocation runs (Block above). */
float s_er, c_er, s_dep, c_dep, s_left, c_left, s_wl, c_wl;
uint steps_lo, steps_hi;
int d_bx, d_by, d_it;
float d_lx, d_ly, d_lx0, d_ly0, d_dx, d_dy, d_speed, d_water, d_sed;

void kahan(inout float s, inout float c, float x)
{
    precise float y = x - c;
    precise float t = s + y;
    precise float d = (t - s) - y;
    c = d;
    s = t;
}

uint cell_mask(uint i)
{
    return (mask[i >> 2] >> ((i & 3u) * 8u)) & 0xffu;
}

bool is_wall(uint i)
{
    return (pc.flags & F_WALL) != 0u && (cell_mask(i) & 1u) != 0u;
}

/* er_maxf / er_minf: no NaN here, and the same choice on ties as the CPU. */
float maxf(float a, float b) { return a > b ? a : b; }
float minf(float a, float b) { return a < b ? a : b; }

bool brush_clean(int cx, int cy)
{
    int a = pc.radius - 1;
    if (cx < a || cx >= pc.width - a || cy < a || cy >= pc.height - a)
        return false;
    return (pc.flags & F_WALL) == 0u ||
           (cell_mask(uint(cy) * uint(pc.width) + uint(cx)) & 2u) != 0u;
}

/* A tap's share d of a brush at cell i times the cell's control value:
 * (1 - hardness) * mask for an erosion, mask for a deposit (one product
 * after the share, as core/droplet/brush.c). */
float ctl_share(float d, uint i, bool erode)
{
    precise float r = d;
    if (erode && (pc.flags & F_ERODE) != 0u)
        r = d * ek[i];
    else if (!erode && (pc.flags & F_DMASK) != 0u)
        r = d * dm[i];
    return r;
}

/* Where a step's changes go (the including shader): the brush (erosion
 * when amount > 0, no tap below stop; else a load laid down), the
 * bilinear deposit, the water at a step's cell.  count_pass(): the
 * snapshot schedule's count pass runs (droplet_snap.comp), and
 * count_deposit4 counts the four nodes of a step that may deposit. */
float brush_apply(int cx, int cy, float amount, float stop);
float deposit_bilinear(uint i00, float fx, float fy, float amount);
void add_flow(uint c, float water);
bool count_pass();
void count_deposit4(uint i00);

/* The droplet ends on the map: its sediment is spread by the brush around
 * the node nearest its last valid position. */
void lague_end()
{
    if (d_sed > 0.0) {
        int kx = int(d_lx), ky = int(d_ly);
        brush_pending = true;
        brush_x = d_bx + kx + (d_lx - float(kx) >= 0.5 ? 1 : 0);
        brush_y = d_by + ky + (d_ly - float(ky) >= 0.5 ? 1 : 0);
        brush_amount = -d_sed;
        d_sed = 0.0;
    }
}

/* A load at a droplet's end of which `laid` went down (the rest, under a
 * mask map or the snapshot schedule's deposit shares, leaves the terrain,
 * counted with left_map as er_end_load does). */
void end_load(float load, float laid)
{
    kahan(s_dep, c_dep, laid);
    if (laid < load) {
        precise float rest = load - laid;
        kahan(s_left, c_left, rest);
    }
}

void lague_begin(Start s)
{
    d_bx = s.bx;
    d_by = s.by;
    d_lx = d_lx0 = s.lx;
    d_ly = d_ly0 = s.ly;
    d_dx = d_dy = 0.0;
    d_speed = pc.init_speed;
    d_water = s.water;
    d_sed = 0.0;
    d_it = 0;
}

/* One droplet step (er_lague_step); returns true when the droplet ended. */
bool lague_step()
{
    const int W = pc.width, H = pc.height;
    const uint w = uint(W);
    const float lx = d_lx, ly = d_ly;
    const precise float lim = float(pc.lifetime) + 0.5;
    precise float dx = d_dx, dy = d_dy;
    const float speed = d_speed, water = d_water;
    precise float sed = d_sed;

    if (d_it >= pc.lifetime) {
        lague_end();
        return true;
    }
    int kx = int(lx), ky = int(ly);
    int ix = d_bx + kx, iy = d_by + ky;
    precise float fx = lx - float(kx), fy = ly - float(ky);
    uint i00 = uint(iy) * w + uint(ix);
    int cx = ix + (fx >= 0.5 ? 1 : 0), cy = iy + (fy >= 0.5 ? 1 : 0);
    d_it++;
    if ((pc.flags & F_FLOW) != 0u)
        add_flow(uint(cy) * w + uint(cx), water);
    steps_lo++;
    if (steps_lo == 0u)
        steps_hi++;

    /* Bilinear height and gradient at the position. */
    float h00 = h[i00], h10 = h[i00 + 1u], h01 = h[i00 + w], h11 = h[i00 + w + 1u];
    precise float gx = (h10 - h00) * (1.0 - fy) + (h11 - h01) * fy;
    precise float gy = (h01 - h00) * (1.0 - fx) + (h11 - h10) * fx;
    precise float hold = (h00 * (1.0 - fx) + h10 * fx) * (1.0 - fy) +
                         (h01 * (1.0 - fx) + h11 * fx) * fy;

    /* Inertia: the new direction leans on the old one. */
    dx = dx * pc.inertia - gx * pc.grad_k;
    dy = dy * pc.inertia - gy * pc.grad_k;
    precise float len2 = dx * dx + dy * dy;
    if (!(len2 > DIR_TINY)) {
        lague_end();
        return true;
    }
    precise float inv = 1.0 / sqrt(len2);
    dx *= inv;
    dy *= inv;

    /* Move one cell; stop off the map, past the reach bound (a guard
     * against rounding) or on a wall. */
    precise float nlx = lx + dx, nly = ly + dy;
    int kx2 = int(nlx), ky2 = int(nly);
    int jx = d_bx + kx2, jy = d_by + ky2;
    if (!(jx >= 0 && jx < W - 1 && jy >= 0 && jy < H - 1)) {
        kahan(s_left, c_left, sed);
        kahan(s_wl, c_wl, water);
        d_sed = 0.0;
        return true;
    }
    if (abs(nlx - d_lx0) > lim || abs(nly - d_ly0) > lim) {
        lague_end();
        return true;
    }
    uint j00 = uint(jy) * w + uint(jx);
    if ((pc.flags & F_WALL) != 0u &&
        ((cell_mask(j00) | cell_mask(j00 + 1u) | cell_mask(j00 + w) | cell_mask(j00 + w + 1u)) &
         1u) != 0u) {
        lague_end();
        return true;
    }
    precise float gx2 = nlx - float(kx2), gy2 = nly - float(ky2);
    float n00 = h[j00], n10 = h[j00 + 1u], n01 = h[j00 + w], n11 = h[j00 + w + 1u];
    precise float hnew = (n00 * (1.0 - gx2) + n10 * gx2) * (1.0 - gy2) +
                         (n01 * (1.0 - gx2) + n11 * gx2) * gy2;
    precise float dh = hnew - hold;

    /* Capacity: Lague's max(-dh v w K, min) or Beyer's max(-dh, min_slope) v w K. */
    precise float cap = pc.min_slope > 0.0
                            ? maxf(-dh, pc.min_slope) * speed * water * pc.cap_k
                            : maxf(-dh * speed * water * pc.cap_k, pc.min_cap);
    if (count_pass()) {
        /* core/droplet/lague.c er_lague_count: the taps the main pass may
         * lay on or take from; the load carried on bounds the main pass's. */
        if ((dh > 0.0 && sed > 0.0) || sed > cap)
            count_deposit4(i00);
        if (!(dh > 0.0)) {
            precise float amount = minf(cap * pc.erode_speed, -dh * pc.area_k);
            if (amount > 0.0) {
                brush_pending = true;
                brush_x = cx;
                brush_y = cy;
                brush_amount = amount;
                brush_stop = maxf(hnew, minf(minf(n00, n10), minf(n01, n11)));
            }
        }
    } else if (dh > 0.0 || sed > cap) {
        /* Uphill: fill the pit behind, at most dh; else drop a part of the
         * excess, onto the four nodes around the old position. */
        precise float amount = dh > 0.0 ? minf(dh * pc.area_k, sed) : (sed - cap) * pc.deposit_speed;
        amount = minf(amount, sed);
        amount = deposit_bilinear(i00, fx, fy, amount);
        sed -= amount;
        kahan(s_dep, c_dep, amount);
    } else {
        /* Never more than the height drop in all (times area_k, as on the
         * CPU), and no tap below the new position.  Applied when the step is over (nothing below reads
         * heights); the droplet's load grows by what the taps gave then. */
        precise float amount = minf((cap - sed) * pc.erode_speed, -dh * pc.area_k);
        if (amount > 0.0) {
            brush_pending = true;
            brush_x = cx;
            brush_y = cy;
            brush_amount = amount;
            brush_stop = maxf(hnew, minf(minf(n00, n10), minf(n01, n11)));
        }
    }
    precise float v2 = speed * speed - dh * pc.gravity;
    d_speed = sqrt(maxf(0.0, v2));
    d_water = water * pc.keep_water;
    d_sed = sed;
    d_dx = dx;
    d_dy = dy;
    d_lx = nlx;
    d_ly = nly;
    return false;
}

/* The state of T into the globals above, and back. */
void load_state(Block T)
{
    s_er = T.eroded;
    c_er = T.eroded_c;
    s_dep = T.deposited;
    c_dep = T.deposited_c;
    s_left = T.left_map;
    c_left = T.left_map_c;
    s_wl = T.water_left;
    c_wl = T.water_left_c;
    steps_lo = T.steps_lo;
    steps_hi = T.steps_hi;
    d_bx = T.bx;
    d_by = T.by;
    d_it = T.it;
    d_lx = T.lx;
    d_ly = T.ly;
    d_lx0 = T.lx0;
    d_ly0 = T.ly0;
    d_dx = T.dx;
    d_dy = T.dy;
    d_speed = T.speed;
    d_water = T.water;
    d_sed = T.sed;
}

void store_state(inout Block T)
{
    T.eroded = s_er;
    T.eroded_c = c_er;
    T.deposited = s_dep;
    T.deposited_c = c_dep;
    T.left_map = s_left;
    T.left_map_c = c_left;
    T.water_left = s_wl;
    T.water_left_c = c_wl;
    T.steps_lo = steps_lo;
    T.steps_hi = steps_hi;
    T.bx = d_bx;
    T.by = d_by;
    T.it = d_it;
    T.lx = d_lx;
    T.ly = d_ly;
    T.lx0 = d_lx0;
    T.ly0 = d_ly0;
    T.dx = d_dx;
    T.dy = d_dy;
    T.speed = d_speed;
    T.water = d_water;
    T.sed = d_sed;
}

/* One step of the droplet in flight and the brush it asked for; returns
 * true when the droplet ended. */
bool step_once()
{
    brush_pending = false;
    bool ended = lague_step();
    if (brush_pending) {
        precise float taken = brush_apply(brush_x, brush_y, brush_amount, brush_stop);
        if (brush_amount > 0.0) {
            precise float s2 = d_sed + taken;
            d_sed = s2;
            kahan(s_er, c_er, taken);
        } else {
            end_load(-brush_amount, taken);
        }
    }
    return ended;
}
