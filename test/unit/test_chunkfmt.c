/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of chunkfmt/: round trip of every record type, prefix
 * closure, single-fault containment, absurd lengths, compactness. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../chunkfmt/chunkfmt-internal.h"
#include "../helpers.h"
#include "../tools/synth.h"

static int memfd(void)
{
	int fd = memfd_create("tcf", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	return fd;
}

static uint8_t *slurp_fd(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	uint8_t *b = malloc((size_t)n + 1);

	cr_assert_eq(pread(fd, b, (size_t)n, 0), n);
	*len = (size_t)n;
	return b;
}

/* ---- collecting visitor */
struct seen {
	uint64_t samples, events, chunks, finished;
	uint64_t thread_ev, process_ev, lost, clock, meta, end;
	char leaf_fn[256], inl_fn[256], thread_name[64], meta_kv[64];
	uint32_t depth, crash_signo, crash_depth;
	uint64_t last_time, values_sum;
	uint64_t waits;
	struct chunk_wait wait; /* the last one */
	uint64_t first_wait_ns;	/* the first one's time */
	uint32_t wait_depth, owner_depth;
	char wait_what[64];
};

static int v_sample(void *arg, struct chunk_reader *r, const struct chunk_sample *s)
{
	struct seen *x = arg;
	uint32_t locs[128];
	struct chunk_location l;
	struct chunk_function f;
	struct chunk_thread t;

	x->samples++;
	x->last_time = s->time_ns;
	for (unsigned i = 0; i < s->nvalues; i++)
		x->values_sum += s->values[i];
	x->depth = chunk_reader_stack(r, s->stack_id, locs, 128);
	if (x->depth && chunk_reader_location(r, locs[0], &l) && l.nlines &&
		chunk_reader_function(r, l.lines[0].function_id, &f)) {
		snprintf(x->leaf_fn, sizeof(x->leaf_fn), "%s", f.name);
		if (l.nlines > 1 && chunk_reader_function(r, l.lines[1].function_id, &f))
			snprintf(x->inl_fn, sizeof(x->inl_fn), "%s", f.name);
	}
	if (chunk_reader_thread(r, s->thread_id, &t))
		snprintf(x->thread_name, sizeof(x->thread_name), "%s", t.name ? t.name : "");
	return 0;
}

static int v_event(void *arg, struct chunk_reader *r, const struct chunk_event *e)
{
	struct seen *x = arg;
	uint32_t locs[128];

	x->events++;
	switch (e->type) {
	case CHUNK_EV_THREAD:
		x->thread_ev++;
		break;
	case CHUNK_EV_PROCESS:
		x->process_ev++;
		x->crash_signo = (uint32_t)e->signo;
		x->crash_depth = chunk_reader_stack(r, e->stack_id, locs, 128);
		break;
	case CHUNK_EV_LOST:
		x->lost += e->count;
		break;
	case CHUNK_EV_CLOCK_SYNC:
		x->clock++;
		break;
	case CHUNK_EV_META:
		x->meta++;
		snprintf(x->meta_kv, sizeof(x->meta_kv), "%s=%s", e->key, e->value);
		break;
	case CHUNK_EV_END:
		x->end++;
		break;
	case CHUNK_EV_WAIT:
		if (!x->waits)
			x->first_wait_ns = e->wait->time_ns;
		x->waits++;
		x->wait = *e->wait;
		x->wait_depth = chunk_reader_stack(r, e->wait->stack_id, locs, 128);
		x->owner_depth = e->wait->nowners ?
					 chunk_reader_stack(r, e->wait->owners[0].stack_id, locs, 128) :
					 0;
		snprintf(x->wait_what, sizeof(x->wait_what), "%s",
			chunk_reader_string(r, e->wait->what) ? chunk_reader_string(r, e->wait->what) :
								 "");
		break;
	}
	return 0;
}

static int v_begin(void *arg, struct chunk_reader *r)
{
	(void)r;
	((struct seen *)arg)->chunks++;
	return 0;
}

static int v_end(void *arg, struct chunk_reader *r, bool finished)
{
	(void)r;
	((struct seen *)arg)->finished += finished;
	return 0;
}

static const struct chunk_visitor collect = { v_begin, v_sample, v_event, v_end };

/* WAITS (1.1): an episode with its owners reads back field by field, in a
 * chunk whose header says minor 1; a 1.0 writer refuses to write one. */
Test(chunkfmt, wait_episodes_round_trip)
{
	int fd = memfd();
	struct chunk_writer *w;
	struct chunk_writer_opts o = { .fd = fd, .target_pid = 4242, .minor = 1 };
	struct chunk_wait cw = { .time_ns = 7000000, .wait_ns = 30303030, .kind = TCF_WAIT_MUTEX,
		.flags = TCF_WAITF_GOES_ON, .object = 0x5581a0c0, .nowners = 2 };
	struct seen x = { 0 };
	struct chunk_report rep;
	uint32_t fn, loc, fn2, loc2, stack, ostack, th, owner;
	uint8_t *buf;
	size_t len;

	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	fn = chunk_writer_function(w, "___pthread_mutex_lock", NULL, NULL, 0);
	loc = chunk_writer_location(w, 0, 0x1000, (struct chunk_line[]){ { fn, 0, 0 } }, 1);
	fn2 = chunk_writer_function(w, "hold_busy", NULL, "x.c", 7);
	loc2 = chunk_writer_location(w, 0, 0x2000, (struct chunk_line[]){ { fn2, 9, 0 } }, 1);
	stack = chunk_writer_stack(w, (uint32_t[]){ loc, loc2 }, 2);
	ostack = chunk_writer_stack(w, (uint32_t[]){ loc2 }, 1);
	th = chunk_writer_thread(w, 4243, 4242, "waiter");
	owner = chunk_writer_thread(w, 4244, 4242, "holder");
	cw.thread_id = th;
	cw.stack_id = stack;
	cw.what = chunk_writer_string(w, "socket:[77]");
	cw.owners[0] = (struct chunk_wait_owner){ owner, ostack, 20202020 };
	cw.owners[1] = (struct chunk_wait_owner){ th, 0, 10101010 };
	cr_assert_eq(chunk_writer_wait(w, &cw), 0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	buf = slurp_fd(fd, &len);
	cr_expect_eq(buf[10], 1, "minor 1 in the header");
	cr_assert_eq(chunk_read_buffer(buf, len, &collect, &x, &rep), 0);
	cr_expect_eq(rep.records_skipped, 0);
	cr_assert_eq(x.waits, 1);
	cr_expect_eq(x.wait.time_ns, cw.time_ns);
	cr_expect_eq(x.wait.wait_ns, cw.wait_ns);
	cr_expect_eq(x.wait.kind, TCF_WAIT_MUTEX);
	cr_expect_eq(x.wait.flags, TCF_WAITF_GOES_ON);
	cr_expect_eq(x.wait.object, cw.object);
	cr_expect_eq(x.wait.thread_id, th);
	cr_expect_eq(x.wait_depth, 2);
	cr_expect_str_eq(x.wait_what, "socket:[77]");
	cr_assert_eq(x.wait.nowners, 2);
	cr_expect_eq(x.wait.owners[0].thread_id, owner);
	cr_expect_eq(x.wait.owners[0].wait_ns, 20202020);
	cr_expect_eq(x.owner_depth, 1);
	cr_expect_eq(x.wait.owners[1].stack_id, 0);
	free(buf);
	close(fd);

	/* a 1.0 chunk cannot say it */
	fd = memfd();
	o = (struct chunk_writer_opts){ .fd = fd };
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	cr_expect_eq(chunk_writer_wait(w, &cw), -EINVAL);
	chunk_writer_free(w);
	close(fd);
}

/* The first tick of a wait written in two chunks (going on from the
 * first, begun before the second) decodes to the same time in both, as
 * readers need to add the parts up, whatever times the blocks start at:
 * every time decodes to itself rounded down to a tick. */
Test(chunkfmt, an_instant_decodes_the_same_in_every_chunk)
{
	static const uint64_t first[2] = { 4000000777, 6000000456 };
	struct chunk_wait cw = { .time_ns = 5000000123, .wait_ns = 20000000, .kind = TCF_WAIT_FD,
		.object = 3 };
	int fd = memfd();
	struct seen x = { 0 };
	struct chunk_report rep;
	uint8_t *buf;
	size_t len;

	for (unsigned i = 0; i < 2; i++) {
		struct chunk_writer_opts o = { .fd = fd, .chunk_seq = i, .minor = 1 };
		struct chunk_writer *w;
		uint32_t th;

		cr_assert_eq(chunk_writer_open(&o, &w), 0);
		th = chunk_writer_thread(w, 77, 77, "t");
		cr_assert_eq(chunk_writer_sample(w, first[i], th, TCF_STATE_ONCPU, 0, NULL, 0), 0);
		cw.thread_id = th;
		cw.flags = i ? TCF_WAITF_BEGAN_BEFORE : TCF_WAITF_GOES_ON;
		cr_assert_eq(chunk_writer_wait(w, &cw), 0);
		cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
		chunk_writer_free(w);
	}
	buf = slurp_fd(fd, &len);
	cr_assert_eq(chunk_read_buffer(buf, len, &collect, &x, &rep), 0);
	cr_assert_eq(x.waits, 2);
	cr_expect_eq(x.first_wait_ns, 5000000000, "%llu", (unsigned long long)x.first_wait_ns);
	cr_expect_eq(x.wait.time_ns, 5000000000, "%llu", (unsigned long long)x.wait.time_ns);
	cr_expect_eq(x.last_time, 6000000000, "%llu", (unsigned long long)x.last_time);
	free(buf);
	close(fd);
}

Test(chunkfmt, round_trip_every_record)
{
	int fd = memfd();
	struct chunk_writer *w;
	struct chunk_writer_opts o = { .fd = fd, .chunk_seq = 7, .target_pid = 4242 };
	struct seen x = { 0 };
	struct chunk_report rep;
	uint32_t fn_leaf, fn_inl, fn_main, loc_leaf, loc_main, stack, th, map;
	uint8_t *buf;
	size_t len;
	static const uint8_t bid[20] = { 1, 2, 3 };
	const char *types[] = { "cpu" }, *units[] = { "nanoseconds" };

	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	map = chunk_writer_mapping(w, &(struct chunk_mapping){ 0x1000, 0x2000, 0, "/bin/x", bid, 20,
					      0 });
	fn_leaf = chunk_writer_function(w, "leaf()", "_Z4leafv", "x.c", 3);
	fn_inl = chunk_writer_function(w, "helper()", NULL, "x.h", 9);
	fn_main = chunk_writer_function(w, "main", NULL, "x.c", 20);
	cr_assert_eq(chunk_writer_function(w, "leaf()", "_Z4leafv", "x.c", 3), fn_leaf,
		"same content, same id");
	loc_leaf = chunk_writer_location(w, map, 0x1234,
		(struct chunk_line[]){ { fn_inl, 10, 2 }, { fn_leaf, 5, 0 } }, 2);
	loc_main = chunk_writer_location(w, map, 0x1100, (struct chunk_line[]){ { fn_main, 22, 0 } },
		1);
	stack = chunk_writer_stack(w, (uint32_t[]){ loc_leaf, loc_main }, 2);
	cr_assert_eq(chunk_writer_stack(w, (uint32_t[]){ loc_leaf, loc_main }, 2), stack);
	th = chunk_writer_thread(w, 4243, 4242, "worker");
	cr_assert_eq(chunk_writer_meta(w, "host", "box1"), 0);
	cr_assert_eq(chunk_writer_clock_sync(w, 1000, 2000), 0);
	cr_assert_eq(chunk_writer_sample_types(w, types, units, 1), 0);
	cr_assert_eq(chunk_writer_thread_event(w, 5000000, th, TCF_THREAD_START, 0), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(chunk_writer_sample(w, 5000000 + i * 10000000ull, th, TCF_STATE_ONCPU,
				     stack, NULL, 0),
			0);
	cr_assert_eq(chunk_writer_sample(w, 200000000, th, TCF_STATE_SLEEPING, stack,
			     (uint64_t[]){ 10101010 }, 1),
		0);
	cr_assert_eq(chunk_writer_lost(w, 3, TCF_LOST_RING_FULL), 0);
	cr_assert_eq(chunk_writer_process_event(w, 300000000, 4242, TCF_PROC_CRASH, 0, 11, 0xdead,
			     th, stack),
		0);
	cr_assert_eq(chunk_writer_thread_event(w, 300000001, th, TCF_THREAD_EXIT, 0), 0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_TARGET_CRASH, 139), 0);
	cr_expect_eq(chunk_writer_samples(w), 11);
	chunk_writer_free(w);

	buf = slurp_fd(fd, &len);
	cr_assert_eq(chunk_read_buffer(buf, len, &collect, &x, &rep), 0);
	cr_expect_eq(rep.chunks, 1);
	cr_expect_eq(rep.chunks_finished, 1);
	cr_expect_eq(x.finished, 1);
	cr_expect_eq(rep.blocks_bad + rep.seq_gaps + rep.unknown_refs, 0, "%s", rep.first_damage);
	cr_expect_not(rep.torn_tail);
	cr_expect_eq(x.samples, 11);
	cr_expect_eq(x.values_sum, 10101010);
	cr_expect_eq(x.depth, 2);
	cr_expect_str_eq(x.leaf_fn, "helper()", "inline chain innermost first");
	cr_expect_str_eq(x.inl_fn, "leaf()");
	cr_expect_str_eq(x.thread_name, "worker");
	cr_expect_eq(x.thread_ev, 2);
	cr_expect_eq(x.process_ev, 1);
	cr_expect_eq(x.crash_signo, 11);
	cr_expect_eq(x.crash_depth, 2, "the crash event carries the stack");
	cr_expect_eq(x.lost, 3);
	cr_expect_eq(x.clock, 1);
	cr_expect_str_eq(x.meta_kv, "host=box1");
	cr_expect_eq(x.end, 1);
	cr_expect_eq(x.last_time, 200000000, "times round-trip at tick precision");
	free(buf);
	close(fd);
}

/* ---- SAMPLE_TYPES: written, then read back per chunk */
struct types_seen {
	unsigned at_sample, at_end[3], chunk, short_count;
	char names[2][2][32]; /* at the sample: (type, unit) x 2 */
	char later[32];	      /* at the end of chunk 0: the latest record's type */
	bool short_untouched;
};

static int t_sample(void *arg, struct chunk_reader *r, const struct chunk_sample *s)
{
	struct types_seen *x = arg;
	struct chunk_sample_type t[4], one[2] = { { "x", "x" }, { "y", "y" } };

	(void)s;
	if (x->chunk != 0 || x->at_sample)
		return 0;
	x->at_sample = chunk_reader_sample_types(r, t, 4);
	for (unsigned i = 0; i < 2 && i < x->at_sample; i++) {
		snprintf(x->names[i][0], sizeof(x->names[i][0]), "%s", t[i].type ? t[i].type : "?");
		snprintf(x->names[i][1], sizeof(x->names[i][1]), "%s", t[i].unit ? t[i].unit : "?");
	}
	/* fewer slots than types: the count, and only that many written */
	x->short_count = chunk_reader_sample_types(r, one, 1);
	x->short_untouched = !strcmp(one[1].type, "y") && !strcmp(one[0].type, "cpu");
	return 0;
}

static int t_end(void *arg, struct chunk_reader *r, bool finished)
{
	struct types_seen *x = arg;
	struct chunk_sample_type t[1];

	(void)finished;
	if (x->chunk < 3)
		x->at_end[x->chunk] = chunk_reader_sample_types(r, t, 1);
	if (x->chunk == 0 && x->at_end[0])
		snprintf(x->later, sizeof(x->later), "%s", t[0].type ? t[0].type : "?");
	x->chunk++;
	return 0;
}

Test(chunkfmt, sample_types_round_trip)
{
	static const struct chunk_visitor v = { NULL, t_sample, NULL, t_end };
	const char *types[] = { "cpu", "wall" }, *units[] = { "nanoseconds", "milliseconds" };
	const char *types2[] = { "samples" }, *units2[] = { "count" };
	struct types_seen x = { 0 };
	struct chunk_report rep;
	int fd = memfd();
	uint8_t *buf;
	size_t len;

	for (int c = 0; c < 3; c++) {
		struct chunk_writer_opts o = { .fd = fd, .chunk_seq = (uint64_t)c };
		struct chunk_writer *w;
		uint32_t th;

		cr_assert_eq(chunk_writer_open(&o, &w), 0);
		th = chunk_writer_thread(w, 7, 7, "t");
		if (c == 0)
			cr_assert_eq(chunk_writer_sample_types(w, types, units, 2), 0);
		if (c == 2)
			cr_assert_eq(chunk_writer_sample_types(w, types2, units2, 1), 0);
		cr_assert_eq(chunk_writer_sample(w, 1000000, th, TCF_STATE_ONCPU, 0,
				     (uint64_t[]){ 5, 6 }, c == 2 ? 1 : 2),
			0);
		if (c == 0) {
			/* a later record replaces the earlier one */
			cr_assert_eq(chunk_writer_flush(w), 0);
			cr_assert_eq(chunk_writer_sample_types(w, types2, units2, 1), 0);
		}
		cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
		chunk_writer_free(w);
	}
	buf = slurp_fd(fd, &len);
	cr_assert_eq(chunk_read_buffer(buf, len, &v, &x, &rep), 0);
	cr_expect_eq(rep.blocks_bad + rep.unknown_refs, 0, "%s", rep.first_damage);
	cr_expect_eq(x.at_sample, 2);
	cr_expect_str_eq(x.names[0][0], "cpu");
	cr_expect_str_eq(x.names[0][1], "nanoseconds");
	cr_expect_str_eq(x.names[1][0], "wall");
	cr_expect_str_eq(x.names[1][1], "milliseconds");
	cr_expect_eq(x.short_count, 2);
	cr_expect(x.short_untouched, "only as many as asked for are written");
	cr_expect_eq(x.at_end[0], 1);
	cr_expect_str_eq(x.later, "samples");
	cr_expect_eq(x.at_end[1], 0, "sample types are per chunk");
	cr_expect_eq(x.at_end[2], 1);
	free(buf);
	close(fd);
}

/* A multi-chunk file with small blocks; boundaries[] holds (end offset,
 * samples so far) of every complete block. */
struct layout {
	uint8_t *buf;
	size_t len;
	size_t nb;
	size_t end[4096];
	uint64_t samples[4096];
};

static void build(struct layout *L, int chunks, int samples_per_chunk, uint32_t block_bytes,
	unsigned functions)
{
	int fd = memfd();
	uint64_t base = 0, total = 0;

	L->nb = 0;
	for (int c = 0; c < chunks; c++) {
		struct chunk_writer *w;
		struct chunk_writer_opts o = { .fd = fd, .chunk_seq = (uint64_t)c,
			.block_bytes = block_bytes };
		struct synth_opts so = { .threads = 4, .seconds = 1000, .hz = 99, .stacks = 50,
			.min_depth = 5, .max_depth = 12, .seed = (uint64_t)c + 1,
			.max_samples = (uint64_t)samples_per_chunk, .functions = functions };

		cr_assert_eq(chunk_writer_open(&o, &w), 0);
		cr_assert_geq(synth_write(w, &so, 1000000000ull), 0);
		cr_assert_eq(chunk_writer_finish(w, TCF_END_ROTATE, 0), 0);
		total += chunk_writer_samples(w);
		base += chunk_writer_bytes(w);
		chunk_writer_free(w);
	}
	L->buf = slurp_fd(fd, &L->len);
	cr_assert_eq(L->len, base);
	close(fd);
	/* find block ends by walking the verified structure */
	{
		size_t pos = 0;

		while (pos < L->len) {
			struct chunk_info ci;
			int hl = tcf_parse_header(L->buf + pos, L->len - pos, &ci);
			uint64_t sync = tcf_chunk_sync(L->buf + pos);

			cr_assert_gt(hl, 0);
			pos += (size_t)hl;
			while (!tcf_is_trailer(L->buf + pos, L->len - pos)) {
				struct tcf_block b;
				size_t bl;

				cr_assert(tcf_parse_block_header(L->buf + pos, L->len - pos, sync, &b));
				bl = TCF_BLOCK_HEADER_LEN + b.payload_len;
				pos += bl;
				L->end[L->nb] = pos;
				L->samples[L->nb] = 0;
				L->nb++;
			}
			pos += TCF_TRAILER_LEN;
		}
	}
	/* samples per prefix at each block end: read that prefix */
	for (size_t i = 0; i < L->nb; i++) {
		struct chunk_report rep;

		chunk_read_buffer(L->buf, L->end[i], NULL, NULL, &rep);
		L->samples[i] = rep.samples;
	}
	cr_assert_eq(L->samples[L->nb - 1], total);
}

Test(chunkfmt, prefix_closure_every_byte, .timeout = 120)
{
	static struct layout L;
	size_t bi = 0;

	build(&L, 2, 300, 256, 24);
	cr_assert_gt(L.nb, 6, "several blocks per chunk");
	cr_log_info("%zu bytes, %zu blocks", L.len, L.nb);
	for (size_t cut = 0; cut <= L.len; cut++) {
		struct chunk_report rep;
		uint64_t want = 0;

		while (bi < L.nb && L.end[bi] <= cut)
			bi++;
		want = bi ? L.samples[bi - 1] : 0;
		chunk_read_buffer(L.buf, cut, NULL, NULL, &rep);
		if (rep.samples != want)
			cr_assert_eq(rep.samples, want, "prefix %zu: %llu samples, want %llu", cut,
				(unsigned long long)rep.samples, (unsigned long long)want);
		if (rep.blocks_bad)
			cr_assert_eq(rep.blocks_bad, 0, "prefix %zu: a cut is a torn tail, not damage",
				cut);
	}
	free(L.buf);
}

Test(chunkfmt, prefix_closure_random_offsets_large, .timeout = 120)
{
	static struct layout L;
	uint64_t s = 12345;

	build(&L, 3, 20000, 16384, 0);
	for (int k = 0; k < 400; k++) {
		struct chunk_report rep;
		size_t cut, bi = 0;

		s = s * 6364136223846793005ull + 1442695040888963407ull;
		cut = (size_t)(s >> 11) % (L.len + 1);
		while (bi < L.nb && L.end[bi] <= cut)
			bi++;
		chunk_read_buffer(L.buf, cut, NULL, NULL, &rep);
		cr_assert_eq(rep.samples, bi ? L.samples[bi - 1] : 0, "cut at %zu", cut);
	}
	free(L.buf);
}

Test(chunkfmt, flipped_bit_costs_one_block, .timeout = 120)
{
	static struct layout L;
	uint64_t total;

	build(&L, 2, 300, 256, 24);
	total = L.samples[L.nb - 1];
	for (size_t i = 0; i < L.nb; i++) {
		size_t start = i ? L.end[i - 1] : 0, end = L.end[i];
		uint64_t in_block = L.samples[i] - (i ? L.samples[i - 1] : 0);
		struct chunk_report rep;
		size_t at;

		/* skip a chunk header in front of the first block of a chunk */
		if (end - start > TCF_HEADER_LEN + 60 && !memcmp(L.buf + start, tcf_magic, 8))
			start += TCF_HEADER_LEN;
		at = start + (end - start) * 2 / 3;
		L.buf[at] ^= 0x10;
		chunk_read_buffer(L.buf, L.len, NULL, NULL, &rep);
		L.buf[at] ^= 0x10;
		cr_expect_eq(rep.samples, total - in_block, "flip in block %zu at %zu: %llu of %llu", i,
			at, (unsigned long long)rep.samples, (unsigned long long)total);
		cr_expect_eq(rep.blocks_bad + (rep.torn_tail ? 1 : 0) + rep.seq_gaps > 0, true,
			"damage is reported");
		cr_expect_eq(rep.chunks, 2, "both chunks still found");
	}
	free(L.buf);
}

static uint8_t *block_with_payload(const uint8_t *payload, size_t n, size_t *ret_len)
{
	int fd = memfd();
	struct chunk_writer *w;
	struct chunk_writer_opts o = { .fd = fd };
	uint8_t *buf, *out;
	size_t len;

	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	chunk_writer_free(w);
	buf = slurp_fd(fd, &len);
	close(fd);
	out = malloc(len + TCF_BLOCK_HEADER_LEN + n);
	memcpy(out, buf, len);
	tcf_encode_block_header(out + len, tcf_chunk_sync(buf), 0, 0, 0, payload, n);
	memcpy(out + len + TCF_BLOCK_HEADER_LEN, payload, n);
	*ret_len = len + TCF_BLOCK_HEADER_LEN + n;
	free(buf);
	return out;
}

Test(chunkfmt, absurd_lengths_and_counts)
{
	/* valid CRCs around nonsense: huge counts, ids, lengths */
	static const uint8_t cases[][24] = {
		/* STRINGS first_id 1, n = 2^56 */
		{ 4, 10, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0 },
		/* LOCATIONS first 1, n 1, nlines 2^40 */
		{ 10, 9, 1, 1, 1, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x20 },
		/* SAMPLES rows 2^35 */
		{ 20, 7, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0 },
		/* record length past the block */
		{ 20, 0xff, 0xff, 0x03, 1, 2 },
		/* STACK_NODES first_id 2^40 */
		{ 12, 8, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 1 },
		/* SAMPLES one row, thread id 2^50 */
		{ 20, 12, 1, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10, 1 },
		/* unknown must-understand record type 40 */
		{ 81, 1, 0 },
		/* SAMPLE_TYPES n = 2^40 */
		{ 18, 6, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20 },
		/* SAMPLE_TYPES n = 65, past the reader's bound */
		{ 18, 1, 65 },
		/* SAMPLE_TYPES n = 2 with one id */
		{ 18, 2, 2, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		uint8_t *buf = block_with_payload(cases[i], sizeof(cases[i]), &len);
		struct chunk_report rep;
		struct seen x = { 0 };

		cr_expect_eq(chunk_read_buffer(buf, len, &collect, &x, &rep), 0, "case %zu", i);
		cr_expect_eq(rep.chunks, 1);
		cr_expect_lt(x.samples, 2, "case %zu decoded nothing absurd", i);
		if (i == 6)
			cr_expect(rep.newer_reader_needed);
		else
			cr_expect(rep.first_damage[0] || rep.unknown_refs, "case %zu reported", i);
		free(buf);
	}
	{
		/* a block header claiming 4 GiB */
		uint8_t payload[1] = { 0 };
		size_t len;
		uint8_t *buf = block_with_payload(payload, 1, &len);
		struct chunk_report rep;
		uint8_t *h = buf + TCF_HEADER_LEN;

		tcf_le32(h + 8, 0xffffffffu);
		tcf_le32(h + 32, tcf_crc_mask(tcf_crc32c(0, h + 8, 24)));
		chunk_read_buffer(buf, len, NULL, NULL, &rep);
		cr_expect(rep.torn_tail || rep.blocks_bad, "rejected, not allocated");
		free(buf);
	}
}

Test(chunkfmt, garbage_is_not_a_chunk)
{
	static const uint8_t junk[300] = "this is not a chunk at all";
	struct chunk_report rep;

	cr_expect_eq(chunk_read_buffer(junk, sizeof(junk), NULL, NULL, &rep), -TD_E_CORRUPT);
	cr_expect_eq(chunk_read_buffer(junk, 0, NULL, NULL, &rep), -TD_E_CORRUPT);
}

Test(chunkfmt, newer_major_is_skipped_not_misread)
{
	static struct layout L;
	struct chunk_report rep;
	uint8_t *h;

	build(&L, 2, 100, 1024, 24);
	h = L.buf;
	tcf_le16(h + 8, 2); /* major 2 in the first chunk */
	tcf_le32(h + 108, tcf_crc_mask(tcf_crc32c(0, h, 108)));
	chunk_read_buffer(L.buf, L.len, NULL, NULL, &rep);
	cr_expect_eq(rep.chunks_skipped, 1);
	cr_expect_eq(rep.chunks, 1, "the second chunk is still read");
	cr_expect_eq(rep.samples, 100);
	free(L.buf);
}

/* ---- stacks asked again: the writer's memo of the stacks it has seen */
#define MEMO_STACKS 3000
#define MEMO_LOCS 64

struct memo_stacks {
	uint32_t loc[MEMO_LOCS];
	uint32_t n[MEMO_STACKS], frames[MEMO_STACKS][200];
	unsigned bad, read;
};

static int memo_sample(void *arg, struct chunk_reader *r, const struct chunk_sample *s)
{
	struct memo_stacks *m = arg;
	uint32_t locs[256];
	unsigned n = chunk_reader_stack(r, s->stack_id, locs, 256), k = (unsigned)s->values[0];

	m->read++;
	if (k >= MEMO_STACKS || n != m->n[k] ||
		memcmp(locs, m->frames[k], n * sizeof(*locs)))
		m->bad++;
	return 0;
}

/* Stacks of every depth to 199, more of them than the memo has entries
 * and more frames than its pool holds, each asked twice, far apart: the
 * same id each time, and each id reads back as its frames. */
Test(chunkfmt, a_stack_asked_again_is_the_same_stack, .timeout = 60)
{
	static struct memo_stacks m;
	static const struct chunk_visitor visit = { NULL, memo_sample, NULL, NULL };
	struct chunk_writer_opts o = { .fd = memfd(), .max_dict_bytes = 1u << 30 };
	struct chunk_writer *w;
	struct chunk_report rep;
	uint32_t id[MEMO_STACKS], th, x = 12345;
	uint8_t *buf;
	size_t len;

	memset(&m, 0, sizeof(m));
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	th = chunk_writer_thread(w, 1, 1, "t");
	for (unsigned i = 0; i < MEMO_LOCS; i++) {
		struct chunk_line l = { chunk_writer_function(w, "f", NULL, NULL, 0), i + 1, 0 };

		m.loc[i] = chunk_writer_location(w, 0, 0x1000 + i, &l, 1);
	}
	for (unsigned k = 0; k < MEMO_STACKS; k++) {
		m.n[k] = 1 + k % 199;
		for (unsigned i = 0; i < m.n[k]; i++) {
			x = x * 1103515245u + 12345u;
			m.frames[k][i] = m.loc[(x >> 16) % (i ? MEMO_LOCS : 4)];
		}
	}
	for (unsigned pass = 0; pass < 2; pass++)
		for (unsigned k = 0; k < MEMO_STACKS; k++) {
			uint32_t s = chunk_writer_stack(w, m.frames[k], m.n[k]);
			uint64_t v = k;

			cr_assert_neq(s, 0);
			if (!pass)
				id[k] = s;
			else
				cr_assert_eq(s, id[k], "stack %u: %u, then %u", k, id[k], s);
			cr_assert_eq(chunk_writer_sample(w, 1000000 * (pass * MEMO_STACKS + k + 1), th,
					     TCF_STATE_ONCPU, s, &v, 1), 0);
		}
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	buf = slurp_fd(o.fd, &len);
	cr_assert_eq(chunk_read_buffer(buf, len, &visit, &m, &rep), 0);
	cr_expect_eq(m.read, 2 * MEMO_STACKS);
	cr_expect_eq(m.bad, 0, "%u of %u stacks read back otherwise", m.bad, m.read);
	free(buf);
	close(o.fd);
}

Test(chunkfmt, at_most_4_bytes_per_sample_steady_state, .timeout = 120)
{
	int fd = memfd();
	struct chunk_writer *w;
	struct chunk_writer_opts o = { .fd = fd };
	struct synth_opts so = { .threads = 64, .seconds = 60, .hz = 99 };
	uint64_t b0, s0;
	long long n;

	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	/* warm up: the first 20 s define the popular stacks */
	so.seconds = 20;
	cr_assert_gt(synth_write(w, &so, 1000000000ull), 0);
	chunk_writer_flush(w);
	b0 = chunk_writer_bytes(w);
	s0 = chunk_writer_samples(w);
	so.seconds = 60;
	so.seed = 1; /* same candidate stacks, steady state */
	n = synth_write(w, &so, 30000000000ull);
	cr_assert_gt(n, 0);
	chunk_writer_flush(w);
	{
		double bps = (double)(chunk_writer_bytes(w) - b0) /
			(double)(chunk_writer_samples(w) - s0);

		cr_log_info("steady state: %.2f bytes per sample", bps);
		cr_expect_leq(bps, 4.0, "%.2f bytes per sample", bps);
	}
	chunk_writer_free(w);
	close(fd);
}

Test(chunkfmt, every_record_type_is_in_the_man_page)
{
	char *text = NULL, want[64];
	size_t cap = 0;
	FILE *f = fopen(TD_SOURCE_DIR "/man/tracerd-chunk.5", "r");
	ssize_t n;

	cr_assert_not_null(f, "man/tracerd-chunk.5 missing");
	n = getdelim(&text, &cap, '\0', f);
	fclose(f);
	cr_assert_gt(n, 0);
	for (unsigned t = 1; t <= TCF_REC_MAX_KNOWN; t++) {
		snprintf(want, sizeof(want), ".It Dv %s No (%u)", tcf_record_name(t), t);
		cr_expect(strstr(text, want), "record %u (%s) is not described", t,
			tcf_record_name(t));
	}
	free(text);
}

Test(chunkfmt, many_threads_all_rows_decode)
{
	int fd = memfd();
	struct chunk_writer *w;
	struct chunk_writer_opts o = { .fd = fd };
	struct synth_opts so = { .threads = 300, .seconds = 2, .stacks = 40, .functions = 20,
		.min_depth = 5, .max_depth = 10 };
	struct chunk_report rep;
	long long n;
	uint8_t *buf;
	size_t len;

	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	n = synth_write(w, &so, 1000000000ull);
	cr_assert_gt(n, 0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_STOP, 0), 0);
	chunk_writer_free(w);
	buf = slurp_fd(fd, &len);
	chunk_read_buffer(buf, len, NULL, NULL, &rep);
	cr_expect_eq(rep.samples, (uint64_t)n, "every row of 300 threads decodes");
	cr_expect_eq(rep.unknown_refs, 0, "%s", rep.first_damage);
	free(buf);
	close(fd);
}

/* Rewrite a field of the trailer at t and make its CRC valid again: a
 * trailer that passes its checksum but lies. */
static void trailer_set(uint8_t *t, unsigned off, uint64_t v, unsigned width)
{
	if (width == 8)
		tcf_le64(t + off, v);
	else
		tcf_le32(t + off, (uint32_t)v);
	tcf_le32(t + 28, tcf_crc_mask(tcf_crc32c(0, t, 28)));
	cr_assert(tcf_is_trailer(t, TCF_TRAILER_LEN));
}

/* A chunk cut exactly where its trailer begins (after the final and
 * index blocks) is unfinished, and said to be cut at the trailer: no
 * torn bytes, no damaged block, just no trailer. */
Test(chunkfmt, cut_exactly_at_the_trailer)
{
	static struct layout L;
	struct chunk_report rep;
	uint8_t *two;

	build(&L, 1, 300, 256, 24);
	chunk_read_buffer(L.buf, L.len, NULL, NULL, &rep);
	cr_assert_eq(rep.chunks_finished, 1, "the whole chunk is finished");
	cr_expect_eq(rep.trailers_missing + rep.trailers_bad, 0);
	cr_expect_eq(rep.first_damage[0], '\0', "%s", rep.first_damage);

	chunk_read_buffer(L.buf, L.len - TCF_TRAILER_LEN, NULL, NULL, &rep);
	cr_expect_eq(rep.chunks, 1);
	cr_expect_eq(rep.chunks_finished, 0, "no trailer: unfinished");
	cr_expect_eq(rep.trailers_missing, 1, "the final blocks are there, the trailer is not");
	cr_expect_eq(rep.blocks_bad, 0);
	cr_expect_not(rep.torn_tail);
	cr_expect(strstr(rep.first_damage, "trailer"), "%s", rep.first_damage);
	cr_expect_eq(rep.samples, 300, "every sample is still read");

	/* the same in the middle of a file: the next chunk follows at once */
	two = malloc(2 * L.len);
	memcpy(two, L.buf, L.len - TCF_TRAILER_LEN);
	memcpy(two + L.len - TCF_TRAILER_LEN, L.buf, L.len);
	chunk_read_buffer(two, 2 * L.len - TCF_TRAILER_LEN, NULL, NULL, &rep);
	cr_expect_eq(rep.chunks, 2);
	cr_expect_eq(rep.chunks_finished, 1);
	cr_expect_eq(rep.trailers_missing, 1);
	cr_expect_eq(rep.samples, 600);
	free(two);

	/* a chunk cut before its final block is unfinished too, but it was
	 * not cut at a trailer: a live or crashed writer leaves that */
	chunk_read_buffer(L.buf, L.end[L.nb - 3], NULL, NULL, &rep);
	cr_expect_eq(rep.chunks_finished, 0);
	cr_expect_eq(rep.trailers_missing, 0);
	free(L.buf);
}

/* A trailer whose checksum is right but whose values are impossible
 * (length, index offset or block count that disagree with the chunk)
 * does not finish the chunk: it is a damaged trailer. */
Test(chunkfmt, trailer_that_disagrees_with_the_chunk)
{
	static struct layout L;
	struct {
		const char *what;
		unsigned off, width;
		int64_t delta;
	} lies[] = {
		{ "chunk_len one more", 16, 8, 1 },
		{ "chunk_len one less", 16, 8, -1 },
		{ "chunk_len zero", 16, 8, 0 },
		{ "index offset at the final block", 8, 8, 0 },
		{ "index offset past the end", 8, 8, 1 << 20 },
		{ "index offset zero", 8, 8, 0 },
		{ "block_count one more", 24, 4, 1 },
		{ "block_count one less", 24, 4, -1 },
	};

	build(&L, 1, 300, 256, 24);
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		uint8_t *t = L.buf + L.len - TCF_TRAILER_LEN, save[TCF_TRAILER_LEN];
		struct chunk_report rep;
		uint64_t v;

		memcpy(save, t, sizeof(save));
		v = lies[i].width == 8 ? tcf_rd64(t + lies[i].off) : tcf_rd32(t + lies[i].off);
		if (!strcmp(lies[i].what, "chunk_len zero") || !strcmp(lies[i].what, "index offset zero"))
			v = 0;
		else if (!strcmp(lies[i].what, "index offset at the final block"))
			v = L.end[L.nb - 3]; /* where the final (CHUNK_END) block starts */
		else
			v += (uint64_t)lies[i].delta;
		trailer_set(t, lies[i].off, v, lies[i].width);
		chunk_read_buffer(L.buf, L.len, NULL, NULL, &rep);
		cr_expect_eq(rep.chunks_finished, 0, "%s: not finished", lies[i].what);
		cr_expect_eq(rep.trailers_bad, 1, "%s: a damaged trailer", lies[i].what);
		cr_expect(strstr(rep.first_damage, "trailer"), "%s: %s", lies[i].what,
			rep.first_damage);
		cr_expect_eq(rep.samples, 300, "%s: the blocks are still read", lies[i].what);
		memcpy(t, save, sizeof(save));
	}
	free(L.buf);
}

/* ---- the rows of a death (PROCESS_EVENT kinds 3 and 4) */
struct deaths {
	unsigned rows, oom, unknown_kind;
	uint32_t tid[4], flags[4], depth[4];
	int32_t signo[4];
	uint64_t addr[4], oom_count;
};

static int d_event(void *arg, struct chunk_reader *r, const struct chunk_event *e)
{
	struct deaths *d = arg;
	struct chunk_thread t;
	uint32_t locs[16];

	if (e->type != CHUNK_EV_PROCESS)
		return 0;
	if (e->kind == TCF_PROC_DEATH_STACK && d->rows < 4) {
		unsigned i = d->rows++;

		d->tid[i] = chunk_reader_thread(r, e->thread_id, &t) ? t.tid : 0;
		d->flags[i] = (uint32_t)e->status;
		d->signo[i] = e->signo;
		d->addr[i] = e->fault_addr;
		/* the stack is whole when its row is read: defined before */
		d->depth[i] = e->stack_id ? chunk_reader_stack(r, e->stack_id, locs, 16) : 0;
		for (unsigned k = 0; k < d->depth[i] && k < 16; k++)
			if (!locs[k])
				d->depth[i] = 1000;
	} else if (e->kind == TCF_PROC_OOM_KILL) {
		d->oom++;
		d->oom_count = e->count;
		cr_expect_eq(e->signo, 9);
		cr_expect_eq(e->fault_addr, 0, "the count is not an address");
	} else if (e->kind > TCF_PROC_OOM_KILL) {
		d->unknown_kind++;
	}
	return 0;
}

/* Each thread's stack at death and the OOM kill round-trip; a kind this
 * reader does not know is passed on, not an error (tracerd-chunk(5),
 * Compatibility); a death row naming a stack its chunk never defined is
 * an unknown reference, as a sample's would be. */
Test(chunkfmt, death_rows_round_trip)
{
	static const struct chunk_visitor v = { .event = d_event };
	struct chunk_writer_opts o = { .target_pid = 4242 };
	struct chunk_writer *w;
	struct chunk_report rep;
	struct deaths d = { 0 };
	uint32_t f, l1, l2, s_main, s_deep, main_t, worker_t;
	uint8_t *buf;
	size_t len;

	o.fd = memfd();
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	f = chunk_writer_function(w, "f", NULL, "f.c", 1);
	l1 = chunk_writer_location(w, 0, 0x10, (struct chunk_line[]){ { f, 2, 0 } }, 1);
	l2 = chunk_writer_location(w, 0, 0x20, (struct chunk_line[]){ { f, 3, 0 } }, 1);
	main_t = chunk_writer_thread(w, 4242, 4242, "main");
	cr_assert_eq(chunk_writer_sample(w, 1000000, main_t, TCF_STATE_ONCPU,
			     chunk_writer_stack(w, &l1, 1), NULL, 0),
		0);
	cr_assert_eq(chunk_writer_flush(w), 0); /* the death's definitions in a later block */
	s_main = chunk_writer_stack(w, (uint32_t[]){ l2, l1 }, 2);
	s_deep = chunk_writer_stack(w, (uint32_t[]){ l1, l2, l1 }, 3);
	worker_t = chunk_writer_thread(w, 4243, 4242, "worker");
	cr_assert_eq(chunk_writer_death_stack(w, 2000000, 4242, 11, main_t, s_main,
			     TCF_DEATH_FAULTING, 0xbad),
		0);
	cr_assert_eq(chunk_writer_death_stack(w, 2000000, 4242, 11, worker_t, s_deep, 0, 0), 0);
	cr_assert_eq(chunk_writer_death_stack(w, 2000000, 4242, 11, worker_t, 0, 0, 0), 0);
	cr_assert_eq(chunk_writer_oom_kill(w, 2000000, 4242, 3), 0);
	cr_assert_eq(chunk_writer_process_event(w, 2000000, 4242, (enum tcf_process_event)9, 0, 0,
			     0, 0, 0),
		0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_TARGET_CRASH, 0), 0);
	chunk_writer_free(w);
	buf = slurp_fd(o.fd, &len);
	close(o.fd);
	cr_assert_eq(chunk_read_buffer(buf, len, &v, &d, &rep), 0);
	free(buf);
	cr_expect_eq(rep.blocks_bad + rep.seq_gaps + rep.unknown_refs, 0, "%s", rep.first_damage);
	cr_expect_eq(rep.chunks_finished, 1);
	cr_assert_eq(d.rows, 3);
	cr_expect(d.tid[0] == 4242 && d.flags[0] == TCF_DEATH_FAULTING && d.signo[0] == 11 &&
		  d.addr[0] == 0xbad && d.depth[0] == 2);
	cr_expect(d.tid[1] == 4243 && d.flags[1] == 0 && d.addr[1] == 0 && d.depth[1] == 3);
	cr_expect(d.tid[2] == 4243 && d.depth[2] == 0, "no stack taken: stack 0");
	cr_expect(d.oom == 1 && d.oom_count == 3);
	cr_expect_eq(d.unknown_kind, 1, "an unknown kind is passed on");

	/* a row naming what its chunk never defined */
	o.fd = memfd();
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	main_t = chunk_writer_thread(w, 4242, 4242, "main");
	cr_assert_eq(chunk_writer_death_stack(w, 2000000, 4242, 9, main_t, 999, 0, 0), 0);
	cr_assert_eq(chunk_writer_death_stack(w, 2000000, 4242, 9, 77, 0, 0, 0), 0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_TARGET_CRASH, 0), 0);
	chunk_writer_free(w);
	buf = slurp_fd(o.fd, &len);
	close(o.fd);
	memset(&d, 0, sizeof(d));
	cr_assert_eq(chunk_read_buffer(buf, len, &v, &d, &rep), 0);
	free(buf);
	cr_expect_eq(rep.unknown_refs, 2, "an undefined stack, an undefined thread");
	cr_expect_eq(d.rows, 2, "still passed on");
}

