/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a blocked thread waits for, read from outside: its system call and
 * arguments, the memory they point at, its stack's function names, and
 * /proc/PID/fd.
 *
 * futex waits are told apart by the glibc function on the stack (the
 * layouts below are glibc's private business: facts of glibc 2.36, see
 * docs/notes/waits.md), and owners are read from the objects:
 *   mutex   futex at the mutex; owner: __owner at offset 8, or for a PI or
 *           robust mutex the lock word itself (value & FUTEX_TID_MASK)
 *   rwlock  futex at __wrphase_futex (+8) or __writers_futex (+12);
 *           owner: the writer, __cur_writer at +24
 *   condvar futex at __g_signals (+0x28 or +0x2c); no owner
 *   sem_t   futex at the semaphore; no owner
 *   join    futex at the joined thread's tid word, whose value (the futex
 *           call's third argument) is that thread's TID: the owner
 * An owner is believed only if it is a live thread of the process, but
 * for a join seen at a tick (futex words given): the futex sleeps only
 * while the tid word holds the TID, which the kernel clears when that
 * thread exits, so it was live then.  What is not recognised stays a
 * plain futex.  Nothing here stops a thread: memory is read with
 * process_vm_readv (pt_read_memory). */
#define _GNU_SOURCE
#include "waits.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/sample.h"
#include "../common/td.h"
#include "../ptrace/ptrace.h"

#define FUTEX_CMD_MASK 0x7f /* without FUTEX_PRIVATE_FLAG, FUTEX_CLOCK_REALTIME */
#define FUTEX_OP_WAIT 0
#define FUTEX_OP_LOCK_PI 6
#define FUTEX_OP_WAIT_BITSET 9
#define FUTEX_OP_WAIT_REQUEUE_PI 11
#define FUTEX_OP_LOCK_PI2 13
#define FUTEX_TID 0x3fffffffu

enum tcf_wait_kind wait_tcf_kind(enum wait_kind k)
{
	static const enum tcf_wait_kind kinds[] = { [WAIT_MUTEX] = TCF_WAIT_MUTEX,
		[WAIT_RWLOCK] = TCF_WAIT_RWLOCK, [WAIT_CONDVAR] = TCF_WAIT_CONDVAR,
		[WAIT_SEMAPHORE] = TCF_WAIT_SEMAPHORE, [WAIT_JOIN] = TCF_WAIT_JOIN,
		[WAIT_FUTEX] = TCF_WAIT_FUTEX, [WAIT_FD] = TCF_WAIT_FD,
		[WAIT_SLEEP] = TCF_WAIT_SLEEP, [WAIT_SIGNAL] = TCF_WAIT_SIGNAL,
		[WAIT_DISK] = TCF_WAIT_DISK, [WAIT_GIL] = TCF_WAIT_GIL };

	return (unsigned)k < TD_ARRAY_SIZE(kinds) ? kinds[k] : TCF_WAIT_OTHER;
}

const char *wait_kind_name(enum wait_kind k)
{
	return k == WAIT_NONE ? "none" : tcf_wait_kind_name(wait_tcf_kind(k));
}

/* Is tid a live (not exited) thread of pid? */
static bool live_thread(pid_t pid, pid_t tid)
{
	struct td_task_info info;

	return tid > 0 && td_task_info_read(pid, tid, &info) == 0 && info.state != 'Z' &&
		info.state != 'X';
}

void wait_python_gil(pid_t pid, pid_t tid, const uint64_t conds[2], pid_t holder,
	struct wait_info *w)
{
	/* in struct _gil_runtime_state each condition is followed by its
	 * mutex, which a woken waiter takes again (glibc's pthread_cond_t
	 * is 48 bytes on x86-64 and arm64) */
	bool cond = (w->kind == WAIT_CONDVAR || w->kind == WAIT_GIL) &&
		(w->object == conds[0] || w->object == conds[1]);
	bool mutex = (w->kind == WAIT_MUTEX || w->kind == WAIT_GIL) &&
		(w->object == conds[0] + sizeof(pthread_cond_t) ||
			w->object == conds[1] + sizeof(pthread_cond_t));

	if (!cond && !mutex)
		return;
	w->kind = WAIT_GIL;
	/* the holder read from the target: one of its threads, or none */
	w->owner = holder != tid && live_thread(pid, holder) ? holder : 0;
}

static bool read_u32(pid_t tid, uint64_t addr, uint32_t *ret)
{
	return pt_read_memory(tid, addr, ret, sizeof(*ret)) == (ssize_t)sizeof(*ret);
}

/* The word at uaddr + off: from the words read at the tick when there are
 * (futex, off within them), else from the target now. */
static bool futex_word(pid_t tid, uint64_t uaddr, const uint32_t *futex, unsigned off,
	uint32_t *ret)
{
	if (futex && off / 4 < TD_FUTEX_WORDS) {
		*ret = futex[off / 4];
		return true;
	}
	return read_u32(tid, uaddr + off, ret);
}

