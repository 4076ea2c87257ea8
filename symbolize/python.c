/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CPython frames read from outside: for a sampled thread of a CPython
 * process, its interpreter frame chain (thread state -> _PyCFrame ->
 * _PyInterpreterFrame -> code object), cut into the groups that each
 * _PyEval_EvalFrameDefault activation of the native stack runs, and each
 * frame's function, file and line (the code object's co_qualname,
 * co_filename and its location table at the frame's last instruction).
 *
 * Where the facts come from: _PyRuntime, Py_Version, PyCode_Type,
 * PyUnicode_Type, PyBytes_Type and _PyEval_EvalFrameDefault by name from
 * the ELF symbols of the module that holds the interpreter (python3.X or
 * libpython3.X.so; Debian's python3.11 exports them in .dynsym even
 * stripped); the structure offsets from a table per version (py_layouts,
 * checked against the headers of python3.X-dev: docs/notes/python.md).
 *
 * Guarantees: never a wrong name.  The chain is read live (the thread ran
 * on since the sample), so everything read is checked: type pointers are
 * the interpreter's own, sizes bounded, the chain at most PY_MAX_FRAMES
 * long, each frame's last instruction inside its code object's bytecode,
 * the innermost _PyCFrame taken from the sample's stack copy (its
 * current_frame as it was at the sample), and the number of entry frames
 * must match the _PyEval_EvalFrameDefault activations the unwind found.
 * On any doubt the caller gets no Python frame and keeps the native ones.
 * Reads go through the caller's sym_read_fn (process_vm_readv in
 * ptrace/); nothing is injected, nothing stopped.  Leaves to the caller
 * (daemon/writer-stacks.c) which native frame each group replaces in the
 * stack it stores, and the caching of the names. */
#define _GNU_SOURCE
#include "symbolize-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Offsets of one CPython version (x86-64). */
struct py_layout {
	uint32_t hex; /* PY_VERSION_HEX >> 16: 0x030b for 3.11 */
	/* _PyRuntimeState.interpreters.head, PyInterpreterState.threads.head */
	uint16_t rt_interp_head, interp_threads_head;
	/* PyThreadState: next, cframe, native_thread_id (the TID) */
	uint16_t ts_next, ts_cframe, ts_tid;
	/* _PyCFrame: current_frame, previous */
	uint16_t cf_current, cf_previous;
	/* _PyInterpreterFrame: f_code, previous, prev_instr, is_entry, owner */
	uint16_t fr_code, fr_previous, fr_prev_instr, fr_is_entry, fr_owner, fr_size;
	/* PyCodeObject: firstlineno, filename, name, qualname, linetable,
	 * code_adaptive (the bytecode, inline); Py_SIZE is its length in code
	 * units */
	uint16_t co_firstlineno, co_filename, co_name, co_qualname, co_linetable, co_code;
};

/* Measured with offsetof() over python3.11-dev's internal headers
 * (Py_BUILD_CORE), 3.11.2 of Debian 12.  3.12 moved the frame chain
 * (PyThreadState.cframe went away in 3.13, 3.12 keeps it at another
 * offset) and 3.13 publishes _Py_DebugOffsets at the start of
 * _PyRuntime: their entries are for when they are checked against a
 * running interpreter here; until then those versions are left native. */
static const struct py_layout py_layouts[] = {
	{.hex = 0x030b,
		.rt_interp_head = 40,
		.interp_threads_head = 16,
		.ts_next = 8,
		.ts_cframe = 56,
		.ts_tid = 160,
		.cf_current = 8,
		.cf_previous = 16,
		.fr_code = 32,
		.fr_previous = 48,
		.fr_prev_instr = 56,
		.fr_is_entry = 68,
		.fr_owner = 69,
		.fr_size = 72,
		.co_firstlineno = 72,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_code = 184},
};

