/*
 * The model registry (models.h): the one list of models, and what their
 * ops share.
 */
#include "models.h"

static const er_model_ops *const models[ER_MODEL_KINDS] = {
    [ER_MODEL_MEI] = &er_model_mei,
    [ER_MODEL_DROPLET] = &er_model_droplet,
    [ER_MODEL_SPH] = &er_model_sph,
    [ER_MODEL_STREAM_POWER] = &er_model_stream_power,
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
