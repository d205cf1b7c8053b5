// A Curator 5.x process for the service discovery interop tests
// (tests/test_discovery_interop.c): curator-x-discovery's ServiceDiscovery
// (the default JsonInstanceSerializer, a Map payload), ServiceCache and
// ServiceProvider, driven over stdin/stdout (compiled and started by
// peer.sh: ZKR_PEER_MAIN=DiscoveryPeer; the line loop and the session are
// CuratorPeer's).  One command per line, one answer line per command.
//
// An instance is given as the words  NAME ID ADDRESS PORT SSLPORT TYPE URISPEC PAYLOAD
// ("-" for null; URISPEC in UriSpec's template form, "{scheme}://h:{port}";
// PAYLOAD a Map of strings, "k=v,k2=v2").  It is described, in every
// answer, as  id;name;address;port;sslPort;type;enabled;payload;uriSpec;time
// (null as "-", the payload's keys sorted, as the C test describes its own).
//
//   discovery BASE               a ServiceDiscovery on BASE, started   -> OK
//   register BASE <instance>     registerService                        -> OK
//   update BASE <instance>       updateService                          -> OK
//   unregister BASE ID           unregisterService                      -> OK
//   close BASE                   the discovery closed                   -> OK
//   names BASE                   queryForNames, sorted                  -> NAMES a b ... | NAMES -
//   query BASE NAME              queryForInstances, by id               -> INSTANCES desc | desc ... | INSTANCES -
//   get BASE NAME ID             queryForInstance                       -> desc | NONE
//   cache BASE NAME              a ServiceCache, started (initialized)  -> OK
//   cached BASE NAME             its getInstances, by id                -> INSTANCES ...
//   changes BASE NAME            how many cacheChanged it was told      -> CHANGES n
//   provider BASE NAME STRATEGY  a ServiceProvider (roundrobin, random, sticky), started -> OK
//   pick BASE NAME               its getInstance                        -> desc | NONE
//   quit
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceInstanceBuilder;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.curator.x.discovery.strategies.RandomStrategy;
import org.apache.curator.x.discovery.strategies.RoundRobinStrategy;
import org.apache.curator.x.discovery.strategies.StickyStrategy;

@SuppressWarnings({"rawtypes", "unchecked"})
public class DiscoveryPeer {
    static final Map<String, ServiceDiscovery<Map>> discoveries = new ConcurrentHashMap<>();
    static final Map<String, ServiceInstance<Map>> registered = new ConcurrentHashMap<>();
    static final Map<String, ServiceCache<Map>> caches = new ConcurrentHashMap<>();
    static final Map<String, AtomicInteger> changes = new ConcurrentHashMap<>();
    static final Map<String, ServiceProvider<Map>> providers = new ConcurrentHashMap<>();

    static String orNull(String s) {
        return s.equals("-") ? null : s;
    }

    static ServiceInstance<Map> instance(String[] w, int at) throws Exception {
        Map<String, Object> payload = null;
        if (!w[at + 7].equals("-")) {
            payload = new LinkedHashMap<>();
            for (String kv : w[at + 7].split(",")) {
                String[] p = kv.split("=", 2);
                payload.put(p[0], p.length > 1 ? p[1] : "");
            }
        }
        ServiceInstanceBuilder<Map> b = ServiceInstance.<Map>builder()
                .name(w[at])
                .id(w[at + 1])
                .address(orNull(w[at + 2]))
                .serviceType(ServiceType.valueOf(w[at + 5]))
                .uriSpec(w[at + 6].equals("-") ? null : new UriSpec(w[at + 6]))
                .payload(payload);
        if (!w[at + 3].equals("-")) // (the builder's ports are ints: null is not setting them)
            b.port(Integer.parseInt(w[at + 3]));
        if (!w[at + 4].equals("-"))
            b.sslPort(Integer.parseInt(w[at + 4]));
        return b.build();
    }

    static String uri(UriSpec spec) {
        if (spec == null)
            return "-";
        StringBuilder b = new StringBuilder();
        for (UriSpec.Part p : spec.getParts())
            b.append(p.isVariable() ? "{" + p.getValue() + "}" : p.getValue());
        return b.toString();
    }

