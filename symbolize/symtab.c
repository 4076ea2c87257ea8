/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Per-module symbol tables: the ELF symbol dwfl_module_addrinfo() names for
 * an address, found by one binary search.
 *
 * elfutils 0.188 answers dwfl_module_addrinfo() by reading every symbol of
 * the module on every call: 45k of them for libLLVM-14, 8 ms of the
 * daemon's CPU per sample of a clang++ build.  Here a module's symbols are
 * read once, through the dwfl_module_getsym_info() it reads them with
 * (.symtab, else .dynsym, and the minidebuginfo table), and its answer is
 * worked out for every stretch of addresses over which it cannot change:
 * the stretches between consecutive symbol starts, symbol ends and section
 * bounds.  A lookup is a binary search over those stretches; it allocates
 * nothing.
 *
 * The answer is elfutils' own (libdwfl/dwfl_module_addrsym.c in 0.188):
 *   - a named, defined symbol of any type but SECTION, FILE and TLS;
 *   - first the symbols after the table's first global (GLOBAL, WEAK),
 *     then, if none of them holds the address, the locals;
 *   - among the sized symbols holding it [value, value + size), folded in
 *     table order, a symbol replaces the one kept so far if it starts
 *     higher or binds stronger (GLOBAL > WEAK > LOCAL), or starts at the
 *     same place, binds no weaker and is smaller;
 *   - failing those, a sizeless symbol (an assembly label): the last one,
 *     in that order, at the highest start or end of any symbol at or below
 *     the address, and only in the same section as the address (a label
 *     exactly at the address among the globals ends the search there).
 * Left out on purpose: symbols outside executable sections (a pc is never
 * there; they would matter only by a range crossing a section bound),
 * SHN_ABS ones and those of non-allocated sections (their values are no
 * load addresses), and symbols at 0.  Sized symbols nested more than
 * SYMTAB_MAX_NEST deep count only by their innermost SYMTAB_MAX_NEST.
 *
 * Addresses are module-relative (ELF addresses, the load bias taken off),
 * so that one table serves every process mapping the same build-id.  A
 * table owns its names and never changes once built. */
#include "symbolize-internal.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/buf.h"

#define SYMTAB_MAX_SYMBOLS (1u << 24) /* bound on the symbols of one module */
#define SYMTAB_MAX_NEST 64	      /* bound on sized symbols holding one address */
#define NO_NAME UINT32_MAX
#define SYMTAB_MAX_FILE (1ull << 30) /* bound on a table's file */

/* owns: start, name, names, or map, which holds them (a table read back
 * from its file) */
struct sym_table {
	size_t n;	 /* stretches */
	uint64_t *start; /* where each stretch begins, ascending */
	uint32_t *name;	 /* its symbol's name in names, or NO_NAME */
	char *names;
	size_t names_len;
	size_t bytes;
	void *map;
	size_t map_len;
};

/* A table's file (sym_table_write): this header, start[n], name[n], then
 * names_len bytes of names, in the host's byte order (the file never
 * leaves the machine: debugcache.c keeps it by build-id).  The symbol
 * table the table was built from is named by its size and first global,
 * so a table from .dynsym is not taken for one from a .symtab installed
 * since. */
#define SYMTAB_FILE_MAGIC "TDSYMT01"
struct symtab_file {
	char magic[8];
	uint64_t nsyms, first_global;
	uint64_t n, names_len;
	uint64_t reserved; /* 0; keeps start[] 8-aligned */
};

/* A symbol while the table is built. */
struct cand {
	uint64_t value, size; /* module-relative; size 0: a label */
	const char *name;     /* borrowed from the module's Elf */
	uint32_t order;	      /* elfutils' visiting order: globals, then locals */
	uint32_t name_off;    /* in the table's names once copied, else NO_NAME */
	int bind;	      /* elfutils' binding_value() */
	bool local;	      /* read in elfutils' second pass */
};

/* An allocated section of the main ELF, as libdwfl's find_section sees it. */
struct sec {
	uint64_t start, end;
	size_t ndx;
	bool exec;
};

static int cmp_sec(const void *a, const void *b)
{
	const struct sec *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->ndx < y->ndx ? -1 : x->ndx > y->ndx;
}

/* The section of addr, -1 if none, by libdwfl's rule: a section's end
 * belongs to it unless the next one starts there. */
