/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Names that attack a terminal (issue 32.1): fx_evil's function, source
 * file and thread are named with escape sequences, a byte of invalid
 * UTF-8 and C1's CSI, and it runs as a binary whose file name holds an
 * escape.  Recorded, every text format of report and dump prints no
 * control character but the newline, and is valid UTF-8; the names are
 * there, escaped; JSON parses and holds the real characters; pprof reads.
 * The truth about what is safe is python3's UTF-8 decoder and Unicode's
 * categories, not tracerd's escaper. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"

TestSuite(escapes, .init = record_setup, .fini = record_teardown, .timeout = 300);

/* The names as the text formats must show them, and as JSON's parsers
 * must read them (0xff, invalid, as U+FFFD). */
#define EVIL_TEXT "EVIL\\x1b]0;owned\\x07\\x1b[2J\\x1b[31m\\xff\\xc2\\x9b"
/* folded's own rule: a ';' in a name would split the frame */
#define EVIL_FOLDED "EVIL\\x1b]0:owned\\x07\\x1b[2J\\x1b[31m\\xff\\xc2\\x9b"
#define THREAD_TEXT "\\x1b[31mred\\x07\\xff\\xc2\\x9b"
#define FILE_TEXT "evil\\x1b]0;owned\\x07\\x1b[2J\\xff.c"
#define MODULE_TEXT "fx\\x1b[1mevil"
#define EVIL_PY "\"EVIL\\x1b]0;owned\\x07\\x1b[2J\\x1b[31m\\ufffd\\x9b\""
#define THREAD_PY "\"\\x1b[31mred\\x07\\ufffd\\x9b\""

static char dir[64];

