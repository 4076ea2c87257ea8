/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The writer's crashes and deaths.  A crash (the sampler holds a thread
 * in a fatal signal's delivery) is written with every stack of its
 * process, its chunk finished and synced, then acknowledged so that the
 * signal goes on.  The rows of the thread that took the signal say where
 * it came from (the sample's TD_SAMPLE_SIGINFO: a fault's address, a
 * sender's PID, uid and comm, a timer).  In follow mode (a service's recording), each process
 * met is followed to its death: a fatal one gets its cause on record (an
 * OOM kill, read from its cgroup's count around the death: each cgroup
 * read once a second, however many of its processes are followed) and an
 * emergency dump reaching back over the window; every exit is told to the
 * control loop.
 *
 * Guarantees: the evidence of a crash or a fatal death is in a finished
 * chunk before anyone is told.  Leaves to writer.c the chunk and the
 * notices, to the repository the dump (repo_emergency_into). */
#define _GNU_SOURCE
#include "writer-internal.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/buf.h"

/* A CRASH or DEATH_STACK row, with where its signal came from when the
 * sample says (TD_SAMPLE_SIGINFO: the thread that took it). */
static void death_row(struct writer *w, const struct td_sample *s, uint64_t time_ns,
	enum tcf_process_event kind, uint32_t flags, int32_t signo, uint64_t addr, uint32_t tid,
	uint32_t stack)
{
	struct chunk_sigsrc src;

	if (!(s->flags & TD_SAMPLE_SIGINFO)) {
		chunk_writer_process_event(w->cw, time_ns, (uint32_t)s->pid, kind, (int32_t)flags,
			signo, addr, tid, stack);
		return;
	}
	src = (struct chunk_sigsrc){ .code = s->si.code, .pid = (uint32_t)s->si.pid,
		.uid = s->si.uid };
	if (s->si.comm[0]) {
		char comm[sizeof(s->si.comm) + 1];

		/* the sender's bytes: NUL-terminated here whatever came */
		memcpy(comm, s->si.comm, sizeof(s->si.comm));
		comm[sizeof(s->si.comm)] = '\0';
		src.comm = chunk_writer_string(w->cw, comm);
	}
	chunk_writer_process_event_src(w->cw, time_ns, (uint32_t)s->pid, kind, (int32_t)flags,
		signo, s->si.addr, tid, stack, &src);
}

void crash_begin(struct writer *w, const struct rec_event *e)
{
	w->deaths.crash = w->deaths.last_crash = *e;
}

void crash_stack(struct writer *w, const struct td_sample *s, uint32_t tid, uint32_t stack)
{
	const struct rec_event *c = &w->deaths.crash;

	if (c->handshake_id && s->tid == c->tid)
		death_row(w, s, c->time_ns, TCF_PROC_CRASH, 0, c->signo, c->addr, tid, stack);
}

void crash_done(struct writer *w, const struct rec_event *e)
{
	void *p;

	/* the crash's stacks were published before this event */
	while ((p = ring_peek_bytes(&w->sh->samples))) {
		do_sample(w, p);
		ring_pop_bytes(&w->sh->samples);
	}
	/* the evidence on disk before the signal goes on */
	writer_rotate(w, TCF_END_TARGET_CRASH);
	w->deaths.crash.handshake_id = 0;
	atomic_store(&w->sh->crash_acked, e->handshake_id);
	wake_post(&w->sh->sampler_wake);
}

/* ---- follow: deaths, the OOM killer and emergency dumps */

