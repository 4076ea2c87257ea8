/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd service: the loop that follows the processes a config names.
 *
 * One worker process per [Target] rule (worker.c; service-internal.h says
 * why processes), forked by this one, which starts no thread.  This loop:
 *   - scans /proc every ScanInterval (and at once after a start or a
 *     reload), matches each process it does not know yet against the
 *     rules (config.c) and asks that rule's worker to attach it;
 *   - keeps the follower table (follow.c): a process is (PID, start time),
 *     a refusal is said once and retried with backoff;
 *   - hears from the workers: attach answers, exits, emergency dumps, a
 *     heartbeat each second with the sampler's last turn;
 *   - SIGHUP: re-reads the config; a bad one is refused and the old kept;
 *     a rule whose recording is unchanged keeps its worker, others stop
 *     (finishing their chunks) and start;
 *   - SIGTERM, SIGINT: stops every worker (each detaches from every target
 *     and finishes its chunk) and returns.
 * A worker that dies is restarted with backoff; its processes are found
 * again by the next scan.  Nothing here prints: messages and states go
 * through struct svc_hooks. */
#define _GNU_SOURCE
#include "export-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "../common/td.h"
#include "../report/report.h"
#include "../symbolize/symbolize.h"

#define WORKER_OPEN_NS 15000000000ull	   /* for a worker to open its recording */
#define WORKER_STOP_NS 10000000000ull	   /* for a worker to finish after SIGTERM */
#define WORKER_RETRY_MIN_NS 5000000000ull  /* a failed worker: first retry */
#define WORKER_RETRY_MAX_NS 300000000000ull
#define STATUS_NS 2000000000ull

enum wstate { W_OFF, W_STARTING, W_RUNNING };

/* One rule's worker.  owns: fd (the socket), the child process */
struct worker {
	char name[64];
	unsigned hz;
	enum rec_mode mode;
	char repo[PATH_MAX];
	enum wstate state;
	pid_t pid;
	int fd;
	uint64_t started_ns, beat_ns, idle_ns;
	uint64_t samples, lost, cpu_ns;
	unsigned threads, asked;
	unsigned max_procs; /* the rule's MaxProcesses= */
	bool no_kernel;	    /* the rule's KernelFrames=no */
	/* matching processes a scan left unasked because the rule has
	 * max_procs followed or asked: counted by each scan, said once
	 * (limit_said) per worker, asked again by the scans as others exit */
	unsigned over, over_scan;
	bool limit_said;
	uint64_t retry_ns, backoff_ns; /* W_OFF after a failure: when to start again */
	int err;		       /* why it last failed */
	bool stuck_said;
};

/* owns: cfg, the workers, fol, sfd */
struct service {
	const struct svc_options *o;
	const struct svc_hooks *hooks;
	void *arg;
	struct svc_config *cfg;
	struct worker w[SVC_MAX_RULES];
	unsigned nw;
	struct follow fol;
	int sfd;
	const char *proc_root;
	uint64_t next_scan, next_status, next_dog;
	char last_status[200];
	int cn;			  /* the process events connector, -1: scans only */
	uint64_t cn_overruns;	  /* times it dropped events */
	struct svc_proc *proc;	  /* room for one process's fields (9 KiB) */
	uint64_t status_ns; /* when last_status went out */
	bool stopping;
	bool cache_ok; /* cfg's cache directory can serve the workers */
	struct svc_exporter exp; /* [Export]'s process (export-loop.c) */
};

static void say(struct service *sv, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(struct service *sv, int prio, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sv->hooks && sv->hooks->log)
		sv->hooks->log(sv->arg, prio, msg);
}

static void notify(struct service *sv, const char *state)
{
	if (sv->hooks && sv->hooks->notify)
		sv->hooks->notify(sv->arg, state);
}

static const char *signame(int sig)
{
	const char *s = sigabbrev_np(sig);

	return s ? s : "?";
}

static bool worker_read(struct service *sv, unsigned i);
static void worker_ended(struct service *sv, unsigned i, int status);

/* ---- workers */

static void worker_close(struct worker *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->pid = 0;
	w->state = W_OFF;
	w->asked = 0;
}

