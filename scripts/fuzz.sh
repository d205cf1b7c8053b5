#!/usr/bin/env bash
# Fuzz the functions that read bytes from the server (child names and sort
# keys, sequence numbers, paths, the shared count's data) with libFuzzer.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 60); TARGETs among fuzz_names fuzz_paths
# fuzz_count (default all), run one after the other, one process each.
# Installs clang and its runtime (libFuzzer, ASan, UBSan) through deps.sh,
# builds each target from tests/fuzz/ and util/ alone (no ZooKeeper needed)
# with -fsanitize=fuzzer,address,undefined into a temporary directory, and
# runs it on a copy of its seed corpus (tests/fuzz/corpus/TARGET).  One
# summary line per target; exits non-zero if any target crashed, keeping
# the crash artifact (its path is printed; replay it with
# `tests/test_fuzz_corpus TARGET FILE` or the fuzzer binary kept beside it).
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

secs=${1:-60}
case $secs in
'' | *[!0-9]*) echo "usage: bash scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac
[ $# -gt 0 ] && shift
all=(fuzz_names fuzz_paths fuzz_count fuzz_instance)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all[@]}"); fi
for t in "${targets[@]}"; do
    [ -f "tests/fuzz/$t.c" ] || { echo "fuzz.sh: no target $t (one of: ${all[*]})" >&2; exit 2; }
done

CC=${ZKR_FUZZ_CC:-clang}
ZKR_DEPS_EXTRA="clang" bash scripts/deps.sh || exit 1
# Debian's clang leaves libFuzzer and the sanitizer runtimes to a
# recommended package (libclang-rt-N-dev), which deps.sh does not pull in.
work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-fuzz.XXXXXX")
probe() {
    printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
        >"$work/probe.c"
    "$CC" -fsanitize=fuzzer,address,undefined "$work/probe.c" -o "$work/probe" >/dev/null 2>&1
}
if ! probe; then
    major=$("$CC" -dumpversion | cut -d. -f1)
    ZKR_DEPS_EXTRA="clang libclang-rt-$major-dev" bash scripts/deps.sh || exit 1
    probe || { echo "fuzz.sh: $CC cannot build with -fsanitize=fuzzer" >&2; exit 1; }
fi

CFLAGS=(-std=c11 -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -I"$top" -D_GNU_SOURCE -DZKR_LIBFUZZER)
UTIL=(util/path.c util/names.c util/strvec.c util/uuid.c)

status=0
crashed=0
for t in "${targets[@]}"; do
    bin="$work/$t"
    extra=()
    # the instances' JSON: its file, jansson, the public headers, config.h (a
    # configured tree)
    [ "$t" = fuzz_instance ] && extra=(-I"$top/include" recipes/discovery_json.c util/utf8.c -ljansson)
    if ! "$CC" "${CFLAGS[@]}" "tests/fuzz/$t.c" "${UTIL[@]}" "${extra[@]}" -o "$bin" 2>"$work/$t.build"; then
        cat "$work/$t.build" >&2
        echo "fuzz: $t: BUILD FAILED"
        status=1
        continue
    fi
    corpus="$work/$t.corpus"
    mkdir -p "$corpus" "$work/$t.artifacts"
    cp "tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null
    log="$work/$t.log"
    echo "fuzz: $t: ${secs}s on $(ls "$corpus" | wc -l) seeds (log $log)"
    # one process, in the foreground: -max_total_time bounds it
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="$work/$t.artifacts/" "$corpus" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
    if [ $rc = 0 ]; then
        echo "fuzz: $t: ok ${secs}s execs=${execs:-?} exec/s=${eps:-?} cov=${cov:-?} ft=${ft:-?} corpus=${corp:-?}"
    else
        status=1
        crashed=1
        grep -E 'ERROR: |invariant broken|SUMMARY: ' "$log" | head -5
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        echo "fuzz: $t: CRASH (exit $rc) after ${execs:-?} execs cov=${cov:-?}; artifact: ${artifact:-none} (log $log)"
    fi
done

if [ $crashed = 0 ] && [ $status = 0 ]; then
    rm -rf "$work"
else
    echo "fuzz: kept $work (binaries, logs, artifacts)"
fi
exit $status
