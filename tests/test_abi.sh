#!/usr/bin/env bash
# The guarded ABI.  Run by `make check` (no ZooKeeper server needed):
#   1. the exported symbols: the functions marked ZKR_EXTERN in
#      include/zkr/*.h, the version script abi/libzkrecipes.map, the
#      built library's dynamic symbols (nm -D) and the Debian symbols file
#      debian/libzkrecipesN.symbols name the same functions; every export
#      is in the version node ZKRECIPES_N and nothing else is exported
#      (no zkr__ internal); N is the SONAME's number everywhere;
#   2. the binary interface against the baseline abi/libzkrecipes.abi
#      (abidw of the last release, public headers only) with abidiff:
#        - no change: ok;
#        - a function removed, or a public type changed (a struct's
#          layout, an enum, a signature): FAIL, an incompatible change;
#        - functions only added (compatible): FAIL until recorded in the
#          baseline with `make abi-baseline`, so that every addition is
#          seen and reaches the symbols file and -version-info.
#      docs/versioning.md says what to do in each case.
#
#   tests/test_abi.sh            the check (environment from Makefile.am)
#   tests/test_abi.sh --update   rewrite the baseline from the built library
#                                (what `make abi-baseline` runs); refuses an
#                                incompatible change while the SONAME is the
#                                baseline's (bump -version-info first)
#
# Prints "abi: N passed, M failed" and a CUnit-style "tests" row that
# scripts/summary.sh counts.  Needs abidw/abidiff (Debian's abigail-tools,
# installed by scripts/test.sh through scripts/deps.sh), nm and readelf.
set -u
srcdir=${ZKR_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${ZKR_BUILDDIR:-$srcdir}
mode=check
[ "${1:-}" = --update ] && mode=update

baseline=$srcdir/abi/libzkrecipes.abi
map=$srcdir/abi/libzkrecipes.map
work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-abi.XXXXXX")
trap 'rm -rf "$work"' EXIT

. "$srcdir/tests/harness/checks.sh"
finish() {
    summary abi
    exit $?
}

lib=$(ls "$builddir"/.libs/libzkrecipes.so.*.*.* 2>/dev/null | head -1)
if [ -z "$lib" ]; then
    # a build with --disable-shared (scripts/sanitize.sh) has nothing to compare
    echo "test_abi: no shared library in $builddir/.libs: skipped"
    exit 77
fi
for tool in nm readelf abidw abidiff; do
    command -v $tool >/dev/null || {
        echo "test_abi: $tool is missing (install abigail-tools and binutils; scripts/test.sh does)"
        check "the tools are there" 1
        finish
    }
done
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
sover=${soname##*.so.}
node=ZKRECIPES_$sover
echo "library: $lib (SONAME $soname, version node $node)"

# ---- 1. one list of exports -----------------------------------------------------
st=0
grep -hE '^[[:space:]]*ZKR_EXTERN[[:space:]]' "$srcdir"/include/zkr/*.h |
    sed -E 's/\(.*//; s/.*[ *]//' | sort -u >"$work/headers"
sed -e 's:/\*.*\*/::' "$map" | awk '
    /\/\*/ { c = 1 } c && /\*\// { c = 0; next } c { next }
    /^[A-Za-z_0-9.]+[[:space:]]*\{/ { node = $1 }
    /global:/ { g = 1; next } /local:/ { g = 0 }
    g && /;/ { gsub(/[;[:space:]]/, ""); if ($0 != "") print }' | sort >"$work/map"
mapnode=$(sed -n 's/^\([A-Za-z_0-9.]*\)[[:space:]]*{.*/\1/p' "$map" | head -1)
nm -D --defined-only "$lib" | awk '{print $3}' | sort >"$work/nm-all"
grep -vx -e "$node" -e "$node@@$node" "$work/nm-all" >"$work/nm-versioned"
sed 's/@.*//' "$work/nm-versioned" | sort >"$work/nm"
if grep -v "@@$node\$" "$work/nm-versioned" | grep -q .; then
    echo "  exported outside the version node $node:"
    grep -v "@@$node\$" "$work/nm-versioned" | sed 's/^/    /'
    st=1
fi
if grep -q '^zkr__' "$work/nm"; then
    echo "  internal functions exported:"
    grep '^zkr__' "$work/nm" | sed 's/^/    /'
    st=1
fi
[ "$mapnode" = "$node" ] || { echo "  $map names the node $mapnode, the SONAME $soname wants $node"; st=1; }
compare() { # compare NAME-A FILE-A NAME-B FILE-B
    if ! cmp -s "$2" "$4"; then
        echo "  $1 and $3 differ (< only in $1, > only in $3):"
        diff "$2" "$4" | grep '^[<>]' | sed 's/^/    /'
        st=1
    fi
}
compare "the headers (ZKR_EXTERN)" "$work/headers" "$map" "$work/map"
compare "the headers (ZKR_EXTERN)" "$work/headers" "nm -D" "$work/nm"
symbols=$srcdir/debian/libzkrecipes$sover.symbols
if [ -f "$symbols" ]; then
    head -1 "$symbols" | grep -q "^$soname libzkrecipes$sover " ||
        { echo "  $symbols: the first line does not name $soname libzkrecipes$sover"; st=1; }
    sed -n 's/^ \([^ @]*\)@\([^ ]*\) .*/\1 \2/p' "$symbols" >"$work/symbols-raw"
    awk -v n="$node" '$2 != n { print "    " $1 "@" $2 ": not in " n }' "$work/symbols-raw" | grep . && st=1
    awk -v n="$node" '$1 != n { print $1 }' "$work/symbols-raw" | sort >"$work/symbols"
    compare "nm -D" "$work/nm" "$symbols" "$work/symbols"
elif [ -d "$srcdir/debian" ]; then
    echo "  no $symbols for $soname (the package is named after the SONAME: libzkrecipes$sover)"
    st=1
else
    echo "  (no debian/ in this tree: the symbols file is not compared)"
fi
check "$(wc -l <"$work/nm") exports: headers, abi/libzkrecipes.map, nm -D and the symbols file agree; all in $node, no zkr__" $st

# Every opaque handle of the headers ("typedef struct zkr_x zkr_x_t;") is
# in abi/suppressions.ini: its layout is not part of the ABI.
st=0
supp=$(sed -n 's/^ *name_regexp = ^(struct )?(\(zkr_[a-z_|]*\))\$$/\1/p' "$srcdir/abi/suppressions.ini")
for t in $(sed -n 's/^typedef struct \(zkr_[a-z_]*\) zkr_[a-z_]*_t;.*/\1/p' "$srcdir"/include/zkr/*.h | sort -u); do
    case "|$supp|" in *"|$t|"*) ;; *) echo "  opaque struct $t is not in abi/suppressions.ini"; st=1 ;; esac
done
check "every opaque handle of the headers is left out of the ABI comparison (abi/suppressions.ini)" $st

# ---- 2. the binary interface against the baseline --------------------------------
hdirs=(--headers-dir "$srcdir/include/zkr")
[ -d "$builddir/include/zkr" ] && [ "$builddir" != "$srcdir" ] && hdirs+=(--headers-dir "$builddir/include/zkr")
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    echo "  $lib has no debug information (built without -g): the types cannot be compared"
    check "the ABI against abi/libzkrecipes.abi (symbols only: no debug information)" $st
    finish
fi
abidw "${hdirs[@]}" --no-corpus-path --no-comp-dir-path --no-show-locs --drop-undefined-syms \
    "$lib" --out-file "$work/current.abi" || { check "abidw reads the library" 1; finish; }

classify() { # classify REPORT RC -> none | added | incompatible | error
    local report=$1 rc=$2
    if [ "$rc" = 0 ]; then echo none; return; fi
    if [ $((rc & 3)) != 0 ]; then echo error; return; fi
    if [ $((rc & 8)) != 0 ]; then echo incompatible; return; fi
    # the summaries: "N Removed, N Changed (...), N Added"; anything but
    # additions (a SONAME, a needed library, a removal, a change) is
    # incompatible
    if grep -Eq 'summary: [1-9][0-9]* Removed|[1-9][0-9]* Changed|SONAME|needed|architecture' "$report"; then
        echo incompatible
    elif grep -Eq 'summary: 0 Removed.*, [1-9][0-9]* Added' "$report"; then
        echo added
    else
        echo incompatible
    fi
}

if [ "$mode" = update ]; then
    kind=none
    if [ -f "$baseline" ]; then
        abidiff --suppressions "$srcdir/abi/suppressions.ini" "$baseline" "$work/current.abi" >"$work/report" 2>&1
        kind=$(classify "$work/report" $?)
        cat "$work/report"
        old_soname=$(sed -n "1s/.* soname='\([^']*\)'.*/\1/p" "$baseline")
        if [ "$kind" = incompatible ] && [ "$old_soname" = "$soname" ]; then
            echo "abi-baseline: an incompatible change, and the SONAME is still $soname:"
            echo "  change ZKR_LT_VERSION in configure.ac first (current + 1, revision 0, age 0;"
            echo "  docs/versioning.md), rebuild, and run make abi-baseline again."
            exit 1
        fi
    fi
    cp "$work/current.abi" "$baseline"
    echo "abi-baseline: $baseline written ($kind change; SONAME $soname)"
    exit 0
fi

[ -f "$baseline" ] || { echo "  no baseline $baseline: make abi-baseline"; check "the ABI against abi/libzkrecipes.abi" 1; finish; }
abidiff --suppressions "$srcdir/abi/suppressions.ini" "$baseline" "$work/current.abi" >"$work/report" 2>&1
rc=$?
kind=$(classify "$work/report" $rc)
st=0
case $kind in
none) ;;
added)
    sed 's/^/  /' "$work/report"
    echo "  Functions were added: a compatible change, not yet recorded.  Record it"
    echo "  (docs/versioning.md, \"Adding a function\"): list them in abi/libzkrecipes.map"
    echo "  and debian/libzkrecipes$sover.symbols with the version that adds them, run"
    echo "  make abi-baseline, and at the release set -version-info current+1:0:age+1."
    st=1 ;;
incompatible)
    sed 's/^/  /' "$work/report"
    old_soname=$(sed -n "1s/.* soname='\([^']*\)'.*/\1/p" "$baseline")
    if [ "$old_soname" != "$soname" ]; then
        echo "  A NEW SONAME: the baseline is $old_soname, the library $soname"
        echo "  (-version-info was bumped for an incompatible change).  Record the new"
        echo "  ABI (docs/versioning.md, \"An incompatible change\"): make abi-baseline."
    else
        echo "  INCOMPATIBLE: a function was removed or a public type changed since the"
        echo "  baseline (programs built against $soname would break).  Undo it, or make it"
        echo "  a new ABI (docs/versioning.md, \"An incompatible change\"): -version-info"
        echo "  current+1:0:0 (a new SONAME), then make abi-baseline."
    fi
    st=1 ;;
*)
    sed 's/^/  /' "$work/report"
    echo "  abidiff failed (exit $rc)"
    st=1 ;;
esac
case $kind in none) what=unchanged ;; added) what="functions added" ;; incompatible) what="INCOMPATIBLE change" ;; *) what="abidiff error" ;; esac
check "the ABI of $soname against the baseline abi/libzkrecipes.abi ($(sed -n "1s/.* soname='\([^']*\)'.*/\1/p" "$baseline")): $what" $st
finish
