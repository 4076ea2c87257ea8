/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cpu mode with ptrace capture (--capture ptrace, what runs where
 * perf_event_open is refused) against truths it does not compute: a
 * server's worker in bursts of work between blocking reads (fx_bursts)
 * keeps its own CPU clock (CLOCK_THREAD_CPUTIME_ID), and the kernel's
 * schedstat counts it too; its samples must add up to that CPU time and
 * sit in its request handler as much as perf's samples of the same
 * worker do (perf puts 88-100% there), idle and with the machine
 * loaded.  Where the capture cannot catch threads running (threads that
 * live less than a period, fx_churn), the recording must say what share
 * it sampled, at its end and in the report's header; where its sampler
 * may not run at SCHED_FIFO, the summary says so, not as a warning.
 * Tolerances are those of a busy two-core VM; the figures against perf
 * are in `make bench` (test/bench/bench_ptracecpu.sh). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/td.h"
#include "record.h"

#define HZ 99
#define SECONDS 5
#define MIN_PERIODS 60
/* the server: a request every 1000 us, each 150 us of its worker's CPU
 * time in handle_request (fx_bursts: 15% of a CPU, idle or not) */
#define FEED_WORK "1000,150"

static void fini(void)
{
	load_stop(); /* should an assertion end a loaded test early */
	record_teardown();
}

TestSuite(record_ptracecpu, .init = record_setup, .fini = fini, .timeout = 300);

/* fx_bursts' worker's own CPU clock, as of its last burst */
static uint64_t own_cpu(pid_t fx, int out)
{
	char text[4096], *p;
	unsigned long long ns = 0;

	kill(fx, SIGUSR2);
	cr_assert(fx_read_report(out, text, sizeof(text)));
	p = strstr(text, "C fx-burst cpu_ns ");
	cr_assert(p && sscanf(p, "C fx-burst cpu_ns %llu", &ns) == 1, "%s", text);
	return ns;
}

static uint64_t schedstat_run(pid_t pid, pid_t tid)
{
	char path[80];
	uint64_t run = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	f = fopen(path, "r");
	cr_assert(f, "%s", path);
	cr_assert_eq(fscanf(f, "%" SCNu64, &run), 1);
	fclose(f);
	return run;
}

/* The samples of thread name in a threads report of this test's repository. */
static unsigned long samples_of(const char *name)
{
	const char *argv[] = {"tracerd", "report", repo, "-f", "threads", NULL};
	struct run_result r;
	unsigned long n = 0;
	double pct;

	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 0, "%s", r.err);
	if (!thread_share(r.out, name, &n, &pct))
		n = 0;
	run_result_free(&r);
	return n;
}

