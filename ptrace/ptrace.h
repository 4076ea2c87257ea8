/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd ptrace stage: attach to every thread of a process, stop sets of
 * threads briefly, copy registers and the top of the stack, resume; and
 * the captures that stop nothing (perf_event samples, blocked threads read
 * from /proc).
 *
 * It owns the traced threads' stops.  It never leaves a thread stopped on
 * any path it returns from, never sets PTRACE_O_EXITKILL, never swallows a
 * signal, and never allocates, locks or logs while a thread is stopped.
 * Only this stage calls ptrace() and process_vm_readv().  Everything it
 * hands on is a flat, pointer-free struct td_sample that can cross a ring,
 * a pipe or a file unchanged.
 *
 * Threading: a struct pt_tracer belongs to the thread that created it; the
 * kernel binds tracees to that thread, so every pt_tracer_* call must come
 * from it.  SIGCHLD must be blocked in every thread of the caller's process
 * (pt_tracer_new blocks it in the calling thread; threads created later
 * inherit the mask), and must not be ignored (SIG_IGN): the kernel then
 * drops the notices of the tracees' stops and each waits for a timeout.
 * The tracer reaps with waitpid(-1): the calling process must have no
 * child of its own that something else waits for.
 */
#ifndef TD_PTRACE_H
#define TD_PTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "../common/sample.h"
#include "../common/td.h"

enum pt_event_kind {
	PT_EVENT_THREAD_NEW,  /* tid born (clone), or stopped before we knew it;
			       * not for threads found by pt_tracer_attach */
	PT_EVENT_THREAD_EXIT, /* tid gone; status has the wait status */
	PT_EVENT_EXEC,	      /* pid exec'ed; old_tid = former tid */
	PT_EVENT_SIGNAL,      /* signal-delivery-stop; re-injected after */
	PT_EVENT_GROUP_STOP,  /* job-control stop (SIGSTOP & co) observed */
	PT_EVENT_PROCESS_EXIT, /* the leader exited, after every other thread:
			       * the process is gone and its PID is free */
	PT_EVENT_PROCESS_NEW, /* trace_fork, follow_forks: pid (= tid, its one
			       * thread) forked by process old_tid (0 when its
			       * first stop came first), followed from its first
			       * instruction */
	PT_EVENT_CHILD_LEFT   /* trace_fork: child pid of process old_tid (0:
			       * unknown) not followed, let go at its first stop;
			       * status 0: follow_forks off, -TD_E_LIMIT: no room */
};

struct pt_event {
	enum pt_event_kind kind;
	pid_t pid;
	pid_t tid;
	pid_t old_tid; /* EXEC: tid that called execve */
	int signo;     /* SIGNAL, GROUP_STOP */
	int status;    /* THREAD_EXIT, PROCESS_EXIT: wait status */
	/* SIGNAL: its siginfo_t as struct td_siginfo says (no comm here):
	 * si_addr only for a fault the kernel raised, si_pid and si_uid
	 * only for a signal a process sent, else 0 */
	int code;      /* si_code */
	pid_t sender;  /* si_pid */
	uid_t uid;     /* si_uid */
	uint64_t addr; /* si_addr */
};

/* Callbacks of a sampling round (and of pt_tracer_poll).  slot_get, event,
 * hold and hold_exit may run while their thread is stopped, slot_put just
 * after it is resumed (a held thread's and a death's while it is still
 * stopped); all of them while other threads of the round may be stopped.
 * None may allocate, lock, log or block. */
struct pt_round_ops {
	/* A buffer for tid's sample and its stack capacity, or NULL to skip
	 * it (ring full: count the drop).  *ret_window on entry: the bytes
	 * the caller has to copy when it knows them already (0: unknown). */
	struct td_sample *(*slot_get)(void *arg, pid_t pid, pid_t tid, uint32_t *ret_window);
	/* The sample is complete (thread already resumed). */
	void (*slot_put)(void *arg, struct td_sample *s);
	/* An event seen while waiting; may be NULL. */
	void (*event)(void *arg, const struct pt_event *ev);
	/* For a signal-delivery-stop: return true to keep the thread in that
	 * stop (crash capture) until pt_tracer_release().  May be NULL.
	 * Must be cheap: other threads of a round may be waiting. */
	bool (*hold)(void *arg, const struct pt_event *ev);
	/* perf capture with switches: tid was scheduled onto a CPU (in) or
	 * off it (!in).  May be NULL. */
	void (*switched)(void *arg, pid_t tid, bool in);
	/* At tid's exit stop (trace_exit), after any death capture: return
	 * true to keep it in that stop, its memory and mappings intact (the
	 * kernel frees them after it), until pt_tracer_release_exit.  Rounds
	 * leave a held thread out (counted gone).  May be NULL. */
	bool (*hold_exit)(void *arg, pid_t pid, pid_t tid);
};

