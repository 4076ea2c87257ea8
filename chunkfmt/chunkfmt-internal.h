/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to chunkfmt/: the reader's cursor, zigzag, little-endian fields,
 * and the encoders of the fixed layouts that writer and repair share.  Byte
 * buffers and varints are common/'s (buf.h). */
#ifndef TD_CHUNKFMT_INTERNAL_H
#define TD_CHUNKFMT_INTERNAL_H

#include <string.h>
#include <time.h>

#include "chunkfmt.h"
#include "../common/buf.h"

static const uint8_t tcf_magic[8] = { 0x89, 'T', 'C', 'F', '\r', '\n', 0x1a, '\n' };
static const uint8_t tcf_end_magic[8] = { 0x89, 'T', 'C', 'E', '\r', '\n', 0x1a, '\n' };

/* Tests: make the repository walk its path one component at a time, as
 * on kernels without openat2(2). */
extern bool tcf_repo_no_openat2;

/* Which chunks tcf_snapshot_fd copies, and how it marks their headers. */
struct tcf_snap_opts {
	uint64_t since_real_ns; /* last written (mtime) at or after this
				 * CLOCK_REALTIME ns; 0: every chunk */
	bool keep_newest;	/* and the newest chunk, whatever its mtime */
	uint32_t set_flags;	/* TCF_HDR_* set in every header copy */
	uint32_t target_pid;	/* non-zero: every header copy's target_pid */
};

/* Write the chunks of the repository open as repo_dirfd into out_fd (the
 * work of repo_snapshot and repo_emergency_into; both borrowed), then
 * fsync out_fd.  -ENODATA: no chunks. */
int tcf_snapshot_fd(int repo_dirfd, int out_fd, const struct tcf_snap_opts *o,
	unsigned *ret_chunks, unsigned *ret_repaired, uint64_t *ret_bytes);

/* block flags */
enum { TCF_BLK_HAS_DEFS = 1u << 4, TCF_BLK_FINAL = 1u << 5, TCF_BLK_INDEX = 1u << 6 };

/* The block header (TCF_BLOCK_HEADER_LEN bytes at h) of payload[0..n),
 * both CRCs included; the one encoder of it (format.c). */
void tcf_encode_block_header(uint8_t *h, uint64_t sync, uint32_t block_seq, uint64_t base_clock_ns,
	uint16_t flags, const uint8_t *payload, size_t n);
/* The trailer (TCF_TRAILER_LEN bytes at t) of a chunk of chunk_len bytes,
 * trailer included, whose INDEX block starts at index_offset. */
void tcf_encode_trailer(uint8_t *t, uint64_t index_offset, uint64_t chunk_len, uint32_t nblocks);
/* The body of a CHUNK_END record. */
void tcf_put_chunk_end(struct td_buf *body, enum tcf_end_reason reason, uint64_t total_samples,
	uint64_t total_blocks, uint64_t last_clock_ns, uint64_t end_real_ns, int32_t exit_status);

/* A record's framing: tag (optional: must-understand bit clear), length. */
static inline void tcf_put_record_head(struct td_buf *b, enum tcf_record type, size_t len)
{
	td_buf_put_varint(b, (uint64_t)type << 1);
	td_buf_put_varint(b, len);
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
	uint64_t v;

	if (!td_varint_get(&c->p, c->end, &v))
		c->bad = true;
	return v;
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
