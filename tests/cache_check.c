/* What the cache suites share (see cache_check.h). */
#include "tests/cache_check.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- trees ------------------------------------------------------------------------- */

uint32_t cc_crc32(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

void cc_tree_add(cc_tree_t *t, const char *path, const char *data, size_t len, uint32_t crc, int64_t czxid,
                 int64_t mzxid, int32_t version, int depth)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        cc_node_t *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            abort();
        t->v = v;
        t->cap = cap;
    }
    cc_node_t *n = &t->v[t->n++];
    memset(n, 0, sizeof *n);
    n->path = strdup(path);
    n->len = len;
    n->crc = crc;
    if (data) {
        n->data = malloc(len + 1);
        if (!n->data)
            abort();
        memcpy(n->data, data, len);
        n->data[len] = '\0';
        n->crc = cc_crc32(data, len);
    }
    n->czxid = czxid;
    n->mzxid = mzxid;
    n->version = version;
    n->depth = depth;
}

void cc_tree_clear(cc_tree_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].path);
        free(t->v[i].data);
    }
    free(t->v);
    memset(t, 0, sizeof *t);
}

static int rank(unsigned char c)
{
    return c == '\0' ? 0 : c == '/' ? 1 : (int)c + 2;
}

int cc_path_cmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        int x = rank((unsigned char)*a), y = rank((unsigned char)*b);
        if (x != y)
            return x < y ? -1 : 1;
        if (!*a)
            return 0;
    }
}

static int node_cmp(const void *a, const void *b)
{
    return cc_path_cmp(((const cc_node_t *)a)->path, ((const cc_node_t *)b)->path);
}

void cc_tree_sort(cc_tree_t *t)
{
    if (t->n > 1)
        qsort(t->v, t->n, sizeof *t->v, node_cmp);
}

int cc_depth(const char *root, const char *path)
{
    size_t rl = strlen(root);
    if (strncmp(root, path, rl) != 0)
        return -1;
    if (path[rl] == '\0')
        return 0;
    if (path[rl] != '/' || path[rl + 1] == '\0')
        return -1;
    int d = 0;
    for (const char *p = path + rl; *p; p++)
        d += *p == '/';
    return d;
}

