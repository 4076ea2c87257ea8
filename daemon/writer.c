/* The writer thread: takes copied stacks from the sample ring, unwinds
 * them with the process's cached libdwfl session (rebuilt after exec, or
 * when a pc falls outside every known module after the maps changed),
 * symbolizes through the caches, and appends to the chunk writer of the
 * repository, which this thread alone owns.  It also turns the sampler's
 * events into records, rotates and takes snapshots on request.
 *
 * Publishing: what is buffered becomes a block on disk, readable by any
 * reader and kept by kill -9, at least every WRITER_PUBLISH_NS, even while
 * the rings stay busy, and at every rotation; a chunk's first samples
 * are published as soon as they are written (its header and definitions
 * go first: the chunk writer puts a block's definitions before its
 * samples).  kill -9 so loses what was taken in the last 250 ms, plus
 * what still waits in the rings (the sampler drains the kernel's and
 * wakes the writer every 100 ms).
 *
 * Per-chunk caches (thread ids, location ids) are cleared whenever a new
 * chunk starts, since ids are per chunk.
 *
 * Owns: struct writer (made by writer_new on the control loop's thread,
 * run here, freed by writer_free after the join), the repository from
 * writer_new on (closed here when the rings are drained, or by
 * writer_free if this thread never ran), the sessions and caches.
 * Writes in struct rec_shared: the notices ring (producer), the samples
 * and events rings' heads (consumer), the writer's counters, io_err,
 * crash_acked, grow[] requests, writer_done.  Reads: sampler_done, stop,
 * rotate_req and snapshot_req (taken), targets, targets_live,
 * samples_taken. */
#define _GNU_SOURCE
#include "daemon-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../chunkfmt/chunkfmt.h"
#include "../common/map.h"
#include "../symbolize/symbolize.h"
#include "waits.h"

/* An OOM kill counted at most this long before a SIGKILL death is its
 * cause: the kernel counts the kill first, and the victim may take
 * seconds to die (the OOM reaper steps in after 2 s) */
#define WRITER_OOM_SPAN_NS 5000000000ull
#define WRITER_OOM_READS 8 /* a second apart: more than the span */
#define WRITER_PUBLISH_NS 250000000u /* at most this long between blocks */
/* at most this long between looks at the rings: the sampler wakes the
 * writer when it published (at most every 100 ms, sooner when a ring is a
 * quarter full); a wake of a thread costs ~50-120 us of CPU in a VM */
#define WRITER_POLL_MS 250

struct session {
	pid_t pid;
	struct sym_session *s;
	uint64_t built_ns;
	/* no renewal at once for this build: renew_due read the maps for
	 * it, or it is a renewal that left the pc outside every module */
	bool renew_later;
};

/* owns: repo (until writer_main closes it), cache, sess, the maps, names;
 * borrows: sh, cfg */
struct writer {
	struct rec_shared *sh;
	const struct rec_config *cfg;
	struct repo *repo;
	struct chunk_writer *cw; /* the current chunk's, borrowed from repo */
	bool cw_published;	 /* a block with samples of cw is on disk */
	bool startup;		 /* no sample published yet: the sampler's priority */
	uint64_t published_ns;	 /* the last publish() */
	struct sym_cache *cache;
	struct session sess[REC_MAX_PIDS * 4];
	struct sym_debug_stats debug_gone; /* of the sessions freed */
	struct td_map threads, locs;
	uint32_t end_loc[SYM_END_COUNT];
	uint32_t preempted_loc; /* preempted_location() */
	uint32_t nomaps_loc;	/* nomaps_stack() */
	/* each process's image number (pid -> struct target's image), as
	 * THREAD_NEW and EXEC tell it, for rec_shared.maps_read */
	struct td_map images;
	uint64_t lost_recorded[2]; /* record_lost(): ring full, not stopped */
	struct sym_unwound u;
	struct sym_frame frames[SYM_MAX_FRAMES];
	uint32_t loc_ids[SYM_MAX_FRAMES + 1];
	int end_reason;
	struct rec_event crash; /* the crash being written, kind REC_EV_CRASH */
	struct rec_event last_crash; /* the latest crash: its thread faulted */
	/* the latest name seen of a tid (by tid % size), for a thread defined
	 * in a new chunk once it is gone: the stacks of a death */
	struct known_name {
		pid_t tid;
		char name[16];
	} known[1024];
	/* names of the threads this chunk defined, for renames; by thread id */
	struct tname {
		pid_t pid, tid;
		char name[16];
	} *names;
	size_t nnames, capnames, rename_next;
	uint64_t last_rename_check;
	/* The last unwind of each thread copied while blocked, which a
	 * REPEAT sample (unchanged since) reuses without unwinding: tid ->
	 * index + 1 in saved (not per chunk: the pcs are re-resolved in
	 * whichever chunk is current).  Freed when the thread exits. */
	struct td_map last;
	struct saved {
		pid_t tid; /* 0: free */
		unsigned n;
		enum sym_end end;
		bool perf; /* from a perf sample (it ran), not a blocked copy */
		uint64_t *pc;
		bool *act;
	} *saved;
	size_t nsaved, capsaved;
	/* wall mode: each thread's wait episode (tid -> index + 1 in eps) */
	struct td_map ep_idx;
	struct td_map owner_wait; /* owners whose next sample episodes wait for */
	struct episode *eps;
	size_t neps, capeps;
	/* follow (a service's recording): the processes seen, for their
	 * deaths; a slot with pid 0 is free */
	struct wproc {
		pid_t pid;
		uint64_t first_real_ns; /* when first seen (realtime) */
		char memory_events[320]; /* its cgroup's memory.events (v1: oom_control), "" if none */
		/* oom_kill there at the last reads (one a second), newest at
		 * [oom_n - 1 mod WRITER_OOM_READS], and when */
		uint64_t oom_kills[WRITER_OOM_READS], oom_ns[WRITER_OOM_READS];
		unsigned oom_n;
	} procs[TARGETS_MAX];
	uint64_t oom_read_ns; /* the last refresh of every oom_kills */
};

/* A wait episode in progress: from the first tick that found the thread
 * blocked on an object (a fresh copy: it ran since its last one) until it
 * is seen running, copied again, or gone.  Each blocked sample of it is a
 * period of waiting.  What the waiter called and the names on its stack
 * are kept to read the owner again whenever the lock's words, read at
 * the tick, change.  An owner's stack is the one of its first sample after
 * the one that found it owning (pending until then). */
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
	unsigned nowners;
	struct {
		pid_t tid;
		uint64_t wait_ns;
		uint32_t stack;
		bool pending; /* stack: from the owner's next sample */
	} owners[TCF_WAIT_MAX_OWNERS];
};

