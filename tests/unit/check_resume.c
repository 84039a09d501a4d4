/*
 * Run states, resume and checkpoint files (core/model.h er_run_hooks,
 * core/state.c, io/checkpoint.c): a run resumed from any boundary gives
 * the same bits as an uninterrupted one, for the Mei and droplet models
 * and any thread count (check_sph.c resumes SPH); a state survives a
 * checkpoint file; mismatched, damaged or crafted checkpoints (an SPH
 * one's too) are refused with one line.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/model.h"
#include "../../core/plan.h"
#include "../../core/mei/state.h"
#include "../../core/droplet/state.h"
#include "../../core/sph/state.h"
#include "../../core/rng.h"
#include "../../io/checkpoint.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */

/* Whether the runs keep the flow and wear layers (then part of the state
 * and of the result compared). */
static int keep_extra = 1;

typedef struct map {
    int w, h;
    float *z, *water, *sed;
    float *flow, *wear; /* NULL unless keep_extra */
    uint8_t *wall;
    er_budget b;
} map;

/* A tilted, noisy surface (heights in metres) with a few wall cells, so
 * the wall paths run too. */
static map map_make(int w, int h, int walls)
{
    map m;
    memset(&m, 0, sizeof m);
    m.w = w;
    m.h = h;
    size_t n = (size_t)w * (size_t)h;
    m.z = malloc(n * sizeof(float));
    m.water = calloc(n, sizeof(float));
    m.sed = calloc(n, sizeof(float));
    ck_assert(m.z && m.water && m.sed);
    if (keep_extra) {
        m.flow = calloc(n, sizeof(float));
        m.wear = calloc(n, sizeof(float));
        ck_assert(m.flow && m.wear);
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * (size_t)w + (size_t)x;
            double noise = er_rng_unit(7, 99, i);
            m.z[i] = (float)(0.05 * x + 0.03 * y + 0.4 * noise);
        }
    if (walls) {
        m.wall = calloc(n, 1);
        ck_assert_ptr_nonnull(m.wall);
        for (int y = h / 3; y < h / 3 + 4; y++)
            for (int x = w / 2; x < w / 2 + 5; x++)
                m.wall[(size_t)y * (size_t)w + (size_t)x] = 1;
    }
    return m;
}

static map map_clone(const map *src)
{
    map m = map_make(src->w, src->h, src->wall != NULL);
    size_t n = (size_t)src->w * (size_t)src->h;
    memcpy(m.z, src->z, n * sizeof(float));
    return m;
}

static void map_free(map *m)
{
    free(m->z);
    free(m->water);
    free(m->sed);
    free(m->flow);
    free(m->wear);
    free(m->wall);
}

static size_t cells(const map *m) { return (size_t)m->w * (size_t)m->h; }

static int same_result(const map *a, const map *b)
{
    size_t n = cells(a) * sizeof(float);
    int extra = !a->flow || (memcmp(a->flow, b->flow, n) == 0 && memcmp(a->wear, b->wear, n) == 0);
    return memcmp(a->z, b->z, n) == 0 && memcmp(a->water, b->water, n) == 0 &&
           memcmp(a->sed, b->sed, n) == 0 && memcmp(&a->b, &b->b, sizeof a->b) == 0 && extra;
}

static er_params mei_params(void)
{
    er_params p;
    er_params_default(&p);
    p.model = ER_MODEL_MEI;
    p.seed = 11;
    p.mei.steps = 48;
    p.mei.rain_rate = 0.01;
    p.mei.drops_per_step = 3;
    p.mei.boundary = ER_BOUNDARY_OPEN;
    p.mei.thermal_rate = 1.0;
    p.mei.talus_slope = 0.3;
    return p;
}

/* Lifetime and radius small so that a 128^2 map holds several tiles (the
 * coloured schedule); batches of 700 so the run has a dozen boundaries. */
static er_params droplet_params(void)
{
    er_params p;
    er_params_default(&p);
    p.model = ER_MODEL_DROPLET;
    p.seed = 5;
    p.droplet.count = 8000;
    p.droplet.lifetime = 10;
    p.droplet.radius = 2;
    p.droplet.batch_size = 700;
    return p;
}

/* A deep copy of a state view. */
typedef struct saved {
    er_run_state st;
    float *buf;
} saved;

#define MAX_SAVED 64

typedef struct recorder {
    int calls;
    int64_t last;                /* boundary of the previous call */
    int ordered;                 /* every call had boundary = previous + 1 */
    int64_t every;               /* keep every k-th boundary */
    int64_t cancel_at;           /* return 1 at this boundary; -1 never */
    int n;
    saved s[MAX_SAVED];
} recorder;

static void save_copy(saved *dst, const er_run_state *v)
{
    size_t n = (size_t)v->width * (size_t)v->height;
    dst->st = *v;
    dst->buf = malloc((size_t)ER_STATE_ARRAYS * n * sizeof(float));
    ck_assert_ptr_nonnull(dst->buf);
    for (int i = 0; i < ER_STATE_ARRAYS; i++) {
        if (!v->array[i])
            continue;
        memcpy(dst->buf + (size_t)i * n, v->array[i], n * sizeof(float));
        dst->st.array[i] = dst->buf + (size_t)i * n;
    }
}

static int record(void *user, const er_run_state *v)
{
    recorder *r = user;
    if (r->calls > 0 && v->boundary != r->last + 1)
        r->ordered = 0;
    r->last = v->boundary;
    r->calls++;
    if (v->boundary % r->every == 0 && r->n < MAX_SAVED)
        save_copy(&r->s[r->n++], v);
    return v->boundary == r->cancel_at;
}

static void recorder_init(recorder *r, int64_t every, int64_t cancel_at)
{
    memset(r, 0, sizeof *r);
    r->ordered = 1;
    r->every = every;
    r->cancel_at = cancel_at;
}

static void recorder_free(recorder *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->s[i].buf);
    r->n = 0;
}