int cc_in_scope(const cc_scope_t *s, int depth)
{
    if (depth < 0)
        return 0;
    switch (s->shape) {
    case ZKR_CACHE_NODE:
        return depth == 0;
    case ZKR_CACHE_CHILDREN:
        return depth == 1;
    default:
        return s->max_depth < 0 || depth <= s->max_depth;
    }
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char databuf[1 << 16];

static int read_node(zhandle_t *zh, const cc_scope_t *s, const char *path, int depth, cc_tree_t *out, char *why,
                     size_t len)
{
    if (cc_in_scope(s, depth)) {
        struct Stat st;
        int blen = (int)sizeof databuf;
        int rc = zoo_get(zh, path, 0, databuf, &blen, &st);
        if (rc == ZNONODE)
            return 0;
        if (rc != ZOK) {
            snprintf(why, len, "zoo_get %s: %s", path, zerror(rc));
            return -1;
        }
        if (blen < 0)
            blen = 0;
        cc_tree_add(out, path, s->data ? databuf : NULL, (size_t)blen, 0, st.czxid, st.mzxid, st.version, depth);
        if (!s->data)
            out->v[out->n - 1].len = (size_t)st.dataLength;
    }
    int deeper = s->shape == ZKR_CACHE_CHILDREN ? depth < 1
                 : s->shape == ZKR_CACHE_NODE   ? 0
                                                : (s->max_depth < 0 || depth < s->max_depth);
    if (!deeper)
        return 0;
    struct String_vector ch;
    memset(&ch, 0, sizeof ch);
    int rc = zoo_get_children(zh, path, 0, &ch);
    if (rc == ZNONODE)
        return 0;
    if (rc != ZOK) {
        snprintf(why, len, "zoo_get_children %s: %s", path, zerror(rc));
        return -1;
    }
    qsort(ch.data, (size_t)ch.count, sizeof *ch.data, str_cmp);
    int ret = 0;
    for (int i = 0; i < ch.count && ret == 0; i++) {
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", path, ch.data[i]);
        ret = read_node(zh, s, child, depth + 1, out, why, len);
    }
    deallocate_String_vector(&ch);
    return ret;
}

int cc_server_tree(zhandle_t *zh, const cc_scope_t *s, cc_tree_t *out, char *why, size_t len)
{
    cc_tree_clear(out);
    if (why && len)
        why[0] = '\0';
    int rc = read_node(zh, s, s->root, 0, out, why, len);
    if (rc == 0)
        cc_tree_sort(out);
    return rc;
}

typedef struct walk_ctx {
    const cc_scope_t *s;
    cc_tree_t *out;
    char last[1024];
    int ordered, out_of_scope;
} walk_ctx_t;

static int walk_fn(const zkr_cache_node_t *node, int depth, void *ctx)
{
    walk_ctx_t *w = ctx;
    if (!node || !node->path) {
        w->out_of_scope++;
        return 0;
    }
    if (w->last[0] && cc_path_cmp(w->last, node->path) >= 0)
        w->ordered = 0;
    snprintf(w->last, sizeof w->last, "%s", node->path);
    int d = cc_depth(w->s->root, node->path);
    if (d != depth)
        w->out_of_scope++; /* the depth told is not the node's */
    if (w->s->shape == ZKR_CACHE_CHILDREN && d == 0)
        return 0; /* the path itself: not what the cache holds */
    if (!cc_in_scope(w->s, d)) {
        w->out_of_scope++;
        return 0;
    }
    cc_tree_add(w->out, node->path, node->data, node->data ? node->data_len : (size_t)node->stat.data_length, 0,
                node->stat.czxid, node->stat.mzxid, node->stat.version, d);
    if ((node->data != NULL) != (w->s->data != 0))
        w->out_of_scope++; /* data where there should be none, or none where there should be */
    return 0;
}

int cc_cache_tree(zkr_cache_t *c, const cc_scope_t *s, cc_tree_t *out, int *ordered, int *out_of_scope)
{
    cc_tree_clear(out);
    walk_ctx_t w;
    memset(&w, 0, sizeof w);
    w.s = s;
    w.out = out;
    w.ordered = 1;
    int rc = zkr_cache_walk(c, NULL, walk_fn, &w);
    if (ordered)
        *ordered = w.ordered;
    if (out_of_scope)
        *out_of_scope = w.out_of_scope;
    cc_tree_sort(out);
    return rc == ZKR_ENONODE ? 0 : rc;
}

int cc_tree_diff(const cc_tree_t *a, const char *an, const cc_tree_t *b, const char *bn, int what, char *why,
                 size_t len)
{
    size_t i = 0, j = 0;
    int diffs = 0;
    size_t used = 0;
    if (why && len)
        why[0] = '\0';
#define NOTE(...)                                                                          \
    do {                                                                                   \
        if (diffs++ < 6 && why && used < len) {                                            \
            int k = snprintf(why + used, len - used, __VA_ARGS__);                         \
            used += k > 0 ? (size_t)k : 0;                                                 \
        }                                                                                  \
    } while (0)
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : cc_path_cmp(a->v[i].path, b->v[j].path);
        if (c < 0) {
            NOTE("\n      %s only in %s (czxid %lld)", a->v[i].path, an, (long long)a->v[i].czxid);
            i++;
            continue;
        }
        if (c > 0) {
            NOTE("\n      %s only in %s (czxid %lld)", b->v[j].path, bn, (long long)b->v[j].czxid);
            j++;
            continue;
        }
        const cc_node_t *x = &a->v[i], *y = &b->v[j];
        if (x->czxid != y->czxid)
            NOTE("\n      %s czxid %lld in %s, %lld in %s", x->path, (long long)x->czxid, an, (long long)y->czxid,
                 bn);
        else if ((what & CC_CMP_MZXID) && x->mzxid != y->mzxid)
            NOTE("\n      %s mzxid %lld in %s, %lld in %s", x->path, (long long)x->mzxid, an, (long long)y->mzxid,
                 bn);
        else if ((what & CC_CMP_DATA) &&
                 (x->len != y->len || x->crc != y->crc ||
                  (x->data && y->data && memcmp(x->data, y->data, x->len) != 0)))
            NOTE("\n      %s data %zu bytes (crc %u) in %s, %zu bytes (crc %u) in %s", x->path, x->len,
                 (unsigned)x->crc, an, y->len, (unsigned)y->crc, bn);
        i++;
        j++;
    }
#undef NOTE
    return diffs;
}

