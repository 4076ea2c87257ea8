/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The size and duration parsers (parse.h), shared by the command line
 * (cli/cli.c) and the service's configuration (service/config.c) so that
 * a value means the same wherever a user writes it.
 *
 * Written by hand, not with strtoull or strtod: those take a sign and
 * leading space, strtod follows LC_NUMERIC and takes hex and exponents,
 * and neither says when a unit's multiplication overflows.  Here every
 * step is checked, and what does not fit is -ERANGE.  Bounds of a
 * particular setting (MaxSize=, --stack-bytes) are the caller's. */
#include "parse.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "td.h"

#define NS_PER_SEC 1000000000ull

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool is_alpha(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* The whole number at *s, advancing *s past it; -ERANGE past UINT64_MAX. */
static int whole_number(const char **s, uint64_t *ret)
{
	uint64_t v = 0;
	int r = 0;

	for (; is_digit(**s); (*s)++) {
		unsigned d = (unsigned)(**s - '0');

		if (v > (UINT64_MAX - d) / 10)
			r = -ERANGE; /* read on: garbage after it is still -EINVAL */
		else
			v = v * 10 + d;
	}
	*ret = v;
	return r;
}

static unsigned size_shift(char unit)
{
	switch (unit) {
	case 'K':
	case 'k':
		return 10;
	case 'M':
	case 'm':
		return 20;
	case 'G':
	case 'g':
		return 30;
	case 'T':
	case 't':
		return 40;
	}
	return 0;
}

int td_size_parse(const char *s, uint64_t *ret_bytes)
{
	uint64_t v;
	unsigned shift;
	int r;

	if (!is_digit(*s))
		return -EINVAL;
	r = whole_number(&s, &v);
	shift = size_shift(*s);
	if (shift) {
		s++;
		if (s[0] == 'i' && s[1] == 'B')
			s += 2;
		else if (s[0] == 'B')
			s++;
	} else if (s[0] == 'B') {
		s++;
	}
	if (*s)
		return -EINVAL;
	if (r < 0 || v > UINT64_MAX >> shift)
		return -ERANGE;
	*ret_bytes = v << shift;
	return 0;
}

static const struct {
	const char *name;
	uint64_t ns;
} time_units[] = {
	{ "us", 1000ull },
	{ "usec", 1000ull },
	{ "ms", 1000000ull },
	{ "msec", 1000000ull },
	{ "s", NS_PER_SEC },
	{ "sec", NS_PER_SEC },
	{ "second", NS_PER_SEC },
	{ "seconds", NS_PER_SEC },
	{ "m", 60 * NS_PER_SEC },
	{ "min", 60 * NS_PER_SEC },
	{ "minute", 60 * NS_PER_SEC },
	{ "minutes", 60 * NS_PER_SEC },
	{ "h", 3600 * NS_PER_SEC },
	{ "hr", 3600 * NS_PER_SEC },
	{ "hour", 3600 * NS_PER_SEC },
	{ "hours", 3600 * NS_PER_SEC },
	{ "d", 86400 * NS_PER_SEC },
	{ "day", 86400 * NS_PER_SEC },
	{ "days", 86400 * NS_PER_SEC },
	{ "w", 604800 * NS_PER_SEC },
	{ "week", 604800 * NS_PER_SEC },
	{ "weeks", 604800 * NS_PER_SEC },
};

/* The unit of len bytes at s, in ns; 0 if it is none. */
static uint64_t time_unit(const char *s, size_t len)
{
	for (size_t i = 0; i < TD_ARRAY_SIZE(time_units); i++)
		if (strlen(time_units[i].name) == len && !memcmp(time_units[i].name, s, len))
			return time_units[i].ns;
	return 0;
}

int td_duration_parse(const char *s, uint64_t *ret_ns)
{
	/* whole < 2^64 times a unit < 2^50, summed while below 2^64: never
	 * near 2^128 */
	unsigned __int128 total = 0;
	bool any = false, range = false;

	if (!is_digit(*s))
		return -EINVAL;
	for (;;) {
		uint64_t whole, frac = 0, scale = 1, unit;
		size_t ulen;

		while (is_blank(*s))
			s++;
		if (!*s)
			break;
		if (!is_digit(*s))
			return -EINVAL;
		range |= whole_number(&s, &whole) < 0;
		if (*s == '.') {
			if (!is_digit(*++s))
				return -EINVAL;
			/* to the nanosecond: later digits are dropped */
			for (; is_digit(*s); s++)
				if (scale < NS_PER_SEC) {
					frac = frac * 10 + (uint64_t)(*s - '0');
					scale *= 10;
				}
		}
		while (is_blank(*s))
			s++;
		for (ulen = 0; is_alpha(s[ulen]); ulen++)
			;
		if (ulen == 0) {
			if (any || *s)
				return -EINVAL; /* "5" alone is 5 s; "1h 5" is a typo */
			unit = NS_PER_SEC;
		} else {
			unit = time_unit(s, ulen);
			if (!unit)
				return -EINVAL;
		}
		s += ulen;
		if (!range) {
			total += (unsigned __int128)whole * unit +
				 (unsigned __int128)frac * unit / scale;
			range = total > UINT64_MAX;
		}
		any = true;
	}
	if (range)
		return -ERANGE;
	*ret_ns = (uint64_t)total;
	return 0;
}
