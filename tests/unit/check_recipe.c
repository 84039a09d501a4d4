/*
 * io/recipe.c: strict validation (each class of error and its message),
 * -s overrides, and the print -> parse round trip being exact.
 */
#include <cJSON.h>
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/keys.h"
#include "../../core/models.h"
#include "../../io/recipe.h"
#include "test_util.h"

/* Parses `text` as "recipe.json" with overrides; returns the status. */
static er_status parse(const char *text, const char *const *ov, int n_ov, er_params *p,
                       er_error *err)
{
    err->msg[0] = '\0';
    return er_recipe_parse(text, text ? strlen(text) : 0, "recipe.json", ov, n_ov, p, err);
}

/* Every error message is one line, lowercase first, no final full stop. */
static void assert_one_line(const er_error *err)
{
    size_t n = strlen(err->msg);
    ck_assert_uint_gt(n, 0);
    ck_assert_ptr_null(strchr(err->msg, '\n'));
    ck_assert_int_ne(err->msg[n - 1], '.');
    ck_assert(!(err->msg[0] >= 'A' && err->msg[0] <= 'Z'));
}

static void assert_params_eq(const er_params *a, const er_params *b)
{
    ck_assert_msg(memcmp(a, b, sizeof *a) == 0, "er_params differ");
}

/* ------------------------------------------------------------------ */

START_TEST(defaults_equal_builtin)
{
    er_params want, got;
    er_error err;
    er_params_default(&want);
    ck_assert_int_eq(parse(NULL, NULL, 0, &got, &err), ER_OK);
    assert_params_eq(&got, &want);
    ck_assert_int_eq(parse("{}", NULL, 0, &got, &err), ER_OK);
    assert_params_eq(&got, &want);
    ck_assert_int_eq(parse(" {\"erode_recipe\": 1, \"comment\": \"x\"}\n", NULL, 0, &got, &err),
                     ER_OK);
    assert_params_eq(&got, &want);
    ck_assert_int_eq(er_recipe_load(NULL, NULL, 0, &got, &err), ER_OK);
    assert_params_eq(&got, &want);
}
END_TEST

/* configs/default.json is the built-in default written out (with a
 * comment that --print-recipe leaves out, so compared after parsing). */
START_TEST(default_json_matches_builtin)
{
    char path[PATH_MAX];
    er_params want, got;
    er_error err;
    er_test_path(path, sizeof path, "configs/default.json");
    ck_assert_msg(er_recipe_load(path, NULL, 0, &got, &err) == ER_OK, "%s", err.msg);
    er_params_default(&want);
    assert_params_eq(&got, &want);

    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *j = cJSON_Parse(text);
    ck_assert_ptr_nonnull(j);
    ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "comment")));
    /* written out in full: the same members as --print-recipe */
    char *printed = er_recipe_to_json(&want);
    cJSON *pj = cJSON_Parse(printed);
    ck_assert_ptr_nonnull(pj);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "comment");
    ck_assert(cJSON_Compare(j, pj, 1));
    cJSON_Delete(pj);
    cJSON_Delete(j);
    free(printed);
}
END_TEST

/* --print-recipe lists every key, the control rasters not given as null
 * (shell completion offers what it prints) and reads back to the same
 * recipe; the form a checkpoint's recipe hash is taken of leaves them out,
 * as it always did.  "stages" is printed by a staged recipe only, so the
 * print of a recipe without it stays as it was. */
/* Whether a key lies in the section of a test model (tests/models/),
 * which a recipe of another model neither prints nor hashes. */
static int of_test_model(const char *path)
{
    for (int m = 0; m < ER_MODEL_KINDS; m++) {
        const er_model_ops *o = er_model((er_model_kind)m);
        const size_t n = strlen(o->name);
        if ((o->flags & ER_MODEL_TEST_ONLY) && strncmp(path, o->name, n) == 0 &&
            (path[n] == '\0' || path[n] == '.'))
            return 1;
    }
    return 0;
}

START_TEST(print_all_lists_every_key)
{
    er_params want, got;
    er_error err;
    er_params_default(&want);
    char *all = er_recipe_to_json_all(&want);
    cJSON *j = cJSON_Parse(all);
    ck_assert_ptr_nonnull(j);
    size_t n;
    const er_key *k = er_keys_params(&n);
    for (size_t i = 0; i < n; i++) {
        if (k[i].type == ER_KEY_COMMENT || k[i].type == ER_KEY_STAGES ||
            (k[i].flags & ER_KEY_OLD_NAME) || of_test_model(k[i].path))
            continue;
        char path[128];
        snprintf(path, sizeof path, "%s", k[i].path);
        cJSON *at = j;
        for (char *part = strtok(path, "."); part && at; part = strtok(NULL, "."))
            at = cJSON_GetObjectItemCaseSensitive(at, part);
        ck_assert_msg(at != NULL, "%s missing from --print-recipe", k[i].path);
    }
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "hardness")));
    cJSON_Delete(j);
    ck_assert_msg(parse(all, NULL, 0, &got, &err) == ER_OK, "%s", err.msg);
    assert_params_eq(&got, &want);
    free(all);

    char *hashed = er_recipe_to_json(&want);
    ck_assert_ptr_null(strstr(hashed, "\"hardness\""));
    /* keys added later (ER_KEY_LATER) are left out at their defaults, so
     * the recipe text older checkpoints hashed is unchanged; a value of
     * its own is recorded */
    ck_assert_ptr_null(strstr(hashed, "\"routing\""));
    ck_assert_ptr_null(strstr(hashed, "\"lithology\""));
    ck_assert_ptr_nonnull(strstr(hashed, "\"kd\""));
    free(hashed);
    want.stream_power.routing = ER_SP_ROUTE_RANDOM;
    want.stream_power.lithology = 0.5;
    hashed = er_recipe_to_json(&want);
    ck_assert_ptr_nonnull(strstr(hashed, "\"routing\": \"random\""));
    ck_assert_ptr_nonnull(strstr(hashed, "\"lithology\": 0.5"));
    ck_assert_ptr_null(strstr(hashed, "\"routing_spread\""));
    free(hashed);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bad recipes: each row a recipe and a piece of the message it must give. */

