// A Curator 5.x process for the cache interop tests (tests/test_cache_interop.c),
// driven over stdin/stdout (compiled and started by peer.sh: ZKR_PEER_MAIN=CachePeer;
// the line loop and the session are CuratorPeer's).  Curator writes, or
// Curator's TreeCache reads, while a C zkr_cache_t watches the same path.
// One command per line, one answer line per command (dump: the answer line,
// then the lines it announces).
//
//   random PATH SEED N DEPTH PAUSE_US   N random writes under PATH (a tree of
//                               depth up to DEPTH below it): creates, setData
//                               (some with the same data), deletes of leaves,
//                               of subtrees (deletingChildrenIfNeeded), a node
//                               deleted and created again with the same data
//                               (two requests, or one transaction), rarely PATH
//                               itself deleted with everything below and created
//                               again; a pause of up to PAUSE_US between them
//       -> DONE ops creates sets samesets deletes subtrees recreates txrecreates roots
//   nodeops PATH SEED N PAUSE_US  N random writes on PATH alone: create, setData,
//                               delete, delete+create with the same data
//       -> DONE ops creates sets deletes recreates txrecreates
//   create PATH TEXT            create with data TEXT ("-": empty)  -> OK czxid mzxid version
//   set PATH TEXT               setData                             -> OK czxid mzxid version
//   delete PATH                 delete                              -> OK
//   rmr PATH                    delete().deletingChildrenIfNeeded() -> OK
//   recreate PATH               delete, then create with the same data (two requests)
//                                                                   -> OK oldczxid czxid mzxid version
//   txrecreate PATH             the same in one transaction         -> OK oldczxid czxid mzxid version
//   stat PATH                   -> czxid mzxid version datalen | NONE
//   treecache NAME PATH         a TreeCache (with data) on PATH, started, until INITIALIZED
//                                                                   -> STARTED
//   dump NAME                   its getCurrentData/getCurrentChildren tree, parents
//                               first, siblings by name: "TREE n", then n lines
//                               "path czxid mzxid datalen crc32"
//   closecache NAME             -> CLOSED
//   quit
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.cache.TreeCacheEvent;
import org.apache.zookeeper.data.Stat;

public class CachePeer {
    static final Map<String, TreeCache> caches = new ConcurrentHashMap<>();

    static byte[] text(String s) {
        return s.equals("-") ? new byte[0] : s.getBytes(StandardCharsets.UTF_8);
    }

    static byte[] randomData(Random r, int i) {
        int k = r.nextInt(10);
        if (k == 0)
            return new byte[0];
        if (k <= 3) { // binary, NUL bytes included; now and then a few KB
            byte[] b = new byte[k == 3 ? 1000 + r.nextInt(3000) : 1 + r.nextInt(40)];
            r.nextBytes(b);
            return b;
        }
        return ("v" + i + "-" + r.nextInt(1000)).getBytes(StandardCharsets.US_ASCII);
    }

    static String statLine(Stat s) {
        return s.getCzxid() + " " + s.getMzxid() + " " + s.getVersion();
    }

    static Stat stat(CuratorFramework c, String p) throws Exception {
        Stat s = c.checkExists().forPath(p);
        if (s == null)
            throw new IllegalStateException("no node " + p);
        return s;
    }

    /** delete + create with the same data; returns the old czxid. */
    static long recreate(CuratorFramework c, String p, boolean inOne) throws Exception {
        Stat old = new Stat();
        byte[] data = c.getData().storingStatIn(old).forPath(p);
        if (data == null)
            data = new byte[0];
        if (inOne) {
            CuratorOp del = c.transactionOp().delete().forPath(p);
            CuratorOp cre = c.transactionOp().create().forPath(p, data);
            c.transaction().forOperations(del, cre);
        } else {
            c.delete().forPath(p);
            c.create().forPath(p, data);
        }
        return old.getCzxid();
    }

