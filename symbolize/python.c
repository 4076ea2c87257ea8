/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CPython frames read from outside: for a sampled thread of a CPython
 * 3.11, 3.12 or 3.13 process, its interpreter frame chain (thread state
 * -> _PyCFrame (3.11, 3.12) -> _PyInterpreterFrame -> code object), cut
 * into the groups that each _PyEval_EvalFrameDefault activation of the
 * native stack runs, and each frame's function, file and line (the code
 * object's co_qualname, co_filename and its location table at the frame's
 * last instruction); and where the GIL is and who holds it, for the
 * waits.
 *
 * Where the facts come from: _PyRuntime, Py_Version, PyCode_Type,
 * PyUnicode_Type, PyBytes_Type and _PyEval_EvalFrameDefault by name from
 * the ELF symbols of the module that holds the interpreter (python3.X or
 * libpython3.X.so; Debian's python3.11 exports them in .dynsym even
 * stripped); the structure offsets from the interpreter's DWARF where it
 * has some (pyenv's builds: python-dwarf.c), else from a table per
 * version (py_layouts, checked against the headers of python3.X-dev and
 * libpython's DWARF: docs/notes/python.md).  The version's shape (how it
 * keeps its chain) is always the table's: a version without an entry
 * stays native even with DWARF.
 *
 * Cost: a read of the target costs mostly its system call, not its
 * bytes.  So a chain's frames, neighbours in the thread's data stack, come
 * from the few pages around them read in one call (the bytes around the
 * thread's last innermost frame in the same call as its thread state),
 * then every frame's code object in one call; and a code object's names
 * and location table are kept (bounded: PY_CODES, PY_CODE_BYTES) by its
 * address, checked against what the frame's read of it gave.
 *
 * Guarantees: never a wrong name.  The chain is read live (the thread ran
 * on since the sample), so everything read is checked: type pointers are
 * the interpreter's own, sizes bounded, the chain at most the caller's cap
 * long, each frame's last instruction inside its code object's bytecode
 * (so it has started: one being built has not linked its previous yet),
 * the innermost _PyCFrame taken from the sample's stack copy (its
 * current_frame as it was at the sample; 3.13 has none: the innermost
 * activation's own frame must be in the copy as it is now, and its
 * frames are as at the read), the innermost frame the same at the end of
 * the read as at its start, and the number of activations in the chain
 * (entry frames, or shims) must match the _PyEval_EvalFrameDefault
 * activations the unwind found; and since a frame slot read after the
 * sample may hold a function called since at the same depth, each
 * activation's innermost frame must have a pointer into its bytecode in
 * the sample itself (registers, the copy below that activation's CFA),
 * or be replaced by the one kept code object the sample points into,
 * seen running in that slot under that caller before (sym_py_merge).
 * On any doubt the caller gets no Python frame and keeps the native ones.
 * Reads go through the caller's sym_read_fn (process_vm_readv in
 * ptrace/); nothing is injected, nothing stopped.  Leaves to the caller
 * (daemon/writer-python.c) which native frame each group replaces in the
 * stack it stores, and the chunk's locations. */
#define _GNU_SOURCE
#include "python-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 3.11: measured with offsetof() over python3.11-dev's internal headers
 * (Py_BUILD_CORE), 3.11.2 of Debian 12, and the same in the DWARF of
 * pyenv's 3.11.7.  3.12 and 3.13: read from the DWARF of pyenv's 3.12.1
 * and 3.13.0 (docs/notes/python.md says how). */
static const struct py_layout py_layouts[] = {
	{.hex = 0x030b,
		.flags = PY_CFRAME,
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
		.co_code = 184,
		.rt_gil = 360,
		.str_data = 48},
	{.hex = 0x030c,
		.flags = PY_CFRAME | PY_SHIM,
		.rt_interp_head = 40,
		.interp_threads_head = 72,
		.ts_next = 8,
		.ts_cframe = 56,
		.ts_tid = 144,
		.cf_current = 0,
		.cf_previous = 8,
		.fr_code = 0,
		.fr_previous = 8,
		.fr_prev_instr = 56,
		.fr_owner = 70,
		.fr_size = 72,
		.co_firstlineno = 68,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_code = 192,
		.interp_gil = 384,
		.str_data = 40},
	{.hex = 0x030d,
		.flags = PY_SHIM | PY_INSTR_AT,
		.rt_interp_head = 632,
		.interp_threads_head = 7344,
		.ts_next = 8,
		.ts_cframe = 72,
		.ts_tid = 160,
		.fr_code = 0,
		.fr_previous = 8,
		.fr_prev_instr = 56,
		.fr_owner = 70,
		.fr_size = 72,
		.co_firstlineno = 68,
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_code = 200,
		.interp_gil = 16,
		.str_data = 40},
};

#define PY_MAX_THREADS 4096 /* thread states walked to find a TID */
#define PY_MAX_CODE_UNITS (1u << 24)
#define PY_MAX_LINETABLE (1u << 20)
#define PY_MAX_STR 4096
/* The code objects whose names are kept: direct-mapped by address (a
 * collision replaces), and at most PY_CODE_BYTES of names and tables in
 * all (past it a code object is read each time, not kept) */
#define PY_CODES 1024
#define PY_CODE_BYTES (16u << 20)
/* The bytes read from a frame on in one call, the way its chain goes,
 * and how many such windows one sample keeps (py_win) */
#define PY_PAGE 4096u
#define PY_SPAN 4096u
#define PY_WINS 4
#define PY_CSTACK (8u << 20) /* above the sample's sp: its C stack */
/* The frames of one chain walked (frames_walk), and the code objects
 * read in one call */
#define PY_MAX_FRAMES 256
#define PY_CODE_BATCH 32
#define PY_CODE_HDR 256 /* the most of a code object read: its bytecode's offset */

/* One code object's names and location table as read, and the fields of
 * it they were read through: another code object at the same address
 * matches only if it has the same names, table, first line and size.
 * Owns strings and table (one allocation). */
struct py_code {
	uint64_t addr, name, file, linetable;
	/* where a sample last found it running, its evidence in the sample
	 * (sym_py_merge): the frame's slot and its previous frame */
	uint64_t slot, previous;
	int32_t firstline;
	uint32_t size, ntable;
	size_t bytes;		   /* the allocation's */
	char *function, *filename; /* in the allocation, after the table */
	uint8_t *table;
};

/* One process's interpreter.  Owns the cache of code objects; its owner
 * (the writer's session, the dump) frees it with sym_py_free. */
struct sym_py {
	const struct py_layout *l; /* &own, NULL: a version without a layout */
	struct py_layout own;
	bool from_dwarf; /* own's offsets are the interpreter's DWARF's */
	uint64_t runtime, code_type, str_type, bytes_type;
	uint64_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code */
	uint32_t version;	   /* Py_Version: 0x030b02f0 */
	/* the last thread state found, by TID: checked at each use; and
	 * the innermost frame and first shim of its last sample, whose bytes
	 * are read with the thread state (a thread's chain stays about
	 * where it was) */
	struct {
		pid_t tid;
		uint64_t ts, at[2];
	} last[64];
	struct py_code codes[PY_CODES];
	size_t code_bytes; /* held by codes' allocations */
	/* codes' bytecode ranges by address, for a pointer of the sample
	 * into one (code_at); rebuilt when codes changed */
	struct py_range {
		uint64_t lo, hi;
		struct py_code *c;
	} ranges[PY_CODES];
	unsigned nranges;
	bool ranges_stale;
	/* the bytes around the frames read in this sample (frame_rd): the
	 * frames of a chain are neighbours in the thread's data stack (a
	 * caller below its callee) and 3.12's and 3.13's shims on its C
	 * stack (an outer activation's above), so the read of one brings
	 * the next ones.  Valid within one sym_py_stack only: the thread
	 * runs on.  sp: the sample's, to tell the C stack. */
	struct py_win {
		uint64_t base;	 /* the address of b[0] */
		uint64_t lo, hi; /* what was read: [lo, hi) */
		uint8_t b[PY_SPAN];
	} wins[PY_WINS];
	uint64_t sp;
	unsigned nwins; /* windows read in this sample (the last PY_WINS kept) */
};

static bool rd(struct sym_py_reader *r, uint64_t addr, void *buf, size_t len)
{
	return addr && r->read(r->arg, r->tid, addr, buf, len) == (ssize_t)len;
}

/* n reads, all whole, in one system call where the reader can. */
static bool rdv(
	struct sym_py_reader *r, const struct iovec *local, const struct iovec *remote, unsigned n)
{
	size_t want = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!remote[i].iov_base)
			return false;
		want += remote[i].iov_len;
	}
	if (r->readv)
		return r->readv(r->arg, r->tid, local, remote, n) == (ssize_t)want;
	for (unsigned i = 0; i < n; i++)
		if (!rd(r, (uint64_t)(uintptr_t)remote[i].iov_base, local[i].iov_base,
			    local[i].iov_len))
			return false;
	return true;
}

