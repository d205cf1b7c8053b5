// The Curator 5.4 peer of the benchmark suite (scripts/bench.sh).  One JVM
// stays up for the whole run, so the JIT is warm after the first (discarded)
// run of each scenario.  Line protocol on stdin, one answer line each:
//   run SCENARIO SECONDS [COUNT [PROXY]]  ->  RESULT impl=curator scenario=... (as zkr_bench)
//   quit
// Scenarios and their shape are those of tests/bench/zkr_bench.c.  The cache
// scenarios (tests/bench/bench_cache.c) are named SCENARIO/treecache or
// SCENARIO/curatorcache; cacheresync needs PROXY, HOST:PORT/CONTROL_PORT of
// `zkr_bench -c proxy`.
// Benchmarks print figures; they never assert a speed.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.cache.TreeCacheEvent;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;

public class CuratorBench {
    static String hosts;
    static final List<CuratorFramework> pool = new ArrayList<>();
    static int runNo = 0;

    static CuratorFramework client(int i) throws Exception {
        while (pool.size() <= i) {
            CuratorFramework c = CuratorFrameworkFactory.newClient(hosts, 20000, 15000, new RetryNTimes(3, 100));
            c.start();
            if (!c.blockUntilConnected(20, TimeUnit.SECONDS))
                throw new IllegalStateException("no connection");
            pool.add(c);
        }
        return pool.get(i);
    }

    enum Kind { MUTEX, MULTI, SEM, READ, RWMIX }

    static final class Scen {
        final Kind kind;
        final int threads, sessions, multi, leases;
        final boolean shared, handoff;
        Scen(Kind k, int t, int s, boolean sh, int m, int l, boolean h) {
            kind = k; threads = t; sessions = s; shared = sh; multi = m; leases = l; handoff = h;
        }
    }

    static Scen scen(String name) {
        switch (name) {
        case "uncontended": return new Scen(Kind.MUTEX, 1, 1, false, 0, 0, false);
        case "threads64": return new Scen(Kind.MUTEX, 64, 1, false, 0, 0, false);
        case "contended4": return new Scen(Kind.MUTEX, 4, 4, true, 0, 0, true);
        case "contended16": return new Scen(Kind.MUTEX, 16, 16, true, 0, 0, true);
        case "multilock5": return new Scen(Kind.MULTI, 1, 1, false, 5, 0, false);
        case "semaphore": return new Scen(Kind.SEM, 1, 1, true, 0, 10, false);
        case "semaphore16": return new Scen(Kind.SEM, 16, 16, true, 0, 10, false);
        case "read4": return new Scen(Kind.READ, 4, 4, true, 0, 0, false);
        case "rw90": return new Scen(Kind.RWMIX, 4, 4, true, 0, 0, false);
        default: throw new IllegalArgumentException("scenario " + name);
        }
    }

    /** One worker's lock, whatever the kind. */
    static final class Worker {
        final Kind kind;
        InterProcessLock lock, read, write;
        InterProcessSemaphoreV2 sem;
        Lease lease;
        boolean wrote;

        Worker(Scen s, CuratorFramework c, String base, int t) {
            kind = s.kind;
            String path = s.shared ? base + "/lock" : base + "/t" + t;
            switch (s.kind) {
            case MUTEX: lock = new InterProcessMutex(c, path); break;
            case MULTI: {
                List<String> ps = new ArrayList<>();
                for (int i = 0; i < s.multi; i++)
                    ps.add(base + "/t" + t + "-" + i);
                lock = new InterProcessMultiLock(c, ps);
                break;
            }
            case SEM: sem = new InterProcessSemaphoreV2(c, path, s.leases); break;
            case READ: lock = new InterProcessReadWriteLock(c, path).readLock(); break;
            case RWMIX: {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
                read = rw.readLock();
                write = rw.writeLock();
                break;
            }
            }
        }

        boolean acquire(boolean w) throws Exception {
            switch (kind) {
            case SEM:
                lease = sem.acquire(60, TimeUnit.SECONDS);
                return lease != null;
            case RWMIX:
                wrote = w;
                return (w ? write : read).acquire(60, TimeUnit.SECONDS);
            default:
                return lock.acquire(60, TimeUnit.SECONDS);
            }
        }

        void release() throws Exception {
            switch (kind) {
            case SEM: lease.close(); lease = null; break;
            case RWMIX: (wrote ? write : read).release(); break;
            default: lock.release();
            }
        }
    }

    static double nowMs() { return System.nanoTime() / 1e6; }

    static final class Lat {
        double[] v = new double[1024];
        int n;
        void add(double x) {
            if (n == v.length) {
                if (n >= (1 << 22)) return;
                v = Arrays.copyOf(v, n * 2);
            }
            v[n++] = x;
        }
    }

