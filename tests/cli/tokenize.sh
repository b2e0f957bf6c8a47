#!/bin/bash
# tests/cli/tokenize.sh QUANTA SHARED_DIR — `quanta tokenize`: usage errors,
# plain / --json / --batch / stdin output on a small SentencePiece tokenizer.json
# written here (the shape docs/tokenizers.md describes), llama.cpp's ids for
# stories260K.gguf, and clean failures on bad input.
. "$(dirname "$0")/lib/harness.sh"
expect() { # name, expected stdout, command...
    local name="$1" want="$2"
    shift 2
    local got
    got=$("$@" 2>"$tmp/err")
    if [ "$got" = "$want" ]; then pass=$((pass + 1)); else
        echo "FAIL $name: got '$got', want '$want'"
        cat "$tmp/err"
        fail=$((fail + 1))
    fi
}

# A SentencePiece vocabulary as HF "Unigram": <unk> <s> </s>, 256 byte pieces, then pieces.
{
    printf '{"added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true},'
    printf ' {"id": 2, "content": "</s>", "special": true}],\n'
    printf ' "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\\u2581"},'
    printf ' {"type": "Replace", "pattern": {"String": " "}, "content": "\\u2581"}]}, "pre_tokenizer": null,\n'
    printf ' "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": true, "vocab": [["<unk>", 0], ["<s>", 0], ["</s>", 0]'
    for b in $(seq 0 255); do printf ', ["<0x%02X>", 0]' "$b"; done
    printf ', ["\\u2581", -10], ["a", -11], ["b", -12], ["\\u2581a", -1], ["\\u2581ab", -2]]}}\n'
} >"$tmp/tokenizer.json"
printf '{"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true}\n' >"$tmp/tokenizer_config.json"
tj="$tmp/tokenizer.json"

check help 0 "$q" tokenize --help
check no-model 2 "$q" tokenize -p hi
check no-text 2 "$q" tokenize -m "$tj"
check both-texts 2 "$q" tokenize -m "$tj" -p hi -f "$tj"
check bad-option 2 "$q" tokenize -m "$tj" -p hi --bogus
check missing-value 2 "$q" tokenize -m "$tj" -p

# ids: "ab" -> "▁ab" (263); "c" has no piece -> "▁" + byte <0x63> (3 + 0x63 = 102)
expect plain "1 263" "$q" tokenize -m "$tj" -p ab
expect no-bos "263 263" "$q" tokenize -m "$tj" -p "ab ab" --no-bos
expect byte-fallback "1 259 102" "$q" tokenize -m "$tj" -p c
expect empty "1" "$q" tokenize -m "$tj" -p ""
expect control-as-text "259 63 118 65" "$q" tokenize -m "$tj" -p "<s>" --no-bos
expect parse-special "1 1" "$q" tokenize -m "$tj" -p "<s>" --parse-special
printf 'ab\x1ec' >"$tmp/batch.txt"
expect batch "$(printf '1 263\n1 259 102\n')" "$q" tokenize -m "$tj" -f "$tmp/batch.txt" --batch
printf 'ab' >"$tmp/ab.txt"
expect file "1 263" "$q" tokenize -m "$tj" -f "$tmp/ab.txt"
expect stdin "1 263" sh -c "printf ab | '$q' tokenize -m '$tj' -f -"
expect json '{"n_tokens": 2, "ids": [1, 263], "tokens": [
  {"id": 1, "text": "<s>", "piece": ""},
  {"id": 263, "text": "▁ab", "piece": " ab"}
]}' "$q" tokenize -m "$tj" -p ab --json
expect json-bytes '{"n_tokens": 2, "ids": [259, 233], "tokens": [
  {"id": 259, "text": "▁", "piece": " "},
  {"id": 233, "text": "<0xE6>", "piece": null, "bytes": [230]}
]}' "$q" tokenize -m "$tj" -p "$(printf '\xe6')" --json --no-bos

# The real stories260K vocabulary: llama.cpp's ids (reference/llamacpp/greedy.tsv)
expect stories260K "1 403 407 261 378" "$q" tokenize -m "$shared/models/stories260K.gguf" -p "Once upon a time"

# bad input: one clear error, exit 1
check missing-model 1 "$q" tokenize -m "$tmp/nope.json" -p hi
grep -q "quanta: error: .*nope.json" "$tmp/err" && pass=$((pass + 1)) || { echo "FAIL missing-model message"; cat "$tmp/err"; fail=$((fail + 1)); }
printf '{"model": {"type": "WordPiece", "vocab": {}}}' >"$tmp/wp.json"
check unsupported 1 "$q" tokenize -m "$tmp/wp.json" -p hi
grep -q "WordPiece" "$tmp/err" && pass=$((pass + 1)) || { echo "FAIL unsupported message"; cat "$tmp/err"; fail=$((fail + 1)); }
check missing-file 1 "$q" tokenize -m "$tj" -f "$tmp/nope.txt"

echo "tokenize: $pass passed, $fail failed"
[ $fail -eq 0 ]
