/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of ptrace/: attach, sample rounds, job control, vanishing
 * threads, signal re-injection, detach, attaching a PID again once the
 * process it named is gone, the signal mask the tracer leaves, and
 * children followed or let go (trace_fork). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../ptrace/ptrace.h"
#include "../helpers.h"

#define WINDOW (32u * 1024)

struct slots {
	unsigned char *buf;
	unsigned n, used, put;
	struct pt_event events[256];
	unsigned nevents;
	pid_t hold_exit_of; /* on_hold_exit keeps this process's leader */
	pid_t held_exit;    /* the thread it kept */
};

static struct td_sample *slot_get(void *arg, pid_t pid, pid_t tid, uint32_t *ret_window)
{
	struct slots *s = arg;

	(void)pid, (void)tid;
	if (s->used == s->n)
		return NULL;
	*ret_window = WINDOW;
	return (struct td_sample *)(s->buf + td_sample_size(WINDOW) * s->used++);
}

static void slot_put(void *arg, struct td_sample *smp)
{
	(void)smp;
	((struct slots *)arg)->put++;
}

static void on_event(void *arg, const struct pt_event *ev)
{
	struct slots *s = arg;

	if (s->nevents < 256)
		s->events[s->nevents++] = *ev;
}

static const struct pt_round_ops ops = { slot_get, slot_put, on_event, NULL, NULL, NULL };

static bool on_hold_exit(void *arg, pid_t pid, pid_t tid)
{
	struct slots *s = arg;

	if (pid != s->hold_exit_of || tid != pid)
		return false;
	s->held_exit = tid;
	return true;
}

static const struct pt_round_ops hold_ops = { slot_get, slot_put, on_event, NULL, NULL,
	on_hold_exit };

static struct slots *slots_new(unsigned n)
{
	struct slots *s = calloc(1, sizeof(*s));

	s->buf = calloc(n, td_sample_size(WINDOW));
	s->n = n;
	return s;
}

static void slots_free(struct slots *s)
{
	free(s->buf);
	free(s);
}

static struct td_sample *slot_at(struct slots *s, unsigned i)
{
	return (struct td_sample *)(s->buf + td_sample_size(WINDOW) * i);
}

Test(ptrace, sample_every_thread_and_resume, .timeout = 30)
{
	pid_t pid = fx_start(FX("fx_threads"), NULL), tids[64];
	struct pt_config cfg = { .max_threads = 64, .trace_clone = true };
	struct pt_round_stats st;
	struct pt_tracer *t;
	struct slots *s = slots_new(64);
	int n;

	cr_assert_gt(pid, 0);
	cr_assert(wait_parked(pid, "spin", TEST_PATIENCE_MS));
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_eq(pt_tracer_attach(t, pid), 11);
	n = pt_tracer_threads(t, pid, tids, 64);
	cr_assert_eq(n, 11);
	cr_assert_eq(pt_tracer_sample(t, tids, (unsigned)n, &ops, s, 2000, 0, &st), 0);
	cr_expect_eq(st.requested, 11);
	cr_expect_eq(st.captured, 11);
	cr_expect_eq(s->put, 11);
	cr_expect_eq(st.gone + st.dropped + st.timeout, 0);
	for (unsigned i = 0; i < s->used; i++) {
		struct td_sample *smp = slot_at(s, i);
		pid_t spin = task_by_name(pid, "fx-spin");

		cr_expect_eq(smp->pid, pid);
		cr_expect_neq(smp->regs.rip, 0);
		cr_expect_eq(smp->stack_addr, smp->regs.rsp);
		cr_expect_gt(smp->stack_len, 64u);
		cr_expect_leq(smp->stack_len, WINDOW);
		cr_expect(smp->stack_end == 0 || smp->stack_addr + smp->stack_len <= smp->stack_end,
			"never copies past the end of the stack mapping");
		cr_expect_gt(smp->stopped_ns, 0u);
		cr_expect_lt(smp->stopped_ns, 2000000000u);
		if (smp->tid != spin)
			cr_expect(smp->flags & TD_SAMPLE_IN_SYSCALL, "tid %d sleeps in a syscall",
				smp->tid);
	}
	/* resumed, still traced: they sleep again (or run), never stay in t */
	cr_expect(wait_parked(pid, "spin", TEST_PATIENCE_MS), "every thread is resumed");
	/* a second round on the same tracer works the same */
	s->used = s->put = 0;
	pt_tracer_sample(t, tids, (unsigned)n, &ops, s, 2000, 0, &st);
	cr_expect_eq(st.captured, 11);
	pt_tracer_free(t);
	slots_free(s);
	cr_expect(wait_parked(pid, "spin", TEST_PATIENCE_MS));
	{
		char path[64], buf[256];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		f = fopen(path, "r");
		while (f && fgets(buf, sizeof(buf), f))
			if (!strncmp(buf, "TracerPid:", 10))
				cr_expect_eq(atoi(buf + 10), 0, "detached");
		if (f)
			fclose(f);
	}
	fx_stop(pid);
}

