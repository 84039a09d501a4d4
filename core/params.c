/*
 * The defaults and the range check of a whole er_params, both from the
 * key table (core/keys.c), which holds every value and bound.
 */
#include "params.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "keys.h"

/* Reads a field through a char pointer at a table offset. */
#define AT(type, base, off) ((const type *)(const void *)((const char *)(base) + (off)))

void er_params_default(er_params *p)
{
    size_t n;
    const er_key *tab = er_keys_params(&n);
    memset(p, 0, sizeof *p);
    er_keys_default(tab, n, p);
}

/* The n keys of `tab` in the struct at base; `prefix` goes before each
 * key's path in messages ("river_sources[2]." for a source's fields); at >= 0:
 * a source of that "at", whose fields that do not go with it are skipped. */
static er_status check_keys(const er_key *tab, size_t n, const void *base, const char *prefix,
                            int at, er_error *err)
{
    char what[200], choices[200];
    for (size_t i = 0; i < n; i++) {
        const er_key *k = &tab[i];
        int ok = 1;
        if (at >= 0 && !er_key_source_field_applies(k, at))
            continue;
        switch (k->type) {
        case ER_KEY_OBJECT:
        case ER_KEY_COMMENT:
        case ER_KEY_STAGES:
            break;
        case ER_KEY_PATH:
            if (!memchr(AT(char, base, k->off), '\0', ER_CTL_PATH_MAX))
                return er_fail(err, ER_EINVAL, "%s%s: the path is not terminated", prefix,
                               k->path);
            break;
        case ER_KEY_VERSION: {
            int v = *AT(int, base, k->off);
            if (v != ER_RECIPE_VERSION)
                return er_fail(err, ER_EINVAL,
                               "%s%s: version %d is not supported, this erode reads version %d",
                               prefix, k->path, v, ER_RECIPE_VERSION);
            break;
        }
        case ER_KEY_ENUM: {
            int v = *AT(int, base, k->off), count = 0;
            while (k->names[count])
                count++;
            if (v < 0 || v >= count) {
                er_key_choices_text(k, choices, sizeof choices);
                return er_fail(err, ER_EINVAL, "%s%s: %d is not one of %s", prefix, k->path, v,
                               choices);
            }
            break;
        }
        case ER_KEY_U64:
            ok = er_key_check_number(k, (double)*AT(uint64_t, base, k->off), 1, what,
                                     sizeof what);
            break;
        case ER_KEY_INT: {
            int64_t v = *AT(int64_t, base, k->off);
            if (!((k->flags & ER_KEY_NULL) && v == -1))
                ok = er_key_check_number(k, (double)v, 1, what, sizeof what);
            break;
        }
        case ER_KEY_NUM: {
            double v = *AT(double, base, k->off);
            /* null: the value is not used; "relief" and "auto" are stored as 0 */
            if ((k->flags & ER_KEY_NULL) && *AT(int, base, k->off2) == 0)
                break;
            if (er_key_word(k) && v == 0.0)
                break;
            ok = er_key_check_number(k, v, 0, what, sizeof what);
            break;
        }
        case ER_KEY_SOURCES: {
            if (k->flags & ER_KEY_OLD_NAME) /* the same list as its new name's row */
                break;
            const er_source_list *l = AT(er_source_list, base, k->off);
            const char *name = er_sources_key(l);
            if (l->n < 0 || l->n > ER_MAX_SOURCES)
                return er_fail(err, ER_EINVAL, "%s%s: %d sources, at most %d are allowed",
                               prefix, name, l->n, ER_MAX_SOURCES);
            size_t ns;
            const er_key *st = er_keys_source(&ns);
            char elem[64];
            for (int s = 0; s < l->n; s++) {
                snprintf(elem, sizeof elem, "%s%s[%d].", prefix, name, s);
                er_status r = check_keys(st, ns, &l->src[s], elem, (int)l->src[s].at, err);
                if (r)
                    return r;
            }
            break;
        }
        }
        if (!ok)
            return er_fail(err, ER_EINVAL, "%s%s: %s", prefix, k->path, what);
    }
    return ER_OK;
}

/* See params.h. */
er_status er_params_check(const er_params *p, er_error *err)
{
    size_t n;
    const er_key *tab = er_keys_params(&n);
    return check_keys(tab, n, p, "", -1, err);
}
