/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd dump as a library: the stacks of every thread of a process, once.
 *
 * Order of work, chosen so that each thread is stopped only for the copy:
 *   1. seize every thread (no stop yet) and read names and states;
 *   2. open the process's modules (libdwfl session, every ELF loaded);
 *   3. interrupt all threads together; as each stop arrives copy registers
 *      and the stack window, then detach it at once;
 *   4. with every thread running again, unwind and symbolize the copies
 *      into a flat result (threads, frames, one string table).
 * If the process dies after step 3 the captured stacks are still in the
 * result (process_exited says so).  A process whose main thread has exited
 * (a zombie leader, its workers alive) is dumped like any other: the
 * leader is listed first, as exited, without a stack.
 *
 * A thread blocked in a system call also gets its kernel stack (root:
 * /proc/TID/stack), read in step 1 while it sleeps: a stop would show
 * the kernel's ptrace stop instead of its wait.  It is kept only if the
 * stop in step 3 finds the thread in the same call at the same place,
 * and put above the user frames, innermost first, as perf shows them.
 *
 * Nothing here prints or exits: cli/dump.c turns the result and the
 * failures into words and an exit status. */
#define _GNU_SOURCE
#include "dump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/kstack.h"
#include "../common/td.h"
#include "../ptrace/ptrace.h"

#define DUMP_DEFAULT_WINDOW (64u * 1024)

/* One thread while the dump runs: its capture slot and what /proc said. */
struct dthread {
	pid_t tid;
	struct td_task_info info;
	struct td_sample *sample; /* into dump.slots */
	bool captured;
	/* its kernel stack read in step 1 (kstack_read): frames into ktext,
	 * and the system call it was in then (nr, sp, pc) */
	char *ktext;
	struct td_kstack_frame *kf;
	unsigned nk;
	struct pt_syscall ksc;
};

/* owns: threads, slots, the growing result */
struct dump {
	pid_t pid;
	uint32_t window;
	struct dthread *threads;
	unsigned nthreads;
	unsigned char *slots;
	bool process_exited;
	size_t frames_cap, strings_cap;
	struct dump_result *res;
};

/* ---- round callbacks: the thread is stopped in slot_get */

static struct td_sample *dump_slot_get(void *arg, pid_t pid, pid_t tid, uint32_t *ret_window)
{
	struct dump *d = arg;

	(void)pid;
	for (unsigned i = 0; i < d->nthreads; i++)
		if (d->threads[i].tid == tid && !d->threads[i].captured) {
			*ret_window = d->window;
			return d->threads[i].sample;
		}
	return NULL;
}

static void dump_slot_put(void *arg, struct td_sample *s)
{
	struct dump *d = arg;

	for (unsigned i = 0; i < d->nthreads; i++)
		if (d->threads[i].sample == s)
			d->threads[i].captured = true;
}

static void dump_event(void *arg, const struct pt_event *ev)
{
	struct dump *d = arg;

	if (ev->kind == PT_EVENT_PROCESS_EXIT && ev->pid == d->pid)
		d->process_exited = true;
}

static const struct pt_round_ops dump_ops = {
	.slot_get = dump_slot_get,
	.slot_put = dump_slot_put,
	.event = dump_event,
};

static ssize_t read_live(void *arg, pid_t tid, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	return pt_read_memory(tid, addr, buf, len);
}

static bool exited(char state)
{
	return state == 'Z' || state == 'X';
}

/* Gone: no thread of pid left alive.  A zombie leader alone is a dead
 * process; one with live threads (main called pthread_exit) is not. */
static bool process_gone(pid_t pid)
{
	struct td_task_info info;

	if (td_task_info_read(pid, pid, &info) < 0)
		return true;
	return exited(info.state) && td_task_find_live(pid, 0) == 0;
}

/* ---- the result: frames and strings grow; strings by offset */

/* Offset of s in the string table (0 for NULL); the previous frame's
 * module and build-id are reused rather than copied again. */
static uint32_t intern(struct dump *d, const char *s, uint32_t prev)
{
	struct dump_result *r = d->res;
	size_t len;

	if (!s)
		return 0;
	if (prev && !strcmp(r->strings + prev, s))
		return prev;
	len = strlen(s) + 1;
	/* offsets are 32-bit: a string past that bound is shown as unknown,
	 * as one that finds no memory is */
	if (r->strings_len + len > UINT32_MAX ||
		td_array_grow(r->strings, d->strings_cap, r->strings_len + len, 4096) < 0)
		return 0;
	memcpy(r->strings + r->strings_len, s, len);
	r->strings_len += len;
	return (uint32_t)(r->strings_len - len);
}

