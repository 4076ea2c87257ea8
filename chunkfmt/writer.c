/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The chunk writer: streams definitions, samples and events into blocks.
 *
 * States:
 *   OPEN  --chunk_writer_open(): header written and synced-->  WRITING
 *   WRITING --append: buffered; a block is committed with one write() when
 *             its payload reaches block_bytes or on chunk_writer_flush()
 *   WRITING --chunk_writer_finish(): CHUNK_END block, INDEX block,
 *             trailer, fdatasync-->  FINISHED
 *   any     --a failed write/fsync/allocation-->  FAILED (error kept; the
 *             file holds whole blocks, plus at most one torn tail)
 *
 * Definitions are deduplicated by content (one hash map over all tables,
 * keyed by the encoded entry) and emitted in the block that first needs
 * them, before its records that use them.  The memory the dictionaries use
 * is bounded: past max_dict_bytes chunk_writer_full() asks for rotation,
 * and the next chunk starts empty. */
#define _GNU_SOURCE
#include "chunkfmt-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../common/map.h"

enum dict_kind { K_STRING, K_MAPPING, K_FUNCTION, K_LOCATION, K_NODE, K_THREAD, K_COUNT };
static const enum tcf_record kind_record[K_COUNT] = { TCF_REC_STRINGS, TCF_REC_MAPPINGS,
	TCF_REC_FUNCTIONS, TCF_REC_LOCATIONS, TCF_REC_STACK_NODES, TCF_REC_THREADS };

/* One definition: its key's bytes in the arena, and its id. */
struct dict_entry {
	uint32_t off, len;
	uint32_t id;
	uint8_t kind;
};

struct pending {
	struct td_buf entries;
	uint32_t first_id, count;
};

struct chunk_writer {
	struct chunk_writer_opts o;
	uint64_t sync;
	int err;
	bool finished;
	/* dictionaries: hash of (kind, key) -> index into entries */
	struct td_map dict;
	struct td_buf entries; /* struct dict_entry[], by index */
	struct td_buf arena;
	uint32_t next_id[K_COUNT];
	struct pending pend[K_COUNT];
	/* the block being built */
	struct td_buf rows, tev, misc, block, scratch;
	uint32_t nrows, ntev, nvalues;
	uint64_t base_ns;
	bool have_base;
	int64_t prev_rel;
	/* per thread id: its last row's stack, valid while gen is this
	 * block's gen + 1 (a new block needs no clearing) */
	struct last_stack {
		uint32_t stack, gen;
	} *last;
	size_t last_cap;
	uint32_t gen;
	/* stacks seen in this chunk (chunk_writer_stack), direct-mapped by
	 * the hash of their locations; their locations in memo_pool, which
	 * starts again when full.  NULL: not allocated yet, or it failed
	 * (memo_failed: every stack then walks the tree) */
	struct stack_memo {
		uint64_t hash;
		uint32_t id, n, off;
	} *memo;
	uint32_t *memo_pool;
	uint32_t memo_used;
	bool memo_failed;
	/* the chunk */
	uint64_t bytes, samples, block_samples, last_clock;
	uint32_t block_seq;
	struct td_buf index; /* (offset, base, samples) per block */
};

static int fail(struct chunk_writer *w, int err)
{
	if (!w->err)
		w->err = err;
	return err;
}

static void random_bytes(void *p, size_t n)
{
	if (getrandom(p, n, 0) != (ssize_t)n) {
		/* never fails for n <= 256 after boot; keep going anyway */
		uint64_t x = td_now_ns() ^ (uint64_t)getpid() << 32;

		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			((uint8_t *)p)[i] = (uint8_t)(x >> 56);
		}
	}
}

static void read_boot_id(uint8_t out[16])
{
	char buf[64];
	int k = 0;

	memset(out, 0, 16);
	if (td_read_text(AT_FDCWD, "/proc/sys/kernel/random/boot_id", buf, sizeof(buf)) <= 0)
		return;
	for (char *p = buf; *p && k < 32; p++) {
		int v = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;

		if (v < 0)
			continue;
		out[k / 2] |= (uint8_t)(k % 2 ? v : v << 4);
		k++;
	}
}

