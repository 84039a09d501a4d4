/* JSON values into the structs the key table describes (core/keys.c):
 * type and range checks, control raster paths taken relative to the
 * recipe's directory, and the river sources list under either of its
 * names. */
#include "recipe_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A number within the key's range (and integral for integer keys). */
static er_status check_number(const er_recipe_ctx *c, const er_key *k, const char *path, double v,
                              int integer)
{
    char what[200];
    if (!er_key_check_number(k, v, integer, what, sizeof what))
        return er_recipe_fail(c, path, "%s", what);
    return ER_OK;
}

static er_status read_sources(const er_recipe_ctx *c, const er_key *k, char *base, const cJSON *j,
                              const char *path);

/* A control raster's path (ER_KEY_PATH): null = none; a recipe file's
 * relative path is taken relative to the recipe's directory. */
static er_status read_path(const er_recipe_ctx *c, const er_key *k, char *base, const cJSON *j,
                           const char *path)
{
    char *dst = base + k->off;
    if (cJSON_IsNull(j)) {
        dst[0] = '\0';
        return ER_OK;
    }
    if (!cJSON_IsString(j))
        return er_recipe_wrong_type(c, path, "a file path (string) or null", j);
    const char *v = j->valuestring;
    if (!v[0])
        return er_recipe_fail(c, path, "an empty path (null: no %s raster)", k->path);
    const char *dir = c->dir && v[0] != '/' ? c->dir : "";
    size_t dl = strlen(dir);
    int n = snprintf(dst, ER_CTL_PATH_MAX, "%s%s%s", dir, dl && dir[dl - 1] != '/' ? "/" : "", v);
    if (n < 0 || n >= ER_CTL_PATH_MAX)
        return er_recipe_fail(c, path, "the path is longer than %d bytes", ER_CTL_PATH_MAX - 1);
    return ER_OK;
}

/* Stores JSON value j for key k into the struct at base; `path` names it in
 * messages. */
er_status er_recipe_read_value(const er_recipe_ctx *c, const er_key *tab, size_t n,
                               const er_key *k, char *base, const cJSON *j, const char *path)
{
    char q[RECIPE_QUOTE_MAX + 4], num[40];
    switch (k->type) {
    case ER_KEY_OBJECT:
        if (!cJSON_IsObject(j))
            return er_recipe_wrong_type(c, path, "an object", j);
        return er_recipe_read_object(c, tab, n, base, j, k->path, path);
    case ER_KEY_VERSION:
        if (!cJSON_IsNumber(j))
            return er_recipe_wrong_type(c, path, "an integer", j);
        if (j->valuedouble != ER_RECIPE_VERSION) {
            er_key_fmt_number(num, sizeof num, j->valuedouble);
            return er_recipe_fail(c, path,
                                  "version %s is not supported, this erode reads version %d",
                                  num, ER_RECIPE_VERSION);
        }
        *(int *)(void *)(base + k->off) = ER_RECIPE_VERSION;
        return ER_OK;
    case ER_KEY_COMMENT:
        if (!cJSON_IsString(j))
            return er_recipe_wrong_type(c, path, "a string", j);
        return ER_OK;
    case ER_KEY_ENUM: {
        if (!cJSON_IsString(j))
            return er_recipe_wrong_type(c, path, "a string", j);
        char allowed[200];
        for (int i = 0; k->names[i]; i++) {
            if (strcmp(j->valuestring, k->names[i]) == 0) {
                *(int *)(void *)(base + k->off) = i;
                return ER_OK;
            }
        }
        er_key_choices_text(k, allowed, sizeof allowed);
        return er_recipe_fail(c, path, "'%s' is not one of %s",
                              er_recipe_quote(q, sizeof q, j->valuestring), allowed);
    }
    case ER_KEY_U64:
    case ER_KEY_INT: {
        int nullable = (k->flags & ER_KEY_NULL) != 0;
        if (nullable && cJSON_IsNull(j)) {
            *(int64_t *)(void *)(base + k->off) = -1;
            return ER_OK;
        }
        if (!cJSON_IsNumber(j))
            return er_recipe_wrong_type(c, path, nullable ? "an integer or null" : "an integer", j);
        er_status st = check_number(c, k, path, j->valuedouble, 1);
        if (st)
            return st;
        if (k->type == ER_KEY_U64)
            *(uint64_t *)(void *)(base + k->off) = (uint64_t)j->valuedouble;
        else
            *(int64_t *)(void *)(base + k->off) = (int64_t)j->valuedouble;
        return ER_OK;
    }
    case ER_KEY_NUM: {
        if ((k->flags & ER_KEY_NULL) && cJSON_IsNull(j)) {
            /* null: the default value, marked unset */
            *(double *)(void *)(base + k->off) = k->def;
            *(int *)(void *)(base + k->off2) = 0;
            return ER_OK;
        }
        const char *word = er_key_word(k);
        if (word && cJSON_IsString(j)) {
            if (strcmp(j->valuestring, word) != 0)
                return er_recipe_fail(c, path, "'%s' is not a number or '%s'",
                                      er_recipe_quote(q, sizeof q, j->valuestring), word);
            *(double *)(void *)(base + k->off) = 0.0;
            return ER_OK;
        }
        if (!cJSON_IsNumber(j)) {
            char want[32];
            snprintf(want, sizeof want, "a number or '%s'", word ? word : "");
            return er_recipe_wrong_type(c, path,
                                        k->flags & ER_KEY_NULL ? "a number or null"
                                        : word                 ? want
                                                               : "a number",
                                        j);
        }
        er_status st = check_number(c, k, path, j->valuedouble, 0);
        if (st)
            return st;
        *(double *)(void *)(base + k->off) = j->valuedouble;
        if (k->flags & ER_KEY_NULL)
            *(int *)(void *)(base + k->off2) = 1;
        return ER_OK;
    }
    case ER_KEY_SOURCES:
        return read_sources(c, k, base, j, path);
    case ER_KEY_PATH:
        return read_path(c, k, base, j, path);
    case ER_KEY_STAGES:
        if (!c->stages)
            return er_recipe_fail(c, path, "stages do not nest");
        if (!cJSON_IsArray(j))
            return er_recipe_wrong_type(c, path, "an array of stages", j);
        *c->stages = j;
        return ER_OK;
    }
    return er_recipe_fail(c, path, "internal error: unknown key type");
}

