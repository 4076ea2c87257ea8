/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to daemon/: who owns what among the recorder's three threads,
 * and the one structure they share.
 *
 *   control loop  the caller's thread (control.c): struct recorder, the
 *                 config, the thread handles, the signalfd; the rings and
 *                 wakes, which it sets up and frees once both threads
 *                 are joined; the repository until writer_new takes it
 *   sampler       (sampler.c, sampler-wall.c; sampler-internal.h): struct
 *                 sampler, the tracer, the per-thread sampling table and
 *                 the target set (targets.c)
 *   writer        (writer.c and its parts, writer-internal.h): struct
 *                 writer, the repository and its chunk writer, the
 *                 libdwfl sessions, the symbol caches, the per-chunk id
 *                 maps
 *
 * What crosses between them is struct rec_shared and nothing else: five
 * rings (ring.h: samples and events, sampler -> writer; notices, writer ->
 * control loop; asks and answers between the control loop and the
 * sampler, in follow mode), a wake per thread (wake.h) and atomics.  Each
 * atomic is written by the one thread named with it, but for requests:
 * one thread sets them and the other takes them with an exchange
 * (rotate_req, snapshot_req, fit[]).  The sampler never waits for the
 * writer but in a crash (bounded), and never on anything while a target
 * thread is stopped. */
#ifndef TD_DAEMON_INTERNAL_H
#define TD_DAEMON_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../chunkfmt/chunkfmt.h"
#include "../ptrace/ptrace.h"
#include "daemon.h"
#include "ring.h"
#include "wake.h"
#include "../common/td.h"

/* An event from the sampler to the writer (flat: crosses the events ring,
 * ordered with the samples by time_ns). */
enum rec_event_kind {
	REC_EV_THREAD_NEW,
	REC_EV_THREAD_EXIT,
	REC_EV_EXEC,
	REC_EV_PROCESS_EXIT,
	REC_EV_CRASH,	   /* followed by the stacks of the process's threads */
	REC_EV_CRASH_DONE, /* every stack of the crash is in the samples ring */
	REC_EV_EXITING,	   /* a process's leader is held at its exit until the
			    * writer has come this far (exit_acked) */
	REC_EV_REPEAT,	   /* a sample without stack bytes (TD_SAMPLE_REPEAT,
			    * flags in status): the thread's last stack again.
			    * Here, not in the samples ring, because its slots
			    * are sized for a stack: a wall-mode tick over 1000
			    * parked threads filled that ring in one go. */
	REC_EV_HELD,	   /* a waiter's futex words (futex), read again at
			    * time_ns after its lock's owner was stopped for
			    * its stack, or its early sample came, were still
			    * those of its last sample: the owner held the
			    * lock throughout (writer-waits.c) */
};

struct rec_event {
	enum rec_event_kind kind;
	pid_t pid, tid, old_tid;
	int signo, status;
	uint64_t addr, time_ns;
	/* The two handshakes' id, one field for both: CRASH, CRASH_DONE:
	 * which crash (acknowledged in crash_acked); EXITING: which exit
	 * hold (in exit_acked).  Each counts on its own. */
	uint32_t handshake_id;
	uint64_t start_time; /* PROCESS_EXIT: its start (struct td_proc_id) */
	uint32_t image;	     /* THREAD_NEW, EXEC: its process's image (struct target) */
	uint32_t futex[TD_FUTEX_WORDS]; /* REPEAT with TD_SAMPLE_FUTEX */
};

#define REC_STOP_RING 8192   /* recent stopped times kept for percentiles */
#define REC_FIT_SLOTS 1024   /* window requests: tid % REC_FIT_SLOTS */
#define REC_MAX_THREADS 16384 /* threads sampled, all targets together */

/* Processes recorded at once: the size of every table that holds them. */
static inline unsigned rec_max_procs(const struct rec_config *cfg)
{
	return cfg->max_procs ? cfg->max_procs : REC_MAX_PROCS;
}
#define REC_READ_SLOTS 256   /* maps_read: pid % REC_READ_SLOTS */

/* Everything the threads share.  rec_open fills the first group before
 * any thread starts; after that, each field below has one writing thread,
 * named with it, but for the requests (rotate_req, snapshot_req, fit[]),
 * set by one thread and taken by the other.  Plain fields are written
 * before a store to an atomic that the reader loads first, as said per
 * field. */
struct sym_kallsyms; /* symbolize/symbolize.h */

