#!/usr/bin/env bash
# Configure (once) and build zkrecipes in the source tree.  Extra arguments
# go to ./configure.
#
# The build converges: configure runs again (with the arguments it had)
# when what it found is stale, i.e. an optional library it looked for
# (hiredis for the benchmark, libuv for examples/async_uv, CUnit for
# make check) was installed or removed since.  So the scripts that install
# packages (demo.sh, test.sh, bench.sh) work in any order: bench.sh after
# demo.sh installs hiredis and gets a benchmark with its Redis peer.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
    autoreconf -fi
fi

# configure's answer (FOO_LIBS in the Makefile, set only when the header
# and the library were both found) against what compiles and links now
stale_answer() {
    [ -f Makefile ] && [ -f config.status ] || return 1
    local cc var header lib had now
    cc=$(sed -n 's/^CC = //p' Makefile | head -1)
    while read -r var header lib; do
        had=no
        grep -q "^$var = $lib\$" Makefile && had=yes
        now=no
        printf '#include <%s>\nint main(void) { return 0; }\n' "$header" |
            ${cc:-cc} -x c - -o /dev/null "$lib" >/dev/null 2>&1 && now=yes
        if [ $had != $now ]; then
            echo "build.sh: configure found $header and $lib: $had; now: $now; configure runs again" >&2
            return 0
        fi
    done <<'EOF'
HIREDIS_LIBS hiredis/hiredis.h -lhiredis
UV_LIBS uv.h -luv
CUNIT_LIBS CUnit/Basic.h -lcunit
EOF
    return 1
}

if [ ! -f Makefile ] || [ configure -nt Makefile ]; then
    ./configure --enable-werror "$@"
elif stale_answer; then
    # configure again with the arguments it was given last time
    ./config.status --recheck >/dev/null && ./config.status >/dev/null
fi
make -j"$(nproc 2>/dev/null || echo 2)"
