/*
 * The signals erode stops on (SIGINT, SIGTERM, SIGHUP, SIGPIPE): their
 * handlers and the flag the run reads between steps.  Internal to cli/.
 */
#ifndef ER_CLI_SIGNALS_H
#define ER_CLI_SIGNALS_H

#include <signal.h>

/* Set by the handler to the signal number; read between steps through
 * the progress callback. */
extern volatile sig_atomic_t er_stop_signal;

/* Installs the handlers (a second signal leaves at once). */
void er_signals_install(void);

/* "SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE" (the signals erode stops on),
 * "a signal" for another. */
const char *er_signal_name(int sig);

#endif
