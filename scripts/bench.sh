#!/usr/bin/env bash
# The benchmark suite: zkrecipes against its peers, in one run, against one
# throwaway ZooKeeper server (and a throwaway Redis server):
#   - the raw ZooKeeper C client floor (create+delete; create+list+delete),
#   - Apache Curator 5.4 (Java, Debian's jars, compiled at run time; one JVM
#     for the whole run, JIT warmed up on every scenario before timing),
#   - Kazoo 2.8 (Debian's python3-kazoo, /usr/bin/python3), where Kazoo has
#     the recipe,
#   - a Redis lock (SET NX PX + Lua compare-and-delete; needs hiredis at
#     configure time, else that peer is skipped).
# Every round runs every scenario once per implementation, interleaved; the
# table gives medians of per-round ratios.  Figures only: nothing here
# passes or fails on speed.
#
#   bash scripts/bench.sh [--rounds N] [--seconds S] [--server harness|default]
#                         [--scenarios a,b,...] [--quick] [--out FILE] [--base DIR]
#
#   --server harness  (default) the test harness's server: C1-only JVM,
#                     serial GC, tickTime 500
#   --server default  the JVM's default flags, tickTime 2000
#   --quick           a smoke run: 1 round of 1 s, 100 waiters, 500 held locks
#   --base DIR        also run zkrecipes as built in the tree DIR (another
#                     commit, built there with scripts/build.sh) as a peer in
#                     every scenario: before and after in one run
# Scenarios: uncontended threads64 contended4 contended16 multilock5
# semaphore semaphore16 read4 rw90 waiters async8 loop64 heap cpu, and the
# leader election's latch10 selector10 latchjoin100 selectorjoin100 ("leader":
# those four) (default: all).  The caches, against Curator's TreeCache and
# CuratorCache, are NOT in "all" (about 2 more minutes at the default rounds):
# name them, or "cache" for the four: cacheload10k (initial load of a
# 10,000-node tree), cachelatency (change to event), cachewatches (server
# watches per cached node), cacheresync (after a reconnection through a
# proxy that cuts the connection; the session is kept), e.g.
#   bash scripts/bench.sh --scenarios cache
#   bash scripts/bench.sh --rounds 3 --seconds 3 --scenarios cacheload10k,cachelatency,cachewatches,cacheresync
# The counters are NOT in "all" either: atomic4 (4 sessions incrementing one
# DistributedAtomicLong) and count4 (4 sessions in SharedCount trySetCount
# loops), or "counter" for both:
#   bash scripts/bench.sh --scenarios counter
# Service discovery, against Curator's ServiceDiscovery, is not in "all"
# either: register (one registration until the server confirmed it) and
# query100 (a query of 100 instances), or "discovery" for both, e.g.
#   bash scripts/bench.sh --scenarios discovery
# Writes the markdown table to stdout and to FILE (default bench-results.md).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

rounds=3 seconds=5 server=harness scenarios=all out=bench-results.md base=
waiters=1000 heap=10000 cpu_cycles=200
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --base) base=$(cd "$2" && pwd); shift 2 ;;
    --quick) rounds=1 seconds=1 waiters=100 heap=500 cpu_cycles=50; shift ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $server in
harness) label="A: the test harness's server (C1-only JVM, serial GC, -Xmx256m, tickTime 500)" ;;
default) label="B: a server with the JVM's default flags, tickTime 2000"
         export ZKR_ZK_JVM=default ZKR_ZK_TICK_MS=2000 ;;
*) echo "bench.sh: --server harness|default" >&2; exit 2 ;;
esac

ZKR_DEPS_EXTRA="${ZKR_DEPS_EXTRA:-} redis-server libhiredis-dev python3-kazoo default-jdk-headless libcurator-recipes-java libcurator-discovery-java valgrind" \
    bash scripts/deps.sh
bash scripts/build.sh >/dev/null
base_args=()
if [ -n "$base" ]; then
    [ -x "$base/tests/bench/zkr_bench" ] || { echo "bench.sh: no $base/tests/bench/zkr_bench (build it there first)" >&2; exit 2; }
    base_args=(--base-driver "$base/tests/bench/zkr_bench" \
               --base-label "$(git -C "$base" log -1 --format=%h 2>/dev/null || basename "$base")")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-bench.XXXXXX")
redis_pid=
cleanup() {
    tests/harness/zkserver.sh kill "$work/zk" >/dev/null 2>&1 || true
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$redis_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tests/harness/zkserver.sh start "$work/zk"
hosts=$(tests/harness/zkserver.sh hosts "$work/zk")

redis=
if command -v redis-server >/dev/null; then
    for _ in $(seq 1 20); do
        port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
        ( exec 3<>"/dev/tcp/127.0.0.1/$port" ) 2>/dev/null && continue
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$work" --logfile "$work/redis.log" --daemonize no </dev/null >/dev/null 2>&1 &
        redis_pid=$!
        for _ in $(seq 1 50); do
            if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then redis=127.0.0.1:$port; break; fi
            kill -0 "$redis_pid" 2>/dev/null || break
            sleep 0.1
        done
        [ -n "$redis" ] && break
        kill -9 "$redis_pid" 2>/dev/null || true
        redis_pid=
    done
    [ -n "$redis" ] || echo "bench.sh: Redis did not start: its rows are skipped" >&2
fi

echo "bench.sh: ZooKeeper $hosts (${label%%:*}), Redis ${redis:-none}, $rounds rounds x $seconds s" >&2
/usr/bin/python3 tests/bench/bench.py --hosts "$hosts" --redis "$redis" \
    --driver "$top/tests/bench/zkr_bench" --builddir "$top" --workdir "$work" \
    --rounds "$rounds" --seconds "$seconds" --scenarios "$scenarios" \
    --waiters "$waiters" --heap "$heap" --cpu-cycles "$cpu_cycles" \
    --server-label "$label" --server-pid "$(cat "$work/zk/pid")" --out "$out" "${base_args[@]}"
