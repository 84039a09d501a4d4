#include "msg.h"

#include <errno.h>
#include <stdarg.h>
#include <time.h>

#include "../io/atomic.h"

/* Control bytes as C escapes (\n, \t, \x1b, ...) and a backslash doubled,
 * so that a file name holding a newline or a terminal escape sequence
 * cannot split the one error line or drive the terminal. */
void er_msg_escape(FILE *f, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        case '\\': fputs("\\\\", f); break;
        default:
            if (*c < 0x20 || *c == 0x7f)
                fprintf(f, "\\x%02x", *c);
            else
                fputc(*c, f);
        }
    }
}

void er_msg_error(const char *fmt, ...)
{
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fputs("erode: ", stderr);
    er_msg_escape(stderr, line);
    fputc('\n', stderr);
}

double er_msg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void er_progress_begin(er_progress *p, int enabled, const char *label)
{
    p->enabled = enabled;
    p->label = label;
    p->started = er_msg_now();
    p->last_drawn = 0;
    p->drawn = 0;
}

/* A bar with the percentage and an ETA from the mean rate so far. */
void er_progress_update(er_progress *p, double fraction)
{
    if (!p->enabled)
        return;
    double now = er_msg_now();
    if (p->drawn && now - p->last_drawn < 0.2 && fraction < 1.0)
        return;
    p->last_drawn = now;
    double elapsed = now - p->started;
    char eta[32] = "--:--";
    if (fraction > 0.001) {
        long left = (long)(elapsed / fraction * (1.0 - fraction) + 0.5);
        snprintf(eta, sizeof eta, "%ld:%02ld", left / 60, left % 60);
    }
    enum { WIDTH = 30 };
    char bar[WIDTH + 1];
    int full = (int)(fraction * WIDTH);
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < full ? '#' : '.';
    bar[WIDTH] = '\0';
    fputs("\r\033[Kerode: ", stderr);
    er_msg_escape(stderr, p->label);
    fprintf(stderr, " [%s] %3d%% eta %s", bar, (int)(fraction * 100.0), eta);
    fflush(stderr);
    p->drawn = 1;
}

void er_progress_end(er_progress *p)
{
    if (p->enabled && p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->drawn = 0;
}

int er_msg_stdout_done(const char *what)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return 0;
    er_msg_error("cannot write %s to standard output: %s", what, er_atomic_reason(errno ? errno : EIO));
    return 1;
}
