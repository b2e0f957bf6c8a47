# tests/cli/lib/resume.sh — sourced after harness.sh by the resume tests
# (quantize_resume.sh, ct_resume.sh): helpers for stopping, inspecting and
# continuing a `quanta quantize --resumable` run.
# run_in DIR CMD...: CMD in DIR (a relative OUT, so the recorded command line matches)
run_in() { (cd "$1" && shift && "$@"); }
# state_int KEY FILE: an integer field at the top level of a state file
state_int() { sed -n "s/^  \"$1\": \([0-9]*\).*/\1/p" "$2" | head -1; }
# The command printed after "to continue:", with this build's quanta.
printed_resume() { grep -A1 "to continue:" "$1" | tail -1 | sed "s|^  quanta |\"$q\" |"; }
# Waits (polling, no timeout assumed) until process $1 is stopped or gone.
wait_stopped() {
    for _ in $(seq 20000); do
        st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
        [ -z "$st" ] || [ "$st" = T ] && return 0
        sleep 0.01
    done
    return 1
}