/* The members of one JSON object against the rows of `tab` whose parent is
 * `parent`; `shown` is the object's path in messages.  A duplicate name is
 * an error (cJSON keeps both). */
er_status er_recipe_read_object(const er_recipe_ctx *c, const er_key *tab, size_t n, char *base,
                                const cJSON *obj, const char *parent, const char *shown)
{
    char path[RECIPE_PATH_LEN], q[RECIPE_QUOTE_MAX + 4];
    for (const cJSON *m = obj->child; m; m = m->next) {
        const char *name = m->string ? m->string : "";
        snprintf(path, sizeof path, "%s%s%s", shown, *shown ? "." : "",
                 er_recipe_quote(q, sizeof q, name));
        for (const cJSON *e = obj->child; e != m; e = e->next)
            if (e->string && strcmp(e->string, name) == 0)
                return er_recipe_fail(c, path, "duplicate key");
        const er_key *k = er_recipe_find_child(tab, n, parent, name);
        if (!k) {
            char typed[RECIPE_PATH_LEN];
            snprintf(typed, sizeof typed, "%s%s%s", parent, *parent ? "." : "", name);
            const char *s = er_recipe_suggest(tab, n, parent, 1, name, typed);
            if (!s)
                return er_recipe_fail(c, path, "unknown key");
            /* suggestion shown in the object's own spelling (sources[3]) */
            size_t lp = strlen(parent);
            const char *rest = lp ? s + lp + 1 : s;
            if (strncmp(s, parent, lp) == 0 && er_recipe_is_child(s, parent))
                return er_recipe_fail(c, path, "unknown key, did you mean '%s%s%s'?", shown,
                                      *shown ? "." : "", rest);
            return er_recipe_fail(c, path, "unknown key, did you mean '%s'?", s);
        }
        if (c->model_key && !c->model_key[0] && !*parent && (k->flags & ER_KEY_MODEL))
            snprintf(c->model_key, RECIPE_PATH_LEN, "%s", path);
        er_status st = er_recipe_read_value(c, tab, n, k, base, m, path);
        if (st)
            return st;
    }
    return ER_OK;
}

