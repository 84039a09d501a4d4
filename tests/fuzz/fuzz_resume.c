/*
 * libFuzzer target: resuming a checkpoint (issue 38), the reader and then
 * the checks of a resumed state (er_stages_check_resume: each model's
 * check_resume and the stage checks) and the run that goes on from an
 * accepted one, for every model and for a staged run.
 *
 * A checkpoint is user input whose checksums a user can make right, so
 * each input is read with its version and every checksum repaired (header,
 * arrays, budget terms, stage and model sections, as far as the lengths
 * allow): the fuzzer reaches the values.  It is resumed on a fixed
 * W x H map with one nodata cell, by the recipe of its header's model (or
 * the staged recipe, for a staged run's), against the identity its header
 * claims.  The promises checked:
 *
 *   - a refusal is ER_EINVAL with one clean line;
 *   - an accepted state runs (two boundaries, then cancelled) without a
 *     late refusal (ER_EINVAL after the checks: the exit 1 after the work
 *     of issue 38), ending ER_OK, ER_ECANCELED or ER_ENUMERIC (a run
 *     guard), and with ER_OK or ER_ECANCELED every valid height finite.
 *
 * Seeds: real checkpoints of these recipes on this map, written by the
 * runs themselves at a few boundaries of each (er_checkpoint_write, as
 * the CLI writes them):
 *   ER_FUZZ_RESUME_SEEDS=tests/fuzz/corpus/resume build-fuzz/fuzz_resume -runs=0
 */
#define _GNU_SOURCE /* memfd_create in fuzz_util.h */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/models.h"
#include "../../core/rng.h"
#include "../../core/stages.h"
#include "../../io/checkpoint.h"
#include "../../io/recipe.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define W 12
#define H 10
#define CELLS (W * H)
#define WALL 17 /* the nodata cell */

/* One recipe per model, and the staged one (its stages' models in turn:
 * stream power, Mei, droplets), each a few boundaries on the map. */
static const struct {
    const char *name; /* the model's, or "" for the staged recipe */
    const char *text;
} recipes[] = {
    {"mei", "{\"model\": \"mei\", \"seed\": 2, \"mei\": {\"steps\": 8, \"rain_rate\": 0.01,"
            " \"thermal_rate\": 0.5}}"},
    {"droplet", "{\"model\": \"droplet\", \"seed\": 3, \"droplet\": {\"count\": 600,"
                " \"batch_size\": 60, \"lifetime\": 8, \"radius\": 1}}"},
    {"sph", "{\"model\": \"sph\", \"sph\": {\"steps\": 6, \"fill_level\": 2, \"spacing\": 1,"
            " \"boundary\": \"closed\"}}"},
    {"stream_power", "{\"model\": \"stream_power\", \"stream_power\": {\"steps\": 8,"
                     " \"dt\": 1000, \"g\": 1, \"kd\": 0.01}}"},
    {"", "{\"seed\": 4, \"stages\": ["
         " {\"model\": \"stream_power\", \"stream_power\": {\"steps\": 3, \"dt\": 1000,"
         " \"g\": 1}},"
         " {\"model\": \"mei\", \"mei\": {\"steps\": 3, \"rain_rate\": 0.01}},"
         " {\"model\": \"droplet\", \"droplet\": {\"count\": 300, \"batch_size\": 60}}]}"}};
#define N_RECIPES (sizeof recipes / sizeof recipes[0])

static float input[CELLS];
static uint8_t wall[CELLS];
static er_staged_plan plans[N_RECIPES];

/* A bowl of 1 m cells with noise (rain gathers, droplets run, SPH fills
 * it), nodata at WALL. */
static er_terrain terrain(float *z)
{
    for (int i = 0; i < CELLS; i++) {
        double x = i % W - 5.5, y = i / W - 4.5;
        z[i] = i == WALL ? 0.0f : (float)(0.05 * (x * x + y * y) + 0.2 * er_rng_unit(5, 1, (uint64_t)i));
    }
    wall[WALL] = 1;
    return (er_terrain){W, H, z, wall, 1.0, 1.0, NULL};
}

