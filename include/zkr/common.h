/* zkrecipes: definitions shared by every public header. */
#ifndef ZKR_COMMON_H
#define ZKR_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every public function carries ZKR_EXTERN; the library is built with
 * -fvisibility=hidden, so nothing else is exported. */
#if defined(ZKR_BUILDING) && defined(__GNUC__)
#define ZKR_EXTERN __attribute__((visibility("default")))
#else
#define ZKR_EXTERN
#endif

/* Timeouts are in milliseconds: < 0 waits forever, 0 tries once without
 * waiting, > 0 waits at most that long. */
#define ZKR_WAIT_FOREVER ((int64_t)-1)

/* The library's version, "MAJOR.MINOR.PATCH". */
ZKR_EXTERN const char *zkr_version(void);

#ifdef __cplusplus
}
#endif
#endif
