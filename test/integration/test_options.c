/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sizes and durations on tracerd's command line, end to end: a value too
 * large to count is a usage error (exit 1, one line that says what to
 * give), never taken modulo 2^64; the forms the man page promises get past
 * the parser (the run then fails on its target, exit 2, not on them). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../helpers.h"

/* The lines of text (ignoring a last newline). */
static unsigned lines(const char *text)
{
	unsigned n = 0;

	for (const char *p = text; *p; p++)
		n += *p == '\n' && p[1];
	return *text ? n + 1 : 0;
}

Test(options, an_overflowing_size_is_a_usage_error)
{
	/* 17179869185G is 2^64 + 1 GiB: a shift without a check took it for
	 * 1 GiB */
	const char *argv[] = { "tracerd", "record", "--max-size", "17179869185G", "--pid", "1",
		"-r", "/tmp/tracerd-options-never", NULL };
	struct run_result r;

	cr_assert_eq(run_tracerd(&r, argv), 0);
	cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	cr_expect(strstr(r.err, "--max-size: '17179869185G' is not a size from"), "%s", r.err);
	cr_expect_eq(lines(r.err), 1, "one line: %s", r.err);
	cr_expect_str_eq(r.out, "");
	run_result_free(&r);
}

Test(options, an_overflowing_duration_is_a_usage_error)
{
	const char *argv[] = { "tracerd", "record", "--duration", "99999999999999999999d",
		"--pid", "1", "-r", "/tmp/tracerd-options-never", NULL };
	struct run_result r;

	cr_assert_eq(run_tracerd(&r, argv), 0);
	cr_expect_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	cr_expect(strstr(r.err, "--duration: '99999999999999999999d' is longer than tracerd can "
				"count"),
		"%s", r.err);
	cr_expect_eq(lines(r.err), 1, "one line: %s", r.err);
	run_result_free(&r);
}

Test(options, the_documented_forms_are_accepted)
{
	char dir[] = "/tmp/tracerd-options-XXXXXX", repo[64];
	const char *argv[] = { "tracerd", "record", "--duration", "1.5s", "--max-chunk-size",
		"2MiB", "--max-chunk-age", "1h 30m", "--max-size", "1T", "--max-age", "7d",
		"--stack-bytes", "16K", "--pid", "999999999", "-r", repo, NULL };
	struct run_result r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(repo, sizeof(repo), "%s/repo", dir);
	cr_assert_eq(run_tracerd(&r, argv), 0);
	/* past the options: no such process */
	cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cr_expect(strstr(r.err, "no process with PID 999999999"), "%s", r.err);
	run_result_free(&r);
	cr_expect_eq(rmdir(dir), 0, "the repository made for nothing is gone again");
}
