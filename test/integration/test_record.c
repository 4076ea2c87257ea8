/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd record, its start and its end: the harness every record_* suite
 * uses (declared in record.h: a repository per test, tracerd recording a
 * fixture into it, what the repository holds), and the tests of how a
 * recording begins and ends: a command run under tracerd, a target that
 * exits, tracerd killed, and the errors and refusals of its command line.
 * The features have their own files: test_record_threads.c (threads,
 * exec, crashes), _signals (the target's signals and job control,
 * tracerd's own), _repository (publishing, locking, links, snapshots),
 * _modes (cpu and wall, perf and ptrace), _waits (waiting threads and
 * their waits), _symbols (stack windows, dlopen, LTO, stripped code) and
 * _go (Go's runtime). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
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

char repo[64], errfile[96];

void record_setup(void)
{
	snprintf(repo, sizeof(repo), "/tmp/tracerd-rec-XXXXXX");
	cr_assert_not_null(mkdtemp(repo));
	rmdir(repo);
	snprintf(errfile, sizeof(errfile), "%s.err", repo);
}

void record_teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", repo, errfile);
	if (system(cmd) != 0)
		cr_log_warn("cleanup failed");
}

/* The process tracing pid (TracerPid is the tracer's thread), 0 if none. */
pid_t tracer_of(pid_t pid)
{
	struct td_task_info i;

	if (td_task_info_read(pid, pid, &i) < 0)
		return -1;
	return i.tracer ? td_tgid_of(i.tracer) : 0;
}

char *slurp(const char *path)
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
char *pprof_raw(void)
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
pid_t tracerd_start(pid_t pid, const char *a1, const char *a2, const char *a3)
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

int tracerd_wait(pid_t t)
{
	int st;

	cr_assert_eq(waitpid(t, &st, 0), t);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Ctrl-C: tracerd stops recording, detaches and exits. */
int tracerd_stop(pid_t t)
{
	kill(t, SIGINT);
	return tracerd_wait(t);
}

/* ---- what a repository holds */

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
struct found scan_repo_now(int *ret_files)
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

struct found scan_repo(void)
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

bool repo_until(bool (*cond)(const struct found *f))
{
	struct repo_wait w = { cond, { 0 } };

	if (wait_for(repo_holds, &w, REPO_PATIENCE_MS))
		return true;
	cr_log_error("gave up waiting for the repository; it holds %llu samples",
		(unsigned long long)w.f.samples);
	return false;
}

bool has_samples(const struct found *f)
{
	return f->samples > 0;
}

bool samples_600(const struct found *f)
{
	return f->samples >= 600;
}

int verify_status(void)
{
	const char *argv[] = { "tracerd", "verify", repo, NULL };
	struct run_result r;
	int s;

	run_tracerd(&r, argv);
	s = r.status;
	run_result_free(&r);
	return s;
}

/* fork + exec a fixture with pipes for stdin and stdout; waits for its
 * "ready".  *ret_in, *ret_out: the parent's ends. */
pid_t spawn(const char *path, const char *arg1, int *ret_in, int *ret_out)
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

bool runs_again(void *arg)
{
	const struct running *r = arg;
	uint64_t c = fx_counter(r->fx);

	return c != UINT64_MAX && c > r->counter && task_runtime(r->fx, r->fx) > r->runtime &&
	       task_state(r->fx, r->fx) == 'R';
}

/* The samples and share of thread name in a threads report; false if
 * it is not listed. */
bool thread_share(const char *out, const char *name, unsigned long *ret_n, double *ret_pct)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), " %s ", name);
	p = strstr(out, key);
	return p && sscanf(p + strlen(key), "%lu %lf%%", ret_n, ret_pct) == 2;
}

TestSuite(record, .init = record_setup, .fini = record_teardown, .timeout = 300);

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

double total_share(pid_t tid, const char *fn, const char *extra)
{
	char t[32], key[96];
	const char *argv[] = { "tracerd", "report", repo, "--limit", "0", "--tid", t, extra, NULL };
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
	return v[1];
}

bool fx_read_report(int out, char *text, size_t len)
{
	size_t got = 0;

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
