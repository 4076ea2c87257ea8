/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The writer's stacks: a sample's copied stack unwound with its process's
 * libdwfl session (built when first needed, dropped at exec and exit,
 * renewed when a pc falls outside every known module after the maps
 * changed: a dlopen; as many as processes are sampled, the least recently
 * used freed past a memory budget, WRITER_SESSIONS_BYTES), each frame
 * symbolized through the caches into a location of the current chunk,
 * and the chunk's stack of them.  A
 * thread's last unwind, with the Python frames read with it, is kept for
 * the repeats (samples without stack bytes) that reuse it.
 *
 * Guarantees: a sample always gets a stack, if only one frame that says
 * why there is no other (its process's maps never read, or no session
 * within the budget while every other is in use, time runnable
 * where no sample saw it, a stack cut short and why).  Tells the sampler,
 * through rec_shared, which images have a session (maps_read: their exits
 * need no hold) and the window each thread's stacks need (fit[]).
 * Leaves to writer.c the chunk itself and the thread ids. */
#define _GNU_SOURCE
#include "writer-internal.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"

/* Tell the sampler that pid's current image has a session: its exit
 * need not be held (rec_shared.maps_read). */
static void maps_read(struct writer *w, pid_t pid)
{
	uint64_t image = 0;

	if (!td_map_get(&w->stacks.images, (uint64_t)(uint32_t)pid, &image))
		return; /* not told which: the sampler holds its exit, to be safe */
	atomic_store_explicit(&w->sh->maps_read[(uint32_t)pid % REC_READ_SLOTS],
		(uint64_t)(uint32_t)pid << 32 | (uint32_t)image, memory_order_release);
}

/* pid's process is gone: its PID may name the next target. */
void maps_forget(struct writer *w, pid_t pid)
{
	_Atomic uint64_t *slot = &w->sh->maps_read[(uint32_t)pid % REC_READ_SLOTS];

	td_map_remove(&w->stacks.images, (uint64_t)(uint32_t)pid);
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
	int r = sym_session_new(pid, &o, w->stacks.cache, ret_session);

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

static void debug_stats_add(struct sym_debug_stats *sum, const struct sym_session *s)
{
	struct sym_debug_stats d;

	sym_session_debug_stats(s, &d);
	sum->reused += d.reused;
	sum->created += d.created;
	sum->failed += d.failed;
	sum->tables_reused += d.tables_reused;
	sum->tables_made += d.tables_made;
	sum->over_bound += d.over_bound;
	if (d.err)
		sum->err = d.err;
}

/* pid's mappings could not be read (err): the first time, counted and
 * told (REC_NOTICE_UNREADABLE); tried again in a second, not at every
 * sample of it. */
static void denied_note(struct writer *w, pid_t pid, int err)
{
	uint64_t key = (uint64_t)(uint32_t)pid, retry = td_now_ns() + 1000000000u;

	if (td_map_set(&w->stacks.denied, key, retry) == 1) {
		atomic_fetch_add_explicit(&w->sh->maps_denied, 1, memory_order_relaxed);
		atomic_store_explicit(&w->sh->maps_denied_err, err, memory_order_relaxed);
		writer_notify(w, &(struct rec_notice){ .kind = REC_NOTICE_UNREADABLE, .err = err,
					 .id = { pid, 0 } });
	}
}

static bool denied(const struct writer *w, pid_t pid)
{
	uint64_t v;

	return td_map_get(&w->stacks.denied, (uint64_t)(uint32_t)pid, &v);
}

/* The heap in use now, every arena (the measure of a session's weight). */
static uint64_t heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Add to se's weight the heap it took since at: its build (then the
 * floor too), and its first unwind (the DWARF and CFI that reads). */
static void session_weigh(struct writer *w, struct session *se, uint64_t at)
{
	uint64_t now = heap_used(), add = now > at ? now - at : 0;

	if (!se->bytes)
		add += WRITER_SESSION_MIN_BYTES;
	se->bytes += add;
	w->stacks.sess_bytes += add;
}

/* Session i out of the table (not freed): the last takes its place. */
static void session_unlist(struct writer *w, size_t i)
{
	struct session *se = w->stacks.sess[i];

	td_map_remove(&w->stacks.sess_idx, (uint64_t)(uint32_t)se->pid);
	w->stacks.sess_bytes -= TD_MIN(se->bytes, w->stacks.sess_bytes);
	w->stacks.sess[i] = w->stacks.sess[--w->stacks.nsess];
	if (i < w->stacks.nsess)
		map_put(&w->stacks.sess_idx, (uint64_t)(uint32_t)w->stacks.sess[i]->pid,
			(uint32_t)i + 1);
}

