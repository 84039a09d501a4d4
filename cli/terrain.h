/*
 * The map in the run's units (erode-recipe(5) "Units"): cell size, map
 * coordinates of sources, working heights and the layers the run keeps.
 * Internal to cli/.
 */
#ifndef ER_CLI_TERRAIN_H
#define ER_CLI_TERRAIN_H

#include "job.h"

er_status er_job_resolve_sources(er_job *j);
er_status er_job_resolve_cell_size(er_job *j);
er_status er_job_prepare_terrain(er_job *j);

/* Computes j->initial, the heights before the run, when it is not there
 * (a plain run does not keep it): the run hooks and the preview need it. */
er_status er_job_restore_initial(er_job *j);

/* Fills out (one float a cell) with the heights before the run, computed
 * from the image. */
void er_job_working_heights(const er_job *j, float *out);

#endif
