/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The text formats of tracerd report: top, tree, folded, threads, info,
 * and the death section that top, tree, threads, info and waits open with
 * when they read an emergency dump.  Deterministic output (ties broken by
 * name) so that golden files can hold it. */
#define _GNU_SOURCE
#include "report-internal.h"
#include "../common/sample.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *name_or(const struct rp_profile *p, uint32_t id, const char *dflt)
{
	const char *s = rp_text(p, id);

	return s && *s ? s : dflt;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

struct agg {
	uint32_t key_func, key_file, key_module;
	uint32_t line;
	uint64_t self, total;
};

static uint64_t agg_key(const struct rp_frame *f, enum rp_by by)
{
	switch (by) {
	case RP_BY_LINE:
		return ((uint64_t)f->func << 40) ^ ((uint64_t)f->file << 20) ^ f->line;
	case RP_BY_MODULE:
		return f->module;
	default:
		/* two static functions of one name in two files stay apart */
		return ((uint64_t)f->func << 40) ^ ((uint64_t)f->file << 20) ^ f->module;
	}
}

static int agg_cmp(const void *a, const void *b, void *arg)
{
	const struct agg *x = a, *y = b;
	const struct rp_profile *p = arg;
	int c;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	c = strcmp(name_or(p, x->key_func, ""), name_or(p, y->key_func, ""));
	if (c)
		return c;
	c = strcmp(name_or(p, x->key_module, ""), name_or(p, y->key_module, ""));
	return c ? c : (x->line > y->line) - (x->line < y->line);
}

int rp_top(FILE *out, const struct rp_profile *p, enum rp_by by, unsigned limit)
{
	struct td_map index = { 0 }, names = { 0 };
	uint64_t twice;
	struct agg *a = NULL;
	size_t na = 0, cap = 0;
	uint32_t *seen = NULL;
	size_t capseen = 0;

	/* self: the innermost frame of each sample (pprof -top's flat);
	 * total: every distinct entry on the sample's stack */
	for (size_t i = 1; i < p->nnodes; i++) {
		const struct rp_node *nd = &p->nodes[i];
		size_t nseen = 0;

		if (!nd->count)
			continue;
		for (uint32_t k = (uint32_t)i; k; k = p->nodes[k].parent) {
			const struct rp_frame *f = &p->frames[p->nodes[k].frame];
			uint64_t *slot;
			struct agg *g;
			bool dup = false;

			if (td_map_upsert(&index, agg_key(f, by), &slot) < 0)
				goto nomem;
			if (!*slot) {
				if (td_array_grow(a, cap, na + 1, 256) < 0)
					goto nomem;
				a[na] = (struct agg){ .key_func = by == RP_BY_MODULE ? 0 : f->func,
					.key_file = by == RP_BY_MODULE ? 0 : f->file,
					.key_module = f->module,
					.line = by == RP_BY_LINE ? f->line : 0 };
				*slot = ++na;
			}
			g = &a[*slot - 1];
			if (k == i)
				g->self += nd->count;
			for (size_t s = 0; s < nseen && !dup; s++)
				dup = seen[s] == *slot;
			if (!dup) {
				if (td_array_grow(seen, capseen, nseen + 1, 64) < 0)
					goto nomem;
				seen[nseen++] = (uint32_t)*slot;
				g->total += nd->count;
			}
		}
	}
	rp_sort_r(a, na, sizeof(*a), agg_cmp, (void *)p);
	/* a name two rows of one module share: each is qualified with its
	 * file, as gdb does ('a.c'::churn) */
	if (by == RP_BY_FUNCTION) {
		for (size_t i = 0; i < na; i++) {
			uint64_t *slot;

			if (td_map_upsert(&names, ((uint64_t)a[i].key_func << 24) ^ a[i].key_module,
				    &slot) < 0)
				goto nomem;
			if (!*slot)
				*slot = (uint64_t)a[i].key_file + 1;
			else if (*slot != (uint64_t)a[i].key_file + 1)
				*slot = UINT64_MAX; /* files differ */
		}
	}
	rp_death_header(out, p);
	rp_mode_header(out, p);
	fprintf(out, "%llu samples\n\n", (unsigned long long)p->samples);
	fprintf(out, "%7s %7s %9s %9s  %s\n", "self%", "total%", "self", "total",
		by == RP_BY_MODULE ? "module" : by == RP_BY_LINE ? "line" : "function (module)");
	for (size_t i = 0; i < na && (!limit || i < limit); i++) {
		fprintf(out, "%6.2f%% %6.2f%% %9llu %9llu  ", pct(a[i].self, p->samples),
			pct(a[i].total, p->samples), (unsigned long long)a[i].self,
			(unsigned long long)a[i].total);
		if (by == RP_BY_MODULE)
			fprintf(out, "%s\n", name_or(p, a[i].key_module, "[unknown]"));
		else if (by == RP_BY_LINE)
			fprintf(out, "%s at %s:%u (%s)\n", name_or(p, a[i].key_func, "??"),
				name_or(p, a[i].key_file, "??"), a[i].line,
				name_or(p, a[i].key_module, "?"));
		else if (td_map_get(&names, ((uint64_t)a[i].key_func << 24) ^ a[i].key_module,
				 &twice) && twice == UINT64_MAX)
			fprintf(out, "%s at %s (%s)\n", name_or(p, a[i].key_func, "??"),
				name_or(p, a[i].key_file, "??"), name_or(p, a[i].key_module, "?"));
		else
			fprintf(out, "%s (%s)\n", name_or(p, a[i].key_func, "??"),
				name_or(p, a[i].key_module, "?"));
	}
	free(a);
	free(seen);
	td_map_free(&index);
	td_map_free(&names);
	return 0;
nomem:
	free(a);
	free(seen);
	td_map_free(&index);
	td_map_free(&names);
	return -ENOMEM;
}

static int child_cmp(const void *a, const void *b, void *arg)
{
	const struct rp_profile *p = arg;
	const struct rp_node *x = &p->fnodes[*(const uint32_t *)a],
			     *y = &p->fnodes[*(const uint32_t *)b];

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(name_or(p, p->frames[x->frame].func, ""),
		name_or(p, p->frames[y->frame].func, ""));
}

static void tree_node(FILE *out, const struct rp_profile *p, uint32_t id, unsigned depth,
	uint64_t min)
{
	uint32_t kids[4096];
	unsigned n = 0;

	for (uint32_t c = p->fnodes[id].first_child; c && n < 4096; c = p->fnodes[c].next_sibling)
		if (p->fnodes[c].total >= min)
			kids[n++] = c;
	rp_sort_r(kids, n, sizeof(*kids), child_cmp, (void *)p);
	for (unsigned i = 0; i < n; i++) {
		const struct rp_node *nd = &p->fnodes[kids[i]];
		const struct rp_frame *f = &p->frames[nd->frame];

		fprintf(out, "%6.2f%% %6.2f%%  %*s%s%s\n", pct(nd->total, p->samples),
			pct(nd->count, p->samples), (int)(2 * depth), "",
			name_or(p, f->func, "??"), f->inlined ? " [inlined]" : "");
		if (depth < 512)
			tree_node(out, p, kids[i], depth + 1, min);
	}
}

int rp_tree(FILE *out, const struct rp_profile *p, double min_percent)
{
	uint64_t min = (uint64_t)(min_percent / 100.0 * (double)p->samples);

	rp_death_header(out, p);
	rp_mode_header(out, p);
	fprintf(out, "%llu samples; total%% and self%% per call path, below %.2f%% pruned\n\n",
		(unsigned long long)p->samples, min_percent);
	tree_node(out, p, 0, 0, min ? min : 1);
	return 0;
}

/* A frame name safe for folded stacks: no ';', no newline. */
static void put_sanitized(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' ? ':' : *s == '\n' || *s == '\r' ? ' ' : *s, out);
}

static void put_path(FILE *out, const struct rp_profile *p, uint32_t id)
{
	if (!id)
		return;
	if (p->nodes[id].parent) {
		put_path(out, p, p->nodes[id].parent);
		fputc(';', out);
	}
	put_sanitized(out, name_or(p, p->frames[p->nodes[id].frame].func, "??"));
}

struct fline {
	char *text;
	uint64_t count;
};

static int fline_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

int rp_folded(FILE *out, const struct rp_profile *p, bool per_thread)
{
	struct fline *lines = NULL;
	size_t n = 0, cap = 0, cur = 0; /* cur: the walk of thread_node */

	for (size_t i = 0; per_thread || i < p->nnodes; i++) {
		uint32_t node, thread = 0;
		uint64_t count, key;
		char *buf = NULL;
		size_t len = 0;
		FILE *m;

		if (per_thread) {
			if (!td_map_next(&p->thread_node, &cur, &key, &count))
				break;
			node = RP_TN_NODE(key);
			thread = RP_TN_THREAD(key);
		} else {
			node = (uint32_t)i;
			count = p->nodes[i].count;
		}
		if (!count || !node)
			continue;
		m = open_memstream(&buf, &len);
		if (!m)
			return -ENOMEM;
		if (per_thread) {
			put_sanitized(m, name_or(p, p->threads[thread].name, "?"));
			fputc(';', m);
		}
		put_path(m, p, node);
		fclose(m);
		if (td_array_grow(lines, cap, n + 1, 1024) < 0) {
			free(buf);
			return -ENOMEM;
		}
		lines[n++] = (struct fline){ buf, count };
	}
	rp_sort(lines, n, sizeof(*lines), fline_cmp);
	/* the same path from several threads' nodes may repeat: merge */
	for (size_t i = 0; i < n; i++) {
		uint64_t c = lines[i].count;

		while (i + 1 < n && !strcmp(lines[i].text, lines[i + 1].text)) {
			free(lines[i].text);
			c += lines[++i].count;
		}
		fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)c);
		free(lines[i].text);
	}
	free(lines);
	return 0;
}

