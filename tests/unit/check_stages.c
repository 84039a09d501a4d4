/*
 * Staged recipes (core/stages.h, io/recipe.c): what a stage inherits from
 * the top level and what it sets itself, -s on both, the errors that name
 * the stage, and the print -> parse round trip.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/models.h"
#include "../../core/stages.h"
#include "../../io/recipe.h"
#include "test_util.h"

static er_stages R; /* large: off the stack */

static er_status parse_st(const char *text, const char *const *ov, int n_ov, er_stages *r,
                          er_error *err)
{
    err->msg[0] = '\0';
    return er_recipe_parse_stages(text, text ? strlen(text) : 0, "recipe.json", ov, n_ov, r,
                                  err);
}

static const char *const three =
    "{\"seed\": 3, \"terrain\": {\"vertical_scale\": 2},"
    " \"stages\": ["
    "  {\"model\": \"mei\", \"mei\": {\"steps\": 20}},"
    "  {\"model\": \"droplet\", \"seed\": 9, \"comment\": \"detail\", \"droplet\": {\"count\": 1000}},"
    "  {\"model\": \"sph\", \"mei\": {\"sources\": [{\"x\": 1, \"y\": 2, \"rate\": 1}]},"
    "   \"sph\": {\"steps\": 3}}]}";

/* A stage is the top level with its own keys over it; the other models'
 * sections keep their defaults. */
START_TEST(stage_inherits_top_level)
{
    er_error err;
    er_params def;
    er_params_default(&def);
    ck_assert_msg(parse_st(three, NULL, 0, &R, &err) == ER_OK, "%s", err.msg);
    ck_assert_int_eq(R.n, 3);
    ck_assert_int_eq(er_stages_count(&R), 3);
    ck_assert_int_eq(R.stage[0].model, ER_MODEL_MEI);
    ck_assert_int_eq(R.stage[1].model, ER_MODEL_DROPLET);
    ck_assert_int_eq(R.stage[2].model, ER_MODEL_SPH);
    ck_assert_uint_eq(R.stage[0].seed, 3);
    ck_assert_uint_eq(R.stage[1].seed, 9);
    ck_assert_uint_eq(R.stage[2].seed, 3);
    for (int k = 0; k < 3; k++)
        ck_assert(R.stage[k].terrain.vertical_scale == 2.0);
    ck_assert_int_eq(R.stage[0].mei.steps, 20);
    ck_assert_int_eq(R.stage[1].droplet.count, 1000);
    ck_assert_int_eq(R.stage[1].mei.steps, def.mei.steps);
    ck_assert_int_eq(R.stage[2].mei.n_sources, 1);
    ck_assert_int_eq(R.stage[2].sph.steps, 3);
    ck_assert_int_eq(R.stage[0].mei.n_sources, 0);
}
END_TEST

/* -s of the top level reaches every stage that does not set the key
 * itself; -s stages.N wins over both. */
START_TEST(overrides_top_and_stage)
{
    er_error err;
    const char *ov[] = {"stages.1.seed=4", "seed=5", "stages[0].mei.steps=7",
                        "hardness=h.tif", "stages.2.hardness=null"};
    ck_assert_msg(parse_st(three, ov, 5, &R, &err) == ER_OK, "%s", err.msg);
    ck_assert_uint_eq(R.top.seed, 5);
    ck_assert_uint_eq(R.stage[0].seed, 5);
    ck_assert_uint_eq(R.stage[1].seed, 4);
    ck_assert_uint_eq(R.stage[2].seed, 5);
    ck_assert_int_eq(R.stage[0].mei.steps, 7);
    ck_assert_str_eq(R.stage[0].maps.hardness, "h.tif");
    ck_assert_str_eq(R.stage[1].maps.hardness, "h.tif");
    ck_assert_str_eq(R.stage[2].maps.hardness, "");
    /* the whole list from -s */
    const char *list[] = {"stages=[{\"model\": \"droplet\"}, {\"model\": \"mei\"}]",
                          "stages.1.mei.steps=2"};
    ck_assert_msg(parse_st(NULL, list, 2, &R, &err) == ER_OK, "%s", err.msg);
    ck_assert_int_eq(R.n, 2);
    ck_assert_int_eq(R.stage[0].model, ER_MODEL_DROPLET);
    ck_assert_int_eq(R.stage[1].mei.steps, 2);
}
END_TEST

/* The printed recipe reads back to the same stages, field for field, and
 * prints the same text again; a stage shows only what it does not
 * inherit. */
