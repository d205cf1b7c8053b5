#!/usr/bin/env bash
# The reference manual and the version macros, as installed.  Run by
# `make check` (no ZooKeeper server needed):
#   1. `make install DESTDIR=<temp>` puts every man page (the tools' in
#      section 1 too) and one alias page per public function in place;
#   2. every page renders with `groff -ww` without a single warning, and
#      `man -l` renders it;
#   3. `man FUNCTION` finds a page for every alias (the .so links resolve);
#   4. every function declared ZKR_EXTERN in the installed headers is
#      documented in an installed page (named in NAME, or in a .B/.BI/.BR
#      line such as its synopsis);
#   5. the installed version macros and every page's footer match
#      PACKAGE_VERSION;
#   6. zkr_version() of the installed library equals ZKR_VERSION, and
#      ZKR_VERSION_NUM is MAJOR*10000 + MINOR*100 + PATCH.
# Prints "docs: N passed, M failed" and a CUnit-style "tests" row that
# scripts/summary.sh counts.
#
# Environment (set by Makefile.am): ZKR_SRCDIR, ZKR_BUILDDIR, ZKR_MAKE,
# ZKR_CC, ZKR_PACKAGE_VERSION, ZKR_PREFIX, ZKR_MANDIR, ZKR_INCLUDEDIR,
# ZKR_LIBDIR.
set -u
srcdir=${ZKR_SRCDIR:?run through make check}
builddir=${ZKR_BUILDDIR:?}
version=${ZKR_PACKAGE_VERSION:?}
MAKE=${ZKR_MAKE:-make}
CC=${ZKR_CC:-cc}

work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-docs.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest=$work/dest
mandir=$dest$ZKR_MANDIR
incdir=$dest$ZKR_INCLUDEDIR
libdir=$dest$ZKR_LIBDIR

. "$srcdir/tests/harness/checks.sh"

for tool in groff man "$CC"; do
    command -v "$tool" >/dev/null || { echo "test_docs: $tool is missing (scripts/test.sh installs groff-base and man-db)"; }
done

# the reference manual, and the tools' pages (zkr-lock.1, zkr-cache.1)
pages="$(cd "$srcdir/man" && ls -- *.3 *.7) $(cd "$srcdir/tools" && ls -- *.1)"
pages3=$(cd "$srcdir/man" && ls -- *.3)

# ---- 1. install: every page and every alias is there ------------------------
st=0
if ! $MAKE -C "$builddir" install DESTDIR="$dest" >"$work/install.log" 2>&1; then
    tail -20 "$work/install.log"
    st=1
fi
for p in $pages; do
    sec=${p##*.}
    [ -f "$mandir/man$sec/$p" ] || { echo "  not installed: man$sec/$p"; st=1; }
done
aliases=$(cd "$srcdir/man" && sh ./aliases.sh list $pages3)
while read -r alias page; do
    [ -n "$alias" ] || continue
    grep -qx "\.so man3/$page\.3" "$mandir/man3/$alias.3" 2>/dev/null ||
        { echo "  alias missing: man3/$alias.3 -> $page"; st=1; }
done <<<"$aliases"
check "make install puts $(echo $pages | wc -w) pages and $(echo "$aliases" | wc -l) aliases in $ZKR_MANDIR" $st

# ---- 2. groff -ww and man -l: no warning, some output -----------------------
st=0
for p in $pages; do
    f=$mandir/man${p##*.}/$p
    [ -f "$f" ] || { st=1; continue; }
    groff -ww -man -Tutf8 "$f" >/dev/null 2>"$work/groff.err"
    if [ -s "$work/groff.err" ]; then
        echo "  groff warnings in $p:"
        sed 's/^/    /' "$work/groff.err"
        st=1
    fi
    out=$(MANPAGER=cat MANWIDTH=80 man -l "$f" 2>"$work/man.err")
    if [ $? != 0 ] || [ -z "$out" ] || [ -s "$work/man.err" ]; then
        echo "  man -l $p failed:"
        sed 's/^/    /' "$work/man.err"
        st=1
    fi
done
check "every page renders with groff -ww and man -l, without a warning" $st

# ---- 3. man FUNCTION finds its page -------------------------------------------
st=0
while read -r alias page; do
    [ -n "$alias" ] || continue
    out=$(MANPATH="$mandir" MANPAGER=cat MANWIDTH=80 man 3 "$alias" 2>/dev/null)
    case $out in
    *"$alias"*) ;;
    *) echo "  man 3 $alias does not show $page"; st=1 ;;
    esac
