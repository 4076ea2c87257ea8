/* The sampler thread: the only thread of tracerd that calls ptrace, and so
 * the tracer of every target thread.
 *
 * Loop: wait on a timerfd (ticks jittered +-10% around 1/HZ so that
 * sampling cannot lock onto a periodic workload) and on ptrace events.  On
 * a tick, pick the threads that ran since the last tick (schedstat read
 * through kept-open fds, before any interrupt: interrupting a thread
 * blocked in epoll_wait makes the program see EINTR), sample them in one
 * windowed round, and publish each copy into the sample ring.
 *
 * While a target thread is stopped this thread neither allocates, logs,
 * opens files nor takes a lock: the ring slot is reserved without waiting
 * (full: the sample is dropped and counted), thread-table changes seen
 * during a round are queued and applied after it.
 *
 * Per-thread choice states:
 *   NEW    --first tick--> sampled --> SETTLE
 *   SETTLE --next tick: schedstat moved by no more than our own interrupt
 *           (+2 switches, < 200 us) of a thread we found blocked--> IDLE;
 *           moved more --> sampled
 *   IDLE   --schedstat moved since the last tick--> sampled --> SETTLE
 *   any    --last sample found it running and schedstat has not moved-->
 *           sampled: a thread that never left the CPU gets no new time
 *           slice, and its run time only advances at scheduler ticks
 *           (4 ms at HZ=250), while switching out would have updated it.
 */
#define _GNU_SOURCE
#include "daemon-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define S_MAX_THREADS 16384
#define S_PENDING 8192

enum { ST_NEW, ST_SETTLE, ST_IDLE };

struct sthread {
	pid_t tid, pid;
	int fd; /* schedstat, -1 until opened */
	uint8_t state;
	bool oncpu; /* its last sample found it running, not in a syscall */
	uint64_t run_ns, run_count;
	uint32_t window;
};

struct pending {
	bool add;
	pid_t tid, pid;
};

/* owns: everything below (one per sampler thread) */
struct sampler {
	struct recorder *rec;
	struct pt_tracer *t;
	struct sthread *th; /* dense */
	unsigned n;
	int32_t *idx; /* tid hash -> index into th; -1 empty, -2 tombstone */
	unsigned cap, tombs;
	struct pending pend[S_PENDING];
	unsigned npend;
	bool resync;
	pid_t *chosen;
	uint64_t rng;
	uint32_t crash_id;
};

static unsigned h(pid_t tid, unsigned cap)
{
	return ((uint32_t)tid * 2654435761u) & (cap - 1);
}

static int find_slot(const struct sampler *s, pid_t tid)
{
	unsigned i = h(tid, s->cap);

	while (s->idx[i] != -1) {
		if (s->idx[i] >= 0 && s->th[s->idx[i]].tid == tid)
			return (int)i;
		i = (i + 1) & (s->cap - 1);
	}
	return -1;
}

static struct sthread *lookup(const struct sampler *s, pid_t tid)
{
	int k = find_slot(s, tid);

	return k < 0 ? NULL : &s->th[s->idx[k]];
}

static void rebuild_index(struct sampler *s)
{
	memset(s->idx, 0xff, s->cap * sizeof(*s->idx));
	for (unsigned k = 0; k < s->n; k++) {
		unsigned i = h(s->th[k].tid, s->cap);

		while (s->idx[i] != -1)
			i = (i + 1) & (s->cap - 1);
		s->idx[i] = (int32_t)k;
	}
	s->tombs = 0;
}

static void add_thread(struct sampler *s, pid_t tid, pid_t pid)
{
	unsigned i;

	if (lookup(s, tid) || s->n == S_MAX_THREADS)
		return;
	i = h(tid, s->cap);
	while (s->idx[i] >= 0)
		i = (i + 1) & (s->cap - 1);
	if (s->idx[i] == -2)
		s->tombs--;
	s->th[s->n] = (struct sthread){ .tid = tid, .pid = pid, .fd = -1, .state = ST_NEW,
		.window = s->rec->cfg.first_window };
	s->idx[i] = (int32_t)s->n++;
	atomic_fetch_add(&s->rec->threads_seen, 1);
	atomic_store(&s->rec->threads_live, s->n);
}

