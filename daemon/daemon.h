/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd daemon/: the recording daemon as a library.
 *
 *   target --(ptrace/, the sampler thread)--> sample ring --> writer thread
 *   (unwind + symbolize: symbolize/) --> chunk writer (chunkfmt/) -->
 *   repository (chunkfmt/repo.c)
 *
 * The sampler thread (daemon/sampler.c) is the only thread of tracerd that
 * stops a target thread; the writer thread (daemon/writer.c and its parts)
 * owns the repository; the caller's thread runs the control loop
 * (daemon/control.c): signals, stop, status.  The daemon never prints to people or exits: it
 * returns errors and counters, and cli/record.c says what they mean. */
#ifndef TD_DAEMON_H
#define TD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../chunkfmt/chunkfmt.h"
#include "../common/sample.h"

#define REC_MAX_PIDS 16
#define REC_MAX_PROCS 64 /* processes recorded at once, children included, unless
			  * rec_config.max_procs says otherwise */
#define REC_MAX_PROCS_MAX 65536 /* the most rec_config.max_procs may ask */

/* What a sample means (tracerd(8), MODES).
 *   CPU   where threads are while they use CPU: a thread is sampled every
 *         1/hz of the CPU time it uses (on average; the periods are drawn
 *         at random), and never while it does not run.
 *   WALL  every thread at every tick (1/hz of wall time, drawn at random),
 *         running or blocked, with its state. */
enum rec_mode { REC_MODE_CPU, REC_MODE_WALL };

/* How running threads are captured (both modes; blocked ones are read
 * from /proc without a stop). */
enum rec_capture {
	REC_CAPTURE_AUTO,   /* perf when permitted, else ptrace */
	REC_CAPTURE_PERF,   /* the kernel samples (perf_event task-clock); no stop */
	REC_CAPTURE_PTRACE, /* a ptrace stop per sample */
};

/* Kernel call chains below a system call (rec_stats.kernel): on, or why
 * they are off. */
enum rec_kernel {
	REC_KERNEL_ON,		/* perf samples carry them */
	REC_KERNEL_OFF_ASKED,	/* --no-kernel (rec_config.no_kernel) */
	REC_KERNEL_OFF_PTRACE,	/* ptrace capture: a stop shows no kernel stack */
	REC_KERNEL_OFF_DENIED,	/* no permission for kernel-mode samples (not
				 * root nor CAP_PERFMON, perf_event_paranoid > 1) */
};

/* cpu mode with ptrace capture: what its triggers did, one count each
 * (rec_stats.trig; sampler-cpu.c, docs/notes/ptrace.md).  Where a stop
 * landed is told by its registers: in user code (a sample), at the return
 * of another call (a sample: that call's CPU time is put there, as perf
 * puts it), at the return of a call that waits (not a sample), or in a
 * wait the stop broke off (not a sample). */
enum rec_trig {
	REC_TRIG_FIRES,	 /* CPU-time timer signals read */
	REC_TRIG_FOUND,	 /* threads owed a period and running at a fire */
	REC_TRIG_ENDED,	 /* of those, blocked again once on their CPU */
	REC_TRIG_USER,	 /* stops in user code */
	REC_TRIG_CALL,	 /* stops at another call's return */
	REC_TRIG_RETURN, /* stops at a waiting call's return */
	REC_TRIG_WAIT,	 /* stops in a wait */
	REC_TRIG_LATE_NS, /* from a fire's signal read to its round's first interrupt */
	REC_TRIG_LATE_N,  /* rounds that LATE_NS sums */
	REC_TRIG_N
};

/* What to record, and where.  Copied by rec_open: the caller's strings
 * must outlive the recorder. */
