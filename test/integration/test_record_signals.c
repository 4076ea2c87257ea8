/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record and signals: the target's queued signals pass through
 * exactly, job control stops and resumes it as without tracerd, and
 * tracerd's own signals stop it (INT), rotate (HUP) and snapshot (USR1). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt.h"
#include "../../common/td.h"
#include "record.h"

TestSuite(record_signals, .init = record_setup, .fini = record_teardown, .timeout = 300);

/* Run fx_signals, with tracerd if trace: 'rt' queued real-time signals and
 * 'usr1' SIGUSR1s from here, one at a time, each acknowledged.  Returns
 * what the fixture printed (static). */
static const char *run_signals(bool trace, int rt, int usr1, int *ret_handled)
{
	static char buf[4096];
	char n[16];
	pid_t fx, t = 0;
	int in, out, st, handled = 0;
	size_t got = 0;

	snprintf(n, sizeof(n), "%d", rt);
	fx = spawn(FX("fx_signals"), n, &in, &out);
	buf[0] = '\0';
	if (trace)
		t = tracerd_start(fx, "-F", "999", NULL);
	cr_assert_eq(write(in, "g", 1), 1); /* every signal from now on meets tracerd */
	for (int i = 1; i <= usr1; i++) {
		char want[32];

		snprintf(want, sizeof(want), "usr1 %d\n", i);
		kill(fx, SIGUSR1);
		/* wait for this one's answer before the next: no coalescing */
		while (!memmem(buf, got, want, strlen(want))) {
			struct pollfd pfd = { out, POLLIN, 0 };
			ssize_t k;

			cr_assert_gt(poll(&pfd, 1, TEST_PATIENCE_MS), 0, "SIGUSR1 %d not handled", i);
			k = read(out, buf + got, sizeof(buf) - 1 - got);
			cr_assert_gt(k, 0);
			got += (size_t)k;
		}
	}
	close(in); /* the fixture ends once every real-time signal is in */
	for (ssize_t k; (k = read(out, buf + got, sizeof(buf) - 1 - got)) > 0;)
		got += (size_t)k;
	buf[got] = '\0';
	close(out);
	waitpid(fx, &st, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fx_signals exit status %#x: %s", st, buf);
	for (char *q = buf; (q = strstr(q, "usr1 ")); q++)
		handled++;
	if (trace)
		cr_expect_eq(tracerd_wait(t), 0, "%s", slurp(errfile));
	*ret_handled = handled;
	return buf;
}

/* Queued (real-time) signals never merge: each one sent must be handled
 * once, in order, with its own si_value, with tracerd as without it.
 * (How much tracerd delays a signal is a timing figure: make bench.) */
Test(record_signals, signals_pass_through_exactly, .timeout = 180)
{
	const char *out;
	int h;

	out = run_signals(false, 3000, 0, &h);
	cr_expect(strstr(out, "rt 3000 received 3000 misordered 0\n"), "alone: %s", out);
	out = run_signals(true, 3000, 50, &h);
	cr_expect(strstr(out, "rt 3000 received 3000 misordered 0\n"), "under tracerd: %s", out);
	cr_expect_eq(h, 50, "each SIGUSR1 handled exactly once");
}

/* The thread of tracerd that traces pid: its sampler. */
static pid_t tracer_tid(pid_t pid)
{
	struct td_task_info i;

	return td_task_info_read(pid, pid, &i) < 0 ? 0 : i.tracer;
}

struct ticks {
	pid_t tracerd, sampler;
	uint64_t until;
};

static bool ticked(void *arg)
{
	const struct ticks *k = arg;

	return task_switches(k->tracerd, k->sampler) >= k->until;
}

/* Wait until tracerd's sampler has woken n more times.  It sleeps between
 * ticks, so this is a count of ticks (at most n of them: a tick that
 * samples can wake it more than once), whatever the clock says. */
static bool sampler_ticks(pid_t tracerd, pid_t sampler, unsigned n)
{
	struct ticks k = { tracerd, sampler, task_switches(tracerd, sampler) + n };

	return wait_for(ticked, &k, TEST_PATIENCE_MS);
}

static bool stop_taken(void *arg)
{
	pid_t fx = *(pid_t *)arg;
	char s = task_state(fx, fx);

	/* SIGSTOP dequeued and the thread in its stop (a traced group-stop
	 * shows 't'): from here it runs no code of its own until SIGCONT */
	return !task_signal_pending(fx, fx, SIGSTOP) && (s == 't' || s == 'T');
}

Test(record_signals, job_control_stop_and_cont)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL), t, sampler;
	struct running r0;
	bool settled = false;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	sampler = tracer_tid(fx);
	cr_assert(sampler_ticks(t, sampler, 10), "tracerd's sampler does not tick");
	kill(fx, SIGSTOP);
	cr_assert(wait_for(stop_taken, &fx, TEST_PATIENCE_MS), "SIGSTOP not taken (state %c)",
		task_state(fx, fx));
	r0.fx = fx;
	r0.counter = fx_counter(fx);
	cr_assert_neq(r0.counter, UINT64_MAX, "cannot read the fixture's progress counter");
	/* tracerd samples the stopped thread once more, then leaves it be:
	 * wait for its run time to hold still over 5 sampler wake-ups */
	for (int tries = 0; tries < 100 && !settled; tries++) {
		r0.runtime = task_runtime(fx, fx);
		cr_assert(sampler_ticks(t, sampler, 5));
		settled = task_runtime(fx, fx) == r0.runtime;
	}
	cr_assert(settled, "tracerd keeps waking a stopped thread");
	for (int i = 0; i < 50; i++) {
		char s = task_state(fx, fx);

		cr_expect(s == 't' || s == 'T', "stays stopped across ticks (state %c)", s);
		cr_assert(sampler_ticks(t, sampler, 1));
	}
	cr_expect_eq(fx_counter(fx), r0.counter, "no progress while stopped");
	cr_expect_eq(task_runtime(fx, fx), r0.runtime, "not woken while stopped");
	cr_expect_eq(tracer_of(fx), t, "traced all along");
	kill(fx, SIGCONT);
	cr_expect(wait_for(runs_again, &r0, TEST_PATIENCE_MS), "kill -CONT resumes it (state %c)",
		task_state(fx, fx));
	cr_expect_eq(tracer_of(fx), t, "still traced");
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
}

