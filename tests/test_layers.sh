#!/usr/bin/env bash
# The library's layers stay as docs/architecture.md draws them.  Run by
# `make check` (no ZooKeeper server needed), on the objects just built:
#   1. a lower folder never refers to a symbol defined in a higher one
#      (util < session < engine < recipes), read from the objects with nm;
#   2. no two library files call each other, directly or around a loop
#      (the file-to-file call graph, from the same symbols, has no cycle);
#   3. a lower folder never includes a higher folder's header;
#   4. no library file is over 600 lines, and each opens with a comment
#      saying its one job.
# Prints "layers: N passed, M failed" and a CUnit-style "tests" row that
# scripts/summary.sh counts.
#
# Environment (set by Makefile.am): ZKR_SRCDIR, ZKR_BUILDDIR.
set -u
srcdir=${ZKR_SRCDIR:?run through make check}
builddir=${ZKR_BUILDDIR:?}
layers="util session engine recipes"
max_lines=600

work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-layers.XXXXXX")
trap 'rm -rf "$work"' EXIT

. "$srcdir/tests/harness/checks.sh"

rank() { # folder -> its place in the order
    local i=0 l
    for l in $layers; do
        [ "$l" = "$1" ] && { echo $i; return; }
        i=$((i + 1))
    done
    echo -1
}

# The object of every library source, from libtool's .lo files.
: >"$work/objects"
for layer in $layers; do
    for lo in "$builddir/$layer"/libzkrcore_la-*.lo; do
        [ -f "$lo" ] || continue
        obj=$(sed -n "s/^pic_object='\(.*\)'$/\1/p" "$lo")
        [ -n "$obj" ] && [ "$obj" != none ] || obj=$(sed -n "s/^non_pic_object='\(.*\)'$/\1/p" "$lo")
        name=$(basename "$lo" .lo)
        echo "$layer ${name#libzkrcore_la-} $builddir/$layer/$obj" >>"$work/objects"
    done
done
nobj=$(wc -l <"$work/objects")
nsrc=$(for layer in $layers; do ls "$srcdir/$layer"/*.c; done 2>/dev/null | wc -l)
[ "$nobj" -gt 0 ] && [ "$nobj" = "$nsrc" ]
check "every library source has an object ($nobj objects, $nsrc sources)" $?

# defined and undefined symbols: "layer file symbol"
: >"$work/defs"
: >"$work/undefs"
while read -r layer file obj; do
    nm "$obj" | awk -v l="$layer" -v f="$file" '
        NF == 3 && $2 ~ /^[TDBRC]$/ {print l, f, $3 >> "'"$work/defs"'"}
        NF == 2 && $1 == "U" {print l, f, $2 >> "'"$work/undefs"'"}'
done <"$work/objects"

# calls between files: "from_layer from_file to_layer to_file symbol"
awk 'NR == FNR {def[$3] = $1 " " $2; next}
     ($3 in def) {split(def[$3], d, " "); if (d[2] != $2) print $1, $2, d[1], d[2], $3}' \
    "$work/defs" "$work/undefs" >"$work/calls"

# 1. nothing calls up
st=0
while read -r fl ff tl tf sym; do
    if [ "$(rank "$tl")" -gt "$(rank "$fl")" ]; then
        echo "  $fl/$ff.c calls $sym, defined in the higher $tl/$tf.c"
        st=1
    fi
done <"$work/calls"
check "no lower folder names a symbol of a higher one ($layers)" $st

# 2. no cycle between files (tsort names one if there is)
awk '{print $1 "/" $2, $3 "/" $4}' "$work/calls" | sort -u >"$work/edges"
awk '{print $1 "/" $2, $1 "/" $2}' "$work/objects" >>"$work/edges"
if tsort "$work/edges" >/dev/null 2>"$work/tsort.err"; then
    check "the call graph between library files has no cycle ($(sort -u "$work/edges" | awk '$1 != $2' | wc -l) edges)" 0
else
    sed 's/^/  /' "$work/tsort.err"
    check "the call graph between library files has no cycle" 1
fi

# 3. headers: a file includes only its own folder's or lower folders' headers
st=0
for layer in $layers; do
    for f in "$srcdir/$layer"/*.[ch]; do
        [ -f "$f" ] || continue
        while read -r inc; do
            dir=${inc%%/*}
            r=$(rank "$dir")
            if [ "$r" -gt "$(rank "$layer")" ]; then
                echo "  $layer/$(basename "$f") includes $inc"
                st=1
            fi
        done < <(sed -n 's/^#include "\([a-z]*\/[^"]*\)".*/\1/p' "$f")
    done
done
check "no lower folder includes a higher folder's header" $st

# 4. sizes and opening comments
st=0
for layer in $layers; do
    for f in "$srcdir/$layer"/*.c; do
        n=$(wc -l <"$f")
        if [ "$n" -gt $max_lines ]; then
            echo "  $layer/$(basename "$f"): $n lines"
            st=1
        fi
    done
done
check "no library file is over $max_lines lines" $st
st=0
for layer in $layers; do
    for f in "$srcdir/$layer"/*.[ch]; do
        head -c 2 "$f" | grep -q '^/\*' || { echo "  $layer/$(basename "$f") does not open with a comment"; st=1; }
    done
done
check "every library file opens with a comment saying its job" $st

summary layers
