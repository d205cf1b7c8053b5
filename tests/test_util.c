/* Unit tests for util/ (no ZooKeeper server needed). */
#include "util/util.h"

#include <CUnit/Basic.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
    /* xorshift64*: deterministic so failures reproduce */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

static size_t rng_below(size_t n)
{
    return (size_t)(rng() % (uint64_t)n);
}

static void shuffle(char **v, size_t n)
{
    size_t i;

    for (i = n; i > 1; i--) {
        size_t j = rng_below(i);
        char *t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* malloc'd string of `len` copies of c */
static char *repeat(char c, size_t len)
{
    char *s = malloc(len + 1);

    if (s == NULL)
        return NULL;
    memset(s, c, len);
    s[len] = '\0';
    return s;
}

/* malloc'd printf */
static char *fmt(const char *f, const char *a, const char *b, int n)
{
    int len = snprintf(NULL, 0, f, a, b, n);
    char *s;

    if (len < 0)
        return NULL;
    s = malloc((size_t)len + 1);
    if (s != NULL)
        snprintf(s, (size_t)len + 1, f, a, b, n);
    return s;
}

static void free_all(char **v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(v[i]);
}

/* zkr__key_fn adapter for the read/write key */
static const char *rw_key(const char *name, const char *marker)
{
    (void)marker;
    return zkr__rw_sort_key(name);
}

/* Reference: stable insertion sort by strcmp of key. */
static void ref_sort(char **v, size_t n, zkr__key_fn key, const char *marker)
{
    size_t i, j;

    for (i = 1; i < n; i++) {
        char *x = v[i];
        const char *kx = key(x, marker);
        for (j = i; j > 0 && strcmp(key(v[j - 1], marker), kx) > 0; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* ---- paths ------------------------------------------------------------ */

/* The one UTF-8 decoder (paths, leader ids, zkr-lock's escaping). */
static void test_utf8(void)
{
    static const struct {
        const char *s;
        size_t len;   /* the first sequence's length, 0 if refused */
        uint32_t cp;
    } cases[] = {
        {"a", 1, 'a'},
        {"\xc3\xa9", 2, 0xe9},
        {"\xc2\x9b", 2, 0x9b},          /* a C1 control: well-formed */
        {"\xe2\x82\xac", 3, 0x20ac},
        {"\xf0\x9f\x98\x80", 4, 0x1f600},
        {"\xf4\x8f\xbf\xbf", 4, 0x10ffff},
        {"\xc0\xaf", 0, 0},             /* overlong */
        {"\xe0\x80\xaf", 0, 0},         /* overlong */
        {"\xed\xa0\x80", 0, 0},         /* a surrogate */
        {"\xf4\x90\x80\x80", 0, 0},     /* past U+10FFFF */
        {"\xff", 0, 0},
        {"\x80", 0, 0},                 /* a lone continuation */
        {"\xe2\x82", 0, 0},             /* cut short */
        {"\xe2\x28\xa1", 0, 0},         /* not a continuation */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t cp = 0;
        size_t n = zkr__utf8_decode((const unsigned char *)cases[i].s, strlen(cases[i].s), &cp);
        CU_ASSERT_EQUAL(n, cases[i].len);
        if (n)
            CU_ASSERT_EQUAL(cp, cases[i].cp);
        CU_ASSERT_EQUAL(zkr__utf8_valid(cases[i].s, strlen(cases[i].s)), cases[i].len > 0);
    }
    CU_ASSERT_EQUAL(zkr__utf8_decode((const unsigned char *)"a", 0, &(uint32_t){0}), 0);
    CU_ASSERT_TRUE(zkr__utf8_valid("", 0));
    CU_ASSERT_TRUE(zkr__utf8_valid("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z", 11));
    CU_ASSERT_FALSE(zkr__utf8_valid("a\xc3\xa9\xe2\x82", 5));
}

static void test_path_valid_table(void)
{
    static const char *good[] = {
        "/a", "/locks", "/locks/mutex", "/a/b/c/d", "/zookeeperx",
        "/zoo/keeper", "/a/zookeeper", "/my.lock", "/...", "/a/.b",
        "/a/..b", "/a/b.", "/_c_x-lock-", "/a b", "/\xc3\xbc\xe2\x82\xac",
        "/~!@#$%^&*()", "/-2147483648", "/\xc2\xa0", "/\xef\xbf\xaf", "/\xef\xa4\x80",
    };
    static const char *bad[] = {
        "", "/", "a", "a/b", "locks/mutex", "/a/", "/a/b/", "//", "//a",
        "/a//b", "/.", "/..", "/./a", "/../a", "/a/./b", "/a/../b", "/a/.",
        "/a/..", "/a\x01", "/\x01", "/a\x1fz", "/a\tb", "/a\nb", "/a\rb",
        "/a\x7f", "/\x7f/b", "/a/b\x1b[0m", "/zookeeper", "/zookeeper/",
        "/zookeeper/quota", "/zookeeper/config/x",
        /* bytes ZooKeeper refuses: C1 controls, U+FFFF, private use,
         * 4-byte UTF-8 (surrogate pairs in Java), malformed UTF-8 */
        "/a\xc2\x80", "/\xc2\x9f", "/\xef\xbf\xbf", "/\xef\xbf\xb0", "/\xee\x80\x80",
        "/\xf0\x9f\x98\x80", "/\xff", "/a\xc3", "/\xc0\xaf", "/\xe0\x80\xaf", "/\xed\xa0\x80",
    };
    size_t i;

    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        if (!zkr__path_valid(good[i]))
            fprintf(stderr, "\n  expected valid: \"%s\"\n", good[i]);
        CU_ASSERT_EQUAL(zkr__path_valid(good[i]), 1);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (zkr__path_valid(bad[i]))
            fprintf(stderr, "\n  expected invalid: bad[%zu]\n", i);
        CU_ASSERT_EQUAL(zkr__path_valid(bad[i]), 0);
    }
    CU_ASSERT_EQUAL(zkr__path_valid(NULL), 0);
}

static void test_path_valid_length(void)
{
    char *p;

    /* exactly ZKR__PATH_MAX is allowed, one more is not */
    p = repeat('x', ZKR__PATH_MAX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    p[0] = '/';
    CU_ASSERT_EQUAL(zkr__path_valid(p), 1);
    free(p);

    p = repeat('x', ZKR__PATH_MAX + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    p[0] = '/';
    CU_ASSERT_EQUAL(zkr__path_valid(p), 0);
    free(p);

    /* a huge name from a hostile server */
    p = repeat('x', 1000000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    p[0] = '/';
    CU_ASSERT_EQUAL(zkr__path_valid(p), 0);
    free(p);

    /* many short components within the limit */
    p = repeat('/', ZKR__PATH_MAX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    {
        size_t i;
        for (i = 1; i < ZKR__PATH_MAX; i += 2)
            p[i] = 'a';
        p[ZKR__PATH_MAX - 1] = 'a';
    }
    CU_ASSERT_EQUAL(zkr__path_valid(p), 1);
    /* a control character at the very end */
    p[ZKR__PATH_MAX - 1] = '\x01';
    CU_ASSERT_EQUAL(zkr__path_valid(p), 0);
    free(p);
}

static void test_path_join(void)
{
    char *s, *big;

    s = zkr__path_join("/a", "b");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(s, "/a/b");
    free(s);

    s = zkr__path_join("/", "b");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(s, "/b");
    free(s);

    s = zkr__path_join("/locks/mutex", "_c_1234-lock-0000000001");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(s, "/locks/mutex/_c_1234-lock-0000000001");
    free(s);

    /* untrusted child of any length */
    big = repeat('n', 200000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    s = zkr__path_join("/d", big);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(strlen(s), 200003);
    CU_ASSERT_EQUAL(strncmp(s, "/d/nnn", 6), 0);
    CU_ASSERT_STRING_EQUAL(zkr__path_basename(s), big);
    free(s);
    free(big);

    CU_ASSERT_PTR_NULL(zkr__path_join(NULL, "b"));
    CU_ASSERT_PTR_NULL(zkr__path_join("/a", NULL));
    CU_ASSERT_PTR_NULL(zkr__path_join(NULL, NULL));
    CU_ASSERT_PTR_NULL(zkr__path_join("/a", "b/c"));
    CU_ASSERT_PTR_NULL(zkr__path_join("/a", "/"));
    CU_ASSERT_PTR_NULL(zkr__path_join("/a", ""));
    CU_ASSERT_PTR_NULL(zkr__path_join("", "b"));
}

static void test_path_basename(void)
{
    const char *p = "/a/b";

    CU_ASSERT_STRING_EQUAL(zkr__path_basename("/a/b"), "b");
    CU_ASSERT_STRING_EQUAL(zkr__path_basename("/a"), "a");
    CU_ASSERT_STRING_EQUAL(zkr__path_basename("/locks/m/_c_x-lock-0000000007"),
                           "_c_x-lock-0000000007");
    CU_ASSERT_STRING_EQUAL(zkr__path_basename("/"), "");
    CU_ASSERT_STRING_EQUAL(zkr__path_basename("plain"), "plain");
    CU_ASSERT_STRING_EQUAL(zkr__path_basename(""), "");
    /* a pointer into the argument, not a copy */
    CU_ASSERT_PTR_EQUAL(zkr__path_basename(p), p + 3);
    CU_ASSERT_PTR_NULL(zkr__path_basename(NULL));
}

/* ---- uuid / protected names ------------------------------------------- */

static int is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int uuid_well_formed(const char *u)
{
    size_t i;

    if (strlen(u) != ZKR__UUID_LEN)
        return 0;
    for (i = 0; i < ZKR__UUID_LEN; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (u[i] != '-')
                return 0;
        } else if (!is_lower_hex(u[i])) {
            return 0;
        }
    }
    if (u[14] != '4')
        return 0;
    if (strchr("89ab", u[19]) == NULL)
        return 0;
    return 1;
}

static void test_uuid_format(void)
{
    char u[ZKR__UUID_LEN + 1];
    int i;

    for (i = 0; i < 200; i++) {
        memset(u, 'X', sizeof u);
        CU_ASSERT_EQUAL_FATAL(zkr__uuid(u), 0);
        CU_ASSERT_EQUAL(u[ZKR__UUID_LEN], '\0');
        CU_ASSERT_EQUAL(strlen(u), 36);
        CU_ASSERT_EQUAL(u[8], '-');
        CU_ASSERT_EQUAL(u[13], '-');
        CU_ASSERT_EQUAL(u[18], '-');
        CU_ASSERT_EQUAL(u[23], '-');
        CU_ASSERT_EQUAL(u[14], '4');
        CU_ASSERT_PTR_NOT_NULL(strchr("89ab", u[19]));
        CU_ASSERT_TRUE(uuid_well_formed(u));
    }
    CU_ASSERT_EQUAL(zkr__uuid(NULL), -1);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void test_uuid_distinct(void)
{
    enum { N = 1000 };
    char (*u)[ZKR__UUID_LEN + 1] = malloc(N * sizeof *u);
    size_t i, dups = 0;
    unsigned seen_variant = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    for (i = 0; i < N; i++) {
        CU_ASSERT_EQUAL_FATAL(zkr__uuid(u[i]), 0);
        CU_ASSERT_TRUE(uuid_well_formed(u[i]));
        seen_variant |= 1u << (strchr("89ab", u[i][19]) - "89ab");
    }
    qsort(u, N, sizeof *u, cmp_str);
    for (i = 1; i < N; i++)
        if (strcmp(u[i - 1], u[i]) == 0)
            dups++;
    CU_ASSERT_EQUAL(dups, 0);
    /* all four variant digits turn up in 1000 draws: the bits are random */
    CU_ASSERT_EQUAL(seen_variant, 0xfu);
    free(u);
}

static void test_protected_path(void)
{
    const char *id = "0f8fad5b-d9cb-469f-a165-70867728950e";
    char *p;

    p = zkr__protected_path("/locks/m", id, "lock-");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_STRING_EQUAL(p, "/locks/m/_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-");
    free(p);

    p = zkr__protected_path("/", id, "lock-");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_STRING_EQUAL(p, "/_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-");
    free(p);

    p = zkr__protected_path("/rw", id, "__READ__");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_STRING_EQUAL(p, "/rw/_c_0f8fad5b-d9cb-469f-a165-70867728950e-__READ__");
    /* the created node (path + sequence) is recognised as ours */
    {
        char name[256];
        snprintf(name, sizeof name, "%s0000000042", zkr__path_basename(p));
        CU_ASSERT_TRUE(zkr__is_protected_for(name, id));
        CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key(name), "0000000042");
    }
    free(p);

    /* with a fresh uuid */
    {
        char u[ZKR__UUID_LEN + 1];
        CU_ASSERT_EQUAL_FATAL(zkr__uuid(u), 0);
        p = zkr__protected_path("/a/b", u, "lease-");
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(strlen(p), strlen("/a/b/_c_") + 36 + strlen("-lease-"));
        CU_ASSERT_TRUE(zkr__is_protected_for(zkr__path_basename(p), u));
        free(p);
    }

    CU_ASSERT_PTR_NULL(zkr__protected_path(NULL, id, "lock-"));
    CU_ASSERT_PTR_NULL(zkr__protected_path("/a", NULL, "lock-"));
    CU_ASSERT_PTR_NULL(zkr__protected_path("/a", id, NULL));
}

static void test_is_protected_for(void)
{
    const char *id = "0f8fad5b-d9cb-469f-a165-70867728950e";
    const char *other = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-0000000001", id), 1);
    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_0f8fad5b-d9cb-469f-a165-70867728950e-", id), 1);
    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_7c9e6679-7425-40de-944b-e07fc1f90ae7-lock-0000000001", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_7c9e6679-7425-40de-944b-e07fc1f90ae7-lock-0000000001", other), 1);
    /* no separator, wrong separator, longer uuid, truncated uuid */
    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_0f8fad5b-d9cb-469f-a165-70867728950e", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_0f8fad5b-d9cb-469f-a165-70867728950e_lock-1", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_0f8fad5b-d9cb-469f-a165-70867728950eff-lock-1", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_0f8fad5b-d9cb-469f-a165-7086772895", id), 0);
    /* no prefix, prefix elsewhere, case matters */
    CU_ASSERT_EQUAL(zkr__is_protected_for("0f8fad5b-d9cb-469f-a165-70867728950e-lock-1", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("x_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-1", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("_C_0f8fad5b-d9cb-469f-a165-70867728950e-lock-1", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("lock-0000000001", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_", id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for(NULL, id), 0);
    CU_ASSERT_EQUAL(zkr__is_protected_for("_c_x-lock-1", NULL), 0);
}

/* ---- sort keys -------------------------------------------------------- */

static void test_sort_key(void)
{
    const char *n = "_c_0f8fad5b-d9cb-469f-a165-70867728950e-lock-0000000005";

    CU_ASSERT_STRING_EQUAL(zkr__sort_key(n, "lock-"), "0000000005");
    /* the key points into the name */
    CU_ASSERT_PTR_EQUAL(zkr__sort_key(n, "lock-"), n + strlen(n) - 10);
    /* unprotected (plain) node */
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("lock-0000000012", "lock-"), "0000000012");
    /* marker absent: the whole name */
    {
        const char *f = "foreign-node";
        CU_ASSERT_PTR_EQUAL(zkr__sort_key(f, "lock-"), f);
        CU_ASSERT_PTR_EQUAL(zkr__sort_key(f, "a-longer-marker-than-the-name"), f);
        CU_ASSERT_PTR_EQUAL(zkr__sort_key(f, NULL), f);
    }
    /* marker twice: the last occurrence wins */
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("_c_u-lock-lock-0000000003", "lock-"), "0000000003");
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("lock-abc-lock-0000000009", "lock-"), "0000000009");
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("lock-0000000001lock-x", "lock-"), "x");
    /* marker at the very end: empty key */
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("_c_u-lock-", "lock-"), "");
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("lock-", "lock-"), "");
    /* empty marker: Java lastIndexOf("") == length, so the key is "" */
    {
        const char *s = "lock-0000000001";
        CU_ASSERT_STRING_EQUAL(zkr__sort_key(s, ""), "");
        CU_ASSERT_PTR_EQUAL(zkr__sort_key(s, ""), s + strlen(s));
        CU_ASSERT_STRING_EQUAL(zkr__sort_key("", ""), "");
    }
    /* empty name */
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("", "lock-"), "");
    /* overlapping occurrences: Java's lastIndexOf("aa") in "xaaay" is 2 */
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("xaaay", "aa"), "y");
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("aaa", "aa"), "");
    /* marker at the very start */
    CU_ASSERT_STRING_EQUAL(zkr__sort_key("lock-x", "lock-"), "x");
    CU_ASSERT_PTR_NULL(zkr__sort_key(NULL, "lock-"));
}

