#!/usr/bin/python3
"""Orchestrator of the benchmark suite; scripts/bench.sh starts the servers
and calls this.  For every round, every scenario runs once for zkrecipes
and once for each of its peers, in an order that rotates from round to
round; the table reports, per scenario and peer, the median over the rounds
of the per-round ratio zkrecipes / peer (throughput; > 1 means zkrecipes
did more cycles per second in that round), next to the medians of the raw
figures.  Benchmarks print figures; they never assert a speed.
"""
import argparse
import os
import re
import select
import socket
import statistics
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# scenario -> (what it is, peers in the order they are listed)
# "floor64" is the floor with one session per thread.
PLAN = [
    ("uncontended", "uncontended mutex cycle, 1 client",
     ["floor", "floor2", "curator", "kazoo", "redis"]),
    ("threads64", "64 threads sharing one client, each its own mutex",
     ["floor64", "floor", "curator", "kazoo", "redis"]),
    ("contended4", "contended mutex, 4 sessions", ["curator", "kazoo", "redis"]),
    ("contended16", "contended mutex, 16 sessions", ["curator", "kazoo"]),
    ("multilock5", "multi-lock of 5 mutexes, uncontended", ["floor", "curator"]),
    ("semaphore", "semaphore lease acquire+return (10 leases), 1 client", ["floor2", "curator", "kazoo"]),
    ("semaphore16", "semaphore of 10 leases, 16 sessions", ["curator", "kazoo"]),
    ("read4", "read lock, 4 sessions, no writer", ["floor2", "curator", "kazoo"]),
    ("rw90", "90/10 read/write mix on one rwlock, 4 sessions", ["curator"]),
    ("waiters", "N waiters on one mutex (10 sessions): drain", ["curator", "kazoo"]),
    ("async8", "hand-off on one mutex, 8 acquirers on ONE client: asynchronous, one poll loop, "
     "against blocking, a thread each", ["zkrblock"]),
    ("loop64", "64 acquirers on ONE client, each its own mutex: asynchronous, one poll loop "
     "(releases without waiting), against 64 blocking threads", ["zkrblock"]),
]
# counters under contention (tests/bench/bench_counter.c, CuratorBench.java):
# a rate like PLAN's, but NOT in "all": name them, or "counter" for both.
# An op is one increment that succeeded.
COUNTER_PLAN = [
    ("atomic4", "atomic long (DistributedAtomicLong), 4 sessions incrementing one node", ["curator"]),
    ("count4", "shared count (SharedCount), 4 sessions in get + try_set(v + 1) loops on one node", ["curator"]),
]
# leader election (tests/bench/bench_leader.c, CuratorBench.java): latency
# and join time, not a rate: their own table, ratio = Curator / zkrecipes
# (> 1: zkrecipes took less time)
LEADER_PLAN = [
    ("latch10", "hand-over, LeaderLatch, 10 participants (a session each): the leader closes until the "
     "next is told it leads", ["curator"]),
    ("selector10", "hand-over, LeaderSelector (auto-requeue), 10 participants: the term ends until the next "
     "one's takeLeadership starts", ["curator"]),
    ("latchjoin100", "100 LeaderLatch participants (10 sessions) join: until all are listed and the first "
     "is told it leads", ["curator"]),
    ("selectorjoin100", "100 LeaderSelector participants (10 sessions) join: until all are listed and the "
     "first leads", ["curator"]),
]
# caches (tests/bench/bench_cache.c, CuratorBench.java): times, requests and
# watches, not a rate: their own table, ratio = peer / zkrecipes (> 1:
# zkrecipes took less, sent fewer, set fewer).  The trees are made once
# before the rounds (not timed) and shared by every implementation.
CACHE_PLAN = [
    ("cacheload10k", "initial load of a 10,000-node tree (10,101 cached nodes): start until INITIALIZED, "
     "a session of its own per load", ["treecache", "curatorcache"]),
    ("cachelatency", "change to event: one writer (its own session) sets random leaves of a 1,000-node "
     "cached tree, one at a time", ["treecache", "curatorcache"]),
    ("cachewatches", "server watches per cached node, 10,000-node tree (before start, after INITIALIZED)",
     ["zkrnodata", "treecache", "curatorcache"]),
    ("cacheresync", "10,000-node tree: connection cut by a proxy (session kept), 10 leaves changed, "
     "then reconnected", ["treecache", "curatorcache"]),
]
# service discovery (tests/bench/bench_discovery.c, CuratorBench.java):
# latencies, not a rate: their own table, ratio = Curator / zkrecipes (> 1:
# zkrecipes took less).  query100's instances are made once before the
# rounds (not timed), shared by both.
DISC_PLAN = [
    ("register", "register one DYNAMIC instance (a fresh id, a Map payload) until the server confirmed it "
     "(unregistered after, not timed), one session", ["curator"]),
    ("query100", "query the 100 instances of one service: the children, then each one's data, parsed",
     ["curator"]),
]
# metrics of the cache table: (label, how to get it from a result)
def _f(key, scale=1.0):
    return lambda r: float(r[key]) * scale if r and key in r and float(r[key]) >= 0 else None


