#!/usr/bin/python3
"""The Kazoo 2.8 peer of the benchmark suite (scripts/bench.sh).

Runs with Debian's /usr/bin/python3 and python3-kazoo.  One process for the
whole run; line protocol on stdin, one answer line each:
    run SCENARIO SECONDS [COUNT]  ->  RESULT impl=kazoo scenario=... (as zkr_bench)
    quit
Scenarios are those of tests/bench/zkr_bench.c where Kazoo has the recipe
(no multi-lock).  Benchmarks print figures; they never assert a speed.
"""
import os
import random
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock, ReadLock, Semaphore, WriteLock

HOSTS = sys.argv[1]
POOL = []
RUN_NO = [0]

SCENARIOS = {
    # name: (kind, threads, sessions, shared, leases, handoff)
    "uncontended": ("mutex", 1, 1, False, 0, False),
    "threads64": ("mutex", 64, 1, False, 0, False),
    "contended4": ("mutex", 4, 4, True, 0, True),
    "contended16": ("mutex", 16, 16, True, 0, True),
    "semaphore": ("sem", 1, 1, True, 10, False),
    "semaphore16": ("sem", 16, 16, True, 10, False),
    "read4": ("read", 4, 4, True, 0, False),
    "rw90": ("rwmix", 4, 4, True, 0, False),
}


def client(i):
    while len(POOL) <= i:
        c = KazooClient(hosts=HOSTS, timeout=20.0)
        c.start(timeout=20)
        POOL.append(c)
    return POOL[i]


def now_ms():
    return time.monotonic() * 1e3


class Worker:
    def __init__(self, kind, c, path, leases):
        self.kind = kind
        self.wrote = False
        if kind == "mutex":
            self.lock = Lock(c, path)
        elif kind == "sem":
            self.lock = Semaphore(c, path, max_leases=leases)
        elif kind == "read":
            self.lock = ReadLock(c, path)
        else:
            self.read = ReadLock(c, path)
            self.write = WriteLock(c, path)

    def acquire(self, w):
        if self.kind == "rwmix":
            self.wrote = w
            return (self.write if w else self.read).acquire(timeout=60)
        return self.lock.acquire(timeout=60)

    def release(self):
        if self.kind == "rwmix":
            (self.write if self.wrote else self.read).release()
        else:
            self.lock.release()


def pct(v, q):
    if not v:
        return 0.0
    v.sort()
    return v[int((len(v) - 1) * q)]


def run_timed(name, seconds):
    kind, threads, sessions, shared, leases, handoff = SCENARIOS[name]
    RUN_NO[0] += 1
    base = "/zkr-bench/kazoo-%s-%d-%d" % (name, RUN_NO[0], os.getpid())
    barrier = threading.Barrier(threads + 1, timeout=120)
    state = {"last": -1, "rel": 0.0, "deadline": 0.0}
    ops = [0] * threads
    errs = [0] * threads
    lat = [[] for _ in range(threads)]
    fail = []

    def body(me):
        try:
            path = base + "/lock" if shared else "%s/t%d" % (base, me)
            w = Worker(kind, client(me % sessions), path, leases)
            if kind != "rwmix" and not shared and w.acquire(False):
                w.release()
            barrier.wait()
            dl = state["deadline"]
            rnd = random.Random(me + 1)
            while True:
                a0 = now_ms()
                if a0 >= dl:
                    break
                wr = kind == "rwmix" and rnd.random() < 0.1
                if not w.acquire(wr):
                    errs[me] += 1
                    if errs[me] > 100:
                        raise RuntimeError("acquires fail")
                    continue
                got = now_ms()
                if handoff:
                    prev, rel = state["last"], state["rel"]
                    if prev >= 0 and prev != me and rel > 0 and got <= dl:
                        lat[me].append(got - rel)
                    state["last"] = me
                    state["rel"] = now_ms()
                w.release()
                end = now_ms()
                if end <= dl:
                    ops[me] += 1
                    if not handoff:
                        lat[me].append(end - a0)
        except Exception as e:  # reported on the answer line
            fail.append(e)
            barrier.abort()

    th = [threading.Thread(target=body, args=(t,), daemon=True) for t in range(threads)]
    for x in th:
        x.start()
    state["deadline"] = now_ms() + seconds * 1e3  # before the barrier releases anyone
    barrier.wait()
    for x in th:
        x.join(180)
    if fail:
        raise fail[0]
    total = sum(ops)
    allv = [x for l in lat for x in l]
    return ("RESULT impl=kazoo scenario=%s threads=%d sessions=%d ops=%d secs=%.3f rate=%.1f "
            "p50_ms=%.3f p99_ms=%.3f lat=%s errors=%d" %
            (name, threads, sessions, total, seconds, total / seconds, pct(allv, 0.5), pct(allv, 0.99),
             "handoff" if handoff else "cycle", sum(errs)))


def run_waiters(n):
    ns = 10
    RUN_NO[0] += 1
    path = "/zkr-bench/kazoo-waiters-%d-%d/lock" % (RUN_NO[0], os.getpid())
    holder = Lock(client(0), path)
    holder.acquire()
    got = [0.0] * (n + 1)
    errors = [0]

    def body(i):
        m = Lock(client(i % ns), path)
        try:
            if m.acquire(timeout=300):
                got[i + 1] = now_ms()
                m.release()
            else:
                errors[0] += 1
        except Exception:
            errors[0] += 1

    threading.stack_size(256 * 1024)
    th = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    q0 = now_ms()
    for x in th:
        x.start()
    while now_ms() - q0 < 300000 and len(client(0).get_children(path)) < n + 1:
        time.sleep(0.05)
    if len(client(0).get_children(path)) < n + 1:
        raise RuntimeError("not all queued")
    queued = now_ms() - q0
    print("QUEUED %d" % n, flush=True)
    t0 = now_ms()
    got[0] = t0
    holder.release()
    for x in th:
        x.join(300)
    drain = now_ms() - t0
    got.sort()
    gaps = sorted(got[i + 1] - got[i] for i in range(n))
    return ("RESULT impl=kazoo scenario=waiters threads=%d sessions=%d ops=%d secs=%.3f rate=%.1f "
            "p50_ms=%.3f p99_ms=%.3f lat=handoff errors=%d queue_ms=%.0f" %
            (n, ns, n, drain / 1e3, n / (drain / 1e3), gaps[(n - 1) // 2], gaps[int((n - 1) * 0.99)],
             errors[0], queued))


def main():
    print("READY", flush=True)
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        if w[0] == "quit":
            break
        try:
            if w[0] != "run" or len(w) < 3:
                raise ValueError("usage: run SCENARIO SECONDS [N]")
            count = int(w[3]) if len(w) > 3 else 0
            if w[1] == "waiters":
                out = run_waiters(count or 1000)
            elif w[1] in SCENARIOS:
                out = run_timed(w[1], float(w[2]))
            else:
                out = "SKIP impl=kazoo scenario=%s reason=no-such-recipe-in-kazoo" % w[1]
        except Exception as e:  # one answer line per command, always
            out = "ERROR %r" % (e,)
        print(out, flush=True)
    for c in POOL:
        try:
            c.stop()
            c.close()
        except Exception:
            pass


if __name__ == "__main__":
    main()
