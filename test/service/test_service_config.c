/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the service's configuration (service/config.c,
 * tracerd.conf(5)) and its matcher (service/match.c): every refusal with
 * its line and a reason that says what to do, the defaults and every key,
 * the syntax (comments, quotes, whitespace), allocation failures, the
 * matcher, svc_proc_read on a fake /proc tree and on the real one, and the
 * examples the project ships (systemd/tracerd.conf, the man page's). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/td.h"
#include "../../service/service.h"
#include "../helpers.h"

#define NS 1000000000ull

/* Criterion's workers end without LeakSanitizer's exit check: under
 * SANITIZE=address, every test of the suite looks for leaks itself. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
static void leak_check(void)
{
	cr_expect_eq(__lsan_do_recoverable_leak_check(), 0, "leaks (reported above)");
}
TestSuite(svcconf, .fini = leak_check);
#endif

static struct svc_config *parse_ok(const char *text)
{
	struct svc_config *c = NULL;
	struct svc_config_error e = { 0 };
	int r = svc_config_parse("test.conf", text, strlen(text), &c, &e);

	cr_assert_eq(r, 0, "refused: %s:%u: %s: %s\n--\n%s", e.file, e.line, e.text, e.reason,
		text);
	cr_assert_not_null(c);
	return c;
}

/* text is refused on line 'line'; the error quotes want_text (if not NULL)
 * and its reason holds want_reason.  Returns the code. */
static int parse_bad_at(const char *text, unsigned line, const char *want_text,
	const char *want_reason)
{
	struct svc_config *c = NULL;
	struct svc_config_error e;
	int r;

	memset(&e, 0x55, sizeof(e));
	r = svc_config_parse("test.conf", text, strlen(text), &c, &e);
	cr_assert_lt(r, 0, "accepted:\n%s", text);
	cr_expect_null(c, "nothing is handed out on failure");
	cr_expect_str_eq(e.file, "test.conf");
	cr_expect_eq(e.line, line, "line %u, not %u (%s)\n--\n%s", e.line, line, e.reason, text);
	if (want_text)
		cr_expect(strstr(e.text, want_text), "text '%s' does not quote '%s'", e.text,
			want_text);
	cr_expect(strstr(e.reason, want_reason), "reason '%s' does not say '%s'", e.reason,
		want_reason);
	cr_expect_gt(strlen(e.reason), 30, "a reason that says what to do: '%s'", e.reason);
	cr_expect_lt(strlen(e.reason), sizeof(e.reason));
	return r;
}

/* A [Service] whose one key is key=value: refused on line 2. */
static void service_bad(const char *key, const char *value, const char *want_reason)
{
	char text[256];

	snprintf(text, sizeof(text), "[Service]\n%s=%s\n", key, value);
	parse_bad_at(text, 2, key, want_reason);
}

/* A [Target t] with Comm=x and key=value: refused on line 3. */
static void target_bad(const char *key, const char *value, const char *want_reason)
{
	char text[256];

	snprintf(text, sizeof(text), "[Target t]\nComm=x\n%s=%s\n", key, value);
	parse_bad_at(text, 3, key, want_reason);
}

static struct svc_config *service_ok(const char *key, const char *value)
{
	char text[256];

	snprintf(text, sizeof(text), "[Service]\n%s=%s\n", key, value);
	return parse_ok(text);
}

static struct svc_rule target_ok(const char *key, const char *value)
{
	struct svc_config *c;
	struct svc_rule r;
	char text[256];

	snprintf(text, sizeof(text), "[Target t]\nComm=x\n%s=%s\n", key, value);
	c = parse_ok(text);
	cr_assert_eq(c->nrules, 1);
	r = c->rules[0];
	svc_config_free(c); /* only numbers are read afterwards */
	return r;
}

/* ---- defaults and keys */

Test(svcconf, defaults)
{
	const char *texts[] = { "", "\n\n", "# nothing\n", "[Service]\n" };

	for (size_t i = 0; i < TD_ARRAY_SIZE(texts); i++) {
		struct svc_config *c = parse_ok(texts[i]);

		cr_expect_str_eq(c->path, "test.conf");
		cr_expect_str_eq(c->directory, "/var/lib/tracerd");
		cr_expect_str_eq(c->cache_directory, "/var/cache/tracerd");
		cr_expect_eq(c->max_size, 1ull << 30);
		cr_expect_eq(c->max_age_ns, 86400 * NS);
		cr_expect_eq(c->scan_interval_ns, 2 * NS);
		cr_expect_eq(c->emergency_window_ns, 1800 * NS);
		cr_expect_eq(c->nrules, 0, "no rule: the service follows nothing");
		cr_expect_eq(svc_config_needs(c), 0);
		svc_config_free(c);
	}
	svc_config_free(NULL);
}

Test(svcconf, every_key)
{
	struct svc_config *c = parse_ok("[Service]\n"
					"Directory=/srv/profiles\n"
					"MaxSize=512M\n"
					"MaxAge=7d\n"
					"ScanInterval=500ms\n"
					"EmergencyWindow=10min\n"
					"CacheDirectory=/srv/cache/\n"
					"\n"
					"[Target ledger]\n"
					"Unit=ledger.service\n"
					"Frequency=199\n"
					"Mode=wall\n"
					"\n"
					"[Target py-web.1]\n"
					"Comm=python3*\n"
					"Exe=/usr/bin/python3*\n"
					"Cmdline=manage\\.py runserver( |$)\n"
					"Unit=web@*.service\n");
	const struct svc_rule *r;

	cr_expect_str_eq(c->directory, "/srv/profiles");
	cr_expect_eq(c->max_size, 512ull << 20);
	cr_expect_eq(c->max_age_ns, 7 * 86400 * NS);
	cr_expect_eq(c->scan_interval_ns, NS / 2);
	cr_expect_eq(c->emergency_window_ns, 600 * NS);
	cr_expect_str_eq(c->cache_directory, "/srv/cache");
	cr_assert_eq(c->nrules, 2);
	r = &c->rules[0];
	cr_expect_str_eq(r->name, "ledger");
	cr_expect_str_eq(r->unit, "ledger.service");
	cr_expect_null(r->comm);
	cr_expect_null(r->exe);
	cr_expect_null(r->cmdline);
	cr_expect_eq(r->hz, 199);
	cr_expect_eq(r->mode, REC_MODE_WALL);
	cr_expect_eq(r->line, 9);
	r = &c->rules[1];
	cr_expect_str_eq(r->name, "py-web.1");
	cr_expect_str_eq(r->comm, "python3*");
	cr_expect_str_eq(r->exe, "/usr/bin/python3*");
	cr_expect_str_eq(r->cmdline, "manage\\.py runserver( |$)");
	cr_expect_str_eq(r->unit, "web@*.service");
	cr_expect_eq(r->hz, 99, "default");
	cr_expect_eq(r->mode, REC_MODE_CPU, "default");
	cr_expect_eq(r->line, 14);
	cr_expect_eq(svc_config_needs(c),
		SVC_NEED_COMM | SVC_NEED_EXE | SVC_NEED_CMDLINE | SVC_NEED_UNIT);
	svc_config_free(c);

	c = parse_ok("[Target a]\nComm=a\n");
	cr_expect_eq(svc_config_needs(c), SVC_NEED_COMM, "only what the rules look at");
	svc_config_free(c);
}

Test(svcconf, sizes)
{
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {
		{ "512M", 512ull << 20 },
		{ "2G", 2ull << 30 },
		{ "1048576", 1ull << 20 },
		{ "1048576B", 1ull << 20 },
		{ "2048K", 2ull << 20 },
		{ "2GiB", 2ull << 30 },
		{ "2GB", 2ull << 30 },
		{ "3g", 3ull << 30 },
		{ "1T", 1ull << 40 },
		{ "1024T", 1ull << 50 },
	};
	static const char *const bad[] = { "100K", "1048575", "1025T", "-1", "1.5G", "2X", "G",
		"2 G", "2Gi", "18446744073709551616", "99999999999999999999T", "0" };

	for (size_t i = 0; i < TD_ARRAY_SIZE(good); i++) {
		struct svc_config *c = service_ok("MaxSize", good[i].s);

		cr_expect_eq(c->max_size, good[i].v, "%s", good[i].s);
		svc_config_free(c);
	}
	for (size_t i = 0; i < TD_ARRAY_SIZE(bad); i++)
		service_bad("MaxSize", bad[i], "1M to 1024T");
}

Test(svcconf, durations)
{
	static const struct {
		const char *key, *s;
		uint64_t ns;
	} good[] = {
		{ "MaxAge", "30min", 1800 * NS },
		{ "MaxAge", "2h", 7200 * NS },
		{ "MaxAge", "7d", 7 * 86400 * NS },
		{ "MaxAge", "1w", 7 * 86400 * NS },
		{ "MaxAge", "1h 30min", 5400 * NS },
		{ "MaxAge", "1h30m", 5400 * NS },
		{ "MaxAge", "1.5h", 5400 * NS },
		{ "MaxAge", "60", 60 * NS },
		{ "MaxAge", "365d", 365 * 86400 * NS },
		{ "MaxAge", "2 hours", 7200 * NS },
		{ "ScanInterval", "100ms", NS / 10 },
		{ "ScanInterval", "10s", 10 * NS },
		{ "ScanInterval", "0.25s", NS / 4 },
		{ "ScanInterval", "1500msec", 3 * NS / 2 },
		{ "EmergencyWindow", "1s", NS },
		{ "EmergencyWindow", "30s", 30 * NS },
	};
	static const struct {
		const char *key, *s, *range;
	} bad[] = {
		{ "MaxAge", "59s", "1min to 365d" },
		{ "MaxAge", "366d", "1min to 365d" },
		{ "MaxAge", "abc", "1min to 365d" },
		{ "MaxAge", "10 parsecs", "1min to 365d" },
		{ "MaxAge", "1h 5", "1min to 365d" },
		{ "MaxAge", "-5min", "1min to 365d" },
		{ "MaxAge", ".5h", "1min to 365d" },
		{ "MaxAge", "5.h", "1min to 365d" },
		{ "MaxAge", "99999999999999999999d", "1min to 365d" },
		{ "MaxAge", "10M", "1min to 365d" },
		{ "ScanInterval", "99ms", "100ms to 10s" },
		{ "ScanInterval", "11s", "100ms to 10s" },
		{ "ScanInterval", "0", "100ms to 10s" },
		{ "EmergencyWindow", "999ms", "1s to 365d" },
		{ "EmergencyWindow", "1y", "1s to 365d" },
	};

	for (size_t i = 0; i < TD_ARRAY_SIZE(good); i++) {
		struct svc_config *c = service_ok(good[i].key, good[i].s);
		uint64_t got = !strcmp(good[i].key, "MaxAge")	     ? c->max_age_ns
			       : !strcmp(good[i].key, "ScanInterval") ? c->scan_interval_ns
								      : c->emergency_window_ns;

		cr_expect_eq(got, good[i].ns, "%s=%s: %llu ns", good[i].key, good[i].s,
			(unsigned long long)got);
		svc_config_free(c);
	}
	for (size_t i = 0; i < TD_ARRAY_SIZE(bad); i++)
		service_bad(bad[i].key, bad[i].s, bad[i].range);
}

Test(svcconf, directory)
{
	static const struct {
		const char *s, *want;
	} good[] = {
		{ "/srv/tracerd", "/srv/tracerd" },
		{ "/srv/tracerd///", "/srv/tracerd" },
		{ "/", "/" },
		{ "\"/srv/with space\"", "/srv/with space" },
	};
	char *longdir = malloc(4000);

	for (size_t i = 0; i < TD_ARRAY_SIZE(good); i++) {
		struct svc_config *c = service_ok("Directory", good[i].s);

		cr_expect_str_eq(c->directory, good[i].want);
		svc_config_free(c);
	}
	service_bad("Directory", "var/lib/tracerd", "absolute path");
	service_bad("Directory", "./here", "absolute path");
	service_bad("Directory", "~/profiles", "absolute path");
	longdir[0] = '/';
	memset(longdir + 1, 'd', 3998);
	longdir[3999] = '\0';
	{
		char *text = malloc(4100);

		snprintf(text, 4100, "[Service]\nDirectory=%s\n", longdir);
		parse_bad_at(text, 2, "Directory=/ddd", "shorter path");
		free(text);
	}
	free(longdir);
}

Test(svcconf, cache_directory)
{
	struct svc_config *c = service_ok("CacheDirectory", "/srv/cache///");

	cr_expect_str_eq(c->cache_directory, "/srv/cache");
	svc_config_free(c);
	c = service_ok("CacheDirectory", "none");
	cr_expect_null(c->cache_directory, "none: no cache");
	svc_config_free(c);
	service_bad("CacheDirectory", "cache", "absolute path");
	service_bad("CacheDirectory", "", "empty value");
}

Test(svcconf, frequency_and_mode)
{
	static const char *const bad_hz[] = { "0", "10001", "99Hz", "-1", "1e3", "99.5", "100000",
		"0x10" };

	cr_expect_eq(target_ok("Frequency", "1").hz, 1);
	cr_expect_eq(target_ok("Frequency", "10000").hz, 10000);
	cr_expect_eq(target_ok("Frequency", "0099").hz, 99);
	for (size_t i = 0; i < TD_ARRAY_SIZE(bad_hz); i++)
		target_bad("Frequency", bad_hz[i], "from 1 to 10000");
	cr_expect_eq(target_ok("Mode", "cpu").mode, REC_MODE_CPU);
	cr_expect_eq(target_ok("Mode", "wall").mode, REC_MODE_WALL);
	target_bad("Mode", "CPU", "cpu (where threads use CPU) or wall");
	target_bad("Mode", "both", "cpu (where threads use CPU) or wall");
}

Test(svcconf, max_processes)
{
	static const char *const bad[] = { "0", "65537", "1000000", "-1", "1e3", "10k" };
	struct svc_config *c = parse_ok("[Target t]\nComm=x\n");

	cr_expect_eq(c->rules[0].max_procs, 1024, "the default: no limit below 1000");
	svc_config_free(c);
	cr_expect_eq(target_ok("MaxProcesses", "1").max_procs, 1);
	cr_expect_eq(target_ok("MaxProcesses", "50").max_procs, 50);
	cr_expect_eq(target_ok("MaxProcesses", "65536").max_procs, 65536);
	for (size_t i = 0; i < TD_ARRAY_SIZE(bad); i++)
		target_bad("MaxProcesses", bad[i], "from 1 to 65536");
}

Test(svcconf, kernel_frames)
{
	struct svc_config *c = parse_ok("[Target t]\nComm=x\n");

	cr_expect_not(c->rules[0].no_kernel, "the default: kernel frames, as record's");
	svc_config_free(c);
	cr_expect_not(target_ok("KernelFrames", "yes").no_kernel);
	cr_expect(target_ok("KernelFrames", "no").no_kernel);
	target_bad("KernelFrames", "No", "must be yes");
	target_bad("KernelFrames", "0", "or no (user space only");
	target_bad("KernelFrames", "", "empty value");
	parse_bad_at("[Service]\nKernelFrames=no\n", 2, NULL, "belongs in [Target NAME]");
}

Test(svcconf, matching_keys_checked)
{
	regex_t re;
	char why[128];
	int e;

	/* regerror's own words */
	e = regcomp(&re, "(unclosed", REG_EXTENDED | REG_NOSUB);
	cr_assert_neq(e, 0);
	regerror(e, &re, why, sizeof(why));
	parse_bad_at("[Target t]\nCmdline=(unclosed\n", 2, "Cmdline=(unclosed", why);
	parse_bad_at("[Target t]\nCmdline=a{2,1}\n", 2, NULL, "not a POSIX extended regular");
	parse_bad_at("[Target t]\nComm=this-name-is-too-long\n", 2, NULL, "first 15 characters");
	{
		struct svc_config *c = parse_ok("[Target t]\nComm=exactly15chars_\n"
						"[Target u]\nComm=this-name-is-too-long*\n");

		cr_expect_str_eq(c->rules[0].comm, "exactly15chars_");
		svc_config_free(c);
	}
	parse_bad_at("[Target t]\nExe=ledger\n", 2, NULL, "full path");
	parse_bad_at("[Target t]\nExe=*\n", 2, NULL, "full path");
	parse_bad_at("[Target t]\nUnit=/system.slice/ledger.service\n", 2, NULL,
		"not a cgroup path");
	parse_bad_at("[Target t]\nUnit=system.slice\n", 2, NULL, "cannot match a slice");
	parse_bad_at("[Target t]\nUnit=*.slice\n", 2, NULL, "cannot match a slice");
	parse_bad_at("[Target t]\nUnit=ledger\n", 2, NULL, "give ledger.service");
}

/* ---- syntax */

Test(svcconf, comments_quotes_whitespace)
{
	struct svc_config *c = parse_ok("\xef\xbb\xbf# a comment\r\n"
					"; another comment\n"
					"   # an indented comment\n"
					"\t\n"
					"  [ Service ]  \n"
					"  Directory \t=\t  \"/srv/x y\"  \r\n"
					"MaxSize=\"2G\"\n"
					"[Target   \"web\"  ]\n"
					"Comm = \"a b\"\n"
					"Cmdline=--name=\"x\" # not a comment\n"
					"Unit=\"\"\"q.service\"\n"
					"[Target plain]\n"
					"Exe=/usr/bin/*\n"
					"Mode=wall"); /* no newline at the end */

	cr_expect_str_eq(c->directory, "/srv/x y");
	cr_expect_eq(c->max_size, 2ull << 30);
	cr_assert_eq(c->nrules, 2);
	cr_expect_str_eq(c->rules[0].name, "web");
	cr_expect_str_eq(c->rules[0].comm, "a b");
	cr_expect_str_eq(c->rules[0].cmdline, "--name=\"x\" # not a comment",
		"only a whole value's quotes are removed; '#' later on is text");
	cr_expect_str_eq(c->rules[0].unit, "\"\"q.service", "the outer quotes only");
	cr_expect_eq(c->rules[0].line, 8);
	cr_expect_str_eq(c->rules[1].exe, "/usr/bin/*");
	cr_expect_eq(c->rules[1].mode, REC_MODE_WALL);
	svc_config_free(c);

	parse_bad_at("[Target t]\nComm=\"abc\n", 2, "Comm=\"abc", "quote the whole value");
	parse_bad_at("[Target t]\nComm=\"\n", 2, NULL, "quote the whole value");
	parse_bad_at("[Target t]\nComm=\n", 2, "Comm=", "empty value");
	parse_bad_at("[Target t]\nComm=\"\"\n", 2, NULL, "empty value");
	parse_bad_at("[Target t]\nComm=   \n", 2, NULL, "empty value");
}

/* ---- every refusal, with its line */

Test(svcconf, structure_errors)
{
	parse_bad_at("# x\n[Foo]\n", 2, "[Foo]", "[Service] and [Target NAME]");
	parse_bad_at("[service]\n", 1, "[service]", "case-sensitive");
	parse_bad_at("[Targets x]\n", 1, NULL, "unknown section");
	parse_bad_at("[Service\n", 1, "[Service", "must end with ']'");
	parse_bad_at("\n\nComm=x\n", 3, "Comm=x", "under [Target NAME]");
	parse_bad_at("MaxSize=1G\n[Service]\n", 1, NULL, "under [Service]");
	parse_bad_at("Bogus=1\n", 1, "Bogus=1", "outside any section");
	parse_bad_at("[Service]\nhello world\n", 2, "hello world", "Key=Value");
	parse_bad_at("[Service]\n = 5\n", 2, "= 5", "no key");
	parse_bad_at("[Service]\n[Target a]\nComm=a\n[Service]\n", 4, "[Service]", "line 1");
	parse_bad_at("[Target a]\nComm=a\n\n[Target b]\nComm=b\n[Target a]\nComm=c\n", 6,
		"[Target a]", "line 1");
}

Test(svcconf, unknown_keys_name_the_valid_ones)
{
	parse_bad_at("[Service]\nFrob=1\n", 2, "Frob=1",
		"Directory, MaxSize, MaxAge, ScanInterval, EmergencyWindow");
	parse_bad_at("[Target t]\nComm=x\nFrob=1\n", 3, "Frob=1",
		"Comm, Exe, Cmdline, Unit, Frequency, Mode, MaxProcesses, KernelFrames");
	parse_bad_at("[Service]\nComm=x\n", 2, NULL, "belongs in [Target NAME]");
	parse_bad_at("[Target t]\nDirectory=/x\n", 2, NULL, "belongs in [Service]");
	parse_bad_at("[Target t]\ncomm=x\n", 2, NULL, "did you mean Comm=");
	parse_bad_at("[Service]\nmaxsize=1G\n", 2, NULL, "did you mean MaxSize=");
	/* case-insensitively a key of the other section: the list, not a guess */
	parse_bad_at("[Service]\ncomm=x\n", 2, NULL, "the keys there are Directory");
}

Test(svcconf, names)
{
	static const char *const bad[] = { "[Target]", "[Target ]", "[Target .]", "[Target ..]",
		"[Target a/b]", "[Target a b]", "[Target \"\"]", "[Target a\tb]", "[Target ä]",
		"[Target 0123456789012345678901234567890123456789012345678901234567890123]" };
	static const char *const good[] = { "a", "A_b-c.d", "..x", ".hidden", "123",
		"012345678901234567890123456789012345678901234567890123456789012" };

	for (size_t i = 0; i < TD_ARRAY_SIZE(bad); i++) {
		char text[256];

		snprintf(text, sizeof(text), "# c\n%s\nComm=x\n", bad[i]);
		parse_bad_at(text, 2, NULL, "not a target name");
	}
	for (size_t i = 0; i < TD_ARRAY_SIZE(good); i++) {
		char text[256];
		struct svc_config *c;

		snprintf(text, sizeof(text), "[Target %s]\nComm=x\n", good[i]);
		c = parse_ok(text);
		cr_expect_str_eq(c->rules[0].name, good[i]);
		svc_config_free(c);
	}
}

Test(svcconf, target_without_a_matching_key)
{
	parse_bad_at("[Service]\n\n[Target idle]\nFrequency=10\nMode=wall\n", 3, "[Target idle]",
		"at least one of Comm=, Exe=, Cmdline= or Unit=");
	parse_bad_at("[Target a]\nComm=a\n[Target empty]\n[Target c]\nComm=c\n", 3,
		"[Target empty]", "no matching key");
	parse_bad_at("[Target empty]\n[Service]\n", 1, "[Target empty]", "no matching key");
}

Test(svcconf, key_given_twice)
{
	parse_bad_at("[Target t]\nComm=a\nComm=b\n", 3, "Comm=b", "twice");
	parse_bad_at("[Service]\nMaxAge=1h\n\nMaxAge=2h\n", 4, NULL, "first on line 2");
	/* once per section: two targets may each give it */
	svc_config_free(parse_ok("[Target a]\nComm=a\n[Target b]\nComm=a\n"));
}

Test(svcconf, too_many_rules)
{
	char *text = malloc(64 * 1024);
	size_t off = 0;
	struct svc_config *c;

	for (unsigned i = 0; i < SVC_MAX_RULES; i++)
		off += (size_t)sprintf(text + off, "[Target t%u]\nComm=c%u\n", i, i);
	c = parse_ok(text);
	cr_expect_eq(c->nrules, SVC_MAX_RULES);
	svc_config_free(c);
	sprintf(text + off, "[Target last]\nComm=x\n");
	parse_bad_at(text, 2 * SVC_MAX_RULES + 1, "[Target last]", "more than 64 targets");
	free(text);
}

Test(svcconf, long_lines_and_nul)
{
	char *text = malloc(8192);
	struct svc_config *c;

	/* 4096 bytes is the longest line */
	strcpy(text, "[Service]\n#");
	memset(text + 11, 'x', 4095);
	strcpy(text + 11 + 4095, "\nMaxSize=2G\n");
	c = parse_ok(text);
	cr_expect_eq(c->max_size, 2ull << 30);
	svc_config_free(c);
	strcpy(text, "[Service]\n#");
	memset(text + 11, 'x', 4096);
	strcpy(text + 11 + 4096, "\n");
	parse_bad_at(text, 2, "#xxxx", "longer than 4096 bytes");
	free(text);

	{
		static const char nul[] = "[Target t]\nComm=a\0b\n";
		struct svc_config_error e;

		c = NULL;
		cr_expect_eq(svc_config_parse("n", nul, sizeof(nul) - 1, &c, &e), -EINVAL);
		cr_expect_null(c);
		cr_expect_eq(e.line, 2);
		cr_expect(strstr(e.reason, "NUL byte"), "%s", e.reason);
	}
	{
		struct svc_config_error e;
		size_t big = (1u << 20) + 1;
		char *huge = malloc(big);

		memset(huge, '\n', big);
		c = NULL;
		cr_expect_eq(svc_config_parse("n", huge, big, &c, &e), -EFBIG);
		cr_expect_null(c);
		cr_expect_eq(e.line, 0);
		cr_expect(strstr(e.reason, "larger than 1 MiB"), "%s", e.reason);
		/* exactly 1 MiB is fine */
		cr_expect_eq(svc_config_parse("n", huge, big - 1, &c, &e), 0);
		svc_config_free(c);
		free(huge);
	}
	/* control characters are not copied into a message */
	{
		struct svc_config_error e;

		c = NULL;
		{
			static const char esc[] = "[Service]\nMaxAge=\x1b[31m\n";

			cr_expect_lt(svc_config_parse("n", esc, strlen(esc), &c, &e), 0);
		}
		cr_expect_null(strchr(e.text, '\x1b'), "%s", e.text);
		cr_expect_null(strchr(e.reason, '\x1b'), "%s", e.reason);
	}
	/* ret_err may be NULL */
	c = NULL;
	cr_expect_eq(svc_config_parse("n", "[Foo]\n", 6, &c, NULL), -EINVAL);
	cr_expect_null(c);
}

Test(svcconf, out_of_memory)
{
	static const char text[] = "[Service]\nDirectory=/srv/t\n"
				   "[Target a]\nComm=a*\nExe=/bin/*\nCmdline=x\nUnit=a.service\n"
				   "[Target b]\nComm=b\n";
	bool done = false;

	for (long n = 1; n < 100 && !done; n++) {
		struct svc_config *c = NULL;
		struct svc_config_error e;
		int r;

		td_fault_arm(TD_FAULT_MALLOC, n);
		r = svc_config_parse("oom", text, sizeof(text) - 1, &c, &e);
		if (td_fault_fired()) {
			cr_expect_eq(r, -ENOMEM, "allocation %ld: %d", n, r);
			cr_expect_null(c);
			cr_expect(strstr(e.reason, "out of memory"), "%s", e.reason);
		} else {
			cr_expect_eq(r, 0);
			cr_expect_eq(c->nrules, 2);
			done = true;
		}
		svc_config_free(c); /* a leak shows under SANITIZE=address */
	}
	td_fault_arm(0, 0);
	cr_expect(done, "the sweep ended");
}

/* ---- load */

static char tmpdir[64];

static void mktmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tracerd-svcconf-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rmtmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", tmpdir);
}

