/* Interop helpers.  A Java peer process (a tests/interop/ Java class on Debian's Curator jars,
 * compiled and started by tests/interop/peer.sh) driven over a pipe: one
 * command line, one answer line.  Used by the interop suites; no CUnit
 * here. */
#ifndef ZKR_JPEER_H
#define ZKR_JPEER_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct jpeer jpeer_t;

/* Start the peer whose main class is main_class (its source
 * tests/interop/<main_class>.java) on the test server, and wait (bounded:
 * javac runs on first use) for the "READY" line it prints once connected.
 * NULL if it did not start (it is killed). */
jpeer_t *jpeer_start(const char *main_class);
/* Ask it to quit, wait (bounded), kill it if it does not; NULL is fine. */
void jpeer_stop(jpeer_t *p);
/* The next line it printed (malloc'd), or NULL after timeout_ms. */
char *jpeer_line(jpeer_t *p, int timeout_ms);
/* Send one line; 0 if written. */
int jpeer_send(jpeer_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int jpeer_vsend(jpeer_t *p, const char *fmt, va_list ap);
/* Send a command and return its answer (malloc'd; "NO PEER" or "NO
 * ANSWER" after timeout_ms). */
char *jpeer_vcmd(jpeer_t *p, int timeout_ms, const char *fmt, va_list ap);
/* Send a command; 1 if the answer is want, else 0 (both printed). */
int jpeer_vis(jpeer_t *p, int timeout_ms, const char *want, const char *fmt, va_list ap);

/* The suite's peer, and commands to it answered within JPEER_REPLY_MS:
 * jcmd returns the answer (malloc'd), jis 1 if it is want. */
#define JPEER_REPLY_MS 60000
extern jpeer_t *jpeer_java;
char *jcmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int jis(const char *want, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 if name is _c_<uuid>-<marker><10 digits>, as Curator names nodes. */
int jpeer_curator_name(const char *name, const char *marker);
/* v[0..n) as one space-separated line (malloc'd), "-" when n is 0: the
 * form of the peers' lists. */
char *jpeer_joined(char **v, size_t n);

#endif
