/* TCF primitives shared by writer, reader and repair: CRC32C, the fixed
 * layouts of chunk header, block header and trailer, and names. */
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

bool tcf_buf_reserve(struct tcf_buf *b, size_t more)
{
	if (b->failed)
		return false;
	if (b->len + more > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *n;

		while (cap < b->len + more)
			cap *= 2;
		n = td_realloc(b->p, cap);
		if (!n) {
			b->failed = true;
			return false;
		}
		b->p = n;
		b->cap = cap;
	}
	return true;
}

void tcf_buf_free(struct tcf_buf *b)
{
	free(b->p);
	*b = (struct tcf_buf){ 0 };
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

/* One block around payload[0..n) into out; returns its length. */
static size_t encode_block(uint8_t *out, uint64_t sync, uint32_t seq, uint64_t base, uint16_t flags,
	const uint8_t *payload, size_t n)
{
	tcf_le64(out, sync);
	tcf_le32(out + 8, (uint32_t)n);
	tcf_le32(out + 12, seq);
	tcf_le64(out + 16, base);
	tcf_le16(out + 24, flags);
	tcf_le16(out + 26, 0);
	tcf_le32(out + 28, (uint32_t)n);
	tcf_le32(out + 32, tcf_crc_mask(tcf_crc32c(0, out + 8, 24)));
	tcf_le32(out + 36, tcf_crc_mask(tcf_crc32c(0, payload, n)));
	memcpy(out + TCF_BLOCK_HEADER_LEN, payload, n);
	return TCF_BLOCK_HEADER_LEN + n;
}

static size_t put_varint_raw(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

size_t tcf_encode_close(uint8_t *out, uint64_t sync, uint32_t block_seq, uint64_t chunk_len,
	uint64_t last_clock_ns, uint64_t total_samples, enum tcf_end_reason reason)
{
	uint8_t body[96], rec[112];
	size_t bl = 0, rl = 0, a, b;

	/* CHUNK_END: reason, total_samples, total_blocks, last_clock_ns,
	 * end_real_ns (0: unknown), exit status (zigzag) */
	bl += put_varint_raw(body + bl, reason);
	bl += put_varint_raw(body + bl, total_samples);
	bl += put_varint_raw(body + bl, (uint64_t)block_seq + 2);
	bl += put_varint_raw(body + bl, last_clock_ns);
	bl += put_varint_raw(body + bl, 0);
	bl += put_varint_raw(body + bl, 0);
	rl += put_varint_raw(rec, TCF_REC_CHUNK_END << 1);
	rl += put_varint_raw(rec + rl, bl);
	memcpy(rec + rl, body, bl);
	rl += bl;
	a = encode_block(out, sync, block_seq, last_clock_ns, TCF_BLK_FINAL, rec, rl);
	/* INDEX with no entries: readers scan (the index only speeds up) */
	rl = put_varint_raw(rec, TCF_REC_INDEX << 1);
	rl += put_varint_raw(rec + rl, 1);
	rec[rl++] = 0;
	b = encode_block(out + a, sync, block_seq + 1, last_clock_ns, TCF_BLK_INDEX, rec, rl);
	memcpy(out + a + b, tcf_end_magic, 8);
	tcf_le64(out + a + b + 8, chunk_len + a);
	tcf_le64(out + a + b + 16, chunk_len + a + b + TCF_TRAILER_LEN);
	tcf_le32(out + a + b + 24, block_seq + 2);
	tcf_le32(out + a + b + 28, tcf_crc_mask(tcf_crc32c(0, out + a + b, 28)));
	return a + b + TCF_TRAILER_LEN;
}

const char *tcf_record_name(unsigned type)
{
	static const char *const names[] = { "?", "META", "STRINGS", "MAPPINGS", "FUNCTIONS",
		"LOCATIONS", "STACK_NODES", "THREADS", "THREAD_EVENTS", "SAMPLE_TYPES", "SAMPLES",
		"CLOCK_SYNC", "LOST", "PROCESS_EVENT", "CHUNK_END", "INDEX" };

	return type < TD_ARRAY_SIZE(names) ? names[type] : "unknown";
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
