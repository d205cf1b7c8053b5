/* The fault-injection proxy: one thread, poll() over every socket. */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/harness/zkproxy.h"

#define MAX_PAIRS 256
#define BUF 65536

typedef struct pair {
    int a, b; /* client side, server side; -1 when unused */
} pair_t;

struct zkt_proxy {
    int lfd;
    int port;
    atomic_int target;
    atomic_int stalled;
    atomic_int replies_stalled; /* zkt_proxy_stall_replies: server->client held */
    atomic_uint stall_seq; /* bumped by every zkt_proxy_stall(_replies) */
    atomic_uint stall_ack; /* the last stall_seq the loop has applied */
    atomic_int cut_req;
    atomic_int stop;
    atomic_int nconn;
    int wake[2];
    pthread_t thread;
    pthread_mutex_t mu; /* pairs: written by the loop, read by zkt_proxy_held */
    pair_t pairs[MAX_PAIRS];
    char hosts[32];
};

static void hard_close(int fd)
{
    if (fd < 0)
        return;
    struct linger l = {1, 0}; /* RST: the peer sees the cut at once */
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

static void pair_close(zkt_proxy_t *p, pair_t *pr)
{
    if (pr->a < 0)
        return;
    pthread_mutex_lock(&p->mu);
    hard_close(pr->a);
    hard_close(pr->b);
    pr->a = pr->b = -1;
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_sub(&p->nconn, 1);
}

static int connect_target(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Move what is readable from `from` to `to`; -1 when the pair must close. */
static int forward(int from, int to)
{
    char buf[BUF];
    ssize_t n = recv(from, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0)
        return -1;
    if (n < 0)
        return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
    ssize_t off = 0;
    while (off < n) {
        ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                struct pollfd pf = {to, POLLOUT, 0};
                if (poll(&pf, 1, 1000) <= 0)
                    return -1;
                continue;
            }
            return -1;
        }
        off += w;
    }
    return 0;
}

static void *proxy_main(void *arg)
{
    zkt_proxy_t *p = arg;
    struct pollfd fds[2 + 2 * MAX_PAIRS];
    int owner[2 + 2 * MAX_PAIRS];
    while (!atomic_load(&p->stop)) {
        if (atomic_exchange(&p->cut_req, 0)) {
            for (int i = 0; i < MAX_PAIRS; i++)
                pair_close(p, &p->pairs[i]);
        }
        /* The sequence first: a stall call whose number is acknowledged
         * below has stored its state before, so it is the one read here. */
        unsigned seq = atomic_load(&p->stall_seq);
        int stalled = atomic_load(&p->stalled);
        int replies_stalled = atomic_load(&p->replies_stalled);
        /* From here on this state holds: while stalled, nothing is read
         * (so nothing moves) until a later call changes it. */
        atomic_store(&p->stall_ack, seq);
        int n = 0;
        fds[n].fd = p->lfd;
        fds[n].events = POLLIN;
        owner[n++] = -1;
        fds[n].fd = p->wake[0];
        fds[n].events = POLLIN;
        owner[n++] = -2;
        for (int i = 0; i < MAX_PAIRS; i++) {
            if (p->pairs[i].a < 0)
                continue;
            /* While stalled nothing is read, so nothing moves either way. */
            fds[n].fd = p->pairs[i].a;
            fds[n].events = stalled ? 0 : POLLIN;
            owner[n++] = i;
            fds[n].fd = p->pairs[i].b;
            fds[n].events = stalled || replies_stalled ? 0 : POLLIN;
            owner[n++] = i;
        }
        int r = poll(fds, (nfds_t)n, 200);
        if (r <= 0)
            continue;
        for (int k = 0; k < n; k++) {
            if (!fds[k].revents)
                continue;
            if (owner[k] == -2) {
                char junk[64];
                while (read(p->wake[0], junk, sizeof junk) > 0) {
                }
                continue;
            }
            if (owner[k] == -1) {
                int cfd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
                if (cfd < 0)
                    continue;
                int sfd = connect_target(atomic_load(&p->target));
                int slot = -1;
                for (int i = 0; i < MAX_PAIRS && slot < 0; i++)
                    if (p->pairs[i].a < 0)
                        slot = i;
                if (sfd < 0 || slot < 0) {
                    hard_close(cfd);
                    if (sfd >= 0)
                        close(sfd);
                    continue;
                }
                int one = 1;
                setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                pthread_mutex_lock(&p->mu);
                p->pairs[slot].a = cfd;
                p->pairs[slot].b = sfd;
                pthread_mutex_unlock(&p->mu);
                atomic_fetch_add(&p->nconn, 1);
                continue;
            }
            pair_t *pr = &p->pairs[owner[k]];
            if (pr->a < 0)
                continue;
            if (stalled || (replies_stalled && fds[k].fd == pr->b)) {
                /* Only an error or a hang-up wakes a stalled pair (or the
                 * server side of one whose replies are held): close it,
                 * moving nothing. */
                if (fds[k].revents & (POLLERR | POLLNVAL | POLLHUP))
                    pair_close(p, pr);
                continue;
            }
            int from = fds[k].fd;
            int to = from == pr->a ? pr->b : pr->a;
            if ((fds[k].revents & (POLLERR | POLLNVAL)) || forward(from, to) < 0)
                pair_close(p, pr);
        }
    }
    for (int i = 0; i < MAX_PAIRS; i++)
        pair_close(p, &p->pairs[i]);
    return NULL;
}

