/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to the writer thread's files: struct writer, and what its parts
 * call of each other.
 *
 *   writer.c         the loop, the chunk being written (publish, rotate,
 *                    the first error), the per-chunk ids and thread
 *                    names, samples and events turned into records
 *   writer-stacks.c  the libdwfl sessions, unwinding and symbolizing a
 *                    sample into the chunk's stack, the saved unwinds
 *                    that repeats reuse
 *   writer-waits.c   wall mode's wait episodes (WAITS records)
 *   writer-deaths.c  follow mode: deaths, the OOM killer, emergency
 *                    dumps; and a crash's records
 *   writer-python.c  CPython frames: a Python thread's interpreter
 *                    frames, put in its stack in place of the
 *                    _PyEval_EvalFrameDefault frames that run them
 *
 * Each part owns the sub-struct of struct writer named after it; the
 * others read it, and only through that part's functions change it.
 * Everything here runs on the writer thread (but writer_new, and
 * writer_free after the join). */
#ifndef TD_DAEMON_WRITER_INTERNAL_H
#define TD_DAEMON_WRITER_INTERNAL_H

#include "daemon-internal.h"

#include "../chunkfmt/chunkfmt.h"
#include "../common/map.h"
#include "../symbolize/symbolize.h"
#include "waits.h"

/* An OOM kill counted at most this long before a SIGKILL death is its
 * cause: the kernel counts the kill first, and the victim may take
 * seconds to die (the OOM reaper steps in after 2 s) */
/* Python frames of one stack that the writer reads: deeper than that,
 * the stack stays native (Python's own default recursion limit is 1000,
 * but a sampled stack that deep is rare and costly to read) */
#define WRITER_PY_FRAMES 256

#define WRITER_OOM_SPAN_NS 5000000000ull
#define WRITER_OOM_READS 8 /* a second apart: more than the span */

/* The writer's libdwfl sessions, one per process sampled, together:
 * past this many bytes (each weighed as below), the least recently used
 * is freed before another is built; it is built again at its process's
 * next sample.  One used within WRITER_SESSION_IDLE_NS is not freed:
 * rather than rebuild a session at every sample (a few ms each) when more
 * processes are sampled at once than the budget holds, the samples of a
 * process without one say so ("[not unwound: ... memory budget]") until
 * another goes idle.  A small C program's (fx_sleepers: the binary, libc,
 * ld.so, the vdso) weighs 440 KiB (measured, floor included), so 256 MiB
 * holds about 580 of them: a service's worker following more than that,
 * all sampled, rebuilds the least recent (a sleeping process in cpu mode
 * is not sampled and has none). */
#define WRITER_SESSIONS_BYTES (256ull << 20)
/* what a session weighs beyond the heap its build and first unwind were
 * seen to take (the measure is of the whole process: another thread's
 * free in the meantime may hide a build's growth) */
#define WRITER_SESSION_MIN_BYTES (64u << 10)
#define WRITER_SESSION_IDLE_NS 1000000000ull

/* A process's libdwfl session (writer-stacks.c): owns s, py. */
struct session {
	pid_t pid;
	struct sym_session *s;
	uint64_t built_ns;
	uint64_t used_ns; /* its last use (monotonic): the least recent is freed first */
	uint64_t bytes; /* the heap its build and first unwind took (its weight) */
	bool weighed;	/* its first unwind was weighed */
	/* renew_due: the maps are not read for a pc outside every module
	 * before renew_at; renew_wait doubles at each read that found no
	 * file there, or renewal that left the pc outside (JIT code), and
	 * starts again small after a renewal that placed it (dlopen) */
	uint64_t renew_at, renew_wait;
	uint64_t jit_gen; /* the JIT names the locations kept were made with */
	bool jit_told;	  /* a JIT file refused was said (once per process) */
	/* its CPython interpreter (writer-python.c): py_state 0 not looked
	 * for yet, 1 found (py), -1 none or unreadable */
	struct sym_py *py;
	int8_t py_state;
};

/* A wait episode in progress: from the first tick that found the thread
 * blocked on an object (a fresh copy: it ran since its last one) until it
 * is seen running, copied again, seen leaving a CPU after that copy (with
 * offcpu), or gone.  Each blocked sample of it is a
 * period of waiting.  What the waiter called and the names on its stack
 * are kept to read the owner again whenever the lock's words, read at
 * the tick, change.
 * An owner's stack is one taken while it held the object: a sample of it
 * after the waiter's sample that found it owning (held_from), and no later
 * than a waiter's sample that read the same words again (held_to; or the
 * sampler's read of them after it stopped the owner, REC_EV_HELD).  One
 * that comes after held_to waits in cand for the waiter's next sample:
 * the same words take it; changed words, or the episode's end, drop it
 * (the owner may have let go before it was taken). */