static bool two_chunks(void *arg)
{
	struct tcf_dir_entry e[16];

	(void)arg;
	return tcf_dir_scan(repo, e, 16) == 2;
}

static bool snapshot_said(void *arg)
{
	(void)arg;
	return strstr(slurp(errfile), "snapshot written: ") != NULL;
}

Test(record_signals, sigint_hup_usr1)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL), t;
	struct tcf_dir_entry e[16];
	char snaps[128];
	struct stat st;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_expect(repo_until(has_samples), "recording");
	kill(t, SIGHUP);
	cr_expect(wait_for(two_chunks, NULL, TEST_PATIENCE_MS), "SIGHUP rotated");
	kill(t, SIGUSR1);
	cr_expect(wait_for(snapshot_said, NULL, TEST_PATIENCE_MS), "%s", slurp(errfile));
	kill(t, SIGINT);
	cr_expect_eq(tracerd_wait(t), 0, "%s", slurp(errfile));
	cr_expect_eq(tracer_of(fx), 0, "detached on SIGINT");
	cr_expect_eq(task_state(fx, fx), 'R');
	cr_expect_eq(tcf_dir_scan(repo, e, 16), 2, "SIGHUP rotated");
	snprintf(snaps, sizeof(snaps), "%s/snapshots", repo);
	cr_expect_eq(stat(snaps, &st), 0, "SIGUSR1 wrote a snapshot");
	cr_expect(strstr(slurp(errfile), "snapshot written: "), "%s", slurp(errfile));
	cr_expect_eq(verify_status(), 0);
	fx_stop(fx);
}

/* ---- wall mode and a job-control stop: fx_jobstop (two spinners, a
 * napper, a parked reader) keeps its own clock and counts its waits */

/* Send fx the one-byte command c and, for 'r', read its report into text
 * (up to "end").  false if it did not answer. */