void cc_tree_print(FILE *f, const cc_tree_t *t, const char *label)
{
    fprintf(f, "    %s: %zu nodes\n", label, t->n);
    for (size_t i = 0; i < t->n && i < 200; i++)
        fprintf(f, "      %s czxid %lld mzxid %lld len %zu\n", t->v[i].path, (long long)t->v[i].czxid,
                (long long)t->v[i].mzxid, t->v[i].len);
}

/* ---- the event log ------------------------------------------------------------------------ */

void cc_log_init(cc_log_t *log, zkr_client_t *client)
{
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->mu, NULL);
    log->client = client;
}

void cc_log_free(cc_log_t *log)
{
    for (size_t i = 0; i < log->n; i++) {
        free(log->v[i].path);
        free(log->v[i].data);
    }
    free(log->v);
    pthread_mutex_destroy(&log->mu);
    memset(log, 0, sizeof *log);
}

void (*cc_before_record)(const zkr_cache_event_t *ev);

void cc_listener(zkr_cache_t *cache, const zkr_cache_event_t *ev, void *ctx)
{
    cc_log_t *log = ctx;
    cc_event_t e;
    memset(&e, 0, sizeof e);
    e.type = ev->type;
    e.state = ev->state;
    e.at_ms = now_ms();
    int is_node = ev->type == ZKR_CACHE_CREATED || ev->type == ZKR_CACHE_CHANGED || ev->type == ZKR_CACHE_DELETED;
    if (is_node != (ev->node != NULL))
        atomic_fetch_add(&log->bad_node, 1);
    if (ev->node) {
        const zkr_cache_node_t *n = ev->node;
        e.path = strdup(n->path ? n->path : "(null)");
        e.has_data = n->data != NULL;
        e.len = n->data ? n->data_len : (size_t)n->stat.data_length;
        if (n->data) {
            e.data = malloc(n->data_len + 1);
            if (!e.data)
                abort();
            memcpy(e.data, n->data, n->data_len);
            e.data[n->data_len] = '\0';
            e.nul_ok = n->data[n->data_len] == '\0';
        }
        e.czxid = n->stat.czxid;
        e.mzxid = n->stat.mzxid;
        e.version = n->stat.version;
    }
    if (ev->type == ZKR_CACHE_STATE && log->client &&
        (ev->state == ZKR_STATE_SUSPENDED || ev->state == ZKR_STATE_LOST)) {
        zkr_state_t s1 = zkr_client_state(log->client);
        int f = zkr_cache_is_fresh(cache);
        zkr_state_t s2 = zkr_client_state(log->client);
        if (s1 == s2 && (s1 == ZKR_STATE_SUSPENDED || s1 == ZKR_STATE_LOST)) {
            atomic_fetch_add(&log->down_checked, 1);
            if (f)
                atomic_fetch_add(&log->fresh_while_down, 1);
        }
    }
    e.fresh = zkr_cache_is_fresh(cache);
    void (*hook)(const zkr_cache_event_t *) = cc_before_record;
    if (hook)
        hook(ev);
    pthread_mutex_lock(&log->mu);
    if (log->n == log->cap) {
        size_t cap = log->cap ? log->cap * 2 : 1024;
        cc_event_t *v = realloc(log->v, cap * sizeof *v);
        if (!v)
            abort();
        log->v = v;
        log->cap = cap;
    }
    log->v[log->n++] = e;
    pthread_mutex_unlock(&log->mu);
    /* counted only once recorded: whoever waits for a count (cc_cache_open
     * for INITIALIZED) then finds the event in the log */
    if (ev->type == ZKR_CACHE_INITIALIZED)
        atomic_fetch_add(&log->inits, 1);
    if (ev->type == ZKR_CACHE_STATE && (int)ev->state >= 0 && (int)ev->state < 8)
        atomic_fetch_add(&log->states[ev->state], 1);
}

size_t cc_log_index(cc_log_t *log, zkr_cache_event_type_t type, int nth)
{
    size_t at = (size_t)-1;
    pthread_mutex_lock(&log->mu);
    for (size_t i = 0; i < log->n; i++)
        if (log->v[i].type == type && nth-- == 0) {
            at = i;
            break;
        }
    pthread_mutex_unlock(&log->mu);
    return at;
}

size_t cc_log_count(cc_log_t *log)
{
    pthread_mutex_lock(&log->mu);
    size_t n = log->n;
    pthread_mutex_unlock(&log->mu);
    return n;
}

