# Top-level entry points. The README's two commands are `make demo` and `make test`;
# both install what they need (scripts/deps.sh) and build first.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz

.PHONY: all deps build asan demo test test-release test-asan fuzz bench clean

all: build

deps:
	@sh scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQT_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

# The main job. Until the planner lands it prints the format table.
demo: build
	./$(BUILD)/quanta formats

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The sanitizer build runs the same unit and golden tests (interop tests once, in release).
test-asan: asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ctest --output-on-failure -j $(JOBS) -LE interop

test: test-release test-asan fuzz

# libFuzzer targets (tests/fuzz/fuzz_*.c), built with clang + ASan/UBSan and run
# FUZZ_TIME seconds each from their seed corpus (tests/fuzz/corpus/<target>/,
# read-only: new inputs go to $(FUZZ_BUILD)/corpus/<target>/).
FUZZ_TIME ?= 20
FUZZ_TARGETS := $(notdir $(basename $(wildcard tests/fuzz/fuzz_*.c)))
fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQT_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	@set -e; for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts; \
	    echo "fuzz: $$t for $(FUZZ_TIME) s"; \
	    ./$(FUZZ_BUILD)/$$t -max_total_time=$(FUZZ_TIME) -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
	        -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t- $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t 2>$(FUZZ_BUILD)/$$t.log \
	        || { tail -n 40 $(FUZZ_BUILD)/$$t.log; exit 1; }; \
	    grep -E '^stat::number_of_executed_units' $(FUZZ_BUILD)/$$t.log | sed "s/^/  $$t: /"; \
	done

bench: build
	@for b in $(BUILD)/bench_*; do [ -x "$$b" ] && "$$b"; done

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
