/*
 * The recipe key table (keys.h): every key's place, type, range and
 * default in one row, so a key added to er_params needs one new row (here
 * or in its model's keys.c) and its entry in man/erode-recipe.5 (the lint
 * compares the two).
 */
#include "keys.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models.h"
#include "params.h"
#include "stages.h"

const char *const er_boundary_names[] = {"closed", "open", NULL};
static const char *const coords_names[] = {"pixel", "map", "fraction", NULL};
static const char *const at_names[] = {"xy", "peaks", NULL};

/* Enums are written through an int: check they are int-sized. */
_Static_assert(sizeof(er_model_kind) == sizeof(int), "enum size");
_Static_assert(sizeof(er_boundary) == sizeof(int), "enum size");
_Static_assert(sizeof(er_source_coords) == sizeof(int), "enum size");
_Static_assert(sizeof(er_source_at) == sizeof(int), "enum size");

#define ER_KEY_BASE er_params

/* 2^53 - 1: the largest seed every JSON reader holds exactly; 2^53 + 1
 * would read as 2^53 and pass silently. */
#define SEED_MAX 9007199254740991.0

/*
 * The keys every recipe has, before the models' sections (each model's
 * keys.c; the table puts them after these, in the registry's order).
 * Ranges: positive where the physics divides by the value or needs it to
 * move anything, [0, 1] for fractions, and an upper bound everywhere that
 * stops a typo (an extra three zeros) from starting a run that can only
 * produce garbage or never end.  man/erode-recipe.5 states each range and
 * default; the lint (tests/lint.sh) checks the two agree.
 */
static const er_key common_keys[] = {
    {"erode_recipe", ER_KEY_VERSION, 0, ER_KEY_AT(recipe_version), 0, 0, 0, ER_RECIPE_VERSION, NULL},
    {"comment", ER_KEY_COMMENT, 0, 0, 0, 0, 0, 0, NULL},
    /* names: the models', filled in by build_table; the default is the
     * model list's first (core/models.def) */
    {"model", ER_KEY_ENUM, ER_KEY_MODEL, ER_KEY_AT(model), 0, 0, 0, 0, NULL},
    {"seed", ER_KEY_U64, 0, ER_KEY_AT(seed), 0, 0, SEED_MAX, 1, NULL},
    /* control rasters (core/controls.h), null: none */
    {"hardness", ER_KEY_PATH, ER_KEY_NULL | ER_KEY_DEF_NULL, ER_KEY_AT(maps.hardness), 0, 0, 0, 0, NULL},
    {"rain", ER_KEY_PATH, ER_KEY_NULL | ER_KEY_DEF_NULL, ER_KEY_AT(maps.rain), 0, 0, 0, 0, NULL},
    {"mask", ER_KEY_PATH, ER_KEY_NULL | ER_KEY_DEF_NULL, ER_KEY_AT(maps.mask), 0, 0, 0, 0, NULL},
    {"sources", ER_KEY_PATH, ER_KEY_NULL | ER_KEY_DEF_NULL, ER_KEY_AT(maps.sources), 0, 0, 0, 0, NULL},
    {"uplift", ER_KEY_PATH, ER_KEY_NULL | ER_KEY_DEF_NULL, ER_KEY_AT(maps.uplift), 0, 0, 0, 0, NULL},
    /* river sources (core/sources.h), for the models that take them */
    {"river_sources", ER_KEY_SOURCES, 0, ER_KEY_AT(river), 0, 0, ER_MAX_SOURCES, 0, NULL},

    ER_OBJ("terrain"),
    /* >= 1e-6: every layer is written divided by the scale, and a smaller one
     * can turn a finite water depth into an infinite float. */
    ER_NUM("terrain.vertical_scale", terrain.vertical_scale, 0, 1e-6, 1e6, 1.0),
    ER_NUM("terrain.vertical_offset", terrain.vertical_offset, 0, -1e7, 1e7, 0.0),
    /* null (the default): the input's georeferencing, else 1 m.  The plan
     * holds the georeferencing's cell size to this range too: 1e-6 is the
     * smallest side io/geotags.c accepts. */
    {"terrain.cell_size", ER_KEY_NUM, ER_KEY_NULL | ER_KEY_DEF_NULL,
     ER_KEY_AT(terrain.cell_size), ER_KEY_AT(terrain.cell_size_set), 1e-6, 1e6, 1.0, NULL},
    /* models run one after another (core/stages.h); none: the recipe's one model */
    {"stages", ER_KEY_STAGES, 0, 0, 0, 1, ER_MAX_STAGES, 0, NULL},
};