struct pt_config {
	unsigned max_threads;  /* bound on traced threads, all processes (0: 8192) */
	unsigned max_procs;    /* bound on processes traced at once (0: 64) */
	bool trace_clone;      /* follow new threads (PTRACE_O_TRACECLONE) */
	bool trace_exec;       /* PTRACE_O_TRACEEXEC */
	/* Interrupts in flight at once in a round (0: 4).  All at once makes
	 * the stops queue behind the one tracer: the median of 51 threads
	 * then waits ~25 captures.  A small window refilled as each stop is
	 * handled keeps every thread's stop to about its own capture, and
	 * still never waits for threads one at a time. */
	unsigned max_inflight;
	/* Nice value of the tracer thread while a round holds threads (0:
	 * unchanged).  On a saturated machine a trapped thread otherwise
	 * waits for the tracer to win a CPU back from the target's other
	 * threads.  Needs CAP_SYS_NICE; without it nothing changes. */
	int round_nice;
	/* pt_tracer_free leaves sleeping threads attached, for the kernel to
	 * detach when the calling thread exits (it must exit soon after):
	 * PTRACE_DETACH needs a stopped tracee, and stopping a thread asleep
	 * in epoll_wait makes the call return EINTR. */
	bool detach_by_exit;
	/* PTRACE_O_TRACEEXIT: a thread leaving because its process dies of
	 * a signal (SIGKILL too: the kernel still stops a tracee at its exit
	 * then, registers and memory intact) is copied at that stop, flagged
	 * TD_SAMPLE_DEATH; then it is resumed at once, unless
	 * ops->hold_exit keeps it.  Costs one stop per thread exit.  The
	 * thread that took the fatal signal (its delivery-stop seen) is
	 * also TD_SAMPLE_SIGINFO, as is a held thread's sample. */
	bool trace_exit;
	/* PTRACE_O_TRACEFORK and TRACEVFORK: the kernel attaches each child
	 * of a traced process (fork, vfork, posix_spawn, a clone without
	 * CLONE_THREAD) to this tracer, stopped before its first
	 * instruction.  With follow_forks each becomes a process of its own
	 * (PT_EVENT_PROCESS_NEW: its children and execs followed as its
	 * parent's), while there is room (max_procs, max_threads);
	 * otherwise it is let go at that first stop (PT_EVENT_CHILD_LEFT),
	 * its run untouched: the cost is that stop and the parent's fork
	 * event stop.  Without trace_fork children are never stopped. */
	bool trace_fork;
	bool follow_forks;
};

struct pt_round_stats {
	unsigned requested; /* threads asked for */
	unsigned captured;  /* samples handed to slot_put */
	unsigned gone;	    /* vanished before or while stopping */
	unsigned dropped;   /* slot_get returned NULL */
	unsigned timeout;   /* did not stop within the timeout */
	unsigned skipped;   /* left out: it missed its last rounds (backoff) */
};

struct pt_tracer;

/* Blocks SIGCHLD in the calling thread.  Returns 0 or -ENOMEM. */
int pt_tracer_new(const struct pt_config *cfg, struct pt_tracer **ret_tracer);
/* Detaches from every thread still attached (waiting up to 2 s for their
 * stops; with detach_by_exit it only resumes the stopped ones and leaves
 * the rest to the kernel), then frees; unblocks SIGCHLD again if pt_tracer_new found it
 * unblocked, so free a thread's tracers in the reverse order of their
 * creation.  NULL-safe. */
void pt_tracer_free(struct pt_tracer *t);