#define PY_MAX_THREADS 4096 /* thread states walked to find a TID */
#define PY_MAX_CODE_UNITS (1u << 24)
#define PY_MAX_LINETABLE (1u << 20)
#define PY_MAX_STR 4096

/* One process's interpreter: owns nothing (sym_session owns it). */
struct sym_py {
	const struct py_layout *l;
	uint64_t runtime, code_type, str_type, bytes_type;
	uint64_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code */
	uint32_t version;	   /* Py_Version: 0x030b02f0 */
	/* the last thread state found, by TID: checked at each use */
	struct {
		pid_t tid;
		uint64_t ts;
	} last[64];
};

static bool rd(struct sym_py_reader *r, uint64_t addr, void *buf, size_t len)
{
	return addr && r->read(r->arg, r->tid, addr, buf, len) == (ssize_t)len;
}

static uint64_t u64_at(const uint8_t *p, unsigned off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

struct py_syms {
	const char *name;
	uint64_t addr, size;
};

/* Look the interpreter's symbols up in m: true when all were found. */
static bool module_syms(Dwfl_Module *mod, struct py_syms *want, unsigned n)
{
	int nsyms = dwfl_module_getsymtab(mod);
	unsigned found = 0;

	for (int i = 1; i < nsyms && found < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);

		if (!name || sym.st_shndx == SHN_UNDEF)
			continue;
		for (unsigned k = 0; k < n; k++)
			if (!want[k].addr && !strcmp(name, want[k].name)) {
				want[k].addr = addr;
				want[k].size = sym.st_size;
				found++;
			}
	}
	return found == n;
}

/* Is path the interpreter: .../python3.X or .../libpython3.X.so...? */
static bool python_path(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;

	b = b ? b + 1 : path;
	return b && (!strncmp(b, "python", 6) || !strncmp(b, "libpython", 9));
}

int sym_py_open(struct sym_session *s, struct sym_py_reader *r, struct sym_py **ret_py)
{
	static const char *const names[] = {"_PyRuntime", "Py_Version", "PyCode_Type",
		"PyUnicode_Type", "PyBytes_Type", "_PyEval_EvalFrameDefault"};
	struct py_syms want[TD_ARRAY_SIZE(names)];
	struct sym_py *py;
	uint32_t version = 0;
	unsigned i;

	for (i = 0; i < s->nmodules; i++) {
		for (unsigned k = 0; k < TD_ARRAY_SIZE(want); k++)
			want[k] = (struct py_syms){names[k], 0, 0};
		if (python_path(s->modules[i].path) && s->modules[i].has_elf &&
			module_syms(s->modules[i].mod, want, TD_ARRAY_SIZE(want)))
			break;
	}
	if (i == s->nmodules)
		return -ENOENT; /* not CPython (or one without its symbols) */
	if (!rd(r, want[1].addr, &version, sizeof(version)))
		return -EIO;
	py = calloc(1, sizeof(*py));
	if (!py)
		return -ENOMEM;
	py->version = version;
	for (unsigned k = 0; k < TD_ARRAY_SIZE(py_layouts); k++)
		if (py_layouts[k].hex == version >> 16)
			py->l = &py_layouts[k];
	py->runtime = want[0].addr;
	py->code_type = want[2].addr;
	py->str_type = want[3].addr;
	py->bytes_type = want[4].addr;
	py->eval_lo = want[5].addr;
	py->eval_hi = want[5].addr + (want[5].size ? want[5].size : 1);
	*ret_py = py;
	return 0;
}

void sym_py_free(struct sym_py *py)
{
	free(py);
}

uint32_t sym_py_version(const struct sym_py *py, bool *ret_known)
{
	*ret_known = py->l != NULL;
	return py->version;
}

bool sym_py_is_eval(const struct sym_py *py, uint64_t pc, bool activation)
{
	pc -= !activation; /* a return address may end its caller */
	return pc >= py->eval_lo && pc < py->eval_hi;
}