static void test_sort_key_long_name(void)
{
    /* a hostile-length name: marker near the end, and absent */
    size_t len = 500000;
    char *s = repeat('k', len);

    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    memcpy(s + 10, "lock-", 5);
    memcpy(s + len - 15, "lock-0000000077", 15);
    CU_ASSERT_STRING_EQUAL(zkr__sort_key(s, "lock-"), "0000000077");
    memset(s, 'k', len);
    CU_ASSERT_PTR_EQUAL(zkr__sort_key(s, "lock-"), s);
    free(s);
}

static void test_rw_sort_key(void)
{
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("_c_u-__READ__0000000003"), "0000000003");
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("_c_u-__WRIT__0000000004"), "0000000004");
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("__READ__0000000000"), "0000000000");
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("__WRIT__0000000000"), "0000000000");
    /* READ is stripped first, then WRIT on what remains */
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("__READ__x__WRIT__0000000005"), "0000000005");
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("__WRIT__x__READ__0000000006"), "0000000006");
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("a__READ__b__READ__c"), "c");
    /* neither marker: whole name */
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("lock-0000000001"), "lock-0000000001");
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("__READ_0000000001"), "__READ_0000000001");
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key("_c_u-__READ__"), "");
    CU_ASSERT_PTR_NULL(zkr__rw_sort_key(NULL));
}