static int add_frame(struct dump *d, const struct sym_frame *f)
{
	struct dump_result *r = d->res;
	struct dump_frame *prev, *out;

	if (td_array_grow(r->frames, d->frames_cap, (size_t)r->nframes + 1, 256) < 0)
		return -ENOMEM;
	prev = r->nframes ? &r->frames[r->nframes - 1] : NULL;
	out = &r->frames[r->nframes];
	*out = (struct dump_frame){ .pc = f->pc, .offset = f->offset, .line = f->line,
		.inlined = f->inlined };
	out->function = intern(d, f->function, 0);
	out->file = intern(d, f->file, prev ? prev->file : 0);
	out->module = intern(d, f->module, prev ? prev->module : 0);
	out->build_id = intern(d, f->build_id, prev ? prev->build_id : 0);
	r->nframes++;
	return 0;
}

/* What a thread stopped in a system call waits for: the call and its
 * arguments are in its registers (orig_rax; rdi, rsi, rdx, r10, r8, r9),
 * the functions on its stack tell glibc's objects apart; in CPython (py
 * not NULL) a condition variable or mutex of the GIL's is the GIL, as the recorder's
 * WAITS records have it (wait_python_gil). */
static void classify(struct dump *d, const struct dthread *th, struct sym_py *py,
	struct dump_thread *out)
{
	const struct user_regs_struct *g = &th->sample->regs;
	const uint64_t args[6] = { g->rdi, g->rsi, g->rdx, g->r10, g->r8, g->r9 };
	struct sym_py_reader rd = { read_live, NULL, th->tid, NULL };
	const char *funcs[16];
	uint64_t conds[2];
	pid_t holder;
	unsigned n = 0;

	/* the user's frames: glibc's functions tell its objects apart */
	for (unsigned i = out->nkernel; i < out->nframes && n < TD_ARRAY_SIZE(funcs); i++)
		funcs[n++] = dump_string(d->res, d->res->frames[out->first_frame + i].function);
	wait_classify(d->pid, th->tid,
		(th->sample->flags & TD_SAMPLE_IN_SYSCALL) ? (long)g->orig_rax : -1, args,
		NULL, out->state, funcs, n, &out->wait);
	if (py &&
		(out->wait.kind == WAIT_CONDVAR || out->wait.kind == WAIT_MUTEX ||
			out->wait.kind == WAIT_GIL) &&
		sym_py_gil(py, &rd, conds, &holder) == 0)
		wait_python_gil(d->pid, th->tid, conds, holder, &out->wait);
}

static int cmp_thread_tid(const void *key, const void *elem)
{
	pid_t a = *(const pid_t *)key, b = ((const struct dump_thread *)elem)->tid;

	return a < b ? -1 : a > b;
}

const struct dump_thread *dump_thread_of(const struct dump_result *r, pid_t tid)
{
	return r->nthreads ? bsearch(&tid, r->threads, r->nthreads, sizeof(*r->threads),
				     cmp_thread_tid) :
			     NULL;
}

/* Index of the thread holding what thread i waits for, -1 if none. */
static long owner_index(const struct dump_result *r, unsigned i)
{
	const struct dump_thread *o =
		r->threads[i].wait.owner ? dump_thread_of(r, r->threads[i].wait.owner) : NULL;

	return o ? o - r->threads : -1;
}

/* Deadlocks: cycles of threads each waiting for an object (a mutex, a
 * rwlock's writer, a join) that the next one holds.  Marks each cycle's
 * threads with its number. */
static void find_deadlocks(struct dump_result *r)
{
	unsigned *seen = calloc(r->nthreads ? r->nthreads : 1, sizeof(*seen));

	if (!seen)
		return;
	for (unsigned start = 0; start < r->nthreads; start++) {
		long i = start;

		/* follow owners, marking this walk with start + 1 */
		while (i >= 0 && !seen[i]) {
			long next = owner_index(r, (unsigned)i);

			seen[i] = start + 1;
			if (next >= 0 && seen[next] == start + 1 && !r->threads[next].deadlock) {
				/* back on this walk: next is on a cycle */
				long k = next;

				r->deadlocks++;
				do {
					r->threads[k].deadlock = r->deadlocks;
					k = owner_index(r, (unsigned)k);
				} while (k != next);
				break;
			}
			i = next;
		}
	}
	free(seen);
}

/* A thread's Python frames (symbolize/python.c), each named as a frame
 * of module "[python]", in place of the evaluator frames that run them.
 * Owns py and the names. */