/* The death row of pid's thread that took signo and says where the signal
 * came from (a 1.2 row), or NULL. */
static const struct rp_death_stack *death_source(const struct rp_profile *p, uint32_t pid,
	int32_t signo)
{
	for (size_t k = 0; k < p->ndstacks; k++) {
		const struct rp_death_stack *d = &p->dstacks[k];

		if (d->pid == pid && d->src.known && d->signo == signo &&
			(d->flags & TCF_DEATH_FAULTING))
			return d;
	}
	return NULL;
}

static int thread_cmp(const void *a, const void *b)
{
	const struct rp_thread *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The states that wall mode splits time into, as rp_mode_header and the
 * threads view name them (index: TCF_STATE_*). */
static const char *const state_names[] = { "on-cpu", "runnable", "sleeping", "disk",
	"stopped" };

int rp_threads(FILE *out, const struct rp_profile *p)
{
	struct rp_thread *t = malloc((p->nthreads + 1) * sizeof(*t));
	/* wall mode: each thread's time by state, a column for each state
	 * the profile holds (a stopped process shows where it was stopped) */
	bool wall = (p->modes & RP_MODE_WALL) && p->samples;

	if (!t)
		return -ENOMEM;
	if (p->nthreads) /* else p->threads may be NULL: never for memcpy */
		memcpy(t, p->threads, p->nthreads * sizeof(*t));
	rp_death_header(out, p);
	rp_mode_header(out, p);
	rp_sort(t, p->nthreads, sizeof(*t), thread_cmp);
	fprintf(out, "%8s %8s  %-16s %9s %7s ", "tid", "pid", "name", "samples", "share");
	for (unsigned k = 0; wall && k < TD_ARRAY_SIZE(state_names); k++)
		if (p->state_samples[k])
			fprintf(out, " %8s", state_names[k]);
	fprintf(out, " %-20s  %-20s  %s\n", "first", "last", "end");
	for (size_t i = 0; i < p->nthreads; i++) {
		char a[32], b[32], end[96];

		if (!rp_pid_shown(p, t[i].pid))
			continue;
		td_fmt_utc(t[i].first_ns, a, sizeof(a));
		td_fmt_utc(t[i].last_ns, b, sizeof(b));
		/* the recorder stores the wait(2) status */
		if (t[i].exited && WIFSIGNALED(t[i].exit_status))
			snprintf(end, sizeof(end), "killed by signal %d (%s)",
				WTERMSIG(t[i].exit_status), strsignal(WTERMSIG(t[i].exit_status)));
		else if (t[i].exited)
			snprintf(end, sizeof(end), "exited with %d", WEXITSTATUS(t[i].exit_status));
		else
			snprintf(end, sizeof(end), "running at the end");
		fprintf(out, "%8u %8u  %-16s %9llu %6.2f%% ", t[i].tid, t[i].pid,
			name_or(p, t[i].name, "?"), (unsigned long long)t[i].samples,
			pct(t[i].samples, p->samples));
		for (unsigned k = 0; wall && k < TD_ARRAY_SIZE(state_names); k++)
			if (p->state_samples[k])
				fprintf(out, " %7.1f%%", pct(t[i].state_samples[k], t[i].samples));
		fprintf(out, " %-20s  %-20s  %s", a, b, end);
		if (t[i].exited && WIFSIGNALED(t[i].exit_status)) {
			int32_t signo = WTERMSIG(t[i].exit_status);
			const struct rp_death_stack *d = death_source(p, t[i].pid, signo);

			if (d)
				rp_signal_source(out, p, d->pid, signo, d->addr, &d->src,
					RP_SIG_INFO);
		}
		fputc('\n', out);
	}
	free(t);
	return 0;
}

static void print_stack(FILE *out, const struct rp_profile *p, uint32_t node)
{
	unsigned i = 0;

	for (uint32_t k = node; k; k = p->nodes[k].parent, i++) {
		const struct rp_frame *f = &p->frames[p->nodes[k].frame];

		fprintf(out, "    #%-3u %s%s", i, name_or(p, f->func, "??"),
			f->inlined ? " [inlined]" : "");
		if (rp_text(p, f->file))
			fprintf(out, " at %s:%u", rp_text(p, f->file), f->line);
		if (rp_text(p, f->module))
			fprintf(out, " in %s", rp_text(p, f->module));
		fputc('\n', out);
	}
}

/* UTC to the millisecond: a death is a moment. */
static void fmt_utc_ms(uint64_t real_ns, char *buf, size_t len)
{
	size_t n;

	td_fmt_utc(real_ns, buf, len);
	n = strlen(buf);
	if (real_ns && n > 1 && buf[n - 1] == 'Z')
		snprintf(buf + n - 1, len - (n - 1), ".%03uZ",
			(unsigned)(real_ns % 1000000000u / 1000000u));
}

/* The process's name: its main thread's, else any of its threads'. */
static const char *comm_of(const struct rp_profile *p, uint32_t pid)
{
	const char *any = NULL;

	for (size_t i = 0; i < p->ndstacks; i++) {
		const struct rp_death_stack *d = &p->dstacks[i];

		if (d->pid == pid && rp_text(p, d->name) && *rp_text(p, d->name)) {
			if (d->tid == pid)
				return rp_text(p, d->name);
			any = any ? any : rp_text(p, d->name);
		}
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct rp_thread *t = &p->threads[i];

		if (t->pid == pid && rp_text(p, t->name) && *rp_text(p, t->name)) {
			if (t->tid == pid)
				return rp_text(p, t->name);
			any = any ? any : rp_text(p, t->name);
		}
	}
	return any ? any : "?";
}

static bool oom_killed(const struct rp_profile *p, uint32_t pid)
{
	for (size_t i = 0; i < p->nooms; i++)
		if (p->ooms[i].pid == pid)
			return true;
	return false;
}

/* The thread the signal was for: a crash's when the kernel raised it or
 * the process sent it itself (abort), or when an older chunk cannot say. */
static const char *took_it(const struct rp_death_stack *d)
{
	return !d->src.known || d->src.code > 0 || d->src.pid == d->pid ?
		       ", the crashing thread" :
		       ", the thread the signal was for";
}

static void death_thread(FILE *out, const struct rp_profile *p, const struct rp_death_stack *d,
	bool crashing)
{
	fprintf(out, "  thread %u (%s)%s", d->tid, name_or(p, d->name, "?"),
		crashing ? took_it(d) : "");
	if (!d->node) {
		fputs(": no stack taken\n", out);
		return;
	}
	fputs(":\n", out);
	print_stack(out, p, d->node);
}

/* The death of pid: its cause, time and stacks. */
static void death_of(FILE *out, const struct rp_profile *p, uint32_t pid)
{
	const struct rp_death_stack *crash = NULL, *fault = NULL, *why;
	const struct rp_exit *ex = NULL;
	struct td_map seen = { 0 };
	int32_t signo = 0, ds_signo = 0;
	uint64_t when = 0, *slot;
	size_t nds = 0;
	uint32_t crashing = 0;
	char t[48];

	for (size_t i = 0; i < p->ndstacks; i++) {
		const struct rp_death_stack *d = &p->dstacks[i];

		if (d->pid != pid)
			continue;
		if (d->flags & RP_DEATH_FROM_CRASH) {
			crash = crash ? crash : d;
		} else {
			nds++;
			if (!fault && (d->flags & TCF_DEATH_FAULTING))
				fault = d;
			ds_signo = ds_signo ? ds_signo : d->signo;
		}
		if (!when || d->real_ns < when)
			when = d->real_ns;
	}
	for (size_t i = 0; i < p->nooms; i++)
		if (p->ooms[i].pid == pid && (!when || p->ooms[i].real_ns < when))
			when = p->ooms[i].real_ns;
	for (size_t i = 0; i < p->nexits; i++)
		if (p->exits[i].pid == pid)
			ex = &p->exits[i];
	/* what the process was reaped with, else what was seen killing it */
	signo = ex && ex->signo		 ? ex->signo :
		ex			 ? 0 :
		crash && crash->signo	 ? crash->signo :
		ds_signo		 ? ds_signo :
		oom_killed(p, pid)	 ? SIGKILL :
					   0;
	if (!when && ex)
		when = ex->real_ns;
	fprintf(out, "pid %u (%s) ", pid, comm_of(p, pid));
	if (signo) {
		fprintf(out, "died: killed by signal %d (%s)", signo, strsignal(signo));
		why = fault && (fault->src.known || !crash) ? fault : crash;
		if (why && why->signo == signo)
			rp_signal_source(out, p, pid, signo, why->addr, &why->src, RP_SIG_HEADER);
	} else if (ex) {
		fprintf(out, "exited with status %d", ex->status);
	} else {
		fputs("died; what killed it was not recorded", out);
	}
	if (oom_killed(p, pid))
		fputs(" \u2014 by the OOM killer", out);
	fputc('\n', out);
	if (when) {
		fmt_utc_ms(when, t, sizeof(t));
		fprintf(out, "  time: %s\n", t);
	}
	crashing = fault ? fault->tid : crash ? crash->tid : 0;
	if (!nds) {
		if (crash) {
			death_thread(out, p, crash, true);
			fputs("  (the other threads' stacks at its death were not recorded)\n", out);
		} else {
			fputs("  (no stacks were recorded at its death)\n", out);
		}
		return;
	}
	/* the crashing thread first, then the others as recorded; a thread
	 * read twice (a dump given with its repository) once */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < p->ndstacks; i++) {
			const struct rp_death_stack *d = &p->dstacks[i];

			if (d->pid != pid || (d->flags & RP_DEATH_FROM_CRASH) ||
				(pass == 0) != (crashing && d->tid == crashing))
				continue;
			if (td_map_upsert(&seen, (uint64_t)d->tid + 1, &slot) < 0)
				break; /* out of memory: a repeat may show */
			if ((*slot)++)
				continue;
			death_thread(out, p, d, crashing && d->tid == crashing);
		}
	}
	td_map_free(&seen);
}