/* The whole table, built once: the common keys, then each model's section
 * under its name (a model x gets the object row x, and x.steps from its
 * row steps), offsets moved to where the section lies in er_params. */
#define TABLE_MAX 256
#define PATH_MAX_LEN 64
static er_key table[TABLE_MAX];
static char table_paths[TABLE_MAX][PATH_MAX_LEN];
static const char *model_names[ER_MODEL_KINDS + 1];
static size_t table_n;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* An old spelling's row r takes the place of the common key it names
 * (names[0]): 1, or 0 when there is no such key. */
static int old_name_place(er_key *r)
{
    for (size_t i = 0; i < table_n; i++)
        if (strcmp(table[i].path, r->names[0]) == 0 && table[i].type == r->type) {
            r->off = table[i].off;
            r->off2 = table[i].off2;
            return 1;
        }
    return 0;
}

/* Appends row k of a section at base under prefix ("" = none); 0, or -1
 * when the table or a path is full or an old spelling names no key. */
static int add_row(const er_key *k, const char *prefix, size_t base)
{
    if (table_n >= TABLE_MAX)
        return -1;
    er_key *r = &table[table_n];
    *r = *k;
    if (prefix[0]) {
        char *path = table_paths[table_n];
        int w = k->type == ER_KEY_OBJECT && !k->path[0]
                    ? snprintf(path, PATH_MAX_LEN, "%s", prefix)
                    : snprintf(path, PATH_MAX_LEN, "%s.%s", prefix, k->path);
        if (w < 0 || w >= PATH_MAX_LEN)
            return -1;
        r->path = path;
        if (r->flags & ER_KEY_OLD_NAME) {
            if (!old_name_place(r))
                return -1;
        } else {
            if (r->type != ER_KEY_OBJECT && r->type != ER_KEY_COMMENT)
                r->off += base;
            if (r->type == ER_KEY_NUM && (r->flags & ER_KEY_NULL))
                r->off2 += base;
        }
    }
    table_n++;
    return 0;
}

static void build_table(void)
{
    static const er_key section = {"", ER_KEY_OBJECT, ER_KEY_MODEL, 0, 0, 0, 0, 0, NULL};
    int bad = 0;
    for (int m = 0; m < ER_MODEL_KINDS; m++)
        model_names[m] = er_model((er_model_kind)m)->name;
    for (size_t i = 0; i < sizeof common_keys / sizeof common_keys[0]; i++) {
        bad |= add_row(&common_keys[i], "", 0);
        if (common_keys[i].type == ER_KEY_ENUM && !common_keys[i].names)
            table[table_n - 1].names = model_names;
    }
    for (int m = 0; m < ER_MODEL_KINDS; m++) {
        const er_model_ops *ops = er_model((er_model_kind)m);
        size_t n;
        const er_key *rows = ops->keys(&n);
        bad |= add_row(&section, ops->name, 0);
        for (size_t i = 0; i < n; i++)
            bad |= add_row(&rows[i], ops->name, ops->params_off);
    }
    if (bad) /* a table that does not fit: no key at all, which every test sees */
        table_n = 0;
}

const er_key *er_keys_params(size_t *n)
{
    pthread_once(&table_once, build_table);
    *n = table_n;
    return table;
}

#define S(f) offsetof(er_source, f)
/* The keys of one element of river_sources, relative to it.  x and y are
 * required where a source is at (x, y); a rule ("at": "peaks") places its
 * sources itself. */
static const er_key source_keys[] = {
    {"at", ER_KEY_ENUM, 0, S(at), 0, 0, 0, ER_AT_XY, at_names},
    {"x", ER_KEY_NUM, ER_KEY_REQUIRED | ER_KEY_AT_XY, S(x), 0, -1e12, 1e12, 0, NULL},
    {"y", ER_KEY_NUM, ER_KEY_REQUIRED | ER_KEY_AT_XY, S(y), 0, -1e12, 1e12, 0, NULL},
    {"coords", ER_KEY_ENUM, ER_KEY_AT_XY, S(coords), 0, 0, 0, ER_COORDS_PIXEL, coords_names},
    /* at most ER_MAX_SOURCES sources in all once the peaks are counted */
    {"count", ER_KEY_INT, ER_KEY_AT_RULE, S(count), 0, 1, ER_MAX_SOURCES, 1, NULL},
    /* [cells] 1e4: a map's side is rarely more, and core/sources.c keeps
     * distances up to it in 16 bits */
    {"spacing", ER_KEY_NUM, ER_KEY_AT_RULE, S(spacing), 0, 0, 1e4, 10, NULL},
    {"radius", ER_KEY_NUM, ER_KEY_MIN_OPEN, S(radius), 0, 0, 1e4, 1.0, NULL},
    {"rate", ER_KEY_NUM, ER_KEY_REQUIRED | ER_KEY_MIN_OPEN, S(rate), 0, 0, 100, 0, NULL},
};