Test(ptrace, job_control_stop_is_kept, .timeout = 30)
{
	pid_t pid = fx_start(FX("fx_threads"), NULL), tids[64];
	struct pt_config cfg = { .max_threads = 64 };
	struct pt_round_stats st;
	struct pt_tracer *t;
	struct slots *s = slots_new(64);
	int n;

	cr_assert_gt(pid, 0);
	kill(pid, SIGSTOP);
	cr_assert(wait_all_state(pid, 'T', 5000));
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_gt(pt_tracer_attach(t, pid), 0);
	n = pt_tracer_threads(t, pid, tids, 64);
	pt_tracer_sample(t, tids, (unsigned)n, &ops, s, 2000, 0, &st);
	cr_expect_eq(st.captured, (unsigned)n);
	for (unsigned i = 0; i < s->used; i++)
		cr_expect(slot_at(s, i)->flags & TD_SAMPLE_GROUP_STOPPED);
	cr_expect(wait_all_state(pid, 't', TEST_PATIENCE_MS),
		"still stopped (t while traced) after LISTEN");
	pt_tracer_free(t);
	cr_expect(wait_all_state(pid, 'T', TEST_PATIENCE_MS), "still stopped after detach");
	kill(pid, SIGCONT);
	cr_expect(wait_parked(pid, "spin", TEST_PATIENCE_MS), "runs again after SIGCONT");
	slots_free(s);
	fx_stop(pid);
}

/* Handle the tracer's events until pid's main thread is in state c; a
 * stopped thread must stay so while we poll (t), a resumed one run (R). */
static bool poll_until_state(struct pt_tracer *t, struct slots *s, pid_t pid, char c)
{
	for (int i = 0; i < TEST_PATIENCE_MS / 5; i++) {
		pt_tracer_poll(t, &ops, s);
		if (task_state(pid, pid) == c) {
			/* and it stays so across more of our polls */
			for (int k = 0; k < 20; k++) {
				pt_tracer_poll(t, &ops, s);
				usleep(1000);
			}
			if (task_state(pid, pid) == c)
				return true;
		}
		usleep(5000);
	}
	return false;
}

Test(ptrace, cont_while_traced_resumes, .timeout = 60)
{
	pid_t pid = fx_start(FX("fx_chain"), NULL), tid;
	struct pt_config cfg = { .max_threads = 8 };
	struct pt_tracer *t;
	struct slots *s = slots_new(8);
	uint64_t r0;

	cr_assert_gt(pid, 0);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_gt(pt_tracer_attach(t, pid), 0);
	kill(pid, SIGSTOP);
	cr_expect(poll_until_state(t, s, pid, 't'), "SIGSTOP is honoured while traced (state %c)",
		task_state(pid, pid));
	kill(pid, SIGCONT);
	cr_expect(poll_until_state(t, s, pid, 'R'), "SIGCONT resumes it (state %c)",
		task_state(pid, pid));
	r0 = task_runtime(pid, pid);
	for (int i = 0; i < TEST_PATIENCE_MS / 5 && task_runtime(pid, pid) <= r0; i++) {
		pt_tracer_poll(t, &ops, s);
		usleep(5000);
	}
	cr_expect_gt(task_runtime(pid, pid), r0);
	tid = pid;
	pt_tracer_sample(t, &tid, 1, &ops, s, 1000, 0, NULL);
	cr_expect_eq(s->put, 1);
	pt_tracer_free(t);
	slots_free(s);
	fx_stop(pid);
}

