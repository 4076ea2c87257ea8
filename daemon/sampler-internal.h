/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to the sampler thread's files: its state, and what its parts
 * call of each other.
 *
 *   sampler.c       the thread: setup, the loop, the thread table, the
 *                   rounds of stops and their callbacks, the perf
 *                   drains, the exit holds and crashes
 *   sampler-wall.c  wall mode's tick: blocked threads copied without a
 *                   stop or repeated, runnable time sampled
 *   sampler-cpu.c   cpu mode with ptrace capture: each process's CPU-time
 *                   timer that triggers its stops, and the CPU time no
 *                   sample carries
 *
 * Everything here runs on the sampler thread; the rules of sampler.c's
 * header hold in every part (nothing allocated, locked, logged or waited
 * for while a target thread is stopped). */
#ifndef TD_DAEMON_SAMPLER_INTERNAL_H
#define TD_DAEMON_SAMPLER_INTERNAL_H

#include <time.h>

#include "daemon-internal.h"

#include "../common/map.h"

#define S_MAX_THREADS REC_MAX_THREADS
#define S_MIN_WINDOW 2048 /* the smallest stack copy a thread's unwinds can ask */

enum { ST_NEW, ST_SETTLE };

#define S_AHEAD_NS 10000000u /* run time credited ahead of schedstat, at most */
#define S_DRAIN_NS 75000000u /* perf capture: the kernel's rings drained this often
				* (and what kill -9 loses: writer.c) */
#define S_WRITER_NS 75000000u /* the writer woken at most this often, but for full rings */
#define S_EXIT_HOLD_NS 2000000000u /* a leader held at its exit for the writer, at most */
#define S_MAX_OWNER_ASKS 64	   /* lock owners whose stack a tick may ask for */
#define S_OWNER_EARLY_DIV 8	   /* an owner's early sample: after 1/8 tick of CPU */
#define S_MAX_TIMERS 64		   /* processes with a CPU-time timer at once */

struct sthread {
	pid_t tid, pid;
	int fd;	    /* schedstat, -1 until opened */
	int sys_fd; /* syscall, -1 until opened */
	int stat_fd; /* stat, -1 until opened */
	int kstack_fd; /* wall mode, root: stack (kstack_of), -1 until opened */
	uint8_t state;
	bool oncpu; /* its last sample found it running, not in a syscall */
	bool perf;  /* the kernel samples it (pt_perf) */
	bool have_last; /* last: its latest copy without a stop */
	bool last_disk;
	struct pt_blocked last;
	uint64_t run_ns, run_count;
	bool born;	       /* cloned while we record: all its run time is ours */
	uint64_t credited;     /* cpu mode, ptrace: run time credited so far */
	uint64_t cpu_credit;   /* cpu mode, ptrace: run ns not yet sampled */
	uint32_t take;	       /* cpu mode, ptrace: periods its next stop stands for */
	uint8_t timer;	       /* cpu mode, ptrace: 1 + its process's slot in
				* timers[] (its stops wait for that timer), 0 */
	uint64_t wait_ns;     /* wall mode with perf: schedstat's wait at the last tick */
	uint64_t wait_credit; /* wall mode with perf: runnable ns not yet sampled */
	uint64_t block_credit; /* wall mode with perf: blocked ns not yet sampled */
	uint64_t block_runs;   /* wall mode: run_count when last seen blocked */
	bool seen_blocked;     /* block_runs is set */
	uint64_t woken_credit; /* wall mode with perf: woken-waiting ns not yet sampled */
	uint64_t woken_sampled; /* wall mode with perf: woken ns sampled, not yet in wait_ns */
	uint32_t window;
	uint32_t ins;	      /* perf switches: times scheduled in, as drained */
	uint32_t ins_looked;  /* ins at its last look through /proc */
	uint64_t skip_ns;     /* wall mode: blocked ns sampled without a look since the last */
	bool leaving;	      /* held at its exit stop: sampled no more */
	/* wall mode with offcpu: its time off a CPU is carried by the
	 * kernel's switch samples (TD_SAMPLE_OFFCPU) since its first one;
	 * the ticks' copies of it serve its wait episodes alone */
	bool covered;
	int64_t woken_ns; /* covered: schedstat's wait not yet told apart
			   * from the preemptions (runnable once woken) */
	/* wall mode with perf, a lock's owner's stack (wall_tick) */
	uint32_t owner_words;  /* a waiter: hash of the futex words it read last */
	uint64_t owner_since;  /* a waiter: tick_ns of the first tick that read them */
	uint64_t running_tick; /* tick_ns of the last tick that found it running */
	uint64_t owner_tick;   /* an owner: tick_ns of the tick that stops it for its
				* stack, or asks the kernel for an early sample */
	uint64_t owner_took;   /* an owner: tick_ns of the last such stop, or ask,
				* whose sample came */
	uint64_t owner_asked_ns; /* an owner: when the early sample was asked, until
				  * a sample of it came; 0: none pending */
	/* wall mode: its job-control stop's registers and stack were taken
	 * (put_stopped); the ticks of the stop repeat them */
	bool stop_copied;
	/* wall mode: a tick found it in a job-control stop since its last
	 * interval off a CPU; that interval is the stop (put_unstopped) */
	bool stop_seen;
};