static void put_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	cr_assert_eq(fchmod(fd, mode), 0); /* not the umask's */
	close(fd);
}

Test(svcconf, load, .init = mktmp, .fini = rmtmp)
{
	static const char good[] = "[Service]\nMaxAge=2h\n[Target t]\nComm=t\n";
	struct svc_config *c = NULL;
	struct svc_config_error e;
	char path[128], missing[128];
	char *big;
	int r;

	snprintf(path, sizeof(path), "%s/tracerd.conf", tmpdir);
	put_file(path, good, sizeof(good) - 1, 0644);
	cr_assert_eq(svc_config_load(path, &c, &e), 0, "%s", e.reason);
	cr_expect_str_eq(c->path, path);
	cr_expect_eq(c->max_age_ns, 7200 * NS);
	cr_expect_eq(c->nrules, 1);
	svc_config_free(c);

	/* errors inside the file name it */
	put_file(path, "[Service]\nMaxAge=2 days ago\n", 28, 0600);
	c = NULL;
	cr_expect_eq(svc_config_load(path, &c, &e), -EINVAL);
	cr_expect_null(c);
	cr_expect_str_eq(e.file, path);
	cr_expect_eq(e.line, 2);

	snprintf(missing, sizeof(missing), "%s/nowhere.conf", tmpdir);
	cr_expect_eq(svc_config_load(missing, &c, &e), -ENOENT, "the service tells a missing "
								"file from a bad one");
	cr_expect_null(c);
	cr_expect_str_eq(e.file, missing);
	cr_expect_eq(e.line, 0);
	cr_expect(strstr(e.reason, strerror(ENOENT)), "%s", e.reason);

	cr_expect_eq(svc_config_load(tmpdir, &c, &e), -TD_E_NOTREG);
	cr_expect_eq(e.line, 0);
	cr_expect(strstr(e.reason, "not a regular file"), "%s", e.reason);

	put_file(path, good, sizeof(good) - 1, 0664);
	cr_expect_eq(svc_config_load(path, &c, &e), -TD_E_UNSAFE);
	cr_expect(strstr(e.reason, "chmod go-w"), "%s", e.reason);
	put_file(path, good, sizeof(good) - 1, 0646);
	cr_expect_eq(svc_config_load(path, &c, &e), -TD_E_UNSAFE);

	big = malloc((1u << 20) + 2);
	memset(big, '#', (1u << 20) + 1);
	big[(1u << 20)] = '\n';
	put_file(path, big, (1u << 20) + 1, 0600);
	r = svc_config_load(path, &c, &e);
	cr_expect_eq(r, -EFBIG, "%d", r);
	cr_expect_eq(e.line, 0);
	cr_expect(strstr(e.reason, "larger than 1 MiB"), "%s", e.reason);
	free(big);
	cr_expect_null(c);
}

