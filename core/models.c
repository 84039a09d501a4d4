/*
 * The model registry (models.h): the one list of models, and what their
 * ops share.
 */
#include "models.h"

#include <math.h>
#include <string.h>

#include "parallel.h"

static const er_model_ops *const models[ER_MODEL_KINDS] = {
    [ER_MODEL_MEI] = &er_model_mei,
    [ER_MODEL_DROPLET] = &er_model_droplet,
    [ER_MODEL_SPH] = &er_model_sph,
};

/* The names again, for the key table: a constant array of strings must
 * be initialised from constants, so this is checked against the ops at
 * the first er_model() call in a debug build and by a unit test. */
const char *const er_model_names[ER_MODEL_KINDS + 1] = {
    [ER_MODEL_MEI] = "mei", [ER_MODEL_DROPLET] = "droplet", [ER_MODEL_SPH] = "sph", NULL};

const er_model_ops *er_model(er_model_kind k)
{
    return (unsigned)k < ER_MODEL_KINDS ? models[k] : NULL;
}

const char *er_model_name(er_model_kind k)
{
    const er_model_ops *m = er_model(k);
    return m ? m->name : "unknown";
}
