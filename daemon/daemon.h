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
/* Not the recorder's: daemon/service.c calls sym_debug_cache_prepare and
 * has it from here.  To go once the service includes it itself. */
#include "../symbolize/symbolize.h"

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

/* ==== tracerd service (daemon/service.c) ===================================
 * Follows the processes that the rules of a config (tracerd.conf(5)) name
 * and records each rule's into DIRECTORY/NAME/, a rule per worker
 * process.  It says what happens through hooks: the front end puts the
 * messages in the journal and tells the service manager the states. */
struct svc_hooks {
	/* priority: LOG_ERR ... LOG_DEBUG (<syslog.h>) */
	void (*log)(void *arg, int priority, const char *msg);
	/* "READY=1", "RELOADING=1", "STOPPING=1", "WATCHDOG=1", "STATUS=..." */
	void (*notify)(void *arg, const char *state);
};

struct svc_options {
	const char *config_path;
	/* The service manager's watchdog interval (0: none).  WATCHDOG=1 goes
	 * out every quarter of it while every worker's sampler turns; a
	 * sampler stuck for half of it stops them, and the manager restarts
	 * the service. */
	uint64_t watchdog_ns;
	const char *proc_root; /* NULL: /proc */
};

struct svc_config_error;
/* Run until SIGTERM or SIGINT (SIGHUP reloads the config).  Returns 0
 * after an orderly stop: every worker has detached and finished its
 * chunk.  At start: -EINVAL (or the loader's error) with *ret_err filled
 * for a config it refuses, other -errno / -TD_E_* after saying why. */
int svc_run(const struct svc_options *o, const struct svc_hooks *hooks, void *arg,
	struct svc_config_error *ret_err);

/* Stop sampling, detach from every target (they keep running), finish the
 * chunk and free.  NULL-safe. */
void rec_free(struct recorder *r);

/* ==== the service's configuration (daemon/svcconf.c), tracerd.conf(5) ====
 * tracerd service reads which processes to record from a file shaped like
 * a systemd unit file: a [Service] section and [Target NAME] sections.
 * The parser validates everything up front (a reload is all or nothing);
 * the matcher says which rule, if any, a process falls under. */
#include <regex.h>

#define SVC_MAX_RULES 64

struct svc_rule {	   /* one [Target NAME] section */
	char name[64];	   /* NAME: [A-Za-z0-9_.-]{1,63}, not "." or "..": the
			    * repository's directory under Directory= */
	char *comm, *exe;  /* Comm=, Exe=: fnmatch(3) globs; NULL: any */
	char *cmdline;	   /* Cmdline=: POSIX extended regex source (regcomp
			    * REG_EXTENDED|REG_NOSUB), NULL: any */
	regex_t cmdline_re; /* compiled when cmdline != NULL */
	char *unit;	   /* Unit=: glob on a systemd unit name, NULL: any */
	unsigned hz;	   /* Frequency=, default 99, 1..10000 */
	enum rec_mode mode; /* Mode=cpu|wall, default REC_MODE_CPU */
	unsigned line;	   /* line of the section header (for messages) */
};

/* owns: every string, the rules and their compiled regexes (rules is an
 * array of SVC_MAX_RULES that never moves: a regex_t is not moved) */
struct svc_config {
	char *path;		      /* the file (load), or the name given (parse) */
	char *directory;	      /* Directory=, default /var/lib/tracerd; absolute,
				       * no trailing slash (except "/") */
	char *cache_directory;	      /* CacheDirectory=, the debuginfo cache
				       * (sym_options.cache_dir), default
				       * /var/cache/tracerd; as directory; NULL: none */
	uint64_t max_size;	      /* MaxSize=, per rule repository, default 1 GiB,
				       * 1 MiB..1 PiB */
	uint64_t max_age_ns;	      /* MaxAge=, default 24 h, 1 min..365 d */
	uint64_t scan_interval_ns;    /* ScanInterval=, default 2 s, 100 ms..10 s */
	uint64_t emergency_window_ns; /* EmergencyWindow=, how far back an
				       * emergency dump reaches, default 30 min,
				       * 1 s..365 d */
	struct svc_rule *rules;
	unsigned nrules; /* a config with no rule is valid (the service follows nothing) */
};

