/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cache of decompressed separate debuginfo, keyed by build-id.
 *
 * Debian's -dbg packages (libc6-dbg among them) ship .debug files whose
 * .debug_* sections are SHF_COMPRESSED; libdw inflates each whole section
 * on first use, which was half of the recorder's start-up CPU, paid again
 * by every recording, every dump and every process of the same binary.
 * This file keeps DIR/<build-id-hex>.debug, a copy of such a file with
 * every section stored uncompressed (but those symbolizing never reads,
 * left empty), which libdw then only maps.
 *
 * An entry's life (sym_debugcache_find calls entry_open, then
 * entry_create when that finds nothing it may use):
 *
 *           entry_create: write DIR/.tmp-* inflated (write_inflated),
 *   absent ---check it, rename it to the name-------------------------> valid
 *     ^                                                                  |
 *     +-- evict: after any entry_create, least recently used first <----+
 *                                                                        |
 *   refused (truncated, another build-id, compressed, a link, not ours)  |
 *     +-- entry_create renames a new file over it ---------------------->+
 *
 * entry_open marks each use (atime) for evict.
 *
 * What it guarantees: an entry is used only if it is a regular file owned
 * by the effective user, writable by nobody else, reached without
 * following a symbolic link, an ELF file whose build-id is the one asked
 * for, with no compressed section and every section inside the file (so a
 * truncated copy is refused).  A reader never sees a half-written entry:
 * entries appear by rename.  The directory must be the effective user's
 * own and writable by nobody else; one we create is 0700.
 *
 * Bounds (tracerd(8), FILES): an entry is made only for a file of at most
 * SYM_DEBUGCACHE_MAX_ENTRY bytes once inflated, and within the bound on
 * what any file may inflate to (sym_inflate_check: one over it is not
 * inflated here, nor by libdw: debuginfo.c refuses it); after each new entry the
 * least recently used entries (by atime, which entry_open sets on every
 * use: mount options such as noatime do not matter) are deleted until the
 * rest hold at most SYM_DEBUGCACHE_MAX_BYTES in at most
 * SYM_DEBUGCACHE_MAX_FILES files; temporary files older than an hour (a
 * writer that died) go too.
 *
 * Symbol tables (symtab.c) are kept here too, as BUILDID.NSYMS.sym:
 * made aside and renamed in, used only if ours and private, checked whole
 * by sym_table_map, and evicted with the rest.
 *
 * Left to others: whether to cache at all (sym_options.cache_dir), and
 * the search beyond build-id paths: debuginfo.c hands what libdwfl's
 * standard search found (.gnu_debuglink, debuginfod) to
 * sym_debugcache_store.  A dwz alternate file (.gnu_debugaltlink) is
 * opened by libdw itself and is not cached. */
#define _GNU_SOURCE
#include "symbolize-internal.h"

#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libdeflate.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SYM_DEBUGCACHE_MAX_BYTES (1ull << 30)	/* all entries together */
#define SYM_DEBUGCACHE_MAX_FILES 256		/* entries */
#define SYM_DEBUGCACHE_MAX_ENTRY (256ull << 20) /* one entry, inflated */
#define SYM_DEBUGCACHE_SCAN_MAX 4096		/* directory entries looked at per eviction */
#define SYM_DEBUGCACHE_TMP_AGE 3600		/* s: a temporary file older is left over */
#define SYM_BUILD_ID_MAX 64			/* bytes; as load_module keeps them */

static void hex_of(const unsigned char *bid, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[bid[i] >> 4];
		out[2 * i + 1] = digits[bid[i] & 15];
	}
	out[2 * len] = '\0';
}

/* Open dir (absolute), creating it and its missing parents 0700 if
 * create.  The last component is opened without following a link. */
static int dir_open(const char *dir, bool create)
{
	char path[PATH_MAX];
	struct stat st;
	size_t len = strlen(dir);
	int fd;

	if (dir[0] != '/')
		return -EINVAL;
	if (len >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		memcpy(path, dir, len + 1);
		for (char *p = path + 1;; p++) {
			if (*p != '/' && *p != '\0')
				continue;
			char c = *p;

			*p = '\0';
			if (mkdir(path, 0700) < 0 && errno != EEXIST)
				return -errno;
			*p = c;
			if (!c)
				break;
		}
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		/* a symbolic link: ELOOP, or ENOTDIR from O_DIRECTORY first */
		int e = errno;
		struct stat lst;

		if (e == ELOOP || (e == ENOTDIR && lstat(dir, &lst) == 0 && S_ISLNK(lst.st_mode)))
			return -TD_E_SYMLINK;
		return -e;
	}
	if (fstat(fd, &st) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		return -TD_E_NOTOWNER;
	}
	if (st.st_mode & 022) {
		close(fd);
		return -TD_E_UNSAFE;
	}
	return fd;
}

