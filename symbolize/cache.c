/* The symbol cache: interned strings and (module build-id, ELF address) ->
 * inline chain, so that no symbol table or DWARF scope is searched twice
 * for the same pc, across every process that maps the same binary.
 *
 * Bounded: when the strings or entries pass their budget, the next
 * sym_cache_begin() (between two stacks, never inside one) drops all of it.
 * Strings live in fixed-size blocks that never move, so a pointer handed out
 * stays valid until that flush. */
#include "symbolize-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_SIZE (256u * 1024)
#define BUDGET_BYTES (64u * 1024 * 1024)
#define BUDGET_ENTRIES (1u << 20)

struct str_block {
	struct str_block *next;
	size_t used, size;
	char data[];
};

struct str_slot {
	uint64_t hash;
	const char *s; /* NULL: free */
	size_t len;
};

struct pc_slot {
	uint64_t modkey, vaddr;
	uint32_t first, n;
	bool used;
};

/* owns: blocks, strs, pcs, lines */
struct sym_cache {
	struct str_block *blocks;
	size_t bytes;
	struct str_slot *strs;
	size_t strs_cap, strs_used;
	struct pc_slot *pcs;
	size_t pcs_cap, pcs_used;
	struct sym_line *lines;
	size_t lines_cap, lines_used;
	struct sym_cache_stats st;
};

uint64_t sym_hash(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull ^ seed;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

int sym_cache_new(struct sym_cache **ret_cache)
{
	struct sym_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	*ret_cache = c;
	return 0;
}

static void flush(struct sym_cache *c)
{
	while (c->blocks) {
		struct str_block *b = c->blocks;

		c->blocks = b->next;
		free(b);
	}
	free(c->strs);
	free(c->pcs);
	free(c->lines);
	c->strs = NULL;
	c->pcs = NULL;
	c->lines = NULL;
	c->strs_cap = c->strs_used = c->pcs_cap = c->pcs_used = 0;
	c->lines_cap = c->lines_used = 0;
	c->bytes = 0;
}

void sym_cache_free(struct sym_cache *c)
{
	if (!c)
		return;
	flush(c);
	free(c);
}

void sym_cache_stats(const struct sym_cache *c, struct sym_cache_stats *ret)
{
	*ret = c->st;
	ret->entries = c->pcs_used;
	ret->bytes = c->bytes;
}

void sym_cache_begin(struct sym_cache *c)
{
	if (c->bytes > BUDGET_BYTES || c->pcs_used > BUDGET_ENTRIES) {
		flush(c);
		c->st.flushes++;
	}
}

static char *arena_alloc(struct sym_cache *c, size_t len)
{
	struct str_block *b = c->blocks;

	if (!b || b->size - b->used < len) {
		size_t size = len > BLOCK_SIZE ? len : BLOCK_SIZE;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = c->blocks;
		c->blocks = b;
		c->bytes += sizeof(*b) + size;
	}
	b->used += len;
	return b->data + b->used - len;
}

static bool strs_grow(struct sym_cache *c)
{
	size_t cap = c->strs_cap ? c->strs_cap * 2 : 4096;
	struct str_slot *n = calloc(cap, sizeof(*n));

	if (!n)
		return false;
	for (size_t i = 0; i < c->strs_cap; i++) {
		size_t j;

		if (!c->strs[i].s)
			continue;
		j = c->strs[i].hash & (cap - 1);
		while (n[j].s)
			j = (j + 1) & (cap - 1);
		n[j] = c->strs[i];
	}
	free(c->strs);
	c->strs = n;
	c->bytes += (cap - c->strs_cap) * sizeof(*n);
	c->strs_cap = cap;
	return true;
}

const char *sym_cache_intern(struct sym_cache *c, const char *s, size_t len)
{
	uint64_t h;
	size_t i;
	char *copy;

	if (!s)
		return NULL;
	if (len > SYM_MAX_NAME)
		len = SYM_MAX_NAME;
	if ((c->strs_used + 1) * 2 > c->strs_cap && !strs_grow(c))
		return "[out of memory]";
	h = sym_hash(s, len, 0);
	i = h & (c->strs_cap - 1);
	while (c->strs[i].s) {
		if (c->strs[i].hash == h && c->strs[i].len == len && !memcmp(c->strs[i].s, s, len))
			return c->strs[i].s;
		i = (i + 1) & (c->strs_cap - 1);
	}
	copy = arena_alloc(c, len + 1);
	if (!copy)
		return "[out of memory]";
	memcpy(copy, s, len);
	copy[len] = '\0';
	c->strs[i] = (struct str_slot){ h, copy, len };
	c->strs_used++;
	return copy;
}

static size_t pc_index(uint64_t modkey, uint64_t vaddr, size_t cap)
{
	uint64_t h = (modkey ^ (vaddr * 0x9e3779b97f4a7c15ull));

	return (size_t)(h ^ (h >> 31)) & (cap - 1);
}

bool sym_cache_lookup(struct sym_cache *c, uint64_t modkey, uint64_t vaddr,
	const struct sym_line **ret_lines, unsigned *ret_n)
{
	size_t i;

	if (!c->pcs_cap) {
		c->st.misses++;
		return false;
	}
	i = pc_index(modkey, vaddr, c->pcs_cap);
	while (c->pcs[i].used) {
		if (c->pcs[i].modkey == modkey && c->pcs[i].vaddr == vaddr) {
			*ret_lines = c->lines + c->pcs[i].first;
			*ret_n = c->pcs[i].n;
			c->st.hits++;
			return true;
		}
		i = (i + 1) & (c->pcs_cap - 1);
	}
	c->st.misses++;
	return false;
}

static bool pcs_grow(struct sym_cache *c)
{
	size_t cap = c->pcs_cap ? c->pcs_cap * 2 : 4096;
	struct pc_slot *n = calloc(cap, sizeof(*n));

	if (!n)
		return false;
	for (size_t i = 0; i < c->pcs_cap; i++) {
		size_t j;

		if (!c->pcs[i].used)
			continue;
		j = pc_index(c->pcs[i].modkey, c->pcs[i].vaddr, cap);
		while (n[j].used)
			j = (j + 1) & (cap - 1);
		n[j] = c->pcs[i];
	}
	free(c->pcs);
	c->pcs = n;
	c->bytes += (cap - c->pcs_cap) * sizeof(*n);
	c->pcs_cap = cap;
	return true;
}

void sym_cache_insert(struct sym_cache *c, uint64_t modkey, uint64_t vaddr,
	const struct sym_line *lines, unsigned n)
{
	size_t i;

	if ((c->pcs_used + 1) * 2 > c->pcs_cap && !pcs_grow(c))
		return;
	if (c->lines_used + n > c->lines_cap) {
		size_t cap = c->lines_cap ? c->lines_cap * 2 : 8192;
		struct sym_line *nl;

		while (cap < c->lines_used + n)
			cap *= 2;
		nl = realloc(c->lines, cap * sizeof(*nl));
		if (!nl)
			return;
		c->bytes += (cap - c->lines_cap) * sizeof(*nl);
		c->lines = nl;
		c->lines_cap = cap;
	}
	memcpy(c->lines + c->lines_used, lines, n * sizeof(*lines));
	i = pc_index(modkey, vaddr, c->pcs_cap);
	while (c->pcs[i].used)
		i = (i + 1) & (c->pcs_cap - 1);
	c->pcs[i] = (struct pc_slot){ modkey, vaddr, (uint32_t)c->lines_used, n, true };
	c->lines_used += n;
	c->pcs_used++;
}
