#include <check.h>
#include <math.h>
#include <stdint.h>

#include "../../core/rng.h"

START_TEST(same_key_same_value)
{
    ck_assert_uint_eq(er_rng_u64(7, 1, 42), er_rng_u64(7, 1, 42));
    ck_assert_uint_ne(er_rng_u64(7, 1, 42), er_rng_u64(8, 1, 42));
    ck_assert_uint_ne(er_rng_u64(7, 1, 42), er_rng_u64(7, 2, 42));
    ck_assert_uint_ne(er_rng_u64(7, 1, 42), er_rng_u64(7, 1, 43));
    /* chaining, not adding: (seed+1, index) must not equal (seed, index+1) */
    ck_assert_uint_ne(er_rng_u64(7, 1, 43), er_rng_u64(8, 1, 42));
}
END_TEST

/* Pinned values: a change here changes every droplet's start and so every
 * output; it must be deliberate (and bump the recipe version). */
START_TEST(pinned_values)
{
    ck_assert_uint_eq(er_rng_u64(1, 1, 0), UINT64_C(0x689ed7e96a3b83ca));
}
END_TEST

/* Mean, variance and bucket counts of 2^20 draws against the uniform
 * distribution: bounds are 6 standard errors, so a correct generator fails
 * about once in 10^8 runs (and the draws are fixed, so never).  Draws out
 * of [0, 1) are counted and asserted once: an assertion a draw made the
 * test slow enough to time out on a loaded machine. */
START_TEST(uniform_statistics)
{
    enum { N = 1 << 20, B = 64 };
    static int bucket[B];
    double sum = 0, sum2 = 0;
    long outside = 0;
    for (int i = 0; i < B; i++)
        bucket[i] = 0;
    for (uint64_t i = 0; i < N; i++) {
        double u = er_rng_unit(12345, 3, i);
        outside += !(u >= 0.0 && u < 1.0);
        sum += u;
        sum2 += u * u;
        bucket[er_rng_below(12345, 4, i, B)]++;
    }
    ck_assert_int_eq(outside, 0);
    double mean = sum / N, var = sum2 / N - mean * mean;
    ck_assert_double_le(fabs(mean - 0.5), 6 * sqrt(1.0 / 12 / N));
    ck_assert_double_le(fabs(var - 1.0 / 12), 6 * sqrt(1.0 / 180 / N));
    double expect = (double)N / B, sd = sqrt(expect * (1 - 1.0 / B)), worst = 0;
    for (int i = 0; i < B; i++)
        worst = fmax(worst, fabs(bucket[i] - expect));
    ck_assert_double_le(worst, 6 * sd);
}
END_TEST

/* Bit avalanche: flipping one index bit flips about half the output bits. */
START_TEST(avalanche)
{
    long flips = 0, trials = 0;
    for (uint64_t i = 0; i < 4096; i++)
        for (int b = 0; b < 64; b++, trials++)
            flips += __builtin_popcountll(er_rng_u64(3, 1, i) ^ er_rng_u64(3, 1, i ^ (UINT64_C(1) << b)));
    double mean = (double)flips / (double)trials;
    ck_assert_double_le(fabs(mean - 32.0), 0.1);
}
END_TEST

Suite *rng_suite(void);
Suite *rng_suite(void)
{
    Suite *s = suite_create("rng");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, same_key_same_value);
    tcase_add_test(tc, pinned_values);
    tcase_add_test(tc, uniform_statistics);
    tcase_add_test(tc, avalanche);
    suite_add_tcase(s, tc);
    return s;
}
