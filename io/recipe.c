/*
 * Recipes: JSON text to er_params and back (erode-recipe(5)).  This file
 * reads a recipe file and runs the parse in its order; the concerns it
 * calls are in io/recipe_*.c (recipe_internal.h).
 *
 * The key table of core/keys.c drives everything: parsing, type and range
 * checks, printing (--print-recipe and provenance metadata) and the "did you
 * mean" suggestions, so a key added to er_params needs one new row there and
 * nothing here.  The two structured values, the list of river sources and
 * the nullable/"relief" cases, are handled explicitly.
 */
#include "recipe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe_internal.h"

/* A recipe is a few kilobytes; the limit only stops a wrong path (a DEM
 * given as -r) from being read into memory whole. */
#define RECIPE_MAX_BYTES (16u << 20)

/* The error for a key of one model beside "stages": `key` is where the
 * first one was read (where_key: a path in the file, or a -s key), c the
 * ctx that read it. */
static er_status beside_stages(const er_recipe_ctx *c, const char *where_key)
{
    if (strcmp(where_key, "model") == 0)
        return er_recipe_fail(c, where_key, "beside \"stages\": each stage names its own model");
    return er_recipe_fail(c, where_key,
                          "a model's section beside \"stages\": it belongs in a stage of "
                          "that model (stages[N].%s)", where_key);
}

/* See recipe.h.  Works on a copy and writes *out only on success.  The
 * order: the file's top level, the -s keys of the top level, the stages
 * over them (so a -s of the top level reaches every stage that does not
 * set the key itself), then the -s keys of the stages.  Safe to call from
 * several threads at once except that cJSON records its last error in a
 * global (never read here); erode parses recipes on the main thread before
 * any work starts. */
static er_status parse_in(const char *text, size_t len, const char *where, const char *dir,
                          const char *const *overrides, int n_overrides, er_stages *out,
                          er_error *err)
{
    er_recipe_ctx c, file_ctx;
    er_status st = ER_OK;
    size_t n_keys;
    const er_key *keys = er_keys_params(&n_keys);
    const cJSON *stages = NULL, *file_stages = NULL;
    cJSON *root = NULL;
    char model_key[RECIPE_PATH_LEN] = "", file_model_key[RECIPE_PATH_LEN] = "";
    er_stages *r = calloc(1, sizeof *r);
    if (!r)
        return er_fail(err, ER_ENOMEM, "%s: out of memory", where && *where ? where : "recipe");
    c.where = where && *where ? where : "recipe";
    c.sep = ": ";
    c.err = err;
    c.dir = dir;
    c.stages = &stages;
    c.model_key = file_model_key;
    c.ov_stages = NULL;
    er_params_default(&r->top);
    file_ctx = c;

    if (text) {
        root = er_recipe_parse_json(&c, text, len, &st);
        if (!root)
            goto done;
        if (!cJSON_IsObject(root)) {
            st = er_recipe_fail(&c, NULL, "expected a JSON object, got %s",
                                er_recipe_json_type(root));
            goto done;
        }
        /* The version first: a newer recipe's new keys must not be
         * reported as unknown before the version is. */
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "erode_recipe");
        if (v)
            st = er_recipe_read_value(&c, keys, n_keys, &keys[0], (char *)&r->top, v,
                                      "erode_recipe");
        if (!st)
            st = er_recipe_read_object(&c, keys, n_keys, (char *)&r->top, root, "", "");
        if (!st)
            st = er_recipe_one_list(&c, keys, n_keys, root, (char *)&r->top, "");
        if (st)
            goto done;
    }
    file_stages = stages;
    c.model_key = model_key;
    for (int i = 0; i < n_overrides && !st; i++)
        st = er_recipe_apply_override(&c, overrides[i], r, 0);
    if (st)
        goto done;
    if (stages) {
        const er_recipe_ctx *from = stages == file_stages ? &file_ctx : &c;
        if (file_model_key[0])
            st = beside_stages(&file_ctx, file_model_key);
        else if (model_key[0])
            st = beside_stages(&c, model_key);
        if (!st)
            st = er_recipe_read_stages(from, keys, n_keys, stages, r);
    }
    for (int i = 0; i < n_overrides && !st; i++)
        st = er_recipe_apply_override(&c, overrides[i], r, 1);
    if (!st)
        *out = *r;
