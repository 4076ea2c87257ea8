/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ptrace stage: stop, capture, resume, detach (attaching and the maps:
 * attach.c).
 *
 * Guarantees: every thread we stop is resumed (or detached) on every path;
 * the request that resumes it is the one its stop calls for; signals the
 * target was meant to get are re-injected at once; a thread that vanishes is
 * counted, never an error of the whole operation; no PTRACE_O_EXITKILL, so a
 * killed tracer leaves the target running.  While a thread is held stopped
 * this file neither allocates, logs nor takes a lock: capture() touches only
 * the caller's slot and the preallocated tables.
 *
 * Per-thread states (struct pt_thread), with the function that moves them
 * (dispatch() hands each stop to the on_*_stop() for its kind):
 *
 *   (unknown) --attach_one(), on_clone_stop(), adopt()--> RUNNING
 *   (a child) --on_fork_stop() or adopt(): child_new()--> RUNNING
 *                                    (followed), or PTRACE_DETACH at its
 *                                    first stop (not followed)
 *   RUNNING  --pt_tracer_sample(): PTRACE_INTERRUPT--> want=1
 *   want=1   --on_event_stop(): capture()--> RUNNING
 *                                    (PTRACE_CONT, or PTRACE_LISTEN when the
 *                                     stop is a job-control group-stop)
 *   any      --on_signal_stop()--> PTRACE_CONT(sig): RUNNING
 *   any      --on_signal_stop(), ops->hold()--> held_sig
 *   held_sig --pt_tracer_release(): PTRACE_CONT(sig)--> RUNNING
 *   any      --on_exit_stop(), ops->hold_exit()--> held_exit
 *   held_exit --pt_tracer_release_exit(): PTRACE_CONT--> (its exit follows)
 *   any      --pt_tracer_detach(): INTERRUPT, on_event_stop(): PTRACE_DETACH
 *                                    --> (removed)
 *   any      --thread_gone() (WIFEXITED/WIFSIGNALED)--> (removed)
 *
 * Stops are collected with waitpid(-1, __WALL) and dispatched by tid, never
 * with a wait on one tid: when a process exits, an interrupted thread may
 * already be a zombie and the leader's exit is only reported after the other
 * zombies are reaped (docs/notes/ptrace.md).  Consequence for callers: the
 * tracer thread reaps every child of the process it runs in, so it must have
 * none of its own that something else waits for.
 */
#define _GNU_SOURCE
#include "ptrace.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptrace-internal.h"

struct pt_thread *thread_find(const struct pt_tracer *t, pid_t tid)
{
	uint64_t slot;

	return td_map_get(&t->thread_index, (uint32_t)tid, &slot) ? &t->threads[slot] : NULL;
}

struct pt_proc *proc_find(struct pt_tracer *t, pid_t pid)
{
	for (unsigned i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid)
			return &t->procs[i];
	return NULL;
}

struct pt_thread *thread_insert(struct pt_tracer *t, pid_t tid, pid_t pid)
{
	struct pt_proc *p = proc_find(t, pid);
	struct pt_thread *th;
	unsigned slot;

	if (!t->nfree || !p)
		return NULL;
	th = thread_find(t, tid);
	if (th)
		return th;
	slot = t->free_slots[t->nfree - 1];
	if (td_map_set(&t->thread_index, (uint32_t)tid, slot) < 0)
		return NULL; /* cannot happen: sized for max_threads */
	t->nfree--;
	t->threads[slot] = (struct pt_thread){ .tid = tid, .pid = pid };
	p->nthreads++;
	return &t->threads[slot];
}

/* The slot is free again; no other thread moves, so pointers to them and
 * a walk over the slots stay valid. */
void thread_remove(struct pt_tracer *t, struct pt_thread *th)
{
	struct pt_proc *p = proc_find(t, th->pid);

	if (th->want || th->detach_want)
		t->pending--;
	if (th->held_sig)
		t->nheld--;
	if (p && p->nthreads)
		p->nthreads--;
	td_map_remove(&t->thread_index, (uint32_t)th->tid);
	th->tid = 0;
	t->free_slots[t->nfree++] = (unsigned)(th - t->threads);
}

static void emit(struct pt_tracer *t, const struct pt_event *ev)
{
	if (t->ops && t->ops->event)
		t->ops->event(t->arg, ev);
}

