/* SPDX-License-Identifier: GPL-2.0-or-later */
/* OTLP output: a profile as OpenTelemetry's profiles signal carries it, an
 * ExportProfilesServiceRequest (package
 * opentelemetry.proto.collector.profiles.v1development; the .proto files
 * and the commit they are of are in third_party/opentelemetry-proto/).
 *
 * One ResourceProfiles (the process: service.name, host.name,
 * process.pid, process.executable.path, the unit and the caller's labels
 * as resource attributes), one ScopeProfiles (tracerd), one Profile whose
 * samples are one per (thread, state, stack) as pprof.c writes them:
 * sample type samples/count, period type cpu (or wall)/nanoseconds and
 * the sampling period, attributes thread.name, thread.id and state.  Every
 * table is in the request's ProfilesDictionary, each starting with its
 * zero entry as the proto requires; Locations, Functions and Mappings are
 * made as pprof.c makes them (a Location per physical frame, its inline
 * chain as Lines; one Mapping per module spanning the address space from
 * 0, the chunks keeping ELF addresses).  Uncompressed: HTTP may gzip it.
 * Still "v1development" upstream: a change of the proto is a change
 * here. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"

/* The dictionary being written.  owns: the tables' buffers and maps;
 * borrows: the profile. */
struct od {
	const struct rp_profile *p;
	struct td_buf maps, locs, funcs, strs, attrs, stacks;
	int64_t *sid;			     /* our string id -> index (0: not yet) */
	int64_t nstr, nmap, nloc, nfunc, nattr, nstack;
	struct td_map map_ids, loc_ids, fn_ids, attr_ids, stack_ids, lit_ids;
};

static void od_free(struct od *d)
{
	td_buf_free(&d->maps);
	td_buf_free(&d->locs);
	td_buf_free(&d->funcs);
	td_buf_free(&d->strs);
	td_buf_free(&d->attrs);
	td_buf_free(&d->stacks);
	free(d->sid);
	td_map_free(&d->map_ids);
	td_map_free(&d->loc_ids);
	td_map_free(&d->fn_ids);
	td_map_free(&d->attr_ids);
	td_map_free(&d->stack_ids);
	td_map_free(&d->lit_ids);
}

static int64_t ostr(struct od *d, uint32_t id)
{
	if (!id)
		return 0;
	if (!d->sid[id]) {
		pb_str(&d->strs, 5, rp_str(d->p, id));
		d->sid[id] = ++d->nstr;
	}
	return d->sid[id];
}

/* A literal's index; key tells literals apart (the caller's constant). */
static int64_t ostr_lit(struct od *d, uint64_t key, const char *s)
{
	uint64_t *slot;

	if (td_map_upsert(&d->lit_ids, key, &slot) < 0) {
		d->strs.failed = true;
		return 0;
	}
	if (!*slot) {
		pb_str(&d->strs, 5, s);
		*slot = (uint64_t)++d->nstr;
	}
	return (int64_t)*slot;
}

static int64_t mapping_index(struct od *d, uint32_t module)
{
	const struct rp_module *m = rp_module_of(d->p, module);
	uint64_t *slot;

	if (!module || td_map_upsert(&d->map_ids, module, &slot) < 0)
		return 0;
	if (!*slot) {
		struct td_buf mp = { 0 };

		pb_uint(&mp, 2, UINT64_MAX);
		pb_uint(&mp, 4, (uint64_t)ostr(d, m && m->path ? m->path : module));
		pb_msg(&d->maps, 1, &mp);
		td_buf_free(&mp);
		*slot = (uint64_t)++d->nmap;
	}
	return (int64_t)*slot;
}

static int64_t function_index(struct od *d, const struct rp_frame *f)
{
	uint64_t *slot;

	if (td_map_upsert(&d->fn_ids, (uint64_t)f->func << 32 | f->file, &slot) < 0)
		return 0;
	if (!*slot) {
		struct td_buf fn = { 0 };

		pb_uint(&fn, 1, (uint64_t)ostr(d, f->func));
		pb_uint(&fn, 2, (uint64_t)ostr(d, f->func));
		pb_uint(&fn, 3, (uint64_t)ostr(d, f->file));
		pb_uint(&fn, 4, f->start_line);
		pb_msg(&d->funcs, 3, &fn);
		td_buf_free(&fn);
		*slot = (uint64_t)++d->nfunc;
	}
	return (int64_t)*slot;
}