int chunk_writer_open(const struct chunk_writer_opts *opts, struct chunk_writer **ret_writer)
{
	struct chunk_writer *w = td_calloc(1, sizeof(*w));
	uint8_t h[TCF_HEADER_LEN] = { 0 };
	struct timespec mono, real;
	static const uint8_t zero[16];
	ssize_t r;

	if (!w)
		return -ENOMEM;
	w->o = *opts;
	if (!w->o.tick_ns)
		w->o.tick_ns = 1000;
	if (!w->o.block_bytes)
		w->o.block_bytes = 64 * 1024;
	if (!w->o.max_dict_bytes)
		w->o.max_dict_bytes = 32u << 20;
	if (!memcmp(w->o.session_id, zero, 16))
		random_bytes(w->o.session_id, 16);
	random_bytes(&w->sync, sizeof(w->sync));
	for (int k = 0; k < K_COUNT; k++)
		w->next_id[k] = 1;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);

	memcpy(h, tcf_magic, 8);
	tcf_le16(h + 8, TCF_MAJOR);
	tcf_le16(h + 10, TD_MAX(TCF_MINOR, w->o.minor));
	tcf_le32(h + 12, TCF_HEADER_LEN);
	memcpy(h + 24, w->o.session_id, 16);
	tcf_le64(h + 40, w->o.chunk_seq);
	tcf_le64(h + 48, w->sync);
	tcf_le64(h + 56, (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec);
	tcf_le64(h + 64, (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec);
	read_boot_id(h + 72);
	tcf_le32(h + 88, CLOCK_MONOTONIC);
	tcf_le32(h + 92, w->o.tick_ns);
	tcf_le32(h + 96, w->o.target_pid);
	tcf_le32(h + 100, w->o.header_flags);
	tcf_le32(h + 108, tcf_crc_mask(tcf_crc32c(0, h, 108)));
	r = td_write_all(w->o.fd, h, sizeof(h));
	if (r < 0 || (r = td_fdatasync(w->o.fd)) < 0) {
		chunk_writer_free(w);
		return (int)r;
	}
	w->bytes = sizeof(h);
	*ret_writer = w;
	return 0;
}

void chunk_writer_free(struct chunk_writer *w)
{
	if (!w)
		return;
	td_map_free(&w->dict);
	td_buf_free(&w->entries);
	td_buf_free(&w->arena);
	for (int k = 0; k < K_COUNT; k++)
		td_buf_free(&w->pend[k].entries);
	td_buf_free(&w->rows);
	td_buf_free(&w->tev);
	td_buf_free(&w->misc);
	td_buf_free(&w->block);
	td_buf_free(&w->scratch);
	td_buf_free(&w->index);
	free(w->last);
	free(w->memo);
	free(w->memo_pool);
	free(w);
}

static uint64_t dict_bytes(const struct chunk_writer *w)
{
	return w->arena.cap + td_map_bytes(&w->dict) + w->entries.cap;
}

bool chunk_writer_full(const struct chunk_writer *w)
{
	return dict_bytes(w) > w->o.max_dict_bytes;
}

/* Id of key in table kind.  A new id is appended to that table's pending
 * definitions as the key itself, or, with ret_new, left to the caller
 * (*ret_new is the new id, 0 if the key was known). */
static uint32_t intern(struct chunk_writer *w, enum dict_kind kind, const uint8_t *key, size_t len,
	uint32_t *ret_new)
{
	uint64_t h = (tcf_crc32c(kind, key, len) | (uint64_t)len << 32) * 0x9e3779b97f4a7c15ull, e;
	struct pending *p = &w->pend[kind];
	size_t cur = 0, index = w->entries.len / sizeof(struct dict_entry);
	struct dict_entry fresh;

	if (ret_new)
		*ret_new = 0;
	if (w->err || w->finished)
		return 0;
	while (td_map_find_next(&w->dict, h, &cur, &e)) {
		const struct dict_entry *d = (const struct dict_entry *)(void *)w->entries.p + e;

		if (d->kind == kind && d->len == len && !memcmp(w->arena.p + d->off, key, len))
			return d->id;
	}
	if (w->arena.len + len > UINT32_MAX) {
		fail(w, -TD_E_LIMIT);
		return 0;
	}
	fresh = (struct dict_entry){ (uint32_t)w->arena.len, (uint32_t)len, w->next_id[kind],
		(uint8_t)kind };
	if (!p->count)
		p->first_id = fresh.id;
	td_buf_put(&w->arena, key, len);
	if (ret_new)
		*ret_new = fresh.id; /* the caller appends the entry */
	else
		td_buf_put(&p->entries, key, len);
	td_buf_put(&w->entries, &fresh, sizeof(fresh));
	if (w->arena.failed || p->entries.failed || w->entries.failed ||
		td_map_add(&w->dict, h, index) < 0) {
		fail(w, -ENOMEM);
		return 0;
	}
	w->next_id[kind]++;
	p->count++;
	return fresh.id;
}

uint32_t chunk_writer_string(struct chunk_writer *w, const char *s)
{
	size_t n;

	if (!s)
		return 0;
	n = strnlen(s, 65535);
	td_buf_reserve(&w->scratch, n + 10);
	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, n);
	td_buf_put(&w->scratch, s, n);
	if (w->scratch.failed) {
		fail(w, -ENOMEM);
		return 0;
	}
	return intern(w, K_STRING, w->scratch.p, w->scratch.len, NULL);
}

