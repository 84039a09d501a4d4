#include "provenance.h"

#include <stdlib.h>

#include <cJSON.h>

#include "../io/recipe.h"
#include "paths.h"

/* {"erode":VERSION, key:name, "recipe":recipe} with `recipe` (owned). */
static cJSON *head(const char *key, const char *name, cJSON *recipe)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !recipe) {
        cJSON_Delete(o);
        cJSON_Delete(recipe);
        return NULL;
    }
    cJSON_AddStringToObject(o, "erode", ERODE_VERSION);
    cJSON_AddStringToObject(o, key, er_path_base(name));
    cJSON_AddItemToObject(o, "recipe", recipe);
    return o;
}

static char *finish(cJSON *o)
{
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

char *er_provenance_run(const char *input, const er_stages *rc)
{
    char *recipe = er_recipe_stages_to_json_compact(rc);
    cJSON *r = recipe ? cJSON_Parse(recipe) : NULL;
    free(recipe);
    return finish(head("input", input, r));
}

char *er_provenance_stitch(const char *tile, const char *recipe, const char *const *from,
                           int n_from)
{
    cJSON *o = head("stitch", tile, cJSON_Parse(recipe));
    cJSON *list = o ? cJSON_AddArrayToObject(o, "from") : NULL;
    if (o && !list) {
        cJSON_Delete(o);
        return NULL;
    }
    for (int i = 0; i < n_from && list; i++)
        cJSON_AddItemToArray(list, cJSON_CreateString(er_path_base(from[i])));
    return finish(o);
}

char *er_provenance_recipe(const char *text)
{
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "erode");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "recipe");
    char *out = cJSON_IsString(v) && cJSON_IsObject(r) ? cJSON_PrintUnformatted(r) : NULL;
    cJSON_Delete(o);
    return out;
}
