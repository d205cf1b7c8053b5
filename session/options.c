/* Client options: defaults, validation before anything is sent (hosts,
 * timeouts, chroot, credentials, ACL), the ACL the recipes create nodes
 * with, and the rule for parents (each ancestor, as a container). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session/core_private.h"

#define HOSTS_MAX 4096

/* The options struct of 1.0: the smallest a program's may be.  Fields are
 * only ever appended after it. */
#define OPTIONS_SIZE_MIN sizeof(zkr_client_options_t)

static void defaults(zkr_client_options_t *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->size = sizeof *opt;
    opt->session_timeout_ms = 15000;
    opt->connect_timeout_ms = 15000;
    opt->zk_log_level = -1;
    opt->log_level = ZKR_LOG_WARN;
}

void zkr_client_options_init_size(zkr_client_options_t *opt, size_t size)
{
    if (!opt || size < sizeof opt->size)
        return;
    zkr_client_options_t d;
    defaults(&d);
    memcpy(opt, &d, size < sizeof d ? size : sizeof d); /* never past the caller's struct */
    opt->size = size;
}

/* (the macro of the header stands for the call of the size above) */
void(zkr_client_options_init)(zkr_client_options_t *opt)
{
    zkr_client_options_init_size(opt, OPTIONS_SIZE_MIN);
}

int zkr__options_take(zkr_client_options_t *dst, const zkr_client_options_t *src)
{
    defaults(dst);
    if (!src)
        return ZKR_OK;
    /* A struct of another version: older (smaller, down to 1.0's) is read
     * as far as it goes, the rest keeps its defaults; newer (larger) is a
     * program built against a later header: refused. */
    if (src->size < OPTIONS_SIZE_MIN || src->size > sizeof *dst)
        return ZKR_EINVAL;
    memcpy(dst, src, src->size);
    dst->size = sizeof *dst;
    return ZKR_OK;
}

/* "host:port[,host:port...]", IPv6 hosts as "[addr]:port": no empty entry,
 * a port in 1..65535, no blanks or control bytes, no chroot ('/'). */
int zkr__hosts_valid(const char *hosts)
{
    size_t n = strnlen(hosts, HOSTS_MAX + 1);
    if (n == 0 || n > HOSTS_MAX)
        return 0;
    const char *p = hosts, *end = hosts + n;
    while (p <= end) {
        const char *e = memchr(p, ',', (size_t)(end - p));
        if (!e)
            e = end;
        const char *colon = NULL;
        if (*p == '[') {
            const char *rb = memchr(p, ']', (size_t)(e - p));
            if (!rb || rb == p + 1 || rb + 1 >= e || rb[1] != ':')
                return 0;
            colon = rb + 1;
        } else {
            for (const char *q = p; q < e; q++)
                if (*q == ':')
                    colon = q;
        }
        if (!colon || colon == p || colon + 1 >= e || e - (colon + 1) > 5)
            return 0;
        long port = 0;
        for (const char *q = colon + 1; q < e; q++) {
            if (*q < '0' || *q > '9')
                return 0;
            port = port * 10 + (*q - '0');
        }
        if (port < 1 || port > 65535)
            return 0;
        for (const char *q = p; q < colon; q++) {
            unsigned char ch = (unsigned char)*q;
            if (ch <= ' ' || ch >= 0x7f || ch == '/')
                return 0;
        }
        p = e + 1;
    }
    return 1;
}

/* The options, once taken (zkr__options_take): ZKR_OK or ZKR_EINVAL. */
int zkr__options_validate(const zkr_client_options_t *opt)
{
    if (opt->size != sizeof *opt)
        return ZKR_EINVAL;
    if (opt->session_timeout_ms != 0 && (opt->session_timeout_ms < ZKR_SESSION_TIMEOUT_MIN_MS ||
                                         opt->session_timeout_ms > ZKR_SESSION_TIMEOUT_MAX_MS))
        return ZKR_EINVAL;
    if (opt->zk_log_level < -1 || opt->zk_log_level > 4 || opt->log_level < 0 || opt->log_level > 4)
        return ZKR_EINVAL;
    if (opt->chroot && opt->chroot[0] && !zkr__path_valid(opt->chroot))
        return ZKR_EINVAL;
    if (opt->auth_scheme && (!opt->auth_scheme[0] || !opt->auth_data || opt->auth_data_len < 0))
        return ZKR_EINVAL;
    if (opt->acl_mode == ZKR_ACL_CREATOR_ALL && !opt->auth_scheme)
        return ZKR_EINVAL; /* ZooKeeper refuses creator-only nodes from a session without identity */
    if (opt->acl_mode == ZKR_ACL_CUSTOM) {
        if (!opt->acl || opt->acl_count < 1 || opt->acl_count > 64)
            return ZKR_EINVAL;
        for (size_t i = 0; i < opt->acl_count; i++) {
            const zkr_acl_t *a = &opt->acl[i];
            if (a->perms < 1 || a->perms > ZKR_PERM_ALL || !a->scheme || !a->scheme[0] || !a->id)
                return ZKR_EINVAL;
        }
    } else if (opt->acl_mode != ZKR_ACL_OPEN && opt->acl_mode != ZKR_ACL_CREATOR_ALL) {
        return ZKR_EINVAL;
    }
    return ZKR_OK;
}

void zkr__acl_free(struct ACL_vector *v)
{
    for (int32_t i = 0; v->data && i < v->count; i++) {
        free(v->data[i].id.scheme);
        free(v->data[i].id.id);
    }
    free(v->data);
    v->data = NULL;
    v->count = 0;
}

/* A copy of the ACL the options ask for. */
int zkr__acl_copy(struct ACL_vector *v, const zkr_client_options_t *opt)
{
    static const zkr_acl_t open_acl = {ZKR_PERM_ALL, "world", "anyone"};
    static const zkr_acl_t creator_acl = {ZKR_PERM_ALL, "auth", ""};
    const zkr_acl_t *src = opt->acl_mode == ZKR_ACL_CUSTOM ? opt->acl
                           : opt->acl_mode == ZKR_ACL_CREATOR_ALL ? &creator_acl : &open_acl;
    size_t n = opt->acl_mode == ZKR_ACL_CUSTOM ? opt->acl_count : 1;
    v->data = calloc(n, sizeof *v->data);
    if (!v->data)
        return ZKR_ENOMEM;
    v->count = (int32_t)n;
    for (size_t i = 0; i < n; i++) {
        v->data[i].perms = src[i].perms;
        v->data[i].id.scheme = strdup(src[i].scheme);
        v->data[i].id.id = strdup(src[i].id);
        if (!v->data[i].id.scheme || !v->data[i].id.id) {
            zkr__acl_free(v);
            return ZKR_ENOMEM;
        }
    }
    return ZKR_OK;
}

const struct ACL_vector *zkr__client_acl(const zkr_client_t *c)
{
    return &c->acl;
}

int zkr__parents_each(zkr_client_t *c, const char *path, zkr__parent_fn create, void *ctx)
{
    size_t n = strlen(path);
    char *buf = malloc(n + 1);
    if (!buf)
        return ZKR_ENOMEM;
    memcpy(buf, path, n + 1);
    int rc = 0;
    /* Each ancestor in turn, then the path itself. */
    for (size_t i = 1; i <= n && rc == 0; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        rc = create(ctx, buf, zkr__client_acl(c), ZOO_CONTAINER);
        buf[i] = saved;
    }
    free(buf);
    return rc;
}
