#!/usr/bin/env bash
# The stability check of issue 23: N rounds of the fault suites (locks and
# elections), test_core and test_client under `make -j2 check` with two
# CPU-bound processes beside them.  Every failing round's logs (tests/*.log,
# make's output) are kept in a directory of their own; a count is printed at
# the end.
#
#   bash scripts/stress.sh [ROUNDS] [LOGDIR]
#     ROUNDS   rounds to run (default 10)
#     LOGDIR   where failing rounds' logs go (default tests/stress-logs)
#   ZKR_STRESS_TESTS     the programs (default the four above)
#   ZKR_STRESS_BURNERS   CPU-bound processes beside them (default 2)
#   ZKR_STRESS_ROUND_S   one round's bound in seconds (default 900)
#   ZKR_STRESS_STOP=1    stop at the first failing round
#
# The build must be current (scripts/build.sh).  Exit status 0 only if every
# round passed.
set -u
cd "$(dirname "$0")/.." || exit 1
rounds=${1:-10}
logdir=${2:-tests/stress-logs}
tests=${ZKR_STRESS_TESTS:-tests/test_faults tests/test_leader_faults tests/test_core tests/test_client}
nburn=${ZKR_STRESS_BURNERS:-2}
bound=${ZKR_STRESS_ROUND_S:-900}
mkdir -p "$logdir" || exit 1

burners=()
make_pid=
cleanup() {
    local p
    for p in "${burners[@]}"; do kill "$p" 2>/dev/null; done
    # make and its children (with-zk.sh stops its server on TERM)
    [ -n "$make_pid" ] && kill -TERM -- "-$make_pid" 2>/dev/null
    wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

for _ in $(seq 1 "$nburn"); do
    sh -c 'while :; do :; done' &
    burners+=($!)
done

pass=0 fail=0
for r in $(seq 1 "$rounds"); do
    rm -f tests/test_*.log tests/test_*.trs
    start=$(date +%s)
    load=$(cut -d' ' -f1 /proc/loadavg)
    # its own process group, so that the bound kills all of it
    setsid timeout --kill-after=30 "$bound" make -j2 check TESTS="$tests" >"$logdir/make.out" 2>&1 &
    make_pid=$!
    wait "$make_pid"
    rc=$?
    make_pid=
    secs=$(($(date +%s) - start))
    load_end=$(cut -d' ' -f1 /proc/loadavg)
    if [ $rc = 0 ]; then
        pass=$((pass + 1))
        echo "round $r: pass (${secs}s, load $load -> $load_end)"
        rm -f "$logdir/make.out"
    else
        fail=$((fail + 1))
        d="$logdir/round-$(date +%Y%m%d-%H%M%S)-$r"
        mkdir -p "$d"
        mv "$logdir/make.out" "$d/"
        cp tests/test_*.log tests/test_*.trs "$d/" 2>/dev/null
        why=$(grep -hE '^(FAIL|ERROR):' "$d/make.out" | tr '\n' ' ')
        [ $rc = 124 ] && why="$why(timed out after ${bound}s)"
        echo "round $r: FAIL rc=$rc (${secs}s, load $load -> $load_end) $why; logs in $d"
        [ "${ZKR_STRESS_STOP:-0}" = 1 ] && break
    fi
done
echo "stress: $pass passed, $fail failed of $((pass + fail)) rounds ($nburn burners; $tests)"
[ $fail = 0 ]
