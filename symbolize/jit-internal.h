/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Private to jitmap.c and jitdump.c: the table of code a JIT compiler
 * announced (perf maps and jitdump files), which both fill. */
#ifndef TD_JIT_INTERNAL_H
#define TD_JIT_INTERNAL_H

#include "symbolize-internal.h"

#include <sys/types.h>

/* Bounds on what a target's files may cost us (they are its input). */
#define JIT_MAX_FILE (256ull << 20)  /* bytes of one file read, in all */
#define JIT_MAX_ENTRIES (1u << 19)   /* code ranges per process */
#define JIT_MAX_NAMES (32u << 20)    /* bytes of names and file names */
#define JIT_MAX_LINES (1u << 21)     /* jitdump's debug lines per process */
#define JIT_MAX_LINE 4160	     /* one perf map line: a name and two numbers */
#define JIT_READ_NS (100u * 1000000) /* time one look may spend reading */
#define JIT_BUF (64u * 1024)

enum { JIT_PERFMAP, JIT_DUMP, JIT_FILES };

/* One file a JIT writes, read as it grows.  owns: fd. */
struct jit_file {
	int fd;		  /* -1: not open (yet, or refused) */
	uint64_t done;	  /* bytes parsed (whole lines or records) */
	uint64_t size;	  /* its size at the last look */
	bool skipping;	  /* perf map: inside a line over JIT_MAX_LINE */
	bool broken;	  /* jitdump: a record that cannot be: read no further */
	/* jitdump: the debug lines of the next code load at pend_addr */
	bool pend;
	uint64_t pend_addr;
	uint32_t pend_first, pend_n;
	uint64_t map_start, map_end; /* jitdump: its mapping, for map_files */
	char path[256];		     /* in the target's mount namespace */
};

/* A range of code, and its name; a later one wins over an earlier one
 * where they overlap, as perf reads maps. */
struct jit_entry {
	uint64_t start, end;
	uint32_t name;		   /* offset into names */
	uint32_t lines, nlines;	   /* jitdump: its debug lines[lines, +nlines) */
	uint8_t src;		   /* JIT_PERFMAP, JIT_DUMP */
};

/* A debug line of jitdump code: from off (bytes into the code) on. */
struct jit_line {
	uint64_t off;
	uint32_t file; /* offset into names */
	uint32_t line;
};

/* owns: the files, entries, names, lines, the sorted index, buf */
struct sym_jit {
	pid_t pid;   /* ours */
	pid_t nspid; /* the target's own, which its files are named after */
	uid_t uid;   /* the target's effective user: the files' owner */
	int rootfd;  /* /proc/PID/root (O_PATH), -1 if it could not be opened */
	struct jit_file f[JIT_FILES];
	struct jit_entry *e;
	size_t ne, cap_e;
	char *names;
	size_t names_len, names_cap;
	struct jit_line *lines;
	size_t nlines, cap_lines;
	/* e by start (ties: earlier first), and the largest end of e up to
	 * each position: a lookup looks back only while one may hold it */
	uint32_t *order;
	uint64_t *maxend;
	size_t norder, cap_order;
	uint8_t *buf;
	size_t buf_cap;
	uint64_t looked_ns;   /* the files' last look */
	uint64_t generation;  /* bumped when entries were added */
	unsigned skipped;     /* malformed lines and records */
	bool limited;	      /* a bound was reached */
	int refused_err;      /* a file not read, and why */
	char refused_path[256];
	bool refused_told;
	char module[2][32];   /* "[perf-NSPID.map]", "[jit]" */
};

/* Add a range named name[0..len): 0, or -TD_E_LIMIT / -ENOMEM. */
int jit_add(struct sym_jit *j, uint64_t start, uint64_t size, const char *name, size_t len,
	uint8_t src, uint32_t lines, uint32_t nlines);
/* Intern a file name of debug lines: its offset in names, or -1. */
int64_t jit_name(struct sym_jit *j, const char *s, size_t len);
/* j->buf with room for n bytes, or NULL. */
uint8_t *jit_buf(struct sym_jit *j, size_t n);
/* The newest entry holding addr, or NULL. */
const struct jit_entry *jit_find(const struct sym_jit *j, uint64_t addr);
/* Read f (a jitdump) from f->done to f->size, until deadline (td_now_ns). */
void jitdump_read(struct sym_jit *j, struct jit_file *f, uint64_t deadline);

#endif
