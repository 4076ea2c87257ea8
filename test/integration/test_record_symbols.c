/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record's stacks and names: the stack window grows for deep
 * stacks, a library dlopen'ed while recorded is named, an LTO build's
 * inline chains and same-named functions stay apart, and a stripped
 * library's functions are placed by their start, in the report and in
 * pprof. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"

TestSuite(record_symbols, .init = record_setup, .fini = record_teardown, .timeout = 300);

static bool deep_enough(const struct found *f)
{
	return f->whole_after >= 100;
}

Test(record_symbols, stack_window_grows_for_deep_stacks)
{
	pid_t fx = fx_start(FX("fx_deep"), NULL), t;
	struct found f;

	cr_assert_gt(fx, 0);
	/* ptrace capture: its copies start small (perf's start whole, up to
	 * the kernel's limit: test_record_stacks.c) */
	t = tracerd_start(fx, "--stack-bytes=256K", "--capture=ptrace", NULL);
	cr_expect(repo_until(deep_enough));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	f = scan_repo();
	cr_expect_gt(f.cut, 0, "the first copies (8 KiB) cannot hold 300 frames");
	/* How many samples are taken before the writer has asked twice for a
	 * bigger window (16 -> 32 -> 64 KiB) depends on how soon the writer
	 * gets a CPU: that is a figure for make bench.  What must hold is
	 * that once a whole stack was copied, every later one is whole. */
	cr_expect_geq(f.whole_after, 100, "then the window grows: %llu whole stacks",
		(unsigned long long)f.whole_after);
	cr_expect_eq(f.cut_after, 0, "%llu of %llu stacks after the first whole one were cut",
		(unsigned long long)f.cut_after,
		(unsigned long long)(f.whole_after + f.cut_after));
	fx_stop(fx);
}

static bool main_spin_enough(const struct found *f)
{
	return f->main_spin > 50;
}

static bool plugin_enough(const struct found *f)
{
	return f->plugin > 80;
}

/* fx_dlopen recorded: it dlopen()s libfx_plugin.so once the repository
 * holds what before asks, and the recording goes on until the library has
 * samples enough. */
static struct found dlopen_recorded(bool (*before)(const struct found *f))
{
	pid_t fx = fx_start(FX("fx_dlopen"), FX("libfx_plugin.so")), t;
	struct found f;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_expect(repo_until(before));
	kill(fx, SIGUSR1); /* dlopen now */
	cr_expect(repo_until(plugin_enough));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	f = scan_repo();
	fx_stop(fx);
	cr_expect_gt(f.plugin, 80, "after dlopen, the new library's symbols: %llu",
		(unsigned long long)f.plugin);
	return f;
}

Test(record_symbols, dlopen_after_start_is_symbolized)
{
	struct found f = dlopen_recorded(main_spin_enough);

	cr_expect_gt(f.main_spin, 50, "before dlopen: %llu", (unsigned long long)f.main_spin);
}

/* A library dlopen'ed right after the recording's first samples, while
 * the writer's session of the process is young (it used to be renewed
 * once a second at most: python's C modules, imported at its start, were
 * cut as "[unknown]" for the first second): its first sample renews the
 * session, and no stack is cut, before or after. */
Test(record_symbols, dlopen_soon_after_start_is_symbolized_at_once)
{
	struct found f = dlopen_recorded(has_samples);

	cr_expect_eq(f.cut, 0, "%llu of %llu stacks cut", (unsigned long long)f.cut,
		(unsigned long long)f.samples);
}

/* Record fixture path at 199 Hz until 600 samples, stop it, and give its
 * folded stacks in *r. */