static const struct bad {
    const char *text;
    const char *msg;
} bad[] = {
    /* unknown keys, with and without a suggestion */
    {"{\"modle\": \"mei\"}", "recipe.json: modle: unknown key, did you mean 'model'?"},
    {"{\"mei\": {\"stpes\": 10}}", "recipe.json: mei.stpes: unknown key, did you mean 'mei.steps'?"},
    {"{\"mei\": {\"Dt\": 0.1}}", "mei.Dt: unknown key, did you mean 'mei.dt'?"},
    {"{\"droplet\": {\"mass_transfer\": {\"frction\": 0.1}}}",
     "droplet.mass_transfer.frction: unknown key, did you mean 'droplet.mass_transfer.friction'?"},
    {"{\"droplet\": {\"evaporate\": 0.1}}",
     "droplet.evaporate: unknown key, did you mean 'droplet.evaporate_speed'?"},
    {"{\"steps\": 10}", "steps: unknown key, did you mean 'mei.steps'?"},
    {"{\"droplet\": {\"friction\": 0.1}}",
     "droplet.friction: unknown key, did you mean 'droplet.mass_transfer.friction'?"},
    {"{\"mei\": {\"banana\": 1}}", "recipe.json: mei.banana: unknown key"},
    {"{\"mei\": {\"comment\": \"x\"}}", "mei.comment: unknown key"},
    /* wrong types */
    {"{\"mei\": {\"dt\": \"0.1\"}}", "recipe.json: mei.dt: expected a number, got a string"},
    {"{\"mei\": {\"dt\": null}}", "mei.dt: expected a number, got null"},
    {"{\"mei\": {\"dt\": [0.1]}}", "mei.dt: expected a number, got an array"},
    {"{\"mei\": {\"steps\": \"5\"}}", "mei.steps: expected an integer, got a string"},
    {"{\"seed\": true}", "seed: expected an integer, got a boolean"},
    {"{\"model\": 1}", "model: expected a string, got a number"},
    {"{\"mei\": {\"cfl\": {}}}", "mei.cfl: expected a string, got an object"},
    {"{\"comment\": 5}", "comment: expected a string, got a number"},
    {"{\"mei\": []}", "mei: expected an object, got an array"},
    {"{\"droplet\": {\"mass_transfer\": 1}}",
     "droplet.mass_transfer: expected an object, got a number"},
    {"{\"mei\": {\"sources\": {}}}", "mei.sources: expected an array, got an object"},
    {"{\"mei\": {\"sources\": null}}", "mei.sources: expected an array, got null"},
    {"{\"droplet\": {\"count\": \"all\"}}",
     "droplet.count: expected an integer or null, got a string"},
    {"{\"terrain\": {\"cell_size\": \"1\"}}",
     "terrain.cell_size: expected a number or null, got a string"},
    {"{\"droplet\": {\"height_unit\": null}}",
     "droplet.height_unit: expected a number or 'relief', got null"},
    {"{\"droplet\": {\"height_unit\": \"auto\"}}",
     "droplet.height_unit: 'auto' is not a number or 'relief'"},
    /* out of range, low and high */
    {"{\"mei\": {\"dt\": 0}}", "recipe.json: mei.dt: 0 is out of range, must be > 0 and <= 10"},
    {"{\"mei\": {\"dt\": 10.5}}", "mei.dt: 10.5 is out of range, must be > 0 and <= 10"},
    {"{\"mei\": {\"dt\": 1e400}}", "mei.dt: inf is out of range"},
    {"{\"mei\": {\"steps\": -1}}", "mei.steps: -1 is out of range, must be >= 0 and <= 1000000000"},
    {"{\"mei\": {\"steps\": 1e10}}", "mei.steps: 10000000000 is out of range"},
    {"{\"mei\": {\"min_tilt\": 1.5}}", "mei.min_tilt: 1.5 is out of range, must be >= 0 and <= 1"},
    {"{\"mei\": {\"kc\": -0.1}}", "mei.kc: -0.1 is out of range"},
    {"{\"mei\": {\"max_substeps\": 0}}", "mei.max_substeps: 0 is out of range, must be >= 1"},
    {"{\"droplet\": {\"inertia\": 1}}", "droplet.inertia: 1 is out of range, must be >= 0 and < 1"},
    {"{\"droplet\": {\"inertia\": -0.01}}", "droplet.inertia: -0.01 is out of range"},
    {"{\"droplet\": {\"erode_speed\": 2}}", "droplet.erode_speed: 2 is out of range"},
    {"{\"droplet\": {\"radius\": 0}}", "droplet.radius: 0 is out of range, must be >= 1"},
    {"{\"droplet\": {\"count\": -1}}", "droplet.count: -1 is out of range, must be >= 0"},
    {"{\"droplet\": {\"height_unit\": 0}}", "droplet.height_unit: 0 is out of range, must be > 0"},
    {"{\"droplet\": {\"mass_transfer\": {\"min_volume\": 0}}}",
     "droplet.mass_transfer.min_volume: 0 is out of range"},
    {"{\"terrain\": {\"cell_size\": 0}}", "terrain.cell_size: 0 is out of range, must be >= 1e-06"},
    {"{\"terrain\": {\"vertical_scale\": 1e300}}", "terrain.vertical_scale: 1e+300 is out of range"},
    {"{\"seed\": -1}", "seed: -1 is out of range, must be >= 0 and <= 9007199254740991"},
    {"{\"seed\": 9007199254740993}", "seed: 9007199254740992 is out of range"},
    {"{\"seed\": 18446744073709551616}", "seed: 1.8446744073709552e+19 is out of range"},
    /* integers must be integral */
    {"{\"mei\": {\"steps\": 1.5}}", "recipe.json: mei.steps: 1.5 is not an integer"},
    {"{\"seed\": 0.25}", "seed: 0.25 is not an integer"},
    {"{\"droplet\": {\"count\": 1000.5}}", "droplet.count: 1000.5 is not an integer"},
    /* versions */
    {"{\"erode_recipe\": 2}", "recipe.json: erode_recipe: version 2 is not supported, this erode reads version 1"},
    {"{\"erode_recipe\": 0.5}", "erode_recipe: version 0.5 is not supported"},
    {"{\"erode_recipe\": \"1\"}", "erode_recipe: expected an integer, got a string"},
    {"{\"new_in_v2\": 1, \"erode_recipe\": 2}", "erode_recipe: version 2 is not supported"},
    /* duplicates */
    {"{\"mei\": {\"dt\": 0.1, \"dt\": 0.2}}", "recipe.json: mei.dt: duplicate key"},
    {"{\"model\": \"mei\", \"seed\": 3, \"model\": \"droplet\"}", "recipe.json: model: duplicate key"},
    {"{\"mei\": {\"sources\": [{\"x\": 1, \"y\": 1, \"x\": 2, \"rate\": 1}]}}",
     "mei.sources[0].x: duplicate key"},
    /* malformed JSON: line and column of the failure point */
    {"{\n  \"mei\": {\n    \"dt\": 0.1,,\n  }\n}", "recipe.json: line 3, column 15: malformed JSON"},
    {"{\n  \"model\": \"mei\"\n  \"seed\": 2\n}", "recipe.json: line 3, column 3: malformed JSON"},
    {"{\n  \"model\": \"mei\",\n  seed: 2\n}", "recipe.json: line 3, column 3: malformed JSON"},
    {"{\n  \"mei\": {\"dt\": }\n}", "line 2, column 17: malformed JSON"},
    {"{\n  \"seed\": 2\n", "line 3, column 1: malformed JSON, unexpected end of text"},
    {"{\"seed\": 2} x", "line 1, column 13: malformed JSON"},
    {"{\"\xc3\xa9\": 1,,}", "line 1, column 9: malformed JSON"},
    {"", "recipe.json: line 1, column 1: malformed JSON"},
    /* numbers as JSON writes them: cJSON alone takes 020 and 1. */
    {"{\"mei\": {\"steps\": 020}}",
     "recipe.json: line 1, column 19: malformed JSON number '020' (no leading zeros, digits on "
     "both sides of a point)"},
    {"{\"seed\": 1,\n \"mei\": {\"dt\": 1.}}", "line 2, column 16: malformed JSON number '1.'"},
    {"{\"mei\": {\"dt\": -01e1}}", "line 1, column 16: malformed JSON number '-01e1'"},
    {"{\"mei\": {\"dt\": 1e}}", "malformed JSON"},
    {"[1, 2]", "recipe.json: expected a JSON object, got an array"},
    /* enums list what is allowed */
    {"{\"model\": \"grid\"}", "recipe.json: model: 'grid' is not one of 'mei', 'droplet'"},
    {"{\"mei\": {\"advection\": \"semi_lagrangian\"}}",
     "mei.advection: 'semi_lagrangian' is not one of 'conservative', 'semi-lagrangian'"},
    {"{\"mei\": {\"boundary\": \"Open\"}}", "'Open' is not one of 'closed', 'open'"},
    {"{\"droplet\": {\"variant\": \"mass_transfer\"}}", "'lague', 'mass-transfer'"},
    /* sources */
    {"{\"mei\": {\"sources\": [{\"x\": 1, \"y\": 2}]}}", "recipe.json: mei.sources[0]: missing key 'rate'"},
    {"{\"mei\": {\"sources\": [{\"x\": 1, \"y\": 2, \"rate\": 1}, {\"y\": 2, \"rate\": 1}]}}",
     "mei.sources[1]: missing key 'x'"},
    {"{\"mei\": {\"sources\": [5]}}", "mei.sources[0]: expected an object, got a number"},
    {"{\"mei\": {\"sources\": [{\"x\": 1, \"y\": 2, \"rate\": 1, \"rdius\": 2}]}}",
     "mei.sources[0].rdius: unknown key, did you mean 'mei.sources[0].radius'?"},
    {"{\"mei\": {\"sources\": [{\"x\": 1, \"y\": 2, \"rate\": 1, \"coords\": \"utm\"}]}}",
     "mei.sources[0].coords: 'utm' is not one of 'pixel', 'map', 'fraction'"},
    {"{\"river_sources\": [{\"x\": 1, \"y\": 2}]}", "recipe.json: river_sources[0]: missing key 'rate'"},
    {"{\"river_sources\": [{\"at\": \"peaks\", \"rate\": 1, \"x\": 3}]}",
     "recipe.json: river_sources[0]: 'x' does not go with \"at\": \"peaks\""},
    {"{\"river_sources\": [{\"at\": \"peaks\", \"rate\": 1, \"coords\": \"pixel\"}]}",
     "recipe.json: river_sources[0]: 'coords' does not go with \"at\": \"peaks\""},
    {"{\"river_sources\": [{\"x\": 1, \"y\": 2, \"rate\": 1, \"spacing\": 4}]}",
     "recipe.json: river_sources[0]: 'spacing' does not go with \"at\": \"xy\""},
    {"{\"river_sources\": [{\"at\": \"ridge\", \"rate\": 1}]}",
     "recipe.json: river_sources[0].at: 'ridge' is not one of 'xy', 'peaks'"},
    {"{\"river_sources\": [{\"at\": \"peaks\", \"rate\": 1, \"count\": 65}]}",
     "recipe.json: river_sources[0].count: 65 is out of range, must be >= 1 and <= 64"},
    {"{\"river_sources\": [{\"at\": \"peaks\", \"rate\": 1, \"count\": 0}]}",
     "recipe.json: river_sources[0].count: 0 is out of range"},
    {"{\"river_sources\": [{\"at\": \"peaks\", \"rate\": 1}], \"mei\": {\"sources\": "
     "[{\"x\": 1, \"y\": 2, \"rate\": 1}]}}",
     "recipe.json: river_sources: given twice, as river_sources and as mei.sources (its old "
     "spelling): keep one"},
    {"{\"mei\": {\"sources\": [{\"x\": 1, \"y\": 2, \"rate\": 1, \"radius\": 0}]}}",
     "mei.sources[0].radius: 0 is out of range, must be > 0"},
    {"{\"mei\": {\"sources\": [{\"x\": 1, \"y\": 2, \"rate\": -1}]}}",
     "mei.sources[0].rate: -1 is out of range"},
    {"{\"mei\": {\"sources\": [{\"x\": \"1\", \"y\": 2, \"rate\": 1}]}}",
     "mei.sources[0].x: expected a number, got a string"},
};