int sym_debug_cache_prepare(const char *dir)
{
	int fd = dir_open(dir, true);

	if (fd < 0)
		return fd;
	/* entries are created and deleted in it */
	if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	close(fd);
	return 0;
}

/* How many sections are SHF_COMPRESSED, and the file's size once they are
 * inflated (at least the current size).  -errno / -TD_E_CORRUPT. */
static int count_compressed(Elf *elf, uint64_t size, uint64_t *ret_inflated)
{
	Elf_Scn *scn = NULL;
	uint64_t total = size;
	int n = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &sh))
			return -TD_E_CORRUPT;
		if (!(sh.sh_flags & SHF_COMPRESSED) || sh.sh_type == SHT_NOBITS)
			continue;
		if (!gelf_getchdr(scn, &ch))
			return -TD_E_CORRUPT;
		n++;
		/* a bomb's ch_size is caught here, before anything inflates */
		if (ch.ch_size > SYM_DEBUGCACHE_MAX_ENTRY)
			return -TD_E_LIMIT;
		total += ch.ch_size;
	}
	*ret_inflated = total;
	return n;
}

/* Is fd a file of ours: regular, the effective user's, writable by nobody
 * else?  Its stat in *st. */
static bool file_ours(int fd, struct stat *st)
{
	return fstat(fd, st) == 0 && S_ISREG(st->st_mode) && st->st_uid == geteuid() &&
	       !(st->st_mode & 022);
}

/* Is fd a valid entry for build-id bid: ours, whole, uncompressed? */
static bool entry_valid(int fd, const unsigned char *bid, size_t len)
{
	struct stat st;
	const void *have;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t shnum;
	Elf *elf;
	bool ok = false;

	if (!file_ours(fd, &st) || st.st_size <= 0 ||
		(uint64_t)st.st_size > SYM_DEBUGCACHE_MAX_ENTRY)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
		elf_getshdrnum(elf, &shnum) != 0)
		goto out;
	/* A truncated copy can lose its section headers (they are last) and
	 * still show a build-id through its program headers: the headers
	 * must be there, every one. */
	if (shnum < 2 || eh.e_shentsize == 0 || eh.e_shoff > (uint64_t)st.st_size ||
		shnum > ((uint64_t)st.st_size - eh.e_shoff) / eh.e_shentsize)
		goto out;
	if (dwelf_elf_gnu_build_id(elf, &have) != (ssize_t)len || memcmp(have, bid, len) != 0)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED))
			goto out;
		if (sh.sh_type != SHT_NOBITS &&
			(sh.sh_offset > (uint64_t)st.st_size ||
				sh.sh_size > (uint64_t)st.st_size - sh.sh_offset))
			goto out;
	}
	ok = true;
out:
	elf_end(elf);
	return ok;
}

/* A use: LRU eviction goes by atime, set here explicitly so that noatime
 * and relatime mounts keep the order; mtime stays when it was made. */
static void entry_touch(int fd)
{
	const struct timespec t[2] = { { .tv_nsec = UTIME_NOW }, { .tv_nsec = UTIME_OMIT } };

	futimens(fd, t);
}

/* The valid entry name in dirfd, or -ENOENT (absent), -TD_E_CORRUPT (there
 * but not to be trusted: to be replaced). */
static int entry_open(int dirfd, const char *name, const unsigned char *bid, size_t len)
{
	/* O_NONBLOCK: a FIFO in its place does not hang us */
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -TD_E_CORRUPT;
	if (!entry_valid(fd, bid, len)) {
		close(fd);
		return -TD_E_CORRUPT;
	}
	entry_touch(fd);
	return fd;
}

/* Sections libdw would inflate at dwarf_begin but symbolizing never reads:
 * location lists (where a variable lives).  An entry keeps them as empty
 * SHT_NOBITS sections, which libdw skips: 14% of libc6-dbg inflated. */
static bool section_unused(const char *name)
{
	return name && (!strcmp(name, ".debug_loclists") || !strcmp(name, ".debug_loc"));
}

/* The section scn of src (header sh) as out's: inflated if compressed
 * (the buffer, to be freed after the file is written, in *ret_buf), empty
 * if unused.  -TD_E_CORRUPT for data that does not inflate to its size. */
