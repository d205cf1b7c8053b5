/* Owned string vectors and Java-style big-endian ints. */
#include "util/util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int zkr__strvec_copy(zkr__strvec_t *out, char *const *src, size_t count)
{
    size_t i;
    char **v;

    if (out == NULL)
        return -1;
    out->v = NULL;
    out->n = 0;
    if (count == 0)
        return 0;
    if (src == NULL)
        return -1;
    for (i = 0; i < count; i++)
        if (src[i] == NULL)
            return -1;
    v = calloc(count, sizeof *v);
    if (v == NULL)
        return -1;
    for (i = 0; i < count; i++) {
        v[i] = strdup(src[i]);
        if (v[i] == NULL) {
            while (i-- > 0)
                free(v[i]);
            free(v);
            return -1;
        }
    }
    out->v = v;
    out->n = count;
    return 0;
}

void zkr__strvec_free(zkr__strvec_t *sv)
{
    size_t i;

    if (sv == NULL)
        return;
    if (sv->v != NULL) {
        for (i = 0; i < sv->n; i++)
            free(sv->v[i]);
        free(sv->v);
    }
    sv->v = NULL;
    sv->n = 0;
}

long zkr__strvec_find(const zkr__strvec_t *sv, const char *s)
{
    size_t i;

    if (sv == NULL || sv->v == NULL || s == NULL)
        return -1;
    for (i = 0; i < sv->n && i <= (size_t)LONG_MAX; i++)
        if (sv->v[i] != NULL && strcmp(sv->v[i], s) == 0)
            return (long)i;
    return -1;
}

long zkr__strvec_find_prefix(const zkr__strvec_t *sv, const char *prefix)
{
    size_t i, plen;

    if (sv == NULL || sv->v == NULL || prefix == NULL)
        return -1;
    plen = strlen(prefix);
    for (i = 0; i < sv->n && i <= (size_t)LONG_MAX; i++)
        if (sv->v[i] != NULL && strncmp(sv->v[i], prefix, plen) == 0)
            return (long)i;
    return -1;
}

int32_t zkr__be32_get(const unsigned char b[4])
{
    uint32_t u;

    if (b == NULL)
        return 0;
    u = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
    /* two's complement without implementation-defined conversion */
    if (u <= (uint32_t)INT32_MAX)
        return (int32_t)u;
    return -(int32_t)(UINT32_MAX - u) - 1;
}

void zkr__be32_put(unsigned char b[4], int32_t v)
{
    uint32_t u = (uint32_t)v;

    if (b == NULL)
        return;
    b[0] = (unsigned char)(u >> 24);
    b[1] = (unsigned char)(u >> 16);
    b[2] = (unsigned char)(u >> 8);
    b[3] = (unsigned char)u;
}

int zkr__count_parse(const char *buf, int len, int32_t *out)
{
    if (buf == NULL || out == NULL || len != 4)
        return -1;
    *out = zkr__be32_get((const unsigned char *)buf);
    return 0;
}

int64_t zkr__be64_get(const unsigned char b[8])
{
    uint64_t u = 0;

    if (b == NULL)
        return 0;
    for (int i = 0; i < 8; i++)
        u = u << 8 | b[i];
    if (u <= (uint64_t)INT64_MAX)
        return (int64_t)u;
    return -(int64_t)(UINT64_MAX - u) - 1;
}

void zkr__be64_put(unsigned char b[8], int64_t v)
{
    uint64_t u = (uint64_t)v;

    if (b == NULL)
        return;
    for (int i = 7; i >= 0; i--, u >>= 8)
        b[i] = (unsigned char)u;
}
