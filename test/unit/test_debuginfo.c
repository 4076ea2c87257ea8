/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of how symbolize/ finds debuginfo: separate debuginfo found
 * by .gnu_debuglink without loading libdebuginfod (debuginfo.c), and the
 * cache of decompressed debuginfo (debugcache.c). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "symbolize-tests.h"

/* ---- separate debuginfo found by .gnu_debuglink, no debuginfod loaded */

/* Does this process map a file whose path holds what? */
static bool maps_mention(const char *what)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	bool found = false;

	cr_assert_not_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

Test(debuglink, found_beside_the_binary_without_loading_libdebuginfod, .timeout = 60)
{
	static struct sym_unwound u;
	struct sym_options opt = { 0 };
	struct sym_frame f[8];
	struct td_sample *smp;
	struct sym_session *s;
	struct sym_cache *c;
	pid_t pid;
	int n;

	unsetenv("DEBUGINFOD_URLS");
	cr_assert_not(maps_mention("libdebuginfod"), "loaded before the test");
	/* "ready" comes from fx_leaf: it is on the stack from then on (its
	 * counter cannot be read: the binary has no symbols) */
	pid = fx_start(FX("fx_chain_linked"), NULL);
	cr_assert_gt(pid, 0);
	smp = calloc(1, td_sample_size(WINDOW));
	capture_one(pid, smp);
	cr_assert_eq(sym_cache_new(&c), 0);
	cr_assert_eq(sym_session_new(pid, &opt, c, &s), 0);
	cr_assert_eq(sym_session_unwind(s, smp, &u), 0);
	n = 0;
	for (unsigned i = 0; i < u.n && !n; i++) {
		int k = sym_session_symbolize(s, u.pc[i], u.activation[i], true, f, 8);

		for (int j = 0; j < k && !n; j++)
			if (f[j].function && !strcmp(f[j].function, "fx_leaf")) {
				n = 1;
				cr_expect_not_null(f[j].file, "the stripped binary's DWARF was not found");
				if (f[j].file)
					cr_expect(strstr(f[j].file, "fx_chain.c"), "%s", f[j].file);
				cr_expect_gt(f[j].line, 0);
			}
	}
	cr_expect_eq(n, 1, "no fx_leaf among %u frames", u.n);
	sym_session_free(s);
	fx_stop(pid);

	/* a binary whose debuginfo is nowhere to be found: libdwfl's standard
	 * search would load libdebuginfod for it */
	pid = fx_start(FX("fx_chain_stripped"), NULL);
	cr_assert_gt(pid, 0);
	capture_one(pid, smp);
	cr_assert_eq(sym_session_new(pid, &opt, c, &s), 0);
	cr_assert_eq(sym_session_unwind(s, smp, &u), 0);
	cr_assert_gt(u.n, 0);
	for (unsigned i = 0; i < u.n; i++)
		sym_session_symbolize(s, u.pc[i], u.activation[i], true, f, 8);
	cr_expect_not(maps_mention("libdebuginfod"), "libdebuginfod was loaded");
	sym_session_free(s);
	sym_cache_free(c);
	free(smp);
	fx_stop(pid);
}

/* ---- the debuginfo cache (symbolize/debugcache.c), on this process's own
 * libc: with libc6-dbg its separate debuginfo has compressed sections. */

#define LIBC_FRAMES 8

static char cdir[64];

static void cache_setup(void)
{
	snprintf(cdir, sizeof(cdir), "/tmp/tracerd-symcache-XXXXXX");
	cr_assert_not_null(mkdtemp(cdir));
	elf_version(EV_CURRENT);
}

static void cache_teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s %s-elsewhere.debug", cdir, cdir);
	free(shell_output(cmd, NULL));
}

TestSuite(symcache, .init = cache_setup, .fini = cache_teardown, .timeout = 60);

/* libc's qsort as a session of this process with cache dir (NULL: none)
 * symbolizes it: function, file:line per frame, innermost first. */
struct libc_sym {
	struct {
		char function[256], file[256];
		int line;
	} f[LIBC_FRAMES];
	int n;
	char build_id[130];
	struct sym_debug_stats st;
};

