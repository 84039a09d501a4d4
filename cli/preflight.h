/*
 * Checks before any work: the output directories, the tile set, the
 * input's kind and the memory a run needs.  Internal to cli/.
 */
#ifndef ER_CLI_PREFLIGHT_H
#define ER_CLI_PREFLIGHT_H

#include <stddef.h>
#include "../core/stages.h"
#include "job.h"
#include "options.h"

/* Checks what can be checked before any work (output directory, output
 * names); returns 0 or exit status 2 after printing one error line. */
int er_preflight_check(const er_settings *s, const er_stages *recipe);

/* The input is a regular file (or missing: the reader says so). */
er_status er_job_check_input(er_job *j);

/* What a path that must be a regular file is instead ("a pipe", ...), or
 * NULL when it is one or does not exist (the reader says so). */
const char *er_not_regular(const char *path);

/* The machine's physical memory [bytes], SIZE_MAX when unknown. */
size_t er_machine_memory(void);

/* The peak resident size [bytes] of a width x height run of the job,
 * what --max-memory compares and --plan reports; once the job is planned
 * it counts what the map's shape adds.  what[n]: what the part whatever
 * the map's size holds ("" for none).  SIZE_MAX past a size_t. */
size_t er_job_memory(const er_job *j, int width, int height, char *what, size_t n);

/* Refuses (ER_ENOMEM, before allocating) a width x height run that
 * would not fit in limit bytes: called before the map is read and again
 * once it is planned. */
er_status er_job_check_memory(er_job *j, int width, int height, size_t limit);

#endif
