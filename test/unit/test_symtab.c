/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of symbolize/'s symbol tables (symtab.c): the name of every
 * address as dwfl_module_addrinfo() gives it, and a table written to a
 * file and read back (or refused when the file is bad). */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "symbolize-tests.h"

/* The symbol tables (symtab.c) against dwfl_module_addrinfo() itself: the
 * same name, for addresses all over real modules (this test binary, its
 * libc and the rest of what it maps; fx_cxx with libstdc++'s weak
 * symbols), near every symbol's start and end and in between. */

/* Symbols as hand-written assembly leaves them, where elfutils' rules are
 * subtle: labels without a size (global and local), aliases of every
 * binding and size at one address, a symbol nested in another, labels
 * past the end of the last sized symbol. */
__asm__(".text\n"
	".p2align 6\n"
	"td_st_begin:\n"
	".globl td_st_outer\n .type td_st_outer, @function\n"
	".weak td_st_outer_weak\n .type td_st_outer_weak, @function\n"
	"td_st_outer:\n"
	"td_st_outer_weak:\n"
	"td_st_outer_label:\n"
	".fill 16, 1, 0x90\n"
	".globl td_st_mid_label\n"
	"td_st_mid_label:\n"
	".fill 8, 1, 0x90\n"
	".type td_st_nested, @function\n"
	"td_st_nested:\n"
	".fill 8, 1, 0x90\n"
	".size td_st_nested, 8\n"
	".weak td_st_nested_weak\n .type td_st_nested_weak, @function\n"
	"td_st_nested_weak:\n"
	".fill 8, 1, 0x90\n"
	".size td_st_nested_weak, 8\n"
	".size td_st_outer_weak, 32\n"
	".fill 8, 1, 0x90\n"
	".size td_st_outer, . - td_st_outer\n"
	".fill 8, 1, 0xcc\n"
	"td_st_tail_label:\n"
	".fill 8, 1, 0xcc\n"
	".globl td_st_tail_global\n"
	"td_st_tail_global:\n"
	"td_st_tail_local:\n"
	".fill 8, 1, 0xcc\n"
	".type td_st_last, @function\n"
	"td_st_last:\n"
	".fill 8, 1, 0xc3\n"
	".size td_st_last, 8\n"
	"td_st_end:\n");
extern const char td_st_begin[], td_st_end[];

#define SYMTAB_MAX_ADDRS 3000 /* per module: elfutils' lookup is the slow one */

struct symtab_check {
	unsigned modules, compared, named, labels, mismatches;
	bool saw_libc, saw_main;
	const char *main_name; /* module path that must be seen, NULL: none */
};

static int cmp_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct addrs {
	uint64_t lo[64], hi[64]; /* executable sections, ends included */
	size_t nr;
	uint64_t *a;
	size_t n, cap;
};

static void add_addr(struct addrs *x, uint64_t a)
{
	for (size_t r = 0; r < x->nr; r++) {
		if (a < x->lo[r] || a > x->hi[r])
			continue;
		cr_assert_eq(td_array_grow(x->a, x->cap, x->n + 1, 4096), 0);
		x->a[x->n++] = a;
		return;
	}
}

/* Addresses in the module's executable sections near each symbol's
 * bounds and spread over the sections, at most SYMTAB_MAX_ADDRS of them
 * evenly picked; then every byte of the asm above if it is in there. */
