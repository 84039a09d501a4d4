/*
 * Recipes: JSON text to er_params and back (DESIGN.md §2).
 *
 * The key table of core/keys.c drives everything: parsing, type and range
 * checks, printing (--print-recipe and provenance metadata) and the "did you
 * mean" suggestions, so a key added to er_params needs one new row there and
 * nothing here.  The two structured values, the list of river sources and
 * the nullable/"relief" cases, are handled explicitly.
 *
 * Numbers are written so that strtod() reads back the same double bit for
 * bit: the shortest "%.Ng" that round-trips.  This assumes the C locale for
 * LC_NUMERIC (erode never calls setlocale), as cJSON itself does.
 */
#include "recipe.h"

#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/keys.h"
#include "../core/models.h"
#include "../core/stages.h"

/* A recipe is a few kilobytes; the limit only stops a wrong path (a DEM
 * given as -r) from being read into memory whole. */
#define RECIPE_MAX_BYTES (16u << 20)

/* Longest dotted path or user string quoted in a message. */
#define PATH_MAX_LEN 256
#define QUOTE_MAX 48

typedef er_key key;

/* ------------------------------------------------------------------ */
/* Numbers as text                                                      */

/* A double for JSON: integral values keep a ".0" so a reader sees the key
 * takes a real number; anything else the shortest round-trip form. */
static void fmt_json_double(char *buf, size_t n, double d)
{
    if (d == floor(d) && fabs(d) < 1e15)
        snprintf(buf, n, "%.1f", d);
    else
        er_key_fmt_shortest(buf, n, d);
}

/* ------------------------------------------------------------------ */
/* Errors                                                               */

typedef struct ctx {
    const char *where; /* file name or "-s" */
    const char *sep;   /* between where and the path: ": ", or " " after -s */
    er_error *err;
    const char *dir;   /* the recipe file's directory ("" = the working one): the
                        * base of its relative paths; NULL for -s (the working one) */
    /* At the top level only (NULL in a stage): where a "stages" array read
     * is recorded, and the first key of one model read (model, a section),
     * which may not lie beside it. */
    const cJSON **stages;
    char *model_key;
    cJSON *ov_stages;  /* the list of a -s stages=[...] (the parse deletes it) */
} ctx;

