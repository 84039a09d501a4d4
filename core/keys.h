/*
 * The recipe key table (erode-recipe(5)): the one place that says, for every
 * key of a recipe, where it lives in er_params, its type, its range or
 * choices and its default.  core/params.c fills the defaults and checks a
 * whole er_params from it; io/recipe.c parses and prints recipes from it;
 * the documentation lint compares man/erode-recipe.5 with it (through
 * tests/keys-dump.c).  No JSON and no I/O here; the tables are constant
 * and every function below is thread-safe.
 */
#ifndef ER_KEYS_H
#define ER_KEYS_H

#include <stddef.h>

typedef enum er_key_type {
    ER_KEY_OBJECT,  /* nested object; its keys are the rows whose parent it is */
    ER_KEY_VERSION, /* "erode_recipe": an int that must be ER_RECIPE_VERSION */
    ER_KEY_COMMENT, /* free text, read and dropped, never stored or printed */
    ER_KEY_ENUM,    /* a string from `names`, stored as its index in an int (an enum) */
    ER_KEY_U64,     /* integer stored as uint64_t */
    ER_KEY_INT,     /* integer stored as int64_t */
    ER_KEY_NUM,     /* double */
    ER_KEY_SOURCES, /* array of er_source: an er_source_list at off */
    ER_KEY_PATH,    /* a file path or null, a char[ER_CTL_PATH_MAX] at off ("" = null) */
    ER_KEY_STAGES   /* "stages": an array of 1 to `max` stage objects (core/stages.h); no
                     * field of er_params, io/recipe.c reads it into an er_stages */
} er_key_type;

enum {
    ER_KEY_MIN_OPEN = 1u, /* the minimum itself is not allowed (> min) */
    ER_KEY_MAX_OPEN = 2u, /* the maximum itself is not allowed (< max) */
    /* null allowed: ER_KEY_INT stores -1, ER_KEY_NUM clears the int at off2
     * (and keeps `def` as the value) */
    ER_KEY_NULL = 4u,
    ER_KEY_RELIEF = 8u,      /* the string "relief" allowed, stored as 0 */
    ER_KEY_REQUIRED = 16u,   /* must be present; no default (source fields) */
    ER_KEY_DEF_NULL = 32u,   /* with ER_KEY_NULL: the default is null */
    /* The old spelling of the common key names[0], read into the same
     * place (the key table gives the row that key's off); never printed,
     * checked or defaulted on its own */
    ER_KEY_OLD_NAME = 64u,
    /* A source field used only with "at": "xy" (x, y, coords), or only
     * with a rule such as "at": "peaks" (count, spacing) */
    ER_KEY_AT_XY = 128u,
    ER_KEY_AT_RULE = 256u,
    ER_KEY_MODEL = 512u,     /* a top-level key of one model: "model" and each model's
                              * section (a staged recipe holds them in its stages) */
    ER_KEY_AUTO = 1024u,     /* the string "auto" allowed, stored as 0 (a value the
                              * model chooses when the run is planned) */
    /* A key added after checkpoints and outputs recorded recipes without
     * it: at its default it is left out of the recipe text they record
     * and hash (io/recipe_print.c), so a recipe that does not use it
     * still resumes their checkpoints; --print-recipe shows it. */
    ER_KEY_LATER = 2048u
};

typedef struct er_key {
    const char *path;         /* dotted path from the top ("mei.dt"); a source
                               * field's name within its element ("rate") */
    er_key_type type;
    unsigned flags;           /* ER_KEY_* */
    size_t off;               /* the field, from the start of the struct */
    size_t off2;              /* ER_KEY_NULL on ER_KEY_NUM: the int that says "set" */
    double min, max;          /* allowed range (ER_KEY_INT, _U64, _NUM) */
    double def;               /* the default: the value (ER_KEY_INT, _U64, _NUM),
                               * the index into names (ER_KEY_ENUM) */
    const char *const *names; /* ER_KEY_ENUM: the names, indexed by value, NULL-ended;
                               * ER_KEY_OLD_NAME: the key's new name */
} er_key;

/* Every key of er_params, in the order --print-recipe writes them (a parent
 * object before its keys); *n receives the count.  Static, read-only. */
const er_key *er_keys_params(size_t *n);

/* Rows of a key table whose offsets are from the struct ER_KEY_BASE, which
 * the file defines (er_params, or a model's params struct for its
 * section, whose paths are then relative to the section: "steps"). */
#define ER_KEY_AT(f) offsetof(ER_KEY_BASE, f)
#define ER_OBJ(path) {path, ER_KEY_OBJECT, 0, 0, 0, 0, 0, 0, NULL}
#define ER_NUM(path, f, fl, lo, hi, def) {path, ER_KEY_NUM, fl, ER_KEY_AT(f), 0, lo, hi, def, NULL}
#define ER_INT(path, f, fl, lo, hi, def) {path, ER_KEY_INT, fl, ER_KEY_AT(f), 0, lo, hi, def, NULL}
#define ER_ENUM(path, f, names, def) {path, ER_KEY_ENUM, 0, ER_KEY_AT(f), 0, 0, 0, def, names}
#define ER_ENUM_LATER(path, f, names, def) \
    {path, ER_KEY_ENUM, ER_KEY_LATER, ER_KEY_AT(f), 0, 0, 0, def, names}

/* The names of er_boundary, for every section with an edge key. */
extern const char *const er_boundary_names[];

/* The keys of one er_source (an element of river_sources), relative to
 * it; *n receives the count.  Static, read-only. */
const er_key *er_keys_source(size_t *n);

/* Whether source field k goes with a source whose "at" is `at`: x, y and
 * coords with sources at (x, y), count and spacing with rules; the rest
 * with every source.  A field that does not is neither read, printed nor
 * checked. */
int er_key_source_field_applies(const er_key *k, int at);

/* Writes the defaults of the n keys of `tab` into the struct at base (an
 * er_params for er_keys_params, an er_source for er_keys_source).  Fields
 * no key names are left alone; ER_KEY_REQUIRED keys get 0. */
void er_keys_default(const er_key *tab, size_t n, void *base);

/* Whether the number v is allowed for key k (range, and integral when
 * `integer`); a NaN never is.  Returns 1 when it is; else 0, with "<v> is
 * out of range, must be >= <min> and <= <max>" or "<v> is not an integer"
 * in what[n].  Does not know about null or "relief": the caller does. */
int er_key_check_number(const er_key *k, double v, int integer, char *what, size_t n);

/* The word an ER_KEY_NUM key k may hold instead of a number, stored as 0:
 * "relief" (ER_KEY_RELIEF), "auto" (ER_KEY_AUTO), or NULL when none. */
const char *er_key_word(const er_key *k);

/* The allowed names of an ER_KEY_ENUM key for a message: 'a', 'b', 'c'. */
void er_key_choices_text(const er_key *k, char *buf, size_t n);

/* A number for a message: an integer in full (below 1e16), anything else
 * the shortest "%g" form that reads back to the same double. */
void er_key_fmt_number(char *buf, size_t n, double d);

/* The shortest "%.Ng" that strtod() reads back to exactly d (C locale). */
void er_key_fmt_shortest(char *buf, size_t n, double d);

#endif
