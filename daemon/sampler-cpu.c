/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cpu mode with ptrace capture: what triggers a stop, and the CPU time
 * that no sample carries.
 *
 * A thread that runs in short bursts between blocking calls is rarely
 * running at a tick of our own clock, and a stop requested from another
 * CPU lands at its next kernel entry, its blocking call, far more often
 * than its time there says (docs/notes/ptrace.md).  So each target
 * process gets a POSIX timer on its own CPU-time clock
 * (clock_getcpuclockid), made by this process and signalled to the
 * sampler thread (SIGEV_THREAD_ID, the signal blocked here and read
 * through a signalfd).  The kernel checks it at the scheduler tick of a
 * target thread that is running: the signal comes while one runs, and
 * choose() stops the process's threads that are owed CPU time and not
 * blocked (round_by_cpu moves onto each one's CPU first).  Nothing is
 * armed in the target: the timer is this process's, and dies with it.
 *
 * The truth is schedstat: choose() credits each thread the CPU time it
 * used; a stop pays what it is owed (a weighted sample), a thread
 * blocked now keeps its credit for a later stop, and what is never paid
 * (the credit's cap, a thread gone, the end of recording) is counted
 * here, in periods, as sh->cpu_missed: the recording's LOST records of
 * reason TCF_LOST_CPU_MISSED, its summary and the report's header.
 *
 * A fire is worth a stop only while the burst it caught still runs: the
 * sampler thread runs at SCHED_FIFO's lowest priority where permitted
 * (root, CAP_SYS_NICE, RLIMIT_RTPRIO; not in a cgroup with no real-time
 * runtime), so that its wake-up preempts whatever else runs, the target
 * too (it then stops where it was preempted).  It sleeps on the timers'
 * signalfd between rounds and holds a CPU for tens of microseconds per
 * round; the kernel's real-time throttling (95% of each second by
 * default) bounds it should it ever spin.  Refused, it stays at nice
 * -10, said in the summary's triggers line, not as a warning.
 *
 * Where a stop lands is counted (sh->trig: the summary's triggers line):
 * a stop at the return of a call that waits is where a burst's thread
 * waits next, not where it ran, and is no sample (cpu_stop_in_wait).
 *
 * Everything here runs on the sampler thread and never while a target
 * thread is stopped (cpu_stop_in_wait runs after the resume, and reads no
 * file); the rules of sampler.c's header hold. */
#define _GNU_SOURCE
#include "sampler-internal.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc keeps SIGRTMIN's first two for itself; nothing else of tracerd
 * uses real-time signals */
#define S_CPU_SIGNAL (SIGRTMIN + 4)
#define S_SYNC_NS 1000000000u /* the table looked at for new processes this often */

int cpu_timers_init(struct sampler *s)
{
	sigset_t set;
	int e;

	sigemptyset(&set);
	sigaddset(&set, S_CPU_SIGNAL);
	/* blocked on this thread only: the timers signal this thread alone */
	e = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (e)
		return -e;
	s->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return s->sigfd < 0 ? -errno : 0;
}

static void timer_drop(struct sampler *s, unsigned i)
{
	timer_delete(s->timers[i].id);
	s->timers[i].pid = 0;
}

/* A timer on pid's CPU-time clock that fires each quarter period of its
 * CPU time: its slot, or -errno. */
static int timer_make(struct sampler *s, pid_t pid)
{
	/* a quarter period: more chances to find a thread in its burst
	 * (the kernel checks at its ticks, 4 ms at HZ=250, so no faster) */
	uint64_t every = 250000000u / s->cfg->hz;
	struct itimerspec its = { .it_interval = { 0, (long)every },
		.it_value = { 0, (long)every } };
	struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = S_CPU_SIGNAL};
	clockid_t clock;
	unsigned i;
	int e;

	for (i = 0; i < S_MAX_TIMERS && s->timers[i].pid; i++)
		;
	if (i == S_MAX_TIMERS)
		return -ENOSPC;
	/* a process clock of another process: the kernel's lookup_task lets
	 * its tracer (ptrace read access) arm it; a thread clock it refuses */
	e = clock_getcpuclockid(pid, &clock);
	if (e)
		return -e;
	sev.sigev_value.sival_int = (int)i;
	sev._sigev_un._tid = gettid();
	if (timer_create(clock, &sev, &s->timers[i].id) < 0)
		return -errno;
	if (timer_settime(s->timers[i].id, 0, &its, NULL) < 0) {
		e = -errno;
		timer_delete(s->timers[i].id);
		return e;
	}
	s->timers[i] = (struct cpu_timer){.pid = pid, .id = s->timers[i].id};
	atomic_fetch_add(&s->sh->cpu_timers, 1);
	return (int)i;
}

void cpu_timers_sync(struct sampler *s)
{
	uint64_t now = td_now_ns();

	if (s->sigfd < 0 || (s->n == s->timers_n && now - s->timers_ns < S_SYNC_NS))
		return;
	s->timers_n = s->n;
	s->timers_ns = now;
	for (unsigned i = 0; i < S_MAX_TIMERS; i++)
		s->timers[i].seen = false;
	for (unsigned k = 0; k < s->n; k++) {
		struct sthread *st = &s->th[k];
		int slot = st->timer ? st->timer - 1 : -1;

		if (st->perf || !st->pid)
			continue;
		if (slot < 0 || s->timers[slot].pid != st->pid)
			for (slot = 0; slot < S_MAX_TIMERS && s->timers[slot].pid != st->pid;
				slot++)
				;
		if (slot == S_MAX_TIMERS) {
			slot = timer_make(s, st->pid);
			if (slot < 0) {
				/* its ticks stop it, as without timers */
				int expected = 0;

				atomic_compare_exchange_strong(
					&s->sh->cpu_timer_err, &expected, slot);
				st->timer = 0;
				continue;
			}
		}
		s->timers[slot].seen = true;
		st->timer = (uint8_t)(slot + 1);
	}
	for (unsigned i = 0; i < S_MAX_TIMERS; i++)
		if (s->timers[i].pid && !s->timers[i].seen)
			timer_drop(s, i);
}

bool cpu_timers_drain(struct sampler *s)
{
	struct signalfd_siginfo si[16];
	bool any = false;
	ssize_t n;

	if (s->sigfd < 0)
		return false;
	while ((n = read(s->sigfd, si, sizeof(si))) > 0) {
		for (size_t i = 0; i < (size_t)n / sizeof(si[0]); i++) {
			uint32_t slot = (uint32_t)si[i].ssi_int;

			if (si[i].ssi_code != SI_TIMER || slot >= S_MAX_TIMERS)
				continue; /* not one of ours (a kill of tracerd) */
			s->timers[slot].fired = true;
			any = true;
			atomic_fetch_add_explicit(
				&s->sh->trig[REC_TRIG_FIRES], 1, memory_order_relaxed);
		}
	}
	s->fired |= any;
	return any;
}

void cpu_sampler_realtime(struct sampler *s)
{
	struct sched_param sp = { .sched_priority = sched_get_priority_min(SCHED_FIFO) };

	s->sh->sampler_policy = SCHED_OTHER;
	/* this thread alone (the tid), and no child of it inherits it */
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0) {
		s->sh->sampler_policy_err = -errno;
		return;
	}
	s->sh->sampler_policy = SCHED_FIFO;
}