/* FNV-1a 64 folding little-endian 32-bit words, as the arrays' checksums. */
static uint64_t fold_words(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i += 4) {
        h ^= er_fuzz_u32(p + i);
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* Checksum h written at d + at, if it fits; returns the offset after it,
 * or 0. */
static size_t seal(uint8_t *d, size_t size, size_t at, uint64_t h)
{
    if (at + 8 > size)
        return 0;
    er_fuzz_put_u64(d + at, h);
    return at + 8;
}

/* The budget terms section at `at`: its checksum; the offset after it or 0. */
static size_t repair_terms(uint8_t *d, size_t size, size_t at)
{
    if (at + 4 > size)
        return 0;
    const size_t n = er_fuzz_u32(d + at), end = at + 4 + n * (ER_TERM_NAME + 8);
    if (n > ER_BUDGET_TERMS || end > size)
        return 0;
    return seal(d, size, end, er_fnv1a64(ER_FNV1A64_INIT, d + at, end - at));
}

/* The stage section at `at` (cells floats an array). */
static size_t repair_stage(uint8_t *d, size_t size, size_t at, uint64_t cells)
{
    if (at + 16 > size)
        return 0;
    const uint32_t n_arrays = er_fuzz_u32(d + at + 8), mask = er_fuzz_u32(d + at + 12);
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, d + at, 16), p = at + 16;
    for (uint32_t i = 0; i < n_arrays && i < ER_STAGE_ARRAYS; i++)
        if (mask >> i & 1u) {
            if (p + 4 * cells > size)
                return 0;
            h = fold_words(h, d + p, 4 * cells);
            p += 4 * cells;
        }
    if (p + 8 > size)
        return 0;
    const uint64_t nv = er_fuzz_u64(d + p);
    if (nv > (size - p - 8) / 8)
        return 0;
    h = er_fnv1a64(h, d + p, 8 + 8 * nv);
    return seal(d, size, p + 8 + 8 * nv, h);
}

/* Version, header and every section's checksum made right, as far as the
 * lengths the bytes claim fit in them (io/checkpoint.h, format 6). */
static void repair(uint8_t *d, size_t size)
{
    for (int i = 0; i < 4; i++)
        d[8 + i] = (uint8_t)(ER_CHECKPOINT_FORMAT >> (8 * i));
    memset(d + 12, 0, 16);
    memcpy(d + 12, ERODE_VERSION, strlen(ERODE_VERSION) < 16 ? strlen(ERODE_VERSION) : 16);
    er_fuzz_put_u64(d + ER_CHECKPOINT_HEADER - 8, er_fnv1a64(ER_FNV1A64_INIT, d, ER_CHECKPOINT_HEADER - 8));
    const uint64_t cells = (uint64_t)er_fuzz_u32(d + 32) * er_fuzz_u32(d + 36);
    const uint32_t n_arrays = er_fuzz_u32(d + 40), mask = er_fuzz_u32(d + 44);
    uint64_t present = 0;
    for (uint32_t i = 0; i < n_arrays && i < 29; i++)
        present += (mask >> i) & 1u;
    if (cells > CELLS * 4 || ER_CHECKPOINT_HEADER + 4 * cells * present + 8 > size)
        return;
    size_t at = ER_CHECKPOINT_HEADER + 4 * cells * present;
    at = seal(d, size, at, fold_words(ER_FNV1A64_INIT, d + ER_CHECKPOINT_HEADER, at - ER_CHECKPOINT_HEADER));
    if (at && (mask >> 29 & 1u))
        at = repair_terms(d, size, at);
    if (at && (mask >> 30 & 1u))
        at = repair_stage(d, size, at, cells);
    if (at && (mask >> 31 & 1u) && size >= at + 24)
        seal(d, size, size - 8, er_fnv1a64(ER_FNV1A64_INIT, d + at, size - 8 - at));
}

/* The recipe a checkpoint with this header resumes with, or -1. */
static int recipe_of(const uint8_t *d)
{
    if ((er_fuzz_u32(d + 44) >> 30) & 1u)
        return (int)N_RECIPES - 1;
    const char *name = er_model_name((er_model_kind)er_fuzz_u32(d + 28));
    for (size_t k = 0; k + 1 < N_RECIPES; k++)
        if (strcmp(recipes[k].name, name) == 0)
            return (int)k;
    return -1;
}

static int stop_after_two(void *user, const er_run_state *s)
{
    int *n = user;
    (void)s;
    return ++*n > 2;
}

/* Runs recipe k on the map from its input heights into z, keeping every
 * layer, with hooks hk. */
static er_status run_recipe(int k, float *z, const er_run_hooks *hk, er_error *err)
{
    static float lay[4][CELLS];
    er_terrain t = terrain(z);
    er_layers l = {lay[0], lay[1], lay[2], lay[3]};
    er_stages_opts o = {&l, NULL, NULL, hk, NULL, NULL};
    er_stage_backend where[ER_MAX_STAGES];
    for (int i = 0; i < ER_MAX_STAGES; i++)
        where[i] = (er_stage_backend){&er_backend_cpu, NULL};
    return er_stages_run(&plans[k], where, &t, &o, err);
}

