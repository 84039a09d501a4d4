/*
 * The run driver: the one loop every model's run goes through, on the
 * CPU and on a device.  It owns
 * what the run contract of core/model.h asks of every run, so that each
 * model writes none of it: the step loop from the first boundary to the
 * last, restoring a resume state, handing the boundaries the hooks want
 * to them, progress after every boundary, cancelling with one message
 * ("<model>: cancelled at <unit> N"), and the budget handed back also
 * after a failure.  A model supplies its steps (er_model_steps, one table
 * in its directory, named by its ops).
 *
 * The protocol, boundary by boundary (steps or batches: the model's
 * unit, plan->boundaries of them):
 *   init                     the model's run state, from the plan;
 *   load (with a resume)     that state replaced by the resume state's;
 *   the hooks at the first boundary (0, or the resumed one);
 *   advance from b, while b < plan->boundaries: the model runs at least
 *     to b + 1, and further only past boundaries er_drive_may_pass
 *     allowed (Mei fuses the sub-steps on either side of a step end);
 *     then progress and the hooks at the boundary reached; or it stays
 *     at b after er_drive_poll said to stop there;
 *   finish                   the outputs, whatever the status;
 *   release.
 */
#ifndef ER_DRIVE_H
#define ER_DRIVE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* The driver's side of a run, handed to the model's advance. */
typedef struct er_drive er_drive;

/*
 * Whether the model may run past boundary s without stopping there: the
 * progress callback is asked about s now (its only call for s) and the
 * hooks do not want s.  0: it must stop at s (the driver then cancels
 * there, or hands s to the hooks).  After a yes the model is past s when
 * its advance returns, and s is neither drawn nor handed over.
 */
int er_drive_may_pass(er_drive *d, int64_t s);

/*
 * Inside an advance from b that takes long (a device's batch split into
 * several submissions), `part` of the way to b + 1 (0 <= part < 1):
 * reports that progress and says whether the run must stop at b: the
 * progress callback asks to cancel, or the hooks want b now and did not
 * when the advance began (a signal: a checkpoint of b, then stop).  After
 * a yes the model puts its state back to boundary b and returns ER_OK
 * with *to = b; the driver then cancels at b or hands b to the hooks.
 */
int er_drive_poll(er_drive *d, int64_t b, double part);

typedef struct er_model_steps {
    size_t size; /* bytes of the model's run state, which the driver zeroes */
    /* Sets up the run of the plan on t with o's layers; budget: zeroed,
     * what the model starts it with (material_before, its terms);
     * backend: the device of a GPU path's steps (er_vk_ctx), NULL on the
     * CPU.  The driver calls release also after a failure here. */
    er_status (*init)(void *run, void *backend, const er_plan *plan, er_terrain *t,
                      const er_run_opts *o, er_budget *budget, er_error *err);
    /* Replaces the fresh state by r, a state at boundary r->boundary (the
     * model checks that it fits: er_plan_check_resume and its values). */
    er_status (*load)(void *run, const er_run_state *r, er_budget *budget, er_error *err);
    /* Runs from boundary b to *to > b (see er_drive_may_pass), or back
     * to *to = b after er_drive_poll said to stop. */
    er_status (*advance)(void *run, int64_t b, er_drive *d, er_budget *budget, int64_t *to,
                         er_error *err);
    /* The state at boundary b, where the run stands (core/model.h
     * er_run_state: a view into the model's memory, valid until the next
     * call). */
    er_status (*view)(void *run, int64_t b, const er_budget *budget, er_run_state *v,
                      er_error *err);
    /* The run's outputs: the terrain and layers and the budget's closing
     * sums, after a run that ended with status st (`started`: 0 when it
     * never ran, a resume state refused); returns the run's status. */
    er_status (*finish)(void *run, er_status st, int started, er_budget *budget, er_error *err);
    /* Frees what init allocated (also after a failed init). */
    void (*release)(void *run);
    /* The work done at boundary b, counted as er_run_state.done, for the
     * progress fraction done / done(boundaries); NULL: b itself. */
    int64_t (*done_at)(const er_plan *plan, int64_t b);
} er_model_steps;

/* Runs the plan's model on t through its steps (the contract of
 * core/model.h): the CPU run of every model's ops. */
er_status er_drive_run(const er_model_steps *ms, const er_plan *plan, er_terrain *t,
                       const er_run_opts *o, er_error *err);

/* The same on a backend's device (its steps' init receives it): the
 * Vulkan runs of Mei and the droplets. */
er_status er_drive_run_on(const er_model_steps *ms, void *backend, const er_plan *plan,
                          er_terrain *t, const er_run_opts *o, er_error *err);

#endif
