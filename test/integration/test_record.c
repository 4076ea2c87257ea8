/* The recording daemon against fixtures: the recorded CPU split, thread
 * churn, signals and job control passing through untouched, exec, crash
 * capture, kill -9, targets that exit, signals to tracerd, and errors. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "../helpers.h"

#define FX(name) TD_FIXTURE_DIR "/" name
#define TRACERD TD_BUILD_DIR "/tracerd"

static char repo[64], errfile[96];

static void setup(void)
{
	snprintf(repo, sizeof(repo), "/tmp/tracerd-rec-XXXXXX");
	cr_assert_not_null(mkdtemp(repo));
	rmdir(repo);
	snprintf(errfile, sizeof(errfile), "%s.err", repo);
}

static void teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", repo, errfile);
	if (system(cmd) != 0)
		cr_log_warn("cleanup failed");
}

TestSuite(record, .init = setup, .fini = teardown, .timeout = 300);

/* The process tracing pid (TracerPid is the tracer's thread), 0 if none. */
static pid_t tracer_of(pid_t pid)
{
	struct td_task_info i;

	if (td_task_info_read(pid, pid, &i) < 0)
		return -1;
	return i.tracer ? td_tgid_of(i.tracer) : 0;
}

static char *slurp(const char *path)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return buf;
}

/* The recording in repo as pprof, as go tool pprof -raw prints it (its
 * names alone: no binary is looked for); free it. */
static char *pprof_raw(void)
{
	char cmd[768];

	snprintf(cmd, sizeof(cmd),
		"%s report %s -f pprof -o %s.pb.gz && HOME=/tmp PPROF_BINARY_PATH=/nonexistent "
		"go tool pprof -symbolize=none -raw %s.pb.gz 2>&1; rm -f %s.pb.gz",
		TRACERD, repo, repo, repo, repo);
	return shell_output(cmd, NULL);
}

/* tracerd record in the background; stderr to errfile. Waits until it
 * traces pid. */
static pid_t tracerd_start(pid_t pid, const char *a1, const char *a2, const char *a3)
{
	char p[32];
	pid_t t;

	snprintf(p, sizeof(p), "%d", (int)pid);
	t = fork();
	if (t == 0) {
		int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 2);
		dup2(fd, 1);
		/* as some shells and service managers leave it: tracerd must
		 * still hear of its tracees' stops at once */
		signal(SIGCHLD, SIG_IGN);
		tracerd_test_env();
		execl(TRACERD, TRACERD, "--pid", p, "-r", repo, "-q", a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < TEST_PATIENCE_MS / 10 && tracer_of(pid) != t; i++)
		usleep(10000);
	cr_assert_eq(tracer_of(pid), t, "tracerd did not attach: %s", slurp(errfile));
	return t;
}