    static String runTimed(String name, double seconds) throws Exception {
        Scen s = scen(name);
        String base = "/zkr-bench/curator-" + name + "-" + (++runNo) + "-" + ProcessHandle.current().pid();
        CyclicBarrier barrier = new CyclicBarrier(s.threads + 1);
        AtomicInteger lastHolder = new AtomicInteger(-1);
        AtomicLong releaseBits = new AtomicLong(Double.doubleToLongBits(0));
        long[] ops = new long[s.threads], errs = new long[s.threads];
        Lat[] lat = new Lat[s.threads];
        double[] deadline = new double[1];
        Thread[] th = new Thread[s.threads];
        Throwable[] fail = new Throwable[1];
        for (int t = 0; t < s.threads; t++) {
            final int me = t;
            lat[t] = new Lat();
            final CuratorFramework c = client(t % s.sessions);
            th[t] = new Thread(() -> {
                try {
                    Worker w = new Worker(s, c, base, me);
                    if (s.kind != Kind.RWMIX && !s.shared && w.acquire(false))
                        w.release(); // parents exist from here on
                    barrier.await();
                    long seed = me * 2654435761L + 1;
                    final double dl = deadline[0];
                    for (;;) {
                        double a0 = nowMs();
                        if (a0 >= dl) break;
                        seed = (seed * 1103515245L + 12345L) & 0xffffffffL;
                        boolean wr = s.kind == Kind.RWMIX && ((seed >>> 16) % 10) == 0;
                        if (!w.acquire(wr)) {
                            if (++errs[me] > 100) throw new IllegalStateException("acquires fail");
                            continue;
                        }
                        double got = nowMs();
                        if (s.handoff) {
                            int prev = lastHolder.get();
                            double rel = Double.longBitsToDouble(releaseBits.get());
                            if (prev >= 0 && prev != me && rel > 0 && got <= dl)
                                lat[me].add(got - rel);
                            lastHolder.set(me);
                            releaseBits.set(Double.doubleToLongBits(nowMs()));
                        }
                        w.release();
                        double end = nowMs();
                        if (end <= dl) {
                            ops[me]++;
                            if (!s.handoff) lat[me].add(end - a0);
                        }
                    }
                } catch (Throwable e) {
                    synchronized (fail) { if (fail[0] == null) fail[0] = e; }
                    barrier.reset();
                }
            });
            th[t].setDaemon(true);
        }
        for (Thread x : th) x.start();
        double t0 = nowMs(); // set before the barrier releases the workers
        deadline[0] = t0 + seconds * 1e3;
        barrier.await(120, TimeUnit.SECONDS);
        for (Thread x : th) x.join(180000);
        if (fail[0] != null) throw new RuntimeException(fail[0]);
        long total = 0, errors = 0;
        int n = 0;
        for (int t = 0; t < s.threads; t++) { total += ops[t]; errors += errs[t]; n += lat[t].n; }
        double[] all = new double[n];
        int k = 0;
        for (Lat l : lat) { System.arraycopy(l.v, 0, all, k, l.n); k += l.n; }
        Arrays.sort(all);
        double p50 = n > 0 ? all[(n - 1) / 2] : 0, p99 = n > 0 ? all[(int) ((n - 1) * 0.99)] : 0;
        return String.format("RESULT impl=curator scenario=%s threads=%d sessions=%d ops=%d secs=%.3f rate=%.1f "
                + "p50_ms=%.3f p99_ms=%.3f lat=%s errors=%d", name, s.threads, s.sessions, total, seconds,
                total / seconds, p50, p99, s.handoff ? "handoff" : "cycle", errors);
    }

