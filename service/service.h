/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd service/: the system service.
 *
 *   cli/service.c --svc_run--> the service loop (service.c): scan /proc,
 *   match (match.c) against the rules (config.c), keep the follower table
 *   (follow.c) --> one worker process per rule (worker.c), each a
 *   recorder in follow mode (daemon/daemon.h) writing DIRECTORY/NAME/
 *
 * Follows the processes that the rules of a config (tracerd.conf(5)) name
 * and records each rule's into its own repository.  Like daemon/, it
 * never prints to people or exits: messages and states go through
 * struct svc_hooks, and cli/service.c puts them in the journal.  What the
 * loop and its workers share is in service-internal.h. */
#ifndef TD_SERVICE_H
#define TD_SERVICE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../daemon/daemon.h"

/* ---- the configuration (config.c), tracerd.conf(5)
 * A file shaped like a systemd unit file: a [Service] section and
 * [Target NAME] sections.  The parser validates everything up front (a
 * reload is all or nothing). */
#define SVC_MAX_RULES 64
#define SVC_MAX_PROCS 1024 /* MaxProcesses='s default */

struct svc_rule {	   /* one [Target NAME] section */
	char name[64];	   /* NAME: [A-Za-z0-9_.-]{1,63}, not "." or "..": the
			    * repository's directory under Directory= */
	char *comm, *exe;  /* Comm=, Exe=: fnmatch(3) globs; NULL: any */
	char *exe_real;	   /* Exe= with the links of its fixed part resolved
			    * at load (a process's exe is resolved), also
			    * matched; NULL: the same as exe, or unresolvable */
	char *cmdline;	   /* Cmdline=: POSIX extended regex source (regcomp
			    * REG_EXTENDED|REG_NOSUB), NULL: any */
	regex_t cmdline_re; /* compiled when cmdline != NULL */
	char *unit;	   /* Unit=: glob on a systemd unit name, NULL: any */
	unsigned hz;	   /* Frequency=, default 99, 1..10000 */
	enum rec_mode mode; /* Mode=cpu|wall, default REC_MODE_CPU */
	unsigned max_procs; /* MaxProcesses=, followed at once, default
			     * SVC_MAX_PROCS, 1..REC_MAX_PROCS_MAX */
	bool no_kernel;	   /* KernelFrames=no (default yes): as record's
			    * --no-kernel */
	unsigned line;	   /* line of the section header (for messages) */
};

/* [Export]: where each interval's profiles are pushed (export.c).
 * url == NULL: no export. */
enum svc_export_protocol { SVC_EXPORT_PYROSCOPE, SVC_EXPORT_OTLP };
#define SVC_EXPORT_LABELS_MAX 16
#define SVC_EXPORT_URL_MAX 1024
#define SVC_TOKEN_MAX 4096
/* the spool's directory under Directory= (no rule may take its name) */
#define SVC_EXPORT_SPOOL ".export"

struct svc_export {
	char *url;		       /* URL=: http:// or https://, no trailing '/' */
	enum svc_export_protocol protocol; /* Protocol=, default pyroscope */
	uint64_t interval_ns;	       /* Interval=, default 15 s, 1 s..1 h */
	char *labels;		       /* Labels=: "k=v,..." checked (keys
					* [A-Za-z_][A-Za-z0-9_]*, none of the
					* service's own); NULL: none */
	char *token_file;	       /* TokenFile=: absolute; NULL: no token */
	unsigned line;		       /* the [Export] header (for messages) */
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
	unsigned max_emergency_dumps; /* MaxEmergencyDumps=, per rule, default 10,
				       * 1..100000, the oldest deleted first */
	struct svc_export export;     /* owns its strings */
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
/* Does rule b record exactly as rule a does (same name, hz, mode,
 * max_procs: its recorder's tables are that size)?  Then
 * a reload keeps a's recording. */
bool svc_rule_same_recording(const struct svc_rule *a, const struct svc_rule *b);

/* Read the bearer token of TokenFile= path into buf (its first line,
 * without the newline).  The file must be a regular file of the
 * effective user or root that neither its group nor others can read or
 * write (-TD_E_NOTOWNER, -TD_E_UNSAFE, as ssh refuses a private key
 * others can read), hold printable ASCII only and fit in len
 * (-EINVAL, -EFBIG).  On failure why (why_len bytes) says what to do. */
int svc_token_read(const char *path, char *buf, size_t len, char *why, size_t why_len);

/* ---- matching a process (match.c)
 * Which rule, if any, a process falls under, from what /proc says of it:
 * what a process looks like to the rules. */
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
/* each(arg, rule, p) for every process under proc_root that a rule of c
 * matches now (its exe read whatever the rules need, for people).
 * Returns how many, or -errno if proc_root cannot be read. */
int svc_config_each_match(const struct svc_config *c, const char *proc_root,
	void (*each)(void *arg, int rule, const struct svc_proc *p), void *arg);
/* Which fields the rules of c look at (SVC_NEED_*). */
unsigned svc_config_needs(const struct svc_config *c);
/* Does the unit glob match the cgroup path?  True if any path component
 * that is not a slice (does not end in ".slice") matches, so
 * "ledger.service" matches "/system.slice/ledger.service" and
 * "/system.slice/ledger.service/worker", and "app.service" matches
 * "/user.slice/user-1000.slice/user@1000.service/app.slice/app.service". */
bool svc_unit_match(const char *glob, const char *cgroup_path);

/* ---- the service (service.c)
 * It says what happens through hooks: the front end puts the messages in
 * the journal and tells the service manager the states. */
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

/* Run until SIGTERM or SIGINT (SIGHUP reloads the config).  Returns 0
 * after an orderly stop: every worker has detached and finished its
 * chunk.  At start: -EINVAL (or the loader's error) with *ret_err filled
 * for a config it refuses, other -errno / -TD_E_* after saying why. */
int svc_run(const struct svc_options *o, const struct svc_hooks *hooks, void *arg,
	struct svc_config_error *ret_err);

#endif
