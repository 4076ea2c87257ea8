/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The writer's wait episodes (wall mode): a thread seen blocked on an
 * object (a mutex, a condition, a read...) is in an episode until it is
 * seen running, copied again somewhere else, or gone; each blocked sample
 * is a period of waiting, credited to the object's owner at that tick.
 * An episode becomes a WAITS record of each chunk it spans (the next
 * repeats its start, flagged as begun before).  Its kind and its stack
 * are of one moment, the copy it began with: the repeats it counts after
 * that stand on the same stack, as a thread that left a CPU since (an
 * interval off a CPU later than the copy, episode_switched_out) ends it.
 *
 * An owner's stack is one of its samples taken while it held the object,
 * or none (TCF_WAITF_OWNERS_HELD): the waiter's samples bound the holding
 * (the one that read the owner from the object's words, and each later
 * one that read the same words), and an owner's sample counts only if
 * taken between two of them.  Samples come here nearly in time order (the
 * kernel's are drained before each tick's copies), so an owner's sample
 * taken after the waiter's latest one waits for the next: the same words
 * then take it, changed ones drop it.  The sampler asks the kernel for an
 * early sample of a running owner a waiter found (pt_perf_early), or,
 * with --owner-stops, stops it for its stack; and once that sample came
 * (a quarter of a tick later, or right after the stop) reads the waiters'
 * words again (REC_EV_HELD): the same ones take it at once.  A sample that only repeats a stack
 * taken earlier counts when the thread has not run since (blocked, or
 * woken and not yet run): the stack is still where it is.  A preempted
 * thread's repeat does not: it ran since its stack was taken.  What is
 * not seen between two ticks cannot be told apart: a lock let go and taken
 * again by the same owner between them, leaving the same words, reads as
 * held throughout.
 *
 * Guarantees: every open episode is written before its chunk ends
 * (episodes_close_chunk, called by writer_rotate); at most the first
 * TCF_WAIT_MAX_OWNERS owners of an episode are kept; never an owner's
 * stack from before the tick that found it owning or after one that saw
 * the object's words change (to within the few hundred ns between the
 * sampler's read of a repeat's words and its clock).  Leaves to waits.c
 * (wait_classify) what a blocked call waits for, and to writer-stacks.c
 * the stacks. */
#define _GNU_SOURCE
#include "writer-internal.h"

#include <stdio.h>
#include <string.h>

#include "../common/buf.h"

static struct episode *episode_of(struct writer *w, pid_t tid)
{
	uint32_t k = map_get(&w->waits.idx, (uint64_t)(uint32_t)tid);

	return k && w->waits.eps[k - 1].tid == tid ? &w->waits.eps[k - 1] : NULL;
}

/* Is thread tid itself in an episode on ep's object? */
static bool waits_on(struct writer *w, pid_t tid, const struct episode *ep)
{
	const struct episode *own = episode_of(w, tid);

	return own && own != ep && own->w.kind == ep->w.kind && own->w.object == ep->w.object;
}

/* Write what the episode waited in the current chunk; with goes_on, it
 * goes on in the next chunk (which repeats its start). */
static void episode_write(struct writer *w, struct episode *ep, bool goes_on)
{
	struct chunk_wait cw = { .time_ns = ep->start_ns, .wait_ns = ep->wait_ns,
		.stack_id = ep->stack, .kind = wait_tcf_kind(ep->w.kind),
		.flags = ep->flags | TCF_WAITF_OWNERS_HELD | (goes_on ? TCF_WAITF_GOES_ON : 0),
		.object = ep->w.object };

	if (ep->wait_ns && w->cw) {
		cw.thread_id = thread_id(w, ep->pid, ep->tid);
		cw.what = ep->w.what[0] ? chunk_writer_string(w->cw, ep->w.what) : 0;
		cw.nowners = ep->nowners;
		for (unsigned i = 0; i < ep->nowners; i++)
			cw.owners[i] = (struct chunk_wait_owner){ thread_id(w, ep->pid,
									  ep->owners[i].tid),
				ep->owners[i].stack, ep->owners[i].wait_ns };
		chunk_writer_wait(w->cw, &cw);
	}
	if (goes_on) {
		/* stack ids are the chunk's: the next one takes its own (the
		 * holding goes on, so does its bounds) */
		ep->flags = TCF_WAITF_BEGAN_BEFORE;
		ep->wait_ns = 0;
		ep->nowners = 0;
		ep->stack = 0;
		ep->cand = 0;
	} else {
		ep->tid = 0;
	}
}

void episode_end(struct writer *w, pid_t tid)
{
	struct episode *ep = episode_of(w, tid);

	if (ep)
		episode_write(w, ep, false);
}

