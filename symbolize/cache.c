/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The symbol cache: interned strings and (module build-id, ELF address) ->
 * inline chain, so that no symbol table or DWARF scope is searched twice
 * for the same pc, across every process that maps the same binary.
 *
 * Bounded: when the strings or entries pass their budget, the next
 * sym_cache_begin() (between two stacks, never inside one) drops all of it.
 * Strings live in fixed-size blocks that never move, so a pointer handed out
 * stays valid until that flush.
 *
 * It also keeps each module's symbol table (symtab.c), by the same module
 * key.  Those are not flushed: sessions hold them across stacks, and
 * building one reads every symbol of the module, the very cost they save.
 * They have a budget of their own; past it, a module gets no table (its
 * session falls back on dwfl_module_addrinfo()).  The sessions' scope
 * indexes (names.c) are theirs, but their bytes are counted here, against
 * one budget for all. */
#include "symbolize-internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/buf.h"
#include "../common/map.h"

#define BLOCK_SIZE (256u * 1024)
#define BUDGET_BYTES (64u * 1024 * 1024)
#define BUDGET_ENTRIES (1u << 20)
#define BUDGET_TABLE_BYTES (128u * 1024 * 1024)
/* every session's scope indexes together: libpython 3.12's is about 1 MiB */
#define BUDGET_SCOPE_BYTES (64u * 1024 * 1024)

struct str_block {
	struct str_block *next;
	size_t used, size;
	char data[];
};

/* One cached pc: its inline chain is lines[first, first + n). */
struct pc_entry {
	uint64_t modkey, vaddr;
	uint32_t first, n;
};

/* owns: blocks, the maps, pcs, lines, the symbol tables */
struct sym_cache {
	struct str_block *blocks;
	size_t bytes;		/* blocks and lines; cache_bytes adds the rest */
	struct td_map strs;	/* hash of the bytes -> the interned copy */
	struct td_map pc_index; /* hash of (modkey, vaddr) -> index into pcs */
	struct td_buf pcs;	/* struct pc_entry[], by index */
	size_t pcs_used;
	struct sym_line *lines;
	size_t lines_cap, lines_used;
	struct td_map tables; /* modkey -> struct sym_table *, never flushed */
	size_t table_bytes;
	size_t scope_bytes; /* taken by the sessions' scope indexes */
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
	td_map_free(&c->strs);
	td_map_free(&c->pc_index);
	td_buf_free(&c->pcs);
	free(c->lines);
	c->lines = NULL;
	c->pcs_used = 0;
	c->lines_cap = c->lines_used = 0;
	c->bytes = 0;
}

void sym_cache_free(struct sym_cache *c)
{
	size_t cur = 0;
	uint64_t key, t;

	if (!c)
		return;
	flush(c);
	while (td_map_next(&c->tables, &cur, &key, &t))
		sym_table_free((struct sym_table *)(uintptr_t)t);
	td_map_free(&c->tables);
	free(c);
}

static size_t cache_bytes(const struct sym_cache *c)
{
	return c->bytes + td_map_bytes(&c->strs) + td_map_bytes(&c->pc_index) + c->pcs.cap;
}

void sym_cache_stats(const struct sym_cache *c, struct sym_cache_stats *ret)
{
	*ret = c->st;
	ret->entries = c->pcs_used;
	ret->tables = c->tables.count;
	ret->table_bytes = c->table_bytes + td_map_bytes(&c->tables);
	ret->bytes = cache_bytes(c) + ret->table_bytes;
}

