/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The target set: the processes tracerd records and their threads, kept in
 * step with what the tracer reports.  It lives in the sampler thread and
 * calls ptrace only through ptrace/.
 *
 * A target is a process, named by (PID, start time): the PID alone names
 * it only until it is reaped, after which the number may name a later
 * process (ptrace/ attaches to that one as a new process, if asked to).
 * targets_attach records each target's identity as it attaches, so that
 * the writer can tell later whether /proc/PID still shows the target.
 *
 * Threads:
 *   attach           every thread found --ops->thread_add(found)--> member
 *   THREAD_NEW       (clone, or a first stop of an unknown tid) queued add
 *   THREAD_EXIT      queued remove
 *   EXEC             queued remove of the thread that called execve when
 *                    it was not the leader (it carries the leader's tid
 *                    now); a new image number, not yet sampled (the exit
 *                    hold)
 *   PROCESS_EXIT     the target is no longer live (its threads' exits came
 *                    before it)
 *   PROCESS_NEW      a child followed (record -- CMD): a new target, with
 *                    its one thread queued; its start time is read after
 *                    the round
 * Events come while a thread of a round may be stopped, so targets_note
 * only writes to fixed arrays; targets_apply passes the queue on after the
 * round.  When more changes come than the queue holds, the tracer's own
 * list of each live target's threads is taken instead (threads it adds
 * then are reported as born: their events were already told).  What
 * this file leaves to the sampler: its per-thread sampling state, and
 * telling the writer about threads. */
#define _GNU_SOURCE
#include "daemon-internal.h"

#include <errno.h>
#include <stdlib.h>


int targets_init(struct targets *ts, struct pt_tracer *tracer, unsigned max_procs)
{
	ts->tracer = tracer;
	ts->nprocs = ts->live = ts->npend = 0;
	ts->images = 0;
	ts->resync = false;
	ts->procs = calloc(max_procs, sizeof(*ts->procs));
	ts->cap = ts->procs ? max_procs : 0;
	return ts->procs ? 0 : -ENOMEM;
}

void targets_free(struct targets *ts)
{
	if (!ts)
		return;
	free(ts->procs);
	ts->procs = NULL;
	ts->cap = ts->nprocs = 0;
}

/* A number for a new image of a target: its exec, its attach or its fork. */
static uint32_t targets_new_image(struct targets *ts)
{
	if (!++ts->images)
		ts->images = 1;
	return ts->images;
}

int targets_attach(struct targets *ts, const pid_t *pids, unsigned n,
	const struct targets_ops *ops, void *arg, struct td_proc_id *ret_ids, pid_t *ret_pid)
{
	for (unsigned i = 0; i < n; i++) {
		struct target *tg = NULL;
		int r;

		/* a target that exited leaves its slot to the next */
		for (unsigned k = 0; k < ts->nprocs && !tg; k++)
			if (!ts->procs[k].live)
				tg = &ts->procs[k];
		if (!tg && ts->nprocs == ts->cap) {
			*ret_pid = pids[i];
			return -TD_E_LIMIT;
		}
		r = pt_tracer_attach(ts->tracer, pids[i]);
		if (r < 0) {
			*ret_pid = pids[i];
			return r;
		}
		if (!tg)
			tg = &ts->procs[ts->nprocs++];
		/* attached: the PID cannot name another process until the
		 * tracer reaps this one */
		if (td_proc_id_read(pids[i], &tg->id) < 0)
			tg->id = (struct td_proc_id){ .pid = pids[i] };
		tg->live = true;
		tg->sampled = false;
		tg->image = targets_new_image(ts);
		ts->live++;
		ret_ids[i] = tg->id;
		r = pt_tracer_threads(ts->tracer, pids[i], ts->scratch, REC_MAX_THREADS);
		for (int k = 0; k < r; k++)
			ops->thread_add(arg, pids[i], ts->scratch[k], true);
	}
	return 0;
}

static void queue(struct targets *ts, bool add, pid_t tid, pid_t pid)
{
	if (ts->npend == TARGETS_PENDING) {
		ts->resync = true;
		return;
	}
	ts->pend[ts->npend++] = (struct targets_change){ add, tid, pid };
}

bool targets_note(struct targets *ts, const struct pt_event *ev)
{
	switch (ev->kind) {
	case PT_EVENT_THREAD_NEW:
		queue(ts, true, ev->tid, ev->pid);
		break;
	case PT_EVENT_THREAD_EXIT:
		queue(ts, false, ev->tid, ev->pid);
		break;
	case PT_EVENT_EXEC: {
		struct target *tg = targets_find(ts, ev->pid);

		if (ev->old_tid != ev->tid)
			queue(ts, false, ev->old_tid, ev->pid);
		if (tg) {
			/* a new image: its mappings are still to be read */
			tg->image = targets_new_image(ts);
			tg->sampled = false;
		}
		break;
	}
	case PT_EVENT_PROCESS_NEW: {
		/* a child followed (record -- CMD): a target of its own, its
		 * identity read after the round (targets_apply) */
		struct target *tg = NULL;

		for (unsigned k = 0; k < ts->nprocs && !tg; k++)
			if (!ts->procs[k].live)
				tg = &ts->procs[k];
		if (!tg && ts->nprocs < ts->cap)
			tg = &ts->procs[ts->nprocs++];
		if (!tg)
			break; /* cannot be: the tracer holds as many processes */
		*tg = (struct target){ .id = { .pid = ev->pid }, .live = true, .id_unread = true,
			.image = targets_new_image(ts) };
		ts->live++;
		queue(ts, true, ev->tid, ev->pid);
		return true;
	}
	case PT_EVENT_PROCESS_EXIT: {
		/* ptrace/ attaches one live process per PID at most: this
		 * PID's live target is the one that exited */
		struct target *tg = targets_find(ts, ev->pid);

		if (tg) {
			tg->live = false;
			ts->live--;
			return true;
		}
		break;
	}
	default:
		break; /* signals and group-stops change no membership */
	}
	return false;
}

void targets_apply(struct targets *ts, const struct targets_ops *ops, void *arg)
{
	for (unsigned i = 0; i < ts->nprocs; i++) {
		struct target *tg = &ts->procs[i];

		/* a child's start time: it is ours until we reap it, so the
		 * PID still names it, unless its exit came already */
		if (tg->id_unread && tg->live)
			td_proc_id_read(tg->id.pid, &tg->id);
		tg->id_unread = false;
	}
	for (unsigned i = 0; i < ts->npend; i++) {
		if (ts->pend[i].add)
			ops->thread_add(arg, ts->pend[i].pid, ts->pend[i].tid, false);
		else
			ops->thread_remove(arg, ts->pend[i].tid);
	}
	ts->npend = 0;
	if (!ts->resync)
		return;
	/* more changes than the queue held: take the tracer's word */
	for (unsigned i = 0; i < ts->nprocs; i++) {
		pid_t pid = ts->procs[i].id.pid;
		int n;

		if (!ts->procs[i].live)
			continue;
		n = pt_tracer_threads(ts->tracer, pid, ts->scratch, REC_MAX_THREADS);
		for (int k = 0; k < n; k++)
			if (!ops->thread_known(arg, ts->scratch[k]))
				ops->thread_add(arg, pid, ts->scratch[k], false);
	}
	ts->resync = false;
}

unsigned targets_live(const struct targets *ts)
{
	return ts->live;
}

struct target *targets_find(struct targets *ts, pid_t pid)
{
	for (unsigned i = 0; i < ts->nprocs; i++)
		if (ts->procs[i].live && ts->procs[i].id.pid == pid)
			return &ts->procs[i];
	return NULL;
}
