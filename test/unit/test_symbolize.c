/* Unit tests of symbolize/: demangling, the cache, the end reasons of the
 * unwinder on captured samples altered on purpose, and the symbol tables
 * against elfutils' own lookup. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "../../ptrace/ptrace.h"
#include "../../symbolize/symbolize-internal.h"
#include "../helpers.h"

#define FX(name) TD_FIXTURE_DIR "/" name
#define WINDOW (64u * 1024)

Test(demangle, cxx_and_rust)
{
	static const char *const cases[][2] = {
		{ "_ZN6shapes12spin_foreverEi", "shapes::spin_forever(int)" },
		{ "_ZZ4mainENKUlvE0_clEv", "main::{lambda()#2}::operator()() const" },
		{ "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" },
		{ "_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar" },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = sym_demangle(cases[i][0]);

		cr_assert_not_null(d, "%s", cases[i][0]);
		cr_expect_str_eq(d, cases[i][1]);
		free(d);
	}
	cr_expect_null(sym_demangle("main"));
	{
		static const char *const clones[][2] = {
			{ "msort_with_tmp.part.0", "msort_with_tmp" },
			{ "churn.constprop.0", "churn" },
			{ "churn.constprop.1", "churn" },
			{ "fill.isra.0.cold", "fill" },
			{ "PyObject_Vectorcall.lto_priv.0", "PyObject_Vectorcall" },
			{ "helper.llvm.1234567", "helper" },
			{ "f(int) [clone .constprop.0]", "f(int)" },
			{ "ns::g() [clone .isra.0] [clone .cold]", "ns::g()" },
			{ "free.localalias", "free" },
			/* not clones */
			{ "main", "main" },
			{ "x.0", "x.0" },
			{ ".cold", ".cold" },
			{ "a.b.constprop", "a.b.constprop" },
			{ "runtime.memmove.abi0", "runtime.memmove.abi0" },
		};
		/* in a Go binary: only its ABI0 wrappers */
		static const char *const go[][2] = {
			{ "runtime.memmove.abi0", "runtime.memmove" },
			{ "runtime.cold", "runtime.cold" },
			{ "main.part.0", "main.part.0" },
			{ "main.main.func1", "main.main.func1" },
		};

		for (unsigned i = 0; i < sizeof(clones) / sizeof(clones[0]); i++) {
			char buf[128];

			snprintf(buf, sizeof(buf), "%s", clones[i][0]);
			cr_expect_eq(sym_fold_clone(buf, false), strlen(clones[i][1]), "%s",
				clones[i][0]);
			cr_expect_str_eq(buf, clones[i][1], "%s", clones[i][0]);
		}
		for (unsigned i = 0; i < sizeof(go) / sizeof(go[0]); i++) {
			char buf[128];

			snprintf(buf, sizeof(buf), "%s", go[i][0]);
			sym_fold_clone(buf, true);
			cr_expect_str_eq(buf, go[i][1], "Go: %s", go[i][0]);
		}
	}
	cr_expect_null(sym_demangle("_Znot_really"));
	cr_expect_null(sym_demangle(NULL));
}

Test(cache, intern_and_lookup)
{
	struct sym_cache *c;
	struct sym_line in[2];
	const struct sym_line *lines;
	unsigned n;
	struct sym_cache_stats st;

	cr_assert_eq(sym_cache_new(&c), 0);
	const char *a = sym_cache_intern0(c, "fx_leaf");
	const char *b = sym_cache_intern(c, "fx_leaf and more", 7);

	cr_expect_eq(a, b, "interned strings are shared");
	cr_expect_str_eq(b, "fx_leaf");
	cr_expect_null(sym_cache_intern0(c, NULL));
	in[0] = (struct sym_line){ .function = a, .line = 3, .inlined = true };
	in[1] = (struct sym_line){ .function = sym_cache_intern0(c, "outer"), .line = 9 };
	cr_expect_not(sym_cache_lookup(c, 1, 0x1000, &lines, &n));
	for (uint64_t k = 0; k < 10000; k++)
		sym_cache_insert(c, 7, 0x2000 + k, in, 1);
	sym_cache_insert(c, 1, 0x1000, in, 2);
	cr_assert(sym_cache_lookup(c, 1, 0x1000, &lines, &n));
	cr_expect_eq(n, 2);
	cr_expect_eq(lines[0].function, a);
	cr_expect(lines[0].inlined);
	cr_expect_eq(lines[1].line, 9);
	cr_expect_not(sym_cache_lookup(c, 2, 0x1000, &lines, &n), "keyed by module too");
	cr_assert(sym_cache_lookup(c, 7, 0x2000 + 9999, &lines, &n));
	sym_cache_stats(c, &st);
	cr_expect_eq(st.entries, 10001);
	cr_expect_gt(st.hits, 0);
	sym_cache_free(c);
	sym_cache_free(NULL);
}

Test(unwind, end_names)
{
	for (int e = SYM_END_OUTERMOST; e <= SYM_END_NO_REGS; e++)
		cr_expect_str_neq(sym_end_name((enum sym_end)e), "unknown");
}

/* Capture one sample of fx_chain's main thread. */
static struct td_sample *smp;
static pid_t fx;
static struct sym_cache *cache;
static struct sym_session *ss;
static struct sym_unwound u;

static struct td_sample *get(void *arg, pid_t pid, pid_t tid, uint32_t *w)
{
	(void)arg, (void)pid, (void)tid;
	*w = WINDOW;
	return smp;
}
static void put(void *arg, struct td_sample *s)
{
	(void)arg, (void)s;
}

static bool counting(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	uint64_t c = fx_counter(pid);

	return c != UINT64_MAX && c > 0;
}

static void setup(void)
{
	static const struct pt_round_ops ops = { get, put, NULL, NULL, NULL, NULL };
	struct pt_config cfg = { .max_threads = 8 };
	struct sym_options opt = { 0 };
	struct pt_round_stats st;
	struct pt_tracer *t;

	fx = fx_start(FX("fx_chain"), NULL);
	cr_assert_gt(fx, 0);
	/* "ready" is written from fx_leaf: wait until it counts in its loop */
	cr_assert(wait_for(counting, &fx, TEST_PATIENCE_MS), "fx_chain does not reach its loop");
	smp = calloc(1, td_sample_size(WINDOW));
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_gt(pt_tracer_attach(t, fx), 0);
	pt_tracer_sample(t, &fx, 1, &ops, NULL, 2000, PT_ROUND_DETACH, &st);
	cr_assert_eq(st.captured, 1);
	pt_tracer_free(t);
	cr_assert_eq(sym_cache_new(&cache), 0);
	cr_assert_eq(sym_session_new(fx, &opt, cache, &ss), 0);
}

static void teardown(void)
{
	sym_session_free(ss);
	sym_cache_free(cache);
	free(smp);
	fx_stop(fx);
}

TestSuite(unwind_reasons, .init = setup, .fini = teardown, .timeout = 30);

Test(unwind_reasons, complete_stack)
{
	struct sym_frame f[8];
	int n;

	cr_assert_eq(sym_session_unwind(ss, smp, &u), 0);
	cr_expect_eq(u.end, SYM_END_OUTERMOST);
	cr_expect_geq(u.n, 8u);
	cr_expect(u.activation[0]);
	n = sym_session_symbolize(ss, u.pc[0], true, true, f, 8);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].function, "fx_leaf");
	cr_expect_not_null(f[0].build_id);
	cr_expect_eq(f[0].offset + (u.pc[0] - f[0].offset), u.pc[0]);
	n = sym_session_symbolize(ss, u.pc[1], false, true, f, 8);
	cr_assert_eq(n, 2, "fx_step inlined into fx_compare");
	cr_expect_str_eq(f[0].function, "fx_step");
	cr_expect(f[0].inlined);
	cr_expect_str_eq(f[1].function, "fx_compare");
	n = sym_session_symbolize(ss, u.pc[1], false, false, f, 8);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].function, "fx_compare");
	cr_expect_not(f[0].inlined);
}

Test(unwind_reasons, window_exhausted)
{
	smp->stack_len = 16; /* less than fx_leaf's frame, no live reads */
	sym_session_unwind(ss, smp, &u);
	cr_expect_eq(u.end, SYM_END_WINDOW, "%s", sym_end_name(u.end));
	cr_expect_geq(u.fault_addr, smp->stack_addr + 16);
}