static int worker_start(struct service *sv, unsigned i)
{
	struct worker *w = &sv->w[i];
	const struct svc_rule *rule = &sv->cfg->rules[i];
	int sp[2];
	pid_t pid;

	snprintf(w->name, sizeof(w->name), "%s", rule->name);
	w->hz = rule->hz;
	w->mode = rule->mode;
	w->max_procs = rule->max_procs;
	w->no_kernel = rule->no_kernel;
	w->over = w->over_scan = 0;
	w->limit_said = false;
	if ((size_t)snprintf(w->repo, sizeof(w->repo), "%s/%s", sv->cfg->directory, rule->name) >=
		sizeof(w->repo))
		return -ENAMETOOLONG;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sp[0]);
		close(sp[1]);
		return -errno;
	}
	if (pid == 0) {
		char title[16];
		struct worker_config wc = { .repo = w->repo, .hz = w->hz, .mode = w->mode,
			.max_procs = w->max_procs, .no_kernel = w->no_kernel,
			/* a chunk of at most a quarter of MaxSize: the repository
			 * keeps at least two */
			.ropts = { .max_size = sv->cfg->max_size -
					       (sv->cfg->export.url ? sv->cfg->max_size / EXP_SPOOL_SHARE : 0),
				.max_age_ns = sv->cfg->max_age_ns,
				.max_chunk_size = TD_MIN(16ull << 20, sv->cfg->max_size / 4),
				.max_emergency = sv->cfg->max_emergency_dumps },
			.emergency_window_ns = sv->cfg->emergency_window_ns,
			.cache_dir = sv->cache_ok ? sv->cfg->cache_directory : NULL };

		/* the other workers' sockets and the service's signals are
		 * not this process's business */
		for (unsigned k = 0; k < sv->nw; k++)
			if (sv->w[k].fd >= 0)
				close(sv->w[k].fd);
		close(sv->sfd);
		if (sv->cn >= 0)
			close(sv->cn);
		if (sv->exp.fd >= 0)
			close(sv->exp.fd);
		close(sp[0]);
		snprintf(title, sizeof(title), "tracerd-%.7s", rule->name);
		prctl(PR_SET_NAME, title);
		_exit(worker_main(&wc, sp[1]));
	}
	close(sp[1]);
	w->fd = sp[0];
	w->pid = pid;
	w->state = W_STARTING;
	w->started_ns = w->beat_ns = td_now_ns();
	w->asked = 0;
	w->stuck_said = false;
	return 0;
}

/* SIGTERM to every worker in set, then wait for them: each detaches and
 * finishes its chunk.  A second SIGTERM halfway hurries one (its samples
 * not yet written are dropped); SIGKILL at the end (the kernel detaches
 * its tracees, which run on). */
static void workers_stop(struct service *sv, const bool *set)
{
	uint64_t start = td_now_ns();
	bool hurried = false;
	unsigned left = 0;

	for (unsigned i = 0; i < sv->nw; i++)
		if (set[i] && sv->w[i].pid) {
			kill(sv->w[i].pid, SIGTERM);
			left++;
		}
	while (left) {
		uint64_t now = td_now_ns();
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);

		if (p > 0) {
			exp_reaped(&sv->exp, p);
			for (unsigned i = 0; i < sv->nw; i++) {
				if (sv->w[i].pid != p)
					continue;
				if (set[i]) {
					left--;
					if (sv->w[i].fd >= 0)
						worker_read(sv, i); /* its last words */
					worker_close(&sv->w[i]);
					follow_drop_worker(&sv->fol, (int)i);
				} else {
					worker_ended(sv, i, status);
				}
			}
			continue;
		}
		if (p < 0 && errno == ECHILD)
			break;
		if (now - start > WORKER_STOP_NS / 2 && !hurried) {
			hurried = true;
			for (unsigned i = 0; i < sv->nw; i++)
				if (set[i] && sv->w[i].pid)
					kill(sv->w[i].pid, SIGTERM);
		}
		if (now - start > WORKER_STOP_NS) {
			for (unsigned i = 0; i < sv->nw; i++)
				if (set[i] && sv->w[i].pid) {
					say(sv, LOG_WARNING,
						"rule %s: its worker %d did not finish in %llu s; "
						"killed (its targets run on, detached by the kernel)",
						sv->w[i].name, (int)sv->w[i].pid,
						(unsigned long long)(WORKER_STOP_NS / 1000000000u));
					kill(sv->w[i].pid, SIGKILL);
				}
			start = now - WORKER_STOP_NS / 2; /* wait for the reaping */
		}
		usleep(10000);
	}
}

static void rec_failure_text(const struct svc_msg *m, char *buf, size_t len)
{
	switch (m->fail.step) {
	case REC_FAIL_REPO:
		if (m->err == -TD_E_LOCKED)
			snprintf(buf, len, "its repository is in use by tracerd process %d; stop it "
				"or give this rule another name", (int)m->fail.pid);
		else
			snprintf(buf, len, "cannot open its repository: %s; check Directory= and "
				"its permissions", td_strerror(m->err));
		break;
	case REC_FAIL_TRACER:
		snprintf(buf, len, "cannot set up the sampler: %s", td_strerror(m->err));
		break;
	default:
		snprintf(buf, len, "%s", td_strerror(m->err));
		break;
	}
}

/* ---- what the workers say */

static const char *comm_of(struct service *sv, pid_t pid)
{
	struct follow_entry *e = follow_find(&sv->fol, pid);

	return e && e->comm[0] ? e->comm : "?";
}