static er_status run(const er_params *p, map *m, const er_run_hooks *hk, er_error *err)
{
    er_terrain t = {m->w, m->h, m->z, m->wall, 1.0, 1.0, NULL};
    er_layers layers = {m->water, m->sed, m->flow, m->wear};
    memset(&m->b, 0, sizeof m->b);
    return p->model == ER_MODEL_MEI ? er_run_cpu(p, &t, NULL, &(er_run_opts){&layers, NULL, hk, &m->b}, err)
                                    : er_run_cpu(p, &t, NULL, &(er_run_opts){&layers, NULL, hk, &m->b}, err);
}

/* The uninterrupted reference (plain entry point, one thread), the states
 * recorded by a hooked run on two threads (which must not change its
 * result), then a resume from every recorded state on one and on two
 * threads, each compared with the reference bit for bit. */
static void check_resume_everywhere(const er_params *p, int w, int h, int walls, int64_t every)
{
    er_error err = {""};
    map input = map_make(w, h, walls);
    map ref = map_clone(&input);
    er_test_set_threads(1);
    er_terrain t = {ref.w, ref.h, ref.z, ref.wall, 1.0, 1.0, NULL};
    er_layers layers = {ref.water, ref.sed, ref.flow, ref.wear};
    er_status st = p->model == ER_MODEL_MEI ? er_run_cpu(p, &t, NULL, &(er_run_opts){&layers, NULL, NULL, &ref.b}, &err)
                                            : er_run_cpu(p, &t, NULL, &(er_run_opts){&layers, NULL, NULL, &ref.b}, &err);
    ck_assert_msg(st == ER_OK, "%s", err.msg);

    recorder rec;
    recorder_init(&rec, every, -1);
    er_run_hooks hk = {record, &rec, NULL, NULL};
    map hooked = map_clone(&input);
    er_test_set_threads(2);
    ck_assert_int_eq(run(p, &hooked, &hk, &err), ER_OK);
    ck_assert_msg(same_result(&ref, &hooked), "a boundary callback changed the result");
    ck_assert(rec.ordered);
    ck_assert_int_ge(rec.n, 3);
    const er_run_state *last = &rec.s[rec.n - 1].st;
    ck_assert_int_eq(rec.calls, (int)last->boundaries + 1); /* the start, then each boundary */
    ck_assert_int_eq(rec.s[0].st.boundary, 0);
    ck_assert_int_eq(rec.s[0].st.done, 0);

    for (int k = 0; k < rec.n; k++) {
        for (int threads = 1; threads <= 2; threads++) {
            map m = map_clone(&input);
            er_run_hooks rh = {NULL, NULL, &rec.s[k].st, NULL};
            er_test_set_threads(threads);
            st = run(p, &m, &rh, &err);
            ck_assert_msg(st == ER_OK, "resume at %lld: %s", (long long)rec.s[k].st.boundary,
                          err.msg);
            ck_assert_msg(same_result(&ref, &m), "resumed at boundary %lld of %lld on %d threads: "
                          "not the uninterrupted result", (long long)rec.s[k].st.boundary,
                          (long long)rec.s[k].st.boundaries, threads);
            map_free(&m);
        }
    }
    recorder_free(&rec);
    map_free(&hooked);
    map_free(&ref);
    map_free(&input);
    er_test_set_threads(2);
}

START_TEST(mei_resume_identical)
{
    er_params p = mei_params();
    check_resume_everywhere(&p, 90, 70, 0, 7);
    check_resume_everywhere(&p, 64, 50, 1, 16);
    p.mei.advection = ER_ADVECT_SEMI_LAGRANGIAN;
    p.mei.boundary = ER_BOUNDARY_CLOSED;
    p.mei.dt = 0.8; /* sub-steps */
    check_resume_everywhere(&p, 64, 50, 0, 12);
    keep_extra = 0; /* and without flow and wear (the state lacks them) */
    check_resume_everywhere(&p, 64, 50, 1, 12);
    keep_extra = 1;
}
END_TEST

START_TEST(droplet_resume_identical)
{
    er_params p = droplet_params();
    check_resume_everywhere(&p, 128, 120, 0, 2); /* coloured tiles */
    check_resume_everywhere(&p, 128, 120, 1, 3);
    check_resume_everywhere(&p, 20, 18, 0, 2);   /* one tile: sequential */
    p.droplet.variant = ER_DROPLET_MASS_TRANSFER;
    p.droplet.mt_max_distance = 8;
    check_resume_everywhere(&p, 128, 120, 0, 3);
}
END_TEST

/* A cancel from the boundary callback leaves the terrain and layers as the
 * state at that boundary describes them (er_run_state_layers). */
START_TEST(cancel_leaves_boundary_state)
{
    for (int model = 0; model < 2; model++) {
        er_params p = model == 0 ? mei_params() : droplet_params();
        int64_t at = model == 0 ? 20 : 5;
        map input = map_make(96, 96, 1), m = map_clone(&input);
        recorder rec;
        recorder_init(&rec, at, at);
        er_run_hooks hk = {record, &rec, NULL, NULL};
        er_error err = {""};
        ck_assert_int_eq(run(&p, &m, &hk, &err), ER_ECANCELED);
        ck_assert_int_eq(rec.n, 2); /* boundary 0 and `at` */
        const er_run_state *s = &rec.s[1].st;
        ck_assert_int_eq(s->boundary, at);
        ck_assert_int_eq(rec.calls, (int)at + 1);
        size_t n = cells(&m);
        float *hgt = malloc(n * sizeof(float)), *wat = malloc(n * sizeof(float));
        float *sed = malloc(n * sizeof(float));
        ck_assert(hgt && wat && sed);
        er_run_state_layers(s, input.z, input.wall, hgt, wat, sed);
        ck_assert(memcmp(hgt, m.z, n * sizeof(float)) == 0);
        ck_assert(memcmp(wat, m.water, n * sizeof(float)) == 0);
        ck_assert(memcmp(sed, m.sed, n * sizeof(float)) == 0);
        /* and the state is not the start state: the run did something */
        ck_assert(memcmp(hgt, input.z, n * sizeof(float)) != 0);
        free(hgt);
        free(wat);
        free(sed);
        recorder_free(&rec);
        map_free(&m);
        map_free(&input);
    }
}
END_TEST

