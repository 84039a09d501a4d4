/*
 * Control rasters (core/controls.h, erode(1) CONTROL MAPS) on the command
 * line.  Internal to cli/.
 */
#ifndef ER_CLI_CONTROLS_H
#define ER_CLI_CONTROLS_H

#include <stddef.h>
#include "job.h"

/* Reads the control rasters the recipe names, places them on the input's
 * grid and checks them (exit 2 naming the raster). */
er_status er_job_read_controls(er_job *j, size_t limit);

#endif
