#!/usr/bin/env bash
# Throwaway ZooKeeper servers for tests, from Debian's `zookeeper` package.
#
#   zkserver.sh start   DIR [PORT]  start a standalone server (free loopback
#                                   port unless PORT), data in DIR; waits for ruok
#   zkserver.sh stop    DIR         stop it (TERM, then KILL); keeps its data
#   zkserver.sh kill    DIR         kill -9 at once
#   zkserver.sh restart DIR         stop, then start again on the same port and data
#   zkserver.sh 4lw     DIR WORD    print the answer to a four-letter word
#   zkserver.sh hosts   DIR         print 127.0.0.1:PORT
#   zkserver.sh ensemble-start  DIR [N]  a quorum of N (default 3) servers in
#                                   DIR/s1..sN; each node is then a DIR of its
#                                   own for stop/kill/restart/4lw/hosts
#   zkserver.sh ensemble-hosts  DIR  print the connection string of all nodes
#   zkserver.sh ensemble-leader DIR  print the number K of the leader (DIR/sK)
#   zkserver.sh ensemble-stop   DIR  kill every node
#
# Every wait is bounded.  Only 127.0.0.1 is used.
set -u

ZK_JAR=${ZK_JAR:-/usr/share/java/zookeeper.jar}
# zookeeper.jar's manifest names its own dependencies; slf4j-nop keeps the
# server quiet unless ZKR_ZK_SERVER_LOG=1.
if [ "${ZKR_ZK_SERVER_LOG:-0}" = 1 ] && [ -f /usr/share/java/slf4j-simple.jar ]; then
    ZK_CP="$ZK_JAR:/usr/share/java/slf4j-simple.jar"
else
    ZK_CP="$ZK_JAR:/usr/share/java/slf4j-nop.jar"
fi
JAVA=${JAVA:-java}
TICK_MS=${ZKR_ZK_TICK_MS:-500}
# The tests' JVM: small heap, serial GC, C1 only (starts fast on a busy
# machine).  ZKR_ZK_JVM=default runs the server with the JVM's default flags
# instead (the benchmark's "--server default").
if [ "${ZKR_ZK_JVM:-}" = default ]; then
    JVM_FLAGS=()
else
    JVM_FLAGS=(-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto)
fi

die() { echo "zkserver.sh: $*" >&2; exit 1; }

four() { # port word
    ( exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "%s" "$2" >&3 && timeout 5 cat <&3 ) 2>/dev/null
}

serving() { # port: ruok says imok and the server really serves requests
    [ "$(four "$1" ruok)" = imok ] && four "$1" srvr | grep -q '^Mode:'
}

port_in_use() { ( exec 3<>"/dev/tcp/127.0.0.1/$1" ) 2>/dev/null; }

# Ports are picked below the kernel's ephemeral range when it leaves room
# (Linux: 32768-60999): a port in that range may be taken, between the pick
# and the server's bind, as the local port of any outgoing connection on the
# machine (every client of every test running meanwhile) or by a proxy's
# bind to port 0, and a server that cannot bind exits.
pick_port() {
    local p i lo=20000 span=40000 eph
    eph=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    if [ -n "$eph" ] && [ "$eph" -ge 12000 ] 2>/dev/null; then
        lo=10000 span=$((eph - 10000))
    fi
    for i in $(seq 1 50); do
        p=$(( lo + (RANDOM * 32768 + RANDOM) % span ))
        port_in_use "$p" || { echo "$p"; return 0; }
    done
    return 1
}

write_cfg() { # dir port
    cat > "$1/zoo.cfg" <<CFG
tickTime=$TICK_MS
initLimit=10
syncLimit=5
dataDir=$1/data
clientPort=$2
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
minSessionTimeout=$((TICK_MS * 2))
maxSessionTimeout=60000
maxClientCnxns=0
autopurge.purgeInterval=0
CFG
}

spawn() { # dir: start the JVM described by dir/zoo.cfg and dir/main
    local dir=$1 main=org.apache.zookeeper.server.ZooKeeperServerMain
    [ -f "$dir/main" ] && main=$(cat "$dir/main")
    setsid "$JAVA" ${JVM_FLAGS[@]+"${JVM_FLAGS[@]}"} \
        -Dzookeeper.jmx.log4j.disable=true \
        -cp "$ZK_CP" "$main" "$dir/zoo.cfg" \
        >> "$dir/server.log" 2>&1 < /dev/null &
    echo $! > "$dir/pid"
}