/* The sampler thread's own state.  owns: t, th (and each fd in it), idx, tfd,
 * chosen, targets; borrows: sh, cfg */
struct sampler {
	struct rec_shared *sh;
	const struct rec_config *cfg;
	struct pt_tracer *t;
	struct sthread *th; /* dense */
	unsigned n;
	struct td_map idx; /* tid -> index into th; fixed: never allocates */
	struct targets targets;
	struct pt_perf *perf; /* perf capture, else NULL */
	unsigned nonperf;     /* threads the kernel does not sample */
	bool switches;	      /* the kernel reports switches (wall mode with perf) */
	bool offcpu;	      /* and samples each interval off a CPU (pt_perf_offcpu) */
	bool switches_lost;   /* since the last tick: its ring lost records */
	bool wake_writer;     /* something for the writer at once (an attach, a death) */
	struct {
		pid_t tid;
		uint32_t window;
	} resize[64]; /* perf threads whose window changes, to reopen */
	unsigned nresize;
	pid_t *chosen;
	pid_t *group;  /* round_by_cpu: the chosen threads on one CPU */
	int *cpu_of;   /* round_by_cpu: the CPU of chosen[i] */
	uint64_t rng;
	uint64_t tick_ns; /* the last tick of choose() or wall_tick() */
	int tfd;	  /* the tick timer (timerfd), -1 until made */
	uint64_t start_ns;	 /* when sampling began, for the duration */
	uint64_t next_ns;	 /* the timer's next expiry */
	/* perf capture's drains alone: the timer repeats every S_DRAIN_NS
	 * from its last setting (next_ns then); 0: it does not repeat */
	uint64_t every_from;
	uint64_t round_at;	 /* perf capture: the next round of the others */
	uint64_t woke_writer_ns; /* the last wake_writer_due() that woke it */
	uint32_t crash_id; /* of the last crash */
	/* leaders held at their exit stop for the writer (exit_holds) */
	struct exit_hold {
		pid_t tid;
		uint32_t id;	   /* of its REC_EV_EXITING; 0: not yet published */
		uint64_t deadline; /* let go then, acknowledged or not */
	} *exits; /* max_procs slots: every process recorded, a command's
		   * children too, made at sampler_start */
	unsigned nexits, max_exits;
	uint32_t exit_id; /* of the last REC_EV_EXITING */
	/* cfg->held_exec: the command's pid, and when its exec stop was
	 * seen (UINT64_MAX until then): a sample of it taken before is
	 * not published */
	pid_t held_pid;
	uint64_t held_exec_ns;
	/* wall mode with perf: the waiters whose lock's owner this tick's
	 * round stops for its stack, and the words they read (wall_tick) */
	struct owner_wait {
		pid_t pid, tid, owner;
		uint64_t uaddr;
		uint32_t words[TD_FUTEX_WORDS];
	} owner_waits[S_MAX_OWNER_ASKS];
	unsigned nowner_waits;
	/* early samples asked of owners (no --owner-stops): when the
	 * waiters read their words again (wall_owners_held); 0: not due */
	uint64_t owner_check_ns;
	/* cpu mode with ptrace capture (sampler-cpu.c): a timer on each
	 * process's CPU-time clock, signalled to this thread (sigfd) */
	struct cpu_timer {
		pid_t pid; /* 0: a free slot */
		timer_t id;
		bool fired; /* since the last round */
		bool seen;  /* cpu_timers_sync: a thread of it is in th */
	} timers[S_MAX_TIMERS];
	int sigfd;		/* the timers' signal, -1 without timers */
	bool fired;		/* some timer fired since the last round */
	uint64_t fired_ns;	/* when the first of those fires was read; 0: none */
	unsigned timers_n;	/* n at the last cpu_timers_sync */
	uint64_t timers_ns;	/* time of the last cpu_timers_sync */
	uint64_t missed_ns;	/* CPU ns no sample carries, less sh->cpu_missed's periods */
};