struct episode {
	pid_t pid, tid; /* tid 0: free */
	struct wait_info w;
	uint64_t args[6];
	char funcs[8][64];
	unsigned nfuncs;
	uint32_t futex[TD_FUTEX_WORDS]; /* the words the owner was read from */
	uint64_t start_ns, wait_ns; /* wait_ns: in the current chunk */
	uint32_t flags;		    /* TCF_WAITF_BEGAN_BEFORE */
	uint32_t stack;		    /* the waiter's, in the current chunk */
	uint64_t held_from, held_to; /* of the current owner (w.owner), as above */
	uint32_t cand;		     /* a stack of it after held_to (this chunk's), 0 none */
	uint64_t cand_ns;	     /* when it was taken */
	unsigned nowners;
	struct {
		pid_t tid;
		uint64_t wait_ns;
		uint32_t stack; /* taken while it held the object; 0: none yet */
	} owners[TCF_WAIT_MAX_OWNERS];
};

/* owns: repo (until writer_main closes it), and through the parts the
 * cache, the sessions, the maps, the names, the saved unwinds, the
 * episodes; borrows: sh, cfg */
struct writer {
	struct rec_shared *sh;
	const struct rec_config *cfg;
	struct repo *repo;

	/* the chunk being written (writer.c) */
	struct chunk_writer *cw; /* the current chunk's, borrowed from repo */
	bool cw_published;	 /* a block with samples of cw is on disk */
	bool startup;		 /* no sample published yet: the sampler's priority */
	bool behind;		 /* at nice 0 to catch up (set_behind) */
	uint64_t published_ns;	 /* the last publish() */
	bool unpublished;	 /* taken from the rings since (to publish soon) */
	uint64_t lost_recorded[3]; /* record_lost(): ring full, not stopped, CPU missed */

	/* ids the current chunk defined (writer.c, and the location ids of
	 * writer-stacks.c): cleared whenever a new chunk starts
	 * (new_chunk_caches), since ids are per chunk */
	struct writer_ids {
		struct td_map threads, locs;
		struct td_map klocs; /* live kernel address -> location id */
		uint32_t end_loc[SYM_END_COUNT];
		uint32_t preempted_loc; /* preempted_location() */
		uint32_t nomaps_loc;	/* nomaps_stack() */
		uint32_t denied_loc;	/* denied_stack() */
		uint32_t budget_loc;	/* budget_stack() */
	} ids;

	/* thread names (writer.c) */
	struct writer_names {
		/* the latest name seen of a tid (by tid % size), for a thread
		 * defined in a new chunk once it is gone: the stacks of a
		 * death */
		struct known_name {
			pid_t tid;
			char name[16];
		} known[1024];
		/* names of the threads this chunk defined, for renames; by
		 * thread id (n: this chunk's, cleared with the ids) */
		struct tname {
			pid_t pid, tid;
			char name[16];
		} *t;
		size_t n, cap, next; /* next: check_renames' round robin */
		uint64_t checked_ns; /* the last check_renames */
	} names;