/* Write text to DIR/name and return that path (static). */
static const char *save(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Does python3 find text to be UTF-8 with no control character other than
 * those allowed (C0, DEL, C1: Unicode's Cc; and the bidi controls)? */
static void expect_safe(const char *what, const char *text, const char *allowed)
{
	char cmd[1024], *out;
	int status;

	snprintf(cmd, sizeof(cmd),
		"python3 -c 'import sys,unicodedata\n"
		"t=open(sys.argv[1],\"rb\").read().decode(\"utf-8\")\n"
		"bad=[(i,hex(ord(c))) for i,c in enumerate(t) if c not in sys.argv[2] and "
		"(unicodedata.category(c)==\"Cc\" or c in \"\\u202a\\u202b\\u202c\\u202d\\u202e"
		"\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\")]\n"
		"print(bad[:5])\nsys.exit(1 if bad else 0)' %s '%s' 2>&1",
		save("out.txt", text), allowed);
	out = shell_output(cmd, &status);
	cr_expect_eq(status, 0, "%s: raw control bytes or invalid UTF-8: %s\n%.2000s", what, out,
		text);
	free(out);
}

/* Does python3's json module parse the text, and hold every one of the
 * python string literals in need (comma-separated) among its strings? */
static void expect_json_with(const char *what, const char *text, const char *need)
{
	char cmd[1024], *out;
	int status;

	snprintf(cmd, sizeof(cmd),
		"python3 -c 'import json,sys\n"
		"d=json.load(open(sys.argv[1],encoding=\"utf-8\"))\n"
		"s=set()\n"
		"def walk(x):\n"
		"  if isinstance(x,str): s.add(x)\n"
		"  elif isinstance(x,dict): [walk(k) or walk(v) for k,v in x.items()]\n"
		"  elif isinstance(x,list): [walk(v) for v in x]\n"
		"walk(d)\n"
		"miss=[n for n in [%s] if not any(n in v for v in s)]\n"
		"print(miss)\nsys.exit(1 if miss else 0)' %s 2>&1",
		need, save("out.json", text));
	out = shell_output(cmd, &status);
	cr_expect_eq(status, 0, "%s: not JSON, or without the names: %s\n%.2000s", what, out, text);
	free(out);
}

static void report(struct run_result *r, const char *a1, const char *a2, const char *a3)
{
	const char *argv[] = { "tracerd", "report", repo, a1, a2, a3, NULL };

	run_tracerd(r, argv);
	cr_assert_eq(r->status, 0, "report %s %s %s: %s", a1 ? a1 : "", a2 ? a2 : "",
		a3 ? a3 : "", r->err);
}

static bool evil_sampled(const struct found *f)
{
	return f->samples >= 20;
}

Test(escapes, hostile_names_print_safely_everywhere)
{
	static const char *const text[][3] = {
		{ "-f", "top", NULL },
		{ "-f", "top", "--by=line" },
		{ "-f", "top", "--by=module" },
		{ "-f", "tree", NULL },
		{ "-f", "folded", NULL },
		{ "-f", "folded", "--per-thread" },
		{ "-f", "threads", NULL },
		{ "-f", "info", NULL },
		{ "-f", "waits", NULL },
	};
	char bin[128], cmd[512], *out;
	struct run_result r;
	pid_t fx, t;
	int status;

	need_command("python3", "python3");
	snprintf(dir, sizeof(dir), "/tmp/tracerd-evil-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	/* the program's file name holds an escape too: the module's name */
	snprintf(bin, sizeof(bin), "%s/fx\x1b[1mevil", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", FX("fx_evil"), bin);
	cr_assert_eq(system(cmd), 0);
	fx = fx_start(bin, NULL);
	cr_assert_gt(fx, 0);

	/* dump, text and JSON, while it runs */
	dump_text(fx, &r, NULL, NULL);
	cr_expect_eq(r.status, 0, "%s", r.err);
	expect_safe("dump", r.out, "\n");
	cr_expect(strstr(r.out, EVIL_TEXT), "dump names the function, escaped:\n%s", r.out);
	cr_expect(strstr(r.out, "(" THREAD_TEXT ")"), "and the thread:\n%s", r.out);
	cr_expect(strstr(r.out, FILE_TEXT), "and the file:\n%s", r.out);
	run_result_free(&r);
	dump_text(fx, &r, "--json", NULL);
	cr_expect_eq(r.status, 0, "%s", r.err);
	expect_safe("dump --json", r.out, "\n");
	expect_json_with("dump --json", r.out, EVIL_PY "," THREAD_PY);
	run_result_free(&r);

	t = tracerd_start(fx, NULL, NULL, NULL);
	cr_expect(repo_until(evil_sampled));
	cr_expect_eq(tracerd_stop(t), 0, "%s", slurp(errfile));
	fx_stop(fx);

	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++) {
		report(&r, text[i][0], text[i][1], text[i][2]);
		expect_safe(text[i][1], r.out, "\n");
		if (strcmp(text[i][1], "info") && strcmp(text[i][1], "waits") &&
			strcmp(text[i][1], "threads") && !(text[i][2] && strstr(text[i][2], "module")))
			cr_expect(strstr(r.out, strcmp(text[i][1], "folded") ? EVIL_TEXT : EVIL_FOLDED),
				"%s %s: the function, escaped:\n%s", text[i][1],
				text[i][2] ? text[i][2] : "", r.out);
		run_result_free(&r);
	}
	report(&r, "-f", "top", "--by=line");
	cr_expect(strstr(r.out, FILE_TEXT), "the file, escaped:\n%s", r.out);
	cr_expect(strstr(r.out, "(" MODULE_TEXT ")"), "the module, escaped:\n%s", r.out);
	run_result_free(&r);
	report(&r, "-f", "threads", NULL);
	cr_expect(strstr(r.out, THREAD_TEXT), "the thread, escaped:\n%s", r.out);
	run_result_free(&r);

	/* JSON: parses, with the real characters */
	report(&r, "-f", "speedscope", NULL);
	expect_safe("speedscope", r.out, "\n");
	expect_json_with("speedscope", r.out, EVIL_PY "," THREAD_PY);
	run_result_free(&r);
	report(&r, "-f", "waits", "--json");
	expect_safe("waits --json", r.out, "\n");
	expect_json_with("waits --json", r.out, "");
	run_result_free(&r);
	report(&r, "-f", "html", NULL);
	expect_safe("html", r.out, "\n\t");
	run_result_free(&r);

	/* pprof: go tool pprof reads it, and finds the function */
	if (have_command("go")) {
		snprintf(cmd, sizeof(cmd),
			"%s/tracerd report %s -f pprof -o %s/p.pb.gz && HOME=%s GOCACHE=%s/gocache "
			"GOPROXY=off go tool pprof -symbolize=none -raw %s/p.pb.gz 2>&1",
			TD_BUILD_DIR, repo, dir, dir, dir, dir);
		out = shell_output(cmd, &status);
		cr_expect_eq(status, 0, "%s", out);
		cr_expect(strstr(out, "EVIL\x1b]0;owned"), "the real bytes, in pprof:\n%s", out);
		free(out);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
