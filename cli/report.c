/* What a run reports: its one error line and the --json summary. */
#include "report.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A layer's path under its name; a RAW layer's sidecar ("<file>.json",
 * io/raw_write.c) under "<layer>_sidecar". */
static void add_output(cJSON *outs, const char *layer, const char *path)
{
    size_t n = strlen(path);
    cJSON_AddStringToObject(outs, layer, path);
    if (n > 4 && (strcmp(path + n - 4, ".r16") == 0 || strcmp(path + n - 4, ".r32") == 0)) {
        char key[64], side[PATH_MAX + 8];
        snprintf(key, sizeof key, "%s_sidecar", layer);
        snprintf(side, sizeof side, "%s.json", path);
        cJSON_AddStringToObject(outs, key, side);
    }
}

/* A budget's members in m³ (area: a cell's, m²). */
static void add_budget(cJSON *bud, const er_budget *b, double area)
{
    cJSON_AddStringToObject(bud, "unit", "m3");
    cJSON_AddNumberToObject(bud, "material_before", b->material_before * area);
    cJSON_AddNumberToObject(bud, "material_after", b->material_after * area);
    cJSON_AddNumberToObject(bud, "left_map", b->left_map * area);
    cJSON_AddNumberToObject(bud, "eroded", b->eroded * area);
    cJSON_AddNumberToObject(bud, "deposited", b->deposited * area);
    cJSON_AddNumberToObject(bud, "water_added", b->water_added * area);
    cJSON_AddNumberToObject(bud, "water_left", b->water_left * area);
    for (int i = 0; i < ER_BUDGET_TERMS && b->term[i].name[0]; i++)
        cJSON_AddNumberToObject(bud, b->term[i].name, b->term[i].value * area);
    cJSON_AddNumberToObject(bud, "relative_error", b->rel_error);
}

/* [s] Stage k's time in this process: from its start to the next one's
 * (or the run's end); NULL (JSON null) for a stage a --resume passed. */
static cJSON *stage_seconds(const er_job *j, int k)
{
    if (!(j->stage_began[k] > 0))
        return cJSON_CreateNull();
    double end = k + 1 < j->rc.n && j->stage_began[k + 1] > 0 ? j->stage_began[k + 1]
                                                               : j->stages_ended;
    return cJSON_CreateNumber(end - j->stage_began[k]);
}

/* "stages": each stage that ran, its model, backend, work, time and budget. */
static void add_stages(cJSON *o, const er_job *j, double area)
{
    cJSON *arr = cJSON_AddArrayToObject(o, "stages");
    double dropped = 0;
    for (int k = 0; k < j->rc.n && arr; k++) {
        const er_stage_report *r = &j->reports[k];
        const er_model_ops *m = er_model(j->rc.stage[k].model);
        if (!r->ran)
            break;
        cJSON *e = cJSON_CreateObject();
        if (!e)
            return;
        cJSON_AddItemToArray(arr, e);
        cJSON_AddStringToObject(e, "model", m->name);
        cJSON_AddNumberToObject(e, "eroded", r->budget.eroded * area);
        cJSON_AddNumberToObject(e, "deposited", r->budget.deposited * area);
        cJSON_AddNumberToObject(e, "changed_cells", (double)r->changed_cells);
        cJSON_AddStringToObject(e, "backend", j->where[k].be ? j->where[k].be->name : "cpu");
        cJSON_AddNumberToObject(e, m->work_key, (double)r->budget.work_done);
        cJSON_AddNumberToObject(e, m->substep_key, (double)r->budget.substeps);
        cJSON_AddItemToObject(e, "seconds", stage_seconds(j, k));
        cJSON_AddNumberToObject(e, "settled", r->settled * area);
        cJSON_AddNumberToObject(e, "water_dropped", r->water_dropped * area);
        add_budget(cJSON_AddObjectToObject(e, "budget"), &r->budget, area);
        dropped += r->water_dropped;
    }
    cJSON *bud = cJSON_GetObjectItemCaseSensitive(o, "budget");
    if (bud)
        cJSON_AddNumberToObject(bud, "water_dropped", dropped * area);
}

/* The models a run ran, in order, into o's "model": an array whatever
 * their number, one type for jq (erode(1) JSON OUTPUT); the backends into
 * `backends`, one name when all are alike, else theirs in order
 * ("cpu,vulkan"). */
