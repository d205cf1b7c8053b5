#!/usr/bin/env bash
# Where a lock cycle's time goes, for zkrecipes against the raw C-client
# floor, on one throwaway server (the test harness's settings):
#   1. system calls per uncontended cycle (strace -c -f), zkrecipes, the
#      floor (create+delete) and create+list+delete;
#   2. the client's pthread mutexes under 64 threads on one client and in
#      the contended 4-session run (tests/bench/prof/locks.c, LD_PRELOAD):
#      locks, contention, wait and hold time, callers;
#   3. what the ZooKeeper C client's routine re-resolution of its host list
#      (on every poll of its I/O thread, by default) costs: each scenario
#      with and without zoo_set_servers_resolution_delay(1000 ms) applied
#      from outside (tests/bench/prof/resdelay.c, LD_PRELOAD), interleaved,
#      medians of per-round ratios.
# The library is not changed: the shims only measure.  Figures only.
#
#   bash scripts/bench-profile.sh [--rounds N] [--seconds S] [--out FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
rounds=3 seconds=4 out=bench-profile.md
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "bench-profile.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
ZKR_DEPS_EXTRA="${ZKR_DEPS_EXTRA:-} strace binutils time libzookeeper-mt-dev" bash scripts/deps.sh
bash scripts/build.sh >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/zkr-prof.XXXXXX")
trap 'tests/harness/zkserver.sh kill "$work/zk" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
cc=${CC:-cc}
$cc -O2 -Wall -Wextra -Werror -shared -fPIC -DTHREADED -o "$work/locks.so" tests/bench/prof/locks.c -ldl -lpthread
$cc -O2 -Wall -Wextra -Werror -shared -fPIC -DTHREADED -o "$work/resdelay.so" tests/bench/prof/resdelay.c \
    -ldl -lzookeeper_mt
tests/harness/zkserver.sh start "$work/zk"
hosts=$(tests/harness/zkserver.sh hosts "$work/zk")
# the real program, not libtool's wrapper script (strace and LD_PRELOAD see it)
export LD_LIBRARY_PATH="$top/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bench=$top/tests/bench/.libs/zkr_bench
[ -x "$bench" ] || bench=$top/tests/bench/zkr_bench
lib=$(ls "$top"/.libs/libzkrecipes.so.*.*.* 2>/dev/null | head -1)

{
echo "## Where the time goes ($(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) cores, shared machine)"
echo
echo "### System calls per uncontended cycle (1,000 cycles, strace -c -f, every thread)"
echo
echo "| implementation | all | futex | poll | sendto | socket (netlink, host re-resolution) | openat |"
echo "|---|---|---|---|---|---|---|"
for impl in zkr floor floor2 zkr+resdelay; do
    pre=
    i=$impl
    if [ "$impl" = zkr+resdelay ]; then pre=$work/resdelay.so; i=zkr; fi
    timeout 300 strace -f -c -o "$work/strace.$impl" env LD_PRELOAD="$pre" \
        "$bench" -i "$i" -c uncontended -z "$hosts" -n 1000 >/dev/null
    awk -v impl="$impl" '
        $NF == "total" { all = $4 }
        $NF ~ /^(futex|poll|sendto|socket|openat)$/ { n[$NF] = $4 }
        END { printf "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", impl, all / 1000,
              n["futex"] / 1000, n["poll"] / 1000, n["sendto"] / 1000, n["socket"] / 1000, n["openat"] / 1000 }
    ' "$work/strace.$impl"
done
echo
echo "(zkr+resdelay: zkrecipes with zoo_set_servers_resolution_delay(1000) applied from outside.)"

for scen in threads64 contended4; do
    echo
    echo "### Client mutexes, zkrecipes, $scen, $seconds s (tests/bench/prof/locks.c)"
    echo
    timeout 300 env MUTRACE_OUT="$work/locks.$scen" LD_PRELOAD="$work/locks.so" \
        "$bench" -i zkr -c "$scen" -z "$hosts" -t "$seconds" | sed 's/^/    /'
    echo
    # callers: object+offset -> function (file:line) for the library
    while IFS= read -r line; do
        if [[ $line =~ libzkrecipes[^+]*\+0x([0-9a-f]+) ]] && [ -n "$lib" ]; then
            off=$(printf '0x%x' $(( 0x${BASH_REMATCH[1]} - 1 )))
            where=$(addr2line -f -s -e "$lib" "$off" 2>/dev/null | paste -sd' ' -)
            echo "    $line  <- $where"
        else
            echo "    $line"
        fi
    done < "$work/locks.$scen"
done

echo
echo "### The C client's routine host re-resolution: zkrecipes with and without a 1 s resolution delay"
echo
echo "Interleaved, $rounds rounds x $seconds s; ratio = with / without, per round; CPU = client process user+sys."
echo
echo "| scenario | cycles/s without | cycles/s with | ratio: median (per round) | client CPU s without / with |"
echo "|---|---|---|---|---|"
for scen in uncontended threads64 contended4 contended16 semaphore rw90; do
    plain=() rd=() ratios=() cpu_p=() cpu_r=()
    for r in $(seq 1 "$rounds"); do
        for v in plain rd; do
            pre=
            [ "$v" = rd ] && pre=$work/resdelay.so
            line=$(/usr/bin/time -f "CPU %U %S" timeout 300 env LD_PRELOAD="$pre" \
                "$bench" -i zkr -c "$scen" -z "$hosts" -t "$seconds" 2>&1) || true
            rate=$(echo "$line" | sed -n 's/.* rate=\([0-9.]*\).*/\1/p')
            cpu=$(echo "$line" | awk '/^CPU/ {printf "%.2f", $2 + $3}')
            if [ "$v" = plain ]; then plain+=("${rate:-0}"); cpu_p+=("${cpu:-0}"); else rd+=("${rate:-0}"); cpu_r+=("${cpu:-0}"); fi
        done
        ratios+=("$(awk -v a="${rd[-1]}" -v b="${plain[-1]}" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}')")
    done
    med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    echo "| $scen | $(med "${plain[@]}") | $(med "${rd[@]}") | **$(med "${ratios[@]}")x** (${ratios[*]}) | $(med "${cpu_p[@]}") / $(med "${cpu_r[@]}") |"
done
} | tee "$out"
echo "bench-profile.sh: written to $out" >&2