Test(ptrace, vanished_process_is_not_an_error, .timeout = 30)
{
	pid_t pid = fx_start(FX("fx_eintr"), NULL), tids[16];
	struct pt_config cfg = { .max_threads = 16 };
	struct pt_round_stats st;
	struct pt_tracer *t;
	struct slots *s = slots_new(16);
	bool exited = false;
	int n;

	cr_assert_gt(pid, 0);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_eq(pt_tracer_attach(t, pid), 4);
	n = pt_tracer_threads(t, pid, tids, 16);
	kill(pid, SIGKILL);
	/* every thread dying (zombies until we reap them), none stoppable */
	cr_assert(wait_all_state(pid, 'Z', TEST_PATIENCE_MS), "SIGKILL did not take");
	cr_expect_eq(pt_tracer_sample(t, tids, (unsigned)n, &ops, s, 1000, 0, &st), 0);
	cr_expect_eq(st.captured, 0);
	cr_expect_eq(st.gone, 4);
	for (unsigned i = 0; i < s->nevents; i++)
		exited |= s->events[i].kind == PT_EVENT_PROCESS_EXIT;
	cr_expect(exited, "the process exit is reported");
	cr_expect_eq(pt_tracer_threads(t, pid, tids, 16), 0);
	pt_tracer_free(t);
	slots_free(s);
}

Test(ptrace, signals_are_reinjected, .timeout = 30)
{
	pid_t pid = fx_start(FX("fx_chain"), NULL);
	struct pt_config cfg = { .max_threads = 8 };
	struct pt_tracer *t;
	struct slots *s = slots_new(8);
	int seen_sig = 0, exit_status = -1;

	cr_assert_gt(pid, 0);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_gt(pt_tracer_attach(t, pid), 0);
	kill(pid, SIGTERM);
	for (int i = 0; i < TEST_PATIENCE_MS / 5 && exit_status < 0; i++) {
		pt_tracer_poll(t, &ops, s);
		for (unsigned k = 0; k < s->nevents; k++) {
			if (s->events[k].kind == PT_EVENT_SIGNAL)
				seen_sig = s->events[k].signo;
			if (s->events[k].kind == PT_EVENT_PROCESS_EXIT)
				exit_status = s->events[k].status;
		}
		usleep(5000);
	}
	cr_expect_eq(seen_sig, SIGTERM);
	cr_expect(exit_status >= 0 && WIFSIGNALED(exit_status) && WTERMSIG(exit_status) == SIGTERM,
		"the target dies of the signal as it would have");
	pt_tracer_free(t);
	slots_free(s);
}

Test(ptrace, attach_errors)
{
	struct pt_config cfg = { .max_threads = 8 };
	struct pt_tracer *t;

	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_expect_eq(pt_tracer_attach(t, getpid()), -TD_E_SELF);
	cr_expect_eq(pt_tracer_attach(t, 0x3ffffff0), -ESRCH);
	pt_tracer_free(t);
	pt_tracer_free(NULL);
}

Test(ptrace, read_memory)
{
	static const char secret[] = "stack bytes";
	char buf[sizeof(secret)];

	cr_expect_eq(pt_read_memory(getpid(), (uint64_t)(uintptr_t)secret, buf, sizeof(buf)),
		(ssize_t)sizeof(buf));
	cr_expect_str_eq(buf, secret);
	cr_expect_lt(pt_read_memory(getpid(), 8, buf, sizeof(buf)), 0);
}

