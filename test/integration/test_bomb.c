/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A decompression bomb in a target's files: fx_chain with a .debug_info
 * that is SHF_COMPRESSED and inflates to 512 MiB of zeros (tracerd-gen
 * bomb: 550 KB on disk), as the main binary and as separate debuginfo in
 * --debuginfo-dir, with and without the debuginfo cache.  Each recording
 * and dump finishes, names the fixture's functions from its symbol table,
 * says that a module went without its DWARF, and stays far below what
 * inflating it would take: libdw holding the section alone is 512 MiB
 * (tracerd peaked at 549 MB before the bound), so a peak under 200 MB
 * (getrusage of the waited children) is a check of meaning, not of speed.
 * And minidebuginfo: a stripped fx_chain whose .gnu_debugdata is 64 MiB
 * of zeros in xz, which libdwfl would inflate whole looking for symbols. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
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

/* tracerd dump --cache-dir none --pid pid, its stderr into err (len
 * bytes); returns its peak RSS in KB (wait4), or -1. */
static long dump_peak_kb(pid_t pid, char *err, size_t len)
{
	char p[32], path[128], a0[] = "tracerd", a1[] = "dump", a2[] = "--cache-dir",
				       a3[] = "none", a4[] = "--pid";
	char *const argv[] = { a0, a1, a2, a3, a4, p, NULL };
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	pid_t t;
	int st, fd;
	ssize_t n;

	snprintf(p, sizeof(p), "%d", (int)pid);
	snprintf(path, sizeof(path), "%s/dump.err", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (posix_spawn(&t, TD_BUILD_DIR "/tracerd", &fa, NULL, argv, environ) != 0)
		return -1;
	posix_spawn_file_actions_destroy(&fa);
	if (wait4(t, &st, 0, &ru) != t || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, err, len - 1) : -1;
	err[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return ru.ru_maxrss;
}

Test(bomb, minidebuginfo_xz_bomb, .timeout = 120)
{
	char plain[128], bomb[128], err[4096];
	long plain_kb, bomb_kb;
	pid_t pid;

	need_command("xz", "xz-utils");
	need_command("objcopy", "binutils");
	snprintf(plain, sizeof(plain), "%s/fx_plain", dir);
	snprintf(bomb, sizeof(bomb), "%s/fx_mini", dir);
	sh("strip --strip-all -o %s " FX("fx_chain"), plain);
	sh("head -c 64M /dev/zero | xz -0 -T1 > %s/zeros.xz", dir);
	sh("objcopy --add-section .gnu_debugdata=%s/zeros.xz %s %s", dir, plain, bomb);

	pid = fx_start(plain, NULL);
	cr_assert_gt(pid, 0);
	plain_kb = dump_peak_kb(pid, err, sizeof(err));
	fx_stop(pid);
	cr_assert_gt(plain_kb, 0, "dump of the stripped fixture: %s", err);
	cr_expect(!strstr(err, NOTICE), "nothing to say without a bomb: %s", err);

	pid = fx_start(bomb, NULL);
	cr_assert_gt(pid, 0);
	bomb_kb = dump_peak_kb(pid, err, sizeof(err));
	fx_stop(pid);
	cr_assert_gt(bomb_kb, 0, "dump of the bomb: %s", err);
	cr_expect(strstr(err, "1 " NOTICE), "dump says it: %s", err);
	/* inflated, the section alone would be 64 MiB more */
	cr_expect_lt(bomb_kb, plain_kb + 32 * 1024, "peak RSS %ld KB against %ld KB: inflated",
		bomb_kb, plain_kb);
}