CACHE_METRICS = {
    "cacheload10k": [("ms until INITIALIZED (p50 of the run's loads)", _f("p50_ms"), 0),
                     ("requests per cached node", _f("req_per_node"), 3),
                     ("client CPU ms per load (whole process)", _f("cli_us_per_op", 1e-3), 0),
                     ("server CPU ms per load", _f("srv_us_per_op", 1e-3), 0)],
    "cachelatency": [("p50 ms", _f("p50_ms"), 3), ("p99 ms", _f("p99_ms"), 3),
                     ("requests per change (the set included)", _f("req_per_change"), 2)],
    "cachewatches": [("data watches per node (wchs)", _f("data_per_node"), 4),
                     ("all watches per node (mntr zk_watch_count)", _f("all_per_node"), 4),
                     ("data watches, all watches (totals)", lambda r: None, 0)],
    "register": [("p50 ms", _f("p50_ms"), 3), ("p99 ms", _f("p99_ms"), 3),
                 ("requests per registration (its unregister included)", _f("req_per_op"), 2)],
    "query100": [("p50 ms", _f("p50_ms"), 3), ("p99 ms", _f("p99_ms"), 3),
                 ("requests per query", _f("req_per_op"), 2)],
    "cacheresync": [("ms until the 10 changes are held", _f("p50_ms"), 0),
                    ("ms until reconnected", _f("reconnect_ms"), 0),
                    ("ms from reconnected until held",
                     lambda r: float(r["p50_ms"]) - float(r["reconnect_ms"])
                     if r and float(r.get("reconnect_ms", -1)) >= 0 and float(r["p50_ms"]) >= 0 else None, 0),
                    ("requests from reconnection until quiet", _f("req"), 0)],
}
PEER_NAMES = {
    "zkr": "zkrecipes", "floor": "C floor create+delete", "floor2": "C floor create+list+delete",
    "floor64": "C floor create+delete, 64 sessions", "curator": "Curator 5.4", "kazoo": "Kazoo 2.8",
    "redis": "Redis SET NX PX + Lua delete", "zkrblock": "zkrecipes blocking (a thread each)",
    "treecache": "Curator 5.4 TreeCache", "curatorcache": "Curator 5.4 CuratorCache",
    "zkrnodata": "zkrecipes without data (opt.data 0)",
}
PROXY, PROXY_WHY = None, "not started"  # cacheresync's proxy (main)
C_IMPLS = {"zkr", "floor", "floor2", "floor64", "redis", "zkrblock", "zkrbase", "zkrnodata"}
# peers served by another peer's process: impl -> (process, scenario suffix)
PEER_PROC = {"treecache": ("curator", "/treecache"), "curatorcache": ("curator", "/curatorcache")}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_result(line):
    if not line or not line.startswith("RESULT "):
        return None
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def mntr(hostport):
    """The server's mntr answer as a dict of numbers (empty on failure)."""
    host, port = hostport.split(",")[0].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"mntr")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return {}
    out = {}
    for ln in data.decode(errors="replace").splitlines():
        parts = ln.split("\t")
        if len(parts) == 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


def watch_fired(m):
    return sum(v for k, v in m.items() if re.match(r"zk_sum_node_\w+_watch_count$", k))


