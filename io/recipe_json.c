/* Recipe text to cJSON: one complete value, or the error at the line and
 * column of the offending character. */
#include "recipe_internal.h"

#include <string.h>

/* Line and column (1-based, columns in characters) of offset `at`. */
static void line_col(const char *text, size_t at, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
            (*col)++;
        }
    }
}

int er_recipe_is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* `at` is cJSON's failure offset.  Two corrections make it point at the
 * offending character: where a member name was expected cJSON reports the
 * byte after the bad one, and when the text ends early it reports the last
 * byte (only a whitespace byte there says so for sure). */
static er_status malformed(const er_recipe_ctx *c, const char *text, size_t len, size_t at)
{
    size_t line, col;
    const char *what = "";
    if (at > len)
        at = len;
    if (at > 0 && !er_recipe_is_space(text[at - 1]) && text[at - 1] != '"') {
        size_t b = at - 1;
        while (b > 0 && er_recipe_is_space(text[b - 1]))
            b--;
        if (b > 0 && (text[b - 1] == ',' || text[b - 1] == '{'))
            at--;
    }
    if (len > 0 && at == len - 1 && er_recipe_is_space(text[at])) {
        at = len;
        what = ", unexpected end of text";
    }
    line_col(text, at, &line, &col);
    return er_recipe_fail(c, NULL, "line %zu, column %zu: malformed JSON%s", line, col, what);
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* Whether the n bytes at t are a number as JSON writes it (RFC 8259 §6):
 * -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int json_number(const char *t, size_t n)
{
    size_t i = t[0] == '-';
    if (i >= n || !is_digit(t[i]))
        return 0;
    if (t[i] == '0')
        i++;
    else
        while (i < n && is_digit(t[i]))
            i++;
    if (i < n && t[i] == '.') {
        size_t d = ++i;
        while (i < n && is_digit(t[i]))
            i++;
        if (i == d)
            return 0;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        i += i + 1 < n && (t[i + 1] == '+' || t[i + 1] == '-') ? 2 : 1;
        size_t d = i;
        while (i < n && is_digit(t[i]))
            i++;
        if (i == d)
            return 0;
    }
    return i == n;
}

/* The length of the run of [0-9+-.eE] at t, within n bytes (the text
 * need not end in a NUL: strspn would read past it). */
static size_t number_span(const char *t, size_t n)
{
    size_t i = 0;
    while (i < n && (is_digit(t[i]) || t[i] == '+' || t[i] == '-' || t[i] == '.' || t[i] == 'e' ||
                     t[i] == 'E'))
        i++;
    return i;
}

/* cJSON reads any run of [0-9+-.eE] that strtod takes as a number, so
 * 020 (an octal in other languages) and 1. would pass: every number
 * outside strings is checked against JSON's own grammar. */
int er_recipe_bad_number(const char *text, size_t len, size_t *at)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '"') { /* a string: to its closing quote */
            for (i++; i < len && text[i] != '"'; i++)
                i += text[i] == '\\';
            continue;
        }
        if (text[i] != '-' && !is_digit(text[i]))
            continue;
        size_t n = number_span(text + i, len - i);
        if (!json_number(text + i, n)) {
            *at = i;
            return 1;
        }
        i += n - 1;
    }
    return 0;
}

/* Parses len bytes of JSON; NULL (with the error set) unless the text is
 * one complete value.  cJSON's end pointer (rather than
 * cJSON_GetErrorPtr, a global) gives the failure point. */
cJSON *er_recipe_parse_json(const er_recipe_ctx *c, const char *text, size_t len, er_status *st)
{
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        *st = malformed(c, text, len, (size_t)(nul - text));
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        if (!end) {
            *st = er_fail(c->err, ER_ENOMEM, "%s: out of memory", c->where);
            return NULL;
        }
        *st = malformed(c, text, len, (size_t)(end - text));
        return NULL;
    }
    size_t at = (size_t)(end - text);
    while (at < len && er_recipe_is_space(text[at]))
        at++;
    if (at < len) {
        cJSON_Delete(root);
        *st = malformed(c, text, len, at);
        return NULL;
    }
    if (er_recipe_bad_number(text, len, &at)) {
        size_t line, col, n = number_span(text + at, len - at);
        cJSON_Delete(root);
        line_col(text, at, &line, &col);
        *st = er_recipe_fail(c, NULL, "line %zu, column %zu: malformed JSON number '%.*s' (no "
                             "leading zeros, digits on both sides of a point)", line, col,
                             (int)(n < 32 ? n : 32), text + at);
        return NULL;
    }
    *st = ER_OK;
    return root;
}
