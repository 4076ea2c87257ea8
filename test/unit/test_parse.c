/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The size and duration grammars (common/parse.c) that the command line
 * and tracerd.conf(5) share: every unit, the largest value and the one
 * past it, an overflow that only the unit's multiplication makes (the
 * command line once took 17179869185G for 1 GiB), garbage, signs, empty
 * input, and a locale whose decimal point is a comma. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/parse.h"
#include "../helpers.h"

#define NS 1000000000ull
#define UNTOUCHED 0x5555555555555555ull

static void size_is(const char *s, uint64_t want)
{
	uint64_t v = UNTOUCHED;

	cr_expect_eq(td_size_parse(s, &v), 0, "'%s' refused", s);
	cr_expect_eq(v, want, "'%s': %llu, not %llu", s, (unsigned long long)v,
		(unsigned long long)want);
}

static void size_fails(const char *s, int want)
{
	uint64_t v = UNTOUCHED;
	int r = td_size_parse(s, &v);

	cr_expect_eq(r, want, "'%s': %d, not %d", s, r, want);
	cr_expect_eq(v, UNTOUCHED, "'%s': written on failure", s);
}

static void duration_is(const char *s, uint64_t want_ns)
{
	uint64_t v = UNTOUCHED;

	cr_expect_eq(td_duration_parse(s, &v), 0, "'%s' refused", s);
	cr_expect_eq(v, want_ns, "'%s': %llu ns, not %llu", s, (unsigned long long)v,
		(unsigned long long)want_ns);
}

static void duration_fails(const char *s, int want)
{
	uint64_t v = UNTOUCHED;
	int r = td_duration_parse(s, &v);

	cr_expect_eq(r, want, "'%s': %d, not %d", s, r, want);
	cr_expect_eq(v, UNTOUCHED, "'%s': written on failure", s);
}

Test(parse, size_units)
{
	size_is("0", 0);
	size_is("512", 512);
	size_is("16B", 16);
	size_is("1K", 1024);
	size_is("1k", 1024);
	size_is("64KB", 64 << 10);
	size_is("64KiB", 64 << 10);
	size_is("2M", 2u << 20);
	size_is("2m", 2u << 20);
	size_is("2MiB", 2u << 20);
	size_is("3G", 3ull << 30);
	size_is("3g", 3ull << 30);
	size_is("3GB", 3ull << 30);
	size_is("5T", 5ull << 40);
	size_is("5t", 5ull << 40);
	size_is("5TiB", 5ull << 40);
	size_is("007K", 7 << 10);
}

Test(parse, size_edges)
{
	size_is("18446744073709551615", UINT64_MAX);
	size_is("18446744073709551615B", UINT64_MAX);
	size_fails("18446744073709551616", -ERANGE);
	size_fails("99999999999999999999999999", -ERANGE);
	/* too large only once multiplied by the unit */
	size_is("17179869183G", UINT64_MAX - ((1ull << 30) - 1));
	size_fails("17179869184G", -ERANGE);
	size_fails("17179869185G", -ERANGE); /* 2^64 + 1 GiB: not 1 GiB */
	size_is("16777215T", UINT64_MAX - ((1ull << 40) - 1));
	size_fails("16777216T", -ERANGE);
	size_is("18014398509481983K", UINT64_MAX - 1023);
	size_fails("18014398509481984K", -ERANGE);
}

Test(parse, size_garbage)
{
	static const char *const bad[] = { "", "K", "B", "iB", "12x", "1KX", "1Ki", "1iB",
		"1KBB", "1 K", " 1", "1 ", "-1", "+1", "0x10", "1.5K", "1,5K", "1e3", "1P", "ten",
		"99999999999999999999999x" /* garbage wins over size */ };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		size_fails(bad[i], -EINVAL);
}

