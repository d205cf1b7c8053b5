#!/usr/bin/env bash
# Compile (once) and run the Curator peer used by tests/test_interop.c.
#   peer.sh HOSTS
# ZKR_PEER_MAIN=Class ZKR_PEER_SRC=path/Class.java ZKR_PEER_JVM="flags" run
# another peer on the same jars (the benchmark's tests/bench/CuratorBench.java).
# Classes go to $ZKR_INTEROP_CLASSES (default: a directory under
# $ZKR_TEST_ZKDIR or /tmp).  Jars come from Debian's
# libcurator-recipes-java, libcurator-discovery-java (and its Jackson
# jars) and zookeeper packages.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
J=/usr/share/java
jars=(curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava
      slf4j-api slf4j-nop netty-handler netty-transport netty-common netty-buffer
      netty-resolver netty-codec netty-transport-native-epoll netty-transport-native-unix-common
      metrics-core commons-io curator-x-discovery jackson-databind jackson-core jackson-annotations)
cp=""
for j in "${jars[@]}"; do
    if [ -f "$J/$j.jar" ]; then
        cp="$cp${cp:+:}$J/$j.jar"
    elif [ "$j" = curator-recipes ] || [ "$j" = zookeeper ]; then
        echo "peer.sh: $J/$j.jar missing: install libcurator-recipes-java" >&2
        exit 1
    fi
done
[ -f "$J/failureaccess.jar" ] && cp="$cp:$J/failureaccess.jar"
command -v javac >/dev/null || { echo "peer.sh: javac missing: install default-jdk-headless" >&2; exit 1; }
out=${ZKR_INTEROP_CLASSES:-${ZKR_TEST_ZKDIR:-/tmp}/interop-classes}
mkdir -p "$out"
main=${ZKR_PEER_MAIN:-CuratorPeer}
src=${ZKR_PEER_SRC:-$here/CuratorPeer.java}
# -sourcepath: a peer may use another class of its folder (LeaderPeer runs
# on CuratorPeer's line loop); any newer source there compiles again
stale=$([ ! -f "$out/$main.class" ] || find "$(dirname "$src")" -maxdepth 1 -name "*.java" -newer "$out/$main.class")
if [ ! -f "$out/$main.class" ] || [ -n "$stale" ]; then
    javac -nowarn -d "$out" -cp "$cp" -sourcepath "$(dirname "$src")" "$src" >&2
fi
# shellcheck disable=SC2086
exec java ${ZKR_PEER_JVM:--Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1} -cp "$out:$cp" "$main" "$1"
