/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pprof output: a gzip-compressed profile.proto.
 *
 * Written by hand (the fields through pb.h, which report/otlp.c shares)
 * rather than with protobuf-c: the profile is write-only
 * (nothing here parses untrusted input), its messages are a handful of
 * varint and length-delimited fields, and a generated encoder would need
 * profile.proto at build time, which Debian only ships inside Go source
 * packages.  Field numbers follow github.com/google/pprof proto/profile.proto.
 *
 * Mapping: one Location per address of a physical frame (its inline chain
 * as Lines, innermost first), one Function per (name, file), one Mapping
 * per module.  The chunks keep each pc as its address in the module's ELF
 * file, the same in every process whatever the load address: a Location's
 * address is that, and every Mapping spans the whole address space from 0
 * at file offset 0, the mapping pprof takes as already adjusted (its
 * GetBase returns 0), so that pprof (github.com/google/pprof; the one
 * Go ships reads no build-ids) finds the right symbols in a binary given
 * later by build-id (PPROF_BINARY_PATH: a debug build, a dbgsym package).  A module some of whose functions tracerd could only
 * place (MODULE+0xSTART, or ??) is marked as not having functions, which
 * is what makes pprof symbolize it again; the names stay where it cannot;
 * sample types samples/count and cpu/nanoseconds (count x the sampling
 * period); labels thread (name), tid and state.  Identical (stack, labels)
 * samples are aggregated; the real go tool pprof reads the result.
 *
 * A wall recording's wait episodes are Go's mutex profile beside the wall
 * profile: sample types contentions/count and delay/nanoseconds after the
 * two, every sample four values (a wall sample's last two 0, an episode's
 * first two 0), the episodes labelled with what they waited for and who
 * held it.  samples stays the default type: the wall profile is what pprof
 * shows first.  A recording that could not hold waits (cpu mode, TCF 1.0)
 * gets the two types alone, byte for byte as before. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../common/buf.h"
#include "pb.h"

/* The profile's string table: index by our string id (0 is ""). */
struct ptab {
	struct td_buf *out;
	int64_t *sid; /* our string id -> pprof index + 1 */
	int64_t next;
	const struct rp_profile *p;
};

static int64_t pstr(struct ptab *t, uint32_t id)
{
	if (!id)
		return 0;
	if (!t->sid[id]) {
		pb_str(t->out, 6, rp_str(t->p, id));
		t->sid[id] = ++t->next;
	}
	return t->sid[id];
}

static int64_t pstr_lit(struct ptab *t, const char *s, int64_t *cache)
{
	if (!*cache) {
		pb_str(t->out, 6, s);
		*cache = ++t->next;
	}
	return *cache;
}

/* Mapping { id, memory_start 0, memory_limit 2^64-1, file_offset 0,
 * filename (the full path), build_id (hex),
 * has_functions/filenames/line_numbers/inline_frames (unless placed) } */
static void emit_mapping(struct td_buf *prof, struct ptab *st, uint64_t id, uint32_t module,
	bool placed)
{
	const struct rp_module *m = rp_module_of(st->p, module);
	struct td_buf mp = { 0 };

	pb_uint(&mp, 1, id);
	pb_uint(&mp, 3, UINT64_MAX);
	pb_uint(&mp, 5, (uint64_t)pstr(st, m && m->path ? m->path : module));
	if (m && m->build_id)
		pb_uint(&mp, 6, (uint64_t)pstr(st, m->build_id));
	for (unsigned field = 7; field <= 10 && !placed; field++)
		pb_uint(&mp, field, 1);
	pb_msg(prof, 3, &mp);
	td_buf_free(&mp);
}

/* Was frame f only placed, not named: "??", or its module's name followed
 * by "+0x" (symbolize/ names a function no symbol names so)? */
static bool frame_placed(const struct rp_profile *p, const struct rp_frame *f)
{
	const char *name = rp_str(p, f->func), *mod = rp_str(p, f->module);
	size_t n = mod ? strlen(mod) : 0;

	if (!name || !mod)
		return false;
	return !strcmp(name, "??") || (!strncmp(name, mod, n) && !strncmp(name + n, "+0x", 3));
}

/* The profile being written, with its tables from our ids to the
 * profile's: Functions by (name, file), Locations by their innermost and
 * outermost frames, Mappings by module, objects' texts by object.
 * owns: the maps; borrows: prof (in st) and the profile. */