static uint32_t intern_scratch(struct chunk_writer *w, enum dict_kind kind)
{
	if (w->scratch.failed) {
		fail(w, -ENOMEM);
		return 0;
	}
	return intern(w, kind, w->scratch.p, w->scratch.len, NULL);
}

uint32_t chunk_writer_mapping(struct chunk_writer *w, const struct chunk_mapping *m)
{
	uint32_t path = chunk_writer_string(w, m->path);
	unsigned bl = m->build_id_len > 64 ? 64 : m->build_id_len;

	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, m->start);
	td_buf_put_varint(&w->scratch, m->size);
	td_buf_put_varint(&w->scratch, m->file_offset);
	td_buf_put_varint(&w->scratch, path);
	td_buf_put_varint(&w->scratch, bl);
	td_buf_put(&w->scratch, m->build_id, bl);
	td_buf_put_varint(&w->scratch, m->flags);
	return intern_scratch(w, K_MAPPING);
}

uint32_t chunk_writer_function(struct chunk_writer *w, const char *name, const char *system_name,
	const char *file, uint32_t start_line)
{
	uint32_t n = chunk_writer_string(w, name), s = chunk_writer_string(w, system_name),
		 f = chunk_writer_string(w, file);

	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, n);
	td_buf_put_varint(&w->scratch, s);
	td_buf_put_varint(&w->scratch, f);
	td_buf_put_varint(&w->scratch, start_line);
	return intern_scratch(w, K_FUNCTION);
}

uint32_t chunk_writer_location(struct chunk_writer *w, uint32_t mapping_id, uint64_t addr,
	const struct chunk_line *lines, unsigned nlines)
{
	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, mapping_id);
	td_buf_put_varint(&w->scratch, addr);
	td_buf_put_varint(&w->scratch, 0); /* flags */
	td_buf_put_varint(&w->scratch, nlines);
	for (unsigned i = 0; i < nlines; i++) {
		td_buf_put_varint(&w->scratch, lines[i].function_id);
		td_buf_put_varint(&w->scratch, lines[i].line);
		td_buf_put_varint(&w->scratch, lines[i].column);
	}
	return intern_scratch(w, K_LOCATION);
}

/* A stack this chunk has seen: its id from one hash and one compare of its
 * locations, rather than an intern per frame (a kernel call chain adds 10
 * to 30 frames to a sample; their interns were most of what those samples
 * cost the writer beyond a user stack's).  Bounded: STACK_MEMO entries
 * and STACK_MEMO_POOL location ids, 1 MiB in all; a full pool starts
 * again, an evicted stack walks the tree again. */
