/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd report --format waits: the wait episodes of wall recordings by
 * site (what was waited for, and the stack where the wait began), with
 * total time, episodes, p50/p99/max durations and the owners that held
 * the object longest, with their stacks; as text or JSON.
 *
 * A site is what was waited for and the stack where the wait began, and
 * an owner's row an owner and a stack of it, each stack function by
 * function and without its kernel frames (rp_place), shown with those of
 * its first episode.
 *
 * An owner's row is an owner and a stack of it:
 * since TCF 1.2 each stack was taken while it held the object, and the
 * time it held it with no stack taken is a row of its own that says so.
 * An older recording's owner is one row with its first stack, which may
 * have been taken after it let go.
 *
 * The text prints a stack in one line with its innermost user frames
 * first and its kernel frames folded to one mark (rp_stack_line), so that
 * the kernel's part of a wait (the scheduler, the system call's entry)
 * never pushes out where in the program it began; JSON gives every frame
 * and how many of them, from the leaf, are the kernel's.
 *
 * The grouping into sites (rp_wait_sites_build) is the one the html page's
 * waits view reads too: a site's figures are the same in both. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "../common/td.h"

/* The sites while they are built: the index finds a site by its key. */
struct building {
	struct rp_wait_sites S;
	struct td_map index; /* hash(kind, object, place) -> index into S.s */
};

void rp_wait_sites_free(struct rp_wait_sites *S)
{
	if (!S)
		return;
	for (size_t i = 0; i < S->n; i++) {
		free(S->s[i].durs);
		free(S->s[i].owners);
	}
	free(S->s);
	free(S->site_of);
	*S = (struct rp_wait_sites){ 0 };
}

uint32_t rp_place(const struct rp_profile *p, uint32_t node)
{
	/* a line-level node's function-level one (itself before the
	 * function tree is built) */
	node = rp_user_node(p, node);
	return p->fnode_of && node < p->nnodes ? p->fnode_of[node] : node;
}

static int add_owner(const struct rp_profile *p, struct rp_wait_site *x,
	const struct rp_wait_owner *o)
{
	size_t i;

	for (i = 0; i < x->nowners; i++) {
		const struct rp_wait_site_owner *y = &x->owners[i];

		if (y->thread == o->thread && y->held == o->held &&
			(o->held == RP_HELD_UNKNOWN || rp_place(p, y->node) == rp_place(p, o->node)))
			break;
	}
	if (i == x->nowners) {
		if (td_array_grow(x->owners, x->capowners, x->nowners + 1, 0) < 0)
			return -ENOMEM;
		x->owners[x->nowners++] =
			(struct rp_wait_site_owner){ o->thread, o->node, 0, o->held };
	}
	x->owners[i].wait_ns += o->wait_ns;
	if (!x->owners[i].node)
		x->owners[i].node = o->node;
	return 0;
}

/* The site of episode w, added if new: its index, or -ENOMEM. */
static long site_for(const struct rp_profile *p, struct building *B, const struct rp_wait *w)
{
	struct rp_wait_sites *S = &B->S;
	uint32_t place = rp_place(p, w->node);
	uint64_t key = rp_mix64(w->kind ^ rp_mix64(w->object ^ rp_mix64(place))), v;
	size_t cur = 0;

	while (td_map_find_next(&B->index, key, &cur, &v)) {
		const struct rp_wait_site *x = &S->s[v];

		if (x->kind == w->kind && x->object == w->object && x->place == place)
			return (long)v;
	}
	if (td_array_grow(S->s, S->cap, S->n + 1, 64) < 0)
		return -ENOMEM;
	S->s[S->n] = (struct rp_wait_site){ .kind = w->kind, .node = w->node, .what = w->what,
		.object = w->object, .place = place };
	if (td_map_add(&B->index, key, S->n) < 0)
		return -ENOMEM;
	return (long)S->n++;
}