static int tracerd_wait(pid_t t)
{
	int st;

	cr_assert_eq(waitpid(t, &st, 0), t);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Ctrl-C: tracerd stops recording, detaches and exits. */
static int tracerd_stop(pid_t t)
{
	kill(t, SIGINT);
	return tracerd_wait(t);
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

/* ---- what a repository holds */
struct found {
	uint64_t samples, thread_start, thread_exit, exec, exits, crashes;
	uint64_t leaf_a, leaf_b, before, after, after_with_exec_seen, plugin, main_spin;
	uint64_t reach_main, cut, renames;
	uint64_t whole_after, cut_after; /* after the first stack that reached main */
	uint64_t started_twice; /* THREAD_START events for a tid already started */
	uint64_t unwound; /* stacks with a frame of the program, not a note of none */
	uint64_t since_exec; /* samples after an exec event */
	char renamed_to[32];
	bool exec_seen;
	int crash_signo;
	char crash_chain[1024];
	unsigned chunks, finished, end_target_exit;
};

/* The innermost frame of the stack that is one of the fixture's own
 * functions (libc or the vDSO may be below it). */
static const char *own_frame(struct chunk_reader *r, uint32_t stack, char *buf, size_t len)
{
	static const char *const own[] = { "split_a", "split_b", "before_exec", "after_exec",
		"plugin_spin", "main_spin" };
	uint32_t locs[128];
	unsigned n = chunk_reader_stack(r, stack, locs, 128);

	buf[0] = '\0';
	for (unsigned i = 0; i < n && i < 128; i++) {
		struct chunk_location l;
		struct chunk_function fn;

		if (!chunk_reader_location(r, locs[i], &l))
			continue;
		/* every line: the location's inline chain, innermost first */
		for (unsigned j = 0; j < l.nlines; j++) {
			if (!chunk_reader_function(r, l.lines[j].function_id, &fn))
				continue;
			for (unsigned k = 0; k < 6; k++)
				if (!strcmp(fn.name, own[k])) {
					snprintf(buf, len, "%s", fn.name);
					return buf;
				}
		}
	}
	return buf;
}

static int f_sample(void *arg, struct chunk_reader *r, const struct chunk_sample *s)
{
	struct found *f = arg;
	char leaf[256];

	f->samples++;
	f->since_exec += f->exec_seen;
	own_frame(r, s->stack_id, leaf, sizeof(leaf));
	f->leaf_a += !strcmp(leaf, "split_a");
	f->leaf_b += !strcmp(leaf, "split_b");
	f->before += !strcmp(leaf, "before_exec");
	f->after += !strcmp(leaf, "after_exec");
	f->after_with_exec_seen += f->exec_seen && !strcmp(leaf, "after_exec");
	f->plugin += !strcmp(leaf, "plugin_spin");
	f->main_spin += !strcmp(leaf, "main_spin");
	{
		/* does the stack reach main, or was it cut? */
		uint32_t locs[2048];
		unsigned n = chunk_reader_stack(r, s->stack_id, locs, 2048);
		bool main_seen = false, cut = false, placed = false;

		for (unsigned i = 0; i < n && i < 2048; i++) {
			struct chunk_location l;
			struct chunk_function fn;

			if (!chunk_reader_location(r, locs[i], &l) || !l.nlines ||
				!chunk_reader_function(r, l.lines[l.nlines - 1].function_id, &fn))
				continue;
			main_seen |= !strcmp(fn.name, "main");
			cut |= !strncmp(fn.name, "[stack cut", 10);
			placed |= strncmp(fn.name, "[not unwound", 12) != 0;
		}
		f->unwound += placed;
		if (f->reach_main) {
			f->whole_after += main_seen;
			f->cut_after += cut;
		}
		f->reach_main += main_seen;
		f->cut += cut;
	}
	return 0;
}

/* tids whose THREAD_START scan_repo has seen (pid_max is at most 2^22) */
static uint8_t started[(1u << 22) / 8];

static int f_event(void *arg, struct chunk_reader *r, const struct chunk_event *e)
{
	struct found *f = arg;

	if (e->type == CHUNK_EV_THREAD) {
		struct chunk_thread t;

		if (e->kind == TCF_THREAD_START && chunk_reader_thread(r, e->thread_id, &t) &&
			t.tid < (1u << 22)) {
			if (started[t.tid / 8] & (1u << (t.tid % 8)))
				f->started_twice++;
			started[t.tid / 8] |= (uint8_t)(1u << (t.tid % 8));
		}
		f->thread_start += e->kind == TCF_THREAD_START;
		f->thread_exit += e->kind == TCF_THREAD_EXIT;
		if (e->kind == TCF_THREAD_RENAME) {
			const char *n = chunk_reader_string(r, (uint32_t)e->arg);

			f->renames++;
			snprintf(f->renamed_to, sizeof(f->renamed_to), "%s", n ? n : "");
		}
	} else if (e->type == CHUNK_EV_PROCESS) {
		if (e->kind == TCF_PROC_EXEC) {
			f->exec++;
			f->exec_seen = true;
		}
		f->exits += e->kind == TCF_PROC_EXIT;
		if (e->kind == TCF_PROC_CRASH) {
			uint32_t locs[64];
			unsigned n = chunk_reader_stack(r, e->stack_id, locs, 64);
			size_t l = 0;

			f->crashes++;
			f->crash_signo = e->signo;
			for (unsigned i = 0; i < n && i < 64; i++) {
				struct chunk_location loc;
				struct chunk_function fn;

				if (chunk_reader_location(r, locs[i], &loc) && loc.nlines &&
					chunk_reader_function(r, loc.lines[0].function_id, &fn))
					l += (size_t)snprintf(f->crash_chain + l,
						sizeof(f->crash_chain) - l, "%s%s", l ? " " : "",
						fn.name);
			}
		}
	} else if (e->type == CHUNK_EV_END) {
		f->end_target_exit += e->kind == TCF_END_TARGET_EXIT;
	}
	return 0;
}

static int f_end(void *arg, struct chunk_reader *r, bool finished)
{
	struct found *f = arg;

	(void)r;
	f->chunks++;
	f->finished += finished;
	return 0;
}

/* What the repository holds now (also while tracerd writes it: readers
 * take every prefix of whole blocks). */
static struct found scan_repo_now(int *ret_files)
{
	static const struct chunk_visitor v = { NULL, f_sample, f_event, f_end };
	struct found f = { 0 };
	struct tcf_dir_entry e[64];
	int n = tcf_dir_scan(repo, e, 64);

	memset(started, 0, sizeof(started));
	for (int i = 0; i < n && i < 64; i++) {
		char p[256];
		struct chunk_report rep;

		snprintf(p, sizeof(p), "%s/%.64s", repo, e[i].name);
		chunk_read_file(p, &v, &f, &rep);
	}
	*ret_files = n;
	return f;
}

static struct found scan_repo(void)
{
	int n;
	struct found f = scan_repo_now(&n);

	cr_assert_gt(n, 0, "no chunks in %s", repo);
	return f;
}

struct repo_wait {
	bool (*cond)(const struct found *f);
	struct found f;
};

static bool repo_holds(void *arg)
{
	struct repo_wait *w = arg;
	int n;

	w->f = scan_repo_now(&n);
	return n > 0 && w->cond(&w->f);
}

/* Wait until what tracerd has written so far satisfies cond (it publishes
 * its blocks about once a second): the recording lasts as long as the
 * test needs, not a guessed duration.  The writer thread runs at nice 10:
 * on a saturated machine (and under ASan) it may take a while, hence a
 * longer bound than TEST_PATIENCE_MS. */
#define REPO_PATIENCE_MS 120000

static bool repo_until(bool (*cond)(const struct found *f))
{
	struct repo_wait w = { cond, { 0 } };

	if (wait_for(repo_holds, &w, REPO_PATIENCE_MS))
		return true;
	cr_log_error("gave up waiting for the repository; it holds %llu samples",
		(unsigned long long)w.f.samples);
	return false;
}

static bool has_samples(const struct found *f)
{
	return f->samples > 0;
}

static int verify_status(void)
{
	const char *argv[] = { "tracerd", "verify", repo, NULL };
	struct run_result r;
	int s;

	run_tracerd(&r, argv);
	s = r.status;
	run_result_free(&r);
	return s;
}

static bool split_enough(const struct found *f)
{
	return f->leaf_a + f->leaf_b >= 2000;
}

Test(record, cpu_split_70_30)
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

/* fork + exec a fixture with pipes for stdin and stdout; waits for its
 * "ready".  *ret_in, *ret_out: the parent's ends. */
static pid_t spawn(const char *path, const char *arg1, int *ret_in, int *ret_out)
{
	int in[2], out[2];
	char buf[8];
	size_t got = 0;
	pid_t fx;

	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	fx = fork();
	if (fx == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(devnull, 2);
		execl(path, path, arg1, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	while (got < 6) {
		ssize_t n = read(out[0], buf + got, 6 - got);

		cr_assert_gt(n, 0, "%s did not start", path);
		got += (size_t)n;
	}
	cr_assert(!memcmp(buf, "ready\n", 6));
	*ret_in = in[1];
	*ret_out = out[0];
	return fx;
}

static bool churned(const struct found *f)
{
	return f->thread_start > 200 && f->thread_exit > 200;
}

Test(record, thread_churn)
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
Test(record, each_thread_counted_once)
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
Test(record, signals_pass_through_exactly, .timeout = 180)
{
	const char *out;
	int h;

	out = run_signals(false, 3000, 0, &h);
	cr_expect(strstr(out, "rt 3000 received 3000 misordered 0\n"), "alone: %s", out);
	out = run_signals(true, 3000, 50, &h);
	cr_expect(strstr(out, "rt 3000 received 3000 misordered 0\n"), "under tracerd: %s", out);
	cr_expect_eq(h, 50, "each SIGUSR1 handled exactly once");
}

static bool stop_taken(void *arg)
{
	pid_t fx = *(pid_t *)arg;
	char s = task_state(fx, fx);

	/* SIGSTOP dequeued and the thread in its stop (a traced group-stop
	 * shows 't'): from here it runs no code of its own until SIGCONT */
	return !task_signal_pending(fx, fx, SIGSTOP) && (s == 't' || s == 'T');
}

struct running {
	pid_t fx;
	uint64_t counter, runtime;
};

static bool runs_again(void *arg)
{
	const struct running *r = arg;
	uint64_t c = fx_counter(r->fx);

	return c != UINT64_MAX && c > r->counter && task_runtime(r->fx, r->fx) > r->runtime &&
	       task_state(r->fx, r->fx) == 'R';
}

Test(record, job_control_stop_and_cont)
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

static bool before_enough(const struct found *f)
{
	return f->before > 50;
}

static bool after_enough(const struct found *f)
{
	return f->after_with_exec_seen > 50;
}

Test(record, exec_symbolized_against_the_new_image)
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

Test(record, crash_captured_before_the_process_dies)
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
Test(record, crash_function_starts_in_pprof)
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

static bool samples_600(const struct found *f)
{
	return f->samples >= 600;
}

static bool samples_2000(const struct found *f)
{
	return f->samples >= 2000;
}

static bool samples_5000(const struct found *f)
{
	return f->samples >= 5000;
}

/* tracerd report -f FORMAT of the repository, into r (which the caller
 * frees). */
static void report_of(struct run_result *r, const char *format)
{
	const char *argv[] = { "tracerd", "report", repo, "-f", format, "--limit", "0", NULL };

	run_tracerd(r, argv);
	cr_assert_eq(r->status, 0, "%s", r->err);
}

/* The samples and share of thread name in a threads report; false if
 * it is not listed. */
static bool thread_share(const char *out, const char *name, unsigned long *ret_n, double *ret_pct)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), " %s ", name);
	p = strstr(out, key);
	return p && sscanf(p + strlen(key), "%lu %lf%%", ret_n, ret_pct) == 2;
}

/* The two modes against what fx_threads does: of its eleven threads one
 * spins and ten block (in pthread_join, a condition variable, a futex,
 * nanosleep, epoll, read, poll, select, recv, accept).  cpu mode: every
 * sample is the spinner's, on CPU.  wall mode: every thread at every tick,
 * so each has an eleventh of the samples, and ten elevenths are blocked.
 * Both say so at the head of the report. */
Test(record, modes_mean_what_they_say)
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

Test(record, an_overloaded_sampler_degrades_evenly)
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
	size_t got = 0;

	kill(fx, SIGUSR2);
	text[0] = '\0';
	while (!strstr(text, "end\n")) {
		struct pollfd pfd = { out, POLLIN, 0 };
		ssize_t n;

		if (poll(&pfd, 1, TEST_PATIENCE_MS) <= 0 || got + 1 >= len)
			return false;
		n = read(out, text + got, len - 1 - got);
		if (n <= 0)
			return false;
		got += (size_t)n;
		text[got] = '\0';
	}
	return true;
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

/* The share (self% or total%, column 0 or 1) of the first top row whose
 * function is fn, in a report of tid alone; -1 if none. */
static double share_of(pid_t tid, const char *fn, int column)
{
	char t[32], key[96];
	const char *argv[] = { "tracerd", "report", repo, "--tid", t, "--limit", "0", NULL };
	struct run_result r;
	double v[2] = { -1, -1 };
	const char *p;

	snprintf(t, sizeof(t), "%d", (int)tid);
	snprintf(key, sizeof(key), "  %s (", fn);
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 0, "%s", r.err);
	p = strstr(r.out, key);
	if (p) {
		while (p > r.out && p[-1] != '\n')
			p--;
		sscanf(p, "%lf%% %lf%%", &v[0], &v[1]);
	}
	run_result_free(&r);
	return v[column];
}

