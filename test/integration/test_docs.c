/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The docs say what the code does: every option a subcommand's --help
 * lists is one the code accepts and its man page documents, and every
 * option the man page documents for it is one --help lists. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../helpers.h"

/* The distinct long options in text as " --a --b ": a space on each side of
 * every one, so that strstr(out, " --a ") asks whether --a is there. */
static void long_options(const char *text, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, " ");

	for (const char *p = text; (p = strstr(p, "--")); p += 2) {
		char key[70];
		size_t k = 0;

		if (p[2] < 'a' || p[2] > 'z')
			continue;
		while (k < 60 && ((p[2 + k] >= 'a' && p[2 + k] <= 'z') || p[2 + k] == '-'))
			k++;
		snprintf(key, sizeof(key), " --%.*s ", (int)k, p + 2);
		if (strstr(out, key))
			continue;
		n += (size_t)snprintf(out + n, len - n, "%s", key + 1);
		cr_assert_lt(n, len);
	}
}

/* The next option of a long_options() list into opt; NULL after the last. */
static const char *next_option(const char *p, char opt[64])
{
	int used = 0;

	if (sscanf(p, "%63s%n", opt, &used) != 1)
		return NULL;
	return p + used;
}

static char *help_of(const char *cmd)
{
	const char *argv[] = { "tracerd", cmd, "--help", NULL };
	struct run_result r;
	char *text;

	cr_assert_eq(run_tracerd(&r, argv), 0);
	cr_assert_eq(r.status, 0, "tracerd %s --help: exit %d", cmd, r.status);
	cr_assert(!strstr(r.out, "%%"), "tracerd %s --help prints a printf escape:\n%s", cmd, r.out);
	text = strdup(r.out);
	run_result_free(&r);
	return text;
}

static char *man_text(const char *page)
{
	char cmd[1024], *text, *w;
	int status;

	snprintf(cmd, sizeof(cmd), "mandoc -Tascii %s/man/%s", TD_SOURCE_DIR, page);
	text = shell_output(cmd, &status);
	cr_assert_eq(status, 0, "mandoc failed on %s", page);
	/* undo overstriking (bold is "c\bc", underline "_\bc") */
	w = text;
	for (const char *r = text; *r; r++) {
		if (*r == '\b' && w > text)
			w--;
		else
			*w++ = *r;
	}
	*w = '\0';
	return text;
}

static void assert_all_in(const char *opts, const char *text, const char *what)
{
	char opt[64];

	for (const char *p = opts; (p = next_option(p, opt));) {
		const char *q = text;
		bool found = false;

		/* a whole option: --to must not be found inside --tool */
		while ((q = strstr(q, opt))) {
			char c = q[strlen(opt)];

			if (!((c >= 'a' && c <= 'z') || c == '-')) {
				found = true;
				break;
			}
			q++;
		}
		cr_expect(found, "%s lacks %s", what, opt);
	}
}

/* The code knows every option --help lists: tracerd would say "unknown
 * option" (no PID is given, so nothing is attached). */
static void assert_accepted(const char *cmd, const char *opts)
{
	char opt[64];

	for (const char *p = opts; (p = next_option(p, opt));) {
		/* the service is given a config that is not there, so that it
		 * never runs with the machine's own */
		bool svc = !strcmp(cmd, "service");
		const char *argv[] = { "tracerd", cmd, svc ? "--config" : opt,
			svc ? "/nonexistent/tracerd.conf" : NULL, opt, NULL };
		struct run_result r;

		cr_assert_eq(run_tracerd(&r, argv), 0);
		cr_expect(!strstr(r.err, "unknown option"), "tracerd %s does not know %s: %s", cmd, opt,
			r.err);
		run_result_free(&r);
	}
}

static void check(const char *cmd, const char *page, const char *man_only)
{
	char *help = help_of(cmd), *man = man_text(page);
	char hopts[2048], mopts[2048], opt[64];

	long_options(help, hopts, sizeof(hopts));
	cr_assert(hopts[1], "tracerd %s --help lists no options", cmd);
	assert_all_in(hopts, man, page);
	assert_accepted(cmd, hopts);
	/* what the man page documents, minus the options of other tools it
	 * cites, must be in --help */
	long_options(man, mopts, sizeof(mopts));
	for (const char *p = mopts; (p = next_option(p, opt));) {
		char key[70];

		snprintf(key, sizeof(key), " %s ", opt);
		if (strstr(man_only, key))
			continue;
		assert_all_in(opt, help, "--help");
	}
	free(help);
	free(man);
}

Test(docs, report_help_and_man_page_agree)
{
	/* perf report's --stdio --no-children and record's --mode are
	 * cited, not report's */
	check("report", "tracerd-report.1", " --stdio --no-children --mode ");
}

