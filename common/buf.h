/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd: the growable byte buffer and LEB128 varints, for every stage
 * that builds bytes (the chunk writer, the pprof and html exporters).
 *
 * Varints are unsigned LEB128: seven bits a byte, least significant
 * first, the high bit set on every byte but the last; at most
 * TD_VARINT_MAX bytes for a uint64_t.  The chunk format (tracerd-chunk(5))
 * and protobuf use this same encoding, so its bytes must never change. */
#ifndef TD_BUF_H
#define TD_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TD_VARINT_MAX 10

/* A byte buffer that grows by doubling, from 256 bytes, through
 * td_realloc (so the fault injector reaches it).  A failed allocation sets
 * failed and every later append is dropped: check failed once, at the
 * end, not after each append.  A fixed buffer (TD_BUF_FIXED) writes into
 * storage the caller lends and never grows: an append that does not fit
 * sets failed.  Reset with len = 0 (keeps the storage).
 * owns: p (unless fixed: then borrowed). */
struct td_buf {
	uint8_t *p;
	size_t len, cap;
	bool failed; /* contents are not to be used */
	bool fixed;  /* p is the caller's, of cap bytes */
};

#define TD_BUF_FIXED(mem, size) ((struct td_buf){ .p = (mem), .cap = (size), .fixed = true })

/* The one growable array: make room for need elements of size bytes at
 * *items, whose capacity is *cap; the capacity doubles from first (or 16)
 * until it holds need.  Allocation goes through td_realloc.  Returns 0, or
 * -ENOMEM (an overflowing size too), leaving *items and *cap as they were.
 * Use it through td_array_grow(), which passes the element size. */
int td_array_reserve(void **items, size_t *cap, size_t need, size_t size, size_t first);
#define td_array_grow(items, cap, need, first)                                            \
	td_array_reserve((void **)&(items), &(cap), (need), sizeof(*(items)), (first))

/* Room for more bytes after len; false (and failed set) if there is none. */
bool td_buf_reserve(struct td_buf *b, size_t more);
/* Frees p unless fixed; leaves an empty growable buffer.  NULL-safe. */
void td_buf_free(struct td_buf *b);

static inline void td_buf_put(struct td_buf *b, const void *p, size_t n)
{
	if (n == 0) /* p may be NULL (an empty buffer): memcpy must not see it */
		return;
	if (!td_buf_reserve(b, n))
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Encode v at out (TD_VARINT_MAX bytes of room); returns its length. */
static inline size_t td_varint_encode(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	do {
		out[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

static inline void td_buf_put_varint(struct td_buf *b, uint64_t v)
{
	uint8_t tmp[TD_VARINT_MAX];

	td_buf_put(b, tmp, td_varint_encode(tmp, v));
}

/* Decode the varint at *p (input ends at end) into *ret_v and move *p past
 * it.  False on a truncated varint (then *p = end) or one that goes on
 * past TD_VARINT_MAX bytes (then *p is past those); *ret_v is 0 then.
 * Bits past the 64th in a tenth byte are ignored, as readers always did. */
static inline bool td_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *ret_v)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*p >= end) {
			*ret_v = 0;
			return false;
		}
		b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret_v = v;
			return true;
		}
	}
	*ret_v = 0;
	return false;
}

#endif
