/* Curator-compatible ordering of lock children. */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Java: idx = str.lastIndexOf(marker); idx >= 0 ? str.substring(idx +
 * marker.length()) : str.  lastIndexOf("") is str.length(), so an empty
 * marker gives the empty key (a pointer to the name's NUL). */
const char *zkr__sort_key(const char *name, const char *marker)
{
    size_t nlen, mlen, i;

    if (name == NULL)
        return NULL;
    if (marker == NULL)
        return name;
    nlen = strlen(name);
    mlen = strlen(marker);
    if (mlen > nlen)
        return name;
    /* the last starting position first: overlapping matches count, as in
     * Java */
    for (i = nlen - mlen + 1; i-- > 0;) {
        if (memcmp(name + i, marker, mlen) == 0)
            return name + i + mlen;
    }
    return name;
}

const char *zkr__rw_sort_key(const char *name)
{
    return zkr__sort_key(zkr__sort_key(name, ZKR__READ_MARKER), ZKR__WRITE_MARKER);
}

int zkr__downgrade_name(const char *write_path, const char *uuid, char *out, size_t len)
{
    const char *seq;
    size_t slen;
    int n;

    if (write_path == NULL || uuid == NULL || out == NULL || len == 0)
        return -1;
    seq = zkr__sort_key(write_path, ZKR__WRITE_MARKER);
    if (seq == write_path) /* no "__WRIT__": not a write node */
        return -1;
    /* "_c_<uuid>-__READ__", then the writer's sequence */
    n = zkr__protected_name(out, len, uuid, ZKR__READ_MARKER);
    if (n < 0 || (size_t)n >= len)
        return -1;
    slen = strlen(seq);
    if (slen >= len - (size_t)n)
        return -1;
    memcpy(out + n, seq, slen + 1);
    return 0;
}

struct keyed {
    char *name;
    const char *key;
};

/* Bottom-up merge sort; taking from the left run on ties keeps it stable. */
static void merge_sort(struct keyed *a, struct keyed *tmp, size_t n)
{
    struct keyed *src = a, *dst = tmp, *t;
    size_t width = 1;

    while (width < n) {
        size_t lo = 0;
        while (lo < n) {
            size_t mid = width < n - lo ? lo + width : n;
            size_t hi = width < n - mid ? mid + width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                if (strcmp(src[j].key, src[i].key) < 0)
                    dst[k++] = src[j++];
                else
                    dst[k++] = src[i++];
            }
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
            lo = hi;
        }
        t = src;
        src = dst;
        dst = t;
        if (width > n / 2)
            break; /* the run just merged covers everything */
        width *= 2;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

int zkr__sort_children(char **names, size_t n, zkr__key_fn key, const char *marker)
{
    struct keyed *buf;
    size_t i;

    if (n == 0)
        return 0;
    if (names == NULL || key == NULL) {
        errno = EINVAL;
        return -1;
    }
    if (n == 1)
        return 0;
    if (n > SIZE_MAX / (2 * sizeof *buf)) {
        errno = ENOMEM;
        return -1;
    }
    buf = malloc(2 * n * sizeof *buf);
    if (buf == NULL) {
        errno = ENOMEM;
        return -1;
    }
    /* keys computed once each; any NULL refuses the whole sort untouched */
    for (i = 0; i < n; i++) {
        buf[i].name = names[i];
        buf[i].key = names[i] != NULL ? key(names[i], marker) : NULL;
        if (buf[i].key == NULL) {
            free(buf);
            errno = EINVAL;
            return -1;
        }
    }
    merge_sort(buf, buf + n, n);
    for (i = 0; i < n; i++)
        names[i] = buf[i].name;
    free(buf);
    return 0;
}