/* ---- sorting ------------------------------------------------------------ */

static void test_sort_protected_shuffled(void)
{
    enum { N = 64 };
    char *v[N];
    char u[ZKR__UUID_LEN + 1];
    char seq[16];
    size_t i;

    for (i = 0; i < N; i++) {
        CU_ASSERT_EQUAL_FATAL(zkr__uuid(u), 0);
        snprintf(seq, sizeof seq, "%010d", (int)(i * 7 + 3));
        /* a few plain (unprotected) nodes among them, like old clients */
        if (i % 9 == 4)
            v[i] = fmt("%slock-%s%.0d", "", seq, 0);
        else
            v[i] = fmt("_c_%s-lock-%s%.0d", u, seq, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v[i]);
    }
    shuffle(v, N);
    CU_ASSERT_EQUAL(zkr__sort_children(v, N, zkr__sort_key, "lock-"), 0);
    for (i = 0; i < N; i++) {
        snprintf(seq, sizeof seq, "%010d", (int)(i * 7 + 3));
        CU_ASSERT_STRING_EQUAL(zkr__sort_key(v[i], "lock-"), seq);
    }
    /* the uuid must not influence the order: names with uuids that sort
     * against the sequence still come out by sequence */
    {
        char *w[3] = { "_c_ffffffff-ffff-4fff-bfff-ffffffffffff-lock-0000000001",
                       "_c_00000000-0000-4000-8000-000000000000-lock-0000000002",
                       "lock-0000000000" };
        CU_ASSERT_EQUAL(zkr__sort_children(w, 3, zkr__sort_key, "lock-"), 0);
        CU_ASSERT_STRING_EQUAL(w[0], "lock-0000000000");
        CU_ASSERT_STRING_EQUAL(w[1], "_c_ffffffff-ffff-4fff-bfff-ffffffffffff-lock-0000000001");
        CU_ASSERT_STRING_EQUAL(w[2], "_c_00000000-0000-4000-8000-000000000000-lock-0000000002");
    }
    free_all(v, N);
}

