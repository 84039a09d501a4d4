#include "text.h"

#include <errno.h>
#include <stdlib.h>

char *er_read_all(FILE *f, size_t *len)
{
    return er_read_all_max(f, 0, len, NULL);
}

char *er_read_all_max(FILE *f, size_t max, size_t *len, int *over)
{
    size_t cap = 1 << 12, n = 0, got;
    char *buf = malloc(cap);
    if (over)
        *over = 0;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (max && n > max) {
            n = max;
            if (over)
                *over = 1;
            break;
        }
        if (cap - n < 2) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    if (buf)
        buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int er_parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}
