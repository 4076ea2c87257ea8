/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd service on this machine, without systemd (test_service_systemd.c
 * runs it under a real one): it follows the processes its rules name, follows a
 * restart, picks up a new rule on SIGHUP and keeps its config when the new
 * one is bad, says once that a process another tracer holds cannot be
 * followed and follows it once it is free, writes an emergency dump when a
 * process crashes, and leaves every target running and untraced when it
 * stops; says who sent the signal a process died of; records no kernel
 * frame with KernelFrames=no; follows 200 idle
 * processes, and as many as MaxProcesses= lets a
 * rule, saying so once; unwinds the stacks of more processes than the
 * writer once had sessions for. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../helpers.h"

struct svc {
	char dir[64], conf[96], log[96], data[96];
	pid_t pid;
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
	chmod(path, 0600);
}

static const char *scan_interval = "200ms";

static void svc_config(struct svc *s, const char *rules)
{
	char text[2048];

	snprintf(text, sizeof(text),
		"[Service]\nDirectory=%s\nCacheDirectory=" TEST_CACHE_DIR "\nScanInterval=%s\n\n%s",
		s->data, scan_interval, rules);
	write_file(s->conf, text);
}

static void svc_start(struct svc *s, const char *rules)
{
	pid_t pid;

	snprintf(s->dir, sizeof(s->dir), "/tmp/tracerd-svc-XXXXXX");
	cr_assert_not_null(mkdtemp(s->dir));
	snprintf(s->conf, sizeof(s->conf), "%s/tracerd.conf", s->dir);
	snprintf(s->log, sizeof(s->log), "%s/log", s->dir);
	snprintf(s->data, sizeof(s->data), "%s/data", s->dir);
	svc_config(s, rules);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		/* a failed assertion ends the test's process: the service goes
		 * too, in order */
		prctl(PR_SET_PDEATHSIG, SIGTERM);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(TD_BUILD_DIR "/tracerd", "tracerd", "service", "--config", s->conf, "--verbose",
			(char *)NULL);
		_exit(127);
	}
	s->pid = pid;
}

static char *slurp(const char *path)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "cat '%s' 2>/dev/null", path);
	return shell_output(cmd, NULL);
}

struct logwait {
	const struct svc *s;
	const char *text;
};

/* text met n times in s's log (log_reaches); or, for the repository
 * conditions, a rule's name and a count */
struct logcount {
	const struct svc *s;
	const char *text;
	unsigned n;
};

static bool log_has(void *arg)
{
	struct logwait *w = arg;
	char *log = slurp(w->s->log);
	bool has = strstr(log, w->text) != NULL;

	free(log);
	return has;
}

static void expect_log(const struct svc *s, const char *text)
{
	struct logwait w = { s, text };

	if (!wait_for(log_has, &w, TEST_PATIENCE_MS)) {
		char *log = slurp(s->log);

		cr_assert_fail("no \"%s\" in the service's log:\n%s", text, log);
	}
}

static unsigned log_count(const struct svc *s, const char *text)
{
	char *log = slurp(s->log);
	unsigned n = 0;

	for (const char *p = log; (p = strstr(p, text)); p++)
		n++;
	free(log);
	return n;
}

/* The stop: SIGTERM, exit 0; what the log said comes back (freed by the
 * caller). */
static char *svc_stop(struct svc *s)
{
	int status;

	kill(s->pid, SIGTERM);
	cr_assert_eq(waitpid(s->pid, &status, 0), s->pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"the service stopped with status 0x%x:\n%s", status, slurp(s->log));
	return slurp(s->log);
}

static void svc_cleanup(struct svc *s)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
	free(shell_output(cmd, NULL));
}

static int tracer_of(pid_t pid)
{
	char path[64], *text, *p;
	int tracer = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = slurp(path);
	if ((p = strstr(text, "TracerPid:")))
		tracer = atoi(p + 10);
	free(text);
	return tracer;
}

struct folded {
	const char *repo, *function;
};

