/* What a run does between its steps: progress, frames and checkpoints,
 * and on a signal the checkpoint of the boundary it stops at. */
#include "hooks.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../io/atomic.h"
#include "../io/recipe.h"
#include "paths.h"
#include "outputs.h"
#include "signals.h"

static int progress_cb(void *user, double fraction)
{
    er_job *j = user;
    er_progress_update(&j->progress, fraction);
    /* With --checkpoint the boundary callback stops the run, after saving
     * the state of the boundary it stops at. */
    return er_stop_signal != 0 && !j->ck_path[0];
}

/* A state's boundary and the run's boundaries, over all the stages of a
 * staged run (its own otherwise). */
static int64_t run_boundary(const er_run_state *state)
{
    return state->stage ? state->stage->offset + state->boundary : state->boundary;
}

static int64_t run_boundaries(const er_run_state *state)
{
    return state->stage ? state->stage->boundaries : state->boundaries;
}

/* "DIR/<stem>.frame-NNNNNN.png": frame k shows boundary k * N of the
 * whole run (frames run on across stages), the last one the end state. */
static er_status write_frame(er_job *j, const er_run_state *state)
{
    const int64_t every = j->s->frame_every;
    const int64_t k = (run_boundary(state) + every - 1) / every;
    size_t n = (size_t)j->img.width * (size_t)j->img.height;
    float *elev = malloc(n * sizeof(float)), *water = malloc(n * sizeof(float));
    float *sed = malloc(n * sizeof(float));
    er_status st = ER_ENOMEM;
    if (elev && water && sed) {
        char path[PATH_MAX];
        er_path_frame(path, sizeof path, j->s->frames, j->name, (long long)k);
        er_run_state_layers(state, j->initial, j->img.nodata, elev, water, sed);
        st = er_job_draw_picture(j, elev, water, sed, 0, path);
        if (st == ER_OK)
            j->frames++;
    }
    free(elev);
    free(water);
    free(sed);
    if (st == ER_ENOMEM && !j->hook_err.msg[0])
        er_fail(&j->hook_err, ER_ENOMEM, "%s: out of memory drawing a frame", j->input);
    return st;
}

/* At every step or batch boundary: frames, periodic checkpoints, and on
 * SIGINT/SIGTERM with --checkpoint the checkpoint of the boundary the run
 * stops at. */
static int boundary_cb(void *user, const er_run_state *state)
{
    er_job *j = user;
    const er_settings *s = j->s;
    er_status st = ER_OK;
    int stop = er_stop_signal != 0;
    const int64_t at = run_boundary(state), all = run_boundaries(state);
    if (s->frames && !stop && (at % s->frame_every == 0 || at == all))
        st = write_frame(j, state);
    if (st == ER_OK && j->ck_path[0]) {
        /* Periodic ones, and the end state, so that a stop or a kill while
         * the outputs are written (seconds on a large map) loses no work:
         * the resumed run only writes them. */
        int fresh = at > j->first_boundary;
        int due = fresh && ((s->checkpoint_every > 0 && at % s->checkpoint_every == 0) ||
                            at == all);
        if (stop || due)
            st = er_checkpoint_write(j->ck_path, state, &j->ck_id, &j->hook_err);
        if (st == ER_OK && (stop || due)) {
            j->saved_at = state->boundary;
            j->saved_stage = state->stage ? state->stage->index : -1;
        }
    }
    if (st != ER_OK) {
        j->hook_status = st;
        return 1;
    }
    return stop && j->ck_path[0];
}

/* The boundaries boundary_cb acts on: a frame or a checkpoint due, or a
 * stop asked (backends that keep their state on a device read it back
 * only for these). */
static int wants_cb(void *user, int64_t boundary, int64_t boundaries)
{
    const er_job *j = user;
    const er_settings *s = j->s;
    if (er_stop_signal)
        return 1;
    if (s->frames && (boundary % s->frame_every == 0 || boundary == boundaries))
        return 1;
    return j->ck_path[0] && boundary > j->first_boundary &&
           ((s->checkpoint_every > 0 && boundary % s->checkpoint_every == 0) ||
            boundary == boundaries);
}

