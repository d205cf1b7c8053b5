/* Fuzz target: lock children as the server lists them.
 *
 * The first input byte picks a mode:
 *   bit 7 clear  raw names: the rest is split at NUL bytes into child names
 *                (any bytes a server could send); bits 0-2 pick the marker
 *                ("lock-", "lease-", "__READ__", "__WRIT__", "", or, for 5-7,
 *                the first piece is the marker itself).
 *   bit 7 set    Curator-shaped names built from 6-byte records (4 bytes of
 *                sequence as a signed int, a kind byte, a UUID seed byte):
 *                "_c_<uuid>-<marker><%010d of the sequence>", as ZooKeeper
 *                prints a sequence, negative past 2^31; bits 4-5 pick the
 *                recipe (mutex, semaphore lease, read/write lock).
 *
 * Checked: zkr__sort_key / zkr__rw_sort_key against a reference written
 * from Curator's rule (text after the LAST occurrence, overlaps counting);
 * zkr__sort_children with both keys: same names out as in, non-decreasing by
 * the comparator, equal keys in listing order (stable), a NULL entry refused
 * with the input untouched; for Curator-shaped names the order is the
 * sequence's (negatives first); zkr__downgrade_name (the writer's sequence
 * parsed out of its node path: exact bytes, bounds, and it sorts where the
 * writer stands); zkr__strvec_copy / find / find_prefix and
 * zkr__is_protected_for against linear references. */
#include "tests/fuzz/fuzz.h"
#include "util/util.h"

#include <string.h>

#define MAX_NAMES 512
#define MAX_PROBES 12
#define READ_MARKER "__READ__"
#define WRITE_MARKER "__WRIT__"

static const char *const markers[] = {"lock-", "lease-", READ_MARKER, WRITE_MARKER, ""};

/* Curator: str.substring(str.lastIndexOf(marker) + marker.length()), the
 * whole str if the marker does not occur.  A forward scan, unlike util's. */
static const char *ref_key(const char *name, const char *marker)
{
    size_t nlen = strlen(name), mlen = strlen(marker), i;
    const char *key = name;

    for (i = 0; i + mlen <= nlen; i++)
        if (strncmp(name + i, marker, mlen) == 0)
            key = name + i + mlen;
    return key;
}

static const char *ref_rw_key(const char *name, const char *marker)
{
    (void)marker;
    return ref_key(ref_key(name, READ_MARKER), WRITE_MARKER);
}

static const char *rw_key(const char *name, const char *marker)
{
    (void)marker;
    return zkr__rw_sort_key(name);
}

struct where {
    const char *p;
    size_t idx;
};

static int cmp_where(const void *a, const void *b)
{
    const struct where *x = a, *y = b;
    uintptr_t px = (uintptr_t)x->p, py = (uintptr_t)y->p;

    return px < py ? -1 : px > py;
}

/* idx[i] = the listing position of sorted[i]; checks that sorted holds
 * every pointer of orig exactly once */
static void listing_positions(char *const *orig, char *const *sorted, size_t n, size_t *idx)
{
    struct where *w = malloc(n * sizeof *w);
    unsigned char *seen = calloc(n, 1);
    size_t i;

    FUZZ_CHECK(w != NULL && seen != NULL);
    for (i = 0; i < n; i++) {
        w[i].p = orig[i];
        w[i].idx = i;
    }
    qsort(w, n, sizeof *w, cmp_where);
    for (i = 0; i < n; i++) {
        struct where key = {sorted[i], 0};
        struct where *hit = bsearch(&key, w, n, sizeof *w, cmp_where);
        FUZZ_CHECK(hit != NULL);
        FUZZ_CHECK(!seen[hit->idx]);
        seen[hit->idx] = 1;
        idx[i] = hit->idx;
    }
    free(w);
    free(seen);
}

/* Sort a copy of names; check it is a stable sort by ref's key.  Returns the
 * sorted copy (caller frees) and fills idx (listing positions). */
