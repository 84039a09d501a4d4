#include "signals.h"

#include <string.h>
#include <unistd.h>

#include "../io/atomic.h"

volatile sig_atomic_t er_stop_signal = 0;

/* First SIGINT, SIGTERM, SIGHUP (the terminal closed) or SIGPIPE (a
 * reader of --json or of the progress went away): stop at the next step
 * boundary and clean up, exit 128 + the signal.  A second one: remove the
 * temporaries now and leave at once.  Their default actions would kill
 * the process with temporaries left beside the outputs. */
static void on_signal(int sig)
{
    if (er_stop_signal) {
        er_atomic_cleanup_signal_safe();
        _exit(128 + sig);
    }
    er_stop_signal = sig;
}

void er_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGPIPE, &sa, NULL);
}

const char *er_signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP"
         : sig == SIGPIPE ? "SIGPIPE" : "a signal";
}