struct rec_shared {
	/* Set up by the control loop before the threads start; read-only
	 * afterwards. */
	const struct rec_config *cfg; /* the control loop's copy */
	/* each thread's wake (wake.h): posted by any, drained by its own */
	struct wake sampler_wake, writer_wake, control_wake;

	/* The five rings, one producer and one consumer each (ring.h). */
	struct ring samples; /* sampler -> writer: struct td_sample + stack window */
	struct ring events;  /* sampler -> writer: struct rec_event */
	struct ring notices; /* writer -> control loop: struct rec_notice */
	/* follow (rec_attach): control loop -> sampler: pid_t to attach;
	 * sampler -> control loop: struct rec_notice (ATTACH), one per
	 * request, so never more than REC_MAX_ASKED. */
	struct ring asks, answers;
	_Atomic uint64_t heartbeat_ns; /* sampler: its latest turn (rec_heartbeat) */

	/* Startup, sampler -> control loop.  The sampler fills attach_err,
	 * attach_pid and targets, then stores attach_state; the control loop
	 * reads them once it sees attach_state != 0, and the writer (started
	 * after that) reads targets. */
	_Atomic int attach_state; /* 0 pending, 1 every target attached, -1 failed */
	int attach_err;		  /* -errno / -TD_E_*: why it failed */
	pid_t attach_pid;	  /* the target it failed on; 0: setting up the tracer */
	struct td_proc_id targets[REC_MAX_PIDS]; /* cfg->pids as attached */
	int capture;  /* enum rec_capture the sampler chose: PERF or PTRACE */
	bool offcpu;  /* PERF in wall mode: the kernel samples switches out */
	int kernel;   /* enum rec_kernel: kernel call chains, or why not */
	int perf_err; /* why not PERF, when AUTO fell back to PTRACE */
	/* Wall mode's kernel stacks of blocked threads (sampler-wall.c),
	 * set by writer_new before the sampler starts: kallsyms, the
	 * writer's table (owned and freed by the writer, after the sampler
	 * is joined) with its index by name, which the sampler reads to turn
	 * /proc's names into the addresses kernel frames carry; NULL when
	 * off, and kstack_err says why (0: not asked: cpu mode, --no-kernel;
	 * -EACCES: /proc/TID/stack needs CAP_SYS_ADMIN; -EPERM: kallsyms
	 * hides its addresses). */
	const struct sym_kallsyms *kallsyms;
	int kstack_err;

	/* Requests of the control loop.  stop: 1 stop (INT/TERM, rec_free),
	 * 2 hurry (a second INT/TERM: drop what is not written); read by the
	 * sampler and the writer.  rotate_req, snapshot_req: set to 1, taken
	 * (exchanged with 0) by the writer. */
	_Atomic int stop;
	_Atomic int rotate_req, snapshot_req;

	/* Each thread's last store before it returns. */
	_Atomic int sampler_done; /* read by the writer: drain, then finish */
	_Atomic int writer_done;  /* read by the control loop (rec_run returns)
				   * and the sampler (a crash wait ends) */

	/* The crash handshake.  The sampler, the crashing thread held,
	 * publishes REC_EV_CRASH, every stack of the process, REC_EV_CRASH_DONE
	 * with its handshake_id, then waits (3 s at most) for the writer, which
	 * writes them, syncs the chunk and stores the id here.  Written by the
	 * writer, read by the sampler. */
	_Atomic uint32_t crash_acked;

	/* The exit hold.  Samples are unwound against the process's
	 * mappings, which the writer reads when it first needs them; a
	 * process that exits before that leaves its samples without a
	 * stack (a short command, or the last moments of a long one).  So
	 * the sampler holds a sampled process's leader at its exit stop
	 * (its mappings intact until it goes on), publishes REC_EV_EXITING
	 * with an id after every sample taken before it, and lets it go
	 * when the writer stores that id here, or after 2 s.  Written by
	 * the writer, read by the sampler. */
	_Atomic uint32_t exit_acked;
	/* No hold is needed when the writer read the mappings of the
	 * process's current image already: it stores pid << 32 | the image's
	 * number (struct target, told with REC_EV_THREAD_NEW and EXEC) here,
	 * at pid % REC_READ_SLOTS, when it builds a session (0 once the
	 * process is gone).  Written by the writer, read by the sampler. */
	_Atomic uint64_t maps_read[REC_READ_SLOTS];

