/* SPDX-License-Identifier: GPL-2.0-or-later */
/* symbolize/python.c's reading of a frame chain that changes under it
 * (issue 34: a torn read leaves the sample native, never a wrong name),
 * on made-up frames: Debian's python3.11 runs test/fixtures/fx_python.py
 * (FX_PYTHON=addrs) for its symbols and its Py_Version; a reader serves
 * the thread state, frames and code objects from a buffer here, laid out
 * as CPython 3.11's headers do (Include/internal/pycore_frame.h,
 * pycore_code.h, cpython/pystate.h), and the sample's stack copy holds the
 * evaluator's _PyCFrames.  The state is the one the record_python test
 * caught: a generator's frame being built under its creator (ledger_c),
 * read after the datastack slot became its first callee's (ledger_d) while
 * CPython had written the callee's code but not yet linked it: previous
 * still the creator.  Skipped without /usr/bin/python3 3.11. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/sample.h"
#include "../../common/td.h"
#include "../../ptrace/ptrace.h"
#include "../../symbolize/symbolize.h"
#include "../helpers.h"

TestSuite(python_torn, .timeout = 60);

#define PYTHON "/usr/bin/python3"
#define SCRIPT TD_SOURCE_DIR "/test/fixtures/fx_python.py"

/* the made-up memory: not mapped in the fixture (its heap and libraries
 * are far from it), served by fake_read */
#define FAKE 0x100000000000ull
#define INTERP (FAKE + 0x000)
#define TSTATE (FAKE + 0x100)
#define CODE_D (FAKE + 0x1000)
#define CODE_C (FAKE + 0x1200)
#define CODE_B (FAKE + 0x1400)
#define CODE_E (FAKE + 0x1600) /* a sibling of ledger_d's: ledger_e */
#define FR_X (FAKE + 0x2000)   /* the slot: ledger_d's frame being built */
#define FR_L (FAKE + 0x2100)   /* ledger_c, an entry frame (called by map) */
#define FR_B (FAKE + 0x2200)   /* ledger_b, the outer activation's */
#define STACK 0x7ff000000000ull
#define STACK_LEN 0x1000u

/* CPython 3.11's offsets (x86-64) */
enum {
	RT_INTERP_HEAD = 40,
	INTERP_THREADS = 16,
	TS_NEXT = 8,
	TS_CFRAME = 56,
	TS_TID = 160,
	CF_CURRENT = 8,
	CF_PREVIOUS = 16,
	FR_CODE = 32,
	FR_PREVIOUS = 48,
	FR_PREV_INSTR = 56,
	FR_IS_ENTRY = 68,
	CO_CODE = 184,
};

struct fake {
	pid_t pid;
	uint64_t runtime;
	uint8_t mem[0x3000];
};

static ssize_t fake_read(void *arg, pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = arg;
	uint64_t interp = INTERP;

	if (addr >= FAKE && addr + len <= FAKE + sizeof(f->mem)) {
		memcpy(buf, f->mem + (addr - FAKE), len);
		return (ssize_t)len;
	}
	if (addr == f->runtime + RT_INTERP_HEAD && len == sizeof(interp)) {
		memcpy(buf, &interp, len);
		return (ssize_t)len;
	}
	/* Py_Version, the symbols' own */
	return pt_read_memory(tid, addr, buf, len);
}

static void put(uint8_t *base, uint64_t at, uint64_t v)
{
	memcpy(base + at, &v, sizeof(v));
}

static void code_object(struct fake *f, uint64_t code, uint64_t code_type)
{
	put(f->mem, code - FAKE + 8, code_type); /* ob_type */
	put(f->mem, code - FAKE + 16, 16);	 /* Py_SIZE: 16 code units */
}

static void frame(
	struct fake *f, uint64_t fr, uint64_t code, int lasti, uint64_t previous, bool entry)
{
	put(f->mem, fr - FAKE + FR_CODE, code);
	put(f->mem, fr - FAKE + FR_PREVIOUS, previous);
	put(f->mem, fr - FAKE + FR_PREV_INSTR, code + CO_CODE + 2 * (int64_t)lasti);
	f->mem[fr - FAKE + FR_IS_ENTRY] = entry;
}

