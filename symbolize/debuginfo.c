/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Finding a module's separate debuginfo: libdwfl's find_debuginfo
 * callback (sym_find_debuginfo), with the debuginfo cache (debugcache.c)
 * in front when the session has one.  For a module with a build-id,
 * libdwfl's standard search is done here, and its last step (debuginfod)
 * left to it only when DEBUGINFOD_URLS names a server:
 * dwfl_standard_find_debuginfo loads libdebuginfod (with libcurl and
 * gnutls: 10-15 ms) the first time it finds nothing, to ask no server,
 * and its searches on disk keep what they find whatever this answers.
 *
 * Also here, the ceiling on what a target's files may cost: libelf and
 * libdw inflate a compressed section (SHF_COMPRESSED, or GNU's .zdebug_*)
 * whole into memory the first time it is read, to the size its header
 * claims, so a file of 500 KB can hold a section of 512 MiB of zeros.
 * sym_inflate_check adds up those claims before anything inflates;
 * past the bound (SYM_INFLATE_RATIO times the file, at most
 * SYM_INFLATE_MAX) a module is used without its DWARF, its symbol table
 * still naming functions, or, when its symbol or string tables are the
 * compressed ones, not at all.  Every file libdw reads goes through it:
 * the module's own ELF (session.c's find_elf, which hides the debug
 * sections of one over the bound) and its separate debuginfo, whoever
 * found it (sym_find_debuginfo refuses one over the bound), the cache's
 * entries and the files it inflates (debugcache.c) included.
 *
 * Guarantees: a file found here by .gnu_debuglink is taken only with the
 * module's build-id; what the standard search finds is stored in the cache
 * for the next session; no file libdw is given inflates past the bound.
 *
 * Left to others: the cache's files (debugcache.c); the module's ELF
 * (session.c's find_elf). */
#define _GNU_SOURCE
#include "symbolize-internal.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t sym_inflate_bound(uint64_t file_size)
{
	return file_size > SYM_INFLATE_MAX / SYM_INFLATE_RATIO ? SYM_INFLATE_MAX :
								  file_size * SYM_INFLATE_RATIO;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* GNU's .zdebug_* form: "ZLIB", the inflated size (8 bytes, big-endian),
 * the zlib stream.  The size it claims, 0 if it is not one. */
static uint64_t zdebug_size(Elf_Scn *scn)
{
	Elf_Data *raw = elf_rawdata(scn, NULL);
	const unsigned char *p;
	uint64_t n = 0;

	if (!raw || !raw->d_buf || raw->d_size < 12 || memcmp(raw->d_buf, "ZLIB", 4) != 0)
		return 0;
	p = (const unsigned char *)raw->d_buf + 4;
	for (int i = 0; i < 8; i++)
		n = n << 8 | p[i];
	return n;
}

/* An xz number: 7 bits a byte, least significant first, at most 9 bytes. */
static bool xz_varint(const unsigned char *p, size_t end, size_t *at, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 9 && *at < end; i++) {
		unsigned char b = p[(*at)++];

		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

/* What a .gnu_debugdata section (minidebuginfo: an ELF file of symbols,
 * xz-compressed) inflates to when libdwfl reads it (find_aux_sym, where a
 * binary has no .symtab): the sum of the block sizes its xz index lists.
 * libdwfl decodes one stream, so the section must be exactly one stream
 * (header, blocks, index, footer); anything else, and the other formats
 * libdwfl would take there (gzip, bzip2, lzma, zstd: none lists its size
 * up front), count as too large. */
static uint64_t debugdata_size(const unsigned char *p, size_t n)
{
	static const unsigned char magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
	uint64_t back, count, blocks = 0, total = 0;
	size_t at, end;

	if (n < 32 || memcmp(p, magic, 6) != 0 || memcmp(p + n - 2, "YZ", 2) != 0)
		return UINT64_MAX;
	back = ((uint64_t)p[n - 8] | (uint64_t)p[n - 7] << 8 | (uint64_t)p[n - 6] << 16 |
		       (uint64_t)p[n - 5] << 24) + 1;
	back *= 4; /* the index's size */
	if (back > n - 24)
		return UINT64_MAX;
	at = n - 12 - (size_t)back;
	end = n - 12 - 4; /* its CRC32 last */
	if (p[at++] != 0 || !xz_varint(p, end, &at, &count))
		return UINT64_MAX;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t unpadded, size;

		if (!xz_varint(p, end, &at, &unpadded) || !xz_varint(p, end, &at, &size) ||
			unpadded > n)
			return UINT64_MAX;
		blocks += (unpadded + 3) & ~(uint64_t)3;
		total = add_sat(total, size);
	}
	return blocks == n - 24 - back ? total : UINT64_MAX;
}

/* Only the section headers and the compression headers are read before
 * the sum is known to be within the bound: the section names need
 * .shstrtab, which elf_strptr inflates if it is compressed (its claim is
 * then in the first sum).  A section whose header does not read is left
 * out: libdw cannot inflate it either. */
enum sym_inflate sym_inflate_check(Elf *elf, uint64_t file_size)
{
	uint64_t bound = sym_inflate_bound(file_size), all = 0, tables = 0;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_COMPRESSED) ||
			sh.sh_type == SHT_NOBITS || !gelf_getchdr(scn, &ch))
			continue;
		all = add_sat(all, ch.ch_size);
		/* libdwfl inflates symbol, string and index tables, libdw
		 * section groups: all but the debug sections (PROGBITS) */
		if (sh.sh_type != SHT_PROGBITS)
			tables = add_sat(tables, ch.ch_size);
	}
	if (tables > bound)
		return SYM_INFLATE_REFUSED;
	if (all > bound)
		return SYM_INFLATE_NO_DWARF;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return SYM_INFLATE_OK; /* no names: libdw finds no .zdebug */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *raw;
		uint64_t n;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED) ||
			sh.sh_type == SHT_NOBITS || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".gnu_debugdata")) {
			/* hidden with the DWARF when over (sym_inflate_hide_dwarf) */
			raw = elf_rawdata(scn, NULL);
			all = add_sat(all,
				raw && raw->d_buf ? debugdata_size(raw->d_buf, raw->d_size) : 0);
			continue;
		}
		if (strncmp(name, ".zdebug", 7) != 0 || !(n = zdebug_size(scn)))
			continue;
		all = add_sat(all, n);
		if (sh.sh_type != SHT_PROGBITS)
			tables = add_sat(tables, n);
	}
	if (tables > bound)
		return SYM_INFLATE_REFUSED;
	return all > bound ? SYM_INFLATE_NO_DWARF : SYM_INFLATE_OK;
}

