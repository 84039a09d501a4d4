#include "run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../io/atomic.h"
#include "backends.h"
#include "controls.h"
#include "hooks.h"
#include "job.h"
#include "outputs.h"
#include "paths.h"
#include "plan.h"
#include "preflight.h"
#include "progress.h"
#include "report.h"
#include "signals.h"
#include "terrain.h"
#include "tiles.h"

/* Exit status for a failure, by where it happened (erode(1) EXIT STATUS):
 * before the simulation everything is an input or usage error (2); once
 * started, a failure is a run failure (1). */
static int exit_for(er_status st, int started)
{
    if (st == ER_ECANCELED)
        return 128 + (er_stop_signal ? (int)er_stop_signal : SIGINT);
    if (!started)
        return EXIT_USAGE;
    return EXIT_RUN_FAILED;
}

static void job_free(er_job *j)
{
    er_checkpoint_free(&j->resumed);
    er_image_free(&j->img);
    free(j->terrain.elevation);
    free(j->initial);
    free(j->water);
    free(j->sediment);
    free(j->flow);
    free(j->wear);
    for (int r = 0; r < j->n_rasters; r++)
        free(j->raster[r]);
}

/* The run plan (core/plan.h): every recipe and input check that needs no
 * work, before any output is opened; a failure is exit 2. */
static er_status plan_run(er_job *j)
{
    er_error e = {{0}};
    er_status st = er_stages_plan(&j->rc, &j->terrain, j->stage_controls,
                                  j->windowed ? &j->window : NULL, &j->plan, &e);
    if (st == ER_OK) {
        for (int k = 0; k < j->plan.n; k++) {
            if (!j->plan.plan[k].warning[0])
                continue;
            if (j->plan.staged)
                er_msg_error("%s: warning: stages[%d]: %s", j->input, k, j->plan.plan[k].warning);
            else
                er_msg_error("%s: warning: %s", j->input, j->plan.plan[k].warning);
        }
        return ER_OK;
    }
    /* a recipe key's error: "INPUT: RECIPE: KEY: what" (erode(1) FILES) */
    if (er_error_names_key(e.msg))
        return er_fail(&j->err, st, "%s: %s: %s", j->input,
                       j->s->recipe_path ? j->s->recipe_path : "recipe", e.msg);
    return er_fail(&j->err, st, "%s: %s", j->input, e.msg);
}

/* Another erode is replacing an output set in `dir`: say so on a terminal
 * (once), and give up when a signal came. */
static int wait_for_lock(void *user, const char *dir, int first)
{
    const er_job *j = user;
    if (first && isatty(STDERR_FILENO))
        er_msg_error("%s: waiting for another erode writing to '%s'", j->input, dir);
    return er_stop_signal != 0;
}

/* Whether the error line already starts with the input's name. */
static int names_input(const er_job *j)
{
    size_t n = strlen(j->input);
    return strncmp(j->err.msg, j->input, n) == 0 && j->err.msg[n] == ':';
}

/* Reads the input, or with --tile-set the tile and its halo: the window's
 * size follows from the tile set, so the memory its run needs is checked
 * before the window is allocated (a plain input's after its header, by
 * the reader's own limit and then prepare()). */
static er_status read_input(er_job *j, size_t limit)
{
    const er_settings *s = j->s;
    er_read_opts ro = {.band = s->band, .max_bytes = limit};
    er_io_progress pg = {er_job_io_progress, j};
    er_status st = er_job_check_input(j);
    if (st != ER_OK)
        return st;
    if (s->tiles) {
        const int k = er_tile_set_find(s->tiles, j->input);
        er_window win;
        int w, h;
        er_mosaic_window(&s->tiles->place[k], s->halo, s->tiles->world_w, s->tiles->world_h,
                         &win, &w, &h);
        if ((st = er_job_check_memory(j, w, h, limit)) != ER_OK)
            return st;
        er_job_phase(j, "reading");
        j->windowed = 1;
        st = er_tile_window_read(s->tiles, k, s->halo, &ro, &pg, &j->img, &j->window, &j->err);
    } else {
        er_job_phase(j, "reading");
        st = er_image_read_progress(j->input, &ro, &pg, &j->img, &j->err);
    }
    er_progress_end(&j->progress);
    if (st == ER_OK)
        er_georef_drop_statistics(&j->img.georef);
    return st;
}

/* Everything before any work: the recipe resolved against the map, the
 * memory it needs, the working heights, the plan, the checkpoint and the
 * backend.  A failure here is exit 2. */
static er_status prepare(er_job *j, const er_stages *recipe, size_t limit, er_vk_ctx *vk)
{
    double t0 = er_msg_now();
    er_status st = read_input(j, limit);
    j->t_read = er_msg_now() - t0;
    if (st == ER_OK)
        st = er_job_resolve_sources(j);
    if (st == ER_OK)
        st = er_job_resolve_cell_size(j);
    if (st == ER_OK)
        st = er_job_check_memory(j, j->img.width, j->img.height, limit);
    if (st == ER_OK)
        st = er_job_prepare_terrain(j);
    if (st == ER_OK)
        st = er_job_read_controls(j, limit);
    if (st == ER_OK)
        st = plan_run(j);
    if (st == ER_OK) /* again with what the map's shape adds (core/plan.h bytes_map) */
        st = er_job_check_memory(j, j->img.width, j->img.height, limit);
    if (st == ER_OK)
        st = er_job_check_frames(j);
    if (st == ER_OK)
        st = er_job_prepare_checkpoint(j, recipe);
    if (st == ER_OK)
        st = er_job_choose_backend(j, vk);
    if (st == ER_OK)
        st = er_job_check_resume_backend(j);
    j->t_prepare = er_msg_now() - t0 - j->t_read;
    return st;
}

