/* The unwinder thread: takes copied stacks from the sample ring, unwinds
 * them with the process's cached libdwfl session (rebuilt after exec, or
 * when a pc falls outside every known module after the maps changed),
 * symbolizes through the caches, and appends to the chunk writer of the
 * repository, which this thread alone owns.  It also turns the sampler's
 * events into records, flushes a block every second, rotates and takes
 * snapshots on request.
 *
 * Per-chunk caches (thread ids, location ids) are cleared whenever a new
 * chunk starts, since ids are per chunk. */
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
#include "../symbolize/symbolize.h"

struct session {
	pid_t pid;
	struct sym_session *s;
	uint64_t built_ns;
};

struct kv {
	uint64_t key; /* 0: free */
	uint32_t val;
};

/* A small open-addressing map, cleared per chunk. owns: t */
struct map {
	struct kv *t;
	size_t cap, used;
};

struct unwinder {
	struct recorder *rec;
	struct repo *repo;
	struct chunk_writer *w; /* the current chunk's, borrowed from repo */
	struct sym_cache *cache;
	struct session sess[REC_MAX_PIDS * 4];
	struct map threads, locs;
	uint32_t end_loc[SYM_END_NO_REGS + 1];
	struct sym_unwound u;
	struct sym_frame frames[SYM_MAX_FRAMES];
	uint32_t loc_ids[SYM_MAX_FRAMES + 1];
	int end_reason;
	struct rec_event crash; /* the crash being written, kind REC_EV_CRASH */
	/* names of the threads this chunk defined, for renames; by thread id */
	struct tname {
		pid_t pid, tid;
		char name[16];
	} *names;
	size_t nnames, capnames, rename_next;
	uint64_t last_rename_check;
};

static uint32_t map_get(struct map *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return 0;
	for (i = (key * 0x9e3779b97f4a7c15ull) >> 20 & (m->cap - 1); m->t[i].key;
		i = (i + 1) & (m->cap - 1))
		if (m->t[i].key == key)
			return m->t[i].val;
	return 0;
}

static void map_put(struct map *m, uint64_t key, uint32_t val)
{
	size_t i;

	if ((m->used + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 4096;
		struct kv *n = calloc(cap, sizeof(*n));

		if (!n)
			return;
		for (size_t k = 0; k < m->cap; k++) {
			if (!m->t[k].key)
				continue;
			for (i = (m->t[k].key * 0x9e3779b97f4a7c15ull) >> 20 & (cap - 1); n[i].key;
				i = (i + 1) & (cap - 1))
				;
			n[i] = m->t[k];
		}
		free(m->t);
		m->t = n;
		m->cap = cap;
	}
	for (i = (key * 0x9e3779b97f4a7c15ull) >> 20 & (m->cap - 1); m->t[i].key;
		i = (i + 1) & (m->cap - 1))
		if (m->t[i].key == key)
			break;
	if (!m->t[i].key)
		m->used++;
	m->t[i] = (struct kv){ key, val };
}

static void map_clear(struct map *m)
{
	if (m->t)
		memset(m->t, 0, m->cap * sizeof(*m->t));
	m->used = 0;
}

static void new_chunk_caches(struct unwinder *uw)
{
	uw->nnames = 0;
	map_clear(&uw->threads);
	map_clear(&uw->locs);
	memset(uw->end_loc, 0, sizeof(uw->end_loc));
}

static void chunk_meta(struct unwinder *uw)
{
	char buf[256];
	struct recorder *r = uw->rec;

	chunk_writer_meta(uw->w, "tracerd.version", TD_VERSION);
	snprintf(buf, sizeof(buf), "%u", r->cfg.hz);
	chunk_writer_meta(uw->w, "sampling.hz", buf);
	if (gethostname(buf, sizeof(buf)) == 0)
		chunk_writer_meta(uw->w, "host", buf);
	for (unsigned i = 0; i < r->cfg.npids; i++) {
		char path[64], cmd[256];
		int n;

		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)r->cfg.pids[i]);
		n = td_read_text(AT_FDCWD, path, cmd, sizeof(cmd));
		for (int k = 0; k < n - 1; k++)
			if (!cmd[k])
				cmd[k] = ' ';
		if (n > 0) {
			snprintf(buf, sizeof(buf), "target.%d.cmdline", (int)r->cfg.pids[i]);
			chunk_writer_meta(uw->w, buf, cmd);
		}
	}
	{
		struct timespec m, re;

		clock_gettime(CLOCK_MONOTONIC, &m);
		clock_gettime(CLOCK_REALTIME, &re);
		chunk_writer_clock_sync(uw->w,
			(uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec,
			(uint64_t)re.tv_sec * 1000000000u + (uint64_t)re.tv_nsec);
	}
}

