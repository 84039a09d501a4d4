/* "Did you mean": the known key nearest to an unknown one, and the walk
 * of the key table's dotted paths it shares with the readers. */
#include "recipe_internal.h"

#include <string.h>

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

const char *er_recipe_leaf(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

/* Is `k` a direct child of the object at `parent` ("" = top level)? */
int er_recipe_is_child(const char *k, const char *parent)
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
const char *er_recipe_suggest(const er_key *tab, size_t n, const char *parent, int parent_known,
                              const char *name, const char *typed)
{
    const char *best = NULL;
    int best_d = 99, best_common = -1;
    for (size_t i = 0; i < n; i++) {
        if (tab[i].type == ER_KEY_COMMENT || !er_recipe_is_child(tab[i].path, parent))
            continue;
        int d = closeness(name, er_recipe_leaf(tab[i].path));
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
        int d = closeness(name, er_recipe_leaf(tab[i].path));
        int cc = common_components(typed, tab[i].path);
        if (d >= 0 && (d < best_d || (d == best_d && cc > best_common))) {
            best = tab[i].path;
            best_d = d;
            best_common = cc;
        }
    }
    return best;
}

const er_key *er_recipe_find_child(const er_key *tab, size_t n, const char *parent,
                                   const char *name)
{
    size_t lp = strlen(parent);
    for (size_t i = 0; i < n; i++) {
        const char *k = tab[i].path;
        if (!er_recipe_is_child(k, parent))
            continue;
        if (strcmp(lp ? k + lp + 1 : k, name) == 0)
            return &tab[i];
    }
    return NULL;
}
