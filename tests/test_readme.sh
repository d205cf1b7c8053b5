#!/usr/bin/env bash
# The README's C snippets compile, so the README cannot drift from the API.
# Run by `make check` (compile only: no server, nothing linked or run).
#
# Every ```c block of README.md is compiled on its own, with -Werror (a
# function that does not exist is an implicit declaration: an error), as
# one translation unit made of:
#   1. a fixed prelude: <zkr/zkr.h>, <zookeeper/zookeeper.h> and the libc
#      headers the snippets use (stdio, stdlib, string, stdint, poll,
#      syslog);
#   2. the block itself, at file scope; or, when the block is preceded by
#      an HTML comment of this form (invisible on the rendered page):
#
#        <!-- compile:
#        static void tour(zkr_client_t *c)
#        {
#            zkr_mutex_t *m;
#        @SNIPPET@
#        }
#        -->
#
#      that comment's C code, with the block in place of the @SNIPPET@
#      line.  This is how a fragment gets the function and the variables
#      it needs.  The comment applies to the next ```c block only.
# Unused variables, functions and parameters are allowed (fragments).
# Code in other fences (```sh, plain ```) is not compiled.
#
# Prints "readme: N passed, M failed" and a CUnit-style "tests" row that
# scripts/summary.sh counts.
set -u
srcdir=${ZKR_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${ZKR_BUILDDIR:-$srcdir}
CC=${ZKR_CC:-cc}
readme=${1:-$srcdir/README.md}

work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT

. "$srcdir/tests/harness/checks.sh"

cat >"$work/prelude.h" <<'C'
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <zookeeper/zookeeper.h>
#include <zkr/zkr.h>
C
compile() { # compile FILE.c -> status, messages in FILE.err
    "$CC" -std=c11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-unused-variable \
        -Wno-unused-but-set-variable -Wno-unused-function -D_POSIX_C_SOURCE=200809L \
        -DTHREADED -I"$builddir/include" -I"$srcdir/include" -include "$work/prelude.h" \
        -c "$1" -o /dev/null >"${1%.c}.err" 2>&1
}

# ---- extract: snippet-N.c and snippet-N.line for every ```c block ------------
awk -v dir="$work" '
    function flush(   f, i, n, w) {
        f = dir "/snippet-" count ".c"
        print start > (dir "/snippet-" count ".line")
        if (wrapper != "") {
            n = split(wrapper, w, "\n")
            for (i = 1; i <= n; i++) {
                if (w[i] ~ /^[[:space:]]*@SNIPPET@[[:space:]]*$/) printf "%s", body > f
                else print w[i] > f
            }
        } else {
            printf "%s", body > f
        }
        close(f)
        wrapper = ""
    }
    inwrap {
        if ($0 ~ /^-->[[:space:]]*$/) { inwrap = 0; next }
        wrapper = wrapper $0 "\n"
        next
    }
    inblock {
        if ($0 ~ /^```[[:space:]]*$/) { inblock = 0; flush(); next }
        body = body $0 "\n"
        next
    }
    /^<!-- compile:/ { inwrap = 1; wrapper = ""; next }
    /^```c[[:space:]]*$/ { inblock = 1; count++; body = "#line " (NR + 1) " \"README.md\"\n"; start = NR; next }
    /^```/ { wrapper = "" }
    END { if (inwrap || inblock) print "unterminated block or comment at the end" > "/dev/stderr" }
' "$readme" || { check "README.md parses" 1; }

n=$(ls "$work"/snippet-*.c 2>/dev/null | wc -l)
[ "$n" -gt 0 ] || check "README.md has C snippets" 1
for i in $(seq 1 "$n"); do
    f=$work/snippet-$i.c
    line=$(cat "$work/snippet-$i.line")
    if compile "$f"; then
        check "README.md:$line: snippet $i compiles" 0
    else
        sed 's/^/    /' "${f%.c}.err" | head -30
        check "README.md:$line: snippet $i compiles" 1
    fi
done

# ---- the check itself: a snippet calling a function that does not exist fails --
printf 'static void f(void)\n{\n    zkr_mutex_acquire_no_such_function(NULL, 0);\n}\n' >"$work/bad.c"
if compile "$work/bad.c"; then
    check "a snippet that calls a function that does not exist is refused" 1
else
    check "a snippet that calls a function that does not exist is refused" 0
fi

# ---- the names of 0.2.0: a warning (an error under -Werror) names the replacement --
for pair in "zkr_lease_return(l):zkr_lease_release" "zkr_lease_return_all(&l, 1):zkr_lease_release_all" \
            "zkr_lease_return_async(l, NULL, NULL):zkr_lease_release_async" \
            "zkr_lease_path(l):zkr_lease_node_path"; do
    call=${pair%%:*} repl=${pair##*:}
    printf 'static void f(zkr_lease_t *l)\n{\n    %s;\n}\n' "$call" >"$work/old.c"
    if compile "$work/old.c"; then
        check "${call%%(*} of 0.2.0 is flagged" 1
    elif grep -q "use $repl " "$work/old.err"; then
        check "${call%%(*} of 0.2.0: the compiler names $repl" 0
    else
        sed 's/^/    /' "$work/old.err" | head -10
        check "${call%%(*} of 0.2.0: the compiler names $repl" 1
    fi
done

# ---- callbacks of the 0.2.0 types: the build stops, naming the 1.0 type --
# name|the callback's definition|the call|what the message names
while IFS='|' read -r name def call want; do
    printf '%s\n{\n    (void)ctx;\n}\nstatic void f(zkr_mutex_t *m, zkr_semaphore_t *s)\n{\n    (void)m, (void)s;\n    %s;\n}\n' \
        "$def" "$call" >"$work/cb.c"
    if compile "$work/cb.c"; then
        check "a $name of the 0.2.0 type is refused" 1
    elif grep -q "zkrecipes 1.0: $want" "$work/cb.err"; then
        check "a $name of the 0.2.0 type: the build stops, naming the 1.0 type" 0
    else
        sed 's/^/    /' "$work/cb.err" | head -10
        check "a $name of the 0.2.0 type: the build stops, naming the 1.0 type" 1
    fi
done <<'CASES'
hold listener|static void cb(zkr_hold_state_t st, const char *node, void *ctx)|zkr_mutex_set_hold_listener(m, cb, NULL)|a hold listener is void fn(zkr_lock_ref_t lock
acquire completion|static void cb(int rc, zkr_hold_t *hold, void *ctx)|zkr_lock_acquire_async(zkr_mutex_ref(m), 0, cb, NULL, NULL)|the completion is void fn(uint64_t acquire_id
lease completion|static void cb(int rc, zkr_lease_t *lease, void *ctx)|zkr_semaphore_acquire_async(s, 0, cb, NULL, NULL)|the completion is void fn(uint64_t acquire_id
semaphore listener|static void cb(zkr_lock_ref_t lock, zkr_hold_state_t st, const char *node, void *ctx)|zkr_semaphore_set_hold_listener(s, cb, NULL)|a semaphore hold listener is
CASES
# and the right types, and NULL, pass
printf '%s\n' 'static void cb(zkr_lock_ref_t lock, zkr_hold_state_t st, const char *node, void *ctx)' \
    '{' '    (void)lock, (void)st, (void)node, (void)ctx;' '}' \
    'static void f(zkr_mutex_t *m, zkr_semaphore_t *s)' '{' \
    '    (void)zkr_mutex_set_hold_listener(m, cb, NULL);' \
    '    (void)zkr_semaphore_set_hold_listener(s, NULL, NULL);' \
    '    (void)zkr_mutex_set_hold_listener(m, NULL, NULL);' '}' >"$work/cbok.c"
compile "$work/cbok.c"
check "a callback of the 1.0 type, and NULL, pass the check" $?

summary readme