void rp_death_header(FILE *out, const struct rp_profile *p)
{
	if (!p->ndead)
		return;
	for (unsigned i = 0; i < p->ndead; i++)
		death_of(out, p, p->dead_pids[i]);
	if (p->restricted) {
		fprintf(out, "report restricted to pid%s", p->nshown > 1 ? "s" : "");
		for (unsigned i = 0; i < p->nshown; i++)
			fprintf(out, "%s %u", i ? "," : "", p->shown_pids[i]);
		fprintf(out, ", the process%s that died (--pid to choose)\n",
			p->nshown > 1 ? "es" : "");
	}
	fputc('\n', out);
}

/* A ptrace capture that did not catch every thread running: how much of
 * the CPU time schedstat counted the recording's samples carry (the
 * LOST records are not per thread: of every sample read, not only those
 * the filters kept). */
static void coverage_line(FILE *out, const struct rp_profile *p)
{
	uint64_t missed = p->lost[TCF_LOST_CPU_MISSED];

	if (!missed)
		return;
	fprintf(out,
		"coverage: %.1f%% of the CPU time used was sampled (%llu period%s missed: "
		"the ptrace capture did not catch those threads running)\n",
		pct(p->samples_all, p->samples_all + missed), (unsigned long long)missed,
		td_plural(missed));
}

