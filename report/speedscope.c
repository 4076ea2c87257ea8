/* speedscope output: JSON per speedscope's file-format schema
 * (https://www.speedscope.app/file-format-schema.json), one "sampled"
 * profile per thread, frames shared with their file and line.  Samples are
 * aggregated per stack (weights = count x sampling period, in
 * nanoseconds), so speedscope's left-heavy and sandwich views are exact
 * and its time-order view shows stacks, not the original sequence. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void path(FILE *out, const struct rp_profile *p, const int64_t *idx, uint32_t node,
	bool *first)
{
	if (!node)
		return;
	path(out, p, idx, p->nodes[node].parent, first);
	fprintf(out, "%s%lld", *first ? "" : ",", (long long)idx[p->nodes[node].frame]);
	*first = false;
}

int rp_speedscope(FILE *out, const struct rp_profile *p)
{
	int64_t *idx = malloc((p->nframes + 1) * sizeof(*idx)), next = 0;
	double hz = p->meta_hz ? atof(rp_str(p, p->meta_hz)) : 99;
	uint64_t period = (uint64_t)(1e9 / (hz > 0 ? hz : 99));
	bool first_profile = true;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i <= p->nframes; i++)
		idx[i] = -1;
	fputs("{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
	      " \"exporter\": \"tracerd 0.1.0\", \"name\": \"tracerd recording\",\n"
	      " \"activeProfileIndex\": 0,\n \"shared\": {\"frames\": [",
		out);
	/* frames used by some sample, in first-use order */
	for (size_t k = 0; k < p->thread_node.cap; k++) {
		if (!p->thread_node.t[k].key)
			continue;
		for (uint32_t n = RP_TN_NODE(p->thread_node.t[k].key); n; n = p->nodes[n].parent) {
			const struct rp_frame *f = &p->frames[p->nodes[n].frame];
			const char *file = rp_str(p, f->file);

			if (idx[p->nodes[n].frame] >= 0)
				continue;
			idx[p->nodes[n].frame] = next;
			fprintf(out, "%s\n  {\"name\": ", next ? "," : "");
			td_json_string(out, rp_str(p, f->func) ? rp_str(p, f->func) : "??");
			if (file && *file) {
				fputs(", \"file\": ", out);
				td_json_string(out, file);
				if (f->line)
					fprintf(out, ", \"line\": %u", f->line);
			}
			fputc('}', out);
			next++;
		}
	}
	fputs("\n ]},\n \"profiles\": [", out);
	for (size_t t = 0; t < p->nthreads; t++) {
		char name[96];
		uint64_t total = 0;
		bool first = true;

		if (!p->threads[t].samples)
			continue;
		snprintf(name, sizeof(name), "%s (tid %u)",
			rp_str(p, p->threads[t].name) ? rp_str(p, p->threads[t].name) : "?",
			p->threads[t].tid);
		fprintf(out, "%s\n  {\"type\": \"sampled\", \"name\": ", first_profile ? "" : ",");
		first_profile = false;
		td_json_string(out, name);
		fputs(", \"unit\": \"nanoseconds\", \"startValue\": 0,\n   \"samples\": [", out);
		for (size_t k = 0; k < p->thread_node.cap; k++) {
			uint64_t key = p->thread_node.t[k].key;
			bool f1 = true;

			if (!key || RP_TN_THREAD(key) != t)
				continue;
			fprintf(out, "%s[", first ? "" : ",");
			path(out, p, idx, RP_TN_NODE(key), &f1);
			fputc(']', out);
			first = false;
		}
		fputs("],\n   \"weights\": [", out);
		first = true;
		for (size_t k = 0; k < p->thread_node.cap; k++) {
			uint64_t key = p->thread_node.t[k].key, w;

			if (!key || RP_TN_THREAD(key) != t)
				continue;
			w = p->thread_node.t[k].val * period;
			total += w;
			fprintf(out, "%s%llu", first ? "" : ",", (unsigned long long)w);
			first = false;
		}
		fprintf(out, "],\n   \"endValue\": %llu}", (unsigned long long)total);
	}
	fputs("\n ]\n}\n", out);
	free(idx);
	return ferror(out) ? -EIO : 0;
}