Test(svcconf, load_refuses_a_file_of_another_user, .init = mktmp, .fini = rmtmp)
{
	struct svc_config *c = NULL;
	struct svc_config_error e;
	char path[128];

	if (geteuid() != 0)
		cr_skip_test("needs root to give a file to another user");
	snprintf(path, sizeof(path), "%s/tracerd.conf", tmpdir);
	put_file(path, "[Service]\n", 10, 0644);
	cr_assert_eq(chown(path, 65534, 65534), 0);
	cr_expect_eq(svc_config_load(path, &c, &e), -TD_E_NOTOWNER);
	cr_expect_null(c);
	cr_expect(strstr(e.reason, "uid 65534"), "%s", e.reason);
}

/* ---- rules across a reload */

Test(svcconf, same_recording)
{
	struct svc_config *a = parse_ok("[Target x]\nComm=a\nFrequency=50\n"
					"[Target y]\nComm=b\nMode=wall\n");
	struct svc_config *b = parse_ok("[Target x]\nExe=/bin/a\nFrequency=50\n"
					"[Target y]\nComm=b\n"
					"[Target z]\nComm=a\nFrequency=50\n");

	cr_expect(svc_rule_same_recording(&a->rules[0], &b->rules[0]),
		"the matching keys changed, the recording did not");
	cr_expect_not(svc_rule_same_recording(&a->rules[1], &b->rules[1]), "mode changed");
	cr_expect_not(svc_rule_same_recording(&a->rules[0], &b->rules[2]), "name changed");
	cr_expect(svc_rule_same_recording(&a->rules[0], &a->rules[0]));
	cr_expect_not(svc_rule_same_recording(NULL, &a->rules[0]));
	svc_config_free(b);
	b = parse_ok("[Target x]\nComm=a\nFrequency=51\n");
	cr_expect_not(svc_rule_same_recording(&a->rules[0], &b->rules[0]), "hz changed");
	svc_config_free(b);
	b = parse_ok("[Target x]\nComm=a\nFrequency=50\nMaxProcesses=10\n");
	cr_expect_not(svc_rule_same_recording(&a->rules[0], &b->rules[0]),
		"max_procs changed: the recorder's tables are of the old size");
	svc_config_free(b);
	b = parse_ok("[Target x]\nComm=a\nFrequency=50\nKernelFrames=no\n");
	cr_expect_not(svc_rule_same_recording(&a->rules[0], &b->rules[0]),
		"kernel frames turned off: the recorder opens its perf events with them");
	svc_config_free(b);
	svc_config_free(a);
}

