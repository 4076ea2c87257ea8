/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd [record] --pid PID... | -- CMD ARGS...: the front end of the
 * recording daemon.  Parses options, starts CMD (held before its exec until
 * the recorder is attached), opens the recorder (daemon/), shows a status
 * line on a terminal, and prints the summary and what went wrong in words. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../daemon/daemon.h"

static void usage(FILE *f)
{
	fputs("usage: tracerd [record] --pid PID [--pid PID]... [-F HZ] [--duration DUR]\n"
	      "                [-r DIR] [--max-chunk-size SIZE] [--max-chunk-age DUR]\n"
	      "                [--max-size SIZE] [--max-age DUR] [--stack-bytes N]\n"
	      "                [--debuginfo-dir DIR] [--cache-dir DIR|none] [--debuginfod]\n"
	      "                [--mode cpu|wall] [--capture auto|perf|ptrace] [--owner-stops]\n"
	      "                [--no-kernel] [-q]\n"
	      "       tracerd [record] [OPTION]... [--no-inherit] -- CMD [ARG]...\n"
	      "\n"
	      "Sample the threads of PID from one sampler thread and write chunks into the\n"
	      "repository DIR until DUR ends, every target exits, or SIGINT/SIGTERM.\n"
	      "With CMD: start it, record it from its first instruction, and the\n"
	      "processes it starts (fork, vfork, posix_spawn; theirs too, 64 at once at\n"
	      "most) and execs into, each a process of its own, until all have exited;\n"
	      "exit with CMD's status.\n"
	      "\n"
	      "  -p, --pid PID            process to record (up to 16 different ones)\n"
	      "  -F, --frequency HZ       samples per second per thread, 1 to 10000 (default\n"
	      "                           99): of CPU time in cpu mode, of wall time in wall\n"
	      "                           mode\n"
	      "  -m, --mode MODE          cpu (default): where threads use CPU; wall: every\n"
	      "                           thread at every tick, running, blocked or stopped\n"
	      "      --capture HOW        running threads: perf (the kernel samples, no stop),\n"
	      "                           ptrace (a stop per sample), or auto (perf if\n"
	      "                           permitted)\n"
	      "      --owner-stops        wall mode with perf: stop a lock's running owner\n"
	      "                           once for its stack where it holds the lock (it\n"
	      "                           may see EINTR; without it, no thread is stopped:\n"
	      "                           the kernel is asked for an early sample of it)\n"
	      "      --no-kernel          no kernel frames (by default, with perf capture and\n"
	      "                           the permission for kernel-mode samples, a sample\n"
	      "                           in a system call shows the kernel's call chain;\n"
	      "                           in wall mode as root, so does a blocked thread's,\n"
	      "                           from /proc/TID/stack)\n"
	      "  -d, --duration DUR       stop after DUR (e.g. 30s, 10m)\n"
	      "  -r, --repo DIR           repository (default ./tracerd-repo): a directory\n"
	      "                           of your own, no symbolic link on its path\n"
	      "      --max-chunk-size SIZE  rotate chunks at SIZE (default 16M)\n"
	      "      --max-chunk-age DUR  rotate chunks at DUR (default 10m)\n"
	      "      --max-size SIZE      keep at most SIZE of chunks (default 1G)\n"
	      "      --max-age DUR        delete chunks older than DUR (default 24h)\n"
	      "      --stack-bytes N      largest stack copy per sample (default 64K; perf\n"
	      "                           capture copies at most 65528, the kernel's limit)\n"
	      "      --debuginfo-dir DIR  also look for DIR/.build-id/xx/yyyy.debug\n"
	      "      --cache-dir DIR      keep debuginfo decompressed in DIR, for the next\n"
	      "                           runs (default $TRACERD_CACHE_DIR, else\n"
	      "                           ~/.cache/tracerd, /var/cache/tracerd for root);\n"
	      "                           none: no cache\n"
	      "      --debuginfod         fetch missing debuginfo from the servers in\n"
	      "                           DEBUGINFOD_URLS (without it, none is asked)\n"
	      "      --no-inherit         with CMD: record CMD alone, not the processes it\n"
	      "                           starts (the summary says how many there were)\n"
	      "  -q, --quiet              no status line\n"
	      "\n"
	      "Signals: INT/TERM stop (twice: hurry), HUP rotate, USR1 snapshot into\n"
	      "DIR/snapshots/.\n"
	      "Exit status: 0 ok, 1 usage, 2 attach failed, 3 I/O error; with CMD, its\n"
	      "status (128+N if signal N ended it; 127 if it could not be run), else 3 on\n"
	      "an I/O error.\n",
		f);
}

/* -F: a plain number of samples per second, 1 to 10000 (not a size: no
 * suffixes, no sign). */
static bool parse_hz(const char *s, unsigned *ret)
{
	unsigned long v = 0;
	size_t n = strspn(s, "0123456789");

	if (n > 0 && n <= 5 && !s[n])
		v = strtoul(s, NULL, 10);
	if (v < 1 || v > 10000) {
		td_msg("-F: '%s' is not a frequency from 1 to 10000 Hz", s);
		return false;
	}
	*ret = (unsigned)v;
	return true;
}