/* May a thread of this process run at SCHED_FIFO (tried in a child)? */
static bool fifo_permitted(void)
{
	struct sched_param sp = { .sched_priority = 1 };
	int status;
	pid_t c = fork();

	cr_assert_geq(c, 0);
	if (!c)
		_exit(sched_setscheduler(0, SCHED_FIFO, &sp) == 0 ? 0 : 1);
	cr_assert_eq(waitpid(c, &status, 0), c);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct reading {
	double own, sched, sampled; /* periods: its clock, schedstat, its samples */
	double handler;		    /* % of its samples in handle_request */
	double said;		    /* the summary's coverage (%), -1: no such line */
	bool warned;		    /* the summary warned of it */
};

/* Record fx with capture ("--capture=ptrace" or "=perf") for SECONDS;
 * the worker's truths are read inside the recording, which ends a tick
 * or so after. */
static void record_worker(pid_t fx, int out, pid_t worker, const char *capture,
	struct reading *ret)
{
	double period = 1e9 / HZ;
	uint64_t c0, c1, s0, s1;
	char cmd[128];
	pid_t t;

	snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
	cr_assert_eq(system(cmd), 0);
	t = tracerd_start(fx, capture, "-F", "99");
	c0 = own_cpu(fx, out);
	s0 = schedstat_run(fx, worker);
	/* at least SECONDS, and until it used MIN_PERIODS of CPU time (a
	 * loaded machine gives it a few a second): a share of the samples
	 * needs enough of them */
	for (uint64_t end = td_now_ns() + SECONDS * 1000000000ULL, cap = end + 60000000000ULL;
		td_now_ns() < end ||
		(schedstat_run(fx, worker) - s0 < MIN_PERIODS * period && td_now_ns() < cap);)
		usleep(100000);
	c1 = own_cpu(fx, out);
	s1 = schedstat_run(fx, worker);
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	ret->own = (double)(c1 - c0) / period;
	ret->sched = (double)(s1 - s0) / period;
	ret->sampled = (double)samples_of("fx-burst");
	ret->handler = total_share(worker, "handle_request", NULL);
	/* the summary's triggers line says where the stops landed, and the
	 * sampler at SCHED_FIFO where this process may have it */
	if (!strcmp(capture, "--capture=ptrace") && fifo_permitted())
		cr_expect(strstr(slurp(errfile), "sampler SCHED_FIFO"), "%s", slurp(errfile));
	cr_log_info("%s: %.1f periods by its clock, %.1f by schedstat, %.0f samples, %.1f%% "
		    "in handle_request; %s",
		capture, ret->own, ret->sched, ret->sampled, ret->handler, slurp(errfile));
	ret->warned = strstr(slurp(errfile), "warning: the samples carry") != NULL;
	ret->said = -1;
	if (strstr(slurp(errfile), "  coverage ") &&
		sscanf(strstr(slurp(errfile), "  coverage "), "  coverage %lf%%", &ret->said) != 1)
		ret->said = -1;
	/* perf samples every period: nothing to warn of */
	if (strcmp(capture, "--capture=ptrace"))
		cr_expect(!strstr(slurp(errfile), "warning"), "%s", slurp(errfile));
}

/* The samples are the worker's CPU time within 20%, or the recording says
 * how much of it they carry.  The trigger is the kernel's: a timer on the
 * process's CPU clock, which the kernel checks at its ticks; on this
 * machine (6.18, HZ=250, tickless idle) it fired 6-11 times for 0.4 s of
 * fx_bursts' CPU where 160 were due (a bare timer_create and signalfd,
 * no tracerd: checked 2026-11-27), and in other runs at nearly every
 * quarter period.  Where it fires seldom, the summary's coverage says
 * so, and the figure is the truth's: the process's samples against its
 * CPU time (the worker's within 20 points: the feeder's is the rest). */
static void expect_counted(const char *what, const struct reading *r)
{
	double share = r->own > 0 ? 100.0 * r->sampled / r->own : 0;

	/* never more than it used: a little longer than the window, up to a
	 * few periods more on a loaded machine's late stop */
	cr_expect(r->sampled < 1.2 * r->own + 3 && r->sampled < 1.2 * r->sched + 3,
		"%s: %.0f samples, %.1f periods of its own CPU clock, %.1f of schedstat", what,
		r->sampled, r->own, r->sched);
	if (r->sampled > 0.8 * r->own && r->sampled > 0.8 * r->sched)
		return;
	cr_expect(r->warned, "%s: %.0f samples, %.1f periods of the worker's own CPU clock, and no "
			     "warning", what, r->sampled, r->own);
	cr_expect(r->said >= 0 && r->said < 80.0 && r->said > share - 20 && r->said < share + 20,
		"%s: coverage %.1f%% said, the worker's samples are %.1f%% of its CPU time", what,
		r->said, share);
}

/* Where the samples sit, against perf's of the same worker at the same
 * load: perf samples the running thread in the kernel, with no stop,
 * and puts 88-100% of them in handle_request (the rest at its read's
 * return, where the wake-up's CPU time goes).  A ptrace stop lands at
 * the thread's next kernel entry, a burst's next is its read: those
 * stops must not be samples (sampler-cpu.c).  Measured 2026-11-27:
 * ptrace 100% in 16 runs of 16, idle and loaded, perf 87-100%. */
static void expect_placed(const char *what, const struct reading *ptrace,
	const struct reading *perf)
{
	cr_expect(perf->handler > 0, "%s: perf sampled no handle_request", what);
	if (ptrace->sampled < 10) {
		/* too few for a share: expect_counted saw them said */
		cr_log_warn("%s: %.0f ptrace samples, placement not judged", what, ptrace->sampled);
		return;
	}
	cr_expect_geq(ptrace->handler, 90.0,
		"%s: %.1f%% of the samples in the handler (perf: %.1f%%)", what, ptrace->handler,
		perf->handler);
	cr_expect_geq(ptrace->handler, perf->handler - 10.0,
		"%s: %.1f%% of the samples in the handler, perf %.1f%%", what, ptrace->handler,
		perf->handler);
}

/* A worker in bursts of 150 us of its CPU time between blocking reads of
 * a pipe fed 1000 times a second (a server's worker): rarely running at
 * any tick of our own clock, yet its samples are its CPU time, and sit
 * where it runs. */
Test(record_ptracecpu, bursts_counted_and_placed_idle_and_loaded, .timeout = 300)
{
	struct reading idle, loaded, idle_perf, loaded_perf;
	int in, out;
	pid_t fx, worker;

	fx = spawn(FX("fx_bursts"), FEED_WORK, &in, &out);
	worker = task_by_name(fx, "fx-burst");
	cr_assert_gt(worker, 0);
	record_worker(fx, out, worker, "--capture=ptrace", &idle);
	record_worker(fx, out, worker, "--capture=perf", &idle_perf);
	load_start();
	record_worker(fx, out, worker, "--capture=ptrace", &loaded);
	record_worker(fx, out, worker, "--capture=perf", &loaded_perf);
	load_stop();
	close(in);
	close(out);
	fx_stop(fx);
	expect_counted("idle", &idle);
	expect_counted("loaded", &loaded);
	expect_placed("idle", &idle, &idle_perf);
	expect_placed("loaded", &loaded, &loaded_perf);
}

/* Threads that each live a few ms of CPU time, less than a period: the
 * capture stops none of them in time, and the recording says what share
 * of the CPU time it sampled, at its end and in the report's header. */
Test(record_ptracecpu, what_it_cannot_catch_is_told_with_its_coverage, .timeout = 120)
{
	const char *argv[] = {"tracerd", "report", repo, NULL};
	struct run_result r;
	unsigned long long taken = 0, missed = 0;
	double said = -1, header = -1;
	const char *p;
	int in, out;
	pid_t fx = spawn(FX("fx_churn"), "3000000", &in, &out), t;

	t = tracerd_start(fx, "--capture=ptrace", "-F", "99");
	sleep(3);
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	close(in);
	close(out);
	fx_stop(fx);
	p = strstr(slurp(errfile), "  samples ");
	cr_assert(p && sscanf(p, "  samples %llu", &taken) == 1, "%s", slurp(errfile));
	p = strstr(slurp(errfile), "  coverage ");
	cr_assert(p, "no coverage line: %s", slurp(errfile));
	cr_assert_eq(sscanf(p, "  coverage %lf%% of the CPU time used was sampled (%llu", &said,
			     &missed),
		2, "%s", p);
	cr_expect_gt(missed, 10, "%s", slurp(errfile));
	cr_expect(said > 100.0 * taken / (taken + missed) - 0.1 &&
			  said < 100.0 * taken / (taken + missed) + 0.1,
		"%.1f%% said, %llu taken, %llu missed", said, taken, missed);
	cr_expect_lt(said, 80.0);
	cr_expect(strstr(slurp(errfile), "warning: the samples carry"), "%s", slurp(errfile));
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 0, "%s", r.err);
	p = strstr(r.out, "\ncoverage: ");
	cr_expect(p && sscanf(p, "\ncoverage: %lf%%", &header) == 1, "%s", r.out);
	cr_expect_lt(header, 80.0, "%s", r.out);
	run_result_free(&r);
}