struct pw {
	const struct rp_profile *p;
	struct td_buf *prof;
	struct ptab st;
	struct td_map fn_ids, loc_ids, map_ids;
	struct td_map placed; /* modules with a frame only placed -> 1 */
	struct td_map addr_sid, fd_sid; /* object -> its text's index */
	uint64_t next_fn, next_loc, next_map;
	int64_t s_thread, s_tid; /* label keys of both kinds of sample */
};

static void pw_free(struct pw *w)
{
	td_map_free(&w->fn_ids);
	td_map_free(&w->loc_ids);
	td_map_free(&w->map_ids);
	td_map_free(&w->placed);
	td_map_free(&w->addr_sid);
	td_map_free(&w->fd_sid);
}

/* The Mapping id of module, written the first time (0: no memory). */
static uint64_t mapping_id(struct pw *w, uint32_t module)
{
	uint64_t *mid = NULL, placed;

	if (td_map_upsert(&w->map_ids, module, &mid) < 0)
		return 0;
	if (!*mid) {
		*mid = w->next_map++;
		emit_mapping(w->prof, &w->st, *mid, module, td_map_get(&w->placed, module, &placed));
	}
	return *mid;
}

/* Is a module's name a shared library's ("libc.so.6", "x.so"), or no
 * file ("[vdso]")?  pprof's own test (libRx) for what is not the main
 * binary. */
static bool library_name(const char *name)
{
	const char *base = name ? strrchr(name, '/') : NULL, *so;

	base = base ? base + 1 : name;
	if (!base || !*base || *base == '[')
		return true;
	for (so = strstr(base, ".so"); so; so = strstr(so + 1, ".so"))
		if (!so[3] || ((so[3] == '.' || so[3] == '_') && so[4] >= '0' && so[4] <= '9'))
			return true;
	return false;
}

/* The program's module, for pprof's first mapping: the one holding main
 * if it is not a library; else the module, not a library, of the node
 * with the most samples through it (a program's threads start in libc,
 * and its main thread may never be sampled in main); else the module of
 * the heaviest path's outermost frame.  0 if there is no frame. */
static uint32_t main_module(const struct rp_profile *p)
{
	uint32_t best = 0, heavy = 0;

	for (size_t i = 1; i < p->nnodes; i++) {
		const struct rp_frame *f = &p->frames[p->nodes[i].frame];
		const char *name = rp_str(p, f->func);

		if (!f->module || library_name(rp_str(p, f->module)))
			continue;
		if (name && !strcmp(name, "main"))
			return f->module;
		if (!best || p->nodes[i].total > p->nodes[best].total)
			best = (uint32_t)i;
	}
	if (best)
		return p->frames[p->nodes[best].frame].module;
	for (uint32_t c = p->nodes[0].first_child; c; c = p->nodes[c].next_sibling)
		if (!heavy || p->nodes[c].total > p->nodes[heavy].total)
			heavy = c;
	return heavy ? p->frames[p->nodes[heavy].frame].module : 0;
}

/* The location ids of node's stack, leaf first, into locs, defining the
 * Locations, Functions and Mappings not yet written.  Walking a leaf to
 * the root, a physical frame is a run of inlined frames closed by the
 * function they were inlined into: that run is one Location, keyed by its
 * innermost and outermost frames (which hold its address, when the
 * profile kept addresses), so that every stack through it shares it. */
static int put_locations(struct pw *w, uint32_t node, struct td_buf *locs)
{
	const struct rp_profile *p = w->p;

	for (uint32_t n = node; n;) {
		uint32_t top = n;
		uint64_t *lid;

		while (top && p->frames[p->nodes[top].frame].inlined)
			top = p->nodes[top].parent; /* up to the holding function */
		if (!top)
			top = n;
		if (td_map_upsert(&w->loc_ids,
			    (uint64_t)p->nodes[n].frame << 32 | p->nodes[top].frame, &lid) < 0)
			return -ENOMEM;
		if (!*lid) {
			struct td_buf loc = { 0 };
			const struct rp_frame *outer = &p->frames[p->nodes[top].frame];

			*lid = w->next_loc++;
			pb_uint(&loc, 1, *lid);
			pb_uint(&loc, 2, outer->module ? mapping_id(w, outer->module) : 0);
			pb_uint(&loc, 3, outer->addr);
			/* lines innermost first: from n up to top */
			for (uint32_t q = n;; q = p->nodes[q].parent) {
				const struct rp_frame *f = &p->frames[p->nodes[q].frame];
				uint64_t *fid = NULL;
				struct td_buf line = { 0 };

				td_map_upsert(&w->fn_ids, (uint64_t)f->func << 32 | f->file, &fid);

				if (fid && !*fid) {
					struct td_buf fn = { 0 };

					*fid = w->next_fn++;
					pb_uint(&fn, 1, *fid);
					/* name: two functions of one name in two
					 * files apart (rp_frame.name), as pprof
					 * merges by name; system_name the symbol's */
					pb_uint(&fn, 2, (uint64_t)pstr(&w->st, f->name));
					pb_uint(&fn, 3, (uint64_t)pstr(&w->st, f->func));
					pb_uint(&fn, 4, (uint64_t)pstr(&w->st, f->file));
					pb_uint(&fn, 5, f->start_line);
					pb_msg(w->prof, 5, &fn);
					td_buf_free(&fn);
				}
				pb_uint(&line, 1, fid ? *fid : 0);
				pb_uint(&line, 2, f->line);
				pb_msg(&loc, 4, &line);
				td_buf_free(&line);
				if (q == top)
					break;
			}
			pb_msg(w->prof, 4, &loc);
			td_buf_free(&loc);
		}
		td_buf_put_varint(locs, *lid);
		n = p->nodes[top].parent;
	}
	return 0;
}

