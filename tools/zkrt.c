/* The parts the command-line tools share (see zkrt.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/zkrt.h"
#include "util/util.h"

/* Length of the well-formed UTF-8 sequence at p (n bytes left) that is
 * not a C1 control (U+0080..U+009F, which terminals may act on), or 0. */
static size_t utf8_printable(const unsigned char *p, size_t n)
{
    uint32_t cp;
    size_t len = zkr__utf8_decode(p, n, &cp);
    return len > 0 && cp > 0x9f ? len : 0;
}

void zkrt_put_escaped(FILE *f, const char *s, size_t n, int space)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = p[i] >= 0x80 ? utf8_printable(p + i, n - i) : 1;
        if (len == 0 || p[i] < 0x20 || p[i] == 0x7f || p[i] == '\\' || (space && p[i] == ' ')) {
            fprintf(f, "\\x%02x", p[i]);
            i++;
            continue;
        }
        fwrite(p + i, 1, len, f);
        i += len;
    }
}

int64_t zkrt_parse_seconds(const char *s)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v) || v < 0 || v > 1e8)
        return -1;
    int64_t ms = (int64_t)(v * 1000.0);
    return (double)ms < v * 1000.0 ? ms + 1 : ms; /* round up */
}

int zkrt_parse_int(const char *s, long lo, long hi, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int zkrt_path_ok(const char *p)
{
    if (!p || p[0] != '/' || p[1] == '\0' || strlen(p) > 1024)
        return 0;
    for (const char *s = p; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    }
    const char *c = p + 1; /* each component */
    for (;;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        if (!e)
            return 1;
        c = e + 1;
    }
}

int64_t zkrt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
