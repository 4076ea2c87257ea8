/* The rings' one-time setup and teardown; the hot path is inline in
 * ring.h, which also states the contract every ring keeps. */
#include "ring.h"

#include <errno.h>
#include <stdlib.h>

int ring_init(struct ring *q, uint32_t cap, uint32_t slot_size)
{
	uint32_t c = 1;

	while (c < cap)
		c <<= 1;
	q->cap = c;
	q->slot_size = (slot_size + 15) & ~15u;
	q->mem = calloc(c, q->slot_size);
	atomic_init(&q->head, 0);
	atomic_init(&q->tail, 0);
	return q->mem ? 0 : -ENOMEM;
}

void ring_free(struct ring *q)
{
	free(q->mem);
	q->mem = NULL;
}