/* Label { key, str } or { key, num } */
static void put_label_str(struct td_buf *labels, int64_t key, int64_t str)
{
	struct td_buf lab = { 0 };

	pb_uint(&lab, 1, (uint64_t)key);
	pb_uint(&lab, 2, (uint64_t)str);
	pb_msg(labels, 3, &lab);
	td_buf_free(&lab);
}

static void put_label_num(struct td_buf *labels, int64_t key, uint64_t num)
{
	struct td_buf lab = { 0 };

	pb_uint(&lab, 1, (uint64_t)key);
	pb_uint(&lab, 3, num);
	pb_msg(labels, 3, &lab);
	td_buf_free(&lab);
}

/* Sample { location_id (packed), value (packed), label (as encoded) } */
static void put_sample(struct td_buf *prof, const struct td_buf *locs, const uint64_t *values,
	unsigned nvalues, const struct td_buf *labels)
{
	struct td_buf sub = { 0 }, v = { 0 };

	pb_bytes(&sub, 1, locs->p, locs->len);
	for (unsigned i = 0; i < nvalues; i++)
		td_buf_put_varint(&v, values[i]);
	pb_bytes(&sub, 2, v.p, v.len);
	td_buf_put(&sub, labels->p, labels->len);
	if (locs->failed || v.failed || labels->failed)
		sub.failed = true;
	pb_msg(prof, 2, &sub);
	td_buf_free(&sub);
	td_buf_free(&v);
}

/* An object's text ("0x..." or a descriptor), in the string table once. */
static int64_t pstr_object(struct pw *w, uint32_t kind, uint64_t object)
{
	struct td_map *m = kind == TCF_WAIT_FD ? &w->fd_sid : &w->addr_sid;
	uint64_t *slot;
	char text[64];

	if (td_map_upsert(m, object, &slot) < 0) {
		w->prof->failed = true;
		return 0;
	}
	if (!*slot) {
		rp_wait_object_text(text, sizeof(text), kind, object);
		pb_str(w->prof, 6, text);
		*slot = (uint64_t)++w->st.next;
	}
	return (int64_t)*slot;
}

/* Wait episodes aggregated into samples: the same waiter, stack, kind,
 * object, what and top owner make one. */
struct wsample {
	uint32_t thread, node, kind, what;
	uint32_t owner; /* the thread that held the object longest, + 1; 0: none */
	uint64_t object, episodes, wait_ns;
};

static int wsample_cmp(const void *a, const void *b)
{
	const struct wsample *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->object != y->object)
		return x->object < y->object ? -1 : 1;
	if (x->what != y->what)
		return x->what < y->what ? -1 : 1;
	return x->owner < y->owner ? -1 : x->owner > y->owner;
}

/* The samples of the wait episodes: values 0, 0, episodes, wait time;
 * labels thread, tid, wait (the kind), object, what, owner and owner_tid
 * where known. */
