/* tests/test_fuzz_corpus: every seed of tests/fuzz/corpus/ through every
 * fuzz target, without libFuzzer (no server needed; part of make check, so
 * the targets build and their invariants hold in the normal build).
 *
 *   tests/test_fuzz_corpus                      the CUnit suite
 *   tests/test_fuzz_corpus TARGET FILE...       replay files (a crash
 *                                               artifact) through one target
 *
 * TARGET is names, paths, count or instance.  The corpus is found at
 * $ZKR_FUZZ_CORPUS, else where configure saw the source tree. */
#include "tests/fuzz/fuzz.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <string.h>

#ifndef ZKR_FUZZ_CORPUS
#define ZKR_FUZZ_CORPUS "tests/fuzz/corpus"
#endif

typedef int (*target_fn)(const uint8_t *data, size_t size);

static const struct {
    const char *name;
    target_fn fn;
} targets[] = {
    {"names", zkr_fuzz_names},
    {"paths", zkr_fuzz_paths},
    {"count", zkr_fuzz_count},
    {"instance", zkr_fuzz_instance},
};
#define NTARGETS (sizeof targets / sizeof targets[0])

static const char *corpus_root(void)
{
    const char *env = getenv("ZKR_FUZZ_CORPUS");
    return env != NULL && env[0] != '\0' ? env : ZKR_FUZZ_CORPUS;
}

/* The whole file, malloc'd with exactly its size (1 byte if empty). */
static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;

    *size = 0;
    if (f == NULL)
        return NULL;
    for (;;) {
        uint8_t chunk[4096];
        size_t got = fread(chunk, 1, sizeof chunk, f);
        if (got == 0)
            break;
        if (n + got > cap) {
            uint8_t *nb = realloc(buf, n + got);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = n + got;
        }
        memcpy(buf + n, chunk, got);
        n += got;
    }
    if (ferror(f)) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    if (buf == NULL)
        buf = malloc(1);
    *size = n;
    return buf;
}

static int run_file(target_fn fn, const char *path)
{
    size_t size;
    uint8_t *data = slurp(path, &size);
    int rc;

    if (data == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        return -1;
    }
    rc = fn(data, size); /* aborts on a broken invariant */
    free(data);
    return rc;
}

/* Every seed of every target's corpus through fn; returns how many ran
 * (each one asserted to return 0). */
static int run_corpus(target_fn fn)
{
    int ran = 0;
    size_t t;

    for (t = 0; t < NTARGETS; t++) {
        char dir[4096];
        DIR *d;
        struct dirent *e;

        snprintf(dir, sizeof dir, "%s/fuzz_%s", corpus_root(), targets[t].name);
        d = opendir(dir);
        CU_ASSERT_PTR_NOT_NULL(d);
        if (d == NULL) {
            fprintf(stderr, "no corpus at %s\n", dir);
            continue;
        }
        while ((e = readdir(d)) != NULL) {
            char path[8192];
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            CU_ASSERT_EQUAL(run_file(fn, path), 0);
            ran++;
        }
        closedir(d);
    }
    return ran;
}

static void test_names(void)
{
    CU_ASSERT(run_corpus(zkr_fuzz_names) >= 10);
}

static void test_paths(void)
{
    CU_ASSERT(run_corpus(zkr_fuzz_paths) >= 10);
}

static void test_count(void)
{
    CU_ASSERT(run_corpus(zkr_fuzz_count) >= 10);
}

static void test_instance(void)
{
    CU_ASSERT(run_corpus(zkr_fuzz_instance) >= 10);
}

static int replay(const char *target, int nfiles, char **files)
{
    size_t t;
    int i;

    if (strncmp(target, "fuzz_", 5) == 0) /* fuzz_names is names */
        target += 5;
    for (t = 0; t < NTARGETS; t++) {
        if (strcmp(target, targets[t].name) != 0)
            continue;
        for (i = 0; i < nfiles; i++) {
            if (run_file(targets[t].fn, files[i]) != 0)
                return 1;
            printf("%s: %s ok\n", targets[t].name, files[i]);
        }
        return 0;
    }
    fprintf(stderr, "unknown target %s (names, paths, count)\n", target);
    return 2;
}

int main(int argc, char **argv)
{
    CU_pSuite s;
    unsigned failures, tests_failed;

    if (argc >= 2)
        return replay(argv[1], argc - 2, argv + 2);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    s = CU_add_suite("fuzz corpus", NULL, NULL);
    if (s == NULL || CU_add_test(s, "every seed through fuzz_names", test_names) == NULL ||
        CU_add_test(s, "every seed through fuzz_paths", test_paths) == NULL ||
        CU_add_test(s, "every seed through fuzz_count", test_count) == NULL ||
        CU_add_test(s, "every seed through fuzz_instance", test_instance) == NULL) {
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
    tests_failed = CU_get_run_summary()->nTestsFailed;
    CU_cleanup_registry();
    return (failures || tests_failed) ? 1 : 0;
}