/* Does the repository hold a sample with function on its stack? */
static bool has_samples(void *arg)
{
	struct folded *f = arg;
	char cmd[512], *out;
	bool has;

	snprintf(cmd, sizeof(cmd), "%s/tracerd report --format folded '%s' 2>/dev/null",
		TD_BUILD_DIR, f->repo);
	out = shell_output(cmd, NULL);
	has = strstr(out, f->function) != NULL;
	free(out);
	return has;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(service, follows_restarts_and_reloads_and_leaves_targets_running, .timeout = 240)
{
	struct svc s;
	char want[128], repo[160], *log;
	pid_t spin, spin2, threads;
	double t0;

	if (!is_root())
		cr_skip("needs root to trace other processes");
	/* each test's fixtures carry an argument of their own: the rules
	 * must not take another test's */
	svc_start(&s, "[Target spin]\nExe=" TD_FIXTURE_DIR "/fx_spin\nCmdline=fx_spin 70001$\n");
	expect_log(&s, "started:");

	/* a process that starts later is followed, and sampled */
	t0 = now_s();
	spin = fx_start(TD_FIXTURE_DIR "/fx_spin", "70001");
	cr_assert_gt(spin, 0);
	snprintf(want, sizeof(want), "following %d (fx_spin)", (int)spin);
	expect_log(&s, want);
	snprintf(repo, sizeof(repo), "%s/spin", s.data);
	cr_assert(wait_for(has_samples, &(struct folded){ repo, "fx_spin_user" }, TEST_PATIENCE_MS),
		"no sample of fx_spin in %s", repo);
	cr_log_info("start to first sample on disk: %.2f s (ScanInterval=200ms)", now_s() - t0);

	/* a restart: a new process, followed too */
	fx_stop(spin);
	spin2 = fx_start(TD_FIXTURE_DIR "/fx_spin", "70001");
	snprintf(want, sizeof(want), "following %d (fx_spin)", (int)spin2);
	expect_log(&s, want);

	/* a reload adds a rule: its processes are followed, the old rule's
	 * recording goes on */
	svc_config(&s, "[Target spin]\nExe=" TD_FIXTURE_DIR "/fx_spin\nCmdline=fx_spin 70001$\n\n"
		       "[Target threads]\nExe=*/fx_threads\nCmdline=fx_threads 3$\n");
	t0 = now_s();
	kill(s.pid, SIGHUP);
	expect_log(&s, "reloaded");
	cr_assert_eq(log_count(&s, "rule spin: recording into"), 1, "the unchanged rule restarted");
	threads = fx_start(TD_FIXTURE_DIR "/fx_threads", "3");
	snprintf(want, sizeof(want), "rule threads: following %d (fx_threads)", (int)threads);
	expect_log(&s, want);
	snprintf(repo, sizeof(repo), "%s/threads", s.data);
	cr_assert(wait_for(has_samples, &(struct folded){ repo, "spin_loop" }, TEST_PATIENCE_MS),
		"no sample of fx_threads in %s", repo);
	cr_log_info("reload to the new rule's first sample on disk: %.2f s", now_s() - t0);

	/* a bad config at reload: said with its line, the old one stays */
	svc_config(&s, "[Target spin]\nComm=fx_spin\nCmdline=fx_spin 70001$\nFrequency=lots\n");
	kill(s.pid, SIGHUP);
	expect_log(&s, "reload refused");
	snprintf(want, sizeof(want), "%s:9:", s.conf);
	expect_log(&s, want);
	cr_assert_gt(tracer_of(spin2), 0, "still followed after a refused reload");
	cr_assert_gt(tracer_of(threads), 0, "still followed after a refused reload");

	/* the stop: every target runs on, traced by nobody */
	log = svc_stop(&s);
	cr_assert(strstr(log, "stopping: detaching from "), "%s", log);
	free(log);
	cr_assert_eq(kill(spin2, 0), 0);
	cr_assert_eq(kill(threads, 0), 0);
	cr_assert_eq(tracer_of(spin2), 0);
	cr_assert_eq(tracer_of(threads), 0);
	cr_assert_neq(task_state(spin2, spin2), 't', "left stopped");
	fx_stop(spin2);
	fx_stop(threads);
	svc_cleanup(&s);
}

Test(service, a_crash_leaves_an_emergency_dump, .timeout = 120)
{
	struct svc s;
	char want[128], cmd[512], *out, *log, *p;
	pid_t crash;
	int status;

	if (!is_root())
		cr_skip("needs root to trace other processes");
	svc_start(&s, "[Target crash]\nComm=fx_crash\nCmdline=fx_crash 600001$\nMode=wall\n");
	expect_log(&s, "started:");
	crash = fx_start(TD_FIXTURE_DIR "/fx_crash", "600001");
	snprintf(want, sizeof(want), "following %d (fx_crash)", (int)crash);
	expect_log(&s, want);
	kill(crash, SIGUSR1);
	cr_assert_eq(waitpid(crash, &status, 0), crash);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "it died as it would have");
	expect_log(&s, "emergency dump ");
	log = slurp(s.log);
	p = strstr(log, "emergency dump ");
	/* a fault: its address, as the threads view says it */
	cr_assert(strstr(log, "killed by signal 11 (Segmentation fault), fault address 0x"), "%s",
		log);
	snprintf(cmd, sizeof(cmd), "%s/tracerd report '%.*s' 2>&1", TD_BUILD_DIR,
		(int)strcspn(p + 15, " "), p + 15);
	out = shell_output(cmd, &status);
	cr_assert_eq(status, 0, "%s:\n%s", cmd, out);
	/* the death leads: its cause, then the crashing thread's stack */
	cr_assert(strstr(out, "SIGSEGV") || strstr(out, "Segmentation fault"), "%s", out);
	cr_assert(strstr(out, "crash_leaf"), "no stack at death:\n%s", out);
	cr_assert_lt(strstr(out, "crash_leaf") - out, 2000, "the death does not lead:\n%s", out);
	free(out);
	free(log);
	log = svc_stop(&s);
	/* the death is said once: with its dump, not again as an exit */
	cr_expect_eq(log_count(&s, "killed by signal 11"), 1, "%s", log);
	free(log);
	svc_cleanup(&s);
}