static void test_sort_rw_interleave(void)
{
    char *v[] = {
        "_c_bbbb-__WRIT__0000000004",
        "_c_aaaa-__READ__0000000001",
        "_c_cccc-__READ__0000000005",
        "_c_dddd-__WRIT__0000000000",
        "_c_eeee-__READ__0000000003",
        "_c_ffff-__WRIT__0000000002",
    };
    const char *want[] = {
        "_c_dddd-__WRIT__0000000000",
        "_c_aaaa-__READ__0000000001",
        "_c_ffff-__WRIT__0000000002",
        "_c_eeee-__READ__0000000003",
        "_c_bbbb-__WRIT__0000000004",
        "_c_cccc-__READ__0000000005",
    };
    size_t i, n = sizeof v / sizeof v[0];

    CU_ASSERT_EQUAL(zkr__sort_children(v, n, rw_key, NULL), 0);
    for (i = 0; i < n; i++)
        CU_ASSERT_STRING_EQUAL(v[i], want[i]);

    /* stripping only "__READ__" would not interleave: the write nodes keep
     * their whole names as keys and ('_' > digits) all sort after the reads,
     * by uuid -- the second strip is what makes the rw order */
    CU_ASSERT_EQUAL(zkr__sort_children(v, n, zkr__sort_key, "__READ__"), 0);
    CU_ASSERT_STRING_EQUAL(v[0], "_c_aaaa-__READ__0000000001");
    CU_ASSERT_STRING_EQUAL(v[1], "_c_eeee-__READ__0000000003");
    CU_ASSERT_STRING_EQUAL(v[2], "_c_cccc-__READ__0000000005");
    CU_ASSERT_STRING_EQUAL(v[3], "_c_bbbb-__WRIT__0000000004");
    CU_ASSERT_STRING_EQUAL(v[4], "_c_dddd-__WRIT__0000000000");
    CU_ASSERT_STRING_EQUAL(v[5], "_c_ffff-__WRIT__0000000002");
    /* and back again */
    CU_ASSERT_EQUAL(zkr__sort_children(v, n, rw_key, NULL), 0);
    for (i = 0; i < n; i++)
        CU_ASSERT_STRING_EQUAL(v[i], want[i]);
}

/* A plain byte-by-byte comparison, independent of strcmp. */
static int bytewise_cmp(const char *a, const char *b)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

    while (*x != 0 && *x == *y) {
        x++;
        y++;
    }
    return (int)*x - (int)*y;
}

static void test_sort_negative_sequences(void)
{
    /* Past 2^31 ZooKeeper's counter wraps and names get "%010d" of a
     * negative int: -2147483648 prints as "-2147483648", -1 as
     * "-000000001".  Curator compares the strings, so every negative one
     * sorts before every non-negative one ('-' 0x2d < '0' 0x30) and among
     * negatives the order is byte-wise, not numeric. */
    char *v[] = {
        "_c_a-lock-2147483647",
        "_c_b-lock--2147483648",
        "_c_c-lock-0000000000",
        "_c_d-lock--2147483647",
        "_c_e-lock--000000001",
        "_c_f-lock-2147483646",
        "_c_g-lock--2147483646",
    };
    const char *want[] = {
        "_c_e-lock--000000001",
        "_c_g-lock--2147483646",
        "_c_d-lock--2147483647",
        "_c_b-lock--2147483648",
        "_c_c-lock-0000000000",
        "_c_f-lock-2147483646",
        "_c_a-lock-2147483647",
    };
    size_t i, n = sizeof v / sizeof v[0];
    char buf[32];

    /* what ZooKeeper writes */
    snprintf(buf, sizeof buf, "%010d", INT32_MIN);
    CU_ASSERT_STRING_EQUAL(buf, "-2147483648");
    snprintf(buf, sizeof buf, "%010d", -1);
    CU_ASSERT_STRING_EQUAL(buf, "-000000001");
    CU_ASSERT_TRUE(strcmp("-2147483648", "0000000000") < 0);

    CU_ASSERT_EQUAL(zkr__sort_children(v, n, zkr__sort_key, "lock-"), 0);
    for (i = 0; i < n; i++)
        CU_ASSERT_STRING_EQUAL(v[i], want[i]);
    /* exactly the byte-wise order of the keys */
    for (i = 1; i < n; i++)
        CU_ASSERT_TRUE(bytewise_cmp(zkr__sort_key(v[i - 1], "lock-"),
                                    zkr__sort_key(v[i], "lock-")) < 0);
}

static void test_sort_unsigned_bytes(void)
{
    /* bytes >= 0x80 compare as unsigned char, as strcmp does */
    char *v[] = { "lock-\xff", "lock-b", "lock-\x80", "lock-a", "lock-", "lock-\x7e" };
    const char *want[] = { "lock-", "lock-a", "lock-b", "lock-\x7e", "lock-\x80", "lock-\xff" };
    size_t i, n = sizeof v / sizeof v[0];

    CU_ASSERT_EQUAL(zkr__sort_children(v, n, zkr__sort_key, "lock-"), 0);
    for (i = 0; i < n; i++)
        CU_ASSERT_STRING_EQUAL(v[i], want[i]);
}