int pt_tracer_new(const struct pt_config *cfg, struct pt_tracer **ret_tracer)
{
	struct pt_tracer *t;
	sigset_t set, old;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cfg = *cfg;
	if (t->cfg.max_threads == 0)
		t->cfg.max_threads = 8192;
	if (t->cfg.max_procs == 0)
		t->cfg.max_procs = 64;
	if (t->cfg.max_inflight == 0)
		t->cfg.max_inflight = 4;
	t->cap = t->cfg.max_threads;
	t->threads = calloc(t->cap, sizeof(*t->threads));
	t->free_slots = calloc(t->cap, sizeof(*t->free_slots));
	t->procs = calloc(t->cfg.max_procs, sizeof(*t->procs));
	if (!t->threads || !t->free_slots || !t->procs ||
		td_map_init_fixed(&t->thread_index, t->cfg.max_threads) < 0)
		goto out_free;
	for (unsigned k = 0; k < t->cap; k++)
		t->free_slots[k] = t->cap - 1 - k; /* slot 0 on top */
	t->nfree = t->cap;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	t->unblock_sigchld = !sigismember(&old, SIGCHLD);
	t->stats = &t->scratch;
	t->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (t->sigfd < 0)
		goto out_unblock;
	*ret_tracer = t;
	return 0;
out_unblock:
	if (t->unblock_sigchld)
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
out_free:
	free(t->threads);
	free(t->free_slots);
	free(t->procs);
	td_map_free(&t->thread_index);
	free(t);
	return -ENOMEM;
}

static void pt_tracer_let_go(struct pt_tracer *t);

void pt_tracer_free(struct pt_tracer *t)
{
	if (!t)
		return;
	if (t->cfg.detach_by_exit)
		pt_tracer_let_go(t);
	else
		pt_tracer_detach(t, 0, 2000);
	for (unsigned i = 0; i < t->nprocs; i++) {
		free(t->procs[i].vmas);
		if (t->procs[i].mem_fd >= 0)
			close(t->procs[i].mem_fd);
	}
	if (t->sigfd >= 0)
		close(t->sigfd);
	if (t->unblock_sigchld) {
		/* The SIGCHLDs of our tracees left pending are discarded or go
		 * to the caller's handler, like any other child's. */
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGCHLD);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	free(t->threads);
	free(t->free_slots);
	free(t->procs);
	td_map_free(&t->thread_index);
	free(t);
}

int pt_tracer_fd(const struct pt_tracer *t)
{
	return t->sigfd;
}


static uint64_t stack_end_of(const struct pt_proc *p, uint64_t sp)
{
	unsigned lo = 0, hi = p ? p->nvmas : 0;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (sp < p->vmas[mid].start)
			hi = mid;
		else if (sp >= p->vmas[mid].end)
			lo = mid + 1;
		else
			return p->vmas[mid].end;
	}
	return 0;
}

ssize_t pt_read_memory(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(tid, &local, 1, &remote, 1, 0);

	return n < 0 ? -errno : n;
}

ssize_t pt_read_memoryv(pid_t tid, const struct iovec *local, const struct iovec *remote,
	unsigned n_iov)
{
	ssize_t n = process_vm_readv(tid, local, n_iov, remote, n_iov, 0);

	return n < 0 ? -errno : n;
}

/* With the thread stopped: registers, then one copy of the stack window.
 * No allocation, no lock, no log.  Returns the filled slot or NULL. */
static struct td_sample *capture(struct pt_tracer *t, struct pt_thread *th, uint32_t flags)
{
	struct pt_proc *p = proc_find(t, th->pid);
	struct td_sample *s = NULL;
	struct iovec iov;
	uint32_t window = 0;
	uint64_t sp, end, len;
	ssize_t n;

