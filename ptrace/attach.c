/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Attaching to a process and reading its maps (the tracer's thread):
 * every thread of a process seized with PTRACE_SEIZE in passes over
 * /proc/PID/task until a pass finds none new (threads may be born while
 * we walk), refusals named for their real cause (a zombie, another
 * tracer, tracerd itself), and the stack mappings read from
 * /proc/PID/maps for the stop machine's stack copies (ptrace.c); the
 * slot of a process the kernel attached for us (a child: proc_new).
 * Leaves every stop and its resume to ptrace.c. */
#define _GNU_SOURCE
#include "ptrace-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_own_task(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	return access(path, F_OK) == 0;
}

static int count_one(pid_t tid, void *arg)
{
	(void)tid;
	++*(int *)arg;
	return 0;
}

static int count_tasks(pid_t pid)
{
	int n = 0, r = td_tasks_each(pid, count_one, &n);

	return r < 0 ? r : n;
}

struct attach_pass {
	struct pt_tracer *t;
	struct pt_proc *p;
	unsigned long opts;
	int seized, first_err;
};

/* Seize one tid of the pass unless it is known.  Returns non-zero only to
 * end the pass: -TD_E_LIMIT when the thread table is full. */
static int attach_one(pid_t tid, void *arg)
{
	struct attach_pass *a = arg;
	struct td_task_info info;
	int err;

	if (thread_find(a->t, tid))
		return 0;
	if (ptrace(PTRACE_SEIZE, tid, 0, a->opts) == 0) {
		if (!thread_insert(a->t, tid, a->p->pid)) {
			ptrace(PTRACE_DETACH, tid, 0, 0);
			return -TD_E_LIMIT;
		}
		a->seized++;
		return 0;
	}
	err = errno;
	if (err == ESRCH)
		return 0; /* exited meanwhile: normal life */
	/* EPERM also means "exiting" or "already ours" (auto-attached
	 * through PTRACE_O_TRACECLONE before we saw its stop). */
	if (td_task_info_read(a->p->pid, tid, &info) < 0)
		return 0;
	if (info.state == 'Z' || info.state == 'X')
		return 0;
	/* TracerPid names the tracer thread, not its process */
	if (info.tracer == gettid()) {
		if (thread_insert(a->t, tid, a->p->pid))
			a->seized++;
		return 0;
	}
	if (!a->first_err)
		a->first_err = info.tracer ? -TD_E_TRACED : -err;
	return 0;
}

/* One pass over /proc/PID/task; seizes every tid not yet known.  Returns the
 * number seized, or -errno when not even the process could be seized. */
static int attach_pass(struct pt_tracer *t, struct pt_proc *p, unsigned long opts)
{
	struct attach_pass a = { .t = t, .p = p, .opts = opts };
	int r = td_tasks_each(p->pid, attach_one, &a);

	if (r < 0)
		return r;
	if (a.first_err && p->nthreads == 0)
		return a.first_err;
	return a.seized;
}

/* Threads are still listed under p, whose PID is being attached again.
 * Is it the same process, which we trace (a duplicate attach)?  Otherwise
 * the process we attached is gone and something other than this tracer
 * reaped it (waitpid on our own child, say), so that we never saw its
 * threads exit: forget them, they are not the new process's. */
static bool proc_still_ours(const struct pt_proc *p)
{
	struct td_task_info info;

	if (td_proc_id_check(&p->id) != 1 || td_task_info_read(p->pid, p->pid, &info) < 0)
		return false;
	/* TracerPid names the tracer thread; a zombie leader may no longer
	 * show it, and its start time alone then says it is ours */
	return info.tracer == gettid() || info.state == 'Z';
}

static void proc_forget_threads(struct pt_tracer *t, struct pt_proc *p)
{
	for (unsigned i = 0; i < t->cap; i++) {
		if (!t->threads[i].tid || t->threads[i].pid != p->pid)
			continue;
		thread_remove(t, &t->threads[i]);
		i--; /* backward shift may have moved another entry here */
	}
}

/* The slot for pid: its own if one exists, else a free one (no attached
 * thread), else a new one; NULL at cfg.max_procs. */
static struct pt_proc *proc_slot(struct pt_tracer *t, pid_t pid)
{
	struct pt_proc *p = proc_find(t, pid);

	for (unsigned i = 0; !p && i < t->nprocs; i++)
		if (t->procs[i].nthreads == 0)
			p = &t->procs[i];
	if (!p && t->nprocs < t->cfg.max_procs) {
		p = &t->procs[t->nprocs++];
		*p = (struct pt_proc){ .mem_fd = -1 };
	}
	return p;
}

struct pt_proc *proc_new(struct pt_tracer *t, pid_t pid)
{
	struct pt_proc *p = proc_find(t, pid);