    static void readTree(CuratorFramework c, String p, TreeSet<String> into) throws Exception {
        if (c.checkExists().forPath(p) == null)
            return;
        into.add(p);
        for (String ch : c.getChildren().forPath(p))
            readTree(c, p + "/" + ch, into);
    }

    static int depth(String root, String p) {
        int d = 0;
        for (int i = root.length(); i < p.length(); i++)
            if (p.charAt(i) == '/')
                d++;
        return d;
    }

    static boolean hasChildren(TreeSet<String> nodes, String p) {
        String next = nodes.higher(p);
        return next != null && next.startsWith(p + "/");
    }

    static void removeSubtree(TreeSet<String> nodes, String p) {
        nodes.remove(p);
        nodes.subSet(p + "/", p + "0").clear(); // '0' follows '/'
    }

    static void pause(Random r, int us) throws InterruptedException {
        if (us > 0) {
            int n = r.nextInt(us + 1);
            Thread.sleep(n / 1000, (n % 1000) * 1000);
        }
    }

    static String random(CuratorFramework c, String root, long seed, int n, int maxDepth, int pauseUs)
            throws Exception {
        Random r = new Random(seed);
        TreeSet<String> nodes = new TreeSet<>();
        readTree(c, root, nodes);
        int creates = 0, sets = 0, same = 0, deletes = 0, subtrees = 0, recreates = 0, tx = 0, roots = 0;
        for (int i = 0; i < n; i++) {
            pause(r, pauseUs);
            if (!nodes.contains(root)) {
                c.create().forPath(root, randomData(r, i));
                nodes.add(root);
                creates++;
                continue;
            }
            List<String> list = new ArrayList<>(nodes);
            String p = list.get(r.nextInt(list.size()));
            int d = depth(root, p);
            boolean isRoot = p.equals(root), leaf = !hasChildren(nodes, p);
            int dice = r.nextInt(100);
            if (dice < 45 && d < maxDepth) {
                String ch = p + "/n" + r.nextInt(6);
                if (!nodes.contains(ch)) {
                    c.create().forPath(ch, randomData(r, i));
                    nodes.add(ch);
                    creates++;
                    continue;
                }
                p = ch;
            }
            if (dice < 62 || (dice < 75 && (isRoot || !leaf)) || (dice >= 75 && dice < 85 && isRoot)
                    || (dice >= 85 && dice < 98 && !leaf) || (dice >= 98 && r.nextInt(4) != 0)) {
                if (r.nextInt(4) == 0) { // the same data again: mzxid moves, nothing else
                    c.setData().forPath(p, c.getData().forPath(p));
                    same++;
                } else {
                    c.setData().forPath(p, randomData(r, i));
                }
                sets++;
            } else if (dice < 75) {
                c.delete().forPath(p);
                nodes.remove(p);
                deletes++;
            } else if (dice < 85) {
                c.delete().deletingChildrenIfNeeded().forPath(p);
                removeSubtree(nodes, p);
                subtrees++;
            } else if (dice < 98) {
                recreate(c, p, dice >= 93);
                if (dice >= 93)
                    tx++;
                else
                    recreates++;
            } else { // the root itself, and back with its data
                byte[] data = c.getData().forPath(root);
                c.delete().deletingChildrenIfNeeded().forPath(root);
                removeSubtree(nodes, root);
                c.create().forPath(root, data);
                nodes.add(root);
                roots++;
            }
        }
        return "DONE " + n + " " + creates + " " + sets + " " + same + " " + deletes + " " + subtrees + " "
                + recreates + " " + tx + " " + roots;
    }