	th->want = false;
	t->pending--;
	if (t->ops && t->ops->slot_get)
		s = t->ops->slot_get(t->arg, th->pid, th->tid, &window);
	if (!s) {
		t->stats->dropped++;
		return NULL;
	}
	s->pid = th->pid;
	s->tid = th->tid;
	s->flags = flags;
	s->stack_len = 0;
	s->stopped_ns = 0;
	iov.iov_base = &s->regs;
	iov.iov_len = sizeof(s->regs);
	if (ptrace(PTRACE_GETREGSET, th->tid, NT_PRSTATUS, &iov) < 0) {
		t->stats->gone++; /* killed while stopped; its exit follows */
		return NULL;
	}
	s->time_ns = td_now_ns();
	if ((long)s->regs.orig_rax >= 0)
		s->flags |= TD_SAMPLE_IN_SYSCALL;
	sp = s->regs.rsp;
	end = stack_end_of(p, sp);
	len = window;
	if (end > sp && end - sp < len)
		len = end - sp;
	s->stack_addr = sp;
	s->stack_end = end;
	n = pt_read_memory(th->tid, sp, s->stack, len);
	if (n < 0 && n != -ESRCH && p && p->mem_fd >= 0) {
		n = pread(p->mem_fd, s->stack, len, (off_t)sp);
		if (n >= 0)
			s->flags |= TD_SAMPLE_STACK_PROCMEM;
	}
	if (n < 0) {
		s->flags |= TD_SAMPLE_STACK_FAILED;
		n = 0;
	}
	s->stack_len = (uint32_t)n;
	return s;
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static void thread_gone(struct pt_tracer *t, struct pt_thread *th, int status)
{
	struct pt_event ev = { .kind = PT_EVENT_THREAD_EXIT, .pid = th->pid, .tid = th->tid,
		.status = status };
	struct pt_proc *p = proc_find(t, th->pid);

	if (th->want)
		t->stats->gone++;
	thread_remove(t, th);
	emit(t, &ev);
	if (p && ev.tid == p->pid) {
		/* The leader is reported after every other thread. */
		ev.kind = PT_EVENT_PROCESS_EXIT;
		p->alive = false;
		emit(t, &ev);
	}
}

/* A PTRACE_EVENT_STOP: ours, a new thread's first stop, a group-stop, or the
 * notification that a group-stop ended.  Capture if asked, then resume as
 * the stop calls for: LISTEN keeps a job-control stop in force, CONT
 * otherwise (always CONT would let the target escape kill -STOP). */
static void on_event_stop(struct pt_tracer *t, struct pt_thread *th, int sig)
{
	struct td_sample *s = NULL;
	/* An upper bound: it includes the time the thread still ran between
	 * our interrupt and its trap. */
	uint64_t stop_start = th->interrupt_ns;
	pid_t tid = th->tid;
	bool detach;

	if (is_stop_signal(sig)) {
		if (!th->group_stopped) {
			struct pt_event ev = { .kind = PT_EVENT_GROUP_STOP, .pid = th->pid,
				.tid = tid, .signo = sig };

			th->group_stopped = true;
			emit(t, &ev);
		}
	} else {
		th->group_stopped = false;
	}
	if (th->want)
		s = capture(t, th, th->group_stopped ? TD_SAMPLE_GROUP_STOPPED : 0);
	th->late = false;
	th->misses = 0;
	detach = th->detach_want || (s && (t->round_flags & PT_ROUND_DETACH));
	if (detach) {
		/* A group-stopped thread stays stopped after the detach. */
		ptrace(PTRACE_DETACH, tid, 0, 0);
		thread_remove(t, th);
	} else {
		ptrace(th->group_stopped ? PTRACE_LISTEN : PTRACE_CONT, tid, 0, 0);
	}
	/* ESRCH from the resume: killed while stopped; its exit follows. */
	if (s) {
		s->stopped_ns = td_now_ns() - stop_start;
		t->stats->captured++;
		t->ops->slot_put(t->arg, s);
	}
}

/* Any ptrace stop consumes a pending PTRACE_INTERRUPT (the kernel's
 * ptrace_stop() clears JOBCTL_TRAP_STOP for every trap): a thread that
 * stopped for a signal, an exec or a clone while we waited for its
 * interrupt would never report it, and one left 'late' would never be
 * interrupted again.  Called after resuming it from such a stop. */
static void rearm(struct pt_thread *th)
{
	th->late = false;
	if (th->want || th->detach_want)
		ptrace(PTRACE_INTERRUPT, th->tid, 0, 0); /* ESRCH: its exit follows */
}

/* Child pid of process parent (0: unknown), attached by the kernel
 * (trace_fork), seen by its first stop or its parent's fork event,
 * whichever came first: followed as a process of its own (follow_forks,
 * room), or left to be let go at its first stop (adopt).  The second of
 * the two reports finds the decision in t->children and changes nothing:
 * the child may have run, exited and been reaped in between, and a
 * thread taken in then would be a ghost that no exit removes.  Reads
 * nothing, opens nothing: other threads may be stopped.  Returns its
 * thread when it is followed, else NULL. */
static struct pt_thread *child_new(struct pt_tracer *t, pid_t pid, pid_t parent)
{
	struct pt_event ev = { .kind = PT_EVENT_PROCESS_NEW, .pid = pid, .tid = pid,
		.old_tid = parent };
	struct pt_thread *th = thread_find(t, pid);
	struct pt_proc *p;

