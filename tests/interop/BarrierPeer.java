// A Curator 5.x process for the barrier interop tests (tests/test_barrier_interop.c),
// driven over stdin/stdout (compiled and started by peer.sh: ZKR_PEER_MAIN=BarrierPeer;
// the line loop and the sessions are CuratorPeer's).  Each double barrier member has
// its own CuratorFramework (its own session) and runs its enter and leave in a thread
// of its own, so that the line loop answers while they wait.
// One command per line, one answer line per command.
//
//   member NAME PATH N       a DistributedDoubleBarrier(PATH, N) on a new session -> OK
//   enter NAME MS            start enter(MS ms) in NAME's thread               -> STARTED
//   leave NAME MS            start leave(MS ms) in NAME's thread               -> STARTED
//   await NAME MS            the result of NAME's last enter or leave, waiting up to MS:
//                            DONE true|false | PENDING | ERROR <exception>
//   set PATH                 DistributedBarrier(PATH).setBarrier()             -> OK
//   remove PATH              DistributedBarrier(PATH).removeBarrier()          -> OK
//   wait PATH MS             start waitOnBarrier(MS ms) in a thread            -> STARTED
//   awaitwait PATH MS        its result, waiting up to MS: DONE true|false | PENDING | ERROR ...
//   children PATH            the children, sorted: "CHILDREN n name..."
//   stat PATH                -> "ephemeralOwner dataLength" | NONE
//   quit
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.zookeeper.data.Stat;

public class BarrierPeer {
    static final class Member {
        final CuratorFramework client;
        final DistributedDoubleBarrier barrier;
        final ExecutorService thread = Executors.newSingleThreadExecutor();
        volatile Future<Boolean> last;

        Member(String path, int n) throws Exception {
            client = CuratorPeer.newClient();
            barrier = new DistributedDoubleBarrier(client, path, n);
        }
    }

    static final Map<String, Member> members = new ConcurrentHashMap<>();
    static final Map<String, Future<Boolean>> waits = new ConcurrentHashMap<>();
    static final ExecutorService waiters = Executors.newCachedThreadPool();

    static String result(Future<Boolean> f, long ms) throws InterruptedException {
        if (f == null)
            return "ERROR nothing started";
        try {
            return "DONE " + f.get(ms, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return "PENDING";
        } catch (java.util.concurrent.ExecutionException e) {
            return "ERROR " + e.getCause().toString().replace('\n', ' ');
        }
    }

    static String start(Member m, Callable<Boolean> call) {
        m.last = m.thread.submit(call);
        return "STARTED";
    }

    static String handle(CuratorFramework main, String[] w) throws Exception {
        switch (w[0]) {
        case "member":
            members.put(w[1], new Member(w[2], Integer.parseInt(w[3])));
            return "OK";
        case "enter": {
            Member m = members.get(w[1]);
            long ms = Long.parseLong(w[2]);
            return start(m, () -> m.barrier.enter(ms, TimeUnit.MILLISECONDS));
        }
        case "leave": {
            Member m = members.get(w[1]);
            long ms = Long.parseLong(w[2]);
            return start(m, () -> m.barrier.leave(ms, TimeUnit.MILLISECONDS));
        }
        case "await":
            return result(members.get(w[1]).last, Long.parseLong(w[2]));
        case "set":
            new DistributedBarrier(main, w[1]).setBarrier();
            return "OK";
        case "remove":
            new DistributedBarrier(main, w[1]).removeBarrier();
            return "OK";
        case "wait": {
            long ms = Long.parseLong(w[2]);
            DistributedBarrier b = new DistributedBarrier(main, w[1]);
            waits.put(w[1], waiters.submit(() -> b.waitOnBarrier(ms, TimeUnit.MILLISECONDS)));
            return "STARTED";
        }
        case "awaitwait":
            return result(waits.get(w[1]), Long.parseLong(w[2]));
        case "children": {
            List<String> ch = new ArrayList<>(main.getChildren().forPath(w[1]));
            Collections.sort(ch);
            return "CHILDREN " + ch.size() + (ch.isEmpty() ? "" : " " + String.join(" ", ch));
        }
        case "stat": {
            Stat s = main.checkExists().forPath(w[1]);
            return s == null ? "NONE" : s.getEphemeralOwner() + " " + s.getDataLength();
        }
        default:
            return "ERROR unknown command " + w[0];
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorPeer.serve(args[0], BarrierPeer::handle, () -> {
            for (Member m : members.values()) {
                m.thread.shutdownNow();
                m.client.close();
            }
            waiters.shutdownNow();
        });
    }
}
