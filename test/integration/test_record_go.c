/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record of a Go program (test/fixtures/fx_go, skipped without a
 * Go toolchain): every stack ends at its entry, and stacks inside Go's
 * signal handler go on into the interrupted code. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/td.h"
#include "record.h"

TestSuite(record_go, .init = record_setup, .fini = record_teardown, .timeout = 300);

/* A folded Go stack (len bytes at line) starts at its root: where a Go
 * thread's stack begins.  Known exception: a vDSO call made from
 * runtime.nanotime1 or walltime runs on the g0 stack and its Go caller is
 * on another stack (Go's own traceback finds it through m.vdsoSP, which
 * is not read).  A stack inside Go's signal handler goes on through the
 * kernel's signal frame (runtime.sigreturn, the restorer, returned to by
 * runtime.sigtramp or running) into the interrupted function, named; past it, the
 * interrupted code's stack is another one than the handler's, which the
 * sample did not copy: such a stack is cut there, and says so.  Counts
 * the stacks inside the handler into *ret_handler.  The interrupted pc
 * may be in inlined code: then its frame is a chain of names, each after
 * the first shown inlined in tree (`report -f tree`'s text; NULL: one name
 * only). */
static bool shown_inlined(const char *tree, const char *fn, size_t n)
{
	for (const char *at = tree; tree && (at = strstr(at, " [inlined]\n")); at++)
		if ((size_t)(at - tree) > n && !memcmp(at - n, fn, n) && *(at - n - 1) == ' ')
			return true;
	return false;
}

static void go_stack_checked(const char *line, size_t len, const char *mode,
	unsigned *ret_handler, const char *tree)
{
	static const char *const roots[] = { "runtime.goexit", "runtime.mstart", "runtime.clone",
		"runtime.rt0_go", "runtime.mcall", "runtime.morestack", "_start",
		"runtime.nanotime1", "runtime.walltime", "runtime.gogo",
		/* it switches to the g0 stack too: its caller is on the other */
		"runtime.systemstack",
		/* wall mode: time waiting for a CPU whose place no stack saw:
		 * no stack at all, not a cut one */
		"[runnable: preempted where no sample saw it]" };
	static const char cut[] = "[stack cut: interrupted stack not copied];";
	/* the restorer: returned to by runtime.sigtramp, or the sample's pc */
	static const char tramp[] = ";runtime.sigreturn";
	const char *in = memmem(line, len, tramp, strlen(tramp));
	bool ok = false;

	if (in && in + strlen(tramp) < line + len && in[strlen(tramp)] != ';' &&
		in[strlen(tramp)] != ' ')
		in = NULL; /* a longer name */

	if (in && ret_handler)
		(*ret_handler)++;
	if (in && !strncmp(line, cut, strlen(cut))) {
		/* cut [;...]: the interrupted function, whole (with the calls
		 * inlined into it at the pc), then the restorer */
		const char *fn = line + strlen(cut), *end = in > fn ? in : fn;

		for (bool first = true;; first = false) {
			const char *semi = memchr(fn, ';', (size_t)(end - fn));
			size_t n = (size_t)((semi ? semi : end) - fn);

			cr_expect(n && !memmem(fn, n, "+0x", 3) && !memmem(fn, n, "[unknown]", 9) &&
					!memmem(fn, n, "??", 2) &&
					(first || shown_inlined(tree, fn, n)),
				"%s mode: the interrupted function is not named%s: %.*s", mode,
				first ? "" : " or is more than one frame", (int)len, line);
			if (!semi)
				break;
			fn = semi + 1;
		}
		return;
	}
	for (size_t k = 0; k < TD_ARRAY_SIZE(roots); k++)
		ok |= !strncmp(line, roots[k], strlen(roots[k]));
	cr_expect(ok && !memmem(line, len, "[stack cut", 10),
		"%s mode: a Go stack did not reach its entry: %.*s", mode, (int)len, line);
}

/* Inside Go's signal handler (fx_go's signals: a goroutine sends itself
 * SIGUSR1 without pause): the stacks go through runtime.sigtramp and the
 * kernel's signal frame into the interrupted function.  Before, libdw
 * stopped at the restorer, which has no CFI.  The handler's share of the
 * program's CPU time is the scheduler's: 1.2-1.5% idle, 0.6-1.1% with two
 * busy loops per CPU, and once 7 samples of 5000 in a loaded suite run;
 * so the recording goes on, 5000 samples at a time into the same
 * repository, until it holds 10 stacks inside the handler to judge. */
static uint64_t samples_wanted;

static bool samples_reached(const struct found *f)
{
	return f->samples >= samples_wanted;
}