	if (th)
		return th;
	for (unsigned k = 0; k < TD_MIN(t->nchildren, (unsigned)PT_CHILDREN_SEEN); k++)
		if (t->children[k] == pid)
			return NULL;
	t->children[t->nchildren++ % PT_CHILDREN_SEEN] = pid;
	if (t->cfg.follow_forks && (p = proc_new(t, pid))) {
		th = thread_insert(t, pid, pid);
		if (th) {
			emit(t, &ev);
			return th;
		}
		p->alive = false; /* no thread: the slot is free again */
	}
	ev.kind = PT_EVENT_CHILD_LEFT;
	ev.status = t->cfg.follow_forks ? -TD_E_LIMIT : 0;
	emit(t, &ev);
	return NULL;
}

/* The first stop of a tid we do not know: a new thread's first stop can
 * come before its creator's PTRACE_EVENT_CLONE, and a child's (trace_fork)
 * before its parent's fork event.  A thread is taken into the table if it
 * belongs to a process we trace and there is room, a child if child_new
 * follows it; else it is let go at once (over the bound, not followed):
 * from this first stop (PTRACE_EVENT_STOP, SIGTRAP, no signal pending for
 * it: PTRACE_SEIZE's children get no SIGSTOP) it runs on as if never
 * traced.  NULL then. */
static struct pt_thread *adopt(struct pt_tracer *t, pid_t tid)
{
	pid_t pid = td_tgid_of(tid);
	struct pt_event ev = { .kind = PT_EVENT_THREAD_NEW, .tid = tid, .pid = pid };
	struct pt_proc *p = pid ? proc_find(t, pid) : NULL;
	struct pt_thread *th;

	if (t->cfg.trace_fork && pid == tid && !(p && p->alive && p->nthreads))
		th = child_new(t, pid, 0);
	else if ((th = pid ? thread_insert(t, tid, pid) : NULL))
		emit(t, &ev);
	if (!th)
		ptrace(PTRACE_DETACH, tid, 0, 0);
	return th;
}

/* PTRACE_EVENT_FORK or VFORK (trace_fork): th made a child, whose PID the
 * event message holds.  A vfork's parent then waits until the child execs
 * or exits: both are resumed at once, the child at its first stop. */
static void on_fork_stop(struct pt_tracer *t, struct pt_thread *th)
{
	unsigned long msg = 0;

	if (ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg) == 0 && msg)
		child_new(t, (pid_t)msg, th->pid);
	ptrace(PTRACE_CONT, th->tid, 0, 0);
	rearm(th);
}

/* PTRACE_EVENT_CLONE: th made a thread, whose tid the event message holds.
 * The new thread's own first stop may have come first (it is known then),
 * and it may even have run, exited and been reaped already: waitpid finds
 * the newest tracee first, so a thread that lives for microseconds can be
 * gone before its creator's report is read.  Taking that report as a
 * birth would count the thread twice and keep a ghost in the table that
 * no exit ever removes.  A thread that exited but is not reaped yet still
 * exists here; its exit follows. */
static void on_clone_stop(struct pt_tracer *t, struct pt_thread *th)
{
	unsigned long msg = 0;

	if (ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg) == 0 && !thread_find(t, (pid_t)msg) &&
		!(tgkill(th->pid, (pid_t)msg, 0) < 0 && errno == ESRCH)) {
		struct pt_event ev = { .kind = PT_EVENT_THREAD_NEW, .pid = th->pid,
			.tid = (pid_t)msg };

		if (thread_insert(t, (pid_t)msg, th->pid))
			emit(t, &ev);
	}
	ptrace(PTRACE_CONT, th->tid, 0, 0);
	rearm(th);
}

/* PTRACE_EVENT_EXEC: the other threads were reported dead before this;
 * the exec'ing thread, whose former tid the event message holds, now
 * carries the leader's tid. */
static void on_exec_stop(struct pt_tracer *t, struct pt_thread *th)
{
	struct pt_event ev = { .kind = PT_EVENT_EXEC, .pid = th->pid, .tid = th->tid,
		.old_tid = th->tid };
	struct pt_proc *p = proc_find(t, th->pid);
	unsigned long msg = 0;

	if (ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg) == 0 && (pid_t)msg != th->tid) {
		struct pt_thread *old = thread_find(t, (pid_t)msg);

		ev.old_tid = (pid_t)msg;
		if (old)
			thread_remove(t, old);
	}
	if (p)
		p->nvmas = 0; /* the old mappings are gone */
	emit(t, &ev);
	ptrace(PTRACE_CONT, th->tid, 0, 0);
	rearm(th);
}

/* Does sig's default action end the process (terminate or dump core)? */
static bool default_kills(int sig)
{
	switch (sig) {
	case SIGCHLD: case SIGCONT: case SIGURG: case SIGWINCH:
	case SIGSTOP: case SIGTSTP: case SIGTTIN: case SIGTTOU:
		return false;
	}
	return sig > 0;
}

/* The comm of sender (a PID in pid's PID namespace) into the senders
 * ring, "" if it is gone or numbered in a namespace other than ours (our
 * /proc would name another process).  The file is the sender's: bounded
 * here, escaped by whoever prints it. */
