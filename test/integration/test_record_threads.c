/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record and the target's threads and images: threads born and
 * gone by the hundred, each counted once, renamed; an exec symbolized
 * against the new image; a crash captured, with its stack, before the
 * process dies. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"

TestSuite(record_threads, .init = record_setup, .fini = record_teardown, .timeout = 300);

static bool churned(const struct found *f)
{
	return f->thread_start > 200 && f->thread_exit > 200;
}

Test(record_threads, thread_churn)
{
	pid_t fx, t;
	int in, out, st;
	char buf[128] = "";
	struct found f;

	fx = spawn(FX("fx_churn"), NULL, &in, &out);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_expect(repo_until(churned));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	/* after tracerd: nothing left stopped, the program finishes */
	for (int i = 0; i < 20; i++) {
		char s = task_state(fx, fx);

		cr_expect(s != 't' && s != 'T', "left stopped");
		usleep(10000);
	}
	cr_expect_eq(tracer_of(fx), 0);
	close(in); /* end of file: the fixture stops making threads */
	{
		ssize_t n = 0, k;

		while ((k = read(out, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
			n += k;
		buf[n] = '\0';
	}
	close(out);
	cr_assert_eq(waitpid(fx, &st, 0), fx);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the program ran to its end: %s", buf);
	f = scan_repo();
	cr_expect_gt(f.thread_start, 200, "births recorded: %llu",
		(unsigned long long)f.thread_start);
	cr_expect_gt(f.thread_exit, 200, "exits recorded: %llu", (unsigned long long)f.thread_exit);
	cr_expect_eq(verify_status(), 0);
}

static bool churned_fast(const struct found *f)
{
	return f->thread_start >= 200;
}

/* Every thread is born once: a thread that started, ran and was reaped
 * before its creator's clone report was handled must not be reported
 * born again (counted twice in "threads seen", and left behind as a
 * ghost that never exits).  The fixture's threads exit as soon as they
 * start, which makes that order common. */
Test(record_threads, each_thread_counted_once)
{
	pid_t fx, t;
	int in, out, st;
	char buf[128] = "";
	size_t got = 0;
	long created;
	unsigned long long seen;
	struct found f;
	const char *sum;

	fx = spawn(FX("fx_churn"), "0", &in, &out);
	t = tracerd_start(fx, "--duration=10m", NULL, NULL); /* until the target exits */
	cr_expect(repo_until(churned_fast), "threads churned while recorded");
	close(in); /* end of file: the fixture stops making threads and exits */
	for (ssize_t k; (k = read(out, buf + got, sizeof(buf) - 1 - got)) > 0;)
		got += (size_t)k;
	buf[got] = '\0';
	close(out);
	cr_expect_eq(tracerd_wait(t), 0, "%s", slurp(errfile));
	cr_assert_eq(waitpid(fx, &st, 0), fx);
	cr_assert(strstr(buf, "done "), "%s", buf);
	created = atol(strstr(buf, "done ") + 5);
	sum = strstr(slurp(errfile), "threads      ");
	cr_assert_not_null(sum, "%s", slurp(errfile));
	seen = strtoull(sum + 13, NULL, 10);
	f = scan_repo();
	cr_expect_eq(f.started_twice, 0, "%llu threads reported born twice",
		(unsigned long long)f.started_twice);
	/* tracerd attached after the first threads: it can see fewer, never
	 * more than the program made (plus its main thread) */
	cr_expect_leq(seen, (unsigned long long)created + 1, "%llu threads seen of %ld made + 1",
		seen, created);
	cr_expect_eq(verify_status(), 0);
}

static bool renamed(const struct found *f)
{
	return f->renames > 0;
}

Test(record_threads, thread_rename_recorded)
{
	pid_t fx = fx_start(FX("fx_rename"), NULL), t;
	const char *argv[] = { "tracerd", "report", repo, "-f", "threads", NULL };
	struct run_result r;
	struct found f;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	/* a sample written: the thread is defined under its first name */
	cr_expect(repo_until(has_samples));
	kill(fx, SIGUSR1); /* rename now */
	cr_expect(repo_until(renamed));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	f = scan_repo();
	cr_expect_eq(f.renames, 1, "one rename event");
	cr_expect_str_eq(f.renamed_to, "after-name");
	run_tracerd(&r, argv);
	cr_expect(strstr(r.out, "after-name") && !strstr(r.out, "before-name"),
		"report shows the latest name:\n%s", r.out);
	run_result_free(&r);
	fx_stop(fx);
}

static bool before_enough(const struct found *f)
{
	return f->before > 50;
}

static bool after_enough(const struct found *f)
{
	return f->after_with_exec_seen > 50;
}

Test(record_threads, exec_symbolized_against_the_new_image)
{
	pid_t fx = fx_start(FX("fx_exec"), NULL), t;
	struct found f;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_expect(repo_until(before_enough));
	kill(fx, SIGUSR1); /* exec now */
	cr_expect(repo_until(after_enough));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	f = scan_repo();
	cr_expect_eq(f.exec, 1, "the exec is recorded");
	cr_expect_gt(f.before, 50, "before exec: %llu", (unsigned long long)f.before);
	cr_expect_gt(f.after_with_exec_seen, 50,
		"after exec, new symbols: %llu (after_exec in %llu of %llu samples)\n%s",
		(unsigned long long)f.after_with_exec_seen, (unsigned long long)f.after,
		(unsigned long long)f.samples, slurp(errfile));
	fx_stop(fx);
}

/* fx_crash recorded until it crashes (on SIGUSR1, once the repository
 * holds samples); its wait status. */
static int crash_recorded(void)
{
	pid_t fx = fx_start(FX("fx_crash"), "3600000"), t;
	int st;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_expect(repo_until(has_samples), "recording");
	kill(fx, SIGUSR1);
	waitpid(fx, &st, 0);
	cr_expect_eq(tracerd_wait(t), 0, "a target that dies is a clean finish: %s",
		slurp(errfile));
	return st;
}

Test(record_threads, crash_captured_before_the_process_dies)
{
	pid_t fx;
	int st_alone, st_traced;
	struct found f;

	fx = fx_start(FX("fx_crash"), "300");
	cr_assert_gt(fx, 0);
	waitpid(fx, &st_alone, 0);
	st_traced = crash_recorded();
	cr_expect(WIFSIGNALED(st_traced) && WTERMSIG(st_traced) == SIGSEGV);
	cr_expect_eq(st_traced, st_alone, "the same exit status as without tracerd");
	f = scan_repo();
	cr_expect_eq(f.crashes, 1);
	cr_expect_eq(f.crash_signo, SIGSEGV);
	cr_expect(strstr(f.crash_chain, "crash_leaf crash_middle crash_outer main"),
		"the crashing thread's stack: %s", f.crash_chain);
	cr_expect_eq(f.finished, f.chunks, "every chunk finished");
	cr_expect_eq(verify_status(), 0);
	/* functions carry where DWARF declares them, through to the report */
	{
		const char *argv[] = { "tracerd", "report", repo, "-f", "speedscope", NULL };
		const char *fns[] = { "crash_leaf", "main" };
		const char *defs[] = { "int crash_leaf(double end)", "int main(int argc" };
		struct run_result r;

		run_tracerd(&r, argv);
		cr_assert_eq(r.status, 0, "%s", r.err);
		for (int i = 0; i < 2; i++) {
			char want[160];
			int line = source_line("test/fixtures/fx_crash.c", defs[i]);

			cr_assert_gt(line, 0);
			snprintf(want, sizeof(want),
				"{\"name\": \"%s\", \"file\": \"test/fixtures/fx_crash.c\", "
				"\"line\": %d}",
				fns[i], line);
			cr_expect(strstr(r.out, want), "%s:\n%.2000s", want, r.out);
		}
		run_result_free(&r);
	}
}

/* Functions carry where DWARF declares them in pprof too, as go tool
 * pprof reads it: "crash_leaf FILE:LINE s=START". */
Test(record_threads, crash_function_starts_in_pprof)
{
	char want[64], *raw;
	const char *hit;

	need_command("go", "golang-go");
	crash_recorded();
	raw = pprof_raw();
	hit = strstr(raw, " crash_leaf test/fixtures/fx_crash.c:");
	snprintf(want, sizeof(want), " s=%d\n",
		source_line("test/fixtures/fx_crash.c", "int crash_leaf(double end)"));
	cr_expect(hit && strstr(hit, want) && strstr(hit, want) < strchrnul(hit + 1, '\n') + 1,
		"pprof's function crash_leaf starts at%s%s", want, raw);
	free(raw);
}