Test(unwind_reasons, frame_limit)
{
	struct sym_options opt = { .max_frames = 3 };
	struct sym_session *s3;

	cr_assert_eq(sym_session_new(fx, &opt, cache, &s3), 0);
	sym_session_unwind(s3, smp, &u);
	cr_expect_eq(u.end, SYM_END_FRAME_LIMIT);
	cr_expect_eq(u.n, 3);
	sym_session_free(s3);
}

Test(unwind_reasons, pc_outside_modules)
{
	smp->regs.rip = 0x10;
	sym_session_unwind(ss, smp, &u);
	cr_expect_eq(u.end, SYM_END_NO_MODULE, "%s", sym_end_name(u.end));
}

Test(unwind_reasons, no_registers)
{
	smp->regs.rip = 0;
	smp->regs.rsp = 0;
	sym_session_unwind(ss, smp, &u);
	cr_expect_eq(u.end, SYM_END_NO_REGS);
	cr_expect_eq(u.n, 0);
}

Test(unwind_reasons, cached_lookup_is_same)
{
	struct sym_frame a[8], b[8];
	struct sym_cache_stats st0, st1;

	sym_session_unwind(ss, smp, &u);
	sym_session_symbolize(ss, u.pc[2], false, true, a, 8);
	sym_cache_stats(cache, &st0);
	sym_session_symbolize(ss, u.pc[2], false, true, b, 8);
	sym_cache_stats(cache, &st1);
	cr_expect_eq(st1.hits, st0.hits + 1);
	cr_expect_eq(a[0].function, b[0].function);
	cr_expect_eq(a[0].line, b[0].line);
}

/* ---- unwind rules read from .eh_frame (cfi.c) against libdw's */

struct rule_check {
	unsigned modules, fdes, compared, simple, plt, unsupported, mismatches;
	unsigned stride; /* every stride-th FDE */
};

static void compare_rules(const char *name, const struct sym_rule *a, const struct sym_rule *b,
	uint64_t pc, struct rule_check *ck)
{
	bool same = a->kind == b->kind;

	if (same && a->kind != SYM_RULE_COMPLEX)
		same = a->cfa_reg == b->cfa_reg && a->cfa_off == b->cfa_off && a->bp == b->bp &&
		       (a->bp != SYM_BP_SAVED || a->bp_off == b->bp_off) && a->nslot == b->nslot &&
		       !memcmp(a->slot, b->slot, a->nslot * sizeof(a->slot[0])) &&
		       (a->kind != SYM_RULE_SIMPLE || a->ra_off == b->ra_off);
	ck->compared++;
	ck->simple += a->kind == SYM_RULE_SIMPLE;
	if (!same && ck->mismatches++ < 10)
		cr_expect_fail("%s +%#llx: .eh_frame kind %d cfa %d%+d ra %d bp %d/%d %u slots; "
			       "libdw kind %d cfa %d%+d ra %d bp %d/%d %u slots",
			name, (unsigned long long)pc, a->kind, a->cfa_reg, a->cfa_off, a->ra_off,
			a->bp, a->bp_off, a->nslot, b->kind, b->cfa_reg, b->cfa_off, b->ra_off, b->bp,
			b->bp_off, b->nslot);
}

static int rule_module(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
	void *arg)
{
	struct rule_check *ck = arg;
	Dwarf_Addr bias, cbias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &cbias);
	struct sym_eh eh;

	(void)ud, (void)start;
	if (!elf || !cfi || sym_eh_init(elf, &eh) != 0)
		return DWARF_CB_OK;
	cr_assert_eq(bias, cbias);
	ck->modules++;
	for (uint64_t i = 0; i < eh.count; i += ck->stride) {
		int32_t e[2], n[2];
		uint64_t lo, hi, pcs[5];

		memcpy(e, eh.table + i * 8, 8);
		lo = eh.hdr_vaddr + (uint64_t)(int64_t)e[0];
		if (i + 1 < eh.count) {
			memcpy(n, eh.table + (i + 1) * 8, 8);
			hi = eh.hdr_vaddr + (uint64_t)(int64_t)n[0];
		} else {
			hi = lo + 16;
		}
		ck->fdes++;
		pcs[0] = lo;
		pcs[1] = lo + 1;
		pcs[2] = lo + 4;
		pcs[3] = lo + (hi - lo) / 2;
		pcs[4] = hi > lo ? hi - 1 : lo;
		for (unsigned k = 0; k < 5; k++) {
			struct sym_rule a, b;
			/* as the innermost frame: the pc is the frame's own */
			int r = sym_eh_rule(&eh, pcs[k], pcs[k], &a);

			if (r == -ENOTSUP) {
				ck->unsupported++;
				continue;
			}
			sym_rule_libdw(cfi, pcs[k], pcs[k], &b);
			if (r == -ENOENT) {
				ck->compared++;
				if (b.kind != SYM_RULE_COMPLEX && ck->mismatches++ < 10)
					cr_expect_fail("%s +%#llx: no FDE in .eh_frame_hdr, libdw has one",
						name, (unsigned long long)pcs[k]);
				continue;
			}
			cr_assert_eq(r, 0);
			compare_rules(name, &a, &b, pcs[k], ck);
		}
	}
	return DWARF_CB_OK;
}

static void rules_of(Dwfl *dwfl, struct rule_check *ck)
{
	dwfl_getmodules(dwfl, rule_module, ck, 0);
}

static Dwfl *dwfl_of(pid_t pid, const char *file)
{
	static char *dpath;
	static const Dwfl_Callbacks proc = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.debuginfo_path = &dpath,
	};
	static const Dwfl_Callbacks offline = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &dpath,
	};
	Dwfl *dwfl = dwfl_begin(file ? &offline : &proc);

	cr_assert_not_null(dwfl);
	dwfl_report_begin(dwfl);
	if (file)
		cr_assert_not_null(dwfl_report_offline(dwfl, file, file, -1), "%s", file);
	else
		cr_assert_eq(dwfl_linux_proc_report(dwfl, pid), 0);
	dwfl_report_end(dwfl, NULL, NULL);
	return dwfl;
}

Test(cfi, eh_frame_rules_are_libdws_in_this_process_and_fx_cxx, .timeout = 300)
{
	struct rule_check ck = { .stride = 1 };
	pid_t pid = fx_start(FX("fx_cxx"), NULL);
	Dwfl *d;

	cr_assert_gt(pid, 0);
	d = dwfl_of(getpid(), NULL);
	rules_of(d, &ck);
	dwfl_end(d);
	d = dwfl_of(pid, NULL);
	rules_of(d, &ck);
	dwfl_end(d);
	fx_stop(pid);
	cr_log_info("cfi: %u modules, %u FDEs, %u pcs compared, %u simple, %u not read here",
		ck.modules, ck.fdes, ck.compared, ck.simple, ck.unsupported);
	cr_expect_eq(ck.mismatches, 0, "%u of %u differ", ck.mismatches, ck.compared);
	cr_expect_gt(ck.compared, 10000u);
	cr_expect_gt(ck.simple, ck.compared / 2);
	cr_expect_lt(ck.unsupported, ck.compared / 100);
}

/* libLLVM's .eh_frame_hdr follows its .eh_frame: libdw reads .eh_frame
 * from the start there, the table is read here. */
Test(cfi, eh_frame_rules_are_libdws_in_libllvm, .timeout = 300)
{
	static const char lib[] = "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1";
	struct rule_check ck = { .stride = 97 };
	Dwfl *d;

	if (access(lib, R_OK) != 0)
		cr_skip_test("%s is not installed (apt-get install clang)", lib);
	d = dwfl_of(0, lib);
	rules_of(d, &ck);
	dwfl_end(d);
	cr_log_info("cfi libLLVM: %u FDEs, %u pcs compared, %u simple, %u not read here", ck.fdes,
		ck.compared, ck.simple, ck.unsupported);
	cr_expect_eq(ck.modules, 1);
	cr_expect_eq(ck.mismatches, 0, "%u of %u differ", ck.mismatches, ck.compared);
	cr_expect_gt(ck.compared, 1000u);
	cr_expect_gt(ck.simple, ck.compared / 2);
}

/* ---- separate debuginfo found by .gnu_debuglink, no debuginfod loaded */

/* Does this process map a file whose path holds what? */
static bool maps_mention(const char *what)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	bool found = false;

	cr_assert_not_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

