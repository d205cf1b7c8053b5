#!/usr/bin/env bash
# Peer benchmark, in one run against one throwaway server: an uncontended
# mutex acquire+release cycle, zkrecipes (C) against Apache Curator 5.4
# (Java, Debian's jars), interleaved, RUNS times each; prints the medians
# and their ratio.  Figures only: nothing here passes or fails on speed.
#   bash scripts/bench.sh [CYCLES] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
cycles=${1:-500}
runs=${2:-5}
ZKR_DEPS_EXTRA="default-jdk-headless libcurator-recipes-java" bash scripts/deps.sh
bash scripts/build.sh >/dev/null
zkdir=$(mktemp -d "${TMPDIR:-/tmp}/zkr-bench.XXXXXX")
trap 'tests/harness/zkserver.sh kill "$zkdir" >/dev/null 2>&1; rm -rf "$zkdir"' EXIT
tests/harness/zkserver.sh start "$zkdir"
hosts=$(tests/harness/zkserver.sh hosts "$zkdir")
c=(); j=()
for r in $(seq 1 "$runs"); do
    c+=("$(./tests/bench/bench_mutex "$hosts" "$cycles" 1 | awk '/uncontended/ {print $5}')")
    j+=("$(printf 'bench /zkr-bench/curator %s\nquit\n' "$cycles" |
           ZKR_TEST_ZKDIR="$zkdir" bash tests/interop/peer.sh "$hosts" | sed -n 2p)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cm=$(median "${c[@]}"); jm=$(median "${j[@]}")
echo "uncontended acquire+release, $runs runs x $cycles cycles, same server:"
echo "  zkrecipes: ${c[*]} ms/cycle -> median $cm"
echo "  Curator:   ${j[*]} ms/cycle -> median $jm"
awk -v c="$cm" -v j="$jm" 'BEGIN {printf "  Curator / zkrecipes = %.2f\n", j / c}'
