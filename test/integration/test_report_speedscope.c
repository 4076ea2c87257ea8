/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd report -f speedscope and -f folded, as speedscope reads them:
 * valid per its published schema, each thread's samples in time order,
 * and imported by the real speedscope with the top table's counts. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt-internal.h"
#include "../helpers.h"

static void speedscope_valid(const char *file)
{
	char in[512], out[] = "/tmp/tracerd-speedscope-XXXXXX", cmd[2048];
	const char *argv[] = { "tracerd", "report", in, "-f", "speedscope", "-o", out, NULL };
	char modules[512], *res;
	struct run_result r;
	int fd, status;

	need_command("node", "nodejs");
	need_command("npm", "npm");
	snprintf(modules, sizeof(modules), "%s/node/node_modules", TD_BUILD_DIR);
	snprintf(cmd, sizeof(cmd), "%s/scripts/install-node-tools %s/node >/dev/null 2>&1",
		TD_SOURCE_DIR, TD_BUILD_DIR);
	if (system(cmd) != 0)
		cr_skip_test("the npm registry is not available: cannot fetch speedscope's "
			     "schema and ajv to validate against it");
	snprintf(in, sizeof(in), GOLD("%s.tcf"), file);
	fd = mkstemp(out);
	close(fd);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	snprintf(cmd, sizeof(cmd), "node %s/test/tools/validate-speedscope.js %s %s 2>&1",
		TD_SOURCE_DIR, modules, out);
	res = shell_output(cmd, &status);
	cr_expect_eq(status, 0, "%s", res);
	cr_expect(!strncmp(res, "valid", 5), "%s", res);
	free(res);
	unlink(out);
}

Test(report_speedscope, speedscope_valid_per_schema, .timeout = 180)
{
	speedscope_valid("rec-crash");
	speedscope_valid("tcf-v1.0-small");
}

/* speedscope's time-order view needs each thread's samples in time order:
 * samples written out of order, two threads interleaved; runs of one stack
 * become one entry weighing the run. */
