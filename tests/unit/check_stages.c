/*
 * Staged recipes (core/stages.h, io/recipe.c): what a stage inherits from
 * the top level and what it sets itself, -s on both, the errors that name
 * the stage, and the print -> parse round trip.  Staged runs: Mei then
 * droplets are the two runs chained with the suspended load settled;
 * the stages' budgets add up to the run's; a run stopped anywhere (in
 * stage 2, at the seam) and resumed from its checkpoint file gives the
 * straight run's bits, for any thread count; every model as a stage.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "../../core/models.h"
#include "../../core/rng.h"
#include "../../core/stages.h"
#include "../../io/checkpoint.h"
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
    "  {\"model\": \"sph\", \"river_sources\": [{\"x\": 1, \"y\": 2, \"rate\": 1}],"
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
    ck_assert_int_eq(R.stage[2].river.n, 1);
    ck_assert_int_eq(R.stage[2].sph.steps, 3);
    ck_assert_int_eq(R.stage[0].river.n, 0);
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
    ck_assert_ptr_nonnull(strstr(c, "\"hardness\":null,\"river_sources\":[{\"at\":\"xy\",\"x\":1.0"));
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
     "recipe.json: stages[0].model: 'mie' is not one of {models}"},
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
     "-s stages.x.mei.dt: expected stages.N.KEY, N the stage's number from 0 without leading "
     "zeros"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.00.mei.dt=1",
     "-s stages.00.mei.dt: expected stages.N.KEY, N the stage's number from 0 without leading "
     "zeros"},
    {"{\"stages\": [{\"model\": \"mei\"}, {\"model\": \"mei\"}]}", "stages[01].mei.dt=1",
     "-s stages[01].mei.dt: expected stages.N.KEY, N the stage's number from 0 without leading "
     "zeros"},
    /* a new model for a stage: the keys it set in its old model's section would be lost */
    {"{\"stages\": [{\"model\": \"mei\", \"mei\": {\"steps\": 5}}]}", "stages.0.model=droplet",
     "-s stages.0.model: stage 0 sets mei.steps, which a droplet stage does not take: give the "
     "stages whole with -s stages=[...]"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.0.model=droplet", NULL},
    {"{\"stages\": [{\"model\": \"mei\", \"mei\": {\"steps\": 5}}]}", "stages.0.model=mei", NULL},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.0.terrain.cell_size=2",
     "-s stages.0.terrain.cell_size: every stage works on one terrain: set it at the top level"},
    {NULL, "stages.0.mei.steps=3", "-s stages.0.mei.steps: the recipe has no stages"},
    {"{\"stages\": [{\"model\": \"mei\", \"river_sources\": [{\"x\": 1, \"y\": 2, \"rate\": 1}],"
     " \"mei\": {\"sources\": [{\"x\": 3, \"y\": 4, \"rate\": 1}]}}]}", NULL,
     "recipe.json: stages[0].river_sources: given twice, as river_sources and as mei.sources (its "
     "old spelling): keep one"},
    {"{\"stages\": [{\"model\": \"sph\", \"mei\": {\"sources\": []}}]}", NULL,
     "recipe.json: stages[0].mei: a mei section in a stage of model sph: it belongs in a mei stage"},
    {"{\"stages\": [{\"model\": \"sph\", \"river_sources\": [{\"x\": 1, \"rate\": 1}]}]}",
     NULL, "recipe.json: stages[0].river_sources[0]: missing key 'y'"},
    {"{\"stages\": [{\"model\": \"mei\"}]}", "stages.0.river_sources[0].x=3",
     "-s stages.0.river_sources[0].x: unknown key, set the whole list: -s "
     "'stages.0.river_sources=[...]'"},
};

/* msg with "{models}" replaced by the registry's model names, quoted and
 * comma-separated as a recipe error lists them (the test build's test
 * models among them). */