static char **check_sort(char **names, size_t n, zkr__key_fn key, const char *marker,
                         const char *(*ref)(const char *, const char *), size_t *idx)
{
    char **s = malloc(n * sizeof *s);
    size_t i;

    FUZZ_CHECK(s != NULL);
    memcpy(s, names, n * sizeof *s);
    FUZZ_CHECK(zkr__sort_children(s, n, key, marker) == 0);
    listing_positions(names, s, n, idx);
    for (i = 1; i < n; i++) {
        int c = strcmp(ref(s[i - 1], marker), ref(s[i], marker));
        FUZZ_CHECK(c <= 0);
        if (c == 0)
            FUZZ_CHECK(idx[i - 1] < idx[i]); /* stable: listing order kept */
    }
    return s;
}

/* A NULL entry anywhere refuses the whole sort and leaves names untouched. */
static void check_null_refused(char **names, size_t n, size_t pos, zkr__key_fn key, const char *marker)
{
    char **s, **before;

    if (n == 0)
        return;
    s = malloc(n * sizeof *s);
    before = malloc(n * sizeof *before);
    FUZZ_CHECK(s != NULL && before != NULL);
    memcpy(s, names, n * sizeof *s);
    s[pos % n] = NULL;
    memcpy(before, s, n * sizeof *s);
    if (n == 1) /* nothing to order: accepted as is */
        FUZZ_CHECK(zkr__sort_children(s, n, key, marker) == 0);
    else
        FUZZ_CHECK(zkr__sort_children(s, n, key, marker) == -1);
    FUZZ_CHECK(memcmp(s, before, n * sizeof *s) == 0);
    free(s);
    free(before);
}

static void check_keys(const char *name, const char *marker)
{
    size_t len = strlen(name);
    const char *k = zkr__sort_key(name, marker);
    const char *rk = zkr__rw_sort_key(name);

    FUZZ_CHECK(k != NULL && k >= name && k <= name + len);
    FUZZ_CHECK(k == ref_key(name, marker));
    FUZZ_CHECK(rk != NULL && rk >= name && rk <= name + len);
    FUZZ_CHECK(rk == ref_rw_key(name, NULL));
    FUZZ_CHECK(strstr(rk, WRITE_MARKER) == NULL);
    if (k != name) /* the marker stands right before the key */
        FUZZ_CHECK(k - name >= (ptrdiff_t)strlen(marker) &&
                   memcmp(k - strlen(marker), marker, strlen(marker)) == 0);
}

/* The downgrade read node made from a writer's node path: exact bytes,
 * refused without "__WRIT__" or when it does not fit out[len] (an exactly
 * sized buffer: a write past it is an ASan error); it sorts where the writer
 * stands whenever the writer sorts by its sequence text. */
static void check_downgrade(const char *write_path, size_t len)
{
    static const char uuid[] = "3f2a9c1e-5b7d-4e21-9a3c-0d1e2f3a4b5c";
    const char *seq = ref_key(write_path, WRITE_MARKER);
    size_t need = 3 + ZKR__UUID_LEN + 1 + strlen(READ_MARKER) + strlen(seq) + 1;
    char *out = malloc(len > 0 ? len : 1);
    int rc;

    FUZZ_CHECK(out != NULL);
    rc = zkr__downgrade_name(write_path, uuid, out, len);
    if (strstr(write_path, WRITE_MARKER) == NULL || len < need) {
        FUZZ_CHECK(rc == -1);
    } else {
        FUZZ_CHECK(rc == 0);
        FUZZ_CHECK(strlen(out) == need - 1);
        FUZZ_CHECK(memcmp(out, "_c_", 3) == 0 && memcmp(out + 3, uuid, ZKR__UUID_LEN) == 0);
        FUZZ_CHECK(strncmp(out + 3 + ZKR__UUID_LEN, "-" READ_MARKER, 9) == 0);
        FUZZ_CHECK(strcmp(out + 3 + ZKR__UUID_LEN + 9, seq) == 0);
        FUZZ_CHECK(zkr__is_protected_for(out, uuid) == 1);
        /* A writer that sorts by its sequence text (every real write node
         * does) has a read node that sorts by the same text.  Not so when
         * the markers overlap ("__READ__WRIT__1"): there the writer's key
         * is "WRIT__1" and no read node can stand in its place; Curator
         * has the same key and the same downgrade name. */
        if (ref_rw_key(write_path, NULL) == seq)
            FUZZ_CHECK(strcmp(zkr__rw_sort_key(out), seq) == 0);
    }
    free(out);
}