static void session_destroy(struct writer *w, struct session *se)
{
	debug_stats_add(&w->stacks.debug_gone, se->s);
	py_forget(se);
	sym_session_free(se->s);
	free(se);
}

/* Room for more bytes of sessions: past the budget, the least recently
 * used go (their location ids with them: an address may mean something
 * else in the one built next), but none used within
 * WRITER_SESSION_IDLE_NS of now: then false, no room.  A linear search,
 * at a new session only. */
static bool sessions_fit(struct writer *w, uint64_t more, uint64_t now)
{
	bool freed = false, room = true;

	while (w->stacks.nsess && w->stacks.sess_bytes + more > WRITER_SESSIONS_BYTES) {
		size_t lru = 0;
		struct session *se;

		for (size_t i = 1; i < w->stacks.nsess; i++)
			if (w->stacks.sess[i]->used_ns < w->stacks.sess[lru]->used_ns)
				lru = i;
		se = w->stacks.sess[lru];
		if (se->used_ns + WRITER_SESSION_IDLE_NS > now) {
			room = false;
			break;
		}
		session_unlist(w, lru);
		session_destroy(w, se);
		freed = true;
	}
	if (freed)
		td_map_clear(&w->ids.locs);
	return room;
}

struct session *session_for(struct writer *w, pid_t pid, bool create)
{
	uint32_t k = map_get(&w->stacks.sess_idx, (uint64_t)(uint32_t)pid);
	struct session *se;
	uint64_t retry, at, now = td_now_ns();
	int r;

	if (k) {
		se = w->stacks.sess[k - 1];
		se->used_ns = now;
		return se;
	}
	if (!create)
		return NULL;
	w->stacks.sess_full = false;
	if (td_map_get(&w->stacks.denied, (uint64_t)(uint32_t)pid, &retry) && now < retry)
		return NULL;
	if (!sessions_fit(w, WRITER_SESSION_MIN_BYTES, now)) {
		w->stacks.sess_full = true;
		return NULL;
	}
	if (td_array_grow(w->stacks.sess, w->stacks.capsess, w->stacks.nsess + 1, 64) < 0 ||
		!(se = calloc(1, sizeof(*se))))
		return NULL;
	at = heap_used();
	r = session_build(w, pid, &se->s);
	if (r == -EACCES || r == -EPERM)
		denied_note(w, pid, r);
	if (r < 0 || td_map_set(&w->stacks.sess_idx, (uint64_t)(uint32_t)pid,
			     w->stacks.nsess + 1) < 0) {
		sym_session_free(se->s);
		free(se);
		return NULL;
	}
	td_map_remove(&w->stacks.denied, (uint64_t)(uint32_t)pid); /* readable now */
	w->stacks.sess[w->stacks.nsess++] = se;
	se->pid = pid;
	se->built_ns = se->used_ns = td_now_ns();
	se->jit_gen = sym_session_jit_generation(se->s);
	session_weigh(w, se, at);
	return se;
}

void sessions_free(struct writer *w)
{
	for (size_t i = 0; i < w->stacks.nsess; i++) {
		py_forget(w->stacks.sess[i]); /* it borrows the session's modules */
		sym_session_free(w->stacks.sess[i]->s);
		free(w->stacks.sess[i]);
	}
	free(w->stacks.sess);
	td_map_free(&w->stacks.sess_idx);
	td_map_free(&w->stacks.denied);
}

/* What the debuginfo cache did, for rec_stats. */
void debug_stats_store(struct writer *w)
{
	struct sym_debug_stats sum = w->stacks.debug_gone;

	for (size_t i = 0; i < w->stacks.nsess; i++)
		debug_stats_add(&sum, w->stacks.sess[i]->s);
	atomic_store(&w->sh->debug_reused, sum.reused);
	atomic_store(&w->sh->debug_created, sum.created);
	atomic_store(&w->sh->debug_failed, sum.failed);
	atomic_store(&w->sh->tables_reused, sum.tables_reused);
	atomic_store(&w->sh->tables_made, sum.tables_made);
	atomic_store(&w->sh->debug_err, sum.err);
	atomic_store(&w->sh->debug_over_bound, sum.over_bound);
}

