/* tracerd report --format waits: the wait episodes of wall recordings by
 * site (what was waited for, and the stack where the wait began), with
 * total time, episodes, p50/p99/max durations and the owners that held
 * the object longest, with their stacks; as text or JSON. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "../common/td.h"

struct site_owner {
	uint32_t thread, node;
	uint64_t wait_ns;
};

struct site {
	uint32_t kind, node, what;
	uint64_t object, total_ns;
	uint64_t *durs; /* each episode's, sorted before printing */
	size_t n, cap;
	uint32_t threads[8];
	unsigned nthreads, more_threads;
	struct site_owner *owners;
	size_t nowners;
};

struct sites {
	struct site *s;
	size_t n, cap;
	struct td_map index;
};

static void sites_free(struct sites *S)
{
	for (size_t i = 0; i < S->n; i++) {
		free(S->s[i].durs);
		free(S->s[i].owners);
	}
	free(S->s);
	td_map_free(&S->index);
}

static int add_owner(struct site *x, const struct rp_wait_owner *o)
{
	size_t i;

	for (i = 0; i < x->nowners && x->owners[i].thread != o->thread; i++)
		;
	if (i == x->nowners) {
		struct site_owner *n = realloc(x->owners, (x->nowners + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		x->owners = n;
		x->owners[x->nowners++] = (struct site_owner){ o->thread, o->node, 0 };
	}
	x->owners[i].wait_ns += o->wait_ns;
	if (!x->owners[i].node)
		x->owners[i].node = o->node;
	return 0;
}

/* Group the episodes by (kind, object, stack). */
static int build(const struct rp_profile *p, struct sites *S)
{
	for (size_t i = 0; i < p->nwaits; i++) {
		const struct rp_wait *w = &p->waits[i];
		uint64_t key = rp_mix64(w->kind ^ rp_mix64(w->object ^ rp_mix64(w->node))), v;
		size_t cur = 0, k = SIZE_MAX;
		struct site *x;

		while (k == SIZE_MAX && td_map_find_next(&S->index, key, &cur, &v)) {
			x = &S->s[v];
			if (x->kind == w->kind && x->object == w->object && x->node == w->node)
				k = v;
		}
		if (k == SIZE_MAX) {
			if (S->n == S->cap) {
				size_t c = S->cap ? 2 * S->cap : 64;
				struct site *n = realloc(S->s, c * sizeof(*n));

				if (!n)
					return -ENOMEM;
				S->s = n;
				S->cap = c;
			}
			S->s[S->n] = (struct site){ .kind = w->kind, .node = w->node,
				.what = w->what, .object = w->object };
			if (td_map_add(&S->index, key, S->n) < 0)
				return -ENOMEM;
			k = S->n++;
		}
		x = &S->s[k];
		if (x->n == x->cap) {
			size_t c = x->cap ? 2 * x->cap : 16;
			uint64_t *n = realloc(x->durs, c * sizeof(*n));

			if (!n)
				return -ENOMEM;
			x->durs = n;
			x->cap = c;
		}
		x->durs[x->n++] = w->wait_ns;
		x->total_ns += w->wait_ns;
		{
			unsigned t;

			for (t = 0; t < x->nthreads && x->threads[t] != w->thread; t++)
				;
			if (t == x->nthreads) {
				if (t < TD_ARRAY_SIZE(x->threads))
					x->threads[x->nthreads++] = w->thread;
				else
					x->more_threads = 1;
			}
		}
		for (uint32_t o = w->owner0; o; o = p->wowners[o - 1].next)
			if (add_owner(x, &p->wowners[o - 1]) < 0)
				return -ENOMEM;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_site(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	return x->total_ns > y->total_ns ? -1 : x->total_ns < y->total_ns;
}

static int cmp_owner(const void *a, const void *b)
{
	const struct site_owner *x = a, *y = b;

	return x->wait_ns > y->wait_ns ? -1 : x->wait_ns < y->wait_ns;
}

/* The duration below which q of the episodes fall (nearest rank). */
static uint64_t quantile(const struct site *x, double q)
{
	size_t r = (size_t)(q * (double)x->n + 0.999999);

	return x->n ? x->durs[r ? (r > x->n ? x->n : r) - 1 : 0] : 0;
}

static const char *func_of(const struct rp_profile *p, uint32_t node)
{
	const char *s = rp_str(p, p->frames[p->nodes[node].frame].func);

	return s ? s : "??";
}

static void text_stack(FILE *out, const struct rp_profile *p, uint32_t node, unsigned max)
{
	unsigned i = 0;

	if (!node) {
		fputs("[no stack]", out);
		return;
	}
	for (uint32_t k = node; k; k = p->nodes[k].parent, i++) {
		if (i == max) {
			fputs(" <- ...", out);
			break;
		}
		fprintf(out, "%s%s", i ? " <- " : "", func_of(p, k));
	}
}

static void json_stack(FILE *out, const struct rp_profile *p, uint32_t node)
{
	bool first = true;

	fputc('[', out);
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

static const char *tname(const struct rp_profile *p, uint32_t t)
{
	const char *s = rp_str(p, p->threads[t].name);

	return s ? s : "?";
}

int rp_waits(FILE *out, const struct rp_profile *p, unsigned limit, bool json)
{
	struct sites S = { 0 };
	uint64_t total = 0, episodes = 0, tick = rp_period_ns(p);
	size_t nshow;
	int r = build(p, &S);

	if (r < 0) {
		sites_free(&S);
		return r;
	}
	for (size_t i = 0; i < S.n; i++) {
		rp_sort(S.s[i].durs, S.s[i].n, sizeof(uint64_t), cmp_u64);
		rp_sort(S.s[i].owners, S.s[i].nowners, sizeof(*S.s[i].owners), cmp_owner);
		total += S.s[i].total_ns;
		episodes += S.s[i].n;
	}
	rp_sort(S.s, S.n, sizeof(*S.s), cmp_site);
	nshow = limit && limit < S.n ? limit : S.n;
	if (json) {
		fprintf(out, "{\"mode\":\"%s\",\"tick_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64
			     ",\"episodes\":%" PRIu64 ",\"waits\":[",
			rp_mode_name(p), tick, total, episodes);
		for (size_t i = 0; i < nshow; i++) {
			const struct site *x = &S.s[i];
			char obj[64];

			rp_wait_object_text(obj, sizeof(obj), x->kind, x->object);
			fprintf(out, "%s\n{\"kind\":\"%s\",\"object\":", i ? "," : "", tcf_wait_kind_name(x->kind));
			td_json_string(out, obj, 0);
			fputs(",\"what\":", out);
			td_json_string(out, rp_str(p, x->what), 0);
			fprintf(out,
				",\"wait_ns\":%" PRIu64 ",\"count\":%zu,\"p50_ns\":%" PRIu64
				",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 ",\"stack\":",
				x->total_ns, x->n, quantile(x, 0.5), quantile(x, 0.99),
				x->n ? x->durs[x->n - 1] : 0);
			json_stack(out, p, x->node);
			fputs(",\"threads\":[", out);
			for (unsigned t = 0; t < x->nthreads; t++) {
				fprintf(out, "%s{\"tid\":%u,\"name\":", t ? "," : "",
					p->threads[x->threads[t]].tid);
				td_json_string(out, tname(p, x->threads[t]), 0);
				fputc('}', out);
			}
			fputs("],\"owners\":[", out);
			for (size_t o = 0; o < x->nowners; o++) {
				fprintf(out, "%s{\"thread\":", o ? "," : "");
				td_json_string(out, tname(p, x->owners[o].thread), 0);
				fprintf(out, ",\"tid\":%u,\"wait_ns\":%" PRIu64 ",\"stack\":",
					p->threads[x->owners[o].thread].tid, x->owners[o].wait_ns);
				json_stack(out, p, x->owners[o].node);
				fputc('}', out);
			}
			fputs("]}", out);
		}
		fputs("\n]}\n", out);
	} else {
		rp_mode_header(out, p);
		if (!(p->modes & RP_MODE_WALL)) {
			fputs("no wait episodes: waits are recorded in wall mode (tracerd --mode wall)\n",
				out);
		} else {
			fprintf(out,
				"%" PRIu64 " wait episodes, %.2f s of waiting, at tick resolution "
				"(%.1f ms: a duration is the ticks that saw the wait)\n",
				episodes, (double)total / 1e9, (double)tick / 1e6);
		}
		for (size_t i = 0; i < nshow; i++) {
			const struct site *x = &S.s[i];
			char obj[64];

			rp_wait_object_text(obj, sizeof(obj), x->kind, x->object);
			fprintf(out,
				"\n%8.3f s %6zu episode%s  p50 %.1f ms  p99 %.1f ms  max %.1f ms  %s%s%s",
				(double)x->total_ns / 1e9, x->n, x->n == 1 ? "" : "s",
				(double)quantile(x, 0.5) / 1e6,
				(double)quantile(x, 0.99) / 1e6,
				(double)(x->n ? x->durs[x->n - 1] : 0) / 1e6, tcf_wait_kind_name(x->kind),
				obj[0] ? " " : "", obj);
			if (rp_str(p, x->what))
				fprintf(out, " (%s)", rp_str(p, x->what));
			fputs("\n    waiting:", out);
			for (unsigned t = 0; t < x->nthreads; t++)
				fprintf(out, " %u (%s)", p->threads[x->threads[t]].tid,
					tname(p, x->threads[t]));
			if (x->more_threads)
				fputs(" and more", out);
			fputs("\n    in: ", out);
			text_stack(out, p, x->node, 8);
			fputc('\n', out);
			for (size_t o = 0; o < x->nowners && o < 3; o++) {
				fprintf(out, "    held by %u (%s) for %.3f s of it (%.0f%%): ",
					p->threads[x->owners[o].thread].tid,
					tname(p, x->owners[o].thread),
					(double)x->owners[o].wait_ns / 1e9,
					x->total_ns ? 100.0 * (double)x->owners[o].wait_ns /
							      (double)x->total_ns :
						      0);
				text_stack(out, p, x->owners[o].node, 8);
				fputc('\n', out);
			}
		}
	}
	sites_free(&S);
	return ferror(out) ? -EIO : 0;
}