static bool win_has(const struct py_win *w, uint64_t addr, size_t len)
{
	return addr >= w->lo && addr + len >= addr && addr + len <= w->hi;
}

/* One read of a win_read call: [a, b) into w. */
static void win_iov(struct py_win *w, uint64_t a, uint64_t b, struct iovec *local,
	struct iovec *remote, unsigned *m)
{
	local[*m] = (struct iovec){w->b + (a - w->base), b - a};
	remote[*m] = (struct iovec){(void *)(uintptr_t)a, b - a};
	(*m)++;
}

/* Read PY_SPAN bytes from each of the naddrs addresses of addrs (len
 * bytes there, len <= PY_PAGE; at most two) the way its chain goes
 * (up[i]: up, the C stack; else down, ending at the frame's end: the
 * data stack) into the next windows, after the npre reads of pre, all
 * in one call (pre's must be whole): each frame's own page first (the
 * read stops at the first unmapped page), then the rest (below a data
 * stack chunk's start may be unmapped).  false when pre's reads were
 * not whole. */
static bool win_read(struct sym_py *py, struct sym_py_reader *r, const uint64_t *addrs,
	const bool *up, unsigned naddrs, size_t len, const struct iovec *pre_local,
	const struct iovec *pre_remote, unsigned npre)
{
	struct iovec local[5], remote[5];
	struct py_win *ws[2];
	uint64_t own[2][2], rest[2][2];
	unsigned m = npre;
	size_t want = 0;
	ssize_t got;

	if (!r->readv || npre > 1 || naddrs > 2 || len > PY_PAGE)
		return rdv(r, pre_local, pre_remote, npre);
	for (unsigned i = 0; i < npre; i++) {
		local[i] = pre_local[i];
		remote[i] = pre_remote[i];
		want += pre_remote[i].iov_len;
	}
	for (unsigned a = 0; a < naddrs; a++) {
		uint64_t at = addrs[a], end = at + len;
		struct py_win *w;

		ws[a] = NULL;
		if (!at || at < PY_SPAN || at > UINT64_MAX - 2 * PY_SPAN)
			continue;
		w = ws[a] = &py->wins[py->nwins++ % PY_WINS];
		w->lo = w->hi = 0;
		if (up[a]) {
			uint64_t page_end = (end + PY_PAGE - 1) & ~(uint64_t)(PY_PAGE - 1);

			w->base = at;
			own[a][0] = at;
			own[a][1] = TD_MIN(page_end, at + PY_SPAN);
			rest[a][0] = own[a][1];
			rest[a][1] = at + PY_SPAN;
		} else {
			w->base = end - PY_SPAN;
			own[a][0] = TD_MAX(at & ~(uint64_t)(PY_PAGE - 1), w->base);
			own[a][1] = end;
			rest[a][0] = w->base;
			rest[a][1] = own[a][0];
		}
		win_iov(w, own[a][0], own[a][1], local, remote, &m);
	}
	for (unsigned a = 0; a < naddrs; a++)
		if (ws[a] && rest[a][1] > rest[a][0])
			win_iov(ws[a], rest[a][0], rest[a][1], local, remote, &m);
	got = r->readv(r->arg, r->tid, local, remote, m);
	if (got < (ssize_t)want)
		return false;
	got -= (ssize_t)want;
	/* in the order read: the own bytes, then the rest; past the first
	 * short one nothing was read */
	for (unsigned a = 0; a < naddrs; a++) {
		if (!ws[a])
			continue;
		if (got < (ssize_t)(own[a][1] - own[a][0]))
			return true;
		got -= (ssize_t)(own[a][1] - own[a][0]);
		ws[a]->lo = own[a][0];
		ws[a]->hi = own[a][1];
	}
	for (unsigned a = 0; a < naddrs; a++) {
		size_t n = ws[a] ? rest[a][1] - rest[a][0] : 0;

		if (!n)
			continue;
		if (got < (ssize_t)n)
			break;
		got -= (ssize_t)n;
		ws[a]->lo = TD_MIN(ws[a]->lo, rest[a][0]);
		ws[a]->hi = TD_MAX(ws[a]->hi, rest[a][1]);
	}
	return true;
}

