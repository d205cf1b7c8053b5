#!/usr/bin/env bash
# The Debian packages: libzkrecipes2 (the shared library), libzkrecipes-dev
# (headers, static library, pkg-config file, man pages) and zkr-lock (the
# tools zkr-lock and zkr-cache), built from debian/ with `dpkg-buildpackage -us -uc -b` in a clean
# copy of the tracked files (the source tree and its own build are left
# alone), then checked with lintian.
#
#   bash scripts/package.sh [OUTDIR]
#
# Installs what the build needs (dpkg-dev, debhelper, fakeroot, lintian and
# debian/control's Build-Depends) through scripts/deps.sh, once, only when
# missing.  Puts the .deb, .changes and .buildinfo files and the build and
# lintian logs in OUTDIR (default: debs/ at the top of the tree), and exits
# non-zero if the build fails or lintian reports an error.  Install the
# result with `sudo apt install ./debs/*.deb`.  The package build runs only
# the tests that need no ZooKeeper server (debian/rules says why);
# `bash scripts/test.sh` runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
out=${1:-$top/debs}
mkdir -p "$out"
out=$(cd "$out" && pwd)

ZKR_DEPS_EXTRA="${ZKR_DEPS_EXTRA:-} dpkg-dev debhelper fakeroot lintian libcunit1-dev git" bash scripts/deps.sh
dpkg-checkbuilddeps || { echo "package.sh: build dependencies missing (debian/control)" >&2; exit 1; }

version=$(dpkg-parsechangelog -S Version)
upstream=${version%-*}
work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/zkrecipes-$upstream
mkdir -p "$src"
# the tracked files as they are in the working tree
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$src"

echo "package.sh: building zkrecipes $version in $src (log: $out/build.log)"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
if ! (cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc 2>/dev/null || echo 2) ${DEB_BUILD_OPTIONS:-}" \
        dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
    tail -60 "$out/build.log"
    echo "package.sh: dpkg-buildpackage failed (log: $out/build.log)" >&2
    exit 1
fi
# what dpkg-gensymbols said (debian/rules makes any difference fatal)
grep -E 'dpkg-gensymbols' "$out/build.log" || true
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out/"
changes=$(ls "$out"/*.changes)

echo "package.sh: lintian $(basename "$changes")"
status=0
lintian --fail-on error --display-level '>=warning' "$changes" >"$out/lintian.log" 2>&1 || status=$?
cat "$out/lintian.log"
if [ $status != 0 ]; then
    echo "package.sh: lintian reports errors (log: $out/lintian.log)" >&2
    exit 1
fi
echo "package.sh: lintian: no error"
for deb in "$out"/*.deb; do
    echo "package.sh: $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version): $deb"
done
