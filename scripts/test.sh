#!/usr/bin/env bash
# The whole test suite: install what is needed, build with -Werror, run
# every CUnit program against its own throwaway ZooKeeper server
# (make check), then install into a temporary prefix and build a program
# outside the tree against it with pkg-config.
#
#   bash scripts/test.sh             the suite
#   ZKR_VALGRIND=1 bash scripts/test.sh   the same suite under valgrind
set -uo pipefail
cd "$(dirname "$0")/.."
# Curator interop tests need a JDK and Debian's Curator jars; the manual's
# test (tests/test_docs.sh) needs groff and man; the ABI test (tests/test_abi.sh)
# needs abidw and abidiff.
extra="default-jdk-headless libcurator-recipes-java libcurator-discovery-java groff-base man-db abigail-tools"
[ "${ZKR_VALGRIND:-0}" = 1 ] && extra="$extra valgrind"
ZKR_DEPS_EXTRA="$extra" bash scripts/deps.sh || exit 1
bash scripts/build.sh || exit 1

status=0
# no result of an earlier run may stand in for this one's (scripts/summary.sh)
rm -f tests/test_*.log tests/test_*.trs
make -j2 check ZKR_VALGRIND="${ZKR_VALGRIND:-0}" >make-check.out 2>&1 || status=1
# Show what every test program printed, CUnit summaries included.
for log in tests/test_*.log; do
    echo "---------------- $log"
    cat "$log"
done
grep -E '^(PASS|FAIL|ERROR|XFAIL|XPASS|SKIP):' make-check.out || tail -40 make-check.out

if [ $status = 0 ]; then
    echo "---------------- install and build a program against it with pkg-config"
    prefix=$(mktemp -d "${TMPDIR:-/tmp}/zkr-prefix.XXXXXX")
    if make install prefix="$prefix" >/dev/null && bash tests/pkgconfig-check.sh "$prefix"; then
        echo "pkg-config check: ok"
    else
        echo "pkg-config check: FAILED"
        status=1
    fi
    rm -rf "$prefix"
fi

bash scripts/summary.sh
exit $status