/* A frame's bytes (len <= PY_PAGE), from the bytes read earlier in this
 * sample, or a read of PY_SPAN from it the way its chain goes (win_read:
 * up above the sample's sp, on its C stack; else down). */
static bool frame_rd(
	struct sym_py *py, struct sym_py_reader *r, uint64_t addr, void *buf, size_t len)
{
	struct py_win *w;

	bool up = py->sp && addr >= py->sp && addr - py->sp < PY_CSTACK;

	for (unsigned i = 0; i < py->nwins && i < PY_WINS; i++)
		if (win_has(&py->wins[i], addr, len)) {
			memcpy(buf, py->wins[i].b + (addr - py->wins[i].base), len);
			return true;
		}
	if (!addr || !r->readv)
		return rd(r, addr, buf, len);
	if (!win_read(py, r, &addr, &up, 1, len, NULL, NULL, 0))
		return false;
	w = &py->wins[(py->nwins - 1) % PY_WINS];
	if (!win_has(w, addr, len))
		return rd(r, addr, buf, len); /* the span not read whole */
	memcpy(buf, w->b + (addr - w->base), len);
	return true;
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
		if (py_layouts[k].hex == version >> 16) {
			/* the table's, or this build's own where its DWARF
			 * says (a patch release, another configuration) */
			py->own = py_layouts[k];
			py->from_dwarf = !s->opt.no_dwarf &&
					 py_layout_from_dwarf(s->modules[i].mod, &py->own);
			py->l = &py->own;
		}
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
	if (!py)
		return;
	for (unsigned i = 0; i < PY_CODES; i++)
		free(py->codes[i].table);
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

/* tid's PyThreadState, or 0; and in ret_frame what its cframe (or
 * current_frame, 3.13) field held, read with the TID that checks it. */
static uint64_t thread_state(struct sym_py *py, struct sym_py_reader *r, uint64_t *ret_frame)
{
	const struct py_layout *l = py->l;
	unsigned slot = (unsigned)r->tid % TD_ARRAY_SIZE(py->last);
	uint64_t interp, ts;
	unsigned n = 0;

	if (py->last[slot].tid == r->tid) {
		/* both fields in one read: ts_cframe < ts_tid in every layout */
		uint8_t b[256];
		unsigned len = l->ts_tid + 8u - l->ts_cframe;
		struct iovec lo = {b, len},
			     re = {(void *)(uintptr_t)(py->last[slot].ts + l->ts_cframe), len};

		if (len <= sizeof(b) &&
			win_read(py, r, py->last[slot].at, (const bool[2]){false, true}, 2,
				py->l->fr_size, &lo, &re, 1) &&
			u64_at(b, l->ts_tid - l->ts_cframe) == (uint64_t)r->tid) {
			*ret_frame = u64_at(b, 0);
			return py->last[slot].ts;
		}
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
			py->last[slot].at[0] = py->last[slot].at[1] = 0;
			return rd(r, ts + l->ts_cframe, ret_frame, sizeof(*ret_frame)) ? ts : 0;
		}
		ts = next;
	}
	return 0;
}

