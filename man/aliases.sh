#!/bin/sh
# One-line alias pages, so that `man FUNCTION` finds the page that
# documents it.  The aliases of a page are the names listed in its NAME
# section (before " \-"), except the page's own name.
#
#   aliases.sh list PAGE...                 print "ALIAS PAGE-NAME" lines
#   aliases.sh install MAN3DIR PAGE...      write MAN3DIR/ALIAS.3 (".so man3/PAGE.3")
#   aliases.sh uninstall MAN3DIR PAGE...    remove them
# PAGE paths are relative to $ZKR_MANSRC when it is set (the source tree).
set -eu
mode=$1
shift
dir=
if [ "$mode" != list ]; then
    dir=$1
    shift
fi
for page in "$@"; do
    page=${ZKR_MANSRC:+$ZKR_MANSRC/}$page
    base=$(basename "$page" .3)
    # the line after ".SH NAME", up to " \-", commas removed
    names=$(sed -n '/^\.SH NAME/{n;s/ \\-.*//;s/,/ /g;p;q;}' "$page")
    for n in $names; do
        [ "$n" = "$base" ] && continue
        case $mode in
        list) echo "$n $base" ;;
        install) echo ".so man3/$base.3" > "$dir/$n.3" ;;
        uninstall) rm -f "$dir/$n.3" ;;
        *) echo "aliases.sh: unknown mode $mode" >&2; exit 2 ;;
        esac
    done
done