	/* unwinding and symbolizing (writer-stacks.c) */
	struct writer_stacks {
		struct sym_cache *cache;
		/* the sessions (each its own allocation: a pointer to one
		 * stays valid while the array grows), nsess of them in no
		 * order; sess_idx: pid -> index + 1; their weights summed in
		 * sess_bytes, held to WRITER_SESSIONS_BYTES */
		struct session **sess;
		size_t nsess, capsess;
		struct td_map sess_idx;
		uint64_t sess_bytes;
		/* the last session_for(create) found the budget taken by
		 * sessions all in use (budget_stack) */
		bool sess_full;
		struct sym_debug_stats debug_gone; /* of the sessions freed */
		/* processes whose mappings could not be read for want of
		 * permission (another user's, without CAP_DAC_READ_SEARCH):
		 * pid -> when to try again (a second later, not at every
		 * sample); said once each, forgotten when its PID goes */
		struct td_map denied;
		/* each process's image number (pid -> struct target's
		 * image), as THREAD_NEW and EXEC tell it, for
		 * rec_shared.maps_read */
		struct td_map images;
		/* the last unwind, and its frames as symbolized */
		struct sym_unwound u;
		struct sym_frame frames[SYM_MAX_FRAMES];
		uint32_t loc_ids[TD_KERNEL_FRAMES + SYM_MAX_FRAMES + 1];
		/* the kernel frames to put below the unwound ones (the
		 * sample's, or a repeat's saved ones), innermost first */
		const uint64_t *kips;
		unsigned nkips;
		/* /proc/kallsyms, read at the first kernel frame (at
		 * writer_new where perf may give kernel frames, or wall
		 * mode reads kernel stacks: then lent, indexed by name, to
		 * the sampler through rec_shared.kallsyms, and never
		 * written again); kallsyms_err: why it could not be (then
		 * kernel frames are "[kernel]") */
		struct sym_kallsyms *kallsyms;
		int kallsyms_err;
		/* The last unwind of each thread copied while blocked, which
		 * a REPEAT sample (unchanged since) reuses without unwinding:
		 * tid -> index + 1 in saved (not per chunk: the pcs are
		 * re-resolved in whichever chunk is current).  Freed when the
		 * thread exits. */
		struct td_map last;
		/* Each thread's stack copies sized to its stacks (fit_window,
		 * rec_shared.fit): at tid % REC_FIT_SLOTS, begun anew when
		 * another tid takes the slot (it learns again). */
		struct fit {
			pid_t tid;
			uint32_t deepest; /* most bytes an unwind read (or a cut copy held), ever */
			uint32_t copied; /* most bytes a copy held, this span */
			uint32_t n;	 /* samples in this span */
			bool shrunk;	 /* asked for less since its last cut */
			uint64_t since;	 /* the span's first sample's time */
			uint64_t hold;	 /* a span's least length, ns */
		} fit[REC_FIT_SLOTS];
		struct saved {
			pid_t tid; /* 0: free */
			unsigned n;
			enum sym_end end;
			bool perf; /* from a perf sample (it ran), not a blocked copy */
			uint64_t *pc;
			bool *act;
			unsigned nk; /* its kernel frames (TD_SAMPLE_KCHAIN) */
			uint64_t *kip;
			/* its Python frames read with that copy (py_read: npy 0
			 * for none or a doubt), pyf[k] in place of native frame
			 * pynative[k]: a blocked thread's Python stack is as its
			 * native one, unchanged while it stays blocked */
			unsigned npy;
			struct sym_py_frame *pyf;
			uint16_t *pynative;
		} *saved;
		size_t nsaved, capsaved;
	} stacks;

	/* CPython frames of the sample being stored (writer-python.c):
	 * ids[k] replaces the native frame native[k] of stacks.u, innermost
	 * first; n 0 when there are none (or on any doubt) */
	struct writer_py {
		struct sym_py_frame f[WRITER_PY_FRAMES];
		uint32_t ids[WRITER_PY_FRAMES];
		uint16_t native[WRITER_PY_FRAMES];
		unsigned n;
	} py;

	/* wall mode: each thread's wait episode (writer-waits.c) */
	struct writer_waits {
		struct td_map idx;	  /* tid -> index + 1 in eps */
		struct td_map owner_wait; /* the current owners of episodes' objects */
		struct episode *eps;
		size_t n, cap;
	} waits;

	/* crashes and deaths (writer-deaths.c) */
	struct writer_deaths {
		struct rec_event crash; /* the crash being written, kind REC_EV_CRASH */
		struct rec_event last_crash; /* the latest crash: its thread faulted */
		/* follow (a service's recording): the processes seen, for
		 * their deaths; a slot with pid 0 is free */
		struct wproc {
			pid_t pid;
			uint64_t first_real_ns; /* when first seen (realtime) */
			int cg; /* its cgroup in cgroups, -1: none readable */
			/* its fatal signal's source, from the death stack of
			 * the thread that took it (si_known) */
			bool si_known;
			struct td_siginfo si;
		} *procs; /* nprocs slots (rec_max_procs), made at writer_new */
		unsigned nprocs;
		/* the cgroups of the processes seen, each read once a second
		 * whatever the number of its processes (a host's sleepers
		 * share one); a slot with no users is free */
		struct wcgroup {
			/* its memory.events (v1: memory.oom_control) */
			char memory_events[320];
			unsigned users; /* procs[] in it */
			/* oom_kill there at the last reads (one a second),
			 * newest at [oom_n - 1 mod WRITER_OOM_READS], and when */
			uint64_t oom_kills[WRITER_OOM_READS], oom_ns[WRITER_OOM_READS];
			unsigned oom_n;
		} *cgroups;
		size_t ncgroups, capcgroups;
		uint64_t oom_read_ns; /* the last refresh of every oom_kills */
	} deaths;
};

/* The writer's maps hold ids (never 0): 0 from map_get means absent. */
static inline uint32_t map_get(const struct td_map *m, uint64_t key)
{
	uint64_t v;

	return td_map_get(m, key, &v) ? (uint32_t)v : 0;
}

static inline void map_put(struct td_map *m, uint64_t key, uint32_t val)
{
	if (td_map_set(m, key, val) < 0)
		(void)0; /* no memory: the id is looked up (and defined) again */
}

/* ---- writer.c */
/* The current chunk's writer (a new chunk's caches cleared and its
 * metadata written), or NULL when the repository failed (writer_fail). */