static void expand_models(const char *msg, char *out, size_t n)
{
    const char *at = strstr(msg, "{models}");
    if (!at) {
        snprintf(out, n, "%s", msg);
        return;
    }
    size_t len = (size_t)snprintf(out, n, "%.*s", (int)(at - msg), msg);
    for (int m = 0; m < ER_MODEL_KINDS && len < n; m++)
        len += (size_t)snprintf(out + len, n - len, "%s'%s'", m ? ", " : "",
                                er_model_name((er_model_kind)m));
    if (len < n)
        snprintf(out + len, n - len, "%s", at + strlen("{models}"));
}

START_TEST(bad_stage)
{
    er_error err;
    const struct bad *b = &bad[_i];
    er_status st = parse_st(b->text, &b->ov, b->ov ? 1 : 0, &R, &err);
    if (!b->msg) {
        ck_assert_msg(st == ER_OK, "%s", err.msg);
        return;
    }
    char want[512];
    expand_models(b->msg, want, sizeof want);
    ck_assert_int_eq(st, ER_EINVAL);
    ck_assert_str_eq(err.msg, want);
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
    ck_assert_msg(strstr(err.msg, "e.g. -s stages.1.droplet.height_unit=1000"), "%s", err.msg);
    ck_assert_int_eq(er_stages_check(&R, 0, &err), ER_OK);
    /* a recipe without stages keeps its message */
    er_stages_single(&R, &R.stage[0]);
    er_fail(&err, ER_EINVAL, "mei.ke: x");
    er_stages_name_error(&R, 0, &err);
    ck_assert_str_eq(err.msg, "mei.ke: x");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Runs                                                                 */

enum { W = 40, H = 32 };
#define CELLS ((size_t)W * (size_t)H)

/* A bowl of 1 m cells (0.02 r^2 around the centre) with noise: rain
 * gathers in it, droplets run down it, an SPH lake fills it. */
static void bowl(float *z)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            size_t i = (size_t)y * W + (size_t)x;
            double r2 = (x - 19.5) * (x - 19.5) + (y - 15.5) * (y - 15.5);
            z[i] = (float)(0.02 * r2 + 0.3 * er_rng_unit(3, 7, i));
        }
}

/* What a run leaves. */
typedef struct out {
    float z[CELLS], water[CELLS], sed[CELLS], flow[CELLS], wear[CELLS];
    er_budget b;
    er_stage_report rep[ER_MAX_STAGES];
} out;

static const char *const mei_drop =
    "{\"seed\": 5, \"stages\": ["
    " {\"model\": \"mei\", \"mei\": {\"steps\": 12, \"rain_rate\": 0.01}},"
    " {\"model\": \"droplet\", \"droplet\": {\"count\": 1500, \"batch_size\": 100}}]}";

static er_staged_plan SP;

/* Runs recipe r (all stages on the CPU) from the bowl into o, with hooks
 * hk (NULL: none); threads: the thread count. */
static er_status run_staged(const er_stages *r, out *o, const er_run_hooks *hk, int threads,
                            er_error *err)
{
    memset(o, 0, sizeof *o);
    bowl(o->z);
    er_test_set_threads(threads);
    er_terrain t = {W, H, o->z, NULL, 1.0, 1.0, NULL};
    er_status st = er_stages_plan(r, &t, NULL, NULL, &SP, err);
    if (st)
        return st;
    er_stage_backend where[ER_MAX_STAGES];
    for (int k = 0; k < ER_MAX_STAGES; k++)
        where[k] = (er_stage_backend){&er_backend_cpu, NULL};
    er_layers l = {o->water, o->sed, o->flow, o->wear};
    er_stages_opts so = {&l, NULL, NULL, hk, &o->b, o->rep};
    st = er_stages_run(&SP, where, &t, &so, err);
    er_test_set_threads(2);
    return st;
}

