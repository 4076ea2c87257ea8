/* SPDX-License-Identifier: GPL-2.0-or-later */
/* symbolize/python.c's reading of CPython 3.11's location table, against
 * CPython's own answer: the table and code.co_positions() of this
 * function, as Debian's python3.11 (3.11.2) compiled it:
 *
 *   def f(a, b):
 *       x = a + b
 *
 *       for i in range(3):
 *           x += i
 *
 *
 *       if x > 10:
 *           return [x,
 *                   a,
 *                   b]
 *       return x
 */
#include <criterion/criterion.h>

#include "../../common/td.h"
#include "../../symbolize/symbolize.h"

TestSuite(python);

static const uint8_t table[] = {0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41,
	0xe5, 0x0d, 0x12, 0x90, 0x31, 0x89, 0x58, 0x8c, 0x58, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf0,
	0x00, 0x01, 0x05, 0x0f, 0x88, 0x01, 0xd8, 0x08, 0x09, 0x88, 0x51, 0x89, 0x06, 0x88, 0x01,
	0x88, 0x01, 0xf0, 0x06, 0x00, 0x08, 0x09, 0x88, 0x32, 0x82, 0x76, 0x80, 0x76, 0xd8, 0x10,
	0x11, 0xd8, 0x10, 0x11, 0xd8, 0x10, 0x11, 0xf0, 0x05, 0x02, 0x10, 0x13, 0xf0, 0x00, 0x02,
	0x09, 0x13, 0xf0, 0x06, 0x00, 0x0c, 0x0d, 0x80, 0x48};

/* co_positions()' start line of each code unit */
static const int lines[] = {1, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5,
	5, 5, 5, 5, 5, 8, 8, 8, 8, 8, 8, 9, 10, 11, 9, 9, 12, 12};

Test(python, location_table_lines_as_cpython_gives_them)
{
	for (int i = 0; i < (int)TD_ARRAY_SIZE(lines); i++)
		cr_expect_eq(sym_py_line(table, sizeof(table), 1, i), lines[i],
			"code unit %d: line %d, CPython says %d", i,
			sym_py_line(table, sizeof(table), 1, i), lines[i]);
	/* before the first instruction: the def line; past the end, or a
	 * table cut short: no line rather than a wrong one */
	cr_expect_eq(sym_py_line(table, sizeof(table), 1, -1), 1);
	cr_expect_eq(sym_py_line(table, sizeof(table), 1, (int)TD_ARRAY_SIZE(lines)), 0);
	cr_expect_eq(sym_py_line(table, 20, 1, 40), 0);
}