	/* Stack copies that fit, a request of the writer to the sampler,
	 * with two writers: the writer stores (tid << 32 | bytes) in
	 * fit[tid % REC_FIT_SLOTS], the window that thread's stacks need
	 * (all there is after a stack ended at the window's edge, less after
	 * its unwinds used much less for a while: writer-stacks.c); the
	 * sampler sets the thread's window to it, within the thread's
	 * bounds, and takes the request by compare-exchange of that value
	 * with 0, so that a request stored meanwhile stays.  Two tids sharing
	 * a slot only delay one of them. */
	_Atomic uint64_t fit[REC_FIT_SLOTS];

	/* Written by the sampler; read by rec_stats on the control loop's
	 * thread, samples_taken also by the writer (startup_samples),
	 * targets_live also by the writer once sampler_done is set (did every
	 * target exit?). */
	_Atomic uint64_t samples_taken, ticks;
	_Atomic uint64_t lost_ring, lost_not_stopped, lost_events;
	_Atomic uint64_t lost_torn, lost_kernel, skipped;
	_Atomic uint64_t threads_seen, threads_live;
	_Atomic uint32_t stop_ns[REC_STOP_RING]; /* stopped times, [stop_n % RING] last */
	_Atomic uint64_t stop_n, stop_max;
	_Atomic uint64_t owner_stops; /* wall mode with perf: lock owners stopped */
	_Atomic uint64_t owner_early; /* wall mode with perf: early samples asked of owners */
	_Atomic uint64_t kstacks_read; /* wall mode: /proc/TID/stack reads (kallsyms) */
	/* children followed, not followed, not followed for want of room */
	_Atomic uint64_t children_followed, children_left, children_full;
	/* cpu mode with ptrace capture (sampler-cpu.c): periods of CPU time
	 * schedstat counted that no sample carries; processes whose CPU-time
	 * timer triggers the stops, and why one could not be made (-errno) */
	_Atomic uint64_t cpu_missed;
	_Atomic unsigned cpu_timers;
	_Atomic int cpu_timer_err;
	_Atomic uint64_t trig[REC_TRIG_N]; /* what the triggers did (enum rec_trig) */
	/* the sampler's policy and why not SCHED_FIFO: set once, before
	 * attach_state (read after it) */
	int sampler_policy, sampler_policy_err;
	_Atomic int targets_live;

	/* Written by the writer; read by rec_stats.  io_err (the repository
	 * error that ends recording) is stored by writer_fail only, the first
	 * one winning, and is also read by the sampler, which stops at once. */
	_Atomic uint64_t samples_written, unwind_partial, bytes_written;
	/* Periods taken (samples_taken) that no row stands for, by why:
	 * a thread's runnable repeat before any stack of it was seen; a
	 * second stop request (hurry) dropped them; the chunk writer refused
	 * the row, or there was no chunk (an I/O error, which ends
	 * recording).  With samples_written they add up to samples_taken
	 * once the rings are drained. */
	_Atomic uint64_t unwritten_runnable, unwritten_hurried, unwritten_failed;
	/* writer: processes whose maps it may not read, and why (-errno) */
	_Atomic uint64_t maps_denied;
	_Atomic int maps_denied_err;
	_Atomic uint64_t cut_by_kernel; /* perf: stacks longer than the kernel copies */
	_Atomic uint64_t startup_cpu_us, startup_samples; /* at the first written batch */
	/* the debuginfo cache, summed over sessions (struct sym_debug_stats) */
	_Atomic unsigned debug_reused, debug_created, debug_failed;
	_Atomic int debug_err;
	_Atomic unsigned tables_reused, tables_made;
	_Atomic unsigned debug_over_bound; /* not the cache's: any session's */
	_Atomic int io_err;
	_Atomic uint64_t chunks_changed, lost_changed; /* chunk_changed() */
};

/* ---- the sampler thread (sampler.c; its parts in sampler-internal.h)
 * arg: the struct rec_shared.  Creates the tracer, attaches to every
 * target, sets attach_state, samples until stop, io_err, the duration or
 * the last target's exit, then detaches from every thread.  Owns and frees
 * all it allocates; sets sampler_done last. */
void *sampler_main(void *shared);

/* ---- the writer thread (writer.c; its parts in writer-internal.h) */
struct writer;
/* On the control loop's thread, before the writer thread starts.  On
 * success the writer owns repo; on failure the caller still does. */
