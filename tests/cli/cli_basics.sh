#!/bin/bash
# CLI contract: --help/--version, unknown verb/option -> usage (2), formats output.
q="$1"
fail=0; pass=0
check() { # name, expected-exit, command...
    local name="$1" want="$2"; shift 2
    "$@" >/tmp/cli_out.$$ 2>&1; local got=$?
    if [ "$got" = "$want" ]; then pass=$((pass+1)); else
        echo "FAIL $name: exit $got, want $want"; cat /tmp/cli_out.$$; fail=$((fail+1)); fi
}
check help 0 "$q" --help
check version 0 "$q" --version
check no-args 2 "$q"
check unknown-verb 2 "$q" frobnicate
check formats 0 "$q" formats
check formats-help 0 "$q" formats --help
check formats-bad-opt 2 "$q" formats --bogus
"$q" formats --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert any(f["name"]=="q4_K" and abs(f["bits_per_weight"]-4.5)<1e-9 for f in d)' \
    && pass=$((pass+1)) || { echo "FAIL formats-json"; fail=$((fail+1)); }
"$q" formats | grep -q "w4a16-g128" && pass=$((pass+1)) || { echo "FAIL formats-table"; fail=$((fail+1)); }
rm -f /tmp/cli_out.$$
echo "cli_basics: $pass passed, $fail failed"
[ $fail -eq 0 ]