/* ---- where a death's signal came from (1.2: the tail of a row) */
struct srcs {
	unsigned rows, with;
	struct chunk_event e[4];
	char comm[4][32];
};

static int s_event(void *arg, struct chunk_reader *r, const struct chunk_event *e)
{
	struct srcs *d = arg;
	const char *c;

	if (e->type != CHUNK_EV_PROCESS || d->rows >= 4)
		return 0;
	d->e[d->rows] = *e;
	c = e->has_src ? chunk_reader_string(r, e->src.comm) : NULL;
	snprintf(d->comm[d->rows], sizeof(d->comm[0]), "%s", c ? c : "-");
	d->with += e->has_src;
	d->rows++;
	return 0;
}

/* A CRASH and a DEATH_STACK row with their source read back field by
 * field, a row without one says it has none, a comm string the chunk
 * never defined is an unknown reference; a chunk opened for an older
 * minor refuses a source (its readers could not tell it is there). */
Test(chunkfmt, signal_sources_round_trip)
{
	static const struct chunk_visitor v = { .event = s_event };
	struct chunk_writer_opts o = { .target_pid = 4242 };
	const struct chunk_sigsrc tkill = { .code = -6 /* SI_TKILL */, .pid = 4242, .uid = 1000 };
	struct chunk_sigsrc kill = { .code = 0 /* SI_USER */, .pid = 812, .uid = 0 };
	struct chunk_writer *w;
	struct chunk_report rep;
	struct srcs d = { 0 };
	uint32_t t;
	uint8_t *buf;
	size_t len;

	o.fd = memfd();
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	t = chunk_writer_thread(w, 4242, 4242, "main");
	cr_expect_eq(chunk_writer_process_event_src(w, 1000, 4242, TCF_PROC_CRASH, 0, 6, 0, t, 0,
			     &tkill),
		-EINVAL, "minor 0: no source");
	chunk_writer_free(w);
	close(o.fd);

	o.fd = memfd();
	o.minor = 2;
	cr_assert_eq(chunk_writer_open(&o, &w), 0);
	t = chunk_writer_thread(w, 4242, 4242, "main");
	kill.comm = chunk_writer_string(w, "bash");
	cr_assert_eq(chunk_writer_process_event_src(w, 1000, 4242, TCF_PROC_CRASH, 0, 6, 0, t, 0,
			     &tkill),
		0);
	cr_assert_eq(chunk_writer_process_event_src(w, 2000, 4242, TCF_PROC_DEATH_STACK,
			     TCF_DEATH_FAULTING, 15, 0, t, 0, &kill),
		0);
	cr_assert_eq(chunk_writer_death_stack(w, 2000, 4242, 15, t, 0, 0, 0), 0);
	kill.comm = 999;
	cr_assert_eq(chunk_writer_process_event_src(w, 3000, 4242, TCF_PROC_DEATH_STACK, 0, 15, 0,
			     t, 0, &kill),
		0);
	cr_assert_eq(chunk_writer_finish(w, TCF_END_TARGET_CRASH, 0), 0);
	chunk_writer_free(w);
	buf = slurp_fd(o.fd, &len);
	close(o.fd);
	cr_expect_eq(buf[10], 2, "minor 2 in the header");
	cr_assert_eq(chunk_read_buffer(buf, len, &v, &d, &rep), 0);
	free(buf);
	cr_expect_eq(rep.unknown_refs, 1, "the comm string 999 was never defined");
	cr_assert_eq(d.rows, 4);
	cr_expect_eq(d.with, 3);
	cr_expect(d.e[0].kind == TCF_PROC_CRASH && d.e[0].signo == 6 && d.e[0].has_src &&
		  d.e[0].src.code == -6 && d.e[0].src.pid == 4242 && d.e[0].src.uid == 1000 &&
		  !strcmp(d.comm[0], "-"), "tgkill, comm not read");
	cr_expect(d.e[1].status == TCF_DEATH_FAULTING && d.e[1].signo == 15 && d.e[1].has_src &&
		  d.e[1].src.code == 0 && d.e[1].src.pid == 812 && d.e[1].src.uid == 0 &&
		  !strcmp(d.comm[1], "bash"), "kill from bash: %s", d.comm[1]);
	cr_expect(!d.e[2].has_src && d.e[2].signo == 15, "no source: none read");
	cr_expect(d.e[3].has_src && !strcmp(d.comm[3], "-"));
}
