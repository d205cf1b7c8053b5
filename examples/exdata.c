/* Helpers shared by the examples (see exdata.h). */
#include "exdata.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void ex_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int ex_delete_tree(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0, NULL};
    int rc = zoo_get_children(zh, path, 0, &kids);
    if (rc == ZNONODE)
        return ZOK;
    if (rc != ZOK)
        return rc;
    for (int i = 0; i < kids.count && rc == ZOK; i++) {
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", path, kids.data[i]);
        rc = ex_delete_tree(zh, child);
    }
    deallocate_String_vector(&kids);
    if (rc != ZOK)
        return rc;
    rc = zoo_delete(zh, path, -1);
    return rc == ZNONODE ? ZOK : rc;
}

int ex_delete_tree_fn(zhandle_t *zh, int64_t session_id, void *path)
{
    (void)session_id;
    ex_delete_tree(zh, path);
    return ZKR_OK;
}

zkr_client_t *ex_client_open(const char *prog, const char *hosts)
{
    zkr_client_options_t opt;
    zkr_client_options_init(&opt);
    opt.zk_log_level = 0;
    zkr_client_t *c = NULL;
    int rc = zkr_client_open(&c, hosts, &opt);
    if (rc != ZKR_OK) {
        fprintf(stderr, "%s: zkr_client_open: %s\n", prog, zkr_strerror(rc));
        return NULL;
    }
    return c;
}

int ex_create_path(zhandle_t *zh, const char *path, const char *data)
{
    char buf[512];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return ZBADARGUMENTS;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = zoo_create(zh, buf, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        *p = '/';
        if (rc != ZOK && rc != ZNODEEXISTS)
            return rc;
    }
    return zoo_create(zh, buf, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
}

int ex_fresh_tree(zhandle_t *zh, const char *root, const char *counter, const char *dir)
{
    char path[600];
    int rc = ex_delete_tree(zh, root);
    if (rc == ZOK)
        rc = ex_create_path(zh, root, "");
    if (rc == ZNODEEXISTS)
        rc = ZOK;
    snprintf(path, sizeof path, "%s/%s", root, counter);
    if (rc == ZOK)
        rc = zoo_create(zh, path, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    snprintf(path, sizeof path, "%s/%s", root, dir);
    if (rc == ZOK)
        rc = zoo_create(zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    return rc;
}

const char *ex_hosts(int argc, char **argv, int max_operands)
{
    if (argc - optind > max_operands)
        return NULL;
    if (optind < argc)
        return argv[optind];
    const char *hosts = getenv("ZKR_HOSTS");
    return hosts && *hosts ? hosts : "127.0.0.1:2181";
}

int ex_int_arg(const char *prog, const char *name, const char *text, int min, int max, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "%s: --%s wants a number from %d to %d, not '%s'\n", prog, name, min, max, text);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int ex_usage(const char *usage, int help)
{
    if (help) {
        printf("%s\nThe last line is CHECK PASSED: ... (exit status 0) or CHECK FAILED: ...\n"
               "(exit status 1); a bad command line exits with status 2.\n",
               usage);
        exit(0);
    }
    /* a bad command line: the synopsis (up to the first blank line) only */
    const char *end = strstr(usage, "\n\n");
    fprintf(stderr, "%.*sTry --help for more.\n", end ? (int)(end - usage + 1) : (int)strlen(usage), usage);
    return 2;
}

int ex_args_done(int bad, int argc, char **argv, const char **hosts, const char *path, size_t path_max,
                 const char *usage)
{
    if (!bad && (*hosts = ex_hosts(argc, argv, 1)) == NULL)
        bad = -1;
    if (!bad && (path[0] != '/' || strlen(path) > path_max))
        bad = -1;
    return bad ? ex_usage(usage, 0) : 0;
}

int ex_check(int ok, const char *what)
{
    printf("CHECK %s: %s\n", ok ? "PASSED" : "FAILED", what);
    return ok ? 0 : 1;
}

void ex_on_stop_signals(void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int64_t ex_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