/* Seize every thread of pid, rescanning /proc/PID/task until no new thread
 * appears.  Returns the number of threads of pid attached, or -errno /
 * -TD_E_*: -ESRCH no such process, -EPERM not permitted, -TD_E_TRACED
 * another tracer, -TD_E_ZOMBIE, -TD_E_SELF, -TD_E_NOTHREADS, -TD_E_LIMIT
 * (max_threads, or max_procs processes with attached threads), -TD_E_ATTACHED
 * this tracer is attached to that very process already.
 * A process is its PID and its start time (struct td_proc_id): once the
 * process we attached is gone (its exit seen, or reaped by someone else)
 * or detached, its PID may be attached again, whatever it names then. */
int pt_tracer_attach(struct pt_tracer *t, pid_t pid);

/* Tids we are attached to, of pid (0: of every process), up to n.
 * Returns the count. */
int pt_tracer_threads(const struct pt_tracer *t, pid_t pid, pid_t *tids, unsigned n);

/* Re-read the writable mappings of pid (outside any stop) so that captures
 * copy no further than the end of a thread's stack.  pt_tracer_attach
 * reads them once; an exec forgets them (stack_end is then 0 until this is
 * called again).  Returns the count of mappings or -errno. */
int pt_tracer_refresh_maps(struct pt_tracer *t, pid_t pid);

enum {
	PT_ROUND_DETACH = 1u << 0, /* detach each thread after capture */
};

/* Interrupt tids (max_inflight at a time, refilled as stops are handled),
 * capture each as its stop arrives and resume it at once (or detach it
 * with PT_ROUND_DETACH).  A thread held in a signal stop is copied as it
 * is and stays held.  Events seen on the way go to ops->event.  Waits at
 * most timeout_ms for stragglers, which are resumed when their stop comes
 * later.  Returns 0: vanished, dropped and late threads are counted in
 * ret_stats (may be NULL), never errors. */
int pt_tracer_sample(struct pt_tracer *t, const pid_t *tids, unsigned n,
	const struct pt_round_ops *ops, void *arg, int timeout_ms, unsigned flags,
	struct pt_round_stats *ret_stats);

/* A thread held in its signal-delivery-stop (ops->hold), or 0; *ret_addr
 * its fault address (0 unless the kernel raised the signal for a fault). */
pid_t pt_tracer_held(const struct pt_tracer *t, int *ret_signo, uint64_t *ret_addr);
/* Let a held thread go on with its signal (the target then dies as it
 * would have).  Returns 0 or -errno. */
int pt_tracer_release(struct pt_tracer *t, pid_t tid);

/* Is tid in a job-control stop (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) that
 * the tracer keeps in force with PTRACE_LISTEN: from the report of its
 * group-stop until the one that says SIGCONT ended it?  It runs no code
 * meanwhile, so its stack can be copied without a stop. */
bool pt_tracer_group_stopped(const struct pt_tracer *t, pid_t tid);

/* Let a thread held at its exit stop (ops->hold_exit) exit.  Returns 0,
 * or -ESRCH if tid is not held there. */
int pt_tracer_release_exit(struct pt_tracer *t, pid_t tid);

/* Handle every pending ptrace event without blocking.  Returns the count
 * of wait statuses handled, or -errno from waitpid. */
int pt_tracer_poll(struct pt_tracer *t, const struct pt_round_ops *ops, void *arg);

/* A file descriptor that becomes readable when a tracee changes state. */
int pt_tracer_fd(const struct pt_tracer *t);

/* Detach every thread of pid (0: of all processes), waiting up to
 * timeout_ms for their stops; a held thread is detached with its signal.
 * Returns the count of threads interrupted for it, or -TD_E_TIMEOUT if
 * some did not stop in time (the kernel detaches them when we exit). */
int pt_tracer_detach(struct pt_tracer *t, pid_t pid, int timeout_ms);

/* Read target memory with process_vm_readv, nothing else: it opens no file,
 * so it may run while a thread is stopped.  (A capture that it cannot
 * serve falls back to the /proc/PID/mem descriptor the tracer opened at
 * attach and sets TD_SAMPLE_STACK_PROCMEM; this function has no such
 * fallback.)  Returns bytes read (short at an unmapped page) or -errno. */
ssize_t pt_read_memory(pid_t tid, uint64_t addr, void *buf, size_t len);
/* n reads in one system call (a small read costs mostly the call, its
 * checks and its page-table lookups, not the bytes): remote[i] into
 * local[i], in order; bytes read of all, short at the first unmapped
 * page (the reads after it not done), or -errno.  n at most IOV_MAX. */
