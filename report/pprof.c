/* pprof output: a gzip-compressed profile.proto.
 *
 * Written by hand rather than with protobuf-c: the profile is write-only
 * (nothing here parses untrusted input), its messages are a handful of
 * varint and length-delimited fields, and a generated encoder would need
 * profile.proto at build time, which Debian only ships inside Go source
 * packages.  Field numbers follow github.com/google/pprof proto/profile.proto.
 *
 * Mapping: one Location per physical frame (its inline chain as Lines,
 * innermost first), one Function per (name, file), one Mapping per module;
 * sample types samples/count and cpu/nanoseconds (count x the sampling
 * period); labels thread (name), tid and state.  Identical (stack, labels)
 * samples are aggregated; the real go tool pprof reads the result. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../common/buf.h"

static void pb_uint(struct td_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return; /* proto3 default */
	td_buf_put_varint(b, (uint64_t)field << 3);
	td_buf_put_varint(b, v);
}

static void pb_msg(struct td_buf *b, unsigned field, const struct td_buf *m)
{
	td_buf_put_varint(b, (uint64_t)field << 3 | 2);
	td_buf_put_varint(b, m->len);
	td_buf_put(b, m->p, m->len);
	if (m->failed)
		b->failed = true;
}

static void pb_str(struct td_buf *b, unsigned field, const char *s)
{
	size_t n = strlen(s);

	td_buf_put_varint(b, (uint64_t)field << 3 | 2);
	td_buf_put_varint(b, n);
	td_buf_put(b, s, n);
}

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

/* Mapping { id, filename (the full path), build_id (hex),
 * has_functions/filenames/line_numbers/inline_frames } */
static void emit_mapping(struct td_buf *prof, struct ptab *st, uint64_t id, uint32_t module)
{
	const struct rp_module *m = rp_module_of(st->p, module);
	struct td_buf mp = { 0 };

	pb_uint(&mp, 1, id);
	pb_uint(&mp, 5, (uint64_t)pstr(st, m && m->path ? m->path : module));
	if (m && m->build_id)
		pb_uint(&mp, 6, (uint64_t)pstr(st, m->build_id));
	for (unsigned field = 7; field <= 10; field++)
		pb_uint(&mp, field, 1);
	pb_msg(prof, 3, &mp);
	td_buf_free(&mp);
}

