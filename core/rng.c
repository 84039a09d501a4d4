#include "rng.h"

/* SplitMix64's finaliser (Steele, Lea & Flood 2014): a bijection on 64 bits
 * with full avalanche, so consecutive counters give independent-looking
 * outputs. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Keys are chained through the mixer rather than added together, so
 * (seed, stream, index) triples that share a sum do not collide. */
uint64_t er_rng_u64(uint64_t seed, uint64_t stream, uint64_t index)
{
    const uint64_t golden = UINT64_C(0x9e3779b97f4a7c15);
    uint64_t k = mix64(seed + golden);
    k = mix64(k ^ (stream * golden + UINT64_C(0x632be59bd9b4e019)));
    return mix64(k ^ (index + golden));
}

double er_rng_unit(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (double)(er_rng_u64(seed, stream, index) >> 11) * (1.0 / 9007199254740992.0);
}

uint32_t er_rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint32_t n)
{
    uint64_t r = er_rng_u64(seed, stream, index) >> 32;
    return (uint32_t)((r * n) >> 32);
}