Test(report_speedscope, speedscope_samples_in_time_order)
{
	char path[] = "/tmp/tracerd-order-XXXXXX.tcf";
	const char *argv[] = { "tracerd", "report", path, "-f", "speedscope", NULL };
	int fd = mkstemps(path, 4);
	struct chunk_writer_opts o = { .fd = fd, .target_pid = 100 };
	struct chunk_writer *w;
	uint32_t f_main, f_a, f_b, l_main, l_a, l_b, s_a, s_b, t1, t2;
	/* thread 1 in time: A A B A B B (written shuffled); thread 2: B */
	static const struct {
		uint64_t ms;
		int thread, stack;
	} rows[] = { { 30, 1, 'B' }, { 10, 1, 'A' }, { 60, 1, 'B' }, { 20, 1, 'A' },
		{ 15, 2, 'B' }, { 40, 1, 'A' }, { 50, 1, 'B' } };
	struct run_result r;

	cr_assert_geq(fd, 0);
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	f_main = chunk_writer_function(w, "main", NULL, "m.c", 1);
	f_a = chunk_writer_function(w, "alpha", NULL, "m.c", 5);
	f_b = chunk_writer_function(w, "beta", NULL, "m.c", 9);
	l_main = chunk_writer_location(w, 0, 0x10, (struct chunk_line[]){ { f_main, 2, 0 } }, 1);
	l_a = chunk_writer_location(w, 0, 0x20, (struct chunk_line[]){ { f_a, 6, 0 } }, 1);
	l_b = chunk_writer_location(w, 0, 0x30, (struct chunk_line[]){ { f_b, 10, 0 } }, 1);
	s_a = chunk_writer_stack(w, (uint32_t[]){ l_a, l_main }, 2);
	s_b = chunk_writer_stack(w, (uint32_t[]){ l_b, l_main }, 2);
	t1 = chunk_writer_thread(w, 101, 100, "one");
	t2 = chunk_writer_thread(w, 102, 100, "two");
	cr_assert_eq(chunk_writer_meta(w, "sampling.hz", "100"), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		cr_assert_eq(chunk_writer_sample(w, rows[i].ms * 1000000, rows[i].thread == 1 ? t1 : t2,
				     TCF_STATE_ONCPU, rows[i].stack == 'A' ? s_a : s_b, NULL, 0),
			0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	close(fd);

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* frames in first use: alpha 0, main 1, beta 2 */
	cr_expect(strstr(r.out, "{\"name\": \"alpha\", \"file\": \"m.c\", \"line\": 5}"),
		"function frames with file and start line:\n%s", r.out);
	cr_expect(strstr(r.out, "\"name\": \"one (tid 101)\", \"unit\": \"nanoseconds\", "
				"\"startValue\": 0,\n   \"samples\": [[1,0],[1,2],[1,0],[1,2]],\n"
				"   \"weights\": [20000000,10000000,10000000,20000000],\n"
				"   \"endValue\": 60000000}"),
		"thread one: A A B A B B in time order, runs merged:\n%s", r.out);
	cr_expect(strstr(r.out, "\"name\": \"two (tid 102)\", \"unit\": \"nanoseconds\", "
				"\"startValue\": 0,\n   \"samples\": [[1,2]],\n"
				"   \"weights\": [10000000],"),
		"thread two apart:\n%s", r.out);
	run_result_free(&r);
	unlink(path);
}

/* A value as speedscope's sandwich table shows it: "1,553" (a count) or
 * "323.23ms" (nanoseconds), in samples of period_ns. */
static double sandwich_samples(const char *v, double period_ns)
{
	char digits[64];
	size_t k = 0;
	double x;
	const char *p = v;

	for (; *p && (isdigit((unsigned char)*p) || *p == ',' || *p == '.') && k + 1 < 64; p++)
		if (*p != ',')
			digits[k++] = *p;
	digits[k] = '\0';
	x = strtod(digits, NULL);
	if (!*p)
		return x; /* a count */
	if (!strcmp(p, "ns"))
		return x / period_ns;
	if (!strcmp(p, "µs") || !strcmp(p, "us"))
		return x * 1e3 / period_ns;
	if (!strcmp(p, "ms"))
		return x * 1e6 / period_ns;
	if (!strcmp(p, "s"))
		return x * 1e9 / period_ns;
	return -1;
}

/* Import our output into the real speedscope (headless chromium) and
 * compare its sandwich table, function by function, with the top table:
 * the same functions with the same self and total sample counts. */
static void speedscope_imports(const char *file, const char *format, double period_ns)
{
	char in[512], out[600], cmd[2048], modules[512], *res;
	const char *argv[] = { "tracerd", "report", in, "-f", format, "-o", out, NULL };
	const char *top_argv[] = { "tracerd", "report", in, "--limit", "0", NULL };
	struct run_result r, top;
	int rows = 0, functions = 0, status;

	need_command("node", "nodejs");
	need_command("npm", "npm");
	need_command("chromium", "chromium");
	snprintf(modules, sizeof(modules), "%s/node/node_modules", TD_BUILD_DIR);
	snprintf(cmd, sizeof(cmd), "%s/scripts/install-node-tools %s/node >/dev/null 2>&1",
		TD_SOURCE_DIR, TD_BUILD_DIR);
	if (system(cmd) != 0)
		cr_skip_test("the npm registry is not available: cannot fetch speedscope to "
			     "load our output into");
	snprintf(in, sizeof(in), GOLD("%s.tcf"), file);
	snprintf(out, sizeof(out), "%s/test-%s.%s", TD_BUILD_DIR, file,
		!strcmp(format, "folded") ? "folded" : "speedscope.json");
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	run_tracerd(&top, top_argv);
	cr_assert_eq(top.status, 0, "%s", top.err);
	snprintf(cmd, sizeof(cmd), "node %s/test/tools/speedscope-sandwich.js %s %s %s 2>&1",
		TD_SOURCE_DIR, modules, out, TD_BUILD_DIR);
	res = shell_output(cmd, &status);
	cr_assert_eq(status, 0, "speedscope imported %s:\n%s", out, res);
	/* every row of speedscope's table is a function of our top table with
	 * the same self and total */
	for (char *line = res, *next; *line; line = next) {
		char *t1, *t2, want[2100];
		const char *hit;
		unsigned long long self = 0, total = 0;

		next = strchrnul(line, '\n');
		if (*next)
			*next++ = '\0';
		t1 = strchr(line, '\t');
		t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		cr_assert(t2, "a sandwich row: %s", line);
		*t1 = *t2 = '\0';
		rows++;
		/* "  self%  total%  self  total  NAME (module)" */
		snprintf(want, sizeof(want), "  %s (", t2 + 1);
		hit = strstr(top.out, want);
		cr_assert(hit, "speedscope's function '%s' is in the top table:\n%s", t2 + 1,
			top.out);
		{
			const char *bol = hit;

			while (bol > top.out && bol[-1] != '\n')
				bol--;
			cr_assert_eq(sscanf(bol, " %*s %*s %llu %llu", &self, &total), 2, "%s", bol);
		}
		cr_expect_eq(llround(sandwich_samples(line, period_ns)), (long long)total,
			"%s: speedscope total %s, ours %llu", t2 + 1, line, total);
		cr_expect_eq(llround(sandwich_samples(t1 + 1, period_ns)), (long long)self,
			"%s: speedscope self %s, ours %llu", t2 + 1, t1 + 1, self);
	}
	for (const char *p = top.out; *p; p = *strchrnul(p, '\n') ? strchrnul(p, '\n') + 1 : "") {
		double pct;
		int end = 0;

		/* "  0.00% 100.00% ...": not the sample count, not the header */
		if (sscanf(p, " %lf%%%n", &pct, &end) == 1 && end)
			functions++;
	}
	cr_expect_eq(rows, functions, "speedscope shows %d functions, the top table %d:\n%s",
		rows, functions, top.out);
	run_result_free(&top);
	free(res);
}

Test(report_speedscope, folded_and_speedscope_imported_by_speedscope, .timeout = 240)
{
	speedscope_imports("rec-crash", "folded", 0);
	speedscope_imports("tcf-v1.0-small", "folded", 0);
	/* the recording is at 99 Hz: a sample weighs 1e9 / 99 ns */
	speedscope_imports("rec-crash", "speedscope", (double)(uint64_t)(1e9 / 99));
}