Test(parse, duration_units)
{
	duration_is("5", 5 * NS);
	duration_is("0", 0);
	duration_is("0s", 0);
	duration_is("7us", 7000);
	duration_is("7usec", 7000);
	duration_is("7ms", 7000000);
	duration_is("7msec", 7000000);
	duration_is("7s", 7 * NS);
	duration_is("7sec", 7 * NS);
	duration_is("1second", NS);
	duration_is("7seconds", 7 * NS);
	duration_is("10m", 600 * NS);
	duration_is("10min", 600 * NS);
	duration_is("1minute", 60 * NS);
	duration_is("10minutes", 600 * NS);
	duration_is("2h", 7200 * NS);
	duration_is("2hr", 7200 * NS);
	duration_is("1hour", 3600 * NS);
	duration_is("2hours", 7200 * NS);
	duration_is("3d", 3 * 86400 * NS);
	duration_is("1day", 86400 * NS);
	duration_is("3days", 3 * 86400 * NS);
	duration_is("2w", 2 * 604800 * NS);
	duration_is("1week", 604800 * NS);
	duration_is("2weeks", 2 * 604800 * NS);
}

Test(parse, duration_sums_and_fractions)
{
	duration_is("1h 30min", 5400 * NS);
	duration_is("1h 30m", 5400 * NS);
	duration_is("1h30m", 5400 * NS);
	duration_is("1h\t30m 15s", 5415 * NS);
	duration_is("5 s", 5 * NS);
	duration_is("5s ", 5 * NS);
	duration_is("1.5h", 5400 * NS);
	duration_is("1.5s", 1500000000);
	duration_is("1.5", 1500000000);
	duration_is("0.25ms", 250000);
	duration_is("0.000000001s", 1);
	duration_is("1.0000000019s", NS + 1); /* to the nanosecond */
	duration_is("1.5m 0.5s", 90 * NS + NS / 2);
}

Test(parse, duration_edges)
{
	duration_is("18446744073.709551615s", UINT64_MAX);
	duration_is("18446744073s 709ms 551us", UINT64_MAX - 615);
	duration_fails("18446744073.709551616s", -ERANGE);
	duration_fails("18446744074s", -ERANGE);
	duration_fails("18446744074", -ERANGE);
	/* too long only once multiplied by the unit, or once summed */
	duration_is("30500w", 30500ull * 604800 * NS);
	duration_fails("30501w", -ERANGE);
	duration_is("213503d", 213503ull * 86400 * NS);
	duration_fails("213504d", -ERANGE);
	duration_fails("18446744073s 1s", -ERANGE);
	duration_fails("99999999999999999999999d", -ERANGE);
	duration_fails("99999999999999999999999999999999999999999us", -ERANGE);
}

Test(parse, duration_garbage)
{
	static const char *const bad[] = { "", " ", "s", "5x", "5S", "5 sx", "1h 5", "1h 5 s x",
		"1.s", ".5s", "1..5s", "-5m", "+5s", " 5s", "1,5s", "1e3s", "0x10", "nan", "inf",
		"5s,", "1h-30m", "99999999999999999999999x" /* garbage wins over range */ };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		duration_fails(bad[i], -EINVAL);
}

/* A German locale's decimal point is a comma: strtod would read "1.5s" as
 * 1 and stop.  The parsers never consult the locale.  None is installed
 * here, so one is compiled into a directory of the test's own. */
Test(parse, no_locale_is_consulted, .timeout = 60)
{
	char dir[] = "/tmp/tracerd-locale-XXXXXX", cmd[256];
	const struct lconv *lc;
	int r;

	need_command("localedef", "libc-bin");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1",
		dir);
	r = system(cmd);
	setenv("LOCPATH", dir, 1);
	if (r != 0 || !setlocale(LC_ALL, "de_DE.UTF-8")) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		cr_expect_eq(system(cmd), 0);
		cr_skip_test("no de_DE locale could be made (apt-get install locales)");
	}
	lc = localeconv();
	cr_assert_str_eq(lc->decimal_point, ",", "the locale is in force");
	duration_is("1.5s", 1500000000);
	duration_is("1h 0.5m", 3630 * NS);
	duration_fails("1,5s", -EINVAL);
	size_is("2KiB", 2048);
	size_fails("1,5K", -EINVAL);
	setlocale(LC_ALL, "C");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
