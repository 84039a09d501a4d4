/*
 * keys-dump: the recipe key table (core/keys.c) as text, for tests/lint.sh
 * to compare with man/erode-recipe.5.  Built by `make lint`, not installed.
 *
 * One line per key, tab-separated:
 *   path     dotted, a source field as "river_sources[].rate"
 *   type     integer, number, string or array, then " or null",
 *            " or relief" (or " or auto") and ", required" where they apply
 *   default  a number, "name" for a string, null, "relief", [] for the
 *            sources and the stages, - for a required field
 *   range    an interval "(0, 10]", the choices 'a', 'b' of a string, the
 *            element count [0, 64] of the sources (of the stages), the version
 *            number
 * Objects and "comment" hold no value and are left out.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../core/keys.h"

static void dump(const er_key *tab, size_t n, const char *prefix)
{
    char def[64], range[200], lo[40], hi[40];
    for (size_t i = 0; i < n; i++) {
        const er_key *k = &tab[i];
        const char *type = "number";
        switch (k->type) {
        case ER_KEY_OBJECT:
        case ER_KEY_COMMENT:
            continue;
        case ER_KEY_VERSION:
        case ER_KEY_U64:
        case ER_KEY_INT:
            type = "integer";
            break;
        case ER_KEY_NUM:
            break;
        case ER_KEY_ENUM:
        case ER_KEY_PATH:
            type = "string";
            break;
        case ER_KEY_SOURCES:
        case ER_KEY_STAGES:
            type = "array";
            break;
        }

        if (k->flags & ER_KEY_REQUIRED)
            snprintf(def, sizeof def, "-");
        else if (k->flags & ER_KEY_DEF_NULL)
            snprintf(def, sizeof def, "null");
        else if (er_key_word(k) && k->def == 0.0)
            snprintf(def, sizeof def, "\"%s\"", er_key_word(k));
        else if (k->type == ER_KEY_ENUM)
            snprintf(def, sizeof def, "\"%s\"", k->names[(int)k->def]);
        else if (k->type == ER_KEY_SOURCES || k->type == ER_KEY_STAGES)
            snprintf(def, sizeof def, "[]");
        else
            er_key_fmt_number(def, sizeof def, k->def);

        if (k->type == ER_KEY_PATH) {
            range[0] = '\0'; /* any path: no choices */
        } else if (k->type == ER_KEY_ENUM) {
            er_key_choices_text(k, range, sizeof range);
        } else if (k->type == ER_KEY_VERSION) {
            er_key_fmt_number(range, sizeof range, k->def);
        } else {
            er_key_fmt_number(lo, sizeof lo, k->min);
            er_key_fmt_number(hi, sizeof hi, k->max);
            snprintf(range, sizeof range, "%c%s, %s%c", k->flags & ER_KEY_MIN_OPEN ? '(' : '[',
                     lo, hi, k->flags & ER_KEY_MAX_OPEN ? ')' : ']');
        }

        const char *word = er_key_word(k);
        printf("%s%s\t%s%s%s%s%s\t%s\t%s\n", prefix, k->path, type,
               k->flags & ER_KEY_NULL ? " or null" : "", word ? " or " : "", word ? word : "",
               k->flags & ER_KEY_REQUIRED ? ", required" : "", def, range);
    }
}

int main(void)
{
    size_t n;
    const er_key *tab = er_keys_params(&n);
    dump(tab, n, "");
    tab = er_keys_source(&n);
    dump(tab, n, "river_sources[].");
    return fflush(stdout) == 0 && !ferror(stdout) ? EXIT_SUCCESS : EXIT_FAILURE;
}