int cc_log_has(cc_log_t *log, size_t from, zkr_cache_event_type_t type, zkr_state_t state)
{
    int k = 0;
    pthread_mutex_lock(&log->mu);
    for (size_t i = from; i < log->n; i++)
        if (log->v[i].type == type && (type != ZKR_CACHE_STATE || log->v[i].state == state))
            k++;
    pthread_mutex_unlock(&log->mu);
    return k;
}

char *cc_log_of(cc_log_t *log, const char *path, size_t from)
{
    size_t cap = 256, used = 0;
    char *s = calloc(1, cap);
    pthread_mutex_lock(&log->mu);
    for (size_t i = from; i < log->n; i++) {
        const cc_event_t *e = &log->v[i];
        if (!e->path || strcmp(e->path, path) != 0)
            continue;
        char one[96];
        int k = snprintf(one, sizeof one, "%s%s:%lld:%lld", used ? " " : "", zkr_cache_event_name(e->type),
                         (long long)e->czxid, (long long)e->mzxid);
        if (used + (size_t)k + 1 > cap) {
            cap = (used + (size_t)k + 1) * 2;
            s = realloc(s, cap);
        }
        memcpy(s + used, one, (size_t)k + 1);
        used += (size_t)k;
    }
    pthread_mutex_unlock(&log->mu);
    return s;
}

typedef struct mnode {
    char *path;
    int present;
    int64_t czxid, mzxid, last_czxid;
    char *data;
    size_t len;
    int has_data;
} mnode_t;