static unsigned sleepers_of(pid_t pid, pid_t *kids, unsigned cap);

/* The samples of fx_pipe_write in the rule's repository (c->text, the
 * rule's name) reach c->n? */
static bool pipe_samples(void *arg)
{
	struct logcount *c = arg;
	char cmd[600], *out;
	unsigned long n;

	snprintf(cmd, sizeof(cmd),
		TD_BUILD_DIR "/tracerd report '%s/%s' -f folded 2>/dev/null | "
			     "awk '/;fx_pipe_write/ { n += $NF } END { print n + 0 }'",
		c->s->data, c->text);
	out = shell_output(cmd, NULL);
	n = strtoul(out, NULL, 10);
	free(out);
	return n >= c->n;
}

/* fx_pipe's profile by module as rule "pipe" with extra keys records it:
 * its writer's 300 samples at least (freed by the caller). */
static char *pipe_modules(const char *extra)
{
	char rules[256], cmd[600], *log, *out;
	struct svc s;
	pid_t fx = fx_start(TD_FIXTURE_DIR "/fx_pipe", NULL);

	cr_assert_gt(fx, 0);
	snprintf(rules, sizeof(rules), "[Target pipe]\nComm=fx_pipe\nFrequency=499\n%s", extra);
	svc_start(&s, rules);
	expect_log(&s, "rule pipe: following ");
	cr_assert(wait_for(pipe_samples, &(struct logcount){ &s, "pipe", 300 },
			  TEST_PATIENCE_MS * 2),
		"fx_pipe_write not sampled:\n%s", slurp(s.log));
	log = svc_stop(&s);
	free(log);
	fx_stop(fx);
	snprintf(cmd, sizeof(cmd),
		TD_BUILD_DIR "/tracerd report '%s/pipe' -f top --by module --limit 0 2>&1", s.data);
	out = shell_output(cmd, NULL);
	svc_cleanup(&s);
	return out;
}

/* KernelFrames=no: fx_pipe's writes to a pipe, a third of its time in
 * the kernel, recorded without one kernel frame; the default records
 * them (where the kernel gives them: test_record_kernel.c's conditions). */
Test(service, kernel_frames_no_records_none, .timeout = 180)
{
	char *out;

	if (!is_root())
		cr_skip("needs root to trace other processes");
	out = pipe_modules("");
	if (!strstr(out, " [kernel]\n")) {
		cr_log_warn("%s", out);
		free(out);
		cr_skip("no kernel frames by default here (perf capture or its permission)");
	}
	free(out);
	out = pipe_modules("KernelFrames=no\n");
	cr_expect(strstr(out, " fx_pipe\n"), "%.2000s", out);
	cr_expect_null(strstr(out, "[kernel]"), "kernel frames with KernelFrames=no:\n%.2000s",
		out);
	free(out);
}