#define STACK_MEMO 1024u
#define STACK_MEMO_POOL (256u * 1024)

static struct stack_memo *memo_of(struct chunk_writer *w, const uint32_t *locs, unsigned n,
	uint64_t *ret_hash)
{
	if (!w->memo && !w->memo_failed) {
		w->memo = td_calloc(STACK_MEMO, sizeof(*w->memo));
		w->memo_pool = w->memo ? td_malloc(STACK_MEMO_POOL * sizeof(*w->memo_pool)) : NULL;
		if (!w->memo_pool) {
			free(w->memo);
			w->memo = NULL;
			w->memo_failed = true; /* no memo, not an error */
		}
	}
	if (!w->memo || n > STACK_MEMO_POOL / 4)
		return NULL;
	*ret_hash = (tcf_crc32c(0, locs, n * sizeof(*locs)) | (uint64_t)n << 32) *
		0x9e3779b97f4a7c15ull;
	return &w->memo[*ret_hash >> 54]; /* the top 10 bits: STACK_MEMO */
}

static void memo_keep(struct chunk_writer *w, struct stack_memo *m, uint64_t hash,
	const uint32_t *locs, unsigned n, uint32_t id)
{
	if (w->memo_used + n > STACK_MEMO_POOL) {
		memset(w->memo, 0, STACK_MEMO * sizeof(*w->memo));
		w->memo_used = 0;
	}
	memcpy(w->memo_pool + w->memo_used, locs, n * sizeof(*locs));
	*m = (struct stack_memo){ hash, id, n, w->memo_used };
	w->memo_used += n;
}

uint32_t chunk_writer_stack(struct chunk_writer *w, const uint32_t *locs, unsigned n)
{
	uint32_t parent = 0;
	uint64_t hash = 0;
	struct stack_memo *m = n && !w->err && !w->finished ? memo_of(w, locs, n, &hash) : NULL;

	if (m && m->id && m->hash == hash && m->n == n &&
		!memcmp(w->memo_pool + m->off, locs, n * sizeof(*locs)))
		return m->id;

	/* The prefix tree: a root-to-leaf path is a node; shared prefixes and
	 * repeated stacks cost nothing new.  Keyed by (parent, location); the
	 * entry written is (id - parent, location), usually one byte. */
	for (unsigned i = n; i-- > 0;) {
		uint8_t key[20], entry[20];
		struct td_buf kb = TD_BUF_FIXED(key, sizeof(key));
		uint32_t id, fresh;

		td_buf_put_varint(&kb, parent);
		td_buf_put_varint(&kb, locs[i]);
		id = intern(w, K_NODE, key, kb.len, &fresh);
		if (!id)
			return 0;
		if (fresh) {
			struct td_buf eb = TD_BUF_FIXED(entry, sizeof(entry));

			td_buf_put_varint(&eb, id - parent);
			td_buf_put_varint(&eb, locs[i]);
			td_buf_put(&w->pend[K_NODE].entries, entry, eb.len);
		}
		parent = id;
	}
	if (m && parent)
		memo_keep(w, m, hash, locs, n, parent);
	return parent;
}

uint32_t chunk_writer_thread(struct chunk_writer *w, uint32_t tid, uint32_t pid, const char *name)
{
	uint32_t n = chunk_writer_string(w, name);

	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, tid);
	td_buf_put_varint(&w->scratch, pid);
	td_buf_put_varint(&w->scratch, n);
	td_buf_put_varint(&w->scratch, 0); /* flags */
	return intern_scratch(w, K_THREAD);
}

static size_t pending_bytes(const struct chunk_writer *w)
{
	size_t n = w->rows.len + w->tev.len + w->misc.len;

	for (int k = 0; k < K_COUNT; k++)
		n += w->pend[k].entries.len;
	return n;
}

/* Ticks from the block's base.  The base is a whole tick and offsets
 * round down, before the base too, so that an instant decodes to itself
 * rounded down to a tick in every block and every chunk: the parts of a
 * wait episode written in different chunks carry the same first tick,
 * which is how readers join them (tracerd-chunk(5), WAITS). */