/* tid's PyThreadState, or 0. */
static uint64_t thread_state(struct sym_py *py, struct sym_py_reader *r)
{
	const struct py_layout *l = py->l;
	unsigned slot = (unsigned)r->tid % TD_ARRAY_SIZE(py->last);
	uint64_t interp, ts;
	unsigned n = 0;

	if (py->last[slot].tid == r->tid) {
		uint64_t tid = 0;

		if (rd(r, py->last[slot].ts + l->ts_tid, &tid, sizeof(tid)) &&
			tid == (uint64_t)r->tid)
			return py->last[slot].ts;
	}
	/* the main interpreter only: subinterpreters are rare, and each has
	 * its own list */
	if (!rd(r, py->runtime + l->rt_interp_head, &interp, sizeof(interp)) ||
		!rd(r, interp + l->interp_threads_head, &ts, sizeof(ts)))
		return 0;
	while (ts && n++ < PY_MAX_THREADS) {
		uint64_t tid = 0, next = 0;

		if (!rd(r, ts + l->ts_tid, &tid, sizeof(tid)) ||
			!rd(r, ts + l->ts_next, &next, sizeof(next)))
			return 0;
		if (tid == (uint64_t)r->tid) {
			py->last[slot].tid = r->tid;
			py->last[slot].ts = ts;
			return ts;
		}
		ts = next;
	}
	return 0;
}

/* Does the frame chain from fr reach outer (the next activation's
 * current frame) right after its first entry frame?  Then fr is the
 * current frame of the activation just inside outer's. */
static bool chain_reaches(struct sym_py *py, struct sym_py_reader *r, uint64_t fr, uint64_t outer)
{
	const struct py_layout *l = py->l;

	for (unsigned n = 0; fr && n < 64; n++) {
		uint8_t b[128];

		if (l->fr_size > sizeof(b) || !rd(r, fr, b, l->fr_size))
			return false;
		if (b[l->fr_is_entry])
			return u64_at(b, l->fr_previous) == outer;
		fr = u64_at(b, l->fr_previous);
	}
	return false;
}

/* The _PyCFrame of the activation inside the one whose _PyCFrame is at cf
 * (both in the copy [lo, hi) of the sample), or 0: its previous field
 * holds cf.  A word equal to cf may also be a spilled register: the
 * candidate whose current frame chains to cf's is the one. */
static uint64_t cframe_inside(
	struct sym_py *py, struct sym_py_reader *r, const struct td_sample *sample, uint64_t cf)
{
	const struct py_layout *l = py->l;
	uint64_t lo = sample->stack_addr,
		 outer = u64_at(sample->stack, (unsigned)(cf - lo) + l->cf_current);

	for (uint64_t a = (cf - 8) & ~7ull; a >= lo + l->cf_previous && a >= 8; a -= 8) {
		uint64_t cand = a - l->cf_previous;

		if (u64_at(sample->stack, (unsigned)(a - lo)) != cf)
			continue;
		if (chain_reaches(py, r,
			    u64_at(sample->stack, (unsigned)(cand - lo) + l->cf_current), outer))
			return cand;
	}
	return 0;
}

/* The innermost _PyCFrame at the sample, in the sample's stack copy, and
 * its current_frame as it was then.  The live tstate->cframe may be
 * deeper now (the thread called into Python again since: its previous
 * links lead back into the copy), or shallower (it returned: the
 * activations inside it are found in the copy by their previous links). */
static uint64_t sample_frame(
	struct sym_py *py, struct sym_py_reader *r, const struct td_sample *sample, uint64_t ts)
{
	const struct py_layout *l = py->l;
	uint64_t cf = 0, lo = sample->stack_addr, hi = sample->stack_addr + sample->stack_len;

