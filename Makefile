# SPDX-License-Identifier: GPL-2.0-or-later
# tracerd: one GNU Makefile.
#   make                 build build/tracerd
#   make check           install test deps, build, run every test
#   make demo            install deps, build, profile the bundled demo
#   make bench           benchmarks against the anchors (eu-stack, perf)
#   make install         PREFIX=/usr/local DESTDIR= (binary, man pages, systemd unit,
#                        example /etc/tracerd/tracerd.conf)
#   make lint            mandoc -Tlint on the man pages
# Knobs: O=build (objects), V=1 (full commands), SANITIZE=address,undefined
# (objects then go to $(O)/san-*), WERROR=0 (warnings not fatal).

O ?= build
V ?= 0
SANITIZE ?=
WERROR ?= 1
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# systemd's unit directory: /usr/lib/systemd/system for PREFIX=/usr
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
PKG_CONFIG ?= pkg-config
CFLAGS ?= -O2 -g
CXX ?= g++

comma := ,
ifneq ($(SANITIZE),)
B := $(O)/san-$(subst $(comma),-,$(SANITIZE))
else
B := $(O)
endif

Q := $(if $(filter 1,$(V)),,@)
# V=1: every command; QUIET=1 (make check's build): nothing but errors
say = $(if $(filter 1,$(V)),,$(if $(filter 1,$(QUIET)),@:;,@printf '  %-7s %s\n' $(1) $(2);))

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes \
	-Wvla -Wwrite-strings -fno-common
ifeq ($(WERROR),1)
WARN += -Werror
endif
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags libdw libelf libcurl 2>/dev/null)
PKG_LIBS = $(shell $(PKG_CONFIG) --libs libdw libelf libcurl 2>/dev/null)
SAN_FLAGS := $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all)
TD_CFLAGS = -std=gnu11 $(WARN) $(CFLAGS) $(SAN_FLAGS) -pthread -MMD -MP $(PKG_CFLAGS)
TD_LDFLAGS = $(LDFLAGS) $(SAN_FLAGS) -pthread
TD_LIBS = $(PKG_LIBS) -liberty -lz -ldeflate