static void assert_same(const out *a, const out *b)
{
    ck_assert_msg(memcmp(a->z, b->z, sizeof a->z) == 0, "heights differ");
    ck_assert_msg(memcmp(a->water, b->water, sizeof a->water) == 0, "water differs");
    ck_assert_msg(memcmp(a->sed, b->sed, sizeof a->sed) == 0, "sediment differs");
    ck_assert_msg(memcmp(a->flow, b->flow, sizeof a->flow) == 0, "flow differs");
    ck_assert_msg(memcmp(a->wear, b->wear, sizeof a->wear) == 0, "wear differs");
    ck_assert_msg(memcmp(&a->b, &b->b, sizeof a->b) == 0, "budgets differ");
    ck_assert_msg(memcmp(a->rep, b->rep, sizeof a->rep) == 0, "stage reports differ");
}

/* Sum of v over the cells, rows added in order (as the stages sum). */
static double row_sum(const float *v)
{
    double s = 0;
    for (int y = 0; y < H; y++) {
        double r = 0;
        for (int x = 0; x < W; x++)
            r += (double)v[(size_t)y * W + (size_t)x];
        s += r;
    }
    return s;
}

static out A, B;

/* Mei then droplets is the Mei run, its suspended load settled on its
 * heights (b + s) and its water dropped, then the droplet run on that
 * terrain, bit for bit; flow and wear are the two runs' sums, the
 * budgets the two runs' (the settled load in Mei's deposits), and the
 * stages' budgets add up to the run's. */
START_TEST(mei_then_droplets_is_the_chain)
{
    er_error err;
    ck_assert_int_eq(parse_st(mei_drop, NULL, 0, &R, &err), ER_OK);
    ck_assert_msg(run_staged(&R, &A, NULL, 2, &err) == ER_OK, "%s", err.msg);

    /* the chain, one model at a time */
    memset(&B, 0, sizeof B);
    bowl(B.z);
    er_terrain t = {W, H, B.z, NULL, 1.0, 1.0, NULL};
    static float mei_flow[CELLS], mei_wear[CELLS];
    er_layers l = {B.water, B.sed, mei_flow, mei_wear};
    er_run_opts o = {&l, NULL, NULL, &B.rep[0].budget};
    ck_assert_msg(er_run_cpu(&R.stage[0], &t, NULL, &o, &err) == ER_OK, "%s", err.msg);
    double settled = row_sum(B.sed), dropped = row_sum(B.water);
    ck_assert(settled > 0 && dropped > 0);
    for (size_t i = 0; i < CELLS; i++)
        if (B.sed[i] != 0.0f)
            B.z[i] = B.z[i] + B.sed[i];
    er_layers l2 = {B.water, B.sed, B.flow, B.wear};
    o = (er_run_opts){&l2, NULL, NULL, &B.rep[1].budget};
    ck_assert_msg(er_run_cpu(&R.stage[1], &t, NULL, &o, &err) == ER_OK, "%s", err.msg);

    ck_assert(memcmp(A.z, B.z, sizeof A.z) == 0);
    ck_assert(memcmp(A.water, B.water, sizeof A.water) == 0);
    ck_assert(memcmp(A.sed, B.sed, sizeof A.sed) == 0);
    for (size_t i = 0; i < CELLS; i++) {
        ck_assert(A.flow[i] == mei_flow[i] + B.flow[i]);
        ck_assert(A.wear[i] == mei_wear[i] + B.wear[i]);
    }
    /* the stages' reports */
    ck_assert(A.rep[0].ran && A.rep[1].ran && !A.rep[2].ran);
    ck_assert_int_eq(A.rep[0].model, ER_MODEL_MEI);
    ck_assert(A.rep[0].settled == settled && A.rep[0].water_dropped == dropped);
    ck_assert(A.rep[1].settled == 0 && A.rep[1].water_dropped == 0);
    er_budget mei = B.rep[0].budget;
    mei.deposited += settled;
    ck_assert(memcmp(&A.rep[0].budget, &mei, sizeof mei) == 0);
    ck_assert(memcmp(&A.rep[1].budget, &B.rep[1].budget, sizeof mei) == 0);
    ck_assert(A.rep[0].changed_cells > 0 && A.rep[1].changed_cells > 0);
    /* ... and they add up to the run's */
    const er_budget *s0 = &A.rep[0].budget, *s1 = &A.rep[1].budget;
    ck_assert(A.b.eroded == s0->eroded + s1->eroded);
    ck_assert(A.b.deposited == s0->deposited + s1->deposited);
    ck_assert(A.b.left_map == s0->left_map + s1->left_map);
    ck_assert(A.b.water_added == s0->water_added + s1->water_added);
    ck_assert(A.b.water_left == s0->water_left + s1->water_left);
    ck_assert(A.b.material_before == s0->material_before);
    ck_assert(A.b.material_after == s1->material_after);
    ck_assert_msg(A.b.rel_error < 1e-5, "the run's budget does not close: %g", A.b.rel_error);
}
END_TEST