    /** atomic4 / count4 (tests/bench/bench_counter.c): 4 sessions incrementing one
     * DistributedAtomicLong (ExponentialBackoffRetry(1, 29, 50)) or one SharedCount
     * by getVersionedValue + trySetCount(v + 1) until set.  An op is one success. */
    static String runCounter(String name, double seconds) throws Exception {
        final boolean atomic = name.startsWith("atomic");
        final int n = 4;
        final String path = "/zkr-bench/curator-" + name + "-" + (++runNo) + "-" + ProcessHandle.current().pid()
                + "/counter";
        CyclicBarrier barrier = new CyclicBarrier(n + 1);
        long[] ops = new long[n], timed = new long[n], tries = new long[n], errs = new long[n];
        Lat[] lat = new Lat[n];
        double[] deadline = new double[1];
        Thread[] th = new Thread[n];
        Throwable[] fail = new Throwable[1];
        for (int t = 0; t < n; t++) {
            final int me = t;
            lat[t] = new Lat();
            final CuratorFramework c = client(t);
            th[t] = new Thread(() -> {
                SharedCount sc = null;
                try {
                    DistributedAtomicLong a = atomic ? new DistributedAtomicLong(c, path,
                            new ExponentialBackoffRetry(1, 29, 50)) : null;
                    if (atomic)
                        a.get();
                    else {
                        sc = new SharedCount(c, path, 0);
                        sc.start();
                    }
                    barrier.await();
                    final double dl = deadline[0];
                    for (;;) {
                        double a0 = nowMs();
                        if (a0 >= dl) break;
                        boolean ok;
                        if (atomic) {
                            AtomicValue<Long> v = a.increment();
                            ok = v.succeeded();
                            tries[me] += v.getStats().getOptimisticTries() + v.getStats().getPromotedLockTries();
                        } else {
                            ok = false;
                            while (!ok) {
                                VersionedValue<Integer> v = sc.getVersionedValue();
                                ok = sc.trySetCount(v, v.getValue() + 1);
                                tries[me]++;
                            }
                        }
                        double end = nowMs();
                        if (!ok) {
                            errs[me]++;
                            continue;
                        }
                        ops[me]++;
                        if (end <= dl) {
                            timed[me]++;
                            lat[me].add(end - a0);
                        }
                    }
                } catch (Throwable e) {
                    synchronized (fail) { if (fail[0] == null) fail[0] = e; }
                    barrier.reset();
                } finally {
                    if (sc != null) try { sc.close(); } catch (Exception ignore) { }
                }
            });
            th[t].setDaemon(true);
        }
        for (Thread x : th) x.start();
        deadline[0] = nowMs() + seconds * 1e3;
        barrier.await(120, TimeUnit.SECONDS);
        for (Thread x : th) x.join(180000);
        if (fail[0] != null) throw new RuntimeException(fail[0]);
        long total = 0, all = 0, errors = 0, tr = 0;
        int m = 0;
        for (int t = 0; t < n; t++) { total += timed[t]; all += ops[t]; errors += errs[t]; tr += tries[t]; m += lat[t].n; }
        double[] v = new double[m];
        int k = 0;
        for (Lat l : lat) { System.arraycopy(l.v, 0, v, k, l.n); k += l.n; }
        Arrays.sort(v);
        double p50 = m > 0 ? v[(m - 1) / 2] : 0, p99 = m > 0 ? v[(int) ((m - 1) * 0.99)] : 0;
        long fin;
        if (atomic) {
            fin = new DistributedAtomicLong(client(0), path, new RetryNTimes(3, 10)).get().postValue();
        } else {
            try (SharedCount sc = new SharedCount(client(0), path, 0)) {
                sc.start();
                fin = sc.getCount();
            }
        }
        return String.format("RESULT impl=curator scenario=%s threads=%d sessions=%d ops=%d secs=%.3f rate=%.1f "
                + "p50_ms=%.3f p99_ms=%.3f lat=cycle errors=%d tries_per_op=%.2f checked=%d", name, n, n, total,
                seconds, total / seconds, p50, p99, errors, all > 0 ? (double) tr / all : 0.0, fin == all ? 1 : 0);
    }