START_TEST(print_round_trip)
{
    static er_stages back;
    er_error err;
    const char *ov[] = {"stages.2.hardness=null", "hardness=h.tif", "stages.0.rain=r.tif"};
    ck_assert_msg(parse_st(three, ov, 3, &R, &err) == ER_OK, "%s", err.msg);
    char *texts[3] = {er_recipe_stages_to_json(&R), er_recipe_stages_to_json_all(&R),
                      er_recipe_stages_to_json_compact(&R)};
    for (int t = 0; t < 3; t++) {
        ck_assert_ptr_nonnull(texts[t]);
        ck_assert_msg(parse_st(texts[t], NULL, 0, &back, &err) == ER_OK, "%s: %s", err.msg,
                      texts[t]);
        ck_assert_int_eq(back.n, R.n);
        ck_assert(memcmp(&back.top, &R.top, sizeof R.top) == 0);
        for (int k = 0; k < R.n; k++)
            ck_assert_msg(memcmp(&back.stage[k], &R.stage[k], sizeof R.stage[k]) == 0,
                          "stage %d differs after reading back", k);
        char *again = t == 0 ? er_recipe_stages_to_json(&back)
                    : t == 1 ? er_recipe_stages_to_json_all(&back)
                             : er_recipe_stages_to_json_compact(&back);
        ck_assert_str_eq(again, texts[t]);
        free(again);
    }
    /* compact: no model key at the top, each stage its own */
    const char *c = texts[2];
    ck_assert_ptr_nonnull(strstr(c, "\"stages\":[{\"model\":\"mei\",\"rain\":"));
    ck_assert_ptr_null(strstr(c, "{\"erode_recipe\":1,\"model\""));
    ck_assert_ptr_nonnull(strstr(c, "{\"model\":\"droplet\",\"seed\":9,\"droplet\":{"));
    ck_assert_ptr_nonnull(strstr(c, "\"hardness\":null,\"mei\":{"));
    for (int t = 0; t < 3; t++)
        free(texts[t]);
}
END_TEST

/* A recipe without stages prints exactly as a recipe of one model. */
START_TEST(unstaged_prints_as_before)
{
    er_error err;
    er_params p;
    const char *ov[] = {"model=droplet", "droplet.count=5"};
    ck_assert_msg(parse_st(NULL, ov, 2, &R, &err) == ER_OK, "%s", err.msg);
    ck_assert_int_eq(R.n, 0);
    ck_assert_int_eq(er_stages_count(&R), 1);
    ck_assert_ptr_eq(er_stages_at(&R, 0), &R.top);
    ck_assert_int_eq(er_recipe_parse(NULL, 0, "r", ov, 2, &p, &err), ER_OK);
    char *a = er_recipe_to_json_all(&p), *b = er_recipe_stages_to_json_all(&R);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    /* the one-model reader refuses stages */
    ck_assert_int_eq(er_recipe_parse(three, strlen(three), "r.json", NULL, 0, &p, &err),
                     ER_EINVAL);
    ck_assert_str_eq(err.msg, "r.json: stages: a staged recipe where one model is expected");
}
END_TEST

struct bad {
    const char *text; /* NULL: the built-in default */
    const char *ov;   /* one -s, or NULL */
    const char *msg;  /* the whole error line */
};