static long sec_find(const struct sec *s, size_t n, uint64_t addr)
{
	size_t l = 0, u = n;

	while (l < u) {
		size_t i = (l + u) / 2;

		if (addr < s[i].start) {
			u = i;
		} else if (addr > s[i].end) {
			l = i + 1;
		} else {
			if (addr == s[i].end && i + 1 < n && addr == s[i + 1].start)
				i++;
			return (long)i;
		}
	}
	return -1;
}

/* Sort key[0..n) ascending, stably, moving idx[] (if any) along: LSD
 * radix, 8 bits a pass, leaving out the passes above the highest bit any
 * key has (module addresses: 4 passes, not qsort's 16 compares per key
 * through a function pointer and its temporary copy).  The scratch arrays
 * hold n each.  libLLVM's symbols and breakpoints sort in a third of
 * qsort's time. */
static void radix_sort(uint64_t *key, uint32_t *idx, size_t n, uint64_t *key_tmp,
	uint32_t *idx_tmp)
{
	uint64_t all = 0, *k = key, *kt = key_tmp;
	uint32_t *x = idx, *xt = idx_tmp;
	unsigned passes = 0;

	for (size_t i = 0; i < n; i++)
		all |= key[i];
	while (passes < 8 && (all >> (8 * passes)))
		passes++;
	for (unsigned p = 0; p < passes; p++) {
		unsigned shift = 8 * p;
		size_t count[257] = { 0 };
		uint64_t *ks;
		uint32_t *xs;

		for (size_t i = 0; i < n; i++)
			count[((k[i] >> shift) & 255) + 1]++;
		for (unsigned d = 1; d < 257; d++)
			count[d] += count[d - 1];
		for (size_t i = 0; i < n; i++) {
			size_t to = count[(k[i] >> shift) & 255]++;

			kt[to] = k[i];
			if (x)
				xt[to] = x[i];
		}
		/* this pass's output is the next one's input */
		ks = k, k = kt, kt = ks;
		xs = x, x = xt, xt = xs;
	}
	if (passes & 1) { /* the result is in the scratch arrays */
		memcpy(key, k, n * sizeof(*key));
		if (idx)
			memcpy(idx, x, n * sizeof(*idx));
	}
}

static int cmp_order(const void *a, const void *b)
{
	const struct cand *x = *(const struct cand *const *)a, *y = *(const struct cand *const *)b;

	return x->order < y->order ? -1 : x->order > y->order;
}

static int binding_value(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

static uint64_t cand_end(const struct cand *c)
{
	return c->value + c->size < c->value ? UINT64_MAX : c->value + c->size;
}

/* The sized symbol elfutils keeps for addr among those on stack (pushed
 * in order of value; the dead ones above the live are gone): the live
 * ones, folded in visiting order as try_sym_value() does.  NULL if none. */
static const struct cand *fold(const struct cand *c, const uint32_t *stack, size_t depth,
	uint64_t addr)
{
	const struct cand *live[SYMTAB_MAX_NEST], *best = NULL;
	size_t k = 0;

	for (size_t i = depth; i-- > 0 && depth - i <= SYMTAB_MAX_NEST;)
		if (cand_end(&c[stack[i]]) > addr)
			live[k++] = &c[stack[i]];
	if (k > 1)
		qsort(live, k, sizeof(live[0]), cmp_order);
	for (size_t i = 0; i < k; i++) {
		const struct cand *e = live[i];

		if (!best || best->value < e->value || best->bind < e->bind)
			best = e;
		else if (best->value == e->value &&
			((best->size > e->size && best->bind <= e->bind) ||
				(best->size >= e->size && best->bind < e->bind)))
			best = e;
	}
	return best;
}

/* The label elfutils falls back on at value: the last visited of those
 * starting there (only globals if !locals), NULL if none. */
static const struct cand *label_at(const struct cand *c, size_t nc, uint64_t value, bool locals)
{
	const struct cand *best = NULL;
	size_t l = 0, u = nc;

	while (l < u) {
		size_t i = l + (u - l) / 2;

		if (c[i].value < value)
			l = i + 1;
		else
			u = i;
	}
	for (; l < nc && c[l].value == value; l++)
		if (c[l].size == 0 && (locals || !c[l].local) &&
			(!best || c[l].order > best->order))
			best = &c[l];
	return best;
}

/* Read the module's symbols that can answer for a pc into *ret_c. */
static int collect(Dwfl_Module *mod, uint64_t bias, const struct sec *secs, size_t nsecs,
	struct cand **ret_c, size_t *ret_n)
{
	int n = dwfl_module_getsymtab(mod);
	int first_global = dwfl_module_getsymtab_first_global(mod);
	struct cand *c;
	size_t k = 0;

	if (n <= 0 || first_global < 0) { /* no symbols: an empty table */
		*ret_c = NULL;
		*ret_n = 0;
		return 0;
	}
	if ((unsigned)n > SYMTAB_MAX_SYMBOLS)
		return -TD_E_LIMIT;
	c = malloc((size_t)n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* Entry 0 is the null symbol; elfutils starts at 1 too. */
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
		uint64_t value;
		long s;
		int type;

		if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type == STT_SECTION || type == STT_FILE || type == STT_TLS)
			continue;
		/* -1: a non-allocated section; SHN_ABS and the like: values
		 * that are no load addresses */
		if (shndx == (GElf_Word)-1 ||
			(shndx >= SHN_LORESERVE && sym.st_shndx != SHN_XINDEX))
			continue;
		value = addr - bias;
		s = sec_find(secs, nsecs, value);
		if (nsecs && (s < 0 || !secs[s].exec))
			continue;
		c[k++] = (struct cand){
			.value = value,
			.size = sym.st_size,
			.name = name,
			.order = (uint32_t)(first_global > 1 && i < first_global ? n + i : i),
			.name_off = NO_NAME,
			.bind = binding_value(&sym),
			.local = first_global > 1 && i < first_global,
		};
	}
	*ret_c = c;
	*ret_n = k;
	return 0;
}

