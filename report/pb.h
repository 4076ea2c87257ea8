/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Protocol buffer fields written into a struct td_buf (common/buf.h): the
 * few wire types the profile encoders need, written by hand (pprof.c says
 * why no generated encoder).  A failed allocation marks the buffer
 * failed; the caller checks once at the end. */
#ifndef TD_REPORT_PB_H
#define TD_REPORT_PB_H

#include <stdint.h>
#include <string.h>

#include "../common/buf.h"

/* varint field; 0 is proto3's default and is left out */
static inline void pb_uint(struct td_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	td_buf_put_varint(b, (uint64_t)field << 3);
	td_buf_put_varint(b, v);
}

static inline void pb_bytes(struct td_buf *b, unsigned field, const void *p, size_t n)
{
	td_buf_put_varint(b, (uint64_t)field << 3 | 2);
	td_buf_put_varint(b, n);
	td_buf_put(b, p, n);
}

/* an embedded message (or a packed repeated field) */
static inline void pb_msg(struct td_buf *b, unsigned field, const struct td_buf *m)
{
	pb_bytes(b, field, m->p, m->len);
	if (m->failed)
		b->failed = true;
}

static inline void pb_str(struct td_buf *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

static inline void pb_fixed64(struct td_buf *b, unsigned field, uint64_t v)
{
	uint8_t le[8];

	for (unsigned i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	td_buf_put_varint(b, (uint64_t)field << 3 | 1);
	td_buf_put(b, le, 8);
}

#endif
