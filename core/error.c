#include "error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

er_status er_fail(er_error *err, er_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return st;
}

void er_error_prefix(er_error *err, const char *prefix)
{
    char tmp[ER_ERROR_MAX];
    size_t n;
    if (!err)
        return;
    n = strlen(prefix);
    if (n + 2 >= sizeof tmp)
        n = sizeof tmp - 3;
    memcpy(tmp, prefix, n);
    tmp[n] = ':';
    tmp[n + 1] = ' ';
    size_t room = sizeof tmp - n - 3, len = strlen(err->msg);
    if (len > room)
        len = room;
    memcpy(tmp + n + 2, err->msg, len);
    tmp[n + 2 + len] = '\0';
    memcpy(err->msg, tmp, sizeof tmp);
}

const char *er_status_str(er_status st)
{
    switch (st) {
    case ER_OK: return "success";
    case ER_ENOMEM: return "out of memory";
    case ER_EINVAL: return "invalid argument";
    case ER_EFORMAT: return "bad file format";
    case ER_EUNSUPPORTED: return "unsupported";
    case ER_EIO: return "i/o error";
    case ER_ENUMERIC: return "numerical failure";
    case ER_ECANCELED: return "interrupted";
    }
    return "unknown error";
}

int er_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

int er_error_names_key(const char *msg)
{
    size_t n = strcspn(msg, ": ");
    size_t dot = strcspn(msg, ".[");
    return msg[n] == ':' && dot < n && strspn(msg, "abcdefghijklmnopqrstuvwxyz_.[]0123456789") >= n;
}