/* river_sources (or its old spelling, ER_KEY_OLD_NAME): an array of at most
 * ER_MAX_SOURCES objects; it replaces the current list whole.  Unused
 * slots are zeroed so two equal recipes are equal structs.  A field
 * that does not go with the element's "at" is an error, a required one
 * that does is missing. */
static er_status read_sources(const er_recipe_ctx *c, const er_key *k, char *base, const cJSON *j,
                              const char *path)
{
    if (!cJSON_IsArray(j))
        return er_recipe_wrong_type(c, path, "an array", j);
    int count = cJSON_GetArraySize(j);
    if (count > ER_MAX_SOURCES)
        return er_recipe_fail(c, path, "%d sources, at most %d are allowed", count, ER_MAX_SOURCES);
    size_t n_source_keys;
    const er_key *source_keys = er_keys_source(&n_source_keys);
    er_source_list list;
    memset(&list, 0, sizeof list);
    char ipath[RECIPE_PATH_LEN], q[RECIPE_QUOTE_MAX + 4];
    int i = 0;
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        snprintf(ipath, sizeof ipath, "%s[%d]", path, i);
        if (!cJSON_IsObject(e))
            return er_recipe_wrong_type(c, ipath, "an object", e);
        er_source *s = &list.src[i];
        er_keys_default(source_keys, n_source_keys, s);
        er_status st = er_recipe_read_object(c, source_keys, n_source_keys, (char *)s, e, "",
                                             ipath);
        if (st)
            return st;
        const er_key *at = er_recipe_find_child(source_keys, n_source_keys, "", "at");
        const char *at_name = at->names[s->at];
        for (size_t r = 0; r < n_source_keys; r++) {
            const er_key *f = &source_keys[r];
            int given = cJSON_GetObjectItemCaseSensitive(e, f->path) != NULL;
            if (given && !er_key_source_field_applies(f, (int)s->at))
                return er_recipe_fail(c, ipath, "'%s' does not go with \"at\": \"%s\"", f->path,
                                      er_recipe_quote(q, sizeof q, at_name));
            if (!given && (f->flags & ER_KEY_REQUIRED) &&
                er_key_source_field_applies(f, (int)s->at))
                return er_recipe_fail(c, ipath, "missing key '%s'", f->path);
        }
    }
    list.n = count;
    list.old_key = count > 0 && (k->flags & ER_KEY_OLD_NAME);
    memcpy(base + k->off, &list, sizeof list);
    return ER_OK;
}

/* The JSON value at dotted path `p` of object o, or NULL. */
static const cJSON *json_at(const cJSON *o, const char *p)
{
    char name[RECIPE_PATH_LEN];
    while (o && *p) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof name)
            return NULL;
        memcpy(name, p, n);
        name[n] = '\0';
        o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
        p += n + (p[n] == '.');
    }
    return o;
}

/* A list a recipe may give under two names (river_sources and its old
 * spelling, ER_KEY_OLD_NAME): both non-empty is an error (which one is
 * meant?); one non-empty and the other an empty list is the non-empty
 * one, whichever the file gives first.  `where` prefixes the paths in
 * errors ("stages[1]." in a stage, else ""). */
er_status er_recipe_one_list(const er_recipe_ctx *c, const er_key *tab, size_t n,
                             const cJSON *root, char *base, const char *where)
{
    char pa[RECIPE_PATH_LEN], pb[RECIPE_PATH_LEN];
    for (size_t i = 0; i < n; i++) {
        if (!(tab[i].flags & ER_KEY_OLD_NAME))
            continue;
        for (size_t k = 0; k < n; k++) {
            if (k == i || tab[k].off != tab[i].off || (tab[k].flags & ER_KEY_OLD_NAME))
                continue;
            const cJSON *a = json_at(root, tab[k].path), *b = json_at(root, tab[i].path);
            int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b);
            snprintf(pa, sizeof pa, "%s%s", where, tab[k].path);
            snprintf(pb, sizeof pb, "%s%s", where, tab[i].path);
            if (na > 0 && nb > 0)
                return er_recipe_fail(c, pa,
                                      "given twice, as %s and as %s (its old spelling): keep one",
                                      tab[k].path, tab[i].path);
            if (a && b && (na > 0 || nb > 0))
                return er_recipe_read_value(c, tab, n, na > 0 ? &tab[k] : &tab[i], base,
                                            na > 0 ? a : b,
                                            na > 0 ? pa : pb);
        }
    }
    return ER_OK;
}