void session_drop(struct writer *w, pid_t pid)
{
	uint32_t k = map_get(&w->stacks.sess_idx, (uint64_t)(uint32_t)pid);

	/* its PID may come back as another process's */
	td_map_remove(&w->stacks.denied, (uint64_t)(uint32_t)pid);
	if (k) {
		struct session *se = w->stacks.sess[k - 1];

		session_unlist(w, k - 1);
		session_destroy(w, se);
	}
	td_map_clear(&w->ids.locs); /* addresses mean something else now */
}

/* The process's mappings changed (dlopen): read them anew.  The old
 * session stays when that fails (the process is gone): its modules still
 * name what they named.  renew_due says when.  Returns whether it read
 * them. */
static bool session_renew(struct writer *w, struct session *se)
{
	struct sym_session *fresh;
	uint64_t at = heap_used();

	se->built_ns = td_now_ns();
	if (session_build(w, se->pid, &fresh) < 0)
		return false;
	/* weighed anew: the build now, its first unwind next */
	w->stacks.sess_bytes -= TD_MIN(se->bytes, w->stacks.sess_bytes);
	se->bytes = 0;
	session_weigh(w, se, at);
	se->weighed = false;
	debug_stats_add(&w->stacks.debug_gone, se->s);
	py_forget(se); /* it borrowed the old session's modules */
	sym_session_free(se->s);
	se->s = fresh;
	se->jit_gen = sym_session_jit_generation(fresh);
	td_map_clear(&w->ids.locs); /* the cached locations were of the old session */
	return true;
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
	uint32_t id = map_get(&w->ids.locs, key | 1ull << 63), mapping = 0;
	int n;

	if (id)
		return id;
	n = sym_session_symbolize(ss, pc, act, true, w->stacks.frames, 64);
	for (int k = 0; k < n; k++) {
		const struct sym_frame *f = &w->stacks.frames[k];

		lines[k] = (struct chunk_line){
			chunk_writer_function(w->cw, f->function ? f->function : "[unknown]", NULL,
				f->file, f->start_line > 0 ? (uint32_t)f->start_line : 0),
			(uint32_t)f->line, 0 };
	}
	if (n > 0 && w->stacks.frames[0].module) {
		/* "[vdso: PID]" is libdwfl's name; the pid means nothing later */
		struct chunk_mapping m = { .path = !strncmp(w->stacks.frames[0].module, "[vdso", 5) ?
							   "[vdso]" :
							   w->stacks.frames[0].module };
		uint8_t bid[64];

		hex_to_bytes(w->stacks.frames[0].build_id, bid, &m.build_id_len);
		m.build_id = bid;
		if (strstr(m.path, " (deleted)"))
			m.flags |= TCF_MAP_DELETED;
		mapping = chunk_writer_mapping(w->cw, &m);
	}
	id = chunk_writer_location(w->cw, mapping, mapping ? w->stacks.frames[0].offset : pc, lines,
		(unsigned)(n > 0 ? n : 0));
	if (id)
		map_put(&w->ids.locs, key | 1ull << 63, id);
	return id;
}

/* A synthetic root frame that keeps a partial stack's reason visible. */
static uint32_t end_location(struct writer *w, enum sym_end end)
{
	char name[96];
	struct chunk_line line;

	if (w->ids.end_loc[end])
		return w->ids.end_loc[end];
	snprintf(name, sizeof(name), "[stack cut: %s]", sym_end_name(end));
	line = (struct chunk_line){ chunk_writer_function(w->cw, name, NULL, NULL, 0), 0, 0 };
	w->ids.end_loc[end] = chunk_writer_location(w->cw, 0, 0, &line, 1);
	return w->ids.end_loc[end];
}

/* Is the innermost pc in no module the session knows?  The end reason
 * alone does not tell: libdw's frame-pointer fallback may walk past such a
 * pc and end on a failed read instead. */
static bool innermost_unmapped(struct sym_session *ss, const struct sym_unwound *u)
{
	if (u->end == SYM_END_NO_MODULE)
		return true;
	return u->n && !sym_session_mapped(ss, u->pc[0], u->activation[0]);
}

