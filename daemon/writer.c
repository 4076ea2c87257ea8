/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The writer thread: takes copied stacks from the sample ring, unwinds
 * them with the process's cached libdwfl session (rebuilt after exec, or
 * when a pc falls outside every known module after the maps changed),
 * symbolizes through the caches, and appends to the chunk writer of the
 * repository, which this thread alone owns.  It also turns the sampler's
 * events into records, rotates and takes snapshots on request.
 *
 * Publishing: what is buffered becomes a block on disk, readable by any
 * reader and kept by kill -9, whenever the rings run empty (at most every
 * WRITER_PUBLISH_MIN_NS: what is left waits that long at most, not for
 * the next wake), at least every WRITER_PUBLISH_NS even while the rings
 * stay busy, and at every rotation; a chunk's first samples are
 * published as soon as they are written (its header and definitions go
 * first: the chunk writer puts a block's definitions before its
 * samples).  kill -9 so loses what waits in the rings (the sampler
 * drains the kernel's and wakes the writer every 75 ms) and up to 40 ms
 * more: about 120 ms while the threads get a CPU.  Before each block, and before a
 * chunk is finished, the repository checks that nobody changed the file
 * (repo_check); a changed chunk is set aside (chunk_changed).
 *
 * Per-chunk caches (thread ids, location ids) are cleared whenever a new
 * chunk starts, since ids are per chunk.
 *
 * This file is the loop and the chunk; writer-internal.h says which part
 * of the writer lives in which file (stacks, wait episodes, deaths).
 *
 * Owns: struct writer (made by writer_new on the control loop's thread,
 * run here, freed by writer_free after the join), the repository from
 * writer_new on (closed here when the rings are drained, or by
 * writer_free if this thread never ran), the sessions and caches (the
 * parts' sub-structs).
 * Writes in struct rec_shared: kallsyms and kstack_err (writer_new, on
 * the control loop's thread, before the sampler starts), the notices
 * ring (producer), the samples
 * and events rings' heads (consumer), the writer's counters, io_err
 * (writer_fail), crash_acked, exit_acked, maps_read[], fit[] requests,
 * writer_done.  Reads: sampler_done, stop, rotate_req and snapshot_req
 * (taken), targets, capture, perf_err, targets_live, samples_taken and
 * the sampler's loss counters. */
#define _GNU_SOURCE

#include "writer-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/buf.h"
#include "../common/kstack.h"

/* What kill -9 loses is what was taken but not yet in a block on disk:
 * what waits in the kernel's perf ring (drained every 75 ms), in the
 * sample ring (the writer woken every 75 ms), to be unwound (the backlog),
 * and for the next block.  So a block goes out whenever the rings run
 * empty, at most every WRITER_PUBLISH_MIN_NS (each is a write() and a
 * block header; what is taken meanwhile waits for the poll's timeout,
 * set to that, not for the sampler's next wake), and at least every
 * WRITER_PUBLISH_NS while they stay busy; make bench measures the sum
 * (bench_kill9).  The drain and wake's cadence is a trade: its cost is
 * per second, each sample carries it in inverse proportion to the rate.
 * 25 ms cut the median further but cost cpu mode ~50% more CPU per
 * sample at 60 samples/s; 50 ms kept kill -9's 99th percentile at 119
 * ms but cost 1.3-1.5x the daemon's CPU per sample of the build before
 * issue 31 at 99 Hz (goal: 1.3x); 75 ms, 217 ms (goal: 250) and 1.0-1.22x
 * (docs/costs.md). */
#define WRITER_PUBLISH_NS 100000000u	 /* at most this long between blocks */
#define WRITER_PUBLISH_MIN_NS 40000000u /* at least this long between blocks */
/* at most this long between looks at the rings: the sampler wakes the
 * writer when it published (at most every 75 ms, sooner when a ring is a
 * quarter full); a wake of a thread costs ~50-120 us of CPU in a VM */
#define WRITER_POLL_MS 250
/* After its start-up the writer runs at nice WRITER_NICE, the target's
 * own (at nice 10, with two busy loops per CPU, it got a few % of a CPU
 * where wall mode at 999 Hz on 16 threads needs more: its backlog, and
 * what kill -9 lost, grew to seconds).  Once a sample it takes from the
 * ring is older than WRITER_BEHIND_NS it is falling behind: at the
 * sampler's priority (when permitted) until the rings are empty.  Its
 * CPU time is the same either way; only when it runs changes. */
#define WRITER_NICE 0
#define WRITER_BEHIND_NS 60000000u

static void new_chunk_caches(struct writer *w)
{
	w->names.n = 0;
	td_map_clear(&w->ids.threads);
	td_map_clear(&w->ids.locs);
	td_map_clear(&w->ids.klocs);
	memset(w->ids.end_loc, 0, sizeof(w->ids.end_loc));
	w->ids.preempted_loc = 0;
	w->ids.nomaps_loc = 0;
	w->ids.denied_loc = 0;
	w->ids.budget_loc = 0;
}

/* The command line of target pid into the chunk (target.PID.cmdline; the
 * report keeps the latest of a PID's).  id: the process it must be, read
 * after the cmdline: once the target is gone its PID cannot name it
 * again, so a match means the read was of the target, not of a later
 * process of that PID.  NULL for a child (record -- CMD), whose start time
 * the writer does not know: its PID names it until its real parent reaps
 * it too, later than the tracer, so a PID reused within the writer's lag
 * would need a PID space gone round in that time. */
static void target_cmdline(struct writer *w, pid_t pid, const struct td_proc_id *id)
{
	char path[64], cmd[256], key[64];
	int n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = td_read_text(AT_FDCWD, path, cmd, sizeof(cmd));
	if (id && td_proc_id_check(id) != 1)
		n = 0;
	for (int k = 0; k < n - 1; k++)
		if (!cmd[k])
			cmd[k] = ' ';
	if (n > 0) {
		snprintf(key, sizeof(key), "target.%d.cmdline", (int)pid);
		chunk_writer_meta(w->cw, key, cmd);
	}
}

static void chunk_meta(struct writer *w)
{
	char buf[256];
	const struct rec_config *cfg = w->cfg;

	chunk_writer_meta(w->cw, "tracerd.version", TD_VERSION);
	snprintf(buf, sizeof(buf), "%u", cfg->hz);
	chunk_writer_meta(w->cw, "sampling.hz", buf);
	chunk_writer_meta(w->cw, "sampling.mode", cfg->mode == REC_MODE_WALL ? "wall" : "cpu");
	if (cfg->mode == REC_MODE_WALL && w->sh->offcpu) {
		/* intervals off a CPU from the kernel's switches; /proc for
		 * the wait episodes and the threads asleep since the attach */
		chunk_writer_meta(w->cw, "sampling.capture", "perf+switches");
	} else if (cfg->mode == REC_MODE_WALL && w->sh->capture == REC_CAPTURE_PERF) {
		chunk_writer_meta(w->cw, "sampling.capture", "proc+perf");
	} else if (cfg->mode == REC_MODE_WALL) {
		chunk_writer_meta(w->cw, "sampling.capture", "proc+ptrace");
	} else if (w->sh->capture == REC_CAPTURE_PERF) {
		chunk_writer_meta(w->cw, "sampling.capture", "perf");
	} else {
		chunk_writer_meta(w->cw, "sampling.capture", "ptrace");
		if (w->sh->perf_err) {
			snprintf(buf, sizeof(buf),
				"perf_event_open: %s; ptrace stops land where a thread next "
				"enters the kernel when it runs on another CPU",
				td_strerror(w->sh->perf_err));
			chunk_writer_meta(w->cw, "sampling.capture.note", buf);
		}
	}
	if (gethostname(buf, sizeof(buf)) == 0)
		chunk_writer_meta(w->cw, "host", buf);
	for (unsigned i = 0; i < cfg->npids; i++)
		target_cmdline(w, cfg->pids[i], &w->sh->targets[i]);
	{
		struct timespec m, re;

		clock_gettime(CLOCK_MONOTONIC, &m);
		clock_gettime(CLOCK_REALTIME, &re);
		chunk_writer_clock_sync(w->cw,
			(uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec,
			(uint64_t)re.tv_sec * 1000000000u + (uint64_t)re.tv_nsec);
	}
}

int writer_fail(struct writer *w, int err)
{
	int first = 0;

	if (err >= 0)
		err = -EIO; /* failed, for a reason nobody kept */
	/* a later error is most often a consequence of the first (a
	 * rotation after a failed write): the first says what to fix */
	if (atomic_compare_exchange_strong(&w->sh->io_err, &first, err))
		return err;
	return first;
}

/* The current chunk's writer, noticing a new chunk. */
struct chunk_writer *current_chunk(struct writer *w)
{
	struct chunk_writer *cw = repo_writer(w->repo);

	if (!cw) {
		writer_fail(w, repo_error(w->repo));
		return NULL;
	}
	if (cw != w->cw) {
		w->cw = cw;
		w->cw_published = false;
		new_chunk_caches(w);
		chunk_meta(w);
	}
	return cw;
}

static void record_lost(struct writer *w);

/* Another process changed the chunk being written (repo_check): what it
 * held is lost and its file is left unfinished under its .part name; the
 * next write starts a new chunk.  Said to the control loop, counted. */
static void chunk_changed(struct writer *w)
{
	struct rec_notice n = { .kind = REC_NOTICE_CHANGED };
	struct repo_changed c;

	/* the open wait episodes restart their per-chunk state; what they
	 * write goes with the chunk */
	episodes_close_chunk(w);
	w->cw = NULL; /* the next current_chunk() starts the caches anew */
	if (repo_abandon(w->repo, &c) < 0)
		return;
	atomic_fetch_add(&w->sh->chunks_changed, 1);
	atomic_fetch_add(&w->sh->lost_changed, c.samples);
	snprintf(n.path, sizeof(n.path), "%s/%s", repo_path(w->repo), c.name);
	n.bytes = c.written;
	n.samples = c.samples;
	n.size = c.size;
	n.replaced = c.replaced;
	writer_notify(w, &n);
}

/* The one way a chunk of the writer's ends: what it lost on record, the
 * wait episodes still open written up to its end, then the repository
 * finishes it (reason: TCF_END_*; WRITER_ROTATE_DUE: only if it is due by
 * size, age or a full dictionary, and repo_tick says which).  The next
 * write starts a new chunk (current_chunk).  A failure of the repository
 * ends recording (writer_fail); a failed retention of old chunks does
 * not: the chunk is whole. */
void writer_rotate(struct writer *w, int reason)
{
	uint64_t now = td_now_ns();
	int r;

	if (reason == WRITER_ROTATE_DUE && !repo_due(w->repo, now))
		return;
	if (repo_check(w->repo) < 0) {
		chunk_changed(w);
		return;
	}
	record_lost(w);
	episodes_close_chunk(w);
	if (reason == WRITER_ROTATE_DUE)
		r = repo_tick(w->repo, now);
	else
		r = repo_rotate(w->repo, reason);
	if (r == -TD_E_CHANGED) /* changed while its end was written */
		chunk_changed(w);
	else if (r < 0 && repo_error(w->repo))
		writer_fail(w, repo_error(w->repo));
	w->cw = NULL; /* the next current_chunk() starts the caches anew */
}

/* Commit what is buffered as a block, rotate if the chunk is full or old.
 * An error stays in the repository (repo_error), which the loop reports.
 * A chunk another process changed since the last publish is not written
 * to again (chunk_changed). */
static void publish(struct writer *w, uint64_t now)
{
	w->published_ns = now;
	w->unpublished = false;
	if (!w->cw)
		return;
	if (repo_check(w->repo) < 0) {
		chunk_changed(w);
		return;
	}
	if (chunk_writer_flush(w->cw) == 0 && chunk_writer_samples(w->cw)) {
		w->cw_published = true;
		if (w->startup) {
			/* from now on the writer shares the CPU with the
			 * target as an equal (but set_behind) */
			setpriority(PRIO_PROCESS, 0, WRITER_NICE);
			w->startup = false;
		}
	}
	writer_rotate(w, WRITER_ROTATE_DUE);
	atomic_store(&w->sh->bytes_written, repo_bytes_written(w->repo));
}

/* Behind (a sample older than WRITER_BEHIND_NS in the ring) or caught up
 * (the rings empty): the thread's nice value follows. */
static void set_behind(struct writer *w, bool behind)
{
	if (w->startup || w->behind == behind)
		return;
	w->behind = behind;
	setpriority(PRIO_PROCESS, 0, behind ? -10 : WRITER_NICE); /* 0: this thread */
}

/* Thread t (chunk id id) is named name since now: a rename. */
static void renamed(struct writer *w, uint32_t id, struct tname *t, const char *name,
	uint64_t now)
{
	chunk_writer_thread_event(w->cw, now, id, TCF_THREAD_RENAME, chunk_writer_string(w->cw, name));
	snprintf(t->name, sizeof(t->name), "%s", name);
}

/* The chunk's id of thread tid, named name (NULL: read it from /proc now;
 * a name that differs from the one known is recorded as a rename). */
uint32_t thread_id_named(struct writer *w, pid_t pid, pid_t tid, const char *name)
{
	uint32_t id = map_get(&w->ids.threads, (uint64_t)(uint32_t)tid + 1);
	struct td_task_info info;

	if (id) {
		struct tname *t = id < w->names.cap ? &w->names.t[id] : NULL;

		if (name && t && t->tid == tid && strncmp(t->name, name, sizeof(t->name) - 1))
			renamed(w, id, t, name, td_now_ns());
		return id;
	}
	struct known_name *k = &w->names.known[(uint32_t)tid % TD_ARRAY_SIZE(w->names.known)];

	if (name)
		snprintf(info.name, sizeof(info.name), "%s", name);
	else if (td_task_info_read(pid, tid, &info) == 0)
		;
	else if (k->tid == tid) /* gone (a death's stack): its name of an earlier chunk */
		memcpy(info.name, k->name, sizeof(info.name));
	else
		snprintf(info.name, sizeof(info.name), "?");
	if (strcmp(info.name, "?")) {
		k->tid = tid;
		memcpy(k->name, info.name, sizeof(k->name));
	}
	id = chunk_writer_thread(w->cw, (uint32_t)tid, (uint32_t)pid, info.name);
	if (id)
		map_put(&w->ids.threads, (uint64_t)(uint32_t)tid + 1, id);
	if (id >= w->names.cap) {
		size_t old = w->names.cap;

		/* no memory: the thread keeps its id, only its renames go
		 * unseen */
		if (td_array_grow(w->names.t, w->names.cap, (size_t)id + 1, 64) == 0)
			memset(w->names.t + old, 0, (w->names.cap - old) * sizeof(*w->names.t));
	}
	if (id && id < w->names.cap) {
		w->names.t[id] = (struct tname){ .pid = pid, .tid = tid };
		memcpy(w->names.t[id].name, info.name, sizeof(info.name));
		if (id >= w->names.n)
			w->names.n = id + 1;
	}
	return id;
}

uint32_t thread_id(struct writer *w, pid_t pid, pid_t tid)
{
	return thread_id_named(w, pid, tid, NULL);
}

/* Every 2 s, re-read the names of up to 256 threads of this chunk (round
 * robin) and record a rename (pthread_setname_np, prctl) as it is seen. */
static void check_renames(struct writer *w, uint64_t now)
{
	if (!w->cw || now - w->names.checked_ns < 2000000000u)
		return;
	w->names.checked_ns = now;
	for (unsigned k = 0; k < 256 && w->names.n > 1; k++) {
		struct td_task_info info;
		struct tname *t;
		size_t i = 1 + w->names.next++ % (w->names.n - 1);

		t = &w->names.t[i];
		if (!t->tid || td_task_info_read(t->pid, t->tid, &info) < 0)
			continue;
		if (strcmp(info.name, t->name))
			renamed(w, (uint32_t)i, t, info.name, now);
		if (k + 1 >= w->names.n - 1)
			break;
	}
}

static enum tcf_state state_of(const struct td_sample *s, enum rec_mode mode)
{
	/* wall mode: a tick of a thread in a job-control stop.  A cpu
	 * sample is CPU time used, never time stopped (a stop that found
	 * the thread entering its group-stop stands for the time it ran
	 * before). */
	if ((s->flags & TD_SAMPLE_GROUP_STOPPED) && mode == REC_MODE_WALL)
		return TCF_STATE_STOPPED;
	if (s->flags & TD_SAMPLE_RUNNABLE)
		return TCF_STATE_RUNNABLE;
	if (s->flags & TD_SAMPLE_DISK)
		return TCF_STATE_DISK;
	/* blocked in a system call, copied without a stop; a thread a stop
	 * found in a system call had just entered one */
	if (s->flags & (TD_SAMPLE_NOSTOP | TD_SAMPLE_IN_SYSCALL))
		return TCF_STATE_SLEEPING;
	return TCF_STATE_ONCPU; /* perf samples, and stops in user mode */
}

void writer_notify(struct writer *w, const struct rec_notice *n)
{
	struct rec_notice *slot = ring_reserve(&w->sh->notices);

	if (!slot)
		return; /* the service rescans /proc: an exit is not lost for good */
	*slot = *n;
	ring_publish(&w->sh->notices);
	wake_post(&w->sh->control_wake);
}

/* The periods of the profile sample s stands for, as the sampler counted
 * it in samples_taken: none for a lock owner's stack (for the waits
 * alone), a death's stack (a record) or a copy whose time its intervals
 * off a CPU carry (NO_ROWS); its weight if weighted; else one.  Each is
 * written as a row or counted in one of the unwritten_* counters. */
static uint32_t periods_of(const struct td_sample *s)
{
	if (s->flags & (TD_SAMPLE_OWNER | TD_SAMPLE_DEATH | TD_SAMPLE_NO_ROWS))
		return 0;
	return (s->flags & TD_SAMPLE_WEIGHTED) ? s->weight : 1;
}

static void count_unwritten(_Atomic uint64_t *why, uint64_t n)
{
	if (n)
		atomic_fetch_add_explicit(why, n, memory_order_relaxed);
}

void do_sample(struct writer *w, const struct td_sample *s)
{
	uint32_t stack, tid, written = 0;

	if (!current_chunk(w)) {
		count_unwritten(&w->sh->unwritten_failed, periods_of(s));
		return;
	}
	if (s->flags & TD_SAMPLE_OWNER) {
		/* a lock's owner stopped for its stack, or the kernel's early
		 * sample of it of weight 0: no period of the profile, a stack
		 * for the waits (writer-waits.c) */
		owner_seen(w, s, stack_of(w, s));
		return;
	}
	/* time a thread waited for a CPU before any stack of it was seen:
	 * where it was is unknown, and a frame saying so would only clutter
	 * the start of a recording */
	if ((s->flags & TD_SAMPLE_RUNNABLE) && (s->flags & TD_SAMPLE_REPEAT)) {
		struct saved *sv = saved_of(w, s->tid, false);

		if (!sv) {
			count_unwritten(&w->sh->unwritten_runnable, periods_of(s));
			return;
		}
	}
	stack = stack_of(w, s);
	tid = thread_id_named(w, s->pid, s->tid, (s->flags & TD_SAMPLE_NAMED) ? s->comm : NULL);
	if (s->flags & TD_SAMPLE_DEATH) {
		/* where it was when its process died: a record, not a sample */
		death_stack(w, s, tid, stack);
		return;
	}
	if (s->flags & TD_SAMPLE_HELD)
		crash_stack(w, s, tid, stack);
	/* an interval off a CPU, taken at its start, is no look at the
	 * thread now: the ticks' copies follow its waits */
	if (w->cfg->mode == REC_MODE_WALL && !(s->flags & TD_SAMPLE_OFFCPU)) {
		/* blocked (copied, or repeated unchanged): a period of a wait;
		 * woken, it waits for a CPU, not for the object: runnable;
		 * in a job-control stop, it waits for SIGCONT: no wait of
		 * its call's (a lock's owner is not holding it up) */
		if ((s->flags & TD_SAMPLE_NOSTOP) &&
			!(s->flags & (TD_SAMPLE_RUNNABLE | TD_SAMPLE_GROUP_STOPPED)))
			episode_sample(w, s, stack);
		else if (!(s->flags & TD_SAMPLE_HELD))
			episode_end(w, s->tid);
		owner_seen(w, s, stack);
	} else if (w->cfg->mode == REC_MODE_WALL && !(s->flags & TD_SAMPLE_REPEAT)) {
		/* a switch out: if after the copy its episode was classified
		 * from, the thread ran since and that wait is over */
		episode_switched_out(w, s->tid, s->time_ns);
	}
	if (s->flags & TD_SAMPLE_NO_ROWS)
		return; /* its time is in its OFFCPU samples */
	/* a weighted sample: once per period of time it stands for; of an
	 * interval off a CPU, the last periods waited for one once woken */
	{
		uint32_t n = (s->flags & TD_SAMPLE_WEIGHTED) ? s->weight : 1;
		uint32_t woken = (s->flags & TD_SAMPLE_OFFCPU) ? TD_MIN(s->runnable, n) : 0;

		for (uint32_t i = 0; i < n; i++)
			if (chunk_writer_sample(w->cw, s->time_ns, tid,
				    i < n - woken ? state_of(s, w->cfg->mode) : TCF_STATE_RUNNABLE, stack, NULL,
				    0) == 0)
				written++;
		atomic_fetch_add_explicit(&w->sh->samples_written, written, memory_order_relaxed);
		count_unwritten(&w->sh->unwritten_failed, n - written);
	}
	if (!w->cw_published)
		publish(w, td_now_ns()); /* the chunk's first samples: at once */
}

/* Is pid one of the configured targets (record's --pid, or CMD)? */
static bool is_cfg_target(const struct writer *w, pid_t pid)
{
	for (unsigned i = 0; i < w->cfg->npids; i++)
		if (w->cfg->pids[i] == pid)
			return true;
	return false;
}

static void do_event(struct writer *w, const struct rec_event *e)
{
	if (e->kind == REC_EV_EXITING) {
		/* every sample taken before the exit is unwound, its maps
		 * read while it was held: let it go */
		atomic_store(&w->sh->exit_acked, e->handshake_id);
		wake_post(&w->sh->sampler_wake);
		return;
	}
	if ((e->kind == REC_EV_THREAD_NEW || e->kind == REC_EV_EXEC) && e->image)
		td_map_set(&w->stacks.images, (uint64_t)(uint32_t)e->pid, e->image);
	if (e->kind == REC_EV_REPEAT && !current_chunk(w)) {
		struct td_sample smp = { .flags = (uint32_t)e->status };

		count_unwritten(&w->sh->unwritten_failed, periods_of(&smp));
		return;
	}
	if (!current_chunk(w))
		return;
	switch (e->kind) {
	case REC_EV_THREAD_NEW:
		if (w->cfg->follow)
			wproc_add(w, e->pid);
		else if (e->tid == e->pid && w->cfg->children == REC_CHILDREN_FOLLOW &&
			 !is_cfg_target(w, e->pid))
			target_cmdline(w, e->pid, NULL); /* a child's first thread */
		chunk_writer_thread_event(w->cw, e->time_ns, thread_id(w, e->pid, e->tid),
			TCF_THREAD_START, 0);
		break;
	case REC_EV_THREAD_EXIT:
		chunk_writer_thread_event(w->cw, e->time_ns, thread_id(w, e->pid, e->tid),
			TCF_THREAD_EXIT, (uint64_t)(uint32_t)e->status);
		episode_end(w, e->tid);
		td_map_remove(&w->waits.owner_wait, (uint64_t)(uint32_t)e->tid);
		saved_drop(w, e->tid);
		break;
	case REC_EV_EXEC: {
		uint32_t was = map_get(&w->ids.threads, (uint64_t)(uint32_t)e->tid + 1), id;

		if (w->cfg->children == REC_CHILDREN_FOLLOW && !is_cfg_target(w, e->pid))
			target_cmdline(w, e->pid, NULL); /* what a child runs now */
		episode_end(w, e->tid);
		session_drop(w, e->pid);
		td_map_clear(&w->ids.threads); /* names change with the image */
		id = thread_id(w, e->pid, e->tid);
		/* a report keeps a thread's first definition: the new image's
		 * name (a child's, once "sh" or "go") is a rename of it */
		if (was && id && was != id && was < w->names.cap && id < w->names.cap &&
			strcmp(w->names.t[was].name, w->names.t[id].name)) {
			char name[sizeof(w->names.t[id].name)];

			memcpy(name, w->names.t[id].name, sizeof(name));
			renamed(w, was, &w->names.t[was], name, e->time_ns);
		}
		chunk_writer_process_event(w->cw, e->time_ns, (uint32_t)e->pid, TCF_PROC_EXEC, 0, 0,
			0, id, 0);
		break;
	}
	case REC_EV_CRASH:
		crash_begin(w, e);
		break;
	case REC_EV_REPEAT: {
		/* a sample without stack bytes: the header is all there is */
		struct td_sample smp = { .pid = e->pid, .tid = e->tid, .time_ns = e->time_ns,
			.flags = (uint32_t)e->status };

		memcpy(smp.futex, e->futex, sizeof(smp.futex));

		do_sample(w, &smp);
		break;
	}
	case REC_EV_HELD:
		episode_held(w, e->tid, e->futex, e->time_ns);
		break;
	case REC_EV_CRASH_DONE:
		crash_done(w, e);
		break;
	case REC_EV_PROCESS_EXIT:
		chunk_writer_process_event(w->cw, e->time_ns, (uint32_t)e->pid, TCF_PROC_EXIT,
			WIFEXITED(e->status) ? WEXITSTATUS(e->status) : -1,
			WIFSIGNALED(e->status) ? WTERMSIG(e->status) : 0, 0, 0, 0);
		session_drop(w, e->pid);
		maps_forget(w, e->pid);
		if (w->cfg->follow) {
			process_died(w, e);
		} else {
			/* the front end of record -- CMD exits with CMD's status */
			struct rec_notice n = { .kind = REC_NOTICE_EXIT, .status = e->status,
				.id = { e->pid, e->start_time } };

			writer_notify(w, &n);
		}
		break;
	default:
		break;
	}
}

/* Write a snapshot into REPO/snapshots/ and tell the control loop how it
 * went (dropped if the notice ring is full: the file is there anyway). */
static void take_snapshot(struct writer *w)
{
	struct rec_notice *n = ring_reserve(&w->sh->notices);
	struct rec_notice local;
	unsigned repaired;

	if (!n)
		n = &local;
	*n = (struct rec_notice){ .kind = REC_NOTICE_SNAPSHOT };
	/* flushes the chunk, writes REPO/snapshots/ under a new name,
	 * relative to the repository's descriptor */
	n->err = repo_snapshot_into(w->repo, n->path, sizeof(n->path), &n->chunks, &repaired,
		&n->bytes);
	if (n->err < 0)
		snprintf(n->path, sizeof(n->path), "%s/snapshots", repo_path(w->repo));
	if (n != &local) {
		ring_publish(&w->sh->notices);
		wake_post(&w->sh->control_wake);
	}
}

/* Wall mode's kernel stacks of blocked threads, where the kernel shows
 * them (/proc/TID/stack, root): the kernel's symbols, indexed by name,
 * lent to the sampler (rec_shared.kallsyms), or why not (kstack_err). */
static void kstack_share(struct writer *w)
{
	int e = td_kstack_permitted();

	if (!e && !w->stacks.kallsyms && !w->stacks.kallsyms_err)
		w->stacks.kallsyms_err = sym_kallsyms_load(NULL, &w->stacks.kallsyms);
	if (!e)
		e = w->stacks.kallsyms_err;
	if (!e)
		e = sym_kallsyms_index(w->stacks.kallsyms);
	w->sh->kstack_err = e;
	if (!e)
		w->sh->kallsyms = w->stacks.kallsyms;
}

int writer_new(struct rec_shared *sh, struct repo *repo, struct writer **ret_writer)
{
	struct writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	if (sym_cache_new(&w->stacks.cache) < 0) {
		free(w);
		return -ENOMEM;
	}
	w->sh = sh;
	w->cfg = sh->cfg;
	w->deaths.nprocs = rec_max_procs(sh->cfg);
	w->deaths.procs = calloc(w->deaths.nprocs, sizeof(*w->deaths.procs));
	if (!w->deaths.procs) {
		sym_cache_free(w->stacks.cache);
		free(w);
		return -ENOMEM;
	}
	w->repo = repo;
	w->startup = true;
	/* the kernel's symbols, where perf may give kernel frames: read here,
	 * before the sampler starts (~0.1 s of CPU), not at the first kernel
	 * frame, when it would take a CPU from the sampler's drains (with
	 * switch samples, their rings then overflowed: measured) */
	if (!w->cfg->no_kernel && w->cfg->capture != REC_CAPTURE_PTRACE)
		w->stacks.kallsyms_err = sym_kallsyms_load(NULL, &w->stacks.kallsyms);
	/* wall mode: the sampler names blocked threads' kernel stacks
	 * through this table (sh->kallsyms), with any capture */
	if (!w->cfg->no_kernel && w->cfg->mode == REC_MODE_WALL)
		kstack_share(w);
	*ret_writer = w;
	return 0;
}

/* The samples lost since the last call, as LOST records in the current
 * chunk: what the summary counts, a report of the recording counts too
 * (ring full: the sample ring or the kernel's perf ring; not stopped: a
 * stop that did not come within its round; CPU missed: periods of CPU
 * time a ptrace capture never caught running). */
static void record_lost(struct writer *w)
{
	struct rec_shared *sh = w->sh;
	const uint64_t now[3] = { atomic_load(&sh->lost_ring) + atomic_load(&sh->lost_kernel),
		atomic_load(&sh->lost_not_stopped), atomic_load(&sh->cpu_missed) };
	static const enum tcf_lost_reason reason[3] = { TCF_LOST_RING_FULL,
		TCF_LOST_NOT_STOPPED, TCF_LOST_CPU_MISSED };

	for (int i = 0; i < 3; i++) {
		if (now[i] <= w->lost_recorded[i] || !current_chunk(w))
			continue;
		if (chunk_writer_lost(w->cw, now[i] - w->lost_recorded[i], reason[i]) == 0)
			w->lost_recorded[i] = now[i];
	}
}

void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct rec_shared *sh = w->sh;
	int reason = TCF_END_STOP;

	/* The first stack costs the most: the target's debuginfo is read
	 * (~0.1 s of CPU to inflate glibc's compressed one, a few ms once
	 * the debuginfo cache holds it inflated).  At nice 10 on a
	 * busy machine it waited seconds, with nothing on disk for kill -9
	 * to leave; so until its first samples are published this thread
	 * runs at the sampler's priority (when permitted), then at
	 * WRITER_NICE (publish()), or the sampler's again while it falls
	 * behind (set_behind). */
	setpriority(PRIO_PROCESS, (id_t)gettid(), -10);
	w->published_ns = td_now_ns();
	pthread_setname_np(pthread_self(), "tracerd-write");
	for (;;) {
		struct pollfd pfd = { sh->writer_wake.fd, POLLIN, 0 };
		bool done = atomic_load(&sh->sampler_done);
		bool hurry = atomic_load(&sh->stop) >= 2;
		uint64_t now;
		int timeout;

		/* Events and samples in time order: a sample taken before an
		 * exec must be unwound against the old image, before the exec
		 * drops its session. */
		for (;;) {
			struct rec_event *e = ring_peek(&sh->events);
			struct td_sample *smp = ring_peek_bytes(&sh->samples);

			if (e && (!smp || e->time_ns <= smp->time_ns)) {
				do_event(w, e);
				ring_pop(&sh->events);
			} else if (smp) {
				now = td_now_ns();
				if (now > smp->time_ns && now - smp->time_ns > WRITER_BEHIND_NS)
					set_behind(w, true);
				if (!hurry)
					do_sample(w, smp);
				else
					count_unwritten(&sh->unwritten_hurried, periods_of(smp));
				ring_pop_bytes(&sh->samples);
			} else {
				break;
			}
			w->unpublished = true;
			/* a busy ring does not hold back what is written */
			now = td_now_ns();
			if (now - w->published_ns >= WRITER_PUBLISH_NS)
				publish(w, now);
		}
		if (ring_peek(&sh->events) || ring_peek_bytes(&sh->samples))
			continue;
		set_behind(w, false);
		if (!atomic_load(&sh->startup_samples) && atomic_load(&sh->samples_written)) {
			/* the sessions are built: what follows is the steady state */
			struct rusage ru;

			getrusage(RUSAGE_SELF, &ru);
			atomic_store(&sh->startup_cpu_us,
				(uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
					(uint64_t)ru.ru_stime.tv_sec * 1000000u +
					(uint64_t)ru.ru_stime.tv_usec);
			atomic_store(&sh->startup_samples, atomic_load(&sh->samples_taken));
			debug_stats_store(w);
		}
		now = td_now_ns();
		if (atomic_exchange(&sh->rotate_req, 0))
			writer_rotate(w, TCF_END_ROTATE);
		if (atomic_exchange(&sh->snapshot_req, 0))
			take_snapshot(w);
		check_renames(w, now);
		if (w->cfg->follow)
			wprocs_refresh(w, now);
		/* the rings are empty: what they held goes to disk now */
		if (now - w->published_ns >= WRITER_PUBLISH_MIN_NS) {
			record_lost(w);
			publish(w, now);
		}
		if (repo_error(w->repo))
			writer_fail(w, repo_error(w->repo));
		if (atomic_load(&sh->io_err)) {
			/* disk full and the like: the sampler stops on io_err;
			 * what is written (whole blocks) stays */
			wake_post(&sh->sampler_wake);
		}
		if (done)
			break;
		/* wake for the next publish: what waits for it goes out
		 * WRITER_PUBLISH_MIN_NS after the last, not at the next wake
		 * (the sampler's, every S_WRITER_NS) nor WRITER_PUBLISH_NS;
		 * else to look at the rings */
		timeout = (int)((w->published_ns +
					(w->unpublished ? WRITER_PUBLISH_MIN_NS : WRITER_PUBLISH_NS) -
					now + 999999) /
			1000000);
		timeout = TD_MAX(1, TD_MIN(WRITER_POLL_MS, timeout));
		if (poll(&pfd, 1, timeout) > 0)
			wake_drain(&sh->writer_wake);
	}
	if (atomic_load(&sh->targets_live) <= 0)
		reason = TCF_END_TARGET_EXIT;
	if (!atomic_load(&sh->io_err))
		writer_rotate(w, reason); /* first, so that its size is counted */
	atomic_store(&sh->bytes_written, repo_bytes_written(w->repo));
	repo_close(w->repo, reason);
	w->repo = NULL;
	debug_stats_store(w);
	atomic_store(&sh->writer_done, 1);
	wake_post(&sh->control_wake);
	return NULL;
}

void writer_discard_repo(struct writer *w)
{
	repo_discard(w->repo);
	w->repo = NULL;
}

void writer_free(struct writer *w)
{
	if (!w)
		return;
	if (w->repo)
		repo_close(w->repo, TCF_END_STOP);
	sessions_free(w);
	sym_cache_free(w->stacks.cache);
	td_map_free(&w->ids.threads);
	td_map_free(&w->stacks.images);
	td_map_free(&w->ids.locs);
	td_map_free(&w->ids.klocs);
	sym_kallsyms_free(w->stacks.kallsyms);
	td_map_free(&w->stacks.last);
	td_map_free(&w->waits.idx);
	td_map_free(&w->waits.owner_wait);
	free(w->waits.eps);
	for (size_t i = 0; i < w->stacks.nsaved; i++) {
		free(w->stacks.saved[i].pc);
		free(w->stacks.saved[i].act);
		free(w->stacks.saved[i].kip);
		free(w->stacks.saved[i].pyf);
		free(w->stacks.saved[i].pynative);
	}
	free(w->stacks.saved);
	free(w->names.t);
	free(w->deaths.procs);
	free(w->deaths.cgroups);
	free(w);
}