Test(debuglink, found_beside_the_binary_without_loading_libdebuginfod, .timeout = 60)
{
	static const struct pt_round_ops ops = { get, put, NULL, NULL, NULL, NULL };
	struct pt_config cfg = { .max_threads = 8 };
	struct sym_options opt = { 0 };
	struct sym_frame f[8];
	struct pt_round_stats st;
	struct sym_session *s;
	struct sym_cache *c;
	struct pt_tracer *t;
	pid_t pid;
	int n;

	unsetenv("DEBUGINFOD_URLS");
	cr_assert_not(maps_mention("libdebuginfod"), "loaded before the test");
	/* "ready" comes from fx_leaf: it is on the stack from then on (its
	 * counter cannot be read: the binary has no symbols) */
	pid = fx_start(FX("fx_chain_linked"), NULL);
	cr_assert_gt(pid, 0);
	smp = calloc(1, td_sample_size(WINDOW));
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_gt(pt_tracer_attach(t, pid), 0);
	pt_tracer_sample(t, &pid, 1, &ops, NULL, 2000, PT_ROUND_DETACH, &st);
	cr_assert_eq(st.captured, 1);
	pt_tracer_free(t);
	cr_assert_eq(sym_cache_new(&c), 0);
	cr_assert_eq(sym_session_new(pid, &opt, c, &s), 0);
	cr_assert_eq(sym_session_unwind(s, smp, &u), 0);
	n = 0;
	for (unsigned i = 0; i < u.n && !n; i++) {
		int k = sym_session_symbolize(s, u.pc[i], u.activation[i], true, f, 8);

		for (int j = 0; j < k && !n; j++)
			if (f[j].function && !strcmp(f[j].function, "fx_leaf")) {
				n = 1;
				cr_expect_not_null(f[j].file, "the stripped binary's DWARF was not found");
				if (f[j].file)
					cr_expect(strstr(f[j].file, "fx_chain.c"), "%s", f[j].file);
				cr_expect_gt(f[j].line, 0);
			}
	}
	cr_expect_eq(n, 1, "no fx_leaf among %u frames", u.n);
	sym_session_free(s);
	fx_stop(pid);

	/* a binary whose debuginfo is nowhere to be found: libdwfl's standard
	 * search would load libdebuginfod for it */
	pid = fx_start(FX("fx_chain_stripped"), NULL);
	cr_assert_gt(pid, 0);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_gt(pt_tracer_attach(t, pid), 0);
	pt_tracer_sample(t, &pid, 1, &ops, NULL, 2000, PT_ROUND_DETACH, &st);
	cr_assert_eq(st.captured, 1);
	pt_tracer_free(t);
	cr_assert_eq(sym_session_new(pid, &opt, c, &s), 0);
	cr_assert_eq(sym_session_unwind(s, smp, &u), 0);
	cr_assert_gt(u.n, 0);
	for (unsigned i = 0; i < u.n; i++)
		sym_session_symbolize(s, u.pc[i], u.activation[i], true, f, 8);
	cr_expect_not(maps_mention("libdebuginfod"), "libdebuginfod was loaded");
	sym_session_free(s);
	sym_cache_free(c);
	free(smp);
	smp = NULL;
	fx_stop(pid);
}

/* ---- the fast path (cached CFI rules) against libdw's unwinder */

#define FAST_ROUNDS 12
#define FAST_MAX_THREADS 16

struct fast_cmp {
	struct td_sample *buf[FAST_MAX_THREADS];
	unsigned used;
	unsigned compared, fast, whole, fast_whole;
};

static struct td_sample *fc_get(void *arg, pid_t pid, pid_t tid, uint32_t *w)
{
	struct fast_cmp *fc = arg;

	(void)pid, (void)tid;
	*w = WINDOW;
	return fc->used < FAST_MAX_THREADS ? fc->buf[fc->used++] : NULL;
}

static unsigned task_tids(pid_t pid, pid_t *tids, unsigned max)
{
	char path[64];
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	cr_assert_not_null(d);
	while ((de = readdir(d)) && n < max)
		if (de->d_name[0] != '.')
			tids[n++] = (pid_t)atoi(de->d_name);
	closedir(d);
	return n;
}

/* Everything an unwind says but libdwfl's words for its end (detail),
 * which only libdw's own unwinder can give. */
static void expect_same_unwind(const struct sym_unwound *a, const struct sym_unwound *b,
	const char *what)
{
	cr_expect_eq(a->end, b->end, "%s: fast %s, libdw %s", what, sym_end_name(a->end),
		sym_end_name(b->end));
	cr_expect_eq(a->n, b->n, "%s: fast %u frames, libdw %u", what, a->n, b->n);
	for (unsigned i = 0; i < a->n && i < b->n; i++) {
		cr_expect_eq(a->pc[i], b->pc[i], "%s: frame %u", what, i);
		cr_expect_eq(a->activation[i], b->activation[i], "%s: frame %u", what, i);
	}
	cr_expect_eq(a->fault_addr, b->fault_addr, "%s: fault %#llx vs %#llx, n %u %u, fast %d end %s", what, (unsigned long long)a->fault_addr, (unsigned long long)b->fault_addr, a->n, b->n, a->fast, sym_end_name(a->end));
	cr_expect_eq(a->live_reads, b->live_reads, "%s", what);
}

/* One sample unwound by a session with the fast path and one without,
 * whole and cut short in every way that ends an unwind. */
static void compare_sample(pid_t pid, struct td_sample *one, struct fast_cmp *fc)
{
	static const uint32_t cuts[] = { 0, 8, 16, 40, 64, 200, 512, 1000, 2048, 4096 };
	static struct sym_unwound a, b;
	struct sym_options fast = { 0 }, slow = { .no_fast_unwind = true };
	struct sym_options fast3 = { .max_frames = 3 },
			   slow3 = { .max_frames = 3, .no_fast_unwind = true };
	struct sym_session *sf, *sl, *sf3, *sl3;
	struct sym_cache *c;
	uint32_t len = one->stack_len;
	char what[128];

	cr_assert_eq(sym_cache_new(&c), 0);
	cr_assert_eq(sym_session_new(pid, &fast, c, &sf), 0);
	cr_assert_eq(sym_session_new(pid, &slow, c, &sl), 0);
	cr_assert_eq(sym_session_new(pid, &fast3, c, &sf3), 0);
	cr_assert_eq(sym_session_new(pid, &slow3, c, &sl3), 0);
	for (unsigned k = 0; k <= TD_ARRAY_SIZE(cuts); k++) {
		for (int nostop = 0; nostop < 2; nostop++) {
			uint32_t flags = one->flags;

			one->stack_len = k == TD_ARRAY_SIZE(cuts) ? len :
								    (cuts[k] < len ? cuts[k] : len);
			if (nostop)
				one->flags |= TD_SAMPLE_NOSTOP;
			snprintf(what, sizeof(what), "tid %d, %u bytes%s", (int)one->tid,
				one->stack_len, nostop ? ", registers of a blocked thread" : "");
			/* twice: the second from rules made by the first */
			for (int again = 0; again < 2; again++) {
				cr_assert_eq(sym_session_unwind(sf, one, &a), 0);
				cr_assert_eq(sym_session_unwind(sl, one, &b), 0);
				cr_expect_not(b.fast);
				expect_same_unwind(&a, &b, what);
				fc->compared++;
				fc->fast += a.fast;
				fc->whole += k == TD_ARRAY_SIZE(cuts) && !nostop;
				fc->fast_whole += a.fast && k == TD_ARRAY_SIZE(cuts) && !nostop;
			}
			cr_assert_eq(sym_session_unwind(sf3, one, &a), 0);
			cr_assert_eq(sym_session_unwind(sl3, one, &b), 0);
			expect_same_unwind(&a, &b, what);
			one->flags = flags;
		}
	}
	one->stack_len = len;
	sym_session_free(sf);
	sym_session_free(sl);
	sym_session_free(sf3);
	sym_session_free(sl3);
	sym_cache_free(c);
}