static void test_sort_small(void)
{
    char *one[] = { "lock-1" };
    char *two[] = { "lock-2", "lock-1" };
    char *tie[] = { "b-lock-1", "a-lock-1" };
    char *three[] = { "lock-3", "x", "lock-1" };

    CU_ASSERT_EQUAL(zkr__sort_children(NULL, 0, zkr__sort_key, "lock-"), 0);
    CU_ASSERT_EQUAL(zkr__sort_children(one, 0, zkr__sort_key, "lock-"), 0);
    CU_ASSERT_EQUAL(zkr__sort_children(one, 1, zkr__sort_key, "lock-"), 0);
    CU_ASSERT_STRING_EQUAL(one[0], "lock-1");
    CU_ASSERT_EQUAL(zkr__sort_children(two, 2, zkr__sort_key, "lock-"), 0);
    CU_ASSERT_STRING_EQUAL(two[0], "lock-1");
    CU_ASSERT_STRING_EQUAL(two[1], "lock-2");
    /* equal keys: input order kept */
    CU_ASSERT_EQUAL(zkr__sort_children(tie, 2, zkr__sort_key, "lock-"), 0);
    CU_ASSERT_STRING_EQUAL(tie[0], "b-lock-1");
    CU_ASSERT_STRING_EQUAL(tie[1], "a-lock-1");
    /* a foreign child without the marker sorts by its whole name */
    CU_ASSERT_EQUAL(zkr__sort_children(three, 3, zkr__sort_key, "lock-"), 0);
    CU_ASSERT_STRING_EQUAL(three[0], "lock-1");
    CU_ASSERT_STRING_EQUAL(three[1], "lock-3");
    CU_ASSERT_STRING_EQUAL(three[2], "x");
}

static void test_sort_errors_leave_input(void)
{
    char *v[] = { "lock-3", NULL, "lock-1" };
    char *w[] = { "lock-3", "lock-2", "lock-1" };

    /* a NULL entry: refused, nothing moved */
    CU_ASSERT_EQUAL(zkr__sort_children(v, 3, zkr__sort_key, "lock-"), -1);
    CU_ASSERT_STRING_EQUAL(v[0], "lock-3");
    CU_ASSERT_PTR_NULL(v[1]);
    CU_ASSERT_STRING_EQUAL(v[2], "lock-1");
    /* bad arguments */
    CU_ASSERT_EQUAL(zkr__sort_children(NULL, 3, zkr__sort_key, "lock-"), -1);
    CU_ASSERT_EQUAL(zkr__sort_children(w, 3, NULL, "lock-"), -1);
    /* a count whose temp array size overflows: -1 before anything is read
     * or moved (the same early return as a failed allocation) */
    CU_ASSERT_EQUAL(zkr__sort_children(w, SIZE_MAX / 2, zkr__sort_key, "lock-"), -1);
    CU_ASSERT_EQUAL(zkr__sort_children(w, SIZE_MAX, zkr__sort_key, "lock-"), -1);
    CU_ASSERT_STRING_EQUAL(w[0], "lock-3");
    CU_ASSERT_STRING_EQUAL(w[1], "lock-2");
    CU_ASSERT_STRING_EQUAL(w[2], "lock-1");
}

/* Random names with few distinct keys (many ties), each name unique through
 * its prefix; the merge sort must agree with a stable insertion sort. */
static void check_stable_random(size_t n, int rw)
{
    static const char *keys[] = { "0000000003", "0000000001", "-000000001",
                                  "0000000002", "", "0000000010" };
    char **v = calloc(n ? n : 1, sizeof *v);
    char **ref = calloc(n ? n : 1, sizeof *ref);
    size_t i, mismatches = 0;
    char id[32];

    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
    for (i = 0; i < n; i++) {
        const char *k = keys[rng_below(sizeof keys / sizeof keys[0])];
        snprintf(id, sizeof id, "_c_%05zu", i);
        if (rw)
            v[i] = fmt(rng() & 1 ? "%s-__READ__%s%.0d" : "%s-__WRIT__%s%.0d", id, k, 0);
        else
            v[i] = fmt("%s-lock-%s%.0d", id, k, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v[i]);
    }
    shuffle(v, n);
    memcpy(ref, v, n * sizeof *v);
    ref_sort(ref, n, rw ? rw_key : zkr__sort_key, "lock-");
    CU_ASSERT_EQUAL(zkr__sort_children(v, n, rw ? rw_key : zkr__sort_key, "lock-"), 0);
    for (i = 0; i < n; i++)
        if (v[i] != ref[i])
            mismatches++;
    CU_ASSERT_EQUAL(mismatches, 0);
    free_all(v, n);
    free(v);
    free(ref);
}

static void test_sort_stable_random(void)
{
    static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17,
                                    31, 33, 63, 64, 65, 100, 127, 128, 129,
                                    255, 257, 1000, 1023, 1025, 3000 };
    size_t i;
    int round;

    for (round = 0; round < 3; round++)
        for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            check_stable_random(sizes[i], 0);
            check_stable_random(sizes[i], 1);
        }
}

static void test_sort_already_sorted_and_reversed(void)
{
    enum { N = 300 };
    char *v[N];
    char seq[16];
    size_t i;

    for (i = 0; i < N; i++) {
        snprintf(seq, sizeof seq, "%010zu", i);
        v[i] = fmt("_c_%s-lock-%s%.0d", "u", seq, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v[i]);
    }
    CU_ASSERT_EQUAL(zkr__sort_children(v, N, zkr__sort_key, "lock-"), 0);
    for (i = 1; i < N; i++)
        CU_ASSERT_TRUE(strcmp(v[i - 1], v[i]) < 0);
    for (i = 0; i < N / 2; i++) {
        char *t = v[i];
        v[i] = v[N - 1 - i];
        v[N - 1 - i] = t;
    }
    CU_ASSERT_EQUAL(zkr__sort_children(v, N, zkr__sort_key, "lock-"), 0);
    for (i = 1; i < N; i++)
        CU_ASSERT_TRUE(strcmp(v[i - 1], v[i]) < 0);
    free_all(v, N);
}

/* ---- time ------------------------------------------------------------- */

static void test_now_monotonic(void)
{
    int64_t a = zkr__now_ms(), b;
    int i;

    CU_ASSERT_TRUE(a > 0);
    for (i = 0; i < 10000; i++) {
        b = zkr__now_ms();
        CU_ASSERT_TRUE_FATAL(b >= a);
        a = b;
    }
}