	if (!rd(r, ts + l->ts_cframe, &cf, sizeof(cf)))
		return 0;
	if ((sample->flags & TD_SAMPLE_REPEAT) && !(sample->flags & TD_SAMPLE_RUNNABLE)) {
		/* no copy: a blocked thread, unchanged since its last one,
		 * whose frames are as they were then */
		uint64_t fr = 0;

		return rd(r, cf + l->cf_current, &fr, sizeof(fr)) ? fr : 0;
	}
	for (unsigned n = 0; cf && cf < lo && n < 64; n++)
		if (!rd(r, cf + l->cf_previous, &cf, sizeof(cf)))
			return 0;
	if (cf < lo || cf + l->cf_previous + 8 > hi)
		return 0; /* not in the copy: what it was then is not known */
	for (unsigned n = 0; n < 64; n++) {
		uint64_t inner = cframe_inside(py, r, sample, cf);

		if (!inner)
			break;
		cf = inner;
	}
	return u64_at(sample->stack, (unsigned)(cf - lo) + l->cf_current);
}

/* Read frame fr and its code object into f; false on any doubt. */
static bool frame_read(struct sym_py *py, struct sym_py_reader *r, uint64_t fr,
	struct sym_py_frame *f, uint64_t *ret_previous)
{
	const struct py_layout *l = py->l;
	uint8_t b[128], c[256];
	uint64_t code, instr, size, first;

	if (l->fr_size > sizeof(b) || l->co_code > sizeof(c) || !rd(r, fr, b, l->fr_size))
		return false;
	code = u64_at(b, l->fr_code);
	instr = u64_at(b, l->fr_prev_instr);
	if (!rd(r, code, c, l->co_code) || u64_at(c, 8) != py->code_type)
		return false;
	size = u64_at(c, 16); /* Py_SIZE: code units */
	if (!size || size > PY_MAX_CODE_UNITS)
		return false;
	first = code + l->co_code;
	/* prev_instr is one unit before the first before it starts */
	if (instr + 2 < first || instr >= first + 2 * size || (instr - first) % 2)
		return false;
	*f = (struct sym_py_frame){
		.code = code,
		.lasti = (int32_t)(((int64_t)instr - (int64_t)first) / 2),
		.entry = b[l->fr_is_entry] != 0,
		.name = u64_at(c, l->co_qualname),
		.file = u64_at(c, l->co_filename),
		.linetable = u64_at(c, l->co_linetable),
	};
	memcpy(&f->firstline, c + l->co_firstlineno, sizeof(f->firstline));
	f->key =
		sym_hash(&f->code, 8, sym_hash(&f->name, 16, sym_hash(&f->lasti, 4, f->linetable)));
	*ret_previous = u64_at(b, l->fr_previous);
	return true;
}

int sym_py_stack(struct sym_py *py, struct sym_py_reader *r, const struct td_sample *sample,
	struct sym_py_frame *frames, unsigned cap)
{
	uint64_t ts, fr;
	unsigned n = 0;

	if (!py->l)
		return -ENOTSUP;
	ts = thread_state(py, r);
	if (!ts)
		return 0; /* no Python thread state: a native thread */
	fr = sample_frame(py, r, sample, ts);
	while (fr) {
		uint64_t previous;

		if (n == cap || !frame_read(py, r, fr, &frames[n], &previous))
			return -EIO; /* torn, or deeper than we read: keep it native */
		n++;
		fr = previous;
	}
	return (int)n;
}

/* A compact ASCII str at addr into buf (NUL-terminated): false if it is
 * anything else. */
static bool str_read(
	struct sym_py *py, struct sym_py_reader *r, uint64_t addr, char *buf, size_t cap)
{
	uint8_t h[48];
	uint64_t len;
	uint32_t state;

	if (!rd(r, addr, h, sizeof(h)) || u64_at(h, 8) != py->str_type)
		return false;
	len = u64_at(h, 16);
	memcpy(&state, h + 32, sizeof(state));
	/* state: interned:2 kind:3 compact:1 ascii:1 */
	if (!(state >> 5 & 1) || !(state >> 6 & 1) || len >= cap || len > PY_MAX_STR)
		return false;
	if (!rd(r, addr + 48, buf, len))
		return false;
	buf[len] = 0;
	return true;
}

