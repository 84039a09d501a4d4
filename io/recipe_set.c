/* -s KEY=VALUE: a key of the top level or of one stage ("stages.N.KEY"),
 * its value as JSON or a bare string, checked as the same key in a file
 * is. */
#include "recipe_internal.h"

#include <stdio.h>
#include <string.h>

/* The row of the top-level key that path ("mei.dt", "seed") lies in. */
static const er_key *top_row(const er_key *tab, size_t n, const char *path)
{
    char first[RECIPE_PATH_LEN];
    size_t len = strcspn(path, ".");
    if (len >= sizeof first)
        return NULL;
    memcpy(first, path, len);
    first[len] = '\0';
    return er_recipe_find_child(tab, n, "", first);
}

/* The stage a -s key addresses, "stages.1.mei.dt" or "stages[1].mei.dt":
 * its index (-1 when the key is not a stage's, -2 when the index is not
 * a number) and, in *rest, the key within the stage. */
static int stage_of_key(const char *k, const char **rest)
{
    const char *p;
    if (strncmp(k, "stages.", 7) == 0)
        p = k + 7;
    else if (strncmp(k, "stages[", 7) == 0)
        p = k + 7;
    else
        return -1;
    int i = 0, digits = 0;
    const int zero_first = *p == '0';
    for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
        i = i * 10 + (*p - '0');
    if (k[6] == '[' && *p == ']')
        p++;
    /* "stages.01" is refused, as JSON refuses the number 01: one
     * spelling for each stage */
    if (!digits || (zero_first && digits > 1) || *p != '.' || !p[1])
        return -2;
    *rest = p + 1;
    return i;
}

/* The key of -s KEY=VALUE (spaces around it dropped) into keybuf and its
 * VALUE as JSON, anything that is not JSON being a bare string (so that
 * -s model=droplet works without shell-quoted quotes); the caller deletes
 * *j. */
static er_status split_override(const er_recipe_ctx *c, const char *ov, char *keybuf, size_t size,
                                cJSON **j)
{
    char q[RECIPE_QUOTE_MAX + 4], qv[RECIPE_QUOTE_MAX + 4];
    const char *eq = strchr(ov, '=');
    *j = NULL;
    if (!eq)
        return er_recipe_fail(c, er_recipe_quote(q, sizeof q, ov), "expected KEY=VALUE");
    const char *k0 = ov, *k1 = eq;
    while (k0 < k1 && (*k0 == ' ' || *k0 == '\t'))
        k0++;
    while (k1 > k0 && (k1[-1] == ' ' || k1[-1] == '\t'))
        k1--;
    if (k0 == k1)
        return er_recipe_fail(c, NULL, "expected KEY=VALUE, got '%s'",
                              er_recipe_quote(q, sizeof q, ov));
    size_t klen = (size_t)(k1 - k0);
    if (klen >= size)
        klen = size - 1;
    memcpy(keybuf, k0, klen);
    keybuf[klen] = '\0';
    const char *val = eq + 1;
    size_t vlen = strlen(val);
    if (!memchr(val, '\0', vlen)) {
        const char *end = NULL;
        *j = cJSON_ParseWithLengthOpts(val, vlen, &end, 0);
        if (*j) {
            size_t at = (size_t)(end - val);
            while (at < vlen && er_recipe_is_space(val[at]))
                at++;
            if (at < vlen) {
                cJSON_Delete(*j);
                *j = NULL;
            }
        }
        size_t bad;
        if (*j && er_recipe_bad_number(val, vlen, &bad)) {
            cJSON_Delete(*j);
            *j = NULL;
            return er_recipe_fail(c, er_recipe_quote(q, sizeof q, keybuf),
                                  "'%s' is not a JSON number (no leading zeros, digits on "
                                  "both sides of a point); quote it for a string",
                                  er_recipe_quote(qv, sizeof qv, val));
        }
    }
    if (!*j)
        *j = cJSON_CreateString(val);
    if (!*j)
        return er_fail(c->err, ER_ENOMEM, "-s %s: out of memory",
                       er_recipe_quote(q, sizeof q, keybuf));
    return ER_OK;
}

/* The row of key `name` (a dotted path) in the table, or the error for an
 * unknown one, with the nearest known key suggested (after `prefix`, the
 * stage's "stages.N." for a stage's key); `shown` names it. */
static er_status find_key(const er_recipe_ctx *c, const er_key *keys, size_t n_keys,
                          const char *name, const char *prefix, const char *shown,
                          const er_key **out)
{
    char parent[RECIPE_PATH_LEN];
    size_t klen = strlen(name);
    *out = NULL;
    for (size_t i = 0; i < n_keys; i++)
        if (strcmp(keys[i].path, name) == 0) {
            *out = &keys[i];
            return ER_OK;
        }
    if (klen >= sizeof parent)
        return er_recipe_fail(c, shown, "unknown key");
    memcpy(parent, name, klen + 1);
    char *dot = strrchr(parent, '.');
    const char *leaf = dot ? dot + 1 : name;
    if (dot)
        *dot = '\0';
    else
        parent[0] = '\0';
    int known = parent[0] == '\0';
    for (size_t i = 0; i < n_keys && !known; i++)
        known = keys[i].type == ER_KEY_OBJECT && strcmp(keys[i].path, parent) == 0;
    const char *s = er_recipe_suggest(keys, n_keys, parent, known, dot ? leaf : name, name);
    const char *list = strstr(name, "sources[");
    if (list) { /* the list's own name, user text made safe for one line */
        char whole[RECIPE_PATH_LEN], q[RECIPE_QUOTE_MAX + 4];
        snprintf(whole, sizeof whole, "%.*s", (int)(list - name + 7), name);
        return er_recipe_fail(c, shown, "unknown key, set the whole list: -s '%s%s=[...]'", prefix,
                              er_recipe_quote(q, sizeof q, whole));
    }
    if (s)
        return er_recipe_fail(c, shown, "unknown key, did you mean '%s%s'?", prefix, s);
    return er_recipe_fail(c, shown, "unknown key");
}