/* Parked threads (read, poll, epoll_wait, sigtimedwait, clock_nanosleep,
 * a condition wait, and the reporter's sigwaitinfo) recorded in both
 * modes at 99 and 999 Hz: not one EINTR or early return.  Each recording
 * lasts 2 s: what is checked is what happens while recorded. */
Test(record, parked_threads_see_no_eintr, .timeout = 240)
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
			double pct = tid > 0 ? share_of(tid, waits[i][1], 1) : -1;

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
Test(record, event_loop_agrees_with_its_own_clock, .timeout = 240)
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
	busy = share_of(loop, "loop_busy", 1);
	waiting = share_of(loop, "epoll_wait", 1);
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
	waiting = share_of(loop, "epoll_wait", 1);
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

/* A Go program's stacks end at their entry: goroutines at runtime.goexit,
 * the scheduler on each thread's g0 stack at runtime.mcall or
 * runtime.mstart (the runtime marks none of them in its CFI, and what lies
 * above mcall on g0 is not its caller).  Skipped without a Go toolchain. */
/* record -- CMD: the command starts under the recorder (its exec is in the
 * recording), tracerd waits for it and exits with its status.  Its samples
 * are as many as its CPU time by its own count (times) says, each with its
 * stack: a process that exits before the writer read its mappings is held
 * at its exit until it has (the shell's second image lives ~50 ms, less
 * than the writer's lag, and gets a sample in all but ~1% of runs). */
Test(record, runs_a_command_from_its_start_and_exits_with_its_status, .timeout = 180)
{
	char work7[512], cmd[256], times[128];
	const char *run7[] = { "tracerd", "record", "-q", "-r", repo, "--", "sh", "-c", work7,
		NULL };
	const char *term[] = { "tracerd", "record", "-q", "-r", repo, "--", "sh", "-c",
		"kill -TERM $$", NULL };
	const char *longer[] = { "tracerd", "record", "-q", "-r", repo, "-d", "1s", "--", "sh",
		"-c", "sleep 3; exit 5", NULL };
	const char *missing[] = { "tracerd", "record", "-q", "-r", repo, "--",
		"/nonexistent/tracerd-test-cmd", NULL };
	const char *both[] = { "tracerd", "record", "-q", "-r", repo, "--pid", "1", "--", "true",
		NULL };
	struct run_result r;
	struct found f;
	double cpu, expect;

	snprintf(times, sizeof(times), "%s.times", repo);
	snprintf(work7, sizeof(work7),
		"i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; "
		"exec sh -c 'i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done; "
		"times > %s; exit 7'",
		times);
	run_tracerd(&r, run7);
	cr_expect_eq(r.status, 7, "%s", r.err);
	run_result_free(&r);
	f = scan_repo();
	cr_expect_gt(f.exec, 0, "the command's exec is not in the recording");
	/* times: the shell's user and system time (an exec keeps them) */
	{
		unsigned um, sm;
		double u, sy;

		cr_assert_eq(sscanf(slurp(times), "%um%lfs %um%lfs", &um, &u, &sm, &sy), 4, "%s",
			slurp(times));
		cpu = um * 60 + u + sm * 60 + sy;
	}
	expect = cpu * 99;
	cr_expect(f.samples >= expect / 2 && f.samples <= expect * 2 + 2,
		"%llu samples for %.2f s of CPU at 99 Hz", (unsigned long long)f.samples, cpu);
	cr_expect_eq(f.unwound, f.samples, "%llu of %llu samples without a stack",
		(unsigned long long)(f.samples - f.unwound), (unsigned long long)f.samples);
	if (!f.since_exec) /* ~1% of runs; a warning would make Criterion exit 1 */
		cr_log_info("no sample of the second image: its stacks were not put to the test");
	cr_expect_eq(verify_status(), 0);
	unlink(times);

	/* ended by a signal: 128 + its number, as a shell says */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
	cr_assert_eq(system(cmd), 0);
	run_tracerd(&r, term);
	cr_expect_eq(r.status, 128 + SIGTERM, "%s", r.err);
	run_result_free(&r);

	/* the recording ends first: the command goes on, and its status
	 * is still tracerd's */
	cr_assert_eq(system(cmd), 0);
	run_tracerd(&r, longer);
	cr_expect_eq(r.status, 5, "%s", r.err);
	run_result_free(&r);

	/* nothing to run: said, 127, and no repository made */
	cr_assert_eq(system(cmd), 0);
	run_tracerd(&r, missing);
	cr_expect_eq(r.status, 127);
	cr_expect(strstr(r.err, "cannot run '/nonexistent/tracerd-test-cmd'"), "%s", r.err);
	cr_expect_neq(access(repo, F_OK), 0, "a repository was made for a command not run");
	run_result_free(&r);

	run_tracerd(&r, both);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "not both"), "%s", r.err);
	run_result_free(&r);
}

