/* What the command-line tools (zkr-lock, zkr-cache) share: the output of
 * untrusted bytes, the parsing of numbers and paths.  Public API only,
 * plus the library's UTF-8 decoder (util/utf8.c, linked in: the library
 * does not export it). */
#ifndef ZKRT_H
#define ZKRT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bytes from the server (names, ids, data) written to f as text that
 * cannot break one-per-line output nor reach a terminal as controls:
 * control characters (C0, DEL, C1), backslashes, bytes that are not
 * well-formed UTF-8 and, if `space`, spaces as \xNN; well-formed UTF-8 as
 * it is. */
void zkrt_put_escaped(FILE *f, const char *s, size_t n, int space);

/* Seconds, possibly fractional, from 0 to 1e8, rounded up to ms; -1 if
 * malformed. */
int64_t zkrt_parse_seconds(const char *s);
/* A decimal integer in [lo, hi]: 0 and *out, or -1. */
int zkrt_parse_int(const char *s, long lo, long hi, int *out);
/* A path the server would accept: "/a/b", no "//", no trailing "/", no
 * "." or ".." component, no control characters; not "/" itself. */
int zkrt_path_ok(const char *p);
/* A monotonic clock, in ms. */
int64_t zkrt_now_ms(void);

#endif