/* After -s stages.N.model changed stage i's model from `was`: a key the
 * stage set in the section of its old model, which the new one does not
 * hold, would be dropped without a word; refused, naming it. */
static er_status keys_left_behind(const er_recipe_ctx *c, const er_stages *r, int i,
                                  er_model_kind was, const char *shown)
{
    size_t n_keys;
    const er_key *keys = er_keys_params(&n_keys);
    const er_model_kind now = r->stage[i].model;
    if (now == was || er_stage_holds_section(now, was))
        return ER_OK;
    const char *section = er_model_name(was);
    const size_t len = strlen(section);
    for (size_t k = 0; k < n_keys; k++) {
        const er_key *row = &keys[k];
        if (strncmp(row->path, section, len) != 0 || row->path[len] != '.' ||
            row->type == ER_KEY_OBJECT || row->type == ER_KEY_COMMENT ||
            (row->flags & ER_KEY_OLD_NAME) ||
            !er_recipe_value_differs(row, (const char *)&r->stage[i], (const char *)&r->top))
            continue;
        return er_recipe_fail(c, shown, "stage %d sets %s, which a %s stage does not take: give "
                              "the stages whole with -s stages=[...]", i, row->path,
                              er_model_name(now));
    }
    return ER_OK;
}

/* -s for stage `i`, key `rest` within it: the stage's own value, checked
 * as a stage's key in the file is. */
static er_status override_stage(const er_recipe_ctx *c, er_stages *r, int i, const char *rest,
                                const char *shown, const cJSON *j)
{
    size_t n_keys;
    const er_key *keys = er_keys_params(&n_keys), *k, *top;
    if (r->n == 0)
        return er_recipe_fail(c, shown, "the recipe has no stages");
    if (i < 0 || i >= r->n)
        return er_recipe_fail(c, shown, "no such stage: the recipe has %d (stages.0 to stages.%d)",
                              r->n, r->n - 1);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "stages.%d.", i);
    er_status st = find_key(c, keys, n_keys, rest, prefix, shown, &k);
    if (!st && (top = top_row(keys, n_keys, rest)) != NULL)
        st = er_recipe_stage_may_hold(c, top, r->stage[i].model, shown);
    if (!st && k->type == ER_KEY_COMMENT)
        st = er_recipe_fail(c, shown, "a comment is not set with -s");
    er_recipe_ctx in = *c;
    in.stages = NULL;
    in.model_key = NULL;
    const er_model_kind was = r->stage[i].model;
    if (!st)
        st = er_recipe_read_value(&in, keys, n_keys, k, (char *)&r->stage[i], j, shown);
    return st ? st : keys_left_behind(c, r, i, was, shown);
}

/* One -s KEY=VALUE onto recipe r: pass 0 takes the top level's keys
 * (recording a "stages" list in c), pass 1 the stages' own. */
er_status er_recipe_apply_override(er_recipe_ctx *c, const char *ov, er_stages *r, int pass)
{
    char keybuf[RECIPE_PATH_LEN], shown[RECIPE_QUOTE_MAX + 4];
    cJSON *j = NULL;
    c->where = "-s";
    c->sep = " ";
    c->dir = NULL;
    er_status st = split_override(c, ov, keybuf, sizeof keybuf, &j);
    if (st)
        return st;
    er_recipe_quote(shown, sizeof shown, keybuf);
    const char *rest = NULL;
    int stage = stage_of_key(keybuf, &rest);
    if (stage == -2)
        st = er_recipe_fail(c, shown, "expected stages.N.KEY, N the stage's number from 0 "
                            "without leading zeros");
    else if (stage >= 0 && pass == 1)
        st = override_stage(c, r, stage, rest, shown, j);
    else if (stage < 0 && pass == 0) {
        size_t n_keys;
        const er_key *keys = er_keys_params(&n_keys), *k = NULL, *top;
        st = find_key(c, keys, n_keys, keybuf, "", shown, &k);
        if (!st && c->model_key && !c->model_key[0] &&
            (top = top_row(keys, n_keys, keybuf)) && (top->flags & ER_KEY_MODEL))
            snprintf(c->model_key, RECIPE_PATH_LEN, "%s", shown);
        if (!st)
            st = er_recipe_read_value(c, keys, n_keys, k, (char *)&r->top, j, shown);
        if (!st && k->type == ER_KEY_STAGES) {
            cJSON_Delete(c->ov_stages); /* an earlier -s stages=[...] */
            c->ov_stages = j;           /* *c->stages points into it */
            j = NULL;
        }
    }
    cJSON_Delete(j);
    return st;
}
