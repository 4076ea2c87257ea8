/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Loading and merging chunks into one profile.  Definitions are per chunk,
 * so every id is remapped: strings, frames and stack nodes are interned by
 * content into the profile's own tables.  A stack is resolved once per
 * chunk (cached by its chunk id) into a path of the merged prefix tree.
 * Damaged and unfinished chunks give what they hold; what was skipped is
 * summed up once in the load report.
 *
 * An emergency dump's chunks (header flag "emergency") are about the death
 * of their target_pid: unless --pid chose, only that process's samples,
 * threads and waits are kept from them.  The rows of deaths (death stacks,
 * crashes, OOM kills, exits) are read whatever the filters: the death
 * section shows them for the dead processes. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *rp_str(const struct rp_profile *p, uint32_t id)
{
	return id && id < p->nstrs ? p->strs[id] : NULL;
}

const char *rp_text(const struct rp_profile *p, uint32_t id)
{
	const char *s = rp_str(p, id), *t;

	if (!s)
		return NULL;
	t = s + strlen(s) + 1;
	return *t ? t : s;
}

/* A copy of s followed by its text form (td_text_escape) when that
 * differs, else by an empty string: rp_text finds it after the NUL, and
 * escaping is done once per distinct string, not per line written. */
static char *str_dup_with_text(const char *s)
{
	size_t n = strlen(s), t = td_text_is_safe(s) ? 0 : td_text_escape(NULL, 0, s);
	char *d = td_malloc(n + 1 + t + 1);

	if (!d)
		return NULL;
	memcpy(d, s, n + 1);
	if (t)
		td_text_escape(d + n + 1, t + 1, s);
	else
		d[n + 1] = '\0';
	return d;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Interned string id (>= 1), 0 for NULL or on failure. */
static uint32_t intern(struct rp_profile *p, const char *s)
{
	uint64_t h, id;
	size_t cur = 0;

	if (!s)
		return 0;
	if (!p->nstrs) {
		if (td_array_grow(p->strs, p->capstrs, 1, 256) < 0)
			return 0;
		p->strs[p->nstrs++] = NULL; /* id 0 */
	}
	/* the map holds hash -> id; equal hashes of different strings are
	 * told apart by comparing */
	h = str_hash(s);
	while (td_map_find_next(&p->str_index, h, &cur, &id))
		if (!strcmp(p->strs[id], s))
			return (uint32_t)id;
	if (td_array_grow(p->strs, p->capstrs, p->nstrs + 1, 256) < 0)
		return 0;
	p->strs[p->nstrs] = str_dup_with_text(s);
	if (!p->strs[p->nstrs] || td_map_add(&p->str_index, h, p->nstrs) < 0)
		return 0;
	return (uint32_t)p->nstrs++;
}

static uint32_t frame_id(struct rp_profile *p, const struct rp_frame *f)
{
	uint64_t h = ((uint64_t)f->func << 32 | f->file) * 0x9e3779b97f4a7c15ull ^
		((uint64_t)f->module << 33 | (uint64_t)f->line << 1 | f->inlined) ^
		rp_mix64(f->addr), id;
	size_t cur = 0;

	while (td_map_find_next(&p->frame_index, h, &cur, &id))
		if (!memcmp(&p->frames[id], f, sizeof(*f)))
			return (uint32_t)id;
	if (!p->nframes) {
		if (td_array_grow(p->frames, p->capframes, 1, 256) < 0)
			return 0;
		memset(&p->frames[p->nframes++], 0, sizeof(*p->frames));
	}
	if (td_array_grow(p->frames, p->capframes, p->nframes + 1, 256) < 0)
		return 0;
	p->frames[p->nframes] = *f;
	if (td_map_add(&p->frame_index, h, p->nframes) < 0)
		return 0;
	return (uint32_t)p->nframes++;
}

static uint32_t node_id(struct rp_profile *p, uint32_t parent, uint32_t frame)
{
	uint64_t *v;

	if (td_map_upsert(&p->node_index, (uint64_t)parent << 32 | frame, &v) < 0)
		return 0;
	if (*v)
		return (uint32_t)*v;
	if (td_array_grow(p->nodes, p->capnodes, p->nnodes + 1, 256) < 0)
		return 0;
	p->nodes[p->nnodes] = (struct rp_node){ .parent = parent, .frame = frame };
	*v = p->nnodes;
	return (uint32_t)p->nnodes++;
}

/* ---- reading */

struct load {
	struct rp_profile *p;
	const struct rp_filter *f;
	struct rp_load_report *rep;
	/* Per-chunk caches keyed by ids read from the file.  Those ids are
	 * untrusted (any u32), so they key maps, never size arrays: a cache
	 * holds one entry per id actually used, bounded by the samples and
	 * definitions read, hence by the input size (tracerd-chunk(5)). */
	struct td_map stack_cache;  /* chunk stack id -> merged node + 1 */
	struct td_map thread_cache; /* chunk thread id -> profile thread + 1 */
	/* a chunk's function id -> 1 + index in fcache (its interned name,
	 * file and start line); mapping id -> module name id + 1, with bit
	 * 32 set for a kernel mapping (rp_kernel_module): each
	 * definition is interned once per chunk, not once per frame */
	struct td_map func_cache;
	struct rp_fcache {
		uint32_t func, file, start_line;
	} *fcache;
	size_t nfcache, capfcache;
	struct td_map module_cache;
	int64_t from, to;
	uint16_t minor; /* the current chunk's format minor */
	uint32_t only_pid; /* the current chunk is an emergency dump's: its pid */
	bool oom; /* out of memory: the load fails */
};

static const char *basename_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* Remember a module's full path and build-id the first time it is seen. */
static void note_module(struct rp_profile *p, uint32_t name, const struct chunk_map_info *m)
{
	uint64_t *slot;
	char hex[129];

	if (td_map_upsert(&p->module_index, name, &slot) < 0 || *slot ||
		td_array_grow(p->modules, p->capmodules, p->nmodules + 1, 0) < 0)
		return;
	for (unsigned i = 0; i < m->build_id_len && i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
	hex[2 * (m->build_id_len < 64 ? m->build_id_len : 64)] = '\0';
	p->modules[p->nmodules] = (struct rp_module){ name, intern(p, m->path),
		m->build_id_len ? intern(p, hex) : 0 };
	*slot = ++p->nmodules;
}

uint64_t rp_period_ns(const struct rp_profile *p)
{
	double hz = p->meta_hz ? atof(rp_str(p, p->meta_hz)) : 99;

	return (uint64_t)(1e9 / (hz > 0 ? hz : 99));
}

const char *rp_mode_name(const struct rp_profile *p)
{
	switch (p->modes) {
	case RP_MODE_CPU:
		return "cpu";
	case RP_MODE_WALL:
		return "wall";
	case RP_MODE_CPU | RP_MODE_WALL:
		return "cpu+wall";
	}
	return "unknown";
}

const char *rp_mode_meaning(const struct rp_profile *p)
{
	switch (p->modes) {
	case RP_MODE_CPU:
		return "a sample is a thread seen using CPU; percentages are shares of "
		       "the CPU time the threads used";
	case RP_MODE_WALL:
		return "a sample is a thread at a tick, running or blocked; percentages "
		       "are shares of the threads' wall-clock time";
	case RP_MODE_CPU | RP_MODE_WALL:
		return "cpu and wall recordings are mixed here: their percentages add "
		       "unlike things; report each recording alone";
	}
	return "recorded before tracerd had modes: samples of the threads that ran, "
	       "and of threads found in a system call";
}

const struct rp_module *rp_module_of(const struct rp_profile *p, uint32_t name)
{
	uint64_t i;

	return td_map_get(&p->module_index, name, &i) && i ? &p->modules[i - 1] : NULL;
}

/* The module name id of mapping id, and whether it is the kernel's or a
 * kernel module's (*kernel). */
static uint32_t module_of_mapping(struct load *L, struct chunk_reader *r, uint32_t id, bool *kernel)
{
	struct chunk_map_info m;
	uint32_t module = 0;
	uint64_t v;

	/* the cache holds module + 1, and bit 32 for a kernel mapping */
	if (td_map_get(&L->module_cache, id, &v)) {
		*kernel = v >> 32 & 1;
		return (uint32_t)v - 1;
	}
	*kernel = false;
	if (chunk_reader_mapping(r, id, &m) && m.path) {
		module = intern(L->p, !strncmp(m.path, "[vdso", 5) ? "[vdso]" : basename_of(m.path));
		note_module(L->p, module, &m);
		*kernel = rp_kernel_module(m.path);
	}
	if (td_map_set(&L->module_cache, id, ((uint64_t)module + 1) | (uint64_t)*kernel << 32) < 0)
		L->oom = true;
	return module;
}

static void function_of(struct load *L, struct chunk_reader *r, uint32_t id, struct rp_frame *fr)
{
	struct rp_fcache v = { 0 };
	struct chunk_function fn;
	uint64_t i;

	if (td_map_get(&L->func_cache, id, &i)) {
		v = L->fcache[i - 1];
	} else {
		if (chunk_reader_function(r, id, &fn)) {
			v.func = intern(L->p, fn.name);
			v.file = intern(L->p, fn.file);
			v.start_line = fn.start_line;
		} else {
			v.func = intern(L->p, "[unknown]");
		}
		if (td_array_grow(L->fcache, L->capfcache, L->nfcache + 1, 256) < 0 ||
			td_map_set(&L->func_cache, id, L->nfcache + 1) < 0)
			L->oom = true;
		else
			L->fcache[L->nfcache++] = v;
	}
	fr->func = v.func;
	fr->file = v.file;
	fr->start_line = v.start_line;
}

static uint32_t resolve_stack(struct load *L, struct chunk_reader *r, uint32_t sid)
{
	struct rp_profile *p = L->p;
	uint32_t locs[1024], node = 0;
	uint64_t v;
	unsigned n;

	if (td_map_get(&L->stack_cache, sid, &v))
		return (uint32_t)v - 1;
	n = chunk_reader_stack(r, sid, locs, 1024);
	if (n > 1024)
		n = 1024;
	/* root first; within a location the outer function first */
	for (unsigned i = n; i-- > 0;) {
		struct chunk_location l;
		uint32_t module;
		uint64_t addr;
		bool kernel;

		if (!chunk_reader_location(r, locs[i], &l)) {
			struct rp_frame fr = { .func = intern(p, "[unknown]") };

			node = node_id(p, node, frame_id(p, &fr));
			continue;
		}
		module = module_of_mapping(L, r, l.mapping_id, &kernel);
		addr = L->f->addresses ? l.addr : 0;
		if (!l.nlines) {
			struct rp_frame fr = { .func = intern(p, "??"), .module = module, .addr = addr,
				.kernel = kernel };

			node = node_id(p, node, frame_id(p, &fr));
			continue;
		}
		for (unsigned k = l.nlines; k-- > 0;) {
			struct rp_frame fr = { .module = module, .line = l.lines[k].line,
				.inlined = k + 1 < l.nlines, .addr = addr, .kernel = kernel };

			function_of(L, r, l.lines[k].function_id, &fr);
			node = node_id(p, node, frame_id(p, &fr));
		}
	}
	if (td_map_set(&L->stack_cache, sid, (uint64_t)node + 1) < 0)
		L->oom = true;
	return node;
}

static struct rp_thread *thread_of(struct load *L, struct chunk_reader *r, uint32_t id)
{
	struct rp_profile *p = L->p;
	struct chunk_thread t;
	uint64_t *slot, v;

	if (td_map_get(&L->thread_cache, id, &v))
		return &p->threads[v - 1];
	if (!chunk_reader_thread(r, id, &t))
		t = (struct chunk_thread){ 0, chunk_reader_info(r)->target_pid, "[unknown]" };
	if (td_map_upsert(&p->thread_index, (uint64_t)t.pid << 32 | t.tid, &slot) < 0)
		return NULL;
	if (!*slot) {
		if (td_array_grow(p->threads, p->capthreads, p->nthreads + 1, 64) < 0)
			return NULL;
		p->threads[p->nthreads] = (struct rp_thread){ .pid = t.pid, .tid = t.tid,
			.name = intern(p, t.name) };
		*slot = ++p->nthreads;
	}
	v = *slot;
	if (td_map_set(&L->thread_cache, id, v) < 0)
		L->oom = true;
	return &p->threads[v - 1];
}

static uint64_t real_of(struct chunk_reader *r, uint64_t clock_ns)
{
	const struct chunk_info *ci = chunk_reader_info(r);

	return ci->start_real_ns + (clock_ns - ci->start_clock_ns);
}

static bool pid_wanted(const struct load *L, uint32_t pid)
{
	const struct rp_filter *f = L->f;
	bool ok = !f->npids;

	if (L->only_pid && pid != L->only_pid)
		return false;
	for (unsigned i = 0; i < f->npids; i++)
		ok |= f->pids[i] == pid;
	return ok;
}

/* The pid of a chunk's thread id, as thread_of() would make it: asked
 * before a thread of an unwanted process becomes one of the profile's. */
static bool thread_wanted(const struct load *L, struct chunk_reader *r, uint32_t id)
{
	struct chunk_thread t;

	if (!L->only_pid && !L->f->npids)
		return true;
	return pid_wanted(L, chunk_reader_thread(r, id, &t) ? t.pid :
							    chunk_reader_info(r)->target_pid);
}

bool rp_pid_shown(const struct rp_profile *p, uint32_t pid)
{
	bool ok = !p->nshown;

	for (unsigned i = 0; i < p->nshown; i++)
		ok |= p->shown_pids[i] == pid;
	return ok;
}

static bool keep(struct load *L, const struct rp_thread *t, uint64_t real, int state)
{
	const struct rp_filter *f = L->f;
	bool ok;

	if (L->from && (int64_t)real < L->from)
		return false;
	if (L->to && (int64_t)real > L->to)
		return false;
	if (f->state >= 0 && state != f->state)
		return false;
	if (!pid_wanted(L, t->pid))
		return false;
	if (f->ntids) {
		ok = false;
		for (unsigned i = 0; i < f->ntids; i++)
			ok |= f->tids[i] == t->tid;
		if (!ok)
			return false;
	}
	if (f->thread_glob &&
		fnmatch(f->thread_glob, rp_str(L->p, t->name) ? rp_str(L->p, t->name) : "", 0))
		return false;
	return true;
}

/* Add pid to a set of at most 16 (more are left out). */
static void pid_set_add(uint32_t *set, unsigned *n, uint32_t pid)
{
	for (unsigned i = 0; i < *n; i++)
		if (set[i] == pid)
			return;
	if (*n < 16)
		set[(*n)++] = pid;
}

static int on_begin(void *arg, struct chunk_reader *r)
{
	struct load *L = arg;
	const struct chunk_info *ci = chunk_reader_info(r);

	L->rep->chunks++;
	L->minor = ci->minor;
	L->only_pid = 0;
	if ((ci->header_flags & TCF_HDR_EMERGENCY) && ci->target_pid) {
		pid_set_add(L->p->dead_pids, &L->p->ndead, ci->target_pid);
		if (!L->f->npids) {
			L->only_pid = ci->target_pid;
			L->p->restricted = true;
			pid_set_add(L->p->shown_pids, &L->p->nshown, ci->target_pid);
		}
	}
	td_map_clear(&L->stack_cache);
	td_map_clear(&L->thread_cache);
	td_map_clear(&L->func_cache);
	td_map_clear(&L->module_cache);
	L->nfcache = 0;
	return 0;
}

static int on_sample(void *arg, struct chunk_reader *r, const struct chunk_sample *s)
{
	struct load *L = arg;
	struct rp_profile *p = L->p;
	struct rp_thread *t;
	uint64_t real = real_of(r, s->time_ns), *tn;
	uint32_t node;

	L->rep->samples_read++;
	p->samples_all++;
	if (!thread_wanted(L, r, s->thread_id))
		return 0;
	t = thread_of(L, r, s->thread_id);
	if (!t || !keep(L, t, real, (int)s->state))
		return 0;
	node = resolve_stack(L, r, s->stack_id);
	p->nodes[node].count++;
	p->samples++;
	p->state_samples[s->state & 7]++;
	t->samples++;
	t->state_samples[s->state & 7]++;
	if (!t->first_ns || real < t->first_ns)
		t->first_ns = real;
	if (real > t->last_ns)
		t->last_ns = real;
	if (!p->first_ns || real < p->first_ns)
		p->first_ns = real;
	if (real > p->last_ns)
		p->last_ns = real;
	if (td_map_upsert(&p->thread_node,
		    RP_TN_KEY((uint64_t)(t - p->threads), s->state & 7, node), &tn) >= 0)
		(*tn)++;
	if (L->f->time_order) {
		if (td_array_grow(p->seq, p->capseq, p->nseq + 1, 4096) < 0) {
			L->oom = true;
			return 1; /* stop reading */
		}
		p->seq[p->nseq++] = (struct rp_seq){ real, (uint32_t)(t - p->threads), node };
	}
	L->rep->samples_kept++;
	return 0;
}

static int on_wait(struct load *L, struct chunk_reader *r, const struct chunk_wait *w);

/* A thread's stack at a death (a DEATH_STACK or CRASH row).  The tid and
 * name come from the chunk, not from thread_of(): the death of a process
 * that the filters leave out adds no thread to the profile. */
static int add_death_stack(struct load *L, struct chunk_reader *r, const struct chunk_event *e,
	uint32_t flags)
{
	struct rp_profile *p = L->p;
	struct chunk_thread t;

	if (td_array_grow(p->dstacks, p->capdstacks, p->ndstacks + 1, 64) < 0)
		return -1;
	if (!chunk_reader_thread(r, e->thread_id, &t))
		t = (struct chunk_thread){ 0, e->pid, NULL };
	p->dstacks[p->ndstacks++] = (struct rp_death_stack){ .pid = e->pid, .tid = t.tid,
		.name = intern(p, t.name), .node = e->stack_id ? resolve_stack(L, r, e->stack_id) : 0,
		.flags = flags, .signo = e->signo, .addr = e->fault_addr,
		.real_ns = real_of(r, e->time_ns),
		.src = { .known = e->has_src, .code = e->src.code, .pid = e->src.pid,
			.uid = e->src.uid, .comm = intern(p, chunk_reader_string(r, e->src.comm)) } };
	return 0;
}

static int on_event(void *arg, struct chunk_reader *r, const struct chunk_event *e)
{
	struct load *L = arg;
	struct rp_profile *p = L->p;

	switch (e->type) {
	case CHUNK_EV_THREAD:
		if (!thread_wanted(L, r, e->thread_id))
			break;
		if (e->kind == TCF_THREAD_RENAME) {
			struct rp_thread *t = thread_of(L, r, e->thread_id);
			const char *name = chunk_reader_string(r, (uint32_t)e->arg);

			if (t && name)
				t->name = intern(p, name); /* the latest name wins */
		} else if (e->kind == TCF_THREAD_EXIT) {
			struct rp_thread *t = thread_of(L, r, e->thread_id);

			if (t) {
				t->exited = true;
				t->exit_status = (int32_t)e->arg;
			}
		}
		break;
	case CHUNK_EV_PROCESS:
		if (e->kind == TCF_PROC_DEATH_STACK) {
			if (add_death_stack(L, r, e, (uint32_t)e->status & ~RP_DEATH_FROM_CRASH) < 0)
				return -1;
		} else if (e->kind == TCF_PROC_OOM_KILL) {
			if (td_array_grow(p->ooms, p->capooms, p->nooms + 1, 0) < 0)
				return -1;
			p->ooms[p->nooms++] = (struct rp_oom){ e->pid, e->count,
				real_of(r, e->time_ns) };
		} else if (e->kind == TCF_PROC_CRASH) {
			const struct rp_death_stack *d;

			if (td_array_grow(p->crashes, p->capcrashes, p->ncrashes + 1, 0) < 0)
				return -1;
			/* also the death section's, for recordings without death
			 * stacks */
			if (add_death_stack(L, r, e, TCF_DEATH_FAULTING | RP_DEATH_FROM_CRASH) < 0)
				return -1;
			d = &p->dstacks[p->ndstacks - 1];
			p->crashes[p->ncrashes++] = (struct rp_crash){ .pid = e->pid, .tid = d->tid,
				.thread_name = d->name, .node = d->node, .signo = e->signo,
				.addr = e->fault_addr, .real_ns = d->real_ns, .src = d->src };
		} else if (e->kind == TCF_PROC_EXIT) {
			if (td_array_grow(p->exits, p->capexits, p->nexits + 1, 0) < 0)
				return -1;
			p->exits[p->nexits++] = (struct rp_exit){ e->pid, e->status, e->signo,
				real_of(r, e->time_ns) };
		} else if (e->kind == TCF_PROC_EXEC && pid_wanted(L, e->pid)) {
			p->execs++;
		}
		break;
	case CHUNK_EV_WAIT:
		return on_wait(L, r, e->wait);
	case CHUNK_EV_LOST:
		if (e->kind < TD_ARRAY_SIZE(p->lost))
			p->lost[e->kind] += e->count;
		break;
	case CHUNK_EV_META:
		if (!strcmp(e->key, "sampling.hz"))
			p->meta_hz = intern(p, e->value);
		else if (!strcmp(e->key, "sampling.mode")) {
			p->modes |= !strcmp(e->value, "wall") ? RP_MODE_WALL :
				    !strcmp(e->value, "cpu")  ? RP_MODE_CPU :
								0;
			/* WAITS came with 1.1: a wall chunk before it could not
			 * hold any */
			if (!strcmp(e->value, "wall") && L->minor >= 1)
				p->waits_recorded = true;
		}
		else if (!strcmp(e->key, "sampling.capture"))
			p->meta_capture = intern(p, e->value);
		else if (!strcmp(e->key, "host"))
			p->meta_host = intern(p, e->value);
		else if (!strcmp(e->key, "tracerd.version"))
			p->meta_version = intern(p, e->value);
		else if (!strncmp(e->key, "target.", 7) && strstr(e->key, ".cmdline")) {
			uint32_t pid = (uint32_t)strtoul(e->key + 7, NULL, 10);
			unsigned i;

			for (i = 0; i < p->ncmdlines && p->cmdline_pids[i] != pid; i++)
				;
			if (i < 16) {
				p->cmdline_pids[i] = pid;
				p->cmdlines[i] = intern(p, e->value);
				if (i == p->ncmdlines)
					p->ncmdlines++;
			}
		}
		break;
	default:
		break;
	}
	return 0;
}

/* A part of a wait episode: merged with the episode's earlier parts (the
 * same waiter, start and object); owners added up. */
static int on_wait(struct load *L, struct chunk_reader *r, const struct chunk_wait *w)
{
	struct rp_profile *p = L->p;
	struct rp_thread *t;
	uint64_t real = real_of(r, w->time_ns), key, *slot;
	struct rp_wait *e;

	if (!thread_wanted(L, r, w->thread_id))
		return 0;
	t = thread_of(L, r, w->thread_id);
	if (!t || !keep(L, t, real, -1))
		return 0;
	/* an equal hash of two episodes merges them: 2^-64 per pair */
	key = rp_mix64(((uint64_t)t->pid << 32 | t->tid) ^ rp_mix64(w->time_ns ^ rp_mix64(w->object)));
	if (td_map_upsert(&p->wait_index, key, &slot) < 0) {
		L->oom = true;
		return 1;
	}
	if (*slot) {
		e = &p->waits[*slot - 1];
	} else {
		if (td_array_grow(p->waits, p->capwaits, p->nwaits + 1, 256) < 0) {
			L->oom = true;
			return 1;
		}
		e = &p->waits[p->nwaits++];
		*e = (struct rp_wait){ .thread = (uint32_t)(t - p->threads), .kind = w->kind,
			.object = w->object, .start_ns = real };
		*slot = p->nwaits;
	}
	e->wait_ns += w->wait_ns;
	if (!(w->flags & TCF_WAITF_BEGAN_BEFORE))
		e->began = true;
	if (w->stack_id && (!e->node || !(w->flags & TCF_WAITF_BEGAN_BEFORE)))
		e->node = resolve_stack(L, r, w->stack_id);
	if (w->what && !e->what) {
		const char *what = chunk_reader_string(r, w->what);

		if (what)
			e->what = intern(p, what);
	}
	for (unsigned i = 0; i < w->nowners; i++) {
		struct rp_thread *o = thread_wanted(L, r, w->owners[i].thread_id) ?
					      thread_of(L, r, w->owners[i].thread_id) :
					      NULL;
		uint32_t oi = o ? (uint32_t)(o - p->threads) : UINT32_MAX, k, node = 0;
		uint8_t held = !(w->flags & TCF_WAITF_OWNERS_HELD) ? RP_HELD_UNKNOWN :
			       w->owners[i].stack_id		     ? RP_HELD_STACK :
								       RP_HELD_NONE;

		if (oi == UINT32_MAX)
			continue;
		if (held == RP_HELD_STACK)
			node = resolve_stack(L, r, w->owners[i].stack_id);
		/* the same owner in an earlier part of the episode: one entry
		 * per stack since 1.2 (each part's was taken while it held
		 * the object); before, one per owner, with its first stack */
		for (k = e->owner0; k; k = p->wowners[k - 1].next) {
			const struct rp_wait_owner *x = &p->wowners[k - 1];

			if (x->thread == oi && (held == RP_HELD_UNKNOWN ?
							x->held == RP_HELD_UNKNOWN :
							x->held == held && x->node == node))
				break;
		}
		if (!k) {
			if (td_array_grow(p->wowners, p->capwowners, p->nwowners + 1, 256) < 0) {
				L->oom = true;
				return 1;
			}
			p->wowners[p->nwowners] = (struct rp_wait_owner){ .thread = oi,
				.next = e->owner0, .held = held };
			e->owner0 = (uint32_t)++p->nwowners;
			e->nowners++;
			k = e->owner0;
		}
		p->wowners[k - 1].wait_ns += w->owners[i].wait_ns;
		if (held == RP_HELD_UNKNOWN && w->owners[i].stack_id && !p->wowners[k - 1].node)
			p->wowners[k - 1].node = resolve_stack(L, r, w->owners[i].stack_id);
		else if (held != RP_HELD_UNKNOWN)
			p->wowners[k - 1].node = node;
	}
	return 0;
}

static int on_end(void *arg, struct chunk_reader *r, bool finished)
{
	(void)arg, (void)r, (void)finished;
	return 0;
}

static int for_each_file(const char *path, int (*fn)(void *, const char *), void *arg)
{
	bool is_dir;
	int fd, r;

	/* a FIFO or a device is refused here, never waited on or opened */
	r = tcf_open_input(AT_FDCWD, path, false, &fd, &is_dir);
	if (r < 0)
		return r;
	close(fd);
	if (is_dir) {
		struct tcf_dir_entry *e = malloc(100000 * sizeof(*e));
		int n;

		if (!e)
			return -ENOMEM;
		n = tcf_dir_scan(path, e, 100000);
		if (n == 0)
			r = -ENODATA;
		for (int i = 0; i < n && r >= 0; i++) {
			char full[8192];

			snprintf(full, sizeof(full), "%s/%s", path, e[i].name);
			r = fn(arg, full);
		}
		free(e);
		return n < 0 ? n : r;
	}
	return fn(arg, path);
}

struct pass {
	struct load *L;
	uint64_t last;
	int pass;
};

static int read_one(void *arg, const char *file)
{
	static const struct chunk_visitor v = { on_begin, on_sample, on_event, on_end };
	struct pass *ps = arg;
	struct chunk_report cr;
	int r;

	if (ps->pass == 0) {
		r = chunk_read_file(file, NULL, NULL, &cr);
		if (r >= 0 && cr.last_real_ns > ps->last)
			ps->last = cr.last_real_ns;
		return r;
	}
	r = chunk_read_file(file, &v, ps->L, &cr);
	if (r < 0)
		return r;
	ps->L->rep->files++;
	ps->L->rep->chunks_skipped += cr.chunks_skipped;
	ps->L->rep->bytes_skipped += cr.bytes_skipped;
	if (cr.blocks_bad || cr.seq_gaps || cr.unknown_refs || cr.torn_tail ||
		cr.chunks_finished < cr.chunks) {
		ps->L->rep->chunks_damaged++;
		if (!ps->L->rep->warning[0])
			snprintf(ps->L->rep->warning, sizeof(ps->L->rep->warning),
				"%s: %s%s; what it still holds is used", file,
				cr.trailers_bad			  ? "damaged trailer" :
				cr.chunks_finished < cr.chunks ? "unfinished chunk" :
								  "damaged",
				cr.first_damage[0] ? (cr.blocks_bad ? " (damaged blocks skipped)" :
								      "") :
						     "");
	}
	return 0;
}

void rp_link_tree(struct rp_node *nodes, size_t n)
{
	for (size_t i = n; i-- > 1;) {
		struct rp_node *nd = &nodes[i], *par = &nodes[nd->parent];

		nd->next_sibling = par->first_child;
		par->first_child = (uint32_t)i;
	}
	for (size_t i = n; i-- > 0;) {
		nodes[i].total += nodes[i].count;
		if (i)
			nodes[nodes[i].parent].total += nodes[i].total;
	}
}

/* The name of each frame (rp_frame.name): its function's, qualified with
 * its file where frames of one module give that name more than one file,
 * as gdb does ('a.c'::churn): two static functions of one name, such as
 * an LTO build's churn.constprop.0 and .1, whose clone suffixes names.c
 * drops.  One rule for every output, so that top's rows, the folded
 * lines, the flame graphs' boxes and pprof's functions agree:
 * "churn at a.c" (the file as the chunk names it). */
static int name_frames(struct rp_profile *p)
{
	struct td_map files = { 0 };
	char buf[1024];
	uint64_t v;

	for (size_t i = 1; i < p->nframes; i++) {
		const struct rp_frame *f = &p->frames[i];
		uint64_t *slot;

		if (td_map_upsert(&files, (uint64_t)f->func << 32 | f->module, &slot) < 0)
			goto nomem;
		if (!*slot)
			*slot = (uint64_t)f->file + 1;
		else if (*slot != (uint64_t)f->file + 1)
			*slot = UINT64_MAX; /* files differ */
	}
	for (size_t i = 1; i < p->nframes; i++) {
		struct rp_frame *f = &p->frames[i];
		const char *file = rp_str(p, f->file);

		f->name = f->func;
		if (!td_map_get(&files, (uint64_t)f->func << 32 | f->module, &v) || v != UINT64_MAX)
			continue;
		snprintf(buf, sizeof(buf), "%s at %s", rp_str(p, f->func) ? rp_str(p, f->func) : "??",
			file && *file ? file : "??");
		if (!(f->name = intern(p, buf)))
			goto nomem;
	}
	td_map_free(&files);
	return 0;
nomem:
	td_map_free(&files);
	return -ENOMEM;
}

/* The tree merged by function: main calling two functions from two lines
 * is one main with two children; two functions of one name (name_frames)
 * are two. */
static int build_function_tree(struct rp_profile *p)
{
	struct td_map idx = { 0 };
	uint32_t *map = calloc(p->nnodes, sizeof(*map));
	/* frame -> the same frame without its line + 1, computed once per frame */
	uint32_t *ffid = calloc(p->nframes + 1, sizeof(*ffid));
	void *shrunk;

	p->fnodes = calloc(p->nnodes, sizeof(*p->fnodes));
	p->fnode_file = calloc(p->nnodes, sizeof(*p->fnode_file));
	p->fnode_line = calloc(p->nnodes, sizeof(*p->fnode_line));
	if (!map || !ffid || !p->fnodes || !p->fnode_file || !p->fnode_line) {
		free(map);
		free(ffid);
		return -ENOMEM;
	}
	p->nfnodes = 1;
	for (size_t i = 1; i < p->nnodes; i++) {
		uint32_t frame = p->nodes[i].frame;
		const struct rp_frame *f = &p->frames[frame];
		uint32_t fid, parent = map[p->nodes[i].parent];
		uint64_t *slot;

		if (!ffid[frame]) {
			struct rp_frame key = { .func = f->func, .name = f->name,
				.module = f->module, .start_line = f->start_line,
				.inlined = f->inlined, .kernel = f->kernel };

			ffid[frame] = frame_id(p, &key) + 1;
			f = &p->frames[frame]; /* frame_id may have moved the array */
		}
		fid = ffid[frame] - 1;
		if (td_map_upsert(&idx, (uint64_t)parent << 32 | fid, &slot) < 0) {
			free(map);
			free(ffid);
			td_map_free(&idx);
			return -ENOMEM;
		}
		if (!*slot) {
			p->fnodes[p->nfnodes] = (struct rp_node){ .parent = parent, .frame = fid };
			p->fnode_file[p->nfnodes] = f->file; /* where it was first seen */
			p->fnode_line[p->nfnodes] = f->line;
			*slot = p->nfnodes++;
		}
		map[i] = (uint32_t)*slot;
		p->fnodes[*slot].count += p->nodes[i].count;
	}
	p->fnode_of = map;
	free(ffid);
	td_map_free(&idx);
	/* the function tree is usually much smaller than the line tree */
	if ((shrunk = realloc(p->fnodes, p->nfnodes * sizeof(*p->fnodes))))
		p->fnodes = shrunk;
	if ((shrunk = realloc(p->fnode_file, p->nfnodes * sizeof(*p->fnode_file))))
		p->fnode_file = shrunk;
	if ((shrunk = realloc(p->fnode_line, p->nfnodes * sizeof(*p->fnode_line))))
		p->fnode_line = shrunk;
	rp_link_tree(p->nodes, p->nnodes);
	rp_link_tree(p->fnodes, p->nfnodes);
	return 0;
}

static int seq_cmp(const void *a, const void *b)
{
	const struct rp_seq *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->real_ns != y->real_ns)
		return x->real_ns < y->real_ns ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* rel (< 0) ns before last, the end of the data: a time the file chose,
 * so computed without a signed overflow, and 1 (the start of time) when
 * rel reaches back further than the data goes (0 would mean "open"). */
static int64_t before_end(uint64_t last, int64_t rel)
{
	uint64_t back = 0 - (uint64_t)rel;

	if (last > (uint64_t)INT64_MAX)
		last = (uint64_t)INT64_MAX;
	return back >= last ? 1 : (int64_t)(last - back);
}

int rp_load(const char *const *paths, unsigned n, const struct rp_filter *f,
	struct rp_profile **ret, struct rp_load_report *rep, const char **ret_bad_path)
{
	struct rp_profile *p = calloc(1, sizeof(*p));
	struct load L = { .p = p, .f = f, .rep = rep };
	struct pass ps = { .L = &L };
	int r = 0;

	memset(rep, 0, sizeof(*rep));
	if (!p)
		return -ENOMEM;
	for (unsigned i = 0; i < f->npids; i++)
		pid_set_add(p->shown_pids, &p->nshown, f->pids[i]);
	intern(p, "");
	node_id(p, 0, 0); /* the root: node 0 */
	p->nodes[0] = (struct rp_node){ 0 };
	p->nnodes = 1;
	/* relative times are relative to the end of the data */
	if (f->from_ns < 0 || f->to_ns < 0) {
		for (unsigned i = 0; i < n && r >= 0; i++)
			r = for_each_file(paths[i], read_one, &ps);
	}
	L.from = f->from_ns < 0 ? before_end(ps.last, f->from_ns) : f->from_ns;
	L.to = f->to_ns < 0 ? before_end(ps.last, f->to_ns) : f->to_ns;
	ps.pass = 1;
	for (unsigned i = 0; i < n && r >= 0; i++) {
		r = for_each_file(paths[i], read_one, &ps);
		if (r < 0 && ret_bad_path)
			*ret_bad_path = paths[i];
	}
	td_map_free(&L.stack_cache);
	td_map_free(&L.thread_cache);
	td_map_free(&L.func_cache);
	td_map_free(&L.module_cache);
	free(L.fcache);
	if (r >= 0 && L.oom)
		r = -ENOMEM;
	if (r < 0) {
		rp_free(p);
		return r;
	}
	/* the (parent, frame) -> node index only serves loading */
	td_map_free(&p->node_index);
	r = name_frames(p);
	if (r == 0)
		r = build_function_tree(p);
	if (r == 0)
		rp_sort(p->seq, p->nseq, sizeof(*p->seq), seq_cmp);
	if (r < 0) {
		rp_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

void rp_free(struct rp_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nstrs; i++)
		free(p->strs[i]);
	free(p->strs);
	td_map_free(&p->str_index);
	free(p->frames);
	td_map_free(&p->frame_index);
	free(p->nodes);
	free(p->fnodes);
	free(p->fnode_of);
	free(p->fnode_file);
	free(p->fnode_line);
	td_map_free(&p->node_index);
	free(p->threads);
	td_map_free(&p->thread_index);
	td_map_free(&p->thread_node);
	free(p->seq);
	free(p->waits);
	free(p->wowners);
	td_map_free(&p->wait_index);
	free(p->crashes);
	free(p->exits);
	free(p->dstacks);
	free(p->ooms);
	free(p->modules);
	td_map_free(&p->module_index);
	free(p);
}

uint64_t rp_samples(const struct rp_profile *p)
{
	return p->samples;
}
