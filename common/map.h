/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd: the hash map, uint64_t key -> uint64_t value, for every table
 * of the daemon, the chunk writer, the symbol cache and the report.
 *
 * Open addressing with linear probing, at most half full.  A removal
 * shifts the entries after it back into the hole (no tombstones), so churn
 * never degrades a table and never calls for a rehash.  Two modes:
 *
 *   growable  a zeroed struct td_map: 1024 slots at the first insert,
 *             doubled (td_malloc, so the fault injector reaches it) when
 *             an insert would pass half.
 *   fixed     td_map_init_fixed(m, max): every byte allocated there; no
 *             later call allocates, and an insert past max entries
 *             returns -TD_E_FULL.  For the tables the sampler and ptrace/
 *             consult while a target thread is held stopped.
 *
 * Any key is valid (0 too).  A key may be stored more than once
 * (td_map_add): a table keyed by content stores hash -> index, then walks
 * the entries of that hash (td_map_find_next) and compares the content
 * itself.  td_map_next visits slots in order; that order depends only on
 * the keys inserted and their order, so output built from it is
 * reproducible.  Not thread-safe; lookups never write.
 *
 * owns: slots (one allocation with the occupancy bitmap). */
#ifndef TD_MAP_H
#define TD_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct td_map_slot {
	uint64_t key, value;
};

struct td_map {
	struct td_map_slot *slots;
	uint64_t *used; /* a bit per slot, after the slots */
	size_t cap;	/* slots: 0, or a power of two */
	size_t count;	/* entries */
	size_t max;	/* fixed mode: the bound on count; 0: growable */
};

/* Fixed mode for at most max entries (>= 1): 0, -EINVAL or -ENOMEM. */
int td_map_init_fixed(struct td_map *m, size_t max);
/* Release the storage; the map is then an empty growable one.  NULL-safe. */
void td_map_free(struct td_map *m);
/* Remove every entry, keep the storage. */
void td_map_clear(struct td_map *m);
/* Bytes allocated (for memory budgets). */
size_t td_map_bytes(const struct td_map *m);

/* The value of key (its first entry); false if absent. */
bool td_map_get(const struct td_map *m, uint64_t key, uint64_t *ret_value);
/* The entries of key, one per call: start with *cursor = 0; false when
 * there are no more.  Do not change the map during the walk. */
bool td_map_find_next(const struct td_map *m, uint64_t key, size_t *cursor, uint64_t *ret_value);
/* Every entry, in slot order: start with *cursor = 0. */
bool td_map_next(const struct td_map *m, size_t *cursor, uint64_t *ret_key, uint64_t *ret_value);

/* Set key's value: 1 if added, 0 if an entry was replaced (that never
 * allocates nor fails), -ENOMEM or -TD_E_FULL. */
int td_map_set(struct td_map *m, uint64_t key, uint64_t value);
/* Add an entry even if key is present: 0, -ENOMEM or -TD_E_FULL. */
int td_map_add(struct td_map *m, uint64_t key, uint64_t value);
/* The value of key, added as 0 if absent: 1 if added, 0 if present,
 * -ENOMEM or -TD_E_FULL.  *ret_value stays valid until the map changes.
 * A growable map may grow here even when key is present (it makes room
 * first, as the report's table did, which keeps the slot order). */
int td_map_upsert(struct td_map *m, uint64_t key, uint64_t **ret_value);
/* Remove key's first entry; false if absent. */
bool td_map_remove(struct td_map *m, uint64_t key);

#endif