static void on_attach(struct service *sv, unsigned i, const struct rec_notice *n)
{
	struct follow_entry *e = NULL;
	enum follow_outcome o;

	if (sv->w[i].asked)
		sv->w[i].asked--;
	if (n->err == -TD_E_LIMIT) {
		/* the recorder is full (a slot of an exit not yet reaped):
		 * forgotten, so that a later scan asks again, and counted
		 * there with the others over the limit */
		follow_remove(&sv->fol, &n->id);
		return;
	}
	o = follow_answer(&sv->fol, &n->id, n->err, td_now_ns(), &e);
	switch (o) {
	case FOLLOW_NOW_FOLLOWED:
		exp_tell(&sv->exp, EXP_MSG_FOLLOW, (int)i, &n->id);
		say(sv, LOG_INFO, "rule %s: following %d (%s), %u thread%s", sv->w[i].name,
			(int)n->id.pid, e->comm, n->threads, n->threads == 1 ? "" : "s");
		break;
	case FOLLOW_REFUSED_NEW:
		say(sv, LOG_WARNING, "rule %s: cannot follow %d (%s): %s%s; retrying with backoff "
			"(%llu s, doubling to %llu min)", sv->w[i].name, (int)n->id.pid, e->comm,
			td_strerror(n->err),
			n->err == -TD_E_TRACED ? " (another debugger or tracer has it)" :
			n->err == -EPERM ? " (tracerd needs CAP_SYS_PTRACE)" : "",
			(unsigned long long)(e->backoff_ns / 1000000000u),
			(unsigned long long)(FOLLOW_RETRY_MAX_NS / 60000000000ull));
		break;
	case FOLLOW_REFUSED_AGAIN:
		say(sv, LOG_DEBUG, "rule %s: %d (%s) refused again: %s; next try in %llu s",
			sv->w[i].name, (int)n->id.pid, e->comm, td_strerror(n->err),
			(unsigned long long)(e->backoff_ns / 1000000000u));
		break;
	case FOLLOW_GONE:
	case FOLLOW_STALE:
		break;
	}
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (SIG%s)", WTERMSIG(status),
			signame(WTERMSIG(status)));
	else
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

/* A followed process's end (EXIT, EMERGENCY) in the words of the
 * reports' threads view and info: "killed by signal 15 (Terminated),
 * sent by PID 812 (kill), uid 0 (kill)", or a fault's address; an OOM
 * kill said before the source. */
static void describe_death(const struct rec_notice *n, char *buf, size_t len)
{
	char comm[sizeof(n->si.comm) + 1];
	int sig;
	FILE *f;

	if (!WIFSIGNALED(n->status)) {
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(n->status));
		return;
	}
	sig = WTERMSIG(n->status);
	snprintf(buf, len, "killed by signal %d (%s)%s", sig, strsignal(sig),
		n->oom ? " by the OOM killer" : "");
	if (!n->si_known || !(f = fmemopen(buf, len, "a")))
		return;
	/* the sender's bytes, NUL-terminated here whatever came; the
	 * journal's hook escapes the whole line */
	memcpy(comm, n->si.comm, sizeof(n->si.comm));
	comm[sizeof(n->si.comm)] = '\0';
	rp_signal_from(f, (uint32_t)n->id.pid, sig, n->si.addr,
		&(struct rp_signal_from){ .known = true, .code = n->si.code,
			.pid = (uint32_t)n->si.pid, .uid = n->si.uid, .comm = comm },
		RP_SIG_INFO);
	fclose(f);
	buf[len - 1] = '\0';
}

static void on_notice(struct service *sv, unsigned i, const struct rec_notice *n)
{
	char how[320];

	switch (n->kind) {
	case REC_NOTICE_ATTACH:
		on_attach(sv, i, n);
		break;
	case REC_NOTICE_EXIT:
		/* a fatal death was said with its emergency dump: once */
		if (!n->told) {
			describe_death(n, how, sizeof(how));
			say(sv, LOG_INFO, "rule %s: %d (%s) %s", sv->w[i].name, (int)n->id.pid,
				comm_of(sv, n->id.pid), how);
		}
		follow_remove(&sv->fol, &n->id);
		exp_tell(&sv->exp, EXP_MSG_GONE, (int)i, &n->id);
		break;
	case REC_NOTICE_EMERGENCY:
		describe_death(n, how, sizeof(how));
		if (n->err < 0)
			say(sv, LOG_ERR, "rule %s: %d (%s) %s; the emergency dump failed: %s",
				sv->w[i].name, (int)n->id.pid, comm_of(sv, n->id.pid), how,
				td_strerror(n->err));
		else
			say(sv, LOG_CRIT, "rule %s: %d (%s) %s; emergency dump %s (%u chunk%s, "
				"%llu bytes); read it with: tracerd report %s", sv->w[i].name,
				(int)n->id.pid, comm_of(sv, n->id.pid), how, n->path, n->chunks,
				n->chunks == 1 ? "" : "s", (unsigned long long)n->bytes, n->path);
		break;
	case REC_NOTICE_UNREADABLE:
		say(sv, LOG_WARNING, "rule %s: %d (%s): its mappings may not be read (%s), so its "
				     "samples have no stack; give the service CAP_DAC_READ_SEARCH "
				     "(the installed unit has it in CapabilityBoundingSet=)",
			sv->w[i].name, (int)n->id.pid, comm_of(sv, n->id.pid), td_strerror(n->err));
		break;
	case REC_NOTICE_CHANGED:
		say(sv, LOG_ERR,
			"rule %s: the chunk being written was changed by another process: set "
			"aside unfinished as %s, %llu samples in it lost; recording goes on in a "
			"new chunk",
			sv->w[i].name, n->path, (unsigned long long)n->samples);
		break;
	case REC_NOTICE_JIT: {
		char path[1024];

		td_text_escape(path, sizeof(path), n->path);
		say(sv, LOG_WARNING, "rule %s: %d (%s): %s was not read (%s): its JIT code is "
				     "left unnamed", sv->w[i].name, (int)n->id.pid,
			comm_of(sv, n->id.pid), path, td_strerror(n->err));
		break;
	}
	case REC_NOTICE_PYTHON:
		say(sv, LOG_NOTICE, "rule %s: %d (%s): Python %u.%u: its Python frames are not "
				    "read (tracerd reads 3.11's); its stacks stay native",
			sv->w[i].name, (int)n->id.pid, comm_of(sv, n->id.pid),
			n->python_version >> 24, n->python_version >> 16 & 0xff);
		break;
	case REC_NOTICE_SNAPSHOT:
		break;
	}
}