START_TEST(bad_recipe)
{
    er_params p, before;
    er_error err;
    memset(&p, 0xa5, sizeof p);
    before = p;
    er_status st = parse(bad[_i].text, NULL, 0, &p, &err);
    ck_assert_msg(st == ER_EINVAL, "row %d: status %d for %s", _i, (int)st, bad[_i].text);
    ck_assert_msg(strstr(err.msg, bad[_i].msg) != NULL, "row %d: got \"%s\", want \"%s\"", _i,
                  err.msg, bad[_i].msg);
    ck_assert_msg(strncmp(err.msg, "recipe.json: ", 13) == 0, "%s", err.msg);
    assert_one_line(&err);
    /* nothing written on failure */
    ck_assert(memcmp(&p, &before, sizeof p) == 0);
}
END_TEST

/* Suggestions only when close. */
START_TEST(no_far_suggestions)
{
    static const char *const far[] = {"{\"mei\": {\"banana\": 1}}", "{\"foo\": 1}",
                                      "{\"droplet\": {\"xyzzy\": 1}}",
                                      "{\"mei\": {\"sources\": [{\"x\": 1, \"y\": 1, \"rate\": 1, \"colour\": 1}]}}"};
    er_params p;
    er_error err;
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        ck_assert_int_eq(parse(far[i], NULL, 0, &p, &err), ER_EINVAL);
        ck_assert_msg(strstr(err.msg, "unknown key") && !strstr(err.msg, "did you mean"), "%s",
                      err.msg);
    }
}
END_TEST

