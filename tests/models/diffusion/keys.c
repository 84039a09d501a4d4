/* The diffusion model's recipe section (core/keys.h).  Every key takes 0,
 * so that a zeroed section (tests that fill er_params by hand and the
 * checks of every section, er_params_check) is a valid one. */
#include <stddef.h>

#include "../../../core/keys.h"
#include "../../../core/models.h"

#define ER_KEY_BASE er_diffusion_params

static const er_key keys[] = {
    ER_INT("steps", steps, 0, 0, 1e9, 100),
    ER_NUM("dt", dt, 0, 0, 1e9, 1.0),
    ER_NUM("kd", kd, 0, 0, 1e6, 0.1),
};

const er_key *er_diffusion_keys(size_t *n)
{
    *n = sizeof keys / sizeof keys[0];
    return keys;
}