/* A child that sleeps until killed; with want != 0, at exactly that PID
 * (clone3 with set_tid: needs CAP_SYS_ADMIN).  Returns its pid or -errno. */
static pid_t sleeper(pid_t want)
{
	struct { /* struct clone_args, CLONE_ARGS_SIZE_VER1 */
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
			set_tid, set_tid_size;
	} args = { .exit_signal = SIGCHLD };
	pid_t tid = want;
	long r;

	if (want) {
		args.set_tid = (uint64_t)(uintptr_t)&tid;
		args.set_tid_size = 1;
	}
	r = syscall(SYS_clone3, &args, sizeof(args));
	if (r == 0)
		for (;;)
			pause();
	return r < 0 ? -errno : (pid_t)r;
}

/* Poll the tracer until it reports pid's exit (it then has reaped it). */
static bool exit_seen(struct pt_tracer *t, struct slots *s, pid_t pid)
{
	for (int i = 0; i < 2000; i++) {
		pt_tracer_poll(t, &ops, s);
		for (unsigned k = 0; k < s->nevents; k++)
			if (s->events[k].kind == PT_EVENT_PROCESS_EXIT && s->events[k].pid == pid)
				return true;
		usleep(5000);
	}
	return false;
}

/* Clock ticks since boot, the unit of a process's start time. */
static uint64_t boot_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) /
	       (1000000000u / (uint64_t)sysconf(_SC_CLK_TCK));
}

Test(ptrace, process_identity_is_pid_and_start_time, .timeout = 30)
{
	struct td_proc_id id, forged, self;
	pid_t a = sleeper(0), b = sleeper(0);
	int st;

	cr_assert_gt(a, 0);
	cr_assert_gt(b, 0);
	cr_assert_eq(td_proc_id_read(a, &id), 0);
	cr_expect_eq(id.pid, a);
	cr_assert_eq(td_proc_id_read(getpid(), &self), 0);
	cr_expect_geq(id.start_time, self.start_time, "a child starts after its parent");
	cr_expect_eq(td_proc_id_check(&id), 1);
	forged = id;
	forged.start_time++;
	cr_expect_eq(td_proc_id_check(&forged), 0, "same PID, another start time: another process");
	forged.start_time = id.start_time - 1;
	cr_expect_eq(td_proc_id_check(&forged), 0);
	forged = (struct td_proc_id){ .pid = 0x3ffffff0, .start_time = id.start_time };
	cr_expect_eq(td_proc_id_check(&forged), 0, "no such PID");
	cr_expect_eq(td_proc_id_read(0x3ffffff0, &forged), -ESRCH);
	/* a zombie is still the process; once reaped it is gone */
	cr_assert_eq(td_proc_id_read(b, &forged), 0);
	kill(b, SIGKILL);
	for (int i = 0; i < 2000 && task_state(b, b) != 'Z'; i++)
		usleep(1000);
	cr_assert_eq(task_state(b, b), 'Z');
	cr_expect_eq(td_proc_id_check(&forged), 1, "a zombie not yet reaped");
	cr_assert_eq(waitpid(b, &st, 0), b);
	cr_expect_eq(td_proc_id_check(&forged), 0, "reaped");
	kill(a, SIGKILL);
	waitpid(a, &st, 0);
}

