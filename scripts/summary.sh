#!/usr/bin/env bash
# One closing line for the whole suite, from the logs and results automake
# leaves for every test program (tests/test_*.log and tests/test_*.trs):
#
#   all suites: N passed, M failed
#
# N: CUnit tests passed.  M: CUnit tests failed, plus CUnit suites failed
# (a suite whose init failed runs none of its tests: CUnit counts it only
# under "suites"), plus every program whose result is FAIL or ERROR while
# its log counts no CUnit failure (it crashed, was killed, printed no "Run
# Summary", or failed after it: a sanitizer or valgrind report at exit),
# plus every log without a result (the run was cut short).  A run that
# left no log at all counts 1.  Programs counted that way are named on
# the lines above the closing one.
#
#   bash scripts/summary.sh [LABEL]     LABEL replaces "all" (e.g. asan)
cd "$(dirname "$0")/.." || exit 1
label=${1:-all}
pass=0 fail=0 seen=0
for log in tests/test_*.log; do
    [ -f "$log" ] || continue
    seen=$((seen + 1))
    trs=${log%.log}.trs
    result=
    [ -f "$trs" ] && result=$(sed -n 's/^:test-result: *//p' "$trs" | head -1)
    # tests passed, tests failed, suites failed, Run Summary blocks
    read -r p f s runs < <(awk '
        /^Run Summary:/ { runs++ }
        /^ +suites +[0-9]/ { s += $5 }
        /^ +tests +[0-9]/ { p += $4; f += $5 }
        END { printf "%d %d %d %d\n", p, f, s, runs }' "$log")
    pass=$((pass + p))
    fail=$((fail + f + s))
    prog=${log%.log}
    if [ -z "$result" ]; then
        echo "summary: $prog: no result (the run was cut short)"
        fail=$((fail + 1))
    elif [ "$result" = FAIL ] || [ "$result" = ERROR ]; then
        if [ "$runs" = 0 ]; then
            echo "summary: $prog: $result with no CUnit summary (crashed, killed or not a CUnit program)"
            fail=$((fail + 1))
        elif [ $((f + s)) = 0 ]; then
            echo "summary: $prog: $result with no CUnit failure (a report at exit, or no test ran)"
            fail=$((fail + 1))
        fi
    fi
done
if [ $seen = 0 ]; then
    echo "summary: no test log in tests/ (nothing ran)"
    fail=1
fi
echo "$label suites: $pass passed, $fail failed"
