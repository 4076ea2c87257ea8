/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The service's follower table: which processes the service follows, has
 * asked a worker to attach, or was refused by, named by (PID, start time)
 * so that a PID reused by a later process names a new entry.  Pure
 * bookkeeping: it reads no /proc and attaches nothing (service.c
 * does both and tells it what happened).
 *
 *   (none) --follow_add()--> ASKED --follow_answer(0)--> FOLLOWED
 *                              |  \--follow_answer(gone)--> (none)
 *                              \--follow_answer(err)--> REFUSED
 *   REFUSED --follow_due() at retry_ns: the service asks again--> ASKED
 *   any --follow_remove() (exit), follow_sweep() (not seen by a scan),
 *         follow_drop_worker() (its worker stopped)--> (none)
 *
 * A refusal is reported once per process (follow_answer says when): the
 * retries back off from FOLLOW_RETRY_MIN_NS, doubling to
 * FOLLOW_RETRY_MAX_NS, and say nothing more unless the reason changes. */
#define _GNU_SOURCE
#include "service-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"

void follow_init(struct follow *f)
{
	memset(f, 0, sizeof(*f));
}

void follow_free(struct follow *f)
{
	free(f->e);
	td_map_free(&f->idx);
	memset(f, 0, sizeof(*f));
}

struct follow_entry *follow_find(struct follow *f, pid_t pid)
{
	uint64_t k;

	return td_map_get(&f->idx, (uint64_t)(uint32_t)pid, &k) ? &f->e[k - 1] : NULL;
}

/* e counted in held[] (d 1), or no more (d -1): around every change of
 * its state or worker.  A worker outside the rules (follow_renumber's
 * while it moves them) has no count. */
static void held_add(struct follow *f, const struct follow_entry *e, int d)
{
	if (e->state != FOLLOW_REFUSED && e->worker >= 0 && e->worker < SVC_MAX_RULES)
		f->held[e->worker] += (unsigned)d;
}

static void remove_at(struct follow *f, struct follow_entry *e)
{
	held_add(f, e, -1);
	td_map_remove(&f->idx, (uint64_t)(uint32_t)e->id.pid);
	*e = f->e[--f->n];
	if (e != &f->e[f->n]) /* the last moved into its place */
		(void)td_map_set(&f->idx, (uint64_t)(uint32_t)e->id.pid,
			(uint64_t)(e - f->e) + 1); /* replaces: never fails */
}

struct follow_entry *follow_seen(struct follow *f, const struct td_proc_id *id)
{
	struct follow_entry *e = follow_find(f, id->pid);

	if (e && e->id.start_time != id->start_time) {
		/* the PID names a later process: the one we knew is gone */
		remove_at(f, e);
		e = NULL;
	}
	if (e)
		e->seen = true;
	return e;
}

int follow_add(struct follow *f, const struct td_proc_id *id, int worker, const char *comm,
	struct follow_entry **ret_entry)
{
	struct follow_entry *e;

	if (f->n == FOLLOW_MAX)
		return -TD_E_LIMIT;
	if (td_array_grow(f->e, f->cap, (size_t)f->n + 1, 64) < 0 ||
		td_map_set(&f->idx, (uint64_t)(uint32_t)id->pid, (uint64_t)f->n + 1) < 0)
		return -ENOMEM;
	e = &f->e[f->n++];
	*e = (struct follow_entry){ .id = *id, .worker = worker, .state = FOLLOW_ASKED,
		.seen = true };
	held_add(f, e, 1);
	snprintf(e->comm, sizeof(e->comm), "%s", comm ? comm : "");
	*ret_entry = e;
	return 0;
}

bool follow_due(const struct follow_entry *e, uint64_t now_ns)
{
	return e->state == FOLLOW_REFUSED && now_ns >= e->retry_ns;
}

void follow_asked(struct follow *f, struct follow_entry *e, int worker)
{
	held_add(f, e, -1);
	e->state = FOLLOW_ASKED;
	e->worker = worker;
	held_add(f, e, 1);
}

enum follow_outcome follow_answer(struct follow *f, const struct td_proc_id *id, int err,
	uint64_t now_ns, struct follow_entry **ret_entry)
{
	struct follow_entry *e = follow_find(f, id->pid);
	bool first;

	/* an answer about a process the table no longer holds (it exited,
	 * or its PID is another's now) changes nothing */
	if (!e || e->state != FOLLOW_ASKED ||
		(id->start_time && e->id.start_time != id->start_time))
		return FOLLOW_STALE;
	*ret_entry = e;
	if (err == 0) {
		e->state = FOLLOW_FOLLOWED;
		e->backoff_ns = 0;
		e->err = 0;
		return FOLLOW_NOW_FOLLOWED;
	}
	if (err == -ESRCH || err == -TD_E_ZOMBIE) {
		/* it died before the seize: normal life */
		remove_at(f, e);
		*ret_entry = NULL;
		return FOLLOW_GONE;
	}
	first = e->err != err;
	e->err = err;
	held_add(f, e, -1);
	e->state = FOLLOW_REFUSED;
	e->backoff_ns = e->backoff_ns ? TD_MIN(e->backoff_ns * 2, FOLLOW_RETRY_MAX_NS) :
					FOLLOW_RETRY_MIN_NS;
	e->retry_ns = now_ns + e->backoff_ns;
	return first ? FOLLOW_REFUSED_NEW : FOLLOW_REFUSED_AGAIN;
}

bool follow_remove(struct follow *f, const struct td_proc_id *id)
{
	struct follow_entry *e = follow_find(f, id->pid);

	if (!e || (id->start_time && e->id.start_time != id->start_time))
		return false;
	remove_at(f, e);
	return true;
}

unsigned follow_sweep(struct follow *f)
{
	unsigned gone = 0;

	for (unsigned i = 0; i < f->n;) {
		struct follow_entry *e = &f->e[i];

		/* a followed process's exit comes from its tracer, with its
		 * status, maybe just after the scan that no longer sees it:
		 * forgotten here only if that never came (a second scan) */
		if (!e->seen && (e->state != FOLLOW_FOLLOWED || e->missed++)) {
			remove_at(f, e);
			gone++;
			continue;
		}
		if (e->seen)
			e->missed = 0;
		e->seen = false;
		i++;
	}
	return gone;
}

void follow_drop_worker(struct follow *f, int worker)
{
	for (unsigned i = 0; i < f->n;) {
		if (f->e[i].worker == worker) {
			remove_at(f, &f->e[i]);
			continue;
		}
		i++;
	}
}

void follow_renumber(struct follow *f, int from, int to)
{
	for (unsigned i = 0; i < f->n; i++)
		if (f->e[i].worker == from) {
			held_add(f, &f->e[i], -1);
			f->e[i].worker = to;
			held_add(f, &f->e[i], 1);
		}
}

unsigned follow_count(const struct follow *f, int worker, enum follow_state state)
{
	unsigned n = 0;

	for (unsigned i = 0; i < f->n; i++)
		if ((worker < 0 || f->e[i].worker == worker) && f->e[i].state == state)
			n++;
	return n;
}

unsigned follow_held(const struct follow *f, int worker)
{
	return worker >= 0 && worker < SVC_MAX_RULES ? f->held[worker] : 0;
}