/* What the front end itself acts on. */
struct front_opts {
	bool quiet;
	bool debuginfod;
	const char *cache_dir; /* --cache-dir, NULL if not given */
	bool no_inherit;       /* --no-inherit */
	char **cmd;	       /* -- CMD ARGS..., NULL-terminated; NULL if none */
};

enum {
	OPT_MAX_CHUNK_SIZE = 1,
	OPT_MAX_CHUNK_AGE,
	OPT_MAX_SIZE,
	OPT_MAX_AGE,
	OPT_STACK_BYTES,
	OPT_DEBUGINFO_DIR,
	OPT_CAPTURE,
	OPT_CACHE_DIR,
	OPT_DEBUGINFOD,
	OPT_OWNER_STOPS,
	OPT_NO_INHERIT,
	OPT_NO_KERNEL,
};

static bool add_pid(struct rec_config *c, const char *arg)
{
	pid_t pid;

	if (!td_parse_pid("--pid", arg, &pid))
		return false;
	for (unsigned i = 0; i < c->npids; i++)
		if (c->pids[i] == pid) {
			td_msg("--pid %d given twice", (int)pid);
			return false;
		}
	if (c->npids == REC_MAX_PIDS) {
		td_msg("--pid: at most %d processes", REC_MAX_PIDS);
		return false;
	}
	c->pids[c->npids++] = pid;
	return true;
}

static bool parse_mode(const char *arg, enum rec_mode *ret)
{
	if (!strcmp(arg, "cpu")) {
		*ret = REC_MODE_CPU;
	} else if (!strcmp(arg, "wall")) {
		*ret = REC_MODE_WALL;
	} else {
		td_msg("--mode: '%s' is not a mode; give cpu or wall", arg);
		return false;
	}
	return true;
}

static bool parse_capture(const char *arg, enum rec_capture *ret)
{
	if (!strcmp(arg, "auto")) {
		*ret = REC_CAPTURE_AUTO;
	} else if (!strcmp(arg, "perf")) {
		*ret = REC_CAPTURE_PERF;
	} else if (!strcmp(arg, "ptrace")) {
		*ret = REC_CAPTURE_PTRACE;
	} else {
		td_msg("--capture: '%s' is not a way to capture; give auto, perf or ptrace", arg);
		return false;
	}
	return true;
}

/* One option of what is sampled and how: false (and a message) if its
 * argument is wrong. */
static bool sampling_option(int ch, const char *arg, struct rec_config *c)
{
	uint64_t v;

	switch (ch) {
	case 'p':
		return add_pid(c, arg);
	case 'F':
		return parse_hz(arg, &c->hz);
	case 'd':
		return td_parse_duration("--duration", arg, &c->duration_ns);
	case 'm':
		return parse_mode(arg, &c->mode);
	case OPT_CAPTURE:
		return parse_capture(arg, &c->capture);
	case OPT_OWNER_STOPS:
		c->owner_stops = true;
		return true;
	case OPT_NO_KERNEL:
		c->no_kernel = true;
		return true;
	case OPT_STACK_BYTES:
		if (!td_parse_size("--stack-bytes", arg, 4096, 8u << 20, &v))
			return false;
		c->max_window = (uint32_t)v;
		return true;
	}
	return false;
}

/* One option of the repository (where, how much, how long): false (and a
 * message) if its argument is wrong. */
static bool repo_option(int ch, const char *arg, struct rec_config *c)
{
	uint64_t v;

	switch (ch) {
	case 'r':
		c->repo = arg;
		return true;
	case OPT_MAX_CHUNK_SIZE:
		if (!td_parse_size("--max-chunk-size", arg, 64 * 1024, 1ull << 40, &v))
			return false;
		c->ropts.max_chunk_size = v;
		return true;
	case OPT_MAX_CHUNK_AGE:
		return td_parse_duration("--max-chunk-age", arg, &c->ropts.max_chunk_age_ns);
	case OPT_MAX_SIZE:
		if (!td_parse_size("--max-size", arg, 128 * 1024, 1ull << 50, &v))
			return false;
		c->ropts.max_size = v;
		return true;
	case OPT_MAX_AGE:
		return td_parse_duration("--max-age", arg, &c->ropts.max_age_ns);
	}
	return false;
}

/* One option of where names come from (debuginfo), or of the front end
 * itself: false (and a message) if its argument is wrong. */
static bool front_option(int ch, const char *arg, struct rec_config *c, struct front_opts *f)
{
	switch (ch) {
	case OPT_DEBUGINFO_DIR:
		if (arg[0] != '/') {
			td_msg("--debuginfo-dir: '%s' is not an absolute path; give one", arg);
			return false;
		}
		c->debuginfo_dir = arg;
		return true;
	case OPT_CACHE_DIR:
		f->cache_dir = arg;
		return true;
	case OPT_DEBUGINFOD:
		f->debuginfod = true;
		return true;
	case 'q':
		f->quiet = true;
		return true;
	case OPT_NO_INHERIT:
		f->no_inherit = true;
		return true;
	}
	return false;
}

