/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd snapshot REPO -o FILE [--since DURATION], the daemon's
 * snapshots and its emergency dumps of a target's death.  Orders the
 * repository's chunks by the sequence in their headers, copies finished
 * chunks whole, repairs an unfinished one (its valid prefix of whole
 * blocks, then a synthesized CHUNK_END{recovered}, an empty INDEX and a
 * trailer; the header copy gets the "recovered" flag), and writes one
 * file: a concatenation of finished chunks.  An emergency dump also marks
 * every header copy (the "emergency" flag, the dead process as target_pid,
 * the header CRC renewed); nothing else of a chunk changes, so blocks,
 * trailers and the definitions before their uses stay as written.
 *
 * Built for memory pressure: one fixed table of entries and one fixed copy
 * buffer, allocated up front; nothing grows with the number or size of the
 * chunks.  The output appears only when complete (written to a temporary
 * file of its own, fsync'ed, renamed): over FILE for tracerd snapshot, to
 * a name no other file has for the daemon's snapshots/ and emergency dumps
 * (repo.c). */
#define _GNU_SOURCE
#include "chunkfmt.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chunkfmt-internal.h"

#define SNAP_MAX_CHUNKS 65536
#define SNAP_BUF (1u << 20)
#define SNAP_BUF_LOW (64u << 10) /* when SNAP_BUF cannot be had */

struct snap {
	int out;
	const struct tcf_snap_opts *o;
	uint8_t *buf;
	size_t buf_len;
	uint64_t bytes;
	unsigned copied, repaired, skipped;
};

static int out_write(struct snap *s, const void *p, size_t n)
{
	ssize_t r = td_write_all(s->out, p, n);

	if (r < 0)
		return (int)r;
	s->bytes += n;
	return 0;
}

static int copy_range(struct snap *s, int fd, uint64_t from, uint64_t to)
{
	while (from < to) {
		size_t n = (size_t)TD_MIN(to - from, s->buf_len);
		ssize_t r = pread(fd, s->buf, n, (off_t)from);

		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		if ((r = out_write(s, s->buf, (size_t)r)) < 0)
			return (int)r;
		from += n;
	}
	return 0;
}

/* Samples in a block payload held in buf (SAMPLES records' row counts). */
static uint64_t count_samples(const uint8_t *p, size_t n)
{
	struct tcf_cur c = { p, p + n, false };
	uint64_t total = 0;

	while (c.p < c.end && !c.bad) {
		uint64_t tag = tcf_get_varint(&c), len = tcf_get_varint(&c);
		const uint8_t *body = tcf_get_bytes(&c, len);

		if (!body)
			break;
		if ((tag >> 1) == TCF_REC_SAMPLES) {
			struct tcf_cur rc = { body, body + len, false };

			total += tcf_get_varint(&rc);
		}
	}
	return total;
}

/* The marks of this copy in its header (hl bytes at hdr): target pid,
 * flags, a new CRC.  Nothing to do for a plain snapshot of a finished
 * chunk (returns false). */
static bool mark_header(const struct snap *s, uint8_t *hdr, uint32_t flags)
{
	flags |= s->o->set_flags;
	if (s->o->target_pid)
		tcf_le32(hdr + 96, s->o->target_pid);
	if (!flags && !s->o->target_pid)
		return false;
	tcf_header_set_flags(hdr, flags); /* renews the CRC, over the pid too */
	return true;
}

/* Copy one chunk file: whole if finished, else its valid prefix, closed. */
static int snap_chunk(struct snap *s, int dirfd, const struct tcf_dir_entry *e)
{
	uint8_t hdr[4096], close_buf[512];
	struct chunk_info ci;
	uint64_t pos, size, sync, last_clock = 0, samples = 0;
	uint32_t seq = 0;
	int fd, hl, r = 0;

	{
		bool is_dir;

		r = tcf_open_input(dirfd, e->name, true, &fd, &is_dir);
		if (r == -ENOENT || r == -TD_E_NOTREG || (r == 0 && is_dir)) {
			/* deleted by retention since the scan, or not a chunk */
			if (r == 0)
				close(fd);
			s->skipped++;
			return 0;
		}
		if (r < 0)
			return r;
	}
	size = e->size;
	if (pread(fd, hdr, TCF_HEADER_LEN, 0) != TCF_HEADER_LEN ||
		(hl = tcf_parse_header(hdr, TCF_HEADER_LEN, &ci)) < 0 ||
		(hl > TCF_HEADER_LEN && pread(fd, hdr, (size_t)hl, 0) != hl)) {
		s->skipped++;
		close(fd);
		return 0; /* not a chunk we can read: leave it out, say so */
	}
	sync = tcf_chunk_sync(hdr);
	/* finished: a trailer closes the file exactly, and its index offset
	 * and block count agree with the chunk */
	if (size >= (uint64_t)hl + TCF_TRAILER_LEN) {
		uint8_t t[TCF_TRAILER_LEN], ih[TCF_BLOCK_HEADER_LEN];
		uint64_t toff = size - TCF_TRAILER_LEN, io;
		bool ih_ok = false;

		if (pread(fd, t, sizeof(t), (off_t)toff) == TCF_TRAILER_LEN &&
			tcf_is_trailer(t, sizeof(t))) {
			io = tcf_rd64(t + 8);
			ih_ok = io >= (uint64_t)hl && io <= toff &&
				toff - io >= TCF_BLOCK_HEADER_LEN &&
				pread(fd, ih, sizeof(ih), (off_t)io) == (ssize_t)sizeof(ih);
		}
		if (ih_ok && tcf_trailer_agrees(t, toff, (uint64_t)hl, ih, sync)) {
			/* the trailer covers no header byte: a marked copy
			 * of the header keeps the chunk finished */
			if (mark_header(s, hdr, 0)) {
				r = out_write(s, hdr, (size_t)hl);
				if (!r)
					r = copy_range(s, fd, (uint64_t)hl, size);
			} else {
				r = copy_range(s, fd, 0, size);
			}
			s->copied++;
			close(fd);
			return r;
		}
	}
	/* unfinished (or a trailer that lies): walk the whole blocks */
	pos = (uint64_t)hl;
	for (;;) {
		uint8_t bh[TCF_BLOCK_HEADER_LEN];
		struct tcf_block b;
		uint32_t crc = 0;
		uint64_t off;

		if (pread(fd, bh, sizeof(bh), (off_t)pos) != (ssize_t)sizeof(bh) ||
			!tcf_parse_block_header(bh, sizeof(bh), sync, &b) ||
			b.payload_len > size - pos - TCF_BLOCK_HEADER_LEN || (b.flags & 0x60))
			break; /* torn tail, or the old final/index blocks: re-closed */
		for (off = 0; off < b.payload_len;) {
			size_t n = (size_t)TD_MIN(b.payload_len - off, s->buf_len);

			if (pread(fd, s->buf, n, (off_t)(pos + TCF_BLOCK_HEADER_LEN + off)) !=
				(ssize_t)n)
				break;
			crc = tcf_crc32c(crc, s->buf, n);
			off += n;
		}
		if (off != b.payload_len || tcf_rd32(bh + 36) != tcf_crc_mask(crc))
			break;
		if (b.payload_len <= s->buf_len) /* else: informational, left out */
			samples += count_samples(s->buf, b.payload_len);
		if (b.base_clock_ns > last_clock)
			last_clock = b.base_clock_ns;
		seq = b.block_seq + 1;
		pos += TCF_BLOCK_HEADER_LEN + b.payload_len;
	}
	mark_header(s, hdr, TCF_HDR_RECOVERED);
	r = out_write(s, hdr, (size_t)hl);
	if (!r)
		r = copy_range(s, fd, (uint64_t)hl, pos);
	if (!r)
		r = out_write(s, close_buf,
			tcf_encode_close(close_buf, sync, seq, pos, last_clock, samples,
				TCF_END_RECOVERED));
	s->repaired++;
	close(fd);
	return r;
}

int tcf_snapshot_fd(int repo_dirfd, int out_fd, const struct tcf_snap_opts *o,
	unsigned *ret_chunks, unsigned *ret_repaired, uint64_t *ret_bytes)
{
	struct tcf_dir_entry *e = NULL;
	struct snap s = { .out = out_fd, .o = o, .buf_len = SNAP_BUF };
	int n, r = 0;

	/* everything this needs, up front.  The table is address space
	 * first: only the entries a scan fills are ever touched. */
	e = td_malloc(SNAP_MAX_CHUNKS * sizeof(*e));
	s.buf = td_malloc(s.buf_len);
	if (!s.buf) {
		s.buf_len = SNAP_BUF_LOW;
		s.buf = td_malloc(s.buf_len);
	}
	if (!e || !s.buf) {
		r = -ENOMEM;
		goto out;
	}
	n = tcf_dir_scan_fd(repo_dirfd, e, SNAP_MAX_CHUNKS);
	if (n < 0) {
		r = n;
		goto out;
	}
	if (n == 0) {
		r = -ENODATA;
		goto out;
	}
	for (int i = 0; i < n && !r; i++) {
		/* written since the start of the window (a chunk last written
		 * "in the future", before the clock was stepped back, is
		 * recent); the newest when asked for, whatever the clocks say */
		if (o->since_real_ns && e[i].mtime_ns < o->since_real_ns &&
			!(o->keep_newest && i == n - 1))
			continue;
		r = snap_chunk(&s, repo_dirfd, &e[i]);
	}
	if (!r)
		r = td_fsync(s.out);
	if (!r) {
		*ret_chunks = s.copied + s.repaired;
		*ret_repaired = s.repaired;
		*ret_bytes = s.bytes;
	}
out:
	free(e);
	free(s.buf);
	return r;
}

int repo_snapshot(const char *repo, const char *out, uint64_t since_ns, unsigned *ret_chunks,
	unsigned *ret_repaired, uint64_t *ret_bytes)
{
	struct tcf_snap_opts so = { 0 };
	char tmp[4096 + 32];
	bool is_dir;
	int dirfd, fd = -1, r;

	if (strlen(out) > 4096)
		return -ENAMETOOLONG;
	r = tcf_open_input(AT_FDCWD, repo, false, &dirfd, &is_dir);
	if (r < 0)
		return r;
	if (!is_dir) {
		close(dirfd);
		return -ENOTDIR;
	}
	/* a temporary file of our own beside out (never one that was there:
	 * O_EXCL), renamed over out once complete; 0640 less the umask */
	for (unsigned k = 0; k < 100 && fd < 0; k++) {
		snprintf(tmp, sizeof(tmp), "%s.tmp.%d.%u", out, (int)getpid(), k);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		r = -errno;
		close(dirfd);
		return r;
	}
	if (since_ns) {
		uint64_t now = td_real_ns();

		so.since_real_ns = now > since_ns ? now - since_ns : 1;
	}
	r = tcf_snapshot_fd(dirfd, fd, &so, ret_chunks, ret_repaired, ret_bytes);
	close(fd);
	close(dirfd);
	if (!r)
		r = td_renameat(AT_FDCWD, tmp, AT_FDCWD, out);
	if (r < 0)
		unlink(tmp);
	return r;
}