static er_status fail_at(const ctx *c, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* "<where>: <path>: <what>" ("-s <path>: <what>"; the path left out when
 * empty). */
static er_status fail_at(const ctx *c, const char *path, const char *fmt, ...)
{
    char what[ER_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (path && *path)
        return er_fail(c->err, ER_EINVAL, "%s%s%s: %s", c->where, c->sep, path, what);
    return er_fail(c->err, ER_EINVAL, "%s: %s", c->where, what);
}

/* User text made safe for a one-line message: control bytes become '?',
 * long text is cut with "...". */
static const char *quote(char *buf, size_t n, const char *s)
{
    size_t i = 0, max = n - 4;
    for (; s[i] && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    if (s[i]) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}

static const char *json_type_name(const cJSON *j)
{
    if (cJSON_IsNull(j))
        return "null";
    if (cJSON_IsBool(j))
        return "a boolean";
    if (cJSON_IsNumber(j))
        return "a number";
    if (cJSON_IsString(j))
        return "a string";
    if (cJSON_IsArray(j))
        return "an array";
    if (cJSON_IsObject(j))
        return "an object";
    return "an invalid value";
}

static er_status wrong_type(const ctx *c, const char *path, const char *want, const cJSON *j)
{
    return fail_at(c, path, "expected %s, got %s", want, json_type_name(j));
}

/* ------------------------------------------------------------------ */
/* Suggestions                                                          */

/* Optimal-string-alignment distance (Levenshtein plus adjacent swaps),
 * case-insensitive.  Both strings at most 63 bytes. */
static int edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    int d[64][64];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++) {
        for (int j = 1; j <= lb; j++) {
            int ca = a[i - 1] >= 'A' && a[i - 1] <= 'Z' ? a[i - 1] + 32 : a[i - 1];
            int cb = b[j - 1] >= 'A' && b[j - 1] <= 'Z' ? b[j - 1] + 32 : b[j - 1];
            int cost = ca != cb;
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* How close `typed` is to the key name `known`: the edit distance when it
 * is small for the key's length (a third of it, 1 to 3 edits), 4 when one
 * is a prefix of the other (at least 3 characters), else -1. */
static int closeness(const char *typed, const char *known)
{
    size_t lt = strlen(typed), lk = strlen(known);
    if (lt == 0 || lt > 63 || lk > 63)
        return -1;
    int limit = (int)(lk + 1) / 3;
    limit = limit < 1 ? 1 : limit > 3 ? 3 : limit;
    int d = edit_distance(typed, known);
    if (d <= limit)
        return d;
    size_t shorter = lt < lk ? lt : lk;
    if (shorter >= 3 && strncmp(typed, known, shorter) == 0)
        return 4;
    return -1;
}

static const char *leaf_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

/* Is `k` a direct child of the object at `parent` ("" = top level)? */
static int is_child(const char *k, const char *parent)
{
    size_t lp = strlen(parent);
    if (lp == 0)
        return strchr(k, '.') == NULL;
    return strncmp(k, parent, lp) == 0 && k[lp] == '.' && strchr(k + lp + 1, '.') == NULL;
}

/* How many leading dotted components two paths share. */
static int common_components(const char *a, const char *b)
{
    int n = 0;
    for (size_t i = 0;; i++) {
        if (a[i] != b[i])
            return n;
        if (a[i] == '\0')
            return n + 1;
        if (a[i] == '.')
            n++;
    }
}

/* The known path to suggest for an unknown key `name` typed in the object
 * at `parent` ("" = top level; `typed` = the whole typed path), or NULL:
 *  1. a close name in the same object;
 *  2. when `parent` itself is no known object (a -s path with a typo in
 *     its first part), a full path within a few edits;
 *  3. a close name in another object (a key put in the wrong place), the
 *     closest first, then the one sharing most of the typed path. */
static const char *suggest(const key *tab, size_t n, const char *parent, int parent_known,
                           const char *name, const char *typed)
{
    const char *best = NULL;
    int best_d = 99, best_common = -1;
    for (size_t i = 0; i < n; i++) {
        if (tab[i].type == ER_KEY_COMMENT || !is_child(tab[i].path, parent))
            continue;
        int d = closeness(name, leaf_of(tab[i].path));
        if (d >= 0 && d < best_d) {
            best = tab[i].path;
            best_d = d;
        }
    }
    if (best)
        return best;
    if (!parent_known && strlen(typed) < 64) {
        for (size_t i = 0; i < n; i++) {
            if (tab[i].type == ER_KEY_COMMENT || strlen(tab[i].path) > 63)
                continue;
            int d = edit_distance(typed, tab[i].path);
            if (d <= 3 && d < best_d) {
                best = tab[i].path;
                best_d = d;
            }
        }
        if (best)
            return best;
    }
    for (size_t i = 0; i < n; i++) {
        if (tab[i].type == ER_KEY_COMMENT)
            continue;
        int d = closeness(name, leaf_of(tab[i].path));
        int cc = common_components(typed, tab[i].path);
        if (d >= 0 && (d < best_d || (d == best_d && cc > best_common))) {
            best = tab[i].path;
            best_d = d;
            best_common = cc;
        }
    }
    return best;
}

/* ------------------------------------------------------------------ */
/* Reading values                                                       */

static const key *find_child(const key *tab, size_t n, const char *parent, const char *name)
{
    size_t lp = strlen(parent);
    for (size_t i = 0; i < n; i++) {
        const char *k = tab[i].path;
        if (!is_child(k, parent))
            continue;
        if (strcmp(lp ? k + lp + 1 : k, name) == 0)
            return &tab[i];
    }
    return NULL;
}

/* A number within the key's range (and integral for integer keys). */
static er_status check_number(const ctx *c, const key *k, const char *path, double v,
                              int integer)
{
    char what[200];
    if (!er_key_check_number(k, v, integer, what, sizeof what))
        return fail_at(c, path, "%s", what);
    return ER_OK;
}

static er_status read_object(const ctx *c, const key *tab, size_t n, char *base,
                             const cJSON *obj, const char *parent, const char *shown);
static er_status read_sources(const ctx *c, const key *k, char *base, const cJSON *j,
                              const char *path);

/* Stores JSON value j for key k into the struct at base; `path` names it in
 * messages. */
/* A control raster's path (ER_KEY_PATH): null = none; a recipe file's
 * relative path is taken relative to the recipe's directory. */
static er_status read_path(const ctx *c, const key *k, char *base, const cJSON *j,
                           const char *path)
{
    char *dst = base + k->off;
    if (cJSON_IsNull(j)) {
        dst[0] = '\0';
        return ER_OK;
    }
    if (!cJSON_IsString(j))
        return wrong_type(c, path, "a file path (string) or null", j);
    const char *v = j->valuestring;
    if (!v[0])
        return fail_at(c, path, "an empty path (null: no %s raster)", k->path);
    const char *dir = c->dir && v[0] != '/' ? c->dir : "";
    size_t dl = strlen(dir);
    int n = snprintf(dst, ER_CTL_PATH_MAX, "%s%s%s", dir, dl && dir[dl - 1] != '/' ? "/" : "", v);
    if (n < 0 || n >= ER_CTL_PATH_MAX)
        return fail_at(c, path, "the path is longer than %d bytes", ER_CTL_PATH_MAX - 1);
    return ER_OK;
}

static er_status read_value(const ctx *c, const key *tab, size_t n, const key *k, char *base,
                            const cJSON *j, const char *path)
{
    char q[QUOTE_MAX + 4], num[40];
    switch (k->type) {
    case ER_KEY_OBJECT:
        if (!cJSON_IsObject(j))
            return wrong_type(c, path, "an object", j);
        return read_object(c, tab, n, base, j, k->path, path);
    case ER_KEY_VERSION:
        if (!cJSON_IsNumber(j))
            return wrong_type(c, path, "an integer", j);
        if (j->valuedouble != ER_RECIPE_VERSION) {
            er_key_fmt_number(num, sizeof num, j->valuedouble);
            return fail_at(c, path, "version %s is not supported, this erode reads version %d",
                           num, ER_RECIPE_VERSION);
        }
        *(int *)(void *)(base + k->off) = ER_RECIPE_VERSION;
        return ER_OK;
    case ER_KEY_COMMENT:
        if (!cJSON_IsString(j))
            return wrong_type(c, path, "a string", j);
        return ER_OK;
    case ER_KEY_ENUM: {
        if (!cJSON_IsString(j))
            return wrong_type(c, path, "a string", j);
        char allowed[200];
        for (int i = 0; k->names[i]; i++) {
            if (strcmp(j->valuestring, k->names[i]) == 0) {
                *(int *)(void *)(base + k->off) = i;
                return ER_OK;
            }
        }
        er_key_choices_text(k, allowed, sizeof allowed);
        return fail_at(c, path, "'%s' is not one of %s", quote(q, sizeof q, j->valuestring),
                       allowed);
    }
    case ER_KEY_U64:
    case ER_KEY_INT: {
        int nullable = (k->flags & ER_KEY_NULL) != 0;
        if (nullable && cJSON_IsNull(j)) {
            *(int64_t *)(void *)(base + k->off) = -1;
            return ER_OK;
        }
        if (!cJSON_IsNumber(j))
            return wrong_type(c, path, nullable ? "an integer or null" : "an integer", j);
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
        if ((k->flags & ER_KEY_RELIEF) && cJSON_IsString(j)) {
            if (strcmp(j->valuestring, "relief") != 0)
                return fail_at(c, path, "'%s' is not a number or 'relief'",
                               quote(q, sizeof q, j->valuestring));
            *(double *)(void *)(base + k->off) = 0.0;
            return ER_OK;
        }
        if (!cJSON_IsNumber(j))
            return wrong_type(c, path,
                              k->flags & ER_KEY_NULL     ? "a number or null"
                              : k->flags & ER_KEY_RELIEF ? "a number or 'relief'"
                                                         : "a number",
                              j);
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
            return fail_at(c, path, "stages do not nest");
        if (!cJSON_IsArray(j))
            return wrong_type(c, path, "an array of stages", j);
        *c->stages = j;
        return ER_OK;
    }
    return fail_at(c, path, "internal error: unknown key type");
}

/* The members of one JSON object against the rows of `tab` whose parent is
 * `parent`; `shown` is the object's path in messages.  A duplicate name is
 * an error (cJSON keeps both). */
static er_status read_object(const ctx *c, const key *tab, size_t n, char *base,
                             const cJSON *obj, const char *parent, const char *shown)
{
    char path[PATH_MAX_LEN], q[QUOTE_MAX + 4];
    for (const cJSON *m = obj->child; m; m = m->next) {
        const char *name = m->string ? m->string : "";
        snprintf(path, sizeof path, "%s%s%s", shown, *shown ? "." : "",
                 quote(q, sizeof q, name));
        for (const cJSON *e = obj->child; e != m; e = e->next)
            if (e->string && strcmp(e->string, name) == 0)
                return fail_at(c, path, "duplicate key");
        const key *k = find_child(tab, n, parent, name);
        if (!k) {
            char typed[PATH_MAX_LEN];
            snprintf(typed, sizeof typed, "%s%s%s", parent, *parent ? "." : "", name);
            const char *s = suggest(tab, n, parent, 1, name, typed);
            if (!s)
                return fail_at(c, path, "unknown key");
            /* suggestion shown in the object's own spelling (sources[3]) */
            size_t lp = strlen(parent);
            const char *rest = lp ? s + lp + 1 : s;
            if (strncmp(s, parent, lp) == 0 && is_child(s, parent))
                return fail_at(c, path, "unknown key, did you mean '%s%s%s'?", shown,
                               *shown ? "." : "", rest);
            return fail_at(c, path, "unknown key, did you mean '%s'?", s);
        }
        if (c->model_key && !c->model_key[0] && !*parent && (k->flags & ER_KEY_MODEL))
            snprintf(c->model_key, PATH_MAX_LEN, "%s", path);
        er_status st = read_value(c, tab, n, k, base, m, path);
        if (st)
            return st;
    }
    return ER_OK;
}

/* The model whose section is the top-level object `name`, or -1. */
static int section_model(const char *name)
{
    for (int m = 0; m < ER_MODEL_KINDS; m++)
        if (strcmp(er_model_name((er_model_kind)m), name) == 0)
            return m;
    return -1;
}

/* Whether top-level row k may lie in a stage of model m; if not, why, as
 * an error at `path`. */
static er_status stage_may_hold(const ctx *c, const key *k, er_model_kind m, const char *path)
{
    if (k->type == ER_KEY_VERSION)
        return fail_at(c, path, "the recipe's version: give it at the top level");
    if (k->type == ER_KEY_STAGES)
        return fail_at(c, path, "stages do not nest");
    if (k->type == ER_KEY_OBJECT && !(k->flags & ER_KEY_MODEL))
        return fail_at(c, path, "every stage works on one %s: set it at the top level", k->path);
    int sm = k->type == ER_KEY_OBJECT ? section_model(k->path) : -1;
    if (sm >= 0 && !er_stage_holds_section(m, (er_model_kind)sm))
        return fail_at(c, path, "a %s section in a stage of model %s: it belongs in a %s stage",
                       k->path, er_model_name(m), k->path);
    return ER_OK;
}

static er_status one_list(const ctx *c, const key *tab, size_t n, const cJSON *root, char *base,
                          const char *where);

/* Stage i of a "stages" array: the top level with the stage's keys over
 * it (core/stages.h).  Its model first, so that the sections it may hold
 * are known; a key that may not lie in a stage is an error. */
static er_status read_stage(const ctx *c, const key *tab, size_t n, const er_params *top,
                            const cJSON *obj, int i, er_params *out)
{
    char shown[32], path[PATH_MAX_LEN], q[QUOTE_MAX + 4];
    ctx in = *c;
    in.stages = NULL;
    in.model_key = NULL;
    snprintf(shown, sizeof shown, "stages[%d]", i);
    if (!cJSON_IsObject(obj))
        return wrong_type(c, shown, "an object (a stage)", obj);
    *out = *top;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(obj, "model");
    if (!model)
        return fail_at(c, shown, "missing key 'model' (each stage names its model)");
    snprintf(path, sizeof path, "%s.model", shown);
    er_status st = read_value(&in, tab, n, find_child(tab, n, "", "model"), (char *)out, model,
                              path);
    for (const cJSON *m = obj->child; m && !st; m = m->next) {
        const key *k = m->string ? find_child(tab, n, "", m->string) : NULL;
        snprintf(path, sizeof path, "%s.%s", shown, quote(q, sizeof q, m->string ? m->string : ""));
        if (k)
            st = stage_may_hold(c, k, out->model, path);
    }
    if (!st)
        st = read_object(&in, tab, n, (char *)out, obj, "", shown);
    snprintf(path, sizeof path, "%s.", shown);
    return st ? st : one_list(&in, tab, n, obj, (char *)out, path);
}

/* The stages of array j (a "stages" read from the file or from -s, whose
 * errors name it: ctx c) over the top level. */
static er_status read_stages(const ctx *c, const key *tab, size_t n, const cJSON *j,
                             er_stages *r)
{
    int count = cJSON_GetArraySize(j), i = 0;
    if (count == 0)
        return fail_at(c, "stages", "an empty list: give at least one stage (a recipe of one "
                       "model has no \"stages\")");
    if (count > ER_MAX_STAGES)
        return fail_at(c, "stages", "%d stages, at most %d are allowed", count, ER_MAX_STAGES);
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        er_status st = read_stage(c, tab, n, &r->top, e, i, &r->stage[i]);
        if (st)
            return st;
    }
    r->n = count;
    return ER_OK;
}

/* river_sources (or its old spelling, ER_KEY_OLD_NAME): an array of at most
 * ER_MAX_SOURCES objects; it replaces the current list whole.  Unused
 * slots are zeroed so two equal recipes are equal structs.  A field
 * that does not go with the element's "at" is an error, a required one
 * that does is missing. */
static er_status read_sources(const ctx *c, const key *k, char *base, const cJSON *j,
                              const char *path)
{
    if (!cJSON_IsArray(j))
        return wrong_type(c, path, "an array", j);
    int count = cJSON_GetArraySize(j);
    if (count > ER_MAX_SOURCES)
        return fail_at(c, path, "%d sources, at most %d are allowed", count, ER_MAX_SOURCES);
    size_t n_source_keys;
    const key *source_keys = er_keys_source(&n_source_keys);
    er_source_list list;
    memset(&list, 0, sizeof list);
    char ipath[PATH_MAX_LEN], q[QUOTE_MAX + 4];
    int i = 0;
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        snprintf(ipath, sizeof ipath, "%s[%d]", path, i);
        if (!cJSON_IsObject(e))
            return wrong_type(c, ipath, "an object", e);
        er_source *s = &list.src[i];
        er_keys_default(source_keys, n_source_keys, s);
        er_status st = read_object(c, source_keys, n_source_keys, (char *)s, e, "", ipath);
        if (st)
            return st;
        const key *at = find_child(source_keys, n_source_keys, "", "at");
        const char *at_name = at->names[s->at];
        for (size_t r = 0; r < n_source_keys; r++) {
            const key *f = &source_keys[r];
            int given = cJSON_GetObjectItemCaseSensitive(e, f->path) != NULL;
            if (given && !er_key_source_field_applies(f, (int)s->at))
                return fail_at(c, ipath, "'%s' does not go with \"at\": \"%s\"", f->path,
                               quote(q, sizeof q, at_name));
            if (!given && (f->flags & ER_KEY_REQUIRED) && er_key_source_field_applies(f, (int)s->at))
                return fail_at(c, ipath, "missing key '%s'", f->path);
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
    char name[PATH_MAX_LEN];
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
static er_status one_list(const ctx *c, const key *tab, size_t n, const cJSON *root, char *base,
                          const char *where)
{
    char pa[PATH_MAX_LEN], pb[PATH_MAX_LEN];
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
                return fail_at(c, pa, "given twice, as %s and as %s (its old spelling): keep one",
                               tab[k].path, tab[i].path);
            if (a && b && (na > 0 || nb > 0))
                return read_value(c, tab, n, na > 0 ? &tab[k] : &tab[i], base, na > 0 ? a : b,
                                  na > 0 ? pa : pb);
        }
    }
    return ER_OK;
}

/* ------------------------------------------------------------------ */
/* Parsing                                                              */

/* Line and column (1-based, columns in characters) of offset `at`. */
static void line_col(const char *text, size_t at, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
            (*col)++;
        }
    }
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* `at` is cJSON's failure offset.  Two corrections make it point at the
 * offending character: where a member name was expected cJSON reports the
 * byte after the bad one, and when the text ends early it reports the last
 * byte (only a whitespace byte there says so for sure). */
static er_status malformed(const ctx *c, const char *text, size_t len, size_t at)
{
    size_t line, col;
    const char *what = "";
    if (at > len)
        at = len;
    if (at > 0 && !is_space(text[at - 1]) && text[at - 1] != '"') {
        size_t b = at - 1;
        while (b > 0 && is_space(text[b - 1]))
            b--;
        if (b > 0 && (text[b - 1] == ',' || text[b - 1] == '{'))
            at--;
    }
    if (len > 0 && at == len - 1 && is_space(text[at])) {
        at = len;
        what = ", unexpected end of text";
    }
    line_col(text, at, &line, &col);
    return fail_at(c, NULL, "line %zu, column %zu: malformed JSON%s", line, col, what);
}

/* Parses len bytes of JSON; NULL (with the error set) unless the text is
 * one complete value.  cJSON's end pointer (rather than
 * cJSON_GetErrorPtr, a global) gives the failure point. */
static cJSON *parse_json(const ctx *c, const char *text, size_t len, er_status *st)
{
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        *st = malformed(c, text, len, (size_t)(nul - text));
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        if (!end) {
            *st = er_fail(c->err, ER_ENOMEM, "%s: out of memory", c->where);
            return NULL;
        }
        *st = malformed(c, text, len, (size_t)(end - text));
        return NULL;
    }
    size_t at = (size_t)(end - text);
    while (at < len && is_space(text[at]))
        at++;
    if (at < len) {
        cJSON_Delete(root);
        *st = malformed(c, text, len, at);
        return NULL;
    }
    *st = ER_OK;
    return root;
}

/* The row of the top-level key that path ("mei.dt", "seed") lies in. */
static const key *top_row(const key *tab, size_t n, const char *path)
{
    char first[PATH_MAX_LEN];
    size_t len = strcspn(path, ".");
    if (len >= sizeof first)
        return NULL;
    memcpy(first, path, len);
    first[len] = '\0';
    return find_child(tab, n, "", first);
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
    for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
        i = i * 10 + (*p - '0');
    if (k[6] == '[' && *p == ']')
        p++;
    if (!digits || *p != '.' || !p[1])
        return -2;
    *rest = p + 1;
    return i;
}

/* The key of -s KEY=VALUE (spaces around it dropped) into keybuf and its
 * VALUE as JSON, anything that is not JSON being a bare string (so that
 * -s model=droplet works without shell-quoted quotes); the caller deletes
 * *j. */
static er_status split_override(const ctx *c, const char *ov, char *keybuf, size_t size,
                                cJSON **j)
{
    char q[QUOTE_MAX + 4];
    const char *eq = strchr(ov, '=');
    *j = NULL;
    if (!eq)
        return fail_at(c, quote(q, sizeof q, ov), "expected KEY=VALUE");
    const char *k0 = ov, *k1 = eq;
    while (k0 < k1 && (*k0 == ' ' || *k0 == '\t'))
        k0++;
    while (k1 > k0 && (k1[-1] == ' ' || k1[-1] == '\t'))
        k1--;
    if (k0 == k1)
        return fail_at(c, NULL, "expected KEY=VALUE, got '%s'", quote(q, sizeof q, ov));
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
            while (at < vlen && is_space(val[at]))
                at++;
            if (at < vlen) {
                cJSON_Delete(*j);
                *j = NULL;
            }
        }
    }
    if (!*j)
        *j = cJSON_CreateString(val);
    if (!*j)
        return er_fail(c->err, ER_ENOMEM, "-s %s: out of memory", quote(q, sizeof q, keybuf));
    return ER_OK;
}