static size_t pick_addrs(Dwfl_Module *mod, uint64_t **ret)
{
	struct addrs x = { .nr = 0 };
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	Elf_Scn *scn = NULL;
	int nsym = dwfl_module_getsymtab(mod);
	size_t k = 0, n;

	while (elf && (scn = elf_nextscn(elf, scn)) && x.nr < 64) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) && sh.sh_size) {
			x.lo[x.nr] = sh.sh_addr + bias;
			x.hi[x.nr++] = sh.sh_addr + sh.sh_size + bias;
		}
	}
	for (int i = 1; i < nsym; i++) {
		GElf_Sym sym;
		GElf_Addr a;

		if (!dwfl_module_getsym_info(mod, i, &sym, &a, NULL, NULL, NULL))
			continue;
		add_addr(&x, a - 1);
		add_addr(&x, a);
		add_addr(&x, a + 1);
		add_addr(&x, a + sym.st_size / 2);
		add_addr(&x, a + sym.st_size - 1);
		add_addr(&x, a + sym.st_size);
		add_addr(&x, a + sym.st_size + 1);
	}
	for (size_t r = 0; r < x.nr; r++)
		for (uint64_t j = 0; j <= 64; j++)
			add_addr(&x, x.lo[r] + (x.hi[r] - x.lo[r]) / 64 * j + j * 7);
	if (x.n > 1)
		qsort(x.a, x.n, sizeof(*x.a), cmp_addr);
	for (size_t i = 0; i < x.n; i++)
		if (i == 0 || x.a[i] != x.a[i - 1])
			x.a[k++] = x.a[i];
	/* evenly picked, in place: i * k / max never runs ahead of i */
	n = k < SYMTAB_MAX_ADDRS ? k : SYMTAB_MAX_ADDRS;
	for (size_t i = 0; i < n && k > SYMTAB_MAX_ADDRS; i++)
		x.a[i] = x.a[i * k / SYMTAB_MAX_ADDRS];
	x.n = n;
	for (const char *p = td_st_begin; p <= td_st_end; p++)
		add_addr(&x, (uint64_t)(uintptr_t)p);
	*ret = x.a;
	return x.n;
}

static int check_module(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
	void *arg)
{
	struct symtab_check *ck = arg;
	struct sym_table *t;
	Dwarf_Addr bias;
	uint64_t *addrs;
	size_t n;

	(void)ud, (void)start;
	if (!dwfl_module_getelf(mod, &bias))
		return DWARF_CB_OK;
	cr_assert_eq(sym_table_build(mod, &t), 0, "%s", name);
	n = pick_addrs(mod, &addrs);
	ck->modules++;
	ck->saw_libc |= strstr(name, "/libc.so.6") != NULL;
	ck->saw_main |= ck->main_name && !strcmp(name, ck->main_name);
	for (size_t i = 0; i < n; i++) {
		GElf_Off off;
		GElf_Sym sym;
		const char *want =
			dwfl_module_addrinfo(mod, addrs[i], &off, &sym, NULL, NULL, NULL);
		const char *got = sym_table_lookup(t, addrs[i] - bias);

		ck->compared++;
		ck->named += want != NULL;
		ck->labels += want && sym.st_size == 0;
		if (want == got || (want && got && !strcmp(want, got)))
			continue;
		if (ck->mismatches++ < 20)
			cr_expect_fail("%s +%#llx: elfutils %s, table %s", name,
				(unsigned long long)(addrs[i] - bias), want ? want : "(none)",
				got ? got : "(none)");
	}
	free(addrs);
	sym_table_free(t);
	return DWARF_CB_OK;
}

static void check_process(pid_t pid, struct symtab_check *ck)
{
	char *dpath = NULL;
	const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &dpath,
	};
	Dwfl *dwfl = dwfl_begin(&cb);

	cr_assert_not_null(dwfl);
	dwfl_report_begin(dwfl);
	cr_assert_eq(dwfl_linux_proc_report(dwfl, pid), 0);
	dwfl_report_end(dwfl, NULL, NULL);
	dwfl_getmodules(dwfl, check_module, ck, 0);
	dwfl_end(dwfl);
}

Test(symtab, same_as_elfutils_in_this_process, .timeout = 300)
{
	char exe[4096];
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct symtab_check ck = { .main_name = exe };

	cr_assert_gt(l, 0);
	exe[l] = '\0';
	check_process(getpid(), &ck);
	cr_expect(ck.saw_libc, "libc.so.6 not among the modules");
	cr_expect(ck.saw_main, "%s not among the modules", exe);
	cr_expect_gt(ck.labels, 0, "no sizeless symbol was ever elfutils' answer");
	cr_expect_gt(ck.named, ck.compared / 2);
	cr_expect_eq(ck.mismatches, 0, "%u of %u addresses in %u modules differ", ck.mismatches,
		ck.compared, ck.modules);
	cr_log_info("symtab: %u addresses in %u modules, %u named, %u by a label", ck.compared,
		ck.modules, ck.named, ck.labels);
}