static int collect_sections(Elf *elf, struct sec **ret_s, size_t *ret_n)
{
	struct sec *s = NULL;
	size_t n = 0, cap = 0;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (n >= 1u << 20) {
			free(s);
			return -TD_E_LIMIT;
		}
		if (td_array_grow(s, cap, n + 1, 64) < 0) {
			free(s);
			return -ENOMEM;
		}
		s[n++] = (struct sec){ sh.sh_addr, sh.sh_addr + sh.sh_size, elf_ndxscn(scn),
			(sh.sh_flags & SHF_EXECINSTR) != 0 };
	}
	if (n > 1)
		qsort(s, n, sizeof(*s), cmp_sec);
	*ret_s = s;
	*ret_n = n;
	return 0;
}

/* Every address where the answer may change. */
static int breakpoints(const struct cand *c, size_t nc, const struct sec *secs, size_t nsecs,
	uint64_t **ret_p, size_t *ret_n)
{
	uint64_t *p = malloc((2 * nc + 3 * nsecs + 1) * sizeof(*p)), *tmp;
	size_t n = 0, u = 0;

	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < nc; i++) {
		p[n++] = c[i].value;
		/* a label exactly at the address is a case of its own */
		if (c[i].size || c[i].value < UINT64_MAX)
			p[n++] = c[i].size ? cand_end(&c[i]) : c[i].value + 1;
	}
	for (size_t i = 0; i < nsecs; i++) {
		p[n++] = secs[i].start;
		p[n++] = secs[i].end;
		if (secs[i].end < UINT64_MAX)
			p[n++] = secs[i].end + 1;
	}
	tmp = malloc((n ? n : 1) * sizeof(*tmp));
	if (!tmp) {
		free(p);
		return -ENOMEM;
	}
	radix_sort(p, NULL, n, tmp, NULL);
	free(tmp);
	for (size_t i = 0; i < n; i++)
		if (u == 0 || p[i] != p[u - 1])
			p[u++] = p[i];
	*ret_p = p;
	*ret_n = u;
	return 0;
}

/* The answer at each breakpoint (a cand index or -1), swept upwards. */
static int sweep(const struct cand *c, size_t nc, const struct sec *secs, size_t nsecs,
	const uint64_t *p, size_t np, int32_t *ans)
{
	uint32_t *sg = malloc((nc + 1) * sizeof(*sg)), *sl = malloc((nc + 1) * sizeof(*sl));
	size_t ng = 0, nl = 0, j = 0;
	uint64_t end_g = 0, end_l = 0; /* highest start or end so far */
	bool any_g = false, any_l = false;

	if (!sg || !sl) {
		free(sg);
		free(sl);
		return -ENOMEM;
	}
	for (size_t k = 0; k < np; k++) {
		uint64_t a = p[k];
		const struct cand *best;

		for (; j < nc && c[j].value <= a; j++) {
			uint64_t e = cand_end(&c[j]);

			if (c[j].local) {
				end_l = any_l && end_l > e ? end_l : e;
				any_l = true;
				if (c[j].size)
					sl[nl++] = (uint32_t)j;
			} else {
				end_g = any_g && end_g > e ? end_g : e;
				any_g = true;
				if (c[j].size)
					sg[ng++] = (uint32_t)j;
			}
		}
		/* ends only grow past: what ended is gone for good */
		while (ng && cand_end(&c[sg[ng - 1]]) <= a)
			ng--;
		while (nl && cand_end(&c[sl[nl - 1]]) <= a)
			nl--;
		best = fold(c, sg, ng, a);
		if (!best && any_g && end_g == a)
			best = label_at(c, nc, a, false);
		if (!best)
			best = fold(c, sl, nl, a);
		if (!best && (any_g || any_l)) {
			uint64_t x = !any_l || (any_g && end_g > end_l) ? end_g : end_l;

			best = label_at(c, nc, x, true);
			if (best && nsecs && sec_find(secs, nsecs, x) != sec_find(secs, nsecs, a))
				best = NULL;
		}
		ans[k] = best ? (int32_t)(best - c) : -1;
	}
	free(sg);
	free(sl);
	return 0;
}

