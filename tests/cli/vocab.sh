#!/bin/bash
# tests/cli/vocab.sh QUANTA SHARED_DIR — every verb speaks the same language
# (issue 12). One table of verbs, each with a minimal valid invocation and the
# option families it takes; every rule is checked against every row:
#   --help exits 0 and names --json and -q;  an unknown option exits 2;
#   -q and --quiet are accepted;  --json prints JSON on stdout;  --json=FILE
#   writes it there;  --json= (no file) exits 2;  -c/--ctx-size is the context
#   and a bad value exits 2;  one KV-dtype vocabulary (f16 = fp16, fp8 =
#   fp8-e4m3; q8_0: planner yes, engine a usage error naming int8);  bad values
#   exit 2;  --max-concurrency and --timeout mean the same in loadtest and eval;
#   an unknown verb gets "did you mean";  every `quanta formats` name
#   is a --scheme that resolves or gets a suggestion.
source "$(dirname "$0")/lib/harness.sh"
model="$shared/models/stories260K.gguf"
text="$shared/data/tinystories-valid-first1000.txt"

# JSON without a JSON tool: one object or array, from the first byte to the last.
is_json() { # file
    local first last
    first=$(tr -d ' \n\t\r' <"$1" | head -c 1)
    last=$(tr -d ' \n\t\r' <"$1" | tail -c 1)
    { [ "$first" = "{" ] && [ "$last" = "}" ]; } || { [ "$first" = "[" ] && [ "$last" = "]" ]; }
}

# verb | minimal valid arguments | families: c = -c/--ctx-size, k = --kv-dtype (p planner, e engine)
n=0
printf '%s' '{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}' >"$tmp/chat.jinja"
printf '%s' '[{"role": "user", "content": "hi"}]' >"$tmp/chat.json"
rows=(
    "formats||"
    "tokenize|-m $model -p hi|"
    "inspect|$model|"
    "convert|$model @OUT@.gguf|"
    "quantize|$model @OUT@.gguf --scheme q8_0 --force|"
    "quantize|$model @OUT@.gguf --target-size 400KB --force|"
    "quantize|$model @OUT@.gguf --target-size 400KB --calib $text --nsamples 2 --seqlen 32 --refine 1 --force|"
    "quantize|$model @OUT@.gguf --target-size 400KB --algo gptq --calib $text --nsamples 2 --seqlen 32 --force|"
    "quantize|$model @OUT@.gguf --budget-for-kv 256x2 --memory 640000B --util 1 --overhead 12000B --svg @OUT@.svg --force|"
    "quantize|$model --target-size 400KB --calib $text --nsamples 2 --seqlen 32 --sensitivity measured --sensitivity-cache @OUT@.table --dry-run|"
    "quantize|$model --target-size 400KB --proxy-sample all --dry-run|"
    "plan|--model qwen2.5-7b --gpu t4|c kp"
    "estimate|--model qwen2.5-7b --scheme int8 --gpu t4|c kp"
    "hw|--gpu t4|"
    "run|-m $model -p hi -n 2|c ke"
    "perplexity|-m $model -f $text -c 64 --chunks 1|c ke"
    "eval|--base $model --candidate $model -f $text -c 64 --chunks 1|c ke"
    "imatrix|-m $model -f $text -c 64 --chunks 2 -o @OUT@.gguf|c"
    "serve|-m $model --port 0 --check|c ke"
    "loadtest|--compare $(dirname "$0")/../data/loadtest_a.json $(dirname "$0")/../data/loadtest_b.json|"
    "synth|--like qwen3-0.6b --layers 1 --vocab 400 --format q8_0 -o @OUT@.gguf|"
    "template|-t $tmp/chat.jinja --messages $tmp/chat.json|"
    "bench|-m $model -p 8 -n 2 -r 1 --bw-size 16MiB|ke"
)
# the table covers every verb `quanta --help` lists
"$q" --help | awk '/^verbs:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}' >"$tmp/verbs"
[ "$(wc -l <"$tmp/verbs")" -ge 10 ] && pass=$((pass + 1)) || { echo "FAIL: quanta --help lists too few verbs"; fail=$((fail + 1)); }
while read -r verb; do
    printf '%s\n' "${rows[@]}" | grep -q "^$verb|" && pass=$((pass + 1)) || { echo "FAIL: verb $verb has no row in tests/cli/vocab.sh"; fail=$((fail + 1)); }
