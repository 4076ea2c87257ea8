/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Off-CPU intervals of the perf capture (cfg.offcpu, wall mode), from the
 * switch records of a drain: perf.c opens the events and reads the rings;
 * this file pairs each switch out with the thread's next switch in, and
 * cuts each thread's time into stretches on a CPU and intervals off one.
 *
 * A second event per (thread, CPU), PERF_COUNT_SW_CONTEXT_SWITCHES at
 * period 1 (perf.c's attr_switch), copies the user registers and stack
 * each time the thread leaves a CPU, and its PERF_RECORD_SWITCH records
 * say when (and, going out, whether it was
 * preempted) and when it came back.  Each interval off a CPU becomes one
 * sample at the stack where it left, weighted by its duration in periods:
 * preempted, it waited for a CPU there; blocked, it waited in that call
 * (and, once woken, for a CPU: the caller splits that off).  The records
 * of one thread land in the rings of the CPUs it ran on, so a drain
 * first collects every switch record of every ring (sorted by thread and
 * time) and then pairs each switch-out sample with the thread's next
 * switch in.  An interval still open at the drain is weighed up to then
 * and continued (perf_continue_open) at each later drain until its
 * switch in (a sample without stack bytes, TD_SAMPLE_REPEAT: the thread's last
 * stack, its interval's): a long sleep shows while it lasts.  A drain
 * can read a ring while the kernel writes a record whose time it took
 * already (a switch-out sample's record, a switch in): the first records
 * of the thread at the next drain settle it, and time weighed twice is
 * owed back (owed_ns).  Nothing is stopped or interrupted: the kernel
 * writes all of it at the switch.
 *
 * Guarantees: every interval is weighed once (time weighed twice by a
 * drain's race is owed back, owed_ns); an interval whose end is unknown
 * (its switch in lost, too many records in one drain) is dropped and
 * counted, never weighed over time the thread spent on a CPU.  Leaves to
 * perf.c: the events, the rings, the task-clock samples and the periods.
 * Never allocates: the records go into the table pt_perf_new made.
 */
#define _GNU_SOURCE
#include "perf-internal.h"

#include <stdlib.h>
#include <string.h>

static int switch_cmp(const void *a, const void *b)
{
	const struct perf_switch *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

/* Where a switch record of tid at time would go among this drain's. */
static size_t switch_index(const struct pt_perf *p, uint32_t tid, uint64_t time)
{
	size_t lo = 0, hi = p->nsw;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct perf_switch *m = &p->sw[mid];

		if (m->tid < tid || (m->tid == tid && m->time < time))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first switch record of tid at or after time, or NULL. */
static const struct perf_switch *switch_after(const struct pt_perf *p, uint32_t tid,
	uint64_t time)
{
	size_t i = switch_index(p, tid, time);

	return i < p->nsw && p->sw[i].tid == tid ? &p->sw[i] : NULL;
}

/* Thread th's time on CPUs at time (of this drain) by its switch records:
 * on a CPU from a switch in to the next switch out. */
static uint64_t on_at(const struct pt_perf *p, const struct perf_thread *th, uint64_t time)
{
	size_t i = switch_index(p, (uint32_t)th->tid, time);
	const struct perf_switch *e =
		i && p->sw[i - 1].tid == (uint32_t)th->tid ? &p->sw[i - 1] : NULL;

	if (!e)
		return th->on_ns + (th->on_since && time > th->on_since ? time - th->on_since : 0);
	if (e->misc & PERF_RECORD_MISC_SWITCH_OUT)
		return th->on_ns + e->on;
	return th->on_ns + e->on + (time - e->time);
}

/* After the sort: each record's on.  A switch out without a switch in
 * before it (records lost, or a thread on a CPU since its add), the time
 * since the last one it knows of; two switches in, the first stretch is
 * lost with the record between. */
static void sum_on(struct pt_perf *p)
{
	for (size_t a = 0, b; a < p->nsw; a = b) {
		struct perf_thread *th;
		uint64_t acc = 0, since = 0;
		unsigned k;

		for (b = a + 1; b < p->nsw && p->sw[b].tid == p->sw[a].tid; b++)
			;
		if ((th = perf_thread_find(p, (pid_t)p->sw[a].tid, &k)) &&
			(!th->on_guess || (p->sw[a].misc & PERF_RECORD_MISC_SWITCH_OUT)))
			since = th->on_since;
		for (size_t i = a; i < b; i++) {
			struct perf_switch *e = &p->sw[i];

			if (!(e->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
				since = e->time;
			} else {
				if (since && e->time > since)
					acc += e->time - since;
				since = 0;
			}
			e->on = acc;
		}
	}
}

/* After the drain's samples: each thread's on_ns and on_since up to its
 * last record.  When records were not kept (sw_full), where a thread is
 * is unknown: taken as on a CPU from now if its next record is a switch
 * out, and what its records said of its time until now forgotten. */
void perf_carry_on(struct pt_perf *p, uint64_t now)
{
	for (size_t a = 0, b; a < p->nsw; a = b) {
		const struct perf_switch *e;
		struct perf_thread *th;
		unsigned k;

		for (b = a + 1; b < p->nsw && p->sw[b].tid == p->sw[a].tid; b++)
			;
		e = &p->sw[b - 1];
		if (!(th = perf_thread_find(p, (pid_t)e->tid, &k)))
			continue;
		th->on_ns += e->on;
		th->on_since = e->misc & PERF_RECORD_MISC_SWITCH_OUT ? 0 : e->time;
		th->on_guess = false;
		if (p->sw_full) {
			th->on_since = now;
			th->on_guess = true;
			th->on_weighed = th->on_ns;
		}
	}
}

/* The weight of a task-clock sample of thread th at time, with offcpu:
 * its time on CPUs since its previous one by its switch records, which
 * cut its time into stretches on a CPU and intervals off one without
 * overlap, less what intervals weighed of it already.  (The event's own
 * count runs past the records at each switch, 5 us a switch on the VM
 * where it was measured, time the intervals weigh too: a web server's
 * worker's weights added up to 3% more than its life; see
 * docs/notes/offcpu.md.)  A sample that another CPU's ring had from
 * earlier weighs nothing. */
uint32_t perf_weigh_on(struct pt_perf *p, struct perf_thread *th, uint64_t time)
{
	uint64_t on = on_at(p, th, time), gap = on > th->on_weighed ? on - th->on_weighed : 0;
	uint64_t owed = TD_MIN(gap, th->owed_ns);

	th->on_weighed = TD_MAX(th->on_weighed, on);
	th->owed_ns -= owed;
	return perf_periods_of(p, th, LINE_ON, gap - owed);
}

/* The flags of an interval off a CPU: preempted, it waited for one;
 * else it was blocked in the kernel (a system call, a fault). */
static uint32_t offcpu_flags(bool preempted)
{
	return TD_SAMPLE_OFFCPU | (preempted ? TD_SAMPLE_RUNNABLE : TD_SAMPLE_IN_SYSCALL);
}

/* The record after e if it is the same thread's, else NULL. */
static const struct perf_switch *switch_next(const struct pt_perf *p, const struct perf_switch *e)
{
	return e + 1 < p->sw + p->nsw && e[1].tid == e->tid ? e + 1 : NULL;
}

/* An interval that began at its switch-out sample's time, its record not
 * in the ring yet: from the sample (its time is taken before the stack is
 * copied) to the record, the thread's records have it on the CPU too.
 * At most a period: a stray record is no reason to drop CPU time. */
static void owe_copy(const struct pt_perf *p, struct perf_thread *th, uint64_t sample,
	uint64_t record)
{
	if (record > sample)
		th->owed_ns += TD_MIN(record - sample, p->cfg.period_ns);
}

/* A switch-out sample: the stack where the thread left the CPU, its
 * interval from its switch-out record (preempted or blocked, it says) to
 * its next switch in.  Without the switch in, open up to now, continued
 * at later drains; with a switch out instead, the switch in was lost
 * (PERF_RECORD_LOST): where it ended is unknown, and the interval is
 * dropped rather than weighed over time the thread spent on a CPU. */
void perf_take_switch(struct pt_perf *p, const struct perf_sample *ps, uint64_t now,
	const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st)
{
	const struct perf_switch *e = switch_after(p, ps->tid, ps->time);
	struct perf_thread *th;
	uint64_t out = ps->time, in = now;
	bool preempted = false, open = true, unsure = true;
	uint32_t weight;
	unsigned k;

	if (!(th = perf_thread_find(p, (pid_t)ps->tid, &k)))
		return; /* removed since */
	if (ps->abi == PERF_SAMPLE_REGS_ABI_NONE) {
		st->no_user_regs++; /* its last switch, past its exit */
		return;
	}
	if (e && (e->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		preempted = e->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		out = e->time;
		unsure = false;
		e = switch_next(p, e);
	}
	if (e && !(e->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		in = e->time;
		open = false;
	} else if (e || p->sw_full) {
		/* its switch in lost, or among the records not kept */
		st->unpaired++;
		return;
	}
	/* the tracer's time, not the program's: the interval that spans
	 * its exit stop (off a CPU there when the tracer saw it) and any
	 * after; one that began before its program did */
	if ((th->ended && in > th->ended) || out < th->begun)
		return;
	weight = perf_periods_of(p, th, preempted ? LINE_PREEMPTED : LINE_BLOCKED,
		in > out ? in - out : 0);
	if (open) {
		/* a drain can read the ring between the sample and its
		 * switch-out record: unsure, the record is taken at the
		 * next drain */
		th->open_since = now;
		th->open_at = ps->time;
		th->open_preempted = preempted;
		th->open_unsure = unsure;
	} else if (!weight) {
		st->thinned++; /* less than a period: its fraction is carried */
		return;
	}
	/* an open interval's stack goes now, even of weight 0: its
	 * continuations repeat it */
	perf_put_sample(ps, offcpu_flags(preempted), weight, out, ops, arg, st);
	st->offcpu++;
}

/* Thread th's open interval: weighed from open_since to its switch in,
 * else to now and kept open.  Every record of the thread in this drain
 * came after its switch-out sample, so its first one ends the interval
 * (after the interval's own switch-out record, when that came late): a
 * switch in whatever its time (a record the kernel was still writing
 * when the last drain read the ring can be older than open_since: that
 * much was weighed twice, and is owed), a switch out if the switch in
 * was lost (the interval ends where it was weighed to). */
void perf_continue_open(struct pt_perf *p, struct perf_thread *th, uint64_t now,
	const struct pt_round_ops *ops, void *arg, struct pt_perf_stats *st)
{
	struct td_sample *s;
	uint32_t window = 0;
	const struct perf_switch *e = switch_after(p, (uint32_t)th->tid, 0);
	uint64_t from = th->open_since, to = now;
	uint32_t weight;

	if (e && (e->misc & PERF_RECORD_MISC_SWITCH_OUT) && th->open_unsure) {
		th->open_preempted = e->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
		owe_copy(p, th, th->open_at, e->time);
		e = switch_next(p, e);
	}
	if (e)
		th->open_unsure = false;
	if (e && (e->misc & PERF_RECORD_MISC_SWITCH_OUT)) {
		th->open_since = 0;
		return;
	}
	if (e) {
		to = e->time;
		if (to < from) {
			th->owed_ns += from - to;
			to = from;
		}
	} else if (p->sw_full) {
		return; /* cannot tell: weighed at the next drain */
	}
	th->open_since = e ? 0 : now;
	if (th->ended && to > th->ended) {
		/* it spans the exit stop: the stop's, weighed no further */
		th->open_since = 0;
		return;
	}
	weight = perf_periods_of(p, th, th->open_preempted ? LINE_PREEMPTED : LINE_BLOCKED, to - from);
	if (!weight)
		return;
	/* no stack: a repeat of the thread's last, its interval's sample */
	s = ops->slot_get ? ops->slot_get(arg, th->pid, th->tid, &window) : NULL;
	if (!s) {
		st->dropped++;
		return;
	}
	memset(s, 0, sizeof(*s));
	s->pid = th->pid;
	s->tid = th->tid;
	s->time_ns = from;
	s->flags = TD_SAMPLE_PERF | TD_SAMPLE_REPEAT | offcpu_flags(th->open_preempted) |
		(weight != 1 ? TD_SAMPLE_WEIGHTED : 0);
	s->weight = weight;
	if (ops->slot_put)
		ops->slot_put(arg, s);
	st->samples++;
}

/* Pass one of a drain: every switch record up to each ring's head, for
 * the caller (who ran) and, with offcpu, sorted for pairing. */
void perf_collect_switches(struct pt_perf *p, const struct pt_round_ops *ops, void *arg,
	struct pt_perf_stats *st)
{
	p->nsw = 0;
	p->sw_full = false;
	for (unsigned c = 0; c < p->ncpus; c++) {
		struct perf_event_header eh;
		const uint8_t *rec;
		uint64_t tail;

		if (!p->ring[c])
			continue;
		tail = ((struct perf_event_mmap_page *)p->ring[c])->data_tail;
		for (; (rec = perf_record_at(p, c, &tail, &eh, st)); tail += eh.size) {
			/* sample_id: pid, tid (u32 each), time */
			struct perf_switch sw;

			if (eh.type != PERF_RECORD_SWITCH || eh.size < sizeof(eh) + 16)
				continue;
			memcpy(&sw.tid, rec + sizeof(eh) + 4, sizeof(sw.tid));
			memcpy(&sw.time, rec + sizeof(eh) + 8, sizeof(sw.time));
			sw.misc = eh.misc;
			if (ops->switched)
				ops->switched(arg, (pid_t)sw.tid, !(eh.misc & PERF_RECORD_MISC_SWITCH_OUT));
			if (!p->offcpu)
				continue;
			if (p->nsw == PERF_MAX_SWITCHES)
				p->sw_full = true;
			else
				p->sw[p->nsw++] = sw;
		}
	}
	if (p->offcpu) {
		qsort(p->sw, p->nsw, sizeof(*p->sw), switch_cmp);
		sum_on(p);
	}
}