/* The row of key `name` (a dotted path) in the table, or the error for an
 * unknown one, with the nearest known key suggested (after `prefix`, the
 * stage's "stages.N." for a stage's key); `shown` names it. */
static er_status find_key(const ctx *c, const key *keys, size_t n_keys, const char *name,
                          const char *prefix, const char *shown, const key **out)
{
    char parent[PATH_MAX_LEN];
    size_t klen = strlen(name);
    *out = NULL;
    for (size_t i = 0; i < n_keys; i++)
        if (strcmp(keys[i].path, name) == 0) {
            *out = &keys[i];
            return ER_OK;
        }
    if (klen >= sizeof parent)
        return fail_at(c, shown, "unknown key");
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
    const char *s = suggest(keys, n_keys, parent, known, dot ? leaf : name, name);
    const char *list = strstr(name, "sources[");
    if (list) { /* the list's own name, user text made safe for one line */
        char whole[PATH_MAX_LEN], q[QUOTE_MAX + 4];
        snprintf(whole, sizeof whole, "%.*s", (int)(list - name + 7), name);
        return fail_at(c, shown, "unknown key, set the whole list: -s '%s%s=[...]'", prefix,
                       quote(q, sizeof q, whole));
    }
    if (s)
        return fail_at(c, shown, "unknown key, did you mean '%s%s'?", prefix, s);
    return fail_at(c, shown, "unknown key");
}