static void symbolize_libc(const char *dir, struct libc_sym *ret)
{
	struct sym_options opt = { .cache_dir = dir };
	struct sym_frame f[LIBC_FRAMES];
	struct sym_session *s;
	struct sym_cache *c;

	/* libc's own qsort, not a sanitizer's interceptor of that name */
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *pc = libc ? dlsym(libc, "qsort") : NULL;

	cr_assert_not_null(pc, "no qsort in libc.so.6: %s", dlerror());
	dlclose(libc);
	/* a cache of its own: a pc found in another session's would not
	 * look at DWARF at all */
	cr_assert_eq(sym_cache_new(&c), 0);
	cr_assert_eq(sym_session_new(getpid(), &opt, c, &s), 0);
	ret->n = sym_session_symbolize(s, (uint64_t)(uintptr_t)pc, true, true, f, LIBC_FRAMES);
	cr_assert_gt(ret->n, 0);
	for (int i = 0; i < ret->n; i++) {
		snprintf(ret->f[i].function, sizeof(ret->f[i].function), "%s",
			f[i].function ? f[i].function : "??");
		snprintf(ret->f[i].file, sizeof(ret->f[i].file), "%s", f[i].file ? f[i].file : "");
		ret->f[i].line = f[i].line;
	}
	snprintf(ret->build_id, sizeof(ret->build_id), "%s", f[0].build_id ? f[0].build_id : "");
	sym_session_debug_stats(s, &ret->st);
	sym_session_free(s);
	sym_cache_free(c);
}

static void expect_same(const struct libc_sym *a, const struct libc_sym *b)
{
	cr_assert_eq(a->n, b->n);
	for (int i = 0; i < a->n; i++) {
		cr_expect_str_eq(a->f[i].function, b->f[i].function);
		cr_expect_str_eq(a->f[i].file, b->f[i].file);
		cr_expect_eq(a->f[i].line, b->f[i].line);
	}
}

/* How many sections of the ELF file path are SHF_COMPRESSED; -1 if it is
 * no ELF file. */
static int compressed_sections(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *scn = NULL;

	if (!e || elf_kind(e) != ELF_K_ELF)
		n = -1;
	while (n >= 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			n++;
	}
	elf_end(e);
	if (fd >= 0)
		close(fd);
	return n;
}

/* The reference (no cache), and the entry's path; skips without
 * libc6-dbg's compressed debuginfo. */
static void reference_of(struct libc_sym *ref, char *entry, size_t len, char orig[512])
{
	const char *bid;

	symbolize_libc(NULL, ref);
	bid = ref->build_id;
	cr_assert(bid[0], "libc has no build-id");
	snprintf(orig, 512, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
	/* a skipped test's .fini does not run: the directory goes first */
	if (access(orig, R_OK) != 0) {
		cache_teardown();
		cr_skip_test("no separate debuginfo for libc (%s): apt-get install libc6-dbg", orig);
	}
	if (compressed_sections(orig) <= 0) {
		cache_teardown();
		cr_skip_test("libc's debuginfo %s has no compressed section: nothing to cache",
			orig);
	}
	cr_assert(ref->f[0].file[0] && ref->f[0].line > 0, "libc's DWARF was not used");
	snprintf(entry, len, "%s/%s.debug", cdir, bid);
}

static void reference(struct libc_sym *ref, char *entry, size_t len)
{
	char orig[512];

	reference_of(ref, entry, len, orig);
}

/* The names in cdir but . and .., space-separated; their count. */
static unsigned dir_names(char *buf, size_t len)
{
	DIR *d = opendir(cdir);
	struct dirent *de;
	unsigned n = 0;
	size_t off = 0;

	cr_assert_not_null(d);
	buf[0] = '\0';
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", n ? " " : "", de->d_name);
		n++;
	}
	closedir(d);
	return n;
}

