/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Wall mode's tick (sampler thread): every thread, every tick.  A thread
 * blocked in a system call is copied without a stop (ptrace/blocked.c),
 * or, when nothing changed since its last copy (same call, same place,
 * same schedstat), repeated without a copy (REC_EV_REPEAT); a running one
 * goes into the round of stops (sampler.c), unless the kernel samples it
 * (perf capture): then only the time it waits for a CPU, which neither
 * perf nor a copy sees, is sampled here.  A thread in a job-control stop
 * goes into the round once, and is repeated for the rest of its stop
 * (stopped_tick).
 *
 * With offcpu (the kernel samples each switch out: ptrace/perf.c), a
 * thread's time off CPUs is measured, interval by interval, from its first
 * switch-out sample on (covered): the ticks then copy it blocked for its
 * wait episodes alone (TD_SAMPLE_NO_ROWS), and its schedstat wait, less
 * its preemptions, says how much of its blocked intervals it waited for a
 * CPU once woken (offcpu_runnable).  Before that sample (a thread asleep
 * since the attach), the ticks sample it as without offcpu.
 *
 * Guarantees: blocked and runnable time is sampled per period of the time
 * since the last tick, not once a tick, so that late ticks cannot tilt
 * the shares; a copy torn because the thread ran meanwhile is dropped and
 * counted (lost_torn), never published; every sample of a thread in a
 * job-control stop (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, until SIGCONT)
 * carries TD_SAMPLE_GROUP_STOPPED (the writer's state stopped), and
 * nothing here resumes it.  Where the kernel shows it (root), a blocked
 * thread's copy carries its kernel stack (kstack_of), read once per
 * blocked period, never while a thread is held stopped.  Leaves to sampler.c the round of stops and
 * the thread table, and to ptrace.c the stop itself (PTRACE_LISTEN). */
#define _GNU_SOURCE
#include "sampler-internal.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "../common/kstack.h"
#include "../symbolize/symbolize.h"
#include "waits.h"

/* Publish a sample that repeats the thread's last stack (TD_SAMPLE_REPEAT
 * and flags): no copy, no unwind.  Through the events ring (REC_EV_REPEAT).
 * futex: the words at its futex address this tick, or NULL. */
static void publish_repeat(struct sampler *s, const struct sthread *st, uint32_t flags,
	const uint32_t *futex)
{
	struct rec_event *e = ring_reserve(&s->sh->events);

	if (!e) {
		atomic_fetch_add_explicit(&s->sh->lost_ring, 1, memory_order_relaxed);
		return;
	}
	*e = (struct rec_event){ .kind = REC_EV_REPEAT, .pid = st->pid, .tid = st->tid,
		.status = (int)(TD_SAMPLE_NOSTOP | TD_SAMPLE_REPEAT | flags |
			(st->covered ? TD_SAMPLE_NO_ROWS : 0)),
		.time_ns = td_now_ns() };
	if (futex) {
		memcpy(e->futex, futex, sizeof(e->futex));
		e->status |= TD_SAMPLE_FUTEX;
	}
	ring_publish(&s->sh->events);
	if (!st->covered)
		atomic_fetch_add_explicit(&s->sh->samples_taken, 1, memory_order_relaxed);
	mark_sampled(s, st->pid);
}

/* Add ns to a thread's credit of time not yet sampled (at most a second
 * of it: more is a thread that was stopped or frozen, or a tick held up,
 * not made up) and take from it the whole periods: how many samples. */
static unsigned spend(uint64_t *credit, uint64_t ns, uint64_t period)
{
	unsigned n;

	*credit = TD_MIN(*credit + ns, 1000000000u + period);
	n = (unsigned)(*credit / period);
	*credit -= n * period;
	return n;
}

/* n repeats of a blocked thread's last stack: asleep in its call, or in
 * disk sleep. */
static void repeat_blocked(struct sampler *s, const struct sthread *st, unsigned n,
	const uint32_t *futex)
{
	while (n--)
		publish_repeat(s, st, TD_SAMPLE_IN_SYSCALL | (st->last_disk ? TD_SAMPLE_DISK : 0),
			futex);
}

/* A thread in a job-control stop, asked of the tracer at every tick
 * (ptrace.c keeps the stop with PTRACE_LISTEN; /proc cannot tell it from
 * a blocked thread: 't' as for any ptrace stop, and a syscall line).  It
 * waits for SIGCONT, not for its call's object: no lock words, and the
 * writer keeps it out of the waits.  /proc's syscall line has only its sp
 * and pc, too little to unwind code that keeps its frame in rbp (the
 * vDSO's clock_gettime, where a busy thread often stops); so its first
 * tick in the stop puts it in the round: trapped again, it stays stopped
 * (ptrace.c listens again), its registers and stack are copied, and
 * put_stopped() sets stop_copied.  Every later tick of the stop repeats
 * that stack, in state stopped.  A thread whose switches the kernel
 * samples (covered) is not: its switch into the stop copied its stack,
 * and the interval to its switch back is the stop (put_unstopped flags
 * it); the tick only notes that it saw the stop.  Returns 1 if it goes in
 * the round (into *chosen). */
static unsigned stopped_tick(struct sampler *s, struct sthread *st, uint64_t dt,
	uint64_t period, pid_t *chosen)
{
	unsigned n;

	st->have_last = false; /* it runs before it blocks again */
	st->stop_seen = true;
	if (st->covered)
		return 0; /* its switch into the stop measures it (put_unstopped) */
	n = st->perf ? spend(&st->block_credit, dt, period) : 1;
	if (!n)
		return 0; /* no whole period stopped yet */
	if (!st->stop_copied) {
		/* the copy stands for one period; the rest are repeats of
		 * it, once it is in */
		st->block_credit += (n - 1) * period;
		*chosen = st->tid;
		return 1;
	}
	while (n--)
		publish_repeat(s, st, TD_SAMPLE_GROUP_STOPPED, NULL);
	return 0;
}

/* Wall mode with perf: samples for the time a thread waited for a CPU,
 * which neither perf (it did not run) nor a blocked copy (it was not
 * blocked) sees.  Two kinds, told apart because their stacks differ:
 *  - woken: not scheduled since it was last seen blocked (its run count
 *    has not moved), it waits for a CPU inside its call: sampled at the
 *    tick like a blocked thread, a sample per period since the last tick,
 *    with its blocked stack;
 *  - preempted: schedstat adds each wait to its total when the wait ends;
 *    what it added since the last tick, less the woken time the ticks
 *    already sampled, is spent a period at a time, with the stack of the
 *    last perf sample if one came since it was last blocked (the writer
 *    knows; else a frame that says the place is unknown). */
static void runnable_ticks(struct sampler *s, struct sthread *st, const struct pt_blocked *b,
	bool blocked, uint64_t dt, bool looked)
{
	uint64_t period = 1000000000u / s->cfg->hz, paid;
	unsigned n;

	if (st->state == ST_NEW || b->wait_ns < st->wait_ns) {
		st->wait_ns = b->wait_ns; /* first look: credit from here */
		st->state = ST_SETTLE;
		return;
	}
	if (!blocked && st->seen_blocked && b->run_count == st->block_runs) {
		for (n = spend(&st->woken_credit, dt, period); n; n--) {
			publish_repeat(s, st, TD_SAMPLE_RUNNABLE | TD_SAMPLE_IN_SYSCALL, NULL);
			st->woken_sampled += period;
		}
	}
	/* the wait schedstat added, less what the ticks sampled as woken
	 * (what they sampled of a wait not yet ended stays to be paid) */
	st->wait_credit += b->wait_ns - st->wait_ns;
	if (looked && st->skip_ns) {
		/* ticks without a look sampled it as blocked; the part of
		 * them after its wake-up is in this wait too (over by at
		 * most the waits for a CPU since it first ran again) */
		paid = TD_MIN(b->wait_ns - st->wait_ns, st->skip_ns);
		st->wait_credit -= paid;
		st->skip_ns = 0;
	}
	st->wait_ns = b->wait_ns;
	paid = TD_MIN(st->wait_credit, st->woken_sampled);
	st->wait_credit -= paid;
	st->woken_sampled = TD_MIN(st->woken_sampled - paid, 1000000000u + period);
	for (n = spend(&st->wait_credit, 0, period); n; n--)
		publish_repeat(s, st, TD_SAMPLE_RUNNABLE, NULL);
}

#define WOKEN_MAX_NS 1000000000 /* woken_ns kept within +-1 s */

uint32_t offcpu_runnable(struct sampler *s, struct sthread *st, uint32_t flags, uint32_t weight)
{
	int64_t period = (int64_t)(1000000000u / s->cfg->hz), k;

	if (!st->covered) {
		/* from here on the switch samples carry its time */
		st->covered = true;
		st->woken_ns = 0;
	}
	if (flags & TD_SAMPLE_RUNNABLE) {
		/* preempted: that much of schedstat's wait is this */
		st->woken_ns = TD_MAX(st->woken_ns - (int64_t)weight * period, -WOKEN_MAX_NS);
		return 0;
	}
	k = st->woken_ns > 0 ? TD_MIN(st->woken_ns / period, (int64_t)weight) : 0;
	st->woken_ns -= k * period;
	return (uint32_t)k;
}

/* A covered thread looked at: the wait schedstat added since its last
 * look (ended waits for a CPU, preempted or woken).  Its first look: from
 * now on if it was there at the attach (a server's worker had waited
 * seconds before: the whole of it was paid out of its first blocked
 * intervals), all of it if it was born since. */
static void woken_tick(struct sthread *st, const struct pt_blocked *b)
{
	if (st->state == ST_NEW) {
		if (!st->born)
			st->wait_ns = b->wait_ns;
		st->state = ST_SETTLE;
	}
	if (b->wait_ns > st->wait_ns)
		st->woken_ns = TD_MIN(st->woken_ns + (int64_t)(b->wait_ns - st->wait_ns),
			WOKEN_MAX_NS);
	st->wait_ns = b->wait_ns;
}

/* A thread blocked in futex(): the words at its futex address now, at the
 * tick (one process_vm_readv), into words; NULL if not in futex() or
 * unreadable.  The writer reads a lock's owner from them: read later, the
 * lock may have changed hands many times. */
static const uint32_t *futex_words(const struct sthread *st, const struct pt_blocked *b,
	uint32_t words[TD_FUTEX_WORDS])
{
	size_t len = TD_FUTEX_WORDS * sizeof(*words);

	if (b->sc.nr != SYS_futex || pt_read_memory(st->tid, b->sc.args[0], words, len) != (ssize_t)len)
		return NULL;
	return words;
}

/* A lock's owner, to be stopped this tick for its stack (one taken after
 * since is wanted), and the waiter that asked: its futex address and the
 * words it read there. */
struct owner_ask {
	pid_t pid, tid, waiter;
	uint64_t since, uaddr;
	uint32_t words[TD_FUTEX_WORDS];
};

/* Waiter st, blocked in b, read futex words at this tick (fresh: it has
 * just been copied, so its wait began since its last copy): the threads
 * they may name as the object's owner, into ask, with the tick since
 * which the waiter has read these words.  With perf nothing else stops a
 * running owner, and the kernel samples it only per period of its CPU
 * time: a lock held for a tick or two would mostly go without a stack
 * taken while it held it (the writer takes only those; writer-waits.c). */
static void owner_ask(struct sampler *s, struct sthread *st, const struct pt_blocked *b,
	const uint32_t *futex, bool fresh, struct owner_ask *ask, unsigned *nask)
{
	uint32_t h = 2166136261u; /* FNV-1a of the words, never 0 */
	pid_t c[4];
	unsigned n;

	if (!futex)
		return;
	for (unsigned i = 0; i < TD_FUTEX_WORDS; i++)
		h = (h ^ futex[i]) * 16777619u;
	h |= 1;
	if (fresh || h != st->owner_words) {
		st->owner_words = h;
		st->owner_since = s->tick_ns;
	}
	n = wait_owner_candidates(futex, c);
	for (unsigned i = 0; i < n && *nask < S_MAX_OWNER_ASKS; i++, (*nask)++) {
		ask[*nask] = (struct owner_ask){ .pid = st->pid, .tid = c[i], .waiter = st->tid,
			.since = st->owner_since, .uaddr = b->sc.args[0] };
		memcpy(ask[*nask].words, futex, sizeof(ask[*nask].words));
	}
}

/* Ask the kernel for a sample of running owner o soon (pt_perf_early):
 * after an eighth of a tick of its CPU time rather than its drawn period,
 * until the next tick restores that (pt_perf_rearm), on the CPU it last
 * ran on; at most once a tick, whatever the waiters that found it.  The
 * first sample of it since is kept whatever its weight (of none: for the
 * waits alone, TD_SAMPLE_OWNER), and put_unstopped notes that it came
 * (owner_took).  Nothing stops or signals it: the kernel changes the
 * period in an interrupt of its CPU, which no system call sees. */
static uint64_t owner_early_ns(const struct sampler *s)
{
	return 1000000000u / s->cfg->hz / S_OWNER_EARLY_DIV;
}

static void owner_early(struct sampler *s, struct sthread *o)
{
	uint64_t now = td_now_ns(); /* before the ask: its sample comes after */

	if (o->owner_tick == s->tick_ns)
		return;
	o->owner_tick = s->tick_ns;
	o->owner_asked_ns = 0;
	if (pt_perf_early(s->perf, o->tid, last_cpu(o), owner_early_ns(s)) < 0)
		return;
	o->owner_asked_ns = now;
	atomic_fetch_add_explicit(&s->sh->owner_early, 1, memory_order_relaxed);
}

/* The owners asked for that the kernel samples, that this tick found
 * running, and of which no sample came since the holding was found: each
 * gets an early sample asked of the kernel (owner_early), or, with
 * --owner-stops, is put into s->chosen from k on, for a stop in this
 * tick's round; the new count.  A blocked owner was copied at this tick,
 * one the kernel does not sample is in the round anyway.  So a contended
 * owner pays one early sample, or one stop, each time a waiter finds it
 * holding the lock anew (another at the next tick only if its sample did
 * not come).  The waiters that asked read their words again once the
 * sample may have come (wall_owners_held): after the round for a stop,
 * whose sample is flagged TD_SAMPLE_OWNER (put_stopped); for an early
 * sample after a quarter of a tick (owner_check_ns), when the kernel's
 * ring is drained; one that comes later is confirmed by the next tick's
 * reads, as any sample of the owner.  As for any running thread ptrace
 * capture interrupts, an owner that enters a system call just as it is
 * stopped may see the call return EINTR: hence stops only when asked. */
static unsigned owners_chosen(struct sampler *s, const struct owner_ask *ask, unsigned nask,
	unsigned k)
{
	s->nowner_waits = 0;
	s->owner_check_ns = 0;
	for (unsigned i = 0; i < nask; i++) {
		uint64_t v;
		struct sthread *o = td_map_get(&s->idx, (uint32_t)ask[i].tid, &v) ? &s->th[v] : NULL;
		struct owner_wait *ow = &s->owner_waits[s->nowner_waits];
		struct pt_blocked b;

		if (!o || o->pid != ask[i].pid || !o->perf || o->leaving ||
			o->running_tick != s->tick_ns || o->owner_took >= ask[i].since)
			continue;
		if (!s->cfg->owner_stops) {
			owner_early(s, o);
			if (o->owner_tick != s->tick_ns || !o->owner_asked_ns)
				continue; /* not asked */
		} else if (o->owner_tick != s->tick_ns) {
			/* still out of any system call, looked at again just
			 * before its interrupt: the rest of the tick went by
			 * since its look */
			if (pt_blocked_probe(o->sys_fd, o->fd, &b) != 0)
				continue;
			o->owner_tick = s->tick_ns;
			s->chosen[k++] = o->tid;
		}
		*ow = (struct owner_wait){ .pid = ask[i].pid, .tid = ask[i].waiter, .owner = o->tid,
			.uaddr = ask[i].uaddr };
		memcpy(ow->words, ask[i].words, sizeof(ow->words));
		s->nowner_waits++;
	}
	if (s->nowner_waits && !s->cfg->owner_stops)
		s->owner_check_ns = td_now_ns() + 2 * owner_early_ns(s);
	return k;
}

void wall_owners_held(struct sampler *s)
{
	for (unsigned i = 0; i < s->nowner_waits; i++) {
		const struct owner_wait *ow = &s->owner_waits[i];
		uint32_t words[TD_FUTEX_WORDS];
		uint64_t v;
		struct sthread *o = td_map_get(&s->idx, (uint32_t)ow->owner, &v) ? &s->th[v] : NULL;
		struct rec_event *e;
		/* before the read: the words were the same at least until then */
		uint64_t now = td_now_ns();

		/* its stop came in the round, and the words did not move */
		if (!o || o->owner_took != s->tick_ns ||
			pt_read_memory(ow->tid, ow->uaddr, words, sizeof(words)) != sizeof(words) ||
			memcmp(words, ow->words, sizeof(words)))
			continue;
		e = ring_reserve(&s->sh->events);
		if (!e)
			break; /* the stack goes without a confirmation: not lost, not wrong */
		*e = (struct rec_event){ .kind = REC_EV_HELD, .pid = ow->pid, .tid = ow->tid,
			.time_ns = now };
		memcpy(e->futex, words, sizeof(e->futex));
		ring_publish(&s->sh->events);
	}
	s->nowner_waits = 0;
}

/* A blocked thread's kernel stack, where the kernel shows it (root:
 * rec_shared.kallsyms is set), into smp->kernel_ips: /proc/TID/stack's
 * names and offsets, turned back into the live addresses a perf chain
 * carries (through kallsyms' index by name), so that the writer, the
 * chunk and every report treat both alike (a "[kernel]" mapping, names,
 * no address written).  A name kallsyms lacks is a frame at 0, which the
 * writer names "[kernel]".  Called just before the thread's stack copy,
 * whose check that it did not run covers this read too: a stack read
 * while it ran is dropped with its copy.  Once per copy, so once per
 * blocked period (the ticks after repeat it, kernel frames included);
 * at most TD_KSTACK_TEXT bytes and TD_KERNEL_FRAMES frames.  The file is
 * kept open, as the thread's others are: its open and close cost half as
 * much again as the read (many threads that block and wake every few ms
 * are read at most ticks). */
static void kstack_of(struct sampler *s, struct sthread *st, struct td_sample *smp)
{
	struct td_kstack_frame f[TD_KERNEL_FRAMES];
	char text[TD_KSTACK_TEXT];
	unsigned n;

	smp->nkernel = 0;
	if (!s->sh->kallsyms)
		return;
	if (st->kstack_fd < 0)
		st->kstack_fd = td_kstack_open(st->pid, st->tid);
	if (st->kstack_fd < 0 || td_kstack_pread(st->kstack_fd, text, sizeof(text)) <= 0)
		return;
	n = td_kstack_parse(text, f, TD_KERNEL_FRAMES);
	for (unsigned i = 0; i < n; i++) {
		uint64_t ip = 0;

		sym_kallsyms_addr(s->sh->kallsyms, f[i].name, f[i].module, f[i].offset, &ip);
		smp->kernel_ips[smp->nkernel++] = ip;
	}
	atomic_fetch_add_explicit(&s->sh->kstacks_read, 1, memory_order_relaxed);
}

/* wall mode, one tick: every thread.  Blocked ones are copied without a
 * stop (or repeated); running ones are returned for the round, unless the
 * kernel samples them (perf): then only their time waiting for a CPU is
 * sampled here, and those that hold a lock a waiter waits for get an
 * early sample asked of the kernel, or with --owner-stops are returned
 * for the round to copy their stack (owners_chosen). */
unsigned wall_tick(struct sampler *s)
{
	struct rec_shared *sh = s->sh;
	uint64_t period = 1000000000u / s->cfg->hz;
	/* With perf, running time is sampled per period of CPU time and
	 * runnable time per period of wait: blocked time too is sampled per
	 * period of the time since the last tick, not once a tick, so that
	 * late ticks (a loaded machine, a high rate) cannot tilt the shares. */
	uint64_t dt = tick_dt(s, period);
	struct owner_ask ask[S_MAX_OWNER_ASKS];
	unsigned k = 0, nask = 0;

	for (unsigned i = 0; i < s->n; i++) {
		struct sthread *st = &s->th[i];
		struct td_sample *smp;
		struct pt_blocked b;
		uint32_t words[TD_FUTEX_WORDS];
		const uint32_t *futex;
		unsigned extra = 0; /* samples beyond the first */
		bool same_place, unseen;
		int r;

		if (st->leaving)
			continue; /* held at its exit: its time is over */
		maybe_fit(s, st);
		if (pt_tracer_group_stopped(s->t, st->tid)) {
			k += stopped_tick(s, st, dt, period, &s->chosen[k]);
			continue;
		}
		st->stop_copied = false;
		/* Not scheduled in since a look found it blocked: still in
		 * that wait, without a look (two reads of /proc a thread a
		 * tick were most of wall mode's cost with many idle
		 * threads).  Woken but not yet run, it is taken as still
		 * blocked; runnable_ticks pays that back. */
		unseen = s->switches && !s->switches_lost && st->perf && st->have_last &&
			st->ins == st->ins_looked;
		if (unseen) {
			b = st->last;
			r = 1;
		} else {
			st->ins_looked = st->ins;
			r = probe_fds(st) ? pt_blocked_probe(st->sys_fd, st->fd, &b) : -ENOENT;
			if (r < 0)
				continue;
		}
		if (st->covered && !unseen)
			woken_tick(st, &b);
		else if (st->perf && !st->covered)
			runnable_ticks(s, st, &b, r == 1, dt, !unseen);
		if (r == 1) {
			st->block_runs = b.run_count;
			st->seen_blocked = true;
		}
		if (r == 0) {
			st->have_last = false;
			st->running_tick = s->tick_ns;
			if (!st->perf)
				s->chosen[k++] = st->tid;
			continue;
		}
		if (st->perf) {
			extra = spend(&st->block_credit, dt, period);
			if (!extra--)
				continue; /* no whole period blocked yet */
		}
		if (unseen)
			st->skip_ns = TD_MIN(st->skip_ns + (extra + 1) * period, 1000000000u + period);
		futex = futex_words(st, &b, words);
		if (st->have_last && pt_blocked_same(&st->last, &b)) {
			owner_ask(s, st, &b, futex, false, ask, &nask);
			repeat_blocked(s, st, extra + 1, futex);
			continue;
		}
		same_place = st->have_last && st->last.sc.nr == b.sc.nr && st->last.sc.sp == b.sc.sp &&
			st->last.sc.pc == b.sc.pc;
		st->have_last = false;
		smp = ring_reserve_bytes(&sh->samples, td_sample_size(st->window));
		if (!smp) {
			atomic_fetch_add_explicit(&sh->lost_ring, 1, memory_order_relaxed);
			continue;
		}
		kstack_of(s, st, smp);
		r = pt_blocked_copy(st->pid, st->tid, &b, st->sys_fd, st->fd, smp, st->window, 0);
		if (r == -EAGAIN && same_place && st->perf) {
			/* It ran while we copied, so the copy may be torn; but the
			 * tick found it blocked, in the call, at the stack pointer
			 * and pc of its last good copy (an event loop waiting again
			 * where it always waits): that stack.  Dropping it would
			 * count against waiting threads alone. */
			st->have_last = true;
			owner_ask(s, st, &b, futex, false, ask, &nask);
			repeat_blocked(s, st, extra + 1, futex);
			continue;
		}
		if (r == -EAGAIN) {
			/* it ran while we copied: the copy may be torn */
			atomic_fetch_add_explicit(&sh->lost_torn, 1, memory_order_relaxed);
			continue;
		}
		if (r != 1)
			continue; /* gone: its exit follows */
		if (smp->nkernel)
			smp->flags |= TD_SAMPLE_KCHAIN;
		smp->comm[0] = '\0';
		st->last_disk = in_disk_wait(st, smp->comm);
		if (smp->comm[0])
			smp->flags |= TD_SAMPLE_NAMED;
		if (st->last_disk)
			smp->flags |= TD_SAMPLE_DISK;
		if (futex) {
			memcpy(smp->futex, futex, sizeof(smp->futex));
			smp->flags |= TD_SAMPLE_FUTEX;
			owner_ask(s, st, &b, futex, true, ask, &nask);
		}
		if (st->covered)
			smp->flags |= TD_SAMPLE_NO_ROWS;
		st->last = b;
		st->have_last = true;
		ring_publish_bytes(&sh->samples, td_sample_size(smp->stack_len));
		if (!st->covered)
			atomic_fetch_add_explicit(&sh->samples_taken, 1, memory_order_relaxed);
		mark_sampled(s, st->pid);
		repeat_blocked(s, st, extra, futex); /* more periods blocked since the last tick */
	}
	s->switches_lost = false;
	return owners_chosen(s, ask, nask, k);
}
