/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CPython's structure offsets from the interpreter's own DWARF, where it
 * has some (pyenv's builds, libpython built with -g): the structures by
 * tag name among the compilation units' top-level DIEs, their members by
 * path ("interpreters.head"), through anonymous unions.  A patch release
 * or another build configuration whose offsets differ from python.c's
 * table is read right.
 *
 * Guarantees: all or nothing (a field it should give and cannot leaves
 * the table's layout whole), bounded work (at most PY_DWARF_CUS units),
 * and offsets that fit what python.c's readers hold.  Leaves to python.c
 * the version's shape (its flags) and the table. */
#define _GNU_SOURCE
#include "python-internal.h"

#include <dwarf.h>
#include <string.h>

/* A structure of the interpreter's DWARF, by tag name. */
struct py_type {
	const char *name;
	Dwarf_Die die;
	bool found;
};

enum { T_RUNTIME, T_INTERP, T_TSTATE, T_CFRAME, T_FRAME, T_CODE, T_GIL, T_NTYPES };

/* Through typedefs and qualifiers to the type of die's DW_AT_type. */
static bool type_of(Dwarf_Die *die, Dwarf_Die *ret)
{
	Dwarf_Attribute a;
	Dwarf_Die t = *die;

	for (unsigned n = 0; n < 16; n++) {
		if (!dwarf_attr_integrate(&t, DW_AT_type, &a) || !dwarf_formref_die(&a, ret))
			return false;
		switch (dwarf_tag(ret)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
			t = *ret;
			continue;
		default:
			return true;
		}
	}
	return false;
}

/* The offset of member path ("interpreters.head") in structure st, or -1.
 * Members of an anonymous union or structure are looked into. */
static long member_off(Dwarf_Die *st, const char *path)
{
	const char *dot = strchr(path, '.');
	size_t len = dot ? (size_t)(dot - path) : strlen(path);
	Dwarf_Die m;

	if (dwarf_child(st, &m) != 0)
		return -1;
	do {
		const char *name = dwarf_diename(&m);
		Dwarf_Attribute a;
		Dwarf_Word off = 0;
		Dwarf_Die t;
		long inner;

		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		if (dwarf_attr(&m, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &off))
			return -1;
		if (!name) {
			/* an anonymous union: its members are st's */
			if (type_of(&m, &t) && (inner = member_off(&t, path)) >= 0)
				return (long)off + inner;
			continue;
		}
		if (strlen(name) != len || strncmp(name, path, len))
			continue;
		if (!dot)
			return (long)off;
		if (!type_of(&m, &t) || (inner = member_off(&t, dot + 1)) < 0)
			return -1;
		return (long)off + inner;
	} while (dwarf_siblingof(&m, &m) == 0);
	return -1;
}

/* Find the structures of types in the DWARF's compilation units (their
 * definitions, not declarations); at most PY_DWARF_CUS units looked at. */
#define PY_DWARF_CUS 4096
static void types_find(Dwarf *dw, struct py_type *types, unsigned n)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	unsigned left = n, cus = 0;

	while (left && cus++ < PY_DWARF_CUS &&
		dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &d) == 0) {
			do {
				const char *name;
				Dwarf_Attribute a;

				if (dwarf_tag(&d) != DW_TAG_structure_type ||
					dwarf_attr(&d, DW_AT_declaration, &a) ||
					!(name = dwarf_diename(&d)))
					continue;
				for (unsigned k = 0; k < n; k++)
					if (!types[k].found && !strcmp(name, types[k].name)) {
						types[k].die = d;
						types[k].found = true;
						left--;
					}
			} while (left && dwarf_siblingof(&d, &d) == 0);
		}
		off = next;
	}
}

bool py_layout_from_dwarf(Dwfl_Module *mod, struct py_layout *l)
{
	struct py_type types[T_NTYPES] = {
		[T_RUNTIME] = {"pyruntimestate"},
		[T_INTERP] = {"_is"},
		[T_TSTATE] = {"_ts"},
		[T_CFRAME] = {"_PyCFrame"},
		[T_FRAME] = {"_PyInterpreterFrame"},
		[T_CODE] = {"PyCodeObject"},
		[T_GIL] = {"_gil_runtime_state"},
	};
	struct py_layout d = *l;
	struct {
		int type;
		const char *path;
		uint16_t *field;
		bool need;
	} f[] = {
		{T_RUNTIME, "interpreters.head", &d.rt_interp_head, true},
		{T_INTERP, "threads.head", &d.interp_threads_head, true},
		{T_TSTATE, "next", &d.ts_next, true},
		{T_TSTATE, (l->flags & PY_CFRAME) ? "cframe" : "current_frame", &d.ts_cframe, true},
		{T_TSTATE, "native_thread_id", &d.ts_tid, true},
		{T_CFRAME, "current_frame", &d.cf_current, (l->flags & PY_CFRAME) != 0},
		{T_CFRAME, "previous", &d.cf_previous, (l->flags & PY_CFRAME) != 0},
		{T_FRAME, l->hex >= 0x030d ? "f_executable" : "f_code", &d.fr_code, true},
		{T_FRAME, "previous", &d.fr_previous, true},
		{T_FRAME, (l->flags & PY_INSTR_AT) ? "instr_ptr" : "prev_instr", &d.fr_prev_instr,
			true},
		{T_FRAME, "is_entry", &d.fr_is_entry, !(l->flags & PY_SHIM)},
		{T_FRAME, "owner", &d.fr_owner, true},
		{T_FRAME, "localsplus", &d.fr_size, true},
		{T_CODE, "co_firstlineno", &d.co_firstlineno, true},
		{T_CODE, "co_filename", &d.co_filename, true},
		{T_CODE, "co_name", &d.co_name, true},
		{T_CODE, "co_qualname", &d.co_qualname, true},
		{T_CODE, "co_linetable", &d.co_linetable, true},
		{T_CODE, "co_code_adaptive", &d.co_code, true},
		{T_RUNTIME, "ceval.gil", &d.rt_gil, !l->interp_gil},
		{T_INTERP, "ceval.gil", &d.interp_gil, l->interp_gil != 0},
	};
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(mod, &bias);

	if (!dw)
		return false;
	types_find(dw, types, T_NTYPES);
	for (unsigned i = 0; i < TD_ARRAY_SIZE(f); i++) {
		long off;

		if (!f[i].need)
			continue;
		off = types[f[i].type].found ? member_off(&types[f[i].type].die, f[i].path) : -1;
		if (off < 0 || off > UINT16_MAX)
			return false;
		*f[i].field = (uint16_t)off;
	}
	/* fields read in one go must fit what the readers hold */
	if (d.fr_size > 128 || d.co_code > 256 || d.ts_tid + 8u - d.ts_cframe > 256 ||
		d.ts_tid < d.ts_cframe)
		return false;
	*l = d;
	return true;
}
