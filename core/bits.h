/*
 * A float's IEEE 754 binary32 bit pattern and back.  memcpy is the bit
 * cast C11 defines (a union read is implementation-defined in C++ and
 * easy to get wrong); compilers turn it into a register move.
 */
#ifndef ER_BITS_H
#define ER_BITS_H

#include <stdint.h>
#include <string.h>

/* The 32 bits of f, sign in bit 31.  Thread-safe. */
static inline uint32_t er_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The float whose bits are u (er_float_bits' inverse).  Thread-safe. */
static inline float er_bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
