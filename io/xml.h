/*
 * The little XML erode reads and writes itself: GDAL's GDAL_METADATA tag
 * (its band description) and the PAM ".aux.xml" sidecars of PNG outputs.
 * Not a parser: helpers that find an element or an attribute in text whose
 * shape is known, as GDAL writes it.  Private to io/.
 */
#ifndef ER_XML_H
#define ER_XML_H

#include <stddef.h>
#include <stdio.h>

/* Writes s to f as XML character data (or a double-quoted attribute
 * value): & < > " ' as entities, tab, line feed and carriage return as
 * numeric references (so no XML reader normalises them away), and the
 * other control bytes as numeric references too; every other byte as is.
 * Returns 1, or 0 when f reports an error. */
int er_xml_put_text(FILE *f, const char *s);

/* The text of n bytes of XML character data at s with its entity and
 * numeric references decoded (a reference above 127 becomes its UTF-8
 * bytes, as any XML tool that rewrote the file would have written it).
 * Returns a new string the caller frees; NULL on a malformed or unknown
 * reference, a reference to NUL, or out of memory. */
char *er_xml_text(const char *s, size_t n);

/* The value of attribute `name` in the start tag at `tag` (pointing at
 * its '<'): a pointer to its first byte (still escaped) and its length in
 * *len; NULL when the tag has no such attribute or ends first. */
const char *er_xml_attr(const char *tag, const char *name, size_t *len);

/* 1 when the attribute `name` of the start tag at `tag` is exactly
 * `value` (compared unescaped bytes: the values erode looks for hold no
 * references). */
int er_xml_attr_is(const char *tag, const char *name, const char *value);

/* The next element named `name` at or after s, as its start tag (at '<'),
 * the first byte of its content in *body and the byte after its content
 * (the '<' of the end tag) in *end; an empty element "<name .../>" has
 * *body == *end.  NULL when there is none, or it has no end tag.  Elements
 * of the same name must not nest (true of the ones erode looks for). */
const char *er_xml_element(const char *s, const char *name, const char **body, const char **end);

#endif