/* A NUL byte inside the text is malformed; text need not be NUL-terminated. */
START_TEST(length_is_respected)
{
    er_params p, want;
    er_error err;
    static const char with_nul[] = "{\"seed\": 3}\0";
    ck_assert_int_eq(er_recipe_parse(with_nul, sizeof with_nul - 1, "r.json", NULL, 0, &p, &err),
                     ER_EINVAL);
    ck_assert_str_eq(err.msg, "r.json: line 1, column 12: malformed JSON");
    /* only the first 11 bytes are the recipe */
    ck_assert_int_eq(er_recipe_parse("{\"seed\": 3}garbage", 11, "r.json", NULL, 0, &p, &err),
                     ER_OK);
    er_params_default(&want);
    want.seed = 3;
    assert_params_eq(&p, &want);
}
END_TEST

/* User text in messages stays on one line and within the buffer. */
START_TEST(hostile_key_names)
{
    er_params p;
    er_error err;
    ck_assert_int_eq(parse("{\"mei\": {\"a\\nb\": 1}}", NULL, 0, &p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "recipe.json: mei.a?b: unknown key");
    char *big = malloc(20000);
    ck_assert_ptr_nonnull(big);
    strcpy(big, "{\"mei\": {\"");
    size_t n = strlen(big);
    memset(big + n, 'k', 10000);
    strcpy(big + n + 10000, "\": 1}}");
    ck_assert_int_eq(parse(big, NULL, 0, &p, &err), ER_EINVAL);
    ck_assert(strstr(err.msg, "kkk...: unknown key") != NULL);
    assert_one_line(&err);
    free(big);
    /* a -s key into a list whose name holds a newline (found by fuzz_recipe) */
    const char *ov[] = {"st\nriver_sources[0].x=1"};
    ck_assert_int_eq(parse("{}", ov, 1, &p, &err), ER_EINVAL);
    ck_assert_str_eq(err.msg, "-s st?river_sources[0].x: unknown key, set the whole list: "
                              "-s 'st?river_sources=[...]'");
}
END_TEST

START_TEST(too_many_sources)
{
    char text[16384];
    er_params p;
    er_error err;
    for (int n = ER_MAX_SOURCES; n <= ER_MAX_SOURCES + 1; n++) {
        size_t len = (size_t)snprintf(text, sizeof text, "{\"mei\": {\"sources\": [");
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(text + len, sizeof text - len,
                                    "%s{\"x\": %d, \"y\": 1, \"rate\": 0.001}", i ? ", " : "", i);
        snprintf(text + len, sizeof text - len, "]}}");
        er_status st = parse(text, NULL, 0, &p, &err);
        if (n == ER_MAX_SOURCES) {
            ck_assert_int_eq(st, ER_OK);
            ck_assert_int_eq(p.river.n, ER_MAX_SOURCES);
            ck_assert_double_eq(p.river.src[ER_MAX_SOURCES - 1].x, ER_MAX_SOURCES - 1);
        } else {
            ck_assert_int_eq(st, ER_EINVAL);
            ck_assert_str_eq(err.msg, "recipe.json: mei.sources: 65 sources, at most 64 are allowed");
        }
    }
}
END_TEST

/* Integers may be written in exponent form when the value is integral. */
START_TEST(integers_in_exponent_form)
{
    er_params p;
    er_error err;
    ck_assert_int_eq(parse("{\"mei\": {\"steps\": 2e3, \"rain_steps\": 1.0}, \"seed\": 9.007199254740991e15}",
                           NULL, 0, &p, &err),
                     ER_OK);
    ck_assert_int_eq(p.mei.steps, 2000);
    ck_assert_int_eq(p.mei.rain_steps, 1);
    ck_assert_uint_eq(p.seed, UINT64_C(9007199254740991));
}
END_TEST

START_TEST(sources_defaults)
{
    er_params p;
    er_error err;
    ck_assert_int_eq(parse("{\"mei\": {\"sources\": [{\"x\": 10.5, \"y\": 20, \"rate\": 0.002},"
                           " {\"rate\": 1, \"y\": 3, \"x\": 4, \"coords\": \"map\", \"radius\": 6}]}}",
                           NULL, 0, &p, &err),
                     ER_OK);
    ck_assert_int_eq(p.river.n, 2);
    ck_assert_double_eq(p.river.src[0].x, 10.5);
    ck_assert_double_eq(p.river.src[0].y, 20);
    ck_assert_double_eq(p.river.src[0].rate, 0.002);
    ck_assert_double_eq(p.river.src[0].radius, 1.0);
    ck_assert_int_eq(p.river.src[0].coords, 0);
    ck_assert_double_eq(p.river.src[1].radius, 6);
    ck_assert_int_eq(p.river.src[1].coords, 1);
    /* an empty list clears it */
    const char *ov[] = {"mei.sources=[]"};
    er_params q, def;
    ck_assert_int_eq(parse("{\"mei\": {\"sources\": [{\"x\": 1, \"y\": 2, \"rate\": 3}]}}", ov, 1,
                           &q, &err),
                     ER_OK);
    er_params_default(&def);
    assert_params_eq(&q, &def);
}
END_TEST

/* river_sources and its old spelling mei.sources: the same list, one
 * name at a time in a recipe (the other absent or empty); -s replaces it
 * whichever the recipe used; printed as river_sources, a source's fields
 * those of its "at". */
START_TEST(river_sources_and_old_spelling)
{
    const char *src = "[{\"x\": 1, \"y\": 2, \"rate\": 3}, {\"at\": \"peaks\", \"count\": 3, "
                      "\"rate\": 0.5, \"radius\": 2}]";
    char a[512], b[512];
    snprintf(a, sizeof a, "{\"river_sources\": %s}", src);
    snprintf(b, sizeof b, "{\"mei\": {\"sources\": %s}, \"river_sources\": []}", src);
    er_params p, q;
    er_error err;
    ck_assert_msg(parse(a, NULL, 0, &p, &err) == ER_OK, "%s", err.msg);
    ck_assert_msg(parse(b, NULL, 0, &q, &err) == ER_OK, "%s", err.msg);
    ck_assert_int_eq(p.river.old_key, 0);
    ck_assert_int_eq(q.river.old_key, 1);
    q.river.old_key = 0;
    assert_params_eq(&p, &q);
    ck_assert_int_eq(p.river.n, 2);
    ck_assert_int_eq(p.river.src[0].at, ER_AT_XY);
    ck_assert_int_eq(p.river.src[1].at, ER_AT_PEAKS);
    ck_assert_int_eq(p.river.src[1].count, 3);
    ck_assert_double_eq(p.river.src[1].spacing, 10);
    /* the empty one first or last, the same */
    snprintf(b, sizeof b, "{\"river_sources\": [], \"mei\": {\"sources\": %s}}", src);
    ck_assert_msg(parse(b, NULL, 0, &q, &err) == ER_OK, "%s", err.msg);
    q.river.old_key = 0;
    assert_params_eq(&p, &q);

    /* -s with either name replaces the list the recipe gave */
    const char *ov[] = {"river_sources=[{\"x\": 5, \"y\": 6, \"rate\": 1}]"};
    ck_assert_int_eq(parse(b, ov, 1, &q, &err), ER_OK);
    ck_assert_int_eq(q.river.n, 1);
    ck_assert_int_eq(q.river.old_key, 0);
    ck_assert_double_eq(q.river.src[0].x, 5);

    /* printed under the new name; the peaks without x, y and coords */
    char *text = er_recipe_to_json(&p);
    ck_assert_ptr_nonnull(strstr(text, "\n  \"river_sources\": [\n    { \"at\": \"xy\", \"x\": 1.0, "
                                       "\"y\": 2.0, \"coords\": \"pixel\", \"radius\": 1.0, "
                                       "\"rate\": 3.0 },\n    { \"at\": \"peaks\", \"count\": 3, "
                                       "\"spacing\": 10.0, \"radius\": 2.0, \"rate\": 0.5 }\n  ],\n"));
    ck_assert_ptr_null(strstr(text, "\"sources\""));
    free(text);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Overrides */

static const struct bad bad_override[] = {
    {"mei.stpes=3", "-s mei.stpes: unknown key, did you mean 'mei.steps'?"},
    {"mie.steps=3", "-s mie.steps: unknown key, did you mean 'mei.steps'?"},
    {"steps=3", "-s steps: unknown key, did you mean 'mei.steps'?"},
    {"droplet.mass.dt=1", "-s droplet.mass.dt: unknown key, did you mean 'droplet.mass_transfer.dt'?"},
    {"banana=1", "-s banana: unknown key"},
    {"mei.sources[0].x=3", "-s mei.sources[0].x: unknown key, set the whole list: -s 'mei.sources=[...]'"},
    {"river_sources[1]=3", "-s river_sources[1]: unknown key, set the whole list: -s 'river_sources=[...]'"},
    {"mei.dt=0", "-s mei.dt: 0 is out of range, must be > 0 and <= 10"},
    {"mei.dt=11", "-s mei.dt: 11 is out of range, must be > 0 and <= 10"},
    {"mei.dt=abc", "-s mei.dt: expected a number, got a string"},
    {"mei.dt=", "-s mei.dt: expected a number, got a string"},
    {"mei.dt=0.1 0.2", "-s mei.dt: expected a number, got a string"},
    {"mei.steps=1.5", "-s mei.steps: 1.5 is not an integer"},
    {"mei.steps=020", "-s mei.steps: '020' is not a JSON number (no leading zeros, digits on both "
                      "sides of a point); quote it for a string"},
    {"mei.sources=[{\"x\": 01, \"y\": 2, \"rate\": 1}]", "-s mei.sources: '[{\"x\": 01"},
    {"model=grid", "-s model: 'grid' is not one of 'mei', 'droplet'"},
    {"model=null", "-s model: expected a string, got null"},
    {"terrain.cell_size=-1", "-s terrain.cell_size: -1 is out of range"},
    {"erode_recipe=2", "-s erode_recipe: version 2 is not supported"},
    {"mei.sources=[{\"x\": 1, \"y\": 2}]", "-s mei.sources[0]: missing key 'rate'"},
    {"mei.sources={}", "-s mei.sources: expected an array, got an object"},
    {"mei={\"dt\": -1}", "-s mei.dt: -1 is out of range"},
    {"mei=5", "-s mei: expected an object, got a number"},
    {"mei.steps", "-s mei.steps: expected KEY=VALUE"},
    {"=3", "-s: expected KEY=VALUE, got '=3'"},
};

START_TEST(bad_override_test)
{
    er_params p, before;
    er_error err;
    const char *ov[] = {"mei.steps=5", bad_override[_i].text};
    memset(&p, 0x5a, sizeof p);
    before = p;
    er_status st = parse("{\"mei\": {\"dt\": 0.5}}", ov, 2, &p, &err);
    ck_assert_msg(st == ER_EINVAL, "row %d: status %d", _i, (int)st);
    ck_assert_msg(strstr(err.msg, bad_override[_i].msg) != NULL, "row %d: got \"%s\", want \"%s\"",
                  _i, err.msg, bad_override[_i].msg);
    ck_assert_msg(strncmp(err.msg, "-s", 2) == 0, "%s", err.msg);
    assert_one_line(&err);
    ck_assert(memcmp(&p, &before, sizeof p) == 0);
}
END_TEST

START_TEST(overrides_apply)
{
    er_params p, want;
    er_error err;
    const char *ov[] = {
        "mei.steps=500",
        "mei.dt=0.05",
        "model=droplet",                 /* bare string */
        "droplet.variant=\"mass-transfer\"", /* JSON string */
        "droplet.count=12345",
        "droplet.count=null",            /* later ones win; null = per_cell */
        "terrain.cell_size=null",
        "droplet.height_unit=relief",
        "droplet.mass_transfer.dt=0.75",
        "mei={\"kc\": 0.5, \"boundary\": \"open\"}",
        " seed = 42",
        "mei.sources=[{\"x\": 3, \"y\": 4, \"rate\": 0.5}, {\"x\": 1, \"y\": 2, \"rate\": 1, \"coords\": \"map\"}]",
    };
    const char *text = "{\"terrain\": {\"cell_size\": 2.5}, \"droplet\": {\"height_unit\": 100},"
                       " \"mei\": {\"sources\": [{\"x\": 9, \"y\": 9, \"rate\": 9}, {\"x\": 8, \"y\": 8, \"rate\": 8},"
                       " {\"x\": 7, \"y\": 7, \"rate\": 7}]}}";
    ck_assert_msg(parse(text, ov, (int)(sizeof ov / sizeof ov[0]), &p, &err) == ER_OK, "%s",
                  err.msg);
    er_params_default(&want);
    want.mei.steps = 500;
    want.mei.dt = 0.05;
    want.model = ER_MODEL_DROPLET;
    want.droplet.variant = ER_DROPLET_MASS_TRANSFER;
    want.droplet.count = -1;
    want.droplet.mt_dt = 0.75;
    want.mei.kc = 0.5;
    want.mei.boundary = ER_BOUNDARY_OPEN;
    want.seed = 42;
    want.river.n = 2;
    want.river.src[0].x = 3;
    want.river.src[0].y = 4;
    want.river.src[0].rate = 0.5;
    want.river.src[0].radius = 1;
    want.river.src[1].x = 1;
    want.river.src[1].y = 2;
    want.river.src[1].rate = 1;
    want.river.src[1].radius = 1;
    want.river.src[1].coords = 1;
    for (int i = 0; i < 2; i++) {
        want.river.src[i].count = 1;
        want.river.src[i].spacing = 10;
    }
    want.river.old_key = 1; /* set as mei.sources: messages name it so */
    /* cell_size null restores the default value; height_unit "relief" = 0;
     * the third source of the file is gone, its slot zeroed */
    assert_params_eq(&p, &want);

    const char *ov2[] = {"terrain.cell_size=0.25", "droplet.height_unit=2.5",
                         "droplet.variant=lague"};
    ck_assert_int_eq(parse(NULL, ov2, 3, &p, &err), ER_OK);
    ck_assert_double_eq(p.terrain.cell_size, 0.25);
    ck_assert_int_eq(p.terrain.cell_size_set, 1);
    ck_assert_double_eq(p.droplet.height_unit, 2.5);
    ck_assert_int_eq(p.droplet.variant, ER_DROPLET_LAGUE);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Printing */

/* Every field away from its default; doubles that need 17 digits, a
 * subnormal, -0 and the largest seed. */
static void every_field_changed(er_params *p)
{
    er_params_default(p);
    p->model = ER_MODEL_DROPLET;
    p->seed = UINT64_C(9007199254740991);
    p->terrain.vertical_scale = 1.0 / 3.0;
    p->terrain.vertical_offset = -1234.0625;
    p->terrain.cell_size = 0.1 + 0.2;
    p->terrain.cell_size_set = 1;
    er_mei_params *m = &p->mei;
    m->steps = 123456789;
    m->dt = 1e-7;
    m->gravity = 9.80665;
    m->pipe_area = 2.0 / 3.0;
    m->rain_rate = 4.9406564584124654e-324;
    m->rain_steps = 17;
    m->drops_per_step = 3;
    m->drop_radius = 1.5;
    m->drop_amount = 0.1;
    p->river.n = 2;
    p->river.src[0].x = -0.0;
    p->river.src[0].y = 1e-7;
    p->river.src[0].coords = 0;
    p->river.src[0].radius = 0.1;
    p->river.src[0].rate = 1.0 / 7.0;
    p->river.src[1].x = -500000.125;
    p->river.src[1].y = 6700000.5;
    p->river.src[1].coords = 1;
    p->river.src[1].radius = 3;
    p->river.src[1].rate = 1e-5;
    for (int i = 0; i < 2; i++) { /* not printed with a source at (x, y) */
        p->river.src[i].count = 1;
        p->river.src[i].spacing = 10;
    }
    p->river.n = 4;
    p->river.src[2] = (er_source){.x = 0.25, .y = 1.0 / 3.0, .coords = ER_COORDS_FRACTION,
                                  .radius = 2.5, .rate = 0.5, .count = 1, .spacing = 10};
    p->river.src[3] = (er_source){.radius = 1, .rate = 3, .at = ER_AT_PEAKS, .count = 7,
                                  .spacing = 12.5};
    m->boundary = ER_BOUNDARY_CLOSED;
    m->capacity_depth = 0.25;
    m->kc = 0.30000000000000004;
    m->ks = 0.2;
    m->kd = 0.7;
    m->ke = 0.003;
    m->min_tilt = 0.015;
    m->max_erosion_depth = 0.5;
    m->advection = ER_ADVECT_SEMI_LAGRANGIAN;
    m->thermal_rate = 0.25;
    m->talus_slope = 1.2;
    m->cfl = ER_CFL_ERROR;
    m->max_substeps = 9;
    m->reference_cell_size = 45;
    er_droplet_params *d = &p->droplet;
    d->count = 1000000000000;
    d->per_cell = 2.5;
    d->variant = ER_DROPLET_MASS_TRANSFER;
    d->height_unit = 1234.5678;
    d->tile_size = 96;
    d->batch_size = 4096;
    d->radius = 4;
    d->reference_cell_size = 30;
    d->inertia = 0.99999999999999989;
    d->capacity = 8;
    d->min_capacity = 0.02;
    d->min_slope = 0.001;
    d->erode_speed = 0.4;
    d->deposit_speed = 0.2;
    d->evaporate_speed = 0.02;
    d->gravity = 10;
    d->lifetime = 40;
    d->initial_water = 0.5;
    d->initial_speed = 0;
    d->mt_dt = 0.6;
    d->mt_density = 1.5;
    d->mt_friction = 0.1;
    d->mt_deposition_rate = 0.3;
    d->mt_evaporation_rate = 0.002;
    d->mt_min_volume = 0.001;
    d->mt_max_distance = 100;
    d->schedule = ER_DROPLET_SNAPSHOT;
    er_sph_params *h = &p->sph;
    h->steps = 50;
    h->dt = 0.5;
    h->gravity = 9.8;
    h->spacing = 0.4;
    h->fill_level = 12.5;
    h->fill_level_set = 1;
    h->fill_quantile = 0.25; /* with fill_level: the model's check refuses, the reader not */
    h->fill_quantile_set = 1;
    h->sound_speed = 15;
    h->viscosity = 0.2;
    h->friction = 0.1;
    h->erosion_rate = 0.01;
    h->critical_shear = 0.7;
    h->settling_speed = 0.02;
    h->c_max = 0.4;
    h->max_particles = 1000;
    h->max_substeps = 99;
    h->boundary = ER_BOUNDARY_CLOSED;
    er_stream_power_params *f = &p->stream_power;
    f->steps = 40;
    f->dt = 500;
    f->uplift = 0.002;
    f->k = 2e-5;
    f->m = 0.5;
    f->n = 1.5;
    f->kd = 0.1;
    f->g = 1.2;
    f->boundary = ER_SP_EDGES_NORTH;
}

/* Counts the scalar members of object a that differ from b's, failing on
 * one that is equal (sources: compared by length). */
static int count_changed(const cJSON *a, const cJSON *b)
{
    int n = 0;
    for (const cJSON *m = a->child; m; m = m->next) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, m->string);
        ck_assert_msg(o != NULL, "%s missing", m->string);
        if (cJSON_IsObject(m)) {
            n += count_changed(m, o);
        } else if (cJSON_IsArray(m)) {
            ck_assert_int_ne(cJSON_GetArraySize(m), cJSON_GetArraySize(o));
            n++;
        } else if (strcmp(m->string, "erode_recipe") != 0) {
            ck_assert_msg(!cJSON_Compare(m, o, 1), "%s not changed", m->string);
            n++;
        }
    }
    return n;
}

START_TEST(round_trip_every_field)
{
    er_params p, q, r, def;
    er_error err;
    every_field_changed(&p);
    char *pretty = er_recipe_to_json(&p);
    char *compact = er_recipe_to_json_compact(&p);
    ck_assert_ptr_nonnull(pretty);
    ck_assert_ptr_nonnull(compact);
    ck_assert_msg(parse(pretty, NULL, 0, &q, &err) == ER_OK, "%s", err.msg);
    assert_params_eq(&q, &p);
    ck_assert_msg(parse(compact, NULL, 0, &r, &err) == ER_OK, "%s", err.msg);
    assert_params_eq(&r, &p);
    ck_assert_ptr_null(strchr(compact, '\n'));
    ck_assert_ptr_null(strchr(compact, ' '));

    /* bit for bit, not just ==: -0 stays -0 */
    ck_assert(signbit(q.river.src[0].x));
    ck_assert(q.mei.rain_rate == 4.9406564584124654e-324);

    /* every printed value really was changed: each scalar member differs
     * from the defaults' */
    er_params_default(&def);
    char *dtext = er_recipe_to_json(&def);
    cJSON *pj = cJSON_Parse(pretty), *dj = cJSON_Parse(dtext);
    ck_assert(pj && dj);
    ck_assert_int_ge(count_changed(pj, dj), 52);
    cJSON_Delete(pj);
    cJSON_Delete(dj);
    free(dtext);
    free(pretty);
    free(compact);
}
END_TEST

/* The shortest form that reads back exactly, integral doubles with ".0". */
START_TEST(number_format)
{
    er_params p;
    er_params_default(&p);
    p.mei.dt = 0.1;
    p.mei.drop_amount = 1e-7;
    p.mei.kc = 1.0 / 3.0;
    p.mei.gravity = 10;
    p.droplet.count = 5000;
    char *s = er_recipe_to_json(&p);
    ck_assert_ptr_nonnull(strstr(s, "\"dt\": 0.1,"));
    ck_assert_ptr_nonnull(strstr(s, "\"drop_amount\": 1e-07,"));
    ck_assert_ptr_nonnull(strstr(s, "\"kc\": 0.3333333333333333,"));
    ck_assert_ptr_nonnull(strstr(s, "\"gravity\": 10.0,"));
    ck_assert_ptr_nonnull(strstr(s, "\"count\": 5000,"));
    ck_assert_ptr_nonnull(strstr(s, "\"steps\": 4000,"));
    free(s);
}
END_TEST

/* Fixed shape: version first, no comment, every key present in the order
 * of the recipe documentation, null/relief/[] spelled out. */
START_TEST(printed_shape)
{
    static const char *const order[] = {
        "erode_recipe", "model", "seed", "river_sources", "terrain", "vertical_scale",
        "vertical_offset", "cell_size", "mei", "steps", "dt", "gravity", "pipe_area", "rain_rate",
        "rain_steps", "drops_per_step", "drop_radius", "drop_amount", "boundary", "kc", "ks", "kd",
        "ke", "min_tilt", "max_erosion_depth", "capacity_depth", "advection", "thermal_rate", "talus_slope", "cfl",
        "max_substeps", "reference_cell_size", "droplet", "count", "per_cell", "variant", "height_unit",
        "reference_cell_size", "tile_size",
        "batch_size", "schedule", "radius", "inertia", "capacity", "min_capacity", "min_slope",
        "erode_speed", "deposit_speed", "evaporate_speed", "gravity", "lifetime",
        "initial_water", "initial_speed", "mass_transfer", "dt", "density", "friction",
        "deposition_rate", "evaporation_rate", "min_volume", "max_distance", "sph", "steps", "dt",
        "gravity", "spacing", "fill_level", "fill_quantile", "sound_speed", "viscosity", "friction",
        "erosion_rate", "critical_shear", "settling_speed", "c_max", "max_particles",
        "max_substeps", "boundary", "stream_power", "steps", "dt", "uplift", "k", "m", "n", "kd",
        "g", "boundary", NULL};
    er_params p;
    er_params_default(&p);
    char *s = er_recipe_to_json(&p);
    ck_assert(strncmp(s, "{\n  \"erode_recipe\": 1,\n", 23) == 0);
    ck_assert_ptr_null(strstr(s, "comment"));
    ck_assert_ptr_nonnull(strstr(s, "\"river_sources\": [],"));
    ck_assert_ptr_null(strstr(s, "\"sources\""));
    ck_assert_ptr_nonnull(strstr(s, "\"count\": null,"));
    ck_assert_ptr_nonnull(strstr(s, "\"height_unit\": \"relief\","));
    ck_assert_ptr_nonnull(strstr(s, "\"cell_size\": null\n"));
    /* walk the members depth first */
    cJSON *j = cJSON_Parse(s);
    ck_assert_ptr_nonnull(j);
    const cJSON *stack[8];
    int depth = 0, k = 0;
    const cJSON *m = j->child;
    while (m || depth > 0) {
        if (!m) {
            m = stack[--depth]->next;
            continue;
        }
        ck_assert_ptr_nonnull(order[k]);
        ck_assert_str_eq(m->string, order[k]);
        k++;
        if (cJSON_IsObject(m)) {
            stack[depth++] = m;
            m = m->child;
        } else {
            m = m->next;
        }
    }
    ck_assert_ptr_null(order[k]);
    cJSON_Delete(j);
    free(s);
}
END_TEST

/* Print -> parse -> print gives the same text. */
START_TEST(print_is_stable)
{
    er_params p, q;
    er_error err;
    every_field_changed(&p);
    char *a = er_recipe_to_json(&p);
    ck_assert_int_eq(parse(a, NULL, 0, &q, &err), ER_OK);
    char *b = er_recipe_to_json(&q);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Files */

START_TEST(load_errors)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    er_params p;
    er_error err;
    er_test_mkdtemp(dir, sizeof dir);

    snprintf(path, sizeof path, "%s/missing.json", dir);
    ck_assert_int_eq(er_recipe_load(path, NULL, 0, &p, &err), ER_EIO);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "cannot read '%s': No such file or directory", path);
    ck_assert_str_eq(err.msg, want);

    ck_assert_int_eq(er_recipe_load(dir, NULL, 0, &p, &err), ER_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot read '"));

    snprintf(path, sizeof path, "%s/bad.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\n  \"mei\": {\"dt\": \"fast\"}\n}\n", f);
    fclose(f);
    ck_assert_int_eq(er_recipe_load(path, NULL, 0, &p, &err), ER_EINVAL);
    snprintf(want, sizeof want, "%s: mei.dt: expected a number, got a string", path);
    ck_assert_str_eq(err.msg, want);

    /* a file over the limit is refused without being parsed */
    snprintf(path, sizeof path, "%s/huge.json", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    static char block[1 << 16];
    memset(block, ' ', sizeof block);
    for (int i = 0; i < 257; i++)
        ck_assert_uint_eq(fwrite(block, 1, sizeof block, f), sizeof block);
    fclose(f);
    ck_assert_int_eq(er_recipe_load(path, NULL, 0, &p, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "larger than 16 MiB"));

    /* a good file with overrides */
    snprintf(path, sizeof path, "%s/good.json", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"erode_recipe\": 1, \"model\": \"droplet\", \"droplet\": {\"count\": 5}}", f);
    fclose(f);
    const char *ov[] = {"droplet.radius=5"};
    ck_assert_int_eq(er_recipe_load(path, ov, 1, &p, &err), ER_OK);
    ck_assert_int_eq(p.model, ER_MODEL_DROPLET);
    ck_assert_int_eq(p.droplet.count, 5);
    ck_assert_int_eq(p.droplet.radius, 5);
    er_test_rmdir(dir);
}
END_TEST

/* The JSON recipes in the EXAMPLES of man/erode-recipe.5 are valid. */
START_TEST(man_page_examples_parse)
{
    char path[PATH_MAX];
    er_test_path(path, sizeof path, "man/erode-recipe.5");
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *p = strstr(text, "\n.Sh EXAMPLES\n");
    ck_assert_ptr_nonnull(p);
    int found = 0;
    while ((p = strstr(p, "\n.Bd -literal")) != NULL) {
        p = strchr(p + 1, '\n') + 1;
        char *end = strstr(p, "\n.Ed\n");
        ck_assert_ptr_nonnull(end);
        if (*p == '{') {
            er_params q;
            er_error err;
            ck_assert_msg(er_recipe_parse(p, (size_t)(end - p), "man", NULL, 0, &q, &err) == ER_OK,
                          "%s", err.msg);
            found++;
        }
        p = end;
    }
    ck_assert_int_ge(found, 4);
}
END_TEST

Suite *recipe_suite(void);
Suite *recipe_suite(void)
{
    Suite *s = suite_create("recipe");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, defaults_equal_builtin);
    tcase_add_test(tc, default_json_matches_builtin);
    tcase_add_test(tc, print_all_lists_every_key);
    tcase_add_loop_test(tc, bad_recipe, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, no_far_suggestions);
    tcase_add_test(tc, length_is_respected);
    tcase_add_test(tc, hostile_key_names);
    tcase_add_test(tc, too_many_sources);
    tcase_add_test(tc, sources_defaults);
    tcase_add_test(tc, river_sources_and_old_spelling);
    tcase_add_test(tc, integers_in_exponent_form);
    suite_add_tcase(s, tc);

    tc = tcase_create("overrides");
    tcase_add_loop_test(tc, bad_override_test, 0,
                        (int)(sizeof bad_override / sizeof bad_override[0]));
    tcase_add_test(tc, overrides_apply);
    suite_add_tcase(s, tc);

    tc = tcase_create("print");
    tcase_add_test(tc, round_trip_every_field);
    tcase_add_test(tc, number_format);
    tcase_add_test(tc, printed_shape);
    tcase_add_test(tc, print_is_stable);
    suite_add_tcase(s, tc);

    tc = tcase_create("files");
    tcase_add_test(tc, load_errors);
    tcase_add_test(tc, man_page_examples_parse);
    suite_add_tcase(s, tc);
    return s;
}