zkt_proxy_t *zkt_proxy_start(int target_port)
{
    zkt_proxy_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    for (int i = 0; i < MAX_PAIRS; i++)
        p->pairs[i].a = p->pairs[i].b = -1;
    atomic_store(&p->target, target_port);
    pthread_mutex_init(&p->mu, NULL);
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->lfd < 0 || pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        if (p->lfd >= 0)
            close(p->lfd);
        free(p);
        return NULL;
    }
    int one = 1;
    setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (bind(p->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(p->lfd, 64) != 0 ||
        getsockname(p->lfd, (struct sockaddr *)&sa, &sl) != 0) {
        close(p->lfd);
        close(p->wake[0]);
        close(p->wake[1]);
        free(p);
        return NULL;
    }
    p->port = ntohs(sa.sin_port);
    snprintf(p->hosts, sizeof p->hosts, "127.0.0.1:%d", p->port);
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        close(p->lfd);
        close(p->wake[0]);
        close(p->wake[1]);
        free(p);
        return NULL;
    }
    return p;
}

int zkt_proxy_port(const zkt_proxy_t *p)
{
    return p->port;
}

const char *zkt_proxy_hosts(const zkt_proxy_t *p)
{
    return p->hosts;
}

static void poke(zkt_proxy_t *p)
{
    ssize_t w = write(p->wake[1], "x", 1);
    (void)w;
}

int zkt_proxy_stall(zkt_proxy_t *p, int on)
{
    atomic_store(&p->stalled, on);
    unsigned seq = atomic_fetch_add(&p->stall_seq, 1) + 1;
    poke(p);
    /* Bounded: the loop comes round at least every 200 ms (its poll
     * timeout), or at once when poked; a forward may block it up to 1 s. */
    for (int i = 0; i < 10000; i++) {
        if ((int)(atomic_load(&p->stall_ack) - seq) >= 0)
            return 0;
        usleep(1000);
    }
    return -1;
}

int zkt_proxy_stall_replies(zkt_proxy_t *p, int on)
{
    atomic_store(&p->replies_stalled, on);
    unsigned seq = atomic_fetch_add(&p->stall_seq, 1) + 1;
    poke(p);
    for (int i = 0; i < 10000; i++) { /* bounded as zkt_proxy_stall */
        if ((int)(atomic_load(&p->stall_ack) - seq) >= 0)
            return 0;
        usleep(1000);
    }
    return -1;
}

long zkt_proxy_held(zkt_proxy_t *p)
{
    long held = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < MAX_PAIRS; i++) {
        int n = 0;
        if (p->pairs[i].a >= 0 && ioctl(p->pairs[i].a, FIONREAD, &n) == 0 && n > 0)
            held += n;
    }
    pthread_mutex_unlock(&p->mu);
    return held;
}

void zkt_proxy_cut(zkt_proxy_t *p)
{
    atomic_store(&p->cut_req, 1);
    poke(p);
    for (int i = 0; i < 100 && atomic_load(&p->cut_req); i++)
        usleep(10000);
}

void zkt_proxy_retarget(zkt_proxy_t *p, int target_port)
{
    atomic_store(&p->target, target_port);
}

int zkt_proxy_connections(zkt_proxy_t *p)
{
    return atomic_load(&p->nconn);
}

void zkt_proxy_stop(zkt_proxy_t *p)
{
    if (!p)
        return;
    atomic_store(&p->stop, 1);
    poke(p);
    pthread_join(p->thread, NULL);
    close(p->lfd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