/* An interval off a CPU is taken at its switch out, which comes after
 * the copy an episode was classified from (start_ns: taken once the
 * copy's second look found the thread still blocked, so after it left
 * the CPU for that wait) only if the thread ran since: that wait is over.
 * The ticks may not know yet (a switch in after the sampler's last drain:
 * sampler-wall.c takes the thread as unseen and repeats its last copy),
 * and the stack those repeats stand on (writer-stacks.c's saved stack) is
 * now this interval's, in another call: counted here they would put the
 * new wait's stack under the old wait's kind (a sleep's, in
 * __lll_lock_wait).  So the episode ends here, and the repeats that follow
 * belong to none (episode_sample); the next copy begins the new one. */
void episode_switched_out(struct writer *w, pid_t tid, uint64_t time_ns)
{
	struct episode *ep = episode_of(w, tid);

	if (ep && time_ns > ep->start_ns)
		episode_write(w, ep, false);
}

/* Before the chunk ends: what every open episode waited in it. */
void episodes_close_chunk(struct writer *w)
{
	for (size_t i = 0; i < w->waits.n; i++)
		if (w->waits.eps[i].tid)
			episode_write(w, &w->waits.eps[i], true);
}

static struct episode *episode_new(struct writer *w, pid_t pid, pid_t tid)
{
	size_t k;

	for (k = 0; k < w->waits.n && w->waits.eps[k].tid; k++)
		;
	if (k == w->waits.n) {
		if (td_array_grow(w->waits.eps, w->waits.cap, w->waits.n + 1, 64) < 0)
			return NULL;
		w->waits.n++;
	}
	if (td_map_set(&w->waits.idx, (uint64_t)(uint32_t)tid, k + 1) < 0)
		return NULL;
	w->waits.eps[k] = (struct episode){ .pid = pid, .tid = tid };
	return &w->waits.eps[k];
}

/* Do futex, read at the object of ep's wait, still say what its last
 * ones said (a join: the joined thread's TID still in its word; the words
 * after it are that thread's to change)? */
static bool same_words(const struct episode *ep, const uint32_t *futex)
{
	return ep->w.kind == WAIT_JOIN ? futex[0] == ep->futex[0] :
					 !memcmp(futex, ep->futex, sizeof(ep->futex));
}

/* ep's candidate stack of its current owner, if taken by held_to: the
 * owner's (entry i) unless it has one. */
static void cand_take(struct episode *ep, unsigned i)
{
	if (!ep->cand || ep->cand_ns > ep->held_to)
		return;
	if (i < ep->nowners && !ep->owners[i].stack)
		ep->owners[i].stack = ep->cand;
	ep->cand = 0;
}

/* The waiter's sample s read the words of ep's object: the owner they name
 * holds it from now (new: s was timed after the words were read, so only
 * a later read confirms a sample of it), or still holds it (a sample
 * after the bounds' end is taken). */
static void owner_bounds(struct writer *w, struct episode *ep, const struct td_sample *s, bool new)
{
	if (new) {
		ep->held_from = s->time_ns;
		ep->held_to = 0;
		ep->cand = 0;
		if (ep->w.owner)
			td_map_set(&w->waits.owner_wait, (uint64_t)(uint32_t)ep->w.owner, 1);
		return;
	}
	ep->held_to = s->time_ns;
}

/* The index of ep's entry of thread owner, added if new; ep->nowners if
 * it has none (the first TCF_WAIT_MAX_OWNERS are kept). */
static unsigned owner_index(struct writer *w, struct episode *ep, pid_t pid, pid_t owner)
{
	unsigned i;

	for (i = 0; i < ep->nowners && ep->owners[i].tid != owner; i++)
		;
	if (i == ep->nowners && i < TCF_WAIT_MAX_OWNERS) {
		ep->owners[i].tid = owner;
		ep->owners[i].wait_ns = 0;
		ep->owners[i].stack = 0;
		ep->nowners++;
		if (w->cw)
			thread_id(w, pid, owner); /* its name, while it lives */
	}
	return i;
}

/* A blocked sample of s->tid, whose stack in this chunk is stack: a new
 * episode for a fresh copy (classified from its call, arguments and
 * stack), the same one for a repeat; a period of waiting either way,
 * credited to the object's owner at this tick. */
