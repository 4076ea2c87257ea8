/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to service/: what the service loop and its parts share.
 *
 *   service loop  (service.c): struct service, the config, the follower
 *                 table, one socket per worker, the signalfd; it forks
 *                 the workers and starts no thread
 *   worker        (worker.c): a child process per rule, which owns its
 *                 recorder (daemon/daemon.h, follow mode)
 *
 * Between the loop and a worker there is a SOCK_SEQPACKET pair and
 * struct svc_msg, nothing else: no memory is shared after the fork. */
#ifndef TD_SERVICE_INTERNAL_H
#define TD_SERVICE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../chunkfmt/chunkfmt.h"
#include "../common/map.h"
#include "../common/td.h"
#include "../daemon/daemon.h"
#include "service.h"

/* ---- the follower table (follow.c), owned by the service loop */
#define FOLLOW_MAX 65536
#define FOLLOW_RETRY_MIN_NS 10000000000ull  /* 10 s */
#define FOLLOW_RETRY_MAX_NS 600000000000ull /* 10 min */

enum follow_state { FOLLOW_ASKED, FOLLOW_FOLLOWED, FOLLOW_REFUSED };

struct follow_entry {
	struct td_proc_id id;
	int worker;		 /* which rule's worker (service.c's index) */
	enum follow_state state;
	int err;		 /* REFUSED: the last reason */
	uint64_t retry_ns;	 /* REFUSED: when to ask again */
	uint64_t backoff_ns;	 /* REFUSED: the wait before retry_ns */
	bool seen;		 /* by the scan in progress */
	uint8_t missed;		 /* FOLLOWED: scans in a row that did not see it */
	char comm[16];		 /* for messages */
};

/* owns: e, idx.  Kept as the table changes, so that a scan's lookups
 * and each match's limit cost O(1), not O(processes): idx, pid -> index
 * + 1 in e; held[w], worker w's entries ASKED or FOLLOWED (the count
 * MaxProcesses= bounds). */
struct follow {
	struct follow_entry *e;
	unsigned n;
	size_t cap; /* entries e has room for (td_array_grow) */
	struct td_map idx;
	unsigned held[SVC_MAX_RULES];
};

enum follow_outcome {
	FOLLOW_STALE,	      /* about no process the table holds: ignore */
	FOLLOW_NOW_FOLLOWED,
	FOLLOW_GONE,	      /* it exited first: forgotten, nothing to say */
	FOLLOW_REFUSED_NEW,   /* refused, for a reason not said yet: say it */
	FOLLOW_REFUSED_AGAIN, /* refused again for the same reason: quiet */
};

void follow_init(struct follow *f);
void follow_free(struct follow *f);
struct follow_entry *follow_find(struct follow *f, pid_t pid);
/* A scan saw id: its entry (marked seen), or NULL if unknown.  An entry of
 * the same PID and another start time (a reused PID) is removed. */
struct follow_entry *follow_seen(struct follow *f, const struct td_proc_id *id);
/* A new entry, ASKED of worker.  Pointers into the table are valid until
 * the next add or removal.  Returns 0, -ENOMEM, -TD_E_LIMIT. */
int follow_add(struct follow *f, const struct td_proc_id *id, int worker, const char *comm,
	struct follow_entry **ret_entry);
/* REFUSED and its retry time has come. */
bool follow_due(const struct follow_entry *e, uint64_t now_ns);
void follow_asked(struct follow *f, struct follow_entry *e, int worker);
/* A worker's answer (err 0: attached).  *ret_entry: the entry, unless
 * STALE or GONE. */
enum follow_outcome follow_answer(struct follow *f, const struct td_proc_id *id, int err,
	uint64_t now_ns, struct follow_entry **ret_entry);
/* The process exited.  Returns whether the table held it. */
bool follow_remove(struct follow *f, const struct td_proc_id *id);
/* After a scan: forget what it did not see (a FOLLOWED entry only after
 * two scans: its exit is normally told by its tracer, follow_remove);
 * clears the marks for the next.  Returns the count forgotten. */
unsigned follow_sweep(struct follow *f);
void follow_drop_worker(struct follow *f, int worker);
void follow_renumber(struct follow *f, int from, int to);
/* Entries in state of worker (-1: of every worker). */
unsigned follow_count(const struct follow *f, int worker, enum follow_state state);
/* Entries of worker ASKED or FOLLOWED, in constant time. */
unsigned follow_held(const struct follow *f, int worker);

/* ---- the process events connector (procconn.c): exec and fork as they
 * happen, where the kernel lets us hear them (root, initial namespaces) */
/* A non-blocking socket listening to the connector, or -errno. */
int svc_procconn_open(void);
void svc_procconn_close(int fd); /* -1 is fine */
/* Up to cap processes (thread-group ids) that exec'ed or were forked
 * since the last read, without waiting; *ret_overrun: the kernel dropped
 * events (scan /proc).  Returns how many. */
int svc_procconn_read(int fd, pid_t *pids, unsigned cap, bool *ret_overrun);

/* ---- a rule's worker process (worker.c) and the service loop (service.c)
 * The service runs each rule's recording in a process of its own, forked
 * before it starts any thread: a tracer learns of its tracees' stops by
 * SIGCHLD, which goes to the whole process, and two tracers in one
 * process would take each other's.  A worker is the recorder in follow
 * mode; the two talk over a SOCK_SEQPACKET pair, one struct svc_msg per
 * message. */
enum svc_msg_kind {
	SVC_MSG_ATTACH, /* service -> worker: attach pid */
	SVC_MSG_OPENED, /* worker -> service: its recording is open (err 0) or
			 * could not open (err, fail) */
	SVC_MSG_NOTICE, /* worker -> service: a notice of its recorder */
	SVC_MSG_BEAT,	/* worker -> service, every second: its counters */
};

struct svc_msg {
	enum svc_msg_kind kind;
	pid_t pid;		 /* ATTACH */
	int err;		 /* OPENED; BEAT: the I/O error that ended it */
	struct rec_failure fail; /* OPENED with err */
	uint64_t sampler_idle_ns; /* BEAT: since the sampler's last turn */
	uint64_t samples_written, lost; /* BEAT */
	uint64_t cpu_ns;	 /* BEAT: the worker's CPU time so far */
	unsigned threads;	 /* BEAT: threads sampled */
	struct rec_notice notice; /* NOTICE */
};

struct worker_config {
	const char *repo;
	unsigned hz;
	enum rec_mode mode;
	struct repo_opts ropts;
	uint64_t emergency_window_ns;
	const char *cache_dir; /* rec_config.cache_dir */
	unsigned max_procs;    /* rec_config.max_procs: the rule's MaxProcesses= */
	bool no_kernel;	       /* rec_config.no_kernel: the rule's KernelFrames=no */
};

/* In the forked child: record into wc->repo, taking orders from fd, until
 * SIGTERM, the service's end (fd hangs up; PR_SET_PDEATHSIG too) or an
 * error.  Returns the exit status for _exit. */
int worker_main(const struct worker_config *wc, int fd);

#endif