/* Before stage k of n: the progress starts again (er_job_model_phase). */
static void stage_begins(void *user, int k, int n)
{
    er_job *j = user;
    j->stage_began[k] = er_msg_now();
    er_progress_end(&j->progress);
    er_job_model_phase(j, k, n);
}

static er_status simulate(er_job *j)
{
    er_layers layers = {j->water, j->sediment, j->flow, j->wear};
    er_run_ctl ctl;
    er_run_hooks hooks;
    const er_run_hooks *used = er_job_callbacks(j, &ctl, &hooks);
    er_stages_opts o = {&layers, &ctl, stage_begins, used, &j->budget, j->reports};
    memset(&j->budget, 0, sizeof j->budget);
    if (!j->plan.staged)
        er_job_model_phase(j, 0, 0);
    er_status st = er_stages_run(&j->plan, j->where, &j->terrain, &o, &j->err);
    j->stages_ended = er_msg_now();
    er_progress_end(&j->progress);
    if (st == ER_ECANCELED && j->hook_status != ER_OK) {
        st = j->hook_status;
        j->err = j->hook_err;
    }
    if (st == ER_ECANCELED && er_stop_signal) {
        char where[sizeof j->err.msg];
        snprintf(where, sizeof where, "%s", j->err.msg);
        er_fail(&j->err, st, "%s: interrupted by %s (%s); no output written", j->input,
                er_signal_name((int)er_stop_signal), where);
    } else if (st != ER_OK && !names_input(j)) {
        er_error_prefix(&j->err, j->input);
    }
    return st;
}

/* The layers and the preview replace their final names together, once
 * all are written (io/atomic.h output sets). */
static er_status write_outputs(er_job *j, er_status st)
{
    er_atomic_set_begin();
    if (st == ER_OK)
        st = er_job_write_layers(j);
    if (st == ER_OK && j->s->preview)
        st = er_job_write_preview(j);
    /* A signal that came while the files were written: the previous
     * outputs stay as they were (exit 130/143). */
    if (st == ER_OK && er_stop_signal)
        st = er_fail(&j->err, ER_ECANCELED, "%s: interrupted before its outputs replaced the "
                     "previous ones", j->input);
    if (st == ER_OK)
        st = er_atomic_set_commit(wait_for_lock, j, &j->err);
    else
        er_atomic_set_abort();
    /* Every output is in place: the checkpoint has served (a farm wants a
     * clean directory).  A --resume file of another name is the user's. */
    if (st == ER_OK && j->ck_path[0] && unlink(j->ck_path) != 0 && errno != ENOENT)
        er_msg_error("%s: warning: cannot remove '%s': %s", j->input, j->ck_path, strerror(errno));
    return st;
}

static int run_one(const er_settings *s, const er_stages *recipe, const char *input, size_t limit,
                   er_vk_ctx *vk)
{
    static er_job j; /* large (a plan a stage): off the stack; one input at a time */
    memset(&j, 0, sizeof j);
    j.s = s;
    j.input = input;
    j.name = er_path_name(s, input);
    j.rc = *recipe;
    j.saved_at = -1;
    j.saved_stage = -1;
    double t0 = er_msg_now();
    er_status st = prepare(&j, recipe, limit, vk);
    if (st == ER_OK && s->plan) { /* checked like a run; nothing done, nothing written */
        int status = er_job_plan_report(&j);
        job_free(&j);
        return status;
    }
    int started = st == ER_OK;
    double t1 = er_msg_now();
    if (started)
        st = simulate(&j);
    double t2 = er_msg_now();
    st = write_outputs(&j, st);
    j.seconds = er_msg_now() - t0;
    j.t_model = t2 - t1;
    j.t_write = er_msg_now() - t2;
    int status = er_job_report(&j, st, st == ER_OK ? 0 : exit_for(st, started));
    job_free(&j);
    return status;
}

/* A signal that came between inputs or while an input's outputs were
 * being renamed into place (signals wait for the renames, io/atomic.h):
 * that input is complete, yet the user asked erode to stop, which the
 * exit status must say (128 + the signal, erode(1) "Signals"). */
static int interrupted_between(const er_settings *s, int done)
{
    int sig = (int)er_stop_signal;
    const char *name = er_signal_name(sig);
    if (done > 0)
        er_msg_error("interrupted (%s) after '%s' was written whole%s", name, s->inputs[done - 1],
                     done < s->n_inputs ? "; the inputs after it were not started" : "");
    else
        er_msg_error("interrupted (%s) before any input was started", name);
    return 128 + sig;
}

int er_run_all(const er_settings *s, const er_stages *recipe)
{
    size_t limit = s->max_memory ? s->max_memory : er_machine_memory();
    int worst = 0;
    er_vk_ctx *vk = NULL;
#ifdef _OPENMP
    if (s->threads > 0)
        omp_set_num_threads(s->threads);
#endif
    if ((worst = er_backend_open(s, &vk)) != 0)
        return worst;
    int i = 0;
    for (; i < s->n_inputs && !er_stop_signal; i++) {
        int st = run_one(s, recipe, s->inputs[i], limit, vk);
        if (st > worst)
            worst = st;
        if (st >= 128)
            break;
    }
    if (er_stop_signal && worst < 128)
        worst = interrupted_between(s, i);
    return er_backend_close(vk, worst);
}