er_status er_job_check_frames(er_job *j)
{
    const er_settings *s = j->s;
    if (!s->frames)
        return ER_OK;
    char path[PATH_MAX];
    long long last = (long long)((j->plan.boundaries + s->frame_every - 1) / s->frame_every);
    if (!er_path_frame(path, sizeof path, s->frames, j->name, last))
        return er_fail(&j->err, ER_EINVAL, "%s: --frames: the path of frame %lld is too long",
                       j->input, last);
    long name_max = pathconf(s->frames, _PC_NAME_MAX);
    if (name_max <= 0)
        name_max = 255;
    const char *base = er_path_base(path);
    if ((long)strlen(base) + ER_ATOMIC_TEMP_EXTRA > name_max)
        return er_fail(&j->err, ER_EINVAL, "%s: --frames: the name of frame %lld (%zu characters) "
                       "is too long for its directory (at most %ld, so that its temporary name "
                       "fits)", j->input, last, strlen(base), name_max - ER_ATOMIC_TEMP_EXTRA);
    return ER_OK;
}

/* The checkpoint identity of this run, and the --resume state if asked. */
er_status er_job_prepare_checkpoint(er_job *j, const er_stages *recipe)
{
    const er_settings *s = j->s;
    if (!s->checkpoint && !s->resume)
        return ER_OK;
    char *text = er_recipe_stages_to_json(recipe);
    if (!text)
        return er_fail(&j->err, ER_ENOMEM, "%s: out of memory", j->input);
    j->ck_id.model = j->rc.top.model;
    j->ck_id.staged = j->rc.n > 0;
    j->ck_id.width = j->img.width;
    j->ck_id.height = j->img.height;
    j->ck_id.recipe_hash = er_fnv1a64(ER_FNV1A64_INIT, text, strlen(text));
    free(text);
    j->ck_id.input_hash = er_checkpoint_input_hash(j->img.width, j->img.height, j->terrain.cell_x,
                                                   j->terrain.cell_y, j->initial, j->img.nodata);
    /* the control rasters each stage uses, by their values in its window */
    const size_t cells = (size_t)j->img.width * (size_t)j->img.height;
    for (int k = 0; k < er_stages_count(&j->rc); k++) {
        const er_controls *c = j->stage_controls[k];
        uint64_t maps[ER_JOB_MAPS] = {0, 0, 0, 0};
        if (c) {
            maps[0] = er_checkpoint_map_hash(c->hardness, cells);
            maps[1] = er_checkpoint_map_hash(c->rain, cells);
            maps[2] = er_checkpoint_map_hash(c->mask, cells);
            maps[3] = er_checkpoint_map_hash(c->source, cells);
        }
        j->ck_id.input_hash = er_checkpoint_fold_maps(j->ck_id.input_hash, maps);
    }
    if (s->checkpoint)
        er_path_pattern(j->ck_path, sizeof j->ck_path, s->checkpoint, j->name);
    if (s->resume) {
        char path[PATH_MAX];
        er_path_pattern(path, sizeof path, s->resume, j->name);
        er_error e = {{0}};
        er_status st = er_checkpoint_read(path, &j->ck_id, &j->resumed, &e);
        er_layers keep = {j->water, j->sediment, j->flow, j->wear};
        if (!st)
            st = er_stages_check_resume(&j->plan, &j->terrain, &j->resumed.state, &keep, &e);
        if (st)
            return er_fail(&j->err, st, "%s: --resume: %s", j->input, e.msg);
        j->first_boundary = er_stages_boundary(&j->plan, &j->resumed.state);
    }
    return ER_OK;
}

const er_run_hooks *er_job_callbacks(er_job *j, er_run_ctl *ctl, er_run_hooks *hooks)
{
    *ctl = (er_run_ctl){progress_cb, j};
    *hooks = (er_run_hooks){boundary_cb, j, j->resumed.buf ? &j->resumed.state : NULL, wants_cb};
    return j->s->checkpoint || j->s->frames || j->s->resume ? hooks : NULL;
}
