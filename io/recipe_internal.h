/*
 * What the files of the recipe reader share (io/recipe.c and
 * io/recipe_*.c); internal to io/.  Each concern in one file:
 *   recipe.c          reading the file, the order of the parse
 *   recipe_json.c     the text to cJSON, malformed text located
 *   recipe_msg.c      error lines
 *   recipe_suggest.c  "did you mean", the key table's dotted paths
 *   recipe_value.c    JSON values into structs by the key table
 *   recipe_stages.c   the stages of a staged recipe
 *   recipe_set.c      -s KEY=VALUE
 *   recipe_print.c    recipes as JSON text
 */
#ifndef ER_RECIPE_INTERNAL_H
#define ER_RECIPE_INTERNAL_H

#include <cJSON.h>
#include <stddef.h>

#include "../core/error.h"
#include "../core/keys.h"
#include "../core/models.h"
#include "../core/stages.h"

/* Longest dotted path or user string quoted in a message. */
#define RECIPE_PATH_LEN 256
#define RECIPE_QUOTE_MAX 48

/* Where a parse is and what it records. */
typedef struct er_recipe_ctx {
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
} er_recipe_ctx;

/* recipe_msg.c */

/* ER_EINVAL with "<where>: <path>: <what>" ("-s <path>: <what>"; the path
 * left out when empty or NULL). */
er_status er_recipe_fail(const er_recipe_ctx *c, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* User text made safe for a one-line message in buf[n]: control bytes
 * become '?', long text is cut with "...".  Returns buf. */
const char *er_recipe_quote(char *buf, size_t n, const char *s);
/* "a number", "an object", ... */
const char *er_recipe_json_type(const cJSON *j);
/* "expected <want>, got <j's type>" at path. */
er_status er_recipe_wrong_type(const er_recipe_ctx *c, const char *path, const char *want,
                               const cJSON *j);

/* recipe_suggest.c */

/* The last component of a dotted path. */
const char *er_recipe_leaf(const char *path);
/* Is `k` a direct child of the object at `parent` ("" = top level)? */
int er_recipe_is_child(const char *k, const char *parent);
/* The row of tab named `name` in the object at `parent`, or NULL. */
const er_key *er_recipe_find_child(const er_key *tab, size_t n, const char *parent,
                                   const char *name);
/* The known path to suggest for an unknown key `name` typed in the object
 * at `parent` (parent_known: it is a known object; `typed` the whole
 * typed path), or NULL. */
const char *er_recipe_suggest(const er_key *tab, size_t n, const char *parent, int parent_known,
                              const char *name, const char *typed);

/* recipe_value.c */

/* Stores JSON value j for row k of tab into the struct at base; `path`
 * names it in messages. */
er_status er_recipe_read_value(const er_recipe_ctx *c, const er_key *tab, size_t n,
                               const er_key *k, char *base, const cJSON *j, const char *path);
/* The members of JSON object obj against the rows of tab whose parent is
 * `parent`; `shown` is the object's path in messages. */
er_status er_recipe_read_object(const er_recipe_ctx *c, const er_key *tab, size_t n, char *base,
                                const cJSON *obj, const char *parent, const char *shown);
/* A list given under its name and its old spelling (ER_KEY_OLD_NAME) in
 * object root: one of them; `where` prefixes the paths in errors. */
er_status er_recipe_one_list(const er_recipe_ctx *c, const er_key *tab, size_t n,
                             const cJSON *root, char *base, const char *where);

/* recipe_print.c */

/* Whether the value of row k differs between the structs at a and b, as
 * --print-recipe writes them. */
int er_recipe_value_differs(const er_key *k, const char *a, const char *b);

/* recipe_stages.c */

/* The model whose section is the top-level object `name`, or -1. */
int er_recipe_section_model(const char *name);
/* Whether top-level row k may lie in a stage of model m; if not, why, as
 * an error at `path`. */
er_status er_recipe_stage_may_hold(const er_recipe_ctx *c, const er_key *k, er_model_kind m,
                                   const char *path);
/* The stages of JSON array j over r->top into r. */
er_status er_recipe_read_stages(const er_recipe_ctx *c, const er_key *tab, size_t n,
                                const cJSON *j, er_stages *r);

/* recipe_json.c */

/* JSON's whitespace. */
int er_recipe_is_space(char ch);
/* Whether the len bytes of JSON text hold a number (outside strings)
 * that JSON's grammar refuses, such as 020 or 1.; *at: where it starts. */
int er_recipe_bad_number(const char *text, size_t len, size_t *at);
/* Parses len bytes of JSON; NULL (with *st and the error set) unless the
 * text is one complete value.  The caller deletes the result. */
cJSON *er_recipe_parse_json(const er_recipe_ctx *c, const char *text, size_t len,
                            er_status *st);

/* recipe_set.c */

/* One -s KEY=VALUE onto recipe r: pass 0 takes the top level's keys
 * (recording a "stages" list in c), pass 1 the stages' own. */
er_status er_recipe_apply_override(er_recipe_ctx *c, const char *ov, er_stages *r, int pass);

#endif
