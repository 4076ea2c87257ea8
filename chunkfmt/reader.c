/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The chunk reader.  Trusts a block only when its sync marker and both
 * CRCs match; resynchronizes after damage by scanning for the chunk's sync
 * marker, a chunk magic or a trailer; decodes definitions into per-chunk
 * tables and hands samples and events to a visitor.
 *
 * Bounds: nothing is allocated from a length or count read from the file
 * before checking it against the bytes that remain, so table sizes are
 * bounded by the input size; a definition gap (a lost block) is filled
 * with unknown entries, at most the bytes that remain many. */
#define _GNU_SOURCE
#include "chunkfmt-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	char data[];
};

struct r_func {
	uint32_t name, sys, file, line;
};
struct r_loc {
	uint32_t mapping;
	uint64_t addr;
	uint32_t first_line, nlines;
};
struct r_node {
	uint32_t parent, location;
};
struct r_thread {
	uint32_t tid, pid, name;
};
struct r_map {
	uint64_t start, size, off;
	uint32_t path, flags;
	const uint8_t *bid;
	unsigned bid_len;
};

#define TABLE(type, name) \
	type *name;       \
	size_t n_##name, cap_##name

/* owns: arena, tables (all reset per chunk) */
struct chunk_reader {
	struct chunk_info info;
	struct arena_block *arena;
	TABLE(const char *, strs);
	TABLE(struct r_map, maps);
	TABLE(struct r_func, funcs);
	TABLE(struct r_loc, locs);
	TABLE(struct r_node, nodes);
	TABLE(struct r_thread, threads);
	TABLE(struct chunk_line, lines);
	uint32_t sample_types[2 * TCF_MAX_VALUES]; /* string ids: type, unit */
	unsigned nsample_types;
	uint64_t values[TCF_MAX_VALUES];
	struct chunk_report *rep;
	const struct chunk_visitor *v;
	void *arg;
	int stop; /* visitor asked to stop */
	bool must_stop_chunk;
};

static void damage(struct chunk_reader *r, const char *what, uint64_t off)
{
	if (!r->rep->first_damage[0])
		snprintf(r->rep->first_damage, sizeof(r->rep->first_damage), "%s at byte %llu",
			what, (unsigned long long)off);
}

static char *arena_copy(struct chunk_reader *r, const uint8_t *p, size_t n)
{
	struct arena_block *b = r->arena;
	char *s;

	if (!b || b->size - b->used < n + 1) {
		size_t size = n + 1 > 65536 ? n + 1 : 65536;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = r->arena;
		r->arena = b;
	}
	s = b->data + b->used;
	memcpy(s, p, n);
	s[n] = '\0';
	b->used += n + 1;
	return s;
}

static void tables_reset(struct chunk_reader *r)
{
	while (r->arena) {
		struct arena_block *b = r->arena;

		r->arena = b->next;
		free(b);
	}
	free(r->strs);
	free(r->maps);
	free(r->funcs);
	free(r->locs);
	free(r->nodes);
	free(r->threads);
	free(r->lines);
	r->strs = NULL;
	r->maps = NULL;
	r->funcs = NULL;
	r->locs = NULL;
	r->nodes = NULL;
	r->threads = NULL;
	r->lines = NULL;
	r->n_strs = r->n_maps = r->n_funcs = r->n_locs = r->n_nodes = r->n_threads = 0;
	r->cap_strs = r->cap_maps = r->cap_funcs = r->cap_locs = r->cap_nodes = 0;
	r->cap_threads = r->n_lines = r->cap_lines = 0;
	r->nsample_types = 0;
}

/* New room in a table (or in a block's last-stack array) reads as all
 * zero: ids a lost block left undefined are unknown entries, and a thread
 * with no row yet has no last stack. */
static void zero_new_room(void *items, size_t size, size_t had, size_t cap)
{
	memset((char *)items + had * size, 0, (cap - had) * size);
}

/* A table's first room, in ids; it doubles from there (td_array_grow). */
#define TABLE_ROOM_FIRST 64

/* The table now holds ids up to first + n - 1 (a late duplicate of
 * earlier ids leaves the count as it was). */
