# tests/cli/lib/harness.sh — sourced by CLI tests: $q (quanta), $shared, a
# temporary $tmp removed at exit, pass/fail counters, check(), expect(), has()
# and ok(). (A script may define its own has/expect after sourcing this.)
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

has() { grep -qF -- "$2" "$tmp/$1"; } # out|err, string
# check, plus: stderr (or stdout with 'out:') must contain a string
expect() { # name, exit, needle ('' none), command...
    local name="$1" want="$2" needle="$3"
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$? where=err pat="$needle"
    case "$needle" in out:*) where=out; pat="${needle#out:}" ;; esac
    if [ "$got" = "$want" ] && { [ -z "$pat" ] || has "$where" "$pat"; }; then pass=$((pass + 1)); else
        echo "FAIL $name: exit $got (want $want)${pat:+, $where should contain '$pat'}"
        head -c 2000 "$tmp/out"; head -c 2000 "$tmp/err"
        fail=$((fail + 1))
    fi
}
ok() { if "$@"; then pass=$((pass + 1)); else echo "FAIL: $*"; fail=$((fail + 1)); fi; }