/* libdw's dwarf_begin_elf skips a SHT_NOBITS section (binutils makes some
 * so), whatever its name, and libdwfl finds no data in one named
 * .gnu_debugdata: so its debug sections, compressed or not, are
 * turned into those in elf's own copy of the headers (ELF_C_READ_MMAP_
 * PRIVATE maps them writable, copy on write), and libdw finds no DWARF
 * there.  Only after sym_inflate_check said NO_DWARF: the names are then
 * within the bound. */
int sym_inflate_hide_dwarf(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -TD_E_CORRUPT;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!(sh.sh_flags & SHF_COMPRESSED) &&
			!(name && (!strncmp(name, ".debug", 6) || !strncmp(name, ".zdebug", 7) ||
					  !strncmp(name, ".gnu.debuglto_", 14) ||
					  !strcmp(name, ".gnu_debugdata"))))
			continue;
		sh.sh_type = SHT_NOBITS;
		sh.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
		if (!gelf_update_shdr(scn, &sh))
			return -TD_E_CORRUPT;
	}
	return 0;
}

/* The bound for the file behind fd.  One that is no ELF file is refused:
 * libdwfl would take it for a whole compressed file (gzip, xz, bzip2,
 * zstd) and inflate it without a bound. */
static enum sym_inflate inflate_check_fd(int fd)
{
	struct stat st;
	Elf *elf;
	enum sym_inflate r = SYM_INFLATE_REFUSED;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return r;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		r = sym_inflate_check(elf, (uint64_t)st.st_size);
	elf_end(elf);
	return r;
}

