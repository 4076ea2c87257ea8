/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record and signals: the target's queued signals pass through
 * exactly, job control stops and resumes it as without tracerd, and
 * tracerd's own signals stop it (INT), rotate (HUP) and snapshot (USR1). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt.h"
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
