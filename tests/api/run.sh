#!/usr/bin/env bash
# The API test against an installed root: a program built from outside the
# tree with pkg-config alone, exercising each rule of the conventions
# (<zkr/common.h>, zkrecipes(7) CONVENTIONS) on a throwaway ZooKeeper.
#
#   bash tests/api/run.sh ROOT
#
# ROOT holds usr/include/zkr and usr/lib/<multiarch>/{libzkrecipes.so*,
# pkgconfig/zkrecipes.pc}: the Debian packages unpacked by
# tests/deb-check.sh (which exports PKG_CONFIG_SYSROOT_DIR and
# PKG_CONFIG_LIBDIR for it), or `make install DESTDIR=ROOT prefix=/usr
# libdir=/usr/lib/<multiarch>` of a tree configured with that prefix.
# Without those variables they are set from ROOT.
#
# Steps (each bounded with timeout; the whole well under 3 minutes):
#   1. build tests/api/api_test.c with -std=c11 -Wall -Wextra -Werror
#      against ROOT; it must load ROOT's libzkrecipes.so.2
#   2. start a standalone ZooKeeper (tests/harness/zkserver.sh; stopped by
#      the EXIT trap, whatever happens)
#   3. run it under valgrind: every check passes, no memory error, no
#      definite or indirect leak (the ZooKeeper C client's reachable
#      memory does not count)
#   4. build it again with -fsanitize=address,undefined and run it: every
#      check passes, no report (leaks included)
#   5. tests/api/compile_fail.c: the 1.0 types compile clean (as C and as
#      C++); each call given a callback of the 0.2.0 type fails to compile
#      with the header's message, "zkrecipes 1.0:"
#
# ZKR_API_VERBOSE=1 prints every check (and the library's log lines);
# ZKR_API_KEEP=1 keeps the scratch directory (logs, binaries).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# valgrind and a C++ compiler, on a fresh machine (installs only what is missing)
ZKR_DEPS_EXTRA="${ZKR_DEPS_EXTRA:-} valgrind g++" bash "$top/scripts/deps.sh" ||
    { echo "api: cannot install valgrind and g++ (scripts/deps.sh)" >&2; exit 1; }
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: bash tests/api/run.sh ROOT" >&2; exit 2; }
root=$(cd "$1" && pwd)
SECONDS=0

say() { echo "api: $*"; }
fail_count=0
results=()
result() { # status text
    results+=("$1: $2")
    [ "$1" = ok ] || fail_count=$((fail_count + 1))
    say "$1: $2"
}

# ---- scratch directory, server, and the trap that stops it on every exit path
work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-api.XXXXXX")
zkdir=$work/zk
child=
cleanup() {
    # a step still running (interrupted): its timeout passes the signal on
    if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
        kill -TERM "$child" 2>/dev/null
        wait "$child" 2>/dev/null
    fi
    if [ -f "$zkdir/pid" ]; then
        bash "$top/tests/harness/zkserver.sh" kill "$zkdir" >/dev/null 2>&1
    fi
    if [ "${ZKR_API_KEEP:-0}" = 1 ]; then
        echo "api: kept $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# A long step in the background, waited for: a signal then runs the trap at
# once (bash runs traps only between foreground commands) and the trap ends
# the step.  Returns the step's exit code.
step() {
    "$@" &
    child=$!
    wait "$child"
    local rc=$?
    child=
    return $rc
}

# ---- pkg-config against ROOT
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || true)
if [ -z "${PKG_CONFIG_SYSROOT_DIR:-}" ] || [ -z "${PKG_CONFIG_LIBDIR:-}" ]; then
    export PKG_CONFIG_SYSROOT_DIR=$root
    export PKG_CONFIG_LIBDIR=$root/usr/lib/$multiarch/pkgconfig
fi
if ! cflags=$(pkg-config --cflags zkrecipes) || ! libs=$(pkg-config --libs zkrecipes); then
    say "pkg-config finds no zkrecipes in $PKG_CONFIG_LIBDIR (sysroot $PKG_CONFIG_SYSROOT_DIR)" >&2
    exit 1