/* -s for stage `i`, key `rest` within it: the stage's own value, checked
 * as a stage's key in the file is. */
static er_status override_stage(const ctx *c, er_stages *r, int i, const char *rest,
                                const char *shown, const cJSON *j)
{
    size_t n_keys;
    const key *keys = er_keys_params(&n_keys), *k, *top;
    if (r->n == 0)
        return fail_at(c, shown, "the recipe has no stages");
    if (i < 0 || i >= r->n)
        return fail_at(c, shown, "no such stage: the recipe has %d (stages.0 to stages.%d)", r->n,
                       r->n - 1);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "stages.%d.", i);
    er_status st = find_key(c, keys, n_keys, rest, prefix, shown, &k);
    if (!st && (top = top_row(keys, n_keys, rest)) != NULL)
        st = stage_may_hold(c, top, r->stage[i].model, shown);
    if (!st && k->type == ER_KEY_COMMENT)
        st = fail_at(c, shown, "a comment is not set with -s");
    ctx in = *c;
    in.stages = NULL;
    in.model_key = NULL;
    return st ? st : read_value(&in, keys, n_keys, k, (char *)&r->stage[i], j, shown);
}

/* One -s KEY=VALUE onto recipe r: pass 0 takes the top level's keys
 * (recording a "stages" list in c), pass 1 the stages' own. */