/* Where and why a configuration was refused.  file: the path (or name);
 * line: 1-based, 0 for the file as a whole; text: the offending line,
 * trimmed, control characters as '?', cut to fit; reason: what is wrong
 * and what to do. */
struct svc_config_error {
	char file[256];
	unsigned line;
	char text[128];
	char reason[200];
};

/* Load and validate path.  The file must be a regular file of at most
 * 1 MiB, owned by root or the effective user and writable by nobody else
 * (-TD_E_NOTREG, -EFBIG, -TD_E_NOTOWNER, -TD_E_UNSAFE).  A missing file
 * is -ENOENT.  On failure *ret_err (if not NULL) says where and why, and
 * the return is -errno, -TD_E_* or -EINVAL (the text is wrong). */
int svc_config_load(const char *path, struct svc_config **ret_config,
	struct svc_config_error *ret_err);
/* The same for text (len bytes, need not end in NUL) read from name. */
int svc_config_parse(const char *name, const char *text, size_t len,
	struct svc_config **ret_config, struct svc_config_error *ret_err);
void svc_config_free(struct svc_config *c); /* NULL-safe */
/* Does rule b record exactly as rule a does (same name, hz, mode)?  Then
 * a reload keeps a's recording. */
bool svc_rule_same_recording(const struct svc_rule *a, const struct svc_rule *b);

/* What a process looks like to the rules (read from /proc). */
enum { SVC_NEED_COMM = 1, SVC_NEED_EXE = 2, SVC_NEED_CMDLINE = 4, SVC_NEED_UNIT = 8 };
struct svc_proc {
	pid_t pid;
	uint64_t start_time; /* field 22 of stat, as struct td_proc_id has it */
	bool kernel;	     /* a kernel thread (PF_KTHREAD in stat's flags): never matches */
	char comm[16];	     /* from stat: always filled */
	char exe[4096];	     /* readlink of exe, "" if unreadable; a " (deleted)"
			      * suffix stripped */
	char cmdline[4096];  /* argv joined by single spaces, truncated */
	char cgroup[1024];   /* the path on the "0::" line of cgroup (without one:
			      * the name=systemd line's, for cgroup v1), "" if
			      * none or longer */
};
/* Which fields the rules of c look at (SVC_NEED_*). */
unsigned svc_config_needs(const struct svc_config *c);
/* Read pid from the proc filesystem mounted at proc_root ("/proc"
 * normally; tests pass a fake tree).  Only the fields in need are read
 * (the others are ""); pid, start_time, kernel and comm always come from
 * stat.  Every file is read through one open /proc/PID directory, so all
 * fields are of one process even if the PID is reused meanwhile.  Returns
 * 0, -ESRCH if it is gone, -TD_E_CORRUPT for a stat it cannot parse, or
 * -errno. */
int svc_proc_read(const char *proc_root, pid_t pid, unsigned need, struct svc_proc *ret_proc);
/* The index of the first rule every given key of which matches p (keys of
 * a rule are ANDed; a rule with no key is rejected by the parser), -1 if
 * none.  Kernel threads never match, and a key never matches an empty
 * field (unreadable exe, empty cmdline, no cgroup path, or a field not
 * read: read with svc_config_needs(c)). */
int svc_config_match(const struct svc_config *c, const struct svc_proc *p);
/* Does the unit glob match the cgroup path?  True if any path component
 * that is not a slice (does not end in ".slice") matches, so
 * "ledger.service" matches "/system.slice/ledger.service" and
 * "/system.slice/ledger.service/worker", and "app.service" matches
 * "/user.slice/user-1000.slice/user@1000.service/app.slice/app.service". */
bool svc_unit_match(const char *glob, const char *cgroup_path);
/* ==== end of the service's configuration ================================== */

#endif