Test(symcache, made_once_then_reused)
{
	struct libc_sym ref, first, second;
	char entry[600], names[1024];
	struct stat st1, st2;

	reference(&ref, entry, sizeof(entry));
	symbolize_libc(cdir, &first);
	expect_same(&ref, &first);
	cr_expect_eq(first.st.created, 1);
	cr_expect_eq(first.st.failed, 0, "%s", td_strerror(first.st.err));
	cr_assert_eq(dir_names(names, sizeof(names)), 1, "one entry, nothing else: %s", names);
	cr_expect_str_eq(names, strrchr(entry, '/') + 1);
	cr_assert_eq(stat(entry, &st1), 0);
	cr_expect(S_ISREG(st1.st_mode));
	cr_expect_eq(st1.st_mode & 077, 0, "entry mode %o", st1.st_mode & 0777);
	cr_expect_eq(compressed_sections(entry), 0, "the entry's sections are stored inflated");

	symbolize_libc(cdir, &second);
	expect_same(&ref, &second);
	cr_expect_eq(second.st.reused, 1);
	cr_expect_eq(second.st.created, 0);
	cr_assert_eq(stat(entry, &st2), 0);
	cr_expect_eq(st2.st_ino, st1.st_ino, "the same file, not a new one");
	cr_expect_eq(st2.st_mtim.tv_sec, st1.st_mtim.tv_sec);
	cr_expect_eq(st2.st_mtim.tv_nsec, st1.st_mtim.tv_nsec);
	cr_expect_eq(dir_names(names, sizeof(names)), 1, "%s", names);
}

/* Section i of the entry against the original's: the same header but for
 * compression, and the same bytes once inflated (by zlib here: the cache
 * inflates with libdeflate), except location lists, left out. */
static void expect_section_inflated(Elf *orig, Elf *entry, size_t i, size_t shstrndx)
{
	Elf_Scn *a = elf_getscn(orig, i), *b = elf_getscn(entry, i);
	GElf_Shdr sa, sb;
	Elf_Data *da, *db;
	const char *name;

	cr_assert(a && b && gelf_getshdr(a, &sa) && gelf_getshdr(b, &sb));
	name = elf_strptr(orig, shstrndx, sa.sh_name);
	cr_assert_not_null(name);
	cr_expect_eq(sa.sh_name, sb.sh_name, "section %zu", i);
	cr_expect_eq(sa.sh_addr, sb.sh_addr, "%s", name);
	cr_expect_eq(sa.sh_link, sb.sh_link, "%s", name);
	cr_expect_eq(sa.sh_info, sb.sh_info, "%s", name);
	cr_expect_eq(sa.sh_entsize, sb.sh_entsize, "%s", name);
	cr_expect_eq(sb.sh_flags, sa.sh_flags & ~(GElf_Xword)SHF_COMPRESSED, "%s", name);
	if (!strcmp(name, ".debug_loclists") || !strcmp(name, ".debug_loc")) {
		cr_expect_eq(sb.sh_type, SHT_NOBITS, "%s left out", name);
		cr_expect_eq(sb.sh_size, 0, "%s left out", name);
		return;
	}
	cr_expect_eq(sa.sh_type, sb.sh_type, "%s", name);
	if (sa.sh_type == SHT_NOBITS) {
		cr_expect_eq(sa.sh_size, sb.sh_size, "%s", name);
		return;
	}
	da = elf_rawdata(a, NULL);
	db = elf_rawdata(b, NULL);
	cr_assert(da && db, "%s", name);
	if (sa.sh_flags & SHF_COMPRESSED) {
		GElf_Chdr ch;
		unsigned char *want;
		uLongf n;

		cr_assert(gelf_getchdr(a, &ch), "%s", name);
		cr_expect_eq(sb.sh_addralign, ch.ch_addralign, "%s", name);
		cr_assert_eq(sb.sh_size, ch.ch_size, "%s", name);
		n = (uLongf)ch.ch_size;
		want = malloc(ch.ch_size + 1);
		cr_assert_not_null(want);
		cr_assert_eq(uncompress(want, &n, (const unsigned char *)da->d_buf + sizeof(Elf64_Chdr),
				     da->d_size - sizeof(Elf64_Chdr)),
			Z_OK, "%s", name);
		cr_assert_eq(n, ch.ch_size, "%s", name);
		cr_expect(!memcmp(want, db->d_buf, ch.ch_size), "%s inflated differs", name);
		free(want);
		return;
	}
	cr_expect_eq(sa.sh_addralign, sb.sh_addralign, "%s", name);
	cr_assert_eq(da->d_size, db->d_size, "%s", name);
	cr_expect(!memcmp(da->d_buf, db->d_buf, da->d_size), "%s differs", name);
}