Test(symtab, same_as_elfutils_in_fx_cxx, .timeout = 300)
{
	struct symtab_check ck = { 0 };
	pid_t pid = fx_start(FX("fx_cxx"), NULL);

	cr_assert_gt(pid, 0);
	check_process(pid, &ck);
	fx_stop(pid);
	cr_expect_gt(ck.modules, 3);
	cr_expect_gt(ck.named, ck.compared / 2);
	cr_expect_eq(ck.mismatches, 0, "%u of %u addresses in %u modules differ", ck.mismatches,
		ck.compared, ck.modules);
}

/* ---- a table as a file (sym_table_write / sym_table_map) */

struct table_file_check {
	char path[64];
	unsigned modules, compared;
	bool corrupted_libc;
};

/* The file's bytes at off replaced by len bytes of v. */
static void patch(const char *path, off_t off, const void *v, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, v, len, off), (ssize_t)len);
	close(fd);
}

static int map_file(const char *path, uint64_t nsyms, uint64_t fg, struct sym_table **t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	cr_assert_geq(fd, 0);
	r = sym_table_map(fd, nsyms, fg, t);
	close(fd);
	return r;
}

/* mod's table through the debuginfo cache: stored as BUILDID.NSYMS.sym,
 * private, read back; refused once writable by others. */
static void cache_round_trip(Dwfl_Module *mod, uint64_t nsyms, uint64_t fg)
{
	char dir[] = "/tmp/tracerd-symtabs-XXXXXX", path[512], hex[129], cmd[128];
	struct sym_debug_stats st = { 0 };
	struct sym_table *t, *back = NULL;
	const unsigned char *bid;
	GElf_Addr vaddr;
	struct stat sb;
	int len = dwfl_module_build_id(mod, &bid, &vaddr);

	cr_assert_gt(len, 0, "libc has no build-id");
	for (int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg, &st, &back), -ENOENT);
	cr_assert_eq(sym_table_build(mod, &t), 0);
	sym_debugcache_table_store(dir, bid, (size_t)len, nsyms, fg, t, &st);
	cr_expect_eq(st.tables_made, 1, "%s", td_strerror(st.err));
	snprintf(path, sizeof(path), "%s/%s.%llu.sym", dir, hex, (unsigned long long)nsyms);
	cr_assert_eq(stat(path, &sb), 0, "%s", path);
	cr_expect_eq(sb.st_mode & 0777, 0600);
	cr_assert_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg, &st, &back), 0);
	cr_expect_eq(st.tables_reused, 1);
	cr_expect_gt(sym_table_bytes(back), 0);
	sym_table_free(back);
	/* another symbol table of the same build: not this file */
	cr_expect_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms + 1, fg, &st, &back),
		-ENOENT);
	cr_expect_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg + 1, &st, &back),
		-TD_E_CORRUPT);
	/* writable by others: not trusted */
	cr_assert_eq(chmod(path, 0620), 0);
	cr_expect_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg, &st, &back),
		-TD_E_CORRUPT);
	cr_expect_eq(st.tables_reused, 1);
	/* and the next store replaces it */
	sym_debugcache_table_store(dir, bid, (size_t)len, nsyms, fg, t, &st);
	cr_expect_eq(sym_debugcache_table(dir, bid, (size_t)len, nsyms, fg, &st, &back), 0);
	sym_table_free(back);
	sym_table_free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	free(shell_output(cmd, NULL));
}