static er_status apply_override(ctx *c, const char *ov, er_stages *r, int pass)
{
    char keybuf[PATH_MAX_LEN], shown[QUOTE_MAX + 4];
    cJSON *j = NULL;
    c->where = "-s";
    c->sep = " ";
    c->dir = NULL;
    er_status st = split_override(c, ov, keybuf, sizeof keybuf, &j);
    if (st)
        return st;
    quote(shown, sizeof shown, keybuf);
    const char *rest = NULL;
    int stage = stage_of_key(keybuf, &rest);
    if (stage == -2)
        st = fail_at(c, shown, "expected stages.N.KEY, N the stage's number from 0");
    else if (stage >= 0 && pass == 1)
        st = override_stage(c, r, stage, rest, shown, j);
    else if (stage < 0 && pass == 0) {
        size_t n_keys;
        const key *keys = er_keys_params(&n_keys), *k = NULL, *top;
        st = find_key(c, keys, n_keys, keybuf, "", shown, &k);
        if (!st && c->model_key && !c->model_key[0] &&
            (top = top_row(keys, n_keys, keybuf)) && (top->flags & ER_KEY_MODEL))
            snprintf(c->model_key, PATH_MAX_LEN, "%s", shown);
        if (!st)
            st = read_value(c, keys, n_keys, k, (char *)&r->top, j, shown);
        if (!st && k->type == ER_KEY_STAGES) {
            cJSON_Delete(c->ov_stages); /* an earlier -s stages=[...] */
            c->ov_stages = j;           /* *c->stages points into it */
            j = NULL;
        }
    }
    cJSON_Delete(j);
    return st;
}

