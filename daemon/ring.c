/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The rings' one-time setup and teardown; the hot path is inline in
 * ring.h, which also states the contract every ring keeps. */
#include "ring.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Zeroed pages for the ring, faulted in as used; an empty ring. */
static int map(struct ring *q, size_t bytes)
{
	q->mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q->mem == MAP_FAILED) {
		q->mem = NULL;
		return -ENOMEM;
	}
	atomic_init(&q->head, 0);
	atomic_init(&q->tail, 0);
	return 0;
}

int ring_init(struct ring *q, uint32_t cap, uint32_t slot_size)
{
	uint32_t c = 1;

	while (c < cap)
		c <<= 1;
	q->cap = c;
	q->slot_size = (slot_size + 15) & ~15u;
	return map(q, (size_t)c * q->slot_size);
}

int ring_init_bytes(struct ring *q, size_t bytes)
{
	size_t c = 4096;

	while (c < bytes)
		c <<= 1;
	if (c > UINT32_MAX / 2 + 1)
		return -ENOMEM;
	q->cap = (uint32_t)c;
	q->slot_size = 0;
	q->skip = 0;
	q->warm = q->cap;
	return map(q, c);
}

void ring_keep_warm(struct ring *q, size_t warm)
{
	q->warm = (uint32_t)(warm < q->cap ? warm : q->cap) & ~15u;
}

static size_t ring_bytes(const struct ring *q)
{
	return q->slot_size ? (size_t)q->cap * q->slot_size : q->cap;
}

void ring_prefault(struct ring *q)
{
	size_t len = q->slot_size ? ring_bytes(q) : q->warm;

	if (madvise(q->mem, len, MADV_POPULATE_WRITE) < 0) /* before Linux 5.14 */
		for (size_t i = 0; i < len; i += 4096)
			((volatile uint8_t *)q->mem)[i] = 0;
}

void ring_free(struct ring *q)
{
	if (q->mem)
		munmap(q->mem, ring_bytes(q));
	q->mem = NULL;
}