    static String nodeOps(CuratorFramework c, String p, long seed, int n, int pauseUs) throws Exception {
        Random r = new Random(seed);
        int creates = 0, sets = 0, deletes = 0, recreates = 0, tx = 0;
        for (int i = 0; i < n; i++) {
            pause(r, pauseUs);
            boolean exists = c.checkExists().forPath(p) != null;
            int dice = r.nextInt(100);
            if (!exists) {
                c.create().forPath(p, randomData(r, i));
                creates++;
            } else if (dice < 45) {
                c.setData().forPath(p, r.nextInt(4) == 0 ? c.getData().forPath(p) : randomData(r, i));
                sets++;
            } else if (dice < 70) {
                c.delete().deletingChildrenIfNeeded().forPath(p);
                deletes++;
            } else {
                recreate(c, p, dice >= 85);
                if (dice >= 85)
                    tx++;
                else
                    recreates++;
            }
        }
        return "DONE " + n + " " + creates + " " + sets + " " + deletes + " " + recreates + " " + tx;
    }

    static void dump(TreeCache tc, String p, List<String> out) {
        ChildData d = tc.getCurrentData(p);
        if (d == null)
            return;
        byte[] b = d.getData() == null ? new byte[0] : d.getData();
        CRC32 crc = new CRC32();
        crc.update(b);
        Stat s = d.getStat();
        out.add(p + " " + s.getCzxid() + " " + s.getMzxid() + " " + b.length + " " + crc.getValue());
        Map<String, ChildData> ch = tc.getCurrentChildren(p);
        if (ch == null)
            return;
        for (String name : new TreeMap<>(ch).keySet()) // names are ASCII: String order is byte order
            dump(tc, p + "/" + name, out);
    }

    static final Map<String, String> cachePaths = new ConcurrentHashMap<>();

    static String handle(CuratorFramework main, String[] w) throws Exception {
        switch (w[0]) {
        case "random":
            return random(main, w[1], Long.parseLong(w[2]), Integer.parseInt(w[3]), Integer.parseInt(w[4]),
                    Integer.parseInt(w[5]));
        case "nodeops":
            return nodeOps(main, w[1], Long.parseLong(w[2]), Integer.parseInt(w[3]), Integer.parseInt(w[4]));
        case "create":
            main.create().forPath(w[1], text(w[2]));
            return "OK " + statLine(stat(main, w[1]));
        case "set":
            return "OK " + statLine(main.setData().forPath(w[1], text(w[2])));
        case "delete":
            main.delete().forPath(w[1]);
            return "OK";
        case "rmr":
            main.delete().deletingChildrenIfNeeded().forPath(w[1]);
            return "OK";
        case "recreate":
        case "txrecreate": {
            long old = recreate(main, w[1], w[0].equals("txrecreate"));
            return "OK " + old + " " + statLine(stat(main, w[1]));
        }
        case "stat": {
            Stat s = main.checkExists().forPath(w[1]);
            return s == null ? "NONE" : statLine(s) + " " + s.getDataLength();
        }
        case "treecache": { // treecache NAME PATH
            TreeCache tc = TreeCache.newBuilder(main, w[2]).setCacheData(true).build();
            CountDownLatch init = new CountDownLatch(1);
            tc.getListenable().addListener((cf, e) -> {
                if (e.getType() == TreeCacheEvent.Type.INITIALIZED)
                    init.countDown();
            });
            caches.put(w[1], tc);
            cachePaths.put(w[1], w[2]);
            tc.start();
            return init.await(20, TimeUnit.SECONDS) ? "STARTED" : "ERROR not initialized in 20 s";
        }
        case "dump": {
            List<String> out = new ArrayList<>();
            dump(caches.get(w[1]), cachePaths.get(w[1]), out);
            return "TREE " + out.size() + (out.isEmpty() ? "" : "\n" + String.join("\n", out));
        }
        case "closecache": {
            TreeCache tc = caches.remove(w[1]);
            if (tc != null)
                tc.close();
            return "CLOSED";
        }
        default:
            return "ERROR unknown command " + w[0];
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorPeer.serve(args[0], CachePeer::handle, () -> {
            for (TreeCache tc : caches.values())
                tc.close();
        });
    }
}