/* Record fixture path at 199 Hz until 600 samples, stop it, and give its
 * folded stacks in *r. */
static void folded_of(const char *path, struct run_result *r)
{
	const char *folded[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	pid_t fx = fx_start(path, NULL), t;

	cr_assert_gt(fx, 0, "%s", path);
	t = tracerd_start(fx, "-F", "199", NULL);
	cr_expect(repo_until(samples_600));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	run_tracerd(r, folded);
	cr_assert_eq(r->status, 0, "%s", r->err);
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
Test(record, cpu_share_of_a_signal_handler_is_its_own_clocks, .timeout = 180)
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

/* An LTO build (fx_lto): work_a and work_b are inlined into main across
 * compilation units, as gdb shows them; the two static churns (symbols
 * churn.constprop.0 and .1) are named churn, without the clone suffix,
 * and stay apart, each qualified with its file, with work_a's three times
 * work_b's samples. */
Test(record, lto_inline_chains_and_same_named_functions, .timeout = 120)
{
	const char *top[] = { "tracerd", "report", repo, NULL };
	unsigned long long via_a = 0, via_b = 0, other = 0;
	struct run_result r;
	const char *row_a, *row_b;

	folded_of(FX("fx_lto"), &r);
	for (const char *line = r.out; *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *sp = memrchr(line, ' ', (size_t)(end - line));
		unsigned long long n = sp ? strtoull(sp + 1, NULL, 10) : 0;
		size_t len = (size_t)(end - line);

		if (memmem(line, len, ";main;work_a;churn ", 19))
			via_a += n;
		else if (memmem(line, len, ";main;work_b;churn ", 19))
			via_b += n;
		else
			other += n;
		cr_expect(!memmem(line, len, "constprop", 9), "%.*s", (int)len, line);
		line = nl ? nl + 1 : end;
	}
	cr_expect_gt(via_a + via_b, 400, "main;work_a;churn %llu, main;work_b;churn %llu, else %llu:\n%.800s",
		via_a, via_b, other, r.out);
	cr_expect(via_a * 100 > (via_a + via_b) * 66 && via_a * 100 < (via_a + via_b) * 84,
		"work_a's churn %llu of %llu samples, want three quarters", via_a, via_a + via_b);
	run_result_free(&r);

	run_tracerd(&r, top);
	cr_assert_eq(r.status, 0, "%s", r.err);
	row_a = strstr(r.out, "churn at ");
	row_b = row_a ? strstr(row_a + 1, "churn at ") : NULL;
	cr_expect(row_a && row_b, "two churn rows, each with its file:\n%s", r.out);
	cr_expect(strstr(r.out, "fx_lto_a.c (fx_lto)") && strstr(r.out, "fx_lto_b.c (fx_lto)"),
		"%s", r.out);
	run_result_free(&r);
}

/* The function addr2line finds at addr in the ELF file path ("" if none). */
static void addr2line_fn(const char *path, unsigned long addr, char *fn, size_t len)
{
	char cmd[512], *out;

	snprintf(cmd, sizeof(cmd), "addr2line -f -e %s %#lx", path, addr);
	out = shell_output(cmd, NULL);
	snprintf(fn, len, "%.*s", (int)strcspn(out, "\n"), out);
	free(out);
}

/* The pprof of fx_hot's recording (in repo), as go tool pprof reads it:
 * every Location carries the pc's address in its ELF file, so that a
 * binary given later names it: addr2line on the unstripped library finds
 * hot_a and hot_b at the addresses of the frames tracerd could only place
 * (want_a, want_b), and main's in fx_hot.  The stripped library's Mapping
 * does not claim functions (pprof then symbolizes it again); fx_hot's
 * does. */
static void pprof_keeps_real_addresses(const char *want_a, const char *want_b)
{
	char fn[128], name[128], *raw;
	const char *at;
	unsigned seen_a = 0, seen_b = 0, seen_main = 0;

	raw = pprof_raw();
	at = strstr(raw, "\nLocations\n");
	cr_assert(at, "%s", raw);
	for (const char *line = at + 11; *line && strncmp(line, "Mappings", 8);) {
		unsigned long addr;
		unsigned id, mapping;

		if (sscanf(line, "%u: %lx M=%u %127s", &id, &addr, &mapping, name) == 4) {
			if (!strcmp(name, want_a) || !strcmp(name, want_b)) {
				addr2line_fn(FX("libfx_hot_full.so"), addr, fn, sizeof(fn));
				cr_expect_str_eq(fn, !strcmp(name, want_a) ? "hot_a" : "hot_b",
					"%s at %#lx", name, addr);
				*(!strcmp(name, want_a) ? &seen_a : &seen_b) += 1;
			} else if (!strcmp(name, "main")) {
				addr2line_fn(FX("fx_hot"), addr, fn, sizeof(fn));
				cr_expect_str_eq(fn, "main", "main at %#lx", addr);
				seen_main++;
			}
		}
		line = strchrnul(line, '\n');
		line += *line == '\n';
	}
	cr_expect(seen_a && seen_b && seen_main, "Locations of %s, %s and main:\n%s", want_a,
		want_b, raw);
	at = strstr(raw, "/libfx_hot.so ");
	cr_expect(at && !memmem(at, strcspn(at, "\n"), "[FN]", 4),
		"libfx_hot.so's Mapping claims functions:\n%s", raw);
	at = strstr(raw, "/fx_hot ");
	cr_expect(at && memmem(at, strcspn(at, "\n"), "[FN]", 4),
		"fx_hot's Mapping should claim functions:\n%s", raw);
	free(raw);
}

/* The names a stripped libfx_hot.so's hot_a and hot_b get: where they
 * start, which the unstripped copy's symbols say. */
static void hot_names(char want_a[static 64], char want_b[static 64])
{
	unsigned long a_at = nm_addr(FX("libfx_hot_full.so"), "hot_a"),
		      b_at = nm_addr(FX("libfx_hot_full.so"), "hot_b");

	cr_assert(a_at && b_at && a_at != b_at, "no hot_a, hot_b in libfx_hot_full.so");
	snprintf(want_a, 64, "libfx_hot.so+%#lx", a_at);
	snprintf(want_b, 64, "libfx_hot.so+%#lx", b_at);
}

/* A stripped library's static functions have no name anywhere: each is
 * placed by where it starts (its FDE in .eh_frame), named MODULE+0xSTART,
 * and keeps its own samples: hot_a has two thirds of them. */
Test(record, stripped_functions_placed_by_their_start, .timeout = 120)
{
	char want_a[64], want_b[64];
	unsigned long long a = 0, b = 0, other = 0;
	struct run_result r;

	hot_names(want_a, want_b);
	folded_of(FX("fx_hot"), &r);
	for (const char *line = r.out; *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *sp = memrchr(line, ' ', (size_t)(end - line));
		const char *leaf = sp ? memrchr(line, ';', (size_t)(sp - line)) : NULL;
		unsigned long long n = sp ? strtoull(sp + 1, NULL, 10) : 0;

		leaf = leaf ? leaf + 1 : line;
		if (sp && (size_t)(sp - leaf) == strlen(want_a) && !memcmp(leaf, want_a, strlen(want_a)))
			a += n;
		else if (sp && (size_t)(sp - leaf) == strlen(want_b) &&
			 !memcmp(leaf, want_b, strlen(want_b)))
			b += n;
		else
			other += n;
		cr_expect(!memmem(line, (size_t)(end - line), "[unknown]", 9), "%.*s",
			(int)(end - line), line);
		line = nl ? nl + 1 : end;
	}
	cr_assert_gt(a + b, 400, "hot_a %llu, hot_b %llu, elsewhere %llu samples: %.600s", a, b,
		other, r.out);
	cr_expect(a * 100 > (a + b) * 58 && a * 100 < (a + b) * 75,
		"hot_a %llu of %llu samples, want two thirds", a, a + b);
	run_result_free(&r);
}

/* The same recording in pprof: see pprof_keeps_real_addresses. */
Test(record, stripped_functions_keep_their_addresses_in_pprof, .timeout = 120)
{
	char want_a[64], want_b[64];
	struct run_result r;

	need_command("go", "golang-go");
	hot_names(want_a, want_b);
	folded_of(FX("fx_hot"), &r);
	run_result_free(&r);
	pprof_keeps_real_addresses(want_a, want_b);
}

/* A folded Go stack (len bytes at line) starts at its root: where a Go
 * thread's stack begins.  Known exception: a vDSO call made from
 * runtime.nanotime1 or walltime runs on the g0 stack and its Go caller is
 * on another stack (Go's own traceback finds it through m.vdsoSP, which
 * is not read).  A stack inside Go's signal handler goes on through the
 * kernel's signal frame (runtime.sigreturn, the restorer, returned to by
 * runtime.sigtramp or running) into the interrupted function, named; past it, the
 * interrupted code's stack is another one than the handler's, which the
 * sample did not copy: such a stack is cut there, and says so.  Counts
 * the stacks inside the handler into *ret_handler.  The interrupted pc
 * may be in inlined code: then its frame is a chain of names, each after
 * the first shown inlined in tree (`report -f tree`'s text; NULL: one name
 * only). */
static bool shown_inlined(const char *tree, const char *fn, size_t n)
{
	for (const char *at = tree; tree && (at = strstr(at, " [inlined]\n")); at++)
		if ((size_t)(at - tree) > n && !memcmp(at - n, fn, n) && *(at - n - 1) == ' ')
			return true;
	return false;
}

static void go_stack_checked(const char *line, size_t len, const char *mode,
	unsigned *ret_handler, const char *tree)
{
	static const char *const roots[] = { "runtime.goexit", "runtime.mstart", "runtime.clone",
		"runtime.rt0_go", "runtime.mcall", "runtime.morestack", "_start",
		"runtime.nanotime1", "runtime.walltime", "runtime.gogo",
		/* it switches to the g0 stack too: its caller is on the other */
		"runtime.systemstack",
		/* wall mode: time waiting for a CPU whose place no stack saw:
		 * no stack at all, not a cut one */
		"[runnable: preempted where no sample saw it]" };
	static const char cut[] = "[stack cut: interrupted stack not copied];";
	/* the restorer: returned to by runtime.sigtramp, or the sample's pc */
	static const char tramp[] = ";runtime.sigreturn";
	const char *in = memmem(line, len, tramp, strlen(tramp));
	bool ok = false;

	if (in && in + strlen(tramp) < line + len && in[strlen(tramp)] != ';' &&
		in[strlen(tramp)] != ' ')
		in = NULL; /* a longer name */

	if (in && ret_handler)
		(*ret_handler)++;
	if (in && !strncmp(line, cut, strlen(cut))) {
		/* cut [;...]: the interrupted function, whole (with the calls
		 * inlined into it at the pc), then the restorer */
		const char *fn = line + strlen(cut), *end = in > fn ? in : fn;

		for (bool first = true;; first = false) {
			const char *semi = memchr(fn, ';', (size_t)(end - fn));
			size_t n = (size_t)((semi ? semi : end) - fn);

			cr_expect(n && !memmem(fn, n, "+0x", 3) && !memmem(fn, n, "[unknown]", 9) &&
					!memmem(fn, n, "??", 2) &&
					(first || shown_inlined(tree, fn, n)),
				"%s mode: the interrupted function is not named%s: %.*s", mode,
				first ? "" : " or is more than one frame", (int)len, line);
			if (!semi)
				break;
			fn = semi + 1;
		}
		return;
	}
	for (size_t k = 0; k < TD_ARRAY_SIZE(roots); k++)
		ok |= !strncmp(line, roots[k], strlen(roots[k]));
	cr_expect(ok && !memmem(line, len, "[stack cut", 10),
		"%s mode: a Go stack did not reach its entry: %.*s", mode, (int)len, line);
}

/* Inside Go's signal handler (fx_go's signals: a goroutine sends itself
 * SIGUSR1 without pause): the stacks go through runtime.sigtramp and the
 * kernel's signal frame into the interrupted function.  Before, libdw
 * stopped at the restorer, which has no CFI. */
Test(record, go_signal_handlers_unwound_into_the_interrupted_code, .timeout = 300)
{
	char bin[128];
	pid_t fx, t;
	struct run_result r;
	unsigned handler = 0;
	const char *argv[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	const char *tree_argv[] = { "tracerd", "report", repo, "-f", "tree", "--min-percent", "0",
		NULL };
	struct run_result tr;

	snprintf(bin, sizeof(bin), "%s.go-fixture", repo);
	go_fixture_build(bin);
	fx = fx_start(bin, "signals");
	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, "-F", "999", NULL);
	cr_expect(repo_until(samples_5000));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);
	unlink(bin);
	run_tracerd(&r, argv);
	cr_assert_eq(r.status, 0, "%s", r.err);
	run_tracerd(&tr, tree_argv);
	cr_assert_eq(tr.status, 0, "%s", tr.err);
	for (const char *line = r.out; *line;) {
		const char *nl = strchrnul(line, '\n'), *sp = memrchr(line, ' ', (size_t)(nl - line));
		unsigned before = handler;

		go_stack_checked(line, (size_t)(sp ? sp - line : nl - line), "cpu", &handler,
			tr.out);
		if (handler > before && sp)
			handler += (unsigned)strtoul(sp + 1, NULL, 10) - 1;
		line = *nl ? nl + 1 : nl;
	}
	cr_expect_geq(handler, 10, "%u samples in the signal handler:\n%.2000s", handler, r.out);
	run_result_free(&r);
	run_result_free(&tr);
}

Test(record, go_stacks_reach_their_entry, .timeout = 300)
{
	char bin[128], cmd[512];
	pid_t fx, t;
	struct run_result r;
	const char *argv[] = { "tracerd", "report", repo, "-f", "folded", NULL };
	const char *tree_argv[] = { "tracerd", "report", repo, "-f", "tree", "--min-percent", "0",
		NULL };
	struct run_result tr;

	snprintf(bin, sizeof(bin), "%s.go-fixture", repo);
	go_fixture_build(bin);
	fx = fx_start(bin, NULL);
	cr_assert_gt(fx, 0);
	for (int m = 0; m < 2; m++) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", repo);
		cr_assert_eq(system(cmd), 0);
		t = tracerd_start(fx, m ? "--mode=wall" : "--mode=cpu", NULL, NULL);
		cr_expect(repo_until(samples_600));
		cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
		run_tracerd(&r, argv);
		cr_expect_eq(r.status, 0, "%s", r.err);
		run_tracerd(&tr, tree_argv);
		cr_expect_eq(tr.status, 0, "%s", tr.err);
		cr_expect(strstr(r.out, "runtime.goexit"), "%.400s", r.out);
		for (const char *line = r.out; *line;) {
			const char *nl = strchrnul(line, '\n');

			go_stack_checked(line, (size_t)(nl - line), m ? "wall" : "cpu", NULL, tr.out);
			line = *nl ? nl + 1 : nl;
		}
		run_result_free(&r);
		run_result_free(&tr);
	}
	/* Go's DWARF has no .debug_aranges: its CUs are found by their own
	 * ranges, so frames have file:line (the last recording's, and a
	 * dump's), and inlined calls show */
	{
		char pidbuf[16];
		const char *dump[] = { "tracerd", "dump", "--pid", pidbuf, NULL };
		const char *lines[] = { "tracerd", "report", repo, "--by", "line", NULL };
		const char *tree[] = { "tracerd", "report", repo, "-f", "tree", "--min-percent", "0",
			NULL };

		run_tracerd(&r, lines);
		cr_expect_eq(r.status, 0, "%s", r.err);
		cr_expect(strstr(r.out, "main.work at ") && strstr(r.out, "fx_go/main.go:"),
			"no file:line for the fixture's own code:\n%.1500s", r.out);
		cr_expect(!strstr(r.out, ".abi0"), "an ABI0 wrapper's suffix:\n%.1500s", r.out);
		run_result_free(&r);
		run_tracerd(&r, tree);
		cr_expect_eq(r.status, 0, "%s", r.err);
		cr_expect(strstr(r.out, " [inlined]"), "no inlined Go call:\n%.1500s", r.out);
		run_result_free(&r);
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)fx);
		run_tracerd(&r, dump);
		cr_expect_eq(r.status, 0, "%s", r.err);
		cr_expect(strstr(r.out, "/runtime/proc.go:"), "no file:line in a Go stack:\n%.1500s",
			r.out);
		run_result_free(&r);
	}
	fx_stop(fx);
	unlink(bin);
}