/* The oom_kill count of a cgroup v2 memory.events file, 0 if unreadable. */
static uint64_t oom_kills_of(const char *path)
{
	char buf[1024], *p;

	if (!path[0] || td_read_text(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\noom_kill ");
	return p ? strtoull(p + 10, NULL, 10) : 0;
}

static struct wproc *wproc_of(struct writer *w, pid_t pid)
{
	for (unsigned i = 0; i < w->deaths.nprocs; i++)
		if (w->deaths.procs[i].pid == pid)
			return &w->deaths.procs[i];
	return NULL;
}

static struct wcgroup *cgroup_of(struct writer *w, const struct wproc *p)
{
	return p && p->cg >= 0 ? &w->deaths.cgroups[p->cg] : NULL;
}

/* Its OOM kill count now, in its history. */
static void oom_note(struct wcgroup *c, uint64_t now)
{
	unsigned i = c->oom_n++ % WRITER_OOM_READS;

	c->oom_kills[i] = oom_kills_of(c->memory_events);
	c->oom_ns[i] = now;
}

/* Did the cgroup count an OOM kill within WRITER_OOM_SPAN_NS before now?
 * Against the newest read at least that old (else the oldest kept: the
 * one when its first process was seen, or 8 s ago). */
static bool oom_killed(const struct wcgroup *c, uint64_t now)
{
	unsigned n = TD_MIN(c->oom_n, (unsigned)WRITER_OOM_READS);
	uint64_t base = 0;
	bool have = false;

	for (unsigned k = 0; k < n; k++) {
		/* oldest first */
		unsigned i = (c->oom_n - n + k) % WRITER_OOM_READS;

		if (!have || c->oom_ns[i] + WRITER_OOM_SPAN_NS <= now) {
			base = c->oom_kills[i];
			have = true;
		}
	}
	return have && oom_kills_of(c->memory_events) > base;
}

/* The memory.events (v1: memory.oom_control) of pid's cgroup, into path
 * (len bytes); false if there is none readable. */
static bool memory_events_of(pid_t pid, char *path, size_t len)
{
	char cgpath[64], buf[1024];

	snprintf(cgpath, sizeof(cgpath), "/proc/%d/cgroup", (int)pid);
	if (td_read_text(AT_FDCWD, cgpath, buf, sizeof(buf)) < 0)
		return false;
	/* cgroup v2: the "0::" line's memory.events; v1 (a hybrid host):
	 * the memory controller's memory.oom_control, which counts oom_kill
	 * the same way */
	for (int v = 2; v >= 1; v--) {
		const char *key = v == 2 ? "0::" : ":memory:";
		size_t klen = strlen(key);
		char line[1024], *cg = NULL;

		for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
			if (v == 2 ? !strncmp(l, key, klen) :
				     (strstr(l, key) && strstr(l, key) < strchr(l, '\n'))) {
				cg = v == 2 ? l + klen : strstr(l, key) + klen;
				break;
			}
		if (!cg)
			continue;
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(cg, "\n"), cg);
		if ((size_t)snprintf(path, len, "%s%s%s",
			    v == 2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory", line,
			    v == 2 ? "/memory.events" : "/memory.oom_control") < len &&
			access(path, R_OK) == 0)
			return true;
	}
	return false;
}

/* The cgroup whose counts are at path, its users one more: an index in
 * cgroups, or -1 (no memory). */
static int cgroup_use(struct writer *w, const char *path)
{
	size_t i, free_slot = w->deaths.ncgroups;
	struct wcgroup *c;

	for (i = 0; i < w->deaths.ncgroups; i++) {
		c = &w->deaths.cgroups[i];
		if (c->users && !strcmp(c->memory_events, path)) {
			c->users++;
			return (int)i;
		}
		if (!c->users && free_slot == w->deaths.ncgroups)
			free_slot = i;
	}
	if (free_slot == w->deaths.ncgroups) {
		if (td_array_grow(w->deaths.cgroups, w->deaths.capcgroups,
			    w->deaths.ncgroups + 1, 16) < 0)
			return -1;
		w->deaths.ncgroups++;
	}
	c = &w->deaths.cgroups[free_slot];
	*c = (struct wcgroup){ .users = 1 };
	snprintf(c->memory_events, sizeof(c->memory_events), "%s", path);
	oom_note(c, td_now_ns());
	return (int)free_slot;
}

/* A process met for the first time: where its cgroup counts OOM kills. */
void wproc_add(struct writer *w, pid_t pid)
{
	struct wproc *p = wproc_of(w, pid);
	char path[320];

	if (p || !(p = wproc_of(w, 0)))
		return;
	*p = (struct wproc){ .pid = pid, .first_real_ns = td_real_ns(), .cg = -1 };
	if (memory_events_of(pid, path, sizeof(path)))
		p->cg = cgroup_use(w, path);
}

/* Every second: each cgroup's OOM kill count, for oom_killed(). */
void wprocs_refresh(struct writer *w, uint64_t now)
{
	if (now - w->deaths.oom_read_ns < 1000000000u)
		return;
	w->deaths.oom_read_ns = now;
	for (size_t i = 0; i < w->deaths.ncgroups; i++)
		if (w->deaths.cgroups[i].users)
			oom_note(&w->deaths.cgroups[i], now);
}

/* A signal that ends a process abnormally: those that dump core, and
 * SIGKILL (the OOM killer's, systemd's last resort, an operator's). */
static bool fatal_signal(int sig)
{
	switch (sig) {
	case SIGSEGV: case SIGBUS: case SIGABRT: case SIGFPE: case SIGILL: case SIGSYS:
	case SIGTRAP: case SIGQUIT: case SIGXCPU: case SIGXFSZ: case SIGKILL:
		return true;
	}
	return false;
}

/* A thread's stack at its process's death (TD_SAMPLE_DEATH). */
void death_stack(struct writer *w, const struct td_sample *s, uint32_t tid, uint32_t stack)
{
	bool faulting = (s->flags & TD_SAMPLE_SIGINFO) ||
			(w->deaths.last_crash.pid == s->pid && w->deaths.last_crash.tid == s->tid &&
				w->deaths.last_crash.signo == s->signo);

	death_row(w, s, s->time_ns, TCF_PROC_DEATH_STACK, faulting ? TCF_DEATH_FAULTING : 0,
		s->signo, faulting ? w->deaths.last_crash.addr : 0, tid, stack);
	if ((s->flags & TD_SAMPLE_SIGINFO) && w->cfg->follow) {
		/* for the notices of its death (process_died) */
		struct wproc *p = wproc_of(w, s->pid);

		if (p) {
			p->si = s->si;
			p->si_known = true;
		}
	}
	if (w->cfg->mode == REC_MODE_WALL)
		episode_end(w, s->tid);
}

/* After a fatal death: its cause on record, the chunk finished (so that
 * the evidence is on disk and whole), then REPO/emergency-PID-TIME.tcf
 * reaching back to the window or to when the process was first seen. */
static void emergency_dump(struct writer *w, const struct rec_event *e, const struct wproc *p,
	bool oom)
{
	struct rec_notice n = { .kind = REC_NOTICE_EMERGENCY, .status = e->status, .oom = oom,
		.id = { e->pid, e->start_time }, .si_known = p && p->si_known };
	uint64_t now = td_real_ns(), since = 0;

	if (n.si_known)
		n.si = p->si;
	if (oom)
		chunk_writer_oom_kill(w->cw, e->time_ns, (uint32_t)e->pid,
			cgroup_of(w, p) ? oom_kills_of(cgroup_of(w, p)->memory_events) : 0);
	if (w->cfg->emergency_window_ns && now > w->cfg->emergency_window_ns)
		since = now - w->cfg->emergency_window_ns;
	if (p && p->first_real_ns > since)
		since = p->first_real_ns;
	writer_rotate(w, TCF_END_TARGET_CRASH);
	n.err = repo_emergency_into(w->repo, e->pid, since, n.path, sizeof(n.path), &n.chunks,
		&n.bytes);
	writer_notify(w, &n);
}

/* The process e->pid has exited (its exit record is written). */
void process_died(struct writer *w, const struct rec_event *e)
{
	struct wproc *p = wproc_of(w, e->pid);
	struct rec_notice n = { .kind = REC_NOTICE_EXIT, .status = e->status,
		.id = { e->pid, e->start_time } };
	int sig = WIFSIGNALED(e->status) ? WTERMSIG(e->status) : 0;

	if (cgroup_of(w, p) && sig == SIGKILL && oom_killed(cgroup_of(w, p), td_now_ns()))
		n.oom = true;
	if (p && p->si_known) {
		n.si_known = true;
		n.si = p->si;
	}
	if (fatal_signal(sig)) {
		emergency_dump(w, e, p, n.oom);
		n.told = true;
	}
	writer_notify(w, &n);
	if (cgroup_of(w, p))
		cgroup_of(w, p)->users--;
	if (p)
		p->pid = 0;
}