ssize_t pt_read_memoryv(pid_t tid, const struct iovec *local, const struct iovec *remote,
	unsigned n);


/* ------------------------------------------------ CPU-time sampling (perf)
 *
 * The kernel samples each added thread every period of CPU time it uses
 * (a perf_event task-clock counter per thread and CPU) and copies its user
 * registers and the top of its user stack at that instant, on the
 * thread's own CPU: no thread is stopped, a thread that does not run is
 * not sampled, and the place is the one perf record would show.  Periods
 * vary around period_ns; each sample is weighted (TD_SAMPLE_WEIGHTED) by
 * the periods of CPU time it stands for (perf.c).  Needs
 * perf_event_open on the targets (root, CAP_PERFMON, or ptrace access with
 * perf_event_paranoid <= 2 for user-mode samples only). */
/* The kernel's limit on sample_stack_user (below USHRT_MAX, 8-aligned);
 * it copies a little less where the record would pass 64 KiB. */
#define PT_PERF_MAX_STACK 65528

struct pt_perf_config {
	uint64_t period_ns;   /* mean CPU time between two samples of a thread */
	uint32_t stack_bytes; /* most user stack copied per sample, <= PT_PERF_MAX_STACK */
	unsigned max_threads; /* bound on added threads */
	uint64_t seed;	      /* of the random periods */
	/* report every switch of an added thread onto and off a CPU
	 * (pt_round_ops.switched): who ran since the last drain, without a
	 * look at each thread */
	bool switches;
	/* a sample at every switch out, weighed by the time until the
	 * switch back in (TD_SAMPLE_OFFCPU; perf.c): needs the permission
	 * for kernel-mode samples, else pt_perf_offcpu() says no */
	bool offcpu;
	/* the kernel's call chain with each sample (TD_SAMPLE_KCHAIN: below
	 * a system call, a fault, an interrupt): needs the permission for
	 * kernel-mode samples, else pt_perf_kernel() says no */
	bool kernel;
};

struct pt_perf_stats {
	unsigned samples;      /* handed to slot_put */
	unsigned dropped;      /* slot_get returned NULL */
	uint64_t lost;	       /* the kernel's ring was full */
	unsigned throttled;    /* the kernel throttled sampling */
	unsigned no_user_regs; /* no user context (a thread past its exit) */
	unsigned malformed;
	unsigned lost_records; /* PERF_RECORD_LOST records: switches may be missing */
	unsigned thinned;      /* overflows of weight 0 (less than a period: perf.c) */
	unsigned offcpu;       /* of samples: intervals off a CPU (offcpu) */
	unsigned unpaired;     /* intervals dropped: too many switches in one drain */
};

/* owns: the event fds, the per-CPU rings */
struct pt_perf;

/* -EACCES/-EPERM: not permitted; -ENOSYS/-ENOENT/-ENODEV: not available. */
int pt_perf_new(const struct pt_perf_config *cfg, struct pt_perf **ret_perf);
void pt_perf_free(struct pt_perf *p); /* NULL-safe */
/* Start sampling tid (of process pid).  -ESRCH: gone; -TD_E_LIMIT: full. */
/* Sample tid, copying stack_bytes of its stack (<= the config's; 0: the
 * config's). */
int pt_perf_add(struct pt_perf *p, pid_t pid, pid_t tid, uint32_t stack_bytes);
/* Copy stack_bytes of tid's stack from now on: its events are opened
 * anew.  The kernel copies what is asked at each sample, in the thread's
 * own interrupt: ask what its stacks use. */
int pt_perf_resize(struct pt_perf *p, pid_t tid, uint32_t stack_bytes);
void pt_perf_remove(struct pt_perf *p, pid_t tid);
/* tid's program ended at at_ns (CLOCK_MONOTONIC; 0: it goes on after all):
 * it is at its exit stop then, which lasts until the tracer comes to it or
 * lets it go, and what it spends off a CPU in that stop and after is the
 * tracer's time, not the program's: wall mode weighs none of it (the
 * interval off a CPU that spans at_ns is the stop's).  No allocation:
 * callable while a thread is stopped. */
