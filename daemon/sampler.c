/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sampler thread: the only thread of tracerd that calls ptrace, and so
 * the tracer of every target thread, and the only one that stops a target
 * thread.  It never interrupts a thread that is blocked in a system call.
 *
 * cpu mode, perf capture (the default where permitted): the kernel samples
 * each thread every 1/HZ of the CPU time it uses, at a random period
 * (ptrace/perf.c); this thread adds and removes threads as they come and
 * go, and moves the samples into the sample ring every 100 ms (sooner when
 * the kernel's ring is a quarter full).  No target thread is ever stopped
 * for a sample.
 *
 * cpu mode, ptrace capture (perf not permitted): on each tick (random,
 * uniform over +-50% of 1/HZ, so that it cannot lock onto a periodic
 * workload) credit each thread the CPU time it used (schedstat through
 * kept-open fds); when a timer on a target process's CPU-time clock fires
 * (sampler-cpu.c: one of its threads runs now), pick its threads that are
 * owed CPU time and not blocked now (/proc/.../syscall), and sample them
 * in one windowed round of interrupts.
 *
 * wall mode: on each tick every thread: a blocked one is copied without a
 * stop (ptrace/blocked.c), or, when nothing changed since its last copy
 * (same call, same place, same schedstat), repeated without a copy; a
 * running one is sampled in the round of interrupts (that tick:
 * sampler-wall.c; sampler-internal.h has the parts).  A thread in a
 * job-control stop is interrupted once for its registers, then repeated,
 * in state stopped (it is out of its system call already: the kernel
 * restarts the call at SIGCONT, whatever the tracer does meanwhile).
 *
 * While a target thread is stopped this thread neither allocates, logs,
 * opens files nor takes a lock: the ring slot is reserved without waiting
 * (full: the sample is dropped and counted), thread-table changes seen
 * during a round are queued by the target set (targets.c) and applied
 * after it.  A round waits at most one tick for its stops; a thread that
 * misses three rounds in a row is left out for a while (ptrace.c).
 *
 * Owns: struct sampler (allocated and freed here, on this thread), the
 * tracer and through it every attached thread, the perf rings, the /proc
 * fds.  Writes in struct rec_shared: the samples, events and answers
 * rings (producer), the asks ring's head (consumer), attach_*, targets,
 * capture, perf_err, heartbeat_ns, the sampler's counters (children_*
 * and the triggers' trig[] too), sampler_policy and its err, targets_live,
 * sampler_done, and the fit[] requests it takes (back to 0 by
 * compare-exchange).  Reads: stop, io_err, crash_acked, exit_acked,
 * maps_read[], writer_done, fit[].
 *
 * Choice in cpu mode with ptrace capture: a sample stands for a period
 * (1/HZ) of CPU time, as perf's do.  Each tick adds to every thread's
 * credit the CPU time schedstat says it used since the last tick; a thread
 * owed at least a period, and not blocked in a system call now, is
 * stopped, and its sample is written once per whole period owed (the rest
 * stays owed; a stop that does not come keeps it all).  So a late tick (a
 * loaded machine, a rate it cannot give) takes fewer stops, for every
 * thread alike, without tilting the shares: four spinners on two CPUs
 * read as the scheduler shared them, not as equals.  schedstat's run time
 * of a thread that never leaves the CPU advances only at scheduler ticks
 * (4 ms at HZ=250): one whose last stop found it running and that has not
 * been switched since is credited the time since the last tick ahead of
 * schedstat, at most 10 ms ahead; schedstat catching up pays that back
 * first, so the totals stay schedstat's.  A thread blocked in a system
 * call now is not stopped (a stop would place its CPU time at the call)
 * and keeps its credit for a stop that finds it running; what is never
 * paid is counted (sampler-cpu.c), never put on a blocked stack.
 */
#define _GNU_SOURCE
#include "sampler-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static struct sthread *lookup(const struct sampler *s, pid_t tid)
{
	uint64_t k;

	return td_map_get(&s->idx, (uint32_t)tid, &k) ? &s->th[k] : NULL;
}

static void close_fds(struct sthread *st)
{
	if (st->fd >= 0)
		close(st->fd);
	if (st->sys_fd >= 0)
		close(st->sys_fd);
	if (st->stat_fd >= 0)
		close(st->stat_fd);
	if (st->kstack_fd >= 0)
		close(st->kstack_fd);
	st->fd = st->sys_fd = st->stat_fd = st->kstack_fd = -1;
}

static int open_task_file(const struct sthread *st, const char *name)
{
	char path[80];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)st->pid, (int)st->tid, name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The thread's kept-open schedstat and syscall files; false if it has no
 * process id yet or is gone. */
bool probe_fds(struct sthread *st)
{
	if (!st->pid)
		return false;
	if (st->fd < 0)
		st->fd = open_task_file(st, "schedstat");
	if (st->sys_fd < 0)
		st->sys_fd = open_task_file(st, "syscall");
	return st->fd >= 0 && st->sys_fd >= 0;
}

/* The CPU a thread last ran on (field 39 of stat), -1 if unknown. */
int last_cpu(struct sthread *st)
{
	char buf[512], *p;
	ssize_t n;
	int field = 3;

	if (st->stat_fd < 0)
		st->stat_fd = open_task_file(st, "stat");
	if (st->stat_fd < 0 || (n = pread(st->stat_fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	for (p += 2; *p && field < 39; p++)
		if (*p == ' ')
			field++;
	return field == 39 ? atoi(p) : -1;
}

/* In uninterruptible sleep (D): waiting for the disk or the like. */
bool in_disk_wait(struct sthread *st, char ret_name[16])
{
	char buf[512], *p, *name;
	ssize_t n;

	if (st->stat_fd < 0)
		st->stat_fd = open_task_file(st, "stat");
	if (st->stat_fd < 0 || (n = pread(st->stat_fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the name may hold anything, even ") D" */
	name = strchr(buf, '(');
	if (p && name && p - name - 1 < 16) {
		memcpy(ret_name, name + 1, (size_t)(p - name - 1));
		ret_name[p - name - 1] = '\0';
	}
	return p && p[1] == ' ' && p[2] == 'D';
}

/* The largest window of a thread: perf's copies end at the kernel's limit
 * (PT_PERF_MAX_STACK), a copy by ptrace at --stack-bytes. */
static uint32_t window_max(const struct sampler *s, const struct sthread *st)
{
	return st->perf ? TD_MIN(s->cfg->max_window, (uint32_t)PT_PERF_MAX_STACK) :
			  s->cfg->max_window;
}

static void add_thread(struct sampler *s, pid_t tid, pid_t pid)
{
	if (lookup(s, tid) || s->n == S_MAX_THREADS)
		return;
	if (td_map_set(&s->idx, (uint32_t)tid, s->n) < 0)
		return; /* cannot happen: sized for S_MAX_THREADS */
	s->th[s->n] = (struct sthread){ .tid = tid, .pid = pid, .fd = -1, .sys_fd = -1,
		.stat_fd = -1, .kstack_fd = -1, .state = ST_NEW, .window = s->cfg->first_window };
	/* -ESRCH: gone already, its exit follows; another error (out of fds
	 * or the perf limit): the kernel does not sample it.  The kernel's
	 * copies start whole (all a sample may hold) and shrink to what the
	 * thread's unwinds use (maybe_fit): a stack cut in the first samples,
	 * before a request to grow comes back, could not be mended (the
	 * thread has moved on); a copy by ptrace starts small and grows at
	 * its first cut. */
	if (s->perf && pid) {
		s->th[s->n].perf = true;
		s->th[s->n].window = window_max(s, &s->th[s->n]);
		s->th[s->n].perf = pt_perf_add(s->perf, pid, tid, s->th[s->n].window) == 0;
		if (!s->th[s->n].perf)
			s->th[s->n].window = s->cfg->first_window;
	}
	if (!s->th[s->n].perf)
		s->nonperf++;
	s->n++;
	atomic_fetch_add(&s->sh->threads_seen, 1);
	atomic_store(&s->sh->threads_live, s->n);
}

static void remove_thread(struct sampler *s, pid_t tid)
{
	uint64_t k;

	if (!td_map_get(&s->idx, (uint32_t)tid, &k))
		return;
	close_fds(&s->th[k]);
	if (s->th[k].perf)
		pt_perf_remove(s->perf, tid);
	else
		s->nonperf--;
	cpu_missed_add(s, s->th[k].cpu_credit); /* owed, never to be paid */
	td_map_remove(&s->idx, (uint32_t)tid);
	if (k != s->n - 1) {
		/* the last one fills the hole; a replace never fails */
		s->th[k] = s->th[s->n - 1];
		td_map_set(&s->idx, (uint32_t)s->th[k].tid, k);
	}
	s->n--;
	atomic_store(&s->sh->threads_live, s->n);
}

/* Apply a pending window request of the writer (fit[]): all there is
 * after a cut stack, less after a while of unwinds that used less.  A
 * perf thread's events are reopened for it after the drain (the kernel
 * copies what they were opened with): a larger window takes effect at
 * once (the slots are larger than the copies until then), a smaller one
 * only with the new events, so that no copy in between is cut. */
void maybe_fit(struct sampler *s, struct sthread *st)
{
	_Atomic uint64_t *f = &s->sh->fit[st->tid % REC_FIT_SLOTS];
	uint64_t v = atomic_load_explicit(f, memory_order_relaxed);
	uint32_t want = (uint32_t)v;

	if ((uint32_t)(v >> 32) != (uint32_t)st->tid)
		return;
	if (st->perf && s->nresize == TD_ARRAY_SIZE(s->resize))
		return; /* left in fit[] for a later drain */
	/* taken only if it is still this request: the writer may have
	 * stored another since the load (lock-free: a target thread may be
	 * stopped now) */
	if (!atomic_compare_exchange_strong_explicit(f, &v, 0, memory_order_relaxed,
		    memory_order_relaxed))
		return;
	want = TD_MIN(TD_MAX(want, (uint32_t)S_MIN_WINDOW), window_max(s, st)) & ~7u;
	if (!st->perf) {
		st->window = want; /* the next copy by ptrace copies it */
		return;
	}
	if (want > st->window)
		st->window = want;
	s->resize[s->nresize].tid = st->tid;
	s->resize[s->nresize++].window = want;
}

/* The perf threads whose window changed: their events copy the new one. */
static void apply_resizes(struct sampler *s)
{
	for (unsigned i = 0; i < s->nresize; i++) {
		struct sthread *st = lookup(s, s->resize[i].tid);

		if (!st || !st->perf)
			continue;
		if (pt_perf_resize(s->perf, st->tid, s->resize[i].window) < 0) {
			st->perf = false; /* no longer sampled by the kernel */
			s->nonperf++;
			continue;
		}
		st->window = s->resize[i].window;
	}
	s->nresize = 0;
}

/* ---- callbacks of the rounds: the thread is stopped in slot_get */

static struct td_sample *slot_get(void *arg, pid_t pid, pid_t tid, uint32_t *ret_window)
{
	struct sampler *s = arg;
	struct sthread *st = lookup(s, tid);
	struct td_sample *smp;

	uint32_t need = *ret_window;

	(void)pid;
	if (st && s->perf)
		maybe_fit(s, st); /* no tick visits the threads in perf capture */
	*ret_window = st ? st->window : s->cfg->first_window;
	/* the kernel's copy is there already: its size, not the window's */
	if (need && need < *ret_window)
		*ret_window = need;
	smp = ring_reserve_bytes(&s->sh->samples, td_sample_size(*ret_window));
	if (!smp)
		return NULL; /* ring full: dropped and counted, never waited for */
	return smp;
}

/* A sample of pid's current image is on its way to the writer: its
 * leader's exit may have to wait for the writer (on_hold_exit). */
void mark_sampled(struct sampler *s, pid_t pid)
{
	struct target *tg = targets_find(&s->targets, pid);

	if (tg)
		tg->sampled = true;
}

/* A sample taken by the kernel (nothing was stopped), or a stack at a
 * death: no sampling stop, and a death's is not a sample of the profile.
 * An interval off a CPU covers its thread's time off CPUs from now on. */
static void put_unstopped(struct sampler *s, struct td_sample *smp)
{
	struct rec_shared *sh = s->sh;
	struct sthread *st;
	uint32_t periods = 0;

	if ((smp->flags & TD_SAMPLE_OFFCPU) && (st = lookup(s, smp->tid))) {
		bool stopped = pt_tracer_group_stopped(s->t, st->tid);

		smp->runnable = offcpu_runnable(s, st, smp->flags, smp->weight);
		if (!(smp->flags & TD_SAMPLE_RUNNABLE) && (st->stop_seen || stopped)) {
			/* it left the CPU for a job-control stop (a thread
			 * stops at once as it takes the signal): the interval
			 * is the stop, and what it waited for a CPU after
			 * SIGCONT runnable */
			smp->flags |= TD_SAMPLE_GROUP_STOPPED;
			st->stop_seen = stopped;
		} else if (st->last_disk && (smp->flags & TD_SAMPLE_IN_SYSCALL)) {
			smp->flags |= TD_SAMPLE_DISK;
		}
	} else if ((smp->flags & TD_SAMPLE_PERF) && !(smp->flags & TD_SAMPLE_REPEAT) &&
		   (st = lookup(s, smp->tid)) && st->owner_asked_ns &&
		   smp->time_ns >= st->owner_asked_ns) {
		/* a lock's owner sampled since an early sample was asked of it
		 * (owners_chosen): asked no more for that holding */
		st->owner_took = st->owner_tick;
		st->owner_asked_ns = 0;
	}
	/* a lock owner's early sample (weight 0) is a stack for the waits,
	 * no period of the profile: taken as many periods as the writer
	 * writes rows of it (none), as put_stopped's owner stops */
	if ((smp->flags & TD_SAMPLE_PERF) && !(smp->flags & TD_SAMPLE_OWNER))
		periods = (smp->flags & TD_SAMPLE_WEIGHTED) ? smp->weight : 1;
	mark_sampled(s, smp->pid);
	ring_publish_bytes(&sh->samples, td_sample_size(smp->stack_len));
	if (periods)
		atomic_fetch_add_explicit(&sh->samples_taken, periods, memory_order_relaxed);
}

/* A sample of a sampling stop: its stopped time counted, and the periods
 * of CPU time it stands for (cpu mode with ptrace capture) paid. */
static void put_stopped(struct sampler *s, struct td_sample *smp)
{
	struct rec_shared *sh = s->sh;
	struct sthread *st = lookup(s, smp->tid);
	uint64_t n = atomic_fetch_add_explicit(&sh->stop_n, 1, memory_order_relaxed);
	uint32_t ns = smp->stopped_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)smp->stopped_ns;
	uint32_t weight = 1;

	atomic_store_explicit(&sh->stop_ns[n % REC_STOP_RING], ns, memory_order_relaxed);
	if (st && s->cfg->mode == REC_MODE_CPU && !(smp->flags & TD_SAMPLE_HELD) &&
		cpu_stop_in_wait(s, smp)) {
		/* it came to a wait before it stopped: its stack is where it
		 * waits, not where it ran; the slot is not published, the
		 * credit stays owed */
		st->oncpu = false;
		st->take = 0;
		return;
	}
	mark_sampled(s, smp->pid);
	if (st && st->owner_tick && st->owner_tick == s->tick_ns && !(smp->flags & TD_SAMPLE_HELD)) {
		/* stopped for a lock's owner's stack (wall_tick): the kernel
		 * samples its CPU time */
		smp->flags |= TD_SAMPLE_OWNER;
		weight = 0;
		st->owner_took = s->tick_ns;
		atomic_fetch_add_explicit(&sh->owner_stops, 1, memory_order_relaxed);
	} else if (st) {
		st->oncpu = !(smp->flags & (TD_SAMPLE_IN_SYSCALL | TD_SAMPLE_GROUP_STOPPED));
		st->stop_copied = smp->flags & TD_SAMPLE_GROUP_STOPPED;
		if (st->take) {
			/* the periods it was owed: paid now */
			weight = st->take;
			smp->flags |= TD_SAMPLE_WEIGHTED;
			smp->weight = weight;
			st->cpu_credit -= (uint64_t)weight * (1000000000u / s->cfg->hz);
			st->take = 0;
		}
	}
	if (smp->stopped_ns > atomic_load_explicit(&sh->stop_max, memory_order_relaxed))
		atomic_store_explicit(&sh->stop_max, smp->stopped_ns, memory_order_relaxed);
	ring_publish_bytes(&sh->samples, td_sample_size(smp->stack_len));
	atomic_fetch_add_explicit(&sh->samples_taken, weight, memory_order_relaxed);
}

static void slot_put(void *arg, struct td_sample *smp)
{
	struct sampler *s = arg;

	if (smp->pid == s->held_pid && smp->time_ns < s->held_exec_ns)
		return; /* the command before its exec: not published */
	if (smp->flags & (TD_SAMPLE_PERF | TD_SAMPLE_DEATH))
		put_unstopped(arg, smp);
	else
		put_stopped(arg, smp);
}

static bool push_event(struct sampler *s, const struct rec_event *e)
{
	struct rec_event *slot = ring_reserve(&s->sh->events);

	if (!slot) {
		atomic_fetch_add(&s->sh->lost_events, 1);
		return false;
	}
	*slot = *e;
	ring_publish(&s->sh->events);
	return true;
}

/* ---- the target set's view of the thread table (targets.c) */

static void on_thread_add(void *arg, pid_t pid, pid_t tid, bool found)
{
	struct sampler *s = arg;

	add_thread(s, tid, pid);
	if (!found && lookup(s, tid))
		lookup(s, tid)->born = true;
	if (pid == s->held_pid && s->held_exec_ns == UINT64_MAX && lookup(s, tid)) {
		/* the command waits for us before its exec: not its time */
		lookup(s, tid)->leaving = true;
		if (s->perf)
			pt_perf_begin(s->perf, tid, UINT64_MAX);
	}
	if (found) {
		/* there before we attached: no clone event told the writer */
		struct rec_event e = { .kind = REC_EV_THREAD_NEW, .pid = pid, .tid = tid,
			.time_ns = td_now_ns() };
		struct target *tg = targets_find(&s->targets, pid);

		e.image = tg ? tg->image : 0;
		push_event(s, &e);
		/* a process just attached: the writer takes its baselines (its
		 * cgroup's OOM kills) now, before anything can happen to it */
		s->wake_writer = true;
	}
}

static void on_thread_remove(void *arg, pid_t tid)
{
	remove_thread(arg, tid);
}

static bool on_thread_known(void *arg, pid_t tid)
{
	return lookup(arg, tid) != NULL;
}

static const struct targets_ops thread_ops = { on_thread_add, on_thread_remove,
	on_thread_known };

static void on_event(void *arg, const struct pt_event *ev)
{
	struct sampler *s = arg;
	struct rec_event e = { .pid = ev->pid, .tid = ev->tid, .old_tid = ev->old_tid,
		.signo = ev->signo, .status = ev->status, .addr = ev->addr, .time_ns = td_now_ns() };
	/* the live target the event is about, found before targets_note
	 * ends it (a process's exit); an exec renumbers its image in place */
	struct target *tg = targets_find(&s->targets, ev->pid);
	struct sthread *st;

	if (targets_note(&s->targets, ev)) {
		atomic_store(&s->sh->targets_live, (int)targets_live(&s->targets));
		if (tg)
			e.start_time = tg->id.start_time;
		else
			tg = targets_find(&s->targets, ev->pid); /* a child, new */
	}
	e.image = tg ? tg->image : 0;
	if (ev->kind == PT_EVENT_EXEC && ev->pid == s->held_pid && s->held_exec_ns == UINT64_MAX)
		/* the command runs its program from here on; the time off a
		 * CPU at this exec stop is ours */
		s->held_exec_ns = e.time_ns;
	if (ev->kind == PT_EVENT_EXEC && (st = lookup(s, ev->tid))) {
		/* the leader's tid, held at its exit during the exec
		 * (de_thread), names the thread that exec'ed now */
		st->leaving = false;
		if (s->perf) {
			pt_perf_end(s->perf, ev->tid, 0);
			pt_perf_begin(s->perf, ev->tid,
				ev->pid == s->held_pid ? s->held_exec_ns : 0);
		}
	}
	switch (ev->kind) {
	case PT_EVENT_THREAD_NEW:
		e.kind = REC_EV_THREAD_NEW;
		break;
	case PT_EVENT_THREAD_EXIT:
		e.kind = REC_EV_THREAD_EXIT;
		break;
	case PT_EVENT_EXEC:
		e.kind = REC_EV_EXEC;
		break;
	case PT_EVENT_PROCESS_NEW:
		/* a child followed: its first thread, as one born */
		e.kind = REC_EV_THREAD_NEW;
		atomic_fetch_add_explicit(&s->sh->children_followed, 1, memory_order_relaxed);
		break;
	case PT_EVENT_CHILD_LEFT:
		atomic_fetch_add_explicit(&s->sh->children_left, 1, memory_order_relaxed);
		if (ev->status)
			atomic_fetch_add_explicit(&s->sh->children_full, 1, memory_order_relaxed);
		return;
	case PT_EVENT_PROCESS_EXIT:
		e.kind = REC_EV_PROCESS_EXIT;
		/* the writer tells a death and its cause (an OOM kill, read
		 * from its cgroup's count) at once, not at its next look */
		s->wake_writer = true;
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

/* Perf capture in wall mode: a thread scheduled in since its last look
 * may have left the wait that look found. */
static void on_switch(void *arg, pid_t tid, bool in)
{
	struct sthread *st = in ? lookup(arg, tid) : NULL;

	if (st)
		st->ins++;
}

static bool stopping(struct rec_shared *sh);
static void wake_writer_owed(struct sampler *s);

/* A thread at its exit stop.  The leader of a process whose samples the
 * writer may still have to unwind (sampled since its last exec, and no
 * session of that image published in maps_read) is held there, its
 * mappings intact, until the writer has come to its exit (exit_holds).
 * Any other exit goes on at once. */
static bool on_hold_exit(void *arg, pid_t pid, pid_t tid)
{
	struct sampler *s = arg;
	struct target *tg = targets_find(&s->targets, pid);
	struct sthread *st = lookup(s, tid);

	/* from its exit stop on, its time off a CPU is ours (the stop lasts
	 * until we come to it, held or not), not the program's */
	if (s->perf)
		pt_perf_end(s->perf, tid, td_now_ns());
	/* with perf capture, what the kernel sampled is not drained yet:
	 * exit_holds decides after the drain */
	if (tid != pid || !tg || !(tg->sampled || s->perf) || s->nexits == s->max_exits ||
		stopping(s->sh))
		return false;
	if (atomic_load_explicit(&s->sh->maps_read[(uint32_t)pid % REC_READ_SLOTS],
		    memory_order_acquire) == ((uint64_t)(uint32_t)pid << 32 | tg->image))
		return false; /* the writer has its mappings */
	s->exits[s->nexits++] = (struct exit_hold){ .tid = tid };
	if (st)
		st->leaving = true;
	return true;
}

static const struct pt_round_ops round_ops = { slot_get, slot_put, on_event, on_hold,
	on_switch, on_hold_exit };

/* After a round: the thread changes it saw. */
static void apply_pending(struct sampler *s)
{
	targets_apply(&s->targets, &thread_ops, s);
}

/* The time since the previous tick (a period at the first), and this
 * tick's time for the next. */
uint64_t tick_dt(struct sampler *s, uint64_t period)
{
	uint64_t now = td_now_ns(), dt = s->tick_ns ? now - s->tick_ns : period;

	s->tick_ns = now;
	return dt;
}

/* cpu mode with ptrace capture: which threads to interrupt this tick.
 * Those owed at least a period of CPU time (see the header) and not
 * blocked now; a blocked thread is on no CPU, and interrupting it could
 * make its call return EINTR.  Each chosen thread's take says how many
 * periods its sample stands for. */
static unsigned choose(struct sampler *s)
{
	uint64_t period = 1000000000u / s->cfg->hz, dt = tick_dt(s, period);
	uint64_t cap = 1000000000u + period;
	unsigned k = 0;

	cpu_timers_sync(s);
	for (unsigned i = 0; i < s->n; i++) {
		struct sthread *st = &s->th[i];
		struct pt_blocked b;
		uint64_t credited;
		int r;

		st->take = 0;
		if (st->perf || st->leaving)
			continue; /* the kernel samples it, or it is held at its exit */
		r = probe_fds(st) ? pt_blocked_probe(st->sys_fd, st->fd, &b) : -ENOENT;

		maybe_fit(s, st);
		if (r < 0)
			continue; /* gone, or no pid yet: its exit or pid follows */
		if (st->state == ST_NEW) {
			/* found at attach: from now on; cloned since: all of it */
			st->credited = st->born ? 0 : b.run_ns;
			st->cpu_credit = 0;
			st->state = ST_SETTLE;
		}
		credited = TD_MAX(st->credited, b.run_ns);
		if (r == 0 && st->oncpu && b.run_ns == st->run_ns && b.run_count == st->run_count)
			/* still on the CPU its last stop found it on: ahead of
			 * schedstat, which lags until the next scheduler tick */
			credited = TD_MAX(credited, TD_MIN(st->credited + dt, b.run_ns + S_AHEAD_NS));
		st->cpu_credit += credited - st->credited;
		if (st->cpu_credit > cap) {
			/* owed more than a second: never caught running */
			cpu_missed_add(s, st->cpu_credit - cap);
			st->cpu_credit = cap;
		}
		st->credited = credited;
		st->run_ns = b.run_ns;
		st->run_count = b.run_count;
		if (r == 1) {
			/* blocked in a system call now: a stop would place its
			 * CPU time at the call; it stays owed */
			st->oncpu = false;
			continue;
		}
		if (st->cpu_credit < period)
			continue;
		if (st->timer && !s->timers[st->timer - 1].fired)
			continue; /* its process's CPU-time timer stops it */
		st->take = (uint32_t)(st->cpu_credit / period);
		s->chosen[k++] = st->tid;
	}
	for (unsigned i = 0; i < S_MAX_TIMERS; i++)
		s->timers[i].fired = false;
	s->fired = false;
	atomic_fetch_add_explicit(&s->sh->trig[REC_TRIG_FOUND], k, memory_order_relaxed);
	if (!k)
		s->fired_ns = 0;
	return k;
}


/* cpu mode: of the group, those not blocked now.  A thread in short
 * bursts may have ended its burst while this thread moved onto its CPU;
 * stopped now, it would stop in its next wait (measured: 8-15% of a
 * 50 us burst worker's samples at its read, none with perf), a stack
 * where it did not run.  Those keep their credit (choose). */
static unsigned still_running(struct sampler *s, unsigned m)
{
	unsigned k = 0;

	for (unsigned i = 0; i < m; i++) {
		struct sthread *st = lookup(s, s->group[i]);
		struct pt_blocked b;

		if (st && st->fd >= 0 && st->sys_fd >= 0 &&
			pt_blocked_probe(st->sys_fd, st->fd, &b) == 1) {
			st->take = 0;
			st->oncpu = false;
			atomic_fetch_add_explicit(&s->sh->trig[REC_TRIG_ENDED], 1,
				memory_order_relaxed);
			continue;
		}
		s->group[k++] = s->group[i];
	}
	return k;
}

/* Interrupt the chosen threads from the CPU each is on.  A stop requested
 * from another CPU lands where the thread next enters the kernel, not where
 * it was (measured: a thread spinning 25 us between getppid calls was
 * stopped at getppid 96% of the time from another CPU, 4% from its own).
 * Moving this thread onto the target's CPU first preempts the target
 * there, so the stop lands where it was preempted. */
static void round_by_cpu(struct sampler *s, unsigned k, int budget, struct pt_round_stats *ret)
{
	static cpu_set_t all;
	static bool have_all;
	unsigned done = 0;

	*ret = (struct pt_round_stats){ 0 };
	if (!have_all) {
		have_all = sched_getaffinity(0, sizeof(all), &all) == 0;
		if (!have_all)
			CPU_ZERO(&all);
	}
	/* group by CPU: s->cpu_of[i] for chosen[i]; -1 last */
	for (unsigned i = 0; i < k; i++) {
		struct sthread *st = lookup(s, s->chosen[i]);

		s->cpu_of[i] = st ? last_cpu(st) : -1;
	}
	while (done < k) {
		int cpu = -2;
		unsigned m = 0;

		for (unsigned i = 0; i < k; i++) {
			if (s->cpu_of[i] == -3)
				continue;
			if (cpu == -2)
				cpu = s->cpu_of[i];
			if (s->cpu_of[i] == cpu) {
				s->group[m++] = s->chosen[i];
				s->cpu_of[i] = -3;
			}
		}
		if (!m)
			break;
		done += m;
		if (cpu >= 0 && have_all && CPU_ISSET(cpu, &all)) {
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			sched_setaffinity(0, sizeof(one), &one);
		}
		if (s->cfg->mode == REC_MODE_CPU)
			m = still_running(s, m);
		if (!m)
			continue;
		if (s->fired_ns) {
			/* the sampler's part of a fire's delay (the wake-up's
			 * is not seen from here: docs/notes/ptrace.md) */
			atomic_fetch_add_explicit(&s->sh->trig[REC_TRIG_LATE_NS],
				td_now_ns() - s->fired_ns, memory_order_relaxed);
			atomic_fetch_add_explicit(&s->sh->trig[REC_TRIG_LATE_N], 1,
				memory_order_relaxed);
			s->fired_ns = 0;
		}
		{
			struct pt_round_stats st;

			pt_tracer_sample(s->t, s->group, m, &round_ops, s, budget, 0, &st);
			ret->requested += st.requested;
			ret->captured += st.captured;
			ret->gone += st.gone;
			ret->dropped += st.dropped;
			ret->timeout += st.timeout;
			ret->skipped += st.skipped;
		}
	}
	if (have_all)
		sched_setaffinity(0, sizeof(all), &all);
}

/* cpu mode with perf capture: move what the kernel sampled into the
 * sample ring. */
static void perf_drain(struct sampler *s)
{
	struct pt_perf_stats st;

	pt_perf_drain(s->perf, &round_ops, s, &st);
	if (st.lost_records)
		s->switches_lost = true;
	apply_resizes(s);
	atomic_fetch_add_explicit(&s->sh->lost_ring, st.dropped, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->sh->lost_kernel, st.lost, memory_order_relaxed);
}

/* The leaders held at their exit (on_hold_exit): a new one gets its
 * REC_EV_EXITING, after what the kernel sampled before its exit; each is
 * let go once the writer acknowledges it (every sample before it
 * unwound), at its deadline, or when recording ends.  Never waits. */
static void exit_holds(struct sampler *s)
{
	struct rec_shared *sh = s->sh;
	uint64_t now = td_now_ns();
	bool drained = false;
	unsigned k = 0;

	for (unsigned i = 0; i < s->nexits; i++) {
		struct exit_hold *h = &s->exits[i];
		uint32_t acked;

		if (!h->id) {
			struct rec_event e = { .kind = REC_EV_EXITING, .pid = h->tid, .tid = h->tid };
			struct target *tg;

			if (s->perf && !drained) {
				perf_drain(s);
				drained = true;
			}
			e.handshake_id = ++s->exit_id ? s->exit_id : ++s->exit_id;
			e.time_ns = td_now_ns();
			h->id = e.handshake_id;
			tg = targets_find(&s->targets, h->tid);
			/* never sampled, after all: nothing to wait for */
			if (tg && tg->sampled && push_event(s, &e)) {
				h->deadline = now + S_EXIT_HOLD_NS;
				s->wake_writer = true;
			} else {
				h->deadline = now;
			}
		}
		acked = atomic_load(&sh->exit_acked);
		if ((int32_t)(acked - h->id) >= 0 || now >= h->deadline ||
			atomic_load(&sh->writer_done) || stopping(sh)) {
			struct sthread *st = lookup(s, h->tid);

			pt_tracer_release_exit(s->t, h->tid); /* -ESRCH: killed meanwhile */
			if (st)
				st->leaving = false; /* it exits, or goes on as an exec's
						      * (whose event ends pt_perf_end) */
			continue;
		}
		s->exits[k++] = *h;
	}
	s->nexits = k;
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
	struct rec_shared *sh = s->sh;
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
	e.handshake_id = ++s->crash_id;
	e.time_ns = td_now_ns();
	push_event(s, &e);
	for (unsigned i = 0; i < s->n; i++)
		if (s->th[i].pid == e.pid)
			s->chosen[k++] = s->th[i].tid;
	pt_tracer_sample(s->t, s->chosen, k, &round_ops, s, 200, 0, NULL);
	apply_pending(s);
	e.kind = REC_EV_CRASH_DONE;
	push_event(s, &e);
	wake_post(&sh->writer_wake);
	deadline = td_now_ns() + 3000000000ull;
	while (atomic_load(&sh->crash_acked) != e.handshake_id && td_now_ns() < deadline &&
		!atomic_load(&sh->writer_done)) {
		struct pollfd pfd[2] = { { pt_tracer_fd(s->t), POLLIN, 0 },
			{ sh->sampler_wake.fd, POLLIN, 0 } };

		poll(pfd, 2, 50);
		if (pfd[1].revents & POLLIN)
			wake_drain(&sh->sampler_wake);
		if (pfd[0].revents & POLLIN) {
			pt_tracer_poll(s->t, &round_ops, s);
			apply_pending(s);
		}
		if (s->nexits)
			exit_holds(s);
		wake_writer_owed(s);
	}
	pt_tracer_release(s->t, tid);
}

static uint64_t next_period(struct sampler *s)
{
	uint64_t period = 1000000000u / s->cfg->hz;

	s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
	/* uniform in [0.5, 1.5) x period, keeping the mean rate: a +-10%
	 * jitter still locked onto a 10 ms cycle (a 70/30 split read 60-84%) */
	return period / 2 + (s->rng >> 11) % (period + 1);
}

/* A service's requests (rec_attach), between rounds: attach each process
 * asked for and answer.  Attaching stops nothing for longer than a seize
 * does; the ticks wait meanwhile. */
static void serve_asks(struct sampler *s)
{
	struct rec_shared *sh = s->sh;

	for (pid_t *ask; (ask = ring_peek(&sh->asks)); ring_pop(&sh->asks)) {
		struct rec_notice *n = ring_reserve(&sh->answers);
		struct td_proc_id id = { .pid = *ask };
		unsigned before = s->n;
		pid_t failed = 0;
		int e = targets_attach(&s->targets, ask, 1, &thread_ops, s, &id, &failed);

		atomic_store(&sh->targets_live, (int)targets_live(&s->targets));
		/* one answer per ask and fewer asks than slots (rec_attach):
		 * never full */
		if (n) {
			*n = (struct rec_notice){ .kind = REC_NOTICE_ATTACH, .err = e, .id = id,
				.threads = s->n - before };
			ring_publish(&sh->answers);
		}
	}
	wake_post(&sh->control_wake);
}

/* Recording ends on a request of the control loop or an I/O error of the
 * writer. */
static bool stopping(struct rec_shared *sh)
{
	return atomic_load(&sh->stop) || atomic_load(&sh->io_err);
}

/* ---- the thread: setup, the loop, teardown */

/* Frees s and what it holds: the tracer first, which resumes every
 * stopped thread (the rest are detached by the kernel when this thread
 * exits, without waking those that sleep).  NULL-safe, and safe on a
 * sampler half built. */
static void sampler_free(struct sampler *s)
{
	if (!s)
		return;
	cpu_timers_free(s);
	pt_perf_free(s->perf);
	pt_tracer_free(s->t);
	if (s->tfd >= 0)
		close(s->tfd);
	for (unsigned i = 0; i < s->n; i++)
		close_fds(&s->th[i]);
	free(s->th);
	td_map_free(&s->idx);
	free(s->chosen);
	free(s->group);
	free(s->cpu_of);
	free(s->exits);
	targets_free(&s->targets);
	free(s);
}

/* The sampler and its tables, sized for S_MAX_THREADS once: nothing is
 * allocated while sampling.  Returns 0 or -ENOMEM. */
static int sampler_new(struct rec_shared *sh, struct sampler **ret_sampler)
{
	struct sampler *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->sh = sh;
	s->cfg = sh->cfg;
	s->tfd = -1;
	s->sigfd = -1;
	s->rng = td_now_ns() | 1;
	s->held_pid = s->cfg->held_exec ? s->cfg->pids[0] : 0;
	s->held_exec_ns = UINT64_MAX;
	s->th = calloc(S_MAX_THREADS, sizeof(*s->th));
	s->chosen = calloc(S_MAX_THREADS, sizeof(*s->chosen));
	s->group = calloc(S_MAX_THREADS, sizeof(*s->group));
	s->cpu_of = calloc(S_MAX_THREADS, sizeof(*s->cpu_of));
	if (!s->th || !s->chosen || !s->group || !s->cpu_of ||
		td_map_init_fixed(&s->idx, S_MAX_THREADS) < 0) {
		sampler_free(s);
		return -ENOMEM;
	}
	*ret_sampler = s;
	return 0;
}

/* The tracer, the capture (perf when asked or permitted), every target
 * attached, the tick timer.  Returns 0 or -errno / -TD_E_*, with the
 * target it failed on in sh->attach_pid (0: setting up the tracer). */
static int sampler_start(struct sampler *s)
{
	struct rec_shared *sh = s->sh;
	unsigned max_procs = rec_max_procs(s->cfg);
	struct pt_config pc = { .max_threads = S_MAX_THREADS, .max_procs = max_procs,
		.trace_clone = true,
		.trace_exec = true, .detach_by_exit = true, .trace_exit = true,
		.trace_fork = s->cfg->children != REC_CHILDREN_NONE,
		.follow_forks = s->cfg->children == REC_CHILDREN_FOLLOW };
	int e = pt_tracer_new(&pc, &s->t);

	if (e < 0)
		return e;
	sh->capture = REC_CAPTURE_PTRACE;
	sh->kernel = s->cfg->no_kernel ? REC_KERNEL_OFF_ASKED : REC_KERNEL_OFF_PTRACE;
	if (s->cfg->capture != REC_CAPTURE_PTRACE) {
		struct pt_perf_config ppc = { .period_ns = 1000000000u / s->cfg->hz,
			.stack_bytes = TD_MIN(s->cfg->max_window, (uint32_t)PT_PERF_MAX_STACK),
			.max_threads = 4096, .seed = td_now_ns(),
			.switches = s->cfg->mode == REC_MODE_WALL,
			.offcpu = s->cfg->mode == REC_MODE_WALL, .kernel = !s->cfg->no_kernel };

		e = pt_perf_new(&ppc, &s->perf);
		if (e < 0 && s->cfg->capture == REC_CAPTURE_PERF)
			return e;
		if (e < 0)
			sh->perf_err = e;
		else
			sh->capture = REC_CAPTURE_PERF;
		s->switches = s->perf && ppc.switches;
		s->offcpu = s->perf && pt_perf_offcpu(s->perf);
		sh->offcpu = s->offcpu;
		if (s->perf && !s->cfg->no_kernel)
			sh->kernel = pt_perf_kernel(s->perf) ? REC_KERNEL_ON : REC_KERNEL_OFF_DENIED;
	}
	s->exits = calloc(max_procs, sizeof(*s->exits));
	if (!s->exits || targets_init(&s->targets, s->t, max_procs) < 0)
		return -ENOMEM;
	s->max_exits = max_procs;
	e = targets_attach(&s->targets, s->cfg->pids, s->cfg->npids, &thread_ops, s, sh->targets,
		&sh->attach_pid);
	if (e < 0)
		return e;
	atomic_store(&sh->targets_live, (int)targets_live(&s->targets));
	if (!s->perf && s->cfg->mode == REC_MODE_CPU) {
		if ((e = cpu_timers_init(s)) < 0)
			atomic_store(&sh->cpu_timer_err, e); /* the ticks stop threads */
		cpu_sampler_realtime(s);
	}
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	return s->tfd < 0 ? -errno : 0;
}

/* Does the writer wait for a wake this thread owes it (an attach, a
 * death, an exit hold)?  Then now. */
static void wake_writer_owed(struct sampler *s)
{
	if (s->wake_writer) {
		wake_post(&s->sh->writer_wake);
		s->wake_writer = false;
	}
}

/* Set the timer for the next tick.  perf capture: the kernel samples;
 * drain every S_DRAIN_NS (sooner when its ring is a quarter full: its fd
 * polls readable), and tick only when there are rounds to run (wall
 * mode, threads the kernel does not sample).  Otherwise: the next random
 * tick. */
static void arm_timer(struct sampler *s)
{
	struct itimerspec its = { 0 };
	bool rounds = !s->perf || s->cfg->mode == REC_MODE_WALL || s->nonperf;
	uint64_t now;

	s->next_ns += s->perf ? S_DRAIN_NS : next_period(s);
	now = td_now_ns();
	if (s->next_ns < now) /* no burst */
		s->next_ns = now + (s->perf ? S_DRAIN_NS : next_period(s) / 2);
	if (s->perf && rounds && s->round_at < s->next_ns)
		s->next_ns = s->round_at;
	if (s->owner_check_ns && s->owner_check_ns < s->next_ns)
		s->next_ns = s->owner_check_ns;
	/* Drains alone, on time: the timer set to repeat at the last
	 * setting expires there already; one system call less a drain
	 * (each costs a few us, and a reprogramming of the timer in a VM;
	 * the drains' cost is per second, a sample's share of it grows as
	 * the rate falls). */
	if (s->every_from && s->next_ns > s->every_from &&
		(s->next_ns - s->every_from) % S_DRAIN_NS == 0)
		return;
	s->every_from = 0;
	if (s->perf && !rounds && !s->owner_check_ns) {
		its.it_interval.tv_nsec = S_DRAIN_NS;
		s->every_from = s->next_ns;
	}
	its.it_value.tv_sec = (time_t)(s->next_ns / 1000000000u);
	its.it_value.tv_nsec = (long)(s->next_ns % 1000000000u);
	timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Until the timer fires or recording ends: the tracer's events (deaths,
 * crashes, exits), the control loop's asks, the kernel's samples. */
static void wait_tick(struct sampler *s)
{
	struct rec_shared *sh = s->sh;
	struct pollfd pfd[5] = { { s->tfd, POLLIN, 0 }, { pt_tracer_fd(s->t), POLLIN, 0 },
		{ sh->sampler_wake.fd, POLLIN, 0 },
		{ s->perf ? pt_perf_fd(s->perf) : -1, POLLIN, 0 }, { s->sigfd, POLLIN, 0 } };
	/* a CPU-time timer's round at most every quarter period */
	uint64_t quarter = 250000000u / s->cfg->hz;

	for (;;) {
		if (poll(pfd, 5, 1000) < 0 && errno != EINTR)
			break;
		if ((pfd[4].revents & POLLIN) && cpu_timers_drain(s) &&
			td_now_ns() - s->tick_ns >= quarter) {
			s->fired_ns = td_now_ns();
			break; /* a target runs now: its round (choose) */
		}
		if (pfd[1].revents & POLLIN) {
			/* the kernel's samples first: a death or a crash comes
			 * after every sample taken before it (the emergency
			 * dump holds them, with the process's session still
			 * there to unwind them) */
			if (s->perf)
				perf_drain(s);
			pt_tracer_poll(s->t, &round_ops, s);
			apply_pending(s);
			handle_crash(s);
		}
		atomic_store_explicit(&sh->heartbeat_ns, td_now_ns(), memory_order_relaxed);
		if (pfd[2].revents & POLLIN) {
			wake_drain(&sh->sampler_wake);
			if (s->cfg->follow && ring_used(&sh->asks))
				serve_asks(s);
		}
		if (pfd[3].revents & POLLIN)
			perf_drain(s);
		if (s->nexits)
			exit_holds(s);
		wake_writer_owed(s);
		if ((pfd[0].revents & POLLIN) || stopping(sh) ||
			(!targets_live(&s->targets) && !s->cfg->follow))
			break;
	}
}

/* A tick's round of stops: the threads to sample (wall mode: every
 * thread, the blocked ones copied without a stop; cpu mode: those owed
 * CPU time), interrupted from their CPUs; then what the round saw. */
static void run_round(struct sampler *s)
{
	struct rec_shared *sh = s->sh;
	struct pt_round_stats st;
	unsigned k = s->cfg->mode == REC_MODE_WALL ? wall_tick(s) : choose(s);
	/* a round waits at most one tick for its stops */
	int budget = (int)TD_MAX(2u, 1000u / s->cfg->hz);

	if (k) {
		round_by_cpu(s, k, budget, &st);
		s->fired_ns = 0;
		atomic_fetch_add(&sh->lost_ring, st.dropped);
		atomic_fetch_add(&sh->lost_not_stopped, st.timeout);
		atomic_fetch_add(&sh->skipped, st.skipped);
	}
	if (s->nowner_waits && s->cfg->owner_stops)
		wall_owners_held(s);
	apply_pending(s);
	handle_crash(s);
	if (s->nexits)
		exit_holds(s);
	if (s->perf) {
		apply_resizes(s);
		s->round_at += next_period(s);
		if (s->round_at < td_now_ns())
			s->round_at = td_now_ns() + next_period(s) / 2;
	}
}

/* Wake the writer for what this tick published, at most every
 * S_WRITER_NS (each wake of a thread costs ~50-120 us of CPU in a VM,
 * measured), sooner when a ring is a quarter full or a wake is owed. */
static void wake_writer_due(struct sampler *s)
{
	struct rec_shared *sh = s->sh;
	uint64_t now = td_now_ns();

	if (s->wake_writer || ring_used(&sh->samples) > sh->samples.cap / 4 ||
		ring_used(&sh->events) > sh->events.cap / 4 ||
		((ring_used(&sh->samples) || ring_used(&sh->events)) &&
			now - s->woke_writer_ns >= S_WRITER_NS)) {
		wake_post(&sh->writer_wake);
		s->woke_writer_ns = now;
		s->wake_writer = false;
	}
}

/* Sample until a stop request, an I/O error of the writer, the duration,
 * or the last target's exit (but in follow mode, which waits for more). */
static void sampler_loop(struct sampler *s)
{
	struct rec_shared *sh = s->sh;
	bool rearm = true;

	s->start_ns = s->next_ns = s->round_at = td_now_ns();
	while (!stopping(sh)) {
		uint64_t expirations;

		if (rearm)
			arm_timer(s);
		wait_tick(s);
		if (read(s->tfd, &expirations, sizeof(expirations)) < 0)
			expirations = 0; /* woken by an end or a CPU-time timer */
		/* a CPU-time timer's round leaves the tick where it was */
		rearm = expirations || !s->fired;
		if (s->perf) {
			perf_drain(s);
			if (s->owner_check_ns && td_now_ns() >= s->owner_check_ns) {
				/* the owners' early samples come in that drain;
				 * their periods are drawn again at the next tick */
				s->owner_check_ns = 0;
				wall_owners_held(s);
			} else {
				/* new periods on our timer alone (ptrace/perf.c) */
				pt_perf_rearm(s->perf);
			}
		}
		if (stopping(sh) || (!targets_live(&s->targets) && !s->cfg->follow))
			break;
		if (s->cfg->duration_ns && td_now_ns() - s->start_ns >= s->cfg->duration_ns)
			break;
		if (expirations)
			atomic_fetch_add(&sh->ticks, 1);
		/* with perf, a round only for the threads the kernel does not
		 * sample, on their own random ticks */
		if (!s->perf || (td_now_ns() >= s->round_at &&
					(s->cfg->mode == REC_MODE_WALL || s->nonperf)))
			run_round(s);
		wake_writer_due(s);
	}
}

void *sampler_main(void *arg)
{
	struct rec_shared *sh = arg;
	struct sampler *s = NULL;
	int e;

	/* The sampler sleeps but for the microseconds it holds a target
	 * thread: then nothing of the target's may keep it off a CPU.  It
	 * stays at nice -10 (when allowed) rather than paying two system
	 * calls per round to change it; in cpu mode with ptrace capture, at
	 * SCHED_FIFO's lowest priority where permitted (sampler_start,
	 * cpu_sampler_realtime). */
	setpriority(PRIO_PROCESS, (id_t)gettid(), -10);
	pthread_setname_np(pthread_self(), "tracerd-sample");
	e = sampler_new(sh, &s);
	if (!e)
		e = sampler_start(s);
	if (e < 0) {
		sh->attach_err = e; /* before attach_state, which the control loop loads first */
		atomic_store(&sh->attach_state, -1);
	} else {
		atomic_store(&sh->heartbeat_ns, td_now_ns());
		atomic_store(&sh->attach_state, 1);
	}
	wake_post(&sh->control_wake);
	if (!e) {
		sampler_loop(s);
		cpu_missed_flush(s); /* before sampler_done: the writer's last LOST */
	}
	sampler_free(s);
	atomic_store(&sh->sampler_done, 1);
	wake_post(&sh->writer_wake);
	wake_post(&sh->control_wake);
	return NULL;
}
