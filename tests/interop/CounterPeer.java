// A Curator 5.x process for the counter interop tests (tests/test_counter_interop.c),
// driven over stdin/stdout (compiled and started by peer.sh: ZKR_PEER_MAIN=CounterPeer;
// the line loop and the session are CuratorPeer's).  Curator's DistributedAtomicLong
// and SharedCount on the same nodes as a C zkr_atomic_long_t and zkr_count_t.
// One command per line, one answer line per command.
//
//   getlong PATH                 DistributedAtomicLong.get()   -> VALUE succeeded value
//   addlong PATH DELTA           add(DELTA)                     -> OK succeeded pre post
//   caslong PATH EXPECTED NEW    compareAndSet                  -> OK succeeded pre post
//   initlong PATH VALUE          initialize                     -> OK true|false
//   forcelong PATH VALUE         forceSet                       -> OK
//   getcount PATH SEED           a SharedCount (seed SEED) started, read, closed
//                                                               -> VALUE count version
//   setcount PATH V              setCount (started with seed 0) -> OK
//   trysetcount PATH V           trySetCount(getVersionedValue(), V) -> OK version true|false
//   bytes PATH                   the node's data in hex ("-" if empty) -> BYTES hex
//   incs NAME PATH THREADS N RETRIES [LOCKPATH]
//                                THREADS threads, a session each, N increments each
//                                (ExponentialBackoffRetry(1, RETRIES, 50); with LOCKPATH
//                                a PromotedToLock there, 10 s, 5 retries), in the
//                                background                     -> STARTED
//   counts NAME PATH THREADS N   THREADS threads, a session and a SharedCount each, each
//                                looping getVersionedValue / trySetCount(v + 1) until
//                                N succeeded, in the background -> STARTED
//   await NAME                   -> DONE succeeded failed errors promoted
//   quit
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public class CounterPeer {
    static final class Job {
        final List<Thread> threads = new ArrayList<>();
        final AtomicInteger ok = new AtomicInteger(), failed = new AtomicInteger(),
                errors = new AtomicInteger(), promoted = new AtomicInteger();
    }

    static final Map<String, Job> jobs = new ConcurrentHashMap<>();

    static DistributedAtomicLong along(CuratorFramework c, String p) {
        return new DistributedAtomicLong(c, p, new RetryNTimes(10, 10));
    }

    static String res(AtomicValue<Long> v) {
        return v.succeeded() + " " + v.preValue() + " " + v.postValue();
    }

    static SharedCount count(CuratorFramework c, String p, int seed) throws Exception {
        SharedCount sc = new SharedCount(c, p, seed);
        sc.start();
        return sc;
    }

    static Job incs(String p, int threads, int n, int retries, String lock) {
        Job j = new Job();
        for (int t = 0; t < threads; t++) {
            j.threads.add(new Thread(() -> {
                try (CuratorFramework c = CuratorPeer.newClient()) {
                    ExponentialBackoffRetry rp = new ExponentialBackoffRetry(1, retries, 50);
                    DistributedAtomicLong a = lock == null ? new DistributedAtomicLong(c, p, rp)
                            : new DistributedAtomicLong(c, p, rp, PromotedToLock.builder().lockPath(lock)
                                    .timeout(10, TimeUnit.SECONDS).retryPolicy(new RetryNTimes(5, 1)).build());
                    for (int i = 0; i < n; i++) {
                        try {
                            AtomicValue<Long> v = a.increment();
                            if (v.getStats().getPromotedLockTries() > 0)
                                j.promoted.incrementAndGet();
                            (v.succeeded() ? j.ok : j.failed).incrementAndGet();
                        } catch (Exception e) {
                            j.errors.incrementAndGet();
                        }
                    }
                } catch (Exception e) {
                    j.errors.incrementAndGet();
                }
            }));
        }
        j.threads.forEach(Thread::start);
        return j;
    }

    static Job counts(String p, int threads, int n) {
        Job j = new Job();
        for (int t = 0; t < threads; t++) {
            j.threads.add(new Thread(() -> {
                try (CuratorFramework c = CuratorPeer.newClient(); SharedCount sc = count(c, p, 0)) {
                    int mine = 0;
                    long end = System.currentTimeMillis() + 60000;
                    while (mine < n && System.currentTimeMillis() < end) {
                        VersionedValue<Integer> v = sc.getVersionedValue();
                        try {
                            if (sc.trySetCount(v, v.getValue() + 1)) {
                                mine++;
                                j.ok.incrementAndGet();
                            } else {
                                j.failed.incrementAndGet();
                            }
                        } catch (Exception e) {
                            j.errors.incrementAndGet();
                        }
                    }
                } catch (Exception e) {
                    j.errors.incrementAndGet();
                }
            }));
        }
        j.threads.forEach(Thread::start);
        return j;
    }

    static String hex(byte[] b) {
        if (b == null || b.length == 0)
            return "-";
        StringBuilder s = new StringBuilder();
        for (byte x : b)
            s.append(String.format("%02x", x & 0xff));
        return s.toString();
    }

    static String handle(CuratorFramework main, String[] w) throws Exception {
        switch (w[0]) {
        case "getlong": {
            AtomicValue<Long> v = along(main, w[1]).get();
            return "VALUE " + v.succeeded() + " " + v.postValue();
        }
        case "addlong":
            return "OK " + res(along(main, w[1]).add(Long.parseLong(w[2])));
        case "caslong":
            return "OK " + res(along(main, w[1]).compareAndSet(Long.parseLong(w[2]), Long.parseLong(w[3])));
        case "initlong":
            return "OK " + along(main, w[1]).initialize(Long.parseLong(w[2]));
        case "forcelong":
            along(main, w[1]).forceSet(Long.parseLong(w[2]));
            return "OK";
        case "getcount":
            try (SharedCount sc = count(main, w[1], Integer.parseInt(w[2]))) {
                VersionedValue<Integer> v = sc.getVersionedValue();
                return "VALUE " + v.getValue() + " " + v.getVersion();
            }
        case "setcount":
            try (SharedCount sc = count(main, w[1], 0)) {
                sc.setCount(Integer.parseInt(w[2]));
                return "OK";
            }
        case "trysetcount":
            try (SharedCount sc = count(main, w[1], 0)) {
                VersionedValue<Integer> cur = sc.getVersionedValue();
                return "OK " + cur.getVersion() + " " + sc.trySetCount(cur, Integer.parseInt(w[2]));
            }
        case "bytes":
            return "BYTES " + hex(main.getData().forPath(w[1]));
        case "incs":
            jobs.put(w[1], incs(w[2], Integer.parseInt(w[3]), Integer.parseInt(w[4]), Integer.parseInt(w[5]),
                                w.length > 6 ? w[6] : null));
            return "STARTED";
        case "counts":
            jobs.put(w[1], counts(w[2], Integer.parseInt(w[3]), Integer.parseInt(w[4])));
            return "STARTED";
        case "await": {
            Job j = jobs.remove(w[1]);
            for (Thread t : j.threads)
                t.join(120000);
            return "DONE " + j.ok.get() + " " + j.failed.get() + " " + j.errors.get() + " " + j.promoted.get();
        }
        default:
            return "ERROR unknown command " + w[0];
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorPeer.serve(args[0], CounterPeer::handle, () -> {});
    }
}