struct rec_config {
	pid_t pids[REC_MAX_PIDS];
	unsigned npids;
	unsigned hz;
	enum rec_mode mode;
	enum rec_capture capture;
	uint64_t duration_ns; /* 0: until stopped */
	const char *repo;
	struct repo_opts ropts;
	uint32_t max_window;  /* --stack-bytes */
	uint32_t first_window;
	const char *debuginfo_dir;
	const char *cache_dir; /* decompressed debuginfo (sym_options.cache_dir), NULL: none */
	/* wall mode with perf: interrupt a lock's running owner once each time
	 * a waiter finds it holding the lock, for a stack taken while it
	 * holds it (--owner-stops).  Off by default: an owner that enters a
	 * system call just as it is interrupted may see EINTR, which perf
	 * capture otherwise never causes. */
	bool owner_stops;
	/* no kernel call chains (--no-kernel), where perf would give them */
	bool no_kernel;
	/* A service's recording (tracerd service, service/service.c): it may
	 * start with no target, takes processes one at a time with
	 * rec_attach, runs on when every one has exited, handles no signal
	 * (its caller does), takes every thread's stack when a process dies
	 * of a signal, and after a fatal one (a crash, SIGKILL) writes
	 * REPO/emergency-PID-TIME.tcf reaching emergency_window_ns back. */
	bool follow;
	uint64_t emergency_window_ns;
	/* Processes recorded at once, children included (0: REC_MAX_PROCS;
	 * at most REC_MAX_PROCS_MAX).  The tables that hold them are made
	 * this size at rec_open, so that no attach allocates while a target
	 * may be stopped; an attach past it fails with -TD_E_LIMIT. */
	unsigned max_procs;
	/* The children of the targets (a command's: record -- CMD), from
	 * their first instruction.  NONE: never stopped, not seen (--pid, a
	 * service).  FOLLOW: each a target of its own, with its own children
	 * and execs, while the tracer has room (max_procs at once): perf
	 * record's inherit.  COUNT (--no-inherit): each is let go at its
	 * first stop and counted (rec_stats.children_left). */
	enum rec_children { REC_CHILDREN_NONE, REC_CHILDREN_FOLLOW, REC_CHILDREN_COUNT } children;
	/* pids[0] is a command started held before its exec (record --
	 * CMD): its wait for us and its exec stop are ours, not its
	 * program's, and nothing of it is sampled until that exec */
	bool held_exec;
};

/* A consistent-enough copy of the recorder's counters (each is read once;
 * they are not read under a lock). */
struct rec_stats {
	uint64_t samples_taken, samples_written, ticks;
	/* periods taken that no row stands for: a runnable thread's before
	 * any stack of it was seen, dropped at a second stop request, or
	 * refused by the chunk writer (after an I/O error); with
	 * samples_written they add up to samples_taken */
	uint64_t unwritten_runnable, unwritten_hurried, unwritten_failed;
	uint64_t lost_ring, lost_not_stopped, lost_events, unwind_partial;
	/* perf: stacks deeper than the most the kernel copies per sample
	 * (65528 bytes), cut there */
	uint64_t cut_by_kernel;
	uint64_t lost_torn;   /* a blocked thread ran while its stack was copied */
	uint64_t lost_kernel; /* the kernel's perf ring was full */
	uint64_t skipped;     /* ticks a thread was left out after missed stops */
	uint64_t threads_seen, threads_live;
	enum rec_capture capture; /* what was used: PERF or PTRACE */
	bool offcpu;		  /* wall mode, PERF: intervals off a CPU measured at
				   * the kernel's switches */
	int perf_err;		  /* why not perf (AUTO fell back), 0 */
	enum rec_kernel kernel;	  /* kernel call chains, or why not */
	/* wall mode: blocked threads' kernel stacks from /proc/TID/stack,
	 * read once per blocked period (kstacks_read times), or why not
	 * (kstack_err: 0 not asked, -EACCES not CAP_SYS_ADMIN, -EPERM
	 * kallsyms hides its addresses) */
	bool kstack;
	int kstack_err;
	uint64_t kstacks_read;
	uint64_t bytes_written;
	uint64_t startup_cpu_us, startup_samples; /* at the first written batch */
	/* the debuginfo cache (struct sym_debug_stats, summed over the
	 * processes' sessions) */
	unsigned debug_reused, debug_created, debug_failed;
	int debug_err;
	unsigned tables_reused, tables_made; /* symbol tables in that cache */
	/* modules read without their DWARF, with or without the cache: it
	 * would inflate past the bound (sym_debug_stats.over_bound) */
	unsigned debug_over_bound;
	double stop_p50_us, stop_p99_us, stop_max_us;
	uint64_t owner_stops; /* wall mode with perf: lock owners stopped for their stack */
	uint64_t owner_early; /* wall mode with perf: early samples of lock owners asked */
	/* cfg.children: children followed, and those not (COUNT, or no room
	 * when FOLLOW: children_full of them) */
	uint64_t children_followed, children_left, children_full;
	/* cpu mode with ptrace capture: periods of CPU time (schedstat) that
	 * no sample carries, the processes whose own CPU-time timer
	 * triggered the stops, and why a timer could not be made (-errno) */
	uint64_t cpu_missed;
	unsigned cpu_timers;
	int cpu_timer_err;
	uint64_t trig[REC_TRIG_N]; /* what the triggers did (enum rec_trig) */
	/* the sampler thread's scheduling policy in ptrace capture
	 * (SCHED_FIFO or SCHED_OTHER), and why not SCHED_FIFO (-errno) */
	int sampler_policy, sampler_policy_err;
	int io_err; /* the repository's write error that stopped recording, 0 */
	/* processes whose mappings could not be read for want of permission
	 * (their samples have no stack), and the last such error */
	uint64_t maps_denied;
	int maps_denied_err;
	/* chunks another process changed while they were written (truncated,
	 * replaced, removed), left unfinished, and the samples they held */
	uint64_t chunks_changed, lost_changed;
};