/* Read what worker i has sent.  Returns false when it hung up. */
static bool worker_read(struct service *sv, unsigned i)
{
	struct worker *w = &sv->w[i];

	for (;;) {
		struct svc_msg m;
		ssize_t n = recv(w->fd, &m, sizeof(m), MSG_DONTWAIT);
		char why[300];

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n != (ssize_t)sizeof(m))
			continue;
		switch (m.kind) {
		case SVC_MSG_OPENED:
			if (m.err < 0) {
				rec_failure_text(&m, why, sizeof(why));
				w->err = m.err;
				say(sv, LOG_ERR, "rule %s: cannot record into %s: %s", w->name, w->repo,
					why);
				break;
			}
			w->state = W_RUNNING;
			w->backoff_ns = 0;
			w->beat_ns = td_now_ns();
			say(sv, LOG_INFO, "rule %s: recording into %s (%s mode, %u Hz%s)", w->name,
				w->repo, w->mode == REC_MODE_WALL ? "wall" : "cpu", w->hz,
				w->no_kernel ? ", no kernel frames" : "");
			break;
		case SVC_MSG_NOTICE:
			on_notice(sv, i, &m.notice);
			break;
		case SVC_MSG_BEAT:
			w->beat_ns = td_now_ns();
			w->idle_ns = m.sampler_idle_ns;
			w->samples = m.samples_written;
			w->lost = m.lost;
			w->cpu_ns = m.cpu_ns;
			w->threads = m.threads;
			if (m.err)
				w->err = m.err;
			break;
		case SVC_MSG_ATTACH:
			break;
		}
	}
}

/* A worker ended (reaped by the caller). */
static void worker_ended(struct service *sv, unsigned i, int status)
{
	struct worker *w = &sv->w[i];
	char how[64];
	bool was_running = w->state == W_RUNNING;

	if (w->fd >= 0)
		worker_read(sv, i); /* its last words */
	describe_status(status, how, sizeof(how));
	worker_close(w);
	follow_drop_worker(&sv->fol, (int)i);
	w->backoff_ns = w->backoff_ns ? TD_MIN(w->backoff_ns * 2, WORKER_RETRY_MAX_NS) :
					WORKER_RETRY_MIN_NS;
	w->retry_ns = td_now_ns() + w->backoff_ns;
	if (sv->stopping)
		return;
	if (was_running)
		say(sv, LOG_ERR, "rule %s: its worker %s%s%s; restarting it in %llu s", w->name, how,
			w->err ? ": " : "", w->err ? td_strerror(w->err) : "",
			(unsigned long long)(w->backoff_ns / 1000000000u));
	else
		say(sv, LOG_DEBUG, "rule %s: worker %s; retrying in %llu s", w->name, how,
			(unsigned long long)(w->backoff_ns / 1000000000u));
}

static void reap(struct service *sv)
{
	int status;
	pid_t p;

	while ((p = waitpid(-1, &status, WNOHANG)) > 0)
		if (exp_reaped(&sv->exp, p) && !sv->stopping)
			say(sv, LOG_ERR, "export: its process ended; starting it again in 5 s");
		else
			for (unsigned i = 0; i < sv->nw; i++)
			if (sv->w[i].pid == p)
				worker_ended(sv, i, status);
}

/* ---- the scan */

static bool is_ours(const struct service *sv, pid_t pid)
{
	if (pid == getpid() || pid == sv->exp.pid)
		return true;
	for (unsigned i = 0; i < sv->nw; i++)
		if (sv->w[i].pid == pid)
			return true;
	return false;
}