static int64_t rel_ticks(struct chunk_writer *w, uint64_t time_ns)
{
	int64_t d, tick = (int64_t)w->o.tick_ns;

	if (!w->have_base) {
		w->have_base = true;
		w->base_ns = time_ns - time_ns % w->o.tick_ns;
		w->prev_rel = 0;
	}
	if (time_ns > w->last_clock)
		w->last_clock = time_ns;
	d = (int64_t)(time_ns - w->base_ns);
	return d >= 0 ? d / tick : -((-d + tick - 1) / tick);
}

static int maybe_flush(struct chunk_writer *w)
{
	if (w->err)
		return w->err;
	if (w->rows.failed || w->tev.failed || w->misc.failed)
		return fail(w, -ENOMEM);
	return pending_bytes(w) >= w->o.block_bytes ? chunk_writer_flush(w) : 0;
}

static bool same_stack(struct chunk_writer *w, uint32_t thread_id, uint32_t stack_id)
{
	struct last_stack *l;

	if (thread_id >= w->last_cap) {
		size_t had = w->last_cap;

		if (td_array_grow(w->last, w->last_cap, (size_t)thread_id + 1, 64) < 0) {
			fail(w, -ENOMEM);
			return false;
		}
		/* gen 0 is no block's: a new thread has no last stack */
		memset(w->last + had, 0, (w->last_cap - had) * sizeof(*w->last));
	}
	l = &w->last[thread_id];
	if (l->gen == w->gen + 1 && l->stack == stack_id)
		return true;
	l->gen = w->gen + 1;
	l->stack = stack_id;
	return false;
}

int chunk_writer_sample(struct chunk_writer *w, uint64_t time_ns, uint32_t thread_id,
	enum tcf_state state, uint32_t stack_id, const uint64_t *values, unsigned nvalues)
{
	int64_t rel;
	bool same;

	if (w->err || w->finished)
		return w->err ? w->err : -EINVAL;
	if (w->nrows && nvalues != w->nvalues) {
		int r = chunk_writer_flush(w); /* one value count per record */

		if (r < 0)
			return r;
	}
	w->nvalues = nvalues;
	rel = rel_ticks(w, time_ns);
	same = same_stack(w, thread_id, stack_id);
	if (w->err)
		return w->err;
	td_buf_put_varint(&w->rows, tcf_zigzag(rel - w->prev_rel));
	w->prev_rel = rel;
	td_buf_put_varint(&w->rows, (uint64_t)thread_id << 4 | (uint64_t)(state & 7) << 1 | same);
	if (!same)
		td_buf_put_varint(&w->rows, stack_id);
	for (unsigned i = 0; i < nvalues; i++)
		td_buf_put_varint(&w->rows, values[i]);
	w->nrows++;
	w->samples++;
	w->block_samples++;
	return maybe_flush(w);
}

int chunk_writer_thread_event(struct chunk_writer *w, uint64_t time_ns, uint32_t thread_id,
	enum tcf_thread_event kind, uint64_t arg)
{
	if (w->err || w->finished)
		return w->err ? w->err : -EINVAL;
	td_buf_put_varint(&w->tev, tcf_zigzag(rel_ticks(w, time_ns)));
	td_buf_put_varint(&w->tev, thread_id);
	td_buf_put_varint(&w->tev, kind);
	td_buf_put_varint(&w->tev, arg);
	w->ntev++;
	return maybe_flush(w);
}

/* A whole record into out: framing, head (may be NULL), body. */
static void put_record(struct td_buf *out, enum tcf_record type, const struct td_buf *head,
	const struct td_buf *body)
{
	size_t hl = head ? head->len : 0;

	tcf_put_record_head(out, type, hl + body->len);
	if (head)
		td_buf_put(out, head->p, hl);
	td_buf_put(out, body->p, body->len);
	if ((head && head->failed) || body->failed)
		out->failed = true;
}