Test(record, kill_9_leaves_the_target_running)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL), t;
	struct running r0 = { .fx = fx };
	int v;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_expect(repo_until(has_samples), "recording");
	kill(t, SIGKILL);
	tracerd_wait(t);
	r0.counter = fx_counter(fx);
	r0.runtime = task_runtime(fx, fx);
	cr_assert_neq(r0.counter, UINT64_MAX, "cannot read the fixture's progress counter");
	cr_expect(wait_for(runs_again, &r0, TEST_PATIENCE_MS), "the target keeps running");
	cr_expect_eq(tracer_of(fx), 0, "the kernel detached it");
	v = verify_status();
	cr_expect(v == 0 || v == 1, "verify exits 0 or 1, not %d", v);
	fx_stop(fx);
}

/* kill -9 keeps what was published, so publishing comes early: the first
 * sample of a chunk is a block of its own, on disk as soon as it is
 * written (before the fix the first block came a second later, with every
 * sample of that second in it).  Read from the blocks themselves: each
 * prefix of whole blocks of the first chunk is read on its own.  How
 * many samples kill -9 loses at 0.5 s and 3 s is make bench's figure. */
static bool samples_20(const struct found *f)
{
	return f->samples >= 20;
}

Test(record, first_samples_are_published_at_once)
{
	pid_t fx = fx_start(FX("fx_threads"), NULL), t;
	struct tcf_dir_entry e[64];
	uint64_t first = 0;
	size_t off = TCF_HEADER_LEN, len = 0;
	char path[256];
	uint8_t *buf;
	int n, fd;
	struct stat st;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, "--mode=wall", NULL, NULL);
	cr_assert(repo_until(samples_20), "recording");
	kill(t, SIGKILL);
	tracerd_wait(t);
	n = tcf_dir_scan(repo, e, 64);
	cr_assert_gt(n, 0);
	snprintf(path, sizeof(path), "%s/%.63s", repo, e[0].name); /* sorted: seq 0 first */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	/* the prefixes ending after each whole block: the first with samples */
	while (off + TCF_BLOCK_HEADER_LEN <= (size_t)st.st_size && !first) {
		uint32_t plen = (uint32_t)buf[off + 8] | (uint32_t)buf[off + 9] << 8 |
				(uint32_t)buf[off + 10] << 16 | (uint32_t)buf[off + 11] << 24;
		struct chunk_report rep;

		off += TCF_BLOCK_HEADER_LEN + plen;
		if (off > (size_t)st.st_size)
			break;
		chunk_read_buffer(buf, off, NULL, NULL, &rep);
		first = rep.samples;
		len = off;
	}
	cr_expect_eq(first, 1, "the first block with samples (%zu bytes into %s) holds %llu",
		len, e[0].name, (unsigned long long)first);
	free(buf);
	fx_stop(fx);
}

