/* Unit tests of common/ and the daemon's argument parsers. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/td.h"
#include "../../cli/cli.h"

Test(common, strerror_table)
{
	cr_expect_str_eq(td_strerror(-TD_E_TRACED), "process is already being traced");
	cr_expect_str_eq(td_strerror(TD_E_ZOMBIE), "process is a zombie");
	cr_expect_str_eq(td_strerror(-ENOENT), strerror(ENOENT));
	cr_expect_str_eq(td_strerror(-TD_E_MAX), "unknown error");
	for (int e = TD_E_BASE + 1; e < TD_E_MAX; e++)
		cr_expect_str_neq(td_strerror(-e), "unknown error", "code %d has a message", e);
}

Test(common, json_string_escapes)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	td_json_string(f, "a\"b\\c\nd\te\x01");
	fclose(f);
	cr_expect_str_eq(buf, "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
	free(buf);
}

Test(common, task_info_of_self)
{
	struct td_task_info info;

	cr_assert_eq(td_task_info_read(getpid(), getpid(), &info), 0);
	cr_expect_eq(info.state, 'R');
	cr_expect_eq(info.ppid, getppid());
	cr_expect_eq(td_task_info_read(0x3ffffff0, 0x3ffffff0, &info), -ESRCH);
}

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
		"tracerd: --x: '%s' is not a size from 1 to 1073741824 bytes (suffixes K, M, G)\n", s);
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
	pid_refused("0");
	pid_refused("42a");
	pid_refused("99999999999");
}
