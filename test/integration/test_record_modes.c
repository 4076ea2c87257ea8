/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record's modes against what the fixtures do: cpu mode's shares
 * of CPU time (a 70/30 split, a signal handler's share by its own clock),
 * wall mode's every thread at every tick (with perf's and ptrace's
 * capture), and a sampler asked for more than the machine gives. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/td.h"
#include "record.h"

TestSuite(record_modes, .init = record_setup, .fini = record_teardown, .timeout = 300);

static bool split_enough(const struct found *f)
{
	return f->leaf_a + f->leaf_b >= 2000;
}

Test(record_modes, cpu_split_70_30)
{
	pid_t fx = fx_start(FX("fx_split"), NULL), t;
	struct found f;
	double a;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, "-F", "499", NULL);
	/* 2000 samples: sd of the share sqrt(.21/2000) = 1%; the +-5 bound
	 * is over 3 sd even if half of them were not independent. */
	cr_expect(repo_until(split_enough));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	f = scan_repo();
	cr_assert_gt(f.leaf_a + f.leaf_b, 1000, "enough samples: %llu",
		(unsigned long long)(f.leaf_a + f.leaf_b));
	a = (double)f.leaf_a / (double)(f.leaf_a + f.leaf_b);
	cr_expect(a > 0.65 && a < 0.75, "split_a %.1f%% of %llu samples, want 70 +- 5", 100 * a,
		(unsigned long long)(f.leaf_a + f.leaf_b));
	cr_expect_eq(tracer_of(fx), 0, "detached");
	cr_expect_eq(verify_status(), 0);
	fx_stop(fx);
}

static bool samples_2000(const struct found *f)
{
	return f->samples >= 2000;
}

/* tracerd report -f FORMAT of the repository, into r (which the caller
 * frees). */
static void report_of(struct run_result *r, const char *format)
{
	const char *argv[] = { "tracerd", "report", repo, "-f", format, "--limit", "0", NULL };

	run_tracerd(r, argv);
	cr_assert_eq(r->status, 0, "%s", r->err);
}

/* The two modes against what fx_threads does: of its eleven threads one
 * spins and ten block (in pthread_join, a condition variable, a futex,
 * nanosleep, epoll, read, poll, select, recv, accept).  cpu mode: every
 * sample is the spinner's, on CPU.  wall mode: every thread at every tick,
 * so each has an eleventh of the samples, and ten elevenths are blocked.
 * Both say so at the head of the report. */
Test(record_modes, modes_mean_what_they_say)
{
	static const char *const names[] = { "fx_threads", "fx-condvar", "fx-futex",
		"fx-nanosleep", "fx-epoll", "fx-read", "fx-poll", "fx-select", "fx-recv",
		"fx-accept", "fx-spin" };
	const unsigned nthreads = 11;
	pid_t fx = fx_start(FX("fx_threads"), NULL), t;
	struct run_result r;
	unsigned long n;
	double pct;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_expect(repo_until(samples_600));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	report_of(&r, "threads");
	cr_expect(!strncmp(r.out, "mode: cpu (", 11), "%.200s", r.out);
	cr_expect(thread_share(r.out, "fx-spin", &n, &pct) && pct >= 99.0,
		"cpu mode: the spinner has every sample\n%s", r.out);
	for (size_t i = 0; i + 1 < TD_ARRAY_SIZE(names); i++)
		cr_expect(!thread_share(r.out, names[i], &n, &pct),
			"cpu mode: %s blocks and has no sample\n%s", names[i], r.out);
	run_result_free(&r);

	/* wall mode, running threads sampled by the kernel, then stopped */
	for (int c = 0; c < 2; c++) {
		const char *capture = c ? "--capture=ptrace" : "--capture=perf";
		char cmd[128];
		const char *tm;
		double sleeping = -1;

		snprintf(cmd, sizeof(cmd), "rm -rf %s", repo); /* each recording alone */
		cr_assert_eq(system(cmd), 0);
		t = tracerd_start(fx, "--mode=wall", capture, NULL);
		/* about 2 s: the spinner's first period and its last samples
		 * are a share of 1 s that showed under heavy load */
		cr_expect(repo_until(samples_2000));
		cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
		report_of(&r, "threads");
		cr_expect(!strncmp(r.out, "mode: wall (", 12), "%.200s", r.out);
		/* every thread, all the time: a blocked thread is lost only to a
		 * torn copy (it ran while copied), the spinner (ptrace) to a
		 * stop that timed out */
		for (size_t i = 0; i < TD_ARRAY_SIZE(names); i++)
			cr_expect(thread_share(r.out, names[i], &n, &pct) &&
					  pct > 100.0 / nthreads * 0.8 && pct < 100.0 / nthreads * 1.2,
				"wall mode %s: %s has an eleventh of the samples\n%s", capture,
				names[i], r.out);
		run_result_free(&r);
		report_of(&r, "top");
		/* "time: A% on-cpu[, B% runnable], C% sleeping" */
		tm = strstr(r.out, "% sleeping");
		cr_assert_not_null(tm, "%.300s", r.out);
		while (tm > r.out && tm[-1] != ' ')
			tm--;
		sscanf(tm, "%lf", &sleeping);
		cr_expect(sleeping > 100.0 * (nthreads - 1) / nthreads - 5,
			"wall mode %s: ten of eleven threads sleep\n%.300s", capture, r.out);
		/* every stack reaches its entry (_start, clone3) */
		cr_expect(!strstr(r.out, "[stack cut"), "wall mode %s: a stack was cut\n%s",
			capture, r.out);
		run_result_free(&r);
	}
	fx_stop(fx);
}