/* copy, find and find_prefix against linear scans, over the order given */
static void check_strvec(char **names, size_t n, const uint8_t *data, size_t size)
{
    zkr__strvec_t sv;
    size_t p, i, probes = n < MAX_PROBES ? n : MAX_PROBES;

    FUZZ_CHECK(zkr__strvec_copy(&sv, names, n) == 0);
    FUZZ_CHECK(sv.n == n);
    FUZZ_CHECK((n == 0) == (sv.v == NULL));
    for (i = 0; i < n; i++)
        FUZZ_CHECK(sv.v[i] != names[i] && strcmp(sv.v[i], names[i]) == 0);
    for (p = 0; p < probes; p++) {
        size_t j = p * n / probes;
        size_t jlen = strlen(names[j]);
        size_t plen = size > 0 ? data[(p * 7 + j) % size] % (jlen + 1) : jlen / 2;
        char *prefix = malloc(plen + 1);
        long want = -1, got;

        FUZZ_CHECK(prefix != NULL);
        memcpy(prefix, names[j], plen);
        prefix[plen] = '\0';
        for (i = 0; i < n && want < 0; i++)
            if (strcmp(names[i], names[j]) == 0)
                want = (long)i;
        got = zkr__strvec_find(&sv, names[j]);
        FUZZ_CHECK(got == want && got >= 0 && (size_t)got <= j);
        want = -1;
        for (i = 0; i < n && want < 0; i++)
            if (strncmp(names[i], prefix, plen) == 0)
                want = (long)i;
        got = zkr__strvec_find_prefix(&sv, prefix);
        FUZZ_CHECK(got == want && got >= 0 && (size_t)got <= j);

        /* the UUID part of a protected-looking name, as a probe for every
         * name: is_protected_for must agree with the prefix rule */
        if (jlen > 3 && memcmp(names[j], "_c_", 3) == 0) {
            size_t ulen = jlen - 3 < ZKR__UUID_LEN ? jlen - 3 : ZKR__UUID_LEN;
            char uuid[ZKR__UUID_LEN + 1];
            memcpy(uuid, names[j] + 3, ulen);
            uuid[ulen] = '\0';
            for (i = 0; i < n && i < 64; i++)
                FUZZ_CHECK(zkr__is_protected_for(names[i], uuid) == zkr_fuzz_ref_protected(names[i], uuid));
        }
        FUZZ_CHECK(zkr__is_protected_for(names[j], prefix) == zkr_fuzz_ref_protected(names[j], prefix));
        free(prefix);
    }
    /* a string that is none of the names (longer than all of them) */
    {
        size_t longest = 0;
        char *absent;
        for (i = 0; i < n; i++)
            if (strlen(names[i]) > longest)
                longest = strlen(names[i]);
        absent = malloc(longest + 2);
        FUZZ_CHECK(absent != NULL);
        memset(absent, 'x', longest + 1);
        absent[longest + 1] = '\0';
        FUZZ_CHECK(zkr__strvec_find(&sv, absent) == -1);
        FUZZ_CHECK(zkr__strvec_find_prefix(&sv, absent) == -1);
        free(absent);
    }
    FUZZ_CHECK(zkr__strvec_find(&sv, NULL) == -1);
    FUZZ_CHECK(zkr__strvec_find_prefix(&sv, NULL) == -1);
    zkr__strvec_free(&sv);
    FUZZ_CHECK(sv.v == NULL && sv.n == 0);
}