/* Where SCHED_FIFO is refused (no CAP_SYS_NICE, an RLIMIT_RTPRIO of 0),
 * the sampler stays at nice -10: the summary's triggers line says so and
 * why, no warning is given, and the worker is sampled as before. */
Test(record_ptracecpu, sampler_refused_sched_fifo_says_so_and_samples, .timeout = 120)
{
	char cmd[512];
	char *text;
	int in, out, status;
	pid_t fx;

	need_command("setpriv", "util-linux");
	need_command("prlimit", "util-linux");
	fx = spawn(FX("fx_bursts"), FEED_WORK, &in, &out);
	snprintf(cmd, sizeof(cmd),
		"prlimit --rtprio=0:0 setpriv --bounding-set -sys_nice --inh-caps -sys_nice "
		"%s record -q --capture=ptrace -F 99 -d 3s -r %s --pid %d 2>&1",
		TRACERD, repo, (int)fx);
	text = shell_output(cmd, &status);
	close(in);
	close(out);
	fx_stop(fx);
	cr_expect_eq(status, 0, "%s", text);
	cr_expect(strstr(text, "sampler SCHED_OTHER (SCHED_FIFO: Operation not permitted)"), "%s",
		text);
	/* the refusal itself is no warning; what the kernel's timer did not
	 * catch (expect_counted) is, and only with the coverage it measured */
	cr_expect(!strstr(text, "warning") || strstr(text, "warning: the samples carry"), "%s",
		text);
	cr_expect(samples_of("fx-burst") > 0 || strstr(text, "warning: the samples carry"), "%s",
		text);
	free(text);
}