Test(record, target_exits_mid_recording)
{
	pid_t fx, t;
	int in, out;
	struct found f;
	char b[64];

	fx = spawn(FX("fx_churn"), NULL, &in, &out);
	/* the duration only bounds a hang: the target's exit must end it */
	t = tracerd_start(fx, "--duration=10m", NULL, NULL);
	cr_expect(repo_until(has_samples), "recording");
	close(in); /* the fixture finishes */
	while (read(out, b, sizeof(b)) > 0)
		;
	close(out);
	waitpid(fx, NULL, 0);
	cr_expect_eq(tracerd_wait(t), 0, "%s", slurp(errfile));
	f = scan_repo();
	cr_expect_eq(f.exits, 1, "the exit is recorded");
	cr_expect_eq(f.end_target_exit, 1);
	cr_expect_eq(verify_status(), 0);
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

Test(record, sigint_hup_usr1)
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

/* How many times needle occurs in hay. */
static int occurrences(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *q = hay; (q = strstr(q, needle)); q += strlen(needle))
		n++;
	return n;
}

/* Wait until errfile tells of the n-th snapshot, written or failed. */
static bool wait_notices(int n)
{
	for (int i = 0; i < 1000; i++) {
		const char *e = slurp(errfile);

		if (occurrences(e, "tracerd: snapshot ") >= n) /* written or failed */
			return true;
		usleep(10000);
	}
	return false;
}

/* The repository cannot be redirected: -r LINK/ (the trailing slash made
 * lstat follow the link), a link on the way, another user's directory. */