	/* threads still listed under the PID are of a process gone
	 * unseen: a new process holds it now */
	if (p && p->nthreads)
		proc_forget_threads(t, p);
	p = proc_slot(t, pid);
	if (!p)
		return NULL;
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	*p = (struct pt_proc){ .pid = pid, .id = { .pid = pid }, .alive = true, .vmas = p->vmas,
		.mem_fd = -1 };
	return p;
}

int pt_tracer_attach(struct pt_tracer *t, pid_t pid)
{
	unsigned long opts = 0;
	struct td_task_info info;
	struct td_proc_id id;
	struct pt_proc *p;
	int r, tasks;

	if (pid <= 0)
		return -ESRCH;
	if (pid == getpid() || is_own_task(pid))
		return -TD_E_SELF;
	p = proc_find(t, pid);
	if (p && p->nthreads) {
		if (proc_still_ours(p))
			return -TD_E_ATTACHED;
		proc_forget_threads(t, p);
	}
	r = td_proc_id_read(pid, &id);
	if (r < 0)
		return r;
	r = td_task_info_read(pid, pid, &info);
	if (r < 0)
		return r;
	tasks = count_tasks(pid);
	if (tasks < 0)
		return tasks;
	/* A zombie leader with live threads (main called pthread_exit) is a
	 * live process; a zombie leader alone is not. */
	if ((info.state == 'Z' || info.state == 'X') && tasks <= 1)
		return -TD_E_ZOMBIE;
	if (info.tracer && !is_own_task(info.tracer))
		return -TD_E_TRACED;

	p = proc_slot(t, pid);
	if (!p)
		return -TD_E_LIMIT;
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	/* a slot reused keeps its vmas buffer (allocated once) */
	*p = (struct pt_proc){ .pid = pid, .id = id, .alive = true, .vmas = p->vmas, .mem_fd = -1 };
	if (t->cfg.trace_clone)
		opts |= PTRACE_O_TRACECLONE;
	if (t->cfg.trace_exec)
		opts |= PTRACE_O_TRACEEXEC;
	if (t->cfg.trace_exit)
		opts |= PTRACE_O_TRACEEXIT;
	/* children inherit these options: their own children are followed
	 * too (never PTRACE_O_EXITKILL) */
	if (t->cfg.trace_fork)
		opts |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK;
	/* Threads born while we attach: rescan until a pass finds nothing new
	 * (with TRACECLONE, children of seized threads are attached for us). */
	do {
		r = attach_pass(t, p, opts);
		if (r < 0 && p->nthreads == 0)
			goto out_unwind;
	} while (r > 0);
	if (p->nthreads == 0) {
		r = -TD_E_NOTHREADS;
		goto out_unwind;
	}
	/* Now that its threads are ours the PID cannot name another process
	 * until we reap it: read the identity again, in case the process
	 * read above died before the seize. */
	td_proc_id_read(pid, &p->id);
	{
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		p->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	pt_tracer_refresh_maps(t, pid);
	return (int)p->nthreads;
out_unwind:
	if (r == -EPERM && td_task_info_read(pid, pid, &info) == 0 && info.tracer &&
		!is_own_task(info.tracer))
		r = -TD_E_TRACED;
	p->alive = false; /* no thread attached: the slot is free again */
	if (p == &t->procs[t->nprocs - 1])
		t->nprocs--;
	return r;
}

int pt_tracer_threads(const struct pt_tracer *t, pid_t pid, pid_t *tids, unsigned n)
{
	unsigned k = 0;

	for (unsigned i = 0; i < t->cap && k < n; i++)
		if (t->threads[i].tid && (pid == 0 || t->threads[i].pid == pid))
			tids[k++] = t->threads[i].tid;
	return (int)k;
}

static int vma_cmp(const void *a, const void *b)
{
	const struct pt_vma *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int pt_tracer_refresh_maps(struct pt_tracer *t, pid_t pid)
{
	struct pt_proc *p = proc_find(t, pid);
	char path[64], line[512];
	unsigned n = 0;
	FILE *f;

	if (!p)
		return -ESRCH;
	if (!p->vmas) {
		p->vmas = calloc(PT_MAX_VMAS, sizeof(*p->vmas));
		if (!p->vmas)
			return -ENOMEM;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (n < PT_MAX_VMAS && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &s, &e, perms) != 3)
			continue;
		if (perms[0] != 'r' || perms[1] != 'w')
			continue; /* stacks are readable and writable */
		p->vmas[n++] = (struct pt_vma){ s, e };
		if (strchr(line, '\n') == NULL) {
			int c;

			while ((c = fgetc(f)) != EOF && c != '\n')
				;
		}
	}
	fclose(f);
	qsort(p->vmas, n, sizeof(*p->vmas), vma_cmp);
	p->nvmas = n;
	return (int)n;
}
