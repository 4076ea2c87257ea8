/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Naming a pc (sym_session_symbolize): its inline chain, innermost
 * first, from one walk of its unit's DIEs, ending with the function that
 * physically holds it.  A function is named by its DWARF linkage name,
 * demangled, else its qualified DWARF name, else its ELF symbol (from one
 * table per binary, symtab.c, shared through the cache), else its place
 * in the module (MODULE+0xSTART); file and line come from the line table
 * and, for the callers of inlined code, from the inlined calls' sites.
 *
 * Guarantees: a pc's answer is worked out once and kept in the cache by
 * module and address until the cache is flushed; every string is the
 * cache's.  A new pc costs a binary search of its unit's functions (each
 * unit's indexed once per session, bounded) and a walk of the one
 * function holding it, not of the whole unit; a pc asked only whether it
 * is in a module (sym_session_mapped) reads no DWARF.
 *
 * Left to others: the session and its modules (session.c), demangling and
 * clone folding (demangle.c), the symbol tables (symtab.c) and keeping
 * them on disk (debugcache.c). */
#define _GNU_SOURCE
#include "symbolize-internal.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"

/* A table of fewer symbols is built (under about 2 ms) as fast as a file
 * is found, mapped and checked: it is not kept on disk. */
#define SYM_TABLE_STORE_MIN 2048

/* m's symbol table, kept by the cache: the one the debuginfo cache holds
 * for its build-id and symbols, else one built (and stored there).  A
 * clang++ run spends 17 ms building libLLVM's and libclang-cpp's. */
static const struct sym_table *table_of(struct sym_session *s, struct sym_module *m)
{
	const unsigned char *bid;
	struct sym_table *t = NULL;
	uint64_t nsyms = 0, fg = 0;
	GElf_Addr vaddr;
	int len = 0;

	if (s->opt.cache_dir && m->build_id && sym_table_source(m->mod, &nsyms, &fg) == 0 &&
		nsyms >= SYM_TABLE_STORE_MIN)
		len = dwfl_module_build_id(m->mod, &bid, &vaddr);
	if (len > 0 && sym_debugcache_table(s->opt.cache_dir, bid, (size_t)len, nsyms, fg,
			       &s->dstats, &t) == 0)
		return sym_cache_table_add(s->cache, m->key, t);
	if (sym_table_build(m->mod, &t) < 0)
		return NULL;
	if (len > 0)
		sym_debugcache_table_store(s->opt.cache_dir, bid, (size_t)len, nsyms, fg, t,
			&s->dstats);
	return sym_cache_table_add(s->cache, m->key, t);
}

/* The raw name (with any @VERSION) of the ELF symbol holding addr, as
 * dwfl_module_addrinfo() gives it.  From the module's symbol table, built
 * on its first lookup and shared through the cache with every session
 * mapping the same binary: elfutils' own lookup reads every symbol of the
 * module on every call.  That lookup stays for a module denied a table
 * (over the tables' budget, out of memory). */
const char *sym_symbol_at(struct sym_session *s, struct sym_module *m, uint64_t addr)
{
	GElf_Off off;
	GElf_Sym sym;

	if (!m->symtab_tried && m->has_elf) {
		m->symtab_tried = true;
		m->symtab = sym_cache_table(s->cache, m->key);
		if (!m->symtab && sym_cache_table_room(s->cache))
			m->symtab = table_of(s, m);
	}
	if (m->symtab)
		return sym_table_lookup(m->symtab, addr - m->bias);
	return dwfl_module_addrinfo(m->mod, addr, &off, &sym, NULL, NULL, NULL);
}

/* The DIE that carries the declaration: inlined and out-of-line instances
 * point to their abstract origin, definitions to their specification. */
static Dwarf_Die decl_die(Dwarf_Die *die)
{
	Dwarf_Die d = *die, next;
	Dwarf_Attribute a;

	for (int i = 0; i < 8; i++) {
		if (dwarf_attr(&d, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &next))
			d = next;
		else if (dwarf_attr(&d, DW_AT_specification, &a) && dwarf_formref_die(&a, &next))
			d = next;
		else
			break;
	}
	return d;
}

/* A closure type: an unnamed class whose member is operator(). */
static bool has_call_operator(Dwarf_Die *cls)
{
	Dwarf_Die child;
	const char *n;

	if (dwarf_child(cls, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) == DW_TAG_subprogram && (n = dwarf_diename(&child)) &&
			!strcmp(n, "operator()"))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static bool is_cxx(Dwarf_Die *cu)
{
	int lang = dwarf_srclang(cu);

	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
		lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* Is cu's language C, where no function is inside a namespace or a class? */
static bool is_c(Dwarf_Die *cu)
{
	int lang = dwarf_srclang(cu);

	return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 ||
	       lang == DW_LANG_C11;
}

/* Fully qualified DWARF name from the enclosing namespaces, classes and
 * functions (GCC gives inline-only template instances no linkage name):
 * "std::__sort<...>", "main::<lambda(int)>::operator()".  In C (!scoped)
 * the name alone: dwarf_getscopes_die walks the unit from its first DIE,
 * which in a large unit (CPython's ceval.c) was most of the CPU of
 * symbolizing a new pc. */
static const char *qualified_name(struct sym_session *s, Dwarf_Die *die, bool scoped)
{
	Dwarf_Die d = decl_die(die), *scopes = NULL;
	const char *name = dwarf_diename(&d);
	char buf[SYM_MAX_NAME];
	size_t len = 0;
	int n;

	if (!name)
		return NULL;
	if (!scoped)
		return sym_cache_intern0(s->cache, name);
	n = dwarf_getscopes_die(&d, &scopes);
	for (int i = n - 1; i >= 1; i--) {
		const char *part;
		int tag = dwarf_tag(&scopes[i]);

		if (tag != DW_TAG_namespace && tag != DW_TAG_class_type &&
			tag != DW_TAG_structure_type && tag != DW_TAG_union_type &&
			tag != DW_TAG_subprogram)
			continue;
		part = dwarf_diename(&scopes[i]);
		if (!part && tag == DW_TAG_namespace)
			part = "(anonymous namespace)";
		else if (!part)
			part = has_call_operator(&scopes[i]) ? "{lambda}" : "{unnamed type}";
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s::", part);
		if (len >= sizeof(buf))
			break;
	}
	free(scopes);
	if (len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, "%s", name);
	return sym_cache_intern0(s->cache, buf);
}

/* The linkage name of a DIE, demangled (fully qualified with parameters,
 * as gdb shows it), or NULL when DWARF has none. */
static const char *linkage_name(struct sym_session *s, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *link;
	char *d;

	link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!link)
		link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!link)
		return NULL;
	d = sym_demangle(link);
	if (d) {
		const char *r = sym_cache_intern0(s->cache, d);

		free(d);
		return r;
	}
	return sym_cache_intern0(s->cache, link);
}

static const char *elf_name(struct sym_session *s, struct sym_module *m, uint64_t addr)
{
	const char *name = sym_symbol_at(s, m, addr);
	char buf[SYM_MAX_NAME + 1], *d;
	const char *r;
	size_t n;

	if (!name)
		return NULL;
	n = strcspn(name, "@"); /* pthread_cond_wait@@GLIBC_2.3.2 */
	if (n > SYM_MAX_NAME)
		n = SYM_MAX_NAME;
	memcpy(buf, name, n);
	buf[n] = '\0';
	d = sym_demangle(buf);
	sym_fold_clone(d ? d : buf, sym_module_is_go(m));
	r = sym_cache_intern0(s->cache, d ? d : buf);
	free(d);
	return r;
}

#define SYM_MAX_NEST_SCOPES 64

/* The scopes holding pc under parent, outermost first, from path[depth]
 * on: the functions, inlined calls and blocks whose ranges hold it, found
 * through the DIEs that hold code without ranges of their own
 * (namespaces, classes, a dwz partial unit imported); returns the new
 * depth. */
static int find_scopes(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *path, int depth, int hops)
{
	Dwarf_Die child;

	if (hops > 8 || dwarf_child(parent, &child) != 0)
		return depth;
	do {
		int tag = dwarf_tag(&child), d;
		Dwarf_Attribute a;
		Dwarf_Die unit;

		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
			if (dwarf_haspc(&child, pc) <= 0)
				break;
			path[depth] = child;
			return depth + 1 < SYM_MAX_NEST_SCOPES ?
				       find_scopes(&child, pc, path, depth + 1, hops) :
				       depth + 1;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if ((d = find_scopes(&child, pc, path, depth, hops + 1)) > depth)
				return d;
			break;
		case DW_TAG_imported_unit:
			if (dwarf_attr(&child, DW_AT_import, &a) && dwarf_formref_die(&a, &unit) &&
				(d = find_scopes(&unit, pc, path, depth, hops + 1)) > depth)
				return d;
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return depth;
}

/* A module's scope index may hold this many bytes of ranges: about
 * 300,000 functions' (libpython 3.12's some 20,000: about 1 MiB); all sessions' indexes
 * together, the cache's budget (sym_cache_scopes_take).  Past either a
 * CU is searched DIE by DIE. */
#define SYM_FN_INDEX_BYTES (16u << 20)

/* Each range of each function DIE under parent (as find_scopes finds
 * them: through namespaces, classes and imported units) into t. */
static int index_funcs(struct sym_module *m, Dwarf_Die *parent, struct fn_table *t, size_t *cap,
	int hops)
{
	Dwarf_Die child;

	if (hops > 8 || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		Dwarf_Addr base, lo, hi;
		Dwarf_Attribute a;
		Dwarf_Die unit;
		ptrdiff_t it = 0;
		int r = 0;

		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
			while ((it = dwarf_ranges(&child, it, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				if (m->fn_bytes + (t->n + 1) * sizeof(*t->f) > SYM_FN_INDEX_BYTES ||
					td_array_grow(t->f, *cap, t->n + 1, 64) < 0)
					return -ENOMEM;
				t->f[t->n] = (struct fn_range){ lo, hi, t->n, child };
				t->n++;
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			r = index_funcs(m, &child, t, cap, hops + 1);
			break;
		case DW_TAG_imported_unit:
			if (dwarf_attr(&child, DW_AT_import, &a) && dwarf_formref_die(&a, &unit))
				r = index_funcs(m, &unit, t, cap, hops + 1);
			break;
		}
		if (r < 0)
			return r;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int cmp_fn_range(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* cu's functions by address, built on the first call for cu; NULL where
 * it is not indexed (then find_scopes walks it). */
static const struct fn_table *fn_table_of(struct sym_module *m, Dwarf_Die *cu)
{
	uint64_t key = dwarf_dieoffset(cu), v;
	struct fn_table t = { NULL, 0 };
	size_t cap = 0;

	if (td_map_get(&m->fn_cus, key, &v))
		return m->fn_tabs[v - 1].n == SIZE_MAX ? NULL : &m->fn_tabs[v - 1];
	if (td_array_grow(m->fn_tabs, m->capfn_tabs, m->nfn_tabs + 1, 16) < 0)
		return NULL;
	if (index_funcs(m, cu, &t, &cap, 0) < 0 ||
		!sym_cache_scopes_take(m->s->cache, cap * sizeof(*t.f))) {
		free(t.f);
		t = (struct fn_table){ NULL, SIZE_MAX };
		cap = 0;
	} else if (t.n > 1) {
		qsort(t.f, t.n, sizeof(*t.f), cmp_fn_range);
	}
	if (td_map_set(&m->fn_cus, key, m->nfn_tabs + 1) < 0) {
		sym_cache_scopes_give(m->s->cache, cap * sizeof(*t.f));
		free(t.f);
		return NULL;
	}
	m->fn_bytes += cap * sizeof(*t.f);
	m->fn_tabs[m->nfn_tabs++] = t;
	return t.n == SIZE_MAX ? NULL : &m->fn_tabs[m->nfn_tabs - 1];
}

void sym_module_scopes_free(struct sym_module *m)
{
	for (size_t i = 0; i < m->nfn_tabs; i++)
		free(m->fn_tabs[i].f);
	if (m->s && m->fn_bytes)
		sym_cache_scopes_give(m->s->cache, m->fn_bytes);
	free(m->fn_tabs);
	td_map_free(&m->fn_cus);
	m->fn_tabs = NULL;
	m->nfn_tabs = m->capfn_tabs = m->fn_bytes = 0;
}

/* The scopes holding pc in cu, outermost first, into path: the function
 * found in cu's index (a binary search, where a walk of a large unit's
 * DIEs, CPython's ceval.c's, was most of naming a new pc), then the
 * inlined calls and blocks within it; the walk where cu is not indexed.
 * Returns the depth. */
static int cu_scopes(struct sym_module *m, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *path)
{
	const struct fn_table *t = m ? fn_table_of(m, cu) : NULL;
	const struct fn_range *best = NULL;
	size_t l = 0, u;

	if (!t)
		return find_scopes(cu, pc, path, 0, 0);
	u = t->n;
	while (l < u) {
		size_t i = l + (u - l) / 2;

		if (t->f[i].lo <= pc)
			l = i + 1;
		else
			u = i;
	}
	/* ranges may overlap (rarely): the first in DIE order, as the walk */
	for (size_t i = l; i-- > 0 && l - i <= 8;)
		if (pc < t->f[i].hi && (!best || t->f[i].seq < best->seq))
			best = &t->f[i];
	if (!best)
		return 0;
	path[0] = best->die;
	return find_scopes(&path[0], pc, path, 1, 0);
}

/* The functions, inlined calls and blocks holding pc (a CU-relative
 * address) in cu, innermost first, found by walking its DIEs (as
 * dwarf_getscopes_die() gives them, less the namespaces and classes); the
 * count (0: none) with *ret malloc'ed.  dwarf_getscopes() of elfutils
 * 0.188 leaks 32 bytes each time it finds nothing (Go's assembly
 * functions, any code without a DIE), finds nothing in an LTO build's
 * <artificial> CU, whose concrete functions point across CUs to their
 * abstract origins, and with dwarf_getscopes_die walked a large unit twice
 * more per new pc: this is the only search. */
static int walk_scopes(struct sym_module *m, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **ret)
{
	Dwarf_Die path[SYM_MAX_NEST_SCOPES];
	int depth = cu_scopes(m, cu, pc, path);

	*ret = NULL;
	if (depth == 0)
		return 0;
	*ret = malloc((size_t)depth * sizeof(**ret));
	if (!*ret)
		return 0;
	for (int i = 0; i < depth; i++)
		(*ret)[i] = path[depth - 1 - i];
	return depth;
}

/* The name of the function at addr: its ELF symbol's, else, where no
 * symbol names it (a stripped binary, a static function of one without
 * .symtab), its place, as MODULE+0xSTART: the start of the function that
 * .eh_frame gives (an FDE per function, kept in stripped binaries too), so
 * that its samples stay together and apart from the module's other
 * functions; else the address itself, as perf shows it. */
static const char *function_name(struct sym_session *s, struct sym_module *m, uint64_t addr)
{
	const char *name = elf_name(s, m, addr), *base;
	uint64_t at = addr - m->bias;
	char buf[PATH_MAX + 32];

	if (name || !m->path)
		return name;
	if (sym_module_eh_ready(m))
		sym_eh_function(&m->eh, at, &at); /* at stays where no FDE holds it */
	base = strrchr(m->path, '/');
	snprintf(buf, sizeof(buf), "%s+%#llx", base ? base + 1 : m->path, (unsigned long long)at);
	return sym_cache_intern0(s->cache, buf);
}

static int cmp_cu_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The CU holding addr (an address in the process) found by the CUs' own
 * ranges, for DWARF without .debug_aranges (Go's): libdwfl finds no CU
 * there.  The table is built once per module.  NULL if none. */
static Dwarf_Die *cu_by_ranges(struct sym_module *m, uint64_t addr, Dwarf_Die *mem,
	Dwarf_Addr *ret_bias)
{
	Dwarf *dw = dwfl_module_getdwarf(m->mod, ret_bias);
	size_t l = 0, u;

	if (!dw)
		return NULL;
	if (!m->cur_tried) {
		Dwarf_Off off = 0, next;
		size_t hsize, cap = 0, nar = 0;
		Dwarf_Aranges *ar;

		m->cur_tried = true;
		/* with .debug_aranges, libdwfl's miss is no CU at all */
		if (dwarf_getaranges(dw, &ar, &nar) == 0 && nar > 0)
			return NULL;
		while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			Dwarf_Die cu;
			Dwarf_Addr base, lo, hi;
			ptrdiff_t it = 0;

			if (dwarf_offdie(dw, off + hsize, &cu))
				while ((it = dwarf_ranges(&cu, it, &base, &lo, &hi)) > 0) {
					if (td_array_grow(m->cur, cap, m->ncur + 1, 64) < 0)
						break;
					m->cur[m->ncur++] = (struct cu_range){ lo, hi, off + hsize };
				}
			off = next;
		}
		if (m->ncur > 1)
			qsort(m->cur, m->ncur, sizeof(*m->cur), cmp_cu_range);
	}
	addr -= *ret_bias;
	u = m->ncur;
	while (l < u) {
		size_t i = l + (u - l) / 2;

		if (m->cur[i].lo <= addr)
			l = i + 1;
		else
			u = i;
	}
	/* ranges may nest or overlap (rarely): look back a little */
	for (size_t i = l; i-- > 0 && l - i <= 8;)
		if (addr >= m->cur[i].lo && addr < m->cur[i].hi)
			return dwarf_offdie(dw, m->cur[i].die, mem);
	return NULL;
}

/* The inline chain of addr, innermost first, ending with the function that
 * physically holds it.  Returns the number of lines. */
static unsigned lines_of(struct sym_session *s, struct sym_module *m, uint64_t addr,
	struct sym_line *out)
{
	Dwfl_Module *mod = m->mod;
	Dwarf_Addr bias;
	Dwarf_Die cu_mem, *cu = s->opt.no_dwarf ? NULL : dwfl_module_addrdie(mod, addr, &bias);
	Dwfl_Line *dl = NULL;
	const char *file = NULL;
	int line = 0;
	unsigned n = 0;

	if (cu) {
		dl = dwfl_module_getsrc(mod, addr);
	} else if (!s->opt.no_dwarf && (cu = cu_by_ranges(m, addr, &cu_mem, &bias))) {
		Dwarf_Line *l = dwarf_getsrc_die(cu, addr - bias);

		if (l) {
			file = sym_cache_intern0(s->cache, dwarf_linesrc(l, NULL, NULL));
			dwarf_lineno(l, &line);
		}
	}
	if (cu)
		m->has_dwarf = true;
	if (dl) {
		const char *f = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);

		file = sym_cache_intern0(s->cache, f);
	}
	if (cu) {
		/* the concrete chain of scopes holding the pc (the callers the
		 * code was inlined into), as eu-addr2line -i gives it */
		Dwarf_Die *scopes = NULL;
		int ns = walk_scopes(m, cu, addr - bias, &scopes);
		Dwarf_Files *files = NULL;
		size_t nfiles = 0;
		bool cxx = is_cxx(cu), c = !cxx && is_c(cu);

		if (ns > 0)
			dwarf_getsrcfiles(cu, &files, &nfiles);
		for (int i = 0; i < ns && n < SYM_MAX_INLINE; i++) {
			int tag = dwarf_tag(&scopes[i]);
			Dwarf_Attribute a;
			Dwarf_Word v;
			const char *fn;
			int decl = 0;

			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
				continue;
			fn = linkage_name(s, &scopes[i]);
			/* A physical C++ function without a linkage name: its
			 * symbol has the parameters a DWARF name lacks.  C keeps
			 * its DWARF name (msort_with_tmp, not a .part clone). */
			if (!fn && tag == DW_TAG_subprogram && cxx)
				fn = elf_name(s, m, addr);
			if (!fn)
				fn = qualified_name(s, &scopes[i], !c);
			if (dwarf_decl_line(&scopes[i], &decl) != 0)
				decl = 0;
			out[n++] = (struct sym_line){ .function = fn,
				.file = file,
				.line = line,
				.start_line = decl,
				.inlined = tag == DW_TAG_inlined_subroutine };
			if (tag == DW_TAG_subprogram)
				break;
			/* The caller's position is the inlined call site. */
			file = NULL;
			line = 0;
			if (files &&
				dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &v) == 0)
				file = sym_cache_intern0(s->cache, dwarf_filesrc(files, v, NULL, NULL));
			if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &v) == 0)
				line = (int)v;
		}
		free(scopes);
		if (n && out[n - 1].inlined && n < SYM_MAX_INLINE) {
			/* inline chain without its outer subprogram in
			 * DWARF: the ELF symbol holds it */
			out[n++] = (struct sym_line){ .function = function_name(s, m, addr),
				.file = file,
				.line = line };
		}
	}
	if (n == 0)
		out[n++] = (struct sym_line){ .function = function_name(s, m, addr),
			.file = file,
			.line = line };
	return n;
}

bool sym_session_mapped(struct sym_session *s, uint64_t pc, bool activation)
{
	uint64_t addr = activation ? pc : pc - 1;
	Dwfl_Module *mod = sym_addr_module(s, addr);
	struct sym_frame f;
	void **ud;

	if (s->jit && !sym_file_at(s, addr) && sym_jit_frame(s, pc, addr, &f))
		return f.module != NULL;
	return mod && dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL) && *ud &&
	       ((struct sym_module *)*ud)->path;
}

int sym_session_symbolize(struct sym_session *s, uint64_t pc, bool activation, bool inlines,
	struct sym_frame *frames, unsigned cap)
{
	/* A return address points after the call: look up the call. */
	uint64_t addr = activation ? pc : pc - 1;
	Dwfl_Module *mod = sym_addr_module(s, addr);
	struct sym_line tmp[SYM_MAX_INLINE];
	const struct sym_line *lines;
	struct sym_module *m;
	void **ud;
	unsigned n, k = 0;

	if (cap == 0)
		return 0;
	/* Code a JIT made, in anonymous memory, named by its perf map or
	 * jitdump.  libdwfl's module of a file spans the gaps between its
	 * mappings, where V8 puts its code: the maps say what is a file's. */
	if (s->jit && !sym_file_at(s, addr) && sym_jit_frame(s, pc, addr, &frames[0]))
		return 1;
	if (!mod || !dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL) || !*ud) {
		frames[0] = (struct sym_frame){ .pc = pc };
		return 1;
	}
	m = *ud;
	if (!m->has_elf) {
		frames[0] = (struct sym_frame){ .pc = pc, .module = m->path,
			.offset = pc - m->bias };
		return 1;
	}
	if (!sym_cache_lookup(s->cache, m->key, addr - m->bias, &lines, &n)) {
		n = lines_of(s, m, addr, tmp);
		sym_cache_insert(s->cache, m->key, addr - m->bias, tmp, n);
		lines = tmp;
	}
	for (unsigned i = inlines ? 0 : n - 1; i < n && k < cap; i++, k++)
		frames[k] = (struct sym_frame){
			.pc = pc,
			.offset = pc - m->bias,
			.function = lines[i].function,
			.file = lines[i].file,
			.line = lines[i].line,
			.start_line = lines[i].start_line,
			.module = m->path,
			.build_id = m->build_id,
			.inlined = lines[i].inlined,
		};
	if (!inlines && k == 1 && lines[n - 1].inlined)
		frames[0].inlined = false;
	return (int)k;
}