int cc_log_check(cc_log_t *log, const cc_scope_t *scope, cc_tree_t *model, FILE *f, const char *label, size_t upto)
{
    mnode_t *m = NULL;
    size_t nm = 0, cm = 0;
    int bad = 0;
    const char *hist[4] = {NULL, NULL, NULL, NULL};
    int nhist = 0, quiet = 0;
#define BAD(...)                                                   \
    do {                                                           \
        if (log->v[i].path && nhist < 4 && i >= log->quiet_before) { \
            int seen_ = 0;                                         \
            for (int h_ = 0; h_ < nhist; h_++)                     \
                seen_ |= strcmp(hist[h_], log->v[i].path) == 0;    \
            if (!seen_)                                            \
                hist[nhist++] = log->v[i].path;                    \
        }                                                          \
        if (i < log->quiet_before) {                               \
            bad++;                                                 \
            quiet++;                                               \
        } else if (bad++ - quiet < 12 && f) {                      \
            fprintf(f, "\n    %s: event %zu: ", label, i);         \
            fprintf(f, __VA_ARGS__);                               \
        }                                                          \
    } while (0)
    pthread_mutex_lock(&log->mu);
    size_t i = 0;
    if (atomic_load(&log->bad_node))
        BAD("%d events had a node where they should not, or none where they should", atomic_load(&log->bad_node));
    for (i = 0; i < log->n && i < upto; i++) {
        const cc_event_t *e = &log->v[i];
        if (!e->path)
            continue;
        const char *tn = zkr_cache_event_name(e->type);
        int d = cc_depth(scope->root, e->path);
        if (!cc_in_scope(scope, d)) {
            BAD("%s %s: a node the cache does not hold (depth %d)", tn, e->path, d);
            continue;
        }
        if (e->has_data != (scope->data != 0))
            BAD("%s %s: data %s", tn, e->path, e->has_data ? "given without opt.data" : "missing");
        if (e->has_data && !e->nul_ok)
            BAD("%s %s: data not followed by a NUL byte", tn, e->path);
        mnode_t *x = NULL;
        for (size_t k = 0; k < nm; k++)
            if (strcmp(m[k].path, e->path) == 0)
                x = &m[k];
        if (!x) {
            if (nm == cm) {
                cm = cm ? cm * 2 : 64;
                m = realloc(m, cm * sizeof *m);
                if (!m)
                    abort();
            }
            x = &m[nm++];
            memset(x, 0, sizeof *x);
            x->path = e->path;
        }
        switch (e->type) {
        case ZKR_CACHE_CREATED:
            if (x->present)
                BAD("CREATED %s (czxid %lld) while it is in the copy (czxid %lld), no DELETED between", e->path,
                    (long long)e->czxid, (long long)x->czxid);
            else if (x->last_czxid && e->czxid == x->last_czxid)
                BAD("CREATED %s again with the czxid %lld of the node told DELETED before (the same node)",
                    e->path, (long long)e->czxid);
            else if (x->last_czxid && e->czxid < x->last_czxid)
                BAD("CREATED %s czxid %lld after a node of czxid %lld (not the server's order)", e->path,
                    (long long)e->czxid, (long long)x->last_czxid);
            if (e->mzxid < e->czxid)
                BAD("CREATED %s mzxid %lld < czxid %lld", e->path, (long long)e->mzxid, (long long)e->czxid);
            x->present = 1;
            break;
        case ZKR_CACHE_CHANGED:
            if (!x->present)
                BAD("CHANGED %s (czxid %lld) not in the copy (%s)", e->path, (long long)e->czxid,
                    x->last_czxid ? "DELETED before" : "never CREATED");
            else if (e->czxid != x->czxid)
                BAD("CHANGED %s czxid %lld, the copy's %lld (a new node told as a change)", e->path,
                    (long long)e->czxid, (long long)x->czxid);
            else if (e->mzxid <= x->mzxid)
                BAD("CHANGED %s mzxid %lld after %lld (told twice, or out of order)", e->path,
                    (long long)e->mzxid, (long long)x->mzxid);
            if (!scope->data)
                BAD("CHANGED %s without data (opt.data 0 never tells CHANGED)", e->path);
            break;
        case ZKR_CACHE_DELETED:
            if (!x->present)
                BAD("DELETED %s (czxid %lld) not in the copy (%s)", e->path, (long long)e->czxid,
                    x->last_czxid ? "DELETED twice" : "never CREATED");
            else if (e->czxid != x->czxid || e->mzxid != x->mzxid)
                BAD("DELETED %s czxid %lld mzxid %lld, last told czxid %lld mzxid %lld", e->path,
                    (long long)e->czxid, (long long)e->mzxid, (long long)x->czxid, (long long)x->mzxid);
            x->present = 0;
            break;
        default:
            BAD("%s with a node (%s)", tn, e->path);
            continue;
        }
        if (e->type != ZKR_CACHE_DELETED) {
            x->czxid = e->czxid;
            x->mzxid = e->mzxid;
            x->data = e->data;
            x->len = e->len;
            x->has_data = e->has_data;
        }
        if (e->type == ZKR_CACHE_CREATED || e->type == ZKR_CACHE_DELETED)
            x->last_czxid = e->czxid > x->last_czxid ? e->czxid : x->last_czxid;
    }
    if (model) {
        cc_tree_clear(model);
        for (size_t k = 0; k < nm; k++)
            if (m[k].present)
                cc_tree_add(model, m[k].path, m[k].has_data ? m[k].data : NULL, m[k].len, 0, m[k].czxid,
                            m[k].mzxid, 0, cc_depth(scope->root, m[k].path));
        cc_tree_sort(model);
    }
    /* the history of the first nodes that broke a rule, with the states
     * and INITIALIZED between (ms from the first event) */
    for (int h = 0; h < nhist && f; h++) {
        fprintf(f, "\n    %s: the events of %s and of the nodes above it, and the states (ms from the first event):",
                label, hist[h]);
        int64_t t0 = log->n ? log->v[0].at_ms : 0;
        for (size_t k = 0; k < log->n && k < upto; k++) {
            const cc_event_t *e = &log->v[k];
            /* the node, and the nodes above it */
            size_t el = e->path ? strlen(e->path) : 0;
            if (e->path && !(strncmp(e->path, hist[h], el) == 0 && (hist[h][el] == '\0' || hist[h][el] == '/')))
                continue;
            if (e->path)
                fprintf(f, "\n      %zu +%lld %s %s czxid %lld mzxid %lld%s", k, (long long)(e->at_ms - t0),
                        zkr_cache_event_name(e->type), e->path, (long long)e->czxid, (long long)e->mzxid,
                        e->fresh ? "" : " (not fresh)");
            else
                fprintf(f, "\n      %zu +%lld %s %s", k, (long long)(e->at_ms - t0), zkr_cache_event_name(e->type),
                        e->type == ZKR_CACHE_STATE ? zkr_state_name(e->state) : "");
        }
    }
    pthread_mutex_unlock(&log->mu);
#undef BAD
    if (bad - quiet > 12 && f)
        fprintf(f, "\n    %s: ... %d violations in all", label, bad);
    free(m);
    return bad;
}

