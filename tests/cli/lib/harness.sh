# tests/cli/lib/harness.sh — sourced by CLI tests: $q (quanta), $shared, a
# temporary $tmp removed at exit, pass/fail counters and check().
q="$1"
shared="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pass=0
check() { # name, expected-exit, command...
    local name="$1" want="$2"
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [ "$got" = "$want" ]; then pass=$((pass + 1)); else
        echo "FAIL $name: exit $got, want $want"
        cat "$tmp/out" "$tmp/err"
        fail=$((fail + 1))
    fi
}