class LinePeer:
    """A long-lived peer process (Curator JVM, Kazoo) speaking the run protocol."""

    def __init__(self, name, argv, ready_timeout):
        self.name, self.proc, self.why = name, None, ""
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=open(os.path.join(ARGS.workdir, name + ".err"), "w"),
                                         text=True, bufsize=1)
        except OSError as e:
            self.why = str(e)
            return
        line = self.readline(ready_timeout)
        if line != "READY":
            self.why = "did not start (%s; see %s.err)" % (line or "no answer", name)
            self.close()

    def readline(self, timeout):
        end = time.monotonic() + timeout
        while self.proc and time.monotonic() < end:
            r, _, _ = select.select([self.proc.stdout], [], [], max(0.0, end - time.monotonic()))
            if r:
                line = self.proc.stdout.readline()
                if not line:
                    return None
                return line.strip()
        return None

    def ask(self, cmd, timeout):
        if not self.proc:
            return None, self.why
        try:
            self.proc.stdin.write(cmd + "\n")
            self.proc.stdin.flush()
        except OSError as e:
            self.why = "died (%s)" % e
            self.close()
            return None, self.why
        while True:
            line = self.readline(timeout)
            if line is None:
                self.why = "no answer within %d s" % timeout
                self.close()
                return None, self.why
            if line.startswith("QUEUED"):
                continue
            if line.startswith("RESULT"):
                return parse_result(line), ""
            return None, line

    def close(self):
        if self.proc:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except Exception:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def run_c(impl, scen, seconds, count=0, cycles=0, wrapper=None):
    # "zkrbase": zkrecipes as built in another tree (--base), run the same way
    driver = ARGS.base_driver if impl == "zkrbase" else ARGS.driver
    if impl == "zkrbase":
        impl = "zkr"
    argv = [driver, "-i", "floor" if impl == "floor64" else impl, "-c", scen, "-z", ARGS.hosts,
            "-t", str(seconds)]
    if scen.startswith("async") or scen.startswith("loop"):
        # the asynchronous API against the blocking one (tests/bench/bench_async.c)
        spread = scen.startswith("loop")
        argv = [os.path.join(os.path.dirname(driver), "bench_async"), ARGS.hosts, "--waiters",
                scen[len("loop" if spread else "async"):], "--seconds", str(seconds), "--path",
                "/zkr-bench/%s" % scen, "--mode", "async" if impl == "zkr" else "blocking"] + \
            (["--spread"] if spread else [])
    if impl == "floor64":
        argv += ["-S", "64"]
    if scen == "cacheresync":
        if not PROXY:
            return None, "no proxy (%s)" % PROXY_WHY
        argv += ["-P", PROXY]
    if impl == "redis":
        if not ARGS.redis:
            return None, "no Redis server (install redis-server)"
        argv += ["-r", ARGS.redis]
    if count:
        argv += ["-N", str(count)]
    if cycles:
        argv += ["-n", str(cycles)]
    if wrapper:
        argv = wrapper + argv
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=max(120, seconds * 20) + (600 if wrapper else 0))
    except subprocess.TimeoutExpired:
        return None, "timed out"
    for line in p.stdout.splitlines():
        if line.startswith("SKIP"):
            return None, line
        r = parse_result(line)
        if r:
            return r, ""
    return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]