/* ---- the matcher */

static struct svc_proc *proc(const char *comm, const char *exe, const char *cmdline,
	const char *cgroup)
{
	static struct svc_proc p;

	memset(&p, 0, sizeof(p));
	p.pid = 4242;
	strcpy(p.comm, comm);
	strcpy(p.exe, exe);
	strcpy(p.cmdline, cmdline);
	strcpy(p.cgroup, cgroup);
	return &p;
}

Test(svcconf, match_each_key)
{
	struct svc_config *c = parse_ok("[Target comm]\nComm=led?er*\n"
					"[Target exe]\nExe=*/bin/py*\n"
					"[Target cmd]\nCmdline=^java .*-jar shop\\.jar( |$)\n"
					"[Target unit]\nUnit=web@*.service\n");
	struct svc_proc *p;

	cr_expect_eq(svc_config_match(c, proc("ledger-io", "/x", "x", "/")), 0);
	cr_expect_eq(svc_config_match(c, proc("x", "/usr/bin/python3.11", "x", "/")), 1);
	cr_expect_eq(svc_config_match(c, proc("x", "/usr/local/bin/py", "x", "/")), 1,
		"'*' crosses '/' in Exe=");
	cr_expect_eq(svc_config_match(c, proc("java", "/usr/lib/jvm/bin/java",
					     "java -Xmx1g -jar shop.jar --port 80", "/")),
		2);
	cr_expect_eq(svc_config_match(c, proc("java", "/j", "java -jar shop.jarx", "/")), -1);
	cr_expect_eq(svc_config_match(c, proc("x", "/x", "x", "/system.slice/web@3.service")), 3);
	cr_expect_eq(svc_config_match(c, proc("x", "/x", "x", "/system.slice/db.service")), -1);

	/* a key never matches a field that is empty (unreadable, not read) */
	p = proc("", "", "", "");
	cr_expect_eq(svc_config_match(c, p), -1);
	svc_config_free(c);
	c = parse_ok("[Target any]\nCmdline=.*\n[Target all]\nUnit=*\n");
	cr_expect_eq(svc_config_match(c, proc("x", "/x", "", "")), -1);
	cr_expect_eq(svc_config_match(c, proc("x", "/x", "", "/a.service")), 1);
	svc_config_free(c);
}