/* States that do not fit the run are refused before anything runs. */
START_TEST(resume_mismatch_refused)
{
    er_params pm = mei_params(), pd = droplet_params();
    map input = map_make(64, 48, 0);
    recorder rm, rd;
    recorder_init(&rm, 8, 8);
    recorder_init(&rd, 2, 2);
    er_run_hooks hm = {record, &rm, NULL, NULL}, hd = {record, &rd, NULL, NULL};
    er_error err = {""};
    map a = map_clone(&input), b = map_clone(&input);
    ck_assert_int_eq(run(&pm, &a, &hm, &err), ER_ECANCELED);
    ck_assert_int_eq(run(&pd, &b, &hd, &err), ER_ECANCELED);
    const er_run_state *sm = &rm.s[1].st, *sd = &rd.s[1].st;

    struct { const er_params *p; er_run_state st; const char *want; } bad[6];
    bad[0].p = &pm; bad[0].st = *sd; bad[0].want = "not from a mei run";
    bad[1].p = &pd; bad[1].st = *sm; bad[1].want = "not from a droplet run";
    bad[2].p = &pm; bad[2].st = *sm; bad[2].st.width = 32; bad[2].want = "32x48";
    bad[3].p = &pm; bad[3].st = *sm; bad[3].st.done = bad[3].st.boundary = 99; bad[3].want = "does not fit";
    bad[4].p = &pd; bad[4].st = *sd; bad[4].st.done += 1; bad[4].want = "does not fit";
    bad[5].p = &pd; bad[5].st = *sd; bad[5].st.array[ER_STATE_DROP_FLOW] = NULL; bad[5].want = "lacks a layer";
    for (int i = 0; i < 6; i++) {
        map m = map_clone(&input);
        er_run_hooks rh = {NULL, NULL, &bad[i].st, NULL};
        err.msg[0] = '\0';
        ck_assert_int_eq(run(bad[i].p, &m, &rh, &err), ER_EINVAL);
        ck_assert_msg(strstr(err.msg, bad[i].want), "case %d: '%s' lacks '%s'", i, err.msg,
                      bad[i].want);
        ck_assert(memcmp(m.z, input.z, cells(&m) * sizeof(float)) == 0);
        map_free(&m);
    }
    recorder_free(&rm);
    recorder_free(&rd);
    map_free(&a);
    map_free(&b);
    map_free(&input);
}
END_TEST

/* A state whose values no run leaves (a crafted checkpoint's: its
 * checksums hold): a droplet height not finite, below the input's lowest
 * or above what the map's material can pile on one cell, a nodata cell
 * changed, a layer negative or NaN; a Mei array not finite, a height out
 * of its bound, a depth, load, outflow or flow below 0.  Refused before the run (ER_EINVAL, one line "the state ..."),
 * the input untouched; the state itself resumes. */
START_TEST(crafted_values_refused)
{
    er_params pm = mei_params(), pd = droplet_params();
    map input = map_make(64, 48, 1);
    recorder rm, rd;
    recorder_init(&rm, 8, 8);
    recorder_init(&rd, 2, 2);
    er_run_hooks hm = {record, &rm, NULL, NULL}, hd = {record, &rd, NULL, NULL};
    er_error err = {""};
    map a = map_clone(&input), b = map_clone(&input);
    ck_assert_int_eq(run(&pm, &a, &hm, &err), ER_ECANCELED);
    ck_assert_int_eq(run(&pd, &b, &hd, &err), ER_ECANCELED);
    float lo = INFINITY;
    for (size_t i = 0; i < cells(&input); i++)
        lo = input.wall[i] ? lo : fminf(lo, input.z[i]);
    const size_t valid = 5, wall = (size_t)(48 / 3) * 64 + 32;
    ck_assert(!input.wall[valid] && input.wall[wall]);
    const struct {
        int mei, array;
        size_t cell;
        float value;
        const char *want;
    } cases[] = {{0, ER_STATE_DROP_HEIGHT, valid, NAN, "height nan"},
                 {0, ER_STATE_DROP_HEIGHT, valid, INFINITY, "height inf"},
                 {0, ER_STATE_DROP_HEIGHT, valid, -1.0f, "height -1 at cell (5, 0)"},
                 {0, ER_STATE_DROP_HEIGHT, valid, 1e30f, "height 1e+30 at cell (5, 0)"},
                 {0, ER_STATE_DROP_HEIGHT, wall, 1.0f, "nodata cell (32, 16)"},
                 {0, ER_STATE_DROP_FLOW, valid, -1.0f, "flow -1"},
                 {0, ER_STATE_DROP_DEPOSIT, valid, NAN, "deposit nan"},
                 {0, ER_STATE_DROP_WEAR, valid, INFINITY, "wear inf"},
                 {1, ER_STATE_MEI_Z, valid, 1e30f, "height 1e+30 at cell (5, 0)"},
                 {1, ER_STATE_MEI_Z, valid, -1e30f, "height -1e+30"},
                 {1, ER_STATE_MEI_D, valid, NAN, "array 1 is not finite at cell (5, 0)"},
                 {1, ER_STATE_MEI_D, valid, -1.0f, "water depth -1 at cell (5, 0)"},
                 {1, ER_STATE_MEI_S, valid, -1e-3f, "suspended sediment -0.001"},
                 {1, ER_STATE_MEI_Q + 1, valid, -1.0f, "outflow -1"},
                 {1, ER_STATE_MEI_Q + 2, wall, INFINITY, "array 5 is not finite"},
                 {1, ER_STATE_MEI_FLOW, valid, -2.0f, "flow -2"},
                 {1, ER_STATE_MEI_WEAR, valid, NAN, "array 8 is not finite"}};
    ck_assert(lo > -1.0f);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        er_run_state st = cases[k].mei ? rm.s[1].st : rd.s[1].st;
        float *arr = (float *)(uintptr_t)st.array[cases[k].array], keep = arr[cases[k].cell];
        arr[cases[k].cell] = cases[k].value;
        map m = map_clone(&input);
        er_run_hooks rh = {NULL, NULL, &st, NULL};
        err.msg[0] = '\0';
        ck_assert_int_eq(run(cases[k].mei ? &pm : &pd, &m, &rh, &err), ER_EINVAL);
        ck_assert_msg(strncmp(err.msg, "the state", 9) == 0 && strstr(err.msg, cases[k].want) &&
                          !strchr(err.msg, '\n'),
                      "case %zu: '%s' lacks '%s'", k, err.msg, cases[k].want);
        ck_assert(memcmp(m.z, input.z, cells(&m) * sizeof(float)) == 0);
        arr[cases[k].cell] = keep;
        map_free(&m);
    }
    for (int mei = 0; mei < 2; mei++) {
        map m = map_clone(&input);
        er_run_hooks rh = {NULL, NULL, mei ? &rm.s[1].st : &rd.s[1].st, NULL};
        ck_assert_msg(run(mei ? &pm : &pd, &m, &rh, &err) == ER_OK, "%s", err.msg);
        map_free(&m);
    }
    recorder_free(&rm);
    recorder_free(&rd);
    map_free(&a);
    map_free(&b);
    map_free(&input);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Checkpoint files                                                    */