static void sender_read(struct pt_tracer *t, pid_t pid, pid_t sender)
{
	unsigned i = t->nsenders++ % TD_ARRAY_SIZE(t->senders);
	char path[64], buf[64];
	struct stat ns;
	int n;

	t->senders[i].pid = sender;
	t->senders[i].comm[0] = '\0';
	if (!t->pidns_ino && stat("/proc/self/ns/pid", &ns) == 0) {
		t->pidns_dev = ns.st_dev;
		t->pidns_ino = ns.st_ino;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	if (stat(path, &ns) < 0 || ns.st_ino != t->pidns_ino || ns.st_dev != t->pidns_dev)
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)sender);
	n = td_read_text(AT_FDCWD, path, buf, sizeof(buf));
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (n > 0)
		snprintf(t->senders[i].comm, sizeof(t->senders[i].comm), "%.15s", buf);
}

/* What siginfo says of th's signal, kept in th and told in ev: the
 * address only for a fault the kernel raised (SEGV_*, BUS_*, ILL_*,
 * FPE_*; for a kill() the same bytes hold the sender's PID and uid), the
 * sender only where the kernel or the sender filled it in. */
static void signal_note(struct pt_tracer *t, struct pt_thread *th, int sig,
	const siginfo_t *si, struct pt_event *ev)
{
	struct pt_proc *p = proc_find(t, th->pid);
	int code = si->si_code;

	ev->code = code;
	if (code > 0 && code < SI_KERNEL &&
		(sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE))
		ev->addr = (uint64_t)(uintptr_t)si->si_addr;
	if (code == SI_USER || code == SI_TKILL || code == SI_QUEUE || code == SI_MESGQ) {
		ev->sender = si->si_pid;
		ev->uid = si->si_uid;
	}
	th->last_sig = sig;
	th->sig_code = code;
	th->sig_pid = ev->sender;
	th->sig_uid = ev->uid;
	th->sig_addr = ev->addr;
	if (p && default_kills(sig)) {
		p->sig_tid = th->tid;
		if (ev->sender > 0)
			sender_read(t, th->pid, ev->sender);
	}
}

/* th took the signal its process dies of (sig, or held in its delivery
 * when sig is 0): its siginfo into its sample. */
static void siginfo_fill(struct pt_tracer *t, const struct pt_thread *th, int sig,
	struct td_sample *s)
{
	struct pt_proc *p = proc_find(t, th->pid);

	if (!th->last_sig || (sig ? sig != th->last_sig || !p || p->sig_tid != th->tid :
				    th->held_sig != th->last_sig))
		return;
	s->flags |= TD_SAMPLE_SIGINFO;
	s->signo = th->last_sig;
	s->si = (struct td_siginfo){ .code = th->sig_code, .pid = th->sig_pid, .uid = th->sig_uid,
		.addr = th->sig_addr };
	for (unsigned k = 0; th->sig_pid > 0 && k < TD_ARRAY_SIZE(t->senders); k++) {
		unsigned i = (t->nsenders - 1 - k) % TD_ARRAY_SIZE(t->senders);

		if (k < t->nsenders && t->senders[i].pid == th->sig_pid) {
			memcpy(s->si.comm, t->senders[i].comm, sizeof(s->si.comm));
			break;
		}
	}
}

/* PTRACE_EVENT_EXIT: the thread is leaving; a death by a signal is the
 * last look at its stack (exit_mm comes after this stop).  The exit status
 * (the event message) is the process's: a thread zapped by an exec leaves
 * with 0 and is not a death.  An interrupt of ours it took instead is
 * counted gone when its exit comes.  ops->hold_exit may keep it here. */
static void on_exit_stop(struct pt_tracer *t, struct pt_thread *th)
{
	struct td_sample *smp = NULL;
	uint64_t stop_start = td_now_ns();
	unsigned long msg = 0;

	if (th->held_sig) {
		/* killed while held in a signal stop (another thread's exit):
		 * that stop is over, its signal moot */
		th->held_sig = 0;
		t->nheld--;
	}

	if (ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg) == 0 && WIFSIGNALED((int)msg) && t->ops &&
		t->ops->slot_get) {
		if (!th->want) {
			th->want = true;
			t->pending++;
		}
		smp = capture(t, th, TD_SAMPLE_DEATH);
		if (smp) {
			smp->signo = WTERMSIG((int)msg);
			siginfo_fill(t, th, smp->signo, smp);
		}
	}
	if (smp) {
		/* handed on before the hold is decided: a death's stack is a
		 * sample the writer must unwind too */
		smp->stopped_ns = td_now_ns() - stop_start;
		t->stats->captured++;
		t->ops->slot_put(t->arg, smp);
	}
	if (!th->detach_want && t->ops && t->ops->hold_exit &&
		t->ops->hold_exit(t->arg, th->pid, th->tid)) {
		/* stays at its exit until pt_tracer_release_exit; an interrupt
		 * of ours it owes will never stop it */
		th->held_exit = true;
		if (th->want) {
			th->want = false;
			t->pending--;
			t->stats->gone++;
		}
	} else {
		ptrace(PTRACE_CONT, th->tid, 0, 0);
	}
}