void cpu_timers_free(struct sampler *s)
{
	for (unsigned i = 0; i < S_MAX_TIMERS; i++)
		if (s->timers[i].pid)
			timer_drop(s, i);
	if (s->sigfd >= 0)
		close(s->sigfd);
	s->sigfd = -1;
}

void cpu_missed_add(struct sampler *s, uint64_t ns)
{
	uint64_t period = 1000000000u / s->cfg->hz;

	s->missed_ns += ns;
	if (s->missed_ns >= period) {
		atomic_fetch_add(&s->sh->cpu_missed, s->missed_ns / period);
		s->missed_ns %= period;
	}
}

void cpu_missed_flush(struct sampler *s)
{
	uint64_t period = 1000000000u / s->cfg->hz;

	if (s->perf || s->cfg->mode != REC_MODE_CPU)
		return;
	for (unsigned k = 0; k < s->n; k++) {
		cpu_missed_add(s, s->th[k].cpu_credit);
		s->th[k].cpu_credit = 0;
	}
	/* what is left, to the nearest period */
	if (s->missed_ns >= period / 2)
		atomic_fetch_add(&s->sh->cpu_missed, 1);
	s->missed_ns = 0;
}

/* A call a thread makes to wait for something to arrive (a request, a
 * wake-up, a timeout): what a thread in bursts calls when its burst ends. */
