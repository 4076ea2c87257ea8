/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record and waiting threads (the fixtures count their own waits,
 * test/fixtures/fx_waits.h): no wait returns early or with EINTR under
 * either mode, an event loop's wall samples agree with its own clock, and
 * the waits recorded (their time and their owners) agree with the
 * program's. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../common/td.h"
#include "record.h"

TestSuite(record_waits, .init = record_setup, .fini = record_teardown, .timeout = 300);

/* ---- what waiting threads see: fx_parked and fx_evloop count their waits
 * (test/fixtures/fx_waits.h) and report them on SIGUSR2 */
struct wait_counts {
	unsigned long waits, eintr, early, timeouts, errors;
	unsigned long long wait_ns, busy_ns;
};

/* Ask fixture fx (its stdout is out) for its counts; text gets the whole
 * report.  false if it did not answer. */
static bool ask_counts(pid_t fx, int out, char *text, size_t len)
{
	kill(fx, SIGUSR2);
	return fx_read_report(out, text, len);
}

static bool counts_of(const char *text, const char *name, struct wait_counts *c)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "T %s ", name);
	p = strstr(text, key);
	return p && sscanf(p + strlen(key),
			    "waits %lu eintr %lu early %lu timeouts %lu errors %lu wait_ns %llu "
			    "busy_ns %llu",
			    &c->waits, &c->eintr, &c->early, &c->timeouts, &c->errors,
			    &c->wait_ns, &c->busy_ns) == 7;
}

/* Every counted wait of the report: no EINTR, no early return, no error. */
static void expect_untouched(const char *text, const char *what)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, "T ")); p += 2) {
		char name[32];
		struct wait_counts c;

		if (sscanf(p, "T %31s", name) != 1 || !counts_of(p, name, &c))
			continue;
		n++;
		cr_expect(c.eintr == 0 && c.early == 0 && c.errors == 0,
			"%s: %s saw %lu EINTR, %lu early returns, %lu errors in %lu waits", what,
			name, c.eintr, c.early, c.errors, c.waits);
	}
	cr_expect_gt(n, 0, "%s: no counts in\n%s", what, text);
}

/* Parked threads (read, poll, epoll_wait, sigtimedwait, clock_nanosleep,
 * a condition wait, and the reporter's sigwaitinfo) recorded in both
 * modes at 99 and 999 Hz: not one EINTR or early return.  Each recording
 * lasts 2 s: what is checked is what happens while recorded. */
Test(record_waits, parked_threads_see_no_eintr, .timeout = 240)
{
	static const char *const modes[] = { "--mode=cpu", "--mode=wall" };
	static const char *const rates[] = { "--frequency=99", "--frequency=999" };
	char text[4096];
	int in, out;
	pid_t fx = spawn(FX("fx_parked"), NULL, &in, &out), t;

	for (int m = 0; m < 2; m++)
		for (int h = 0; h < 2; h++) {
			char what[64];

			snprintf(what, sizeof(what), "%s %s", modes[m], rates[h]);
			t = tracerd_start(fx, modes[m], rates[h], "--duration=2s");
			/* the duration is the test: how long the waits are watched */
			cr_expect_eq(tracerd_wait(t), 0, "%s", slurp(errfile));
			cr_assert(ask_counts(fx, out, text, sizeof(text)), "%s: no report", what);
			expect_untouched(text, what);
		}
	/* wall mode saw each thread in its wait: the wall recordings hold
	 * every sample of the repository (cpu mode took none of them) */
	{
		static const char *const waits[][2] = { { "fx-read", "read_inner" },
			{ "fx-poll", "poll_inner" }, { "fx-epoll", "epoll_inner" },
			{ "fx-sigwait", "sigwait_inner" }, { "fx-sleep", "sleep_inner" },
			{ "fx-cond", "cond_inner" } };

		for (size_t i = 0; i < TD_ARRAY_SIZE(waits); i++) {
			pid_t tid = task_by_name(fx, waits[i][0]);
			double pct = tid > 0 ? total_share(tid, waits[i][1], NULL) : -1;

			cr_expect_geq(pct, 99.0, "%s: %.1f%% of its samples in %s", waits[i][0], pct,
				waits[i][1]);
		}
	}
	close(in);
	close(out);
	fx_stop(fx);
}

