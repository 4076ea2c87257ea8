/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Kernel symbols: /proc/kallsyms read once, its text symbols in one table
 * sorted by address, and a binary search per kernel frame.
 *
 * Why kallsyms and not vmlinux: it gives the live addresses, after KASLR
 * moved the kernel, and the modules' symbols too, with no debuginfo to
 * find.  It shows addresses to root alone (kptr_restrict): a table whose
 * addresses all read 0 is refused (-EPERM), so no frame is misnamed.
 *
 * Guarantees: one read of the file per table (a recording builds one, at
 * its first kernel frame); a lookup costs a binary search and allocates
 * nothing; each frame gets the function below it in its module, and an
 * address past every function's reach (64 KiB from the nearest symbol)
 * gets none.  Names go back to addresses through an index by name
 * (sym_kallsyms_index), for the kernel stacks /proc gives by name alone;
 * once made, nothing writes the table, and the writer and the sampler
 * share it.  Leaves to the caller what it writes: names, and offsets
 * from the module's first symbol, never a live address (which would show
 * where KASLR put the kernel). */
#define _GNU_SOURCE
#include "symbolize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"

/* past this from a symbol, an address is not that function's */
#define KSYM_REACH (64u * 1024)

struct ksym {
	uint64_t addr;
	uint32_t name, module; /* offsets into the pool; module 0: the kernel's */
};

/* owns: syms, pool, byname */
struct sym_kallsyms {
	struct ksym *syms;
	size_t n, cap;
	char *pool;
	size_t npool, cappool;
	/* sym_kallsyms_index: indexes into syms sorted by name, then
	 * module, then address; NULL until made */
	uint32_t *byname;
};

static uint32_t pool_add(struct sym_kallsyms *k, const char *s, size_t len)
{
	uint32_t at = (uint32_t)k->npool;

	if (td_array_grow(k->pool, k->cappool, k->npool + len + 1, 1 << 20) < 0)
		return UINT32_MAX;
	memcpy(k->pool + k->npool, s, len);
	k->pool[k->npool + len] = 0;
	k->npool += len + 1;
	return at;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One line "ADDR TYPE NAME[\t[MODULE]]": a text symbol (t, T, w, W) into
 * the table; the last module's name is kept in the pool once (*mod). */
static int add_line(struct sym_kallsyms *k, char *line, uint32_t *mod, char *last_mod,
	size_t last_len)
{
	char *end, *name, *m;
	unsigned long long addr = strtoull(line, &end, 16);
	char type;

	if (end == line || *end != ' ' || !end[1] || end[2] != ' ')
		return 0;
	type = end[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	name = end + 3;
	name[strcspn(name, "\n")] = 0;
	m = strchr(name, '\t');
	if (m) {
		*m++ = 0;
		m += *m == '[';
		m[strcspn(m, "]")] = 0;
		if (strlen(m) != last_len || memcmp(m, last_mod, last_len)) {
			snprintf(last_mod, 64, "%s", m);
			if ((*mod = pool_add(k, m, strlen(m))) == UINT32_MAX)
				return -ENOMEM;
		}
	}
	if (td_array_grow(k->syms, k->cap, k->n + 1, 4096) < 0)
		return -ENOMEM;
	k->syms[k->n] = (struct ksym){ addr, pool_add(k, name, strlen(name)), m ? *mod : 0 };
	if (k->syms[k->n].name == UINT32_MAX)
		return -ENOMEM;
	k->n++;
	return 0;
}

int sym_kallsyms_load(const char *path, struct sym_kallsyms **ret)
{
	struct sym_kallsyms *k = calloc(1, sizeof(*k));
	FILE *f = fopen(path ? path : "/proc/kallsyms", "re");
	char *line = NULL, last_mod[64] = "";
	size_t len = 0;
	uint32_t mod = 0;
	bool seen = false;
	int r = 0;

	if (!k || !f) {
		r = f ? -ENOMEM : -errno;
		goto out;
	}
	pool_add(k, "", 0); /* offset 0: the kernel's own */
	while (r == 0 && getline(&line, &len, f) > 0) {
		r = add_line(k, line, &mod, last_mod, strlen(last_mod));
		seen = seen || (k->n && k->syms[k->n - 1].addr);
	}
	if (r == 0 && !seen)
		r = -EPERM; /* kptr_restrict: every address reads 0 */
	if (r == 0)
		qsort(k->syms, k->n, sizeof(*k->syms), ksym_cmp);
out:
	free(line);
	if (f)
		fclose(f);
	if (r < 0) {
		sym_kallsyms_free(k);
		return r;
	}
	*ret = k;
	return 0;
}

void sym_kallsyms_free(struct sym_kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->pool);
	free(k->byname);
	free(k);
}

/* The index of the last symbol at or below addr; k->n if none. */
static size_t below(const struct sym_kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : k->n;
}

bool sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t addr, struct sym_kframe *ret)
{
	size_t i = k ? below(k, addr) : 0;
	const struct ksym *s;

	if (!k || i == k->n || addr - k->syms[i].addr >= KSYM_REACH)
		return false;
	s = &k->syms[i];
	ret->name = k->pool + s->name;
	ret->module = s->module ? k->pool + s->module : "kernel";
	ret->offset = addr - s->addr;
	return true;
}

/* qsort_r's comparison of two indexes into k->syms: name, module (the
 * kernel's, offset 0, first), address. */
static int byname_cmp(const void *a, const void *b, void *arg)
{
	const struct sym_kallsyms *k = arg;
	const struct ksym *x = &k->syms[*(const uint32_t *)a], *y = &k->syms[*(const uint32_t *)b];
	int c = strcmp(k->pool + x->name, k->pool + y->name);

	if (c)
		return c;
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int sym_kallsyms_index(struct sym_kallsyms *k)
{
	if (k->byname)
		return 0;
	if (k->n > UINT32_MAX || !(k->byname = malloc(k->n * sizeof(*k->byname) + 1)))
		return -ENOMEM;
	for (size_t i = 0; i < k->n; i++)
		k->byname[i] = (uint32_t)i;
	qsort_r(k->byname, k->n, sizeof(*k->byname), byname_cmp, k);
	return 0;
}

/* The first index of byname whose symbol's name is name. k->n if none. */
static size_t first_named(const struct sym_kallsyms *k, const char *name)
{
	size_t lo = 0, hi = k->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(k->pool + k->syms[k->byname[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < k->n && !strcmp(k->pool + k->syms[k->byname[lo]].name, name) ? lo : k->n;
}

bool sym_kallsyms_addr(const struct sym_kallsyms *k, const char *name, const char *module,
	uint64_t offset, uint64_t *ret_addr)
{
	size_t i = k && k->byname ? first_named(k, name) : 0;

	if (!k || !k->byname || offset >= KSYM_REACH)
		return false;
	/* Two static functions may share a name (in the kernel or in one
	 * module): the first whose address + offset names back to it, so
	 * that the frame reads as /proc wrote it. */
	for (; i < k->n; i++) {
		const struct ksym *s = &k->syms[k->byname[i]];
		const char *m = s->module ? k->pool + s->module : NULL;
		size_t at;

		if (strcmp(k->pool + s->name, name))
			break;
		if (module ? !m || strcmp(m, module) : m != NULL)
			continue;
		at = below(k, s->addr + offset);
		if (at < k->n && (k->syms[at].addr == s->addr ||
				!strcmp(k->pool + k->syms[at].name, name))) {
			*ret_addr = s->addr + offset;
			return true;
		}
	}
	return false;
}
