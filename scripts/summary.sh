#!/usr/bin/env bash
# One closing line for the whole suite: the CUnit "tests" rows of every
# test program's log, added up.
cd "$(dirname "$0")/.."
awk '/^ +tests +[0-9]/ {pass += $4; fail += $5} END {printf "all suites: %d passed, %d failed\n", pass, fail + 0}' tests/test_*.log
