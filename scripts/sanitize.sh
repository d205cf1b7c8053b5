#!/usr/bin/env bash
# The test suite built with a sanitizer, in a copy of the tree (the source
# tree's own build is left alone).  Each test program still gets its own
# throwaway ZooKeeper server; any sanitizer report fails the program.
#
#   bash scripts/sanitize.sh [asan|tsan] [TEST ...]
#     asan   AddressSanitizer + UndefinedBehaviorSanitizer (default)
#     tsan   ThreadSanitizer
#     TEST   test programs to run (default: every one), e.g. tests/test_core
set -uo pipefail
cd "$(dirname "$0")/.."
kind=${1:-asan}
shift || true
case $kind in
asan) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined" ;;
tsan) flags="-fsanitize=thread" ;;
*) echo "usage: $0 [asan|tsan] [TEST ...]" >&2; exit 2 ;;
esac
ZKR_DEPS_EXTRA="default-jdk-headless libcurator-recipes-java libcurator-discovery-java" bash scripts/deps.sh || exit 1

top=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-$kind.XXXXXX")
trap 'rm -rf "$work"' EXIT
# the tracked files as they are in the working tree
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$work"
cd "$work" || exit 1
autoreconf -fi >/dev/null 2>&1 || { echo "autoreconf failed" >&2; exit 1; }
./configure --enable-werror --disable-shared CFLAGS="-g -O1 -fno-omit-frame-pointer $flags" \
    LDFLAGS="$flags" >/dev/null || { echo "configure failed" >&2; exit 1; }
make -j2 >/dev/null || { echo "build failed" >&2; exit 1; }

export ZKR_SANITIZER=$kind
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=98"
# the ZooKeeper C client's own records of requests outstanding at close
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=97"
# libzookeeper_mt is not instrumented: its own threads' accesses are
# invisible to TSan; a report names only what our code raced on.
# die_after_fork=0: the tests fork children that open clients (threads)
# after the parent's clients started theirs.
export TSAN_OPTIONS="halt_on_error=0:exitcode=96:second_deadlock_stack=1:die_after_fork=0:suppressions=$(pwd)/tests/tsan.supp"
tests=${*:-}
status=0
if [ -n "$tests" ]; then
    make check TESTS="$tests" >make-check.out 2>&1 || status=1
else
    make check >make-check.out 2>&1 || status=1
fi
for log in tests/test_*.log; do
    echo "---------------- $kind: $log"
    cat "$log"
done
grep -E '^(PASS|FAIL|ERROR):' make-check.out || tail -40 make-check.out
mkdir -p "$top/tests/$kind-logs"
cp tests/test_*.log "$top/tests/$kind-logs/" 2>/dev/null
bash scripts/summary.sh "$kind"   # failed suites and crashed programs counted too
exit $status
