/* Internal helpers that know nothing of recipes.  Never installed. */
#ifndef ZKR_UTIL_H
#define ZKR_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- paths ------------------------------------------------------------ */

/* 1 if `path` is a valid absolute ZooKeeper path usable as a lock path:
 * starts with '/', no trailing '/' (except "/" itself, which is refused
 * here: a lock needs a directory of its own), no empty component, no "." or
 * ".." component, length <= ZKR__PATH_MAX bytes, and only characters
 * ZooKeeper accepts (well-formed UTF-8 of at most 3 bytes a character; no
 * U+0000-U+001F, U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF), so a path
 * that passes is never refused by the server for its form.
 * 0 otherwise (including NULL). */
#define ZKR__PATH_MAX 1024
int zkr__path_valid(const char *path);
/* The same for a path only read (a cache's): "/" and ZooKeeper's own
 * /zookeeper tree are fine too. */
int zkr__path_readable(const char *path);

/* Malloc'd "parent/child" (child must not contain '/'); NULL on ENOMEM or bad
 * input.  parent "/" gives "/child". */
char *zkr__path_join(const char *parent, const char *child);

/* The one join rule behind zkr__path_join and zkr__protected_path: a
 * malloc'd "parent/" followed by room for a child of clen bytes and its
 * NUL (parent "/" gives "/"), *child pointing at that room (NUL-filled at
 * its end; the caller writes the clen bytes).  The child is not checked.
 * NULL on ENOMEM, a NULL or empty parent, or a size that overflows. */
char *zkr__path_child(const char *parent, size_t clen, char **child);

/* Last component of a path ("/a/b" -> "b"); pointer into `path`. */
const char *zkr__path_basename(const char *path);

/* ---- UTF-8 (RFC 3629) ---------------------------------------------------- */

/* The length of the well-formed UTF-8 sequence at s (n bytes left), its
 * code point in *cp; 0 if malformed, overlong, a surrogate or past
 * U+10FFFF (or n is 0). */
size_t zkr__utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* 1 if the n bytes at s are well-formed UTF-8. */
int zkr__utf8_valid(const char *s, size_t n);

/* ---- protected names --------------------------------------------------- */

#define ZKR__UUID_LEN 36
/* Writes a fresh random (version 4) lowercase UUID, 8-4-4-4-12, plus NUL,
 * into out[37].  Uses getrandom(2) with a fallback to /dev/urandom.
 * Returns 0, or -1 if no randomness could be had. */
int zkr__uuid(char out[ZKR__UUID_LEN + 1]);

/* Curator's protected names: "_c_<uuid>-<marker><sequence>". */
#define ZKR__PROTECTED "_c_"
/* The length of "_c_<uuid>-" for a UUID from zkr__uuid. */
#define ZKR__PROTECTED_PREFIX_LEN (sizeof(ZKR__PROTECTED) - 1 + ZKR__UUID_LEN + 1)

/* The one writer of a protected name: "_c_<uuid>-" then `marker` (""
 * gives the bare prefix) into out[len], as snprintf does (out may be NULL
 * when len is 0).  Returns the full length (the name fits if it is below
 * len), or -1 (NULL arguments, or a length past INT_MAX). */
int zkr__protected_name(char *out, size_t len, const char *uuid, const char *marker);

/* Malloc'd "<dir>/_c_<uuid>-<marker>"; NULL on ENOMEM. */
char *zkr__protected_path(const char *dir, const char *uuid, const char *marker);

/* 1 if child name starts with "_c_<uuid>-". */
int zkr__is_protected_for(const char *child, const char *uuid);

/* ---- Curator child ordering --------------------------------------------- */

/* The read/write lock's markers (Curator's READ_LOCK_NAME, WRITE_LOCK_NAME). */
#define ZKR__READ_MARKER  "__READ__"
#define ZKR__WRITE_MARKER "__WRIT__"

/* Curator's standardFixForSorting: the text after the LAST occurrence of
 * `marker` in `name`; the whole name if marker does not occur. */
