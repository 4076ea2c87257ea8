/* SPDX-License-Identifier: GPL-2.0-or-later */
/* jitdump files (the format of the kernel tree's
 * tools/perf/Documentation/jitdump-specification.txt): a header, then
 * records, each with its id and total size.  Read here: JIT_CODE_LOAD
 * (a function's name, code address and size), JIT_CODE_MOVE (code moved:
 * the same function at a new address) and JIT_CODE_DEBUG_INFO (file:line
 * from each code address on, for the code load that follows it at the same
 * address); the others are stepped over.  The code bytes themselves are
 * never read.
 *
 * Guarantees: every length is checked against the record's and the file's
 * before use; a record that cannot be (shorter than its own header, or
 * larger than the file may be) ends the reading for good; a record still
 * being written is read whole at the next look; only files in this host's
 * byte order are read (a JIT writes its own).
 *
 * Left to others: finding and opening the file, the table the records go
 * into and its bounds (jitmap.c). */
#define _GNU_SOURCE
#include "jit-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/buf.h"

#define JITDUMP_MAGIC 0x4A695444u
#define JITDUMP_HEADER_MAX 4096u
#define JIT_CODE_LOAD 0
#define JIT_CODE_MOVE 1
#define JIT_CODE_DEBUG_INFO 2
/* a debug-info record read whole: larger ones are stepped over */
#define JITDUMP_DEBUG_MAX (4u << 20)

struct jd_header {
	uint32_t magic, version, total_size, elf_mach, pad1, pid;
	uint64_t timestamp, flags;
};

struct jd_record {
	uint32_t id, total_size;
	uint64_t timestamp;
};

struct jd_load {
	uint32_t pid, tid;
	uint64_t vma, code_addr, code_size, code_index;
};

struct jd_move {
	uint32_t pid, tid;
	uint64_t vma, old_code_addr, new_code_addr, code_size, code_index;
};

struct jd_debug {
	uint64_t code_addr, nr_entry;
};

struct jd_debug_entry {
	uint64_t addr;
	uint32_t lineno, discrim;
};

static bool read_at(const struct jit_file *f, void *buf, size_t len, uint64_t at)
{
	return pread(f->fd, buf, len, (off_t)at) == (ssize_t)len;
}