int rp_pprof(FILE *out, const struct rp_profile *p)
{
	struct td_buf prof = { 0 }, m = { 0 }, sub = { 0 };
	struct ptab st = { .out = &prof, .p = p };
	struct td_map fn_ids = { 0 }, loc_ids = { 0 }, map_ids = { 0 };
	uint64_t period = rp_period_ns(p);
	int64_t s_samples = 0, s_count = 0, s_cpu = 0, s_ns = 0, s_thread = 0, s_tid = 0,
		s_state = 0, state_sid[8] = { 0 }, s_comment = 0;
	/* the time a sample stands for: CPU time, or wall-clock time */
	const char *time_type = p->modes == RP_MODE_WALL ? "wall" : "cpu";
	char comment[256];
	uint64_t next_fn = 1, next_loc = 1, next_map = 1, key, count;
	unsigned char *gzbuf = NULL;
	int r = 0;

	st.sid = calloc(p->nstrs + 1, sizeof(*st.sid));
	if (!st.sid)
		return -ENOMEM;
	pb_str(&prof, 6, ""); /* string_table[0] */
	/* sample types: samples/count, cpu (or wall)/nanoseconds; period the
	 * same */
	for (int i = 0; i < 2; i++) {
		m.len = 0;
		pb_uint(&m, 1, (uint64_t)(i ? pstr_lit(&st, time_type, &s_cpu) :
					     pstr_lit(&st, "samples", &s_samples)));
		pb_uint(&m, 2, (uint64_t)(i ? pstr_lit(&st, "nanoseconds", &s_ns) :
					     pstr_lit(&st, "count", &s_count)));
		pb_msg(&prof, 1, &m);
	}
	/* pprof takes the first mapping for the main binary: the module that
	 * holds main, else the outermost frame of the heaviest path */
	{
		uint32_t main_mod = 0, best = 0;

		for (size_t i = 1; i < p->nnodes && !main_mod; i++) {
			const struct rp_frame *f = &p->frames[p->nodes[i].frame];
			const char *name = rp_str(p, f->func);

			if (name && !strcmp(name, "main"))
				main_mod = f->module;
		}
		for (uint32_t c = p->nodes[0].first_child; c && !main_mod; c = p->nodes[c].next_sibling)
			if (!best || p->nodes[c].total > p->nodes[best].total)
				best = c;
		if (!main_mod && best)
			main_mod = p->frames[p->nodes[best].frame].module;
		if (main_mod) {
			uint64_t *mid;

			if (td_map_upsert(&map_ids, main_mod, &mid) >= 0) {
				*mid = next_map++;
				emit_mapping(&prof, &st, *mid, main_mod);
			}
		}
	}
	/* Samples, one per (thread, state, stack).  Walking a leaf to the
	 * root, a physical frame is a run of inlined frames closed by the
	 * function they were inlined into: that run is one Location, keyed
	 * by its innermost node. */
	for (size_t cur = 0; td_map_next(&p->thread_node, &cur, &key, &count);) {
		uint32_t node, thread;
		unsigned state;
		struct td_buf locs = { 0 }, lab = { 0 };
		static const char *const states[] = { "on-cpu", "runnable", "sleeping", "disk",
			"stopped", "dead", "reserved", "unknown" };

		node = RP_TN_NODE(key);
		thread = RP_TN_THREAD(key);
		state = RP_TN_STATE(key);
		/* leaf first: group each physical frame's lines */
		for (uint32_t n = node; n;) {
			uint32_t top = n, lkey_node = n;
			uint64_t *lid;

			while (top && p->frames[p->nodes[top].frame].inlined)
				top = p->nodes[top].parent; /* up to the holding function */
			if (!top)
				top = n;
			if (td_map_upsert(&loc_ids, lkey_node, &lid) < 0) {
				r = -ENOMEM;
				break;
			}
			if (!*lid) {
				struct td_buf loc = { 0 };
				const struct rp_frame *outer = &p->frames[p->nodes[top].frame];
				uint64_t *mid = NULL;

				td_map_upsert(&map_ids, outer->module, &mid); /* NULL: no memory */
				if (mid && !*mid) {
					*mid = next_map++;
					emit_mapping(&prof, &st, *mid, outer->module);
				}
				*lid = next_loc++;
				pb_uint(&loc, 1, *lid);
				pb_uint(&loc, 2, mid ? *mid : 0);
				/* lines innermost first: from n up to top */
				for (uint32_t q = n;; q = p->nodes[q].parent) {
					const struct rp_frame *f = &p->frames[p->nodes[q].frame];
					uint64_t *fid = NULL;
					struct td_buf line = { 0 };

					td_map_upsert(&fn_ids, (uint64_t)f->func << 32 | f->file, &fid);

					if (fid && !*fid) {
						struct td_buf fn = { 0 };

						*fid = next_fn++;
						pb_uint(&fn, 1, *fid);
						pb_uint(&fn, 2, (uint64_t)pstr(&st, f->func));
						pb_uint(&fn, 3, (uint64_t)pstr(&st, f->func));
						pb_uint(&fn, 4, (uint64_t)pstr(&st, f->file));
						pb_uint(&fn, 5, f->start_line);
						pb_msg(&prof, 5, &fn);
						td_buf_free(&fn);
					}
					pb_uint(&line, 1, fid ? *fid : 0);
					pb_uint(&line, 2, f->line);
					pb_msg(&loc, 4, &line);
					td_buf_free(&line);
					if (q == top)
						break;
				}
				pb_msg(&prof, 4, &loc);
				td_buf_free(&loc);
			}
			td_buf_put_varint(&locs, *lid);
			n = p->nodes[top].parent;
		}
		/* Sample { location_id (packed), value (packed), label } */
		sub.len = 0;
		td_buf_put_varint(&sub, 1 << 3 | 2);
		td_buf_put_varint(&sub, locs.len);
		td_buf_put(&sub, locs.p, locs.len);
		m.len = 0;
		td_buf_put_varint(&m, count);
		td_buf_put_varint(&m, count * period);
		td_buf_put_varint(&sub, 2 << 3 | 2);
		td_buf_put_varint(&sub, m.len);
		td_buf_put(&sub, m.p, m.len);
		lab.len = 0;
		pb_uint(&lab, 1, (uint64_t)pstr_lit(&st, "thread", &s_thread));
		pb_uint(&lab, 2, (uint64_t)pstr(&st, p->threads[thread].name));
		pb_msg(&sub, 3, &lab);
		lab.len = 0;
		pb_uint(&lab, 1, (uint64_t)pstr_lit(&st, "tid", &s_tid));
		pb_uint(&lab, 3, p->threads[thread].tid);
		pb_msg(&sub, 3, &lab);
		lab.len = 0;
		pb_uint(&lab, 1, (uint64_t)pstr_lit(&st, "state", &s_state));
		pb_uint(&lab, 2, (uint64_t)pstr_lit(&st, states[state], &state_sid[state]));
		pb_msg(&sub, 3, &lab);
		pb_msg(&prof, 2, &sub);
		td_buf_free(&locs);
		td_buf_free(&lab);
	}
	/* time and period */
	pb_uint(&prof, 9, p->first_ns);
	pb_uint(&prof, 10, p->last_ns > p->first_ns ? p->last_ns - p->first_ns : 0);
	m.len = 0;
	pb_uint(&m, 1, (uint64_t)pstr_lit(&st, time_type, &s_cpu));
	pb_uint(&m, 2, (uint64_t)pstr_lit(&st, "nanoseconds", &s_ns));
	pb_msg(&prof, 11, &m);
	pb_uint(&prof, 12, period);
	/* comment: the mode and what a sample means (pprof -comments) */
	snprintf(comment, sizeof(comment), "tracerd mode %s: %s", rp_mode_name(p),
		rp_mode_meaning(p));
	pb_uint(&prof, 13, (uint64_t)pstr_lit(&st, comment, &s_comment));
	pb_uint(&prof, 14, (uint64_t)pstr_lit(&st, "samples", &s_samples));
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
	td_buf_free(&sub);
	free(st.sid);
	td_map_free(&fn_ids);
	td_map_free(&loc_ids);
	td_map_free(&map_ids);
	return r;
}