/* Writes the state at boundary `at` of the whole run to a checkpoint
 * file and stops the run there. */
typedef struct stopper {
    const char *path;
    int64_t at;
    er_checkpoint_id id;
    int saved;
} stopper;

static int stop_at(void *user, const er_run_state *st)
{
    stopper *v = user;
    ck_assert_ptr_nonnull(st->stage);
    if (st->stage->offset + st->boundary != v->at)
        return 0;
    er_error e;
    ck_assert_msg(er_checkpoint_write(v->path, st, &v->id, &e) == ER_OK, "%s", e.msg);
    v->saved = 1;
    return 1;
}

static int no_stop(void *user, const er_run_state *st)
{
    (void)user;
    ck_assert_ptr_nonnull(st->stage);
    return 0;
}

/* Stopped at boundary `at` of the whole run (the first stage's 12 steps
 * are boundaries 0-12, the droplets' 15 batches 12-27), written to a
 * checkpoint file, read back and resumed (on another thread count): the
 * straight run's bits, reports and budget, as the straight run on 1 and
 * 3 threads gives. */
static void stop_and_resume(const char *text, int64_t at, int threads)
{
    char dir[PATH_MAX], path[PATH_MAX + 8];
    er_error err;
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck", dir);
    ck_assert_int_eq(parse_st(text, NULL, 0, &R, &err), ER_OK);
    er_run_hooks plain = {no_stop, NULL, NULL, NULL};
    ck_assert_msg(run_staged(&R, &A, &plain, threads, &err) == ER_OK, "%s", err.msg);
    ck_assert_msg(run_staged(&R, &B, &plain, 4 - threads, &err) == ER_OK, "%s", err.msg);
    assert_same(&A, &B);

    stopper v = {path, at, {ER_MODEL_MEI, W, H, 11, 12, "cpu", 1}, 0};
    er_run_hooks stop = {stop_at, &v, NULL, NULL};
    ck_assert_int_eq(run_staged(&R, &B, &stop, threads, &err), ER_ECANCELED);
    ck_assert_msg(v.saved, "no boundary %lld", (long long)at);
    ck_assert_msg(strncmp(err.msg, "stages[", 7) == 0, "%s", err.msg);

    er_checkpoint ck;
    ck_assert_msg(er_checkpoint_read(path, &v.id, &ck, &err) == ER_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(ck.state.stage);
    er_run_hooks res = {no_stop, NULL, &ck.state, NULL};
    ck_assert_msg(run_staged(&R, &B, &res, 4 - threads, &err) == ER_OK, "%s", err.msg);
    assert_same(&A, &B);
    er_checkpoint_free(&ck);
    er_test_rmdir(dir);
}

static const int64_t stops[] = {5, 12, 20, 27};

START_TEST(resume_anywhere)
{
    stop_and_resume(mei_drop, stops[_i], _i % 2 ? 1 : 3);
}
END_TEST

/* Every model as a stage: SPH between Mei and droplets, stopped in the
 * SPH stage (its own section and the stage's in one checkpoint) and
 * resumed. */
static const char *const three_models =
    "{\"seed\": 2, \"stages\": ["
    " {\"model\": \"mei\", \"mei\": {\"steps\": 6, \"rain_rate\": 0.01}},"
    " {\"model\": \"sph\", \"sph\": {\"steps\": 2, \"fill_level\": 0.8, \"boundary\": \"closed\"}},"
    " {\"model\": \"droplet\", \"droplet\": {\"count\": 400, \"batch_size\": 100}}]}";

START_TEST(every_model_as_a_stage)
{
    stop_and_resume(three_models, 7, 1); /* in the SPH stage, after its step 1 */
    for (int k = 0; k < 3; k++)
        ck_assert_msg(A.rep[k].ran && A.rep[k].budget.eroded > 0, "stage %d", k);
    ck_assert_int_eq(A.rep[1].model, ER_MODEL_SPH);
    ck_assert(A.rep[2].changed_cells > 0);
}
END_TEST

/* Stream power, then Mei (the order of configs/from-noise.json): the
 * chain of the two runs bit for bit, except the flow layer, which Mei
 * starts again (metres of water do not add to a drainage area) while
 * wear adds up; the uplift is the stream-power stage's and the run's,
 * and the run's budget closes with it.  Stopped in either stage and
 * resumed on another thread count, the straight run's bits. */
static const char *const sp_mei =
    "{\"seed\": 4, \"stages\": ["
    " {\"model\": \"stream_power\", \"stream_power\": {\"steps\": 5, \"dt\": 1000, \"g\": 1,"
    " \"kd\": 0.01}},"
    " {\"model\": \"mei\", \"mei\": {\"steps\": 6, \"rain_rate\": 0.01}}]}";

START_TEST(stream_power_then_mei)
{
    er_error err;
    stop_and_resume(sp_mei, _i ? 8 : 3, _i ? 3 : 1);
    memset(&B, 0, sizeof B);
    bowl(B.z);
    er_terrain t = {W, H, B.z, NULL, 1.0, 1.0, NULL};
    static float sp_flow[CELLS], sp_wear[CELLS];
    er_layers l = {B.water, B.sed, sp_flow, sp_wear};
    er_run_opts o = {&l, NULL, NULL, &B.rep[0].budget};
    ck_assert_msg(er_run_cpu(&R.stage[0], &t, NULL, &o, &err) == ER_OK, "%s", err.msg);
    er_layers l2 = {B.water, B.sed, B.flow, B.wear};
    o = (er_run_opts){&l2, NULL, NULL, &B.rep[1].budget};
    ck_assert_msg(er_run_cpu(&R.stage[1], &t, NULL, &o, &err) == ER_OK, "%s", err.msg);
    ck_assert(memcmp(A.z, B.z, sizeof A.z) == 0);
    ck_assert(memcmp(A.water, B.water, sizeof A.water) == 0);
    ck_assert(memcmp(A.sed, B.sed, sizeof A.sed) == 0);
    ck_assert(memcmp(A.flow, B.flow, sizeof A.flow) == 0);
    for (size_t i = 0; i < CELLS; i++)
        ck_assert(A.wear[i] == sp_wear[i] + B.wear[i]);
    ck_assert_int_eq(A.rep[0].model, ER_MODEL_STREAM_POWER);
    ck_assert(er_budget_term_value(&A.rep[0].budget, "uplifted") > 0 && er_budget_term_value(&A.rep[1].budget, "uplifted") == 0);
    ck_assert(er_budget_term_value(&A.b, "uplifted") == er_budget_term_value(&A.rep[0].budget, "uplifted"));
    ck_assert(A.rep[0].settled == 0 && A.rep[1].settled == 0);
    ck_assert_msg(A.b.rel_error < 1e-6, "the run's budget does not close: %g", A.b.rel_error);
}
END_TEST

/* Mei then droplets (mei_drop) on the bowl, stopped at boundary 20 (in
 * the droplet stage), its checkpoint written to path, "<dir>/ck" in a
 * new temporary directory dir (PATH_MAX bytes; path PATH_MAX + 8); R
 * holds the recipe, SP its plan. */
static stopper stopped_in_stage_1(char *dir, char *path, er_error *err)
{
    er_test_mkdtemp(dir, PATH_MAX);
    snprintf(path, PATH_MAX + 8, "%s/ck", dir);
    ck_assert_int_eq(parse_st(mei_drop, NULL, 0, &R, err), ER_OK);
    stopper v = {path, 20, {ER_MODEL_MEI, W, H, 11, 12, "cpu", 1}, 0};
    er_run_hooks stop = {stop_at, &v, NULL, NULL};
    ck_assert_int_eq(run_staged(&R, &B, &stop, 2, err), ER_ECANCELED);
    return v;
}

/* A staged checkpoint whose stage section is damaged or cut short, or
 * read as a run of one model's, is refused with one line. */
START_TEST(damaged_stage_section_refused)
{
    char dir[PATH_MAX], path[PATH_MAX + 8];
    er_error err;
    stopper v = stopped_in_stage_1(dir, path, &err);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert(n > 64 && n < sizeof buf);
    er_checkpoint ck;
    er_checkpoint_id one = v.id;
    one.staged = 0;
    one.model = ER_MODEL_DROPLET;
    ck_assert_int_eq(er_checkpoint_read(path, &one, &ck, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "checkpoint of a staged run, the recipe has none"), "%s", err.msg);
    /* the last byte of the values (before the section's checksum) */
    buf[n - 9] ^= 1;
    f = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
    ck_assert_int_eq(er_checkpoint_read(path, &v.id, &ck, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "corrupt checkpoint (stage section checksum)"), "%s", err.msg);
    f = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(buf, 1, n - 12, f), n - 12);
    fclose(f);
    ck_assert_int_eq(er_checkpoint_read(path, &v.id, &ck, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "stage section"), "%s", err.msg);
    er_test_rmdir(dir);
}
END_TEST

