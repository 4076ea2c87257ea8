/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The writer's wait episodes (wall mode): a thread seen blocked on an
 * object (a mutex, a condition, a read...) is in an episode until it is
 * seen running, copied again somewhere else, or gone; each blocked sample
 * is a period of waiting, credited to the object's owner at that tick.
 * An episode becomes a WAITS record of each chunk it spans (the next
 * repeats its start, flagged as begun before).
 *
 * Guarantees: every open episode is written before its chunk ends
 * (episodes_close_chunk, called by writer_rotate); at most the first
 * TCF_WAIT_MAX_OWNERS owners of an episode are kept.  Leaves to
 * waits.c (wait_classify) what a blocked call waits for, and to
 * writer-stacks.c the stacks. */
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

/* The chunk's stack for thread tid's saved frames; 0 if none saved. */
static uint32_t saved_stack(struct writer *w, pid_t pid, pid_t tid)
{
	struct saved *sv = saved_of(w, tid, false);
	struct session *se;

	if (!sv || !sv->n || !(se = session_for(w, pid, true)))
		return 0;
	memcpy(w->stacks.u.pc, sv->pc, sv->n * sizeof(*sv->pc));
	memcpy(w->stacks.u.activation, sv->act, sv->n * sizeof(*sv->act));
	w->stacks.u.n = sv->n;
	w->stacks.u.end = sv->end;
	return stack_of_unwound(w, se->s, pid);
}

/* Write what the episode waited in the current chunk; with goes_on, it
 * goes on in the next chunk (which repeats its start). */
static void episode_write(struct writer *w, struct episode *ep, bool goes_on)
{
	struct chunk_wait cw = { .time_ns = ep->start_ns, .wait_ns = ep->wait_ns,
		.stack_id = ep->stack, .kind = wait_tcf_kind(ep->w.kind),
		.flags = ep->flags | (goes_on ? TCF_WAITF_GOES_ON : 0), .object = ep->w.object };

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
		ep->flags = TCF_WAITF_BEGAN_BEFORE;
		ep->wait_ns = 0;
		ep->nowners = 0;
		ep->stack = 0;
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
		if (futex)
			memcpy(ep->futex, futex, sizeof(ep->futex));
	} else if ((ep->w.kind == WAIT_MUTEX || ep->w.kind == WAIT_RWLOCK) && futex &&
		   memcmp(futex, ep->futex, sizeof(ep->futex))) {
		/* the lock changed hands while it waited: its owner at this
		 * tick (the classifier checks the owner is a live thread, in
		 * /proc: only when the lock's words moved, not at every tick) */
		for (i = 0; i < ep->nfuncs; i++)
			funcs[i] = ep->funcs[i];
		wait_classify(s->pid, s->tid, ep->w.nr, ep->args, futex, 'S', funcs, ep->nfuncs,
			&ep->w);
		memcpy(ep->futex, futex, sizeof(ep->futex));
	}
	ep->stack = stack;
	ep->wait_ns += period;
	owner = ep->w.owner;
	if (!owner || owner == s->tid)
		return;
	for (i = 0; i < ep->nowners && ep->owners[i].tid != owner; i++)
		;
	if (i == ep->nowners) {
		if (i == TCF_WAIT_MAX_OWNERS)
			return; /* the first eight owners are kept */
		ep->owners[i].tid = owner;
		ep->owners[i].wait_ns = 0;
		if (w->cw)
			thread_id(w, s->pid, owner); /* its name, while it lives */
		/* its stack: its first sample after the one that found it
		 * owning that does not show it waiting for this very object
		 * (taken before the lock changed hands, or after it gave the
		 * lock up and waits again); until then, its last such one */
		ep->owners[i].stack = waits_on(w, owner, ep) ? 0 : saved_stack(w, s->pid, owner);
		ep->owners[i].pending =
			td_map_set(&w->waits.owner_wait, (uint64_t)(uint32_t)owner, 1) >= 0;
		ep->nowners++;
	}
	ep->owners[i].wait_ns += period;
}

/* tid's sample, whose stack is stack, came (its own episode updated):
 * the owners that waited for it take it, unless it shows tid waiting for
 * their very object. */
void owner_seen(struct writer *w, pid_t tid, uint32_t stack)
{
	bool still = false;
	uint64_t v;

	if (!td_map_get(&w->waits.owner_wait, (uint64_t)(uint32_t)tid, &v))
		return;
	for (size_t k = 0; k < w->waits.n; k++) {
		struct episode *ep = &w->waits.eps[k];

		for (unsigned i = 0; ep->tid && i < ep->nowners; i++) {
			if (!ep->owners[i].pending || ep->owners[i].tid != tid)
				continue;
			if (waits_on(w, tid, ep)) {
				still = true;
				continue;
			}
			ep->owners[i].stack = stack;
			ep->owners[i].pending = false;
		}
	}
	if (!still)
		td_map_remove(&w->waits.owner_wait, (uint64_t)(uint32_t)tid);
}