/* The stacks of the repository checked; the samples inside the handler. */
static unsigned go_handler_stacks(void)
{
	const char *argv[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	const char *tree_argv[] = { "tracerd", "report", repo, "-f", "tree", "--min-percent", "0",
		NULL };
	struct run_result r, tr;
	unsigned handler = 0;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_tracerd(&tr, tree_argv);
	cr_assert_eq(tr.status, 0, "%s", tr.err);
	for (const char *line = r.out; *line;) {
		const char *nl = strchrnul(line, '\n'), *sp = memrchr(line, ' ', (size_t)(nl - line));
		unsigned before = handler;

		go_stack_checked(line, (size_t)(sp ? sp - line : nl - line), "cpu", &handler,
			tr.out);
		if (handler > before && sp)
			handler += (unsigned)strtoul(sp + 1, NULL, 10) - 1;
		line = *nl ? nl + 1 : nl;
	}
	if (handler < 10)
		cr_log_info("%u samples in the signal handler:\n%.2000s", handler, r.out);
	run_result_free(&r);
	run_result_free(&tr);
	return handler;
}

Test(record_go, go_signal_handlers_unwound_into_the_interrupted_code, .timeout = 300)
{
	char bin[128];
	pid_t fx, t;
	unsigned handler = 0;

	snprintf(bin, sizeof(bin), "%s.go-fixture", repo);
	go_fixture_build(bin);
	fx = fx_start(bin, "signals");
	cr_assert_gt(fx, 0);
	for (int round = 1; round <= 6 && handler < 10; round++) {
		samples_wanted = 5000u * (unsigned)round;
		t = tracerd_start(fx, "-F", "999", NULL);
		cr_expect(repo_until(samples_reached));
		cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
		handler = go_handler_stacks();
	}
	fx_stop(fx);
	unlink(bin);
	cr_expect_geq(handler, 10, "%u samples in the signal handler", handler);
}

/* A Go program's stacks end at their entry: goroutines at runtime.goexit,
 * the scheduler on each thread's g0 stack at runtime.mcall or
 * runtime.mstart (the runtime marks none of them in its CFI, and what lies
 * above mcall on g0 is not its caller).  Skipped without a Go toolchain. */
Test(record_go, go_stacks_reach_their_entry, .timeout = 300)
{
	char bin[128], cmd[512];
	pid_t fx, t;
	struct run_result r;
	const char *argv[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	const char *tree_argv[] = { "tracerd", "report", repo, "-f", "tree", "--min-percent", "0",
		NULL };
	struct run_result tr;

	snprintf(bin, sizeof(bin), "%s.go-fixture", repo);
	go_fixture_build(bin);
	fx = fx_start(bin, NULL);
	cr_assert_gt(fx, 0);
	for (int m = 0; m < 2; m++) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
		cr_assert_eq(system(cmd), 0);
		t = tracerd_start(fx, m ? "--mode=wall" : "--mode=cpu", NULL, NULL);
		cr_expect(repo_until(samples_600));
		cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
		run_tracerd(&r, argv);
		cr_expect_eq(r.status, 0, "%s", r.err);
		run_tracerd(&tr, tree_argv);
		cr_expect_eq(tr.status, 0, "%s", tr.err);
		cr_expect(strstr(r.out, "runtime.goexit"), "%.400s", r.out);
		for (const char *line = r.out; *line;) {
			const char *nl = strchrnul(line, '\n');

			go_stack_checked(line, (size_t)(nl - line), m ? "wall" : "cpu", NULL, tr.out);
			line = *nl ? nl + 1 : nl;
		}
		run_result_free(&r);
		run_result_free(&tr);
	}
	/* Go's DWARF has no .debug_aranges: its CUs are found by their own
	 * ranges, so frames have file:line (the last recording's, and a
	 * dump's), and inlined calls show */
	{
		char pidbuf[16];
		const char *dump[] = { "tracerd", "dump", "--pid", pidbuf, NULL };
		const char *lines[] = { "tracerd", "report", repo, "--by", "line", NULL };
		const char *tree[] = { "tracerd", "report", repo, "-f", "tree", "--min-percent", "0",
			NULL };

		run_tracerd(&r, lines);
		cr_expect_eq(r.status, 0, "%s", r.err);
		cr_expect(strstr(r.out, "main.work at ") && strstr(r.out, "fx_go/main.go:"),
			"no file:line for the fixture's own code:\n%.1500s", r.out);
		cr_expect(!strstr(r.out, ".abi0"), "an ABI0 wrapper's suffix:\n%.1500s", r.out);
		run_result_free(&r);
		run_tracerd(&r, tree);
		cr_expect_eq(r.status, 0, "%s", r.err);
		cr_expect(strstr(r.out, " [inlined]"), "no inlined Go call:\n%.1500s", r.out);
		run_result_free(&r);
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)fx);
		run_tracerd(&r, dump);
		cr_expect_eq(r.status, 0, "%s", r.err);
		cr_expect(strstr(r.out, "/runtime/proc.go:"), "no file:line in a Go stack:\n%.1500s",
			r.out);
		run_result_free(&r);
	}
	fx_stop(fx);
	unlink(bin);
}