fi
# the directory the program is linked with is the one it loads from
libdir=$(pkg-config --libs-only-L zkrecipes | tr ' ' '\n' | sed -n 's/^-L//p' | head -1)
[ -n "$libdir" ] || libdir=$root/usr/lib/$multiarch
say "zkrecipes $(pkg-config --modversion zkrecipes) from $root: $cflags $libs"
CC=${CC:-cc}
CXX=${CXX:-c++}
std_flags=(-std=c11 -Wall -Wextra -Werror)

# ---- 1. build
build() { # output extra-flags...
    local out=$1
    shift
    timeout 60 "$CC" "${std_flags[@]}" -g -O1 "$@" "$here/api_test.c" -o "$out" $cflags $libs -pthread \
        >"$out.build.log" 2>&1
}
if build "$work/api_test"; then
    loaded=$(LD_LIBRARY_PATH=$libdir ldd "$work/api_test" | sed -n 's/.*libzkrecipes\.so[^ ]* => \([^ ]*\).*/\1/p')
    case $loaded in
    "$libdir"/*) result ok "build (pkg-config, ${std_flags[*]}); loads $loaded" ;;
    *) result FAIL "build: the program loads '${loaded:-nothing}', not ROOT's library in $libdir" ;;
    esac
else
    cat "$work/api_test.build.log" >&2
    result FAIL "build (pkg-config, ${std_flags[*]})"
fi

# ---- 2. a throwaway server
hosts=
if step timeout 100 bash "$top/tests/harness/zkserver.sh" start "$zkdir" >"$work/zkserver.log" 2>&1; then
    hosts=$(bash "$top/tests/harness/zkserver.sh" hosts "$zkdir")
    say "ZooKeeper at $hosts"
else
    cat "$work/zkserver.log" >&2
    tail -20 "$zkdir/server.log" >&2 2>/dev/null
    result FAIL "a ZooKeeper server (tests/harness/zkserver.sh start)"
fi

# What a run printed: every check with ZKR_API_VERBOSE=1, else the failed
# ones and the count.
show_run() { # stdout-file
    if [ "${ZKR_API_VERBOSE:-0}" = 1 ]; then
        cat "$1"
    else
        grep -E '^(not ok|Bail out)' "$1"
        tail -1 "$1"
    fi
}
counts() { sed -n 's/^# \([0-9]* checks, [0-9]* failed\)$/\1/p' "$1" | tail -1; }

# ---- 3. under valgrind
if [ -n "$hosts" ] && [ -x "$work/api_test" ]; then
    if ! command -v valgrind >/dev/null; then
        result FAIL "valgrind not found (apt-get install valgrind)"
    else
        supp=()
        [ -f "$here/valgrind.supp" ] && supp=(--suppressions="$here/valgrind.supp")
        LD_LIBRARY_PATH=$libdir step timeout 120 valgrind --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
            --num-callers=40 ${supp[@]+"${supp[@]}"} --log-file="$work/valgrind.log" \
            "$work/api_test" "$hosts" >"$work/valgrind.out" 2>"$work/valgrind.err"
        rc=$?
        show_run "$work/valgrind.out"
        case $rc in
        0) result ok "under valgrind: $(counts "$work/valgrind.out"); no memory error, no definite or indirect leak" ;;
        99)
            sed -n '/ERROR SUMMARY\|definitely lost\|indirectly lost\|^==[0-9]*== [A-Z]/p' "$work/valgrind.log" | head -20
            grep -B2 -A30 'definitely lost in\|indirectly lost in\|Invalid \|uninitialised\|Mismatched' \
                "$work/valgrind.log" | head -150
            result FAIL "under valgrind: $(counts "$work/valgrind.out"); valgrind reported errors (above)" ;;
        124) tail -5 "$work/valgrind.err"; result FAIL "under valgrind: timed out (120 s)" ;;
        *) tail -20 "$work/valgrind.err"; result FAIL "under valgrind: exit $rc, $(counts "$work/valgrind.out")" ;;
        esac
    fi
fi

# ---- 4. AddressSanitizer + UndefinedBehaviorSanitizer
if [ -n "$hosts" ]; then
    san=("-fsanitize=address,undefined" -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    if build "$work/api_test_asan" "${san[@]}"; then
        lsan=""
        [ -f "$here/lsan.supp" ] && lsan="suppressions=$here/lsan.supp:print_suppressions=0"
        LD_LIBRARY_PATH=$libdir ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:exitcode=98" \
            LSAN_OPTIONS="$lsan" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=97" \
            step timeout 90 "$work/api_test_asan" "$hosts" >"$work/asan.out" 2>"$work/asan.err"
        rc=$?
        show_run "$work/asan.out"
        case $rc in
        0) result ok "ASan+UBSan: $(counts "$work/asan.out"); no report" ;;
        124) result FAIL "ASan+UBSan: timed out (90 s)" ;;
        *)
            grep -A40 -E 'ERROR: (Address|Leak)Sanitizer|runtime error' "$work/asan.err" | head -120
            result FAIL "ASan+UBSan: exit $rc, $(counts "$work/asan.out")" ;;
        esac
    else
        cat "$work/api_test_asan.build.log" >&2
        result FAIL "build with ${san[*]}"
    fi
fi

# ---- 5. callbacks of the 0.2.0 types fail to compile; C++ accepts the header
src=$here/compile_fail.c
if timeout 60 "$CC" "${std_flags[@]}" -c "$src" -o /dev/null $cflags >"$work/cf0.log" 2>&1; then
    result ok "compile_fail.c with the 1.0 types compiles clean (${std_flags[*]})"
else
    cat "$work/cf0.log" >&2
    result FAIL "compile_fail.c with the 1.0 types does not compile (${std_flags[*]})"
fi
if command -v "$CXX" >/dev/null; then
    if timeout 60 "$CXX" -x c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only "$src" $cflags \
        >"$work/cxx.log" 2>&1; then
        result ok "C++ (-x c++ -std=c++11 -fsyntax-only) accepts <zkr/zkr.h> and the 1.0 types"
    else
        cat "$work/cxx.log" >&2
        result FAIL "C++ (-x c++ -std=c++11 -fsyntax-only) refuses <zkr/zkr.h> or the 1.0 types"
    fi
else
    result FAIL "no C++ compiler ($CXX)"
fi
# one compile per case (the calls of compile_fail.c), and a few other C11 modes
cases=$(sed -n 's/^#if CASE == \([0-9]*\)$/\1/p; s/^#elif CASE == \([0-9]*\)$/\1/p' "$src" | sort -un)
compilers=("$CC")
command -v clang >/dev/null && [ "$CC" != clang ] && compilers+=(clang)
refused=0 tried=0 bad=()
for comp in "${compilers[@]}"; do
    for std in c11 c17 gnu11; do
        for k in $cases; do
            # every case with the default compiler in C11; a few in the other modes
            [ "$std" = c11 ] && [ "$comp" = "$CC" ] || case $k in 1 | 5 | 10) ;; *) continue ;; esac
            tried=$((tried + 1))
            if timeout 60 "$comp" -std=$std -DCASE="$k" -c "$src" -o /dev/null $cflags >"$work/cf.log" 2>&1; then
                bad+=("$comp -std=$std CASE=$k compiled")
            elif ! grep -q 'zkrecipes 1\.0:' "$work/cf.log"; then
                bad+=("$comp -std=$std CASE=$k failed without \"zkrecipes 1.0:\": $(grep -m1 error "$work/cf.log")")
            else
                refused=$((refused + 1))
            fi
        done
    done
done
if [ "$tried" -gt 0 ] && [ "$refused" = "$tried" ]; then
    result ok "0.2.0-style callbacks refused at compile time with \"zkrecipes 1.0:\": $refused/$tried compiles ($(echo $cases | wc -w) calls; ${compilers[*]}; c11, c17, gnu11)"
else
    printf '  %s\n' "${bad[@]}"
    result FAIL "0.2.0-style callbacks refused at compile time: $refused/$tried"
fi

# ---- summary
echo "api: ---- summary (${SECONDS} s)"
printf 'api:   %s\n' "${results[@]}"
if [ "$fail_count" -eq 0 ]; then
    echo "api: ok"
    exit 0
fi
echo "api: $fail_count step(s) FAILED"
exit 1
