/* Fuzz target: paths and the names joined onto them.
 *
 * The input is split at NUL bytes into up to four pieces: a parent path, a
 * child name (a server's listing), a UUID and a marker.  Checked:
 * zkr__path_valid against a reference written from its contract;
 * zkr__path_join (exact bytes; a valid parent joined with a valid component
 * is valid, and only then: the join of a valid path never hides a bad
 * parent or child); zkr__path_basename; zkr__protected_path (exact bytes,
 * and its last component is recognised by zkr__is_protected_for). */
#include "tests/fuzz/fuzz.h"
#include "util/util.h"

#include <string.h>

/* ZooKeeper's character rule (PathUtils.validatePath) on the UTF-16 the
 * server decodes our bytes into: the code point at c (n bytes left), or -1
 * if the bytes are not one well-formed UTF-8 character of at most 3 bytes
 * (4-byte ones become surrogate pairs, malformed bytes U+FFFD: refused). */
static long ref_code_point(const unsigned char *c, size_t n, size_t *used)
{
    size_t want = c[0] < 0x80 ? 1 : (c[0] >> 5) == 0x6 ? 2 : (c[0] >> 4) == 0xe ? 3 : 0;
    if (want == 0 || want > n)
        return -1;
    long cp = want == 1 ? c[0] : want == 2 ? (c[0] & 0x1f) : (c[0] & 0x0f);
    for (size_t i = 1; i < want; i++) {
        if ((c[i] >> 6) != 0x2)
            return -1;
        cp = (cp << 6) | (c[i] & 0x3f);
    }
    static const long min_for[4] = {0, 0, 0x80, 0x800}; /* no overlong forms */
    if (cp < min_for[want])
        return -1;
    *used = want;
    return cp;
}

static int ref_code_point_ok(long cp)
{
    if (cp < 0)
        return 0;
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
        return 0;
    if (cp >= 0xd800 && cp < 0xf900)
        return 0;
    return cp < 0xfff0;
}

/* a component a path may have: not empty, not "." or "..", no '/' and only
 * characters ZooKeeper accepts */
static int ref_component_ok(const char *c, size_t len)
{
    if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
        return 0;
    for (size_t i = 0; i < len;) {
        size_t used = 0;
        if (c[i] == '/' || !ref_code_point_ok(ref_code_point((const unsigned char *)c + i, len - i, &used)))
            return 0;
        i += used;
    }
    return 1;
}

/* The contract of zkr__path_valid, component by component. */
static int ref_path_valid(const char *p)
{
    size_t len = strlen(p);
    const char *c, *end;

    if (len < 2 || len > ZKR__PATH_MAX || p[0] != '/')
        return 0;
    if (strcmp(p, "/zookeeper") == 0 || strncmp(p, "/zookeeper/", 11) == 0)
        return 0;
    for (c = p + 1;; c = end + 1) {
        end = strchr(c, '/');
        if (end == NULL)
            return ref_component_ok(c, strlen(c));
        if (!ref_component_ok(c, (size_t)(end - c)))
            return 0;
    }
}

static void check_basename(const char *p)
{
    const char *b = zkr__path_basename(p);
    const char *slash = strrchr(p, '/');

    FUZZ_CHECK(b != NULL && b >= p && b <= p + strlen(p));
    FUZZ_CHECK(strchr(b, '/') == NULL);
    FUZZ_CHECK(b == (slash != NULL ? slash + 1 : p));
}

