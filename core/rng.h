/*
 * Counter-based random numbers: every draw is a pure function of (seed,
 * stream, index), so a droplet's start or a raindrop's cell never depends on
 * which thread drew it or in which order.  No state, thread-safe.
 */
#ifndef ER_RNG_H
#define ER_RNG_H

#include <stdint.h>

/* Streams in use; a new use of random numbers takes a new stream number so
 * that adding it changes no existing result. */
enum {
    ER_STREAM_DROPLET_START = 1,  /* droplet start positions, index = droplet id */
    ER_STREAM_BLOCK_OFFSET = 2,   /* droplet block grid offset, index = batch number */
    ER_STREAM_RAINDROP = 3,       /* Mei raindrops, index = step * count + drop */
    ER_STREAM_SPH_SOURCE = 4,     /* SPH source particles (core/sph/sph.c) */
    ER_STREAM_SP_ROUTING = 5,     /* stream power's routing draws, index = cell */
    ER_STREAM_SP_LITHOLOGY = 6    /* stream power's rock field, index = octave and lattice point */
};

/* 64 well-mixed bits for (seed, stream, index). */
uint64_t er_rng_u64(uint64_t seed, uint64_t stream, uint64_t index);

/* A double in [0, 1) with 53 random bits. */
double er_rng_unit(uint64_t seed, uint64_t stream, uint64_t index);

/* An integer in [0, n) for n >= 1 (Lemire's multiply-shift, bias < 2^-32
 * for n < 2^32). */
uint32_t er_rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint32_t n);

#endif
