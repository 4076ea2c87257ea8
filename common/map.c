/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The hash map (see map.h).  Linear probing from the slot the key's mixed
 * bits pick; removal by backward shift.  The probe sequence, the growth
 * rule (double when an insert would pass half, rehash in slot order) and
 * the mixer are those the report's table always had, so its exporters
 * (which walk thread x stack counts in slot order) write the same bytes.
 *
 * The only allocations are in table_alloc: at td_map_init_fixed, and for
 * a growable map when an insert needs room. */
#include "map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "td.h"

#define GROWABLE_FIRST_CAP 1024

/* The finalizer's first half of MurmurHash3: sequential keys (tids, ids)
 * spread over the whole table. */
static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

static size_t home(const struct td_map *m, uint64_t key)
{
	return (size_t)mix(key) & (m->cap - 1);
}

static bool is_used(const struct td_map *m, size_t i)
{
	return m->used[i / 64] >> (i % 64) & 1;
}

static void mark(struct td_map *m, size_t i, bool on)
{
	if (on)
		m->used[i / 64] |= 1ull << (i % 64);
	else
		m->used[i / 64] &= ~(1ull << (i % 64));
}

static size_t bitmap_words(size_t cap)
{
	return (cap + 63) / 64;
}

/* Empty storage for cap slots (a power of two). */
static bool table_alloc(struct td_map *m, size_t cap)
{
	size_t words = bitmap_words(cap);
	struct td_map_slot *slots;

	if (cap > (SIZE_MAX - words * sizeof(uint64_t)) / sizeof(*slots))
		return false;
	slots = td_malloc(cap * sizeof(*slots) + words * sizeof(uint64_t));
	if (!slots)
		return false;
	m->slots = slots;
	m->used = (uint64_t *)(slots + cap);
	memset(m->used, 0, words * sizeof(uint64_t));
	m->cap = cap;
	m->count = 0;
	return true;
}

/* The first free slot of key's probe sequence (there is one: the table is
 * at most half full). */
static size_t free_slot(const struct td_map *m, uint64_t key)
{
	size_t i = home(m, key);

	while (is_used(m, i))
		i = (i + 1) & (m->cap - 1);
	return i;
}

int td_map_init_fixed(struct td_map *m, size_t max)
{
	size_t cap = 16;

	*m = (struct td_map){ 0 };
	if (max == 0 || max > SIZE_MAX / 4)
		return -EINVAL;
	while (cap < 2 * max)
		cap *= 2;
	if (!table_alloc(m, cap))
		return -ENOMEM;
	m->max = max;
	return 0;
}

void td_map_free(struct td_map *m)
{
	if (!m)
		return;
	free(m->slots);
	*m = (struct td_map){ 0 };
}

void td_map_clear(struct td_map *m)
{
	if (m->cap)
		memset(m->used, 0, bitmap_words(m->cap) * sizeof(uint64_t));
	m->count = 0;
}

size_t td_map_bytes(const struct td_map *m)
{
	return m->cap ? m->cap * sizeof(*m->slots) + bitmap_words(m->cap) * sizeof(uint64_t) : 0;
}

/* Room for one more entry: growable maps double (rehashing in slot
 * order), fixed ones refuse. */
static int make_room(struct td_map *m)
{
	struct td_map old = *m;

	if (m->max)
		return m->count < m->max ? 0 : -TD_E_FULL;
	if ((m->count + 1) * 2 <= m->cap)
		return 0;
	if (m->cap > SIZE_MAX / 4)
		return -ENOMEM;
	if (!table_alloc(m, m->cap ? m->cap * 2 : GROWABLE_FIRST_CAP)) {
		*m = old;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old.cap; i++) {
		if (is_used(&old, i)) {
			size_t j = free_slot(m, old.slots[i].key);

			m->slots[j] = old.slots[i];
			mark(m, j, true);
		}
	}
	m->count = old.count;
	free(old.slots);
	return 0;
}

/* The slot of key's first entry, or -1. */
static ssize_t find(const struct td_map *m, uint64_t key)
{
	if (!m->cap)
		return -1;
	for (size_t i = home(m, key); is_used(m, i); i = (i + 1) & (m->cap - 1))
		if (m->slots[i].key == key)
			return (ssize_t)i;
	return -1;
}

bool td_map_get(const struct td_map *m, uint64_t key, uint64_t *ret_value)
{
	ssize_t i = find(m, key);

	if (i < 0)
		return false;
	*ret_value = m->slots[i].value;
	return true;
}

bool td_map_find_next(const struct td_map *m, uint64_t key, size_t *cursor, uint64_t *ret_value)
{
	size_t i;

	/* *cursor: 0 to start, else the slot after the last one returned, + 1 */
	if (!m->cap)
		return false;
	i = *cursor ? *cursor - 1 : home(m, key);
	for (; is_used(m, i); i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].key == key) {
			*cursor = ((i + 1) & (m->cap - 1)) + 1;
			*ret_value = m->slots[i].value;
			return true;
		}
	}
	return false;
}

bool td_map_next(const struct td_map *m, size_t *cursor, uint64_t *ret_key, uint64_t *ret_value)
{
	for (size_t i = *cursor; i < m->cap; i++) {
		if (is_used(m, i)) {
			*cursor = i + 1;
			*ret_key = m->slots[i].key;
			*ret_value = m->slots[i].value;
			return true;
		}
	}
	*cursor = m->cap;
	return false;
}

/* A new entry for key at the end of its probe run; its slot. */
static size_t insert(struct td_map *m, uint64_t key, uint64_t value)
{
	size_t i = free_slot(m, key);

	m->slots[i] = (struct td_map_slot){ key, value };
	mark(m, i, true);
	m->count++;
	return i;
}

int td_map_add(struct td_map *m, uint64_t key, uint64_t value)
{
	int r = make_room(m);

	if (r < 0)
		return r;
	insert(m, key, value);
	return 0;
}

int td_map_upsert(struct td_map *m, uint64_t key, uint64_t **ret_value)
{
	ssize_t i;
	int r;

	/* A growable map makes room before it looks, as the report's table
	 * did: its slot order, and so the exporters' output, stays the same. */
	if (!m->max && (r = make_room(m)) < 0)
		return r;
	i = find(m, key);
	if (i >= 0) {
		*ret_value = &m->slots[i].value;
		return 0;
	}
	if (m->max && (r = make_room(m)) < 0)
		return r;
	*ret_value = &m->slots[insert(m, key, 0)].value;
	return 1;
}

int td_map_set(struct td_map *m, uint64_t key, uint64_t value)
{
	ssize_t i = find(m, key);
	int r;

	if (i >= 0) {
		m->slots[i].value = value;
		return 0;
	}
	r = make_room(m);
	if (r < 0)
		return r;
	insert(m, key, value);
	return 1;
}

bool td_map_remove(struct td_map *m, uint64_t key)
{
	ssize_t found = find(m, key);
	size_t mask = m->cap - 1, i, j;

	if (found < 0)
		return false;
	i = j = (size_t)found;
	mark(m, i, false);
	m->count--;
	for (;;) {
		size_t k;

		j = (j + 1) & mask;
		if (!is_used(m, j))
			break;
		k = home(m, m->slots[j].key);
		/* move j into the hole at i unless its home k lies cyclically
		 * in (i, j]: then a lookup from k still reaches it */
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			m->slots[i] = m->slots[j];
			mark(m, i, true);
			mark(m, j, false);
			i = j;
		}
	}
	return true;
}
