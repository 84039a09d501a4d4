/*
 * Run states (core/model.h): the layers a state view stands for, for
 * time-lapse frames drawn while a run goes on, and the checks every
 * model's resume shares (core/models.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models.h"

void er_run_state_layers(const er_run_state *state, const float *input, const uint8_t *wall,
                         float *height, float *water, float *sediment)
{
    if (state->stage && state->stage->array[0])
        input = state->stage->array[0];
    er_model(state->model)->state_layers(state, input, wall, height, water, sediment);
}

void er_state_layers_copy(const er_run_state *s, const float *input, const uint8_t *wall,
                          float *height, float *water, float *sediment)
{
    const size_t n = (size_t)s->width * (size_t)s->height;
    float *dst[3] = {height, water, sediment};
    (void)input;
    (void)wall;
    for (int k = 0; k < 3; k++) {
        if (!dst[k])
            continue;
        if (k < s->n_arrays && s->array[k])
            memcpy(dst[k], s->array[k], n * sizeof(float));
        else
            memset(dst[k], 0, n * sizeof(float));
    }
}

/* The index of b's term `name`, or -1. */
static int find_term(const er_budget *b, const char *name)
{
    for (int i = 0; i < ER_BUDGET_TERMS && b->term[i].name[0]; i++)
        if (strncmp(b->term[i].name, name, ER_TERM_NAME) == 0)
            return i;
    return -1;
}

double *er_budget_term(er_budget *b, const char *name)
{
    const int k = find_term(b, name);
    if (k >= 0)
        return &b->term[k].value;
    for (int i = 0; i < ER_BUDGET_TERMS; i++)
        if (!b->term[i].name[0]) {
            snprintf(b->term[i].name, ER_TERM_NAME, "%s", name);
            b->term[i].value = 0.0;
            return &b->term[i].value;
        }
    return NULL;
}

double er_budget_term_value(const er_budget *b, const char *name)
{
    const int k = find_term(b, name);
    return k >= 0 ? b->term[k].value : 0.0;
}

int er_budget_has_term(const er_budget *b, const char *name)
{
    return find_term(b, name) >= 0;
}

double er_budget_terms_sum(const er_budget *b)
{
    double sum = 0.0;
    for (int i = 0; i < ER_BUDGET_TERMS && b->term[i].name[0]; i++)
        sum += b->term[i].value;
    return sum;
}

void er_budget_add_terms(er_budget *to, const er_budget *from)
{
    for (int i = 0; i < ER_BUDGET_TERMS && from->term[i].name[0]; i++) {
        double *v = er_budget_term(to, from->term[i].name);
        if (v)
            *v += from->term[i].value;
    }
}

double er_budget_rel_error(const er_budget *b, double abs_sum)
{
    const double miss = fabs(b->material_before + er_budget_terms_sum(b) - b->material_after -
                             b->left_map);
    double scale = b->eroded + b->deposited + 0x1p-24 * fabs(abs_sum);
    for (int i = 0; i < ER_BUDGET_TERMS && b->term[i].name[0]; i++)
        scale += fabs(b->term[i].value);
    if (!(scale > 0.0))
        return miss > 0.0 ? 1.0 : 0.0;
    return miss / scale;
}

er_status er_budget_check(const er_model_ops *m, const er_budget *b, er_error *err)
{
    if (!(m->budget_tol > 0.0) || b->rel_error <= m->budget_tol)
        return ER_OK;
    return er_fail(err, ER_ENUMERIC, "%s: material budget misses by %.3g of the material moved "
                   "(tolerance %.3g)", m->name, b->rel_error, m->budget_tol);
}

int64_t er_first_nonfinite(const float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return i;
    return -1;
}

