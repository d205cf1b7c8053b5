/* zkr-lock: the command line, --help, messages. */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/zkrl.h"
#include "util/util.h"

static int log_verbose, log_quiet;

void zkrl_log_init(int verbose, int quiet)
{
    log_verbose = verbose;
    log_quiet = quiet;
}

/* One line "zkr-lock: <message><tail>" on stderr. */
static void vsay(const char *tail, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "zkr-lock: %s%s\n", line, tail);
}

void zkrl_err(const char *fmt, ...)
{
    if (log_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay("", fmt, ap);
    va_end(ap);
}

void zkrl_vlog(const char *fmt, ...)
{
    if (!log_verbose)
        return;
    char line[1024], stamp[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ldZ zkr-lock[%ld]: %s\n", stamp, ts.tv_nsec / 1000000L, (long)getpid(), line);
}

const char *zkrl_signame(int sig)
{
    static __thread char buf[32];
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(buf, sizeof buf, "SIG%s", abbrev);
    else
        snprintf(buf, sizeof buf, "signal %d", sig);
    return buf;
}

static const char usage_text[] =
    "Usage: zkr-lock [options] LOCKPATH -- COMMAND [ARG...]\n"
    "       zkr-lock [options] --leader [--id ID] ELECTIONPATH -- COMMAND [ARG...]\n"
    "       zkr-lock [options] --print [--leader] LOCKPATH\n"
    "\n"
    "Run COMMAND while holding a ZooKeeper lock (Curator-compatible), or while\n"
    "leading an election (Curator LeaderLatch), and pass its exit status\n"
    "through.  The command's environment gets ZKR_LOCK_PATH, ZKR_LOCK_NODE and\n"
    "ZKR_FENCING_TOKEN (and ZKR_LEADER_ID with --leader).\n"
    "\n"
    "Connection:\n"
    "  -H, --hosts HOSTS          ZooKeeper hosts \"h1:2181,h2:2181\" (default $ZKR_HOSTS,\n"
    "                             then 127.0.0.1:2181)\n"
    "      --session-timeout MS   requested session timeout (default 15000)\n"
    "      --connect-timeout SECONDS  give up connecting after this (default 15)\n"
    "      --chroot PATH          every path is relative to PATH\n"
    "      --auth SCHEME:CREDENTIALS  authenticate (default $ZKR_AUTH); prefer the\n"
    "                             environment: arguments are visible to other users\n"
    "Lock kind (default: exclusive mutex, Curator InterProcessMutex):\n"
    "  -r, --read                 the read half of a read/write lock\n"
    "  -w, --write                the write half of a read/write lock\n"
    "  -s, --semaphore N          one lease of a semaphore of N leases\n"
    "  -S, --semaphore-mutex      the non-reentrant mutex (a semaphore of 1 lease)\n"
    "  -L, --leader               a leader election (Curator LeaderLatch): join it,\n"
    "                             run COMMAND once this process leads\n"
    "      --id ID                the participant id stored in the election node\n"
    "                             (--leader; default HOSTNAME-PID)\n"
    "Waiting and holding:\n"
    "  -t, --timeout SECONDS      wait at most this long (0: try once; default forever)\n"
    "  -n, --nonblock             the same as --timeout 0\n"
    "  -E, --conflict-exit-code N exit status when the lock was not acquired (default 1)\n"
    "  -g, --grace SECONDS        tolerate a hold in doubt (connection down) this long\n"
    "                             before stopping the command (default 0: at once)\n"
    "  -k, --kill-after SECONDS   SIGKILL the command this long after SIGTERM (default 10)\n"
    "Other:\n"
    "  -p, --print                print the holders and the queue, one per line:\n"
    "                             ROLE NODE SESSION TOKEN (--read/--write/--semaphore\n"
    "                             choose how the lock directory is read); with\n"
    "                             --leader: leader, then participant, lines with\n"
    "                             the ID as a fifth field\n"
    "  -v, --verbose              log connection and hold state changes (timestamps)\n"
    "  -q, --quiet                no messages of zkr-lock's own, except usage errors\n"
    "  -h, --help                 this help\n"
    "  -V, --version              the version\n"
    "\n"
    "Exit status:\n"
    "  N     the command's own exit status (0 on success)\n"
    "  1     the lock was not acquired (or leadership not gained) in time\n"
    "        (--conflict-exit-code)\n"
    "  64    bad usage (a --chroot that does not exist included)\n"
    "  69    cannot connect to ZooKeeper\n"
    "  70    internal error\n"
    "  75    the hold or leadership was lost (or in doubt longer than --grace)\n"
    "        while the command ran: the command was stopped\n"
    "  77    authentication refused, or the lock path's ACL denies access\n"
    "  126   the command was found but cannot be executed\n"
    "  127   the command was not found\n"
    "  128+N the command was killed by signal N, or zkr-lock got signal N while\n"
    "        waiting for the lock\n";

/* A usage error: always one line on stderr, even with --quiet. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(" (see zkr-lock --help)", fmt, ap);
    va_end(ap);
    return ZKRL_EX_USAGE;
}

/* An option in seconds: -1 (set) or the usage error. */
static int seconds_opt(const char *name, const char *arg, int64_t *ms)
{
    int64_t v = zkrt_parse_seconds(arg);
    if (v < 0)
        return usage_error("%s needs seconds, 0 or more: '%s'", name, arg);
    *ms = v;
    return -1;
}

static int set_auth(zkrl_opts_t *o, const char *spec, const char *where)
{
    const char *colon = strchr(spec, ':');
    if (!colon || colon == spec || colon[1] == '\0')
        return usage_error("%s must be SCHEME:CREDENTIALS", where);
    free(o->auth_scheme);
    free(o->auth_data);
    o->auth_scheme = strndup(spec, (size_t)(colon - spec));
    o->auth_data = strdup(colon + 1);
    if (!o->auth_scheme || !o->auth_data) {
        fprintf(stderr, "zkr-lock: out of memory\n");
        return ZKRL_EX_SOFTWARE;
    }
    return -1;
}

enum { OPT_SESSION = 256, OPT_CONNECT, OPT_CHROOT, OPT_AUTH, OPT_ID };

static const struct option longopts[] = {
    {"hosts", required_argument, NULL, 'H'},
    {"session-timeout", required_argument, NULL, OPT_SESSION},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT},
    {"chroot", required_argument, NULL, OPT_CHROOT},
    {"auth", required_argument, NULL, OPT_AUTH},
    {"read", no_argument, NULL, 'r'},
    {"write", no_argument, NULL, 'w'},
    {"semaphore", required_argument, NULL, 's'},
    {"semaphore-mutex", no_argument, NULL, 'S'},
    {"leader", no_argument, NULL, 'L'},
    {"id", required_argument, NULL, OPT_ID},
    {"timeout", required_argument, NULL, 't'},
    {"nonblock", no_argument, NULL, 'n'},
    {"conflict-exit-code", required_argument, NULL, 'E'},
    {"grace", required_argument, NULL, 'g'},
    {"kill-after", required_argument, NULL, 'k'},
    {"print", no_argument, NULL, 'p'},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* One option; -1 to go on, else an exit code. */
static int one_option(zkrl_opts_t *o, int c, char *arg, int *kinds)
{
    switch (c) {
    case 'H':
        if (!*arg)
            return usage_error("--hosts needs a connection string");
        o->hosts = arg;
        return -1;
    case OPT_SESSION:
        if (zkrt_parse_int(arg, 1, 3600000, &o->session_timeout_ms) != 0)
            return usage_error("--session-timeout needs milliseconds, 1 or more: '%s'", arg);
        return -1;
    case OPT_CONNECT:
        return seconds_opt("--connect-timeout", arg, &o->connect_timeout_ms);
    case OPT_CHROOT:
        if (!zkrt_path_ok(arg))
            return usage_error("--chroot needs an absolute ZooKeeper path: '%s'", arg);
        o->chroot = arg;
        return -1;
    case OPT_AUTH: {
        int rc = set_auth(o, arg, "--auth");
        memset(arg, 0, strlen(arg)); /* out of /proc/PID/cmdline from now on */
        return rc;
    }
    case 'r': o->kind = ZKRL_READ; ++*kinds; return -1;
    case 'w': o->kind = ZKRL_WRITE; ++*kinds; return -1;
    case 'S': o->kind = ZKRL_SEMAPHORE_MUTEX; ++*kinds; return -1;
    case 'L': o->kind = ZKRL_LEADER; ++*kinds; return -1;
    case OPT_ID:
        if (strlen(arg) > 4096)
            return usage_error("--id is too long (4096 bytes at most)");
        o->id = arg;
        return -1;
    case 's':
        ++*kinds;
        o->kind = ZKRL_SEMAPHORE;
        if (zkrt_parse_int(arg, 1, 1000000, &o->leases) != 0)
            return usage_error("--semaphore needs a count from 1 to 1000000: '%s'", arg);
        return -1;
    case 't':
        return seconds_opt("--timeout", arg, &o->timeout_ms);
    case 'n': o->timeout_ms = 0; return -1;
    case 'E':
        if (zkrt_parse_int(arg, 0, 255, &o->conflict_code) != 0)
            return usage_error("--conflict-exit-code needs a number from 0 to 255: '%s'", arg);
        return -1;
    case 'g':
        return seconds_opt("--grace", arg, &o->grace_ms);
    case 'k':
        return seconds_opt("--kill-after", arg, &o->kill_after_ms);
    case 'p': o->print = 1; return -1;
    case 'v': o->verbose = 1; return -1;
    case 'q': o->quiet = 1; return -1;
    case 'h':
        fputs(usage_text, stdout);
        return fflush(stdout) == 0 ? 0 : ZKRL_EX_SOFTWARE;
    case 'V':
        printf("zkr-lock (zkrecipes) %s\n", zkr_version());
        return fflush(stdout) == 0 ? 0 : ZKRL_EX_SOFTWARE;
    default: /* getopt_long has printed why */
        return ZKRL_EX_USAGE;
    }
}

int zkrl_parse(zkrl_opts_t *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    const char *env = getenv("ZKR_HOSTS");
    o->hosts = env && *env ? env : "127.0.0.1:2181";
    o->session_timeout_ms = 15000;
    o->connect_timeout_ms = 15000;
    o->timeout_ms = -1;
    o->kill_after_ms = 10000;
    o->conflict_code = ZKRL_EX_CONFLICT;
    env = getenv("ZKR_AUTH");
    if (env && *env) {
        int rc = set_auth(o, env, "ZKR_AUTH");
        if (rc >= 0)
            return rc;
    }

    int c, kinds = 0;
    opterr = 0; /* our own one-line messages */
    while ((c = getopt_long(argc, argv, "+:H:rws:SLt:nE:g:k:pvqhV", longopts, NULL)) != -1) {
        if (c == '?') {
            if (optopt)
                return usage_error("unknown option -%c", optopt);
            return usage_error("unknown option %s", argv[optind - 1]);
        }
        if (c == ':')
            return usage_error("option %s needs a value", argv[optind - 1]);
        int rc = one_option(o, c, optarg, &kinds);
        if (rc >= 0)
            return rc;
    }
    if (kinds > 1)
        return usage_error("choose one lock kind: --read, --write, --semaphore, --semaphore-mutex or --leader");
    if (o->id && o->kind != ZKRL_LEADER)
        return usage_error("--id goes with --leader");
    if (o->id && (strlen(o->id) > ZKR_LEADER_ID_MAX || !zkr__utf8_valid(o->id, strlen(o->id))))
        return usage_error("--id: not valid UTF-8, or longer than %d bytes", ZKR_LEADER_ID_MAX);
    if (optind >= argc)
        return usage_error("no LOCKPATH given");
    o->path = argv[optind++];
    if (!zkrt_path_ok(o->path))
        return usage_error("LOCKPATH must be an absolute ZooKeeper path like /locks/name: '%s'", o->path);
    if (o->print) {
        if (optind < argc)
            return usage_error("--print takes LOCKPATH only, no command: '%s'", argv[optind]);
        return -1;
    }
    if (optind >= argc || strcmp(argv[optind], "--") != 0)
        return usage_error("expected -- COMMAND after LOCKPATH");
    optind++;
    if (optind >= argc || argv[optind][0] == '\0')
        return usage_error("no COMMAND given after --");
    o->argv = argv + optind;
    return -1;
}

void zkrl_opts_free(zkrl_opts_t *o)
{
    if (o->auth_data)
        memset(o->auth_data, 0, strlen(o->auth_data));
    free(o->auth_scheme);
    free(o->auth_data);
    o->auth_scheme = o->auth_data = NULL;
}