/* Samples whose stack the recorder cut at the most the kernel copies per
 * perf sample (its placeholder frame, the stack's outermost: writer-stacks.c
 * fit_window). */
static uint64_t cut_by_kernel(const struct rp_profile *p)
{
	static const char name[] = "[stack cut: " TD_CUT_KERNEL_LIMIT "]";
	uint64_t n = 0;

	for (size_t i = 1; i < p->nnodes; i++) {
		size_t k = i;

		if (!p->nodes[i].count)
			continue;
		while (p->nodes[k].parent)
			k = p->nodes[k].parent;
		if (!strcmp(name_or(p, p->frames[p->nodes[k].frame].func, ""), name))
			n += p->nodes[i].count;
	}
	return n;
}

void rp_mode_header(FILE *out, const struct rp_profile *p)
{
	bool first = true;
	uint64_t cut = cut_by_kernel(p);

	fprintf(out, "mode: %s (%s)\n", rp_mode_name(p), rp_mode_meaning(p));
	coverage_line(out, p);
	if (cut)
		fprintf(out,
			"stacks: %llu samples (%.1f%%) deeper than the kernel copies (64 KiB per "
			"perf sample): their outer frames are missing\n",
			(unsigned long long)cut, pct(cut, p->samples));
	if (!(p->modes & RP_MODE_WALL) || !p->samples)
		return;
	fputs("time:", out);
	for (unsigned i = 0; i < TD_ARRAY_SIZE(state_names); i++) {
		if (!p->state_samples[i])
			continue;
		fprintf(out, "%s %.1f%% %s", first ? "" : ",", pct(p->state_samples[i], p->samples),
			state_names[i]);
		first = false;
	}
	fputs(" (--state to keep one)\n", out);
}