Test(record, repository_cannot_be_redirected)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL);
	char p[32], link[128], elsewhere[128], cmd[512];
	const char *argv[] = { "tracerd", "--pid", p, "-r", link, "-d", "1s", "-q", NULL };
	struct run_result r;
	char *ls;

	cr_assert_gt(fx, 0);
	snprintf(p, sizeof(p), "%d", (int)fx);
	snprintf(elsewhere, sizeof(elsewhere), "%s.elsewhere", repo);
	cr_assert_eq(mkdir(elsewhere, 0750), 0);
	cr_assert_eq(mkdir(repo, 0750), 0);
	snprintf(cmd, sizeof(cmd), "%s/to", repo);
	cr_assert_eq(symlink(elsewhere, cmd), 0);
	for (int k = 0; k < 3; k++) {
		snprintf(link, sizeof(link), k == 0 ? "%s/to" : k == 1 ? "%s/to/" : "%s/to/sub", repo);
		run_tracerd(&r, argv);
		cr_expect_eq(r.status, 1, "%s: %s", link, r.err);
		cr_expect(strstr(r.err, "a symbolic link is on its path"), "%s", r.err);
		run_result_free(&r);
	}
	snprintf(cmd, sizeof(cmd), "ls -A %s", elsewhere);
	ls = shell_output(cmd, NULL);
	cr_expect_str_eq(ls, "", "nothing was written through the link: %s", ls);
	free(ls);
	if (geteuid() == 0) {
		snprintf(link, sizeof(link), "%s/theirs", repo);
		cr_assert_eq(mkdir(link, 0750), 0);
		cr_assert_eq(chown(link, 65534, 65534), 0);
		run_tracerd(&r, argv);
		cr_expect_eq(r.status, 1, "%s", r.err);
		cr_expect(strstr(r.err, "belongs to another user"), "%s", r.err);
		run_result_free(&r);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", elsewhere);
	cr_expect_eq(system(cmd), 0);
	fx_stop(fx);
}

/* SIGUSR1 writes into REPO/snapshots/ relative to the repository, never
 * through a link there, and never over an earlier snapshot: names have a
 * one-second stamp, so snapshots taken in the same second get -1, -2. */
Test(record, usr1_snapshots_are_never_redirected_or_overwritten)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL), t;
	char snaps[128], elsewhere[128], cmd[512];
	struct stat st;
	char *ls;
	int files = 0;

	cr_assert_gt(fx, 0);
	snprintf(elsewhere, sizeof(elsewhere), "%s.elsewhere", repo);
	cr_assert_eq(mkdir(elsewhere, 0750), 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	snprintf(snaps, sizeof(snaps), "%s/snapshots", repo);
	cr_assert_eq(symlink(elsewhere, snaps), 0);
	kill(t, SIGUSR1);
	cr_assert(wait_notices(1), "%s", slurp(errfile));
	cr_expect(strstr(slurp(errfile), "failed: a symbolic link is on the path"), "%s",
		slurp(errfile));
	snprintf(cmd, sizeof(cmd), "ls -A %s", elsewhere);
	ls = shell_output(cmd, NULL);
	cr_expect_str_eq(ls, "", "nothing was written through the link: %s", ls);
	free(ls);
	cr_assert_eq(unlink(snaps), 0);
	/* three, each after the previous one is done: within a second or two */
	for (int i = 0; i < 3; i++) {
		kill(t, SIGUSR1);
		cr_assert(wait_notices(2 + i), "%s", slurp(errfile));
	}
	kill(t, SIGINT);
	cr_expect_eq(tracerd_wait(t), 0, "%s", slurp(errfile));
	cr_expect_eq(occurrences(slurp(errfile), "snapshot written: "), 3, "%s", slurp(errfile));
	{
		DIR *d = opendir(snaps);
		struct dirent *de;

		cr_assert_not_null(d);
		while ((de = readdir(d))) {
			char p[512];

			if (de->d_name[0] == '.')
				continue;
			files++;
			snprintf(p, sizeof(p), "%s/%s", snaps, de->d_name);
			cr_expect_eq(stat(p, &st), 0);
			cr_expect_eq(st.st_mode & 07777, 0640, "%s: %o", p, st.st_mode & 07777);
			cr_expect(!strncmp(de->d_name, "snapshot-", 9), "%s", de->d_name);
		}
		closedir(d);
	}
	cr_expect_eq(files, 3, "three snapshots, three files");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", elsewhere);
	cr_expect_eq(system(cmd), 0);
	fx_stop(fx);
}

/* A start that fails before recording leaves no repository behind when
 * it made it, and leaves one that was there as it was. */
Test(record, failed_start_leaves_no_repository)
{
	const char *nopid[] = { "tracerd", "--pid", "4194304", "-r", repo, NULL };
	char keep[128];
	struct run_result r;
	struct stat st;
	FILE *f;

	run_tracerd(&r, nopid);
	cr_expect_eq(r.status, 2, "%s", r.err);
	run_result_free(&r);
	cr_expect_neq(stat(repo, &st), 0, "%s was made for nothing and is gone", repo);

	cr_assert_eq(mkdir(repo, 0750), 0);
	snprintf(keep, sizeof(keep), "%s/notes", repo);
	f = fopen(keep, "w");
	cr_assert_not_null(f);
	fclose(f);
	run_tracerd(&r, nopid);
	cr_expect_eq(r.status, 2, "%s", r.err);
	run_result_free(&r);
	cr_expect_eq(stat(keep, &st), 0, "a repository that was there stays");
}

Test(record, errors)
{
	const char *nopid[] = { "tracerd", "--pid", "4194304", "-r", repo, NULL };
	const char *bad[] = { "tracerd", "record", "--pid", "1", "-F", "0", NULL };
	const char *sizes[] = { "tracerd", "--pid", "1", "--max-size", "1M", NULL };
	struct run_result r;

	run_tracerd(&r, nopid);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "no process with PID"), "%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, bad);
	cr_expect_eq(r.status, 1);
	run_result_free(&r);
	run_tracerd(&r, sizes);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "--max-size must be at least twice"), "%s", r.err);
	run_result_free(&r);
	{
		pid_t fx = fx_start(FX("fx_chain"), NULL);
		char p[32];
		/* the second PID is a kernel thread, which nobody may trace */
		const char *kthread[] = { "tracerd", "--pid", p, "--pid", "2", "-r", repo, NULL };
		struct td_task_info info;
		struct stat st;

		cr_assert_gt(fx, 0);
		snprintf(p, sizeof(p), "%d", (int)fx);
		run_tracerd(&r, kthread);
		cr_expect_eq(r.status, 2, "%s", r.err);
		cr_expect(strstr(r.err, "cannot attach to 2") && strstr(r.err, "kernel thread"), "%s",
			r.err);
		run_result_free(&r);
		cr_expect_neq(stat(repo, &st), 0, "a repository made for nothing goes again");
		cr_expect(td_task_info_read(fx, fx, &info) == 0 && info.tracer == 0 &&
				  info.state != 't',
			"the first attach is undone: running, not traced");
		fx_stop(fx);
	}
}