/* A whole record (body from scratch) into misc. */
static void misc_record(struct chunk_writer *w, enum tcf_record type)
{
	put_record(&w->misc, type, NULL, &w->scratch);
}

int chunk_writer_process_event(struct chunk_writer *w, uint64_t time_ns, uint32_t pid,
	enum tcf_process_event kind, int32_t status, int32_t signo, uint64_t fault_addr,
	uint32_t thread_id, uint32_t stack_id)
{
	return chunk_writer_process_event_src(w, time_ns, pid, kind, status, signo, fault_addr,
		thread_id, stack_id, NULL);
}

int chunk_writer_process_event_src(struct chunk_writer *w, uint64_t time_ns, uint32_t pid,
	enum tcf_process_event kind, int32_t status, int32_t signo, uint64_t fault_addr,
	uint32_t thread_id, uint32_t stack_id, const struct chunk_sigsrc *src)
{
	if (w->err || w->finished)
		return w->err ? w->err : -EINVAL;
	if (src && w->o.minor < 2)
		return -EINVAL;
	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, tcf_zigzag(rel_ticks(w, time_ns)));
	td_buf_put_varint(&w->scratch, pid);
	td_buf_put_varint(&w->scratch, kind);
	td_buf_put_varint(&w->scratch, tcf_zigzag(status));
	td_buf_put_varint(&w->scratch, tcf_zigzag(signo));
	td_buf_put_varint(&w->scratch, fault_addr);
	td_buf_put_varint(&w->scratch, thread_id);
	td_buf_put_varint(&w->scratch, stack_id);
	if (src) {
		/* a tail: readers before 1.2 stop at stack_id */
		td_buf_put_varint(&w->scratch, tcf_zigzag(src->code));
		td_buf_put_varint(&w->scratch, src->pid);
		td_buf_put_varint(&w->scratch, src->uid);
		td_buf_put_varint(&w->scratch, src->comm);
	}
	misc_record(w, TCF_REC_PROCESS_EVENT);
	return maybe_flush(w);
}

int chunk_writer_death_stack(struct chunk_writer *w, uint64_t time_ns, uint32_t pid,
	int32_t signo, uint32_t thread_id, uint32_t stack_id, uint32_t flags, uint64_t fault_addr)
{
	return chunk_writer_process_event(w, time_ns, pid, TCF_PROC_DEATH_STACK, (int32_t)flags,
		signo, fault_addr, thread_id, stack_id);
}

int chunk_writer_oom_kill(struct chunk_writer *w, uint64_t time_ns, uint32_t pid,
	uint64_t oom_kills)
{
	/* SIGKILL is what the OOM killer sends, on every architecture */
	return chunk_writer_process_event(w, time_ns, pid, TCF_PROC_OOM_KILL, 0, 9, oom_kills, 0,
		0);
}

int chunk_writer_lost(struct chunk_writer *w, uint64_t count, enum tcf_lost_reason reason)
{
	if (w->err || w->finished)
		return w->err ? w->err : -EINVAL;
	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, count);
	td_buf_put_varint(&w->scratch, reason);
	misc_record(w, TCF_REC_LOST);
	return maybe_flush(w);
}

int chunk_writer_wait(struct chunk_writer *w, const struct chunk_wait *e)
{
	if (w->err || w->finished)
		return w->err ? w->err : -EINVAL;
	if (w->o.minor < 1 || e->nowners > TCF_WAIT_MAX_OWNERS)
		return -EINVAL;
	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, 1); /* episodes in this record */
	td_buf_put_varint(&w->scratch, tcf_zigzag(rel_ticks(w, e->time_ns)));
	td_buf_put_varint(&w->scratch, e->wait_ns);
	td_buf_put_varint(&w->scratch, e->thread_id);
	td_buf_put_varint(&w->scratch, e->stack_id);
	td_buf_put_varint(&w->scratch, e->kind);
	td_buf_put_varint(&w->scratch, e->flags);
	td_buf_put_varint(&w->scratch, e->object);
	td_buf_put_varint(&w->scratch, e->what);
	td_buf_put_varint(&w->scratch, e->nowners);
	for (unsigned i = 0; i < e->nowners; i++) {
		td_buf_put_varint(&w->scratch, e->owners[i].thread_id);
		td_buf_put_varint(&w->scratch, e->owners[i].wait_ns);
		td_buf_put_varint(&w->scratch, e->owners[i].stack_id);
	}
	misc_record(w, TCF_REC_WAITS);
	return maybe_flush(w);
}

