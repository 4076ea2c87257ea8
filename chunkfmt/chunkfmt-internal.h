/* Private to chunkfmt/: byte buffers, varints, little-endian fields. */
#ifndef TD_CHUNKFMT_INTERNAL_H
#define TD_CHUNKFMT_INTERNAL_H

#include <string.h>

#include "chunkfmt.h"

static const uint8_t tcf_magic[8] = { 0x89, 'T', 'C', 'F', '\r', '\n', 0x1a, '\n' };
static const uint8_t tcf_end_magic[8] = { 0x89, 'T', 'C', 'E', '\r', '\n', 0x1a, '\n' };

/* Tests: make the repository walk its path one component at a time, as
 * on kernels without openat2(2). */
extern bool tcf_repo_no_openat2;

/* Write the chunks of the repository open as repo_dirfd into out_fd (the
 * work of repo_snapshot; both borrowed), then fsync out_fd.  -ENODATA: no
 * chunks. */
int tcf_snapshot_fd(int repo_dirfd, int out_fd, uint64_t since_ns, unsigned *ret_chunks,
	unsigned *ret_repaired, uint64_t *ret_bytes);

/* block flags */
enum { TCF_BLK_HAS_DEFS = 1u << 4, TCF_BLK_FINAL = 1u << 5, TCF_BLK_INDEX = 1u << 6 };

/* A growable byte buffer (writer side).  owns: p */
struct tcf_buf {
	uint8_t *p;
	size_t len, cap;
	bool failed; /* an allocation failed: contents are not to be used */
};

bool tcf_buf_reserve(struct tcf_buf *b, size_t more);
void tcf_buf_free(struct tcf_buf *b);

static inline void tcf_put_bytes(struct tcf_buf *b, const void *p, size_t n)
{
	if (n == 0) /* p may be NULL (an empty buffer): memcpy must not see it */
		return;
	if (!tcf_buf_reserve(b, n))
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static inline void tcf_put_varint(struct tcf_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	tcf_put_bytes(b, tmp, n);
}

static inline uint64_t tcf_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t tcf_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void tcf_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static inline void tcf_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void tcf_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t tcf_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t tcf_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t tcf_rd64(const uint8_t *p)
{
	return (uint64_t)tcf_rd32(p) | (uint64_t)tcf_rd32(p + 4) << 32;
}

/* A bounded cursor (reader side): every read checks the end. */
struct tcf_cur {
	const uint8_t *p, *end;
	bool bad;
};

static inline uint64_t tcf_get_varint(struct tcf_cur *c)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (c->p >= c->end) {
			c->bad = true;
			return 0;
		}
		b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;
	return 0;
}

static inline const uint8_t *tcf_get_bytes(struct tcf_cur *c, uint64_t n)
{
	const uint8_t *p = c->p;

	if (n > (uint64_t)(c->end - c->p)) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	return p;
}

#endif