/* The entry is the original, section by section, inflated. */
Test(symcache, entry_holds_the_original_inflated)
{
	struct libc_sym ref, first;
	char entry[600], orig[512];
	int fa, fb;
	Elf *a, *b;
	size_t na, nb, shstrndx;

	reference_of(&ref, entry, sizeof(entry), orig);
	symbolize_libc(cdir, &first);
	cr_assert_eq(first.st.created, 1, "%s", td_strerror(first.st.err));
	fa = open(orig, O_RDONLY | O_CLOEXEC);
	fb = open(entry, O_RDONLY | O_CLOEXEC);
	cr_assert(fa >= 0 && fb >= 0);
	a = elf_begin(fa, ELF_C_READ_MMAP, NULL);
	b = elf_begin(fb, ELF_C_READ_MMAP, NULL);
	cr_assert(a && b && gelf_getclass(a) == ELFCLASS64);
	cr_assert_eq(elf_getshdrnum(a, &na), 0);
	cr_assert_eq(elf_getshdrnum(b, &nb), 0);
	cr_assert_eq(na, nb, "%zu sections, %zu in the entry", na, nb);
	cr_assert_eq(elf_getshdrstrndx(a, &shstrndx), 0);
	for (size_t i = 1; i < na; i++)
		expect_section_inflated(a, b, i, shstrndx);
	elf_end(a);
	elf_end(b);
	close(fa);
	close(fb);
}

/* An entry that must not be trusted is replaced, and the answers stay. */
static void expect_replaced(const char *entry, const struct libc_sym *ref, ino_t bad_ino)
{
	struct libc_sym after;
	struct stat st;
	char names[1024];

	symbolize_libc(cdir, &after);
	expect_same(ref, &after);
	cr_expect_eq(after.st.reused, 0);
	cr_expect_eq(after.st.created, 1, "replaced");
	cr_assert_eq(lstat(entry, &st), 0);
	cr_expect(S_ISREG(st.st_mode));
	cr_expect_neq(st.st_ino, bad_ino);
	cr_expect_eq(compressed_sections(entry), 0);
	cr_expect_eq(dir_names(names, sizeof(names)), 1, "%s", names);
}

Test(symcache, truncated_entry_is_replaced)
{
	struct libc_sym ref, first;
	char entry[600];
	struct stat st;

	reference(&ref, entry, sizeof(entry));
	symbolize_libc(cdir, &first);
	cr_assert_eq(stat(entry, &st), 0);
	cr_assert_eq(truncate(entry, st.st_size / 2), 0);
	expect_replaced(entry, &ref, st.st_ino);
}

Test(symcache, wrong_build_id_is_replaced)
{
	struct libc_sym ref;
	char entry[600], cmd[1400];
	struct stat st;

	reference(&ref, entry, sizeof(entry));
	/* another ELF file, uncompressed, under libc's name */
	snprintf(cmd, sizeof(cmd), "cp %s %s", FX("fx_chain"), entry);
	free(shell_output(cmd, NULL));
	cr_assert_eq(stat(entry, &st), 0);
	expect_replaced(entry, &ref, st.st_ino);
}

Test(symcache, link_is_not_followed)
{
	struct libc_sym ref, first;
	char entry[600], elsewhere[700];
	struct stat st;

	reference(&ref, entry, sizeof(entry));
	symbolize_libc(cdir, &first);
	/* a valid entry, but reached through a symbolic link */
	snprintf(elsewhere, sizeof(elsewhere), "%s-elsewhere.debug", cdir);
	cr_assert_eq(rename(entry, elsewhere), 0);
	cr_assert_eq(symlink(elsewhere, entry), 0);
	cr_assert_eq(lstat(entry, &st), 0);
	expect_replaced(entry, &ref, st.st_ino);
	cr_expect_eq(lstat(elsewhere, &st), 0, "what the link pointed to is left alone");
	unlink(elsewhere);
}