static void test_deadline_arith(void)
{
    int64_t before, after, d;

    CU_ASSERT_EQUAL(zkr__deadline(-1), INT64_MAX);
    CU_ASSERT_EQUAL(zkr__deadline(-1000), INT64_MAX);
    CU_ASSERT_EQUAL(zkr__deadline(INT64_MIN), INT64_MAX);
    /* saturation instead of overflow */
    CU_ASSERT_EQUAL(zkr__deadline(INT64_MAX), INT64_MAX);
    CU_ASSERT_EQUAL(zkr__deadline(INT64_MAX - 1), INT64_MAX);
    CU_ASSERT_EQUAL(zkr__deadline(INT64_MAX - zkr__now_ms() + 1), INT64_MAX);

    before = zkr__now_ms();
    d = zkr__deadline(0);
    after = zkr__now_ms();
    CU_ASSERT_TRUE(d >= before && d <= after);
    CU_ASSERT_EQUAL(zkr__remaining_ms(d), 0);

    before = zkr__now_ms();
    d = zkr__deadline(5000);
    after = zkr__now_ms();
    CU_ASSERT_TRUE(d >= before + 5000 && d <= after + 5000);
    {
        int64_t r = zkr__remaining_ms(d);
        CU_ASSERT_TRUE(r > 0 && r <= 5000);
    }

    /* a far but finite deadline */
    d = zkr__deadline(INT64_MAX / 2);
    CU_ASSERT_TRUE(d > INT64_MAX / 2 && d < INT64_MAX);
    CU_ASSERT_TRUE(zkr__remaining_ms(d) <= INT64_MAX / 2);
    CU_ASSERT_TRUE(zkr__remaining_ms(d) > INT64_MAX / 2 - 1000);

    CU_ASSERT_EQUAL(zkr__remaining_ms(INT64_MAX), INT64_MAX);
    CU_ASSERT_EQUAL(zkr__remaining_ms(zkr__now_ms() - 5), 0);
    CU_ASSERT_EQUAL(zkr__remaining_ms(0), 0);
    CU_ASSERT_EQUAL(zkr__remaining_ms(-1), 0);
    CU_ASSERT_EQUAL(zkr__remaining_ms(INT64_MIN), 0);
    CU_ASSERT_EQUAL(zkr__remaining_ms(INT64_MAX - 1) > INT64_MAX - zkr__now_ms() - 1000, 1);
}

static void test_cond_timeout(void)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv;
    int64_t d, start;
    int rc, wakeups = 0;

    CU_ASSERT_EQUAL_FATAL(zkr__cond_init(&cv), 0);
    pthread_mutex_lock(&mu);

    start = zkr__now_ms();
    d = zkr__deadline(150);
    do {
        rc = zkr__cond_wait_until(&cv, &mu, d);
        CU_ASSERT_TRUE(rc == 0 || rc == ETIMEDOUT);
    } while (rc == 0 && ++wakeups < 1000);
    CU_ASSERT_EQUAL(rc, ETIMEDOUT);
    /* never before the deadline (no upper bound: slow machines, valgrind) */
    CU_ASSERT_TRUE(zkr__now_ms() >= d);
    CU_ASSERT_TRUE(zkr__now_ms() - start >= 150);
    CU_ASSERT_EQUAL(zkr__remaining_ms(d), 0);

    /* a deadline already passed: immediate ETIMEDOUT, mutex still held */
    CU_ASSERT_EQUAL(zkr__cond_wait_until(&cv, &mu, zkr__now_ms() - 1), ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr__cond_wait_until(&cv, &mu, zkr__deadline(0)), ETIMEDOUT);
    CU_ASSERT_EQUAL(zkr__cond_wait_until(&cv, &mu, INT64_MIN), ETIMEDOUT);
    CU_ASSERT_EQUAL(pthread_mutex_trylock(&mu), EBUSY);

    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&cv);
    pthread_mutex_destroy(&mu);

    CU_ASSERT_EQUAL(zkr__cond_init(NULL), EINVAL);
    CU_ASSERT_EQUAL(zkr__cond_wait_until(NULL, &mu, 0), EINVAL);
    CU_ASSERT_EQUAL(zkr__cond_wait_until(&cv, NULL, 0), EINVAL);
}

struct signaller {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int flag;
};

static void *signal_later(void *arg)
{
    struct signaller *s = arg;
    struct timespec ts = { 0, 50 * 1000000L };

    nanosleep(&ts, NULL);
    pthread_mutex_lock(&s->mu);
    s->flag = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void run_signalled(int64_t timeout_ms)
{
    struct signaller s;
    pthread_t t;
    int64_t d;
    int rc = 0;

    CU_ASSERT_EQUAL_FATAL(pthread_mutex_init(&s.mu, NULL), 0);
    CU_ASSERT_EQUAL_FATAL(zkr__cond_init(&s.cv), 0);
    s.flag = 0;
    d = zkr__deadline(timeout_ms);
    pthread_mutex_lock(&s.mu);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, signal_later, &s), 0);
    while (!s.flag && rc == 0)
        rc = zkr__cond_wait_until(&s.cv, &s.mu, d);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(s.flag, 1);
    pthread_mutex_unlock(&s.mu);
    pthread_join(t, NULL);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
}

static void test_cond_signalled(void)
{
    /* woken well before a long deadline, and with no deadline at all */
    run_signalled(600000);
    run_signalled(-1);
}

/* ---- string vectors --------------------------------------------------- */

static void test_strvec(void)
{
    char *src[] = { "_c_aaa-lock-0000000001", "lock-0000000002", "", "_c_bbb-lock-0000000003",
                    "lock-0000000002" };
    zkr__strvec_t sv;
    size_t i;

    CU_ASSERT_EQUAL_FATAL(zkr__strvec_copy(&sv, src, 5), 0);
    CU_ASSERT_EQUAL(sv.n, 5);
    for (i = 0; i < 5; i++) {
        CU_ASSERT_STRING_EQUAL(sv.v[i], src[i]);
        CU_ASSERT_PTR_NOT_EQUAL(sv.v[i], src[i]); /* deep copy */
    }
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, "lock-0000000002"), 1); /* first one */
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, "_c_bbb-lock-0000000003"), 3);
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, ""), 2);
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, "lock-000000000"), -1);
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, "lock-00000000022"), -1);
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, NULL), -1);
    CU_ASSERT_EQUAL(zkr__strvec_find(NULL, "x"), -1);

    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(&sv, "_c_bbb-"), 3);
    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(&sv, "_c_"), 0);
    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(&sv, "lock-"), 1);
    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(&sv, ""), 0);
    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(&sv, "_c_ccc-"), -1);
    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(&sv, "_c_aaa-lock-00000000011"), -1);
    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(&sv, NULL), -1);
    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(NULL, "x"), -1);

    zkr__strvec_free(&sv);
    CU_ASSERT_PTR_NULL(sv.v);
    CU_ASSERT_EQUAL(sv.n, 0);
    zkr__strvec_free(&sv); /* twice is harmless */
    zkr__strvec_free(NULL);
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, "x"), -1);
    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(&sv, ""), -1);
}

