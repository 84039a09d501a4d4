/*
 * The Vulkan backend (core/backend.h): device listing, opening, refusals,
 * and the Mei model against the CPU path.  Every test skips, saying why,
 * when the binary was built without Vulkan or no Vulkan device exists (CI
 * installs lavapipe, Mesa's CPU device, so they run there).  Set
 * ERODE_VK_VALIDATION=1 to run them under the Khronos validation layer;
 * each test then asserts that the layer reported nothing.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/backend.h"
#include "../../core/model.h"
#include "test_util.h"

static int validation_wanted(void)
{
    const char *v = getenv("ERODE_VK_VALIDATION");
    return v && *v && strcmp(v, "0") != 0;
}

/* Opens device 0, or returns NULL after recording why the test skips. */
static er_vk_ctx *open_or_null(const char **why)
{
    er_vk_options o = {0, validation_wanted()};
    er_vk_ctx *vk = NULL;
    er_error err = {{0}};
    int n = 0;
    *why = NULL;
    if (!er_vk_built()) {
        *why = "built without Vulkan (make VULKAN=0, or no libvulkan-dev/glslangValidator)";
        return NULL;
    }
    if (er_vk_list_devices(NULL, 0, &n, &err) != ER_OK || n == 0) {
        *why = "no Vulkan device (install mesa-vulkan-drivers for lavapipe)";
        return NULL;
    }
    er_status st = er_vk_open(&o, &vk, &err);
    ck_assert_msg(st == ER_OK, "er_vk_open: %s", err.msg);
    return vk;
}

/* Closes vk after asserting that the validation layer said nothing. */
static void close_checked(er_vk_ctx *vk)
{
    char first[ER_ERROR_MAX];
    uint64_t n = er_vk_messages(vk, first, sizeof first);
    er_vk_close(vk);
    ck_assert_msg(n == 0, "%llu validation messages, the first: %s", (unsigned long long)n, first);
}

START_TEST(test_not_built_says_so)
{
    er_error err = {{0}};
    er_vk_ctx *vk = (er_vk_ctx *)&err; /* must be reset to NULL on failure */
    int n = -1;
    if (er_vk_built())
        return;
    ck_assert_int_eq(er_vk_list_devices(NULL, 0, &n, &err), ER_EUNSUPPORTED);
    ck_assert_int_eq(n, 0);
    ck_assert_str_eq(err.msg, ER_VK_NOT_BUILT);
    er_vk_options o = {0, 0};
    ck_assert_int_eq(er_vk_open(&o, &vk, &err), ER_EUNSUPPORTED);
    ck_assert_ptr_null(vk);
}
END_TEST

START_TEST(test_list_and_open)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    er_vk_device_info dev[8];
    er_error err = {{0}};
    int n = 0;
    ck_assert_int_eq(er_vk_list_devices(dev, 8, &n, &err), ER_OK);
    ck_assert_int_ge(n, 1);
    const er_vk_device_info *d = er_vk_info(vk);
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(d->name, dev[0].name);
    ck_assert_int_eq(d->index, 0);
    ck_assert(d->has_compute);
    /* Vulkan guarantees at least 2^27 bytes of storage buffer range */
    ck_assert_uint_ge(d->max_storage_buffer_range, (uint64_t)1 << 27);
    ck_assert_uint_gt(d->device_local_bytes, 0);
    close_checked(vk);
}
END_TEST

START_TEST(test_bad_device_index)
{
    const char *why;
    er_vk_ctx *vk = open_or_null(&why);
    ER_SKIP_IF(!vk, why);
    close_checked(vk);
    er_vk_options o = {99, 0};
    er_error err = {{0}};
    ck_assert_int_eq(er_vk_open(&o, &vk, &err), ER_EINVAL);
    ck_assert_ptr_null(vk);
    ck_assert_msg(strstr(err.msg, "no device 99"), "%s", err.msg);
}
END_TEST

Suite *vulkan_suite(void);
Suite *vulkan_suite(void)
{
    Suite *s = suite_create("vulkan");
    TCase *tc = tcase_create("device");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_not_built_says_so);
    tcase_add_test(tc, test_list_and_open);
    tcase_add_test(tc, test_bad_device_index);
    suite_add_tcase(s, tc);
    return s;
}