static er_checkpoint_id id_of(const er_params *p, const map *m)
{
    er_checkpoint_id id;
    const char *text = NULL;
    memset(&id, 0, sizeof id);
    id.model = p->model;
    id.width = m->w;
    id.height = m->h;
    /* any fixed recipe text will do here: the CLI hashes --print-recipe's */
    text = p->model == ER_MODEL_MEI ? "recipe mei" : "recipe droplet";
    id.recipe_hash = er_fnv1a64(ER_FNV1A64_INIT, text, strlen(text));
    id.input_hash = er_checkpoint_input_hash(m->w, m->h, 1.0, 1.0, m->z, m->wall);
    return id;
}

/* Written, read back, resumed: the same result as the uninterrupted run,
 * for Mei and droplets (and a droplet state without layers). */
START_TEST(checkpoint_round_trip)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck.bin", dir);
    for (int model = 0; model < 2; model++) {
        er_params p = model == 0 ? mei_params() : droplet_params();
        map input = map_make(100, 90, 1), ref = map_clone(&input), part = map_clone(&input);
        er_error err = {""};
        er_test_set_threads(2);
        ck_assert_int_eq(run(&p, &ref, NULL, &err), ER_OK);
        recorder rec;
        recorder_init(&rec, model == 0 ? 30 : 4, model == 0 ? 30 : 4);
        er_run_hooks hk = {record, &rec, NULL, NULL};
        ck_assert_int_eq(run(&p, &part, &hk, &err), ER_ECANCELED);
        const er_run_state *s = &rec.s[1].st;
        er_checkpoint_id id = id_of(&p, &input);
        ck_assert_msg(er_checkpoint_write(path, s, &id, &err) == ER_OK, "%s", err.msg);
        struct stat sb;
        ck_assert_int_eq(stat(path, &sb), 0);
        int present = model == 0 ? ER_STATE_ARRAYS : ER_STATE_DROP_ARRAYS; /* flow, wear kept */
        ck_assert_int_eq((long long)sb.st_size,
                         (long long)(ER_CHECKPOINT_HEADER + 8 + (size_t)present * cells(&input) * 4));
        er_checkpoint ck;
        ck_assert_msg(er_checkpoint_read(path, &id, &ck, &err) == ER_OK, "%s", err.msg);
        ck_assert_int_eq(ck.state.model, s->model);
        ck_assert_int_eq(ck.state.boundary, s->boundary);
        ck_assert_int_eq(ck.state.boundaries, s->boundaries);
        ck_assert_int_eq(ck.state.done, s->done);
        ck_assert_int_eq(ck.state.total, s->total);
        ck_assert(memcmp(&ck.state.budget, &s->budget, sizeof s->budget) == 0);
        for (int i = 0; i < s->n_arrays; i++) {
            ck_assert((ck.state.array[i] != NULL) == (s->array[i] != NULL));
            if (s->array[i])
                ck_assert(memcmp(ck.state.array[i], s->array[i], cells(&input) * sizeof(float)) == 0);
        }
        er_test_set_threads(1);
        map m = map_clone(&input);
        er_run_hooks rh = {NULL, NULL, &ck.state, NULL};
        ck_assert_msg(run(&p, &m, &rh, &err) == ER_OK, "%s", err.msg);
        ck_assert(same_result(&ref, &m));
        er_checkpoint_free(&ck);
        map_free(&m);
        /* no temporary left beside it */
        char cmd[PATH_MAX + 64];
        snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", dir);
        ck_assert_int_eq(system(cmd), 0);

        if (model == 1) { /* a droplet state without layers: smaller, and still resumable
                           * by a run that keeps none */
            er_run_state bare = *s;
            bare.array[ER_STATE_DROP_FLOW] = bare.array[ER_STATE_DROP_DEPOSIT] = NULL;
            ck_assert_int_eq(er_checkpoint_write(path, &bare, &id, &err), ER_OK);
            ck_assert_int_eq(er_checkpoint_read(path, &id, &ck, &err), ER_OK);
            ck_assert_ptr_null(ck.state.array[ER_STATE_DROP_FLOW]);
            map q = map_clone(&input);
            er_terrain t = {q.w, q.h, q.z, q.wall, 1.0, 1.0, NULL};
            er_run_hooks qh = {NULL, NULL, &ck.state, NULL};
            ck_assert_int_eq(er_run_cpu(&p, &t, NULL, &(er_run_opts){NULL, NULL, &qh, &q.b}, &err), ER_OK);
            ck_assert(memcmp(q.z, ref.z, cells(&q) * sizeof(float)) == 0);
            er_checkpoint_free(&ck);
            map_free(&q);
        }
        recorder_free(&rec);
        map_free(&part);
        map_free(&ref);
        map_free(&input);
    }
    er_test_rmdir(dir);
}
END_TEST

