#include "msg.h"

#include <stdarg.h>
#include <time.h>

void er_msg_error(const char *fmt, ...)
{
    va_list ap;
    fputs("erode: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
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
    fprintf(stderr, "\r\033[Kerode: %s [%s] %3d%% eta %s", p->label, bar, (int)(fraction * 100.0), eta);
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
