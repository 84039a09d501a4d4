/*
 * Small text helpers shared by io/ and cli/: reading a whole stream (a
 * tile list, --inputs-from) and parsing a bounded decimal integer (options
 * and creation options).
 */
#ifndef ER_TEXT_H
#define ER_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Reads f to its end into a malloc'd buffer with a NUL after the text;
 * *len (may be NULL) receives the text's length, which may hold NULs of
 * its own.  NULL when memory runs out; a read error is left for the
 * caller's ferror(f), the text read so far returned. */
char *er_read_all(FILE *f, size_t *len);

/* 1 and *out when s is a whole decimal integer in [lo, hi], else 0. */
int er_parse_int(const char *s, int lo, int hi, int *out);

#endif
