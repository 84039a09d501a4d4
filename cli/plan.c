/* --plan: what a checked run would do (erode(1) "--plan"). */
#include "plan.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "paths.h"
#include "preflight.h"

/* A bench record's rate (man/bench/<model>.txt, scripts/bench-rates.awk). */
typedef struct bench_rate {
    const char *model;
    int threads, size;
    double ns_per_cell_step; /* [ns] a cell's share of one step (a sub-step for models with them) */
    const char *machine, *commit;
} bench_rate;

static const bench_rate rates[] = {
#define ER_BENCH_RATE(m, t, n, ns, mach, c) {m, t, n, ns, mach, c},
#include "er_bench_rates.h"
#undef ER_BENCH_RATE
    {NULL, 0, 0, 0.0, NULL, NULL}
};

static int run_threads(const er_settings *s)
{
#ifdef _OPENMP
    return s->threads > 0 ? s->threads : omp_get_max_threads();
#else
    (void)s;
    return 1;
#endif
}

/* The record of `model` measured with `threads` (the largest map of
 * them), else the one with the most threads, whose rate is scaled by
 * threads as if the work divided evenly (*scaled = 1); NULL: no record. */
static const bench_rate *find_rate(const char *model, int threads, int *scaled)
{
    const bench_rate *same = NULL, *most = NULL;
    for (const bench_rate *r = rates; r->model; r++) {
        if (strcmp(r->model, model) != 0)
            continue;
        if (r->threads == threads && (!same || r->size > same->size))
            same = r;
        if (!most || r->threads > most->threads ||
            (r->threads == most->threads && r->size > most->size))
            most = r;
    }
    *scaled = !same && most;
    return same ? same : most;
}

/* Seconds stage k would take on the record's machine, or -1 (unknown). */
static double stage_seconds(const er_job *j, int k, int threads, const bench_rate **used,
                            int *scaled)
{
    const er_plan *p = &j->plan.plan[k];
    *used = find_rate(er_model_name(j->plan.p[k].model), threads, scaled);
    if (!*used)
        return -1.0;
    double ns = (*used)->ns_per_cell_step;
    if (*scaled)
        ns *= (double)(*used)->threads / (double)threads;
    const double sub = p->substeps > 0 ? (double)p->substeps : 1.0;
    return ns * 1e-9 * (double)p->width * (double)p->height * (double)p->boundaries * sub;
}

/* The work of stage k in its model's units of work (steps; droplets),
 * as --json's stage reports count it: its boundaries, or what the model
 * counts done at the last (core/drive.h done_at). */
static int64_t stage_work(const er_job *j, int k)
{
    const er_model_steps *ms = er_model(j->plan.p[k].model)->steps;
    const er_plan *p = &j->plan.plan[k];
    return ms && ms->done_at ? ms->done_at(p, p->boundaries) : p->boundaries;
}

/* Path of layer bit b as the writer will name it (outputs.c). */
static void layer_path(const er_job *j, unsigned b, char *buf, size_t n)
{
    er_path_output(buf, n, j->s, j->name, er_layer_name(1u << b), er_path_ext(j->s, j->img.format));
}