static bool waiting_call(long nr)
{
	switch (nr) {
	case SYS_read:
	case SYS_readv:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_recvmmsg:
	case SYS_poll:
	case SYS_ppoll:
	case SYS_select:
	case SYS_pselect6:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
	case SYS_epoll_pwait2:
	case SYS_futex:
	case SYS_accept:
	case SYS_accept4:
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_restart_syscall:
	case SYS_wait4:
	case SYS_waitid:
	case SYS_rt_sigtimedwait:
	case SYS_rt_sigsuspend:
	case SYS_pause:
	case SYS_msgrcv:
	case SYS_semop:
	case SYS_semtimedop:
	case SYS_io_getevents:
	case SYS_io_uring_enter:
	case SYS_sched_yield:
		return true;
	}
	return false;
}

/* Where a stop landed, counted (the summary's triggers line). */
static void count_stop(const struct sampler *s, enum rec_trig where)
{
	atomic_fetch_add_explicit(&s->sh->trig[where], 1, memory_order_relaxed);
}

bool cpu_stop_in_wait(const struct sampler *s, const struct td_sample *smp)
{
	long rax = (long)smp->regs.rax;

	if (!(smp->flags & TD_SAMPLE_IN_SYSCALL)) {
		count_stop(s, REC_TRIG_USER);
		return false;
	}
	/* a wait the stop broke off: the kernel restarts it (ERESTART*, 512
	 * to 516) or returns EINTR (docs/notes/ptrace.md) */
	if (rax == -EINTR || (rax <= -512 && rax >= -516)) {
		count_stop(s, REC_TRIG_WAIT);
		return true;
	}
	/* Other calls (a write, a clock read that is a system call) keep
	 * the stop: their CPU time is put at the call, as perf puts it. */
	if (!waiting_call((long)smp->regs.orig_rax)) {
		count_stop(s, REC_TRIG_CALL);
		return false;
	}
	/* At the return of a call that waits for input (a request already
	 * queued, or woken and not yet run when the probe read it running):
	 * an interrupt lands at the next kernel entry far more often than
	 * the time there says, and a burst's next entry is its wait
	 * (measured: 15-28% of a 50 us burst worker's stops at a read that
	 * returned, where perf puts ~0%).  Not a sample: the credit stays
	 * owed to a stop where the thread runs.  A thread whose stops land
	 * there two times in three was taken to have its CPU time in those
	 * calls (fx_bursts' feeder, waking 1000 times a second to write one
	 * byte, as perf shows it) and sampled there, first with all it was
	 * owed, then with one period: under load a worker's stops land there
	 * as often (woken, it waits for a CPU, and the stop comes at its
	 * read's return when it gets one), and 20-32% of its samples went
	 * there in 1 suite run of 3 with both cores loaded, where perf puts
	 * 1-10%.  Nothing the stop sees tells the two apart (the stop's
	 * latency overlaps: 45-130 us both, checked 2026-11-27), so the rule
	 * is the issue's: CPU time never goes to a stack where the thread
	 * waits.  The feeder's time goes to its write, where perf puts the
	 * rest of it. */
	count_stop(s, REC_TRIG_RETURN);
	return true;
}