static int table_file_module(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
	void *arg)
{
	struct table_file_check *ck = arg;
	struct sym_table *built, *mapped;
	uint64_t nsyms, fg, *addrs;
	Dwarf_Addr bias;
	size_t n;
	int fd;

	(void)ud, (void)start;
	if (!dwfl_module_getelf(mod, &bias) || sym_table_source(mod, &nsyms, &fg) < 0)
		return DWARF_CB_OK;
	cr_assert_eq(sym_table_build(mod, &built), 0, "%s", name);
	fd = open(ck->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(sym_table_write(built, nsyms, fg, fd), 0, "%s", name);
	close(fd);
	cr_assert_eq(map_file(ck->path, nsyms, fg, &mapped), 0, "%s", name);
	n = pick_addrs(mod, &addrs);
	for (size_t i = 0; i < n; i++) {
		const char *want = sym_table_lookup(built, addrs[i] - bias);
		const char *got = sym_table_lookup(mapped, addrs[i] - bias);

		ck->compared++;
		if (!(want == got || (want && got && !strcmp(want, got))))
			cr_assert_fail("%s +%#llx: built %s, read back %s", name,
				(unsigned long long)(addrs[i] - bias), want ? want : "(none)",
				got ? got : "(none)");
	}
	free(addrs);
	sym_table_free(mapped);
	sym_table_free(built);
	ck->modules++;
	if (strstr(name, "/libc.so.6") && !ck->corrupted_libc) {
		struct stat st;
		uint64_t big = UINT64_MAX, two[2];
		uint32_t far = UINT32_MAX - 1;

		ck->corrupted_libc = true;
		cache_round_trip(mod, nsyms, fg);
		/* built from another symbol table: another count, another first
		 * global (a debuginfo package installed since) */
		cr_expect_eq(map_file(ck->path, nsyms + 1, fg, &mapped), -TD_E_CORRUPT);
		cr_expect_eq(map_file(ck->path, nsyms, fg + 1, &mapped), -TD_E_CORRUPT);
		cr_assert_eq(stat(ck->path, &st), 0);
		/* truncated by a byte */
		cr_assert_eq(truncate(ck->path, st.st_size - 1), 0);
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
		cr_assert_eq(truncate(ck->path, st.st_size), 0);
		/* starts not ascending: the first stretch after the second */
		{
			int rfd = open(ck->path, O_RDONLY | O_CLOEXEC);

			cr_assert_eq(pread(rfd, two, sizeof(two), 48), (ssize_t)sizeof(two));
			close(rfd);
		}
		two[0] = two[1];
		patch(ck->path, 48, &two[0], sizeof(two[0]));
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
		/* a count beyond the file */
		patch(ck->path, 24, &big, sizeof(big));
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
		/* a name outside the names, in a file written whole again */
		fd = open(ck->path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		cr_assert_eq(sym_table_build(mod, &built), 0);
		cr_assert_eq(sym_table_write(built, nsyms, fg, fd), 0);
		close(fd);
		cr_assert_eq(map_file(ck->path, nsyms, fg, &mapped), 0);
		{
			uint64_t nstretch;
			int rfd = open(ck->path, O_RDONLY | O_CLOEXEC);

			cr_assert_eq(pread(rfd, &nstretch, sizeof(nstretch), 24),
				(ssize_t)sizeof(nstretch));
			close(rfd);
			patch(ck->path, (off_t)(48 + nstretch * 8), &far, sizeof(far));
		}
		sym_table_free(mapped);
		sym_table_free(built);
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
		/* not a table at all */
		patch(ck->path, 0, "TDSYMT99", 8);
		cr_expect_eq(map_file(ck->path, nsyms, fg, &mapped), -TD_E_CORRUPT);
	}
	return DWARF_CB_OK;
}

Test(symtab, a_table_read_back_answers_as_built_and_a_bad_file_is_refused, .timeout = 300)
{
	struct table_file_check ck = { .path = "/tmp/tracerd-symtab-XXXXXX" };
	char *dpath = NULL;
	const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &dpath,
	};
	Dwfl *dwfl = dwfl_begin(&cb);
	int fd = mkstemp(ck.path);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_not_null(dwfl);
	dwfl_report_begin(dwfl);
	cr_assert_eq(dwfl_linux_proc_report(dwfl, getpid()), 0);
	dwfl_report_end(dwfl, NULL, NULL);
	dwfl_getmodules(dwfl, table_file_module, &ck, 0);
	dwfl_end(dwfl);
	unlink(ck.path);
	cr_expect_gt(ck.modules, 2);
	cr_expect(ck.corrupted_libc, "libc.so.6 not among the modules");
	cr_expect_gt(ck.compared, 1000);
}