void pt_perf_end(struct pt_perf *p, pid_t tid, uint64_t at_ns);
/* tid's program begins at at_ns (UINT64_MAX: not yet; 0: always has): a
 * command held before its exec, then stopped at it.  An interval off a CPU
 * that began before is not weighed. */
void pt_perf_begin(struct pt_perf *p, pid_t tid, uint64_t at_ns);
unsigned pt_perf_threads(const struct pt_perf *p);
/* Samples are user-mode only (no permission for kernel-mode ones): time
 * in system calls is then not sampled. */
bool pt_perf_user_only(const struct pt_perf *p);
/* Intervals off a CPU are sampled (cfg.offcpu, and permitted). */
bool pt_perf_offcpu(const struct pt_perf *p);
/* Samples carry the kernel's call chain (cfg.kernel, and permitted). */
bool pt_perf_kernel(const struct pt_perf *p);
/* Readable when a ring is a quarter full; drain at least that often. */
int pt_perf_fd(const struct pt_perf *p);
/* Copy every sample in the rings into slots from ops->slot_get, hand each
 * to ops->slot_put.  Never allocates, locks or blocks.  Returns the number
 * of samples. */
int pt_perf_drain(struct pt_perf *p, const struct pt_round_ops *ops, void *arg,
	struct pt_perf_stats *ret_stats);
/* A new random period for every event that fired since the last call
 * that drew them; a call within PT_PERF_REARM_NS of that one does nothing,
 * but after pt_perf_early.  The kernel restarts the period at it: call it
 * on a timer of the caller's, never on a target's event (what runs next
 * would be sampled late).  One ioctl per such event. */
#define PT_PERF_REARM_NS 100000000ull
void pt_perf_rearm(struct pt_perf *p);
/* A sample of tid soon: after ns of its CPU time (at least
 * PT_PERF_EARLY_MIN_NS) on cpu (-1: on any), instead of its drawn period,
 * until the next pt_perf_rearm restores that.  Its first sample since the
 * call is kept whatever its weight; of weight 0 it is flagged
 * TD_SAMPLE_OWNER (no period of the profile).  Nothing is stopped: an
 * ioctl per event, which the kernel runs on tid's CPU.  Returns 0,
 * -ENOENT if tid is not sampled (or has no event on cpu), or -errno. */
#define PT_PERF_EARLY_MIN_NS 50000u
int pt_perf_early(struct pt_perf *p, pid_t tid, int cpu, uint64_t ns);


/* ---------------------------------------- blocked threads, never stopped
 *
 * A thread asleep in a system call is captured without a stop from its
 * kept-open /proc/PID/task/TID/syscall and schedstat files (ptrace access
 * needed) and a copy of its stack: zero EINTR, zero context switches. */
struct pt_syscall {
	bool running; /* on a CPU or runnable: no syscall to show */
	long nr;      /* -1: blocked outside a system call (a page fault) */
	uint64_t args[6];
	uint64_t sp, pc;
};

/* Parse a line of /proc/PID/task/TID/syscall.  0 or -EINVAL. */
int pt_syscall_parse(const char *line, struct pt_syscall *ret);

/* What a blocked thread looked like at one instant. */
struct pt_blocked {
	struct pt_syscall sc;
	uint64_t run_ns, run_count; /* schedstat: CPU time, times scheduled */
	uint64_t wait_ns;	    /* schedstat: time waiting for a CPU (runnable) */
};

/* Read a thread's state.  1: blocked (ret->sc holds the call), 0: running
 * or runnable, -ESRCH: gone, -errno. */
int pt_blocked_probe(int syscall_fd, int schedstat_fd, struct pt_blocked *ret);
/* Both blocked, and the thread did not run in between: same call, same
 * place, same schedstat. */
bool pt_blocked_same(const struct pt_blocked *a, const struct pt_blocked *b);
/* Copy the stack of the thread probed as b (up to window bytes, not past
 * stack_end when known) into s, then probe again: 1 if it provably did not
 * run meanwhile, -EAGAIN if it did (the copy may be torn: drop it), -ESRCH
 * if it is gone. */
int pt_blocked_copy(pid_t pid, pid_t tid, const struct pt_blocked *b, int syscall_fd,
	int schedstat_fd, struct td_sample *s, uint32_t window, uint64_t stack_end);

#endif