/* A signal-delivery-stop: the signal goes on at once (with the detach, if
 * one is wanted), unless ops->hold keeps the thread stopped for a crash
 * capture until pt_tracer_release.  It took the place of an interrupt of
 * ours, if one was pending: rearm() asks again.  For a signal that would
 * end the process, its sender's comm is read from /proc here, while the
 * thread is stopped: the sender of a kill() may be gone a moment later. */
static void on_signal_stop(struct pt_tracer *t, struct pt_thread *th, int sig)
{
	struct pt_event ev = { .kind = PT_EVENT_SIGNAL, .pid = th->pid, .tid = th->tid,
		.signo = sig };
	siginfo_t si;

	th->last_sig = 0;
	if (ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si) == 0)
		signal_note(t, th, sig, &si, &ev);
	emit(t, &ev);
	if (!th->detach_want && t->ops && t->ops->hold && t->ops->hold(t->arg, &ev)) {
		th->held_sig = sig;
		t->nheld++;
		return;
	}
	if (th->detach_want) {
		ptrace(PTRACE_DETACH, th->tid, 0, (void *)(long)sig);
		thread_remove(t, th);
	} else {
		ptrace(PTRACE_CONT, th->tid, 0, (void *)(long)sig);
		rearm(th);
	}
}

/* One report of waitpid(-1, __WALL) for tid, handed to the function for
 * its kind of stop (the event is in the status's high bits, 0 for a
 * signal-delivery-stop). */
static void dispatch(struct pt_tracer *t, pid_t tid, int status)
{
	struct pt_thread *th = thread_find(t, tid);

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (th)
			thread_gone(t, th, status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	if (!th && !(th = adopt(t, tid)))
		return;
	switch ((unsigned)status >> 16) {
	case PTRACE_EVENT_STOP:
		on_event_stop(t, th, WSTOPSIG(status));
		return;
	case PTRACE_EVENT_CLONE:
		on_clone_stop(t, th);
		return;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		on_fork_stop(t, th);
		return;
	case PTRACE_EVENT_EXEC:
		on_exec_stop(t, th);
		return;
	case PTRACE_EVENT_EXIT:
		on_exit_stop(t, th);
		return;
	case 0:
		on_signal_stop(t, th, WSTOPSIG(status));
		return;
	default:
		ptrace(PTRACE_CONT, tid, 0, 0);
		rearm(th);
		return;
	}
}

/* Interrupt more of the round's threads while fewer than max_inflight are
 * outstanding.  A thread that does not stop (uninterruptible sleep) must
 * not hold a slot forever: after 10 ms without progress one more is sent. */
static void refill(struct pt_tracer *t)
{
	uint64_t now = 0;

	while (t->round_next < t->round_n) {
		struct pt_thread *th;

		if (t->pending >= t->cfg.max_inflight) {
			now = now ? now : td_now_ns();
			if (now - t->round_last_issue_ns < 10000000u)
				return;
		}
		th = thread_find(t, t->round_tids[t->round_next++]);
		if (!th) {
			t->stats->gone++;
			continue;
		}
		if (th->want || th->detach_want)
			continue;
		if (th->held_exit) {
			t->stats->gone++; /* leaving: nothing left to sample */
			continue;
		}
		if (th->held_sig) {
			/* already stopped: copy it as it is, keep holding it */
			struct td_sample *smp;

			th->want = true;
			t->pending++;
			smp = capture(t, th, TD_SAMPLE_HELD);
			if (smp) {
				smp->stopped_ns = 0; /* held for the crash, not for sampling */
				siginfo_fill(t, th, 0, smp);
				t->stats->captured++;
				t->ops->slot_put(t->arg, smp);
			}
			continue;
		}
		if (th->backoff) {
			/* it kept missing its stops: left out for a while, so
			 * that no round waits for it every time */
			th->backoff--;
			t->stats->skipped++;
			continue;
		}
		/* Interrupt again a thread that still owes the stop of an
		 * earlier interrupt: the kernel drops a pending interrupt trap
		 * now and then (1 in ~2000 under thread churn), and a thread
		 * waited for but never asked again would miss every round.
		 * If the first trap is still pending, the two make one stop. */
		th->late = false;
		if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) < 0) {
			t->stats->gone++; /* ESRCH: exiting; its exit follows */
			continue;
		}
		th->interrupt_ns = now = td_now_ns();
		t->round_last_issue_ns = now;
		th->want = true;
		t->pending++;
	}
}

/* Dispatch every ready status without blocking. */
static int drain(struct pt_tracer *t)
{
	int n = 0;

	for (;;) {
		int status;
		pid_t w = waitpid(-1, &status, __WALL | WNOHANG);

		if (w == 0)
			return n;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return n ? n : -errno;
		}
		dispatch(t, w, status);
		refill(t);
		n++;
	}
}