struct chunk_writer *current_chunk(struct writer *w);
/* The chunk's id of thread tid, named name (NULL: read it from /proc now;
 * a name that differs from the one known is recorded as a rename). */
uint32_t thread_id_named(struct writer *w, pid_t pid, pid_t tid, const char *name);
uint32_t thread_id(struct writer *w, pid_t pid, pid_t tid);
/* Tell the control loop (the notices ring; dropped when it is full). */
void writer_notify(struct writer *w, const struct rec_notice *n);
/* A sample into the current chunk (the crash's stacks: writer-deaths.c). */
void do_sample(struct writer *w, const struct td_sample *s);

/* ---- writer-stacks.c */
/* pid's session, built from its mappings now if create and it has none;
 * NULL if it has none (or they cannot be read). */
struct session *session_for(struct writer *w, pid_t pid, bool create);
/* pid exec'ed or exited: its session goes (the location ids with it). */
void session_drop(struct writer *w, pid_t pid);
/* pid's process is gone: its PID may name the next target. */
void maps_forget(struct writer *w, pid_t pid);
/* Free every session (writer_free). */
void sessions_free(struct writer *w);
/* What the debuginfo cache did, for rec_stats. */
void debug_stats_store(struct writer *w);
/* The chunk's stack of sample s, unwound (or, for a repeat, its thread's
 * saved unwind); its frames stay in w->stacks.u. */
uint32_t stack_of(struct writer *w, const struct td_sample *s);
/* The chunk's stack for the frames in w->stacks.u. */
uint32_t stack_of_unwound(struct writer *w, struct sym_session *ss, pid_t pid);
/* tid's saved unwind (a new one if create), or NULL. */
struct saved *saved_of(struct writer *w, pid_t tid, bool create);
void saved_drop(struct writer *w, pid_t tid);

/* ---- writer-python.c */
/* Read s->tid's Python frames into w->py (n 0: none, or doubt) to go in
 * place of the _PyEval_EvalFrameDefault frames of w->stacks.u. */
void py_read(struct writer *w, struct session *se, const struct td_sample *s);
/* The Python frames kept with a thread's saved stack (sv) into w->py,
 * for a repeat of it (n 0: none, or a name that does not read). */
void py_restore(struct writer *w, struct session *se, pid_t pid, const struct saved *sv);
/* Free what session se keeps of its interpreter. */
void py_forget(struct session *se);
/* A wait wi of s->tid on a condition variable of its interpreter's GIL
 * (to take it, or to hand it over) becomes a wait for the GIL, held by
 * the GIL's holder. */
void py_wait(struct session *se, const struct td_sample *s, struct wait_info *wi);

/* ---- writer-waits.c */
/* A blocked sample of s->tid, whose stack in this chunk is stack (its
 * frames in w->stacks.u): its episode goes on or begins. */
void episode_sample(struct writer *w, const struct td_sample *s, uint32_t stack);
/* s->tid's sample came, whose stack in this chunk is stack: the episodes
 * whose object it holds may take it as the owner's stack. */
void owner_seen(struct writer *w, const struct td_sample *s, uint32_t stack);
/* REC_EV_HELD: waiter tid's words read again at time_ns (futex) were the
 * same: the owner held the object until then. */
void episode_held(struct writer *w, pid_t tid, const uint32_t *futex, uint64_t time_ns);
/* tid left a CPU at time_ns (an interval off a CPU, OFFCPU): its episode
 * ends if it began before, as the thread ran since. */
void episode_switched_out(struct writer *w, pid_t tid, uint64_t time_ns);
/* tid ran, exec'ed, exited or died: its episode is written and ends. */
void episode_end(struct writer *w, pid_t tid);
/* Before the chunk ends: what every open episode waited in it. */
void episodes_close_chunk(struct writer *w);

/* ---- writer-deaths.c */
/* REC_EV_CRASH: the crash whose stacks follow. */
void crash_begin(struct writer *w, const struct rec_event *e);
/* The crashing thread's stack (a HELD sample of it): the crash record. */
void crash_stack(struct writer *w, const struct td_sample *s, uint32_t tid, uint32_t stack);
/* REC_EV_CRASH_DONE: every stack of the crash is in the samples ring. */
void crash_done(struct writer *w, const struct rec_event *e);
/* A thread's stack at its process's death (TD_SAMPLE_DEATH). */
void death_stack(struct writer *w, const struct td_sample *s, uint32_t tid, uint32_t stack);
/* follow: a process met for the first time, and every second the OOM
 * kill counts of those met. */
void wproc_add(struct writer *w, pid_t pid);
void wprocs_refresh(struct writer *w, uint64_t now);
/* follow: the process e->pid has exited (its exit record is written). */
void process_died(struct writer *w, const struct rec_event *e);

#endif
