// A Curator 5.x process in leader elections, driven by tests/test_leader_interop.c
// over stdin/stdout (compiled and started by peer.sh: ZKR_PEER_MAIN=LeaderPeer;
// the line loop and the sessions are CuratorPeer's).
// One command per line, one answer line per command.  Every participant has
// a CuratorFramework (a session) of its own.
//
//   latch NAME PATH ID [HOSTS]  join a LeaderLatch (close mode NOTIFY_LEADER)   -> STARTED
//                               (HOSTS: connect there, e.g. through a proxy)
//   selector NAME PATH ID [HOSTS]  join a LeaderSelector (no requeue); a term lasts
//                               until "resign NAME", close, or SUSPENDED/LOST  -> STARTED
//   await NAME MS               wait until NAME leads                          -> LEADER | NOT
//   leads NAME                  hasLeadership()                                -> YES | NO
//   resign NAME                 a selector's term ends (takeLeadership returns) -> OK | NOT
//   close NAME                  leave the election                             -> CLOSED
//   participants latch|selector PATH   Curator's getParticipants(), in order,
//                               the leader marked "*"                          -> "a* b c" | -
//   leader latch|selector PATH  Curator's getLeader()                          -> ID | -
//   observe NAME latch|selector PATH   a non-participant that polls getLeader()
//                               every 5 ms and records each change             -> STARTED
//   observed NAME               the leaders it saw, "-" for none              -> "- a b" 
//   ournode NAME                the participant's node (latch: getOurPath)     -> PATH | -
//   events                      the terms' log so far, then cleared:
//                               "EVENTS n T:NAME:KIND ...", T System.nanoTime()
//                               (CLOCK_MONOTONIC on Linux, the C side's clock),
//                               KIND start | end | doubt
//   now                         System.nanoTime()                              -> T
//   quit
// A term is logged "start" when Curator tells the participant it leads
// (isLeader, takeLeadership) and "end" when it is told it does not
// (notLeader, takeLeadership interrupted) or, first, when the participant
// decides to leave (before close or resign: from then on it no longer acts
// as leader); "doubt" when its connection is SUSPENDED or LOST.
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.state.ConnectionState;

public class LeaderPeer {
    static final List<String> events = new ArrayList<>();

    static void log(String name, String kind) {
        long t = System.nanoTime();
        synchronized (events) {
            events.add(t + ":" + name + ":" + kind);
        }
    }

    static CuratorFramework newClient() throws Exception {
        return CuratorPeer.newClient(); // a session of its own
    }

    /** One participant, latch or selector, on a session of its own. */
    static final class Member {
        final String name;
        final CuratorFramework client;
        LeaderLatch latch;
        LeaderSelector selector;
        final AtomicBoolean leading = new AtomicBoolean();
        final AtomicBoolean hadTerm = new AtomicBoolean(); // a selector's callback ran
        volatile CountDownLatch resign = new CountDownLatch(1);
        final CountDownLatch termOver = new CountDownLatch(1);

        Member(String name, String hosts) throws Exception {
            this.name = name;
            this.client = hosts == null ? newClient() : CuratorPeer.newClient(hosts);
        }

        void begin() {
            if (leading.compareAndSet(false, true))
                log(name, "start");
        }

        void end(String kind) {
            if (leading.compareAndSet(true, false))
                log(name, kind);
        }

        void close() throws Exception {
            end("end"); // it stops acting as leader before it lets go
            if (latch != null) {
                latch.close(LeaderLatch.CloseMode.NOTIFY_LEADER);
            } else {
                resign.countDown();
                selector.close();
                if (hadTerm.get())
                    termOver.await(10, TimeUnit.SECONDS);
            }
            client.close();
        }
    }

    static final Map<String, Member> members = new ConcurrentHashMap<>();

    /** A non-participant that polls Curator's getLeader(). */
    static final class Observer extends Thread {
        final CuratorFramework client;
        final boolean isLatch;
        final String path;
        final List<String> seen = new ArrayList<>();
        volatile boolean stop;

        Observer(CuratorFramework client, boolean isLatch, String path) {
            this.client = client;
            this.isLatch = isLatch;
            this.path = path;
            setDaemon(true);
        }

        public void run() {
            String last = null;
            while (!stop) {
                try {
                    String now = leaderOf(client, isLatch, path);
                    if (!now.equals(last)) {
                        synchronized (seen) {
                            seen.add(now);
                        }
                        last = now;
                    }
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    // the path may not exist yet: look again
                }
            }
        }
    }

    static final Map<String, Observer> observers = new ConcurrentHashMap<>();

    static Collection<Participant> participantsOf(CuratorFramework c, boolean isLatch, String path) throws Exception {
        // an election object that is never started reads the path as Curator does
        if (isLatch)
            return new LeaderLatch(c, path).getParticipants();
        return new LeaderSelector(c, path, new LeaderSelectorListener() {
            public void takeLeadership(CuratorFramework cf) {}
            public void stateChanged(CuratorFramework cf, ConnectionState s) {}
        }).getParticipants();
    }