static cJSON *plan_json(const er_job *j, size_t need, int threads)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "input", j->input);
    cJSON_AddBoolToObject(o, "plan", 1);
    cJSON_AddNumberToObject(o, "width", j->img.width);
    cJSON_AddNumberToObject(o, "height", j->img.height);
    cJSON_AddNumberToObject(o, "memory_bytes", (double)need);
    cJSON_AddNumberToObject(o, "threads", threads);
    cJSON *st = cJSON_AddArrayToObject(o, "stages");
    double total = 0.0;
    for (int k = 0; k < j->plan.n; k++) {
        const bench_rate *r;
        int scaled;
        const double sec = stage_seconds(j, k, threads, &r, &scaled);
        const er_model_ops *m = er_model(j->plan.p[k].model);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(st, e);
        cJSON_AddStringToObject(e, "model", m->name);
        cJSON_AddNumberToObject(e, m->work_key, (double)stage_work(j, k));
        cJSON_AddNumberToObject(e, "boundaries", (double)j->plan.plan[k].boundaries);
        cJSON_AddStringToObject(e, "unit", m->unit);
        cJSON_AddNumberToObject(e, "substeps", (double)j->plan.plan[k].substeps);
        if (sec < 0.0) {
            cJSON_AddNullToObject(e, "seconds");
            total = -1.0;
            continue;
        }
        cJSON_AddNumberToObject(e, "seconds", sec);
        cJSON_AddStringToObject(e, "machine", r->machine);
        cJSON_AddStringToObject(e, "bench_commit", r->commit);
        cJSON_AddNumberToObject(e, "bench_threads", r->threads);
        if (total >= 0.0)
            total += sec;
    }
    if (total >= 0.0)
        cJSON_AddNumberToObject(o, "seconds", total);
    else
        cJSON_AddNullToObject(o, "seconds");
    cJSON *outs = cJSON_AddObjectToObject(o, "outputs");
    for (unsigned b = 0; b < ER_LAYER_COUNT; b++) {
        char path[PATH_MAX];
        if (!(j->s->layers & (1u << b)))
            continue;
        layer_path(j, b, path, sizeof path);
        cJSON_AddStringToObject(outs, er_layer_name(1u << b), path);
    }
    char pre[PATH_MAX];
    if (j->s->preview && er_path_pattern(pre, sizeof pre, j->s->preview, j->name))
        cJSON_AddStringToObject(outs, "preview", pre);
    if (j->ck_path[0])
        cJSON_AddStringToObject(outs, "checkpoint", j->ck_path);
    if (j->s->frames)
        cJSON_AddStringToObject(outs, "frames_dir", j->s->frames);
    return o;
}

static void plan_text(const er_job *j, size_t need, int threads)
{
    printf("%s: %dx%d, %d thread%s, memory %.1f MiB (%zu bytes)\n", j->input, j->img.width,
           j->img.height, threads, threads == 1 ? "" : "s", (double)need / 1048576.0, need);
    for (int k = 0; k < j->plan.n; k++) {
        const bench_rate *r;
        int scaled;
        const double sec = stage_seconds(j, k, threads, &r, &scaled);
        const er_model_ops *m = er_model(j->plan.p[k].model);
        const er_plan *p = &j->plan.plan[k];
        printf("  stage %d: %s, %lld %s", k + 1, m->name, (long long)p->boundaries,
               p->boundaries == 1 ? m->unit : m->units);
        if (stage_work(j, k) != p->boundaries)
            printf(" (%lld %s)", (long long)stage_work(j, k), m->work_key);
        if (p->substeps > 0)
            printf(" of %lld sub-step%s", (long long)p->substeps, p->substeps == 1 ? "" : "s");
        if (sec < 0.0)
            printf(", time unknown (no bench record)\n");
        else
            printf(", about %.3g s on %s, %d thread%s%s (bench commit %s)\n", sec, r->machine,
                   scaled ? threads : r->threads, (scaled ? threads : r->threads) == 1 ? "" : "s",
                   scaled ? ", scaled from its record's" : "", r->commit);
    }
    for (unsigned b = 0; b < ER_LAYER_COUNT; b++) {
        char path[PATH_MAX];
        if (!(j->s->layers & (1u << b)))
            continue;
        layer_path(j, b, path, sizeof path);
        printf("  writes %s\n", path);
    }
    char pre[PATH_MAX];
    if (j->s->preview && er_path_pattern(pre, sizeof pre, j->s->preview, j->name))
        printf("  writes %s (preview)\n", pre);
    if (j->ck_path[0])
        printf("  checkpoint %s (when stopped or every --checkpoint-every)\n", j->ck_path);
    if (j->s->frames)
        printf("  frames in %s\n", j->s->frames);
}

int er_job_plan_report(const er_job *j)
{
    const int threads = run_threads(j->s);
    const size_t need = er_job_memory(j, j->img.width, j->img.height, NULL, 0);
    if (!j->s->json) {
        plan_text(j, need, threads);
        return er_msg_stdout_done("the plan");
    }
    cJSON *o = plan_json(j, need, threads);
    char *line = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!line) {
        er_msg_error("%s: out of memory", j->input);
        return EXIT_RUN_FAILED;
    }
    printf("%s\n", line);
    free(line);
    return er_msg_stdout_done("the plan");
}
