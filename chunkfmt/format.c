/* SPDX-License-Identifier: GPL-2.0-or-later */
/* TCF primitives shared by writer, reader and repair: CRC32C, the fixed
 * layouts of chunk header, block header and trailer (each encoded and
 * parsed here only), the CHUNK_END record, and names. */
#include "chunkfmt-internal.h"

#include <errno.h>
#include <stdlib.h>

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1; /* Castagnoli */
		crc_table[i] = c;
	}
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c = crc;

	while (n >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		n -= 8;
	}
	while (n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}

uint32_t tcf_crc32c(uint32_t crc, const void *buf, size_t len)
{
	static int have_hw = -1;
	const uint8_t *p = buf;
	uint32_t c = ~crc;

	if (have_hw < 0) {
		__builtin_cpu_init();
		have_hw = __builtin_cpu_supports("sse4.2");
		crc_init();
	}
	if (have_hw)
		return ~crc_hw(c, p, len);
	while (len--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

int tcf_parse_header(const uint8_t *p, size_t len, struct chunk_info *ret)
{
	uint32_t hlen;

	if (len < TCF_HEADER_LEN || memcmp(p, tcf_magic, 8) != 0)
		return -TD_E_CORRUPT;
	hlen = tcf_rd32(p + 12);
	if (hlen < TCF_HEADER_LEN || hlen > 4096 || hlen > len)
		return -TD_E_CORRUPT;
	/* the CRC closes the header, however long a later minor makes it */
	if (tcf_rd32(p + hlen - 4) != tcf_crc_mask(tcf_crc32c(0, p, hlen - 4)))
		return -TD_E_CORRUPT;
	*ret = (struct chunk_info){
		.major = tcf_rd16(p + 8),
		.minor = tcf_rd16(p + 10),
		.incompat = tcf_rd32(p + 16),
		.compat = tcf_rd32(p + 20),
		.chunk_seq = tcf_rd64(p + 40),
		.start_clock_ns = tcf_rd64(p + 56),
		.start_real_ns = tcf_rd64(p + 64),
		.clock_id = tcf_rd32(p + 88),
		.tick_ns = tcf_rd32(p + 92),
		.target_pid = tcf_rd32(p + 96),
		.header_flags = tcf_rd32(p + 100),
	};
	memcpy(ret->session_id, p + 24, 16);
	memcpy(ret->boot_id, p + 72, 16);
	if (ret->major != TCF_MAJOR || ret->incompat != 0)
		return -EPROTONOSUPPORT; /* a valid chunk we must not decode */
	if (ret->tick_ns == 0)
		return -TD_E_CORRUPT;
	return (int)hlen;
}

uint64_t tcf_chunk_sync(const uint8_t *header)
{
	return tcf_rd64(header + 48);
}

void tcf_header_set_flags(uint8_t *h, uint32_t flags)
{
	uint32_t hlen = tcf_rd32(h + 12);

	tcf_le32(h + 100, tcf_rd32(h + 100) | flags);
	tcf_le32(h + hlen - 4, tcf_crc_mask(tcf_crc32c(0, h, hlen - 4)));
}

bool tcf_parse_block_header(const uint8_t *p, size_t len, uint64_t sync, struct tcf_block *ret)
{
	if (len < TCF_BLOCK_HEADER_LEN || tcf_rd64(p) != sync)
		return false;
	if (tcf_rd32(p + 32) != tcf_crc_mask(tcf_crc32c(0, p + 8, 24)))
		return false;
	*ret = (struct tcf_block){
		.payload_len = tcf_rd32(p + 8),
		.block_seq = tcf_rd32(p + 12),
		.base_clock_ns = tcf_rd64(p + 16),
		.flags = tcf_rd16(p + 24),
		.raw_len = tcf_rd32(p + 28),
	};
	return ret->payload_len <= TCF_MAX_PAYLOAD && (ret->flags & 0xf) == 0;
}

bool tcf_is_trailer(const uint8_t *p, size_t len)
{
	return len >= TCF_TRAILER_LEN && memcmp(p, tcf_end_magic, 8) == 0 &&
		tcf_rd32(p + 28) == tcf_crc_mask(tcf_crc32c(0, p, 28));
}

bool tcf_trailer_agrees(const uint8_t *t, uint64_t trailer_off, uint64_t header_len,
	const uint8_t *index_hdr, uint64_t sync)
{
	uint64_t index_off = tcf_rd64(t + 8);
	struct tcf_block b;

	if (tcf_rd64(t + 16) != trailer_off + TCF_TRAILER_LEN || !index_hdr ||
		index_off < header_len || index_off > trailer_off ||
		trailer_off - index_off < TCF_BLOCK_HEADER_LEN)
		return false;
	if (!tcf_parse_block_header(index_hdr, TCF_BLOCK_HEADER_LEN, sync, &b) ||
		!(b.flags & TCF_BLK_INDEX))
		return false;
	return index_off + TCF_BLOCK_HEADER_LEN + b.payload_len == trailer_off &&
		(uint64_t)b.block_seq + 1 == tcf_rd32(t + 24);
}

void tcf_encode_block_header(uint8_t *h, uint64_t sync, uint32_t block_seq, uint64_t base_clock_ns,
	uint16_t flags, const uint8_t *payload, size_t n)
{
	tcf_le64(h, sync);
	tcf_le32(h + 8, (uint32_t)n);
	tcf_le32(h + 12, block_seq);
	tcf_le64(h + 16, base_clock_ns);
	tcf_le16(h + 24, flags);
	tcf_le16(h + 26, 0);
	tcf_le32(h + 28, (uint32_t)n); /* raw length: no block is compressed */
	tcf_le32(h + 32, tcf_crc_mask(tcf_crc32c(0, h + 8, 24)));
	tcf_le32(h + 36, tcf_crc_mask(tcf_crc32c(0, payload, n)));
}

void tcf_encode_trailer(uint8_t *t, uint64_t index_offset, uint64_t chunk_len, uint32_t nblocks)
{
	memcpy(t, tcf_end_magic, 8);
	tcf_le64(t + 8, index_offset);
	tcf_le64(t + 16, chunk_len);
	tcf_le32(t + 24, nblocks);
	tcf_le32(t + 28, tcf_crc_mask(tcf_crc32c(0, t, 28)));
}

void tcf_put_chunk_end(struct td_buf *body, enum tcf_end_reason reason, uint64_t total_samples,
	uint64_t total_blocks, uint64_t last_clock_ns, uint64_t end_real_ns, int32_t exit_status)
{
	td_buf_put_varint(body, reason);
	td_buf_put_varint(body, total_samples);
	td_buf_put_varint(body, total_blocks);
	td_buf_put_varint(body, last_clock_ns);
	td_buf_put_varint(body, end_real_ns);
	td_buf_put_varint(body, tcf_zigzag(exit_status));
}

size_t tcf_encode_close(uint8_t *out, uint64_t sync, uint32_t block_seq, uint64_t chunk_len,
	uint64_t last_clock_ns, uint64_t total_samples, enum tcf_end_reason reason)
{
	uint8_t body[6 * TD_VARINT_MAX];
	struct td_buf b = TD_BUF_FIXED(body, sizeof(body)), rec;
	size_t a, n;

	/* CHUNK_END: the end time and exit status are unknown (0) */
	tcf_put_chunk_end(&b, reason, total_samples, (uint64_t)block_seq + 2, last_clock_ns, 0, 0);
	rec = TD_BUF_FIXED(out + TCF_BLOCK_HEADER_LEN, 2 * TD_VARINT_MAX + sizeof(body));
	tcf_put_record_head(&rec, TCF_REC_CHUNK_END, b.len);
	td_buf_put(&rec, b.p, b.len);
	tcf_encode_block_header(out, sync, block_seq, last_clock_ns, TCF_BLK_FINAL, rec.p, rec.len);
	a = TCF_BLOCK_HEADER_LEN + rec.len;
	/* INDEX with no entries: readers scan (the index only speeds up) */
	rec = TD_BUF_FIXED(out + a + TCF_BLOCK_HEADER_LEN, 3 * TD_VARINT_MAX);
	tcf_put_record_head(&rec, TCF_REC_INDEX, 1);
	td_buf_put_varint(&rec, 0);
	tcf_encode_block_header(out + a, sync, block_seq + 1, last_clock_ns, TCF_BLK_INDEX, rec.p,
		rec.len);
	n = a + TCF_BLOCK_HEADER_LEN + rec.len;
	tcf_encode_trailer(out + n, chunk_len + a, chunk_len + n + TCF_TRAILER_LEN, block_seq + 2);
	return n + TCF_TRAILER_LEN;
}

const char *tcf_record_name(unsigned type)
{
	static const char *const names[] = { "?", "META", "STRINGS", "MAPPINGS", "FUNCTIONS",
		"LOCATIONS", "STACK_NODES", "THREADS", "THREAD_EVENTS", "SAMPLE_TYPES", "SAMPLES",
		"CLOCK_SYNC", "LOST", "PROCESS_EVENT", "CHUNK_END", "INDEX", "WAITS" };

	return type < TD_ARRAY_SIZE(names) ? names[type] : "unknown";
}

const char *tcf_wait_kind_name(unsigned kind)
{
	static const char *const names[] = { "other", "mutex", "rwlock", "condvar", "semaphore",
		"join", "futex", "fd", "sleep", "signal", "disk", "gil" };

	return kind < TD_ARRAY_SIZE(names) ? names[kind] : "other";
}

const char *tcf_end_reason_name(unsigned r)
{
	static const char *const names[] = { "rotate", "stop", "target exit", "target crash",
		"shutdown", "recovered", "dictionary full" };

	return r < TD_ARRAY_SIZE(names) ? names[r] : "unknown";
}

const char *tcf_lost_reason_name(unsigned r)
{
	static const char *const names[] = { "ring full", "unwind failed", "throttled",
		"did not stop" };

	return r < TD_ARRAY_SIZE(names) ? names[r] : "unknown";
}

const char *tcf_state_name(unsigned s)
{
	static const char *const names[] = { "on-cpu", "runnable", "sleeping", "disk", "stopped",
		"dead", "reserved", "unknown" };

	return s < TD_ARRAY_SIZE(names) ? names[s] : "unknown";
}