Test(docs, record_dump_snapshot_verify_service_in_tracerd_8)
{
	/* tracerd.8 documents every subcommand but report: each --help must be
	 * in it, and together they must cover it */
	const char *cmds[] = { "record", "dump", "snapshot", "verify", "service" };
	char all[8192] = "", opts[2048], *man = man_text("tracerd.8"), mopts[2048], opt[64];

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char *help = help_of(cmds[i]);

		long_options(help, opts, sizeof(opts));
		assert_all_in(opts, man, "tracerd.8");
		assert_accepted(cmds[i], opts);
		strncat(all, help, sizeof(all) - strlen(all) - 1);
		free(help);
	}
	long_options(man, mopts, sizeof(mopts));
	/* --help and --version belong to every command, --output to snapshot's -o */
	for (const char *p = mopts; (p = next_option(p, opt));) {
		/* --offline is systemd-analyze's, cited in SECURITY; --perf-prof
		 * and --perf-basic-prof are node's, cited in Code made at run
		 * time */
		if (!strcmp(opt, "--version") || !strcmp(opt, "--help") || !strcmp(opt, "--offline") ||
			!strcmp(opt, "--perf-prof") || !strcmp(opt, "--perf-basic-prof"))
			continue;
		assert_all_in(opt, all, "the subcommands' --help");
	}
	free(man);
}

/* The usage lines of record --help (up to its first blank line) and the
 * SYNOPSIS of tracerd.8 name the same options: --mode and --capture were
 * missing from the SYNOPSIS. */
Test(docs, record_synopsis_has_every_option_of_its_usage)
{
	char *help = help_of("record"), *man = man_text("tracerd.8"), *end, *syn, *desc;
	char opts[2048], sopts[2048], opt[64];

	end = strstr(help, "\n\n");
	cr_assert_not_null(end);
	*end = '\0';
	syn = strstr(man, "SYNOPSIS");
	desc = syn ? strstr(syn, "DESCRIPTION") : NULL;
	cr_assert(syn && desc, "tracerd.8 has a SYNOPSIS and a DESCRIPTION");
	*desc = '\0';
	long_options(help, opts, sizeof(opts));
	long_options(syn, sopts, sizeof(sopts));
	for (const char *p = opts; (p = next_option(p, opt));) {
		char key[70];

		snprintf(key, sizeof(key), " %s ", opt);
		cr_expect(strstr(sopts, key), "%s is in record's usage but not in tracerd.8's "
			"SYNOPSIS", opt);
	}
	free(help);
	free(man);
}

/* A bad option is one line that names it and says where to look, exit 1
 * (not the whole usage text, which buries the error). */
Test(docs, bad_options_are_one_line)
{
	static const struct {
		const char *cmd, *arg, *says;
	} cases[] = {
		{ "record", "--bogus", "record: unknown option '--bogus'; see tracerd record --help" },
		{ "dump", "-Z", "dump: unknown option -Z; see tracerd dump --help" },
		{ "report", "--format", "report: --format needs a value; see tracerd report --help" },
		{ "snapshot", "--since", "snapshot: --since needs a value; see tracerd snapshot --help" },
		{ "record", "--quiet=1", "record: --quiet takes no value; see tracerd record --help" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = { "tracerd", cases[i].cmd, cases[i].arg, NULL };
		struct run_result r;
		char want[256];

		snprintf(want, sizeof(want), "tracerd: %s\n", cases[i].says);
		cr_assert_eq(run_tracerd(&r, argv), 0);
		cr_expect_eq(r.status, 1, "%s %s: exit %d", cases[i].cmd, cases[i].arg, r.status);
		cr_expect_str_eq(r.err, want);
		cr_expect_str_eq(r.out, "");
		run_result_free(&r);
	}
}

/* As man-db shows them (groff's mdoc, not only mandoc): a subcommand's page
 * names its subcommand wherever it names the program, and no page warns. */
Test(docs, man_pages_render_under_groff)
{
	static const char *const pages[] = { "tracerd.8", "tracerd-report.1", "tracerd-chunk.5",
		"tracerd.conf.5" };
	char cmd[512], *out;
	int status;

	need_command("man", "man-db");
	need_command("groff", "groff-base");
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		snprintf(cmd, sizeof(cmd),
			"MANWIDTH=80 man --warnings -l %s/man/%s 2>&1 >/dev/null", TD_SOURCE_DIR,
			pages[i]);
		out = shell_output(cmd, &status);
		cr_expect_eq(status, 0, "%s", pages[i]);
		cr_expect_str_eq(out ? out : "", "", "groff warns on %s", pages[i]);
		free(out);
	}
	snprintf(cmd, sizeof(cmd),
		"MANWIDTH=80 man -l %s/man/tracerd-report.1 2>/dev/null | col -b | "
		"sed -n '/^SYNOPSIS/,/^DESCRIPTION/p;/^DESCRIPTION/{n;p}'",
		TD_SOURCE_DIR);
	out = shell_output(cmd, &status);
	cr_assert_not_null(out);
	for (const char *p = out; (p = strstr(p, "tracerd")); p += 7)
		cr_expect(!strncmp(p, "tracerd report", 14), "a bare 'tracerd' in:\n%s", out);
	cr_expect(strstr(out, "tracerd report [path"), "%s", out);
	free(out);
}