/* A death's line in the journal says who sent the signal, in the words
 * of the threads view: the sender is this test, its PID and comm known
 * here, uid ours. */
Test(service, a_death_says_who_sent_the_signal, .timeout = 120)
{
	static pid_t kids[4];
	char want[256], comm[32] = "", *log;
	struct svc s;
	pid_t fx;
	FILE *f;

	if (!is_root())
		cr_skip("needs root to trace other processes");
	f = fopen("/proc/self/comm", "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	fx = fx_start(TD_FIXTURE_DIR "/fx_sleepers", "1");
	cr_assert_gt(fx, 0);
	cr_assert_eq(sleepers_of(fx, kids, 4), 1);
	svc_start(&s, "[Target one]\nComm=fx-sleeper\n");
	snprintf(want, sizeof(want), "following %d (fx-sleeper)", (int)kids[0]);
	expect_log(&s, want);
	kill(kids[0], SIGTERM);
	snprintf(want, sizeof(want),
		"rule one: %d (fx-sleeper) killed by signal 15 (Terminated), sent by PID %d (%s), "
		"uid %u (kill)\n",
		(int)kids[0], (int)getpid(), comm, (unsigned)getuid());
	expect_log(&s, want);
	log = svc_stop(&s);
	cr_expect_eq(log_count(&s, "killed by signal 15"), 1, "said once:\n%s", log);
	free(log);
	fx_stop(fx);
	svc_cleanup(&s);
}

Test(service, a_process_another_tracer_holds_is_said_once_then_followed, .timeout = 120)
{
	struct svc s;
	char want[128];
	pid_t spin;
	int status;

	if (!is_root())
		cr_skip("needs root to trace other processes");
	spin = fx_start(TD_FIXTURE_DIR "/fx_spin", "70003");
	cr_assert_gt(spin, 0);
	cr_assert_eq(ptrace(PTRACE_SEIZE, spin, 0, 0), 0, "%s", strerror(errno));
	svc_start(&s, "[Target spin]\nComm=fx_spin\nCmdline=fx_spin 70003$\n");
	expect_log(&s, "started:");
	snprintf(want, sizeof(want), "cannot follow %d (fx_spin)", (int)spin);
	expect_log(&s, want);
	/* free it: the retry (after its backoff) follows it */
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, spin, 0, 0), 0);
	cr_assert_eq(waitpid(spin, &status, __WALL), spin);
	cr_assert_eq(ptrace(PTRACE_DETACH, spin, 0, 0), 0);
	snprintf(want, sizeof(want), "following %d (fx_spin)", (int)spin);
	expect_log(&s, want);
	snprintf(want, sizeof(want), "cannot follow %d", (int)spin);
	cr_assert_eq(log_count(&s, want), 1, "a refusal is said once");
	free(svc_stop(&s));
	cr_assert_eq(tracer_of(spin), 0);
	fx_stop(spin);
	svc_cleanup(&s);
}

Test(service, a_bad_config_refuses_to_start)
{
	char dir[] = "/tmp/tracerd-svc-XXXXXX", conf[96];
	const char *argv[] = { "tracerd", "service", "--config", conf, NULL };
	struct run_result r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/tracerd.conf", dir);
	write_file(conf, "[Service]\nDirectory=/tmp\n\n[Target x]\nComm=x\nMode=fast\n");
	cr_assert_eq(run_tracerd(&r, argv), 0);
	cr_assert_eq(r.status, 1, "exit %d:\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.err, ":6:") && strstr(r.err, "Mode=fast") && strstr(r.err, "not started"),
		"file, line, text and what happened:\n%s", r.err);
	run_result_free(&r);
	unlink(conf);
	rmdir(dir);
}

/* A memory cgroup of its own under the test's, limited to limit bytes and
 * no swap: its path in ret_dir, false if this machine cannot have one. */
