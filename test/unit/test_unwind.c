/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of symbolize/'s unwinding: the end reasons of the unwinder
 * on captured samples altered on purpose, the unwind rules read from
 * .eh_frame (cfi.c) against libdw's, and the fast path of cached rules
 * against libdw's own unwinder (unwind.c). */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize-tests.h"

Test(unwind, end_names)
{
	for (int e = SYM_END_OUTERMOST; e <= SYM_END_NO_REGS; e++)
		cr_expect_str_neq(sym_end_name((enum sym_end)e), "unknown");
}

/* unwind_reasons: one sample of fx_chain's main thread, and a session of it. */
static struct td_sample *smp;
static pid_t fx;
static struct sym_cache *cache;
static struct sym_session *ss;
static struct sym_unwound u;

static bool counting(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	uint64_t c = fx_counter(pid);

	return c != UINT64_MAX && c > 0;
}

static void setup(void)
{
	struct sym_options opt = { 0 };

	fx = fx_start(FX("fx_chain"), NULL);
	cr_assert_gt(fx, 0);
	/* "ready" is written from fx_leaf: wait until it counts in its loop */
	cr_assert(wait_for(counting, &fx, TEST_PATIENCE_MS), "fx_chain does not reach its loop");
	smp = calloc(1, td_sample_size(WINDOW));
	capture_one(fx, smp);
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

struct tid_list {
	pid_t *tids;
	unsigned n, max;
};

static int add_tid(pid_t tid, void *arg)
{
	struct tid_list *l = arg;

	if (l->n == l->max)
		return 1;
	l->tids[l->n++] = tid;
	return 0;
}

static unsigned task_tids(pid_t pid, pid_t *tids, unsigned max)
{
	struct tid_list l = { tids, 0, max };

	cr_assert_geq(td_tasks_each(pid, add_tid, &l), 0);
	return l.n;
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
		/* each frame's sp: python.c bounds an activation's words by it */
		cr_expect_eq(a->sp[i], b->sp[i], "%s: frame %u's sp %#llx vs %#llx", what, i,
			(unsigned long long)a->sp[i], (unsigned long long)b->sp[i]);
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
	static const struct pt_round_ops ops = { fc_get, one_put, NULL, NULL, NULL, NULL };
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
