/*
 * Processing of the inputs: per input read -> resolve the recipe against the
 * map -> simulate -> write the layers (erode(1) DESCRIPTION and FILES).
 */
#ifndef ER_RUN_H
#define ER_RUN_H

#include "../core/stages.h"
#include "options.h"

/* Processes every input independently; returns the worst exit status. */
int er_run_all(const er_settings *s, const er_stages *recipe);

#endif