/* Runs recipe k from accepted state r: no late refusal, finite heights. */
static void run_from(int k, const er_run_state *r)
{
    static float z[CELLS];
    int n = 0;
    er_run_hooks hk = {stop_after_two, &n, r, NULL};
    er_error err = {{0}};
    er_status st = run_recipe(k, z, &hk, &err);
    ER_FUZZ_CHECK(st == ER_OK || st == ER_ECANCELED || st == ER_ENUMERIC,
                  "an accepted state's run ended %d: %s", (int)st, err.msg);
    for (int i = 0; i < CELLS && st != ER_ENUMERIC; i++)
        ER_FUZZ_CHECK(wall[i] || isfinite(z[i]), "height %g at cell %d after an accepted resume",
                      (double)z[i], i);
}

static void resume_one(const uint8_t *data, size_t size)
{
    const int k = recipe_of(data);
    if (k < 0)
        return;
    const er_checkpoint_id id = {(er_model_kind)er_fuzz_u32(data + 28), W, H, er_fuzz_u64(data + 48),
                                 er_fuzz_u64(data + 56), "cpu", k == (int)N_RECIPES - 1};
    er_checkpoint c;
    er_error err = {{0}};
    const char *path = er_fuzz_file(data, size);
    er_status st = er_checkpoint_read(path, &id, &c, &err);
    if (st) {
        ER_FUZZ_CHECK(st == ER_EINVAL, "read: status %d: %s", (int)st, err.msg);
        return;
    }
    er_terrain t = terrain(input);
    static float lay[4][CELLS];
    er_layers keep = {lay[0], lay[1], lay[2], lay[3]};
    st = er_stages_check_resume(&plans[k], &t, &c.state, &keep, &err);
    if (st)
        er_fuzz_check_error(st, &err, "");
    ER_FUZZ_CHECK(st == ER_OK || st == ER_EINVAL, "check: status %d", (int)st);
    if (!st)
        run_from(k, &c.state);
    er_checkpoint_free(&c);
}

typedef struct seeder {
    const char *dir;
    int recipe;
    er_checkpoint_id id;
} seeder;

/* Writes boundaries 1, 3, 5, ... of the run as seeds; never stops it. */
static int write_seed(void *user, const er_run_state *s)
{
    seeder *v = user;
    const int64_t b = s->stage ? s->stage->offset + s->boundary : s->boundary;
    if (b % 2 == 0)
        return 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s-%lld.ckp", v->dir,
             recipes[v->recipe].name[0] ? recipes[v->recipe].name : "staged", (long long)b);
    er_checkpoint_id id = v->id;
    id.model = s->model;
    er_error err;
    ER_FUZZ_CHECK(er_checkpoint_write(path, s, &id, &err) == ER_OK, "%s", err.msg);
    return 0;
}

/* The seeds, into dir: each recipe's run keeping every layer (states that
 * keep them), checkpoints at odd boundaries. */
static void make_seeds(const char *dir)
{
    for (size_t k = 0; k < N_RECIPES; k++) {
        static float z[CELLS];
        seeder v = {dir, (int)k, {ER_MODEL_MEI, W, H, 1, 2, "cpu", !recipes[k].name[0]}};
        er_run_hooks hk = {write_seed, &v, NULL, NULL};
        er_error err = {{0}};
        er_status st = run_recipe((int)k, z, &hk, &err);
        ER_FUZZ_CHECK(st == ER_OK, "seed run %zu: %s", k, err.msg);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    er_terrain t = terrain(input);
    for (size_t k = 0; k < N_RECIPES; k++) {
        er_stages r;
        er_error err = {{0}};
        er_status st = er_recipe_parse_stages(recipes[k].text, strlen(recipes[k].text), "recipe",
                                              NULL, 0, &r, &err);
        if (!st)
            st = er_stages_plan(&r, &t, NULL, NULL, &plans[k], &err);
        ER_FUZZ_CHECK(st == ER_OK, "recipe %zu: %s", k, err.msg);
    }
    const char *seeds = getenv("ER_FUZZ_RESUME_SEEDS");
    if (seeds)
        make_seeds(seeds);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < ER_CHECKPOINT_HEADER || size > ER_FUZZ_MAX_BYTES)
        return 0;
    uint8_t *copy = er_fuzz_copy(data, size);
    repair(copy, size);
    resume_one(copy, size);
    free(copy);
    return 0;
}
