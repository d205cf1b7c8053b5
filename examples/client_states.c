/* client_states: watch a zkrecipes client follow its session.
 *
 *   client_states [HOSTS] [SECONDS]
 *   client_states [HOSTS] [--seconds S]
 *   client_states --help
 *
 * HOSTS defaults to $ZKR_HOSTS, then 127.0.0.1:2181.  Prints every state
 * change (CONNECTED, SUSPENDED, RECONNECTED, LOST, READ_ONLY) with the
 * session id, for SECONDS seconds (default 10).  Stop or restart the server
 * meanwhile to see the states change.  Ends with "CHECK PASSED: ..." (exit
 * 0) once it has connected, "CHECK FAILED: ..." (exit 1) if it never did.
 *
 * It shows how to see every state from the first CONNECTED on: open with
 * connect_timeout_ms = -1 (zkr_client_open returns at once), add the
 * listener, then wait with zkr_client_wait_connected. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <zkr/zkr.h>

#include "exdata.h"

static const char usage_text[] =
    "usage: client_states [HOSTS] [SECONDS]\n"
    "       client_states [HOSTS] [--seconds S]\n"
    "\n"
    "Print every connection state a zkrecipes client reports, with its session\n"
    "id, for S seconds; stop or restart the server meanwhile to see SUSPENDED,\n"
    "RECONNECTED and LOST.\n"
    "\n"
    "  HOSTS              ZooKeeper connection string (default $ZKR_HOSTS, then\n"
    "                     127.0.0.1:2181)\n"
    "  -s, --seconds S    how long to watch, 1..86400 (default 10)\n"
    "  -h, --help         this text\n";

static void on_state(zkr_client_t *c, zkr_state_t s, void *ctx)
{
    (void)ctx;
    int64_t id = 0;
    zkr_client_session(c, &id, NULL);
    printf("state: %-11s session 0x%llx\n", zkr_state_name(s), (unsigned long long)id);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"seconds", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int seconds = 10, o, bad = 0;
    while ((o = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
        if (o == 's')
            bad |= ex_int_arg("client_states", "seconds", optarg, 1, 86400, &seconds);
        else if (o == 'h')
            return ex_usage(usage_text, 1);
        else
            bad = -1;
    }
    const char *hosts = bad ? NULL : ex_hosts(argc, argv, 2);
    /* the second operand, SECONDS, as in 0.1.0 */
    if (hosts && optind + 1 < argc && ex_int_arg("client_states", "seconds", argv[optind + 1], 1, 86400, &seconds) != 0)
        hosts = NULL;
    if (!hosts)
        return ex_usage(usage_text, 0);

    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.session_timeout_ms = 4000;
    opt.connect_timeout_ms = -1; /* connect in the background: see every state */
    opt.zk_log_level = 0;
    zkr_client_t *c;
    int rc = zkr_client_open(&c, hosts, &opt);
    if (rc != ZKR_OK) {
        fprintf(stderr, "client_states: open %s: %s\n", hosts, zkr_strerror(rc));
        return ex_check(0, "no client");
    }
    zkr_client_add_listener(c, on_state, NULL);
    rc = zkr_client_wait_connected(c, 15000);
    if (rc != ZKR_OK) {
        fprintf(stderr, "client_states: no connection to %s: %s\n", hosts, zkr_strerror(rc));
        zkr_client_close(c);
        return ex_check(0, "never connected");
    }
    int64_t timeout = 0;
    zkr_client_session_timeout(c, &timeout);
    printf("connected to %s, negotiated session timeout %lld ms; watching for %d s\n", hosts, (long long)timeout, seconds);
    fflush(stdout);
    struct timespec ts = {1, 0};
    for (int i = 0; i < seconds; i++)
        nanosleep(&ts, NULL);
    printf("final state: %s\n", zkr_state_name(zkr_client_state(c)));
    zkr_client_close(c);
    return ex_check(1, "connected; every state change was printed as reported");
}
