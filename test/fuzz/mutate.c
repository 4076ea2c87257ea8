/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A mutation pass over the fuzz corpus whose mutants keep valid CRCs: a
 * flipped byte in a block is otherwise refused by the block's CRC and
 * never reaches the decoder (the header's fields, the records' varints,
 * the clock arithmetic), which is where undefined behaviour was found
 * (issue 32.7: signed overflow in the reader's clock_at).
 *
 * Linked with one of the fuzz entry points (fuzz_reader.c, fuzz_report.c)
 * in place of libFuzzer, and built with -fsanitize=address,undefined
 * -fno-sanitize-recover=all, so the first report ends the run with a
 * failure.  Each mutant: a copy of a corpus file, one to four mutations
 * (bytes set to varint edge values, a run of 0xff that makes a varint
 * huge, the header's tick and clocks, a block's base clock, each to an
 * extreme), then every CRC of the file renewed.  The input under test is
 * written to OUT first, so a failure leaves it behind.
 *
 * Usage: mutate SECONDS SEED OUT FILE...  Deterministic for a seed; stops
 * after SECONDS of wall time, so that make check stays short. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64: enough for choosing mutations, the same on every host */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t extreme(void)
{
	static const uint64_t v[] = { 0, 1, 0x7f, 0x80, 0xffffffffull, 0x7fffffffffffffffull,
		0x8000000000000000ull, 0xffffffffffffffffull, 0xfffffffffffffffeull,
		1000000000ull, 0x100000000ull };

	return rnd() % 4 ? v[rnd() % (sizeof(v) / sizeof(v[0]))] : rnd();
}

/* Where a file's chunks and blocks are: the walk the reader makes, on a
 * file whose structure is still whole (only contents are mutated). */
struct spot {
	size_t at, len; /* a header (len: its length) or a block (its payload) */
	bool header;
};

static size_t find_spots(const uint8_t *p, size_t n, struct spot *s, size_t max)
{
	size_t pos = 0, k = 0;

	while (pos + TCF_HEADER_LEN <= n && !memcmp(p + pos, tcf_magic, 8) && k < max) {
		uint32_t hlen = tcf_rd32(p + pos + 12);

		if (hlen < TCF_HEADER_LEN || hlen > n - pos)
			break;
		s[k++] = (struct spot){ pos, hlen, true };
		pos += hlen;
		while (pos + TCF_BLOCK_HEADER_LEN <= n && k < max) {
			uint32_t len;

			if (pos + TCF_TRAILER_LEN <= n && !memcmp(p + pos, tcf_end_magic, 8)) {
				pos += TCF_TRAILER_LEN;
				break;
			}
			len = tcf_rd32(p + pos + 8);
			if (len > n - pos - TCF_BLOCK_HEADER_LEN)
				return k;
			s[k++] = (struct spot){ pos + TCF_BLOCK_HEADER_LEN, len, false };
			pos += TCF_BLOCK_HEADER_LEN + len;
		}
	}
	return k;
}

/* Renew every CRC: each header's, each block header's and payload's. */
static void renew_crcs(uint8_t *p, const struct spot *s, size_t k)
{
	for (size_t i = 0; i < k; i++) {
		if (s[i].header) {
			uint8_t *h = p + s[i].at;

			tcf_le32(h + s[i].len - 4, tcf_crc_mask(tcf_crc32c(0, h, s[i].len - 4)));
		} else {
			uint8_t *h = p + s[i].at - TCF_BLOCK_HEADER_LEN;

			tcf_le32(h + 32, tcf_crc_mask(tcf_crc32c(0, h + 8, 24)));
			tcf_le32(h + 36, tcf_crc_mask(tcf_crc32c(0, h + 40, s[i].len)));
		}
	}
}

static void mutate_once(uint8_t *p, const struct spot *s, size_t k)
{
	const struct spot *x = &s[rnd() % k];
	uint8_t *at = p + x->at;
	unsigned kind = (unsigned)(rnd() % 6);

	if (x->header) {
		/* tick_ns (92), start_clock_ns (56), start_real_ns (64) */
		if (kind < 2)
			tcf_le32(at + 92, (uint32_t)extreme());
		else if (kind < 4)
			tcf_le64(at + 56, extreme());
		else
			tcf_le64(at + 64, extreme());
		return;
	}
	if (kind == 0) { /* the block's base clock (covered by its header's CRC) */
		tcf_le64(at - TCF_BLOCK_HEADER_LEN + 16, extreme());
		return;
	}
	if (!x->len)
		return;
	if (kind == 1) { /* a varint made huge: 0xff continuation bytes */
		size_t off = rnd() % x->len, run = 1 + rnd() % 10;

		for (size_t i = 0; i < run && off + i < x->len; i++)
			at[off + i] = i + 1 == run ? (uint8_t)(rnd() & 0x7f) : 0xff;
		return;
	}
	if (kind == 2) { /* an extreme value as a varint, over what was there */
		uint8_t v[TD_VARINT_MAX];
		size_t n = td_varint_encode(v, extreme()), off = rnd() % x->len;

		memcpy(at + off, v, TD_MIN(n, x->len - off));
		return;
	}
	{
		static const uint8_t edge[] = { 0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff };

		at[rnd() % x->len] = kind == 3 ? (uint8_t)rnd() : edge[rnd() % sizeof(edge)];
	}
}

static uint8_t *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
		(p = malloc((size_t)n)) && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	if (p)
		*ret_len = (size_t)n;
	fclose(f);
	return p;
}

int main(int argc, char **argv)
{
	struct timespec t0, t;
	unsigned long runs = 0, seconds;
	struct spot spots[4096];
	int nfiles = argc - 4;

	if (argc < 5) {
		fprintf(stderr, "usage: %s SECONDS SEED OUT FILE...\n", argv[0]);
		return 2;
	}
	seconds = strtoul(argv[1], NULL, 10);
	rng_state = strtoull(argv[2], NULL, 10);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		const char *path = argv[4 + runs % (unsigned long)nfiles];
		size_t len = 0, k;
		uint8_t *p = slurp(path, &len);
		unsigned m = 1 + (unsigned)(rnd() % 4);
		int fd;

		if (!p) {
			fprintf(stderr, "%s: cannot read %s: %s\n", argv[0], path, strerror(errno));
			return 2;
		}
		k = find_spots(p, len, spots, sizeof(spots) / sizeof(spots[0]));
		for (unsigned i = 0; i < m && k; i++)
			mutate_once(p, spots, k);
		renew_crcs(p, spots, k);
		fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, p, len) != (ssize_t)len) {
			fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[3]);
			return 2;
		}
		close(fd);
		LLVMFuzzerTestOneInput(p, len);
		free(p);
		runs++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((unsigned long)(t.tv_sec - t0.tv_sec) < seconds);
	printf("%lu\n", runs);
	unlink(argv[3]);
	return 0;
}