/* owns: the sampler and writer threads, the rings between them, and
 * through the writer the repository (rec_open opens it and hands it to
 * the writer before attaching; the writer closes it) */
struct recorder;

/* Which step of rec_open failed, and for whom. */
struct rec_failure {
	enum { REC_FAIL_SETUP, REC_FAIL_REPO, REC_FAIL_TRACER, REC_FAIL_ATTACH } step;
	pid_t pid; /* ATTACH: the target; REPO with -TD_E_LOCKED: the tracerd
		    * process that holds the repository's lock */
};

/* Open the repository, start the sampler thread, attach to every target
 * and start the writer thread.  On failure nothing is left attached or
 * running; returns -errno / -TD_E_* and fills *ret_fail. */
int rec_open(const struct rec_config *cfg, struct recorder **ret_rec, struct rec_failure *ret_fail);

/* Something the recorder did that its caller wants to hear of. */
struct rec_notice {
	enum {
		REC_NOTICE_SNAPSHOT,  /* a snapshot was written (or failed) */
		REC_NOTICE_ATTACH,    /* follow: the answer to rec_attach */
		REC_NOTICE_EXIT,      /* a process attached has exited */
		REC_NOTICE_EMERGENCY, /* follow: an emergency dump (or why not) */
		REC_NOTICE_UNREADABLE, /* a process's mappings may not be read (err):
					* its samples have no stack; once each */
		REC_NOTICE_CHANGED,   /* another process changed the chunk being
				       * written: it is left unfinished, recording
				       * goes on in a new one */
		REC_NOTICE_JIT,	       /* a JIT's perf map or jitdump (path) not
					* read (err): once a process */
		REC_NOTICE_PYTHON,     /* a CPython whose frames tracerd cannot
					* read (python_version): left native;
					* once per process image */
	} kind;
	int err;	      /* 0, or why it failed */
	char path[4200];      /* SNAPSHOT, EMERGENCY, CHANGED, JIT: the file */
	unsigned chunks;      /* SNAPSHOT, EMERGENCY */
	uint64_t bytes;	      /* SNAPSHOT, EMERGENCY; CHANGED: what we wrote */
	uint64_t samples;     /* CHANGED: the samples it held, lost */
	int64_t size;	      /* CHANGED: its size found, -1: its name is gone */
	bool replaced;	      /* CHANGED: its name is another file's now, or none */
	struct td_proc_id id; /* ATTACH, EXIT, EMERGENCY, UNREADABLE, JIT and
			       * PYTHON (its pid only): the process */
	uint32_t python_version; /* PYTHON: its Py_Version (0x030c00f0: 3.12.0) */
	unsigned threads;     /* ATTACH: its threads attached */
	int status;	      /* EXIT, EMERGENCY: its wait status */
	bool oom;	      /* EXIT, EMERGENCY: its cgroup's OOM kill count rose */
	bool told;	      /* EXIT: an EMERGENCY notice of this death went first */
	/* EXIT, EMERGENCY (follow): where its fatal signal came from, when
	 * the thread that took it was held at the death (si_known) */
	bool si_known;
	struct td_siginfo si;
};

/* What the control loop calls back on the caller's thread; either may be
 * NULL. */
struct rec_hooks {
	void (*tick)(const struct recorder *r, void *arg); /* about once a second */
	void (*notice)(const struct rec_notice *n, void *arg);
};

/* The control loop, on the caller's thread: INT/TERM stop (a second one
 * hurries), HUP rotates, USR1 writes a snapshot.  Returns when recording
 * ends (duration, every target gone, a signal, an I/O error). */
void rec_run(struct recorder *r, const struct rec_hooks *hooks, void *arg);

void rec_stats(const struct recorder *r, struct rec_stats *ret_stats);

/* ---- a service's recording (cfg.follow), driven by the caller's loop
 * instead of rec_run.  Ask the sampler to attach pid; its answer comes as
 * a REC_NOTICE_ATTACH notice.  Returns 0, or -EAGAIN while REC_MAX_ASKED
 * requests wait for their answers. */
#define REC_MAX_ASKED 32
int rec_attach(struct recorder *r, pid_t pid);
/* Readable when notices wait: poll it, then call rec_poll. */
int rec_fd(const struct recorder *r);
/* Hand the waiting notices to hooks->notice.  Returns false once the
 * recording has ended by itself (an I/O error: rec_stats says which). */
bool rec_poll(struct recorder *r, const struct rec_hooks *hooks, void *arg);
/* When (td_now_ns) the sampler last went round its loop, which it does at
 * least every 10 ms while it is not stuck: a watchdog's evidence. */
uint64_t rec_heartbeat(const struct recorder *r);

/* Stop sampling, detach from every target (they keep running), finish the
 * chunk and free.  NULL-safe. */
void rec_free(struct recorder *r);

#endif