static void check_join(const char *parent, const char *child)
{
    size_t plen = strlen(parent), clen = strlen(child);
    int root = strcmp(parent, "/") == 0;
    char *j = zkr__path_join(parent, child);

    if (plen == 0 || clen == 0 || strchr(child, '/') != NULL) {
        FUZZ_CHECK(j == NULL);
        return;
    }
    FUZZ_CHECK(j != NULL);
    {
        size_t head = root ? 0 : plen;
        FUZZ_CHECK(strlen(j) == head + 1 + clen);
        FUZZ_CHECK(memcmp(j, parent, head) == 0);
        FUZZ_CHECK(j[head] == '/');
        FUZZ_CHECK(strcmp(j + head + 1, child) == 0);
    }
    FUZZ_CHECK(zkr__path_basename(j) == j + strlen(j) - clen);
    check_basename(j);
    {
        int vj = zkr__path_valid(j);
        int cok = ref_component_ok(child, clen);
        FUZZ_CHECK(vj == ref_path_valid(j));
        if (root) /* "/" + child: valid iff child is, bar the reserved tree */
            FUZZ_CHECK(vj == (cok && strcmp(child, "zookeeper") != 0 && clen + 1 <= ZKR__PATH_MAX));
        else /* valid exactly when both halves are and it is short enough */
            FUZZ_CHECK(vj == (zkr__path_valid(parent) && cok && plen + 1 + clen <= ZKR__PATH_MAX));
    }
    free(j);
}

static void check_protected(const char *dir, const char *uuid, const char *marker)
{
    size_t dlen = strlen(dir), ulen = strlen(uuid), mlen = strlen(marker);
    int root = strcmp(dir, "/") == 0;
    char *p = zkr__protected_path(dir, uuid, marker);
    size_t head = root ? 0 : dlen;

    if (dlen == 0) {
        FUZZ_CHECK(p == NULL);
        return;
    }
    FUZZ_CHECK(p != NULL);
    FUZZ_CHECK(strlen(p) == head + 4 + ulen + 1 + mlen);
    FUZZ_CHECK(memcmp(p, dir, head) == 0);
    FUZZ_CHECK(memcmp(p + head, "/_c_", 4) == 0);
    FUZZ_CHECK(memcmp(p + head + 4, uuid, ulen) == 0);
    FUZZ_CHECK(p[head + 4 + ulen] == '-');
    FUZZ_CHECK(strcmp(p + head + 4 + ulen + 1, marker) == 0);
    check_basename(p);
    if (strchr(uuid, '/') == NULL && strchr(marker, '/') == NULL) {
        const char *base = zkr__path_basename(p);
        FUZZ_CHECK(base == p + head + 1);
        FUZZ_CHECK(zkr__is_protected_for(base, uuid) == 1);
        /* the node ZooKeeper makes of it, as recovery joins it back */
        check_join(dir, base);
    }
    free(p);
}

int zkr_fuzz_paths(const uint8_t *data, size_t size)
{
    size_t n = 0, i;
    char **pc = zkr_fuzz_split(data, size, 4, &n);
    const char *parent, *child, *uuid, *marker;

    FUZZ_CHECK(pc != NULL);
    parent = n > 0 ? pc[0] : "";
    child = n > 1 ? pc[1] : "";
    uuid = n > 2 ? pc[2] : "";
    marker = n > 3 ? pc[3] : "lock-";

    for (i = 0; i < n; i++) {
        FUZZ_CHECK(zkr__path_valid(pc[i]) == ref_path_valid(pc[i]));
        check_basename(pc[i]);
    }
    check_join(parent, child);
    check_join("/", child);
    check_join(parent, "lock-0000000001");
    check_protected(parent, uuid, marker);
    check_protected("/", uuid, marker);
    FUZZ_CHECK(zkr__is_protected_for(child, uuid) == zkr_fuzz_ref_protected(child, uuid));
    FUZZ_CHECK(zkr__is_protected_for(parent, child) == zkr_fuzz_ref_protected(parent, child));

    FUZZ_CHECK(zkr__path_valid(NULL) == 0);
    FUZZ_CHECK(zkr__path_join(NULL, child) == NULL && zkr__path_join(parent, NULL) == NULL);
    FUZZ_CHECK(zkr__path_basename(NULL) == NULL);
    FUZZ_CHECK(zkr__protected_path(NULL, uuid, marker) == NULL);
    FUZZ_CHECK(zkr__is_protected_for(NULL, uuid) == 0 && zkr__is_protected_for(child, NULL) == 0);
    zkr_fuzz_free_pieces(pc, n);
    return 0;
}

ZKR_FUZZ_ENTRY(zkr_fuzz_paths)