    static String runWaiters(int n) throws Exception {
        int ns = 10;
        String path = "/zkr-bench/curator-waiters-" + (++runNo) + "-" + ProcessHandle.current().pid() + "/lock";
        InterProcessMutex holder = new InterProcessMutex(client(0), path);
        holder.acquire();
        double[] got = new double[n + 1];
        int[] errors = new int[1];
        Thread[] th = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int me = i;
            final InterProcessMutex m = new InterProcessMutex(client(i % ns), path);
            th[i] = new Thread(null, () -> {
                try {
                    if (m.acquire(300, TimeUnit.SECONDS)) {
                        got[me + 1] = nowMs();
                        m.release();
                    } else synchronized (errors) { errors[0]++; }
                } catch (Exception e) {
                    synchronized (errors) { errors[0]++; }
                }
            }, "w" + i, 256 * 1024);
            th[i].setDaemon(true);
        }
        double q0 = nowMs();
        for (Thread x : th) x.start();
        while (nowMs() - q0 < 300000 && holder.getParticipantNodes().size() < n + 1)
            Thread.sleep(50);
        if (holder.getParticipantNodes().size() < n + 1)
            throw new IllegalStateException("not all queued");
        double queued = nowMs() - q0;
        System.out.println("QUEUED " + n);
        System.out.flush();
        double t0 = nowMs();
        got[0] = t0;
        holder.release();
        for (Thread x : th) x.join(300000);
        double drain = nowMs() - t0;
        Arrays.sort(got);
        double[] gaps = new double[n];
        for (int i = 0; i < n; i++) gaps[i] = got[i + 1] - got[i];
        Arrays.sort(gaps);
        return String.format("RESULT impl=curator scenario=waiters threads=%d sessions=%d ops=%d secs=%.3f rate=%.1f "
                + "p50_ms=%.3f p99_ms=%.3f lat=handoff errors=%d queue_ms=%.0f", n, ns, n, drain / 1e3,
                n / (drain / 1e3), gaps[(n - 1) / 2], gaps[(int) ((n - 1) * 0.99)], errors[0], queued);
    }

    // ---- leader election (tests/bench/bench_leader.c is the C side) ----

    /** One participant of a latch or selector election, on session c. */
    static final class Part {
        final int no;
        LeaderLatch latch;
        LeaderSelector sel;
        volatile double toldMs;                 // when last told it leads
        volatile CountDownLatch endTerm = new CountDownLatch(1);

        Part(int no) { this.no = no; }
    }

    static Part join(boolean isLatch, CuratorFramework c, String path, int no, List<Part> told) throws Exception {
        Part p = new Part(no);
        if (isLatch) {
            p.latch = new LeaderLatch(c, path, "p" + no);
            p.latch.addListener(new LeaderLatchListener() {
                public void isLeader() {
                    p.toldMs = nowMs();
                    synchronized (told) { told.add(p); told.notifyAll(); }
                }
                public void notLeader() {}
            });
            p.latch.start();
        } else {
            p.sel = new LeaderSelector(c, path, new LeaderSelectorListenerAdapter() {
                public void takeLeadership(CuratorFramework cf) throws Exception {
                    p.toldMs = nowMs();
                    synchronized (told) { told.add(p); told.notifyAll(); }
                    p.endTerm.await();
                    p.endTerm = new CountDownLatch(1);
                }
            });
            p.sel.setId("p" + no);
            p.sel.autoRequeue();
            p.sel.start();
        }
        return p;
    }

    static void leave(Part p) throws Exception {
        if (p.latch != null)
            p.latch.close();
        else {
            p.endTerm.countDown();
            p.sel.close();
        }
    }

    static Part nextTold(List<Part> told, long waitMs) throws Exception {
        long end = System.currentTimeMillis() + waitMs;
        synchronized (told) {
            while (told.isEmpty() && System.currentTimeMillis() < end)
                told.wait(Math.max(1, end - System.currentTimeMillis()));
            return told.isEmpty() ? null : told.remove(0);
        }
    }

    /** Hand-over with n participants, one session each: the leader leaves
     * (latch: close, then it joins again at the back; selector: its
     * takeLeadership returns, auto-requeue puts it at the back) until the
     * next participant is told it leads. */
    static String runHandover(String name, boolean isLatch, int n, double seconds) throws Exception {
        String path = "/zkr-bench/curator-" + name + "-" + (++runNo) + "-" + ProcessHandle.current().pid();
        List<Part> told = new ArrayList<>();
        Part[] parts = new Part[n];
        for (int i = 0; i < n; i++) {
            parts[i] = join(isLatch, client(i), path, i, told);
            while (client(0).checkExists().forPath(path) == null
                    || client(0).getChildren().forPath(path).size() < i + 1)
                Thread.sleep(1); // joined in order
        }
        Lat lat = new Lat();
        Part leader = nextTold(told, 60000);
        int errors = 0, joins = n;
        double t0 = nowMs(), deadline = t0 + seconds * 1e3;
        while (leader != null && nowMs() < deadline) {
            double gone = nowMs();
            if (isLatch) {
                leader.latch.close();
            } else {
                leader.endTerm.countDown();
            }
            Part next = nextTold(told, 60000);
            if (next == null) { errors++; break; }
            lat.add(next.toldMs - gone);
            if (isLatch)
                parts[leader.no] = join(true, client(leader.no), path, leader.no, told);
            leader = next;
        }
        double secs = (nowMs() - t0) / 1e3;
        for (Part p : parts) leave(p);
        double[] all = Arrays.copyOf(lat.v, lat.n);
        Arrays.sort(all);
        int k = all.length;
        return String.format("RESULT impl=curator scenario=%s threads=%d sessions=%d ops=%d secs=%.3f rate=%.1f "
                + "p50_ms=%.3f p99_ms=%.3f lat=handoff errors=%d", name, n, n, k, secs, k / secs,
                k > 0 ? all[(k - 1) / 2] : 0, k > 0 ? all[(int) ((k - 1) * 0.99)] : 0, errors);
    }

    /** n participants over 10 sessions join at once: from the first start
     * until every node is listed and the first is told it leads. */
    static String runJoin(String name, boolean isLatch, int n) throws Exception {
        String path = "/zkr-bench/curator-" + name + "-" + (++runNo) + "-" + ProcessHandle.current().pid();
        int ns = 10;
        for (int i = 0; i < ns; i++) client(i);
        CuratorFramework look = client(ns);
        List<Part> told = new ArrayList<>();
        Part[] parts = new Part[n];
        double t0 = nowMs();
        for (int i = 0; i < n; i++)
            parts[i] = join(isLatch, client(i % ns), path, i, told);
        int errors = 0;
        for (;;) {
            if (look.checkExists().forPath(path) != null && look.getChildren().forPath(path).size() >= n)
                break;
            if (nowMs() - t0 > 300000) { errors++; break; }
            Thread.sleep(1);
        }
        if (nextTold(told, 60000) == null) errors++;
        double ms = nowMs() - t0;
        for (Part p : parts) leave(p);
        return String.format("RESULT impl=curator scenario=%s threads=%d sessions=%d ops=%d secs=%.3f rate=%.1f "
                + "p50_ms=%.3f p99_ms=%.3f lat=join errors=%d", name, n, ns, n, ms / 1e3, n / (ms / 1e3), ms, ms,
                errors);
    }

    static long usedHeap() throws Exception {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) { System.gc(); Thread.sleep(100); }
        return rt.totalMemory() - rt.freeMemory();
    }

    static String runHeap(int n) throws Exception {
        CuratorFramework c = client(0);
        String base = "/zkr-bench/curator-heap-" + (++runNo) + "-" + ProcessHandle.current().pid();
        InterProcessMutex warm = new InterProcessMutex(c, base + "/warm");
        warm.acquire();
        warm.release();
        InterProcessMutex[] m = new InterProcessMutex[n];
        long before = usedHeap();
        double t0 = nowMs();
        for (int i = 0; i < n; i++) {
            m[i] = new InterProcessMutex(c, base + "/h" + i);
            if (!m[i].acquire(60, TimeUnit.SECONDS)) throw new IllegalStateException("heap acquire " + i);
        }
        double secs = (nowMs() - t0) / 1e3;
        long held = usedHeap();
        for (int i = 0; i < n; i++) m[i].release();
        return String.format("RESULT impl=curator scenario=heap threads=1 sessions=1 ops=%d secs=%.3f rate=%.1f "
                + "p50_ms=0 p99_ms=0 lat=none errors=0 bytes_per_lock=%.0f", n, secs, n / secs,
                (held - before) / (double) n);
    }

    // ---- caches (tests/bench/bench_cache.c is the C side) ----
    // The trees are made by the harness (zkr_bench -c cachetree): a base, 100
    // children c000.., N/100 grandchildren g0000.. under each.  Requests: the
    // server's mntr packets_received deltas, less this side's own four-letter
    // words in between (the server counts each as a packet).

    static final int KIDS = 100, RESYNC_K = 10;

    static String fourLetter(String word) throws Exception {
        String hp = hosts.split(",")[0];
        int i = hp.lastIndexOf(':');
        try (Socket s = new Socket(hp.substring(0, i), Integer.parseInt(hp.substring(i + 1)))) {
            s.getOutputStream().write(word.getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    static double mntr(String key) throws Exception {
        for (String ln : fourLetter("mntr").split("\n")) {
            String[] kv = ln.split("\t");
            if (kv.length == 2 && kv[0].equals(key)) return Double.parseDouble(kv[1].trim());
        }
        throw new IllegalStateException("mntr: no " + key);
    }

    static double packets() throws Exception { return mntr("zk_packets_received"); }

    static double wchsTotal() throws Exception {
        String s = fourLetter("wchs");
        int i = s.indexOf("Total watches:");
        if (i < 0) throw new IllegalStateException("wchs: " + s);
        return Double.parseDouble(s.substring(i + "Total watches:".length()).trim().split("\\s+")[0]);
    }

    static String leafPath(String base, int n, int i) {
        int per = n / KIDS;
        return String.format("%s/c%03d/g%04d", base, i / per, i % per);
    }

    static void needTree(String base, int n) throws Exception {
        byte[] d = client(0).checkExists().forPath(base) == null ? null : client(0).getData().forPath(base);
        if (d == null || !new String(d, StandardCharsets.UTF_8).equals("tree n=" + n))
            throw new IllegalStateException(base + ": no tree of " + n + " (zkr_bench -c cachetree -N " + n + " -b " + base + ")");
    }

    /** A session of its own for one cache, connected. */
    static CuratorFramework freshClient(String h) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(h, 20000, 15000, new RetryNTimes(3, 100));
        c.start();
        if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
            c.close();
            throw new IllegalStateException("no connection to " + h);
        }
        return c;
    }

    /** TreeCache or CuratorCache (with data, the defaults otherwise), and what its listener is told. */
    static final class JCache {
        final TreeCache tc;
        final CuratorCache cc;
        final String base;
        final CountDownLatch initialized = new CountDownLatch(1);
        volatile double initMs;
        final AtomicLong events = new AtomicLong();
        final Object mon = new Object();
        String wantPath;  // a NODE_UPDATED / change awaited (under mon)
        byte[] wantData;
        boolean got;
        double gotMs;

        JCache(String kind, CuratorFramework c, String base) {
            this.base = base;
            if (kind.equals("treecache")) {
                cc = null;
                tc = TreeCache.newBuilder(c, base).setCacheData(true).build();
                tc.getListenable().addListener((cf, ev) -> {
                    events.incrementAndGet();
                    if (ev.getType() == TreeCacheEvent.Type.INITIALIZED) {
                        initMs = nowMs();
                        initialized.countDown();
                    } else if (ev.getType() == TreeCacheEvent.Type.NODE_UPDATED) {
                        changed(ev.getData());
                    }
                });
            } else if (kind.equals("curatorcache")) {
                tc = null;
                cc = CuratorCache.build(c, base);
                cc.listenable().addListener(CuratorCacheListener.builder()
                        .forCreates(d -> events.incrementAndGet())
                        .forDeletes(d -> events.incrementAndGet())
                        .forChanges((o, d) -> { events.incrementAndGet(); changed(d); })
                        .forInitialized(() -> { initMs = nowMs(); initialized.countDown(); })
                        .build());
            } else {
                throw new IllegalArgumentException("cache kind " + kind);
            }
        }

        void changed(ChildData d) {
            double now = nowMs();
            synchronized (mon) {
                if (wantPath != null && !got && d != null && wantPath.equals(d.getPath())
                        && Arrays.equals(wantData, d.getData())) {
                    got = true;
                    gotMs = now;
                    mon.notifyAll();
                }
            }
        }

        void start() throws Exception {
            if (tc != null) tc.start(); else cc.start();
        }

        void awaitInitialized() throws Exception {
            if (!initialized.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("not initialized in 60 s");
        }

        byte[] data(String path) {
            if (tc != null) {
                ChildData d = tc.getCurrentData(path);
                return d == null ? null : d.getData();
            }
            return cc.get(path).map(ChildData::getData).orElse(null);
        }

        int count(String path) {
            java.util.Map<String, ChildData> kids = tc.getCurrentChildren(path);
            int n = 1;
            if (kids != null)
                for (String k : kids.keySet()) n += count(path + "/" + k);
            return n;
        }

        int size() { return tc != null ? count(base) : cc.size(); }

        void close() { if (tc != null) tc.close(); else cc.close(); }
    }

    static String cacheLoad(String kind, double seconds) throws Exception {
        String base = "/zkr-bench/cache10k";
        needTree(base, 10000);
        double[] ms = new double[64];
        int loads = 0, nodes = 0;
        double req = 0, end = nowMs() + seconds * 1e3;
        while (loads < 64 && (loads == 0 || nowMs() < end)) {
            CuratorFramework c = freshClient(hosts);
            try {
                JCache k = new JCache(kind, c, base);
                double p0 = packets(), t0 = nowMs();
                k.start();
                k.awaitInitialized();
                double p1 = packets();
                ms[loads++] = k.initMs - t0;
                nodes = k.size();
                req += p1 - p0 - 1;
                k.close();
            } finally {
                c.close();
            }
        }
        double[] v = Arrays.copyOf(ms, loads);
        Arrays.sort(v);
        double secs = 0;
        for (double x : v) secs += x / 1e3;
        return String.format("RESULT impl=%s scenario=cacheload10k threads=1 sessions=1 ops=%d secs=%.3f rate=%.1f "
                + "p50_ms=%.3f p99_ms=%.3f lat=load errors=0 nodes=%d req_per_node=%.3f", kind, loads, secs,
                loads / secs, v[(loads - 1) / 2], v[(int) ((loads - 1) * 0.99)], nodes, req / ((double) loads * Math.max(1, nodes)));
    }

    static String cacheLatency(String kind, int count) throws Exception {
        String base = "/zkr-bench/cache1k";
        int n = 1000;
        needTree(base, n);
        CuratorFramework writer = client(0);
        CuratorFramework c = freshClient(hosts);
        try {
            JCache k = new JCache(kind, c, base);
            k.start();
            k.awaitInitialized();
            Lat lat = new Lat();
            long seed = ProcessHandle.current().pid() * 2654435761L;
            int errors = 0;
            double p0 = packets(), t0 = nowMs();
            for (int i = 0; i < count; i++) {
                seed = (seed * 1103515245L + 12345L) & 0xffffffffL;
                String path = leafPath(base, n, (int) ((seed >>> 8) % n));
                byte[] data = ("w" + ProcessHandle.current().pid() + "-" + (++runNo)).getBytes(StandardCharsets.UTF_8);
                synchronized (k.mon) { k.wantPath = path; k.wantData = data; k.got = false; }
                double a0 = nowMs();
                writer.setData().forPath(path, data);
                synchronized (k.mon) {
                    long until = System.currentTimeMillis() + 10000;
                    while (!k.got && System.currentTimeMillis() < until)
                        k.mon.wait(Math.max(1, until - System.currentTimeMillis()));
                    if (k.got) lat.add(k.gotMs - a0);
                    else if (++errors > 10) throw new IllegalStateException("changes not told");
                    k.wantPath = null;
                }
            }
            double secs = (nowMs() - t0) / 1e3, p1 = packets();
            k.close();
            double[] all = Arrays.copyOf(lat.v, lat.n);
            Arrays.sort(all);
            int m = all.length;
            return String.format("RESULT impl=%s scenario=cachelatency threads=1 sessions=2 ops=%d secs=%.3f rate=%.1f "
                    + "p50_ms=%.3f p99_ms=%.3f lat=change errors=%d req_per_change=%.3f", kind, m, secs, m / secs,
                    m > 0 ? all[(m - 1) / 2] : 0, m > 0 ? all[(int) ((m - 1) * 0.99)] : 0, errors,
                    (p1 - p0 - 1) / Math.max(1, m));
        } finally {
            c.close();
        }
    }

    static String cacheWatches(String kind) throws Exception {
        String base = "/zkr-bench/cache10k";
        needTree(base, 10000);
        CuratorFramework c = freshClient(hosts);
        try {
            JCache k = new JCache(kind, c, base);
            double d0 = wchsTotal(), a0 = mntr("zk_watch_count"), t0 = nowMs();
            k.start();
            k.awaitInitialized();
            double ms = k.initMs - t0;
            double d1 = wchsTotal(), a1 = mntr("zk_watch_count");
            int nodes = k.size();
            double nn = Math.max(1, nodes);
            k.close();
            return String.format("RESULT impl=%s scenario=cachewatches threads=1 sessions=1 ops=%d secs=%.3f rate=%.1f "
                    + "p50_ms=%.3f p99_ms=%.3f lat=load errors=0 nodes=%d data_watches=%.0f all_watches=%.0f "
                    + "data_per_node=%.4f all_per_node=%.4f", kind, nodes, ms / 1e3, nodes / (ms / 1e3), ms, ms, nodes,
                    d1 - d0, a1 - a0, (d1 - d0) / nn, (a1 - a0) / nn);
        } finally {
            c.close();
        }
    }

    /** The proxy's control connection (zkr_bench -c proxy). */
    static final class ProxyCtl implements AutoCloseable {
        final Socket s;
        final BufferedReader in;
        final OutputStream out;

        ProxyCtl(int port) throws Exception {
            s = new Socket("127.0.0.1", port);
            in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
            out = s.getOutputStream();
        }

        void cmd(String c) throws Exception {
            out.write((c + "\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String a = in.readLine();
            if (a == null || !a.startsWith("OK")) throw new IllegalStateException("proxy: " + c + ": " + a);
        }

        public void close() throws Exception { s.close(); }
    }

    static String cacheResync(String kind, String proxy) throws Exception {
        if (proxy == null || proxy.indexOf('/') < 0)
            throw new IllegalArgumentException("cacheresync needs PROXY HOST:PORT/CONTROL_PORT");
        String base = "/zkr-bench/cache10k";
        int n = 10000;
        needTree(base, n);
        String phosts = proxy.substring(0, proxy.indexOf('/'));
        CuratorFramework writer = client(0);
        try (ProxyCtl ctl = new ProxyCtl(Integer.parseInt(proxy.substring(proxy.indexOf('/') + 1)))) {
            CuratorFramework c = freshClient(phosts);
            try {
                Object smon = new Object();
                boolean[] suspended = {false};
                double[] reconnected = {-1};
                c.getConnectionStateListenable().addListener((cf, st) -> {
                    double now = nowMs();
                    synchronized (smon) {
                        if (st == ConnectionState.SUSPENDED) suspended[0] = true;
                        if (st == ConnectionState.RECONNECTED && suspended[0] && reconnected[0] < 0) reconnected[0] = now;
                        smon.notifyAll();
                    }
                });
                JCache k = new JCache(kind, c, base);
                k.start();
                k.awaitInitialized();
                long seed = ProcessHandle.current().pid() * 2654435761L ^ System.currentTimeMillis();
                List<String> paths = new ArrayList<>();
                List<byte[]> vals = new ArrayList<>();
                while (paths.size() < RESYNC_K) {
                    seed = (seed * 1103515245L + 12345L) & 0xffffffffL;
                    String p = leafPath(base, n, (int) ((seed >>> 8) % n));
                    if (paths.contains(p)) continue;
                    paths.add(p);
                    vals.add(("r" + ProcessHandle.current().pid() + "-" + paths.size() + "-" + seed).getBytes(StandardCharsets.UTF_8));
                }
                long session0 = c.getZookeeperClient().getZooKeeper().getSessionId();
                ctl.cmd("stall 1");
                ctl.cmd("cut");
                synchronized (smon) {
                    long until = System.currentTimeMillis() + 10000;
                    while (!suspended[0] && System.currentTimeMillis() < until)
                        smon.wait(Math.max(1, until - System.currentTimeMillis()));
                    if (!suspended[0]) throw new IllegalStateException("the client did not see the cut");
                }
                for (int i = 0; i < RESYNC_K; i++)
                    writer.setData().forPath(paths.get(i), vals.get(i));
                double p0 = packets(), t0 = nowMs();
                ctl.cmd("stall 0");
                double heldMs = -1;
                while (nowMs() - t0 < 60000) {
                    boolean all = true;
                    for (int i = 0; i < RESYNC_K && all; i++)
                        all = Arrays.equals(k.data(paths.get(i)), vals.get(i));
                    if (all) { heldMs = nowMs() - t0; break; }
                    LockSupport.parkNanos(200_000);
                }
                // quiet: three polls 100 ms apart, each no more than 2 requests
                // (other idle sessions' pings) past the one before
                double plast = packets(), quietAt = nowMs();
                int polls = 1;
                for (int still = 0; still < 3 && nowMs() - t0 < 60000;) {
                    Thread.sleep(100);
                    double p = packets();
                    polls++;
                    if (p - plast - 1 > 2) { still = 0; quietAt = nowMs(); } else still++;
                    plast = p;
                }
                double req = plast - polls - p0, recMs;
                synchronized (smon) { recMs = reconnected[0] < 0 ? -1 : reconnected[0] - t0; }
                long session1 = c.getZookeeperClient().getZooKeeper().getSessionId();
                int nodes = k.size();
                k.close();
                int errors = (heldMs < 0 ? 1 : 0) + (session1 != session0 ? 1 : 0);
                return String.format("RESULT impl=%s scenario=cacheresync threads=1 sessions=2 ops=%d secs=%.3f rate=%.1f "
                        + "p50_ms=%.3f p99_ms=%.3f lat=resync errors=%d changed=%d nodes=%d reconnect_ms=%.3f quiet_ms=%.0f "
                        + "req=%.0f same_session=%d", kind, RESYNC_K, heldMs / 1e3, heldMs > 0 ? RESYNC_K / (heldMs / 1e3) : 0,
                        heldMs, heldMs, errors, RESYNC_K, nodes, recMs, quietAt - t0, req, session1 == session0 ? 1 : 0);
            } finally {
                c.close();
            }
        }
    }

    static String runCache(String name, String kind, double seconds, int count, String proxy) throws Exception {
        switch (name) {
        case "cacheload10k": return cacheLoad(kind, seconds);
        case "cachelatency": return cacheLatency(kind, count > 0 ? count : 2000);
        case "cachewatches": return cacheWatches(kind);
        case "cacheresync": return cacheResync(kind, proxy);
        default: throw new IllegalArgumentException("scenario " + name);
        }
    }

    // ---- service discovery (tests/bench/bench_discovery.c is the C side) ----
    // register: registerService of a new DYNAMIC instance (a fresh id, an
    // address, a port, a small Map payload), timed until it returns (the
    // server confirmed the create), then unregisterService (not timed).
    // query100: queryForInstances of the N instances made by the harness
    // (zkr_bench -c disctree) under /zkr-bench/disc100, service "svc".

    static String discResult(String scen, double[] v, int n, double secs, int errors, int listed) {
        double[] all = Arrays.copyOf(v, n);
        Arrays.sort(all);
        return String.format("RESULT impl=curator scenario=%s threads=1 sessions=1 ops=%d secs=%.3f rate=%.1f "
                + "p50_ms=%.3f p99_ms=%.3f lat=cycle errors=%d listed=%d", scen, n, secs, n / Math.max(secs, 1e-9),
                n > 0 ? all[(n - 1) / 2] : 0, n > 0 ? all[(int) ((n - 1) * 0.99)] : 0, errors, listed);
    }

    @SuppressWarnings({"rawtypes", "unchecked"})
    static String runDiscovery(String scen, double seconds, int count) throws Exception {
        CuratorFramework c = freshClient(hosts);
        boolean register = scen.equals("register");
        String base = register ? "/zkr-bench/register-curator-" + ProcessHandle.current().pid() : "/zkr-bench/disc100";
        ServiceDiscovery<java.util.Map> d = ServiceDiscoveryBuilder.builder(java.util.Map.class).client(c).basePath(base)
                .build(); // the defaults: JsonInstanceSerializer, no watch of its own instances
        try {
            d.start();
            double[] ms = new double[200000];
            int n = 0, errors = 0, listed = 0, want = count > 0 ? count : 100;
            java.util.Map<String, Object> payload = new java.util.LinkedHashMap<>();
            payload.put("zone", "eu-1");
            payload.put("weight", "3");
            double t0 = nowMs(), end = t0 + seconds * 1e3;
            while (n < ms.length && (n == 0 || nowMs() < end)) {
                if (register) {
                    ServiceInstance<java.util.Map> in = ServiceInstance.<java.util.Map>builder().name("svc")
                            .address("10.0.0.1").port(8080).payload(payload).build();
                    double a = nowMs();
                    d.registerService(in);
                    ms[n++] = nowMs() - a;
                    d.unregisterService(in);
                } else {
                    double a = nowMs();
                    int got = d.queryForInstances("svc").size();
                    double b = nowMs();
                    if (got != want) {
                        if (++errors > 10)
                            throw new IllegalStateException("query: " + got + " instances, want " + want
                                    + " (zkr_bench -c disctree)");
                        continue;
                    }
                    listed = got;
                    ms[n++] = b - a;
                }
            }
            return discResult(scen, ms, n, (nowMs() - t0) / 1e3, errors, listed);
        } finally {
            d.close();
            c.close();
        }
    }

    public static void main(String[] args) throws Exception {
        hosts = args[0];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("READY");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if (w.length == 0 || w[0].isEmpty()) continue;
            if (w[0].equals("quit")) break;
            String out;
            try {
                if (!w[0].equals("run") || w.length < 3) throw new IllegalArgumentException("usage: run SCENARIO SECONDS [N [PROXY]]");
                int count = w.length > 3 ? Integer.parseInt(w[3]) : 0;
                int slash = w[1].indexOf('/');
                if (slash > 0) {
                    out = runCache(w[1].substring(0, slash), w[1].substring(slash + 1), Double.parseDouble(w[2]), count,
                            w.length > 4 ? w[4] : null);
                } else switch (w[1]) {
                case "waiters": out = runWaiters(count > 0 ? count : 1000); break;
                case "atomic4": case "count4": out = runCounter(w[1], Double.parseDouble(w[2])); break;
                case "heap": out = runHeap(count > 0 ? count : 10000); break;
                case "latch10": out = runHandover(w[1], true, 10, Double.parseDouble(w[2])); break;
                case "selector10": out = runHandover(w[1], false, 10, Double.parseDouble(w[2])); break;
                case "latchjoin100": out = runJoin(w[1], true, count > 0 ? count : 100); break;
                case "selectorjoin100": out = runJoin(w[1], false, count > 0 ? count : 100); break;
                case "register":
                case "query100": out = runDiscovery(w[1], Double.parseDouble(w[2]), count); break;
                default: out = runTimed(w[1], Double.parseDouble(w[2]));
                }
            } catch (Throwable e) {
                out = "ERROR " + e.toString().replace('\n', ' ');
            }
            System.out.println(out);
            System.out.flush();
        }
        for (CuratorFramework c : pool) c.close();
        System.exit(0);
    }
}
