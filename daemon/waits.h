/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd waits (daemon/waits.c): what a blocked thread waits for.
 *
 * From outside and without a stop: the thread's system call and arguments,
 * the memory they point at (glibc 2.36's object layouts), its stack's
 * function names, /proc/PID/fd.  The recorder's writer classifies each
 * wait episode with it (WAITS records), tracerd dump each thread it stops.
 * The kinds as chunks store them are chunkfmt's (enum tcf_wait_kind); this
 * classifier's own kinds add NONE, for a thread that waits for nothing. */
#ifndef TD_WAITS_H
#define TD_WAITS_H

#include <stdint.h>
#include <sys/types.h>

#include "../chunkfmt/chunkfmt.h"

enum wait_kind {
	WAIT_NONE,	/* not blocked in a system call */
	WAIT_MUTEX,	/* pthread_mutex_t (normal, PI, robust) */
	WAIT_RWLOCK,	/* pthread_rwlock_t */
	WAIT_CONDVAR,	/* pthread_cond_t */
	WAIT_SEMAPHORE, /* sem_t */
	WAIT_JOIN,	/* pthread_join of another thread */
	WAIT_FUTEX,	/* a futex of no known kind */
	WAIT_FD,	/* read, write, recv, accept, poll, epoll... on a descriptor */
	WAIT_SLEEP,	/* nanosleep, clock_nanosleep */
	WAIT_SIGNAL,	/* pause, sigsuspend, sigtimedwait */
	WAIT_DISK,	/* uninterruptible sleep (state D) */
	WAIT_OTHER,	/* another system call (what: its name) */
	WAIT_GIL,	/* CPython's GIL (object: its condition variable) */
};

struct wait_info {
	enum wait_kind kind;
	long nr;	 /* the system call, -1 if none */
	uint64_t object; /* the object's address (mutex, rwlock, condvar, sem_t:
			  * its start; join, futex: the futex word); FD: the
			  * descriptor, (uint64_t)-1 for a set */
	pid_t owner;	 /* the thread that holds it (mutex, rwlock writer,
			  * join: the joined thread), 0 if none or unknown */
	char what[48];	 /* FD: what the descriptor is (socket:[N], pipe:[N], a
			  * path); OTHER: the call's name */
};

/* "mutex", "rwlock", ... (tracerd-report(1) and dump --json use them) */
const char *wait_kind_name(enum wait_kind k);
/* The kind as chunks store it (WAITS records). */
enum tcf_wait_kind wait_tcf_kind(enum wait_kind k);
/* The name of system call nr on the machine we run on (syscalls.c), NULL
 * for a number no kernel we know of gives a call. */
const char *wait_syscall_name(long nr);
/* The same for either table, whatever the machine (tests). */
enum wait_arch { WAIT_ARCH_X86_64, WAIT_ARCH_AARCH64 };
const char *wait_syscall_name_arch(enum wait_arch arch, long nr);
/* The threads that futex words (TD_FUTEX_WORDS words read at a futex
 * address, as wait_classify takes them) may name as the object's owner,
 * whatever the object: a mutex's __owner or its PI or robust lock word,
 * an rwlock's __cur_writer, a joined thread's TID.  Into ret (unique,
 * nonzero); how many.  Not checked: the caller looks each up among the
 * process's threads, and wait_classify decides which one owns it. */
unsigned wait_owner_candidates(const uint32_t *futex, pid_t ret[4]);
/* Classify thread tid of pid, blocked in system call nr (-1: none) with
 * args, in /proc state 'state', its stack's function names funcs (leaf
 * first, NULL for unknown; the first twelve are looked at).  futex: for
 * futex(), the TD_FUTEX_WORDS words at args[0] as read when the thread
 * was seen (owners are read from them), NULL to read them now.  Reads the
 * target's memory and /proc/PID/fd; stops nothing. */
void wait_classify(pid_t pid, pid_t tid, long nr, const uint64_t args[6], const uint32_t *futex,
	char state, const char *const *funcs, unsigned nfuncs, struct wait_info *ret);
/* A wait w of thread tid of pid on a condition variable or a mutex (or
 * already told to be the GIL's, by take_gil on the stack) becomes a wait
 * for CPython's GIL when its object is one of the GIL's two condition
 * variables, conds, as read from the interpreter (sym_py_gil), or the
 * mutex that follows each; held by holder if that is another live thread
 * of pid.  The one rule for the writer's WAITS
 * records and for tracerd dump, so that both name the same kind: a
 * stripped python3.11 names no take_gil, only the address tells. */
void wait_python_gil(pid_t pid, pid_t tid, const uint64_t conds[2], pid_t holder,
	struct wait_info *w);

#endif