static bool samples_1500(const struct found *f)
{
	return f->samples >= 1500;
}

/* An event loop half busy on a 10 ms timerfd.  cpu mode: its CPU time is
 * in loop_busy, not in epoll_wait.  wall mode: epoll_wait's share of its
 * samples is the share of its time the loop spent in epoll_wait by its
 * own clock (less than half on a loaded machine, whose wake-ups come
 * late).  Neither mode makes epoll_wait return early or with EINTR. */
Test(record_waits, event_loop_agrees_with_its_own_clock, .timeout = 240)
{
	char text[4096];
	int in, out;
	pid_t fx = spawn(FX("fx_evloop"), NULL, &in, &out), t, loop;
	struct wait_counts c0, c1;
	double own, busy, waiting;

	loop = task_by_name(fx, "fx-loop");
	cr_assert_gt(loop, 0);
	t = tracerd_start(fx, "-F", "499", NULL);
	cr_expect(repo_until(samples_600));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	busy = total_share(loop, "loop_busy", NULL);
	waiting = total_share(loop, "epoll_wait", NULL);
	cr_expect_geq(busy, 90.0, "cpu mode: loop_busy has %.1f%% of the loop's CPU time", busy);
	cr_expect_leq(waiting, 3.0, "cpu mode: epoll_wait has %.1f%% of the loop's CPU time",
		waiting);
	cr_assert(ask_counts(fx, out, text, sizeof(text)));
	expect_untouched(text, "cpu mode");

	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
		cr_assert_eq(system(cmd), 0);
	}
	/* the loop's own clock over the recording: from its attach (the
	 * sampler starts at once) to its stop (it detaches before it exits) */
	t = tracerd_start(fx, "--mode=wall", "-F", "499");
	cr_assert(ask_counts(fx, out, text, sizeof(text)) && counts_of(text, "fx-loop", &c0));
	cr_expect(repo_until(samples_1500));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	cr_assert(ask_counts(fx, out, text, sizeof(text)) && counts_of(text, "fx-loop", &c1));
	expect_untouched(text, "wall mode");
	own = 100.0 * (double)(c1.wait_ns - c0.wait_ns) /
		(double)(c1.wait_ns - c0.wait_ns + c1.busy_ns - c0.busy_ns);
	waiting = total_share(loop, "epoll_wait", NULL);
	cr_expect(waiting > own - 5 && waiting < own + 5,
		"wall mode: epoll_wait has %.1f%% of the loop's samples, %.1f%% of its time by "
		"its own clock",
		waiting, own);
	cr_log_info("event loop, wall: epoll_wait %.1f%% sampled, %.1f%% by its clock", waiting,
		own);
	close(in);
	close(out);
	fx_stop(fx);
}

/* ---- waits against the program's own clock: fx_contend times each of its
 * waits (clock_gettime around the call) and, for owned objects, how much
 * of them each holder held the object */

/* The waits report's figures for waiter name: the sites of kind it waits
 * at alone, added up, and what they credit to each owner thread. */
struct site_sum {
	unsigned long long wait_ns;
	unsigned nowners;
	struct {
		char name[32];
		int tid;
		unsigned long long ns;
	} owners[1024];
};

static void site_sum_of(const char *json, const char *name, const char *kind,
	struct site_sum *ret)
{
	char k[48], only[64];

