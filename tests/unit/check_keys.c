/*
 * core/keys.c and core/params.c: the key table as the one source of every
 * key's range and default.  er_params_check accepts the defaults and every
 * shipped recipe, refuses each numeric key just outside each bound and NaN
 * (by iterating over the table), and agrees with the recipe reader on every
 * bound, message included.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/keys.h"
#include "../../core/params.h"
#include "../../core/stages.h"
#include "../../io/recipe.h"
#include "test_util.h"

static int is_numeric(const er_key *k)
{
    return k->type == ER_KEY_INT || k->type == ER_KEY_U64 || k->type == ER_KEY_NUM;
}

/* Stores v into key k's field of the struct at base, as the reader would
 * (a nullable number marked set); a negative v in a uint64_t wraps. */
static void set_value(const er_key *k, void *base, double v)
{
    char *b = base;
    if (k->type == ER_KEY_NUM) {
        *(double *)(void *)(b + k->off) = v;
        if (k->flags & ER_KEY_NULL)
            *(int *)(void *)(b + k->off2) = 1;
    } else if (k->type == ER_KEY_INT) {
        *(int64_t *)(void *)(b + k->off) = (int64_t)v;
    } else {
        *(uint64_t *)(void *)(b + k->off) = v < 0 ? UINT64_MAX : (uint64_t)v;
    }
}

/* A default recipe with one valid river source, at (x, y) or, when
 * source field k goes only with rules, at the peaks. */
static void with_source(er_params *p, const er_key *k)
{
    size_t ns;
    const er_key *st = er_keys_source(&ns);
    er_params_default(p);
    p->river.n = 1;
    er_keys_default(st, ns, &p->river.src[0]);
    if (k && !er_key_source_field_applies(k, ER_AT_XY))
        p->river.src[0].at = ER_AT_PEAKS;
    p->river.src[0].x = 3;
    p->river.src[0].y = 4;
    p->river.src[0].radius = 1;
    p->river.src[0].rate = 0.01;
}

/* The same value through the recipe reader: "-s path=v", or for a source
 * field the whole list from *p with the field set to v. */
static er_status read_back(const er_key *k, int source, const er_params *p, double v,
                           er_params *out, er_error *err)
{
    char ov[512];
    if (source && p->river.src[0].at == ER_AT_PEAKS) {
        er_source s = p->river.src[0];
        set_value(k, &s, v);
        snprintf(ov, sizeof ov,
                 "river_sources=[{\"at\": \"peaks\", \"count\": %.17g, \"spacing\": %.17g, "
                 "\"radius\": %.17g, \"rate\": %.17g}]",
                 (double)s.count, s.spacing, s.radius, s.rate);
    } else if (source) {
        er_source s = p->river.src[0];
        set_value(k, &s, v);
        snprintf(ov, sizeof ov,
                 "river_sources=[{\"x\": %.17g, \"y\": %.17g, \"radius\": %.17g, \"rate\": %.17g}]",
                 s.x, s.y, s.radius, s.rate);
    } else {
        snprintf(ov, sizeof ov, "%s=%.17g", k->path, v);
    }
    const char *ovs[] = {ov};
    return er_recipe_parse(NULL, 0, NULL, ovs, 1, out, err);
}

/* v is allowed for k: er_params_check accepts it, and so does the reader,
 * whose result er_params_check accepts too. */
static void assert_allowed(const er_key *k, int source, double v)
{
    er_params p, q;
    er_error err;
    if (source)
        with_source(&p, k);
    else
        er_params_default(&p);
    set_value(k, source ? (void *)&p.river.src[0] : (void *)&p, v);
    ck_assert_msg(er_params_check(&p, &err) == ER_OK, "%s = %.17g: %s", k->path, v, err.msg);
    ck_assert_msg(read_back(k, source, &p, v, &q, &err) == ER_OK, "%s = %.17g: %s", k->path, v,
                  err.msg);
    ck_assert_msg(er_params_check(&q, &err) == ER_OK, "%s = %.17g: %s", k->path, v, err.msg);
}

/* v is refused for k by er_params_check, with a message naming the key
 * ("river_sources[0]." before a source field); and, where the reader can
 * hold v, by the reader with the same message after its "-s ". */