#define DUMP_PY_FRAMES 256
struct dump_py {
	struct sym_py *py; /* NULL: not CPython, or a version without layout */
	struct sym_py_frame f[DUMP_PY_FRAMES];
	uint16_t native[DUMP_PY_FRAMES];
	struct sym_frame frame[DUMP_PY_FRAMES];
	struct sym_py_name name[DUMP_PY_FRAMES];
	unsigned n;
};

static bool py_names(struct dump_py *pf, struct sym_py_reader *rd)
{
	for (unsigned k = 0; k < pf->n; k++) {
		struct sym_py_name *nm = &pf->name[k];

		if (sym_py_name(pf->py, rd, &pf->f[k], nm) < 0)
			return false;
		pf->frame[k] = (struct sym_frame){ .function = nm->function, .file = nm->file,
			.line = nm->line, .start_line = nm->firstline, .module = "[python]" };
	}
	return true;
}

/* A blocked thread's system call line (/proc/PID/task/TID/syscall);
 * false if it is not blocked in one. */
static bool syscall_of(pid_t pid, pid_t tid, struct pt_syscall *ret)
{
	char path[64], line[256];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	return td_read_text(AT_FDCWD, path, line, sizeof(line)) > 0 &&
		pt_syscall_parse(line, ret) == 0 && !ret->running && ret->nr >= 0;
}

/* Step 1, thread th asleep (S or D): its kernel stack, kept only if its
 * system call line is the same before and after the read (it did not
 * leave the call meanwhile).  Returns 0, or -EACCES and the like when
 * the kernel refuses the file (then no other thread is read). */
static int kstack_read(struct dump *d, struct dthread *th)
{
	struct td_kstack_frame f[TD_KSTACK_TEXT / 16];
	struct pt_syscall after;
	char text[TD_KSTACK_TEXT];
	unsigned n;
	int r;

	if (!syscall_of(d->pid, th->tid, &th->ksc))
		return 0;
	r = td_kstack_read(d->pid, th->tid, text, sizeof(text));
	if (r == -EACCES || r == -EPERM || r == -ENOENT)
		return r;
	if (r <= 0 || !syscall_of(d->pid, th->tid, &after) || after.nr != th->ksc.nr ||
		after.sp != th->ksc.sp || after.pc != th->ksc.pc)
		return 0;
	th->ktext = strdup(text);
	if (!th->ktext)
		return 0;
	n = td_kstack_parse(th->ktext, f, TD_ARRAY_SIZE(f));
	th->kf = n ? malloc(n * sizeof(*th->kf)) : NULL;
	if (th->kf) {
		memcpy(th->kf, f, n * sizeof(*f));
		th->nk = n;
	}
	return 0;
}

/* Its kernel frames, if its stop found it where step 1 read them: in
 * the same system call, at the same user sp and pc; or, if it never
 * stopped (asleep where no stop reaches it: D), as step 1 read them. */
static int add_kernel_frames(struct dump *d, const struct dthread *th, struct dump_thread *out)
{
	const struct td_sample *s = th->sample;
	char module[80];
	int r = 0;

	if (!th->nk || (th->captured && (!(s->flags & TD_SAMPLE_IN_SYSCALL) ||
						(long)s->regs.orig_rax != th->ksc.nr ||
						s->regs.rsp != th->ksc.sp || s->regs.rip != th->ksc.pc)))
		return 0;
	for (unsigned k = 0; k < th->nk && r == 0; k++) {
		struct sym_frame f = { .function = th->kf[k].name, .offset = th->kf[k].offset,
			.module = module };

		snprintf(module, sizeof(module), "[%s]", th->kf[k].module ? th->kf[k].module : "kernel");
		r = add_frame(d, &f);
		if (r == 0)
			d->res->frames[d->res->nframes - 1].kernel = true;
	}
	if (r == 0)
		out->nkernel = th->nk;
	return r;
}

