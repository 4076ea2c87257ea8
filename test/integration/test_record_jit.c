/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record of code a JIT compiler made: fx_jit copies a hot loop
 * into anonymous memory and announces it in /tmp/perf-PID.map or a
 * jitdump (what it wrote is the truth the names are checked against);
 * Debian's nodejs with --perf-basic-prof names its hot JS function the
 * same way.  A perf map of another user is not read, and said once; a
 * map of junk costs a bounded read and names what it can. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/td.h"
#include "record.h"

TestSuite(record_jit, .init = record_setup, .fini = record_teardown, .timeout = 300);

static bool samples_300(const struct found *f)
{
	return f->samples >= 300;
}

static void jit_files_remove(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	unlink(path);
	snprintf(path, sizeof(path), "/tmp/jit-%d.dump", (int)pid);
	unlink(path);
}

/* Record fx_jit in mode until 300 samples; its pid (stopped, files
 * removed). */
static pid_t record_jit(const char *mode)
{
	pid_t fx = fx_start(FX("fx_jit"), mode), t;

	cr_assert_gt(fx, 0, "fx_jit %s", mode);
	t = tracerd_start(fx, "-F", "199", NULL);
	cr_expect(repo_until(samples_300));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	jit_files_remove(fx);
	return fx;
}

/* The text of tracerd report repo with one option (NULL: none). */
static char *report_of(const char *opt)
{
	const char *argv[] = { "tracerd", "report", repo, "--limit", "0", opt, NULL };
	struct run_result r;
	char *out;

	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	out = r.out;
	r.out = NULL;
	run_result_free(&r);
	return out;
}

/* The perf map's name for the loop, in most samples (the fixture spends
 * its time there), with the module perf shows, and the stack goes on past
 * it (its frame pointer) to the C function that called it. */
Test(record_jit, perf_map_names_the_hot_code)
{
	pid_t fx = record_jit("map");
	char module[64], *out;
	double share = total_share(fx, "jit_hot_loop", NULL);

	cr_expect_geq(share, 80.0, "jit_hot_loop in %.1f%% of samples", share);
	snprintf(module, sizeof(module), "jit_hot_loop ([perf-%d.map])", (int)fx);
	out = report_of(NULL);
	cr_expect(strstr(out, module), "no %s:\n%s", module, out);
	free(out);
	share = total_share(fx, "run_jitted", NULL);
	cr_expect_geq(share, 80.0, "run_jitted above it in %.1f%% of samples", share);
}

/* 0x before the numbers, as perf accepts them, and a later line wins over
 * an earlier one for the same range (code freed, its memory reused). */
Test(record_jit, perf_map_with_0x_and_reused_ranges)
{
	pid_t fx = record_jit("map0x");
	char *out = report_of(NULL);
	double share;

	cr_expect(!strstr(out, "old_code_here"), "a replaced line named code:\n%s", out);
	free(out);
	share = total_share(fx, "LazyCompile:*jit_hot_loop jit_hot.js:10", NULL);
	cr_expect_geq(share, 80.0, "the later line's name in %.1f%% of samples", share);
}

/* pprof's Locations and Mappings, and the HTML's tables, carry the JIT
 * frame: its name, file, line and module. */
static void jit_in_pprof_and_html(void)
{
	char html[96], *out;
	const char *argv[] = { "tracerd", "report", repo, "-f", "html", "-o", html, NULL };
	struct run_result r;

	if (have_command("go")) {
		out = pprof_raw();
		cr_expect(strstr(out, " jit_hot_loop jit_hot.js:11 ") && strstr(out, " [jit] "),
			"%s", out);
		free(out);
	}
	snprintf(html, sizeof(html), "%s.html", repo);
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	out = read_all(html);
	cr_expect(strstr(out, "\"jit_hot_loop\"") && strstr(out, "\"[jit]\"") &&
			strstr(out, "\"jit_hot.js\""),
		"the HTML lacks jit_hot_loop, [jit] or jit_hot.js");
	free(out);
	unlink(html);
}

/* jitdump: its code-load record names the loop, its debug-info record
 * gives line 11 from the loop's first instruction on: report --by line
 * says so. */