int chunk_writer_clock_sync(struct chunk_writer *w, uint64_t clock_ns, uint64_t real_ns)
{
	if (w->err || w->finished)
		return w->err ? w->err : -EINVAL;
	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, clock_ns);
	td_buf_put_varint(&w->scratch, real_ns);
	misc_record(w, TCF_REC_CLOCK_SYNC);
	return maybe_flush(w);
}

int chunk_writer_meta(struct chunk_writer *w, const char *key, const char *value)
{
	size_t kl = strnlen(key, 4096), vl = strnlen(value, 65536);

	if (w->err || w->finished)
		return w->err ? w->err : -EINVAL;
	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, 1);
	td_buf_put_varint(&w->scratch, kl);
	td_buf_put(&w->scratch, key, kl);
	td_buf_put_varint(&w->scratch, vl);
	td_buf_put(&w->scratch, value, vl);
	misc_record(w, TCF_REC_META);
	return maybe_flush(w);
}

int chunk_writer_sample_types(struct chunk_writer *w, const char *const *types,
	const char *const *units, unsigned n)
{
	uint32_t ids[2 * 16];

	if (n > 16)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		ids[2 * i] = chunk_writer_string(w, types[i]);
		ids[2 * i + 1] = chunk_writer_string(w, units[i]);
	}
	if (w->err || w->finished)
		return w->err ? w->err : -EINVAL;
	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, n);
	for (unsigned i = 0; i < 2 * n; i++)
		td_buf_put_varint(&w->scratch, ids[i]);
	misc_record(w, TCF_REC_SAMPLE_TYPES);
	return maybe_flush(w);
}

/* Commit the block in w->block (payload after the reserved header). */
static int commit_block(struct chunk_writer *w, uint16_t flags, uint64_t base)
{
	uint8_t *h;
	size_t n;
	ssize_t r;

	if (w->block.failed)
		return fail(w, -ENOMEM);
	h = w->block.p;
	n = w->block.len - TCF_BLOCK_HEADER_LEN;
	tcf_encode_block_header(h, w->sync, w->block_seq, base, flags, h + TCF_BLOCK_HEADER_LEN, n);
	r = td_write_all(w->o.fd, h, w->block.len);
	if (r < 0)
		return fail(w, (int)r);
	if (w->o.sync_every_block && (r = td_fdatasync(w->o.fd)) < 0)
		return fail(w, (int)r);
	if (!(flags & TCF_BLK_INDEX)) {
		uint8_t e[24];

		tcf_le64(e, w->bytes);
		tcf_le64(e + 8, base);
		tcf_le64(e + 16, w->block_samples);
		td_buf_put(&w->index, e, sizeof(e));
	}
	w->bytes += w->block.len;
	w->block_seq++;
	return 0;
}