	memset(ret, 0, sizeof(*ret));
	snprintf(k, sizeof(k), "{\"kind\":\"%s\",", kind);
	snprintf(only, sizeof(only), "\"name\":\"%s\"}],\"owners\":[", name);
	for (const char *l = json; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *th, *end = strchr(l, '\n'), *o;
		unsigned long long ns;

		if (strncmp(l, k, strlen(k)) || !(th = strstr(l, "\"threads\":[{")) ||
			(end && th > end))
			continue;
		/* one thread, this one: its name closes the list */
		o = strstr(th, only);
		if (!o || (end && o > end) || memchr(th + 12, '{', (size_t)(o - th - 12)))
			continue;
		if (sscanf(strstr(l, "\"wait_ns\":"), "\"wait_ns\":%llu", &ns) != 1)
			continue;
		ret->wait_ns += ns;
		for (o += strlen(only); *o == '{' || *o == ','; ) {
			char owner[32];
			unsigned i;
			int tid;

			if (*o == ',')
				o++;
			if (sscanf(o, "{\"thread\":\"%31[^\"]\",\"tid\":%d,\"wait_ns\":%llu", owner,
				    &tid, &ns) != 3)
				break;
			for (i = 0; i < ret->nowners && ret->owners[i].tid != tid; i++)
				;
			if (i == ret->nowners && i < 1024) {
				snprintf(ret->owners[i].name, sizeof(ret->owners[i].name), "%s", owner);
				ret->owners[i].tid = tid;
				ret->nowners++;
			}
			if (i < 1024)
				ret->owners[i].ns += ns;
			o = strstr(o, "]}"); /* past the owner's stack */
			if (!o)
				break;
			o += 2;
		}
	}
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* A "T" line's runq_ns: of its wait, the time woken, waiting for a CPU. */
static unsigned long long runq_of(const char *text, const char *name)
{
	char key[64];
	const char *p;
	unsigned long long ns = 0;

	snprintf(key, sizeof(key), "T %s ", name);
	p = strstr(text, key);
	p = p ? strstr(p, " runq_ns ") : NULL;
	if (p)
		sscanf(p + 9, "%llu", &ns);
	return ns;
}

/* The fixture's own "O waiter holder ns" figure. */
static unsigned long long own_owned(const char *text, const char *waiter, const char *holder)
{
	char key[96];
	const char *p;
	unsigned long long ns = 0;

	snprintf(key, sizeof(key), "O %s %s ", waiter, holder);
	p = strstr(text, key);
	if (p)
		sscanf(p + strlen(key), "%llu", &ns);
	return ns;
}

Test(record_waits, waits_agree_with_the_programs_own_clock, .timeout = 120)
{
	static const struct {
		const char *waiter, *kind, *holders[2];
	} site[] = {
		{ "ac-mutex", "mutex", { "ac-mhold-busy", "ac-mhold-sleep" } },
		{ "ac-pi", "mutex", { "ac-pihold" } },
		{ "ac-reader", "rwlock", { "ac-writer1", "ac-writer2" } },
		{ "ac-cond", "condvar", { NULL } },
		{ "ac-sem", "semaphore", { NULL } },
		{ "ac-join", "join", { "ac-child" } },
		{ "ac-pipe", "fd", { NULL } },
		{ "ac-sleep", "sleep", { NULL } },
	};
	static char a[4096], b[4096];
	const char *rep[] = { "tracerd", "report", repo, "--format", "waits", "--json", NULL };
	const char *thr[] = { "tracerd", "report", repo, "--format", "threads", NULL };
	struct run_result r, threads;
	long long window, tick = 0;
	int in, out, children = 0;
	pid_t fx = spawn(FX("fx_contend"), NULL, &in, &out), t;

	/* The program counts over [A, B]; tracerd records from its start to
	 * its stop, around it, by a margin that a loaded machine stretches.
	 * The program is steady, so its figures are scaled from [A, B] to the
	 * time tracerd saw each thread (its samples times the tick).  A wait
	 * is the time blocked: the end of a call that a thread spends woken,
	 * waiting for a CPU, is runnable time to tracerd (and to the kernel,
	 * whose run delay the program reads around each call). */
	t = tracerd_start(fx, "--mode=wall", NULL, NULL);
	cr_assert(repo_until(has_samples), "recording");
	cr_assert(ask_counts(fx, out, a, sizeof(a)), "the fixture did not answer");
	/* the window measured: a few hundred waits each */
	for (long long end = mono_ms() + 4000; mono_ms() < end;)
		usleep(100000);
	cr_assert(ask_counts(fx, out, b, sizeof(b)), "the fixture did not answer");
	cr_assert_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	cr_assert(strstr(a, "\nN ") && strstr(b, "\nN "));
	window = strtoll(strstr(b, "\nN ") + 3, NULL, 10) - strtoll(strstr(a, "\nN ") + 3, NULL, 10);
	run_tracerd(&r, thr);
	cr_assert_eq(r.status, 0, "%s", r.err);
	threads = r;
	run_tracerd(&r, rep);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "\"tick_ns\":") &&
		sscanf(strstr(r.out, "\"tick_ns\":"), "\"tick_ns\":%lld", &tick) == 1 && tick > 0);
	/* the joined threads: named ac-child, or too short-lived to be */
	cr_assert(strstr(b, "\nC ") && sscanf(strstr(b, "\nC ") + 3, "%d", &children) == 1);
	for (size_t i = 0; i < TD_ARRAY_SIZE(site); i++) {
		struct wait_counts c0, c1;
		static struct site_sum s;
		unsigned long long raw, runq, own, truth = 0, held = 0;
		unsigned long seen = 0;
		double right = 0, pct;

		cr_assert(counts_of(a, site[i].waiter, &c0) && counts_of(b, site[i].waiter, &c1));
		cr_assert(thread_share(threads.out, site[i].waiter, &seen, &pct), "%s", threads.out);
		runq = runq_of(b, site[i].waiter) - runq_of(a, site[i].waiter);
		raw = c1.wait_ns - c0.wait_ns;
		own = (unsigned long long)((double)(raw - runq) * (double)seen * (double)tick /
					   (double)window);
		site_sum_of(r.out, site[i].waiter, site[i].kind, &s);
		cr_log_info("%s %s: tracerd %.3f s, the program %.3f s blocked (%+.1f%%), %.1f%% of "
			    "its clock's waits woken, waiting for a CPU",
			site[i].waiter, site[i].kind, (double)s.wait_ns / 1e9, (double)own / 1e9,
			own ? 100.0 * ((double)s.wait_ns - (double)own) / (double)own : 0.0,
			raw ? 100.0 * (double)runq / (double)raw : 0.0);
		cr_expect(fabs((double)s.wait_ns - (double)own) <= 0.25 * (double)own,
			"%s: tracerd says %.3f s of %s waits, the program %.3f s blocked (%.3f s "
			"timed, %.3f s of it waiting for a CPU, in %.3f s, scaled to the %.3f s "
			"tracerd saw the thread)",
			site[i].waiter, (double)s.wait_ns / 1e9, site[i].kind, (double)own / 1e9,
			(double)raw / 1e9, (double)runq / 1e9, (double)window / 1e9,
			(double)seen * (double)tick / 1e9);
		if (!site[i].holders[0])
			continue;
		/* the share of the wait each holder held the object, by the
		 * program's log and by tracerd: the overlap of the two */
		for (int h = 0; h < 2 && site[i].holders[h]; h++)
			truth += own_owned(b, site[i].waiter, site[i].holders[h]) -
				 own_owned(a, site[i].waiter, site[i].holders[h]);
		for (int h = 0; h < 2 && site[i].holders[h]; h++) {
			unsigned long long tr = 0, tn = own_owned(b, site[i].waiter, site[i].holders[h]) -
							own_owned(a, site[i].waiter, site[i].holders[h]);

			for (unsigned o = 0; o < s.nowners; o++)
				if (!strcmp(s.owners[o].name, site[i].holders[h]) ||
					(!strcmp(site[i].holders[h], "ac-child") && children &&
						s.owners[o].tid >= children))
					tr += s.owners[o].ns;
			held += tr;
			if (s.wait_ns && raw)
				right += fmin((double)tr / (double)s.wait_ns, (double)tn / (double)raw);
		}
		cr_log_info("%s: the right owner for %.0f%% of the wait", site[i].waiter, 100 * right);
		cr_expect(right >= 0.8,
			"%s: the right owner named for %.0f%% of the wait (tracerd: %.3f s of %.3f s "
			"credited to %s%s%s; the program: %.3f s held of %.3f s)",
			site[i].waiter, 100 * right, (double)held / 1e9, (double)s.wait_ns / 1e9,
			site[i].holders[0], site[i].holders[1] ? ", " : "",
			site[i].holders[1] ? site[i].holders[1] : "", (double)truth / 1e9,
			(double)raw / 1e9);
	}
	run_result_free(&r);
	run_result_free(&threads);
	close(in);
	close(out);
	fx_stop(fx);
}