static void clear_sigfd(struct pt_tracer *t)
{
	struct signalfd_siginfo si[8];

	while (read(t->sigfd, si, sizeof(si)) > 0)
		;
}

/* Wait until no thread is pending or the deadline passes, sleeping on
 * SIGCHLD.  The poll is capped at 10 ms so that a SIGCHLD lost to a
 * handler with SA_NOCLDSTOP (a host program that embeds us) only costs
 * latency.  No busy-waiting: spinning on waitpid while a thread travels to
 * its trap cost more CPU than the whole rest of a sample. */
static void wait_pending(struct pt_tracer *t, uint64_t deadline)
{
	while (t->pending > 0 || t->round_next < t->round_n) {
		struct pollfd pfd = { .fd = t->sigfd, .events = POLLIN };
		uint64_t now;
		int r = drain(t);

		if (r == -ECHILD) {
			/* Nothing left to wait for: every pending thread is gone. */
			for (unsigned i = 0; i < t->cap; i++) {
				struct pt_thread *th = &t->threads[i];

				if (th->tid && (th->want || th->detach_want)) {
					if (th->want)
						t->stats->gone++;
					th->want = th->detach_want = false;
					t->pending--;
				}
			}
			t->stats->gone += t->round_n - t->round_next;
			t->round_next = t->round_n;
			break;
		}
		refill(t);
		if (t->pending == 0 && t->round_next >= t->round_n)
			break;
		now = td_now_ns();
		if (now >= deadline)
			break;
		poll(&pfd, 1, (int)TD_MIN((deadline - now) / 1000000 + 1, 10));
		clear_sigfd(t);
	}
}

/* Raise the tracer thread's priority for the round (per-thread nice on
 * Linux); restored by round_end so unwinding runs at normal priority. */
static void priority_raise(struct pt_tracer *t)
{
	pid_t self = gettid();
	int cur;

	t->nice_raised = false;
	if (!t->cfg.round_nice)
		return;
	errno = 0;
	cur = getpriority(PRIO_PROCESS, (id_t)self);
	if (errno || cur <= t->cfg.round_nice)
		return;
	if (setpriority(PRIO_PROCESS, (id_t)self, t->cfg.round_nice) == 0) {
		t->saved_nice = cur;
		t->nice_raised = true;
	}
}

static void priority_restore(struct pt_tracer *t)
{
	if (t->nice_raised)
		setpriority(PRIO_PROCESS, (id_t)gettid(), t->saved_nice);
	t->nice_raised = false;
}

static void round_begin(struct pt_tracer *t, const struct pt_round_ops *ops, void *arg,
	unsigned flags, struct pt_round_stats *stats)
{
	t->ops = ops;
	t->arg = arg;
	t->round_flags = flags;
	t->stats = stats ? stats : &t->scratch;
	memset(t->stats, 0, sizeof(*t->stats));
}

static void round_end(struct pt_tracer *t)
{
	t->round_tids = NULL;
	t->round_n = t->round_next = 0;
	t->ops = NULL;
	t->arg = NULL;
	t->round_flags = 0;
	t->stats = &t->scratch;
}

int pt_tracer_sample(struct pt_tracer *t, const pid_t *tids, unsigned n,
	const struct pt_round_ops *ops, void *arg, int timeout_ms, unsigned flags,
	struct pt_round_stats *ret_stats)
{
	struct pt_round_stats stats;
	uint64_t now;

	round_begin(t, ops, arg, flags, &stats);
	priority_raise(t);
	now = td_now_ns();
	t->round_tids = tids;
	t->round_n = n;
	t->round_next = 0;
	stats.requested = n;
	refill(t);
	wait_pending(t, now + (uint64_t)timeout_ms * 1000000u);
	if (t->pending) {
		/* Stragglers (a thread in D state cannot stop until it leaves
		 * it): resume them when their stop comes. */
		for (unsigned i = 0; i < t->cap; i++) {
			struct pt_thread *th = &t->threads[i];

			if (th->tid && th->want) {
				th->want = false;
				th->late = true;
				t->pending--;
				stats.timeout++;
				/* three misses in a row: leave it out 2, 4, ... 64
				 * rounds, then try again */
				if (th->misses < 255)
					th->misses++;
				if (th->misses >= 3)
					th->backoff = (uint16_t)(1u << TD_MIN((unsigned)th->misses - 2, 6u));
			}
		}
	}
	stats.timeout += t->round_n - t->round_next; /* never interrupted */
	/* Consume the SIGCHLDs the round left pending (they would wake the
	 * caller for nothing), THEN reap once more: a stop that arrived
	 * between the last waitpid and the clear (a signal for the target)
	 * would otherwise wait, stopped, until the next tick. */
	clear_sigfd(t);
	drain(t);
	priority_restore(t);
	round_end(t);
	if (ret_stats)
		*ret_stats = stats;
	return 0;
}