/* Two activations at the sample: the outer one (ledger_b's frame
 * current, map called from it) and the inner one (ledger_c's, its
 * current frame the slot FR_X). */
static void fake_state(struct fake *f, struct td_sample *s, uint64_t code_type)
{
	uint64_t cf1 = STACK + 0x100, cf0 = STACK + 0x400;

	put(f->mem, INTERP - FAKE + INTERP_THREADS, TSTATE);
	put(f->mem, TSTATE - FAKE + TS_NEXT, 0);
	put(f->mem, TSTATE - FAKE + TS_CFRAME, cf1);
	put(f->mem, TSTATE - FAKE + TS_TID, (uint64_t)f->pid);
	code_object(f, CODE_D, code_type);
	code_object(f, CODE_C, code_type);
	code_object(f, CODE_B, code_type);
	code_object(f, CODE_E, code_type);
	frame(f, FR_L, CODE_C, 3, FR_B, true);
	frame(f, FR_B, CODE_B, 1, 0, true);
	s->pid = s->tid = f->pid;
	s->stack_addr = STACK;
	s->stack_len = STACK_LEN;
	put(s->stack, cf1 - STACK + CF_CURRENT, FR_X);
	put(s->stack, cf1 - STACK + CF_PREVIOUS, cf0);
	put(s->stack, cf0 - STACK + CF_CURRENT, FR_B);
	put(s->stack, cf0 - STACK + CF_PREVIOUS, 0);
	/* the outer activation's next_instr (ledger_b's, one unit past its
	 * last), spilled in its own frame [0x200, 0x600) */
	put(s->stack, 0x300, CODE_B + CO_CODE + 2 * 2);
}

/* The unwind: the inner activation, map, the outer one, main; each
 * frame's sp (the inner activation's CFA is 0x180: cf1 is its local). */
static void fake_unwind(struct sym_unwound *u, uint64_t eval)
{
	static const uint64_t sp[] = {STACK, STACK + 0x180, STACK + 0x200, STACK + 0x600};

	u->pc[0] = eval + 0x20;
	u->activation[0] = true;
	u->pc[1] = 0x401000;
	u->pc[2] = eval + 0x40;
	u->pc[3] = 0x401000;
	memcpy(u->sp, sp, sizeof(sp));
	u->n = 4;
	u->end = SYM_END_OUTERMOST;
}

/* Debian's python3 (3.11) started listing its addresses (skipped where
 * it is not there): a fake process of it in *f, whose reads r serves, a
 * session and its Python reader over it, a sample *ret_s with the fake
 * thread state and an unwind *u of two evaluator activations. */
static void torn_open(struct fake *f, struct sym_unwound *u, struct sym_py_reader *r,
	struct td_sample **ret_s, struct sym_session **ss, struct sym_cache **c,
	struct sym_py **py, char *text, size_t len)
{
	struct sym_options opt = {0};
	uint64_t code_type;

	need_python311(PYTHON);
	setenv("FX_PYTHON", "addrs", 1);
	f->pid = fx_start_listing(PYTHON, SCRIPT, text, len);
	f->runtime = fx_listed_addr(text, "_PyRuntime");
	code_type = fx_listed_addr(text, "PyCode_Type");
	*r = (struct sym_py_reader){.read = fake_read, .arg = f, .tid = f->pid};
	cr_assert_eq(sym_cache_new(c), 0);
	cr_assert_eq(sym_session_new(f->pid, &opt, *c, ss), 0);
	cr_assert_eq(sym_py_open(*ss, r, py), 0, "python3.11's symbols not found");
	*ret_s = calloc(1, td_sample_size(STACK_LEN));
	cr_assert_not_null(*ret_s);
	fake_state(f, *ret_s, code_type);
	fake_unwind(u, fx_listed_addr(text, "_PyEval_EvalFrameDefault"));
}

static void torn_close(struct fake *f, struct td_sample *s, struct sym_session *ss,
	struct sym_cache *c, struct sym_py *py)
{
	free(s);
	sym_py_free(py);
	sym_session_free(ss);
	sym_cache_free(c);
	fx_stop(f->pid);
}