er_status er_state_check_fit(const er_plan *plan, const er_run_state *r, int64_t done,
                             int64_t total, er_error *err)
{
    const er_model_ops *m = er_model(plan->p.model);
    if (r->model != plan->p.model)
        return er_fail(err, ER_EINVAL, "the state is not from a %s run", m->name);
    if (r->width != plan->width || r->height != plan->height)
        return er_fail(err, ER_EINVAL, "the state is %dx%d, the map %dx%d", r->width,
                       r->height, plan->width, plan->height);
    if (r->boundaries != plan->boundaries || r->total != total || r->boundary < 0 ||
        r->boundary > plan->boundaries || r->done != done)
        return er_fail(err, ER_EINVAL, "the state (%s %lld of %lld, %lld of %lld %s) does not "
                       "fit this run of %lld %s", m->unit, (long long)r->boundary,
                       (long long)r->boundaries, (long long)r->done, (long long)r->total,
                       m->work_key, (long long)plan->boundaries, m->units);
    return ER_OK;
}

int er_extra_split(const er_run_extra *x, const size_t *len, int k, const double **out)
{
    int part = 0;
    size_t at = 0; /* doubles of the current part already taken */
    for (int i = 0; i < k; i++) {
        while (part < x->n_parts && at == x->len[part] && len[i] > 0) {
            part++;
            at = 0;
        }
        if (len[i] == 0) {
            out[i] = NULL;
            continue;
        }
        if (part >= x->n_parts || x->len[part] - at < len[i] || !x->part[part])
            return -1;
        out[i] = x->part[part] + at;
        at += len[i];
    }
    /* nothing left over */
    while (part < x->n_parts && at == x->len[part]) {
        part++;
        at = 0;
    }
    return part == x->n_parts ? 0 : -1;
}

er_height_range er_plan_heights(const er_plan *plan)
{
    return (er_height_range){plan->lo, plan->hi, plan->sum};
}

void er_height_bound(const er_plan *plan, const er_controls *c, er_height_range *r)
{
    const er_model_ops *m = er_model(plan->p.model);
    if (m->height_bound)
        m->height_bound(plan, c, r);
    else
        *r = (er_height_range){-HUGE_VAL, HUGE_VAL, HUGE_VAL};
}

void er_height_bound_moved(const er_plan *plan, er_height_range *r, double below, double added)
{
    r->lo -= below;
    r->sum += added;
    const double hi = r->sum - (double)(plan->valid - 1) * r->lo;
    r->hi = hi > r->hi ? hi : r->hi;
}

double er_height_slack(const er_height_range *r, double ops, double eps)
{
    return ops * eps * fmax(fmax(fabs(r->lo), fabs(r->hi)), 1.0);
}

/* The value of v at cell i. */
static double value_at(const er_state_values *v, size_t i)
{
    double x = (v->f ? (double)v->f[i] : v->d[i]) * (v->scale != 0.0 ? v->scale : 1.0);
    return v->base ? (double)v->base[i] + x : x;
}

er_status er_state_check_values(const er_terrain *t, const er_state_values *v, er_error *err)
{
    const size_t n = (size_t)t->width * (size_t)t->height;
    for (size_t i = 0; i < n; i++) {
        if (t->wall && t->wall[i])
            continue;
        const double x = value_at(v, i);
        if (!(isfinite(x) && x >= v->lo && x <= v->hi))
            return er_fail(err, ER_EINVAL, "the state's %s %g at cell (%zu, %zu) is not a "
                           "finite value in [%g, %g]", v->what, x, i % (size_t)t->width,
                           i / (size_t)t->width, v->lo, v->hi);
    }
    return ER_OK;
}

er_status er_state_check_list(const double *v, int64_t n, double lo, double hi,
                              const char *what, er_error *err)
{
    for (int64_t i = 0; i < n; i++)
        if (!(isfinite(v[i]) && v[i] >= lo && v[i] <= hi))
            return er_fail(err, ER_EINVAL, "the state's %s %lld (%g) is not a finite value in "
                           "[%g, %g]", what, (long long)i, v[i], lo, hi);
    return ER_OK;
}