#define DEFS_END(r, name, first, n)                \
	do {                                       \
		if ((first) + (n) > (r)->n_##name + 1) \
			(r)->n_##name = (first) + (n)-1; \
	} while (0)

/* Check first_id against the table, for the caller to make room for ids
 * [0, first + n) (index 0 = "none").  A gap (a block with definitions was
 * lost) leaves unknown entries; the count is bounded by the bytes left,
 * since each entry takes at least one byte. */
static bool defs_begin(struct chunk_reader *r, struct tcf_cur *c, size_t *n_table, size_t *ret_first,
	size_t *ret_n)
{
	uint64_t first = tcf_get_varint(c), n = tcf_get_varint(c);
	uint64_t left = (uint64_t)(c->end - c->p);

	if (c->bad || first == 0 || n > left || first > *n_table + 1 + left * 8)
		return false;
	if (first != *n_table + 1 && *n_table)
		r->rep->unknown_refs += first > *n_table + 1 ? first - *n_table - 1 : 0;
	*ret_first = first;
	*ret_n = n;
	return true;
}

static bool decode_strings(struct chunk_reader *r, struct tcf_cur *c)
{
	size_t first, n, had = r->cap_strs;

	if (!defs_begin(r, c, &r->n_strs, &first, &n) ||
		td_array_grow(r->strs, r->cap_strs, first + n, TABLE_ROOM_FIRST) < 0)
		return false;
	zero_new_room(r->strs, sizeof(*r->strs), had, r->cap_strs);
	for (size_t i = 0; i < n; i++) {
		uint64_t len = tcf_get_varint(c);
		const uint8_t *p = tcf_get_bytes(c, len);

		if (!p)
			return false;
		r->strs[first + i] = arena_copy(r, p, len);
	}
	DEFS_END(r, strs, first, n);
	return true;
}

static bool decode_maps(struct chunk_reader *r, struct tcf_cur *c)
{
	size_t first, n, had = r->cap_maps;

	if (!defs_begin(r, c, &r->n_maps, &first, &n) ||
		td_array_grow(r->maps, r->cap_maps, first + n, TABLE_ROOM_FIRST) < 0)
		return false;
	zero_new_room(r->maps, sizeof(*r->maps), had, r->cap_maps);
	for (size_t i = 0; i < n; i++) {
		struct r_map *m = &r->maps[first + i];
		uint64_t bl;

		m->start = tcf_get_varint(c);
		m->size = tcf_get_varint(c);
		m->off = tcf_get_varint(c);
		m->path = (uint32_t)tcf_get_varint(c);
		bl = tcf_get_varint(c);
		if (bl > 64)
			return false;
		m->bid = tcf_get_bytes(c, bl);
		m->bid = m->bid ? (const uint8_t *)arena_copy(r, m->bid, bl) : NULL;
		m->bid_len = (unsigned)bl;
		m->flags = (uint32_t)tcf_get_varint(c);
		if (c->bad)
			return false;
	}
	DEFS_END(r, maps, first, n);
	return true;
}

static bool decode_funcs(struct chunk_reader *r, struct tcf_cur *c)
{
	size_t first, n, had = r->cap_funcs;

	if (!defs_begin(r, c, &r->n_funcs, &first, &n) ||
		td_array_grow(r->funcs, r->cap_funcs, first + n, TABLE_ROOM_FIRST) < 0)
		return false;
	zero_new_room(r->funcs, sizeof(*r->funcs), had, r->cap_funcs);
	for (size_t i = 0; i < n; i++) {
		struct r_func *f = &r->funcs[first + i];

		f->name = (uint32_t)tcf_get_varint(c);
		f->sys = (uint32_t)tcf_get_varint(c);
		f->file = (uint32_t)tcf_get_varint(c);
		f->line = (uint32_t)tcf_get_varint(c);
	}
	if (c->bad)
		return false;
	DEFS_END(r, funcs, first, n);
	return true;
}

static bool decode_locs(struct chunk_reader *r, struct tcf_cur *c)
{
	size_t first, n, had = r->cap_locs;

	if (!defs_begin(r, c, &r->n_locs, &first, &n) ||
		td_array_grow(r->locs, r->cap_locs, first + n, TABLE_ROOM_FIRST) < 0)
		return false;
	zero_new_room(r->locs, sizeof(*r->locs), had, r->cap_locs);
	for (size_t i = 0; i < n; i++) {
		struct r_loc *l = &r->locs[first + i];
		uint64_t nl;

		l->mapping = (uint32_t)tcf_get_varint(c);
		l->addr = tcf_get_varint(c);
		tcf_get_varint(c); /* flags */
		nl = tcf_get_varint(c);
		/* every line is written below: no zeroing */
		if (c->bad || nl > (uint64_t)(c->end - c->p) ||
			td_array_grow(r->lines, r->cap_lines, r->n_lines + nl, TABLE_ROOM_FIRST) < 0)
			return false;
		l->first_line = (uint32_t)r->n_lines;
		l->nlines = (uint32_t)nl;
		for (uint64_t k = 0; k < nl; k++) {
			struct chunk_line *ln = &r->lines[r->n_lines++];

			ln->function_id = (uint32_t)tcf_get_varint(c);
			ln->line = (uint32_t)tcf_get_varint(c);
			ln->column = (uint32_t)tcf_get_varint(c);
		}
		if (c->bad)
			return false;
	}
	DEFS_END(r, locs, first, n);
	return true;
}

static bool decode_nodes(struct chunk_reader *r, struct tcf_cur *c)
{
	size_t first, n, had = r->cap_nodes;

	if (!defs_begin(r, c, &r->n_nodes, &first, &n) ||
		td_array_grow(r->nodes, r->cap_nodes, first + n, TABLE_ROOM_FIRST) < 0)
		return false;
	zero_new_room(r->nodes, sizeof(*r->nodes), had, r->cap_nodes);
	for (size_t i = 0; i < n; i++) {
		uint64_t back = tcf_get_varint(c), id = first + i;

		if (back > id)
			return false;
		r->nodes[id].parent = (uint32_t)(id - back);
		r->nodes[id].location = (uint32_t)tcf_get_varint(c);
	}
	if (c->bad)
		return false;
	DEFS_END(r, nodes, first, n);
	return true;
}

static bool decode_threads(struct chunk_reader *r, struct tcf_cur *c)
{
	size_t first, n, had = r->cap_threads;

	if (!defs_begin(r, c, &r->n_threads, &first, &n) ||
		td_array_grow(r->threads, r->cap_threads, first + n, TABLE_ROOM_FIRST) < 0)
		return false;
	zero_new_room(r->threads, sizeof(*r->threads), had, r->cap_threads);
	for (size_t i = 0; i < n; i++) {
		struct r_thread *t = &r->threads[first + i];

		t->tid = (uint32_t)tcf_get_varint(c);
		t->pid = (uint32_t)tcf_get_varint(c);
		t->name = (uint32_t)tcf_get_varint(c);
		tcf_get_varint(c); /* flags */
	}
	if (c->bad)
		return false;
	DEFS_END(r, threads, first, n);
	return true;
}

/* base plus rel ticks.  rel comes from the file and may be anything:
 * unsigned arithmetic, which wraps where a signed product or sum would be
 * undefined (a negative rel wraps back below base, as it should); a time
 * that wrapped is only a wrong time, which no reader trusts further than
 * a filter's comparison. */
static uint64_t clock_at(const struct chunk_reader *r, uint64_t base, uint64_t rel)
{
	return base + rel * r->info.tick_ns;
}

static void seen_time(struct chunk_reader *r, uint64_t t)
{
	uint64_t real = r->info.start_real_ns + (t - r->info.start_clock_ns);

	if (!r->rep->first_real_ns || real < r->rep->first_real_ns)
		r->rep->first_real_ns = real;
	if (real > r->rep->last_real_ns)
		r->rep->last_real_ns = real;
}

static int emit_event(struct chunk_reader *r, const struct chunk_event *e)
{
	r->rep->events++;
	if (r->v->event && !r->stop)
		r->stop = r->v->event(r->arg, r, e);
	return r->stop;
}

static bool decode_samples(struct chunk_reader *r, struct tcf_cur *c, uint64_t base)
{
	uint64_t rows = tcf_get_varint(c), nv = tcf_get_varint(c);
	uint32_t *last = NULL;
	size_t nlast = 0;
	uint64_t rel = 0; /* ticks from base, summed as clock_at wraps them */
	bool ok = true;

	if (c->bad || nv > TD_ARRAY_SIZE(r->values) || rows > (uint64_t)(c->end - c->p))
		return false;
	for (uint64_t i = 0; i < rows && !r->stop; i++) {
		struct chunk_sample s = { 0 };
		uint64_t key;

		rel += (uint64_t)tcf_unzigzag(tcf_get_varint(c));
		key = tcf_get_varint(c);
		s.thread_id = (uint32_t)(key >> 4);
		s.state = (enum tcf_state)((key >> 1) & 7);
		if (s.thread_id >= nlast) {
			size_t had = nlast;

			/* ids come from THREADS: far past the table is corrupt
			 * (bounds the allocation below) */
			if (key >> 4 > (uint64_t)r->n_threads + 65536 ||
				td_array_grow(last, nlast, (size_t)s.thread_id + 1, 64) < 0) {
				ok = false;
				break;
			}
			zero_new_room(last, sizeof(*last), had, nlast);
		}
		if (key & 1) {
			s.stack_id = last[s.thread_id];
		} else {
			s.stack_id = (uint32_t)tcf_get_varint(c);
			last[s.thread_id] = s.stack_id;
		}
		for (uint64_t k = 0; k < nv; k++)
			r->values[k] = tcf_get_varint(c);
		if (c->bad) {
			ok = false;
			break;
		}
		s.nvalues = (unsigned)nv;
		s.values = r->values;
		s.time_ns = clock_at(r, base, rel);
		if (s.thread_id > r->n_threads || s.stack_id > r->n_nodes ||
			(s.thread_id && !r->threads[s.thread_id].tid && !r->threads[s.thread_id].pid))
			r->rep->unknown_refs++;
		seen_time(r, s.time_ns);
		r->rep->samples++;
		if (r->v->sample)
			r->stop = r->v->sample(r->arg, r, &s);
	}
	free(last);
	return ok;
}

static bool decode_sample_types(struct chunk_reader *r, struct tcf_cur *c)
{
	uint64_t n = tcf_get_varint(c);
	uint32_t ids[2 * TCF_MAX_VALUES];

	if (c->bad || n > TCF_MAX_VALUES)
		return false;
	for (unsigned i = 0; i < 2 * n; i++)
		ids[i] = (uint32_t)tcf_get_varint(c);
	if (c->bad)
		return false;
	/* kept as string ids: names resolve when asked, so the record may
	 * precede or follow its strings within the chunk */
	memcpy(r->sample_types, ids, 2 * n * sizeof(*ids));
	r->nsample_types = (unsigned)n;
	return true;
}

static bool decode_meta(struct chunk_reader *r, struct tcf_cur *c)
{
	struct chunk_event e = { .type = CHUNK_EV_META };
	uint64_t n = tcf_get_varint(c);

	for (uint64_t i = 0; i < n && !c->bad; i++) {
		uint64_t kl = tcf_get_varint(c);
		const uint8_t *k = tcf_get_bytes(c, kl);
		uint64_t vl = tcf_get_varint(c);
		const uint8_t *v = tcf_get_bytes(c, vl);

		if (!k || !v)
			return false;
		e.key = arena_copy(r, k, kl);
		e.value = arena_copy(r, v, vl);
		emit_event(r, &e);
	}
	return !c->bad;
}

static bool decode_thread_events(struct chunk_reader *r, struct tcf_cur *c, uint64_t base)
{
	struct chunk_event e = { .type = CHUNK_EV_THREAD };
	uint64_t n = tcf_get_varint(c);

	if (n > (uint64_t)(c->end - c->p))
		return false;
	for (uint64_t i = 0; i < n && !c->bad; i++) {
		e.time_ns = clock_at(r, base, (uint64_t)tcf_unzigzag(tcf_get_varint(c)));
		e.thread_id = (uint32_t)tcf_get_varint(c);
		e.kind = (unsigned)tcf_get_varint(c);
		e.arg = tcf_get_varint(c);
		if (!c->bad)
			emit_event(r, &e);
	}
	return !c->bad;
}

static bool decode_process_event(struct chunk_reader *r, struct tcf_cur *c, uint64_t base)
{
	struct chunk_event e = { .type = CHUNK_EV_PROCESS };

	e.time_ns = clock_at(r, base, (uint64_t)tcf_unzigzag(tcf_get_varint(c)));
	e.pid = (uint32_t)tcf_get_varint(c);
	e.kind = (unsigned)tcf_get_varint(c);
	e.status = (int32_t)tcf_unzigzag(tcf_get_varint(c));
	e.signo = (int32_t)tcf_unzigzag(tcf_get_varint(c));
	e.fault_addr = tcf_get_varint(c);
	e.thread_id = (uint32_t)tcf_get_varint(c);
	e.stack_id = (uint32_t)tcf_get_varint(c);
	if (c->p < c->end && (e.kind == TCF_PROC_CRASH || e.kind == TCF_PROC_DEATH_STACK)) {
		/* 1.2: where the signal came from */
		e.has_src = true;
		e.src.code = (int32_t)tcf_unzigzag(tcf_get_varint(c));
		e.src.pid = (uint32_t)tcf_get_varint(c);
		e.src.uid = (uint32_t)tcf_get_varint(c);
		e.src.comm = (uint32_t)tcf_get_varint(c);
		if (e.src.comm > r->n_strs)
			r->rep->unknown_refs++;
	}
	if (c->bad)
		return false;
	if (e.kind == TCF_PROC_OOM_KILL) {
		e.count = e.fault_addr; /* the field holds the oom_kill count */
		e.fault_addr = 0;
	}
	/* a death's thread and stack are defined before it, as a sample's
	 * are */
	if ((e.kind == TCF_PROC_CRASH || e.kind == TCF_PROC_DEATH_STACK) &&
		(e.thread_id > r->n_threads || e.stack_id > r->n_nodes ||
			(e.thread_id && !r->threads[e.thread_id].tid &&
				!r->threads[e.thread_id].pid)))
		r->rep->unknown_refs++;
	emit_event(r, &e);
	return true;
}

/* One wait episode's part into *w; false if the owners are too many. */
static bool decode_wait(struct chunk_reader *r, struct tcf_cur *c, uint64_t base,
	struct chunk_wait *w)
{
	uint64_t k;

	w->time_ns = clock_at(r, base, (uint64_t)tcf_unzigzag(tcf_get_varint(c)));
	w->wait_ns = tcf_get_varint(c);
	w->thread_id = (uint32_t)tcf_get_varint(c);
	w->stack_id = (uint32_t)tcf_get_varint(c);
	k = tcf_get_varint(c);
	w->kind = k > TCF_WAIT_MAX ? TCF_WAIT_OTHER : (enum tcf_wait_kind)k;
	w->flags = (uint32_t)tcf_get_varint(c);
	w->object = tcf_get_varint(c);
	w->what = (uint32_t)tcf_get_varint(c);
	k = tcf_get_varint(c);
	if (k > TCF_WAIT_MAX_OWNERS)
		return false;
	w->nowners = (unsigned)k;
	for (unsigned o = 0; o < w->nowners; o++) {
		w->owners[o].thread_id = (uint32_t)tcf_get_varint(c);
		w->owners[o].wait_ns = tcf_get_varint(c);
		w->owners[o].stack_id = (uint32_t)tcf_get_varint(c);
	}
	return true;
}

static bool decode_waits(struct chunk_reader *r, struct tcf_cur *c, uint64_t base)
{
	struct chunk_event e = { .type = CHUNK_EV_WAIT };
	uint64_t n = tcf_get_varint(c);

	if (n > (uint64_t)(c->end - c->p))
		return false;
	for (uint64_t i = 0; i < n && !c->bad; i++) {
		struct chunk_wait w = { 0 };

		if (!decode_wait(r, c, base, &w))
			return false;
		if (c->bad)
			break;
		e.time_ns = w.time_ns;
		e.thread_id = w.thread_id;
		e.stack_id = w.stack_id;
		e.wait = &w;
		emit_event(r, &e);
	}
	return !c->bad;
}

static bool decode_lost(struct chunk_reader *r, struct tcf_cur *c)
{
	struct chunk_event e = { .type = CHUNK_EV_LOST };

	e.count = tcf_get_varint(c);
	e.kind = (unsigned)tcf_get_varint(c);
	if (!c->bad)
		emit_event(r, &e);
	return !c->bad;
}

static bool decode_clock_sync(struct chunk_reader *r, struct tcf_cur *c)
{
	struct chunk_event e = { .type = CHUNK_EV_CLOCK_SYNC };

	e.time_ns = tcf_get_varint(c);
	e.real_ns = tcf_get_varint(c);
	if (!c->bad)
		emit_event(r, &e);
	return !c->bad;
}

static bool decode_chunk_end(struct chunk_reader *r, struct tcf_cur *c)
{
	struct chunk_event e = { .type = CHUNK_EV_END };

	e.kind = (unsigned)tcf_get_varint(c);
	e.total_samples = tcf_get_varint(c);
	e.total_blocks = tcf_get_varint(c);
	e.time_ns = tcf_get_varint(c);
	e.real_ns = tcf_get_varint(c);
	e.status = (int32_t)tcf_unzigzag(tcf_get_varint(c));
	if (!c->bad)
		emit_event(r, &e);
	return !c->bad;
}

/* One record of a known type: false if it is malformed. */
static bool decode_record(struct chunk_reader *r, unsigned type, struct tcf_cur *c, uint64_t base)
{
	switch (type) {
	case TCF_REC_STRINGS:
		return decode_strings(r, c);
	case TCF_REC_MAPPINGS:
		return decode_maps(r, c);
	case TCF_REC_FUNCTIONS:
		return decode_funcs(r, c);
	case TCF_REC_LOCATIONS:
		return decode_locs(r, c);
	case TCF_REC_STACK_NODES:
		return decode_nodes(r, c);
	case TCF_REC_THREADS:
		return decode_threads(r, c);
	case TCF_REC_SAMPLES:
		return decode_samples(r, c, base);
	case TCF_REC_SAMPLE_TYPES:
		return decode_sample_types(r, c);
	case TCF_REC_INDEX:
		return true; /* an accelerator: this reader scans */
	case TCF_REC_META:
		return decode_meta(r, c);
	case TCF_REC_THREAD_EVENTS:
		return decode_thread_events(r, c, base);
	case TCF_REC_PROCESS_EVENT:
		return decode_process_event(r, c, base);
	case TCF_REC_WAITS:
		return decode_waits(r, c, base);
	case TCF_REC_LOST:
		return decode_lost(r, c);
	case TCF_REC_CLOCK_SYNC:
		return decode_clock_sync(r, c);
	case TCF_REC_CHUNK_END:
		return decode_chunk_end(r, c);
	}
	return true;
}

/* Decode one verified block payload. */
static void decode_block(struct chunk_reader *r, const uint8_t *p, size_t n, uint64_t base,
	uint64_t off)
{
	struct tcf_cur c = { p, p + n, false };

	while (c.p < c.end && !r->stop) {
		uint64_t tag = tcf_get_varint(&c), len = tcf_get_varint(&c);
		const uint8_t *body = tcf_get_bytes(&c, len);
		unsigned type = (unsigned)(tag >> 1);
		struct tcf_cur rc;

		if (!body) {
			damage(r, "malformed record framing in the block", off);
			r->rep->blocks_bad++;
			return;
		}
		if (type == 0 || type > TCF_REC_MAX_KNOWN) {
			if (tag & 1) {
				/* must understand: keep what came before, stop here */
				r->rep->newer_reader_needed = true;
				r->must_stop_chunk = true;
				return;
			}
			r->rep->records_skipped++;
			continue;
		}
		rc = (struct tcf_cur){ body, body + len, false };
		if (!decode_record(r, type, &rc, base)) {
			damage(r, "malformed record in the block", off);
			r->rep->unknown_refs++;
		}
	}
}

/* Offset of the next plausible resync point after pos: a block header of
 * this chunk, a trailer, or a new chunk; len if none. */
static size_t resync(const uint8_t *buf, size_t len, size_t pos, uint64_t sync)
{
	uint8_t s[8];

	tcf_le64(s, sync);
	for (size_t i = pos + 1; i + 8 <= len; i++) {
		const uint8_t *p = buf + i;
		struct tcf_block b;
		struct chunk_info ci;

		if (p[0] == s[0] && !memcmp(p, s, 8) && tcf_parse_block_header(p, len - i, sync, &b))
			return i;
		if (p[0] == 0x89 && (!memcmp(p, tcf_end_magic, 8) ? tcf_is_trailer(p, len - i) :
				     !memcmp(p, tcf_magic, 8) &&
						     tcf_parse_header(p, len - i, &ci) != -TD_E_CORRUPT))
			return i;
	}
	return len;
}

int chunk_read_buffer(const uint8_t *buf, size_t len, const struct chunk_visitor *v, void *arg,
	struct chunk_report *ret_report)
{
	static const struct chunk_visitor none;
	struct chunk_report rep = { 0 };
	struct chunk_reader r = { .rep = &rep, .v = v ? v : &none, .arg = arg };
	size_t pos = 0;
	bool any = false;

	rep.bytes = len;
	while (pos < len && !r.stop) {
		int hl = tcf_parse_header(buf + pos, len - pos, &r.info);
		uint64_t sync, chunk_start = pos;
		uint32_t expect = 0;
		bool finished = false, final_seen = false, trailer_bad = false;

		if (hl == -EPROTONOSUPPORT) {
			size_t next;

			any = true;
			rep.chunks_skipped++;
			damage(&r, "chunk needs a newer reader (version or feature)", pos);
			next = pos + 1;
			while (next + 8 <= len && memcmp(buf + next, tcf_magic, 8))
				next++;
			pos = next + 8 <= len ? next : len;
			continue;
		}
		if (hl < 0) {
			size_t next = resync(buf, len, pos, 0);

			damage(&r, "no valid chunk header", pos);
			if (next >= len && any)
				rep.torn_tail = true;
			rep.bytes_skipped += next - pos;
			pos = next;
			continue;
		}
		any = true;
		rep.chunks++;
		r.info.offset = pos;
		sync = tcf_chunk_sync(buf + pos);
		pos += (size_t)hl;
		r.must_stop_chunk = false;
		if (r.v->chunk_begin)
			r.stop = r.v->chunk_begin(r.arg, &r);
		while (pos < len && !r.stop) {
			struct tcf_block b;
			size_t next;

			if (tcf_is_trailer(buf + pos, len - pos)) {
				/* its CRC only says it was written whole: its values
				 * must also close this chunk */
				uint64_t toff = pos - chunk_start, io = tcf_rd64(buf + pos + 8);
				const uint8_t *ih = io >= (uint64_t)hl && io <= toff &&
							    toff - io >= TCF_BLOCK_HEADER_LEN ?
							    buf + chunk_start + io :
							    NULL;

				if (tcf_trailer_agrees(buf + pos, toff, (uint64_t)hl, ih, sync)) {
					finished = true;
				} else {
					trailer_bad = true;
					rep.trailers_bad++;
					damage(&r,
						"damaged trailer (its length, index offset or block "
						"count disagree with the chunk)",
						pos);
				}
				pos += TCF_TRAILER_LEN;
				break;
			}
			if (tcf_parse_block_header(buf + pos, len - pos, sync, &b) &&
				b.payload_len <= len - pos - TCF_BLOCK_HEADER_LEN &&
				tcf_rd32(buf + pos + 36) ==
					tcf_crc_mask(tcf_crc32c(0, buf + pos + TCF_BLOCK_HEADER_LEN,
						b.payload_len))) {
				if (b.block_seq != expect) {
					rep.seq_gaps++;
					damage(&r, "block sequence gap", pos);
				}
				expect = b.block_seq + 1;
				rep.blocks++;
				if (b.flags & (TCF_BLK_FINAL | TCF_BLK_INDEX))
					final_seen = true;
				if (!r.must_stop_chunk)
					decode_block(&r, buf + pos + TCF_BLOCK_HEADER_LEN, b.payload_len,
						b.base_clock_ns, pos);
				pos += TCF_BLOCK_HEADER_LEN + b.payload_len;
				continue;
			}
			if (tcf_parse_header(buf + pos, len - pos, &(struct chunk_info){ 0 }) !=
				-TD_E_CORRUPT)
				break; /* the next chunk: this one is unfinished */
			next = resync(buf, len, pos, sync);
			if (next >= len) {
				/* nothing valid after: a torn tail (crash, or a
				 * live chunk still being written) */
				rep.torn_tail = true;
				rep.bytes_skipped += len - pos;
				pos = len;
				break;
			}
			rep.blocks_bad++;
			damage(&r, "damaged block skipped", pos);
			rep.bytes_skipped += next - pos;
			pos = next;
		}
		if (!finished && !trailer_bad && final_seen) {
			/* a finished chunk's last bytes are missing: the writer
			 * died between the index block and the trailer, or the
			 * file was cut */
			rep.trailers_missing++;
			damage(&r, "chunk cut at its trailer (final blocks present, no trailer)",
				pos);
		}
		rep.chunks_finished += finished;
		if (r.v->chunk_end && !r.stop)
			r.stop = r.v->chunk_end(r.arg, &r, finished);
		tables_reset(&r);
	}
	tables_reset(&r);
	if (ret_report)
		*ret_report = rep;
	return any ? 0 : -TD_E_CORRUPT;
}

int chunk_read_file(const char *path, const struct chunk_visitor *v, void *arg,
	struct chunk_report *ret_report)
{
	bool is_dir;
	int fd, r = tcf_open_input(AT_FDCWD, path, false, &fd, &is_dir);

	if (r < 0)
		return r;
	r = is_dir ? -EISDIR : chunk_read_fd(fd, v, arg, ret_report);
	close(fd);
	return r;
}

int chunk_read_fd(int fd, const struct chunk_visitor *v, void *arg,
	struct chunk_report *ret_report)
{
	struct stat st;
	void *map;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -TD_E_NOTREG;
	if (st.st_size == 0) {
		if (ret_report)
			*ret_report = (struct chunk_report){ 0 };
		return -TD_E_CORRUPT;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	r = chunk_read_buffer(map, (size_t)st.st_size, v, arg, ret_report);
	munmap(map, (size_t)st.st_size);
	return r;
}

/* ------------------------------------------------------------ accessors */

const struct chunk_info *chunk_reader_info(const struct chunk_reader *r)
{
	return &r->info;
}

const char *chunk_reader_string(const struct chunk_reader *r, uint32_t id)
{
	return id && id <= r->n_strs ? r->strs[id] : NULL;
}

bool chunk_reader_function(const struct chunk_reader *r, uint32_t id, struct chunk_function *ret)
{
	if (!id || id > r->n_funcs || !r->funcs[id].name)
		return false;
	*ret = (struct chunk_function){ chunk_reader_string(r, r->funcs[id].name),
		chunk_reader_string(r, r->funcs[id].sys), chunk_reader_string(r, r->funcs[id].file),
		r->funcs[id].line };
	return true;
}

bool chunk_reader_location(const struct chunk_reader *r, uint32_t id, struct chunk_location *ret)
{
	if (!id || id > r->n_locs || (!r->locs[id].nlines && !r->locs[id].mapping))
		return false;
	*ret = (struct chunk_location){ r->locs[id].mapping, r->locs[id].addr, r->locs[id].nlines,
		r->lines + r->locs[id].first_line };
	return true;
}

bool chunk_reader_thread(const struct chunk_reader *r, uint32_t id, struct chunk_thread *ret)
{
	if (!id || id > r->n_threads || (!r->threads[id].tid && !r->threads[id].pid))
		return false;
	*ret = (struct chunk_thread){ r->threads[id].tid, r->threads[id].pid,
		chunk_reader_string(r, r->threads[id].name) };
	return true;
}

bool chunk_reader_mapping(const struct chunk_reader *r, uint32_t id, struct chunk_map_info *ret)
{
	if (!id || id > r->n_maps)
		return false;
	*ret = (struct chunk_map_info){ r->maps[id].start, r->maps[id].size, r->maps[id].off,
		chunk_reader_string(r, r->maps[id].path), r->maps[id].bid, r->maps[id].bid_len,
		r->maps[id].flags };
	return true;
}

unsigned chunk_reader_sample_types(const struct chunk_reader *r, struct chunk_sample_type *types,
	unsigned n)
{
	for (unsigned i = 0; i < r->nsample_types && i < n; i++)
		types[i] = (struct chunk_sample_type){
			chunk_reader_string(r, r->sample_types[2 * i]),
			chunk_reader_string(r, r->sample_types[2 * i + 1]) };
	return r->nsample_types;
}

unsigned chunk_reader_stack(const struct chunk_reader *r, uint32_t id, uint32_t *locs, unsigned n)
{
	unsigned depth = 0;

	/* parents always have smaller ids, so this walk ends */
	while (id && id <= r->n_nodes && depth < 65536) {
		if (depth < n)
			locs[depth] = r->nodes[id].location;
		depth++;
		if (r->nodes[id].parent >= id)
			break;
		id = r->nodes[id].parent;
	}
	if (id > r->n_nodes && depth < n)
		locs[depth++] = 0; /* lost definition */
	return depth;
}