/* The error for a key of one model beside "stages": `key` is where the
 * first one was read (where_key: a path in the file, or a -s key), c the
 * ctx that read it. */
static er_status beside_stages(const ctx *c, const char *where_key)
{
    if (strcmp(where_key, "model") == 0)
        return fail_at(c, where_key, "beside \"stages\": each stage names its own model");
    return fail_at(c, where_key, "a model's section beside \"stages\": it belongs in a stage of "
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
    ctx c, file_ctx;
    er_status st = ER_OK;
    size_t n_keys;
    const key *keys = er_keys_params(&n_keys);
    const cJSON *stages = NULL, *file_stages = NULL;
    cJSON *root = NULL;
    char model_key[PATH_MAX_LEN] = "", file_model_key[PATH_MAX_LEN] = "";
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
        root = parse_json(&c, text, len, &st);
        if (!root)
            goto done;
        if (!cJSON_IsObject(root)) {
            st = fail_at(&c, NULL, "expected a JSON object, got %s", json_type_name(root));
            goto done;
        }
        /* The version first: a newer recipe's new keys must not be
         * reported as unknown before the version is. */
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "erode_recipe");
        if (v)
            st = read_value(&c, keys, n_keys, &keys[0], (char *)&r->top, v, "erode_recipe");
        if (!st)
            st = read_object(&c, keys, n_keys, (char *)&r->top, root, "", "");
        if (!st)
            st = one_list(&c, keys, n_keys, root, (char *)&r->top, "");
        if (st)
            goto done;
    }
    file_stages = stages;
    c.model_key = model_key;
    for (int i = 0; i < n_overrides && !st; i++)
        st = apply_override(&c, overrides[i], r, 0);
    if (st)
        goto done;
    if (stages) {
        const ctx *from = stages == file_stages ? &file_ctx : &c;
        if (file_model_key[0])
            st = beside_stages(&file_ctx, file_model_key);
        else if (model_key[0])
            st = beside_stages(&c, model_key);
        if (!st)
            st = read_stages(from, keys, n_keys, stages, r);
    }
    for (int i = 0; i < n_overrides && !st; i++)
        st = apply_override(&c, overrides[i], r, 1);
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
    quote(q, sizeof q, path);
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

/* ------------------------------------------------------------------ */
/* Printing                                                             */

