/* Small helpers the examples share for the plain ZooKeeper data they keep
 * (tickets, accounts, a config) on their lock clients' sessions
 * (zkr_client_with_handle): not part of the library. */
#ifndef ZKR_EXAMPLES_EXDATA_H
#define ZKR_EXAMPLES_EXDATA_H
#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>

/* Sleep ms milliseconds. */
void ex_sleep_ms(int ms);

/* The monotonic clock, in milliseconds. */
int64_t ex_now_ms(void);

/* Delete path and everything under it; ZOK if it was not there.  zh: the
 * handle a zkr_handle_fn was given. */
int ex_delete_tree(zhandle_t *zh, const char *path);

/* ex_delete_tree(zh, path) as a zkr_handle_fn: ctx is the path; returns
 * ZKR_OK (the clean-up at the end of a run is best effort). */
int ex_delete_tree_fn(zhandle_t *zh, int64_t session_id, void *path);

/* Create path holding data (parents made as plain nodes, existing ones
 * kept); returns the ZooKeeper code of creating path itself (ZNODEEXISTS
 * if it was already there). */
int ex_create_path(zhandle_t *zh, const char *path, const char *data);

/* A fresh tree: root emptied (made if missing), holding root/counter =
 * "0" and an empty root/dir.  Returns ZooKeeper's code (ZOK). */
int ex_fresh_tree(zhandle_t *zh, const char *root, const char *counter, const char *dir);

/* A lock client on hosts with the default options and the ZooKeeper C
 * client's log off; NULL after "prog: zkr_client_open: <error>". */
zkr_client_t *ex_client_open(const char *prog, const char *hosts);

/* ---- command lines -------------------------------------------------------- */

/* The connection string: argv[optind] if getopt_long left an operand,
 * else $ZKR_HOSTS, else "127.0.0.1:2181".  More than `max_operands`
 * operands is a usage error: NULL. */
const char *ex_hosts(int argc, char **argv, int max_operands);

/* Parse `text` (the argument of option --`name`) as a decimal int in
 * [min, max] into *out; 0, or -1 after a message naming prog. */
int ex_int_arg(const char *prog, const char *name, const char *text, int min, int max, int *out);

/* For help (--help): print `usage` and a note on the CHECK line and the
 * exit status on stdout, and exit 0.  Otherwise print
 * its synopsis (up to the first blank line) on stderr and return 2, the
 * exit status of a bad command line. */
int ex_usage(const char *usage, int help);

/* The end of an example's option parsing: `bad` is nonzero if an option
 * was wrong.  Sets *hosts (ex_hosts, one operand at most) and checks that
 * `path` is absolute and at most path_max long.  0, or the usage on stderr
 * and 2. */
int ex_args_done(int bad, int argc, char **argv, const char **hosts, const char *path, size_t path_max,
                 const char *usage);

/* SIGINT and SIGTERM call fn (which should only set a flag the example
 * watches). */
void ex_on_stop_signals(void (*fn)(int));

/* The last line of every example: "CHECK PASSED: what" or "CHECK FAILED:
 * what".  Returns the exit status, 0 or 1. */
int ex_check(int ok, const char *what);

#endif