Test(ptrace, attach_again_once_the_process_is_gone, .timeout = 30)
{
	struct pt_config cfg = { .max_threads = 8 };
	struct slots *s = slots_new(8);
	struct pt_tracer *t;
	pid_t a = sleeper(0), b, tids[8];
	int st;

	cr_assert_gt(a, 0);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_eq(pt_tracer_attach(t, a), 1);
	cr_expect_eq(pt_tracer_attach(t, a), -TD_E_ATTACHED, "a live duplicate is refused");
	kill(a, SIGKILL);
	cr_assert(exit_seen(t, s, a), "the tracer sees the exit and reaps it");
	cr_expect_eq(pt_tracer_threads(t, a, tids, 8), 0);
	/* the same tracer attaches to a new process */
	b = sleeper(0);
	cr_assert_gt(b, 0);
	cr_expect_eq(pt_tracer_attach(t, b), 1);
	cr_expect_eq(pt_tracer_attach(t, b), -TD_E_ATTACHED);
	/* detached, the same live process may be attached again */
	cr_expect_geq(pt_tracer_detach(t, b, 2000), 0);
	cr_expect_eq(pt_tracer_threads(t, b, tids, 8), 0);
	cr_expect_eq(pt_tracer_attach(t, b), 1, "attach after detach");
	cr_expect_eq(pt_tracer_threads(t, b, tids, 8), 1);
	s->used = s->put = 0;
	pt_tracer_sample(t, &b, 1, &ops, s, 2000, 0, NULL);
	cr_expect_eq(s->put, 1, "traced again for real");
	pt_tracer_free(t);
	cr_expect(wait_all_state(b, 'S', 2000), "left running (asleep in pause)");
	kill(b, SIGKILL);
	waitpid(b, &st, 0);
	slots_free(s);
}

Test(ptrace, attach_to_a_reused_pid, .timeout = 30)
{
	struct pt_config cfg = { .max_threads = 8 };
	struct slots *s = slots_new(8);
	struct td_proc_id ida;
	struct pt_tracer *t;
	pid_t a = sleeper(0), b, c, tids[8];
	uint64_t deadline;
	int st;

	cr_assert_gt(a, 0);
	cr_assert_eq(td_proc_id_read(a, &ida), 0);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	cr_assert_eq(pt_tracer_attach(t, a), 1);
	kill(a, SIGKILL);
	cr_assert(exit_seen(t, s, a), "the tracer sees the exit and reaps it");
	/* a later clock tick, so that the new process's start time differs */
	deadline = td_now_ns() + 5000000000u;
	while (boot_ticks() <= ida.start_time && td_now_ns() < deadline)
		usleep(1000);
	b = sleeper(a);
	if (b == -EPERM || b == -ENOSYS || b == -EINVAL || b == -EEXIST) {
		pt_tracer_free(t);
		slots_free(s);
		cr_skip_test("cannot start a process at PID %d again (clone3 set_tid: %s); "
			     "needs CAP_SYS_ADMIN and a free PID",
			(int)a, strerror(-b));
	}
	cr_assert_eq(b, a, "the PID is reused");
	cr_expect_eq(td_proc_id_check(&ida), 0, "the old identity is gone, its PID is back");
	cr_expect_eq(pt_tracer_attach(t, b), 1, "a new process of a PID seen before");
	cr_expect_eq(pt_tracer_attach(t, b), -TD_E_ATTACHED);

	/* Reaped behind the tracer's back (this thread is the tracer too, so
	 * the tracer never sees the exit): its entry is stale, not a
	 * duplicate of the next process of that PID. */
	kill(b, SIGKILL);
	cr_assert_eq(waitpid(b, &st, __WALL), b);
	c = sleeper(a);
	if (c == -EEXIST) {
		pt_tracer_free(t);
		slots_free(s);
		cr_skip_test("PID %d was taken meanwhile", (int)a);
	}
	cr_assert_eq(c, a);
	cr_expect_eq(pt_tracer_attach(t, c), 1, "stale threads are forgotten, not a duplicate");
	cr_expect_eq(pt_tracer_threads(t, c, tids, 8), 1);
	s->used = s->put = 0;
	pt_tracer_sample(t, &c, 1, &ops, s, 2000, 0, NULL);
	cr_expect_eq(s->put, 1, "the new process is traced for real");
	pt_tracer_free(t);
	cr_expect(wait_all_state(c, 'S', 2000), "left running (asleep in pause)");
	kill(c, SIGKILL);
	waitpid(c, &st, 0);
	slots_free(s);
}

