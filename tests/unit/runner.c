/*
 * Collects every tests/unit/check_<name>.c suite (the Makefile lists them in
 * suites.h) and runs them.  Set CK_FORK=no to debug one test under gdb or
 * valgrind, CK_RUN_SUITE=<name> to run one suite.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#define ER_SUITE(name) Suite *name##_suite(void);
#include "suites.h"
#undef ER_SUITE

int main(void)
{
    SRunner *sr = srunner_create(NULL);
#define ER_SUITE(name) srunner_add_suite(sr, name##_suite());
#include "suites.h"
#undef ER_SUITE
    srunner_run_all(sr, CK_NORMAL);
    int run = srunner_ntests_run(sr);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    const char *results = getenv("ER_RESULTS");
    if (results) {
        FILE *f = fopen(results, "w");
        if (f) {
            fprintf(f, "%d %d\n", run - failed, failed);
            fclose(f);
        }
    }
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