static int section_copy(Elf *src, Elf_Scn *scn, GElf_Shdr *sh, const char *name, Elf_Scn *out,
	struct libdeflate_decompressor *z, void **ret_buf)
{
	Elf_Data *d = elf_newdata(out), *raw;
	GElf_Chdr ch;
	size_t hsz;

	*ret_buf = NULL;
	if (!d)
		return -ENOMEM;
	d->d_type = ELF_T_BYTE;
	d->d_version = EV_CURRENT;
	d->d_align = sh->sh_addralign ? sh->sh_addralign : 1;
	if (sh->sh_type == SHT_NOBITS || section_unused(name)) {
		if (sh->sh_type != SHT_NOBITS)
			sh->sh_size = 0;
		sh->sh_type = SHT_NOBITS;
		sh->sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
		d->d_size = sh->sh_size;
		return 0;
	}
	raw = elf_rawdata(scn, NULL);
	if (!raw || (sh->sh_size && !raw->d_buf))
		return -TD_E_CORRUPT;
	if (!(sh->sh_flags & SHF_COMPRESSED)) {
		d->d_buf = raw->d_buf; /* the source's mapping: written as it is */
		d->d_size = raw->d_size;
		return 0;
	}
	hsz = gelf_fsize(src, ELF_T_CHDR, 1, EV_CURRENT);
	if (!gelf_getchdr(scn, &ch) || ch.ch_type != ELFCOMPRESS_ZLIB || raw->d_size < hsz)
		return -TD_E_CORRUPT;
	/* ch_size was bounded by count_compressed */
	*ret_buf = malloc(ch.ch_size ? ch.ch_size : 1);
	if (!*ret_buf)
		return -ENOMEM;
	/* no actual size asked: anything but exactly ch_size bytes fails */
	if (libdeflate_zlib_decompress(z, (const char *)raw->d_buf + hsz, raw->d_size - hsz,
		    *ret_buf, ch.ch_size, NULL) != LIBDEFLATE_SUCCESS)
		return -TD_E_CORRUPT;
	sh->sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
	sh->sh_size = ch.ch_size;
	sh->sh_addralign = ch.ch_addralign;
	d->d_buf = *ret_buf;
	d->d_size = ch.ch_size;
	d->d_align = ch.ch_addralign ? ch.ch_addralign : 1;
	return 0;
}

/* Write src to fd with every compressed section inflated (nsec sections).
 * libdeflate inflates twice as fast as the zlib libelf's elf_compress
 * uses, and the sections go from src's mapping to the file in one write,
 * not through a copy read back whole. */
static int write_inflated(Elf *src, size_t nsec, int fd)
{
	struct libdeflate_decompressor *z = libdeflate_alloc_decompressor();
	void **bufs = calloc(nsec ? nsec : 1, sizeof(*bufs));
	Elf *dst = elf_begin(fd, ELF_C_WRITE, NULL);
	Elf_Scn *scn = NULL;
	size_t phnum, shstrndx, k = 0;
	GElf_Ehdr eh;
	int r = 0;

	if (!z || !bufs || !dst) {
		r = !dst && z && bufs ? -TD_E_CORRUPT : -ENOMEM;
		goto out;
	}
	if (!gelf_getehdr(src, &eh) || elf_getphdrnum(src, &phnum) != 0 ||
		elf_getshdrstrndx(src, &shstrndx) != 0 || !gelf_newehdr(dst, gelf_getclass(src)) ||
		(phnum && !gelf_newphdr(dst, phnum))) {
		r = -TD_E_CORRUPT;
		goto out;
	}
	/* a string table index past 0xff00 goes in section 0 (libelf 0.188
	 * has no call to set it): no entry, libdw inflates the original */
	if (shstrndx >= SHN_LORESERVE) {
		r = -TD_E_LIMIT;
		goto out;
	}
	/* the program headers of a .debug file describe the stripped binary:
	 * kept as they are */
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(src, (int)i, &ph) || !gelf_update_phdr(dst, (int)i, &ph)) {
			r = -TD_E_CORRUPT;
			goto out;
		}
	}
	while (r == 0 && (scn = elf_nextscn(src, scn))) {
		Elf_Scn *out = elf_newscn(dst);
		GElf_Shdr sh;

		if (k >= nsec || !out || !gelf_getshdr(scn, &sh)) {
			r = -TD_E_CORRUPT;
			break;
		}
		r = section_copy(src, scn, &sh, elf_strptr(src, shstrndx, sh.sh_name), out, z,
			&bufs[k++]);
		if (r == 0 && !gelf_update_shdr(out, &sh))
			r = -TD_E_CORRUPT;
	}
	if (r < 0)
		goto out;
	/* no ELF_F_LAYOUT: libelf places the sections and their headers;
	 * a failed write leaves errno (a full disk: ENOSPC), bad input not */
	errno = 0;
	if (!gelf_update_ehdr(dst, &eh) || elf_update(dst, ELF_C_WRITE) < 0)
		r = errno ? -errno : -TD_E_CORRUPT;
	else
		r = td_fault_io(TD_FAULT_WRITE);