done <<<"$aliases"
check "man 3 FUNCTION shows the page of each of $(echo "$aliases" | wc -l) aliases" $st

# ---- 4. every ZKR_EXTERN function is documented ---------------------------------
st=0
funcs=$(grep -hE '^[[:space:]]*ZKR_EXTERN[[:space:]]' "$incdir"/zkr/*.h | sed -E 's/\(.*//; s/.*[ *]//' | sort -u)
[ -n "$funcs" ] || { echo "  no ZKR_EXTERN function found in $incdir/zkr"; st=1; }
# the NAME lines and the bold / italic lines (synopses, descriptions)
doc=$(for p in $pages; do
          f=$mandir/man${p##*.}/$p
          sed -n '/^\.SH NAME/{n;p;}' "$f"
          grep -E '^\.(B|BI|BR|IB|RB) ' "$f"
      done)
for fn in $funcs; do
    grep -qw -- "$fn" <<<"$doc" || { echo "  undocumented: $fn"; st=1; }
    [ -f "$mandir/man3/$fn.3" ] || { echo "  no page or alias: man3/$fn.3"; st=1; }
done
check "all $(echo $funcs | wc -w) ZKR_EXTERN functions of the installed headers are documented" $st

# ---- 5. version macros and page footers match PACKAGE_VERSION ---------------------
st=0
vh=$incdir/zkr/version.h
macro() { sed -n "s/^#define $1 //p" "$vh"; }
if [ -f "$vh" ]; then
    [ "$(macro ZKR_VERSION)" = "\"$version\"" ] || { echo "  ZKR_VERSION is $(macro ZKR_VERSION), not \"$version\""; st=1; }
    parts="$(macro ZKR_VERSION_MAJOR).$(macro ZKR_VERSION_MINOR).$(macro ZKR_VERSION_PATCH)"
    [ "$parts" = "$version" ] || { echo "  MAJOR.MINOR.PATCH is $parts, not $version"; st=1; }
    grep -q '#include "zkr/version.h"' "$incdir/zkr/zkr.h" || { echo "  zkr.h does not include version.h"; st=1; }
else
    echo "  $vh not installed"
    st=1
fi
for p in $pages; do
    grep -q "^\.TH .*\"zkrecipes $version\"" "$mandir/man${p##*.}/$p" ||
        { echo "  $p: .TH footer is not \"zkrecipes $version\""; st=1; }
done
check "version macros and page footers say $version" $st

# ---- 6. zkr_version() == ZKR_VERSION, ZKR_VERSION_NUM -------------------------------
st=0
cat >"$work/v.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <zkr/zkr.h>
#if ZKR_VERSION_NUM != ZKR_VERSION_MAJOR * 10000 + ZKR_VERSION_MINOR * 100 + ZKR_VERSION_PATCH
#error ZKR_VERSION_NUM
#endif
int main(void)
{
    char parts[64];
    snprintf(parts, sizeof parts, "%d.%d.%d", ZKR_VERSION_MAJOR, ZKR_VERSION_MINOR, ZKR_VERSION_PATCH);
    printf("zkr_version() %s, ZKR_VERSION %s, ZKR_VERSION_NUM %d\n", zkr_version(), ZKR_VERSION, ZKR_VERSION_NUM);
    return strcmp(zkr_version(), ZKR_VERSION) != 0 || strcmp(parts, ZKR_VERSION) != 0;
}
C
if $CC -std=c11 -Wall -Wextra -Werror -I"$incdir" "$work/v.c" -o "$work/v" -L"$libdir" -lzkrecipes 2>"$work/cc.err"; then
    LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/v" | sed 's/^/  /'
    [ "${PIPESTATUS[0]}" = 0 ] || st=1
else
    sed 's/^/  /' "$work/cc.err"
    st=1
fi
check "zkr_version() of the installed library equals ZKR_VERSION" $st

summary docs
