/* What a run reports: its one error line and the --json summary. */
#include "job.h"

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

/* Returns 0, or 1 when standard output could not take the line (closed,
 * full, a broken pipe): a pipeline that lost its summary must know. */
static int print_json(const er_job *j, int status)
{
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
    const er_model_ops *m = er_model(j->params.model);
    cJSON_AddStringToObject(o, "model", m->name);
    if (j->s->frames)
        cJSON_AddNumberToObject(o, "frames", (double)j->frames);
    if (j->resumed.buf)
        cJSON_AddNumberToObject(o, "resumed_at", (double)j->first_boundary);
    cJSON_AddStringToObject(o, "backend", j->be ? j->be->name : "cpu");
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
    cJSON_AddNumberToObject(o, m->work_key, (double)j->budget.work_done);
    cJSON_AddNumberToObject(o, m->substep_key, (double)j->budget.substeps);
    cJSON *bud = cJSON_AddObjectToObject(o, "budget");
    cJSON_AddStringToObject(bud, "unit", "m3");
    cJSON_AddNumberToObject(bud, "material_before", j->budget.material_before * area);
    cJSON_AddNumberToObject(bud, "material_after", j->budget.material_after * area);
    cJSON_AddNumberToObject(bud, "left_map", j->budget.left_map * area);
    cJSON_AddNumberToObject(bud, "eroded", j->budget.eroded * area);
    cJSON_AddNumberToObject(bud, "deposited", j->budget.deposited * area);
    cJSON_AddNumberToObject(bud, "water_added", j->budget.water_added * area);
    cJSON_AddNumberToObject(bud, "water_left", j->budget.water_left * area);
    if (m->added_key)
        cJSON_AddNumberToObject(bud, m->added_key, j->budget.added * area);
    if (m->reports_withheld && m->reports_withheld(&j->params))
        cJSON_AddNumberToObject(bud, "withheld", j->budget.withheld * area);
    cJSON_AddNumberToObject(bud, "relative_error", j->budget.rel_error);
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
    if (st == ER_ECANCELED && j->saved_at >= 0)
        er_fail(&j->err, st, "%s: interrupted at %s %lld; state saved in '%s' (continue with --resume)",
                j->input, er_model(j->params.model)->unit,
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
