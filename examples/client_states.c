/* client_states: watch a zkrecipes client follow its session.
 *
 *   client_states [HOSTS] [SECONDS]
 *
 * HOSTS defaults to $ZKR_HOSTS, then 127.0.0.1:2181.  Prints every state
 * change (CONNECTED, SUSPENDED, RECONNECTED, LOST, READ_ONLY) with the
 * session id, for SECONDS seconds (default 10).  Stop or restart the server
 * meanwhile to see the states change.  Exits non-zero if it never connected. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <zkr/zkr.h>

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
    const char *hosts = argc > 1 ? argv[1] : getenv("ZKR_HOSTS");
    if (!hosts || !*hosts)
        hosts = "127.0.0.1:2181";
    int seconds = argc > 2 ? atoi(argv[2]) : 10;

    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.session_timeout_ms = 4000;
    opt.connect_timeout_ms = -1; /* connect in the background: see every state */
    opt.zk_log_level = 0;
    zkr_client_t *c;
    int rc = zkr_client_open(&c, hosts, &opt);
    if (rc != ZKR_OK) {
        fprintf(stderr, "client_states: open %s: %s\n", hosts, zkr_strerror(rc));
        return 1;
    }
    zkr_client_add_listener(c, on_state, NULL);
    rc = zkr_client_wait_connected(c, 15000);
    if (rc != ZKR_OK) {
        fprintf(stderr, "client_states: no connection to %s: %s\n", hosts, zkr_strerror(rc));
        zkr_client_close(c);
        return 1;
    }
    int timeout = 0;
    zkr_client_session_timeout(c, &timeout);
    printf("connected to %s, negotiated session timeout %d ms; watching for %d s\n", hosts, timeout, seconds);
    fflush(stdout);
    struct timespec ts = {1, 0};
    for (int i = 0; i < seconds; i++)
        nanosleep(&ts, NULL);
    printf("final state: %s\n", zkr_state_name(zkr_client_state(c)));
    zkr_client_close(c);
    return 0;
}