static void write_bytes(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* A current-format file rewritten as an older format: its version, the
 * header checksum over its shorter header, the arrays moved up behind it. */
static void write_old_format(const char *path, const unsigned char *cur, size_t n, int version,
                             size_t sum_at, size_t header)
{
    unsigned char *b = malloc(n);
    ck_assert_ptr_nonnull(b);
    memcpy(b, cur, n);
    b[8] = (unsigned char)version;
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, b, sum_at);
    for (int i = 0; i < 8; i++)
        b[sum_at + i] = (unsigned char)(h >> (8 * i));
    memmove(b + header, b + ER_CHECKPOINT_HEADER, n - ER_CHECKPOINT_HEADER);
    write_bytes(path, b, n - (ER_CHECKPOINT_HEADER - header));
    free(b);
}

static void assert_same_state(const er_checkpoint *a, const er_checkpoint *b, size_t cells)
{
    ck_assert(memcmp(&a->state.budget, &b->state.budget, sizeof a->state.budget) == 0);
    for (int i = 0; i < ER_STATE_ARRAYS; i++)
        if (b->state.array[i])
            ck_assert(memcmp(a->state.array[i], b->state.array[i], cells * sizeof(float)) == 0);
}

/* The backend that wrote a checkpoint comes back, and only that backend
 * may go on from it; a format-1 file (no backend recorded, 168-byte
 * header) reads as "cpu" with the same state. */
START_TEST(checkpoint_backend)
{
    char dir[PATH_MAX], path[PATH_MAX + 32], old[PATH_MAX + 32];
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck.bin", dir);
    snprintf(old, sizeof old, "%s/v1.bin", dir);
    er_params p = mei_params();
    keep_extra = 0; /* the 7 arrays a format-1 file held */
    map input = map_make(40, 30, 1), part = map_clone(&input);
    keep_extra = 1;
    er_error err = {""};
    recorder rec;
    recorder_init(&rec, 5, 5);
    er_run_hooks hk = {record, &rec, NULL, NULL};
    ck_assert_int_eq(run(&p, &part, &hk, &err), ER_ECANCELED);
    er_checkpoint_id id = id_of(&p, &input);
    snprintf(id.backend, sizeof id.backend, "vulkan llvmpipe (driver 0x1)");
    ck_assert_int_eq(er_checkpoint_write(path, &rec.s[1].st, &id, &err), ER_OK);
    er_checkpoint ck;
    ck_assert_msg(er_checkpoint_read(path, &id, &ck, &err) == ER_OK, "%s", err.msg);
    ck_assert_str_eq(ck.backend, "vulkan llvmpipe (driver 0x1)");
    ck_assert_int_eq(er_checkpoint_same_backend(&ck, path, id.backend, &err), ER_OK);
    ck_assert_int_eq(er_checkpoint_same_backend(&ck, path, "cpu", &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "vulkan llvmpipe") && strstr(err.msg, "on cpu") &&
                  strstr(err.msg, path) && !strchr(err.msg, '\n'), "%s", err.msg);
    ck_assert_int_eq(er_checkpoint_same_backend(&ck, path, "vulkan llvmpipe (driver 0x2)", &err),
                     ER_EINVAL);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static unsigned char buf[ER_CHECKPOINT_HEADER + 7 * 40 * 30 * 4 + 8];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert_uint_eq(n, sizeof buf);
    /* the same file as format 2: header without withheld, checksum at 224 */
    write_old_format(old, buf, n, 2, 224, ER_CHECKPOINT_HEADER_V2);
    er_checkpoint v2;
    ck_assert_msg(er_checkpoint_read(old, &id, &v2, &err) == ER_OK, "%s", err.msg);
    ck_assert_str_eq(v2.backend, ck.backend);
    assert_same_state(&v2, &ck, cells(&input));
    er_checkpoint_free(&v2);
    /* the same file as format 1: header without the backend, checksum at 160 */
    write_old_format(old, buf, n, 1, 160, ER_CHECKPOINT_HEADER_V1);
    er_checkpoint v1;
    ck_assert_msg(er_checkpoint_read(old, &id, &v1, &err) == ER_OK, "%s", err.msg);
    ck_assert_str_eq(v1.backend, "cpu");
    ck_assert_int_eq(er_checkpoint_same_backend(&v1, old, "", &err), ER_OK);
    assert_same_state(&v1, &ck, cells(&input));
    er_checkpoint_free(&v1);
    er_checkpoint_free(&ck);
    recorder_free(&rec);
    map_free(&part);
    map_free(&input);
    er_test_rmdir(dir);
}
END_TEST

/* Another recipe, input, model or size; truncated, corrupted or foreign
 * files: refused with one line naming the file and the reason. */