Test(svcconf, match_ands_keys_first_rule_wins_no_kernel_threads)
{
	struct svc_config *c = parse_ok("[Target both]\nComm=worker\nUnit=ledger.service\n"
					"[Target name]\nComm=worker\n"
					"[Target later]\nComm=work*\n");
	struct svc_proc *p;

	cr_expect_eq(svc_config_match(c, proc("worker", "/w", "w", "/system.slice/ledger.service")),
		0);
	cr_expect_eq(svc_config_match(c, proc("worker", "/w", "w", "/system.slice/other.service")),
		1, "every key of a rule must match");
	cr_expect_eq(svc_config_match(c, proc("workhorse", "/w", "w", "/")), 2);
	p = proc("worker", "", "", "/system.slice/ledger.service");
	p->kernel = true;
	cr_expect_eq(svc_config_match(c, p), -1, "kernel threads never match");
	cr_expect_eq(svc_config_match(NULL, proc("worker", "", "", "")), -1);
	svc_config_free(c);
}

Test(svcconf, unit_match)
{
	static const struct {
		const char *glob, *path;
		bool match;
	} cases[] = {
		{ "ledger.service", "/system.slice/ledger.service", true },
		{ "ledger.service", "/system.slice/ledger.service/worker", true },
		{ "ledger.service", "/system.slice/ledger.service/a/b/c", true },
		{ "ledger.service", "/system.slice/ledger.service.d", false },
		{ "ledger.service", "/system.slice/other.service", false },
		{ "ledger*.service", "/system.slice/ledger-db.service", true },
		{ "*.service", "/system.slice/ledger.service/worker", true },
		{ "worker", "/system.slice/ledger.service/worker", true },
		{ "app.service", "/user.slice/user-1000.slice/user@1000.service/app.slice/app.service",
			true },
		{ "user@*.service",
			"/user.slice/user-1000.slice/user@1000.service/app.slice/app.service", true },
		{ "session-*.scope", "/user.slice/user-1000.slice/session-3.scope", true },
		{ "user-1000*", "/user.slice/user-1000.slice/session-3.scope", false },
		{ "system.slice", "/system.slice/ledger.service", false },
		{ "*", "/system.slice", false },
		{ "*", "/", false },
		{ "*", "", false },
		{ "*.service", "/", false },
		{ "init.scope", "/init.scope", true },
		{ "docker-*.scope", "/system.slice/docker-0123abcd.scope", true },
		{ "mygroup", "/mygroup", true },
		{ "ledger.service", "//system.slice//ledger.service//", true },
	};

	for (size_t i = 0; i < TD_ARRAY_SIZE(cases); i++)
		cr_expect_eq(svc_unit_match(cases[i].glob, cases[i].path), cases[i].match,
			"'%s' on '%s'", cases[i].glob, cases[i].path);
	cr_expect_not(svc_unit_match(NULL, "/a.service"));
	cr_expect_not(svc_unit_match("*", NULL));
}