/* The current chunk's writer, noticing a new chunk. */
static struct chunk_writer *writer(struct unwinder *uw)
{
	struct chunk_writer *w = repo_writer(uw->repo);

	if (!w) {
		int e = repo_error(uw->repo);

		if (!atomic_load(&uw->rec->io_err))
			atomic_store(&uw->rec->io_err, e ? e : -EIO);
		return NULL;
	}
	if (w != uw->w) {
		uw->w = w;
		new_chunk_caches(uw);
		chunk_meta(uw);
	}
	return w;
}

static void rotated(struct unwinder *uw)
{
	uw->w = NULL; /* the next writer() starts the caches anew */
}

static struct session *session_for(struct unwinder *uw, pid_t pid, bool create)
{
	struct session *free_slot = NULL;

	for (unsigned i = 0; i < TD_ARRAY_SIZE(uw->sess); i++) {
		if (uw->sess[i].pid == pid && uw->sess[i].s)
			return &uw->sess[i];
		if (!uw->sess[i].s && !free_slot)
			free_slot = &uw->sess[i];
	}
	if (!create || !free_slot)
		return NULL;
	{
		struct sym_options o = { .debuginfo_dir = uw->rec->cfg.debuginfo_dir };

		if (sym_session_new(pid, &o, uw->cache, &free_slot->s) < 0)
			return NULL;
	}
	free_slot->pid = pid;
	free_slot->built_ns = td_now_ns();
	return free_slot;
}

static void session_drop(struct unwinder *uw, pid_t pid)
{
	struct session *s = session_for(uw, pid, false);

	if (s) {
		sym_session_free(s->s);
		s->s = NULL;
		s->pid = 0;
	}
	map_clear(&uw->locs); /* addresses mean something else now */
}

static uint32_t thread_id(struct unwinder *uw, pid_t pid, pid_t tid)
{
	uint32_t id = map_get(&uw->threads, (uint64_t)(uint32_t)tid + 1);
	struct td_task_info info;

	if (id)
		return id;
	if (td_task_info_read(pid, tid, &info) < 0)
		snprintf(info.name, sizeof(info.name), "?");
	id = chunk_writer_thread(uw->w, (uint32_t)tid, (uint32_t)pid, info.name);
	if (id)
		map_put(&uw->threads, (uint64_t)(uint32_t)tid + 1, id);
	if (id >= uw->capnames) {
		size_t cap = uw->capnames ? uw->capnames * 2 : 64;
		struct tname *n;

		while (cap <= id)
			cap *= 2;
		n = realloc(uw->names, cap * sizeof(*n));
		if (n) {
			memset(n + uw->capnames, 0, (cap - uw->capnames) * sizeof(*n));
			uw->names = n;
			uw->capnames = cap;
		}
	}
	if (id && id < uw->capnames) {
		uw->names[id] = (struct tname){ .pid = pid, .tid = tid };
		memcpy(uw->names[id].name, info.name, sizeof(info.name));
		if (id >= uw->nnames)
			uw->nnames = id + 1;
	}
	return id;
}

/* Every 2 s, re-read the names of up to 256 threads of this chunk (round
 * robin) and record a rename (pthread_setname_np, prctl) as it is seen. */
