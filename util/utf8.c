/* UTF-8 as RFC 3629 has it: one decoder for every check of ours (lock
 * paths, leader ids, what zkr-lock prints of the server's bytes). */
#include "util/util.h"

size_t zkr__utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    unsigned char b = s[0];
    size_t len;
    uint32_t v;
    if (b < 0x80) {
        *cp = b;
        return 1;
    } else if ((b & 0xe0) == 0xc0) {
        len = 2;
        v = b & 0x1f;
    } else if ((b & 0xf0) == 0xe0) {
        len = 3;
        v = b & 0x0f;
    } else if ((b & 0xf8) == 0xf0) {
        len = 4;
        v = b & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[k] & 0x3f);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0; /* overlong, past U+10FFFF, a surrogate */
    *cp = v;
    return len;
}

int zkr__utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    uint32_t cp;
    for (size_t i = 0, len; i < n; i += len)
        if ((len = zkr__utf8_decode(p + i, n - i, &cp)) == 0)
            return 0;
    return 1;
}
