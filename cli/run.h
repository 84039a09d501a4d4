/*
 * Processing of the inputs: per input read -> resolve the recipe against the
 * map -> simulate -> write the layers (DESIGN.md §1, §3, §4).
 */
#ifndef ER_RUN_H
#define ER_RUN_H

#include <signal.h>

#include "../core/params.h"
#include "../core/stages.h"
#include "options.h"

/* Set by the SIGINT/SIGTERM/SIGHUP/SIGPIPE handler to the signal number;
 * read between steps through the progress callback. */
extern volatile sig_atomic_t er_stop_signal;

/* "SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE" (the signals erode stops on),
 * "a signal" for another. */
const char *er_signal_name(int sig);

/* Checks what can be checked before any work (output directory, output
 * names); returns 0 or exit status 2 after printing one error line. */
int er_run_preflight(const er_settings *s, const er_stages *recipe);

/* --list-devices: prints one line per Vulkan device to stdout; returns
 * the exit status (2, with one error line, when there is none or the
 * binary was built without Vulkan). */
int er_run_list_devices(void);

/* Processes every input independently; returns the worst exit status. */
int er_run_all(const er_settings *s, const er_stages *recipe);

#endif