out:
	elf_end(dst);
	for (size_t i = 0; bufs && i < k; i++)
		free(bufs[i]);
	free(bufs);
	libdeflate_free_decompressor(z);
	return r;
}

#define SYM_ENTRY_NAME_MAX (SYM_BUILD_ID_MAX * 2 + 32) /* with its NUL */

struct entry {
	char name[SYM_ENTRY_NAME_MAX];
	uint64_t bytes;
	struct timespec atime;
};

static int by_atime(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->atime.tv_sec != y->atime.tv_sec)
		return x->atime.tv_sec < y->atime.tv_sec ? -1 : 1;
	if (x->atime.tv_nsec != y->atime.tv_nsec)
		return x->atime.tv_nsec < y->atime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* BUILDID.debug, or BUILDID.NSYMS.sym (a symbol table: table_name) */
static bool is_entry_name(const char *n)
{
	size_t h = strspn(n, "0123456789abcdef"), d;

	if (h < 2 || h > SYM_BUILD_ID_MAX * 2)
		return false;
	if (!strcmp(n + h, ".debug"))
		return true;
	d = n[h] == '.' ? strspn(n + h + 1, "0123456789") : 0;
	return d >= 1 && d <= 10 && !strcmp(n + h + 1 + d, ".sym");
}

/* Delete the least recently used entries beyond the bounds, never keep
 * (just made), and temporary files a dead writer left. */