START_TEST(checkpoint_refusals)
{
    char dir[PATH_MAX], path[PATH_MAX + 32], bad[PATH_MAX + 32];
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck.bin", dir);
    snprintf(bad, sizeof bad, "%s/bad.bin", dir);
    er_params p = mei_params();
    map input = map_make(40, 30, 0), m = map_clone(&input);
    recorder rec;
    recorder_init(&rec, 5, 5);
    er_run_hooks hk = {record, &rec, NULL, NULL};
    er_error err = {""};
    ck_assert_int_eq(run(&p, &m, &hk, &err), ER_ECANCELED);
    er_checkpoint_id id = id_of(&p, &input);
    ck_assert_int_eq(er_checkpoint_write(path, &rec.s[1].st, &id, &err), ER_OK);
    er_checkpoint ck;

    struct { er_checkpoint_id id; const char *want; } ids[5];
    for (int i = 0; i < 5; i++)
        ids[i].id = id;
    ids[0].id.recipe_hash ^= 1; ids[0].want = "another recipe";
    ids[1].id.input_hash ^= 1; ids[1].want = "another input";
    ids[2].id.model = ER_MODEL_DROPLET; ids[2].want = "checkpoint of a mei run, the recipe runs droplet";
    ids[3].id.width = 41; ids[3].want = "40x30 map, the input is 41x30";
    ids[4].want = NULL;
    for (int i = 0; i < 5; i++) {
        err.msg[0] = '\0';
        er_status st = er_checkpoint_read(path, &ids[i].id, &ck, &err);
        if (!ids[i].want) {
            ck_assert_int_eq(st, ER_OK);
            er_checkpoint_free(&ck);
            continue;
        }
        ck_assert_int_eq(st, ER_EINVAL);
        ck_assert_msg(strstr(err.msg, ids[i].want), "'%s' lacks '%s'", err.msg, ids[i].want);
        ck_assert_ptr_null(strchr(err.msg, '\n'));
        ck_assert_ptr_null(ck.buf);
    }

    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char *all = malloc(1 << 20);
    ck_assert_ptr_nonnull(all);
    size_t len = fread(all, 1, 1 << 20, f);
    fclose(f);
    /* truncated anywhere: in the magic, the header, the arrays, the tail */
    const size_t cuts[] = {0, 4, 100, ER_CHECKPOINT_HEADER, ER_CHECKPOINT_HEADER + 1001, len - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        write_bytes(bad, all, cuts[k]);
        err.msg[0] = '\0';
        ck_assert_int_eq(er_checkpoint_read(bad, &id, &ck, &err), ER_EINVAL);
        ck_assert_msg(strstr(err.msg, cuts[k] < 8 ? "not an erode checkpoint" : "truncated"),
                      "cut at %zu: '%s'", cuts[k], err.msg);
    }
    /* one flipped bit: in the header counters, in the data, in the tail */
    const size_t flips[] = {70, ER_CHECKPOINT_HEADER + 333, len - 3};
    for (size_t k = 0; k < sizeof flips / sizeof flips[0]; k++) {
        all[flips[k]] ^= 0x10;
        write_bytes(bad, all, len);
        all[flips[k]] ^= 0x10;
        ck_assert_int_eq(er_checkpoint_read(bad, &id, &ck, &err), ER_EINVAL);
        ck_assert_msg(strstr(err.msg, "corrupt checkpoint"), "flip at %zu: '%s'", flips[k],
                      err.msg);
    }
    /* a byte more */
    all[len] = 0;
    write_bytes(bad, all, len + 1);
    ck_assert_int_eq(er_checkpoint_read(bad, &id, &ck, &err), ER_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "trailing"));
    /* another format version */
    all[8] = ER_CHECKPOINT_FORMAT + 1;
    write_bytes(bad, all, len);
    ck_assert_int_eq(er_checkpoint_read(bad, &id, &ck, &err), ER_EINVAL);
    char want[32];
    snprintf(want, sizeof want, "format %d", ER_CHECKPOINT_FORMAT + 1);
    ck_assert_ptr_nonnull(strstr(err.msg, want));
    all[8] = ER_CHECKPOINT_FORMAT;
    /* another erode version (with a valid header checksum) */
    memcpy(all + 12, "0.0.9", 6);
    const size_t sum_at = ER_CHECKPOINT_HEADER - 8;
    uint64_t h = er_fnv1a64(ER_FNV1A64_INIT, all, sum_at);
    for (int i = 0; i < 8; i++)
        all[sum_at + i] = (unsigned char)(h >> (8 * i));
    write_bytes(bad, all, len);
    ck_assert_int_eq(er_checkpoint_read(bad, &id, &ck, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "written by erode 0.0.9"), "'%s'", err.msg);
    /* a missing file is an I/O error */
    snprintf(bad, sizeof bad, "%s/none.bin", dir);
    ck_assert_int_eq(er_checkpoint_read(bad, &id, &ck, &err), ER_EIO);
    free(all);
    recorder_free(&rec);
    map_free(&m);
    map_free(&input);
    er_test_rmdir(dir);
}
END_TEST

/* The offset of the first occurrence of s in the file at path, or -1. */
static long find_bytes(const char *path, const char *s)
{
    FILE *f = fopen(path, "rb");
    ck_assert(f != NULL);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f), k = strlen(s);
    fclose(f);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(buf + i, s, k) == 0)
            return (long)i;
    return -1;
}

/* Writes byte v at offset `at` of the file at path. */
static void patch_byte(const char *path, long at, unsigned char v)
{
    FILE *f = fopen(path, "r+b");
    ck_assert(f != NULL);
    ck_assert(fseek(f, at, SEEK_SET) == 0 && fputc(v, f) == v);
    fclose(f);
}

/* A budget no run writes (a sum not finite or negative, a negative
 * count) in a checkpoint whose checksums hold: the file is refused as
 * corrupt.  left_map alone may be negative: a held base level feeds the
 * map by diffusion (the stream-power model), and that is read back. */
