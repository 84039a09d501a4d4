#include "xml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int er_xml_put_text(FILE *f, const char *s)
{
    int ok = 1;
    for (const unsigned char *p = (const unsigned char *)s; *p && ok; p++) {
        switch (*p) {
        case '&': ok = fputs("&amp;", f) >= 0; break;
        case '<': ok = fputs("&lt;", f) >= 0; break;
        case '>': ok = fputs("&gt;", f) >= 0; break;
        case '"': ok = fputs("&quot;", f) >= 0; break;
        case '\'': ok = fputs("&apos;", f) >= 0; break;
        default:
            ok = *p < 0x20 || *p == 0x7f ? fprintf(f, "&#%u;", *p) > 0 : fputc(*p, f) != EOF;
        }
    }
    return ok && !ferror(f);
}

/* Appends code point c as UTF-8; returns the bytes written (0: invalid). */
static size_t put_utf8(char *out, unsigned long c)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        if (c >= 0xd800 && c < 0xe000)
            return 0;
        out[0] = (char)(0xe0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    if (c < 0x110000) {
        out[0] = (char)(0xf0 | (c >> 18));
        out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[3] = (char)(0x80 | (c & 0x3f));
        return 4;
    }
    return 0;
}

/* Decodes the reference at s (just past '&', ending at or before end) into
 * out; returns the bytes written and sets *used to the reference's length
 * (after '&', ';' included), or 0 when it is malformed. */
static size_t reference(const char *s, const char *end, char *out, size_t *used)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        size_t n = strlen(named[k].name);
        if ((size_t)(end - s) >= n && memcmp(s, named[k].name, n) == 0) {
            *out = named[k].c;
            *used = n;
            return 1;
        }
    }
    if (s >= end || *s != '#')
        return 0;
    int hex = s + 1 < end && (s[1] == 'x' || s[1] == 'X');
    const char *d = s + 1 + hex, *p = d;
    unsigned long c = 0;
    for (; p < end && *p != ';' && p - d < 8; p++) {
        int v = *p >= '0' && *p <= '9' ? *p - '0'
              : hex && *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
              : hex && *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;
        if (v < 0)
            return 0;
        c = c * (hex ? 16u : 10u) + (unsigned long)v;
    }
    if (p == d || p >= end || *p != ';' || c == 0)
        return 0;
    *used = (size_t)(p - s) + 1;
    return put_utf8(out, c);
}

char *er_xml_text(const char *s, size_t n)
{
    /* Every reference is at least as long as its bytes (UTF-8 of a
     * code point takes at most as many bytes as "&#N;" has). */
    char *out = malloc(n + 1), *o = out;
    const char *end = s + n;
    if (!out)
        return NULL;
    while (s < end) {
        if (*s != '&') {
            *o++ = *s++;
            continue;
        }
        size_t used, k = reference(s + 1, end, o, &used);
        if (!k) {
            free(out);
            return NULL;
        }
        o += k;
        s += 1 + used;
    }
    *o = '\0';
    return out;
}

/* The end of a start tag's name or attribute name. */
static const char *name_end(const char *p)
{
    while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '=' && *p != '>' && *p != '/')
        p++;
    return p;
}

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

const char *er_xml_attr(const char *tag, const char *name, size_t *len)
{
    size_t want = strlen(name);
    const char *p = name_end(tag + 1);
    for (;;) {
        p = skip_space(p);
        if (!*p || *p == '>' || *p == '/')
            return NULL;
        const char *a = p;
        p = name_end(p);
        if (p == a)
            return NULL;
        size_t alen = (size_t)(p - a);
        p = skip_space(p);
        if (*p != '=')
            return NULL;
        p = skip_space(p + 1);
        if (*p != '"' && *p != '\'')
            return NULL;
        char q = *p++;
        const char *v = p;
        while (*p && *p != q)
            p++;
        if (!*p)
            return NULL;
        if (alen == want && memcmp(a, name, want) == 0) {
            *len = (size_t)(p - v);
            return v;
        }
        p++;
    }
}

int er_xml_attr_is(const char *tag, const char *name, const char *value)
{
    size_t len;
    const char *v = er_xml_attr(tag, name, &len);
    return v && len == strlen(value) && memcmp(v, value, len) == 0;
}

/* The '>' that ends the start tag at p, past quoted attribute values
 * (which may hold a '>'); NULL when the text ends first. */
static const char *tag_end(const char *p)
{
    char q = 0;
    for (; *p; p++) {
        if (q) {
            q = *p == q ? 0 : q;
        } else if (*p == '"' || *p == '\'') {
            q = *p;
        } else if (*p == '>') {
            return p;
        }
    }
    return NULL;
}

const char *er_xml_element(const char *s, const char *name, const char **body, const char **end)
{
    size_t n = strlen(name);
    for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<')) {
        if (strncmp(p + 1, name, n) != 0 || name_end(p + 1) != p + 1 + n)
            continue;
        const char *gt = tag_end(p);
        if (!gt)
            return NULL;
        if (gt > p && gt[-1] == '/') {
            *body = *end = gt + 1;
            return p;
        }
        /* "</name" followed by optional space and '>' */
        for (const char *c = strstr(gt + 1, "</"); c; c = strstr(c + 2, "</")) {
            if (strncmp(c + 2, name, n) == 0 && *skip_space(c + 2 + n) == '>') {
                *body = gt + 1;
                *end = c;
                return p;
            }
        }
        return NULL;
    }
    return NULL;
}
