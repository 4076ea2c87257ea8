/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Code a JIT compiler made at run time, in anonymous memory no module
 * holds, named the way perf names it: from /tmp/perf-PID.map (one line per
 * code object, "START SIZE NAME", START and SIZE in hex with or without
 * 0x; Node's --perf-basic-prof, Java agents, Python 3.12's -X perf) and
 * from jit-PID.dump (jitdump.c), the file a JIT mmaps so that perf finds
 * it in the maps (Node's --perf-prof, Java, LuaJIT).  PID is the target's
 * own, in its PID namespace.  Later lines win over earlier ones where
 * ranges overlap (code freed and its memory reused), as perf reads them.
 *
 * Both files are the target's input and are treated as hostile: found in
 * its mount namespace (/proc/PID/root, or /proc/PID/map_files for the
 * jitdump's mapping), opened without following a symbolic link
 * (openat2's RESOLVE_IN_ROOT and RESOLVE_NO_SYMLINKS where the kernel has
 * it, one O_NOFOLLOW component at a time where not), read only when they
 * are regular files owned by the target's effective user and writable by
 * no other, and read within bounds (bytes, line length, entries, names,
 * and time per look: the rest is read at the next look).  A file refused
 * is said once (sym_session_jit_refused).  Names keep their raw bytes:
 * printing them escaped is the outputs' work.
 *
 * The files are read when the session is made, and looked at again (an
 * fstat; what was appended is read) when a pc in no module is not named,
 * at most every JIT_RELOOK_NS, and at least once a second while pcs are
 * looked up: generation then says that a pc named before may be named
 * otherwise now.
 *
 * Left to others: jitdump's records (jitdump.c), unwinding through such
 * code (unwind.c follows its frame pointer), the frames' places in a
 * chunk (daemon/writer-stacks.c). */
#define _GNU_SOURCE
#include "jit-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/buf.h"

#define JIT_RELOOK_NS (50u * 1000000)	/* a miss looks again after this */
#define JIT_PERIOD_NS (1000u * 1000000) /* a hit, after this */
#define JIT_MAX_LOOKBACK 256		/* entries a lookup may look back over */

/* The target's effective user and its own PID (the last of NSpid), from
 * /proc/PID/status: 0 or -errno. */
static int status_read(pid_t pid, uid_t *ret_uid, pid_t *ret_nspid)
{
	char path[64], line[256];
	bool uid_ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	*ret_nspid = pid;
	while (fgets(line, sizeof(line), f)) {
		unsigned long r, e;

		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			*ret_uid = (uid_t)e;
			uid_ok = true;
		} else if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t');
			long v = last ? strtol(last + 1, NULL, 10) : 0;

			if (v > 0)
				*ret_nspid = (pid_t)v;
		}
	}
	fclose(f);
	return uid_ok ? 0 : -TD_E_CORRUPT;
}

/* path (relative) under rootfd, no symbolic link followed anywhere and
 * nothing outside rootfd reached: an fd, or -errno (-TD_E_SYMLINK for a
 * link on the way). */