static void raw_names(const uint8_t *data, size_t size)
{
    unsigned pick = data[0] & 7;
    size_t n = 0, i;
    char **pieces = zkr_fuzz_split(data + 1, size - 1, MAX_NAMES + 1, &n);
    char **names;
    const char *marker;
    size_t *idx;
    char **s;

    FUZZ_CHECK(pieces != NULL);
    if (pick < 5) {
        marker = markers[pick];
        names = pieces;
    } else {
        if (n < 1) {
            zkr_fuzz_free_pieces(pieces, n);
            return;
        }
        marker = pieces[0];
        names = pieces + 1;
        n--;
    }
    for (i = 0; i < n; i++)
        check_keys(names[i], marker);
    for (i = 0; i < n && i < MAX_PROBES; i++) {
        size_t full = 3 + ZKR__UUID_LEN + 1 + strlen(READ_MARKER) + strlen(ref_key(names[i], WRITE_MARKER)) + 1;
        check_downgrade(names[i], full);                    /* just fits */
        check_downgrade(names[i], full - 1);                /* one short */
        check_downgrade(names[i], data[i % size] % (full + 1)); /* any size */
    }
    if (n > 0) {
        idx = malloc(n * sizeof *idx);
        FUZZ_CHECK(idx != NULL);
        s = check_sort(names, n, zkr__sort_key, marker, ref_key, idx);
        check_strvec(s, n, data, size);
        free(s);
        s = check_sort(names, n, rw_key, NULL, ref_rw_key, idx);
        free(s);
        free(idx);
        check_null_refused(names, n, size, zkr__sort_key, marker);
        check_null_refused(names, n, data[size - 1], rw_key, NULL);
    }
    check_strvec(names, n, data, size);
    FUZZ_CHECK(zkr__sort_children(names, 0, zkr__sort_key, marker) == 0);
    zkr_fuzz_free_pieces(pieces, n + (pick < 5 ? 0 : 1));
}

struct rec {
    char uuid[ZKR__UUID_LEN + 1];
    int32_t seq;
    int marked;        /* has the recipe's marker: sorts by sequence */
    const char *text;  /* what it must sort by: the sequence text, or the whole name */
};

static int32_t seq_of(const uint8_t *b)
{
    uint32_t u = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    return u <= INT32_MAX ? (int32_t)u : (int32_t)((int64_t)u - 4294967296LL);
}

