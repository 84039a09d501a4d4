/*
 * Powers from + - * / only.  libm's pow, exp and log may differ in the
 * last bit between CPUs (glibc picks an FMA variant where the CPU has
 * one), and A^m reaches the heights every step, so the model computes
 * them itself: log2 by the atanh series, exp2 by Taylor's, each
 * evaluated in a fixed order, and the same bits on every IEEE machine
 * built with -ffp-contract=off.  Relative error about 1e-15, far below
 * what the heights (float32 on output) hold.
 */
#include <math.h>

#include "sp_internal.h"

/* ln(f) for f in [sqrt(1/2), sqrt(2)]: 2 atanh(s), s = (f - 1) / (f + 1),
 * |s| <= 0.1716; the series 2 (s + s^3/3 + s^5/5 + ...) to s^25 leaves
 * under 1e-20. */
static double ln_near_one(double f)
{
    const double s = (f - 1.0) / (f + 1.0), s2 = s * s;
    double p = 1.0 / 25.0;
    for (int k = 11; k >= 0; k--)
        p = p * s2 + 1.0 / (double)(2 * k + 1);
    return 2.0 * s * p;
}

/* 2^f for f in [-0.5, 0.5]: exp(t), t = f ln 2, |t| <= 0.35, by Taylor's
 * series to t^16 (remainder under 1e-20). */
static double exp2_small(double f)
{
    const double t = f * 0.69314718055994530942;
    double p = 1.0;
    for (int k = 16; k >= 1; k--)
        p = 1.0 + p * t / (double)k;
    return p;
}

double er_sp_pow(double x, double y)
{
    if (!(x > 0.0))
        return 0.0;
    int e;
    double f = frexp(x, &e); /* x = f 2^e, f in [0.5, 1): exact */
    if (f < 0.70710678118654752440) {
        f *= 2.0;
        e--;
    }
    const double l2 = (double)e + ln_near_one(f) / 0.69314718055994530942;
    const double v = y * l2;
    if (v > 1020.0)
        return HUGE_VAL;
    if (v < -1020.0)
        return 0.0;
    const double k = floor(v + 0.5);
    return ldexp(exp2_small(v - k), (int)k);
}
