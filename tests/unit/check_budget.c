/* The material budget's relative error and tolerance (core/state.c). */
#include <check.h>
#include <string.h>

#include "../../core/models.h"

/* A budget that moved `moved` (half eroded, half deposited) and misses by
 * `miss` [m * cells]. */
static er_budget moved_and_missed(double before, double moved, double miss)
{
    er_budget b;
    memset(&b, 0, sizeof b);
    b.material_before = before;
    b.eroded = b.deposited = moved / 2;
    b.material_after = before - miss;
    return b;
}

/* A map around sea level: the signed sum near 0 does not inflate the
 * measure (dividing by |material_before| would report 1e293 for a map of
 * zeros); the scale is the material moved plus float32's rounding of the
 * heights. */
START_TEST(relative_to_material_moved)
{
    er_budget b = moved_and_missed(1e-3, 100.0, 1e-6);
    ck_assert_double_eq_tol(er_budget_rel_error(&b, 0.0), 1e-8, 1e-20);
    ck_assert_double_eq_tol(er_budget_rel_error(&b, 0x1p24 * 100.0), 5e-9, 1e-20);
    /* nothing moved on zeros: 0, or 1 when material appeared anyway */
    b = moved_and_missed(0.0, 0.0, 0.0);
    ck_assert_double_eq(er_budget_rel_error(&b, 0.0), 0.0);
    b.material_after = 1.0;
    ck_assert_double_eq(er_budget_rel_error(&b, 0.0), 1.0);
    /* a model's own term enters the balance and the scale */
    b = moved_and_missed(50.0, 0.0, 0.0);
    *er_budget_term(&b, "uplifted") = 10.0;
    b.material_after = 60.0 - 1e-9;
    /* 60 - 1e-9 holds the miss to 1e-5 of itself */
    ck_assert_double_eq_tol(er_budget_rel_error(&b, 100.0), 1e-9 / (10.0 + 0x1p-24 * 100.0),
                            1e-15);
}
END_TEST

/* A completed run past its model's tolerance fails with one line; a model
 * without one never does. */
START_TEST(tolerance)
{
    er_model_ops m;
    memset(&m, 0, sizeof m);
    m.name = "some_model";
    er_budget b = moved_and_missed(10.0, 1.0, 0.5);
    b.rel_error = er_budget_rel_error(&b, 0.0);
    er_error err = {{0}};
    ck_assert_int_eq(er_budget_check(&m, &b, &err), ER_OK);
    m.budget_tol = 1.0;
    ck_assert_int_eq(er_budget_check(&m, &b, &err), ER_OK);
    m.budget_tol = 0.1;
    ck_assert_int_eq(er_budget_check(&m, &b, &err), ER_ENUMERIC);
    ck_assert_str_eq(err.msg, "some_model: material budget misses by 0.5 of the material moved "
                              "(tolerance 0.1)");
}
END_TEST

Suite *budget_suite(void);
Suite *budget_suite(void)
{
    Suite *s = suite_create("budget");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, relative_to_material_moved);
    tcase_add_test(tc, tolerance);
    suite_add_tcase(s, tc);
    return s;
}