static void compare_fixture(const char *path, struct fast_cmp *fc)
{
	static const struct pt_round_ops ops = { fc_get, put, NULL, NULL, NULL, NULL };
	struct pt_config cfg = { .max_threads = FAST_MAX_THREADS };
	pid_t pid = fx_start(path, NULL), tids[FAST_MAX_THREADS];

	cr_assert_gt(pid, 0, "%s", path);
	for (unsigned i = 0; i < FAST_MAX_THREADS; i++)
		fc->buf[i] = calloc(1, td_sample_size(WINDOW));
	for (int round = 0; round < FAST_ROUNDS; round++) {
		unsigned n = task_tids(pid, tids, FAST_MAX_THREADS);
		struct pt_round_stats st;
		struct pt_tracer *t;
		int r;

		fc->used = 0;
		cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
		r = pt_tracer_attach(t, pid);
		cr_assert_gt(r, 0, "%s round %d: %s", path, round, td_strerror(r));
		pt_tracer_sample(t, tids, n, &ops, fc, 2000, PT_ROUND_DETACH, &st);
		pt_tracer_free(t);
		for (unsigned i = 0; i < fc->used; i++)
			compare_sample(pid, fc->buf[i], fc);
	}
	for (unsigned i = 0; i < FAST_MAX_THREADS; i++)
		free(fc->buf[i]);
	fx_stop(pid);
}

Test(unwind_fast, same_frames_and_ends_as_libdw, .timeout = 300)
{
	static const char *const fixtures[] = { FX("fx_cxx"), FX("fx_chain"), FX("fx_deep"),
		FX("fx_threads"), FX("fx_nocfi"), FX("fx_locks"), FX("fx_evloop") };
	struct fast_cmp fc = { 0 };

	for (unsigned i = 0; i < TD_ARRAY_SIZE(fixtures); i++)
		compare_fixture(fixtures[i], &fc);
	cr_log_info("unwind_fast: %u unwinds compared, %u fast; whole samples: %u of %u fast",
		fc.compared, fc.fast, fc.fast_whole, fc.whole);
	cr_expect_gt(fc.compared, 500u);
	/* the fast path is taken, not only ever declined: fx_nocfi's stacks
	 * (no CFI) and those past a signal frame are libdw's alone */
	cr_expect_gt(2 * fc.fast_whole, fc.whole, "%u of %u whole samples unwound fast",
		fc.fast_whole, fc.whole);
}

/* A Go program: .debug_frame alone, read through libdw. */
Test(unwind_fast, go_same_frames_and_ends_as_libdw, .timeout = 300)
{
	char bin[128];
	struct fast_cmp fc = { 0 };

	snprintf(bin, sizeof(bin), "%s/unwind-go-fixture", TD_BUILD_DIR);
	go_fixture_build(bin);
	compare_fixture(bin, &fc);
	unlink(bin);
	cr_log_info("unwind_fast go: %u unwinds compared, %u fast; whole samples: %u of %u fast",
		fc.compared, fc.fast, fc.fast_whole, fc.whole);
	cr_expect_gt(fc.compared, 100u);
	cr_expect_gt(2 * fc.fast_whole, fc.whole, "%u of %u whole samples unwound fast",
		fc.fast_whole, fc.whole);
}

/* ELF names come from one table per binary, built on the first lookup and
 * kept by the cache for every later session of the same binary (and past
 * the session that built it). */
Test(unwind_reasons, symbol_tables_shared)
{
	struct sym_options opt = { .no_dwarf = true };
	struct sym_session *a, *b;
	struct sym_cache_stats st0, st1, st2;
	struct sym_frame f[4];
	const char *names[SYM_MAX_FRAMES];

	cr_assert_eq(sym_session_new(fx, &opt, cache, &a), 0);
	cr_assert_eq(sym_session_new(fx, &opt, cache, &b), 0);
	sym_cache_stats(cache, &st0);
	sym_session_unwind(a, smp, &u);
	cr_assert_geq(u.n, 8u);
	for (unsigned i = 0; i < u.n; i++) {
		cr_assert_eq(sym_session_symbolize(a, u.pc[i], u.activation[i], false, f, 4), 1);
		names[i] = f[0].function;
	}
	cr_expect_str_eq(names[0], "fx_leaf");
	sym_cache_stats(cache, &st1);
	cr_expect_gt(st1.tables, st0.tables, "tables built on first use");
	cr_expect_gt(st1.table_bytes, st0.table_bytes);
	cr_expect_geq(st1.bytes, st1.table_bytes);
	sym_session_free(a);
	/* The byte after each address named (pc - 1 for a return address):
	 * not in the pc cache, so b names it through the tables a built, the
	 * same function (no call in fx_chain ends its function). */
	for (unsigned i = 0; i < u.n; i++) {
		uint64_t next = u.activation[i] ? u.pc[i] + 1 : u.pc[i];

		cr_assert_eq(sym_session_symbolize(b, next, true, false, f, 4), 1);
		cr_expect_str_eq(f[0].function, names[i], "frame %u", i);
	}
	sym_cache_stats(cache, &st2);
	cr_expect_eq(st2.tables, st1.tables, "no table built twice");
	cr_expect_gt(st2.misses, st1.misses);
	cr_expect_eq(st2.table_denied, 0);
	sym_session_free(b);
}

/* The symbol tables (symtab.c) against dwfl_module_addrinfo() itself: the
 * same name, for addresses all over real modules (this test binary, its
 * libc and the rest of what it maps; fx_cxx with libstdc++'s weak
 * symbols), near every symbol's start and end and in between. */

/* Symbols as hand-written assembly leaves them, where elfutils' rules are
 * subtle: labels without a size (global and local), aliases of every
 * binding and size at one address, a symbol nested in another, labels
 * past the end of the last sized symbol. */
__asm__(".text\n"
	".p2align 6\n"
	"td_st_begin:\n"
	".globl td_st_outer\n .type td_st_outer, @function\n"
	".weak td_st_outer_weak\n .type td_st_outer_weak, @function\n"
	"td_st_outer:\n"
	"td_st_outer_weak:\n"
	"td_st_outer_label:\n"
	".fill 16, 1, 0x90\n"
	".globl td_st_mid_label\n"
	"td_st_mid_label:\n"
	".fill 8, 1, 0x90\n"
	".type td_st_nested, @function\n"
	"td_st_nested:\n"
	".fill 8, 1, 0x90\n"
	".size td_st_nested, 8\n"
	".weak td_st_nested_weak\n .type td_st_nested_weak, @function\n"
	"td_st_nested_weak:\n"
	".fill 8, 1, 0x90\n"
	".size td_st_nested_weak, 8\n"
	".size td_st_outer_weak, 32\n"
	".fill 8, 1, 0x90\n"
	".size td_st_outer, . - td_st_outer\n"
	".fill 8, 1, 0xcc\n"
	"td_st_tail_label:\n"
	".fill 8, 1, 0xcc\n"
	".globl td_st_tail_global\n"
	"td_st_tail_global:\n"
	"td_st_tail_local:\n"
	".fill 8, 1, 0xcc\n"
	".type td_st_last, @function\n"
	"td_st_last:\n"
	".fill 8, 1, 0xc3\n"
	".size td_st_last, 8\n"
	"td_st_end:\n");
extern const char td_st_begin[], td_st_end[];

#define SYMTAB_MAX_ADDRS 3000 /* per module: elfutils' lookup is the slow one */

struct symtab_check {
	unsigned modules, compared, named, labels, mismatches;
	bool saw_libc, saw_main;
	const char *main_name; /* module path that must be seen, NULL: none */
};

static int cmp_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct addrs {
	uint64_t lo[64], hi[64]; /* executable sections, ends included */
	size_t nr;
	uint64_t *a;
	size_t n, cap;
};

static void add_addr(struct addrs *x, uint64_t a)
{
	for (size_t r = 0; r < x->nr; r++) {
		if (a < x->lo[r] || a > x->hi[r])
			continue;
		if (x->n == x->cap) {
			x->cap = x->cap ? x->cap * 2 : 4096;
			x->a = realloc(x->a, x->cap * sizeof(*x->a));
			cr_assert_not_null(x->a);
		}
		x->a[x->n++] = a;
		return;
	}
}

/* Addresses in the module's executable sections near each symbol's
 * bounds and spread over the sections, at most SYMTAB_MAX_ADDRS of them
 * evenly picked; then every byte of the asm above if it is in there. */
