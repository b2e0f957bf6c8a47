#!/bin/bash
# CLI contract: --help/--version, unknown verb/option -> usage (2), formats output.
q="$1"
fail=0; pass=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
check() { # name, expected-exit, command...
    local name="$1" want="$2"; shift 2
    "$@" >"$out" 2>&1; local got=$?
    if [ "$got" = "$want" ]; then pass=$((pass+1)); else
        echo "FAIL $name: exit $got, want $want"; cat "$out"; fail=$((fail+1)); fi
}
check help 0 "$q" --help
check version 0 "$q" --version
check no-args 2 "$q"
check unknown-verb 2 "$q" frobnicate
check formats 0 "$q" formats
check formats-help 0 "$q" formats --help
check formats-bad-opt 2 "$q" formats --bogus
# --json: an array of objects, q4_K's at 4.5 bits per weight (grep on the
# output without white space: a test uses only what scripts/deps.sh installs)
json=$("$q" formats --json | tr -d ' \n')
case $json in "[{"*"}]") ;; *) json="" ;; esac
echo "$json" | grep -qE '\{"name":"q4_K",[^{}]*"bits_per_weight":4\.50*[,}]' \
    && pass=$((pass+1)) || { echo "FAIL formats-json"; "$q" formats --json | head -20; fail=$((fail+1)); }
"$q" formats | grep -q "w4a16-g128" && pass=$((pass+1)) || { echo "FAIL formats-table"; fail=$((fail+1)); }
echo "cli_basics: $pass passed, $fail failed"
[ $fail -eq 0 ]