static void fake_uuid(unsigned seed, char out[ZKR__UUID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint32_t x = seed * 2654435761u + 12345u;
    size_t i;

    for (i = 0; i < ZKR__UUID_LEN; i++) {
        x = x * 1103515245u + 12345u;
        out[i] = (i == 8 || i == 13 || i == 18 || i == 23) ? '-' : hex[(x >> 16) & 15];
    }
    out[ZKR__UUID_LEN] = '\0';
}

static void curator_names(const uint8_t *data, size_t size)
{
    unsigned family = (data[0] >> 4) & 3; /* 0 mutex, 1 lease, 2-3 rwlock */
    size_t n = (size - 1) / 6, i;
    char **names;
    struct rec *r;
    size_t *idx;
    char **s;

    if (n > MAX_NAMES)
        n = MAX_NAMES;
    if (n == 0)
        return;
    names = calloc(n, sizeof *names);
    r = calloc(n, sizeof *r);
    idx = malloc(n * sizeof *idx);
    FUZZ_CHECK(names != NULL && r != NULL && idx != NULL);
    for (i = 0; i < n; i++) {
        const uint8_t *b = data + 1 + 6 * i;
        unsigned kind = b[4];
        const char *m = family == 0 ? "lock-" : family == 1 ? "lease-" : (kind & 1) ? READ_MARKER : WRITE_MARKER;
        char seqtext[16];
        char buf[128];
        int len;

        r[i].seq = seq_of(b);
        fake_uuid(b[5], r[i].uuid);
        snprintf(seqtext, sizeof seqtext, "%010d", (int)r[i].seq); /* ZooKeeper's format */
        if ((kind & 0xc0) == 0xc0) /* a stranger's node: no marker at all */
            len = snprintf(buf, sizeof buf, "foreign-%s", seqtext);
        else if (kind & 0x80) /* not protected: Curator without protection */
            len = snprintf(buf, sizeof buf, "%s%s", m, seqtext);
        else
            len = snprintf(buf, sizeof buf, "_c_%s-%s%s", r[i].uuid, m, seqtext);
        FUZZ_CHECK(len > 0 && (size_t)len < sizeof buf);
        names[i] = strdup(buf);
        FUZZ_CHECK(names[i] != NULL);
        r[i].marked = (kind & 0xc0) != 0xc0;
        r[i].text = r[i].marked ? names[i] + len - strlen(seqtext) : names[i];
        if (!(kind & 0x80))
            FUZZ_CHECK(zkr__is_protected_for(names[i], r[i].uuid) == 1);
        if (family >= 2 && r[i].marked && !(kind & 1)) {
            /* a writer's downgrade read node: "__READ__" + the writer's own
             * sequence, so it sorts exactly where the writer stood */
            char down[128], path[160];
            snprintf(path, sizeof path, "/rw/%s", names[i]);
            FUZZ_CHECK(zkr__downgrade_name(path, r[i].uuid, down, sizeof down) == 0);
            FUZZ_CHECK(strcmp(zkr__rw_sort_key(down), seqtext) == 0);
            FUZZ_CHECK(strcmp(zkr__rw_sort_key(down), zkr__rw_sort_key(names[i])) == 0);
            check_downgrade(path, sizeof down);
        }
    }
    if (family < 2)
        s = check_sort(names, n, zkr__sort_key, family == 0 ? "lock-" : "lease-", ref_key, idx);
    else
        s = check_sort(names, n, rw_key, NULL, ref_rw_key, idx);
    /* the order the wire format states, from how the names were made */
    for (i = 1; i < n; i++) {
        const struct rec *a = &r[idx[i - 1]], *b = &r[idx[i]];
        int c = strcmp(a->text, b->text);
        FUZZ_CHECK(c < 0 || (c == 0 && idx[i - 1] < idx[i]));
        if (a->marked && b->marked) {
            FUZZ_CHECK(!(a->seq >= 0 && b->seq < 0)); /* past 2^31 sorts first */
            if (a->seq >= 0 && b->seq >= 0)
                FUZZ_CHECK(a->seq <= b->seq);
        }
    }
    /* the lost-create recovery: find our node by "_c_<uuid>-" in the listing */
    {
        zkr__strvec_t sv;
        FUZZ_CHECK(zkr__strvec_copy(&sv, s, n) == 0);
        for (i = 0; i < n && i < MAX_PROBES; i++) {
            char prefix[ZKR__UUID_LEN + 8];
            long got, want = -1;
            size_t k;
            snprintf(prefix, sizeof prefix, "_c_%s-", r[i].uuid);
            for (k = 0; k < n && want < 0; k++)
                if (zkr_fuzz_ref_protected(s[k], r[i].uuid))
                    want = (long)k;
            got = zkr__strvec_find_prefix(&sv, prefix);
            FUZZ_CHECK(got == want);
            if (got >= 0)
                FUZZ_CHECK(strcmp(r[idx[got]].uuid, r[i].uuid) == 0);
        }
        zkr__strvec_free(&sv);
    }
    free(s);
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(r);
    free(idx);
}

int zkr_fuzz_names(const uint8_t *data, size_t size)
{
    if (size == 0) {
        FUZZ_CHECK(zkr__sort_key(NULL, "lock-") == NULL);
        FUZZ_CHECK(zkr__rw_sort_key(NULL) == NULL);
        FUZZ_CHECK(zkr__sort_children(NULL, 0, zkr__sort_key, "lock-") == 0);
        return 0;
    }
    if (data[0] & 0x80)
        curator_names(data, size);
    else
        raw_names(data, size);
    return 0;
}

ZKR_FUZZ_ENTRY(zkr_fuzz_names)