/* The writer's maps hold ids (never 0): 0 from map_get means absent. */
static uint32_t map_get(const struct td_map *m, uint64_t key)
{
	uint64_t v;

	return td_map_get(m, key, &v) ? (uint32_t)v : 0;
}

static void map_put(struct td_map *m, uint64_t key, uint32_t val)
{
	if (td_map_set(m, key, val) < 0)
		(void)0; /* no memory: the id is looked up (and defined) again */
}

static void new_chunk_caches(struct writer *w)
{
	w->nnames = 0;
	td_map_clear(&w->threads);
	td_map_clear(&w->locs);
	memset(w->end_loc, 0, sizeof(w->end_loc));
	w->preempted_loc = 0;
	w->nomaps_loc = 0;
}

static void chunk_meta(struct writer *w)
{
	char buf[256];
	const struct rec_config *cfg = w->cfg;

	chunk_writer_meta(w->cw, "tracerd.version", TD_VERSION);
	snprintf(buf, sizeof(buf), "%u", cfg->hz);
	chunk_writer_meta(w->cw, "sampling.hz", buf);
	chunk_writer_meta(w->cw, "sampling.mode", cfg->mode == REC_MODE_WALL ? "wall" : "cpu");
	if (cfg->mode == REC_MODE_WALL && w->sh->capture == REC_CAPTURE_PERF) {
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
	for (unsigned i = 0; i < cfg->npids; i++) {
		char path[64], cmd[256];
		int n;

		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)cfg->pids[i]);
		n = td_read_text(AT_FDCWD, path, cmd, sizeof(cmd));
		/* Checked after the read: once the target is gone its PID
		 * cannot name it again, so a match now means the read was
		 * of the target, not of a later process of that PID. */
		if (td_proc_id_check(&w->sh->targets[i]) != 1)
			n = 0;
		for (int k = 0; k < n - 1; k++)
			if (!cmd[k])
				cmd[k] = ' ';
		if (n > 0) {
			snprintf(buf, sizeof(buf), "target.%d.cmdline", (int)cfg->pids[i]);
			chunk_writer_meta(w->cw, buf, cmd);
		}
	}
	{
		struct timespec m, re;

		clock_gettime(CLOCK_MONOTONIC, &m);
		clock_gettime(CLOCK_REALTIME, &re);
		chunk_writer_clock_sync(w->cw,
			(uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec,
			(uint64_t)re.tv_sec * 1000000000u + (uint64_t)re.tv_nsec);
	}
}

/* The current chunk's writer, noticing a new chunk. */
static struct chunk_writer *current_chunk(struct writer *w)
{
	struct chunk_writer *cw = repo_writer(w->repo);