START_TEST(checkpoint_budget_refused)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck.bin", dir);
    er_params p = droplet_params();
    map input = map_make(40, 30, 0), m = map_clone(&input);
    recorder rec;
    recorder_init(&rec, 2, 2);
    er_run_hooks hk = {record, &rec, NULL, NULL};
    er_error err = {""};
    ck_assert_int_eq(run(&p, &m, &hk, &err), ER_ECANCELED);
    er_checkpoint_id id = id_of(&p, &input);
    er_checkpoint ck;
    for (int k = 0; k < 6; k++) {
        er_run_state st = rec.s[1].st;
        double *v[] = {&st.budget.material_before, &st.budget.eroded, &st.budget.deposited,
                       &st.budget.water_added, er_budget_term(&st.budget, "withheld")};
        if (k < 5)
            *v[k] = k == 0 ? INFINITY : k == 1 || k == 4 ? NAN : -1.0;
        else
            st.budget.substeps = -5;
        ck_assert_int_eq(er_checkpoint_write(path, &st, &id, &err), ER_OK);
        err.msg[0] = '\0';
        ck_assert_int_eq(er_checkpoint_read(path, &id, &ck, &err), ER_EINVAL);
        ck_assert_msg(strstr(err.msg, k == 4 ? "corrupt checkpoint (budget terms)"
                                             : "corrupt checkpoint (budget)"),
                      "case %d: '%s'", k, err.msg);
    }
    er_run_state held = rec.s[1].st;
    held.budget.left_map = -2.5;
    ck_assert_int_eq(er_checkpoint_write(path, &held, &id, &err), ER_OK);
    ck_assert_msg(er_checkpoint_read(path, &id, &ck, &err) == ER_OK, "%s", err.msg);
    ck_assert(ck.state.budget.left_map == -2.5);
    er_checkpoint_free(&ck);
    /* The models' own budget terms come back by name, in their order, and
     * a damaged name or value is refused (the section's checksum, then its
     * rules). */
    er_run_state terms = rec.s[1].st;
    memset(terms.budget.term, 0, sizeof terms.budget.term);
    *er_budget_term(&terms.budget, "uplifted") = 7.25;
    *er_budget_term(&terms.budget, "withheld") = -0.5;
    ck_assert_int_eq(er_checkpoint_write(path, &terms, &id, &err), ER_OK);
    ck_assert_msg(er_checkpoint_read(path, &id, &ck, &err) == ER_OK, "%s", err.msg);
    ck_assert(memcmp(ck.state.budget.term, terms.budget.term, sizeof terms.budget.term) == 0);
    ck_assert(ck.state.legacy_slot == 0);
    er_checkpoint_free(&ck);
    long at = find_bytes(path, "withheld");
    ck_assert(at > 0);
    patch_byte(path, at, 0x07);
    ck_assert_int_eq(er_checkpoint_read(path, &id, &ck, &err), ER_EINVAL);
    ck_assert_msg(strstr(err.msg, "corrupt checkpoint (budget terms"), "%s", err.msg);
    ck_assert_int_eq(er_checkpoint_write(path, &rec.s[1].st, &id, &err), ER_OK);
    ck_assert_msg(er_checkpoint_read(path, &id, &ck, &err) == ER_OK, "%s", err.msg);
    er_checkpoint_free(&ck);
    recorder_free(&rec);
    map_free(&m);
    map_free(&input);
    er_test_rmdir(dir);
}
END_TEST