static bool jobstop_ask(int in, int out, char c, char *text, size_t len)
{
	if (write(in, &c, 1) != 1)
		return false;
	return c != 'r' || fx_read_report(out, text, len);
}

/* The number after key in name's line of a fixture report (prefix "T " or
 * "G "), or UINT64_MAX. */
static uint64_t report_field(const char *text, const char *prefix, const char *name,
	const char *key)
{
	char line[64];
	const char *p, *e;
	unsigned long long v;

	snprintf(line, sizeof(line), "%s%s ", prefix, name);
	p = strstr(text, line);
	if (!p)
		return UINT64_MAX;
	e = strchr(p, '\n');
	snprintf(line, sizeof(line), " %s ", key);
	p = strstr(p, line);
	if (!p || (e && p > e) || sscanf(p + strlen(line), "%llu", &v) != 1)
		return UINT64_MAX;
	return v;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Every thread of pid in its stop: no SIGSTOP pending, /proc's 't' (a
 * traced group-stop) or 'T'. */
static bool all_stopped(void *arg)
{
	pid_t pid = *(pid_t *)arg, tids[16];
	int n = task_list(pid, tids, 16);

	for (int i = 0; i < n; i++) {
		char s = task_state(pid, tids[i]);

		if (task_signal_pending(pid, tids[i], SIGSTOP) || (s != 't' && s != 'T'))
			return false;
	}
	return n > 0;
}

struct spinning {
	pid_t pid, tids[2];
	uint64_t runtime[2];
};

/* Both spinners have run since they stopped. */
static bool spin_again(void *arg)
{
	const struct spinning *k = arg;

	return task_runtime(k->pid, k->tids[0]) > k->runtime[0] &&
	       task_runtime(k->pid, k->tids[1]) > k->runtime[1];
}

/* The value of column col (a header word) in the row of thread name of a
 * threads report, with its '%' dropped; NAN if either is missing. */
static double threads_column(const char *out, const char *name, const char *col)
{
	const char *hdr = strstr(out, "     tid ");
	char key[64], word[32];
	const char *p;
	int want = -1, k = 0, n;

	if (!hdr)
		return NAN;
	for (p = hdr; sscanf(p, "%31s%n", word, &n) == 1 && *p != '\n'; p += n, k++) {
		if (!strcmp(word, col))
			want = k;
		while (p[n] == ' ')
			n++;
		if (p[n] == '\n')
			break;
	}
	snprintf(key, sizeof(key), " %s ", name);
	p = strstr(hdr, key);
	if (want < 0 || !p)
		return NAN;
	while (p > out && p[-1] != '\n')
		p--;
	for (k = 0; k <= want; k++, p += n)
		if (sscanf(p, "%31s%n", word, &n) != 1)
			return NAN;
	return atof(word);
}

/* A process stopped by job control in a wall recording: every tick a
 * thread spends in the stop is in state stopped, with the stack where it
 * stopped (the threads view and --state stopped show it), and with perf
 * capture that state's share of each thread agrees with the time this
 * test held it stopped (and the fixture's own clock saw a gap at least
 * that long in its spinners).  (With ptrace capture a sample
 * is a tick, and ticks come slower while rounds of stops run than while
 * every thread is stopped: a share of ticks, not of time.  All threads
 * stopped together, so their shares agree with each other.)  tracerd
 * never resumes it; after SIGCONT it runs as before, and none of its
 * waits returned EINTR or early. */