/* ---- sampler.c */
/* The time since the previous tick (a period at the first), and this
 * tick's time for the next. */
uint64_t tick_dt(struct sampler *s, uint64_t period);
/* The thread's kept-open schedstat and syscall files; false if it has no
 * process id yet or is gone. */
bool probe_fds(struct sthread *st);
/* In uninterruptible sleep (D): waiting for the disk or the like; its
 * name in ret_name when stat could be read. */
bool in_disk_wait(struct sthread *st, char ret_name[16]);
/* The CPU a thread last ran on (field 39 of its stat), -1 if unknown. */
int last_cpu(struct sthread *st);
/* Apply a pending window request of the writer (fit[]). */
void maybe_fit(struct sampler *s, struct sthread *st);
/* A sample of pid's current image is on its way to the writer. */
void mark_sampled(struct sampler *s, pid_t pid);

/* ---- sampler-cpu.c */
/* The timers' signal blocked on this thread and read through sigfd.
 * Returns 0 or -errno (then no timer is made: the ticks stop threads). */
int cpu_timers_init(struct sampler *s);
/* A timer for each process of the thread table, none for a process that
 * left it; each thread's timer slot. Never while a thread is stopped. */
void cpu_timers_sync(struct sampler *s);
/* The timers' signals read; true if one came (s->fired, timers[].fired). */
bool cpu_timers_drain(struct sampler *s);
/* This thread at SCHED_FIFO's lowest priority where permitted, so that a
 * fire's wake-up preempts whatever runs (sh->sampler_policy, and why not
 * in sampler_policy_err). */
void cpu_sampler_realtime(struct sampler *s);
/* Every timer deleted, sigfd closed.  Safe when never initialised. */
void cpu_timers_free(struct sampler *s);
/* ns of CPU time that no sample will carry: counted in sh->cpu_missed. */
void cpu_missed_add(struct sampler *s, uint64_t ns);
/* Recording ends: the CPU time every thread is still owed, missed. */
void cpu_missed_flush(struct sampler *s);
/* Did this stop of st land where the thread waits (in a system call that
 * the stop interrupted, or at the return of a call that waits), not where
 * it ran?  Counted in sh->trig. */
bool cpu_stop_in_wait(const struct sampler *s, const struct td_sample *smp);

/* ---- sampler-wall.c */
/* wall mode, one tick: every thread.  Blocked ones are copied without a
 * stop (or repeated); returns how many running ones it put in
 * s->chosen for the round, unless the kernel samples them (perf): then
 * only their time waiting for a CPU is sampled here. */
unsigned wall_tick(struct sampler *s);
/* wall mode with offcpu: of an OFFCPU sample's weight periods (flags its
 * flags), how many thread st spent waiting for a CPU once woken: schedstat's
 * wait less the preemptions, paid as the blocked intervals come. */
uint32_t offcpu_runnable(struct sampler *s, struct sthread *st, uint32_t flags,
	uint32_t weight);
/* After the tick's round (stops), or at owner_check_ns once the kernel's
 * ring is drained (early samples): each waiter whose owner's stop or
 * early sample came since the tick reads its words again; the same,
 * REC_EV_HELD. */
void wall_owners_held(struct sampler *s);

#endif