Test(record_jit, jitdump_names_and_lines)
{
	pid_t fx = record_jit("dump");
	double share = total_share(fx, "jit_hot_loop", NULL);
	char *out;

	cr_expect_geq(share, 80.0, "jit_hot_loop in %.1f%% of samples", share);
	out = report_of("--by=line");
	cr_expect(strstr(out, "jit_hot_loop at jit_hot.js:11 ([jit])"), "%s", out);
	cr_expect(!strstr(out, "jit_hot.js:10"), "the prologue's line, sampled: %s", out);
	free(out);
	share = total_share(fx, "jit_hot_loop at jit_hot.js:11", "--by=line");
	cr_expect_geq(share, 80.0, "jit_hot.js:11 in %.1f%% of samples", share);
	jit_in_pprof_and_html();
}

/* A perf map another user owns is not read (its names could be anyone's):
 * the code stays unnamed, and tracerd says so once. */
Test(record_jit, foreign_perf_map_ignored_and_said_once)
{
	pid_t fx = record_jit("foreign");
	char want[64], *out = report_of(NULL);
	const char *err = slurp(errfile), *at;
	unsigned said = 0;

	cr_expect(!strstr(out, "jit_hot_loop"), "a foreign map named code:\n%s", out);
	free(out);
	snprintf(want, sizeof(want), "/tmp/perf-%d.map was not read", (int)fx);
	for (at = err; (at = strstr(at, want)); at++)
		said++;
	cr_expect_eq(said, 1, "said %u times:\n%s", said, err);
	cr_expect(strstr(err, "another user"), "%s", err);
}

/* A map of junk (a 1 MiB line, malformed lines, empty ranges) is read
 * within its bounds and its one good line still names the code. */
Test(record_jit, junk_perf_map_bounded)
{
	pid_t fx = record_jit("junk");
	double share = total_share(fx, "jit_hot_loop", NULL);

	cr_expect_geq(share, 80.0, "jit_hot_loop in %.1f%% of samples", share);
}

/* Debian's nodejs with --perf-basic-prof: the hot JS function, compiled by
 * V8 into its code space (inside the span of node's own mappings), is
 * named from the perf map node writes, in most samples. */
Test(record_jit, node_perf_basic_prof)
{
	static const char js[] = "function crunchLedgerTotals(n) {\n"
				 "  let s = 0;\n"
				 "  for (let i = 0; i < n; i++) s = (s + i * 7) % 1000003;\n"
				 "  return s;\n"
				 "}\n"
				 "let t = 0;\n"
				 "process.stdout.write('ready\\n');\n"
				 "for (;;) t += crunchLedgerTotals(1e6);\n";
	const char *folded[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	char script[80], *node, cwd[4096], cwd_node[96], rm[128];
	unsigned long long hot = 0, all = 0;
	struct run_result r;
	FILE *f;
	pid_t fx, t;

	need_command("node", "nodejs");
	snprintf(script, sizeof(script), "%s.js", repo);
	f = fopen(script, "w");
	cr_assert(f && fputs(js, f) >= 0 && fclose(f) == 0);
	node = shell_output("command -v node", NULL);
	node[strcspn(node, "\n")] = '\0';
	/* node writes isolate-*-v8.log into its working directory: one
	 * of our own, not the tree the suite runs in */
	snprintf(cwd_node, sizeof(cwd_node), "%s.node", repo);
	cr_assert(getcwd(cwd, sizeof(cwd)) && mkdir(cwd_node, 0700) == 0 && chdir(cwd_node) == 0);
	setenv("NODE_OPTIONS", "--perf-basic-prof", 1);
	fx = fx_start(node, script);
	unsetenv("NODE_OPTIONS");
	cr_assert_eq(chdir(cwd), 0);
	free(node);
	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, "-F", "199", NULL);
	cr_expect(repo_until(samples_300));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	jit_files_remove(fx);
	unlink(script);
	snprintf(rm, sizeof(rm), "rm -rf %s", cwd_node);
	if (system(rm) != 0)
		cr_log_warn("cannot remove %s", cwd_node);
	run_tracerd(&r, folded);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *line = r.out; *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *sp = memrchr(line, ' ', (size_t)(end - line));
		unsigned long long n = sp ? strtoull(sp + 1, NULL, 10) : 0;

		all += n;
		if (memmem(line, (size_t)(end - line), ";JS:*crunchLedgerTotals ", 24) ||
			memmem(line, (size_t)(end - line), ";JS:^crunchLedgerTotals ", 24) ||
			memmem(line, (size_t)(end - line), ";JS:~crunchLedgerTotals ", 24))
			hot += n;
		line = nl ? nl + 1 : end;
	}
	cr_expect(all >= 300 && hot * 100 >= all * 50, "crunchLedgerTotals in %llu of %llu samples",
		hot, all);
	run_result_free(&r);
}
