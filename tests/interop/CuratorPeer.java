// A Curator 5.x process that the C interop tests drive over stdin/stdout.
// One command per line, one answer line per command.  Every lock holder
// runs in a thread of its own with its own CuratorFramework (its own
// session), because Curator's locks belong to the thread that acquired them.
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public class CuratorPeer {
    static String hosts;

    static CuratorFramework newClient() throws Exception {
        return newClient(hosts);
    }

    /** A session of its own on h (the test server, or a proxy in front of it). */
    static CuratorFramework newClient(String h) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(h, 10000, 5000, new RetryNTimes(3, 100));
        c.start();
        if (!c.blockUntilConnected(20, TimeUnit.SECONDS))
            throw new IllegalStateException("no connection");
        return c;
    }

    /** One lock holder: acquires in its own thread, holds until told. */
    static final class Holder extends Thread {
        final String kind, path;
        final long timeoutMs;
        final int max;
        volatile String state = "WAITING";
        final CountDownLatch releaseNow = new CountDownLatch(1);
        final CountDownLatch released = new CountDownLatch(1);
        final AtomicBoolean revoked = new AtomicBoolean();
        volatile String releaseResult = "";

        Holder(String kind, String path, long timeoutMs, int max) {
            this.kind = kind;
            this.path = path;
            this.timeoutMs = timeoutMs;
            this.max = max;
            setDaemon(true);
        }

        public void run() {
            CuratorFramework c = null;
            try {
                c = newClient();
                InterProcessLock lock = null;
                InterProcessSemaphoreV2 sem = null;
                Lease lease = null;
                boolean ok;
                switch (kind) {
                case "mutex":
                    lock = new InterProcessMutex(c, path);
                    break;
                case "revocable": {
                    InterProcessMutex m = new InterProcessMutex(c, path);
                    // A revocable holder lets go as soon as it is asked.
                    m.makeRevocable(forLock -> { revoked.set(true); releaseNow.countDown(); });
                    lock = m;
                    break;
                }
                case "read":
                    lock = new InterProcessReadWriteLock(c, path).readLock();
                    break;
                case "write":
                    lock = new InterProcessReadWriteLock(c, path).writeLock();
                    break;
                case "smutex":
                    lock = new InterProcessSemaphoreMutex(c, path);
                    break;
                case "sem":
                    sem = new InterProcessSemaphoreV2(c, path, max);
                    break;
                default:
                    throw new IllegalArgumentException("kind " + kind);
                }
                if (sem != null) {
                    lease = timeoutMs < 0 ? sem.acquire() : sem.acquire(timeoutMs, TimeUnit.MILLISECONDS);
                    ok = lease != null;
                } else if (timeoutMs < 0) {
                    lock.acquire();
                    ok = true;
                } else {
                    ok = lock.acquire(timeoutMs, TimeUnit.MILLISECONDS);
                }
                if (!ok) {
                    state = "TIMEOUT";
                    return;
                }
                state = "HELD";
                releaseNow.await();
                if (lease != null)
                    lease.close();
                else
                    lock.release();
                releaseResult = "OK";
                state = revoked.get() ? "REVOKED" : "RELEASED";
            } catch (Throwable t) {
                state = "ERROR " + t;
                releaseResult = "ERROR " + t;
            } finally {
                released.countDown();
                if (c != null)
                    c.close();
            }
        }
    }

    /** Contenders that check a shared "inside" directory while holding. */
    static final class Stress extends Thread {
        final String name, kind, path, inside;
        final int max, cycles;
        volatile int violations, done;
        volatile String error = null;

        Stress(String name, String kind, String path, int max, int cycles, String inside) {
            this.name = name;
            this.kind = kind;
            this.path = path;
            this.max = max;
            this.cycles = cycles;
            this.inside = inside;
        }

        public void run() {
            try (CuratorFramework c = newClient()) {
                InterProcessSemaphoreV2 sem = kind.equals("sem") ? new InterProcessSemaphoreV2(c, path, max) : null;
                InterProcessLock lock = kind.equals("smutex") ? new InterProcessSemaphoreMutex(c, path)
                        : kind.equals("mutex") ? new InterProcessMutex(c, path) : null;
                for (int i = 0; i < cycles; i++) {
                    Lease lease = null;
                    if (sem != null)
                        lease = sem.acquire(30, TimeUnit.SECONDS);
                    else if (!lock.acquire(30, TimeUnit.SECONDS))
                        lease = null;
                    if (sem != null && lease == null)
                        throw new IllegalStateException("acquire timed out");
                    String me = c.create().creatingParentContainersIfNeeded().withMode(CreateMode.EPHEMERAL)
                            .forPath(inside + "/java-" + name + "-" + i);
                    if (c.getChildren().forPath(inside).size() > max)
                        violations++;
                    Thread.sleep(15);
                    c.delete().forPath(me);
                    if (lease != null)
                        lease.close();
                    else
                        lock.release();
                    done++;
                }
            } catch (Throwable t) {
                error = t.toString();
            }
        }
    }

    static final Map<String, Holder> holders = new ConcurrentHashMap<>();
    static final Map<String, Stress> stresses = new ConcurrentHashMap<>();

    static String join(List<String> parts) {
        return parts.isEmpty() ? "-" : String.join(" ", parts);
    }

    static String handle(CuratorFramework main, String[] w) throws Exception {
        switch (w[0]) {
        case "hold": { // hold NAME KIND PATH TIMEOUT_MS [MAX]
            Holder h = new Holder(w[2], w[3], Long.parseLong(w[4]), w.length > 5 ? Integer.parseInt(w[5]) : 1);
            holders.put(w[1], h);
            h.start();
            return "STARTED";
        }
        case "wait": { // wait NAME MS: until no longer WAITING
            Holder h = holders.get(w[1]);
            long end = System.currentTimeMillis() + Long.parseLong(w[2]);
            while (h.state.equals("WAITING") && System.currentTimeMillis() < end)
                Thread.sleep(10);
            return h.state;
        }
        case "state":
            return holders.get(w[1]).state;
        case "release": { // release NAME
            Holder h = holders.get(w[1]);
            h.releaseNow.countDown();
            if (!h.released.await(20, TimeUnit.SECONDS))
                return "ERROR release timed out";
            holders.remove(w[1]);
            return h.releaseResult.isEmpty() ? h.state : h.releaseResult;
        }
        case "revoked":
            return holders.get(w[1]).revoked.get() ? "YES" : "NO";
        case "participants": { // participants KIND PATH
            // Curator's halves list only their own kind of node.
            if (w[1].equals("write"))
                return join(List.copyOf(new InterProcessReadWriteLock(main, w[2]).writeLock().getParticipantNodes()));
            if (w[1].equals("read"))
                return join(List.copyOf(new InterProcessReadWriteLock(main, w[2]).readLock().getParticipantNodes()));
            return join(List.copyOf(new InterProcessMutex(main, w[2]).getParticipantNodes()));
        }
        case "revoke": // revoke NODE_PATH
            Revoker.attemptRevoke(main, w[1]);
            return "OK";
        case "counter": { // counter LOCK COUNTER N: read-modify-write under the lock
            InterProcessMutex m = new InterProcessMutex(main, w[1]);
            int n = Integer.parseInt(w[3]), overlaps = 0;
            for (int i = 0; i < n; i++) {
                m.acquire();
                try {
                    Stat st = new Stat();
                    byte[] b = main.getData().storingStatIn(st).forPath(w[2]);
                    int v = Integer.parseInt(new String(b, StandardCharsets.US_ASCII).trim());
                    try {
                        main.setData().withVersion(st.getVersion())
                                .forPath(w[2], Integer.toString(v + 1).getBytes(StandardCharsets.US_ASCII));
                    } catch (KeeperException.BadVersionException e) {
                        overlaps++; // someone wrote while we held the lock
                    }
                } finally {
                    m.release();
                }
            }
            return "OK " + overlaps;
        }
        case "bench": { // bench PATH CYCLES: uncontended acquire+release, ms per cycle
            InterProcessMutex m = new InterProcessMutex(main, w[1]);
            int n = Integer.parseInt(w[2]);
            m.acquire();
            m.release();
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                m.acquire();
                m.release();
            }
            return String.format(java.util.Locale.ROOT, "%.3f", (System.nanoTime() - t0) / 1e6 / n);
        }
        case "stress": { // stress NAME KIND PATH MAX CYCLES INSIDE
            Stress s = new Stress(w[1], w[2], w[3], Integer.parseInt(w[4]), Integer.parseInt(w[5]), w[6]);
            stresses.put(w[1], s);
            s.start();
            return "STARTED";
        }
        case "join": { // join NAME: wait for a stress thread
            Stress s = stresses.remove(w[1]);
            s.join(120000);
            if (s.isAlive())
                return "ERROR still running";
            return s.error != null ? "ERROR " + s.error : "DONE " + s.done + " " + s.violations;
        }
        default:
            return "ERROR unknown command " + w[0];
        }
    }

    /** What a peer does with one command line: its answer line. */
    interface Handler {
        String handle(CuratorFramework main, String[] words) throws Exception;
    }

    /** The line loop of every peer: connect, print READY, answer each
     * command with one line until "quit" or the end of stdin, then run
     * atQuit and exit. */
    static void serve(String hostsArg, Handler h, Runnable atQuit) throws Exception {
        hosts = hostsArg;
        CuratorFramework main = newClient();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("READY");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty())
                continue;
            if (line.equals("quit"))
                break;
            String answer;
            try {
                answer = h.handle(main, line.split(" "));
            } catch (Throwable t) {
                answer = "ERROR " + t.toString().replace('\n', ' ');
            }
            System.out.println(answer);
            System.out.flush();
        }
        atQuit.run();
        main.close();
        System.exit(0);
    }

    public static void main(String[] args) throws Exception {
        serve(args[0], CuratorPeer::handle, () -> {
            for (Holder h : holders.values())
                h.releaseNow.countDown();
        });
    }
}