Test(symcache, unsafe_directory_is_not_used)
{
	struct libc_sym ref, after;
	char entry[600], names[1024];

	reference(&ref, entry, sizeof(entry));
	cr_assert_eq(chmod(cdir, 0777), 0);
	cr_expect_eq(sym_debug_cache_prepare(cdir), -TD_E_UNSAFE);
	symbolize_libc(cdir, &after);
	expect_same(&ref, &after);
	cr_expect_eq(after.st.failed, 1);
	cr_expect_eq(after.st.err, -TD_E_UNSAFE, "%s", td_strerror(after.st.err));
	cr_expect_eq(dir_names(names, sizeof(names)), 0, "nothing written: %s", names);
	cr_assert_eq(chmod(cdir, 0700), 0);
}

Test(symcache, prepare_creates_private_directories)
{
	char sub[128];
	struct stat st;

	snprintf(sub, sizeof(sub), "%s/a/b", cdir);
	cr_assert_eq(sym_debug_cache_prepare(sub), 0);
	cr_assert_eq(stat(sub, &st), 0);
	cr_expect(S_ISDIR(st.st_mode));
	cr_expect_eq(st.st_mode & 077, 0, "mode %o", st.st_mode & 0777);
	cr_expect_eq(sym_debug_cache_prepare("relative/dir"), -EINVAL);
	snprintf(sub, sizeof(sub), "%s/link", cdir);
	cr_assert_eq(symlink(cdir, sub), 0);
	cr_expect_eq(sym_debug_cache_prepare(sub), -TD_E_SYMLINK);
}

/* Beyond 256 entries, the least recently used go; a temporary file a dead
 * writer left goes once it is an hour old. */
Test(symcache, least_recently_used_are_evicted)
{
	struct libc_sym ref, first;
	char entry[600], path[700];
	struct timespec t[2];
	struct stat st;
	int fd;

	reference(&ref, entry, sizeof(entry));
	for (int i = 0; i < 256; i++) {
		snprintf(path, sizeof(path), "%s/%040x.debug", cdir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		cr_assert_geq(fd, 0);
		/* used i minutes after the oldest: 0 is the least recent */
		t[0] = t[1] = (struct timespec){ .tv_sec = time(NULL) - 86400 + 60 * i };
		cr_assert_eq(futimens(fd, t), 0);
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/.tmp-dead-1-0", cdir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	t[0] = t[1] = (struct timespec){ .tv_sec = time(NULL) - 7200 };
	cr_assert_eq(futimens(fd, t), 0);
	close(fd);

	symbolize_libc(cdir, &first);
	expect_same(&ref, &first);
	cr_expect_eq(first.st.created, 1);
	cr_expect_eq(stat(entry, &st), 0, "the new entry stays");
	snprintf(path, sizeof(path), "%s/%040x.debug", cdir, 0);
	cr_expect_neq(stat(path, &st), 0, "the least recently used is gone");
	snprintf(path, sizeof(path), "%s/%040x.debug", cdir, 1);
	cr_expect_eq(stat(path, &st), 0, "the next one stays");
	snprintf(path, sizeof(path), "%s/%040x.debug", cdir, 255);
	cr_expect_eq(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/.tmp-dead-1-0", cdir);
	cr_expect_neq(stat(path, &st), 0, "the left-over temporary file is gone");
}

/* A write or a rename that fails (the disk is full) leaves no file
 * behind, and the answers are those of the original. */
Test(symcache, failed_write_or_rename_leaves_nothing)
{
	static const unsigned ops[] = { TD_FAULT_WRITE, TD_FAULT_RENAME };
	struct libc_sym ref, after;
	char entry[600], names[1024];

	reference(&ref, entry, sizeof(entry));
	for (size_t i = 0; i < TD_ARRAY_SIZE(ops); i++) {
		td_fault_arm(ops[i], 1);
		symbolize_libc(cdir, &after);
		cr_expect(td_fault_fired());
		td_fault_arm(0, 0);
		expect_same(&ref, &after);
		cr_expect_eq(after.st.created, 0);
		cr_expect_eq(after.st.failed, 1);
		cr_expect_lt(after.st.err, 0);
		cr_expect_eq(dir_names(names, sizeof(names)), 0, "nothing left: %s", names);
	}
	symbolize_libc(cdir, &after);
	cr_expect_eq(after.st.created, 1, "made by the next run");
}
