/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A view of a loaded profile holding one process's samples and wait
 * episodes, so that a caller that wants a profile per process (the
 * service's exporter, each interval) loads the chunks once, not once per
 * process.  The view shares every table of the profile it was made from
 * but the samples' map and the episodes, which it owns: the profile must
 * outlive it, and it is freed with rp_view_free, never rp_free.  The
 * formats that write a sample per (thread, state, stack) and the episodes,
 * pprof and OTLP, take it as they take a profile loaded with --pid, but
 * for the tables shared (strings, frames, modules, the time span), of
 * which they write only what a sample reaches; the others (top, tree,
 * folded...) read the counts in the stack tree, which stay the whole
 * profile's: not for them. */
#define _GNU_SOURCE
#include "report-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rp_view_pid(const struct rp_profile *p, uint32_t pid, struct rp_profile **ret)
{
	struct rp_profile *v = malloc(sizeof(*v));
	uint64_t key, count;
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	memcpy(v, p, sizeof(*v));
	memset(&v->thread_node, 0, sizeof(v->thread_node));
	v->waits = NULL;
	v->nwaits = v->capwaits = 0;
	v->samples = 0;
	memset(v->state_samples, 0, sizeof(v->state_samples));
	v->shown_pids[0] = pid;
	v->nshown = 1;
	for (size_t cur = 0; td_map_next(&p->thread_node, &cur, &key, &count);) {
		if (p->threads[RP_TN_THREAD(key)].pid != pid)
			continue;
		if (td_map_set(&v->thread_node, key, count) < 0)
			goto out_nomem;
		v->samples += count;
		v->state_samples[RP_TN_STATE(key)] += count;
	}
	for (size_t i = 0; i < p->nwaits; i++)
		n += p->threads[p->waits[i].thread].pid == pid;
	if (n) {
		v->waits = malloc(n * sizeof(*v->waits));
		if (!v->waits)
			goto out_nomem;
		for (size_t i = 0; i < p->nwaits; i++)
			if (p->threads[p->waits[i].thread].pid == pid)
				v->waits[v->nwaits++] = p->waits[i];
		v->capwaits = n;
	}
	*ret = v;
	return 0;

out_nomem:
	rp_view_free(v);
	return -ENOMEM;
}

void rp_view_free(struct rp_profile *v)
{
	if (!v)
		return;
	td_map_free(&v->thread_node);
	free(v->waits);
	free(v);
}