/* ---- a random writer -------------------------------------------------------------------------- */

static void rand_data(unsigned *seed, char *buf, int *len, int i)
{
    int k = (int)(rand_r(seed) % 10);
    if (k == 0) {
        *len = 0;
    } else if (k <= 2 || k == 3) {
        int n = k == 3 ? 1000 + (int)(rand_r(seed) % 3000) : 1 + (int)(rand_r(seed) % 40);
        for (int j = 0; j < n; j++)
            buf[j] = (char)(rand_r(seed) & 0xff); /* binary, NUL bytes included */
        *len = n;
    } else {
        *len = snprintf(buf, 64, "v%d-%u", i, rand_r(seed) % 1000);
    }
}

void cc_make_parents(zhandle_t *zh, const char *path)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        zoo_create(zh, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        *s = '/';
    }
}

int cc_rmr(zhandle_t *zh, const char *path)
{
    struct String_vector ch;
    memset(&ch, 0, sizeof ch);
    int rc = zoo_get_children(zh, path, 0, &ch);
    if (rc != ZOK)
        return rc;
    for (int i = 0; i < ch.count; i++) {
        char c[1024];
        snprintf(c, sizeof c, "%s/%s", path, ch.data[i]);
        rc = cc_rmr(zh, c);
        if (rc != ZOK && rc != ZNONODE)
            break;
        rc = ZOK;
    }
    deallocate_String_vector(&ch);
    if (rc != ZOK)
        return rc;
    return zoo_delete(zh, path, -1);
}

/* A random descent from root: the node (out), its depth, whether a leaf. */
static int pick(zhandle_t *zh, const char *root, int max_depth, unsigned *seed, char *out, size_t len, int *depth,
                int *leaf)
{
    snprintf(out, len, "%s", root);
    int d = 0;
    for (;;) {
        struct String_vector ch;
        memset(&ch, 0, sizeof ch);
        int rc = zoo_get_children(zh, out, 0, &ch);
        if (rc != ZOK)
            return rc;
        *leaf = ch.count == 0;
        if (ch.count == 0 || d >= max_depth || rand_r(seed) % 3 == 0) {
            deallocate_String_vector(&ch);
            break;
        }
        size_t used = strlen(out);
        snprintf(out + used, len - used, "/%s", ch.data[rand_r(seed) % (unsigned)ch.count]);
        deallocate_String_vector(&ch);
        d++;
    }
    *depth = d;
    return ZOK;
}

static char wbuf[8192]; /* one writer at a time per program */
static pthread_mutex_t wmu = PTHREAD_MUTEX_INITIALIZER;

static int set_random(zhandle_t *zh, const char *p, unsigned *seed, cc_wstats_t *st)
{
    int len = 0;
    if (rand_r(seed) % 4 == 0) {
        struct Stat s;
        len = (int)sizeof wbuf;
        int rc = zoo_get(zh, p, 0, wbuf, &len, &s);
        if (rc != ZOK)
            return rc;
        if (len < 0)
            len = 0;
        st->same_sets++;
    } else {
        rand_data(seed, wbuf, &len, st->ops);
    }
    st->sets++;
    return zoo_set(zh, p, wbuf, len, -1);
}