int rp_info(FILE *out, const struct rp_profile *p, const struct rp_load_report *rep)
{
	static const char *const lost[] = { "ring full", "unwind failed", "throttled",
		"did not stop", "CPU periods missed" };
	char a[32], b[32];

	rp_death_header(out, p);
	td_fmt_utc(p->first_ns, a, sizeof(a));
	td_fmt_utc(p->last_ns, b, sizeof(b));
	fprintf(out, "files:     %u\n", rep->files);
	fprintf(out, "chunks:    %u (%u damaged or unfinished, %u needing a newer reader)\n",
		rep->chunks, rep->chunks_damaged, rep->chunks_skipped);
	fprintf(out, "time:      %s .. %s (%.1f s)\n", a, b,
		p->last_ns > p->first_ns ? (p->last_ns - p->first_ns) / 1e9 : 0.0);
	if (p->meta_host)
		fprintf(out, "host:      %s\n", rp_text(p, p->meta_host));
	for (unsigned i = 0; i < p->ncmdlines; i++)
		fprintf(out, "target:    pid %u: %s\n", p->cmdline_pids[i], rp_text(p, p->cmdlines[i]));
	fprintf(out, "mode:      %s (%s)\n", rp_mode_name(p), rp_mode_meaning(p));
	if (p->meta_hz)
		fprintf(out, "sampling:  %s Hz per thread%s\n", rp_text(p, p->meta_hz),
			p->modes == RP_MODE_WALL ? ", of wall-clock time" :
			p->modes == RP_MODE_CPU	 ? ", of CPU time" :
						   "");
	if (p->meta_capture)
		fprintf(out, "capture:   %s\n", rp_text(p, p->meta_capture));
	fprintf(out, "samples:   %llu (of %llu read)\n", (unsigned long long)p->samples,
		(unsigned long long)rep->samples_read);
	fprintf(out, "threads:   %zu\n", p->nthreads);
	fprintf(out, "lost:     ");
	for (int i = 0; i < 4; i++)
		fprintf(out, " %llu %s%s", (unsigned long long)p->lost[i], lost[i], i < 3 ? "," : "");
	/* only where it happened: the golden files' line stays */
	if (p->lost[4])
		fprintf(out, ", %llu %s", (unsigned long long)p->lost[4], lost[4]);
	fputc('\n', out);
	coverage_line(out, p);
	if (p->execs)
		fprintf(out, "exec:      %llu\n", (unsigned long long)p->execs);
	for (size_t i = 0; i < p->nexits; i++) {
		if (!rp_pid_shown(p, p->exits[i].pid))
			continue;
		td_fmt_utc(p->exits[i].real_ns, a, sizeof(a));
		if (p->exits[i].signo) {
			const struct rp_death_stack *d =
				death_source(p, p->exits[i].pid, p->exits[i].signo);

			fprintf(out, "exit:      pid %u killed by signal %d (%s)", p->exits[i].pid,
				p->exits[i].signo, strsignal(p->exits[i].signo));
			/* where from, if a 1.2 row of the thread that took it says */
			if (d)
				rp_signal_source(out, p, d->pid, d->signo, d->addr, &d->src,
					RP_SIG_INFO);
			fprintf(out, "%s at %s\n",
				oom_killed(p, p->exits[i].pid) ? " by the OOM killer" : "", a);
		} else
			fprintf(out, "exit:      pid %u exited with status %d at %s\n", p->exits[i].pid,
				p->exits[i].status, a);
	}
	{
		size_t n = 0;

		for (size_t i = 0; i < p->ncrashes; i++)
			n += rp_pid_shown(p, p->crashes[i].pid);
		fprintf(out, "crashes:   %zu\n", n);
	}
	for (size_t i = 0; i < p->ncrashes; i++) {
		const struct rp_crash *c = &p->crashes[i];

		if (!rp_pid_shown(p, c->pid))
			continue;
		td_fmt_utc(c->real_ns, a, sizeof(a));
		fprintf(out, "  pid %u thread %u (%s): signal %d (%s)", c->pid, c->tid,
			name_or(p, c->thread_name, "?"), c->signo, strsignal(c->signo));
		rp_signal_source(out, p, c->pid, c->signo, c->addr, &c->src, RP_SIG_INFO);
		fprintf(out, ", at %s\n", a);
		print_stack(out, p, c->node);
	}
	return 0;
}