const char *zkr__sort_key(const char *name, const char *marker);

/* The read/write lock key: strip through the last "__READ__", then through
 * the last "__WRIT__" of what remains. */
const char *zkr__rw_sort_key(const char *name);

/* The read node that takes a writer's place on a downgrade (Curator 5.5):
 * "_c_<uuid>-__READ__<seq>" into out[len], seq being the text after the
 * last "__WRIT__" of the writer's node path as the server named it, so that
 * it sorts exactly where the write node stands.  Returns 0, or -1 if the
 * path has no "__WRIT__" or the name does not fit (or NULL arguments). */
int zkr__downgrade_name(const char *write_path, const char *uuid, char *out, size_t len);

typedef const char *(*zkr__key_fn)(const char *name, const char *marker);

/* Stable sort (merge sort: like Java's Collections.sort, equal keys keep the
 * server's listing order) of `names[0..n)` by strcmp of key(name, marker).
 * Returns 0, or -1 on ENOMEM (names untouched then). */
int zkr__sort_children(char **names, size_t n, zkr__key_fn key, const char *marker);

/* ---- time ------------------------------------------------------------- */

/* Monotonic now in milliseconds. */
int64_t zkr__now_ms(void);

/* Deadline from a timeout: timeout_ms < 0 -> INT64_MAX (forever);
 * otherwise now + timeout_ms (saturating). */
int64_t zkr__deadline(int64_t timeout_ms);

/* Milliseconds left until deadline (0 if passed, INT64_MAX if forever). */
int64_t zkr__remaining_ms(int64_t deadline);

/* Sleep ms milliseconds (whole, across signals); <= 0: no sleep. */
void zkr__sleep_ms(int64_t ms);

/* Initialise a condition variable that waits on CLOCK_MONOTONIC.
 * Returns 0 or an errno value. */
int zkr__cond_init(pthread_cond_t *cond);

/* A mutex and such a condition variable together: 0, or an errno value
 * with neither left initialised. */
int zkr__sync_init(pthread_mutex_t *mu, pthread_cond_t *cond);
/* Destroy what zkr__sync_init made. */
void zkr__sync_destroy(pthread_mutex_t *mu, pthread_cond_t *cond);

/* Wait on cond until deadline (monotonic ms, INT64_MAX = no limit).
 * Returns 0 if woken (spuriously or not), ETIMEDOUT if the deadline passed. */
int zkr__cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, int64_t deadline);

/* ---- string vectors --------------------------------------------------- */

typedef struct zkr__strvec {
    char **v;
    size_t n;
} zkr__strvec_t;

/* Deep copy of `count` strings (NULL entries refused); 0 or -1 on ENOMEM /
 * bad input (out left empty). */
int zkr__strvec_copy(zkr__strvec_t *out, char *const *src, size_t count);
void zkr__strvec_free(zkr__strvec_t *sv);
/* Index of the first entry equal to s, or -1. */
long zkr__strvec_find(const zkr__strvec_t *sv, const char *s);
/* Index of the first entry starting with prefix, or -1. */
long zkr__strvec_find_prefix(const zkr__strvec_t *sv, const char *prefix);

/* ---- big-endian ints (SharedCount, DistributedAtomicLong) -------------------------------------- */
int32_t zkr__be32_get(const unsigned char b[4]);
void zkr__be32_put(unsigned char b[4], int32_t v);

/* The shared count node's data as zoo_get left it in buf: len is what the
 * client reported (-1 for a node without data, at most the buffer's size).
 * A count is exactly 4 bytes, big-endian signed (Curator's SharedCount).
 * Returns 0 with *out set, or -1 (bad data, or NULL arguments). */
int zkr__count_parse(const char *buf, int len, int32_t *out);

/* 64-bit big-endian signed (DistributedAtomicLong), as Java's
 * ByteBuffer.getLong / putLong. */
int64_t zkr__be64_get(const unsigned char b[8]);
void zkr__be64_put(unsigned char b[8], int64_t v);

#endif