static void check_renames(struct unwinder *uw, uint64_t now)
{
	if (!uw->w || now - uw->last_rename_check < 2000000000u)
		return;
	uw->last_rename_check = now;
	for (unsigned k = 0; k < 256 && uw->nnames > 1; k++) {
		struct td_task_info info;
		struct tname *t;
		size_t i = 1 + uw->rename_next++ % (uw->nnames - 1);

		t = &uw->names[i];
		if (!t->tid || td_task_info_read(t->pid, t->tid, &info) < 0)
			continue;
		if (strcmp(info.name, t->name)) {
			chunk_writer_thread_event(uw->w, now, (uint32_t)i, TCF_THREAD_RENAME,
				chunk_writer_string(uw->w, info.name));
			memcpy(t->name, info.name, sizeof(t->name));
		}
		if (k + 1 >= uw->nnames - 1)
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
static uint32_t location(struct unwinder *uw, struct sym_session *ss, pid_t pid, uint64_t pc,
	bool act)
{
	uint64_t key = ((uint64_t)(uint32_t)pid << 48) ^ (pc << 1) ^ act;
	struct chunk_line lines[64];
	uint32_t id = map_get(&uw->locs, key | 1ull << 63), mapping = 0;
	int n;

	if (id)
		return id;
	n = sym_session_symbolize(ss, pc, act, true, uw->frames, 64);
	for (int k = 0; k < n; k++) {
		const struct sym_frame *f = &uw->frames[k];

		lines[k] = (struct chunk_line){
			chunk_writer_function(uw->w, f->function ? f->function : "[unknown]", NULL,
				f->file, f->start_line > 0 ? (uint32_t)f->start_line : 0),
			(uint32_t)f->line, 0 };
	}
	if (n > 0 && uw->frames[0].module) {
		/* "[vdso: PID]" is libdwfl's name; the pid means nothing later */
		struct chunk_mapping m = { .path = !strncmp(uw->frames[0].module, "[vdso", 5) ?
							   "[vdso]" :
							   uw->frames[0].module };
		uint8_t bid[64];

		hex_to_bytes(uw->frames[0].build_id, bid, &m.build_id_len);
		m.build_id = bid;
		if (strstr(m.path, " (deleted)"))
			m.flags |= TCF_MAP_DELETED;
		mapping = chunk_writer_mapping(uw->w, &m);
	}
	id = chunk_writer_location(uw->w, mapping, mapping ? uw->frames[0].offset : pc, lines,
		(unsigned)(n > 0 ? n : 0));
	if (id)
		map_put(&uw->locs, key | 1ull << 63, id);
	return id;
}

/* A synthetic root frame that keeps a partial stack's reason visible. */
static uint32_t end_location(struct unwinder *uw, enum sym_end end)
{
	char name[96];
	struct chunk_line line;

	if (uw->end_loc[end])
		return uw->end_loc[end];
	snprintf(name, sizeof(name), "[stack cut: %s]", sym_end_name(end));
	line = (struct chunk_line){ chunk_writer_function(uw->w, name, NULL, NULL, 0), 0, 0 };
	uw->end_loc[end] = chunk_writer_location(uw->w, 0, 0, &line, 1);
	return uw->end_loc[end];
}

static uint32_t stack_of(struct unwinder *uw, const struct td_sample *s)
{
	struct session *se = session_for(uw, s->pid, true);
	unsigned n = 0;

	if (!se)
		return 0;
	sym_session_unwind(se->s, s, &uw->u);
	if (uw->u.end == SYM_END_NO_MODULE && td_now_ns() - se->built_ns > 1000000000u) {
		/* the maps changed (dlopen): see them anew, then retry */
		session_drop(uw, s->pid);
		se = session_for(uw, s->pid, true);
		if (!se)
			return 0;
		sym_session_unwind(se->s, s, &uw->u);
	}
	if (uw->u.end == SYM_END_WINDOW)
		atomic_store_explicit(&uw->rec->grow[s->tid % 1024], (uint32_t)s->tid,
			memory_order_relaxed);
	for (unsigned i = 0; i < uw->u.n; i++)
		uw->loc_ids[n++] = location(uw, se->s, s->pid, uw->u.pc[i], uw->u.activation[i]);
	if (uw->u.end != SYM_END_OUTERMOST) {
		atomic_fetch_add_explicit(&uw->rec->unwind_partial, 1, memory_order_relaxed);
		uw->loc_ids[n++] = end_location(uw, uw->u.end);
	}
	return chunk_writer_stack(uw->w, uw->loc_ids, n);
}

static enum tcf_state state_of(const struct td_sample *s)
{
	if (s->flags & TD_SAMPLE_GROUP_STOPPED)
		return TCF_STATE_STOPPED;
	if (s->flags & TD_SAMPLE_IN_SYSCALL)
		return TCF_STATE_SLEEPING;
	return TCF_STATE_ONCPU;
}

static void do_sample(struct unwinder *uw, const struct td_sample *s)
{
	uint32_t stack, tid;

	if (!writer(uw))
		return;
	stack = stack_of(uw, s);
	tid = thread_id(uw, s->pid, s->tid);
	if ((s->flags & TD_SAMPLE_HELD) && uw->crash.crash_id && s->tid == uw->crash.tid)
		chunk_writer_process_event(uw->w, uw->crash.time_ns, (uint32_t)s->pid,
			TCF_PROC_CRASH, 0, uw->crash.signo, uw->crash.addr, tid, stack);
	if (chunk_writer_sample(uw->w, s->time_ns, tid, state_of(s), stack, NULL, 0) == 0)
		atomic_fetch_add_explicit(&uw->rec->samples_written, 1, memory_order_relaxed);
}

static void do_event(struct unwinder *uw, const struct rec_event *e)
{
	if (!writer(uw))
		return;
	switch (e->kind) {
	case REC_EV_THREAD_NEW:
		chunk_writer_thread_event(uw->w, e->time_ns, thread_id(uw, e->pid, e->tid),
			TCF_THREAD_START, 0);
		break;
	case REC_EV_THREAD_EXIT:
		chunk_writer_thread_event(uw->w, e->time_ns, thread_id(uw, e->pid, e->tid),
			TCF_THREAD_EXIT, (uint64_t)(uint32_t)e->status);
		break;
	case REC_EV_EXEC:
		session_drop(uw, e->pid);
		map_clear(&uw->threads); /* names change with the image */
		chunk_writer_process_event(uw->w, e->time_ns, (uint32_t)e->pid, TCF_PROC_EXEC, 0, 0,
			0, thread_id(uw, e->pid, e->tid), 0);
		break;
	case REC_EV_CRASH:
		uw->crash = *e;
		break;
	case REC_EV_CRASH_DONE: {
		/* the crash's stacks were published before this event */
		void *p;

		while ((p = spsc_peek(&uw->rec->samples))) {
			do_sample(uw, p);
			spsc_pop(&uw->rec->samples);
		}
		/* the evidence on disk before the signal goes on */
		if (repo_rotate(uw->repo, TCF_END_TARGET_CRASH) < 0)
			atomic_store(&uw->rec->io_err, repo_error(uw->repo));
		rotated(uw);
		uw->crash.crash_id = 0;
		atomic_store(&uw->rec->crash_acked, e->crash_id);
		rec_wake(uw->rec->sampler_wake);
		break;
	}
	case REC_EV_PROCESS_EXIT:
		chunk_writer_process_event(uw->w, e->time_ns, (uint32_t)e->pid, TCF_PROC_EXIT,
			WIFEXITED(e->status) ? WEXITSTATUS(e->status) : -1,
			WIFSIGNALED(e->status) ? WTERMSIG(e->status) : 0, 0, 0, 0);
		uw->rec->exit_status_of_target = e->status;
		session_drop(uw, e->pid);
		break;
	default:
		break;
	}
}

/* Write a snapshot into REPO/snapshots/ and tell the control loop how it
 * went (dropped if the notice ring is full: the file is there anyway). */
static void take_snapshot(struct unwinder *uw)
{
	struct rec_notice *n = spsc_reserve(&uw->rec->notices);
	struct rec_notice local;
	unsigned repaired;

	if (!n)
		n = &local;
	*n = (struct rec_notice){ .kind = REC_NOTICE_SNAPSHOT };
	/* flushes the chunk, writes REPO/snapshots/ under a new name,
	 * relative to the repository's descriptor */
	n->err = repo_snapshot_into(uw->repo, n->path, sizeof(n->path), &n->chunks, &repaired,
		&n->bytes);
	if (n->err < 0)
		snprintf(n->path, sizeof(n->path), "%s/snapshots", repo_path(uw->repo));
	if (n != &local) {
		spsc_publish(&uw->rec->notices);
		rec_wake(uw->rec->main_wake);
	}
}

void *unwinder_main(void *arg)
{
	struct unwinder *uw = calloc(1, sizeof(*uw));
	struct recorder *r = arg;
	uint64_t last_flush = td_now_ns();
	int reason = TCF_END_STOP;

	if (!uw || sym_cache_new(&uw->cache) < 0) {
		atomic_store(&r->io_err, -ENOMEM);
		goto out;
	}
	uw->rec = r;
	uw->repo = (struct repo *)r->repo_handle;
	/* Unwinding can wait; the target and the sampler cannot. */
	setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	pthread_setname_np(pthread_self(), "tracerd-unwind");
	for (;;) {
		struct pollfd pfd = { r->unwinder_wake, POLLIN, 0 };
		bool done = atomic_load(&r->sampler_done);
		bool hurry = atomic_load(&r->stop) >= 2;
		uint64_t junk, now;

		/* Events and samples in time order: a sample taken before an
		 * exec must be unwound against the old image, before the exec
		 * drops its session. */
		for (;;) {
			struct rec_event *e = spsc_peek(&r->events);
			struct td_sample *smp = spsc_peek(&r->samples);

			if (e && (!smp || e->time_ns <= smp->time_ns)) {
				do_event(uw, e);
				spsc_pop(&r->events);
			} else if (smp) {
				if (!hurry)
					do_sample(uw, smp);
				spsc_pop(&r->samples);
			} else {
				break;
			}
		}
		if (spsc_peek(&r->events) || spsc_peek(&r->samples))
			continue;
		if (!atomic_load(&r->startup_samples) && atomic_load(&r->samples_written)) {
			/* the sessions are built: what follows is the steady state */
			struct rusage ru;

			getrusage(RUSAGE_SELF, &ru);
			atomic_store(&r->startup_cpu_us,
				(uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
					(uint64_t)ru.ru_stime.tv_sec * 1000000u +
					(uint64_t)ru.ru_stime.tv_usec);
			atomic_store(&r->startup_samples, atomic_load(&r->samples_taken));
		}
		now = td_now_ns();
		if (atomic_exchange(&r->rotate_req, 0)) {
			if (repo_rotate(uw->repo, TCF_END_ROTATE) < 0)
				atomic_store(&r->io_err, repo_error(uw->repo));
			rotated(uw);
		}
		if (atomic_exchange(&r->snapshot_req, 0))
			take_snapshot(uw);
		check_renames(uw, now);
		if (now - last_flush >= 1000000000u && uw->w) {
			chunk_writer_flush(uw->w);
			if (repo_tick(uw->repo, now) == 1)
				rotated(uw);
			atomic_store(&r->bytes_written, repo_bytes_written(uw->repo));
			last_flush = now;
		}
		if (repo_error(uw->repo) && !atomic_load(&r->io_err))
			atomic_store(&r->io_err, repo_error(uw->repo));
		if (atomic_load(&r->io_err)) {
			/* disk full and the like: stop recording, keep what is
			 * written (whole blocks) */
			atomic_store(&r->stop, 1);
			rec_wake(r->sampler_wake);
		}
		if (done)
			break;
		if (poll(&pfd, 1, 50) > 0 && read(r->unwinder_wake, &junk, sizeof(junk)) < 0)
			junk = 0;
	}
	if (atomic_load(&r->targets_live) <= 0)
		reason = TCF_END_TARGET_EXIT;
	if (!atomic_load(&r->io_err)) {
		/* finish the chunk first, so that its size is counted */
		int e = repo_rotate(uw->repo, reason);

		if (e < 0)
			atomic_store(&r->io_err, e);
	}
	atomic_store(&r->bytes_written, repo_bytes_written(uw->repo));
	repo_close(uw->repo, reason);
	r->repo_handle = NULL;
out:
	if (uw) {
		for (unsigned i = 0; i < TD_ARRAY_SIZE(uw->sess); i++)
			sym_session_free(uw->sess[i].s);
		sym_cache_free(uw->cache);
		free(uw->threads.t);
		free(uw->locs.t);
		free(uw->names);
		free(uw);
	}
	atomic_store(&r->unwinder_done, 1);
	rec_wake(r->main_wake);
	return NULL;
}
