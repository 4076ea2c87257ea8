/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CPython frames read from outside (symbolize/python.c): Debian's
 * /usr/bin/python3 (3.11) running test/fixtures/fx_python.py, whose call
 * chains are known.  The truth is the script itself: its functions, and
 * the lines its markers name.  Skipped where /usr/bin/python3 is missing
 * or is not 3.11 (the only version with a layout). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/td.h"
#include "record.h"

TestSuite(record_python, .init = record_setup, .fini = record_teardown, .timeout = 300);

#define PYTHON "/usr/bin/python3"
#define SCRIPT TD_SOURCE_DIR "/test/fixtures/fx_python.py"

static void need_python311(void)
{
	char *out;
	int status;

	if (access(PYTHON, X_OK))
		cr_skip_test("no " PYTHON " on this machine (apt-get install python3)");
	out = shell_output(PYTHON " -c 'import sys; print(sys.version_info[:2])'", &status);
	if (status || !out || strcmp(out, "(3, 11)\n")) {
		free(out);
		cr_skip_test(PYTHON " is not CPython 3.11, the version tracerd reads");
	}
	free(out);
}

static bool samples_300(const struct found *f)
{
	return f->samples >= 300;
}

/* Samples of folded stacks (text) holding chain, and in all. */
static unsigned long folded_count(const char *text, const char *chain, unsigned long *ret_all)
{
	unsigned long with = 0;

	*ret_all = 0;
	for (const char *line = text; *line;) {
		const char *nl = strchrnul(line, '\n'),
			   *sp = memrchr(line, ' ', (size_t)(nl - line));
		unsigned long n = sp ? strtoul(sp + 1, NULL, 10) : 0;

		*ret_all += n;
		if (sp && memmem(line, (size_t)(sp - line), chain, strlen(chain)))
			with += n;
		line = *nl ? nl + 1 : nl;
	}
	return with;
}

/* The hot Python function, under its Python caller, in >= 80% of a
 * CPU-bound program's samples (before: 97% _PyEval_EvalFrameDefault and no
 * Python name), and `report --by line` names the script's hot line. */
Test(record_python, hot_python_function_under_its_caller)
{
	const char *folded[] = {"tracerd", "report", repo, "-f", "folded", NULL};
	const char *by_line[] = {"tracerd", "report", repo, "--by", "line", NULL};
	char want[512];
	struct run_result r;
	unsigned long all, with;
	pid_t fx, t;

	need_python311();
	setenv("FX_PYTHON", "hot", 1);
	fx = fx_start(PYTHON, SCRIPT);
	cr_assert_gt(fx, 0, "fx_python.py did not start");
	t = tracerd_start(fx, "-F", "499", NULL);
	cr_expect(repo_until(samples_300));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	run_tracerd(&r, folded);
	cr_assert_eq(r.status, 0, "%s", r.err);
	with = folded_count(r.out, "<module>;serve_ledger;settle_accounts", &all);
	cr_expect_geq(all, 300);
	cr_expect_geq(with * 100, all * 80,
		"%lu of %lu samples in settle_accounts under serve_ledger:\n%.3000s", with, all,
		r.out);
	run_result_free(&r);
	run_tracerd(&r, by_line);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof(want), "settle_accounts at %s:%d ([python])", SCRIPT,
		source_line("test/fixtures/fx_python.py", "# settle-line"));
	cr_expect(strstr(r.out, want), "no row \"%s\":\n%.3000s", want, r.out);
	run_result_free(&r);
	if (have_command("go")) {
		/* pprof: the function with its file and line */
		char *raw = pprof_raw();

		snprintf(want, sizeof(want), " settle_accounts %s:%d ", SCRIPT,
			source_line("test/fixtures/fx_python.py", "# settle-line"));
		cr_expect(raw && strstr(raw, want), "pprof: no \"%s\":\n%.3000s", want,
			raw ? raw : "");
		free(raw);
	}
}

/* A thread waiting in time.sleep shows its Python stack in wall mode
 * (and in dump), at the script's line of the call. */