/* A frame's fields that the walk needs, from its bytes b. */
struct py_hdr {
	uint64_t code, previous, instr;
	bool shim;  /* 3.12 on: an activation's own frame, not Python code */
	bool entry; /* 3.11: the first frame its activation ran */
};

static struct py_hdr hdr_of(const struct py_layout *l, const uint8_t *b)
{
	struct py_hdr h = {
		.code = u64_at(b, l->fr_code),
		.previous = u64_at(b, l->fr_previous),
		.instr = u64_at(b, l->fr_prev_instr),
	};

	if (l->flags & PY_SHIM)
		h.shim = b[l->fr_owner] == PY_OWNED_BY_CSTACK;
	else
		h.entry = b[l->fr_is_entry] != 0;
	return h;
}

/* Has frame h (not a shim) run its first instruction?
 * Until then prev_instr is one unit before the first, and the frame may
 * be one CPython is building in a datastack slot:
 * _PyFrame_InitializeSpecials writes its code before the caller links it
 * (frame->previous), so its previous is still the last occupant's of
 * the slot, a frame of another chain.  Read live, a generator's frame
 * being built under its creator became its first callee's: the callee
 * under the creator, the generator and its activation missing, as many
 * entry frames as before.  An entry frame is no different:
 * _PyEval_EvalFrameDefault sets is_entry, then previous, then runs it.
 * From its first instruction on, previous is the frame's own.  3.12
 * builds frames the same way.  3.13 does too, but its instr_ptr is the
 * first instruction both before and while it runs: there this cannot
 * tell, and only the walk's second read of the innermost frame (a link
 * written since reads differently) is left. */
static bool frame_started(const struct py_layout *l, const struct py_hdr *h)
{
	return h->instr >= h->code + l->co_code;
}

/* Does the frame chain from fr reach outer (the next activation's
 * current frame) right after its first entry frame (3.11), or its
 * activation's shim (3.12)?  Then fr is the current frame of the
 * activation just inside outer's. */