static size_t pick_addrs(Dwfl_Module *mod, uint64_t **ret)
{
	struct addrs x = { .nr = 0 };
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL;
	int nsym = dwfl_module_getsymtab(mod);
	size_t k = 0, n;

	while (elf && (scn = elf_nextscn(elf, scn)) && x.nr < 64) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) && sh.sh_size) {
			x.lo[x.nr] = sh.sh_addr + bias;
			x.hi[x.nr++] = sh.sh_addr + sh.sh_size + bias;
		}
	}
	for (int i = 1; i < nsym; i++) {
		GElf_Sym sym;
		GElf_Addr a;

		if (!dwfl_module_getsym_info(mod, i, &sym, &a, NULL, NULL, NULL))
			continue;
		add_addr(&x, a - 1);
		add_addr(&x, a);
		add_addr(&x, a + 1);
		add_addr(&x, a + sym.st_size / 2);
		add_addr(&x, a + sym.st_size - 1);
		add_addr(&x, a + sym.st_size);
		add_addr(&x, a + sym.st_size + 1);
	}
	for (size_t r = 0; r < x.nr; r++)
		for (uint64_t j = 0; j <= 64; j++)
			add_addr(&x, x.lo[r] + (x.hi[r] - x.lo[r]) / 64 * j + j * 7);
	if (x.n > 1)
		qsort(x.a, x.n, sizeof(*x.a), cmp_addr);
	for (size_t i = 0; i < x.n; i++)
		if (i == 0 || x.a[i] != x.a[i - 1])
			x.a[k++] = x.a[i];
	/* evenly picked, in place: i * k / max never runs ahead of i */
	n = k < SYMTAB_MAX_ADDRS ? k : SYMTAB_MAX_ADDRS;
	for (size_t i = 0; i < n && k > SYMTAB_MAX_ADDRS; i++)
		x.a[i] = x.a[i * k / SYMTAB_MAX_ADDRS];
	x.n = n;
	for (const char *p = td_st_begin; p <= td_st_end; p++)
		add_addr(&x, (uint64_t)(uintptr_t)p);
	*ret = x.a;
	return x.n;
}

static int check_module(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
	void *arg)
{
	struct symtab_check *ck = arg;
	struct sym_table *t;
	Dwarf_Addr bias;
	uint64_t *addrs;
	size_t n;

	(void)ud, (void)start;
	if (!dwfl_module_getelf(mod, &bias))
		return DWARF_CB_OK;
	cr_assert_eq(sym_table_build(mod, &t), 0, "%s", name);
	n = pick_addrs(mod, &addrs);
	ck->modules++;
	ck->saw_libc |= strstr(name, "/libc.so.6") != NULL;
	ck->saw_main |= ck->main_name && !strcmp(name, ck->main_name);
	for (size_t i = 0; i < n; i++) {
		GElf_Off off;
		GElf_Sym sym;
		const char *want =
			dwfl_module_addrinfo(mod, addrs[i], &off, &sym, NULL, NULL, NULL);
		const char *got = sym_table_lookup(t, addrs[i] - bias);

		ck->compared++;
		ck->named += want != NULL;
		ck->labels += want && sym.st_size == 0;
		if (want == got || (want && got && !strcmp(want, got)))
			continue;
		if (ck->mismatches++ < 20)
			cr_expect_fail("%s +%#llx: elfutils %s, table %s", name,
				(unsigned long long)(addrs[i] - bias), want ? want : "(none)",
				got ? got : "(none)");
	}
	free(addrs);
	sym_table_free(t);
	return DWARF_CB_OK;
}

static void check_process(pid_t pid, struct symtab_check *ck)
{
	char *dpath = NULL;
	const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &dpath,
	};
	Dwfl *dwfl = dwfl_begin(&cb);

	cr_assert_not_null(dwfl);
	dwfl_report_begin(dwfl);
	cr_assert_eq(dwfl_linux_proc_report(dwfl, pid), 0);
	dwfl_report_end(dwfl, NULL, NULL);
	dwfl_getmodules(dwfl, check_module, ck, 0);
	dwfl_end(dwfl);
}

Test(symtab, same_as_elfutils_in_this_process, .timeout = 300)
{
	char exe[4096];
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct symtab_check ck = { .main_name = exe };

	cr_assert_gt(l, 0);
	exe[l] = '\0';
	check_process(getpid(), &ck);
	cr_expect(ck.saw_libc, "libc.so.6 not among the modules");
	cr_expect(ck.saw_main, "%s not among the modules", exe);
	cr_expect_gt(ck.labels, 0, "no sizeless symbol was ever elfutils' answer");
	cr_expect_gt(ck.named, ck.compared / 2);
	cr_expect_eq(ck.mismatches, 0, "%u of %u addresses in %u modules differ", ck.mismatches,
		ck.compared, ck.modules);
	cr_log_info("symtab: %u addresses in %u modules, %u named, %u by a label", ck.compared,
		ck.modules, ck.named, ck.labels);
}

Test(symtab, same_as_elfutils_in_fx_cxx, .timeout = 300)
{
	struct symtab_check ck = { 0 };
	pid_t pid = fx_start(FX("fx_cxx"), NULL);

	cr_assert_gt(pid, 0);
	check_process(pid, &ck);
	fx_stop(pid);
	cr_expect_gt(ck.modules, 3);
	cr_expect_gt(ck.named, ck.compared / 2);
	cr_expect_eq(ck.mismatches, 0, "%u of %u addresses in %u modules differ", ck.mismatches,
		ck.compared, ck.modules);
}

/* ---- a table as a file (sym_table_write / sym_table_map) */

struct table_file_check {
	char path[64];
	unsigned modules, compared;
	bool corrupted_libc;
};

/* The file's bytes at off replaced by len bytes of v. */
static void patch(const char *path, off_t off, const void *v, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, v, len, off), (ssize_t)len);
	close(fd);
}

static int map_file(const char *path, uint64_t nsyms, uint64_t fg, struct sym_table **t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	cr_assert_geq(fd, 0);
	r = sym_table_map(fd, nsyms, fg, t);
	close(fd);
	return r;
}

/* mod's table through the debuginfo cache: stored as BUILDID.NSYMS.sym,
 * private, read back; refused once writable by others. */
static void cache_round_trip(Dwfl_Module *mod, uint64_t nsyms, uint64_t fg)
{
	char dir[] = "/tmp/tracerd-symtabs-XXXXXX", path[512], hex[129], cmd[128];
	struct sym_debug_stats st = { 0 };
	struct sym_table *t, *back = NULL;
	const unsigned char *bid;
	GElf_Addr vaddr;
	struct stat sb;
	int len = dwfl_module_build_id(mod, &bid, &vaddr);

	cr_assert_gt(len, 0, "libc has no build-id");
	for (int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg, &st, &back), -ENOENT);
	cr_assert_eq(sym_table_build(mod, &t), 0);
	sym_debugcache_table_store(dir, bid, (size_t)len, nsyms, fg, t, &st);
	cr_expect_eq(st.tables_made, 1, "%s", td_strerror(st.err));
	snprintf(path, sizeof(path), "%s/%s.%llu.sym", dir, hex, (unsigned long long)nsyms);
	cr_assert_eq(stat(path, &sb), 0, "%s", path);
	cr_expect_eq(sb.st_mode & 0777, 0600);
	cr_assert_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg, &st, &back), 0);
	cr_expect_eq(st.tables_reused, 1);
	cr_expect_gt(sym_table_bytes(back), 0);
	sym_table_free(back);
	/* another symbol table of the same build: not this file */
	cr_expect_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms + 1, fg, &st, &back),
		-ENOENT);
	cr_expect_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg + 1, &st, &back),
		-TD_E_CORRUPT);
	/* writable by others: not trusted */
	cr_assert_eq(chmod(path, 0620), 0);
	cr_expect_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg, &st, &back),
		-TD_E_CORRUPT);
	cr_expect_eq(st.tables_reused, 1);
	/* and the next store replaces it */
	sym_debugcache_table_store(dir, bid, (size_t)len, nsyms, fg, t, &st);
	cr_expect_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg, &st, &back), 0);
	sym_table_free(back);
	sym_table_free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	free(shell_output(cmd, NULL));
}