done <"$tmp/verbs"
for row in "${rows[@]}"; do
    IFS='|' read -r verb args fam <<<"$row"
    # each run gets its own OUT (convert refuses nothing here, but never reuses a name)
    valid() { n=$((n + 1)); echo "${args//@OUT@/$tmp/out$n}"; }
    # shellcheck disable=SC2046
    {
        expect "$verb --help" 0 "out:--json" "$q" $verb --help
        grep -qE -- '-q|--quiet' "$tmp/out" && pass=$((pass + 1)) || { echo "FAIL $verb --help lacks -q"; fail=$((fail + 1)); }
        expect "$verb unknown option" 2 "unknown option" "$q" $verb $(valid) --no-such-option
        expect "$verb -q" 0 "" "$q" $verb $(valid) -q
        expect "$verb --quiet" 0 "" "$q" $verb $(valid) --quiet
        expect "$verb --json" 0 "" "$q" $verb $(valid) --json -q
        is_json "$tmp/out" && pass=$((pass + 1)) || { echo "FAIL $verb --json: stdout is not JSON"; head -c 300 "$tmp/out"; fail=$((fail + 1)); }
        rm -f "$tmp/v.json"
        expect "$verb --json=FILE" 0 "" "$q" $verb $(valid) --json="$tmp/v.json" -q
        [ -s "$tmp/v.json" ] && is_json "$tmp/v.json" && pass=$((pass + 1)) || { echo "FAIL $verb --json=FILE wrote no JSON"; fail=$((fail + 1)); }
        expect "$verb --json=" 2 "--json=FILE needs a file name" "$q" $verb $(valid) --json=
        case " $fam " in *" c "*)
            expect "$verb --ctx-size" 0 "" "$q" $verb $(valid) --ctx-size 128 -q
            expect "$verb -c bad" 2 "is not an integer" "$q" $verb $(valid) -c 12x
        esac
        case " $fam " in *" kp "* | *" ke "*)
            expect "$verb --kv-dtype bogus" 2 "bogus" "$q" $verb $(valid) --kv-dtype bogus
            for kv in f16 fp16 fp8 fp8-e4m3 int8; do
                expect "$verb --kv-dtype $kv" 0 "" "$q" $verb $(valid) --kv-dtype $kv -q
            done
        esac
        case " $fam " in *" kp "*) expect "$verb --kv-dtype q8_0" 0 "" "$q" $verb $(valid) --kv-dtype q8_0 -q ;; esac
        case " $fam " in *" ke "*) expect "$verb --kv-dtype q8_0" 2 "use int8" "$q" $verb $(valid) --kv-dtype q8_0 ;; esac
    }
done

# one name for one thing across verbs: requests in flight to a server are --max-concurrency (loadtest,
# and eval through servers), its per-request limit --timeout; both verbs list them and refuse a 0
for verb in loadtest eval; do
    "$q" $verb --help >"$tmp/out" 2>&1
    for opt in --max-concurrency --timeout; do
        grep -q -- "^  $opt " "$tmp/out" && pass=$((pass + 1)) || { echo "FAIL $verb --help lacks $opt"; fail=$((fail + 1)); }
    done
done
expect "eval --max-concurrency 0" 2 "--max-concurrency" "$q" eval --base http://127.0.0.1:1 --candidate http://127.0.0.1:1 \
    --tasks "$(dirname "$0")/../data/mc_tinystories.jsonl" --max-concurrency 0
expect "loadtest --max-concurrency 0" 2 "--max-concurrency" "$q" loadtest --url http://127.0.0.1:1 --max-concurrency 0

# --json takes no separate argument: it never swallows a positional one
expect "inspect --json PATH" 0 "" "$q" inspect --json "$model"
is_json "$tmp/out" && pass=$((pass + 1)) || { echo "FAIL inspect --json PATH"; fail=$((fail + 1)); }
expect "plan --list-models --json" 0 "" "$q" plan --list-models --json
is_json "$tmp/out" && has out '"qwen2.5-7b"' && pass=$((pass + 1)) || { echo "FAIL plan --list-models --json is not JSON"; fail=$((fail + 1)); }

# unknown verbs: usage error with a suggestion
expect "verb typo" 2 "did you mean inspect" "$q" inpsect "$model"
expect "verb prefix" 2 "did you mean perplexity" "$q" perp
expect "verb unknown" 2 "unknown verb 'frobnicate'" "$q" frobnicate

# one scheme vocabulary: every name `quanta formats` prints resolves, or gets a suggestion
"$q" formats | awk 'NR > 1 && $3 ~ /^[0-9.]+$/ {print $1}' >"$tmp/formats"
[ "$(wc -l <"$tmp/formats")" -ge 20 ] && pass=$((pass + 1)) || { echo "FAIL: formats printed too few names"; fail=$((fail + 1)); }
while read -r name; do
    for verb in estimate hw; do
        if [ $verb = estimate ]; then "$q" estimate --model qwen2.5-7b --gpu t4 --scheme "$name" >"$tmp/out" 2>"$tmp/err"
        else "$q" hw --gpu t4 --scheme "$name" >"$tmp/out" 2>"$tmp/err"; fi
        rc=$?
        if [ $rc = 0 ] || { [ $rc = 2 ] && has err "did you mean"; }; then pass=$((pass + 1)); else
            echo "FAIL $verb --scheme $name: exit $rc without a suggestion"; cat "$tmp/err"; fail=$((fail + 1)); fi
    done
done <"$tmp/formats"
expect "w4a16-g128 is w4a16" 0 "" "$q" estimate --model qwen2.5-7b --gpu t4 --scheme w4a16-g128
expect "q4_K suggests q4_k_m" 2 "did you mean q4_k_m" "$q" estimate --model qwen2.5-7b --gpu t4 --scheme q4_K

echo "vocab: $pass passed, $fail failed"
[ $fail -eq 0 ]