Test(ptrace, sigchld_mask_left_as_found)
{
	struct pt_config cfg = { .max_threads = 8 };
	struct pt_tracer *t;
	sigset_t set, cur;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	cr_expect(sigismember(&cur, SIGCHLD), "blocked while the tracer lives");
	pt_tracer_free(t);
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	cr_expect(!sigismember(&cur, SIGCHLD), "unblocked again: it was not blocked before");

	pthread_sigmask(SIG_BLOCK, &set, NULL);
	cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
	pt_tracer_free(t);
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	cr_expect(sigismember(&cur, SIGCHLD), "still blocked: it was blocked before");
}

/* A sleeper traced by a new tracer of cfg (*ret_tracer), sent SIGTERM,
 * and held at its exit stop: its pid. */
static pid_t held_sleeper(const struct pt_config *cfg, struct slots *s,
	struct pt_tracer **ret_tracer)
{
	pid_t a = sleeper(0);

	cr_assert_gt(a, 0);
	cr_assert_eq(pt_tracer_new(cfg, ret_tracer), 0);
	cr_assert_eq(pt_tracer_attach(*ret_tracer, a), 1);
	s->hold_exit_of = a;
	kill(a, SIGTERM);
	for (int i = 0; i < 2000 && !s->held_exit; i++) {
		pt_tracer_poll(*ret_tracer, &hold_ops, s);
		if (!s->held_exit)
			usleep(5000);
	}
	cr_assert_eq(s->held_exit, a, "no exit stop of %d was offered to hold_exit", (int)a);
	return a;
}

static bool process_exit_told(const struct slots *s, pid_t pid)
{
	for (unsigned k = 0; k < s->nevents; k++)
		if (s->events[k].kind == PT_EVENT_PROCESS_EXIT && s->events[k].pid == pid)
			return true;
	return false;
}

/* The lines of /proc/PID/maps, -1 if unreadable. */
static int maps_lines(pid_t pid)
{
	char path[64], line[512];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n;
}

/* A thread held at its exit stop keeps its process's mappings readable
 * (the kernel frees them after that stop), is left out of rounds, and
 * exits as it would have once released. */
Test(ptrace, exit_held_until_released, .timeout = 30)
{
	struct pt_config cfg = { .max_threads = 8, .trace_exit = true };
	struct slots *s = slots_new(8);
	struct pt_round_stats st;
	struct pt_tracer *t;
	pid_t a = held_sleeper(&cfg, s, &t);
	int status = -1;

	pt_tracer_poll(t, &hold_ops, s);
	cr_expect_not(process_exit_told(s, a), "a held thread exited");
	cr_expect_eq(task_state(a, a), 't', "not in its exit stop: %c", task_state(a, a));
	cr_expect_gt(maps_lines(a), 0, "its mappings are gone while it is held");
	cr_expect_eq(pt_tracer_sample(t, &a, 1, &hold_ops, s, 200, 0, &st), 0);
	cr_expect_eq(st.captured, 0);
	cr_expect_eq(st.gone, 1, "a thread held at its exit is sampled no more");
	cr_expect_eq(pt_tracer_release_exit(t, a), 0);
	cr_expect_eq(pt_tracer_release_exit(t, a), -ESRCH, "released twice");
	s->hold_exit_of = 0;
	cr_expect(exit_seen(t, s, a), "released, it did not exit");
	for (unsigned k = 0; k < s->nevents; k++)
		if (s->events[k].kind == PT_EVENT_PROCESS_EXIT && s->events[k].pid == a)
			status = s->events[k].status;
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %#x", status);
	pt_tracer_free(t);
	slots_free(s);
}

/* A tracer freed (either way) with a thread held at its exit lets it go
 * on to its exit: nothing is left stopped. */
Test(ptrace, exit_held_let_go_by_free, .timeout = 30)
{
	for (int by_exit = 0; by_exit < 2; by_exit++) {
		struct pt_config cfg = { .max_threads = 8, .trace_exit = true,
			.detach_by_exit = by_exit };
		struct slots *s = slots_new(8);
		struct pt_tracer *t;
		pid_t a = held_sleeper(&cfg, s, &t);
		int status = -1;

		pt_tracer_free(t);
		cr_expect_eq(waitpid(a, &status, 0), a);
		cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
			"detach_by_exit %d: status %#x", by_exit, status);
		slots_free(s);
	}
}

