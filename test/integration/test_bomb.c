/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A decompression bomb in a target's files: fx_chain with a .debug_info
 * that is SHF_COMPRESSED and inflates to 512 MiB of zeros (tracerd-gen
 * bomb: 550 KB on disk), as the main binary and as separate debuginfo in
 * --debuginfo-dir, with and without the debuginfo cache.  Each recording
 * and dump finishes, names the fixture's functions from its symbol table,
 * says that a module went without its DWARF, and stays far below what
 * inflating it would take: libdw holding the section alone is 512 MiB
 * (tracerd peaked at 549 MB before the bound), so a peak under 200 MB
 * (getrusage of the waited children) is a check of meaning, not of speed. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../helpers.h"

#define GEN TD_BUILD_DIR "/tools/tracerd-gen"
#define BOMB_MIB "512"
#define PEAK_MAX_KB (200 * 1024)
#define NOTICE "modules read without their DWARF"

static char dir[64];

static void bomb_setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/tracerd-bomb-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void bomb_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	free(shell_output(cmd, NULL));
}

TestSuite(bomb, .init = bomb_setup, .fini = bomb_teardown);

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[2048];
	int st = -1;
	char *out;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	out = shell_output(cmd, &st);
	cr_assert_eq(st, 0, "%s: %s", cmd, out ? out : "");
	free(out);
}

/* The largest peak RSS of the children waited for so far, in KB. */
static long children_peak_kb(void)
{
	struct rusage ru;

	cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
	return ru.ru_maxrss;
}

/* Record bin (started here) for 2 s with the options a1 a2 a3; the
 * fixture's leaf must be named in the report, the notice said. */
static void record_names_leaf(const char *bin, const char *a1, const char *a2, const char *a3,
	const char *a4)
{
	char p[32], repo[128];
	pid_t pid = fx_start(bin, NULL);
	const char *rec[] = { "tracerd", "record", "--pid", p, "-d", "2s", "-r", repo, a1, a2,
		a3, a4, NULL };
	const char *rep[] = { "tracerd", "report", repo, NULL };
	struct run_result r;

	cr_assert_gt(pid, 0);
	snprintf(p, sizeof(p), "%d", (int)pid);
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	run_tracerd(&r, rec);
	fx_stop(pid);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.err, "1 " NOTICE), "the summary says it once:\n%s", r.err);
	run_result_free(&r);
	run_tracerd(&r, rep);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "fx_leaf"), "the symbol table names the leaf:\n%s", r.out);
	run_result_free(&r);
	cr_expect_lt(children_peak_kb(), PEAK_MAX_KB, "peak RSS %ld KB: the bomb was inflated",
		children_peak_kb());
}

Test(bomb, main_binary_record_without_cache, .timeout = 120)
{
	char bin[128];

	snprintf(bin, sizeof(bin), "%s/fx_bomb", dir);
	sh(GEN " bomb " FX("fx_chain") " " BOMB_MIB " %s", bin);
	record_names_leaf(bin, "--cache-dir", "none", NULL, NULL);
}

Test(bomb, main_binary_dump, .timeout = 120)
{
	char bin[128];
	pid_t pid;
	struct run_result r;

	snprintf(bin, sizeof(bin), "%s/fx_bomb", dir);
	sh(GEN " bomb " FX("fx_chain") " " BOMB_MIB " %s", bin);
	pid = fx_start(bin, NULL);
	cr_assert_gt(pid, 0);
	dump_text(pid, &r, "--cache-dir", "none");
	fx_stop(pid);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "fx_leaf"), "the symbol table names the leaf:\n%s", r.out);
	/* without DWARF: no inline frame (fx_step is inlined into fx_leaf) */
	cr_expect(!strstr(r.out, "fx_step"), "no DWARF, no inline frame:\n%s", r.out);
	cr_expect(strstr(r.err, "1 " NOTICE), "dump says it:\n%s", r.err);
	run_result_free(&r);
	cr_expect_lt(children_peak_kb(), PEAK_MAX_KB, "peak RSS %ld KB", children_peak_kb());
}

/* fx_chain less its DWARF (its .symtab kept), its debuginfo a bomb under
 * DIR/debug/.build-id, as libdwfl's build-id search finds it. */
static void debug_bomb(char *bin, size_t len)
{
	char dbg[128], path[256], *bid;
	int st = -1;

	need_command("objcopy", "binutils");
	snprintf(bin, len, "%s/fx_stripped", dir);
	snprintf(dbg, sizeof(dbg), "%s/fx.debug", dir);
	sh("strip --strip-debug -o %s " FX("fx_chain"), bin);
	sh("objcopy --only-keep-debug " FX("fx_chain") " %s", dbg);
	bid = shell_output("readelf -n " FX("fx_chain") " | awk '/Build ID/ {printf \"%s\", $3}'",
		&st);
	cr_assert(bid && strlen(bid) > 2, "no build-id");
	snprintf(path, sizeof(path), "%s/debug/.build-id/%.2s", dir, bid);
	sh("mkdir -p %s", path);
	snprintf(path, sizeof(path), "%s/debug/.build-id/%.2s/%s.debug", dir, bid, bid + 2);
	sh(GEN " bomb %s " BOMB_MIB " %s", dbg, path);
	free(bid);
}

Test(bomb, debuginfo_dir_record_without_cache, .timeout = 120)
{
	char bin[128], ddir[128];

	debug_bomb(bin, sizeof(bin));
	snprintf(ddir, sizeof(ddir), "%s/debug", dir);
	record_names_leaf(bin, "--debuginfo-dir", ddir, "--cache-dir", "none");
}

Test(bomb, debuginfo_dir_record_with_cache, .timeout = 120)
{
	char bin[128], ddir[128], cache[128], cmd[256], *ls;
	int st = -1;

	debug_bomb(bin, sizeof(bin));
	snprintf(ddir, sizeof(ddir), "%s/debug", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	record_names_leaf(bin, "--debuginfo-dir", ddir, "--cache-dir", cache);
	/* and the cache made no inflated copy of it: only what the machine's
	 * libc and ld.so brought, each far smaller */
	snprintf(cmd, sizeof(cmd), "find %s -size +100M", cache);
	ls = shell_output(cmd, &st);
	cr_expect(ls && !ls[0], "nothing inflated into the cache: %s", ls ? ls : "");
	free(ls);
	/* a second run finds the cache as the first left it */
	record_names_leaf(bin, "--debuginfo-dir", ddir, "--cache-dir", cache);
}
