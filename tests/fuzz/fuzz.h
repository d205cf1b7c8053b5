/* Fuzz targets for the functions that read bytes from the server (util/,
 * and the service instances' JSON).
 *
 * Each target is a plain function (data, size) -> 0 that aborts on a broken
 * invariant.  scripts/fuzz.sh builds each one with clang's libFuzzer
 * (-DZKR_LIBFUZZER gives it LLVMFuzzerTestOneInput); the normal build links
 * all of them into tests/test_fuzz_corpus, which feeds them the seed corpus. */
#ifndef ZKR_FUZZ_H
#define ZKR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int zkr_fuzz_names(const uint8_t *data, size_t size);
int zkr_fuzz_paths(const uint8_t *data, size_t size);
int zkr_fuzz_count(const uint8_t *data, size_t size);
int zkr_fuzz_instance(const uint8_t *data, size_t size);

static inline _Noreturn void zkr_fuzz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, what);
    fflush(stderr);
    abort();
}

/* abort (a crash to libFuzzer, a failed test to make check) unless cond */
#define FUZZ_CHECK(cond) ((cond) ? (void)0 : zkr_fuzz_fail(__FILE__, __LINE__, #cond))

/* Malloc'd copy of the NUL-separated pieces of data, each in an allocation
 * of its own and of its exact size (so that reading past a name's NUL is an
 * AddressSanitizer error).  The last piece runs to the end of data.  At most
 * max pieces; *n gets their number.  NULL only on ENOMEM. */
static inline char **zkr_fuzz_split(const uint8_t *data, size_t size, size_t max, size_t *n)
{
    char **v = calloc(max > 0 ? max : 1, sizeof *v);
    size_t start = 0, i;

    *n = 0;
    if (v == NULL)
        return NULL;
    for (i = 0; i <= size && *n < max; i++) {
        if (i == size || data[i] == 0) {
            size_t len = i - start;
            char *s = malloc(len + 1);
            size_t k;
            if (s == NULL) {
                for (k = 0; k < *n; k++)
                    free(v[k]);
                free(v);
                *n = 0;
                return NULL;
            }
            for (k = 0; k < len; k++)
                s[k] = (char)data[start + k];
            s[len] = '\0';
            v[(*n)++] = s;
            start = i + 1;
        }
    }
    return v;
}

static inline void zkr_fuzz_free_pieces(char **v, size_t n)
{
    size_t i;

    if (v == NULL)
        return;
    for (i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Reference for zkr__is_protected_for: "_c_" + uuid + "-" begins child. */
static inline int zkr_fuzz_ref_protected(const char *child, const char *uuid)
{
    size_t clen = strlen(child), ulen = strlen(uuid);

    return clen >= 3 + ulen + 1 && memcmp(child, "_c_", 3) == 0 && memcmp(child + 3, uuid, ulen) == 0 &&
           child[3 + ulen] == '-';
}

/* One libFuzzer entry per target, only when built by scripts/fuzz.sh. */
#ifdef ZKR_LIBFUZZER
#define ZKR_FUZZ_ENTRY(fn)                                                                         \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                                  \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fn(data, size); }
#else
#define ZKR_FUZZ_ENTRY(fn)
#endif

#endif