static void test_strvec_edge(void)
{
    char *with_null[] = { "a", NULL, "c" };
    zkr__strvec_t sv = { (char **)1, 99 };
    char *big;

    /* NULL entry refused; out left empty */
    CU_ASSERT_EQUAL(zkr__strvec_copy(&sv, with_null, 3), -1);
    CU_ASSERT_PTR_NULL(sv.v);
    CU_ASSERT_EQUAL(sv.n, 0);
    CU_ASSERT_EQUAL(zkr__strvec_copy(&sv, NULL, 2), -1);
    CU_ASSERT_PTR_NULL(sv.v);
    CU_ASSERT_EQUAL(zkr__strvec_copy(NULL, with_null, 1), -1);

    /* empty copy */
    CU_ASSERT_EQUAL(zkr__strvec_copy(&sv, NULL, 0), 0);
    CU_ASSERT_EQUAL(sv.n, 0);
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, "a"), -1);
    zkr__strvec_free(&sv);

    /* long untrusted names */
    big = repeat('z', 300000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    CU_ASSERT_EQUAL_FATAL(zkr__strvec_copy(&sv, &big, 1), 0);
    CU_ASSERT_EQUAL(strlen(sv.v[0]), 300000);
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, big), 0);
    big[299999] = '\0';
    CU_ASSERT_EQUAL(zkr__strvec_find(&sv, big), -1);
    CU_ASSERT_EQUAL(zkr__strvec_find_prefix(&sv, big), 0);
    zkr__strvec_free(&sv);
    free(big);
}

/* ---- be32 ------------------------------------------------------------- */

static void test_be32(void)
{
    static const int32_t vals[] = { 0, 1, -1, 2, -2, 255, 256, -256, 12345,
                                    -12345, 0x01020304, 0x7fffffff, INT32_MIN,
                                    INT32_MIN + 1, 0x00ff00ff, -0x00ff00ff };
    unsigned char b[4];
    size_t i;

    zkr__be32_put(b, 0x01020304);
    CU_ASSERT_EQUAL(b[0], 0x01);
    CU_ASSERT_EQUAL(b[1], 0x02);
    CU_ASSERT_EQUAL(b[2], 0x03);
    CU_ASSERT_EQUAL(b[3], 0x04);
    CU_ASSERT_EQUAL(zkr__be32_get(b), 0x01020304);

    zkr__be32_put(b, -1);
    CU_ASSERT_TRUE(b[0] == 0xff && b[1] == 0xff && b[2] == 0xff && b[3] == 0xff);
    zkr__be32_put(b, INT32_MIN);
    CU_ASSERT_TRUE(b[0] == 0x80 && b[1] == 0 && b[2] == 0 && b[3] == 0);
    zkr__be32_put(b, -2);
    CU_ASSERT_TRUE(b[0] == 0xff && b[1] == 0xff && b[2] == 0xff && b[3] == 0xfe);

    {
        const unsigned char m1[4] = { 0xff, 0xff, 0xff, 0xff };
        const unsigned char mn[4] = { 0x80, 0x00, 0x00, 0x00 };
        const unsigned char mx[4] = { 0x7f, 0xff, 0xff, 0xff };
        const unsigned char x[4] = { 0xfe, 0xdc, 0xba, 0x98 };
        CU_ASSERT_EQUAL(zkr__be32_get(m1), -1);
        CU_ASSERT_EQUAL(zkr__be32_get(mn), INT32_MIN);
        CU_ASSERT_EQUAL(zkr__be32_get(mx), INT32_MAX);
        CU_ASSERT_EQUAL(zkr__be32_get(x), -0x01234568);
    }

    for (i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        zkr__be32_put(b, vals[i]);
        CU_ASSERT_EQUAL(zkr__be32_get(b), vals[i]);
    }
    for (i = 0; i < 100000; i++) {
        int32_t v = (int32_t)(rng() >> 33) - (int32_t)(rng() >> 33);
        zkr__be32_put(b, v);
        CU_ASSERT_EQUAL_FATAL(zkr__be32_get(b), v);
    }

    CU_ASSERT_EQUAL(zkr__be32_get(NULL), 0);
    zkr__be32_put(NULL, 5); /* no crash */
}

/* ---- be64 (DistributedAtomicLong: Java's ByteBuffer.putLong) ------------ */