Test(python_torn, a_frame_not_yet_linked_leaves_the_sample_native)
{
	static struct sym_unwound u;
	static struct fake f;
	struct sym_py_frame frames[8];
	uint16_t native[8];
	struct sym_py_reader r;
	struct td_sample *s;
	struct sym_session *ss;
	struct sym_cache *c;
	struct sym_py *py;
	char text[1024];
	int n;

	torn_open(&f, &u, &r, &s, &ss, &c, &py, text, sizeof(text));
	/* the evaluator runs ledger_d: its next_instr in a register */
	s->regs.r12 = CODE_D + CO_CODE + 2;

	/* built, code written, not linked: previous is still the slot's
	 * last occupant's (ledger_c, the generator's creator).  The entry
	 * frames match the activations: only the frame itself tells */
	frame(&f, FR_X, CODE_D, -1, FR_L, false);
	n = sym_py_merge(py, &r, s, &u, frames, native, 8);
	cr_expect_lt(n, 0, "%d frames from a frame not yet linked: ledger_d under ledger_c", n);

	/* the same chain once the frame ran its first instruction (its
	 * previous written, by then): read, ledger_d ledger_c | ledger_b */
	frame(&f, FR_X, CODE_D, 0, FR_L, false);
	n = sym_py_merge(py, &r, s, &u, frames, native, 8);
	cr_assert_eq(n, 3);
	cr_expect(frames[0].code == CODE_D && frames[1].code == CODE_C && frames[2].code == CODE_B);
	cr_expect(native[0] == 0 && native[1] == 0 && native[2] == 2);

	torn_close(&f, s, ss, c, py);
}

/* A sibling in the sampled frame's slot: at the sample the evaluator ran
 * ledger_e (its next_instr in a register), which has since returned, and
 * ledger_c has called ledger_d in the same datastack slot.  The chain
 * reads whole and right but for the innermost name: only the sample
 * tells, and it says ledger_e, whose code object tracerd has not read
 * (so it cannot name it): native.  The same with ledger_d's next_instr
 * on the stack above the inner activation's CFA (the outer one's words,
 * or stale) is no evidence either. */
Test(python_torn, a_sibling_in_the_sampled_slot_leaves_the_sample_native)
{
	static struct sym_unwound u;
	static struct fake f;
	struct sym_py_frame frames[8];
	uint16_t native[8];
	struct sym_py_reader r;
	struct td_sample *s;
	struct sym_session *ss;
	struct sym_cache *c;
	struct sym_py *py;
	char text[1024];
	int n;

	torn_open(&f, &u, &r, &s, &ss, &c, &py, text, sizeof(text));
	frame(&f, FR_X, CODE_D, 4, FR_L, false);

	s->regs.r12 = CODE_E + CO_CODE + 6;
	n = sym_py_merge(py, &r, s, &u, frames, native, 8);
	cr_expect_lt(n, 0, "%d frames: ledger_d named where the sample ran ledger_e", n);

	s->regs.r12 = 0;
	put(s->stack, 0x1f0, CODE_D + CO_CODE + 10);
	n = sym_py_merge(py, &r, s, &u, frames, native, 8);
	cr_expect_lt(n, 0, "%d frames: ledger_d's bytecode outside its activation is evidence", n);

	/* ledger_d's next_instr pushed by a callee below the CFA: named */
	put(s->stack, 0x40, CODE_D + CO_CODE + 10);
	n = sym_py_merge(py, &r, s, &u, frames, native, 8);
	cr_expect_eq(n, 3);

	torn_close(&f, s, ss, c, py);
}

/* A str of the fake memory (compact ASCII, 3.11: its characters at +48). */
static void fake_str(struct fake *f, uint64_t at, uint64_t str_type, const char *text)
{
	put(f->mem, at - FAKE + 8, str_type);
	put(f->mem, at - FAKE + 16, strlen(text));
	put(f->mem, at - FAKE + 32, 0x60); /* compact, ascii */
	memcpy(f->mem + (at - FAKE) + 48, text, strlen(text));
}

/* The sibling named from the sample: ledger_e ran in the slot under
 * ledger_c before (an earlier sample's evidence held there), and its
 * code object's names were kept.  Now the sample points into ledger_e's
 * bytecode while the slot holds ledger_d: ledger_e is named, at the
 * instruction before the pointer.  Not where the sample points into two
 * kept functions, nor where the slot is another (one ledger_e never ran
 * in). */