/* Add episode w to site x. */
static int add_episode(const struct rp_profile *p, struct rp_wait_site *x, const struct rp_wait *w)
{
	unsigned t;

	if (td_array_grow(x->durs, x->cap, x->n + 1, 16) < 0)
		return -ENOMEM;
	x->durs[x->n++] = w->wait_ns;
	x->total_ns += w->wait_ns;
	for (t = 0; t < x->nthreads && x->threads[t] != w->thread; t++)
		;
	if (t == x->nthreads) {
		if (t < TD_ARRAY_SIZE(x->threads))
			x->threads[x->nthreads++] = w->thread;
		else
			x->more_threads = 1;
	}
	for (uint32_t o = w->owner0; o; o = p->wowners[o - 1].next)
		if (add_owner(p, x, &p->wowners[o - 1]) < 0)
			return -ENOMEM;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Site indices by total, longest first; ties in order of appearance. */
static int cmp_site_index(const void *a, const void *b, void *arg)
{
	const struct rp_wait_site *s = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (s[i].total_ns != s[j].total_ns)
		return s[i].total_ns > s[j].total_ns ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int cmp_owner(const void *a, const void *b)
{
	const struct rp_wait_site_owner *x = a, *y = b;

	return x->wait_ns > y->wait_ns ? -1 : x->wait_ns < y->wait_ns;
}

/* Sites by total, longest first, and site_of renumbered to match. */
static int sort_sites(struct rp_wait_sites *S, size_t nwaits)
{
	uint32_t *order = malloc((S->n + 1) * sizeof(*order));
	uint32_t *rank = malloc((S->n + 1) * sizeof(*rank));
	struct rp_wait_site *sorted = malloc((S->n + 1) * sizeof(*sorted));

	if (!order || !rank || !sorted) {
		free(order);
		free(rank);
		free(sorted);
		return -ENOMEM;
	}
	for (size_t i = 0; i < S->n; i++)
		order[i] = (uint32_t)i;
	rp_sort_r(order, S->n, sizeof(*order), cmp_site_index, S->s);
	for (size_t r = 0; r < S->n; r++) {
		sorted[r] = S->s[order[r]];
		rank[order[r]] = (uint32_t)r;
	}
	for (size_t i = 0; i < nwaits; i++)
		S->site_of[i] = rank[S->site_of[i]];
	free(S->s);
	S->s = sorted;
	S->cap = S->n + 1;
	free(order);
	free(rank);
	return 0;
}

int rp_wait_sites_build(const struct rp_profile *p, struct rp_wait_sites *ret)
{
	struct building B = { 0 };
	int r = -ENOMEM;

	B.S.site_of = malloc((p->nwaits + 1) * sizeof(*B.S.site_of));
	if (!B.S.site_of)
		goto out;
	for (size_t i = 0; i < p->nwaits; i++) {
		long k = site_for(p, &B, &p->waits[i]);

		if (k < 0 || add_episode(p, &B.S.s[k], &p->waits[i]) < 0)
			goto out;
		B.S.site_of[i] = (uint32_t)k;
		B.S.wait_ns += p->waits[i].wait_ns;
		B.S.episodes++;
	}
	for (size_t i = 0; i < B.S.n; i++) {
		struct rp_wait_site *x = &B.S.s[i];

		rp_sort(x->durs, x->n, sizeof(*x->durs), cmp_u64);
		rp_sort(x->owners, x->nowners, sizeof(*x->owners), cmp_owner);
	}
	if (sort_sites(&B.S, p->nwaits) < 0)
		goto out;
	*ret = B.S;
	B.S = (struct rp_wait_sites){ 0 };
	r = 0;
out:
	rp_wait_sites_free(&B.S);
	td_map_free(&B.index);
	return r;
}

uint64_t rp_wait_site_quantile(const struct rp_wait_site *x, double q)
{
	size_t r = (size_t)(q * (double)x->n + 0.999999);

	return x->n ? x->durs[r ? (r > x->n ? x->n : r) - 1 : 0] : 0;
}

/* The real bytes of a frame's name, for JSON. */
static const char *func_of(const struct rp_profile *p, uint32_t node)
{
	const char *s = rp_str(p, p->frames[p->nodes[node].frame].name);

	return s ? s : "??";
}

/* A stack in one line: the innermost user frames, the kernel's folded
 * (rp_stack_line). */
static void text_stack(FILE *out, const struct rp_profile *p, uint32_t node, unsigned max)
{
	if (!node) {
		fputs("[no stack]", out);
		return;
	}
	rp_stack_line(out, p, node, max);
}

/* What an owner's row says where it has no stack. */
static const char *no_stack(const struct rp_wait_site *x, const struct rp_wait_site_owner *o)
{
	if (o->held != RP_HELD_NONE)
		return "[no stack]";
	return x->kind == TCF_WAIT_MUTEX || x->kind == TCF_WAIT_RWLOCK ?
		       "[no stack taken while it held the lock]" :
		       "[no stack taken while it held the object]";
}

/* "kernel_frames":N,"stack":[...]: every frame, leaf first, and how many
 * of them, from the leaf, are the kernel's. */
static void json_stack(FILE *out, const struct rp_profile *p, uint32_t node)
{
	bool first = true;

	fprintf(out, "\"kernel_frames\":%u,\"stack\":[", rp_kernel_depth(p, node));
	for (uint32_t k = node; k; k = p->nodes[k].parent) {
		if (!first)
			fputc(',', out);
		td_json_string(out, func_of(p, k), 0);
		first = false;
	}
	fputc(']', out);
}

void rp_wait_object_text(char *buf, size_t len, uint32_t kind, uint64_t object)
{
	if (kind == TCF_WAIT_FD && object == UINT64_MAX)
		snprintf(buf, len, "a set of fds");
	else if (kind == TCF_WAIT_FD)
		snprintf(buf, len, "%" PRIu64, object);
	else if (object)
		snprintf(buf, len, "0x%" PRIx64, object);
	else
		buf[0] = 0;
}

static const char *tname(const struct rp_profile *p, uint32_t t, bool text)
{
	const char *s = text ? rp_text(p, p->threads[t].name) : rp_str(p, p->threads[t].name);

	return s ? s : "?";
}

int rp_waits(FILE *out, const struct rp_profile *p, unsigned limit, bool json)
{
	struct rp_wait_sites S;
	uint64_t tick = rp_period_ns(p);
	size_t nshow;
	int r = rp_wait_sites_build(p, &S);

	if (r < 0)
		return r;
	nshow = limit && limit < S.n ? limit : S.n;
	if (json) {
		fprintf(out, "{\"mode\":\"%s\",\"tick_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64
			     ",\"episodes\":%" PRIu64 ",\"waits\":[",
			rp_mode_name(p), tick, S.wait_ns, S.episodes);
		for (size_t i = 0; i < nshow; i++) {
			const struct rp_wait_site *x = &S.s[i];
			char obj[64];

			rp_wait_object_text(obj, sizeof(obj), x->kind, x->object);
			fprintf(out, "%s\n{\"kind\":\"%s\",\"object\":", i ? "," : "", tcf_wait_kind_name(x->kind));
			td_json_string(out, obj, 0);
			fputs(",\"what\":", out);
			td_json_string(out, rp_str(p, x->what), 0);
			fprintf(out,
				",\"wait_ns\":%" PRIu64 ",\"count\":%zu,\"p50_ns\":%" PRIu64
				",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 ",",
				x->total_ns, x->n, rp_wait_site_quantile(x, 0.5),
				rp_wait_site_quantile(x, 0.99), x->n ? x->durs[x->n - 1] : 0);
			json_stack(out, p, x->node);
			fputs(",\"threads\":[", out);
			for (unsigned t = 0; t < x->nthreads; t++) {
				fprintf(out, "%s{\"tid\":%u,\"name\":", t ? "," : "",
					p->threads[x->threads[t]].tid);
				td_json_string(out, tname(p, x->threads[t], false), 0);
				fputc('}', out);
			}
			fputs("],\"owners\":[", out);
			for (size_t o = 0; o < x->nowners; o++) {
				fprintf(out, "%s{\"thread\":", o ? "," : "");
				td_json_string(out, tname(p, x->owners[o].thread, false), 0);
				fprintf(out, ",\"tid\":%u,\"wait_ns\":%" PRIu64 ",\"stack_while_held\":%s,",
					p->threads[x->owners[o].thread].tid, x->owners[o].wait_ns,
					x->owners[o].held == RP_HELD_STACK ? "true" :
					x->owners[o].held == RP_HELD_NONE  ? "false" :
									     "null");
				json_stack(out, p, x->owners[o].node);
				fputc('}', out);
			}
			fputs("]}", out);
		}
		fputs("\n]}\n", out);
	} else {
		rp_death_header(out, p);
		rp_mode_header(out, p);
		if (!(p->modes & RP_MODE_WALL)) {
			fputs("no wait episodes: waits are recorded in wall mode (tracerd --mode wall)\n",
				out);
		} else {
			fprintf(out,
				"%" PRIu64 " wait episodes, %.2f s of waiting, at tick resolution "
				"(%.1f ms: a duration is the ticks that saw the wait)\n",
				S.episodes, (double)S.wait_ns / 1e9, (double)tick / 1e6);
		}
		for (size_t i = 0; i < nshow; i++) {
			const struct rp_wait_site *x = &S.s[i];
			char obj[64];

			rp_wait_object_text(obj, sizeof(obj), x->kind, x->object);
			fprintf(out,
				"\n%8.3f s %6zu episode%s  p50 %.1f ms  p99 %.1f ms  max %.1f ms  %s%s%s",
				(double)x->total_ns / 1e9, x->n, x->n == 1 ? "" : "s",
				(double)rp_wait_site_quantile(x, 0.5) / 1e6,
				(double)rp_wait_site_quantile(x, 0.99) / 1e6,
				(double)(x->n ? x->durs[x->n - 1] : 0) / 1e6, tcf_wait_kind_name(x->kind),
				obj[0] ? " " : "", obj);
			if (rp_str(p, x->what))
				fprintf(out, " (%s)", rp_text(p, x->what));
			fputs("\n    waiting:", out);
			for (unsigned t = 0; t < x->nthreads; t++)
				fprintf(out, " %u (%s)", p->threads[x->threads[t]].tid,
					tname(p, x->threads[t], true));
			if (x->more_threads)
				fputs(" and more", out);
			fputs("\n    in: ", out);
			text_stack(out, p, x->node, 8);
			fputc('\n', out);
			for (size_t o = 0; o < x->nowners && o < 3; o++) {
				fprintf(out, "    held by %u (%s) for %.3f s of it (%.0f%%): ",
					p->threads[x->owners[o].thread].tid,
					tname(p, x->owners[o].thread, true),
					(double)x->owners[o].wait_ns / 1e9,
					x->total_ns ? 100.0 * (double)x->owners[o].wait_ns /
							      (double)x->total_ns :
						      0);
				if (x->owners[o].node)
					text_stack(out, p, x->owners[o].node, 8);
				else
					fputs(no_stack(x, &x->owners[o]), out);
				fputc('\n', out);
			}
		}
	}
	rp_wait_sites_free(&S);
	return ferror(out) ? -EIO : 0;
}