int writer_new(struct rec_shared *sh, struct repo *repo, struct writer **ret_writer);
/* A start that failed before the writer thread ran: discard the
 * repository instead of closing it (repo_discard), so a directory this
 * start made and left empty goes again. */
void writer_discard_repo(struct writer *w);
/* Recording ends on err, the repository's error (-errno / -TD_E_*; 0 for
 * one without a cause: -EIO), stored in rec_shared.io_err unless an error
 * is there already: the first one wins, by compare-exchange.  Returns the
 * error that stands. */
int writer_fail(struct writer *w, int err);
/* End the current chunk (reason: enum tcf_end_reason; WRITER_ROTATE_DUE:
 * only if the repository says it is due); on the writer's thread, or
 * before it starts. */
#define WRITER_ROTATE_DUE (-1)
void writer_rotate(struct writer *w, int reason);
/* The thread; arg: the struct writer.  Writes until the sampler is done
 * and the rings are empty, then finishes the chunk and closes the
 * repository; sets writer_done last. */
void *writer_main(void *writer);
/* After the writer thread is joined, or if it never started (then the
 * repository is closed here).  NULL-safe. */
void writer_free(struct writer *w);

/* ---- the target set (targets.c), owned by the sampler thread
 * The processes being recorded and their threads, as the tracer's events
 * change them.  The sampler keeps its per-thread sampling state in step
 * through struct targets_ops; it never learns of a thread any other way. */

/* One target process: (pid, start time) names it for good, the PID alone
 * only until it is reaped. */
struct target {
	struct td_proc_id id;
	bool live; /* attached, its exit not seen yet */
	bool sampled;	/* a sample of its current image was published */
	bool id_unread; /* a child: id.start_time still to read (targets_apply) */
	/* its image's number, never 0 and never reused by this target set:
	 * a new one at attach and at each exec (rec_shared.maps_read) */
	uint32_t image;
};

#define TARGETS_PENDING 8192

/* owns: procs; borrows: the tracer */
struct targets {
	struct pt_tracer *tracer;
	/* cap slots (the tracer's max_procs), made at targets_init; a slot
	 * not live is free */
	struct target *procs;
	unsigned cap;
	unsigned nprocs, live;
	/* thread changes seen during a round, applied after it */
	struct targets_change {
		bool add;
		pid_t tid, pid;
	} pend[TARGETS_PENDING];
	unsigned npend;
	bool resync;			 /* pend overflowed: ask the tracer */
	uint32_t images;		 /* the last image number given */
	pid_t scratch[REC_MAX_THREADS]; /* tids, while attaching or resyncing */
};

/* How the target set tells its owner about threads. */
struct targets_ops {
	/* tid of pid joined: found when attaching (found = true: nothing has
	 * been said of it yet), or born since. */
	void (*thread_add)(void *arg, pid_t pid, pid_t tid, bool found);
	void (*thread_remove)(void *arg, pid_t tid);
	bool (*thread_known)(void *arg, pid_t tid);
};

/* Room for max_procs processes, made now: targets_note never allocates.
 * Returns 0 or -ENOMEM. */
int targets_init(struct targets *ts, struct pt_tracer *tracer, unsigned max_procs);
/* NULL-safe, and safe on a zeroed struct targets. */
void targets_free(struct targets *ts);
/* Attach to every pid in turn (at the start, or one more later; children
 * of targets come as PT_EVENT_PROCESS_NEW instead), record
 * its identity in ret_ids[i] and pass each of its threads to
 * ops->thread_add.  Returns 0, or the first error
 * (-errno / -TD_E_*) with the pid it concerns in *ret_pid; the processes
 * attached before it stay attached (pt_tracer_free detaches them). */
int targets_attach(struct targets *ts, const pid_t *pids, unsigned n,
	const struct targets_ops *ops, void *arg, struct td_proc_id *ret_ids, pid_t *ret_pid);
/* A tracer event, possibly while a thread is stopped: only queues (no
 * allocation, lock, log or I/O).  Returns true when it ended a target or
 * added one (a child followed). */
bool targets_note(struct targets *ts, const struct pt_event *ev);
/* After a round: apply the queued thread changes through ops. */
void targets_apply(struct targets *ts, const struct targets_ops *ops, void *arg);
/* Targets attached whose exit has not been seen. */
unsigned targets_live(const struct targets *ts);
/* The live target of PID pid, or NULL. */
struct target *targets_find(struct targets *ts, pid_t pid);

#endif
