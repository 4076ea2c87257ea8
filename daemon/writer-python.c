/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The writer's CPython frames: for a sample of a CPython process, its
 * thread's interpreter frames (symbolize/python.c reads them, through
 * process_vm_readv, right after the unwind of the sample), each one a
 * location of the chunk (function co_qualname, file co_filename, line
 * from the location table; mapping "[python]"), assigned to the
 * _PyEval_EvalFrameDefault frames of the native stack that run them: the
 * innermost activation runs the frames down to the first entry frame, the
 * next one the group after it, and so on, as py-spy --native shows them.
 *
 * Guarantees: never a wrong name.  The groups must be exactly as many as
 * the evaluator's activations (or, for a stack cut short, at least as
 * many: the outer ones are dropped with the native frames beyond the
 * cut), and each activation's innermost frame the sample's own
 * (symbolize/python.c checks the sample's words); any failed read or
 * check leaves the whole stack native.  A
 * version without a layout is said once (REC_NOTICE_PYTHON) and left
 * native.  A blocked thread's repeat (no copy) is not read: it takes the
 * frames read with its last copy, kept with the saved native stack
 * (py_restore).  Leaves to writer-stacks.c the stack itself and what is
 * saved. */
#define _GNU_SOURCE
#include "writer-internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../ptrace/ptrace.h"

static ssize_t read_live(void *arg, pid_t tid, uint64_t addr, void *buf, size_t len)
{
	(void)arg;
	return pt_read_memory(tid, addr, buf, len);
}

static ssize_t read_livev(
	void *arg, pid_t tid, const struct iovec *local, const struct iovec *remote, unsigned n)
{
	(void)arg;
	return pt_read_memoryv(tid, local, remote, n);
}

void py_forget(struct session *se)
{
	sym_py_free(se->py);
	se->py = NULL;
	se->py_state = 0;
}

/* The chunk's location of Python frame f of pid: 0 if its names do not
 * read as they should.  Cached in ids.locs, cleared with the chunk and
 * with pid's session. */
static uint32_t py_location(struct writer *w, struct sym_py *py, struct sym_py_reader *r, pid_t pid,
	const struct sym_py_frame *f)
{
	/* f->key hashes every field read of the code object and the last
	 * instruction: the same key is the same name and line.  The native
	 * frames' keys are pid << 48 ^ pc << 1 ^ act, as likely to meet this
	 * one as any two 63-bit hashes */
	uint64_t key = (f->key ^ (uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ull) | 1ull << 63;
	struct chunk_mapping m = {.path = "[python]"};
	struct sym_py_name nm;
	struct chunk_line line;
	uint32_t id = map_get(&w->ids.locs, key);

	if (id)
		return id;
	if (sym_py_name(py, r, f, &nm) < 0)
		return 0;
	line = (struct chunk_line){
		chunk_writer_function(w->cw, nm.function, NULL, nm.file, (uint32_t)nm.firstline),
		(uint32_t)nm.line, 0};
	id = chunk_writer_location(w->cw, chunk_writer_mapping(w->cw, &m), 0, &line, 1);
	if (id)
		map_put(&w->ids.locs, key, id);
	return id;
}

/* The interpreter of se's process, looked for once per session; a
 * version without a layout is said once (per session: a renewal after a
 * dlopen says it again) and left native. */
static struct sym_py *py_of(struct writer *w, struct session *se, struct sym_py_reader *r)
{
	uint32_t version;
	bool known;

	if (se->py_state)
		return se->py_state > 0 ? se->py : NULL;
	se->py_state = sym_py_open(se->s, r, &se->py) == 0 ? 1 : -1;
	if (se->py_state < 0)
		return NULL;
	version = sym_py_version(se->py, &known);
	if (!known) {
		writer_notify(w, &(struct rec_notice){
					 .kind = REC_NOTICE_PYTHON,
					 .python_version = version,
					 .id = {se->pid, 0},
				 });
		py_forget(se);
		se->py_state = -1;
	}
	return se->py_state > 0 ? se->py : NULL;
}

void py_wait(struct session *se, const struct td_sample *s, struct wait_info *wi)
{
	struct sym_py_reader r = {read_live, NULL, s->tid, read_livev};
	uint64_t cond[2];
	pid_t holder;

	/* only an interpreter py_read found (the wait's stack is stored
	 * first): a stripped python3.11 does not name take_gil, its
	 * condition variables' and mutexes' addresses tell it (the rule
	 * tracerd dump follows too) */
	if (!se || se->py_state <= 0 ||
		(wi->kind != WAIT_CONDVAR && wi->kind != WAIT_MUTEX && wi->kind != WAIT_GIL))
		return;
	if (sym_py_gil(se->py, &r, cond, &holder) == 0)
		wait_python_gil(s->pid, s->tid, cond, holder, wi);
}

void py_restore(struct writer *w, struct session *se, pid_t pid, const struct saved *sv)
{
	struct sym_py_reader r = {read_live, NULL, pid, read_livev};
	struct sym_py *py = py_of(w, se, &r);

	w->py.n = 0;
	if (!py || !sv->npy || sv->npy > WRITER_PY_FRAMES)
		return;
	memcpy(w->py.f, sv->pyf, sv->npy * sizeof(*sv->pyf));
	memcpy(w->py.native, sv->pynative, sv->npy * sizeof(*sv->pynative));
	for (unsigned j = 0; j < sv->npy; j++) {
		w->py.ids[j] = py_location(w, py, &r, pid, &w->py.f[j]);
		if (!w->py.ids[j])
			return;
	}
	w->py.n = sv->npy;
}

void py_read(struct writer *w, struct session *se, const struct td_sample *s)
{
	struct sym_py_reader r = {read_live, NULL, s->tid, read_livev};
	struct sym_py *py = py_of(w, se, &r);
	int n;

	w->py.n = 0;
	if (!py)
		return;
	n = sym_py_merge(py, &r, s, &w->stacks.u, w->py.f, w->py.native, WRITER_PY_FRAMES);
	for (int j = 0; j < n; j++) {
		w->py.ids[j] = py_location(w, py, &r, s->pid, &w->py.f[j]);
		if (!w->py.ids[j])
			return;
	}
	w->py.n = n > 0 ? (unsigned)n : 0;
}
