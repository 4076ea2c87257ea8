/* tracerd daemon/: the recording daemon as a library.
 *
 *   target --(ptrace/, the sampler thread)--> sample ring --> writer thread
 *   (unwind + symbolize: symbolize/) --> chunk writer (chunkfmt/) -->
 *   repository (chunkfmt/repo.c)
 *
 * The sampler thread (daemon/sampler.c) is the only thread of tracerd that
 * stops a target thread; the writer thread (daemon/writer.c) owns the
 * repository; the caller's thread runs the control loop (daemon/control.c):
 * signals, stop, status.  The daemon never prints to people or exits: it
 * returns errors and counters, and cli/record.c says what they mean. */
#ifndef TD_DAEMON_H
#define TD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../chunkfmt/chunkfmt.h"

#define REC_MAX_PIDS 16

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
	/* A service's recording (tracerd service, daemon/service.c): it may
	 * start with no target, takes processes one at a time with
	 * rec_attach, runs on when every one has exited, handles no signal
	 * (its caller does), takes every thread's stack when a process dies
	 * of a signal, and after a fatal one (a crash, SIGKILL) writes
	 * REPO/emergency-PID-TIME.tcf reaching emergency_window_ns back. */
	bool follow;
	uint64_t emergency_window_ns;
};

/* A consistent-enough copy of the recorder's counters (each is read once;
 * they are not read under a lock). */
struct rec_stats {
	uint64_t samples_taken, samples_written, ticks;
	uint64_t lost_ring, lost_not_stopped, lost_events, unwind_partial;
	uint64_t lost_torn;   /* a blocked thread ran while its stack was copied */
	uint64_t lost_kernel; /* the kernel's perf ring was full */
	uint64_t skipped;     /* ticks a thread was left out after missed stops */
	uint64_t threads_seen, threads_live;
	enum rec_capture capture; /* what was used: PERF or PTRACE */
	int perf_err;		  /* why not perf (AUTO fell back), 0 */
	uint64_t bytes_written;
	uint64_t startup_cpu_us, startup_samples; /* at the first written batch */
	/* the debuginfo cache (struct sym_debug_stats, summed over the
	 * processes' sessions) */
	unsigned debug_reused, debug_created, debug_failed;
	int debug_err;
	unsigned tables_reused, tables_made; /* symbol tables in that cache */
	double stop_p50_us, stop_p99_us, stop_max_us;
	int io_err; /* the repository's write error that stopped recording, 0 */
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
	} kind;
	int err;	      /* 0, or why it failed */
	char path[4200];      /* SNAPSHOT, EMERGENCY: the file */
	unsigned chunks;      /* SNAPSHOT, EMERGENCY */
	uint64_t bytes;	      /* SNAPSHOT, EMERGENCY */
	struct td_proc_id id; /* ATTACH, EXIT, EMERGENCY: the process */
	unsigned threads;     /* ATTACH: its threads attached */
	int status;	      /* EXIT, EMERGENCY: its wait status */
	bool oom;	      /* EXIT, EMERGENCY: its cgroup's OOM kill count rose */
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

/* ==== what a blocked thread waits for (daemon/waits.c) =====================
 * From outside and without a stop: the thread's system call and arguments,
 * the memory they point at (glibc 2.36's object layouts), its stack's
 * function names, /proc/PID/fd. */
enum td_wait_kind {
	TD_WAIT_NONE,	   /* not blocked in a system call */
	TD_WAIT_MUTEX,	   /* pthread_mutex_t (normal, PI, robust) */
	TD_WAIT_RWLOCK,	   /* pthread_rwlock_t */
	TD_WAIT_CONDVAR,   /* pthread_cond_t */
	TD_WAIT_SEMAPHORE, /* sem_t */
	TD_WAIT_JOIN,	   /* pthread_join of another thread */
	TD_WAIT_FUTEX,	   /* a futex of no known kind */
	TD_WAIT_FD,	   /* read, write, recv, accept, poll, epoll... on a descriptor */
	TD_WAIT_SLEEP,	   /* nanosleep, clock_nanosleep */
	TD_WAIT_SIGNAL,	   /* pause, sigsuspend, sigtimedwait */
	TD_WAIT_DISK,	   /* uninterruptible sleep (state D) */
	TD_WAIT_OTHER,	   /* another system call (what: its name) */
};