static int table_file_module(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
	void *arg)
{
	struct table_file_check *ck = arg;
	struct sym_table *built, *mapped;
	uint64_t nsyms, fg, *addrs;
	Dwarf_Addr bias;
	size_t n;
	int fd;

	(void)ud, (void)start;
	if (!dwfl_module_getelf(mod, &bias) || sym_table_source(mod, &nsyms, &fg) < 0)
		return DWARF_CB_OK;
	cr_assert_eq(sym_table_build(mod, &built), 0, "%s", name);
	fd = open(ck->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(sym_table_write(built, nsyms, fg, fd), 0, "%s", name);
	close(fd);
	cr_assert_eq(map_file(ck->path, nsyms, fg, &mapped), 0, "%s", name);
	n = pick_addrs(mod, &addrs);
	for (size_t i = 0; i < n; i++) {
		const char *want = sym_table_lookup(built, addrs[i] - bias);
		const char *got = sym_table_lookup(mapped, addrs[i] - bias);

		ck->compared++;
		if (!(want == got || (want && got && !strcmp(want, got))))
			cr_assert_fail("%s +%#llx: built %s, read back %s", name,
				(unsigned long long)(addrs[i] - bias), want ? want : "(none)",
				got ? got : "(none)");
	}
	free(addrs);
	sym_table_free(mapped);
	sym_table_free(built);
	ck->modules++;
	if (strstr(name, "/libc.so.6") && !ck->corrupted_libc) {
		struct stat st;
		uint64_t big = UINT64_MAX, two[2];
		uint32_t far = UINT32_MAX - 1;

		ck->corrupted_libc = true;
		cache_round_trip(mod, nsyms, fg);
		/* built from another symbol table: another count, another first
		 * global (a debuginfo package installed since) */
		cr_expect_eq(map_file(ck->path, nsyms + 1, fg, &mapped), -TD_E_CORRUPT);
		cr_expect_eq(map_file(ck->path, nsyms, fg + 1, &mapped), -TD_E_CORRUPT);
		cr_assert_eq(stat(ck->path, &st), 0);
		/* truncated by a byte */
		cr_assert_eq(truncate(ck->path, st.st_size - 1), 0);
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
		cr_assert_eq(truncate(ck->path, st.st_size), 0);
		/* starts not ascending: the first stretch after the second */
		{
			int rfd = open(ck->path, O_RDONLY | O_CLOEXEC);

			cr_assert_eq(pread(rfd, two, sizeof(two), 48), (ssize_t)sizeof(two));
			close(rfd);
		}
		two[0] = two[1];
		patch(ck->path, 48, &two[0], sizeof(two[0]));
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
		/* a count beyond the file */
		patch(ck->path, 24, &big, sizeof(big));
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
		/* a name outside the names, in a file written whole again */
		fd = open(ck->path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		cr_assert_eq(sym_table_build(mod, &built), 0);
		cr_assert_eq(sym_table_write(built, nsyms, fg, fd), 0);
		close(fd);
		cr_assert_eq(map_file(ck->path, nsyms, fg, &mapped), 0);
		{
			uint64_t nstretch;
			int rfd = open(ck->path, O_RDONLY | O_CLOEXEC);

			cr_assert_eq(pread(rfd, &nstretch, sizeof(nstretch), 24),
				(ssize_t)sizeof(nstretch));
			close(rfd);
			patch(ck->path, (off_t)(48 + nstretch * 8), &far, sizeof(far));
		}
		sym_table_free(mapped);
		sym_table_free(built);
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
		/* not a table at all */
		patch(ck->path, 0, "TDSYMT99", 8);
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
	}
	return DWARF_CB_OK;
}

Test(symtab, a_table_read_back_answers_as_built_and_a_bad_file_is_refused, .timeout = 300)
{
	struct table_file_check ck = { .path = "/tmp/tracerd-symtab-XXXXXX" };
	char *dpath = NULL;
	const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &dpath,
	};
	Dwfl *dwfl = dwfl_begin(&cb);
	int fd = mkstemp(ck.path);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_not_null(dwfl);
	dwfl_report_begin(dwfl);
	cr_assert_eq(dwfl_linux_proc_report(dwfl, getpid()), 0);
	dwfl_report_end(dwfl, NULL, NULL);
	dwfl_getmodules(dwfl, table_file_module, &ck, 0);
	dwfl_end(dwfl);
	unlink(ck.path);
	cr_expect_gt(ck.modules, 2);
	cr_expect(ck.corrupted_libc, "libc.so.6 not among the modules");
	cr_expect_gt(ck.compared, 1000);
}

/* ---- the debuginfo cache (symbolize/debugcache.c), on this process's own
 * libc: with libc6-dbg its separate debuginfo has compressed sections. */

#define LIBC_FRAMES 8

static char cdir[64];

static void cache_setup(void)
{
	snprintf(cdir, sizeof(cdir), "/tmp/tracerd-symcache-XXXXXX");
	cr_assert_not_null(mkdtemp(cdir));
	elf_version(EV_CURRENT);
}

static void cache_teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s %s-elsewhere.debug", cdir, cdir);
	free(shell_output(cmd, NULL));
}

TestSuite(symcache, .init = cache_setup, .fini = cache_teardown, .timeout = 60);

/* libc's qsort as a session of this process with cache dir (NULL: none)
 * symbolizes it: function, file:line per frame, innermost first. */
struct libc_sym {
	struct {
		char function[256], file[256];
		int line;
	} f[LIBC_FRAMES];
	int n;
	char build_id[130];
	struct sym_debug_stats st;
};

static void symbolize_libc(const char *dir, struct libc_sym *ret)
{
	struct sym_options opt = { .cache_dir = dir };
	struct sym_frame f[LIBC_FRAMES];
	struct sym_session *s;
	struct sym_cache *c;

	/* libc's own qsort, not a sanitizer's interceptor of that name */
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *pc = libc ? dlsym(libc, "qsort") : NULL;

	cr_assert_not_null(pc, "no qsort in libc.so.6: %s", dlerror());
	dlclose(libc);
	/* a cache of its own: a pc found in another session's would not
	 * look at DWARF at all */
	cr_assert_eq(sym_cache_new(&c), 0);
	cr_assert_eq(sym_session_new(getpid(), &opt, c, &s), 0);
	ret->n = sym_session_symbolize(s, (uint64_t)(uintptr_t)pc, true, true, f, LIBC_FRAMES);
	cr_assert_gt(ret->n, 0);
	for (int i = 0; i < ret->n; i++) {
		snprintf(ret->f[i].function, sizeof(ret->f[i].function), "%s",
			f[i].function ? f[i].function : "??");
		snprintf(ret->f[i].file, sizeof(ret->f[i].file), "%s", f[i].file ? f[i].file : "");
		ret->f[i].line = f[i].line;
	}
	snprintf(ret->build_id, sizeof(ret->build_id), "%s", f[0].build_id ? f[0].build_id : "");
	sym_session_debug_stats(s, &ret->st);
	sym_session_free(s);
	sym_cache_free(c);
}

static void expect_same(const struct libc_sym *a, const struct libc_sym *b)
{
	cr_assert_eq(a->n, b->n);
	for (int i = 0; i < a->n; i++) {
		cr_expect_str_eq(a->f[i].function, b->f[i].function);
		cr_expect_str_eq(a->f[i].file, b->f[i].file);
		cr_expect_eq(a->f[i].line, b->f[i].line);
	}
}

/* How many sections of the ELF file path are SHF_COMPRESSED; -1 if it is
 * no ELF file. */
static int compressed_sections(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *scn = NULL;

	if (!e || elf_kind(e) != ELF_K_ELF)
		n = -1;
	while (n >= 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			n++;
	}
	elf_end(e);
	if (fd >= 0)
		close(fd);
	return n;
}

/* The reference (no cache), and the entry's path; skips without
 * libc6-dbg's compressed debuginfo. */
static void reference_of(struct libc_sym *ref, char *entry, size_t len, char orig[512])
{
	const char *bid;

	symbolize_libc(NULL, ref);
	bid = ref->build_id;
	cr_assert(bid[0], "libc has no build-id");
	snprintf(orig, 512, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	/* a skipped test's .fini does not run: the directory goes first */
	if (access(orig, R_OK) != 0) {
		cache_teardown();
		cr_skip_test("no separate debuginfo for libc (%s): apt-get install libc6-dbg", orig);
	}
	if (compressed_sections(orig) <= 0) {
		cache_teardown();
		cr_skip_test("libc's debuginfo %s has no compressed section: nothing to cache",
			orig);
	}
	cr_assert(ref->f[0].file[0] && ref->f[0].line > 0, "libc's DWARF was not used");
	snprintf(entry, len, "%s/%s.debug", cdir, bid);
}

static void reference(struct libc_sym *ref, char *entry, size_t len)
{
	char orig[512];

	reference_of(ref, entry, len, orig);
}

/* The names in cdir but . and .., space-separated; their count. */
static unsigned dir_names(char *buf, size_t len)
{
	DIR *d = opendir(cdir);
	struct dirent *de;
	unsigned n = 0;
	size_t off = 0;

	cr_assert_not_null(d);
	buf[0] = '\0';
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", n ? " " : "", de->d_name);
		n++;
	}
	closedir(d);
	return n;
}