/* -F 999 with ptrace stops, on a machine that cannot give it: four
 * spinners on two CPUs.  The sampler takes fewer ticks than asked, for
 * every thread alike: each spinner's share of the samples follows its
 * share of the CPU time the scheduler gave the four (schedstat, read
 * around the recording), within 6 points; none is starved. */

Test(record_modes, an_overloaded_sampler_degrades_evenly)
{
	static const char *const names[] = { "crowd0", "crowd1", "crowd2", "crowd3" };
	pid_t fx = fx_start(FX("fx_crowd"), "4"), t, tids[4];
	uint64_t run0[4], total = 0;
	double truth[4];
	struct run_result r;

	cr_assert_gt(fx, 0);
	for (int i = 0; i < 4; i++)
		cr_assert_gt(tids[i] = task_by_name(fx, names[i]), 0, "%s", names[i]);
	t = tracerd_start(fx, "--capture=ptrace", "-F", "999");
	for (int i = 0; i < 4; i++)
		run0[i] = task_runtime(fx, tids[i]);
	cr_expect(repo_until(samples_2000));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	for (int i = 0; i < 4; i++) {
		truth[i] = (double)(task_runtime(fx, tids[i]) - run0[i]);
		total += (uint64_t)truth[i];
	}
	report_of(&r, "threads");
	for (int i = 0; i < 4; i++) {
		unsigned long n = 0;
		double pct = 0, want = 100.0 * truth[i] / (double)total;

		cr_expect(thread_share(r.out, names[i], &n, &pct) && fabs(pct - want) <= 6.0,
			"%s: %.1f%% of the samples, %.1f%% of the CPU time\n%s", names[i], pct,
			want, r.out);
	}
	run_result_free(&r);
	fx_stop(fx);
}

static bool handler_counted(void *path)
{
	double h, t;

	return sscanf(slurp(path), "%lf %lf", &h, &t) == 2;
}

/* fx_handler's own count: CPU time in its handler and in all, so far (the
 * first once its handler has run); false if it never says. */
static bool handler_clock(const char *path, double *ret_handler, double *ret_total)
{
	return wait_for(handler_counted, (void *)path, TEST_PATIENCE_MS) &&
		sscanf(slurp(path), "%lf %lf", ret_handler, ret_total) == 2;
}

/* cpu mode against the program's own clock: fx_handler spends about a
 * tenth of its CPU time in a SIGPROF handler, and counts it; the share of
 * samples in on_prof over the recording must be the share of CPU time its
 * count says, within 3 points, and those stacks go through the signal
 * frame (__restore_rt) to _start.  Giving the kernel's events new periods
 * at the drain a target's signal stop triggered restarted them just
 * before the handler ran: it got 0.1% of the samples. */