static int recreate(zhandle_t *zh, const char *p, int in_multi, cc_wstats_t *st)
{
    struct Stat s;
    int len = (int)sizeof wbuf;
    int rc = zoo_get(zh, p, 0, wbuf, &len, &s);
    if (rc != ZOK)
        return rc;
    if (len < 0)
        len = 0;
    if (in_multi) {
        zoo_op_t ops[2];
        zoo_op_result_t res[2];
        zoo_delete_op_init(&ops[0], p, -1);
        zoo_create_op_init(&ops[1], p, wbuf, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        st->txrecreates++;
        return zoo_multi(zh, 2, ops, res);
    }
    rc = zoo_delete(zh, p, -1);
    if (rc != ZOK)
        return rc;
    st->recreates++;
    return zoo_create(zh, p, wbuf, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
}

int cc_random_op(zhandle_t *zh, const char *root, int max_depth, unsigned *seed, cc_wstats_t *st)
{
    pthread_mutex_lock(&wmu);
    int rc;
    st->ops++;
    struct Stat s;
    rc = zoo_exists(zh, root, 0, &s);
    if (rc == ZNONODE) {
        int len = 0;
        rand_data(seed, wbuf, &len, st->ops);
        rc = zoo_create(zh, root, wbuf, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        st->creates++;
        goto out;
    }
    if (rc != ZOK)
        goto out;
    char p[1024];
    int depth = 0, leaf = 0;
    rc = pick(zh, root, max_depth, seed, p, sizeof p, &depth, &leaf);
    if (rc != ZOK)
        goto out;
    int is_root = depth == 0;
    int dice = (int)(rand_r(seed) % 100);
    if (dice < 45) {
        if (depth < max_depth) {
            size_t used = strlen(p);
            snprintf(p + used, sizeof p - used, "/n%u", rand_r(seed) % 6);
            int len = 0;
            rand_data(seed, wbuf, &len, st->ops);
            rc = zoo_create(zh, p, wbuf, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
            if (rc != ZNODEEXISTS) {
                st->creates++;
                goto out;
            }
        }
        rc = set_random(zh, p, seed, st);
    } else if (dice < 62) {
        rc = set_random(zh, p, seed, st);
    } else if (dice < 75) {
        if (is_root || !leaf) {
            rc = set_random(zh, p, seed, st);
        } else {
            st->deletes++;
            rc = zoo_delete(zh, p, -1);
        }
    } else if (dice < 85) {
        if (is_root) {
            rc = set_random(zh, p, seed, st);
        } else {
            st->subtrees++;
            rc = cc_rmr(zh, p);
        }
    } else if (dice < 98) {
        rc = leaf ? recreate(zh, p, dice >= 93, st) : set_random(zh, p, seed, st);
    } else if (rand_r(seed) % 4 != 0) {
        rc = set_random(zh, p, seed, st);
    } else {
        /* the root itself goes, with everything below it, and comes back
         * with its data */
        int len = (int)sizeof wbuf;
        rc = zoo_get(zh, root, 0, wbuf, &len, &s);
        if (rc != ZOK)
            goto out;
        if (len < 0)
            len = 0;
        char keep[8192];
        memcpy(keep, wbuf, (size_t)len);
        st->roots++;
        rc = cc_rmr(zh, root);
        if (rc == ZOK)
            rc = zoo_create(zh, root, keep, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    }
out:
    if (rc != ZOK)
        st->errors++;
    pthread_mutex_unlock(&wmu);
    return rc;
}

void cc_wstats_print(FILE *f, const cc_wstats_t *st, const char *label)
{
    fprintf(f, "\n    %s: %d operations: %d creates, %d sets (%d with the same data), %d deletes, %d subtrees, "
            "%d delete+create, %d delete+create in one multi, %d root deletes; %d failed",
            label, st->ops, st->creates, st->sets, st->same_sets, st->deletes, st->subtrees, st->recreates,
            st->txrecreates, st->roots, st->errors);
}

static void *writer_main(void *arg)
{
    cc_writer_t *w = arg;
    int64_t end = now_ms() + w->max_ms;
    while (!atomic_load(&w->stop) && w->st.ops < w->max_ops && now_ms() < end) {
        if (!atomic_load(&w->run)) {
            atomic_store(&w->idle, 1);
            sleep_ms(5);
            continue;
        }
        cc_random_op(w->zh, w->root, w->max_depth, &w->seed, &w->st);
        if (w->pause_ms > 0)
            sleep_ms(1 + (int)(rand_r(&w->seed) % (unsigned)w->pause_ms));
    }
    atomic_store(&w->idle, 1);
    return NULL;
}

int cc_writer_start(cc_writer_t *w)
{
    atomic_store(&w->run, 1);
    atomic_store(&w->idle, 0);
    atomic_store(&w->stop, 0);
    memset(&w->st, 0, sizeof w->st);
    return pthread_create(&w->t, NULL, writer_main, w);
}

int cc_writer_pause(cc_writer_t *w, int timeout_ms)
{
    atomic_store(&w->idle, 0);
    atomic_store(&w->run, 0);
    int64_t end = now_ms() + timeout_ms;
    while (!atomic_load(&w->idle) && now_ms() < end)
        sleep_ms(2);
    return atomic_load(&w->idle);
}

void cc_writer_resume(cc_writer_t *w)
{
    atomic_store(&w->run, 1);
}

void cc_writer_stop(cc_writer_t *w)
{
    atomic_store(&w->stop, 1);
    pthread_join(w->t, NULL);
}

/* ---- a cache under test ------------------------------------------------------------------------ */

/* The caches open (cc_cache_open and cc_close run on the test's thread). */
static cc_cache_t *open_caches;

void cc_cache_close_all(void)
{
    while (open_caches)
        cc_cache_close(open_caches);
}

int cc_cache_open(cc_cache_t *t, zkr_client_t *c, const char *root, zkr_cache_shape_t shape, int max_depth,
                  int data, const char *name, int64_t init_ms)
{
    memset(t, 0, sizeof *t);
    snprintf(t->root, sizeof t->root, "%s", root);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->scope.root = t->root;
    t->scope.shape = shape;
    t->scope.max_depth = max_depth;
    t->scope.data = data;
    cc_log_init(&t->log, c);
    zkr_cache_options_t o;
    zkr_cache_options_init(&o);
    o.shape = shape;
    o.max_depth = max_depth;
    o.data = data;
    int rc = zkr_cache_new(&t->cache, c, root, &o);
    if (rc != ZKR_OK) {
        cc_log_free(&t->log);
        return rc;
    }
    t->next = open_caches;
    open_caches = t;
    rc = zkr_cache_set_listener(t->cache, cc_listener, &t->log);
    if (rc == ZKR_OK)
        rc = zkr_cache_start(t->cache);
    if (rc == ZKR_OK)
        rc = zkr_cache_wait_initialized(t->cache, init_ms);
    /* the listener is told INITIALIZED on the callback thread: wait for it
     * too (bounded) */
    int64_t end = now_ms() + 5000;
    while (rc == ZKR_OK && atomic_load(&t->log.inits) == 0 && now_ms() < end)
        sleep_ms(5);
    if (rc == ZKR_OK && atomic_load(&t->log.inits) == 0)
        rc = ZKR_ETIMEDOUT;
    if (rc != ZKR_OK)
        cc_cache_close(t);
    return rc;
}

void cc_cache_close(cc_cache_t *t)
{
    for (cc_cache_t **p = &open_caches; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    zkr_cache_free(t->cache);
    t->cache = NULL;
    cc_log_free(&t->log);
}

int cc_converge(cc_cache_t *t, const cc_tree_t *server, int what, int ms, FILE *f, cc_result_t *r)
{
    memset(r, 0, sizeof *r);
    int64_t t0 = now_ms(), end = t0 + ms;
    cc_tree_t copy = {0}, model = {0};
    char why[2048];
    r->ms = -1;
    for (int i = 0; i < 100000; i++) {
        r->walk_rc = cc_cache_tree(t->cache, &t->scope, &copy, &r->ordered, &r->out_of_scope);
        cc_log_check(&t->log, &t->scope, &model, NULL, t->name, (size_t)-1);
        r->copy_diffs = cc_tree_diff(server, "the server", &copy, "the copy", what, NULL, 0);
        r->model_diffs = cc_tree_diff(server, "the server", &model, "the events replayed", what, NULL, 0);
        if (r->walk_rc == ZKR_OK && r->copy_diffs == 0 && r->model_diffs == 0) {
            r->ms = now_ms() - t0;
            break;
        }
        if (now_ms() >= end)
            break;
        sleep_ms(20);
    }
    if (r->ms < 0 && f) {
        fprintf(f, "\n    %s: not equal to the server after %d ms (walk: %s)", t->name, ms,
                r->walk_rc == ZKR_OK ? "OK" : zkr_strerror(r->walk_rc));
        cc_tree_diff(server, "the server", &copy, "the copy", what, why, sizeof why);
        if (r->copy_diffs)
            fprintf(f, "\n    the copy: %d differences:%s", r->copy_diffs, why);
        cc_tree_diff(server, "the server", &model, "the events replayed", what, why, sizeof why);
        if (r->model_diffs)
            fprintf(f, "\n    the events replayed: %d differences:%s", r->model_diffs, why);
    }
    r->nodes = copy.n;
    r->violations = cc_log_check(&t->log, &t->scope, NULL, f, t->name, (size_t)-1);
    r->events = cc_log_count(&t->log);
    cc_tree_clear(&copy);
    cc_tree_clear(&model);
    return r->ms >= 0 && r->violations == 0 && r->ordered && r->out_of_scope == 0 ? 0 : -1;
}