    static String leaderOf(CuratorFramework c, boolean isLatch, String path) throws Exception {
        Participant p;
        if (isLatch) {
            p = new LeaderLatch(c, path).getLeader();
        } else {
            p = new LeaderSelector(c, path, new LeaderSelectorListener() {
                public void takeLeadership(CuratorFramework cf) {}
                public void stateChanged(CuratorFramework cf, ConnectionState s) {}
            }).getLeader();
        }
        return p.isLeader() ? p.getId() : "-";
    }

    static boolean kind(String k) {
        if (k.equals("latch"))
            return true;
        if (k.equals("selector"))
            return false;
        throw new IllegalArgumentException("kind " + k);
    }

    static Member member(String name) {
        Member m = members.get(name);
        if (m == null)
            throw new IllegalArgumentException("no participant " + name);
        return m;
    }

    static String handle(CuratorFramework main, String[] w) throws Exception {
        switch (w[0]) {
        case "latch": { // latch NAME PATH ID [HOSTS]
            Member m = new Member(w[1], w.length > 4 ? w[4] : null);
            m.latch = new LeaderLatch(m.client, w[2], w[3], LeaderLatch.CloseMode.NOTIFY_LEADER);
            m.latch.addListener(new LeaderLatchListener() {
                public void isLeader() { m.begin(); }
                public void notLeader() { m.end("end"); }
            });
            m.client.getConnectionStateListenable().addListener((cf, s) -> {
                if (s == ConnectionState.SUSPENDED || s == ConnectionState.LOST)
                    m.end("doubt");
            });
            members.put(w[1], m);
            m.latch.start();
            return "STARTED";
        }
        case "selector": { // selector NAME PATH ID [HOSTS]
            Member m = new Member(w[1], w.length > 4 ? w[4] : null);
            m.selector = new LeaderSelector(m.client, w[2], new LeaderSelectorListener() {
                public void takeLeadership(CuratorFramework cf) {
                    m.hadTerm.set(true);
                    m.begin();
                    try {
                        m.resign.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        m.end("end"); // before Curator releases the mutex
                        m.termOver.countDown();
                    }
                }
                public void stateChanged(CuratorFramework cf, ConnectionState s) {
                    if (s == ConnectionState.SUSPENDED || s == ConnectionState.LOST) {
                        m.end("doubt"); // Curator's advice: give up leadership
                        m.selector.interruptLeadership();
                    }
                }
            });
            m.selector.setId(w[3]);
            members.put(w[1], m);
            m.selector.start();
            return "STARTED";
        }
        case "await": { // await NAME MS
            Member m = member(w[1]);
            long end = System.currentTimeMillis() + Long.parseLong(w[2]);
            if (m.latch != null)
                return m.latch.await(Long.parseLong(w[2]), TimeUnit.MILLISECONDS) ? "LEADER" : "NOT";
            while (!m.selector.hasLeadership() && System.currentTimeMillis() < end)
                Thread.sleep(5);
            return m.selector.hasLeadership() ? "LEADER" : "NOT";
        }
        case "leads": {
            Member m = member(w[1]);
            boolean l = m.latch != null ? m.latch.hasLeadership() : m.selector.hasLeadership();
            return l ? "YES" : "NO";
        }
        case "resign": {
            Member m = member(w[1]);
            if (m.selector == null || !m.leading.get())
                return "NOT";
            m.end("end");
            m.resign.countDown();
            return m.termOver.await(10, TimeUnit.SECONDS) ? "OK" : "ERROR term did not end";
        }
        case "close": {
            Member m = members.remove(w[1]);
            if (m == null)
                return "ERROR no participant " + w[1];
            m.close();
            return "CLOSED";
        }
        case "participants": { // participants KIND PATH
            List<String> out = new ArrayList<>();
            for (Participant p : participantsOf(main, kind(w[1]), w[2]))
                out.add(p.getId() + (p.isLeader() ? "*" : ""));
            return out.isEmpty() ? "-" : String.join(" ", out);
        }
        case "leader":
            return leaderOf(main, kind(w[1]), w[2]);
        case "observe": { // observe NAME KIND PATH
            Observer o = new Observer(newClient(), kind(w[2]), w[3]);
            observers.put(w[1], o);
            o.start();
            return "STARTED";
        }
        case "observed": {
            Observer o = observers.get(w[1]);
            synchronized (o.seen) {
                return o.seen.isEmpty() ? "" : String.join(" ", o.seen);
            }
        }
        case "ournode": {
            Member m = member(w[1]);
            String p = m.latch != null ? m.latch.getOurPath() : null;
            return p == null ? "-" : p;
        }
        case "events":
            synchronized (events) {
                String s = "EVENTS " + events.size() + (events.isEmpty() ? "" : " " + String.join(" ", events));
                events.clear();
                return s;
            }
        case "now":
            return Long.toString(System.nanoTime());
        default:
            return "ERROR unknown command " + w[0];
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorPeer.serve(args[0], LeaderPeer::handle, () -> {
            for (Observer o : observers.values())
                o.stop = true;
            for (Member m : members.values()) {
                try {
                    m.close();
                } catch (Exception e) {
                    // leaving anyway
                }
            }
        });
    }
}
