# Sourced by the shell tests (tests/test_docs.sh, test_layers.sh, test_abi.sh,
# test_readme.sh):
# count checks and close with the CUnit-style summary that
# scripts/summary.sh reads.
pass=0
fail=0

check() { # check NAME STATUS(0 = ok)
    if [ "$2" = 0 ]; then
        pass=$((pass + 1))
        echo "ok:   $1"
    else
        fail=$((fail + 1))
        echo "FAIL: $1"
    fi
}

# summary LABEL: the closing lines; returns non-zero if a check failed.
summary() {
    echo
    echo "Run Summary:    Type  Total    Ran Passed Failed Inactive"
    printf "               tests %6d %6d %6d %6d %8d\n" $((pass + fail)) $((pass + fail)) $pass $fail 0
    echo "$1: $pass passed, $fail failed"
    [ "$fail" = 0 ]
}
