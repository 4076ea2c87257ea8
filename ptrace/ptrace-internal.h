/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to ptrace/: the tracer's tables, shared by the stop machine
 * (ptrace.c) and attaching and the maps (attach.c).  Only the tracer's
 * own thread touches them (struct pt_tracer's rule, ptrace.h). */
#ifndef TD_PTRACE_INTERNAL_H
#define TD_PTRACE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptrace.h"
#include "../common/map.h"

#define PT_MAX_VMAS 65536
#define PT_CHILDREN_SEEN 256 /* children decided, remembered (pt_tracer.children) */

struct pt_thread {
	pid_t tid; /* 0: free slot */
	pid_t pid;
	bool want;	   /* interrupted for a capture in this round */
	bool late;	   /* interrupted, round ended: resume when it stops */
	uint8_t misses;	   /* rounds in a row it did not stop in */
	uint16_t backoff;  /* rounds to leave it out, after misses */
	bool detach_want;  /* interrupted for a detach */
	/* in a job-control stop, kept in force with PTRACE_LISTEN */
	bool group_stopped;
	bool held_exit;	   /* held at its exit stop (ops->hold_exit) */
	int held_sig;	  /* held in a signal-delivery-stop with this signal */
	/* its latest signal-delivery-stop: the signal (0: none, or its
	 * siginfo unread) and its siginfo as struct td_siginfo keeps it, for
	 * the samples of the death it may cause (siginfo_fill) */
	int last_sig;
	int32_t sig_code, sig_pid;
	uint32_t sig_uid;
	uint64_t sig_addr;
	uint64_t interrupt_ns;
};

struct pt_vma {
	uint64_t start, end;
};

/* One process we attached to.  A slot whose process holds no attached
 * thread (exited, detached, or its attach failed) is free for the next
 * attach, of the same PID or another.  owns: vmas, mem_fd */
struct pt_proc {
	pid_t pid;
	struct td_proc_id id; /* which process pid named when we attached */
	bool alive;	      /* its exit (the leader's) not yet seen */
	/* the thread of its latest signal-delivery-stop for a signal whose
	 * default action ends the process: if the process dies of that
	 * signal, the thread that took it */
	pid_t sig_tid;
	unsigned nthreads;
	struct pt_vma *vmas;
	unsigned nvmas;
	int mem_fd;
};

/* owns: threads, thread_index, free_slots, procs (each proc's vmas,
 * mem_fd), sigfd; unblocks SIGCHLD
 * on free if pt_tracer_new found it unblocked */
struct pt_tracer {
	struct pt_config cfg;
	struct pt_thread *threads;  /* cap slots; tid 0: free.  A thread never moves */
	unsigned cap;		    /* max_threads */
	struct td_map thread_index; /* tid -> slot; fixed: lookups and changes never allocate */
	unsigned *free_slots;	    /* a stack of the free slots */
	unsigned nfree;
	struct pt_proc *procs; /* cfg.max_procs slots, made at pt_tracer_new:
				* an attach never allocates one */
	unsigned nprocs;
	int sigfd;
	unsigned pending; /* threads with want or detach_want set */
	/* the round in progress */
	const pid_t *round_tids;
	unsigned round_n, round_next;
	uint64_t round_last_issue_ns;
	const struct pt_round_ops *ops;
	void *arg;
	unsigned round_flags;
	struct pt_round_stats *stats;
	struct pt_round_stats scratch; /* stats sink outside rounds */
	int saved_nice;
	bool nice_raised;
	unsigned nheld; /* threads held in a signal stop: skips the scan */
	/* The comms of the latest senders of such signals, read at the
	 * signal's stop while the sender may still live (sender_read), for
	 * the samples of the death that follows: a ring, newest wins. */
	struct {
		pid_t pid;
		char comm[16];
	} senders[8];
	unsigned nsenders;
	dev_t pidns_dev; /* our PID namespace (pidns_ino 0: not read yet) */
	ino_t pidns_ino;
	bool unblock_sigchld; /* SIGCHLD was not blocked before pt_tracer_new */
	/* trace_fork: the latest children decided on (followed or let go),
	 * a ring, newest wins.  A child's first stop and its parent's fork
	 * event come in either order, and the child may have exited and
	 * been reaped in between: the second of the two finds it here and
	 * decides nothing again (child_new, ptrace.c).  256 is more than
	 * the forks that can wait for their parent's event: each parent
	 * stops at it. */
	pid_t children[PT_CHILDREN_SEEN];
	unsigned nchildren;
};

/* The tables' lookups and updates (ptrace.c). */
struct pt_thread *thread_find(const struct pt_tracer *t, pid_t tid);
struct pt_proc *proc_find(struct pt_tracer *t, pid_t pid);
struct pt_thread *thread_insert(struct pt_tracer *t, pid_t tid, pid_t pid);
void thread_remove(struct pt_tracer *t, struct pt_thread *th);
/* A slot for a new process pid, fresh (no mappings read, no mem_fd);
 * NULL when there is no room (attach.c).  Opens nothing: a traced
 * thread may be stopped. */
struct pt_proc *proc_new(struct pt_tracer *t, pid_t pid);

#endif
