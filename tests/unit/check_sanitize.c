/*
 * The sanitizer run's own checks (SANITIZE=1): LeakSanitizer, with the
 * project's suppressions (tests/lsan.supp) in force, stays quiet about the
 * Vulkan driver and still reports a leak planted in erode's code.  Built
 * without AddressSanitizer, each test skips, saying so.
 */
#include <check.h>
#include <fcntl.h>

#include "../../core/backend.h"
#include "../../io/image.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define ER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ER_ASAN 1
#endif
#endif
#ifndef ER_ASAN
#define ER_ASAN 0
#endif

/* Drives the Vulkan driver the way `erode --list-devices` and a run do:
 * an instance to list devices, then a device opened and closed.  Without
 * Vulkan or a device this does nothing. */
static void exercise_driver(void)
{
    er_vk_device_info info[4];
    int count = 0;
    er_error err = {0};
    if (er_vk_list_devices(info, 4, &count, &err) != ER_OK || count == 0)
        return;
    er_vk_options o = {.device = 0, .validation = 0};
    er_vk_ctx *vk = NULL;
    if (er_vk_open(&o, &vk, &err) == ER_OK)
        er_vk_close(vk);
}

/* Allocates through erode's io/ code; leaks the copy when asked.  Not
 * inlined, and the pointers die with its frame, so nothing on the stack
 * still reaches them when the leak check runs. */
static __attribute__((noinline)) void copy_georef(int leak)
{
    double scale[3] = {30, 30, 0};
    char ascii[] = "WGS 84 / UTM zone 18N|";
    er_georef src = {.pixel_scale = scale, .n_pixel_scale = 3, .geoascii = ascii};
    er_georef dst;
    er_error err = {0};
    if (er_georef_copy(&dst, &src, &err) != ER_OK)
        exit(3);
    if (!leak)
        er_georef_free(&dst);
    memset(&dst, 0, sizeof dst);
}

/* Runs the driver and the georef copy in a child that ends through exit()
 * (LeakSanitizer checks in an atexit handler; _exit would skip it), with
 * its standard error in `log`; returns the child's exit status. */
static int run_child(int leak, const char *log)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(125);
        exercise_driver();
        copy_georef(leak);
        exit(0);
    }
    int ws = 0;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert_msg(WIFEXITED(ws), "child died of signal %d", WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    ck_assert_int_ne(WEXITSTATUS(ws), 125);
    return WEXITSTATUS(ws);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* Under ASan, the suppressions must be the project's: a by-hand run of
 * check_unit without them would test something else. */
static void require_project_suppressions(void)
{
    const char *o = getenv("LSAN_OPTIONS");
    ck_assert_msg(o && strstr(o, "tests/lsan.supp"),
                  "LSAN_OPTIONS does not name tests/lsan.supp: run through `make SANITIZE=1 check`");
}

/* Runs the child (leaking when asked) with the project's suppressions and
 * returns its exit status; *text is its standard error (static). */
static int child_report(int leak, const char **text)
{
    require_project_suppressions();
    char dir[PATH_MAX], log[PATH_MAX + 16];
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(log, sizeof log, "%s/stderr", dir);
    int status = run_child(leak, log);
    *text = slurp(log);
    er_test_rmdir(dir);
    return status;
}

START_TEST(driver_leaks_are_suppressed)
{
    ER_SKIP_IF(!ER_ASAN, "built without AddressSanitizer (make SANITIZE=1 runs it)");
    const char *text;
    int status = child_report(0, &text);
    ck_assert_msg(status == 0 && !strstr(text, "LeakSanitizer"),
                  "clean child exited %d:\n%s", status, text);
}
END_TEST

START_TEST(planted_leak_is_reported)
{
    ER_SKIP_IF(!ER_ASAN, "built without AddressSanitizer (make SANITIZE=1 runs it)");
    const char *text;
    int status = child_report(1, &text);
    ck_assert_msg(status != 0, "a planted leak went unreported (exit 0):\n%s", text);
    ck_assert_msg(strstr(text, "LeakSanitizer") && strstr(text, "er_georef_copy"),
                  "the report does not name the planted leak:\n%s", text);
}
END_TEST

Suite *sanitize_suite(void);
Suite *sanitize_suite(void)
{
    Suite *s = suite_create("sanitize");
    TCase *tc = tcase_create("leaks");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, driver_leaks_are_suppressed);
    tcase_add_test(tc, planted_leak_is_reported);
    suite_add_tcase(s, tc);
    return s;
}