/* ---- svc_proc_read on a fake tree */

static void fake_file(const char *pid, const char *name, const void *data, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, pid, name);
	put_file(path, data, len, 0644);
}

static void fake_text(const char *pid, const char *name, const char *text)
{
	fake_file(pid, name, text, strlen(text));
}

static void fake_exe(const char *pid, const char *target)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s/exe", tmpdir, pid);
	cr_assert_eq(symlink(target, path), 0);
}

/* stat with comm, flags (field 9) and start time (field 22) */
static void fake_stat(const char *pid, const char *comm, unsigned flags,
	unsigned long long start)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf),
		"%s (%s) S 1 %s %s 0 -1 %u 120 0 0 0 3 1 0 0 20 0 1 0 %llu 1234567 100 "
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, comm, pid, pid, flags, start);

	fake_file(pid, "stat", buf, (size_t)n);
}

Test(svcconf, proc_read_fake_tree, .init = mktmp, .fini = rmtmp)
{
	static const char cmdline[] = "ledger\0--port\0\0008080\0";
	static const char cgroup[] = "12:cpuset:/\n"
				     "11:memory:/system.slice/ledger.service\n"
				     "1:name=systemd:/system.slice/from-v1.service\n"
				     "10::/decoy.service\n"
				     "0::/system.slice/ledger.service\n";
	unsigned all = SVC_NEED_COMM | SVC_NEED_EXE | SVC_NEED_CMDLINE | SVC_NEED_UNIT;
	struct svc_config *c;
	struct svc_proc p;

	fake_stat("123", "(a b) c", 0x400140, 98765);
	fake_exe("123", "/usr/bin/ledger (deleted)");
	fake_file("123", "cmdline", cmdline, sizeof(cmdline) - 1);
	fake_file("123", "cgroup", cgroup, sizeof(cgroup) - 1);
	cr_assert_eq(svc_proc_read(tmpdir, 123, all, &p), 0);
	cr_expect_eq(p.pid, 123);
	cr_expect_str_eq(p.comm, "(a b) c", "comm ends at the last ')'");
	cr_expect_eq(p.start_time, 98765);
	cr_expect_not(p.kernel);
	cr_expect_str_eq(p.exe, "/usr/bin/ledger", "' (deleted)' stripped");
	cr_expect_str_eq(p.cmdline, "ledger --port  8080", "NULs as spaces, the last dropped");
	cr_expect_str_eq(p.cgroup, "/system.slice/ledger.service", "the 0:: line");

	c = parse_ok("[Target t]\nComm=(a b)*\nExe=/usr/bin/ledger\nCmdline=--port +8080$\n"
		     "Unit=ledger.service\n");
	cr_expect_eq(svc_config_needs(c), all);
	cr_expect_eq(svc_config_match(c, &p), 0);
	svc_config_free(c);

	/* only what is needed: stat's fields always */
	memset(&p, 0x55, sizeof(p));
	cr_assert_eq(svc_proc_read(tmpdir, 123, 0, &p), 0);
	cr_expect_str_eq(p.comm, "(a b) c");
	cr_expect_eq(p.start_time, 98765);
	cr_expect_str_eq(p.exe, "");
	cr_expect_str_eq(p.cmdline, "");
	cr_expect_str_eq(p.cgroup, "");
	cr_assert_eq(svc_proc_read(tmpdir, 123, SVC_NEED_UNIT, &p), 0);
	cr_expect_str_eq(p.exe, "");
	cr_expect_str_eq(p.cgroup, "/system.slice/ledger.service");

	/* a kernel thread: PF_KTHREAD, no exe, empty cmdline */
	fake_stat("2", "kthreadd", 0x208040, 5);
	fake_file("2", "cmdline", "", 0);
	fake_text("2", "cgroup", "0::/\n");
	cr_assert_eq(svc_proc_read(tmpdir, 2, all, &p), 0);
	cr_expect(p.kernel);
	cr_expect_str_eq(p.comm, "kthreadd");
	cr_expect_str_eq(p.exe, "");
	cr_expect_str_eq(p.cmdline, "");
	cr_expect_str_eq(p.cgroup, "/");
	c = parse_ok("[Target k]\nComm=kthreadd\n");
	cr_expect_eq(svc_config_match(c, &p), -1);
	svc_config_free(c);

	/* gone: no directory, or a directory without stat */
	memset(&p, 0x55, sizeof(p));
	cr_expect_eq(svc_proc_read(tmpdir, 999, all, &p), -ESRCH);
	cr_expect_eq(p.pid, 0x55555555, "nothing written on failure");
	fake_text("77", "cmdline", "x");
	cr_expect_eq(svc_proc_read(tmpdir, 77, all, &p), -ESRCH);
	cr_expect_eq(svc_proc_read(tmpdir, 0, all, &p), -ESRCH);
	cr_expect_eq(svc_proc_read(tmpdir, -1, all, &p), -ESRCH);

	/* a stat it cannot read */
	fake_text("78", "stat", "78 (no close paren S 1\n");
	cr_expect_eq(svc_proc_read(tmpdir, 78, 0, &p), -TD_E_CORRUPT);
	fake_text("79", "stat", "79 (short) S 1 2 3\n");
	cr_expect_eq(svc_proc_read(tmpdir, 79, 0, &p), -TD_E_CORRUPT);
}