static int open_in_root(int rootfd, const char *path)
{
	static const int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	struct open_how how = { .flags = flags,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	const char *p = path;
	int fd, e;

	fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	e = errno;
	if (e == ELOOP)
		return -TD_E_SYMLINK;
	/* ENOSYS: before Linux 5.6; EPERM: a seccomp filter */
	if (e != ENOSYS && e != EPERM)
		return -e;
	fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (fd >= 0 && *p) {
		char comp[NAME_MAX + 1];
		size_t n;
		int next;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0 || n > NAME_MAX || (n <= 2 && !strncmp(p, "..", n))) {
			close(fd);
			return n ? -EINVAL : -ENOENT;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		next = openat(fd, comp, *p ? O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC : flags);
		e = errno;
		close(fd);
		if (next < 0)
			return e == ELOOP ? -TD_E_SYMLINK : -e;
		fd = next;
	}
	return fd < 0 ? -errno : fd;
}

/* A file of the target's that may be read: fd checked (kept), or -errno
 * / -TD_E_* (fd closed). */
static int file_checked(const struct sym_jit *j, int fd)
{
	struct stat st;
	int r = 0;

	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -TD_E_NOTREG;
	else if (st.st_uid != j->uid)
		r = -TD_E_NOTOWNER;
	else if (st.st_mode & S_IWOTH)
		r = -TD_E_UNSAFE;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static void refused(struct sym_jit *j, const struct jit_file *f, int err)
{
	if (j->refused_err)
		return; /* the first is said; the others are alike */
	j->refused_err = err;
	snprintf(j->refused_path, sizeof(j->refused_path), "%s", f->path);
}

/* Open the file f names, if it is there now and may be read. */
static void file_open(struct sym_jit *j, struct jit_file *f, int which)
{
	int fd = -ENOENT;

	if (f->fd >= 0 || !f->path[0])
		return;
	if (which == JIT_DUMP && f->map_end) {
		/* the very file mapped, wherever its path leads now */
		char mf[96];

		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", (int)j->pid,
			(unsigned long long)f->map_start, (unsigned long long)f->map_end);
		fd = open(mf, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	if (fd < 0 && j->rootfd >= 0)
		fd = open_in_root(j->rootfd, f->path + 1);
	if (fd >= 0)
		fd = file_checked(j, fd);
	if (fd == -ENOENT || fd == -ESRCH)
		return; /* not written (yet) */
	if (fd < 0) {
		refused(j, f, fd);
		f->path[0] = '\0'; /* not tried again */
		return;
	}
	f->fd = fd;
}

uint8_t *jit_buf(struct sym_jit *j, size_t n)
{
	return td_array_grow(j->buf, j->buf_cap, n, JIT_BUF) < 0 ? NULL : j->buf;
}

static int64_t name_add(struct sym_jit *j, const char *s, size_t len)
{
	size_t at = j->names_len;

	if (len > SYM_MAX_NAME)
		len = SYM_MAX_NAME;
	if (j->names_len + len + 1 > JIT_MAX_NAMES) {
		j->limited = true;
		return -TD_E_LIMIT;
	}
	if (td_array_grow(j->names, j->names_cap, j->names_len + len + 1, 64 * 1024) < 0)
		return -ENOMEM;
	memcpy(j->names + at, s, len);
	j->names[at + len] = '\0';
	j->names_len += len + 1;
	return (int64_t)at;
}

int64_t jit_name(struct sym_jit *j, const char *s, size_t len)
{
	return name_add(j, s, len);
}

int jit_add(struct sym_jit *j, uint64_t start, uint64_t size, const char *name, size_t len,
	uint8_t src, uint32_t lines, uint32_t nlines)
{
	int64_t at;

	if (size == 0 || start + size < start || len == 0)
		return -TD_E_CORRUPT;
	if (j->ne >= JIT_MAX_ENTRIES) {
		j->limited = true;
		return -TD_E_LIMIT;
	}
	if (td_array_grow(j->e, j->cap_e, j->ne + 1, 1024) < 0)
		return -ENOMEM;
	at = name_add(j, name, len);
	if (at < 0)
		return (int)at;
	j->e[j->ne++] = (struct jit_entry){ .start = start, .end = start + size,
		.name = (uint32_t)at, .lines = lines, .nlines = nlines, .src = src };
	return 0;
}

/* ---- the perf map */

static bool hex_field(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	unsigned n = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end && n <= 16; s++, n++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' :
			*s >= 'a' && *s <= 'f' ? *s - 'a' + 10 :
			*s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;

		if (d < 0)
			break;
		v = v << 4 | (uint64_t)d;
	}
	if (n == 0 || n > 16)
		return false;
	*p = s;
	*ret = v;
	return true;
}

static bool blank(const char **p, const char *end)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == *p)
		return false;
	*p = s;
	return true;
}

/* One line, its newline left out. */
static void perfmap_line(struct sym_jit *j, const char *p, size_t len)
{
	const char *end = p + len;
	uint64_t start, size;

	if (len > JIT_MAX_LINE || !hex_field(&p, end, &start) || !blank(&p, end) ||
		!hex_field(&p, end, &size) || !blank(&p, end) || p == end ||
		jit_add(j, start, size, p, (size_t)(end - p), JIT_PERFMAP, 0, 0) == -TD_E_CORRUPT)
		j->skipped++;
}