Test(record_python, sleeping_thread_shows_its_python_stack)
{
	const char *folded[] = {"tracerd", "report", repo, "-f", "folded", NULL};
	char want[512];
	struct run_result r;
	unsigned long all, with;
	pid_t fx, t;

	need_python311();
	setenv("FX_PYTHON", "sleep", 1);
	fx = fx_start(PYTHON, SCRIPT);
	cr_assert_gt(fx, 0, "fx_python.py did not start");
	dump_text(fx, &r, NULL, NULL);
	snprintf(want, sizeof(want), "nap_in_ledger at %s:%d in [python]", SCRIPT,
		source_line("test/fixtures/fx_python.py", "# nap-line"));
	cr_expect(strstr(r.out, want), "dump: no frame \"%s\":\n%s", want, r.out);
	run_result_free(&r);
	t = tracerd_start(fx, "--mode=wall", "-F", "199");
	cr_expect(repo_until(samples_300));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	run_tracerd(&r, folded);
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* two threads, each always waiting: the dozer's half of the samples */
	with = folded_count(
		r.out, ";Thread.run;_PyFunction_Vectorcall;doze_thread;nap_in_ledger;", &all);
	cr_expect_geq(with * 100, all * 40, "%lu of %lu samples in nap_in_ledger:\n%.3000s", with,
		all, r.out);
	run_result_free(&r);
}

/* The Python frames of one folded stack (line, len bytes), in order, are
 * a prefix of chain (n names): no frame under a caller it does not have,
 * none missing between two. Returns how many it holds. */
static size_t chain_prefix(const char *line, size_t len, const char *const *chain, size_t n)
{
	size_t at = 0;

	for (const char *p = line; p < line + len;) {
		const char *semi = memchr(p, ';', (size_t)(line + len - p));
		size_t l = (size_t)((semi ? semi : line + len) - p);

		for (size_t k = 0; k < n; k++) {
			if (strlen(chain[k]) != l || memcmp(chain[k], p, l))
				continue;
			cr_expect_eq(k, at, "%s where %s was due: %.*s", chain[k],
				at < n ? chain[at] : "none", (int)len, line);
			at = k + 1;
		}
		p = semi ? semi + 1 : line + len;
	}
	return at;
}

/* Never a wrong name: a Python stack that changes all the time (the
 * writer reads the chain after the sample, the thread ran on), half of it
 * run by evaluator activations called from C (map, sum over a generator):
 * every stack's Python frames are the program's own chain, in its order,
 * and most stacks have them. */
Test(record_python, changing_stacks_never_named_wrong)
{
	static const char *const chain[] = {"<module>", "churn_ledger", "ledger_a", "ledger_b",
		"ledger_c", "ledger_c.<locals>.<genexpr>", "ledger_d"};
	const char *folded[] = {"tracerd", "report", repo, "-f", "folded", NULL};
	unsigned long all = 0, named = 0;
	struct run_result r;
	pid_t fx, t;

	need_python311();
	setenv("FX_PYTHON", "churn", 1);
	fx = fx_start(PYTHON, SCRIPT);
	cr_assert_gt(fx, 0, "fx_python.py did not start");
	t = tracerd_start(fx, "-F", "999", NULL);
	cr_expect(repo_until(samples_300));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	run_tracerd(&r, folded);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *line = r.out; *line;) {
		const char *nl = strchrnul(line, '\n'),
			   *sp = memrchr(line, ' ', (size_t)(nl - line));
		unsigned long n = sp ? strtoul(sp + 1, NULL, 10) : 0;

		all += n;
		if (sp && chain_prefix(line, (size_t)(sp - line), chain, TD_ARRAY_SIZE(chain)) >= 3)
			named += n;
		line = *nl ? nl + 1 : nl;
	}
	cr_expect_geq(all, 300);
	/* the rest: left native on a doubt, most of them inside a
	 * generator's activation whose frame (in the generator object, a
	 * few microseconds old) was freed before the writer read it; or in
	 * the interpreter's own work between frames */
	cr_expect_geq(named * 100, all * 50, "%lu of %lu stacks with their Python frames:\n%.3000s",
		named, all, r.out);
	run_result_free(&r);
}