/* A checkpoint whose stage started from heights the stage's plan refuses
 * (an infinite one): the line is the stage's prefix and the plan's own
 * message, whole: a prefix formatted over the message it quotes
 * (vsnprintf into its own argument) garbles the line. */
START_TEST(resume_plan_error_line_whole)
{
    char dir[PATH_MAX], path[PATH_MAX + 8];
    er_error err, want;
    stopper v = stopped_in_stage_1(dir, path, &err);
    er_checkpoint ck;
    ck_assert_msg(er_checkpoint_read(path, &v.id, &ck, &err) == ER_OK, "%s", err.msg);
    ck_assert_int_eq(ck.state.stage->index, 1);
    static float start[CELLS];
    memcpy(start, ck.state.stage->array[0], sizeof start);
    start[7] = INFINITY;
    er_run_stage g = *ck.state.stage;
    er_run_state rs = ck.state;
    g.array[0] = start;
    rs.stage = &g;
    bowl(B.z);
    er_terrain t = {W, H, B.z, NULL, 1.0, 1.0, NULL}, tk = t;
    tk.elevation = start;
    tk.controls = SP.controls[1];
    er_plan plan;
    ck_assert_int_eq(er_plan_make(&SP.p[1], &tk, NULL, &plan, &want), ER_EINVAL);
    er_layers keep = {B.water, B.sed, NULL, NULL};
    ck_assert_int_eq(er_stages_check_resume(&SP, &t, &rs, &keep, &err), ER_EINVAL);
    char line[ER_ERROR_MAX + 64];
    snprintf(line, sizeof line, "stage 1: the heights it started from: %s", want.msg);
    ck_assert_str_eq(err.msg, line);
    er_checkpoint_free(&ck);
    er_test_rmdir(dir);
}
END_TEST

