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
        er_status st = read_value(c, tab, n, k, base, m, path);
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
 * one, whichever the file gives first. */
static er_status one_list(const ctx *c, const key *tab, size_t n, const cJSON *root, char *base)
{
    for (size_t i = 0; i < n; i++) {
        if (!(tab[i].flags & ER_KEY_OLD_NAME))
            continue;
        for (size_t k = 0; k < n; k++) {
            if (k == i || tab[k].off != tab[i].off || (tab[k].flags & ER_KEY_OLD_NAME))
                continue;
            const cJSON *a = json_at(root, tab[k].path), *b = json_at(root, tab[i].path);
            int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b);
            if (na > 0 && nb > 0)
                return fail_at(c, tab[k].path, "given twice, as %s and as %s (its old "
                               "spelling): keep one", tab[k].path, tab[i].path);
            if (a && b && (na > 0 || nb > 0))
                return read_value(c, tab, n, na > 0 ? &tab[k] : &tab[i], base, na > 0 ? a : b,
                                  na > 0 ? tab[k].path : tab[i].path);
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

/* One -s KEY=VALUE onto *p. */
static er_status apply_override(ctx *c, const char *ov, er_params *p)
{
    char keybuf[PATH_MAX_LEN], q[QUOTE_MAX + 4];
    const char *eq = strchr(ov, '=');
    c->where = "-s";
    c->sep = " ";
    c->dir = NULL;
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
    if (klen >= sizeof keybuf)
        klen = sizeof keybuf - 1;
    memcpy(keybuf, k0, klen);
    keybuf[klen] = '\0';
    char shown[QUOTE_MAX + 4];
    quote(shown, sizeof shown, keybuf);

    size_t n_keys;
    const key *keys = er_keys_params(&n_keys);
    const key *k = NULL;
    for (size_t i = 0; i < n_keys && !k; i++)
        if (strcmp(keys[i].path, keybuf) == 0)
            k = &keys[i];
    if (!k) {
        char parent[PATH_MAX_LEN];
        memcpy(parent, keybuf, klen + 1);
        char *dot = strrchr(parent, '.');
        const char *name = dot ? dot + 1 : keybuf;
        if (dot)
            *dot = '\0';
        else
            parent[0] = '\0';
        int known = parent[0] == '\0';
        for (size_t i = 0; i < n_keys && !known; i++)
            known = keys[i].type == ER_KEY_OBJECT && strcmp(keys[i].path, parent) == 0;
        const char *s = suggest(keys, n_keys, parent, known, name, keybuf);
        for (size_t i = 0; i < n_keys; i++) {
            size_t lk = strlen(keys[i].path);
            if (keys[i].type == ER_KEY_SOURCES && strncmp(keybuf, keys[i].path, lk) == 0 &&
                keybuf[lk] == '[')
                return fail_at(c, shown, "unknown key, set the whole list: -s '%s=[...]'",
                               keys[i].path);
        }
        if (s)
            return fail_at(c, shown, "unknown key, did you mean '%s'?", s);
        return fail_at(c, shown, "unknown key");
    }

    /* VALUE as JSON; anything that is not JSON is a bare string, so
     * -s model=droplet works without shell-quoted quotes. */
    const char *val = eq + 1;
    size_t vlen = strlen(val);
    cJSON *j = NULL;
    if (!memchr(val, '\0', vlen)) {
        const char *end = NULL;
        j = cJSON_ParseWithLengthOpts(val, vlen, &end, 0);
        if (j) {
            size_t at = (size_t)(end - val);
            while (at < vlen && is_space(val[at]))
                at++;
            if (at < vlen) {
                cJSON_Delete(j);
                j = NULL;
            }
        }
    }
    if (!j)
        j = cJSON_CreateString(val);
    if (!j)
        return er_fail(c->err, ER_ENOMEM, "-s %s: out of memory", shown);
    er_status st = read_value(c, keys, n_keys, k, (char *)p, j, shown);
    cJSON_Delete(j);
    return st;
}

/* See recipe.h.  Works on a copy and writes *out only on success.  Safe to
 * call from several threads at once except that cJSON records its last
 * error in a global (never read here); erode parses recipes on the main
 * thread before any work starts. */
static er_status parse_in(const char *text, size_t len, const char *where, const char *dir,
                         const char *const *overrides, int n_overrides, er_params *out,
                         er_error *err)
{
    ctx c;
    er_params p;
    er_status st = ER_OK;
    size_t n_keys;
    const key *keys = er_keys_params(&n_keys);
    c.where = where && *where ? where : "recipe";
    c.sep = ": ";
    c.err = err;
    c.dir = dir;
    er_params_default(&p);

    if (text) {
        cJSON *root = parse_json(&c, text, len, &st);
        if (!root)
            return st;
        if (!cJSON_IsObject(root)) {
            st = fail_at(&c, NULL, "expected a JSON object, got %s", json_type_name(root));
            cJSON_Delete(root);
            return st;
        }
        /* The version first: a newer recipe's new keys must not be
         * reported as unknown before the version is. */
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "erode_recipe");
        if (v)
            st = read_value(&c, keys, n_keys, &keys[0], (char *)&p, v, "erode_recipe");
        if (!st)
            st = read_object(&c, keys, n_keys, (char *)&p, root, "", "");
        if (!st)
            st = one_list(&c, keys, n_keys, root, (char *)&p);
        cJSON_Delete(root);
        if (st)
            return st;
    }
    for (int i = 0; i < n_overrides; i++) {
        st = apply_override(&c, overrides[i], &p);
        if (st)
            return st;
    }
    *out = p;
    return ER_OK;
}

er_status er_recipe_parse(const char *text, size_t len, const char *where,
                          const char *const *overrides, int n_overrides, er_params *out,
                          er_error *err)
{
    return parse_in(text, len, where, NULL, overrides, n_overrides, out, err);
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
er_status er_recipe_load(const char *path, const char *const *overrides, int n_overrides,
                         er_params *out, er_error *err)
{
    if (!path)
        return er_recipe_parse(NULL, 0, NULL, overrides, n_overrides, out, err);
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

static void print_members(sb *b, const key *tab, size_t n, const char *base, const char *parent,
                          int pretty, int depth, int all);

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

/* The members of the object at `parent`. */
static void print_members(sb *b, const key *tab, size_t n, const char *base, const char *parent,
                          int pretty, int depth, int all)
{
    char val[64];
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        const key *k = &tab[i];
        if (k->type == ER_KEY_COMMENT || (k->flags & ER_KEY_OLD_NAME) ||
            !is_child(k->path, parent))
            continue;
        /* a control raster that is not given is left out, so a recipe
         * without maps records (in every output and a checkpoint's recipe
         * hash) as before; `all` (--print-recipe) shows it as null */
        if (k->type == ER_KEY_PATH && !base[k->off] && !all)
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
            print_members(b, tab, n, base, k->path, pretty, depth + 1, all);
            sb_indent(b, pretty, depth + 1);
            sb_add(b, "}");
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

static char *to_json(const er_params *p, int pretty, int all)
{
    sb b = {NULL, 0, 0, 0};
    size_t n_keys;
    const key *keys = er_keys_params(&n_keys);
    sb_add(&b, "{");
    print_members(&b, keys, n_keys, (const char *)p, "", pretty, 0, all);
    sb_indent(&b, pretty, 0);
    sb_add(&b, pretty ? "}\n" : "}");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* See recipe.h.  Keys in table order, "erode_recipe" first, no comment;
 * the caller frees the string. */
char *er_recipe_to_json(const er_params *p)
{
    return to_json(p, 1, 0);
}

char *er_recipe_to_json_all(const er_params *p)
{
    return to_json(p, 1, 1);
}

char *er_recipe_to_json_compact(const er_params *p)
{
    return to_json(p, 0, 0);
}
