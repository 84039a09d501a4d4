/*
 * What a run writes: its layers in the input's height units, the
 * --preview picture and the pictures of --frames.  Internal to cli/.
 */
#ifndef ER_CLI_OUTPUTS_H
#define ER_CLI_OUTPUTS_H

#include "job.h"

er_status er_job_write_layers(er_job *j);
er_status er_job_write_preview(er_job *j);
er_status er_job_draw_picture(er_job *j, const float *elev, const float *water, const float *sed,
                              int pair, const char *path);

#endif
