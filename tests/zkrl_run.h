/* Running the built zkr-lock from the CUnit suite test_zkrlock.c (and
 * zkr-cache from test_zkrcache.c): start it with fork/exec, give its
 * commands files to record in, read them back.  Every wait is bounded. */
#ifndef ZKRL_RUN_H
#define ZKRL_RUN_H

#include <stdint.h>
#include <sys/types.h>

#define RUN_MS 60000  /* bound on one zkr-lock run */
#define WAIT_MS 30000 /* bound on waiting for a condition */

/* The suite's temporary directory (made by the suite's init). */
extern char zkrl_workdir[256];

/* Which tool the suite runs: "zkr-lock" (the default) or "zkr-cache"; set
 * before the suite's init. */
extern const char *zkrl_tool;
/* The binary: $ZKR_LOCK_BIN (zkr-cache: $ZKR_CACHE_BIN), else
 * tools/<tool> (the build directory's). */
const char *tool_bin(void);
/* A file name in the work directory (static buffer per slot 0..7). */
const char *wfile(const char *name);
/* Start the tool with args (NULL-terminated); stdout and stderr to the given
 * files (NULL: /dev/null). */
pid_t start_tool(const char *out, const char *err, const char *const *args);
/* The same, waited for (bounded): its exit status, 128+signal, or -1. */
int run_tool(const char *out, const char *err, const char *const *args);
/* Malloc'd contents of a file ("" if missing). */
char *slurp(const char *path);
int count_lines(const char *text);
/* Lines of path starting with prefix. */
int lines_with(const char *path, const char *prefix);
/* Wait until path has n lines starting with prefix; 1 if it did. */
int wait_lines(const char *path, const char *prefix, int n, int ms);
int contains(const char *path, const char *needle);
/* stderr of a failure: exactly one line of the tool's own ("zkr-lock:
 * ..."), containing what. */
void assert_one_line(const char *err, const char *what);
void touch(const char *path);
/* Children of path on the test server (0 if none, -1 on error). */
int children_of(const char *path);

/* The commands: $1 the record file, $2 a go file, $3 a label. */
#define HOLD_UNTIL_GO \
    "echo \"begin $3 $$\" >> \"$1\"; while [ ! -e \"$2\" ]; do sleep 0.05; done; echo \"end $3 $$\" >> \"$1\""
#define TRAP_TERM \
    "trap 'echo \"TERM $3\" >> \"$1\"; exit 143' TERM; " HOLD_UNTIL_GO

/* One test's lock path and files: a record file, a go file, stderr. */
typedef struct scene {
    char path[128];
    char rec[512], go[512], err[512];
} scene_t;

/* The suite's init (work directory, the binary is there, quiet ZooKeeper
 * log) and cleanup. */
int zkrl_suite_init(void);
int zkrl_suite_clean(void);
/* The test server's port (for the proxy). */
int zkrl_server_port(void);

/* One line of zkr-lock --print. */
typedef struct listing {
    char role[16], node[256];
    unsigned long long session;
    long long token;
} listing_t;

/* Parse up to max lines of a --print output file; the number of lines
 * (-1 if a line is malformed: the text is printed). */
int read_listing(const char *path, listing_t *e, int max);

/* A fresh lock path and files for a test named name. */
void scene(scene_t *s, const char *name);
/* zkr-lock [opts] PATH -- sh -c SCRIPT sh REC GO LABEL, on the test server
 * unless opts say --hosts. */
pid_t start_script(const scene_t *s, const char *const *opts, const char *script, const char *label,
                   const char *err);

#endif
