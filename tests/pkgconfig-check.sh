#!/usr/bin/env bash
# Build and run a program outside the tree against an installed zkrecipes,
# using only pkg-config:  pkgconfig-check.sh PREFIX
set -euo pipefail
prefix=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <zkr/zkr.h>
int main(void)
{
    zkr_mutex_t *m = NULL;
    /* Bad input is refused before anything is sent. */
    if (zkr_mutex_new(&m, NULL, "/x") != ZKR_EINVAL)
        return 1;
    printf("zkrecipes %s: %s\n", zkr_version(), zkr_strerror(ZKR_ETIMEDOUT));
    return strcmp(zkr_err_name(ZKR_EINVAL), "ZKR_EINVAL") != 0;
}
C
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# --define-variable lets this check an installation moved by
# `make install prefix=...` as well as one configured with --prefix.
pc() { pkg-config --define-variable=prefix="$prefix" "$@" zkrecipes; }
test -f "$prefix/include/zkr/zkr.h"
echo "pkg-config: $(pc --cflags --libs)"
cc -std=c11 -Wall -Wextra -Werror "$work/app.c" -o "$work/app" $(pc --cflags --libs)
LD_LIBRARY_PATH="$prefix/lib" "$work/app"
# static linking works too
cc -std=c11 "$work/app.c" -o "$work/app-static" $(pc --cflags) "$prefix/lib/libzkrecipes.a" -lzookeeper_mt -lpthread
"$work/app-static"
