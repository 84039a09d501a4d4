#include "msg.h"

#include <cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
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

void er_progress_begin(er_progress *p, er_progress_mode mode, const er_progress_what *what)
{
    p->mode = mode;
    p->what = *what;
    p->started = er_msg_now();
    p->last_drawn = 0;
    p->shown = -1;
    p->drawn = 0;
    if (mode == ER_PROGRESS_LINES || mode == ER_PROGRESS_JSON)
        er_progress_update(p, 0.0);
}

/* The seconds left at the mean rate so far; -1: too early to say. */
static double eta_seconds(double elapsed, double fraction)
{
    return fraction > 0.001 ? elapsed / fraction * (1.0 - fraction) : -1.0;
}

/* "m:ss", minutes unbounded; "--:--" for a negative time. */
static void clock_text(char *buf, size_t n, double seconds, int round)
{
    if (seconds < 0) {
        snprintf(buf, n, "--:--");
        return;
    }
    long s = (long)(seconds + (round ? 0.5 : 0.0));
    snprintf(buf, n, "%ld:%02ld", s / 60, s % 60);
}

/* A bar with the percentage and an ETA from the mean rate so far. */
static void draw_bar(er_progress *p, double fraction, double now)
{
    if (p->drawn && now - p->last_drawn < 0.2 && fraction < 1.0)
        return;
    p->last_drawn = now;
    char eta[32];
    clock_text(eta, sizeof eta, eta_seconds(now - p->started, fraction), 1);
    enum { WIDTH = 30 };
    char bar[WIDTH + 1];
    int full = (int)(fraction * WIDTH);
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < full ? '#' : '.';
    bar[WIDTH] = '\0';
    fputs("\r\033[Kerode: ", stderr);
    er_msg_escape(stderr, p->what.label);
    fprintf(stderr, " [%s] %3d%% eta %s", bar, (int)(fraction * 100.0), eta);
    fflush(stderr);
    p->drawn = 1;
}

/* "erode: dem.tif: stage 1/2 mei: 43% elapsed 0:12 eta 0:16" */
static void print_line(const er_progress *p, double fraction, double elapsed)
{
    char took[32], eta[32];
    clock_text(took, sizeof took, elapsed, 0);
    clock_text(eta, sizeof eta, eta_seconds(elapsed, fraction), 1);
    fputs("erode: ", stderr);
    er_msg_escape(stderr, p->what.label);
    fprintf(stderr, ": %d%% elapsed %s eta %s\n", (int)(fraction * 100.0), took, eta);
}

/* Rounded to `step`, so that a line holds 0.43, not 0.43000000000000002. */
static double rounded(double v, double step)
{
    return (double)(long long)(v / step + 0.5) * step;
}

/* One JSON object, the keys of erode(1) --progress=json. */
static void print_json(const er_progress *p, double fraction, double elapsed)
{
    const er_progress_what *w = &p->what;
    const double eta = eta_seconds(elapsed, fraction);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "input", w->input);
    cJSON_AddStringToObject(o, "phase", w->phase);
    if (w->stages) {
        cJSON_AddNumberToObject(o, "stage", w->stage);
        cJSON_AddNumberToObject(o, "stages", w->stages);
    } else {
        cJSON_AddNullToObject(o, "stage");
        cJSON_AddNullToObject(o, "stages");
    }
    if (w->model)
        cJSON_AddStringToObject(o, "model", w->model);
    else
        cJSON_AddNullToObject(o, "model");
    cJSON_AddNumberToObject(o, "fraction", rounded(fraction, 1e-4));
    cJSON_AddNumberToObject(o, "elapsed_s", rounded(elapsed, 0.1));
    if (eta >= 0)
        cJSON_AddNumberToObject(o, "eta_s", rounded(eta, 0.1));
    else
        cJSON_AddNullToObject(o, "eta_s");
    char *text = cJSON_PrintUnformatted(o);
    if (text)
        fprintf(stderr, "%s\n", text);
    free(text);
    cJSON_Delete(o);
}

/* A phase's first line and its end, and between them at most one line
 * every ER_PROGRESS_LINE_SECONDS; a fraction already shown is not
 * repeated (io/ reports 0 and 1 more than once). */
static void print_due(er_progress *p, double fraction, double now)
{
    if (p->shown >= 0 && (fraction <= p->shown ||
                          (fraction < 1.0 && now - p->last_drawn < ER_PROGRESS_LINE_SECONDS)))
        return;
    p->last_drawn = now;
    p->shown = fraction;
    if (p->mode == ER_PROGRESS_JSON)
        print_json(p, fraction, now - p->started);
    else
        print_line(p, fraction, now - p->started);
    fflush(stderr);
}

void er_progress_update(er_progress *p, double fraction)
{
    if (p->mode == ER_PROGRESS_BAR)
        draw_bar(p, fraction, er_msg_now());
    else if (p->mode == ER_PROGRESS_LINES || p->mode == ER_PROGRESS_JSON)
        print_due(p, fraction, er_msg_now());
}

void er_progress_end(er_progress *p)
{
    if (p->mode == ER_PROGRESS_BAR && p->drawn) {
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
