/* Driving a Java peer over a pipe (see jpeer.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/zkr_test.h"
#include "tests/interop/jpeer.h"

#define JPEER_READY_MS 120000 /* javac on first use, then the JVM */

struct jpeer {
    pid_t pid;
    int to, from;
    char buf[65536];
    size_t len;
};

char *jpeer_line(jpeer_t *p, int timeout_ms)
{
    int64_t end = zkt_now_ms() + timeout_ms;
    for (;;) {
        char *nl = memchr(p->buf, '\n', p->len);
        if (nl) {
            size_t n = (size_t)(nl - p->buf);
            char *line = strndup(p->buf, n);
            memmove(p->buf, nl + 1, p->len - n - 1);
            p->len -= n + 1;
            return line;
        }
        int64_t left = end - zkt_now_ms();
        if (left <= 0 || p->len >= sizeof p->buf - 1)
            return NULL;
        struct pollfd pf = {p->from, POLLIN, 0};
        int r = poll(&pf, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return NULL;
        ssize_t got = read(p->from, p->buf + p->len, sizeof p->buf - 1 - p->len);
        if (got <= 0)
            return NULL;
        p->len += (size_t)got;
    }
}

jpeer_t *jpeer_start(const char *main_class)
{
    const char *harness = getenv("ZKR_HARNESS");
    if (!harness)
        return NULL;
    char dir[1024], script[1100], src[1100];
    snprintf(dir, sizeof dir, "%s", harness);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    snprintf(script, sizeof script, "%s/../interop/peer.sh", dir);
    snprintf(src, sizeof src, "%s/../interop/%s.java", dir, main_class);
    int in[2], out[2];
    if (pipe(in) != 0)
        return NULL;
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return NULL;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        setenv("ZKR_PEER_MAIN", main_class, 1);
        setenv("ZKR_PEER_SRC", src, 1);
        execlp("bash", "bash", script, zkt_hosts(), (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    jpeer_t *p = calloc(1, sizeof *p);
    if (pid < 0 || !p) {
        close(in[1]);
        close(out[0]);
        free(p);
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return NULL;
    }
    p->pid = pid;
    p->to = in[1];
    p->from = out[0];
    fcntl(p->to, F_SETFD, FD_CLOEXEC);
    fcntl(p->from, F_SETFD, FD_CLOEXEC);
    char *ready = jpeer_line(p, JPEER_READY_MS);
    int ok = ready && strcmp(ready, "READY") == 0;
    free(ready);
    if (!ok) {
        fprintf(stderr, "\n    the Java peer %s did not start\n", main_class);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(p->to);
        close(p->from);
        free(p);
        return NULL;
    }
    return p;
}

void jpeer_stop(jpeer_t *p)
{
    if (!p)
        return;
    ssize_t w = write(p->to, "quit\n", 5);
    (void)w;
    close(p->to);
    int st;
    for (int i = 0; i < 200; i++) {
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            break;
        }
        zkt_sleep_ms(50);
    }
    if (p->pid) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
    }
    close(p->from);
    free(p);
}

int jpeer_vsend(jpeer_t *p, const char *fmt, va_list ap)
{
    char line[2048];
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    if (n < 0 || n >= (int)sizeof line - 1)
        return -1;
    line[n] = '\n';
    return p && write(p->to, line, (size_t)n + 1) == n + 1 ? 0 : -1;
}

int jpeer_send(jpeer_t *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = jpeer_vsend(p, fmt, ap);
    va_end(ap);
    return rc;
}

static char *cmd_line(jpeer_t *p, int timeout_ms, const char *line)
{
    if (jpeer_send(p, "%s", line) != 0)
        return strdup("NO PEER");
    char *r = jpeer_line(p, timeout_ms);
    return r ? r : strdup("NO ANSWER");
}

char *jpeer_vcmd(jpeer_t *p, int timeout_ms, const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    return cmd_line(p, timeout_ms, line);
}

jpeer_t *jpeer_java;

char *jcmd(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = jpeer_vcmd(jpeer_java, JPEER_REPLY_MS, fmt, ap);
    va_end(ap);
    return r;
}

int jis(const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int ok = jpeer_vis(jpeer_java, JPEER_REPLY_MS, want, fmt, ap);
    va_end(ap);
    return ok;
}

int jpeer_vis(jpeer_t *p, int timeout_ms, const char *want, const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    char *r = cmd_line(p, timeout_ms, line);
    int ok = strcmp(r, want) == 0;
    if (!ok)
        fprintf(stderr, "\n    java: '%s' -> '%s' (wanted '%s')\n", line, r, want);
    free(r);
    return ok;
}

/* _c_<uuid>-<marker><10 digits> */
int jpeer_curator_name(const char *name, const char *marker)
{
    size_t ml = strlen(marker);
    if (strlen(name) != 3 + 36 + 1 + ml + 10 || strncmp(name, "_c_", 3) != 0)
        return 0;
    for (int i = 0; i < 36; i++) {
        char ch = name[3 + i];
        int dash = (i == 8 || i == 13 || i == 18 || i == 23);
        if (dash ? ch != '-' : !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return 0;
    }
    if (name[39] != '-' || strncmp(name + 40, marker, ml) != 0)
        return 0;
    for (size_t i = 40 + ml; i < 50 + ml; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

/* Participants as one space-separated line, to compare with Curator's. */
char *jpeer_joined(char **v, size_t n)
{
    if (n == 0)
        return strdup("-");
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(v[i]) + 1;
    char *s = calloc(1, len);
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(s, " ");
        strcat(s, v[i]);
    }
    return s;
}
