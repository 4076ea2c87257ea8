/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The command line's shared pieces (cli/cli.c): the option parsers'
 * answers and messages (the grammars themselves are test_parse.c's), and
 * the debuginfo cache directory it chooses. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cli/cli.h"

/* What the parsers say goes to stderr: catch it, so that a passing run
 * stays quiet and the message itself is checked. */
static int saved_stderr = -1;
static FILE *caught;

static void catch_begin(void)
{
	fflush(stderr);
	caught = tmpfile();
	cr_assert_not_null(caught);
	saved_stderr = dup(2);
	dup2(fileno(caught), 2);
}

/* What was written since catch_begin (static). */
static const char *catch_end(void)
{
	static char buf[4096];
	size_t n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	rewind(caught);
	n = fread(buf, 1, sizeof(buf) - 1, caught);
	buf[n] = '\0';
	fclose(caught);
	return buf;
}

static void size_refused(const char *s)
{
	char want[256];
	uint64_t v;
	bool ok;

	catch_begin();
	ok = td_parse_size("--x", s, 1, 1u << 30, &v);
	snprintf(want, sizeof(want),
		"tracerd: --x: '%s' is not a size from 1 to 1073741824 bytes (suffixes K, M, G, T)\n", s);
	cr_expect_not(ok, "'%s' accepted", s);
	cr_expect_str_eq(catch_end(), want);
}

static void pid_refused(const char *s)
{
	char want[256];
	pid_t p;
	bool ok;

	catch_begin();
	ok = td_parse_pid("--pid", s, &p);
	snprintf(want, sizeof(want), "tracerd: --pid: '%s' is not a process id; give a positive number\n",
		s);
	cr_expect_not(ok, "'%s' accepted", s);
	cr_expect_str_eq(catch_end(), want);
}

Test(cli, parse_size_and_pid)
{
	uint64_t v;
	pid_t p;

	catch_begin();
	cr_expect(td_parse_size("--x", "64K", 1, 1u << 30, &v));
	cr_expect_eq(v, 65536);
	cr_expect(td_parse_size("--x", "2MiB", 1, 1u << 30, &v));
	cr_expect_eq(v, 2u << 20);
	cr_expect(td_parse_size("--x", "512", 1, 1u << 30, &v));
	cr_expect_eq(v, 512);
	cr_expect(td_parse_pid("--pid", "4242", &p));
	cr_expect_eq(p, 4242);
	cr_expect_str_eq(catch_end(), "", "what is accepted is accepted silently");
	size_refused("12x");
	size_refused("-1");
	size_refused("");
	size_refused("4G");
	size_refused("17179869185G"); /* 2^64 + 1 GiB: too large, not 1 GiB */
	pid_refused("0");
	pid_refused("42a");
	pid_refused("99999999999");
}

static void duration_refused(const char *s, const char *why)
{
	char want[256];
	uint64_t v = 7;
	bool ok;

	catch_begin();
	ok = td_parse_duration("--since", s, &v);
	snprintf(want, sizeof(want), "tracerd: --since: '%s' %s\n", s, why);
	cr_expect_not(ok, "'%s' accepted", s);
	cr_expect_eq(v, 7, "'%s': written on failure", s);
	cr_expect_str_eq(catch_end(), want);
}

/* Every form the man pages promise (tracerd(8), OPTIONS), the decimals of
 * the old strtod parser included; one line for what is refused. */
Test(cli, parse_duration)
{
	static const char not_one[] = "is not a duration; give a number with a unit: us, ms, s, "
				      "m, h, d or w (e.g. 10m or 1h 30m)";
	uint64_t v;

	catch_begin();
	cr_expect(td_parse_duration("--since", "5m", &v));
	cr_expect_eq(v, 300000000000ull);
	cr_expect(td_parse_duration("--since", "1.5s", &v));
	cr_expect_eq(v, 1500000000ull);
	cr_expect(td_parse_duration("--since", "250ms", &v));
	cr_expect_eq(v, 250000000ull);
	cr_expect(td_parse_duration("--since", "1h 30m", &v));
	cr_expect_eq(v, 5400000000000ull);
	cr_expect(td_parse_duration("--since", "24h", &v));
	cr_expect_eq(v, 86400000000000ull);
	cr_expect(td_parse_duration("--since", "7d", &v));
	cr_expect_eq(v, 604800000000000ull);
	cr_expect(td_parse_duration("--since", "10", &v));
	cr_expect_eq(v, 10000000000ull, "a number alone is seconds");
	cr_expect_str_eq(catch_end(), "", "what is accepted is accepted silently");
	duration_refused("soon", not_one);
	duration_refused("", not_one);
	duration_refused("-5m", not_one);
	duration_refused("1,5s", not_one);
	duration_refused("99999999999999999999d",
		"is longer than tracerd can count (about 584 years); give a shorter duration");
}

/* The default cache directory as user uid would have it (root: seteuid
 * there and back), its environment set by the caller. */
static const char *cache_default_as(uid_t uid, char *buf, size_t len)
{
	uid_t was = geteuid();
	const char *r;

	if (was != uid)
		cr_assert_eq(seteuid(uid), 0, "needs root to act as uid %d", (int)uid);
	r = td_cache_dir_default(buf, len);
	if (was != uid)
		cr_assert_eq(seteuid(was), 0);
	return r;
}

Test(cli, cache_dir_default)
{
	uid_t user = geteuid() == 0 ? 65534 : geteuid();
	char buf[256];

	setenv("TRACERD_CACHE_DIR", "/srv/c", 1);
	cr_expect_str_eq(cache_default_as(geteuid(), buf, sizeof(buf)), "/srv/c", "the variable first");
	setenv("TRACERD_CACHE_DIR", "none", 1);
	cr_expect_null(cache_default_as(geteuid(), buf, sizeof(buf)), "none: no cache");
	unsetenv("TRACERD_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	setenv("HOME", "/home/u", 1);
	if (geteuid() == 0) /* else only the user's defaults can be seen */
		cr_expect_str_eq(cache_default_as(0, buf, sizeof(buf)), "/var/cache/tracerd");
	cr_expect_str_eq(cache_default_as(user, buf, sizeof(buf)), "/xdg/tracerd");
	setenv("XDG_CACHE_HOME", "relative", 1);
	cr_expect_str_eq(cache_default_as(user, buf, sizeof(buf)), "/home/u/.cache/tracerd",
		"a relative XDG_CACHE_HOME is ignored");
	unsetenv("XDG_CACHE_HOME");
	cr_expect_str_eq(cache_default_as(user, buf, sizeof(buf)), "/home/u/.cache/tracerd");
}

Test(cli, cache_dir_setup)
{
	char dir[] = "/tmp/tracerd-cli-cache-XXXXXX", sub[64], buf[256], *out;
	const char *got = "x";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/made", dir);
	catch_begin();
	cr_expect(td_cache_dir_setup("none", buf, sizeof(buf), &got));
	cr_expect_null(got);
	cr_expect(td_cache_dir_setup(sub, buf, sizeof(buf), &got));
	cr_expect_eq(got, sub);
	cr_expect_eq(access(sub, W_OK), 0, "created");
	cr_expect_str_eq(catch_end(), "", "a good one silently");

	catch_begin();
	cr_expect_not(td_cache_dir_setup("rel", buf, sizeof(buf), &got), "relative: usage error");
	cr_expect(strstr(catch_end(), "--cache-dir: 'rel' is not an absolute path"));
	cr_assert_eq(chmod(sub, 0777), 0);
	catch_begin();
	cr_expect_not(td_cache_dir_setup(sub, buf, sizeof(buf), &got), "given and unsafe: refused");
	cr_expect(strstr(catch_end(), "writable by its group or by others"));
	setenv("TRACERD_CACHE_DIR", sub, 1);
	catch_begin();
	cr_expect(td_cache_dir_setup(NULL, buf, sizeof(buf), &got), "the default: go on");
	cr_expect_null(got);
	out = strdup(catch_end());
	cr_expect(strstr(out, "going on without it"), "%s", out);
	free(out);
	unsetenv("TRACERD_CACHE_DIR");
	snprintf(buf, sizeof(buf), "rm -rf %s", dir);
	cr_expect_eq(system(buf), 0);
}
