/*
 * Recipes as JSON text (--print-recipe, provenance metadata, a
 * checkpoint's recipe hash), in key table order.
 *
 * Numbers are written so that strtod() reads back the same double bit for
 * bit: the shortest "%.Ng" that round-trips.  This assumes the C locale for
 * LC_NUMERIC (erode never calls setlocale), as cJSON itself does.
 */
#include "recipe.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe_internal.h"

/* A double for JSON: integral values keep a ".0" so a reader sees the key
 * takes a real number; anything else the shortest round-trip form. */
static void fmt_json_double(char *buf, size_t n, double d)
{
    if (d == floor(d) && fabs(d) < 1e15)
        snprintf(buf, n, "%.1f", d);
    else
        er_key_fmt_shortest(buf, n, d);
}

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
static void value_text(char *buf, size_t n, const er_key *k, const char *base)
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
        else if (er_key_word(k) && *(const double *)f == 0.0)
            snprintf(buf, n, "\"%s\"", er_key_word(k));
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

static void print_members(sb *b, const er_key *tab, size_t n, const char *base, const char *parent,
                          const print_opts *o, int depth);

static void print_source(sb *b, const er_key *tab, size_t n, const er_source *s, int pretty);

static void print_sources(sb *b, const er_key *k, const char *base, int pretty, int depth)
{
    const er_source_list *l = (const er_source_list *)(const void *)(base + k->off);
    size_t n_source_keys;
    const er_key *source_keys = er_keys_source(&n_source_keys);
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
static void print_source(sb *b, const er_key *tab, size_t n, const er_source *s, int pretty)
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
    const er_key *f = er_keys_source(&n);
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

int er_recipe_value_differs(const er_key *k, const char *a, const char *b)
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

/* Whether row k (a number or a name) of the struct at base holds its
 * default. */
static int at_default(const er_key *k, const char *base)
{
    const void *f = base + k->off;
    if (k->type == ER_KEY_ENUM)
        return *(const int *)f == (int)k->def;
    if (k->type == ER_KEY_NUM)
        return *(const double *)f == k->def;
    if (k->type == ER_KEY_INT)
        return *(const int64_t *)f == (int64_t)k->def;
    return 0;
}

/* Whether print_members writes row k of the struct at base.  In a stage:
 * its model, the sections it holds, and the top level's keys where the
 * stage's value differs (a stage inherits the others); at the top level
 * of a staged recipe no key of one model. */
static int printed(const er_key *k, const char *base, const print_opts *o)
{
    if (k->type == ER_KEY_COMMENT)
        return 0;
    if (k->type == ER_KEY_OBJECT && !o->top) {
        /* a test model's section only in its own recipes (tests/models/):
         * the shipped models' recipes print, and hash, as in a build
         * without it */
        const int m = er_recipe_section_model(k->path);
        const er_params *p = (const er_params *)(const void *)base;
        if (m >= 0 && (er_model((er_model_kind)m)->flags & ER_MODEL_TEST_ONLY) && (int)p->model != m)
            return 0;
    }
    if (o->top) {
        const er_params *p = (const er_params *)(const void *)base;
        if (k->type == ER_KEY_VERSION || k->type == ER_KEY_STAGES)
            return 0;
        if (k->type == ER_KEY_OBJECT) {
            int m = er_recipe_section_model(k->path);
            return m >= 0 && er_stage_holds_section(p->model, (er_model_kind)m);
        }
        return (k->flags & ER_KEY_MODEL) || er_recipe_value_differs(k, base, (const char *)o->top);
    }
    if (k->type == ER_KEY_STAGES)
        return o->r && o->r->n > 0;
    if ((k->flags & ER_KEY_MODEL) && o->r && o->r->n > 0)
        return 0;
    if ((k->flags & ER_KEY_LATER) && !o->all && at_default(k, base))
        return 0;
    /* a control raster that is not given is left out, so a recipe
     * without maps records (in every output and a checkpoint's recipe
     * hash) as before; `all` (--print-recipe) shows it as null */
    return !(k->type == ER_KEY_PATH && !base[k->off] && !o->all);
}

/* "stages": [{...}, ...] of recipe r, each stage as `printed` says. */
static void print_stages(sb *b, const er_key *tab, size_t n, const er_stages *r,
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
static void print_members(sb *b, const er_key *tab, size_t n, const char *base, const char *parent,
                          const print_opts *o, int depth)
{
    char val[64];
    int first = 1;
    const int pretty = o->pretty;
    const print_opts in = {pretty, o->all, NULL, NULL};
    for (size_t i = 0; i < n; i++) {
        const er_key *k = &tab[i];
        if (!er_recipe_is_child(k->path, parent) || (k->flags & ER_KEY_OLD_NAME) ||
            !printed(k, base, o))
            continue;
        if (!first)
            sb_add(b, ",");
        first = 0;
        sb_indent(b, pretty, depth + 1);
        sb_add(b, "\"");
        sb_add(b, er_recipe_leaf(k->path));
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
    const er_key *keys = er_keys_params(&n_keys);
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
