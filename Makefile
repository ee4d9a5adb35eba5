# perceive: `make` builds into build/ (CLI at build/perceive); `make run`, `make test`.
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps run test test-asan test-release bench clean check-reference fuzz install tsan

all: $(BUILD)/Makefile
	@$(MAKE) --no-print-directory -C $(BUILD) -j$(JOBS)

$(BUILD)/Makefile:
	@./tools/deps.sh
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

deps:
	./tools/deps.sh

# Installs into $(DESTDIR)$(PREFIX): lib/ (libperceive.so + soname links, libperceive.a, pkgconfig/
# perceive.pc; lib/<multiarch>/ for PREFIX=/usr), include/perceive.h, bin/perceive,
# share/man/man1/perceive.1, and the Python package in lib/python3/dist-packages/perceive.
PREFIX ?= /usr/local
install: $(BUILD)/Makefile
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	$(MAKE) --no-print-directory -C $(BUILD) -j$(JOBS) perceive perceive_shared perceive_cli
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD)

run: all
	./tools/run_demo.sh $(BUILD)/perceive

# Release build + tests, then the same tests under ASan+UBSan.
test: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	$(MAKE) --no-print-directory -C $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERCEIVE_SANITIZE=ON $(CMAKE_ARGS)
	$(MAKE) --no-print-directory -C $(BUILD_ASAN) -j$(JOBS)
	cd $(BUILD_ASAN) && PV_SANITIZED=1 ctest --output-on-failure -j$(JOBS) -LE slow

bench: all
	./bench/run_models.sh $(BUILD)/perceive

# libFuzzer targets (tests/fuzz): clang-14 + libclang-rt-14-dev build into $(FUZZ_BUILD), each target
# runs FUZZ_SECONDS; findings land in $(FUZZ_BUILD)/crashes. FUZZ_TARGETS / FUZZ_JOBS: see tests/fuzz/run.sh.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) ./tests/fuzz/run.sh

# ThreadSanitizer (RELIABILITY.md): the concurrency tests only (label tsan: test_concurrency; the
# thread pool in test_core; serve: concurrent requests, streams, SIGTERM in flight), oneDNN off
# (libgomp is not instrumented), only the targets they need. Suppressions: tests/tsan.supp.
TSAN_BUILD ?= build-tsan
tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERCEIVE_TSAN=ON -DPERCEIVE_DNNL=OFF $(CMAKE_ARGS)
	$(MAKE) --no-print-directory -C $(TSAN_BUILD) -j$(JOBS) test_concurrency test_core serve_test perceive_cli
	cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	    PV_SANITIZED=1 ctest --output-on-failure -R '^(test_concurrency|test_core|serve)$$'

check-reference: all
	./tools/gen/make_fixtures.sh
	PERCEIVE=$(BUILD)/perceive ./tools/gen/make_bevfusion_fixtures.sh
	PERCEIVE=$(BUILD)/perceive ./tools/gen/make_hamer_fixtures.sh
	./tools/gen/make_meteor_decode_fixtures.sh

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