static bool chain_reaches(struct sym_py *py, struct sym_py_reader *r, uint64_t fr, uint64_t outer)
{
	const struct py_layout *l = py->l;

	for (unsigned n = 0; fr && n < 64; n++) {
		uint8_t b[128];
		struct py_hdr h;

		if (l->fr_size > sizeof(b) || !frame_rd(py, r, fr, b, l->fr_size))
			return false;
		h = hdr_of(l, b);
		if (!h.shim && !frame_started(l, &h))
			return false;
		if (h.shim && !n)
			return false;  /* an activation runs a frame at once */
		if (h.entry || h.shim) /* 3.12: the shim's is the outer one's */
			return h.previous == outer;
		fr = h.previous;
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

/* 3.13: no _PyCFrame; the thread state's current_frame (heap) is read
 * live, from fr.  Activations entered since the sample (their shims
 * deeper than the copy) are dropped; the first shim left, the innermost
 * activation's own frame, must be in the sample's copy and read there as
 * it reads now: the same activation, still running (if the thread has
 * returned from it since, the activations will not match the unwind's,
 * and the caller keeps the stack native).  Its frames may have moved on
 * within it since the sample (a call or a return in Python): the chain
 * read is one the program had, a little later. */
static uint64_t current_frame_live(
	struct sym_py *py, struct sym_py_reader *r, const struct td_sample *sample, uint64_t fr)
{
	const struct py_layout *l = py->l;
	uint64_t lo = sample->stack_addr, hi = sample->stack_addr + sample->stack_len, f = fr;

	for (unsigned n = 0; f && n < 256; n++) {
		uint8_t b[128];
		struct py_hdr h;

		if (l->fr_size > sizeof(b) || !frame_rd(py, r, f, b, l->fr_size))
			return 0;
		h = hdr_of(l, b);
		if (!h.shim) {
			f = h.previous;
			continue;
		}
		if (f < lo) {
			/* an activation entered since the sample */
			fr = f = h.previous;
			continue;
		}
		if (f + l->fr_size > hi || fr == f ||
			memcmp(sample->stack + (f - lo), b, l->fr_size))
			return 0;
		return fr;
	}
	return 0;
}

/* The innermost frame at the sample.  3.11, 3.12: from the innermost
 * _PyCFrame in the sample's stack copy, its current_frame as it was
 * then.  The live tstate->cframe may be deeper now (the thread called
 * into Python again since: its previous links lead back into the copy),
 * or shallower (it returned: the activations inside it are found in the
 * copy by their previous links).  cf: what tstate->cframe held. */
static uint64_t sample_frame(
	struct sym_py *py, struct sym_py_reader *r, const struct td_sample *sample, uint64_t cf)
{
	const struct py_layout *l = py->l;
	uint64_t lo = sample->stack_addr, hi = sample->stack_addr + sample->stack_len;

	if ((sample->flags & TD_SAMPLE_REPEAT) && !(sample->flags & TD_SAMPLE_RUNNABLE)) {
		/* no copy: a blocked thread, unchanged since its last one,
		 * whose frames are as they were then */
		uint64_t fr = 0;

		if (!(l->flags & PY_CFRAME))
			return cf;
		return rd(r, cf + l->cf_current, &fr, sizeof(fr)) ? fr : 0;
	}
	if (!(l->flags & PY_CFRAME))
		return current_frame_live(py, r, sample, cf);
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

/* Check frame h against its code object's bytes c and fill f; false on
 * any doubt. */
static bool frame_fill(
	struct sym_py *py, const struct py_hdr *h, const uint8_t *c, struct sym_py_frame *f)
{
	const struct py_layout *l = py->l;
	uint64_t size, first, instr = h->instr;

	if (u64_at(c, 8) != py->code_type)
		return false;
	size = u64_at(c, 16); /* Py_SIZE: code units */
	if (!size || size > PY_MAX_CODE_UNITS)
		return false;
	first = h->code + l->co_code;
	if (!frame_started(l, h) || instr >= first + 2 * size || (instr - first) % 2)
		return false;
	*f = (struct sym_py_frame){
		.code = h->code,
		.lasti = (int32_t)(((int64_t)instr - (int64_t)first) / 2),
		.entry = h->entry,
		.size = (uint32_t)size,
		.name = u64_at(c, l->co_qualname),
		.file = u64_at(c, l->co_filename),
		.linetable = u64_at(c, l->co_linetable),
	};
	memcpy(&f->firstline, c + l->co_firstlineno, sizeof(f->firstline));
	f->key =
		sym_hash(&f->code, 8, sym_hash(&f->name, 16, sym_hash(&f->lasti, 4, f->linetable)));
	return true;
}

static bool same_frame(const struct py_layout *l, const uint8_t *a, const uint8_t *b)
{
	return u64_at(a, l->fr_code) == u64_at(b, l->fr_code) &&
	       u64_at(a, l->fr_previous) == u64_at(b, l->fr_previous);
}

/* The frames from fr outwards into frames (at most cap), shims left out
 * (each marks the frame before it its activation's first).  A read
 * costs mostly its system call: the frames come from the bytes read
 * around them (frame_rd: a chain's frames are neighbours), then their
 * code objects in one call (PY_CODE_BATCH at a time), with the innermost
 * frame again.
 *
 * The innermost frame read again after the code objects must have the
 * same code and previous frame (its last instruction moves on as it
 * runs): the thread runs on while we read, and a frame being written as
 * we read it (3.11 pushes a generator's frame where the innermost
 * callee's was, then moves it into the generator) reads as a torn mix
 * of both, say ledger_d's code under ledger_c.  The count, or -EIO. */
static int frames_walk(struct sym_py *py, struct sym_py_reader *r, uint64_t fr,
	struct sym_py_frame *frames, unsigned cap)
{
	const struct py_layout *l = py->l;
	uint8_t b[128], again[128], first[128], c[PY_CODE_BATCH][PY_CODE_HDR];
	struct iovec local[PY_CODE_BATCH + 1], remote[PY_CODE_BATCH + 1];
	struct py_hdr hs[PY_MAX_FRAMES], h;
	uint64_t at[PY_MAX_FRAMES], where = fr;
	unsigned n = 0, hops = 0, shims = 0;

	cap = cap < PY_MAX_FRAMES ? cap : PY_MAX_FRAMES;
	if (l->fr_size > sizeof(b) || l->co_code > PY_CODE_HDR ||
		!frame_rd(py, r, fr, b, l->fr_size))
		return -EIO;
	memcpy(first, b, l->fr_size);
	for (;;) {
		h = hdr_of(l, b);
		if (++hops > 2 * cap)
			return -EIO; /* a loop, or deeper than we read */
		if (h.shim) {
			if (!n || hs[n - 1].entry)
				return -EIO; /* an activation with no frame */
			if (!shims++)
				py->last[(unsigned)r->tid % TD_ARRAY_SIZE(py->last)].at[1] = where;
			hs[n - 1].entry = true;
		} else {
			if (n == cap)
				return -EIO; /* deeper than we read: keep it native */
			hs[n] = h;
			at[n++] = where;
		}
		if (!h.previous)
			break;
		if (!frame_rd(py, r, h.previous, b, l->fr_size))
			return -EIO;
		where = h.previous;
	}
	if (!h.shim && (l->flags & PY_SHIM))
		return -EIO; /* 3.12 on, the outermost frame has its shim */
	for (unsigned i = 0; i < n; i += PY_CODE_BATCH) {
		unsigned k = n - i < PY_CODE_BATCH ? n - i : PY_CODE_BATCH, m = k;

		for (unsigned j = 0; j < k; j++) {
			local[j] = (struct iovec){c[j], l->co_code};
			remote[j] = (struct iovec){(void *)(uintptr_t)hs[i + j].code, l->co_code};
		}
		if (i + k == n) {
			/* the innermost again, live, after the last code object */
			local[m] = (struct iovec){again, l->fr_size};
			remote[m++] = (struct iovec){(void *)(uintptr_t)fr, l->fr_size};
		}
		if (!rdv(r, local, remote, m))
			return -EIO;
		for (unsigned j = 0; j < k; j++) {
			if (!frame_fill(py, &hs[i + j], c[j], &frames[i + j]))
				return -EIO;
			frames[i + j].addr = at[i + j];
			frames[i + j].previous = hs[i + j].previous;
		}
	}
	return n && same_frame(l, again, first) ? (int)n : -EIO;
}

int sym_py_stack(struct sym_py *py, struct sym_py_reader *r, const struct td_sample *sample,
	struct sym_py_frame *frames, unsigned cap)
{
	uint64_t ts, fr, cf = 0;

	if (!py->l)
		return -ENOTSUP;
	py->nwins = 0; /* the bytes read for the last sample are old */
	py->sp = sample->regs.rsp;
	ts = thread_state(py, r, &cf);
	if (!ts)
		return 0; /* no Python thread state: a native thread */
	fr = sample_frame(py, r, sample, cf);
	if (!fr)
		return 0;
	py->last[(unsigned)r->tid % TD_ARRAY_SIZE(py->last)].at[0] = fr;
	return frames_walk(py, r, fr, frames, cap);
}

/* struct _gil_runtime_state, 3.11 to 3.13: last_holder (a thread
 * state), locked (an int), cond and switch_cond at these offsets from its
 * start */
#define GIL_LAST_HOLDER 8
#define GIL_LOCKED 16
#define GIL_COND 32
#define GIL_SWITCH_COND 120

int sym_py_gil(struct sym_py *py, struct sym_py_reader *r, uint64_t ret_conds[2], pid_t *ret_holder)
{
	const struct py_layout *l = py->l;
	uint64_t interp, gil, holder, tid = 0;
	uint8_t b[GIL_COND];
	int32_t locked;

	if (!l)
		return -ENOTSUP;
	if (l->rt_gil)
		gil = py->runtime + l->rt_gil;
	else if (!rd(r, py->runtime + l->rt_interp_head, &interp, sizeof(interp)) ||
		 !rd(r, interp + l->interp_gil, &gil, sizeof(gil)) || !gil)
		return -EIO;
	if (!rd(r, gil, b, sizeof(b)))
		return -EIO;
	holder = u64_at(b, GIL_LAST_HOLDER);
	memcpy(&locked, b + GIL_LOCKED, sizeof(locked));
	/* last_holder stays when the GIL is let go: only a locked one is held */
	if (locked != 1 || !rd(r, holder + l->ts_tid, &tid, sizeof(tid)) || tid > INT32_MAX)
		tid = 0;
	ret_conds[0] = gil + GIL_COND;
	ret_conds[1] = gil + GIL_SWITCH_COND;
	*ret_holder = (pid_t)tid;
	return 0;
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
	/* state: interned:2 kind:3 compact:1 ascii:1 (3.11 to 3.13) */
	if (!(state >> 5 & 1) || !(state >> 6 & 1) || len >= cap || len > PY_MAX_STR)
		return false;
	if (!rd(r, addr + py->l->str_data, buf, len))
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

/* f's code object as kept, or NULL. */
static struct py_code *code_find(struct sym_py *py, const struct sym_py_frame *f)
{
	struct py_code *c = &py->codes[sym_hash(&f->code, 8, 0) % PY_CODES];

	if (c->bytes && c->addr == f->code && c->name == f->name && c->file == f->file &&
		c->linetable == f->linetable && c->firstline == f->firstline && c->size == f->size)
		return c;
	return NULL;
}

/* Keep f's names and table t (n bytes), within PY_CODE_BYTES. */
static void code_keep(struct sym_py *py, const struct sym_py_frame *f, const struct sym_py_name *nm,
	const uint8_t *t, size_t n)
{
	struct py_code *c = &py->codes[sym_hash(&f->code, 8, 0) % PY_CODES];
	size_t lf = strlen(nm->function) + 1, lfile = strlen(nm->file) + 1, size = n + lf + lfile;
	uint8_t *m;

	if (py->code_bytes - c->bytes + size > PY_CODE_BYTES)
		return;
	m = malloc(size);
	if (!m)
		return;
	py->code_bytes -= c->bytes;
	free(c->table);
	memcpy(m, t, n);
	memcpy(m + n, nm->function, lf);
	memcpy(m + n + lf, nm->file, lfile);
	*c = (struct py_code){.addr = f->code,
		.name = f->name,
		.file = f->file,
		.linetable = f->linetable,
		.firstline = f->firstline,
		.size = f->size,
		.ntable = (uint32_t)n,
		.bytes = size,
		.table = m,
		.function = (char *)m + n,
		.filename = (char *)m + n + lf};
	py->code_bytes += size;
	py->ranges_stale = true;
}

int sym_py_name(struct sym_py *py, struct sym_py_reader *r, const struct sym_py_frame *f,
	struct sym_py_name *ret)
{
	struct py_code *c = code_find(py, f);
	uint8_t h[32], *t;
	uint64_t len;
	int line;

	ret->firstline = f->firstline > 0 ? f->firstline : 0;
	if (c) {
		snprintf(ret->function, sizeof(ret->function), "%s", c->function);
		snprintf(ret->file, sizeof(ret->file), "%s", c->filename);
		line = sym_py_line(c->table, c->ntable, f->firstline, f->lasti);
		ret->line = line > 0 ? line : 0;
		return 0;
	}
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
	if (len && !rd(r, f->linetable + 32, t, len)) {
		free(t);
		return -EIO;
	}
	line = sym_py_line(t, len, f->firstline, f->lasti);
	code_keep(py, f, ret, t, len);
	free(t);
	ret->line = line > 0 ? line : 0;
	return 0;
}

/* The words of a sample that may hold the evaluator's next_instr for an
 * activation: the registers, then the stack copy from the sample's sp up
 * to lim, the activation's CFA (the whole copy where it is not known).
 *
 * The frames are read after the sample, and a caller that has since
 * returned from the sampled function and called another at the same
 * depth has that one's frame in the same datastack slot: its name read
 * there is a sibling's.  Nothing read later tells; the sample does.
 * 3.11 to 3.13 keep the bytecode inside the code object
 * (co_code_adaptive), and the evaluator holds next_instr, a pointer into
 * it, in a register while it runs the frame; across a call into C it is
 * in a callee-saved register (there still, or pushed by a callee below
 * the evaluator's CFA) or spilled in the evaluator's own frame: in the
 * copy either way.  A sibling's bytecode is another object's, which the
 * running code had no pointer into.  Only the bytecode counts, not the
 * code object's header: a pointer to the code object itself is as
 * likely in a caller's frame or a stale slot as the function's own. */
struct py_words {
	const struct td_sample *s;
	uint64_t regs[sizeof(struct user_regs_struct) / 8];
	unsigned reg;
	uint64_t a, lim;
};

static void words_begin(struct py_words *w, const struct td_sample *s, uint64_t lim)
{
	uint64_t end = s->stack_addr + s->stack_len;

	w->s = s;
	memcpy(w->regs, &s->regs, sizeof(w->regs));
	w->reg = 0;
	w->a = (s->stack_addr + 7) & ~7ull;
	w->lim = lim > end || lim <= s->stack_addr ? end : lim;
}

static bool words_next(struct py_words *w, uint64_t *ret)
{
	if (w->reg < TD_ARRAY_SIZE(w->regs)) {
		*ret = w->regs[w->reg++];
		return true;
	}
	if (w->a + 8 > w->lim)
		return false;
	*ret = u64_at(w->s->stack, (unsigned)(w->a - w->s->stack_addr));
	w->a += 8;
	return true;
}

/* Does a word of the sample (py_words, up to lim) point into f's
 * bytecode, [its first code unit, its end]? */
static bool sample_points_into(const struct td_sample *sample, uint64_t lim,
	const struct py_layout *l, const struct sym_py_frame *f)
{
	uint64_t lo = f->code + l->co_code, hi = lo + 2ull * f->size, v;
	struct py_words w;

	words_begin(&w, sample, lim);
	while (words_next(&w, &v))
		if (v >= lo && v <= hi)
			return true;
	return false;
}

static int range_cmp(const void *a, const void *b)
{
	const struct py_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The kept code object whose bytecode holds v, or NULL. */
static struct py_code *code_at(struct sym_py *py, uint64_t v)
{
	unsigned lo = 0, hi;

	if (py->ranges_stale) {
		py->nranges = 0;
		for (unsigned i = 0; i < PY_CODES; i++) {
			struct py_code *c = &py->codes[i];

			if (c->bytes)
				py->ranges[py->nranges++] =
					(struct py_range){c->addr + py->l->co_code,
						c->addr + py->l->co_code + 2ull * c->size, c};
		}
		qsort(py->ranges, py->nranges, sizeof(py->ranges[0]), range_cmp);
		py->ranges_stale = false;
	}
	hi = py->nranges;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (v < py->ranges[mid].lo)
			hi = mid;
		else if (v > py->ranges[mid].hi)
			lo = mid + 1;
		else
			return py->ranges[mid].c;
	}
	return NULL;
}

/* The frame the sample ran where the slot now holds another (frames[0],
 * whose group is frames[0..group)): the one kept code object, none of
 * the group's outer frames' (their own next_instr, saved), whose bytecode
 * a word of the sample points into, read again to be still that code
 * object.  true with frames[0] replaced; false when there is none, or
 * more than one: then the sample is not named. */
static bool frame_from_sample(struct sym_py *py, struct sym_py_reader *r,
	const struct td_sample *sample, uint64_t lim, struct sym_py_frame *frames, unsigned group)
{
	const struct py_layout *l = py->l;
	struct py_code *found = NULL;
	uint64_t v, at = 0;
	struct py_words w;
	struct sym_py_frame f;
	struct py_hdr h;
	uint8_t c[256];

	words_begin(&w, sample, lim);
	while (words_next(&w, &v)) {
		struct py_code *k = code_at(py, v);
		bool outer = false;

		for (unsigned g = 1; k && g < group; g++)
			outer |= frames[g].code == k->addr;
		if (!k || outer || k == found)
			continue;
		if (found)
			return false; /* two functions: which one ran? */
		found = k;
		at = v;
	}
	if (!found || l->co_code > sizeof(c) || !rd(r, found->addr, c, l->co_code))
		return false;
	/* next_instr is the instruction after the one running */
	h = (struct py_hdr){.code = found->addr,
		.instr = at - 2 >= found->addr + l->co_code ? at - 2 : at,
		.entry = frames[0].entry};
	if (!frame_fill(py, &h, c, &f) || code_find(py, &f) != found)
		return false; /* freed, and something else there now */
	/* the chain outwards is the slot's now: the sampled frame's only if
	 * that code ran in this slot under this caller before (not a
	 * generator's frame, which is in the generator; not one called from
	 * elsewhere) */
	if (found->slot != frames[0].addr || found->previous != frames[0].previous)
		return false;
	f.addr = frames[0].addr;
	f.previous = frames[0].previous;
	frames[0] = f;
	return true;
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
	/* each activation's innermost frame must be the one the sample ran
	 * (the others of its group have a callee in it, whose previous they
	 * are).  A blocked thread's repeat has no copy to check: it had not
	 * run since its last copy (it may have by now: read as before; the
	 * writer does not ask, it keeps the frames read with that copy) */
	if (sample->stack_len || !(sample->flags & TD_SAMPLE_REPEAT))
		for (unsigned g = 0; g < k; g++) {
			unsigned i = native[g], end = g;
			uint64_t lim = i + 1 < u->n ? u->sp[i + 1] : 0;

			if (g && !frames[g - 1].entry)
				continue;
			if (sample_points_into(sample, lim, py->l, &frames[g])) {
				struct py_code *c = code_find(py, &frames[g]);

				if (c) {
					c->slot = frames[g].addr;
					c->previous = frames[g].previous;
				}
				continue;
			}
			while (end < k && !frames[end].entry)
				end++;
			/* the innermost: the sample's own frame, if it says */
			if (g || !frame_from_sample(py, r, sample, lim, frames, end + 1))
				return -EIO;
		}
	return (int)k;
}