Test(symcache, made_once_then_reused)
{
	struct libc_sym ref, first, second;
	char entry[600], names[1024];
	struct stat st1, st2;

	reference(&ref, entry, sizeof(entry));
	symbolize_libc(cdir, &first);
	expect_same(&ref, &first);
	cr_expect_eq(first.st.created, 1);
	cr_expect_eq(first.st.failed, 0, "%s", td_strerror(first.st.err));
	cr_assert_eq(dir_names(names, sizeof(names)), 1, "one entry, nothing else: %s", names);
	cr_expect_str_eq(names, strrchr(entry, '/') + 1);
	cr_assert_eq(stat(entry, &st1), 0);
	cr_expect(S_ISREG(st1.st_mode));
	cr_expect_eq(st1.st_mode & 077, 0, "entry mode %o", st1.st_mode & 0777);
	cr_expect_eq(compressed_sections(entry), 0, "the entry's sections are stored inflated");

	symbolize_libc(cdir, &second);
	expect_same(&ref, &second);
	cr_expect_eq(second.st.reused, 1);
	cr_expect_eq(second.st.created, 0);
	cr_assert_eq(stat(entry, &st2), 0);
	cr_expect_eq(st2.st_ino, st1.st_ino, "the same file, not a new one");
	cr_expect_eq(st2.st_mtim.tv_sec, st1.st_mtim.tv_sec);
	cr_expect_eq(st2.st_mtim.tv_nsec, st1.st_mtim.tv_nsec);
	cr_expect_eq(dir_names(names, sizeof(names)), 1, "%s", names);
}

/* Section i of the entry against the original's: the same header but for
 * compression, and the same bytes once inflated (by zlib here: the cache
 * inflates with libdeflate), except location lists, left out. */
static void expect_section_inflated(Elf *orig, Elf *entry, size_t i, size_t shstrndx)
{
	Elf_Scn *a = elf_getscn(orig, i), *b = elf_getscn(entry, i);
	GElf_Shdr sa, sb;
	Elf_Data *da, *db;
	const char *name;

	cr_assert(a && b && gelf_getshdr(a, &sa) && gelf_getshdr(b, &sb));
	name = elf_strptr(orig, shstrndx, sa.sh_name);
	cr_assert_not_null(name);
	cr_expect_eq(sa.sh_name, sb.sh_name, "section %zu", i);
	cr_expect_eq(sa.sh_addr, sb.sh_addr, "%s", name);
	cr_expect_eq(sa.sh_link, sb.sh_link, "%s", name);
	cr_expect_eq(sa.sh_info, sb.sh_info, "%s", name);
	cr_expect_eq(sa.sh_entsize, sb.sh_entsize, "%s", name);
	cr_expect_eq(sb.sh_flags, sa.sh_flags & ~(GElf_Xword)SHF_COMPRESSED, "%s", name);
	if (!strcmp(name, ".debug_loclists") || !strcmp(name, ".debug_loc")) {
		cr_expect_eq(sb.sh_type, SHT_NOBITS, "%s left out", name);
		cr_expect_eq(sb.sh_size, 0, "%s left out", name);
		return;
	}
	cr_expect_eq(sa.sh_type, sb.sh_type, "%s", name);
	if (sa.sh_type == SHT_NOBITS) {
		cr_expect_eq(sa.sh_size, sb.sh_size, "%s", name);
		return;
	}
	da = elf_rawdata(a, NULL);
	db = elf_rawdata(b, NULL);
	cr_assert(da && db, "%s", name);
	if (sa.sh_flags & SHF_COMPRESSED) {
		GElf_Chdr ch;
		unsigned char *want;
		uLongf n;

		cr_assert(gelf_getchdr(a, &ch), "%s", name);
		cr_expect_eq(sb.sh_addralign, ch.ch_addralign, "%s", name);
		cr_assert_eq(sb.sh_size, ch.ch_size, "%s", name);
		n = (uLongf)ch.ch_size;
		want = malloc(ch.ch_size + 1);
		cr_assert_not_null(want);
		cr_assert_eq(uncompress(want, &n, (const unsigned char *)da->d_buf + sizeof(Elf64_Chdr),
				     da->d_size - sizeof(Elf64_Chdr)),
			Z_OK, "%s", name);
		cr_assert_eq(n, ch.ch_size, "%s", name);
		cr_expect(!memcmp(want, db->d_buf, ch.ch_size), "%s inflated differs", name);
		free(want);
		return;
	}
	cr_expect_eq(sa.sh_addralign, sb.sh_addralign, "%s", name);
	cr_assert_eq(da->d_size, db->d_size, "%s", name);
	cr_expect(!memcmp(da->d_buf, db->d_buf, da->d_size), "%s differs", name);
}

/* The entry is the original, section by section, inflated. */
Test(symcache, entry_holds_the_original_inflated)
{
	struct libc_sym ref, first;
	char entry[600], orig[512];
	int fa, fb;
	Elf *a, *b;
	size_t na, nb, shstrndx;

	reference_of(&ref, entry, sizeof(entry), orig);
	symbolize_libc(cdir, &first);
	cr_assert_eq(first.st.created, 1, "%s", td_strerror(first.st.err));
	fa = open(orig, O_RDONLY | O_CLOEXEC);
	fb = open(entry, O_RDONLY | O_CLOEXEC);
	cr_assert(fa >= 0 && fb >= 0);
	a = elf_begin(fa, ELF_C_READ_MMAP, NULL);
	b = elf_begin(fb, ELF_C_READ_MMAP, NULL);
	cr_assert(a && b && gelf_getclass(a) == ELFCLASS64);
	cr_assert_eq(elf_getshdrnum(a, &na), 0);
	cr_assert_eq(elf_getshdrnum(b, &nb), 0);
	cr_assert_eq(na, nb, "%zu sections, %zu in the entry", na, nb);
	cr_assert_eq(elf_getshdrstrndx(a, &shstrndx), 0);
	for (size_t i = 1; i < na; i++)
		expect_section_inflated(a, b, i, shstrndx);
	elf_end(a);
	elf_end(b);
	close(fa);
	close(fb);
}

/* An entry that must not be trusted is replaced, and the answers stay. */
static void expect_replaced(const char *entry, const struct libc_sym *ref, ino_t bad_ino)
{
	struct libc_sym after;
	struct stat st;
	char names[1024];

	symbolize_libc(cdir, &after);
	expect_same(ref, &after);
	cr_expect_eq(after.st.reused, 0);
	cr_expect_eq(after.st.created, 1, "replaced");
	cr_assert_eq(lstat(entry, &st), 0);
	cr_expect(S_ISREG(st.st_mode));
	cr_expect_neq(st.st_ino, bad_ino);
	cr_expect_eq(compressed_sections(entry), 0);
	cr_expect_eq(dir_names(names, sizeof(names)), 1, "%s", names);
}

Test(symcache, truncated_entry_is_replaced)
{
	struct libc_sym ref, first;
	char entry[600];
	struct stat st;

	reference(&ref, entry, sizeof(entry));
	symbolize_libc(cdir, &first);
	cr_assert_eq(stat(entry, &st), 0);
	cr_assert_eq(truncate(entry, st.st_size / 2), 0);
	expect_replaced(entry, &ref, st.st_ino);
}

Test(symcache, wrong_build_id_is_replaced)
{
	struct libc_sym ref;
	char entry[600], cmd[1400];
	struct stat st;

	reference(&ref, entry, sizeof(entry));
	/* another ELF file, uncompressed, under libc's name */
	snprintf(cmd, sizeof(cmd), "cp %s %s", FX("fx_chain"), entry);
	free(shell_output(cmd, NULL));
	cr_assert_eq(stat(entry, &st), 0);
	expect_replaced(entry, &ref, st.st_ino);
}

