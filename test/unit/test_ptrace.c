/* Unit tests of ptrace/: attach, sample rounds, job control, vanishing
 * threads, signal re-injection, detach. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../ptrace/ptrace.h"
#include "../helpers.h"

#define FX(name) TD_FIXTURE_DIR "/" name
#define WINDOW (32u * 1024)

struct slots {
	unsigned char *buf;
	unsigned n, used, put;
	struct pt_event events[256];
	unsigned nevents;
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

static const struct pt_round_ops ops = { slot_get, slot_put, on_event, NULL };

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
