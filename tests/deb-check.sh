#!/usr/bin/env bash
# The Debian packages as a user gets them: unpack libzkrecipes2,
# libzkrecipes-dev and zkr-lock into a scratch root (dpkg -x, no
# installation), then build a program outside the tree against that root
# with pkg-config alone (PKG_CONFIG_SYSROOT_DIR), shared and static, run
# it, and run the packaged tools; then, if tests/api/run.sh exists, the
# API test program it builds against the same root.  A package that misses
# a header, the library, its .pc file or its links fails here.  Run by
# .ci/run after scripts/package.sh:
#
#   bash tests/deb-check.sh [DEBDIR]      (default: debs/)
set -euo pipefail
cd "$(dirname "$0")/.."
debdir=${1:-debs}
root=$(mktemp -d "${TMPDIR:-/tmp}/zkr-debroot.XXXXXX")
trap 'rm -rf "$root"' EXIT

for p in libzkrecipes2 libzkrecipes-dev zkr-lock; do
    deb=$(ls "$debdir"/${p}_*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || { echo "deb-check: no $p package in $debdir (bash scripts/package.sh)" >&2; exit 1; }
    dpkg -x "$deb" "$root"
    echo "deb-check: unpacked $(basename "$deb")"
done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=$root/usr/lib/$multiarch

# only the scratch root's .pc files, with its paths
export PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig
echo "deb-check: pkg-config --modversion: $(pkg-config --modversion zkrecipes)"
echo "deb-check: pkg-config --cflags --libs: $(pkg-config --cflags --libs zkrecipes)"
[ "$(pkg-config --modversion zkrecipes)" = "$(dpkg-parsechangelog -S Version | sed 's/-[^-]*$//')" ] ||
    { echo "deb-check: the .pc file's version is not the package's" >&2; exit 1; }

cat >"$root/app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <zkr/zkr.h>
int main(void)
{
    zkr_client_options_t opt;
    zkr_mutex_t *m = NULL;
    zkr_client_options_init(&opt);
    /* Bad input is refused before anything is sent. */
    if (zkr_mutex_new(&m, NULL, "/x") != ZKR_EINVAL)
        return 1;
    printf("zkrecipes %s (headers %s): %s\n", zkr_version(), ZKR_VERSION, zkr_strerror(ZKR_ETIMEDOUT));
    return strcmp(zkr_version(), ZKR_VERSION) != 0;
}
C
# the shared library: the soname link from libzkrecipes2, the .so link from -dev
cc -std=c11 -Wall -Wextra -Werror "$root/app.c" -o "$root/app" $(pkg-config --cflags --libs zkrecipes)
readelf -d "$root/app" | grep -q 'NEEDED.*libzkrecipes\.so\.2' ||
    { echo "deb-check: the program does not need libzkrecipes.so.2" >&2; exit 1; }
LD_LIBRARY_PATH=$libdir "$root/app"
# the static library, with its private dependencies from the .pc file
static_libs=$(pkg-config --static --libs zkrecipes | sed 's/-lzkrecipes\b/-Wl,-Bstatic -lzkrecipes -Wl,-Bdynamic/')
cc -std=c11 "$root/app.c" -o "$root/app-static" $(pkg-config --cflags zkrecipes) $static_libs
if readelf -d "$root/app-static" | grep -q 'NEEDED.*libzkrecipes'; then
    echo "deb-check: the static link still needs libzkrecipes.so" >&2; exit 1
fi
"$root/app-static" >/dev/null
# the tools and their manuals (both in the zkr-lock package)
LD_LIBRARY_PATH=$libdir "$root/usr/bin/zkr-lock" --help >/dev/null
LD_LIBRARY_PATH=$libdir "$root/usr/bin/zkr-cache" --help >/dev/null
test -f "$root/usr/share/man/man1/zkr-lock.1.gz"
test -f "$root/usr/share/man/man1/zkr-cache.1.gz"
test -e "$root/usr/share/man/man3/zkr_cache_walk.3.gz"
test -e "$root/usr/share/man/man3/zkr_mutex_acquire.3.gz"
# the API test program (tests/api/), against the same unpacked root
# (usr/include, usr/lib/$multiarch); before the trap removes it
api=
if [ -f tests/api/run.sh ]; then
    echo "deb-check: tests/api/run.sh $root"
    bash tests/api/run.sh "$root" ||
        { echo "deb-check: tests/api/run.sh failed against the unpacked packages" >&2; exit 1; }
    api="; tests/api/run.sh"
fi
echo "deb-check: ok (built and ran a program against the unpacked packages; zkr-lock --help, zkr-cache --help$api)"