/* -F is a frequency, not a size; a PID given twice is said so. */
Test(record, option_messages)
{
	const char *kilo[] = { "tracerd", "--pid", "4194304", "-F", "1K", NULL };
	const char *zero[] = { "tracerd", "--pid", "4194304", "-F", "0", NULL };
	const char *big[] = { "tracerd", "--pid", "4194304", "-F", "10001", NULL };
	const char *plus[] = { "tracerd", "--pid", "4194304", "-F", "+99", NULL };
	const char *twice[] = { "tracerd", "-p", "4242", "--pid", "77", "-p", "4242", "-r", repo,
		NULL };
	const char *const *bad[] = { kilo, zero, big, plus };
	struct run_result r;
	struct stat st;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[96];

		snprintf(want, sizeof(want),
			"tracerd: -F: '%s' is not a frequency from 1 to 10000 Hz\n", bad[i][4]);
		run_tracerd(&r, bad[i]);
		cr_expect_eq(r.status, 1);
		cr_expect_str_eq(r.err, want);
		run_result_free(&r);
	}
	run_tracerd(&r, twice);
	cr_expect_eq(r.status, 1);
	cr_expect_str_eq(r.err, "tracerd: --pid 4242 given twice\n");
	run_result_free(&r);
	cr_expect_neq(stat(repo, &st), 0, "nothing was made");
}

/* Why an attach is not permitted, when tracerd is already root: a kernel
 * thread cannot be traced; without CAP_SYS_PTRACE root is not enough;
 * with it, the kernel's refusal comes from a security policy. */
Test(record, attach_refusals_say_the_real_cause)
{
	const char *kthread[] = { "tracerd", "--pid", "2", "-r", repo, NULL };
	char cmd[512], exe[64], *out;
	struct run_result r;

	run_tracerd(&r, kthread);
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "cannot attach to 2: it is a kernel thread (kthreadd); kernel "
				"threads cannot be traced"),
		"%s", r.err);
	cr_expect_not(strstr(r.err, "run as root"), "%s", r.err);
	run_result_free(&r);
	if (geteuid() != 0)
		cr_skip_test("the rest is about what stops root");
	need_command("setpriv", "util-linux");
	snprintf(cmd, sizeof(cmd),
		"setpriv --bounding-set -sys_ptrace --inh-caps -sys_ptrace %s --pid 1 -r %s 2>&1",
		TRACERD, repo);
	out = shell_output(cmd, NULL);
	if (strstr(out, "setpriv:")) {
		cr_log_warn("setpriv cannot drop CAP_SYS_PTRACE here: %s", out);
	} else {
		cr_expect(strstr(out, "cannot attach to 1: Operation not permitted; tracerd runs "
				      "as root but without CAP_SYS_PTRACE"),
			"%s", out);
	}
	free(out);
	/* root with CAP_SYS_PTRACE: only where the kernel refuses even to
	 * show PID 1's executable (a policy protects it) */
	if (readlink("/proc/1/exe", exe, sizeof(exe)) >= 0 || errno != EACCES)
		cr_skip_test("PID 1 can be traced here: not attaching to init in a test");
	snprintf(cmd, sizeof(cmd), "%s --pid 1 -r %s 2>&1", TRACERD, repo);
	out = shell_output(cmd, NULL);
	cr_expect(strstr(out, "although tracerd runs as root with CAP_SYS_PTRACE"), "%s", out);
	cr_expect_not(strstr(out, "run as root"), "%s", out);
	free(out);
}

Test(record, second_writer_refused)
{
	pid_t fx = fx_start(FX("fx_chain"), NULL), t;
	char p[32];
	const char *argv[] = { "tracerd", "--pid", p, "-r", repo, NULL };
	struct run_result r;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	snprintf(p, sizeof(p), "%d", (int)fx);
	run_tracerd(&r, argv);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.err, "is in use by tracerd PID"), "%s", r.err);
	run_result_free(&r);
	kill(t, SIGTERM);
	cr_expect_eq(tracerd_wait(t), 0);
	fx_stop(fx);
}

static bool deep_enough(const struct found *f)
{
	return f->whole_after >= 100;
}

Test(record, stack_window_grows_for_deep_stacks)
{
	pid_t fx = fx_start(FX("fx_deep"), NULL), t;
	struct found f;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, "--stack-bytes=256K", NULL, NULL);
	cr_expect(repo_until(deep_enough));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	f = scan_repo();
	cr_expect_gt(f.cut, 0, "the first copies (16 KiB) cannot hold 300 frames");
	/* How many samples are taken before the writer has asked twice for a
	 * bigger window (16 -> 32 -> 64 KiB) depends on how soon the writer
	 * gets a CPU: that is a figure for make bench.  What must hold is
	 * that once a whole stack was copied, every later one is whole. */
	cr_expect_geq(f.whole_after, 100, "then the window grows: %llu whole stacks",
		(unsigned long long)f.whole_after);
	cr_expect_eq(f.cut_after, 0, "%llu of %llu stacks after the first whole one were cut",
		(unsigned long long)f.cut_after,
		(unsigned long long)(f.whole_after + f.cut_after));
	fx_stop(fx);
}

static bool main_spin_enough(const struct found *f)
{
	return f->main_spin > 50;
}

static bool plugin_enough(const struct found *f)
{
	return f->plugin > 80;
}

/* fx_dlopen recorded: it dlopen()s libfx_plugin.so once the repository
 * holds what before asks, and the recording goes on until the library has
 * samples enough. */
static struct found dlopen_recorded(bool (*before)(const struct found *f))
{
	pid_t fx = fx_start(FX("fx_dlopen"), FX("libfx_plugin.so")), t;
	struct found f;

	cr_assert_gt(fx, 0);
	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_expect(repo_until(before));
	kill(fx, SIGUSR1); /* dlopen now */
	cr_expect(repo_until(plugin_enough));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	f = scan_repo();
	fx_stop(fx);
	cr_expect_gt(f.plugin, 80, "after dlopen, the new library's symbols: %llu",
		(unsigned long long)f.plugin);
	return f;
}

Test(record, dlopen_after_start_is_symbolized)
{
	struct found f = dlopen_recorded(main_spin_enough);

	cr_expect_gt(f.main_spin, 50, "before dlopen: %llu", (unsigned long long)f.main_spin);
}

/* A library dlopen'ed right after the recording's first samples, while
 * the writer's session of the process is young (it used to be renewed
 * once a second at most: python's C modules, imported at its start, were
 * cut as "[unknown]" for the first second): its first sample renews the
 * session, and no stack is cut, before or after. */
Test(record, dlopen_soon_after_start_is_symbolized_at_once)
{
	struct found f = dlopen_recorded(has_samples);

	cr_expect_eq(f.cut, 0, "%llu of %llu stacks cut", (unsigned long long)f.cut,
		(unsigned long long)f.samples);
}

static bool renamed(const struct found *f)
{
	return f->renames > 0;
}

Test(record, thread_rename_recorded)
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

Test(record, waits_agree_with_the_programs_own_clock, .timeout = 120)
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