/* What the options say together, once all are read: the targets (--pid
 * or a command, one of the two) and the repository's two sizes. */
static bool check_config(int argc, char **argv, struct rec_config *c, struct front_opts *f)
{
	uint64_t chunk = c->ropts.max_chunk_size ? c->ropts.max_chunk_size : 16u << 20;
	uint64_t total = c->ropts.max_size ? c->ropts.max_size : 1ull << 30;

	if (optind < argc) {
		if (c->npids) {
			td_msg("record: give --pid or a command, not both (a command is recorded "
			       "from its start; see tracerd record --help)");
			return false;
		}
		f->cmd = argv + optind;
		c->npids = 1; /* its pid comes once it is started */
		/* as perf record -- CMD: its children too, unless told not */
		c->children = f->no_inherit ? REC_CHILDREN_COUNT : REC_CHILDREN_FOLLOW;
	}
	if (f->no_inherit && !f->cmd) {
		td_msg("--no-inherit: only with a command (with --pid, the processes' children "
		       "are never recorded)");
		return false;
	}
	if (!c->npids) {
		td_msg("record: --pid PID or a command (-- CMD ARGS...) is required; see tracerd "
		       "record --help");
		return false;
	}
	if (total < 2 * chunk) {
		td_msg("--max-size must be at least twice --max-chunk-size (%llu bytes)",
			(unsigned long long)(2 * chunk));
		return false;
	}
	return true;
}

/* The command line into *c and *f: 0 to go on, -1 once --help is shown,
 * else the exit status of a usage error. */
