/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The names of code a JIT made (symbolize/jitmap.c), read from this test
 * process's own /tmp/perf-PID.map for an anonymous page of its own: read
 * again as it grows, a line being written read whole once it is, a later
 * line winning over an earlier one, and files that are not the process's
 * user's, or reached through a link, refused and said once. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/td.h"
#include "../../symbolize/symbolize.h"
#include "../helpers.h"

static char map_path[64], other_path[64];

static void paths_remove(void)
{
	unlink(map_path);
	unlink(other_path);
}

static void setup(void)
{
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(other_path, sizeof(other_path), "/tmp/perf-%d.other", (int)getpid());
	paths_remove();
}

TestSuite(jitmap, .init = setup, .fini = paths_remove, .timeout = 60);

static void append(const char *text)
{
	FILE *f = fopen(map_path, "a");

	cr_assert(f && fputs(text, f) >= 0 && fclose(f) == 0, "%s", map_path);
}

struct named {
	struct sym_session *s;
	uint64_t pc;
	const char *want;
};

/* Does the session name pc want (and in the perf map's module)? */
static bool named(void *arg)
{
	struct named *n = arg;
	struct sym_frame f;
	char module[32];

	snprintf(module, sizeof(module), "[perf-%d.map]", (int)getpid());
	return sym_session_symbolize(n->s, n->pc, true, true, &f, 1) == 1 && f.function &&
	       !strcmp(f.function, n->want) && f.module && !strcmp(f.module, module);
}

static uint8_t *anon_page(void)
{
	uint8_t *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert(p != MAP_FAILED);
	return p;
}

Test(jitmap, read_as_it_grows_later_lines_win)
{
	struct sym_options opt = { 0 };
	struct sym_cache *c;
	uint8_t *page = anon_page();
	uint64_t at = (uint64_t)(uintptr_t)page;
	char text[256];
	struct named n;
	uint64_t gen;

	/* one whole line, then one still being written */
	snprintf(text, sizeof(text), "%llx 20 first\n%llx 20 sec", (unsigned long long)at,
		(unsigned long long)at);
	append(text);
	cr_assert_eq(sym_cache_new(&c), 0);
	cr_assert_eq(sym_session_new(getpid(), &opt, c, &n.s), 0);
	n.pc = at + 4;
	n.want = "first";
	cr_expect(named(&n), "the whole line is read");
	gen = sym_session_jit_generation(n.s);
	/* the line finished: the later one wins where they overlap */
	append("ond\n");
	n.want = "second";
	cr_expect(wait_for(named, &n, TEST_PATIENCE_MS), "read again when it grew");
	cr_expect_neq(sym_session_jit_generation(n.s), gen);
	/* 0x, and tabs */
	snprintf(text, sizeof(text), "0x%llx\t0x10\tthird one\n", (unsigned long long)at + 0x100);
	append(text);
	n.pc = at + 0x10f;
	n.want = "third one";
	cr_expect(wait_for(named, &n, TEST_PATIENCE_MS), "0x and tabs");
	/* past its end: not named */
	n.pc = at + 0x110;
	cr_expect(!named(&n));
	cr_expect_eq(sym_session_jit_refused(n.s, text, sizeof(text)), 0);
	sym_session_free(n.s);
	sym_cache_free(c);
	munmap(page, 4096);
}

/* A session's refusal: its error, said once. */
static int refusal(char *path, size_t len)
{
	struct sym_options opt = { 0 };
	struct sym_session *s;
	struct sym_cache *c;
	uint8_t *page = anon_page();
	struct sym_frame f;
	int err;

	cr_assert_eq(sym_cache_new(&c), 0);
	cr_assert_eq(sym_session_new(getpid(), &opt, c, &s), 0);
	cr_expect_eq(sym_session_symbolize(s, (uint64_t)(uintptr_t)page, true, true, &f, 1), 1);
	cr_expect_null(f.function, "%s", f.function);
	err = sym_session_jit_refused(s, path, len);
	cr_expect_eq(sym_session_jit_refused(s, path, len), 0, "said twice");
	sym_session_free(s);
	sym_cache_free(c);
	munmap(page, 4096);
	return err;
}

Test(jitmap, another_users_map_refused)
{
	char path[256];

	if (!is_root())
		cr_skip_test("needs root to give the map to another user");
	append("7f0000000000 10 anything\n");
	cr_assert_eq(chown(map_path, 65534, 65534), 0);
	cr_expect_eq(refusal(path, sizeof(path)), -TD_E_NOTOWNER);
	cr_expect_str_eq(path, map_path);
}

Test(jitmap, link_refused)
{
	char path[256];
	FILE *f = fopen(other_path, "w");

	cr_assert(f && fputs("7f0000000000 10 anything\n", f) >= 0 && fclose(f) == 0);
	cr_assert_eq(symlink(other_path, map_path), 0);
	cr_expect_eq(refusal(path, sizeof(path)), -TD_E_SYMLINK);
}

Test(jitmap, others_may_write_refused)
{
	char path[256];

	append("7f0000000000 10 anything\n");
	cr_assert_eq(chmod(map_path, 0666), 0);
	cr_expect_eq(refusal(path, sizeof(path)), -TD_E_UNSAFE);
}