static void remove_thread(struct sampler *s, pid_t tid)
{
	int k = find_slot(s, tid), moved;

	if (k < 0)
		return;
	moved = s->idx[k];
	if (s->th[moved].fd >= 0)
		close(s->th[moved].fd);
	s->idx[k] = -2;
	s->tombs++;
	if ((unsigned)moved != s->n - 1) {
		int m = find_slot(s, s->th[s->n - 1].tid);

		s->th[moved] = s->th[s->n - 1];
		s->idx[m] = moved;
	}
	s->n--;
	atomic_store(&s->rec->threads_live, s->n);
	if (s->tombs > s->cap / 4)
		rebuild_index(s);
}

/* ---- callbacks of the rounds: the thread is stopped in slot_get */

static struct td_sample *slot_get(void *arg, pid_t pid, pid_t tid, uint32_t *ret_window)
{
	struct sampler *s = arg;
	struct sthread *st = lookup(s, tid);
	struct td_sample *smp = ring_reserve(&s->rec->samples);

	(void)pid;
	if (!smp)
		return NULL; /* ring full: dropped and counted, never waited for */
	*ret_window = st ? st->window : s->rec->cfg.first_window;
	return smp;
}

static void slot_put(void *arg, struct td_sample *smp)
{
	struct sampler *s = arg;
	struct recorder *r = s->rec;
	uint64_t n = atomic_fetch_add_explicit(&r->stop_n, 1, memory_order_relaxed);
	uint32_t us = smp->stopped_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)smp->stopped_ns;

	atomic_store_explicit(&r->stop_ns[n % REC_STOP_RING], us, memory_order_relaxed);
	{
		struct sthread *st = lookup(s, smp->tid);

		if (st)
			st->oncpu = !(smp->flags & (TD_SAMPLE_IN_SYSCALL | TD_SAMPLE_GROUP_STOPPED));
	}
	if (smp->stopped_ns > atomic_load_explicit(&r->stop_max, memory_order_relaxed))
		atomic_store_explicit(&r->stop_max, smp->stopped_ns, memory_order_relaxed);
	ring_publish(&r->samples);
	atomic_fetch_add_explicit(&r->samples_taken, 1, memory_order_relaxed);
}

static void push_event(struct sampler *s, const struct rec_event *e)
{
	struct rec_event *slot = ring_reserve(&s->rec->events);

	if (!slot) {
		atomic_fetch_add(&s->rec->lost_events, 1);
		return;
	}
	*slot = *e;
	ring_publish(&s->rec->events);
}

static void queue(struct sampler *s, bool add, pid_t tid, pid_t pid)
{
	if (s->npend == S_PENDING) {
		s->resync = true;
		return;
	}
	s->pend[s->npend++] = (struct pending){ add, tid, pid };
}

static void on_event(void *arg, const struct pt_event *ev)
{
	struct sampler *s = arg;
	struct rec_event e = { .pid = ev->pid, .tid = ev->tid, .old_tid = ev->old_tid,
		.signo = ev->signo, .status = ev->status, .addr = ev->addr, .time_ns = td_now_ns() };

	switch (ev->kind) {
	case PT_EVENT_THREAD_NEW:
		e.kind = REC_EV_THREAD_NEW;
		queue(s, true, ev->tid, ev->pid);
		break;
	case PT_EVENT_THREAD_EXIT:
		e.kind = REC_EV_THREAD_EXIT;
		queue(s, false, ev->tid, ev->pid);
		break;
	case PT_EVENT_EXEC:
		e.kind = REC_EV_EXEC;
		if (ev->old_tid != ev->tid)
			queue(s, false, ev->old_tid, ev->pid);
		break;
	case PT_EVENT_PROCESS_EXIT:
		e.kind = REC_EV_PROCESS_EXIT;
		atomic_fetch_sub(&s->rec->targets_live, 1);
		break;
	default:
		return; /* signals and group-stops pass through */
	}
	push_event(s, &e);
}