Test(svcconf, proc_read_fake_cgroups_and_long_fields, .init = mktmp, .fini = rmtmp)
{
	static const char v1[] = "3:cpu,cpuacct:/system.slice/a.service\n"
				 "1:name=systemd:/system.slice/a.service\n";
	char *buf = malloc(8192);
	struct svc_proc p;
	size_t n;

	/* cgroup v1 only: systemd's own hierarchy */
	fake_stat("10", "a", 0, 1);
	fake_file("10", "cgroup", v1, sizeof(v1) - 1);
	cr_assert_eq(svc_proc_read(tmpdir, 10, SVC_NEED_UNIT, &p), 0);
	cr_expect_str_eq(p.cgroup, "/system.slice/a.service");

	/* no usable line, and a path too long to hold: "" */
	fake_stat("11", "a", 0, 1);
	fake_text("11", "cgroup", "3:cpu:/x\n");
	cr_assert_eq(svc_proc_read(tmpdir, 11, SVC_NEED_UNIT, &p), 0);
	cr_expect_str_eq(p.cgroup, "");
	n = (size_t)sprintf(buf, "0::/");
	memset(buf + n, 'x', 1100);
	n += 1100;
	buf[n++] = '\n';
	fake_file("11", "cgroup", buf, n);
	cr_assert_eq(svc_proc_read(tmpdir, 11, SVC_NEED_UNIT, &p), 0);
	cr_expect_str_eq(p.cgroup, "", "not cut: a cut path could match what it is not");

	/* a cmdline longer than the field: cut, terminated */
	memset(buf, 'a', 8192);
	fake_file("11", "cmdline", buf, 8192);
	cr_assert_eq(svc_proc_read(tmpdir, 11, SVC_NEED_CMDLINE, &p), 0);
	cr_expect_eq(strlen(p.cmdline), sizeof(p.cmdline) - 1);

	/* a comm longer than the kernel's (as a kernel thread's stat may
	 * show): cut to 15 */
	fake_stat("12", "kworker/u8:2-events_unbound", 0x208040, 1);
	cr_assert_eq(svc_proc_read(tmpdir, 12, 0, &p), 0);
	cr_expect_str_eq(p.comm, "kworker/u8:2-ev");
	cr_expect(p.kernel);

	/* an exe that cannot be read while the process is there: "" */
	fake_stat("13", "a", 0, 1);
	cr_assert_eq(svc_proc_read(tmpdir, 13, SVC_NEED_EXE, &p), 0);
	cr_expect_str_eq(p.exe, "");
	free(buf);
}