/* Renew the session of an unwind that met a pc outside its modules (u, by
 * innermost_unmapped)?  When a file is mapped over that pc now (a library
 * mapped since the build: ld.so's at a program's start, python's C
 * modules, plugins), or the build is a second old.  The innermost pc is
 * looked at, and the last frame's when the unwind ended at it (a return
 * address may end its mapping: the call's).  Reading the maps is what
 * costs: code outside every file (a JIT's) would read them at every
 * sample, so each read that finds nothing doubles the wait before the
 * next (RENEW_WAIT_MIN_NS up to a second). */
#define RENEW_WAIT_MIN_NS 10000000u
static bool renew_due(struct session *se, pid_t tid, const struct sym_unwound *u)
{
	unsigned k = u->end == SYM_END_NO_MODULE && u->n ? u->n - 1 : 0;
	uint64_t now = td_now_ns();

	if (now - se->built_ns > 1000000000u)
		return true;
	if (!u->n || now < se->renew_at)
		return false;
	se->renew_wait = se->renew_wait ? TD_MIN(se->renew_wait * 2, 1000000000u) : RENEW_WAIT_MIN_NS;
	se->renew_at = now + se->renew_wait;
	/* the sampled thread's maps (its process's leader may be a zombie) */
	return td_maps_file_at(tid, u->pc[0] - !u->activation[0]) == 1 ||
	       (k && td_maps_file_at(tid, u->pc[k] - !u->activation[k]) == 1);
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
	return note_stack(w, &w->ids.preempted_loc, "[runnable: preempted where no sample saw it]");
}

/* A sample of a process whose mappings could not be read (it was gone
 * before the writer came to it: its exit hold timed out): placed, and
 * counted as not unwound, not dropped. */
static uint32_t nomaps_stack(struct writer *w)
{
	atomic_fetch_add_explicit(&w->sh->unwind_partial, 1, memory_order_relaxed);
	return note_stack(w, &w->ids.nomaps_loc, "[not unwound: its process's maps were not read]");
}

/* Location id of a kernel frame at live address ip: its function from
 * /proc/kallsyms (read at the first one), in a mapping "[kernel]" (or
 * "[MODULE]"); no address is written (a live one would show where KASLR
 * put the kernel). */
static uint32_t kernel_location(struct writer *w, uint64_t ip)
{
	uint32_t id = map_get(&w->ids.klocs, ip), mapping;
	struct sym_kframe kf = { "[kernel]", "kernel", 0 };
	struct chunk_mapping m = { 0 };
	struct chunk_line line;
	char path[80];

	if (id)
		return id;
	if (!w->stacks.kallsyms && !w->stacks.kallsyms_err)
		w->stacks.kallsyms_err = sym_kallsyms_load(NULL, &w->stacks.kallsyms);
	sym_kallsyms_find(w->stacks.kallsyms, ip, &kf);
	snprintf(path, sizeof(path), "[%s]", kf.module);
	m.path = path;
	mapping = chunk_writer_mapping(w->cw, &m);
	line = (struct chunk_line){ chunk_writer_function(w->cw, kf.name, NULL, NULL, 0), 0, 0 };
	id = chunk_writer_location(w->cw, mapping, 0, &line, 1);
	if (id)
		map_put(&w->ids.klocs, ip, id);
	return id;
}

/* The JIT's files (a perf map, a jitdump) named more since the locations
 * kept were made: a pc kept unnamed, or named by code since freed, may be
 * named otherwise now.  A file refused is told once (REC_NOTICE_JIT). */
static void jit_check(struct writer *w, struct session *se)
{
	uint64_t gen = sym_session_jit_generation(se->s);
	struct rec_notice n = { .kind = REC_NOTICE_JIT, .id = { se->pid, 0 } };

	if (gen != se->jit_gen) {
		se->jit_gen = gen;
		td_map_clear(&w->ids.locs);
	}
	n.err = sym_session_jit_refused(se->s, n.path, sizeof(n.path));
	if (n.err && !se->jit_told) {
		se->jit_told = true;
		writer_notify(w, &n);
	}
}

/* The chunk's stack for the unwound frames in w->stacks.u, below the
 * kernel frames in w->stacks.kips (none: nkips 0), with the Python frames
 * of w->py in place of the native frames that run them. */
