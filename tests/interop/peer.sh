#!/usr/bin/env bash
# Compile (once) and run the Curator peer used by tests/test_interop.c.
#   peer.sh HOSTS
# Classes go to $ZKR_INTEROP_CLASSES (default: a directory under
# $ZKR_TEST_ZKDIR or /tmp).  Jars come from Debian's
# libcurator-recipes-java and zookeeper packages.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
J=/usr/share/java
jars=(curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava
      slf4j-api slf4j-nop netty-handler netty-transport netty-common netty-buffer
      netty-resolver netty-codec netty-transport-native-epoll netty-transport-native-unix-common
      metrics-core commons-io)
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
if [ ! -f "$out/CuratorPeer.class" ] || [ "$here/CuratorPeer.java" -nt "$out/CuratorPeer.class" ]; then
    javac -nowarn -d "$out" -cp "$cp" "$here/CuratorPeer.java" >&2
fi
exec java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$out:$cp" CuratorPeer "$1"
