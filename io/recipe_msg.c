/* Recipe errors: one line naming where and the JSON path, user text made
 * safe for it. */
#include "recipe_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* "<where>: <path>: <what>" ("-s <path>: <what>"; the path left out when
 * empty). */
er_status er_recipe_fail(const er_recipe_ctx *c, const char *path, const char *fmt, ...)
{
    char what[ER_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (path && *path)
        return er_fail(c->err, ER_EINVAL, "%s%s%s: %s", c->where, c->sep, path, what);
    return er_fail(c->err, ER_EINVAL, "%s: %s", c->where, what);
}

/* User text made safe for a one-line message: control bytes become '?',
 * long text is cut with "...". */
const char *er_recipe_quote(char *buf, size_t n, const char *s)
{
    size_t i = 0, max = n - 4;
    for (; s[i] && i < max; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    if (s[i]) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return buf;
}

const char *er_recipe_json_type(const cJSON *j)
{
    if (cJSON_IsNull(j))
        return "null";
    if (cJSON_IsBool(j))
        return "a boolean";
    if (cJSON_IsNumber(j))
        return "a number";
    if (cJSON_IsString(j))
        return "a string";
    if (cJSON_IsArray(j))
        return "an array";
    if (cJSON_IsObject(j))
        return "an object";
    return "an invalid value";
}

er_status er_recipe_wrong_type(const er_recipe_ctx *c, const char *path, const char *want,
                               const cJSON *j)
{
    return er_recipe_fail(c, path, "expected %s, got %s", want, er_recipe_json_type(j));
}
