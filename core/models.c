/*
 * The model registry (models.h): the one list of models, and what their
 * ops share.
 */
#include "models.h"

static const er_model_ops *const models[ER_MODEL_KINDS] = {
#define ER_MODEL(id, name) [ER_MODEL_##id] = &er_model_##name,
#include "models.def"
#undef ER_MODEL
};

const er_model_ops *er_model(er_model_kind k)
{
    return (unsigned)k < ER_MODEL_KINDS ? models[k] : NULL;
}

const char *er_model_name(er_model_kind k)
{
    const er_model_ops *m = er_model(k);
    return m ? m->name : "unknown";
}
