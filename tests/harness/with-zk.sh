#!/usr/bin/env bash
# Run one test program against its own throwaway ZooKeeper server, always
# stopping the server afterwards (trap on every exit path).  Used by
# `make check` as the LOG_COMPILER; ZKR_VALGRIND=1 runs the program under
# valgrind's memcheck (errors and definite leaks fail the test).
set -u
here=$(cd "$(dirname "$0")" && pwd)
prog=$1; shift

case $(basename "$prog") in
test_util*|test_units*|test_docs*|test_layers*|test_fuzz_corpus*) needs_server=0 ;;
*) needs_server=1 ;;
esac

# A test script (tests/test_docs.sh) runs as it is, never under valgrind.
case $prog in
*.sh) exec bash "$prog" "$@" ;;
esac

run() {
    if [ "${ZKR_VALGRIND:-0}" = 1 ]; then
        # An uninstalled libtool program is a wrapper script: run valgrind
        # through libtool, or it checks the shell and not the program.
        local lt=
        if head -c 2 "$prog" 2>/dev/null | grep -q '^#!' && [ -x "$(dirname "$prog")/../libtool" ]; then
            lt="$(dirname "$prog")/../libtool --mode=execute"
        fi
        $lt valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
            --errors-for-leak-kinds=definite --track-origins=yes \
            --suppressions="$here/../valgrind.supp" "$prog" "$@"
    else
        "$prog" "$@"
    fi
}

if [ $needs_server = 0 ]; then
    run "$@"
    exit $?
fi

ZKR_TEST_ZKDIR=$(mktemp -d "${TMPDIR:-/tmp}/zkr-test.XXXXXX")
export ZKR_TEST_ZKDIR
cleanup() {
    "$here/zkserver.sh" kill "$ZKR_TEST_ZKDIR" >/dev/null 2>&1
    # servers started by fault tests (ensembles) live in sub-directories
    find "$ZKR_TEST_ZKDIR" -name pid -type f 2>/dev/null | while read -r pf; do
        "$here/zkserver.sh" kill "$(dirname "$pf")" >/dev/null 2>&1
    done
    rm -rf "$ZKR_TEST_ZKDIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$here/zkserver.sh" start "$ZKR_TEST_ZKDIR" || { cat "$ZKR_TEST_ZKDIR/server.log" >&2; exit 1; }
ZKR_TEST_HOSTS=$("$here/zkserver.sh" hosts "$ZKR_TEST_ZKDIR")
ZKR_HARNESS="$here/zkserver.sh"
export ZKR_TEST_HOSTS ZKR_HARNESS
echo "zookeeper: $ZKR_TEST_HOSTS (data $ZKR_TEST_ZKDIR)"
run "$@"
