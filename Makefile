# Top-level entry points. The README's two commands are `make demo` and `make test`;
# both install what they need (scripts/deps.sh) and build first.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz

.PHONY: all deps build asan demo check test test-release test-avx2 test-asan fuzz bench clean

all: build

deps:
	@sh scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQT_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

# The main job: will the seed's model fit? Qwen2.5-7B on a 16 GB T4, then on an A100 80 GB:
# the ranked tables, the advice and the memory figures (SVG) in $(BUILD)/.
# `make demo MODEL=path` also inspects that checkpoint, measures its perplexity on TEXT (default:
# WikiText-2 from ../shared; pass TEXT=file elsewhere) and plans it for the T4.
MODEL ?=
TEXT ?= ../shared/data/wiki.test.raw
demo: build
	./$(BUILD)/quanta plan --model qwen2.5-7b --gpu t4 --svg $(BUILD)/plan-qwen2.5-7b-t4.svg
	@echo
	./$(BUILD)/quanta plan --model qwen2.5-7b --gpu a100-80gb --goal throughput --svg $(BUILD)/plan-qwen2.5-7b-a100.svg
ifneq ($(strip $(MODEL)),)
	@echo
	./$(BUILD)/quanta inspect "$(MODEL)"
	@echo
	./$(BUILD)/quanta perplexity -m "$(MODEL)" -f "$(TEXT)" --chunks 8
	@echo
	./$(BUILD)/quanta plan --model "$(MODEL)" --gpu t4
endif

# The edit-test loop: the release unit, golden and CLI tests (no fuzzers, no ASan, no
# interop), a few minutes. `make test` stays the full run that CI uses.
check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L 'unit|golden|cli'

# Ends with every skip and its reason (ctest only lists skipped tests), so a run without Node.js says so.
test-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@grep -h 'SKIP: ' $(BUILD)/Testing/Temporary/LastTest.log | sed 's/^ *//' | sort -u | sed 's/^/make test: /' || true

# The sanitizer build runs the same unit and golden tests (interop tests once, in release).
test-asan: asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --output-on-failure -j $(JOBS) -LE 'interop|heavy'

# The unit and golden tests once more with the kernels capped at AVX2 (QUANTA_CPU, lib/core/cpu.c),
# so an AVX-512 machine also checks the AVX2 code an AVX2-only machine runs.
test-avx2: build
	cd $(BUILD) && QUANTA_CPU=avx2 ctest --output-on-failure -j $(JOBS) -L '^(unit|golden)$$' -LE heavy

# Fuzzers and the sanitizer build first, so the run ends with the full release ctest summary.
test: fuzz test-asan test-avx2 test-release

# libFuzzer targets (tests/fuzz/fuzz_*.c), built with clang + ASan/UBSan and run
# FUZZ_TIME seconds each from their seed corpus (tests/fuzz/corpus/<target>/,
# read-only: new inputs go to $(FUZZ_BUILD)/corpus/<target>/). A fixed libFuzzer
# seed, so that a CI failure replays with the same mutations (only the stopping
# point depends on the machine's speed); FUZZ_SEED=0 asks libFuzzer for a random one.
FUZZ_TIME ?= 3
FUZZ_SEED ?= 1
FUZZ_TARGETS := $(notdir $(basename $(wildcard tests/fuzz/fuzz_*.c)))
fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQT_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	@set -e; for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts; \
	    echo "fuzz: $$t for $(FUZZ_TIME) s, seed $(FUZZ_SEED)"; \
	    ./$(FUZZ_BUILD)/$$t -max_total_time=$(FUZZ_TIME) -seed=$(FUZZ_SEED) -print_final_stats=1 -timeout=60 -rss_limit_mb=2048 \
	        -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t- $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t 2>$(FUZZ_BUILD)/$$t.log \
	        || { tail -n 40 $(FUZZ_BUILD)/$$t.log; exit 1; }; \
	    grep -E '^stat::number_of_executed_units' $(FUZZ_BUILD)/$$t.log | sed "s/^/  $$t: /"; \
	done

bench: build
	@for b in $(BUILD)/bench_*; do [ -x "$$b" ] && "$$b"; done

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