static int put_waits(struct pw *w)
{
	const struct rp_profile *p = w->p;
	struct ptab *st = &w->st;
	struct wsample *ws;
	size_t n = 0;
	int64_t s_wait = 0, s_object = 0, s_what = 0, s_owner = 0, s_owner_tid = 0,
		kind_sid[TCF_WAIT_MAX + 1] = { 0 };
	int r = 0;

	if (!p->nwaits)
		return 0;
	ws = calloc(p->nwaits, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	for (size_t i = 0; i < p->nwaits; i++) {
		const struct rp_wait *e = &p->waits[i];
		uint64_t most = 0;
		uint32_t owner = 0;

		for (uint32_t o = e->owner0; o; o = p->wowners[o - 1].next)
			if (!owner || p->wowners[o - 1].wait_ns > most) {
				most = p->wowners[o - 1].wait_ns;
				owner = p->wowners[o - 1].thread + 1;
			}
		ws[i] = (struct wsample){ .thread = e->thread, .node = e->node,
			.kind = e->kind <= TCF_WAIT_MAX ? e->kind : TCF_WAIT_OTHER, .what = e->what,
			.owner = owner, .object = e->object, .episodes = 1, .wait_ns = e->wait_ns };
	}
	rp_sort(ws, p->nwaits, sizeof(*ws), wsample_cmp);
	for (size_t i = 0; i < p->nwaits; i++) {
		if (n && !wsample_cmp(&ws[n - 1], &ws[i])) {
			ws[n - 1].episodes += ws[i].episodes;
			ws[n - 1].wait_ns += ws[i].wait_ns;
		} else {
			ws[n++] = ws[i];
		}
	}
	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct wsample *x = &ws[i];
		const struct rp_thread *t = &p->threads[x->thread];
		struct td_buf locs = { 0 }, labels = { 0 };
		uint64_t values[4] = { 0, 0, x->episodes, x->wait_ns };
		int64_t k;

		r = put_locations(w, x->node, &locs);
		k = pstr_lit(st, "thread", &w->s_thread);
		put_label_str(&labels, k, pstr(st, t->name));
		put_label_num(&labels, pstr_lit(st, "tid", &w->s_tid), t->tid);
		k = pstr_lit(st, "wait", &s_wait);
		put_label_str(&labels, k,
			pstr_lit(st, tcf_wait_kind_name(x->kind), &kind_sid[x->kind]));
		if (x->object || x->kind == TCF_WAIT_FD) {
			k = pstr_lit(st, "object", &s_object);
			put_label_str(&labels, k, pstr_object(w, x->kind, x->object));
		}
		if (x->what) {
			k = pstr_lit(st, "what", &s_what);
			put_label_str(&labels, k, pstr(st, x->what));
		}
		if (x->owner) {
			const struct rp_thread *o = &p->threads[x->owner - 1];

			k = pstr_lit(st, "owner", &s_owner);
			put_label_str(&labels, k, pstr(st, o->name));
			put_label_num(&labels, pstr_lit(st, "owner_tid", &s_owner_tid), o->tid);
		}
		put_sample(w->prof, &locs, values, 4, &labels);
		td_buf_free(&locs);
		td_buf_free(&labels);
	}
	free(ws);
	return r;
}

