/* Path helpers: validation, joining, last component. */
#include "util/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ZKR__RESERVED "/zookeeper"

/* ZooKeeper's own rule (PathUtils.validatePath), on the Java chars the
 * server decodes our UTF-8 into: no U+0000-U+001F, U+007F-U+009F,
 * U+D800-U+F8FF, U+FFF0-U+FFFF.  A code point past U+FFFF becomes a
 * surrogate pair (U+D800-U+DFFF), and malformed UTF-8 becomes U+FFFD: both
 * refused. */
static int is_bad_code_point(uint32_t cp)
{
    return cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xd800 && cp <= 0xf8ff) || cp >= 0xfff0;
}

/* read_only: "/" and the reserved tree are fine (a path read, not written). */
static int path_check(const char *path, int read_only)
{
    size_t len, i, start;
    size_t rlen = sizeof(ZKR__RESERVED) - 1;

    if (path == NULL || path[0] != '/')
        return 0;
    /* never scan further than needed to know it is too long */
    len = strnlen(path, (size_t)ZKR__PATH_MAX + 1);
    if (len > ZKR__PATH_MAX)
        return 0;
    if (len == 1) /* "/" itself: a lock needs a directory of its own */
        return read_only;
    if (path[len - 1] == '/')
        return 0;
    /* ZooKeeper's reserved tree */
    if (!read_only && strncmp(path, ZKR__RESERVED, rlen) == 0 &&
        (path[rlen] == '\0' || path[rlen] == '/'))
        return 0;

    /* walk components: each starts after a '/' */
    start = 1;
    for (i = 1; i <= len; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c != '\0' && c != '/') {
            uint32_t cp;
            /* (past U+FFFF is refused too: is_bad_code_point) */
            size_t n = zkr__utf8_decode((const unsigned char *)path + i, len - i, &cp);
            if (n == 0 || is_bad_code_point(cp))
                return 0;
            i += n - 1;
            continue;
        }
        /* component is path[start .. i) */
        {
            size_t clen = i - start;
            if (clen == 0)
                return 0; /* "//" */
            if (clen == 1 && path[start] == '.')
                return 0;
            if (clen == 2 && path[start] == '.' && path[start + 1] == '.')
                return 0;
        }
        start = i + 1;
    }
    return 1;
}

int zkr__path_valid(const char *path)
{
    return path_check(path, 0);
}

int zkr__path_readable(const char *path)
{
    return path_check(path, 1);
}

char *zkr__path_child(const char *parent, size_t clen, char **child)
{
    size_t plen;
    char *out;

    if (parent == NULL || parent[0] == '\0' || child == NULL)
        return NULL;
    plen = strlen(parent);
    if (plen == 1 && parent[0] == '/')
        plen = 0; /* "/" + "child" -> "/child" */
    if (clen > SIZE_MAX - 2 || plen > SIZE_MAX - 2 - clen)
        return NULL;
    out = malloc(plen + 1 + clen + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, parent, plen);
    out[plen] = '/';
    out[plen + 1 + clen] = '\0';
    *child = out + plen + 1;
    return out;
}

char *zkr__path_join(const char *parent, const char *child)
{
    size_t clen;
    char *out, *p;

    if (child == NULL || child[0] == '\0' || strchr(child, '/') != NULL)
        return NULL;
    clen = strlen(child);
    out = zkr__path_child(parent, clen, &p);
    if (out != NULL)
        memcpy(p, child, clen);
    return out;
}

const char *zkr__path_basename(const char *path)
{
    const char *slash;

    if (path == NULL)
        return NULL;
    slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}