static void jobstop_run(const char *capture)
{
	bool timed = !strcmp(capture, "--capture=perf");
	static const struct {
		const char *name, *fn;
	} th[] = { { "fx-spin0", "spin_outer" }, { "fx-spin1", "spin_outer" },
		{ "fx-nap", "nap_outer" }, { "fx-park", "park_outer" } };
	const char *argv[] = { "tracerd", "report", repo, "-f", "threads", NULL };
	char text[4096];
	int in, out;
	pid_t fx = spawn(FX("fx_jobstop"), NULL, &in, &out), t, sampler, tids[4];
	uint64_t t_begin, t_stop, t_stopped, t_cont, t_resumed, t_end; /* this test's clock */
	uint64_t runtime[4], spins, progress, gap = 0;
	struct spinning k;
	struct run_result r;
	bool settled = false;
	double truth, first = NAN;

	cr_assert_gt(fx, 0);
	for (int i = 0; i < 4; i++) {
		tids[i] = task_by_name(fx, th[i].name);
		cr_assert_gt(tids[i], 0, "no thread %s", th[i].name);
	}
	t = tracerd_start(fx, "--mode=wall", "--frequency=199", capture);
	t_begin = mono_ns();
	sampler = tracer_tid(fx);
	cr_assert(sampler_ticks(t, sampler, 200), "tracerd's sampler does not tick");

	/* the stop: from here the spinners' longest gap is the stop */
	cr_assert(jobstop_ask(in, out, 'z', text, sizeof(text)));
	cr_assert(jobstop_ask(in, out, 'r', text, sizeof(text)), "%s: no report", capture);
	spins = report_field(text, "G ", "fx-spin0", "spins");
	t_stop = mono_ns();
	kill(fx, SIGSTOP);
	cr_assert(wait_for(all_stopped, &fx, TEST_PATIENCE_MS), "SIGSTOP not taken");
	t_stopped = mono_ns();
	for (int tries = 0; tries < 100 && !settled; tries++) {
		for (int i = 0; i < 4; i++)
			runtime[i] = task_runtime(fx, tids[i]);
		cr_assert(sampler_ticks(t, sampler, 5));
		settled = true;
		for (int i = 0; i < 4; i++)
			settled &= task_runtime(fx, tids[i]) == runtime[i];
	}
	cr_assert(settled, "%s: the stopped threads keep running", capture);
	progress = fx_counter(fx);
	cr_assert(sampler_ticks(t, sampler, 200));
	cr_expect_eq(fx_counter(fx), progress, "%s: the spinners spun while stopped", capture);
	for (int i = 0; i < 4; i++) {
		char st = task_state(fx, tids[i]);

		cr_expect_eq(task_runtime(fx, tids[i]), runtime[i], "%s: %s woken while stopped",
			capture, th[i].name);
		cr_expect(st == 't' || st == 'T', "%s: %s not stopped (state %c)", capture,
			th[i].name, st);
	}
	t_cont = mono_ns();
	kill(fx, SIGCONT);
	k = (struct spinning){ fx, { tids[0], tids[1] }, { runtime[0], runtime[1] } };
	cr_expect(wait_for(spin_again, &k, TEST_PATIENCE_MS), "%s: SIGCONT does not resume it",
		capture);
	t_resumed = mono_ns();
	cr_assert(sampler_ticks(t, sampler, 200));
	cr_assert(jobstop_ask(in, out, 'r', text, sizeof(text)), "%s: no report", capture);
	t_end = mono_ns();
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));

	/* its own clock saw the stop: a gap at least as long as this test
	 * held it (longer by the waits for a CPU around it, on a loaded
	 * machine) */
	for (int i = 0; i < 2; i++)
		gap = TD_MAX(gap, report_field(text, "G ", th[i].name, "gap_ns"));
	cr_expect(gap >= t_cont - t_stopped, "%s: a gap of %.3f s; held %.3f to %.3f s", capture,
		gap / 1e9, (t_cont - t_stopped) / 1e9, (t_resumed - t_stop) / 1e9);
	/* it ran as before once continued, and saw no EINTR */
	cr_expect_gt(report_field(text, "G ", "fx-spin0", "spins"), spins + 100,
		"%s: the spinner did not run on\n%s", capture, text);
	for (int i = 0; i < 3; i++) {
		static const char *const waiters[] = { "fx-nap", "fx-park", "fx-main" };

		cr_expect_eq(report_field(text, "T ", waiters[i], "eintr"), 0, "%s: %s\n%s",
			capture, waiters[i], text);
		cr_expect_eq(report_field(text, "T ", waiters[i], "early"), 0, "%s: %s\n%s",
			capture, waiters[i], text);
	}
	cr_expect_gt(report_field(text, "T ", "fx-nap", "waits"), 100, "%s: %s", capture, text);

	/* the threads view: each thread's time stopped, the stop's share of
	 * the recording by this test's clock, from SIGSTOP to SIGCONT (it
	 * took t_stopped - t_stop to stop; every thread stopped and
	 * continued together) */
	truth = 100.0 * (double)(t_cont - t_stop) / (double)(t_end - t_begin);
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "% stopped"), "%s: mode header\n%s", capture, r.out);
	for (int i = 0; i < 4; i++) {
		double got = threads_column(r.out, th[i].name, "stopped");

		if (timed)
			cr_expect(fabs(got - truth) <= 5.0,
				"%s: %s %.1f%% stopped, held %.1f%% of the time\n%s", capture,
				th[i].name, got, truth, r.out);
		else if (!i)
			first = got;
		else
			cr_expect(got > 0 && fabs(got - first) <= 5.0,
				"%s: %s %.1f%% stopped, %s %.1f%%\n%s", capture, th[i].name, got,
				th[0].name, first, r.out);
	}
	run_result_free(&r);
	/* --state stopped: where each one stopped (a spinner in spin_inner,
	 * or in the vDSO's clock_gettime it calls, whose frame only a full
	 * set of registers unwinds) */
	for (int i = 0; i < 4; i++) {
		double pct = total_share(tids[i], th[i].fn, "--state=stopped");

		cr_expect_geq(pct, 90.0, "%s: %s: %.1f%% of its stopped time in %s", capture,
			th[i].name, pct, th[i].fn);
	}
	close(in);
	close(out);
	fx_stop(fx);
}

