/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd service under a real systemd: test/systemd/scenario.sh boots
 * systemd in a container (systemd-nspawn) with the unit as make install
 * lays it out and three target units, and test/systemd/check.sh runs the
 * checks inside; each check is a line of the result (see scenario.sh).
 * Skips, with the reason, where no container can run: not root, no
 * systemd-nspawn, a container that does not boot.  A container that boots
 * and then fails a check, or never finishes, is a failure. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../helpers.h"

static void remove_tree(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", dir);
}

/* The last non-empty line of text, in place. */
static const char *last_line(char *text)
{
	size_t n = strlen(text);
	char *p;

	while (n && text[n - 1] == '\n')
		text[--n] = '\0';
	p = strrchr(text, '\n');
	return p ? p + 1 : text;
}

Test(service, in_a_real_systemd, .timeout = 180)
{
	char dir[] = "/tmp/tracerd-service-XXXXXX", cmd[2048], path[128], line[4096];
	char *out, *fails = NULL;
	size_t fails_len = 0;
	int st, nok = 0, nfail = 0;
	bool ended = false;
	FILE *f, *fm;

	if (!is_root())
		cr_skip_test("needs root to boot a container with systemd-nspawn");
	need_command("systemd-nspawn", "systemd-container");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "sh '%s/test/systemd/scenario.sh' '%s' '%s' '%s' 2>&1",
		TD_SOURCE_DIR, TD_BUILD_DIR, TD_FIXTURE_DIR, dir);
	out = shell_output(cmd, &st);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		remove_tree(dir);
		cr_skip_test("%s", last_line(out));
	}
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"test/systemd/scenario.sh failed (kept %s): %s", dir, out);
	free(out);

	snprintf(path, sizeof(path), "%s/result", dir);
	f = fopen(path, "r");
	cr_assert_not_null(f, "scenario.sh wrote no %s", path);
	fm = open_memstream(&fails, &fails_len);
	cr_assert_not_null(fm);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "ok ", 3))
			nok++;
		else if (!strncmp(line, "FAIL ", 5)) {
			fprintf(fm, "\n  %s", line + 5);
			nfail++;
		} else if (!strncmp(line, "measure ", 8))
			cr_log_info("service: %s", line + 8);
		else if (!strcmp(line, "end"))
			ended = true;
	}
	fclose(f);
	fclose(fm);
	cr_expect(ended, "the checks did not finish (kept %s)", dir);
	cr_expect(nok > 0, "no check passed (kept %s)", dir);
	cr_expect_eq(nfail, 0,
		"%d of %d checks failed (kept %s: result, "
		"console.log, out/journal.txt):%s",
		nfail, nok + nfail, dir, fails);
	if (ended && nok > 0 && nfail == 0)
		remove_tree(dir);
	free(fails);
}