static void test_be64(void)
{
    unsigned char b[8];
    zkr__be64_put(b, 0x0102030405060708LL);
    for (int i = 0; i < 8; i++)
        CU_ASSERT_EQUAL(b[i], i + 1);
    CU_ASSERT_EQUAL(zkr__be64_get(b), 0x0102030405060708LL);
    zkr__be64_put(b, -1);
    for (int i = 0; i < 8; i++)
        CU_ASSERT_EQUAL(b[i], 0xff);
    CU_ASSERT_EQUAL(zkr__be64_get(b), -1);
    const unsigned char mn[8] = {0x80, 0, 0, 0, 0, 0, 0, 0};
    const unsigned char mx[8] = {0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    const unsigned char m8[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf8};
    CU_ASSERT_EQUAL(zkr__be64_get(mn), INT64_MIN);
    CU_ASSERT_EQUAL(zkr__be64_get(mx), INT64_MAX);
    CU_ASSERT_EQUAL(zkr__be64_get(m8), -8);
    for (int i = 0; i < 100000; i++) {
        int64_t v = (int64_t)(rng() ^ (rng() << 1));
        zkr__be64_put(b, v);
        CU_ASSERT_EQUAL_FATAL(zkr__be64_get(b), v);
    }
    CU_ASSERT_EQUAL(zkr__be64_get(NULL), 0);
    zkr__be64_put(NULL, 5); /* no crash */
}

static void test_downgrade_name(void)
{
    const char *u = "3f2a9c1e-5b7d-4e21-9a3c-0d1e2f3a4b5c";
    char out[128];

    CU_ASSERT_EQUAL(zkr__downgrade_name("/rw/_c_8c0e4b6a-1f2d-4c3b-a5e6-7f8091a2b3c4-__WRIT__0000000007", u,
                                        out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "_c_3f2a9c1e-5b7d-4e21-9a3c-0d1e2f3a4b5c-__READ__0000000007");
    /* it sorts where the writer stands */
    CU_ASSERT_STRING_EQUAL(zkr__rw_sort_key(out), "0000000007");
    /* the last marker counts; a negative sequence is kept as it is */
    CU_ASSERT_EQUAL(zkr__downgrade_name("/a__WRIT__b/x-__WRIT__-2147483648", u, out, sizeof out), 0);
    CU_ASSERT_STRING_EQUAL(out, "_c_3f2a9c1e-5b7d-4e21-9a3c-0d1e2f3a4b5c-__READ__-2147483648");
    CU_ASSERT_EQUAL(zkr__downgrade_name("/rw/_c_x-__READ__0000000001", u, out, sizeof out), -1);
    CU_ASSERT_EQUAL(zkr__downgrade_name("/rw/x-__WRIT__0000000001", u, out, 58), -1); /* does not fit */
    CU_ASSERT_EQUAL(zkr__downgrade_name("/rw/x-__WRIT__0000000001", u, out, 59), 0);  /* just fits */
    CU_ASSERT_EQUAL(strlen(out), 58);
    CU_ASSERT_EQUAL(zkr__downgrade_name(NULL, u, out, sizeof out), -1);
    CU_ASSERT_EQUAL(zkr__downgrade_name("x__WRIT__1", NULL, out, sizeof out), -1);
    CU_ASSERT_EQUAL(zkr__downgrade_name("x__WRIT__1", u, NULL, sizeof out), -1);
    CU_ASSERT_EQUAL(zkr__downgrade_name("x__WRIT__1", u, out, 0), -1);
}

static void test_count_parse(void)
{
    const char four[4] = {'\x80', 0, 0, 0};
    const char eight[8] = {0, 0, 0, 5, 0, 0, 0, 0};
    int32_t v = 7;

    CU_ASSERT_EQUAL(zkr__count_parse(four, 4, &v), 0);
    CU_ASSERT_EQUAL(v, INT32_MIN);
    CU_ASSERT_EQUAL(zkr__count_parse(eight, 4, &v), 0);
    CU_ASSERT_EQUAL(v, 5);
    v = 7;
    CU_ASSERT_EQUAL(zkr__count_parse(eight, 8, &v), -1); /* 8 or more bytes */
    CU_ASSERT_EQUAL(zkr__count_parse(eight, 3, &v), -1);
    CU_ASSERT_EQUAL(zkr__count_parse(eight, 0, &v), -1);
    CU_ASSERT_EQUAL(zkr__count_parse(eight, -1, &v), -1); /* no data */
    CU_ASSERT_EQUAL(zkr__count_parse(NULL, 4, &v), -1);
    CU_ASSERT_EQUAL(zkr__count_parse(four, 4, NULL), -1);
    CU_ASSERT_EQUAL(v, 7); /* untouched on refusal */
}

/* ---- runner ----------------------------------------------------------- */

struct test_def {
    const char *name;
    CU_TestFunc fn;
};

static int add_suite(const char *name, const struct test_def *tests, size_t n)
{
    CU_pSuite s = CU_add_suite(name, NULL, NULL);
    size_t i;

    if (s == NULL)
        return -1;
    for (i = 0; i < n; i++)
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
            return -1;
    return 0;
}

#define ADD_SUITE(name, arr) add_suite(name, arr, sizeof arr / sizeof arr[0])

int main(void)
{
    static const struct test_def path_tests[] = {
        { "utf8: one decoder (RFC 3629)", test_utf8 },
        { "path_valid table", test_path_valid_table },
        { "path_valid length", test_path_valid_length },
        { "path_join", test_path_join },
        { "path_basename", test_path_basename },
    };
    static const struct test_def uuid_tests[] = {
        { "uuid format", test_uuid_format },
        { "1000 uuids distinct", test_uuid_distinct },
        { "protected_path", test_protected_path },
        { "is_protected_for", test_is_protected_for },
    };
    static const struct test_def names_tests[] = {
        { "sort_key", test_sort_key },
        { "sort_key long name", test_sort_key_long_name },
        { "rw_sort_key", test_rw_sort_key },
        { "sort shuffled protected names", test_sort_protected_shuffled },
        { "rw sort interleaves", test_sort_rw_interleave },
        { "negative sequences sort byte-wise", test_sort_negative_sequences },
        { "unsigned byte order", test_sort_unsigned_bytes },
        { "n = 0, 1, 2, 3", test_sort_small },
        { "errors leave input untouched", test_sort_errors_leave_input },
        { "stable vs insertion sort", test_sort_stable_random },
        { "sorted and reversed input", test_sort_already_sorted_and_reversed },
        { "downgrade_name", test_downgrade_name },
    };
    static const struct test_def time_tests[] = {
        { "now_ms monotonic", test_now_monotonic },
        { "deadline / remaining", test_deadline_arith },
        { "cond_wait_until times out", test_cond_timeout },
        { "cond_wait_until signalled", test_cond_signalled },
    };
    static const struct test_def strvec_tests[] = {
        { "copy/find/find_prefix/free", test_strvec },
        { "edge cases", test_strvec_edge },
        { "be32", test_be32 },
        { "be64", test_be64 },
        { "count_parse", test_count_parse },
    };
    unsigned failures, suites_failed, tests_failed;

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    if (ADD_SUITE("path", path_tests) != 0 || ADD_SUITE("uuid", uuid_tests) != 0 ||
        ADD_SUITE("names", names_tests) != 0 || ADD_SUITE("time", time_tests) != 0 ||
        ADD_SUITE("strvec", strvec_tests) != 0) {
        fprintf(stderr, "CUnit setup failed: %s\n", CU_get_error_msg());
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (CU_basic_run_tests() != CUE_SUCCESS) {
        fprintf(stderr, "CUnit run failed: %s\n", CU_get_error_msg());
        CU_cleanup_registry();
        return 2;
    }
    failures = CU_get_number_of_failures();
    suites_failed = CU_get_run_summary()->nSuitesFailed;
    tests_failed = CU_get_run_summary()->nTestsFailed;
    CU_cleanup_registry();
    return (failures || suites_failed || tests_failed) ? 1 : 0;
}
