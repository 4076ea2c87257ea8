/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to python.c and python-dwarf.c: the offsets of one CPython
 * version, from python.c's table or the interpreter's DWARF. */
#ifndef TD_PYTHON_INTERNAL_H
#define TD_PYTHON_INTERNAL_H

#include "symbolize-internal.h"

/* Offsets of one CPython version (x86-64). */
struct py_layout {
	uint32_t hex; /* PY_VERSION_HEX >> 16: 0x030b for 3.11 */
	/* how the version keeps its chain:
	 *   PY_CFRAME   3.11, 3.12: tstate->cframe, a _PyCFrame that is a
	 *               local of the innermost _PyEval_EvalFrameDefault
	 *               activation (on the native stack, in the copy);
	 *               3.13: tstate->current_frame, on the heap
	 *   PY_SHIM     3.12, 3.13: each activation pushes a frame of its own
	 *               (owner FRAME_OWNED_BY_CSTACK, on the native stack)
	 *               under the first frame it runs; 3.11: that frame has
	 *               is_entry set
	 *   PY_INSTR_AT 3.13: instr_ptr is the instruction running (or about
	 *               to); 3.11, 3.12: prev_instr, the one before the next */
	uint8_t flags;
	/* _PyRuntimeState.interpreters.head, PyInterpreterState.threads.head */
	uint16_t rt_interp_head, interp_threads_head;
	/* PyThreadState: next, cframe (or current_frame), native_thread_id
	 * (the TID) */
	uint16_t ts_next, ts_cframe, ts_tid;
	/* _PyCFrame: current_frame, previous */
	uint16_t cf_current, cf_previous;
	/* _PyInterpreterFrame: f_code (f_executable), previous, prev_instr
	 * (instr_ptr), is_entry (3.11), owner; the bytes read of one */
	uint16_t fr_code, fr_previous, fr_prev_instr, fr_is_entry, fr_owner, fr_size;
	/* PyCodeObject: firstlineno, filename, name, qualname, linetable,
	 * code_adaptive (the bytecode, inline); Py_SIZE is its length in code
	 * units */
	uint16_t co_firstlineno, co_filename, co_name, co_qualname, co_linetable, co_code;
	/* the GIL (struct _gil_runtime_state): 3.11 at _PyRuntime + rt_gil;
	 * 3.12 on, per interpreter, at *(interp + interp_gil) */
	uint16_t rt_gil, interp_gil;
	/* a compact ASCII str's characters (3.12 dropped its wstr) */
	uint16_t str_data;
};

#define PY_CFRAME 1u
#define PY_SHIM 2u
#define PY_INSTR_AT 4u
#define PY_OWNED_BY_CSTACK 3 /* _PyInterpreterFrame.owner of a shim */

/* Fill what of l the interpreter's DWARF in mod gives (the table's
 * values stay for what it does not): true if every field it should give
 * was found.  The version's shape (flags) is the table's. */
bool py_layout_from_dwarf(Dwfl_Module *mod, struct py_layout *l);

#endif