/* Fatal signals are held so that the stacks can be taken before the
 * process dies (handle_crash decides whether it is a crash at all). */
static bool on_hold(void *arg, const struct pt_event *ev)
{
	(void)arg;
	switch (ev->signo) {
	case SIGSEGV:
	case SIGBUS:
	case SIGABRT:
	case SIGFPE:
	case SIGILL:
	case SIGSYS:
		return true;
	}
	return false;
}

static const struct pt_round_ops round_ops = { slot_get, slot_put, on_event, on_hold };

static void apply_pending(struct sampler *s)
{
	for (unsigned i = 0; i < s->npend; i++) {
		if (s->pend[i].add)
			add_thread(s, s->pend[i].tid, s->pend[i].pid);
		else
			remove_thread(s, s->pend[i].tid);
	}
	s->npend = 0;
	if (s->resync) {
		/* more changes than the queue held: take the tracer's word */
		static pid_t tids[S_MAX_THREADS];
		int n = pt_tracer_threads(s->t, 0, tids, S_MAX_THREADS);

		for (int i = 0; i < n; i++)
			if (!lookup(s, tids[i]))
				add_thread(s, tids[i], 0);
		s->resync = false;
	}
}

static bool read_schedstat(struct sthread *st, uint64_t *ret_ns, uint64_t *ret_count)
{
	char buf[96];
	ssize_t n;
	char *p;

	if (st->fd < 0) {
		char path[64];

		if (!st->pid)
			return false;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)st->pid,
			(int)st->tid);
		st->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (st->fd < 0)
			return false;
	}
	n = pread(st->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	*ret_ns = strtoull(buf, &p, 10);
	strtoull(p, &p, 10); /* time waiting on a runqueue */
	*ret_count = strtoull(p, NULL, 10);
	return true;
}

/* Which threads to sample this tick. */
static unsigned choose(struct sampler *s)
{
	unsigned k = 0;

	for (unsigned i = 0; i < s->n; i++) {
		struct sthread *st = &s->th[i];
		uint64_t ns = 0, cnt = 0;
		uint32_t g = atomic_load_explicit(&s->rec->grow[st->tid % 1024],
			memory_order_relaxed);
		bool ran;

		if (g == (uint32_t)st->tid) {
			/* its stacks keep ending at the window's edge */
			st->window = st->window * 2 > s->rec->cfg.max_window ?
					     s->rec->cfg.max_window :
					     st->window * 2;
			atomic_store_explicit(&s->rec->grow[st->tid % 1024], 0,
				memory_order_relaxed);
		}
		if (!read_schedstat(st, &ns, &cnt)) {
			ran = st->state == ST_NEW; /* cannot tell: a new one once */
		} else if (st->state == ST_NEW) {
			ran = true;
		} else if (ns == st->run_ns && cnt == st->run_count) {
			ran = st->oncpu; /* still on the CPU it was on */
		} else if (st->state == ST_SETTLE && !st->oncpu && cnt - st->run_count <= 2 &&
			ns - st->run_ns < 200000) {
			ran = false; /* only our own interrupt moved it */
		} else {
			ran = true;
		}
		st->run_ns = ns;
		st->run_count = cnt;
		st->state = ran ? ST_SETTLE : ST_IDLE;
		if (ran)
			s->chosen[k++] = st->tid;
	}
	return k;
}

/* Does the program catch signo itself (a JVM's SIGSEGV)?  Then it is no
 * crash. */
