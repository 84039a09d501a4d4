/*
 * Run states (core/model.h): the layers a state view stands for, for
 * time-lapse frames drawn while a run goes on.
 */
#include <string.h>

#include "model.h"
#include "parallel.h"

/* A value as the models write it out: finite, else 0. */
static inline float finite_or_0(float v)
{
    union { float f; uint32_t u; } c = { v };
    return (c.u & 0x7f800000u) != 0x7f800000u ? v : 0.0f;
}

void er_run_state_layers(const er_run_state *state, const float *input, const uint8_t *wall,
                         float *height, float *water, float *sediment)
{
    const int w = state->width, h = state->height;
    const size_t n = (size_t)w * (size_t)h;
    if (state->model == ER_MODEL_MEI) {
        const float *z = state->array[ER_STATE_MEI_Z];
        const float *d = state->array[ER_STATE_MEI_D];
        const float *s = state->array[ER_STATE_MEI_S];
        ER_OMP_FOR()
        for (int y = 0; y < h; y++) {
            size_t i0 = (size_t)y * (size_t)w, i1 = i0 + (size_t)w;
            for (size_t i = i0; i < i1; i++) {
                /* the same sum as the model's copy-out: b0 + z, b0 kept
                 * on walls and where z is 0 (so -0 stays -0) */
                if (height) {
                    float zz = wall && wall[i] ? 0.0f : finite_or_0(z[i]);
                    height[i] = zz != 0.0f ? input[i] + zz : input[i];
                }
                if (water)
                    water[i] = finite_or_0(d[i]);
                if (sediment)
                    sediment[i] = finite_or_0(s[i]);
            }
        }
        return;
    }
    const float *src[3] = { state->array[ER_STATE_DROP_HEIGHT], state->array[ER_STATE_DROP_FLOW],
                            state->array[ER_STATE_DROP_DEPOSIT] };
    float *dst[3] = { height, water, sediment };
    for (int k = 0; k < 3; k++) {
        if (!dst[k])
            continue;
        if (src[k])
            memcpy(dst[k], src[k], n * sizeof(float));
        else
            memset(dst[k], 0, n * sizeof(float));
    }
}