int pt_tracer_poll(struct pt_tracer *t, const struct pt_round_ops *ops, void *arg)
{
	int r;

	round_begin(t, ops, arg, 0, NULL);
	clear_sigfd(t);
	r = drain(t);
	round_end(t);
	return r == -ECHILD ? 0 : r;
}

/* Resume what is stopped and leave the rest attached: when the calling
 * thread exits, the kernel detaches its tracees without waking those that
 * sleep (__ptrace_unlink kicks only a stopped tracee and clears a pending
 * interrupt trap), so no blocked call returns EINTR.  A held thread goes on
 * with its signal, or to its exit; a thread in a job-control stop stays
 * stopped. */
static void pt_tracer_let_go(struct pt_tracer *t)
{
	round_begin(t, NULL, NULL, 0, NULL);
	drain(t);
	for (unsigned i = 0; i < t->cap; i++) {
		struct pt_thread *th = &t->threads[i];

		if (th->tid && th->held_sig) {
			ptrace(PTRACE_DETACH, th->tid, 0, (void *)(long)th->held_sig);
			th->held_sig = 0;
			t->nheld--;
		}
		if (th->tid && th->held_exit) {
			ptrace(PTRACE_DETACH, th->tid, 0, 0);
			th->held_exit = false;
		}
	}
	round_end(t);
}

int pt_tracer_detach(struct pt_tracer *t, pid_t pid, int timeout_ms)
{
	uint64_t now = td_now_ns();
	int n = 0;

	round_begin(t, NULL, NULL, 0, NULL);
	for (unsigned i = 0; i < t->cap; i++) {
		struct pt_thread *th = &t->threads[i];

		if (!th->tid || (pid && th->pid != pid) || th->detach_want)
			continue;
		if (th->want) {
			th->want = false;
			t->pending--;
		}
		if (th->held_sig) {
			/* stopped already: detach delivers the signal it held */
			ptrace(PTRACE_DETACH, th->tid, 0, (void *)(long)th->held_sig);
			th->held_sig = 0;
			t->nheld--;
			thread_remove(t, th);
			continue;
		}
		if (th->held_exit) {
			/* stopped at its exit: detached, it goes on to it */
			ptrace(PTRACE_DETACH, th->tid, 0, 0);
			th->held_exit = false;
			thread_remove(t, th);
			continue;
		}
		/* PTRACE_DETACH needs a stopped tracee: interrupt, then
		 * detach each as its stop arrives (batched). */
		if (!th->late && ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) < 0)
			continue; /* exiting; the kernel drops it */
		th->late = false;
		th->detach_want = true;
		th->interrupt_ns = now;
		t->pending++;
		n++;
	}
	wait_pending(t, now + (uint64_t)timeout_ms * 1000000u);
	round_end(t);
	if (t->pending) {
		/* Never stopped in time (uninterruptible sleep): leave them; our
		 * exit detaches them in the kernel. */
		for (unsigned i = 0; i < t->cap; i++)
			if (t->threads[i].tid && t->threads[i].detach_want) {
				t->threads[i].detach_want = false;
				t->threads[i].late = true;
				t->pending--;
			}
		return -TD_E_TIMEOUT;
	}
	return n;
}

pid_t pt_tracer_held(const struct pt_tracer *t, int *ret_signo, uint64_t *ret_addr)
{
	if (!t->nheld)
		return 0;
	for (unsigned i = 0; i < t->cap; i++)
		if (t->threads[i].tid && t->threads[i].held_sig) {
			*ret_signo = t->threads[i].held_sig;
			*ret_addr = t->threads[i].sig_addr;
			return t->threads[i].tid;
		}
	return 0;
}

bool pt_tracer_group_stopped(const struct pt_tracer *t, pid_t tid)
{
	const struct pt_thread *th = thread_find(t, tid);

	return th && th->group_stopped;
}

int pt_tracer_release(struct pt_tracer *t, pid_t tid)
{
	struct pt_thread *th = thread_find(t, tid);
	int sig;

	if (!th || !th->held_sig)
		return -ESRCH;
	sig = th->held_sig;
	th->held_sig = 0;
	t->nheld--;
	return ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig) < 0 ? -errno : 0;
}

int pt_tracer_release_exit(struct pt_tracer *t, pid_t tid)
{
	struct pt_thread *th = thread_find(t, tid);

	if (!th || !th->held_exit)
		return -ESRCH;
	th->held_exit = false;
	return ptrace(PTRACE_CONT, tid, 0, 0) < 0 ? -errno : 0;
}
