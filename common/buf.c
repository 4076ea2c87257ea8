/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The growable byte buffer (see buf.h).  Allocation goes through
 * td_realloc so that the fault injector can fail it; a buffer that failed
 * stays failed, and its owner reports -ENOMEM once. */
#include "buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "td.h"

int td_array_reserve(void **items, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t c = *cap ? *cap : (first ? first : 16);
	void *n;

	if (need <= *cap)
		return 0;
	if (size == 0 || need > SIZE_MAX / 2 / size)
		return -ENOMEM;
	while (c < need)
		c *= 2;
	n = td_realloc(*items, c * size);
	if (!n)
		return -ENOMEM;
	*items = n;
	*cap = c;
	return 0;
}

bool td_buf_reserve(struct td_buf *b, size_t more)
{
	if (b->failed)
		return false;
	if (more <= b->cap - b->len)
		return true;
	if (b->fixed || b->len > SIZE_MAX / 4 || more > SIZE_MAX / 4 - b->len ||
		td_array_grow(b->p, b->cap, b->len + more, 256) < 0) {
		b->failed = true;
		return false;
	}
	return true;
}

void td_buf_free(struct td_buf *b)
{
	if (!b)
		return;
	if (!b->fixed)
		free(b->p);
	*b = (struct td_buf){ 0 };
}