Test(record_signals, wall_mode_weighs_a_job_control_stop, .timeout = 240)
{
	jobstop_run("--capture=perf");
}

Test(record_signals, wall_mode_weighs_a_job_control_stop_ptrace, .timeout = 240)
{
	jobstop_run("--capture=ptrace");
}

/* A process already stopped when the wall recording attaches: all of its
 * time is stopped, the recording and its end leave it stopped (its code
 * makes no progress: the attach and the detach trap it in the kernel, which
 * its run time counts), and SIGCONT still resumes it. */
Test(record_signals, wall_mode_attached_to_a_stopped_process)
{
	static const char *const names[] = { "fx-spin0", "fx-spin1", "fx-nap", "fx-park" };
	const char *argv[] = { "tracerd", "report", repo, "-f", "threads", NULL };
	char text[4096];
	int in, out;
	pid_t fx = spawn(FX("fx_jobstop"), NULL, &in, &out), t, sampler, tids[2];
	struct spinning k = { .pid = fx };
	struct run_result r;
	uint64_t progress;

	cr_assert_gt(fx, 0);
	kill(fx, SIGSTOP);
	cr_assert(wait_for(all_stopped, &fx, TEST_PATIENCE_MS), "SIGSTOP not taken");
	for (int i = 0; i < 2; i++) {
		tids[i] = task_by_name(fx, names[i]);
		k.tids[i] = tids[i];
		k.runtime[i] = task_runtime(fx, tids[i]);
	}
	progress = fx_counter(fx);
	cr_assert_neq(progress, UINT64_MAX, "cannot read the fixture's progress counter");
	t = tracerd_start(fx, "--mode=wall", "--frequency=199", NULL);
	sampler = tracer_tid(fx);
	cr_assert(sampler_ticks(t, sampler, 100), "tracerd's sampler does not tick");
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	cr_expect(all_stopped(&fx), "the recording resumed a stopped process");
	cr_expect_eq(fx_counter(fx), progress, "the spinners spun while stopped");

	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 0, "%s", r.err);
	for (int i = 0; i < 4; i++) {
		double got = threads_column(r.out, names[i], "stopped");

		cr_expect_geq(got, 99.0, "%s %.1f%% stopped\n%s", names[i], got, r.out);
	}
	run_result_free(&r);
	kill(fx, SIGCONT);
	cr_expect(wait_for(spin_again, &k, TEST_PATIENCE_MS), "SIGCONT does not resume it");
	cr_expect(jobstop_ask(in, out, 'r', text, sizeof(text)), "no report after SIGCONT");
	close(in);
	close(out);
	fx_stop(fx);
}
