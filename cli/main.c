/*
 * erode: hydraulic erosion for heightmaps.  Entry point: options, the
 * recipe, exit status.  The work is in run.c, the signal handlers in
 * signals.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/models.h"
#include "../io/recipe.h"
#include "backends.h"
#include "msg.h"
#include "options.h"
#include "preflight.h"
#include "run.h"
#include "signals.h"
#include "tiles.h"

/* A write beyond the file size limit (ulimit -f) raises SIGXFSZ, whose
 * default action kills the process and leaves the temporary behind.
 * Ignored, the write fails with EFBIG instead and takes the ordinary error
 * path: the temporary is removed and the message names the file. */
static void ignore_file_size_signal(void)
{
    signal(SIGXFSZ, SIG_IGN);
}

/* A closed standard stream would be handed to the next file opened (an
 * output's temporary), and the --json lines or an error would land in a
 * heightmap.  Each one that is closed is opened on /dev/null; returns a
 * bit mask of those that were closed (1 = stdin, 2 = stdout, 4 = stderr). */
static int guard_standard_streams(void)
{
    int closed = 0;
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        closed |= 1 << fd;
        int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (got != fd)
            _exit(2); /* cannot happen: the lowest free descriptor is fd */
    }
    return closed;
}

static int print_recipe(const er_stages *r)
{
    char *text = er_recipe_stages_to_json_all(r);
    if (!text) {
        er_msg_error("out of memory");
        return 1;
    }
    fputs(text, stdout);
    free(text);
    return er_msg_stdout_done("the recipe");
}

/* Render-farm nodes are shared: with another process busy on a core,
 * libgomp's default spin-waiting at barriers made -j2 Mei steps 7x slower
 * (scripts/bench mei, "contended"), while passive waiting costs nothing
 * measurable on an idle machine.  libgomp reads OMP_WAIT_POLICY when it is
 * loaded, before main, so when the user has not chosen one erode sets it
 * and executes itself again, once. */
static void prefer_passive_waiting(char **argv)
{
#ifdef _OPENMP
    if (getenv("OMP_WAIT_POLICY") || getenv("ERODE_NO_REEXEC"))
        return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0 || setenv("ERODE_NO_REEXEC", "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* No /proc: carry on with the default policy. */
#else
    (void)argv;
#endif
}

int main(int argc, char **argv)
{
    ignore_file_size_signal();
    prefer_passive_waiting(argv); /* before anything opens a file */
    int closed = guard_standard_streams();
    er_settings s;
    static er_stages recipe; /* large: off the stack */
    er_error err = {{0}};
    int status = er_options_parse(argc, argv, &s);
    if (status != 0) {
        er_settings_free(&s);
        return status < 0 ? 0 : status;
    }
    if ((closed & 2) && (s.json || s.print_recipe || s.list_devices || s.plan)) {
        er_msg_error("standard output is closed: nowhere to write what was asked for");
        er_settings_free(&s);
        return 2;
    }
    if (er_recipe_load_stages(s.recipe_path, s.overrides, s.n_overrides, &recipe, &err) != ER_OK) {
        er_msg_error("%s", err.msg);
        er_settings_free(&s);
        return 2;
    }
    if (er_stages_check(&recipe, s.tile_set && !s.stitch, &err) != ER_OK) {
        er_msg_error("%s: %s", s.recipe_path ? s.recipe_path : "recipe", err.msg);
        er_settings_free(&s);
        return 2;
    }
    er_tile_set tiles;
    memset(&tiles, 0, sizeof tiles);
    if (s.tile_set) {
        if ((status = er_tile_set_load(s.tile_set, &tiles)) != 0) {
            er_tile_set_free(&tiles);
            er_settings_free(&s);
            return status;
        }
        s.tiles = &tiles;
    }
    if (s.print_recipe) {
        status = print_recipe(&recipe);
    } else if (s.stitch) {
        if ((status = er_preflight_check(&s, &recipe)) == 0) {
            er_signals_install();
            status = er_stitch_all(&s, &tiles);
        }
    } else if (s.list_devices) {
        status = er_backend_list_devices();
    } else if ((status = er_preflight_check(&s, &recipe)) == 0) {
        er_signals_install();
        status = er_run_all(&s, &recipe);
    }
    er_tile_set_free(&tiles);
    er_settings_free(&s);
    return status;
}
