/* Unit tests of symbolize/: demangling, the cache, and the end reasons of
 * the unwinder on captured samples altered on purpose. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	static const struct pt_round_ops ops = { get, put, NULL, NULL, NULL };
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