/* A staged checkpoint whose checksums hold but whose values no run leaves
 * (issue 38): the stream-power heights of stage 0 at 1e300, the heights a
 * later stage started from at 1e30, a droplet stage's heights at 1e30 or
 * below the lowest its stage started from, the flow of the stages before
 * it negative.  Each resume is refused before any work, with one line
 * (ER_EINVAL, "the state's ..."), the terrain as it was. */
static const struct {
    int sp_mei;   /* the recipe: sp_mei, else mei_drop */
    int64_t at;   /* the boundary stopped at */
    int where;    /* 0 the stage's state heights, 1 its start heights, 2 the flow before it */
    float value;
    const char *want;
} crafted[] = {{1, 2, 0, 1e30f, "the state's height 1e+30 at cell (5, 0)"},
               {1, 8, 1, 1e30f, "the state's height its stage started from 1e+30 at cell (5, 0)"},
               {0, 20, 1, -1e30f, "the state's height its stage started from -1e+30"},
               {0, 20, 0, 1e30f, "the state's height 1e+30 at cell (5, 0)"},
               {0, 20, 0, -1e3f, "the state's height -1000 at cell (5, 0)"},
               {0, 20, 2, -1.0f, "the state's flow of the stages before it -1"}};

START_TEST(crafted_stage_values_refused)
{
    char dir[PATH_MAX], path[PATH_MAX + 8];
    er_error err;
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck", dir);
    ck_assert_int_eq(parse_st(crafted[_i].sp_mei ? sp_mei : mei_drop, NULL, 0, &R, &err), ER_OK);
    stopper v = {path, crafted[_i].at, {ER_MODEL_MEI, W, H, 11, 12, "cpu", 1}, 0};
    er_run_hooks stop = {stop_at, &v, NULL, NULL};
    ck_assert_int_eq(run_staged(&R, &B, &stop, 2, &err), ER_ECANCELED);
    er_checkpoint ck;
    ck_assert_msg(er_checkpoint_read(path, &v.id, &ck, &err) == ER_OK, "%s", err.msg);
    const er_run_stage *g = ck.state.stage;
    float *z = (float *)(uintptr_t)(crafted[_i].where ? g->array[crafted[_i].where - 1]
                                                      : ck.state.array[0]);
    if (ck.state.extra && !crafted[_i].where) /* stream power: the heights are the section's */
        ((double *)(uintptr_t)ck.state.extra->part[0])[5] = (double)crafted[_i].value;
    else
        z[5] = crafted[_i].value;
    er_run_hooks res = {no_stop, NULL, &ck.state, NULL};
    ck_assert_int_eq(run_staged(&R, &B, &res, 2, &err), ER_EINVAL);
    ck_assert_msg(strncmp(err.msg, crafted[_i].want, strlen(crafted[_i].want)) == 0 &&
                      !strchr(err.msg, '\n'),
                  "case %d: '%s' lacks '%s'", _i, err.msg, crafted[_i].want);
    float start[CELLS];
    bowl(start);
    ck_assert(memcmp(B.z, start, sizeof start) == 0);
    er_checkpoint_free(&ck);
    er_test_rmdir(dir);
}
END_TEST

