#!/usr/bin/env bash
# The demo: install what is needed, build, start a throwaway ZooKeeper on a
# free loopback port, and sell 100 tickets with 30 seller threads, then with
# 3 processes x 10 threads; then 3 processes elect a leader that runs a
# periodic job, stopped past its session once and killed once.  The server
# is always stopped (trap).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh >/dev/null

zkdir=$(mktemp -d "${TMPDIR:-/tmp}/zkr-demo.XXXXXX")
trap 'tests/harness/zkserver.sh kill "$zkdir" >/dev/null 2>&1; rm -rf "$zkdir"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
tests/harness/zkserver.sh start "$zkdir"
hosts=$(tests/harness/zkserver.sh hosts "$zkdir")
echo "== ZooKeeper on $hosts"

echo "== 100 tickets, 30 seller threads in one process"
./examples/ticket_seller "$hosts" --threads 30 --tickets 100
echo
echo "== 100 tickets, 3 processes x 10 seller threads"
./examples/ticket_seller "$hosts" --procs 3 --threads 10 --tickets 100
echo
echo "== a periodic job run by the leader of 3 processes; the leader stopped once, killed once"
./examples/leader_scheduler "$hosts" --procs 3 --slots 30
