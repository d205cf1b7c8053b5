/* Faults for the invariant checkers: the 3-node ensemble, the fault log
 * and its outside-closing excuse, the nodes left in a directory (see
 * zkfaults.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/harness/zkfaults.h"
#include "tests/harness/zkr_test.h"

/* ---- the ensemble ------------------------------------------------------------ */

/* One 3-node ensemble per program at most (started by a suite's init,
 * stopped by its cleanup and, on any exit, by with-zk.sh). */
static char ens_dir[512];
static char ens_hosts[512];

static int ensemble_cmd(const char *cmd, const char *sub, char *out, size_t outlen)
{
    const char *harness = getenv("ZKR_HARNESS");
    if (!harness)
        return -1;
    char line[2048];
    /* a failed start says why (which node, how, the end of its log) */
    snprintf(line, sizeof line, "'%s' %s '%s%s'%s", harness, cmd, ens_dir, sub ? sub : "",
             strcmp(cmd, "ensemble-start") == 0 ? "" : " 2>/dev/null");
    FILE *f = popen(line, "r");
    if (!f)
        return -1;
    size_t n = out ? fread(out, 1, outlen - 1, f) : 0;
    if (out) {
        out[n] = '\0';
        char *nl = strchr(out, '\n');
        if (nl)
            *nl = '\0';
    } else {
        char junk[256];
        while (fread(junk, 1, sizeof junk, f) > 0) {
        }
    }
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int zkt_ensemble_up(void)
{
    const char *base = getenv("ZKR_TEST_ZKDIR");
    if (!base)
        return 1;
    snprintf(ens_dir, sizeof ens_dir, "%s/ensemble", base);
    if (ensemble_cmd("ensemble-start", NULL, NULL, 0) != 0)
        return 1;
    return ensemble_cmd("ensemble-hosts", NULL, ens_hosts, sizeof ens_hosts) == 0 && ens_hosts[0] ? 0 : 1;
}

int zkt_ensemble_down(void)
{
    ensemble_cmd("ensemble-stop", NULL, NULL, 0);
    return 0;
}

const char *zkt_ensemble_hosts(void)
{
    return ens_hosts;
}

int zkt_ensemble_kill_leader(void)
{
    char leader[16] = "";
    int found = 0;
    for (int i = 0; i < 60 && !found; i++) { /* <= 30 s */
        found = ensemble_cmd("ensemble-leader", NULL, leader, sizeof leader) == 0 && atoi(leader) > 0;
        if (!found)
            zkt_sleep_ms(500);
    }
    if (!found)
        return -1;
    char sub[32];
    snprintf(sub, sizeof sub, "/s%d", atoi(leader));
    return ensemble_cmd("kill", sub, NULL, 0) == 0 ? atoi(leader) : -1;
}

int zkt_ensemble_restart(int k)
{
    char sub[32];
    snprintf(sub, sizeof sub, "/s%d", k);
    return ensemble_cmd("restart", sub, NULL, 0);
}

int zkt_ensemble_bounce_leader(int down_ms)
{
    int k = zkt_ensemble_kill_leader();
    zkt_sleep_ms(down_ms);
    return k > 0 && zkt_ensemble_restart(k) == 0 ? 0 : -1;
}

/* ---- the fault log ------------------------------------------------------------- */

#define MAX_FAULTS 16
static zkt_fault_t faults[MAX_FAULTS];
static int nfaults;

void zkt_faults_reset(void)
{
    nfaults = 0;
}

int zkt_fault_begin(const char *what, int worker)
{
    if (nfaults >= MAX_FAULTS)
        return MAX_FAULTS - 1;
    faults[nfaults] = (zkt_fault_t){what, worker, zkt_now_ms(), 0};
    return nfaults++;
}

void zkt_fault_end(int i)
{
    faults[i].end = zkt_now_ms();
}

int zkt_fault_count(void)
{
    return nfaults;
}

const zkt_fault_t *zkt_fault_get(int i)
{
    return i >= 0 && i < nfaults ? &faults[i] : NULL;
}

void zkt_faults_print(FILE *f, int64_t ref)
{
    for (int i = 0; i < nfaults; i++) {
        if (ref)
            fprintf(f, "  fault %s (worker %d): %+lld .. %+lld\n", faults[i].what, faults[i].worker,
                    (long long)(faults[i].begin - ref), (long long)(faults[i].end - ref));
        else
            fprintf(f, "  fault %s (worker %d): %lld .. %lld\n", faults[i].what, faults[i].worker,
                    (long long)faults[i].begin, (long long)faults[i].end);
    }
}

int zkt_fault_outside(int a, int b, int64_t at, int64_t bound, int from)
{
    for (int i = from < 0 ? 0 : from; i < nfaults; i++) {
        const zkt_fault_t *m = &faults[i];
        if (strcmp(m->what, "forced expiry") != 0 && strcmp(m->what, "outside deletion") != 0)
            continue;
        if (m->end == 0 || (m->worker != a && m->worker != b))
            continue;
        if (at >= m->begin && at <= m->end + bound)
            return i;
    }
    return -1;
}

/* ---- what is on the server ----------------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void zkt_print_nodes(FILE *f, zhandle_t *zh, const char *dir, const char *label, int64_t ref_ms)
{
    struct String_vector sv = {0, NULL};
    if (zoo_get_children(zh, dir, 0, &sv) != ZOK)
        return;
    fprintf(f, "%s: %s has %d nodes:\n", label, dir, sv.count);
    for (int i = 0; i < sv.count; i++) {
        char full[400];
        snprintf(full, sizeof full, "%s/%s", dir, sv.data[i]);
        struct Stat st;
        memset(&st, 0, sizeof st);
        zoo_exists(zh, full, 0, &st);
        fprintf(f, "  %s owner 0x%llx created %lld ms before the last fault\n", sv.data[i],
                (long long)st.ephemeralOwner, (long long)(wall_ms() - (zkt_now_ms() - ref_ms) - st.ctime));
    }
    deallocate_String_vector(&sv);
}
