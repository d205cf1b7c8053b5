/* A TCP proxy on loopback, in the test process, between clients and a
 * ZooKeeper server: passes bytes, stalls them (a blackhole: connections stay
 * open, nothing moves), or cuts every connection at once.  Used to inject
 * network faults that a server restart cannot (a stall shorter or longer
 * than the session timeout, a cut with the server still up). */
#ifndef ZKPROXY_H
#define ZKPROXY_H

typedef struct zkt_proxy zkt_proxy_t;

/* Listen on 127.0.0.1 (free port) and forward to 127.0.0.1:target_port.
 * NULL on failure. */
zkt_proxy_t *zkt_proxy_start(int target_port);
/* The port clients connect to. */
int zkt_proxy_port(const zkt_proxy_t *p);
/* "127.0.0.1:<port>" (static per proxy). */
const char *zkt_proxy_hosts(const zkt_proxy_t *p);
/* Stop moving bytes (1) or resume (0).  New connections are accepted but
 * stalled too.  Returns once the proxy's loop has applied it (0): from
 * then on, while stalled, not a byte moves either way; -1 if the loop did
 * not answer within 10 s. */
int zkt_proxy_stall(zkt_proxy_t *p, int on);
/* Hold what the server sends (1) while what the clients send still passes,
 * or move it again (0): a request reaches the server and its reply waits
 * in the proxy (a zkt_proxy_cut meanwhile loses it).  New connections are
 * held the same way.  Returns once the loop has applied it (0), -1 if it
 * did not answer within 10 s.  Independent of zkt_proxy_stall. */
int zkt_proxy_stall_replies(zkt_proxy_t *p, int on);
/* Bytes the clients have sent that the proxy holds (not yet read: a stall
 * holds every request sent into it here). */
long zkt_proxy_held(zkt_proxy_t *p);
/* Close every open connection (clients see a reset); the proxy keeps
 * accepting. */
void zkt_proxy_cut(zkt_proxy_t *p);
/* Change the server behind it (for new connections). */
void zkt_proxy_retarget(zkt_proxy_t *p, int target_port);
/* Number of live client connections. */
int zkt_proxy_connections(zkt_proxy_t *p);
void zkt_proxy_stop(zkt_proxy_t *p);

#endif