static void folded_of(const char *path, struct run_result *r)
{
	const char *folded[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	pid_t fx = fx_start(path, NULL), t;

	cr_assert_gt(fx, 0, "%s", path);
	t = tracerd_start(fx, "-F", "199", NULL);
	cr_expect(repo_until(samples_600));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	run_tracerd(r, folded);
	cr_assert_eq(r->status, 0, "%s", r->err);
}

/* An LTO build (fx_lto): work_a and work_b are inlined into main across
 * compilation units, as gdb shows them; the two static churns (symbols
 * churn.constprop.0 and .1) are named churn, without the clone suffix,
 * and stay apart, each qualified with its file, with work_a's three times
 * work_b's samples. */
Test(record_symbols, lto_inline_chains_and_same_named_functions, .timeout = 120)
{
	const char *top[] = { "tracerd", "report", repo, NULL };
	unsigned long long via_a = 0, via_b = 0, other = 0;
	struct run_result r;
	const char *row_a, *row_b;

	folded_of(FX("fx_lto"), &r);
	for (const char *line = r.out; *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *sp = memrchr(line, ' ', (size_t)(end - line));
		unsigned long long n = sp ? strtoull(sp + 1, NULL, 10) : 0;
		size_t len = (size_t)(end - line);

		if (memmem(line, len, ";main;work_a;churn ", 19))
			via_a += n;
		else if (memmem(line, len, ";main;work_b;churn ", 19))
			via_b += n;
		else
			other += n;
		cr_expect(!memmem(line, len, "constprop", 9), "%.*s", (int)len, line);
		line = nl ? nl + 1 : end;
	}
	cr_expect_gt(via_a + via_b, 400, "main;work_a;churn %llu, main;work_b;churn %llu, else %llu:\n%.800s",
		via_a, via_b, other, r.out);
	cr_expect(via_a * 100 > (via_a + via_b) * 66 && via_a * 100 < (via_a + via_b) * 84,
		"work_a's churn %llu of %llu samples, want three quarters", via_a, via_a + via_b);
	run_result_free(&r);

	run_tracerd(&r, top);
	cr_assert_eq(r.status, 0, "%s", r.err);
	row_a = strstr(r.out, "churn at ");
	row_b = row_a ? strstr(row_a + 1, "churn at ") : NULL;
	cr_expect(row_a && row_b, "two churn rows, each with its file:\n%s", r.out);
	cr_expect(strstr(r.out, "fx_lto_a.c (fx_lto)") && strstr(r.out, "fx_lto_b.c (fx_lto)"),
		"%s", r.out);
	run_result_free(&r);
}

/* The names a stripped libfx_hot.so's hot_a and hot_b get: where they
 * start, which the unstripped copy's symbols say. */
static void hot_names(char want_a[static 64], char want_b[static 64])
{
	unsigned long a_at = nm_addr(FX("libfx_hot_full.so"), "hot_a"),
		      b_at = nm_addr(FX("libfx_hot_full.so"), "hot_b");

	cr_assert(a_at && b_at && a_at != b_at, "no hot_a, hot_b in libfx_hot_full.so");
	snprintf(want_a, 64, "libfx_hot.so+%#lx", a_at);
	snprintf(want_b, 64, "libfx_hot.so+%#lx", b_at);
}

/* A stripped library's static functions have no name anywhere: each is
 * placed by where it starts (its FDE in .eh_frame), named MODULE+0xSTART,
 * and keeps its own samples: hot_a has two thirds of them. */
Test(record_symbols, stripped_functions_placed_by_their_start, .timeout = 120)
{
	char want_a[64], want_b[64];
	unsigned long long a = 0, b = 0, other = 0;
	struct run_result r;

	hot_names(want_a, want_b);
	folded_of(FX("fx_hot"), &r);
	for (const char *line = r.out; *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *sp = memrchr(line, ' ', (size_t)(end - line));
		const char *leaf = sp ? memrchr(line, ';', (size_t)(sp - line)) : NULL;
		unsigned long long n = sp ? strtoull(sp + 1, NULL, 10) : 0;

		leaf = leaf ? leaf + 1 : line;
		if (sp && (size_t)(sp - leaf) == strlen(want_a) && !memcmp(leaf, want_a, strlen(want_a)))
			a += n;
		else if (sp && (size_t)(sp - leaf) == strlen(want_b) &&
			 !memcmp(leaf, want_b, strlen(want_b)))
			b += n;
		else
			other += n;
		cr_expect(!memmem(line, (size_t)(end - line), "[unknown]", 9), "%.*s",
			(int)(end - line), line);
		line = nl ? nl + 1 : end;
	}
	cr_assert_gt(a + b, 400, "hot_a %llu, hot_b %llu, elsewhere %llu samples: %.600s", a, b,
		other, r.out);
	cr_expect(a * 100 > (a + b) * 58 && a * 100 < (a + b) * 75,
		"hot_a %llu of %llu samples, want two thirds", a, a + b);
	run_result_free(&r);
}

/* The function addr2line finds at addr in the ELF file path ("" if none). */
static void addr2line_fn(const char *path, unsigned long addr, char *fn, size_t len)
{
	char cmd[512], *out;

	snprintf(cmd, sizeof(cmd), "addr2line -f -e %s %#lx", path, addr);
	out = shell_output(cmd, NULL);
	snprintf(fn, len, "%.*s", (int)strcspn(out, "\n"), out);
	free(out);
}

/* The pprof of fx_hot's recording (in repo), as go tool pprof reads it:
 * every Location carries the pc's address in its ELF file, so that a
 * binary given later names it: addr2line on the unstripped library finds
 * hot_a and hot_b at the addresses of the frames tracerd could only place
 * (want_a, want_b), and main's in fx_hot.  The stripped library's Mapping
 * does not claim functions (pprof then symbolizes it again); fx_hot's
 * does. */
static void pprof_keeps_real_addresses(const char *want_a, const char *want_b)
{
	char fn[128], name[128], *raw;
	const char *at;
	unsigned seen_a = 0, seen_b = 0, seen_main = 0;

	raw = pprof_raw();
	at = strstr(raw, "\nLocations\n");
	cr_assert(at, "%s", raw);
	for (const char *line = at + 11; *line && strncmp(line, "Mappings", 8);) {
		unsigned long addr;
		unsigned id, mapping;

		if (sscanf(line, "%u: %lx M=%u %127s", &id, &addr, &mapping, name) == 4) {
			if (!strcmp(name, want_a) || !strcmp(name, want_b)) {
				addr2line_fn(FX("libfx_hot_full.so"), addr, fn, sizeof(fn));
				cr_expect_str_eq(fn, !strcmp(name, want_a) ? "hot_a" : "hot_b",
					"%s at %#lx", name, addr);
				*(!strcmp(name, want_a) ? &seen_a : &seen_b) += 1;
			} else if (!strcmp(name, "main")) {
				addr2line_fn(FX("fx_hot"), addr, fn, sizeof(fn));
				cr_expect_str_eq(fn, "main", "main at %#lx", addr);
				seen_main++;
			}
		}
		line = strchrnul(line, '\n');
		line += *line == '\n';
	}
	cr_expect(seen_a && seen_b && seen_main, "Locations of %s, %s and main:\n%s", want_a,
		want_b, raw);
	at = strstr(raw, "/libfx_hot.so ");
	cr_expect(at && !memmem(at, strcspn(at, "\n"), "[FN]", 4),
		"libfx_hot.so's Mapping claims functions:\n%s", raw);
	at = strstr(raw, "/fx_hot ");
	cr_expect(at && memmem(at, strcspn(at, "\n"), "[FN]", 4),
		"fx_hot's Mapping should claim functions:\n%s", raw);
	free(raw);
}

/* The same recording in pprof: see pprof_keeps_real_addresses. */
Test(record_symbols, stripped_functions_keep_their_addresses_in_pprof, .timeout = 120)
{
	char want_a[64], want_b[64];
	struct run_result r;

	need_command("go", "golang-go");
	hot_names(want_a, want_b);
	folded_of(FX("fx_hot"), &r);
	run_result_free(&r);
	pprof_keeps_real_addresses(want_a, want_b);
}

/* Another user's process, recorded by a root without CAP_DAC_READ_SEARCH
 * and CAP_DAC_OVERRIDE (as a sandboxed service may be): its mappings may
 * not be read, so its samples have no stack.  The recording says so at
 * once and in its summary, and the report's frame says why: never a
 * silent "[not unwound]". */
Test(record_symbols, maps_it_may_not_read_are_said, .timeout = 120)
{
	char cmd[1024], *out;
	int ready[2], status;
	pid_t fx;

	if (!is_root())
		cr_skip("needs root to run a fixture as another user");
	need_command("setpriv", "util-linux");
	cr_assert_eq(pipe(ready), 0);
	fx = fork();
	cr_assert_geq(fx, 0);
	if (fx == 0) {
		dup2(ready[1], 1);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(126);
		execl(FX("fx_spin"), "fx_spin", (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	{
		char b[8];

		cr_assert_gt(read(ready[0], b, sizeof(b)), 0, "the fixture never started");
	}
	snprintf(cmd, sizeof(cmd),
		"setpriv --bounding-set=-dac_read_search,-dac_override "
		"--inh-caps=-dac_read_search,-dac_override %s/tracerd record -p %d -d 2s -r %s "
		"--cache-dir none 2>&1",
		TD_BUILD_DIR, (int)fx, repo);
	out = shell_output(cmd, &status);
	kill(fx, SIGKILL);
	waitpid(fx, NULL, 0);
	close(ready[0]);
	cr_assert_eq(status, 0, "%s", out);
	cr_expect(strstr(out, "its mappings may not be read (Permission denied)"), "%s", out);
	cr_expect(strstr(out, "not unwound  1 process whose mappings may not be read"), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s/tracerd report -f folded %s 2>&1", TD_BUILD_DIR, repo);
	out = shell_output(cmd, &status);
	cr_assert_eq(status, 0, "%s", out);
	cr_expect(strstr(out, "[not unwound: its maps may not be read (permission)]"), "%s", out);
	free(out);
}
