/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sizes and durations a hostile run found wrapping (issue 32): each
 * is a usage error, exit 1 and one line that names the option and the
 * value, on the command line of record and dump and in the service's
 * config, never taken modulo 2^64.  18014398509482112K is 2^64 + 128 KiB
 * (it once wrapped to a 128 KiB retention that deleted almost everything)
 * and 17179869185G is 2^64 + 1 GiB (once 1 GiB).  The parser itself is
 * test_parse.c's; test_options.c has the forms that are accepted. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/td.h"
#include "../helpers.h"

static const char *const wrapping[] = { "18014398509482112K", "17179869185G" };

static unsigned lines(const char *text)
{
	unsigned n = 0;

	for (const char *p = text; *p; p++)
		n += *p == '\n' && p[1];
	return *text ? n + 1 : 0;
}

/* tracerd CMD OPT VALUE --pid 1 ...: exit 1, one line with want. */
static void refused(const char *cmd, const char *opt, const char *value, const char *want)
{
	const char *argv[] = { "tracerd", cmd, opt, value, "--pid", "1",
		!strcmp(cmd, "record") ? "-r" : NULL, "/tmp/tracerd-options-never", NULL };
	char line[256];
	struct run_result r;

	snprintf(line, sizeof(line), "%s: '%s' %s", opt, value, want);
	cr_assert_eq(run_tracerd(&r, argv), 0);
	cr_expect_eq(r.status, 1, "%s %s %s: exit %d: %s", cmd, opt, value, r.status, r.err);
	cr_expect(strstr(r.err, line), "%s %s %s: %s", cmd, opt, value, r.err);
	cr_expect_eq(lines(r.err), 1, "one line: %s", r.err);
	cr_expect_str_eq(r.out, "");
	run_result_free(&r);
}

Test(options, wrapping_sizes_are_usage_errors)
{
	static const char *const opts[] = { "--max-size", "--max-chunk-size", "--stack-bytes" };

	for (size_t i = 0; i < TD_ARRAY_SIZE(wrapping); i++) {
		for (size_t j = 0; j < TD_ARRAY_SIZE(opts); j++)
			refused("record", opts[j], wrapping[i], "is not a size from");
		refused("dump", "--stack-bytes", wrapping[i], "is not a size from");
	}
}

Test(options, wrapping_durations_are_usage_errors)
{
	/* 2^64 ns is about 584 years; 213504d is just past it, and
	 * 9999999999999999999d wraps once multiplied by a day */
	static const char *const opts[] = { "--max-age", "--duration", "--max-chunk-age" };
	static const char *const values[] = { "213504d", "9999999999999999999d" };

	for (size_t i = 0; i < TD_ARRAY_SIZE(values); i++)
		for (size_t j = 0; j < TD_ARRAY_SIZE(opts); j++)
			refused("record", opts[j], values[i], "is longer than tracerd can count");
}

/* tracerd service --config (key=value in [Service]) --check: exit 1, one
 * line naming the file's line and the value. */
static void config_refused(const char *key, const char *value)
{
	char dir[] = "/tmp/tracerd-wrap-XXXXXX", path[64], want[128];
	const char *argv[] = { "tracerd", "service", "--config", path, "--check", NULL };
	struct run_result r;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tracerd.conf", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "[Service]\n%s=%s\n[Target a]\nComm=never\n", key, value);
	fclose(f);
	cr_assert_eq(run_tracerd(&r, argv), 0);
	cr_expect_eq(r.status, 1, "%s=%s: exit %d: %s", key, value, r.status, r.err);
	snprintf(want, sizeof(want), "tracerd.conf:2: %s= must be", key);
	cr_expect(strstr(r.err, want), "%s=%s: %s", key, value, r.err);
	snprintf(want, sizeof(want), "%s=%s", key, value);
	cr_expect(strstr(r.err, want), "the offending text: %s", r.err);
	cr_expect_eq(lines(r.err), 1, "one line: %s", r.err);
	run_result_free(&r);
	unlink(path);
	rmdir(dir);
}

Test(options, wrapping_values_in_the_config_are_refused)
{
	for (size_t i = 0; i < TD_ARRAY_SIZE(wrapping); i++)
		config_refused("MaxSize", wrapping[i]);
	config_refused("MaxAge", "213504d");
	config_refused("MaxAge", "9999999999999999999d");
}