    static String payload(Object p) {
        if (p == null)
            return "-";
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, Object> e : new TreeMap<String, Object>((Map<String, Object>)p).entrySet())
            b.append(b.length() > 0 ? "," : "").append(e.getKey()).append('=').append(e.getValue());
        return b.toString();
    }

    static String str(Object o) {
        return o == null ? "-" : o.toString();
    }

    static String describe(ServiceInstance<Map> i) {
        if (i == null)
            return "NONE";
        return i.getId() + ";" + i.getName() + ";" + str(i.getAddress()) + ";" + str(i.getPort()) + ";"
                + str(i.getSslPort()) + ";" + i.getServiceType() + ";" + i.isEnabled() + ";" + payload(i.getPayload())
                + ";" + uri(i.getUriSpec()) + ";" + i.getRegistrationTimeUTC();
    }

    static String describeAll(Collection<ServiceInstance<Map>> all) {
        List<ServiceInstance<Map>> v = new ArrayList<>(all);
        v.sort(Comparator.comparing(ServiceInstance::getId));
        List<String> out = new ArrayList<>();
        for (ServiceInstance<Map> i : v)
            out.add(describe(i));
        return "INSTANCES " + (out.isEmpty() ? "-" : String.join(" | ", out));
    }

    static ServiceDiscovery<Map> disc(String base) {
        ServiceDiscovery<Map> d = discoveries.get(base);
        if (d == null)
            throw new IllegalStateException("no discovery on " + base);
        return d;
    }

    static String handle(CuratorFramework main, String[] w) throws Exception {
        switch (w[0]) {
        case "discovery": {
            ServiceDiscovery<Map> d = ServiceDiscoveryBuilder.builder(Map.class).client(main).basePath(w[1]).build();
            d.start();
            discoveries.put(w[1], d);
            return "OK";
        }
        case "register": {
            ServiceInstance<Map> i = instance(w, 2);
            disc(w[1]).registerService(i);
            registered.put(w[1] + " " + i.getId(), i);
            return "OK";
        }
        case "update": {
            ServiceInstance<Map> i = instance(w, 2);
            disc(w[1]).updateService(i);
            registered.put(w[1] + " " + i.getId(), i);
            return "OK";
        }
        case "unregister": {
            ServiceInstance<Map> i = registered.remove(w[1] + " " + w[2]);
            if (i == null)
                return "ERROR not registered";
            disc(w[1]).unregisterService(i);
            return "OK";
        }
        case "close": {
            ServiceDiscovery<Map> d = discoveries.remove(w[1]);
            if (d != null)
                d.close();
            return "OK";
        }
        case "names": {
            List<String> n = new ArrayList<>(disc(w[1]).queryForNames());
            n.sort(null);
            return "NAMES " + (n.isEmpty() ? "-" : String.join(" ", n));
        }
        case "query":
            return describeAll(disc(w[1]).queryForInstances(w[2]));
        case "get":
            return describe(disc(w[1]).queryForInstance(w[2], w[3]));
        case "cache": {
            ServiceCache<Map> c = disc(w[1]).serviceCacheBuilder().name(w[2]).build();
            AtomicInteger n = new AtomicInteger();
            c.addListener(new ServiceCacheListener() {
                @Override
                public void cacheChanged() {
                    n.incrementAndGet();
                }

                @Override
                public void stateChanged(CuratorFramework client, ConnectionState newState) {
                }
            });
            c.start();
            caches.put(w[1] + " " + w[2], c);
            changes.put(w[1] + " " + w[2], n);
            return "OK";
        }
        case "cached":
            return describeAll(caches.get(w[1] + " " + w[2]).getInstances());
        case "changes":
            return "CHANGES " + changes.get(w[1] + " " + w[2]).get();
        case "provider": {
            ServiceProvider<Map> p = disc(w[1]).serviceProviderBuilder().serviceName(w[2])
                    .providerStrategy(w[3].equals("random")   ? new RandomStrategy<Map>()
                                      : w[3].equals("sticky") ? new StickyStrategy<Map>(new RoundRobinStrategy<Map>())
                                                              : new RoundRobinStrategy<Map>())
                    .build();
            p.start();
            providers.put(w[1] + " " + w[2], p);
            return "OK";
        }
        case "pick":
            return describe(providers.get(w[1] + " " + w[2]).getInstance());
        default:
            return "ERROR unknown command " + w[0];
        }
    }

    public static void main(String[] args) throws Exception {
        CuratorPeer.serve(args[0], DiscoveryPeer::handle, () -> {
            try {
                for (ServiceProvider<Map> p : providers.values())
                    p.close();
                for (ServiceCache<Map> c : caches.values())
                    c.close();
                for (ServiceDiscovery<Map> d : discoveries.values())
                    d.close();
            } catch (Exception e) {
                // quitting
            }
        });
    }
}
