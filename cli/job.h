/*
 * One input's run as the files of cli/ share it: run.c drives the pipeline
 * (read -> resolve -> plan -> choose the backend -> simulate -> write) and
 * calls the others, one concern each, each declared in its own header
 * (preflight.h, terrain.h, controls.h, hooks.h, backends.h, outputs.h,
 * report.h, progress.h).  None of them calls run.c.  Internal to cli/.
 */
#ifndef ER_CLI_JOB_H
#define ER_CLI_JOB_H

#include <limits.h>
#include <stdint.h>

#include "../core/backend.h"
#include "../core/models.h"
#include "../core/plan.h"
#include "../core/stages.h"
#include "../io/checkpoint.h"
#include "../io/image.h"
#include "msg.h"
#include "options.h"

enum { EXIT_RUN_FAILED = 1, EXIT_USAGE = 2 };

/* The control maps a stage may read (core/controls.h), and the most
 * rasters a job reads (each path once, whichever stages name it). */
#define ER_JOB_MAPS 5
#define ER_JOB_RASTERS (ER_JOB_MAPS * ER_MAX_STAGES)

/* Everything one input's run owns. */
typedef struct er_job {
    const er_settings *s;
    const char *input;
    const char *name;          /* what its outputs are named after (er_path_name) */
    er_stages rc;              /* the recipe with map coordinates resolved */
    er_image img;
    er_window window;          /* --tile-set: where img lies in the mosaic */
    int windowed;              /* 1: a tile with its halo (window valid) */
    er_terrain terrain;
    /* The control rasters read, each cut to the input's window (paths
     * point into rc), and each stage's maps among them (NULL: none). */
    int n_rasters;
    const char *raster_path[ER_JOB_RASTERS];
    float *raster[ER_JOB_RASTERS];
    er_controls controls[ER_MAX_STAGES];
    const er_controls *stage_controls[ER_MAX_STAGES];
    er_staged_plan plan;       /* the run, checked before any work */
    er_stage_backend where[ER_MAX_STAGES]; /* each stage's backend: er_backend_cpu, or
                                * er_backend_vulkan with its er_vk_ctx */
    er_stage_report reports[ER_MAX_STAGES]; /* with stages, each one's (--json) */
    float *initial;            /* working heights before the run (erosion/deposit layers) */
    float *water, *sediment;
    float *flow, *wear;        /* --layers flow, wear; NULL when not asked */
    er_budget budget;
    er_progress progress;
    char phase[PATH_MAX + 32]; /* the bar's label while reading or writing */
    char outputs[ER_LAYER_COUNT][PATH_MAX];
    unsigned written;          /* layers committed */
    char preview[PATH_MAX];    /* written preview, "" if none */
    double seconds;
    double t_read, t_prepare, t_model, t_write; /* --json "timing" [s] */
    /* [s] (er_msg_now) when each stage began in this process, 0 for one it
     * did not begin (a --resume past it), and when the last one ended:
     * each stage's --json "seconds" */
    double stage_began[ER_MAX_STAGES], stages_ended;
    er_error err;
    /* checkpoints and frames */
    er_checkpoint_id ck_id;    /* what a checkpoint of this run must match */
    char ck_path[PATH_MAX];    /* --checkpoint for this input, "" if none */
    er_checkpoint resumed;     /* the --resume state, if any */
    int64_t first_boundary;    /* where this process started (0, or the resumed one),
                                * counted over all the stages */
    int64_t frames;            /* frames written */
    int64_t saved_at;          /* boundary of the last checkpoint saved (its stage's); -1 none */
    int saved_stage;           /* the stage it lies in; -1: a run of one model */
    er_status hook_status;     /* a checkpoint or frame that could not be written */
    er_error hook_err;
} er_job;

#endif