static void run_names(cJSON *o, const er_job *j, char *backends, size_t n)
{
    cJSON *models = cJSON_AddArrayToObject(o, "model");
    backends[0] = '\0';
    int same = 1;
    for (int k = 0; k < er_stages_count(&j->rc); k++) {
        const char *be = j->where[k].be ? j->where[k].be->name : "cpu";
        if (models)
            cJSON_AddItemToArray(models,
                                 cJSON_CreateString(er_model_name(er_stages_at(&j->rc, k)->model)));
        same &= k == 0 || strcmp(be, j->where[0].be ? j->where[0].be->name : "cpu") == 0;
        snprintf(backends + strlen(backends), n - strlen(backends), "%s%s", k ? "," : "", be);
    }
    if (same)
        snprintf(backends, n, "%s", j->where[0].be ? j->where[0].be->name : "cpu");
}

/* Returns 0, or 1 when standard output could not take the line (closed,
 * full, a broken pipe): a pipeline that lost its summary must know. */
static int print_json(const er_job *j, int status)
{
    char backends[256];
    cJSON *o = cJSON_CreateObject();
    double area = j->terrain.cell_x * j->terrain.cell_y;
    cJSON_AddStringToObject(o, "input", j->input);
    cJSON_AddStringToObject(o, "status", status == 0 ? "ok" : "error");
    cJSON_AddNumberToObject(o, "exit", status);
    if (status != 0)
        cJSON_AddStringToObject(o, "error", j->err.msg);
    cJSON *outs = cJSON_AddObjectToObject(o, "outputs");
    for (unsigned b = 0; b < ER_LAYER_COUNT; b++)
        if (j->written & (1u << b))
            add_output(outs, er_layer_name(1u << b), j->outputs[b]);
    if (j->preview[0])
        cJSON_AddStringToObject(outs, "preview", j->preview);
    const er_model_ops *m = er_model(j->rc.top.model);
    run_names(o, j, backends, sizeof backends);
    if (j->s->frames)
        cJSON_AddNumberToObject(o, "frames", (double)j->frames);
    if (j->resumed.buf)
        cJSON_AddNumberToObject(o, "resumed_at", (double)j->first_boundary);
    cJSON_AddStringToObject(o, "backend", backends);
    cJSON_AddNumberToObject(o, "seconds", j->seconds);
    cJSON *tm = cJSON_AddObjectToObject(o, "timing");
    cJSON_AddNumberToObject(tm, "read", j->t_read);
    cJSON_AddNumberToObject(tm, "prepare", j->t_prepare);
    cJSON_AddNumberToObject(tm, "model", j->t_model);
    cJSON_AddNumberToObject(tm, "write", j->t_write);
    cJSON_AddNumberToObject(o, "width", j->img.width);
    cJSON_AddNumberToObject(o, "height", j->img.height);
    cJSON_AddNumberToObject(o, "cell_x", j->terrain.cell_x);
    cJSON_AddNumberToObject(o, "cell_y", j->terrain.cell_y);
    if (j->rc.n == 0) {
        cJSON_AddNumberToObject(o, m->work_key, (double)j->budget.work_done);
        cJSON_AddNumberToObject(o, m->substep_key, (double)j->budget.substeps);
    }
    add_budget(cJSON_AddObjectToObject(o, "budget"), &j->budget, area);
    if (j->rc.n > 0)
        add_stages(o, j, area);
    char *text = cJSON_PrintUnformatted(o);
    int failed = !text || puts(text) == EOF;
    failed |= fflush(stdout) != 0;
    if (failed)
        er_msg_error("%s: cannot write the --json line to standard output: %s", j->input,
                     text ? strerror(errno) : "out of memory");
    free(text);
    cJSON_Delete(o);
    return failed;
}

int er_job_report(er_job *j, er_status st, int status)
{
    if (st == ER_ECANCELED && j->saved_at >= 0 && j->saved_stage >= 0)
        er_fail(&j->err, st, "%s: interrupted in stage %d/%d (%s) at %s %lld; state saved in "
                "'%s' (continue with --resume)", j->input, j->saved_stage + 1, j->rc.n,
                er_model_name(j->rc.stage[j->saved_stage].model),
                er_model(j->rc.stage[j->saved_stage].model)->unit, (long long)j->saved_at,
                j->ck_path);
    else if (st == ER_ECANCELED && j->saved_at >= 0)
        er_fail(&j->err, st, "%s: interrupted at %s %lld; state saved in '%s' (continue with --resume)",
                j->input, er_model(j->rc.top.model)->unit,
                (long long)j->saved_at, j->ck_path);
    if (st != ER_OK) {
        j->written = 0; /* for --json: no output of this input exists */
        j->preview[0] = '\0';
        er_msg_error("%s", j->err.msg);
    }
    if (j->s->json && print_json(j, status) && status == 0)
        status = EXIT_RUN_FAILED;
    return status;
}