uint32_t stack_of_unwound(struct writer *w, struct sym_session *ss, pid_t pid)
{
	unsigned n = 0, k = 0;

	for (unsigned i = 0; i < w->stacks.nkips && i < TD_KERNEL_FRAMES; i++)
		w->stacks.loc_ids[n++] = kernel_location(w, w->stacks.kips[i]);
	w->stacks.nkips = 0;
	for (unsigned i = 0; i < w->stacks.u.n; i++) {
		if (k < w->py.n && w->py.native[k] == i) {
			/* py_read bounded them: u.n + py.n <= SYM_MAX_FRAMES */
			while (k < w->py.n && w->py.native[k] == i)
				w->stacks.loc_ids[n++] = w->py.ids[k++];
			continue;
		}
		w->stacks.loc_ids[n++] = location(w, ss, pid, w->stacks.u.pc[i], w->stacks.u.activation[i]);
	}
	if (w->stacks.u.end != SYM_END_OUTERMOST) {
		atomic_fetch_add_explicit(&w->sh->unwind_partial, 1, memory_order_relaxed);
		w->stacks.loc_ids[n++] = end_location(w, w->stacks.u.end);
	}
	return chunk_writer_stack(w->cw, w->stacks.loc_ids, n);
}

struct saved *saved_of(struct writer *w, pid_t tid, bool create)
{
	uint32_t k = map_get(&w->stacks.last, (uint64_t)(uint32_t)tid);
	struct saved *sv;

	/* the map keeps a tid's slot after its exit freed it, and the slot
	 * may hold another thread since */
	if (k && w->stacks.saved[k - 1].tid == tid)
		return &w->stacks.saved[k - 1];
	if (!create)
		return NULL;
	for (k = 0; k < w->stacks.nsaved && w->stacks.saved[k].tid; k++)
		;
	if (k == w->stacks.nsaved) {
		if (td_array_grow(w->stacks.saved, w->stacks.capsaved, w->stacks.nsaved + 1, 64) < 0)
			return NULL;
		w->stacks.saved[w->stacks.nsaved++] = (struct saved){ 0 };
	}
	sv = &w->stacks.saved[k];
	sv->tid = tid;
	map_put(&w->stacks.last, (uint64_t)(uint32_t)tid, k + 1);
	return sv;
}

/* Keep the Python frames of w->py with sv, or none if they do not fit. */
static void save_python(struct writer *w, struct saved *sv)
{
	struct sym_py_frame *f;
	uint16_t *native;

	sv->npy = 0;
	if (!w->py.n)
		return;
	f = realloc(sv->pyf, w->py.n * sizeof(*f));
	if (f)
		sv->pyf = f;
	native = realloc(sv->pynative, w->py.n * sizeof(*native));
	if (native)
		sv->pynative = native;
	if (!f || !native)
		return;
	memcpy(sv->pyf, w->py.f, w->py.n * sizeof(*f));
	memcpy(sv->pynative, w->py.native, w->py.n * sizeof(*native));
	sv->npy = w->py.n;
}

/* Keep the unwind of a thread copied while blocked, and its Python
 * frames (py_read first), for its repeats. */
static void save_unwound(struct writer *w, pid_t tid, bool perf)
{
	struct saved *sv = saved_of(w, tid, true);
	uint64_t *pc;
	bool *act;

	if (!sv)
		return;
	pc = realloc(sv->pc, (w->stacks.u.n + 1) * sizeof(*pc));
	if (pc)
		sv->pc = pc;
	act = realloc(sv->act, (w->stacks.u.n + 1) * sizeof(*act));
	if (act)
		sv->act = act;
	if (!pc || !act) {
		sv->n = 0;
		sv->npy = 0;
		sv->end = SYM_END_NO_REGS;
		return;
	}
	memcpy(sv->pc, w->stacks.u.pc, w->stacks.u.n * sizeof(*pc));
	memcpy(sv->act, w->stacks.u.activation, w->stacks.u.n * sizeof(*act));
	sv->n = w->stacks.u.n;
	sv->nk = 0;
	if (w->stacks.nkips && !sv->kip)
		sv->kip = malloc(TD_KERNEL_FRAMES * sizeof(*sv->kip));
	if (w->stacks.nkips && sv->kip) {
		sv->nk = TD_MIN(w->stacks.nkips, (unsigned)TD_KERNEL_FRAMES);
		memcpy(sv->kip, w->stacks.kips, sv->nk * sizeof(*sv->kip));
	}
	sv->end = w->stacks.u.end;
	sv->perf = perf;
	save_python(w, sv);
}