def proc_cpu(pid):
    """CPU seconds (user + system) used so far by process pid, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def children_cpu():
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_one(impl, scen, seconds, count=0):
    """One run; adds the server's requests per operation, the watches fired,
    and the CPU per operation of the client process and of the server."""
    before = mntr(ARGS.hosts)
    srv0 = proc_cpu(ARGS.server_pid) if ARGS.server_pid else None
    if impl in C_IMPLS:
        cli0 = children_cpu()
        r, why = run_c(impl, scen, seconds, count)
        cli1 = children_cpu()
    else:
        proc, suffix = PEER_PROC.get(impl, (impl, ""))
        peer = PEERS.get(proc)
        if peer is None or not peer.proc:
            return None, peer.why if peer else "not started"
        if scen == "cacheresync" and not PROXY:
            return None, "no proxy (%s)" % PROXY_WHY
        pid = peer.proc.pid
        cli0 = proc_cpu(pid)
        r, why = peer.ask("run %s%s %s %d%s" % (scen, suffix, seconds, count,
                                                 " " + PROXY if scen == "cacheresync" else ""),
                          timeout=max(300, seconds * 30))
        cli1 = proc_cpu(pid)
    srv1 = proc_cpu(ARGS.server_pid) if ARGS.server_pid else None
    after = mntr(ARGS.hosts)
    if r is not None:
        ops = max(1.0, float(r["ops"]))
        if cli0 is not None and cli1 is not None:
            r["cli_us_per_op"] = (cli1 - cli0) * 1e6 / ops
        if srv0 is not None and srv1 is not None and impl != "redis":
            r["srv_us_per_op"] = (srv1 - srv0) * 1e6 / ops
        if before and after and impl != "redis":
            r["req_per_op"] = (after.get("zk_packets_received", 0) - before.get("zk_packets_received", 0)) / ops
            r["watches_fired"] = watch_fired(after) - watch_fired(before)
    return r, why


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, nd=0):
    if x is None:
        return "-"
    return ("%%.%df" % nd) % x


def callgrind_costs(path):
    """Self cost (Ir) per object file of a callgrind output file."""
    names, costs, ob, skip = {}, {}, "?", False
    with open(path) as f:
        for ln in f:
            if ln.startswith("ob=") or ln.startswith("cob="):
                # "(N) name" defines N's name, wherever it first appears
                m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", ln.strip())
                if m and m.group(2):
                    names[m.group(1)] = m.group(2)
                if ln.startswith("ob="):
                    ob = ("#" + m.group(1)) if m else ln[3:].strip()
            elif ln.startswith("calls="):
                skip = True
            elif ln[:1].isdigit() or ln[:1] in "+-*":
                if skip:
                    skip = False
                    continue
                parts = ln.split()
                if len(parts) >= 2:
                    costs[ob] = costs.get(ob, 0) + int(parts[1])
    groups = {}
    for ob, c in costs.items():
        b = os.path.basename(names.get(ob[1:], ob) if ob.startswith("#") else ob)
        key = ("libzkrecipes" if "libzkrecipes" in b else "libzookeeper" if "libzookeeper" in b
               else "libc" if b.startswith("libc.") or b.startswith("libc-") else
               "zkr_bench" if "zkr_bench" in b else "other")
        groups[key] = groups.get(key, 0) + c
    return groups


def cpu_section(cycles):
    libtool = os.path.join(ARGS.builddir, "libtool")
    if not os.path.exists("/usr/bin/valgrind"):
        return ["(valgrind not installed: the CPU section is skipped)"]
    out = ["| implementation | instructions per cycle: total | libzkrecipes | libzookeeper_mt | libc | other |",
           "|---|---|---|---|---|---|"]
    for impl in ("zkr", "floor"):
        res = []
        for n in (cycles, 3 * cycles):
            f = os.path.join(ARGS.workdir, "callgrind.%s.%d" % (impl, n))
            wrap = [libtool, "--mode=execute", "valgrind", "--tool=callgrind", "-q",
                    "--callgrind-out-file=" + f]
            r, why = run_c(impl, "uncontended", 1, cycles=n, wrapper=wrap)
            if r is None or not os.path.exists(f):
                return ["(callgrind run failed: %s)" % why]
            res.append(callgrind_costs(f))
        per = {k: (res[1].get(k, 0) - res[0].get(k, 0)) / (2.0 * cycles) for k in set(res[0]) | set(res[1])}
        other = per.get("other", 0) + per.get("zkr_bench", 0)
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            PEER_NAMES[impl], fmt(sum(per.values())), fmt(per.get("libzkrecipes", 0)),
            fmt(per.get("libzookeeper", 0)), fmt(per.get("libc", 0)), fmt(other)))
    out.append("")
    out.append("(valgrind --tool=callgrind, every thread; the difference between a run of %d and one of %d "
               "cycles, divided by %d, so start-up and connection are not counted.)" % (cycles, 3 * cycles,
                                                                                       2 * cycles))
    return out


def leader_table(lplan, results, whys):
    """Leader election: latencies and join times, medians over the rounds,
    and the median of the per-round ratios peer / zkrecipes."""
    out = ["", "Leader election (lower is better; ratio = peer / zkrecipes per round, median, the per-round "
           "ratios in brackets: > 1 means zkrecipes took less time):", "",
           "| scenario | peer | zkrecipes p50 / p99 ms | peer p50 / p99 ms | ratio p50 | ratio p99 | samples zkr / peer "
           "| req/op zkr / peer |",
           "|---|---|---|---|---|---|---|---|"]
    for scen, desc, peers in lplan:
        z = results.get((scen, "zkr"), [])
        for impl in peers:
            p = results.get((scen, impl), [])
            if not any(p) or not any(z):
                out.append("| %s | %s | %s | n/a: %s | - | - | - | - |" % (
                    desc, PEER_NAMES[impl], "n/a: " + whys.get((scen, "zkr"), "") if not any(z) else "-",
                    whys.get((scen, impl), "no result")[:80].replace("|", "/")))
                continue
            cols = []
            for key in ("p50_ms", "p99_ms"):
                rr = [float(b[key]) / float(a[key]) for a, b in zip(z, p)
                      if a and b and float(a[key]) > 0]
                cols.append("**%s** (%s)" % (fmt(med(rr), 2) + "x" if rr else "-", " ".join("%.2f" % x for x in rr)))
            out.append("| %s | %s | %s / %s | %s / %s | %s | %s | %s / %s | %s / %s |" % (
                desc, PEER_NAMES[impl],
                fmt(med([float(r["p50_ms"]) for r in z if r]), 2), fmt(med([float(r["p99_ms"]) for r in z if r]), 2),
                fmt(med([float(r["p50_ms"]) for r in p if r]), 2), fmt(med([float(r["p99_ms"]) for r in p if r]), 2),
                cols[0], cols[1] if "join" not in scen else "-",
                fmt(med([float(r["ops"]) for r in z if r])), fmt(med([float(r["ops"]) for r in p if r])),
                fmt(med([r.get("req_per_op") for r in z if r]), 2), fmt(med([r.get("req_per_op") for r in p if r]), 2)))
    out.append("")
    out.append("(join rows: p50 and p99 are the one join time of each run. req/op: requests the server received "
               "per hand-over, or per participant joined, set-up included.)")
    return out


CACHE_TITLE = ("Caches (lower is better; ratio = peer / zkrecipes per round, median, the per-round ratios in "
               "brackets: > 1 means zkrecipes took less time, sent fewer requests or set fewer watches):")
CACHE_NOTE = ("(cacheload10k: every run loads again for its seconds, each load on a new session; the figure of a "
              "run is the median of its loads; client CPU is the whole process's (session set-up included; the "
              "JVM's for Curator), per load. cachewatches: CuratorCache's one persistent recursive watch is counted "
              "by the server in its data and its child watch tables. cacheresync: the Java client waits 1 s before "
              "it connects again to a one-server ensemble, then 0-1 s at random; requests are counted from the "
              "proxy letting bytes through until the server is quiet, less the scenario's own mntr reads.)")
DISC_TITLE = ("Service discovery (lower is better; ratio = Curator / zkrecipes per round, median, the per-round "
              "ratios in brackets: > 1 means zkrecipes took less time):")
DISC_NOTE = ("(register: zkr_discovery_register, a zkr_pnode made and confirmed, against Curator's "
             "ServiceDiscovery.registerService; query100: zkr_discovery_instances against queryForInstances, "
             "after the listing zkrecipes sends the 100 reads at once, Curator one at a time; each run on a "
             "session of its own, for the run's seconds.)")


def cache_table(cplan, results, whys, title=CACHE_TITLE, note=CACHE_NOTE):
    """Caches (and discovery): per scenario, metric and peer, the medians over
    the rounds and the median of the per-round ratios peer / zkrecipes."""
    out = ["", title, "",
           "| scenario | metric | peer | zkrecipes | peer | ratio peer / zkr |",
           "|---|---|---|---|---|---|"]
    for scen, desc0, peers in cplan:
        z = results.get((scen, "zkr"), [])
        first = [True]
        for label, get, nd in CACHE_METRICS[scen]:
            for impl in peers:
                # the scenario on its first row only
                desc, first[0] = ("%s: %s" % (scen, desc0) if first[0] else ""), False
                p = results.get((scen, impl), [])
                if not any(p) or not any(z):
                    out.append("| %s | %s | %s | %s | n/a: %s | - |" % (
                        desc, label, PEER_NAMES[impl],
                        "n/a: " + whys.get((scen, "zkr"), "")[:60].replace("|", "/") if not any(z) else
                        fmt(med([get(r) for r in z]), nd),
                        whys.get((scen, impl), "no result")[:80].replace("|", "/")))
                    continue
                if label.endswith("(totals)"):  # raw counts, no ratio
                    tot = lambda rs: "%s, %s" % (fmt(med([float(r["data_watches"]) for r in rs if r])),
                                                 fmt(med([float(r["all_watches"]) for r in rs if r])))
                    out.append("| %s | %s | %s | %s | %s | - |" % (desc, label, PEER_NAMES[impl], tot(z), tot(p)))
                    continue
                rr = [get(b) / get(a) for a, b in zip(z, p)
                      if a and b and get(a) is not None and get(b) is not None and get(a) > 0]
                rf = lambda x: "%.2f" % x if x >= 0.1 else "%.2g" % x
                out.append("| %s | %s | %s | %s | %s | %s |" % (
                    desc, label, PEER_NAMES[impl], fmt(med([get(r) for r in z]), nd), fmt(med([get(r) for r in p]), nd),
                    "**%sx** (%s)" % (rf(med(rr)), " ".join(rf(x) for x in rr)) if rr else "-"))
    out.append("")
    out.append(note)
    return out


def start_proxy():
    """`zkr_bench -c proxy` in front of the server: (HOST:PORT/CONTROL_PORT, process) or (None, why)."""
    try:
        p = subprocess.Popen([ARGS.driver, "-i", "zkr", "-c", "proxy", "-z", ARGS.hosts], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=open(os.path.join(ARGS.workdir, "proxy.err"), "w"),
                             text=True)
    except OSError as e:
        return None, str(e)
    r, _, _ = select.select([p.stdout], [], [], 10)
    line = p.stdout.readline().split() if r else []
    if len(line) != 3 or line[0] != "PROXY":
        p.kill()
        p.wait()
        return None, "the proxy did not start (see proxy.err)"
    return "%s/%s" % (line[1], line[2]), p


def main():
    global ARGS, PEERS, PROXY, PROXY_WHY
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", required=True)
    ap.add_argument("--redis", default="")
    ap.add_argument("--driver", required=True)
    ap.add_argument("--builddir", default=TOP)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--scenarios", default="all")
    ap.add_argument("--waiters", type=int, default=1000)
    ap.add_argument("--heap", type=int, default=10000)
    ap.add_argument("--cpu-cycles", type=int, default=200)
    ap.add_argument("--server-label", default="")
    ap.add_argument("--server-pid", type=int, default=0)
    ap.add_argument("--out", default="bench-results.md")
    ap.add_argument("--no-curator", action="store_true")
    ap.add_argument("--no-kazoo", action="store_true")
    ap.add_argument("--base-driver", default="",
                    help="zkr_bench of another build (bench.sh --base DIR): a peer in every scenario")
    ap.add_argument("--base-label", default="base")
    ARGS = ap.parse_args()
    if not (1 <= ARGS.rounds <= 20 and 0 < ARGS.seconds <= 60):
        ap.error("rounds 1..20, seconds 0..60")
    wanted = None if ARGS.scenarios == "all" else set(ARGS.scenarios.split(","))
    plan = [p for p in PLAN if wanted is None or p[0] in wanted]
    if wanted is not None and "leader" in wanted:
        wanted |= {p[0] for p in LEADER_PLAN}
    if wanted is not None and "cache" in wanted:
        wanted |= {p[0] for p in CACHE_PLAN}
    if wanted is not None and "counter" in wanted:
        wanted |= {p[0] for p in COUNTER_PLAN}
    # the counters are not part of "all" (bench.sh --scenarios counter)
    plan += [p for p in COUNTER_PLAN if wanted is not None and p[0] in wanted]
    lplan = [p for p in LEADER_PLAN if wanted is None or p[0] in wanted]
    # the caches are not part of "all" (bench.sh --scenarios cache)
    cplan = [p for p in CACHE_PLAN if wanted is not None and p[0] in wanted]
    # nor is service discovery (bench.sh --scenarios register,query100, or discovery)
    if wanted is not None and "discovery" in wanted:
        wanted |= {p[0] for p in DISC_PLAN}
    dplan = [p for p in DISC_PLAN if wanted is not None and p[0] in wanted]
    if ARGS.base_driver:
        PEER_NAMES["zkrbase"] = "zkrecipes %s" % ARGS.base_label
        plan = [(scen, desc, ["zkrbase"] + peers) for scen, desc, peers in plan]
        lplan = [(scen, desc, ["zkrbase"] + peers) for scen, desc, peers in lplan]
        cplan = [(scen, desc, ["zkrbase"] + peers) for scen, desc, peers in cplan]
        dplan = [(scen, desc, ["zkrbase"] + peers) for scen, desc, peers in dplan]
    extra = [s for s in ("heap", "cpu") if wanted is None or s in wanted]
    t_start = time.time()

    PEERS = {}
    if not ARGS.no_curator:
        log("bench: starting the Curator peer (javac + JVM)")
        # Debian's jars through the interop peer's launcher; default JVM flags
        # (tiered JIT), a bounded heap
        os.environ.update(ZKR_PEER_MAIN="CuratorBench", ZKR_PEER_SRC=os.path.join(TOP, "tests/bench/CuratorBench.java"),
                          ZKR_PEER_JVM="-Xmx512m", ZKR_INTEROP_CLASSES=os.path.join(ARGS.workdir, "classes"))
        PEERS["curator"] = LinePeer("curator", ["bash", os.path.join(TOP, "tests/interop/peer.sh"), ARGS.hosts], 180)
    if not ARGS.no_kazoo and any("kazoo" in peers for _, _, peers in plan):
        PEERS["kazoo"] = LinePeer("kazoo", ["/usr/bin/python3", os.path.join(TOP, "tests/bench/kazoo_bench.py"),
                                            ARGS.hosts], 60)
    for name, p in PEERS.items():
        if p.why:
            log("bench: %s peer unavailable: %s" % (name, p.why))

    # the caches' trees (not timed) and the proxy of cacheresync
    PROXY, PROXY_WHY, proxy_proc = None, "", None
    if cplan:
        for n, base in ((10000, "/zkr-bench/cache10k"), (1000, "/zkr-bench/cache1k")):
            p = subprocess.run([ARGS.driver, "-i", "zkr", "-c", "cachetree", "-z", ARGS.hosts, "-N", str(n), "-b", base],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
            log("bench: cache tree %s: %s" % (base, (p.stderr.strip() or "there").splitlines()[-1]))
        if any(scen == "cacheresync" for scen, _, _ in cplan):
            PROXY, proxy_proc = start_proxy()
            if PROXY is None:
                PROXY_WHY = proxy_proc
                proxy_proc = None
                log("bench: no proxy: %s" % PROXY_WHY)

    # query100's instances (not timed)
    if any(scen == "query100" for scen, _, _ in dplan):
        p = subprocess.run([ARGS.driver, "-i", "zkr", "-c", "disctree", "-z", ARGS.hosts, "-N", "100"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        log("bench: %s" % ((p.stderr.strip() or "disctree: done").splitlines()[-1]))

    # JIT warm-up: every scenario once on the JVM, not counted
    cur = PEERS.get("curator")
    if cur and cur.proc:
        for scen, _, peers in plan + lplan + dplan:
            if "curator" in peers:
                log("bench: warming the JVM up: %s" % scen)
                cur.ask("run %s %s %d" % (scen, ARGS.seconds, 0 if (scen, _, peers) in dplan else
                                          min(ARGS.waiters, 200)), timeout=300)
        for scen, _, peers in cplan:
            for impl in peers:
                if PEER_PROC.get(impl, ("",))[0] == "curator" and (scen != "cacheresync" or PROXY):
                    log("bench: warming the JVM up: %s %s" % (scen, impl))
                    cur.ask("run %s%s %s %d%s" % (scen, PEER_PROC[impl][1], min(ARGS.seconds, 2), 200,
                                                  " " + PROXY if scen == "cacheresync" else ""), timeout=300)

    results = {}  # (scen, impl) -> [result or None per round]
    whys = {}
    for rnd in range(ARGS.rounds):
        for scen, _, peers in plan + lplan + cplan + dplan:
            impls = ["zkr"] + peers
            k = rnd % len(impls)
            order = impls[k:] + impls[:k]
            for impl in order:
                count = ARGS.waiters if scen == "waiters" else 0
                r, why = run_one(impl, scen, ARGS.seconds, count)
                results.setdefault((scen, impl), []).append(r)
                if r is None:
                    whys[(scen, impl)] = why
                log("bench: round %d %-12s %-8s %s" % (rnd + 1, scen, impl,
                                                       "rate=%s p50=%s p99=%s req/op=%.2f" % (
                                                           r["rate"], r["p50_ms"], r["p99_ms"],
                                                           r.get("req_per_op", 0)) if r else "n/a: " + why))

    lines = []
    lines.append("## zkrecipes benchmark results")
    lines.append("")
    lines.append("- server: %s" % (ARGS.server_label or ARGS.hosts))
    lines.append("- machine: %s, %d cores (shared: other work may run; figures are noisy)" % (
        os.uname().machine, os.cpu_count() or 0))
    lines.append("- date: %s UTC; %d rounds x %g s per run; in each round every implementation runs each "
                 "scenario once, in an order rotated per round" % (
                     time.strftime("%Y-%m-%d %H:%M", time.gmtime(t_start)), ARGS.rounds, ARGS.seconds))
    lines.append("- ratio = zkrecipes / peer in cycles per second, per round; shown: the median of the "
                 "per-round ratios (the per-round ratios in brackets). > 1: zkrecipes did more.")
    lines.append("- req/op: requests the server received per cycle (mntr packets_received delta / cycles); "
                 "CPU us/op: CPU time (user + system) of the client process, and of the ZooKeeper server, "
                 "per cycle (whole process, set-up included: an upper bound)")
    lines.append("")
    if plan:
        lines.append("| scenario | peer | zkrecipes cycles/s | peer cycles/s | ratio zkr/peer | "
                     "zkr p50 / p99 ms | peer p50 / p99 ms | req/op zkr / peer | client CPU us/op zkr / peer | "
                     "server CPU us/op zkr / peer |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for scen, desc, peers in plan:
        z = results.get((scen, "zkr"), [])
        label = desc.replace("N waiters", "%d waiters" % ARGS.waiters)
        lat_kind = "hand-off" if any(r and r.get("lat") == "handoff" for r in z) else "cycle"
        for impl in peers:
            p = results.get((scen, impl), [])
            if not any(p):
                lines.append("| %s | %s | %s | n/a: %s | - | - | - | - | - | - |" % (
                    label, PEER_NAMES[impl], fmt(med([float(r["rate"]) for r in z if r])),
                    whys.get((scen, impl), "no result")[:80].replace("|", "/")))
                continue
            ratios = [float(a["rate"]) / float(b["rate"]) if a and b and float(b["rate"]) > 0 else None
                      for a, b in zip(z, p)]
            rr = [x for x in ratios if x is not None]
            lines.append("| %s | %s | %s | %s | **%s** (%s) | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s |" % (
                label + (" [%s]" % lat_kind), PEER_NAMES[impl],
                fmt(med([float(r["rate"]) for r in z if r])), fmt(med([float(r["rate"]) for r in p if r])),
                fmt(med(rr), 2) + "x" if rr else "-", " ".join("%.2f" % x for x in rr),
                fmt(med([float(r["p50_ms"]) for r in z if r]), 2), fmt(med([float(r["p99_ms"]) for r in z if r]), 2),
                fmt(med([float(r["p50_ms"]) for r in p if r]), 2), fmt(med([float(r["p99_ms"]) for r in p if r]), 2),
                fmt(med([r.get("req_per_op") for r in z if r]), 2),
                fmt(med([r.get("req_per_op") for r in p if r]), 2) if impl != "redis" else "-",
                fmt(med([r.get("cli_us_per_op") for r in z if r])), fmt(med([r.get("cli_us_per_op") for r in p if r])),
                fmt(med([r.get("srv_us_per_op") for r in z if r])),
                fmt(med([r.get("srv_us_per_op") for r in p if r])) if impl != "redis" else "-"))
        if scen == "waiters":
            lines.append("")
            for impl in ["zkr"] + peers:
                rs = [r for r in results.get((scen, impl), []) if r]
                if rs:
                    lines.append("- %d waiters, %s: drain %s ms (median), wake-ups per hand-off %s "
                                 "(server watch notifications / %d hand-offs)" % (
                                     ARGS.waiters, PEER_NAMES[impl], fmt(med([float(r["secs"]) * 1e3 for r in rs])),
                                     fmt(med([r.get("watches_fired", 0) / ARGS.waiters for r in rs]), 2),
                                     ARGS.waiters))
            lines.append("")

    for scen, desc, peers in plan:
        if scen not in {p[0] for p in COUNTER_PLAN}:
            continue
        for impl in ["zkr"] + peers:
            rs = [r for r in results.get((scen, impl), []) if r]
            if rs:
                lines.append("- %s, %s: %s tries per success (median; atomic: optimistic tries, count: trySetCount "
                             "calls), final value equal to the successes in %d of %d runs" % (
                                 scen, PEER_NAMES[impl], fmt(med([float(r.get("tries_per_op", 0)) for r in rs]), 2),
                                 sum(1 for r in rs if r.get("checked") == "1"), len(rs)))
    if lplan:
        lines.extend(leader_table(lplan, results, whys))
    if cplan:
        lines.extend(cache_table(cplan, results, whys))
    if dplan:
        lines.extend(cache_table(dplan, results, whys, DISC_TITLE, DISC_NOTE))
    if "heap" in extra:
        lines.append("")
        lines.append("Heap per held lock, %d mutexes held at once by one thread, one client:" % ARGS.heap)
        lines.append("")
        r, why = run_c("zkr", "heap", 1, count=ARGS.heap)
        lines.append("- zkrecipes: %s bytes of malloc heap per held lock (mallinfo2, every arena; the mutex "
                     "object included)%s" % (r["bytes_per_lock"] if r else "n/a", "" if r else ": " + why))
        if cur and cur.proc:
            r2, why2 = cur.ask("run heap 1 %d" % ARGS.heap, timeout=600)
            lines.append("- Curator: %s bytes of Java heap per held lock (used heap after System.gc(), "
                         "before and after)%s" % (r2["bytes_per_lock"] if r2 else "n/a", "" if r2 else ": " + why2))
    if "cpu" in extra:
        lines.append("")
        lines.append("CPU per uncontended cycle, zkrecipes against the C floor (create + delete):")
        lines.append("")
        lines.extend(cpu_section(ARGS.cpu_cycles))
    lines.append("")
    lines.append("Wall time of the whole run: %.0f s." % (time.time() - t_start))

    for p in PEERS.values():
        p.close()
    if proxy_proc:
        proxy_proc.stdin.close()
        try:
            proxy_proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proxy_proc.kill()
            proxy_proc.wait()
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(ARGS.out, "w") as f:
        f.write(text)
    log("bench: written to %s" % ARGS.out)


if __name__ == "__main__":
    main()