static const struct bad bad[] = {
    {"{\"model\": \"mei\", \"stages\": [{\"model\": \"mei\"}]}", NULL,
     "recipe.json: model: beside \"stages\": each stage names its own model"},
    {"{\"mei\": {\"steps\": 3}, \"stages\": [{\"model\": \"mei\"}]}", NULL,
     "recipe.json: mei: a model's section beside \"stages\": it belongs in a stage of that model "
     "(stages[N].mei)"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "droplet.count=3",
     "-s droplet.count: a model's section beside \"stages\": it belongs in a stage of that model "
     "(stages[N].droplet.count)"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "model=sph",
     "-s model: beside \"stages\": each stage names its own model"},
    {NULL, "stages=[{\"model\": \"droplet\"}]", NULL}, /* the default has no model key set */
    {"{\"model\": \"sph\"}", "stages=[{\"model\": \"droplet\"}]",
     "recipe.json: model: beside \"stages\": each stage names its own model"},
    {"{\"stages\": [{\"model\": \"mei\", \"mei\": {\"dt\": -1}}]}", NULL,
     "recipe.json: stages[0].mei.dt: -1 is out of range, must be > 0 and <= 10"},
    {"{\"stages\": [{\"model\": \"mei\"}, {\"model\": \"droplet\", \"mei\": {}}]}", NULL,
     "recipe.json: stages[1].mei: a mei section in a stage of model droplet: it belongs in a mei "
     "stage"},
    {"{\"stages\": [{\"mei\": {}}]}", NULL,
     "recipe.json: stages[0]: missing key 'model' (each stage names its model)"},
    {"{\"stages\": [{\"model\": \"mie\"}]}", NULL,
     "recipe.json: stages[0].model: 'mie' is not one of 'mei', 'droplet', 'sph'"},
    {"{\"stages\": [{\"model\": \"mei\", \"terrain\": {}}]}", NULL,
     "recipe.json: stages[0].terrain: every stage works on one terrain: set it at the top level"},
    {"{\"stages\": [{\"model\": \"mei\", \"erode_recipe\": 1}]}", NULL,
     "recipe.json: stages[0].erode_recipe: the recipe's version: give it at the top level"},
    {"{\"stages\": [{\"model\": \"mei\", \"stages\": []}]}", NULL,
     "recipe.json: stages[0].stages: stages do not nest"},
    {"{\"stages\": [{\"model\": \"mei\", \"mei\": {\"stepz\": 1}}]}", NULL,
     "recipe.json: stages[0].mei.stepz: unknown key, did you mean 'stages[0].mei.steps'?"},
    {"{\"stages\": []}", NULL,
     "recipe.json: stages: an empty list: give at least one stage (a recipe of one model has no "
     "\"stages\")"},
    {"{\"stages\": [{\"model\": \"mei\"},{\"model\": \"mei\"},{\"model\": \"mei\"},"
     "{\"model\": \"mei\"},{\"model\": \"mei\"},{\"model\": \"mei\"},{\"model\": \"mei\"},"
     "{\"model\": \"mei\"},{\"model\": \"mei\"}]}", NULL,
     "recipe.json: stages: 9 stages, at most 8 are allowed"},
    {"{\"stages\": {}}", NULL, "recipe.json: stages: expected an array of stages, got an object"},
    {"{\"stages\": [3]}", NULL, "recipe.json: stages[0]: expected an object (a stage), got a number"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.1.mei.steps=3",
     "-s stages.1.mei.steps: no such stage: the recipe has 1 (stages.0 to stages.0)"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.0.droplet.count=3",
     "-s stages.0.droplet.count: a droplet section in a stage of model mei: it belongs in a "
     "droplet stage"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.0.mei.stepz=3",
     "-s stages.0.mei.stepz: unknown key, did you mean 'stages.0.mei.steps'?"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.0.mei.dt=0",
     "-s stages.0.mei.dt: 0 is out of range, must be > 0 and <= 10"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.x.mei.dt=1",
     "-s stages.x.mei.dt: expected stages.N.KEY, N the stage's number from 0"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.0.terrain.cell_size=2",
     "-s stages.0.terrain.cell_size: every stage works on one terrain: set it at the top level"},
    {NULL, "stages.0.mei.steps=3", "-s stages.0.mei.steps: the recipe has no stages"},
};

START_TEST(bad_stage)
{
    er_error err;
    const struct bad *b = &bad[_i];
    er_status st = parse_st(b->text, &b->ov, b->ov ? 1 : 0, &R, &err);
    if (!b->msg) {
        ck_assert_msg(st == ER_OK, "%s", err.msg);
        return;
    }
    ck_assert_int_eq(st, ER_EINVAL);
    ck_assert_str_eq(err.msg, b->msg);
}
END_TEST

/* A stage's check and plan errors name the stage. */
START_TEST(errors_name_the_stage)
{
    er_error err;
    ck_assert_int_eq(parse_st(three, NULL, 0, &R, &err), ER_OK);
    er_fail(&err, ER_EINVAL, "mei.ke: ke * dt = 2 evaporates more than the water");
    er_stages_name_error(&R, 1, &err);
    ck_assert_str_eq(err.msg, "stages[1].mei.ke: ke * dt = 2 evaporates more than the water");
    er_fail(&err, ER_EINVAL, "sph: tile sets (windows) are not supported");
    er_stages_name_error(&R, 2, &err);
    ck_assert_str_eq(err.msg, "stages[2]: sph: tile sets (windows) are not supported");
    /* each model's own check, here the droplets' under a tile set */
    ck_assert_int_eq(er_stages_check(&R, 1, &err), ER_EINVAL);
    ck_assert_msg(strncmp(err.msg, "stages[1].droplet.height_unit: ", 31) == 0, "%s", err.msg);
    ck_assert_int_eq(er_stages_check(&R, 0, &err), ER_OK);
    /* a recipe without stages keeps its message */
    er_stages_single(&R, &R.stage[0]);
    er_fail(&err, ER_EINVAL, "mei.ke: x");
    er_stages_name_error(&R, 0, &err);
    ck_assert_str_eq(err.msg, "mei.ke: x");
}
END_TEST

Suite *stages_suite(void);
Suite *stages_suite(void)
{
    Suite *s = suite_create("stages");
    TCase *tc = tcase_create("recipe");
    tcase_add_test(tc, stage_inherits_top_level);
    tcase_add_test(tc, overrides_top_and_stage);
    tcase_add_test(tc, print_round_trip);
    tcase_add_test(tc, unstaged_prints_as_before);
    tcase_add_loop_test(tc, bad_stage, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, errors_name_the_stage);
    suite_add_tcase(s, tc);
    return s;
}