/* Unwind and symbolize every captured copy (the threads run again). */
static int symbolize_all(struct dump *d, struct sym_session *ss, bool inlines)
{
	struct sym_unwound *u = malloc(sizeof(*u));
	struct sym_frame *frames = calloc(SYM_MAX_FRAMES, sizeof(*frames));
	struct dump_py *pf = calloc(1, sizeof(*pf));
	struct sym_py_reader prd = { read_live, NULL, d->pid, NULL };
	int r = 0;

	if (!u || !frames || !pf) {
		r = -ENOMEM;
		goto out;
	}
	if (sym_py_open(ss, &prd, &pf->py) < 0)
		pf->py = NULL;
	for (unsigned i = 0; i < d->nthreads && r == 0; i++) {
		const struct dthread *th = &d->threads[i];
		struct dump_thread *out = &d->res->threads[i];

		out->first_frame = d->res->nframes;
		if (!th->captured) {
			/* one in D did not stop: its kernel stack is all there is */
			if (th->info.state == 'D' && out->capture == DUMP_NOT_CAPTURED)
				r = add_kernel_frames(d, th, out);
			out->nframes = d->res->nframes - out->first_frame;
			continue;
		}
		sym_session_unwind(ss, th->sample, u);
		out->capture = DUMP_CAPTURED;
		out->stopped_ns = th->sample->stopped_ns;
		out->stack_bytes = th->sample->stack_len;
		out->end = u->end;
		out->fault_addr = u->fault_addr;
		out->live_reads = u->live_reads;
		memcpy(out->detail, u->detail, sizeof(out->detail));
		r = add_kernel_frames(d, th, out);
		pf->n = 0;
		if (pf->py) {
			struct sym_py_reader rd = { read_live, NULL, th->sample->tid, NULL };
			int n = sym_py_merge(pf->py, &rd, th->sample, u, pf->f, pf->native,
				DUMP_PY_FRAMES);

			pf->n = n > 0 ? (unsigned)n : 0;
			if (pf->n && !py_names(pf, &rd))
				pf->n = 0; /* torn: native, never a wrong name */
		}
		for (unsigned k = 0, p = 0; k < u->n && r == 0; k++) {
			int n;

			if (p < pf->n && pf->native[p] == k) {
				while (p < pf->n && pf->native[p] == k && r == 0)
					r = add_frame(d, &pf->frame[p++]);
				continue;
			}
			n = sym_session_symbolize(ss, u->pc[k], u->activation[k], inlines, frames,
				SYM_MAX_FRAMES);
			for (int j = 0; j < n && r == 0; j++)
				r = add_frame(d, &frames[j]);
		}
		out->nframes = d->res->nframes - out->first_frame;
		classify(d, th, pf->py, out);
	}
out:
	if (pf)
		sym_py_free(pf->py);
	free(pf);
	free(u);
	free(frames);
	return r;
}

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

/* The threads to dump, sorted (the leader first), into d->threads. */
static int choose_threads(struct dump *d, struct pt_tracer *tr, const struct dump_options *o,
	struct dump_failure *fail)
{
	pid_t *tids = calloc(DUMP_MAX_THREADS + 1, sizeof(*tids));
	struct td_task_info leader;
	size_t slot_size = td_sample_size(d->window);
	int n, r = 0;

	if (!tids)
		return -ENOMEM;
	n = pt_tracer_threads(tr, d->pid, tids, DUMP_MAX_THREADS);
	for (unsigned i = 0; i < o->ntids; i++) {
		bool found = false;

		for (int k = 0; k < n && !found; k++)
			found = tids[k] == o->tids[i];
		if (!found) {
			fail->step = DUMP_FAIL_TID;
			fail->tid = o->tids[i];
			r = -ESRCH;
			goto out;
		}
	}
	if (o->ntids) {
		memcpy(tids, o->tids, o->ntids * sizeof(*tids));
		n = (int)o->ntids;
	} else if (td_task_info_read(d->pid, d->pid, &leader) == 0 && exited(leader.state)) {
		/* the main thread has exited: it cannot be seized, but it is
		 * part of the picture (and keeps its place, first) */
		tids[n++] = d->pid;
	}
	qsort(tids, (size_t)n, sizeof(*tids), cmp_tid);
	d->threads = calloc((size_t)n, sizeof(*d->threads));
	d->slots = calloc((size_t)n, slot_size);
	d->res->threads = calloc((size_t)n, sizeof(*d->res->threads));
	if (!d->threads || !d->slots || !d->res->threads) {
		r = -ENOMEM;
		goto out;
	}
	d->nthreads = d->res->nthreads = (unsigned)n;
	for (int i = 0; i < n; i++) {
		struct dthread *th = &d->threads[i];
		struct dump_thread *out = &d->res->threads[i];

		th->tid = tids[i];
		th->sample = (struct td_sample *)(d->slots + (size_t)i * slot_size);
		if (td_task_info_read(d->pid, tids[i], &th->info) < 0)
			th->info.state = '?';
		out->tid = th->tid;
		memcpy(out->name, th->info.name, sizeof(out->name));
		/* Read after our seize, a job-control stop shows as 't' (a
		 * traced thread's stop): it is the 'T' of an untraced one. */
		out->state = th->info.state == 't' ? 'T' : th->info.state;
		/* only the leader stays listed once exited; another thread
		 * seen as a zombie here is just on its way out */
		out->capture = th->tid == d->pid && exited(th->info.state) ? DUMP_EXITED :
									      DUMP_NOT_CAPTURED;
		if (!o->no_kernel && !d->res->kstack_err &&
			(th->info.state == 'S' || th->info.state == 'D'))
			d->res->kstack_err = kstack_read(d, th);
	}
out:
	free(tids);
	return r;
}