void saved_drop(struct writer *w, pid_t tid)
{
	struct saved *sv = saved_of(w, tid, false);

	if (!sv)
		return;
	free(sv->pc);
	free(sv->act);
	free(sv->kip);
	free(sv->pyf);
	free(sv->pynative);
	*sv = (struct saved){ 0 };
	/* the map keeps tid -> slot; a later thread of that tid reuses it */
}

/* A sample of a process without a session while the sessions of others,
 * all in use, hold the budget (WRITER_SESSIONS_BYTES): placed, counted as
 * not unwound, with a frame that says why. */
static uint32_t budget_stack(struct writer *w)
{
	atomic_fetch_add_explicit(&w->sh->unwind_partial, 1, memory_order_relaxed);
	return note_stack(w, &w->ids.budget_loc,
		"[not unwound: the writer's sessions are at their memory budget]");
}

/* A sample of a process whose mappings it may not read: placed, counted
 * as not unwound, with a frame that says why. */
static uint32_t denied_stack(struct writer *w)
{
	atomic_fetch_add_explicit(&w->sh->unwind_partial, 1, memory_order_relaxed);
	return note_stack(w, &w->ids.denied_loc,
		"[not unwound: its maps may not be read (permission)]");
}

/* Stack copies that fit (rec_shared.fit): a thread's copies cost its
 * CPU (perf: the kernel copies at every sample, and in wall mode at every
 * switch off a CPU) and the rings' room, in proportion to their size, so
 * each is sized to the thread's stacks.  A stack cut at the window's edge
 * asks for all there is at once (the sampler bounds it: the kernel's
 * limit, --stack-bytes): doubling would cut the next few too.  A span of
 * at least FIT_SPAN_SAMPLES samples and hold ns after which the deepest
 * the thread's unwinds ever read (a cut copy counts whole) is less than
 * three quarters of what was copied asks for that and half as much
 * again, plus FIT_SLACK bytes, in KiB: never less than a stack the
 * thread had, so that a program whose phases go deeper (a compiler's
 * parser, then its optimizer) is cut once per new depth at most, each
 * cut costing the samples of a round trip to the sampler (100 ms: a
 * hundred at 999 Hz).  The first span
 * is short (FIT_HOLD_FIRST_NS: perf's copies start whole, the dearest;
 * a thread that switches 20,000 times a second pays for each); a cut
 * after a shrink makes the next span at least FIT_HOLD_NS and doubles it
 * from there (up to FIT_HOLD_MAX_NS), so a thread whose deep stacks are
 * rare settles at its whole window rather than flapping.
 * A stack longer than the kernel copies at its limit is counted
 * (cut_by_kernel), asks nothing (more cannot be had) and returns true:
 * its end says so (SYM_END_KERNEL_LIMIT). */
#define FIT_SPAN_SAMPLES 32
#define FIT_SLACK 1024u
#define FIT_HOLD_FIRST_NS 250000000ull
#define FIT_HOLD_NS 2000000000ull
#define FIT_HOLD_MAX_NS 64000000000ull
#define FIT_KERNEL_EDGE 1024u /* a perf copy this near PT_PERF_MAX_STACK was whole */

static void fit_ask(struct writer *w, pid_t tid, uint32_t bytes)
{
	atomic_store_explicit(&w->sh->fit[tid % REC_FIT_SLOTS],
		(uint64_t)(uint32_t)tid << 32 | bytes, memory_order_relaxed);
}

static bool fit_window(struct writer *w, const struct td_sample *s)
{
	struct fit *f = &w->stacks.fit[s->tid % REC_FIT_SLOTS];
	const struct sym_unwound *u = &w->stacks.u;

	if (!s->stack_len)
		return false; /* no copy: nothing learned */
	if (f->tid != s->tid)
		*f = (struct fit){ .tid = s->tid, .since = s->time_ns, .hold = FIT_HOLD_FIRST_NS };
	if (u->end == SYM_END_WINDOW) {
		if ((s->flags & TD_SAMPLE_PERF) && s->stack_len + FIT_KERNEL_EDGE >= PT_PERF_MAX_STACK) {
			atomic_fetch_add_explicit(&w->sh->cut_by_kernel, 1, memory_order_relaxed);
			return true;
		}
		fit_ask(w, s->tid, UINT32_MAX);
		if (f->shrunk)
			f->hold = TD_MIN(TD_MAX(f->hold * 2, FIT_HOLD_NS), FIT_HOLD_MAX_NS);
		*f = (struct fit){ .tid = s->tid, .since = s->time_ns, .hold = f->hold,
			.deepest = TD_MAX(f->deepest, s->stack_len) };
		return false;
	}
	f->deepest = TD_MAX(f->deepest, u->window_used);
	f->copied = TD_MAX(f->copied, s->stack_len);
	if (++f->n < FIT_SPAN_SAMPLES || s->time_ns < f->since + f->hold)
		return false;
	if ((uint64_t)f->deepest * 4 < (uint64_t)f->copied * 3) {
		uint32_t want = (f->deepest + f->deepest / 2 + FIT_SLACK + 1023) & ~1023u;

		if (want < f->copied) {
			fit_ask(w, s->tid, want);
			f->shrunk = true;
		}
	}
	*f = (struct fit){ .tid = s->tid, .since = s->time_ns, .hold = f->hold,
		.shrunk = f->shrunk, .deepest = f->deepest };
	return false;
}

