# ax: build, test, install.
#   make          build build/ax (and the test binaries build/ax-fault, build/fuzz/fuzz_ax)
#   make run      install missing dependencies, build, start the REPL
#   make test     install missing dependencies, build, run every test (one summary line)
#   make asan     the same suite on a build with AddressSanitizer + UBSan (build-asan/)
#   make tsan     the pmap and collective tests under ThreadSanitizer (build-tsan/)
#   make bench    run the benchmarks in tests/bench
#   make conformance  run ../shared/conformance/*.ax (make test runs them too)
#   make fuzz     FUZZ_SECONDS of libFuzzer on the parser and evaluator (clang, ASan+UBSan)
#   make faultinject  every allocation of a dozen programs failed in turn (ASan build)
#   make install  PREFIX=/usr/local: the binary, the standard library and the man page
#   make deps     install the Debian packages ax needs (apt-get, through sudo when not root)
#
# Per-object flags: add a line such as
#   $(BUILD)/runtime/kernels.o: CFLAGS += -mavx2
# (always through $(BUILD), so that the ASan build gets it too).

.DEFAULT_GOAL := all

CC      ?= gcc
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -pthread -MMD -MP
LDFLAGS ?=
# --as-needed: libraries nobody references (e.g. libgccjit before the jit lands) are dropped,
# so they cost nothing at start-up.
LDLIBS  := -Wl,--as-needed -lreadline -lxsmm -lxsmmnoblas -ldl -lm -lrt -pthread
BUILD   ?= build
PREFIX  ?= /usr/local
PYTHON  ?= python3
NPROC   := $(shell nproc 2>/dev/null || echo 2)
# `make V=1` shows the full commands.
ifeq ($(V),1)
Q :=
say = @:
else
Q := @
say = @echo '  $(1)'
endif

# `make fuzz` (LIBFUZZER=1, with SANITIZE=1 and clang): coverage for libFuzzer everywhere.
ifeq ($(LIBFUZZER),1)
CFLAGS      += -fsanitize=fuzzer-no-link
FUZZ_CFLAGS := -fsanitize=fuzzer -DAX_LIBFUZZER
endif
ifneq ($(findstring clang,$(CC)),)
CFLAGS += -I$(BUILD)/gccjit
endif

# `make asan` (SANITIZE=1): every report is fatal, leaks included; a failed allocation returns
# NULL as malloc does, so that MemoryError paths run (and are leak-checked) there too.
# assert() checks internal invariants in that build only: the release build has -DNDEBUG.
ifeq ($(SANITIZE),1)
SANFLAGS := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all \
            -fno-omit-frame-pointer
CFLAGS   += -O1 $(SANFLAGS)
# exitcode 86: a report never passes for an expected program error (status 1).
export ASAN_OPTIONS  := halt_on_error=1:detect_leaks=1:abort_on_error=0:exitcode=86:allocator_may_return_null=1
export UBSAN_OPTIONS := halt_on_error=1:print_stacktrace=1:exitcode=86
export LSAN_OPTIONS  := suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0:exitcode=86
TESTFLAGS += --sanitized
else ifeq ($(SANITIZE),thread)
# `make tsan`: data races between devices (or any threads) are fatal reports.
CFLAGS   += -O1 -fsanitize=thread -fno-omit-frame-pointer
export TSAN_OPTIONS := halt_on_error=1:exitcode=86:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp
TESTFLAGS += --sanitized --only parallel
else
CFLAGS   += -DNDEBUG
endif