int dump_run(const struct dump_options *o, struct dump_result **ret_result,
	struct dump_failure *ret_fail)
{
	struct pt_config pcfg = { .max_threads = DUMP_MAX_THREADS, .round_nice = -10 };
	struct sym_options sopt = { .read_live = read_live, .debuginfo_dir = o->debuginfo_dir,
		.no_dwarf = o->no_dwarf, .cache_dir = o->cache_dir };
	struct dump d = { .pid = o->pid, .window = o->stack_bytes ? o->stack_bytes :
								    DUMP_DEFAULT_WINDOW };
	struct dump_failure fail = { .step = DUMP_FAIL_SETUP };
	struct pt_tracer *tr = NULL;
	struct sym_cache *cache = NULL;
	struct sym_session *ss = NULL;
	struct pt_round_stats stats = { 0 };
	uint64_t t0 = td_now_ns(), t1;
	pid_t *tids = NULL;
	int r;

	d.res = calloc(1, sizeof(*d.res));
	if (!d.res)
		return -ENOMEM;
	d.res->pid = o->pid;
	/* offset 0 of the string table stands for "unknown" */
	d.res->strings = calloc(1, 4096);
	if (!d.res->strings) {
		r = -ENOMEM;
		goto out;
	}
	d.res->strings_len = 1;
	d.strings_cap = 4096;
	r = pt_tracer_new(&pcfg, &tr);
	if (r < 0)
		goto out;
	fail.step = DUMP_FAIL_ATTACH;
	r = pt_tracer_attach(tr, o->pid);
	if (r < 0)
		goto out;
	t1 = td_now_ns();
	d.res->attach_ns = t1 - t0;
	fail.step = DUMP_FAIL_SETUP;
	r = choose_threads(&d, tr, o, &fail);
	if (r < 0)
		goto out;

	fail.step = DUMP_FAIL_MODULES;
	r = sym_cache_new(&cache);
	if (r == 0)
		r = sym_session_new(o->pid, &sopt, cache, &ss);
	if (r < 0) {
		fail.gone = process_gone(o->pid);
		goto out;
	}
	t0 = td_now_ns();
	d.res->modules_ns = t0 - t1;

	/* only live threads are asked to stop; an exited leader is not */
	tids = calloc(d.nthreads ? d.nthreads : 1, sizeof(*tids));
	if (!tids) {
		r = -ENOMEM;
		goto out;
	}
	{
		unsigned k = 0;

		for (unsigned i = 0; i < d.nthreads; i++)
			if (d.res->threads[i].capture != DUMP_EXITED)
				tids[k++] = d.threads[i].tid;
		pt_tracer_sample(tr, tids, k, &dump_ops, &d, DUMP_STOP_TIMEOUT_MS, PT_ROUND_DETACH,
			&stats);
	}
	t1 = td_now_ns();
	d.res->capture_ns = t1 - t0;
	/* Detach whatever is left (threads born meanwhile, stragglers). */
	pt_tracer_free(tr);
	tr = NULL;

	fail.step = DUMP_FAIL_SETUP;
	r = symbolize_all(&d, ss, o->inlines);
	if (r < 0)
		goto out;
	find_deadlocks(d.res);
	sym_session_modules(ss, &d.res->modules, &d.res->with_elf, &d.res->with_dwarf);
	sym_session_debug_stats(ss, &d.res->debug_cache);
	d.res->symbolize_ns = td_now_ns() - t1;
	d.res->requested = stats.requested;
	d.res->captured = stats.captured;
	d.res->gone = stats.gone;
	d.res->timeout = stats.timeout;
	d.res->process_exited = d.process_exited || process_gone(o->pid);
	*ret_result = d.res;
	d.res = NULL;
	r = 0;
out:
	if (r < 0)
		*ret_fail = fail;
	pt_tracer_free(tr);
	sym_session_free(ss);
	sym_cache_free(cache);
	free(tids);
	for (unsigned i = 0; d.threads && i < d.nthreads; i++) {
		free(d.threads[i].ktext);
		free(d.threads[i].kf);
	}
	free(d.threads);
	free(d.slots);
	dump_result_free(d.res);
	return r;
}

void dump_result_free(struct dump_result *r)
{
	if (!r)
		return;
	free(r->threads);
	free(r->frames);
	free(r->strings);
	free(r);
}
