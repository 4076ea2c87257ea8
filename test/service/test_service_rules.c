/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rules as users write them (service/config.c, service/match.c): Exe=
 * through a symbolic link matches the process whose exe is the link's
 * target (the fixed part of the glob resolved at load), MaxEmergencyDumps=,
 * and `tracerd service --check` listing what each rule matches now. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../service/service.h"
#include "../helpers.h"

static char tmp[64];

static void mktmp(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/tracerd-rules-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
}

static void rmtmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(svcrules, .init = mktmp, .fini = rmtmp, .timeout = 60);

static struct svc_config *parse(const char *text)
{
	struct svc_config *c = NULL;
	struct svc_config_error e = { 0 };

	cr_assert_eq(svc_config_parse("test.conf", text, strlen(text), &c, &e), 0,
		"refused: %u: %s: %s", e.line, e.text, e.reason);
	return c;
}

static const struct svc_proc *proc_with_exe(const char *exe)
{
	static struct svc_proc p;

	memset(&p, 0, sizeof(p));
	p.pid = 4242;
	strcpy(p.comm, "x");
	snprintf(p.exe, sizeof(p.exe), "%s", exe);
	return &p;
}

/* Debian's /usr/bin/redis-server is a link to redis-check-rdb: a rule
 * naming the link follows the process, whose exe is the target; so does
 * a glob below a linked directory; a path that does not exist (yet) is
 * matched as written. */
Test(svcrules, exe_through_a_link)
{
	char real[PATH_MAX], text[1024], target[PATH_MAX];
	struct svc_config *c;
	FILE *f;

	snprintf(text, sizeof(text), "mkdir -p %s/opt/app-1.2/bin", tmp);
	cr_assert_eq(system(text), 0);
	snprintf(target, sizeof(target), "%s/opt/app-1.2/bin/app-check", tmp);
	f = fopen(target, "w");
	cr_assert_not_null(f);
	fclose(f);
	snprintf(text, sizeof(text),
		"ln -s app-check %s/opt/app-1.2/bin/app-server && ln -s app-1.2 %s/opt/app", tmp,
		tmp);
	cr_assert_eq(system(text), 0);
	cr_assert_not_null(realpath(target, real)); /* /tmp may be a link itself */

	snprintf(text, sizeof(text),
		"[Target link]\nExe=%s/opt/app/bin/app-server\n"
		"[Target glob]\nExe=%s/opt/app/bin/app-c*\n"
		"[Target absent]\nExe=%s/nowhere/bin/app\n",
		tmp, tmp, tmp);
	c = parse(text);
	cr_assert_eq(c->nrules, 3);
	cr_expect_str_eq(c->rules[0].exe_real, real, "the whole path resolved");
	cr_expect_eq(svc_config_match(c, proc_with_exe(real)), 0);
	cr_expect_not_null(c->rules[1].exe_real);
	cr_expect(c->rules[1].exe_real && !strcmp(c->rules[1].exe_real + strlen(c->rules[1].exe_real) -
							  strlen("/opt/app-1.2/bin/app-c*"),
						   "/opt/app-1.2/bin/app-c*"),
		"the fixed part resolved, the glob kept: %s", c->rules[1].exe_real);
	cr_expect_null(c->rules[2].exe_real);
	svc_config_free(c);

	/* the glob rule alone: it matches the real path too */
	snprintf(text, sizeof(text), "[Target glob]\nExe=%s/opt/app/bin/app-c*\n", tmp);
	c = parse(text);
	cr_expect_eq(svc_config_match(c, proc_with_exe(real)), 0);
	cr_expect_eq(svc_config_match(c, proc_with_exe("/usr/bin/app-check")), -1);
	svc_config_free(c);
}

Test(svcrules, max_emergency_dumps)
{
	static const char *const bad[] = { "0", "-1", "100001", "x", "10x", "+5", "1e3",
		"99999999999999999999" };
	struct svc_config *c = parse("[Service]\n");

	cr_expect_eq(c->max_emergency_dumps, 10, "the default");
	svc_config_free(c);
	c = parse("[Service]\nMaxEmergencyDumps=3\n");
	cr_expect_eq(c->max_emergency_dumps, 3);
	svc_config_free(c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct svc_config_error e = { 0 };
		char text[128];

		c = NULL;
		snprintf(text, sizeof(text), "[Service]\nMaxEmergencyDumps=%s\n", bad[i]);
		cr_expect_lt(svc_config_parse("t.conf", text, strlen(text), &c, &e), 0, "%s", bad[i]);
		cr_expect_eq(e.line, 2);
		cr_expect(strstr(e.reason, "1 to 100000"), "%s", e.reason);
		svc_config_free(c);
	}
}

/* --check lists the processes a rule matches now, by PID, name and exe,
 * and says so of a rule that matches none. */
Test(svcrules, check_lists_matches)
{
	char conf[128], exe[PATH_MAX], text[PATH_MAX + 128], link[PATH_MAX];
	const char *argv[] = { "tracerd", "service", "--config", conf, "--check", NULL };
	struct run_result r;
	char want[PATH_MAX + 64];
	pid_t child;
	FILE *f;

	/* a copy of sleep under a name of its own, started through a link */
	snprintf(exe, sizeof(exe), "%s/rulesleeper", tmp);
	snprintf(text, sizeof(text), "cp /bin/sleep %s && ln -s rulesleeper %s/sleeplink", exe, tmp);
	cr_assert_eq(system(text), 0);
	snprintf(link, sizeof(link), "%s/sleeplink", tmp);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		execl(exe, "rulesleeper", "60", (char *)NULL);
		_exit(127);
	}
	snprintf(conf, sizeof(conf), "%s/t.conf", tmp);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "[Service]\nDirectory=%s/repo\n[Target sl]\nExe=%s\n[Target none]\n"
		   "Comm=no-such-process\n", tmp, link);
	fclose(f);
	cr_assert_eq(chmod(conf, 0600), 0);
	/* the child has exec'ed when its exe is the copy */
	{
		char p[64], got[PATH_MAX], copy[PATH_MAX];
		ssize_t n = 0;

		snprintf(p, sizeof(p), "/proc/%d/exe", (int)child);
		cr_assert_not_null(realpath(exe, copy));
		memcpy(exe, copy, sizeof(exe));
		for (int i = 0; i < 10000; i++) {
			n = readlink(p, got, sizeof(got) - 1);
			if (n > 0 && (got[n] = '\0', !strcmp(got, exe)))
				break;
			usleep(1000);
		}
		cr_assert(n > 0 && !strcmp(got, exe), "the child never ran %s", exe);
	}
	run_tracerd(&r, argv);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof(want), "      %d rulesleeper %s\n", (int)child, exe);
	cr_expect(strstr(r.out, "matches 1 process now:\n"), "%s", r.out);
	cr_expect(strstr(r.out, want), "want '%s' in\n%s", want, r.out);
	cr_expect(strstr(r.out, "its links resolved"), "%s", r.out);
	cr_expect(strstr(r.out, "[Target none]") && strstr(r.out, "matches no process now"), "%s",
		r.out);
	run_result_free(&r);
}