Test(python_torn, a_sibling_is_named_from_the_sample_where_it_ran_before)
{
	static struct sym_unwound u;
	static struct fake f;
	struct sym_py_frame frames[8];
	struct sym_py_name nm;
	uint16_t native[8];
	struct sym_py_reader r;
	struct td_sample *s;
	struct sym_session *ss;
	struct sym_cache *c;
	struct sym_py *py;
	uint64_t str_type, bytes_type;
	const uint64_t name_e = FAKE + 0x2400, file = FAKE + 0x2480, table = FAKE + 0x2500,
		       fr_y = FAKE + 0x2600;
	char text[1024];
	int n;

	torn_open(&f, &u, &r, &s, &ss, &c, &py, text, sizeof(text));
	str_type = fx_listed_addr(text, "PyUnicode_Type");
	bytes_type = fx_listed_addr(text, "PyBytes_Type");
	/* ledger_e's names and line table: 16 code units, all line 7 */
	fake_str(&f, name_e, str_type, "ledger_e");
	fake_str(&f, file, str_type, "fx.py");
	put(f.mem, table - FAKE + 8, bytes_type);
	put(f.mem, table - FAKE + 16, 6);
	memcpy(f.mem + (table - FAKE) + 32, "\xd7\x00\x00\xd7\x00\x00", 6);
	put(f.mem, CODE_E - FAKE + 128, name_e); /* co_qualname */
	put(f.mem, CODE_E - FAKE + 112, file);	 /* co_filename */
	put(f.mem, CODE_E - FAKE + 136, table);	 /* co_linetable */
	put(f.mem, CODE_E - FAKE + 72, 7);	 /* co_firstlineno */
	/* ledger_b's the same (its own, but read through the same strings) */
	put(f.mem, CODE_B - FAKE + 128, name_e);
	put(f.mem, CODE_B - FAKE + 112, file);
	put(f.mem, CODE_B - FAKE + 136, table);
	put(f.mem, CODE_B - FAKE + 72, 3);

	/* ledger_e runs in the slot: named (kept), then seen there */
	frame(&f, FR_X, CODE_E, 2, FR_L, false);
	s->regs.r12 = CODE_E + CO_CODE + 6;
	cr_assert_eq(sym_py_merge(py, &r, s, &u, frames, native, 8), 3);
	cr_assert_eq(sym_py_name(py, &r, &frames[0], &nm), 0);
	cr_expect_str_eq(nm.function, "ledger_e");
	cr_assert_eq(sym_py_merge(py, &r, s, &u, frames, native, 8), 3);

	/* it returned; ledger_c called ledger_d in its slot since */
	frame(&f, FR_X, CODE_D, 4, FR_L, false);
	s->regs.r12 = CODE_E + CO_CODE + 10;
	n = sym_py_merge(py, &r, s, &u, frames, native, 8);
	cr_assert_eq(n, 3, "the sample's ledger_e not named");
	cr_expect_eq(frames[0].code, CODE_E, "%#llx named, not ledger_e's",
		(unsigned long long)frames[0].code);
	cr_expect_eq(frames[0].lasti, 4); /* next_instr 5 units in */
	cr_expect(frames[1].code == CODE_C && frames[2].code == CODE_B);

	/* a word into ledger_b's bytecode too (kept as well): which ran? */
	cr_assert_eq(sym_py_name(py, &r, &frames[2], &nm), 0);
	put(s->stack, 0x40, CODE_B + CO_CODE + 4);
	n = sym_py_merge(py, &r, s, &u, frames, native, 8);
	cr_expect_lt(n, 0, "%d frames: named where the sample points into two functions", n);
	put(s->stack, 0x40, 0);

	/* the same sample in a slot ledger_e never ran in */
	frame(&f, fr_y, CODE_D, 4, FR_L, false);
	put(s->stack, 0x100 + CF_CURRENT, fr_y);
	n = sym_py_merge(py, &r, s, &u, frames, native, 8);
	cr_expect_lt(n, 0, "%d frames: ledger_e named in a slot it never ran in", n);

	torn_close(&f, s, ss, c, py);
}