static void evict(int dirfd, const char *keep)
{
	struct entry *e = calloc(SYM_DEBUGCACHE_SCAN_MAX, sizeof(*e));
	uint64_t total = 0;
	unsigned n = 0, seen = 0, files;
	struct dirent *de;
	int dfd = dup(dirfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	time_t now = time(NULL);

	if (!d && dfd >= 0)
		close(dfd);
	if (!e || !d)
		goto out;
	while ((de = readdir(d)) && seen++ < SYM_DEBUGCACHE_SCAN_MAX) {
		struct stat st;

		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			!S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (!strncmp(de->d_name, ".tmp-", 5)) {
			if (st.st_mtime < now - SYM_DEBUGCACHE_TMP_AGE)
				unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (!is_entry_name(de->d_name))
			continue;
		/* is_entry_name bounds its length */
		memcpy(e[n].name, de->d_name, strlen(de->d_name) + 1);
		e[n].bytes = (uint64_t)st.st_size;
		e[n].atime = st.st_atim;
		total += e[n].bytes;
		n++;
	}
	qsort(e, n, sizeof(*e), by_atime);
	files = n;
	for (unsigned i = 0; i < n; i++) {
		if (total <= SYM_DEBUGCACHE_MAX_BYTES && files <= SYM_DEBUGCACHE_MAX_FILES)
			break;
		if (!strcmp(e[i].name, keep))
			continue;
		if (unlinkat(dirfd, e[i].name, 0) == 0) {
			total -= e[i].bytes;
			files--;
		}
	}
out:
	if (d)
		closedir(d);
	free(e);
}

/* A new private file in dirfd to become entry name once whole: tmp gets
 * its name, .tmp-NAME-PID-SEQ (evict deletes one a dead writer left).
 * Returns its fd (read and write) or -errno. */
static int tmp_create(int dirfd, const char *name, char tmp[SYM_ENTRY_NAME_MAX + 48])
{
	static unsigned seq;
	int fd;

	snprintf(tmp, SYM_ENTRY_NAME_MAX + 48, ".tmp-%s-%d-%u", name, (int)getpid(),
		__atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

/* Make the entry name in dirfd from src_fd (an ELF with compressed
 * sections).  Returns an fd of the new entry, or -errno / -TD_E_*. */
static int entry_create(int dirfd, const char *name, int src_fd, const unsigned char *bid,
	size_t len)
{
	char tmp[SYM_ENTRY_NAME_MAX + 48];
	uint64_t inflated = 0;
	struct stat st;
	size_t nsec;
	Elf *src;
	int fd, r;

	if (fstat(src_fd, &st) < 0)
		return -errno;
	src = elf_begin(src_fd, ELF_C_READ_MMAP, NULL);
	if (!src)
		return -TD_E_CORRUPT;
	r = elf_kind(src) == ELF_K_ELF && elf_getshdrnum(src, &nsec) == 0 ?
		    count_compressed(src, (uint64_t)st.st_size, &inflated) :
		    -TD_E_CORRUPT;
	/* over the bound a module goes without this file: no entry (and
	 * no failure of the cache's) */
	if (r != -TD_E_CORRUPT && sym_inflate_check(src, (uint64_t)st.st_size) != SYM_INFLATE_OK)
		r = -E2BIG;
	if (r == 0)
		r = -ENODATA; /* nothing to inflate: the original will do */
	if (r > 0 && inflated > SYM_DEBUGCACHE_MAX_ENTRY)
		r = -TD_E_LIMIT;
	if (r < 0) {
		elf_end(src);
		return r;
	}
	fd = tmp_create(dirfd, name, tmp);
	if (fd < 0) {
		elf_end(src);
		return fd;
	}
	r = write_inflated(src, nsec, fd);
	elf_end(src);
	if (r == 0 && !entry_valid(fd, bid, len))
		r = -TD_E_CORRUPT;
	if (r == 0)
		r = td_renameat(dirfd, tmp, dirfd, name);
	if (r < 0) {
		unlinkat(dirfd, tmp, 0);
		close(fd);
		return r;
	}
	entry_touch(fd);
	evict(dirfd, name);
	return fd;
}

/* Is the file at path (a build-id path) the debuginfo of bid? */
int sym_open_by_build_id(const char *path, const unsigned char *bid, size_t len)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	const void *have;
	Elf *elf;
	bool ok;

	if (fd < 0)
		return -errno;
	elf = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? elf_begin(fd, ELF_C_READ_MMAP, NULL) :
							   NULL;
	ok = elf && elf_kind(elf) == ELF_K_ELF &&
	     dwelf_elf_gnu_build_id(elf, &have) == (ssize_t)len && !memcmp(have, bid, len);
	elf_end(elf);
	if (!ok) {
		close(fd);
		return -TD_E_CORRUPT;
	}
	return fd;
}

int sym_build_id_search(const char *debuginfo_path, const unsigned char *bid, size_t len,
	char **ret_name)
{
	char hex[SYM_BUILD_ID_MAX * 2 + 1], *paths, *p, *elem;
	int fd = -ENOENT;

	if (len < 2 || len > SYM_BUILD_ID_MAX)
		return -ENOENT;
	hex_of(bid, len, hex);
	paths = strdup(debuginfo_path ? debuginfo_path : "/usr/lib/debug");
	if (!paths)
		return -ENOMEM;
	for (p = paths; fd < 0 && (elem = strsep(&p, ":"));) {
		char path[PATH_MAX];

		if (elem[0] == '+' || elem[0] == '-')
			elem++;
		if (elem[0] != '/')
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", elem, hex,
			    hex + 2) >= sizeof(path))
			continue;
		/* absent, unreadable or another build's: the next directory */
		fd = sym_open_by_build_id(path, bid, len);
		if (fd >= 0)
			*ret_name = strdup(path); /* NULL is only a missing name */
	}
	free(paths);
	return fd < 0 ? -ENOENT : fd;
}

/* The cache directory dir, open, for build-id bid: its hex into hex and
 * its entry's name into name.  Returns the directory's fd, -ENOENT for a
 * build-id of no use, or the directory's error (counted in st). */
static int entry_dir(const char *dir, const unsigned char *bid, size_t len,
	char hex[SYM_BUILD_ID_MAX * 2 + 1], char name[SYM_BUILD_ID_MAX * 2 + 9],
	struct sym_debug_stats *st)
{
	int dirfd;

	if (len < 2 || len > SYM_BUILD_ID_MAX)
		return -ENOENT;
	hex_of(bid, len, hex);
	snprintf(name, SYM_BUILD_ID_MAX * 2 + 9, "%s.debug", hex);
	dirfd = dir_open(dir, true);
	if (dirfd < 0) {
		st->failed++;
		st->err = dirfd;
	}
	return dirfd;
}

int sym_debugcache_find(const char *dir, const char *debuginfo_path, const unsigned char *bid,
	size_t len, struct sym_debug_stats *st, char **ret_name)
{
	char hex[SYM_BUILD_ID_MAX * 2 + 1], name[sizeof(hex) + 8];
	char *found = NULL;
	int dirfd = entry_dir(dir, bid, len, hex, name, st), fd = -ENOENT, r;

	if (dirfd < 0)
		return dirfd;
	fd = entry_open(dirfd, name, bid, len);
	if (fd >= 0) {
		st->reused++;
		goto out_name;
	}
	fd = sym_build_id_search(debuginfo_path, bid, len, &found);
	if (fd < 0)
		goto out;
	r = entry_create(dirfd, name, fd, bid, len);
	if (r == -ENODATA || r == -E2BIG) {
		/* not compressed: nothing to gain; over the bound: the
		 * caller refuses it (debuginfo.c) */
		*ret_name = found;
		found = NULL;
		goto out;
	}
	if (r < 0) {
		/* libdw inflates the original, as without a cache */
		st->failed++;
		st->err = r;
		*ret_name = found;
		found = NULL;
		goto out;
	}
	close(fd);
	fd = r;
	st->created++;
out_name:
	if (asprintf(ret_name, "%s/%s", dir, name) < 0)
		*ret_name = NULL;
out:
	free(found);
	close(dirfd);
	return fd;
}

void sym_debugcache_store(const char *dir, const unsigned char *bid, size_t len, int src_fd,
	struct sym_debug_stats *st)
{
	char hex[SYM_BUILD_ID_MAX * 2 + 1], name[sizeof(hex) + 8];
	int dirfd = entry_dir(dir, bid, len, hex, name, st), fd;

	if (dirfd < 0)
		return;
	fd = entry_create(dirfd, name, src_fd, bid, len);
	if (fd >= 0) {
		st->created++;
		close(fd);
	} else if (fd != -ENODATA && fd != -E2BIG) {
		st->failed++;
		st->err = fd;
	}
	close(dirfd);
}

/* ---- symbol tables (symtab.c), as BUILDID.NSYMS.sym */

static int table_dir(const char *dir, const unsigned char *bid, size_t len, uint64_t nsyms,
	char name[SYM_ENTRY_NAME_MAX], struct sym_debug_stats *st)
{
	char hex[SYM_BUILD_ID_MAX * 2 + 1], debug[sizeof(hex) + 8];
	int dirfd;

	if (nsyms > 9999999999ull)
		return -ENOENT;
	dirfd = entry_dir(dir, bid, len, hex, debug, st);
	if (dirfd >= 0)
		snprintf(name, SYM_ENTRY_NAME_MAX, "%s.%llu.sym", hex, (unsigned long long)nsyms);
	return dirfd;
}

int sym_debugcache_table(const char *dir, const unsigned char *bid, size_t len, uint64_t nsyms,
	uint64_t first_global, struct sym_debug_stats *st, struct sym_table **ret_table)
{
	char name[SYM_ENTRY_NAME_MAX];
	int dirfd = table_dir(dir, bid, len, nsyms, name, st), fd, r;
	struct stat sb;

	if (dirfd < 0)
		return dirfd;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dirfd);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -TD_E_CORRUPT;
	/* ours as a .debug entry must be; a file of another build is
	 * refused by its header, and then made anew */
	r = file_ours(fd, &sb) ? sym_table_map(fd, nsyms, first_global, ret_table) :
				 -TD_E_CORRUPT;
	if (r == 0) {
		entry_touch(fd);
		st->tables_reused++;
	}
	close(fd);
	return r;
}

void sym_debugcache_table_store(const char *dir, const unsigned char *bid, size_t len,
	uint64_t nsyms, uint64_t first_global, const struct sym_table *t,
	struct sym_debug_stats *st)
{
	char name[SYM_ENTRY_NAME_MAX], tmp[SYM_ENTRY_NAME_MAX + 48];
	int dirfd = table_dir(dir, bid, len, nsyms, name, st), fd, r;

	if (dirfd < 0)
		return;
	fd = tmp_create(dirfd, name, tmp);
	r = fd < 0 ? fd : sym_table_write(t, nsyms, first_global, fd);
	if (r == 0)
		r = td_renameat(dirfd, tmp, dirfd, name);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		if (fd >= 0)
			unlinkat(dirfd, tmp, 0);
		st->failed++;
		st->err = r;
	} else {
		st->tables_made++;
		evict(dirfd, name);
	}
	close(dirfd);
}