uint32_t stack_of(struct writer *w, const struct td_sample *s)
{
	struct session *se = session_for(w, s->pid, true);
	uint32_t id;

	w->py.n = 0;
	if (!se)
		return denied(w, s->pid)      ? denied_stack(w) :
		       w->stacks.sess_full ? budget_stack(w) :
					     nomaps_stack(w);
	if (s->flags & TD_SAMPLE_REPEAT) {
		/* unchanged since its last copy: the same frames */
		struct saved *sv = saved_of(w, s->tid, false);
		/* preempted after it ran: only a perf sample since shows where */
		bool preempted = (s->flags & TD_SAMPLE_RUNNABLE) && !(s->flags & TD_SAMPLE_IN_SYSCALL);

		if (sv && !(preempted && !sv->perf)) {
			memcpy(w->stacks.u.pc, sv->pc, sv->n * sizeof(*sv->pc));
			memcpy(w->stacks.u.activation, sv->act, sv->n * sizeof(*sv->act));
			w->stacks.u.n = sv->n;
			w->stacks.u.end = sv->end;
			w->stacks.kips = sv->kip;
			w->stacks.nkips = sv->nk;
			/* and the Python frames read with it: read now, they
			 * would be whatever the thread ran since, unchecked (no
			 * copy to check them against) */
			py_restore(w, se, s->pid, sv);
			return stack_of_unwound(w, se->s, s->pid);
		}
		if (s->flags & TD_SAMPLE_RUNNABLE)
			return preempted_location(w);
		w->stacks.u.n = 0;
		w->stacks.u.end = SYM_END_NO_REGS;
		return stack_of_unwound(w, se->s, s->pid);
	}
	if (!se->weighed) {
		uint64_t at = heap_used();

		sym_session_unwind(se->s, s, &w->stacks.u);
		session_weigh(w, se, at);
		se->weighed = true;
	} else {
		sym_session_unwind(se->s, s, &w->stacks.u);
	}
	w->stacks.kips = s->kernel_ips;
	w->stacks.nkips = s->flags & TD_SAMPLE_KCHAIN ? TD_MIN(s->nkernel, TD_KERNEL_FRAMES) : 0;
	/* the maps changed (dlopen): see them anew, then retry */
	if (innermost_unmapped(se->s, &w->stacks.u) && renew_due(se, s->tid, &w->stacks.u) &&
		session_renew(w, se)) {
		sym_session_unwind(se->s, s, &w->stacks.u);
		/* placed: more libraries may follow (a program's start, a
		 * burst of imports), seen at once again; still outside every
		 * module (a file libdwfl did not report), the wait grows */
		if (!innermost_unmapped(se->s, &w->stacks.u))
			se->renew_wait = 0;
	}
	if (fit_window(w, s))
		w->stacks.u.end = SYM_END_KERNEL_LIMIT;
	/* the stack a repeat uses: a blocked thread's, and in wall mode a
	 * running one's (its time waiting for a CPU repeats it); not a lock
	 * owner's taken for the waits alone, which no sample of the profile
	 * saw */
	py_read(w, se, s);
	if (((s->flags & TD_SAMPLE_NOSTOP) || w->cfg->mode == REC_MODE_WALL) &&
		!(s->flags & TD_SAMPLE_OWNER))
		save_unwound(w, s->tid, s->flags & TD_SAMPLE_PERF);
	id = stack_of_unwound(w, se->s, s->pid);
	jit_check(w, se);
	return id;
}
