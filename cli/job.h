/*
 * One input's run as the files of cli/ share it: run.c drives the pipeline
 * (read -> resolve -> plan -> choose the backend -> simulate -> write) and
 * calls the others, one concern each.  Internal to cli/.
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

/* run.c: a reading or writing phase's progress bar, "<input>: <what>"
 * (ended by er_progress_end), and the io/ progress callback that moves it
 * (user: the er_job). */
void er_job_phase(er_job *j, const char *what);
void er_job_io_progress(void *user, double fraction);

/* preflight.c: what a run checks before it reads a pixel. */
er_status er_job_check_input(er_job *j);
/* What a path that must be a regular file is instead ("a pipe", ...), or
 * NULL when it is one or does not exist (the reader says so). */
const char *er_not_regular(const char *path);
size_t er_machine_memory(void);
/* Refuses (ER_ENOMEM, before allocating) a width x height run that
 * would not fit in limit bytes (preflight.c). */
er_status er_job_check_memory(er_job *j, int width, int height, size_t limit);

/* terrain.c: the map in the run's units (DESIGN.md §3). */
er_status er_job_resolve_sources(er_job *j);
er_status er_job_resolve_cell_size(er_job *j);
er_status er_job_prepare_terrain(er_job *j);
/* Computes j->initial, the heights before the run, when it is not there
 * (a plain run does not keep it): the run hooks and the preview need it. */
er_status er_job_restore_initial(er_job *j);
/* Fills out (one float a cell) with the heights before the run, computed
 * from the image. */
void er_job_working_heights(const er_job *j, float *out);

/* controls.c: the control rasters the recipe names, read, placed on the
 * input's grid and checked (exit 2 naming the raster). */
er_status er_job_read_controls(er_job *j, size_t limit);

/* hooks.c: progress, frames and checkpoints.  er_job_callbacks fills the
 * progress control and the run hooks, and returns the hooks the run uses
 * (NULL: a plain run). */
er_status er_job_prepare_checkpoint(er_job *j, const er_stages *recipe);
/* With --frames: the last frame's name fits its directory (checked once
 * the plan knows how many boundaries the run has, before any work). */
er_status er_job_check_frames(er_job *j);
const er_run_hooks *er_job_callbacks(er_job *j, er_run_ctl *ctl, er_run_hooks *hooks);

/* backends.c: which backend runs an input; open and close the Vulkan one
 * (exit status 0, or 2 with one error line printed). */
int er_backend_open(const er_settings *s, er_vk_ctx **vk);
int er_backend_close(er_vk_ctx *vk, int status);
/* The Vulkan pipeline cache file a run with these settings may write
 * (--backend vulkan|auto, ERODE_VK_PIPELINE_CACHE, XDG_CACHE_HOME): 1 and
 * path, or 0 when it writes none.  A write target like any output. */
int er_backend_cache_path(const er_settings *s, char *path, size_t n);
er_status er_job_choose_backend(er_job *j, er_vk_ctx *vk);
/* Records the chosen backend in the checkpoint identity and refuses a
 * --resume state written by another backend, device or driver. */
er_status er_job_check_resume_backend(er_job *j);

/* outputs.c: the layers, the preview and the frames' pictures. */
er_status er_job_write_layers(er_job *j);
er_status er_job_write_preview(er_job *j);
er_status er_job_draw_picture(er_job *j, const float *elev, const float *water, const float *sed,
                              int pair, const char *path);

/* report.c: the input's error line and --json summary; returns the exit
 * status, EXIT_RUN_FAILED when the --json line could not be written. */
int er_job_report(er_job *j, er_status st, int status);

#endif