/* Open dir[/sub]/name, else dir[/sub]/alt (if alt), the first with
 * build-id bid that is not file itself. */
static int try_debug(const char *dir, const char *sub, const char *name, const char *alt,
	const struct stat *file, const unsigned char *bid, size_t blen, char **ret_name)
{
	int fd = -ENOENT;

	for (const char *nm = name; nm && fd < 0; nm = nm == name ? alt : NULL) {
		char cand[PATH_MAX];
		struct stat st;
		int n = sub ? snprintf(cand, sizeof(cand), "%s/%s/%s", dir, sub, nm) :
			      snprintf(cand, sizeof(cand), "%s/%s", dir, nm);

		if (n <= 0 || (size_t)n >= sizeof(cand) || stat(cand, &st) < 0)
			continue;
		if (file && st.st_dev == file->st_dev && st.st_ino == file->st_ino)
			continue; /* the module's own file */
		fd = sym_open_by_build_id(cand, bid, blen);
		if (fd >= 0)
			*ret_name = strdup(cand);
	}
	return fd;
}

/* The .gnu_debuglink search of libdwfl's standard find_debuginfo, for a
 * module with a build-id: its debuglink (else FILE's name + ".debug", and
 * then FILE's name itself) in each directory of path as libdwfl reads it:
 * "" FILE's directory, a relative one under it, an absolute one followed
 * by FILE's directory, then by that less its first component, and so on.
 * A file is taken only with the module's build-id.  Done here because
 * dwfl_standard_find_debuginfo loads libdebuginfod (with libcurl and
 * gnutls: 10-15 ms) the first time it finds nothing, to ask no server. */
static int find_debuglink(const char *path, const unsigned char *bid, size_t blen,
	const char *file, const char *debuglink, char **ret_name)
{
	const char *base = file ? strrchr(file, '/') : NULL, *alt;
	char *dir, *paths, *p, *elem, *made = NULL;
	struct stat fst;
	bool have_fst;
	int fd = -ENOENT;

	if (!base || file[0] != '/')
		return -ENOENT;
	base++;
	if (!debuglink) {
		if (asprintf(&made, "%s.debug", base) < 0)
			return -ENOMEM;
		debuglink = made;
	}
	dir = strndup(file, (size_t)(base - 1 - file));
	paths = strdup(path);
	have_fst = stat(file, &fst) == 0;
	/* with a made-up debuglink, FILE's own name is tried after it (but
	 * not in FILE's own directory, where it is FILE) */
	alt = made ? base : NULL;
	for (p = paths; dir && paths && fd < 0 && (elem = strsep(&p, ":"));) {
		const struct stat *f = have_fst ? &fst : NULL;

		if (elem[0] == '+' || elem[0] == '-')
			elem++;
		if (elem[0] == '\0') {
			fd = try_debug(dir, NULL, debuglink, NULL, f, bid, blen, ret_name);
		} else if (elem[0] != '/') {
			fd = try_debug(dir, elem, debuglink, alt, f, bid, blen, ret_name);
		} else {
			/* dir less one leading component at a time */
			for (const char *sub = dir; fd < 0 && sub && *sub;) {
				sub = strchr(sub, '/');
				if (!sub || !*++sub)
					break;
				fd = try_debug(elem, sub, debuglink, alt, f, bid, blen, ret_name);
			}
		}
	}
	free(paths);
	free(dir);
	free(made);
	return fd;
}