int rp_pprof(FILE *out, const struct rp_profile *p)
{
	struct td_buf prof = { 0 }, m = { 0 };
	struct pw w = { .p = p, .prof = &prof, .st = { .out = &prof, .p = p }, .next_fn = 1,
		.next_loc = 1, .next_map = 1 };
	struct ptab *st = &w.st;
	uint64_t period = rp_period_ns(p);
	int64_t s_samples = 0, s_count = 0, s_cpu = 0, s_ns = 0, s_contentions = 0, s_delay = 0,
		s_state = 0, state_sid[8] = { 0 }, s_comment = 0, s_waits_comment = 0;
	/* the time a sample stands for: CPU time, or wall-clock time */
	const char *time_type = p->modes == RP_MODE_WALL ? "wall" : "cpu";
	/* Sample types.  A recording that kept waits (wall mode, TCF 1.1) has
	 * its episodes as Go's mutex profile has contentions: two more types,
	 * so every sample has four values; any other keeps the first two. */
	const struct {
		const char *type, *unit;
		int64_t *type_sid, *unit_sid;
	} types[] = {
		{ "samples", "count", &s_samples, &s_count },
		{ time_type, "nanoseconds", &s_cpu, &s_ns },
		{ "contentions", "count", &s_contentions, &s_count },
		{ "delay", "nanoseconds", &s_delay, &s_ns },
	};
	unsigned nvalues = p->waits_recorded || p->nwaits ? 4 : 2;
	char comment[256];
	uint64_t key, count;
	unsigned char *gzbuf = NULL;
	int r = 0;

	st->sid = calloc(p->nstrs + 1, sizeof(*st->sid));
	if (!st->sid)
		return -ENOMEM;
	pb_str(&prof, 6, ""); /* string_table[0] */
	for (unsigned i = 0; i < nvalues; i++) {
		m.len = 0;
		pb_uint(&m, 1, (uint64_t)pstr_lit(st, types[i].type, types[i].type_sid));
		pb_uint(&m, 2, (uint64_t)pstr_lit(st, types[i].unit, types[i].unit_sid));
		pb_msg(&prof, 1, &m);
	}
	for (size_t i = 1; i < p->nframes; i++)
		if (frame_placed(p, &p->frames[i]) && td_map_set(&w.placed, p->frames[i].module, 1) < 0)
			prof.failed = true;
	/* pprof takes the first mapping for the main binary ("File:") */
	{
		uint32_t main_mod = main_module(p);

		if (main_mod)
			mapping_id(&w, main_mod);
	}
	/* Samples, one per (thread, state, stack); values count and time,
	 * then no contention nor delay */
	for (size_t cur = 0; r >= 0 && td_map_next(&p->thread_node, &cur, &key, &count);) {
		uint32_t thread = RP_TN_THREAD(key);
		unsigned state = RP_TN_STATE(key);
		struct td_buf locs = { 0 }, labels = { 0 };
		uint64_t values[4] = { count, count * period, 0, 0 };
		int64_t k;
		static const char *const states[] = { "on-cpu", "runnable", "sleeping", "disk",
			"stopped", "dead", "reserved", "unknown" };

		r = put_locations(&w, RP_TN_NODE(key), &locs);
		k = pstr_lit(st, "thread", &w.s_thread);
		put_label_str(&labels, k, pstr(st, p->threads[thread].name));
		put_label_num(&labels, pstr_lit(st, "tid", &w.s_tid), p->threads[thread].tid);
		k = pstr_lit(st, "state", &s_state);
		put_label_str(&labels, k, pstr_lit(st, states[state], &state_sid[state]));
		put_sample(&prof, &locs, values, nvalues, &labels);
		td_buf_free(&locs);
		td_buf_free(&labels);
	}
	if (r >= 0)
		r = put_waits(&w);
	/* time and period */
	pb_uint(&prof, 9, p->first_ns);
	pb_uint(&prof, 10, p->last_ns > p->first_ns ? p->last_ns - p->first_ns : 0);
	m.len = 0;
	pb_uint(&m, 1, (uint64_t)pstr_lit(st, time_type, &s_cpu));
	pb_uint(&m, 2, (uint64_t)pstr_lit(st, "nanoseconds", &s_ns));
	pb_msg(&prof, 11, &m);
	pb_uint(&prof, 12, period);
	/* comment: the mode and what a sample means (pprof -comments) */
	snprintf(comment, sizeof(comment), "tracerd mode %s: %s", rp_mode_name(p),
		rp_mode_meaning(p));
	pb_uint(&prof, 13, (uint64_t)pstr_lit(st, comment, &s_comment));
	if (nvalues == 4)
		pb_uint(&prof, 13, (uint64_t)pstr_lit(st,
			"wait episodes: -sample_index=delay (time, at tick resolution) or "
			"contentions (episodes); labels wait, object, what, owner",
			&s_waits_comment));
	/* the wall (or cpu) profile stays the default view */
	pb_uint(&prof, 14, (uint64_t)pstr_lit(st, "samples", &s_samples));
	if (prof.failed || r < 0) {
		r = r < 0 ? r : -ENOMEM;
		goto out;
	}
	/* gzip in memory, then one write through out: a failed write is then
	 * the stream's error, with errno, like every other format's */
	{
		z_stream z = { 0 };
		size_t cap;

		if (prof.len > 0xffffffffu) {
			r = -EFBIG;
			goto out;
		}
		if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			    Z_DEFAULT_STRATEGY) != Z_OK) {
			r = -ENOMEM;
			goto out;
		}
		cap = deflateBound(&z, (uLong)prof.len);
		gzbuf = malloc(cap);
		z.next_in = (Bytef *)prof.p;
		z.avail_in = (uInt)prof.len;
		z.next_out = gzbuf;
		z.avail_out = (uInt)cap;
		if (!gzbuf || deflate(&z, Z_FINISH) != Z_STREAM_END)
			r = -ENOMEM;
		else if (fwrite(gzbuf, 1, z.total_out, out) != z.total_out)
			r = -EIO;
		deflateEnd(&z);
	}
out:
	free(gzbuf);
	td_buf_free(&prof);
	td_buf_free(&m);
	free(st->sid);
	pw_free(&w);
	return r;
}