void sym_cache_begin(struct sym_cache *c)
{
	/* pcs.failed: an allocation failed; start afresh rather than stop caching */
	if (cache_bytes(c) > BUDGET_BYTES || c->pcs_used > BUDGET_ENTRIES || c->pcs.failed) {
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

const char *sym_cache_intern(struct sym_cache *c, const char *s, size_t len)
{
	uint64_t h, v;
	size_t cur = 0;
	char *copy;

	if (!s)
		return NULL;
	if (len > SYM_MAX_NAME)
		len = SYM_MAX_NAME;
	h = sym_hash(s, len, 0);
	while (td_map_find_next(&c->strs, h, &cur, &v)) {
		const char *t = (const char *)(uintptr_t)v;

		/* strnlen first: t may be shorter than len */
		if (strnlen(t, len + 1) == len && !memcmp(t, s, len))
			return t;
	}
	copy = arena_alloc(c, len + 1);
	if (!copy)
		return "[out of memory]";
	memcpy(copy, s, len);
	copy[len] = '\0';
	if (td_map_add(&c->strs, h, (uint64_t)(uintptr_t)copy) < 0)
		return "[out of memory]";
	return copy;
}

static uint64_t pc_hash(uint64_t modkey, uint64_t vaddr)
{
	return modkey ^ (vaddr * 0x9e3779b97f4a7c15ull);
}

bool sym_cache_lookup(struct sym_cache *c, uint64_t modkey, uint64_t vaddr,
	const struct sym_line **ret_lines, unsigned *ret_n)
{
	size_t cur = 0;
	uint64_t i;

	while (td_map_find_next(&c->pc_index, pc_hash(modkey, vaddr), &cur, &i)) {
		const struct pc_entry *e = (const struct pc_entry *)(void *)c->pcs.p + i;

		if (e->modkey == modkey && e->vaddr == vaddr) {
			*ret_lines = c->lines + e->first;
			*ret_n = e->n;
			c->st.hits++;
			return true;
		}
	}
	c->st.misses++;
	return false;
}

void sym_cache_insert(struct sym_cache *c, uint64_t modkey, uint64_t vaddr,
	const struct sym_line *lines, unsigned n)
{
	struct pc_entry e = { modkey, vaddr, (uint32_t)c->lines_used, n };

	if (c->lines_used + n > c->lines_cap) {
		size_t old = c->lines_cap;

		if (td_array_grow(c->lines, c->lines_cap, c->lines_used + n, 8192) < 0)
			return;
		c->bytes += (c->lines_cap - old) * sizeof(*c->lines);
	}
	if (!td_buf_reserve(&c->pcs, sizeof(e)) ||
		td_map_add(&c->pc_index, pc_hash(modkey, vaddr), c->pcs_used) < 0)
		return;
	td_buf_put(&c->pcs, &e, sizeof(e));
	memcpy(c->lines + c->lines_used, lines, n * sizeof(*lines));
	c->lines_used += n;
	c->pcs_used++;
}

bool sym_cache_scopes_take(struct sym_cache *c, size_t bytes)
{
	if (bytes > BUDGET_SCOPE_BYTES - c->scope_bytes)
		return false;
	c->scope_bytes += bytes;
	return true;
}

void sym_cache_scopes_give(struct sym_cache *c, size_t bytes)
{
	c->scope_bytes -= bytes < c->scope_bytes ? bytes : c->scope_bytes;
}

const struct sym_table *sym_cache_table(const struct sym_cache *c, uint64_t modkey)
{
	uint64_t t;

	return td_map_get(&c->tables, modkey, &t) ? (const struct sym_table *)(uintptr_t)t : NULL;
}

bool sym_cache_table_room(struct sym_cache *c)
{
	if (c->table_bytes < BUDGET_TABLE_BYTES)
		return true;
	c->st.table_denied++;
	return false;
}

const struct sym_table *sym_cache_table_add(struct sym_cache *c, uint64_t modkey,
	struct sym_table *t)
{
	const struct sym_table *had = sym_cache_table(c, modkey);

	if (had) {
		sym_table_free(t);
		return had;
	}
	if (c->table_bytes + sym_table_bytes(t) > BUDGET_TABLE_BYTES) {
		c->st.table_denied++;
		sym_table_free(t);
		return NULL;
	}
	if (td_map_add(&c->tables, modkey, (uint64_t)(uintptr_t)t) < 0) {
		sym_table_free(t);
		return NULL;
	}
	c->table_bytes += sym_table_bytes(t);
	return t;
}