/* Poll t until cond holds of s's events, or TEST_PATIENCE_MS pass. */
static bool events_until(struct pt_tracer *t, struct slots *s, bool (*cond)(const struct slots *))
{
	for (int waited = 0; waited < TEST_PATIENCE_MS; waited += 5) {
		pt_tracer_poll(t, &ops, s);
		if (cond(s))
			return true;
		usleep(5000);
	}
	return false;
}

static unsigned count_kind(const struct slots *s, enum pt_event_kind kind)
{
	unsigned n = 0;

	for (unsigned k = 0; k < s->nevents; k++)
		n += s->events[k].kind == kind;
	return n;
}

/* Both children (fork, vfork) told, and the exits of the followed ones. */
static bool children_told(const struct slots *s)
{
	unsigned news = count_kind(s, PT_EVENT_PROCESS_NEW), exits = 0;

	for (unsigned k = 0; k < s->nevents; k++)
		for (unsigned j = 0; j < s->nevents; j++)
			exits += s->events[k].kind == PT_EVENT_PROCESS_NEW &&
				 s->events[j].kind == PT_EVENT_PROCESS_EXIT &&
				 s->events[j].pid == s->events[k].pid;
	return news + count_kind(s, PT_EVENT_CHILD_LEFT) == 2 && exits == news;
}

static bool parent_exit_told(const struct slots *s)
{
	return count_kind(s, PT_EVENT_PROCESS_EXIT) == count_kind(s, PT_EVENT_PROCESS_NEW) + 1;
}

/* trace_fork: a child made by fork and one made by vfork are each told
 * once, followed (a process of its own, its exit told) or, without
 * follow_forks, let go; either way every process runs to its end (the
 * vfork's parent is not left waiting) and the children exit 0 (the
 * parent checks). */
Test(ptrace, children_followed_or_let_go, .timeout = 60)
{
	for (int follow = 0; follow < 2; follow++) {
		struct pt_config cfg = { .max_threads = 16, .trace_clone = true, .trace_exec = true,
			.trace_fork = true, .follow_forks = follow };
		struct slots *s = slots_new(4);
		struct pt_tracer *t;
		int in, status = -1;
		pid_t fx = fx_start_piped(FX("fx_forks"), "onread", &in);

		cr_assert_gt(fx, 0);
		cr_assert_eq(pt_tracer_new(&cfg, &t), 0);
		cr_assert_eq(pt_tracer_attach(t, fx), 1);
		cr_assert_eq(write(in, "fv", 2), 2);
		cr_expect(events_until(t, s, children_told), "follow %d: %u new, %u left", follow,
			count_kind(s, PT_EVENT_PROCESS_NEW), count_kind(s, PT_EVENT_CHILD_LEFT));
		cr_expect_eq(count_kind(s, PT_EVENT_PROCESS_NEW), follow ? 2u : 0u);
		for (unsigned k = 0; k < s->nevents; k++)
			if (s->events[k].kind == PT_EVENT_PROCESS_NEW ||
				s->events[k].kind == PT_EVENT_CHILD_LEFT) {
				cr_expect_neq(s->events[k].pid, fx);
				cr_expect(s->events[k].old_tid == fx || s->events[k].old_tid == 0);
				cr_expect_eq(s->events[k].status, 0);
			}
		close(in);
		cr_expect(events_until(t, s, parent_exit_told), "follow %d: the parent's exit",
			follow);
		for (unsigned k = 0; k < s->nevents; k++)
			if (s->events[k].kind == PT_EVENT_PROCESS_EXIT && s->events[k].pid == fx)
				status = s->events[k].status;
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			"follow %d: the parent's status %#x", follow, status);
		pt_tracer_free(t);
		waitpid(fx, NULL, WNOHANG);
		slots_free(s);
	}
}