/* Where (the index, -1 if nowhere) does a function whose name starts
 * with one of the prefixes stand on the stack (funcs, leaf first)?
 * glibc's internal aliases are compared without their decorations
 * (__GI_, leading underscores).  Only the first
 * frames count: the wait is close to the leaf. */
static int stack_at(const char *const *funcs, unsigned n, const char *const *prefixes)
{
	for (unsigned i = 0; i < n && i < 12; i++) {
		const char *f = funcs[i];

		if (!f)
			continue;
		if (!strncmp(f, "__GI_", 5))
			f += 5;
		while (*f == '_')
			f++;
		for (const char *const *p = prefixes; *p; p++)
			if (!strncmp(f, *p, strlen(*p)))
				return (int)i;
	}
	return -1;
}

static bool on_stack(const char *const *funcs, unsigned n, const char *const *prefixes)
{
	return stack_at(funcs, n, prefixes) >= 0;
}

/* What fd is: "socket:[N]", "pipe:[N]", "anon_inode:[eventpoll]", a path. */
static void fd_target(pid_t pid, int fd, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	n = readlink(path, buf, len - 1);
	buf[n > 0 ? (size_t)n : 0] = '\0';
}

static void classify_futex(pid_t pid, pid_t tid, const uint64_t *args, const uint32_t *futex,
	const char *const *funcs, unsigned nfuncs, struct wait_info *w)
{
	static const char *const mutex_fns[] = { "lll_lock_wait", "pthread_mutex_lock",
		"pthread_mutex_timedlock", "pthread_mutex_clocklock", "pthread_mutex_cond_lock",
		"lll_mutex_lock", NULL };
	static const char *const rwlock_fns[] = { "pthread_rwlock_", NULL };
	static const char *const cond_fns[] = { "pthread_cond_", NULL };
	static const char *const gil_fns[] = { "take_gil", "drop_gil", NULL };
	static const char *const sem_fns[] = { "sem_wait", "sem_timedwait", "sem_clockwait",
		"new_sem_wait", "do_futex_wait", NULL };
	static const char *const join_fns[] = { "pthread_join", "pthread_clockjoin",
		"pthread_timedjoin", NULL };
	uint64_t uaddr = args[0];
	unsigned cmd = (unsigned)args[1] & FUTEX_CMD_MASK;
	int in_cond = stack_at(funcs, nfuncs, cond_fns);
	int in_mutex = stack_at(funcs, nfuncs, mutex_fns);
	/* woken from a condition, pthread_cond_wait takes its mutex again
	 * (__pthread_mutex_cond_lock): a wait for that mutex, not the
	 * condition */
	bool relock = in_cond >= 0 && in_mutex >= 0 && in_mutex < in_cond;
	uint32_t v;

	w->kind = WAIT_FUTEX;
	w->object = uaddr;
	if (cmd == FUTEX_OP_LOCK_PI || cmd == FUTEX_OP_LOCK_PI2) {
		/* a PI mutex: the lock word holds the owner's TID */
		w->kind = WAIT_MUTEX;
		if (futex_word(tid, uaddr, futex, 0, &v) && live_thread(pid, (pid_t)(v & FUTEX_TID)))
			w->owner = (pid_t)(v & FUTEX_TID);
		return;
	}
	if (cmd != FUTEX_OP_WAIT && cmd != FUTEX_OP_WAIT_BITSET && cmd != FUTEX_OP_WAIT_REQUEUE_PI)
		return;
	/* the joined thread's tid word, holding its TID until it exits.  A
	 * futex wait sleeps only while the word equals its third argument:
	 * under pthread_join that is the TID, at the tick (it may be gone
	 * now); elsewhere, a word that holds a live thread's TID */
	if (on_stack(funcs, nfuncs, join_fns)) {
		w->kind = WAIT_JOIN;
		if ((pid_t)args[2] > 0 && (futex || live_thread(pid, (pid_t)args[2])))
			w->owner = (pid_t)args[2];
		return;
	}
	if (!on_stack(funcs, nfuncs, cond_fns) && live_thread(pid, (pid_t)args[2]) &&
		futex_word(tid, uaddr, futex, 0, &v) && v == (uint32_t)args[2]) {
		w->kind = WAIT_JOIN;
		w->owner = (pid_t)args[2];
		return;
	}
	if (in_cond >= 0 && !relock) {
		/* __g_signals[0] at +0x28 or [1] at +0x2c; the condition is
		 * 8-byte aligned (it holds 64-bit counters).  Under CPython's
		 * take_gil or drop_gil (named where the interpreter keeps its
		 * symbols) it is the GIL's; a stripped one's is told by its
		 * address (daemon/writer-python.c) */
		w->kind = on_stack(funcs, nfuncs, gil_fns) ? WAIT_GIL : WAIT_CONDVAR;
		w->object = uaddr & 7 ? uaddr - 0x2c : uaddr - 0x28;
		return;
	}
	if (on_stack(funcs, nfuncs, rwlock_fns)) {
		w->kind = WAIT_RWLOCK;
		/* __wrphase_futex (+8) or __writers_futex (+12): the base whose
		 * __cur_writer (+24) is a live thread */
		for (int off = 8; off <= 12; off += 4)
			if (futex_word(tid, uaddr, futex, 24 - (unsigned)off, &v) &&
				live_thread(pid, (pid_t)v)) {
				w->object = uaddr - (uint64_t)off;
				w->owner = (pid_t)v;
				return;
			}
		w->object = uaddr - 8;
		return;
	}
	if (on_stack(funcs, nfuncs, sem_fns)) {
		w->kind = WAIT_SEMAPHORE;
		return;
	}
	if (on_stack(funcs, nfuncs, mutex_fns) ||
		(futex_word(tid, uaddr, futex, 8, &v) && live_thread(pid, (pid_t)v))) {
		uint32_t lock;

		/* the GIL's mutex, taken again in its condition's wait */
		w->kind = relock && on_stack(funcs, nfuncs, gil_fns) ? WAIT_GIL : WAIT_MUTEX;
		if (futex_word(tid, uaddr, futex, 8, &v) && live_thread(pid, (pid_t)v))
			w->owner = (pid_t)v; /* __owner */
		else if (futex_word(tid, uaddr, futex, 0, &lock) &&
			 live_thread(pid, (pid_t)(lock & FUTEX_TID)))
			w->owner = (pid_t)(lock & FUTEX_TID); /* a robust mutex's lock word */
	}
}