/* fd, the separate debuginfo found for m, if it is within the bound
 * (sym_inflate_check); else -1, said once per module in over_bound.  One
 * over it is refused whole, its symbol table with its DWARF: libdwfl
 * reads the two from the same file, and once it has the file there is no
 * keeping it from the DWARF.  The module's own symbol table still names
 * its functions. */
static int debug_bounded(struct sym_module *m, int fd, char **name)
{
	if (inflate_check_fd(fd) == SYM_INFLATE_OK) {
		if (m)
			m->debug_found = true;
		return fd;
	}
	close(fd);
	/* libdwfl opens a name it is given with no fd */
	free(*name);
	*name = NULL;
	if (m && !m->over_bound) {
		m->over_bound = true;
		m->s->dstats.over_bound++;
	}
	return -1;
}

/* libdwfl's find_debuginfo, with the debuginfo cache (debugcache.c) in
 * front when opt.cache_dir is set.  A module with a build-id gets the
 * cache's entry, or its original found by build-id (inflated into a new
 * entry on the way when compressed); only what that misses goes to the
 * standard search (.gnu_debuglink, and debuginfod servers where
 * DEBUGINFOD_URLS names some), whose find is stored for the next session.
 * The order matters: libdwfl's own build-id search opens the file it finds
 * into the module itself, so an fd returned after it would be ignored. */
int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
	GElf_Addr base, const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
	char **debuginfo_file_name)
{
	struct sym_module *m = userdata ? *userdata : NULL;
	struct sym_session *s = m ? m->s : NULL;
	const unsigned char *bid, *own_bid;
	GElf_Addr vaddr;
	int len = 0, own_len = 0, fd;

	if (s && s->opt.cache_dir && !s->opt.no_dwarf && !m->debug_found)
		len = dwfl_module_build_id(mod, &bid, &vaddr);
	if (len > 0) {
		fd = sym_debugcache_find(s->opt.cache_dir, s->debuginfo_path, bid, (size_t)len,
			&s->dstats, debuginfo_file_name);
		if (fd >= 0)
			return debug_bounded(m, fd, debuginfo_file_name);
		if (fd != -ENOENT)
			len = 0; /* the cache cannot serve: said in dstats once */
	}
	if (s && !m->debug_found)
		own_len = dwfl_module_build_id(mod, &own_bid, &vaddr);
	if (own_len > 0) {
		/* libdwfl's standard search, done here: its build-id and
		 * .gnu_debuglink searches keep their own Elf of what they find
		 * in the module, which libdwfl then reads whatever this
		 * returns (the bound could not refuse it), and the second
		 * inflates a file that is no ELF as a whole compressed one */
		fd = sym_build_id_search(s->debuginfo_path, own_bid, (size_t)own_len,
			debuginfo_file_name);
		if (fd < 0)
			fd = find_debuglink(s->debuginfo_path, own_bid, (size_t)own_len,
				file_name, debuglink_file, debuginfo_file_name);
		if (fd < 0 && file_name) {
			/* the debug file may be named for the link's target */
			char *real = realpath(file_name, NULL);

			if (real && strcmp(real, file_name))
				fd = find_debuglink(s->debuginfo_path, own_bid, (size_t)own_len,
					real, debuglink_file, debuginfo_file_name);
			free(real);
		}
		/* the last step, debuginfod, only where a server is named: its
		 * searches on disk find nothing where these found nothing */
		if (fd < 0 && !s->no_debuginfod)
			fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
				debuglink_file, debuglink_crc, debuginfo_file_name);
		if (fd < 0)
			fd = -1;
	} else {
		fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
			debuglink_file, debuglink_crc, debuginfo_file_name);
	}
	if (fd >= 0)
		fd = debug_bounded(m, fd, debuginfo_file_name);
	if (fd >= 0 && len > 0)
		sym_debugcache_store(s->opt.cache_dir, bid, (size_t)len, fd, &s->dstats);
	return fd;
}