Test(symcache, link_is_not_followed)
{
	struct libc_sym ref, first;
	char entry[600], elsewhere[700];
	struct stat st;

	reference(&ref, entry, sizeof(entry));
	symbolize_libc(cdir, &first);
	/* a valid entry, but reached through a symbolic link */
	snprintf(elsewhere, sizeof(elsewhere), "%s-elsewhere.debug", cdir);
	cr_assert_eq(rename(entry, elsewhere), 0);
	cr_assert_eq(symlink(elsewhere, entry), 0);
	cr_assert_eq(lstat(entry, &st), 0);
	expect_replaced(entry, &ref, st.st_ino);
	cr_expect_eq(lstat(elsewhere, &st), 0, "what the link pointed to is left alone");
	unlink(elsewhere);
}

Test(symcache, unsafe_directory_is_not_used)
{
	struct libc_sym ref, after;
	char entry[600], names[1024];

	reference(&ref, entry, sizeof(entry));
	cr_assert_eq(chmod(cdir, 0777), 0);
	cr_expect_eq(sym_debug_cache_prepare(cdir), -TD_E_UNSAFE);
	symbolize_libc(cdir, &after);
	expect_same(&ref, &after);
	cr_expect_eq(after.st.failed, 1);
	cr_expect_eq(after.st.err, -TD_E_UNSAFE, "%s", td_strerror(after.st.err));
	cr_expect_eq(dir_names(names, sizeof(names)), 0, "nothing written: %s", names);
	cr_assert_eq(chmod(cdir, 0700), 0);
}

Test(symcache, prepare_creates_private_directories)
{
	char sub[128];
	struct stat st;

	snprintf(sub, sizeof(sub), "%s/a/b", cdir);
	cr_assert_eq(sym_debug_cache_prepare(sub), 0);
	cr_assert_eq(stat(sub, &st), 0);
	cr_expect(S_ISDIR(st.st_mode));
	cr_expect_eq(st.st_mode & 077, 0, "mode %o", st.st_mode & 0777);
	cr_expect_eq(sym_debug_cache_prepare("relative/dir"), -EINVAL);
	snprintf(sub, sizeof(sub), "%s/link", cdir);
	cr_assert_eq(symlink(cdir, sub), 0);
	cr_expect_eq(sym_debug_cache_prepare(sub), -TD_E_SYMLINK);
}

/* Beyond 256 entries, the least recently used go; a temporary file a dead
 * writer left goes once it is an hour old. */
Test(symcache, least_recently_used_are_evicted)
{
	struct libc_sym ref, first;
	char entry[600], path[700];
	struct timespec t[2];
	struct stat st;
	int fd;

	reference(&ref, entry, sizeof(entry));
	for (int i = 0; i < 256; i++) {
		snprintf(path, sizeof(path), "%s/%040x.debug", cdir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		cr_assert_geq(fd, 0);
		/* used i minutes after the oldest: 0 is the least recent */
		t[0] = t[1] = (struct timespec){ .tv_sec = time(NULL) - 86400 + 60 * i };
		cr_assert_eq(futimens(fd, t), 0);
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/.tmp-dead-1-0", cdir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	t[0] = t[1] = (struct timespec){ .tv_sec = time(NULL) - 7200 };
	cr_assert_eq(futimens(fd, t), 0);
	close(fd);

	symbolize_libc(cdir, &first);
	expect_same(&ref, &first);
	cr_expect_eq(first.st.created, 1);
	cr_expect_eq(stat(entry, &st), 0, "the new entry stays");
	snprintf(path, sizeof(path), "%s/%040x.debug", cdir, 0);
	cr_expect_neq(stat(path, &st), 0, "the least recently used is gone");
	snprintf(path, sizeof(path), "%s/%040x.debug", cdir, 1);
	cr_expect_eq(stat(path, &st), 0, "the next one stays");
	snprintf(path, sizeof(path), "%s/%040x.debug", cdir, 255);
	cr_expect_eq(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/.tmp-dead-1-0", cdir);
	cr_expect_neq(stat(path, &st), 0, "the left-over temporary file is gone");
}

/* A write or a rename that fails (the disk is full) leaves no file
 * behind, and the answers are those of the original. */
Test(symcache, failed_write_or_rename_leaves_nothing)
{
	static const unsigned ops[] = { TD_FAULT_WRITE, TD_FAULT_RENAME };
	struct libc_sym ref, after;
	char entry[600], names[1024];

	reference(&ref, entry, sizeof(entry));
	for (size_t i = 0; i < TD_ARRAY_SIZE(ops); i++) {
		td_fault_arm(ops[i], 1);
		symbolize_libc(cdir, &after);
		cr_expect(td_fault_fired());
		td_fault_arm(0, 0);
		expect_same(&ref, &after);
		cr_expect_eq(after.st.created, 0);
		cr_expect_eq(after.st.failed, 1);
		cr_expect_lt(after.st.err, 0);
		cr_expect_eq(dir_names(names, sizeof(names)), 0, "nothing left: %s", names);
	}
	symbolize_libc(cdir, &after);
	cr_expect_eq(after.st.created, 1, "made by the next run");
}

/* Up to max low pcs of inlined instances under die whose abstract origin
 * lies in another unit than cu. */
static unsigned cross_unit_inlines(Dwarf_Die *cu, Dwarf_Die *die, uint64_t *pcs, unsigned n,
	unsigned max, int depth)
{
	Dwarf_Die child;

	if (depth > 16 || dwarf_child(die, &child) != 0)
		return n;
	do {
		Dwarf_Attribute a;
		Dwarf_Die origin;
		Dwarf_Addr lo;

		if (n == max)
			return n;
		if (dwarf_tag(&child) == DW_TAG_inlined_subroutine &&
			dwarf_attr(&child, DW_AT_abstract_origin, &a) &&
			dwarf_formref_die(&a, &origin) && origin.cu != cu->cu &&
			dwarf_lowpc(&child, &lo) == 0)
			pcs[n++] = lo;
		n = cross_unit_inlines(cu, &child, pcs, n, max, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
	return n;
}

/* Go inlines across packages: the inlined function's DWARF is in another
 * unit than the call's.  Each such instance is named as inlined, and
 * (checked under LeakSanitizer) asking libdw about it leaks nothing:
 * dwarf_getscopes() of elfutils 0.188 does, there. */
Test(inline_chain, go_origins_in_other_units, .timeout = 300)
{
	char bin[128];
	uint64_t pcs[64], off = 0, next;
	unsigned npcs = 0, inlined = 0;
	size_t hsize;
	struct sym_options opt = { 0 };
	struct sym_frame f[8];
	struct sym_session *sess;
	struct sym_cache *c;
	Dwarf *dw;
	pid_t pid;
	int fd;

	snprintf(bin, sizeof(bin), "%s/inline-go-fixture", TD_BUILD_DIR);
	go_fixture_build(bin);
	fd = open(bin, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	dw = dwarf_begin(fd, DWARF_C_READ);
	cr_assert_not_null(dw, "%s: %s", bin, dwarf_errmsg(-1));
	while (npcs < TD_ARRAY_SIZE(pcs) &&
		dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu))
			npcs = cross_unit_inlines(&cu, &cu, pcs, npcs, TD_ARRAY_SIZE(pcs), 0);
		off = next;
	}
	dwarf_end(dw);
	close(fd);
	cr_assert_gt(npcs, 0, "no inlining across units in the Go fixture");
	pid = fx_start(bin, NULL);
	cr_assert_gt(pid, 0);
	cr_assert_eq(sym_cache_new(&c), 0);
	cr_assert_eq(sym_session_new(pid, &opt, c, &sess), 0);
	for (unsigned i = 0; i < npcs; i++) {
		/* a non-PIE Go binary: its addresses are its load addresses */
		int n = sym_session_symbolize(sess, pcs[i], true, true, f, 8);

		inlined += n >= 2 && f[0].inlined && f[0].function && f[1].function;
	}
	cr_expect_eq(inlined, npcs, "%u of %u inlined instances named with their caller",
		inlined, npcs);
	sym_session_free(sess);
	sym_cache_free(c);
	fx_stop(pid);
	unlink(bin);
#ifdef __SANITIZE_ADDRESS__
	cr_expect_eq(__lsan_do_recoverable_leak_check(), 0, "leaked: LeakSanitizer's report above");
#endif
}