unsigned wait_owner_candidates(const uint32_t *futex, pid_t ret[4])
{
	/* the lock word (PI, robust; a join's TID), __owner (+8), and
	 * __cur_writer (+24) from __writers_futex (+12) or __wrphase_futex (+8) */
	static const unsigned at[] = { 0, 2, 3, 4 };
	unsigned n = 0;

	for (unsigned i = 0; i < TD_ARRAY_SIZE(at); i++) {
		pid_t tid = (pid_t)(futex[at[i]] & FUTEX_TID);
		unsigned k;

		for (k = 0; k < n && ret[k] != tid; k++)
			;
		if (tid > 0 && k == n)
			ret[n++] = tid;
	}
	return n;
}

void wait_classify(pid_t pid, pid_t tid, long nr, const uint64_t args[6], const uint32_t *futex,
	char state, const char *const *funcs, unsigned nfuncs, struct wait_info *ret)
{
	struct wait_info w = { .kind = WAIT_OTHER, .nr = nr };

	if (nr < 0) {
		w.kind = state == 'D' ? WAIT_DISK : WAIT_NONE;
		*ret = w;
		return;
	}
	switch (nr) {
	case SYS_futex:
		classify_futex(pid, tid, args, futex, funcs, nfuncs, &w);
		break;
	case SYS_read:
	case SYS_write:
	case SYS_pread64:
	case SYS_pwrite64:
	case SYS_readv:
	case SYS_writev:
	case SYS_connect:
	case SYS_accept:
	case SYS_accept4:
	case SYS_sendto:
	case SYS_recvfrom:
	case SYS_sendmsg:
	case SYS_recvmsg:
	case SYS_recvmmsg:
	case SYS_sendmmsg:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
	case SYS_epoll_pwait2:
	case SYS_flock:
	case SYS_fsync:
	case SYS_fdatasync:
	case SYS_io_uring_enter:
		w.kind = WAIT_FD;
		w.object = args[0];
		fd_target(pid, (int)args[0], w.what, sizeof(w.what));
		break;
	case SYS_poll:
	case SYS_ppoll: {
		/* the first pollfd names what it waits on */
		int32_t fd;

		w.kind = WAIT_FD;
		if (args[1] >= 1 && pt_read_memory(tid, args[0], &fd, sizeof(fd)) == sizeof(fd) &&
			fd >= 0) {
			w.object = (uint64_t)fd;
			fd_target(pid, fd, w.what, sizeof(w.what));
		} else {
			w.object = (uint64_t)-1;
		}
		break;
	}
	case SYS_select:
	case SYS_pselect6:
		w.kind = WAIT_FD;
		w.object = (uint64_t)-1; /* a set of them */
		break;
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
		w.kind = WAIT_SLEEP;
		break;
	case SYS_pause:
	case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait:
		w.kind = WAIT_SIGNAL;
		break;
	default:
		break;
	}
	if (state == 'D' && w.kind != WAIT_FD)
		w.kind = WAIT_DISK;
	if (w.kind == WAIT_OTHER && wait_syscall_name(nr))
		snprintf(w.what, sizeof(w.what), "%s", wait_syscall_name(nr));
	*ret = w;
}