static int by_off(const void *a, const void *b)
{
	const struct jit_line *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* A debug-info record of len bytes (after its header) at rec: its lines
 * wait in j->lines for the code load at their address. */
static void debug_info(struct sym_jit *j, struct jit_file *f, const uint8_t *rec, size_t len)
{
	struct jd_debug d;
	size_t at = sizeof(d);
	int64_t prev = -1;

	f->pend = false;
	if (len < sizeof(d)) {
		j->skipped++;
		return;
	}
	memcpy(&d, rec, sizeof(d));
	f->pend_first = (uint32_t)j->nlines;
	f->pend_n = 0;
	for (uint64_t i = 0; i < d.nr_entry && len - at >= sizeof(struct jd_debug_entry); i++) {
		struct jd_debug_entry de;
		const char *name;
		size_t nlen;
		int64_t file;

		memcpy(&de, rec + at, sizeof(de));
		at += sizeof(de);
		name = (const char *)rec + at;
		nlen = strnlen(name, len - at);
		if (nlen == len - at)
			break; /* no NUL before the record's end */
		at += nlen + 1;
		/* "\xff" repeats the previous entry's file */
		file = nlen == 1 && (uint8_t)name[0] == 0xff ? prev : jit_name(j, name, nlen);
		if (file < 0 || de.addr < d.code_addr)
			continue;
		if (j->nlines >= JIT_MAX_LINES) {
			j->limited = true;
			break;
		}
		if (td_array_grow(j->lines, j->cap_lines, j->nlines + 1, 1024) < 0)
			break;
		j->lines[j->nlines++] = (struct jit_line){ .off = de.addr - d.code_addr,
			.file = (uint32_t)file, .line = de.lineno };
		f->pend_n++;
		prev = file;
	}
	if (f->pend_n > 1)
		qsort(&j->lines[f->pend_first], f->pend_n, sizeof(*j->lines), by_off);
	f->pend = f->pend_n > 0;
	f->pend_addr = d.code_addr;
}

static void code_load(struct sym_jit *j, struct jit_file *f, const uint8_t *rec, size_t len)
{
	struct jd_load l;
	const char *name = (const char *)rec + sizeof(l);
	size_t nlen;
	bool lines;

	if (len < sizeof(l) + 1) {
		j->skipped++;
		return;
	}
	memcpy(&l, rec, sizeof(l));
	nlen = strnlen(name, len - sizeof(l));
	lines = f->pend && f->pend_addr == l.code_addr;
	if (jit_add(j, l.code_addr, l.code_size, name, nlen, JIT_DUMP, lines ? f->pend_first : 0,
		    lines ? f->pend_n : 0) == -TD_E_CORRUPT)
		j->skipped++;
	f->pend = false;
}

/* The function at old now runs at new: the newest entry that began at
 * old (looked for among the last ones: a move follows its load). */
static void code_move(struct sym_jit *j, const uint8_t *rec, size_t len)
{
	const struct jit_entry *e = NULL;
	struct jd_move m;
	struct jit_entry copy;

	if (len < sizeof(m)) {
		j->skipped++;
		return;
	}
	memcpy(&m, rec, sizeof(m));
	for (size_t i = j->ne, k = 0; i-- > 0 && k < 4096 && !e; k++)
		if (j->e[i].start == m.old_code_addr && j->e[i].src == JIT_DUMP)
			e = &j->e[i];
	if (!e) {
		j->skipped++;
		return;
	}
	copy = *e; /* jit_add may move the entries */
	if (jit_add(j, m.new_code_addr, m.code_size, j->names + copy.name,
		    strlen(j->names + copy.name), JIT_DUMP, copy.lines, copy.nlines) == -TD_E_CORRUPT)
		j->skipped++;
}

/* The header at 0: where the records begin, or 0 if it is none. */
static uint64_t header(const struct jit_file *f)
{
	struct jd_header h;

	if (f->size < sizeof(h) || !read_at(f, &h, sizeof(h), 0) || h.magic != JITDUMP_MAGIC ||
		h.version < 1 || h.total_size < sizeof(h) || h.total_size > JITDUMP_HEADER_MAX)
		return 0;
	return h.total_size;
}

void jitdump_read(struct sym_jit *j, struct jit_file *f, uint64_t deadline)
{
	unsigned n = 0;

	if (f->done == 0 && !(f->done = header(f))) {
		/* not a jitdump, or its header is not written yet */
		if (f->size >= JITDUMP_HEADER_MAX)
			f->broken = true;
		return;
	}
	while (!f->broken && !j->limited && f->size - f->done >= sizeof(struct jd_record)) {
		struct jd_record r;
		size_t body, want;
		uint8_t *buf;

		if (!read_at(f, &r, sizeof(r), f->done))
			break;
		if (r.total_size < sizeof(r) || r.total_size > JIT_MAX_FILE) {
			f->broken = true;
			j->skipped++;
			break;
		}
		if (f->size - f->done < r.total_size)
			break; /* being written */
		body = r.total_size - sizeof(r);
		/* what is read of it: never a load's code */
		want = r.id == JIT_CODE_LOAD ? TD_MIN(body, sizeof(struct jd_load) + SYM_MAX_NAME + 1) :
		       r.id == JIT_CODE_MOVE ? TD_MIN(body, sizeof(struct jd_move)) :
		       r.id == JIT_CODE_DEBUG_INFO && body <= JITDUMP_DEBUG_MAX ? body : 0;
		if (want) {
			buf = jit_buf(j, want);
			if (!buf || !read_at(f, buf, want, f->done + sizeof(r)))
				break;
			if (r.id == JIT_CODE_LOAD)
				code_load(j, f, buf, want);
			else if (r.id == JIT_CODE_MOVE)
				code_move(j, buf, want);
			else
				debug_info(j, f, buf, want);
		}
		f->done += r.total_size;
		if (++n % 256 == 0 && td_now_ns() > deadline)
			break;
	}
}
