/*
 * libFuzzer target: the recipe parser on arbitrary bytes.
 *
 * The bytes are parsed as a recipe file, alone and followed by a few fixed
 * -s overrides, and as the text of one -s override.  An error must be one
 * clean line naming where it is; a recipe that parses must survive the
 * round trip of erode-recipe(5) DESCRIPTION: er_recipe_to_json (and the
 * compact form) parsed again gives the same parameters, field by field and
 * bit for bit, and prints the same text again; and er_params_check, the
 * same key table applied to the struct, accepts it.
 */
#define _GNU_SOURCE /* memfd_create in fuzz_util.h */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../io/recipe.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SAME(f) (memcmp(&a->f, &b->f, sizeof a->f) == 0)

/* Field by field (padding bytes are not compared); doubles bit for bit, so
 * -0.0 must come back as -0.0. */
static const char *params_diff(const er_params *a, const er_params *b)
{
    if (!SAME(recipe_version) || !SAME(model) || !SAME(seed))
        return "top level";
    if (!SAME(terrain.vertical_scale) || !SAME(terrain.vertical_offset) || !SAME(terrain.cell_size)
        || !SAME(terrain.cell_size_set))
        return "terrain";
    if (!SAME(mei.steps) || !SAME(mei.dt) || !SAME(mei.gravity) || !SAME(mei.pipe_area) || !SAME(mei.rain_rate)
        || !SAME(mei.rain_steps) || !SAME(mei.drops_per_step) || !SAME(mei.drop_radius) || !SAME(mei.drop_amount)
        || !SAME(mei.boundary) || !SAME(mei.kc) || !SAME(mei.ks) || !SAME(mei.kd) || !SAME(mei.ke)
        || !SAME(mei.min_tilt) || !SAME(mei.max_erosion_depth) || !SAME(mei.advection) || !SAME(mei.thermal_rate)
        || !SAME(mei.talus_slope) || !SAME(mei.cfl) || !SAME(mei.max_substeps))
        return "mei";
    if (!SAME(river.n))
        return "river_sources count";
    for (int i = 0; i < ER_MAX_SOURCES; i++)
        if (!SAME(river.src[i].x) || !SAME(river.src[i].y) || !SAME(river.src[i].coords)
            || !SAME(river.src[i].radius) || !SAME(river.src[i].rate) || !SAME(river.src[i].at)
            || !SAME(river.src[i].count) || !SAME(river.src[i].spacing))
            return "river_sources";
    if (!SAME(droplet.count) || !SAME(droplet.per_cell) || !SAME(droplet.variant) || !SAME(droplet.height_unit)
        || !SAME(droplet.tile_size) || !SAME(droplet.batch_size) || !SAME(droplet.radius) || !SAME(droplet.inertia)
        || !SAME(droplet.capacity) || !SAME(droplet.min_capacity) || !SAME(droplet.min_slope)
        || !SAME(droplet.erode_speed) || !SAME(droplet.deposit_speed) || !SAME(droplet.evaporate_speed)
        || !SAME(droplet.gravity) || !SAME(droplet.lifetime) || !SAME(droplet.initial_water)
        || !SAME(droplet.initial_speed))
        return "droplet";
    if (!SAME(droplet.mt_dt) || !SAME(droplet.mt_density) || !SAME(droplet.mt_friction)
        || !SAME(droplet.mt_deposition_rate) || !SAME(droplet.mt_evaporation_rate) || !SAME(droplet.mt_min_volume)
        || !SAME(droplet.mt_max_distance))
        return "droplet.mass_transfer";
    return NULL;
}

/* Printed (pretty or compact), parsed again: the same parameters, and the
 * same text when printed once more. */
static void check_roundtrip(const er_params *p, int compact)
{
    char *text = compact ? er_recipe_to_json_compact(p) : er_recipe_to_json(p);
    ER_FUZZ_CHECK(text != NULL, "printing failed");
    er_params q;
    er_error err = {{0}};
    er_status st = er_recipe_parse(text, strlen(text), "printed", NULL, 0, &q, &err);
    ER_FUZZ_CHECK(st == ER_OK, "the printed recipe does not parse: %s\n%s", err.msg, text);
    const char *diff = params_diff(p, &q);
    ER_FUZZ_CHECK(diff == NULL, "%s differs after the round trip\n%s", diff, text);
    char *again = compact ? er_recipe_to_json_compact(&q) : er_recipe_to_json(&q);
    ER_FUZZ_CHECK(again && strcmp(text, again) == 0, "printing is not a fixed point\n%s\n%s", text,
                  again ? again : "(null)");
    free(again);
    free(text);
}

static void check_result(er_status st, const er_params *p, const er_error *err, const char *prefix)
{
    if (st != ER_OK) {
        er_fuzz_check_error(st, err, prefix);
        ER_FUZZ_CHECK(st == ER_EINVAL || st == ER_ENOMEM, "status %d: %s", (int)st, err->msg);
        return;
    }
    ER_FUZZ_CHECK(p->recipe_version == ER_RECIPE_VERSION, "version %d", p->recipe_version);
    er_error perr = {{0}};
    ER_FUZZ_CHECK(er_params_check(p, &perr) == ER_OK, "the reader accepted what "
                  "er_params_check refuses: %s", perr.msg);
    check_roundtrip(p, 0);
    check_roundtrip(p, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ov[] = {"mei.steps=2", "model=droplet", "droplet.count=10",
                                     "droplet.height_unit=relief", "terrain.cell_size=null"};
    const char *text = (const char *)data;
    er_params p;
    er_error err = {{0}};

    er_status st = er_recipe_parse(text, size, "fuzz.json", NULL, 0, &p, &err);
    check_result(st, &p, &err, "fuzz.json");
    /* With overrides: a recipe that parsed alone must still parse (each
     * override is valid on its own and replaces a value wholesale). */
    er_status st2 = er_recipe_parse(text, size, "fuzz.json", ov, (int)(sizeof ov / sizeof ov[0]), &p, &err);
    check_result(st2, &p, &err, "fuzz.json");
    ER_FUZZ_CHECK(st != ER_OK || st2 == ER_OK, "valid overrides broke a valid recipe: %s", err.msg);
    if (st2 == ER_OK)
        ER_FUZZ_CHECK(p.model == ER_MODEL_DROPLET && p.mei.steps == 2 && p.droplet.count == 10
                          && p.droplet.height_unit == 0.0 && !p.terrain.cell_size_set,
                      "an override was not applied");

    /* The bytes as the text of one -s KEY=VALUE. */
    if (size < 4096 && !memchr(data, '\0', size)) {
        char *s = malloc(size + 1);
        ER_FUZZ_CHECK(s != NULL, "malloc");
        memcpy(s, data, size);
        s[size] = '\0';
        const char *one[] = {s};
        st = er_recipe_parse(NULL, 0, "fuzz.json", one, 1, &p, &err);
        check_result(st, &p, &err, "-s");
        free(s);
    }
    return 0;
}