static void assert_refused(const er_key *k, int source, double v)
{
    er_params p, q;
    er_error err, rerr;
    char want[128];
    if (source)
        with_source(&p, k);
    else
        er_params_default(&p);
    set_value(k, source ? (void *)&p.river.src[0] : (void *)&p, v);
    ck_assert_msg(er_params_check(&p, &err) == ER_EINVAL, "%s = %.17g passed", k->path, v);
    snprintf(want, sizeof want, "%s%s: ", source ? "river_sources[0]." : "", k->path);
    ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "is out of range, must be ") != NULL, "%s", err.msg);
    if (isnan(v) || (k->type == ER_KEY_U64 && v < 0))
        return;
    ck_assert_int_eq(read_back(k, source, &p, v, &q, &rerr), ER_EINVAL);
    ck_assert_msg(strncmp(rerr.msg, "-s ", 3) == 0, "%s", rerr.msg);
    ck_assert_str_eq(rerr.msg + 3, err.msg);
}

/* Each bound of key k: a closed one is allowed and the next value beyond it
 * refused; an open one refused and the next value inside allowed.  The next
 * value is +-1 for an integer and the adjacent double for a number. */
static void check_bounds(const er_key *k, int source)
{
    int integer = k->type != ER_KEY_NUM;
    double lo = k->min, hi = k->max;
    double below = integer ? lo - 1 : nextafter(lo, -INFINITY);
    double above = integer ? hi + 1 : nextafter(hi, INFINITY);

    /* -1 is null in a nullable integer (the reader spells it null): -2 is
     * the first value below 0 */
    if (integer && (k->flags & ER_KEY_NULL) && below == -1) {
        er_params p;
        er_error err;
        er_params_default(&p);
        set_value(k, &p, -1);
        ck_assert_int_eq(er_params_check(&p, &err), ER_OK);
        below = -2;
    }
    if (k->flags & ER_KEY_MIN_OPEN) {
        if (k->flags & ER_KEY_RELIEF) {
            /* 0 is "relief" in the struct (the reader spells it so) */
            er_params p;
            er_error err;
            er_params_default(&p);
            set_value(k, &p, 0.0);
            ck_assert_int_eq(er_params_check(&p, &err), ER_OK);
            assert_refused(k, source, nextafter(lo, -INFINITY));
        } else {
            assert_refused(k, source, lo);
        }
        assert_allowed(k, source, integer ? lo + 1 : nextafter(lo, INFINITY));
    } else {
        assert_allowed(k, source, lo);
        assert_refused(k, source, below);
    }
    if (k->flags & ER_KEY_MAX_OPEN) {
        assert_refused(k, source, hi);
        assert_allowed(k, source, integer ? hi - 1 : nextafter(hi, -INFINITY));
    } else {
        assert_allowed(k, source, hi);
        assert_refused(k, source, above);
    }
    if (!integer)
        assert_refused(k, source, NAN);
}

START_TEST(defaults_pass)
{
    er_params p;
    er_error err;
    er_params_default(&p);
    ck_assert_msg(er_params_check(&p, &err) == ER_OK, "%s", err.msg);
}
END_TEST

/* The defaults are the table's, key by key (er_params_default is nothing
 * else), and fill every byte: two calls give equal structs. */
START_TEST(defaults_from_table)
{
    er_params p, q;
    size_t n;
    const er_key *tab = er_keys_params(&n);
    memset(&p, 0xa5, sizeof p);
    memset(&q, 0x5a, sizeof q);
    er_params_default(&p);
    er_params_default(&q);
    ck_assert(memcmp(&p, &q, sizeof p) == 0);
    for (size_t i = 0; i < n; i++) {
        const er_key *k = &tab[i];
        const char *f = (const char *)&p + k->off;
        if (k->type == ER_KEY_NUM)
            ck_assert(*(const double *)(const void *)f == k->def);
        else if (k->type == ER_KEY_INT && !(k->flags & ER_KEY_DEF_NULL))
            ck_assert(*(const int64_t *)(const void *)f == (int64_t)k->def);
        else if (k->type == ER_KEY_ENUM)
            ck_assert_int_eq(*(const int *)(const void *)f, (int)k->def);
    }
    ck_assert_int_eq(p.droplet.count, -1);
    ck_assert_int_eq(p.terrain.cell_size_set, 0);
    ck_assert_int_eq(p.river.n, 0);
}
END_TEST

/* Every recipe in configs/: read, then checked again as a struct (each
 * stage of a staged one, and the stages together). */