static bool oom_cgroup(char *ret_dir, size_t len, const char *limit)
{
	char *self = slurp("/proc/self/cgroup"), *l, path[512], file[1024];
	bool v1 = false;

	l = strstr(self, "\n0::");
	l = l ? l + 4 : !strncmp(self, "0::", 3) ? self + 3 : NULL;
	snprintf(path, sizeof(path), "/sys/fs/cgroup%.*s/cgroup.controllers",
		l ? (int)strcspn(l, "\n") : 0, l ? l : "");
	{
		char *ctl = l ? slurp(path) : NULL;

		if (!ctl || !strstr(ctl, "memory")) {
			l = strstr(self, ":memory:");
			v1 = l != NULL;
			if (l)
				l += 8;
		}
		free(ctl);
	}
	if (!l) {
		free(self);
		return false;
	}
	snprintf(ret_dir, len, "%s%.*s/tracerd-oom-%d", v1 ? "/sys/fs/cgroup/memory" : "/sys/fs/cgroup",
		(int)strcspn(l, "\n"), l, (int)getpid());
	free(self);
	if (mkdir(ret_dir, 0755) < 0)
		return false;
	snprintf(file, sizeof(file), "%s/%s", ret_dir, v1 ? "memory.limit_in_bytes" : "memory.max");
	write_file(file, limit);
	snprintf(file, sizeof(file), "%s/%s", ret_dir,
		v1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max");
	if (access(file, F_OK) == 0)
		write_file(file, v1 ? limit : "0");
	return true;
}

Test(service, an_oom_kill_is_named_in_the_emergency_dump, .timeout = 120)
{
	char cg[600], file[700], pidtext[32], want[128], *log;

	/* a cgroup path of ours is short: the buffers are sized for 600 */
	struct svc s;
	pid_t oom;
	int status;

	if (!is_root())
		cr_skip("needs root to trace other processes and make a memory cgroup");
	if (!oom_cgroup(cg, sizeof(cg), "50331648"))
		cr_skip("cannot make a memory cgroup here (no writable memory controller)");
	oom = fx_start(TD_FIXTURE_DIR "/fx_oom", "1");
	cr_assert_gt(oom, 0);
	snprintf(file, sizeof(file), "%s/cgroup.procs", cg);
	snprintf(pidtext, sizeof(pidtext), "%d\n", (int)oom);
	write_file(file, pidtext);
	svc_start(&s, "[Target oom]\nCmdline=fx_oom 1$\n");
	expect_log(&s, "started:");
	snprintf(want, sizeof(want), "following %d (fx_oom)", (int)oom);
	expect_log(&s, want);
	kill(oom, SIGUSR1);
	cr_assert_eq(waitpid(oom, &status, 0), oom);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status 0x%x", status);
	snprintf(want, sizeof(want), "%d (fx_oom) killed by signal 9 (Killed) by the OOM killer; "
		"emergency dump ", (int)oom);
	expect_log(&s, want);
	log = svc_stop(&s);
	free(log);
	rmdir(cg);
	svc_cleanup(&s);
}

/* The kernel's process events: with scans 10 s apart, twenty processes of
 * 150 ms each, started one after another, are each followed from their
 * exec and have samples in the rule's repository (at least 19 of 20). */
Test(service, short_lives_followed_from_their_exec, .timeout = 240)
{
	struct svc s;
	char cmd[1200], exe[300], *log, *out;
	int status, n = 0;

	if (!is_root())
		cr_skip("needs root to trace other processes and hear the kernel's process events");
	scan_interval = "10s";
	svc_start(&s, "[Target short]\nComm=fxshortlife\nMode=wall\n");
	scan_interval = "200ms";
	expect_log(&s, "started:");
	log = slurp(s.log);
	if (strstr(log, "process events are not available")) {
		free(log);
		free(svc_stop(&s));
		svc_cleanup(&s);
		cr_skip("the kernel's process events connector is not available here");
	}
	free(log);
	snprintf(exe, sizeof(exe), "%s/fxshortlife", s.dir);
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep '%s' && for i in $(seq 20); do '%s' 0.15; done",
		exe, exe);
	cr_assert_eq(system(cmd), 0);
	log = svc_stop(&s);
	snprintf(cmd, sizeof(cmd), "%s/tracerd report --format threads '%s/short' 2>&1",
		TD_BUILD_DIR, s.data);
	out = shell_output(cmd, &status);
	cr_assert_eq(status, 0, "%s\n%s", out, log);
	for (const char *p = out; (p = strstr(p, " fxshortlife ")); p++)
		n++;
	cr_expect_geq(n, 19, "%d of 20 processes recorded:\n%s\n%s", n, out, log);
	free(out);
	free(log);
	svc_cleanup(&s);
}