/* tracerd.8's sentence on report names every format report --help lists. */
Test(docs, tracerd_8_names_every_report_format)
{
	char *help = help_of("report"), *man = man_text("tracerd.8");
	const char *list = strstr(help, "-f, --format FORMAT"), *end;
	const char *sentence = strstr(man, "turns recordings into"), *stop;
	char formats[512], sent[2048], name[32];
	unsigned n = 0;

	cr_assert_not_null(list, "report --help has no --format");
	cr_assert_not_null(sentence, "tracerd.8 says nothing of report's formats");
	list += strlen("-f, --format FORMAT");
	end = strstr(list, "\n  -");
	snprintf(formats, sizeof(formats), "%.*s", (int)(end ? end - list : 200), list);
	stop = strstr(sentence, "tracerd-report");
	snprintf(sent, sizeof(sent), "%.*s", (int)(stop ? stop - sentence : 400), sentence);
	for (const char *p = formats; *p;) {
		int k = 0;

		while (*p && !(*p >= 'a' && *p <= 'z'))
			p++;
		while (p[k] >= 'a' && p[k] <= 'z' && k < 31)
			k++;
		if (!k)
			break;
		snprintf(name, sizeof(name), "%.*s", k, p);
		p += k;
		if (!strcmp(name, "default"))
			continue;
		n++;
		cr_expect(strstr(sent, name), "tracerd.8 does not name report's format %s: %s", name,
			sent);
	}
	cr_expect_geq(n, 9u, "formats read from --help: %s", formats);
	free(help);
	free(man);
}

/* The names in /tmp that start with prefix. */
static unsigned tmp_entries(const char *prefix)
{
	char cmd[256], *out;
	unsigned n = 0;
	int status;

	snprintf(cmd, sizeof(cmd), "ls -a /tmp | grep -c '^%s' || true", prefix);
	out = shell_output(cmd, &status);
	if (out)
		n = (unsigned)strtoul(out, NULL, 10);
	free(out);
	return n;
}

/* make demo's script keeps what it makes in the directory it is given (the
 * build's demo/), made anew, and leaves nothing in /tmp. */
Test(docs, demo_keeps_its_files_in_its_own_directory, .timeout = 120)
{
	char cmd[1024], *out;
	unsigned before = tmp_entries("tracerd-demo");
	int status;

	snprintf(cmd, sizeof(cmd), "%s/scripts/demo %s/tracerd %s/demo %s/demo-test 2>&1",
		TD_SOURCE_DIR, TD_BUILD_DIR, TD_FIXTURE_DIR, TD_BUILD_DIR);
	out = shell_output(cmd, &status);
	cr_expect_eq(status, 0, "%s", out);
	cr_expect(strstr(out, "flame graph to open in a browser: " TD_BUILD_DIR "/demo-test/"),
		"%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "test -s %s/demo-test/flamegraph.html && test -d %s/demo-test/repo",
		TD_BUILD_DIR, TD_BUILD_DIR);
	cr_expect_eq(system(cmd), 0, "the flame graph and the repository are in demo-test/");
	cr_expect_eq(tmp_entries("tracerd-demo"), before, "make demo left files in /tmp");
	snprintf(cmd, sizeof(cmd), "rm -rf %s/demo-test", TD_BUILD_DIR);
	cr_expect_eq(system(cmd), 0);
}

/* make check's build says nothing but errors (QUIET=1): one line per
 * failure is the suite's, not a list of every file compiled. */
Test(docs, quiet_build_prints_nothing, .timeout = 120)
{
	char cmd[1024], *out;
	int status;

	snprintf(cmd, sizeof(cmd),
		"rm -rf %s/quiet-test && env -u MAKEFLAGS -u MFLAGS make --no-print-directory -C %s "
		"O=%s/quiet-test QUIET=1 "
		"%s/quiet-test/fixtures/fx_spin 2>&1",
		TD_BUILD_DIR, TD_SOURCE_DIR, TD_BUILD_DIR, TD_BUILD_DIR);
	out = shell_output(cmd, &status);
	cr_expect_eq(status, 0, "%s", out);
	cr_expect_str_eq(out ? out : "", "", "a quiet build printed:\n%s", out ? out : "");
	free(out);
	snprintf(cmd, sizeof(cmd), "test -x %s/quiet-test/fixtures/fx_spin", TD_BUILD_DIR);
	cr_expect_eq(system(cmd), 0, "nothing was built");
	snprintf(cmd, sizeof(cmd), "grep -q 'QUIET=1 test-build' %s/Makefile", TD_SOURCE_DIR);
	cr_expect_eq(system(cmd), 0, "make check does not build quietly");
	snprintf(cmd, sizeof(cmd), "rm -rf %s/quiet-test", TD_BUILD_DIR);
	cr_expect_eq(system(cmd), 0);
}