static int parse(int argc, char **argv, struct rec_config *c, struct front_opts *f)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "repo", required_argument, NULL, 'r' },
		{ "max-chunk-size", required_argument, NULL, OPT_MAX_CHUNK_SIZE },
		{ "max-chunk-age", required_argument, NULL, OPT_MAX_CHUNK_AGE },
		{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
		{ "max-age", required_argument, NULL, OPT_MAX_AGE },
		{ "stack-bytes", required_argument, NULL, OPT_STACK_BYTES },
		{ "debuginfo-dir", required_argument, NULL, OPT_DEBUGINFO_DIR },
		{ "quiet", no_argument, NULL, 'q' },
		{ "mode", required_argument, NULL, 'm' },
		{ "capture", required_argument, NULL, OPT_CAPTURE },
		{ "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
		{ "debuginfod", no_argument, NULL, OPT_DEBUGINFOD },
		{ "owner-stops", no_argument, NULL, OPT_OWNER_STOPS },
		{ "no-inherit", no_argument, NULL, OPT_NO_INHERIT },
		{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;

	*c = (struct rec_config){ .hz = 99, .repo = "tracerd-repo", .max_window = 64 * 1024 };
	*f = (struct front_opts){ 0 };
	optind = 1;
	/* "+": options end at the command's name, so that its own options
	 * stay its own even without "--" */
	while ((ch = getopt_long(argc, argv, "+:p:F:d:r:m:qh", opts, NULL)) != -1) {
		bool ok;

		switch (ch) {
		case 'p':
		case 'F':
		case 'd':
		case 'm':
		case OPT_CAPTURE:
		case OPT_OWNER_STOPS:
		case OPT_NO_KERNEL:
		case OPT_STACK_BYTES:
			ok = sampling_option(ch, optarg, c);
			break;
		case 'r':
		case OPT_MAX_CHUNK_SIZE:
		case OPT_MAX_CHUNK_AGE:
		case OPT_MAX_SIZE:
		case OPT_MAX_AGE:
			ok = repo_option(ch, optarg, c);
			break;
		case OPT_DEBUGINFO_DIR:
		case OPT_CACHE_DIR:
		case OPT_DEBUGINFOD:
		case OPT_NO_INHERIT:
		case 'q':
			ok = front_option(ch, optarg, c, f);
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			return td_bad_option("record", ch, argv);
		}
		if (!ok)
			return TD_EXIT_USAGE;
	}
	if (!check_config(argc, argv, c, f))
		return TD_EXIT_USAGE;
	/* as perf record --call-graph dwarf: each copy is made in the target's own
	 * interrupt (perf capture), and grows where the stacks need more */
	c->first_window = c->max_window < 8192 ? c->max_window : 8192;
	return 0;
}

struct status {
	uint64_t last_samples, last_ns;
	pid_t child;	  /* the command's process, 0 if none */
	bool child_ended; /* its exit seen by the recorder: child_status */
	int child_status;
};

/* Is file (no slash) an executable in $PATH, as execvp would find it? */
static int find_in_path(const char *file)
{
	const char *path = getenv("PATH");
	int err = ENOENT;

	if (!path || !*path)
		path = "/bin:/usr/bin";
	for (const char *p = path;; p++) {
		const char *e = strchrnul(p, ':');
		char full[PATH_MAX];
		struct stat st;

		if (snprintf(full, sizeof(full), "%.*s%s%s", (int)(e - p), p, e > p ? "/" : "",
			    file) < (int)sizeof(full) &&
			stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(full, X_OK) == 0)
				return 0;
			err = EACCES;
		}
		if (!*e)
			return -err;
		p = e;
	}
}

/* Start cmd held before its exec: it waits for a byte on *ret_go, and
 * reports a failed exec's errno on *ret_err (closed by a good exec).
 * Returns its pid, or -errno with nothing started. */
static pid_t start_held(char **cmd, int *ret_go, int *ret_err)
{
	int go[2], err[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(err, O_CLOEXEC) < 0) {
		int e = -errno;

		close(go[0]);
		close(go[1]);
		return e;
	}
	pid = fork();
	if (pid == 0) {
		char b;
		ssize_t w;
		int e;

		close(go[1]);
		close(err[0]);
		/* no byte: tracerd could not record it, and it does not run */
		if (read(go[0], &b, 1) != 1)
			_exit(127);
		execvp(cmd[0], cmd);
		e = errno;
		/* the front end says why (if it hears); the status is the
		 * shell's 127 either way */
		w = write(err[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	if (pid < 0) {
		int e = -errno;

		close(go[1]);
		close(err[0]);
		return e;
	}
	*ret_go = go[1];
	*ret_err = err[0];
	return pid;
}

/* The exit code tracerd gives for the command's wait status. */
static int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return TD_EXIT_IO;
}

static void status_line(const struct recorder *r, void *arg)
{
	struct status *st = arg;
	struct rec_stats s;
	uint64_t now = td_now_ns();

	rec_stats(r, &s);
	fprintf(stderr,
		"\rtracerd: %.0f samples/s, %llu threads, %llu lost, stop p99 %.0f us      ",
		(double)(s.samples_taken - st->last_samples) * 1e9 / (double)(now - st->last_ns),
		(unsigned long long)s.threads_live,
		(unsigned long long)(s.lost_ring + s.lost_not_stopped), s.stop_p99_us);
	st->last_samples = s.samples_taken;
	st->last_ns = now;
}

/* The command's children: how many were followed, and, once, how many
 * were not and why. */
static void children_line(const struct rec_stats *s, const struct rec_config *cfg, FILE *f)
{
	unsigned long long left = s->children_left, full = s->children_full;

	if (cfg->children == REC_CHILDREN_NONE || (!s->children_followed && !left))
		return;
	fprintf(f, "  children     %llu process%s followed", (unsigned long long)s->children_followed,
		s->children_followed == 1 ? "" : "es");
	if (left > full)
		fprintf(f, "; %llu not recorded (--no-inherit)", left - full);
	if (full)
		fprintf(f, "; %llu not recorded: %d processes were recorded at once already", full,
			REC_MAX_PROCS);
	fputc('\n', f);
}

/* A ptrace capture's samples against the CPU time schedstat counted
 * (100 when nothing was missed). */
static double coverage(const struct rec_stats *s)
{
	if (s->capture != REC_CAPTURE_PTRACE || !s->cpu_missed)
		return 100.0;
	return 100.0 * (double)s->samples_taken / (double)(s->samples_taken + s->cpu_missed);
}

/* Kernel frames: on, or the one line that says why not. */
static void kernel_line(const struct rec_stats *s, FILE *f)
{
	static const char *const why[] = {
		[REC_KERNEL_ON] = "the kernel's call chain below each system call, names from "
				  "/proc/kallsyms",
		[REC_KERNEL_OFF_ASKED] = "off (--no-kernel)",
		[REC_KERNEL_OFF_PTRACE] = "off: ptrace capture cannot read a running thread's "
					  "kernel stack",
		[REC_KERNEL_OFF_DENIED] = "off: no permission for kernel-mode samples (root, "
					  "CAP_PERFMON or kernel.perf_event_paranoid <= 1)",
	};

	if ((unsigned)s->kernel >= TD_ARRAY_SIZE(why))
		return;
	if (s->kstack && s->kernel != REC_KERNEL_ON)
		fprintf(f, "  kernel       a blocked thread's kernel stack from /proc/TID/stack, "
			   "once per blocked period (%llu read), names from /proc/kallsyms; for "
			   "running threads %s",
			(unsigned long long)s->kstacks_read, why[s->kernel]);
	else
		fprintf(f, "  kernel       %s", why[s->kernel]);
	if (s->kstack && s->kernel == REC_KERNEL_ON)
		fprintf(f, "; a blocked thread's from /proc/TID/stack, once per blocked period "
			   "(%llu read)",
			(unsigned long long)s->kstacks_read);
	else if (s->kstack_err && s->kernel != REC_KERNEL_OFF_ASKED)
		fprintf(f, "; a blocked thread's /proc/TID/stack: %s",
			s->kstack_err == -EACCES ? "not readable without CAP_SYS_ADMIN (root)" :
			s->kstack_err == -EPERM	 ? "not named: /proc/kallsyms hides its addresses" :
						   td_strerror(s->kstack_err));
	fputc('\n', f);
}

/* cpu mode with ptrace capture: what the triggers did, and how the
 * sampler was scheduled (docs/notes/ptrace.md): a line to read when the
 * samples do not sit where perf's do. */
static void trigger_line(const struct rec_stats *s, FILE *f)
{
	const uint64_t *t = s->trig;

	fprintf(f,
		"  triggers     %llu fires (%.0f us from one to its interrupts), %llu threads found "
		"running, %llu blocked again; stops %llu in user code, %llu at a call's "
		"return, %llu at a wait's return, %llu in a wait; sampler %s",
		(unsigned long long)t[REC_TRIG_FIRES],
		t[REC_TRIG_LATE_N] ? (double)t[REC_TRIG_LATE_NS] / 1e3 / (double)t[REC_TRIG_LATE_N] :
				     0.0,
		(unsigned long long)t[REC_TRIG_FOUND], (unsigned long long)t[REC_TRIG_ENDED],
		(unsigned long long)t[REC_TRIG_USER], (unsigned long long)t[REC_TRIG_CALL],
		(unsigned long long)t[REC_TRIG_RETURN], (unsigned long long)t[REC_TRIG_WAIT],
		s->sampler_policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_OTHER");
	if (s->sampler_policy_err)
		fprintf(f, " (SCHED_FIFO: %s)", td_strerror(s->sampler_policy_err));
	fputc('\n', f);
}

static void summary(const struct rec_stats *s, const struct rec_config *cfg, uint64_t elapsed_ns,
	FILE *f)
{
	const char *repo = cfg->repo;
	bool wall = cfg->mode == REC_MODE_WALL;
	struct rusage ru;
	double cpu;

	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
		(double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
	fprintf(f, "tracerd: recorded %.1f s into %s\n", elapsed_ns / 1e9, repo);
	if (wall && s->capture == REC_CAPTURE_PERF) {
		fprintf(f, "  mode         wall: running threads sampled by the kernel per period "
			   "of CPU time, %s (perf_event); ",
			s->offcpu ? "each interval off a CPU at its switch out, with its length" :
				    "blocked and runnable ones at every tick");
		if (s->owner_stops)
			fprintf(f, "no thread stopped but a lock's owner, once each time a waiter "
				   "found it holding the lock, for its stack (%llu stops)\n",
				(unsigned long long)s->owner_stops);
		else if (s->owner_early)
			fprintf(f, "no thread stopped; a lock's running owner sampled early by "
				   "the kernel, once each time a waiter found it holding the lock "
				   "(%llu asked)\n",
				(unsigned long long)s->owner_early);
		else
			fprintf(f, "no thread stopped\n");
	}
	else if (wall)
		fprintf(f, "  mode         wall: every thread at every tick; blocked threads "
			   "copied without a stop, running ones stopped%s%s\n",
			s->perf_err ? "; perf_event_open: " : "",
			s->perf_err ? td_strerror(s->perf_err) : "");
	else if (s->capture == REC_CAPTURE_PERF)
		fprintf(f, "  mode         cpu: the kernel sampled each thread per period of CPU "
			   "time (perf_event); no thread stopped\n");
	else
		fprintf(f, "  mode         cpu: a ptrace stop per sample%s%s%s%s%s\n",
			s->cpu_timers ? ", when a process's CPU-time timer fired" : "",
			s->cpu_timer_err ? "; timers: " : "",
			s->cpu_timer_err ? td_strerror(s->cpu_timer_err) : "",
			s->perf_err ? "; perf_event_open: " : "",
			s->perf_err ? td_strerror(s->perf_err) : "");
	kernel_line(s, f);
	if (s->capture == REC_CAPTURE_PTRACE && !wall)
		trigger_line(s, f);
	fprintf(f, "  samples      %llu taken, %llu written (%.1f/s) in %llu ticks\n",
		(unsigned long long)s->samples_taken, (unsigned long long)s->samples_written,
		elapsed_ns ? s->samples_taken * 1e9 / (double)elapsed_ns : 0.0,
		(unsigned long long)s->ticks);
	if (s->unwritten_runnable || s->unwritten_hurried || s->unwritten_failed)
		fprintf(f,
			"  not written  %llu waiting for a CPU before any stack of the thread was "
			"seen, %llu dropped at a second stop request, %llu refused by the chunk "
			"writer\n",
			(unsigned long long)s->unwritten_runnable,
			(unsigned long long)s->unwritten_hurried,
			(unsigned long long)s->unwritten_failed);
	fprintf(f,
		"  lost         %llu ring full, %llu did not stop in time, %llu events; "
		"%llu stacks partial\n",
		(unsigned long long)s->lost_ring, (unsigned long long)s->lost_not_stopped,
		(unsigned long long)s->lost_events, (unsigned long long)s->unwind_partial);
	if (s->chunks_changed)
		fprintf(f,
			"               %llu written to %llu chunk%s another process changed "
			"(left unfinished)\n",
			(unsigned long long)s->lost_changed, (unsigned long long)s->chunks_changed,
			td_plural(s->chunks_changed));
	if (s->lost_torn || s->lost_kernel || s->skipped)
		fprintf(f,
			"               %llu copies torn (the thread ran), %llu lost in the "
			"kernel's ring, %llu left out after missed stops\n",
			(unsigned long long)s->lost_torn, (unsigned long long)s->lost_kernel,
			(unsigned long long)s->skipped);
	if (s->maps_denied)
		fprintf(f,
			"  not unwound  %llu process%s whose mappings may not be read (%s): "
			"their samples have no stack\n",
			(unsigned long long)s->maps_denied, s->maps_denied == 1 ? "" : "es",
			td_strerror(s->maps_denied_err));
	if (s->cpu_missed)
		fprintf(f,
			"  coverage     %.1f%% of the CPU time used was sampled (%llu period%s "
			"missed)\n",
			coverage(s), (unsigned long long)s->cpu_missed, td_plural(s->cpu_missed));
	if (s->cut_by_kernel)
		fprintf(f,
			"  stacks       %llu cut at the kernel's limit of 65528 bytes of stack per "
			"sample (perf capture): their outer frames are missing; --capture "
			"ptrace copies up to --stack-bytes\n",
			(unsigned long long)s->cut_by_kernel);
	fprintf(f, "  threads      %llu seen\n", (unsigned long long)s->threads_seen);
	children_line(s, cfg, f);
	fprintf(f, "  stopped      p50 %.1f us, p99 %.1f us, max %.1f us per sample\n",
		s->stop_p50_us, s->stop_p99_us, s->stop_max_us);
	fprintf(f,
		"  daemon CPU   %.1f us per sample (%.2f s in all); after start-up: %.1f "
		"us per sample (start-up %.0f ms)\n",
		s->samples_taken ? cpu / (double)s->samples_taken : 0.0, cpu / 1e6,
		s->samples_taken > s->startup_samples ?
			(cpu - (double)s->startup_cpu_us) /
				(double)(s->samples_taken - s->startup_samples) :
			0.0,
		(double)s->startup_cpu_us / 1e3);
	if (cfg->cache_dir && (s->debug_reused || s->debug_created || s->debug_failed ||
				      s->tables_reused || s->tables_made)) {
		fprintf(f, "  debuginfo    cache %s: %u reused, %u made; symbol tables %u reused, %u made",
			cfg->cache_dir, s->debug_reused, s->debug_created, s->tables_reused,
			s->tables_made);
		if (s->debug_failed)
			fprintf(f, "; %u read without it: %s", s->debug_failed,
				td_strerror(s->debug_err));
		fputc('\n', f);
	}
	if (s->debug_over_bound)
		fprintf(f, "  debuginfo    %u modules read without their DWARF (no inline frames, no "
			   "file:line): their compressed sections would inflate to more than 64 "
			   "times their size or 256 MiB\n",
			s->debug_over_bound);
	fprintf(f, "  written      %llu bytes, %.2f bytes per sample\n",
		(unsigned long long)s->bytes_written,
		s->samples_written ? (double)s->bytes_written / (double)s->samples_written : 0.0);
	if (coverage(s) < 80.0)
		td_msg("warning: the samples carry %.1f%% of the CPU time the targets used: the "
		       "ptrace capture stops a thread only while it runs outside a wait, and "
		       "these ran in bursts it did not catch or lived less than a period; the "
		       "report's shares are of what was sampled (perf capture, where "
		       "perf_event_open is permitted, samples every period)",
			coverage(s));
}

/* Why a JIT's file was refused, in words about that file. */
static const char *jit_refusal(int err)
{
	switch (-err) {
	case TD_E_NOTOWNER:
		return "another user than the process's owns it";
	case TD_E_UNSAFE:
		return "others may write it";
	case TD_E_SYMLINK:
		return "a symbolic link is on its path";
	case TD_E_NOTREG:
		return "not a regular file";
	}
	return td_strerror(err);
}

static void notice(const struct rec_notice *n, void *arg)
{
	struct status *st = arg;

	if (n->kind == REC_NOTICE_EXIT) {
		if (st->child && n->id.pid == st->child) {
			st->child_ended = true;
			st->child_status = n->status;
		}
		return;
	}
	if (n->kind == REC_NOTICE_UNREADABLE) {
		td_msg("warning: pid %d: its mappings may not be read (%s): its samples have no "
		       "stack; run tracerd with CAP_DAC_READ_SEARCH (root has it unless a sandbox "
		       "drops it) or as the user the process runs as",
			(int)n->id.pid, td_strerror(n->err));
		return;
	}
	if (n->kind == REC_NOTICE_CHANGED) {
		char found[96];

		if (n->replaced)
			snprintf(found, sizeof(found), "%s",
				n->size < 0 ? "removed or renamed" : "replaced by another file");
		else
			snprintf(found, sizeof(found), "%lld bytes long where tracerd wrote %llu",
				(long long)n->size, (unsigned long long)n->bytes);
		td_msg("the chunk being written was changed by another process (%s): set aside "
		       "unfinished as %s; %llu sample%s in it lost; recording goes on in a new "
		       "chunk",
			found, n->path, (unsigned long long)n->samples, td_plural(n->samples));
		return;
	}
	if (n->kind == REC_NOTICE_JIT) {
		char path[1024];

		td_text_escape(path, sizeof(path), n->path);
		td_msg("warning: pid %d: %s was not read (%s): its JIT code is left unnamed; a "
		       "perf map or jitdump is read only when the process's user owns it and no "
		       "one else may write it",
			(int)n->id.pid, path, jit_refusal(n->err));
		return;
	}
	if (n->kind == REC_NOTICE_PYTHON) {
		td_msg("note: pid %d: Python %u.%u: its Python frames are not read (tracerd reads "
		       "3.11's to 3.13's); its stacks show the interpreter's native frames",
			(int)n->id.pid, n->python_version >> 24, n->python_version >> 16 & 0xff);
		return;
	}
	if (n->kind != REC_NOTICE_SNAPSHOT)
		return;
	if (n->err)
		td_msg("snapshot %s failed: %s", n->path, td_strerror(n->err));
	else
		td_msg("snapshot written: %s (%u chunk%s, %llu byte%s)", n->path, n->chunks,
			td_plural(n->chunks), (unsigned long long)n->bytes, td_plural(n->bytes));
}

/* rec_open failed with e: say why and what to do; the exit code. */
static int explain_open(int e, const struct rec_config *cfg, const struct rec_failure *fail)
{
	if (e == -TD_E_LOCKED) {
		td_msg("repository %s is in use by tracerd PID %d; stop it or give another -r DIR",
			cfg->repo, (int)fail->pid);
		return TD_EXIT_USAGE;
	} else if (e == -TD_E_SYMLINK && fail->step == REC_FAIL_REPO) {
		td_msg("refusing repository %s: a symbolic link is on its path (a write through "
		       "it could land anywhere); give the real directory, as realpath %s prints it",
			cfg->repo, cfg->repo);
		return TD_EXIT_USAGE;
	} else if (e == -TD_E_PSEUDOFS && fail->step == REC_FAIL_REPO) {
		td_msg("refusing repository %s: it is in a kernel pseudo-filesystem (/proc, "
		       "/sys), where no file of tracerd's can live; give a directory on a disk, "
		       "such as -r /var/tmp/tracerd-repo",
			cfg->repo);
		return TD_EXIT_USAGE;
	} else if (e == -TD_E_LOCKLINK && fail->step == REC_FAIL_REPO) {
		td_msg("refusing repository %s: its lock file %s/LOCK is a symbolic link (a "
		       "write through it could land anywhere); remove the link, or give another "
		       "-r DIR",
			cfg->repo, cfg->repo);
		return TD_EXIT_USAGE;
	} else if (e == -TD_E_NOTOWNER && fail->step == REC_FAIL_REPO) {
		td_msg("refusing repository %s: it belongs to another user; give a directory of "
		       "your own (tracerd runs as uid %d)",
			cfg->repo, (int)geteuid());
		return TD_EXIT_USAGE;
	} else if (e == -TD_E_UNSAFE && fail->step == REC_FAIL_REPO) {
		td_msg("refusing repository %s: its group or others can write it; chmod go-w %s, "
		       "or give another -r DIR",
			cfg->repo, cfg->repo);
		return TD_EXIT_USAGE;
	} else if (e < 0 && fail->step == REC_FAIL_ATTACH) {
		return td_explain_attach(fail->pid, e);
	} else if (e < 0 && fail->step == REC_FAIL_TRACER) {
		td_msg("cannot trace: %s", td_strerror(e));
		return TD_EXIT_ATTACH;
	} else if (e < 0 && fail->step == REC_FAIL_REPO) {
		td_msg("cannot open repository %s: %s", cfg->repo, td_strerror(e));
		return TD_EXIT_IO;
	}
	td_msg("cannot set up: %s", td_strerror(e));
	return TD_EXIT_IO;
}

/* Recording stopped on the repository's error: what happened, what to do. */
static void stopped_by_io(const struct rec_stats *s, const struct rec_config *cfg)
{
	if (s->io_err == -ENOENT) {
		/* the directory is gone: no chunk can be made in it */
		td_msg("recording stopped: repository %s was removed while recording; what it "
		       "held went with it; give a repository nothing else removes",
			cfg->repo);
	} else if (s->io_err == -ENOSPC || s->io_err == -EDQUOT) {
		td_msg("recording stopped: cannot write to %s: %s; free space, then tracerd "
		       "snapshot %s keeps what was written",
			cfg->repo, td_strerror(s->io_err), cfg->repo);
	} else if (s->io_err) {
		td_msg("recording stopped: cannot write to %s: %s; tracerd snapshot %s keeps what "
		       "was written",
			cfg->repo, td_strerror(s->io_err), cfg->repo);
	}
}

/* Chunks changed under the writer: one last line, and true (exit 3). */
static bool lost_changed(const struct rec_stats *s, const struct rec_config *cfg)
{
	if (s->chunks_changed) {
		/* after the summary: the last line says what went wrong */
		td_msg("%llu sample%s lost: %llu chunk%s of %s changed by another process while "
		       "written (see above); keep other programs off the repository",
			(unsigned long long)s->lost_changed, td_plural(s->lost_changed),
			(unsigned long long)s->chunks_changed, td_plural(s->chunks_changed),
			cfg->repo);
		return true;
	}
	return false;
}

int cmd_record(int argc, char **argv)
{
	struct rec_config cfg;
	struct recorder *r = NULL;
	struct rec_stats s;
	struct status st = { 0 };
	struct front_opts fo;
	char cache_buf[PATH_MAX];
	uint64_t start;
	bool quiet, tty;
	struct rec_failure fail;
	int e, ret = TD_EXIT_OK, go_fd = -1, err_fd = -1;

	e = parse(argc, argv, &cfg, &fo);
	if (e)
		return e < 0 ? TD_EXIT_OK : e;
	quiet = fo.quiet;
	if (fo.cmd) {
		/* found before anything is made: a wrong name leaves nothing */
		e = strchr(fo.cmd[0], '/') ? (access(fo.cmd[0], X_OK) == 0 ? 0 : -errno) :
					     find_in_path(fo.cmd[0]);
		if (e < 0) {
			if (strspn(fo.cmd[0], "0123456789") == strlen(fo.cmd[0]))
				td_msg("cannot run '%s': %s (to record the running process %s: "
				       "--pid %s)",
					fo.cmd[0], strerror(-e), fo.cmd[0], fo.cmd[0]);
			else
				td_msg("cannot run '%s': %s", fo.cmd[0], strerror(-e));
			return 127;
		}
	}
	/* before any libdw: its lookups read the environment */
	td_debuginfod_setup(fo.debuginfod);
	if (!td_cache_dir_setup(fo.cache_dir, cache_buf, sizeof(cache_buf), &cfg.cache_dir))
		return TD_EXIT_USAGE;
	if (fo.cmd) {
		pid_t pid = start_held(fo.cmd, &go_fd, &err_fd);

		if (pid < 0) {
			td_msg("cannot start '%s': %s", fo.cmd[0], strerror((int)-pid));
			return TD_EXIT_IO;
		}
		st.child = cfg.pids[0] = pid;
		cfg.held_exec = true;
	}
	e = rec_open(&cfg, &r, &fail);
	if (e < 0 && st.child) {
		/* it never runs: no byte, and it exits */
		close(go_fd);
		close(err_fd);
		while (waitpid(st.child, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (e < 0)
		return explain_open(e, &cfg, &fail);
	tty = !quiet && isatty(STDERR_FILENO);
	start = st.last_ns = td_now_ns();
	if (st.child) {
		int x;
		ssize_t n;

		if (!quiet)
			td_msg("recording %s (PID %d) into %s", fo.cmd[0], (int)st.child, cfg.repo);
		/* attached: let it exec, and hear whether that worked */
		if (write(go_fd, "", 1) != 1)
			td_msg("cannot start '%s': %s", fo.cmd[0], strerror(errno));
		close(go_fd);
		while ((n = read(err_fd, &x, sizeof(x))) < 0 && errno == EINTR)
			;
		close(err_fd);
		if (n == (ssize_t)sizeof(x))
			td_msg("cannot run '%s': %s", fo.cmd[0], strerror(x));
	} else if (!quiet) {
		td_msg("recording %u process%s into %s; Ctrl-C to stop", cfg.npids,
			cfg.npids > 1 ? "es" : "", cfg.repo);
	}
	{
		struct rec_hooks hooks = { tty ? status_line : NULL, notice };

		rec_run(r, &hooks, &st);
	}
	if (tty)
		fputc('\n', stderr);
	rec_stats(r, &s);
	if (s.io_err) {
		stopped_by_io(&s, &cfg);
		ret = TD_EXIT_IO;
	}
	summary(&s, &cfg, td_now_ns() - start, stderr);
	if (lost_changed(&s, &cfg))
		ret = TD_EXIT_IO;
	rec_free(r);
	if (st.child) {
		int status;

		/* recording ended first (a duration, a signal): the command
		 * goes on, untraced, and its status is still the answer */
		if (!st.child_ended) {
			pid_t w;

			while ((w = waitpid(st.child, &status, 0)) < 0 && errno == EINTR)
				;
			if (w == st.child) {
				st.child_ended = true;
				st.child_status = status;
			}
		}
		if (st.child_ended && exit_code_of(st.child_status) != 0)
			return exit_code_of(st.child_status);
		if (!st.child_ended && ret == TD_EXIT_OK)
			return TD_EXIT_IO; /* its status was lost: say something went wrong */
	}
	return ret;
}