START_TEST(configs_pass)
{
    char dir[PATH_MAX], path[PATH_MAX + 256];
    er_test_path(dir, sizeof dir, "configs");
    DIR *dp = opendir(dir);
    ck_assert_ptr_nonnull(dp);
    int found = 0, staged = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        er_stages r;
        er_error err;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ck_assert_msg(er_recipe_load_stages(path, NULL, 0, &r, &err) == ER_OK, "%s", err.msg);
        for (int k = 0; k < er_stages_count(&r); k++)
            ck_assert_msg(er_params_check(er_stages_at(&r, k), &err) == ER_OK, "%s: stage %d: %s",
                          e->d_name, k, err.msg);
        ck_assert_msg(er_stages_check(&r, 0, &err) == ER_OK, "%s: %s", e->d_name, err.msg);
        found++;
        staged += r.n > 0;
    }
    closedir(dp);
    ck_assert_int_ge(found, 10);
    ck_assert_int_ge(staged, 4);
}
END_TEST

/* Loop index: the keys of er_params, then those of a source. */
START_TEST(key_bounds)
{
    size_t n, ns;
    const er_key *tab = er_keys_params(&n), *src = er_keys_source(&ns);
    int source = (size_t)_i >= n;
    const er_key *k = source ? &src[(size_t)_i - n] : &tab[_i];
    if (is_numeric(k))
        check_bounds(k, source);
}
END_TEST

/* An enum outside its names, a wrong version, too many sources. */
START_TEST(non_numeric_refused)
{
    er_params p;
    er_error err;
    er_params_default(&p);
    p.mei.boundary = (er_boundary)2;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "mei.boundary: 2 is not one of 'closed', 'open'");
    er_params_default(&p);
    p.droplet.variant = (er_droplet_variant)-1;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "droplet.variant: -1 is not one of 'lague', 'mass-transfer'");
    er_params_default(&p);
    p.recipe_version = 2;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "erode_recipe: version 2 is not supported, this erode reads version 1");
    with_source(&p, NULL);
    p.river.src[0].coords = 3;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "river_sources[0].coords: 3 is not one of 'pixel', 'map', 'fraction'");
    with_source(&p, NULL);
    p.river.src[0].at = 2;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "river_sources[0].at: 2 is not one of 'xy', 'peaks'");
    /* a field that does not go with the source's "at" is not looked at */
    with_source(&p, NULL);
    p.river.src[0].count = 0;
    ck_assert_int_eq(er_params_check(&p, &err), ER_OK);
    p.river.src[0].at = ER_AT_PEAKS;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "river_sources[0].count: 0 is out of range, must be >= 1 and <= 64");
    with_source(&p, NULL);
    p.river.old_key = 1; /* read as the old spelling: messages name it */
    p.river.n = ER_MAX_SOURCES + 1;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "mei.sources: 65 sources, at most 64 are allowed");
    p.river.n = -1;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    /* a null cell size is not looked at */
    er_params_default(&p);
    p.terrain.cell_size = NAN;
    ck_assert_int_eq(er_params_check(&p, &err), ER_OK);
}
END_TEST

/* The key table once said (0, 1000] and the droplet model (0, 1).  A
 * particle starts with volume 1, so 1 and more are refused everywhere. */
START_TEST(min_volume_range)
{
    er_params p;
    er_error err;
    er_params_default(&p);
    p.droplet.mt_min_volume = 2;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg,
                     "droplet.mass_transfer.min_volume: 2 is out of range, must be > 0 and < 1");
    p.droplet.mt_min_volume = 1;
    ck_assert_int_eq(er_params_check(&p, &err), ER_EINVAL);
    p.droplet.mt_min_volume = 0.99;
    ck_assert_int_eq(er_params_check(&p, &err), ER_OK);
    const char *ov[] = {"droplet.mass_transfer.min_volume=1"};
    ck_assert_int_eq(er_recipe_parse(NULL, 0, NULL, ov, 1, &p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg,
                     "-s droplet.mass_transfer.min_volume: 1 is out of range, must be > 0 and < 1");
}
END_TEST

Suite *keys_suite(void);
Suite *keys_suite(void)
{
    size_t n_params, n_source;
    er_keys_params(&n_params);
    er_keys_source(&n_source);
    Suite *s = suite_create("keys");
    TCase *tc = tcase_create("defaults");
    tcase_add_test(tc, defaults_pass);
    tcase_add_test(tc, defaults_from_table);
    tcase_add_test(tc, configs_pass);
    suite_add_tcase(s, tc);

    tc = tcase_create("ranges");
    tcase_add_loop_test(tc, key_bounds, 0, (int)(n_params + n_source));
    tcase_add_test(tc, non_numeric_refused);
    tcase_add_test(tc, min_volume_range);
    suite_add_tcase(s, tc);
    return s;
}
