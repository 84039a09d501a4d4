/*
 * Staged recipes and runs (stages.h).
 */
#include "stages.h"

#include <stdio.h>
#include <string.h>

#include "models.h"

void er_stages_single(er_stages *r, const er_params *p)
{
    memset(r, 0, sizeof *r);
    r->top = *p;
}

int er_stage_holds_section(er_model_kind m, er_model_kind section)
{
    return m == section;
}

void er_stages_name_error(const er_stages *r, int k, er_error *err)
{
    char msg[ER_ERROR_MAX];
    if (!err || r->n == 0)
        return;
    snprintf(msg, sizeof msg, "%s", err->msg);
    er_fail(err, ER_EINVAL, er_error_names_key(msg) ? "stages[%d].%s" : "stages[%d]: %s", k, msg);
}

er_status er_stages_check(const er_stages *r, int tiled, er_error *err)
{
    for (int k = 0; k < er_stages_count(r); k++) {
        const er_params *p = er_stages_at(r, k);
        const er_model_ops *m = er_model(p->model);
        er_status st = m && m->check ? m->check(p, tiled, err) : ER_OK;
        if (st) {
            er_stages_name_error(r, k, err);
            return st;
        }
    }
    return ER_OK;
}