/* The input hash sees every part of the input. */
START_TEST(input_hash_sensitive)
{
    map m = map_make(16, 12, 1);
    uint64_t h0 = er_checkpoint_input_hash(16, 12, 1.0, 1.0, m.z, m.wall);
    ck_assert(h0 == er_checkpoint_input_hash(16, 12, 1.0, 1.0, m.z, m.wall));
    ck_assert(h0 != er_checkpoint_input_hash(16, 12, 1.0, 2.0, m.z, m.wall));
    ck_assert(h0 != er_checkpoint_input_hash(12, 16, 1.0, 1.0, m.z, m.wall));
    ck_assert(h0 != er_checkpoint_input_hash(16, 12, 1.0, 1.0, m.z, NULL));
    m.z[77] = nextafterf(m.z[77], 10.0f);
    ck_assert(h0 != er_checkpoint_input_hash(16, 12, 1.0, 1.0, m.z, m.wall));
    map_free(&m);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Crafted checkpoints                                                  */

/* A 16 x 16 bowl of 1 m cells (0.05 r^2 around the centre), a closed lake
 * filled to 2 m (sph.sound_speed 20 holds its 1.99 m drop). */
static float bowl_z[16 * 16];

static er_terrain sph_bowl(er_params *p)
{
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            bowl_z[y * 16 + x] = (float)(0.05 * ((x - 7.5) * (x - 7.5) + (y - 7.5) * (y - 7.5)));
    er_params_default(p);
    p->model = ER_MODEL_SPH;
    p->sph.steps = 3;
    p->sph.fill_level = 2.0;
    p->sph.fill_level_set = 1;
    p->sph.boundary = ER_BOUNDARY_CLOSED;
    return (er_terrain){16, 16, bowl_z, NULL, 1.0, 1.0, NULL};
}

typedef struct sph_saver {
    const char *path;
    er_checkpoint_id id;
} sph_saver;

/* Writes the state after step 1 and stops the run. */
static int sph_save_at_1(void *user, const er_run_state *st)
{
    sph_saver *v = user;
    if (st->boundary != 1)
        return 0;
    er_error e;
    ck_assert_msg(er_checkpoint_write(v->path, st, &v->id, &e) == ER_OK, "%s", e.msg);
    return 1;
}

/* What a crafted checkpoint of an SPH run may say, each read back from a
 * file whose checksums hold: particle 0 at a position that is not finite,
 * off the map by a hair, on the map's far edge (allowed, above the
 * ground there), with an infinite speed or a load outside [0, c_max]
 * (c_max itself allowed); working heights not finite or beyond what the
 * run can erode or deposit; deposits not finite, negative or beyond it,
 * a change since the start beyond it; a pending source volume negative or
 * NaN; a NaN or a negative value in the kept wear or flow layer.  Each is
 * refused before the run with one line (ER_EINVAL, "the state's ..."), not
 * run into (a NaN position indexed the neighbour grid with an undefined
 * conversion and crashed the resume; deposits of 1e300 were written out). */
START_TEST(sph_crafted_values_refused)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck", dir);
    er_params p;
    er_terrain t = sph_bowl(&p);
    float wear[256], flow[256];
    er_layers l = {NULL, NULL, flow, wear};
    sph_saver v = {path, {ER_MODEL_SPH, 16, 16, 7, 8, "cpu", 0}};
    er_run_hooks hk = {sph_save_at_1, &v, NULL, NULL};
    er_error e;
    ck_assert_int_eq(er_run_cpu(&p, &t, NULL, &(er_run_opts){&l, NULL, &hk, NULL}, &e),
                     ER_ECANCELED);
    enum { X, Y, VZ, C, ZB, DZ, DEP, PEND, WEAR, FLOW };
    const struct {
        int what;
        double value;
        int ok;
    } cases[] = {{X, NAN, 0},       {X, -1e-9, 0},   {X, 15.0, 1},      {X, 15.000001, 0},
                 {Y, INFINITY, 0},  {Y, 15.0, 1},    {VZ, INFINITY, 0}, {VZ, NAN, 0},
                 {C, -0.1, 0},      {C, 1.5, 0},     {C, 0.3, 1},       {C, 0.30001, 0},
                 {ZB, NAN, 0},      {ZB, 1e30, 0},   {ZB, -1e30, 0},    {DEP, -INFINITY, 0},
                 {DEP, 1e300, 0},   {DEP, -1.0, 0},  {DZ, 1e300, 0},    {PEND, -1.0, 0},
                 {PEND, NAN, 0},    {WEAR, NAN, 0},  {WEAR, -1.0, 0},   {FLOW, -1.0, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        er_checkpoint ck;
        ck_assert_msg(er_checkpoint_read(path, &v.id, &ck, &e) == ER_OK, "%s", e.msg);
        /* the section read back: one part, the particles, then the
         * working heights, change, deposits and pending volumes (state.h) */
        const er_run_extra *x = ck.state.extra;
        ck_assert_ptr_nonnull(x);
        ck_assert_int_eq(x->n_parts, 1);
        ck_assert_uint_gt(x->count[0], 0);
        double *pt = (double *)(uintptr_t)x->part[0];
        double *zb = pt + x->count[0] * ER_SPH_PARTICLE_DOUBLES, *dep = zb + 2 * 256;
        double *slot[] = {&pt[0], &pt[1], &pt[5], &pt[6], &zb[40], &zb[256 + 42], &dep[41],
                          &dep[256]};
        if (cases[k].what >= WEAR)
            ((float *)(uintptr_t)ck.state.array[cases[k].what == WEAR ? ER_STATE_SPH_WEAR
                                                                       : ER_STATE_SPH_FLOW])[7] =
                (float)cases[k].value;
        else
            *slot[cases[k].what] = cases[k].value;
        if (cases[k].ok)
            pt[2] = 6.0; /* above the bowl's rim wherever it moved to */
        sph_bowl(&p);
        er_run_hooks res = {NULL, NULL, &ck.state, NULL};
        e.msg[0] = '\0';
        er_status st = er_run_cpu(&p, &t, NULL, &(er_run_opts){&l, NULL, &res, NULL}, &e);
        if (cases[k].ok)
            ck_assert_msg(st == ER_OK, "case %zu: %s", k, e.msg);
        else
            ck_assert_msg(st == ER_EINVAL && strncmp(e.msg, "the state's ", 12) == 0 &&
                              !strchr(e.msg, '\n'),
                          "case %zu: status %d, '%s'", k, (int)st, e.msg);
        er_checkpoint_free(&ck);
    }
    er_test_rmdir(dir);
}
END_TEST

/* An SPH checkpoint of format 3 (its model section follows the arrays
 * without a header flag) reads as the same state as format 4's: the same
 * counts and doubles, resumed to the same bytes. */
START_TEST(sph_format3_still_reads)
{
    char dir[PATH_MAX], path[PATH_MAX + 16], old[PATH_MAX + 16];
    er_test_mkdtemp(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ck", dir);
    snprintf(old, sizeof old, "%s/ck3", dir);
    er_params p;
    er_terrain t = sph_bowl(&p);
    sph_saver v = {path, {ER_MODEL_SPH, 16, 16, 7, 8, "cpu", 0}};
    er_run_hooks hk = {sph_save_at_1, &v, NULL, NULL};
    er_error e;
    ck_assert_int_eq(er_run_cpu(&p, &t, NULL, &(er_run_opts){NULL, NULL, &hk, NULL}, &e),
                     ER_ECANCELED);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static unsigned char all[1 << 20];
    size_t len = fread(all, 1, sizeof all, f);
    fclose(f);
    ck_assert_uint_lt(len, sizeof all);
    ck_assert_uint_eq(all[47] & 0x80u, 0x80u); /* format 4 flags the section */
    all[47] &= 0x7fu;
    write_old_format(old, all, len, 3, 232, ER_CHECKPOINT_HEADER);
    er_checkpoint a, b;
    ck_assert_msg(er_checkpoint_read(path, &v.id, &a, &e) == ER_OK, "%s", e.msg);
    ck_assert_msg(er_checkpoint_read(old, &v.id, &b, &e) == ER_OK, "%s", e.msg);
    ck_assert_ptr_nonnull(b.state.extra);
    ck_assert_uint_eq(a.state.extra->count[0], b.state.extra->count[0]);
    ck_assert_uint_eq(a.state.extra->count[1], b.state.extra->count[1]);
    ck_assert_uint_eq(a.state.extra->len[0], b.state.extra->len[0]);
    ck_assert(memcmp(a.state.extra->part[0], b.state.extra->part[0],
                     a.state.extra->len[0] * sizeof(double)) == 0);
    assert_same_state(&a, &b, 256);
    float h[2][256];
    for (int k = 0; k < 2; k++) {
        sph_bowl(&p);
        er_run_hooks res = {NULL, NULL, k ? &b.state : &a.state, NULL};
        ck_assert_msg(er_run_cpu(&p, &t, NULL, &(er_run_opts){NULL, NULL, &res, NULL}, &e) ==
                          ER_OK, "%s", e.msg);
        memcpy(h[k], t.elevation, sizeof h[k]);
    }
    ck_assert(memcmp(h[0], h[1], sizeof h[0]) == 0);
    er_checkpoint_free(&a);
    er_checkpoint_free(&b);
    er_test_rmdir(dir);
}
END_TEST

Suite *resume_suite(void);
Suite *resume_suite(void)
{
    Suite *s = suite_create("resume");
    TCase *tc = tcase_create("resume");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, mei_resume_identical);
    tcase_add_test(tc, droplet_resume_identical);
    tcase_add_test(tc, cancel_leaves_boundary_state);
    tcase_add_test(tc, resume_mismatch_refused);
    tcase_add_test(tc, crafted_values_refused);
    tcase_add_test(tc, checkpoint_budget_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("checkpoint");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, checkpoint_round_trip);
    tcase_add_test(tc, checkpoint_refusals);
    tcase_add_test(tc, checkpoint_backend);
    tcase_add_test(tc, input_hash_sensitive);
    tcase_add_test(tc, sph_crafted_values_refused);
    tcase_add_test(tc, sph_format3_still_reads);
    suite_add_tcase(s, tc);
    return s;
}