Test(record_modes, cpu_share_of_a_signal_handler_is_its_own_clocks, .timeout = 180)
{
	const char *folded[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	char clock[160];
	double h0, t0, h1, t1, truth, share;
	unsigned long long in = 0, all = 0, whole = 0;
	struct run_result r;
	pid_t fx, t;
	bool ok;

	snprintf(clock, sizeof(clock), "%s.handler", repo);
	fx = fx_start(FX("fx_handler"), clock);
	cr_assert_gt(fx, 0);
	if (!handler_clock(clock, &h0, &t0)) {
		fx_stop(fx);
		cr_assert_fail("%s: no count from fx_handler: '%s'", clock, slurp(clock));
	}
	t = tracerd_start(fx, "-F", "499", NULL);
	cr_expect(repo_until(samples_2000));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	ok = handler_clock(clock, &h1, &t1);
	fx_stop(fx);
	unlink(clock);
	cr_assert(ok, "no count from fx_handler");
	run_tracerd(&r, folded);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (const char *line = r.out; *line;) {
		const char *nl = strchrnul(line, '\n'), *sp = memrchr(line, ' ', (size_t)(nl - line));
		unsigned long long n = sp ? strtoull(sp + 1, NULL, 10) : 0;

		all += n;
		if (memmem(line, (size_t)(nl - line), ";__restore_rt;on_prof", 21)) {
			in += n;
			whole += !strncmp(line, "_start;", 7) ? n : 0;
		}
		line = *nl ? nl + 1 : nl;
	}
	truth = 100 * (h1 - h0) / (t1 - t0);
	share = all ? 100.0 * (double)in / (double)all : 0;
	cr_expect(all >= 1000 && share > truth - 3 && share < truth + 3,
		"on_prof has %.1f%% of %llu samples; its own clock says %.1f%%:\n%.1500s", share,
		all, truth, r.out);
	cr_expect_eq(whole, in, "every stack in the handler reaches _start:\n%.1500s", r.out);
	run_result_free(&r);
}

/* One run of record -m wall -- sleep 0.3 into dir: its folded stacks'
 * samples in all, those placed nowhere, and those in our own code (the
 * command's wait for us before its exec, or its exec and exit stops). */
static void wall_of_a_command(const char *dir, unsigned *all, unsigned *nowhere, unsigned *ours)
{
	const char *rec[] = { "tracerd", "record", "-q", "-m", "wall", "-r", dir, "--", "sleep",
		"0.3", NULL };
	const char *rep[] = { "tracerd", "report", dir, "-f", "folded", NULL };
	struct run_result r;
	char *line, *save = NULL;

	run_tracerd(&r, rec);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, rep);
	cr_assert_eq(r.status, 0, "%s", r.err);
	*all = *nowhere = *ours = 0;
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *sp = strrchr(line, ' ');
		unsigned n = sp ? (unsigned)strtoul(sp + 1, NULL, 10) : 0;

		*all += n;
		if (strstr(line, "[unknown]") || strstr(line, "[not unwound"))
			*nowhere += n;
		if (strstr(line, "start_held") || strstr(line, "cmd_record") ||
			strstr(line, "ptrace_stop"))
			*ours += n;
	}
	run_result_free(&r);
}

/* A command under record in wall mode weighs its own life: not its wait
 * for tracerd before its exec, nor the exec and exit stops tracerd holds
 * it in; and its stacks are placed although the writer first read its
 * mappings when ld.so had mapped nothing but the program (a short life
 * ends before a once-a-second renewal).  sleep 0.3 at 99 Hz: 30 periods
 * by its own clock, a few more for its start and wake-ups on a loaded
 * machine.  Five runs: a wrong placement came once in 10-20.  One sample
 * in tracerd's stops is allowed: the exit stop's time until the sampler
 * wakes for it, which the kernel's samples drained just before the event
 * is read weigh (under a period, but a late wake on a loaded machine can
 * make it one); before, 3 to 15 such samples a run. */
Test(record_modes, a_commands_wall_time_is_its_own, .timeout = 180)
{
	for (int i = 0; i < 5; i++) {
		char dir[96], rm[128];
		unsigned all, nowhere, ours;

		snprintf(dir, sizeof(dir), "%s-run%d", repo, i);
		wall_of_a_command(dir, &all, &nowhere, &ours);
		snprintf(rm, sizeof(rm), "rm -rf %s", dir);
		if (system(rm) != 0)
			cr_log_warn("cannot remove %s", dir);
		cr_expect(all >= 27 && all <= 40, "run %d: %u samples for 0.3 s at 99 Hz", i, all);
		cr_expect_leq(ours, 1, "run %d: %u of %u samples in tracerd's own stops", i, ours,
			all);
		cr_expect(nowhere <= 1, "run %d: %u of %u samples placed nowhere", i, nowhere, all);
	}
}