static bool signal_caught(pid_t pid, pid_t tid, int signo)
{
	char path[64], buf[2048], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (td_read_text(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return false;
	p = strstr(buf, "\nSigCgt:");
	return p && (strtoull(p + 8, NULL, 16) >> (signo - 1) & 1);
}

/* A thread is held in a fatal signal's delivery stop: take every thread's
 * stack, have the writer write the crash and finish and sync the chunk,
 * then let the signal go on so that the target dies exactly as it would
 * have.  The crashing thread is held on purpose; the wait for the
 * writer is bounded (3 s) and the other threads run meanwhile. */
static void handle_crash(struct sampler *s)
{
	struct recorder *r = s->rec;
	struct rec_event e = { .kind = REC_EV_CRASH };
	struct sthread *st;
	uint64_t deadline;
	unsigned k = 0;
	pid_t tid = pt_tracer_held(s->t, &e.signo, &e.addr);

	if (!tid)
		return;
	st = lookup(s, tid);
	e.pid = st ? st->pid : 0;
	e.tid = tid;
	if (!e.pid || signal_caught(e.pid, tid, e.signo)) {
		pt_tracer_release(s->t, tid);
		return;
	}
	e.crash_id = ++s->crash_id;
	e.time_ns = td_now_ns();
	push_event(s, &e);
	for (unsigned i = 0; i < s->n; i++)
		if (s->th[i].pid == e.pid)
			s->chosen[k++] = s->th[i].tid;
	pt_tracer_sample(s->t, s->chosen, k, &round_ops, s, 200, 0, NULL);
	apply_pending(s);
	e.kind = REC_EV_CRASH_DONE;
	push_event(s, &e);
	atomic_fetch_add(&r->crashes, 1);
	rec_wake(r->writer_wake);
	deadline = td_now_ns() + 3000000000ull;
	while (atomic_load(&r->crash_acked) != e.crash_id && td_now_ns() < deadline &&
		!atomic_load(&r->writer_done)) {
		struct pollfd pfd[2] = { { pt_tracer_fd(s->t), POLLIN, 0 },
			{ r->sampler_wake, POLLIN, 0 } };
		uint64_t junk;

		poll(pfd, 2, 50);
		if (pfd[1].revents & POLLIN && read(r->sampler_wake, &junk, sizeof(junk)) < 0)
			junk = 0;
		if (pfd[0].revents & POLLIN) {
			pt_tracer_poll(s->t, &round_ops, s);
			apply_pending(s);
		}
	}
	pt_tracer_release(s->t, tid);
}

static uint64_t next_period(struct sampler *s)
{
	uint64_t period = 1000000000u / s->rec->cfg.hz;

	s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
	/* uniform in [0.9, 1.1) x period */
	return period - period / 10 + (s->rng >> 33) % (period / 5 + 1);
}

static int attach_all(struct sampler *s)
{
	struct recorder *r = s->rec;

	for (unsigned i = 0; i < r->cfg.npids; i++) {
		static pid_t tids[S_MAX_THREADS];
		int n = pt_tracer_attach(s->t, r->cfg.pids[i]);

		if (n < 0) {
			r->attach_err = n;
			r->attach_pid = r->cfg.pids[i];
			return n;
		}
		n = pt_tracer_threads(s->t, r->cfg.pids[i], tids, S_MAX_THREADS);
		for (int k = 0; k < n; k++) {
			struct rec_event e = { .kind = REC_EV_THREAD_NEW, .pid = r->cfg.pids[i],
				.tid = tids[k], .time_ns = td_now_ns() };

			add_thread(s, tids[k], r->cfg.pids[i]);
			push_event(s, &e);
		}
	}
	atomic_store(&r->targets_live, r->cfg.npids);
	return 0;
}

void *sampler_main(void *arg)
{
	struct recorder *r = arg;
	struct pt_config pc = { .max_threads = S_MAX_THREADS, .trace_clone = true,
		.trace_exec = true };
	struct sampler *s = calloc(1, sizeof(*s));
	struct itimerspec its = { 0 };
	uint64_t start, next;
	int tfd = -1, e;

	if (!s)
		goto out_fail;
	/* The sampler sleeps but for the microseconds it holds a target
	 * thread: then nothing of the target's may keep it off a CPU.  It
	 * stays at nice -10 (when allowed) rather than paying two system
	 * calls per round to change it. */
	setpriority(PRIO_PROCESS, (id_t)gettid(), -10);
	pthread_setname_np(pthread_self(), "tracerd-sample");
	s->rec = r;
	s->rng = td_now_ns() | 1;
	s->cap = 4 * S_MAX_THREADS;
	s->th = calloc(S_MAX_THREADS, sizeof(*s->th));
	s->idx = malloc(s->cap * sizeof(*s->idx));
	s->chosen = calloc(S_MAX_THREADS, sizeof(*s->chosen));
	if (!s->th || !s->idx || !s->chosen)
		goto out_fail;
	memset(s->idx, 0xff, s->cap * sizeof(*s->idx));
	e = pt_tracer_new(&pc, &s->t);
	if (e < 0) {
		r->attach_err = e;
		goto out_fail;
	}
	if (attach_all(s) < 0)
		goto out_fail;
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (tfd < 0) {
		r->attach_err = -errno;
		goto out_fail;
	}
	atomic_store(&r->attach_state, 1);
	rec_wake(r->main_wake);

	start = next = td_now_ns();
	while (!atomic_load(&r->stop)) {
		struct pollfd pfd[3] = { { tfd, POLLIN, 0 }, { pt_tracer_fd(s->t), POLLIN, 0 },
			{ r->sampler_wake, POLLIN, 0 } };
		uint64_t now, junk;

		next += next_period(s);
		now = td_now_ns();
		if (next < now)
			next = now + next_period(s) / 2; /* fell behind: no burst */
		its.it_value.tv_sec = (time_t)(next / 1000000000u);
		its.it_value.tv_nsec = (long)(next % 1000000000u);
		timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
		for (;;) {
			if (poll(pfd, 3, 1000) < 0 && errno != EINTR)
				break;
			if (pfd[1].revents & POLLIN) {
				pt_tracer_poll(s->t, &round_ops, s);
				apply_pending(s);
				handle_crash(s);
			}
			if (pfd[2].revents & POLLIN)
				if (read(r->sampler_wake, &junk, sizeof(junk)) < 0)
					junk = 0;
			if ((pfd[0].revents & POLLIN) || atomic_load(&r->stop) ||
				atomic_load(&r->targets_live) <= 0)
				break;
		}
		if (read(tfd, &junk, sizeof(junk)) < 0)
			junk = 0;
		if (atomic_load(&r->stop) || atomic_load(&r->targets_live) <= 0)
			break;
		if (r->cfg.duration_ns && td_now_ns() - start >= r->cfg.duration_ns)
			break;
		{
			struct pt_round_stats st;
			unsigned k = choose(s);

			atomic_fetch_add(&r->ticks, 1);
			if (k) {
				pt_tracer_sample(s->t, s->chosen, k, &round_ops, s, 100, 0, &st);
				atomic_fetch_add(&r->lost_ring, st.dropped);
				atomic_fetch_add(&r->lost_not_stopped, st.timeout);
				/* the writer polls every 50 ms; wake it early only
				 * when the ring fills */
				if (ring_used(&r->samples) > r->samples.cap / 4)
					rec_wake(r->writer_wake);
			}
			apply_pending(s);
			handle_crash(s);
		}
	}
	/* Resume and detach every thread (batched), whatever happens. */
	pt_tracer_free(s->t);
	s->t = NULL;
	goto out;
out_fail:
	atomic_store(&r->attach_state, -1);
	rec_wake(r->main_wake);
out:
	if (tfd >= 0)
		close(tfd);
	if (s) {
		pt_tracer_free(s->t);
		for (unsigned i = 0; i < s->n; i++)
			if (s->th[i].fd >= 0)
				close(s->th[i].fd);
		free(s->th);
		free(s->idx);
		free(s->chosen);
		free(s);
	}
	atomic_store(&r->sampler_done, 1);
	rec_wake(r->writer_wake);
	rec_wake(r->main_wake);
	return NULL;
}
