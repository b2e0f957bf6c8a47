#!/usr/bin/env python3
"""Writes tests/data/mc_tinystories.jsonl: multiple-choice items from TinyStories.

Each item: the opening sentences of a paragraph (the file separates stories,
and some paragraphs within stories, by blank lines) as the context, its real
next sentence as the correct ending, and three sentences of similar length
taken from paragraphs at least ten away (other stories) as distractors (hellaswag shape: context, endings,
label). Deterministic: choices come from SHA-256 of fixed strings, not from a
random generator, so the file is the same on every Python version.

usage: scripts/make_mc_tinystories.py ../shared/data/tinystories-valid-first1000.txt > tests/data/mc_tinystories.jsonl
Paragraphs from the 800th on are used (the tests' perplexity slices read the start of the file).
"""
import hashlib
import json
import re
import sys

N_ITEMS = 64
N_ENDINGS = 4
FIRST_STORY = 800

def h(*parts):
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "little")

def sentences(story):
    text = " ".join(story.split())
    return [s for s in re.split(r'(?<=[.!?])\s+', text) if s]

def clean(s):
    return '"' not in s and 20 <= len(s) <= 110

def main(path):
    stories = open(path, encoding="utf-8").read().split("\n\n")
    stories = [s for s in (x.strip() for x in stories) if s][FIRST_STORY:]
    pool = []  # (story index, sentence) usable as distractors
    for si, st in enumerate(stories):
        for s in sentences(st)[1:]:
            if clean(s):
                pool.append((si, s))
    items = []
    for si, st in enumerate(stories):
        if len(items) == N_ITEMS:
            break
        ss = sentences(st)
        k = 2 + h("ctx", si) % 3  # 2..4 context sentences
        if len(ss) <= k or not all(clean(s) for s in ss[:k + 1]):
            continue
        context, right = " ".join(ss[:k]), ss[k]
        # distractors: sentences of paragraphs at least 10 away (so other stories), within +-40 % of the right ending's length
        cands = [s for (sj, s) in pool if abs(sj - si) > 10 and abs(len(s) - len(right)) <= 0.4 * len(right) and s != right]
        cands.sort(key=lambda s: h("d", si, s))
        wrong = []
        for s in cands:
            if s not in wrong:
                wrong.append(s)
            if len(wrong) == N_ENDINGS - 1:
                break
        if len(wrong) < N_ENDINGS - 1:
            continue
        label = len(items) % N_ENDINGS
        endings = wrong[:label] + [right] + wrong[label:]
        items.append({"context": context, "endings": endings, "label": label})
    for it in items:
        sys.stdout.write(json.dumps(it, ensure_ascii=False) + "\n")

if __name__ == "__main__":
    main(sys.argv[1])
