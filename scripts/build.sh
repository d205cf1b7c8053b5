#!/usr/bin/env bash
# Configure (once) and build zkrecipes in the source tree.  Extra arguments
# go to ./configure.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
    autoreconf -fi
fi
if [ ! -f Makefile ] || [ configure -nt Makefile ]; then
    ./configure --enable-werror "$@"
fi
make -j"$(nproc 2>/dev/null || echo 2)"