struct td_wait {
	enum td_wait_kind kind;
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
const char *td_wait_kind_name(enum td_wait_kind k);
/* The kind as chunks store it (WAITS records). */
enum tcf_wait_kind td_wait_tcf_kind(enum td_wait_kind k);
/* The name of system call nr, NULL if not one of the blocking calls known. */
const char *td_syscall_name(long nr);
/* Classify thread tid of pid, blocked in system call nr (-1: none) with
 * args, in /proc state 'state', its stack's function names funcs (leaf
 * first, NULL for unknown).  futex: for futex(), the TD_FUTEX_WORDS words
 * at args[0] as read when the thread was seen (owners are read from
 * them), NULL to read them now.  Reads the target's memory and
 * /proc/PID/fd; stops nothing. */
void td_wait_classify(pid_t pid, pid_t tid, long nr, const uint64_t args[6],
	const uint32_t *futex, char state, const char *const *funcs, unsigned nfuncs,
	struct td_wait *ret);

/* ==== tracerd dump as a library (daemon/dump.c) ============================
 * One capture round over the threads of a process, then unwinding and
 * symbolization into a flat result.  cli/dump.c prints it. */
#include "../symbolize/symbolize.h"

#define DUMP_MAX_THREADS 8192
#define DUMP_MAX_TIDS 256
#define DUMP_STOP_TIMEOUT_MS 2000 /* for threads to stop (D state: never) */

struct dump_options {
	pid_t pid;
	pid_t tids[DUMP_MAX_TIDS]; /* only these threads; none: every thread */
	unsigned ntids;
	uint32_t stack_bytes;	   /* copied per thread; 0: 64 KiB */
	bool inlines;		   /* inlined frames too */
	bool no_dwarf;		   /* ELF symbols only (sym_options.no_dwarf) */
	const char *debuginfo_dir; /* borrowed */
	const char *cache_dir;	   /* borrowed; sym_options.cache_dir */
};

enum dump_capture {
	DUMP_NOT_CAPTURED, /* exited (or did not stop in time) before its copy */
	DUMP_CAPTURED,	   /* copied, unwound, symbolized */
	DUMP_EXITED,	   /* had exited already: the main thread of a process
			    * whose other threads live on (a zombie leader) */
};

/* One symbolized frame; strings are offsets into dump_result.strings,
 * 0 when unknown (dump_string() gives NULL then). */
struct dump_frame {
	uint64_t pc, offset;
	uint32_t function, file, module, build_id;
	int line;
	bool inlined;
};

struct dump_thread {
	pid_t tid;
	char name[16];
	/* /proc's letter as read after attaching, except that a job-control
	 * stop, which a traced thread shows as 't', is 'T' */
	char state;
	enum dump_capture capture;
	/* CAPTURED only: */
	uint64_t stopped_ns;  /* upper bound of the time it was stopped */
	uint32_t stack_bytes; /* stack bytes copied */
	enum sym_end end;     /* why its stack ends */
	uint64_t fault_addr;  /* end WINDOW, READ_FAILED: the address */
	unsigned live_reads;  /* reads outside the stack copy */
	char detail[96];      /* libdwfl's words on the end, if any */
	unsigned first_frame, nframes; /* into dump_result.frames */
	struct td_wait wait;  /* what it waits for, if blocked in a system call */
	/* in a deadlock: its cycle's number (1, 2, ...), else 0; the threads
	 * of a cycle each wait for an object the next one holds */
	unsigned deadlock;
};

/* owns: threads, frames, strings (flat arrays; threads sorted by tid) */
struct dump_result {
	pid_t pid;
	struct dump_thread *threads;
	unsigned nthreads;
	struct dump_frame *frames;
	unsigned nframes;
	char *strings;
	size_t strings_len;
	unsigned requested, captured, gone, timeout; /* the capture round */
	unsigned modules, with_elf, with_dwarf;	     /* sym_session_modules */
	struct sym_debug_stats debug_cache;	     /* sym_session_debug_stats */
	bool process_exited; /* during the dump: the threads are what was captured */
	unsigned deadlocks;  /* cycles found (dump_thread.deadlock) */
	uint64_t attach_ns, modules_ns, capture_ns, symbolize_ns;
};

/* Which step failed, and for whom. */
struct dump_failure {
	enum { DUMP_FAIL_SETUP, DUMP_FAIL_ATTACH, DUMP_FAIL_TID, DUMP_FAIL_MODULES } step;
	pid_t tid; /* TID: the one that is no thread of the process */
	bool gone; /* MODULES: because the process exited first */
};

/* Attach to o->pid, capture every (or each asked) thread once, detach,
 * then unwind and symbolize.  Returns 0 and *ret_result (free it with
 * dump_result_free), or -errno / -TD_E_* and *ret_fail. */
int dump_run(const struct dump_options *o, struct dump_result **ret_result,
	struct dump_failure *ret_fail);
void dump_result_free(struct dump_result *r); /* NULL-safe */
/* The thread tid of r (a binary search: threads are sorted by tid), NULL
 * if it is not one of them. */
const struct dump_thread *dump_thread_of(const struct dump_result *r, pid_t tid);

static inline const char *dump_string(const struct dump_result *r, uint32_t off)
{
	return off ? r->strings + off : NULL;
}
/* ==== end of tracerd dump ================================================= */

#endif
