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

Test(cli, parse_size_and_pid)
{
	uint64_t v;
	pid_t p;

	cr_expect(td_parse_size("--x", "64K", 1, 1u << 30, &v));
	cr_expect_eq(v, 65536);
	cr_expect(td_parse_size("--x", "2MiB", 1, 1u << 30, &v));
	cr_expect_eq(v, 2u << 20);
	cr_expect(td_parse_size("--x", "512", 1, 1u << 30, &v));
	cr_expect_eq(v, 512);
	cr_expect_not(td_parse_size("--x", "12x", 1, 1u << 30, &v));
	cr_expect_not(td_parse_size("--x", "-1", 1, 1u << 30, &v));
	cr_expect_not(td_parse_size("--x", "", 1, 1u << 30, &v));
	cr_expect_not(td_parse_size("--x", "4G", 1, 1u << 30, &v));
	cr_expect(td_parse_pid("--pid", "4242", &p));
	cr_expect_eq(p, 4242);
	cr_expect_not(td_parse_pid("--pid", "0", &p));
	cr_expect_not(td_parse_pid("--pid", "42a", &p));
	cr_expect_not(td_parse_pid("--pid", "99999999999", &p));
}