/* PEP 626's location table as 3.11 stores it (Objects/locations.md):
 * entries of a first byte 1CCCCLLL (code C, L+1 code units) and a varint
 * tail; the line moves by a delta that codes 10-14 give. */
static unsigned varint(const uint8_t *p, size_t n, size_t *i)
{
	unsigned v = 0, shift = 0;

	while (*i < n && shift < 30) {
		uint8_t b = p[(*i)++];

		v |= (unsigned)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int svarint(const uint8_t *p, size_t n, size_t *i)
{
	unsigned v = varint(p, n, i);

	return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

int sym_py_line(const uint8_t *t, size_t n, int firstline, int lasti)
{
	int line = firstline, addr = 0;
	size_t i = 0;

	if (lasti < 0)
		return firstline;
	while (i < n) {
		uint8_t b = t[i++];
		int code = b >> 3 & 15, len = (b & 7) + 1;

		if (!(b & 128))
			return 0; /* not at an entry: not this format */
		if (code == 15) {
			/* no location */
		} else if (code == 14) {
			line += svarint(t, n, &i);
			varint(t, n, &i);
			varint(t, n, &i);
			varint(t, n, &i);
		} else if (code == 13) {
			line += svarint(t, n, &i);
		} else if (code >= 10) {
			line += code - 10;
			i += 2;
		} else {
			i += 1;
		}
		addr += len;
		if (lasti < addr)
			return code == 15 ? 0 : line;
	}
	return 0;
}

int sym_py_name(struct sym_py *py, struct sym_py_reader *r, const struct sym_py_frame *f,
	struct sym_py_name *ret)
{
	uint8_t h[32], *t;
	uint64_t len;
	int line;

	if (!str_read(py, r, f->name, ret->function, sizeof(ret->function)) ||
		!str_read(py, r, f->file, ret->file, sizeof(ret->file)))
		return -EIO;
	if (!rd(r, f->linetable, h, sizeof(h)) || u64_at(h, 8) != py->bytes_type)
		return -EIO;
	len = u64_at(h, 16);
	if (len > PY_MAX_LINETABLE)
		return -EIO;
	t = malloc(len ? len : 1);
	if (!t)
		return -ENOMEM;
	line = len && rd(r, f->linetable + 32, t, len) ? sym_py_line(t, len, f->firstline, f->lasti)
						       : 0;
	free(t);
	ret->line = line > 0 ? line : 0;
	ret->firstline = f->firstline > 0 ? f->firstline : 0;
	return 0;
}

int sym_py_merge(struct sym_py *py, struct sym_py_reader *r, const struct td_sample *sample,
	const struct sym_unwound *u, struct sym_py_frame *frames, uint16_t *native, unsigned cap)
{
	unsigned k = 0, evals = 0;
	int n;

	for (unsigned i = 0; i < u->n; i++)
		evals += sym_py_is_eval(py, u->pc[i], u->activation[i]);
	if (!evals)
		return 0;
	n = sym_py_stack(py, r, sample, frames, cap);
	if (n <= 0)
		return n;
	/* 3.11 runs a Python call from Python in the same activation: one
	 * activation runs the frames down to the first entry frame */
	for (unsigned i = 0; i < u->n && k < (unsigned)n; i++) {
		if (!sym_py_is_eval(py, u->pc[i], u->activation[i]))
			continue;
		do
			native[k] = (uint16_t)i;
		while (!frames[k++].entry && k < (unsigned)n);
		evals--;
	}
	/* every activation got its group, and every group its activation
	 * (but those past a cut), and the last group ended at its entry */
	if (evals || (k < (unsigned)n && u->end == SYM_END_OUTERMOST) ||
		u->n + k > SYM_MAX_FRAMES || !frames[k - 1].entry)
		return -EIO;
	return (int)k;
}