done:
    cJSON_Delete(root);
    cJSON_Delete(c.ov_stages);
    free(r);
    return st;
}

/* A recipe of one model (a staged one refused, naming where). */
static er_status one_model(er_status st, const er_stages *r, const char *where, er_params *out,
                           er_error *err)
{
    if (st)
        return st;
    if (r->n > 0)
        return er_fail(err, ER_EINVAL, "%s: stages: a staged recipe where one model is expected",
                       where && *where ? where : "recipe");
    *out = r->top;
    return ER_OK;
}

er_status er_recipe_parse_stages(const char *text, size_t len, const char *where,
                                 const char *const *overrides, int n_overrides, er_stages *out,
                                 er_error *err)
{
    return parse_in(text, len, where, NULL, overrides, n_overrides, out, err);
}

er_status er_recipe_parse(const char *text, size_t len, const char *where,
                          const char *const *overrides, int n_overrides, er_params *out,
                          er_error *err)
{
    er_stages *r = malloc(sizeof *r);
    if (!r)
        return er_fail(err, ER_ENOMEM, "%s: out of memory", where && *where ? where : "recipe");
    er_status st = er_recipe_parse_stages(text, len, where, overrides, n_overrides, r, err);
    st = one_model(st, r, where, out, err);
    free(r);
    return st;
}

/* The directory part of a file path ("" for a bare name) into dir[n]. */
static void dir_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    size_t len = slash ? (size_t)(slash - path) : 0;
    if (slash && len == 0)
        len = 1; /* "/recipe.json": the root */
    if (len >= n)
        len = n - 1;
    memcpy(dir, path, len);
    dir[len] = '\0';
}

/* See recipe.h.  An unreadable file is ER_EIO with strerror's text; a file
 * over RECIPE_MAX_BYTES is ER_EINVAL without being parsed; the path as given
 * is the `where` of every recipe error. */
er_status er_recipe_load_stages(const char *path, const char *const *overrides, int n_overrides,
                                er_stages *out, er_error *err)
{
    if (!path)
        return er_recipe_parse_stages(NULL, 0, NULL, overrides, n_overrides, out, err);
    char q[400];
    er_recipe_quote(q, sizeof q, path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return er_fail(err, ER_EIO, "cannot read '%s': %s", q, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    er_status st = ER_OK;
    if (!buf) {
        st = er_fail(err, ER_ENOMEM, "cannot read '%s': out of memory", q);
        goto done;
    }
    for (;;) {
        if (len == cap) {
            if (cap > RECIPE_MAX_BYTES) {
                st = er_fail(err, ER_EINVAL, "cannot read '%s': larger than %u MiB, not a recipe",
                             q, RECIPE_MAX_BYTES >> 20);
                goto done;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                st = er_fail(err, ER_ENOMEM, "cannot read '%s': out of memory", q);
                goto done;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                st = er_fail(err, ER_EIO, "cannot read '%s': %s", q, strerror(errno));
                goto done;
            }
            break;
        }
    }
    if (len > RECIPE_MAX_BYTES) {
        st = er_fail(err, ER_EINVAL, "cannot read '%s': larger than %u MiB, not a recipe", q,
                     RECIPE_MAX_BYTES >> 20);
        goto done;
    }
    char dir[ER_CTL_PATH_MAX];
    dir_of(path, dir, sizeof dir);
    st = parse_in(buf, len, q, dir, overrides, n_overrides, out, err);
done:
    free(buf);
    fclose(f);
    return st;
}

er_status er_recipe_load(const char *path, const char *const *overrides, int n_overrides,
                         er_params *out, er_error *err)
{
    er_stages *r = malloc(sizeof *r);
    if (!r)
        return er_fail(err, ER_ENOMEM, "out of memory");
    er_status st = er_recipe_load_stages(path, overrides, n_overrides, r, err);
    st = one_model(st, r, path, out, err);
    free(r);
    return st;
}