/* The whole lines of f from f->done to f->size, until deadline. */
static void perfmap_read(struct sym_jit *j, struct jit_file *f, uint64_t deadline)
{
	uint8_t *buf = jit_buf(j, JIT_BUF);

	while (buf && f->done < f->size && !j->limited) {
		size_t want = (size_t)TD_MIN(f->size - f->done, (uint64_t)JIT_BUF), used = 0;
		ssize_t n = pread(f->fd, buf, want, (off_t)f->done);
		uint8_t *nl;

		if (n <= 0)
			break;
		while ((nl = memchr(buf + used, '\n', (size_t)n - used))) {
			if (!f->skipping)
				perfmap_line(j, (const char *)buf + used, (size_t)(nl - (buf + used)));
			f->skipping = false;
			used = (size_t)(nl - buf) + 1;
		}
		if (used == 0) {
			if ((size_t)n < JIT_BUF)
				break; /* a line being written: read it whole later */
			if (!f->skipping)
				j->skipped++;
			f->skipping = true; /* no newline in JIT_BUF bytes */
			used = (size_t)n;
		}
		f->done += used;
		if (td_now_ns() > deadline)
			break;
	}
}

/* ---- the table */

static int by_start(const void *a, const void *b, void *arg)
{
	const struct jit_entry *e = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (e[x].start != e[y].start)
		return e[x].start < e[y].start ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void index_build(struct sym_jit *j)
{
	uint64_t m = 0;

	if (td_array_grow(j->order, j->cap_order, j->ne, 1024) < 0)
		return; /* the old index stays: it names fewer */
	{
		size_t cap = j->cap_order;
		uint64_t *me = realloc(j->maxend, cap * sizeof(*me));

		if (!me)
			return;
		j->maxend = me;
	}
	for (size_t i = 0; i < j->ne; i++)
		j->order[i] = (uint32_t)i;
	qsort_r(j->order, j->ne, sizeof(*j->order), by_start, j->e);
	for (size_t i = 0; i < j->ne; i++) {
		if (j->e[j->order[i]].end > m)
			m = j->e[j->order[i]].end;
		j->maxend[i] = m;
	}
	j->norder = j->ne;
}

const struct jit_entry *jit_find(const struct sym_jit *j, uint64_t addr)
{
	const struct jit_entry *best = NULL;
	size_t lo = 0, hi = j->norder;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (j->e[j->order[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* entries are numbered in the order read: the highest holding addr
	 * is the newest */
	for (size_t i = lo, k = 0; i-- > 0 && k < JIT_MAX_LOOKBACK && j->maxend[i] > addr; k++) {
		uint32_t x = j->order[i];

		if (addr < j->e[x].end && (!best || x > (uint32_t)(best - j->e)))
			best = &j->e[x];
	}
	return best;
}

/* Open what is not open, read what the files grew by, and index it. */
static void look(struct sym_jit *j)
{
	uint64_t now = td_now_ns(), deadline = now + JIT_READ_NS;
	size_t before = j->ne;

	j->looked_ns = now;
	for (int i = 0; i < JIT_FILES; i++) {
		struct jit_file *f = &j->f[i];
		struct stat st;

		file_open(j, f, i);
		if (f->fd < 0 || f->broken || fstat(f->fd, &st) < 0)
			continue;
		f->size = TD_MIN((uint64_t)st.st_size, JIT_MAX_FILE);
		if ((uint64_t)st.st_size > JIT_MAX_FILE)
			j->limited = true;
		if (f->size <= f->done)
			continue;
		if (i == JIT_PERFMAP)
			perfmap_read(j, f, deadline);
		else
			jitdump_read(j, f, deadline);
	}
	if (j->ne != before) {
		index_build(j);
		j->generation++;
	}
}

/* ---- the session's */

static struct sym_jit *jit_new(struct sym_session *s)
{
	struct sym_jit *j = calloc(1, sizeof(*j));
	char root[64];

	if (!j)
		return NULL;
	j->pid = s->proc;
	j->rootfd = -1;
	for (int i = 0; i < JIT_FILES; i++)
		j->f[i].fd = -1;
	if (status_read(s->pid, &j->uid, &j->nspid) < 0) {
		free(j);
		return NULL;
	}
	snprintf(root, sizeof(root), "/proc/%d/root", (int)s->proc);
	j->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(j->f[JIT_PERFMAP].path, sizeof(j->f[0].path), "/tmp/perf-%d.map", (int)j->nspid);
	snprintf(j->module[JIT_PERFMAP], sizeof(j->module[0]), "[perf-%d.map]", (int)j->nspid);
	snprintf(j->module[JIT_DUMP], sizeof(j->module[0]), "[jit]");
	/* jitdump: the file is known by its mapping, as perf finds it */
	for (unsigned i = 0; i < s->nvmas; i++) {
		const char *base = strrchr(s->vmas[i].path, '/');
		char want[32];

		snprintf(want, sizeof(want), "jit-%d.dump", (int)j->nspid);
		if (base && !strcmp(base + 1, want) &&
			strlen(s->vmas[i].path) < sizeof(j->f[JIT_DUMP].path)) {
			struct jit_file *f = &j->f[JIT_DUMP];

			snprintf(f->path, sizeof(f->path), "%s", s->vmas[i].path);
			f->map_start = s->vmas[i].start;
			f->map_end = s->vmas[i].end;
			break;
		}
	}
	return j;
}

void sym_jit_open(struct sym_session *s)
{
	s->jit = jit_new(s);
	if (s->jit)
		look(s->jit);
}

void sym_jit_free(struct sym_jit *j)
{
	if (!j)
		return;
	for (int i = 0; i < JIT_FILES; i++)
		if (j->f[i].fd >= 0)
			close(j->f[i].fd);
	if (j->rootfd >= 0)
		close(j->rootfd);
	free(j->e);
	free(j->names);
	free(j->lines);
	free(j->order);
	free(j->maxend);
	free(j->buf);
	free(j);
}

bool sym_jit_holds(struct sym_session *s, uint64_t addr)
{
	return s->jit && jit_find(s->jit, addr);
}

bool sym_jit_frame(struct sym_session *s, uint64_t pc, uint64_t addr, struct sym_frame *f)
{
	struct sym_jit *j = s->jit;
	const struct jit_entry *e;
	uint64_t now;

	if (!j)
		return false;
	now = td_now_ns();
	e = jit_find(j, addr);
	if (now - j->looked_ns > (e ? JIT_PERIOD_NS : JIT_RELOOK_NS)) {
		look(j);
		e = jit_find(j, addr);
	}
	if (!e)
		return false;
	*f = (struct sym_frame){ .pc = pc, .offset = pc,
		.function = sym_cache_intern0(s->cache, j->names + e->name),
		.module = sym_cache_intern0(s->cache, j->module[e->src]) };
	if (e->nlines) {
		/* the last line that starts at or before addr (jitdump.c keeps
		 * them by offset) */
		const struct jit_line *l = &j->lines[e->lines];
		uint64_t off = addr - e->start;
		uint32_t lo = 0, hi = e->nlines;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (l[mid].off <= off)
				lo = mid + 1;
			else
				hi = mid;
		}
		l = lo ? &l[lo - 1] : NULL;
		if (l) {
			f->file = sym_cache_intern0(s->cache, j->names + l->file);
			f->line = (int)l->line;
		}
	}
	return true;
}

uint64_t sym_session_jit_generation(const struct sym_session *s)
{
	return s->jit ? s->jit->generation : 0;
}

int sym_session_jit_refused(struct sym_session *s, char *path, size_t len)
{
	struct sym_jit *j = s->jit;

	if (!j || !j->refused_err || j->refused_told)
		return 0;
	j->refused_told = true;
	snprintf(path, len, "%s", j->refused_path);
	return j->refused_err;
}
