# ax: build, test, install.
#   make          build build/ax
#   make run      install missing dependencies, build, start the REPL
#   make test     install missing dependencies, build, run every test (one summary line)
#   make asan     the same suite on a build with AddressSanitizer + UBSan (build-asan/)
#   make bench    run the benchmarks in tests/bench
#   make conformance  run ../shared/conformance/*.ax (make test runs them too)
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
LDLIBS  := -Wl,--as-needed -lreadline -ldl -lm -pthread
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
else
CFLAGS   += -DNDEBUG
endif

SRCS    := $(wildcard runtime/*.c compiler/*.c numpy/*.c lang/*.c stdlib/*.c cli/*.c)
OBJS    := $(SRCS:%.c=$(BUILD)/%.o)
LIBOBJS := $(filter-out $(BUILD)/cli/main.o,$(OBJS))
UNIT    := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
BENCHES := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(wildcard tests/bench/bench_*.c))

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

DEPS := libreadline-dev libgccjit-12-dev libopenblas-dev libcmocka-dev binutils python3 \
        python3-numpy gnuplot-nox graphviz libcmark-dev chromium zlib1g-dev

.PHONY: all unit benches run test asan bench conformance install uninstall deps clean FORCE
all: $(BUILD)/ax

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
	rm -rf build build-asan

FORCE:

-include $(OBJS:.o=.d) $(UNIT:=.d) $(BENCHES:=.d)