static void ask(struct service *sv, struct follow_entry *e, unsigned i)
{
	struct svc_msg m = { .kind = SVC_MSG_ATTACH, .pid = e->id.pid };

	follow_asked(&sv->fol, e, (int)i);
	sv->w[i].asked++;
	if (send(sv->w[i].fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* it will be asked again by a later scan */
		sv->w[i].asked--;
		follow_remove(&sv->fol, &e->id);
	}
}

static bool can_ask(const struct service *sv, int i)
{
	return i >= 0 && sv->w[i].state == W_RUNNING && sv->w[i].asked < REC_MAX_ASKED - 2;
}

/* Has rule i as many processes followed or asked as MaxProcesses= lets
 * it?  Then one more is counted (over_scan), not asked. */
static bool at_limit(struct service *sv, unsigned i, bool scanning)
{
	struct worker *w = &sv->w[i];

	if (follow_held(&sv->fol, (int)i) < w->max_procs)
		return false;
	w->over_scan += scanning;
	return true;
}

/* After a scan: say once per worker that a rule reached its limit, and
 * how many it leaves; later counts only at debug level. */
static void limits_say(struct service *sv)
{
	for (unsigned i = 0; i < sv->nw; i++) {
		struct worker *w = &sv->w[i];

		if (w->over_scan && !w->limit_said)
			say(sv, LOG_WARNING, "rule %s: MaxProcesses=%u reached; %u more matching "
				"process%s not followed (each is followed when a followed one "
				"exits); raise MaxProcesses= in [Target %s] to follow them all",
				w->name, w->max_procs, w->over_scan, w->over_scan == 1 ? " is" : "es are",
				w->name);
		else if (w->over_scan != w->over)
			say(sv, LOG_DEBUG, "rule %s: %u matching process%s over MaxProcesses=%u",
				w->name, w->over_scan, w->over_scan == 1 ? "" : "es", w->max_procs);
		w->limit_said |= w->over_scan != 0;
		w->over = w->over_scan;
		w->over_scan = 0;
	}
}

/* Process pid, met by a scan (scanning: the follower table marks what it
 * saw) or an event of the connector: ask again if its retry is due, or
 * match it and ask its rule's worker.  p: room for what the rules read. */
static void consider(struct service *sv, pid_t pid, struct svc_proc *p, uint64_t now,
	bool scanning)
{
	struct svc_proc head;
	struct follow_entry *e;
	struct td_proc_id id;
	int r;

	if (pid <= 0 || is_ours(sv, pid))
		return;
	/* A followed process is seen without reading it (a scan of a
	 * thousand did a thousand opens): its tracer tells its exit, and a
	 * tracee's PID is free only once its tracer has seen it exit; a PID
	 * reused before that word came here is sorted out a scan later. */
	if (scanning && (e = follow_find(&sv->fol, pid)) && e->state == FOLLOW_FOLLOWED) {
		e->seen = true;
		return;
	}
	if (svc_proc_read(sv->proc_root, pid, 0, &head) < 0 || head.kernel)
		return;
	id = (struct td_proc_id){ pid, head.start_time };
	e = scanning ? follow_seen(&sv->fol, &id) : follow_find(&sv->fol, pid);
	if (e && e->id.start_time == id.start_time) {
		if (follow_due(e, now) && can_ask(sv, e->worker))
			ask(sv, e, (unsigned)e->worker);
		return;
	}
	if (e || !sv->cfg->nrules)
		return; /* a reused PID the next scan sorts out */
	if (svc_proc_read(sv->proc_root, pid, svc_config_needs(sv->cfg), p) == 0 &&
		p->start_time == id.start_time && (r = svc_config_match(sv->cfg, p)) >= 0 &&
		!at_limit(sv, (unsigned)r, scanning) && can_ask(sv, r) && follow_add(&sv->fol, &id, r, p->comm, &e) == 0) {
		say(sv, LOG_DEBUG, "rule %s: %d (%s) matches%s", sv->w[r].name, (int)pid, p->comm,
			scanning ? "" : " at its start");
		ask(sv, e, (unsigned)r);
	}
}

static void scan(struct service *sv)
{
	uint64_t now = td_now_ns();
	struct dirent *de;
	DIR *d = sv->proc ? opendir(sv->proc_root) : NULL;

	if (!d) {
		say(sv, LOG_ERR, "cannot read %s: %s; no process can be found", sv->proc_root,
			strerror(sv->proc ? errno : ENOMEM));
		return;
	}
	while ((de = readdir(d))) {
		char *end;
		pid_t pid = (pid_t)strtol(de->d_name, &end, 10);

		if (!*end)
			consider(sv, pid, sv->proc, now, true);
	}
	closedir(d);
	follow_sweep(&sv->fol);
	limits_say(sv);
}

/* ---- the exporter */

static void export_log(void *arg, int prio, const char *msg)
{
	say(arg, prio, "%s", msg);
}

/* (Re)start the exporter for the config in force and tell it what is
 * followed now; nothing without [Export]. */
static void export_restart(struct service *sv)
{
	int fds[SVC_MAX_RULES + 2], e;
	unsigned n = 0;

	exp_stop(&sv->exp);
	fds[n++] = sv->sfd;
	fds[n++] = sv->cn;
	for (unsigned i = 0; i < sv->nw; i++)
		fds[n++] = sv->w[i].fd;
	e = exp_start(&sv->exp, sv->cfg, sv->proc_root, fds, n);
	if (e < 0) {
		say(sv, LOG_ERR, "export: cannot start its process: %s; trying again in 5 s",
			strerror(-e));
		sv->exp.retry_ns = td_now_ns() + 5000000000ull;
		return;
	}
	for (unsigned k = 0; k < sv->fol.n; k++)
		if (sv->fol.e[k].state == FOLLOW_FOLLOWED)
			exp_tell(&sv->exp, EXP_MSG_FOLLOW, sv->fol.e[k].worker, &sv->fol.e[k].id);
}

/* The connector's news: each process that exec'ed or was forked is
 * matched now; an overrun scans at once. */
static void hear_execs(struct service *sv)
{
	pid_t pids[256];
	bool overrun;
	int n;

	do {
		uint64_t now = td_now_ns();

		n = svc_procconn_read(sv->cn, pids, TD_ARRAY_SIZE(pids), &overrun);
		for (int k = 0; k < n && sv->proc; k++)
			consider(sv, pids[k], sv->proc, now, false);
		if (overrun) {
			sv->cn_overruns++;
			scan(sv);
			sv->next_scan = now + sv->cfg->scan_interval_ns;
		}
	} while (n == (int)TD_ARRAY_SIZE(pids));
}

/* ---- the service manager */

static void status(struct service *sv, bool force)
{
	char buf[200];
	uint64_t samples = 0;
	unsigned running = 0;

	for (unsigned i = 0; i < sv->nw; i++) {
		samples += sv->w[i].samples;
		running += sv->w[i].state == W_RUNNING;
	}
	snprintf(buf, sizeof(buf), "STATUS=following %u process%s (%u of %u rules recording), "
		"%llu samples written", follow_count(&sv->fol, -1, FOLLOW_FOLLOWED),
		follow_count(&sv->fol, -1, FOLLOW_FOLLOWED) == 1 ? "" : "es", running, sv->nw,
		(unsigned long long)samples);
	if (force || strcmp(buf, sv->last_status)) {
		notify(sv, buf);
		sv->status_ns = td_now_ns();
		snprintf(sv->last_status, sizeof(sv->last_status), "%s", buf);
	}
}

/* WATCHDOG=1 only while every recording worker's sampler turns: a stuck
 * one makes the manager restart the whole service. */
static void watchdog(struct service *sv, uint64_t now)
{
	uint64_t half = sv->o->watchdog_ns / 2;
	bool ok = true;

	for (unsigned i = 0; i < sv->nw; i++) {
		struct worker *w = &sv->w[i];

		if (w->state != W_RUNNING)
			continue;
		if (now - w->beat_ns > half || w->idle_ns > half) {
			if (!w->stuck_said)
				say(sv, LOG_ERR, "rule %s: the sampler has not turned for %.1f s; "
					"the watchdog is left to expire so that the service is "
					"restarted", w->name,
					(double)TD_MAX(now - w->beat_ns, w->idle_ns) / 1e9);
			w->stuck_said = true;
			ok = false;
		}
	}
	if (ok)
		notify(sv, "WATCHDOG=1");
}

/* ---- start, reload */

static int make_directory(struct service *sv)
{
	struct stat st;

	if (mkdir(sv->cfg->directory, 0750) < 0 && errno != EEXIST) {
		int e = -errno;

		say(sv, LOG_ERR, "cannot create Directory=%s: %s; create it or point Directory= at "
			"a writable place", sv->cfg->directory, strerror(-e));
		return e;
	}
	if (stat(sv->cfg->directory, &st) < 0 || !S_ISDIR(st.st_mode)) {
		say(sv, LOG_ERR, "Directory=%s is not a directory", sv->cfg->directory);
		return -ENOTDIR;
	}
	return 0;
}

/* Make the debuginfo cache ready for the workers to come; one that cannot
 * serve is said, and they go without. */
static void cache_setup(struct service *sv)
{
	int e;

	sv->cache_ok = false;
	if (!sv->cfg->cache_directory)
		return;
	e = sym_debug_cache_prepare(sv->cfg->cache_directory);
	if (e < 0) {
		say(sv, LOG_WARNING, "CacheDirectory=%s: %s; recording without it (each worker "
			"inflates compressed debuginfo anew); give a directory of the service's own "
			"user that no one else can write, or none",
			sv->cfg->cache_directory, td_strerror(e));
		return;
	}
	sv->cache_ok = true;
}

/* Wait until no worker is starting (each opened its recording or failed),
 * handling what they say. */
static void await_open(struct service *sv)
{
	uint64_t deadline = td_now_ns() + WORKER_OPEN_NS;

	for (;;) {
		struct pollfd pfd[SVC_MAX_RULES];
		unsigned n = 0, map[SVC_MAX_RULES];

		for (unsigned i = 0; i < sv->nw; i++)
			if (sv->w[i].state == W_STARTING) {
				pfd[n] = (struct pollfd){ sv->w[i].fd, POLLIN, 0 };
				map[n++] = i;
			}
		if (!n || td_now_ns() > deadline)
			return;
		poll(pfd, n, 100);
		for (unsigned k = 0; k < n; k++)
			if (pfd[k].revents && !worker_read(sv, map[k]) && sv->w[map[k]].pid) {
				int status;

				if (waitpid(sv->w[map[k]].pid, &status, 0) > 0)
					worker_ended(sv, map[k], status);
			}
		reap(sv);
	}
}

static bool same_string(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool same_repo_settings(const struct svc_config *a, const struct svc_config *b)
{
	return !strcmp(a->directory, b->directory) && a->max_size == b->max_size &&
	       a->max_age_ns == b->max_age_ns && a->emergency_window_ns == b->emergency_window_ns &&
	       a->max_emergency_dumps == b->max_emergency_dumps &&
	       same_string(a->cache_directory, b->cache_directory) &&
	       !a->export.url == !b->export.url; /* the spool's share of MaxSize */
}

static void reload(struct service *sv)
{
	struct svc_config *nc = NULL;
	struct svc_config_error err = { 0 };
	struct worker old[SVC_MAX_RULES];
	bool stop[SVC_MAX_RULES] = { false }, kept[SVC_MAX_RULES] = { false };
	unsigned nold = sv->nw, started = 0, kept_n = 0;
	int e;

	notify(sv, "RELOADING=1");
	e = svc_config_load(sv->o->config_path, &nc, &err);
	if (e < 0) {
		say(sv, LOG_ERR, "reload refused, the old configuration stays: %s:%u: %s%s%s",
			err.file, err.line, err.reason, err.text[0] ? ": " : "", err.text);
		notify(sv, "READY=1");
		return;
	}
	if (strcmp(nc->directory, sv->cfg->directory) &&
		mkdir(nc->directory, 0750) < 0 && errno != EEXIST) {
		say(sv, LOG_ERR, "reload refused, the old configuration stays: cannot create "
			"Directory=%s: %s", nc->directory, strerror(errno));
		svc_config_free(nc);
		notify(sv, "READY=1");
		return;
	}
	/* which old workers record exactly as a new rule does */
	memcpy(old, sv->w, sizeof(old));
	for (unsigned i = 0; i < nold; i++) {
		stop[i] = true;
		for (unsigned j = 0; j < nc->nrules && same_repo_settings(sv->cfg, nc); j++)
			if (svc_rule_same_recording(&sv->cfg->rules[i], &nc->rules[j]) &&
				old[i].state != W_OFF)
				stop[i] = false;
	}
	workers_stop(sv, stop);
	memcpy(old, sv->w, sizeof(old));
	/* the kept ones move to their new rule's place; entries of the
	 * follower table move along (renumbered through negatives so that
	 * no two moves meet) */
	for (unsigned j = 0; j < SVC_MAX_RULES; j++)
		sv->w[j] = (struct worker){ .fd = -1 };
	for (unsigned i = 0; i < nold; i++) {
		if (stop[i] || old[i].state == W_OFF)
			continue;
		for (unsigned j = 0; j < nc->nrules; j++)
			if (!kept[j] && svc_rule_same_recording(&sv->cfg->rules[i], &nc->rules[j])) {
				sv->w[j] = old[i];
				kept[j] = true;
				follow_renumber(&sv->fol, (int)i, -2 - (int)j);
				kept_n++;
				break;
			}
	}
	for (unsigned j = 0; j < nc->nrules; j++)
		follow_renumber(&sv->fol, -2 - (int)j, (int)j);
	svc_config_free(sv->cfg);
	sv->cfg = nc;
	sv->nw = nc->nrules;
	cache_setup(sv);
	for (unsigned j = 0; j < sv->nw; j++) {
		if (kept[j])
			continue;
		e = worker_start(sv, j);
		if (e < 0)
			say(sv, LOG_ERR, "rule %s: cannot start its worker: %s", nc->rules[j].name,
				strerror(-e));
		else
			started++;
	}
	await_open(sv);
	say(sv, LOG_NOTICE, "reloaded %s: %u rule%s (%u kept recording, %u started)",
		sv->o->config_path, sv->nw, sv->nw == 1 ? "" : "s", kept_n, started);
	scan(sv);
	export_restart(sv);
	sv->next_scan = td_now_ns() + sv->cfg->scan_interval_ns;
	notify(sv, "READY=1");
	status(sv, true);
}

/* ---- the loop */

static void tick(struct service *sv)
{
	uint64_t now = td_now_ns();

	for (unsigned i = 0; i < sv->nw; i++) {
		struct worker *w = &sv->w[i];

		if (w->state == W_OFF && w->retry_ns && now >= w->retry_ns) {
			w->retry_ns = 0;
			if (worker_start(sv, i) == 0)
				await_open(sv);
		}
	}
	if (!sv->exp.pid && sv->exp.retry_ns && now >= sv->exp.retry_ns)
		export_restart(sv);
	if (now >= sv->next_scan) {
		scan(sv);
		sv->next_scan = now + sv->cfg->scan_interval_ns;
	}
	if (now >= sv->next_status) {
		status(sv, false);
		sv->next_status = now + STATUS_NS;
	}
	if (sv->o->watchdog_ns && now >= sv->next_dog) {
		watchdog(sv, now);
		sv->next_dog = now + sv->o->watchdog_ns / 4;
	}
}

int svc_run(const struct svc_options *o, const struct svc_hooks *hooks, void *arg,
	struct svc_config_error *ret_err)
{
	struct service *sv = calloc(1, sizeof(*sv));
	sigset_t sigs;
	bool all[SVC_MAX_RULES];
	int e;

	if (!sv)
		return -ENOMEM;
	sv->o = o;
	sv->hooks = hooks;
	sv->arg = arg;
	sv->sfd = sv->cn = -1;
	sv->proc = malloc(sizeof(*sv->proc));
	sv->proc_root = o->proc_root ? o->proc_root : "/proc";
	for (unsigned i = 0; i < SVC_MAX_RULES; i++)
		sv->w[i] = (struct worker){ .fd = -1 };
	follow_init(&sv->fol);
	exp_init(&sv->exp);
	e = svc_config_load(o->config_path, &sv->cfg, ret_err);
	if (e < 0)
		goto out;
	e = make_directory(sv);
	if (e < 0)
		goto out;
	cache_setup(sv);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGCHLD);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	sv->sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sv->sfd < 0) {
		e = -errno;
		goto out;
	}
	sv->nw = sv->cfg->nrules;
	for (unsigned i = 0; i < sv->nw; i++) {
		e = worker_start(sv, i);
		if (e < 0) {
			say(sv, LOG_ERR, "rule %s: cannot start its worker: %s", sv->cfg->rules[i].name,
				strerror(-e));
			goto out_stop;
		}
	}
	await_open(sv);
	for (unsigned i = 0; i < sv->nw; i++)
		if (sv->w[i].state != W_RUNNING) {
			/* said already; at start a rule that cannot record is
			 * a setup to fix, not one to limp along with */
			e = sv->w[i].err ? sv->w[i].err : -EIO;
			goto out_stop;
		}
	/* listening before the first scan: a process started between the
	 * two is met by one or the other */
	sv->cn = svc_procconn_open();
	if (sv->cn < 0)
		say(sv, LOG_NOTICE, "the kernel's process events are not available (%s): processes "
				    "are found by scanning alone, and one that lives shorter than "
				    "ScanInterval= may be missed",
			strerror(-sv->cn));
	scan(sv);
	export_restart(sv);
	say(sv, LOG_NOTICE, "started: %s, %u rule%s, %sscanning every %.1f s", o->config_path,
		sv->nw, sv->nw == 1 ? "" : "s",
		sv->cn >= 0 ? "following each exec and fork as it happens, " : "",
		(double)sv->cfg->scan_interval_ns / 1e9);
	notify(sv, "READY=1");
	sv->next_scan = td_now_ns() + sv->cfg->scan_interval_ns;
	status(sv, true);
	sv->next_status = td_now_ns() + STATUS_NS;

	while (!sv->stopping) {
		/* the signals, the connector (-1: poll passes it by), the
		 * workers, the exporter */
		struct pollfd pfd[3 + SVC_MAX_RULES];
		unsigned n = 0, map[SVC_MAX_RULES + 1];
		struct signalfd_siginfo si;
		uint64_t now = td_now_ns(), wake = sv->next_scan;
		int timeout;
		bool heard;

		pfd[n++] = (struct pollfd){ sv->sfd, POLLIN, 0 };
		pfd[n++] = (struct pollfd){ sv->cn, POLLIN, 0 };
		for (unsigned i = 0; i < sv->nw; i++)
			if (sv->w[i].fd >= 0) {
				map[n - 2] = i;
				pfd[n++] = (struct pollfd){ sv->w[i].fd, POLLIN, 0 };
			}
		if (sv->exp.fd >= 0) {
			map[n - 2] = SVC_MAX_RULES;
			pfd[n++] = (struct pollfd){ sv->exp.fd, POLLIN, 0 };
		}
		if (o->watchdog_ns && sv->next_dog < wake)
			wake = sv->next_dog;
		if (sv->next_status < wake)
			wake = sv->next_status;
		timeout = wake > now ? (int)TD_MIN((wake - now) / 1000000 + 1, 1000) : 0;
		poll(pfd, n, timeout);
		heard = false;
		for (unsigned k = 2; k < n; k++)
			if (pfd[k].revents && map[k - 2] == SVC_MAX_RULES) {
				exp_read(&sv->exp, export_log, sv);
			} else if (pfd[k].revents) {
				worker_read(sv, map[k - 2]);
				heard = true;
			}
		if (pfd[1].revents)
			hear_execs(sv);
		/* answers change what is followed: said soon, not at the
		 * next status tick (at most four times a second) */
		if (heard && td_now_ns() - sv->status_ns >= STATUS_NS / 8)
			status(sv, false);
		while (read(sv->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
				sv->stopping = true;
			else if (si.ssi_signo == SIGHUP)
				reload(sv);
		}
		reap(sv);
		if (!sv->stopping)
			tick(sv);
	}
	e = 0;
	notify(sv, "STOPPING=1");
	say(sv, LOG_NOTICE, "stopping: detaching from %u process%s",
		follow_count(&sv->fol, -1, FOLLOW_FOLLOWED),
		follow_count(&sv->fol, -1, FOLLOW_FOLLOWED) == 1 ? "" : "es");
out_stop:
	sv->stopping = true;
	exp_stop(&sv->exp);
	for (unsigned i = 0; i < SVC_MAX_RULES; i++)
		all[i] = true;
	workers_stop(sv, all);
out:
	if (sv->sfd >= 0)
		close(sv->sfd);
	for (unsigned i = 0; i < SVC_MAX_RULES; i++)
		if (sv->w[i].fd >= 0)
			close(sv->w[i].fd);
	svc_procconn_close(sv->cn);
	free(sv->proc);
	follow_free(&sv->fol);
	svc_config_free(sv->cfg);
	free(sv);
	return e;
}