/* A stage's plan error names the stage, before any work. */
START_TEST(plan_errors_name_the_stage)
{
    er_error err;
    const char *ov[] = {"stages.1.droplet.schedule=snapshot",
                        "stages.1.droplet.variant=mass-transfer"};
    ck_assert_int_eq(parse_st(mei_drop, ov, 2, &R, &err), ER_OK);
    ck_assert_int_eq(run_staged(&R, &A, NULL, 2, &err), ER_EINVAL);
    ck_assert_msg(strncmp(err.msg, "stages[1].droplet.schedule: ", 28) == 0, "%s", err.msg);
    float z[CELLS];
    bowl(z);
    ck_assert(memcmp(A.z, z, sizeof z) == 0);
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

    tc = tcase_create("run");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, mei_then_droplets_is_the_chain);
    tcase_add_loop_test(tc, resume_anywhere, 0, (int)(sizeof stops / sizeof stops[0]));
    tcase_add_test(tc, every_model_as_a_stage);
    tcase_add_loop_test(tc, stream_power_then_mei, 0, 2);
    tcase_add_test(tc, damaged_stage_section_refused);
    tcase_add_test(tc, plan_errors_name_the_stage);
    tcase_add_test(tc, resume_plan_error_line_whole);
    tcase_add_loop_test(tc, crafted_stage_values_refused, 0,
                        (int)(sizeof crafted / sizeof crafted[0]));
    suite_add_tcase(s, tc);
    return s;
}