int chunk_writer_flush(struct chunk_writer *w)
{
	struct td_buf head = { 0 };
	uint16_t flags = 0;
	int r;

	if (w->err || w->finished)
		return w->err;
	if (!pending_bytes(w))
		return 0;
	w->block.len = 0;
	td_buf_reserve(&w->block, TCF_BLOCK_HEADER_LEN + pending_bytes(w) + 64);
	w->block.len = TCF_BLOCK_HEADER_LEN;
	for (int k = 0; k < K_COUNT; k++) {
		struct pending *p = &w->pend[k];

		if (!p->count)
			continue;
		flags |= TCF_BLK_HAS_DEFS;
		head.len = 0;
		td_buf_put_varint(&head, p->first_id);
		td_buf_put_varint(&head, p->count);
		put_record(&w->block, kind_record[k], &head, &p->entries);
	}
	td_buf_put(&w->block, w->misc.p, w->misc.len);
	if (w->ntev) {
		head.len = 0;
		td_buf_put_varint(&head, w->ntev);
		put_record(&w->block, TCF_REC_THREAD_EVENTS, &head, &w->tev);
	}
	if (w->nrows) {
		head.len = 0;
		td_buf_put_varint(&head, w->nrows);
		td_buf_put_varint(&head, w->nvalues);
		put_record(&w->block, TCF_REC_SAMPLES, &head, &w->rows);
	}
	td_buf_free(&head);
	r = commit_block(w, flags, w->have_base ? w->base_ns : w->last_clock);
	if (r < 0)
		return r;
	for (int k = 0; k < K_COUNT; k++) {
		w->pend[k].entries.len = 0;
		w->pend[k].count = 0;
	}
	w->rows.len = w->tev.len = w->misc.len = 0;
	w->nrows = w->ntev = 0;
	w->have_base = false;
	w->block_samples = 0;
	w->gen++; /* same_stack state is per block: each decodes alone */
	return 0;
}

int chunk_writer_finish(struct chunk_writer *w, enum tcf_end_reason reason, int32_t exit_status)
{
	struct timespec real;
	uint64_t index_off, nblocks;
	uint8_t t[TCF_TRAILER_LEN];
	ssize_t r;

	if (w->finished)
		return -EINVAL;
	r = chunk_writer_flush(w);
	if (r < 0)
		return (int)r;
	clock_gettime(CLOCK_REALTIME, &real);
	/* final block: CHUNK_END */
	w->scratch.len = 0;
	tcf_put_chunk_end(&w->scratch, reason, w->samples, (uint64_t)w->block_seq + 2, w->last_clock,
		(uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec, exit_status);
	w->block.len = 0;
	td_buf_reserve(&w->block, TCF_BLOCK_HEADER_LEN);
	w->block.len = TCF_BLOCK_HEADER_LEN;
	put_record(&w->block, TCF_REC_CHUNK_END, NULL, &w->scratch);
	if ((r = commit_block(w, TCF_BLK_FINAL, w->last_clock)) < 0)
		return (int)r;
	/* INDEX: per data block (offset delta, base clock delta, samples) */
	index_off = w->bytes;
	nblocks = w->index.len / 24;
	w->scratch.len = 0;
	td_buf_put_varint(&w->scratch, nblocks);
	for (uint64_t i = 0, po = 0, pb = 0; i < nblocks; i++) {
		const uint8_t *e = w->index.p + 24 * i;

		td_buf_put_varint(&w->scratch, tcf_rd64(e) - po);
		td_buf_put_varint(&w->scratch, tcf_zigzag((int64_t)(tcf_rd64(e + 8) - pb)));
		td_buf_put_varint(&w->scratch, tcf_rd64(e + 16));
		po = tcf_rd64(e);
		pb = tcf_rd64(e + 8);
	}
	w->block.len = TCF_BLOCK_HEADER_LEN;
	put_record(&w->block, TCF_REC_INDEX, NULL, &w->scratch);
	if (w->index.failed)
		w->block.failed = true;
	if ((r = commit_block(w, TCF_BLK_INDEX, w->last_clock)) < 0)
		return (int)r;
	tcf_encode_trailer(t, index_off, w->bytes + TCF_TRAILER_LEN, w->block_seq);
	if ((r = td_write_all(w->o.fd, t, sizeof(t))) < 0)
		return fail(w, (int)r);
	w->bytes += sizeof(t);
	if ((r = td_fdatasync(w->o.fd)) < 0)
		return fail(w, (int)r);
	w->finished = true;
	return 0;
}

uint64_t chunk_writer_bytes(const struct chunk_writer *w)
{
	return w->bytes;
}

uint64_t chunk_writer_samples(const struct chunk_writer *w)
{
	return w->samples;
}

int chunk_writer_error(const struct chunk_writer *w)
{
	return w->err;
}

const uint8_t *chunk_writer_session(const struct chunk_writer *w)
{
	return w->o.session_id;
}