/* A process whose name holds a terminal escape: the service's lines quote
 * it escaped (as every target string is printed), each message one line,
 * with no control byte but the newline. */
Test(service, names_in_its_lines_are_escaped, .timeout = 120)
{
	struct svc s;
	char bin[160], cmd[400], want[96], *log;
	pid_t fx;

	if (!is_root())
		cr_skip("needs root to trace other processes");
	svc_start(&s, "[Target evil]\nCmdline=evil 7301$\nMode=cpu\n");
	expect_log(&s, "started:");
	snprintf(bin, sizeof(bin), "%s/fx\x1b[1mevil", s.dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", TD_FIXTURE_DIR "/fx_evil", bin);
	cr_assert_eq(system(cmd), 0);
	fx = fx_start(bin, "7301");
	cr_assert_gt(fx, 0);
	snprintf(want, sizeof(want), "following %d (fx\\x1b[1mevil)", (int)fx);
	expect_log(&s, want);
	fx_stop(fx);
	log = svc_stop(&s);
	for (const unsigned char *p = (const unsigned char *)log; *p; p++)
		cr_assert((*p >= 0x20 && *p != 0x7f && !(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) ||
				  *p == '\n',
			"byte 0x%02x at %zu of the log:\n%s", *p, (size_t)(p - (const unsigned char *)log),
			log);
	free(log);
	svc_cleanup(&s);
}

/* ---- scale: a host's worth of idle processes (fx_sleepers) */

/* The children of fx_sleepers pid, into kids (at most cap). */
static unsigned sleepers_of(pid_t pid, pid_t *kids, unsigned cap)
{
	char path[64], *text, *p, *end;
	unsigned n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	text = slurp(path);
	for (p = text; n < cap; p = end) {
		long k = strtol(p, &end, 10);

		if (end == p)
			break;
		kids[n++] = (pid_t)k;
	}
	free(text);
	return n;
}

static bool log_reaches(void *arg)
{
	struct logcount *c = arg;

	return log_count(c->s, c->text) >= c->n;
}

/* Every child of fx_sleepers not ended by the test runs on after the
 * stop, traced by nobody. */
static void expect_untraced(const pid_t *kids, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (kill(kids[i], 0) < 0)
			continue; /* one the test ended */
		cr_expect_eq(tracer_of(kids[i]), 0, "%d still traced", (int)kids[i]);
		cr_expect_neq(task_state(kids[i], kids[i]), 't', "%d left stopped", (int)kids[i]);
	}
}

Test(service, two_hundred_idle_processes_are_all_followed, .timeout = 300)
{
	static pid_t kids[256];
	struct svc s;
	pid_t fx;
	unsigned n;
	char *log;

	if (!is_root())
		cr_skip("needs root to trace other processes");
	fx = fx_start(TD_FIXTURE_DIR "/fx_sleepers", "200");
	cr_assert_gt(fx, 0);
	n = sleepers_of(fx, kids, 256);
	cr_assert_eq(n, 200);
	svc_start(&s, "[Target many]\nComm=fx-sleeper\n");
	cr_assert(wait_for(log_reaches, &(struct logcount){ &s, "rule many: following ", 200 },
			  TEST_PATIENCE_MS * 4),
		"not all 200 followed:\n%s", slurp(s.log));
	for (unsigned i = 0; i < n; i++)
		cr_expect_gt(tracer_of(kids[i]), 0, "%d not followed", (int)kids[i]);
	log = svc_stop(&s);
	cr_expect_null(strstr(log, "cannot follow"), "%s", log);
	cr_expect_null(strstr(log, "MaxProcesses"), "%s", log);
	free(log);
	expect_untraced(kids, n);
	fx_stop(fx);
	svc_cleanup(&s);
}

/* The leaders the rule's repository has samples of, at least n? */
static bool repo_has_leaders(void *arg)
{
	struct logcount *c = arg;
	char cmd[600], *out;
	unsigned n;

	snprintf(cmd, sizeof(cmd),
		TD_BUILD_DIR "/tracerd report '%s/%s' -f threads 2>/dev/null | "
			     "awk 'NR > 3 && $1 == $2' | wc -l",
		c->s->data, c->text);
	out = shell_output(cmd, NULL);
	n = (unsigned)atoi(out);
	free(out);
	return n >= c->n;
}

/* More processes than the writer once had sessions for (64) in one
 * recording: each one's samples unwound to the fixture's own functions,
 * none "[not unwound: ...]".  Wall mode: its threads sleep, and a wall
 * recording samples a blocked thread at every tick. */
Test(service, eighty_processes_all_get_stacks, .timeout = 300)
{
	static pid_t kids[256];
	char cmd[8192], *log, *out;
	size_t len = 0;
	struct svc s;
	pid_t fx;
	unsigned n;

	if (!is_root())
		cr_skip("needs root to trace other processes");
	fx = fx_start(TD_FIXTURE_DIR "/fx_sleepers", "80");
	cr_assert_gt(fx, 0);
	n = sleepers_of(fx, kids, 256);
	cr_assert_eq(n, 80);
	svc_start(&s, "[Target stacks]\nComm=fx-sleeper\nMode=wall\nFrequency=19\n");
	cr_assert(wait_for(log_reaches, &(struct logcount){ &s, "rule stacks: following ", 80 },
			  TEST_PATIENCE_MS * 2),
		"not all 80 followed:\n%s", slurp(s.log));
	cr_assert(wait_for(repo_has_leaders, &(struct logcount){ &s, "stacks", 80 },
			  TEST_PATIENCE_MS * 2),
		"not every process sampled:\n%s", slurp(s.log));
	log = svc_stop(&s);
	free(log);
	/* each process: a sample whose stack names nap(), the function both
	 * its threads sleep in; the pids printed are those without one */
	len = (size_t)snprintf(cmd, sizeof(cmd), "for p in");
	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, " %d", (int)kids[i]);
	snprintf(cmd + len, sizeof(cmd) - len,
		"; do " TD_BUILD_DIR "/tracerd report '%s/stacks' --pid $p -f folded 2>&1 | "
		"grep -q ';nap;' || echo $p; done",
		s.data);
	cr_assert_lt(len, sizeof(cmd) - 400);
	out = shell_output(cmd, NULL);
	cr_expect_str_empty(out, "processes without their stacks: %s", out);
	free(out);
	expect_untraced(kids, n);
	fx_stop(fx);
	svc_cleanup(&s);
}