typedef struct sb {
    char *p;
    size_t len, cap;
    int oom;
} sb;

static void sb_add(sb *b, const char *s)
{
    size_t n = strlen(s);
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

static void sb_indent(sb *b, int pretty, int depth)
{
    if (!pretty)
        return;
    sb_add(b, "\n");
    for (int i = 0; i < depth; i++)
        sb_add(b, "  ");
}

/* The value of key k in the struct at base, as JSON. */
static void value_text(char *buf, size_t n, const key *k, const char *base)
{
    const void *f = base + k->off;
    switch (k->type) {
    case ER_KEY_VERSION:
        snprintf(buf, n, "%d", *(const int *)f);
        return;
    case ER_KEY_ENUM: {
        int v = *(const int *)f, count = 0;
        while (k->names[count])
            count++;
        snprintf(buf, n, "\"%s\"", v >= 0 && v < count ? k->names[v] : "?");
        return;
    }
    case ER_KEY_U64:
        snprintf(buf, n, "%" PRIu64, *(const uint64_t *)f);
        return;
    case ER_KEY_INT:
        if ((k->flags & ER_KEY_NULL) && *(const int64_t *)f < 0)
            snprintf(buf, n, "null");
        else
            snprintf(buf, n, "%" PRId64, *(const int64_t *)f);
        return;
    case ER_KEY_NUM:
        if ((k->flags & ER_KEY_NULL) && *(const int *)(const void *)(base + k->off2) == 0)
            snprintf(buf, n, "null");
        else if ((k->flags & ER_KEY_RELIEF) && *(const double *)f == 0.0)
            snprintf(buf, n, "\"relief\"");
        else
            fmt_json_double(buf, n, *(const double *)f);
        return;
    case ER_KEY_OBJECT:
    case ER_KEY_COMMENT:
    case ER_KEY_SOURCES:
    case ER_KEY_PATH:
    case ER_KEY_STAGES:
        break;
    }
    buf[0] = '\0';
}

/* A path key's value as JSON: null, or the string with JSON's escapes. */
static void print_path(sb *b, const char *s)
{
    if (!s[0]) {
        sb_add(b, "null");
        return;
    }
    char one[8];
    sb_add(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            snprintf(one, sizeof one, "\\%c", ch);
        else if (ch < 0x20)
            snprintf(one, sizeof one, "\\u%04x", ch);
        else
            snprintf(one, sizeof one, "%c", ch);
        sb_add(b, one);
    }
    sb_add(b, "\"");
}

/* How print_members writes an object. */
typedef struct print_opts {
    int pretty;
    int all;              /* control rasters not given as null (--print-recipe) */
    const er_stages *r;   /* at the top level: the recipe (its stages); else NULL */
    const er_params *top; /* in a stage: the top level; else NULL */
} print_opts;

static void print_members(sb *b, const key *tab, size_t n, const char *base, const char *parent,
                          const print_opts *o, int depth);

static void print_source(sb *b, const key *tab, size_t n, const er_source *s, int pretty);

static void print_sources(sb *b, const key *k, const char *base, int pretty, int depth)
{
    const er_source_list *l = (const er_source_list *)(const void *)(base + k->off);
    size_t n_source_keys;
    const key *source_keys = er_keys_source(&n_source_keys);
    sb_add(b, "[");
    for (int i = 0; i < l->n; i++) {
        if (i)
            sb_add(b, ",");
        sb_indent(b, pretty, depth + 1);
        sb_add(b, pretty ? "{ " : "{");
        print_source(b, source_keys, n_source_keys, &l->src[i], pretty);
        sb_add(b, pretty ? " }" : "}");
    }
    if (l->n)
        sb_indent(b, pretty, depth);
    sb_add(b, "]");
}

/* The fields of one source on one line, those that go with its "at". */
static void print_source(sb *b, const key *tab, size_t n, const er_source *s, int pretty)
{
    char val[64];
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        if (!er_key_source_field_applies(&tab[i], (int)s->at))
            continue;
        if (!first)
            sb_add(b, pretty ? ", " : ",");
        first = 0;
        sb_add(b, "\"");
        sb_add(b, tab[i].path);
        sb_add(b, pretty ? "\": " : "\":");
        value_text(val, sizeof val, &tab[i], (const char *)s);
        sb_add(b, val);
    }
}

/* Whether two source lists differ in a value --print-recipe writes. */
static int sources_differ(const er_source_list *a, const er_source_list *b)
{
    char va[64], vb[64];
    size_t n;
    const key *f = er_keys_source(&n);
    if (a->n != b->n)
        return 1;
    for (int i = 0; i < a->n; i++)
        for (size_t r = 0; r < n; r++) {
            value_text(va, sizeof va, &f[r], (const char *)&a->src[i]);
            value_text(vb, sizeof vb, &f[r], (const char *)&b->src[i]);
            if (strcmp(va, vb) != 0)
                return 1;
        }
    return 0;
}

/* Whether the value of row k differs between the structs at a and b. */
static int differs(const key *k, const char *a, const char *b)
{
    char va[64], vb[64];
    if (k->type == ER_KEY_PATH)
        return strcmp(a + k->off, b + k->off) != 0;
    if (k->type == ER_KEY_SOURCES)
        return sources_differ((const er_source_list *)(const void *)(a + k->off),
                              (const er_source_list *)(const void *)(b + k->off));
    value_text(va, sizeof va, k, a);
    value_text(vb, sizeof vb, k, b);
    return strcmp(va, vb) != 0;
}

