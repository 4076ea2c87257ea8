/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Wall mode against truths it does not compute: a thread's own clock
 * (fx_evloop times its epoll_wait and its work, fx_bursts its read and its
 * bursts of work), the thread's life in the recording, and the kernel's
 * schedstat split of that life into on-CPU, waiting for a CPU and
 * sleeping; on an idle machine and on one loaded with three busy loops
 * per core.  Tolerances here are the ones a busy two-core VM keeps; the
 * tight figures are in `make bench` (test/bench/bench_modes.sh). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/td.h"
#include "record.h"

#define HZ 99
#define SECONDS 6

static void fini(void)
{
	load_stop(); /* should an assertion end a loaded test early */
	record_teardown();
}

TestSuite(record_offcpu, .init = record_setup, .fini = fini, .timeout = 300);

/* A fixture's counts (fx_waits.h) for its thread name: ns in its wait and
 * busy after it */
static bool own_clock(pid_t fx, int out, const char *name, uint64_t *ret_wait, uint64_t *ret_busy)
{
	char text[4096], key[32], *p;
	unsigned long long w, b;

	kill(fx, SIGUSR2);
	if (!fx_read_report(out, text, sizeof(text)))
		return false;
	snprintf(key, sizeof(key), "T %s ", name);
	p = strstr(text, key);
	if (!p || !(p = strstr(p, " wait_ns ")) || sscanf(p, " wait_ns %llu busy_ns %llu", &w, &b) != 2)
		return false;
	*ret_wait = w;
	*ret_busy = b;
	return true;
}

/* schedstat of a thread: on-CPU ns, waiting-for-a-CPU ns */
struct sched {
	uint64_t run, wait, at;
	uint64_t steal[64]; /* per CPU, in USER_HZ ticks (/proc/stat) */
};

/* Each CPU's steal so far: time the hypervisor ran something else while a
 * thread of ours was on that CPU, which schedstat leaves out of the
 * thread's run time (rq_clock_task) and wall-clock time does not. */
static void steal_of(uint64_t *ret)
{
	char line[512];
	FILE *f = fopen("/proc/stat", "r");
	unsigned cpu;
	uint64_t v[8];

	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line,
			    "cpu%u %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
			    " %" SCNu64 " %" SCNu64 " %" SCNu64,
			    &cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 9 &&
			cpu < 64)
			ret[cpu] = v[7];
	fclose(f);
}

static struct sched sched_of(pid_t pid, pid_t tid)
{
	char path[80];
	struct sched s = { 0 };
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	f = fopen(path, "r");
	cr_assert(f, "%s", path);
	cr_assert_eq(fscanf(f, "%" SCNu64 " %" SCNu64, &s.run, &s.wait), 2);
	fclose(f);
	s.at = (uint64_t)td_now_ns();
	steal_of(s.steal);
	return s;
}

/* The samples of tid in state (NULL: all) in the repository. */
static double samples_of(pid_t tid, const char *state)
{
	char t[32];
	const char *argv[] = { "tracerd", "report", repo, "-f", "threads", "--tid", t,
		state ? "--state" : NULL, state, NULL };
	struct run_result r;
	unsigned long n = 0;
	double pct;
	const char *line;

	snprintf(t, sizeof(t), "%d", (int)tid);
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 0, "%s", r.err);
	/* "     tid      pid  name  samples  share ..." */
	snprintf(t, sizeof(t), "%8d ", (int)tid);
	line = strstr(r.out, t);
	if (line && sscanf(line, "%*d %*d %*s %lu %lf", &n, &pct) != 2)
		n = 0;
	run_result_free(&r);
	return (double)n;
}

/* What one wall recording of a thread read, next to its truths. */
struct reading {
	const char *fn;			/* the function it waits in */
	double own, sampled;		/* fn %: its clock, the profile */
	double lived_s, weight_s;	/* its time in the recording, its samples' */
	double truth[3], got[3];	/* on-cpu, runnable, sleeping %: schedstat, profile */
	double steal;			/* % of the time stolen from the CPU that lost most */
};

/* Record fx in wall mode for SECONDS; what thread name (tid loop) read,
 * its wait in fn. */
static void record_thread(pid_t fx, int out, const char *name, pid_t loop, const char *fn,
	struct reading *ret)
{
	static const char *const states[3] = { "on-cpu", "runnable", "sleeping" };
	uint64_t w0, b0, w1, b1;
	struct sched s0, s1;
	double all, lived;
	char cmd[128];
	pid_t t;

	snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
	cr_assert_eq(system(cmd), 0);
	t = tracerd_start(fx, "--mode=wall", "-F", "99");
	s0 = sched_of(fx, loop);
	cr_assert(own_clock(fx, out, name, &w0, &b0));
	/* the time recorded is the measurement: its truths are read
	 * inside it, the recording ends a tick or so after */
	sleep(SECONDS);
	cr_assert(own_clock(fx, out, name, &w1, &b1));
	s1 = sched_of(fx, loop);
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	lived = (double)(s1.at - s0.at) / 1e9;
	all = samples_of(loop, NULL);
	ret->own = 100.0 * (double)(w1 - w0) / (double)(w1 - w0 + b1 - b0);
	ret->fn = fn;
	ret->sampled = TD_MAX(total_share(loop, fn, NULL), 0); /* none: 0 */
	ret->lived_s = lived;
	ret->weight_s = all / HZ;
	ret->truth[0] = 100.0 * (double)(s1.run - s0.run) / 1e9 / lived;
	ret->truth[1] = 100.0 * (double)(s1.wait - s0.wait) / 1e9 / lived;
	ret->truth[2] = 100.0 - ret->truth[0] - ret->truth[1];
	for (int i = 0; i < 3; i++)
		ret->got[i] = all > 0 ? 100.0 * samples_of(loop, states[i]) / all : 0;
	ret->steal = 0;
	for (int i = 0; i < 64; i++) {
		double stolen = (double)(s1.steal[i] - s0.steal[i]) / (double)sysconf(_SC_CLK_TCK);

		ret->steal = TD_MAX(ret->steal, 100.0 * stolen / lived);
	}
}

static void log_reading(const char *what, const struct reading *r)
{
	cr_log_info("%s: %s %.1f%% sampled, %.1f%% by its clock; weight %.2f s of %.2f s "
		    "lived; on-cpu/runnable/sleeping %.1f/%.1f/%.1f%%, schedstat %.1f/%.1f/%.1f%% "
		    "(steal %.1f%%)",
		what, r->fn, r->sampled, r->own, r->weight_s, r->lived_s, r->got[0], r->got[1],
		r->got[2], r->truth[0], r->truth[1], r->truth[2], r->steal);
}

/* What a reading must hold.  tol: points of the wait's share against the
 * thread's clock; the weight is the thread's life within 5%, each state
 * within 6 points of schedstat's, on-cpu and sleeping within 6 and the
 * steal of the window (schedstat's sleeping is what its run and wait
 * leave: a virtual CPU's stolen time moves there from the run time). */
static void expect_true(const char *what, const struct reading *r, double tol)
{
	static const char *const names[3] = { "on-cpu", "runnable", "sleeping" };

	log_reading(what, r);
	cr_expect(r->sampled > r->own - tol && r->sampled < r->own + tol,
		"%s: %s has %.1f%% of the thread's samples, %.1f%% of its time by its own clock",
		what, r->fn, r->sampled, r->own);
	cr_expect(r->weight_s > 0.95 * r->lived_s && r->weight_s < 1.05 * r->lived_s,
		"%s: the thread's samples stand for %.2f s, it lived %.2f s in the recording", what,
		r->weight_s, r->lived_s);
	for (int i = 0; i < 3; i++)
		cr_expect(r->got[i] > r->truth[i] - 6 - (i != 1 ? r->steal : 0) &&
				  r->got[i] < r->truth[i] + 6 + (i != 1 ? r->steal : 0),
			"%s: %s %.1f%% of the thread's samples, %.1f%% of its time by schedstat",
			what, names[i], r->got[i], r->truth[i]);
}

/* An event loop on a 2 ms timer with 1 ms of work per event (the issue's
 * server), idle and then with three busy loops per core: epoll_wait's
 * share is the loop's own (it counts the time woken but waiting for a
 * CPU in its wait, as a user's clock does), its samples add up to its
 * life, and the states to schedstat's split of it. */
Test(record_offcpu, event_loop_against_its_clock_idle_and_loaded, .timeout = 240)
{
	struct reading idle, loaded;
	int in, out;
	pid_t fx = spawn(FX("fx_evloop"), "2000", &in, &out), loop;

	loop = task_by_name(fx, "fx-loop");
	cr_assert_gt(loop, 0);
	record_thread(fx, out, "fx-loop", loop, "epoll_wait", &idle);
	load_start();
	record_thread(fx, out, "fx-loop", loop, "epoll_wait", &loaded);
	load_stop();
	close(in);
	close(out);
	fx_stop(fx);
	expect_true("idle", &idle, 8);
	expect_true("loaded", &loaded, 12);
}

/* A worker in bursts of 50 us of CPU time between blocking reads of a
 * pipe that another thread feeds 4000 times a second (a server's worker:
 * thousands of switches a second, each stretch on a CPU a small part of a
 * sampling period), idle and loaded: its samples add up to its life, its
 * on-CPU share and its waits are schedstat's, and the share of its read
 * is its own clock's. */
Test(record_offcpu, short_bursts_weigh_their_life_idle_and_loaded, .timeout = 240)
{
	struct reading idle, loaded;
	int in, out;
	pid_t fx = spawn(FX("fx_bursts"), "250", &in, &out), worker;

	worker = task_by_name(fx, "fx-burst");
	cr_assert_gt(worker, 0);
	record_thread(fx, out, "fx-burst", worker, "burst_wait", &idle);
	load_start();
	record_thread(fx, out, "fx-burst", worker, "burst_wait", &loaded);
	load_stop();
	close(in);
	close(out);
	fx_stop(fx);
	expect_true("idle", &idle, 8);
	expect_true("loaded", &loaded, 12);
}