const er_key *er_keys_source(size_t *n)
{
    *n = sizeof source_keys / sizeof source_keys[0];
    return source_keys;
}

int er_key_source_field_applies(const er_key *k, int at)
{
    if (k->flags & ER_KEY_AT_XY)
        return at == ER_AT_XY;
    if (k->flags & ER_KEY_AT_RULE)
        return at != ER_AT_XY;
    return 1;
}

/* Writes through a char pointer at a table offset (off and off2 are
 * offsetof() values of fields of these types). */
#define AT(type, base, off) ((type *)(void *)((char *)(base) + (off)))

void er_keys_default(const er_key *tab, size_t n, void *base)
{
    for (size_t i = 0; i < n; i++) {
        const er_key *k = &tab[i];
        switch (k->type) {
        case ER_KEY_OBJECT:
        case ER_KEY_COMMENT:
        case ER_KEY_STAGES:
            break;
        case ER_KEY_VERSION:
        case ER_KEY_ENUM:
            *AT(int, base, k->off) = (int)k->def;
            break;
        case ER_KEY_U64:
            *AT(uint64_t, base, k->off) = (uint64_t)k->def;
            break;
        case ER_KEY_INT:
            *AT(int64_t, base, k->off) = k->flags & ER_KEY_DEF_NULL ? -1 : (int64_t)k->def;
            break;
        case ER_KEY_NUM:
            *AT(double, base, k->off) = k->def;
            if (k->flags & ER_KEY_NULL)
                *AT(int, base, k->off2) = !(k->flags & ER_KEY_DEF_NULL);
            break;
        case ER_KEY_PATH:
            *AT(char, base, k->off) = '\0';
            break;
        case ER_KEY_SOURCES:
            if (!(k->flags & ER_KEY_OLD_NAME))
                memset(AT(er_source_list, base, k->off), 0, sizeof(er_source_list));
            break;
        }
    }
}

void er_key_fmt_shortest(char *buf, size_t n, double d)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, d);
        if (strtod(buf, NULL) == d && signbit(strtod(buf, NULL)) == signbit(d))
            return;
    }
}

void er_key_fmt_number(char *buf, size_t n, double d)
{
    if (d == floor(d) && fabs(d) < 1e16)
        snprintf(buf, n, "%.0f", d);
    else
        er_key_fmt_shortest(buf, n, d);
}

int er_key_check_number(const er_key *k, double v, int integer, char *what, size_t n)
{
    char num[40], lo[40], hi[40];
    er_key_fmt_number(num, sizeof num, v);
    if (integer && v != floor(v) && isfinite(v)) {
        snprintf(what, n, "%s is not an integer", num);
        return 0;
    }
    /* written so that a NaN fails both */
    int low = k->flags & ER_KEY_MIN_OPEN ? !(v > k->min) : !(v >= k->min);
    int high = k->flags & ER_KEY_MAX_OPEN ? !(v < k->max) : !(v <= k->max);
    if (!low && !high)
        return 1;
    er_key_fmt_number(lo, sizeof lo, k->min);
    er_key_fmt_number(hi, sizeof hi, k->max);
    snprintf(what, n, "%s is out of range, must be %s %s and %s %s", num,
             k->flags & ER_KEY_MIN_OPEN ? ">" : ">=", lo, k->flags & ER_KEY_MAX_OPEN ? "<" : "<=",
             hi);
    return 0;
}

const char *er_key_word(const er_key *k)
{
    return k->flags & ER_KEY_RELIEF ? "relief" : k->flags & ER_KEY_AUTO ? "auto" : NULL;
}

void er_key_choices_text(const er_key *k, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; k->names[i]; i++) {
        int w = snprintf(buf + used, n - used, "%s'%s'", i ? ", " : "", k->names[i]);
        if (w < 0 || (size_t)w >= n - used)
            return;
        used += (size_t)w;
    }
}