SRCS    := $(wildcard runtime/*.c compiler/*.c numpy/*.c lang/*.c stdlib/*.c cli/*.c)
OBJS    := $(SRCS:%.c=$(BUILD)/%.o)
LIBOBJS := $(filter-out $(BUILD)/cli/main.o,$(OBJS))
UNIT    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
BENCHES := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(wildcard tests/bench/bench_*.c))
# Test binaries whose allocations go through tests/fault/fault_alloc.c (docs/testing.md):
# --wrap sends every malloc & co. of ax's own objects there; libraries keep the real one.
WRAP     := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup \
            -Wl,--wrap=aligned_alloc
HOOK     := $(BUILD)/tests/fault/fault_alloc.o
TESTBINS := $(BUILD)/ax-fault $(BUILD)/fuzz/fuzz_ax
# The wrapped programs leave libxsmm out: its static library defines __real_malloc & co. for
# an allocation hook of its own, which --wrap cannot link; their small products take OpenBLAS.
NOXSMM_OBJ  := $(BUILD)/runtime/smallgemm_noxsmm.o
WRAPOBJS    := $(filter-out $(BUILD)/runtime/smallgemm.o,$(OBJS)) $(NOXSMM_OBJ)
WRAPLIBOBJS := $(filter-out $(BUILD)/cli/main.o,$(WRAPOBJS))
WRAPLDLIBS  := $(filter-out -lxsmm -lxsmmnoblas,$(LDLIBS))

# Where the installed interpreter finds stdlib/*.ax (it looks next to its binary first).
STDLIB_DIR := $(PREFIX)/share/ax/stdlib
MANDIR     := $(PREFIX)/share/man/man1
$(BUILD)/lang/interp.o: CFLAGS += -DAX_STDLIB_DIR='"$(STDLIB_DIR)"'
$(BUILD)/lang/interp.o: $(BUILD)/.prefix
$(BUILD)/runtime/elementwise.o: CFLAGS += -O3 -march=native -fno-math-errno -fno-trapping-math
# ax's vector math: its loops vectorise at -O3 (on AVX-512 in 512-bit vectors, 1.3x); FMA only
# where the code says so, so that its results are the bits jit's code gives (runtime/vecmath.h).
$(BUILD)/runtime/vecmath.o: CFLAGS += -O3 -march=native -mprefer-vector-width=512 \
    -fno-math-errno -fno-trapping-math -ffp-contract=off
# jit's cache keys include a hash of the code it emits for that math.
$(BUILD)/compiler/vecmath_jit.o: CFLAGS += \
    -DAX_VECMATH_BODY_HASH='"$(shell cksum < runtime/vecmath_body.h | cut -d" " -f1)"'
# The reductions' lane loops vectorise at -O3 (in-cache sums 5.7 -> 10.9 Gelem/s); no
# -ffast-math: the order of their additions is part of their result (runtime/reduce.h).
$(BUILD)/runtime/reduce.o: CFLAGS += -O3 -march=native -fno-math-errno -fno-trapping-math
# Transposed tiles: -O3 turns a 16 x 16 tile into vector permutes (-O2 copies it element by element).
$(BUILD)/runtime/tile.o: CFLAGS += -O3 -march=native

DEPS := libreadline-dev libgccjit-12-dev libopenblas-dev libxsmm-dev libcmocka-dev binutils python3 \
        python3-numpy gnuplot-nox graphviz libcmark-dev chromium zlib1g-dev openmpi-bin \
        libopenmpi-dev clang-14 libclang-rt-14-dev

.PHONY: all unit benches run test asan tsan bench conformance install uninstall deps clean FORCE \
        fuzz faultinject
all: $(BUILD)/ax $(TESTBINS)

$(BUILD)/ax: $(OBJS)
	$(call say,LINK $@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC   $<)
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(call say,CC   $<)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBOBJS) $(LDLIBS) -lcmocka

# libgccjit.h lives in gcc's own include directory, whose other headers clang must not see.
ifneq ($(findstring clang,$(CC)),)
$(OBJS): | $(BUILD)/gccjit/libgccjit.h
$(BUILD)/gccjit/libgccjit.h:
	@mkdir -p $(dir $@)
	ln -sf $$(gcc -print-file-name=include)/libgccjit.h $@
endif

# ax with the allocation hook: AX_FAULT_AT=N fails the N-th allocation.
$(BUILD)/ax-fault: $(WRAPOBJS) $(HOOK)
	$(call say,LINK $@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(WRAP) -o $@ $^ $(WRAPLDLIBS)

$(NOXSMM_OBJ): runtime/smallgemm.c
	@mkdir -p $(dir $@)
	$(call say,CC   $< without libxsmm)
	$(Q)$(CC) $(CFLAGS) -DAX_NO_XSMM -c -o $@ $<

# The fuzz target as a standalone program (replays files, mutates them deterministically);
# with LIBFUZZER=1 (make fuzz) the libFuzzer one.
$(BUILD)/fuzz/fuzz_ax: tests/fuzz/fuzz_ax.c $(WRAPLIBOBJS) $(HOOK)
	@mkdir -p $(dir $@)
	$(call say,CC   $<)
	$(Q)$(CC) $(CFLAGS) $(FUZZ_CFLAGS) $(LDFLAGS) $(WRAP) -o $@ $< $(WRAPLIBOBJS) $(HOOK) \
	    $(WRAPLDLIBS)

$(BUILD)/bench/%: tests/bench/%.c $(LIBOBJS)
	@mkdir -p $(dir $@)
	$(call say,CC   $<)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBOBJS) $(LDLIBS)

# Rewritten only when PREFIX changes, so that interp.o is rebuilt with the new stdlib path.
$(BUILD)/.prefix: FORCE
	@mkdir -p $(BUILD)
	@echo '$(STDLIB_DIR)' | cmp -s - $@ || echo '$(STDLIB_DIR)' > $@

unit: $(UNIT)
benches: $(BENCHES)

run: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	./$(BUILD)/ax

# A target that does not build is counted as a failure; the tests that did build still run.
test: deps
	@$(MAKE) --no-print-directory -k -j$(NPROC) all unit; \
	status=$$?; $(PYTHON) tests/run_tests.py --build $(BUILD) $(TESTFLAGS) \
	    $$([ $$status = 0 ] || echo --build-failed)

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan SANITIZE=1 test

# The tests of devices, pmap and collectives (the code that runs threads at once).
tsan:
	@$(MAKE) --no-print-directory BUILD=build-tsan SANITIZE=thread test

# libFuzzer on the parser and evaluator, for FUZZ_SECONDS on the sanitized clang build in
# build-fuzz/, from the seeds in tests/fuzz/corpus and tests/lang; what it finds goes to
# build-fuzz/corpus (new inputs) and build-fuzz/crashes. FUZZ_FLAGS adds libFuzzer options,
# e.g. FUZZ_FLAGS='-fork=1 -ignore_crashes=1 -ignore_timeouts=1' to go on after a crash.
FUZZ_SECONDS ?= 600
FUZZ_FLAGS   ?=
FUZZ_TIMEOUT ?= 120
fuzz: deps
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang-14 SANITIZE=1 LIBFUZZER=1 \
	    -j$(NPROC) build-fuzz/fuzz/fuzz_ax
	@mkdir -p build-fuzz/corpus build-fuzz/crashes build-fuzz/run
	cd build-fuzz/run && XDG_CACHE_HOME=$(CURDIR)/build-fuzz/cache \
	    LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	    nice -n 19 ../fuzz/fuzz_ax -max_total_time=$(FUZZ_SECONDS) \
	    -dict=../../tests/fuzz/ax.dict -max_len=4096 -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=4096 \
	    -artifact_prefix=../crashes/ -print_final_stats=1 $(FUZZ_FLAGS) \
	    ../corpus ../../tests/fuzz/corpus ../../tests/lang

# Fault injection (tests/fault/faultinject.py: every allocation of a dozen tests/lang programs
# failed in turn), on the ASan build; FAULT_CC=clang-14 builds it with clang (build-asan-clang),
# whose UBSan also reports arithmetic on the NULL of a failed allocation (gcc 12's does not).
FAULT_CC    ?= $(CC)
FAULT_BUILD := build-asan$(if $(findstring clang,$(FAULT_CC)),-clang)
faultinject:
	@$(MAKE) --no-print-directory BUILD=$(FAULT_BUILD) CC=$(FAULT_CC) SANITIZE=1 -j$(NPROC) \
	    $(FAULT_BUILD)/ax-fault
	$(PYTHON) tests/fault/faultinject.py --ax $(FAULT_BUILD)/ax-fault --sanitized $(FAULT_FLAGS)

# The shared conformance programs alone (make test runs them too, among every suite).
conformance: all
	@if [ -f ../shared/conformance/run.py ]; then \
	    $(PYTHON) ../shared/conformance/run.py --ax $(BUILD)/ax; \
	else echo "../shared/conformance is not here: nothing to run"; fi

bench: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all benches
	$(PYTHON) tests/run_bench.py --build $(BUILD)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(STDLIB_DIR) $(DESTDIR)$(MANDIR)
	install -m 755 $(BUILD)/ax $(DESTDIR)$(PREFIX)/bin/ax
	cd stdlib && find . -name '*.ax' -exec install -D -m 644 {} $(DESTDIR)$(STDLIB_DIR)/{} \;
	install -d $(DESTDIR)$(PREFIX)/share/ax/data
	$(if $(wildcard data/*.csv),install -m 644 $(wildcard data/*.csv) $(DESTDIR)$(PREFIX)/share/ax/data)
	install -m 644 docs/ax.1 $(DESTDIR)$(MANDIR)/ax.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/ax $(DESTDIR)$(MANDIR)/ax.1
	rm -rf $(DESTDIR)$(PREFIX)/share/ax

# Instant when everything is installed: one dpkg-query call lists what is present.
deps:
	@command -v dpkg-query >/dev/null || { echo "deps: no dpkg-query; install by hand: $(DEPS)"; exit 0; }; \
	missing=$$(dpkg-query -W -f='$${Package} $${Status}\n' $(DEPS) 2>/dev/null \
	           | awk '$$NF == "installed" { ok[$$1] = 1 } END { n = split("$(strip $(DEPS))", want, " "); \
	                  for (i = 1; i <= n; i++) if (!(want[i] in ok)) printf "%s ", want[i] }'); \
	if [ -n "$$missing" ]; then \
	    echo "deps: installing $$missing"; \
	    sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	    $$sudo apt-get update -q && \
	    $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

clean:
	rm -rf build build-asan build-tsan build-asan-clang build-fuzz

FORCE:

-include $(OBJS:.o=.d) $(UNIT:=.d) $(BENCHES:=.d) $(HOOK:.o=.d) $(BUILD)/fuzz/fuzz_ax.d
