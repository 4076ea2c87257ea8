/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of symbolize/'s names: demangling and clone folding
 * (demangle.c), the cache of strings and pc results (cache.c), and inline
 * chains across units (names.c). */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "symbolize-tests.h"

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
