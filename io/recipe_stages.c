/* Staged recipes (core/stages.h): each stage of a "stages" array read over
 * the top level, and what a stage may hold. */
#include "recipe_internal.h"

#include <stdio.h>
#include <string.h>

#include "../core/models.h"

/* The model whose section is the top-level object `name`, or -1. */
int er_recipe_section_model(const char *name)
{
    for (int m = 0; m < ER_MODEL_KINDS; m++)
        if (strcmp(er_model_name((er_model_kind)m), name) == 0)
            return m;
    return -1;
}

/* Whether top-level row k may lie in a stage of model m; if not, why, as
 * an error at `path`. */
er_status er_recipe_stage_may_hold(const er_recipe_ctx *c, const er_key *k, er_model_kind m,
                                   const char *path)
{
    if (k->type == ER_KEY_VERSION)
        return er_recipe_fail(c, path, "the recipe's version: give it at the top level");
    if (k->type == ER_KEY_STAGES)
        return er_recipe_fail(c, path, "stages do not nest");
    if (k->type == ER_KEY_OBJECT && !(k->flags & ER_KEY_MODEL))
        return er_recipe_fail(c, path, "every stage works on one %s: set it at the top level",
                              k->path);
    int sm = k->type == ER_KEY_OBJECT ? er_recipe_section_model(k->path) : -1;
    if (sm >= 0 && !er_stage_holds_section(m, (er_model_kind)sm))
        return er_recipe_fail(c, path,
                              "a %s section in a stage of model %s: it belongs in a %s stage",
                              k->path, er_model_name(m), k->path);
    return ER_OK;
}

/* Stage i of a "stages" array: the top level with the stage's keys over
 * it (core/stages.h).  Its model first, so that the sections it may hold
 * are known; a key that may not lie in a stage is an error. */
static er_status read_stage(const er_recipe_ctx *c, const er_key *tab, size_t n,
                            const er_params *top, const cJSON *obj, int i, er_params *out)
{
    char shown[32], path[RECIPE_PATH_LEN], q[RECIPE_QUOTE_MAX + 4];
    er_recipe_ctx in = *c;
    in.stages = NULL;
    in.model_key = NULL;
    snprintf(shown, sizeof shown, "stages[%d]", i);
    if (!cJSON_IsObject(obj))
        return er_recipe_wrong_type(c, shown, "an object (a stage)", obj);
    *out = *top;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(obj, "model");
    if (!model)
        return er_recipe_fail(c, shown, "missing key 'model' (each stage names its model)");
    snprintf(path, sizeof path, "%s.model", shown);
    er_status st = er_recipe_read_value(&in, tab, n, er_recipe_find_child(tab, n, "", "model"),
                                        (char *)out, model, path);
    for (const cJSON *m = obj->child; m && !st; m = m->next) {
        const er_key *k = m->string ? er_recipe_find_child(tab, n, "", m->string) : NULL;
        const char *name = m->string ? m->string : "";
        snprintf(path, sizeof path, "%s.%s", shown, er_recipe_quote(q, sizeof q, name));
        if (k)
            st = er_recipe_stage_may_hold(c, k, out->model, path);
    }
    if (!st)
        st = er_recipe_read_object(&in, tab, n, (char *)out, obj, "", shown);
    snprintf(path, sizeof path, "%s.", shown);
    return st ? st : er_recipe_one_list(&in, tab, n, obj, (char *)out, path);
}

/* The stages of array j (a "stages" read from the file or from -s, whose
 * errors name it: ctx c) over the top level. */
er_status er_recipe_read_stages(const er_recipe_ctx *c, const er_key *tab, size_t n,
                                const cJSON *j, er_stages *r)
{
    int count = cJSON_GetArraySize(j), i = 0;
    if (count == 0)
        return er_recipe_fail(c, "stages",
                              "an empty list: give at least one stage (a recipe of one "
                              "model has no \"stages\")");
    if (count > ER_MAX_STAGES)
        return er_recipe_fail(c, "stages", "%d stages, at most %d are allowed", count,
                              ER_MAX_STAGES);
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        er_status st = read_stage(c, tab, n, &r->top, e, i, &r->stage[i]);
        if (st)
            return st;
    }
    r->n = count;
    return ER_OK;
}