/* ---- svc_proc_read on the real /proc */

Test(svcconf, proc_read_self)
{
	unsigned all = SVC_NEED_COMM | SVC_NEED_EXE | SVC_NEED_CMDLINE | SVC_NEED_UNIT;
	struct svc_proc p;
	struct td_proc_id id;
	char comm[32], exe[4096], raw[4096], cg[4096], want_cg[1024] = "";
	struct svc_config *c;
	char text[128];
	ssize_t n;
	int len;

	cr_assert_eq(svc_proc_read("/proc", getpid(), all, &p), 0);
	cr_expect_eq(p.pid, getpid());
	cr_expect_not(p.kernel);
	cr_assert_eq(td_proc_id_read(getpid(), &id), 0);
	cr_expect_eq(p.start_time, id.start_time);

	cr_assert_gt(td_read_text(AT_FDCWD, "/proc/self/comm", comm, sizeof(comm)), 0);
	comm[strcspn(comm, "\n")] = '\0';
	cr_expect_str_eq(p.comm, comm);

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	cr_expect_str_eq(p.exe, exe);

	len = td_read_text(AT_FDCWD, "/proc/self/cmdline", raw, sizeof(raw));
	cr_assert_gt(len, 0);
	cr_expect_eq(strncmp(p.cmdline, raw, strlen(raw)), 0, "argv[0] first: '%s'", p.cmdline);
	cr_expect_null(memchr(p.cmdline, '\0', strlen(p.cmdline)));

	if (td_read_text(AT_FDCWD, "/proc/self/cgroup", cg, sizeof(cg)) > 0) {
		char *l = strstr(cg, "0::");

		if (l && (l == cg || l[-1] == '\n'))
			snprintf(want_cg, sizeof(want_cg), "%.*s", (int)strcspn(l + 3, "\n"), l + 3);
	}
	if (want_cg[0])
		cr_expect_str_eq(p.cgroup, want_cg);

	/* and the matcher takes it */
	snprintf(text, sizeof(text), "[Target self]\nComm=%s\nExe=*/%s\n", p.comm,
		strrchr(exe, '/') + 1);
	c = parse_ok(text);
	cr_expect_eq(svc_config_match(c, &p), 0);
	svc_config_free(c);
}

Test(svcconf, proc_read_gone_and_kernel_threads)
{
	struct svc_proc p;
	char comm[32];
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_expect_eq(svc_proc_read("/proc", child, SVC_NEED_EXE | SVC_NEED_CMDLINE, &p), -ESRCH,
		"a reaped child is gone");

	/* kthreadd is PID 2 outside a PID namespace */
	if (td_read_text(AT_FDCWD, "/proc/2/comm", comm, sizeof(comm)) <= 0 ||
		strcmp(comm, "kthreadd\n"))
		cr_skip_test("PID 2 is not kthreadd here (a PID namespace): no kernel thread "
			     "to read");
	cr_assert_eq(svc_proc_read("/proc", 2, SVC_NEED_EXE | SVC_NEED_CMDLINE | SVC_NEED_UNIT,
			     &p),
		0);
	cr_expect(p.kernel);
	cr_expect_str_eq(p.comm, "kthreadd");
	cr_expect_str_eq(p.exe, "");
	cr_expect_str_eq(p.cmdline, "");
}

/* ---- the examples the project ships */

static char *slurp(const char *path, size_t *ret_len)
{
	char *buf = malloc(1u << 20);
	int n = td_read_text(AT_FDCWD, path, buf, 1u << 20);

	cr_assert_gt(n, 0, "%s: %s", path, strerror(-n));
	*ret_len = (size_t)n;
	return buf;
}

Test(svcconf, installed_example_follows_nothing_until_edited)
{
	struct svc_config *c, *def = parse_ok("");
	struct svc_config_error e;
	size_t len, off = 0;
	char *text = slurp(TD_SOURCE_DIR "/systemd/tracerd.conf", &len), *un;

	cr_assert_eq(svc_config_parse("tracerd.conf", text, len, &c, &e), 0, "%u: %s: %s", e.line,
		e.text, e.reason);
	cr_expect_eq(c->nrules, 0, "as installed it records nothing");
	svc_config_free(c);

	/* "#Key=" and "#[" are settings to uncomment; "# " is prose */
	un = malloc(len + 1);
	for (size_t i = 0; i < len; i++) {
		bool bol = i == 0 || text[i - 1] == '\n';

		if (bol && text[i] == '#' && i + 1 < len &&
			(text[i + 1] == '[' || (text[i + 1] >= 'A' && text[i + 1] <= 'Z')))
			continue;
		un[off++] = text[i];
	}
	cr_assert_eq(svc_config_parse("uncommented", un, off, &c, &e), 0, "%u: %s: %s", e.line,
		e.text, e.reason);
	cr_expect_eq(c->nrules, 2, "two example targets");
	cr_expect_str_eq(c->directory, def->directory, "the values shown are the defaults");
	cr_expect_eq(c->max_size, def->max_size);
	cr_expect_eq(c->max_age_ns, def->max_age_ns);
	cr_expect_eq(c->scan_interval_ns, def->scan_interval_ns);
	cr_expect_eq(c->emergency_window_ns, def->emergency_window_ns);
	cr_expect_str_eq(c->cache_directory, def->cache_directory);
	svc_config_free(c);
	svc_config_free(def);
	free(un);
	free(text);
}

Test(svcconf, man_page_example_parses)
{
	struct svc_config *c;
	struct svc_config_error e;
	size_t len;
	char *man = slurp(TD_SOURCE_DIR "/man/tracerd.conf.5", &len);
	char *ex = strstr(man, "\n.Sh EXAMPLES\n"), *start, *end;

	cr_assert_not_null(ex);
	start = strstr(ex, "\n.Bd -literal");
	cr_assert_not_null(start);
	start = strchr(start + 1, '\n') + 1;
	end = strstr(start, "\n.Ed\n");
	cr_assert_not_null(end);
	cr_assert_null(memchr(start, '\\', (size_t)(end - start)), "no roff escapes to undo");
	cr_assert_eq(svc_config_parse("tracerd.conf.5", start, (size_t)(end - start) + 1, &c, &e), 0,
		"%u: %s: %s", e.line, e.text, e.reason);
	cr_expect_eq(c->nrules, 2);
	svc_config_free(c);
	free(man);
}