/* The Stack of node (leaf first), its Locations made as needed. */
static int64_t stack_index(struct od *d, uint32_t node)
{
	const struct rp_profile *p = d->p;
	struct td_buf idx = { 0 }, st = { 0 };
	uint64_t *slot;

	if (td_map_upsert(&d->stack_ids, node, &slot) < 0)
		return 0;
	if (*slot)
		return (int64_t)*slot;
	for (uint32_t n = node; n;) {
		uint32_t top = n;
		uint64_t *lid;

		while (top && p->frames[p->nodes[top].frame].inlined)
			top = p->nodes[top].parent; /* up to the holding function */
		if (!top)
			top = n;
		if (td_map_upsert(&d->loc_ids,
			    (uint64_t)p->nodes[n].frame << 32 | p->nodes[top].frame, &lid) < 0) {
			idx.failed = true;
			break;
		}
		if (!*lid) {
			struct td_buf loc = { 0 };
			const struct rp_frame *outer = &p->frames[p->nodes[top].frame];

			pb_uint(&loc, 1, (uint64_t)mapping_index(d, outer->module));
			pb_uint(&loc, 2, outer->addr);
			for (uint32_t q = n;; q = p->nodes[q].parent) {
				const struct rp_frame *f = &p->frames[p->nodes[q].frame];
				struct td_buf line = { 0 };

				pb_uint(&line, 1, (uint64_t)function_index(d, f));
				pb_uint(&line, 2, f->line);
				pb_msg(&loc, 3, &line);
				td_buf_free(&line);
				if (q == top)
					break;
			}
			pb_msg(&d->locs, 2, &loc);
			td_buf_free(&loc);
			*lid = (uint64_t)++d->nloc;
		}
		td_buf_put_varint(&idx, *lid);
		n = p->nodes[top].parent;
	}
	pb_msg(&st, 1, &idx);
	pb_msg(&d->stacks, 7, &st);
	td_buf_free(&idx);
	td_buf_free(&st);
	*slot = (uint64_t)++d->nstack;
	return (int64_t)*slot;
}

/* KeyValueAndUnit { key, AnyValue { string_value 1 | int_value 3 } } in
 * the attribute table once per (key, value): key the literal name (told
 * apart by lit_key), the value s, or num when s is NULL; dedupe names the
 * value (a string's id, or num) */
static int64_t attr_index(struct od *d, uint64_t lit_key, const char *name, const char *s,
	uint64_t num, uint64_t dedupe)
{
	uint64_t *slot;
	int64_t k = ostr_lit(d, lit_key, name);

	if (td_map_upsert(&d->attr_ids, (uint64_t)k << 40 ^ dedupe, &slot) < 0)
		return 0;
	if (!*slot) {
		struct td_buf kv = { 0 }, any = { 0 };

		if (s)
			pb_str(&any, 1, s);
		else
			pb_uint(&any, 3, num);
		pb_uint(&kv, 1, (uint64_t)k);
		pb_msg(&kv, 2, &any);
		pb_msg(&d->attrs, 6, &kv);
		td_buf_free(&kv);
		td_buf_free(&any);
		*slot = (uint64_t)++d->nattr;
	}
	return (int64_t)*slot;
}

/* KeyValue { key, AnyValue } of a resource */
static void resource_attr(struct td_buf *res, const char *key, const char *s, int64_t num)
{
	struct td_buf kv = { 0 }, any = { 0 };

	if (s && !*s)
		return;
	if (s)
		pb_str(&any, 1, s);
	else
		pb_uint(&any, 3, (uint64_t)num);
	pb_str(&kv, 1, key);
	pb_msg(&kv, 2, &any);
	pb_msg(res, 1, &kv);
	td_buf_free(&kv);
	td_buf_free(&any);
}

static void resource(struct td_buf *out, const struct rp_otlp_resource *r)
{
	struct td_buf res = { 0 };
	char labels[2048];

	resource_attr(&res, "service.name", r->service, 0);
	resource_attr(&res, "host.name", r->host, 0);
	resource_attr(&res, "process.pid", NULL, r->pid);
	resource_attr(&res, "process.executable.path", r->exe, 0);
	resource_attr(&res, "systemd.unit", r->unit, 0);
	/* the caller's k=v,... (checked by the config: no ',' nor '=' in
	 * either part) */
	snprintf(labels, sizeof(labels), "%s", r->labels ? r->labels : "");
	for (char *save = NULL, *kv = strtok_r(labels, ",", &save); kv;
		kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');

		if (eq) {
			*eq = '\0';
			resource_attr(&res, kv, eq + 1, 0);
		}
	}
	pb_msg(out, 1, &res);
	td_buf_free(&res);
}