wait_serving() { # dir port seconds
    local i
    for i in $(seq 1 $(( $3 * 10 ))); do
        if serving "$2"; then return 0; fi
        kill -0 "$(cat "$1/pid")" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

launch() { # dir port -> 0 when the server serves
    local dir=$1 port=$2
    mkdir -p "$dir/data"
    [ -f "$dir/main" ] || write_cfg "$dir" "$port"
    echo "$port" > "$dir/port"
    spawn "$dir"
    wait_serving "$dir" "$port" 30
}

# One attempt at an ensemble; on failure says which node failed and how
# (its process exited, e.g. a port taken meanwhile, or it did not serve in
# time), with the end of its log, and kills every node it started.
ensemble_try() { # dir n
    local dir=$1 n=$2 k servers="" used=" " p
    mkdir -p "$dir"
    for k in $(seq 1 "$n"); do
        for role in client peer election; do
            for _ in $(seq 1 20); do
                p=$(pick_port) || return 1
                case $used in *" $p "*) continue ;; esac
                used="$used$p "
                break
            done
            eval "port_${role}_$k=$p"
        done
        eval "servers=\"\$servers server.$k=127.0.0.1:\$port_peer_$k:\$port_election_$k\""
    done
    for k in $(seq 1 "$n"); do
        local nd="$dir/s$k" cp
        eval "cp=\$port_client_$k"
        mkdir -p "$nd/data"
        echo "$k" > "$nd/data/myid"
        write_cfg "$nd" "$cp"
        { echo "cnxTimeout=2000"; for s in $servers; do echo "$s"; done; } >> "$nd/zoo.cfg"
        echo org.apache.zookeeper.server.quorum.QuorumPeerMain > "$nd/main"
        echo "$cp" > "$nd/port"
        spawn "$nd"
    done
    for k in $(seq 1 "$n"); do
        if ! wait_serving "$dir/s$k" "$(cat "$dir/s$k/port")" 60; then
            local how="did not serve within 60 s"
            kill -0 "$(cat "$dir/s$k/pid")" 2>/dev/null || how="exited"
            echo "zkserver.sh: ensemble node s$k (client port $(cat "$dir/s$k/port")) $how;" \
                "ports: $servers; its log ends:" >&2
            tail -n 20 "$dir/s$k/server.log" >&2 2>/dev/null
            for nd in "$dir"/s*/; do stop_server "$nd" KILL; done
            return 1
        fi
    done
}

# A few attempts, each on new ports in fresh directories (bounded: 3 x 60 s
# at most per node).
ensemble_start() { # dir n
    local try
    for try in 1 2 3; do
        [ $try = 1 ] || { rm -rf "$1"/s*; echo "zkserver.sh: ensemble attempt $try" >&2; }
        ensemble_try "$1" "$2" && return 0
    done
    return 1
}

stop_server() { # dir signal
    local dir=$1 sig=$2 pid i
    [ -f "$dir/pid" ] || return 0
    pid=$(cat "$dir/pid")
    kill "-$sig" "$pid" 2>/dev/null
    for i in $(seq 1 100); do  # <= 10 s
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    rm -f "$dir/pid"
}

cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: zkserver.sh start|stop|kill|restart|4lw|hosts DIR [ARG]"
case $cmd in
start)
    [ -f "$ZK_JAR" ] || die "$ZK_JAR not found: install the Debian package zookeeper"
    mkdir -p "$dir" || die "cannot create $dir"
    if [ -n "${3:-}" ]; then
        launch "$dir" "$3" || die "server did not start on port $3 (see $dir/server.log)"
    else
        for try in 1 2 3 4 5; do
            port=$(pick_port) || die "no free port"
            launch "$dir" "$port" && exit 0
            stop_server "$dir" KILL
        done
        die "server did not start (see $dir/server.log)"
    fi
    ;;
stop) stop_server "$dir" TERM ;;
kill) stop_server "$dir" KILL ;;
restart)
    port=$(cat "$dir/port") || die "no server in $dir"
    stop_server "$dir" TERM
    for i in $(seq 1 100); do port_in_use "$port" || break; sleep 0.1; done
    launch "$dir" "$port" || die "server did not restart on port $port"
    ;;
4lw) (four "$(cat "$dir/port")" "${3:?word}") ;;
ensemble-start)
    [ -f "$ZK_JAR" ] || die "$ZK_JAR not found: install the Debian package zookeeper"
    ensemble_start "$dir" "${3:-3}" || die "ensemble did not start (see $dir/s*/server.log)"
    ;;
ensemble-hosts)
    hs=""
    for nd in "$dir"/s*/; do hs="$hs${hs:+,}127.0.0.1:$(cat "$nd/port")"; done
    echo "$hs"
    ;;
ensemble-leader)
    for nd in "$dir"/s*/; do
        if (four "$(cat "$nd/port")" srvr) | grep -q '^Mode: leader'; then
            basename "$nd" | tr -d s; exit 0
        fi
    done
    exit 1
    ;;
ensemble-stop)
    for nd in "$dir"/s*/; do stop_server "$nd" KILL; done
    ;;
hosts) echo "127.0.0.1:$(cat "$dir/port")" ;;
*) die "unknown command $cmd" ;;
esac