void episode_sample(struct writer *w, const struct td_sample *s, uint32_t stack)
{
	struct episode *ep = episode_of(w, s->tid);
	const char *funcs[8];
	uint64_t period = 1000000000u / w->cfg->hz;
	const uint32_t *futex = (s->flags & TD_SAMPLE_FUTEX) ? s->futex : NULL;
	pid_t owner;
	unsigned i;

	if (!(s->flags & TD_SAMPLE_REPEAT) || !ep) {
		struct session *se = session_for(w, s->pid, false);

		if (ep)
			episode_write(w, ep, false);
		if (s->flags & TD_SAMPLE_REPEAT)
			return; /* a repeat of a wait seen before this chunk's writer knew */
		ep = episode_new(w, s->pid, s->tid);
		if (!ep)
			return;
		ep->start_ns = s->time_ns;
		ep->args[0] = s->regs.rdi, ep->args[1] = s->regs.rsi, ep->args[2] = s->regs.rdx;
		ep->args[3] = s->regs.r10, ep->args[4] = s->regs.r8, ep->args[5] = s->regs.r9;
		for (i = 0; se && i < w->stacks.u.n && ep->nfuncs < 8; i++) {
			struct sym_frame f[4];
			int n = sym_session_symbolize(se->s, w->stacks.u.pc[i], w->stacks.u.activation[i], true, f, 4);

			for (int k = 0; k < n && ep->nfuncs < 8; k++)
				if (f[k].function)
					snprintf(ep->funcs[ep->nfuncs++], sizeof(ep->funcs[0]), "%s",
						f[k].function);
		}
		for (i = 0; i < ep->nfuncs; i++)
			funcs[i] = ep->funcs[i];
		wait_classify(s->pid, s->tid, (long)s->regs.orig_rax, ep->args, futex,
			(s->flags & TD_SAMPLE_DISK) ? 'D' : 'S', funcs, ep->nfuncs, &ep->w);
		py_wait(se, s, &ep->w);
		if (futex)
			memcpy(ep->futex, futex, sizeof(ep->futex));
		owner_bounds(w, ep, s, true);
	} else if (futex && same_words(ep, futex)) {
		owner_bounds(w, ep, s, false); /* still held */
	} else if ((ep->w.kind == WAIT_MUTEX || ep->w.kind == WAIT_RWLOCK) && futex) {
		/* the lock changed hands while it waited: its owner at this
		 * tick (the classifier checks the owner is a live thread, in
		 * /proc: only when the lock's words moved, not at every tick) */
		for (i = 0; i < ep->nfuncs; i++)
			funcs[i] = ep->funcs[i];
		wait_classify(s->pid, s->tid, ep->w.nr, ep->args, futex, 'S', funcs, ep->nfuncs,
			&ep->w);
		memcpy(ep->futex, futex, sizeof(ep->futex));
		owner_bounds(w, ep, s, true);
	}
	ep->stack = stack;
	ep->wait_ns += period;
	owner = ep->w.owner;
	if (!owner || owner == s->tid || (i = owner_index(w, ep, s->pid, owner)) == ep->nowners)
		return;
	ep->owners[i].wait_ns += period;
	cand_take(ep, i); /* taken between two reads of the same words */
}

void episode_held(struct writer *w, pid_t tid, const uint32_t *futex, uint64_t time_ns)
{
	struct episode *ep = episode_of(w, tid);
	unsigned i;

	if (!ep || !ep->w.owner || !same_words(ep, futex))
		return;
	ep->held_to = TD_MAX(ep->held_to, time_ns);
	for (i = 0; i < ep->nowners && ep->owners[i].tid != ep->w.owner; i++)
		;
	cand_take(ep, i);
}

/* tid's sample s, whose stack is stack, came (its own episode updated):
 * for each episode whose object it holds, a stack of the holding, unless
 * it shows tid waiting for that very object. */
void owner_seen(struct writer *w, const struct td_sample *s, uint32_t stack)
{
	/* preempted: a repeat of the stack of its last sample, before it ran
	 * on (its time waiting for a CPU) */
	bool stale = (s->flags & (TD_SAMPLE_REPEAT | TD_SAMPLE_RUNNABLE | TD_SAMPLE_IN_SYSCALL)) ==
		     (TD_SAMPLE_REPEAT | TD_SAMPLE_RUNNABLE);
	uint64_t t = s->time_ns, v;
	bool still = false;

	if (!td_map_get(&w->waits.owner_wait, (uint64_t)(uint32_t)s->tid, &v))
		return;
	for (size_t k = 0; k < w->waits.n; k++) {
		struct episode *ep = &w->waits.eps[k];
		unsigned i;

		if (!ep->tid || ep->w.owner != s->tid)
			continue;
		still = true;
		if (stale || !stack || t < ep->held_from || waits_on(w, s->tid, ep))
			continue;
		for (i = 0; i < ep->nowners && ep->owners[i].tid != s->tid; i++)
			;
		if (t <= ep->held_to && i < ep->nowners) {
			if (!ep->owners[i].stack)
				ep->owners[i].stack = stack;
		} else if (!ep->cand || t < ep->cand_ns) {
			ep->cand = stack;
			ep->cand_ns = t;
		}
	}
	if (!still)
		td_map_remove(&w->waits.owner_wait, (uint64_t)(uint32_t)s->tid);
}