# Every .c of the stages' folders: a file split or added needs no edit here.
LIB_DIRS := common chunkfmt report ptrace symbolize daemon service cli
MAIN_SRC := cli/main.c
LIB_SRCS := $(filter-out $(MAIN_SRC),$(sort $(wildcard $(LIB_DIRS:%=%/*.c))))
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/obj/%.o)
MAIN_OBJ := $(MAIN_SRC:%.c=$(B)/obj/%.o)
TRACERD := $(B)/tracerd

TEST_SRCS := $(wildcard test/*/test_*.c) test/helpers.c \
	test/tools/synth.c
TEST_OBJS := $(TEST_SRCS:%.c=$(B)/obj/%.o)
TEST_BIN := $(B)/test/tracerd-tests
GEN := $(B)/tools/tracerd-gen

FX := $(O)/fixtures
# Fixtures are targets, not tracerd: never sanitized, -O2 without frame
# pointers, no sibling calls so that the known chains stay chains.
FX_CFLAGS := -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls -pthread
FIXTURES := $(FX)/fx_chain $(FX)/fx_cxx $(FX)/fx_threads $(FX)/fx_eintr \
	$(FX)/fx_chain_stripped $(FX)/fx_nocfi $(FX)/demo $(FX)/fx_split $(FX)/fx_churn \
	$(FX)/fx_signals $(FX)/fx_exec $(FX)/fx_crash $(FX)/fx_work $(FX)/fx_deep \
	$(FX)/fx_dlopen $(FX)/libfx_plugin.so $(FX)/fx_rename $(FX)/fx_spin $(FX)/fx_zleader \
	$(FX)/fx_evloop $(FX)/fx_parked $(FX)/fx_locks $(FX)/fx_crowd $(FX)/fx_contend \
	$(FX)/fx_many $(FX)/fx_oom $(FX)/fx_svc $(FX)/fx_chain_linked $(FX)/fx_hot $(FX)/fx_lto \
	$(FX)/fx_handler $(FX)/fx_owners $(FX)/fx_jobstop
FIXTURES += $(FX)/fx_die $(FX)/fx_bursts
FIXTURES += $(FX)/fx_evil $(FX)/fx_forks $(FX)/fx_bigframe $(FX)/fx_pingpong $(FX)/fx_pipe
FIXTURES += $(FX)/fx_jit
FIXTURES += $(FX)/fx_sleepers
FIXTURES += $(FX)/fx_kwait

MANS := man/tracerd.8 man/tracerd-chunk.5 man/tracerd-report.1 man/tracerd.conf.5

.PHONY: all check demo bench install lint clean deps fixtures test-build fuzz fuzz-check \
	fuzz-mutate
all: $(TRACERD)

$(B)/obj/%.o: %.c $(B)/.flags
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TD_CFLAGS) -c -o $@ $<

# Rebuild everything when the flags change.
$(B)/.flags: FORCE
	$(Q)mkdir -p $(@D)
	$(Q)echo '$(CC) $(TD_CFLAGS) $(TD_LDFLAGS) $(TD_LIBS)' | cmp -s - $@ || \
		echo '$(CC) $(TD_CFLAGS) $(TD_LDFLAGS) $(TD_LIBS)' > $@
FORCE:

$(B)/libtracerd.a: $(LIB_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(TRACERD): $(MAIN_OBJ) $(B)/libtracerd.a
	$(call say,LD,$@)
	$(Q)$(CC) $(TD_LDFLAGS) -o $@ $^ $(TD_LIBS)

$(B)/obj/test/%.o: TD_CFLAGS += -DTD_BUILD_DIR='"$(abspath $(B))"' -DTD_FIXTURE_DIR='"$(abspath $(FX))"' -DTD_SOURCE_DIR='"$(CURDIR)"'

$(TEST_BIN): $(TEST_OBJS) $(B)/libtracerd.a
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TD_LDFLAGS) -o $@ $^ $(TD_LIBS) -lcriterion -lm

# ---- fixtures
$(FX)/fx_chain: test/fixtures/fx_chain.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $<
$(FX)/fx_threads $(FX)/fx_split $(FX)/fx_churn $(FX)/fx_signals $(FX)/fx_exec \
$(FX)/fx_crash $(FX)/fx_work $(FX)/fx_deep $(FX)/fx_rename $(FX)/fx_spin \
$(FX)/fx_zleader $(FX)/fx_locks $(FX)/fx_crowd $(FX)/fx_many $(FX)/fx_oom \
$(FX)/fx_svc $(FX)/fx_handler $(FX)/fx_die $(FX)/fx_owners $(FX)/fx_forks $(FX)/fx_bigframe \
$(FX)/fx_pingpong $(FX)/fx_pipe: $(FX)/%: test/fixtures/%.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $<
# A JIT of one function, announced in a perf map or a jitdump.
$(FX)/fx_jit: test/fixtures/fx_jit.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $<
$(FX)/fx_sleepers: test/fixtures/fx_sleepers.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $<
# Two threads blocked for good: in read() on a pipe, in nanosleep().
$(FX)/fx_kwait: test/fixtures/fx_kwait.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $<
# Fixtures that count their waits' EINTR and early returns.
$(FX)/fx_evloop $(FX)/fx_parked $(FX)/fx_contend $(FX)/fx_bursts \
$(FX)/fx_jobstop: $(FX)/%: test/fixtures/%.c test/fixtures/fx_waits.h
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $<
# Its function's placeholder name becomes 26 bytes of terminal escapes,
# the same length, wherever the binary holds it (gas refuses them).
$(FX)/fx_evil: test/fixtures/fx_evil.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@.tmp $< && \
		perl -0777 -pe 's/EVIL_E_0_OWNED_B_2J_31M_FF/EVIL\x1b]0;owned\x07\x1b[2J\x1b[31m\xff\xc2\x9b/g' \
		$@.tmp > $@.tmp2 && chmod 755 $@.tmp2 && mv $@.tmp2 $@ && rm -f $@.tmp
$(FX)/fx_eintr: test/fixtures/fx_eintr.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $<
$(FX)/fx_nocfi: test/fixtures/fx_nocfi.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g -fno-omit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables \
		-fno-optimize-sibling-calls -o $@.tmp $< && objcopy --remove-section .debug_frame $@.tmp $@ && \
		rm -f $@.tmp
$(FX)/libfx_plugin.so: test/fixtures/fx_plugin.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -shared -fPIC -o $@ $<
# Built whole (the tests read its symbols' addresses), then stripped of
# every symbol table but .dynsym: only .eh_frame places its functions.
$(FX)/libfx_hot_full.so: test/fixtures/libfx_hot.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -shared -fPIC -o $@ $<
$(FX)/libfx_hot.so: $(FX)/libfx_hot_full.so
	$(call say,STRIP,$@)
	$(Q)strip --strip-all -o $@ $<
$(FX)/fx_hot: test/fixtures/fx_hot.c $(FX)/libfx_hot.so
	$(call say,FIXTURE,$@)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $< -L$(FX) -lfx_hot -Wl,-rpath,'$$ORIGIN'
# Link-time optimized across three files: its DWARF's inlined calls point
# across compilation units, and two static churns get clone names.
$(FX)/fx_lto: test/fixtures/fx_lto.c test/fixtures/fx_lto_a.c test/fixtures/fx_lto_b.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -flto -o $@ $^
$(FX)/fx_dlopen: test/fixtures/fx_dlopen.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $< -ldl
$(FX)/demo: test/fixtures/demo.c
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -o $@ $<
$(FX)/fx_cxx: test/fixtures/fx_cxx.cc
	$(call say,FIXTURE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(FX_CFLAGS) -std=gnu++17 -o $@ $<
# A stripped copy whose debuginfo sits only in a build-id directory.
$(FX)/fx_chain_stripped: $(FX)/fx_chain
	$(call say,STRIP,$@)
	$(Q)rm -rf $(FX)/debugdir && bid=$$(readelf -n $< | awk '/Build ID/ {print $$3}') && \
		test -n "$$bid" && mkdir -p $(FX)/debugdir/.build-id/$${bid%$${bid#??}} && \
		objcopy --only-keep-debug $< $(FX)/debugdir/.build-id/$${bid%$${bid#??}}/$${bid#??}.debug && \
		strip --strip-all -o $@ $<

# A stripped copy whose debuginfo is found only by its .gnu_debuglink, in
# the .debug directory beside it.
$(FX)/fx_chain_linked: $(FX)/fx_chain
	$(call say,STRIP,$@)
	$(Q)mkdir -p $(FX)/.debug && \
		objcopy --only-keep-debug $< $(FX)/.debug/fx_chain_linked.debug && \
		strip --strip-all -o $@.tmp $< && \
		objcopy --add-gnu-debuglink=$(FX)/.debug/fx_chain_linked.debug $@.tmp && \
		mv $@.tmp $@

fixtures: $(FIXTURES)
test-build: $(TRACERD) $(TEST_BIN) $(GEN) fixtures

deps:
	$(Q)scripts/install-deps check

# deps first (it may install the compiler's libraries), then the build.
check: deps
	$(Q)$(MAKE) --no-print-directory QUIET=1 test-build
	@echo "  BUILT   $(B): tracerd, its tests and fixtures"
	$(Q)$(MAKE) --no-print-directory lint
	$(Q)$(MAKE) --no-print-directory fuzz-check
	$(Q)$(MAKE) --no-print-directory fuzz-mutate
	$(Q)scripts/run-tests $(TEST_BIN)

demo:
	$(Q)scripts/install-deps demo
	$(Q)$(MAKE) --no-print-directory $(TRACERD) $(FX)/demo
	$(Q)scripts/demo $(TRACERD) $(FX)/demo $(B)/demo

$(GEN): test/tools/tracerd-gen.c $(B)/obj/test/tools/synth.o $(B)/libtracerd.a
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TD_CFLAGS) -o $@ $^ $(TD_LDFLAGS) $(TD_LIBS) -lm

BENCH_BIN := $(B)/bench/bench_dump
$(BENCH_BIN): test/bench/bench_dump.c $(B)/.flags
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TD_CFLAGS) -o $@ $< $(TD_LDFLAGS)

# >= 1,000,000 samples each for tracerd and perf (~9 GB of perf.data); 50 for a quick run
REPORT_SECONDS ?= 560
BENCH_COST := $(B)/bench/bench_cost
$(BENCH_COST): test/bench/bench_cost.c $(B)/.flags
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TD_CFLAGS) -o $@ $< $(TD_LDFLAGS)

BENCH_CHUNK := $(B)/bench/bench_chunk
$(BENCH_CHUNK): test/bench/bench_chunk.c $(B)/obj/test/tools/synth.o $(B)/libtracerd.a
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TD_CFLAGS) -o $@ $^ $(TD_LDFLAGS) $(TD_LIBS) -lm

BENCH_KILL9 := $(B)/bench/bench_kill9
$(BENCH_KILL9): test/bench/bench_kill9.c $(B)/libtracerd.a
	$(call say,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TD_CFLAGS) -o $@ $^ $(TD_LDFLAGS) $(TD_LIBS) -lm

# interleaved rounds of bench_cost (each target alone, tracerd, perf)
BENCH_ROUNDS ?= 5
# ANCHOR=path/to/tracerd: another build (issue 31's anchor: the one before
# the stack copies that fit and the kernel chains) to weigh the daemon's CPU
# per sample against, in bench_anchor.sh; without it, no such rows
ANCHOR ?=
bench:
	$(Q)scripts/install-deps bench
	$(Q)$(MAKE) --no-print-directory $(TRACERD) $(GEN) $(BENCH_BIN) $(BENCH_CHUNK) $(BENCH_COST) $(BENCH_KILL9) fixtures
	$(Q)$(BENCH_BIN) $(TRACERD) $(FX)/fx_threads
	$(Q)$(BENCH_CHUNK) 600
	$(Q)$(BENCH_COST) $(TRACERD) $(FX) $(BENCH_ROUNDS) test/bench/cxx_heavy.cc
	$(Q)sh test/bench/bench_report.sh $(TRACERD) $(FX)/fx_work $(REPORT_SECONDS)
	$(Q)sh test/bench/bench_html.sh $(TRACERD) $(GEN)
	$(Q)sh test/bench/bench_signals.sh $(TRACERD) $(FX)/fx_signals
	$(Q)sh test/bench/bench_modes.sh $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_ptracecpu.sh $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_stacks.sh $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_owners.sh $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_kernel.sh $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_kstack.sh $(TRACERD) $(FX)
	$(Q)$(if $(ANCHOR),sh test/bench/bench_anchor.sh $(TRACERD) $(ANCHOR) $(FX),echo "bench_anchor: no ANCHOR=tracerd given, no rows")
	$(Q)$(BENCH_KILL9) $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_many.sh $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_children.sh $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_bomb.sh $(TRACERD) $(FX) $(GEN)
	$(Q)sh test/bench/bench_service.sh $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_export.sh $(TRACERD) $(FX)
	$(Q)sh test/bench/bench_python.sh $(TRACERD) $(FX)

# The reader, and the report path on top of it, under libFuzzer (clang);
# FUZZ_SECONDS bounds each run.
FUZZ_SECONDS ?= 300
FUZZ_READER_SRCS := $(wildcard common/*.c) \
	chunkfmt/format.c chunkfmt/reader.c chunkfmt/writer.c chunkfmt/dir.c
# report/ whole: a file split out of it needs no edit here
FUZZ_REPORT_SRCS := $(FUZZ_READER_SRCS) chunkfmt/repo.c chunkfmt/snapshot.c \
	$(sort $(wildcard report/*.c))
FUZZ_FLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined
$(O)/fuzz/fuzz_reader: test/fuzz/fuzz_reader.c $(FUZZ_READER_SRCS) $(wildcard chunkfmt/*.h common/*.h)
	$(call say,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)clang $(FUZZ_FLAGS) -o $@ $< $(FUZZ_READER_SRCS)
$(O)/fuzz/fuzz_report: test/fuzz/fuzz_report.c $(FUZZ_REPORT_SRCS) \
		$(wildcard chunkfmt/*.h common/*.h report/*.h)
	$(call say,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)clang $(FUZZ_FLAGS) -o $@ $< $(FUZZ_REPORT_SRCS) -lz

# Each target on its own corpus, seeded with the golden chunks; -rss_limit_mb
# and -timeout turn a memory or time bomb into a failure.
fuzz: $(O)/fuzz/fuzz_reader $(O)/fuzz/fuzz_report
	$(Q)for t in reader report; do \
		mkdir -p $(O)/fuzz/corpus-$$t && cp test/golden/*.tcf $(O)/fuzz/corpus-$$t/ && \
		$(O)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=1024 -timeout=10 \
			-print_final_stats=1 $(O)/fuzz/corpus-$$t || exit 1; done

# In make check: a short run, skipped (with the reason) without libFuzzer.
fuzz-check:
	$(Q)if printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' \
		| clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then \
		mkdir -p $(O)/fuzz; \
		$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=15 > $(O)/fuzz/check.log 2>&1 || \
			{ tail -40 $(O)/fuzz/check.log; echo "fuzz: FAILED (input saved in the current directory)"; exit 1; }; \
		echo "fuzz: reader and report survived $$(grep -o 'Done [0-9]* runs' $(O)/fuzz/check.log | awk '{print $$2}' | paste -sd+) runs"; \
	else echo "fuzz: skipped: clang with libFuzzer is not installed (apt-get install clang libclang-rt-14-dev)"; fi

# The same two entry points under a mutation pass that renews every CRC
# after mutating, so that mutants reach the decoder; gcc's UBSan and ASan,
# the first report fatal: make check runs it for MUTATE_SECONDS a target
# (seconds, not minutes), with no need for clang.  A failure leaves its
# input in $(O)/fuzz/mutant-TARGET.tcf.
MUTATE_SECONDS ?= 4
MUTATE_SEED ?= 32
MUTATE_FLAGS := -std=gnu11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
$(O)/fuzz/mutate_reader: test/fuzz/mutate.c test/fuzz/fuzz_reader.c $(FUZZ_READER_SRCS) \
		$(wildcard chunkfmt/*.h common/*.h)
	$(call say,MUTATE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(MUTATE_FLAGS) -o $@ test/fuzz/mutate.c test/fuzz/fuzz_reader.c $(FUZZ_READER_SRCS)
$(O)/fuzz/mutate_report: test/fuzz/mutate.c test/fuzz/fuzz_report.c $(FUZZ_REPORT_SRCS) \
		$(wildcard chunkfmt/*.h common/*.h report/*.h)
	$(call say,MUTATE,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(MUTATE_FLAGS) -o $@ test/fuzz/mutate.c test/fuzz/fuzz_report.c \
		$(FUZZ_REPORT_SRCS) -lz
fuzz-mutate: $(O)/fuzz/mutate_reader $(O)/fuzz/mutate_report
	$(Q)for t in reader report; do \
		n=$$(UBSAN_OPTIONS=print_stacktrace=1 $(O)/fuzz/mutate_$$t $(MUTATE_SECONDS) \
			$(MUTATE_SEED) $(O)/fuzz/mutant-$$t.tcf test/golden/*.tcf) || \
			{ echo "fuzz-mutate: $$t FAILED on $(O)/fuzz/mutant-$$t.tcf"; exit 1; }; \
		echo "fuzz-mutate: $$t survived $$n mutants with renewed CRCs (UBSan, ASan)"; done

lint:
	$(Q)mandoc -Tlint -W warning $(MANS)

# The unit names the installed binary: it is made from its template here,
# not at build time, so that it always follows the PREFIX of this install.
# The configuration lives in /etc whatever the prefix (tracerd service reads
# /etc/tracerd/tracerd.conf), and an administrator's copy is never replaced:
# without DESTDIR the example goes in only where there is none.
install: $(TRACERD)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/tracerd
	install -m 0755 $(TRACERD) $(DESTDIR)$(BINDIR)/tracerd
	install -m 0644 man/tracerd.8 $(DESTDIR)$(MANDIR)/man8/tracerd.8
	install -m 0644 man/tracerd-chunk.5 $(DESTDIR)$(MANDIR)/man5/tracerd-chunk.5
	install -m 0644 man/tracerd-report.1 $(DESTDIR)$(MANDIR)/man1/tracerd-report.1
	install -m 0644 man/tracerd.conf.5 $(DESTDIR)$(MANDIR)/man5/tracerd.conf.5
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/tracerd.service.in > $(DESTDIR)$(UNITDIR)/tracerd.service.tmp
	chmod 0644 $(DESTDIR)$(UNITDIR)/tracerd.service.tmp
	mv -f $(DESTDIR)$(UNITDIR)/tracerd.service.tmp $(DESTDIR)$(UNITDIR)/tracerd.service
	install -d $(DESTDIR)$(PREFIX)/share/tracerd
	install -m 0644 systemd/tracerd-export.conf $(DESTDIR)$(PREFIX)/share/tracerd/tracerd-export.conf
	@if [ -z "$(DESTDIR)" ] && [ -e $(SYSCONFDIR)/tracerd/tracerd.conf ]; then \
		echo "install: kept $(SYSCONFDIR)/tracerd/tracerd.conf (the example is systemd/tracerd.conf)"; \
	else \
		echo "install -m 0644 systemd/tracerd.conf $(DESTDIR)$(SYSCONFDIR)/tracerd/tracerd.conf"; \
		install -m 0644 systemd/tracerd.conf $(DESTDIR)$(SYSCONFDIR)/tracerd/tracerd.conf; \
	fi

clean:
	rm -rf $(O)

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