/* The table from the stretches' answers: equal neighbours merged, each
 * name that answers somewhere copied once. */
static int assemble(struct cand *c, size_t nc, const uint64_t *p, size_t np, const int32_t *ans,
	struct sym_table **ret_table)
{
	struct sym_table *t = calloc(1, sizeof(*t));
	size_t n = 0, len = 0;

	if (!t)
		return -ENOMEM;
	for (size_t k = 0; k < np; k++) {
		if (k && ans[k] == ans[k - 1])
			continue;
		n++;
		if (ans[k] >= 0 && c[ans[k]].name_off == NO_NAME) {
			if (len >= UINT32_MAX - SYM_MAX_NAME - 1) {
				sym_table_free(t);
				return -TD_E_LIMIT;
			}
			c[ans[k]].name_off = (uint32_t)len;
			len += strnlen(c[ans[k]].name, SYM_MAX_NAME) + 1;
		}
	}
	t->start = malloc((n ? n : 1) * sizeof(*t->start));
	t->name = malloc((n ? n : 1) * sizeof(*t->name));
	t->names = malloc(len ? len : 1);
	if (!t->start || !t->name || !t->names) {
		sym_table_free(t);
		return -ENOMEM;
	}
	for (size_t k = 0; k < np; k++) {
		if (k && ans[k] == ans[k - 1])
			continue;
		t->start[t->n] = p[k];
		t->name[t->n++] = ans[k] >= 0 ? c[ans[k]].name_off : NO_NAME;
	}
	for (size_t i = 0; i < nc; i++) {
		size_t l;

		if (c[i].name_off == NO_NAME)
			continue;
		l = strnlen(c[i].name, SYM_MAX_NAME);
		memcpy(t->names + c[i].name_off, c[i].name, l);
		t->names[c[i].name_off + l] = '\0';
	}
	t->names_len = len;
	t->bytes = sizeof(*t) + n * (sizeof(*t->start) + sizeof(*t->name)) + len;
	*ret_table = t;
	return 0;
}

/* *c sorted by value.  Among equal values the order is the table's: the
 * answer does not depend on it (fold and label_at go by visiting order). */
static int sort_cands(struct cand **c, size_t nc)
{
	uint64_t *key;
	uint32_t *idx;
	struct cand *sorted;
	int r = -ENOMEM;

	if (nc < 2)
		return 0;
	key = malloc(2 * nc * sizeof(*key));
	idx = malloc(2 * nc * sizeof(*idx));
	sorted = malloc(nc * sizeof(*sorted));
	if (key && idx && sorted) {
		for (size_t i = 0; i < nc; i++) {
			key[i] = (*c)[i].value;
			idx[i] = (uint32_t)i;
		}
		radix_sort(key, idx, nc, key + nc, idx + nc);
		for (size_t i = 0; i < nc; i++)
			sorted[i] = (*c)[idx[i]];
		free(*c);
		*c = sorted;
		sorted = NULL;
		r = 0;
	}
	free(key);
	free(idx);
	free(sorted);
	return r;
}

int sym_table_build(Dwfl_Module *mod, struct sym_table **ret_table)
{
	struct cand *c = NULL;
	struct sec *secs = NULL;
	uint64_t *p = NULL;
	int32_t *ans = NULL;
	size_t nc = 0, nsecs = 0, np = 0;
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	int r;

	if (elf) {
		r = collect_sections(elf, &secs, &nsecs);
		if (r < 0)
			return r;
		r = collect(mod, bias, secs, nsecs, &c, &nc);
		if (r < 0)
			goto out_secs;
	}
	r = sort_cands(&c, nc);
	if (r < 0)
		goto out_cands;
	r = breakpoints(c, nc, secs, nsecs, &p, &np);
	if (r < 0)
		goto out_cands;
	ans = malloc((np ? np : 1) * sizeof(*ans));
	if (!ans) {
		r = -ENOMEM;
		goto out_points;
	}
	r = sweep(c, nc, secs, nsecs, p, np, ans);
	if (r >= 0)
		r = assemble(c, nc, p, np, ans, ret_table);
	free(ans);
out_points:
	free(p);
out_cands:
	free(c);
out_secs:
	free(secs);
	return r;
}

