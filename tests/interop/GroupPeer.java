// A Curator 5.x process for the group interop tests (tests/test_group_interop.c),
// driven over stdin/stdout (compiled and started by peer.sh: ZKR_PEER_MAIN=GroupPeer;
// the line loop is CuratorPeer's).  Each member is a Curator GroupMember
// (org.apache.curator.framework.recipes.nodes.GroupMember) with a
// CuratorFramework of its own (its own session), in the same group as C
// zkr_group_t members.  One command per line, one answer line per command.
// A payload is ASCII text without spaces; "-" is the empty payload.
//
//   join NAME PATH ID PAYLOAD   a GroupMember ID of the group at PATH, started -> OK
//   members NAME                its getCurrentMembers(), sorted by id:
//                               -> MEMBERS id=payload id=payload ... ("MEMBERS -" if none)
//   set NAME PAYLOAD            setThisData                          -> OK
//   leave NAME                  close the member and its session     -> OK
//   expire NAME                 end the member's session from outside (a second
//                               handle on it, closed): its node goes, Curator
//                               makes it again on the next session   -> OK
//   pnode NAME PATH MODE PAYLOAD  a PersistentNode (MODE: EPHEMERAL, PERSISTENT,
//                               EPHEMERAL_SEQUENTIAL, PERSISTENT_SEQUENTIAL; the
//                               sequential ones with protection), started and
//                               waited for                          -> OK
//   pnodepath NAME              its getActualPath()                  -> PATH path | NONE
//   closepnode NAME             close it (deletes its node)          -> OK
//   quit
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

public class GroupPeer {
    static final class Member {
        CuratorFramework client;
        GroupMember member;
    }

    static final Map<String, Member> members = new ConcurrentHashMap<>();
    static final Map<String, PersistentNode> pnodes = new ConcurrentHashMap<>();

    static byte[] text(String s) {
        return s.equals("-") ? new byte[0] : s.getBytes(StandardCharsets.US_ASCII);
    }

    static Member get(String name) {
        Member m = members.get(name);
        if (m == null)
            throw new IllegalStateException("no member " + name);
        return m;
    }

    static String membersLine(Member m) {
        Map<String, byte[]> now = new TreeMap<>(m.member.getCurrentMembers()); // ASCII ids: byte order
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, byte[]> e : now.entrySet()) {
            byte[] b = e.getValue() == null ? new byte[0] : e.getValue();
            parts.add(e.getKey() + "=" + new String(b, StandardCharsets.US_ASCII));
        }
        return "MEMBERS " + (parts.isEmpty() ? "-" : String.join(" ", parts));
    }

    static void expire(CuratorFramework c) throws Exception {
        ZooKeeper zk = c.getZookeeperClient().getZooKeeper();
        CountDownLatch up = new CountDownLatch(1);
        Watcher w = e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected)
                up.countDown();
        };
        ZooKeeper other = new ZooKeeper(CuratorPeer.hosts, 10000, w, zk.getSessionId(), zk.getSessionPasswd());
        up.await(10, TimeUnit.SECONDS);
        other.close();
    }

    static String handle(CuratorFramework main, String[] w) throws Exception {
        switch (w[0]) {
        case "join": { // join NAME PATH ID PAYLOAD
            Member m = new Member();
            m.client = CuratorPeer.newClient();
            m.member = new GroupMember(m.client, w[2], w[3], text(w[4]));
            m.member.start();
            members.put(w[1], m);
            return "OK";
        }
        case "members":
            return membersLine(get(w[1]));
        case "set":
            get(w[1]).member.setThisData(text(w[2]));
            return "OK";
        case "leave": {
            Member m = members.remove(w[1]);
            if (m == null)
                return "ERROR no member " + w[1];
            m.member.close();
            m.client.close();
            return "OK";
        }
        case "expire":
            expire(get(w[1]).client);
            return "OK";
        case "pnode": { // pnode NAME PATH MODE PAYLOAD
            CreateMode mode = CreateMode.valueOf(w[3]);
            PersistentNode n = new PersistentNode(main, mode, mode.isSequential(), w[2], text(w[4]));
            n.start();
            if (!n.waitForInitialCreate(20, TimeUnit.SECONDS))
                return "ERROR not created";
            pnodes.put(w[1], n);
            return "OK";
        }
        case "pnodepath": {
            String p = pnodes.get(w[1]).getActualPath();
            return p == null ? "NONE" : "PATH " + p;
        }
        case "closepnode":
            pnodes.remove(w[1]).close();
            return "OK";
        default:
            return "ERROR unknown command " + w[0];
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorPeer.serve(args[0], GroupPeer::handle, () -> {
            for (PersistentNode n : pnodes.values()) {
                try {
                    n.close();
                } catch (Exception e) {
                    // quitting anyway
                }
            }
            for (Member m : members.values()) {
                m.member.close();
                m.client.close();
            }
        });
    }
}