/* The Profile message: its samples and times. */
static void profile(struct od *d, struct td_buf *prof, const struct rp_otlp_resource *res)
{
	const struct rp_profile *p = d->p;
	static const char *const states[] = { "on-cpu", "runnable", "sleeping", "disk", "stopped",
		"dead", "reserved", "unknown" };
	struct td_buf vt = { 0 };
	uint64_t key, count;

	pb_uint(&vt, 1, (uint64_t)ostr_lit(d, 1, "samples"));
	pb_uint(&vt, 2, (uint64_t)ostr_lit(d, 2, "count"));
	pb_msg(prof, 1, &vt);
	for (size_t cur = 0; td_map_next(&p->thread_node, &cur, &key, &count);) {
		const struct rp_thread *t = &p->threads[RP_TN_THREAD(key)];
		unsigned state = RP_TN_STATE(key);
		struct td_buf s = { 0 }, attrs = { 0 }, vals = { 0 };

		pb_uint(&s, 1, (uint64_t)stack_index(d, RP_TN_NODE(key)));
		td_buf_put_varint(&attrs, (uint64_t)attr_index(d, 10, "thread.name",
			t->name ? rp_str(p, t->name) : "", 0, t->name));
		td_buf_put_varint(&attrs,
			(uint64_t)attr_index(d, 11, "thread.id", NULL, t->tid, t->tid));
		td_buf_put_varint(&attrs,
			(uint64_t)attr_index(d, 12, "state", states[state], 0, state));
		pb_msg(&s, 2, &attrs);
		td_buf_put_varint(&vals, count);
		pb_msg(&s, 4, &vals);
		pb_msg(prof, 2, &s);
		td_buf_free(&s);
		td_buf_free(&attrs);
		td_buf_free(&vals);
	}
	if (res->until_ns > res->from_ns) {
		pb_fixed64(prof, 3, res->from_ns);
		pb_uint(prof, 4, res->until_ns - res->from_ns);
	} else {
		pb_fixed64(prof, 3, p->first_ns);
		pb_uint(prof, 4, p->last_ns > p->first_ns ? p->last_ns - p->first_ns : 0);
	}
	vt.len = 0;
	pb_uint(&vt, 1, (uint64_t)ostr_lit(d, 3, p->modes == RP_MODE_WALL ? "wall" : "cpu"));
	pb_uint(&vt, 2, (uint64_t)ostr_lit(d, 4, "nanoseconds"));
	pb_msg(prof, 5, &vt);
	pb_uint(prof, 6, rp_period_ns(p));
	td_buf_free(&vt);
}

int rp_otlp(FILE *out, const struct rp_profile *p, const struct rp_otlp_resource *res)
{
	struct od d = { .p = p };
	struct td_buf req = { 0 }, rp = { 0 }, sp = { 0 }, scope = { 0 }, prof = { 0 },
		dict = { 0 }, zero = { 0 };
	int r = 0;

	d.sid = calloc(p->nstrs + 1, sizeof(*d.sid));
	if (!d.sid)
		return -ENOMEM;
	/* every table's zero entry; string_table[0] is "" */
	pb_msg(&d.maps, 1, &zero);
	pb_msg(&d.locs, 2, &zero);
	pb_msg(&d.funcs, 3, &zero);
	pb_msg(&d.attrs, 6, &zero);
	pb_msg(&d.stacks, 7, &zero);
	pb_str(&d.strs, 5, "");
	profile(&d, &prof, res);
	resource(&rp, res);
	pb_str(&scope, 1, "tracerd");
	pb_msg(&sp, 1, &scope);
	pb_msg(&sp, 2, &prof);
	pb_msg(&rp, 2, &sp);
	pb_msg(&req, 1, &rp);
	td_buf_put(&dict, d.maps.p, d.maps.len);
	td_buf_put(&dict, d.locs.p, d.locs.len);
	td_buf_put(&dict, d.funcs.p, d.funcs.len);
	pb_msg(&dict, 4, &zero); /* link_table[0] */
	td_buf_put(&dict, d.strs.p, d.strs.len);
	td_buf_put(&dict, d.attrs.p, d.attrs.len);
	td_buf_put(&dict, d.stacks.p, d.stacks.len);
	if (d.maps.failed || d.locs.failed || d.funcs.failed || d.strs.failed || d.attrs.failed ||
		d.stacks.failed)
		dict.failed = true;
	pb_msg(&req, 2, &dict);
	if (req.failed)
		r = -ENOMEM;
	else if (fwrite(req.p, 1, req.len, out) != req.len)
		r = -EIO;
	td_buf_free(&req);
	td_buf_free(&rp);
	td_buf_free(&sp);
	td_buf_free(&scope);
	td_buf_free(&prof);
	td_buf_free(&dict);
	od_free(&d);
	return r;
}