void sym_table_free(struct sym_table *t)
{
	if (!t)
		return;
	if (t->map) {
		munmap(t->map, t->map_len);
		free(t);
		return;
	}
	free(t->start);
	free(t->name);
	free(t->names);
	free(t);
}

size_t sym_table_bytes(const struct sym_table *t)
{
	return t ? t->bytes : 0;
}

const char *sym_table_lookup(const struct sym_table *t, uint64_t vaddr)
{
	size_t l = 0, u = t->n;

	while (l < u) {
		size_t i = l + (u - l) / 2;

		if (t->start[i] <= vaddr)
			l = i + 1;
		else
			u = i;
	}
	if (l == 0 || t->name[l - 1] == NO_NAME)
		return NULL;
	return t->names + t->name[l - 1];
}

int sym_table_source(struct Dwfl_Module *mod, uint64_t *ret_nsyms, uint64_t *ret_first_global)
{
	int n = dwfl_module_getsymtab(mod), fg = dwfl_module_getsymtab_first_global(mod);

	if (n <= 0 || fg < 0)
		return -ENOENT;
	*ret_nsyms = (uint64_t)n;
	*ret_first_global = (uint64_t)fg;
	return 0;
}

int sym_table_write(const struct sym_table *t, uint64_t nsyms, uint64_t first_global, int fd)
{
	struct symtab_file h = { .nsyms = nsyms, .first_global = first_global, .n = t->n,
		.names_len = t->names_len };
	ssize_t w;

	memcpy(h.magic, SYMTAB_FILE_MAGIC, sizeof(h.magic));
	if ((w = td_write_all(fd, &h, sizeof(h))) < 0 ||
		(w = td_write_all(fd, t->start, t->n * sizeof(*t->start))) < 0 ||
		(w = td_write_all(fd, t->name, t->n * sizeof(*t->name))) < 0 ||
		(w = td_write_all(fd, t->names, h.names_len)) < 0)
		return (int)w;
	return 0;
}

int sym_table_map(int fd, uint64_t nsyms, uint64_t first_global, struct sym_table **ret_table)
{
	const struct symtab_file *h;
	struct sym_table *t;
	struct stat st;
	uint64_t want;
	void *map;
	size_t len;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < (off_t)sizeof(*h) || (uint64_t)st.st_size > SYMTAB_MAX_FILE)
		return -TD_E_CORRUPT;
	len = (size_t)st.st_size;
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	h = map;
	/* every count bounded before it is multiplied */
	if (memcmp(h->magic, SYMTAB_FILE_MAGIC, sizeof(h->magic)) || h->nsyms != nsyms ||
		h->first_global != first_global || h->reserved || h->n > 4ull * SYMTAB_MAX_SYMBOLS ||
		h->names_len > SYMTAB_MAX_FILE)
		goto corrupt;
	want = sizeof(*h) + h->n * (sizeof(uint64_t) + sizeof(uint32_t)) + h->names_len;
	if (want != len)
		goto corrupt;
	t = calloc(1, sizeof(*t));
	if (!t) {
		munmap(map, len);
		return -ENOMEM;
	}
	t->n = h->n;
	t->start = (uint64_t *)(h + 1);
	t->name = (uint32_t *)(t->start + t->n);
	t->names = (char *)(t->name + t->n);
	t->names_len = h->names_len;
	t->map = map;
	t->map_len = len;
	t->bytes = sizeof(*t) + len;
	/* what a lookup relies on: ascending starts, names inside and ended */
	if (h->names_len && t->names[h->names_len - 1] != '\0') {
		free(t);
		goto corrupt;
	}
	for (size_t i = 0; i < t->n; i++)
		if ((i && t->start[i] <= t->start[i - 1]) ||
			(t->name[i] != NO_NAME && t->name[i] >= h->names_len)) {
			free(t);
			goto corrupt;
		}
	*ret_table = t;
	return 0;
corrupt:
	munmap(map, len);
	return -TD_E_CORRUPT;
}