Test(service, max_processes_follows_that_many_and_says_so_once, .timeout = 300)
{
	static pid_t kids[256];
	struct svc s;
	char *log, *p;
	pid_t fx, gone[10];
	unsigned n, k = 0;

	if (!is_root())
		cr_skip("needs root to trace other processes");
	fx = fx_start(TD_FIXTURE_DIR "/fx_sleepers", "80");
	cr_assert_gt(fx, 0);
	n = sleepers_of(fx, kids, 256);
	cr_assert_eq(n, 80);
	svc_start(&s, "[Target capped]\nComm=fx-sleeper\nMaxProcesses=50\n");
	expect_log(&s, "rule capped: MaxProcesses=50 reached; 30 more matching processes are not "
		       "followed");
	cr_assert(wait_for(log_reaches, &(struct logcount){ &s, "rule capped: following ", 50 },
		TEST_PATIENCE_MS));

	/* ten followed ones end: ten of the rest take their places, found
	 * by later scans, and the limit is not said again */
	log = slurp(s.log);
	for (p = log; k < 10 && (p = strstr(p, "rule capped: following ")); p++)
		gone[k++] = (pid_t)atoi(p + strlen("rule capped: following "));
	free(log);
	cr_assert_eq(k, 10);
	for (unsigned i = 0; i < k; i++)
		kill(gone[i], SIGTERM); /* not a fatal signal: no emergency dump */
	cr_assert(wait_for(log_reaches, &(struct logcount){ &s, "rule capped: following ", 60 },
			  TEST_PATIENCE_MS),
		"the rest were not followed as others ended:\n%s", slurp(s.log));
	log = svc_stop(&s);
	cr_expect_eq(log_count(&s, "rule capped: following "), 60, "%s", log);
	cr_expect_eq(log_count(&s, "MaxProcesses=50 reached"), 1, "said once:\n%s", log);
	cr_expect_null(strstr(log, "cannot follow"), "no line per process:\n%s", log);
	free(log);
	expect_untraced(kids, n);
	fx_stop(fx);
	svc_cleanup(&s);
}
