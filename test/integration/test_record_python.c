/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CPython frames read from outside (symbolize/python.c): Debian's
 * /usr/bin/python3 (3.11) running test/fixtures/fx_python.py, whose call
 * chains are known.  The truth is the script itself: its functions, and
 * the lines its markers name.  Skipped where /usr/bin/python3 is missing
 * or is not 3.11; the 3.12 and 3.13 tests run pyenv's builds where there
 * are some ($PYENV_ROOT, else /root/.pyenv), and skip otherwise. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/td.h"
#include "record.h"

TestSuite(record_python, .init = record_setup, .fini = record_teardown, .timeout = 300);

#define PYTHON "/usr/bin/python3"
#define SCRIPT TD_SOURCE_DIR "/test/fixtures/fx_python.py"

/* pyenv's build of CPython 3.minor (a libpython .so, with DWARF), into
 * path; skips the test where there is none (Debian has only 3.11). */
static void need_pyenv(int minor, char *path, size_t len)
{
	const char *root = getenv("PYENV_ROOT");
	char pattern[PATH_MAX];
	glob_t g;

	snprintf(pattern, sizeof(pattern), "%s/versions/3.%d.*/bin/python3.%d",
		root ? root : "/root/.pyenv", minor, minor);
	if (glob(pattern, 0, NULL, &g) || !g.gl_pathc) {
		globfree(&g);
		cr_skip_test(
			"no CPython 3.%d here (%s): pyenv install 3.%d", minor, pattern, minor);
	}
	snprintf(path, len, "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
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
static void hot_function(const char *python)
{
	const char *folded[] = {"tracerd", "report", repo, "-f", "folded", NULL};
	const char *by_line[] = {"tracerd", "report", repo, "--by", "line", NULL};
	char want[512];
	struct run_result r;
	unsigned long all, with;
	pid_t fx, t;

	setenv("FX_PYTHON", "hot", 1);
	fx = fx_start(python, SCRIPT);
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

Test(record_python, hot_python_function_under_its_caller)
{
	need_python311(PYTHON);
	hot_function(PYTHON);
}

/* The same with 3.12 (a shim frame of its own under each activation's
 * first) and 3.13 (the chain from the thread state, the code object as
 * f_executable): the design holds. */
Test(record_python, hot_python_function_312)
{
	char python[PATH_MAX];

	need_pyenv(12, python, sizeof(python));
	hot_function(python);
}

Test(record_python, hot_python_function_313)
{
	char python[PATH_MAX];

	need_pyenv(13, python, sizeof(python));
	hot_function(python);
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

	need_python311(PYTHON);
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

/* Every wall sample of a thread blocked in time.sleep names the Python
 * function that called it: the repeats of a blocked thread (no stack
 * copy: it had not run since its last one) carry the Python frames read
 * with that copy, as the native frames they repeat, none read later and
 * left native or named otherwise.  The dozer's samples are those whose
 * native leaf is clock_nanosleep (the main thread waits on a lock). */
Test(record_python, blocked_thread_every_repeat_named)
{
	const char *folded[] = {"tracerd", "report", repo, "-f", "folded", NULL};
	unsigned long dozer = 0, named = 0;
	struct run_result r;
	pid_t fx, t;

	need_python311(PYTHON);
	setenv("FX_PYTHON", "sleep", 1);
	fx = fx_start(PYTHON, SCRIPT);
	cr_assert_gt(fx, 0, "fx_python.py did not start");
	t = tracerd_start(fx, "--mode=wall", "-F", "199");
	cr_expect(repo_until(samples_300));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	run_tracerd(&r, folded);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *line = r.out; *line;) {
		const char *nl = strchrnul(line, '\n'),
			   *sp = memrchr(line, ' ', (size_t)(nl - line));
		unsigned long n = sp ? strtoul(sp + 1, NULL, 10) : 0;
		static const char chain[] = ";doze_thread;nap_in_ledger;";

		if (sp && memmem(line, (size_t)(sp - line), "clock_nanosleep", 15)) {
			dozer += n;
			if (memmem(line, (size_t)(sp - line), chain, sizeof(chain) - 1))
				named += n;
			else
				cr_expect(false, "the dozer's sample not in nap_in_ledger: %.*s",
					(int)(nl - line), line);
		}
		line = *nl ? nl + 1 : nl;
	}
	/* about half of the 300 or more: two threads, each always waiting */
	cr_expect_geq(dozer, 100, "%lu samples of the dozer:\n%.3000s", dozer, r.out);
	cr_expect_eq(named, dozer);
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

static bool samples_1000(const struct found *f)
{
	return f->samples >= 1000;
}

/* Never a wrong name: a Python stack that changes all the time (the
 * writer reads the chain after the sample, the thread ran on), half of it
 * run by evaluator activations called from C (map, sum over a generator):
 * every stack's Python frames are the program's own chain, in its order,
 * and at least min_pct% of the stacks have them (most, where the
 * innermost frame is in the sample's stack copy: 3.11 and 3.12; 3.13
 * keeps it outside, read live a few microseconds on and left native when
 * it moved: 32-50% named on this 2-core machine under load, 2026-11-27). */
static void changing_stacks(const char *python, unsigned min_pct)
{
	static const char *const chain[] = {"<module>", "churn_ledger", "ledger_a", "ledger_b",
		"ledger_c", "ledger_c.<locals>.<genexpr>", "ledger_d"};
	const char *folded[] = {"tracerd", "report", repo, "-f", "folded", NULL};
	unsigned long all = 0, named = 0;
	struct run_result r;
	pid_t fx, t;

	setenv("FX_PYTHON", "churn", 1);
	fx = fx_start(python, SCRIPT);
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
	cr_expect_geq(named * 100, all * min_pct,
		"%lu of %lu stacks with their Python frames:\n%.3000s", named, all, r.out);
	run_result_free(&r);
}

Test(record_python, changing_stacks_never_named_wrong)
{
	need_python311(PYTHON);
	changing_stacks(PYTHON, 50);
}

Test(record_python, changing_stacks_never_named_wrong_312)
{
	char python[PATH_MAX];

	need_pyenv(12, python, sizeof(python));
	changing_stacks(python, 50);
}

Test(record_python, changing_stacks_never_named_wrong_313)
{
	char python[PATH_MAX];

	need_pyenv(13, python, sizeof(python));
	changing_stacks(python, 20);
}

/* Two threads all CPU in Python (fx_python.py gil): each waits for the
 * GIL while the other runs.  Those waits are of kind gil, not condvar
 * (Debian's stripped python3.11 names no take_gil: the condition
 * variables' addresses tell them), held by the other thread, at the
 * Python stack where the thread waits: settle_accounts under its own
 * thread's function.  The truth is the program: the two threads do
 * nothing but compute, so every wait of theirs is for the GIL (the
 * main thread's join is the one other wait). */
static void gil_waits(const char *python)
{
	const char *rep[] = {
		"tracerd", "report", repo, "--format", "waits", "--json", "--limit", "0", NULL};
	unsigned long long gil = 0, workers = 0, held = 0, episodes = 0;
	struct run_result r;
	pid_t fx, t;

	setenv("FX_PYTHON", "gil", 1);
	fx = fx_start(python, SCRIPT);
	cr_assert_gt(fx, 0, "fx_python.py did not start");
	t = tracerd_start(fx, "--mode=wall", "-F", "199");
	cr_expect(repo_until(samples_1000));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	run_tracerd(&r, rep);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *l = r.out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *end = strchrnul(l, '\n'), *w = strstr(l, "\"wait_ns\":"), *o;
		unsigned long long ns, count;

		if (!w || w > end || sscanf(w, "\"wait_ns\":%llu,\"count\":%llu", &ns, &count) != 2)
			continue;
		o = strstr(l, "\"threads\":");
		if (o && (memmem(l, (size_t)(o - l), "\"tally_thread\"", 14) ||
				 memmem(l, (size_t)(o - l), "\"audit_thread\"", 14)))
			workers += ns;
		if (strncmp(l, "{\"kind\":\"gil\"", 13))
			continue;
		gil += ns;
		episodes += count;
		/* innermost first: settle_accounts, then its thread's function */
		cr_expect(
			memmem(l, (size_t)(end - l), "\"settle_accounts\",\"tally_thread\"", 32) ||
				memmem(l, (size_t)(end - l), "\"settle_accounts\",\"audit_thread\"",
					32),
			"a GIL wait not in settle_accounts under its thread: %.*s", (int)(end - l),
			l);
		o = strstr(l, "\"owners\":[{\"thread\":");
		if (o && o < end && (o = strstr(o, "\"wait_ns\":")) && o < end &&
			sscanf(o, "\"wait_ns\":%llu", &ns) == 1)
			held += ns;
	}
	cr_expect_geq(episodes, 10, "%llu waits for the GIL:\n%.3000s", episodes, r.out);
	cr_expect_geq(gil * 100, workers * 95,
		"%llu ns of the workers' %llu waiting for the GIL:\n%.3000s", gil, workers, r.out);
	cr_expect_gt(held, 0, "no GIL wait names the thread that held it:\n%.3000s", r.out);
	run_result_free(&r);
}

Test(record_python, gil_waits_are_a_kind_of_their_own)
{
	need_python311(PYTHON);
	gil_waits(PYTHON);
}

Test(record_python, gil_waits_312)
{
	char python[PATH_MAX];

	need_pyenv(12, python, sizeof(python));
	gil_waits(python);
}

Test(record_python, gil_waits_313)
{
	char python[PATH_MAX];

	need_pyenv(13, python, sizeof(python));
	gil_waits(python);
}

/* The innermost of fx_python.py's sibling functions in a folded stack
 * (line, len bytes): 0 crc_ledger, 1 adler_ledger, 2 tally_ledger, -1
 * none; and in ret_leaf the libz function the sample was in: 0 crc32_z
 * (or crc32), 1 adler32_z (or adler32), -1 neither. */
static int sibling_of(const char *line, size_t len, int *ret_leaf)
{
	static const char *const fn[] = {"crc_ledger", "adler_ledger", "tally_ledger"};
	static const char *const leaf[] = {"crc32", "adler32"};
	int named = -1;

	*ret_leaf = -1;
	for (const char *p = line; p < line + len;) {
		const char *semi = memchr(p, ';', (size_t)(line + len - p));
		size_t l = (size_t)((semi ? semi : line + len) - p);

		for (int k = 0; k < 3; k++)
			if (strlen(fn[k]) == l && !memcmp(fn[k], p, l))
				named = k;
		for (int k = 0; k < 2; k++)
			if (l >= strlen(leaf[k]) && !memcmp(leaf[k], p, strlen(leaf[k])) &&
				(l == strlen(leaf[k]) || p[strlen(leaf[k])] == '_'))
				*ret_leaf = k;
		p = semi ? semi + 1 : line + len;
	}
	return named;
}

static bool strstr_n(const char *s, size_t len, const char *word)
{
	return memmem(s, len, word, strlen(word)) != NULL;
}

/* Siblings at one depth (fx_python.py siblings): crc_ledger and
 * adler_ledger, 1 ms each of the thread's own CPU clock, and
 * tally_ledger, 3 ms, called in turn by one loop, each in the same
 * datastack slot.  The frames are read after the sample: by then the
 * slot held the next one's frame, and before the sample's own evidence
 * was asked 272 of 408 samples in libz's crc32_z were named tally_ledger
 * (2026-11-27, both cores loaded).  The truth is independent of the
 * reading: the native leaf, unwound from the sample (crc32_z runs under
 * crc_ledger only, adler32_z under adler_ledger only), and the script's
 * own clock (the shares are 1:1:3 of the CPU time, which is what cpu
 * mode samples).  With both cores busy:
 * - a wrong name: at most 1% of the samples in libz.  Measured 0 in 3 to
 *   5 runs each on 3.11, 3.12 and 3.13; the way one is still possible is a
 *   stale word in the activation's slots pointing into the sibling's
 *   bytecode, which the stack's own writes make rare;
 * - each function's share of the samples named by one of the three
 *   within 5 points of its 20%, 20%, 60% (measured within 3; the
 *   misnamed shares were 14% and 67%);
 * - at most 10% left native, never named (measured 1-5%). */
static void siblings_named(const char *python)
{
	static const double want[] = {20, 20, 60};
	const char *folded[] = {"tracerd", "report", repo, "-f", "folded", NULL};
	unsigned long all = 0, wrong = 0, in_libz = 0, native = 0, named[3] = {0}, three;
	struct run_result r;
	pid_t fx, t;

	setenv("FX_PYTHON", "siblings", 1);
	fx = fx_start(python, SCRIPT);
	cr_assert_gt(fx, 0, "fx_python.py did not start");
	load_start();
	t = tracerd_start(fx, "-F", "999", NULL);
	cr_expect(repo_until(samples_1000));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	load_stop();
	fx_stop(fx);
	run_tracerd(&r, folded);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *line = r.out; *line;) {
		const char *nl = strchrnul(line, '\n'),
			   *sp = memrchr(line, ' ', (size_t)(nl - line));
		size_t len = sp ? (size_t)(sp - line) : 0;
		unsigned long n = sp ? strtoul(sp + 1, NULL, 10) : 0;
		int leaf = -1, k = sp ? sibling_of(line, len, &leaf) : -1;

		all += n;
		if (k >= 0)
			named[k] += n;
		else if (strstr_n(line, len, "_PyEval_EvalFrameDefault"))
			native += n;
		if (leaf >= 0) {
			in_libz += n;
			if (k != leaf)
				wrong += k >= 0 ? n : 0;
		}
		line = *nl ? nl + 1 : nl;
	}
	three = named[0] + named[1] + named[2];
	cr_expect_geq(all, 1000);
	cr_expect_geq(in_libz, 100, "%lu samples in libz:\n%.3000s", in_libz, r.out);
	cr_expect_leq(wrong * 100, in_libz,
		"%lu of %lu samples in libz named for a sibling:\n%.3000s", wrong, in_libz, r.out);
	for (int k = 0; k < 3; k++) {
		double share = three ? 100.0 * (double)named[k] / (double)three : 0;

		cr_expect(share >= want[k] - 5 && share <= want[k] + 5,
			"sibling %d: %.1f%% of %lu named samples, not %.0f%%:\n%.3000s", k, share,
			three, want[k], r.out);
	}
	cr_expect_leq(
		native * 10, all, "%lu of %lu samples left native:\n%.3000s", native, all, r.out);
	printf("siblings %s: %lu samples, %lu in libz, %lu named wrong, %lu native; "
	       "named %lu %lu %lu\n",
		python, all, in_libz, wrong, native, named[0], named[1], named[2]);
	run_result_free(&r);
}

Test(record_python, siblings_at_one_depth_named_from_the_sample)
{
	need_python311(PYTHON);
	siblings_named(PYTHON);
}

Test(record_python, siblings_at_one_depth_312)
{
	char python[PATH_MAX];

	need_pyenv(12, python, sizeof(python));
	siblings_named(python);
}

Test(record_python, siblings_at_one_depth_313)
{
	char python[PATH_MAX];

	need_pyenv(13, python, sizeof(python));
	siblings_named(python);
}