/* Whether print_members writes row k of the struct at base.  In a stage:
 * its model, the sections it holds, and the top level's keys where the
 * stage's value differs (a stage inherits the others); at the top level
 * of a staged recipe no key of one model. */
static int printed(const key *k, const char *base, const print_opts *o)
{
    if (k->type == ER_KEY_COMMENT)
        return 0;
    if (o->top) {
        const er_params *p = (const er_params *)(const void *)base;
        if (k->type == ER_KEY_VERSION || k->type == ER_KEY_STAGES)
            return 0;
        if (k->type == ER_KEY_OBJECT) {
            int m = section_model(k->path);
            return m >= 0 && er_stage_holds_section(p->model, (er_model_kind)m);
        }
        return (k->flags & ER_KEY_MODEL) || differs(k, base, (const char *)o->top);
    }
    if (k->type == ER_KEY_STAGES)
        return o->r && o->r->n > 0;
    if ((k->flags & ER_KEY_MODEL) && o->r && o->r->n > 0)
        return 0;
    /* a control raster that is not given is left out, so a recipe
     * without maps records (in every output and a checkpoint's recipe
     * hash) as before; `all` (--print-recipe) shows it as null */
    return !(k->type == ER_KEY_PATH && !base[k->off] && !o->all);
}

/* "stages": [{...}, ...] of recipe r, each stage as `printed` says. */
static void print_stages(sb *b, const key *tab, size_t n, const er_stages *r,
                         const print_opts *o, int depth)
{
    const print_opts in = {o->pretty, o->all, NULL, &r->top};
    sb_add(b, "[");
    for (int i = 0; i < r->n; i++) {
        if (i)
            sb_add(b, ",");
        sb_indent(b, o->pretty, depth + 1);
        sb_add(b, "{");
        print_members(b, tab, n, (const char *)&r->stage[i], "", &in, depth + 1);
        sb_indent(b, o->pretty, depth + 1);
        sb_add(b, "}");
    }
    sb_indent(b, o->pretty, depth);
    sb_add(b, "]");
}

/* The members of the object at `parent`. */
static void print_members(sb *b, const key *tab, size_t n, const char *base, const char *parent,
                          const print_opts *o, int depth)
{
    char val[64];
    int first = 1;
    const int pretty = o->pretty;
    const print_opts in = {pretty, o->all, NULL, NULL};
    for (size_t i = 0; i < n; i++) {
        const key *k = &tab[i];
        if (!is_child(k->path, parent) || (k->flags & ER_KEY_OLD_NAME) || !printed(k, base, o))
            continue;
        if (!first)
            sb_add(b, ",");
        first = 0;
        sb_indent(b, pretty, depth + 1);
        sb_add(b, "\"");
        sb_add(b, leaf_of(k->path));
        sb_add(b, pretty ? "\": " : "\":");
        if (k->type == ER_KEY_OBJECT) {
            sb_add(b, "{");
            print_members(b, tab, n, base, k->path, &in, depth + 1);
            sb_indent(b, pretty, depth + 1);
            sb_add(b, "}");
        } else if (k->type == ER_KEY_STAGES) {
            print_stages(b, tab, n, o->r, o, depth + 1);
        } else if (k->type == ER_KEY_SOURCES) {
            print_sources(b, k, base, pretty, depth + 1);
        } else if (k->type == ER_KEY_PATH) {
            print_path(b, base + k->off);
        } else {
            value_text(val, sizeof val, k, base);
            sb_add(b, val);
        }
    }
}

static char *to_json(const er_stages *r, int pretty, int all)
{
    sb b = {NULL, 0, 0, 0};
    size_t n_keys;
    const key *keys = er_keys_params(&n_keys);
    const print_opts o = {pretty, all, r, NULL};
    sb_add(&b, "{");
    print_members(&b, keys, n_keys, (const char *)&r->top, "", &o, 0);
    sb_indent(&b, pretty, 0);
    sb_add(&b, pretty ? "}\n" : "}");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* to_json of a recipe without stages. */
static char *to_json_one(const er_params *p, int pretty, int all)
{
    er_stages *r = malloc(sizeof *r);
    char *text = NULL;
    if (r) {
        er_stages_single(r, p);
        text = to_json(r, pretty, all);
    }
    free(r);
    return text;
}

/* See recipe.h.  Keys in table order, "erode_recipe" first, no comment;
 * the caller frees the string. */
char *er_recipe_to_json(const er_params *p)
{
    return to_json_one(p, 1, 0);
}

char *er_recipe_to_json_all(const er_params *p)
{
    return to_json_one(p, 1, 1);
}

char *er_recipe_to_json_compact(const er_params *p)
{
    return to_json_one(p, 0, 0);
}

char *er_recipe_stages_to_json(const er_stages *r)
{
    return to_json(r, 1, 0);
}

char *er_recipe_stages_to_json_all(const er_stages *r)
{
    return to_json(r, 1, 1);
}

char *er_recipe_stages_to_json_compact(const er_stages *r)
{
    return to_json(r, 0, 0);
}
