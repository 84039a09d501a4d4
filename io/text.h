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

/* The same, reading at most max bytes (0 = no limit): when the stream holds
 * more, *over (may be NULL) is set to 1 and the first max bytes are
 * returned; a reader of an endless stream stops there. */
char *er_read_all_max(FILE *f, size_t max, size_t *len, int *over);

/* 1 and *out when s is a whole decimal integer in [lo, hi], else 0. */
int er_parse_int(const char *s, int lo, int hi, int *out);

#endif