	if (!cw) {
		int e = repo_error(w->repo);

		if (!atomic_load(&w->sh->io_err))
			atomic_store(&w->sh->io_err, e ? e : -EIO);
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

static void rotated(struct writer *w)
{
	w->cw = NULL; /* the next current_chunk() starts the caches anew */
}

static void episodes_close_chunk(struct writer *w);
static void record_lost(struct writer *w);

/* Commit what is buffered as a block, rotate if the chunk is full or old.
 * An error stays in the repository (repo_error), which the loop reports. */
static void publish(struct writer *w, uint64_t now)
{
	w->published_ns = now;
	if (!w->cw)
		return;
	if (chunk_writer_flush(w->cw) == 0 && chunk_writer_samples(w->cw)) {
		w->cw_published = true;
		if (w->startup) {
			/* from now on unwinding can wait; the target and the
			 * sampler cannot */
			setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
			w->startup = false;
		}
	}
	if (repo_due(w->repo, now))
		episodes_close_chunk(w);
	if (repo_tick(w->repo, now) == 1)
		rotated(w);
	atomic_store(&w->sh->bytes_written, repo_bytes_written(w->repo));
}

/* Tell the sampler that pid's current image has a session: its exit
 * need not be held (rec_shared.maps_read). */
static void maps_read(struct writer *w, pid_t pid)
{
	uint64_t image = 0;

	if (!td_map_get(&w->images, (uint64_t)(uint32_t)pid, &image))
		return; /* not told which: the sampler holds its exit, to be safe */
	atomic_store_explicit(&w->sh->maps_read[(uint32_t)pid % REC_READ_SLOTS],
		(uint64_t)(uint32_t)pid << 32 | (uint32_t)image, memory_order_release);
}

/* pid's process is gone: its PID may name the next target. */
static void maps_forget(struct writer *w, pid_t pid)
{
	_Atomic uint64_t *slot = &w->sh->maps_read[(uint32_t)pid % REC_READ_SLOTS];

	td_map_remove(&w->images, (uint64_t)(uint32_t)pid);
	if (atomic_load(slot) >> 32 == (uint32_t)pid)
		atomic_store(slot, 0);
}

/* A session of pid's current mappings: 0, or -errno / -TD_E_* (-ESRCH
 * for a process without mappings: a zombie's are empty). */
static int session_build(struct writer *w, pid_t pid, struct sym_session **ret_session)
{
	struct sym_options o = { .debuginfo_dir = w->cfg->debuginfo_dir,
		.cache_dir = w->cfg->cache_dir };
	unsigned modules = 0, elf, dwarf;
	int r = sym_session_new(pid, &o, w->cache, ret_session);

	if (r < 0)
		return r;
	sym_session_modules(*ret_session, &modules, &elf, &dwarf);
	if (!modules) {
		sym_session_free(*ret_session);
		*ret_session = NULL;
		return -ESRCH;
	}
	maps_read(w, pid);
	return 0;
}

static struct session *session_for(struct writer *w, pid_t pid, bool create)
{
	struct session *free_slot = NULL;

	for (unsigned i = 0; i < TD_ARRAY_SIZE(w->sess); i++) {
		if (w->sess[i].pid == pid && w->sess[i].s)
			return &w->sess[i];
		if (!w->sess[i].s && !free_slot)
			free_slot = &w->sess[i];
	}
	if (!create || !free_slot || session_build(w, pid, &free_slot->s) < 0)
		return NULL;
	free_slot->pid = pid;
	free_slot->built_ns = td_now_ns();
	free_slot->renew_later = false;
	return free_slot;
}

static void debug_stats_add(struct sym_debug_stats *sum, const struct sym_session *s)
{
	struct sym_debug_stats d;

	sym_session_debug_stats(s, &d);
	sum->reused += d.reused;
	sum->created += d.created;
	sum->failed += d.failed;
	sum->tables_reused += d.tables_reused;
	sum->tables_made += d.tables_made;
	if (d.err)
		sum->err = d.err;
}

/* What the debuginfo cache did, for rec_stats. */
static void debug_stats_store(struct writer *w)
{
	struct sym_debug_stats sum = w->debug_gone;

	for (unsigned i = 0; i < TD_ARRAY_SIZE(w->sess); i++)
		if (w->sess[i].s)
			debug_stats_add(&sum, w->sess[i].s);
	atomic_store(&w->sh->debug_reused, sum.reused);
	atomic_store(&w->sh->debug_created, sum.created);
	atomic_store(&w->sh->debug_failed, sum.failed);
	atomic_store(&w->sh->tables_reused, sum.tables_reused);
	atomic_store(&w->sh->tables_made, sum.tables_made);
	atomic_store(&w->sh->debug_err, sum.err);
}

static void session_drop(struct writer *w, pid_t pid)
{
	struct session *s = session_for(w, pid, false);

	if (s) {
		debug_stats_add(&w->debug_gone, s->s);
		sym_session_free(s->s);
		s->s = NULL;
		s->pid = 0;
	}
	td_map_clear(&w->locs); /* addresses mean something else now */
}

/* The process's mappings changed (dlopen): read them anew.  The old
 * session stays when that fails (the process is gone): its modules still
 * name what they named.  renew_due says when.  Returns whether it read
 * them. */
static bool session_renew(struct writer *w, struct session *se)
{
	struct sym_session *fresh;

	se->built_ns = td_now_ns();
	if (session_build(w, se->pid, &fresh) < 0)
		return false;
	debug_stats_add(&w->debug_gone, se->s);
	sym_session_free(se->s);
	se->s = fresh;
	td_map_clear(&w->locs); /* the cached locations were of the old session */
	return true;
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
static uint32_t thread_id_named(struct writer *w, pid_t pid, pid_t tid, const char *name)
{
	uint32_t id = map_get(&w->threads, (uint64_t)(uint32_t)tid + 1);
	struct td_task_info info;

	if (id) {
		struct tname *t = id < w->capnames ? &w->names[id] : NULL;

		if (name && t && t->tid == tid && strncmp(t->name, name, sizeof(t->name) - 1))
			renamed(w, id, t, name, td_now_ns());
		return id;
	}
	struct known_name *k = &w->known[(uint32_t)tid % TD_ARRAY_SIZE(w->known)];

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
		map_put(&w->threads, (uint64_t)(uint32_t)tid + 1, id);
	if (id >= w->capnames) {
		size_t cap = w->capnames ? w->capnames * 2 : 64;
		struct tname *n;

		while (cap <= id)
			cap *= 2;
		n = realloc(w->names, cap * sizeof(*n));
		if (n) {
			memset(n + w->capnames, 0, (cap - w->capnames) * sizeof(*n));
			w->names = n;
			w->capnames = cap;
		}
	}
	if (id && id < w->capnames) {
		w->names[id] = (struct tname){ .pid = pid, .tid = tid };
		memcpy(w->names[id].name, info.name, sizeof(info.name));
		if (id >= w->nnames)
			w->nnames = id + 1;
	}
	return id;
}

static uint32_t thread_id(struct writer *w, pid_t pid, pid_t tid)
{
	return thread_id_named(w, pid, tid, NULL);
}

/* Every 2 s, re-read the names of up to 256 threads of this chunk (round
 * robin) and record a rename (pthread_setname_np, prctl) as it is seen. */
static void check_renames(struct writer *w, uint64_t now)
{
	if (!w->cw || now - w->last_rename_check < 2000000000u)
		return;
	w->last_rename_check = now;
	for (unsigned k = 0; k < 256 && w->nnames > 1; k++) {
		struct td_task_info info;
		struct tname *t;
		size_t i = 1 + w->rename_next++ % (w->nnames - 1);

		t = &w->names[i];
		if (!t->tid || td_task_info_read(t->pid, t->tid, &info) < 0)
			continue;
		if (strcmp(info.name, t->name))
			renamed(w, (uint32_t)i, t, info.name, now);
		if (k + 1 >= w->nnames - 1)
			break;
	}
}

static void hex_to_bytes(const char *hex, uint8_t *out, unsigned *ret_n)
{
	unsigned n = 0;

	while (hex && hex[0] && hex[1] && n < 64) {
		unsigned v;

		if (sscanf(hex, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	*ret_n = n;
}

/* Location id of one physical frame in the current chunk. */
static uint32_t location(struct writer *w, struct sym_session *ss, pid_t pid, uint64_t pc,
	bool act)
{
	uint64_t key = ((uint64_t)(uint32_t)pid << 48) ^ (pc << 1) ^ act;
	struct chunk_line lines[64];
	uint32_t id = map_get(&w->locs, key | 1ull << 63), mapping = 0;
	int n;

	if (id)
		return id;
	n = sym_session_symbolize(ss, pc, act, true, w->frames, 64);
	for (int k = 0; k < n; k++) {
		const struct sym_frame *f = &w->frames[k];

		lines[k] = (struct chunk_line){
			chunk_writer_function(w->cw, f->function ? f->function : "[unknown]", NULL,
				f->file, f->start_line > 0 ? (uint32_t)f->start_line : 0),
			(uint32_t)f->line, 0 };
	}
	if (n > 0 && w->frames[0].module) {
		/* "[vdso: PID]" is libdwfl's name; the pid means nothing later */
		struct chunk_mapping m = { .path = !strncmp(w->frames[0].module, "[vdso", 5) ?
							   "[vdso]" :
							   w->frames[0].module };
		uint8_t bid[64];

		hex_to_bytes(w->frames[0].build_id, bid, &m.build_id_len);
		m.build_id = bid;
		if (strstr(m.path, " (deleted)"))
			m.flags |= TCF_MAP_DELETED;
		mapping = chunk_writer_mapping(w->cw, &m);
	}
	id = chunk_writer_location(w->cw, mapping, mapping ? w->frames[0].offset : pc, lines,
		(unsigned)(n > 0 ? n : 0));
	if (id)
		map_put(&w->locs, key | 1ull << 63, id);
	return id;
}

/* A synthetic root frame that keeps a partial stack's reason visible. */
static uint32_t end_location(struct writer *w, enum sym_end end)
{
	char name[96];
	struct chunk_line line;

	if (w->end_loc[end])
		return w->end_loc[end];
	snprintf(name, sizeof(name), "[stack cut: %s]", sym_end_name(end));
	line = (struct chunk_line){ chunk_writer_function(w->cw, name, NULL, NULL, 0), 0, 0 };
	w->end_loc[end] = chunk_writer_location(w->cw, 0, 0, &line, 1);
	return w->end_loc[end];
}

/* Is the innermost pc in no module the session knows?  The end reason
 * alone does not tell: libdw's frame-pointer fallback may walk past such a
 * pc and end on a failed read instead. */
static bool innermost_unmapped(struct sym_session *ss, const struct sym_unwound *u)
{
	struct sym_frame f;

	if (u->end == SYM_END_NO_MODULE)
		return true;
	return u->n && sym_session_symbolize(ss, u->pc[0], u->activation[0], false, &f, 1) >= 1 &&
	       !f.module;
}

/* Renew the session of an unwind that met a pc outside its modules (u, by
 * innermost_unmapped)?  At once when a file is mapped over that pc now
 * (a library dlopen'ed since the build: python's C modules, plugins); the
 * maps are read for that once per build, so code outside every file (a
 * JIT's) costs one read per build.  Otherwise once a second at most. */
static bool renew_due(struct session *se, pid_t tid, const struct sym_unwound *u)
{
	unsigned k = u->end == SYM_END_NO_MODULE && u->n ? u->n - 1 : 0;

	if (td_now_ns() - se->built_ns > 1000000000u)
		return true;
	if (se->renew_later || !u->n)
		return false;
	se->renew_later = true;
	/* the sampled thread's maps (its process's leader may be a zombie);
	 * a return address may end its mapping: the call's */
	return td_maps_file_at(tid, u->pc[k] - !u->activation[k]) == 1;
}

/* A stack of one frame that says why there is no other: text, its
 * location cached in *loc for the chunk. */
static uint32_t note_stack(struct writer *w, uint32_t *loc, const char *text)
{
	if (!*loc) {
		struct chunk_line line = { chunk_writer_function(w->cw, text, NULL, NULL, 0), 0, 0 };

		*loc = chunk_writer_location(w->cw, 0, 0, &line, 1);
	}
	return chunk_writer_stack(w->cw, loc, 1);
}

/* Time a thread waited for a CPU after it ran, when no perf sample since
 * says where it was preempted (its last stack is from before it ran):
 * a frame that says so, rather than a stack it had left. */
static uint32_t preempted_location(struct writer *w)
{
	return note_stack(w, &w->preempted_loc, "[runnable: preempted where no sample saw it]");
}

/* A sample of a process whose mappings could not be read (it was gone
 * before the writer came to it: its exit hold timed out): placed, and
 * counted as not unwound, not dropped. */
static uint32_t nomaps_stack(struct writer *w)
{
	atomic_fetch_add_explicit(&w->sh->unwind_partial, 1, memory_order_relaxed);
	return note_stack(w, &w->nomaps_loc, "[not unwound: its process's maps were not read]");
}

/* The chunk's stack for the unwound frames in w->u. */
static uint32_t stack_of_unwound(struct writer *w, struct sym_session *ss, pid_t pid)
{
	unsigned n = 0;

	for (unsigned i = 0; i < w->u.n; i++)
		w->loc_ids[n++] = location(w, ss, pid, w->u.pc[i], w->u.activation[i]);
	if (w->u.end != SYM_END_OUTERMOST) {
		atomic_fetch_add_explicit(&w->sh->unwind_partial, 1, memory_order_relaxed);
		w->loc_ids[n++] = end_location(w, w->u.end);
	}
	return chunk_writer_stack(w->cw, w->loc_ids, n);
}

static struct saved *saved_of(struct writer *w, pid_t tid, bool create)
{
	uint32_t k = map_get(&w->last, (uint64_t)(uint32_t)tid);
	struct saved *sv;

	/* the map keeps a tid's slot after its exit freed it, and the slot
	 * may hold another thread since */
	if (k && w->saved[k - 1].tid == tid)
		return &w->saved[k - 1];
	if (!create)
		return NULL;
	for (k = 0; k < w->nsaved && w->saved[k].tid; k++)
		;
	if (k == w->nsaved) {
		if (w->nsaved == w->capsaved) {
			size_t cap = w->capsaved ? 2 * w->capsaved : 64;
			struct saved *ns = realloc(w->saved, cap * sizeof(*ns));

			if (!ns)
				return NULL;
			w->saved = ns;
			w->capsaved = cap;
		}
		w->saved[w->nsaved++] = (struct saved){ 0 };
	}
	sv = &w->saved[k];
	sv->tid = tid;
	map_put(&w->last, (uint64_t)(uint32_t)tid, k + 1);
	return sv;
}

/* Keep the unwind of a thread copied while blocked, for its repeats. */
static void save_unwound(struct writer *w, pid_t tid, bool perf)
{
	struct saved *sv = saved_of(w, tid, true);
	uint64_t *pc;
	bool *act;

	if (!sv)
		return;
	pc = realloc(sv->pc, (w->u.n + 1) * sizeof(*pc));
	if (pc)
		sv->pc = pc;
	act = realloc(sv->act, (w->u.n + 1) * sizeof(*act));
	if (act)
		sv->act = act;
	if (!pc || !act) {
		sv->n = 0;
		sv->end = SYM_END_NO_REGS;
		return;
	}
	memcpy(sv->pc, w->u.pc, w->u.n * sizeof(*pc));
	memcpy(sv->act, w->u.activation, w->u.n * sizeof(*act));
	sv->n = w->u.n;
	sv->end = w->u.end;
	sv->perf = perf;
}

static void saved_drop(struct writer *w, pid_t tid)
{
	struct saved *sv = saved_of(w, tid, false);

	if (!sv)
		return;
	free(sv->pc);
	free(sv->act);
	*sv = (struct saved){ 0 };
	/* the map keeps tid -> slot; a later thread of that tid reuses it */
}

static uint32_t stack_of(struct writer *w, const struct td_sample *s)
{
	struct session *se = session_for(w, s->pid, true);

	if (!se)
		return nomaps_stack(w);
	if (s->flags & TD_SAMPLE_REPEAT) {
		/* unchanged since its last copy: the same frames */
		struct saved *sv = saved_of(w, s->tid, false);
		/* preempted after it ran: only a perf sample since shows where */
		bool preempted = (s->flags & TD_SAMPLE_RUNNABLE) && !(s->flags & TD_SAMPLE_IN_SYSCALL);

		if (sv && !(preempted && !sv->perf)) {
			memcpy(w->u.pc, sv->pc, sv->n * sizeof(*sv->pc));
			memcpy(w->u.activation, sv->act, sv->n * sizeof(*sv->act));
			w->u.n = sv->n;
			w->u.end = sv->end;
			return stack_of_unwound(w, se->s, s->pid);
		}
		if (s->flags & TD_SAMPLE_RUNNABLE)
			return preempted_location(w);
		w->u.n = 0;
		w->u.end = SYM_END_NO_REGS;
		return stack_of_unwound(w, se->s, s->pid);
	}
	sym_session_unwind(se->s, s, &w->u);
	/* the maps changed (dlopen): see them anew, then retry */
	if (innermost_unmapped(se->s, &w->u) && renew_due(se, s->tid, &w->u) &&
		session_renew(w, se)) {
		sym_session_unwind(se->s, s, &w->u);
		/* still outside every module (a file mapping libdwfl did not
		 * report): renewing at once again would rebuild the session
		 * at every sample; once a second will do */
		se->renew_later = innermost_unmapped(se->s, &w->u);
	}
	if (w->u.end == SYM_END_WINDOW)
		atomic_store_explicit(&w->sh->grow[s->tid % REC_GROW_SLOTS], (uint32_t)s->tid,
			memory_order_relaxed);
	/* the stack a repeat uses: a blocked thread's, and in wall mode a
	 * running one's (its time waiting for a CPU repeats it) */
	if ((s->flags & TD_SAMPLE_NOSTOP) || w->cfg->mode == REC_MODE_WALL)
		save_unwound(w, s->tid, s->flags & TD_SAMPLE_PERF);
	return stack_of_unwound(w, se->s, s->pid);
}

/* ---- wait episodes (wall mode): WAITS records */

static struct episode *episode_of(struct writer *w, pid_t tid)
{
	uint32_t k = map_get(&w->ep_idx, (uint64_t)(uint32_t)tid);

	return k && w->eps[k - 1].tid == tid ? &w->eps[k - 1] : NULL;
}

/* Is thread tid itself in an episode on ep's object? */
static bool waits_on(struct writer *w, pid_t tid, const struct episode *ep)
{
	const struct episode *own = episode_of(w, tid);

	return own && own != ep && own->w.kind == ep->w.kind && own->w.object == ep->w.object;
}

/* The chunk's stack for thread tid's saved frames; 0 if none saved. */
static uint32_t saved_stack(struct writer *w, pid_t pid, pid_t tid)
{
	struct saved *sv = saved_of(w, tid, false);
	struct session *se;

	if (!sv || !sv->n || !(se = session_for(w, pid, true)))
		return 0;
	memcpy(w->u.pc, sv->pc, sv->n * sizeof(*sv->pc));
	memcpy(w->u.activation, sv->act, sv->n * sizeof(*sv->act));
	w->u.n = sv->n;
	w->u.end = sv->end;
	return stack_of_unwound(w, se->s, pid);
}

/* Write what the episode waited in the current chunk; with goes_on, it
 * goes on in the next chunk (which repeats its start). */
static void episode_write(struct writer *w, struct episode *ep, bool goes_on)
{
	struct chunk_wait cw = { .time_ns = ep->start_ns, .wait_ns = ep->wait_ns,
		.stack_id = ep->stack, .kind = wait_tcf_kind(ep->w.kind),
		.flags = ep->flags | (goes_on ? TCF_WAITF_GOES_ON : 0), .object = ep->w.object };

	if (ep->wait_ns && w->cw) {
		cw.thread_id = thread_id(w, ep->pid, ep->tid);
		cw.what = ep->w.what[0] ? chunk_writer_string(w->cw, ep->w.what) : 0;
		cw.nowners = ep->nowners;
		for (unsigned i = 0; i < ep->nowners; i++)
			cw.owners[i] = (struct chunk_wait_owner){ thread_id(w, ep->pid,
									  ep->owners[i].tid),
				ep->owners[i].stack, ep->owners[i].wait_ns };
		chunk_writer_wait(w->cw, &cw);
	}
	if (goes_on) {
		ep->flags = TCF_WAITF_BEGAN_BEFORE;
		ep->wait_ns = 0;
		ep->nowners = 0;
		ep->stack = 0;
	} else {
		ep->tid = 0;
	}
}

static void episode_end(struct writer *w, pid_t tid)
{
	struct episode *ep = episode_of(w, tid);

	if (ep)
		episode_write(w, ep, false);
}

/* Before the chunk ends: what every open episode waited in it. */
static void episodes_close_chunk(struct writer *w)
{
	for (size_t i = 0; i < w->neps; i++)
		if (w->eps[i].tid)
			episode_write(w, &w->eps[i], true);
}

static struct episode *episode_new(struct writer *w, pid_t pid, pid_t tid)
{
	size_t k;

	for (k = 0; k < w->neps && w->eps[k].tid; k++)
		;
	if (k == w->neps) {
		if (w->neps == w->capeps) {
			size_t cap = w->capeps ? 2 * w->capeps : 64;
			struct episode *n = realloc(w->eps, cap * sizeof(*n));

			if (!n)
				return NULL;
			w->eps = n;
			w->capeps = cap;
		}
		w->neps++;
	}
	if (td_map_set(&w->ep_idx, (uint64_t)(uint32_t)tid, k + 1) < 0)
		return NULL;
	w->eps[k] = (struct episode){ .pid = pid, .tid = tid };
	return &w->eps[k];
}

/* A blocked sample of s->tid, whose stack in this chunk is stack: a new
 * episode for a fresh copy (classified from its call, arguments and
 * stack), the same one for a repeat; a period of waiting either way,
 * credited to the object's owner at this tick. */
static void episode_sample(struct writer *w, const struct td_sample *s, uint32_t stack)
{
	struct episode *ep = episode_of(w, s->tid);
	const char *funcs[8];
	uint64_t period = 1000000000u / w->cfg->hz;
	const uint32_t *futex = (s->flags & TD_SAMPLE_FUTEX) ? s->futex : NULL;
	pid_t owner;
	unsigned i;

	if (!(s->flags & TD_SAMPLE_REPEAT) || !ep) {
		struct session *se = session_for(w, s->pid, false);

		if (ep)
			episode_write(w, ep, false);
		if (s->flags & TD_SAMPLE_REPEAT)
			return; /* a repeat of a wait seen before this chunk's writer knew */
		ep = episode_new(w, s->pid, s->tid);
		if (!ep)
			return;
		ep->start_ns = s->time_ns;
		ep->args[0] = s->regs.rdi, ep->args[1] = s->regs.rsi, ep->args[2] = s->regs.rdx;
		ep->args[3] = s->regs.r10, ep->args[4] = s->regs.r8, ep->args[5] = s->regs.r9;
		for (i = 0; se && i < w->u.n && ep->nfuncs < 8; i++) {
			struct sym_frame f[4];
			int n = sym_session_symbolize(se->s, w->u.pc[i], w->u.activation[i], true, f, 4);

			for (int k = 0; k < n && ep->nfuncs < 8; k++)
				if (f[k].function)
					snprintf(ep->funcs[ep->nfuncs++], sizeof(ep->funcs[0]), "%s",
						f[k].function);
		}
		for (i = 0; i < ep->nfuncs; i++)
			funcs[i] = ep->funcs[i];
		wait_classify(s->pid, s->tid, (long)s->regs.orig_rax, ep->args, futex,
			(s->flags & TD_SAMPLE_DISK) ? 'D' : 'S', funcs, ep->nfuncs, &ep->w);
		if (futex)
			memcpy(ep->futex, futex, sizeof(ep->futex));
	} else if ((ep->w.kind == WAIT_MUTEX || ep->w.kind == WAIT_RWLOCK) && futex &&
		   memcmp(futex, ep->futex, sizeof(ep->futex))) {
		/* the lock changed hands while it waited: its owner at this
		 * tick (the classifier checks the owner is a live thread, in
		 * /proc: only when the lock's words moved, not at every tick) */
		for (i = 0; i < ep->nfuncs; i++)
			funcs[i] = ep->funcs[i];
		wait_classify(s->pid, s->tid, ep->w.nr, ep->args, futex, 'S', funcs, ep->nfuncs,
			&ep->w);
		memcpy(ep->futex, futex, sizeof(ep->futex));
	}
	ep->stack = stack;
	ep->wait_ns += period;
	owner = ep->w.owner;
	if (!owner || owner == s->tid)
		return;
	for (i = 0; i < ep->nowners && ep->owners[i].tid != owner; i++)
		;
	if (i == ep->nowners) {
		if (i == TCF_WAIT_MAX_OWNERS)
			return; /* the first eight owners are kept */
		ep->owners[i].tid = owner;
		ep->owners[i].wait_ns = 0;
		if (w->cw)
			thread_id(w, s->pid, owner); /* its name, while it lives */
		/* its stack: its first sample after the one that found it
		 * owning that does not show it waiting for this very object
		 * (taken before the lock changed hands, or after it gave the
		 * lock up and waits again); until then, its last such one */
		ep->owners[i].stack = waits_on(w, owner, ep) ? 0 : saved_stack(w, s->pid, owner);
		ep->owners[i].pending =
			td_map_set(&w->owner_wait, (uint64_t)(uint32_t)owner, 1) >= 0;
		ep->nowners++;
	}
	ep->owners[i].wait_ns += period;
}

/* tid's sample, whose stack is stack, came (its own episode updated):
 * the owners that waited for it take it, unless it shows tid waiting for
 * their very object. */
static void owner_seen(struct writer *w, pid_t tid, uint32_t stack)
{
	bool still = false;
	uint64_t v;

	if (!td_map_get(&w->owner_wait, (uint64_t)(uint32_t)tid, &v))
		return;
	for (size_t k = 0; k < w->neps; k++) {
		struct episode *ep = &w->eps[k];

		for (unsigned i = 0; ep->tid && i < ep->nowners; i++) {
			if (!ep->owners[i].pending || ep->owners[i].tid != tid)
				continue;
			if (waits_on(w, tid, ep)) {
				still = true;
				continue;
			}
			ep->owners[i].stack = stack;
			ep->owners[i].pending = false;
		}
	}
	if (!still)
		td_map_remove(&w->owner_wait, (uint64_t)(uint32_t)tid);
}

static enum tcf_state state_of(const struct td_sample *s)
{
	if (s->flags & TD_SAMPLE_GROUP_STOPPED)
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
	for (unsigned i = 0; i < TD_ARRAY_SIZE(w->procs); i++)
		if (w->procs[i].pid == pid)
			return &w->procs[i];
	return NULL;
}

/* Its cgroup's OOM kill count now, in its history. */
static void oom_note(struct wproc *p, uint64_t now)
{
	unsigned i = p->oom_n++ % WRITER_OOM_READS;

	p->oom_kills[i] = oom_kills_of(p->memory_events);
	p->oom_ns[i] = now;
}

/* Did its cgroup count an OOM kill within WRITER_OOM_SPAN_NS before now?
 * Against the newest read at least that old (else the oldest kept: the
 * one when it was first seen, or 8 s ago). */
static bool oom_killed(const struct wproc *p, uint64_t now)
{
	unsigned n = TD_MIN(p->oom_n, (unsigned)WRITER_OOM_READS);
	uint64_t base = 0;
	bool have = false;

	for (unsigned k = 0; k < n; k++) {
		/* oldest first */
		unsigned i = (p->oom_n - n + k) % WRITER_OOM_READS;

		if (!have || p->oom_ns[i] + WRITER_OOM_SPAN_NS <= now) {
			base = p->oom_kills[i];
			have = true;
		}
	}
	return have && oom_kills_of(p->memory_events) > base;
}

/* A process met for the first time: where its cgroup counts OOM kills. */
static void wproc_add(struct writer *w, pid_t pid)
{
	struct wproc *p = wproc_of(w, pid);
	char path[64], buf[1024];

	if (p || !(p = wproc_of(w, 0)))
		return;
	*p = (struct wproc){ .pid = pid, .first_real_ns = td_real_ns() };
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (td_read_text(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return;
	/* cgroup v2: the "0::" line's memory.events; v1 (a hybrid host):
	 * the memory controller's memory.oom_control, which counts oom_kill
	 * the same way */
	for (int v = 2; v >= 1 && !p->memory_events[0]; v--) {
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
		if ((size_t)snprintf(p->memory_events, sizeof(p->memory_events), "%s%s%s",
			    v == 2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory", line,
			    v == 2 ? "/memory.events" : "/memory.oom_control") >=
				sizeof(p->memory_events) ||
			access(p->memory_events, R_OK) < 0)
			p->memory_events[0] = '\0';
	}
	oom_note(p, td_now_ns());
}

/* Every second: each process's OOM kill count, for oom_killed(). */
static void wprocs_refresh(struct writer *w, uint64_t now)
{
	if (now - w->oom_read_ns < 1000000000u)
		return;
	w->oom_read_ns = now;
	for (unsigned i = 0; i < TD_ARRAY_SIZE(w->procs); i++)
		if (w->procs[i].pid)
			oom_note(&w->procs[i], now);
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

static void notify(struct writer *w, const struct rec_notice *n)
{
	struct rec_notice *slot = ring_reserve(&w->sh->notices);

	if (!slot)
		return; /* the service rescans /proc: an exit is not lost for good */
	*slot = *n;
	ring_publish(&w->sh->notices);
	rec_wake(w->sh->control_wake);
}

/* A thread's stack at its process's death (TD_SAMPLE_DEATH). */
static void death_stack(struct writer *w, const struct td_sample *s, uint32_t tid, uint32_t stack)
{
	bool faulting = w->last_crash.pid == s->pid && w->last_crash.tid == s->tid &&
			w->last_crash.signo == s->signo;

	chunk_writer_death_stack(w->cw, s->time_ns, (uint32_t)s->pid, s->signo, tid, stack,
		faulting ? TCF_DEATH_FAULTING : 0, faulting ? w->last_crash.addr : 0);
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
		.id = { e->pid, e->start_time } };
	uint64_t now = td_real_ns(), since = 0;

	if (oom)
		chunk_writer_oom_kill(w->cw, e->time_ns, (uint32_t)e->pid,
			p ? oom_kills_of(p->memory_events) : 0);
	if (w->cfg->emergency_window_ns && now > w->cfg->emergency_window_ns)
		since = now - w->cfg->emergency_window_ns;
	if (p && p->first_real_ns > since)
		since = p->first_real_ns;
	record_lost(w);
	episodes_close_chunk(w);
	if (repo_rotate(w->repo, TCF_END_TARGET_CRASH) < 0)
		atomic_store(&w->sh->io_err, repo_error(w->repo));
	rotated(w);
	n.err = repo_emergency_into(w->repo, e->pid, since, n.path, sizeof(n.path), &n.chunks,
		&n.bytes);
	notify(w, &n);
}

/* The process e->pid has exited (its exit record is written). */
static void process_died(struct writer *w, const struct rec_event *e)
{
	struct wproc *p = wproc_of(w, e->pid);
	struct rec_notice n = { .kind = REC_NOTICE_EXIT, .status = e->status,
		.id = { e->pid, e->start_time } };
	int sig = WIFSIGNALED(e->status) ? WTERMSIG(e->status) : 0;

	if (p && sig == SIGKILL && oom_killed(p, td_now_ns()))
		n.oom = true;
	if (fatal_signal(sig))
		emergency_dump(w, e, p, n.oom);
	notify(w, &n);
	if (p)
		p->pid = 0;
}

static void do_sample(struct writer *w, const struct td_sample *s)
{
	uint32_t stack, tid;

	if (!current_chunk(w))
		return;
	/* time a thread waited for a CPU before any stack of it was seen:
	 * where it was is unknown, and a frame saying so would only clutter
	 * the start of a recording */
	if (s->flags & TD_SAMPLE_RUNNABLE) {
		struct saved *sv = saved_of(w, s->tid, false);

		if (!sv)
			return;
	}
	stack = stack_of(w, s);
	tid = thread_id_named(w, s->pid, s->tid, (s->flags & TD_SAMPLE_NAMED) ? s->comm : NULL);
	if (s->flags & TD_SAMPLE_DEATH) {
		/* where it was when its process died: a record, not a sample */
		death_stack(w, s, tid, stack);
		return;
	}
	if ((s->flags & TD_SAMPLE_HELD) && w->crash.crash_id && s->tid == w->crash.tid)
		chunk_writer_process_event(w->cw, w->crash.time_ns, (uint32_t)s->pid,
			TCF_PROC_CRASH, 0, w->crash.signo, w->crash.addr, tid, stack);
	if (w->cfg->mode == REC_MODE_WALL) {
		/* blocked (copied, or repeated unchanged): a period of a wait;
		 * woken, it waits for a CPU, not for the object: runnable */
		if ((s->flags & TD_SAMPLE_NOSTOP) && !(s->flags & TD_SAMPLE_RUNNABLE))
			episode_sample(w, s, stack);
		else if (!(s->flags & TD_SAMPLE_HELD))
			episode_end(w, s->tid);
		owner_seen(w, s->tid, stack);
	}
	/* a weighted sample: once per period of CPU time it stands for */
	for (uint32_t n = (s->flags & TD_SAMPLE_WEIGHTED) ? s->weight : 1; n; n--)
		if (chunk_writer_sample(w->cw, s->time_ns, tid, state_of(s), stack, NULL, 0) == 0)
			atomic_fetch_add_explicit(&w->sh->samples_written, 1, memory_order_relaxed);
	if (!w->cw_published)
		publish(w, td_now_ns()); /* the chunk's first samples: at once */
}

static void do_event(struct writer *w, const struct rec_event *e)
{
	if (e->kind == REC_EV_EXITING) {
		/* every sample taken before the exit is unwound, its maps
		 * read while it was held: let it go */
		atomic_store(&w->sh->exit_acked, e->crash_id);
		rec_wake(w->sh->sampler_wake);
		return;
	}
	if ((e->kind == REC_EV_THREAD_NEW || e->kind == REC_EV_EXEC) && e->image)
		td_map_set(&w->images, (uint64_t)(uint32_t)e->pid, e->image);
	if (!current_chunk(w))
		return;
	switch (e->kind) {
	case REC_EV_THREAD_NEW:
		if (w->cfg->follow)
			wproc_add(w, e->pid);
		chunk_writer_thread_event(w->cw, e->time_ns, thread_id(w, e->pid, e->tid),
			TCF_THREAD_START, 0);
		break;
	case REC_EV_THREAD_EXIT:
		chunk_writer_thread_event(w->cw, e->time_ns, thread_id(w, e->pid, e->tid),
			TCF_THREAD_EXIT, (uint64_t)(uint32_t)e->status);
		episode_end(w, e->tid);
		td_map_remove(&w->owner_wait, (uint64_t)(uint32_t)e->tid);
		saved_drop(w, e->tid);
		break;
	case REC_EV_EXEC:
		episode_end(w, e->tid);
		session_drop(w, e->pid);
		td_map_clear(&w->threads); /* names change with the image */
		chunk_writer_process_event(w->cw, e->time_ns, (uint32_t)e->pid, TCF_PROC_EXEC, 0, 0,
			0, thread_id(w, e->pid, e->tid), 0);
		break;
	case REC_EV_CRASH:
		w->crash = w->last_crash = *e;
		break;
	case REC_EV_REPEAT: {
		/* a sample without stack bytes: the header is all there is */
		struct td_sample smp = { .pid = e->pid, .tid = e->tid, .time_ns = e->time_ns,
			.flags = (uint32_t)e->status };

		memcpy(smp.futex, e->futex, sizeof(smp.futex));

		do_sample(w, &smp);
		break;
	}
	case REC_EV_CRASH_DONE: {
		/* the crash's stacks were published before this event */
		void *p;

		while ((p = ring_peek_bytes(&w->sh->samples))) {
			do_sample(w, p);
			ring_pop_bytes(&w->sh->samples);
		}
		/* the evidence on disk before the signal goes on */
		episodes_close_chunk(w);
		if (repo_rotate(w->repo, TCF_END_TARGET_CRASH) < 0)
			atomic_store(&w->sh->io_err, repo_error(w->repo));
		rotated(w);
		w->crash.crash_id = 0;
		atomic_store(&w->sh->crash_acked, e->crash_id);
		rec_wake(w->sh->sampler_wake);
		break;
	}
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

			notify(w, &n);
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
		rec_wake(w->sh->control_wake);
	}
}

int writer_new(struct rec_shared *sh, struct repo *repo, struct writer **ret_writer)
{
	struct writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	if (sym_cache_new(&w->cache) < 0) {
		free(w);
		return -ENOMEM;
	}
	w->sh = sh;
	w->cfg = sh->cfg;
	w->repo = repo;
	w->startup = true;
	*ret_writer = w;
	return 0;
}

/* The samples lost since the last call, as LOST records in the current
 * chunk: what the summary counts, a report of the recording counts too
 * (ring full: the sample ring or the kernel's perf ring; not stopped: a
 * stop that did not come within its round). */
static void record_lost(struct writer *w)
{
	struct rec_shared *sh = w->sh;
	const uint64_t now[2] = { atomic_load(&sh->lost_ring) + atomic_load(&sh->lost_kernel),
		atomic_load(&sh->lost_not_stopped) };
	static const enum tcf_lost_reason reason[2] = { TCF_LOST_RING_FULL,
		TCF_LOST_NOT_STOPPED };

	for (int i = 0; i < 2; i++) {
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
	 * runs at the sampler's priority (when permitted), then at nice 10
	 * (publish()). */
	setpriority(PRIO_PROCESS, (id_t)gettid(), -10);
	w->published_ns = td_now_ns();
	pthread_setname_np(pthread_self(), "tracerd-write");
	for (;;) {
		struct pollfd pfd = { sh->writer_wake, POLLIN, 0 };
		bool done = atomic_load(&sh->sampler_done);
		bool hurry = atomic_load(&sh->stop) >= 2;
		uint64_t junk, now;
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
				if (!hurry)
					do_sample(w, smp);
				ring_pop_bytes(&sh->samples);
			} else {
				break;
			}
			/* a busy ring does not hold back what is written */
			now = td_now_ns();
			if (now - w->published_ns >= WRITER_PUBLISH_NS)
				publish(w, now);
		}
		if (ring_peek(&sh->events) || ring_peek_bytes(&sh->samples))
			continue;
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
		if (atomic_exchange(&sh->rotate_req, 0)) {
			record_lost(w);
			episodes_close_chunk(w);
			if (repo_rotate(w->repo, TCF_END_ROTATE) < 0)
				atomic_store(&sh->io_err, repo_error(w->repo));
			rotated(w);
		}
		if (atomic_exchange(&sh->snapshot_req, 0))
			take_snapshot(w);
		check_renames(w, now);
		if (w->cfg->follow)
			wprocs_refresh(w, now);
		if (now - w->published_ns >= WRITER_PUBLISH_NS) {
			record_lost(w);
			publish(w, now);
		}
		if (repo_error(w->repo) && !atomic_load(&sh->io_err))
			atomic_store(&sh->io_err, repo_error(w->repo));
		if (atomic_load(&sh->io_err)) {
			/* disk full and the like: the sampler stops on io_err;
			 * what is written (whole blocks) stays */
			rec_wake(sh->sampler_wake);
		}
		if (done)
			break;
		/* wake for the next publish, or to look at the rings */
		timeout = (int)((w->published_ns + WRITER_PUBLISH_NS - now + 999999) / 1000000);
		timeout = TD_MAX(1, TD_MIN(WRITER_POLL_MS, timeout));
		if (poll(&pfd, 1, timeout) > 0 && read(sh->writer_wake, &junk, sizeof(junk)) < 0)
			junk = 0;
	}
	if (atomic_load(&sh->targets_live) <= 0)
		reason = TCF_END_TARGET_EXIT;
	if (!atomic_load(&sh->io_err)) {
		/* finish the chunk first, so that its size is counted */
		int e;

		record_lost(w);
		episodes_close_chunk(w);
		e = repo_rotate(w->repo, reason);

		if (e < 0)
			atomic_store(&sh->io_err, e);
	}
	atomic_store(&sh->bytes_written, repo_bytes_written(w->repo));
	repo_close(w->repo, reason);
	w->repo = NULL;
	debug_stats_store(w);
	atomic_store(&sh->writer_done, 1);
	rec_wake(sh->control_wake);
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
	for (unsigned i = 0; i < TD_ARRAY_SIZE(w->sess); i++)
		sym_session_free(w->sess[i].s);
	sym_cache_free(w->cache);
	td_map_free(&w->threads);
	td_map_free(&w->images);
	td_map_free(&w->locs);
	td_map_free(&w->last);
	td_map_free(&w->ep_idx);
	td_map_free(&w->owner_wait);
	free(w->eps);
	for (size_t i = 0; i < w->nsaved; i++) {
		free(w->saved[i].pc);
		free(w->saved[i].act);
	}
	free(w->saved);
	free(w->names);
	free(w);
}
