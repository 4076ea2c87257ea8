/* SPDX-License-Identifier: GPL-2.0-or-later */
/* speedscope output: JSON per speedscope's file-format schema
 * (https://www.speedscope.app/file-format-schema.json), one "sampled"
 * profile per thread.  Frames are functions (name and module), shared, with
 * the file they were seen in and their start line when DWARF gave it, as
 * the flame graph and the top table count them.  A thread's samples are in
 * time order (the load kept them: rp_filter.time_order), consecutive
 * samples with the same stack merged into one entry whose weight is the
 * run's length x the sampling period, in nanoseconds. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ss {
	FILE *out;
	const struct rp_profile *p;
	struct td_map frame_of; /* (name, module) -> frame index + 1 */
	int64_t *idx;		/* function-level node -> frame index, -1: none yet */
	int64_t next;
	bool oom;
};

/* The frame index of a function-level node, written on first use. */
static int64_t frame_of(struct ss *s, uint32_t fnode)
{
	const struct rp_profile *p = s->p;
	const struct rp_frame *f = &p->frames[p->fnodes[fnode].frame];
	const char *file = rp_str(p, p->fnode_file[fnode]);
	uint64_t *slot;

	if (s->idx[fnode] >= 0)
		return s->idx[fnode];
	if (td_map_upsert(&s->frame_of, (uint64_t)f->name << 32 | f->module, &slot) < 0) {
		s->oom = true;
		return 0;
	}
	if (!*slot) {
		*slot = (uint64_t)++s->next;
		fprintf(s->out, "%s\n  {\"name\": ", *slot > 1 ? "," : "");
		td_json_string(s->out, rp_str(p, f->name) ? rp_str(p, f->name) : "??", 0);
		if (file && *file) {
			fputs(", \"file\": ", s->out);
			td_json_string(s->out, file, 0);
			if (f->start_line)
				fprintf(s->out, ", \"line\": %u", f->start_line);
		}
		fputc('}', s->out);
	}
	s->idx[fnode] = (int64_t)*slot - 1;
	return s->idx[fnode];
}

static void path(struct ss *s, uint32_t fnode, bool *first)
{
	if (!fnode)
		return;
	path(s, s->p->fnodes[fnode].parent, first);
	fprintf(s->out, "%s%lld", *first ? "" : ",", (long long)s->idx[fnode]);
	*first = false;
}

/* The length of the run of samples with the same stack starting at k. */
static size_t run_at(const struct rp_profile *p, size_t k, size_t end)
{
	size_t run = 1;

	while (k + run < end && p->fnode_of[p->seq[k + run].node] == p->fnode_of[p->seq[k].node])
		run++;
	return run;
}

int rp_speedscope(FILE *out, const struct rp_profile *p)
{
	uint64_t period = rp_period_ns(p);
	struct ss s = { .out = out, .p = p };
	bool first_profile = true;

	if (p->samples && !p->nseq)
		return -EINVAL; /* loaded without time_order */
	s.idx = malloc((p->nfnodes + 1) * sizeof(*s.idx));
	if (!s.idx)
		return -ENOMEM;
	for (size_t i = 0; i <= p->nfnodes; i++)
		s.idx[i] = -1;
	/* the name says the mode: speedscope shows it in its title bar */
	fprintf(out,
		"{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
		" \"exporter\": \"tracerd " TD_VERSION "\", \"name\": \"tracerd %s profile\",\n"
		" \"activeProfileIndex\": 0,\n \"shared\": {\"frames\": [",
		rp_mode_name(p));
	/* frames in first-use order */
	for (size_t i = 0; i < p->nseq; i++)
		for (uint32_t n = p->fnode_of[p->seq[i].node]; n && s.idx[n] < 0;
			n = p->fnodes[n].parent)
			frame_of(&s, n);
	fputs("\n ]},\n \"profiles\": [", out);
	for (size_t i = 0, j; i < p->nseq; i = j) {
		const struct rp_thread *t = &p->threads[p->seq[i].thread];
		uint64_t total = 0;
		char name[96];

		for (j = i; j < p->nseq && p->seq[j].thread == p->seq[i].thread; j++)
			;
		snprintf(name, sizeof(name), "%s (tid %u)",
			rp_str(p, t->name) ? rp_str(p, t->name) : "?", t->tid);
		fprintf(out, "%s\n  {\"type\": \"sampled\", \"name\": ", first_profile ? "" : ",");
		first_profile = false;
		td_json_string(out, name, 0);
		fputs(", \"unit\": \"nanoseconds\", \"startValue\": 0,\n   \"samples\": [", out);
		for (size_t k = i; k < j; k += run_at(p, k, j)) {
			bool f1 = true;

			fprintf(out, "%s[", k > i ? "," : "");
			path(&s, p->fnode_of[p->seq[k].node], &f1);
			fputc(']', out);
		}
		fputs("],\n   \"weights\": [", out);
		for (size_t k = i, run; k < j; k += run) {
			run = run_at(p, k, j);
			total += run * period;
			fprintf(out, "%s%llu", k > i ? "," : "", (unsigned long long)(run * period));
		}
		fprintf(out, "],\n   \"endValue\": %llu}", (unsigned long long)total);
	}
	fputs("\n ]\n}\n", out);
	free(s.idx);
	td_map_free(&s.frame_of);
	if (s.oom)
		return -ENOMEM;
	return ferror(out) ? -EIO : 0;
}
